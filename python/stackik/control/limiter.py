"""JointMotionLimiter: per-joint online trajectory generation with jerk limits (ruckig).

Every tick of ``dt`` the limiter moves each joint from its commanded state (position,
velocity, acceleration) toward a target along ruckig's time-optimal profile under the
joint's velocity, acceleration and jerk limits, and returns the state reached after
``dt``. The commanded stream is therefore the sampling of one continuous trajectory
whose velocity, acceleration and jerk stay within the limits; its finite differences
(what a robot controller such as libfranka checks at 1 ms) are weighted averages of
those and stay within the limits too.

Position limits: ruckig's open-source version does not plan around them, so after
every tick a guard checks, per joint, that the jerk-limited braking profile from the
new state stays inside the limits (:mod:`stackik.constraints._motion_kernel`). A joint
that fails follows its braking profile from the previous state instead; when the
previous state could stop inside, so can the new one. By induction every commanded
position stays inside the limits, from any start at rest inside them.

Cyclic joints (continuous joints and revolute joints without limits) move the shortest
way to the target, as seed 003's cyclic joints do.

:func:`joint_callback` speaks seed 003's joint-callback keys for one joint.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from ruckig import (
    ControlInterface,
    InputParameter,
    OutputParameter,
    Result,
    Ruckig,
    RuckigError,
    Synchronization,
)

from .. import _validate
from ..constraints.motion import (
    brake_all_joints,
    braking_extent,
    braking_stops_together,
    guard_position_limits,
)
from ..errors import InvalidBounds, InvalidInput, NotWithinLimits
from ..model import JointKind, RobotModel, check_robot
from ..results import SolverStatus
from ._loop_kernel import braking_bound
from .limits import MotionLimits, coordinate_names

__all__ = ["JointCommand", "JointMotionLimiter", "joint_callback"]

_TWO_PI = 2.0 * math.pi
_NO_JOINTS: tuple[int, ...] = ()


@dataclass
class JointCommand:
    """One tick's command: the state every joint is at after the tick.

    Attributes:
        position: Joint positions (size nv) [rad or m]; a continuous joint's angle is
            unwrapped (it keeps counting turns); a multi-DoF joint's entries integrate
            its velocity since :meth:`JointMotionLimiter.reset`.
        velocity: Joint velocities (size nv) [rad/s or m/s].
        acceleration: Joint accelerations (size nv) [rad/s^2 or m/s^2].
        configuration: The robot configuration (size nq) when the robot has only
            revolute, continuous and prismatic joints (or when a
            :class:`~stackik.control.ControlLoop` made the command), else None.
        status: SUCCESS, or INVALID_INPUT / NUMERICAL_ERROR when the tick braked instead
            of following the target (see ``message``).
        message: What went wrong, if anything.
        braked_joints: Joints (velocity indices) the position-limit guard made brake
            this tick.
    """

    position: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    configuration: np.ndarray | None = None
    status: SolverStatus = SolverStatus.SUCCESS
    message: str = ""
    braked_joints: tuple[int, ...] = field(default=_NO_JOINTS)


def clip_into(x: np.ndarray, lower: np.ndarray, upper: np.ndarray, out: np.ndarray) -> None:
    """``out = min(max(x, lower), upper)``: :func:`numpy.clip` without its Python wrapper.

    The same values as ``np.clip(x, lower, upper, out=out)`` (NaN stays NaN); the two
    ufuncs cost a fraction of ``np.clip``'s dispatch on the loop's hot path.
    """
    np.maximum(x, lower, out=out)
    np.minimum(out, upper, out=out)


def _wrap(x: np.ndarray) -> np.ndarray:
    """Angles into ``[-pi, pi)`` [rad]."""
    return (x + math.pi) % _TWO_PI - math.pi


class MotionCore:
    """The trajectory generator of ``n`` coordinates: ruckig, the guard, cyclic targets.

    Args:
        n: Number of coordinates.
        dt: Tick [s].
        limits: ``(max_velocity, max_acceleration, max_jerk)``, each of size n, > 0, finite.
        lower: Position lower limits (size n), ``-inf`` where none [unit].
        upper: Position upper limits (size n), ``inf`` where none [unit].
        cyclic: Which coordinates are angles without limits (shortest way).
        synchronize: Let all coordinates reach a position target together (ruckig's
            time synchronization); otherwise each moves as fast as it can.

    Hot-path methods trust their (already checked) arguments.
    """

    def __init__(
        self,
        n: int,
        dt: float,
        limits: tuple[np.ndarray, np.ndarray, np.ndarray],
        lower: np.ndarray,
        upper: np.ndarray,
        cyclic: np.ndarray,
        synchronize: bool = False,
    ) -> None:
        self.n = n
        self.dt = dt
        self.vmax, self.amax, self.jmax = (np.array(x, dtype=float) for x in limits)
        self._neg_vmax = -self.vmax
        self.lower = np.array(lower, dtype=float)
        self.upper = np.array(upper, dtype=float)
        self.cyclic = np.flatnonzero(cyclic)
        self.p = np.zeros(n)
        self.v = np.zeros(n)
        self.a = np.zeros(n)
        self._p0 = np.zeros(n)
        self._v0 = np.zeros(n)
        self._a0 = np.zeros(n)
        self._braked = np.zeros(n, dtype=np.bool_)
        self.target = np.zeros(n)
        self._tvel = np.zeros(n)
        self._otg = Ruckig(n, dt)
        self._inp = InputParameter(n)
        self._out = OutputParameter(n)
        self._inp.synchronization = Synchronization.Time if synchronize else Synchronization.No
        # A second generator for stops: every joint brakes together (phase synchronized).
        self._stop_otg = Ruckig(n, dt)
        self._stop_inp = InputParameter(n)
        self._stop_out = OutputParameter(n)
        self._stop_inp.control_interface = ControlInterface.Velocity
        self._stop_inp.synchronization = Synchronization.Phase
        self._stop_inp.target_velocity = [0.0] * n
        self._stop_inp.target_acceleration = [0.0] * n
        self.set_limits(self.vmax, self.amax, self.jmax)
        self.last_braked = 0

    def set_limits(self, vmax: np.ndarray, amax: np.ndarray, jmax: np.ndarray) -> None:
        """New limits (arrays of size n, > 0 and finite)."""
        self.vmax[:] = vmax
        np.negative(self.vmax, out=self._neg_vmax)
        self.amax[:] = amax
        self.jmax[:] = jmax
        for inp in (self._inp, self._stop_inp):
            inp.max_velocity = self.vmax.tolist()
            inp.max_acceleration = self.amax.tolist()
            inp.max_jerk = self.jmax.tolist()

    def set_state(self, p: np.ndarray, v: np.ndarray, a: np.ndarray | float) -> None:
        """Impose the current state."""
        self.p[:] = p
        self.v[:] = v
        self.a[:] = a

    def track(self, target_p: np.ndarray | None, target_v: np.ndarray | None) -> str:
        """One tick toward a position (with a final velocity) or, without one, a velocity.

        Returns:
            "" on success, else what went wrong (the tick then braked every joint).
        """
        inp, tv = self._inp, self._tvel
        if target_v is None:
            tv[:] = 0.0
        else:
            clip_into(target_v, self._neg_vmax, self.vmax, tv)
        if target_p is None:
            inp.control_interface = ControlInterface.Velocity
        else:
            tp = self.target
            tp[:] = target_p
            c = self.cyclic
            if c.size:
                tp[c] = self.p[c] + _wrap(tp[c] - self.p[c])
            clipped = (tp < self.lower) | (tp > self.upper)
            if clipped.any():  # a target on a limit is reached at rest
                clip_into(tp, self.lower, self.upper, tp)
                tv[clipped] = 0.0
            inp.control_interface = ControlInterface.Position
            inp.target_position = tp.tolist()
        inp.target_velocity = tv.tolist()
        return self._advance(self._otg, inp, self._out)

    def stop_together(self) -> str:
        """One tick of every joint braking to rest together (phase synchronized).

        The motion keeps its direction while it slows down (ruckig's phase
        synchronization; time synchronization where that is impossible), and the guard
        still keeps every joint inside its position limits.

        Returns:
            "" on success, else what went wrong (the tick then braked joint by joint).
        """
        self._tvel[:] = 0.0
        return self._advance(self._stop_otg, self._stop_inp, self._stop_out)

    def _advance(self, otg: Ruckig, inp: InputParameter, out: OutputParameter) -> str:
        self._p0[:] = self.p
        self._v0[:] = self.v
        self._a0[:] = self.a
        inp.current_position = self.p.tolist()
        inp.current_velocity = self.v.tolist()
        inp.current_acceleration = self.a.tolist()
        try:
            result = otg.update(inp, out)
        except RuckigError as exc:  # refused input (e.g. a state beyond the limits)
            return self._fallback(f"ruckig refused the step ({str(exc).strip()}); braking")
        if result not in (Result.Working, Result.Finished):
            return self._fallback(f"ruckig failed ({result.name}); braking")
        self.p[:] = out.new_position
        self.v[:] = out.new_velocity
        self.a[:] = out.new_acceleration
        if result == Result.Finished:  # arrived within the tick: exactly, not to rounding
            self._arrive(inp is self._inp and inp.control_interface == ControlInterface.Position)
        self.last_braked = guard_position_limits(
            (self._p0, self._v0, self._a0),
            (self.p, self.v, self.a),
            self.lower,
            self.upper,
            self.amax,
            self.jmax,
            self.dt,
            self._braked,
        )
        return ""

    def _arrive(self, position_control: bool) -> None:
        """Snap a finished profile onto its target (ruckig leaves ~1e-16 residues)."""
        self.a[:] = 0.0
        if position_control:
            rest = self._tvel == 0.0  # the others went on past the target at its velocity
            self.p[rest] = self.target[rest]
            self.v[rest] = 0.0
        else:
            self.v[:] = self._tvel

    def _fallback(self, message: str) -> str:
        self.p[:] = self._p0
        self.v[:] = self._v0
        self.a[:] = self._a0
        self.brake()
        return message

    def brake(self) -> int:
        """One tick of every coordinate's braking profile; return how many still move."""
        self.last_braked = 0
        self._braked[:] = False
        return brake_all_joints(self.p, self.v, self.a, self.amax, self.jmax, self.dt)

    def braked_indices(self) -> tuple[int, ...]:
        """Coordinates the guard made brake in the last tick."""
        if not self.last_braked:
            return _NO_JOINTS
        return tuple(int(i) for i in np.flatnonzero(self._braked))


