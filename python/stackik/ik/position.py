"""Position IK: velocity steps of the engine, iterated (solve_position and stepping).

One iteration is one step of the velocity engine's data flow:

1. ``kinematics.update(q)`` -- one Pinocchio pass into the engine's own ``Data``;
2. for every target frame, the pose error in world axes

       e = [p* - p ; log3(R* R^T)]            [m ; rad]

   is turned into a task velocity ``xdot = [k_p e_p ; k_o e_o] / dt`` (the linear and
   angular parts first clipped to a per-step length), so that a task achieved in full
   closes the fraction ``k`` of its error in one step: with ``k = 1`` this is a
   Gauss-Newton step on the pose error;
3. the joint velocity ``dq`` comes from the prioritized SNS solve with every registered
   constraint active (joint limits with their margin, collision, CoM, linear rows, ...),
   from a damped least-squares solve, or from a Jacobian-transpose step (simIK's three
   resolution methods, :class:`ResolutionMethod`);
4. the displacement ``delta_q = dq dt``, scaled down as a whole so that no joint moves
   more than its maximum step (simIK's joint max step size), and
   ``q <- integrate(q, delta_q)``.

:meth:`PositionIK.solve_position` adds a temporary frame task above every registered
task (the registered tasks keep working in its null space), iterates to a tolerance,
and removes the task in a ``finally``. :meth:`PositionIK.solve_position_step` is the
teleoperation form: it drives the engine's own frame tasks (several in one coordinated
velocity solve) for a few steps.

Each call starts a new motion: the constraints' step-to-step state (the collision
broadphase's temporal coherence) is reset first, so equal inputs give equal outputs.
The engine's kinematics cache is left at the returned configuration; the robot's own
cache is never touched.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import logging
import math
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pinocchio as pin

from .. import _validate
from ..constraints.linear import LinearConstraint
from ..engine import VelocityEngine
from ..errors import InvalidInput, JointNotFound, ShapeError, StackIKError
from ..model import Kinematics, RobotModel
from ..results import PositionIKResult, SolverStatus, VelocitySolverResult
from ..spatial import as_se3
from ..tasks.frame import FrameTask

__all__ = [
    "PositionIK",
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

#: Logger of the iterations when :attr:`PositionIK.debug` is on (``enable_position_ik_debug``).
LOGGER = logging.getLogger("stackik.position_ik")

_positive = _validate.positive_float


def _count(value: object, what: str, minimum: int) -> int:
    return _validate.count(value, what, minimum)


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


#: The name of the rows that hold a call's locked joints still (``dq_j = 0``).
_LOCK = "position_ik_locked_joints"


def _lock_rows(engine: VelocityEngine, locked_v: np.ndarray) -> LinearConstraint:
    """Rows ``dq_j = 0`` for the locked joints, part of the constrained solve.

    The joints must not move in the step the constraints see: zeroing them after the
    solve would take a step the collision rows never bounded (the free joints' part of
    a motion that needed the locked ones too).
    """
    n = len(locked_v)
    C = np.zeros((n, engine.robot.nv))
    C[np.arange(n), locked_v] = 1.0
    return LinearConstraint(_LOCK, engine.kinematics, C, np.zeros(n), np.zeros(n))


def _method(value: object) -> ResolutionMethod:
    try:
        return ResolutionMethod(value)
    except ValueError:
        raise InvalidInput(
            f"unknown resolution method {value!r}; use one of {[m.value for m in ResolutionMethod]}"
        ) from None


def _step_bound(value: object, what: str) -> float:
    """A per-step length bound: ``None`` or ``inf`` means none."""
    if value is None:
        return math.inf
    v = _validate.real(value, what)
    if not v > 0:  # also rejects NaN
        raise InvalidInput(f"{what} must be > 0 (or None), got {value!r}", what=what, value=value)
    return v


def _step_options(
    frame_task_name: object, options: object
) -> tuple[str | None, PositionStepOptions]:
    """Sort out the call forms of ``solve_position_step``: (task name, options)."""
    if isinstance(frame_task_name, PositionStepOptions):
        if options is not None:
            raise InvalidInput("options given twice")
        frame_task_name, options = None, frame_task_name
    opts = options if options is not None else PositionStepOptions()
    if not isinstance(opts, PositionStepOptions):
        raise InvalidInput(f"options must be PositionStepOptions, got {type(opts).__name__}")
    if frame_task_name is not None:
        frame_task_name = _validate.name(frame_task_name, "frame_task_name")
    return frame_task_name, opts


@dataclass
class PositionIKOptions:
    """Options of :meth:`~stackik.KinematicsSolver.solve_position`.

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
        max_joint_step: simIK's joint max step size: a bound on ``|delta_q_i|`` per
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
    """Options of :meth:`~stackik.KinematicsSolver.solve_position_step` (teleoperation stepping).

    Attributes:
        max_steps: Velocity solves (each followed by an integration) per call.
        dt: Step period [s]; ``None`` (or <= 0): the solver's ``dt``.
        position_gain: Position gain of a target given as a pose (a :class:`TaskTarget`
            carries its own): the share of the error one step asks to close.
        orientation_gain: Orientation gain of a target given as a pose.
        max_linear_speed: Bound on the commanded linear task speed [m/s]; ``None``: none.
        max_angular_speed: Bound on the commanded angular task speed [rad/s].
        max_joint_step: Bound on ``|delta_q_i|`` per step [rad or m], scalar or size nv.
        method: :class:`ResolutionMethod` (or its string value).
        damping: ``lambda`` of :attr:`ResolutionMethod.DAMPED_LEAST_SQUARES`.
        velocity_limits: Apply the joints' velocity limits (on by default: the steps
            are a timed motion).
        position_tolerance: Stop early once every target is within this [m] ...
        orientation_tolerance: ... and this [rad].
        locked_joints: Joints (names or velocity indices) that may not move.
        no_progress_max_steps: Report ``NO_PROGRESS`` after this many steps without
            progress (0: never): the best error improved by at most
            ``no_progress_error_tolerance`` over them, or every step's displacement
            ``|delta_q|`` was below ``no_progress_dq_norm_tolerance``.
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
    """One target of a coordinated :meth:`~stackik.KinematicsSolver.solve_position_step` call.

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

    @classmethod
    def of(cls, task: FrameTask, T: pin.SE3, kp: float, ko: float) -> _Goal:
        mask = task.row_mask
        return cls(
            task, task.frame_id, T.rotation.copy(), T.translation.copy(), kp, ko, mask[:3], mask[3:]
        )

    def error(self, kin: Kinematics) -> tuple[np.ndarray, np.ndarray, float, float]:
        """World-axes error ``(e_p, e_o)`` and its masked norms ``(|e_p|, |e_o|)``."""
        oMf = kin.frame_placement(self.fid)
        ep = self.p - oMf.translation
        eo = pin.log3(self.R @ oMf.rotation.T)
        return (
            ep,
            eo,
            float(np.linalg.norm(ep[self.pos_mask])),
            float(np.linalg.norm(eo[self.ori_mask])),
        )


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


