"""ComPolygonConstraint: keep the centre of mass's ground projection in a support polygon.

The polygon (convex, vertices in the XY plane of a frame) is shrunk inward by
``margin * char_size``, where ``char_size`` is the mean centroid-to-vertex distance.
Each edge ``i`` has an inward unit normal ``n_i`` (world XY); the slack of the CoM
``c`` is ``s_i = n_i . (c_xy - v_i) - shrink``. The CoM may approach edge ``i`` at most at

    v_allow(s) = min(com_vel_max, s / dt, sqrt(2 com_acc_max s))     (s >= 0)

the last term only with ``use_acceleration_limits``: the CoM can still stop before the
edge with deceleration ``com_acc_max``. The row is ``n_i^T J_com,xy v >= -v_allow(s_i)``;
outside an edge (``s < 0``) it becomes ``>= min(-s / dt, com_vel_max)``, driving the CoM
back. With ``proximity_fraction > 0`` only edges with ``s_i < proximity_fraction *
inradius`` produce a row. Vertices given in a moving frame are re-placed in the world
every step from that frame's current pose and projected on the world XY plane.
"""

from __future__ import annotations

import numpy as np

from .. import _validate
from ..errors import InvalidInput, ShapeError
from ..model import Kinematics, RobotModel
from ._com_kernel import com_polygon_rows
from .base import Constraint, register_constraint


