"""The exact fallback of one priority level, in the kernel: a lexicographic QP.

When the greedy saturation (:func:`stackik.sns.run.solve_levels`) finds no feasible
scale for a level with more than one null-space direction left (or a MIN_ERROR level
cannot reach ``s = 1``), :func:`level_qp` solves that level exactly, in the
coordinates ``u = u_prev + Z y`` of the null space ``Z`` of the higher levels (so
their achieved task values are kept):

* the reduced task ``E y ~ s xt - ct`` keeps the directions of ``J'_k Z`` with
  singular value ``>= tolerance`` (``E = U^T J'_k Z``, ``xt = U^T xdot_k``,
  ``ct = U^T J'_k u_prev``; damped directions are left free);
* the constraint rows in ``y``, with the rows at ``lower == upper`` as equalities and
  every bound widened to contain ``y = 0`` plus ``1e-11 (1 + |bound|)``;
* stage 1: SCALE maximises ``s`` (``min (s-1)^2/2 + 1e-7 ||y||^2/2`` subject to
  ``E y - s xt = -ct``, the rows and ``0 <= s <= 1``), else the least residual along
  the ray; when ``E`` is square and well conditioned (the task fixes ``y`` for each
  ``s``) the largest feasible ``s`` comes in closed form. MIN_ERROR minimises
  ``||E y - (xt - ct)||^2``;
* stage 2 keeps what stage 1 achieved (``E y = E y_1``) and minimises ``||y||^2``.

Every QP is solved by the dual active-set solver of :mod:`stackik.sns.activeset`.
This is the in-kernel form of :func:`stackik.sns.qp.qp_level` (the ``quadprog``
reference, kept for tests and debugging) and gives the same answers to rounding.
The few arrays are allocated once per fallback (not per iteration).
"""

from __future__ import annotations

import math

import numpy as np

from stackik._jit import kernel

from .activeset import QP_SOLVED, gi_solve, qp_workspace
from .codes import MODE_SCALE
from .linalg import apply_qt, house_qr, jacobi_svd, triangle_inverse

_QP_REG = 1e-7  # proximal weight that makes the lexicographic QP stages strictly convex
_COND_MAX = 1e8  # largest condition number of a task block solved directly for y
_SCALE_EPS = 1e-12  # row coefficients of s below this are constant rows
_MOVE_EPS = 1e-14  # rows whose entries in y are all below this cannot move
_SLACK = 1e-11  # widening of the bounds around y = 0 (relative)
_INF = math.inf


@kernel
def task_block(
    Jw: np.ndarray,
    o: int,
    m: int,
    Z: np.ndarray,
    r: int,
    up: np.ndarray,
    x: np.ndarray,
    M0: np.ndarray,
    T: np.ndarray,
) -> float:
    """``M0 <- J'_k Z[:, :r]`` (``m x r``), ``T[0] <- x_k``, ``T[1] <- J'_k u_prev``.

    Returns:
        ``||M0||_F``.
    """
    n = up.shape[0]
    fro2 = 0.0
    for i in range(m):
        for c in range(r):
            M0[i, c] = 0.0
        acc = 0.0
        for j in range(n):
            a = Jw[o + i, j]
            if a == 0.0:
                continue  # (task rows are sparse)
            acc += a * up[j]
            for c in range(r):
                M0[i, c] += a * Z[j, c]
        for c in range(r):
            fro2 += M0[i, c] * M0[i, c]
        T[0, i] = x[o + i]
        T[1, i] = acc
    return math.sqrt(fro2)


@kernel
def certify(F: np.ndarray, k: int, thr: float, B: np.ndarray) -> tuple[bool, float]:
    """Whether every singular value of the triangle ``F[:k, :k]`` is ``>= thr``.

    Uses ``sigma_min >= 1 / ||F^-1||_F`` (``F^-1`` into ``B``).

    Returns:
        ``(certified, ||F||_F ||F^-1||_F)``: the second bounds the condition number.
    """
    for i in range(k):
        if not abs(F[i, i]) >= thr:
            return False, _INF
    inv2 = triangle_inverse(F, k, B)
    f2 = 0.0
    for i in range(k):
        for c in range(i, k):
            f2 += F[i, c] * F[i, c]
    return inv2 * thr * thr <= 1.0, math.sqrt(f2 * inv2)