@dataclass
class _Progress:
    """State of one iteration loop: the best iterate, the stagnation window, the path."""

    q: np.ndarray
    best_q: np.ndarray
    best_err: float = math.inf
    best_ep: float = math.inf
    best_eo: float = math.inf
    best_errors: dict[str, tuple[float, float]] = field(default_factory=dict)
    history: list[float] = field(default_factory=list)
    running: float = math.inf
    still: int = 0
    iterations: int = 0
    scales: np.ndarray = field(default_factory=lambda: np.zeros(0))
    path: list[np.ndarray] = field(default_factory=list)
    last: VelocitySolverResult | None = None  # the last velocity solve
    position_trace: list[float] = field(default_factory=list)
    orientation_trace: list[float] = field(default_factory=list)


def _max_joint_step(value: object, nv: int) -> np.ndarray | None:
    if value is None:
        return None
    arr = _validate.as_floats(value, "max_joint_step", (nv,))
    if arr.ndim == 0:
        arr = np.full(nv, float(arr))
    if arr.shape != (nv,):
        raise ShapeError("max_joint_step", (nv,), arr.shape)
    if not (arr > 0).all():  # also rejects NaN
        raise InvalidInput(
            f"max_joint_step must be > 0, one number or {nv} of them", what="max_joint_step"
        )
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


