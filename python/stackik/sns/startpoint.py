"""The start point of the SNS core when ``dq = 0`` (clipped to the box) breaks a general row.

Level 1 starts from the minimum-norm point of the constraint set. When the general
rows reject ``clip(0, box)`` (:func:`stackik.sns.run.box_start`), :func:`start_point`
finds it in the kernel, as :func:`stackik.sns.qp.qp_start` does with NumPy and
``quadprog``:

1. by projection: starting from ``u = 0``, the rows ``u`` violates become equalities
   at the bound they cross and ``u`` becomes the minimum-norm point meeting them
   (a least-squares solve), for a few rounds; the exact QP answer whenever the final
   active set is right (the usual case: a few damper rows asking for recovery). The
   point is clipped to the box and the general bounds are widened to contain it (it
   misses them by rounding at most);
2. else with the QP ``min ||u||^2`` over every row (:mod:`stackik.sns.activeset`).

When neither gives a point (the constraint set is empty) the kernel hands the start
back to Python (``NEED_START``), which finds the least-violating point and names the
worst row in the INFEASIBLE message.

All in the weighted coordinates ``u = W^{1/2} dq`` with the rows of
:func:`stackik.sns.qp.weighted_rows`: box rows ``wis_j u_j`` in ``[box_lower,
box_upper]``, then the weighted general rows.
"""

from __future__ import annotations

import math

import numpy as np

from stackik._jit import kernel

from .activeset import QP_SOLVED, gi_solve, qp_workspace
from .codes import VIOLATION_TOL
from .linalg import apply_q, apply_qt, house_qr, jacobi_svd

_SNAP_TOL = 1e-12  # largest rounding miss of a projected start point that is snapped away
_MOVE_EPS = 1e-14  # rows whose entries are all below this cannot move
_ROUNDS = 4  # projection rounds before the QP takes over
_EPS = 2.220446049250313e-16
_INF = math.inf


@kernel
def row_values(Cw: np.ndarray, wis: np.ndarray, u: np.ndarray, v: np.ndarray) -> None:
    """``v <- [wis * u; Cw u]``: the value of every row (box rows first)."""
    n = u.shape[0]
    for j in range(n):
        v[j] = wis[j] * u[j]
    for i in range(Cw.shape[0]):
        acc = 0.0
        for j in range(n):
            acc += Cw[i, j] * u[j]
        v[n + i] = acc


@kernel
def min_norm_solve(A: np.ndarray, k: int, n: int, t: np.ndarray, u: np.ndarray) -> None:
    """``u <- A^+ t`` for ``A[:k, :n]``: the minimum-norm least-squares solution.

    A Householder QR of ``A^T`` (``k <= n``) or ``A`` (``k > n``) and a Jacobi SVD of
    the small triangle; singular values at or below ``eps max(k, n) sigma_max`` are
    dropped (NumPy's ``lstsq`` default cutoff).
    """
    wide = k <= n
    rows = n if wide else k
    s = k if wide else n
    F = np.zeros((rows, s))
    Hv = np.empty((rows, s))
    hb = np.empty(s)
    w = np.zeros(max(rows, s))
    for i in range(k):
        for j in range(n):
            if wide:
                F[j, i] = A[i, j]
            else:
                F[i, j] = A[i, j]
    house_qr(F, rows, s, Hv, hb, w)
    # The triangle T: A = T^T Q1^T (wide, T = R^T there) or A = Q1 T (tall).
    B = np.empty((s, s))
    for i in range(s):
        for j in range(s):
            B[i, j] = (F[j, i] if i >= j else 0.0) if wide else (F[i, j] if j >= i else 0.0)
    U = np.empty((s, s))
    V = np.empty((s, s))
    sg = np.empty(s)
    jacobi_svd(B, s, U, sg, V)
    smax = 0.0
    for i in range(s):
        smax = max(smax, sg[i])
    cut = _EPS * max(k, n) * smax
    # rhs in the triangle's row space: t itself (wide) or the first s of Q^T t (tall).
    for i in range(rows):
        w[i] = t[i] if i < k else 0.0
    if not wide:
        apply_qt(w, rows, s, Hv, hb)
    # y = V S^+ U^T w[:s]
    c = np.zeros(s)
    for a in range(s):
        if sg[a] > cut:
            acc = 0.0
            for i in range(s):
                acc += U[i, a] * w[i]
            c[a] = acc / sg[a]
    for i in range(rows):
        w[i] = 0.0
    for i in range(s):
        acc = 0.0
        for a in range(s):
            acc += V[i, a] * c[a]
        w[i] = acc
    if wide:  # u = Q1 y
        apply_q(w, rows, s, Hv, hb)
    for j in range(n):
        u[j] = w[j]


