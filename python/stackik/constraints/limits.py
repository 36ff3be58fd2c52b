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
from ._box_kernel import (
    OPT_ENTER,
    OPT_EXIT,
    OPT_HEADROOM,
    OPT_HEADROOM_MARGIN,
    OPT_RECOVERY_GAIN,
    OPT_RELEASE,
    OPT_SOFT_ZONE,
    default_options,
    limit_box,
)
from .base import Constraint, register_constraint


def calculate_velocity_box_constraint(
    position_margin_lower: float,
    position_margin_upper: float,
    velocity_limit: float,
    acceleration_limit: float,
    dt: float,
    min_velocity_headroom: float = -1.0,
    headroom_activation_margin: float = 0.01,
) -> tuple[float, float]:
    """Velocity bounds of one joint for one step of length ``dt``.

    Args:
        position_margin_lower: ``q - q_min`` [rad or m] (negative when below the limit).
        position_margin_upper: ``q_max - q`` [rad or m] (negative when above the limit).
        velocity_limit: ``v_max`` > 0 [rad/s or m/s].
        acceleration_limit: ``a_max`` > 0 [rad/s^2 or m/s^2]; inf disables the braking term.
        dt: Step length > 0 [s].
        min_velocity_headroom: Within ``headroom_activation_margin`` of a limit, keep at
            least this speed toward it (capped by ``margin / dt``, so the limit is never
            crossed) instead of the braking bound's slow final creep [rad/s or m/s];
            ``<= 0`` disables it.
        headroom_activation_margin: Distance to a limit under which the headroom applies
            [rad or m].

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
    opts = default_options()
    if _validate.real(min_velocity_headroom, "min_velocity_headroom") > 0.0:
        opts[OPT_HEADROOM] = _validate.positive_float(
            min_velocity_headroom, "min_velocity_headroom"
        )
        opts[OPT_HEADROOM_MARGIN] = _validate.positive_float(
            headroom_activation_margin, "headroom_activation_margin", allow_zero=True
        )
    lo, hi = velocity_box(
        np.array([position_margin_lower]),
        np.array([position_margin_upper]),
        np.array([velocity_limit]),
        np.array([acceleration_limit]),
        dt,
        opts,
    )
    return float(lo[0]), float(hi[0])


def velocity_box(
    margin_lower: np.ndarray,
    margin_upper: np.ndarray,
    velocity_limit: np.ndarray,
    acceleration_limit: np.ndarray,
    dt: float,
    options: np.ndarray | None = None,
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
        np.zeros(n),
        np.asarray(acceleration_limit, dtype=float),
        float(dt),
        default_options() if options is None else options,
        np.zeros((n, 2), dtype=np.int64),
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

    Recovery: a joint found outside a (shrunk) limit is pushed back by
    ``recovery_gain`` of its violation per step; with a hysteresis, a recovery starts
    only past ``enter_epsilon`` and ends ``exit_epsilon`` inside; violations within
    ``release_margin`` are held, not pushed. ``soft_zone`` (the saturation-exit
    behaviour) ramps the approach speed down linearly over that distance before the
    braking bound would stop the joint. ``relief`` lends part of the limit margin back,
    per joint (the elastic band); the URDF limits themselves are never crossed.

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
        self._options = default_options()
        self._state = np.zeros((self._iq.size, 2), dtype=np.int64)
        self._relief = np.zeros(self._robot.nv)
        self._margins = np.zeros(self._iq.size)

    # -- switches ----------------------------------------------------------------------------
    @property
    def position_limits(self) -> bool:
        """Whether the position-limit bounds apply."""
        return self._position_limits

    @position_limits.setter
    def position_limits(self, value: bool) -> None:
        self._position_limits = _validate.flag(value, "position_limits")

    @property
    def velocity_limits(self) -> bool:
        """Whether the velocity limits apply."""
        return self._velocity_limits

    @velocity_limits.setter
    def velocity_limits(self, value: bool) -> None:
        self._velocity_limits = _validate.flag(value, "velocity_limits")

    # -- recovery and softening settings ----------------------------------------------------
    @property
    def recovery_gain(self) -> float:
        """Fraction in (0, 1] of a limit violation recovered per step."""
        return float(self._options[OPT_RECOVERY_GAIN])

    @recovery_gain.setter
    def recovery_gain(self, value: float) -> None:
        gain = _validate.in_range(value, "recovery_gain", 0.0, 1.0, open_low=True)
        self._options[OPT_RECOVERY_GAIN] = gain

    def set_recovery_hysteresis(self, enter_epsilon: float, exit_epsilon: float) -> None:
        """Start a recovery past ``enter_epsilon``, end it ``exit_epsilon`` inside [rad or m]."""
        enter = _validate.positive_float(enter_epsilon, "enter_epsilon", allow_zero=True)
        leave = _validate.positive_float(exit_epsilon, "exit_epsilon", allow_zero=True)
        self._options[OPT_ENTER], self._options[OPT_EXIT] = enter, leave

    @property
    def recovery_hysteresis(self) -> tuple[float, float]:
        """``(enter_epsilon, exit_epsilon)`` [rad or m]."""
        return float(self._options[OPT_ENTER]), float(self._options[OPT_EXIT])

    @property
    def release_margin(self) -> float:
        """Violations up to this [rad or m] are held, not pushed back."""
        return float(self._options[OPT_RELEASE])

    @release_margin.setter
    def release_margin(self, value: float) -> None:
        self._options[OPT_RELEASE] = _validate.positive_float(value, "release_margin", True)

    @property
    def soft_zone(self) -> float:
        """Distance over which the approach speed ramps down to 0 (0: off) [rad or m]."""
        return float(self._options[OPT_SOFT_ZONE])

    @soft_zone.setter
    def soft_zone(self, value: float) -> None:
        self._options[OPT_SOFT_ZONE] = _validate.positive_float(value, "soft_zone", True)

    @property
    def relief(self) -> np.ndarray:
        """Per-joint margin lent back [rad or m] (size nv; a copy)."""
        return self._relief.copy()

    @relief.setter
    def relief(self, value: object) -> None:
        relief = _validate.vector(value, self._robot.nv, "relief")
        if (relief < 0).any():
            raise InvalidInput("relief must be >= 0", what="relief")
        self._relief = relief.copy()
        self._update_margins()

    def _update_margins(self) -> None:
        """Per-joint margins: the limit margin less the relief, never below 0."""
        self._margins = np.maximum(self._margin - self._relief[self._iv], 0.0)

    @property
    def scalar_joints(self) -> tuple[np.ndarray, np.ndarray]:
        """Indices in q and v of the joints whose position limits make bounds."""
        return self._iq.copy(), self._iv.copy()

    def at_limit(self, tolerance: float) -> np.ndarray:
        """Velocity indices of the joints within ``tolerance`` of a (shrunk) limit [rad or m]."""
        model = self._kin.model
        x = self._kin.q[self._iq]
        up = model.upperPositionLimit[self._iq] - self._margins - x
        down = x - (model.lowerPositionLimit[self._iq] + self._margins)
        return self._iv[(up <= tolerance) | (down <= tolerance)]

    def reset(self) -> None:
        """Forget running recoveries."""
        self._state[:] = 0

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
        self._update_margins()

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
                self._margins,
                self._robot.acceleration_limits,
                dt,
                self._options,
                self._state,
                lower,
                upper,
            )
