"""KinematicsSolver: the EmbodiK-named facade over the velocity engine and the IK layers.

The facade holds no logic of its own. It composes:

- :class:`~stackik.engine.VelocityEngine`: tasks, constraints, one velocity step;
- :class:`~stackik.ik.position.PositionIK`: ``solve_position``, stepping;
- :class:`~stackik.ik.global_.GlobalIK`: ``find_configs``, branches, alternates, and on it
  :func:`~stackik.ik.paths.generate_path` and
  :func:`~stackik.ik.batch.solve_position_batch`;

and gives every capability its seed-004 (EmbodiK) name. Each solver owns its data:
solvers on one robot may run in parallel threads; one solver serializes concurrent
calls.
"""

from __future__ import annotations

import pickle
import threading
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _jit, _validate
from .analytic import AnalyticDetection
from .constraints import (
    CollisionConstraint,
    ComPolygonConstraint,
    Constraint,
    FloatingBaseBounds,
    LinearConstraint,
    RelativePoseConstraint,
    TightFramePoseConstraint,
    TightPointConstraint,
)
from .constraints.collision import (
    CACHE_CANDIDATE_MARGIN,
    CACHE_MAX_CANDIDATES,
    CACHE_REFRESH_INTERVAL,
    CollisionSettings,
    CollisionTuningMode,
)
from .constraints.limits import (
    SATURATION_EXIT_FRACTION,
    SATURATION_EXIT_MARGIN,
    embodik_velocity_box,
)
from .engine import Problem, VelocityEngine
from .errors import CollisionMarginWarning, InvalidInput
from .ik.batch import BatchIKOptions, solve_position_batch
from .ik.branches import BranchFlags
from .ik.checks import Validator
from .ik.global_ import GlobalIK
from .ik.paths import generate_path
from .ik.position import PositionIK, PositionIKOptions, PositionStepOptions
from .ik.recovery import ElasticBand, StallHandler
from .model import Kinematics, RobotModel
from .model.pipeline import has_movers
from .model.world import World
from .results import (
    BatchIKResult,
    CollisionDebugInfo,
    FindConfigsResult,
    PathResult,
    PositionIKResult,
    VelocitySolverResult,
)
from .tasks import (
    AbsoluteFrameTask,
    COMTask,
    FrameTask,
    JointTask,
    MultiJointTask,
    PostureTask,
    RelativeFrameTask,
    Task,
    TaskType,
)

__all__ = ["KinematicsSolver", "Problem"]

_COLLISION, _COM, _RELATIVE, _LINEAR, _BASE = (
    "collision",
    "com_polygon",
    "relative_pose",
    "linear",
    "base_bounds",
)


#: EmbodiK's default joint-limit recovery gain (a solver starts with it).
LIMIT_RECOVERY_GAIN = 0.5
#: EmbodiK's default recovery enter epsilon [rad or m]: smaller violations are held.
LIMIT_RECOVERY_ENTER = 1e-4


