"""Saturation steps of the SNS core: the scale interval, pinning a row, the 1-D level.

All in the weighted coordinates ``u = W^{1/2} dq`` (see :mod:`stackik.sns.run`).
A *row* ``q`` is a box row (``q < n``: its value is ``u_q``) or a general row
(``q >= n``: its value is ``Cw[q - n] . u``), with bounds ``low[q] <= value <= high[q]``
(``(n + p,)``, box bounds first, weighted). Both kinds are handled alike, which
generalises the joint-bound saturation of

    F. Flacco, A. De Luca, O. Khatib, "Control of redundant robots under hard joint
    constraints: saturation in the null space", IEEE T-RO 31(3):637-654, 2015

(Algorithms 1 and 3: the task scaling factor and the saturation of the most
critical joint) to arbitrary linear constraint rows.
"""

from __future__ import annotations

import math

import numpy as np

from stackik._jit import kernel

from .linalg import gain

_INF = math.inf


@kernel
def row_limits(
    lo: float, hi: float, fa: float, fb: float, ftol: float
) -> tuple[bool, float, float, float, float]:
    """Interval of ``s`` for which ``lo <= fa + s fb <= hi`` (one row).

    The bounds of ``s`` are exact; the tolerance ``ftol`` only lets a row that
    sits on its bound to rounding at ``s = 0`` count as satisfied. This is the
    per-joint ``S_min``/``S_max`` of Flacco et al.'s task scaling factor, for any row.

    Args:
        lo: Lower bound of the row (may be ``-inf``).
        hi: Upper bound of the row (may be ``+inf``).
        fa: Row value of the unscaled part ``a``.
        fb: Row value of the scaled part ``b``.
        ftol: Relative feasibility slack.

    Returns:
        ``(limits, su, bsu, sl, bsl)``: whether the row limits ``s`` at all, the
        upper limit of ``s`` and the bound it crosses there, the lower limit and
        its bound. ``su = -inf`` marks a constant row already out of bounds.
    """
    lo_t = lo - ftol * (1.0 + abs(lo))
    hi_t = hi + ftol * (1.0 + abs(hi))
    if fb > 0.0:
        su = (hi - fa) / fb
        if su < 0.0 and fa <= hi_t:
            su = 0.0
        sl = (lo - fa) / fb
        if sl > 0.0 and fa >= lo_t:
            sl = 0.0
        return True, su, hi, sl, lo
    if fb < 0.0:
        su = (lo - fa) / fb
        if su < 0.0 and fa >= lo_t:
            su = 0.0
        sl = (hi - fa) / fb
        if sl > 0.0 and fa <= hi_t:
            sl = 0.0
        return True, su, lo, sl, hi
    if fa > hi_t:
        return True, -_INF, hi, -_INF, lo
    if fa < lo_t:
        return True, -_INF, lo, -_INF, lo
    return False, 0.0, 0.0, 0.0, 0.0


@kernel
def scale_interval(
    va: np.ndarray,
    vb: np.ndarray,
    Cw: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    sat: np.ndarray,
    ftol: float,
) -> tuple[float, int, float, float, int, float]:
    """Limits of ``s`` over every unsaturated row of ``u(s) = a + s b``.

    Flacco et al.'s task scaling factor, taken over box and general rows alike.

    Args:
        va: Unscaled part ``a`` of the level's solution (weighted, ``(n,)``).
        vb: Scaled part ``b`` (weighted, ``(n,)``).
        Cw: Weighted general rows ``(p, n)``.
        low: Lower bounds of every row ``(n + p,)``.
        high: Upper bounds of every row ``(n + p,)``.
        sat: Rows already saturated (skipped), ``(n + p,)``.
        ftol: Relative feasibility slack.

    Returns:
        ``(up_lim, up_row, up_bnd, lo_lim, lo_row, lo_bnd)``: the smallest upper
        limit of ``s``, its row and the bound it crosses; the largest lower limit,
        its row and bound (rows ``-1`` when no row limits ``s``).
    """
    n = va.shape[0]
    up_lim = _INF
    up_row = -1
    up_bnd = 0.0
    lo_lim = -_INF
    lo_row = -1
    lo_bnd = 0.0
    for q in range(low.shape[0]):
        if sat[q]:
            continue
        lo = low[q]
        hi = high[q]
        if lo == -_INF and hi == _INF:
            continue
        # Row values at a and b (a general row costs two dot products).
        if q < n:
            fa = va[q]
            fb = vb[q]
        else:
            i = q - n
            fa = 0.0
            fb = 0.0
            for j in range(n):
                fa += Cw[i, j] * va[j]
                fb += Cw[i, j] * vb[j]
        limits, su, bsu, sl, bsl = row_limits(lo, hi, fa, fb, ftol)
        if not limits:
            continue
        if su < up_lim:
            up_lim = su
            up_row = q
            up_bnd = bsu
        if sl > lo_lim:
            lo_lim = sl
            lo_row = q
            lo_bnd = bsl
    return up_lim, up_row, up_bnd, lo_lim, lo_row, lo_bnd