def _joint_limit(
    given: object, default: np.ndarray, names: list[str], what: str, hint: str
) -> np.ndarray:
    """A per-coordinate limit: given (scalar or vector), else the default; finite, > 0."""
    n = len(names)
    if given is None:
        arr = np.array(default, dtype=float)
    elif np.ndim(given) == 0:  # type: ignore[arg-type]
        arr = np.full(n, _validate.positive_float(given, what))
    else:
        arr = _validate.as_floats(given, what, (n,))
        if arr.shape != (n,):
            raise InvalidInput(f"{what}: expected {n} values, got shape {arr.shape}", what=what)
    missing = [names[i] for i in np.flatnonzero(~np.isfinite(arr))]
    if missing:
        raise InvalidInput(
            f"no {what.replace('max_', '')} limit for joints {missing}: {hint}",
            what=what,
            value=missing,
        )
    bad = np.flatnonzero(~(arr > 0) | (arr > _validate.MAX_MAGNITUDE))
    if bad.size:
        k = int(bad[0])
        raise InvalidInput(
            f"{what} of joint {names[k]!r} must be > 0 and <= {_validate.MAX_MAGNITUDE:g}, "
            f"got {arr[k]!r}",
            what=what,
            value=float(arr[k]),
        )
    return arr


_HINT = (
    "pass {arg}= (one value or one per joint), or load a motion-limits profile "
    "(stackik.load_motion_limits) and use JointMotionLimiter.from_limits"
)


