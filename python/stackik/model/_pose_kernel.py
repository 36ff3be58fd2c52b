"""Compiled kernels of the world's pose updates (see :mod:`stackik.model.world`).

A sensor thread publishes obstacle poses every tick; these kernels do a pose update's
arithmetic in one call each: the checks :func:`stackik.spatial.as_se3` makes on a 4x4
pose, and the finite-difference velocity of a stamped pose (``(p1 - p0) / h`` and
``log3(R1 R0^T) / h``, the angular part checked against ``pinocchio.log3``), held to
the bound an explicit velocity has (every component finite and within
:data:`~stackik._validate.MAX_MAGNITUDE`).
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel
from .._validate import MAX_MAGNITUDE
from ..spatial import MAX_TRANSLATION, ROTATION_TOLERANCE

__all__ = [
    "first_fault",
    "place_poses",
    "pose_ok",
    "rotation_log",
    "stamped_twist",
    "stamped_twists",
]

_NEAR_PI = -0.99  # below this cos(angle) (angle > ~3.0 rad), the axis comes from R + R^T
_SMALL = 1e-6  # below this angle [rad], angle / sin(angle) by its series


@kernel(inline=True)
def _pose_ok(H: np.ndarray) -> bool:
    """Whether the 4x4 ``H`` passes every check of :func:`~stackik.spatial.as_se3`.

    The checks of :func:`stackik.spatial.is_rigid`, as loops: finite entries, last row
    exactly ``[0, 0, 0, 1]``, ``max |R^T R - I|`` and ``|det R - 1|`` within
    :data:`~stackik.spatial.ROTATION_TOLERANCE`, translation within
    :data:`~stackik.spatial.MAX_TRANSLATION`.
    """
    total = 0.0
    for r in range(3):
        for c in range(4):
            total += H[r, c]
    if not math.isfinite(total):
        return False
    if H[3, 0] != 0.0 or H[3, 1] != 0.0 or H[3, 2] != 0.0 or H[3, 3] != 1.0:
        return False
    err = 0.0  # max |R^T R - I| over the upper triangle
    for i in range(3):
        for j in range(i, 3):
            dot = H[0, i] * H[0, j] + H[1, i] * H[1, j] + H[2, i] * H[2, j]
            err = max(err, abs(dot - 1.0) if i == j else abs(dot))
    minor0 = H[1, 1] * H[2, 2] - H[1, 2] * H[2, 1]
    minor1 = H[1, 0] * H[2, 2] - H[1, 2] * H[2, 0]
    minor2 = H[1, 0] * H[2, 1] - H[1, 1] * H[2, 0]
    det = H[0, 0] * minor0 - H[0, 1] * minor1 + H[0, 2] * minor2
    t2 = H[0, 3] * H[0, 3] + H[1, 3] * H[1, 3] + H[2, 3] * H[2, 3]
    return (
        err <= ROTATION_TOLERANCE
        and abs(det - 1.0) <= ROTATION_TOLERANCE
        and t2 <= MAX_TRANSLATION * MAX_TRANSLATION
    )


@kernel
def pose_ok(H: np.ndarray) -> bool:
    """Whether the 4x4 ``H`` passes every check of ``as_se3`` (``is_rigid``, compiled)."""
    return _pose_ok(H)


@kernel
def first_fault(H: np.ndarray, start: int) -> int:
    """Index of the first pose of ``H`` ``(m, 4, 4)`` from ``start`` that fails a check.

    Returns:
        That index, or -1 when every pose from ``start`` on passes.
    """
    for k in range(start, H.shape[0]):
        if not _pose_ok(H[k]):
            return k
    return -1


@kernel
def place_poses(H: np.ndarray, slots: np.ndarray, R: np.ndarray, p: np.ndarray) -> None:
    """``R[slots[k]] <- H[k, :3, :3]`` and ``p[slots[k]] <- H[k, :3, 3]`` (in place).

    Args:
        H: The poses, ``(m, 4, 4)``.
        slots: Obstacle index of each pose, int64 ``(m,)``.
        R: Rotations of every obstacle, ``(n, 3, 3)``.
        p: Positions of every obstacle [m], ``(n, 3)``.
    """
    for k in range(H.shape[0]):
        s = slots[k]
        for r in range(3):
            for c in range(3):
                R[s, r, c] = H[k, r, c]
            p[s, r] = H[k, r, 3]


@kernel(inline=True)
def _near_pi_axis(M: np.ndarray, cos: float, vee: np.ndarray, w: np.ndarray) -> None:
    """Unit rotation axis of ``M`` near half a turn, into ``w``.

    The symmetric part gives ``(M + M^T) / 2 - cos I = (1 - cos) a a^T``: the largest
    diagonal entry fixes one component, its row the others; the sign is the one of the
    antisymmetric part ``vee`` (``2 sin(angle) a``).
    """
    j = 0
    for r in range(1, 3):
        if M[r, r] > M[j, j]:
            j = r
    one_minus = 1.0 - cos
    aj = math.sqrt(max((M[j, j] - cos) / one_minus, 0.0))
    for r in range(3):
        if r == j:
            w[r] = aj
        else:
            w[r] = 0.5 * (M[r, j] + M[j, r]) / (one_minus * aj)
    dot = w[0] * vee[0] + w[1] * vee[1] + w[2] * vee[2]
    if dot < 0.0:
        for r in range(3):
            w[r] = -w[r]


@kernel
def rotation_log(M: np.ndarray, w: np.ndarray) -> None:
    """``w <- log3(M)``: the rotation vector (axis times angle in [0, pi]) of ``M`` [rad].

    ``M`` is a 3x3 rotation matrix. The angle is ``atan2(|vee| / 2, (tr M - 1) / 2)``
    with ``vee = (M21 - M12, M02 - M20, M10 - M01)``; ``w = angle / (2 sin angle) vee``
    (a series below :data:`_SMALL`), and near half a turn the axis comes from the
    symmetric part (:func:`_near_pi_axis`), where ``vee`` has lost its digits.
    """
    vee = np.empty(3)
    vee[0] = M[2, 1] - M[1, 2]
    vee[1] = M[0, 2] - M[2, 0]
    vee[2] = M[1, 0] - M[0, 1]
    cos = min(max(0.5 * (M[0, 0] + M[1, 1] + M[2, 2] - 1.0), -1.0), 1.0)
    sin = 0.5 * math.sqrt(vee[0] * vee[0] + vee[1] * vee[1] + vee[2] * vee[2])
    angle = math.atan2(sin, cos)
    if cos < _NEAR_PI:
        _near_pi_axis(M, cos, vee, w)
        for r in range(3):
            w[r] *= angle
        return
    if angle < _SMALL:
        factor = 0.5 * (1.0 + angle * angle / 6.0)
    else:
        factor = 0.5 * angle / sin
    for r in range(3):
        w[r] = factor * vee[r]


@kernel
def stamped_twist(
    H: np.ndarray,
    H0: np.ndarray,
    h: float,
    s: int,
    v: np.ndarray,
    w: np.ndarray,
) -> bool:
    """One obstacle's velocity from its previous stamped pose (in place).

    ``v[s] <- (p - p0) / h`` [m/s] and ``w[s] <- log3(R R0^T) / h`` [rad/s] (world
    axes), for the 4x4 poses ``H`` (now) and ``H0`` (``h > 0`` s before).

    Returns:
        Whether every component of ``v[s]`` and ``w[s]`` is finite and within
        :data:`~stackik._validate.MAX_MAGNITUDE` (the bound of an explicit velocity):
        stamps a hair apart turn pose noise into huge or infinite speeds.
    """
    M = np.empty((3, 3))
    out = np.empty(3)
    ok = True
    for r in range(3):
        v[s, r] = (H[r, 3] - H0[r, 3]) / h
        ok = ok and abs(v[s, r]) <= MAX_MAGNITUDE  # (False for NaN too)
        for c in range(3):
            acc = H[r, 0] * H0[c, 0] + H[r, 1] * H0[c, 1]
            M[r, c] = acc + H[r, 2] * H0[c, 2]
    rotation_log(M, out)
    for r in range(3):
        w[s, r] = out[r] / h
        ok = ok and abs(w[s, r]) <= MAX_MAGNITUDE
    return ok


@kernel
def stamped_twists(
    H: np.ndarray,
    H0: np.ndarray,
    h: np.ndarray,
    slots: np.ndarray,
    v: np.ndarray,
    w: np.ndarray,
    known: np.ndarray,
) -> int:
    """Velocities of stamped poses from their previous stamped poses (in place).

    :func:`stamped_twist` and ``known[slots[k]] <- True`` for each ``k`` with
    ``h[k] > 0``; entries with ``h[k] <= 0`` (no earlier stamp, or not a later one) are
    left as they are. Stops at the first velocity beyond the bound.

    Args:
        H: The new poses, ``(m, 4, 4)``.
        H0: The previous stamped poses, ``(m, 4, 4)`` (rows with ``h[k] <= 0`` unread).
        h: Time since the previous stamp [s], ``(m,)``.
        slots: Obstacle index of each pose, int64 ``(m,)``.
        v: Linear velocities of every obstacle, ``(n, 3)``.
        w: Angular velocities of every obstacle, ``(n, 3)``.
        known: Whether each obstacle's velocity is known, bool ``(n,)``.

    Returns:
        The index ``k`` of the first pose whose velocity is not finite or beyond
        :data:`~stackik._validate.MAX_MAGNITUDE` (``v``, ``w`` and ``known`` are then
        partly written: the caller drops them), or -1 when every one is within.
    """
    for k in range(H.shape[0]):
        if h[k] > 0.0:
            if not stamped_twist(H[k], H0[k], h[k], slots[k], v, w):
                return k
            known[slots[k]] = True
    return -1