@kernel
def saturate_row(
    qs: int, bnd: float, Cw: np.ndarray, Z2: np.ndarray, r2: int, ub: np.ndarray, wv: np.ndarray
) -> bool:
    """Pin row ``qs`` at the bound ``bnd`` it crosses (Flacco et al.'s saturation, Alg. 1).

    Moves the saturation point ``ub`` by the minimum-norm step onto the bound
    inside the remaining null space, ``ub += (bnd - c.ub) Z2 w / ||w||^2`` with
    ``w = Z2^T c`` (the paper's ``dq_N`` update, for any constraint row), then
    removes ``w`` from the basis with one Householder reflection ``H``
    (``H w = alpha e_0``): ``Z2 H`` spans the same space with ``w``'s direction in
    its first column, which is dropped, so ``Z2`` keeps ``r2 - 1`` orthonormal
    columns (the paper's selection-matrix update).

    Args:
        qs: Row to pin (``< n``: box row, else general row ``qs - n``).
        bnd: The bound value it is pinned at (weighted units).
        Cw: Weighted general rows ``(p, n)``.
        Z2: Null-space basis of the level and of the rows pinned so far (in/out).
        r2: Number of columns of ``Z2`` used.
        ub: Saturation point (in/out, weighted).
        wv: Scratch ``(n,)``.

    Returns:
        False when the row cannot move in the remaining null space (nothing changed).
    """
    n = Z2.shape[0]
    # w = Z2^T c, with ||c||^2 and c . ub.
    if qs < n:
        for c in range(r2):
            wv[c] = Z2[qs, c]
        cn2 = 1.0
        cub = ub[qs]
    else:
        i = qs - n
        cn2 = 0.0
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
        return False
    step = (bnd - cub) / wn2
    for i in range(n):
        acc = 0.0
        for c in range(r2):
            acc += Z2[i, c] * wv[c]
        ub[i] += step * acc
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
    return True


@kernel
def scale_1d(y0: float, dy: float, ylo: float, yhi: float) -> tuple[float, float]:
    """Largest ``s`` in [0, 1] with ``y0 + s dy`` in ``[ylo, yhi]``: ``(s, y)``.

    If no ``s`` fits, the ``s`` in {0, 1} whose ``y`` is closest to the interval
    (least residual along the task direction), with ``y`` clamped.
    """
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
    else:
        d0 = max(ylo - y0, y0 - yhi, 0.0)
        d1 = max(ylo - y0 - dy, y0 + dy - yhi, 0.0)
        s = 1.0 if d1 <= d0 else 0.0
    y = min(max(y0 + s * dy, ylo), yhi)
    return s, y


@kernel
def level_1d(
    Jw: np.ndarray,
    o: int,
    m: int,
    x: np.ndarray,
    z: np.ndarray,
    u: np.ndarray,
    Cw: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    mode: int,
    eps: float,
    lam: float,
) -> float:
    """Exact level solve when one null-space direction ``z`` is left (``r == 1``).

    With ``u = u_prev + z y`` every row bounds ``y`` to an interval and the task
    reads ``sigma y = s xt - ct`` along ``U = M / sigma`` (``M = J_k z``), so the
    level's LP/QP is solved in closed form: the largest ``s`` whose ``y(s)`` lies
    in the interval (SCALE), else the ``s`` in {0, 1} closest to it with ``y``
    clamped (least residual along the task direction); MIN_ERROR clamps the
    least-squares ``y``.

    Args:
        Jw: Weighted stacked task Jacobian ``(M, n)``.
        o: First row of the level.
        m: Number of rows of the level.
        x: Stacked task velocities ``(M,)``.
        z: The remaining null-space direction (unit, ``(n,)``).
        u: Solution of the higher levels (in), of this level (out); weighted.
        Cw: Weighted general rows ``(p, n)``.
        low: Lower bounds of every row ``(n + p,)``.
        high: Upper bounds of every row ``(n + p,)``.
        mode: 0 = SCALE, else MIN_ERROR.
        eps: Damping threshold (``tolerance``).
        lam: Damping (``damping``).

    Returns:
        The task scale ``s`` (1 for MIN_ERROR and for a task blind to ``z``).
    """
    n = z.shape[0]
    # Interval of y from every row; u_prev is feasible, so it contains 0 (up to rounding).
    ylo = -_INF
    yhi = _INF
    for q in range(low.shape[0]):
        if q < n:
            g = z[q]
            v0 = u[q]
        else:
            g = 0.0
            v0 = 0.0
            for j in range(n):
                g += Cw[q - n, j] * z[j]
                v0 += Cw[q - n, j] * u[j]
        if abs(g) <= 1e-14:
            continue
        a = (low[q] - v0) / g
        b = (high[q] - v0) / g
        if g < 0.0:
            a, b = b, a
        ylo = max(ylo, a)
        yhi = min(yhi, b)
    ylo = min(ylo, 0.0)
    yhi = max(yhi, 0.0)
    # The task along z: sigma = ||M||, xt = U.x_k, ct = U.(J'_k u_prev).
    sig2 = 0.0
    xt = 0.0
    ct = 0.0
    for i in range(m):
        mi = 0.0
        ci = 0.0
        for j in range(n):
            mi += Jw[o + i, j] * z[j]
            ci += Jw[o + i, j] * u[j]
        sig2 += mi * mi
        xt += mi * x[o + i]
        ct += mi * ci
    sigma = math.sqrt(sig2)
    nulltol = 1e-12 * max(1.0, sigma)
    if sigma <= nulltol:
        return 1.0
    xt /= sigma
    ct /= sigma
    g = gain(sigma, eps, lam, nulltol)
    if mode != 0:
        y = min(max(g * (xt - ct), ylo), yhi)
        s = 1.0
    else:
        s, y = scale_1d(-g * ct, g * xt, ylo, yhi)
    for j in range(n):
        u[j] += z[j] * y
    return s
