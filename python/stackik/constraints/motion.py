"""Joint motion limits (velocity, acceleration, jerk) as the joint velocity box.

A joint-level filter that limits velocity ``V``, acceleration ``A`` and jerk ``J``
(:class:`stackik.control.JointMotionLimiter`) follows a velocity setpoint ``w`` from its
commanded velocity ``v`` and acceleration ``a`` along a jerk-limited profile. Within a
time ``h`` it can change its velocity by at most

    r(a, h) = a h + J h^2 / 2     (while a + J h <= A; beyond, the acceleration stays at A)

upward, and ``r(-a, h)`` downward. :class:`JointMotionConstraint` narrows the solver's
joint velocity box to ``[v - r(-a, h), v + r(a, h)]`` within ``+-V``, with ``h`` its
``horizon``, and, for joints with position limits, to a speed from which the
jerk-limited braking profile still stops inside them after one more step
(``w (dt + delay) + D(w) <= margin``, ``D`` the braking distance of
:mod:`stackik.constraints._motion_kernel`). When the solver's other box bounds (joint
limits, floating-base bounds) leave nothing reachable, the box becomes the reachable
velocity nearest to them: no motion can do better.

The horizon trades two things. One step (``h = dt``) keeps the setpoint closest to the
commanded velocity, but a filter that must arrive at rest in acceleration then only
decelerates at a third of ``A`` toward a setpoint always one step away; a few times
``A / J`` (the default 20 ms) lets it brake and accelerate at its limits while the
setpoint still leads the command by at most ``A h``.

The state comes from the filter each step (:meth:`JointMotionConstraint.set_state`).
The module also holds the braking helpers the filter uses (:func:`braking_extent`,
:func:`braking_stops`, :func:`guard_position_limits`, :func:`brake_all_joints`).
"""

from __future__ import annotations

import numpy as np

from .. import _validate
from .._jit import register_warmup
from ..errors import InvalidInput, ShapeError
from ..model import Kinematics, RobotModel
from ..model.joints import scalar_limited
from ._motion_kernel import (
    brake_all,
    brake_extents,
    brake_stops,
    brake_stops_together,
    cruise_speed,
    guard_limits,
    motion_box,
)
from .base import Constraint, register_constraint

__all__ = [
    "JointMotionConstraint",
    "brake_all_joints",
    "braking_extent",
    "braking_speed",
    "braking_stops",
    "braking_stops_together",
    "guard_position_limits",
]


def _limit_vector(value: object, n: int, what: str) -> np.ndarray:
    """A per-joint limit: a scalar for every joint or a vector of size ``n``, each > 0."""
    if np.ndim(value) == 0:  # type: ignore[arg-type]
        v = _validate.positive_float(value, what)
        return np.full(n, v)
    arr = _validate.vector(value, n, what)
    bad = np.flatnonzero(~(arr > 0) | (arr > _validate.MAX_MAGNITUDE))
    if bad.size:
        k = int(bad[0])
        raise InvalidInput(
            f"{what}[{k}] = {arr[k]!r} must be > 0 and <= {_validate.MAX_MAGNITUDE:g}",
            what=what,
            value=float(arr[k]),
        )
    return arr.copy()


def braking_extent(
    position: object,
    velocity: object,
    acceleration: object,
    max_acceleration: object,
    max_jerk: object,
) -> tuple[np.ndarray, np.ndarray]:
    """Positions covered while braking to rest with limited acceleration and jerk.

    Args:
        position: Joint positions (size n) [rad or m].
        velocity: Joint velocities (size n) [rad/s or m/s].
        acceleration: Joint accelerations (size n) [rad/s^2 or m/s^2].
        max_acceleration: Acceleration limits (size n or a scalar, > 0) [rad/s^2 or m/s^2].
        max_jerk: Jerk limits (size n or a scalar, > 0) [rad/s^3 or m/s^3].

    Returns:
        ``(lowest, highest)`` position of each joint along its time-optimal braking
        profile [rad or m].

    Raises:
        ShapeError, NonFiniteInput, InvalidInput: Bad arrays or limits.
    """
    p = _validate.as_floats(position, "position", ("n",)).reshape(-1)
    n = p.size
    p = _validate.vector(p, n, "position")
    v = _validate.vector(velocity, n, "velocity")
    a = _validate.vector(acceleration, n, "acceleration")
    A = _limit_vector(max_acceleration, n, "max_acceleration")
    J = _limit_vector(max_jerk, n, "max_jerk")
    lo, hi = np.empty(n), np.empty(n)
    brake_extents(p, v, a, A, J, lo, hi)
    return lo, hi


