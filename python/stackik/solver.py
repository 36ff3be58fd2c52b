"""KinematicsSolver: tasks and constraints on a RobotModel, solved with the SNS core.

One :meth:`KinematicsSolver.solve_velocity` call is one step of the data flow:

1. ``robot.update_kinematics(q)`` -- one Pinocchio pass (FK, joint Jacobians, frames);
2. every active task reads the cache (``Task.update``) -> ``(J_k, xdot_k)``;
3. joint limits become a velocity box, every constraint gives rows ``(C_i, l_i, u_i)``;
4. tasks with the same priority are stacked into one level (rows times
   ``sqrt(weight)``) -> a :class:`Problem`, inspectable without solving;
5. :class:`stackik.sns.SNSSolver` solves it -> :class:`VelocitySolverResult`.

The CoM and collision distances are computed only when a task or constraint asks.
This module is the only one that knows both the tasks/constraints and the SNS core.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from . import _validate
from .constraints._box_kernel import limit_box
from .constraints.base import Constraint
from .constraints.collision import CollisionConstraint
from .constraints.com_polygon import ComPolygonConstraint
from .constraints.limits import calculate_velocity_box_constraint
from .constraints.linear import LinearConstraint, TightFramePoseConstraint, TightPointConstraint
from .constraints.relative_pose import RelativePoseConstraint
from .errors import InvalidInput, StackIKError, TaskNotFound
from .global_ik import GlobalIKMixin
from .model import RobotModel
from .position_ik import PositionIKMixin
from .results import SolverStatus, VelocitySolverResult
from .sns import DEFAULT_DAMPING, DEFAULT_TOLERANCE, SNSSolver, TaskSolveMode
from .tasks.base import Task, TaskType
from .tasks.com import COMTask
from .tasks.frame import FrameTask
from .tasks.joint import JointTask, MultiJointTask
from .tasks.posture import PostureTask
from .tasks.relative import AbsoluteFrameTask, RelativeFrameTask

_SCALAR_JOINTS = (
    "JointModelRX",
    "JointModelRY",
    "JointModelRZ",
    "JointModelRevoluteUnaligned",
    "JointModelPX",
    "JointModelPY",
    "JointModelPZ",
    "JointModelPrismaticUnaligned",
)


@dataclass
class Problem:
    """The stacked problem of one step, as handed to the SNS core.

    Attributes:
        levels: ``(J_k, xdot_k)`` per priority level, highest first.
        level_tasks: Task names of each level.
        modes: :class:`TaskSolveMode` of each level.
        C: General constraint rows (p x nv).
        lower: Lower bounds of ``C v`` (p).
        upper: Upper bounds of ``C v`` (p).
        box_lower: Joint velocity lower bounds (nv) [rad/s or m/s].
        box_upper: Joint velocity upper bounds (nv) [rad/s or m/s].
        constraint_slices: Row range of each constraint in ``C``, by name.
    """

    levels: list[tuple[np.ndarray, np.ndarray]]
    level_tasks: list[list[str]]
    modes: list[TaskSolveMode]
    C: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    box_lower: np.ndarray
    box_upper: np.ndarray
    constraint_slices: dict[str, slice] = field(default_factory=dict)


class KinematicsSolver(PositionIKMixin, GlobalIKMixin):
    """Prioritized velocity IK on a :class:`RobotModel`, with position and global IK.

    Position IK (``solve_position``, ``solve_position_step``, ``solve_position_in_tcp``)
    comes from :class:`~stackik.position_ik.PositionIKMixin`; global IK (``find_configs``,
    ``branch_flags``, ``alternate_configs``, ``generate_path``, ``solve_position_batch``)
    from :class:`~stackik.global_ik.GlobalIKMixin`.

    Args:
        robot: The robot; the solver shares (and updates) its kinematics cache.
        dt: Control period [s] used to turn position limits into velocity bounds.
    """

    def __init__(self, robot: RobotModel, dt: float = 0.01) -> None:
        self._robot = robot
        self.dt = dt
        self._tasks: dict[str, Task] = {}
        self._position_limits = True
        self._velocity_limits = True
        self._limit_margin = 0.0
        self._damping = DEFAULT_DAMPING
        self._tolerance = DEFAULT_TOLERANCE
        self._max_iterations: int | None = None
        self._joint_weights = np.ones(robot.nv)
        self._timing = False
        self._collision: CollisionConstraint | None = None
        self._com: ComPolygonConstraint | None = None
        self._relative: RelativePoseConstraint | None = None
        self._linear: LinearConstraint | None = None
        self._tight_points: list[TightPointConstraint] = []
        self._tight_poses: list[TightFramePoseConstraint] = []
        self._base_pos_bounds: tuple[np.ndarray, np.ndarray] | None = None
        self._base_ori_bounds: tuple[np.ndarray, np.ndarray] | None = None
        self._sns: SNSSolver | None = None
        self._plan_key: tuple = ()
        self._plan_cache: list | None = None
        self._all_scale = True
        self._index_limited_joints()

    def _index_limited_joints(self) -> None:
        """Joints whose position limits become velocity bounds: one-DoF, finite limits."""
        m = self._robot.model
        iq, iv = [], []
        for j in range(1, m.njoints):
            jm = m.joints[j]
            if jm.shortname() in _SCALAR_JOINTS and jm.nq == 1:
                iq.append(jm.idx_q)
                iv.append(jm.idx_v)
        self._lim_q = np.array(iq, dtype=int)
        self._lim_v = np.array(iv, dtype=int)

    # -- properties and settings ---------------------------------------------------------
    @property
    def robot(self) -> RobotModel:
        """The robot model."""
        return self._robot

    @property
    def dt(self) -> float:
        """Control period [s]."""
        return self._dt

    @dt.setter
    def dt(self, value: float) -> None:
        try:
            v = float(value)
        except (TypeError, ValueError):
            v = float("nan")
        if not (np.isfinite(v) and v > 0):
            raise InvalidInput(f"dt must be positive and finite, got {value!r}")
        self._dt = v

    @property
    def tasks(self) -> list[Task]:
        """Registered tasks in insertion order."""
        return list(self._tasks.values())

    def set_damping(self, damping: float) -> None:
        """Damping of near-singular directions of the pseudo-inverse (>= 0)."""
        if not (np.isfinite(damping) and damping >= 0):
            raise InvalidInput(f"damping must be finite and >= 0, got {damping}")
        self._damping = float(damping)
        self._sns = None

    def set_tolerance(self, tolerance: float) -> None:
        """Singular-value threshold below which the pseudo-inverse is damped (>= 0)."""
        if not (np.isfinite(tolerance) and tolerance >= 0):
            raise InvalidInput(f"tolerance must be finite and >= 0, got {tolerance}")
        self._tolerance = float(tolerance)
        self._sns = None

    def set_max_iterations(self, max_iter: int) -> None:
        """Cap on SNS saturation iterations per priority level (>= 1)."""
        if int(max_iter) < 1:
            raise InvalidInput(f"max_iter must be >= 1, got {max_iter}")
        self._max_iterations = int(max_iter)
        self._sns = None

    def set_joint_weights(self, weights: object) -> None:
        """Per-joint metric weights (size nv, > 0): a heavier joint moves less."""
        w = _validate.vector(weights, self._robot.nv, "joint weights")
        if (w <= 0).any():
            raise InvalidInput("joint weights must be > 0")
        self._joint_weights = w
        self._sns = None

    def enable_position_limits(self, enable: bool) -> None:
        """Turn the position-limit velocity bounds on or off."""
        self._position_limits = bool(enable)

    def enable_velocity_limits(self, enable: bool) -> None:
        """Turn the velocity-limit bounds on or off."""
        self._velocity_limits = bool(enable)

    def set_limit_margin(self, margin: float) -> None:
        """Keep joints ``margin`` [rad or m] inside their position limits (simIK limit margin)."""
        if not (np.isfinite(margin) and margin >= 0):
            raise InvalidInput(f"margin must be finite and >= 0, got {margin}")
        self._limit_margin = float(margin)

    def enable_timing_breakdown(self, enable: bool) -> None:
        """Fill ``VelocitySolverResult.timings`` with per-phase times [ms]."""
        self._timing = bool(enable)

    @staticmethod
    def calculate_velocity_box_constraint(
        position_margin_lower: float,
        position_margin_upper: float,
        velocity_limit: float,
        acceleration_limit: float,
        dt: float,
    ) -> tuple[float, float]:
        """Velocity bounds of one joint; see :func:`stackik.constraints.limits.calculate_velocity_box_constraint`."""  # noqa: E501
        return calculate_velocity_box_constraint(
            position_margin_lower, position_margin_upper, velocity_limit, acceleration_limit, dt
        )

    # -- tasks -----------------------------------------------------------------------------
    def _add(self, task: Task) -> Task:
        if task.name in self._tasks:
            raise InvalidInput(f"a task named {task.name!r} already exists")
        self._tasks[task.name] = task
        self._plan_cache = None
        return task

    def add_frame_task(
        self, name: str, frame_name: str, task_type: TaskType = TaskType.FRAME_POSE
    ) -> FrameTask:
        """Add a task on a frame's pose, position or orientation (target: current pose)."""
        return self._add(FrameTask(name, self._robot, frame_name, task_type))  # type: ignore[return-value]

    def add_posture_task(
        self, name: str, controlled_joints: Sequence[int | str] | None = None
    ) -> PostureTask:
        """Add a posture task on all actuated joints or on ``controlled_joints``."""
        return self._add(PostureTask(name, self._robot, controlled_joints))  # type: ignore[return-value]

    def add_com_task(self, name: str) -> COMTask:
        """Add a centre-of-mass task (target: current CoM)."""
        return self._add(COMTask(name, self._robot))  # type: ignore[return-value]

    def add_joint_task(self, name: str, joint_name: str, target_value: float = 0.0) -> JointTask:
        """Add a task on one joint's value [rad or m]."""
        return self._add(JointTask(name, self._robot, joint_name, target_value))  # type: ignore[return-value]

    def add_multi_joint_task(
        self, name: str, joint_names: Sequence[str], target_values: Sequence[float] | None = None
    ) -> MultiJointTask:
        """Add a task on several joints' values [rad or m]."""
        return self._add(MultiJointTask(name, self._robot, joint_names, target_values))  # type: ignore[return-value]

    def add_relative_frame_task(self, name: str, frame_a: str, frame_b: str) -> RelativeFrameTask:
        """Add a task on ``T_a^-1 T_b`` (target: current relative pose)."""
        return self._add(RelativeFrameTask(name, self._robot, frame_a, frame_b))  # type: ignore[return-value]

    def add_absolute_frame_task(
        self, name: str, frame_a: str, frame_b: str, alpha: float = 0.5
    ) -> AbsoluteFrameTask:
        """Add a task on the frame interpolated between a and b at ``alpha``."""
        return self._add(AbsoluteFrameTask(name, self._robot, frame_a, frame_b, alpha))  # type: ignore[return-value]

    def get_task(self, name: str) -> Task:
        """The task of that name.

        Raises:
            TaskNotFound: Unknown name (the error lists the closest names).
        """
        try:
            return self._tasks[name]
        except KeyError:
            raise TaskNotFound(name, self._tasks) from None

    def remove_task(self, name: str) -> None:
        """Remove a task by name (TaskNotFound if absent)."""
        self.get_task(name)
        del self._tasks[name]
        self._plan_cache = None

    def clear_tasks(self) -> None:
        """Remove every task."""
        self._tasks.clear()
        self._plan_cache = None

    def clear_all_target_velocities(self) -> None:
        """Remove the feed-forward velocity of every task."""
        for t in self._tasks.values():
            t.clear_target_velocity()

    # -- constraints -----------------------------------------------------------------------
    def configure_collision_constraint(
        self,
        min_distance: float,
        include_pairs: Sequence[tuple[str, str]] = (),
        exclude_pairs: Sequence[tuple[str, str]] = (),
        nearest_points_all_pairs: bool = True,
        max_constraints: int = 8,
        *,
        gain: float = 0.5,
        activation_margin: float = 0.05,
        patch_tolerance: float = 0.01,
        recovery_deadband: float = 5e-5,
    ) -> None:
        """Enable self-collision avoidance; see :class:`~stackik.constraints.collision.CollisionConstraint`."""  # noqa: E501
        self._collision = CollisionConstraint(
            "collision",
            self._robot,
            min_distance,
            include_pairs,
            exclude_pairs,
            nearest_points_all_pairs,
            max_constraints,
            gain,
            activation_margin,
            patch_tolerance,
            recovery_deadband,
        )

    def add_collision_constraint(
        self, link_pairs: Sequence[tuple[str, str]], min_distance: float = 0.05
    ) -> None:
        """Enable collision avoidance on the given link pairs only."""
        self.configure_collision_constraint(min_distance, include_pairs=link_pairs)

    def clear_collision_constraint(self) -> None:
        """Disable collision avoidance."""
        self._collision = None

    def _need_collision(self) -> CollisionConstraint:
        if self._collision is None:
            raise InvalidInput("no collision constraint: call configure_collision_constraint first")
        return self._collision

    def set_collision_pair_min_distance(
        self, link_a: str, link_b: str, min_distance: float, activate_when_clear: bool = True
    ) -> None:
        """Override ``min_distance`` [m] for the pairs between two links."""
        self._need_collision().set_pair_min_distance(
            link_a, link_b, min_distance, activate_when_clear
        )

    def clear_collision_pair_min_distance(self, link_a: str, link_b: str) -> None:
        """Return the pairs between two links to the global ``min_distance``."""
        self._need_collision().clear_pair_min_distance(link_a, link_b)

    def get_collision_pair_min_distance_overrides(self) -> list[tuple[str, float]]:
        """Per-pair overrides as ``("geom_a|geom_b", min_distance)``."""
        return self._collision.pair_min_distance_overrides() if self._collision else []

    def get_collision_min_distance(self) -> float:
        """The global collision ``min_distance`` [m], or -1 without a collision constraint."""
        return self._collision.min_distance if self._collision else -1.0

    def get_active_collision_pairs(self) -> list[tuple[str, str]]:
        """Geometry pairs the collision constraint watches."""
        return self._collision.pair_names() if self._collision else []

    def configure_com_constraint(
        self,
        support_polygon: object,
        margin: float = 0.0,
        frame_name: str = "world",
        com_vel_max: float = 0.4,
        com_acc_max: float = 0.1,
        use_acceleration_limits: bool = True,
        proximity_fraction: float = 0.0,
    ) -> None:
        """Keep the CoM over a support polygon; see :class:`~stackik.constraints.com_polygon.ComPolygonConstraint`."""  # noqa: E501
        self._com = ComPolygonConstraint(
            "com_polygon",
            self._robot,
            support_polygon,
            margin,
            frame_name,
            com_vel_max,
            com_acc_max,
            use_acceleration_limits,
            proximity_fraction,
        )

    def clear_com_constraint(self) -> None:
        """Disable the CoM support-polygon constraint."""
        self._com = None

    def get_com_proximity_threshold(self) -> float:
        """Row activation distance of the CoM constraint [m] (0 without one)."""
        return self._com.proximity_threshold if self._com else 0.0

    def configure_relative_pose_constraint(
        self,
        frame_a: str,
        frame_b: str,
        lower_bounds: object,
        upper_bounds: object,
        axis_mask: object = None,
        *,
        reference_rotation: object | None = None,
    ) -> None:
        """Bound ``T_a^-1 T_b`` per axis; see :class:`~stackik.constraints.relative_pose.RelativePoseConstraint`."""  # noqa: E501
        self._relative = RelativePoseConstraint(
            "relative_pose",
            self._robot,
            frame_a,
            frame_b,
            lower_bounds,
            upper_bounds,
            axis_mask,
            reference_rotation=reference_rotation,
        )

    def clear_relative_pose_constraint(self) -> None:
        """Disable the relative-pose constraint."""
        self._relative = None

    def set_linear_velocity_constraints(
        self, C: object, lower_bounds: object, upper_bounds: object
    ) -> None:
        """Replace the user rows ``lower <= C v <= upper``."""
        self._linear = LinearConstraint("linear", self._robot, C, lower_bounds, upper_bounds)

    def append_linear_velocity_constraints(
        self, C: object, lower_bounds: object, upper_bounds: object
    ) -> None:
        """Add user rows below the existing ones."""
        if self._linear is None:
            self.set_linear_velocity_constraints(C, lower_bounds, upper_bounds)
        else:
            self._linear.append(C, lower_bounds, upper_bounds)

    def clear_linear_velocity_constraints(self) -> None:
        """Remove all user rows."""
        self._linear = None

    def get_linear_velocity_constraint_rows(self) -> int:
        """Number of user rows."""
        return 0 if self._linear is None else int(self._linear.C.shape[0])

    def add_tight_point_constraint(
        self,
        frame_name: str,
        target_point: object,
        position_epsilon: float = 1e-5,
        axis_mask: object = None,
    ) -> None:
        """Hold a frame's origin within ``position_epsilon`` [m] of a world point."""
        self._tight_points.append(
            TightPointConstraint(
                f"tight_point_{len(self._tight_points)}",
                self._robot,
                frame_name,
                target_point,
                position_epsilon,
                axis_mask,
            )
        )

    def clear_tight_point_constraints(self) -> None:
        """Remove all tight point constraints."""
        self._tight_points.clear()

    def add_tight_frame_pose_constraint(
        self,
        frame_name: str,
        target_pose: object,
        position_epsilon: float = 1e-5,
        orientation_epsilon: float = 1e-4,
        axis_mask: object = None,
    ) -> None:
        """Hold a frame within an epsilon box of a world pose."""
        self._tight_poses.append(
            TightFramePoseConstraint(
                f"tight_pose_{len(self._tight_poses)}",
                self._robot,
                frame_name,
                target_pose,
                position_epsilon,
                orientation_epsilon,
                axis_mask,
            )
        )

    def clear_tight_frame_pose_constraints(self) -> None:
        """Remove all tight frame-pose constraints."""
        self._tight_poses.clear()

    def set_base_position_bounds(self, lower: object, upper: object) -> None:
        """Bound the floating base's world position [m]."""
        self._need_floating()
        self._base_pos_bounds = _validate.bounds(lower, upper, 3, "base position bounds")

    def set_base_orientation_bounds(self, lower: object, upper: object) -> None:
        """Bound the floating base's angular velocity (local axes) [rad/s]."""
        self._need_floating()
        self._base_ori_bounds = _validate.bounds(lower, upper, 3, "base orientation bounds")

    def clear_base_bounds(self) -> None:
        """Remove the floating-base bounds."""
        self._base_pos_bounds = self._base_ori_bounds = None

    def _need_floating(self) -> None:
        if not self._robot.is_floating_base:
            raise InvalidInput("the robot has no floating base")

    def _constraints(self) -> list[Constraint]:
        out: list[Constraint] = [
            c for c in (self._collision, self._com, self._relative, self._linear) if c
        ]
        return out + self._tight_points + self._tight_poses

    # -- building --------------------------------------------------------------------------
    def _box(self, apply_limits: bool) -> tuple[np.ndarray, np.ndarray]:
        r = self._robot
        nv = r.nv
        lo, hi = np.full(nv, -np.inf), np.full(nv, np.inf)
        if apply_limits and self._velocity_limits:
            vmax = r.model.velocityLimit
            lo, hi = -vmax.copy(), vmax.copy()
        if apply_limits and self._position_limits and self._lim_q.size:
            m = r.model
            limit_box(
                r._q,
                self._lim_q,
                self._lim_v,
                m.lowerPositionLimit,
                m.upperPositionLimit,
                self._limit_margin,
                r._acceleration_limits,
                self._dt,
                lo,
                hi,
            )
        if self._base_ori_bounds is not None:
            lo[3:6] = np.maximum(lo[3:6], self._base_ori_bounds[0])
            hi[3:6] = np.minimum(hi[3:6], self._base_ori_bounds[1])
        return lo, hi

    def _base_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r = self._robot
        lo, hi = self._base_pos_bounds  # type: ignore[misc]
        # The free-flyer's linear velocity is in the base frame: world rate = R v[:3].
        R = r.data.oMi[1].rotation
        C = np.zeros((3, r.nv))
        C[:, :3] = R
        p = r._q[:3]
        return C, (lo - p) / self._dt, (hi - p) / self._dt

    def build_problem(self, current_q: object | None = None, apply_limits: bool = True) -> Problem:
        """Assemble the stacked problem of one step without solving it.

        Args:
            current_q: Configuration (size nq); the robot's current one when omitted.
            apply_limits: Include joint position/velocity limit bounds.

        Raises:
            ShapeError, NonFiniteInput: Bad ``current_q``.
        """
        if current_q is not None and not (hasattr(current_q, "__len__") and len(current_q) == 0):  # type: ignore[arg-type]
            self._robot.update_kinematics(current_q)
        return self._build(apply_limits)

    def _plan(self) -> list[tuple[list[Task], list[float], TaskSolveMode]]:
        """Priority levels of the active tasks: ``(tasks, sqrt weights, mode)``, cached.

        The cache key is every task's (priority, weight, active, mode); tasks added or
        removed change the registry and invalidate it too.
        """
        key = tuple((t.priority, t.weight, t.active, t.solve_mode) for t in self._tasks.values())
        if key != self._plan_key or self._plan_cache is None:
            groups: dict[int, list[Task]] = {}
            for t in self._tasks.values():
                if t.active:
                    groups.setdefault(int(t.priority), []).append(t)
            for p, group in groups.items():
                mixed = {t.solve_mode for t in group}
                if len(mixed) > 1:
                    raise InvalidInput(
                        f"tasks {[t.name for t in group]} share priority {p} but not a solve "
                        f"mode ({sorted(m.name for m in mixed)}): one level has one mode"
                    )
            self._plan_cache = [
                (groups[p], [float(np.sqrt(t.weight)) for t in groups[p]], groups[p][0].solve_mode)
                for p in sorted(groups)
            ]
            self._plan_key = key
            self._all_scale = all(m == TaskSolveMode.SCALE for _, _, m in self._plan_cache)
        return self._plan_cache

    def _build(self, apply_limits: bool) -> Problem:
        levels, names, modes = [], [], []
        for group, roots, mode in self._plan():
            for t in group:
                t.update()
            if len(group) == 1 and roots[0] == 1.0:
                levels.append(group[0].rows_for_solver())
            else:
                parts = [t.rows_for_solver() for t in group]
                levels.append(
                    (
                        np.vstack([w * J for w, (J, _) in zip(roots, parts, strict=True)]),
                        np.concatenate([w * x for w, (_, x) in zip(roots, parts, strict=True)]),
                    )
                )
            names.append([t.name for t in group])
            modes.append(mode)
        box_lo, box_hi = self._box(apply_limits)
        rows, slices, start = [], {}, 0
        for c in self._constraints():
            if c.active:
                block = c.rows(self._dt)
                rows.append(block)
                slices[c.name] = slice(start, start + block[0].shape[0])
                start += block[0].shape[0]
        if self._base_pos_bounds is not None:
            block = self._base_rows()
            rows.append(block)
            slices["base_position"] = slice(start, start + 3)
        nv = self._robot.nv
        if rows:
            C = np.vstack([b[0] for b in rows])
            lower = np.concatenate([b[1] for b in rows])
            upper = np.concatenate([b[2] for b in rows])
        else:
            C, lower, upper = np.zeros((0, nv)), np.zeros(0), np.zeros(0)
        return Problem(levels, names, modes, C, lower, upper, box_lo, box_hi, slices)

    # -- solving ---------------------------------------------------------------------------
    def _solver(self) -> SNSSolver:
        if self._sns is None:
            self._sns = SNSSolver(
                self._robot.nv,
                joint_weights=self._joint_weights,
                damping=self._damping,
                tolerance=self._tolerance,
                max_iterations=self._max_iterations,
            )
        return self._sns

    def solve_velocity(
        self, current_q: object | None = None, apply_limits: bool = True
    ) -> VelocitySolverResult:
        """Solve one step for the joint velocity.

        Args:
            current_q: Configuration (size nq); the robot's current one when omitted or empty.
            apply_limits: Include joint position/velocity limit bounds.

        Returns:
            The :class:`VelocitySolverResult`; ``solution`` is v (size nv) [rad/s or m/s].
            Bad input gives status INVALID_INPUT (never an exception).
        """
        t0 = time.perf_counter()
        try:
            if current_q is not None and not (
                hasattr(current_q, "__len__") and len(current_q) == 0
            ):  # type: ignore[arg-type]
                self._robot.update_kinematics(current_q)
            t1 = time.perf_counter()
            problem = self._build(apply_limits)
        except StackIKError as exc:
            nlev = len({t.priority for t in self._tasks.values() if t.active})
            return VelocitySolverResult(
                solution=np.zeros(self._robot.nv),
                status=SolverStatus.INVALID_INPUT,
                status_message=str(exc),
                task_scales=np.zeros(nlev),
                task_errors=np.zeros(nlev),
                computation_time_ms=(time.perf_counter() - t0) * 1e3,
            )
        t2 = time.perf_counter()
        goals = [lvl[1] for lvl in problem.levels]
        jacs = [lvl[0] for lvl in problem.levels]
        result = self._solver().solve(
            goals,
            jacs,
            problem.C,
            problem.lower,
            problem.upper,
            box_lower=problem.box_lower,
            box_upper=problem.box_upper,
            modes=None if self._all_scale else problem.modes,
        )
        t3 = time.perf_counter()
        result.computation_time_ms = (t3 - t0) * 1e3
        if self._timing:
            result.timings = {
                "kinematics_ms": (t1 - t0) * 1e3,
                "problem_ms": (t2 - t1) * 1e3,
                "solve_ms": (t3 - t2) * 1e3,
            }
        return result

    def solve_velocity_dq(
        self, current_q: object | None = None, apply_limits: bool = True
    ) -> np.ndarray:
        """Like :meth:`solve_velocity` but return only the joint velocity (zeros on failure)."""
        return self.solve_velocity(current_q, apply_limits).solution

    def __repr__(self) -> str:
        return (
            f"KinematicsSolver(robot={self._robot!r}, tasks={list(self._tasks)}, "
            f"constraints={[c.name for c in self._constraints()]}, dt={self._dt})"
        )
