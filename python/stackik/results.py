"""Result types and status codes returned by the solvers.

The hot paths of stackik never raise on bad numbers: they return one of these
results with a :class:`SolverStatus` and a human-readable ``status_message``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np


class SolverStatus(enum.IntEnum):
    """Outcome of a solver call.

    Attributes:
        SUCCESS: Solved; every constraint holds.
        MAX_ITERATIONS: The iteration limit was reached before convergence.
        INVALID_INPUT: An input was rejected (NaN/inf, inverted bounds, unknown name).
        SINGULARITY: A singular configuration prevented progress.
        CONSTRAINT_VIOLATION: The returned solution violates a constraint.
        SHAPE_MISMATCH: Input arrays have inconsistent shapes.
        NUMERICAL_ERROR: A numerical routine failed (e.g. factorization breakdown).
        EMPTY_PROBLEM: There was nothing to solve (no task rows, no variables).
        INFEASIBLE: The constraint set admits no point; the least-violating
            solution is returned.
        NO_PROGRESS: Iterating stopped making progress.
    """

    SUCCESS = 0
    MAX_ITERATIONS = 1
    INVALID_INPUT = 2
    SINGULARITY = 3
    CONSTRAINT_VIOLATION = 4
    SHAPE_MISMATCH = 5
    NUMERICAL_ERROR = 6
    EMPTY_PROBLEM = 7
    INFEASIBLE = 8
    NO_PROGRESS = 9


@dataclass
class VelocitySolverResult:
    """Result of one prioritized velocity solve.

    Attributes:
        solution: Joint velocity ``dq`` [rad/s or m/s per joint], size ``n``.
        status: Outcome of the solve.
        status_message: Human-readable explanation of ``status``.
        task_scales: Scale ``s_k`` in [0, 1] achieved by each priority level.
        task_errors: Residual ``||J_k dq - s_k xdot_k||`` of each level.
        saturated_joints: Indices of joints pinned at a box bound.
        saturated_constraints: Indices of general constraint rows active at a bound.
        iterations: Number of saturation/active-set iterations performed.
        computation_time_ms: Wall-clock time of the solve [ms].
        timings: Optional breakdown of ``computation_time_ms`` by phase [ms].
    """

    solution: np.ndarray
    status: SolverStatus
    status_message: str = ""
    task_scales: np.ndarray = field(default_factory=lambda: np.zeros(0))
    task_errors: np.ndarray = field(default_factory=lambda: np.zeros(0))
    saturated_joints: list[int] = field(default_factory=list)
    saturated_constraints: list[int] = field(default_factory=list)
    iterations: int = 0
    computation_time_ms: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def success(self) -> bool:
        """Whether ``status`` is :attr:`SolverStatus.SUCCESS`."""
        return self.status == SolverStatus.SUCCESS