class KinematicsSolver:
    """Prioritized velocity IK on a :class:`RobotModel`, with position and global IK.

    Args:
        robot: The robot description (shared; the solver owns its own kinematics data,
            which starts at the robot's current configuration).
        dt: Control period [s] used to turn position limits into velocity bounds.
    """

    def __init__(self, robot: RobotModel, dt: float = 0.01) -> None:
        self._engine = VelocityEngine(robot, dt)
        limits = self._engine.joint_limits  # EmbodiK 0.23.2's limit-recovery defaults
        limits.recovery_gain = LIMIT_RECOVERY_GAIN
        limits.set_recovery_hysteresis(LIMIT_RECOVERY_ENTER, 0.0)
        self._position = PositionIK(self._engine)
        self._global = GlobalIK(self._engine)
        self._stall = StallHandler()
        self._band = ElasticBand(robot.nv)
        self._collision_probe: CollisionConstraint | None = None
        #: The collision settings while there is no collision constraint (see
        #: configure_collision_constraint).
        self._collision_settings = CollisionSettings()
        self._robot_version = robot.kinematics.version

    # -- composition -------------------------------------------------------------------
    @property
    def engine(self) -> VelocityEngine:
        """The velocity engine (tasks, constraints, one step)."""
        return self._engine

    @property
    def kinematics(self) -> Kinematics:
        """The solver's own kinematics cache (its Pinocchio Data)."""
        return self._engine.kinematics

    @property
    def robot(self) -> RobotModel:
        """The robot model."""
        return self._engine.robot

    # -- the world -------------------------------------------------------------------------
    @property
    def _world(self) -> World | None:
        return self._engine.world

    @property
    def world(self) -> World:
        """The world this solver avoids: its own (:meth:`set_world`) or the robot's."""
        return self._engine.world if self._engine.world is not None else self.robot.world

    def set_world(self, world: World | None) -> None:
        """Avoid ``world`` (obstacles, attached objects) instead of ``robot.world``.

        Velocity steps (the collision constraint), position and global IK and paths
        then read it; None returns to the robot's world.

        Raises:
            InvalidInput: Not a :class:`~stackik.model.world.World`, or its attached
                objects name links the robot lacks.
        """
        old = self._engine.world
        if world is not None:
            if not isinstance(world, World):
                raise InvalidInput(f"expected a stackik World, got {type(world).__name__}")
            self._engine.bind_world(world)
        if old is not None and old is not world:
            old.unbind(self._engine)  # (it no longer places that world's attached objects)
        self._engine.world = world
        col = self._collision_constraint()
        if col is not None:
            col.set_world(world)

    # -- settings --------------------------------------------------------------------------
    @property
    def dt(self) -> float:
        """Control period [s]."""
        return self._engine.dt

    @dt.setter
    def dt(self, value: float) -> None:
        self._engine.dt = value

    def set_damping(self, damping: float) -> None:
        """Damping of near-singular directions of the pseudo-inverse (>= 0)."""
        self._engine.damping = damping

    def get_damping(self) -> float:
        """Damping of near-singular directions of the pseudo-inverse."""
        return self._engine.damping

    def set_tolerance(self, tolerance: float) -> None:
        """Singular-value threshold below which the pseudo-inverse is damped (>= 0)."""
        self._engine.tolerance = tolerance

    def get_tolerance(self) -> float:
        """Singular-value threshold below which the pseudo-inverse is damped."""
        return self._engine.tolerance

    def set_max_iterations(self, max_iter: int) -> None:
        """Cap on SNS saturation iterations per priority level (>= 1)."""
        self._engine.max_iterations = max_iter

    def set_joint_weights(self, weights: object) -> None:
        """Per-joint metric weights (size nv, > 0): a heavier joint moves less."""
        self._engine.joint_weights = weights

    def enable_position_limits(self, enable: bool) -> None:
        """Turn the position-limit velocity bounds on or off."""
        self._engine.joint_limits.position_limits = enable

    def position_limits_enabled(self) -> bool:
        """Whether the position-limit velocity bounds are on."""
        return self._engine.joint_limits.position_limits

    def enable_velocity_limits(self, enable: bool) -> None:
        """Turn the velocity-limit bounds on or off."""
        self._engine.joint_limits.velocity_limits = enable

    def velocity_limits_enabled(self) -> bool:
        """Whether the velocity-limit bounds are on."""
        return self._engine.joint_limits.velocity_limits

    def set_limit_margin(self, margin: float) -> None:
        """Keep joints ``margin`` [rad or m] inside their position limits (simIK limit margin)."""
        self._engine.joint_limits.margin = margin

    def get_limit_margin(self) -> float:
        """The position-limit margin [rad or m]."""
        return self._engine.joint_limits.margin

    def enable_timing_breakdown(self, enable: bool) -> None:
        """Fill ``VelocitySolverResult.timings`` with per-phase times [ms].

        Keys: ``kinematics_ms`` (the Pinocchio pass), ``problem_ms`` (task rows, joint
        box and constraint rows), ``solve_ms`` (SNS), and ``<constraint name>_ms`` for
        each constraint's rows (part of ``problem_ms``; e.g. ``collision_ms``).
        """
        self._engine.timing = enable

    def calculate_velocity_box_constraint(
        self,
        position_margin_lower: float,
        position_margin_upper: float,
        velocity_limit: float,
        acceleration_limit: float,
        dt: float,
        min_velocity_headroom: float = -1.0,
        headroom_activation_margin: float = 0.01,
    ) -> tuple[float, float]:
        """EmbodiK's velocity bounds of one joint for one step [rad/s or m/s].

        The formula of EmbodiK 0.23.2 (:func:`~stackik.constraints.limits.embodik_velocity_box`)
        with this solver's limit-recovery settings (``set_limit_recovery_gain``,
        ``set_limit_recovery_hysteresis``, ``set_limit_exit_release_margin``,
        ``enable_saturation_exit_behavior``). One deliberate difference: a headroom is
        capped by the velocity limit and by ``margin / dt``. The solver's own box
        (``build_problem().box_lower``) uses the sampled-data braking bound instead
        (:func:`stackik.constraints.limits.calculate_velocity_box_constraint`).

        Args:
            position_margin_lower: ``q - q_min`` [rad or m].
            position_margin_upper: ``q_max - q`` [rad or m].
            velocity_limit: ``v_max`` > 0 [rad/s or m/s].
            acceleration_limit: ``a_max`` > 0 [rad/s^2 or m/s^2].
            dt: Step length > 0 [s].
            min_velocity_headroom: Minimum speed toward a limit for joints farther than
                ``headroom_activation_margin`` from it [rad/s or m/s]; negative: off.
            headroom_activation_margin: See ``min_velocity_headroom`` [rad or m].

        Raises:
            InvalidInput: NaN margins, limits not > 0, ``dt`` not positive and finite.
        """
        limits = self._engine.joint_limits
        enter, leave = limits.recovery_hysteresis
        return embodik_velocity_box(
            position_margin_lower,
            position_margin_upper,
            velocity_limit,
            acceleration_limit,
            dt,
            min_velocity_headroom,
            headroom_activation_margin,
            recovery_gain=limits.recovery_gain,
            enter_epsilon=enter,
            exit_epsilon=leave,
            release_margin=limits.release_margin,
            saturation_exit=self.saturation_exit_behavior_enabled(),
        )

    # -- tasks -----------------------------------------------------------------------------
    @property
    def tasks(self) -> list[Task]:
        """Registered tasks in insertion order."""
        return self._engine.tasks

    def add_task(self, task: Task) -> Task:
        """Register a task of any family built on :attr:`kinematics` (returns it)."""
        return self._engine.add_task(task)

    def _sync_with_robot(self) -> None:
        """Adopt the robot's configuration if it was updated since the last look.

        EmbodiK's solver and robot share one state: a task added after
        ``robot.update_kinematics(q)`` starts at that ``q``'s pose. A task adder does
        the same here (the solver's cache then moves to ``q``); the solves themselves
        never read the robot's cache.
        """
        own = self.robot.kinematics
        if own.version != self._robot_version:
            self._robot_version = own.version
            with self._engine.lock:
                self._engine.update(own.q.copy())

    def _synced(self) -> Kinematics:
        self._sync_with_robot()
        return self.kinematics

    def _added(self, task: Task, priority: int | None, weight: float | None) -> Any:
        if priority is not None:
            task.priority = priority
        if weight is not None:
            task.weight = weight
        return self._engine.add_task(task)

    def add_frame_task(
        self,
        name: str,
        frame_name: str,
        task_type: TaskType = TaskType.FRAME_POSE,
        *,
        priority: int | None = None,
        weight: float | None = None,
    ) -> FrameTask:
        """Add a task on a frame's pose, position or orientation (target: current pose).

        ``priority`` (0 the highest) and ``weight`` default to the task's (0 and 1).
        """
        return self._added(FrameTask(name, self._synced(), frame_name, task_type), priority, weight)

    def add_posture_task(
        self,
        name: str,
        controlled_joints: Sequence[int | str] | None = None,
        *,
        priority: int | None = None,
        weight: float | None = None,
    ) -> PostureTask:
        """Add a posture task on all actuated joints or on ``controlled_joints``.

        As in EmbodiK, a posture task defaults to priority 10 and weight 0.1 (below the
        usual priority-0 tasks).
        """
        return self._added(PostureTask(name, self._synced(), controlled_joints), priority, weight)

    def add_com_task(
        self, name: str, *, priority: int | None = None, weight: float | None = None
    ) -> COMTask:
        """Add a centre-of-mass task (target: current CoM)."""
        return self._added(COMTask(name, self._synced()), priority, weight)

    def add_joint_task(
        self,
        name: str,
        joint_name: str,
        target_value: float = 0.0,
        *,
        priority: int | None = None,
        weight: float | None = None,
    ) -> JointTask:
        """Add a task on one joint's value [rad or m]."""
        task = JointTask(name, self._synced(), joint_name, target_value)
        return self._added(task, priority, weight)

    def add_multi_joint_task(
        self,
        name: str,
        joint_names: Sequence[str],
        target_values: Sequence[float] | None = None,
        *,
        priority: int | None = None,
        weight: float | None = None,
    ) -> MultiJointTask:
        """Add a task on several joints' values [rad or m]."""
        task = MultiJointTask(name, self._synced(), joint_names, target_values)
        return self._added(task, priority, weight)

    def add_relative_frame_task(
        self,
        name: str,
        frame_a: str,
        frame_b: str,
        *,
        priority: int | None = None,
        weight: float | None = None,
    ) -> RelativeFrameTask:
        """Add a task on ``T_a^-1 T_b`` (target: current relative pose)."""
        task = RelativeFrameTask(name, self._synced(), frame_a, frame_b)
        return self._added(task, priority, weight)

    def add_absolute_frame_task(
        self,
        name: str,
        frame_a: str,
        frame_b: str,
        alpha: float = 0.5,
        *,
        priority: int | None = None,
        weight: float | None = None,
    ) -> AbsoluteFrameTask:
        """Add a task on the frame interpolated between a and b at ``alpha``."""
        task = AbsoluteFrameTask(name, self._synced(), frame_a, frame_b, alpha)
        return self._added(task, priority, weight)

    def get_task(self, name: str) -> Task:
        """The task of that name (TaskNotFound lists the closest names)."""
        return self._engine.get_task(name)

    def remove_task(self, name: str) -> None:
        """Remove a task by name (TaskNotFound if absent)."""
        self._engine.remove_task(name)

    def clear_tasks(self) -> None:
        """Remove every task."""
        self._engine.clear_tasks()

    def clear_all_target_velocities(self) -> None:
        """Remove the feed-forward velocity of every task."""
        for t in self._engine.tasks:
            t.clear_target_velocity()

    # -- constraints -------------------------------------------------------------------------
    @property
    def constraints(self) -> list[Constraint]:
        """Registered constraints in stacking order (the joint limits included)."""
        return self._engine.constraints

    def add_constraint(self, constraint: Constraint, replace: bool = False) -> Constraint:
        """Register a constraint of any family built on :attr:`kinematics` (returns it)."""
        return self._engine.add_constraint(constraint, replace)

    def get_constraint(self, name: str) -> Constraint | None:
        """The constraint of that name (``"collision"``, ``"com_polygon"``, ...), or None."""
        return self._engine.get_constraint(name)

    def remove_constraint(self, name: str) -> bool:
        """Remove a constraint by name; return whether one was removed."""
        return self._engine.remove_constraint(name)

    def _collision_constraint(self) -> CollisionConstraint | None:
        c = self._engine.get_constraint(_COLLISION)
        return c if isinstance(c, CollisionConstraint) else None

    def _need_collision(self) -> CollisionConstraint:
        c = self._collision_constraint()
        if c is None:
            raise InvalidInput(
                "no collision constraint: call configure_collision_constraint first (a "
                "per-pair minimum distance names pairs the constraint watches)"
            )
        return c

    def _collision_knobs(self) -> CollisionSettings:
        """The collision constraint's settings, or the settings the next one starts with."""
        c = self._collision_constraint()
        return c.settings if c is not None else self._collision_settings

    def configure_collision_constraint(
        self,
        min_distance: float,
        include_pairs: Sequence[tuple[str, str]] = (),
        exclude_pairs: Sequence[tuple[str, str]] = (),
        nearest_points_all_pairs: bool = True,
        max_constraints: int = 8,
        *,
        gain: float | None = None,
        activation_margin: float | None = None,
        patch_tolerance: float | None = None,
        recovery_deadband: float | None = None,
    ) -> None:
        """Enable collision avoidance: self-collision and the world's obstacles.

        Every pair of the robot's own (minus exclusions), every robot geometry against
        every obstacle of the world (``robot.world``, or the solver's own from
        :meth:`set_world`) and the attached objects are watched; obstacles added, moved
        or removed later take effect at the next step. See
        :mod:`~stackik.constraints.collision`. A robot without collision geometry
        (``load_collisions=False``) is watched through its attached objects (each against
        every obstacle); with none either, there is nothing to watch: ``InvalidInput``.

        Called again (to change the pairs, say), the new constraint keeps every setting
        of the one it replaces that these arguments do not set: those of the
        ``set_collision_*`` methods (activation multiplier and gating, recovery scale,
        separation cap, query budget, repulsion deadband, tuning mode, pair cache, sphere
        test) and ``gain``, ``activation_margin``, ``patch_tolerance`` and
        ``recovery_deadband`` unless given (``min_distance``, the pair lists,
        ``nearest_points_all_pairs`` and ``max_constraints`` are always set, as in
        EmbodiK). Per-pair minimums (:meth:`set_collision_pair_min_distance`) are kept by
        name: a pair both constraints watch keeps its minimum, and they apply to the new
        pairs they name; one whose names name no pair now is kept and applies when they
        do again. Settings made before the first call, or after
        :meth:`clear_collision_constraint`, apply likewise (EmbodiK keeps them on the
        solver too).

        Args:
            min_distance: Minimum separation [m] (an obstacle may carry its own).
            include_pairs: Robot pairs (link or geometry names) to watch; empty: all
                active. World pairs are always watched unless excluded.
            exclude_pairs: Pairs to ignore, by link, geometry, obstacle or attached
                object name (``"*"``: anything).
            nearest_points_all_pairs: Query every broadphase candidate exactly; False:
                the most urgent one only, and every pair whose distance bound is below its
                minimum (the others are skipped: ``collision_budget_exhausted``).
            max_constraints: Largest number of watched pairs with rows per step.
            gain: Damper gain in (0, 1] (None: kept; first 0.5).
            activation_margin: Pairs farther than ``min_distance`` plus this [m] get no
                row (None: kept; first 0.05).
            patch_tolerance: Contact-patch support rows within this [m] (0: off; None:
                kept; first 0.01).
            recovery_deadband: Width [m] of the band above ``min_distance`` where a held
                pair is not pushed back (None: kept, as set by
                :meth:`set_collision_repulsion_deadband`; first 5e-5).
        """
        previous = self._collision_knobs()
        replaced = self._collision_constraint()
        c = CollisionConstraint(
            _COLLISION,
            self.kinematics,
            min_distance,
            include_pairs,
            exclude_pairs,
            _validate.flag(nearest_points_all_pairs, "nearest_points_all_pairs"),
            max_constraints,
            previous.gain if gain is None else gain,
            previous.activation_margin if activation_margin is None else activation_margin,
            previous.patch_tolerance if patch_tolerance is None else patch_tolerance,
            previous.recovery_deadband if recovery_deadband is None else recovery_deadband,
            self._world,
        )
        with self._engine.lock:  # (a step in another thread cannot change what is adopted)
            c.adopt(replaced if replaced is not None else previous)
            self._engine.add_constraint(c, replace=True)
        if self._stall.enabled:  # (the margin configured now is the one to restore)
            self._stall.enable(c.min_distance, c)

    def add_collision_constraint(
        self, link_pairs: Sequence[tuple[str, str]], min_distance: float = 0.05
    ) -> None:
        """Enable collision avoidance on the given link pairs only."""
        self.configure_collision_constraint(min_distance, include_pairs=link_pairs)

    def clear_collision_constraint(self) -> None:
        """Disable collision avoidance.

        Its settings and per-pair minimums (by name) are kept for the next
        :meth:`configure_collision_constraint`, as in EmbodiK.
        """
        with self._engine.lock:
            c = self._collision_constraint()
            if c is not None:
                kept = CollisionSettings()
                kept.take_settings(c.settings, configured=True)
                self._collision_settings = kept
            self._engine.remove_constraint(_COLLISION)

    def set_collision_pair_min_distance(
        self, link_a: str, link_b: str, min_distance: float, activate_when_clear: bool = True
    ) -> None:
        """Override ``min_distance`` [m] for the watched pairs between two names.

        A name is a link, geometry, attached-object or obstacle name; any other name
        stands for every robot geometry whose link (parent frame) name contains it, as
        the EmbodiK reference says (``("link2", "link4")``: the ``panda_link2`` /
        ``panda_link4`` pairs). With ``activate_when_clear`` (EmbodiK's default) a larger
        minimum waits, in the velocity steps, until the pair first reaches it, then
        holds; position and global IK, paths and reachability studies check
        configurations against it at once.

        The override is kept by name for as long as the constraint (and across
        :meth:`configure_collision_constraint`): after the pairs change (an object
        detached and attached again, an obstacle removed and added again, with any
        number of steps between) it holds for the pairs its names name again.

        Raises:
            InvalidInput: No collision constraint (call
                :meth:`configure_collision_constraint` first, as the reference says), a
                bad ``min_distance``, or the names share no watched pair (the message says
                why: the same geometry, an attached object's own body or allowed links,
                excluded, not an active robot pair).
            CollisionGeometryNotFound: A name is unknown and part of no link name.
        """
        self._need_collision().set_pair_min_distance(
            link_a, link_b, min_distance, _validate.flag(activate_when_clear, "activate_when_clear")
        )

    def clear_collision_pair_min_distance(self, link_a: str, link_b: str) -> None:
        """Return the pairs between two names to their default ``min_distance``.

        Names as in :meth:`set_collision_pair_min_distance`; the override kept by these
        names is dropped, also while they name no pair.

        Raises:
            InvalidInput: No collision constraint.
            CollisionGeometryNotFound: A name is unknown, part of no link name, and no
                override is kept by these names.
        """
        self._need_collision().clear_pair_min_distance(link_a, link_b)

    def get_collision_pair_min_distance_overrides(self) -> list[tuple[str, float]]:
        """Per-pair overrides as ``("geom_a|geom_b", min_distance)``."""
        c = self._collision_constraint()
        return c.pair_min_distance_overrides() if c else []

    def get_collision_min_distance(self) -> float:
        """The global collision ``min_distance`` [m], or -1 without a collision constraint."""
        c = self._collision_constraint()
        return c.min_distance if c else -1.0

    def get_active_collision_pairs(self) -> list[tuple[str, str]]:
        """Geometry pairs the collision constraint watches."""
        c = self._collision_constraint()
        return c.pair_names() if c else []

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
        """Keep the CoM over a support polygon (see :mod:`~stackik.constraints.com_polygon`).

        Args:
            support_polygon: N x 2 (or N x 3) convex polygon in ``frame_name``'s XY plane [m].
            margin: Fractional inward shrink in [0, 1).
            frame_name: Frame of the vertices.
            com_vel_max: Largest CoM approach speed to an edge [m/s].
            com_acc_max: Deceleration available to stop before an edge [m/s^2].
            use_acceleration_limits: Apply the braking bound.
            proximity_fraction: Row activation distance as a fraction of the inradius.
        """
        c = ComPolygonConstraint(
            _COM,
            self.kinematics,
            support_polygon,
            margin,
            frame_name,
            com_vel_max,
            com_acc_max,
            use_acceleration_limits,
            proximity_fraction,
        )
        self._engine.add_constraint(c, replace=True)

    def clear_com_constraint(self) -> None:
        """Disable the CoM support-polygon constraint."""
        self._engine.remove_constraint(_COM)

    def get_com_proximity_threshold(self) -> float:
        """Row activation distance of the CoM constraint [m] (0 without one)."""
        c = self._engine.get_constraint(_COM)
        return c.proximity_threshold if isinstance(c, ComPolygonConstraint) else 0.0

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
        """Bound ``T_a^-1 T_b`` per axis (see :mod:`~stackik.constraints.relative_pose`).

        Args:
            frame_a: Reference frame.
            frame_b: Constrained frame.
            lower_bounds: 6 lower bounds (position [m], rotation vector [rad]).
            upper_bounds: 6 upper bounds.
            axis_mask: 6 flags, 1 = constrained; every axis when None.
            reference_rotation: Relative rotation the rotation bounds are measured from.
        """
        c = RelativePoseConstraint(
            _RELATIVE,
            self.kinematics,
            frame_a,
            frame_b,
            lower_bounds,
            upper_bounds,
            axis_mask,
            reference_rotation=reference_rotation,
        )
        self._engine.add_constraint(c, replace=True)

    def clear_relative_pose_constraint(self) -> None:
        """Disable the relative-pose constraint."""
        self._engine.remove_constraint(_RELATIVE)

    def set_linear_velocity_constraints(
        self, C: object, lower_bounds: object, upper_bounds: object
    ) -> None:
        """Replace the user rows ``lower <= C dq <= upper``."""
        c = LinearConstraint(_LINEAR, self.kinematics, C, lower_bounds, upper_bounds)
        self._engine.add_constraint(c, replace=True)

    def append_linear_velocity_constraints(
        self, C: object, lower_bounds: object, upper_bounds: object
    ) -> None:
        """Add user rows below the existing ones."""
        c = self._engine.get_constraint(_LINEAR)
        if isinstance(c, LinearConstraint):
            c.append(C, lower_bounds, upper_bounds)
        else:
            self.set_linear_velocity_constraints(C, lower_bounds, upper_bounds)

    def clear_linear_velocity_constraints(self) -> None:
        """Remove all user rows."""
        self._engine.remove_constraint(_LINEAR)

    def get_linear_velocity_constraint_rows(self) -> int:
        """Number of user rows."""
        c = self._engine.get_constraint(_LINEAR)
        return c.max_rows() if c is not None else 0

    def add_tight_point_constraint(
        self,
        frame_name: str,
        target_point: object,
        position_epsilon: float = 1e-5,
        axis_mask: object = None,
    ) -> None:
        """Hold a frame's origin within ``position_epsilon`` [m] of a world point."""
        name = f"tight_point_{len(self._engine.constraints_of('tight_point'))}"
        c = TightPointConstraint(
            name, self.kinematics, frame_name, target_point, position_epsilon, axis_mask
        )
        self._engine.add_constraint(c)

    def clear_tight_point_constraints(self) -> None:
        """Remove all tight point constraints."""
        for c in self._engine.constraints_of("tight_point"):
            self._engine.remove_constraint(c.name)

    def add_tight_frame_pose_constraint(
        self,
        frame_name: str,
        target_pose: object,
        position_epsilon: float = 1e-5,
        orientation_epsilon: float = 1e-4,
        axis_mask: object = None,
    ) -> None:
        """Hold a frame within an epsilon box of a world pose (position [m], rotation [rad])."""
        name = f"tight_pose_{len(self._engine.constraints_of('tight_pose'))}"
        c = TightFramePoseConstraint(
            name,
            self.kinematics,
            frame_name,
            target_pose,
            position_epsilon,
            orientation_epsilon,
            axis_mask,
        )
        self._engine.add_constraint(c)

    def clear_tight_frame_pose_constraints(self) -> None:
        """Remove all tight frame-pose constraints."""
        for c in self._engine.constraints_of("tight_pose"):
            self._engine.remove_constraint(c.name)

    def _base_bounds(self) -> FloatingBaseBounds:
        c = self._engine.get_constraint(_BASE)
        if isinstance(c, FloatingBaseBounds):
            return c
        c = FloatingBaseBounds(_BASE, self.kinematics)
        self._engine.add_constraint(c)
        return c

    def set_base_position_bounds(self, lower: object, upper: object) -> None:
        """Bound the floating base's world position [m]."""
        self._base_bounds().set_position_bounds(lower, upper)

    def set_base_orientation_bounds(self, lower: object, upper: object) -> None:
        """Bound the floating base's angular velocity (local axes) [rad/s]."""
        self._base_bounds().set_orientation_bounds(lower, upper)

    def clear_base_bounds(self) -> None:
        """Remove the floating-base bounds."""
        self._engine.remove_constraint(_BASE)

    # -- velocity IK -------------------------------------------------------------------------
    def build_problem(
        self, current_q: object | None = None, apply_limits: bool = True, advance: bool = True
    ) -> Problem:
        """Assemble the stacked problem of one step without solving it (a copy).

        Args:
            current_q: Configuration (size nq); the solver's current one when omitted.
            apply_limits: Include joint position/velocity limit bounds.
            advance: Advance the constraints' step-to-step state (collision broadphase
                and learned margins, limit recovery flags, the ``last_*`` records) as a
                step does. ``False`` restores it afterwards, so inspecting a step in a
                running loop does not change the steps that follow.

        Raises:
            ShapeError, NonFiniteInput: Bad ``current_q``.
        """
        return self._engine.build_problem(current_q, apply_limits, advance)

    def solve_velocity(
        self,
        current_q: object | None = None,
        apply_limits: bool = True,
        stall_recovery: bool = False,
    ) -> VelocitySolverResult:
        """Solve one step for the joint velocity ``dq``.

        Args:
            current_q: Configuration (size nq); the solver's current one when omitted or
                empty.
            apply_limits: Include joint position/velocity limit bounds.
            stall_recovery: Enable the stall handler (with the collision constraint's
                current ``min_distance`` as nominal) if it is not enabled yet; it then
                stays enabled across calls (see :meth:`enable_stall_handler`).

        Returns:
            The :class:`VelocitySolverResult`; ``solution`` is ``dq`` (size nv)
            [rad/s or m/s]. Bad input gives status INVALID_INPUT (never an exception).
        """
        if stall_recovery is not False:  # (the default skips the check on the hot path)
            try:
                stall_recovery = _validate.flag(stall_recovery, "stall_recovery")
            except InvalidInput as exc:  # the hot path reports bad input, it never raises
                return self._engine.invalid_result(str(exc))
        with self._engine.lock:  # (the handlers read the step's pairs: one step at a time)
            if stall_recovery and not self._stall.enabled:
                col = self._collision_constraint()
                if col is not None:
                    self._stall.enable(col.min_distance)
            result = self._engine.solve(current_q, apply_limits)
            if not self._band.enabled and self._engine.scale_elastic:
                # EmbodiK: a SCALE_ELASTIC task turns the band on with its defaults (the
                # band acts between steps, so turning it on after this one is the same)
                self._band.configure(0.05, 0.01, 0.2, 3, True)
                self._band.enable(0.05)
            if self._stall.enabled or self._band.enabled:
                self._stall.after(result, self._collision_constraint(), self.dt)
                self._band.after(result, self._engine.joint_limits, self._engine.top_demand)
        return result

    def describe_saturation(self) -> list[str]:
        """What held the last velocity step back: each saturated joint and row, named.

        ``saturated_joints`` and ``saturated_constraints`` of a result are indices; this
        names them: ``joint 'panda_joint4' (velocity index 3) at a bound of its velocity
        box, dq = 0.1``, ``row 0: collision pair panda_link2_1/panda_link4_1 at 20.05 mm
        (min_distance 20.00 mm)``. A stalled step (``NO_PROGRESS``) names the joints and
        the constraints in its message; this gives each row. Describe a step before the
        next one (the rows are the last step's).

        Returns:
            One line per saturated joint, then one per saturated constraint row; empty
            before the first step or when nothing saturated.
        """
        return self._engine.describe_saturation()

    def solve_velocity_dq(
        self,
        current_q: object | None = None,
        apply_limits: bool = True,
        stall_recovery: bool = False,
    ) -> np.ndarray:
        """Like :meth:`solve_velocity` but return only ``dq`` (zeros on failure) [rad/s or m/s]."""
        return self.solve_velocity(current_q, apply_limits, stall_recovery).solution

    # -- position IK ---------------------------------------------------------------------------
    def solve_position(
        self,
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
        raises: the best configuration found is returned with a non-success status. The
        solver's kinematics cache is left at the returned configuration.

        Args:
            seed_q: Start configuration (size nq) [rad or m].
            target_pose: World pose of the frame: SE3 or 4x4 [m].
            frame_name: Frame to place.
            options: :class:`~stackik.ik.position.PositionIKOptions`.

        Returns:
            The :class:`~stackik.results.PositionIKResult` (``solution``: the iterate
            with the lowest error).

        Raises:
            ShapeError, NonFiniteInput: Bad ``seed_q`` or ``target_pose``.
            InvalidTransform: ``target_pose`` is not a rigid transform.
            FrameNotFound: Unknown frame.
            InvalidInput: Invalid options.
        """
        return self._position.solve_position(seed_q, target_pose, frame_name, options)

    def solve_position_in_tcp(
        self,
        seed_q: object,
        relative_target: object,
        frame_name: str,
        options: PositionIKOptions | None = None,
    ) -> PositionIKResult:
        """:meth:`solve_position` for a target relative to the frame at ``seed_q``.

        The world target is ``T_world_frame(seed_q) * relative_target``: e.g. a pure
        translation ``(0, 0, 0.05)`` moves the tool 5 cm along its own z axis.
        """
        return self._position.solve_position_in_tcp(seed_q, relative_target, frame_name, options)

    def solve_position_step(
        self,
        current_q: object,
        target: object,
        frame_task_name: str | PositionStepOptions | None = None,
        options: PositionStepOptions | None = None,
    ) -> PositionIKResult:
        """Teleoperation stepping with the solver's registered frame tasks.

        Three call forms (EmbodiK's overloads)::

            solve_position_step(q, T_world_target, "ee_task", options)
            solve_position_step(q, [TaskTarget("left", T_l), TaskTarget("right", T_r)], options)
            solve_position_step(q, TaskTarget("ee_task", T, 0.5, 0.2), options)

        Each target's pose is set on its registered frame task (and stays set after the
        call, as the latest command). Each step computes every target's pose error,
        asks for ``[k_p e_p ; k_o e_o] / dt`` (speeds clipped to the options' bounds),
        runs ONE velocity solve for all tasks and integrates ``delta_q = dq dt``. No task
        is created; each task's gain and feed-forward velocity are restored.

        Returns ``SUCCESS`` once every target is within tolerance or after
        ``max_steps`` steps (``converged`` tells which), ``NO_PROGRESS`` when the
        no-progress detector fires, or the velocity solver's failure status.

        This is the hot path: it never raises on bad input. A configuration or pose
        that is not finite, of the wrong shape or not a rigid transform, an unknown task
        name, a task that is not a frame task or appears twice, and bad options give
        status ``INVALID_INPUT`` with a message naming the fault, zero iterations and
        ``solution`` = the start configuration (the solver's current configuration
        when the start itself is invalid).
        """
        return self._position.solve_position_step(current_q, target, frame_task_name, options)

    # -- global IK -----------------------------------------------------------------------------
    def prepare_global_ik(self, frame_name: str) -> None:
        """Build (and compile or load) the chain of ``frame_name`` now, off the hot path.

        The first query on a frame otherwise pays the chain extraction (~0.1 ms), the
        detection and verification of its closed-form solver (a few ms) and, once per
        process, the loading of numba's cached kernels; none counts against a query's
        ``time_budget``.

        Raises:
            FrameNotFound: Unknown frame.
            InvalidInput: A joint on the path is not supported by the chain solver.
        """
        with self._engine.lock:
            self._global.prepare(frame_name)

    def analytic_ik(self, frame_name: str) -> AnalyticDetection:
        """Which closed-form solver :meth:`find_configs` uses for ``frame_name``, and why not.

        The chain is the one global IK searches on (from the world, or from the last
        joint a serial chain cannot model). See :mod:`stackik.analytic`.

        Returns:
            An :class:`~stackik.analytic.AnalyticDetection`: truthy with ``.solver``
            (``.family`` ``"ur"``, ``"opw"`` or ``"spherical"``, ``.parameters`` read from
            the description) when a closed form applies, else ``.reasons`` per family.

        Raises:
            InvalidInput: ``frame_name`` is not a string.
            FrameNotFound: Unknown frame.
        """
        frame_name = _validate.name(frame_name, "frame_name")
        with self._engine.lock:
            return self._global.analytic(frame_name)

    def find_configs(
        self,
        target_pose: object,
        frame_name: str,
        max_solutions: int | None = None,
        time_budget: float | None = 0.005,
        reference_q: object | None = None,
        validate: Validator | None = None,
        seed: int | None = None,
        *,
        all_branches: bool = False,
        analytic: bool = True,
        min_joint_distance: float | None = None,
        branch: object | None = None,
        locked_joints: Sequence[str] = (),
        metric: object | None = None,
        position_tolerance: float = 1e-5,
        orientation_tolerance: float = 1e-4,
        distinct_tolerance: float = 1e-3,
        include_alternates: bool = False,
        max_attempts: int | None = None,
        max_iterations: int | None = None,
    ) -> FindConfigsResult:
        """Distinct configurations that put ``frame_name`` at ``target_pose`` (simIK findConfigs).

        When the chain to the frame has a closed-form solver (:meth:`analytic_ik`: UR-type,
        OPW and spherical-wrist 6R arms), every branch of the pose is computed exactly in
        microseconds (at most 8), one configuration per branch: of its ``+-2 pi`` copies,
        the one inside the limits nearest ``reference_q``. Otherwise a randomized
        multi-start search (the first start is ``reference_q``) runs inside the budget;
        with ``all_branches`` it counts distinct branches and seeds toward the missing
        ones (see ``docs/position_ik.md``). Every configuration is checked on the full
        robot (FK pose, joint limits with the solver's limit margin, the collision
        constraint's distances when one is configured, then ``validate``).

        Args:
            target_pose: World pose of the frame, SE3 or 4x4 [m].
            frame_name: Frame to place.
            max_solutions: Largest number of configurations returned (>= 1); ``None``: 1,
                or no cap with ``all_branches``.
            time_budget: Wall-clock budget of the search [s] (chain preparation on the
                first query of a frame is not counted; see :meth:`prepare_global_ik`).
                ``None``: no deadline; then ``max_attempts`` or ``max_iterations`` must
                bound the search, and results are reproducible on any machine.
            reference_q: Configuration (size nq) the search starts from, that holds the
                joints off the chain, and that solutions are sorted by distance to; the
                solver's current configuration when omitted.
            validate: ``validate(q) -> bool`` rejecting candidates (e.g. a user rule).
            seed: Seed of the random starts (``None``: 0). Equal seeds give equal results
                whenever the budget does not cut the search (``max_attempts`` with a
                generous budget makes them machine independent).
            all_branches: One configuration per distinct IK branch: ``+-2 pi`` copies
                collapse into one, and the search stops when every branch the arm can have
                is found (8 flag combinations on arms with branch flags), at
                ``max_solutions`` or at the budget. On redundant chains (more than 6
                joints) branches are not finite: the configurations returned are spread
                over the self-motion, at least ``min_joint_distance`` apart.
            analytic: Use the closed-form solver when one applies (``False``: always the
                numeric search, e.g. to measure it). Never used with ``locked_joints``.
            min_joint_distance: Smallest distance between two returned branches, the
                largest joint difference modulo 2 pi [rad or m]; default
                ``distinct_tolerance``, and 0.25 rad on redundant chains with
                ``all_branches``.
            branch: Only configurations on this branch: :class:`BranchFlags`, a tuple of
                three +1/-1/None (None: any) or a vcKinSolver code 0-7; 6R arms only.
            locked_joints: Joints held at their ``reference_q`` values (vcKinSolver's
                driver mask, inverted) without rebuilding the robot.
            metric: Per-joint weights (size nv) of the sorting distance
                ``sqrt(sum_i w_i delta_q_i^2)``, ``delta_q = difference(reference_q, q)``;
                ones when omitted (simIK's cMetric).
            position_tolerance: Accepted position error [m].
            orientation_tolerance: Accepted orientation error [rad].
            distinct_tolerance: Two configurations are the same when no chain joint
                differs by more than this [rad or m].
            include_alternates: Also offer each solution's +-2 pi variants (simIK
                findAlt); they count toward ``max_solutions``, except with
                ``all_branches`` where they follow their branch.
            max_attempts: Cap on the number of attempts (``None``: budget only). With a
                ``time_budget`` an attempt may restart inside the compiled search until
                the deadline; without one, an attempt is exactly one start (with
                ``all_branches``, always).
            max_iterations: Cap on the Levenberg-Marquardt iterations over all starts
                (``None``: no cap); a count budget independent of the machine's speed.

        Returns:
            A :class:`~stackik.results.FindConfigsResult`: the configurations (size nq
            each, nearest to ``reference_q`` first; a sequence, empty when none was
            found) with their ``branches`` (:class:`BranchFlags`, or None where the arm
            has none), ``branch_ids``, ``method``, rejection counts by reason and the
            rejected branches, attempts and elapsed time.

        Raises:
            ShapeError, NonFiniteInput, InvalidTransform: Bad target or reference.
            FrameNotFound, JointNotFound: Unknown frame or locked joint.
            InvalidInput: Bad option values; ``branch`` on a chain without branch flags.
        """
        with self._engine.lock:
            return self._global.find(
                target_pose,
                frame_name,
                max_solutions,
                time_budget,
                reference_q,
                validate,
                seed,
                all_branches=all_branches,
                analytic=analytic,
                min_joint_distance=min_joint_distance,
                branch=branch,
                locked_joints=locked_joints,
                metric=metric,
                position_tolerance=position_tolerance,
                orientation_tolerance=orientation_tolerance,
                distinct_tolerance=distinct_tolerance,
                include_alternates=include_alternates,
                max_attempts=max_attempts,
                max_iterations=max_iterations,
            )

    def nearest_config(
        self,
        target_pose: object,
        frame_name: str,
        reference_q: object | None = None,
        time_budget: float = 0.02,
        validate: Validator | None = None,
        seed: int | None = None,
        *,
        max_candidates: int = 32,
        include_alternates: bool = True,
        **options: Any,
    ) -> np.ndarray | None:
        """The configuration nearest to ``reference_q`` among those found in the budget.

        vcKinSolver's "nearest configuration": collects up to ``max_candidates``
        distinct configurations like :meth:`find_configs` (same keyword options, e.g.
        ``branch=...``; every branch at once when the arm has a closed-form solver),
        adds every +-2 pi variant of each when ``include_alternates`` (a turn of a joint
        closer to the reference then wins), and returns the nearest one that passes the
        checks.

        Returns:
            The configuration (size nq), or ``None`` when nothing was found.

        Raises:
            Same as :meth:`find_configs`.
        """
        with self._engine.lock:
            found = self._global.find(
                target_pose,
                frame_name,
                max_candidates,
                time_budget,
                reference_q,
                validate,
                seed,
                include_alternates=include_alternates,
                nearest=True,
                **options,
            )
        return found[0] if found else None

    def branch_flags(self, q: object, frame_name: str) -> BranchFlags:
        """Branch flags of a configuration of a 6R arm (spherical or UR-type wrist).

        See :class:`~stackik.ik.branches.BranchFlags` for the geometric definition.

        Raises:
            InvalidInput: The chain is not a 6R arm with intersecting axes 4-5 and 5-6 and
                parallel axes 2 and 3.
            ShapeError, NonFiniteInput, FrameNotFound: Bad input.
        """
        with self._engine.lock:
            return self._global.branch_flags(q, frame_name)

    def alternate_configs(self, q: object, validate: Validator | None = None) -> list[np.ndarray]:
        """Configurations equivalent to ``q`` through +-2 pi turns (simIK getAlternateConfigs).

        Every revolute joint whose range exceeds 360 degrees may take ``q_i + 2 pi k``
        inside its limits; all combinations are returned (``q`` first), so all share
        every frame pose of ``q``. Continuous joints are stored as ``(cos, sin)`` and have
        no alternate value.
        """
        return self._global.alternate_configs(q, validate)

    def get_alternate_configs(
        self, q: object, validate: Validator | None = None
    ) -> list[np.ndarray]:
        """:meth:`alternate_configs` under simIK's name (``getAlternateConfigs``)."""
        return self.alternate_configs(q, validate)

    def generate_path(
        self,
        start_q: object,
        target_pose: object,
        frame_name: str,
        n_points: int,
        validate: Validator | None = None,
        *,
        max_joint_jump: float = 0.3,
        max_linear_step: float = 0.005,
        max_angular_step: float = 0.02,
        locked_joints: Sequence[str] = (),
        position_tolerance: float = 1e-6,
        orientation_tolerance: float = 1e-5,
    ) -> PathResult:
        """Joint configurations along the straight Cartesian line to a pose (simIK generatePath).

        See :mod:`stackik.ik.paths`. Never raises on an unreachable or invalid point: the
        result says why and at which point, with the configurations reached before it.

        Args:
            start_q: Start configuration (size nq); also holds the joints off the chain.
            target_pose: World pose of the frame at the end of the line, SE3 or 4x4 [m].
            frame_name: Frame moved along the line.
            n_points: Number of path points (>= 2).
            validate: ``validate(q) -> bool`` applied to every point.
            max_joint_jump: Largest joint change of one sub-step [rad or m].
            max_linear_step: Longest sub-step along the line [m].
            max_angular_step: Largest rotation of one sub-step [rad]. The line may take
                at most a million sub-steps (:data:`stackik.ik.paths.MAX_SUB_STEPS`).
            locked_joints: Joints held at their ``start_q`` values.
            position_tolerance: Accepted position error of a point [m].
            orientation_tolerance: Accepted orientation error of a point [rad].

        Raises:
            ShapeError, NonFiniteInput, InvalidTransform, FrameNotFound: Bad input.
            InvalidInput: ``n_points < 2`` or bad option values (also steps so short that
                the line would take more than a million sub-steps).
        """
        with self._engine.lock:
            return generate_path(
                self._global,
                start_q,
                target_pose,
                frame_name,
                n_points,
                validate,
                max_joint_jump=max_joint_jump,
                max_linear_step=max_linear_step,
                max_angular_step=max_angular_step,
                locked_joints=locked_joints,
                position_tolerance=position_tolerance,
                orientation_tolerance=orientation_tolerance,
            )

    def solve_position_batch(
        self,
        target_poses: object,
        frame_name: str,
        seeds: object | None = None,
        options: BatchIKOptions | None = None,
        validate: Validator | None = None,
    ) -> BatchIKResult:
        """Solve many targets in one compiled loop (MotrixSim's batched rows).

        Args:
            target_poses: World poses of the frame, shape (N, 4, 4) [m].
            frame_name: Frame to place.
            seeds: Start configurations, (N, nq) or (nq,) for all; they also hold the
                joints off the chain. The solver's current configuration when omitted.
            options: :class:`~stackik.ik.batch.BatchIKOptions`.
            validate: ``validate(q) -> bool`` applied to every converged configuration.

        Returns:
            A :class:`~stackik.results.BatchIKResult` with named arrays ``success``,
            ``q``, ``iterations`` and ``residual``.

        Raises:
            ShapeError, NonFiniteInput, InvalidTransform: Bad targets or seeds.
            FrameNotFound, InvalidInput: Unknown frame or bad options.
        """
        with self._engine.lock:
            return solve_position_batch(
                self._global, target_poses, frame_name, seeds, options, validate
            )

    # -- collision tuning (EmbodiK names; see CollisionConstraint) ---------------------------
    # (without a collision constraint they read and write the settings the next
    # configure_collision_constraint starts with, as EmbodiK's do)
    def set_collision_min_distance(self, min_distance: float) -> bool:
        """Change ``min_distance`` [m] without rebuilding the pairs; False without a constraint."""
        col = self._collision_constraint()
        if col is None:
            return False
        col.set_min_distance(min_distance)
        if self._stall.enabled:
            self._stall.enable(col.min_distance, col)
        return True

    def set_collision_constraint_activation_multiplier(self, multiplier: float) -> None:
        """Activation margin = ``multiplier * min_distance`` (``<= 0``: the configured margin)."""
        self._collision_knobs().set_activation_multiplier(
            _validate.magnitude(multiplier, "multiplier")
        )

    def get_collision_constraint_activation_multiplier(self) -> float:
        """The activation multiplier (0: the configured activation margin applies)."""
        return self._collision_knobs().activation_multiplier

    def get_collision_constraint_activation_margin(self) -> float:
        """The effective activation margin [m] (0 without a collision constraint, as EmbodiK)."""
        c = self._collision_constraint()
        return c.activation if c is not None else 0.0

    def set_proximity_gated_collision_activation_enabled(self, enabled: bool) -> None:
        """Use (True) or ignore (False) the activation multiplier, keeping its value."""
        self._collision_knobs().proximity_gating = _validate.flag(enabled, "enabled")

    def get_proximity_gated_collision_activation_enabled(self) -> bool:
        """Whether the activation multiplier is used."""
        return self._collision_knobs().proximity_gating

    def set_collision_max_separation_speed_nonpenetrating(self, mps: float) -> None:
        """Cap [m/s] of the separation a pair inside its minimum (not touching) asks for."""
        self._collision_knobs().set_max_separation_speed(_validate.magnitude(mps, "mps", True))

    def get_collision_max_separation_speed_nonpenetrating(self) -> float:
        """The separation-speed cap [m/s] (inf: none)."""
        return self._collision_knobs().max_separation_speed

    def set_collision_recovery_scale(self, scale: float) -> None:
        """Fraction in (0, 1] of the recovery speed applied inside ``min_distance``."""
        self._collision_knobs().set_recovery_scale(scale)

    def get_collision_recovery_scale(self) -> float:
        """The recovery scale."""
        return self._collision_knobs().recovery_scale

    def set_collision_refinement_time_budget_us(self, budget_us: int) -> None:
        """Budget [us] of exact distance queries per step (``<= 0``: none).

        The budget becomes a number of queries from the time the exact queries take,
        measured on the clock (smoothed, 0.05-20 us per query), so a step with a budget
        is not bit-reproducible (it depends on the machine's load). A pair whose distance
        bound is below its minimum (it may be below it now, or was never measured) is
        always queried, whatever the budget: every pair below its minimum is reported
        (``COLLISION_VIOLATED``). The budget only skips the least urgent of the pairs
        known to be at or above their minimum (no row for them that step;
        ``collision_budget_exhausted``).
        """
        self._collision_knobs().set_refinement_budget_us(budget_us)

    def get_collision_refinement_time_budget_us(self) -> int:
        """The exact-query budget [us] (0: none)."""
        return self._collision_knobs().refinement_budget_us

    def set_collision_repulsion_deadband(self, metres: float) -> None:
        """Width [m] of the band above ``min_distance`` where a pair is held, not pushed."""
        knobs = self._collision_knobs()
        knobs.recovery_deadband = _validate.positive_float(metres, "metres", allow_zero=True)

    def get_collision_repulsion_deadband(self) -> float:
        """The repulsion deadband [m]."""
        return self._collision_knobs().recovery_deadband

    def set_collision_tuning_mode(self, mode: CollisionTuningMode | str) -> None:
        """Apply a :class:`~stackik.constraints.collision.CollisionTuningMode` preset.

        ``SPEED`` has a 300 µs query budget measured on the clock: not bit-reproducible.
        The budget never skips a pair whose distance bound is below its minimum (see
        :meth:`set_collision_refinement_time_budget_us`).
        """
        self._collision_knobs().set_tuning_mode(mode)

    def get_collision_tuning_mode(self) -> CollisionTuningMode:
        """The last preset applied (``PRECISE`` by default)."""
        return self._collision_knobs().tuning_mode

    def enable_collision_pair_cache(
        self,
        enable: bool,
        full_refresh_interval: int = CACHE_REFRESH_INTERVAL,
        candidate_distance_margin: float = CACHE_CANDIDATE_MARGIN,
        max_cached_candidates: int = CACHE_MAX_CANDIDATES,
    ) -> None:
        """Candidate pair caching between periodic full scans (conservative: see the docs)."""
        self._collision_knobs().enable_pair_cache(
            _validate.flag(enable, "enable"),
            full_refresh_interval,
            candidate_distance_margin,
            max_cached_candidates,
        )

    def enable_sphere_broadphase(self, enable: bool) -> None:
        """Skip exact queries of pairs whose bounding spheres are far apart (default on)."""
        self._collision_knobs().sphere_broadphase = _validate.flag(enable, "enable")

    def sphere_broadphase_enabled(self) -> bool:
        """Whether the bounding-sphere test runs before exact queries."""
        return self._collision_knobs().sphere_broadphase

    # -- collision evaluation and debug ----------------------------------------------------------
    def _checked_q(self, current_q: object | None) -> np.ndarray | None:
        """``current_q`` checked; None when omitted or empty (see :meth:`_q_or_current`)."""
        if current_q is None or _validate.is_empty(current_q):
            return None
        return self.robot.check_configuration(current_q, "current_q")

    def _q_or_current(self, q: np.ndarray | None) -> np.ndarray:
        """``q``, or the later set of the solver's and the robot's configurations.

        The solver's own is its last step's; the robot's, ``robot.update_kinematics``'s.
        Call it holding the engine's lock, so that a step in another thread is not halfway.
        """
        if q is not None:
            return q
        own, shared = self._engine.kinematics, self.robot.kinematics
        return (shared if shared.stamp > own.stamp else own).q.copy()

    def _evaluator(self) -> CollisionConstraint | None:
        """The collision constraint, or a probe over every pair before one is configured.

        The probe watches every pair of the robot and its world at ``min_distance`` 0;
        None when the robot has neither collision geometry nor an attached object.
        """
        col = self._collision_constraint()
        if col is not None or not has_movers(self.robot, (self._world or self.robot.world).state):
            return col
        probe = self._collision_probe
        if probe is None or probe.world is not (self._world or self.robot.world):
            kin = self.robot.create_kinematics()
            probe = CollisionConstraint(_COLLISION, kin, 0.0, world=self._world)
            self._collision_probe = probe
        return probe

    def evaluate_min_collision_distance(self, current_q: object | None = None) -> float | None:
        """Smallest distance [m] over the watched pairs at ``current_q`` (no side effects).

        The pairs are the collision constraint's (self and world); before one is
        configured, every active pair of the robot and every robot-obstacle pair. With
        no ``current_q`` (or an empty one): the current configuration, whichever was set
        later of the solver's own (its last step's, which :meth:`solve_velocity` without
        ``q`` steps from) and the robot's (``robot.update_kinematics``). EmbodiK's steps
        set the robot's configuration, so code that steps and then evaluates, or updates
        the robot and then evaluates, gets the configuration it gets there. None when the
        robot has neither collision geometry nor an attached object (a robot loaded
        without collision geometry that carries one has the object's pairs: it against
        every obstacle).

        Nothing the steps compute changes; a change of the world's layout since the last
        step is taken up here as the next step would take it up (the pairs are rebuilt,
        and the last step's records, which indexed the old pairs, are emptied). Safe to
        call while another thread steps: it holds the solver's lock.
        """
        q = self._checked_q(current_q)
        with self._engine.lock:
            col = self._evaluator()
            if col is None:
                return None
            d = col.distances_at(self._q_or_current(q))
        return float(d.min()) if d.size else float("inf")

    def evaluate_post_step_collision_distance(
        self, current_q: object | None = None
    ) -> float | None:
        """The distance checked after a step [m]: exact, over the watched pairs at ``current_q``."""
        return self.evaluate_min_collision_distance(current_q)

    def evaluate_collision_debug(
        self, current_q: object | None = None
    ) -> CollisionDebugInfo | None:
        """The nearest watched pair at ``current_q`` with its row (no side effects).

        Pairs, configuration and locking as :meth:`evaluate_min_collision_distance`;
        obstacle pairs carry the obstacle's name. None without pairs (neither
        collision geometry nor an attached object, or every pair excluded).
        """
        infos = self.evaluate_collision_debug_list(current_q)
        return infos[0] if infos else None

    def evaluate_collision_debug_list(
        self, current_q: object | None = None
    ) -> list[CollisionDebugInfo]:
        """Every watched pair at ``current_q`` with its row, nearest first (no side effects).

        Pairs, configuration and locking as :meth:`evaluate_min_collision_distance`.
        """
        q = self._checked_q(current_q)
        with self._engine.lock:
            col = self._evaluator()
            return col.debug_at(self._q_or_current(q), self.dt) if col is not None else []

    def get_last_collision_debug(self) -> CollisionDebugInfo | None:
        """The nearest pair with rows in the last step, or None."""
        infos = self.get_last_collision_debug_list()
        return min(infos, key=lambda info: info.distance) if infos else None

    def get_last_collision_debug_list(self) -> list[CollisionDebugInfo]:
        """Every pair with rows in the last step, nearest first (empty without a step).

        Empty too without a collision constraint. Safe to call from another thread while
        steps run: it reads the step's buffers between two steps (under the engine's lock).
        """
        col = self._collision_constraint()
        if col is None:
            return []
        with self._engine.lock:
            infos = col.debug_info()
        return sorted(infos, key=lambda info: info.distance)  # (stable: rows order on ties)

    # -- joint-limit recovery and solver knobs ---------------------------------------------------
    def set_limit_recovery_gain(self, gain: float) -> None:
        """Fraction in (0, 1] of a limit violation recovered per step (default 0.5)."""
        self._engine.joint_limits.recovery_gain = gain

    def set_limit_recovery_hysteresis(self, enter_epsilon: float, exit_epsilon: float) -> None:
        """Start a limit recovery past ``enter_epsilon``, end it ``exit_epsilon`` in [rad].

        Defaults: ``enter_epsilon`` 1e-4 (as EmbodiK), ``exit_epsilon`` 0.
        """
        self._engine.joint_limits.set_recovery_hysteresis(enter_epsilon, exit_epsilon)

    def set_limit_exit_release_margin(self, margin: float) -> None:
        """Limit violations up to ``margin`` [rad or m] are held, not pushed back."""
        self._engine.joint_limits.release_margin = margin

    def enable_saturation_exit_behavior(self, enable: bool) -> None:
        """Turn EmbodiK's saturation-exit headroom on or off.

        On: a joint farther than 0.01 [rad or m] from a limit may move toward it at least
        at 0.1 of its velocity limit (never past the limit in one step).
        """
        on = _validate.flag(enable, "enable")
        fraction = SATURATION_EXIT_FRACTION if on else 0.0
        self._engine.joint_limits.set_headroom(0.0, fraction, SATURATION_EXIT_MARGIN)

    def saturation_exit_behavior_enabled(self) -> bool:
        """Whether the saturation-exit headroom is on."""
        return self._engine.joint_limits.headroom[1] > 0.0

    def set_constraint_tolerance(self, epsilon: float) -> None:
        """Pseudo-inverse threshold (as :meth:`set_tolerance`) and constraint-row deadband."""
        self.set_tolerance(epsilon)
        self._engine.constraint_deadband = epsilon

    def set_regularization_epsilon(self, epsilon: float) -> None:
        """Alias of :meth:`set_tolerance`."""
        self.set_tolerance(epsilon)

    def set_solver_recovery_enabled(self, enable: bool) -> None:
        """Deprecated no-op (EmbodiK removed its recovery state machine); warns."""
        _validate.flag(enable, "enable")
        warnings.warn(
            "set_solver_recovery_enabled is a deprecated no-op (as in EmbodiK); use the "
            "stall handler or the elastic band",
            DeprecationWarning,
            stacklevel=2,
        )

    def solver_recovery_enabled(self) -> bool:
        """Deprecated: always False."""
        return False

    def enable_position_ik_debug(self, enable: bool) -> None:
        """Log every position-IK iteration at DEBUG level on the ``stackik.position_ik`` logger."""
        self._position.debug = _validate.flag(enable, "enable")

    # -- stall handler and elastic band (see stackik.ik.recovery) ---------------------------------
    def configure_stall_handler(
        self, stall_threshold: int = 5, restore_rate: float = 0.005, floor_fraction: float = 0.3
    ) -> None:
        """Stalled steps before relaxing, restore speed [m/step], floor (fraction of nominal)."""
        self._stall.configure(stall_threshold, restore_rate, floor_fraction)

    def enable_stall_handler(self, nominal_min_distance: float) -> None:
        """Relax the collision margin after consecutive stalled steps, restore it afterwards.

        Args:
            nominal_min_distance: The margin [m] the handler manages and restores; the
                collision constraint, when there is one, gets it now (and a later
                :meth:`configure_collision_constraint` or
                :meth:`set_collision_min_distance` makes its margin the nominal one).
                Pairs with a minimum of their own (set by name, an obstacle's) keep it:
                only the global margin is relaxed. See :mod:`stackik.ik.recovery`.
        """
        self._stall.enable(nominal_min_distance, self._collision_constraint())

    def disable_stall_handler(self) -> None:
        """Stop the stall handler and restore the nominal margin."""
        self._stall.disable(self._collision_constraint())

    def stall_handler_enabled(self) -> bool:
        """Whether the stall handler runs."""
        return self._stall.enabled

    def stall_handler_is_relaxed(self) -> bool:
        """Whether the collision margin is currently relaxed."""
        return self._stall.relaxed

    def stall_handler_consecutive_stall_steps(self) -> int:
        """Consecutive stalled steps so far that held a collision pair at its margin."""
        return self._stall.consecutive_stalls

    def stall_handler_current_min_distance(self) -> float:
        """The effective collision ``min_distance`` [m] (the nominal one when not relaxed)."""
        col = self._collision_constraint()
        if self._stall.enabled:
            return self._stall.current
        return col.min_distance if col is not None else -1.0

    def configure_elastic_band(
        self,
        delta_max: float = 0.05,
        expand_rate: float = 0.01,
        decay_rate: float = 0.2,
        stall_threshold: int = 3,
        expand_only_saturated: bool = True,
    ) -> None:
        """Elastic band tuning (see :meth:`enable_elastic_band`).

        Args:
            delta_max: Largest widening of a joint's limits [rad or m].
            expand_rate: Widening per stalled step [rad or m].
            decay_rate: Fraction of the widening taken back per step once the stall ends.
            stall_threshold: Consecutive limit-dominated stalled steps before widening.
            expand_only_saturated: Widen only the joints saturated at their limits
                (False: every position-limited joint).
        """
        self._band.configure(
            delta_max, expand_rate, decay_rate, stall_threshold, expand_only_saturated
        )

    def enable_elastic_band(self, delta_max: float = 0.05) -> None:
        """Widen joint limits during limit-dominated stalls (EmbodiK's elastic band).

        When joints sit saturated at their position limits while the highest-priority
        task stalls for ``stall_threshold`` steps, their limits widen by ``expand_rate``
        per step, up to ``delta_max`` [rad or m], so more joints stay free for the task;
        the widening decays once the stall ends. Without a limit margin the widened
        limits lie past the URDF limits, as in EmbodiK 0.23.2 (``set_limit_margin`` of at
        least ``delta_max`` keeps them inside). See :mod:`stackik.ik.recovery`.
        """
        self._band.enable(delta_max)

    def disable_elastic_band(self) -> None:
        """Stop the elastic band and narrow every limit back (deltas zero)."""
        self._band.disable(self._engine.joint_limits)

    def elastic_band_enabled(self) -> bool:
        """Whether the elastic band runs."""
        return self._band.enabled

    def elastic_band_is_expanded(self) -> bool:
        """Whether any joint's delta is non-zero."""
        return bool(self._band.deltas.any())

    def elastic_band_deltas(self) -> np.ndarray:
        """Per-joint delta [rad or m] (size nv; a copy).

        The widening of the joint's limits, or how far the joint still is past its URDF
        limit when that is more (while the band narrows back): a joint is never further
        past its URDF limit than its delta.
        """
        return self._band.deltas.copy()

    def elastic_band_max_delta(self) -> float:
        """The largest delta [rad or m]."""
        return float(self._band.deltas.max(initial=0.0))

    def __repr__(self) -> str:
        return (
            f"KinematicsSolver(robot={self.robot!r}, tasks={[t.name for t in self.tasks]}, "
            f"constraints={[c.name for c in self.constraints]}, dt={self.dt})"
        )


def _representative_solver(robot: RobotModel) -> KinematicsSolver:
    """A solver using the families most users configure on ``robot`` (for warm-up)."""
    solver = KinematicsSolver(robot, dt=1e-3)
    model = robot.model
    tip = model.frames[model.nframes - 1].name
    solver.add_frame_task("__warmup_frame__", tip)
    solver.add_posture_task("__warmup_posture__").priority = 1
    if robot.collision is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CollisionMarginWarning)
            solver.configure_collision_constraint(0.0)
    return solver


def warmup(*targets: KinematicsSolver | RobotModel) -> int:
    """Compile (or load from the cache) every kernel now, off the control loop.

    Loads every registered kernel (during a first use that runs them as plain Python,
    waits for the background switch to compiled code) and runs the registered warm-ups;
    then, for each
    target, runs one complete step of a *copy* of it (a solver: exactly its tasks and
    constraints; a robot: a frame task, a posture task and, with collision geometry, a
    collision constraint), so the first real step of the loop finds every kernel
    specialisation ready. The targets themselves are not changed.

    Args:
        *targets: Solvers or robots whose steps should be ready.

    Returns:
        The number of warm-up runs.
    """
    runs = _jit.warmup()
    for target in targets:
        if isinstance(target, KinematicsSolver):
            solver = pickle.loads(pickle.dumps(target))
        elif isinstance(target, RobotModel):
            solver = _representative_solver(target)
        else:
            raise InvalidInput(
                f"warmup takes solvers or robots, got {type(target).__name__}",
                what="targets",
            )
        solver.solve_velocity(solver.kinematics.q.copy())
        runs += 1
    return runs


def kernel_mode() -> str:
    """How stackik's compiled kernels run in this process right now.

    Returns:
        ``"compiled"``; ``"plain Python (switching to compiled code in the
        background)"`` during a first use (see the deployment guide); or ``"plain
        Python"`` without numba or with ``STACKIK_DISABLE_JIT=1``. Results are the same
        bit for bit in every mode; only the speed differs.
    """
    if _jit.is_compiled():
        return "compiled"
    if _jit.runs_python_first():
        return "plain Python (switching to compiled code in the background)"
    return "plain Python"


def warmup_in_background(*targets: KinematicsSolver | RobotModel) -> threading.Thread:
    """Run :func:`warmup` in a daemon thread (e.g. at import time of an application).

    With an empty kernel cache the compilation takes seconds; started early, it runs
    while the application sets up. A kernel called before it is ready waits for it, so
    join the thread (or call :func:`warmup`) before the first control tick.

    Returns:
        The started thread.
    """
    copies = [
        pickle.loads(pickle.dumps(t)) if isinstance(t, KinematicsSolver) else t for t in targets
    ]
    thread = threading.Thread(target=warmup, args=tuple(copies), name="stackik-warmup", daemon=True)
    thread.start()
    return thread