@kernel
def kept_directions(sg: np.ndarray, k: int, tolerance: float, keep: np.ndarray) -> tuple[int, bool]:
    """Mark the singular values ``>= max(tolerance, 1e-12 max(1, sigma_max))``.

    Returns:
        ``(count, well_conditioned)``: how many are kept and whether
        ``sigma_max < 1e8 sigma_min`` over the kept ones.
    """
    smax = 0.0
    for i in range(k):
        smax = max(smax, sg[i])
    thr = max(tolerance, 1e-12 * max(1.0, smax))
    rho = 0
    smin = _INF
    for i in range(k):
        keep[i] = sg[i] >= thr
        if keep[i]:
            rho += 1
            smin = min(smin, sg[i])
    return rho, rho > 0 and smax < _COND_MAX * smin


@kernel
def reduced_tall(
    M0: np.ndarray,
    m: int,
    r: int,
    T: np.ndarray,
    thr: float,
    tolerance: float,
    F: np.ndarray,
    Hv: np.ndarray,
    hb: np.ndarray,
    B: np.ndarray,
    Us: np.ndarray,
    Vs: np.ndarray,
    sg: np.ndarray,
    keep: np.ndarray,
    E: np.ndarray,
    xc: np.ndarray,
) -> tuple[int, bool, bool]:
    """The reduced task of a tall block (``m >= r``) from the QR ``M0 = Q [R; 0]``.

    When ``R`` is certified (every singular value above the threshold and a condition
    bound below ``1e8``) the range of ``M0`` is kept whole: ``E = R``, ``xt, ct`` are
    the first ``r`` entries of ``Q^T x_k``, ``Q^T J'_k u_prev``. Otherwise the SVD
    ``R = Us S Vs^T`` gives ``E = S_kept Vs_kept^T``.

    Returns:
        ``(rho, fixes, upper)``: rows of ``E``, whether ``E`` is square and well
        conditioned, whether ``E`` is upper triangular.
    """
    for i in range(m):
        for c in range(r):
            F[i, c] = M0[i, c]
    house_qr(F, m, r, Hv, hb, sg)
    apply_qt(T[0], m, r, Hv, hb)
    apply_qt(T[1], m, r, Hv, hb)
    ok, cond = certify(F, r, thr, B)
    if ok and cond < _COND_MAX:
        for i in range(r):
            for c in range(r):
                E[i, c] = F[i, c] if c >= i else 0.0
            xc[0, i] = T[0, i]
            xc[1, i] = T[1, i]
        return r, True, True
    for i in range(r):
        for c in range(r):
            B[i, c] = F[i, c] if c >= i else 0.0
    jacobi_svd(B, r, Us, sg, Vs)
    rho, wellcond = kept_directions(sg, r, tolerance, keep)
    row = 0
    for i in range(r):
        if not keep[i]:
            continue
        a0 = 0.0
        a1 = 0.0
        for j in range(r):
            E[row, j] = sg[i] * Vs[j, i]
            a0 += Us[j, i] * T[0, j]
            a1 += Us[j, i] * T[1, j]
        xc[0, row] = a0
        xc[1, row] = a1
        row += 1
    return rho, rho == r and wellcond, False