def _clip_norm(v: np.ndarray, bound: float) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v * (bound / n) if n > bound else v


def _transpose_step(problem: Any, joint_weights: np.ndarray) -> VelocitySolverResult:
    """Jacobian-transpose velocity on the highest level, scaled into the constraints."""
    nv = joint_weights.shape[0]
    if not problem.levels:
        return VelocitySolverResult(np.zeros(nv), SolverStatus.EMPTY_PROBLEM, "no task")
    J, xdot = problem.levels[0]
    g = (1.0 / joint_weights) * (J.T @ xdot)
    Jg = J @ g
    den = float(Jg @ Jg)
    dq = g * (float(xdot @ Jg) / den) if den > 0.0 else np.zeros(nv)
    # Largest s in [0, 1] keeping s dq inside every bound that dq = 0 satisfies.
    lo, hi = problem.box_lower, problem.box_upper
    s = min(1.0, _ray_scale(dq, lo, hi))
    if problem.C.shape[0]:
        s = min(s, _ray_scale(problem.C @ dq, problem.lower, problem.upper))
    s = max(s, 0.0)
    dq = np.clip(s * dq, lo, hi)  # the clip only acts on limit recovery
    return VelocitySolverResult(dq, SolverStatus.SUCCESS, task_scales=np.array([s]))


