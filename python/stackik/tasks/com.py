"""COMTask: drive the centre of mass to a target position.

``e = c* - c`` and ``J = J_com`` (3 x nv, world axes), with per-axis masks (e.g.
control only the ground projection with mask ``[1, 1, 0]``).
"""

from __future__ import annotations

import numpy as np

from .. import _validate
from ..model import Kinematics, RobotModel
from .base import Task, TaskType, register_task


@register_task
class COMTask(Task):
    """Track a target centre-of-mass position (world) [m].

    Args:
        name: Task name.
        kinematics: Kinematics cache read (a solver's), or a robot (its own cache).

    The target starts at the current CoM.
    """

    family = "com"
    _task_type = TaskType.COM

    def __init__(
        self,
        name: str,
        kinematics: Kinematics | RobotModel,
        priority: int = 0,
        weight: float = 1.0,
    ) -> None:
        super().__init__(name, kinematics, 3, priority, weight)
        self._target = self._kin.com.copy()

    def set_position_mask(self, mask: object) -> None:
        """Which world axes (x, y, z) of the CoM are controlled (1) or free (0)."""
        self._set_mask(0, mask)  # type: ignore[arg-type]

    def set_target_position(self, position: object) -> None:
        """Set the target CoM position [m]."""
        self._target = _validate.bounded_vector(
            position, 3, _validate.MAX_MAGNITUDE, f"{self.name} target position"
        )

    @property
    def target_position(self) -> np.ndarray:
        """The target CoM position [m]."""
        return self._target.copy()

    @property
    def current_position(self) -> np.ndarray:
        """The CoM in the cache's current configuration [m]."""
        return self._kin.com.copy()

    def _compute(self, J: np.ndarray, error: np.ndarray) -> None:
        kin = self._kin
        J[:] = kin.com_jacobian_view()
        np.subtract(self._target, kin.com_view(), out=error)
