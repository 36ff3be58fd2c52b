"""Compiled rows of the CoM support-polygon constraint (see :mod:`.com_polygon`)."""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel


@kernel
def com_polygon_rows(
    planes: tuple,
    com: np.ndarray,
    Jcom: np.ndarray,
    settings: np.ndarray,
    use_acceleration: bool,
    C: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
) -> int:
    """One lower-bounded row per (near) edge: ``n_i^T J_com,xy v >= bound_i``.

    Args:
        planes: ``(normals (N, 2), offsets (N,))``: inward unit normals of the edges in
            world XY and ``n_i . v_i`` [m].
        com: Centre of mass, world [m].
        Jcom: CoM Jacobian ``(3, nv)``, world axes.
        settings: ``(shrink [m], proximity threshold [m] (0: every edge), dt [s],
            com_vel_max [m/s], com_acc_max [m/s^2])``.
        use_acceleration: Apply the ``sqrt(2 com_acc_max s)`` braking bound.
        C: Output rows ``(>= k, nv)``.
        lower: Output lower bounds [m/s].
        upper: Output upper bounds (``+inf``).

    Returns:
        The number of rows ``k`` (edges in order, those within the threshold).
    """
    normals, offsets = planes
    shrink, threshold, dt, vel_max, acc_max = (
        settings[0], settings[1], settings[2], settings[3], settings[4],
    )  # fmt: skip
    k = 0
    for i in range(normals.shape[0]):
        nx, ny = normals[i, 0], normals[i, 1]
        s = (nx * com[0] + ny * com[1]) - offsets[i] - shrink
        if threshold > 0.0 and not s < threshold:
            continue
        if s < 0.0:
            lower[k] = min(-s / dt, vel_max)
        else:
            allow = min(vel_max, s / dt)
            if use_acceleration:
                allow = min(allow, math.sqrt(2.0 * acc_max * s))
            lower[k] = -allow
        upper[k] = math.inf
        for j in range(Jcom.shape[1]):
            C[k, j] = nx * Jcom[0, j] + ny * Jcom[1, j]
        k += 1
    return k
