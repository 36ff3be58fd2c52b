"""The least-violating start point of an empty constraint set, compiled.

When no joint velocity satisfies every row (a person pushing the arm against its
velocity box, say), the step starts from the point that violates the rows least:
``min 1e-8 ||u||^2 / 2 + sum_i t_i^2 / 2`` over the box, with ``t_i`` the violation of
general row ``i`` (weighted coordinates ``u = W^{1/2} dq``). :func:`hinge_start` is the
compiled form of :func:`stackik.sns.qp.hinge_least_squares` (the NumPy and ``quadprog``
reference it is tested against), with the same passes: each solves the box-constrained
least squares of the rows violated at the current point with the active-set solver of
:mod:`stackik.sns.activeset`, then moves to the minimum of the objective on the segment
towards that solution; the point is accepted when it meets the objective's optimality
conditions on the box.
"""

from __future__ import annotations

import numpy as np

from stackik._jit import kernel

from .activeset import QP_SOLVED, gi_solve, qp_workspace
from .startpoint import _SNAP_TOL

__all__ = ["hinge_start"]

_LV_REG = 1e-8  # weight of ||u||^2 in the least-violating start (makes it unique)
_LV_ITERATIONS = 30  # active-set passes before giving up
_LV_KKT_TOL = 1e-7  # relative tolerance of the optimality check (projected gradient)
_LV_PROX = 1e-6  # proximal weight of the passes, relative to the rows' squared norms


@kernel(inline=True)
def _violations(
    Cw: np.ndarray, gl: np.ndarray, gu: np.ndarray, u: np.ndarray, t: np.ndarray
) -> None:
    """``t <- max(gl - C u, 0) - max(C u - gu, 0)``: each row's signed violation at ``u``."""
    p, n = Cw.shape
    for i in range(p):
        v = 0.0
        for j in range(n):
            v += Cw[i, j] * u[j]
        t[i] = max(gl[i] - v, 0.0) - max(v - gu[i], 0.0)


