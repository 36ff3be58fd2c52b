"""Shape codes of the compiled distance kernels and the table of a set of coal shapes.

Every convex shape is described by an integer code, four parameters and, for a convex
hull, a range of rows in one shared vertex array (lengths in metres, in the shape's
local frame)::

    SPHERE = 1      (radius, 0, 0, 0)
    CAPSULE = 2     (radius, half_length, 0, 0)   axis = local z
    CYLINDER = 3    (radius, half_length, 0, 0)   axis = local z
    BOX = 4         (hx, hy, hz, 0)               half sides
    CONVEX = 5      zeros; vertices in the shared vertex array (coal ConvexBase points)
    CONE = 6        (radius, half_length, 0, 0)   apex at z = +half_length, base disc
                                                  of that radius at z = -half_length
    ELLIPSOID = 7   (rx, ry, rz, 0)               semi-axes
    HALFSPACE = 8   (nx, ny, nz, d)               the set n . x <= d (unit n)
    PLANE = 9       (nx, ny, nz, d)               the set n . x = d (unit n)
    MESH = 10       zeros: a triangle mesh (coal BVHModel), left to coal

The cone's placement and the normalised half-space / plane normals are coal's own
(checked against ``coal.distance``). A :class:`ShapeTable` holds the arrays of many
shapes, in the order given, for :func:`stackik.geometry.kernels.table_distance` and
:func:`~stackik.geometry.kernels.batch_distance`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import coal
import numpy as np

from .. import _validate
from ..errors import InvalidInput

__all__ = [
    "BOX",
    "CAPSULE",
    "CONE",
    "CONVEX",
    "CYLINDER",
    "ELLIPSOID",
    "HALFSPACE",
    "KIND_NAMES",
    "MESH",
    "PLANE",
    "SPHERE",
    "ShapeTable",
    "shape_code",
]

SPHERE = 1
CAPSULE = 2
CYLINDER = 3
BOX = 4
CONVEX = 5
CONE = 6
ELLIPSOID = 7
HALFSPACE = 8
PLANE = 9
MESH = 10

#: Name of every shape code.
KIND_NAMES = {
    SPHERE: "sphere",
    CAPSULE: "capsule",
    CYLINDER: "cylinder",
    BOX: "box",
    CONVEX: "convex",
    CONE: "cone",
    ELLIPSOID: "ellipsoid",
    HALFSPACE: "halfspace",
    PLANE: "plane",
    MESH: "mesh",
}


def _check_swept(geometry: Any) -> None:
    """Refuse a coal shape inflated by a swept-sphere radius (not encoded)."""
    get = getattr(geometry, "getSweptSphereRadius", None)
    if get is not None and float(get()) != 0.0:
        raise InvalidInput(
            f"coal {type(geometry).__name__} with a swept-sphere radius "
            f"({float(get())} m) has no shape code",
            what="geometry",
            value=type(geometry).__name__,
        )


def shape_code(geometry: Any) -> tuple[int, np.ndarray]:
    """The shape code and the four parameters of one coal geometry.

    Args:
        geometry: A coal ``Sphere``, ``Capsule``, ``Cylinder``, ``Box``, ``ConvexBase``,
            ``Cone``, ``Ellipsoid``, ``Halfspace``, ``Plane`` or ``BVHModelBase``.

    Returns:
        ``(code, params)``: the code (see the module docstring) and a float64 array of
        4 parameters [m] (zeros for CONVEX and MESH, whose vertices are separate).

    Raises:
        InvalidInput: Any other coal type (the message names it), or a shape with a
            non-zero coal swept-sphere radius.
    """
    _check_swept(geometry)
    params = np.zeros(4)
    if isinstance(geometry, coal.Sphere):
        params[0] = geometry.radius
        return SPHERE, params
    if isinstance(geometry, (coal.Capsule, coal.Cylinder, coal.Cone)):
        params[0], params[1] = geometry.radius, geometry.halfLength
        code = {coal.Capsule: CAPSULE, coal.Cylinder: CYLINDER}.get(type(geometry), CONE)
        return code, params
    if isinstance(geometry, coal.Box):
        params[:3] = np.asarray(geometry.halfSide, dtype=float)
        return BOX, params
    if isinstance(geometry, coal.Ellipsoid):
        params[:3] = np.asarray(geometry.radii, dtype=float)
        return ELLIPSOID, params
    if isinstance(geometry, (coal.Halfspace, coal.Plane)):
        params[:3] = np.asarray(geometry.n, dtype=float)
        params[3] = geometry.d
        return (HALFSPACE if isinstance(geometry, coal.Halfspace) else PLANE), params
    if isinstance(geometry, coal.ConvexBase):
        return CONVEX, params
    if isinstance(geometry, coal.BVHModelBase):
        return MESH, params
    raise InvalidInput(
        f"coal geometry type {type(geometry).__name__} has no shape code",
        what="geometry",
        value=type(geometry).__name__,
    )


def _points(geometry: Any, code: int) -> np.ndarray:
    """Vertices of a CONVEX (its points) or MESH (its vertices) shape; (0, 3) otherwise."""
    if code == CONVEX:
        return np.array(geometry.points(), dtype=float).reshape(-1, 3)
    if code == MESH:
        return np.array(geometry.vertices(), dtype=float).reshape(-1, 3)
    return np.zeros((0, 3))


def _cone_ball(radius: float, half: float) -> tuple[float, float]:
    """(z of the centre, radius) of the smallest ball around a cone (apex at +half)."""
    if radius * radius >= 4.0 * half * half:  # flat cone: the base disc's ball holds it
        return -half, radius
    z = -radius * radius / (4.0 * half)  # equidistant from the apex and the base rim
    return z, half - z


def _ball(code: int, params: np.ndarray, points: np.ndarray) -> tuple[np.ndarray, float]:
    """A bounding ball (centre in the local frame [m], radius [m]) of one shape."""
    centre = np.zeros(3)
    r, h = float(params[0]), float(params[1])
    if code in (HALFSPACE, PLANE):
        return centre, math.inf
    if code in (CONVEX, MESH):
        if len(points) == 0:
            return centre, 0.0
        centre = 0.5 * (points.min(axis=0) + points.max(axis=0))
        return centre, float(np.sqrt(((points - centre) ** 2).sum(axis=1)).max())
    if code == CONE:
        z, radius = _cone_ball(r, h)
        centre[2] = z
        return centre, radius
    radius = {
        SPHERE: r,
        CAPSULE: r + h,
        CYLINDER: math.hypot(r, h),
        BOX: float(np.linalg.norm(params[:3])),
        ELLIPSOID: float(params[:3].max()),
    }[code]
    return centre, radius


@dataclass(frozen=True)
class ShapeTable:
    """The kernel arrays of ``n`` shapes (one row each, in order).

    Attributes:
        kind: Shape codes, int64 ``(n,)``.
        params: Parameters [m], float64 ``(n, 4)`` (see the module docstring).
        vstart: Shape ``g``'s vertices are ``verts[vstart[g]:vstart[g + 1]]``, int64
            ``(n + 1,)`` (empty ranges for every kind but CONVEX).
        verts: Vertices of the convex hulls in their local frames [m], float64 ``(m, 3)``.
        center: Centre of a bounding ball in the shape's local frame [m], ``(n, 3)``.
        radius: Radius of that ball [m], ``(n,)`` (inf for HALFSPACE and PLANE).
        swept_radius: Radius of the ball swept along the shape's core [m], ``(n,)``:
            the sphere's or capsule's radius, 0 for every other kind.
    """

    kind: np.ndarray
    params: np.ndarray
    vstart: np.ndarray
    verts: np.ndarray
    center: np.ndarray
    radius: np.ndarray
    swept_radius: np.ndarray

    def __len__(self) -> int:
        return int(self.kind.shape[0])

    @classmethod
    def empty(cls) -> ShapeTable:
        """A table of no shape."""
        return cls(
            kind=np.zeros(0, dtype=np.int64),
            params=np.zeros((0, 4)),
            vstart=np.zeros(1, dtype=np.int64),
            verts=np.zeros((0, 3)),
            center=np.zeros((0, 3)),
            radius=np.zeros(0),
            swept_radius=np.zeros(0),
        )

    @classmethod
    def from_coal(cls, geometries: Iterable[Any]) -> ShapeTable:
        """The table of coal geometries, in the order given.

        Args:
            geometries: coal collision geometries (see :func:`shape_code`).

        Raises:
            InvalidInput: A geometry of a type without a shape code (named).
        """
        kinds, params, counts, chunks, centres, radii, swept = [], [], [0], [], [], [], []
        for geometry in _validate.items(geometries, "geometries"):
            code, par = shape_code(geometry)
            points = _points(geometry, code)
            centre, radius = _ball(code, par, points)
            kinds.append(code)
            params.append(par)
            centres.append(centre)
            radii.append(radius)
            swept.append(float(par[0]) if code in (SPHERE, CAPSULE) else 0.0)
            stored = points if code == CONVEX else np.zeros((0, 3))
            chunks.append(stored)
            counts.append(len(stored))
        if not kinds:
            return cls.empty()
        return cls(
            kind=np.asarray(kinds, dtype=np.int64),
            params=np.ascontiguousarray(np.array(params, dtype=float).reshape(-1, 4)),
            vstart=np.cumsum(np.asarray(counts, dtype=np.int64)),
            verts=np.ascontiguousarray(np.concatenate(chunks, axis=0).reshape(-1, 3)),
            center=np.array(centres, dtype=float).reshape(-1, 3),
            radius=np.asarray(radii, dtype=float),
            swept_radius=np.asarray(swept, dtype=float),
        )

    @classmethod
    def concat(cls, tables: Sequence[ShapeTable]) -> ShapeTable:
        """One table of the shapes of ``tables``, in order (indices shift by the sizes).

        Args:
            tables: Tables to join; shape ``g`` of ``tables[k]`` becomes shape
                ``g + sum(len(t) for t in tables[:k])``.
        """
        tables = _validate.items(tables, "tables")
        if not all(isinstance(t, ShapeTable) for t in tables):
            raise InvalidInput("tables must be ShapeTables", what="tables")
        if not tables:
            return cls.empty()
        starts, offset = [np.zeros(1, dtype=np.int64)], 0
        for t in tables:
            starts.append(t.vstart[1:] + offset)
            offset += int(t.vstart[-1])
        return cls(
            kind=np.concatenate([t.kind for t in tables]).astype(np.int64),
            params=np.ascontiguousarray(np.concatenate([t.params for t in tables], axis=0)),
            vstart=np.concatenate(starts).astype(np.int64),
            verts=np.ascontiguousarray(np.concatenate([t.verts for t in tables], axis=0)),
            center=np.concatenate([t.center for t in tables], axis=0),
            radius=np.concatenate([t.radius for t in tables]),
            swept_radius=np.concatenate([t.swept_radius for t in tables]),
        )

    def append(self, geometries: Iterable[Any]) -> ShapeTable:
        """A new table: this one followed by coal ``geometries`` (this one is unchanged)."""
        return ShapeTable.concat([self, ShapeTable.from_coal(geometries)])

    def vertices(self, g: int) -> np.ndarray:
        """The vertex rows of shape ``g`` (a view; empty unless CONVEX)."""
        return self.verts[self.vstart[g] : self.vstart[g + 1]]
