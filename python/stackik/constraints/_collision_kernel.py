"""Compiled collision step: broadphase, exact distances and damper rows in one call.

The collision constraint (:mod:`stackik.constraints.collision`) hands one kernel call
everything a step needs; no pair costs a Python call:

1. :func:`advance_bounds`: each watched pair's lower distance bound drops by how far its
   geometries can have moved since the last step (joint motion times the pair's levers,
   plus the obstacle's own displacement); the pairs whose bound reaches their activation
   distance are listed (temporal coherence);
2. :func:`sphere_filter`: listed pairs whose bounding spheres are apart keep that gap as
   their bound; the rest get an exact query, unless a query limit (a time budget, or
   the nearest pair only) leaves some out (:func:`apply_budget`: never a pair whose
   bound is below its minimum distance);
3. :func:`exact_queries`: exact signed distance, witness points and normal of every
   remaining pair (:func:`stackik.geometry.kernels.table_distance_from`, GJK started
   from the pair's normal of the step before when it was queried then);
4. :func:`record_hits`: distances within the activation distance become hits, with
   their slack and predicted closing;
5. :func:`select_and_rows`: the most urgent hits, their hold distance (learned
   linearization error, recovery deadband and scale) and their damper rows (witness
   and contact-patch support points, :func:`contact_rows`), corrected for the
   obstacles' own velocity; a row no joint moves bounds nothing
   (:func:`release_fixed_rows`).

:func:`collision_step` runs all five; :func:`select_queries_ws`, :func:`run_queries_ws` and
:func:`hits_and_rows_ws` run the same in three calls, so that a caller can time the exact
queries alone. Pairs with an exact triangle mesh (kind MESH) are left to coal between
steps 3 and 4 by the caller.

Array layouts (columns of the per-pair state):

- ``pf`` (float, pairs x :data:`PF_COLUMNS`): :data:`PF_MIN` minimum distance, :data:`PF_PENDING`
  pending larger minimum (inf: none), :data:`PF_LOW` lower distance bound,
  :data:`PF_EXACT` last exact distance, :data:`PF_MOTION` this step's motion bound,
  :data:`PF_LEARNED` learned linearization error, :data:`PF_PROMISE` the distance the
  last row promised, :data:`PF_ACCEL` closing the acceleration limits allow in a step,
  :data:`PF_EXTRA` activation added for a moving obstacle (its closing over the
  prediction horizon and its braking distance), and from :data:`PF_NORMAL` on the unit
  normal of the last exact query (world frame, from the first geometry to the second;
  GJK starts from it when the pair was queried in the step before);
- ``pi`` (int64, pairs x 3): :data:`PI_EXACT_STEP` step of the last exact query,
  :data:`PI_PROMISE_STEP` step of the last promise, :data:`PI_CANDIDATE` pair-cache
  candidate flag;
- ``cfg`` (float): the settings, indexed by the ``CFG_*`` constants.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from .._jit import kernel
from ..geometry.kernels import table_distance_from
from ..model.pipeline import place_geometries

#: Directions (evenly spaced in the contact plane) whose extreme support points are kept
#: when more points than this lie in a contact patch.
PATCH_DIRECTIONS = 8

(
    PF_MIN,
    PF_PENDING,
    PF_LOW,
    PF_EXACT,
    PF_MOTION,
    PF_LEARNED,
    PF_PROMISE,
    PF_ACCEL,
    PF_EXTRA,
    PF_NORMAL,  # (three columns: PF_NORMAL to PF_NORMAL + 2)
) = range(10)
#: Columns of the per-pair float state (the last normal takes three).
PF_COLUMNS = PF_NORMAL + 3
PI_EXACT_STEP, PI_PROMISE_STEP, PI_CANDIDATE = range(3)
(
    CFG_ACTIVATION,
    CFG_GAIN,
    CFG_DT,
    CFG_DEADBAND,
    CFG_RECOVERY_SCALE,
    CFG_MAX_SEPARATION,
    CFG_PATCH_TOLERANCE,
    CFG_MAX_CONSTRAINTS,
    CFG_ALL_PAIRS,
    CFG_SPHERES,
    CFG_STEP,
    CFG_CACHE_INTERVAL,
    CFG_CACHE_MARGIN,
    CFG_CACHE_CAP,
    CFG_QUERY_BUDGET,
    CFG_MAX_LEARNED,
    CFG_DECEL,
    CFG_LEAD,
    CFG_OBS_SEEN,
    CFG_SIZE,
) = range(20)
#: Columns of a hit (``hit_f``): distance, slack, predicted closing, hold distance.
HF_DIST, HF_SLACK, HF_CLOSING, HF_HOLD = range(4)
#: Entries of the ``counts`` output.
N_ROWS, N_HITS, N_QUERIES, N_SKIPPED, N_EXTRA, N_LISTED = range(6)

#: Shape codes :func:`point_distance` knows exactly (those of :mod:`stackik.geometry`);
#: for any other kind it returns NaN and the caller uses the tangent-plane bound.
SHAPE_PLANE = 0  # "no exact point distance" (kept for callers of earlier versions)
SHAPE_SPHERE, SHAPE_CAPSULE, SHAPE_CYLINDER, SHAPE_BOX = 1, 2, 3, 4
SHAPE_HALFSPACE, SHAPE_TWO_SIDED_PLANE = 8, 9
CONE = 6


# -- 1. motion bounds --------------------------------------------------------------------------
@kernel
def _pose_change(
    rot: np.ndarray, trans: np.ndarray, prev: np.ndarray, reach: float, delta: np.ndarray
) -> float:
    """Change from the pose ``prev`` (rotation by rows, position) to ``(rot, trans)``.

    ``delta`` receives the translation (3) and the rotation vector (3) of the change;
    returns a bound of any point's displacement (``reach``: the largest distance of a
    point from the origin [m]).
    """
    for c in range(3):
        delta[c] = trans[c] - prev[9 + c]
    tr = 0.0  # trace of R_now R_prev^T = 1 + 2 cos(angle)
    for r in range(3):
        for c in range(3):
            tr += rot[r, c] * prev[3 * r + c]
    ang = math.acos(min(1.0, max(-1.0, 0.5 * (tr - 1.0))))
    delta[3] = delta[4] = delta[5] = 0.0
    _rotation_vector(rot, prev, ang, delta)
    d = math.sqrt(delta[0] * delta[0] + delta[1] * delta[1] + delta[2] * delta[2])
    return d + ang * reach if ang > 0.0 else d


@kernel(inline=True)
def _store_pose(rot: np.ndarray, trans: np.ndarray, prev: np.ndarray) -> None:
    for r in range(3):
        prev[9 + r] = trans[r]
        for c in range(3):
            prev[3 * r + c] = rot[r, c]


@kernel(inline=True)
def _closing_allowance(vel: np.ndarray, reach: float, lead: float, decel: float) -> float:
    """How much sooner [m] a pair with a moving obstacle must get rows.

    With ``s`` a bound of any obstacle point's speed (``|v| + |w| reach``): its travel
    over the prediction horizon, ``s lead``, plus the distance in which the robot,
    giving way at ``decel``, reaches that speed, ``s^2 / (2 decel)``.
    """
    w = math.sqrt(vel[3] * vel[3] + vel[4] * vel[4] + vel[5] * vel[5])
    s = math.sqrt(vel[0] * vel[0] + vel[1] * vel[1] + vel[2] * vel[2])
    if w > 0.0:
        s += w * reach  # inf for a rotating plane: every pair with it is listed
    if s == np.inf:
        return np.inf  # (not s * lead: with a zero lead that is NaN, which lists nothing)
    extra = s * lead
    if decel < np.inf:
        extra += s * s / (2.0 * decel)
    return extra


@kernel
def obstacle_motion(
    poses: tuple,
    known: np.ndarray,
    given: tuple,
    prev: np.ndarray,
    reach: np.ndarray,
    seen: bool,
    timing: tuple,
    out: tuple,
) -> None:
    """Each obstacle's velocity, how far it moved since the last step, and its allowance.

    Args:
        poses: ``(rot (n, 3, 3), trans (n, 3))``: the world poses now.
        known: Whether the world gives each obstacle's velocity.
        given: The world's velocities ``(linear (n, 3) [m/s], angular (n, 3) [rad/s])``.
        prev: ``(n, 12)``: the last step's poses (rotation by rows, position); updated.
        reach: Largest distance of a point of each obstacle from its origin [m] (inf
            for planes).
        seen: Whether ``prev`` holds the last step's poses (False: no motion known).
        timing: ``(dt, lead, decel)``: time between steps [s], the prediction horizon
            [s] and the rows' approach deceleration [m/s^2] (inf: none).
        out: ``(vel (n, 6), disp (n,), extra (n,))``: the velocity the rows use (the
            given one, else the one observed over the last step: displacement / dt,
            zero at the first step), a bound of any point's displacement since the last
            step, and the activation distance a pair with the obstacle gains
            (:func:`_closing_allowance`).
    """
    rot, trans = poses
    dt, lead, decel = timing
    vel, disp, extra = out
    linear, angular = given
    delta = np.empty(6)
    for k in range(trans.shape[0]):
        disp[k] = 0.0
        for c in range(6):
            vel[k, c] = 0.0
        if seen:
            disp[k] = _pose_change(rot[k], trans[k], prev[k], reach[k], delta)
            for c in range(6):
                vel[k, c] = delta[c] / dt
        if known[k]:
            for c in range(3):
                vel[k, c] = linear[k, c]
                vel[k, 3 + c] = angular[k, c]
        _store_pose(rot[k], trans[k], prev[k])
        extra[k] = _closing_allowance(vel[k], reach[k], lead, decel)


@kernel
def advance_obstacles(
    poses: tuple,
    known: np.ndarray,
    given: tuple,
    prev: np.ndarray,
    reach: np.ndarray,
    cfg: np.ndarray,
    out: tuple,
) -> None:
    """A step's :func:`obstacle_motion`, with its timing and state from the settings vector.

    The step length, prediction horizon and approach deceleration are
    ``cfg[CFG_DT]``, ``cfg[CFG_LEAD]`` and ``cfg[CFG_DECEL]``; ``cfg[CFG_OBS_SEEN]``
    tells whether ``prev`` holds the last step's poses, and is set here. Nothing is
    done without obstacles. The other arguments are those of :func:`obstacle_motion`.
    """
    if prev.shape[0] == 0:
        return
    obstacle_motion(
        poses, known, given, prev, reach, cfg[CFG_OBS_SEEN] != 0.0,
        (cfg[CFG_DT], cfg[CFG_LEAD], cfg[CFG_DECEL]), out,
    )  # fmt: skip
    cfg[CFG_OBS_SEEN] = 1.0


@kernel
def _rotation_vector(R: np.ndarray, prev: np.ndarray, ang: float, vel: np.ndarray) -> None:
    """``vel[3:6]`` = the rotation vector of ``R prev^T`` (angle ``ang``)."""
    if ang < 1e-12:
        return
    # skew part of M = R prev^T: (M - M^T) / 2 = sin(ang) [axis]x
    m = np.empty((3, 3))
    for r in range(3):
        for c in range(3):
            m[r, c] = R[r, 0] * prev[3 * c] + R[r, 1] * prev[3 * c + 1] + R[r, 2] * prev[3 * c + 2]
    f = 0.5 * ang / math.sin(ang) if ang < math.pi - 1e-6 else 0.0
    vel[3] = f * (m[2, 1] - m[1, 2])
    vel[4] = f * (m[0, 2] - m[2, 0])
    vel[5] = f * (m[1, 0] - m[0, 1])


@kernel
def refresh_cache(pf: np.ndarray, pi: np.ndarray, cfg: np.ndarray) -> bool:
    """Pair cache: a full scan every ``CFG_CACHE_INTERVAL`` steps, candidates in between.

    On a scan step every pair is listed (checked) and the candidates are cleared; the
    pairs keep their distance bounds, so that a query budget still takes the pairs
    with the smallest bounds first. Otherwise the ``CFG_CACHE_CAP`` candidates with the
    smallest last distance are listed whatever their bound (the motion bounds still
    list every other pair that could come near).

    Returns:
        Whether this is a scan step (list every pair).
    """
    interval = int(cfg[CFG_CACHE_INTERVAL])
    if interval <= 0:
        return False
    npairs = pf.shape[0]
    if int(cfg[CFG_STEP]) % interval == 0:
        for k in range(npairs):
            pi[k, PI_CANDIDATE] = 0
        return True
    count = 0
    for k in range(npairs):
        count += pi[k, PI_CANDIDATE]
    if count == 0:
        return False
    idx = np.empty(count, dtype=np.int64)
    n = 0
    for k in range(npairs):
        if pi[k, PI_CANDIDATE]:
            idx[n] = k
            n += 1
    keys = np.empty(count)
    for i in range(count):
        keys[i] = pf[idx[i], PF_EXACT]
    order = np.argsort(keys, kind="mergesort")
    cap = int(cfg[CFG_CACHE_CAP])
    threshold_add = cfg[CFG_ACTIVATION]
    for i in range(count):
        k = idx[order[i]]
        if i < cap:
            pf[k, PF_LOW] = min(pf[k, PF_LOW], pf[k, PF_MIN] + threshold_add + pf[k, PF_EXTRA])
        else:
            pi[k, PI_CANDIDATE] = 0
    return False


@kernel
def advance_bounds(
    dq_abs: np.ndarray,
    lever: np.ndarray,
    pairs: np.ndarray,
    slot: np.ndarray,
    moving: tuple,
    pf: np.ndarray,
    pi: np.ndarray,
    cfg: np.ndarray,
    listed: np.ndarray,
) -> int:
    """Lower every pair's distance bound by its relative motion; list the near ones.

    Pair ``k``'s geometries approach each other by at most ``sum_j lever[k, j] |dq_j|``
    [m] (a point at most ``L`` from a revolute axis moves at most ``L |dtheta|``) plus
    the displacement bound of its obstacle, if it has one (``moving = (disp, extra)``:
    per obstacle, that bound and the activation it adds). Pending larger minimums are
    latched once the bound shows the pair clear of them.

    Returns:
        The number of pair slots written to ``listed`` (bound within activation).
    """
    scan = refresh_cache(pf, pi, cfg)
    disp, extra = moving
    npairs, nv = lever.shape
    act = cfg[CFG_ACTIVATION]
    count = 0
    for k in range(npairs):
        s = 0.0
        for j in range(nv):
            s += lever[k, j] * dq_abs[j]
        o = slot[pairs[k, 1]]
        pf[k, PF_EXTRA] = 0.0
        if o >= 0:
            s += disp[o]
            pf[k, PF_EXTRA] = extra[o]
        pf[k, PF_MOTION] = s
        pf[k, PF_LOW] -= s
        if pf[k, PF_PENDING] < np.inf and pf[k, PF_LOW] >= pf[k, PF_PENDING]:
            pf[k, PF_MIN] = pf[k, PF_PENDING]
            pf[k, PF_PENDING] = np.inf
        if scan or pf[k, PF_LOW] <= pf[k, PF_MIN] + act + pf[k, PF_EXTRA]:
            listed[count] = k
            count += 1
    return count


# -- 2. bounding spheres -----------------------------------------------------------------------
@kernel
def sphere_filter(
    listed: np.ndarray,
    count: int,
    pairs: np.ndarray,
    rot: np.ndarray,
    trans: np.ndarray,
    center: np.ndarray,
    radius: np.ndarray,
    pf: np.ndarray,
    pi: np.ndarray,
    cfg: np.ndarray,
    query: np.ndarray,
) -> int:
    """The listed pairs that need an exact query (written to ``query``; returns how many).

    A pair whose bounding spheres are farther apart than its activation distance keeps
    that gap as its bound (a valid lower bound) and is not queried; a pair queried in
    the previous step and found near skips the test when ``CFG_ALL_PAIRS`` is on (it
    needs the query anyway). A pair kept takes the spheres' gap as its bound when that
    is larger (a lower bound still): :func:`apply_budget` ranks the pairs by it when a
    query limit (``CFG_QUERY_BUDGET``, or ``CFG_ALL_PAIRS`` off) leaves some out.
    """
    step = int(cfg[CFG_STEP])
    all_pairs = cfg[CFG_ALL_PAIRS] > 0.0
    spheres = cfg[CFG_SPHERES] > 0.0
    act = cfg[CFG_ACTIVATION]
    n = 0
    c1 = np.empty(3)
    c2 = np.empty(3)
    for i in range(count):
        k = listed[i]
        if spheres and not (all_pairs and pi[k, PI_EXACT_STEP] == step - 1):
            a, b = pairs[k, 0], pairs[k, 1]
            _world_point(rot[a], trans[a], center[a], c1)
            _world_point(rot[b], trans[b], center[b], c2)
            dx, dy, dz = c1[0] - c2[0], c1[1] - c2[1], c1[2] - c2[2]
            gap = math.sqrt(dx * dx + dy * dy + dz * dz) - radius[a] - radius[b]
            if gap > pf[k, PF_MIN] + act + pf[k, PF_EXTRA]:
                pf[k, PF_LOW] = gap
                continue
            if gap > pf[k, PF_LOW]:  # (a queried pair's bound becomes its distance)
                pf[k, PF_LOW] = gap
        query[n] = k
        n += 1
    return n


@kernel(inline=True)
def _world_point(R: np.ndarray, t: np.ndarray, p: np.ndarray, out: np.ndarray) -> None:
    for r in range(3):
        out[r] = R[r, 0] * p[0] + R[r, 1] * p[1] + R[r, 2] * p[2] + t[r]


@kernel
def apply_budget(query: np.ndarray, n: int, pf: np.ndarray, cfg: np.ndarray) -> int:
    """Order the ``n`` queries for a query limit; return how many are kept (first).

    The limit is ``CFG_QUERY_BUDGET`` queries (0: none), one with ``CFG_ALL_PAIRS`` off
    (the nearest pair only). A pair whose distance bound is below its minimum distance
    (``PF_LOW < PF_MIN``: it may be below it now; ``-inf``: never measured) is always
    kept, whatever the limit: the limit only leaves out pairs whose bound is at or above
    their minimum, so every pair below its minimum is among the step's hits (a skipped
    pair has no row in this step, which can close it past its minimum: the next step
    queries it).
    Those come first (in list order), then the others by urgency, as
    :func:`urgency_order` ranks hits, with the predicted closing ``PF_MOTION +
    PF_ACCEL``: the pairs that can reach their minimum within the step (bound slack <=
    closing) by slack, then the rest by time to their minimum (slack / closing), ties
    by slack. The limit then keeps ``max(must, limit)`` of them; the rest (skipped)
    follow in ``query``. Without a limit, or with no more queries than it, nothing is
    reordered.
    """
    limit = int(cfg[CFG_QUERY_BUDGET]) if cfg[CFG_ALL_PAIRS] > 0.0 else 1
    if limit <= 0 or n <= limit:
        return n
    rest = np.empty(n, dtype=np.int64)
    slack = np.empty(n)
    ratio = np.empty(n)  # (-1: can reach its minimum within the step)
    must = m = 0
    for i in range(n):
        k = query[i]
        s = pf[k, PF_LOW] - pf[k, PF_MIN]
        if not s >= 0.0:  # (below its minimum, never measured; NaN too)
            query[must] = k  # (must <= i: an entry already read)
            must += 1
            continue
        closing = pf[k, PF_MOTION] + pf[k, PF_ACCEL]
        rest[m], slack[m] = k, s
        if s <= closing:
            ratio[m] = -1.0
        else:
            ratio[m] = s / closing if closing > 0.0 else np.inf
        m += 1
    by_slack = np.argsort(slack[:m], kind="mergesort")
    by_ratio = np.argsort(ratio[:m][by_slack], kind="mergesort")  # (stable: ties by slack)
    for j in range(m):
        query[must + j] = rest[by_slack[by_ratio[j]]]
    return max(must, limit)


# -- 3. exact distances ------------------------------------------------------------------------
@kernel
def exact_queries(
    query: np.ndarray,
    n: int,
    pairs: np.ndarray,
    kind: np.ndarray,
    params: np.ndarray,
    vstart: np.ndarray,
    verts: np.ndarray,
    rot: np.ndarray,
    trans: np.ndarray,
    dist: np.ndarray,
    witness: np.ndarray,
    pf: np.ndarray,
    pi: np.ndarray,
    step: int,
) -> int:
    """Exact distance and witness (p1, p2, normal) of each queried pair; NaN for meshes.

    A pair queried in the step before (``pi[k, PI_EXACT_STEP] == step - 1``) starts GJK
    from the normal it had then (``pf[k, PF_NORMAL:]``), which is kept for the next step.

    Returns:
        How many distances are NaN (pairs left to coal).
    """
    missing = 0
    cold = np.zeros(3)
    for i in range(n):
        k = query[i]
        recent = pi[k, PI_EXACT_STEP] == step - 1
        guess = pf[k, PF_NORMAL : PF_NORMAL + 3] if recent else cold
        d = table_distance_from(
            pairs[k, 0], pairs[k, 1], kind, params, vstart, verts, rot, trans, guess, witness[i]
        )
        dist[i] = d
        missing += math.isnan(d)
        normal_ok = math.isfinite(witness[i, 6] + witness[i, 7] + witness[i, 8])
        for c in range(3):  # (kept only when usable: a NaN (mesh) distance keeps none)
            pf[k, PF_NORMAL + c] = witness[i, 6 + c] if normal_ok else 0.0
    return missing


# -- 4. hits -----------------------------------------------------------------------------------
@kernel
def record_hits(
    query: np.ndarray,
    n: int,
    dist: np.ndarray,
    pf: np.ndarray,
    pi: np.ndarray,
    cfg: np.ndarray,
    hit_k: np.ndarray,
    hit_q: np.ndarray,
    hit_f: np.ndarray,
) -> int:
    """Store the exact distances; the pairs within activation become hits.

    A hit carries its slack ``d - d_min`` and the closing predicted for this step: how
    much the pair closed during the last step (exact when it was queried then, else its
    motion bound), plus what the acceleration limits add in one step.

    Returns:
        The number of hits (``hit_k``: pair slots, ``hit_q``: query index).
    """
    step = int(cfg[CFG_STEP])
    act = cfg[CFG_ACTIVATION]
    margin = cfg[CFG_CACHE_MARGIN] if cfg[CFG_CACHE_INTERVAL] > 0 else -np.inf
    nh = 0
    for i in range(n):
        k = query[i]
        d = dist[i]
        if pi[k, PI_EXACT_STEP] == step - 1:
            closing = pf[k, PF_EXACT] - d
        else:
            closing = pf[k, PF_MOTION]
        pf[k, PF_LOW] = d
        pf[k, PF_EXACT] = d
        pi[k, PI_EXACT_STEP] = step
        if pf[k, PF_PENDING] < np.inf and pf[k, PF_PENDING] <= d:
            pf[k, PF_MIN] = pf[k, PF_PENDING]
            pf[k, PF_PENDING] = np.inf
        threshold = pf[k, PF_MIN] + act + pf[k, PF_EXTRA]
        if d < threshold:
            hit_k[nh] = k
            hit_q[nh] = i
            hit_f[nh, HF_DIST] = d
            hit_f[nh, HF_SLACK] = d - pf[k, PF_MIN]
            hit_f[nh, HF_CLOSING] = max(closing, 0.0) + pf[k, PF_ACCEL]
            nh += 1
        elif d < threshold + margin:
            pi[k, PI_CANDIDATE] = 1
    return nh


# -- 5. selection, hold distances, rows --------------------------------------------------------
@kernel(inline=True)
def _before(a: tuple, b: tuple) -> bool:
    """Lexicographic ``a < b`` on (group, key, distance)."""
    if a[0] != b[0]:
        return a[0] < b[0]
    if a[1] != b[1]:
        return a[1] < b[1]
    return a[2] < b[2]


@kernel
def urgency_order(nh: int, hit_f: np.ndarray, max_constraints: int, order: np.ndarray) -> tuple:
    """Order the hits by urgency; return ``(chosen, beyond the budget)``.

    A hit that can cross its limit within the step (slack <= predicted closing) is never
    dropped, even past ``max_constraints``; these come first, by slack then distance.
    The rest of the budget goes to the hits with the shortest time to violation
    ``slack / closing`` (then distance).
    """
    keys = np.empty((nh, 3))
    must = 0
    for h in range(nh):
        slack, closing = hit_f[h, HF_SLACK], hit_f[h, HF_CLOSING]
        if slack <= closing:
            must += 1
            keys[h, 0], keys[h, 1] = 0.0, slack
        else:
            keys[h, 0] = 1.0
            keys[h, 1] = slack / closing if closing > 0.0 else np.inf
        keys[h, 2] = hit_f[h, HF_DIST]
        order[h] = h
    for i in range(1, nh):  # insertion sort: hits are few
        j = i
        while j > 0:
            a, b = keys[order[j]], keys[order[j - 1]]
            if not _before((a[0], a[1], a[2]), (b[0], b[1], b[2])):
                break
            order[j], order[j - 1] = order[j - 1], order[j]
            j -= 1
    chosen = max(must, min(nh, max_constraints))
    return chosen, max(0, must - max_constraints)


@kernel(inline=True)
def recovery_distance(d: float, hold: float, cfg: np.ndarray) -> float:
    """Distance fed to the damper aiming at ``hold`` (deadband, recovery scale, cap).

    Within half the deadband below ``hold`` the row only forbids approaching; deeper it
    recovers to ``hold - deadband / 2`` (continuous in ``d``); the recovery speed is
    scaled by ``CFG_RECOVERY_SCALE`` and, for a pair not penetrating, capped at
    ``CFG_MAX_SEPARATION`` [m/s].
    """
    half = 0.5 * cfg[CFG_DEADBAND]
    if d >= hold:
        return d
    d_eff = hold if d >= hold - half else d + half
    if d_eff >= hold:
        return d_eff
    deficit = cfg[CFG_RECOVERY_SCALE] * (hold - d_eff)
    if d > 0.0:
        deficit = min(deficit, cfg[CFG_MAX_SEPARATION] * cfg[CFG_DT] / cfg[CFG_GAIN])
    return hold - deficit


@kernel(inline=True)
def hold_distance(k: int, d: float, pf: np.ndarray, pi: np.ndarray, cfg: np.ndarray) -> float:
    """Hold distance of pair ``k`` found at ``d``, after learning from its last promise."""
    learned = 0.5 * pf[k, PF_LEARNED]
    if pi[k, PI_PROMISE_STEP] == int(cfg[CFG_STEP]) - 1:
        learned = max(learned, pf[k, PF_PROMISE] - d)
    pf[k, PF_LEARNED] = min(learned, cfg[CFG_MAX_LEARNED])
    return pf[k, PF_MIN] + cfg[CFG_DEADBAND] + pf[k, PF_LEARNED]


@kernel
def hit_arrays(
    nh: int,
    order: np.ndarray,
    hit_k: np.ndarray,
    hit_q: np.ndarray,
    hit_f: np.ndarray,
    witness: np.ndarray,
    pairs: np.ndarray,
    pf: np.ndarray,
    pi: np.ndarray,
    cfg: np.ndarray,
    sel: tuple,
) -> None:
    """The chosen hits, in urgency order, as the row kernel's per-hit arrays."""
    first, second, dist, d_eff, d_min, normal, p1, p2, reach, sel_k, sel_f = sel
    gain = cfg[CFG_GAIN]
    step = int(cfg[CFG_STEP])
    for h in range(nh):
        i = order[h]
        k = hit_k[i]
        d = hit_f[i, HF_DIST]
        hold = hold_distance(k, d, pf, pi, cfg)
        eff = recovery_distance(d, hold, cfg)
        dt = cfg[CFG_DT]
        pf[k, PF_PROMISE] = d + damper(eff - hold, gain / dt, cfg[CFG_DECEL]) * dt
        pi[k, PI_PROMISE_STEP] = step
        first[h], second[h] = pairs[k, 0], pairs[k, 1]
        dist[h], d_eff[h], d_min[h] = d, eff, hold
        w = witness[hit_q[i]]
        for c in range(3):
            p1[h, c] = w[c]
            p2[h, c] = w[3 + c]
            normal[h, c] = w[6 + c]
        tol = cfg[CFG_PATCH_TOLERANCE]
        reach[h] = tol + hit_f[i, HF_CLOSING] if tol > 0.0 else 0.0
        sel_k[h] = k
        for c in range(4):
            sel_f[h, c] = hit_f[i, c]
        sel_f[h, HF_HOLD] = hold


