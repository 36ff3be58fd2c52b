"""Entry kernel of the SNS core: one prioritized velocity solve as named steps.

:func:`sns_run` validates the data, moves to weighted coordinates, finds the start
point, runs each priority level's saturation loop and writes the joint velocity,
the residuals, the rows at a bound and the largest violation. It is the
multi-task SNS with optimal task scaling of

    F. Flacco, A. De Luca, O. Khatib, "Control of redundant robots under hard joint
    constraints: saturation in the null space", IEEE T-RO 31(3):637-654, 2015
    (Algorithms 1 and 3),

with general constraint rows saturated exactly like joint bounds
(:mod:`stackik.sns.saturation`). ``docs/sns.md`` gives the equations.

Conventions (all in the *weighted* coordinates ``u = W^{1/2} dq``, where the
weighted minimum-norm problem becomes the plain minimum-norm one):

* ``info[0]`` is a return code from :mod:`stackik.sns.codes` (``OK``, a validation
  failure, ``NEED_START`` when a feasible start point needs a QP, ``NEED_LEVEL``
  when a level needs the exact QP fallback); ``info[1:3]`` locate the problem.
* ``Zc[:, :r]`` is an orthonormal basis of the null space of the levels solved so
  far; ``Zn`` receives the basis after the current level.
* Row ``q`` of the constraints is box row ``q`` (``q < n``) or general row ``q - n``,
  with weighted bounds ``low[q]``, ``high[q]``.

Performance note: numba updates the reference count of every array a compiled
function binds (argument or view) on each call, unless the call is inlined. The
steps are therefore cut where the calls are rare (per solve, per level) or the
callee is a small leaf that LLVM inlines; the per-iteration work calls only the
factorization and pseudo-inverse kernels.

Every kernel is registered with :func:`stackik._jit.kernel`; :func:`python_sns_run`
gives the same call tree as plain Python (for debugging and tests).
"""

from __future__ import annotations

import math
import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from stackik._jit import kernel

from . import activeset, checks, levelqp, linalg, saturation, startpoint
from .checks import validate_inputs, validate_shapes
from .codes import (
    FALLBACK_MIN_ERROR,
    FALLBACK_NO_FEASIBLE_SCALE,
    FLAG_HAVE_START,
    FLAG_HOLD,
    FLAG_PYTHON_FALLBACKS,
    FLAG_SKIP_CHECKS,
    LEVEL_GREEDY,
    LEVEL_QP,
    LEVEL_QP_FAILED,
    MODE_SCALE,
    NEED_LEVEL,
    NEED_START,
    OK,
)
from .levelqp import level_qp
from .linalg import factor, null_basis, pinv_svd, pinv_tall, pinv_wide, svd_rank
from .saturation import level_1d, saturate_row, scale_interval
from .startpoint import start_point

_INF = math.inf