@kernel
def reduced_wide(
    M0: np.ndarray,
    m: int,
    r: int,
    T: np.ndarray,
    thr: float,
    tolerance: float,
    F: np.ndarray,
    Hv: np.ndarray,
    hb: np.ndarray,
    B: np.ndarray,
    Us: np.ndarray,
    Vs: np.ndarray,
    sg: np.ndarray,
    keep: np.ndarray,
    E: np.ndarray,
    xc: np.ndarray,
) -> int:
    """The reduced task of a wide block (``m < r``) from the QR ``M0^T = Q [R; 0]``.

    Certified ``R``: every task direction is kept, ``E = M0``, ``xt = x_k``,
    ``ct = J'_k u_prev``. Otherwise the SVD ``R^T = Us S Vs^T`` gives the left singular
    vectors: ``E = Us_kept^T M0``.

    Returns:
        The number ``rho`` of rows of ``E``.
    """
    for i in range(m):
        for c in range(r):
            F[c, i] = M0[i, c]
    house_qr(F, r, m, Hv, hb, sg)
    ok, _ = certify(F, m, thr, B)
    if ok:
        for i in range(m):
            for c in range(r):
                E[i, c] = M0[i, c]
            xc[0, i] = T[0, i]
            xc[1, i] = T[1, i]
        return m
    for i in range(m):
        for c in range(m):
            B[i, c] = F[c, i] if i >= c else 0.0
    jacobi_svd(B, m, Us, sg, Vs)
    rho, _ = kept_directions(sg, m, tolerance, keep)
    row = 0
    for i in range(m):
        if not keep[i]:
            continue
        for c in range(r):
            acc = 0.0
            for j in range(m):
                acc += Us[j, i] * M0[j, c]
            E[row, c] = acc
        a0 = 0.0
        a1 = 0.0
        for j in range(m):
            a0 += Us[j, i] * T[0, j]
            a1 += Us[j, i] * T[1, j]
        xc[0, row] = a0
        xc[1, row] = a1
        row += 1
    return rho


@kernel
def reduced_task(
    Jw: np.ndarray,
    x: np.ndarray,
    o: int,
    m: int,
    Z: np.ndarray,
    r: int,
    up: np.ndarray,
    tolerance: float,
    E: np.ndarray,
    xc: np.ndarray,
    R1: np.ndarray,
    Hv1: np.ndarray,
    hb1: np.ndarray,
    tall1: bool,
) -> tuple[int, bool, bool]:
    """Level ``k`` in the null-space coordinates ``y``: ``E`` and ``xc = [xt; ct]``.

    ``E = U^T J'_k Z`` keeps the directions of ``J'_k Z`` with singular value
    ``>= max(tolerance, 1e-12 max(1, sigma_max))``, ``U`` any orthonormal basis of
    their span (the QP only sees the span: rows of ``E``, ``xt`` and ``ct`` turned by
    one orthogonal matrix give the same solution). A QR of the block is enough when it
    certifies that every direction is kept; a Jacobi SVD of the small triangle decides
    otherwise.

    ``tall1``: the greedy's first iteration of this level factored the same block
    ``J'_k Z = Q R`` (tall, ``m > r``; ``R1``, ``Hv1``, ``hb1``) and certified ``R``
    (every singular value ``>= max(tolerance, 1e-12 max(1, ||J'_k Z||_F))``): that
    factor is used as it is (it is the one :func:`reduced_tall` would compute).

    Returns:
        ``(rho, fixes, upper)``: rows of ``E``; ``E`` square and well conditioned (the
        task equality alone fixes ``y`` for each scale); ``E`` upper triangular.
    """
    dim = max(m, r)
    T = np.zeros((2, dim))
    fac = np.empty((3, dim, dim))
    sg = np.empty(dim)
    if tall1:
        n = up.shape[0]
        for i in range(m):
            acc = 0.0
            for j in range(n):
                acc += Jw[o + i, j] * up[j]
            T[0, i] = x[o + i]
            T[1, i] = acc
        apply_qt(T[0], m, r, Hv1, hb1)
        apply_qt(T[1], m, r, Hv1, hb1)
        _, cond = certify(R1, r, 0.0, fac[0])
        if cond < _COND_MAX:
            for i in range(r):
                for c in range(r):
                    E[i, c] = R1[i, c] if c >= i else 0.0
                xc[0, i] = T[0, i]
                xc[1, i] = T[1, i]
            return r, True, True
    M0 = np.empty((m, r))
    F = np.empty((dim, dim))
    Hv = np.empty((dim, dim))
    hb = np.empty(dim)
    keep = np.zeros(dim, dtype=np.bool_)
    fro = task_block(Jw, o, m, Z, r, up, x, M0, T)
    thr = max(tolerance, 1e-12 * max(1.0, fro))
    if m >= r:
        return reduced_tall(
            M0, m, r, T, thr, tolerance, F, Hv, hb, fac[0], fac[1], fac[2], sg, keep, E, xc
        )
    rho = reduced_wide(
        M0, m, r, T, thr, tolerance, F, Hv, hb, fac[0], fac[1], fac[2], sg, keep, E, xc
    )
    return rho, False, False


