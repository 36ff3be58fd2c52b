"""CollisionConstraint: self-collision and world avoidance with velocity dampers.

The constraint watches the robot's own collision pairs, every pair between the robot
(and its attached objects) and the world's obstacles, and the attached objects against
the rest of the robot (:mod:`stackik.model.world`, :mod:`stackik.model.pipeline`). It
reads the world's current snapshot at every step, so obstacles added, moved or removed
after configuration take effect at the next step.

For a pair at signed distance ``d`` with witness points ``p1`` (on geometry 1, the
robot side) and ``p2`` (on geometry 2) and unit normal ``n`` from 1 to 2, the distance
rate is ``d_dot = n^T (J_p2 - J_p1) v + n^T v_obstacle(p2)``, where ``J_p`` is the world
linear Jacobian of the point ``p`` moving with its geometry's joint: ``J_p = J_lin -
[p]x J_ang`` over that joint's supporting columns of Pinocchio's world joint Jacobian,
and ``v_obstacle`` is an obstacle's own velocity (given, estimated from stamped poses,
or observed over the last step). Each near pair gives the velocity-damper row
(Faverjon and Tournassoud, 1987):

    n^T (J_p2 - J_p1) v >= -gain (d - min_distance) / dt - n^T v_obstacle(p2)

**Hold distance.** The damper aims at ``min_distance + recovery_deadband + b``, where
``b`` is what the pair has learned about its own linearization error: the row promises
a first-order distance after the step; when the next step finds the pair closer than
that promise (a curved surface slid along, a box edge rotating in, an obstacle that
sped up), the shortfall becomes ``b`` (it then decays by half every step it does not
recur). A pair less than half the deadband below its hold distance gets a zero
right-hand side: it may not approach, but is not pushed back, which would fight the
tasks every step; deeper, it is pushed back. So held and sliding contacts stay above
``min_distance`` at 1 ms steps; at long steps (10 ms) a contact pressed into a curved
surface can settle up to about 0.1 mm below it, and joints turning several hundredths
of a radian per step can take it millimetres below (the step then reports
``COLLISION_VIOLATED``; see docs/reliability.md).

**Contact patches.** When two faces meet face-on, the witness is one arbitrary point
of the closest patch, and a rotation can bring another patch point closer than that row
sees. So each near pair also gets rows at the *support points* of both shapes (box
corners, cylinder and cone rims, capsule end caps, hull vertices) lying within
``patch_tolerance`` of the closest distance, once the pair is within ``patch_tolerance``
of its limit (the points extreme along 8 in-plane directions when the patch has more).
A support point ``s`` of geometry 1 is at least ``g_s = n . (p2 - s)`` from geometry 2;
the row is the same damper on ``g_s`` (symmetrically for geometry 2's points), except
that it never demands separation.

**One compiled call.** Broadphase, exact distances and rows run in one compiled call
(:mod:`stackik.constraints._collision_kernel`): each geometry accumulates an upper
bound of how far it has moved since a pair's last check (``sum_k L_gk |dq_k|`` with
configuration-independent levers, plus an obstacle's own displacement), so a pair known
to be far stays unqueried until its bound says it could be near; then a
bounding-sphere test, then the exact distance (:mod:`stackik.geometry`: closed forms,
GJK and EPA, checked against coal). Only pairs closer than ``min_distance +
activation_margin`` produce rows, for at most ``max_constraints`` pairs (the most
urgent). Exact triangle meshes (``exact_collision_meshes=True``, ``convex=False``
obstacles) are queried with coal, one call per near pair.

**Query limits.** A time budget (``refinement_budget_us``, the ``SPEED`` mode's 300 us)
or ``nearest_points_all_pairs=False`` (one query) limits the exact queries of a step,
but never leaves out a pair whose distance bound is below its minimum distance (a pair
that may be below it now, or was never measured): those are always queried, so every
pair below its minimum is among the step's hits and the step reports it. The limit only
skips pairs known to be at or above their minimum, the least urgent first
(:func:`~stackik.constraints._collision_kernel.apply_budget`); a skipped pair gets no
row in that step. A budget becomes a query count with the per-query cost measured on
the clock over the exact queries alone (compiled steps; smoothed, within 0.05-20 us).
"""

from __future__ import annotations

import enum
import math
import time
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar, overload

import numpy as np

from .. import _jit, _validate
from ..errors import (
    CollisionGeometryNotFound,
    CollisionMarginWarning,
    FixedPairWarning,
    InvalidInput,
)
from ..model import Kinematics, RobotModel
from ..model.collision import validate_pairs
from ..model.pipeline import (
    CollisionPipeline,
    CollisionWatch,
    GeometrySet,
    has_movers,
    mesh_distance,
)
from ..model.world import World, WorldLayout, WorldState
from ..results import CollisionDebugInfo
from . import _collision_kernel as ck
from ._collision_pairs import (
    NamePair,
    PairSet,
    Saved,
    build_pairs,
    joint_columns,
    name_key,
    override_ids,
    pair_levers,
    unwatched_reason,
)
from .base import Constraint, _check_snapshot, _guarded, _row_index, register_constraint

__all__ = [
    "CACHE_CANDIDATE_MARGIN",
    "CACHE_MAX_CANDIDATES",
    "CACHE_REFRESH_INTERVAL",
    "MAX_LEARNED_ERROR",
    "VIOLATION_TOLERANCE",
    "CollisionConstraint",
    "CollisionSettings",
    "CollisionTuningMode",
    "pair_levers",
]

#: The pair cache's defaults (EmbodiK's, and the ``BALANCED`` mode's): a full scan every
#: 20 steps, candidates within 0.03 m of their activation distance, at most 128 of them.
CACHE_REFRESH_INTERVAL = 20
CACHE_CANDIDATE_MARGIN = 0.03
CACHE_MAX_CANDIDATES = 128
#: Cap of a pair's learned linearization error [m] (see the module docstring).
MAX_LEARNED_ERROR = 0.01
#: A pair closer than its minimum distance by more than this [m] is a violation: the
#: step's status is ``COLLISION_VIOLATED`` (distances are exact to about 1e-9 m).
VIOLATION_TOLERANCE = 1e-6
#: Acceleration standing in for an unbounded limit [m/s^2 or rad/s^2].
_UNBOUNDED_ACCELERATION = 1e6
#: Rows a pair can produce: a witness row, two patch sides and their outline crossings.
_ROWS_PER_PAIR = 1 + 3 * ck.PATCH_DIRECTIONS
#: Cost assumed for one exact query when turning a time budget into a query count [us],
#: until the steps measure it (their exact queries alone, timed on the clock).
_QUERY_US = 0.5
#: The range a measured per-query cost is clipped to [us], and the weight of a new
#: measurement in the smoothed cost (an exponential moving average).
_QUERY_US_RANGE = (0.05, 20.0)
_QUERY_US_WEIGHT = 0.2
#: A pair held at its margin is within this fraction of its minimum distance above it
#: (:meth:`CollisionConstraint.binding`: what the stall handler counts as a stall).
HELD_FRACTION = 0.1
#: The ``last_*`` records of no step (empty, read-only).
_NO_ROWS = np.zeros((0, 0))
_NO_BOUNDS = np.zeros(0)
_NO_ROWS.flags.writeable = False
_NO_BOUNDS.flags.writeable = False


class CollisionTuningMode(enum.Enum):
    """High-level presets of the collision constraint's cost/accuracy trade-off.

    ``PRECISE``: every candidate pair is queried exactly each step (the default).
    ``BALANCED``: the pair cache (full scan every 20 steps) on top of the motion bounds.
    ``SPEED``: the pair cache with a full scan every 50 steps and a 300 us budget on
    exact queries per step (EmbodiK 0.23.2's budget). A pair whose distance bound is
    below its minimum is queried whatever the budget (the step reports every pair below
    its minimum); the budget only skips the least urgent of the others.
    """

    PRECISE = "precise"
    BALANCED = "balanced"
    SPEED = "speed"


def _check_spec(pairs: Sequence[tuple[str, str]]) -> list[NamePair]:
    return validate_pairs(pairs)


def _non_negative(value: object, what: str) -> float:
    return _validate.positive_float(value, what, allow_zero=True)


def _unit_interval(value: object, what: str) -> float:
    return _validate.in_range(value, what, 0.0, 1.0, open_low=True)


def _multiplier(value: object, what: str) -> float:
    number = _validate.real(value, what)
    if not math.isfinite(number) or number > _validate.MAX_MAGNITUDE:
        raise InvalidInput(f"{what} must be finite, got {value!r}", what=what)
    return max(number, 0.0)


def _budget(value: object, what: str) -> int:
    return max(_validate.count(value, what, minimum=-(2**31)), 0)


def _tuning_mode(value: object, what: str) -> CollisionTuningMode:
    """A :class:`CollisionTuningMode` from itself, its value or name (``"SPEED"``)."""
    if isinstance(value, str):
        value = value.lower()
    try:
        return CollisionTuningMode(value)
    except ValueError:
        names = [m.value for m in CollisionTuningMode]
        raise InvalidInput(
            f"unknown {what} {value!r}; use one of {names}", what=what, value=value
        ) from None


_T = TypeVar("_T")


class _Setting(Generic[_T]):
    """A checked setting of :class:`CollisionSettings` (a typed error when it is set).

    Setting it bumps the settings' version: the compiled step's settings vector of the
    constraint that owns them is rewritten at the next step (one integer compared per
    step).
    """

    def __init__(self, check: Callable[[object, str], _T]) -> None:
        self._check = check
        self._name = self._slot = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name, self._slot = name, "_" + name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> _Setting[_T]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> _T: ...

    def __get__(self, obj: object | None, owner: type | None = None) -> _T | _Setting[_T]:
        if obj is None:
            return self
        value: _T = getattr(obj, self._slot)
        return value

    def __set__(self, obj: CollisionSettings, value: object) -> None:
        checked = self._check(value, self._name)
        if getattr(obj, self._slot, None) != checked:
            setattr(obj, self._slot, checked)
            obj._settings_version += 1


#: The settings ``configure_collision_constraint`` takes as arguments.
_CONFIGURED = (
    "max_constraints", "gain", "activation_margin", "patch_tolerance", "recovery_deadband",
    "nearest_points_all_pairs",
)  # fmt: skip
#: The settings made on a configured constraint (the solver's ``set_collision_*``).
_TUNED = (
    "activation_multiplier", "proximity_gating", "recovery_scale", "max_separation_speed",
    "refinement_budget_us", "sphere_broadphase", "approach_deceleration", "tuning_mode",
    "_cache",
)  # fmt: skip


