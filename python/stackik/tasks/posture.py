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
import pinocchio as pin

from ..errors import InvalidInput
from ..model import RobotModel
from .base import Task, TaskType


def joint_velocity_indices(robot: RobotModel, joints: Sequence[int | str]) -> list[int]:
    """Velocity indices of ``joints`` given as velocity indices or joint names."""
    out: list[int] = []
    for j in joints:
        if isinstance(j, str):
            start, size = robot.get_joint_velocity_index(j), robot.get_joint_velocity_size(j)
            if size == 0:
                raise InvalidInput(
                    f"joint {j!r} is a mimic follower and has no velocity of its own"
                )
            out.extend(range(start, start + size))
        else:
            i = int(j)
            if not 0 <= i < robot.nv:
                raise InvalidInput(f"joint velocity index {i} outside [0, {robot.nv})")
            out.append(i)
    return out


class PostureTask(Task):
    """Regularize the configuration toward a target posture.

    Args:
        name: Task name.
        robot: Robot model.
        controlled_joints: Velocity indices or joint names to control; all actuated
            joints (not the floating base) when omitted.
    """

    task_type = TaskType.POSTURE

    def __init__(
        self, name: str, robot: RobotModel, controlled_joints: Sequence[int | str] | None = None
    ) -> None:
        super().__init__(name, robot, robot.nv)
        if controlled_joints is None:
            idx = list(range(6 if robot.is_floating_base else 0, robot.nv))
        else:
            idx = joint_velocity_indices(robot, controlled_joints)
        self.set_controlled_joint_indices(idx)
        self._target_q = robot.get_current_configuration()
        self._J[:] = np.eye(robot.nv)

    @property
    def controlled_joint_indices(self) -> list[int]:
        """Controlled velocity indices."""
        return self._rows.tolist()

    def set_controlled_joint_indices(self, indices: Sequence[int]) -> None:
        """Choose which velocity indices the task controls."""
        self._mask[:] = False
        self._mask[joint_velocity_indices(self._robot, indices)] = True
        self._rows = np.flatnonzero(self._mask)

    def set_target_configuration(self, q_target: object) -> None:
        """Set the target configuration (size nq)."""
        self._target_q = self._robot._check_q(q_target, f"{self.name} target configuration")

    @property
    def target_configuration(self) -> np.ndarray:
        """The target configuration (a copy)."""
        return self._target_q.copy()

    def update(self) -> None:
        """Recompute the error; the Jacobian is constant (identity rows)."""
        robot = self._robot
        self._error[:] = pin.difference(robot.model, robot._q, self._target_q)

    def _exclusions_changed(self) -> None:
        """Rebuild the constant Jacobian: identity with the excluded columns zeroed."""
        self._J[:] = np.eye(self._robot.nv)
        if self._excluded:
            self._J[:, self._excluded] = 0.0
