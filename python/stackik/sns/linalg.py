"""Small dense linear algebra of the SNS core, written as kernels (no LAPACK).

Householder QR, a one-sided Jacobi SVD for the (rare) near-singular case, the
selectively damped pseudo-inverse built on them, and the orthonormal basis of the
null space that a priority level hands to the levels below it. Everything is
explicit loops over small dense arrays so that numba (through :mod:`stackik._jit`)
compiles it to tight machine code; without numba the same functions run as
plain Python.

The matrix of interest at a level is ``M = J'_k Z_2`` (``m x r2``): the weighted task
Jacobian restricted to the null space ``Z_2`` of the higher levels and of the rows
saturated so far (Flacco, De Luca, Khatib, IEEE T-RO 2015, ``J_k P_bar`` of Alg. 1).
Scratch arrays are passed in by the caller (no allocation here).
"""

from __future__ import annotations

import math

import numpy as np

from stackik._jit import kernel

#: Beyond this |zeta| a Jacobi rotation's zeta^2 would overflow float64 (about 1.3e154).
_ZETA_BIG = 1e150


@kernel
def house_qr(
    A: np.ndarray, rows: int, cols: int, Hv: np.ndarray, hb: np.ndarray, w: np.ndarray
) -> None:
    """Householder QR of ``A[:rows, :cols]`` in place (``rows >= cols``).

    On return the upper triangle of ``A[:cols, :cols]`` holds R, the entries
    below it are zero, and ``Q = H_0 H_1 ... H_{cols-1}`` with
    ``H_j = I - hb[j] Hv[:, j] Hv[:, j]^T``.

    Each reflection is applied to the remaining columns row by row (``w`` collects
    ``Hv[:, j]^T A`` across the columns), so the inner loops run along the rows of
    ``A`` and vectorise; every entry is summed in the same order as a column-by-column
    loop would.

    Args:
        A: Matrix to factor, overwritten by R.
        rows: Number of rows used.
        cols: Number of columns used.
        Hv: Output Householder vectors, one per column.
        hb: Output Householder coefficients (0 for a zero column).
        w: Scratch, ``(>= cols,)``.
    """
    for j in range(cols):
        nrm2 = 0.0
        for i in range(j, rows):
            nrm2 += A[i, j] * A[i, j]
        for i in range(rows):
            Hv[i, j] = 0.0
        if nrm2 == 0.0:
            hb[j] = 0.0
            continue
        nrm = math.sqrt(nrm2)
        x0 = A[j, j]
        # The sign opposite to x0 avoids cancellation in x0 - alpha.
        alpha = -nrm if x0 >= 0.0 else nrm
        Hv[j, j] = x0 - alpha
        for i in range(j + 1, rows):
            Hv[i, j] = A[i, j]
        vn2 = nrm2 - x0 * x0 + (x0 - alpha) * (x0 - alpha)
        beta = 2.0 / vn2
        hb[j] = beta
        A[j, j] = alpha
        for i in range(j + 1, rows):
            A[i, j] = 0.0
        for c in range(j + 1, cols):
            w[c] = 0.0
        for i in range(j, rows):
            h = Hv[i, j]
            for c in range(j + 1, cols):
                w[c] += h * A[i, c]
        for c in range(j + 1, cols):
            w[c] *= beta
        for i in range(j, rows):
            h = Hv[i, j]
            for c in range(j + 1, cols):
                A[i, c] -= w[c] * h


@kernel
def triangle_inverse(R: np.ndarray, k: int, B: np.ndarray) -> float:
    """``B[:k, :k] <- R^-1`` for the upper triangle of ``R``; return ``||R^-1||_F^2``.

    Row by row from the bottom (the inner loops run along rows and vectorise); only
    the upper triangle of ``B`` is written. The square norm is summed column by
    column, bottom up.
    """
    for i in range(k - 1, -1, -1):
        for c in range(i, k):
            B[i, c] = 0.0
        B[i, i] = 1.0
        for j in range(i + 1, k):
            a = R[i, j]
            for c in range(j, k):
                B[i, c] -= a * B[j, c]
        d = R[i, i]
        for c in range(i, k):
            B[i, c] = B[i, c] / d
    inv2 = 0.0
    for c in range(k):
        for i in range(c, -1, -1):
            inv2 += B[i, c] * B[i, c]
    return inv2