class CollisionSettings:
    """The settings of a collision constraint, and its per-pair minimums set by name.

    A :class:`CollisionConstraint` owns one (its ``settings``) and reads and writes its
    settings there. A solver keeps one of its own while it has no collision constraint
    (before ``configure_collision_constraint``, after ``clear_collision_constraint``):
    what is set on it applies to the next constraint, as a constraint configured again
    takes over the settings of the one it replaces (:meth:`take_settings`,
    :meth:`CollisionConstraint.adopt`).

    Attributes:
        max_constraints: Largest number of pairs with rows per step (>= 1; default 8).
        gain: Damper gain in (0, 1] (0.5).
        activation_margin: Pairs farther than their minimum plus this [m] get no row
            (0.05).
        patch_tolerance: Contact-patch support rows within this [m] of the limit (0: off;
            0.01).
        recovery_deadband: Band [m] above the minimum where a held pair is not pushed
            back (5e-5).
        nearest_points_all_pairs: Query every broadphase candidate exactly (True); False:
            the most urgent one only, and every pair whose distance bound is below its
            minimum.
        activation_multiplier: Activation margin as a multiple of ``min_distance``
            (finite; <= 0 reads 0: off).
        proximity_gating: Whether ``activation_multiplier`` applies (True).
        recovery_scale: Fraction in (0, 1] of the recovery speed of a pair inside its
            minimum (1).
        max_separation_speed: Cap [m/s] of a non-penetrating pair's separation (inf: none).
        refinement_budget_us: Budget [us] of exact queries per step (<= 0 reads 0: none);
            it never skips a pair whose distance bound is below its minimum.
        sphere_broadphase: Skip the exact query of pairs whose bounding spheres are apart
            (True).
        approach_deceleration: Closing-speed cap ``sqrt(2 decel gap)`` [m/s^2] (inf: off).
        tuning_mode: The last :class:`CollisionTuningMode` preset applied (``PRECISE``).

    Each setting is checked when it is assigned (``InvalidInput`` naming it; the old
    value stays) and takes effect at the next step.
    """

    #: Largest number of pairs with rows per step (>= 1).
    max_constraints = _Setting(_validate.count)
    #: Damper gain in (0, 1].
    gain = _Setting(_unit_interval)
    #: Pairs farther than their minimum plus this [m] get no row (>= 0).
    activation_margin = _Setting(_non_negative)
    #: Contact-patch support rows within this distance [m] of a pair's limit (0: off).
    patch_tolerance = _Setting(_non_negative)
    #: Band [m] above a pair's minimum in which a held pair is not pushed back (>= 0).
    recovery_deadband = _Setting(_non_negative)
    #: Query every broadphase candidate exactly (True) or only the most urgent one and
    #: every pair whose distance bound is below its minimum (False).
    nearest_points_all_pairs = _Setting(_validate.flag)
    #: Activation margin as a multiple of ``min_distance`` (finite; <= 0: off, read 0).
    activation_multiplier = _Setting(_multiplier)
    #: Whether :attr:`activation_multiplier` applies.
    proximity_gating = _Setting(_validate.flag)
    #: Fraction in (0, 1] of the recovery speed a pair inside its minimum asks for.
    recovery_scale = _Setting(_unit_interval)
    #: Cap [m/s] of the separation a non-penetrating pair asks for (> 0; inf: none).
    max_separation_speed = _Setting(_validate.positive_or_inf)
    #: Budget [us] of exact queries per step (<= 0: none, read 0); never skips a pair
    #: whose distance bound is below its minimum.
    refinement_budget_us = _Setting(_budget)
    #: Skip the exact query of pairs whose bounding spheres are apart.
    sphere_broadphase = _Setting(_validate.flag)
    #: Cap every pair's closing speed at ``sqrt(2 decel gap)`` [m/s^2] (> 0; inf: off).
    approach_deceleration = _Setting(_validate.positive_or_inf)
    #: The last :class:`CollisionTuningMode` preset applied (assigning one names it
    #: only: :meth:`set_tuning_mode` applies it).
    tuning_mode = _Setting(_tuning_mode)

    def __init__(self) -> None:
        #: Bumped by every change of a setting (see _Setting) and of the owning
        #: constraint's ``min_distance``: the constraint rewrites its settings vector.
        self._settings_version = 0
        #: Bumped whenever the pair cache is turned off: the owning constraint then
        #: forgets its cached candidates before its next step.
        self._cache_offs = 0
        # (the values the constraint reads on the hot path, stored without the check)
        self._max_constraints: int = 8
        self._refinement_budget_us: int = 0
        self.gain = 0.5
        self.activation_margin = 0.05
        self.patch_tolerance = 0.01
        self.recovery_deadband = 5e-5
        self.nearest_points_all_pairs = True
        self.activation_multiplier = 0.0
        self.proximity_gating = True
        self.recovery_scale = 1.0
        self.max_separation_speed = math.inf
        self.sphere_broadphase = True
        self.approach_deceleration = math.inf
        self.tuning_mode = CollisionTuningMode.PRECISE
        self._cache: tuple[int, float, int] | None = None
        #: The per-pair minimums set by name, in the order they were set: the unordered
        #: name pair -> (minimum [m], activate_when_clear), or None where one was cleared
        #: after others were set (see :meth:`CollisionConstraint.set_pair_min_distance`).
        self._overrides: dict[NamePair, tuple[float, bool] | None] = {}

    def take_settings(
        self, other: CollisionSettings | CollisionConstraint, configured: bool = False
    ) -> None:
        """Take over the settings of ``other`` and its per-pair minimums by name.

        Args:
            other: The settings to copy (or a constraint: its ``settings``).
            configured: Also the settings ``configure_collision_constraint`` takes as
                arguments (``max_constraints``, ``gain``, ``activation_margin``,
                ``patch_tolerance``, ``recovery_deadband``, ``nearest_points_all_pairs``);
                otherwise only those set on a configured constraint (activation
                multiplier and gating, recovery scale, separation cap, query budget,
                sphere test, approach deceleration, tuning mode, pair cache).

        Raises:
            InvalidInput: ``other`` is not a :class:`CollisionSettings` (nor a
                :class:`CollisionConstraint`).
        """
        source = _settings_of(other, "other")
        names = (*_CONFIGURED, *_TUNED) if _validate.flag(configured, "configured") else _TUNED
        for name in names:
            setattr(self, name, getattr(source, name))
        if self._cache is None:
            self._cache_offs += 1
        self._overrides = dict(source._overrides)
        self._settings_version += 1

    def set_activation_multiplier(self, multiplier: float) -> None:
        """Activation margin as a multiple of ``min_distance`` (``<= 0``: ``activation_margin``)."""
        self.activation_multiplier = _multiplier(multiplier, "multiplier")

    def set_recovery_scale(self, scale: float) -> None:
        """Fraction in (0, 1] of the recovery speed a pair inside its minimum asks for."""
        self.recovery_scale = _unit_interval(scale, "scale")

    def set_max_separation_speed(self, speed: float) -> None:
        """Cap [m/s] of the separation a non-penetrating pair asks for (inf: none)."""
        self.max_separation_speed = speed

    def set_refinement_budget_us(self, budget_us: int) -> None:
        """Budget [us] of exact queries per step (``<= 0``: none).

        The budget is turned into a number of queries with the per-query cost measured
        on the clock over the previous compiled steps' exact queries alone (smoothed,
        within 0.05-20 us; at least one query). A pair whose distance bound is below its
        minimum distance (it may be below it now, or was never measured) is always
        queried, whatever the budget, so every pair below its minimum is among the
        step's hits and the step reports it (``COLLISION_VIOLATED``). The budget only
        skips pairs known to be at or above their minimum, the least urgent first (by
        time to their minimum); a skipped pair gets no row in that step (the result's
        ``collision_budget_exhausted``).
        """
        self.refinement_budget_us = _budget(budget_us, "budget_us")

    def enable_pair_cache(
        self,
        enable: bool,
        full_refresh_interval: int = CACHE_REFRESH_INTERVAL,
        candidate_distance_margin: float = CACHE_CANDIDATE_MARGIN,
        max_cached_candidates: int = CACHE_MAX_CANDIDATES,
    ) -> None:
        """Candidate caching between periodic full scans.

        Every ``full_refresh_interval`` steps every pair is checked; in between, the
        candidates (pairs found within ``candidate_distance_margin`` [m] of their
        activation distance) are queried every step, the closest first, up to
        ``max_cached_candidates``. The motion bounds still list every other pair that
        could come near, so the cache never misses a pair that can reach activation.
        """
        if not enable:
            self._cache = None
            self._cache_offs += 1
        else:
            self._cache = (
                _validate.count(full_refresh_interval, "full_refresh_interval"),
                _non_negative(candidate_distance_margin, "candidate_distance_margin"),
                _validate.count(max_cached_candidates, "max_cached_candidates"),
            )
        self._settings_version += 1

    def set_tuning_mode(self, mode: CollisionTuningMode | str) -> None:
        """Apply a :class:`CollisionTuningMode` preset."""
        mode = _tuning_mode(mode, "tuning mode")
        self.tuning_mode = mode
        self.sphere_broadphase = True
        if mode == CollisionTuningMode.PRECISE:
            self.enable_pair_cache(False)
            self.refinement_budget_us = 0
        elif mode == CollisionTuningMode.BALANCED:
            self.enable_pair_cache(True)  # (the defaults)
            self.refinement_budget_us = 0
        else:
            self.enable_pair_cache(True, 50, 0.02, 64)
            self.refinement_budget_us = 300  # (EmbodiK 0.23.2's)

    def set_approach_deceleration(self, decel: float) -> None:
        """Cap every pair's closing speed at ``sqrt(2 decel gap)`` [m/s] (decel [m/s^2]).

        The damper alone lets a pair close at ``gain gap / dt`` until it is almost at its
        minimum distance; a robot with bounded accelerations (a jerk-limited command)
        cannot then stop, or get out of the way of an approaching obstacle, in time.
        With this cap a pair starts braking (or giving way) ``v^2 / (2 decel)`` before its
        minimum. ``inf`` (the default) turns it off.
        """
        self.approach_deceleration = decel


def _settings_of(value: object, what: str) -> CollisionSettings:
    """``value`` if it is settings, a constraint's ``settings``; else ``InvalidInput``."""
    if isinstance(value, CollisionSettings):
        return value
    if isinstance(value, CollisionConstraint):
        return value.settings
    raise InvalidInput(
        f"{what} must be a CollisionSettings (or a CollisionConstraint), got "
        f"{type(value).__name__}",
        what=what,
    )


class _Delegated(Generic[_T]):
    """A setting of :class:`CollisionConstraint`, kept in its ``settings``.

    Reading ``constraint.<name>`` reads ``constraint.settings.<name>``; assigning it
    assigns that (checked there: ``InvalidInput`` naming the setting, the old value kept).
    """

    def __init__(self, setting: _Setting[_T] | None = None) -> None:
        del setting  # (only gives the value type)
        self._name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> _Delegated[_T]: ...

    @overload
    def __get__(self, obj: CollisionConstraint, owner: type | None = None) -> _T: ...

    def __get__(
        self, obj: CollisionConstraint | None, owner: type | None = None
    ) -> _T | _Delegated[_T]:
        if obj is None:
            return self
        value: _T = getattr(obj.settings, self._name)
        return value

    def __set__(self, obj: CollisionConstraint, value: object) -> None:
        setattr(obj.settings, self._name, value)


#: How many pairs a warning's message lists (its ``pairs`` attribute has them all).
_LISTED = 5