@kernel(inline=True)
def _row(
    lower: np.ndarray,
    r: int,
    f: int,
    s: int,
    lower_value: float,
    point: np.ndarray,
    n: np.ndarray,
    row_geom: np.ndarray,
    row_point: np.ndarray,
    row_normal: np.ndarray,
) -> None:
    """Record row ``r``: its bound, geometries, point and normal (from body 1 to body 2)."""
    lower[r] = lower_value
    row_geom[r, 0] = f
    row_geom[r, 1] = s
    for c in range(3):
        row_point[r, c] = point[c]
        row_normal[r, c] = n[c]


@kernel(inline=True)
def damper(gap: float, gain_over_dt: float, decel: float) -> float:
    """Lower bound of a distance rate [m/s] for a distance ``gap`` above its target [m].

    The velocity damper ``-gain gap / dt``, no faster than the closing speed from which
    ``decel`` [m/s^2] still stops in ``gap``, ``sqrt(2 decel gap)`` (inf: no such cap).
    Below the target (``gap < 0``) it asks for separation, ``-gain gap / dt``.
    """
    bound = -gain_over_dt * gap
    if gap > 0.0 and decel < np.inf:
        bound = max(bound, -math.sqrt(2.0 * decel * gap))
    return bound


#: Patch rows closer than this to a row of the same pair [m], with normals within
#: :data:`_SAME_NORMAL` (cosine), are merged into it (nearly equal rows make the
#: saturated set of the SNS solver rank deficient).
_SAME_POINT = 1e-3
_SAME_NORMAL = 0.9998


