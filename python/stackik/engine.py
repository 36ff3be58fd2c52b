"""The velocity engine: one step of prioritized velocity IK, owned data and all.

:class:`VelocityEngine` is the one object that knows both the tasks/constraints and the
SNS core. One :meth:`VelocityEngine.solve` is one step of the data flow:

1. ``kinematics.update(q)``: one Pinocchio pass into the engine's own ``Data``;
2. each active task writes its rows straight into the stacked level buffers (views,
   no copies), levels in priority order;
3. each active constraint narrows the joint velocity box and writes its rows into the
   preallocated row buffer (views again);
4. the stacked problem goes to :meth:`stackik.sns.SNSSolver.solve_stacked`;
5. -> :class:`~stackik.results.VelocitySolverResult` with status, scales and timings.

Equality couplings (mimic followers kept in q, or any :class:`MimicConstraint`) are not
solved as rows: the step is solved in their null space, ``v = G z + v0``
(:class:`~stackik.sns.reduce.Reduction`). Every other constraint family's rows, written
in the robot's full velocity space, map generically (``C G``, bounds shifted by
``C v0``; the box becomes the box of ``z``), so a new family needs no change here.

A step whose highest-priority level gets scale 0 and that does not move at all while
that level asks for motion is reported as ``NO_PROGRESS`` (a stall), never ``SUCCESS``.

:meth:`VelocityEngine.build_problem` stops after step 3 and returns the
:class:`Problem` (copies), so tests can assert on matrices without solving.

Ownership: the engine owns its :class:`~stackik.model.kinematics.Kinematics` (Pinocchio
``Data``), the constraints' collision state and every buffer; the robot is a shared
description it never writes. One engine serves one thread at a time: concurrent calls
are serialized by a lock.

Imports: ``model``, ``tasks``, ``constraints``, ``sns`` and the package's helpers;
nothing above (``ik``, the solver facade, ``control``, ``reach``) is imported here.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _pickling, _validate
from .constraints.base import Constraint
from .constraints.collision import CollisionConstraint
from .constraints.limits import JointLimitsConstraint
from .constraints.mimic import MimicConstraint
from .errors import InvalidInput, StackIKError, TaskNotFound
from .model import Kinematics, RobotModel, check_robot
from .model.joints import coordinate_names
from .model.world import World
from .results import SolverStatus, VelocitySolverResult
from .sns import DEFAULT_DAMPING, DEFAULT_TOLERANCE, SNSSolver, TaskSolveMode
from .sns.reduce import Reduction
from .tasks.base import Task

__all__ = ["Problem", "VelocityEngine"]

#: Name of the joint-limit constraint every engine has.
JOINT_LIMITS = "joint_limits"
#: Name of the coupling constraint of an engine on a robot with kept mimic joints.
MIMIC = "mimic"


@dataclass
class Problem:
    """The stacked problem of one step, as handed to the SNS core.

    Attributes:
        levels: ``(J_k, xdot_k)`` per priority level, highest first (views of
            :attr:`J` and :attr:`xdot`).
        level_tasks: Task names of each level.
        modes: :class:`TaskSolveMode` of each level.
        C: General constraint rows (p x nv).
        lower: Lower bounds of ``C v`` (p).
        upper: Upper bounds of ``C v`` (p).
        box_lower: Joint velocity lower bounds (nv) [rad/s or m/s].
        box_upper: Joint velocity upper bounds (nv) [rad/s or m/s].
        constraint_slices: Row range of each constraint in ``C``, by name.
        J: All levels' rows stacked (rows x nv), rows scaled by ``sqrt(weight)``.
        xdot: All levels' task velocities stacked.
        offsets: Row offset of each level in :attr:`J` (levels + 1).
        coupling_basis: ``G`` (nv x nz) of the equality couplings the step is solved
            under (``v = G z + v0``), or None without couplings.
        coupling_offset: ``v0`` (nv) of the couplings (their drift terms), or None.
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
    J: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    xdot: np.ndarray = field(default_factory=lambda: np.zeros(0))
    offsets: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    coupling_basis: np.ndarray | None = None
    coupling_offset: np.ndarray | None = None

    def copy(self) -> Problem:
        """A deep copy (the engine's buffers are reused by the next step)."""
        J, x = self.J.copy(), self.xdot.copy()
        offs = self.offsets
        levels = [
            (J[offs[k] : offs[k + 1]], x[offs[k] : offs[k + 1]]) for k in range(len(offs) - 1)
        ]
        return Problem(
            levels,
            [list(t) for t in self.level_tasks],
            list(self.modes),
            self.C.copy(),
            self.lower.copy(),
            self.upper.copy(),
            self.box_lower.copy(),
            self.box_upper.copy(),
            dict(self.constraint_slices),
            J,
            x,
            offs.copy(),
            None if self.coupling_basis is None else self.coupling_basis.copy(),
            None if self.coupling_offset is None else self.coupling_offset.copy(),
        )