def braking_speed(margin: float, max_acceleration: float, max_jerk: float, dt: float) -> float:
    """Largest speed that can cruise one more step and still brake within ``margin``.

    Args:
        margin: Distance to the position limit [rad or m] (negative beyond it).
        max_acceleration: Acceleration limit (> 0) [rad/s^2 or m/s^2].
        max_jerk: Jerk limit (> 0) [rad/s^3 or m/s^3].
        dt: Step [s] (> 0).

    Returns:
        The speed [rad/s or m/s] (``margin / dt`` when ``margin < 0``: the way back).

    Raises:
        InvalidInput: A limit or ``dt`` not positive, a NaN margin.
    """
    m = _validate.real(margin, "margin")
    if not np.isfinite(m):
        raise InvalidInput(f"margin must be finite, got {margin!r}", what="margin", value=margin)
    A = _validate.positive_float(max_acceleration, "max_acceleration")
    J = _validate.positive_float(max_jerk, "max_jerk")
    return float(cruise_speed(m, A, J, _validate.positive_float(dt, "dt")))


@register_constraint
class JointMotionConstraint(Constraint):
    """The joint velocity box a velocity/acceleration/jerk-limited filter can follow.

    Args:
        name: Constraint name.
        kinematics: Kinematics cache read (a solver's), or a robot (its own cache).
        max_velocity: Velocity limits (size nv or a scalar, > 0) [rad/s or m/s].
        max_acceleration: Acceleration limits (size nv or a scalar, > 0) [rad/s^2 or m/s^2].
        max_jerk: Jerk limits (size nv or a scalar, > 0) [rad/s^3 or m/s^3].
        lower: Position lower limits per velocity coordinate (size nv) [rad or m];
            ``-inf`` where none. Default: the robot's limits of its revolute and
            prismatic joints.
        upper: Position upper limits per velocity coordinate (size nv), as ``lower``.
        horizon: Time within which the setpoint must be reachable [s] (at least one step
            is used).
        delay: Time the filter takes to react to a new setpoint [s] (e.g. a smoothing
            stage before it): the position-limit bound lets a joint cruise that much
            longer before it must brake.

    Attributes:
        horizon: As the argument.
        delay: As the argument.
        cruise_lower: The last step's position-limit bounds alone (size nv), the lowest
            velocity from which each joint can still brake above its lower limit
            [rad/s or m/s] (``-inf`` without one).
        cruise_upper: As ``cruise_lower``, for the upper limits.
        velocity: The filter's commanded velocity (size nv) [rad/s or m/s].
        acceleration: Its commanded acceleration (size nv) [rad/s^2 or m/s^2].

    The filter's state starts at rest; :meth:`set_state` updates it every step.

    Raises:
        InvalidInput: Limits not > 0 or of the wrong size; position limits on a
            coordinate without a scalar position (continuous joints, floating bases).
    """

    family = "joint_motion"
    order = 90  # after every other box bound: it resolves their conflicts with the motion
    is_limit = True

    def __init__(
        self,
        name: str,
        kinematics: Kinematics | RobotModel,
        max_velocity: object,
        max_acceleration: object,
        max_jerk: object,
        lower: object | None = None,
        upper: object | None = None,
        horizon: float = 0.02,
        delay: float = 0.0,
    ) -> None:
        super().__init__(name, kinematics)
        nv = self._robot.nv
        self.max_velocity = _limit_vector(max_velocity, nv, "max_velocity")
        self.max_acceleration = _limit_vector(max_acceleration, nv, "max_acceleration")
        self.max_jerk = _limit_vector(max_jerk, nv, "max_jerk")
        self._iq, self._iv = scalar_limited(self._robot.joint_infos)
        if lower is None and upper is None:
            model = self._kin.model
            lower = np.full(nv, -np.inf)
            upper = np.full(nv, np.inf)
            lower[self._iv] = model.lowerPositionLimit[self._iq]
            upper[self._iv] = model.upperPositionLimit[self._iq]
        elif lower is None or upper is None:
            raise InvalidInput("give both lower and upper position limits, or neither")
        self.lower, self.upper = _validate.bounds(lower, upper, nv, "position limits")
        scalar = np.zeros(nv, dtype=bool)
        scalar[self._iv] = True
        bad = np.flatnonzero(~scalar & (np.isfinite(self.lower) | np.isfinite(self.upper)))
        if bad.size:
            raise InvalidInput(
                f"velocity coordinates {bad.tolist()} have no scalar position: their "
                "position limits must be infinite",
                what="lower",
            )
        self.horizon = _validate.positive_float(horizon, "horizon")
        self.delay = _validate.positive_float(delay, "delay", allow_zero=True)
        self.cruise_lower = np.full(nv, -np.inf)
        self.cruise_upper = np.full(nv, np.inf)
        self.velocity = np.zeros(nv)
        self.acceleration = np.zeros(nv)
        self._position = np.zeros(nv)
        self._given = False

    def set_state(
        self, velocity: np.ndarray, acceleration: np.ndarray, position: np.ndarray | None = None
    ) -> None:
        """The filter's commanded state, every step (arrays of size nv).

        The hot path of a control loop: only the shapes are checked (the values come
        from the loop's own limiter).

        Args:
            velocity: Commanded velocity [rad/s or m/s].
            acceleration: Commanded acceleration [rad/s^2 or m/s^2].
            position: Commanded positions [rad or m]; None: read them from the kinematics
                cache at each step (when the solver runs at the commanded configuration).

        Raises:
            ShapeError: An array that is not of size nv.
        """
        shape = self.velocity.shape
        given = (velocity, acceleration) if position is None else (velocity, acceleration, position)
        for arr, what in zip(given, ("velocity", "acceleration", "position"), strict=False):
            if getattr(arr, "shape", None) != shape:
                raise ShapeError(f"joint motion state: {what}", shape, _validate.shape_of(arr))
        self.velocity[:] = velocity
        self.acceleration[:] = acceleration
        self._given = position is not None
        if position is not None:
            self._position[:] = position

    def reset(self) -> None:
        """Back to rest, positions read from the kinematics cache."""
        self.velocity[:] = 0.0
        self.acceleration[:] = 0.0
        self._given = False

    def narrow_box(self, dt: float, lower: np.ndarray, upper: np.ndarray) -> None:
        """Velocities reachable within the horizon, braking-safe near the position limits."""
        pos = self._position
        if not self._given:
            pos[self._iv] = self._kin.q[self._iq]
        motion_box(
            pos,
            self.velocity,
            self.acceleration,
            self.max_velocity,
            self.max_acceleration,
            self.max_jerk,
            self.lower,
            self.upper,
            dt + self.delay,
            max(self.horizon, dt),
            lower,
            upper,
            self.cruise_lower,
            self.cruise_upper,
        )