class JointMotionLimiter:
    """Velocity-, acceleration- and jerk-limited joint motion toward targets, every tick.

    Args:
        robot: The robot (its joints, position limits and default limits).
        dt: Tick [s] (> 0).
        max_velocity: Velocity limits [rad/s or m/s]: one value or one per velocity
            coordinate (nv). Default: the robot's.
        max_acceleration: Acceleration limits [rad/s^2 or m/s^2]. Default: the robot's
            (a robot loaded from a URDF has 10 for every joint until set, e.g. by
            :func:`~stackik.control.load_motion_limits`).
        max_jerk: Jerk limits [rad/s^3 or m/s^3]. The robot has none: give them, or use
            :meth:`from_limits`.
        synchronize: Position targets: let every joint arrive together (ruckig's time
            synchronization) instead of each as fast as it can.

    Raises:
        InvalidInput: A limit missing (the joints are named), not > 0, or of the wrong
            size; a bad ``dt``.

    The limiter starts at rest at the robot's current configuration clipped into the
    position limits; :meth:`reset` sets the real start. The position limits are read
    when the limiter is made (a later :meth:`RobotModel.set_joint_limits
    <stackik.RobotModel.set_joint_limits>` needs a new limiter).
    """

    def __init__(
        self,
        robot: RobotModel,
        dt: float,
        max_velocity: object | None = None,
        max_acceleration: object | None = None,
        max_jerk: object | None = None,
        *,
        synchronize: bool = False,
    ) -> None:
        self._robot = check_robot(robot)
        self._dt = _validate.positive_float(dt, "dt")
        names = coordinate_names(robot)
        self._names = names
        vmax = _joint_limit(
            max_velocity, robot.get_velocity_limits(), names, "max_velocity",
            _HINT.format(arg="max_velocity"),
        )  # fmt: skip
        amax = _joint_limit(
            max_acceleration, robot.get_acceleration_limits(), names, "max_acceleration",
            _HINT.format(arg="max_acceleration"),
        )  # fmt: skip
        jmax = _joint_limit(
            max_jerk, np.full(robot.nv, np.inf), names, "max_jerk", _HINT.format(arg="max_jerk")
        )
        self._layout(robot)
        self._core = MotionCore(
            robot.nv, self._dt, (vmax, amax, jmax), self._lower, self._upper, self._cyclic,
            _validate.flag(synchronize, "synchronize"),
        )  # fmt: skip
        # At rest at the robot's current configuration, clipped into the limits (a
        # neutral configuration may be outside them); reset() sets the real start.
        start = self._positions_of(robot.get_current_configuration(), np.zeros(robot.nv))
        self._core.set_state(np.clip(start, self._lower, self._upper), np.zeros(robot.nv), 0.0)

    @classmethod
    def from_limits(
        cls, robot: RobotModel, dt: float, limits: MotionLimits, *, synchronize: bool = False
    ) -> JointMotionLimiter:
        """A limiter with the velocity, acceleration and jerk limits of a profile.

        Args:
            robot: The robot.
            dt: Tick [s].
            limits: From :func:`~stackik.control.load_motion_limits` or
                :meth:`MotionLimits.from_file`.
            synchronize: As in the constructor.

        Raises:
            InvalidInput: ``limits`` is not a :class:`MotionLimits`.
        """
        _validate.instance(limits, MotionLimits, "limits", "MotionLimits (load_motion_limits)")
        return cls(
            robot, dt, limits.velocity, limits.acceleration, limits.jerk, synchronize=synchronize
        )

    def _layout(self, robot: RobotModel) -> None:
        """Index arrays of the joint kinds; position limits and cyclic flags per coordinate."""
        nv = robot.nv
        lower_q, upper_q = robot.get_joint_limits()
        self._lower = np.full(nv, -np.inf)
        self._upper = np.full(nv, np.inf)
        self._cyclic = np.zeros(nv, dtype=bool)
        single_q, single_v, cont_q, cont_v = [], [], [], []
        self._other: list[str] = []
        for info in robot.joint_infos:
            if info.nv == 0:
                continue
            if info.kind in (JointKind.REVOLUTE, JointKind.PRISMATIC) and info.nq == 1:
                single_q.append(info.idx_q)
                single_v.append(info.idx_v)
                lo, hi = float(lower_q[info.idx_q]), float(upper_q[info.idx_q])
                self._lower[info.idx_v], self._upper[info.idx_v] = lo, hi
                no_limits = not (math.isfinite(lo) or math.isfinite(hi))
                self._cyclic[info.idx_v] = info.kind == JointKind.REVOLUTE and no_limits
            elif info.kind == JointKind.CONTINUOUS:
                cont_q.append(info.idx_q)
                cont_v.append(info.idx_v)
                self._cyclic[info.idx_v] = True
            else:
                self._other.append(info.name)
        self._single_q = np.array(single_q, dtype=np.int64)
        self._single_v = np.array(single_v, dtype=np.int64)
        self._cont_q = np.array(cont_q, dtype=np.int64)
        self._cont_v = np.array(cont_v, dtype=np.int64)

    # -- properties ------------------------------------------------------------------------
    @property
    def robot(self) -> RobotModel:
        """The robot."""
        return self._robot

    @property
    def dt(self) -> float:
        """Tick [s]."""
        return self._dt

    @property
    def joint_names(self) -> list[str]:
        """Name of each velocity coordinate (``name[k]`` for multi-DoF joints)."""
        return list(self._names)

    @property
    def max_velocity(self) -> np.ndarray:
        """Velocity limits (size nv) [rad/s or m/s] (a copy)."""
        return self._core.vmax.copy()

    @property
    def max_acceleration(self) -> np.ndarray:
        """Acceleration limits (size nv) [rad/s^2 or m/s^2] (a copy)."""
        return self._core.amax.copy()

    @property
    def max_jerk(self) -> np.ndarray:
        """Jerk limits (size nv) [rad/s^3 or m/s^3] (a copy)."""
        return self._core.jmax.copy()

    @property
    def lower(self) -> np.ndarray:
        """Position lower limits per velocity coordinate (``-inf`` where none) [rad or m]."""
        return self._lower.copy()

    @property
    def upper(self) -> np.ndarray:
        """Position upper limits per velocity coordinate (``inf`` where none) [rad or m]."""
        return self._upper.copy()

    @property
    def cyclic(self) -> np.ndarray:
        """Which coordinates are angles without limits (moved the shortest way)."""
        return self._cyclic.copy()

    @property
    def position(self) -> np.ndarray:
        """Commanded positions (size nv) [rad or m] (a copy)."""
        return self._core.p.copy()

    @property
    def velocity(self) -> np.ndarray:
        """Commanded velocities (size nv) [rad/s or m/s] (a copy)."""
        return self._core.v.copy()

    @property
    def acceleration(self) -> np.ndarray:
        """Commanded accelerations (size nv) [rad/s^2 or m/s^2] (a copy)."""
        return self._core.a.copy()

    @property
    def at_rest(self) -> bool:
        """Whether every joint has zero velocity and acceleration."""
        return not (self._core.v.any() or self._core.a.any())

    def braking_time(self, velocity: np.ndarray) -> float:
        """A bound on the time the joints need to brake to rest from ``velocity`` [s].

        The slowest joint's ``|v| / a_max + a_max / j_max`` (the jerk-limited ramp
        to full deceleration and back); 0 when nothing moves.

        Args:
            velocity: Joint velocity (size nv) [rad/s or m/s]; a float64 array of that
                size is taken as it is (the loop's state), anything else is checked.

        Raises:
            ShapeError, NonFiniteInput, InvalidInput: ``velocity`` is not a vector of nv
                finite numbers (checked unless it is a float64 array of size nv).
        """
        core = self._core
        if not _validate.is_float_vector(velocity, core.n):  # (the compiled bound indexes
            velocity = _validate.vector(velocity, core.n, "velocity")  # by the limits' size)
        return float(braking_bound(velocity, core.amax, core.jmax))

    def stop_positions(self) -> np.ndarray:
        """Where the joints would come to rest if they braked now [rad or m] (size nv).

        Where :meth:`brake` leads: every joint's time-optimal braking profile under its
        acceleration and jerk limits, stretched to the slowest joint's duration so that
        the motion keeps its direction (within the position limits).
        """
        core = self._core
        out = np.empty(core.n)
        braking_stops_together(
            core.p, core.v, core.a, core.amax, core.jmax, core.lower, core.upper, out
        )
        return out

    @property
    def has_configuration(self) -> bool:
        """Whether positions map to a configuration (only revolute, continuous, prismatic)."""
        return not self._other

    def state_views(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Read-only views of the commanded position, velocity and acceleration.

        For a loop that reads the state every tick without copies; valid until the next
        :meth:`step`, :meth:`brake` or :meth:`reset`.
        """
        core, view = self._core, _validate.read_only_view
        return view(core.p), view(core.v), view(core.a)

    # -- coordinates ---------------------------------------------------------------------------
    def to_positions(self, q: object, what: str = "q") -> np.ndarray:
        """Joint positions (size nv) of a configuration (size nq) [rad or m].

        Continuous joints give the angle nearest the commanded one. Only for robots
        whose joints are revolute, continuous or prismatic (else give positions).

        Raises:
            ShapeError, NonFiniteInput, InvalidInput: Bad ``q``, or a multi-DoF joint.
        """
        q = self._robot.check_configuration(q, what)
        if self._other:
            raise InvalidInput(
                f"{what}: joints {self._other} have no scalar position; give positions "
                f"(size nv = {self._robot.nv}) instead of a configuration",
                what=what,
            )
        return self._positions_of(q, self._core.p)

    def _positions_of(self, q: np.ndarray, near: np.ndarray) -> np.ndarray:
        pos = np.zeros(self._robot.nv)
        pos[self._single_v] = q[self._single_q]
        if self._cont_v.size:
            angle = np.arctan2(q[self._cont_q + 1], q[self._cont_q])
            ref = near[self._cont_v]
            pos[self._cont_v] = ref + _wrap(angle - ref)
        return pos

    def to_configuration(self, position: object) -> np.ndarray:
        """The configuration (size nq) of joint positions (size nv) [rad or m].

        Raises:
            ShapeError, NonFiniteInput: Bad ``position``.
            InvalidInput: The robot has multi-DoF joints (no configuration from positions).
        """
        p = _validate.vector(position, self._robot.nv, "position")
        if self._other:
            raise InvalidInput(
                f"joints {self._other} have no scalar position: no configuration from positions"
            )
        return self._configuration_of(p)

    def _configuration_of(self, p: np.ndarray) -> np.ndarray:
        q = np.zeros(self._robot.nq)
        q[self._single_q] = p[self._single_v]
        if self._cont_q.size:
            angle = p[self._cont_v]
            q[self._cont_q] = np.cos(angle)
            q[self._cont_q + 1] = np.sin(angle)
        return q

    def _target_positions(self, target: object) -> np.ndarray:
        """Target positions from positions (nv) or, for scalar joints, a configuration (nq)."""
        arr = _validate.as_floats(target, "target_position", (self._robot.nv,))
        nv, nq = self._robot.nv, self._robot.nq
        if arr.shape == (nv,):
            return _validate.bounded_vector(arr, nv, _validate.MAX_MAGNITUDE, "target_position")
        if arr.shape == (nq,) and not self._other:
            return self._positions_of(
                self._robot.check_configuration(arr, "target_position"), self._core.p
            )
        return _validate.vector(arr, nv, "target_position")  # raises the shape error

    # -- motion ------------------------------------------------------------------------------
    def reset(self, q: object, dq: object | None = None, ddq: object | None = None) -> None:
        """Start from a state.

        Args:
            q: Configuration (size nq), or positions (size nv) [rad or m]. A multi-DoF
                joint's positions start at 0 from a configuration.
            dq: Velocities (size nv) [rad/s or m/s]; default zero.
            ddq: Accelerations (size nv) [rad/s^2 or m/s^2]; default zero.

        Raises:
            ShapeError, NonFiniteInput, InvalidInput: Bad arrays; a velocity or an
                acceleration beyond its limit; a state that cannot stop inside the
                position limits (the joint is named).
            NotWithinLimits: A position outside its limits.
        """
        nv = self._robot.nv
        arr = _validate.as_floats(q, "q", (self._robot.nq,))
        if arr.shape == (nv,) and (self._other or nv != self._robot.nq):
            p = _validate.vector(arr, nv, "q")
        else:
            p = self._positions_of(self._robot.check_configuration(arr, "q"), np.zeros(nv))
        v = np.zeros(nv) if _validate.is_empty(dq) else _validate.vector(dq, nv, "dq")
        a = np.zeros(nv) if _validate.is_empty(ddq) else _validate.vector(ddq, nv, "ddq")
        self._check_state(p, v, a)
        self._core.set_state(p, v, a)

    def _check_state(self, p: np.ndarray, v: np.ndarray, a: np.ndarray) -> None:
        core = self._core
        for k in range(self._robot.nv):
            name = self._names[k]
            if not self._lower[k] <= p[k] <= self._upper[k]:
                raise NotWithinLimits(name, float(p[k]), self._lower[k], self._upper[k])
            if abs(v[k]) > core.vmax[k]:
                raise InvalidInput(
                    f"dq of joint {name!r} is {v[k]:.6g}, beyond its limit {core.vmax[k]:.6g}",
                    what="dq",
                    value=float(v[k]),
                )
            if abs(a[k]) > core.amax[k]:
                raise InvalidInput(
                    f"ddq of joint {name!r} is {a[k]:.6g}, beyond its limit {core.amax[k]:.6g}",
                    what="ddq",
                    value=float(a[k]),
                )
        lo, hi = braking_range(p, v, a, core.amax, core.jmax)
        bad = np.flatnonzero((lo < self._lower) | (hi > self._upper))
        if bad.size:
            k = int(bad[0])
            raise InvalidInput(
                f"joint {self._names[k]!r} cannot stop inside its limits from this state "
                f"(it would reach [{lo[k]:.6g}, {hi[k]:.6g}], limits "
                f"[{self._lower[k]:.6g}, {self._upper[k]:.6g}])",
                what="dq",
                value=float(v[k]),
            )

    def step(
        self, target_position: object | None, target_velocity: object | None = None
    ) -> JointCommand:
        """One tick toward a target.

        Args:
            target_position: Target positions (size nv) [rad or m], or a configuration
                (size nq) for a robot of revolute, continuous and prismatic joints.
                Clipped into the position limits; cyclic joints take the shortest way.
                None: follow ``target_velocity`` (velocity control).
            target_velocity: Velocity [rad/s or m/s] (size nv) to arrive with (default
                zero), or to reach when ``target_position`` is None. Clipped to the
                velocity limits.

        Returns:
            The :class:`JointCommand` after the tick. Never raises: a bad target gives
            status INVALID_INPUT and a braking tick.
        """
        core = self._core
        try:
            tp = None if target_position is None else self._target_positions(target_position)
            tv = (
                None
                if _validate.is_empty(target_velocity)
                else _validate.bounded_vector(
                    target_velocity, self._robot.nv, _validate.MAX_MAGNITUDE, "target_velocity"
                )
            )
        except InvalidInput as exc:
            core.brake()
            return self._command(SolverStatus.INVALID_INPUT, str(exc))
        message = core.track(tp, tv)
        status = SolverStatus.NUMERICAL_ERROR if message else SolverStatus.SUCCESS
        return self._command(status, message)

    def follow_velocity(self, velocity: np.ndarray) -> JointCommand:
        """One tick toward a velocity the caller has already checked (trusted).

        The same tick as ``step(None, velocity)`` without its input checks: for a
        caller whose velocity is finite and of size nv by construction, such as the
        :class:`~stackik.control.ControlLoop` passing its IK's (smoothed) solution (the
        velocity IK never returns a non-finite one). It is still clipped to the velocity
        limits.

        Args:
            velocity: Joint velocity to reach (size nv, finite) [rad/s or m/s].
        """
        message = self._core.track(None, velocity)
        status = SolverStatus.NUMERICAL_ERROR if message else SolverStatus.SUCCESS
        return self._command(status, message)

    def brake(self) -> JointCommand:
        """One tick of braking to rest, every joint together (then holding still).

        The joints slow down together (phase synchronized) so the motion keeps its
        direction: an arm's tool goes on along its path, a foot held still stays still.
        Within the velocity, acceleration, jerk and position limits.
        """
        message = self._core.stop_together()
        status = SolverStatus.NUMERICAL_ERROR if message else SolverStatus.SUCCESS
        return self._command(status, message)

    def _command(self, status: SolverStatus, message: str) -> JointCommand:
        core = self._core
        return JointCommand(
            core.p.copy(),
            core.v.copy(),
            core.a.copy(),
            None if self._other else self._configuration_of(core.p),
            status,
            message,
            core.braked_indices(),
        )

    @staticmethod
    def joint_callback(in_data: Mapping[str, Any]) -> dict[str, Any]:
        """Seed 003's joint callback for one joint: :func:`joint_callback` (same generator)."""
        return joint_callback(in_data)

    def __repr__(self) -> str:
        return f"JointMotionLimiter({self._robot!r}, dt={self._dt})"