@kernel(inline=True)
def _patch_row(
    out: tuple,
    first: int,
    nrows: int,
    f: int,
    s: int,
    bound: float,
    point: np.ndarray,
    n: np.ndarray,
) -> int:
    """Add a patch row for pair (f, s) unless rows ``first:nrows`` already hold it.

    A near-duplicate (same point within :data:`_SAME_POINT`, normal within
    :data:`_SAME_NORMAL`) is merged: the existing row keeps the tighter bound.
    Returns the new row count.
    """
    lower, row_geom, row_point, row_normal = out
    for r in range(first, nrows):
        dx = row_point[r, 0] - point[0]
        dy = row_point[r, 1] - point[1]
        dz = row_point[r, 2] - point[2]
        cos = row_normal[r, 0] * n[0] + row_normal[r, 1] * n[1] + row_normal[r, 2] * n[2]
        if dx * dx + dy * dy + dz * dz < _SAME_POINT * _SAME_POINT and cos > _SAME_NORMAL:
            lower[r] = max(lower[r], bound)
            return nrows
    _row(lower, nrows, f, s, bound, point, n, row_geom, row_point, row_normal)
    return nrows + 1


@kernel(inline=True)
def _plane_axes(n: np.ndarray, t1: np.ndarray, t2: np.ndarray) -> None:
    """Two unit axes ``t1``, ``t2`` spanning the plane normal to the unit vector ``n``."""
    if abs(n[0]) < 0.9:
        t1[0], t1[1], t1[2] = 0.0, n[2], -n[1]
    else:
        t1[0], t1[1], t1[2] = -n[2], 0.0, n[0]
    tn = math.sqrt(t1[0] * t1[0] + t1[1] * t1[1] + t1[2] * t1[2])
    t1 /= tn
    t2[0] = n[1] * t1[2] - n[2] * t1[1]
    t2[1] = n[2] * t1[0] - n[0] * t1[2]
    t2[2] = n[0] * t1[1] - n[1] * t1[0]


