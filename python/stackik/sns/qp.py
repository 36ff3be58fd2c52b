"""The ``quadprog`` paths of the SNS core, in Python: an empty constraint set, and the reference.

The kernel finds the start point and solves the QP fallback levels itself
(:mod:`stackik.sns.startpoint`, :mod:`stackik.sns.levelqp`). It comes back here

* when the constraint set is empty (``NEED_START`` after the kernel's projection and
  QP found no point): :func:`qp_start` confirms it with ``quadprog`` and finds the
  least-violating point (:func:`least_violating_start`, by the compiled passes of
  :mod:`stackik.sns.leastviolating`), whose worst row the INFEASIBLE message names;
* on the reference path (``SNSSolver._reference_qp()``, for tests and debugging): the
  kernel then hands back every start point that needs more than ``clip(0, box)``
  (:func:`qp_start`) and every level that needs the exact QP (``NEED_LEVEL``):
  :func:`qp_level` solves that level as a lexicographic QP (two stages) with quadprog.

All in the weighted coordinates ``u = W^{1/2} dq`` (``wis = W^{-1/2}``). NumPy only
at import; ``quadprog`` is imported on the first QP.
"""

from __future__ import annotations

import numpy as np

from .codes import MODE_SCALE, VIOLATION_TOL
from .leastviolating import _LV_ITERATIONS, _LV_KKT_TOL, _LV_PROX, _LV_REG, hinge_start
from .startpoint import _SNAP_TOL

_QP_REG = 1e-7  # proximal weight that makes the lexicographic QP stages strictly convex
_COND_MAX = 1e8  # largest condition number of a task block solved directly for y
_SCALE_EPS = 1e-12  # row coefficients of s below this are constant rows

_Rows = tuple[np.ndarray, np.ndarray, np.ndarray]


def weighted_rows(
    Cg: np.ndarray,
    gl: np.ndarray,
    gu: np.ndarray,
    bl: np.ndarray,
    bu: np.ndarray,
    wis: np.ndarray,
) -> _Rows:
    """All constraint rows in weighted coordinates ``u = W^{1/2} dq``: box first.

    Returns:
        ``(rows, lower, upper)`` with ``rows`` of shape ``(n + p, n)``.
    """
    rows = np.vstack([np.diag(wis), Cg * wis])
    return rows, np.concatenate([bl, gl]), np.concatenate([bu, gu])