@kernel
def apply_q(y: np.ndarray, rows: int, k: int, Hv: np.ndarray, hb: np.ndarray) -> None:
    """``y <- Q y`` for the Householder factor of :func:`house_qr` (``k`` reflections)."""
    for j in range(k - 1, -1, -1):
        if hb[j] == 0.0:
            continue
        d = 0.0
        for i in range(j, rows):
            d += Hv[i, j] * y[i]
        d *= hb[j]
        for i in range(j, rows):
            y[i] -= d * Hv[i, j]


@kernel
def apply_qt(y: np.ndarray, rows: int, k: int, Hv: np.ndarray, hb: np.ndarray) -> None:
    """``y <- Q^T y`` for the Householder factor of :func:`house_qr` (``k`` reflections)."""
    for j in range(k):
        if hb[j] == 0.0:
            continue
        d = 0.0
        for i in range(j, rows):
            d += Hv[i, j] * y[i]
        d *= hb[j]
        for i in range(j, rows):
            y[i] -= d * Hv[i, j]


@kernel
def jacobi_svd(B: np.ndarray, k: int, U: np.ndarray, s: np.ndarray, V: np.ndarray) -> None:
    """One-sided Jacobi SVD ``B[:k, :k] = U diag(s) V^T`` (Hestenes' method).

    Columns of U whose singular value is zero are left zero; V is always a full
    orthogonal matrix. At most 40 sweeps (``k`` is at most the number of joints).

    Args:
        B: Square matrix (read only).
        k: Size used.
        U: Output left singular vectors (columns).
        s: Output singular values (unsorted).
        V: Output right singular vectors (columns).
    """
    for i in range(k):
        for j in range(k):
            U[i, j] = B[i, j]
            V[i, j] = 1.0 if i == j else 0.0
    for _sweep in range(40):
        rotated = False
        for p in range(k - 1):
            for q in range(p + 1, k):
                alpha = 0.0
                beta = 0.0
                gamma = 0.0
                for i in range(k):
                    alpha += U[i, p] * U[i, p]
                    beta += U[i, q] * U[i, q]
                    gamma += U[i, p] * U[i, q]
                if gamma == 0.0 or abs(gamma) <= 1e-15 * math.sqrt(alpha * beta):
                    continue  # columns p and q already orthogonal
                rotated = True
                # Rutishauser's stable choice of the smaller rotation angle.
                if abs(beta - alpha) < _ZETA_BIG * abs(2.0 * gamma):
                    zeta = (beta - alpha) / (2.0 * gamma)
                    t = math.copysign(1.0, zeta) / (abs(zeta) + math.sqrt(1.0 + zeta * zeta))
                else:  # (zeta, or its square, would overflow: t = 1 / (2 zeta) to rounding)
                    t = gamma / (beta - alpha)
                c = 1.0 / math.sqrt(1.0 + t * t)
                sn = c * t
                for i in range(k):
                    up = U[i, p]
                    uq = U[i, q]
                    U[i, p] = c * up - sn * uq
                    U[i, q] = sn * up + c * uq
                    vp = V[i, p]
                    vq = V[i, q]
                    V[i, p] = c * vp - sn * vq
                    V[i, q] = sn * vp + c * vq
        if not rotated:
            break
    for j in range(k):
        nrm = 0.0
        for i in range(k):
            nrm += U[i, j] * U[i, j]
        nrm = math.sqrt(nrm)
        s[j] = nrm
        if nrm > 0.0:
            for i in range(k):
                U[i, j] /= nrm


