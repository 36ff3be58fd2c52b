"""Joint limits as a velocity box for one control step.

A joint at distance ``m_up = q_max - q`` [rad or m] from its upper limit, with
velocity limit ``v_max`` and acceleration limit ``a_max``, may move at most at

    v_up = min(v_max, m_up / dt, a_max (sqrt(dt^2 + 2 m_up / a_max) - dt))

The last term is the largest ``v`` with ``v dt + v^2 / (2 a_max) <= m_up``: after this
step the joint can still brake to rest before the limit. The lower side is symmetric.
A joint already outside a limit gets a bound that drives it back (``m / dt``, capped at
``v_max``); the other side's bound never forbids that recovery.

:func:`embodik_velocity_box` is EmbodiK 0.23.2's own per-joint formula (what
``KinematicsSolver.calculate_velocity_box_constraint`` returns): the continuous braking
bound ``sqrt(2 a m)`` instead of the sampled-data one, stateless recovery thresholds.

:class:`JointLimitsConstraint` applies this to every revolute and prismatic joint (and
the velocity limits to every joint) as the solver's joint velocity box.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _pickling, _validate
from ..errors import InvalidInput
from ..model import Kinematics, RobotModel
from ..model.joints import scalar_limited
from ._box_kernel import (
    OPT_ENTER,
    OPT_EXIT,
    OPT_HEADROOM,
    OPT_HEADROOM_FRACTION,
    OPT_HEADROOM_MARGIN,
    OPT_RECOVERY_GAIN,
    OPT_RELEASE,
    OPT_SOFT_ZONE,
    default_options,
    joint_box,
    limit_box,
)
from .base import Constraint, register_constraint

_NO_VIEWS: tuple = (None, None, None, None)  # (no model: the first step makes them)


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
        min_velocity_headroom: A joint farther than ``headroom_activation_margin`` from
            a limit may move toward it at least at this speed [rad/s or m/s], capped by
            its velocity limit and by ``margin / dt`` (no step crosses the limit); within
            the margin, and outside a limit, the bounds are unchanged. ``<= 0`` (default
            -1) disables it.
        headroom_activation_margin: Distance to a limit beyond which the headroom
            applies [rad or m] (default 0.01).

    Returns:
        ``(lower, upper)`` velocity bounds [rad/s or m/s], ``lower <= upper`` whenever
        ``q_min <= q_max``.

    Raises:
        InvalidInput: A NaN margin, a limit that is not > 0 (inf allowed) or a ``dt``
            that is not positive and finite.
    """
    _checked_box_inputs(
        (position_margin_lower, position_margin_upper),
        (velocity_limit, acceleration_limit),
        dt,
    )
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


#: EmbodiK's saturation-exit headroom: this fraction of the velocity limit ...
SATURATION_EXIT_FRACTION = 0.1
#: ... for joints farther than this from a limit [rad or m].
SATURATION_EXIT_MARGIN = 0.01


def _checked_box_inputs(
    margins: tuple[float, float], limits: tuple[float, float], dt: float
) -> tuple[float, float, float, float, float]:
    """The margins (not NaN), limits (> 0, inf allowed) and dt (> 0, finite) as floats."""
    out = []
    for what, value in zip(
        ("position_margin_lower", "position_margin_upper"), margins, strict=True
    ):
        v = _validate.real(value, what)
        if math.isnan(v):
            raise InvalidInput(f"{what} must not be NaN", what=what, value=value)
        out.append(v)
    for what, value in zip(("velocity_limit", "acceleration_limit"), limits, strict=True):
        out.append(_validate.positive_or_inf(value, what))  # (inf: no limit)
    out.append(_validate.positive_float(dt, "dt"))
    return out[0], out[1], out[2], out[3], out[4]


