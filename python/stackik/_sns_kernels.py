"""Small dense kernels of the SNS velocity solver (compiled with numba when available).

Everything here is written as explicit loops over small dense arrays so that
numba can compile it to tight machine code without SciPy's LAPACK: Householder
QR, a one-sided Jacobi SVD for the (rare) near-singular case, and the
generalised SNS saturation loop of Flacco, De Luca and Khatib (IEEE T-RO 2015,
Algorithms 1 and 3) extended to general constraint rows.

The functions are plain Python at import time, so ``import stackik.sns`` never
imports numba. :func:`load` compiles them on first use (``cache=True``, so later
processes only load the cached machine code); without numba the same functions
run as pure Python, correct but roughly a thousand times slower.

Conventions of the entry point :func:`sns_run` (all in the *weighted*
coordinates ``u = W^{1/2} dq``, where the weighted minimum-norm problem becomes
the plain minimum-norm one):

* ``info[0]`` is a return code (``OK``, a validation failure, ``NEED_START``
  when a feasible start point needs a QP, ``NEED_LEVEL`` when a level needs the
  exact QP fallback); ``info[1:3]`` locate the problem.
* ``Zc[:, :r]`` is an orthonormal basis of the null space of the levels solved
  so far; ``Zn`` receives the basis after the current level.
"""

from __future__ import annotations

import math

import numpy as np

# Return codes written to info[0].
OK = 0
BAD_JACOBIAN = 1
BAD_GOAL = 2
BAD_C = 3
NAN_BOUNDS = 4
INVERTED_BOUNDS = 5
NAN_BOX = 6
INVERTED_BOX = 7
NEED_START = 8
NEED_LEVEL = 9

# Bits of iprm[2].
FLAG_SKIP_CHECKS = 1
FLAG_HAVE_START = 2
FLAG_HOLD = 4

# Reasons a level is handed to the QP fallback (info[6]).
FALLBACK_NO_FEASIBLE_SCALE = 1
FALLBACK_MIN_ERROR = 2

_INF = math.inf