def braking_range(
    p: np.ndarray, v: np.ndarray, a: np.ndarray, amax: np.ndarray, jmax: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Lowest and highest positions of each joint's braking profile (trusted arrays)."""
    return braking_extent(p, v, a, amax, jmax)


# -- seed 003: the joint callback --------------------------------------------------------------
class _CallbackJoint:
    """One joint's generator for :func:`joint_callback` (kept between calls)."""

    def __init__(self, dt: float) -> None:
        one = np.ones(1)
        self.core = MotionCore(
            1, dt, (one, one, one), np.full(1, -np.inf), np.full(1, np.inf), np.zeros(1, bool)
        )
        self.last: tuple[float, float] | None = None


_CALLBACK_LOCK = threading.Lock()
_CALLBACK_JOINTS: dict[object, _CallbackJoint] = {}


def _number(in_data: Mapping[str, Any], key: str, default: float | None = None) -> float:
    """A state or target value: a finite real number of magnitude at most 1e6."""
    value = in_data.get(key, default)
    if value is None:
        raise InvalidInput(f"joint callback: missing {key!r}", what=key)
    v = _validate.real(value, f"joint callback: {key!r}")
    if not abs(v) <= _validate.MAX_MAGNITUDE:  # also NaN and inf
        raise InvalidInput(
            f"joint callback: {key!r} = {v!r} must be finite and at most "
            f"{_validate.MAX_MAGNITUDE:g} in magnitude",
            what=key,
            value=value,
        )
    return v


def _limit(in_data: Mapping[str, Any], key: str, default: float) -> float:
    """A position limit: ``+-inf`` (none) or a finite number of magnitude at most 1e6."""
    value = in_data.get(key)
    if value is None:
        return default
    v = _validate.real(value, f"joint callback: {key!r}")
    if math.isinf(v):
        return v
    return _number(in_data, key)


def _callback_input(in_data: object) -> Mapping[str, Any]:
    """The input of :func:`joint_callback`: a mapping with a hashable ``handle``."""
    if not isinstance(in_data, Mapping):
        raise InvalidInput(
            f"joint callback: in_data must be a dict of the simulator's keys, "
            f"got {type(in_data).__name__}",
            what="in_data",
            value=in_data,
        )
    try:
        hash(in_data.get("handle", 0))
    except TypeError:
        raise InvalidInput(
            f"joint callback: 'handle' must be hashable, got {in_data.get('handle')!r}",
            what="handle",
        ) from None
    return in_data


def _position_limits(in_data: Mapping[str, Any], cyclic: bool, pos: float) -> tuple[float, float]:
    """``(lowLimit, highLimit)`` checked: ordered, and the start inside them."""
    if cyclic:
        return -math.inf, math.inf
    lo, hi = _limit(in_data, "lowLimit", -math.inf), _limit(in_data, "highLimit", math.inf)
    if lo > hi:
        raise InvalidBounds("joint callback: lowLimit, highLimit", [0])
    if not lo <= pos <= hi:
        raise NotWithinLimits(f"handle {in_data.get('handle', 0)}", pos, lo, hi)
    return lo, hi


def joint_callback(in_data: Mapping[str, Any]) -> dict[str, Any]:
    """Seed 003's kinematic-mode joint callback for one joint, on the limiter's generator.

    Call it from a simulator's joint callback as it is::

        def sysCall_joint(inData):
            return stackik.joint_callback(inData)

    Keys read: ``pos``, ``vel`` (current state [rad or m, /s]), ``targetPos`` (position
    control, arriving with ``targetVel`` or at rest) or else ``targetVel`` (velocity
    control), ``maxVel``, ``maxAccel``, ``maxJerk``, ``dt`` [s], ``cyclic`` (shortest
    way, output in ``[-pi, pi)``), ``lowLimit``, ``highLimit`` (when not cyclic),
    ``first`` (forget the remembered acceleration) and ``handle`` (one generator per
    joint handle). The acceleration is remembered between calls while the simulator
    reports the position and velocity this function returned.

    Every number is checked first: states and targets finite and at most 1e6 in
    magnitude, limits ``> 0`` (``lowLimit``/``highLimit``: ``+-inf`` for none), flags
    ``True``/``False``; the output is always finite.

    Returns:
        ``{'pos': position, 'vel': velocity, 'immobile': at rest on its target}``.

    Raises:
        InvalidInput: ``in_data`` is not a dict; a missing key, a non-number, NaN, inf
            or a magnitude beyond 1e6; limits that are not > 0; a ``cyclic`` or
            ``first`` that is not a bool; an unhashable ``handle``.
        InvalidBounds: ``lowLimit > highLimit``.
        NotWithinLimits: ``pos`` outside ``[lowLimit, highLimit]``.
    """
    in_data = _callback_input(in_data)
    dt = _validate.positive_float(_number(in_data, "dt"), "dt")
    pos, vel = _number(in_data, "pos"), _number(in_data, "vel")
    limits = tuple(
        np.full(1, _validate.positive_float(_number(in_data, k), k))
        for k in ("maxVel", "maxAccel", "maxJerk")
    )
    cyclic = _validate.flag(in_data.get("cyclic", False), "joint callback: 'cyclic'")
    first = _validate.flag(in_data.get("first", False), "joint callback: 'first'")
    lo, hi = _position_limits(in_data, cyclic, pos)
    target_pos = in_data.get("targetPos")
    target_vel = in_data.get("targetVel")
    tp = None if target_pos is None else np.full(1, _number(in_data, "targetPos"))
    tv = None if target_vel is None else np.full(1, _number(in_data, "targetVel"))
    key = in_data.get("handle", 0)
    with _CALLBACK_LOCK:
        joint = _CALLBACK_JOINTS.get(key)
        if joint is None or joint.core.dt != dt:
            joint = _CALLBACK_JOINTS[key] = _CallbackJoint(dt)
        core = joint.core
        core.set_limits(*limits)
        core.cyclic = np.zeros(1 if cyclic else 0, dtype=np.int64)
        core.lower[0], core.upper[0] = lo, hi
        same = joint.last is not None and joint.last == (pos, vel) and not first
        core.set_state(np.full(1, pos), np.full(1, vel), core.a if same else np.zeros(1))
        if tp is not None:
            core.track(tp, tv)
            arrived = core.p[0] == core.target[0]
        else:
            core.track(None, tv if tv is not None else np.zeros(1))
            arrived = True
        p, v, a = float(core.p[0]), float(core.v[0]), float(core.a[0])
        if cyclic:  # the simulator's cyclic joints live in [-pi, pi)
            p = float(_wrap(np.full(1, p))[0])
            core.p[0] = p
        joint.last = (p, v)
    return {"pos": p, "vel": v, "immobile": bool(v == 0.0 and a == 0.0 and arrived)}