class _Layout:
    """Where each active task writes: priority levels and row ranges of the buffers."""

    def __init__(self, tasks: list[Task], nv: int) -> None:
        groups: dict[int, list[Task]] = {}
        for t in tasks:
            if t.active:
                groups.setdefault(t.priority, []).append(t)
        self.level_tasks: list[list[str]] = []
        self.modes: list[TaskSolveMode] = []
        offsets = [0]
        placed: list[tuple[Task, int, int]] = []
        row = 0
        for p in sorted(groups):
            group = groups[p]
            mixed = {t.solve_mode.kernel_mode for t in group}  # SCALE_ELASTIC is SCALE
            if len(mixed) > 1:
                raise InvalidInput(
                    f"tasks {[t.name for t in group]} share priority {p} but not a solve "
                    f"mode ({sorted(t.solve_mode.name for t in group)}): one level has "
                    "one mode"
                )
            for t in group:
                placed.append((t, row, row + t.get_dimension()))
                row += t.get_dimension()
            offsets.append(row)
            self.level_tasks.append([t.name for t in group])
            self.modes.append(group[0].solve_mode)
        rows = offsets[-1]
        self.J = np.zeros((rows, nv))
        self.xdot = np.zeros(rows)
        self.offsets = np.array(offsets, dtype=np.int64)
        self.mode_values = np.array([m.kernel_mode for m in self.modes], dtype=np.int64)
        #: The highest-priority level is a SCALE level (what a stall is judged on).
        self.top_scale = bool(self.modes) and self.modes[0].kernel_mode == TaskSolveMode.SCALE
        #: That level's task names, as a stall names them.
        self.top_names = ", ".join(self.level_tasks[0]) if self.level_tasks else ""
        #: The start of a stall's message (the rest is the step's own numbers).
        self.stall_prefix = (
            f"stalled: the highest-priority level ({self.top_names}) got scale 0 and the "
            "step is zero while it asks for |xdot| = "
        )
        self.elastic = any(t.solve_mode is TaskSolveMode.SCALE_ELASTIC for t, _, _ in placed)
        #: Each task's writer (unchecked: the views are sized here) and its views.
        self.writers = [
            (_step_call(t, "write", "write_rows", Task), self.J[r0:r1], self.xdot[r0:r1])
            for t, r0, r1 in placed
        ]
        self.levels = [
            (self.J[offsets[k] : offsets[k + 1]], self.xdot[offsets[k] : offsets[k + 1]])
            for k in range(len(offsets) - 1)
        ]