@kernel(inline=True)
def _keep_point(
    x: float,
    y: float,
    z: float,
    geom: int,
    sign: float,
    q: np.ndarray,
    n: np.ndarray,
    rot: np.ndarray,
    trans: np.ndarray,
    rad: float,
    limit: float,
    gaps: np.ndarray,
    world: np.ndarray,
    count: int,
) -> int:
    """Place a local point of ``geom`` in the world; keep it when it is near the plane.

    The point is moved by ``rad`` along ``sign n``; it is kept when its gap to the plane
    through ``q`` is below ``limit``.
    """
    for c in range(3):
        world[count, c] = (
            rot[geom, c, 0] * x + rot[geom, c, 1] * y + rot[geom, c, 2] * z + trans[geom, c]
        ) + rad * n[c]
    g = sign * (
        (q[0] - world[count, 0]) * n[0]
        + (q[1] - world[count, 1]) * n[1]
        + (q[2] - world[count, 2]) * n[2]
    )
    if g < limit:
        gaps[count] = g
        return count + 1
    return count


@kernel(inline=True)
def _generator(
    geom: int,
    sign: float,
    n: np.ndarray,
    rot: np.ndarray,
    shape_kind: np.ndarray,
    shape_params: np.ndarray,
    ends: np.ndarray,
) -> bool:
    """The generator segment a cylinder or cone turns toward the other shape, if any.

    When the direction toward the other shape (``sign n``) is closer to radial than to
    the axis, the contact patch of a cylinder (or a cone) is a strip along one
    generator, not its rims: its two ends (local frame) are written to ``ends``.
    Returns False for other kinds or when a cap (the base) faces the other shape.
    """
    kind = shape_kind[geom]
    if kind != SHAPE_CYLINDER and kind != CONE:
        return False
    dx = sign * (rot[geom, 0, 0] * n[0] + rot[geom, 1, 0] * n[1] + rot[geom, 2, 0] * n[2])
    dy = sign * (rot[geom, 0, 1] * n[0] + rot[geom, 1, 1] * n[1] + rot[geom, 2, 1] * n[2])
    dz = sign * (rot[geom, 0, 2] * n[0] + rot[geom, 1, 2] * n[1] + rot[geom, 2, 2] * n[2])
    rho = math.sqrt(dx * dx + dy * dy)
    if rho < abs(dz) or rho < 1e-12:
        return False
    r, h = shape_params[geom, 0], shape_params[geom, 1]
    ends[0, 0], ends[0, 1], ends[0, 2] = r * dx / rho, r * dy / rho, -h
    if kind == CONE:
        ends[1, 0], ends[1, 1], ends[1, 2] = 0.0, 0.0, h
    else:
        ends[1, 0], ends[1, 1], ends[1, 2] = r * dx / rho, r * dy / rho, h
    return True