def embodik_velocity_box(
    position_margin_lower: float,
    position_margin_upper: float,
    velocity_limit: float,
    acceleration_limit: float,
    dt: float,
    min_velocity_headroom: float = -1.0,
    headroom_activation_margin: float = 0.01,
    *,
    recovery_gain: float = 0.5,
    enter_epsilon: float = 1e-4,
    exit_epsilon: float = 0.0,
    release_margin: float = 0.0,
    saturation_exit: bool = False,
) -> tuple[float, float]:
    """EmbodiK 0.23.2's velocity bounds of one joint for one step [rad/s or m/s].

    With margins ``m_l = q - q_min`` and ``m_u = q_max - q`` [rad or m]:

    1. A side is *outside* when its margin is below ``-enter_epsilon``; both sides
       outside (inverted limits) give ``(-v_max, v_max)``.
    2. Nominal bounds from the margins clamped at 0:
       ``lower = max(-m_l / dt, -v_max, -sqrt(2 a m_l))`` and
       ``upper = min(m_u / dt, v_max, sqrt(2 a m_u))``.
    3. Headroom (neither side outside): with ``min_velocity_headroom = h >= 0`` (or,
       without one, with ``saturation_exit``: ``h = 0.1 v_max`` beyond 0.01), a side
       whose margin exceeds ``headroom_activation_margin`` moves at least at
       ``min(h, v_max, m / dt)``. EmbodiK raises the bound to ``h`` itself; stackik caps
       it so the headroom never exceeds the velocity limit and no single step crosses
       the limit (the one deliberate difference).
    4. Recovery on an outside side: ``gain * max(0, violation - release) / dt`` (capped
       by ``v_max``) away from the limit, where ``release = max(release_margin,
       max(enter, exit) - enter)``.
    5. ``lower > upper`` (a recovery against the other side's bound): both become
       their midpoint.

    Args:
        position_margin_lower: ``q - q_min`` [rad or m] (negative below the limit).
        position_margin_upper: ``q_max - q`` [rad or m] (negative above the limit).
        velocity_limit: ``v_max`` > 0 [rad/s or m/s].
        acceleration_limit: ``a`` > 0 [rad/s^2 or m/s^2]; inf: no braking term.
        dt: Step length > 0 [s].
        min_velocity_headroom: ``h`` [rad/s or m/s]; negative: off.
        headroom_activation_margin: Margin beyond which the headroom applies [rad or m].
        recovery_gain: Fraction of a violation recovered per step (clamped to [0, 1]).
        enter_epsilon: Violation beyond which a side is outside [rad or m] (>= 0).
        exit_epsilon: EmbodiK's exit epsilon [rad or m] (see step 4).
        release_margin: Violation that is held, not pushed back [rad or m].
        saturation_exit: EmbodiK's saturation-exit behaviour (see step 3).

    Returns:
        ``(lower, upper)`` [rad/s or m/s].

    Raises:
        InvalidInput: A NaN margin, a limit that is not > 0, a ``dt`` that is not
            positive and finite.
    """
    m_l, m_u, vmax, acc, dt = _checked_box_inputs(
        (position_margin_lower, position_margin_upper),
        (velocity_limit, acceleration_limit),
        dt,
    )
    head = _validate.real(min_velocity_headroom, "min_velocity_headroom")
    enter = max(0.0, float(enter_epsilon))
    out_l, out_u = m_l < -enter, m_u < -enter
    if out_l and out_u:
        return -vmax, vmax
    lower = max(-max(0.0, m_l) / dt, -vmax, -math.sqrt(2.0 * acc * max(0.0, m_l)))
    upper = min(max(0.0, m_u) / dt, vmax, math.sqrt(2.0 * acc * max(0.0, m_u)))
    if not (out_l or out_u):
        margin = max(0.0, _validate.real(headroom_activation_margin, "headroom_activation_margin"))
        if head < 0.0 and saturation_exit:
            head, margin = SATURATION_EXIT_FRACTION * vmax, SATURATION_EXIT_MARGIN
        if head > 0.0 and m_l > margin:
            lower = min(lower, -min(head, vmax, m_l / dt))
        if head > 0.0 and m_u > margin:
            upper = max(upper, min(head, vmax, m_u / dt))
    gain = min(max(float(recovery_gain), 0.0), 1.0)
    release = max(float(release_margin), max(enter, float(exit_epsilon)) - enter)
    if out_l:
        lower = max(lower, min(gain * max(0.0, -m_l - release) / dt, vmax))
    elif out_u:
        upper = min(upper, max(-gain * max(0.0, -m_u - release) / dt, -vmax))
    if lower > upper:
        lower = upper = 0.5 * (lower + upper)
    return lower, upper


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
    braking bound would stop the joint. ``relief`` widens the working limits per joint
    (the elastic band): it first lends the limit margin back, and past it widens the
    URDF limits themselves (EmbodiK's band does, see ``docs/embodik.md``).

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
        self._limit_views: tuple = _NO_VIEWS

    # -- pickling: the limit views are of the model's memory, made again after unpickling --
    def __getstate__(self) -> dict[str, Any]:
        return _pickling.without(super().__getstate__(), ("_limit_views",))

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._limit_views = _NO_VIEWS

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

    def set_headroom(self, speed: float = 0.0, fraction: float = 0.0, margin: float = 0.01) -> None:
        """Keep a minimum speed toward a limit for joints farther than ``margin`` from it.

        The minimum is ``max(speed, fraction * v_max)`` [rad/s or m/s], capped by the
        velocity limit and by ``m / dt`` (a step never crosses the limit); within
        ``margin`` [rad or m] the braking bound stands. Both 0: off. EmbodiK's
        saturation-exit behaviour is ``fraction=0.1, margin=0.01``.
        """
        self._options[OPT_HEADROOM] = _validate.positive_float(speed, "speed", True)
        self._options[OPT_HEADROOM_FRACTION] = _validate.positive_float(fraction, "fraction", True)
        self._options[OPT_HEADROOM_MARGIN] = _validate.positive_float(margin, "margin", True)

    @property
    def headroom(self) -> tuple[float, float, float]:
        """``(speed, fraction, margin)`` of :meth:`set_headroom`."""
        o = self._options
        return (
            float(o[OPT_HEADROOM]),
            float(o[OPT_HEADROOM_FRACTION]),
            float(o[OPT_HEADROOM_MARGIN]),
        )

    @property
    def relief(self) -> np.ndarray:
        """Per-joint widening of the working limits [rad or m] (size nv; a copy).

        A joint's limits are its URDF limits shrunk by :attr:`margin` and widened by its
        relief: with a relief above the margin they lie past the URDF limits.
        """
        return self._relief.copy()

    @relief.setter
    def relief(self, value: object) -> None:
        relief = _validate.vector(value, self._robot.nv, "relief")
        if (relief < 0).any():
            raise InvalidInput("relief must be >= 0", what="relief")
        self._relief = relief.copy()
        self._update_margins()

    def _update_margins(self) -> None:
        """Per-joint margins: the limit margin less the relief (negative: widened)."""
        self._margins = self._margin - self._relief[self._iv]

    def near_nominal_limit(self, tolerance: float) -> np.ndarray:
        """Velocity indices of joints within ``tolerance`` of a limit without relief, or past it.

        The nominal limits are the URDF limits shrunk by :attr:`margin` [rad or m].

        Raises:
            InvalidInput: ``tolerance`` is not a finite number.
        """
        tolerance = _validate.magnitude(tolerance, "tolerance")
        model = self._kin.model
        x = self._kin.q[self._iq]
        up = model.upperPositionLimit[self._iq] - self._margin - x
        down = x - (model.lowerPositionLimit[self._iq] + self._margin)
        return self._iv[(up <= tolerance) | (down <= tolerance)]

    def excursion(self) -> np.ndarray:
        """How far each joint is past its URDF position limit [rad or m] (size nv, >= 0)."""
        model = self._kin.model
        x = self._kin.q[self._iq]
        past = np.maximum(
            x - model.upperPositionLimit[self._iq], model.lowerPositionLimit[self._iq] - x
        )
        out = np.zeros(self._robot.nv)
        out[self._iv] = np.maximum(past, 0.0)
        return out

    @property
    def scalar_joints(self) -> tuple[np.ndarray, np.ndarray]:
        """Indices in q and v of the joints whose position limits make bounds."""
        return self._iq.copy(), self._iv.copy()

    def at_limit(self, tolerance: float) -> np.ndarray:
        """Velocity indices of the joints within ``tolerance`` of a (shrunk) limit [rad or m].

        Raises:
            InvalidInput: ``tolerance`` is not a finite number.
        """
        tolerance = _validate.magnitude(tolerance, "tolerance")
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

    def _model_limits(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The model's velocity and position limits: live views of its memory.

        Made once per model (reading them from Pinocchio makes new views each time); a
        view does not keep the model alive, so the model is kept with them.
        """
        model = self._kin.model
        cached = self._limit_views
        if cached[0] is not model:
            views = (model.velocityLimit, model.lowerPositionLimit, model.upperPositionLimit)
            cached = self._limit_views = (model, *views)
        return cached[1], cached[2], cached[3]

    def narrow_box(self, dt: float, lower: np.ndarray, upper: np.ndarray) -> None:
        """Velocity limits, then the position-limit braking bounds (one compiled call)."""
        velocity = self._velocity_limits
        position = self._position_limits and self._iq.size > 0
        if not (velocity or position):
            return
        vmax, q_lower, q_upper = self._model_limits()
        joint_box(
            self._kin.q,
            vmax,
            (velocity, position),
            (self._iq, self._iv, q_lower, q_upper, self._margins),
            self._robot.acceleration_limits,
            dt,
            self._options,
            self._state,
            lower,
            upper,
        )
