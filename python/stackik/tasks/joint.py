"""JointTask and MultiJointTask: drive individual joints to target values.

For joint i with velocity index ``k``: ``J = e_k^T`` and ``e = q_i* - q_i`` [rad or m];
continuous joints use the angle ``atan2(sin, cos)`` and the wrapped difference.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import _validate
from ..errors import InvalidInput
from ..model import Kinematics, RobotModel
from .base import Task, TaskType, register_task


def _scalar_joint(robot: RobotModel, joint_name: str) -> tuple[int, int, bool]:
    """Return (q index, v index, is_continuous) of a one-DoF joint."""
    nv = robot.get_joint_velocity_size(joint_name)
    nq = robot.get_joint_config_size(joint_name)
    if nv != 1 or nq not in (1, 2):
        raise InvalidInput(
            f"joint {joint_name!r} is not a one-degree-of-freedom joint (nq={nq}, nv={nv})"
        )
    return (
        robot.get_joint_config_index(joint_name),
        robot.get_joint_velocity_index(joint_name),
        nq == 2,
    )


@register_task
class MultiJointTask(Task):
    """Track target values of several one-DoF joints.

    Args:
        name: Task name.
        kinematics: Kinematics cache read (a solver's), or a robot (its own cache).
        joint_names: Controlled joints (revolute, prismatic or continuous).
        target_values: Targets [rad or m]; the current values when omitted.
    """

    family = "multi_joint"
    _task_type = TaskType.JOINT

    def __init__(
        self,
        name: str,
        kinematics: Kinematics | RobotModel,
        joint_names: Sequence[str],
        target_values: Sequence[float] | None = None,
        priority: int = 0,
        weight: float = 1.0,
    ) -> None:
        names = [] if isinstance(joint_names, str) else _validate.items(joint_names, "joint_names")
        if not names:
            raise InvalidInput("joint_names must be a non-empty sequence of joint names")
        super().__init__(name, kinematics, len(names), priority, weight)
        info = [_scalar_joint(self._robot, j) for j in names]
        self.joint_names = names
        self._iq = np.array([i[0] for i in info])
        self._iv = np.array([i[1] for i in info])
        self._continuous = np.array([i[2] for i in info])
        self._selection = np.zeros((len(info), self._robot.nv))
        self._selection[np.arange(len(info)), self._iv] = 1.0
        self._J[:] = self._selection
        self._targets = self._values() if target_values is None else self._check(target_values)

    @property
    def joint_indices(self) -> list[int]:
        """Velocity indices of the controlled joints."""
        return self._iv.tolist()

    def _check(self, values: object) -> np.ndarray:
        return _validate.bounded_vector(
            values, len(self.joint_names), _validate.MAX_MAGNITUDE, f"{self.name} target values"
        )

    def _values(self) -> np.ndarray:
        q = self._kin.q
        vals = q[self._iq].copy()
        if self._continuous.any():
            c = self._continuous
            vals[c] = np.arctan2(q[self._iq[c] + 1], q[self._iq[c]])
        return vals

    def set_target_values(self, values: object) -> None:
        """Set the target values [rad or m]."""
        self._targets = self._check(values)

    @property
    def target_values(self) -> np.ndarray:
        """The target values [rad or m]."""
        return self._targets.copy()

    def _compute(self, J: np.ndarray, error: np.ndarray) -> None:
        """Selection rows (constant); the error wraps continuous joints to (-pi, pi]."""
        J[:] = self._selection
        err = self._targets - self._values()
        c = self._continuous
        if c.any():
            err[c] = (err[c] + np.pi) % (2.0 * np.pi) - np.pi
        error[:] = err


@register_task
class JointTask(MultiJointTask):
    """Track a target value of one joint.

    Args:
        name: Task name.
        kinematics: Kinematics cache read (a solver's), or a robot (its own cache).
        joint_name: Controlled one-DoF joint.
        target_value: Target [rad or m].
    """

    family = "joint"

    def __init__(
        self,
        name: str,
        kinematics: Kinematics | RobotModel,
        joint_name: str,
        target_value: float = 0.0,
        priority: int = 0,
        weight: float = 1.0,
    ) -> None:
        super().__init__(name, kinematics, [joint_name], [target_value], priority, weight)
        self.joint_name = joint_name

    def set_target_value(self, value: float) -> None:
        """Set the target value [rad or m]."""
        self.set_target_values([value])