@kernel(inline=True)
def _near_points(
    geom: int,
    sign: float,
    q: np.ndarray,
    n: np.ndarray,
    geometry: tuple,
    limit: float,
    gaps: np.ndarray,
    world: np.ndarray,
    ends: np.ndarray,
) -> int:
    """Support points of ``geom`` whose gap to the plane through ``q`` is below ``limit``.

    The shape's support points (box corners, rims, capsule ends, hull vertices), or,
    for a cylinder or cone whose side faces the other shape, the two ends of the
    generator facing it (:func:`_generator`). Each point is moved by the shape's radius
    along ``sign * n`` (capsule ends); its gap is ``sign * n . (q - w)``. Returns how
    many were written to ``gaps``/``world``; ``ends`` (2 x 3) is scratch.
    """
    shape_kind, shape_params, rot, trans, sup_points, sup_offset, sup_radius = geometry
    count = 0
    rad = sup_radius[geom] * sign
    if _generator(geom, sign, n, rot, shape_kind, shape_params, ends):
        for i in range(2):
            count = _keep_point(
                ends[i, 0], ends[i, 1], ends[i, 2], geom, sign, q, n, rot, trans, rad, limit,
                gaps, world, count,
            )  # fmt: skip
        return count
    for i in range(sup_offset[geom], sup_offset[geom + 1]):
        count = _keep_point(
            sup_points[i, 0], sup_points[i, 1], sup_points[i, 2], geom, sign, q, n, rot, trans,
            rad, limit, gaps, world, count,
        )  # fmt: skip
    return count


@kernel(inline=True)
def _cylinder_local(x: float, y: float, z: float, r: float, h: float, n: np.ndarray) -> float:
    """Signed distance from a local point to a cylinder (radius r, half length h); normal."""
    rho = math.sqrt(x * x + y * y)
    ux, uy = (x / rho, y / rho) if rho > 1e-15 else (1.0, 0.0)
    sz = 1.0 if z >= 0.0 else -1.0
    dr, dz = rho - r, abs(z) - h
    if dr > 0.0 and dz > 0.0:  # beyond the rim
        d = math.sqrt(dr * dr + dz * dz)
        n[0], n[1], n[2] = dr * ux / d, dr * uy / d, dz * sz / d
        return d
    if dr > dz:  # the side is nearest (or, inside, least deep)
        n[0], n[1], n[2] = ux, uy, 0.0
        return dr
    n[0], n[1], n[2] = 0.0, 0.0, sz
    return dz


@kernel(inline=True)
def _box_local(x: float, y: float, z: float, h: np.ndarray, n: np.ndarray) -> float:
    """Signed distance from a local point to a box of half sides ``h``; outward normal."""
    qx, qy, qz = abs(x) - h[0], abs(y) - h[1], abs(z) - h[2]
    sx = 1.0 if x >= 0.0 else -1.0
    sy = 1.0 if y >= 0.0 else -1.0
    sz = 1.0 if z >= 0.0 else -1.0
    ox, oy, oz = max(qx, 0.0), max(qy, 0.0), max(qz, 0.0)
    out = math.sqrt(ox * ox + oy * oy + oz * oz)
    if out > 0.0:
        n[0], n[1], n[2] = sx * ox / out, sy * oy / out, sz * oz / out
        return out
    n[0] = n[1] = n[2] = 0.0  # inside: the least-deep face
    if qx >= qy and qx >= qz:
        n[0] = sx
        return qx
    if qy >= qz:
        n[1] = sy
        return qy
    n[2] = sz
    return qz


@kernel(inline=True)
def point_distance(
    kind: int,
    params: np.ndarray,
    R: np.ndarray,
    t: np.ndarray,
    p: np.ndarray,
    n: np.ndarray,
) -> float:
    """Exact signed distance from world point ``p`` to a primitive shape placed at (R, t).

    ``n`` receives the unit normal of the shape's surface toward ``p`` (world). Shapes:
    sphere (radius), capsule and cylinder (radius, half length), box (half sides),
    half-space and plane (unit normal, offset). For any other kind nothing is computed
    (returns NaN). The local normal is formed in ``n`` and then rotated (no scratch array).
    """
    x = y = z = 0.0
    for c in range(3):
        x += R[c, 0] * (p[c] - t[c])
        y += R[c, 1] * (p[c] - t[c])
        z += R[c, 2] * (p[c] - t[c])
    if kind == SHAPE_SPHERE or kind == SHAPE_CAPSULE:
        hz = min(max(z, -params[1]), params[1]) if kind == SHAPE_CAPSULE else 0.0
        vz = z - hz
        norm = math.sqrt(x * x + y * y + vz * vz)
        if norm < 1e-15:
            n[0], n[1], n[2] = 1.0, 0.0, 0.0
        else:
            n[0], n[1], n[2] = x / norm, y / norm, vz / norm
        d = norm - params[0]
    elif kind == SHAPE_CYLINDER:
        d = _cylinder_local(x, y, z, params[0], params[1], n)
    elif kind == SHAPE_BOX:
        d = _box_local(x, y, z, params, n)
    elif kind == SHAPE_HALFSPACE or kind == SHAPE_TWO_SIDED_PLANE:
        d = x * params[0] + y * params[1] + z * params[2] - params[3]
        sign = -1.0 if (kind == SHAPE_TWO_SIDED_PLANE and d < 0.0) else 1.0
        d *= sign
        n[0], n[1], n[2] = sign * params[0], sign * params[1], sign * params[2]
    else:
        return math.nan
    l0, l1, l2 = n[0], n[1], n[2]
    for c in range(3):
        n[c] = R[c, 0] * l0 + R[c, 1] * l1 + R[c, 2] * l2
    return d


@kernel(inline=True)
def _extremes(
    count: int,
    max_per_side: int,
    world: np.ndarray,
    t1: np.ndarray,
    t2: np.ndarray,
    chosen: np.ndarray,
) -> None:
    """Mark the points of a patch that get rows: all, or the outline of a large patch.

    Past ``max_per_side`` points, the extreme one along each of ``max_per_side`` evenly
    spaced in-plane directions.
    """
    for c in range(count):
        chosen[c] = count <= max_per_side
    if count <= max_per_side:
        return
    for k in range(max_per_side):
        ang = 2.0 * math.pi * k / max_per_side
        ca, sa = math.cos(ang), math.sin(ang)
        best, best_v = 0, -1e300
        for c in range(count):
            v = 0.0
            for j in range(3):
                v += world[c, j] * (ca * t1[j] + sa * t2[j])
            if v > best_v:
                best_v, best = v, c
        chosen[best] = True


@kernel
def _jacobian_rows(
    J: np.ndarray,
    columns: tuple,
    nrows: int,
    row_geom: np.ndarray,
    row_point: np.ndarray,
    row_normal: np.ndarray,
    C: np.ndarray,
) -> None:
    """``C[r] = n^T (J_s^(2) - J_s^(1))`` with ``J_s = J_lin - [s]x J_ang`` per body's joints.

    ``J`` is Pinocchio's world joint Jacobian ``data.J`` (spatial velocity at the world
    origin), so ``n . (v_O + w x s) = n . v_O - (s x n) . w``. ``columns`` is
    ``(support, colmap)``: ``support[g, c]`` whether column ``c`` of ``J`` moves
    geometry ``g``, and column ``c`` adds to velocity coordinate ``colmap[c]`` (a
    folded mimic joint's column, which Pinocchio scales by the multiplier, goes to its
    leader's; otherwise the identity).
    """
    support, colmap = columns
    nx = J.shape[1]
    for r in range(nrows):
        f, s = row_geom[r, 0], row_geom[r, 1]
        n0, n1, n2 = row_normal[r, 0], row_normal[r, 1], row_normal[r, 2]
        c0 = n1 * row_point[r, 2] - n2 * row_point[r, 1]
        c1 = n2 * row_point[r, 0] - n0 * row_point[r, 2]
        c2 = n0 * row_point[r, 1] - n1 * row_point[r, 0]
        for k in range(C.shape[1]):
            C[r, k] = 0.0
        for k in range(nx):
            sign = (1.0 if support[s, k] else 0.0) - (1.0 if support[f, k] else 0.0)
            if sign == 0.0:
                continue
            val = (
                n0 * J[0, k]
                + n1 * J[1, k]
                + n2 * J[2, k]
                - (c0 * J[3, k] + c1 * J[4, k] + c2 * J[5, k])
            )
            C[r, colmap[k]] += sign * val


@kernel(inline=True)
def _support_gap(
    other: int,
    sign: float,
    w: np.ndarray,
    n: np.ndarray,
    plane_gap: float,
    shape_kind: np.ndarray,
    shape_params: np.ndarray,
    rot: np.ndarray,
    trans: np.ndarray,
    ns: np.ndarray,
) -> float:
    """Gap of support point ``w`` to the ``other`` shape and the row normal ``ns``.

    The normal points from body 1 to body 2 (``sign`` is +1 when ``w`` is on body 1).
    Exact for primitives; the plane gap and the pair normal ``n`` otherwise.
    """
    d = point_distance(shape_kind[other], shape_params[other], rot[other], trans[other], w, ns)
    if math.isnan(d):
        ns[0], ns[1], ns[2] = n[0], n[1], n[2]
        return plane_gap
    if sign > 0.0:  # ns points from body 2 toward w on body 1: flip it
        ns *= -1.0
    return d


