"""The pose error ``[p* - p ; log3(R* R^T)]`` in compiled code, shared by the layers.

The chain IK's iterations (:mod:`stackik.ik.chain_kernels`) and the frame-task rows
(:mod:`stackik.tasks._frame_kernel`) use this one kernel; it matches ``pin.log3`` over the
whole range of angles (``tests/test_chain_ik.py``, ``tests/test_frame_kernel.py``).
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import kernel

__all__ = ["pose_error"]


@kernel
def pose_error(T: np.ndarray, R: np.ndarray, p: np.ndarray, e: np.ndarray) -> tuple[float, float]:
    """Pose error ``e = [p* - p ; log3(R* R^T)]`` of ``(R, p)`` for the target ``T`` (3x4).

    ``log3`` uses ``theta = atan2(|vee| / 2, (tr - 1) / 2)``, accurate at both ends, and
    the symmetric part of the rotation near ``theta = pi`` where ``vee`` vanishes. The
    near-pi branch stays inline: moved to its own kernel it cost ~2 % per LM iteration
    (numba does not inline calls between kernels).

    Returns:
        ``(|e_p|, |e_o|)``: position error [m] and rotation angle [rad].
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