@kernel
def gain(sigma: float, eps: float, lam: float, nulltol: float) -> float:
    """Filtered inverse of one singular value (selective damping).

    Exact ``1/sigma`` for ``sigma >= eps``; below ``eps`` the damping factor
    grows smoothly to ``lam`` (Maciejewski and Klein's damped least squares,
    applied only to the near-singular directions); directions at or below the
    numerical-rank threshold ``nulltol`` are dropped.

    Args:
        sigma: Singular value (>= 0), in the units of ``M``.
        eps: Threshold below which damping starts (``tolerance``).
        lam: Damping ``lambda`` (``damping``).
        nulltol: Numerical-rank threshold.

    Returns:
        The gain ``g(sigma)`` (``1/sigma``, damped, or 0).
    """
    if sigma <= nulltol:
        return 0.0
    if sigma >= eps or lam == 0.0:
        return 1.0 / sigma
    r = sigma / eps
    return sigma / (sigma * sigma + lam * lam * (1.0 - r * r))


@kernel
def factor(
    Jw: np.ndarray,
    o: int,
    m: int,
    Z2: np.ndarray,
    n: int,
    r2: int,
    A: np.ndarray,
    Hv: np.ndarray,
    hb: np.ndarray,
    B: np.ndarray,
    eps: float,
) -> tuple[bool, int, bool, float]:
    """Factor ``M = Jw[o:o+m] Z2[:, :r2]`` for pseudo-inverse solves (Householder QR).

    The wide case (``m <= r2``) factors ``M^T = Q R``; the tall case factors
    ``M = Q R``. ``R`` is *exact* when certified to have every singular value
    ``>= max(eps, nulltol)``: then the plain triangular solves of
    :func:`pinv_wide` / :func:`pinv_tall` give ``M^#`` and ``rank(M) = k``.
    Otherwise :func:`svd_rank` and :func:`pinv_svd` take over (selective damping).

    Args:
        Jw: Weighted stacked task Jacobian ``(M, n)``.
        o: First row of the level.
        m: Number of rows of the level.
        Z2: Null-space basis, ``(n, >= r2)``.
        n: Number of joints.
        r2: Number of basis columns used.
        A: Scratch, receives R (and the entries below it).
        Hv: Householder vectors of Q.
        hb: Householder coefficients of Q.
        B: Scratch (its first row while forming M; receives ``R^{-1}`` while
            certifying).
        eps: Singular-value threshold of damping (``tolerance``).

    Returns:
        ``(wide, k, exact, nulltol)``: orientation, size of ``R``, whether the
        plain triangular solve is exact, and the numerical-rank threshold
        ``1e-12 max(1, ||M||_F)``.
    """
    wide = m <= r2
    if wide:
        rows = r2
        k = m
    else:
        rows = m
        k = r2
    # M (or M^T) into A, and ||M||_F for the numerical-rank threshold. Each row of M
    # is accumulated along the rows of Z2 (w = B[0] is scratch).
    w = B[0]
    fro2 = 0.0
    for i in range(m):
        for c in range(r2):
            w[c] = 0.0
        for j in range(n):
            a = Jw[o + i, j]
            if a == 0.0:
                continue  # (task rows are sparse: a posture row has one entry)
            for c in range(r2):
                w[c] += a * Z2[j, c]
        for c in range(r2):
            acc = w[c]
            fro2 += acc * acc
            if wide:
                A[c, i] = acc
            else:
                A[i, c] = acc
    nulltol = 1e-12 * max(1.0, math.sqrt(fro2))
    thr = max(eps, nulltol)
    if k == 0:
        return wide, 0, True, nulltol
    house_qr(A, rows, k, Hv, hb, w)
    for i in range(k):
        if abs(A[i, i]) < thr:
            return wide, k, False, nulltol
    # sigma_min(R) >= 1 / ||R^{-1}||_F: certify with the explicit inverse.
    inv2 = triangle_inverse(A, k, B)
    return wide, k, not inv2 * thr * thr > 1.0, nulltol


@kernel
def svd_rank(
    A: np.ndarray,
    k: int,
    wide: bool,
    B: np.ndarray,
    Us: np.ndarray,
    Vs: np.ndarray,
    sg: np.ndarray,
    eps: float,
    nulltol: float,
) -> int:
    """SVD of the triangular factor that :func:`factor` could not certify.

    ``R^T = Us diag(sg) Vs^T`` (wide) or ``R = Us diag(sg) Vs^T`` (tall), with the
    one-sided Jacobi SVD of the small ``k x k`` factor.

    Returns:
        The number of singular values ``>= eps`` (and above ``nulltol``): the
        rank used by the saturation stop rule.
    """
    for i in range(k):
        for j in range(k):
            B[i, j] = A[j, i] if wide else A[i, j]
    jacobi_svd(B, k, Us, sg, Vs)
    rank = 0
    for i in range(k):
        if sg[i] >= eps and sg[i] > nulltol:
            rank += 1
    return rank


