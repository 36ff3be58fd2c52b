"""Result types and status codes returned by the solvers.

The hot paths of stackik never raise on bad numbers: they return one of these
results with a :class:`SolverStatus` and a human-readable ``status_message``.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterator, Sequence
from dataclasses import MISSING, dataclass, field, fields
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
        NO_PROGRESS: No progress: position IK stopped improving, or a velocity step
            stalled (the highest-priority level got scale 0 and the step is zero while
            that level asks for motion).
        COLLISION_VIOLATED: A collision pair is below its minimum distance (reported by
            the collision constraint; EmbodiK's status). Never SUCCESS while one is.
        NON_FINITE_INPUT: EmbodiK's name; an alias of INVALID_INPUT (the message names
            the non-finite argument).
        CONSTRAINT_BOUNDS_MISMATCH: EmbodiK's name; an alias of SHAPE_MISMATCH.
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
    COLLISION_VIOLATED = 10
    # EmbodiK's names of conditions stackik reports under a broader status (aliases):
    NON_FINITE_INPUT = 2  # INVALID_INPUT names the NaN / inf argument
    CONSTRAINT_BOUNDS_MISMATCH = 5  # SHAPE_MISMATCH names the rows and bounds

    def __str__(self) -> str:
        """The name (``str(SolverStatus.SUCCESS) == "SUCCESS"``); ``int()`` gives the value."""
        return self.name

    def __format__(self, spec: str) -> str:
        return format(self.name, spec)


#: What to look at for each status (:func:`get_solver_status_hint`).
_HINTS = {
    SolverStatus.SUCCESS: "Solved.",
    SolverStatus.MAX_ITERATIONS: (
        "The iteration limit stopped the solve. Raise max_iterations, or check whether "
        "the target is reachable."
    ),
    SolverStatus.INVALID_INPUT: (
        "An input was rejected: check sizes (nq for configurations, nv for velocities) "
        "and that no value is NaN or inf; the message names the argument."
    ),
    SolverStatus.SINGULARITY: (
        "A singular configuration blocked progress: move away from it, or raise the damping."
    ),
    SolverStatus.CONSTRAINT_VIOLATION: (
        "The returned step violates a constraint (numerical trouble): scale the problem "
        "(task gains, constraint rows) or loosen nearly conflicting constraints."
    ),
    SolverStatus.SHAPE_MISMATCH: (
        "Array shapes disagree: one task velocity per Jacobian row, every Jacobian and "
        "constraint row with nv columns, one bound per constraint row."
    ),
    SolverStatus.NUMERICAL_ERROR: (
        "A numerical routine failed or overflowed: reduce task gains and weights, raise "
        "the damping, or scale the constraint rows."
    ),
    SolverStatus.EMPTY_PROBLEM: (
        "Nothing to solve: add a task (or activate one); the step is the minimum-norm "
        "point of the constraints."
    ),
    SolverStatus.INFEASIBLE: (
        "The constraints admit no step together: the least-violating step is returned. "
        "Relax a conflicting constraint (the message names the most violated row)."
    ),
    SolverStatus.NO_PROGRESS: (
        "No progress: joint limits or constraints block the highest-priority task. Try "
        "the elastic band (enable_elastic_band) or the stall handler, lower gains, "
        "another seed, or a target the robot can reach."
    ),
    SolverStatus.COLLISION_VIOLATED: (
        "A collision pair is below its minimum distance: the step pushes it out at the "
        "recovery rate; lower min_distance if the start pose is legitimately closer."
    ),
}


def get_solver_status_hint(status: object, status_message: str | None = None) -> str:
    """A hint of what to check for a status (EmbodiK's helper), with the message appended.

    Args:
        status: A :class:`SolverStatus`, its value or its name (EmbodiK's statuses too).
        status_message: The result's ``status_message``; appended as ``Details: ...``.

    Returns:
        The hint; an unknown status gets a generic one.
    """
    name = getattr(status, "name", status)
    try:
        key = SolverStatus[name] if isinstance(name, str) else SolverStatus(int(name))  # type: ignore[call-overload]
    except (KeyError, ValueError, TypeError):
        key = None
    hint = _HINTS.get(key, "Unknown status: inspect the result's fields and the input sizes.")  # type: ignore[arg-type]
    return f"{hint} Details: {status_message}" if status_message else hint


class TaskLayout(enum.IntEnum):
    """EmbodiK's pose-task layouts (``VelocitySolverResult.active_task_layout``).

    Attributes:
        SPLIT: Position and orientation rows of a pose task at separate levels.
        MERGED: Both in one level; stackik always stacks a frame task's rows together.
    """

    SPLIT = 0
    MERGED = 1


class SolverRecoveryStage(enum.IntEnum):
    """Which stage supplied the velocity (``VelocitySolverResult.recovery_stage``).

    Attributes:
        PRIORITIZED: The prioritized (SNS) solve; stackik's only stage.
        WEIGHTED_FALLBACK: EmbodiK's weighted fallback (stackik has none).
    """

    PRIORITIZED = 0
    WEIGHTED_FALLBACK = 1


_NAN = float("nan")


@dataclass(kw_only=True)
class SolveRecord:
    """The fields EmbodiK 0.23.2's result objects carry beyond a solve's core, by name.

    The fields hold stackik's own data. The properties are EmbodiK's diagnostics of
    features stackik does not have (weighted advisor, preferred lock, split layout,
    weighted fallback): they report them unavailable / unused, with EmbodiK's values for
    that case (``False``, ``NaN``, ``1.0``, ``INVALID_INPUT`` for a candidate never made).

    Attributes:
        limits_applied: Whether joint limits bounded the step.
        task_modes_effective: :class:`~stackik.sns.TaskSolveMode` per priority level.
        task_used_fallback: Per level, whether a SCALE level fell back to MIN_ERROR
            (never in stackik: an exact QP keeps it SCALE).
        pinocchio_kinematics_time_ms: Kinematics pass [ms] (with the timing breakdown).
        task_update_time_ms: Task rows [ms] (with the timing breakdown).
        constraint_setup_time_ms: Box and constraint rows [ms] (with the timing breakdown).
        collision_constraint_time_ms: Collision rows [ms] (with the timing breakdown).
        solver_computation_time_ms: The SNS solve [ms].
        collision_pairs_considered: Pairs the collision constraint watched this step.
        collision_exact_distance_queries: Exact distance queries this step.
        collision_bound_culled_pairs: Watched pairs not queried exactly (their distance
            bound kept them away).
        collision_budget_exhausted: A query limit (the time budget, or
            ``nearest_points_all_pairs=False``) left out pairs; never one whose distance
            bound is below its minimum.
        collision_sphere_culled_pairs: Pairs skipped by the bounding-sphere test. The
            watched pairs are the bound-culled, the sphere-culled, the exact queries
            and the pairs a query limit left out.
    """

    limits_applied: bool = True
    task_modes_effective: list = field(default_factory=list)
    task_used_fallback: list[bool] = field(default_factory=list)
    pinocchio_kinematics_time_ms: float = 0.0
    task_update_time_ms: float = 0.0
    constraint_setup_time_ms: float = 0.0
    collision_constraint_time_ms: float = 0.0
    solver_computation_time_ms: float = 0.0
    collision_pairs_considered: int = 0
    collision_exact_distance_queries: int = 0
    collision_bound_culled_pairs: int = 0
    collision_budget_exhausted: bool = False
    collision_sphere_culled_pairs: int = 0

    # -- EmbodiK features stackik does not have: reported unavailable ---------------------
    @property
    def active_task_layout(self) -> TaskLayout:
        """:class:`TaskLayout`: always MERGED (a frame task's rows share one level)."""
        return TaskLayout.MERGED

    @property
    def recovery_stage(self) -> SolverRecoveryStage:
        """:class:`SolverRecoveryStage`: always PRIORITIZED (the SNS solve)."""
        return SolverRecoveryStage.PRIORITIZED

    @property
    def binding_score(self) -> float:
        """EmbodiK's layout-switcher score: 0 (no switcher)."""
        return 0.0

    @property
    def weighted_advisory_available(self) -> bool:
        """EmbodiK's weighted advisor ran: never."""
        return False

    @property
    def weighted_fallback_used(self) -> bool:
        """EmbodiK's weighted fallback replaced the solution: never."""
        return False

    @property
    def weighted_advisory_v_norm(self) -> float:
        """Advisor diagnostic: NaN (no advisor)."""
        return _NAN

    @property
    def weighted_advisory_pos_task_error_norm(self) -> float:
        """Advisor diagnostic: NaN (no advisor)."""
        return _NAN

    @property
    def weighted_advisory_ori_task_error_norm(self) -> float:
        """Advisor diagnostic: NaN (no advisor)."""
        return _NAN

    @property
    def weighted_advisory_condition_number(self) -> float:
        """Advisor diagnostic: NaN (no advisor)."""
        return _NAN

    @property
    def advisor_position_weight_scale_current(self) -> float:
        """Advisor position-weight scale: 1 (none)."""
        return 1.0

    @property
    def advisor_scale_adapt_active(self) -> bool:
        """Advisor adaptation ran: never."""
        return False

    @property
    def preferred_lock_attempted(self) -> bool:
        """EmbodiK's preferred-lock candidate was tried: never."""
        return False

    @property
    def preferred_lock_used(self) -> bool:
        """The preferred-lock candidate was used: never."""
        return False

    @property
    def preferred_lock_fallback_used(self) -> bool:
        """The preferred-lock fallback was used: never."""
        return False

    @property
    def preferred_lock_candidate_status(self) -> SolverStatus:
        """Status of the preferred-lock candidate: INVALID_INPUT (none made)."""
        return SolverStatus.INVALID_INPUT

    @property
    def preferred_lock_candidate_position_error(self) -> float:
        """Its position error: NaN (none made)."""
        return _NAN

    @property
    def preferred_lock_candidate_orientation_error(self) -> float:
        """Its orientation error: NaN (none made)."""
        return _NAN

    @property
    def preferred_lock_candidate_step_norm(self) -> float:
        """Its step norm: NaN (none made)."""
        return _NAN

    @property
    def preferred_lock_candidate_time_ms(self) -> float:
        """Its time [ms]: 0 (none made)."""
        return 0.0


def condition_number(J: np.ndarray, offsets: np.ndarray) -> float:
    """Largest condition number ``sigma_max / sigma_min`` over the levels' Jacobians.

    Each level's rows ``J[offsets[k]:offsets[k+1]]``; ``sigma_min`` is its
    ``min(rows, columns)``-th singular value (inf when it is zero); 1 without levels.
    """
    worst = 1.0
    for k in range(len(offsets) - 1):
        rows = J[offsets[k] : offsets[k + 1]]
        if rows.size == 0:
            continue
        sv = np.linalg.svd(rows, compute_uv=False)
        worst = max(worst, float(sv[0] / sv[-1]) if sv[-1] > 0.0 else math.inf)
    return worst


@dataclass
class VelocitySolverResult(SolveRecord):
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
        levels: ``(J, offsets, xdot)``: copies of the step's stacked task rows, level
            offsets and task velocities (what :attr:`condition_number` and
            :attr:`final_error` read), or None.
        joint_velocities: Alias of :attr:`solution` (EmbodiK's name).
        condition_number: Largest condition number of a level's Jacobian (computed when
            read; 1 without task rows).
        final_error: ``||J dq - xdot||`` over every task row [task units], EmbodiK's
            (computed when read).

    The fields of :class:`SolveRecord` carry EmbodiK's other result fields.
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
    levels: tuple[np.ndarray, np.ndarray, np.ndarray] | None = field(
        default=None, repr=False, compare=False
    )

    @property
    def success(self) -> bool:
        """Whether ``status`` is :attr:`SolverStatus.SUCCESS`."""
        return self.status == SolverStatus.SUCCESS

    @property
    def joint_velocities(self) -> np.ndarray:
        """The joint velocity ``dq`` (EmbodiK's name of :attr:`solution`)."""
        return self.solution

    @property
    def condition_number(self) -> float:
        """Largest condition number of a level's Jacobian (1 without task rows).

        Computed from :attr:`levels` when read.
        """
        if self.levels is None:
            return 1.0
        return condition_number(self.levels[0], self.levels[1])

    @property
    def final_error(self) -> float:
        """``||J dq - xdot||`` over every task row as stacked [task units] (EmbodiK's).

        Computed from :attr:`levels` when read (0 without task rows).
        """
        if self.levels is None or self.levels[0].shape[0] == 0:
            return 0.0
        J, _, xdot = self.levels
        if J.shape[1] != self.solution.shape[0]:
            return 0.0
        return float(np.linalg.norm(J @ self.solution - xdot))

    @classmethod
    def of_step(
        cls,
        solution: np.ndarray,
        status: SolverStatus,
        status_message: str,
        task_scales: np.ndarray,
        task_errors: np.ndarray,
        saturated_joints: list[int],
        saturated_constraints: list[int],
        iterations: int,
        computation_time_ms: float,
        fallback_levels: list[int],
    ) -> VelocitySolverResult:
        """The result of one solved step: these fields, every other at its default.

        The same object the constructor makes with these arguments (every field equal),
        made in a few dictionary operations instead of one assignment per field: the
        velocity step makes one per call. The arguments are kept, not copied.
        """
        values = _STEP_DEFAULTS.copy()
        for name, make in _STEP_FACTORIES:
            values[name] = make()
        values["solution"] = solution
        values["status"] = status
        values["status_message"] = status_message
        values["task_scales"] = task_scales
        values["task_errors"] = task_errors
        values["saturated_joints"] = saturated_joints
        values["saturated_constraints"] = saturated_constraints
        values["iterations"] = iterations
        values["computation_time_ms"] = computation_time_ms
        values["fallback_levels"] = fallback_levels
        result = object.__new__(cls)
        result.__dict__ = values
        return result


#: The fields :meth:`VelocitySolverResult.of_step` is given.
_STEP_GIVEN = frozenset(
    (
        "solution", "status", "status_message", "task_scales", "task_errors",
        "saturated_joints", "saturated_constraints", "iterations", "computation_time_ms",
        "fallback_levels",
    )
)  # fmt: skip
#: The other fields' plain defaults, and the factories of those made per result.
_STEP_DEFAULTS = {
    f.name: f.default
    for f in fields(VelocitySolverResult)
    if f.name not in _STEP_GIVEN and f.default is not MISSING
}
_STEP_FACTORIES = [
    (f.name, f.default_factory)
    for f in fields(VelocitySolverResult)
    if f.name not in _STEP_GIVEN and f.default_factory is not MISSING
]


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

    EmbodiK's names answer too: ``object_a``, ``object_b``, ``point_a_world`` and
    ``point_b_world`` are :attr:`geometry_a`, :attr:`geometry_b`, :attr:`point_a` and
    :attr:`point_b`.
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

    # EmbodiK's names of the same fields (read only).
    @property
    def object_a(self) -> str:
        """EmbodiK's name of :attr:`geometry_a`."""
        return self.geometry_a

    @property
    def object_b(self) -> str:
        """EmbodiK's name of :attr:`geometry_b`."""
        return self.geometry_b

    @property
    def point_a_world(self) -> np.ndarray:
        """EmbodiK's name of :attr:`point_a` (world frame) [m]."""
        return self.point_a

    @property
    def point_b_world(self) -> np.ndarray:
        """EmbodiK's name of :attr:`point_b` (world frame) [m]."""
        return self.point_b


@dataclass
class SolveDiagnostics:
    """EmbodiK's ``PositionIKResult.diagnostics``: one object with the intervention fields.

    Copies of the result's fields of the same names; ``any_intervention`` is True when
    an intervention counter is non-zero (stackik has none: always False).
    """

    collision_rejection_count: int = 0
    stall_escape_count: int = 0
    condition_number: float = 1.0
    task_scales: list[float] = field(default_factory=list)
    task_used_fallback: list[bool] = field(default_factory=list)
    task_modes_effective: list = field(default_factory=list)
    any_intervention: bool = False
    weighted_advisory_available: bool = False
    weighted_fallback_used: bool = False
    weighted_advisory_v_norm: float = _NAN
    weighted_advisory_pos_task_error_norm: float = _NAN
    weighted_advisory_ori_task_error_norm: float = _NAN
    weighted_advisory_condition_number: float = _NAN
    advisor_position_weight_scale_current: float = 1.0
    advisor_scale_adapt_active: bool = False
    active_task_layout: TaskLayout = TaskLayout.MERGED
    recovery_stage: SolverRecoveryStage = SolverRecoveryStage.PRIORITIZED
    binding_score: float = 0.0
    preferred_lock_attempted: bool = False
    preferred_lock_used: bool = False
    preferred_lock_fallback_used: bool = False
    preferred_lock_candidate_status: SolverStatus = SolverStatus.INVALID_INPUT
    preferred_lock_candidate_position_error: float = _NAN
    preferred_lock_candidate_orientation_error: float = _NAN
    preferred_lock_candidate_step_norm: float = _NAN
    preferred_lock_candidate_time_ms: float = 0.0


@dataclass
class PositionIKResult(SolveRecord):
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
        joint_velocities: ``dq`` of the last velocity solve (EmbodiK's field).
        saturated_joints: Saturated joints of the last velocity solve.
        task_errors: ``task_errors`` of the last velocity solve.
        condition_number: Condition number of the last velocity solve.
        achieved_pose: 4x4 world pose of the (first) target frame at :attr:`solution`.
        position_error_trace: Largest position error [m] at each iterate, start first.
        orientation_error_trace: Largest orientation error [rad] at each iterate.
        collision_candidates: EmbodiK's collision-rejected step candidates (none here).
        velocity_candidates: EmbodiK's velocity step candidates (none here).
        collision_rejection_count: Steps rejected for deepening a collision (0: stackik's
            collision rows keep steps feasible).
        stall_escape_count: EmbodiK's escape nudges (0).
        position_step_hold_active: EmbodiK's stationary hold (False).

    The fields of :class:`SolveRecord` carry EmbodiK's other result fields.
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
    joint_velocities: np.ndarray = field(default_factory=lambda: np.zeros(0))
    saturated_joints: list[int] = field(default_factory=list)
    task_errors: np.ndarray = field(default_factory=lambda: np.zeros(0))
    condition_number: float = 1.0
    achieved_pose: np.ndarray = field(default_factory=lambda: np.eye(4))
    position_error_trace: list[float] = field(default_factory=list)
    orientation_error_trace: list[float] = field(default_factory=list)
    collision_candidates: list = field(default_factory=list)
    velocity_candidates: list = field(default_factory=list)
    collision_rejection_count: int = 0
    stall_escape_count: int = 0
    position_step_hold_active: bool = False

    @property
    def success(self) -> bool:
        """Whether ``status`` is :attr:`SolverStatus.SUCCESS`."""
        return self.status == SolverStatus.SUCCESS

    @property
    def q_solution(self) -> np.ndarray:
        """Alias of :attr:`solution` (EmbodiK's name)."""
        return self.solution

    @property
    def iterations_used(self) -> int:
        """Alias of :attr:`iterations` (EmbodiK's name)."""
        return self.iterations

    @property
    def diagnostics(self) -> SolveDiagnostics:
        """EmbodiK's diagnostics bundle (copies of this result's fields)."""
        names = [f for f in SolveDiagnostics.__dataclass_fields__ if f != "any_intervention"]
        values = {n: getattr(self, n) for n in names}
        values["task_scales"] = [float(x) for x in self.task_scales]
        values["any_intervention"] = bool(self.collision_rejection_count or self.stall_escape_count)
        return SolveDiagnostics(**values)


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
        stopped_by: ``"max_solutions"``, ``"time_budget"``, ``"max_attempts"``,
            ``"max_iterations"``, ``"all_branches"`` (every branch the arm can have was
            found) or ``"analytic"`` (a closed-form solver enumerated every branch).
        deadline: ``time.perf_counter()`` value at which the search's budget ended [s]
            (inf without a time budget); the budget starts after the target checks and
            the chain preparation.
        branches: Branch flags of each configuration (aligned with the configurations;
            ``None`` where the arm has no flags): ``(shoulder, elbow, wrist)`` tuples,
            :class:`~stackik.BranchFlags` from ``find_configs``.
        branch_ids: Rank of each configuration's branch among the branches found
            (aligned; 2 pi copies added by ``include_alternates`` share their branch's).
        rejected_branches: Every branch that was found and rejected, as ``(flags or None,
            reason, configuration)`` (reasons as in ``rejected``).
        method: ``"numeric"`` (the Levenberg-Marquardt search) or ``"analytic:<family>"``
            (a closed-form solver: ``ur``, ``opw``, ``spherical``).
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
        *,
        branches: Sequence[tuple[int, int, int] | None] | None = None,
        branch_ids: Sequence[int] | None = None,
        rejected_branches: Sequence[tuple[tuple[int, int, int] | None, str, np.ndarray]] = (),
        method: str = "numeric",
    ) -> None:
        self.deadline = float(deadline)
        self.configurations = list(configurations)
        n = len(self.configurations)
        self.branches = list(branches) if branches is not None else [None] * n
        self.branch_ids = list(branch_ids) if branch_ids is not None else list(range(n))
        self.rejected_branches = list(rejected_branches)
        self.method = method
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
            f"stopped_by={self.stopped_by!r}, method={self.method!r})"
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