class VelocityEngine:
    """One step of prioritized velocity IK on a robot, with its own data and buffers.

    Args:
        robot: The robot description (shared, read only).
        dt: Control period [s] (> 0), used to turn position limits into velocity bounds.

    Attributes:
        robot: The robot description.
        kinematics: The engine's own kinematics cache; starts at the robot's current
            configuration.
        world: The world of obstacles its layers avoid (None: ``robot.world``).
        lock: Re-entrant lock held by every step; layers that run several steps as one
            operation (position IK) hold it for the whole operation.
    """

    robot: RobotModel = _validate.fixed_property(
        "robot", "make a solver for the other robot", "The robot description."
    )
    kinematics: Kinematics = _validate.fixed_property(
        "kinematics", "the engine owns its cache", "The engine's own kinematics cache."
    )
    lock: threading.RLock = _validate.fixed_property(
        "lock", "hold it, never replace it", "The re-entrant lock held by every step."
    )

    def __init__(self, robot: RobotModel, dt: float = 0.01) -> None:
        self._robot = check_robot(robot)
        self._kinematics = Kinematics(robot, robot.kinematics.q)
        self.dt = dt
        self._tasks: dict[str, Task] = {}
        self._constraints: dict[str, Constraint] = {}
        self._ordered: list[Constraint] | None = None
        self._damping = DEFAULT_DAMPING
        self._tolerance = DEFAULT_TOLERANCE
        self._max_iterations: int | None = None
        self._joint_weights = np.ones(robot.nv)
        self._timing = False
        self._sns: SNSSolver | None = None
        self._sns_z: SNSSolver | None = None  # the solver of the coupled (reduced) problem
        self._reduction: Reduction | None = None
        self._reduction_key: tuple = ()
        self._couplers: list[MimicConstraint] = []
        self._colliders: list[CollisionConstraint] = []  # the last step's active ones
        self._v0 = np.zeros(robot.nv)
        self._rows_key: tuple = ()
        self._rows_kept = np.zeros(0, dtype=np.int64)
        self._last_layout: _Layout | None = None  # the layout of the last step
        self._last_result: VelocitySolverResult | None = None  # (what describe_saturation names)
        self._joint_names: tuple[int, tuple[str, ...]] = (-1, ())  # (robot revision, names)
        self._blocked: tuple[tuple, str] = ((), "")  # (the last stall note's key, note)
        self._tasks_ms = 0.0  # time writing the task rows [ms] (with the timing breakdown)
        self._layout: _Layout | None = None
        self._layout_key = -1  # (the kinematics' layout_revision the layout was built at)
        self._plan: _ConstraintPlan | None = None
        self._plan_key: tuple[int, bool, tuple[bool, ...]] = (-1, True, ())
        #: Registered constraints whose family computes ``active`` itself (not the base
        #: class's flag, whose setter bumps the layout revision): read every step.
        self._computed: list[Constraint] = []
        self._rows_C = np.zeros((0, robot.nv))
        self._rows_lower = np.zeros(0)
        self._rows_upper = np.zeros(0)
        self._box_lower = np.empty(robot.nv)
        self._box_upper = np.empty(robot.nv)
        self._slices: dict[str, slice] = {}
        self._phase: dict[str, float] = {}  # per-constraint row times of the last step [ms]
        self._row_deadband = 0.0
        self.world: World | None = None  # None: the robot's world (robot.world)
        self._lock = threading.RLock()
        #: Held by each step inside ``_lock``, and given to the constraints: their calls
        #: that read or rebuild a step's state wait for a running step, not for the
        #: global-IK calls that hold ``_lock`` (whose callbacks may hand them to a thread).
        self._step_lock = threading.RLock()
        self.add_constraint(JointLimitsConstraint(JOINT_LIMITS, self._kinematics))
        if robot.kept_mimic_joints:  # mimic="keep": followers are coupled to their leaders
            self.add_constraint(MimicConstraint(MIMIC, self._kinematics))

    # -- pickling: the lock, the SNS solver's buffers and the step's calls are rebuilt -------
    # (A layout's writers hold views of its buffers, which pickle as separate arrays, and
    # its key holds the tasks' ids: it is rebuilt at the first step after unpickling.)
    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            dropped = ("_lock", "_step_lock", "_sns", "_sns_z", "_plan", "_layout")
            return _pickling.without(self.__dict__, dropped)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()
        self._step_lock = threading.RLock()
        for c in self._constraints.values():
            c.share_lock(self._step_lock)
        self._plan = None
        self._layout = None
        self._drop_solvers()
        if self.world is not None:  # (a world's record of its users does not pickle)
            self.bind_world(self.world)

    def bind_world(self, world: World) -> None:
        """Register this engine's robot links and geometry names with ``world``.

        The world then refuses attached objects on links the robot lacks and names taken
        by its links or geometries (see :meth:`~stackik.model.world.World.bind`).

        Raises:
            InvalidInput: The world's objects clash with the robot.
        """
        robot = self._robot
        world.bind(self, robot.get_frame_names(), robot.get_collision_geometry_names())

    def _drop_solvers(self) -> None:
        """Forget the SNS solvers (rebuilt with the current settings at the next step)."""
        self._sns = None
        self._sns_z = None

    # -- settings ------------------------------------------------------------------------
    @property
    def dt(self) -> float:
        """Control period [s]."""
        return self._dt

    @dt.setter
    def dt(self, value: float) -> None:
        self._dt = _validate.positive_float(value, "dt")

    @property
    def damping(self) -> float:
        """Damping of near-singular directions of the pseudo-inverse (>= 0)."""
        return self._damping

    @damping.setter
    def damping(self, value: float) -> None:
        self._damping = _validate.positive_float(value, "damping", allow_zero=True)
        self._drop_solvers()

    @property
    def tolerance(self) -> float:
        """Singular-value threshold below which the pseudo-inverse is damped (>= 0)."""
        return self._tolerance

    @tolerance.setter
    def tolerance(self, value: float) -> None:
        self._tolerance = _validate.positive_float(value, "tolerance", allow_zero=True)
        self._drop_solvers()

    @property
    def constraint_deadband(self) -> float:
        """Slack [m/s, rad/s or the row's unit] added to both bounds of every constraint row."""
        return self._row_deadband

    @constraint_deadband.setter
    def constraint_deadband(self, value: float) -> None:
        self._row_deadband = _validate.positive_float(value, "constraint_deadband", True)

    @property
    def max_iterations(self) -> int | None:
        """Cap on SNS saturation iterations per priority level (None: the default)."""
        return self._max_iterations

    @max_iterations.setter
    def max_iterations(self, value: int) -> None:
        self._max_iterations = _validate.count(value, "max_iter")
        self._drop_solvers()

    @property
    def joint_weights(self) -> np.ndarray:
        """Per-joint metric weights (size nv, > 0): a heavier joint moves less (a copy)."""
        return self._joint_weights.copy()

    @joint_weights.setter
    def joint_weights(self, weights: object) -> None:
        w = _validate.vector(weights, self._robot.nv, "joint weights")
        if (w <= 0).any():
            raise InvalidInput("joint weights must be > 0")
        self._joint_weights = w
        self._drop_solvers()

    @property
    def timing(self) -> bool:
        """Whether results carry the per-phase timing breakdown."""
        return self._timing

    @timing.setter
    def timing(self, value: bool) -> None:
        self._timing = _validate.flag(value, "timing")

    @property
    def joint_limits(self) -> JointLimitsConstraint:
        """The joint-limit constraint (position/velocity limits, margin)."""
        c = self._constraints[JOINT_LIMITS]
        assert isinstance(c, JointLimitsConstraint)
        return c

    @property
    def top_demand(self) -> float:
        """Norm of the highest-priority level's task velocity in the last step (0: none)."""
        return 0.0 if self._last_layout is None else _top_demand(self._last_layout)

    @property
    def scale_elastic(self) -> bool:
        """Whether a task of the last step's layout is in SCALE_ELASTIC mode."""
        return self._last_layout is not None and self._last_layout.elastic

    @contextmanager
    def settings(self, **values: object) -> Iterator[None]:
        """Temporarily change settings (``dt``, ``damping``, ``tolerance``, ...).

        Every value is restored on exit, also on error.
        """
        saved = {k: getattr(self, k) for k in values}
        try:
            for k, v in values.items():
                setattr(self, k, v)
            yield
        finally:
            for k, v in saved.items():
                setattr(self, k, v)

    # -- tasks ---------------------------------------------------------------------------
    @property
    def tasks(self) -> list[Task]:
        """Registered tasks in insertion order."""
        return list(self._tasks.values())

    def add_task(self, task: Task) -> Task:
        """Register a task built on this engine's kinematics.

        Raises:
            InvalidInput: Not a task, a task of that name exists, or the task reads another
                cache.
        """
        _validate.instance(task, Task, "task", "stackik Task")
        if task.name in self._tasks:
            raise InvalidInput(f"a task named {task.name!r} already exists")
        if task.kinematics is not self._kinematics:
            raise InvalidInput(f"task {task.name!r} reads another kinematics cache")
        with self._step_lock:  # (not while a step in another thread reads the tasks)
            self._tasks[task.name] = task
            self._kinematics.touch_layout()
        return task

    def get_task(self, name: str) -> Task:
        """The task of that name.

        Raises:
            TaskNotFound: Unknown name (the error lists the closest names).
        """
        try:
            return self._tasks[name]
        except (KeyError, TypeError):
            raise TaskNotFound(str(name), self._tasks) from None

    def has_task(self, name: str) -> bool:
        """Whether a task of that name is registered."""
        return name in self._tasks

    def remove_task(self, name: str) -> None:
        """Remove a task by name (TaskNotFound if absent)."""
        with self._step_lock:
            self.get_task(name)
            del self._tasks[name]
            self._kinematics.touch_layout()

    def clear_tasks(self) -> None:
        """Remove every task."""
        with self._step_lock:
            self._tasks.clear()
            self._kinematics.touch_layout()

    # -- constraints -----------------------------------------------------------------------
    @property
    def constraints(self) -> list[Constraint]:
        """Registered constraints in stacking order (family order, then insertion)."""
        return list(self._sorted())

    def _sorted(self) -> list[Constraint]:
        if self._ordered is None:
            items = list(self._constraints.values())
            self._ordered = sorted(items, key=lambda c: (c.order, items.index(c)))
        return self._ordered

    def add_constraint(self, constraint: Constraint, replace: bool = False) -> Constraint:
        """Register a constraint built on this engine's kinematics.

        Args:
            constraint: The constraint.
            replace: Replace a constraint of the same name instead of failing.

        Raises:
            InvalidInput: A constraint of that name exists (and not ``replace``), or it
                reads another cache.
        """
        if not isinstance(constraint, Constraint):
            raise InvalidInput(
                f"add_constraint needs a Constraint, got {type(constraint).__name__}",
                what="constraint",
            )
        replace = _validate.flag(replace, "replace")
        if constraint.kinematics is not self._kinematics:
            raise InvalidInput(f"constraint {constraint.name!r} reads another kinematics cache")
        if constraint.name in self._constraints and not replace:
            raise InvalidInput(f"a constraint named {constraint.name!r} already exists")
        if isinstance(constraint, MimicConstraint):  # the couplings must compose
            others = [
                c
                for c in self._constraints.values()
                if isinstance(c, MimicConstraint) and c.name != constraint.name
            ]
            self._coupling_reduction([*others, constraint])
        with self._step_lock:  # (not while a step in another thread reads the constraints)
            constraint.share_lock(self._step_lock)
            self._constraints.pop(constraint.name, None)
            self._constraints[constraint.name] = constraint
            self._constraints_changed()
        return constraint

    def get_constraint(self, name: str) -> Constraint | None:
        """The constraint of that name, or None.

        Raises:
            InvalidInput: ``name`` is not a string.
        """
        try:
            return self._constraints.get(name)
        except TypeError:  # (unhashable: a list, a dict)
            raise InvalidInput(
                f"constraint name must be a string, got {name!r}", what="name", value=name
            ) from None

    def remove_constraint(self, name: str) -> bool:
        """Remove a constraint by name; return whether one was removed.

        Raises:
            InvalidInput: ``name`` is the joint-limit constraint (switch it off instead).
        """
        _validate.name(name, "constraint name")
        if name == JOINT_LIMITS:
            raise InvalidInput("the joint limits cannot be removed; disable them instead")
        with self._step_lock:
            removed = self._constraints.pop(name, None) is not None
            self._constraints_changed()
        return removed

    def _constraints_changed(self) -> None:
        """A constraint was added or removed: a new order, plan and computed-flag list."""
        self._ordered = None
        self._computed = [
            c for c in self._constraints.values() if type(c).active is not Constraint.active
        ]
        self._kinematics.touch_layout()

    def constraints_of(self, family: str) -> list[Constraint]:
        """Registered constraints of one family, in stacking order."""
        return [c for c in self.constraints if c.family == family]

    def reset(self) -> None:
        """Forget every constraint's step-to-step state (a new motion starts)."""
        with self._step_lock:
            for c in self._constraints.values():
                c.reset()

    # -- equality couplings ----------------------------------------------------------------
    def _coupling_reduction(self, couplers: list[MimicConstraint]) -> Reduction:
        """The null-space change of variables of these coupling constraints (cached).

        Raises:
            InvalidInput: A joint follows two leaders, or the couplings form a cycle.
        """
        key = tuple(id(c) for c in couplers)
        if self._reduction is None or key != self._reduction_key:
            parts = [c.velocity_couplings for c in couplers]
            f, lead, m = (np.concatenate([p[i] for p in parts]) for i in range(3))
            try:
                reduction = Reduction(self._robot.nv, f, lead, m)
            except InvalidInput as exc:
                names = [c.name for c in couplers]
                raise InvalidInput(f"mimic constraints {names}: {exc}") from None
            self._reduction, self._reduction_key = reduction, key
        return self._reduction

    def _coupling_offset(self) -> tuple[Reduction, np.ndarray]:
        """This step's reduction and ``v0`` (from the coupling rows just written)."""
        red = self._coupling_reduction(self._couplers)
        drift = np.concatenate([self._rows_lower[self._slices[c.name]] for c in self._couplers])
        return red, red.offset(drift, self._v0)

    # -- building ------------------------------------------------------------------------
    def update(self, q: object | None) -> None:
        """Update the engine's kinematics at ``q`` (None or empty: keep the current one).

        Raises:
            ShapeError, NonFiniteInput, InvalidInput: Bad ``q``.
        """
        if type(q) is np.ndarray:  # (the common case, without is_empty's call)
            if q.ndim and not q.shape[0]:
                return  # (length 0: keep the current one)
        elif _validate.is_empty(q):
            return
        self._kinematics.update(q)

    def _new_layout(self, revision: int) -> _Layout:
        """A new layout of the active tasks, kept while ``layout_revision`` is ``revision``.

        (Every change that decides the layout bumps the kinematics' layout_revision: a
        task's priority, dimension, mask, weight, mode or active flag, and the engine's
        own additions and removals.)
        """
        self._layout = _Layout(list(self._tasks.values()), self._robot.nv)
        self._layout_key = revision
        return self._layout

    def _row_capacity(self, cap: int) -> None:
        if cap > self._rows_C.shape[0]:
            cap = max(cap, 2 * self._rows_C.shape[0])
            self._rows_C = np.zeros((cap, self._robot.nv))
            self._rows_lower = np.zeros(cap)
            self._rows_upper = np.zeros(cap)

    def _computed_flags(self) -> tuple[bool, ...]:
        """The ``active`` flags of the constraints whose family computes them."""
        return tuple(bool(c.active) for c in self._computed)

    def _constraint_plan(self, key: tuple[int, bool, tuple[bool, ...]]) -> _ConstraintPlan:
        """A new plan of the active constraints' calls, kept under ``key``.

        ``key`` is ``(layout revision, apply_limits, computed flags)`` as the step read it;
        the step keeps the plan until one of them changes.
        """
        apply_limits = key[1]
        active = [c for c in self._sorted() if c.active and (apply_limits or not c.is_limit)]
        self._plan = _ConstraintPlan(active)
        self._plan_key = key
        return self._plan

    def _assemble(self, apply_limits: bool) -> tuple[_Layout, int]:
        """Steps 2 and 3: task rows, box and constraint rows into the buffers."""
        revision = self._kinematics.layout_revision
        layout = self._layout
        if layout is None or self._layout_key != revision:
            layout = self._new_layout(revision)
        clock = time.perf_counter
        t0 = clock() if self._timing else 0.0
        for write, J, xdot in layout.writers:
            write(J, xdot)
        if self._timing:
            self._tasks_ms = (clock() - t0) * 1e3
        dt = self._dt
        lo, hi = self._box_lower, self._box_upper
        lo.fill(-np.inf)
        hi.fill(np.inf)
        plan = self._plan
        key = (revision, apply_limits, self._computed_flags() if self._computed else ())
        if plan is None or self._plan_key != key:
            plan = self._constraint_plan(key)
        self._couplers = [c for c in plan.mimics if c.max_rows()] if plan.mimics else []
        self._colliders = plan.colliders
        for narrow in plan.narrowers:
            narrow(dt, lo, hi)
        writers = []
        total = 0
        for c, write, name, phase in plan.writers:
            cap = c.max_rows()
            if cap:
                writers.append((write, cap, name, phase))
                total += cap
        if total > self._rows_C.shape[0]:
            self._row_capacity(total)
        start = 0
        self._slices = slices = {}
        C, lower, upper = self._rows_C, self._rows_lower, self._rows_upper
        for write, cap, name, phase in writers:
            end = start + cap
            t0 = clock() if self._timing else 0.0
            n = write(dt, C[start:end], lower[start:end], upper[start:end])
            if self._timing:
                self._phase[phase] = (clock() - t0) * 1e3
            slices[name] = slice(start, start + n)
            start += n
        if self._row_deadband > 0.0 and start:
            self._rows_lower[:start] -= self._row_deadband
            self._rows_upper[:start] += self._row_deadband
        return layout, start

    def build_problem(
        self, q: object | None = None, apply_limits: bool = True, advance: bool = True
    ) -> Problem:
        """Assemble the stacked problem of one step without solving it (copies).

        Args:
            q: Configuration (size nq); the engine's current one when omitted or empty.
            apply_limits: Include the joint position/velocity limit bounds.
            advance: Advance the constraints' step-to-step state as a step does
                (collision broadphase and learned margins, limit recovery flags, the
                ``last_*`` records). ``False`` restores it afterwards: inspecting a step
                then leaves no trace on the steps that follow (only the configuration
                is set to ``q``).

        Raises:
            ShapeError, NonFiniteInput, InvalidInput: Bad ``q`` or task layout.
        """
        apply_limits = _validate.flag(apply_limits, "apply_limits")
        advance = _validate.flag(advance, "advance")
        with self._lock, self._step_lock:
            self.update(q)
            saved = [] if advance else [(c, c.snapshot()) for c in self.constraints]
            slices = self._slices
            try:
                layout, p = self._assemble(apply_limits)
                return self._problem(layout, p).copy()
            finally:
                for c, state in saved:
                    c.restore(state)
                if not advance:
                    self._slices = slices

    def _problem(self, layout: _Layout, p: int) -> Problem:
        basis = offset = None
        if self._couplers:
            red, v0 = self._coupling_offset()
            basis, offset = red.G, v0
        return Problem(
            layout.levels,
            layout.level_tasks,
            layout.modes,
            self._rows_C[:p],
            self._rows_lower[:p],
            self._rows_upper[:p],
            self._box_lower,
            self._box_upper,
            self._slices,
            layout.J,
            layout.xdot,
            layout.offsets,
            basis,
            offset,
        )

    # -- solving ---------------------------------------------------------------------------
    def _new_solver(self, free: np.ndarray | None) -> SNSSolver:
        weights = self._joint_weights if free is None else self._joint_weights[free]
        return SNSSolver(
            weights.shape[0],
            joint_weights=weights,
            damping=self._damping,
            tolerance=self._tolerance,
            max_iterations=self._max_iterations,
        )

    def _solver(self) -> SNSSolver:
        if self._sns is None:
            self._sns = self._new_solver(None)
        return self._sns

    def _reduced_solver(self, red: Reduction) -> SNSSolver:
        """The SNS solver of the coupled problem: the free joints and their weights.

        A follower's weight is unused: the coupling moves it (the fold layout's metric).
        """
        if self._sns_z is None or self._sns_z.n != red.nz:
            self._sns_z = self._new_solver(red.free)
        return self._sns_z

    def solve(self, q: object | None = None, apply_limits: bool = True) -> VelocitySolverResult:
        """One velocity step.

        Args:
            q: Configuration (size nq); the engine's current one when omitted or empty.
            apply_limits: Include the joint position/velocity limit bounds.

        Returns:
            The :class:`VelocitySolverResult`; ``solution`` is the joint velocity ``dq``
            (size nv) [rad/s or m/s]. Bad input gives status INVALID_INPUT (never an
            exception).
        """
        with self._lock, self._step_lock:
            t0 = time.perf_counter()
            try:
                if apply_limits is not True:  # the default skips the check on the hot path
                    apply_limits = _validate.flag(apply_limits, "apply_limits")
                self.update(q)
                t1 = time.perf_counter()
                layout, p = self._assemble(apply_limits)
            except StackIKError as exc:
                self._last_result = result = self.invalid_result(str(exc), t0)
                return result
            t2 = time.perf_counter()
            # (the SNS core never returns a non-finite solution: NUMERICAL_ERROR, zeros)
            if self._couplers:
                result = self._run_coupled(layout, p)
            else:
                result = (self._sns or self._solver()).solve_stacked(
                    layout.J, layout.xdot, layout.offsets, layout.mode_values,
                    self._rows_C[:p], self._rows_lower[:p], self._rows_upper[:p],
                    self._box_lower, self._box_upper,
                )  # fmt: skip
            self._last_layout = layout
            self._last_result = result
            self._report_stall(layout, result)
            if result.status == SolverStatus.INFEASIBLE and p:  # (before a violation's status)
                result.status_message += "; most violated: " + self._worst_row(result, p)
            self._report_violation(result)
            t3 = time.perf_counter()
            result.computation_time_ms = (t3 - t0) * 1e3
            result.solver_computation_time_ms = (t3 - t2) * 1e3
            self._record(result, layout, apply_limits)
            if self._timing:
                result.timings = {
                    "kinematics_ms": (t1 - t0) * 1e3,
                    "problem_ms": (t2 - t1) * 1e3,
                    "solve_ms": (t3 - t2) * 1e3,
                    **self._phase,
                }
                tasks = self._tasks_ms
                result.pinocchio_kinematics_time_ms = (t1 - t0) * 1e3
                result.task_update_time_ms = tasks
                result.constraint_setup_time_ms = (t2 - t1) * 1e3 - tasks
                result.collision_constraint_time_ms = self._phase.get("collision_ms", 0.0)
            return result

    def _report_violation(self, result: VelocitySolverResult) -> None:
        """Turn the status into COLLISION_VIOLATED while a pair is below its minimum (in place).

        The step is kept (it pushes the pair out at the recovery rate, when a joint moves
        it); the message names the pair, says what the step does about it, and carries
        the solver's own outcome. Statuses without a solution stay.
        """
        if result.status in _NO_SOLUTION:
            return
        feasible = result.status is not SolverStatus.INFEASIBLE
        for c in self._colliders:
            found = c.violation(feasible)
            if found is not None:
                outcome = result.status_message or str(result.status)
                result.status = SolverStatus.COLLISION_VIOLATED
                result.status_message = f"{found} (solver: {outcome})"
                return

    def _record(self, result: VelocitySolverResult, layout: _Layout, apply_limits: bool) -> None:
        """EmbodiK's result fields of this step (see :class:`~stackik.results.SolveRecord`)."""
        result.limits_applied = bool(apply_limits)
        result.task_modes_effective = list(layout.modes)
        result.task_used_fallback = [False] * len(layout.modes)
        result.levels = (layout.J.copy(), layout.offsets, layout.xdot.copy())
        if not self._colliders:
            return
        pairs = queries = culled = spheres = 0
        exhausted = False
        for c in self._colliders:
            watched, exact, skipped, listed = c.step_counts()
            pairs += watched
            queries += exact
            culled += watched - listed
            spheres += listed - exact - skipped
            exhausted |= skipped > 0
        result.collision_pairs_considered += pairs
        result.collision_exact_distance_queries += queries
        result.collision_bound_culled_pairs += culled
        result.collision_sphere_culled_pairs += spheres
        result.collision_budget_exhausted |= exhausted

    def _run_coupled(self, layout: _Layout, p: int) -> VelocitySolverResult:
        """Solve in the couplings' null space, ``v = G z + v0``; map the result back.

        The coupling rows themselves are dropped (``C G = 0`` and their bounds become 0:
        they hold by construction); every other row maps as ``C G`` with its bounds
        shifted by ``C v0``, whatever its family; the box becomes the box of ``z``.
        """
        red, v0 = self._coupling_offset()
        rows = self._uncoupled_rows(p)
        C = self._rows_C[rows]
        shift = C @ v0
        z_lo, z_hi = np.empty(red.nz), np.empty(red.nz)
        red.box(self._box_lower, self._box_upper, v0, z_lo, z_hi)
        result = self._reduced_solver(red).solve_stacked(
            layout.J @ red.G,
            layout.xdot - layout.J @ v0,
            layout.offsets,
            layout.mode_values,
            C @ red.G,
            self._rows_lower[rows] - shift,
            self._rows_upper[rows] - shift,
            z_lo,
            z_hi,
        )
        if result.status in _NO_SOLUTION:
            result.solution = np.zeros(self._robot.nv)
        else:
            result.solution = red.solution(result.solution, v0)
        result.saturated_joints = [int(red.free[j]) for j in result.saturated_joints]
        result.saturated_constraints = [int(rows[r]) for r in result.saturated_constraints]
        return result

    def _uncoupled_rows(self, p: int) -> np.ndarray:
        """Indices of this step's rows that are not coupling rows (cached by layout)."""
        key = (
            p,
            *((self._slices[c.name].start, self._slices[c.name].stop) for c in self._couplers),
        )
        if key != self._rows_key:
            keep = np.ones(p, dtype=bool)
            for c in self._couplers:
                keep[self._slices[c.name]] = False
            self._rows_key, self._rows_kept = key, np.flatnonzero(keep)
        return self._rows_kept

    def _worst_row(self, result: VelocitySolverResult, p: int) -> str:
        """Name the constraint row the returned solution violates most."""
        v = self._rows_C[:p] @ result.solution
        excess = np.maximum(self._rows_lower[:p] - v, v - self._rows_upper[:p])
        row = int(np.argmax(excess))
        return f"{self._describe_row(row)}, violated by {excess[row]:.3g}"

    def _describe_row(self, row: int) -> str:
        """What stacked constraint row ``row`` of the last step stands for."""
        for c in self.constraints:
            rows = self._slices.get(c.name)
            if rows is not None and rows.start <= row < rows.stop:
                return c.describe_row(row - rows.start)
        return f"row {row}"  # pragma: no cover

    def _report_stall(self, layout: _Layout, result: VelocitySolverResult) -> None:
        """Turn a SUCCESS that is a stall into NO_PROGRESS, naming what blocks it (in place).

        A stall: the highest-priority level is a SCALE level that got scale 0, the step is
        zero, and the level asks for motion (its task velocity's norm exceeds
        ``STALL_DEMAND``). SNS found no direction that serves the main task inside the
        constraints; calling that SUCCESS would hide a robot that stands still with a
        large task error. The message names the saturated joints and the constraints of
        the saturated rows (cheap: a stall can last many ticks); :meth:`describe_saturation`
        names each row.
        """
        if result.status != SolverStatus.SUCCESS or not result.task_scales.size:
            return
        if not layout.top_scale or result.task_scales[0] > STALL_SCALE:
            return
        step = result.solution.tolist()
        if step and max(max(step), -min(step)) > ZERO_STEP:  # (the largest |dq|, two C passes)
            return
        demand = _top_demand(layout)
        if demand <= STALL_DEMAND:
            return
        result.status = SolverStatus.NO_PROGRESS
        result.status_message = f"{layout.stall_prefix}{demand:.3g}" + self._blocked_note(
            result.saturated_joints, result.saturated_constraints
        )

    def _blocked_note(self, joints: list[int], rows: list[int]) -> str:
        """``"; blocked by saturated joints [...] (names) and constraint rows [...] (...)"``.

        Kept while a stall repeats with the same saturated joints and rows (a stall can
        last many ticks): the text is made again only when they, the joints' names or the
        constraints that wrote rows change.
        """
        slices = self._slices
        key = (tuple(joints), tuple(rows), self._robot.revision, *slices)
        if len(slices) > 1:  # (which rows are whose depends on the row counts too)
            key += tuple(sl.stop for sl in slices.values())
        cached_key, note = self._blocked
        if key == cached_key:
            return note
        joint_note = row_note = ""
        if joints:
            names = self._velocity_joint_names()
            joint_note = f" ({', '.join([names[j] for j in joints])})"
        if rows:
            row_note = _row_families(slices, rows)
        note = (
            f"; blocked by saturated joints {joints}{joint_note} and constraint rows "
            f"{rows}{row_note}"
        )
        self._blocked = (key, note)
        return note

    def _velocity_joint_names(self) -> tuple[str, ...]:
        """The joint name of each velocity coordinate (cached per robot revision)."""
        robot = self._robot
        revision, names = self._joint_names
        if revision != robot.revision:
            names = tuple(coordinate_names(robot.joint_infos, robot.nv))
            self._joint_names = (robot.revision, names)
        return names

    def describe_saturation(self) -> list[str]:
        """What held the last step back: each saturated joint and constraint row, named.

        A joint reads ``joint 'name' (velocity index i) at a bound of its velocity box,
        dq = v``; a row reads ``row r: `` and its constraint's description of it (a
        collision row names its pair, distance and minimum distance [mm]). The rows are
        the last step's (``VelocitySolverResult.saturated_constraints``): describe a step
        before the next one.

        Returns:
            One line per saturated joint, then one per saturated constraint row; empty
            before the first step or when nothing saturated.
        """
        with self._lock, self._step_lock:  # (the step's records: as a step reads them)
            result = self._last_result
            if result is None:
                return []
            names = self._velocity_joint_names()
            lines = [
                f"joint {names[j]!r} (velocity index {j}) at a bound of its velocity box, "
                f"dq = {result.solution[j]:.4g}"
                for j in result.saturated_joints
            ]
            lines += [f"row {r}: {self._describe_row(r)}" for r in result.saturated_constraints]
            return lines

    def invalid_result(self, message: str, t0: float | None = None) -> VelocitySolverResult:
        """The ``INVALID_INPUT`` result of a step refused before solving (zero velocity).

        Args:
            message: What was wrong.
            t0: ``time.perf_counter()`` at the start of the call (for its duration).
        """
        if t0 is None:
            t0 = time.perf_counter()
        nlev = len({t.priority for t in self._tasks.values() if t.active})
        return VelocitySolverResult(
            solution=np.zeros(self._robot.nv),
            status=SolverStatus.INVALID_INPUT,
            status_message=message,
            task_scales=np.zeros(nlev),
            task_errors=np.zeros(nlev),
            computation_time_ms=(time.perf_counter() - t0) * 1e3,
        )

    def __repr__(self) -> str:
        return (
            f"VelocityEngine(robot={self._robot!r}, tasks={list(self._tasks)}, "
            f"constraints={list(self._constraints)}, dt={self._dt})"
        )