@kernel(inline=True)
def _polygon_order(
    pts: np.ndarray,
    count: int,
    t1: np.ndarray,
    t2: np.ndarray,
    uv: np.ndarray,
    angle: np.ndarray,
    order: np.ndarray,
) -> None:
    """Plane coordinates ``uv`` of ``count`` points and their ``order`` around their centroid.

    ``angle`` is scratch. The order is that of a stable sort of the angles (a patch has a
    few points: an insertion sort, without allocating).
    """
    cu = cv = 0.0
    for c in range(count):
        uv[c, 0] = pts[c, 0] * t1[0] + pts[c, 1] * t1[1] + pts[c, 2] * t1[2]
        uv[c, 1] = pts[c, 0] * t2[0] + pts[c, 1] * t2[1] + pts[c, 2] * t2[2]
        cu += uv[c, 0]
        cv += uv[c, 1]
    for c in range(count):
        angle[c] = math.atan2(uv[c, 1] - cv / count, uv[c, 0] - cu / count)
        order[c] = c
        i = c
        while i > 0 and angle[order[i - 1]] > angle[c]:  # (ties keep their order)
            order[i] = order[i - 1]
            i -= 1
        order[i] = c


@kernel(inline=True)
def _cross2(ax: float, ay: float, bx: float, by: float) -> float:
    return ax * by - ay * bx


@kernel(inline=True)
def _crossings(
    side_pts: np.ndarray,
    side_count: np.ndarray,
    t1: np.ndarray,
    t2: np.ndarray,
    max_out: int,
    out: np.ndarray,
    polygon: tuple,
) -> int:
    """Where the outlines of the two sides' patch points cross, as points on side 0.

    Each side's points (support points of one shape near the contact plane) are ordered
    around their centroid in the plane; an edge of side 0's outline that crosses an edge
    of side 1's bounds the contact patch at the crossing (e.g. a cylinder's generator
    leaving a box face over its edge), a point that neither shape's own support points
    reach. The crossing is lifted onto side 0's edge (a point of geometry 1).
    ``polygon`` is scratch: ``(uv (2, m, 2), angle (m,), order (2, m) int64)``.

    Returns:
        How many points were written to ``out`` (at most ``max_out``).
    """
    n0, n1 = side_count[0], side_count[1]
    if n0 < 2 or n1 < 2:
        return 0
    uv, angle, order = polygon
    uv0, uv1, o0, o1 = uv[0], uv[1], order[0], order[1]
    _polygon_order(side_pts[0], n0, t1, t2, uv0, angle, o0)
    _polygon_order(side_pts[1], n1, t1, t2, uv1, angle, o1)
    e0 = n0 if n0 > 2 else 1
    e1 = n1 if n1 > 2 else 1
    found = 0
    for i in range(e0):
        a, b = o0[i], o0[(i + 1) % n0]
        rx, ry = uv0[b, 0] - uv0[a, 0], uv0[b, 1] - uv0[a, 1]
        for j in range(e1):
            c, d = o1[j], o1[(j + 1) % n1]
            sx, sy = uv1[d, 0] - uv1[c, 0], uv1[d, 1] - uv1[c, 1]
            den = _cross2(rx, ry, sx, sy)
            if abs(den) < 1e-14:
                continue  # parallel: the end points are rows already
            qx, qy = uv1[c, 0] - uv0[a, 0], uv1[c, 1] - uv0[a, 1]
            u = _cross2(qx, qy, sx, sy) / den
            v = _cross2(qx, qy, rx, ry) / den
            if 0.0 < u < 1.0 and 0.0 < v < 1.0 and found < max_out:
                for k in range(3):
                    out[found, k] = side_pts[0, a, k] + u * (side_pts[0, b, k] - side_pts[0, a, k])
                found += 1
    return found


@kernel
def _pair_rows(
    first: np.ndarray,
    second: np.ndarray,
    d_eff: np.ndarray,
    reach: np.ndarray,
    gain_over_dt: float,
    decel: float,
    max_per_side: int,
    geometry: tuple,
    hits: tuple,
    scratch: tuple,
    out: tuple,
) -> int:
    """Each pair's witness row, then, for a pair within reach, its support-point rows.

    A patch has rows for both sides' points near the contact plane and for where the
    two sides' outlines cross. One call for every pair (a call per pair would update
    the reference counts of its two dozen arrays each time). Returns the row count.
    """
    shape_kind, shape_params, rot, trans = geometry[0], geometry[1], geometry[2], geometry[3]
    dist, d_min, normal, p1, p2 = hits
    gaps, world, chosen, t1, t2, ns, side_pts, side_count, cross, ends, polygon = scratch
    lower, row_geom, row_point, row_normal = out
    nrows = 0
    for h in range(first.shape[0]):
        f, s = first[h], second[h]
        bound = damper(d_eff[h] - d_min[h], gain_over_dt, decel)
        _row(lower, nrows, f, s, bound, p1[h], normal[h], row_geom, row_point, row_normal)
        nrows += 1
        if not (reach[h] > 0.0 and dist[h] - d_min[h] <= reach[h]):
            continue
        witness_row = nrows - 1
        n = normal[h]
        _plane_axes(n, t1, t2)
        limit = dist[h] + reach[h]
        for side in range(2):
            geom, other = (f, s) if side == 0 else (s, f)
            q = p2[h] if side == 0 else p1[h]
            sign = 1.0 if side == 0 else -1.0
            count = _near_points(geom, sign, q, n, geometry, limit, gaps, world, ends)
            _extremes(count, max_per_side, world, t1, t2, chosen)
            side_count[side] = 0
            for c in range(count):
                if not chosen[c]:
                    continue
                for j in range(3):
                    side_pts[side, side_count[side], j] = world[c, j]
                side_count[side] += 1
                g = _support_gap(
                    other, sign, world[c], n, gaps[c], shape_kind, shape_params, rot, trans, ns
                )
                if g >= limit:
                    continue  # the other shape curves away: this point is not in the patch
                bound = damper(max(g, d_min[h]) - d_min[h], gain_over_dt, decel)
                nrows = _patch_row(out, witness_row, nrows, f, s, bound, world[c], ns)
        found = _crossings(side_pts, side_count, t1, t2, max_per_side, cross, polygon)
        q = p2[h]
        for c in range(found):
            w = cross[c]
            plane = n[0] * (q[0] - w[0]) + n[1] * (q[1] - w[1]) + n[2] * (q[2] - w[2])
            g = _support_gap(s, 1.0, w, n, plane, shape_kind, shape_params, rot, trans, ns)
            if g >= limit:
                continue
            bound = damper(max(g, d_min[h]) - d_min[h], gain_over_dt, decel)
            nrows = _patch_row(out, witness_row, nrows, f, s, bound, w, ns)
    return nrows


@kernel
def contact_rows(
    J: np.ndarray,
    columns: tuple,
    first: np.ndarray,
    second: np.ndarray,
    dist: np.ndarray,
    d_eff: np.ndarray,
    d_min: np.ndarray,
    normal: np.ndarray,
    p1: np.ndarray,
    p2: np.ndarray,
    shape_kind: np.ndarray,
    shape_params: np.ndarray,
    rot: np.ndarray,
    trans: np.ndarray,
    sup_points: np.ndarray,
    sup_offset: np.ndarray,
    sup_radius: np.ndarray,
    reach: np.ndarray,
    gain_over_dt: float,
    decel: float,
    max_per_side: int,
    C: np.ndarray,
    lower: np.ndarray,
    row_geom: np.ndarray,
    row_point: np.ndarray,
    row_normal: np.ndarray,
) -> int:
    """All damper rows of the near pairs: the witness row, then each patch side's points.

    Pair ``h`` has geometries ``first[h]``/``second[h]``, distance ``dist[h]``, damper
    distance ``d_eff[h]`` (after the recovery deadband), limit ``d_min[h]``, normal (from
    geometry 1 to 2) and witness points. ``rot``/``trans`` hold each geometry's world
    placement. A pair within ``reach[h]`` of its limit (the patch tolerance plus what it
    may close this step; 0 disables) adds, for each shape, its support points (shifted by
    the shape's radius along the normal) whose gap to the tangent plane of the other
    shape is below ``dist + reach[h]``; past ``max_per_side`` of them, only
    those extreme along ``max_per_side`` evenly spaced in-plane directions. Where the other
    shape is a primitive (``shape_kind``), each such point gets its exact distance and
    normal to that shape (:func:`point_distance`), so its row is the exact rate of that
    point's distance and a curved surface does not block sliding; otherwise (hulls,
    meshes) the plane gap, a lower bound of the distance to a convex shape, with the pair's
    normal. A support row never demands separation: its damper distance is
    ``max(gap, d_min)``.

    Returns:
        The number of rows written.
    """
    npts = sup_points.shape[0]
    scratch = (
        np.empty(npts),
        np.empty((npts, 3)),
        np.zeros(npts, dtype=np.bool_),
        np.empty(3),
        np.empty(3),
        np.empty(3),
        np.empty((2, max(npts, 1), 3)),
        np.zeros(2, dtype=np.int64),
        np.empty((max_per_side, 3)),
        np.empty((2, 3)),
        (
            np.empty((2, max(npts, 1), 2)),
            np.empty(max(npts, 1)),
            np.empty((2, max(npts, 1)), dtype=np.int64),
        ),
    )
    geometry = (shape_kind, shape_params, rot, trans, sup_points, sup_offset, sup_radius)
    hits = (dist, d_min, normal, p1, p2)
    out = (lower, row_geom, row_point, row_normal)
    nrows = _pair_rows(
        first, second, d_eff, reach, gain_over_dt, decel, max_per_side, geometry, hits, scratch,
        out,
    )  # fmt: skip
    _jacobian_rows(J, columns, nrows, row_geom, row_point, row_normal, C)
    return nrows