def ineq_rows(
    R: np.ndarray,
    v0: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    slack: float,
    widen: bool = True,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Inequalities ``A y >= b`` for ``lo <= R y + v0 <= hi``, equalities first.

    Rows that cannot move (``R_i = 0``) are dropped; rows with ``lo == hi`` are
    returned first as equalities (their count is the third return value).
    With ``widen`` each bound is widened to contain the current point ``y = 0``
    (which the previous level left feasible up to rounding) plus
    ``slack * (1 + |bound|)``, so ``y = 0`` is strictly feasible for quadprog.
    """
    with np.errstate(invalid="ignore"):
        moving = np.abs(R).max(axis=1, initial=0.0) > 1e-14
        R, v0, lo, hi = R[moving], v0[moving], lo[moving], hi[moving]
        is_eq = np.isfinite(lo) & (lo == hi)
        has_lo = np.isfinite(lo) & ~is_eq
        has_hi = np.isfinite(hi) & ~is_eq
        A = np.vstack([R[is_eq], R[has_lo], -R[has_hi]])
        lo_h, v_lo = lo[has_lo], v0[has_lo]
        hi_h, v_hi = hi[has_hi], v0[has_hi]
        top = 0.0 if widen else np.inf
        b = np.concatenate(
            [
                lo[is_eq] - v0[is_eq],
                np.minimum(lo_h - v_lo, top) - slack * (1.0 + np.abs(lo_h)),
                np.minimum(v_hi - hi_h, top) - slack * (1.0 + np.abs(hi_h)),
            ]
        )
    return A, b, int(is_eq.sum())


def start_by_projection(
    rows: np.ndarray, lo: np.ndarray, hi: np.ndarray, max_rounds: int = 4
) -> np.ndarray | None:
    """Minimum-norm point on the violated rows' bounds, if it satisfies every row.

    Starting from ``u = 0``, the rows ``u`` violates are made equalities at the bound
    they cross and ``u`` becomes the minimum-norm point satisfying them; rows violated
    by that point join the set, a few rounds at most. This is the exact QP answer
    whenever the final active set is right (the usual case: a few damper rows asking
    for recovery), found with one small least-squares solve per round.

    Returns:
        The point, or None when the rounds do not reach a feasible point.
    """
    n = rows.shape[1]
    u = np.zeros(n)
    active = np.zeros(rows.shape[0], dtype=bool)
    target = np.zeros(rows.shape[0])
    for _ in range(max_rounds):
        v = rows @ u
        below = v < lo - _SNAP_TOL
        above = v > hi + _SNAP_TOL
        if not (below.any() or above.any()):
            return u
        new = (below | above) & ~active
        if not new.any():
            return None  # an active row is still missed: inconsistent guess, use the QP
        active |= new
        target[below] = lo[below]
        target[above] = hi[above]
        A = rows[active]
        u = np.linalg.lstsq(A, target[active], rcond=None)[0]
    v = rows @ u
    ok = np.all(v >= lo - _SNAP_TOL) and np.all(v <= hi + _SNAP_TOL)
    return u if ok else None


def quadprog_solve(
    G: np.ndarray, a: np.ndarray, A: np.ndarray, b: np.ndarray, meq: int
) -> np.ndarray | None:
    """``argmin 1/2 x^T G x - a^T x`` s.t. ``A x >= b`` (first ``meq`` rows equal), or None."""
    import quadprog

    try:
        if A.shape[0] == 0:
            return quadprog.solve_qp(G, a)[0]
        return quadprog.solve_qp(G, a, np.ascontiguousarray(A.T), b, meq)[0]
    except ValueError:
        return None


def max_violation(rows: np.ndarray, u: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    """Largest violation of ``lo <= rows u <= hi``."""
    v = rows @ u
    return float(np.max(np.maximum(lo - v, v - hi), initial=0.0))


# ------------------------------------------------------------------ start point
def qp_start(
    Cg: np.ndarray,
    gl: np.ndarray,
    gu: np.ndarray,
    bl: np.ndarray,
    bu: np.ndarray,
    wis: np.ndarray,
    u: np.ndarray,
    compiled: bool = False,
) -> tuple[np.ndarray, np.ndarray, str]:
    """Find the start point when ``dq = 0`` (clipped to the box) breaks a general row.

    Solves ``min ||u||^2`` over the constraint set (first by projection onto the
    violated rows, else with a QP). If the set is empty, see
    :func:`least_violating_start`.

    Args:
        Cg: General rows ``(p, n)``.
        gl: Their lower bounds ``(p,)``.
        gu: Their upper bounds ``(p,)``.
        bl: Box lower bounds ``(n,)`` [rad/s or m/s].
        bu: Box upper bounds ``(n,)`` [rad/s or m/s].
        wis: ``W^{-1/2}``, ``(n,)``.
        u: Receives the weighted start point ``(n,)``.
        compiled: The kernel's path, after its own projection and QP found no point:
            the projection is not repeated (the ``quadprog`` QP confirms the verdict),
            and the least-violating point comes from the compiled passes
            (:func:`stackik.sns.leastviolating.hinge_start`). False (the reference):
            the projection, the QP and :func:`hinge_least_squares`.

    Returns:
        ``(lower, upper, message)``: the (possibly widened) general bounds
        and an empty message, or the INFEASIBLE message.
    """
    n = u.shape[0]
    rows, lo, hi = weighted_rows(Cg, gl, gu, bl, bu, wis)
    A, b, eq = ineq_rows(rows, np.zeros(rows.shape[0]), lo, hi, 0.0, widen=False)
    start = None if compiled else start_by_projection(rows, lo, hi)
    if start is not None:
        # Snap: the saturation test needs the start point exactly inside, so the
        # bounds it misses by rounding (at most _SNAP_TOL) are widened to it.
        start = np.clip(start, bl / wis, bu / wis)
        u[:] = start
        v = rows[n:] @ start
        return np.minimum(gl, v), np.maximum(gu, v), ""
    start = quadprog_solve(np.eye(n), np.zeros(n), A, b, eq)
    if start is not None and max_violation(rows, start, lo, hi) <= VIOLATION_TOL:
        u[:] = start
        return gl, gu, ""
    return least_violating_start(rows[n:], gl, gu, bl, bu, wis, u, compiled)


def least_violating_start(
    Cw: np.ndarray,
    gl: np.ndarray,
    gu: np.ndarray,
    bl: np.ndarray,
    bu: np.ndarray,
    wis: np.ndarray,
    u: np.ndarray,
    compiled: bool = False,
) -> tuple[np.ndarray, np.ndarray, str]:
    """Least-violating start point of an empty constraint set (box hard).

    ``min 1e-8 ||u||^2 / 2 + sum_i t_i^2 / 2`` over the box, with ``t_i`` the
    violation of general row ``i``; the general bounds are then widened to that point
    so the levels below still run, and the worst row is named in the message. Solved
    over ``u`` alone (compiled, or :func:`hinge_least_squares`; ``n`` variables), else as one QP
    in ``(u, t)`` (:func:`slack_least_squares`, ``n + p`` variables: seconds for a
    thousand rows).

    Args:
        Cw: Weighted general rows ``(p, n)``.
        gl: Their lower bounds ``(p,)``.
        gu: Their upper bounds ``(p,)``.
        bl: Box lower bounds ``(n,)`` [rad/s or m/s].
        bu: Box upper bounds ``(n,)`` [rad/s or m/s].
        wis: ``W^{-1/2}``, ``(n,)``.
        u: Receives the weighted start point ``(n,)``.
        compiled: Solve over ``u`` with the compiled passes (else the reference,
            :func:`hinge_least_squares`).

    Returns:
        ``(lower, upper, message)``: the widened bounds and the INFEASIBLE message.
    """
    n = u.shape[0]
    lo_box, hi_box = bl / wis, bu / wis
    hinge = compiled_hinge if compiled else hinge_least_squares
    z = hinge(Cw, gl, gu, lo_box, hi_box)
    if z is None:
        z = slack_least_squares(Cw, gl, gu, lo_box, hi_box)
    start = np.clip(np.zeros(n) if z is None else z, lo_box, hi_box)
    u[:] = start
    v = Cw @ start
    worst = int(np.argmax(np.maximum(gl - v, v - gu)))
    amount = float(max(gl[worst] - v[worst], v[worst] - gu[worst]))
    message = (
        f"the constraint set is empty (no dq satisfies every row); returned the "
        f"least-violating solution: row {worst} is violated by {amount:.3g} "
        "(joint velocity box kept hard)"
    )
    return np.minimum(gl, v), np.maximum(gu, v), message


def compiled_hinge(
    Cw: np.ndarray, gl: np.ndarray, gu: np.ndarray, lo_box: np.ndarray, hi_box: np.ndarray
) -> np.ndarray | None:
    """:func:`hinge_least_squares` in one compiled call (:mod:`stackik.sns.leastviolating`)."""
    u = np.empty(Cw.shape[1])
    c = np.ascontiguousarray
    args = (c(a, dtype=float) for a in (Cw, gl, gu, lo_box, hi_box))
    settled = hinge_start(*args, u)
    return u if settled else None


def _box_rows(lo_box: np.ndarray, hi_box: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """``A u >= b`` for the finite box bounds, a joint held fixed as an equality first."""
    n = lo_box.shape[0]
    return ineq_rows(np.eye(n), np.zeros(n), lo_box, hi_box, 0.0, widen=False)


def violations(Cw: np.ndarray, gl: np.ndarray, gu: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Signed excess of every general row at ``u``: ``> 0`` below ``gl``, ``< 0`` above ``gu``.

    Zero for a row within its bounds.
    """
    v = Cw @ u
    return np.maximum(gl - v, 0.0) - np.maximum(v - gu, 0.0)


def least_violation_objective(
    Cw: np.ndarray, gl: np.ndarray, gu: np.ndarray, u: np.ndarray
) -> float:
    """``1e-8 ||u||^2 / 2 + ||violations||^2 / 2``, the least-violating start's objective."""
    t = violations(Cw, gl, gu, u)
    return 0.5 * _LV_REG * float(u @ u) + 0.5 * float(t @ t)


def hinge_least_squares(
    Cw: np.ndarray, gl: np.ndarray, gu: np.ndarray, lo_box: np.ndarray, hi_box: np.ndarray
) -> np.ndarray | None:
    """The least-violating start over ``u`` alone, or None when it does not settle.

    The objective is convex and continuously differentiable: each violated row adds
    ``(gl_i - c_i u)^2 / 2`` (or its upper twin). Each pass solves the box-constrained
    least squares of the rows violated at the current point (an ``n``-variable QP);
    the point is accepted when it satisfies the objective's optimality conditions on
    the box (projected gradient within :data:`_LV_KKT_TOL`, relative).
    """
    n = Cw.shape[1]
    A_box, b_box, meq = _box_rows(lo_box, hi_box)
    u = np.clip(np.zeros(n), lo_box, hi_box)
    eye = np.eye(n)
    for _ in range(_LV_ITERATIONS):
        t = violations(Cw, gl, gu, u)
        if _stationary(Cw, t, u, lo_box, hi_box):
            return u
        rows = t != 0.0
        A = Cw[rows]
        target = (A @ u) + t[rows]  # the bound each violated row misses
        H = A.T @ A
        # A proximal term rho ||y - u||^2 / 2 keeps the model well conditioned (a joint
        # no violated row moves has only the 1e-8 weight otherwise); it vanishes at the
        # fixed point, which is therefore the objective's optimum.
        rho = _LV_PROX * max(1.0, float(np.max(np.diag(H), initial=0.0)))
        nxt = quadprog_solve(H + (_LV_REG + rho) * eye, A.T @ target + rho * u, A_box, b_box, meq)
        if nxt is None:
            return None
        u = _descend(Cw, gl, gu, u, np.clip(nxt, lo_box, hi_box))
    return None


def _descend(
    Cw: np.ndarray, gl: np.ndarray, gu: np.ndarray, u: np.ndarray, w: np.ndarray
) -> np.ndarray:
    """The minimum of the objective on the segment from ``u`` to ``w``.

    ``w`` minimises the objective's quadratic model on the rows violated at ``u``; when
    rows change sides on the way, the full step can overshoot (and the passes cycle).
    Along the segment the objective is convex and piecewise quadratic: its slope is
    increasing, and bisection finds where it turns positive. Both ends are in the
    box, and so is every point between them.
    """
    d = w - u
    Cd = Cw @ d

    def slope(a: float) -> float:
        x = u + a * d
        return _LV_REG * float(x @ d) - float(violations(Cw, gl, gu, x) @ Cd)

    if slope(1.0) <= 0.0:
        return w
    lo, hi = 0.0, 1.0
    for _ in range(60):  # (to the resolution of a double on [0, 1])
        mid = 0.5 * (lo + hi)
        if slope(mid) <= 0.0:
            lo = mid
        else:
            hi = mid
    return u + lo * d


def _stationary(
    Cw: np.ndarray, t: np.ndarray, u: np.ndarray, lo_box: np.ndarray, hi_box: np.ndarray
) -> bool:
    """Whether ``u`` satisfies the optimality conditions of the least-violating start."""
    grad = _LV_REG * u - Cw.T @ t
    tol = _LV_KKT_TOL * (1.0 + float(np.max(np.abs(Cw).T @ np.abs(t), initial=0.0)))
    # (a step may end a rounding inside a bound it reached; infinite bounds are never hit)
    at_lo = u <= lo_box + _SNAP_TOL * (1.0 + np.abs(np.nan_to_num(lo_box, neginf=0.0)))
    at_hi = u >= hi_box - _SNAP_TOL * (1.0 + np.abs(np.nan_to_num(hi_box, posinf=0.0)))
    free = ~(at_lo | at_hi)
    return bool(
        np.all(np.abs(grad[free]) <= tol)
        and np.all(grad[at_lo] >= -tol)
        and np.all(grad[at_hi] <= tol)
    )


def slack_least_squares(
    Cw: np.ndarray, gl: np.ndarray, gu: np.ndarray, lo_box: np.ndarray, hi_box: np.ndarray
) -> np.ndarray | None:
    """The least-violating start as one QP in ``(u, t)``: slacks ``t >= 0`` per row.

    ``n + p`` variables; the reference :func:`hinge_least_squares` is checked against.
    """
    n = Cw.shape[1]
    p = Cw.shape[0]
    G = np.diag(np.concatenate([np.full(n, _LV_REG), np.ones(p)]))
    A_box, b_box, meq = _box_rows(lo_box, hi_box)  # (first: its equalities lead)
    glo = np.isfinite(gl)
    ghi = np.isfinite(gu)
    blocks = [
        np.hstack([A_box, np.zeros((A_box.shape[0], p))]),
        np.hstack([Cw, np.eye(p)])[glo],
        np.hstack([-Cw, np.eye(p)])[ghi],
        np.hstack([np.zeros((p, n)), np.eye(p)]),
    ]
    rhs = [b_box, gl[glo], -gu[ghi], np.zeros(p)]
    z = quadprog_solve(G, np.zeros(n + p), np.vstack(blocks), np.concatenate(rhs), meq)
    return None if z is None else z[:n]


# ------------------------------------------------------------------- one level
def _stage1_scale(
    E: np.ndarray,
    xt: np.ndarray,
    ct: np.ndarray,
    A_eq: np.ndarray,
    b_eq: np.ndarray,
    A: np.ndarray,
    b: np.ndarray,
    fixes: bool = False,
) -> tuple[np.ndarray, float] | None:
    """Stage 1 of a SCALE level: largest ``s`` (else least residual along the ray).

    Variables ``(y, s)``: ``min (s-1)^2/2 + reg ||y||^2/2`` subject to
    ``E y - s xt = -ct``, the rows and ``0 <= s <= 1``. When no ``s`` keeps the
    task direction, the residual ``||E y - s xt + ct||^2`` is minimised instead.

    Returns:
        ``(y1, s)`` or None when quadprog fails.
    """
    r = E.shape[1]
    rho = E.shape[0]
    eq = A_eq.shape[0]
    fixes = fixes and A_eq.shape[0] == 0
    determined = _determined_scale(E, xt, ct, fixes, A, b)
    if determined is not None:
        return determined
    zr = np.zeros((A.shape[0], 1))
    A1 = np.vstack(
        [
            np.hstack([E, -xt[:, None]]),
            np.hstack([A_eq, np.zeros((eq, 1))]),
            np.hstack([A, zr]),
            np.eye(1, r + 1, r),
            -np.eye(1, r + 1, r),
        ]
    )
    b1 = np.concatenate([-ct, b_eq, b, [0.0, -1.0]])
    G1 = np.diag(np.concatenate([np.full(r, _QP_REG), [1.0]]))
    a1 = np.eye(1, r + 1, r)[0]
    z = None if fixes else quadprog_solve(G1, a1, A1, b1, rho + eq)
    # No scale keeps the task direction: least residual along the ray.
    D = np.hstack([E, -xt[:, None]])
    for reg in (_QP_REG, 1e3 * _QP_REG):
        if z is not None:
            break
        G1 = D.T @ D + reg * np.eye(r + 1)
        a1 = -D.T @ ct + reg * np.eye(1, r + 1, r)[0]
        z = quadprog_solve(G1, a1, A1[rho:], b1[rho:], eq)
    if z is None:
        return None
    return z[:r], min(max(float(z[r]), 0.0), 1.0)


def _determined_scale(
    E: np.ndarray,
    xt: np.ndarray,
    ct: np.ndarray,
    fixes: bool,
    A: np.ndarray,
    b: np.ndarray,
) -> tuple[np.ndarray, float] | None:
    """Stage 1 in closed form when the task fixes ``y``: ``y(s) = E^-1 (s xt - ct)``.

    The rows ``A y(s) >= b`` then bound ``s`` to an interval; the largest ``s`` in it and
    in ``[0, 1]`` is stage 1's answer (the QP's, up to its ``reg ||y||^2`` term). None
    when ``E`` does not fix ``y`` or no ``s`` is feasible (the residual QP decides).
    """
    if not fixes:
        return None
    y0 = np.linalg.solve(E, -ct)
    y1 = np.linalg.solve(E, xt)
    g = A @ y1
    h = b - A @ y0  # rows: g s >= h
    pos, neg = g > _SCALE_EPS, g < -_SCALE_EPS
    flat = ~(pos | neg)
    if np.any(h[flat] > 0.0):
        return None
    s_lo = max(0.0, float(np.max(h[pos] / g[pos], initial=-np.inf)))
    s_hi = min(1.0, float(np.min(h[neg] / g[neg], initial=np.inf)))
    if s_lo > s_hi:
        return None
    return y0 + s_hi * y1, s_hi


def _stage1_min_error(
    E: np.ndarray,
    xt: np.ndarray,
    ct: np.ndarray,
    A_eq: np.ndarray,
    b_eq: np.ndarray,
    A: np.ndarray,
    b: np.ndarray,
) -> np.ndarray | None:
    """Stage 1 of a MIN_ERROR level: ``min ||E y - (xt - ct)||^2`` over the rows, or None."""
    r = E.shape[1]
    y1 = None
    for reg in (_QP_REG, 1e3 * _QP_REG):
        if y1 is not None:
            break
        y1 = quadprog_solve(
            E.T @ E + reg * np.eye(r),
            E.T @ (xt - ct),
            np.vstack([A_eq, A]),
            np.concatenate([b_eq, b]),
            A_eq.shape[0],
        )
    return y1


def _reduced_task(
    Jv: np.ndarray,
    xv: np.ndarray,
    offs: np.ndarray,
    k: int,
    wis: np.ndarray,
    Z: np.ndarray,
    u_prev: np.ndarray,
    tolerance: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Level ``k`` in the null-space coordinates ``y``: ``(E, xt, ct, fixes)``.

    ``E = U^T J'_k Z`` keeps the directions of ``J'_k Z`` with singular value
    ``>= tolerance`` (damped ones are left free); ``xt = U^T xdot_k`` and
    ``ct = U^T J'_k u_prev``. ``fixes``: ``E`` is square and well conditioned, so the
    task equality alone fixes ``y`` for each scale.
    """
    o, m = int(offs[k]), int(offs[k + 1] - offs[k])
    Jk = Jv[o : o + m] * wis
    xk = xv[o : o + m]
    M0 = Jk @ Z
    U, S, _ = np.linalg.svd(M0, full_matrices=False)
    keep = S >= max(tolerance, 1e-12 * max(1.0, S[0] if S.size else 0.0))
    Uk = U[:, keep]
    kept = S[keep]
    fixes = bool(kept.size == Z.shape[1] and kept.size and kept[0] < _COND_MAX * kept[-1])
    return Uk.T @ M0, Uk.T @ xk, Uk.T @ (Jk @ u_prev), fixes


def qp_level(
    Jv: np.ndarray,
    xv: np.ndarray,
    offs: np.ndarray,
    modes: np.ndarray,
    rows: _Rows,
    wis: np.ndarray,
    tolerance: float,
    u: np.ndarray,
    Zc: np.ndarray,
    k: int,
    r: int,
    scales: np.ndarray,
) -> bool:
    """Exact per-level QP fallback (lexicographic, two quadprog stages).

    Works in the coordinates ``u = u_prev + Z y`` of the null space of the
    higher levels, so their achieved task values are kept exactly. Only the
    directions of ``J_k Z`` with singular value ``>= tolerance`` are treated
    as achievable (``E = U^T J_k Z``); damped directions are left free.

    SCALE: stage 1 maximises ``s`` (``min (s-1)^2/2 + reg ||y||^2/2``) subject
    to ``E y = U^T (s xdot_k - J_k u_prev)`` and the constraints; if no
    ``s`` in [0, 1] is feasible it minimises the residual instead. MIN_ERROR:
    stage 1 minimises ``||E y - U^T (xdot_k - J_k u_prev)||^2``. Stage 2 fixes
    what stage 1 achieved and minimises ``||y||^2`` (the SNS minimum norm).

    Args:
        Jv: Stacked task Jacobians ``(M, n)`` (unweighted).
        xv: Stacked task velocities ``(M,)``.
        offs: Level offsets ``(L+1,)``.
        modes: Level modes ``(L,)``.
        rows: ``(rows, lower, upper)`` of :func:`weighted_rows`.
        wis: ``W^{-1/2}``, ``(n,)``.
        tolerance: Singular-value threshold ``epsilon``.
        u: Weighted solution of the higher levels (in), of this level (out).
        Zc: Null-space basis of the higher levels (first ``r`` columns used).
        k: The level.
        r: Size of its null space.
        scales: Receives ``s_k``.

    Returns:
        False if quadprog failed: the level then holds ``u_prev`` with
        ``s = 0``, which is feasible and keeps the higher levels.
    """
    u_prev = u.copy()
    if r == 0:
        scales[k] = 1.0
        return True
    Z = Zc[:, :r]
    R, lo, hi = rows
    E, xt, ct, fixes = _reduced_task(Jv, xv, offs, k, wis, Z, u_prev, tolerance)
    A, b, eq = ineq_rows(R @ Z, R @ u_prev, lo, hi, 1e-11)
    if eq:  # Equality rows (lower == upper) of the reduced problem lead.
        A_eq, b_eq, A, b = A[:eq], b[:eq], A[eq:], b[eq:]
    else:
        A_eq = np.zeros((0, r))
        b_eq = np.zeros(0)
    scale = 1.0
    if modes[k] == MODE_SCALE:
        stage1 = _stage1_scale(E, xt, ct, A_eq, b_eq, A, b, fixes)
        y1 = None if stage1 is None else stage1[0]
        if stage1 is not None:
            scale = stage1[1]
    else:
        y1 = _stage1_min_error(E, xt, ct, A_eq, b_eq, A, b)
    if y1 is None:
        scales[k] = 0.0
        return False
    # Stage 2: keep what stage 1 achieved, minimum norm (nothing left to choose when
    # the task fixes y).
    y2 = (
        None
        if fixes and eq == 0
        else quadprog_solve(
            np.eye(r),
            np.zeros(r),
            np.vstack([E, A_eq, A]),
            np.concatenate([E @ y1, b_eq, b]),
            E.shape[0] + eq,
        )
    )
    y = y1 if y2 is None else y2
    u_new = u_prev + Z @ y
    if max_violation(R, u_new, lo, hi) > max_violation(R, u_prev + Z @ y1, lo, hi):
        u_new = u_prev + Z @ y1
    u[:] = u_new
    scales[k] = scale
    return True