#: Statuses whose result carries no solution (zeros).
_NO_SOLUTION = (
    SolverStatus.INVALID_INPUT,
    SolverStatus.SHAPE_MISMATCH,
    SolverStatus.NUMERICAL_ERROR,
)

#: A highest-priority SCALE level at or below this scale gets nothing of its task velocity.
STALL_SCALE = 1e-12
#: A step is zero when no joint velocity exceeds this [rad/s or m/s].
ZERO_STEP = 1e-12
#: The highest level asks for motion when its task velocity's norm exceeds this.
STALL_DEMAND = 1e-9


def _step_call(obj: object, checked: str, unchecked: str, base: type) -> Any:
    """The bound method a step calls: ``unchecked`` unless the family overrides ``checked``.

    A family written before the split into a checked public method and an unchecked one
    (``write``/``write_rows``, ``tighten_box``/``narrow_box``) overrides the checked one
    itself; it is called through it.
    """
    if getattr(type(obj), checked) is getattr(base, checked):
        return getattr(obj, unchecked)
    return getattr(obj, checked)


def _narrows_box(cls: type[Constraint]) -> bool:
    """Whether a constraint family narrows the box (the base class's methods do nothing)."""
    return (
        cls.narrow_box is not Constraint.narrow_box or cls.tighten_box is not Constraint.tighten_box
    )