@register_constraint
class CollisionConstraint(Constraint):
    """Keep every watched pair (robot, attached objects, world) ``min_distance`` apart.

    Args:
        name: Constraint name.
        kinematics: Kinematics cache read (a solver's), or a robot (its own cache); the
            robot must have collision geometry.
        min_distance: Minimum separation [m], >= 0 (an obstacle may set its own).
        include_pairs: Robot pairs (link or geometry names) to consider; empty: all of
            the robot's active pairs. Pairs with obstacles or attached objects are
            always watched unless excluded.
        exclude_pairs: Pairs to ignore, named by link, geometry, obstacle or attached
            object; ``"*"`` stands for anything (``("*", "table")``: the table entirely).
        nearest_points_all_pairs: Query every broadphase candidate exactly (True) or only
            the pair whose bounding spheres are closest (False, cheaper, less safe).
        max_constraints: Largest number of pairs with rows (the most urgent); pairs that
            can cross their limit within the step are never dropped.
        gain: Damper gain in (0, 1]; 1 lets a pair close the gap in one step.
        activation_margin: Pairs farther than ``min_distance + activation_margin`` [m]
            produce no row.
        patch_tolerance: When a pair is within this distance [m] of its limit, its support
            points within this distance of the closest distance get rows of their own
            (contact patches); 0 disables them.
        recovery_deadband: Width [m] of the band above ``min_distance`` in which a held
            pair is only kept from approaching further, not pushed back.
        world: A world of its own; None follows the robot's (``robot.world``).

    Attributes:
        settings: Its :class:`CollisionSettings` (the attributes and setters below read
            and write them); taken over by a constraint configured in its place.
        min_distance: Minimum separation [m] of every pair without one of its own;
            assigning it is :meth:`set_min_distance`.
        max_constraints: Largest number of pairs with rows per step (>= 1).
        gain: Damper gain in (0, 1].
        activation_margin: Pairs farther than their minimum plus this [m] get no row.
        patch_tolerance: Contact-patch support rows within this [m] of the limit (0: off).
        recovery_deadband: Band [m] above the minimum where a held pair is not pushed back.
        nearest_points_all_pairs: Query every broadphase candidate exactly.
        activation_multiplier: Activation margin as a multiple of ``min_distance``
            (finite; <= 0 reads 0: off).
        proximity_gating: Whether ``activation_multiplier`` applies.
        recovery_scale: Fraction in (0, 1] of the recovery speed of a pair inside its minimum.
        max_separation_speed: Cap [m/s] of a non-penetrating pair's separation (inf: none).
        refinement_budget_us: Budget [us] of exact queries per step (<= 0 reads 0: none).
        sphere_broadphase: Skip the exact query of pairs whose bounding spheres are apart.
        approach_deceleration: Closing-speed cap ``sqrt(2 decel gap)`` [m/s^2] (inf: off).
        tuning_mode: The last :class:`CollisionTuningMode` preset applied.

    Each setting is checked when it is assigned (``InvalidInput`` naming it; the old
    value stays) and takes effect at the next step (see :class:`CollisionSettings`).

    Raises:
        InvalidInput: The robot has neither collision geometry nor an attached object
            in the world the constraint reads (nothing to watch), or an argument is out
            of range.
        CollisionGeometryNotFound: A name in the pair lists is unknown.
    """

    family = "collision"
    #: The last step's pair minimums [m] when the margin changed since (else None).
    _rec_minimums: np.ndarray | None = None
    order = 10

    # (each reads and writes self.settings.<name>; see CollisionSettings)
    max_constraints = _Delegated(CollisionSettings.max_constraints)
    gain = _Delegated(CollisionSettings.gain)
    activation_margin = _Delegated(CollisionSettings.activation_margin)
    patch_tolerance = _Delegated(CollisionSettings.patch_tolerance)
    recovery_deadband = _Delegated(CollisionSettings.recovery_deadband)
    nearest_points_all_pairs = _Delegated(CollisionSettings.nearest_points_all_pairs)
    activation_multiplier = _Delegated(CollisionSettings.activation_multiplier)
    proximity_gating = _Delegated(CollisionSettings.proximity_gating)
    recovery_scale = _Delegated(CollisionSettings.recovery_scale)
    max_separation_speed = _Delegated(CollisionSettings.max_separation_speed)
    refinement_budget_us = _Delegated(CollisionSettings.refinement_budget_us)
    sphere_broadphase = _Delegated(CollisionSettings.sphere_broadphase)
    approach_deceleration = _Delegated(CollisionSettings.approach_deceleration)
    tuning_mode: _Delegated[CollisionTuningMode] = _Delegated()

    def __init__(
        self,
        name: str,
        kinematics: Kinematics | RobotModel,
        min_distance: float,
        include_pairs: Sequence[tuple[str, str]] = (),
        exclude_pairs: Sequence[tuple[str, str]] = (),
        nearest_points_all_pairs: bool = True,
        max_constraints: int = 8,
        gain: float = 0.5,
        activation_margin: float = 0.05,
        patch_tolerance: float = 0.01,
        recovery_deadband: float = 5e-5,
        world: World | None = None,
    ) -> None:
        super().__init__(name, kinematics)
        self.settings: CollisionSettings = CollisionSettings()
        self._cache_offs = self.settings._cache_offs  # (the last cache-off forgotten)
        if world is not None and not isinstance(world, World):
            raise InvalidInput(f"world must be a stackik World, got {type(world).__name__}")
        if not has_movers(self._robot, (world or self._robot.world).state):
            raise InvalidInput(
                "the robot has no collision geometry and its world no attached object: "
                "nothing to watch (load the robot with collision geometry, or attach an object)"
            )
        self._cfg = np.zeros(ck.CFG_SIZE)
        self._cfg_key: tuple[int, float] | None = None  # (version, dt) written into _cfg
        #: The snapshot max_rows() sized this step's rows for, with its layout key.
        self._sized_for: tuple[WorldState, tuple[WorldLayout, int, int]] | None = None
        self._tables: tuple = (None, (), ())  # (geometry set, its kernel tables)
        #: (geometry set, pairs, buffers, their compiled record): see :meth:`_workspace`.
        self._ws: tuple = (None, None, None, None)
        self._configure(
            min_distance, max_constraints, gain, activation_margin, patch_tolerance,
            recovery_deadband,
        )  # fmt: skip
        self.nearest_points_all_pairs = nearest_points_all_pairs
        self._include = _check_spec(include_pairs)
        self._exclude = _check_spec(exclude_pairs)
        self._pipeline = CollisionPipeline(self._robot, world)
        self._step_defaults()
        self._warned: set[tuple[str, str]] = set()  # (robot pairs: a bounded set)
        self._warned_fixed: set[tuple[str, str]] = set()  # (pairs now watched only)
        self._rebuild(self._pipeline.world_state(), {})
        self.exact_queries = 0
        self._clear_records()

    # -- settings --------------------------------------------------------------------------
    def _configure(
        self,
        min_distance: float,
        max_constraints: int,
        gain: float,
        activation_margin: float,
        patch_tolerance: float,
        recovery_deadband: float,
    ) -> None:
        """Check and store the settings (typed errors at configuration time)."""
        self._min_distance = _non_negative(min_distance, "min_distance")
        settings = self.settings
        settings.activation_margin = activation_margin
        settings.patch_tolerance = patch_tolerance
        settings.recovery_deadband = recovery_deadband
        settings.max_constraints = max_constraints
        settings.gain = gain

    def _step_defaults(self) -> None:
        self.skipped_queries = 0
        self.listed_pairs = 0
        self._query_us = _QUERY_US
        self._lead = 0.0
        self._offset = np.zeros(self._robot.nv)

    def _forget_cached(self) -> None:
        """No pair is a cached candidate once the pair cache was turned off (since last)."""
        offs = self.settings._cache_offs
        if offs != self._cache_offs:
            self._pairs.pi[:, 2] = 0
            self._cache_offs = offs

    # (the settings' setters, on self.settings: see CollisionSettings)
    def set_activation_multiplier(self, multiplier: float) -> None:
        """Activation margin as a multiple of ``min_distance`` (``<= 0``: ``activation_margin``)."""
        self.settings.set_activation_multiplier(multiplier)

    def set_recovery_scale(self, scale: float) -> None:
        """Fraction in (0, 1] of the recovery speed a pair inside its minimum asks for."""
        self.settings.set_recovery_scale(scale)

    def set_max_separation_speed(self, speed: float) -> None:
        """Cap [m/s] of the separation a non-penetrating pair asks for (inf: none)."""
        self.settings.set_max_separation_speed(speed)

    def set_refinement_budget_us(self, budget_us: int) -> None:
        """Budget [us] of exact queries per step (``<= 0``: none); the closest bounds first."""
        self.settings.set_refinement_budget_us(budget_us)

    def enable_pair_cache(
        self,
        enable: bool,
        full_refresh_interval: int = CACHE_REFRESH_INTERVAL,
        candidate_distance_margin: float = CACHE_CANDIDATE_MARGIN,
        max_cached_candidates: int = CACHE_MAX_CANDIDATES,
    ) -> None:
        """Candidate caching between periodic full scans (see :class:`CollisionSettings`)."""
        self.settings.enable_pair_cache(
            enable, full_refresh_interval, candidate_distance_margin, max_cached_candidates
        )
        self._forget_cached()

    def set_tuning_mode(self, mode: CollisionTuningMode | str) -> None:
        """Apply a :class:`CollisionTuningMode` preset."""
        self.settings.set_tuning_mode(mode)
        self._forget_cached()

    def set_approach_deceleration(self, decel: float) -> None:
        """Cap every pair's closing speed at ``sqrt(2 decel gap)`` [m/s] (decel [m/s^2]).

        See :meth:`CollisionSettings.set_approach_deceleration`.
        """
        self.settings.set_approach_deceleration(decel)

    @_guarded
    def take_settings(
        self, other: CollisionSettings | CollisionConstraint, configured: bool = False
    ) -> None:
        """Take over the settings of ``other`` and its per-pair minimums by name.

        See :meth:`CollisionSettings.take_settings`; every watched pair then has the
        minimum ``other``'s overrides give it (as if they were set now), or its default.

        Raises:
            InvalidInput: ``other`` is not a :class:`CollisionSettings` (nor a
                :class:`CollisionConstraint`).
        """
        self.settings.take_settings(other, configured)
        self._forget_cached()
        self._default_slots(np.arange(len(self._pairs)))
        self._apply_minimums({})

    @_guarded
    def adopt(self, previous: CollisionSettings | CollisionConstraint) -> None:
        """Take over the settings and per-pair minimums of the constraint this one replaces.

        What ``configure_collision_constraint`` does when called again (or after
        ``clear_collision_constraint``): the settings made on ``previous`` after it was
        configured (:meth:`CollisionSettings.take_settings`) and its per-pair minimums set
        by name. A pair both watch keeps the minimum it had (an ``activate_when_clear``
        override still waiting stays waiting, one in effect stays in effect); the others
        get the overrides that name them as if set now.

        Args:
            previous: The constraint replaced (its settings and its pairs' minimums), or
                settings kept without a constraint (their minimums by name).

        Raises:
            InvalidInput: ``previous`` is not a :class:`CollisionSettings` (nor a
                :class:`CollisionConstraint`).
        """
        self.settings.take_settings(_settings_of(previous, "previous"))
        self._forget_cached()
        saved = (
            previous._pairs.saved_minimums() if isinstance(previous, CollisionConstraint) else {}
        )
        self._apply_minimums(saved)

    @property
    def min_distance(self) -> float:
        """Minimum separation [m] of every pair without one of its own (>= 0).

        Setting it is :meth:`set_min_distance`.
        """
        return self._min_distance

    @min_distance.setter
    def min_distance(self, value: float) -> None:
        self.set_min_distance(value)

    @property
    def activation(self) -> float:
        """Effective activation margin [m]: pairs closer than their minimum plus this get rows.

        ``activation_multiplier * min_distance`` when proximity gating is on and the
        multiplier is > 0, else ``activation_margin``.
        """
        settings = self.settings
        if settings.proximity_gating and settings.activation_multiplier > 0.0:
            return settings.activation_multiplier * self._min_distance
        return settings.activation_margin

    def _fill_cfg(self, dt: float) -> np.ndarray:
        """The kernel's settings vector; the settings part is rewritten only when it changed."""
        cfg, settings = self._cfg, self.settings
        key = (settings._settings_version, dt)
        if key != self._cfg_key:
            self._forget_cached()
            self._write_settings(cfg, dt)
            self._cfg_key = key
        cfg[ck.CFG_LEAD] = self._lead  # (a control loop changes it every tick)
        cfg[ck.CFG_STEP] = self._step
        budget = settings._refinement_budget_us
        cfg[ck.CFG_QUERY_BUDGET] = max(1, int(budget / self._query_us)) if budget > 0 else 0
        return cfg

    def _write_settings(self, cfg: np.ndarray, dt: float) -> None:
        s = self.settings
        cfg[ck.CFG_ACTIVATION] = self.activation
        cfg[ck.CFG_GAIN] = s.gain
        cfg[ck.CFG_DT] = dt
        cfg[ck.CFG_DEADBAND] = s.recovery_deadband
        cfg[ck.CFG_RECOVERY_SCALE] = s.recovery_scale
        cfg[ck.CFG_MAX_SEPARATION] = s.max_separation_speed
        cfg[ck.CFG_PATCH_TOLERANCE] = s.patch_tolerance
        cfg[ck.CFG_MAX_CONSTRAINTS] = s.max_constraints
        cfg[ck.CFG_ALL_PAIRS] = float(s.nearest_points_all_pairs)
        cfg[ck.CFG_SPHERES] = float(s.sphere_broadphase)
        interval, margin, cap = s._cache if s._cache is not None else (0, 0.0, 0)
        cfg[ck.CFG_CACHE_INTERVAL], cfg[ck.CFG_CACHE_MARGIN] = interval, margin
        cfg[ck.CFG_CACHE_CAP] = cap
        cfg[ck.CFG_MAX_LEARNED] = MAX_LEARNED_ERROR
        cfg[ck.CFG_DECEL] = s.approach_deceleration

    # -- the watched pairs ------------------------------------------------------------------
    @property
    def world(self) -> World:
        """The world this constraint reads (its own, or the robot's)."""
        return self._pipeline.world if self._pipeline.world is not None else self._robot.world

    @_guarded
    def set_world(self, world: World | None) -> None:
        """Read ``world`` from now on (None: the robot's world)."""
        if world is not None and not isinstance(world, World):
            raise InvalidInput(f"world must be a stackik World, got {type(world).__name__}")
        self._pipeline.world = world

    @property
    def last_world_state(self) -> WorldState:
        """The world snapshot the last step read (obstacle poses it avoided)."""
        return self._state

    @property
    def geometry(self) -> GeometrySet:
        """The geometry set of the last step (robot, attached objects, obstacles)."""
        return self._pipeline.geometry(self._state)

    def _rebuild(self, state: WorldState, saved: dict[NamePair, Saved]) -> None:
        """Pairs, levers, columns and buffers for a geometry set (layout changes only).

        ``saved``: the pairs' minimums before (:meth:`PairSet.saved_minimums`), which
        :meth:`_apply_minimums` keeps.
        """
        gs = self._pipeline.geometry(state)
        # (the names of include/exclude_pairs are checked at the first build; later, an
        # obstacle or attached object they name may have been removed: it names nothing)
        ps, lowered = build_pairs(
            self._robot, gs, self._include, self._exclude, self.min_distance,
            strict=not hasattr(self, "_pairs"),
        )  # fmt: skip
        self._obs_prev = self._carried_motion(state)
        self._state = state
        self._gs = gs
        #: The layout key (:meth:`_layout_key`) the pairs are built for.
        self._synced_key = (state.layout, *gs.key[:2])
        self._pairs = ps
        self._apply_minimums(saved)
        self._columns = joint_columns(self._robot, gs)
        self._step = 0
        self._q_last: np.ndarray | None = None
        self._accel_key: tuple[float, int] | None = None
        self._buffers(len(ps), len(state.layout.obstacles))
        self._warn_margins(lowered)
        self._warn_fixed()

    def _carried_motion(self, state: WorldState) -> np.ndarray:
        """The obstacle poses the last step saw, in the slots of ``state``'s layout.

        An obstacle in both layouts (the same object: moving or re-posing it keeps it)
        keeps the pose the last step saw, so that a layout change (an object attached, an
        obstacle added far away) does not forget how the others move; a new one starts at
        its pose, so its first step sees no displacement. Before any step, or with another
        world, nothing is carried (``CFG_OBS_SEEN`` is cleared).
        """
        obstacles = state.layout.obstacles
        prev = np.zeros((len(obstacles), 12))
        prev[:, :9] = state.rotations.reshape(-1, 9)
        prev[:, 9:] = state.translations
        old = getattr(self, "_state", None)
        world, self._motion_world = getattr(self, "_motion_world", None), self.world
        if old is None or not self._cfg[ck.CFG_OBS_SEEN] or world is not self.world:
            # (a copy of a world, World.from_state, shares its obstacle objects: the world
            # itself tells them apart)
            self._cfg[ck.CFG_OBS_SEEN] = 0.0  # (obs_prev holds no step's poses yet)
            return prev
        slots = {id(o): k for k, o in enumerate(old.layout.obstacles)}
        for k, o in enumerate(obstacles):
            j = slots.get(id(o))
            if j is not None:
                prev[k] = self._obs_prev[j]
        return prev

    def _buffers(self, npairs: int, nobs: int) -> None:
        """Scratch arrays of the step kernel, sized for ``npairs`` pairs."""
        n = max(npairs, 1)
        self._work = (
            np.zeros(n, dtype=np.int64),
            np.zeros(n, dtype=np.int64),
            np.zeros(n),
            np.zeros((n, 9)),
            np.zeros(n, dtype=np.int64),
            np.zeros(n, dtype=np.int64),
            np.zeros((n, 4)),
        )
        self._sel = (
            np.zeros(n, dtype=np.int64),
            np.zeros(n, dtype=np.int64),
            np.zeros(n),
            np.zeros(n),
            np.zeros(n),
            np.zeros((n, 3)),
            np.zeros((n, 3)),
            np.zeros((n, 3)),
            np.zeros(n),
            np.zeros(n, dtype=np.int64),
            np.zeros((n, 4)),
        )
        self._disp = np.zeros(nobs)
        self._dq_abs = np.zeros(self._robot.nv)  # (|dq| since the last step)
        self._obs_vel = np.zeros((nobs, 6))
        self._obs_extra = np.zeros(nobs)
        self._counts = np.zeros(6, dtype=np.int64)
        cap = self._rows_needed()
        self._row_geoms = np.zeros((cap, 2), dtype=np.int64)
        self._row_points = np.zeros((cap, 3))
        self._row_normals = np.zeros((cap, 3))
        self._clear_records()  # (the last step's records index the pairs it had)

    def _sync(
        self, state: WorldState | None = None, key: tuple[WorldLayout, int, int] | None = None
    ) -> WorldState:
        """The world snapshot of this step; rebuild the pairs when the layout changed.

        Args:
            state: The snapshot to use (default: the world's newest).
            key: Its :meth:`_layout_key`, when the caller has it.
        """
        if state is None:
            state = self._pipeline.world_state()
        if key is None:
            key = self._layout_key(state)
        if key != self._synced_key:
            self._rebuild(state, self._pairs.saved_minimums())
        self._state = state
        return state

    def _layout_key(self, state: WorldState) -> tuple[WorldLayout, int, int]:
        """What a pair set is built for: the world's layout and the robot's revisions."""
        col = self._robot.collision
        return (
            state.layout,  # (the layout itself: a new world counts revisions from 1 again)
            col.revision if col is not None else -1,
            self._robot.revision,
        )

    def _step_state(self) -> WorldState:
        """The world snapshot this step writes its rows for.

        The snapshot :meth:`max_rows` read when the caller sized the row buffers, whole:
        a pose update or a layout change (an object added, removed or attached) by
        another thread since then takes effect at the next step (the pairs of a new
        layout could need more rows than the caller has). Without a :meth:`max_rows`
        call first, the newest snapshot.
        """
        sized, self._sized_for = self._sized_for, None
        if sized is None:
            return self._sync()
        state, key = sized
        if key == self._synced_key:  # (the pairs max_rows() synced are still current)
            self._state = state
            return state
        return self._sync(state, key)  # (pairs rebuilt meanwhile: back to the sized layout)

    def _warn_fixed(self) -> None:
        """Warn (once per pair while watched) of unmovable pairs below their minimum.

        Their distance is the same in every configuration (a fixed base resting on a
        table): the step cannot push them out (their rows bound nothing) and every
        configuration check finds them violated, so the caller most likely wants them
        left out. Measured at the cache's configuration (it does not matter which) with
        this constraint's own pipeline, which every step places again.
        """
        ps = self._pairs
        self._warned_fixed &= set(ps.names)  # (a pair that left and comes back warns again)
        fixed = [k for k in self._unmoved_pairs().tolist() if ps.names[k] not in self._warned_fixed]
        if not fixed:
            return
        self._pipeline.place(self._kin.joint_placements(), self._state)
        dist = self._pipeline.distances(ps.pairs[fixed])
        found = [
            (*ps.names[k], float(d), float(ps.pf[k, ck.PF_MIN]))
            for k, d in zip(fixed, dist.tolist(), strict=True)
            if d - ps.pf[k, ck.PF_MIN] < -VIOLATION_TOLERANCE
        ]
        if not found:
            return
        self._warned_fixed.update((a, b) for a, b, _, _ in found)
        shown = found[:_LISTED]
        more = (
            f" and {len(found) - len(shown)} more (the warning's pairs)" if found[_LISTED:] else ""
        )
        lines = [f"{a}/{b} at {d * 1e3:.1f} mm (minimum {m * 1e3:.1f} mm)" for a, b, d, m in shown]
        names = ", ".join(f"({a!r}, {b!r})" for a, b, _, _ in shown) + (", ..." if more else "")
        message = (
            f"{len(found)} collision pair(s) that no joint moves apart are below their minimum "
            f"distance: {'; '.join(lines)}{more}. Their distance is the same in every "
            "configuration: the velocity step cannot push them out (their rows bound "
            "nothing and each step reports COLLISION_VIOLATED), and position and global IK "
            "find every configuration in collision. If the contact is intended (a fixed "
            f"base resting on a table), leave them out: exclude_pairs=[{names}]."
        )
        _validate.warn_at_caller(FixedPairWarning(message, found))

    def _warn_margins(self, lowered: list[tuple[str, str, float, float]]) -> None:
        fresh = [entry for entry in lowered if (entry[0], entry[1]) not in self._warned]
        if not fresh:
            return
        self._warned.update((a, b) for a, b, _, _ in fresh)
        lines = [
            f"{a}/{b}: never farther than {d_max * 1e3:.1f} mm"
            + (f", minimum lowered to {d * 1e3:.1f} mm" if d == d else ", not watched")
            for a, b, d_max, d in fresh
        ]
        message = (
            f"min_distance {self.min_distance} m can never hold for {len(fresh)} collision "
            "pair(s) (largest distance over sampled configurations): "
            + "; ".join(lines)
            + ". Exclude them in the SRDF (RobotModel.compute_collision_exclusions) or set "
            "their minimum with set_collision_pair_min_distance."
        )
        _validate.warn_at_caller(CollisionMarginWarning(message, fresh))

    @property
    @_guarded
    def pair_indices(self) -> np.ndarray:
        """Index in the robot's active pair list of each watched pair (-1: a world pair)."""
        self._sync()
        return self._pairs.robot_index.copy()

    @_guarded
    def step_counts(self) -> tuple[int, int, int, int]:
        """The last step's counts: ``(watched, exact queries, skipped, listed)`` pairs.

        *Skipped*: left out by a query limit (the time budget, or
        ``nearest_points_all_pairs=False``); *listed*: those the distance bounds did not
        rule out. So ``watched - listed`` pairs were culled by their bounds, and
        ``listed - exact - skipped`` by the bounding-sphere test.
        """
        return (
            self._pairs.pairs.shape[0],
            self.exact_queries,
            self.skipped_queries,
            self.listed_pairs,
        )

    @_guarded
    def pair_names(self) -> list[tuple[str, str]]:
        """Pairs this constraint watches, as geometry (or obstacle) names."""
        self._sync()
        return list(self._pairs.names)

    def _matching(self, link_a: str, link_b: str) -> np.ndarray:
        """Slots of the watched pairs two override names stand for, in the newest layout.

        Raises:
            CollisionGeometryNotFound: A name neither names a geometry, link, attached
                object or obstacle nor is part of a link name.
        """
        self._sync()
        return self._slots(link_a, link_b, strict=True)

    def _slots(self, link_a: str, link_b: str, strict: bool) -> np.ndarray:
        """Slots of the pairs between two override names (see :func:`override_ids`)."""
        gs = self._gs
        ids_a, ids_b = override_ids(gs, link_a, strict), override_ids(gs, link_b, strict)
        return self._pairs.matching(ids_a, ids_b)

    def _apply_minimums(self, saved: dict[NamePair, Saved]) -> None:
        """Each pair's minimum: the one it had (``saved``), else from the overrides by name.

        A pair of ``saved`` keeps its minimum; every other pair (new to the pair set: an
        object attached again, an obstacle added again, a pair no longer excluded) gets
        the overrides set by name that name it, in the order they were set, as if set
        now. An override whose names name no pair (its object detached) stays and applies
        when they name one again.
        """
        fresh = self._pairs.restore_minimums(saved)
        overrides = self.settings._overrides
        if not overrides or not fresh.any():
            return
        for (a, b), entry in overrides.items():
            slots = self._slots(a, b, strict=False)
            slots = slots[fresh[slots]]
            if entry is None:
                self._default_slots(slots)
            else:
                self._override_slots(slots, *entry)

    def _override_slots(self, slots: np.ndarray, value: float, when_clear: bool) -> None:
        """Set the minimum [m] of the pairs ``slots`` (pending while below it: ``when_clear``)."""
        ps = self._pairs
        pf = ps.pf
        for k in slots.tolist():
            ps.follows[k] = False
            if when_clear and value > pf[k, ck.PF_MIN]:
                pf[k, ck.PF_PENDING] = value
            else:
                pf[k, ck.PF_MIN] = value
                pf[k, ck.PF_PENDING] = np.inf

    def _default_slots(self, slots: np.ndarray) -> None:
        """Return the pairs ``slots`` to their default minimum."""
        ps = self._pairs
        ps.follows[slots] = True
        ps.pf[slots, ck.PF_MIN] = ps.default_min[slots]
        ps.pf[slots, ck.PF_PENDING] = np.inf

    @_guarded
    def watch(self) -> CollisionWatch:
        """The watched pairs and the minimum distances a configuration must keep.

        For configuration checks: position and global IK, paths, reachability. A larger
        override still waiting to take effect in the velocity steps (``activate_when_clear``)
        counts already: a configuration is checked against what was asked for.
        """
        state = self._sync()
        ps = self._pairs
        minimum = self._requested_minimums()
        robot = ps.robot_index >= 0
        return CollisionWatch(
            ps.robot_index[robot].copy(),
            minimum[robot],
            ps.pairs.copy(),
            minimum,
            self._pipeline.world,
            state,
            list(ps.names),
            self._gs.names,
        )

    @_guarded
    def name_rules(self) -> tuple[list[NamePair], list[tuple[NamePair, float | None]]]:
        """Its ``exclude_pairs`` and its per-pair overrides, by the names they were given.

        For checks of a world this constraint does not read (a reachability study of
        another :class:`~stackik.World`), which decide what those names mean there.

        Returns:
            ``(exclude_pairs, overrides)``: the exclusions as given, and each override
            kept by name as ``((name_a, name_b), minimum [m])`` in the order set (the
            newest last: it wins on the pairs both name); minimum None for names cleared
            since (their pairs back at the default). An override still waiting to take
            effect in the velocity steps counts at its value, as in :meth:`watch`.
        """
        overrides = [
            (key, None if entry is None else entry[0])
            for key, entry in self.settings._overrides.items()
        ]
        return list(self._exclude), overrides

    def _requested_minimums(self) -> np.ndarray:
        """Each watched pair's minimum distance [m], pending overrides included (a copy).

        A pending override (set with ``activate_when_clear`` above the pair's minimum) is
        what the velocity steps keep once the pair has reached it; configurations are
        checked against it from the start.
        """
        pf = self._pairs.pf
        pending = pf[:, ck.PF_PENDING]
        return np.where(np.isfinite(pending), pending, pf[:, ck.PF_MIN])

    @_guarded
    def set_pair_min_distance(
        self, link_a: str, link_b: str, min_distance: float, activate_when_clear: bool = True
    ) -> None:
        """Override the minimum distance [m] of the watched pairs between two names.

        A name is a geometry, link, attached-object or obstacle name (``"*"``: anything);
        a name that is none of these stands for every robot geometry whose link (parent
        frame) name contains it, as in the EmbodiK reference (``("link2", "link4")``:
        the pairs of ``panda_link2`` and ``panda_link4``). With ``activate_when_clear`` a
        larger override waits, in the velocity steps, until the pair first reaches that
        clearance, so a step never starts violated; checks of configurations (position
        and global IK, paths, reachability, :meth:`watch`, :meth:`violation_at`) keep the
        larger minimum at once.

        The override is kept by name: whenever the pairs are built again (an object
        attached, detached or re-attached, an obstacle removed and added again, the
        robot's pairs changed) it applies to the pairs its names name then, even if none
        did meanwhile. A later override of the same two names replaces it; of others, it
        wins on the pairs both name.

        Raises:
            InvalidInput: A name is not a non-empty string, ``min_distance`` is negative
                or not finite, or the names share no watched pair (the message says why:
                the same geometry, an attached object's own body or allowed links,
                excluded, not an active pair, ...).
            CollisionGeometryNotFound: A name is no geometry, link, attached object or
                obstacle, and no link name contains it.
        """
        link_a, link_b = _validate.name(link_a, "link_a"), _validate.name(link_b, "link_b")
        value = _validate.positive_float(min_distance, "min_distance", allow_zero=True)
        when_clear = _validate.flag(activate_when_clear, "activate_when_clear")
        slots = self._matching(link_a, link_b)
        if not slots.size:
            raise InvalidInput(self._unwatched(link_a, link_b))
        key, overrides = name_key(link_a, link_b), self.settings._overrides
        overrides.pop(key, None)  # (the newest last: it wins where names overlap)
        overrides[key] = (value, when_clear)
        self._override_slots(slots, value, when_clear)

    def _unwatched(self, link_a: str, link_b: str) -> str:
        """The message of an override whose two names share no watched pair."""
        gs = self._gs
        col = self._robot.collision
        robot_pairs = col.pair_geometries() if col is not None else np.zeros((0, 2), np.int64)
        why = unwatched_reason(
            gs, robot_pairs, (self._include, self._exclude),
            override_ids(gs, link_a, True), override_ids(gs, link_b, True),
        )  # fmt: skip
        return (
            f"no watched collision pair between {link_a!r} and {link_b!r} for a per-pair "
            f"minimum distance: {why}"
        )

    @_guarded
    def clear_pair_min_distance(self, link_a: str, link_b: str) -> None:
        """Return the pairs between two names to their default minimum distance.

        Names as in :meth:`set_pair_min_distance`; the override kept by these names is
        dropped (also while they name no geometry: an object detached). Names that share
        no watched pair clear nothing.

        Raises:
            InvalidInput: A name is not a non-empty string.
            CollisionGeometryNotFound: A name is unknown (as in
                :meth:`set_pair_min_distance`) and no override is kept by these names.
        """
        link_a, link_b = _validate.name(link_a, "link_a"), _validate.name(link_b, "link_b")
        key, overrides = name_key(link_a, link_b), self.settings._overrides
        try:
            slots = self._matching(link_a, link_b)
        except CollisionGeometryNotFound:
            if key not in overrides:
                raise
            slots = np.zeros(0, dtype=np.int64)
        overrides.pop(key, None)
        if any(entry is not None for entry in overrides.values()):
            overrides[key] = None  # (an earlier override of other names may name them)
        else:
            overrides.clear()
        self._default_slots(slots)

    @_guarded
    def pair_min_distance_overrides(self) -> list[tuple[str, float]]:
        """Pairs whose minimum differs from ``min_distance``, as ``("a|b", minimum)``.

        These are the active overrides set by name (EmbodiK's: one still waiting for the
        pair to clear it, ``activate_when_clear``, is listed once it has taken effect),
        obstacles' own minimums and robot pairs lowered because they can never be
        ``min_distance`` apart.
        """
        self._sync()
        ps = self._pairs
        return [
            (f"{a}|{b}", float(ps.pf[k, ck.PF_MIN]))
            for k, (a, b) in enumerate(ps.names)
            if ps.pf[k, ck.PF_MIN] != self.min_distance
        ]

    @_guarded
    def set_min_distance(self, min_distance: float) -> None:
        """Change the global ``min_distance`` [m]; overrides set by name are kept.

        Robot pairs that can never be that far apart get a lowered minimum with a
        :class:`~stackik.errors.CollisionMarginWarning`, as at configuration. The pairs
        stay and so do the last step's records (:meth:`debug_info` and
        :meth:`describe_row` report the minimums that step had); every pair's exact
        distance is taken again at the next step.
        """
        self._min_distance = _non_negative(min_distance, "min_distance")
        self.settings._settings_version += 1  # (the activation margin may follow it)
        saved = self._pairs.saved_minimums()
        if not self._retune_minimums(saved):
            self._rebuild(self._pipeline.world_state(), saved)

    def _retune_minimums(self, saved: dict[NamePair, Saved]) -> bool:
        """The pairs' minimums under a new ``min_distance``, in place.

        The pair set is built again for the geometry the pairs were synced with; when it
        has the same pairs (which robot pairs are watched can depend on the minimum), it
        takes their minimums and the pairs' motion bounds are reset; the buffers and the
        last step's records stay. False when the pairs differ, or the robot changed since
        they were built (the caller rebuilds).
        """
        if self._layout_key(self._state) != self._synced_key:
            return False
        ps, lowered = build_pairs(
            self._robot, self._gs, self._include, self._exclude, self._min_distance,
            strict=False,
        )  # fmt: skip
        old = self._pairs
        if ps.names != old.names or not np.array_equal(ps.pairs, old.pairs):
            return False
        if self._rec[1] and self._rec_minimums is None:  # (the last step's, for its records)
            self._rec_minimums = old.pf[:, ck.PF_MIN].copy()
        ps.restore_minimums(saved)
        old.default_min[:] = ps.default_min
        old.follows[:] = ps.follows
        old.pf[:, ck.PF_MIN] = ps.pf[:, ck.PF_MIN]
        old.pf[:, ck.PF_PENDING] = ps.pf[:, ck.PF_PENDING]
        old.reset_motion()
        self._warn_margins(lowered)
        return True

    def _step_minimum(self, k: int) -> float:
        """Pair ``k``'s minimum [m] in the last step (a margin changed since is not its)."""
        minimums = self._rec_minimums
        return float((self._pairs.pf[:, ck.PF_MIN] if minimums is None else minimums)[k])

    @_guarded
    def restorable_margin(self, dq: np.ndarray, dt: float, target: float) -> float:
        """The largest global ``min_distance`` [m] up to ``target`` no pair would start below.

        After a step of ``dq`` for ``dt`` [s], each pair's distance is estimated from
        below (:meth:`_after_step`), less the recovery deadband (at least 10 µm: the
        rows are first order). Only pairs whose minimum is the global margin's bind it:
        not a pair with a minimum of its own (set by name, an obstacle's); a robot pair
        binds a margin at or below its largest sampled distance, and above it only if
        it would start below the lowered minimum it then gets (half that distance).
        Below the current margin when a pair is already closer than that.

        Raises:
            ShapeError, NonFiniteInput, InvalidInput: A bad ``dq``, ``dt`` or ``target``.
        """
        dq = _validate.bounded_vector(dq, self._robot.nv, _validate.MAX_MAGNITUDE, "dq")
        dt = _validate.positive_float(dt, "dt")
        target = _validate.positive_float(target, "target", allow_zero=True)
        ps = self._pairs
        if not len(ps):
            return target
        after = self._after_step(dq, dt) - max(self.recovery_deadband, 1e-5)
        highest = np.full(len(ps), np.inf)
        robot = ps.robot_index >= 0
        if robot.any():
            highest[robot] = self._robot.sampled_pair_distance_range()[1][ps.robot_index[robot]]
        own = ~np.isnan(self._gs.obstacle_min[ps.pairs[:, 1]])
        candidates = ps.follows & ~own & (after < target)
        margin = target
        while True:  # (a lower margin can make more robot pairs follow it: a few rounds)
            binds = candidates & (after < margin) & ((highest >= margin) | (after < 0.5 * highest))
            if not binds.any():
                return margin
            margin = float(after[binds].min())
            if not margin >= 0.0:  # (a pair never measured, or one already touching)
                return min(self._min_distance, target) if math.isinf(margin) else 0.0

    def _after_step(self, dq: np.ndarray, dt: float) -> np.ndarray:
        """Each watched pair's distance [m] after a step of ``dq`` for ``dt`` [s], from below.

        From the present configuration: a step solved ahead of it
        (:meth:`set_solve_offset`, a control loop) measured the pairs there. A pair with
        rows in the last step: its distance, less what the offset carried it apart
        (``C . offset`` when positive, as the rows guard it), plus its witness row's
        rate times ``dt`` (first order), never more than its distance before (a pair
        moving apart keeps that). A pair without rows: its distance bound of the last
        step less what its levers let the offset and the step close
        (``lever . (|offset| + |dq| dt)``). A pair with an obstacle also loses what the
        obstacle can move meanwhile (:meth:`_obstacle_moves`).
        """
        ps, C, offset = self._pairs, self._last_rows[0], self._offset
        moves = self._obstacle_moves(dt)
        after = ps.pf[:, ck.PF_LOW] - ps.lever @ (np.abs(dq) * dt + np.abs(offset)) - moves
        distances = self.last_distances.tolist()
        for h, (row, k) in enumerate(zip(self._witness_rows(), self.last_pairs, strict=True)):
            ahead = max(0.0, float(C[row] @ offset))
            after[k] = distances[h] - ahead + min(0.0, float(C[row] @ dq) * dt) - moves[k]
        return after

    def _obstacle_moves(self, dt: float) -> np.ndarray:
        """How far each pair's obstacle can move toward it by the next step [m] (0: none).

        Per obstacle: the larger of its displacement over the last step and its speed
        (given or observed; the angular part at its farthest point) times ``dt`` plus the
        lead a control loop predicts obstacles over (:attr:`obstacle_lead`). A plane or
        halfspace has no farthest point: its rotation counts as observed (a rotated one
        moved without bound), its angular velocity does not.
        """
        ps = self._pairs
        slot = self._gs.slot[ps.pairs[:, 1]]
        moves = np.zeros(len(ps))
        on = slot >= 0
        if not on.any() or not len(self._disp):
            return moves
        vel = self._obs_vel
        speed = np.linalg.norm(vel[:, :3], axis=1)
        spin = np.linalg.norm(vel[:, 3:], axis=1)
        turning = (spin > 0.0) & np.isfinite(ps.reach)
        speed[turning] += spin[turning] * ps.reach[turning]
        per_obstacle = np.maximum(self._disp, speed * (dt + self._lead))
        moves[on] = per_obstacle[slot[on]]
        return moves

    @_guarded
    def binding(self, dq: np.ndarray) -> bool:
        """Whether the last step's rows held the joint velocity ``dq`` back at a margin.

        True when a pair was below its minimum, or when a row of a pair within
        :data:`HELD_FRACTION` of its minimum distance above it is at its bound or below
        it for ``dq`` [rad/s or m/s] (within 1e-6 of the bound's size): the pair is held
        at its margin. A row that only slows a pair farther away (the damper of an
        approach), and a step without rows, do not count.

        Raises:
            ShapeError, NonFiniteInput, InvalidInput: A bad ``dq``.
        """
        dq = _validate.bounded_vector(dq, self._robot.nv, _validate.MAX_MAGNITUDE, "dq")
        rows, hits, C, lower = self._rec
        if not hits:
            return False
        hit = self._sel[10][:hits]
        slack = hit[:, ck.HF_SLACK].tolist()
        if min(slack) < 0.0:
            return True
        ps, distances = self._pairs, hit[:, ck.HF_DIST].tolist()
        near = {
            (int(ps.pairs[k, 0]), int(ps.pairs[k, 1]))
            for k, d, s in zip(self.last_pairs, distances, slack, strict=True)
            if s <= HELD_FRACTION * (d - s)
        }
        geometries = self._row_geoms
        for r in range(rows):
            bound = float(lower[r])
            if (int(geometries[r, 0]), int(geometries[r, 1])) not in near:
                continue
            if math.isfinite(bound) and float(C[r] @ dq) <= bound + 1e-6 * (1.0 + abs(bound)):
                return True
        return False

    # -- steps ---------------------------------------------------------------------------------
    def max_rows(self) -> int:
        """A witness row and up to two patch sides of support rows per pair with rows.

        ``max_constraints`` pairs, or every watched pair when more of them may cross
        their limit within the step (those are never dropped).
        """
        state = self._sync()
        self._sized_for = (state, self._synced_key)  # (what write() uses)
        return max(self.settings._max_constraints, self._pairs.pairs.shape[0]) * _ROWS_PER_PAIR

    def _rows_needed(self) -> int:
        """Rows the current pair set may write in one step (see :meth:`max_rows`)."""
        return max(self.settings._max_constraints, len(self._pairs)) * _ROWS_PER_PAIR

    @_guarded
    def reset(self) -> None:
        """Forget the broadphase's temporal state (a new motion starts)."""
        self._pairs.reset_motion()
        self._step = 0
        self._q_last = None
        self._cfg[ck.CFG_OBS_SEEN] = 0.0

    def _clear_records(self) -> None:
        self._rec: tuple[int, int, np.ndarray, np.ndarray] = (0, 0, _NO_ROWS, _NO_BOUNDS)
        self._rec_minimums = None

    # -- the last step's records (read from the step's buffers when asked) ---------------------
    # Read them between steps: from the thread that steps, or holding the engine's lock
    # (``solver.engine.lock``) while another thread steps.
    @property
    def last_pairs(self) -> list[int]:
        """Watched-pair indices of the pairs with rows in the last step, most urgent first."""
        return self._sel[9][: self._rec[1]].tolist()

    def _hit_column(self, column: int) -> np.ndarray:
        return self._sel[10][: self._rec[1], column].copy()

    @property
    def last_distances(self) -> np.ndarray:
        """Distance [m] of each pair of :attr:`last_pairs` (a copy)."""
        return self._hit_column(ck.HF_DIST)

    @property
    def last_slack(self) -> np.ndarray:
        """Distance minus minimum distance [m] of each pair of :attr:`last_pairs`."""
        return self._hit_column(ck.HF_SLACK)

    @property
    def last_closing(self) -> np.ndarray:
        """Closing speed bound [m/s] of each pair of :attr:`last_pairs`."""
        return self._hit_column(ck.HF_CLOSING)

    @property
    def last_extra_pairs(self) -> int:
        """Pairs beyond ``max_constraints`` given rows because they could cross their limit."""
        return int(self._counts[ck.N_EXTRA]) if self._rec[1] else 0

    @property
    def last_row_geometries(self) -> np.ndarray:
        """Geometry indices ``(rows, 2)`` of each row of the last step (a view)."""
        return self._row_geoms[: self._rec[0]]

    @property
    def last_row_points(self) -> np.ndarray:
        """World point [m] on the first geometry of each row of the last step (a view)."""
        return self._row_points[: self._rec[0]]

    @property
    def last_row_normals(self) -> np.ndarray:
        """Unit normal of each row of the last step (a view)."""
        return self._row_normals[: self._rec[0]]

    @property
    def _last_rows(self) -> tuple[np.ndarray, np.ndarray]:
        rows, _, C, lower = self._rec
        return C[:rows], lower[:rows]

    def _accel(self, dt: float) -> None:
        """Closing the acceleration limits allow per pair in one step [m] (cached per dt)."""
        key = (dt, id(self._pairs))
        if self._accel_key != key:
            amax = np.minimum(self._robot.acceleration_limits, _UNBOUNDED_ACCELERATION)
            self._pairs.pf[:, ck.PF_ACCEL] = (self._pairs.lever @ amax) * (dt * dt)
            self._accel_key = key

    def _joint_motion(self) -> np.ndarray:
        """``|dq|`` since the last step (zeros at the first)."""
        q = self._kin.q
        dq = self._dq_abs
        if self._q_last is None:
            dq.fill(0.0)
        else:
            np.abs(self._kin.difference(self._q_last, q, out=dq), out=dq)
        self._q_last = q
        return dq

    def _obstacle_motion(self, state: WorldState) -> None:
        """Obstacle displacements and velocities since the last step (the staged path).

        The one-call path has the step kernel make the same call
        (:func:`~stackik.constraints._collision_kernel.advance_obstacles`, from
        :func:`~stackik.constraints._collision_kernel.collision_step_ws`).
        """
        ck.advance_obstacles(
            (state.rotations, state.translations), state.velocity_known,
            (state.linear_velocity, state.angular_velocity), self._obs_prev, self._pairs.reach,
            self._cfg, (self._obs_vel, self._disp, self._obs_extra),
        )  # fmt: skip

    def set_solve_offset(self, delta_v: np.ndarray | None) -> None:
        """Tell the constraint that steps are solved ``delta_v`` ahead of the present.

        ``delta_v`` (size nv) is the tangent displacement from the present configuration
        to the one the solver's kinematics hold (a control loop solving where its
        braking leads). Each row then also guards the present configuration, to first
        order: a pair the motion carries apart is held at its present, smaller
        distance. None (or zeros): the step is solved at the present.
        """
        if delta_v is None:
            self._offset[:] = 0.0
        else:
            self._offset[:] = _validate.vector(delta_v, self._robot.nv, "delta_v")

    @property
    def obstacle_lead(self) -> float:
        """Horizon [s] over which approaching obstacles are predicted.

        A pair whose obstacle closes in at ``c`` [m/s] is damped on the gap it will
        have after this time, ``gap - c lead`` (0: the present gap). A control loop that
        solves at the configuration its braking leads to
        (:class:`~stackik.control.ControlLoop`) sets it to its braking time, so the
        pairs it guards are the robot and the obstacles both where they will be.
        Obstacles moving away are never credited with their motion.
        """
        return self._lead

    @obstacle_lead.setter
    def obstacle_lead(self, seconds: float) -> None:
        self._lead = _validate.positive_float(seconds, "obstacle_lead", allow_zero=True)

    def write_rows(self, dt: float, C: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> int:
        """Damper rows for the most urgent pairs within the activation distance.

        ``C``, ``lower`` and ``upper`` have room for :meth:`max_rows` rows, asked for in
        the same step (a layout change by another thread in between takes effect at the
        next step: the step uses the snapshot the rows were sized for). The public
        :meth:`write` asks :meth:`max_rows` itself and checks the buffers first.
        """
        state = self._step_state()
        self.exact_queries = self.listed_pairs = self.skipped_queries = 0
        if not self._pairs.pairs.shape[0]:
            self._clear_records()
            return 0
        self._step += 1
        self._accel(dt)
        cfg = self._fill_cfg(dt)
        dq = self._joint_motion()
        oMi = self._kin.joint_placements()
        gs = self._gs  # (the pipeline's set for the step's layout: _step_state synced it)
        timed = self.settings._refinement_budget_us > 0  # (the queries' cost is measured)
        spent = 0.0
        if gs.has_meshes:
            self._obstacle_motion(state)
            self._pipeline.place(oMi, state)
            spent = self._staged_step(gs, state, dq, cfg, C, lower, timed)
        elif timed:
            spent = self._timed_call(gs, state, dq, oMi, C, lower)
        else:
            self._one_call(gs, state, dq, oMi, C, lower)
        return self._finish(spent, C, lower, upper)

    def _one_call(
        self,
        gs: GeometrySet,
        state: WorldState,
        dq: np.ndarray,
        oMi: np.ndarray,
        C: np.ndarray,
        lower: np.ndarray,
    ) -> None:
        """The whole step in one compiled call (no triangle meshes), obstacle motion included."""
        J = self._kin.joint_jacobians_view()
        ws = self._workspace(gs)
        ck.collision_step_ws(
            ws, dq, oMi, state.rotations, state.translations, state.velocity_known,
            state.linear_velocity, state.angular_velocity, J, C, lower,
        )  # fmt: skip

    def _timed_call(
        self,
        gs: GeometrySet,
        state: WorldState,
        dq: np.ndarray,
        oMi: np.ndarray,
        C: np.ndarray,
        lower: np.ndarray,
    ) -> float:
        """:meth:`_one_call` in three calls, the exact queries timed (a query budget).

        The same results. Returns the queries' time [s]; 0.0 while the kernels run as
        plain Python, or when the compiled record was made in this step (its kernels'
        first calls may load them).
        """
        J = self._kin.joint_jacobians_view()
        made = self._ws[3]
        ws = self._workspace(gs)
        kept = ck.select_queries_ws(
            ws, dq, oMi, state.rotations, state.translations, state.velocity_known,
            state.linear_velocity, state.angular_velocity,
        )  # fmt: skip
        t0 = time.perf_counter()
        ck.run_queries_ws(ws, kept)
        spent = time.perf_counter() - t0
        ck.hits_and_rows_ws(ws, kept, state.translations, J, C, lower)
        return spent if ws is made else 0.0

    def _workspace(self, gs: GeometrySet) -> object:
        """The layout's arrays as the step kernel's record.

        Once kernels run compiled, one compiled record, kept until the geometry set, the
        pairs or the buffers are replaced (a layout change, or :meth:`restore` putting
        back those of a snapshot); while they run as plain Python, the
        :class:`~stackik.constraints._collision_kernel.LayoutArrays` themselves (not
        kept: the switch to compiled code makes the record).
        """
        ps, work = self._pairs, self._work
        made = self._ws
        if made[0] is gs and made[1] is ps and made[2] is work:
            return made[3]
        geometry, shapes = self._kernel_tables(gs)
        obstacles = (self._obs_prev, ps.reach)  # (read by the step's obstacle motion)
        arrays = ck.LayoutArrays(
            (ps.lever, ps.pairs, ps.pf, ps.pi, self._cfg, self._counts),
            (gs.joint, gs.local_rot, gs.local_trans),
            geometry,
            shapes,
            (gs.slot, self._obs_vel, self._disp, self._obs_extra, self._offset, *obstacles),
            self._columns,
            work,
            self._sel,
            (self._row_geoms, self._row_points, self._row_normals),
        )
        if not _jit.is_compiled():
            return arrays
        from ._collision_ws import new_workspace  # (imports numba: compiled kernels only)

        ws = new_workspace(*arrays)
        self._ws = (gs, ps, work, ws)
        return ws

    def _kernel_tables(self, gs: GeometrySet) -> tuple[tuple, tuple]:
        """:meth:`_geometry_tuple` and :meth:`_shapes_tuple` of ``gs`` (kept while current)."""
        cached = self._tables
        if cached[0] is not gs:
            cached = self._tables = (gs, self._geometry_tuple(gs), self._shapes_tuple(gs))
        return cached[1], cached[2]

    def _geometry_tuple(self, gs: GeometrySet) -> tuple[np.ndarray, ...]:
        t = gs.shapes
        p = self._pipeline
        return (t.kind, t.params, p.rot, p.trans, gs.sup_points, gs.sup_offset, gs.sup_radius)

    @staticmethod
    def _shapes_tuple(gs: GeometrySet) -> tuple[np.ndarray, ...]:
        t = gs.shapes
        return (t.kind, t.params, t.vstart, t.verts, t.center, t.radius)

    def _staged_step(
        self,
        gs: GeometrySet,
        state: WorldState,
        dq: np.ndarray,
        cfg: np.ndarray,
        C: np.ndarray,
        lower: np.ndarray,
        timed: bool = False,
    ) -> float:
        """The step of :func:`collision_step` in stages, with coal for triangle meshes.

        Returns the time [s] of the exact queries (coal's included) when ``timed`` and
        the kernels run compiled, else 0.0.
        """
        ps, p = self._pairs, self._pipeline
        listed, query, dist, witness, hit_k, hit_q, hit_f = self._work
        t = gs.shapes
        counts = self._counts
        count = ck.advance_bounds(
            dq, ps.lever, ps.pairs, gs.slot, (self._disp, self._obs_extra), ps.pf, ps.pi, cfg,
            listed,
        )  # fmt: skip
        counts[ck.N_LISTED] = count
        n = ck.sphere_filter(
            listed, count, ps.pairs, p.rot, p.trans, t.center, t.radius, ps.pf, ps.pi, cfg, query
        )
        kept = ck.apply_budget(query, n, ps.pf, cfg)
        counts[ck.N_SKIPPED] = n - kept
        t0 = time.perf_counter()
        ck.exact_queries(
            query, kept, ps.pairs, t.kind, t.params, t.vstart, t.verts, p.rot, p.trans, dist,
            witness, ps.pf, ps.pi, int(cfg[ck.CFG_STEP]),
        )  # fmt: skip
        for i in np.flatnonzero(np.isnan(dist[:kept])):
            a, b = (int(x) for x in ps.pairs[query[i]])
            dist[i] = mesh_distance(gs, a, b, p.rot, p.trans, witness[i])
        spent = time.perf_counter() - t0 if timed and _jit.is_compiled() else 0.0
        counts[ck.N_QUERIES] = kept
        nh = ck.record_hits(query, kept, dist, ps.pf, ps.pi, cfg, hit_k, hit_q, hit_f)
        ck.select_and_rows(
            nh, (hit_k, hit_q, hit_f, witness), ps.pairs, ps.pf, ps.pi, cfg,
            self._kernel_tables(gs)[0], (gs.slot, state.translations, self._obs_vel, self._offset),
            self._kin.joint_jacobians_view(), self._columns, self._sel,
            (C, lower, self._row_geoms, self._row_points, self._row_normals), counts,
        )  # fmt: skip
        return spent

    def _finish(self, spent: float, C: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> int:
        """The step's counts: the query cost, the ``last_*`` records; return its row count.

        ``spent`` [s] is the time of the step's exact queries alone (0.0: not measured).
        Their per-query cost, clipped to :data:`_QUERY_US_RANGE` and smoothed (a moving
        average), turns a time budget into a query count at the next steps; the first
        step after a rebuild or :meth:`reset` is not measured (its kernels may be loaded
        on their first call). The counts are read in one pass (a list of ints).
        """
        counts = self._counts.tolist()
        queries = counts[ck.N_QUERIES]
        self.exact_queries = queries
        self.skipped_queries = counts[ck.N_SKIPPED]
        self.listed_pairs = counts[ck.N_LISTED]
        if spent > 0.0 and queries and self._step > 1:
            low, high = _QUERY_US_RANGE
            cost = min(max(spent * 1e6 / queries, low), high)
            self._query_us += _QUERY_US_WEIGHT * (cost - self._query_us)
        rows = counts[ck.N_ROWS]
        self._rec = (rows, counts[ck.N_HITS], C, lower)
        self._rec_minimums = None
        upper[:rows] = np.inf
        return rows

    def step_fraction(self, delta_v: np.ndarray) -> float:
        """Largest fraction of the displacement ``delta_v`` no pair without a row can cross.

        A pair without a row in the last step is at least its distance bound ``d_low``
        apart and closes by at most ``lever . |delta|``: the step is scaled so that this
        stays within ``d_low - min_distance`` (conservative advancement). Pairs with rows
        are bounded by them. Long steps (position IK) cannot tunnel through an obstacle.
        """
        ps = self._pairs
        nv = self._robot.nv
        delta = _validate.bounded_vector(delta_v, nv, _validate.MAX_MAGNITUDE, "delta_v")
        if not len(ps):
            return 1.0
        motion = ps.lever @ np.abs(delta)
        slack = ps.pf[:, ck.PF_LOW] - ps.pf[:, ck.PF_MIN]
        free = np.ones(len(ps), dtype=bool)
        free[self.last_pairs] = False
        crossing = free & (motion > slack)
        if not crossing.any():
            return 1.0
        return float(np.clip(np.min(slack[crossing] / motion[crossing]), 0.0, 1.0))

    def violation(self, feasible: bool = True) -> str | None:
        """The deepest pair below its minimum distance at the last step, or None.

        A pair below ``min_distance`` by more than :data:`VIOLATION_TOLERANCE` is always
        among the step's hits: its distance bound is below its minimum, so no query limit
        (a time budget, ``nearest_points_all_pairs=False``) leaves its exact query out,
        and it is inside its activation distance and ranked most urgent. The message
        names it with its distance and minimum, and says what the step does about it: it
        pushes the pair out at the recovery rate, or, when no joint velocity changes the
        pair's distance (its rows are zeros), cannot.

        Args:
            feasible: Whether the step satisfied its constraint rows. False (the solver
                returned the least-violating step of an empty constraint set): the
                message says the rows ask for the recovery but the step may fall short
                of it, another pair may even close.
        """
        hits = self._rec[1]
        if not hits or min(self._sel[10][:hits, ck.HF_SLACK].tolist()) >= -VIOLATION_TOLERANCE:
            return None  # (the common case, without the pair lookup)
        found = self._deepest_violation(self.last_slack, self.last_distances, self._sel[9][:hits])
        if found is None:
            return None
        message, k = found
        if not self._rows_bound(k):
            return message + self._unmoved_note(k)
        if feasible:
            return f"{message}: the step pushes it out at the recovery rate"
        return (
            f"{message}: its rows ask for the recovery rate, but the constraints admit no "
            "step together, so the least-violating step may fall short of it"
        )

    def violation_at(self, q: np.ndarray) -> str | None:
        """The deepest watched pair below its minimum distance at ``q``, or None.

        No side effects: a kinematics cache and placements of its own.
        """
        d = self.distances_at(q)
        found = self._deepest_violation(d - self._requested_minimums(), d, np.arange(d.size))
        if found is None:
            return None
        message, k = found
        return message if self._moved_by_a_joint(k) else message + self._unmoved_note(k)

    def _deepest_violation(
        self, gap: np.ndarray, distance: np.ndarray, pairs: np.ndarray
    ) -> tuple[str, int] | None:
        """The pair with the smallest ``gap`` when it is a violation: its message and index.

        ``gap`` is distance minus minimum [m] of the pairs ``pairs`` (watched-pair
        indices) at ``distance`` [m]; None when no pair is a violation.
        """
        if not gap.size:
            return None
        i = int(np.argmin(gap))
        if gap[i] >= -VIOLATION_TOLERANCE:
            return None
        k = int(pairs[i])
        a, b = self._pairs.names[k]
        minimum = float(distance[i] - gap[i])  # (the minimum the gap was measured from)
        found = (
            f"collision pair {a}/{b} at distance {float(distance[i]) * 1e3:.2f} mm, below its "
            f"min_distance {minimum * 1e3:.2f} mm"
        )
        return found, k

    def _unmoved_note(self, k: int) -> str:
        """What a violation message adds for pair ``k`` when no joint velocity moves it apart."""
        a, b = self._pairs.names[k]
        return (
            ", and no joint velocity changes its distance, so no step can push it out (its "
            "rows bound nothing; if the contact is intended, leave the pair out: "
            f"exclude_pairs=[({a!r}, {b!r})])"
        )

    def _rows_bound(self, k: int) -> bool:
        """Whether the last step's rows of watched pair ``k`` bound the step (not all zero)."""
        nrows, _, C, _ = self._rec
        mine = np.all(self._row_geoms[:nrows] == self._pairs.pairs[k], axis=1)
        return bool(C[:nrows][mine].any())

    def _moved_by_a_joint(self, k: int) -> bool:
        """Whether a joint moves one geometry of watched pair ``k`` and not the other."""
        return not self._same_support(self._pairs.pairs[k : k + 1])[0]

    def _unmoved_pairs(self) -> np.ndarray:
        """Watched pairs whose geometries the same joints move (or none): rows of zeros.

        A fixed base against an obstacle, say: no joint velocity changes their distance,
        which the step's rows (:func:`~._collision_kernel.release_fixed_rows`) and the
        violation messages take into account.
        """
        return np.flatnonzero(self._same_support(self._pairs.pairs))

    def _same_support(self, pairs: np.ndarray) -> np.ndarray:
        """Per geometry pair ``(m, 2)``: whether the same joints move both geometries."""
        support = self._columns[0]
        return np.all(support[pairs[:, 0]] == support[pairs[:, 1]], axis=1)

    def placements(self) -> tuple[np.ndarray, np.ndarray]:
        """World rotations ``(n, 3, 3)`` and positions ``(n, 3)`` [m] at the last step.

        Every geometry: robot geometries, attached objects, obstacles (copies).
        """
        return self._pipeline.rot.copy(), self._pipeline.trans.copy()

    # -- inspection -------------------------------------------------------------------------------
    def _witness_rows(self) -> list[int]:
        """The first row (the witness row) of each pair with rows in the last step."""
        geoms = self.last_row_geometries
        out, row = [], 0
        pairs = self._pairs.pairs
        for k in self.last_pairs:
            out.append(row)
            row += 1
            while row < len(geoms) and tuple(geoms[row]) == tuple(pairs[k]):
                row += 1
        return out

    @_guarded
    def debug_info(self) -> list[CollisionDebugInfo]:
        """Per pair with rows in the last step: witness points, distance, row, bound."""
        C, lower = self._last_rows
        gs, ps = self._gs, self._pairs
        witness = self._sel[7]  # p2 of each chosen hit
        out = []
        for h, (row, k) in enumerate(zip(self._witness_rows(), self.last_pairs, strict=True)):
            a, b = (int(x) for x in ps.pairs[k])
            out.append(
                CollisionDebugInfo(
                    geometry_a=gs.names[a],
                    geometry_b=gs.names[b],
                    link_a=gs.links[a],
                    link_b=gs.links[b],
                    distance=float(self.last_distances[h]),
                    min_distance=self._step_minimum(k),
                    point_a=self._row_points[row].copy(),
                    normal=self._row_normals[row].copy(),
                    point_b=witness[h].copy(),
                    jacobian=C[row].copy(),
                    lower_bound=float(lower[row]),
                    active=True,
                )
            )
        return out

    def _probe(
        self, q: np.ndarray, state: WorldState
    ) -> tuple[CollisionPipeline, GeometrySet, Kinematics]:
        """A pipeline of its own placed at ``q`` with the snapshot ``state``.

        ``state`` is the one the pairs were synced with: a layout published meanwhile by
        another thread cannot shift the pair indices. No state of this constraint changes.
        """
        kin = self._robot.create_kinematics(q)
        probe = CollisionPipeline(self._robot, self._pipeline.world)
        gs = probe.place(kin.joint_placements(), state)
        return probe, gs, kin

    @_guarded
    def distances_at(self, q: np.ndarray) -> np.ndarray:
        """Exact distances [m] of the watched pairs at ``q`` (no side effects)."""
        state = self._sync()
        probe, _, _ = self._probe(q, state)
        return probe.distances(self._pairs.pairs)

    @_guarded
    def debug_at(self, q: np.ndarray, dt: float) -> list[CollisionDebugInfo]:
        """Every watched pair at ``q`` with its witness row, nearest first (no side effects).

        Runs on a kinematics cache and placements of its own: this constraint's
        step-to-step state (broadphase, learned margins) is neither read nor changed, so
        each row is the damper a first step at ``q`` would write for its pair.
        """
        dt = _validate.positive_float(dt, "dt")
        state = self._sync()
        probe, gs, kin = self._probe(q, state)
        ps = self._pairs
        n = len(ps)
        witness = np.zeros((n, 9))
        dist = probe.distances(ps.pairs, witness)
        hold = ps.pf[:, ck.PF_MIN] + self.recovery_deadband
        cfg = self._fill_cfg(dt).copy()
        d_eff = np.array([ck.recovery_distance(d, h, cfg) for d, h in zip(dist, hold, strict=True)])
        C, lower = np.zeros((max(n, 1), self._robot.nv)), np.zeros(max(n, 1))
        records = (
            np.zeros((max(n, 1), 2), np.int64), np.zeros((max(n, 1), 3)), np.zeros((max(n, 1), 3))
        )  # fmt: skip
        rows = ck.contact_rows(
            kin.joint_jacobians_view(), self._columns, ps.pairs[:, 0].copy(),
            ps.pairs[:, 1].copy(), dist, d_eff, hold, witness[:, 6:9].copy(),
            witness[:, 0:3].copy(), witness[:, 3:6].copy(), gs.shapes.kind, gs.shapes.params,
            probe.rot, probe.trans, gs.sup_points, gs.sup_offset, gs.sup_radius, np.zeros(n),
            self.gain / dt, self.approach_deceleration, ck.PATCH_DIRECTIONS, C, lower, *records,
        )  # fmt: skip
        assert rows == n
        ck.obstacle_velocity_bounds(
            rows, records, gs.slot, state.translations, self._first_step_velocities(state), cfg,
            lower,
        )  # fmt: skip
        lower[:rows][~C[:rows].any(axis=1)] = -np.inf  # (the step's ck.release_fixed_rows)
        active = dist < ps.pf[:, ck.PF_MIN] + self.activation
        out = [
            CollisionDebugInfo(
                geometry_a=gs.names[int(a)],
                geometry_b=gs.names[int(b)],
                link_a=gs.links[int(a)],
                link_b=gs.links[int(b)],
                distance=float(dist[k]),
                min_distance=float(ps.pf[k, ck.PF_MIN]),
                point_a=witness[k, 0:3].copy(),
                point_b=witness[k, 3:6].copy(),
                normal=witness[k, 6:9].copy(),
                jacobian=C[k].copy(),
                lower_bound=float(lower[k]),
                active=bool(active[k]),
            )
            for k, (a, b) in enumerate(ps.pairs)
        ]
        return sorted(out, key=lambda info: info.distance)

    def _first_step_velocities(self, state: WorldState) -> np.ndarray:
        """Each obstacle's velocity at a first step, ``(n, 6)`` [m/s, rad/s].

        The world's given or stamped velocity, else zero (no motion observed yet).
        """
        n = len(state.layout.obstacles)
        out = (np.zeros((n, 6)), np.zeros(n), np.zeros(n))
        ck.obstacle_motion(
            (state.rotations, state.translations), state.velocity_known,
            (state.linear_velocity, state.angular_velocity), np.zeros((n, 12)),
            self._pairs.reach, False, (1.0, 0.0, self.approach_deceleration), out,
        )  # fmt: skip
        return out[0]

    def describe_row(self, row: int) -> str:
        """The pair a row of the last step belongs to, its distance and its limit.

        Raises:
            InvalidInput: ``row`` is not an integer.
        """
        row = _row_index(row)
        if not 0 <= row < len(self.last_row_geometries):
            return super().describe_row(row)
        g1, g2 = (int(g) for g in self.last_row_geometries[row])
        names = self._gs.names
        ps = self._pairs
        for d, k in zip(self.last_distances, self.last_pairs, strict=True):
            if (int(ps.pairs[k, 0]), int(ps.pairs[k, 1])) == (g1, g2):
                return (
                    f"collision pair {names[g1]}/{names[g2]} at {1e3 * d:.2f} mm "
                    f"(min_distance {1e3 * self._step_minimum(k):.2f} mm)"
                )
        return f"collision pair {names[g1]}/{names[g2]}"

    # -- step-to-step state ----------------------------------------------------------------
    def __getstate__(self) -> dict[str, object]:
        state = super().__getstate__()
        state["_ws"] = (None, None, None, None)  # (a compiled record does not pickle)
        return state

    @_guarded
    def snapshot(self) -> dict[str, tuple[object, object]]:
        """The step-to-step state (see :meth:`Constraint.snapshot`), the pairs' included."""
        saved = super().snapshot()
        ps = self._pairs
        saved["_pairs"] = (ps, (ps.pf.copy(), ps.pi.copy()))
        return saved

    @_guarded
    def restore(self, snapshot: dict[str, tuple[object, object]]) -> None:
        """Put back the state saved by :meth:`snapshot`.

        Raises:
            InvalidInput: ``snapshot`` is not this constraint's :meth:`snapshot`.
        """
        _check_snapshot(snapshot)
        saved = snapshot.get("_pairs")
        if not (isinstance(saved, tuple) and len(saved) == 2 and isinstance(saved[0], PairSet)):
            raise InvalidInput(
                "not a collision constraint snapshot (CollisionConstraint.snapshot())",
                what="snapshot",
            )
        ps, arrays = saved
        assert isinstance(ps, PairSet) and isinstance(arrays, tuple)
        pf, pi = arrays
        ps.pf[...] = pf
        ps.pi[...] = pi
        super().restore(snapshot)