@kernel
def svd_apply(
    src: np.ndarray,
    dst: np.ndarray,
    k: int,
    Us: np.ndarray,
    Vs: np.ndarray,
    sg: np.ndarray,
    eps: float,
    lam: float,
    nulltol: float,
    w2: np.ndarray,
) -> None:
    """``dst[:k] <- Vs diag(g(sg)) Us^T src[:k]`` (the filtered inverse; ``w2`` is scratch)."""
    for c in range(k):
        acc = 0.0
        for i in range(k):
            acc += Us[i, c] * src[i]
        w2[c] = acc * gain(sg[c], eps, lam, nulltol)
    for i in range(k):
        acc = 0.0
        for c in range(k):
            acc += Vs[i, c] * w2[c]
        dst[i] = acc


@kernel
def pinv_wide(
    t: np.ndarray,
    y: np.ndarray,
    k: int,
    rows: int,
    A: np.ndarray,
    Hv: np.ndarray,
    hb: np.ndarray,
    w1: np.ndarray,
) -> None:
    """``y <- M^# t`` with ``M = R^T Q1^T`` and R certified exact (wide case).

    Args:
        t: Task-space vector, length ``m = k``.
        y: Output coefficients in the basis ``Z2``, length ``rows = r2``.
        k: Size of R.
        rows: Number of basis columns ``r2``.
        A: R from :func:`factor`.
        Hv: Householder vectors of Q.
        hb: Householder coefficients of Q.
        w1: Scratch vector.
    """
    # Forward substitution with R^T, then y = Q [w; 0].
    for i in range(k):
        acc = t[i]
        for j in range(i):
            acc -= A[j, i] * w1[j]
        w1[i] = acc / A[i, i]
    for i in range(k):
        y[i] = w1[i]
    for i in range(k, rows):
        y[i] = 0.0
    apply_q(y, rows, k, Hv, hb)


@kernel
def pinv_tall(
    t: np.ndarray,
    y: np.ndarray,
    k: int,
    rows: int,
    A: np.ndarray,
    Hv: np.ndarray,
    hb: np.ndarray,
    w1: np.ndarray,
) -> None:
    """``y <- M^# t`` with ``M = Q1 R`` and R certified exact (tall case).

    Args as :func:`pinv_wide`, except ``k = r2`` and ``rows = m`` (the length of ``t``).
    """
    # w = Q^T t, then back substitution with R.
    for i in range(rows):
        w1[i] = t[i]
    apply_qt(w1, rows, k, Hv, hb)
    for i in range(k - 1, -1, -1):
        acc = w1[i]
        for j in range(i + 1, k):
            acc -= A[i, j] * y[j]
        y[i] = acc / A[i, i]


@kernel
def pinv_svd(
    t: np.ndarray,
    y: np.ndarray,
    wide: bool,
    k: int,
    rows: int,
    Hv: np.ndarray,
    hb: np.ndarray,
    Us: np.ndarray,
    Vs: np.ndarray,
    sg: np.ndarray,
    eps: float,
    lam: float,
    nulltol: float,
    w1: np.ndarray,
    w2: np.ndarray,
) -> None:
    """``y <- M^# t`` with the selectively damped inverse of R's SVD (:func:`svd_rank`).

    Wide: ``R^T = U S V^T``, so ``M^# = Q1 V S^# U^T``. Tall: ``R = U S V^T``, so
    ``M^# = V S^# U^T Q1^T``. ``S^#`` applies :func:`gain` to each singular value.
    ``rows`` is ``r2`` (wide) or ``m`` (tall), as in :func:`pinv_wide` / :func:`pinv_tall`.
    """
    if wide:
        svd_apply(t, w1, k, Us, Vs, sg, eps, lam, nulltol, w2)
        for i in range(k):
            y[i] = w1[i]
        for i in range(k, rows):
            y[i] = 0.0
        apply_q(y, rows, k, Hv, hb)
    else:
        for i in range(rows):
            w1[i] = t[i]
        apply_qt(w1, rows, k, Hv, hb)
        svd_apply(w1, y, k, Us, Vs, sg, eps, lam, nulltol, w2)