@kernel
def reduced_rows(
    Cw: np.ndarray,
    wis: np.ndarray,
    Z: np.ndarray,
    r: int,
    up: np.ndarray,
    RZ: np.ndarray,
    v0: np.ndarray,
) -> None:
    """Every constraint row in ``y``: ``RZ <- R Z[:, :r]`` and ``v0 <- R u_prev``.

    ``R`` stacks the box rows ``wis_j e_j`` (bounds ``box_lower``/``box_upper``) and the
    weighted general rows ``Cw`` (the rows of :func:`stackik.sns.qp.weighted_rows`).
    """
    n = up.shape[0]
    for q in range(n):
        for c in range(r):
            RZ[q, c] = wis[q] * Z[q, c]
        v0[q] = wis[q] * up[q]
    for i in range(Cw.shape[0]):
        for c in range(r):
            RZ[n + i, c] = 0.0
        acc = 0.0
        for j in range(n):
            a = Cw[i, j]
            if a == 0.0:
                continue  # (constraint rows are often sparse)
            acc += a * up[j]
            for c in range(r):
                RZ[n + i, c] += a * Z[j, c]
        v0[n + i] = acc


@kernel
def level_rows(
    RZ: np.ndarray,
    v0: np.ndarray,
    r: int,
    bl: np.ndarray,
    bu: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    Aq: np.ndarray,
    bq: np.ndarray,
    first: int,
) -> tuple[int, int]:
    """Inequalities ``Aq y >= bq`` for ``lower <= RZ y + v0 <= upper``, from row ``first``.

    Rows that cannot move (every entry ``<= 1e-14``) are dropped; rows with
    ``lower == upper`` come first as equalities, then the lower bounds, then the upper
    ones (negated). Each inequality bound is widened to contain ``y = 0`` (the point the
    higher levels left, feasible up to rounding) plus ``1e-11 (1 + |bound|)``, so
    ``y = 0`` is strictly feasible. Column ``r`` (the scale) is zero.

    Returns:
        ``(neq, nin)``: the numbers of equality and inequality rows written.
    """
    n = bl.shape[0]
    nrows = RZ.shape[0]
    moving = np.zeros(nrows, dtype=np.bool_)
    for q in range(nrows):
        for c in range(r):
            if abs(RZ[q, c]) > _MOVE_EPS:
                moving[q] = True
                break
    row = first
    neq = 0
    for side in range(3):  # 0: equalities, 1: lower bounds, 2: upper bounds
        for q in range(nrows):
            if not moving[q]:
                continue
            # (bounds read here, not in a helper: a call binding arrays costs a
            # reference-count update per array, on every row)
            lo = bl[q] if q < n else low[q]
            hi = bu[q] if q < n else high[q]
            eq = lo == hi and abs(lo) < _INF
            if side == 0 and eq:
                sign = 1.0
                rhs = lo - v0[q]
            elif side == 1 and not eq and lo > -_INF:
                sign = 1.0
                rhs = min(lo - v0[q], 0.0) - _SLACK * (1.0 + abs(lo))
            elif side == 2 and not eq and hi < _INF:
                sign = -1.0
                rhs = min(v0[q] - hi, 0.0) - _SLACK * (1.0 + abs(hi))
            else:
                continue
            for c in range(r):
                Aq[row, c] = sign * RZ[q, c]
            Aq[row, r] = 0.0
            bq[row] = rhs
            row += 1
        if side == 0:
            neq = row - first
    return neq, row - first - neq


@kernel
def square_solve(E: np.ndarray, k: int, upper: bool, rhs: np.ndarray, LU: np.ndarray) -> None:
    """``rhs[:k] <- E[:k, :k]^-1 rhs[:k]`` (back substitution, else LU with row pivoting)."""
    if upper:
        for i in range(k - 1, -1, -1):
            acc = rhs[i]
            for j in range(i + 1, k):
                acc -= E[i, j] * rhs[j]
            rhs[i] = acc / E[i, i]
        return
    for i in range(k):
        for j in range(k):
            LU[i, j] = E[i, j]
    for c in range(k):
        piv = c
        for i in range(c + 1, k):
            if abs(LU[i, c]) > abs(LU[piv, c]):
                piv = i
        if piv != c:
            for j in range(k):
                LU[c, j], LU[piv, j] = LU[piv, j], LU[c, j]
            rhs[c], rhs[piv] = rhs[piv], rhs[c]
        for i in range(c + 1, k):
            f = LU[i, c] / LU[c, c]
            for j in range(c + 1, k):
                LU[i, j] -= f * LU[c, j]
            rhs[i] -= f * rhs[c]
    for i in range(k - 1, -1, -1):
        acc = rhs[i]
        for j in range(i + 1, k):
            acc -= LU[i, j] * rhs[j]
        rhs[i] = acc / LU[i, i]


