"""Stall recovery across velocity steps: the stall handler and the elastic band.

Both watch the results of consecutive :meth:`VelocityEngine.solve` calls and change a
constraint setting between steps (never inside one), as EmbodiK's handlers do:

* :class:`StallHandler`: when the robot is stuck against a collision margin for
  ``stall_threshold`` consecutive steps, the collision constraint's ``min_distance`` is
  relaxed to ``floor_fraction`` of its nominal value; once the robot moves again it is
  restored by up to ``restore_rate`` [m] per step, never above the closest watched
  pair's current distance (raising it past that would make the step infeasible: the
  margin comes back as the robot backs off).
* :class:`ElasticBand`: when joint limits hold the robot for ``stall_threshold`` steps,
  the band expands: joints held at their (shrunk) limit get part of their limit margin
  lent back (``relief``, growing by ``expand_rate`` per step up to ``delta_max``). A
  joint keeps its relief while it stays within ``delta_max`` of its limit; farther
  away, its relief decays by ``decay_rate`` per step. The band never lends more than
  the margin: the URDF limits are never crossed (see
  :class:`~stackik.constraints.limits.JointLimitsConstraint`).

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
        """Stalled steps before relaxing, restore speed [m/step], floor (fraction of nominal)."""
        self.stall_threshold = _validate.count(stall_threshold, "stall_threshold")
        self.restore_rate = _validate.positive_float(restore_rate, "restore_rate")
        self.floor_fraction = _validate.in_range(floor_fraction, "floor_fraction", 0.0, 1.0)

    def enable(self, nominal_min_distance: float) -> None:
        """Start watching; ``nominal_min_distance`` [m] is the margin to restore."""
        self.nominal = _validate.positive_float(nominal_min_distance, "nominal_min_distance", True)
        self.current = self.nominal
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

    def after(self, result: VelocitySolverResult, collision: CollisionConstraint | None) -> None:
        """Count the step; relax or restore the collision margin for the next one."""
        if not self.enabled or collision is None:
            return
        if is_stall(result):
            self.consecutive_stalls += 1
            target = self.floor_fraction * self.nominal
            if self.consecutive_stalls >= self.stall_threshold and self.current > target:
                self.current = target
                _set_min_distance(collision, self.current)
            return
        self.consecutive_stalls = 0
        if self.current < self.nominal:
            closest = float(np.min(collision.last_distances, initial=np.inf))
            raised = min(self.nominal, self.current + self.restore_rate)
            self.current = max(self.current, min(raised, closest))
            _set_min_distance(collision, self.current)


def _set_min_distance(collision: CollisionConstraint, value: float) -> None:
    with warnings.catch_warnings():  # the margin itself was warned about at configuration
        warnings.simplefilter("ignore", CollisionMarginWarning)
        collision.set_min_distance(value)


class ElasticBand:
    """Lend limit margin back to saturated joints while limits hold the robot."""

    def __init__(self, nv: int) -> None:
        self.delta_max = 0.05
        self.expand_rate = 0.01
        self.decay_rate = 0.2
        self.stall_threshold = 3
        self.expand_only_saturated = True
        self.enabled = False
        self.deltas = np.zeros(nv)
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

    def enable(self, delta_max: float) -> None:
        """Start watching with this largest relief [rad or m]."""
        self.delta_max = _validate.positive_float(delta_max, "delta_max", allow_zero=True)
        self.enabled = True

    def disable(self, limits: JointLimitsConstraint) -> None:
        """Stop and take every relief back."""
        self.enabled = False
        self.deltas[:] = 0.0
        self.consecutive_stalls = 0
        limits.relief = self.deltas

    def after(self, result: VelocitySolverResult, limits: JointLimitsConstraint) -> None:
        """Count the step; grow or decay the reliefs for the next one."""
        if not self.enabled:
            return
        self.consecutive_stalls = self.consecutive_stalls + 1 if is_stall(result) else 0
        if self.consecutive_stalls >= self.stall_threshold:
            self.expanding = True
        if not self.expanding and not self.deltas.any():
            return
        zone = np.zeros(self.deltas.shape[0], dtype=bool)
        zone[limits.at_limit(self.delta_max)] = True
        grow = self._expanding(result, limits) if self.expanding else np.zeros(0, np.int64)
        fading = (self.deltas > 0) & ~zone
        self.deltas[fading] *= 1.0 - self.decay_rate
        self.deltas[grow] = np.minimum(self.deltas[grow] + self.expand_rate, self.delta_max)
        self.deltas[self.deltas < 1e-6] = 0.0
        if not grow.size and not (zone & (self.deltas > 0)).any():
            self.expanding = False  # no joint with relief is near its limit: contract
        limits.relief = self.deltas

    def _expanding(self, result: VelocitySolverResult, limits: JointLimitsConstraint) -> np.ndarray:
        """Velocity indices whose margin grows this step.

        Joints held at a (shrunk) limit and, with ``expand_only_saturated``, saturated
        at the velocity box too.
        """
        held = limits.at_limit(max(self.expand_rate, 1e-4))
        if not self.expand_only_saturated:
            return held
        return np.intersect1d(held, np.asarray(result.saturated_joints, dtype=np.int64))
