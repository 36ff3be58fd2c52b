"""Input checks of the SNS core, in the compiled kernel: shapes, finiteness, bound order.

The shapes of a stacked problem (``SNSSolver.solve_stacked`` takes its arrays as they
are) are checked first: the kernels index by them and do not check bounds. Then
what needs every entry, once per solve. A failure writes a code from
:mod:`stackik.sns.codes` and the offending indices to ``info``; the Python side
turns them into the message.
"""

from __future__ import annotations

import math

import numpy as np

from stackik._jit import kernel

from .codes import (
    BAD_C,
    BAD_GOAL,
    BAD_JACOBIAN,
    BAD_SHAPE,
    INVERTED_BOUNDS,
    INVERTED_BOX,
    MODE_MIN_ERROR,
    MODE_SCALE,
    NAN_BOUNDS,
    NAN_BOX,
    SHAPE_BOUNDS,
    SHAPE_BOX,
    SHAPE_C,
    SHAPE_J,
    SHAPE_MODE_VALUE,
    SHAPE_MODES,
    SHAPE_OFFSETS,
    SHAPE_ORDER,
    SHAPE_X,
)

_INF = math.inf


@kernel
def _shape_fault(info: np.ndarray, what: int, expected: int, given: int) -> bool:
    """Write a BAD_SHAPE for argument ``what`` to ``info``; False (for ``return``)."""
    info[0] = BAD_SHAPE
    info[1] = what
    info[2] = expected
    info[3] = given
    return False


@kernel
def _levels_valid(offs: np.ndarray, modes: np.ndarray, m: int, info: np.ndarray) -> bool:
    """``offs`` runs from 0 to ``m`` without going back; one known mode per level."""
    nlev = offs.shape[0] - 1
    if nlev < 0 or offs[0] != 0:
        return _shape_fault(info, SHAPE_OFFSETS, 0, offs[0] if nlev >= 0 else -1)
    if offs[nlev] != m:
        return _shape_fault(info, SHAPE_OFFSETS, m, offs[nlev])
    if modes.shape[0] != nlev:
        return _shape_fault(info, SHAPE_MODES, nlev, modes.shape[0])
    for k in range(nlev):
        if offs[k + 1] < offs[k]:
            return _shape_fault(info, SHAPE_ORDER, k, offs[k + 1])
        if modes[k] != MODE_SCALE and modes[k] != MODE_MIN_ERROR:
            return _shape_fault(info, SHAPE_MODE_VALUE, k, modes[k])
    return True


@kernel
def validate_shapes(
    n: int,
    J: np.ndarray,
    x: np.ndarray,
    offs: np.ndarray,
    modes: np.ndarray,
    Cg: np.ndarray,
    gl: np.ndarray,
    gu: np.ndarray,
    bl: np.ndarray,
    bu: np.ndarray,
    info: np.ndarray,
) -> bool:
    """The shapes of a stacked problem of ``n`` joint velocities (see :func:`sns_run`).

    Returns:
        Whether they agree; else ``info`` holds ``BAD_SHAPE``, the argument
        (``SHAPE_*``), what was expected and what was given.
    """
    m = J.shape[0]
    p = Cg.shape[0]
    if J.shape[1] != n:
        return _shape_fault(info, SHAPE_J, n, J.shape[1])
    if x.shape[0] != m:
        return _shape_fault(info, SHAPE_X, m, x.shape[0])
    if Cg.shape[1] != n:
        return _shape_fault(info, SHAPE_C, n, Cg.shape[1])
    if gl.shape[0] != p or gu.shape[0] != p:
        return _shape_fault(info, SHAPE_BOUNDS, p, gl.shape[0] if gl.shape[0] != p else gu.shape[0])
    if bl.shape[0] != n or bu.shape[0] != n:
        return _shape_fault(info, SHAPE_BOX, n, bl.shape[0] if bl.shape[0] != n else bu.shape[0])
    return _levels_valid(offs, modes, m, info)


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
