"""Stall recovery across velocity steps: the stall handler and the elastic band.

Both watch the results of consecutive :meth:`VelocityEngine.solve` calls and change a
constraint setting between steps (never inside one), as EmbodiK's handlers do:

* :class:`StallHandler`: when the robot is stuck against a collision margin for
  ``stall_threshold`` consecutive steps (a stalled step whose collision rows held a
  pair at its margin: a pair within 10 % of its minimum distance above it with a row at
  its bound, or a pair below its minimum; a step held back by the joint limits, a
  control loop's motion box or the damper of a pair still far from its margin does not
  count), the collision constraint's ``min_distance`` is relaxed to ``floor_fraction`` of
  its nominal value; once the robot moves again it is
  restored by up to ``restore_rate`` [m] per step, never above any watched pair's
  distance after the step (its rows' prediction, or for a pair without rows its distance
  bound less what the step's motion can close; raising it past that would start the
  next step in violation: the margin comes back as the robot backs off); it comes back
  whole at once when every pair is clear of its nominal minimum (a robot pair that can
  never reach the nominal margin has a lowered minimum there, half its largest sampled
  distance, and can bind a relaxed margin more than the nominal one). Only the global
  margin is relaxed: a pair with a minimum of its own (set by name, an obstacle's, or
  lowered for a robot pair that can never reach the margin) keeps it, and does not hold
  the global margin back.
* :class:`ElasticBand` (EmbodiK's "joint limit expansion for limit-dominated stalls"):
  once joints have sat saturated at their position limits while the main task stalled
  for ``stall_threshold`` consecutive steps, the band expands: each step a joint is
  saturated at its limit, that limit widens by ``expand_rate`` (every position-limited
  joint's when ``expand_only_saturated`` is off), up to ``delta_max``. Without a limit
  margin (``set_limit_margin``) the widening lies past the URDF limits, as EmbodiK
  0.23.2's band does (measured: a joint task stalled at a Panda joint limit moves past
  it); a margin of at least ``delta_max`` keeps the band inside the URDF limits. The
  stall ends when no joint is saturated at its limit and no joint is in the widened
  room (within ``expand_rate`` of its nominal limit, or past it) while the main task
  asks for motion; then every widening decays by ``decay_rate`` per step, and joints
  past their narrowed limits are driven back by the limit recovery. At rest the deltas
  are zero. :attr:`ElasticBand.deltas` reports per joint the widening or, when larger,
  how far the joint still is past its URDF limit: a joint is never further past its
  URDF limit than its reported delta.

A step *stalls* when it fails (status not ``SUCCESS``) or when the highest priority
level gets less than :data:`STALL_SCALE` of its commanded task velocity (the SNS task
scale): the main task is blocked, whatever the other joints do.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import _validate
from ..constraints.collision import CollisionConstraint
from ..constraints.limits import JointLimitsConstraint
from ..errors import CollisionMarginWarning
from ..results import SolverStatus, VelocitySolverResult

__all__ = ["STALL_SCALE", "ElasticBand", "StallHandler", "is_stall"]

#: Task scale of the highest priority level under which a step counts as a stall.
STALL_SCALE = 0.1


def is_stall(result: VelocitySolverResult) -> bool:
    """Whether a step stalled (see the module docstring)."""
    if result.status != SolverStatus.SUCCESS:
        return True
    return bool(result.task_scales.size > 0 and float(result.task_scales[0]) < STALL_SCALE)


class StallHandler:
    """Relax the collision margin while the robot is stuck, restore it afterwards."""

    def __init__(self) -> None:
        self.stall_threshold = 5
        self.restore_rate = 0.005
        self.floor_fraction = 0.3
        self.enabled = False
        self.nominal = 0.0
        self.current = 0.0
        self.consecutive_stalls = 0

    def configure(self, stall_threshold: int, restore_rate: float, floor_fraction: float) -> None:
        """Stalled steps before relaxing, restore speed [m/step], floor (fraction of nominal).

        All three are checked before any is applied.
        """
        values = (
            _validate.count(stall_threshold, "stall_threshold"),
            _validate.positive_float(restore_rate, "restore_rate"),
            _validate.in_range(floor_fraction, "floor_fraction", 0.0, 1.0),
        )
        self.stall_threshold, self.restore_rate, self.floor_fraction = values

    def enable(
        self, nominal_min_distance: float, collision: CollisionConstraint | None = None
    ) -> None:
        """Start watching; ``nominal_min_distance`` [m] is the margin to restore.

        The collision constraint, when there is one, gets the nominal margin now: it is
        the margin the handler reports and manages.
        """
        nominal = _validate.positive_float(nominal_min_distance, "nominal_min_distance", True)
        if collision is not None and collision.min_distance != nominal:
            _set_min_distance(collision, nominal)
        self.nominal = self.current = nominal
        self.consecutive_stalls = 0
        self.enabled = True

    def disable(self, collision: CollisionConstraint | None) -> None:
        """Stop watching and give the collision constraint its nominal margin back."""
        if self.enabled and collision is not None:
            _set_min_distance(collision, self.nominal)
        self.enabled = False
        self.current = self.nominal
        self.consecutive_stalls = 0

    @property
    def relaxed(self) -> bool:
        """Whether the margin is currently below nominal."""
        return self.enabled and self.current < self.nominal

    def after(
        self, result: VelocitySolverResult, collision: CollisionConstraint | None, dt: float
    ) -> None:
        """Count the step; relax or restore the collision margin for the next one.

        A restore never raises the margin above any pair's distance after the step
        (``dt`` [s] long; :meth:`CollisionConstraint.restorable_margin`: the pairs whose
        minimum the global margin sets), less the recovery deadband (at least 10 µm, for
        the rows' linearization error): the next step would otherwise start in violation
        of a margin set from the distances before it.
        """
        if not self.enabled or collision is None:
            return
        if is_stall(result) and collision.binding(result.solution):
            self.consecutive_stalls += 1
            target = self.floor_fraction * self.nominal
            if self.consecutive_stalls >= self.stall_threshold and self.current > target:
                self.current = target
                _set_min_distance(collision, self.current)
            return
        self.consecutive_stalls = 0
        if self.current < self.nominal:
            raised = min(self.nominal, self.current + self.restore_rate)
            margin = collision.restorable_margin(result.solution, dt, raised)
            if (
                margin < raised
                and collision.restorable_margin(result.solution, dt, self.nominal) == self.nominal
            ):  # (clear of every pair's nominal minimum: back whole)
                margin = self.nominal
            current = max(self.current, margin)
            if current != self.current:
                self.current = current
                _set_min_distance(collision, current)


def _set_min_distance(collision: CollisionConstraint, value: float) -> None:
    with warnings.catch_warnings():  # the margin itself was warned about at configuration
        warnings.simplefilter("ignore", CollisionMarginWarning)
        collision.set_min_distance(value)


class ElasticBand:
    """Widen saturated joints' limits while joint limits stall the main task."""

    def __init__(self, nv: int) -> None:
        self.delta_max = 0.05
        self.expand_rate = 0.01
        self.decay_rate = 0.2
        self.stall_threshold = 3
        self.expand_only_saturated = True
        self.enabled = False
        self.widening = np.zeros(nv)  # per velocity index, what the limits are widened by
        self.deltas = np.zeros(nv)  # what is reported: the widening, or the excursion
        self.consecutive_stalls = 0
        self.expanding = False

    def configure(
        self,
        delta_max: float,
        expand_rate: float,
        decay_rate: float,
        stall_threshold: int,
        expand_only_saturated: bool,
    ) -> None:
        """Tuning: largest relief [rad or m], growth and decay per step, stall count."""
        values = (  # all checked before any is applied
            _validate.positive_float(delta_max, "delta_max", allow_zero=True),
            _validate.positive_float(expand_rate, "expand_rate"),
            _validate.in_range(decay_rate, "decay_rate", 0.0, 1.0),
            _validate.count(stall_threshold, "stall_threshold"),
            _validate.flag(expand_only_saturated, "expand_only_saturated"),
        )
        (
            self.delta_max,
            self.expand_rate,
            self.decay_rate,
            self.stall_threshold,
            self.expand_only_saturated,
        ) = values
        np.minimum(self.widening, self.delta_max, out=self.widening)

    def enable(self, delta_max: float) -> None:
        """Start watching with this largest widening [rad or m]."""
        self.delta_max = _validate.positive_float(delta_max, "delta_max", allow_zero=True)
        np.minimum(self.widening, self.delta_max, out=self.widening)
        self.enabled = True

    def disable(self, limits: JointLimitsConstraint) -> None:
        """Stop and narrow every limit back (the deltas are zero)."""
        self.enabled = False
        self.widening[:] = 0.0
        self.deltas[:] = 0.0
        self.consecutive_stalls = 0
        self.expanding = False
        limits.relief = self.widening

    def after(
        self, result: VelocitySolverResult, limits: JointLimitsConstraint, demand: float
    ) -> None:
        """Count the step; widen or narrow the limits for the next one.

        Args:
            result: The step's result.
            limits: The joint limits whose relief the band sets.
            demand: Norm of the highest-priority level's task velocity in the step.
        """
        if not self.enabled:
            return
        tol = max(self.expand_rate, 1e-4)
        pressing = self._pressing(result, limits, tol)
        stalled = bool(pressing.size) and is_stall(result)
        self.consecutive_stalls = self.consecutive_stalls + 1 if stalled else 0
        if self.consecutive_stalls >= self.stall_threshold:
            self.expanding = True
        # joints still using the widened room while the main task asks for motion
        in_room = limits.near_nominal_limit(tol) if demand > TASK_MET else pressing[:0]
        if self.expanding and not stalled and not in_room.size:
            self.expanding = False  # the stall ended
        if self.expanding:
            if pressing.size:
                grow = pressing if self.expand_only_saturated else limits.scalar_joints[1]
                widened = np.minimum(self.widening[grow] + self.expand_rate, self.delta_max)
                self.widening[grow] = widened
        else:
            fade = np.ones(self.widening.shape[0], dtype=bool)
            fade[in_room] = False
            self.widening[fade] *= 1.0 - self.decay_rate
            self.widening[self.widening < _NEGLIGIBLE] = 0.0
        limits.relief = self.widening
        past = limits.excursion()
        past[past < _NEGLIGIBLE] = 0.0
        np.maximum(self.widening, past, out=self.deltas)

    @staticmethod
    def _pressing(
        result: VelocitySolverResult, limits: JointLimitsConstraint, tolerance: float
    ) -> np.ndarray:
        """Velocity indices saturated within ``tolerance`` of a (widened) position limit."""
        held = limits.at_limit(tolerance)
        return np.intersect1d(held, np.asarray(result.saturated_joints, dtype=np.int64))


#: A widening or excursion below this [rad or m] is zero.
_NEGLIGIBLE = 1e-12
#: The main task is met when its task velocity's norm is at most this: the band narrows.
TASK_MET = 1e-4
