"""What the viewer overlays on the robot, computed from a configuration: plain NumPy.

- :class:`PairOverlay`: the closest-point segment of each watched collision pair within
  reach of its ``min_distance``, coloured by its distance to it: the robot's own pairs
  (coal, like ``RobotModel.compute_collision_distances``) and its pairs with the world
  (robot geometry or attached object against an obstacle, attached object against the
  robot; the compiled distances of the collision pipeline, as the solver's), the latter
  labelled with the world object's name;
- :func:`support_outline`: the CoM support polygon as line segments on the ground;
- :func:`distance_color`: the colour scale (red at or below ``min_distance``, orange,
  yellow, green once ``span`` beyond it).

The viewer computes them in its display thread with its own kinematics cache,
collision state and collision pipeline, never the solver's, on one snapshot of the world.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from ..model import CollisionState, Kinematics, RobotModel
from ..model.pipeline import CollisionPipeline, GeometrySet
from ..model.world import WorldState

#: Colour stops of :func:`distance_color`, from "at or below min_distance" to "clear".
_STOPS = np.array([[220.0, 30.0, 30.0], [245.0, 140.0, 20.0], [240.0, 210.0, 30.0], [60, 180, 75]])


def distance_color(distance: float, min_distance: float, span: float) -> tuple[int, int, int]:
    """RGB colour [0-255] of a pair ``distance`` [m] away, against its ``min_distance`` [m].

    Red at or below ``min_distance``, then orange and yellow, green from
    ``min_distance + span`` on.
    """
    if not np.isfinite(distance) or distance <= min_distance:
        return (220, 30, 30)
    t = min((distance - min_distance) / max(span, 1e-9), 1.0) * (len(_STOPS) - 1)
    k = min(int(t), len(_STOPS) - 2)
    c = _STOPS[k] + (t - k) * (_STOPS[k + 1] - _STOPS[k])
    r, g, b = (round(float(x)) for x in c)
    return (r, g, b)


@dataclass(frozen=True)
class PairSegments:
    """Closest-point segments of the pairs shown at one configuration.

    Attributes:
        points: Segment end points (N x 2 x 3), world frame [m].
        colors: RGB colour per segment (N x 3) [0-255].
        names: ``(geometry_a, geometry_b)`` of each segment.
        distances: Signed distance of each [m].
        closest: ``(geometry_a, geometry_b, distance)`` of the watched pair nearest its
            minimum distance (the smallest distance minus minimum: the pair closest to a
            violation, which a pair with a larger own minimum can be before a nearer
            one), or None without pairs.
        labels: Per segment, the name of the world object it reaches (the obstacle, or
            the attached object of an attached-object/robot pair); ``""`` for the
            robot's own pairs.
        min_distances: The minimum distance of each segment's pair [m].
    """

    points: np.ndarray
    colors: np.ndarray
    names: list[tuple[str, str]]
    distances: np.ndarray
    closest: tuple[str, str, float] | None
    labels: list[str] = field(default_factory=list)
    min_distances: np.ndarray = field(default_factory=lambda: np.zeros(0))


@dataclass
class _Rows:
    """Pairs gathered for one :class:`PairSegments` (robot pairs, then world pairs)."""

    points: list[np.ndarray] = field(default_factory=list)
    colors: list[tuple[int, int, int]] = field(default_factory=list)
    names: list[tuple[str, str]] = field(default_factory=list)
    distances: list[float] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    minimums: list[float] = field(default_factory=list)
    closest: tuple[str, str, float] | None = None
    best_margin: float = np.inf


class PairOverlay:
    """Distances and witness points of a robot's collision pairs, in a state of its own.

    Args:
        robot: The robot (its own pairs need collision geometry).
        show_within: Pairs farther than their ``min_distance`` plus this are not shown [m].
        span: Distance above ``min_distance`` at which a segment turns green [m].
    """

    def __init__(self, robot: RobotModel, show_within: float = 0.1, span: float = 0.05) -> None:
        collision = robot.collision
        self._state = CollisionState(collision) if collision is not None else None
        self._pipeline = CollisionPipeline(robot)
        self._world_key: tuple[int, int, object] | None = None
        self._world_pairs = np.zeros((0, 2), dtype=np.int64)
        self.show_within = float(show_within)
        self.span = float(span)

    @property
    def available(self) -> bool:
        """Whether the robot has collision geometry (its own pairs to show)."""
        return self._state is not None

    def compute(
        self,
        kinematics: Kinematics,
        watched: Sequence[tuple[str, str]] | None,
        min_distance: float,
        overrides: dict[frozenset[str], float] | None = None,
        world: WorldState | None = None,
    ) -> PairSegments:
        """Segments at the configuration of ``kinematics`` (updated by the caller).

        Args:
            kinematics: A kinematics cache at the configuration to show.
            watched: Pairs to show, by geometry, obstacle or attached-object name (a
                collision constraint's ``pair_names()``); None: every active pair of
                the robot and every pair with its world.
            min_distance: Global minimum distance [m] (0 without a collision constraint).
            overrides: Per-pair minimum distances, keyed by ``frozenset({name_a,
                name_b})``; an obstacle's own ``min_distance`` applies to its pairs
                without one.
            world: The world snapshot to measure against (``robot.world.state`` when
                omitted).
        """
        rows = _Rows()
        keep = set(map(frozenset, watched)) if watched is not None else None
        limits = overrides or {}
        if self._state is not None:
            self._robot_rows(rows, kinematics, keep, min_distance, limits)
        state = self._pipeline.world_state() if world is None else world
        if state.layout.obstacles or state.layout.attached:
            self._world_rows(rows, kinematics, state, keep, min_distance, limits)
        n = len(rows.names)
        return PairSegments(
            np.array(rows.points, dtype=float).reshape(n, 2, 3),
            np.array(rows.colors, dtype=float).reshape(n, 3),
            rows.names,
            np.array(rows.distances, dtype=float),
            rows.closest,
            rows.labels,
            np.array(rows.minimums, dtype=float),
        )

    def _add(self, rows: _Rows, names: tuple[str, str], d: float, d_min: float) -> bool:
        """Count a pair for the closest one; whether it is near enough to be shown."""
        if d - d_min < rows.best_margin:
            rows.best_margin, rows.closest = d - d_min, (names[0], names[1], d)
        return d <= d_min + self.show_within

    def _robot_rows(
        self,
        rows: _Rows,
        kinematics: Kinematics,
        keep: set[frozenset[str]] | None,
        min_distance: float,
        limits: dict[frozenset[str], float],
    ) -> None:
        """The robot's own pairs, measured with coal."""
        assert self._state is not None
        names = self._state.collision.pair_names()
        distances = self._state.distances(kinematics.data)
        witness = self._state.nearest_points()
        for k, (a, b) in enumerate(names):
            key = frozenset((a, b))
            if keep is not None and key not in keep:
                continue
            d = float(distances[k])
            d_min = limits.get(key, min_distance)
            if self._add(rows, (a, b), d, d_min):
                rows.points.append(witness[k])
                rows.colors.append(distance_color(d, d_min, self.span))
                rows.names.append((a, b))
                rows.distances.append(d)
                rows.labels.append("")
                rows.minimums.append(d_min)

    def _candidates(self, gs: GeometrySet) -> np.ndarray:
        """Every pair of the robot (and its attached objects) with its world."""
        if gs.key != self._world_key:
            self._world_key = gs.key
            self._world_pairs = gs.world_pairs(np.zeros((0, 2), dtype=np.int64))
        return self._world_pairs

    def _world_rows(
        self,
        rows: _Rows,
        kinematics: Kinematics,
        state: WorldState,
        keep: set[frozenset[str]] | None,
        min_distance: float,
        limits: dict[frozenset[str], float],
    ) -> None:
        """Pairs with an obstacle or an attached object, measured by the collision pipeline."""
        gs = self._pipeline.place(kinematics.joint_placements(), state)
        pairs = self._candidates(gs)
        if keep is not None:
            names = gs.names
            chosen = [frozenset((names[a], names[b])) in keep for a, b in pairs]
            pairs = pairs[np.array(chosen, dtype=bool).reshape(-1)]
        if not len(pairs):
            return
        witness = np.zeros((len(pairs), 9))
        distances = self._pipeline.distances(pairs, witness)
        for k, (a, b) in enumerate(pairs):
            names = (gs.names[a], gs.names[b])
            d = float(distances[k])
            own = float(gs.obstacle_min[b])
            d_min = limits.get(frozenset(names), own if own == own else min_distance)
            if self._add(rows, names, d, d_min):
                rows.points.append(witness[k, 0:6].reshape(2, 3))
                rows.colors.append(distance_color(d, d_min, self.span))
                rows.names.append(names)
                rows.distances.append(d)
                rows.labels.append(names[1])  # the world side: an obstacle or attached object
                rows.minimums.append(d_min)


def polygon_in_world(kinematics: Kinematics, vertices: np.ndarray, frame_name: str) -> np.ndarray:
    """Support polygon vertices (N x 2, in ``frame_name``'s XY plane) placed in the world.

    Returns:
        N x 3 world points [m]: the vertices carried by the frame's current pose
        (``"world"``: z = 0).
    """
    pts = np.column_stack([np.asarray(vertices, dtype=float)[:, :2], np.zeros(len(vertices))])
    if frame_name == "world":
        return pts
    T: pin.SE3 = kinematics.frame_pose(frame_name)
    return pts @ T.rotation.T + T.translation


def support_outline(points: np.ndarray) -> np.ndarray:
    """Closed outline of a polygon (N x 3 points) as segments (N x 2 x 3)."""
    p = np.asarray(points, dtype=float)
    return np.stack([p, np.roll(p, -1, axis=0)], axis=1)


def inside_polygon(point_xy: np.ndarray, polygon_xy: np.ndarray) -> bool:
    """Whether a point lies inside a convex polygon (world XY, either orientation)."""
    v = np.asarray(polygon_xy, dtype=float)[:, :2]
    e = np.roll(v, -1, axis=0) - v
    rel = np.asarray(point_xy, dtype=float)[:2] - v
    cross = e[:, 0] * rel[:, 1] - e[:, 1] * rel[:, 0]
    return bool(np.all(cross >= 0.0) or np.all(cross <= 0.0))
