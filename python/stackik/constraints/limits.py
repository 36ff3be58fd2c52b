"""Joint limits as a velocity box for one control step.

A joint at distance ``m_up = q_max - q`` [rad or m] from its upper limit, with
velocity limit ``v_max`` and acceleration limit ``a_max``, may move at most at

    v_up = min(v_max, m_up / dt, a_max (sqrt(dt^2 + 2 m_up / a_max) - dt))

The last term is the largest ``v`` with ``v dt + v^2 / (2 a_max) <= m_up``: after this
step the joint can still brake to rest before the limit. The lower side is symmetric.
A joint already outside a limit gets a bound that drives it back (``m / dt``, capped at
``v_max``); the other side's bound never forbids that recovery.

:class:`JointLimitsConstraint` applies this to every revolute and prismatic joint (and
the velocity limits to every joint) as the solver's joint velocity box.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _validate
from ..errors import InvalidInput
from ..model import Kinematics, RobotModel
from ..model.joints import scalar_limited
from ._box_kernel import limit_box
from .base import Constraint, register_constraint


def calculate_velocity_box_constraint(
    position_margin_lower: float,
    position_margin_upper: float,
    velocity_limit: float,
    acceleration_limit: float,
    dt: float,
) -> tuple[float, float]:
    """Velocity bounds of one joint for one step of length ``dt``.

    Args:
        position_margin_lower: ``q - q_min`` [rad or m] (negative when below the limit).
        position_margin_upper: ``q_max - q`` [rad or m] (negative when above the limit).
        velocity_limit: ``v_max`` > 0 [rad/s or m/s].
        acceleration_limit: ``a_max`` > 0 [rad/s^2 or m/s^2]; inf disables the braking term.
        dt: Step length > 0 [s].

    Returns:
        ``(lower, upper)`` velocity bounds [rad/s or m/s], ``lower <= upper`` whenever
        ``q_min <= q_max``.

    Raises:
        InvalidInput: A NaN margin, a limit that is not > 0 (inf allowed) or a ``dt``
            that is not positive and finite.
    """
    for what, value in (
        ("position_margin_lower", position_margin_lower),
        ("position_margin_upper", position_margin_upper),
    ):
        if math.isnan(_validate.real(value, what)):
            raise InvalidInput(f"{what} must not be NaN", what=what, value=value)
    for what, value in (
        ("velocity_limit", velocity_limit),
        ("acceleration_limit", acceleration_limit),
    ):
        if not _validate.real(value, what) > 0:  # inf allowed (no limit), NaN refused
            raise InvalidInput(f"{what} must be > 0, got {value!r}", what=what, value=value)
    lo, hi = velocity_box(
        np.array([position_margin_lower]),
        np.array([position_margin_upper]),
        np.array([velocity_limit]),
        np.array([acceleration_limit]),
        dt,
    )
    return float(lo[0]), float(hi[0])


def velocity_box(
    margin_lower: np.ndarray,
    margin_upper: np.ndarray,
    velocity_limit: np.ndarray,
    acceleration_limit: np.ndarray,
    dt: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Vectorized :func:`calculate_velocity_box_constraint` (inf margins mean no limit).

    Outside one limit, the recovery speed wins over the other side's braking bound,
    which near a narrow range would otherwise forbid it (an empty box).
    """
    dt = _validate.positive_float(dt, "dt")
    ml = np.asarray(margin_lower, dtype=float)
    n = ml.shape[0]
    vmax = np.asarray(velocity_limit, dtype=float)
    lo, hi = -vmax.copy(), vmax.copy()
    # The kernel reads margins as limits around q = 0: q_lower = -m_low, q_upper = m_up.
    index = np.arange(n)
    limit_box(
        np.zeros(n),
        index,
        index,
        -ml,
        np.asarray(margin_upper, dtype=float),
        0.0,
        np.asarray(acceleration_limit, dtype=float),
        float(dt),
        lo,
        hi,
    )
    return lo, hi


@register_constraint
class JointLimitsConstraint(Constraint):
    """Joint position, velocity and acceleration limits as the joint velocity box.

    Every solver has one (named ``"joint_limits"``). Velocity limits bound every joint
    by ``v_max``; position limits (revolute and prismatic joints, shrunk by ``margin``)
    tighten that with the braking bound of the module docstring, using the robot's
    acceleration limits.

    Args:
        name: Constraint name.
        kinematics: Kinematics cache read (a solver's), or a robot (its own cache).

    Attributes:
        position_limits: Apply the position-limit bounds.
        velocity_limits: Apply the velocity limits.
    """

    family = "joint_limits"
    order = 0
    is_limit = True

    def __init__(self, name: str, kinematics: Kinematics | RobotModel) -> None:
        super().__init__(name, kinematics)
        self.position_limits = True
        self.velocity_limits = True
        self._margin = 0.0
        self._iq, self._iv = scalar_limited(self._robot.joint_infos)

    @property
    def margin(self) -> float:
        """Distance kept from the position limits [rad or m] (simIK's limit margin)."""
        return self._margin

    @margin.setter
    def margin(self, value: float) -> None:
        margin = _validate.positive_float(value, "margin", allow_zero=True)
        model = self._kin.model
        half = 0.5 * (model.upperPositionLimit[self._iq] - model.lowerPositionLimit[self._iq])
        too_wide = np.flatnonzero(half < margin)
        if too_wide.size:
            k = int(too_wide[0])
            raise InvalidInput(
                f"margin {margin:g} leaves no room inside the limits of the joint at q "
                f"index {int(self._iq[k])} (half range {half[k]:g})"
            )
        self._margin = margin

    def tighten_box(self, dt: float, lower: np.ndarray, upper: np.ndarray) -> None:
        """Velocity limits, then the position-limit braking bounds."""
        model = self._kin.model
        if self.velocity_limits:
            vmax = model.velocityLimit
            np.maximum(lower, -vmax, out=lower)
            np.minimum(upper, vmax, out=upper)
        if self.position_limits and self._iq.size:
            limit_box(
                self._kin.q,
                self._iq,
                self._iv,
                model.lowerPositionLimit,
                model.upperPositionLimit,
                self._margin,
                self._robot.acceleration_limits,
                dt,
                lower,
                upper,
            )