class _ConstraintPlan:
    """The calls a step makes for its active constraints, in stacking order."""

    def __init__(self, active: list[Constraint]) -> None:
        self.narrowers = [
            _step_call(c, "tighten_box", "narrow_box", Constraint)
            for c in active
            if _narrows_box(type(c))
        ]
        #: (families that never write rows, the joint limits, are left out: a base
        #: max_rows() is 0 and the step skips them anyway)
        self.writers = [
            (c, _step_call(c, "write", "write_rows", Constraint), c.name, f"{c.name}_ms")
            for c in active
            if type(c).max_rows is not Constraint.max_rows
        ]
        self.mimics = [c for c in active if isinstance(c, MimicConstraint)]
        self.colliders = [c for c in active if isinstance(c, CollisionConstraint)]


def _top_demand(layout: _Layout) -> float:
    """Norm of the highest-priority level's task velocity (0 without levels)."""
    if not layout.levels:
        return 0.0
    return math.hypot(*layout.levels[0][1].tolist())  # (a matrix product costs more on a few)


def _row_families(slices: dict[str, slice], rows: list[int]) -> str:
    """The constraints the stacked rows ``rows`` belong to, in stacking order ("" for none)."""
    names = []
    for name, sl in slices.items():
        for r in rows:
            if sl.start <= r < sl.stop:
                names.append(name)
                break
    return f" ({', '.join(names)})" if names else ""