def _cross2(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def convex_polygon(vertices: object) -> np.ndarray:
    """Validate a convex polygon and return its vertices (N x 2) counter-clockwise.

    Raises:
        ShapeError: Not an N x 2 or N x 3 array.
        InvalidInput: Fewer than 3 vertices, NaN/inf, zero area, repeated vertices or
            a non-convex outline.
    """
    v = _validate.as_floats(vertices, "support_polygon", "(N, 2) or (N, 3)")
    if v.ndim != 2 or v.shape[1] not in (2, 3):
        raise ShapeError("support_polygon", "(N, 2) or (N, 3)", v.shape)
    if v.shape[0] < 3:
        raise InvalidInput(f"support_polygon needs at least 3 vertices, got {v.shape[0]}")
    if not np.isfinite(v).all():
        raise InvalidInput("support_polygon contains NaN or inf")
    v = v[:, :2].copy()
    edges = np.roll(v, -1, axis=0) - v
    if (np.linalg.norm(edges, axis=1) < 1e-9).any():
        raise InvalidInput("support_polygon has repeated consecutive vertices")
    area2 = float(np.sum(_cross2(v, np.roll(v, -1, axis=0))))
    if abs(area2) < 1e-12:
        raise InvalidInput("support_polygon has zero area")
    if area2 < 0:
        v = v[::-1].copy()
        edges = np.roll(v, -1, axis=0) - v
    nxt = np.roll(edges, -1, axis=0)
    turns = _cross2(edges, nxt)
    # Left turns everywhere is not enough: a star (pentagram) turns left at every
    # vertex but winds twice. Convex means the exterior angles sum to one turn.
    winding = float(np.sum(np.arctan2(turns, np.sum(edges * nxt, axis=1)))) / (2.0 * np.pi)
    if (turns < -1e-12).any() or abs(winding - 1.0) > 1e-6:
        raise InvalidInput("support_polygon is not convex")
    return v


@register_constraint
class ComPolygonConstraint(Constraint):
    """Keep the CoM's ground projection inside a shrunk convex support polygon.

    Args:
        name: Constraint name.
        kinematics: Kinematics cache read (a solver's), or a robot (its own cache).
        support_polygon: N x 2 (or N x 3, z ignored) vertices in the XY plane of
            ``frame_name`` [m].
        margin: Fractional inward shrink in [0, 1), times the mean centroid-vertex distance.
        frame_name: Frame of the vertices (``"world"`` for the world).
        com_vel_max: Largest CoM approach speed toward an edge [m/s].
        com_acc_max: Deceleration available to stop before an edge [m/s^2].
        use_acceleration_limits: Apply the ``sqrt(2 a s)`` braking bound.
        proximity_fraction: Row activation distance as a fraction of the inradius (0:
            every edge always).
    """

    family = "com_polygon"
    frame_name: str = _validate.fixed_property(
        "frame_name",
        "add a constraint on the other frame",
        "Frame of the polygon's vertices (fixed when the constraint is made).",
    )
    order = 20

    def __init__(
        self,
        name: str,
        kinematics: Kinematics | RobotModel,
        support_polygon: object,
        margin: float = 0.0,
        frame_name: str = "world",
        com_vel_max: float = 0.4,
        com_acc_max: float = 0.1,
        use_acceleration_limits: bool = True,
        proximity_fraction: float = 0.0,
    ) -> None:
        super().__init__(name, kinematics)
        self.vertices = convex_polygon(support_polygon)
        margin = _validate.in_range(margin, "margin", 0.0, 1.0)
        if margin == 1.0:
            raise InvalidInput("margin must be in [0, 1), got 1.0")
        com_vel_max = _validate.positive_float(com_vel_max, "com_vel_max")
        com_acc_max = _validate.positive_float(com_acc_max, "com_acc_max")
        proximity_fraction = _validate.positive_float(
            proximity_fraction, "proximity_fraction", allow_zero=True
        )
        self._fid = None if frame_name == "world" else self._robot.get_frame_id(frame_name)
        self._frame_name = frame_name
        centroid = self.vertices.mean(axis=0)
        normals, offsets = self._half_planes(self.vertices)
        self.inradius = float(np.min(normals @ centroid - offsets))
        self.shrink = float(margin) * float(np.linalg.norm(self.vertices - centroid, axis=1).mean())
        if self.shrink >= self.inradius:
            raise InvalidInput(
                f"margin shrinks the polygon by {self.shrink:.4g} m, more than its inradius "
                f"{self.inradius:.4g} m: nothing would be left"
            )
        self.com_vel_max = float(com_vel_max)
        self.com_acc_max = float(com_acc_max)
        self.use_acceleration_limits = _validate.flag(
            use_acceleration_limits, "use_acceleration_limits"
        )
        self.proximity_threshold = float(proximity_fraction) * self.inradius
        # A world-fixed polygon's half planes never change: computed once.
        self._world_planes = self._half_planes(self.vertices) if self._fid is None else None
        self._settings = np.zeros(5)  # the row kernel's settings, written per step

    @staticmethod
    def _half_planes(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Inward unit normals ``n_i`` and offsets ``n_i . v_i`` of a CCW polygon."""
        e = np.roll(v, -1, axis=0) - v
        n = np.stack([-e[:, 1], e[:, 0]], axis=1)
        n /= np.linalg.norm(n, axis=1, keepdims=True)
        return n, np.sum(n * v, axis=1)

    def world_vertices(self) -> np.ndarray:
        """Polygon vertices in world XY at the current configuration [m]."""
        if self._fid is None:
            return self.vertices
        T = self._kin.frame_placement(self._fid)
        pts = np.column_stack([self.vertices, np.zeros(len(self.vertices))])
        xy = (pts @ T.rotation.T + T.translation)[:, :2]
        # A frame whose z axis points down mirrors the outline (clockwise): restore CCW so
        # the edge normals still point inward.
        if float(np.sum(_cross2(xy, np.roll(xy, -1, axis=0)))) < 0.0:
            xy = xy[::-1]
        return xy

    def _planes(self) -> tuple[np.ndarray, np.ndarray]:
        """The world half planes of this step (cached for a world-fixed polygon)."""
        if self._world_planes is not None:
            return self._world_planes
        return self._half_planes(self.world_vertices())

    def slacks(self) -> np.ndarray:
        """Slack ``s_i`` [m] of the current CoM to each shrunk edge (negative outside)."""
        n, off = self._planes()
        return n @ self._kin.com[:2] - off - self.shrink

    def max_rows(self) -> int:
        """One row per edge."""
        return int(self.vertices.shape[0])

    def write_rows(self, dt: float, C: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> int:
        """One lower-bounded row per (near) edge (one compiled call)."""
        kin = self._kin
        settings = self._settings
        settings[0] = self.shrink
        settings[1] = self.proximity_threshold
        settings[2] = dt
        settings[3] = self.com_vel_max
        settings[4] = self.com_acc_max
        com = kin.com_view()
        planes = self._planes()
        if planes[0].shape[0] > C.shape[0]:  # (a polygon changed by another thread since
            # max_rows(): the compiled writer would write past the rows sized for the old one)
            raise ShapeError(f"constraint {self.name!r}: C", (planes[0].shape[0],), C.shape)
        return com_polygon_rows(
            planes, com, kin.com_jacobian_view(), settings,
            bool(self.use_acceleration_limits), C, lower, upper,
        )  # fmt: skip