@kernel(inline=True)
def _gap_of(bound: float, gain_over_dt: float, decel: float) -> float:
    """The gap a :func:`damper` bound was computed for (the damper is invertible)."""
    m = -bound
    gap = m / gain_over_dt
    if m > 0.0 and decel < np.inf:
        gap = max(gap, m * m / (2.0 * decel))
    return gap


@kernel
def obstacle_velocity_bounds(
    nrows: int,
    rows: tuple,
    slot: np.ndarray,
    obs_trans: np.ndarray,
    obs_vel: np.ndarray,
    cfg: np.ndarray,
    lower: np.ndarray,
) -> None:
    """Take each approaching obstacle's own velocity out of its rows' bounds.

    A row on a pair whose second geometry is an obstacle bounds ``n . (v2 - v1)``; the
    obstacle's part ``c = n . (v + w x (s - o))`` at the row point ``s`` is known. When
    it closes (``c < 0``) the robot's part must make up for it, and the gap it damps is
    the one the obstacle leaves after the prediction horizon ``lead``:
    ``lower = damper(gap + c lead) - c``. An obstacle moving away earns no credit: the
    robot may not follow it closer than a static one, since it may stop any time.
    ``rows`` is ``(row_geom, row_point, row_normal)``.
    """
    row_geom, row_point, row_normal = rows
    gain_over_dt = cfg[CFG_GAIN] / cfg[CFG_DT]
    decel, lead = cfg[CFG_DECEL], cfg[CFG_LEAD]
    for r in range(nrows):
        o = slot[row_geom[r, 1]]
        if o < 0:
            continue
        dx = row_point[r, 0] - obs_trans[o, 0]
        dy = row_point[r, 1] - obs_trans[o, 1]
        dz = row_point[r, 2] - obs_trans[o, 2]
        wx, wy, wz = obs_vel[o, 3], obs_vel[o, 4], obs_vel[o, 5]
        vx = obs_vel[o, 0] + wy * dz - wz * dy
        vy = obs_vel[o, 1] + wz * dx - wx * dz
        vz = obs_vel[o, 2] + wx * dy - wy * dx
        closing = row_normal[r, 0] * vx + row_normal[r, 1] * vy + row_normal[r, 2] * vz
        if closing < 0.0:
            gap = _gap_of(lower[r], gain_over_dt, decel) + closing * lead
            lower[r] = damper(gap, gain_over_dt, decel) - closing


@kernel
def offset_bounds(
    nrows: int,
    C: np.ndarray,
    offset: np.ndarray,
    lower: np.ndarray,
    gain_over_dt: float,
    decel: float,
) -> None:
    """Guard the present configuration too when the step is solved ahead of it.

    A control loop solves at the configuration its braking leads to, ``offset`` (size
    nv, tangent) ahead of the present one. A row's gap there exceeds the present gap by
    about ``C[r] . offset`` when the motion carries the pair apart (an arm giving way to
    an obstacle that follows it): the row then uses the present, smaller gap. The gap
    is recovered from the bound (:func:`damper` is invertible).
    """
    for r in range(nrows):
        ahead = 0.0
        for k in range(offset.shape[0]):
            ahead += C[r, k] * offset[k]
        if ahead <= 0.0:
            continue
        gap = _gap_of(lower[r], gain_over_dt, decel)
        lower[r] = max(lower[r], damper(gap - ahead, gain_over_dt, decel))


@kernel
def release_fixed_rows(nrows: int, C: np.ndarray, lower: np.ndarray) -> None:
    """Unbound the rows no joint velocity moves (``C[r] = 0``): ``lower[r] = -inf``.

    A pair whose geometries no joint moves (a fixed base resting on a table, an
    obstacle against an attached object of a fixed link) keeps its distance whatever
    ``dq`` is: its row ``0 >= lower`` bounds nothing while it holds, and while the pair
    is below its minimum it cannot hold for any ``dq``, which would leave every other
    row and task of the step with an empty constraint set. The pair stays watched and
    reported (``violation``); only its row stops bounding the step.
    """
    n = C.shape[1]
    for r in range(nrows):
        moved = False
        for j in range(n):
            if C[r, j] != 0.0:
                moved = True
                break
        if not moved:
            lower[r] = -math.inf


@kernel
def select_and_rows(
    nh: int,
    hits: tuple,
    pairs: np.ndarray,
    pf: np.ndarray,
    pi: np.ndarray,
    cfg: np.ndarray,
    geometry: tuple,
    motion: tuple,
    J: np.ndarray,
    columns: tuple,
    sel: tuple,
    out: tuple,
    counts: np.ndarray,
) -> None:
    """Steps 5: the chosen hits' hold distances and rows; counts in ``counts``.

    ``hits`` is ``(hit_k, hit_q, hit_f, witness)``; ``geometry`` the shape and support
    tables and placements of :func:`contact_rows`; ``motion`` is ``(slot, obs_trans,
    obs_vel, offset)`` (:func:`obstacle_velocity_bounds`, :func:`offset_bounds`);
    ``out`` is ``(C, lower, row_geom, row_point, row_normal)``.
    """
    hit_k, hit_q, hit_f, witness = hits
    order = np.empty(nh, dtype=np.int64)
    chosen, extra = urgency_order(nh, hit_f, int(cfg[CFG_MAX_CONSTRAINTS]), order)
    hit_arrays(chosen, order, hit_k, hit_q, hit_f, witness, pairs, pf, pi, cfg, sel)
    first, second, dist, d_eff, d_min, normal, p1, p2, reach, _, _ = sel
    kind, params, rot, trans, sup_points, sup_offset, sup_radius = geometry
    C, lower, row_geom, row_point, row_normal = out
    nrows = contact_rows(
        J,
        columns,
        first[:chosen],
        second[:chosen],
        dist[:chosen],
        d_eff[:chosen],
        d_min[:chosen],
        normal[:chosen],
        p1[:chosen],
        p2[:chosen],
        kind,
        params,
        rot,
        trans,
        sup_points,
        sup_offset,
        sup_radius,
        reach[:chosen],
        cfg[CFG_GAIN] / cfg[CFG_DT],
        cfg[CFG_DECEL],
        PATCH_DIRECTIONS,
        C,
        lower,
        row_geom,
        row_point,
        row_normal,
    )
    slot, obs_trans, obs_vel, offset = motion
    offset_bounds(nrows, C, offset, lower, cfg[CFG_GAIN] / cfg[CFG_DT], cfg[CFG_DECEL])
    rows = (row_geom, row_point, row_normal)
    obstacle_velocity_bounds(nrows, rows, slot, obs_trans, obs_vel, cfg, lower)
    release_fixed_rows(nrows, C, lower)
    counts[N_ROWS] = nrows
    counts[N_HITS] = chosen
    counts[N_EXTRA] = extra


@kernel
def collision_step(
    dq_abs: np.ndarray,
    lever: np.ndarray,
    pairs: np.ndarray,
    pf: np.ndarray,
    pi: np.ndarray,
    cfg: np.ndarray,
    placement: tuple,
    geometry: tuple,
    shapes: tuple,
    motion: tuple,
    J: np.ndarray,
    columns: tuple,
    work: tuple,
    sel: tuple,
    out: tuple,
    counts: np.ndarray,
) -> None:
    """One collision step: the geometries' placement, then all five stages.

    ``placement`` is ``(oMi, joint, local_rot, local_trans, obs_rot)`` of
    :func:`~stackik.model._pipeline_kernel.place_geometries` (the world placements go to
    ``geometry[2:4]``); ``shapes`` is ``(kind, params, vstart, verts, center, radius)``;
    ``motion`` is ``(slot, obs_trans, obs_vel, disp, extra, offset)``; ``work`` holds the
    scratch arrays ``(listed, query, dist, witness, hit_k, hit_q, hit_f)``. On return
    ``counts`` holds the rows, hits, exact queries, skipped queries, urgent pairs beyond
    the budget and listed pairs. Pairs with triangle meshes must not be watched (use the
    staged calls). See the module docstring.
    """
    kept = select_queries(
        dq_abs, lever, pairs, pf, pi, cfg, placement, geometry, shapes, motion, work, counts
    )
    run_queries(kept, pairs, pf, pi, cfg, geometry, shapes, work)
    hits_and_rows(kept, pairs, pf, pi, cfg, geometry, motion, J, columns, work, sel, out, counts)


