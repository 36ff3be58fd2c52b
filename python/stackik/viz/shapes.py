"""What the viewer draws for each geometry of a robot: plain data, no viser.

Each Pinocchio ``GeometryObject`` (a URDF ``<visual>`` or ``<collision>`` element, loaded
into coal) becomes a :class:`GeometrySpec`: its parent joint, its fixed placement in
that joint's frame, a colour and one or more :class:`Primitive` parts (a capsule is a
cylinder and two spheres). Meshes keep the triangles coal loaded (scaled as the URDF
asks); convex hulls keep their hull triangles.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pinocchio as pin

#: Colour of the visual geometry when the URDF gives none (Pinocchio's default grey).
DEFAULT_VISUAL_RGB = (118, 140, 170)
#: Colour of the collision geometry [0-255].
COLLISION_RGB = (235, 140, 40)
#: Opacity of the collision geometry.
COLLISION_OPACITY = 0.55
_PINOCCHIO_DEFAULT_RGBA = (0.9, 0.9, 0.9, 1.0)
_CONE_SEGMENTS = 32


@dataclass(frozen=True)
class Primitive:
    """One drawable part of a geometry, in the geometry's own frame.

    Attributes:
        kind: ``"box"``, ``"sphere"``, ``"ellipsoid"``, ``"cylinder"`` (along z) or
            ``"mesh"``.
        size: Box: full side lengths (x, y, z); sphere: (radius,); ellipsoid: radii
            (x, y, z); cylinder: (radius, length) [m]. Empty for a mesh.
        offset: Position of the part in the geometry frame [m].
        vertices: Mesh vertices (V x 3) [m], or None.
        faces: Mesh triangles (F x 3 vertex indices), or None.
    """

    kind: str
    size: tuple[float, ...] = ()
    offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    vertices: np.ndarray | None = field(default=None, compare=False)
    faces: np.ndarray | None = field(default=None, compare=False)


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
    elif hasattr(geometry, "points") and hasattr(geometry, "polygons"):
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