@kernel
def right_apply_q(
    Z: np.ndarray,
    n: int,
    r: int,
    k: int,
    Hv: np.ndarray,
    hb: np.ndarray,
    ZQ: np.ndarray,
    W: np.ndarray,
) -> None:
    """``ZQ <- Z[:, :r] Q = Z H_0 ... H_{k-1}`` for the factor of :func:`house_qr`.

    The reflections run on the transpose, held in ``W`` (scratch, ``>= r x n``), so
    their inner loops run along rows and vectorise; ``ZQ[0]`` holds the dot products
    meanwhile. Every entry is summed in the order of the row-by-row form.
    """
    for c in range(r):
        for i in range(n):
            W[c, i] = Z[i, c]
    d = ZQ[0]
    for j in range(k):
        if hb[j] == 0.0:
            continue
        for i in range(n):
            d[i] = 0.0
        for c in range(j, r):
            h = Hv[c, j]
            for i in range(n):
                d[i] += W[c, i] * h
        for i in range(n):
            d[i] *= hb[j]
        for c in range(j, r):
            h = Hv[c, j]
            for i in range(n):
                W[c, i] -= d[i] * h
    for i in range(n):
        for c in range(r):
            ZQ[i, c] = W[c, i]


@kernel
def append_svd_null(
    src: np.ndarray,
    n: int,
    cols: int,
    k: int,
    Vs: np.ndarray,
    sg: np.ndarray,
    nulltol: float,
    Zn: np.ndarray,
    rn: int,
) -> int:
    """Append ``src[:, :cols] Vs[:, c]`` to ``Zn`` for every ``sg[c] <= nulltol``.

    Returns:
        The new number of columns of ``Zn``.
    """
    for c in range(k):
        if sg[c] <= nulltol:
            for i in range(n):
                acc = 0.0
                for j in range(cols):
                    acc += src[i, j] * Vs[j, c]
                Zn[i, rn] = acc
            rn += 1
    return rn


@kernel
def null_basis(
    Z: np.ndarray,
    n: int,
    r: int,
    wide: bool,
    exact: bool,
    k: int,
    Hv: np.ndarray,
    hb: np.ndarray,
    Vs: np.ndarray,
    sg: np.ndarray,
    nulltol: float,
    Zn: np.ndarray,
    ZQ: np.ndarray,
) -> int:
    """Write an orthonormal basis of ``Z null(M)`` into ``Zn``; return its size.

    Only the exact null space is handed down (singular values ``<= nulltol``);
    damped directions stay with the level, so strict priority holds for damped
    tasks too. Wide case: ``M = R^T Q1^T``, so the null space is spanned by the
    last ``r - k`` columns of ``Q`` plus the null right singular vectors of
    ``R^T``. Tall case: only null right singular vectors of ``R``.

    Args:
        Z: Null-space basis of the higher levels, ``(n, >= r)``.
        n: Number of joints.
        r: Number of basis columns used.
        wide: Orientation returned by :func:`factor`.
        exact: Whether R was certified well conditioned (no null directions in it).
        k: Size of R.
        Hv: Householder vectors of Q.
        hb: Householder coefficients of Q.
        Vs: Right singular vectors of R (when not exact).
        sg: Singular values of R (when not exact).
        nulltol: Numerical-rank threshold.
        Zn: Output basis.
        ZQ: Scratch ``(n, n)``.
    """
    rn = 0
    if wide:
        right_apply_q(Z, n, r, k, Hv, hb, ZQ, Zn)  # (Zn is its scratch until written)
        if not exact:
            rn = append_svd_null(ZQ, n, k, k, Vs, sg, nulltol, Zn, rn)
        for c in range(k, r):
            for i in range(n):
                Zn[i, rn] = ZQ[i, c]
            rn += 1
    elif not exact:
        rn = append_svd_null(Z, n, r, k, Vs, sg, nulltol, Zn, rn)
    return rn
