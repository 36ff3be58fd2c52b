"""What the viewer draws for each geometry of a robot: plain data, no viser.

Each Pinocchio ``GeometryObject`` (a URDF ``<visual>`` or ``<collision>`` element, loaded
into coal) becomes a :class:`GeometrySpec`: its parent joint, its fixed placement in
that joint's frame, a colour and one or more :class:`Primitive` parts (a capsule is a
cylinder and two spheres). Meshes keep the triangles coal loaded (scaled as the URDF
asks); convex hulls keep their hull triangles.

World obstacles use the same parts (:func:`obstacle_primitives`), and unbounded shapes
too: a plane or half-space is drawn as a square patch :data:`PLANE_PATCH_SIZE` wide on
its boundary, with a line along its normal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pinocchio as pin

from ..model.collision import convex_hull

#: Colour of the visual geometry when the URDF gives none (Pinocchio's default grey).
DEFAULT_VISUAL_RGB = (118, 140, 170)
#: Colour of the collision geometry [0-255].
COLLISION_RGB = (235, 140, 40)
#: Opacity of the collision geometry.
COLLISION_OPACITY = 0.55
_PINOCCHIO_DEFAULT_RGBA = (0.9, 0.9, 0.9, 1.0)
_CONE_SEGMENTS = 32
#: Side of the square patch drawing a plane or half-space [m].
PLANE_PATCH_SIZE = 4.0
#: Thickness of that patch [m] (a half-space's patch lies inside it, below the boundary).
PLANE_PATCH_THICKNESS = 0.004
#: Length of the line drawn along a plane's normal [m].
NORMAL_LENGTH = 0.25


@dataclass(frozen=True)
class Primitive:
    """One drawable part of a geometry, in the geometry's own frame.

    Attributes:
        kind: ``"box"``, ``"sphere"``, ``"ellipsoid"``, ``"cylinder"`` (along z),
            ``"mesh"`` or ``"line"`` (a segment: a plane's normal).
        size: Box: full side lengths (x, y, z); sphere: (radius,); ellipsoid: radii
            (x, y, z); cylinder: (radius, length) [m]. Empty for a mesh or a line.
        offset: Position of the part in the geometry frame [m].
        vertices: Mesh vertices (V x 3), or a line's two end points (2 x 3) [m], or None.
        faces: Mesh triangles (F x 3 vertex indices), or None.
        wxyz: Orientation of the part in the geometry frame (unit quaternion, w first).
    """

    kind: str
    size: tuple[float, ...] = ()
    offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    vertices: np.ndarray | None = field(default=None, compare=False)
    faces: np.ndarray | None = field(default=None, compare=False)
    wxyz: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)


@dataclass(frozen=True)
class GeometrySpec:
    """A geometry as the viewer draws it.

    Attributes:
        name: Geometry name (Pinocchio's, e.g. ``panda_link1_0``).
        joint: Pinocchio index of the joint it moves with (0: fixed to the world).
        placement: Its placement in that joint's frame.
        color: RGB colour [0-255].
        opacity: Opacity in (0, 1], None for opaque.
        parts: What to draw, in the geometry frame.
    """

    name: str
    joint: int
    placement: pin.SE3
    color: tuple[int, int, int]
    opacity: float | None
    parts: tuple[Primitive, ...]


def _cone_mesh(radius: float, half_length: float) -> Primitive:
    """A cone along z (base at ``-half_length``, apex at ``+half_length``) as triangles."""
    a = np.linspace(0.0, 2.0 * np.pi, _CONE_SEGMENTS, endpoint=False)
    rim = np.column_stack([radius * np.cos(a), radius * np.sin(a), np.full_like(a, -half_length)])
    vertices = np.vstack([rim, [[0.0, 0.0, half_length], [0.0, 0.0, -half_length]]])
    apex, centre, n = _CONE_SEGMENTS, _CONE_SEGMENTS + 1, _CONE_SEGMENTS
    k = np.arange(n)
    side = np.column_stack([k, (k + 1) % n, np.full(n, apex)])
    base = np.column_stack([(k + 1) % n, k, np.full(n, centre)])
    return Primitive("mesh", vertices=vertices, faces=np.vstack([side, base]).astype(np.uint32))


def _triangles(geometry: Any) -> Primitive | None:
    """Vertices and triangles of a coal mesh (BVH model) or convex hull."""
    if hasattr(geometry, "tri_indices") and hasattr(geometry, "vertices"):
        vertices = np.asarray(geometry.vertices(), dtype=float)
        count = int(geometry.num_tris)
        tri = geometry.tri_indices
    elif hasattr(geometry, "points"):
        if not (hasattr(geometry, "polygons") and int(geometry.num_polygons)):
            # (a ConvexBase built without its faces, say by convexHull(points, False)):
            # the faces of the hull of its points
            if not int(geometry.num_points):
                return None
            geometry = convex_hull(np.asarray(geometry.points(), dtype=float))
        vertices = np.asarray(geometry.points(), dtype=float)
        count = int(geometry.num_polygons)
        tri = geometry.polygons
    else:
        return None
    faces = np.array([(t[0], t[1], t[2]) for t in map(tri, range(count))], dtype=np.uint32)
    if vertices.size == 0 or faces.size == 0:
        return None
    return Primitive("mesh", vertices=vertices.reshape(-1, 3), faces=faces.reshape(-1, 3))


def primitives(geometry: Any) -> tuple[Primitive, ...]:
    """The parts that draw one coal geometry (empty for a kind the viewer cannot draw).

    Args:
        geometry: A coal ``CollisionGeometry`` (``Box``, ``Sphere``, ``Ellipsoid``,
            ``Cylinder``, ``Capsule``, ``Cone``, ``Convex``, ``BVHModel*``).
    """
    kind = type(geometry).__name__
    g: Any = geometry
    if kind == "Box":
        return (Primitive("box", tuple(2.0 * np.asarray(g.halfSide, dtype=float))),)
    if kind == "Sphere":
        return (Primitive("sphere", (float(g.radius),)),)
    if kind == "Ellipsoid":
        return (Primitive("ellipsoid", tuple(np.asarray(g.radii, dtype=float))),)
    if kind == "Cylinder":
        r, h = float(g.radius), float(g.halfLength)
        return (Primitive("cylinder", (r, 2.0 * h)),)
    if kind == "Capsule":
        r, h = float(g.radius), float(g.halfLength)
        return (
            Primitive("cylinder", (r, 2.0 * h)),
            Primitive("sphere", (r,), (0.0, 0.0, h)),
            Primitive("sphere", (r,), (0.0, 0.0, -h)),
        )
    if kind == "Cone":
        return (_cone_mesh(float(g.radius), float(g.halfLength)),)
    mesh = _triangles(g)
    return (mesh,) if mesh is not None else ()


def z_to(normal: np.ndarray) -> np.ndarray:
    """A rotation matrix taking the z axis onto the unit vector ``normal``."""
    n = np.asarray(normal, dtype=float) / np.linalg.norm(normal)
    z = np.array([0.0, 0.0, 1.0])
    axis = np.cross(z, n)
    s, c = float(np.linalg.norm(axis)), float(n[2])
    if s < 1e-12:  # along z already, or opposite to it (half a turn about x)
        return np.eye(3) if c > 0.0 else np.diag([1.0, -1.0, -1.0])
    return pin.exp3(axis / s * np.arctan2(s, c))


def _flat_primitives(geometry: Any, halfspace: bool) -> tuple[Primitive, ...]:
    """A plane or half-space: a square patch on its boundary and a line along its normal."""
    n = np.asarray(geometry.n, dtype=float)
    d = float(geometry.d)
    quat = pin.Quaternion(z_to(n))
    wxyz = (float(quat.w), float(quat.x), float(quat.y), float(quat.z))
    t = PLANE_PATCH_THICKNESS
    # A half-space n . x <= d is solid below its boundary: its patch lies just inside.
    cx, cy, cz = ((d - 0.5 * t) * n if halfspace else d * n).tolist()
    patch = Primitive("box", (PLANE_PATCH_SIZE, PLANE_PATCH_SIZE, t), (cx, cy, cz), wxyz=wxyz)
    ends = np.array([d * n, (d + NORMAL_LENGTH) * n])
    return patch, Primitive("line", vertices=ends)


def obstacle_primitives(geometry: Any) -> tuple[Primitive, ...]:
    """The parts that draw a world obstacle or attached object (every shape the world takes).

    As :func:`primitives`, and planes and half-spaces as a square patch
    :data:`PLANE_PATCH_SIZE` wide on their boundary with a line :data:`NORMAL_LENGTH`
    long along their normal.
    """
    kind = type(geometry).__name__
    if kind in ("Plane", "Halfspace"):
        return _flat_primitives(geometry, kind == "Halfspace")
    return primitives(geometry)


def anchor_point(geometry: Any) -> np.ndarray:
    """Where an obstacle's gizmo sits, in the obstacle's frame [m].

    The centre of a mesh's or hull's bounding box (a mesh file's origin may lie far
    from it), the point of a plane nearest its origin, the origin otherwise.
    """
    kind = type(geometry).__name__
    if kind in ("Plane", "Halfspace"):
        return float(geometry.d) * np.asarray(geometry.n, dtype=float)
    if hasattr(geometry, "tri_indices") and hasattr(geometry, "vertices"):
        v = np.asarray(geometry.vertices(), dtype=float).reshape(-1, 3)
    elif hasattr(geometry, "points") and int(geometry.num_points):
        v = np.asarray(geometry.points(), dtype=float).reshape(-1, 3)
    else:
        return np.zeros(3)
    return 0.5 * (v.min(axis=0) + v.max(axis=0)) if len(v) else np.zeros(3)


def _rgb(color: np.ndarray) -> tuple[tuple[int, int, int], float | None]:
    rgba = tuple(float(c) for c in np.asarray(color, dtype=float).ravel()[:4])
    if len(rgba) < 4 or np.allclose(rgba, _PINOCCHIO_DEFAULT_RGBA):
        return DEFAULT_VISUAL_RGB, None
    rgb = tuple(round(255 * min(max(c, 0.0), 1.0)) for c in rgba[:3])
    alpha = min(max(rgba[3], 0.0), 1.0)
    return (rgb[0], rgb[1], rgb[2]), (alpha if alpha < 1.0 else None)


def geometry_specs(
    geometry_model: pin.GeometryModel | None, collision: bool = False
) -> tuple[list[GeometrySpec], list[str]]:
    """What to draw for every object of a geometry model, and the names it cannot draw.

    Args:
        geometry_model: A robot's ``visual_model`` or ``collision_model`` (None: nothing).
        collision: Colour them as collision geometry (translucent orange) instead of
            with their URDF material.

    Returns:
        ``(specs, skipped)``: one spec per drawable object, and the names of objects of
        a kind the viewer cannot draw (planes, half-spaces, height fields, ...).
    """
    specs: list[GeometrySpec] = []
    skipped: list[str] = []
    if geometry_model is None:
        return specs, skipped
    for obj in geometry_model.geometryObjects:
        parts = primitives(obj.geometry)
        if not parts:
            skipped.append(obj.name)
            continue
        opacity: float | None
        if collision:
            color, opacity = COLLISION_RGB, COLLISION_OPACITY
        else:
            color, opacity = _rgb(obj.meshColor)
        specs.append(
            GeometrySpec(
                name=obj.name,
                joint=int(obj.parentJoint),
                placement=pin.SE3(obj.placement),
                color=color,
                opacity=opacity,
                parts=parts,
            )
        )
    return specs, skipped