def _house_qr(A, rows, cols, Hv, hb):
    """Householder QR of ``A[:rows, :cols]`` in place (``rows >= cols``).

    On return the upper triangle of ``A[:cols, :cols]`` holds R, the entries
    below it are zero, and ``Q = H_0 H_1 ... H_{cols-1}`` with
    ``H_j = I - hb[j] Hv[:, j] Hv[:, j]^T``.
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
            d = 0.0
            for i in range(j, rows):
                d += Hv[i, j] * A[i, c]
            d *= beta
            for i in range(j, rows):
                A[i, c] -= d * Hv[i, j]


def _apply_q(y, rows, k, Hv, hb):
    """``y <- Q y`` for the Householder factor of :func:`_house_qr`."""
    for j in range(k - 1, -1, -1):
        if hb[j] == 0.0:
            continue
        d = 0.0
        for i in range(j, rows):
            d += Hv[i, j] * y[i]
        d *= hb[j]
        for i in range(j, rows):
            y[i] -= d * Hv[i, j]


def _apply_qt(y, rows, k, Hv, hb):
    """``y <- Q^T y`` for the Householder factor of :func:`_house_qr`."""
    for j in range(k):
        if hb[j] == 0.0:
            continue
        d = 0.0
        for i in range(j, rows):
            d += Hv[i, j] * y[i]
        d *= hb[j]
        for i in range(j, rows):
            y[i] -= d * Hv[i, j]


def _jacobi_svd(B, k, U, s, V):
    """One-sided Jacobi SVD ``B[:k, :k] = U diag(s) V^T`` (Hestenes' method).

    Columns of U whose singular value is zero are left zero; V is always a full
    orthogonal matrix.
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
                    continue
                rotated = True
                zeta = (beta - alpha) / (2.0 * gamma)
                t = math.copysign(1.0, zeta) / (abs(zeta) + math.sqrt(1.0 + zeta * zeta))
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


def _gain(sigma, eps, lam, nulltol):
    """Filtered inverse of one singular value (selective damping).

    Exact ``1/sigma`` for ``sigma >= eps``; below ``eps`` the damping factor
    grows smoothly to ``lam`` (Maciejewski and Klein's damped least squares,
    applied only to the near-singular directions); directions at or below the
    numerical-rank threshold ``nulltol`` are dropped.
    """
    if sigma <= nulltol:
        return 0.0
    if sigma >= eps or lam == 0.0:
        return 1.0 / sigma
    r = sigma / eps
    return sigma / (sigma * sigma + lam * lam * (1.0 - r * r))


def _factor(Jw, o, m, Z2, n, r2, A, Hv, hb, B, Us, Vs, sg, eps):
    """Factor ``M = Jw[o:o+m] Z2[:, :r2]`` for pseudo-inverse solves.

    The wide case (``m <= r2``) factors ``M^T = Q R``; the tall case factors
    ``M = Q R``. When ``R`` cannot be certified to have every singular value
    above ``max(eps, nulltol)`` its SVD is computed with :func:`_jacobi_svd`.

    Returns:
        ``(wide, k, exact, rank, nulltol)``: orientation, size of ``R``, whether
        the plain triangular solve is exact, the number of singular values
        ``>= eps``, and the numerical-rank threshold used.
    """
    wide = m <= r2
    if wide:
        rows = r2
        k = m
    else:
        rows = m
        k = r2
    fro2 = 0.0
    for i in range(m):
        for c in range(r2):
            acc = 0.0
            for j in range(n):
                acc += Jw[o + i, j] * Z2[j, c]
            fro2 += acc * acc
            if wide:
                A[c, i] = acc
            else:
                A[i, c] = acc
    nulltol = 1e-12 * max(1.0, math.sqrt(fro2))
    thr = max(eps, nulltol)
    if k == 0:
        return wide, 0, True, 0, nulltol
    _house_qr(A, rows, k, Hv, hb)
    exact = True
    for i in range(k):
        if abs(A[i, i]) < thr:
            exact = False
            break
    if exact:
        # sigma_min(R) >= 1 / ||R^{-1}||_F: certify with the explicit inverse.
        inv2 = 0.0
        for c in range(k):
            for i in range(k - 1, -1, -1):
                acc = 1.0 if i == c else 0.0
                for j in range(i + 1, k):
                    acc -= A[i, j] * B[j, c]
                B[i, c] = acc / A[i, i]
                inv2 += B[i, c] * B[i, c]
        if inv2 * thr * thr > 1.0:
            exact = False
    if exact:
        return wide, k, True, k, nulltol
    for i in range(k):
        for j in range(k):
            B[i, j] = A[j, i] if wide else A[i, j]
    _jacobi_svd(B, k, Us, sg, Vs)
    rank = 0
    for i in range(k):
        if sg[i] >= eps and sg[i] > nulltol:
            rank += 1
    return wide, k, False, rank, nulltol


def _pinv_apply(t, y, wide, exact, k, rows, A, Hv, hb, Us, Vs, sg, eps, lam, nulltol, w1, w2):
    """``y <- M^# t`` with the factorization of :func:`_factor`.

    ``rows`` is ``r2`` in the wide case and ``m`` in the tall case; ``y`` has
    length ``r2``. ``w1``, ``w2`` are scratch vectors.
    """
    if wide:
        # M = R^T Q1^T.
        if exact:
            for i in range(k):
                acc = t[i]
                for j in range(i):
                    acc -= A[j, i] * w1[j]
                w1[i] = acc / A[i, i]
        else:
            # R^T = U S V^T, so M^# = Q1 V S^# U^T.
            for c in range(k):
                acc = 0.0
                for i in range(k):
                    acc += Us[i, c] * t[i]
                w2[c] = acc * _gain(sg[c], eps, lam, nulltol)
            for i in range(k):
                acc = 0.0
                for c in range(k):
                    acc += Vs[i, c] * w2[c]
                w1[i] = acc
        for i in range(k):
            y[i] = w1[i]
        for i in range(k, rows):
            y[i] = 0.0
        _apply_q(y, rows, k, Hv, hb)
    else:
        # M = Q1 R.
        for i in range(rows):
            w1[i] = t[i]
        _apply_qt(w1, rows, k, Hv, hb)
        if exact:
            for i in range(k - 1, -1, -1):
                acc = w1[i]
                for j in range(i + 1, k):
                    acc -= A[i, j] * y[j]
                y[i] = acc / A[i, i]
        else:
            # R = U S V^T, so M^# = V S^# U^T Q1^T.
            for c in range(k):
                acc = 0.0
                for i in range(k):
                    acc += Us[i, c] * w1[i]
                w2[c] = acc * _gain(sg[c], eps, lam, nulltol)
            for i in range(k):
                acc = 0.0
                for c in range(k):
                    acc += Vs[i, c] * w2[c]
                y[i] = acc


def _null_basis(Z, n, r, wide, exact, k, Hv, hb, Vs, sg, nulltol, Zn, ZQ):
    """Write an orthonormal basis of ``Z null(M)`` into ``Zn``; return its size."""
    rn = 0
    if wide:
        for i in range(n):
            for c in range(r):
                ZQ[i, c] = Z[i, c]
        # ZQ <- Z Q = Z H_0 ... H_{k-1}.
        for j in range(k):
            if hb[j] == 0.0:
                continue
            for i in range(n):
                d = 0.0
                for c in range(j, r):
                    d += ZQ[i, c] * Hv[c, j]
                d *= hb[j]
                for c in range(j, r):
                    ZQ[i, c] -= d * Hv[c, j]
        if not exact:
            for c in range(k):
                if sg[c] <= nulltol:
                    for i in range(n):
                        acc = 0.0
                        for j in range(k):
                            acc += ZQ[i, j] * Vs[j, c]
                        Zn[i, rn] = acc
                    rn += 1
        for c in range(k, r):
            for i in range(n):
                Zn[i, rn] = ZQ[i, c]
            rn += 1
    elif not exact:
        for c in range(k):
            if sg[c] <= nulltol:
                for i in range(n):
                    acc = 0.0
                    for j in range(r):
                        acc += Z[i, j] * Vs[j, c]
                    Zn[i, rn] = acc
                rn += 1
    return rn


def _level_1d(Jw, o, m, x, z, n, u, Cw, gl, gu, blw, buw, mode, eps, lam, c0):
    """Exact level solve when one null-space direction ``z`` is left (``r == 1``).

    With ``u = u_prev + z y`` every row bounds ``y`` to an interval and the task
    reads ``sigma y = s xt - ct`` along ``U = M / sigma`` (``M = J_k z``), so the
    level's LP/QP is solved in closed form: the largest ``s`` whose ``y(s)`` lies
    in the interval (SCALE), else the ``s`` in {0, 1} closest to it with ``y``
    clamped (least residual along the task direction); MIN_ERROR clamps the
    least-squares ``y``. Returns the scale.
    """
    ylo = -_INF
    yhi = _INF
    for q in range(n + Cw.shape[0]):
        if q < n:
            g = z[q]
            v0 = u[q]
            lo = blw[q]
            hi = buw[q]
        else:
            i = q - n
            g = 0.0
            v0 = 0.0
            for j in range(n):
                g += Cw[i, j] * z[j]
                v0 += Cw[i, j] * u[j]
            lo = gl[i]
            hi = gu[i]
        if abs(g) <= 1e-14:
            continue
        a = (lo - v0) / g
        b = (hi - v0) / g
        if g < 0.0:
            a, b = b, a
        ylo = max(ylo, a)
        yhi = min(yhi, b)
    # u_prev is feasible, so y = 0 is, up to rounding.
    ylo = min(ylo, 0.0)
    yhi = max(yhi, 0.0)
    sig2 = 0.0
    xt = 0.0
    ct = 0.0
    for i in range(m):
        mi = 0.0
        ci = 0.0
        for j in range(n):
            mi += Jw[o + i, j] * z[j]
            ci += Jw[o + i, j] * u[j]
        c0[i] = ci
        sig2 += mi * mi
        xt += mi * x[o + i]
        ct += mi * ci
    sigma = math.sqrt(sig2)
    nulltol = 1e-12 * max(1.0, sigma)
    if sigma <= nulltol:
        return 1.0
    xt /= sigma
    ct /= sigma
    g = _gain(sigma, eps, lam, nulltol)
    if mode != 0:
        y = min(max(g * (xt - ct), ylo), yhi)
        for j in range(n):
            u[j] += z[j] * y
        return 1.0
    y0 = -g * ct
    dy = g * xt
    smin = 0.0
    smax = 1.0
    if dy > 0.0:
        smin = max(smin, (ylo - y0) / dy)
        smax = min(smax, (yhi - y0) / dy)
    elif dy < 0.0:
        smin = max(smin, (yhi - y0) / dy)
        smax = min(smax, (ylo - y0) / dy)
    elif y0 < ylo or y0 > yhi:
        smin = 1.0
        smax = 0.0
    if smin <= smax:
        s = smax
        y = min(max(y0 + s * dy, ylo), yhi)
    else:
        d0 = max(ylo - y0, y0 - yhi, 0.0)
        d1 = max(ylo - y0 - dy, y0 + dy - yhi, 0.0)
        s = 1.0 if d1 <= d0 else 0.0
        y = min(max(y0 + s * dy, ylo), yhi)
    for j in range(n):
        u[j] += z[j] * y
    return s


def _validate(J, x, Cg, gl, gu, bl, bu, info):
    """Finiteness and bound-order checks; write a code to ``info`` on failure."""
    mt, n = J.shape
    for i in range(mt):
        for j in range(n):
            if not math.isfinite(J[i, j]):
                info[0] = BAD_JACOBIAN
                info[1] = i
                info[2] = j
                return False
        if not math.isfinite(x[i]):
            info[0] = BAD_GOAL
            info[1] = i
            return False
    p = Cg.shape[0]
    for i in range(p):
        for j in range(n):
            if not math.isfinite(Cg[i, j]):
                info[0] = BAD_C
                info[1] = i
                info[2] = j
                return False
        if math.isnan(gl[i]) or math.isnan(gu[i]):
            info[0] = NAN_BOUNDS
            info[1] = i
            return False
        if gl[i] > gu[i] or gl[i] == _INF or gu[i] == -_INF:
            info[0] = INVERTED_BOUNDS
            info[1] = i
            return False
    for j in range(n):
        if math.isnan(bl[j]) or math.isnan(bu[j]):
            info[0] = NAN_BOX
            info[1] = j
            return False
        if bl[j] > bu[j] or bl[j] == _INF or bu[j] == -_INF:
            info[0] = INVERTED_BOX
            info[1] = j
            return False
    return True


def sns_run(
    J,
    x,
    offs,
    modes,
    Cg,
    gl,
    gu,
    bl,
    bu,
    wis,
    prm,
    iprm,
    u,
    Zc,
    Zn,
    dq,
    scales,
    errs,
    act,
    fout,
    info,
):
    """Run the generalised SNS from level ``iprm[0]`` on.

    Args:
        J: Stacked task Jacobians, ``(M, n)``; level ``k`` is rows ``offs[k]:offs[k+1]``.
        x: Stacked task velocities, ``(M,)``.
        offs: Level offsets into ``J``/``x``, ``(L+1,)`` int64.
        modes: Per-level mode, 0 = SCALE, 1 = MIN_ERROR, ``(L,)`` int64.
        Cg: General constraint rows, ``(p, n)``.
        gl: Lower bounds of ``Cg dq``, ``(p,)`` (``-inf`` allowed).
        gu: Upper bounds of ``Cg dq``, ``(p,)`` (``+inf`` allowed).
        bl: Lower joint-velocity box, ``(n,)``.
        bu: Upper joint-velocity box, ``(n,)``.
        wis: ``1/sqrt(joint_weights)``, ``(n,)``.
        prm: ``[damping, tolerance, feasibility tol, activity tol]``.
        iprm: ``[start level, max iterations per level, flags, null-space size r]``.
        u: Weighted solution so far (in: start point when continuing; out).
        Zc: Null-space basis of the levels before the start level (in/out).
        Zn: Scratch / next null-space basis when a level is handed back.
        dq: Output joint velocity.
        scales: Output task scales (levels before the start level are kept).
        errs: Output residuals ``||J_k dq - s_k x_k||``.
        act: Output indices of the box rows then of the general rows at a bound
            (their counts are ``info[1]`` and ``info[2] - info[1]``).
        fout: Output ``[max violation of box and general rows]``.
        info: Output ``[code, index or box count, index or active count, r, rn,
            iterations, reason, hit_max]``.
    """
    mt, n = J.shape
    nlev = offs.shape[0] - 1
    p = Cg.shape[0]
    lam = prm[0]
    eps = prm[1]
    ftol = prm[2]
    acttol = prm[3]
    start = iprm[0]
    maxit = iprm[1]
    flags = iprm[2]
    r = iprm[3]
    for i in range(info.shape[0]):
        info[i] = 0
    if start == 0 and (flags & FLAG_SKIP_CHECKS) == 0:
        if not _validate(J, x, Cg, gl, gu, bl, bu, info):
            return

    # Weighted copies: u = W^{1/2} dq, J' = J W^{-1/2}, C' = C W^{-1/2}.
    Jw = np.empty((mt, n))
    for i in range(mt):
        for j in range(n):
            Jw[i, j] = J[i, j] * wis[j]
    Cw = np.empty((p, n))
    for i in range(p):
        for j in range(n):
            Cw[i, j] = Cg[i, j] * wis[j]
    blw = np.empty(n)
    buw = np.empty(n)
    for j in range(n):
        blw[j] = bl[j] / wis[j]
        buw[j] = bu[j] / wis[j]

    if start == 0:
        if (flags & FLAG_HAVE_START) == 0:
            # Start from the minimum-norm point of the box; if the general rows
            # reject it, a QP must find the start point.
            for j in range(n):
                u[j] = min(max(0.0, blw[j]), buw[j])
            for i in range(p):
                v = 0.0
                for j in range(n):
                    v += Cw[i, j] * u[j]
                if v < gl[i] - ftol * (1.0 + abs(gl[i])) or v > gu[i] + ftol * (1.0 + abs(gu[i])):
                    info[0] = NEED_START
                    info[1] = i
                    return
        for i in range(n):
            for j in range(n):
                Zc[i, j] = 1.0 if i == j else 0.0
        r = n

    mmax = 1
    for k in range(nlev):
        mmax = max(mmax, offs[k + 1] - offs[k])
    dim = max(mmax, n)
    A = np.empty((dim, dim))
    Hv = np.empty((dim, dim))
    hb = np.empty(dim)
    B = np.empty((dim, dim))
    Us = np.empty((dim, dim))
    Vs = np.empty((dim, dim))
    sg = np.empty(dim)
    Z2 = np.empty((n, n))
    ZQ = np.empty((n, n))
    ub = np.empty(n)
    va = np.empty(n)
    vb = np.empty(n)
    best_u = np.empty(n)
    t2 = np.empty(dim)
    y1 = np.empty(dim)
    y2 = np.empty(dim)
    w1 = np.empty(dim)
    w2 = np.empty(dim)
    wv = np.empty(n)
    pz = np.empty(n)
    sat = np.zeros(n + p, dtype=np.bool_)
    totit = 0
    hit_max = 0

    for k in range(start, nlev):
        o = offs[k]
        m = offs[k + 1] - o
        if m == 0:
            scales[k] = 1.0
            continue
        r2 = r
        for i in range(n):
            for c in range(r):
                Z2[i, c] = Zc[i, c]
            ub[i] = u[i]
        for q in range(n + p):
            sat[q] = False
        best_s = -1.0
        done = False
        rho0 = 0
        rn = 0
        it = 0
        while True:
            it += 1
            wide, kk, exact, rank, nulltol = _factor(
                Jw, o, m, Z2, n, r2, A, Hv, hb, B, Us, Vs, sg, eps
            )
            rows = r2 if wide else m
            if it == 1:
                rho0 = rank
                rn = _null_basis(Z2, n, r2, wide, exact, kk, Hv, hb, Vs, sg, nulltol, Zn, ZQ)
            elif rank < rho0:
                # Saturation removed task-space directions (rank(J P) dropped).
                break
            # b: scaled part, a: the rest (Flacco et al., Alg. 1).
            for i in range(m):
                acc = 0.0
                for j in range(n):
                    acc += Jw[o + i, j] * ub[j]
                t2[i] = acc
            _pinv_apply(
                x[o : o + m],
                y1,
                wide,
                exact,
                kk,
                rows,
                A,
                Hv,
                hb,
                Us,
                Vs,
                sg,
                eps,
                lam,
                nulltol,
                w1,
                w2,
            )
            _pinv_apply(
                t2, y2, wide, exact, kk, rows, A, Hv, hb, Us, Vs, sg, eps, lam, nulltol, w1, w2
            )
            for i in range(n):
                acc1 = 0.0
                acc2 = 0.0
                for c in range(r2):
                    acc1 += Z2[i, c] * y1[c]
                    acc2 += Z2[i, c] * y2[c]
                vb[i] = acc1
                va[i] = ub[i] - acc2

            # Largest s in [0, 1] with every row of a + s b inside its bounds.
            up_lim = _INF
            up_row = -1
            up_bnd = 0.0
            lo_lim = -_INF
            lo_row = -1
            lo_bnd = 0.0
            for q in range(n + p):
                if sat[q]:
                    continue
                if q < n:
                    lo = blw[q]
                    hi = buw[q]
                    if lo == -_INF and hi == _INF:
                        continue
                    fa = va[q]
                    fb = vb[q]
                else:
                    i = q - n
                    lo = gl[i]
                    hi = gu[i]
                    if lo == -_INF and hi == _INF:
                        continue
                    fa = 0.0
                    fb = 0.0
                    for j in range(n):
                        fa += Cw[i, j] * va[j]
                        fb += Cw[i, j] * vb[j]
                lo_t = lo - ftol * (1.0 + abs(lo))
                hi_t = hi + ftol * (1.0 + abs(hi))
                # Exact bounds for the scale; the tolerance only lets a row that
                # sits on its bound to rounding at s = 0 count as satisfied.
                if fb > 0.0:
                    su = (hi - fa) / fb
                    if su < 0.0 and fa <= hi_t:
                        su = 0.0
                    sl = (lo - fa) / fb
                    if sl > 0.0 and fa >= lo_t:
                        sl = 0.0
                    bsu = hi
                    bsl = lo
                elif fb < 0.0:
                    su = (lo - fa) / fb
                    if su < 0.0 and fa >= lo_t:
                        su = 0.0
                    sl = (hi - fa) / fb
                    if sl > 0.0 and fa <= hi_t:
                        sl = 0.0
                    bsu = lo
                    bsl = hi
                else:
                    sl = -_INF
                    bsl = lo
                    if fa > hi_t:
                        su = -_INF
                        bsu = hi
                    elif fa < lo_t:
                        su = -_INF
                        bsu = lo
                    else:
                        continue
                if su < up_lim:
                    up_lim = su
                    up_row = q
                    up_bnd = bsu
                if sl > lo_lim:
                    lo_lim = sl
                    lo_row = q
                    lo_bnd = bsl
            smax = min(1.0, up_lim)
            smin = max(0.0, lo_lim)
            feasible = smin <= smax
            if feasible and smax >= 1.0:
                done = True
                for i in range(n):
                    u[i] = va[i] + vb[i]
                break
            if feasible and smax > best_s:
                best_s = smax
                for i in range(n):
                    best_u[i] = va[i] + smax * vb[i]
            if it >= maxit:
                hit_max = 1
                break
            # Saturate the most critical row at the bound it crosses.
            if up_lim < 1.0:
                qs = up_row
                bnd = up_bnd
            elif lo_lim > 1.0:
                qs = lo_row
                bnd = lo_bnd
            else:
                break
            cn2 = 0.0
            if qs < n:
                for c in range(r2):
                    wv[c] = Z2[qs, c]
                cn2 = 1.0
                cub = ub[qs]
            else:
                i = qs - n
                cub = 0.0
                for j in range(n):
                    cn2 += Cw[i, j] * Cw[i, j]
                    cub += Cw[i, j] * ub[j]
                for c in range(r2):
                    acc = 0.0
                    for j in range(n):
                        acc += Cw[i, j] * Z2[j, c]
                    wv[c] = acc
            wn2 = 0.0
            for c in range(r2):
                wn2 += wv[c] * wv[c]
            if wn2 <= 1e-20 * cn2:
                # The row cannot move in the remaining null space.
                break
            # Minimum-norm move of the base point onto the bound, inside the
            # null space of the higher levels and of the rows already saturated.
            for i in range(n):
                acc = 0.0
                for c in range(r2):
                    acc += Z2[i, c] * wv[c]
                pz[i] = acc
            gain = (bnd - cub) / wn2
            for i in range(n):
                ub[i] += gain * pz[i]
            # Drop the row's direction from the basis: Z2 <- Z2 H, H w = alpha e_0.
            wnrm = math.sqrt(wn2)
            alpha = -wnrm if wv[0] >= 0.0 else wnrm
            v0 = wv[0] - alpha
            wv[0] = v0
            hbeta = 2.0 / (wn2 - (v0 + alpha) * (v0 + alpha) + v0 * v0)
            for i in range(n):
                d = 0.0
                for c in range(r2):
                    d += Z2[i, c] * wv[c]
                d *= hbeta
                for c in range(r2):
                    Z2[i, c] -= d * wv[c]
            for i in range(n):
                for c in range(1, r2):
                    Z2[i, c - 1] = Z2[i, c]
            r2 -= 1
            sat[qs] = True
        totit += it
        if done:
            scales[k] = 1.0
        elif best_s >= 0.0 and modes[k] == 0:
            scales[k] = best_s
            for i in range(n):
                u[i] = best_u[i]
        elif r == 1:
            for i in range(n):
                wv[i] = Zc[i, 0]
            scales[k] = _level_1d(
                Jw, o, m, x, wv, n, u, Cw, gl, gu, blw, buw, modes[k], eps, lam, t2
            )
        elif modes[k] == 0 and (flags & FLAG_HOLD) != 0:
            # No feasible scale and no exact fallback wanted: the level holds.
            scales[k] = 0.0
        else:
            info[0] = NEED_LEVEL
            info[1] = k
            info[3] = r
            info[4] = rn
            info[5] = totit
            info[6] = FALLBACK_MIN_ERROR if modes[k] != 0 else FALLBACK_NO_FEASIBLE_SCALE
            info[7] = hit_max
            return
        for i in range(n):
            for c in range(rn):
                Zc[i, c] = Zn[i, c]
        r = rn

    # Back to joint space; residuals, active rows and the violation check.
    for j in range(n):
        dq[j] = wis[j] * u[j]
    for k in range(nlev):
        o = offs[k]
        acc2 = 0.0
        for i in range(o, offs[k + 1]):
            acc = -scales[k] * x[i]
            for j in range(n):
                acc += J[i, j] * dq[j]
            acc2 += acc * acc
        errs[k] = math.sqrt(acc2)
    viol = 0.0
    nact = 0
    for j in range(n):
        v = dq[j]
        viol = max(viol, bl[j] - v, v - bu[j])
        # (infinite bounds are never active; the guard also avoids inf - inf)
        at_lo = bl[j] > -_INF and v <= bl[j] + acttol * (1.0 + abs(bl[j]))
        at_hi = bu[j] < _INF and v >= bu[j] - acttol * (1.0 + abs(bu[j]))
        if at_lo or at_hi:
            act[nact] = j
            nact += 1
    nbox = nact
    for i in range(p):
        v = 0.0
        for j in range(n):
            v += Cg[i, j] * dq[j]
        viol = max(viol, gl[i] - v, v - gu[i])
        at_lo = gl[i] > -_INF and v <= gl[i] + acttol * (1.0 + abs(gl[i]))
        at_hi = gu[i] < _INF and v >= gu[i] - acttol * (1.0 + abs(gu[i]))
        if at_lo or at_hi:
            act[nact] = i
            nact += 1
    fout[0] = viol
    info[1] = nbox
    info[2] = nact
    info[0] = OK
    info[3] = r
    info[5] = totit
    info[7] = hit_max


_HELPERS = (
    "_house_qr",
    "_apply_q",
    "_apply_qt",
    "_jacobi_svd",
    "_gain",
    "_factor",
    "_pinv_apply",
    "_null_basis",
    "_level_1d",
    "_validate",
    "sns_run",
)

_state: dict[str, object] = {}


def load(use_numba: bool = True):
    """Return the :func:`sns_run` entry point, compiled with numba if possible.

    Args:
        use_numba: Compile with numba (imported here, lazily). If False or if
            numba is not installed, the pure-Python functions are returned.

    Returns:
        A pair ``(sns_run, compiled)``.
    """
    if not use_numba:
        return _PY_SNS_RUN, False
    if "jit" in _state:
        return _state["jit"], True
    try:
        import numba
    except ImportError:  # pragma: no cover - exercised only without numba
        return _PY_SNS_RUN, False
    g = globals()
    for name in _HELPERS:
        g[name] = numba.njit(cache=True, nogil=True)(_PY[name])
    _state["jit"] = g["sns_run"]
    return g["sns_run"], True


_PY = {name: globals()[name] for name in _HELPERS}
_PY_SNS_RUN = _PY["sns_run"]
