"""Compiled frame-task rows: the frame's pose error and world-aligned Jacobian in one call.

Read from the kinematics cache's live views (no Pinocchio call per step): the joint
placements ``oMi`` and Pinocchio's world joint Jacobian ``data.J``; the error is
:func:`stackik._pose_kernel.pose_error`, the chain IK's. Checked against
``pin.updateFramePlacements``, ``pin.getFrameJacobian(..., LOCAL_WORLD_ALIGNED)`` and
``pin.log3`` in ``tests/test_frame_kernel.py``.
"""

from __future__ import annotations

import numpy as np

from .._jit import kernel
from .._pose_kernel import pose_error
from ..model.pipeline import place_one


@kernel(inline=True)
def _error_to(target: tuple, R: np.ndarray, p: np.ndarray, error: np.ndarray) -> None:
    """``error = [p* - p; log3(R* R^T)]`` of a frame at ``(R, p)`` to ``target = (p*, R*)``."""
    tp, tR = target
    T = np.empty((3, 4))
    for r in range(3):
        for c in range(3):
            T[r, c] = tR[r, c]
        T[r, 3] = tp[r]
    pose_error(T, R, p, error)


@kernel
def frame_error_jacobian(
    oMi: np.ndarray,
    Jw: np.ndarray,
    frame: tuple,
    columns: tuple,
    target: tuple,
    J: np.ndarray,
    error: np.ndarray,
) -> None:
    """A frame's pose error and its LOCAL_WORLD_ALIGNED Jacobian.

    Args:
        oMi: Joint placements ``(njoints, 12)``: rotation by columns, translation [m].
        Jw: Pinocchio's world joint Jacobian ``data.J`` ``(6, nx)`` (spatial velocity
            at the world origin, ``[linear; angular]``).
        frame: ``(joint, rot (3, 3), trans (3,))``: the frame's parent joint and its
            placement in that joint's frame [m].
        columns: ``(support (nx,) bool, colmap (nx,) int64)``: whether column ``c``
            moves the joint, and which velocity coordinate it adds to (a folded mimic
            column, already scaled by Pinocchio, goes to its leader's).
        target: ``(position (3,), rotation (3, 3))`` in world coordinates [m].
        J: Output ``(6, nv)``: ``[J_v; J_w]`` of the frame origin in world axes.
        error: Output ``(6,)``: ``[p* - p; log3(R* R^T)]`` [m, rad].
    """
    joint, lrot, ltrans = frame
    support, colmap = columns
    R = np.empty((3, 3))
    p = np.empty(3)
    place_one(oMi, joint, lrot, ltrans, R, p)  # the frame's world pose
    for r in range(6):
        for k in range(J.shape[1]):
            J[r, k] = 0.0
    for k in range(Jw.shape[1]):
        if not support[k]:
            continue
        wx, wy, wz = Jw[3, k], Jw[4, k], Jw[5, k]
        c = colmap[k]
        # v_p = v_O + w x p
        J[0, c] += Jw[0, k] + (wy * p[2] - wz * p[1])
        J[1, c] += Jw[1, k] + (wz * p[0] - wx * p[2])
        J[2, c] += Jw[2, k] + (wx * p[1] - wy * p[0])
        J[3, c] += wx
        J[4, c] += wy
        J[5, c] += wz
    _error_to(target, R, p, error)


@kernel
def frame_error(oMi: np.ndarray, frame: tuple, target: tuple, error: np.ndarray) -> None:
    """A frame's pose error alone: :func:`frame_error_jacobian`'s, without the Jacobian.

    Args:
        oMi: Joint placements ``(njoints, 12)`` (see :func:`frame_error_jacobian`).
        frame: ``(joint, rot (3, 3), trans (3,))`` of :func:`frame_error_jacobian`.
        target: ``(position (3,), rotation (3, 3))`` in world coordinates [m].
        error: Output ``(6,)``: ``[p* - p; log3(R* R^T)]`` [m, rad].
    """
    joint, lrot, ltrans = frame
    R = np.empty((3, 3))
    p = np.empty(3)
    place_one(oMi, joint, lrot, ltrans, R, p)
    _error_to(target, R, p, error)


@kernel
def frame_rows(
    oMi: np.ndarray,
    Jw: np.ndarray,
    spec: tuple,
    target: tuple,
    select: tuple,
    gains: tuple,
    full: tuple,
    J: np.ndarray,
    xdot: np.ndarray,
) -> None:
    """A frame task's rows and task velocity in one call (:func:`frame_error_jacobian` first).

    ``J = sqrt(w) J6[S]`` with the excluded columns zero, and ``xdot = sqrt(w) (gain
    e[S] + v*[S])``, where ``S`` are the controlled rows, ``e`` the error (or the
    override, given for the rows ``S`` only) and ``v*`` the feed-forward velocity; the
    same operations, in the same order, as the task's Python path.

    Args:
        oMi: Joint placements ``(njoints, 12)`` (see :func:`frame_error_jacobian`).
        Jw: Pinocchio's world joint Jacobian ``(6, nx)``.
        spec: ``(frame, columns)`` of :func:`frame_error_jacobian`.
        target: ``(position (3,), rotation (3, 3))`` [m].
        select: ``(rows S (m,) int64, excluded columns int64)``.
        gains: ``(gain [1/s], sqrt(weight))``.
        full: ``(J6 (6, nv), e (6,), override (m,) or empty, v* (6,) or empty)``: the
            task's own full Jacobian and error (written) and the velocity inputs.
        J: Output rows ``(m, nv)``.
        xdot: Output task velocity ``(m,)``.
    """
    frame, columns = spec
    rows, excluded = select
    gain, root = gains
    J6, error, override, target_velocity = full
    frame_error_jacobian(oMi, Jw, frame, columns, target, J6, error)
    nv = J.shape[1]
    for i in range(rows.shape[0]):
        r = rows[i]
        for k in range(nv):
            J[i, k] = J6[r, k]
        for k in excluded:
            J[i, k] = 0.0
        v = (override[i] if override.shape[0] else error[r]) * gain
        if target_velocity.shape[0]:
            v += target_velocity[r]
        xdot[i] = v
    if root != 1.0:
        for i in range(rows.shape[0]):
            for k in range(nv):
                J[i, k] *= root
            xdot[i] *= root
