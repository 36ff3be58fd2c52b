"""Task: the base class of every task family, and the task registry.

A task maps the robot's joint velocity ``v`` (size nv) to a task-space velocity
through its Jacobian ``J`` and asks for ``J v = xdot``. A task reads one
:class:`~stackik.model.kinematics.Kinematics` cache (its solver's; it never runs forward
kinematics itself). The desired velocity is

    xdot = target_velocity + gain * error     (feed-forward plus proportional feedback)

where ``error`` points from the current value to the target. Tasks with the same
``priority`` form one level, their rows scaled by ``sqrt(weight)``.

The hot path is :meth:`Task.write_rows`: the task writes its (masked, weighted) rows
straight into the solver's stacked level buffers (the velocity engine's own views, sized
by the layout; the public :meth:`Task.write` checks the buffers it is given first).
:meth:`Task.update` computes the same rows into the task's own buffers for inspection
(:meth:`Task.get_jacobian`, :meth:`Task.get_error`).

A new family is one module with one ``Task`` subclass decorated with
:func:`register_task`, plus its import in ``stackik/tasks/__init__.py``. It implements
``_compute(J, error)`` or :meth:`Task.write_rows`; a family that overrides ``write``
itself is called through it.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from typing import ClassVar, TypeVar

import numpy as np

from .. import _validate
from ..errors import InvalidInput, ShapeError
from ..model import Kinematics, RobotModel, as_kinematics
from ..sns import TaskSolveMode

__all__ = ["Task", "TaskType", "register_task", "task_families"]


#: The compiled task writers' "none" arrays: no excluded columns, no feed-forward
#: velocity or error override (one array type per argument, never None).
NO_COLUMNS = np.zeros(0, dtype=np.int64)
NO_VALUES = np.zeros(0)


class TaskType(enum.Enum):
    """Kinds of task, as EmbodiK names them."""

    FRAME_POSITION = "frame_position"
    FRAME_ORIENTATION = "frame_orientation"
    FRAME_POSE = "frame_pose"
    COM = "com"
    POSTURE = "posture"
    JOINT = "joint"
    RELATIVE_FRAME = "relative_frame"
    ABSOLUTE_FRAME = "absolute_frame"

    def __str__(self) -> str:
        return self.name


_FAMILIES: dict[str, type[Task]] = {}

T = TypeVar("T", bound="type[Task]")

#: Largest task priority level magnitude accepted (levels are sorted, not enumerated;
#: lower numbers come first, negative ones included).
MAX_PRIORITY = 1_000_000


def register_task(cls: T) -> T:
    """Register a task family under its ``family`` name (class decorator).

    Raises:
        InvalidInput: ``cls`` is not a :class:`Task` subclass.
    """
    if not (isinstance(cls, type) and issubclass(cls, Task)):
        raise InvalidInput(f"register_task needs a Task subclass, got {cls!r}", what="cls")
    _FAMILIES[cls.family] = cls
    return cls


def task_families() -> dict[str, type[Task]]:
    """Registered task families by name."""
    return dict(_FAMILIES)


class Task:
    """Base class of all tasks.

    Args:
        name: Unique task name.
        kinematics: The kinematics cache the task reads (a solver's), or a robot (its own
            cache).
        dimension: Number of task rows before masking.
        priority: Priority level, 0 the highest (EmbodiK's constructor argument).
        weight: Row weight within the level (EmbodiK's constructor argument).

    Attributes:
        name: Task name.
        priority: Priority level, 0 is the highest; larger numbers come later.
        weight: Row weight within its priority level (rows scale by ``sqrt(weight)``).
        gain: Proportional gain on the error [1/s].
        active: Inactive tasks are skipped by the solver.
        solve_mode: :class:`TaskSolveMode` (SCALE or MIN_ERROR) of this task's level.
    """

    family: ClassVar[str] = "task"
    _task_type: TaskType
    name: str = _validate.fixed_property(
        "name", "remove the task and add it again", "Task name (fixed when the task is made)."
    )
    task_type: TaskType = _validate.fixed_property(
        "task_type", "add a task of the other type", ":class:`TaskType` (fixed when it is made)."
    )

    def __init__(
        self,
        name: str,
        kinematics: Kinematics | RobotModel,
        dimension: int,
        priority: int = 0,
        weight: float = 1.0,
    ) -> None:
        self._name = _validate.name(name, "task name")
        self._kin = as_kinematics(kinematics)
        self._robot = self._kin.robot
        self._dim = dimension
        self.layout_version = 0
        self._fresh = False  # the rows of the last update(robot) are the ones to report
        self.priority = priority
        self.weight = weight
        self.gain = 1.0
        self.active = True
        self.solve_mode = TaskSolveMode.SCALE
        self._mask = np.ones(dimension, dtype=bool)
        self._rows = np.arange(dimension)
        self._excluded: list[int] = []
        self._excluded_cols = NO_COLUMNS  # (the same indices as the compiled writers take them)
        self._target_velocity: np.ndarray | None = None
        self._error_override: np.ndarray | None = None  # (masked size)
        self._J = np.zeros((dimension, self._robot.nv))
        self._error = np.zeros(dimension)

    # -- bindings ------------------------------------------------------------------------

    @property
    def kinematics(self) -> Kinematics:
        """The kinematics cache this task reads."""
        return self._kin

    @property
    def robot(self) -> RobotModel:
        """The robot description."""
        return self._robot

    # -- configuration ---------------------------------------------------------------------
    # Checked here, at configuration time: a bad value would otherwise surface on the hot
    # path as NaN rows (weight, gain) or an exception (priority). Changes to what decides
    # the stacked layout bump ``layout_version``.
    def _relayout(self) -> None:
        self.layout_version += 1
        self._kin.touch_layout()

    @property
    def priority(self) -> int:
        """Priority level, 0 is the highest."""
        return self._priority

    @priority.setter
    def priority(self, value: int) -> None:
        self._priority = _validate.count(
            value, f"task {self.name!r}: priority", minimum=-MAX_PRIORITY, maximum=MAX_PRIORITY
        )
        self._relayout()

    @property
    def weight(self) -> float:
        """Row weight within its priority level (>= 0)."""
        return self._weight

    @weight.setter
    def weight(self, value: float) -> None:
        self._weight = self._non_negative(value, "weight")
        self._root = math.sqrt(self._weight)
        self._relayout()

    @property
    def gain(self) -> float:
        """Proportional gain on the error [1/s] (>= 0)."""
        return self._gain

    @gain.setter
    def gain(self, value: float) -> None:
        self._gain = self._non_negative(value, "gain")

    @property
    def active(self) -> bool:
        """Whether the solver uses this task."""
        return self._active

    @active.setter
    def active(self, value: bool) -> None:
        self._active = _validate.flag(value, f"task {self.name!r}: active")
        self._relayout()

    @property
    def solve_mode(self) -> TaskSolveMode:
        """:class:`TaskSolveMode` of this task's level."""
        return self._solve_mode

    @solve_mode.setter
    def solve_mode(self, value: TaskSolveMode) -> None:
        try:
            self._solve_mode = TaskSolveMode(value)
        except ValueError:
            raise InvalidInput(f"task {self.name!r}: unknown solve mode {value!r}") from None
        self._relayout()

    def _non_negative(self, value: object, what: str) -> float:
        return _validate.positive_float(value, f"task {self.name!r}: {what}", allow_zero=True)

    def get_type(self) -> TaskType:
        """The task's :class:`TaskType`."""
        return self.task_type

    def get_dimension(self) -> int:
        """Number of active rows (after the axis mask)."""
        return int(self._rows.size)

    @property
    def row_mask(self) -> np.ndarray:
        """Which of the full rows are controlled (a copy)."""
        return self._mask.copy()

    def _set_mask(self, start: int, mask: Sequence[float] | np.ndarray) -> None:
        self._mask[start : start + 3] = _validate.flags(mask, 3, f"task {self.name!r}: axis mask")
        self._set_rows(np.flatnonzero(self._mask))

    def _set_rows(self, rows: np.ndarray) -> None:
        self._rows = rows
        self._error_override = None  # (sized for the old rows)
        self._relayout()

    def set_excluded_joint_indices(self, indices: Sequence[int]) -> None:
        """Joints (velocity indices) this task may not move: their Jacobian columns are zeroed."""
        idx = [
            _validate.count(i, "joint index", minimum=-(2**31))
            for i in _validate.items(indices, "excluded joint indices")
        ]
        bad = [i for i in idx if not 0 <= i < self._robot.nv]
        if bad:
            raise InvalidInput(
                f"task {self.name!r}: joint indices {bad} outside [0, {self._robot.nv})"
            )
        self._excluded = sorted(set(idx))
        self._excluded_cols = np.array(self._excluded, dtype=np.int64) if idx else NO_COLUMNS

    def get_excluded_joint_indices(self) -> list[int]:
        """Velocity indices excluded from this task."""
        return list(self._excluded)

    def clear_excluded_joint_indices(self) -> None:
        """Let the task move every joint again."""
        self._excluded = []
        self._excluded_cols = NO_COLUMNS

    @property
    def target_velocity(self) -> np.ndarray | None:
        """Feed-forward task velocity (full, unmasked size), or None."""
        return None if self._target_velocity is None else self._target_velocity.copy()

    def set_target_velocity(self, velocity: object) -> None:
        """Feed-forward task velocity added to ``gain * error`` (full, unmasked size)."""
        checked = _validate.bounded_vector(
            velocity, self._dim, _validate.MAX_MAGNITUDE, f"{self.name} target velocity"
        )
        self._target_velocity = np.array(checked, dtype=np.float64)  # the task's own copy

    def clear_target_velocity(self) -> None:
        """Remove the feed-forward velocity."""
        self._target_velocity = None

    @property
    def error_override(self) -> np.ndarray | None:
        """The error the task velocity is computed from instead of its own, or None (a copy)."""
        return None if self._error_override is None else self._error_override.copy()

    def set_error_override(self, error: object) -> None:
        """Compute the task velocity from ``error`` instead of the task's own error.

        Until :meth:`clear_error_override`, the velocity is ``gain * error +
        target_velocity``, while the Jacobian and :meth:`get_error` stay those at the
        solve configuration. A control loop that solves where its motion is headed
        (:class:`~stackik.control.ControlLoop`) gives each task its error at the present
        configuration this way, so that the braking distance does not feed back into
        the task velocity. Changing the task's axis or joint mask clears it.

        Args:
            error: The masked error (size :meth:`get_dimension`, as :meth:`get_error`
                returns) [m or rad].

        Raises:
            ShapeError: Wrong size.
            NonFiniteInput: NaN or inf entries.
            InvalidInput: An entry beyond :data:`stackik._validate.MAX_MAGNITUDE`.
        """
        checked = _validate.bounded_vector(
            error, self._rows.size, _validate.MAX_MAGNITUDE, f"{self.name} error override"
        )
        self._error_override = np.array(checked, dtype=np.float64)  # the task's own copy

    def override_with_current_error(self) -> None:
        """Set the error override to the task's current error (:meth:`get_error`).

        The error of the last :meth:`update` or step then drives the task velocity until
        :meth:`clear_error_override`, wherever the next steps are solved.
        """
        self._error_override = self._error[self._rows]  # (a copy: fancy indexing)

    def override_with_present_error(self) -> None:
        """Evaluate the task's error at the cache's configuration and make it the override.

        :meth:`update` then :meth:`override_with_current_error`; tasks whose error needs
        no Jacobian (frame and posture tasks) compute only the error, the same numbers.
        A control loop calls it at the present configuration before solving elsewhere.
        """
        self.update()
        self.override_with_current_error()

    def clear_error_override(self) -> None:
        """The task velocity comes from the task's own error again."""
        self._error_override = None

    # -- evaluation ------------------------------------------------------------------------
    def _compute(self, J: np.ndarray, error: np.ndarray) -> None:
        """Fill ``J`` (dimension x nv) and ``error`` (dimension) in place from the cache."""
        raise NotImplementedError

    def write(self, J: np.ndarray, xdot: np.ndarray) -> None:
        """Write this step's masked rows, scaled by ``sqrt(weight)``, into the solver's buffers.

        Checks the buffers, then calls :meth:`write_rows`.

        Args:
            J: View of the stacked Jacobian rows reserved for this task
                (:meth:`get_dimension` x nv).
            xdot: View of the stacked task velocities reserved for it.

        Raises:
            ShapeError: ``J`` or ``xdot`` does not have the task's rows (the compiled
                writers would write past them).
            InvalidInput: ``J`` or ``xdot`` is not a writable float64 array.
        """
        self._check_buffers(J, xdot)
        self.write_rows(J, xdot)

    def write_rows(self, J: np.ndarray, xdot: np.ndarray) -> None:
        """:meth:`write` without the buffer checks: the velocity engine's call on its own views.

        ``J`` must be a writable float64 (:meth:`get_dimension` x nv) array and ``xdot``
        a writable float64 vector of that many rows (compiled writers do not check
        bounds); call :meth:`write` with buffers of your own.
        """
        self._fresh = False
        full = self._rows.size == self._dim
        self._compute(J if full else self._J, self._error)
        if not full:
            np.take(self._J, self._rows, axis=0, out=J)
        if self._excluded:
            J[:, self._excluded] = 0.0
        self._write_velocity(xdot)
        if self._root != 1.0:
            J *= self._root
            xdot *= self._root

    def _check_buffers(self, J: np.ndarray, xdot: np.ndarray) -> None:
        """Raise unless ``J`` is a writable float64 (rows x nv) array and ``xdot`` (rows,).

        Raises:
            ShapeError: Wrong shapes (or not arrays).
            InvalidInput: Not float64, or read-only (a compiled writer would fail on it).
        """
        rows = self._rows.size
        _validate.check_out(J, (rows, self._robot.nv), f"task {self.name!r}: J")
        _validate.check_out(xdot, (rows,), f"task {self.name!r}: xdot")

    def _rows_for(self, J: np.ndarray, xdot: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """The controlled rows and the error override, checked against ``J`` and ``xdot``.

        A compiled :meth:`write_rows` reads both once through this: its buffers were sized
        by the layout, and a mask changed by another thread since then must not reach the
        compiled writer (it would write past them).

        Raises:
            ShapeError: The rows no longer match the buffers (the next layout fixes it).
        """
        rows, override = self._rows, self._error_override
        m = rows.shape[0]
        if J.shape[0] != m or xdot.shape[0] != m:
            raise ShapeError(f"task {self.name!r}: J", (m, self._robot.nv), J.shape)
        if override is not None and override.shape[0] != m:
            raise ShapeError(f"task {self.name!r}: error override", (m,), override.shape)
        return rows, override

    def _write_velocity(self, xdot: np.ndarray) -> None:
        """``xdot = gain * error (+ target_velocity)`` on the controlled rows."""
        rows = self._rows
        if self._error_override is not None:
            np.multiply(self._error_override, self._gain, out=xdot)
            if self._target_velocity is not None:
                xdot += self._target_velocity[rows]
        elif rows.size == self._dim:
            np.multiply(self._error, self._gain, out=xdot)
            if self._target_velocity is not None:
                xdot += self._target_velocity
        else:
            np.multiply(self._error[rows], self._gain, out=xdot)
            if self._target_velocity is not None:
                xdot += self._target_velocity[rows]

    def update(self, robot: RobotModel | None = None) -> None:
        """Recompute the Jacobian and error into the task's own buffers (for inspection).

        Args:
            robot: EmbodiK's form ``task.update(robot)``: evaluate at the robot's current
                state (what ``robot.update_kinematics(q)`` set, the robot's own cache)
                instead of the solver's cache. :meth:`get_error` and
                :meth:`get_jacobian` then report that evaluation until the solver's next
                step.

        Raises:
            InvalidInput: ``robot`` is another description than the task's.
        """
        if robot is None:
            self._fresh = False
            self._compute(self._J, self._error)
        else:
            if robot is not self._robot:
                raise InvalidInput(
                    f"task {self.name!r} belongs to {self._robot!r}, not {robot!r}", what="robot"
                )
            own = self._kin
            self._kin = robot.kinematics  # the robot's cache, for this evaluation only
            try:
                self._compute(self._J, self._error)
            finally:
                self._kin = own
            self._fresh = True
        if self._excluded:
            self._J[:, self._excluded] = 0.0

    def get_jacobian(self) -> np.ndarray:
        """Masked task Jacobian at the cache's current configuration (rows x nv, a copy).

        Excluded joints' columns are zero; rows are not scaled by the weight. After
        ``update(robot)`` (until the solver's next step), the Jacobian of that update.
        """
        if not self._fresh:
            self._compute(self._J, np.empty(self._dim))
            if self._excluded:
                self._J[:, self._excluded] = 0.0
        return self._J[self._rows]

    def get_error(self) -> np.ndarray:
        """Masked error of the last :meth:`update` or solver step, pointing to the target."""
        return self._error[self._rows]

    def get_velocity(self) -> np.ndarray:
        """Masked desired task velocity ``target_velocity + gain * error``."""
        out = np.empty(self._rows.size)
        self._write_velocity(out)
        return out

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.name!r}, priority={self.priority}, weight={self.weight}, "
            f"active={self.active}, dim={self.get_dimension()})"
        )
