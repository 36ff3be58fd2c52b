"""RelativePoseConstraint: keep the pose of frame b in frame a inside per-axis bounds.

The constrained coordinates are ``x = [p_ab ; phi_ab]`` with ``T_ab = T_a^-1 T_b``,
``p_ab`` its translation (frame a axes) [m] and ``phi_ab = log3(R_ref^T R_ab)`` [rad],
the rotation away from a reference ``R_ref`` (identity by default). Their exact rates
are ``J_p v`` (see :meth:`stackik.model.Kinematics.relative_pose_jacobian`) and
``dphi/dt = Jlog3(R_ref^T R_ab) R_ab^T w_ab`` with ``w_ab`` the spatial angular velocity
of ``R_ab``. The rotation vector wraps at pi and its rate is singular there, so frames
whose relative rotation is near pi (mirrored frames of a dual arm) should bound the
rotation relative to a reference near their working relative rotation. Each masked
axis gets the velocity damper

    gain (lower - x) / dt <= J_x v <= gain (upper - x) / dt

so with ``gain <= 1`` a first-order step never crosses a bound. A fast motion can still
cross one by the step's second-order (linearization) error; each axis therefore keeps
the amount by which the last step went past what its rows promised (``x + dt * bound``)
and tightens its bounds by that much in the next steps (halving each step), as the
collision constraint does: a motion that keeps pressing a bound stays inside it.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from .. import _validate
from ..model import Kinematics, RobotModel
from ..spatial import check_rotation
from .base import Constraint, register_constraint
from .linear import _axis_mask


@register_constraint
class RelativePoseConstraint(Constraint):
    """Bound each masked axis of ``T_a^-1 T_b``.

    Args:
        name: Constraint name.
        kinematics: Kinematics cache read (a solver's), or a robot (its own cache).
        frame_a: Reference frame.
        frame_b: Constrained frame.
        lower_bounds: 6 lower bounds (position xyz [m], rotation-vector xyz [rad]).
        upper_bounds: 6 upper bounds.
        axis_mask: 6 flags, 1 = constrained; every axis when None.
        gain: Damper gain in (0, 1].
        reference_rotation: ``R_ref``, the relative rotation the rotation bounds are
            measured from (identity when omitted).
    """

    family = "relative_pose"
    order = 30

    def __init__(
        self,
        name: str,
        kinematics: Kinematics | RobotModel,
        frame_a: str,
        frame_b: str,
        lower_bounds: object,
        upper_bounds: object,
        axis_mask: object = None,
        gain: float = 0.5,
        reference_rotation: object | None = None,
    ) -> None:
        super().__init__(name, kinematics)
        robot = self._robot
        self.reference_rotation = (
            np.eye(3)
            if reference_rotation is None
            else check_rotation(reference_rotation, "reference_rotation")
        )
        self._fa, self._fb = robot.get_frame_id(frame_a), robot.get_frame_id(frame_b)
        self.frame_a, self.frame_b = frame_a, frame_b
        self.lower, self.upper = _validate.bounds(
            lower_bounds, upper_bounds, 6, "relative pose bounds", limit=_validate.MAX_MAGNITUDE
        )
        self.mask = _axis_mask(axis_mask, 6, "axis_mask")
        self.gain = _validate.in_range(gain, "gain", 0.0, 1.0, open_low=True)
        self.reset()

    def reset(self) -> None:
        """Forget the learned linearization margins (a new motion starts)."""
        self._learned = np.zeros((2, 6))  # how far past its promise each side went [m, rad]
        self._promise: np.ndarray | None = None  # (2, 6): lowest / highest x promised

    def coordinates(self) -> np.ndarray:
        """Current ``[p_ab ; log3(R_ref^T R_ab)]`` [m, rad]."""
        kin = self._kin
        Tab = kin.frame_placement(self._fa).actInv(kin.frame_placement(self._fb))
        return np.concatenate([Tab.translation, pin.log3(self.reference_rotation.T @ Tab.rotation)])

    def max_rows(self) -> int:
        """One row per masked axis."""
        return int(self.mask.sum())

    def write_rows(self, dt: float, C: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> int:
        """Damper rows on the masked axes."""
        Tab, J = self._kin.relative_pose_jacobian(self._fa, self._fb)
        Re = self.reference_rotation.T @ Tab.rotation
        # R_ref is constant: R_e's body angular velocity is R_ab's, R_ab^T w_ab.
        J[3:] = pin.Jlog3(Re) @ Tab.rotation.T @ J[3:]
        x = np.concatenate([Tab.translation, pin.log3(Re)])
        lo, hi = self._tightened(x)
        k = self.gain / dt
        m = self.mask
        r = int(m.sum())
        C[:r] = J[m]
        rate_lo, rate_hi = k * (lo - x), k * (hi - x)
        lower[:r] = rate_lo[m]
        upper[:r] = rate_hi[m]
        self._promise = np.stack([x + dt * rate_lo, x + dt * rate_hi])
        return r

    def _tightened(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The bounds less what each side learned (never crossing the middle of the band)."""
        learned = 0.5 * self._learned
        if self._promise is not None:
            past = np.stack([self._promise[0] - x, x - self._promise[1]])
            np.maximum(learned, past, out=learned)
        np.minimum(learned, 0.5 * (self.upper - self.lower), out=learned)
        self._learned = learned
        return self.lower + learned[0], self.upper - learned[1]
