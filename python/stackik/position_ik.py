"""Position IK: velocity steps of the :class:`~stackik.solver.KinematicsSolver`, iterated.

One iteration is one step of the solver's data flow (see ``docs/position_ik.md``):

1. ``robot.update_kinematics(q)`` -- one Pinocchio pass;
2. for every target frame, the pose error in world axes

       e = [p* - p ; log3(R* R^T)]            [m ; rad]

   is turned into a task velocity ``xdot = [k_p e_p ; k_o e_o] / dt`` (the linear and
   angular parts first clipped to a per-step length), so that a task achieved in full
   closes the fraction ``k`` of its error in one step: with ``k = 1`` this is a
   Gauss-Newton step on the pose error;
3. the velocity ``v`` comes from the prioritized SNS solve with every registered
   constraint active (joint limits with their margin, collision, CoM, linear rows, ...),
   from a damped least-squares solve, or from a Jacobian-transpose step (simIK's three
   resolution methods, :class:`ResolutionMethod`);
4. ``dq = v dt``, scaled down as a whole so that no joint moves more than its maximum
   step (simIK's joint max step size), and ``q <- integrate(q, dq)``.

:meth:`PositionIKMixin.solve_position` adds a temporary frame task above every
registered task (the registered tasks keep working in its null space), iterates to a
tolerance, and removes the task in a ``finally``. :meth:`PositionIKMixin.solve_position_step`
is the teleoperation form: it drives the solver's own frame tasks (several in one
coordinated velocity solve) for a few steps.

The mixin's methods become :class:`~stackik.solver.KinematicsSolver` methods; ``self``
is the solver.
"""

from __future__ import annotations

import enum
import itertools
import math
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from .errors import InvalidInput, JointNotFound
from .results import PositionIKResult, SolverStatus, VelocitySolverResult
from .spatial import as_se3
from .tasks.frame import FrameTask

if TYPE_CHECKING:
    from .model import RobotModel
    from .solver import KinematicsSolver

__all__ = [
    "PositionIKMixin",
    "PositionIKOptions",
    "PositionStepOptions",
    "ResolutionMethod",
    "TaskTarget",
]

#: Singular-value threshold that turns the SNS core's selective damping into plain
#: damped least squares: every singular value is below it, so every direction gets
#: ``sigma / (sigma^2 + lambda^2)`` (the ``(sigma / eps)^2`` term vanishes).
_DLS_TOLERANCE = 1e6

#: Velocity-solver statuses after which iterating further is pointless.
_FATAL = (SolverStatus.INVALID_INPUT, SolverStatus.SHAPE_MISMATCH, SolverStatus.NUMERICAL_ERROR)

_task_ids = itertools.count()


class ResolutionMethod(str, enum.Enum):
    """How one iteration turns task velocities into a joint velocity (simIK's methods).

    Attributes:
        PSEUDO_INVERSE: The solver's prioritized SNS solve (selectively damped
            pseudo-inverse: exact above the solver's tolerance, damped below it).
        DAMPED_LEAST_SQUARES: The same prioritized solve with every direction damped,
            ``J^T (J J^T + lambda^2 I)^-1`` per level, ``lambda = damping``.
        JACOBIAN_TRANSPOSE: ``v = alpha W^-1 J^T xdot`` on the highest-priority level
            only, with Buss and Kim's step ``alpha = <xdot, J W^-1 J^T xdot> /
            |J W^-1 J^T xdot|^2``, then scaled into the joint-limit box and the constraint
            rows (S. R. Buss, "Introduction to inverse kinematics with Jacobian transpose,
            pseudoinverse and damped least squares methods", 2004). Lower levels are not
            used.
    """

    PSEUDO_INVERSE = "pseudo_inverse"
    DAMPED_LEAST_SQUARES = "damped_least_squares"
    JACOBIAN_TRANSPOSE = "jacobian_transpose"


def _method(value: object) -> ResolutionMethod:
    try:
        return ResolutionMethod(value)
    except ValueError:
        raise InvalidInput(
            f"unknown resolution method {value!r}; use one of {[m.value for m in ResolutionMethod]}"
        ) from None


