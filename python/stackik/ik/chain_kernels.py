"""Compiled kernels of the serial chain (see :mod:`stackik.ik.chain`).

Every function here decorated with :func:`stackik._jit.kernel` is a numba kernel: plain
loops over flat NumPy tables, compiled on first use by :mod:`stackik._jit` (which also
rebinds the names of this module to the compiled dispatchers, so kernels call each other
compiled), or run as plain Python when the JIT is disabled. Nothing here imports numba.

Tables (built by :meth:`stackik.ik.chain.SerialChain.from_model`):

* ``F`` (n + 1, :data:`F_COLS`): row ``i`` is joint i's fixed placement in the previous
  joint's frame (a row-major rotation, then a translation [m]); row ``n`` is the tip in
  the last joint's frame.
* ``P`` (n, :data:`P_COLS`): per joint, the unit axis in its own frame, the kind
  (:data:`REVOLUTE` or :data:`PRISMATIC`), the limits and the range restarts draw from
  [rad or m].

Search state of the IK (so that a search runs in resumable chunks):

* ``prm`` (:data:`PRM_COUNT`) float parameters: tolerances [m, rad], orientation weight
  [m^2/rad^2], damping bias [m^2], stall ratio;
* ``ist`` (:data:`IST_COUNT`) int64 state: generator, counters, status, caps;
* ``fst`` (:data:`FST_COUNT`) float state: best ``E`` and its errors, ``E`` at the start
  of the stagnation window;
* ``q`` the current iterate and ``qbest`` the best configuration so far.

The joint displacement of one Levenberg-Marquardt step is called ``delta_q`` [rad or m]
(``dq`` is kept for joint velocities).
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel
from .._pose_kernel import pose_error

__all__ = [
    "CONVERGED",
    "FST_COUNT",
    "FST_E_BEST",
    "FST_E_WINDOW",
    "FST_O_BEST",
    "FST_P_BEST",
    "F_COLS",
    "IST_ATTEMPT_CAP",
    "IST_ATTEMPT_ITERS",
    "IST_COUNT",
    "IST_ITERS",
    "IST_MAX_RESTARTS",
    "IST_RESTARTS",
    "IST_RNG",
    "IST_STATUS",
    "IST_WINDOW",
    "PRISMATIC",
    "PRM_BIAS",
    "PRM_COUNT",
    "PRM_STALL_RATIO",
    "PRM_TOL_O",
    "PRM_TOL_P",
    "PRM_W_ROT",
    "P_AXIS",
    "P_COLS",
    "P_HI",
    "P_KIND",
    "P_LO",
    "P_SAMPLE_HI",
    "P_SAMPLE_LO",
    "RESTARTS_EXHAUSTED",
    "REVOLUTE",
    "RUNNING",
    "chain_jacobian",
    "chain_kinematics",
    "evaluate",
    "fk_kernel",
    "ik_batch_kernel",
    "ik_kernel",
    "ik_run",
    "jacobian_kernel",
    "lm_step",
    "pose_error",
    "prepare_kernel",
    "rng_seed_state",
    "rng_uniform",
]

#: A rotation matrix held in scalars, row-major ``(r00, r01, r02, r10, ..., r22)``.
Rot = tuple[float, float, float, float, float, float, float, float, float]
#: A 3-vector held in scalars.
Vec = tuple[float, float, float]

# Joint kinds in the table ``P``.
REVOLUTE = 0
PRISMATIC = 1

#: Columns of the placement table ``F``: a row-major rotation, then a translation.
F_COLS = 12

# Columns of the joint table ``P`` (one row per joint).
P_AXIS = 0  # 0..2: unit axis in the joint frame
P_KIND = 3
P_LO = 4
P_HI = 5
P_SAMPLE_LO = 6
P_SAMPLE_HI = 7
P_COLS = 8

# Float parameters of the IK kernel (``prm``).
PRM_TOL_P = 0
PRM_TOL_O = 1
PRM_W_ROT = 2
PRM_BIAS = 3
PRM_STALL_RATIO = 4
PRM_COUNT = 5

# Integer state of the IK kernel (``ist``).
IST_RNG = 0
IST_ITERS = 1
IST_RESTARTS = 2
IST_ATTEMPT_ITERS = 3
IST_STATUS = 4
IST_MAX_RESTARTS = 5
IST_WINDOW = 6
IST_ATTEMPT_CAP = 7
IST_COUNT = 8

# Float state of the IK kernel (``fst``).
FST_E_BEST = 0
FST_P_BEST = 1
FST_O_BEST = 2
FST_E_WINDOW = 3
FST_COUNT = 4

# Kernel status codes.
RUNNING = 0
CONVERGED = 1
RESTARTS_EXHAUSTED = 2


# -- forward kinematics and Jacobian ----------------------------------------------------------
@kernel
def _compose(r: Rot, t: Vec, f: np.ndarray) -> tuple[Rot, Vec]:
    """The pose ``(r, t)`` times the placement row ``f`` of ``F``: ``(r R_f, r p_f + t)``."""
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = r
    px, py, pz = t
    nx = r00 * f[9] + r01 * f[10] + r02 * f[11] + px
    ny = r10 * f[9] + r11 * f[10] + r12 * f[11] + py
    nz = r20 * f[9] + r21 * f[10] + r22 * f[11] + pz
    m00 = r00 * f[0] + r01 * f[3] + r02 * f[6]
    m01 = r00 * f[1] + r01 * f[4] + r02 * f[7]
    m02 = r00 * f[2] + r01 * f[5] + r02 * f[8]
    m10 = r10 * f[0] + r11 * f[3] + r12 * f[6]
    m11 = r10 * f[1] + r11 * f[4] + r12 * f[7]
    m12 = r10 * f[2] + r11 * f[5] + r12 * f[8]
    m20 = r20 * f[0] + r21 * f[3] + r22 * f[6]
    m21 = r20 * f[1] + r21 * f[4] + r22 * f[7]
    m22 = r20 * f[2] + r21 * f[5] + r22 * f[8]
    return (m00, m01, m02, m10, m11, m12, m20, m21, m22), (nx, ny, nz)


@kernel
def _rotate(m: Rot, a0: float, a1: float, a2: float) -> Vec:
    """The vector ``M a``."""
    m00, m01, m02, m10, m11, m12, m20, m21, m22 = m
    return (
        m00 * a0 + m01 * a1 + m02 * a2,
        m10 * a0 + m11 * a1 + m12 * a2,
        m20 * a0 + m21 * a1 + m22 * a2,
    )


@kernel
def _rodrigues(m: Rot, a0: float, a1: float, a2: float, w: Vec, angle: float) -> Rot:
    """``M Rot(a, angle)`` for the unit axis ``a`` [rad], with ``w = M a`` precomputed.

    Rodrigues by columns: column k of ``M Rot(a, angle)`` is
    ``c M e_k + s M (a x e_k) + (1 - c) a_k (M a)``.
    """
    m00, m01, m02, m10, m11, m12, m20, m21, m22 = m
    wx, wy, wz = w
    c = math.cos(angle)
    s = math.sin(angle)
    t = 1.0 - c
    return (
        c * m00 + s * (a2 * m01 - a1 * m02) + t * a0 * wx,
        c * m01 + s * (a0 * m02 - a2 * m00) + t * a1 * wx,
        c * m02 + s * (a1 * m00 - a0 * m01) + t * a2 * wx,
        c * m10 + s * (a2 * m11 - a1 * m12) + t * a0 * wy,
        c * m11 + s * (a0 * m12 - a2 * m10) + t * a1 * wy,
        c * m12 + s * (a1 * m10 - a0 * m11) + t * a2 * wy,
        c * m20 + s * (a2 * m21 - a1 * m22) + t * a0 * wz,
        c * m21 + s * (a0 * m22 - a2 * m20) + t * a1 * wz,
        c * m22 + s * (a1 * m20 - a0 * m21) + t * a2 * wz,
    )


@kernel
def chain_kinematics(
    F: np.ndarray,
    P: np.ndarray,
    q: np.ndarray,
    n: int,
    R: np.ndarray,
    p: np.ndarray,
    axes: np.ndarray,
    origins: np.ndarray,
) -> None:
    """Tip pose ``(R, p)`` and each joint's base-frame axis and origin at ``q``.

    Joint i's frame is ``T_{i-1} F[i] X(q_i)`` with ``X`` a rotation about the axis [rad]
    or a translation along it [m]; the tip is ``T_{n-1} F[n]``. The running pose is kept
    in scalars (tuples), not arrays, so the compiled loop holds it in registers.

    Args:
        F: Placement table (n + 1, 12).
        P: Joint table (n, 8).
        q: Chain configuration (n) [rad or m].
        n: Number of joints.
        R: Output tip rotation (3, 3).
        p: Output tip position (3) [m].
        axes: Output unit axis of each joint in the base frame (n, 3).
        origins: Output origin of each joint in the base frame (n, 3) [m].
    """
    r = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
    t = (0.0, 0.0, 0.0)
    for i in range(n + 1):
        m, t = _compose(r, t, F[i])
        if i == n:  # the tip: a fixed placement only
            r = m
            break
        a0 = P[i, P_AXIS]
        a1 = P[i, P_AXIS + 1]
        a2 = P[i, P_AXIS + 2]
        w = _rotate(m, a0, a1, a2)
        axes[i, 0], axes[i, 1], axes[i, 2] = w
        origins[i, 0], origins[i, 1], origins[i, 2] = t
        if P[i, P_KIND] == PRISMATIC:  # translate along the axis
            t = (t[0] + w[0] * q[i], t[1] + w[1] * q[i], t[2] + w[2] * q[i])
            r = m
        else:
            r = _rodrigues(m, a0, a1, a2, w, q[i])
    R[0, 0], R[0, 1], R[0, 2], R[1, 0], R[1, 1], R[1, 2], R[2, 0], R[2, 1], R[2, 2] = r
    p[0], p[1], p[2] = t


@kernel
def chain_jacobian(
    P: np.ndarray, n: int, p: np.ndarray, axes: np.ndarray, origins: np.ndarray, J: np.ndarray
) -> None:
    """World-aligned 6 x n Jacobian ``J`` of the tip at ``p`` [m] from the axes and origins.

    Column i is ``[a_i x (p - o_i) ; a_i]`` for a revolute joint, ``[a_i ; 0]`` for a
    prismatic one (rows: linear [m/rad or 1], then angular [1 or 0]).
    """
    for i in range(n):
        wx = axes[i, 0]
        wy = axes[i, 1]
        wz = axes[i, 2]
        if P[i, P_KIND] == PRISMATIC:
            J[0, i] = wx
            J[1, i] = wy
            J[2, i] = wz
            J[3, i] = 0.0
            J[4, i] = 0.0
            J[5, i] = 0.0
        else:
            dx = p[0] - origins[i, 0]
            dy = p[1] - origins[i, 1]
            dz = p[2] - origins[i, 2]
            J[0, i] = wy * dz - wz * dy
            J[1, i] = wz * dx - wx * dz
            J[2, i] = wx * dy - wy * dx
            J[3, i] = wx
            J[4, i] = wy
            J[5, i] = wz


@kernel
def fk_kernel(F: np.ndarray, P: np.ndarray, q: np.ndarray, R: np.ndarray, p: np.ndarray) -> None:
    """Tip pose of the chain at ``q`` [rad or m] into ``R`` (3x3) and ``p`` (3) [m]."""
    n = q.shape[0]
    axes = np.empty((n, 3))
    origins = np.empty((n, 3))
    chain_kinematics(F, P, q, n, R, p, axes, origins)


@kernel
def jacobian_kernel(
    F: np.ndarray, P: np.ndarray, q: np.ndarray, R: np.ndarray, p: np.ndarray, J: np.ndarray
) -> None:
    """Tip pose ``(R, p)`` and world-aligned Jacobian ``J`` (6, n) of the chain at ``q``."""
    n = q.shape[0]
    axes = np.empty((n, 3))
    origins = np.empty((n, 3))
    chain_kinematics(F, P, q, n, R, p, axes, origins)
    chain_jacobian(P, n, p, axes, origins, J)


# -- pose error: stackik._pose_kernel.pose_error (shared with the frame-task rows) --------------


# -- random restarts ------------------------------------------------------------------------------
def rng_seed_state(rng_seed: int) -> int:
    """Nonzero 32-bit xorshift state from a user seed (SplitMix64 finaliser; plain Python)."""
    z = (int(rng_seed) + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    z ^= z >> 31
    return (z & 0xFFFFFFFF) or 0x6D2B79F5


@kernel
def rng_uniform(ist: np.ndarray) -> float:
    """Next uniform number in [0, 1) of the xorshift32 generator kept in ``ist``.

    Marsaglia's 13/17/5 xorshift on 32 bits, in int64 arithmetic so that the compiled and
    the plain-Python kernels draw the same numbers.
    """
    x = ist[IST_RNG]
    x ^= (x << 13) & 0xFFFFFFFF
    x ^= x >> 17
    x ^= (x << 5) & 0xFFFFFFFF
    ist[IST_RNG] = x
    return (x - 1) / 4294967295.0


# -- Levenberg-Marquardt step ---------------------------------------------------------------------
@kernel
def _normal_matrix(
    J: np.ndarray, free: np.ndarray, lam: float, inv_w_rot: float, n: int, S: np.ndarray
) -> None:
    """Lower triangle of ``J W^-1 J^T + lam W_E^-1`` into ``S[:, :6]``.

    ``free`` holds ``W^-1`` (zeros at frozen joints); ``W_E^-1`` is 1 on the position
    rows and ``inv_w_rot`` on the orientation rows; ``lam`` [m^2].
    """
    for r in range(6):
        for c in range(r + 1):
            acc = 0.0
            for i in range(n):
                acc += J[r, i] * J[c, i] * free[i]
            S[r, c] = acc
    for r in range(3):
        S[r, r] += lam
    for r in range(3, 6):
        S[r, r] += lam * inv_w_rot


@kernel
def _cholesky6(S: np.ndarray) -> None:
    """Cholesky ``S = L L^T`` of the 6x6 lower triangle in place; the diagonal keeps 1 / L_cc."""
    for c in range(6):
        d = S[c, c]
        for k in range(c):
            d -= S[c, k] * S[c, k]
        d = 1.0 / math.sqrt(d)
        S[c, c] = d
        for r in range(c + 1, 6):
            acc = S[r, c]
            for k in range(c):
                acc -= S[r, k] * S[c, k]
            S[r, c] = acc * d


@kernel
def _cholesky_solve6(S: np.ndarray, e: np.ndarray) -> None:
    """Solve ``L L^T y = e`` with the factor of :func:`_cholesky6`; ``y`` into ``S[:, 6]``."""
    for r in range(6):
        acc = e[r]
        for k in range(r):
            acc -= S[r, k] * S[k, 6]
        S[r, 6] = acc * S[r, r]
    for r in range(5, -1, -1):
        acc = S[r, 6]
        for k in range(r + 1, 6):
            acc -= S[k, r] * S[k, 6]
        S[r, 6] = acc * S[r, r]


@kernel
def _joint_step(
    P: np.ndarray,
    J: np.ndarray,
    S: np.ndarray,
    q: np.ndarray,
    free: np.ndarray,
    n: int,
    delta_q: np.ndarray,
) -> bool:
    """``delta_q = W^-1 J^T y`` over the free joints, freezing those pushed past a limit.

    A joint resting on a limit whose step points outward gets ``free[i] = 0``.

    Returns:
        Whether a joint was frozen (the step must then be recomputed).
    """
    changed = False
    for i in range(n):
        if free[i] == 0.0:
            delta_q[i] = 0.0
            continue
        acc = 0.0
        for r in range(6):
            acc += J[r, i] * S[r, 6]
        acc *= free[i]
        delta_q[i] = acc
        if (acc < 0.0 and q[i] <= P[i, P_LO]) or (acc > 0.0 and q[i] >= P[i, P_HI]):
            free[i] = 0.0
            changed = True
    return changed


@kernel
def lm_step(
    P: np.ndarray,
    J: np.ndarray,
    e: np.ndarray,
    q: np.ndarray,
    wq: np.ndarray,
    lam: float,
    inv_w_rot: float,
    n: int,
    free: np.ndarray,
    S: np.ndarray,
    delta_q: np.ndarray,
) -> None:
    """Damped step ``delta_q = W^-1 J^T (J W^-1 J^T + lam W_E^-1)^-1 e`` over the free joints.

    A joint resting on a limit whose step points outward is frozen and the step
    recomputed (at most ``n`` times), so the remaining joints do the work instead of
    having their step cut by the projection. The 6x6 system is solved by Cholesky in
    ``S[:, :6]`` (lower triangle) with the solution in ``S[:, 6]``; it is positive
    definite since ``lam > 0``.

    Args:
        P: Joint table (n, 8).
        J: Jacobian (6, n).
        e: Pose error (6) [m, rad].
        q: Current configuration (n) [rad or m].
        wq: Inverse joint weights ``W^-1`` (n).
        lam: Damping ``lambda`` [m^2].
        inv_w_rot: ``1 / w_o``, the orientation block of ``W_E^-1`` [rad^2/m^2].
        n: Number of joints.
        free: Work array (n); receives ``W^-1`` with zeros at frozen joints.
        S: Work array (6, 7).
        delta_q: Output joint displacement (n) [rad or m].
    """
    for i in range(n):
        free[i] = wq[i]
    for _ in range(n + 1):
        _normal_matrix(J, free, lam, inv_w_rot, n, S)
        _cholesky6(S)
        _cholesky_solve6(S, e)
        if not _joint_step(P, J, S, q, free, n, delta_q):
            return


# -- the search -----------------------------------------------------------------------------------
@kernel
def evaluate(
    F: np.ndarray,
    P: np.ndarray,
    T: np.ndarray,
    prm: np.ndarray,
    q: np.ndarray,
    n: int,
    R: np.ndarray,
    p: np.ndarray,
    axes: np.ndarray,
    origins: np.ndarray,
    e: np.ndarray,
    fst: np.ndarray,
    qbest: np.ndarray,
) -> tuple[float, bool]:
    """FK and pose error at ``q``, keeping the best configuration.

    ``E = 1/2 (|e_p|^2 + w_rot |e_o|^2)`` [m^2]. ``q`` is recorded in ``qbest`` (and ``E``
    and the errors in ``fst``) when it is the lowest ``E`` so far or when it meets both
    tolerances, so that a converged search returns the converged configuration.

    Returns:
        ``(E, converged)``.
    """
    chain_kinematics(F, P, q, n, R, p, axes, origins)
    ep, eo = pose_error(T, R, p, e)
    E = 0.5 * (e[0] * e[0] + e[1] * e[1] + e[2] * e[2]) + 0.5 * prm[PRM_W_ROT] * (
        e[3] * e[3] + e[4] * e[4] + e[5] * e[5]
    )
    converged = ep <= prm[PRM_TOL_P] and eo <= prm[PRM_TOL_O]
    if converged or E < fst[FST_E_BEST]:
        fst[FST_E_BEST] = E
        fst[FST_P_BEST] = ep
        fst[FST_O_BEST] = eo
        for i in range(n):
            qbest[i] = q[i]
    return E, converged


@kernel
def ik_run(
    F: np.ndarray,
    P: np.ndarray,
    T: np.ndarray,
    wq: np.ndarray,
    prm: np.ndarray,
    ist: np.ndarray,
    fst: np.ndarray,
    q: np.ndarray,
    qbest: np.ndarray,
    max_iters: int,
    R: np.ndarray,
    p: np.ndarray,
    axes: np.ndarray,
    origins: np.ndarray,
    J: np.ndarray,
    e: np.ndarray,
    S: np.ndarray,
    delta_q: np.ndarray,
    free: np.ndarray,
) -> int:
    """Advance the search by at most ``max_iters`` LM iterations; return the status.

    The state lives in ``ist``/``fst``/``q``/``qbest``, so a call resumes exactly where
    the previous one stopped: ``q`` is the current iterate, ``qbest`` the best so far.
    The other arrays are work space: ``R`` (3, 3), ``p`` (3), ``axes`` and ``origins``
    (n, 3), ``J`` (6, n), ``e`` (6), ``S`` (6, 7), ``delta_q`` and ``free`` (n).

    One iteration: damped step (:func:`lm_step`), projection into the limits, evaluation,
    stagnation test, and a random restart when the attempt is over. The resumption, the
    projection, the stagnation test and the restart stay inline on purpose: numba does
    not inline calls between kernels, and each of them moved to a kernel of its own made
    a search 0.7-10 % slower (measured on the Panda and the UR5, single and batched).

    Returns:
        :data:`RUNNING` (the iterations ran out), :data:`CONVERGED` or
        :data:`RESTARTS_EXHAUSTED`; also stored in ``ist[IST_STATUS]``.
    """
    n = q.shape[0]
    bias = prm[PRM_BIAS]
    stall_ratio = prm[PRM_STALL_RATIO]
    inv_w_rot = 1.0 / prm[PRM_W_ROT]
    if ist[IST_STATUS] != RUNNING:
        return ist[IST_STATUS]
    E, converged = evaluate(F, P, T, prm, q, n, R, p, axes, origins, e, fst, qbest)
    if converged:
        ist[IST_STATUS] = CONVERGED
        return CONVERGED
    if ist[IST_ATTEMPT_ITERS] == 0:
        fst[FST_E_WINDOW] = E
    chain_jacobian(P, n, p, axes, origins, J)
    for _ in range(max_iters):
        ist[IST_ITERS] += 1
        ist[IST_ATTEMPT_ITERS] += 1
        # Sugihara (2011): lambda = E + bias, large far from a solution, small near it.
        lm_step(P, J, e, q, wq, E + bias, inv_w_rot, n, free, S, delta_q)
        # q <- clip(q + delta_q) into the limits.
        for i in range(n):
            v = q[i] + delta_q[i]
            if v < P[i, P_LO]:
                v = P[i, P_LO]
            elif v > P[i, P_HI]:
                v = P[i, P_HI]
            q[i] = v
        E, converged = evaluate(F, P, T, prm, q, n, R, p, axes, origins, e, fst, qbest)
        if converged:
            ist[IST_STATUS] = CONVERGED
            return CONVERGED
        restart = ist[IST_ATTEMPT_ITERS] >= ist[IST_ATTEMPT_CAP]
        if ist[IST_ATTEMPT_ITERS] % ist[IST_WINDOW] == 0:
            # Stagnation: E did not shrink by the required share over the window.
            if E > stall_ratio * fst[FST_E_WINDOW]:
                restart = True
            fst[FST_E_WINDOW] = E
        if restart:
            # A new attempt from a uniform draw inside the sampling ranges, if one is left.
            if ist[IST_RESTARTS] >= ist[IST_MAX_RESTARTS]:
                ist[IST_STATUS] = RESTARTS_EXHAUSTED
                return RESTARTS_EXHAUSTED
            ist[IST_RESTARTS] += 1
            ist[IST_ATTEMPT_ITERS] = 0
            for i in range(n):
                u = rng_uniform(ist)
                q[i] = P[i, P_SAMPLE_LO] + u * (P[i, P_SAMPLE_HI] - P[i, P_SAMPLE_LO])
            E, converged = evaluate(F, P, T, prm, q, n, R, p, axes, origins, e, fst, qbest)
            fst[FST_E_WINDOW] = E
            if converged:
                ist[IST_STATUS] = CONVERGED
                return CONVERGED
        chain_jacobian(P, n, p, axes, origins, J)
    return RUNNING


@kernel
def ik_kernel(
    F: np.ndarray,
    P: np.ndarray,
    T: np.ndarray,
    wq: np.ndarray,
    prm: np.ndarray,
    ist: np.ndarray,
    fst: np.ndarray,
    q: np.ndarray,
    qbest: np.ndarray,
    max_iters: int,
) -> int:
    """One chunk of at most ``max_iters`` LM iterations of a single query (resumable).

    Allocates the work space and runs :func:`ik_run`; returns its status.
    """
    n = q.shape[0]
    R = np.empty((3, 3))
    p = np.empty(3)
    axes = np.empty((n, 3))
    origins = np.empty((n, 3))
    J = np.empty((6, n))
    e = np.empty(6)
    delta_q = np.empty(n)
    free = np.empty(n)
    S = np.empty((6, 7))
    return ik_run(
        F, P, T, wq, prm, ist, fst, q, qbest, max_iters, R, p, axes, origins, J, e, S, delta_q, free
    )


# -- input checks ---------------------------------------------------------------------------------
@kernel
def _finite_target(R_in: np.ndarray, p_in: np.ndarray) -> bool:
    """Whether every entry of ``R_in`` (3x3) and ``p_in`` (3) is finite."""
    for r in range(3):
        if not math.isfinite(p_in[r]):
            return False
        for c in range(3):
            if not math.isfinite(R_in[r, c]):
                return False
    return True


@kernel
def _is_rotation(R_in: np.ndarray, tol: float) -> bool:
    """Whether ``R_in`` is a rotation within ``tol`` on ``R^T R - I`` and ``det R - 1``."""
    for r in range(3):
        for c in range(3):
            g = R_in[0, r] * R_in[0, c] + R_in[1, r] * R_in[1, c] + R_in[2, r] * R_in[2, c]
            if r == c:
                g -= 1.0
            if abs(g) > tol:
                return False
    det = (
        R_in[0, 0] * (R_in[1, 1] * R_in[2, 2] - R_in[1, 2] * R_in[2, 1])
        - R_in[0, 1] * (R_in[1, 0] * R_in[2, 2] - R_in[1, 2] * R_in[2, 0])
        + R_in[0, 2] * (R_in[1, 0] * R_in[2, 1] - R_in[1, 1] * R_in[2, 0])
    )
    return abs(det - 1.0) <= tol


@kernel
def _clip_seed(seed: np.ndarray, P: np.ndarray, q: np.ndarray) -> bool:
    """Copy ``seed`` clipped into the limits into ``q``; False at a non-finite entry."""
    for i in range(seed.shape[0]):
        v = seed[i]
        if not math.isfinite(v):
            return False
        if v < P[i, P_LO]:
            v = P[i, P_LO]
        elif v > P[i, P_HI]:
            v = P[i, P_HI]
        q[i] = v
    return True


@kernel
def prepare_kernel(
    R_in: np.ndarray,
    p_in: np.ndarray,
    seed: np.ndarray,
    P: np.ndarray,
    tol: float,
    T: np.ndarray,
    q: np.ndarray,
) -> int:
    """Copy a validated target into ``T`` (3x4) and the seed, clipped, into ``q``.

    Returns:
        0, or 1 when an entry is not finite or ``R_in`` is not a rotation (within ``tol``
        on ``R^T R - I`` and ``det R - 1``); the caller then raises the typed error.
    """
    if not (_finite_target(R_in, p_in) and _is_rotation(R_in, tol) and _clip_seed(seed, P, q)):
        return 1
    for r in range(3):
        for c in range(3):
            T[r, c] = R_in[r, c]
        T[r, 3] = p_in[r]
    return 0


# -- batches --------------------------------------------------------------------------------------
@kernel
def ik_batch_kernel(
    F: np.ndarray,
    P: np.ndarray,
    targets: np.ndarray,
    seeds: np.ndarray,
    wq: np.ndarray,
    prm: np.ndarray,
    ist0: np.ndarray,
    max_iters: int,
    out: np.ndarray,
) -> None:
    """Solve each target from its seed with an iteration cap; rows ``[iters, residual, q]``.

    Each target starts from a copy of ``ist0`` (same generator state, same caps) and
    runs :func:`ik_run` for at most ``max_iters`` iterations; the residual is
    ``sqrt(|e_p|^2 + |e_o|^2)`` [m, rad] of the best configuration. ``out[k, 2 + n]``
    receives the status code (scratch column, dropped by the caller).
    """
    N = targets.shape[0]
    n = seeds.shape[1]
    R = np.empty((3, 3))
    p = np.empty(3)
    axes = np.empty((n, 3))
    origins = np.empty((n, 3))
    J = np.empty((6, n))
    e = np.empty(6)
    delta_q = np.empty(n)
    free = np.empty(n)
    S = np.empty((6, 7))
    ist = np.empty(ist0.shape[0], dtype=np.int64)
    fst = np.empty(FST_COUNT)
    q = np.empty(n)
    qbest = np.empty(n)
    for k in range(N):
        for i in range(ist0.shape[0]):
            ist[i] = ist0[i]
        for i in range(fst.shape[0]):
            fst[i] = np.inf
        for i in range(n):
            q[i] = seeds[k, i]
            qbest[i] = seeds[k, i]
        T = targets[k]
        status = ik_run(
            F,
            P,
            T,
            wq,
            prm,
            ist,
            fst,
            q,
            qbest,
            max_iters,
            R,
            p,
            axes,
            origins,
            J,
            e,
            S,
            delta_q,
            free,
        )
        chain_kinematics(F, P, qbest, n, R, p, axes, origins)
        ep, eo = pose_error(T, R, p, e)
        out[k, 0] = ist[IST_ITERS]
        out[k, 1] = math.sqrt(ep * ep + eo * eo)
        for i in range(n):
            out[k, 2 + i] = qbest[i]
        out[k, 2 + n] = status
