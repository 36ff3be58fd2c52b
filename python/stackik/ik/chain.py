"""Serial kinematic chains with compiled forward kinematics and a global pose IK.

:class:`SerialChain` extracts the joints on the path from a base frame to a tip frame
of a Pinocchio model into flat arrays, and runs the forward kinematics, the Jacobian and
a complete inverse-kinematics search as numba-compiled loops (see :mod:`stackik._jit`;
numba is imported on the first call, never by ``import stackik``).

The IK is a projected Levenberg-Marquardt method on the 6-D pose error

    e = [p* - p ; log3(R* R^T)]        (world axes; metres and radians)

with the error-dependent damping of T. Sugihara, "Solvability-unconcerned inverse
kinematics by the Levenberg-Marquardt method", IEEE T-RO 27(5), 2011:
``lambda = E + lambda_bias`` with ``E = 1/2 e^T W_E e``. Joint limits are handled as
bounds: a joint resting on a limit whose step points outward is removed from the step
(active set) and the rest is projected into the limits. When an attempt stagnates, the
search restarts from a uniformly drawn configuration inside the limits (a seeded
xorshift generator inside the kernel makes every run reproducible), keeping the best
configuration seen. A wall-clock budget is enforced in Python between compiled chunks
of iterations.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from .. import _validate
from .._jit import lazy_njit
from ..errors import FrameNotFound, InvalidInput
from ..spatial import ROTATION_TOLERANCE, as_se3, check_pose_stack, check_rotation

if TYPE_CHECKING:
    from ..model.robot import RobotModel

__all__ = ["ChainIKResult", "SerialChain"]

# Joint kinds in the kernel tables.
_REVOLUTE = 0
_PRISMATIC = 1

_REVOLUTE_KINDS = (
    "JointModelRX",
    "JointModelRY",
    "JointModelRZ",
    "JointModelRevoluteUnaligned",
)
_PRISMATIC_KINDS = ("JointModelPX", "JointModelPY", "JointModelPZ", "JointModelPrismaticUnaligned")
_CONTINUOUS_KINDS = (
    "JointModelRUBX",
    "JointModelRUBY",
    "JointModelRUBZ",
    "JointModelRevoluteUnboundedUnaligned",
)

#: Magnitude from which a Pinocchio position limit counts as unbounded.
_UNBOUNDED = 1e10
#: Half-width of the range restarts draw an unbounded revolute joint from [rad].
_UNBOUNDED_REVOLUTE_RANGE = math.pi
#: Half-width of the range restarts draw an unbounded prismatic joint from [m].
_UNBOUNDED_PRISMATIC_RANGE = 1.0

#: Columns of the placement table ``F``: a row-major rotation, then a translation.
_F_COLS = 12

# Columns of the joint table ``P`` (one row per joint).
_P_AXIS = 0  # 0..2: unit axis in the joint frame
_P_KIND = 3
_P_LO = 4
_P_HI = 5
_P_SAMPLE_LO = 6
_P_SAMPLE_HI = 7
_P_COLS = 8

# Float parameters of the IK kernel (``prm``).
_PRM_TOL_P = 0
_PRM_TOL_O = 1
_PRM_W_ROT = 2
_PRM_BIAS = 3
_PRM_STALL_RATIO = 4
_PRM_COUNT = 5

# Integer state of the IK kernel (``ist``).
_IST_RNG = 0
_IST_ITERS = 1
_IST_RESTARTS = 2
_IST_ATTEMPT_ITERS = 3
_IST_STATUS = 4
_IST_MAX_RESTARTS = 5
_IST_WINDOW = 6
_IST_ATTEMPT_CAP = 7
_IST_COUNT = 8

# Float state of the IK kernel (``fst``).
_FST_E_BEST = 0
_FST_P_BEST = 1
_FST_O_BEST = 2
_FST_E_WINDOW = 3
_FST_COUNT = 4

# Kernel status codes.
_RUNNING = 0
_CONVERGED = 1
_RESTARTS_EXHAUSTED = 2

#: Iterations between two stagnation checks of one attempt.
_STALL_WINDOW = 8
#: Default share of ``E`` an attempt must shed per window to keep going.
_DEFAULT_STALL_RATIO = 0.5
#: Default cap on the iterations of one attempt before a restart.
_DEFAULT_ATTEMPT_CAP = 100
#: Default damping bias ``lambda_bias`` of Sugihara's rule [m^2] (Sugihara's 1e-3 is far
#: too slow near singular configurations: the singular direction converges at the rate
#: ``lambda / (sigma^2 + lambda)``).
DEFAULT_DAMPING_BIAS = 1e-6
#: Iterations of the first compiled chunk of a timed solve.
_FIRST_CHUNK = 400


# -- compiled kernels -------------------------------------------------------------------------
# Helpers are plain functions rebound to numba dispatchers by ``_kernels()`` before the
# ``lazy_njit`` entry points compile (a compiled function can only call compiled ones).


def _chain_kin(F, P, q, n, R, p, axes, origins):
    """Tip pose ``(R, p)`` and each joint's base-frame axis and origin.

    ``F[i]`` (12 = row-major R, then p) is joint i's fixed placement in the previous
    joint's frame (``F[n]``: the tip in the last joint's frame). Joint i's frame is
    ``T_{i-1} F[i] X(q_i)`` with ``X`` a rotation about (or a translation along) the axis.
    """
    r00 = 1.0
    r01 = 0.0
    r02 = 0.0
    r10 = 0.0
    r11 = 1.0
    r12 = 0.0
    r20 = 0.0
    r21 = 0.0
    r22 = 1.0
    px = 0.0
    py = 0.0
    pz = 0.0
    for i in range(n + 1):
        f = F[i]
        # M = T F[i]
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
        px = nx
        py = ny
        pz = nz
        if i == n:  # the tip: a fixed placement only
            r00 = m00
            r01 = m01
            r02 = m02
            r10 = m10
            r11 = m11
            r12 = m12
            r20 = m20
            r21 = m21
            r22 = m22
            break
        a0 = P[i, _P_AXIS]
        a1 = P[i, _P_AXIS + 1]
        a2 = P[i, _P_AXIS + 2]
        wx = m00 * a0 + m01 * a1 + m02 * a2
        wy = m10 * a0 + m11 * a1 + m12 * a2
        wz = m20 * a0 + m21 * a1 + m22 * a2
        axes[i, 0] = wx
        axes[i, 1] = wy
        axes[i, 2] = wz
        origins[i, 0] = px
        origins[i, 1] = py
        origins[i, 2] = pz
        if P[i, _P_KIND] == _PRISMATIC:  # translate along the axis
            px += wx * q[i]
            py += wy * q[i]
            pz += wz * q[i]
            r00 = m00
            r01 = m01
            r02 = m02
            r10 = m10
            r11 = m11
            r12 = m12
            r20 = m20
            r21 = m21
            r22 = m22
            continue
        # Rodrigues by columns: column k of M Rot(a, q) is
        # c M e_k + s M (a x e_k) + (1 - c) a_k (M a).
        c = math.cos(q[i])
        s = math.sin(q[i])
        t = 1.0 - c
        r00 = c * m00 + s * (a2 * m01 - a1 * m02) + t * a0 * wx
        r10 = c * m10 + s * (a2 * m11 - a1 * m12) + t * a0 * wy
        r20 = c * m20 + s * (a2 * m21 - a1 * m22) + t * a0 * wz
        r01 = c * m01 + s * (a0 * m02 - a2 * m00) + t * a1 * wx
        r11 = c * m11 + s * (a0 * m12 - a2 * m10) + t * a1 * wy
        r21 = c * m21 + s * (a0 * m22 - a2 * m20) + t * a1 * wz
        r02 = c * m02 + s * (a1 * m00 - a0 * m01) + t * a2 * wx
        r12 = c * m12 + s * (a1 * m10 - a0 * m11) + t * a2 * wy
        r22 = c * m22 + s * (a1 * m20 - a0 * m21) + t * a2 * wz
    R[0, 0] = r00
    R[0, 1] = r01
    R[0, 2] = r02
    R[1, 0] = r10
    R[1, 1] = r11
    R[1, 2] = r12
    R[2, 0] = r20
    R[2, 1] = r21
    R[2, 2] = r22
    p[0] = px
    p[1] = py
    p[2] = pz


def _chain_jac(P, n, p, axes, origins, J):
    """World-aligned 6 x n Jacobian of the tip at ``p`` from the axes and origins."""
    for i in range(n):
        wx = axes[i, 0]
        wy = axes[i, 1]
        wz = axes[i, 2]
        if P[i, _P_KIND] == _PRISMATIC:
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


def _pose_error(T, R, p, e):
    """``e = [p* - p ; log3(R* R^T)]`` for the target ``T`` (3x4); returns ``(|e_p|, |e_o|)``.

    ``log3`` uses ``theta = atan2(|vee| / 2, (tr - 1) / 2)``, accurate at both ends, and
    the symmetric part of the rotation near ``theta = pi`` where ``vee`` vanishes.
    """
    e[0] = T[0, 3] - p[0]
    e[1] = T[1, 3] - p[1]
    e[2] = T[2, 3] - p[2]
    # D = R* R^T
    d00 = T[0, 0] * R[0, 0] + T[0, 1] * R[0, 1] + T[0, 2] * R[0, 2]
    d01 = T[0, 0] * R[1, 0] + T[0, 1] * R[1, 1] + T[0, 2] * R[1, 2]
    d02 = T[0, 0] * R[2, 0] + T[0, 1] * R[2, 1] + T[0, 2] * R[2, 2]
    d10 = T[1, 0] * R[0, 0] + T[1, 1] * R[0, 1] + T[1, 2] * R[0, 2]
    d11 = T[1, 0] * R[1, 0] + T[1, 1] * R[1, 1] + T[1, 2] * R[1, 2]
    d12 = T[1, 0] * R[2, 0] + T[1, 1] * R[2, 1] + T[1, 2] * R[2, 2]
    d20 = T[2, 0] * R[0, 0] + T[2, 1] * R[0, 1] + T[2, 2] * R[0, 2]
    d21 = T[2, 0] * R[1, 0] + T[2, 1] * R[1, 1] + T[2, 2] * R[1, 2]
    d22 = T[2, 0] * R[2, 0] + T[2, 1] * R[2, 1] + T[2, 2] * R[2, 2]
    vx = d21 - d12
    vy = d02 - d20
    vz = d10 - d01
    sn = 0.5 * math.sqrt(vx * vx + vy * vy + vz * vz)
    cs = 0.5 * (d00 + d11 + d22 - 1.0)
    theta = math.atan2(sn, cs)
    if cs > 0.0 or sn > 1e-3:
        k = 0.5 if sn < 1e-12 else 0.5 * theta / sn
        e[3] = k * vx
        e[4] = k * vy
        e[5] = k * vz
    else:
        # Near pi: D ~ 2 a a^T - I; take the axis from the largest diagonal entry.
        inv = 1.0 / (1.0 - cs)
        if d00 >= d11 and d00 >= d22:
            ax = math.sqrt(max((d00 - cs) * inv, 0.0))
            ay = 0.5 * (d01 + d10) * inv / ax
            az = 0.5 * (d02 + d20) * inv / ax
        elif d11 >= d22:
            ay = math.sqrt(max((d11 - cs) * inv, 0.0))
            ax = 0.5 * (d01 + d10) * inv / ay
            az = 0.5 * (d12 + d21) * inv / ay
        else:
            az = math.sqrt(max((d22 - cs) * inv, 0.0))
            ax = 0.5 * (d02 + d20) * inv / az
            ay = 0.5 * (d12 + d21) * inv / az
        if ax * vx + ay * vy + az * vz < 0.0:
            ax = -ax
            ay = -ay
            az = -az
        nrm = math.sqrt(ax * ax + ay * ay + az * az)
        e[3] = theta * ax / nrm
        e[4] = theta * ay / nrm
        e[5] = theta * az / nrm
    return math.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]), theta


def _rng_uniform(ist):
    """Next uniform number in [0, 1) of the xorshift32 generator kept in ``ist``.

    Marsaglia's 13/17/5 xorshift on 32 bits, in int64 arithmetic so that the compiled and
    the plain-Python kernels draw the same numbers.
    """
    x = ist[_IST_RNG]
    x ^= (x << 13) & 0xFFFFFFFF
    x ^= x >> 17
    x ^= (x << 5) & 0xFFFFFFFF
    ist[_IST_RNG] = x
    return (x - 1) / 4294967295.0


def _evaluate(F, P, T, prm, q, n, R, p, axes, origins, e, fst, qbest):
    """FK and pose error at ``q``; returns ``(E, converged)``.

    ``E = 1/2 (|e_p|^2 + w_rot |e_o|^2)``. ``q`` is recorded in ``qbest`` (and ``E`` and
    the errors in ``fst``) when it is the lowest ``E`` so far or when it meets both
    tolerances, so that a converged search returns the converged configuration.
    """
    _chain_kin(F, P, q, n, R, p, axes, origins)
    ep, eo = _pose_error(T, R, p, e)
    E = 0.5 * (e[0] * e[0] + e[1] * e[1] + e[2] * e[2]) + 0.5 * prm[_PRM_W_ROT] * (
        e[3] * e[3] + e[4] * e[4] + e[5] * e[5]
    )
    converged = ep <= prm[_PRM_TOL_P] and eo <= prm[_PRM_TOL_O]
    if converged or E < fst[_FST_E_BEST]:
        fst[_FST_E_BEST] = E
        fst[_FST_P_BEST] = ep
        fst[_FST_O_BEST] = eo
        for i in range(n):
            qbest[i] = q[i]
    return E, converged


def _lm_step(P, J, e, q, wq, lam, inv_w_rot, n, free, S, dq):
    """Damped step ``dq = W^-1 J^T (J W^-1 J^T + lam W_E^-1)^-1 e`` over the free joints.

    A joint resting on a limit whose step points outward is frozen and the step
    recomputed (at most ``n`` times), so the remaining joints do the work instead of
    having their step cut by the projection. The 6x6 system is solved by Cholesky in
    ``S[:, :6]`` (lower triangle) with the solution in ``S[:, 6]``; it is positive
    definite since ``lam > 0``. ``free`` receives ``W^-1`` with zeros at frozen joints.
    """
    for i in range(n):
        free[i] = wq[i]
    for _ in range(n + 1):
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
        # Cholesky S = L L^T in place; the diagonal keeps 1 / L_cc.
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
        changed = False
        for i in range(n):
            if free[i] == 0.0:
                dq[i] = 0.0
                continue
            acc = 0.0
            for r in range(6):
                acc += J[r, i] * S[r, 6]
            acc *= free[i]
            dq[i] = acc
            if (acc < 0.0 and q[i] <= P[i, _P_LO]) or (acc > 0.0 and q[i] >= P[i, _P_HI]):
                free[i] = 0.0
                changed = True
        if not changed:
            return


def _ik_run(
    F, P, T, wq, prm, ist, fst, q, qbest, max_iters, R, p, axes, origins, J, e, S, dq, free
):
    """Advance the search by at most ``max_iters`` LM iterations; return the status.

    The state lives in ``ist``/``fst``/``q``/``qbest``, so a call resumes exactly where
    the previous one stopped: ``q`` is the current iterate, ``qbest`` the best so far.
    The other arrays are work space: ``R`` (3, 3), ``p`` (3), ``axes`` and ``origins``
    (n, 3), ``J`` (6, n), ``e`` (6), ``S`` (6, 7), ``dq`` and ``free`` (n).
    """
    n = q.shape[0]
    bias = prm[_PRM_BIAS]
    stall_ratio = prm[_PRM_STALL_RATIO]
    inv_w_rot = 1.0 / prm[_PRM_W_ROT]
    if ist[_IST_STATUS] != _RUNNING:
        return ist[_IST_STATUS]
    E, converged = _evaluate(F, P, T, prm, q, n, R, p, axes, origins, e, fst, qbest)
    if converged:
        ist[_IST_STATUS] = _CONVERGED
        return _CONVERGED
    if ist[_IST_ATTEMPT_ITERS] == 0:
        fst[_FST_E_WINDOW] = E
    _chain_jac(P, n, p, axes, origins, J)
    for _ in range(max_iters):
        ist[_IST_ITERS] += 1
        ist[_IST_ATTEMPT_ITERS] += 1
        # Sugihara (2011): lambda = E + bias, large far from a solution, small near it.
        _lm_step(P, J, e, q, wq, E + bias, inv_w_rot, n, free, S, dq)
        for i in range(n):
            v = q[i] + dq[i]
            if v < P[i, _P_LO]:
                v = P[i, _P_LO]
            elif v > P[i, _P_HI]:
                v = P[i, _P_HI]
            q[i] = v
        E, converged = _evaluate(F, P, T, prm, q, n, R, p, axes, origins, e, fst, qbest)
        if converged:
            ist[_IST_STATUS] = _CONVERGED
            return _CONVERGED
        restart = ist[_IST_ATTEMPT_ITERS] >= ist[_IST_ATTEMPT_CAP]
        if ist[_IST_ATTEMPT_ITERS] % ist[_IST_WINDOW] == 0:
            # Stagnation: E did not shrink by the required share over the window.
            if E > stall_ratio * fst[_FST_E_WINDOW]:
                restart = True
            fst[_FST_E_WINDOW] = E
        if restart:
            if ist[_IST_RESTARTS] >= ist[_IST_MAX_RESTARTS]:
                ist[_IST_STATUS] = _RESTARTS_EXHAUSTED
                return _RESTARTS_EXHAUSTED
            ist[_IST_RESTARTS] += 1
            ist[_IST_ATTEMPT_ITERS] = 0
            for i in range(n):
                u = _rng_uniform(ist)
                q[i] = P[i, _P_SAMPLE_LO] + u * (P[i, _P_SAMPLE_HI] - P[i, _P_SAMPLE_LO])
            E, converged = _evaluate(F, P, T, prm, q, n, R, p, axes, origins, e, fst, qbest)
            fst[_FST_E_WINDOW] = E
            if converged:
                ist[_IST_STATUS] = _CONVERGED
                return _CONVERGED
        _chain_jac(P, n, p, axes, origins, J)
    return _RUNNING


_HELPERS = (
    "_chain_kin",
    "_chain_jac",
    "_pose_error",
    "_rng_uniform",
    "_evaluate",
    "_lm_step",
    "_ik_run",
)
_PY_HELPERS = {name: globals()[name] for name in _HELPERS}


@lazy_njit
def _fk_kernel(F, P, q, R, p):
    """Tip pose of the chain at ``q`` into ``R`` (3x3) and ``p`` (3)."""
    n = q.shape[0]
    axes = np.empty((n, 3))
    origins = np.empty((n, 3))
    _chain_kin(F, P, q, n, R, p, axes, origins)


@lazy_njit
def _jacobian_kernel(F, P, q, R, p, J):
    """Tip pose and world-aligned Jacobian of the chain at ``q``."""
    n = q.shape[0]
    axes = np.empty((n, 3))
    origins = np.empty((n, 3))
    _chain_kin(F, P, q, n, R, p, axes, origins)
    _chain_jac(P, n, p, axes, origins, J)


@lazy_njit
def _ik_kernel(F, P, T, wq, prm, ist, fst, q, qbest, max_iters):
    """One chunk of at most ``max_iters`` LM iterations of a single query (resumable)."""
    n = q.shape[0]
    R = np.empty((3, 3))
    p = np.empty(3)
    axes = np.empty((n, 3))
    origins = np.empty((n, 3))
    J = np.empty((6, n))
    e = np.empty(6)
    dq = np.empty(n)
    free = np.empty(n)
    S = np.empty((6, 7))
    return _ik_run(
        F, P, T, wq, prm, ist, fst, q, qbest, max_iters, R, p, axes, origins, J, e, S, dq, free
    )


@lazy_njit
def _prepare_kernel(R_in, p_in, seed, P, tol, T, q):
    """Copy a validated target into ``T`` (3x4) and the seed, clipped, into ``q``.

    Returns 0, or 1 when an entry is not finite or ``R_in`` is not a rotation (within
    ``tol`` on ``R^T R - I`` and ``det R - 1``); the caller then raises the typed error.
    """
    for r in range(3):
        if not math.isfinite(p_in[r]):
            return 1
        for c in range(3):
            if not math.isfinite(R_in[r, c]):
                return 1
    for r in range(3):
        for c in range(3):
            g = R_in[0, r] * R_in[0, c] + R_in[1, r] * R_in[1, c] + R_in[2, r] * R_in[2, c]
            if r == c:
                g -= 1.0
            if abs(g) > tol:
                return 1
    det = (
        R_in[0, 0] * (R_in[1, 1] * R_in[2, 2] - R_in[1, 2] * R_in[2, 1])
        - R_in[0, 1] * (R_in[1, 0] * R_in[2, 2] - R_in[1, 2] * R_in[2, 0])
        + R_in[0, 2] * (R_in[1, 0] * R_in[2, 1] - R_in[1, 1] * R_in[2, 0])
    )
    if abs(det - 1.0) > tol:
        return 1
    for i in range(seed.shape[0]):
        v = seed[i]
        if not math.isfinite(v):
            return 1
        if v < P[i, _P_LO]:
            v = P[i, _P_LO]
        elif v > P[i, _P_HI]:
            v = P[i, _P_HI]
        q[i] = v
    for r in range(3):
        for c in range(3):
            T[r, c] = R_in[r, c]
        T[r, 3] = p_in[r]
    return 0


@lazy_njit
def _ik_batch_kernel(F, P, targets, seeds, wq, prm, ist0, max_iters, out):
    """Solve each target from its seed with an iteration cap; rows ``[iters, residual, q]``.

    ``out[k, 2 + n]`` receives the status code (scratch column, dropped by the caller).
    """
    N = targets.shape[0]
    n = seeds.shape[1]
    R = np.empty((3, 3))
    p = np.empty(3)
    axes = np.empty((n, 3))
    origins = np.empty((n, 3))
    J = np.empty((6, n))
    e = np.empty(6)
    dq = np.empty(n)
    free = np.empty(n)
    S = np.empty((6, 7))
    ist = np.empty(ist0.shape[0], dtype=np.int64)
    fst = np.empty(_FST_COUNT)
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
        status = _ik_run(
            F, P, T, wq, prm, ist, fst, q, qbest, max_iters, R, p, axes, origins, J, e, S, dq, free
        )
        _chain_kin(F, P, qbest, n, R, p, axes, origins)
        ep, eo = _pose_error(T, R, p, e)
        out[k, 0] = ist[_IST_ITERS]
        out[k, 1] = math.sqrt(ep * ep + eo * eo)
        for i in range(n):
            out[k, 2 + i] = qbest[i]
        out[k, 2 + n] = status


_state: dict[str, Any] = {}


def _kernels() -> None:
    """Compile the helpers with numba (once) so that the entry kernels can call them."""
    if _state.get("ready"):
        return
    try:
        import numba
    except ImportError:  # pragma: no cover - numba is a dependency
        pass
    else:
        g = globals()
        for name in _HELPERS:
            g[name] = numba.njit(cache=True, nogil=True)(_PY_HELPERS[name])
    _state["ready"] = True


def _rng_state(rng_seed: int) -> int:
    """Nonzero 32-bit xorshift state from a user seed (SplitMix64 finaliser)."""
    z = (int(rng_seed) + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    z ^= z >> 31
    return (z & 0xFFFFFFFF) or 0x6D2B79F5


# -- public API -------------------------------------------------------------------------------
@dataclass(slots=True)
class ChainIKResult:
    """Outcome of :meth:`SerialChain.solve`.

    Attributes:
        q: Chain configuration [rad or m per joint], inside the joint limits: the solution
            when ``success``, otherwise the best configuration found (lowest weighted
            error ``E``).
        success: Both tolerances were met.
        iterations: LM iterations over all attempts.
        restarts: Random restarts performed.
        position_error: ``|p* - p(q)|`` [m].
        orientation_error: Angle of ``R* R(q)^T`` [rad].
        time_ms: Wall-clock time of the call [ms].
    """

    q: np.ndarray
    success: bool
    iterations: int
    restarts: int
    position_error: float
    orientation_error: float
    time_ms: float


class SerialChain:
    """The joints between a base frame and a tip frame, as flat arrays for compiled kernels.

    Build with :meth:`from_model` or :meth:`from_robot`. Poses are those of the tip frame
    expressed in the base frame (the world when no base frame is given); the chain
    configuration ``q`` holds one value per joint on the path, root to tip: an angle [rad]
    for revolute and continuous joints, a displacement [m] for prismatic ones.

    Attributes:
        model: The Pinocchio model the chain was extracted from.
        tip_frame: Name of the tip frame.
        base_frame: Name of the base frame (``None``: the world).
        joint_names: Names of the chain's joints, root to tip.
        joint_ids: Their Pinocchio joint indices.
        idx_q: Index of each joint's first entry in the model's ``q``.
        idx_v: Index of each joint in the model's ``v``.
        continuous: Whether each joint is a continuous (cos/sin, ``nq = 2``) joint.
        lower: Lower limits [rad or m] (``-inf`` when unbounded); a copy, read only.
        upper: Upper limits [rad or m] (``inf`` when unbounded); a copy, read only.
    """

    def __init__(
        self,
        model: pin.Model,
        tip_frame: str,
        base_frame: str | None,
        joint_ids: list[int],
        placements: np.ndarray,
        table: np.ndarray,
    ) -> None:
        self.model = model
        self.tip_frame = tip_frame
        self.base_frame = base_frame
        self.joint_ids = list(joint_ids)
        self.joint_names = [model.names[j] for j in joint_ids]
        self.idx_q = np.array([model.joints[j].idx_q for j in joint_ids], dtype=np.int64)
        self.idx_v = np.array([model.joints[j].idx_v for j in joint_ids], dtype=np.int64)
        self.continuous = np.array(
            [model.joints[j].shortname() in _CONTINUOUS_KINDS for j in joint_ids], dtype=bool
        )
        self._F = np.ascontiguousarray(placements, dtype=float)
        self._P = np.ascontiguousarray(table, dtype=float)
        self.lower = self._P[:, _P_LO].copy()
        self.upper = self._P[:, _P_HI].copy()
        self._ns_per_iteration: float | None = None
        # Kernel options of the last call without joint weights (reused while unchanged).
        self._options_key: tuple[Any, ...] | None = None
        self._options: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_model(
        cls, model: pin.Model, tip_frame: str, base_frame: str | None = None
    ) -> SerialChain:
        """Extract the chain from ``base_frame`` (or the world) to ``tip_frame``.

        Args:
            model: Pinocchio model.
            tip_frame: Name of the tip frame (any frame: body, joint, fixed or operational).
            base_frame: Name of a frame on the path from the world to the tip; joints up to
                and including its parent joint are excluded and poses are expressed in it.
                ``None``: the world frame.

        Returns:
            The chain.

        Raises:
            FrameNotFound: A frame name is unknown.
            InvalidInput: The base frame is not on the tip's path, there is no joint
                between them, or a joint on the path is not revolute, prismatic or
                continuous (free-flyer, spherical, planar, helical, mimic, ...).
        """
        if not isinstance(model, pin.Model):
            raise InvalidInput(f"model must be a pinocchio.Model, got {type(model).__name__}")
        tip_id = _frame_id(model, tip_frame)
        tip = model.frames[tip_id]
        support = list(model.supports[tip.parentJoint])  # universe ... tip joint
        if base_frame is None:
            base_joint = 0
            M_joint_base = pin.SE3.Identity()
        else:
            base = model.frames[_frame_id(model, base_frame)]
            base_joint = base.parentJoint
            if base_joint not in support:
                raise InvalidInput(
                    f"base frame {base_frame!r} is not on the path from the world to "
                    f"{tip_frame!r} (its joint {model.names[base_joint]!r} does not support it)"
                )
            M_joint_base = pin.SE3(base.placement)
        joint_ids = support[support.index(base_joint) + 1 :]
        if not joint_ids:
            raise InvalidInput(f"no joint between {base_frame or 'the world'!r} and {tip_frame!r}")
        n = len(joint_ids)
        F = np.zeros((n + 1, _F_COLS))
        P = np.zeros((n, _P_COLS))
        prev = M_joint_base.inverse()
        q_neutral = pin.neutral(model)
        for i, jid in enumerate(joint_ids):
            jm = model.joints[jid]
            kind = jm.shortname()
            name = model.names[jid]
            if kind in _REVOLUTE_KINDS or kind in _CONTINUOUS_KINDS:
                code = _REVOLUTE
            elif kind in _PRISMATIC_KINDS:
                code = _PRISMATIC
            else:
                raise InvalidInput(
                    f"joint {name!r} on the chain to {tip_frame!r} has type {kind}; only "
                    "revolute, prismatic and continuous joints are supported"
                )
            M = prev * model.jointPlacements[jid]
            prev = pin.SE3.Identity()
            jd = jm.createData()
            jm.calc(jd, q_neutral)
            S = np.asarray(jd.S).reshape(6)
            axis = S[3:] if code == _REVOLUTE else S[:3]
            axis = axis / np.linalg.norm(axis)
            F[i] = _placement_row(M)
            P[i, 0:3] = axis
            P[i, _P_KIND] = code
            if kind in _CONTINUOUS_KINDS:
                lo, hi = -np.inf, np.inf
            else:
                lo = float(model.lowerPositionLimit[jm.idx_q])
                hi = float(model.upperPositionLimit[jm.idx_q])
                lo = -np.inf if lo <= -_UNBOUNDED else lo
                hi = np.inf if hi >= _UNBOUNDED else hi
            if lo > hi:
                raise InvalidInput(f"joint {name!r}: lower limit {lo} > upper limit {hi}")
            P[i, _P_LO] = lo
            P[i, _P_HI] = hi
            half = _UNBOUNDED_REVOLUTE_RANGE if code == _REVOLUTE else _UNBOUNDED_PRISMATIC_RANGE
            P[i, _P_SAMPLE_LO] = (
                lo if np.isfinite(lo) else (hi - 2 * half if np.isfinite(hi) else -half)
            )
            P[i, _P_SAMPLE_HI] = hi if np.isfinite(hi) else P[i, _P_SAMPLE_LO] + 2 * half
        F[n] = _placement_row(prev * tip.placement)
        return cls(model, tip_frame, base_frame, joint_ids, F, P)

    @classmethod
    def from_robot(
        cls, robot: RobotModel, tip_frame: str, base_frame: str | None = None
    ) -> SerialChain:
        """Extract the chain of a :class:`~stackik.model.RobotModel` (see :meth:`from_model`)."""
        return cls.from_model(robot.model, tip_frame, base_frame)

    # -- sizes and mapping ---------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of joints (degrees of freedom) of the chain."""
        return self._P.shape[0]

    def to_full(self, q_chain: object, q_ref: object | None = None) -> np.ndarray:
        """Model configuration with the chain joints set to ``q_chain``.

        Args:
            q_chain: Chain configuration (size :attr:`n`).
            q_ref: Model configuration (size ``model.nq``) holding the joints that are not
                on the chain; ``pin.neutral(model)`` when omitted.

        Returns:
            A new model configuration (continuous joints as ``(cos, sin)``).

        Raises:
            ShapeError: Wrong sizes.
            NonFiniteInput: NaN or inf entries.
        """
        qc = _validate.vector(q_chain, self.n, "q_chain")
        if q_ref is None:
            q = pin.neutral(self.model)
        else:
            q = _validate.vector(q_ref, self.model.nq, "q_ref").copy()
        for k in range(self.n):
            i = self.idx_q[k]
            if self.continuous[k]:
                q[i] = math.cos(qc[k])
                q[i + 1] = math.sin(qc[k])
            else:
                q[i] = qc[k]
        return q

    def from_full(self, q_full: object) -> np.ndarray:
        """Chain configuration read from a model configuration (size ``model.nq``).

        Continuous joints give ``atan2(sin, cos)`` in (-pi, pi].

        Raises:
            ShapeError: Wrong size.
            NonFiniteInput: NaN or inf entries.
        """
        q = _validate.vector(q_full, self.model.nq, "q_full")
        out = q[self.idx_q].copy()
        for k in np.flatnonzero(self.continuous):
            i = self.idx_q[k]
            out[k] = math.atan2(q[i + 1], q[i])
        return out

    # -- kinematics ----------------------------------------------------------------------
    def fk(self, q_chain: object) -> tuple[np.ndarray, np.ndarray]:
        """Pose of the tip in the base frame.

        Args:
            q_chain: Chain configuration (size :attr:`n`) [rad or m].

        Returns:
            ``(R, p)``: rotation (3x3) and position [m] of the tip frame.
        """
        q = np.ascontiguousarray(_validate.vector(q_chain, self.n, "q_chain"))
        _kernels()
        R = np.empty((3, 3))
        p = np.empty(3)
        _fk_kernel(self._F, self._P, q, R, p)
        return R, p

    def jacobian(self, q_chain: object) -> np.ndarray:
        """World-aligned 6 x n Jacobian of the tip (Pinocchio's ``LOCAL_WORLD_ALIGNED``).

        Rows 0-2 map joint velocities to the linear velocity of the tip origin [m/s],
        rows 3-5 to the angular velocity [rad/s], both in base-frame axes. Column ``i`` of
        a revolute joint is ``[a_i x (p_tip - o_i) ; a_i]``, of a prismatic one ``[a_i ; 0]``.

        Args:
            q_chain: Chain configuration (size :attr:`n`) [rad or m].
        """
        q = np.ascontiguousarray(_validate.vector(q_chain, self.n, "q_chain"))
        _kernels()
        R = np.empty((3, 3))
        p = np.empty(3)
        J = np.empty((6, self.n))
        _jacobian_kernel(self._F, self._P, q, R, p, J)
        return J

    # -- inverse kinematics --------------------------------------------------------------
    def _setup(
        self,
        position_tolerance: float,
        orientation_tolerance: float,
        max_restarts: int,
        joint_weights: object | None,
        orientation_weight: float,
        damping_bias: float,
        attempt_iterations: int,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Validated kernel options ``(wq, prm, ist)``; ``ist`` lacks the RNG state."""
        key = (
            position_tolerance,
            orientation_tolerance,
            max_restarts,
            orientation_weight,
            damping_bias,
            attempt_iterations,
        )
        if joint_weights is None and key == self._options_key and self._options is not None:
            return self._options
        for name, value in (
            ("position_tolerance", position_tolerance),
            ("orientation_tolerance", orientation_tolerance),
            ("orientation_weight", orientation_weight),
            ("damping_bias", damping_bias),
        ):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise InvalidInput(f"{name} must be a finite number > 0, got {value!r}")
        if int(max_restarts) < 0:
            raise InvalidInput(f"max_restarts must be >= 0, got {max_restarts!r}")
        if int(attempt_iterations) < 1:
            raise InvalidInput(f"attempt_iterations must be >= 1, got {attempt_iterations!r}")
        if joint_weights is None:
            wq = np.ones(self.n)
        else:
            w = _validate.vector(joint_weights, self.n, "joint_weights")
            if (w <= 0).any():
                raise InvalidInput("joint_weights must be > 0")
            wq = 1.0 / w
        prm = np.empty(_PRM_COUNT)
        prm[_PRM_TOL_P] = position_tolerance
        prm[_PRM_TOL_O] = orientation_tolerance
        prm[_PRM_W_ROT] = orientation_weight
        prm[_PRM_BIAS] = damping_bias
        prm[_PRM_STALL_RATIO] = _DEFAULT_STALL_RATIO
        ist = np.zeros(_IST_COUNT, dtype=np.int64)
        ist[_IST_MAX_RESTARTS] = int(max_restarts)
        ist[_IST_WINDOW] = _STALL_WINDOW
        ist[_IST_ATTEMPT_CAP] = int(attempt_iterations)
        if joint_weights is None:
            self._options_key = key
            self._options = (wq, prm, ist)
        return wq, prm, ist

    def _prepare(self, target_R: object, target_p: object, seed_q: object):
        """Validated target ``T`` (3x4) and seed clipped into the limits."""
        # C order everywhere: one compiled specialisation per kernel (Pinocchio hands out
        # Fortran-ordered rotations, which would otherwise trigger a second compilation).
        R = np.ascontiguousarray(target_R, dtype=float)
        p = np.ascontiguousarray(target_p, dtype=float)
        s = np.ascontiguousarray(seed_q, dtype=float)
        T = np.empty((3, 4))
        q = np.empty(self.n)
        if (
            R.shape != (3, 3)
            or p.shape != (3,)
            or s.shape != (self.n,)
            or _prepare_kernel(R, p, s, self._P, ROTATION_TOLERANCE, T, q) != 0
        ):
            # Slow path: the shared validators raise the typed error.
            check_rotation(target_R, "target_R")
            _validate.vector(target_p, 3, "target_p")
            _validate.vector(seed_q, self.n, "seed_q")
            raise InvalidInput("invalid target or seed")  # pragma: no cover - unreachable
        return T, q

    def solve(
        self,
        target_R: object,
        target_p: object,
        seed_q: object,
        *,
        time_budget: float = 0.005,
        position_tolerance: float = 1e-5,
        orientation_tolerance: float = 1e-4,
        max_restarts: int = 100_000,
        max_iterations: int | None = None,
        rng_seed: int = 0,
        joint_weights: object | None = None,
        orientation_weight: float = 1.0,
        damping_bias: float = DEFAULT_DAMPING_BIAS,
        attempt_iterations: int = _DEFAULT_ATTEMPT_CAP,
    ) -> ChainIKResult:
        """Find a chain configuration inside the limits that puts the tip at a target pose.

        Levenberg-Marquardt on ``e = [p* - p ; log3(R* R^T)]`` with Sugihara's damping
        ``lambda = E + damping_bias`` (``E = 1/2 (|e_p|^2 + w_o |e_o|^2)``): the step is
        ``dq = W^-1 J^T (J W^-1 J^T + lambda W_E^-1)^-1 e`` over the joints not blocked at
        a limit, then projected into the limits. An attempt that stalls (``E`` not halved
        in 8 iterations) or exceeds ``attempt_iterations`` restarts from a uniform random
        configuration inside the limits. Never raises on an unreachable target: it
        returns the best configuration found with ``success=False``.

        Args:
            target_R: Target rotation of the tip in the base frame (3x3, orthonormal).
            target_p: Target position of the tip in the base frame [m].
            seed_q: Initial chain configuration [rad or m] (clipped into the limits).
            time_budget: Wall-clock budget [s], checked between compiled chunks (a chunk
                is sized from the measured iteration cost to end by the deadline).
            position_tolerance: Success threshold on ``|p* - p|`` [m].
            orientation_tolerance: Success threshold on the rotation angle [rad].
            max_restarts: Maximum number of random restarts.
            max_iterations: Maximum number of LM iterations (``None``: limited by time
                only). With a generous ``time_budget`` this makes the result independent
                of the machine's speed.
            rng_seed: Seed of the restart generator; equal seeds give equal results
                whenever the time budget does not cut the search.
            joint_weights: Positive weights ``W`` (size :attr:`n`); heavier joints move
                less per step. Default: ones.
            orientation_weight: ``w_o`` of ``E`` [m^2/rad^2]: weight of the orientation
                error against the position error.
            damping_bias: ``lambda_bias`` [m^2] of the damping rule (Sugihara's ``w_N``).
                Small values keep convergence fast near singular configurations.
            attempt_iterations: Iterations after which an attempt restarts regardless.

        Returns:
            The result (never raises on unreachable targets).

        Raises:
            ShapeError: Wrong sizes.
            NonFiniteInput: NaN or inf entries.
            InvalidTransform: ``target_R`` is not a rotation matrix.
            InvalidInput: Invalid options.
        """
        t0 = time.perf_counter()
        _kernels()
        T, q = self._prepare(target_R, target_p, seed_q)
        wq, prm, ist0 = self._setup(
            position_tolerance,
            orientation_tolerance,
            max_restarts,
            joint_weights,
            orientation_weight,
            damping_bias,
            attempt_iterations,
        )
        if not (isinstance(time_budget, (int, float)) and time_budget > 0):
            raise InvalidInput(f"time_budget must be a number > 0, got {time_budget!r}")
        if max_iterations is not None and int(max_iterations) < 0:
            raise InvalidInput(f"max_iterations must be >= 0, got {max_iterations!r}")
        ist = ist0.copy()
        ist[_IST_RNG] = _rng_state(rng_seed)
        fst = np.full(_FST_COUNT, np.inf)
        qbest = q.copy()
        remaining = -1 if max_iterations is None else int(max_iterations)
        deadline = t0 + time_budget
        chunk = _FIRST_CHUNK
        while True:
            todo = chunk if remaining < 0 else min(chunk, remaining)
            tc = time.perf_counter()
            status = _ik_kernel(self._F, self._P, T, wq, prm, ist, fst, q, qbest, todo)
            now = time.perf_counter()
            if status != _RUNNING:
                break
            if remaining >= 0:
                remaining -= todo
                if remaining <= 0:
                    break
            if now >= deadline:
                break
            # Size the next chunk from the measured iteration cost to end by the deadline.
            per_iter = (now - tc) / max(todo, 1)
            chunk = max(16, int(0.9 * (deadline - now) / max(per_iter, 1e-9)))
        return ChainIKResult(
            q=qbest,
            success=status == _CONVERGED,
            iterations=int(ist[_IST_ITERS]),
            restarts=int(ist[_IST_RESTARTS]),
            position_error=float(fst[_FST_P_BEST]),
            orientation_error=float(fst[_FST_O_BEST]),
            time_ms=(time.perf_counter() - t0) * 1e3,
        )

    def solve_pose(self, T_base_tip: object, seed_q: object, **options: Any) -> ChainIKResult:
        """:meth:`solve` for a target given as :class:`pinocchio.SE3` or a 4x4 matrix."""
        pose = as_se3(T_base_tip, "T_base_tip")
        return self.solve(pose.rotation, pose.translation, seed_q, **options)

    def iteration_cost(self) -> float:
        """Measured wall-clock cost of one LM iteration on this machine [s] (cached)."""
        if self._ns_per_iteration is None:
            _kernels()
            # An unreachable target keeps the search busy for the whole measurement.
            T = np.zeros((3, 4))
            T[:, :3] = np.eye(3)
            T[:, 3] = 1e3
            q0 = np.clip(np.zeros(self.n), self.lower, self.upper)
            wq, prm, ist = self._setup(1e-5, 1e-4, 10**9, None, 1.0, DEFAULT_DAMPING_BIAS, 100)
            ist = ist.copy()
            ist[_IST_RNG] = _rng_state(0)
            fst = np.full(_FST_COUNT, np.inf)
            _ik_kernel(self._F, self._P, T, wq, prm, ist, fst, q0.copy(), q0.copy(), 10)
            best = np.inf
            for _ in range(3):
                ist[_IST_STATUS] = 0
                t = time.perf_counter()
                _ik_kernel(self._F, self._P, T, wq, prm, ist, fst, q0.copy(), q0.copy(), 2000)
                best = min(best, (time.perf_counter() - t) / 2000)
            self._ns_per_iteration = best * 1e9
        return self._ns_per_iteration * 1e-9

    def solve_batch(
        self,
        targets: object,
        seeds: object | None = None,
        *,
        time_budget: float = 0.005,
        max_iterations: int | None = None,
        position_tolerance: float = 1e-5,
        orientation_tolerance: float = 1e-4,
        max_restarts: int = 100_000,
        rng_seed: int = 0,
        joint_weights: object | None = None,
        orientation_weight: float = 1.0,
        damping_bias: float = DEFAULT_DAMPING_BIAS,
        attempt_iterations: int = _DEFAULT_ATTEMPT_CAP,
        return_success: bool = False,
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Solve many targets in one compiled loop.

        Each target is solved exactly as :meth:`solve` would with the same options and
        ``max_iterations`` (every target restarts from the same ``rng_seed`` stream), so
        row ``k`` equals ``solve(targets[k], seeds[k], max_iterations=...)``.

        Args:
            targets: Target poses of the tip in the base frame, shape (N, 4, 4).
            seeds: Initial configurations, shape (N, n) or (n,) for all; default: the
                middle of the limits (0 for unbounded joints).
            time_budget: Budget per target [s], turned into an iteration cap with the
                measured :meth:`iteration_cost` when ``max_iterations`` is not given.
            max_iterations: Iteration cap per target (overrides ``time_budget``).
            position_tolerance: Success threshold on the position error [m].
            orientation_tolerance: Success threshold on the orientation error [rad].
            max_restarts: Maximum random restarts per target.
            rng_seed: Seed of the restart generator.
            joint_weights: Positive joint weights (see :meth:`solve`).
            orientation_weight: Weight of the orientation error (see :meth:`solve`).
            damping_bias: Damping bias (see :meth:`solve`).
            attempt_iterations: Iterations after which an attempt restarts.
            return_success: Also return the boolean success of each target.

        Returns:
            ``(N, 2 + n)`` array of rows ``[iterations, residual, q...]`` (MotrixSim's
            batched-solver layout) with ``residual = sqrt(|e_p|^2 + |e_o|^2)`` of the
            returned ``q`` [m, rad]; with ``return_success`` also an ``(N,)`` bool array.

        Raises:
            ShapeError: Wrong sizes.
            NonFiniteInput: NaN or inf entries.
            InvalidTransform: A target is not a rigid transform.
        """
        Ts = check_pose_stack(targets, "targets")
        N = Ts.shape[0]
        T34 = np.ascontiguousarray(Ts[:, :3, :])
        if seeds is None:
            seeds = self.mid_configuration()
        S = np.asarray(seeds, dtype=float)
        if S.ndim == 1:
            S = np.broadcast_to(_validate.vector(S, self.n, "seeds"), (N, self.n))
        else:
            S = _validate.matrix(S, (N, self.n), "seeds")
        S = np.ascontiguousarray(np.clip(S, self.lower, self.upper))
        wq, prm, ist = self._setup(
            position_tolerance,
            orientation_tolerance,
            max_restarts,
            joint_weights,
            orientation_weight,
            damping_bias,
            attempt_iterations,
        )
        ist = ist.copy()
        ist[_IST_RNG] = _rng_state(rng_seed)
        if max_iterations is None:
            if not (math.isfinite(time_budget) and time_budget > 0):
                raise InvalidInput(f"time_budget must be a finite number > 0, got {time_budget!r}")
            max_iterations = max(1, int(time_budget / self.iteration_cost()))
        elif int(max_iterations) < 0:
            raise InvalidInput(f"max_iterations must be >= 0, got {max_iterations!r}")
        _kernels()
        out = np.empty((N, 3 + self.n))
        _ik_batch_kernel(self._F, self._P, T34, S, wq, prm, ist, int(max_iterations), out)
        rows = np.ascontiguousarray(out[:, : 2 + self.n])
        if return_success:
            return rows, out[:, 2 + self.n] == _CONVERGED
        return rows

    def warm_up(self) -> None:
        """Compile (or load from numba's cache) every kernel now, not on the first query.

        The first call in a process otherwise costs ~10 ms (cached) or a few seconds
        (cold cache); call this at configuration time to keep it off the hot path.
        """
        q = self.mid_configuration()
        R, p = self.fk(q)
        self.jacobian(q)
        self.solve(R, p, q, max_iterations=1)
        self.solve_batch(pin.SE3(R, p).homogeneous[None], q, max_iterations=1)

    def mid_configuration(self) -> np.ndarray:
        """Middle of the joint limits (0 for a joint unbounded on a side) [rad or m]."""
        lo, hi = self.lower, self.upper
        bounded = np.isfinite(lo) & np.isfinite(hi)
        mid = np.zeros(self.n)
        mid[bounded] = 0.5 * (lo[bounded] + hi[bounded])
        return np.clip(mid, lo, hi)

    def random_configuration(self, rng: np.random.Generator) -> np.ndarray:
        """Uniform configuration inside the limits (unbounded joints: the restart range)."""
        return rng.uniform(self._P[:, _P_SAMPLE_LO], self._P[:, _P_SAMPLE_HI])

    def __repr__(self) -> str:
        return (
            f"SerialChain({self.base_frame or 'world'!r} -> {self.tip_frame!r}, n={self.n}, "
            f"joints={self.joint_names})"
        )


def _frame_id(model: pin.Model, name: str) -> int:
    if not isinstance(name, str) or not model.existFrame(name):
        raise FrameNotFound(str(name), [f.name for f in model.frames])
    return model.getFrameId(name)


def _placement_row(M: pin.SE3) -> np.ndarray:
    """Row of the placement table ``F``: ``M_R`` row-major, then ``M_p``."""
    return np.concatenate([np.asarray(M.rotation).reshape(-1), M.translation])