@kernel
def projected_start(
    Cw: np.ndarray,
    wis: np.ndarray,
    bl: np.ndarray,
    bu: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    u: np.ndarray,
) -> bool:
    """Minimum-norm point on the violated rows' bounds, if it satisfies every row.

    Starting from ``u = 0``, the rows ``u`` violates (by more than ``1e-12``) are made
    equalities at the bound they cross and ``u`` becomes the minimum-norm point
    satisfying them; rows violated by that point join the set, four rounds at most.

    Returns:
        Whether ``u`` (written either way) satisfies every row to ``1e-12``.
    """
    n = u.shape[0]
    nr = low.shape[0]
    active = np.zeros(nr, dtype=np.bool_)
    target = np.zeros(nr)
    A = np.zeros((nr, n))
    t = np.empty(nr)
    v = np.empty(nr)
    for j in range(n):
        u[j] = 0.0
    for _ in range(_ROUNDS + 1):
        new = 0
        bad = 0
        row_values(Cw, wis, u, v)
        for q in range(nr):
            lo = bl[q] if q < n else low[q]
            hi = bu[q] if q < n else high[q]
            if v[q] < lo - _SNAP_TOL:
                target[q] = lo
            elif v[q] > hi + _SNAP_TOL:
                target[q] = hi
            else:
                continue
            bad += 1
            if not active[q]:
                active[q] = True
                new += 1
        if bad == 0:
            return True
        if new == 0 or _ == _ROUNDS:
            return False  # an active row is still missed, or out of rounds: use the QP
        k = 0
        for q in range(nr):
            if not active[q]:
                continue
            for j in range(n):
                A[k, j] = 0.0
            if q < n:
                A[k, q] = wis[q]
            else:
                for j in range(n):
                    A[k, j] = Cw[q - n, j]
            t[k] = target[q]
            k += 1
        min_norm_solve(A, k, n, t, u)
    return False


@kernel
def qp_rows(
    Cw: np.ndarray,
    wis: np.ndarray,
    bl: np.ndarray,
    bu: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    Aq: np.ndarray,
    bq: np.ndarray,
) -> tuple[int, int]:
    """``Aq u >= bq`` for every row that can move (no widening).

    Equalities first, then the lower bounds, then the upper bounds (negated).

    Returns:
        ``(meq, m)``.
    """
    n = wis.shape[0]
    nr = low.shape[0]
    row = 0
    meq = 0
    for side in range(3):  # 0: equalities, 1: lower bounds, 2: upper bounds
        for q in range(nr):
            if q < n:
                if not abs(wis[q]) > _MOVE_EPS:
                    continue
            else:
                big = 0.0
                for j in range(n):
                    big = max(big, abs(Cw[q - n, j]))
                if not big > _MOVE_EPS:
                    continue
            lo = bl[q] if q < n else low[q]
            hi = bu[q] if q < n else high[q]
            eq = lo == hi and abs(lo) < _INF
            if side == 0 and eq:
                sign, rhs = 1.0, lo
            elif side == 1 and not eq and lo > -_INF:
                sign, rhs = 1.0, lo
            elif side == 2 and not eq and hi < _INF:
                sign, rhs = -1.0, -hi
            else:
                continue
            for j in range(n):
                Aq[row, j] = 0.0
            if q < n:
                Aq[row, q] = sign * wis[q]
            else:
                for j in range(n):
                    Aq[row, j] = sign * Cw[q - n, j]
            bq[row] = rhs
            row += 1
        if side == 0:
            meq = row
    return meq, row


@kernel
def start_point(
    Cw: np.ndarray,
    wis: np.ndarray,
    bl: np.ndarray,
    bu: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    u: np.ndarray,
) -> bool:
    """The minimum-norm point of the constraint set into ``u`` (weighted).

    By projection (the point is then clipped to the box and the general bounds
    ``low[n:]``, ``high[n:]`` are widened to contain it), else with the QP
    ``min ||u||^2`` (accepted when it violates no row by more than 1e-9).

    Args:
        Cw: Weighted general rows ``(p, n)``.
        wis: ``W^{-1/2}``, ``(n,)``.
        bl: Joint velocity box, lower ``(n,)`` (unweighted).
        bu: Joint velocity box, upper ``(n,)``.
        low: Weighted lower bounds ``(n + p,)``: the box then the general rows (the
            general ones may be widened).
        high: Weighted upper bounds ``(n + p,)`` (likewise).
        u: Receives the start point.

    Returns:
        False when neither finds a point (the constraint set is empty, or the QP is
        in numerical trouble): Python then looks for the least-violating point.
    """
    n = u.shape[0]
    nr = low.shape[0]
    v = np.empty(nr)
    if projected_start(Cw, wis, bl, bu, low, high, u):
        for j in range(n):
            u[j] = min(max(u[j], low[j]), high[j])
        row_values(Cw, wis, u, v)
        for q in range(n, nr):
            low[q] = min(low[q], v[q])
            high[q] = max(high[q], v[q])
        return True
    Aq = np.empty((2 * nr, n))
    bq = np.empty(2 * nr)
    meq, m = qp_rows(Cw, wis, bl, bu, low, high, Aq, bq)
    G = np.zeros((n, n))
    a = np.zeros(n)
    for j in range(n):
        G[j, j] = 1.0
    x = np.empty(n)
    Wm, Wv, Wr, act = qp_workspace(n, m)
    if gi_solve(G, a, Aq, bq, n, m, meq, x, Wm, Wv, Wr, act) != QP_SOLVED:
        return False
    viol = 0.0
    row_values(Cw, wis, x, v)
    for q in range(nr):
        lo = bl[q] if q < n else low[q]
        hi = bu[q] if q < n else high[q]
        viol = max(viol, lo - v[q], v[q] - hi)
    if viol > VIOLATION_TOL:
        return False
    for j in range(n):
        u[j] = x[j]
    return True
