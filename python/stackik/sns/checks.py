"""Input checks of the SNS core that need one pass over the data (finiteness, bound order).

Shapes are checked in Python (:mod:`stackik.sns.api`); what needs every entry is
checked here, in the compiled kernel, once per solve. A failure writes a code
from :mod:`stackik.sns.codes` and the offending indices to ``info``; the Python
side turns them into the message.
"""

from __future__ import annotations

import math

import numpy as np

from stackik._jit import kernel

from .codes import BAD_C, BAD_GOAL, BAD_JACOBIAN, INVERTED_BOUNDS, INVERTED_BOX, NAN_BOUNDS, NAN_BOX

_INF = math.inf


@kernel
def validate_inputs(
    J: np.ndarray,
    x: np.ndarray,
    Cg: np.ndarray,
    gl: np.ndarray,
    gu: np.ndarray,
    bl: np.ndarray,
    bu: np.ndarray,
    info: np.ndarray,
) -> bool:
    """Finiteness and bound-order checks: tasks, then general rows, then the box.

    One kernel for the three passes: each kernel call costs numba a reference
    count update per array argument, and this runs on every solve.

    Args:
        J: Stacked task Jacobians ``(M, n)``.
        x: Stacked task velocities ``(M,)``.
        Cg: General constraint rows ``(p, n)``.
        gl: Their lower bounds ``(p,)``.
        gu: Their upper bounds ``(p,)``.
        bl: Joint velocity box lower bounds ``(n,)`` [rad/s or m/s].
        bu: Joint velocity box upper bounds ``(n,)`` [rad/s or m/s].
        info: Receives the code (``BAD_JACOBIAN``, ``BAD_GOAL``, ``BAD_C``,
            ``NAN_BOUNDS``, ``INVERTED_BOUNDS``, ``NAN_BOX``, ``INVERTED_BOX``)
            and the row (and column) of the first failure.

    Returns:
        Whether every check passed.
    """
    mt, n = J.shape
    for i in range(mt):
        for j in range(n):
            if not math.isfinite(J[i, j]):
                info[0] = BAD_JACOBIAN
                info[1] = i
                info[2] = j
                return False
        if not math.isfinite(x[i]):
            info[0] = BAD_GOAL
            info[1] = i
            return False
    for i in range(Cg.shape[0]):
        for j in range(n):
            if not math.isfinite(Cg[i, j]):
                info[0] = BAD_C
                info[1] = i
                info[2] = j
                return False
        if math.isnan(gl[i]) or math.isnan(gu[i]):
            info[0] = NAN_BOUNDS
            info[1] = i
            return False
        # An empty interval, or one that only +-inf satisfies.
        if gl[i] > gu[i] or gl[i] == _INF or gu[i] == -_INF:
            info[0] = INVERTED_BOUNDS
            info[1] = i
            return False
    for j in range(n):
        if math.isnan(bl[j]) or math.isnan(bu[j]):
            info[0] = NAN_BOX
            info[1] = j
            return False
        if bl[j] > bu[j] or bl[j] == _INF or bu[j] == -_INF:
            info[0] = INVERTED_BOX
            info[1] = j
            return False
    return True
