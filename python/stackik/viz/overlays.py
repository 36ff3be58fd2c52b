"""What the viewer overlays on the robot, computed from a configuration: plain NumPy.

- :class:`PairOverlay`: the closest-point segment of each watched collision pair within
  reach of its ``min_distance``, coloured by its distance to it;
- :func:`support_outline`: the CoM support polygon as line segments on the ground;
- :func:`distance_color`: the colour scale (red at or below ``min_distance``, orange,
  yellow, green once ``span`` beyond it).

The viewer computes them in its display thread with its own kinematics cache and
collision state, never the solver's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from ..model import CollisionState, Kinematics, RobotModel

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
        closest: ``(geometry_a, geometry_b, distance)`` of the closest watched pair, or
            None without pairs.
    """

    points: np.ndarray
    colors: np.ndarray
    names: list[tuple[str, str]]
    distances: np.ndarray
    closest: tuple[str, str, float] | None


class PairOverlay:
    """Distances and witness points of a robot's collision pairs, in a state of its own.

    Args:
        robot: The robot (needs collision geometry).
        show_within: Pairs farther than their ``min_distance`` plus this are not shown [m].
        span: Distance above ``min_distance`` at which a segment turns green [m].
    """

    def __init__(self, robot: RobotModel, show_within: float = 0.1, span: float = 0.05) -> None:
        collision = robot.collision
        self._state = CollisionState(collision) if collision is not None else None
        self.show_within = float(show_within)
        self.span = float(span)

    @property
    def available(self) -> bool:
        """Whether the robot has collision pairs to show."""
        return self._state is not None

    def compute(
        self,
        kinematics: Kinematics,
        watched: Sequence[tuple[str, str]] | None,
        min_distance: float,
        overrides: dict[frozenset[str], float] | None = None,
    ) -> PairSegments:
        """Segments at the configuration of ``kinematics`` (updated by the caller).

        Args:
            kinematics: A kinematics cache at the configuration to show.
            watched: Geometry-name pairs to show (a collision constraint's); None: every
                active pair of the robot.
            min_distance: Global minimum distance [m] (0 without a collision constraint).
            overrides: Per-pair minimum distances, keyed by ``frozenset({geom_a, geom_b})``.
        """
        empty = PairSegments(np.zeros((0, 2, 3)), np.zeros((0, 3)), [], np.zeros(0), None)
        if self._state is None:
            return empty
        names = self._state.collision.pair_names()
        distances = self._state.distances(kinematics.data)
        witness = self._state.nearest_points()
        keep = set(map(frozenset, watched)) if watched is not None else None
        limits = overrides or {}
        rows, colors, shown = [], [], []
        closest: tuple[str, str, float] | None = None
        best_margin = np.inf
        for k, (a, b) in enumerate(names):
            key = frozenset((a, b))
            if keep is not None and key not in keep:
                continue
            d = float(distances[k])
            d_min = limits.get(key, min_distance)
            if d - d_min < best_margin:
                best_margin, closest = d - d_min, (a, b, d)
            if d > d_min + self.show_within:
                continue
            rows.append(k)
            colors.append(distance_color(d, d_min, self.span))
            shown.append((a, b))
        return PairSegments(
            witness[rows] if rows else np.zeros((0, 2, 3)),
            np.array(colors, dtype=float).reshape(-1, 3),
            shown,
            distances[rows] if rows else np.zeros(0),
            closest,
        )


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
