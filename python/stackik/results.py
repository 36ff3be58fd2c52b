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


@dataclass
class PositionIKResult:
    """Result of a position-level IK call (:meth:`solve_position`, :meth:`solve_position_step`).

    Attributes:
        solution: Joint configuration (size nq) [rad or m per joint]. For
            ``solve_position`` the iterate with the lowest pose error (the solution when
            ``success``, the best configuration found otherwise); for
            ``solve_position_step`` the configuration after the last step.
        status: Outcome of the call.
        status_message: Human-readable explanation of ``status``.
        iterations: Velocity solves performed (one per iteration / step).
        final_error: ``sqrt(sum |e_p|^2 + |e_o|^2)`` over the targets at ``solution``
            [m and rad mixed, as EmbodiK reports it].
        position_error: Largest position error over the targets at ``solution`` [m].
        orientation_error: Largest orientation error (rotation angle) over the targets at
            ``solution`` [rad].
        converged: Every target met both tolerances at ``solution``.
        computation_time_ms: Wall-clock time of the call [ms].
        task_scales: ``task_scales`` of the last velocity solve (one per priority level).
        target_errors: Per target task name, ``(position_error [m], orientation_error
            [rad])`` at ``solution``.
        path: Every iterate, start included (size iterations + 1, nq), when the options
            asked to record it; otherwise empty.
    """

    solution: np.ndarray
    status: SolverStatus
    status_message: str = ""
    iterations: int = 0
    final_error: float = float("inf")
    position_error: float = float("inf")
    orientation_error: float = float("inf")
    converged: bool = False
    computation_time_ms: float = 0.0
    task_scales: np.ndarray = field(default_factory=lambda: np.zeros(0))
    target_errors: dict[str, tuple[float, float]] = field(default_factory=dict)
    path: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))

    @property
    def success(self) -> bool:
        """Whether ``status`` is :attr:`SolverStatus.SUCCESS`."""
        return self.status == SolverStatus.SUCCESS

    @property
    def q_solution(self) -> np.ndarray:
        """Alias of :attr:`solution` (EmbodiK's name)."""
        return self.solution


@dataclass
class PathResult:
    """Result of a straight-line Cartesian path query (:meth:`generate_path`).

    Attributes:
        status: ``SUCCESS``, or why the path stopped: ``INFEASIBLE`` (a point cannot be
            reached), ``CONSTRAINT_VIOLATION`` (a point breaks the limits, a collision
            distance or the validation callback, or the joints jump between two
            consecutive points), ``INVALID_INPUT`` (the start configuration is invalid).
        status_message: Human-readable reason, naming the point.
        bad_index: Index of the first point that failed (-1 on success).
        reason: Short machine-readable reason: ``""``, ``"unreachable"``,
            ``"joint_jump"``, ``"limits"``, ``"collision"``, ``"validation"``.
        configurations: Configurations of the points reached so far, shape (k, nq);
            all ``n_points`` of them on success (row 0 is the start configuration).
        poses: World poses of every path point (4x4 each, shape (n_points, 4, 4)).
        computation_time_ms: Wall-clock time of the call [ms].
    """

    status: SolverStatus
    status_message: str = ""
    bad_index: int = -1
    reason: str = ""
    configurations: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    poses: np.ndarray = field(default_factory=lambda: np.zeros((0, 4, 4)))
    computation_time_ms: float = 0.0

    @property
    def success(self) -> bool:
        """Whether ``status`` is :attr:`SolverStatus.SUCCESS`."""
        return self.status == SolverStatus.SUCCESS
