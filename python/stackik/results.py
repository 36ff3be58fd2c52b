"""Result types and status codes returned by the solvers.

The hot paths of stackik never raise on bad numbers: they return one of these
results with a :class:`SolverStatus` and a human-readable ``status_message``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import overload

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

    def __str__(self) -> str:
        """The name (``str(SolverStatus.SUCCESS) == "SUCCESS"``); ``int()`` gives the value."""
        return self.name

    def __format__(self, spec: str) -> str:
        return format(self.name, spec)


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
        fallback_levels: Priority levels the greedy saturation handed to the exact QP.
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
    fallback_levels: list[int] = field(default_factory=list)

    @property
    def success(self) -> bool:
        """Whether ``status`` is :attr:`SolverStatus.SUCCESS`."""
        return self.status == SolverStatus.SUCCESS


@dataclass
class CollisionDebugInfo:
    """One collision pair as the collision constraint saw it (EmbodiK's debug record).

    Attributes:
        geometry_a: First geometry.
        geometry_b: Second geometry.
        link_a: Link of the first geometry.
        link_b: Link of the second geometry.
        distance: Signed distance [m] (negative: penetration depth).
        min_distance: The pair's minimum distance [m].
        point_a: Witness point on geometry a, world frame [m].
        point_b: Witness point on geometry b, world frame [m].
        normal: Unit normal from a to b (world).
        jacobian: The pair's distance-rate row ``d_dot = jacobian . dq`` (size nv).
        lower_bound: The row's lower bound on ``d_dot`` [m/s].
        active: Whether the pair was within its activation distance.
    """

    geometry_a: str
    geometry_b: str
    link_a: str
    link_b: str
    distance: float
    min_distance: float
    point_a: np.ndarray
    point_b: np.ndarray
    normal: np.ndarray
    jacobian: np.ndarray
    lower_bound: float
    active: bool


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


#: Reasons :class:`FindConfigsResult` counts rejections by.
REJECTION_REASONS = (
    "unreachable",
    "budget",
    "pose",
    "limits",
    "collision",
    "validation",
    "duplicate",
    "branch",
)


class FindConfigsResult(Sequence[np.ndarray]):
    """Configurations found by :meth:`~stackik.KinematicsSolver.find_configs`, and why not more.

    A sequence of configurations (size nq each, nearest to the reference first):
    iteration, ``len`` and indexing work as on a list, and an empty result is falsy.

    Attributes:
        configurations: The accepted configurations.
        rejected: Rejections by reason: ``unreachable`` (a search attempt did not
            converge), ``budget`` (an attempt cut short by the time budget), ``pose``,
            ``limits``, ``collision``, ``validation`` (the ``validate`` callback),
            ``duplicate`` (closer than ``distinct_tolerance`` to one already found) and
            ``branch`` (not on the requested branch). Every reason is present (0 when
            none).
        attempts: Search starts made.
        iterations: Levenberg-Marquardt iterations over all attempts.
        elapsed_ms: Wall-clock time of the call [ms].
        stopped_by: ``"max_solutions"``, ``"time_budget"``, ``"max_attempts"`` or
            ``"max_iterations"``.
        deadline: ``time.perf_counter()`` value at which the search's budget ended [s]
            (inf without a time budget); the budget starts after the target checks and
            the chain preparation.
    """

    def __init__(
        self,
        configurations: Sequence[np.ndarray],
        rejected: dict[str, int] | None = None,
        attempts: int = 0,
        iterations: int = 0,
        elapsed_ms: float = 0.0,
        stopped_by: str = "max_solutions",
        deadline: float = float("inf"),
    ) -> None:
        self.deadline = float(deadline)
        self.configurations = list(configurations)
        self.rejected = {r: 0 for r in REJECTION_REASONS}
        self.rejected.update(rejected or {})
        self.attempts = int(attempts)
        self.iterations = int(iterations)
        self.elapsed_ms = float(elapsed_ms)
        self.stopped_by = stopped_by

    @overload
    def __getitem__(self, index: int) -> np.ndarray: ...

    @overload
    def __getitem__(self, index: slice) -> list[np.ndarray]: ...

    def __getitem__(self, index: int | slice) -> np.ndarray | list[np.ndarray]:
        return self.configurations[index]

    def __len__(self) -> int:
        return len(self.configurations)

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter(self.configurations)

    def __repr__(self) -> str:
        rejected = {k: v for k, v in self.rejected.items() if v}
        return (
            f"FindConfigsResult({len(self)} configurations, attempts={self.attempts}, "
            f"rejected={rejected}, elapsed_ms={self.elapsed_ms:.3f}, "
            f"stopped_by={self.stopped_by!r})"
        )


@dataclass
class BatchIKResult:
    """Result of :meth:`~stackik.KinematicsSolver.solve_position_batch` (MotrixSim's rows).

    Attributes:
        success: Per target, the returned ``q`` reaches it and passes the robot-level
            checks (limits, collision, ``validate``), shape (N,).
        q: Configurations, shape (N, nq): the solution, or the best configuration found.
        iterations: Levenberg-Marquardt iterations per target, shape (N,).
        residual: ``sqrt(|e_p|^2 + |e_o|^2)`` of the returned ``q`` [m, rad], ``inf`` for
            a converged ``q`` that fails the robot-level checks, shape (N,).
    """

    success: np.ndarray
    q: np.ndarray
    iterations: np.ndarray
    residual: np.ndarray

    def __len__(self) -> int:
        return int(self.success.shape[0])

    def as_rows(self) -> np.ndarray:
        """The packed (N, nq + 2) rows ``[iterations, residual, q...]``."""
        return np.column_stack([self.iterations.astype(float), self.residual, self.q])
