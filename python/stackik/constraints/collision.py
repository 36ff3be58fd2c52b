"""CollisionConstraint: self-collision avoidance with velocity dampers.

For a pair at signed distance ``d`` with witness points ``p1`` (on geometry 1) and
``p2`` (on geometry 2) and unit normal ``n`` from 1 to 2, the distance rate is
``d_dot = n^T (J_p2 - J_p1) v``, where ``J_p`` is the world linear Jacobian of the point
``p`` moving with its geometry's joint: ``J_p = J_lin - [p]x J_ang`` over that joint's
supporting columns of Pinocchio's world joint Jacobian. Each near pair gives the
velocity-damper row (Faverjon and Tournassoud, 1987):

    n^T (J_p2 - J_p1) v >= -gain (d - min_distance) / dt

**Hold distance.** The damper aims at ``min_distance + recovery_deadband + b``, where
``b`` is what the pair has learned about its own linearization error: the row promises
a first-order distance after the step; when the next step finds the pair closer than
that promise (a curved surface slid along, a box edge rotating in), the shortfall
becomes ``b`` (it then decays by half every step it does not recur). A pair less than
half the deadband below its hold distance gets a zero right-hand side: it may not
approach, but is not pushed back, which would fight the tasks every step; deeper, it is
pushed back. So held and sliding contacts stay above ``min_distance``.

**Contact patches.** When two faces meet face-on, GJK returns one arbitrary point of the
closest patch, and a rotation can bring another patch point closer than that row sees.
So each near pair also gets rows at the *support points* of both shapes (box corners,
cylinder rim points, capsule end caps, hull vertices) lying within ``patch_tolerance``
of the closest distance, once the pair is within ``patch_tolerance`` of its limit (the
points extreme along 8 in-plane directions when the patch has more). A
support point ``s`` of geometry 1 is at least
``g_s = n . (p2 - s)`` from geometry 2 (which lies beyond the plane through ``p2``
normal to ``n``); the plane moves with geometry 2, and the exact rate of ``g_s`` is
``n^T (J_s^(2) - J_s^(1)) v``: the relative velocity at ``s`` of the two bodies. The row
is the same damper on ``g_s`` (symmetrically for geometry 2's points), except that it
never demands separation: ``g_s`` is only a lower bound of that point's distance, and
the witness row alone drives a pair that is too close apart.

**Broadphase.** Bounding spheres and temporal coherence: each geometry accumulates an
upper bound of how far it has moved since a pair's last check (``sum_k L_gk |dq_k|``
with configuration-independent levers ``L_gk`` from the bounding spheres and the joint
placements), so a pair known to be far stays unqueried until its bound says it could
be near; then a bounding-sphere test (a valid lower bound) runs before any exact
GJK/EPA query. Only pairs closer than ``min_distance + activation_margin`` produce rows,
for at most ``max_constraints`` pairs (the closest).
"""

from __future__ import annotations

import enum
import math
import time
import warnings
from collections.abc import Sequence

import coal
import numpy as np
import pinocchio as pin

from .. import _validate
from ..errors import CollisionMarginWarning, InvalidInput
from ..model import CollisionState, Kinematics, RobotModel
from ..model.collision import validate_pairs
from ..model.joints import JointKind
from ..results import CollisionDebugInfo
from ._collision_kernel import (
    SHAPE_BOX,
    SHAPE_CAPSULE,
    SHAPE_CYLINDER,
    SHAPE_PLANE,
    SHAPE_SPHERE,
    contact_rows,
    motion_broadphase,
)
from .base import Constraint, register_constraint

#: Support points per cylinder rim (the rim between two points is at most
#: ``r (1 - cos(pi / n))`` closer: 1.9 % of the radius for 16).
_RIM_POINTS = 16


class CollisionTuningMode(enum.Enum):
    """High-level presets of the collision constraint's cost/accuracy trade-off.

    ``PRECISE``: every candidate pair is queried exactly each step (the default).
    ``BALANCED``: the pair cache (full scan every 20 steps) on top of the motion bounds.
    ``SPEED``: the pair cache with a full scan every 50 steps and a 200 us budget on
    exact queries per step (the pairs with the smallest distance bound first).
    """

    PRECISE = "precise"
    BALANCED = "balanced"
    SPEED = "speed"


#: Acceleration standing in for an unbounded limit [m/s^2 or rad/s^2].
_UNBOUNDED_ACCELERATION = 1e6

#: Cap of a pair's learned linearization error [m] (see CollisionConstraint._hold).
MAX_LEARNED_ERROR = 0.01

#: Directions (evenly spaced in the contact plane) whose extreme support points are kept
#: when more points than this lie in a contact patch.
_PATCH_DIRECTIONS = 8


def _shape_code(geom: object) -> tuple[int, list[float]]:
    """Code and parameters of a primitive for the exact support-point distances [m]."""
    if isinstance(geom, coal.Sphere):
        return SHAPE_SPHERE, [geom.radius, 0.0, 0.0]
    if isinstance(geom, coal.Capsule):
        return SHAPE_CAPSULE, [geom.radius, geom.halfLength, 0.0]
    if isinstance(geom, coal.Cylinder):
        return SHAPE_CYLINDER, [geom.radius, geom.halfLength, 0.0]
    if isinstance(geom, coal.Box):
        return SHAPE_BOX, list(np.asarray(geom.halfSide, dtype=float))
    return SHAPE_PLANE, [0.0, 0.0, 0.0]


