"""Compiled posture-task rows: the selection rows and the task velocity in one call."""

from __future__ import annotations

import numpy as np

from .._jit import kernel


@kernel
def selection_rows(
    error: np.ndarray,
    rows: np.ndarray,
    gains: tuple,
    target_velocity: np.ndarray,
    selection: np.ndarray,
    excluded: np.ndarray,
    J: np.ndarray,
    xdot: np.ndarray,
) -> None:
    """``J = sqrt(w) S`` and ``xdot = sqrt(w) (gain e[S] + v*[S])`` for the rows ``S``.

    Args:
        error: The full error (size nv) [rad or m].
        rows: The controlled velocity indices ``S``.
        gains: ``(gain [1/s], sqrt(weight))``.
        target_velocity: Feed-forward velocity (size nv), or empty for none.
        selection: The constant selection rows ``I[S]`` ``(len(S), nv)``.
        excluded: Velocity indices whose columns are zero.
        J: Output rows ``(len(S), nv)``.
        xdot: Output task velocity ``(len(S),)``.
    """
    gain, root = gains
    for i in range(rows.shape[0]):
        for j in range(J.shape[1]):
            J[i, j] = selection[i, j]
        for j in excluded:
            J[i, j] = 0.0
        v = error[rows[i]] * gain
        if target_velocity.shape[0]:
            v += target_velocity[rows[i]]
        xdot[i] = v
    if root != 1.0:
        for i in range(rows.shape[0]):
            for j in range(J.shape[1]):
                J[i, j] *= root
            xdot[i] *= root
