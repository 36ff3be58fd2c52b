"""Task: the base class of every task family.

A task maps the robot's joint velocity ``v`` (size nv) to a task-space velocity
through its Jacobian ``J`` and asks for ``J v = xdot``. Each solver step calls
:meth:`Task.update`, which reads the robot's kinematics cache (it never runs forward
kinematics itself) and stores the task's Jacobian and error. The desired velocity is

    xdot = target_velocity + gain * error     (feed-forward plus proportional feedback)

where ``error`` points from the current value to the target. Tasks with the same
``priority`` form one level, their rows scaled by ``sqrt(weight)``.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

import numpy as np

from .. import _validate
from ..errors import InvalidInput
from ..model import RobotModel
from ..sns import TaskSolveMode


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


class Task:
    """Base class of all tasks.

    Args:
        name: Unique task name.
        robot: The robot whose kinematics cache the task reads.
        dimension: Number of task rows before masking.

    Attributes:
        name: Task name.
        priority: Priority level, 0 is the highest; larger numbers come later.
        weight: Row weight within its priority level (rows scale by ``sqrt(weight)``).
        gain: Proportional gain on the error [1/s].
        active: Inactive tasks are skipped by the solver.
        solve_mode: :class:`TaskSolveMode` (SCALE or MIN_ERROR) of this task's level.
    """

    task_type: TaskType

    def __init__(self, name: str, robot: RobotModel, dimension: int) -> None:
        self.name = name
        self._robot = robot
        self._dim = dimension
        self.priority = 0
        self.weight = 1.0
        self.gain = 1.0
        self.active = True
        self.solve_mode = TaskSolveMode.SCALE
        self._mask = np.ones(dimension, dtype=bool)
        self._rows = np.arange(dimension)
        self._excluded: list[int] = []
        self._target_velocity: np.ndarray | None = None
        self._J = np.zeros((dimension, robot.nv))
        self._error = np.zeros(dimension)

    # -- configuration ---------------------------------------------------------------------
    # Checked here, at configuration time: a bad value would otherwise surface on the hot
    # path as NaN rows (weight, gain) or an exception (priority).
    @property
    def priority(self) -> int:
        """Priority level, 0 is the highest."""
        return self._priority

    @priority.setter
    def priority(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise InvalidInput(f"task {self.name!r}: priority must be an integer, got {value!r}")
        self._priority = int(value)

    @property
    def weight(self) -> float:
        """Row weight within its priority level (>= 0)."""
        return self._weight

    @weight.setter
    def weight(self, value: float) -> None:
        self._weight = self._non_negative(value, "weight")

    @property
    def gain(self) -> float:
        """Proportional gain on the error [1/s] (>= 0)."""
        return self._gain

    @gain.setter
    def gain(self, value: float) -> None:
        self._gain = self._non_negative(value, "gain")

    def _non_negative(self, value: object, what: str) -> float:
        try:
            v = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            v = float("nan")
        if not (np.isfinite(v) and v >= 0.0):
            raise InvalidInput(f"task {self.name!r}: {what} must be finite and >= 0, got {value!r}")
        return v

    def get_type(self) -> TaskType:
        """The task's :class:`TaskType`."""
        return self.task_type

    def get_dimension(self) -> int:
        """Number of active rows (after the axis mask)."""
        return int(self._rows.size)

    def _set_mask(self, start: int, mask: Sequence[float] | np.ndarray) -> None:
        m = np.asarray(mask, dtype=float).reshape(-1)
        if m.size != 3:
            raise InvalidInput(f"task {self.name!r}: an axis mask has 3 entries, got {m.size}")
        self._mask[start : start + 3] = m != 0
        self._rows = np.flatnonzero(self._mask)

    def set_excluded_joint_indices(self, indices: Sequence[int]) -> None:
        """Joints (velocity indices) this task may not move: their Jacobian columns are zeroed."""
        idx = [int(i) for i in indices]
        bad = [i for i in idx if not 0 <= i < self._robot.nv]
        if bad:
            raise InvalidInput(
                f"task {self.name!r}: joint indices {bad} outside [0, {self._robot.nv})"
            )
        self._excluded = sorted(set(idx))
        self._exclusions_changed()

    def get_excluded_joint_indices(self) -> list[int]:
        """Velocity indices excluded from this task."""
        return list(self._excluded)

    def clear_excluded_joint_indices(self) -> None:
        """Let the task move every joint again."""
        self._excluded = []
        self._exclusions_changed()

    def _exclusions_changed(self) -> None:
        """Hook for tasks with a constant Jacobian: rebuild it (zeroed excluded columns)."""

    def set_target_velocity(self, velocity: object) -> None:
        """Feed-forward task velocity added to ``gain * error`` (full, unmasked size)."""
        self._target_velocity = _validate.vector(
            velocity, self._dim, f"{self.name} target velocity"
        )

    def clear_target_velocity(self) -> None:
        """Remove the feed-forward velocity."""
        self._target_velocity = None

    # -- evaluation ------------------------------------------------------------------------
    def update(self) -> None:
        """Recompute the Jacobian and error from the robot's kinematics cache."""
        self._compute(self._J, self._error)
        if self._excluded:
            self._J[:, self._excluded] = 0.0

    def _compute(self, J: np.ndarray, error: np.ndarray) -> None:
        """Fill ``J`` (dimension x nv) and ``error`` (dimension) in place."""
        raise NotImplementedError

    def rows_for_solver(self) -> tuple[np.ndarray, np.ndarray]:
        """``(J, xdot)`` of the last :meth:`update`, masked; internal buffers when unmasked.

        The solver's hot path reads these without copying; they are overwritten by the
        next :meth:`update`, so callers that keep them must copy.
        """
        xdot = self.gain * self._error
        if self._target_velocity is not None:
            xdot += self._target_velocity
        if self._rows.size == self._dim:
            return self._J, xdot
        return self._J[self._rows], xdot[self._rows]

    def get_jacobian(self) -> np.ndarray:
        """Masked task Jacobian of the last :meth:`update` (rows x nv)."""
        return self._J[self._rows]

    def get_error(self) -> np.ndarray:
        """Masked error of the last :meth:`update`, pointing to the target."""
        return self._error[self._rows]

    def get_velocity(self) -> np.ndarray:
        """Masked desired task velocity ``target_velocity + gain * error``."""
        xdot = self.gain * self._error
        if self._target_velocity is not None:
            xdot = xdot + self._target_velocity
        return xdot[self._rows]

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.name!r}, priority={self.priority}, weight={self.weight}, "
            f"active={self.active}, dim={self.get_dimension()})"
        )