@kernel
def determined_scale(
    E: np.ndarray,
    r: int,
    upper: bool,
    xc: np.ndarray,
    Aq: np.ndarray,
    bq: np.ndarray,
    first: int,
    nin: int,
    y: np.ndarray,
    w: np.ndarray,
    LU: np.ndarray,
) -> float:
    """Stage 1 in closed form when the task fixes ``y``: ``y(s) = E^-1 (s xt - ct)``.

    The rows ``A y(s) >= b`` bound ``s`` to an interval; the largest ``s`` in it and in
    ``[0, 1]`` is stage 1's answer (the QP's, up to its ``reg ||y||^2`` term), with
    ``y <- y(s)``.

    Returns:
        The scale, or -1 when no ``s`` is feasible (the residual QP decides).
    """
    for i in range(r):
        y[i] = -xc[1, i]
        w[i] = xc[0, i]
    square_solve(E, r, upper, y, LU)  # y0 = E^-1 (-ct)
    square_solve(E, r, upper, w, LU)  # y1 = E^-1 xt
    s_lo = 0.0
    s_hi = 1.0
    for i in range(first, first + nin):
        g = 0.0
        h = bq[i]
        for c in range(r):
            g += Aq[i, c] * w[c]
            h -= Aq[i, c] * y[c]
        if g > _SCALE_EPS:
            s_lo = max(s_lo, h / g)
        elif g < -_SCALE_EPS:
            s_hi = min(s_hi, h / g)
        elif h > 0.0:
            return -1.0
    if s_lo > s_hi:
        return -1.0
    for i in range(r):
        y[i] += s_hi * w[i]
    return s_hi


@kernel
def gram(D: np.ndarray, rows: int, cols: int, G: np.ndarray) -> None:
    """``G[:cols, :cols] <- D^T D`` over ``D[:rows, :cols]`` (row by row: vectorised)."""
    for i in range(cols):
        for j in range(cols):
            G[i, j] = 0.0
    for t in range(rows):
        for i in range(cols):
            d = D[t, i]
            if d == 0.0:
                continue
            for j in range(cols):
                G[i, j] += d * D[t, j]