def guard_position_limits(
    previous: tuple[np.ndarray, np.ndarray, np.ndarray],
    proposed: tuple[np.ndarray, np.ndarray, np.ndarray],
    lower: np.ndarray,
    upper: np.ndarray,
    max_acceleration: np.ndarray,
    max_jerk: np.ndarray,
    dt: float,
    braked: np.ndarray,
) -> int:
    """Make every joint of a proposed step able to stop inside its position limits.

    A joint whose braking profile from the proposed state ``(p, v, a)`` would leave
    ``[lower, upper]`` takes one step of ``dt`` [s] of its braking profile from the
    previous state instead (written into ``proposed``; ``braked[j]`` set). Arrays of
    size n, trusted (the hot path of a joint-level filter).

    Returns:
        How many joints braked.
    """
    p0, v0, a0 = previous
    p1, v1, a1 = proposed
    return int(
        guard_limits(p0, v0, a0, p1, v1, a1, lower, upper, max_acceleration, max_jerk, dt, braked)
    )


def brake_all_joints(
    p: np.ndarray, v: np.ndarray, a: np.ndarray, max_acceleration: np.ndarray,
    max_jerk: np.ndarray, dt: float,
) -> int:  # fmt: skip
    """One step of ``dt`` [s] of every joint's braking profile, in place (trusted arrays).

    Returns:
        How many joints still move afterwards.
    """
    return int(brake_all(p, v, a, max_acceleration, max_jerk, dt))


def braking_stops(
    p: np.ndarray, v: np.ndarray, a: np.ndarray, max_acceleration: np.ndarray,
    max_jerk: np.ndarray, out: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """Where each joint comes to rest along its braking profile, into ``out`` (trusted arrays).

    Returns:
        ``out`` [rad or m].
    """
    brake_stops(p, v, a, max_acceleration, max_jerk, out)
    return out


def braking_stops_together(
    p: np.ndarray, v: np.ndarray, a: np.ndarray, max_acceleration: np.ndarray,
    max_jerk: np.ndarray, lower: np.ndarray, upper: np.ndarray, out: np.ndarray,
) -> float:  # fmt: skip
    """Where the joints come to rest braking together (phase-synchronized), into ``out``.

    Every joint's braking profile is stretched to the slowest joint's duration, so the
    motion keeps its direction (a straight line in joint space, to first order the
    tangent of the path; a foot held still by a task stays still). Positions are
    clipped into ``[lower, upper]``. Trusted arrays (the hot path).

    Returns:
        The braking time [s].
    """
    return float(brake_stops_together(p, v, a, max_acceleration, max_jerk, lower, upper, out))


@register_warmup
def _warm_up_motion_kernels() -> None:
    """Run every joint-motion kernel once on two joints (the argument types real calls use)."""
    n = 2
    p, v, a = np.array([0.1, -0.2]), np.array([0.5, -0.3]), np.zeros(n)
    amax, jmax = np.full(n, 5.0), np.full(n, 50.0)
    lo, hi = np.full(n, -1.0), np.full(n, 1.0)
    braking_extent(p, v, a, amax, jmax)
    guard_position_limits((p, v, a), (p.copy(), v.copy(), a.copy()), lo, hi, amax, jmax, 0.01,
                          np.zeros(n, dtype=bool))  # fmt: skip
    brake_all_joints(p.copy(), v.copy(), a.copy(), amax, jmax, 0.01)
    braking_stops(p, v, a, amax, jmax, np.empty(n))
    braking_stops_together(p, v, a, amax, jmax, lo, hi, np.empty(n))
    box_lo, box_hi, cruise_lo, cruise_hi = (np.empty(n) for _ in range(4))
    motion_box(p, v, a, np.full(n, 1.0), amax, jmax, lo, hi, 0.01, 0.01,
               box_lo, box_hi, cruise_lo, cruise_hi)  # fmt: skip