def _support_points(geom: object) -> tuple[np.ndarray, float]:
    """Local support points of a shape and the radius to add along the normal.

    Box corners, cylinder rim points, capsule segment ends (radius added), convex hull
    vertices; a sphere has none (its witness point is unique).
    """
    if isinstance(geom, coal.Box):
        h = np.asarray(geom.halfSide)
        signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
        return signs * h, 0.0
    if isinstance(geom, coal.Cylinder):
        a = np.linspace(0.0, 2 * np.pi, _RIM_POINTS, endpoint=False)
        ring = np.column_stack([geom.radius * np.cos(a), geom.radius * np.sin(a)])
        caps = [
            np.column_stack([ring, np.full(len(a), z)]) for z in (-geom.halfLength, geom.halfLength)
        ]
        return np.vstack(caps), 0.0
    if isinstance(geom, coal.Capsule):
        return np.array([[0.0, 0.0, -geom.halfLength], [0.0, 0.0, geom.halfLength]]), geom.radius
    if isinstance(geom, coal.ConvexBase):
        return np.array(geom.points()).reshape(-1, 3), 0.0
    return np.zeros((0, 3)), 0.0


@register_constraint
class CollisionConstraint(Constraint):
    """Keep every selected collision pair at least ``min_distance`` apart.

    Args:
        name: Constraint name.
        kinematics: Kinematics cache read (a solver's), or a robot (its own cache); the
            robot must have collision geometry.
        min_distance: Minimum separation [m], >= 0.
        include_pairs: Pairs (link or geometry names) to consider; empty = all active pairs.
        exclude_pairs: Pairs to ignore.
        nearest_points_all_pairs: Query every broadphase candidate exactly (True) or only
            the pair whose bounding spheres are closest (False, cheaper, less safe).
        max_constraints: Largest number of rows (closest pairs first).
        gain: Damper gain in (0, 1]; 1 lets a pair close the gap in one step.
        activation_margin: Pairs farther than ``min_distance + activation_margin`` [m]
            produce no row.
        patch_tolerance: When a pair is within this distance [m] of its limit, its support
            points within this distance of the closest distance get rows of their own
            (contact patches); 0 disables them.
        recovery_deadband: Width [m] of the band above ``min_distance`` in which a held
            pair is only kept from approaching further, not pushed back (the damper aims
            at ``min_distance + recovery_deadband`` plus the learned linearization
            error, see the module docstring).

    Raises:
        InvalidInput: The robot has no collision geometry or an argument is out of range.
        CollisionGeometryNotFound: A name in the pair lists has no collision geometry.
    """

    family = "collision"
    order = 10

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
    ) -> None:
        super().__init__(name, kinematics)
        col = self._robot.collision
        if col is None:
            raise InvalidInput("the robot has no collision geometry")
        self._configure(
            min_distance,
            max_constraints,
            gain,
            activation_margin,
            patch_tolerance,
            recovery_deadband,
        )
        self.nearest_points_all_pairs = bool(nearest_points_all_pairs)
        self._col = col
        self._state = CollisionState(col)
        self._gm = col.geom_model
        self._select_pairs(include_pairs, exclude_pairs)
        self._bounding_geometry()
        self._index_levers()
        self._reset_motion()
        cap = self.max_rows()
        self._row_geoms = np.empty((cap, 2), dtype=np.int64)
        self._row_points = np.empty((cap, 3))
        self._row_normals = np.empty((cap, 3))
        self.exact_queries = 0
        self._tuning_defaults()
        self.last_distances = np.zeros(0)
        self.last_pairs: list[int] = []
        self.last_slack = np.zeros(0)
        self.last_closing = np.zeros(0)
        self.last_row_geometries = self._row_geoms[:0]
        self.last_row_points = self._row_points[:0]
        self.last_row_normals = self._row_normals[:0]

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

        def non_negative(value: float, what: str) -> float:
            return _validate.positive_float(value, what, allow_zero=True)

        self.min_distance = non_negative(min_distance, "min_distance")
        self.activation_margin = non_negative(activation_margin, "activation_margin")
        self.patch_tolerance = non_negative(patch_tolerance, "patch_tolerance")
        self.recovery_deadband = non_negative(recovery_deadband, "recovery_deadband")
        self.max_constraints = _validate.count(max_constraints, "max_constraints")
        self.gain = _validate.in_range(gain, "gain", 0.0, 1.0, open_low=True)

    def _select_pairs(
        self, include_pairs: Sequence[tuple[str, str]], exclude_pairs: Sequence[tuple[str, str]]
    ) -> None:
        """The watched pairs: the included ones (all active when empty) minus the excluded."""
        col = self._col
        all_pairs = [(cp.first, cp.second) for cp in self._gm.collisionPairs]
        index = {p: k for k, p in enumerate(all_pairs)}

        def expand(pairs: Sequence[tuple[str, str]]) -> set[int]:
            out = set()
            for a, b in validate_pairs(pairs):
                for i in col.resolve_names(a):
                    for j in col.resolve_names(b):
                        k = index.get((min(i, j), max(i, j)))
                        if k is not None:
                            out.add(k)
            return out

        selected = expand(include_pairs) if include_pairs else set(range(len(all_pairs)))
        selected -= expand(exclude_pairs)
        pair_min = self._reachable_minimums(sorted(selected), all_pairs)
        self._pairs = np.array(sorted(pair_min), dtype=int)
        self._first = np.array([all_pairs[k][0] for k in self._pairs], dtype=int)
        self._second = np.array([all_pairs[k][1] for k in self._pairs], dtype=int)
        self._pair_min = np.array([pair_min[k] for k in self._pairs], dtype=float)
        self._pending: dict[int, float] = {}

    def _reachable_minimums(
        self, selected: list[int], all_pairs: list[tuple[int, int]]
    ) -> dict[int, float]:
        """Minimum distance of each watched pair, lowered where it can never be reached.

        A pair whose largest sampled distance (``RobotModel.sampled_pair_distance_range``)
        is below ``min_distance`` would make every step infeasible: its minimum becomes
        half that largest distance; a pair in collision in every sample is not watched.
        Both come with a :class:`~stackik.errors.CollisionMarginWarning` naming the pairs.
        """
        _, highest = self._robot.sampled_pair_distance_range()
        out: dict[int, float] = {}
        lowered: list[tuple[str, str, float, float]] = []
        names = [o.name for o in self._gm.geometryObjects]
        for k in selected:
            d_max = float(highest[k]) if k < len(highest) else np.inf
            d_min = self.min_distance
            if d_max < d_min:
                d_min = 0.5 * d_max if d_max > 0 else np.nan
                a, b = all_pairs[k]
                lowered.append((names[a], names[b], d_max, d_min))
            if not np.isnan(d_min):
                out[k] = d_min
        if lowered:
            self._warn_margins(lowered)
        return out

    def _warn_margins(self, lowered: list[tuple[str, str, float, float]]) -> None:
        lines = [
            f"{a}/{b}: never farther than {d_max * 1e3:.1f} mm"
            + (f", minimum lowered to {d * 1e3:.1f} mm" if d == d else ", not watched")
            for a, b, d_max, d in lowered
        ]
        message = (
            f"min_distance {self.min_distance} m can never hold for {len(lowered)} collision "
            "pair(s) (largest distance over sampled configurations): "
            + "; ".join(lines)
            + ". Exclude them in the SRDF (RobotModel.compute_collision_exclusions) or set "
            "their minimum with set_collision_pair_min_distance."
        )
        warnings.warn(CollisionMarginWarning(message, lowered), stacklevel=4)

    def _bounding_geometry(self) -> None:
        """Bounding spheres (centre in the geometry frame, radius) and support points [m]."""
        objs = self._gm.geometryObjects
        centers, radii, support, support_radius = [], [], [], []
        for o in objs:
            g = o.geometry
            g.computeLocalAABB()
            centers.append(np.array(g.aabb_center))
            radii.append(float(g.aabb_radius))
            pts, rad = _support_points(g)
            support.append(pts)
            support_radius.append(rad)
        self._centers_geom = np.array(centers).reshape(-1, 3)
        self._centers_joint = np.array(
            [o.placement.act(c) for o, c in zip(objs, self._centers_geom, strict=True)]
        ).reshape(-1, 3)
        self._radii = np.array(radii)
        self._sup_points = (
            np.vstack([pts.reshape(-1, 3) for pts in support]) if support else np.zeros((0, 3))
        )
        counts = [len(pts) for pts in support]
        self._sup_offset = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self._sup_radius = np.array(support_radius, dtype=float)
        self._rot = np.zeros((len(objs), 3, 3))
        self._trans = np.zeros((len(objs), 3))
        self._joint_of = np.array([o.parentJoint for o in objs], dtype=int)
        codes = [_shape_code(o.geometry) for o in objs]
        self._shape_kind = np.array([c for c, _ in codes], dtype=np.int64)
        self._shape_params = np.array([p for _, p in codes], dtype=float).reshape(-1, 3)

    @property
    def state(self) -> CollisionState:
        """This constraint's own collision query state (its ``GeometryData``)."""
        return self._state

    @property
    def pair_indices(self) -> np.ndarray:
        """Index in the robot's active pair list of each watched pair (-1: no longer active)."""
        self._sync_pairs()
        return self._pairs.copy()

    # -- per-pair thresholds -------------------------------------------------------------
    def _pair_indices(self, link_a: str, link_b: str) -> np.ndarray:
        col = self._col
        ia, ib = set(col.resolve_names(link_a)), set(col.resolve_names(link_b))
        hit = [
            k
            for k, (f, s) in enumerate(zip(self._first, self._second, strict=True))
            if (f in ia and s in ib) or (f in ib and s in ia)
        ]
        return np.array(hit, dtype=int)

    def set_pair_min_distance(
        self, link_a: str, link_b: str, min_distance: float, activate_when_clear: bool = True
    ) -> None:
        """Override ``min_distance`` [m] for the pairs between two links (or geometries).

        With ``activate_when_clear`` a larger override waits until the pair first
        reaches that clearance, so it never starts violated.
        """
        min_distance = _validate.positive_float(min_distance, "min_distance", allow_zero=True)
        for k in self._pair_indices(link_a, link_b):
            if activate_when_clear and min_distance > self._pair_min[k]:
                self._pending[int(k)] = float(min_distance)
            else:
                self._pair_min[k] = float(min_distance)
                self._pending.pop(int(k), None)

    # -- tuning (the EmbodiK collision knobs) -------------------------------------------------
    def _tuning_defaults(self) -> None:
        self.activation_multiplier = 0.0
        self.proximity_gating = True
        self.recovery_scale = 1.0
        self.max_separation_speed = math.inf
        self.refinement_budget_us = 0
        self.sphere_broadphase = True
        self.tuning_mode = CollisionTuningMode.PRECISE
        self.skipped_queries = 0
        self._cache: tuple[int, float, int] | None = None
        self._candidates: set[int] = set()
        self._witness: list[tuple[int, int, float, np.ndarray]] = []
        self._last_rows: tuple[np.ndarray, np.ndarray] = (np.zeros((0, 0)), np.zeros(0))

    @property
    def activation(self) -> float:
        """Effective activation margin [m]: pairs closer than their minimum plus this get rows.

        ``activation_multiplier * min_distance`` when proximity gating is on and the
        multiplier is > 0, else ``activation_margin``.
        """
        if self.proximity_gating and self.activation_multiplier > 0.0:
            return self.activation_multiplier * self.min_distance
        return self.activation_margin

    def set_activation_multiplier(self, multiplier: float) -> None:
        """Activation margin as a multiple of ``min_distance`` (``<= 0``: ``activation_margin``)."""
        value = _validate.real(multiplier, "multiplier")
        if not math.isfinite(value) or value > _validate.MAX_MAGNITUDE:
            raise InvalidInput(f"multiplier must be finite, got {multiplier!r}", what="multiplier")
        self.activation_multiplier = max(value, 0.0)

    def set_recovery_scale(self, scale: float) -> None:
        """Fraction in (0, 1] of the recovery speed a pair inside its minimum asks for."""
        self.recovery_scale = _validate.in_range(scale, "scale", 0.0, 1.0, open_low=True)

    def set_max_separation_speed(self, speed: float) -> None:
        """Cap [m/s] of the separation a non-penetrating pair asks for (inf: none)."""
        value = _validate.real(speed, "max_separation_speed")
        if not value > 0.0:  # inf allowed
            raise InvalidInput(
                f"max_separation_speed must be > 0, got {speed!r}", what="max_separation_speed"
            )
        self.max_separation_speed = value

    def set_refinement_budget_us(self, budget_us: int) -> None:
        """Budget [us] of exact queries per step (``<= 0``: none); the closest bounds first."""
        value = _validate.count(budget_us, "budget_us", minimum=-(2**31))
        self.refinement_budget_us = max(value, 0)

    def enable_pair_cache(
        self,
        enable: bool,
        full_refresh_interval: int = 20,
        candidate_distance_margin: float = 0.03,
        max_cached_candidates: int = 128,
    ) -> None:
        """Candidate caching between periodic full scans (see :meth:`_refresh_cache`)."""
        if not enable:
            self._cache = None
            self._candidates.clear()
            return
        self._cache = (
            _validate.count(full_refresh_interval, "full_refresh_interval"),
            _validate.positive_float(candidate_distance_margin, "candidate_distance_margin", True),
            _validate.count(max_cached_candidates, "max_cached_candidates"),
        )

    def set_tuning_mode(self, mode: CollisionTuningMode | str) -> None:
        """Apply a :class:`CollisionTuningMode` preset."""
        try:
            mode = CollisionTuningMode(mode)
        except ValueError:
            names = [m.value for m in CollisionTuningMode]
            raise InvalidInput(f"unknown tuning mode {mode!r}; use one of {names}") from None
        self.tuning_mode = mode
        self.sphere_broadphase = True
        if mode == CollisionTuningMode.PRECISE:
            self.enable_pair_cache(False)
            self.refinement_budget_us = 0
        elif mode == CollisionTuningMode.BALANCED:
            self.enable_pair_cache(True, 20, 0.03, 128)
            self.refinement_budget_us = 0
        else:
            self.enable_pair_cache(True, 50, 0.02, 64)
            self.refinement_budget_us = 200

    def _refresh_cache(self, threshold: np.ndarray) -> None:
        """Pair cache: a full scan every ``full_refresh_interval`` steps.

        In between, the candidates (pairs found within ``candidate_distance_margin`` of
        their activation distance) are queried every step, the closest first, up to the
        cap. The motion bounds still list every other pair that could come near, so the
        cache never misses a pair that can reach its activation distance.
        """
        if self._cache is None:
            return
        interval, _, cap = self._cache
        if self._step % interval == 0:
            self._d_low[self._pairs >= 0] = -np.inf
            self._candidates.clear()
            return
        keep = sorted(self._candidates, key=lambda k: self._d_exact[k])[:cap]
        self._candidates = set(keep)
        for k in keep:
            self._d_low[k] = min(self._d_low[k], threshold[k])

    def set_min_distance(self, min_distance: float) -> None:
        """Change the global ``min_distance`` [m]; per-pair overrides are kept.

        Pairs that can never be that far apart get a lowered minimum with a
        :class:`~stackik.errors.CollisionMarginWarning`, as at configuration.
        """
        new = _validate.positive_float(min_distance, "min_distance", allow_zero=True)
        old = self.min_distance
        follows = np.flatnonzero(self._pair_min == old)
        self.min_distance = new
        _, highest = self._robot.sampled_pair_distance_range()
        names = [o.name for o in self._gm.geometryObjects]
        lowered = []
        for k in follows:
            d_max = float(highest[self._pairs[k]]) if self._pairs[k] < len(highest) else np.inf
            self._pair_min[k] = new if d_max >= new else 0.5 * max(d_max, 0.0)
            if d_max < new:
                f, s = int(self._first[k]), int(self._second[k])
                lowered.append((names[f], names[s], d_max, float(self._pair_min[k])))
        if lowered:
            self._warn_margins(lowered)

    def clear_pair_min_distance(self, link_a: str, link_b: str) -> None:
        """Return the pairs between two links to the global ``min_distance``."""
        for k in self._pair_indices(link_a, link_b):
            self._pair_min[k] = self.min_distance
            self._pending.pop(int(k), None)

    def pair_min_distance_overrides(self) -> list[tuple[str, float]]:
        """Active overrides as ``("geom_a|geom_b", min_distance)``."""
        # Pinocchio's geometry vector rejects NumPy integers as indices: convert.
        objs = self._gm.geometryObjects
        return [
            (
                f"{objs[int(self._first[k])].name}|{objs[int(self._second[k])].name}",
                float(self._pair_min[k]),
            )
            for k in range(len(self._pairs))
            if self._pair_min[k] != self.min_distance
        ]

    def pair_names(self) -> list[tuple[str, str]]:
        """Pairs this constraint watches, as geometry names."""
        self._sync_pairs()
        objs = self._gm.geometryObjects
        return [
            (objs[int(f)].name, objs[int(s)].name)
            for f, s, k in zip(self._first, self._second, self._pairs, strict=True)
            if k >= 0
        ]

    # -- broadphase state ------------------------------------------------------------------
    def _index_levers(self) -> None:
        """Per-geometry motion levers and joint-support masks (configuration independent).

        ``lever[g, k]`` bounds how far a point of geometry g moves per unit of velocity
        coordinate k: 1 for translations; for rotations the largest distance from the
        joint's origin to the geometry's bounding sphere, at most the lengths of the joint
        placements along the path plus the sphere's offset and radius.
        """
        m = self._robot.model
        infos = self._robot.joint_infos  # by Pinocchio joint id - 1
        ng = len(self._radii)
        self._lever = np.zeros((ng, m.nv))
        self._support = np.zeros((ng, m.nv), dtype=np.bool_)
        self._rigid = np.zeros((ng, m.nv), dtype=np.bool_)  # joint carries g (not mimic)
        self._coupled = np.zeros((ng, m.nv), dtype=np.bool_)  # a mimic lever reaches g
        self._has_mimic = False
        offset = np.linalg.norm(self._centers_joint, axis=1) + self._radii
        step = [float(np.linalg.norm(m.jointPlacements[k].translation)) for k in range(m.njoints)]
        for g in range(ng):
            path = list(m.supports[int(self._joint_of[g])])[1:]  # joint ids from the root
            for pos, i in enumerate(path):
                L = sum(step[k] for k in path[pos + 1 :]) + offset[g]
                self._add_lever(g, infos[i - 1], L)
        self._pair_lever = self._pair_levers()

    def _pair_levers(self) -> np.ndarray:
        """Per pair, the levers of the joints that move its geometries relative to each other.

        A joint that carries both geometries (a common ancestor, not through a mimic
        coupling) moves them rigidly together: it cannot change their distance.
        """
        f, s = self._first, self._second
        shared = self._rigid[f] & self._rigid[s] & ~self._coupled[f] & ~self._coupled[s]
        return np.where(shared, 0.0, self._lever[f] + self._lever[s])

    def _add_lever(self, g: int, info: object, L: float) -> None:
        """Lever of one joint on the path of geometry ``g`` (``L``: its reach) [m]."""
        assert hasattr(info, "kind")
        kind, lo = info.kind, info.idx_v  # type: ignore[attr-defined]
        n = info.nv  # type: ignore[attr-defined]
        if kind == JointKind.MIMIC:
            self._lever[g, lo] += abs(info.mimic_scaling) * L  # type: ignore[attr-defined]
            self._support[g, lo] = True
            self._coupled[g, lo] = True
            self._has_mimic = True
            return
        self._support[g, lo : lo + n] = True
        self._rigid[g, lo : lo + n] = True
        if kind == JointKind.PRISMATIC:
            self._lever[g, lo : lo + n] += 1.0
        elif kind == JointKind.FREE_FLYER:
            self._lever[g, lo : lo + 3] += 1.0
            self._lever[g, lo + 3 : lo + 6] += L
        elif n == 1:  # revolute, bounded or continuous
            self._lever[g, lo] += L
        else:  # planar, spherical, composite: conservative
            self._lever[g, lo : lo + n] += L + 1.0

    def _reset_motion(self) -> None:
        """Forget every pair's last distance: the next step re-checks all of them."""
        npairs = len(self._pairs)
        self._step = 0
        self._exact_step = np.full(npairs, -2, dtype=np.int64)
        self._d_exact = np.full(npairs, np.inf)
        # A lower bound of each pair's distance [m] (unknown: -inf; unchecked pairs: inf).
        self._d_low = np.where(self._pairs >= 0, -np.inf, np.inf)
        self._step_motion = np.zeros(npairs)
        self._listed = np.zeros(npairs, dtype=np.int64)
        self._q_last: np.ndarray | None = None
        # Linearization error learned per pair (see _hold) [m].
        self._learned = np.zeros(npairs)
        self._promise = np.zeros(npairs)
        self._promise_step = np.full(npairs, -2, dtype=np.int64)

    def reset(self) -> None:
        """Forget the broadphase's temporal state (a new motion starts)."""
        self._reset_motion()

    def _sync_pairs(self) -> None:
        """Follow changes of the robot's pair list (SRDF, exclusions, reset).

        A changed pair list renumbers the pairs (and rebuilds this constraint's
        ``GeometryData``): re-resolve each watched pair's index, ``-1`` once the robot
        no longer checks it.
        """
        if not self._state.sync():
            return
        pairs = zip(self._first, self._second, strict=True)
        idx = [self._col.pair_index(int(f), int(s)) for f, s in pairs]
        self._pairs = np.array(idx, dtype=int)
        self._reset_motion()

    # -- rows ------------------------------------------------------------------------------
    def max_rows(self) -> int:
        """A witness row and up to two patch sides of support rows per pair with rows.

        ``max_constraints`` pairs, or every watched pair when more of them may cross
        their limit within the step (those are never dropped).
        """
        pairs = max(self.max_constraints, len(self._pairs))
        return pairs * (1 + 2 * _PATCH_DIRECTIONS)

    def write(self, dt: float, C: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> int:
        """Damper rows for the most urgent pairs within the activation distance."""
        self.last_distances, self.last_pairs, self.exact_queries = np.zeros(0), [], 0
        self.last_row_geometries = self._row_geoms[:0]
        if not len(self._pairs):
            return 0
        self._sync_pairs()
        self._step += 1
        threshold = self._pair_min + self.activation
        self._refresh_cache(threshold)
        count = self._broadphase(threshold)
        if count == 0:
            return 0
        kin = self._kin
        self._state.update_placements(kin.data)
        oMg = self._state.geom_data.oMg
        if self.sphere_broadphase:
            listed = self._sphere_test(oMg, count, threshold)
        else:
            listed = self._listed[:count].tolist()
        hits = self._exact(listed, dt, threshold)
        if not hits:
            return 0
        hits, must = self._select(hits)
        self.last_distances = np.array([h[0] for h in hits])
        self.last_pairs = [h[1] for h in hits]
        self.last_slack = np.array([h[3] for h in hits])
        self.last_closing = np.array([h[4] for h in hits])
        return self._assemble(hits, must, oMg, dt, C, lower, upper)

    def _select(self, hits: list) -> tuple[list, int]:
        """Order the hits by urgency; return them and how many are beyond the row budget.

        A hit is ``(d, slot, result, slack, closing)``: ``slack = d - d_min`` and
        ``closing`` a prediction of how much the pair closes during this step. A pair
        that can cross its limit within the step (``slack <= closing``) is never dropped,
        even past ``max_constraints``; the remaining budget goes to the pairs with the
        shortest time to violation ``slack / closing``.
        """
        must = [h for h in hits if h[3] <= h[4]]
        rest = [h for h in hits if h[3] > h[4]]
        must.sort(key=lambda h: (h[3], h[0]))
        rest.sort(key=lambda h: (h[3] / h[4] if h[4] > 0 else np.inf, h[0]))
        chosen = must + rest[: max(0, self.max_constraints - len(must))]
        return chosen, max(0, len(must) - self.max_constraints)

    def _broadphase(self, threshold: np.ndarray) -> int:
        """Advance the motion bounds; list the pairs that may be within ``threshold``."""
        kin = self._kin
        q = kin.q
        if self._q_last is None:
            dq_abs = np.zeros(kin.model.nv)
        else:
            dq_abs = np.abs(pin.difference(kin.model, self._q_last, q))
        self._q_last = q
        count = motion_broadphase(
            dq_abs, self._pair_lever, self._d_low, self._step_motion, threshold, self._listed
        )
        if self._pending:
            self._latch_pending()
        return int(count)

    def _sphere_test(self, oMg: object, count: int, threshold: np.ndarray) -> list[int]:
        """Listed pairs whose bounding spheres are within ``threshold`` (exact query next).

        A pair queried exactly in the previous step and found near skips the test: its
        spheres overlap the threshold again (the exact query is what it needs).
        """
        first, second = self._first, self._second
        recent = self._step - 1
        centers: dict[int, np.ndarray] = {}
        listed, gaps = [], []
        for k in self._listed[:count].tolist():
            if self.nearest_points_all_pairs and self._exact_step[k] == recent:
                listed.append(k)
                gaps.append(-np.inf)
                continue
            f, s = int(first[k]), int(second[k])
            for g in (f, s):
                if g not in centers:
                    centers[g] = oMg[g].act(self._centers_geom[g])  # type: ignore[index]
            dx, dy, dz = (centers[f] - centers[s]).tolist()
            gap = math.sqrt(dx * dx + dy * dy + dz * dz) - self._radii[f] - self._radii[s]
            if gap > threshold[k]:  # spheres apart: a valid lower bound, no exact query
                self._d_low[k] = gap
            else:
                listed.append(k)
                gaps.append(gap)
        if listed and not self.nearest_points_all_pairs:
            listed = [listed[int(np.argmin(gaps))]]
        return listed

    def _pair_accel(self, dt: float) -> np.ndarray:
        """How much more each pair may close in one step from the acceleration limits [m]."""
        amax = np.minimum(self._robot.acceleration_limits, _UNBOUNDED_ACCELERATION)
        return (self._pair_lever @ amax) * (dt * dt)

    def _exact(self, listed: list[int], dt: float, threshold: np.ndarray) -> list[tuple]:
        """Exact GJK/EPA distances of the listed pairs; those within activation are hits.

        Each hit also carries its slack ``d - d_min`` and the closing predicted for this
        step: the distance the pair closed during the last step (exact when it was queried
        then, else the pair's relative motion bound), plus what the acceleration limits
        add in one step (``sum_j L_j a_max,j dt^2`` over the pair's levers).
        """
        hits = []
        accel = self._pair_accel(dt)
        budget = self.refinement_budget_us
        if budget > 0:  # the pairs with the smallest distance bound get the budget first
            listed = sorted(listed, key=lambda k: self._d_low[k])
            deadline = time.perf_counter() + budget * 1e-6
        for n, k in enumerate(listed):
            if budget > 0 and n and time.perf_counter() > deadline:
                self.skipped_queries = len(listed) - n
                break
            res = self._state.distance(int(self._pairs[k]))
            self.exact_queries += 1
            d = res.min_distance
            if self._exact_step[k] == self._step - 1:
                closing = self._d_exact[k] - d
            else:
                closing = self._step_motion[k]
            self._d_low[k] = self._d_exact[k] = d
            self._exact_step[k] = self._step
            if self._pending.get(k, np.inf) <= d:
                self._pair_min[k] = self._pending.pop(k)
            if d < threshold[k]:
                predicted = max(closing, 0.0) + accel[k]
                hits.append((d, k, res, d - self._pair_min[k], predicted))
            elif self._cache is not None and d < threshold[k] + self._cache[1]:
                self._candidates.add(k)
        return hits

    def _recovery_distance(self, d: float, hold: float) -> float:
        """Distance fed to the damper aiming at ``hold``: no recovery within the deadband.

        A pair held at ``hold`` drifts below it by the linearization error; asking to
        recover that would fight the tasks every step. Within half the deadband below
        ``hold`` the row only forbids approaching; deeper, it recovers to
        ``hold - recovery_deadband / 2`` (the bound is continuous in ``d``).
        """
        half = 0.5 * self.recovery_deadband
        if d >= hold:
            return d
        if d >= hold - half:
            return hold
        return d + half

    def _scaled_recovery(self, d: float, hold: float, dt: float) -> float:
        """:meth:`_recovery_distance` with the recovery scale and the separation cap.

        A recovering row asks ``gain (hold - d_eff) / dt`` of separation speed; the
        recovery scale multiplies that, and a pair that is not penetrating (``d > 0``)
        never asks more than ``max_separation_speed``.
        """
        d_eff = self._recovery_distance(d, hold)
        if d_eff >= hold:
            return d_eff
        deficit = self.recovery_scale * (hold - d_eff)
        if d > 0.0:
            deficit = min(deficit, self.max_separation_speed * dt / self.gain)
        return hold - deficit

    def _hold(self, k: int, d: float) -> float:
        """Hold distance of pair ``k`` found at ``d``, after learning from its last promise.

        ``_promise[k]`` is the first-order distance the last step's witness row
        guaranteed; falling short of it is linearization error the next rows must leave
        room for.
        """
        learned = 0.5 * self._learned[k]
        if self._promise_step[k] == self._step - 1:
            learned = max(learned, self._promise[k] - d)
        self._learned[k] = min(learned, MAX_LEARNED_ERROR)
        return float(self._pair_min[k]) + self.recovery_deadband + self._learned[k]

    def _latch_pending(self) -> None:
        """Apply pending per-pair overrides whose pair is now known to be clear enough."""
        for k in list(self._pending):
            if self._d_low[k] >= self._pending[k]:
                self._pair_min[k] = self._pending.pop(k)

    def _hit_arrays(self, hits: list, oMg: object, dt: float) -> tuple[np.ndarray, ...]:
        """Per-hit arrays for the row kernel; placements of geometries near their limit."""
        nh = len(hits)
        first = np.empty(nh, dtype=np.int64)
        second = np.empty(nh, dtype=np.int64)
        dist, d_eff, d_min = np.empty(nh), np.empty(nh), np.empty(nh)
        reach = np.zeros(nh)
        normal, p1, p2 = np.empty((nh, 3)), np.empty((nh, 3)), np.empty((nh, 3))
        for h, (d, k, res, _, closing) in enumerate(hits):
            f, s = int(self._first[k]), int(self._second[k])
            first[h], second[h] = f, s
            hold = self._hold(k, d)
            dist[h], d_eff[h], d_min[h] = d, self._scaled_recovery(d, hold, dt), hold
            # The witness row's bound is -gain (d_eff - hold) / dt: its promise after dt.
            self._promise[k] = d - self.gain * (d_eff[h] - hold)
            self._promise_step[k] = self._step
            dm = float(self._pair_min[k])
            # coal's normal points from geometry 1 to geometry 2, also when they penetrate.
            normal[h] = res.normal
            p1[h] = res.getNearestPoint1()
            p2[h] = res.getNearestPoint2()
            if self.patch_tolerance > 0.0:
                reach[h] = self.patch_tolerance + closing
            if d - dm <= reach[h]:
                for g in (f, s):
                    self._rot[g] = oMg[g].rotation  # type: ignore[index]
                    self._trans[g] = oMg[g].translation  # type: ignore[index]
        return first, second, dist, d_eff, d_min, normal, p1, p2, reach

    def _assemble(
        self,
        hits: list,
        extra: int,
        oMg: object,
        dt: float,
        C: np.ndarray,
        lower: np.ndarray,
        upper: np.ndarray,
    ) -> int:
        """Witness and support-point rows of the near pairs (``hits``: distance, slot, ...).

        ``extra`` counts the urgent pairs beyond ``max_constraints`` (for inspection).
        """
        self.last_extra_pairs = extra
        arrays = self._hit_arrays(hits, oMg, dt)
        rows = self._rows(arrays, 0, len(hits), dt, C, lower, 0)
        self._note_witness_rows(hits, arrays[0], arrays[1], rows, C, lower)
        geoms, points, normals = self._row_geoms, self._row_points, self._row_normals
        # Kept for inspection: per row, the two geometries, the point and the normal.
        self.last_row_geometries = geoms[:rows]
        self.last_row_points, self.last_row_normals = points[:rows], normals[:rows]
        if self._has_mimic:  # Pinocchio's joint Jacobians know the mimic couplings
            self._rows_python(
                geoms[:rows, 0], geoms[:rows, 1], points[:rows], normals[:rows], C[:rows]
            )
        upper[:rows] = np.inf
        return int(rows)

    def _rows(
        self,
        arrays: tuple[np.ndarray, ...],
        h0: int,
        h1: int,
        dt: float,
        C: np.ndarray,
        lower: np.ndarray,
        row0: int,
    ) -> int:
        """Rows of hits ``h0:h1`` written from row ``row0`` on; return the new row count."""
        first, second, dist, d_eff, d_min, normal, p1, p2, reach = (a[h0:h1] for a in arrays)
        J = self._kin.joint_jacobians_view()
        if self._has_mimic:  # extended columns: the rows are recomputed in _rows_python
            J = np.zeros((6, self._robot.nv))
        n = contact_rows(
            J,
            self._support,
            first,
            second,
            dist,
            d_eff,
            d_min,
            normal,
            p1,
            p2,
            self._shape_kind,
            self._shape_params,
            self._rot,
            self._trans,
            self._sup_points,
            self._sup_offset,
            self._sup_radius,
            reach,
            self.gain / dt,
            _PATCH_DIRECTIONS,
            C[row0:],
            lower[row0:],
            self._row_geoms[row0:],
            self._row_points[row0:],
            self._row_normals[row0:],
        )
        return row0 + int(n)

    def _note_witness_rows(
        self,
        hits: list,
        first: np.ndarray,
        second: np.ndarray,
        rows: int,
        C: np.ndarray,
        lower: np.ndarray,
    ) -> None:
        """Remember, per hit, its witness row (the first of its rows) for the debug calls."""
        witness, row = [], 0
        geoms = self._row_geoms
        for h, hit in enumerate(hits):
            witness.append((row, int(hit[1]), float(hit[0]), np.array(hit[2].getNearestPoint2())))
            row += 1
            while row < rows and geoms[row, 0] == first[h] and geoms[row, 1] == second[h]:
                row += 1
        self._witness = witness
        self._last_rows = (C[:rows], lower[:rows])

    def debug_info(self) -> list[CollisionDebugInfo]:
        """Per pair with rows in the last step: witness points, distance, row, bound."""
        C, lower = self._last_rows
        objs = self._gm.geometryObjects
        out = []
        for row, k, d, p2 in self._witness:
            f, s = int(self._first[k]), int(self._second[k])
            out.append(
                CollisionDebugInfo(
                    geometry_a=objs[f].name,
                    geometry_b=objs[s].name,
                    link_a=self._col.link_names[f],
                    link_b=self._col.link_names[s],
                    distance=d,
                    min_distance=float(self._pair_min[k]),
                    point_a=self._row_points[row].copy(),
                    normal=self._row_normals[row].copy(),
                    point_b=p2,
                    jacobian=C[row].copy(),
                    lower_bound=float(lower[row]),
                    active=True,
                )
            )
        return out

    def distances_at(self, q: np.ndarray) -> np.ndarray:
        """Exact distances [m] of the watched pairs at ``q`` (own data: no side effects)."""
        kin = self._robot.create_kinematics(q)
        state = CollisionState(self._col)
        state.update_placements(kin.data)
        return np.array([state.distance(int(k)).min_distance for k in self._pairs if k >= 0])

    def debug_at(self, q: np.ndarray, dt: float) -> list[CollisionDebugInfo]:
        """Every watched pair at ``q`` with its witness row, nearest first (no side effects).

        Runs on a kinematics cache and a collision state of its own: this constraint's
        step-to-step state (broadphase, learned margins) is neither read nor changed, so
        the row is the damper a first step at ``q`` would write for the pair.
        """
        kin = self._robot.create_kinematics(q)
        state = CollisionState(self._col)
        state.distances(kin.data)  # one call into coal for every active pair
        results = state.geom_data.distanceResults
        objs, links = self._gm.geometryObjects, self._col.link_names
        jacobians: dict[int, np.ndarray] = {}
        out = []
        for k in range(len(self._pairs)):
            if self._pairs[k] < 0:
                continue
            res = results[int(self._pairs[k])]
            f, s = int(self._first[k]), int(self._second[k])
            d, d_min = float(res.min_distance), float(self._pair_min[k])
            p1, p2 = np.array(res.getNearestPoint1()), np.array(res.getNearestPoint2())
            normal = np.array(res.normal)
            row = self._point_rate(s, p1, normal, kin, jacobians)
            row -= self._point_rate(f, p1, normal, kin, jacobians)
            hold = d_min + self.recovery_deadband
            bound = -self.gain * (self._scaled_recovery(d, hold, dt) - hold) / dt
            out.append(
                CollisionDebugInfo(
                    geometry_a=objs[f].name,
                    geometry_b=objs[s].name,
                    link_a=links[f],
                    link_b=links[s],
                    distance=d,
                    min_distance=d_min,
                    point_a=p1,
                    point_b=p2,
                    normal=normal,
                    jacobian=row,
                    lower_bound=float(bound),
                    active=d < d_min + self.activation,
                )
            )
        return sorted(out, key=lambda info: info.distance)

    def describe_row(self, row: int) -> str:
        """The pair a row of the last step belongs to, its distance and its limit."""
        if not 0 <= row < len(self.last_row_geometries):
            return super().describe_row(row)
        g1, g2 = (int(g) for g in self.last_row_geometries[row])
        objs = self._gm.geometryObjects
        for d, k in zip(self.last_distances, self.last_pairs, strict=True):
            if {int(self._first[k]), int(self._second[k])} == {g1, g2}:
                return (
                    f"collision pair {objs[g1].name}/{objs[g2].name} at {1e3 * d:.2f} mm "
                    f"(min_distance {1e3 * self._pair_min[k]:.2f} mm)"
                )
        return f"collision pair {objs[g1].name}/{objs[g2].name}"

    def _rows_python(
        self, g1: np.ndarray, g2: np.ndarray, P: np.ndarray, N: np.ndarray, C: np.ndarray
    ) -> None:
        """Recompute the rows through Pinocchio's joint Jacobians (models with mimic joints)."""
        for row in range(len(g1)):
            Js = self._point_jacobian(g2[row], P[row]) - self._point_jacobian(g1[row], P[row])
            C[row] = N[row] @ Js

    def _point_rate(
        self,
        geom: int,
        p: np.ndarray,
        n: np.ndarray,
        kin: Kinematics,
        cache: dict[int, np.ndarray],
    ) -> np.ndarray:
        """``n^T J_p`` (size nv): the rate along ``n`` of point ``p`` moving with ``geom``.

        With the joint's world-aligned Jacobian ``[J_v; J_w]`` and ``d = p - o_joint``,
        ``J_p = J_v - [d]x J_w``, so ``n^T J_p = n^T J_v + (d x n)^T J_w``. ``cache``
        holds the joint Jacobians already read from ``kin``, by joint index.
        """
        j = int(self._joint_of[geom])
        if j == 0:
            return np.zeros(kin.model.nv)
        J = cache.get(j)
        if J is None:
            J = cache[j] = kin.joint_jacobian(j, pin.LOCAL_WORLD_ALIGNED)
        d0, d1, d2 = (p - kin.data.oMi[j].translation).tolist()
        n0, n1, n2 = n.tolist()
        c = np.array([d1 * n2 - d2 * n1, d2 * n0 - d0 * n2, d0 * n1 - d1 * n0])
        return n @ J[:3] + c @ J[3:]

    def _point_jacobian(self, geom: int, p: np.ndarray) -> np.ndarray:
        """World linear Jacobian (3 x nv) of point ``p`` moving with a geometry's joint."""
        kin = self._kin
        j = int(self._joint_of[geom])
        if j == 0:
            return np.zeros((3, kin.model.nv))
        J = kin.joint_jacobian(j, pin.LOCAL_WORLD_ALIGNED)
        d = p - kin.data.oMi[j].translation
        Jw = J[3:]
        return J[:3] - np.array(
            [d[1] * Jw[2] - d[2] * Jw[1], d[2] * Jw[0] - d[0] * Jw[2], d[0] * Jw[1] - d[1] * Jw[0]]
        )