@kernel
def stage1_scale(
    E: np.ndarray,
    xc: np.ndarray,
    rho: int,
    r: int,
    Aq: np.ndarray,
    bq: np.ndarray,
    neq: int,
    nin: int,
    fixes: bool,
    upper: bool,
    G: np.ndarray,
    a: np.ndarray,
    z: np.ndarray,
    ws: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> float:
    """Stage 1 of a SCALE level: largest ``s`` (else least residual along the ray).

    Variables ``(y, s)`` (``r + 1``): ``min (s-1)^2/2 + reg ||y||^2/2`` subject to the
    rows of ``Aq`` (task equalities ``E y - s xt = -ct`` first, then the constraint
    rows, then ``0 <= s <= 1``). When ``fixes`` (``E`` square and well conditioned, no
    equality rows), :func:`determined_scale` answers in closed form. When no ``s``
    keeps the task direction, ``||E y - s xt + ct||^2`` (plus ``reg`` times
    ``||y||^2 + (s-1)^2``) is minimised over the other rows, with ``reg = 1e-7``, then
    ``1e-4``.

    Returns:
        The scale (``y`` in ``z[:r]``), or -1 when every QP failed.
    """
    Wm, Wv, Wr, act = ws
    nv = r + 1
    mall = rho + neq + nin + 2
    if fixes:
        s = determined_scale(E, r, upper, xc, Aq, bq, rho, nin, z, Wv[0], Wm[0])
        if s >= 0.0:
            return s
    else:
        for i in range(nv):
            for j in range(nv):
                G[i, j] = 0.0
            G[i, i] = _QP_REG
            a[i] = 0.0
        G[r, r] = 1.0
        a[r] = 1.0
        if gi_solve(G, a, Aq, bq, nv, mall, rho + neq, z, Wm, Wv, Wr, act) == QP_SOLVED:
            return min(max(z[r], 0.0), 1.0)
    # No scale keeps the task direction: least residual along the ray (D = [E, -xt]).
    for reg in (_QP_REG, 1e3 * _QP_REG):
        gram(Aq, rho, nv, G)
        for i in range(nv):
            G[i, i] += reg
            acc = 0.0
            for t in range(rho):
                acc -= Aq[t, i] * xc[1, t]
            a[i] = acc
        a[r] += reg
        sub = gi_solve(G, a, Aq[rho:], bq[rho:], nv, mall - rho, neq, z, Wm, Wv, Wr, act)
        if sub == QP_SOLVED:
            return min(max(z[r], 0.0), 1.0)
    return -1.0


@kernel
def stage1_min_error(
    E: np.ndarray,
    xc: np.ndarray,
    rho: int,
    r: int,
    Aq: np.ndarray,
    bq: np.ndarray,
    neq: int,
    nin: int,
    G: np.ndarray,
    a: np.ndarray,
    z: np.ndarray,
    ws: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> bool:
    """Stage 1 of a MIN_ERROR level: ``min ||E y - (xt - ct)||^2`` over the rows.

    ``reg ||y||^2`` with ``reg = 1e-7``, then ``1e-4``, keeps it strictly convex.

    Returns:
        Whether a QP succeeded (``y`` in ``z[:r]``).
    """
    Wm, Wv, Wr, act = ws
    for reg in (_QP_REG, 1e3 * _QP_REG):
        gram(E, rho, r, G)
        for i in range(r):
            G[i, i] += reg
            acc = 0.0
            for t in range(rho):
                acc += E[t, i] * (xc[0, t] - xc[1, t])
            a[i] = acc
        sub = gi_solve(G, a, Aq[rho:], bq[rho:], r, neq + nin, neq, z, Wm, Wv, Wr, act)
        if sub == QP_SOLVED:
            return True
    return False


@kernel
def stage2(
    rho: int,
    r: int,
    Aq: np.ndarray,
    bq: np.ndarray,
    neq: int,
    nin: int,
    y1: np.ndarray,
    G: np.ndarray,
    a: np.ndarray,
    b2: np.ndarray,
    y2: np.ndarray,
    ws: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> bool:
    """Stage 2: keep what stage 1 achieved (``E y = E y1``), minimum ``||y||^2``.

    Returns:
        Whether the QP succeeded (``y`` in ``y2[:r]``).
    """
    Wm, Wv, Wr, act = ws
    for i in range(r):
        for j in range(r):
            G[i, j] = 0.0
        G[i, i] = 1.0
        a[i] = 0.0
    for t in range(rho):
        acc = 0.0
        for c in range(r):
            acc += Aq[t, c] * y1[c]
        b2[t] = acc
    for t in range(rho, rho + neq + nin):
        b2[t] = bq[t]
    sub = gi_solve(G, a, Aq, b2, r, rho + neq + nin, rho + neq, y2, Wm, Wv, Wr, act)
    return sub == QP_SOLVED


@kernel
def point_violation(
    Z: np.ndarray,
    r: int,
    up: np.ndarray,
    y: np.ndarray,
    wis: np.ndarray,
    Cw: np.ndarray,
    bl: np.ndarray,
    bu: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    un: np.ndarray,
) -> float:
    """``un <- u_prev + Z y`` and its largest violation of the rows (0 when feasible)."""
    n = up.shape[0]
    viol = 0.0
    for i in range(n):
        acc = up[i]
        for c in range(r):
            acc += Z[i, c] * y[c]
        un[i] = acc
        v = wis[i] * acc
        viol = max(viol, bl[i] - v, v - bu[i])
    for i in range(Cw.shape[0]):
        v = 0.0
        for j in range(n):
            v += Cw[i, j] * un[j]
        viol = max(viol, low[n + i] - v, v - high[n + i])
    return viol


@kernel
def level_qp(
    Jw: np.ndarray,
    x: np.ndarray,
    o: int,
    m: int,
    mode: int,
    Cw: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    bl: np.ndarray,
    bu: np.ndarray,
    wis: np.ndarray,
    tolerance: float,
    Z: np.ndarray,
    r: int,
    u: np.ndarray,
    R1: np.ndarray,
    Hv1: np.ndarray,
    hb1: np.ndarray,
    tall1: bool,
) -> tuple[bool, float]:
    """Solve level ``k`` (rows ``o:o+m``) exactly in ``u = u_prev + Z[:, :r] y``.

    Args:
        Jw: Weighted stacked task Jacobian ``(M, n)``.
        x: Stacked task velocities ``(M,)``.
        o: First row of the level.
        m: Number of rows of the level.
        mode: ``MODE_SCALE`` or ``MODE_MIN_ERROR``.
        Cw: Weighted general rows ``(p, n)``.
        low: Weighted lower bounds of every row ``(n + p,)`` (general rows used).
        high: Weighted upper bounds of every row ``(n + p,)`` (general rows used).
        bl: Joint velocity box, lower ``(n,)`` (unweighted; the box rows are
            ``wis_j u_j``).
        bu: Joint velocity box, upper ``(n,)``.
        wis: ``W^{-1/2}``, ``(n,)``.
        tolerance: Singular-value threshold ``epsilon``.
        Z: Null-space basis of the higher levels (first ``r`` columns used).
        r: Size of that null space (> 0).
        u: Weighted solution of the higher levels (in), of this level (out).
        R1: The greedy's first factor of ``J'_k Z`` (see :func:`reduced_task`).
        Hv1: Its Householder vectors.
        hb1: Its Householder coefficients.
        tall1: Whether that factor is tall and certified (else it is not used).

    Returns:
        ``(ok, s)``: False if every QP of stage 1 failed (``u`` then keeps the higher
        levels' solution, ``s = 0``, which is feasible).
    """
    n = u.shape[0]
    nr = n + Cw.shape[0]
    up = u.copy()
    E = np.empty((r, r))
    xc = np.empty((2, r))
    rho, fixes, upper = reduced_task(
        Jw, x, o, m, Z, r, up, tolerance, E, xc, R1, Hv1, hb1, tall1 and m > r
    )
    RZ = np.empty((nr, r))
    vec = np.empty((6, max(nr, r + 1)))
    v0, y1, y2, a, un = vec[0], vec[1], vec[2], vec[3], vec[4]
    reduced_rows(Cw, wis, Z, r, up, RZ, v0)
    mq = rho + 2 * nr + 2
    Aq = np.empty((mq, r + 1))
    bq = np.empty(mq)
    b2 = np.empty(mq)
    for i in range(rho):
        for c in range(r):
            Aq[i, c] = E[i, c]
        Aq[i, r] = -xc[0, i]
        bq[i] = -xc[1, i]
    neq, nin = level_rows(RZ, v0, r, bl, bu, low, high, Aq, bq, rho)
    last = rho + neq + nin
    for c in range(r + 1):
        Aq[last, c] = 0.0
        Aq[last + 1, c] = 0.0
    Aq[last, r] = 1.0
    bq[last] = 0.0
    Aq[last + 1, r] = -1.0
    bq[last + 1] = -1.0
    G = np.empty((r + 1, r + 1))
    ws = qp_workspace(r + 1, mq)
    fixes_now = fixes and neq == 0
    if mode == MODE_SCALE:
        scale = stage1_scale(E, xc, rho, r, Aq, bq, neq, nin, fixes_now, upper, G, a, y1, ws)
        if scale < 0.0:
            return False, 0.0
    else:
        scale = 1.0
        if not stage1_min_error(E, xc, rho, r, Aq, bq, neq, nin, G, a, y1, ws):
            return False, 0.0
    viol1 = point_violation(Z, r, up, y1, wis, Cw, bl, bu, low, high, u)
    if fixes_now or not stage2(rho, r, Aq, bq, neq, nin, y1, G, a, b2, y2, ws):
        return True, scale
    viol2 = point_violation(Z, r, up, y2, wis, Cw, bl, bu, low, high, un)
    if viol2 <= viol1:
        for i in range(n):
            u[i] = un[i]
    return True, scale