def _positive(value: object, what: str, allow_zero: bool = False) -> float:
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        v = float("nan")
    if not (math.isfinite(v) and (v >= 0 if allow_zero else v > 0)):
        sign = ">= 0" if allow_zero else "> 0"
        raise InvalidInput(f"{what} must be a finite number {sign}, got {value!r}")
    return v


def _step_bound(value: object, what: str) -> float:
    """A per-step length bound: ``None`` or ``inf`` means none."""
    if value is None:
        return math.inf
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        v = float("nan")
    if not v > 0:  # also rejects NaN
        raise InvalidInput(f"{what} must be > 0 (or None), got {value!r}")
    return v


def _count(value: object, what: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InvalidInput(f"{what} must be an integer >= {minimum}, got {value!r}")
    return int(value)


@dataclass
class PositionIKOptions:
    """Options of :meth:`PositionIKMixin.solve_position`.

    Attributes:
        max_iterations: Largest number of iterations (velocity solves).
        position_tolerance: Success threshold on the position error [m].
        orientation_tolerance: Success threshold on the rotation angle of the error [rad].
        position_gain: Share of the position error one iteration asks to close, in
            (0, 1]; 1 is a Gauss-Newton step.
        orientation_gain: Same for the orientation error.
        max_linear_step: Longest linear error one iteration asks to close [m] (EmbodiK's
            ``max_linear_step``; keeps far targets from over-shooting). ``None``: none.
        max_angular_step: Largest rotation one iteration asks to close [rad].
        max_joint_step: simIK's joint max step size: a bound on ``|dq_i|`` per
            iteration [rad or m], one number for all joints or one per velocity index
            (size nv). The whole step is scaled down (direction kept) when a joint would
            exceed it. ``None``: no bound.
        method: :class:`ResolutionMethod` (or its string value).
        damping: ``lambda`` of :attr:`ResolutionMethod.DAMPED_LEAST_SQUARES`, in the
            task rows' units [m or rad].
        joint_limit_margin: simIK's joint limit margin [rad or m] for this call; ``None``
            keeps the solver's (:meth:`~stackik.solver.KinematicsSolver.set_limit_margin`).
        dt: Step period [s] the constraints see (position-limit box, collision dampers,
            linear rows are per-``dt`` bounds). 1.0 makes ``v`` a displacement per
            iteration, the natural choice for position IK.
        velocity_limits: Apply the joints' velocity limits to ``v`` (with ``dt = 1``
            this bounds the step by the velocity limit's number). Off by default: the
            iterations are not a timed motion.
        use_registered_tasks: Keep the registered tasks active below the temporary
            target task (they act in its null space); ``False`` deactivates them for the
            call.
        locked_joints: Joints (names or velocity indices) that may not move.
        stagnation_iterations: Stop when the best error has improved by no more than
            ``stagnation_tolerance`` over this many iterations (0: never).
        stagnation_tolerance: See ``stagnation_iterations`` [m and rad mixed].
        classify_stagnation_as_no_progress: Report a stagnation stop as
            ``NO_PROGRESS`` (otherwise ``MAX_ITERATIONS``).
        record_path: Keep every iterate in :attr:`PositionIKResult.path`.
    """

    max_iterations: int = 100
    position_tolerance: float = 1e-5
    orientation_tolerance: float = 1e-4
    position_gain: float = 1.0
    orientation_gain: float = 1.0
    max_linear_step: float | None = 0.2
    max_angular_step: float | None = 0.5
    max_joint_step: float | Sequence[float] | np.ndarray | None = None
    method: ResolutionMethod | str = ResolutionMethod.PSEUDO_INVERSE
    damping: float = 1e-2
    joint_limit_margin: float | None = None
    dt: float = 1.0
    velocity_limits: bool = False
    use_registered_tasks: bool = True
    locked_joints: Sequence[str | int] = ()
    stagnation_iterations: int = 10
    stagnation_tolerance: float = 1e-9
    classify_stagnation_as_no_progress: bool = True
    record_path: bool = False


@dataclass
class PositionStepOptions:
    """Options of :meth:`PositionIKMixin.solve_position_step` (teleoperation stepping).

    Attributes:
        max_steps: Velocity solves (each followed by an integration) per call.
        dt: Step period [s]; ``None`` (or <= 0): the solver's ``dt``.
        position_gain: Position gain of a target given as a pose (a :class:`TaskTarget`
            carries its own): the share of the error one step asks to close.
        orientation_gain: Orientation gain of a target given as a pose.
        max_linear_speed: Bound on the commanded linear task speed [m/s]; ``None``: none.
        max_angular_speed: Bound on the commanded angular task speed [rad/s].
        max_joint_step: Bound on ``|dq_i|`` per step [rad or m], scalar or size nv.
        method: :class:`ResolutionMethod` (or its string value).
        damping: ``lambda`` of :attr:`ResolutionMethod.DAMPED_LEAST_SQUARES`.
        velocity_limits: Apply the joints' velocity limits (on by default: the steps
            are a timed motion).
        position_tolerance: Stop early once every target is within this [m] ...
        orientation_tolerance: ... and this [rad].
        locked_joints: Joints (names or velocity indices) that may not move.
        no_progress_max_steps: Report ``NO_PROGRESS`` after this many steps without
            progress (0: never): the best error improved by at most
            ``no_progress_error_tolerance`` over them, or every step moved less than
            ``no_progress_dq_norm_tolerance``.
        no_progress_error_tolerance: See ``no_progress_max_steps`` [m and rad mixed].
        no_progress_dq_norm_tolerance: See ``no_progress_max_steps`` [rad or m].
        record_path: Keep every configuration in :attr:`PositionIKResult.path`.
    """

    max_steps: int = 1
    dt: float | None = None
    position_gain: float = 1.0
    orientation_gain: float = 1.0
    max_linear_speed: float | None = None
    max_angular_speed: float | None = None
    max_joint_step: float | Sequence[float] | np.ndarray | None = None
    method: ResolutionMethod | str = ResolutionMethod.PSEUDO_INVERSE
    damping: float = 1e-2
    velocity_limits: bool = True
    position_tolerance: float = 1e-5
    orientation_tolerance: float = 1e-4
    locked_joints: Sequence[str | int] = ()
    no_progress_max_steps: int = 0
    no_progress_error_tolerance: float = 1e-8
    no_progress_dq_norm_tolerance: float = 1e-8
    record_path: bool = False


@dataclass
class TaskTarget:
    """One target of a coordinated :meth:`PositionIKMixin.solve_position_step` call.

    Attributes:
        task_name: A registered :class:`~stackik.tasks.frame.FrameTask`.
        target_pose: World pose of the task's frame, :class:`pinocchio.SE3` or 4x4 [m].
        position_gain: Share of the position error one step asks to close (>= 0).
        orientation_gain: Share of the orientation error one step asks to close (>= 0).
    """

    task_name: str
    target_pose: Any
    position_gain: float = 1.0
    orientation_gain: float = 1.0

    @classmethod
    def from_se3(
        cls,
        task_name: str,
        target_pose: pin.SE3,
        position_gain: float = 1.0,
        orientation_gain: float = 1.0,
    ) -> TaskTarget:
        """Build a target from a :class:`pinocchio.SE3` pose (EmbodiK's constructor)."""
        return cls(task_name, target_pose, position_gain, orientation_gain)


# -- internals ---------------------------------------------------------------------------------
@dataclass
class _Goal:
    """A frame task driven toward a pose: target, gains and which error rows count."""

    task: FrameTask
    fid: int
    R: np.ndarray
    p: np.ndarray
    kp: float
    ko: float
    pos_mask: np.ndarray
    ori_mask: np.ndarray


@dataclass
class _Loop:
    """Validated settings of one iteration loop."""

    steps: int
    dt: float
    method: ResolutionMethod
    max_joint_step: np.ndarray | None
    max_lin: float
    max_ang: float
    tol_p: float
    tol_o: float
    window: int
    window_tol: float
    dq_tol: float
    classify: bool
    locked_v: np.ndarray
    record: bool
    keep_best: bool
    finish_status: SolverStatus
    saved: dict[str, Any] = field(default_factory=dict)


def _masks(task: FrameTask) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the position and orientation errors the task controls (its axis mask)."""
    mask = np.asarray(task._mask, dtype=bool)
    return mask[:3].copy(), mask[3:].copy()


def _max_joint_step(value: object, nv: int) -> np.ndarray | None:
    if value is None:
        return None
    arr = np.asarray(value, dtype=float)
    if arr.ndim == 0:
        arr = np.full(nv, float(arr))
    if arr.shape != (nv,) or not (arr > 0).all():  # also rejects NaN
        raise InvalidInput(f"max_joint_step must be > 0, one number or {nv} of them")
    return arr


def _locked_indices(robot: RobotModel, joints: Sequence[str | int]) -> np.ndarray:
    """Velocity indices of the named (or indexed) joints."""
    if isinstance(joints, str):
        joints = [joints]
    out: list[int] = []
    for j in joints:
        if isinstance(j, str):
            if not robot.has_joint(j):
                raise JointNotFound(j, robot.get_joint_names())
            i, n = robot.get_joint_velocity_index(j), robot.get_joint_velocity_size(j)
            out.extend(range(i, i + n))
        elif isinstance(j, (int, np.integer)) and not isinstance(j, bool) and 0 <= j < robot.nv:
            out.append(int(j))
        else:
            raise InvalidInput(f"locked joint {j!r}: give a joint name or a velocity index")
    return np.array(sorted(set(out)), dtype=int)


def _pose_error(goal: _Goal, data: pin.Data) -> tuple[np.ndarray, np.ndarray, float, float]:
    """World-axes error ``(e_p, e_o)`` of a goal and its masked norms ``(|e_p|, |e_o|)``."""
    oMf = data.oMf[goal.fid]
    ep = goal.p - oMf.translation
    eo = pin.log3(goal.R @ oMf.rotation.T)
    return (
        ep,
        eo,
        float(np.linalg.norm(ep[goal.pos_mask])),
        float(np.linalg.norm(eo[goal.ori_mask])),
    )


def _clip_norm(v: np.ndarray, bound: float) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v * (bound / n) if n > bound else v


class PositionIKMixin:
    """Position-level IK methods of :class:`~stackik.solver.KinematicsSolver`.

    Mixed into the solver; ``self`` is the solver (its public API plus ``_robot``,
    ``_tasks`` and its settings).
    """

    # -- public API --------------------------------------------------------------------------
    def solve_position(
        self: KinematicsSolver,
        seed_q: object,
        target_pose: object,
        frame_name: str,
        options: PositionIKOptions | None = None,
    ) -> PositionIKResult:
        """Iterate velocity steps from ``seed_q`` until ``frame_name`` reaches a pose.

        A temporary frame task on ``frame_name`` is added one priority level above every
        registered task and removed before returning (also on error); the registered
        tasks stay active below it unless ``options.use_registered_tasks`` is false, so a
        posture task, say, resolves the redundancy. Every registered constraint is active
        in each step. The iteration stops when the position and orientation errors are
        both within tolerance (``SUCCESS``), after ``max_iterations`` (``MAX_ITERATIONS``)
        or when the error stagnates (``NO_PROGRESS``, or ``MAX_ITERATIONS`` when
        ``classify_stagnation_as_no_progress`` is false). An unreachable target never
        raises: the best configuration found is returned with a non-success status.
        The robot's kinematics cache is left at the returned configuration.

        Args:
            seed_q: Start configuration (size nq) [rad or m].
            target_pose: World pose of the frame, :class:`pinocchio.SE3` or 4x4 [m].
            frame_name: Frame to place.
            options: :class:`PositionIKOptions` (defaults when omitted).

        Returns:
            The :class:`~stackik.results.PositionIKResult` (``solution``: the iterate
            with the lowest error).

        Raises:
            ShapeError, NonFiniteInput: Bad ``seed_q`` or ``target_pose``.
            InvalidTransform: ``target_pose`` is not a rigid transform.
            FrameNotFound: Unknown frame.
            InvalidInput: Invalid options.
        """
        t0 = time.perf_counter()
        robot = self._robot
        opts = options if options is not None else PositionIKOptions()
        if not isinstance(opts, PositionIKOptions):
            raise InvalidInput(f"options must be PositionIKOptions, got {type(opts).__name__}")
        q = robot.normalize(seed_q)
        T = as_se3(target_pose, "target_pose")
        fid = robot.get_frame_id(frame_name)
        loop = self._loop_settings(
            steps=_count(opts.max_iterations, "max_iterations", 0),
            dt=_positive(opts.dt, "dt"),
            method=opts.method,
            max_joint_step=opts.max_joint_step,
            max_lin=_step_bound(opts.max_linear_step, "max_linear_step"),
            max_ang=_step_bound(opts.max_angular_step, "max_angular_step"),
            tol_p=_positive(opts.position_tolerance, "position_tolerance", allow_zero=True),
            tol_o=_positive(opts.orientation_tolerance, "orientation_tolerance", allow_zero=True),
            window=_count(opts.stagnation_iterations, "stagnation_iterations", 0),
            window_tol=_positive(opts.stagnation_tolerance, "stagnation_tolerance", True),
            dq_tol=0.0,
            classify=bool(opts.classify_stagnation_as_no_progress),
            locked=opts.locked_joints,
            record=bool(opts.record_path),
            keep_best=True,
            finish_status=SolverStatus.MAX_ITERATIONS,
        )
        kp = _positive(opts.position_gain, "position_gain")
        ko = _positive(opts.orientation_gain, "orientation_gain")
        damping = _positive(opts.damping, "damping")
        margin = opts.joint_limit_margin
        if margin is not None:
            margin = _positive(margin, "joint_limit_margin", allow_zero=True)

        name = f"__solve_position_{next(_task_ids)}__"
        while name in self._tasks:  # pragma: no cover - a user would have to pick this name
            name = f"__solve_position_{next(_task_ids)}__"
        priority = min((t.priority for t in self._tasks.values()), default=1) - 1
        deactivated = []
        if not opts.use_registered_tasks:
            deactivated = [t for t in self._tasks.values() if t.active]
        robot.update_kinematics(q)
        task = self.add_frame_task(name, frame_name)
        try:
            task.priority = priority
            task.gain = 0.0
            task.set_target_pose(T)
            for t in deactivated:
                t.active = False
            mp, mo = _masks(task)
            goal = _Goal(task, fid, T.rotation.copy(), T.translation.copy(), kp, ko, mp, mo)
            with self._position_ik_settings(loop, opts.velocity_limits, margin, damping):
                result = self._iterate(q, [goal], loop)
        finally:
            for t in deactivated:
                t.active = True
            if name in self._tasks:
                self.remove_task(name)
        result.target_errors = {frame_name: result.target_errors.pop(name, (math.inf, math.inf))}
        result.computation_time_ms = (time.perf_counter() - t0) * 1e3
        return result

    def solve_position_in_tcp(
        self: KinematicsSolver,
        seed_q: object,
        relative_target: object,
        frame_name: str,
        options: PositionIKOptions | None = None,
    ) -> PositionIKResult:
        """:meth:`solve_position` for a target given relative to the frame at ``seed_q``.

        The world target is ``T_world_frame(seed_q) * relative_target``: e.g. a pure
        translation ``(0, 0, 0.05)`` moves the tool 5 cm along its own z axis.

        Args:
            seed_q: Start configuration (size nq).
            relative_target: Pose of the target in the frame at ``seed_q``, SE3 or 4x4 [m].
            frame_name: Frame to place (the TCP).
            options: :class:`PositionIKOptions`.

        Raises:
            Same as :meth:`solve_position`.
        """
        robot = self._robot
        q = robot.normalize(seed_q)
        rel = as_se3(relative_target, "relative_target")
        robot.update_kinematics(q)
        target = robot.get_frame_pose(frame_name) * rel
        return self.solve_position(q, target, frame_name, options)

    def solve_position_step(
        self: KinematicsSolver,
        current_q: object,
        target: object,
        frame_task_name: str | PositionStepOptions | None = None,
        options: PositionStepOptions | None = None,
    ) -> PositionIKResult:
        """Teleoperation stepping with the solver's registered tasks.

        Three call forms (EmbodiK's overloads)::

            solve_position_step(q, T_world_target, "ee_task", options)
            solve_position_step(q, [TaskTarget("left", T_l), TaskTarget("right", T_r)], options)
            solve_position_step(q, TaskTarget("ee_task", T, 0.5, 0.2), options)

        Each target's pose is set on its registered
        :class:`~stackik.tasks.frame.FrameTask` (and stays set after the call, as the
        latest command). Each step computes every target's pose error, asks for
        ``[k_p e_p ; k_o e_o] / dt`` (speeds clipped to the options' bounds), runs ONE
        velocity solve for all tasks (so several targets move in coordination, with the
        registered priorities, weights and constraints), and integrates ``dq = v dt``.
        No task is created; each task's gain and feed-forward velocity are restored.

        Returns ``SUCCESS`` once every target is within tolerance or after
        ``max_steps`` steps (``converged`` tells which), ``NO_PROGRESS`` when the
        no-progress detector fires, or the velocity solver's failure status. The robot's
        kinematics cache is left at the returned configuration.

        Args:
            current_q: Configuration (size nq) [rad or m].
            target: A pose (SE3 or 4x4) for ``frame_task_name``, a :class:`TaskTarget`, or
                a sequence of them.
            frame_task_name: Task of a pose target (with a :class:`TaskTarget` target it
                may be omitted, or hold the options).
            options: :class:`PositionStepOptions` (defaults when omitted).

        Returns:
            The :class:`~stackik.results.PositionIKResult` (``solution``: the
            configuration after the last step; ``target_errors`` per task).

        Raises:
            ShapeError, NonFiniteInput, InvalidTransform: Bad configuration or pose.
            TaskNotFound: Unknown task name.
            InvalidInput: A task is not a frame task, a task appears twice, bad options.
        """
        t0 = time.perf_counter()
        robot = self._robot
        if isinstance(frame_task_name, PositionStepOptions):
            if options is not None:
                raise InvalidInput("options given twice")
            frame_task_name, options = None, frame_task_name
        opts = options if options is not None else PositionStepOptions()
        if not isinstance(opts, PositionStepOptions):
            raise InvalidInput(f"options must be PositionStepOptions, got {type(opts).__name__}")
        q = robot.normalize(current_q)
        targets = self._step_targets(target, frame_task_name, opts)
        dt = self.dt if opts.dt is None or opts.dt <= 0 else _positive(opts.dt, "dt")
        max_lin = _step_bound(opts.max_linear_speed, "max_linear_speed") * dt
        max_ang = _step_bound(opts.max_angular_speed, "max_angular_speed") * dt
        loop = self._loop_settings(
            steps=_count(opts.max_steps, "max_steps", 0),
            dt=dt,
            method=opts.method,
            max_joint_step=opts.max_joint_step,
            max_lin=max_lin,
            max_ang=max_ang,
            tol_p=_positive(opts.position_tolerance, "position_tolerance", allow_zero=True),
            tol_o=_positive(opts.orientation_tolerance, "orientation_tolerance", allow_zero=True),
            window=_count(opts.no_progress_max_steps, "no_progress_max_steps", 0),
            window_tol=_positive(
                opts.no_progress_error_tolerance, "no_progress_error_tolerance", True
            ),
            dq_tol=_positive(
                opts.no_progress_dq_norm_tolerance, "no_progress_dq_norm_tolerance", True
            ),
            classify=True,
            locked=opts.locked_joints,
            record=bool(opts.record_path),
            keep_best=False,
            finish_status=SolverStatus.SUCCESS,
        )
        damping = _positive(opts.damping, "damping")
        goals = []
        saved = []
        robot.update_kinematics(q)
        try:
            for tt, (T, kp, ko) in targets.items():
                task = self.get_task(tt)
                saved.append((task, task.gain, task._target_velocity))
                task.set_target_pose(T)
                task.gain = 0.0
                frame_task: FrameTask = task  # type: ignore[assignment]
                mp, mo = _masks(frame_task)
                R, p = T.rotation.copy(), T.translation.copy()
                goals.append(_Goal(frame_task, frame_task._fid, R, p, kp, ko, mp, mo))
            with self._position_ik_settings(loop, opts.velocity_limits, None, damping):
                result = self._iterate(q, goals, loop)
        finally:
            for task, gain, velocity in saved:
                task.gain = gain
                task._target_velocity = velocity
        result.computation_time_ms = (time.perf_counter() - t0) * 1e3
        return result

    # -- helpers -----------------------------------------------------------------------------
    def _step_targets(
        self: KinematicsSolver,
        target: object,
        frame_task_name: str | None,
        opts: PositionStepOptions,
    ) -> dict[str, tuple[pin.SE3, float, float]]:
        """Validated targets of a step call: task name -> (pose, k_p, k_o)."""
        if isinstance(target, TaskTarget):
            items: list[TaskTarget] = [target]
        elif (
            isinstance(target, Sequence)
            and not isinstance(target, (str, np.ndarray))
            and len(target) > 0
            and all(isinstance(t, TaskTarget) for t in target)
        ):
            items = list(target)  # type: ignore[arg-type]
        else:
            if frame_task_name is None:
                raise InvalidInput("a pose target needs frame_task_name")
            items = [TaskTarget(frame_task_name, target, opts.position_gain, opts.orientation_gain)]
        out: dict[str, tuple[pin.SE3, float, float]] = {}
        for tt in items:
            task = self.get_task(tt.task_name)
            if not isinstance(task, FrameTask):
                raise InvalidInput(
                    f"task {tt.task_name!r} is a {type(task).__name__}; stepping targets "
                    "need frame tasks"
                )
            if tt.task_name in out:
                raise InvalidInput(f"task {tt.task_name!r} has two targets")
            pose = as_se3(tt.target_pose, f"{tt.task_name} target pose")
            kp = _positive(tt.position_gain, f"{tt.task_name} position_gain", allow_zero=True)
            ko = _positive(tt.orientation_gain, f"{tt.task_name} orientation_gain", True)
            out[tt.task_name] = (pose, kp, ko)
        return out

    def _loop_settings(
        self: KinematicsSolver,
        *,
        method: object,
        max_joint_step: object,
        locked: Sequence[str | int],
        **values: Any,
    ) -> _Loop:
        robot = self._robot
        return _Loop(
            method=_method(method),
            max_joint_step=_max_joint_step(max_joint_step, robot.nv),
            locked_v=_locked_indices(robot, locked),
            **values,
        )

    @contextmanager
    def _position_ik_settings(
        self: KinematicsSolver,
        loop: _Loop,
        velocity_limits: bool,
        margin: float | None,
        damping: float,
    ) -> Iterator[None]:
        """Apply a call's solver settings (dt, velocity limits, margin, damping, locks).

        Every setting is restored on exit, also on error.
        """
        saved_dt = self.dt
        saved_vel = self._velocity_limits
        saved_margin = self._limit_margin
        saved_damping = (self._damping, self._tolerance)
        dls = loop.method == ResolutionMethod.DAMPED_LEAST_SQUARES
        excluded: list[tuple[Any, list[int]]] = []
        try:
            self.dt = loop.dt
            self.enable_velocity_limits(velocity_limits)
            if margin is not None:
                self.set_limit_margin(margin)
            if dls:
                self.set_damping(damping)
                self.set_tolerance(_DLS_TOLERANCE)
            if loop.locked_v.size:
                for t in self._tasks.values():
                    old = t.get_excluded_joint_indices()
                    excluded.append((t, old))
                    t.set_excluded_joint_indices(sorted(set(old) | set(loop.locked_v.tolist())))
            yield
        finally:
            for t, old in excluded:
                t.set_excluded_joint_indices(old)
            if dls:
                self.set_damping(saved_damping[0])
                self.set_tolerance(saved_damping[1])
            if margin is not None:
                self.set_limit_margin(saved_margin)
            self.enable_velocity_limits(saved_vel)
            self.dt = saved_dt

    def _transpose_velocity(self: KinematicsSolver) -> VelocitySolverResult:
        """Jacobian-transpose step on the highest level, scaled into the constraints."""
        problem = self.build_problem(None)
        nv = self._robot.nv
        if not problem.levels:
            return VelocitySolverResult(np.zeros(nv), SolverStatus.EMPTY_PROBLEM, "no task")
        J, xdot = problem.levels[0]
        w_inv = 1.0 / self._joint_weights
        g = w_inv * (J.T @ xdot)
        Jg = J @ g
        den = float(Jg @ Jg)
        v = g * (float(xdot @ Jg) / den) if den > 0.0 else np.zeros(nv)
        # Largest s in [0, 1] keeping s v inside every bound that v = 0 satisfies.
        s = 1.0
        lo, hi = problem.box_lower, problem.box_upper
        with np.errstate(divide="ignore", invalid="ignore"):
            up = (v > 0) & (hi >= 0)
            dn = (v < 0) & (lo <= 0)
            if up.any():
                s = min(s, float(np.min(hi[up] / v[up])))
            if dn.any():
                s = min(s, float(np.min(lo[dn] / v[dn])))
            if problem.C.shape[0]:
                c = problem.C @ v
                up = (c > 0) & (problem.upper >= 0)
                dn = (c < 0) & (problem.lower <= 0)
                if up.any():
                    s = min(s, float(np.min(problem.upper[up] / c[up])))
                if dn.any():
                    s = min(s, float(np.min(problem.lower[dn] / c[dn])))
        v = np.clip(max(s, 0.0) * v, lo, hi)  # the clip only acts on limit recovery
        return VelocitySolverResult(v, SolverStatus.SUCCESS, task_scales=np.array([max(s, 0.0)]))

    def _iterate(
        self: KinematicsSolver, q: np.ndarray, goals: list[_Goal], loop: _Loop
    ) -> PositionIKResult:
        """The shared iteration loop of the position IK calls (see the module docstring)."""
        robot = self._robot
        data = robot.data
        best_q, best_err = q, math.inf
        best_errors: dict[str, tuple[float, float]] = {}
        best_ep = best_eo = math.inf
        converged = False
        history: list[float] = []
        running = math.inf
        still = 0
        path = [q] if loop.record else []
        status = loop.finish_status
        message = ""
        scales = np.zeros(0)
        iterations = 0
        while True:
            robot.update_kinematics(q)
            errors = [_pose_error(g, data) for g in goals]
            ep_max = max(e[2] for e in errors)
            eo_max = max(e[3] for e in errors)
            err = math.sqrt(sum(e[2] ** 2 + e[3] ** 2 for e in errors))
            converged = ep_max <= loop.tol_p and eo_max <= loop.tol_o
            if not loop.keep_best or converged or err < best_err:
                best_q, best_err, best_ep, best_eo = q, err, ep_max, eo_max
                best_errors = {
                    g.task.name: (e[2], e[3]) for g, e in zip(goals, errors, strict=True)
                }
            if converged:
                status = SolverStatus.SUCCESS
                message = f"converged in {iterations} iterations"
                break
            if iterations >= loop.steps:
                message = (
                    f"{'stopped' if loop.keep_best else 'took'} after {iterations} iterations; "
                    f"position error {best_ep:.3g} m, orientation error {best_eo:.3g} rad"
                )
                break
            running = min(running, err)
            history.append(running)
            if loop.window and (
                (
                    len(history) > loop.window
                    and history[-1 - loop.window] - history[-1] <= loop.window_tol
                )
                or still >= loop.window
            ):
                status = SolverStatus.NO_PROGRESS if loop.classify else SolverStatus.MAX_ITERATIONS
                message = (
                    f"no progress over {loop.window} iterations (after {iterations}); "
                    f"position error {best_ep:.3g} m, orientation error {best_eo:.3g} rad"
                )
                break
            for g, (ep, eo, _, _) in zip(goals, errors, strict=True):
                xdot = np.empty(6)
                xdot[:3] = _clip_norm(g.kp * ep, loop.max_lin)
                xdot[3:] = _clip_norm(g.ko * eo, loop.max_ang)
                g.task.set_target_velocity(xdot / loop.dt)
            if loop.method == ResolutionMethod.JACOBIAN_TRANSPOSE:
                res = self._transpose_velocity()
            else:
                res = self.solve_velocity(None)
            if res.status in _FATAL:
                status = res.status
                message = f"velocity solve failed at iteration {iterations}: {res.status_message}"
                break
            scales = res.task_scales
            dq = res.solution * loop.dt
            if loop.locked_v.size:
                dq[loop.locked_v] = 0.0
            if loop.max_joint_step is not None:
                ratio = float(np.max(np.abs(dq) / loop.max_joint_step))
                if ratio > 1.0:
                    dq /= ratio
            still = still + 1 if float(np.linalg.norm(dq)) <= loop.dq_tol else 0
            q = robot.integrate(q, dq)
            iterations += 1
            if loop.record:
                path.append(q)
        if best_q is not q:
            robot.update_kinematics(best_q)
        return PositionIKResult(
            solution=np.array(best_q, copy=True),
            status=status,
            status_message=message,
            iterations=iterations,
            final_error=best_err,
            position_error=best_ep,
            orientation_error=best_eo,
            converged=bool(best_ep <= loop.tol_p and best_eo <= loop.tol_o),
            task_scales=np.asarray(scales, dtype=float).copy(),
            target_errors=best_errors,
            path=np.array(path) if loop.record else np.zeros((0, robot.nq)),
        )
