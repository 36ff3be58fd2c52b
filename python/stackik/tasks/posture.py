"""PostureTask: drive joints toward a reference configuration.

For the controlled velocity indices ``S`` the task is ``J = I[S]`` and
``e = difference(q, q*)[S]``, the tangent-space displacement from the current
configuration to the target (``q* - q`` for revolute and prismatic joints, the
shortest angle for continuous joints). A floating base is not controlled unless
its indices are asked for.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import _validate
from ..errors import InvalidInput, ShapeError
from ..model import Kinematics, RobotModel, as_kinematics
from ._posture_kernel import selection_rows
from .base import NO_VALUES, Task, TaskType, register_task


def joint_velocity_indices(robot: RobotModel, joints: Sequence[int | str]) -> list[int]:
    """Velocity indices of ``joints`` given as velocity indices or joint names."""
    out: list[int] = []
    for j in _validate.items(joints, "joints"):
        if isinstance(j, str):
            start, size = robot.get_joint_velocity_index(j), robot.get_joint_velocity_size(j)
            if size == 0:
                raise InvalidInput(
                    f"joint {j!r} is a mimic follower and has no velocity of its own"
                )
            out.extend(range(start, start + size))
        else:
            i = _validate.count(j, "joint velocity index", minimum=-(2**31))
            if not 0 <= i < robot.nv:
                raise InvalidInput(f"joint velocity index {i} outside [0, {robot.nv})")
            out.append(i)
    return out


#: A posture task's default priority (EmbodiK's): below the usual tasks.
DEFAULT_PRIORITY = 10
#: A posture task's default weight (EmbodiK's).
DEFAULT_WEIGHT = 0.1


@register_task
class PostureTask(Task):
    """Regularize the configuration toward a target posture.

    Args:
        name: Task name.
        kinematics: Kinematics cache read (a solver's), or a robot (its own cache).
        controlled_joints: Velocity indices or joint names to control; all actuated
            joints (not the floating base) when omitted. EmbodiK's overload
            ``PostureTask(name, robot, priority, weight)`` (an int here) is accepted.
        priority: Priority level; EmbodiK's default 10 puts a posture below the usual
            tasks (priority 0).
        weight: Row weight; EmbodiK's default 0.1.

    The target starts at the cache's current configuration.
    """

    family = "posture"
    _task_type = TaskType.POSTURE

    def __init__(
        self,
        name: str,
        kinematics: Kinematics | RobotModel,
        controlled_joints: Sequence[int | str] | int | None = None,
        priority: int | None = None,
        weight: float | None = None,
    ) -> None:
        joints: Sequence[int | str] | None
        if isinstance(controlled_joints, (int, np.integer)) and not isinstance(
            controlled_joints, bool
        ):  # EmbodiK's PostureTask(name, robot, priority[, weight])
            if weight is not None:
                raise InvalidInput("PostureTask(name, robot, priority, weight): too many arguments")
            joints, weight, priority = None, priority, int(controlled_joints)
        else:
            joints = controlled_joints  # type: ignore[assignment]
        super().__init__(
            name,
            kinematics,
            as_kinematics(kinematics).robot.nv,
            DEFAULT_PRIORITY if priority is None else priority,
            DEFAULT_WEIGHT if weight is None else weight,
        )
        robot = self._robot
        if joints is None:
            idx = list(range(6 if robot.is_floating_base else 0, robot.nv))
        else:
            idx = joint_velocity_indices(robot, joints)
        self.set_controlled_joint_indices(idx)
        self._target_q = self._kin.q.copy()
        self._J[:] = np.eye(robot.nv)

    @property
    def controlled_joint_indices(self) -> list[int]:
        """Controlled velocity indices."""
        return self._rows.tolist()

    def set_controlled_joint_indices(self, indices: Sequence[int]) -> None:
        """Choose which velocity indices the task controls."""
        self._mask[:] = False
        self._mask[joint_velocity_indices(self._robot, indices)] = True
        self._set_rows(np.flatnonzero(self._mask))
        self._selection = np.eye(self._robot.nv)[self._rows]

    def set_target_configuration(self, q_target: object) -> None:
        """Set the target configuration (size nq)."""
        q = self._robot.check_configuration(q_target, f"{self.name} target configuration")
        self._target_q = np.array(q, dtype=float)

    @property
    def target_configuration(self) -> np.ndarray:
        """The target configuration (a copy)."""
        return self._target_q.copy()

    def _compute(self, J: np.ndarray, error: np.ndarray) -> None:
        """Identity Jacobian; the error is the tangent displacement to the target."""
        J[:] = 0.0
        np.fill_diagonal(J, 1.0)
        self._write_error(error)

    def _write_error(self, error: np.ndarray) -> None:
        """``error`` = the tangent displacement from the cache's configuration to the target."""
        kin = self._kin
        kin.difference(kin.q, self._target_q, out=error)

    def override_with_present_error(self) -> None:
        """The displacement to the target at the cache's configuration as the override."""
        self._fresh = False
        self._write_error(self._error)
        self.override_with_current_error()

    def write_rows(self, J: np.ndarray, xdot: np.ndarray) -> None:
        """Selection rows (constant) and the masked error, scaled by ``sqrt(weight)``."""
        self._fresh = False
        selection = self._selection
        rows, override = self._rows_for(J, xdot)
        if selection.shape[0] != rows.shape[0]:  # (a change of joints by another thread)
            raise ShapeError(f"task {self.name!r}: selection", (rows.shape[0],), selection.shape)
        error = self._error
        self._write_error(error)
        if override is not None:  # (the kernel reads the full-size error)
            error = error.copy()
            error[rows] = override
        tv = self._target_velocity
        selection_rows(
            error, rows, (self._gain, self._root), NO_VALUES if tv is None else tv,
            selection, self._excluded_cols, J, xdot,
        )  # fmt: skip