@kernel
def weighted_problem(
    J: np.ndarray,
    Cg: np.ndarray,
    gl: np.ndarray,
    gu: np.ndarray,
    bl: np.ndarray,
    bu: np.ndarray,
    wis: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows and bounds in weighted coordinates ``u = W^{1/2} dq``.

    ``J' = J W^{-1/2}``, ``C' = C W^{-1/2}`` and the box scaled by ``W^{1/2}``
    (``wis`` is ``W^{-1/2} = 1/sqrt(joint_weights)``). In ``u`` the weighted
    pseudo-inverse ``W^-1 J^T (J W^-1 J^T)^-1`` becomes the plain one.

    Returns:
        ``(Jw, Cw, low, high)``, fresh arrays; ``low``/``high`` hold the box rows'
        bounds then the general rows' (``(n + p,)``).
    """
    mt, n = J.shape
    p = Cg.shape[0]
    Jw = np.empty((mt, n))
    for i in range(mt):
        for j in range(n):
            Jw[i, j] = J[i, j] * wis[j]
    Cw = np.empty((p, n))
    for i in range(p):
        for j in range(n):
            Cw[i, j] = Cg[i, j] * wis[j]
    low = np.empty(n + p)
    high = np.empty(n + p)
    for j in range(n):
        low[j] = bl[j] / wis[j]
        high[j] = bu[j] / wis[j]
    for i in range(p):
        low[n + i] = gl[i]
        high[n + i] = gu[i]
    return Jw, Cw, low, high


@kernel
def box_start(
    u: np.ndarray, Cw: np.ndarray, low: np.ndarray, high: np.ndarray, ftol: float, info: np.ndarray
) -> bool:
    """Start point ``u = clip(0, box)``, the minimum-norm point of the box.

    If a general row rejects it, ``info`` gets ``NEED_START`` and that row: the
    caller finds the start point (:func:`stackik.sns.startpoint.start_point`, or with
    the ``quadprog`` reference in Python, :func:`stackik.sns.qp.qp_start`).

    Returns:
        Whether ``u`` is a feasible start point.
    """
    n = u.shape[0]
    for j in range(n):
        u[j] = min(max(0.0, low[j]), high[j])
    for i in range(Cw.shape[0]):
        v = 0.0
        for j in range(n):
            v += Cw[i, j] * u[j]
        lo = low[n + i]
        hi = high[n + i]
        if v < lo - ftol * (1.0 + abs(lo)) or v > hi + ftol * (1.0 + abs(hi)):
            info[0] = NEED_START
            info[1] = i
            return False
    return True


@kernel
def begin_level(
    Zc: np.ndarray, r: int, u: np.ndarray, Z2: np.ndarray, ub: np.ndarray, sat: np.ndarray
) -> None:
    """Start a level: ``Z2 <- Zc[:, :r]``, saturation point ``ub <- u``, no row saturated."""
    n = u.shape[0]
    for i in range(n):
        for c in range(r):
            Z2[i, c] = Zc[i, c]
        ub[i] = u[i]
    for q in range(sat.shape[0]):
        sat[q] = False


@kernel
def task_values(Jw: np.ndarray, o: int, m: int, ub: np.ndarray, t2: np.ndarray) -> None:
    """``t2 <- Jw[o:o+m] ub``: the level's task velocity at the saturation point."""
    n = ub.shape[0]
    for i in range(m):
        acc = 0.0
        for j in range(n):
            acc += Jw[o + i, j] * ub[j]
        t2[i] = acc


@kernel
def split_point(
    Z2: np.ndarray,
    r2: int,
    y1: np.ndarray,
    y2: np.ndarray,
    ub: np.ndarray,
    va: np.ndarray,
    vb: np.ndarray,
) -> None:
    """``vb <- Z2 y1`` (the scaled part ``b``) and ``va <- ub - Z2 y2`` (the rest ``a``)."""
    for i in range(ub.shape[0]):
        acc1 = 0.0
        acc2 = 0.0
        for c in range(r2):
            acc1 += Z2[i, c] * y1[c]
            acc2 += Z2[i, c] * y2[c]
        vb[i] = acc1
        va[i] = ub[i] - acc2


@kernel
def scale_outcome(up_lim: float, lo_lim: float, best_s: float) -> tuple[bool, bool, float]:
    """The largest feasible scale ``s_max`` of an iteration (Flacco et al., Alg. 3).

    Returns:
        ``(done, better, s_max)``: ``s = 1`` is feasible (the level is done), or
        a feasible ``s_max`` beats the best scale ``s*`` so far.
    """
    smax = min(1.0, up_lim)
    feasible = max(0.0, lo_lim) <= smax
    return feasible and smax >= 1.0, feasible and smax > best_s, smax


@kernel
def point_at(va: np.ndarray, vb: np.ndarray, s: float, out: np.ndarray) -> None:
    """``out <- a + s b``: the level's solution at scale ``s``."""
    for i in range(out.shape[0]):
        out[i] = va[i] + s * vb[i]


@kernel
def critical_row(
    up_lim: float, up_row: int, up_bnd: float, lo_lim: float, lo_row: int, lo_bnd: float
) -> tuple[int, float]:
    """The row to saturate and the bound it is pinned at.

    The row that caps ``s`` below 1, else the one that forces ``s`` above 1;
    ``(-1, 0)`` when neither (the level's loop stops).
    """
    if up_lim < 1.0:
        return up_row, up_bnd
    if lo_lim > 1.0:
        return lo_row, lo_bnd
    return -1, 0.0


@kernel
def hand_back(
    info: np.ndarray, k: int, r: int, rn: int, iterations: int, mode: int, hit_max: int
) -> None:
    """Report that level ``k`` needs the exact QP fallback (``NEED_LEVEL`` in ``info``)."""
    info[0] = NEED_LEVEL
    info[1] = k
    info[3] = r
    info[4] = rn
    info[5] = iterations
    info[6] = FALLBACK_MIN_ERROR if mode != MODE_SCALE else FALLBACK_NO_FEASIBLE_SCALE
    info[7] = hit_max


@kernel
def copy_basis(src: np.ndarray, rn: int, dst: np.ndarray) -> None:
    """``dst[:, :rn] <- src[:, :rn]``: the next level's null-space basis."""
    for i in range(src.shape[0]):
        for c in range(rn):
            dst[i, c] = src[i, c]


@kernel
def level_dim(offs: np.ndarray, n: int) -> int:
    """Size of the factor scratch: the largest of ``n`` and the rows of any level."""
    mmax = 1
    for k in range(offs.shape[0] - 1):
        mmax = max(mmax, offs[k + 1] - offs[k])
    return max(mmax, n)


@kernel
def solve_levels(
    Jw: np.ndarray,
    x: np.ndarray,
    offs: np.ndarray,
    modes: np.ndarray,
    Cw: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    bl: np.ndarray,
    bu: np.ndarray,
    wis: np.ndarray,
    prm: np.ndarray,
    iprm: np.ndarray,
    r: int,
    u: np.ndarray,
    Zc: np.ndarray,
    Zn: np.ndarray,
    scales: np.ndarray,
    levels: np.ndarray,
    info: np.ndarray,
) -> tuple[bool, int, int, int, int]:
    """The saturation loop of each level from ``iprm[0]`` on (Flacco et al., Alg. 1 and 3).

    A level works in the null space ``Z2`` of the levels before it. Each
    iteration factors ``M = J'_k Z2`` and writes the solution as
    ``u(s) = a + s b`` with ``b = Z2 M^# x_k`` and ``a = ub - Z2 M^# J'_k ub``
    (the paper's ``dq = dq_N + (J P)^# (s xdot - J dq_N)`` in the reduced basis),
    then takes the largest feasible ``s``. Below 1, the most critical row is
    pinned at its bound and the loop repeats in the smaller null space. It stops
    when ``s = 1`` is feasible, when pinning would lower the rank of ``M`` (the
    paper's ``rank(J_k P) < m_k``; known before pinning when ``M`` has full column
    rank, as a tall level such as a posture has), when the row cannot move, or after
    ``iprm[1]`` iterations; the best feasible ``(s*, u)`` is then used, else the
    closed-form solve when one direction is left, else the level holds
    (``exact_fallback=False``), else the exact QP solves it in place
    (:func:`stackik.sns.levelqp.level_qp`; ``levels[k]`` records it). With
    ``FLAG_PYTHON_FALLBACKS`` (the ``quadprog`` reference) the level is handed back
    instead: ``info`` then holds ``NEED_LEVEL``, the level,
    ``r``, the size ``rn`` of its null space (already in ``Zn``), the iterations so
    far, the reason and the max-iterations flag.

    The level loop and its iterations share one kernel on purpose: numba updates
    the reference count of every array a kernel binds on each call, and a
    per-level kernel binding this workspace cost about 0.5 us per solve.

    Returns:
        ``(finished, r, iterations, hit_max, number of levels the QP solved)``.
    """
    n = u.shape[0]
    dim = level_dim(offs, n)
    # The factor of M (linalg.factor): A, Hv, B, Us, Vs; A and Hv of a level's first
    # iteration are kept apart (A1, Hv1, with hb1) for its exact QP fallback.
    fac = np.empty((7, dim, dim))
    vec = np.empty((8, dim))  # hb, sg (linalg.factor); t2 = J'_k ub; y1, y2 = M^# (x_k, t2); w1, w2
    pts = np.empty((5, n))  # saturation point, a, b, best solution, last direction
    Z2 = np.empty((n, n))
    ZQ = np.empty((n, n))
    sat = np.zeros(low.shape[0], dtype=np.bool_)
    An, Hvn, B, Us, Vs, A1, Hv1 = fac[0], fac[1], fac[2], fac[3], fac[4], fac[5], fac[6]
    hbn, sg, t2, y1, y2, w1, w2 = vec[0], vec[1], vec[2], vec[3], vec[4], vec[5], vec[6]
    hb1 = vec[7]
    ub, va, vb, best_u, z = pts[0], pts[1], pts[2], pts[3], pts[4]
    lam = prm[0]
    eps = prm[1]
    totit = 0
    hit_max = 0
    nqp = 0
    for k in range(iprm[0], offs.shape[0] - 1):
        o = offs[k]
        m = offs[k + 1] - o
        levels[k] = LEVEL_GREEDY
        if m == 0:
            scales[k] = 1.0
            continue
        begin_level(Zc, r, u, Z2, ub, sat)
        xk = x[o : o + m]
        r2 = r  # the null space shrinks by one column per saturated row
        best_s = -1.0  # the best feasible scale s* so far (none yet)
        done = False
        rho0 = rn = it = 0
        wide1 = exact1 = False
        while True:
            it += 1
            A, Hv, hb = (A1, Hv1, hb1) if it == 1 else (An, Hvn, hbn)
            wide, kk, exact, nulltol = factor(Jw, o, m, Z2, n, r2, A, Hv, hb, B, eps)
            rank = kk if exact else svd_rank(A, kk, wide, B, Us, Vs, sg, eps, nulltol)
            if it == 1:
                wide1 = wide
                exact1 = exact
                rho0 = rank
                rn = null_basis(Z2, n, r2, wide, exact, kk, Hv, hb, Vs, sg, nulltol, Zn, ZQ)
            elif rank < rho0:
                break  # saturation removed task-space directions (rank(J P) dropped)
            task_values(Jw, o, m, ub, t2)
            rows = r2 if wide else m
            if exact and wide:
                pinv_wide(xk, y1, kk, rows, A, Hv, hb, w1)
                pinv_wide(t2, y2, kk, rows, A, Hv, hb, w1)
            elif exact:
                pinv_tall(xk, y1, kk, rows, A, Hv, hb, w1)
                pinv_tall(t2, y2, kk, rows, A, Hv, hb, w1)
            else:
                pinv_svd(xk, y1, wide, kk, rows, Hv, hb, Us, Vs, sg, eps, lam, nulltol, w1, w2)
                pinv_svd(t2, y2, wide, kk, rows, Hv, hb, Us, Vs, sg, eps, lam, nulltol, w1, w2)
            split_point(Z2, r2, y1, y2, ub, va, vb)
            up_lim, up_row, up_bnd, lo_lim, lo_row, lo_bnd = scale_interval(
                va, vb, Cw, low, high, sat, prm[2]
            )
            done, better, smax = scale_outcome(up_lim, lo_lim, best_s)
            if done:
                point_at(va, vb, 1.0, u)
                break
            if better:
                best_s = smax
                point_at(va, vb, smax, best_u)
            if it >= iprm[1]:
                hit_max = 1
                break
            if rank >= r2:
                break  # M has full column rank: pinning a row would lower it (as above)
            qs, bnd = critical_row(up_lim, up_row, up_bnd, lo_lim, lo_row, lo_bnd)
            if qs < 0 or not saturate_row(qs, bnd, Cw, Z2, r2, ub, w1):
                break  # no critical row, or it cannot move in the remaining null space
            r2 -= 1
            sat[qs] = True
        totit += it
        if done:
            scales[k] = 1.0
        elif best_s >= 0.0 and modes[k] == MODE_SCALE:
            scales[k] = best_s  # the best feasible scale s* (Alg. 3)
            for i in range(n):
                u[i] = best_u[i]
        elif r == 1:
            for i in range(n):
                z[i] = Zc[i, 0]
            scales[k] = level_1d(Jw, o, m, x, z, u, Cw, low, high, modes[k], eps, lam)
        elif modes[k] == MODE_SCALE and (iprm[2] & FLAG_HOLD) != 0:
            scales[k] = 0.0  # no feasible scale and no exact fallback wanted: hold
        elif (iprm[2] & FLAG_PYTHON_FALLBACKS) != 0:
            hand_back(info, k, r, rn, totit, modes[k], hit_max)
            return False, r, totit, hit_max, nqp
        else:
            ok, s_qp = level_qp(
                Jw, x, o, m, modes[k], Cw, low, high, bl, bu, wis, eps, Zc, r, u,
                A1, Hv1, hb1, exact1 and not wide1,
            )  # fmt: skip
            scales[k] = s_qp
            levels[k] = LEVEL_QP if ok else LEVEL_QP_FAILED
            nqp += 1
        copy_basis(Zn, rn, Zc)
        r = rn
    return True, r, totit, hit_max, nqp


@kernel
def task_residuals(
    J: np.ndarray,
    x: np.ndarray,
    offs: np.ndarray,
    scales: np.ndarray,
    dq: np.ndarray,
    errs: np.ndarray,
) -> None:
    """``errs[k] = ||J_k dq - s_k x_k||`` (unweighted, in the units of the task rows)."""
    n = dq.shape[0]
    for k in range(offs.shape[0] - 1):
        acc2 = 0.0
        for i in range(offs[k], offs[k + 1]):
            acc = -scales[k] * x[i]
            for j in range(n):
                acc += J[i, j] * dq[j]
            acc2 += acc * acc
        errs[k] = math.sqrt(acc2)


@kernel(inline=True)
def at_bound(v: float, lo: float, hi: float, acttol: float) -> bool:
    """Whether ``v`` is within the activity tolerance of a finite bound ``lo`` or ``hi``.

    (Infinite bounds are never active; the guard also avoids ``inf - inf``.)
    """
    at_lo = lo > -_INF and v <= lo + acttol * (1.0 + abs(lo))
    return at_lo or (hi < _INF and v >= hi - acttol * (1.0 + abs(hi)))


@kernel
def box_activity(
    dq: np.ndarray, bl: np.ndarray, bu: np.ndarray, acttol: float, act: np.ndarray
) -> tuple[float, int]:
    """Joints at a box bound (written to ``act``) and the largest box violation.

    Returns:
        ``(violation, count)``; the violation is 0 when every bound holds and
        ``inf`` when an entry of ``dq`` is not finite (an overflow in the solve).
    """
    viol = 0.0
    nact = 0
    for j in range(dq.shape[0]):
        v = dq[j]
        if not math.isfinite(v):
            return _INF, 0
        viol = max(viol, bl[j] - v, v - bu[j])
        if at_bound(v, bl[j], bu[j], acttol):
            act[nact] = j
            nact += 1
    return viol, nact


@kernel
def general_activity(
    dq: np.ndarray,
    Cg: np.ndarray,
    gl: np.ndarray,
    gu: np.ndarray,
    acttol: float,
    act: np.ndarray,
    nact: int,
    viol: float,
) -> tuple[float, int]:
    """General rows at a bound (appended to ``act`` after ``nact``), largest violation.

    Returns:
        ``(violation, count)`` including the ``viol`` and ``nact`` passed in.
    """
    n = dq.shape[0]
    for i in range(Cg.shape[0]):
        v = 0.0
        for j in range(n):
            v += Cg[i, j] * dq[j]
        viol = max(viol, gl[i] - v, v - gu[i])
        if at_bound(v, gl[i], gu[i], acttol):
            act[nact] = i
            nact += 1
    return viol, nact


@kernel
def sns_run(
    J: np.ndarray,
    x: np.ndarray,
    offs: np.ndarray,
    modes: np.ndarray,
    Cg: np.ndarray,
    gl: np.ndarray,
    gu: np.ndarray,
    bl: np.ndarray,
    bu: np.ndarray,
    wis: np.ndarray,
    prm: np.ndarray,
    iprm: np.ndarray,
    u: np.ndarray,
    Zc: np.ndarray,
    Zn: np.ndarray,
    dq: np.ndarray,
    scales: np.ndarray,
    errs: np.ndarray,
    act: np.ndarray,
    levels: np.ndarray,
    info: np.ndarray,
) -> float:
    """Run the generalised SNS from level ``iprm[0]`` on.

    Args:
        J: Stacked task Jacobians, ``(M, n)``; level ``k`` is rows ``offs[k]:offs[k+1]``.
        x: Stacked task velocities, ``(M,)``.
        offs: Level offsets into ``J``/``x``, ``(L+1,)`` int64.
        modes: Per-level mode, 0 = SCALE, 1 = MIN_ERROR, ``(L,)`` int64.
        Cg: General constraint rows, ``(p, n)``.
        gl: Lower bounds of ``Cg dq``, ``(p,)`` (``-inf`` allowed).
        gu: Upper bounds of ``Cg dq``, ``(p,)`` (``+inf`` allowed).
        bl: Lower joint-velocity box, ``(n,)`` [rad/s or m/s].
        bu: Upper joint-velocity box, ``(n,)`` [rad/s or m/s].
        wis: ``1/sqrt(joint_weights)``, ``(n,)``.
        prm: ``[damping, tolerance, feasibility tol, activity tol]``.
        iprm: ``[start level, max iterations per level, flags, null-space size r]``.
        u: Weighted solution so far (in: start point when continuing; out).
        Zc: Null-space basis of the levels before the start level (in/out).
        Zn: Scratch / next null-space basis when a level is handed back.
        dq: Output joint velocity [rad/s or m/s].
        scales: Output task scales (levels before the start level are kept).
        errs: Output residuals ``||J_k dq - s_k x_k||``.
        act: Output indices of the box rows then of the general rows at a bound
            (their counts are ``info[1]`` and ``info[2] - info[1]``).
        levels: Output, how each level from the start level on was solved
            (``LEVEL_GREEDY``, ``LEVEL_QP``, ``LEVEL_QP_FAILED``), ``(L,)`` int64.
        info: Output ``[code, index or box count, index or active count, r, rn,
            iterations, reason or (code OK) number of levels the QP solved, hit_max]``.

    Returns:
        The largest violation of the box and general rows by ``dq`` (in their
        units; 0 when every row holds), or 0 when ``info[0]`` is not ``OK``.
    """
    n = u.shape[0]
    for i in range(info.shape[0]):
        info[i] = 0
    if not validate_shapes(n, J, x, offs, modes, Cg, gl, gu, bl, bu, info):
        return 0.0  # (always: the kernels index by these shapes without bounds checks)
    start = iprm[0]
    flags = iprm[2]
    if start == 0 and (flags & FLAG_SKIP_CHECKS) == 0:
        if not validate_inputs(J, x, Cg, gl, gu, bl, bu, info):
            return 0.0
    Jw, Cw, low, high = weighted_problem(J, Cg, gl, gu, bl, bu, wis)
    r = iprm[3]
    if start == 0:
        # Level 1 starts from the minimum-norm point of the box (a QP when the
        # general rows reject it) with the whole space as its null space.
        if (flags & FLAG_HAVE_START) == 0 and not box_start(u, Cw, low, high, prm[2], info):
            # The minimum-norm point of the constraint set, in the kernel unless the
            # quadprog reference is asked for; an empty set goes back to Python.
            if (flags & FLAG_PYTHON_FALLBACKS) != 0 or not start_point(
                Cw, wis, bl, bu, low, high, u
            ):
                return 0.0
            info[0] = OK
            info[1] = 0
        for i in range(n):
            for j in range(n):
                Zc[i, j] = 1.0 if i == j else 0.0
        r = n
    finished, r, totit, hit_max, nqp = solve_levels(
        Jw, x, offs, modes, Cw, low, high, bl, bu, wis, prm, iprm, r, u, Zc, Zn, scales,
        levels, info,
    )  # fmt: skip
    if not finished:
        return 0.0
    # Back to joint space; residuals, active rows and the violation check.
    for j in range(n):
        dq[j] = wis[j] * u[j]
    task_residuals(J, x, offs, scales, dq, errs)
    viol, nbox = box_activity(dq, bl, bu, prm[3], act)
    # (the general bounds as used: widened around a projected start point)
    viol, nact = general_activity(dq, Cg, low[n:], high[n:], prm[3], act, nbox, viol)
    info[1] = nbox
    info[2] = nact
    info[0] = OK
    info[3] = r
    info[5] = totit
    info[6] = nqp
    info[7] = hit_max
    return viol


_PYTHON_TREE: dict[str, Callable[..., Any]] = {}


def python_sns_run() -> Callable[..., Any]:
    """:func:`sns_run` as plain Python all the way down (for debugging and tests).

    ``Kernel.py_func`` alone makes only the entry point Python: its calls go through
    the module globals, which hold the compiled dispatchers once
    :func:`stackik._jit.load` has run. This builds (once) copies of every kernel of
    the package whose globals name the other copies, so nothing is compiled and
    numba is never imported.

    Returns:
        The plain-Python ``sns_run``.
    """
    entry = _PYTHON_TREE.get("sns_run")
    if entry is not None:
        return entry
    modules = (linalg, saturation, checks, activeset, levelqp, startpoint, sys.modules[__name__])
    spaces = {mod.__name__: dict(vars(mod)) for mod in modules}
    copies: dict[tuple[str, str], types.FunctionType] = {}
    for space in spaces.values():
        for name, value in list(space.items()):
            func = getattr(value, "py_func", value)
            if not (isinstance(func, types.FunctionType) and func.__module__ in spaces):
                continue
            key = (func.__module__, func.__name__)
            if key not in copies:
                copies[key] = types.FunctionType(
                    func.__code__, spaces[func.__module__], func.__name__, func.__defaults__
                )
            space[name] = copies[key]
    entry = copies[(__name__, "sns_run")]
    _PYTHON_TREE["sns_run"] = entry
    return entry
