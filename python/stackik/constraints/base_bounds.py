"""FloatingBaseBounds: bound a floating base's world position and its angular velocity.

Position: with the free-flyer at ``p`` (world) [m] and rotation ``R``, its linear
velocity coordinates ``v[:3]`` are in the base frame, so the world rate is ``R v[:3]``;
the rows ``(lower - p) / dt <= R v[:3] <= (upper - p) / dt`` keep ``p`` inside
``[lower, upper]`` after one step.

Orientation: ``v[3:6]`` (the base's angular velocity in its own axes) [rad/s] is boxed
directly.
"""

from __future__ import annotations

import numpy as np

from .. import _validate
from ..errors import InvalidInput
from ..model import Kinematics, RobotModel
from .base import Constraint, _guarded, register_constraint


@register_constraint
class FloatingBaseBounds(Constraint):
    """Bounds on a free-flyer base: world position rows and an angular velocity box.

    Args:
        name: Constraint name.
        kinematics: Kinematics cache read (a solver's), or a robot (its own cache).

    Raises:
        InvalidInput: The robot has no floating base.
    """

    family = "base_bounds"
    order = 70

    def __init__(self, name: str, kinematics: Kinematics | RobotModel) -> None:
        super().__init__(name, kinematics)
        if not self._robot.is_floating_base:
            raise InvalidInput("the robot has no floating base")
        self.position: tuple[np.ndarray, np.ndarray] | None = None
        self.orientation: tuple[np.ndarray, np.ndarray] | None = None

    @_guarded
    def set_position_bounds(self, lower: object, upper: object) -> None:
        """Bound the base's world position [m]."""
        self.position = _validate.bounds(
            lower, upper, 3, "base position bounds", limit=_validate.MAX_MAGNITUDE
        )

    @_guarded
    def set_orientation_bounds(self, lower: object, upper: object) -> None:
        """Bound the base's angular velocity (local axes) [rad/s]."""
        self.orientation = _validate.bounds(
            lower, upper, 3, "base orientation bounds", limit=_validate.MAX_MAGNITUDE
        )

    def max_rows(self) -> int:
        """Three rows with position bounds, none without."""
        return 3 if self.position is not None else 0

    def write_rows(self, dt: float, C: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> int:
        """The three position rows."""
        if self.position is None:
            return 0
        lo, hi = self.position
        kin = self._kin
        C[:3] = 0.0
        C[:3, :3] = kin.data.oMi[1].rotation
        p = kin.q[:3]
        np.divide(lo - p, dt, out=lower[:3])
        np.divide(hi - p, dt, out=upper[:3])
        return 3

    def narrow_box(self, dt: float, lower: np.ndarray, upper: np.ndarray) -> None:
        """Box the angular velocity coordinates."""
        if self.orientation is not None:
            lo, hi = self.orientation
            np.maximum(lower[3:6], lo, out=lower[3:6])
            np.minimum(upper[3:6], hi, out=upper[3:6])
