"""Exact distances between convex shapes, compiled: the inner routine of collision checks.

:mod:`~stackik.geometry.shapes` encodes coal shapes as integer codes, four parameters
and hull vertices (:class:`ShapeTable`); :mod:`~stackik.geometry.kernels` computes the
signed distance, witness points and normal of a pair (closed forms, GJK, EPA) in
compiled code, with coal 3's conventions (see ``docs/collision_kernels.md``). The
functions exported here check their arguments first (:mod:`~stackik.geometry.checked`):
the kernels themselves index without bounds checks.
"""

from .checked import batch_distance, shape_distance, table_distance
from .shapes import (
    BOX,
    CAPSULE,
    CONE,
    CONVEX,
    CYLINDER,
    ELLIPSOID,
    HALFSPACE,
    MESH,
    PLANE,
    SPHERE,
    ShapeTable,
    shape_code,
)

__all__ = [
    "BOX",
    "CAPSULE",
    "CONE",
    "CONVEX",
    "CYLINDER",
    "ELLIPSOID",
    "HALFSPACE",
    "MESH",
    "PLANE",
    "SPHERE",
    "ShapeTable",
    "batch_distance",
    "shape_code",
    "shape_distance",
    "table_distance",
]
