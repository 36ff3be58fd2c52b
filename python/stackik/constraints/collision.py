"""CollisionConstraint: self-collision avoidance with velocity dampers.

For a pair at signed distance ``d`` with witness points ``p1`` (on geometry 1) and
``p2`` (on geometry 2) and unit normal ``n`` from 1 to 2, the distance rate is
``d_dot = n^T (J_p2 - J_p1) v``, where ``J_p`` is the world-aligned linear Jacobian of
the point ``p`` fixed to its geometry's joint: ``J_p = J_v,joint - [p - o_joint]x J_w,joint``.
Each active pair gives the velocity-damper row (Faverjon and Tournassoud, 1987):

    n^T (J_p2 - J_p1) v >= -gain (d - min_distance) / dt

A bounding-sphere broadphase skips the exact (GJK/EPA) query for pairs whose spheres
are farther apart than ``min_distance + activation_margin``; only pairs closer than
that produce rows, at most ``max_constraints`` of them (the closest).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pinocchio as pin

from ..errors import InvalidInput
from ..model import RobotModel
from ..model.collision import validate_pairs
from .base import Constraint


def _skew_rows(r: np.ndarray, Jw: np.ndarray) -> np.ndarray:
    """``[r]x Jw`` for a 3-vector r and a 3 x n matrix Jw."""
    return np.array(
        [r[1] * Jw[2] - r[2] * Jw[1], r[2] * Jw[0] - r[0] * Jw[2], r[0] * Jw[1] - r[1] * Jw[0]]
    )


class CollisionConstraint(Constraint):
    """Keep every selected collision pair at least ``min_distance`` apart.

    Args:
        name: Constraint name.
        robot: Robot with collision geometry.
        min_distance: Minimum separation [m], >= 0.
        include_pairs: Pairs (link or geometry names) to consider; empty = all active pairs.
        exclude_pairs: Pairs to ignore.
        nearest_points_all_pairs: Query every broadphase candidate exactly (True) or only
            the pair whose bounding spheres are closest (False, cheaper, less safe).
        max_constraints: Largest number of rows (closest pairs first).
        gain: Damper gain in (0, 1]; 1 lets a pair close the gap in one step.
        activation_margin: Pairs farther than ``min_distance + activation_margin`` [m]
            produce no row.

    Raises:
        InvalidInput: The robot has no collision geometry or an argument is out of range.
        CollisionGeometryNotFound: A name in the pair lists has no collision geometry.
    """

    def __init__(
        self,
        name: str,
        robot: RobotModel,
        min_distance: float,
        include_pairs: Sequence[tuple[str, str]] = (),
        exclude_pairs: Sequence[tuple[str, str]] = (),
        nearest_points_all_pairs: bool = True,
        max_constraints: int = 8,
        gain: float = 0.5,
        activation_margin: float = 0.05,
    ) -> None:
        super().__init__(name, robot)
        if not robot.has_collision_geometry():
            raise InvalidInput("the robot has no collision geometry")
        if not min_distance >= 0:
            raise InvalidInput(f"min_distance must be >= 0, got {min_distance}")
        if int(max_constraints) < 1:
            raise InvalidInput(f"max_constraints must be >= 1, got {max_constraints}")
        if not 0.0 < gain <= 1.0:
            raise InvalidInput(f"gain must be in (0, 1], got {gain}")
        if not activation_margin >= 0:
            raise InvalidInput(f"activation_margin must be >= 0, got {activation_margin}")
        self.min_distance = float(min_distance)
        self.max_constraints = int(max_constraints)
        self.gain = float(gain)
        self.activation_margin = float(activation_margin)
        self.nearest_points_all_pairs = bool(nearest_points_all_pairs)
        col = robot._collision
        gm = col.geom_model
        self._gm, self._gd = gm, col.geom_data
        objs = gm.geometryObjects
        all_pairs = [(cp.first, cp.second) for cp in gm.collisionPairs]
        index = {p: k for k, p in enumerate(all_pairs)}

        def expand(pairs: Sequence[tuple[str, str]]) -> set[int]:
            out = set()
            for a, b in validate_pairs(pairs):
                for i in col._resolve_names(a):
                    for j in col._resolve_names(b):
                        k = index.get((min(i, j), max(i, j)))
                        if k is not None:
                            out.add(k)
            return out

        selected = expand(include_pairs) if include_pairs else set(range(len(all_pairs)))
        selected -= expand(exclude_pairs)
        self._pairs = np.array(sorted(selected), dtype=int)
        self._first = np.array([all_pairs[k][0] for k in self._pairs], dtype=int)
        self._second = np.array([all_pairs[k][1] for k in self._pairs], dtype=int)
        self._pair_min = np.full(len(self._pairs), self.min_distance)
        self._pending: dict[int, float] = {}
        # Bounding spheres: centre in the geometry frame and radius [m].
        centers, radii = [], []
        for o in objs:
            g = o.geometry
            g.computeLocalAABB()
            centers.append(np.array(g.aabb_center))
            radii.append(float(g.aabb_radius))
        self._centers_local = np.array(centers).reshape(-1, 3)
        self._radii = np.array(radii)
        self._joint_of = np.array([o.parentJoint for o in objs], dtype=int)
        self.last_distances = np.zeros(0)
        self.last_pairs: list[int] = []

    # -- per-pair thresholds -------------------------------------------------------------
    def _pair_indices(self, link_a: str, link_b: str) -> np.ndarray:
        col = self._robot._collision
        ia, ib = set(col._resolve_names(link_a)), set(col._resolve_names(link_b))
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
        if not min_distance >= 0:
            raise InvalidInput(f"min_distance must be >= 0, got {min_distance}")
        for k in self._pair_indices(link_a, link_b):
            if activate_when_clear and min_distance > self._pair_min[k]:
                self._pending[int(k)] = float(min_distance)
            else:
                self._pair_min[k] = float(min_distance)
                self._pending.pop(int(k), None)

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

    # -- rows ------------------------------------------------------------------------------
    def _sync_pairs(self) -> None:
        """Follow changes of the robot's pair list (SRDF, exclusions, reset).

        The robot rebuilds its ``GeometryData`` whenever its pair list changes, which
        renumbers the pairs: re-resolve each watched pair's index, ``-1`` once the
        robot no longer checks it.
        """
        gd = self._robot._collision.geom_data
        if gd is self._gd:
            return
        self._gd = gd
        npairs = len(self._gm.collisionPairs)
        idx = [
            self._gm.findCollisionPair(pin.CollisionPair(int(f), int(s)))
            for f, s in zip(self._first, self._second, strict=True)
        ]
        self._pairs = np.array([i if i < npairs else -1 for i in idx], dtype=int)

    def _candidates(self) -> np.ndarray:
        """Pair slots whose bounding spheres are within the activation distance."""
        r = self._robot
        self._sync_pairs()
        pin.updateGeometryPlacements(r.model, r.data, self._gm, self._gd)
        oMg = self._gd.oMg
        centers = np.array([oMg[i].act(c) for i, c in enumerate(self._centers_local)])
        gap = (
            np.linalg.norm(centers[self._first] - centers[self._second], axis=1)
            - self._radii[self._first]
            - self._radii[self._second]
        )
        near = np.flatnonzero((gap <= self._pair_min + self.activation_margin) & (self._pairs >= 0))
        if not self.nearest_points_all_pairs and near.size > 1:
            near = near[[int(np.argmin(gap[near]))]]
        return near

    def rows(self, dt: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Damper rows for the closest active pairs."""
        if not len(self._pairs):
            return self._empty()
        r = self._robot
        near = self._candidates()
        if near.size == 0:
            self.last_distances, self.last_pairs = np.zeros(0), []
            return self._empty()
        dists = np.empty(near.size)
        results = []
        for n, k in enumerate(near):
            res = pin.computeDistance(self._gm, self._gd, int(self._pairs[k]))
            dists[n] = res.min_distance
            results.append(res)
        for k in list(self._pending):  # latch overrides that have become satisfiable
            hit = np.flatnonzero(near == k)
            if hit.size and dists[hit[0]] >= self._pending[k]:
                self._pair_min[k] = self._pending.pop(k)
        limits = self._pair_min[near]
        active = np.flatnonzero(dists < limits + self.activation_margin)
        active = active[np.argsort(dists[active])][: self.max_constraints]
        self.last_distances, self.last_pairs = dists[active], near[active].tolist()
        if active.size == 0:
            return self._empty()
        C = np.empty((active.size, r.nv))
        lower = np.empty(active.size)
        for row, a in enumerate(active):
            k, res = near[a], results[a]
            # coal's normal points from geometry 1 to 2, also when they penetrate.
            p1, p2, nrm = res.getNearestPoint1(), res.getNearestPoint2(), np.asarray(res.normal)
            C[row] = nrm @ (
                self._point_jacobian(self._second[k], p2) - self._point_jacobian(self._first[k], p1)
            )
            lower[row] = -self.gain * (dists[a] - limits[a]) / dt
        return C, lower, np.full(active.size, np.inf)

    def _point_jacobian(self, geom: int, p: np.ndarray) -> np.ndarray:
        """World-aligned linear Jacobian (3 x nv) of point ``p`` fixed to a geometry's joint."""
        r = self._robot
        j = int(self._joint_of[geom])
        if j == 0:
            return np.zeros((3, r.nv))
        J = pin.getJointJacobian(r.model, r.data, j, pin.LOCAL_WORLD_ALIGNED)
        return J[:3] - _skew_rows(p - r.data.oMi[j].translation, J[3:])