@kernel
def _stationary(
    Cw: np.ndarray, t: np.ndarray, u: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> bool:
    """Whether ``u`` meets the optimality conditions (projected gradient, relative)."""
    p, n = Cw.shape
    scale = 0.0
    for j in range(n):
        acc = 0.0
        for i in range(p):
            acc += abs(Cw[i, j]) * abs(t[i])
        scale = max(scale, acc)
    tol = _LV_KKT_TOL * (1.0 + scale)
    for j in range(n):
        grad = _LV_REG * u[j]
        for i in range(p):
            grad -= Cw[i, j] * t[i]
        # (a step may end a rounding inside a bound it reached; infinite bounds never hit)
        lo_size = abs(lo[j]) if np.isfinite(lo[j]) else 0.0
        hi_size = abs(hi[j]) if np.isfinite(hi[j]) else 0.0
        at_lo = u[j] <= lo[j] + _SNAP_TOL * (1.0 + lo_size)
        at_hi = u[j] >= hi[j] - _SNAP_TOL * (1.0 + hi_size)
        if at_lo or at_hi:
            if (at_lo and grad < -tol) or (at_hi and grad > tol):
                return False
        elif abs(grad) > tol:
            return False
    return True


@kernel
def _slope(
    Cw: np.ndarray,
    gl: np.ndarray,
    gu: np.ndarray,
    u: np.ndarray,
    d: np.ndarray,
    Cd: np.ndarray,
    a: float,
    x: np.ndarray,
    t: np.ndarray,
) -> float:
    """The objective's slope at ``u + a d`` along ``d`` (``Cd = C d``; ``x``, ``t`` scratch)."""
    n = u.shape[0]
    acc = 0.0
    for j in range(n):
        x[j] = u[j] + a * d[j]
        acc += x[j] * d[j]
    _violations(Cw, gl, gu, x, t)
    out = _LV_REG * acc
    for i in range(Cw.shape[0]):
        out -= t[i] * Cd[i]
    return out


@kernel
def _descend(
    Cw: np.ndarray,
    gl: np.ndarray,
    gu: np.ndarray,
    u: np.ndarray,
    w: np.ndarray,
    x: np.ndarray,
    t: np.ndarray,
) -> None:
    """``u <-`` the minimum of the objective on the segment from ``u`` to ``w``.

    Along the segment the objective is convex and piecewise quadratic: its slope
    increases, and bisection finds where it turns positive (both ends are in the box).
    """
    p, n = Cw.shape
    d = np.empty(n)
    for j in range(n):
        d[j] = w[j] - u[j]
    Cd = np.empty(p)
    for i in range(p):
        acc = 0.0
        for j in range(n):
            acc += Cw[i, j] * d[j]
        Cd[i] = acc
    if _slope(Cw, gl, gu, u, d, Cd, 1.0, x, t) <= 0.0:
        for j in range(n):
            u[j] = w[j]
        return
    lo, hi = 0.0, 1.0
    for _ in range(60):  # (to the resolution of a double on [0, 1])
        mid = 0.5 * (lo + hi)
        if _slope(Cw, gl, gu, u, d, Cd, mid, x, t) <= 0.0:
            lo = mid
        else:
            hi = mid
    for j in range(n):
        u[j] += lo * d[j]


@kernel
def _box_rows(lo: np.ndarray, hi: np.ndarray, A: np.ndarray, b: np.ndarray) -> tuple[int, int]:
    """``A u >= b`` for the finite box bounds, a joint held fixed as an equality first.

    Returns:
        ``(rows, equalities)``.
    """
    n = lo.shape[0]
    m = 0
    for j in range(n):
        if np.isfinite(lo[j]) and lo[j] == hi[j]:
            A[m, :] = 0.0
            A[m, j] = 1.0
            b[m] = lo[j]
            m += 1
    meq = m
    for j in range(n):
        if np.isfinite(lo[j]) and lo[j] != hi[j]:
            A[m, :] = 0.0
            A[m, j] = 1.0
            b[m] = lo[j]
            m += 1
    for j in range(n):
        if np.isfinite(hi[j]) and not (np.isfinite(lo[j]) and lo[j] == hi[j]):
            A[m, :] = 0.0
            A[m, j] = -1.0
            b[m] = -hi[j]
            m += 1
    return m, meq


@kernel
def _pass_model(Cw: np.ndarray, t: np.ndarray, u: np.ndarray, G: np.ndarray, a: np.ndarray) -> None:
    """The QP of one pass: the least squares of the rows violated at ``u``, proximal.

    ``G <- A^T A + (1e-8 + rho) I`` and ``a <- A^T (A u + t_A) + rho u`` over the rows
    ``A`` with ``t != 0``, with ``rho = 1e-6 max(1, max diag A^T A)``: the proximal term
    keeps the model well conditioned and vanishes at the fixed point.
    """
    p, n = Cw.shape
    G[:, :] = 0.0
    a[:] = 0.0
    for i in range(p):
        if t[i] == 0.0:
            continue
        v = 0.0
        for j in range(n):
            v += Cw[i, j] * u[j]
        target = v + t[i]  # the bound the row misses
        for j in range(n):
            a[j] += Cw[i, j] * target
            for k in range(n):
                G[j, k] += Cw[i, j] * Cw[i, k]
    top = 1.0
    for j in range(n):
        top = max(top, G[j, j])
    rho = _LV_PROX * top
    for j in range(n):
        G[j, j] += _LV_REG + rho
        a[j] += rho * u[j]


@kernel
def hinge_start(
    Cw: np.ndarray, gl: np.ndarray, gu: np.ndarray, lo: np.ndarray, hi: np.ndarray, u: np.ndarray
) -> bool:
    """``u <-`` the least-violating start point over the box ``lo <= u <= hi``.

    Args:
        Cw: Weighted general rows ``(p, n)``.
        gl: Their lower bounds ``(p,)`` (``-inf`` allowed).
        gu: Their upper bounds ``(p,)`` (``+inf`` allowed).
        lo: Box lower bounds in ``u``, ``(n,)``.
        hi: Box upper bounds in ``u``, ``(n,)``.
        u: Receives the point ``(n,)``.

    Returns:
        True when the passes settled (``u`` meets the optimality conditions), False
        when they did not (or a pass's QP failed); ``u`` is then not the optimum.
    """
    p, n = Cw.shape
    A = np.empty((2 * n, n))
    b = np.empty(2 * n)
    mb, meq = _box_rows(lo, hi, A, b)
    Wm, Wv, Wr, act = qp_workspace(n, mb)
    G = np.empty((n, n))
    a = np.empty(n)
    nxt = np.empty(n + 1)
    t = np.empty(p)
    x = np.empty(n)
    ts = np.empty(p)
    for j in range(n):
        u[j] = min(max(0.0, lo[j]), hi[j])
    for _ in range(_LV_ITERATIONS):
        _violations(Cw, gl, gu, u, t)
        if _stationary(Cw, t, u, lo, hi):
            return True
        _pass_model(Cw, t, u, G, a)
        if gi_solve(G, a, A, b, n, mb, meq, nxt, Wm, Wv, Wr, act) != QP_SOLVED:
            return False
        for j in range(n):
            nxt[j] = min(max(nxt[j], lo[j]), hi[j])
        _descend(Cw, gl, gu, u, nxt[:n], x, ts)
    return False
