"""Return codes, flags and tolerances shared by the SNS kernels and their Python caller.

The entry kernel :func:`stackik.sns.run.sns_run` reports through an int64 ``info``
array instead of raising (a compiled kernel cannot build the messages); the Python
side (:mod:`stackik.sns.api`) turns the codes into statuses and messages. Plain
ints, so numba folds them into the compiled code as constants.
"""

from __future__ import annotations

# Return codes written to info[0].
OK = 0
BAD_JACOBIAN = 1
BAD_GOAL = 2
BAD_C = 3
NAN_BOUNDS = 4
INVERTED_BOUNDS = 5
NAN_BOX = 6
INVERTED_BOX = 7
NEED_START = 8
NEED_LEVEL = 9
BAD_SHAPE = 10  # info[1]: the argument (SHAPE_*), info[2]: expected, info[3]: given

# The arguments a BAD_SHAPE names (info[1]).
SHAPE_J = 0  # J's columns (expected n)
SHAPE_X = 1  # x's size (expected J's rows)
SHAPE_OFFSETS = 2  # offsets[0] (expected 0), or the last offset (expected J's rows)
SHAPE_ORDER = 3  # an offset below the one before it (info[2]: the level)
SHAPE_MODES = 4  # modes' size (expected the number of levels)
SHAPE_C = 5  # C's columns (expected n)
SHAPE_BOUNDS = 6  # lower's or upper's size (expected C's rows)
SHAPE_BOX = 7  # box_lower's or box_upper's size (expected n)
SHAPE_MODE_VALUE = 8  # a mode that is neither SCALE nor MIN_ERROR (info[2]: the level)

# Bits of iprm[2].
FLAG_SKIP_CHECKS = 1
FLAG_HAVE_START = 2
FLAG_HOLD = 4
FLAG_PYTHON_FALLBACKS = 8  # hand the start point and QP levels back to Python (the reference)

# How a level was solved (the int64 ``levels`` output of sns_run).
LEVEL_GREEDY = 0  # the greedy saturation (or the closed-form 1-D solve, or held by choice)
LEVEL_QP = 1  # the exact QP fallback
LEVEL_QP_FAILED = 2  # the exact QP fallback failed: the level holds (s = 0)

# Reasons a level is handed to the QP fallback (info[6]).
FALLBACK_NO_FEASIBLE_SCALE = 1
FALLBACK_MIN_ERROR = 2

# Task modes as the kernels see them (the values of api.TaskSolveMode).
MODE_SCALE = 0
MODE_MIN_ERROR = 1

# Tolerances (relative: a bound b is met within tol * (1 + |b|), except the violation).
FEAS_TOL = 1e-12  # slack of the saturation test: a row on its bound to rounding is satisfied
ACTIVE_TOL = 1e-9  # a row within this distance of a bound is reported active
VIOLATION_TOL = 1e-9  # largest accepted constraint violation of a returned dq (absolute)