@kernel
def select_queries(
    dq_abs: np.ndarray,
    lever: np.ndarray,
    pairs: np.ndarray,
    pf: np.ndarray,
    pi: np.ndarray,
    cfg: np.ndarray,
    placement: tuple,
    geometry: tuple,
    shapes: tuple,
    motion: tuple,
    work: tuple,
    counts: np.ndarray,
) -> int:
    """:func:`collision_step` up to its exact queries: placement, bounds, spheres, limit.

    Writes the listed and skipped counts; returns the number of queries kept (first in
    ``work[1]``). The arguments are those of :func:`collision_step`.
    """
    listed, query = work[0], work[1]
    center, radius = shapes[4], shapes[5]
    slot, obs_trans, disp, extra = motion[0], motion[1], motion[3], motion[4]
    rot, trans = geometry[2], geometry[3]
    oMi, joint, local_rot, local_trans, obs_rot = placement
    place_geometries(oMi, joint, slot, local_rot, local_trans, obs_rot, obs_trans, rot, trans)
    count = advance_bounds(dq_abs, lever, pairs, slot, (disp, extra), pf, pi, cfg, listed)
    counts[N_LISTED] = count
    n = sphere_filter(listed, count, pairs, rot, trans, center, radius, pf, pi, cfg, query)
    kept = apply_budget(query, n, pf, cfg)
    counts[N_SKIPPED] = n - kept
    return kept


@kernel
def run_queries(
    kept: int,
    pairs: np.ndarray,
    pf: np.ndarray,
    pi: np.ndarray,
    cfg: np.ndarray,
    geometry: tuple,
    shapes: tuple,
    work: tuple,
) -> None:
    """The exact queries of :func:`collision_step`: the first ``kept`` pairs of ``work[1]``."""
    query, dist, witness = work[1], work[2], work[3]
    kind, params, vstart, verts = shapes[0], shapes[1], shapes[2], shapes[3]
    rot, trans = geometry[2], geometry[3]
    exact_queries(
        query, kept, pairs, kind, params, vstart, verts, rot, trans, dist, witness, pf, pi,
        int(cfg[CFG_STEP]),
    )  # fmt: skip


@kernel
def hits_and_rows(
    kept: int,
    pairs: np.ndarray,
    pf: np.ndarray,
    pi: np.ndarray,
    cfg: np.ndarray,
    geometry: tuple,
    motion: tuple,
    J: np.ndarray,
    columns: tuple,
    work: tuple,
    sel: tuple,
    out: tuple,
    counts: np.ndarray,
) -> None:
    """:func:`collision_step` after its ``kept`` exact queries: hits, rows and counts."""
    _, query, dist, witness, hit_k, hit_q, hit_f = work
    slot, obs_trans, obs_vel, offset = motion[0], motion[1], motion[2], motion[5]
    counts[N_QUERIES] = kept
    nh = record_hits(query, kept, dist, pf, pi, cfg, hit_k, hit_q, hit_f)
    hits = (hit_k, hit_q, hit_f, witness)
    select_and_rows(
        nh,
        hits,
        pairs,
        pf,
        pi,
        cfg,
        geometry,
        (slot, obs_trans, obs_vel, offset),
        J,
        columns,
        sel,
        out,
        counts,
    )


class LayoutArrays(NamedTuple):
    """The arrays of a collision step that change only with the layout, grouped.

    The plain form of the record :func:`collision_step_ws` takes (while kernels run as
    plain Python); compiled, the same fields go into one numba record
    (:func:`stackik.constraints._collision_ws.new_workspace`).
    """

    pairs: tuple  #: (lever, pairs, pf, pi, cfg, counts)
    placement: tuple  #: (joint, local_rot, local_trans) of the geometries
    geometry: tuple  #: (kind, params, rot, trans, sup_points, sup_offset, sup_radius)
    shapes: tuple  #: (kind, params, vstart, verts, center, radius)
    motion: tuple  #: (slot, obs_vel, disp, extra, offset, obs_prev, reach)
    columns: tuple  #: (support, colmap) of the Jacobian columns
    work: tuple  #: the broadphase's scratch arrays
    sel: tuple  #: the row selection's scratch arrays
    out: tuple  #: (row_geom, row_point, row_normal), the rows' records


@kernel
def collision_step_ws(
    ws: Any,
    dq_abs: np.ndarray,
    oMi: np.ndarray,
    obs_rot: np.ndarray,
    obs_trans: np.ndarray,
    obs_given: np.ndarray,
    obs_linear: np.ndarray,
    obs_angular: np.ndarray,
    J: np.ndarray,
    C: np.ndarray,
    lower: np.ndarray,
) -> None:
    """:func:`collision_step` with the layout's arrays in one record, obstacle motion first.

    ``ws`` holds the :class:`LayoutArrays`: a
    :func:`~stackik.constraints._collision_ws.new_workspace` record once compiled (one
    argument's crossing instead of 50), the :class:`LayoutArrays` themselves as plain
    Python; the other
    arguments are those that change from step to step: ``|dq|`` since the last step,
    Pinocchio's joint placements, the world snapshot's obstacle poses and given
    velocities (``obs_given`` tells which obstacles have one), the joint Jacobian and
    the row buffers.

    The step starts with :func:`advance_obstacles` on the snapshot, the call the staged
    path makes from Python: one crossing less per step.
    """
    lever, pairs, pf, pi, cfg, counts = ws.pairs
    joint, local_rot, local_trans = ws.placement
    slot, obs_vel, disp, extra, offset, obs_prev, reach = ws.motion
    row_geom, row_point, row_normal = ws.out
    advance_obstacles(
        (obs_rot, obs_trans), obs_given, (obs_linear, obs_angular), obs_prev, reach, cfg,
        (obs_vel, disp, extra),
    )  # fmt: skip
    collision_step(
        dq_abs, lever, pairs, pf, pi, cfg, (oMi, joint, local_rot, local_trans, obs_rot),
        ws.geometry, ws.shapes, (slot, obs_trans, obs_vel, disp, extra, offset), J,
        ws.columns, ws.work, ws.sel, (C, lower, row_geom, row_point, row_normal), counts,
    )  # fmt: skip


# -- the same step in three calls (a query budget times its exact queries) ----------------------
@kernel
def select_queries_ws(
    ws: Any,
    dq_abs: np.ndarray,
    oMi: np.ndarray,
    obs_rot: np.ndarray,
    obs_trans: np.ndarray,
    obs_given: np.ndarray,
    obs_linear: np.ndarray,
    obs_angular: np.ndarray,
) -> int:
    """The first part of :func:`collision_step_ws`: up to the exact queries.

    Obstacle motion, then :func:`select_queries`; returns the number of queries kept.
    :func:`run_queries_ws` and :func:`hits_and_rows_ws` finish the step with the same
    results as :func:`collision_step_ws`, so that a caller can time the exact queries
    alone (the per-query cost a query budget is turned into a count with). The arguments
    are those of :func:`collision_step_ws`.
    """
    lever, pairs, pf, pi, cfg, counts = ws.pairs
    joint, local_rot, local_trans = ws.placement
    slot, obs_vel, disp, extra, offset, obs_prev, reach = ws.motion
    advance_obstacles(
        (obs_rot, obs_trans), obs_given, (obs_linear, obs_angular), obs_prev, reach, cfg,
        (obs_vel, disp, extra),
    )  # fmt: skip
    return select_queries(
        dq_abs, lever, pairs, pf, pi, cfg, (oMi, joint, local_rot, local_trans, obs_rot),
        ws.geometry, ws.shapes, (slot, obs_trans, obs_vel, disp, extra, offset), ws.work,
        counts,
    )  # fmt: skip


@kernel
def run_queries_ws(ws: Any, kept: int) -> None:
    """The exact queries of :func:`collision_step_ws` (see :func:`select_queries_ws`)."""
    _, pairs, pf, pi, cfg, _ = ws.pairs
    run_queries(kept, pairs, pf, pi, cfg, ws.geometry, ws.shapes, ws.work)


@kernel
def hits_and_rows_ws(
    ws: Any, kept: int, obs_trans: np.ndarray, J: np.ndarray, C: np.ndarray, lower: np.ndarray
) -> None:
    """The end of :func:`collision_step_ws`: hits, rows, counts (see :func:`select_queries_ws`).

    ``obs_trans`` are the obstacle positions :func:`select_queries_ws` was given.
    """
    _, pairs, pf, pi, cfg, counts = ws.pairs
    slot, obs_vel, disp, extra, offset, _, _ = ws.motion
    row_geom, row_point, row_normal = ws.out
    hits_and_rows(
        kept, pairs, pf, pi, cfg, ws.geometry, (slot, obs_trans, obs_vel, disp, extra, offset),
        J, ws.columns, ws.work, ws.sel, (C, lower, row_geom, row_point, row_normal), counts,
    )  # fmt: skip
