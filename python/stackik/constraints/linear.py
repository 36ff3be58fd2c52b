"""User-defined rows and tight point / frame-pose constraints.

- :class:`LinearConstraint`: fixed rows ``lower <= C v <= upper`` given by the user.
- :class:`TightPointConstraint`: keep a frame's origin within ``epsilon`` of a target
  point per world axis. With ``p`` the origin and ``J_v`` its world-aligned Jacobian:
  ``(p* - eps - p) / dt <= J_v v <= (p* + eps - p) / dt``.
- :class:`TightFramePoseConstraint`: the same on position and on the orientation
  residual ``r = log3(R R*^T)`` (world axes), whose exact rate is
  ``dr/dt = Jlog3(R R*^T)^T w``: ``(-eps - r) / dt <= Jlog3^T J_w v <= (eps - r) / dt``.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from .. import _validate
from ..errors import InvalidInput
from ..model import Kinematics, RobotModel
from ..spatial import as_se3
from .base import Constraint, _lock_of, register_constraint


@register_constraint
class LinearConstraint(Constraint):
    """Fixed user rows ``lower <= C v <= upper`` (inf entries make a row one-sided).

    Args:
        name: Constraint name.
        kinematics: Kinematics cache (a solver's), or a robot (its own cache).
        C: Rows (rows x nv).
        lower: Lower bounds (rows).
        upper: Upper bounds (rows).

    Raises:
        ShapeError: ``C`` is not rows x nv or the bounds have the wrong size.
        InvalidBounds: ``lower > upper`` somewhere.
    """

    family = "linear"
    order = 40

    def __init__(
        self,
        name: str,
        kinematics: Kinematics | RobotModel,
        C: object,
        lower: object,
        upper: object,
    ) -> None:
        super().__init__(name, kinematics)
        self.C = _validate.bounded(
            _validate.matrix(C, (None, self._robot.nv), "C"), _validate.MAX_MAGNITUDE, "C"
        )
        self.lower, self.upper = _validate.bounds(
            lower, upper, self.C.shape[0], "linear constraint", limit=_validate.MAX_MAGNITUDE
        )

    def append(self, C: object, lower: object, upper: object) -> None:
        """Add rows below the existing ones (after a running step in another thread)."""
        extra = LinearConstraint(self.name, self._kin, C, lower, upper)
        with _lock_of(self):  # (a step sizes its rows with max_rows, then writes them)
            self.C = np.vstack([self.C, extra.C])
            self.lower = np.concatenate([self.lower, extra.lower])
            self.upper = np.concatenate([self.upper, extra.upper])

    def max_rows(self) -> int:
        """The number of stored rows."""
        return int(self.C.shape[0])

    def write_rows(self, dt: float, C: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> int:
        """The stored rows (independent of ``dt``)."""
        r = self.C.shape[0]
        C[:r] = self.C
        lower[:r] = self.lower
        upper[:r] = self.upper
        return r


def _axis_mask(mask: object, n: int, what: str) -> np.ndarray:
    """``n`` flags; ``None`` constrains every axis, an empty mask is refused (no axis)."""
    if mask is None:
        return np.ones(n, dtype=bool)
    if _validate.is_empty(mask):
        raise InvalidInput(
            f"{what} is empty: it would constrain nothing (pass None for every axis, or {n} flags)",
            what=what,
        )
    return _validate.flags(mask, n, what)


@register_constraint
class TightPointConstraint(Constraint):
    """Hold a frame's origin within ``position_epsilon`` [m] of ``target_point`` per axis.

    Args:
        name: Constraint name.
        kinematics: Kinematics cache (a solver's), or a robot (its own cache).
        frame_name: Constrained frame.
        target_point: World point [m].
        position_epsilon: Half-width of the box [m], > 0.
        axis_mask: Which world axes are constrained (3 flags); every axis when None.
    """

    family = "tight_point"
    frame_name: str = _validate.fixed_property(
        "frame_name",
        "add a constraint on the other frame",
        "The constrained frame (fixed when the constraint is made).",
    )
    order = 50

    def __init__(
        self,
        name: str,
        kinematics: Kinematics | RobotModel,
        frame_name: str,
        target_point: object,
        position_epsilon: float = 1e-5,
        axis_mask: object = None,
    ) -> None:
        super().__init__(name, kinematics)
        self._fid = self._robot.get_frame_id(frame_name)
        self._frame_name = frame_name
        self.target = _validate.bounded_vector(
            target_point, 3, _validate.MAX_MAGNITUDE, "target_point"
        )
        self.eps = _validate.positive_float(position_epsilon, "position_epsilon")
        self.mask = _axis_mask(axis_mask, 3, "axis_mask")

    def max_rows(self) -> int:
        """One row per masked axis."""
        return int(self.mask.sum())

    def write_rows(self, dt: float, C: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> int:
        """Rows on the masked position axes."""
        kin = self._kin
        J = kin.frame_jacobian(self._fid, pin.LOCAL_WORLD_ALIGNED)[:3]
        err = self.target - kin.frame_placement(self._fid).translation
        m = self.mask
        r = int(m.sum())
        C[:r] = J[m]
        lower[:r] = ((err - self.eps) / dt)[m]
        upper[:r] = ((err + self.eps) / dt)[m]
        return r


@register_constraint
class TightFramePoseConstraint(Constraint):
    """Hold a frame within an epsilon box of a target pose (position [m], rotation [rad]).

    Args:
        name: Constraint name.
        kinematics: Kinematics cache (a solver's), or a robot (its own cache).
        frame_name: Constrained frame.
        target_pose: SE3 or 4x4 world pose.
        position_epsilon: Position half-width [m], > 0.
        orientation_epsilon: Rotation half-width [rad], > 0.
        axis_mask: 6 flags (x, y, z, rx, ry, rz); every axis when None.
    """

    family = "tight_pose"
    frame_name: str = _validate.fixed_property(
        "frame_name",
        "add a constraint on the other frame",
        "The constrained frame (fixed when the constraint is made).",
    )
    order = 60

    def __init__(
        self,
        name: str,
        kinematics: Kinematics | RobotModel,
        frame_name: str,
        target_pose: object,
        position_epsilon: float = 1e-5,
        orientation_epsilon: float = 1e-4,
        axis_mask: object = None,
    ) -> None:
        super().__init__(name, kinematics)
        self._fid = self._robot.get_frame_id(frame_name)
        self._frame_name = frame_name
        self.target = pin.SE3(as_se3(target_pose, "target_pose"))
        p_eps = _validate.positive_float(position_epsilon, "position_epsilon")
        o_eps = _validate.positive_float(orientation_epsilon, "orientation_epsilon")
        self.eps = np.array([p_eps] * 3 + [o_eps] * 3, dtype=float)
        self.mask = _axis_mask(axis_mask, 6, "axis_mask")

    def max_rows(self) -> int:
        """One row per masked axis."""
        return int(self.mask.sum())

    def write_rows(self, dt: float, C: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> int:
        """Rows on the masked pose axes."""
        kin = self._kin
        oMf = kin.frame_placement(self._fid)
        J = kin.frame_jacobian(self._fid, pin.LOCAL_WORLD_ALIGNED)
        Re = oMf.rotation @ self.target.rotation.T
        J[3:] = pin.Jlog3(Re).T @ J[3:]
        err = np.empty(6)
        err[:3] = self.target.translation - oMf.translation
        err[3:] = -pin.log3(Re)
        m = self.mask
        r = int(m.sum())
        C[:r] = J[m]
        lower[:r] = ((err - self.eps) / dt)[m]
        upper[:r] = ((err + self.eps) / dt)[m]
        return r