def _ray_scale(v: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    """Largest ``s`` with ``s v`` inside the bounds that ``0`` satisfies (inf if none binds)."""
    s = math.inf
    with np.errstate(divide="ignore", invalid="ignore"):
        up = (v > 0) & (hi >= 0)
        dn = (v < 0) & (lo <= 0)
        if up.any():
            s = min(s, float(np.min(hi[up] / v[up])))
        if dn.any():
            s = min(s, float(np.min(lo[dn] / v[dn])))
    return s


class PositionIK:
    """Position-level IK on a velocity engine (solve_position and teleop stepping).

    Args:
        engine: The velocity engine whose tasks, constraints and settings are used.
    """

    def __init__(self, engine: VelocityEngine) -> None:
        self._engine = engine
        #: Log every iteration (errors, step, status) at DEBUG level on :data:`LOGGER`.
        self.debug = False

    # -- public API --------------------------------------------------------------------------
    def solve_position(
        self,
        seed_q: object,
        target_pose: object,
        frame_name: str,
        options: PositionIKOptions | None = None,
    ) -> PositionIKResult:
        """Iterate velocity steps from ``seed_q`` until ``frame_name`` reaches a pose.

        See :meth:`stackik.KinematicsSolver.solve_position`.
        """
        t0 = time.perf_counter()
        engine = self._engine
        robot = engine.robot
        opts = options if options is not None else PositionIKOptions()
        if not isinstance(opts, PositionIKOptions):
            raise InvalidInput(f"options must be PositionIKOptions, got {type(opts).__name__}")
        opts = dataclasses.replace(
            opts,
            velocity_limits=_validate.flag(opts.velocity_limits, "velocity_limits"),
            use_registered_tasks=_validate.flag(opts.use_registered_tasks, "use_registered_tasks"),
        )
        q = robot.normalize(seed_q)
        T = as_se3(target_pose, "target_pose")
        robot.get_frame_id(frame_name)
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
            classify=_validate.flag(
                opts.classify_stagnation_as_no_progress, "classify_stagnation_as_no_progress"
            ),
            locked=opts.locked_joints,
            record=_validate.flag(opts.record_path, "record_path"),
            keep_best=True,
            finish_status=SolverStatus.MAX_ITERATIONS,
        )
        kp = _positive(opts.position_gain, "position_gain")
        ko = _positive(opts.orientation_gain, "orientation_gain")
        damping = _positive(opts.damping, "damping")
        margin = opts.joint_limit_margin
        if margin is not None:
            margin = _positive(margin, "joint_limit_margin", allow_zero=True)
        with engine.lock:
            result = self._solve_with_temporary_task(
                q, T, frame_name, loop, opts, kp, ko, damping, margin
            )
        result.target_errors = {
            frame_name: result.target_errors.pop("__target__", (math.inf, math.inf))
        }
        result.computation_time_ms = (time.perf_counter() - t0) * 1e3
        return result

    def _solve_with_temporary_task(
        self,
        q: np.ndarray,
        T: pin.SE3,
        frame_name: str,
        loop: _Loop,
        opts: PositionIKOptions,
        kp: float,
        ko: float,
        damping: float,
        margin: float | None,
    ) -> PositionIKResult:
        engine = self._engine
        name = f"__solve_position_{next(_task_ids)}__"
        while engine.has_task(name):  # pragma: no cover - a user would have to pick this name
            name = f"__solve_position_{next(_task_ids)}__"
        priority = min((t.priority for t in engine.tasks), default=1) - 1
        deactivated = [t for t in engine.tasks if t.active] if not opts.use_registered_tasks else []
        engine.kinematics.set_unchecked(q)
        task = FrameTask(name, engine.kinematics, frame_name)
        engine.add_task(task)
        try:
            task.priority = priority
            task.gain = 0.0
            task.set_target_pose(T)
            for t in deactivated:
                t.active = False
            goal = _Goal.of(task, T, kp, ko)
            with self._settings(loop, opts.velocity_limits, margin, damping):
                result = self._iterate(q, [goal], loop)
        finally:
            for t in deactivated:
                t.active = True
            if engine.has_task(name):
                engine.remove_task(name)
        result.target_errors = {"__target__": result.target_errors.get(name, (math.inf, math.inf))}
        return result

    def solve_position_in_tcp(
        self,
        seed_q: object,
        relative_target: object,
        frame_name: str,
        options: PositionIKOptions | None = None,
    ) -> PositionIKResult:
        """:meth:`solve_position` for a target given relative to the frame at ``seed_q``.

        The world target is ``T_world_frame(seed_q) * relative_target``.
        """
        engine = self._engine
        q = engine.robot.normalize(seed_q)
        rel = as_se3(relative_target, "relative_target")
        fid = engine.robot.get_frame_id(frame_name)
        with engine.lock:
            engine.kinematics.set_unchecked(q)
            target = pin.SE3(engine.kinematics.frame_placement(fid)) * rel
        return self.solve_position(q, target, frame_name, options)

    def solve_position_step(
        self,
        current_q: object,
        target: object,
        frame_task_name: str | PositionStepOptions | None = None,
        options: PositionStepOptions | None = None,
    ) -> PositionIKResult:
        """Teleoperation stepping with the engine's registered frame tasks.

        See :meth:`stackik.KinematicsSolver.solve_position_step`.
        """
        t0 = time.perf_counter()
        engine = self._engine
        q: np.ndarray | None = None
        try:
            frame_task_name, opts = _step_options(frame_task_name, options)
            q = engine.robot.normalize(current_q)
            targets = self._step_targets(target, frame_task_name, opts)
            loop = self._step_loop(opts)
            damping = _positive(opts.damping, "damping")
            velocity_limits = _validate.flag(opts.velocity_limits, "velocity_limits")
        except StackIKError as exc:  # the hot path reports bad input, it never raises
            return self._invalid_step(q, str(exc), t0)
        with engine.lock:
            result = self._step_with_targets(q, targets, loop, velocity_limits, damping)
        result.computation_time_ms = (time.perf_counter() - t0) * 1e3
        return result

    def _invalid_step(self, q: np.ndarray | None, message: str, t0: float) -> PositionIKResult:
        """The ``INVALID_INPUT`` result of a step call: the valid start, else the current q."""
        if q is None:
            with self._engine.lock:
                q = self._engine.kinematics.q.copy()
        return PositionIKResult(
            solution=q,
            status=SolverStatus.INVALID_INPUT,
            status_message=message,
            computation_time_ms=(time.perf_counter() - t0) * 1e3,
        )

    def _step_loop(self, opts: PositionStepOptions) -> _Loop:
        dt = self._engine.dt if opts.dt is None or opts.dt <= 0 else _positive(opts.dt, "dt")
        return self._loop_settings(
            steps=_count(opts.max_steps, "max_steps", 0),
            dt=dt,
            method=opts.method,
            max_joint_step=opts.max_joint_step,
            max_lin=_step_bound(opts.max_linear_speed, "max_linear_speed") * dt,
            max_ang=_step_bound(opts.max_angular_speed, "max_angular_speed") * dt,
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
            record=_validate.flag(opts.record_path, "record_path"),
            keep_best=False,
            finish_status=SolverStatus.SUCCESS,
        )

    def _step_with_targets(
        self,
        q: np.ndarray,
        targets: dict[str, tuple[pin.SE3, float, float]],
        loop: _Loop,
        velocity_limits: bool,
        damping: float,
    ) -> PositionIKResult:
        engine = self._engine
        engine.kinematics.set_unchecked(q)
        goals = []
        saved = []
        try:
            for name, (T, kp, ko) in targets.items():
                task = engine.get_task(name)
                assert isinstance(task, FrameTask)
                saved.append((task, task.gain, task.target_velocity))
                task.set_target_pose(T)
                task.gain = 0.0
                goals.append(_Goal.of(task, T, kp, ko))
            with self._settings(loop, velocity_limits, None, damping):
                return self._iterate(q, goals, loop)
        finally:
            for task, gain, velocity in saved:
                task.gain = gain
                if velocity is None:
                    task.clear_target_velocity()
                else:
                    task.set_target_velocity(velocity)

    # -- helpers -----------------------------------------------------------------------------
    def _step_targets(
        self,
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
            items = list(target)
        else:
            if frame_task_name is None:
                raise InvalidInput("a pose target needs frame_task_name")
            items = [TaskTarget(frame_task_name, target, opts.position_gain, opts.orientation_gain)]
        out: dict[str, tuple[pin.SE3, float, float]] = {}
        for tt in items:
            task = self._engine.get_task(tt.task_name)
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
        self,
        *,
        method: object,
        max_joint_step: object,
        locked: Sequence[str | int],
        **values: Any,
    ) -> _Loop:
        robot = self._engine.robot
        return _Loop(
            method=_method(method),
            max_joint_step=_max_joint_step(max_joint_step, robot.nv),
            locked_v=_locked_indices(robot, locked),
            **values,
        )

    @contextmanager
    def _settings(
        self, loop: _Loop, velocity_limits: bool, margin: float | None, damping: float
    ) -> Iterator[None]:
        """Apply a call's engine settings (dt, velocity limits, margin, damping, locks).

        Every setting is restored on exit, also on error. A new motion starts: the
        constraints' step-to-step state is reset.
        """
        engine = self._engine
        limits = engine.joint_limits
        saved = (limits.velocity_limits, limits.margin)
        values: dict[str, object] = {"dt": loop.dt}
        if loop.method == ResolutionMethod.DAMPED_LEAST_SQUARES:
            values.update(damping=damping, tolerance=_DLS_TOLERANCE)
        excluded: list[tuple[Any, list[int]]] = []
        locked = False
        try:
            limits.velocity_limits = velocity_limits
            if margin is not None:
                limits.margin = margin
            if loop.locked_v.size:
                for t in engine.tasks:
                    old = t.get_excluded_joint_indices()
                    excluded.append((t, old))
                    t.set_excluded_joint_indices(sorted(set(old) | set(loop.locked_v.tolist())))
                engine.add_constraint(_lock_rows(engine, loop.locked_v))
                locked = True
            engine.reset()
            with engine.settings(**values):
                yield
        finally:
            if locked:
                engine.remove_constraint(_LOCK)
            for t, old in excluded:
                t.set_excluded_joint_indices(old)
            limits.velocity_limits, limits.margin = saved

    def _velocity(self, loop: _Loop) -> VelocitySolverResult:
        engine = self._engine
        if loop.method == ResolutionMethod.JACOBIAN_TRANSPOSE:
            return _transpose_step(engine.build_problem(None), engine.joint_weights)
        return engine.solve(None)

    def _check_clearance(self, q: np.ndarray, message: str) -> tuple[SolverStatus, str]:
        """SUCCESS, or COLLISION_VIOLATED naming the pair when ``q`` has one below its minimum."""
        for c in self._engine.constraints_of("collision"):
            found = c.violation_at(q) if c.active else None
            if found:
                return SolverStatus.COLLISION_VIOLATED, f"{message}, but {found}"
        return SolverStatus.SUCCESS, message

    def _iterate(self, q: np.ndarray, goals: list[_Goal], loop: _Loop) -> PositionIKResult:
        """The shared iteration loop of the position IK calls (see the module docstring)."""
        kin = self._engine.kinematics
        state = _Progress(q=q, best_q=q, path=[q] if loop.record else [])
        status, message = loop.finish_status, ""
        while True:
            kin.set_unchecked(state.q)
            errors = [g.error(kin) for g in goals]
            state.position_trace.append(max(e[2] for e in errors))
            state.orientation_trace.append(max(e[3] for e in errors))
            if self.debug:
                self._log(state, errors)
            if self._record_best(state, goals, errors, loop):
                status = SolverStatus.SUCCESS
                message = f"converged in {state.iterations} iterations"
                break
            stop = self._stop(state, errors, loop)
            if stop is not None:
                status, message = stop
                break
            failure = self._advance(state, goals, errors, loop)
            if failure is not None:
                status, message = failure
                break
        if state.best_q is not state.q:
            kin.set_unchecked(state.best_q)
        if status == SolverStatus.SUCCESS:
            status, message = self._check_clearance(state.best_q, message)
        result = self._result(state, status, message, loop)
        result.achieved_pose = kin.frame_placement(goals[0].fid).homogeneous.copy()
        return result

    @staticmethod
    def _log(state: _Progress, errors: list) -> None:
        position = max(e[2] for e in errors)
        orientation = max(e[3] for e in errors)
        LOGGER.debug(
            "position IK iteration %d: position error %.3e m, orientation error %.3e rad, "
            "best %.3e",
            state.iterations,
            position,
            orientation,
            state.best_err,
        )

    @staticmethod
    def _record_best(state: _Progress, goals: list[_Goal], errors: list, loop: _Loop) -> bool:
        """Keep the best iterate so far; return whether every goal is within tolerance."""
        ep_max = max(e[2] for e in errors)
        eo_max = max(e[3] for e in errors)
        err = math.sqrt(sum(e[2] ** 2 + e[3] ** 2 for e in errors))
        converged = ep_max <= loop.tol_p and eo_max <= loop.tol_o
        if not loop.keep_best or converged or err < state.best_err:
            state.best_q, state.best_err = state.q, err
            state.best_ep, state.best_eo = ep_max, eo_max
            state.best_errors = {
                g.task.name: (e[2], e[3]) for g, e in zip(goals, errors, strict=True)
            }
        state.running = min(state.running, err)
        return converged

    @staticmethod
    def _stop(state: _Progress, errors: list, loop: _Loop) -> tuple[SolverStatus, str] | None:
        """The status and message of a stop for iterations or stagnation, or None."""
        if state.iterations >= loop.steps:
            verb = "stopped" if loop.keep_best else "took"
            return loop.finish_status, (
                f"{verb} after {state.iterations} iterations; position error "
                f"{state.best_ep:.3g} m, orientation error {state.best_eo:.3g} rad"
            )
        state.history.append(state.running)
        h = state.history
        stalled = len(h) > loop.window and h[-1 - loop.window] - h[-1] <= loop.window_tol
        if loop.window and (stalled or state.still >= loop.window):
            status = SolverStatus.NO_PROGRESS if loop.classify else SolverStatus.MAX_ITERATIONS
            return status, (
                f"no progress over {loop.window} iterations (after {state.iterations}); "
                f"position error {state.best_ep:.3g} m, orientation error {state.best_eo:.3g} rad"
            )
        return None

    def _advance(
        self, state: _Progress, goals: list[_Goal], errors: list, loop: _Loop
    ) -> tuple[SolverStatus, str] | None:
        """One velocity solve and integration; the failure status and message, or None."""
        for g, (ep, eo, _, _) in zip(goals, errors, strict=True):
            xdot = np.empty(6)
            xdot[:3] = _clip_norm(g.kp * ep, loop.max_lin)
            xdot[3:] = _clip_norm(g.ko * eo, loop.max_ang)
            g.task.set_target_velocity(xdot / loop.dt)
        res = self._velocity(loop)
        if res.status in _FATAL:
            return res.status, (
                f"velocity solve failed at iteration {state.iterations}: {res.status_message}"
            )
        state.scales = res.task_scales
        state.last = res
        delta_q = res.solution * loop.dt
        if loop.locked_v.size:
            delta_q[loop.locked_v] = 0.0
        if loop.max_joint_step is not None:
            ratio = float(np.max(np.abs(delta_q) / loop.max_joint_step))
            if ratio > 1.0:
                delta_q /= ratio
        for c in self._engine.constraints:  # nothing crossed that the rows did not see
            if c.active:
                delta_q *= c.step_fraction(delta_q)
        state.still = state.still + 1 if float(np.linalg.norm(delta_q)) <= loop.dq_tol else 0
        state.q = self._engine.robot.integrate(state.q, delta_q)
        state.iterations += 1
        if loop.record:
            state.path.append(state.q)
        return None

    def _result(
        self, state: _Progress, status: SolverStatus, message: str, loop: _Loop
    ) -> PositionIKResult:
        last = state.last
        extra: dict[str, Any] = {}
        if last is not None:
            extra = {
                "joint_velocities": last.solution.copy(),
                "saturated_joints": list(last.saturated_joints),
                "task_errors": np.array(last.task_errors, dtype=float),
                "condition_number": last.condition_number,
                "limits_applied": last.limits_applied,
                "task_modes_effective": list(last.task_modes_effective),
                "task_used_fallback": list(last.task_used_fallback),
            }
        return PositionIKResult(
            position_error_trace=list(state.position_trace),
            orientation_error_trace=list(state.orientation_trace),
            **extra,
            solution=np.array(state.best_q, copy=True),
            status=status,
            status_message=message,
            iterations=state.iterations,
            final_error=state.best_err,
            position_error=state.best_ep,
            orientation_error=state.best_eo,
            converged=bool(state.best_ep <= loop.tol_p and state.best_eo <= loop.tol_o),
            task_scales=np.asarray(state.scales, dtype=float).copy(),
            target_errors=state.best_errors,
            path=np.array(state.path) if loop.record else np.zeros((0, self._engine.robot.nq)),
        )
