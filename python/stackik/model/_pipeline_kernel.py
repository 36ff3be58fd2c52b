"""Compiled placement of every collision geometry (see :mod:`stackik.model.pipeline`)."""

from __future__ import annotations

import numpy as np

from .._jit import kernel


@kernel(inline=True)
def place_one(
    oMi: np.ndarray,
    j: int,
    local_rot: np.ndarray,
    local_trans: np.ndarray,
    rot: np.ndarray,
    trans: np.ndarray,
) -> None:
    """``(rot, trans) = oMi[j] * (local_rot, local_trans)``; ``oMi`` rows hold R by columns, t."""
    for r in range(3):
        for c in range(3):
            rot[r, c] = (
                oMi[j, r] * local_rot[0, c]
                + oMi[j, 3 + r] * local_rot[1, c]
                + oMi[j, 6 + r] * local_rot[2, c]
            )
        trans[r] = (
            oMi[j, r] * local_trans[0]
            + oMi[j, 3 + r] * local_trans[1]
            + oMi[j, 6 + r] * local_trans[2]
            + oMi[j, 9 + r]
        )


@kernel
def place_geometries(
    oMi: np.ndarray,
    joint: np.ndarray,
    slot: np.ndarray,
    local_rot: np.ndarray,
    local_trans: np.ndarray,
    obs_rot: np.ndarray,
    obs_trans: np.ndarray,
    rot: np.ndarray,
    trans: np.ndarray,
) -> None:
    """World placement of every geometry.

    A joint's placement composed with the fixed placement in its frame, or an
    obstacle's pose from the world snapshot.

    Args:
        oMi: Joint placements, ``(njoints, 12)``: rotation by columns, translation.
        joint: Joint of each geometry (-1: an obstacle).
        slot: Row of each obstacle in ``obs_rot``/``obs_trans``.
        local_rot: Rotation of each geometry in its joint frame.
        local_trans: Translation of each geometry in its joint frame [m].
        obs_rot: World rotations of the obstacles.
        obs_trans: World positions of the obstacles [m].
        rot: Output world rotations ``(n, 3, 3)``.
        trans: Output world positions ``(n, 3)`` [m].
    """
    for g in range(joint.shape[0]):
        j = joint[g]
        if j >= 0:
            place_one(oMi, j, local_rot[g], local_trans[g], rot[g], trans[g])
        else:
            k = slot[g]
            for r in range(3):
                trans[g, r] = obs_trans[k, r]
                for c in range(3):
                    rot[g, r, c] = obs_rot[k, r, c]
