"""Compiled exact distance between two convex shapes: signed distance, witnesses, normal.

Conventions (those of coal 3.0.3's ``DistanceResult`` with ``enable_signed_distance``):
the distance ``d`` [m] is negative when the shapes overlap (minus the penetration
depth, the shortest translation that separates them), ``out[0:3]`` is the witness on
shape 1, ``out[3:6]`` the witness on shape 2 and ``out[6:9]`` the unit normal pointing
from shape 1 to shape 2, in world coordinates, with ``p2 - p1 = d * n`` in every case
(also when penetrating: each witness then lies inside the other shape, and moving
shape 2 by ``-d * n`` makes the shapes touch).

Algorithms:

- closed forms where they are exact and cheap: sphere-sphere, sphere-capsule,
  capsule-capsule (segment-segment, parallel axes included), sphere-box,
  sphere-cylinder, sphere-cone (point-to-solid in the shape's frame), and every shape
  against a half-space or a plane (the shape's support point along the normal);
- GJK on support functions for every other pair (box, cylinder, cone, ellipsoid, convex
  hull), with the sub-distance of the simplex by explicit Voronoi-region tests that
  fall back to the sub-simplices when a triangle or tetrahedron is degenerate. A sphere
  enters GJK as its centre and a capsule as its segment (their "core"); their radius is
  added afterwards, so GJK converges exactly on them. GJK starts from the direction
  between the shapes' centres (a hull's centre is its vertex mean) and never from an
  earlier call: the same inputs always give bit-identical outputs;
- EPA on the cores when they overlap (or when their distance is below
  :data:`GJK_TOUCH`, where the GJK direction would be ill defined): the polytope (the
  GJK tetrahedron, faces outward) grows toward its face nearest the origin until the
  support gap is below :data:`EPA_TOL` (or :data:`EPA_REL_TOL` of the depth, or 1e-12
  of the polytope's size, whichever is larger); the depth then adds the radii. Whether a
  new vertex sees a face is judged at 1e-12 of the polytope's size too, so that the
  nearly coplanar faces of a large shape (a floor box thousands of metres wide) do not
  break the expansion.

Status:
    ``out`` may have a 10th entry; when present the kernels write a status there:

    - :data:`STATUS_OK` (0): converged (GJK duality gap below :data:`GJK_TOL`, EPA
      support gap below its tolerance: :data:`EPA_TOL` for depths up to 1 m and shapes
      up to about 1 km);
    - :data:`STATUS_GJK_CAP` (1): GJK stopped at :data:`GJK_MAX_ITER`; ``d`` is then an
      upper bound of the distance (the distance of the returned witnesses);
    - :data:`STATUS_EPA_CAP` (2): EPA stopped at :data:`EPA_MAX_VERTS`; ``-d`` is then
      the shortest separating move found, along the normal ``n`` of the face it was
      found from: an upper bound of the depth (the conservative side), above it by at
      most that face's support gap. Seen on coincident curved shapes, whose depth is
      reached along a circle of directions: exact for two cylinders, 4.6e-5 m above it
      for two cones. The witnesses are that face's points at the origin's projection,
      each moved along ``n`` onto its shape's supporting plane: within the face's
      support gap of the shapes (7e-5 m for the cones), never apart across ``n``;
    - :data:`STATUS_EPA_FAILED` (3): EPA could not grow its polytope (its horizon not
      one simple loop, or a new face flat: not seen in the tests; the result is then as
      for 2) or not even start (lower-dimensional cores: ``d`` is then GJK's, about 0
      minus the radii);
    - :data:`STATUS_UNSUPPORTED` (4): a MESH, an unknown kind or two flat kinds
      (half-space / plane pairs): every output, ``d`` included, is NaN.

    Outputs are finite for finite inputs of supported kinds in every other case.
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel, register_warmup
from .shapes import (
    BOX,
    CAPSULE,
    CONE,
    CONVEX,
    CYLINDER,
    ELLIPSOID,
    HALFSPACE,
    PLANE,
    SPHERE,
)

__all__ = [
    "EPA_MAX_VERTS",
    "EPA_REL_TOL",
    "EPA_TOL",
    "GJK_MAX_ITER",
    "GJK_TOL",
    "GJK_TOUCH",
    "STATUS_EPA_CAP",
    "STATUS_EPA_FAILED",
    "STATUS_GJK_CAP",
    "STATUS_OK",
    "STATUS_UNSUPPORTED",
    "batch_distance",
    "shape_distance",
    "table_distance",
    "table_distance_from",
]

STATUS_OK = 0
STATUS_GJK_CAP = 1
STATUS_EPA_CAP = 2
STATUS_EPA_FAILED = 3
STATUS_UNSUPPORTED = 4

#: GJK iteration cap.
GJK_MAX_ITER = 128
#: GJK stops when its duality gap (upper minus lower bound of the distance) is below
#: this [m]: a thousandth of coal's default (1e-6 m), and well above rounding (1e-15 m).
#: On curved shapes each further decade costs about 1.5 iterations.
GJK_TOL = 1e-9
#: Core distance [m] below which the pair goes to EPA (the GJK direction is noise there).
GJK_TOUCH = 1e-9
#: EPA stops when the support gap of its nearest face (the support value along the
#: face's normal minus the face's distance from the origin) is below this [m], or below
#: :data:`EPA_REL_TOL` times that distance, or below the rounding of the polytope's planes
#: (:data:`_VISIBLE` times the polytope's size), whichever is largest.
EPA_TOL = 1e-9
#: EPA's tolerance relative to the depth (only counts beyond 1 m of depth, where the
#: absolute :data:`EPA_TOL` would ask curved surfaces for more than 1e-9 of the depth).
EPA_REL_TOL = 1e-9
#: EPA polytope vertex cap (the iteration cap is this minus the 4 starting vertices).
EPA_MAX_VERTS = 256
_EPA_MAX_FACES = 2 * EPA_MAX_VERTS

#: A triangle whose doubled area is below this times its longest squared edge, or a
#: tetrahedron whose volume is below this times its longest edge cubed, is degenerate:
#: its sub-simplices decide (width below 1e-12 of the size).
_DEGENERATE = 1e-12
#: Below this [m], two core points coincide (the normal comes from the shapes' axes).
_COINCIDE = 1e-12
#: A face is visible from a new EPA vertex standing above its plane by more than this
#: times the polytope's size (its largest vertex coordinate [m]). A plane through
#: vertices of coordinates up to that size is rounded by a few 1e-16 of it, so a fixed
#: height falls below the rounding on a large polytope (a floor box hundreds of metres
#: wide makes one as wide); a vertex nearer a face than this counts as on it (the
#: polytope may then fold inward by as much, 1e-12 of its size).
_VISIBLE = 1e-12
#: An EPA face whose doubled area is below this times the product of the lengths of its
#: two edges from its first vertex is flat (its normal would be rounding): a new vertex
#: (nearly) on the line of a horizon edge, or a degenerate starting tetrahedron.
_FLAT_FACE = 1e-15
#: Blow-up of a lower-dimensional GJK simplex: a new vertex must stand this far [m].
_BLOWUP = 1e-9

_SEPARATED = 0
_CAP = 1
_OVERLAP = 2


# -- tuples and small helpers ------------------------------------------------------------
# Inside the kernels a shape's parameters are a 4-tuple, a rotation a row-major 9-tuple
# and a translation a 3-tuple of floats, and results are 11-tuples
# ``(d, p1 (3), p2 (3), n (3), status)``: numba passes tuples in registers, while every
# array handed from one compiled function to another costs reference counting.
@kernel
def _mv(M: tuple, x: float, y: float, z: float) -> tuple[float, float, float]:
    """``M @ (x, y, z)`` for a row-major 9-tuple ``M``."""
    return (
        M[0] * x + M[1] * y + M[2] * z,
        M[3] * x + M[4] * y + M[5] * z,
        M[6] * x + M[7] * y + M[8] * z,
    )


@kernel
def _mtv(M: tuple, x: float, y: float, z: float) -> tuple[float, float, float]:
    """``M.T @ (x, y, z)`` for a row-major 9-tuple ``M``."""
    return (
        M[0] * x + M[3] * y + M[6] * z,
        M[1] * x + M[4] * y + M[7] * z,
        M[2] * x + M[5] * y + M[8] * z,
    )


@kernel
def _sgn(x: float) -> float:
    """Sign of ``x`` with ``sign(0) = 0`` (a tie picks the face or edge middle)."""
    if x > 0.0:
        return 1.0
    if x < 0.0:
        return -1.0
    return 0.0


@kernel
def _clamp(x: float, lo: float, hi: float) -> float:
    """``x`` clamped to ``[lo, hi]``."""
    return min(max(x, lo), hi)


@kernel
def _unit(x: float, y: float, z: float) -> tuple[float, float, float]:
    """``(x, y, z)`` normalised (``(1, 0, 0)`` for the zero vector)."""
    norm = math.sqrt(x * x + y * y + z * z)
    if norm == 0.0:
        return 1.0, 0.0, 0.0
    return x / norm, y / norm, z / norm


@kernel
def _det(a: tuple, b: tuple, c: tuple) -> float:
    """``a . (b x c)`` of three 3-tuples."""
    return (
        a[0] * (b[1] * c[2] - b[2] * c[1])
        + a[1] * (b[2] * c[0] - b[0] * c[2])
        + a[2] * (b[0] * c[1] - b[1] * c[0])
    )


@kernel
def _result(d: float, a: tuple, b: tuple, n: tuple, status: float) -> tuple:
    """The 11-tuple ``(d, a, b, n, status)``."""
    return (d, a[0], a[1], a[2], b[0], b[1], b[2], n[0], n[1], n[2], status)


@kernel
def _swapped(r: tuple) -> tuple:
    """A result with the roles of the shapes exchanged (witnesses swapped, normal reversed)."""
    return (r[0], r[4], r[5], r[6], r[1], r[2], r[3], -r[7], -r[8], -r[9], r[10])


@kernel
def _store(out: np.ndarray, r: tuple) -> float:
    """Write a result to ``out`` (witnesses, normal, and the status when ``out[9]`` exists)."""
    m = min(out.shape[0], 10)
    for c in range(m):
        out[c] = r[c + 1]
    return r[0]


# -- support functions (local frame, core only: no swept radius) -------------------------
@kernel
def _support_round(
    kind: int, r: float, h: float, dx: float, dy: float, dz: float
) -> tuple[float, float, float]:
    """Support point of a cylinder or a cone (apex at ``+h``) along ``d``."""
    rho = math.sqrt(dx * dx + dy * dy)
    ux, uy = (dx / rho, dy / rho) if rho > 0.0 else (0.0, 0.0)
    if kind == CYLINDER:
        return r * ux, r * uy, h * _sgn(dz)
    if r * rho - h * dz > h * dz:  # the base rim (its centre when rho = 0) beats the apex
        return r * ux, r * uy, -h
    return 0.0, 0.0, h


@kernel(inline=True)
def _support_hull(
    verts: np.ndarray, vs: int, ve: int, dx: float, dy: float, dz: float
) -> tuple[float, float, float]:
    """The first vertex of ``verts[vs:ve]`` of largest dot product with ``d``."""
    best, best_v = vs, -math.inf
    for i in range(vs, ve):
        v = verts[i, 0] * dx + verts[i, 1] * dy + verts[i, 2] * dz
        if v > best_v:
            best, best_v = i, v
    if ve <= vs:
        return 0.0, 0.0, 0.0
    return verts[best, 0], verts[best, 1], verts[best, 2]


@kernel
def _support_prim(kind: int, p: tuple, dx: float, dy: float, dz: float) -> tuple:
    """Support point of a primitive's core (any kind but CONVEX) along local ``d``.

    A sphere's core is its centre, a capsule's its segment; ties pick the middle of a
    face or edge.
    """
    if kind == CAPSULE:
        return 0.0, 0.0, p[1] * _sgn(dz)
    if kind == BOX:
        return p[0] * _sgn(dx), p[1] * _sgn(dy), p[2] * _sgn(dz)
    if kind == CYLINDER or kind == CONE:
        return _support_round(kind, p[0], p[1], dx, dy, dz)
    if kind == ELLIPSOID:
        ex, ey, ez = p[0] * p[0] * dx, p[1] * p[1] * dy, p[2] * p[2] * dz
        den = math.sqrt(ex * dx + ey * dy + ez * dz)
        if den == 0.0:
            return 0.0, 0.0, 0.0
        return ex / den, ey / den, ez / den
    return 0.0, 0.0, 0.0  # a sphere's core


@kernel(inline=True)
def _support(shape: tuple, dx: float, dy: float, dz: float) -> tuple[float, float, float]:
    """Support point of a shape's core along the local direction ``d`` (local frame).

    ``shape`` is ``(kind, params, verts, vs, ve)`` (the vertices serve CONVEX only).
    """
    kind, p, verts, vs, ve = shape
    if kind == CONVEX:
        return _support_hull(verts, vs, ve, dx, dy, dz)
    return _support_prim(kind, p, dx, dy, dz)


@kernel
def _centre(shape: tuple) -> tuple[float, float, float]:
    """An interior point of the shape's core (local): the vertex mean of a hull, else 0."""
    kind, _, verts, vs, ve = shape
    sx = sy = sz = 0.0
    if kind == CONVEX and ve > vs:
        for i in range(vs, ve):
            sx += verts[i, 0]
            sy += verts[i, 1]
            sz += verts[i, 2]
        m = 1.0 / (ve - vs)
        sx, sy, sz = sx * m, sy * m, sz * m
    return sx, sy, sz


# -- closed forms -------------------------------------------------------------------------
@kernel
def _balls(a: tuple, r1: float, b: tuple, r2: float, fallback: tuple) -> tuple:
    """Two balls of radii ``r1``, ``r2`` centred at the core points ``a``, ``b`` (world).

    When the centres coincide (below :data:`_COINCIDE`) the normal is ``fallback``.
    """
    dx, dy, dz = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    dd = math.sqrt(dx * dx + dy * dy + dz * dz)
    if dd > _COINCIDE:
        n = (dx / dd, dy / dd, dz / dd)
    else:
        n = _unit(fallback[0], fallback[1], fallback[2])
    p1 = (a[0] + r1 * n[0], a[1] + r1 * n[1], a[2] + r1 * n[2])
    p2 = (b[0] - r2 * n[0], b[1] - r2 * n[1], b[2] - r2 * n[2])
    return _result(dd - r1 - r2, p1, p2, n, 0.0)


@kernel
def _sphere_capsule(r1: float, c: tuple, P2: tuple, M2: tuple, T2: tuple) -> tuple:
    """Sphere (radius ``r1``, centre ``c``) against a capsule.

    When the centre is on the capsule's axis the normal is the capsule's x axis (coal's
    choice).
    """
    s = _clamp(
        M2[2] * (c[0] - T2[0]) + M2[5] * (c[1] - T2[1]) + M2[8] * (c[2] - T2[2]), -P2[1], P2[1]
    )
    q = (T2[0] + s * M2[2], T2[1] + s * M2[5], T2[2] + s * M2[8])
    return _balls(c, r1, q, P2[0], (M2[0], M2[3], M2[6]))


@kernel
def _segments(d: float, e: float, b: float, h1: float, h2: float) -> tuple[float, float]:
    """Parameters ``(s, t)`` of the closest points of ``c1 + s e1`` and ``c2 + t e2``.

    ``b = e1 . e2``, ``d = e1 . (c1 - c2)``, ``e = e2 . (c1 - c2)``, half lengths ``h1``,
    ``h2``. Parallel axes take the middle of the overlap of their shadows.
    """
    den = 1.0 - b * b
    if den > 1e-14:
        s = _clamp((b * e - d) / den, -h1, h1)
    else:  # parallel: the middle of segment 2's shadow on segment 1, clamped
        shift = -d  # = e1 . (c2 - c1): where segment 2's centre falls on axis 1
        lo = max(shift - h2, -h1)
        hi = min(shift + h2, h1)
        s = 0.5 * (lo + hi) if lo <= hi else _clamp(shift, -h1, h1)
    t = _clamp(s * b + e, -h2, h2)
    s = _clamp(t * b - d, -h1, h1)
    return s, t


@kernel
def _capsules(P1: tuple, M1: tuple, T1: tuple, P2: tuple, M2: tuple, T2: tuple) -> tuple:
    """Capsule against capsule: closest points of the axes, then two balls."""
    e1 = (M1[2], M1[5], M1[8])
    e2 = (M2[2], M2[5], M2[8])
    rx, ry, rz = T1[0] - T2[0], T1[1] - T2[1], T1[2] - T2[2]
    b = e1[0] * e2[0] + e1[1] * e2[1] + e1[2] * e2[2]
    d = e1[0] * rx + e1[1] * ry + e1[2] * rz
    e = e2[0] * rx + e2[1] * ry + e2[2] * rz
    s, t = _segments(d, e, b, P1[1], P2[1])
    a = (T1[0] + s * e1[0], T1[1] + s * e1[1], T1[2] + s * e1[2])
    q = (T2[0] + t * e2[0], T2[1] + t * e2[1], T2[2] + t * e2[2])
    cx = e1[1] * e2[2] - e1[2] * e2[1]
    cy = e1[2] * e2[0] - e1[0] * e2[2]
    cz = e1[0] * e2[1] - e1[1] * e2[0]
    if cx * cx + cy * cy + cz * cz < 1e-18:  # parallel axes: capsule 1's x axis
        cx, cy, cz = M1[0], M1[3], M1[6]
    return _balls(a, P1[0], q, P2[0], (cx, cy, cz))


@kernel
def _box_point(h: tuple, x: float, y: float, z: float) -> tuple:
    """Local point against a box: ``(sd, q (3), m (3))``.

    ``sd`` [m] is the signed distance, ``q`` the nearest surface point, ``m`` the outward
    normal there (inside: the least deep face; ties in x, y, z order).
    """
    qx, qy, qz = _clamp(x, -h[0], h[0]), _clamp(y, -h[1], h[1]), _clamp(z, -h[2], h[2])
    ox, oy, oz = x - qx, y - qy, z - qz
    out = math.sqrt(ox * ox + oy * oy + oz * oz)
    if out > 0.0:
        return out, qx, qy, qz, ox / out, oy / out, oz / out
    sx = 1.0 if x >= 0.0 else -1.0
    sy = 1.0 if y >= 0.0 else -1.0
    sz = 1.0 if z >= 0.0 else -1.0
    dx, dy, dz = h[0] - abs(x), h[1] - abs(y), h[2] - abs(z)
    if dx <= dy and dx <= dz:
        return -dx, sx * h[0], y, z, sx, 0.0, 0.0
    if dy <= dz:
        return -dy, x, sy * h[1], z, 0.0, sy, 0.0
    return -dz, x, y, sz * h[2], 0.0, 0.0, sz


@kernel
def _cylinder_point(r: float, h: float, x: float, y: float, z: float) -> tuple:
    """As :func:`_box_point` for a cylinder (radius ``r``, half length ``h``, axis z)."""
    rho = math.sqrt(x * x + y * y)
    ux, uy = (x / rho, y / rho) if rho > 0.0 else (1.0, 0.0)
    sz = 1.0 if z >= 0.0 else -1.0
    dr, dz = rho - r, abs(z) - h
    if dr > 0.0 and dz > 0.0:  # beyond the rim
        d = math.sqrt(dr * dr + dz * dz)
        return d, r * ux, r * uy, sz * h, dr * ux / d, dr * uy / d, dz * sz / d
    if dr >= dz:  # the side is nearer (outside), or less deep (inside)
        return dr, r * ux, r * uy, z, ux, uy, 0.0
    return dz, x, y, sz * h, 0.0, 0.0, sz


@kernel
def _cone_section(r: float, h: float, rho: float, z: float) -> tuple:
    """Meridian point ``(rho >= 0, z)`` against a cone's section: ``(sd, q (2), m (2))``.

    The section is the triangle (0, h) apex, (r, -h) rim, (0, -h); its edge on the axis
    is no boundary of the cone.
    """
    length = math.sqrt(4.0 * h * h + r * r)
    mr, mz = 2.0 * h / length, r / length  # outward normal of the slanted side
    slant = mr * rho + mz * (z - h)  # signed height above the slanted side's line
    base = -h - z  # signed height below the base
    if slant <= 0.0 and base <= 0.0:  # inside: the less deep of side and base
        if slant >= base:
            return slant, rho - slant * mr, z - slant * mz, mr, mz
        return base, rho, -h, 0.0, -1.0
    t = _clamp((rho * r - (z - h) * 2.0 * h) / (length * length), 0.0, 1.0)
    ar, az = t * r, h - 2.0 * h * t  # nearest point of the slanted side
    br = _clamp(rho, 0.0, r)  # nearest point of the base
    da = (rho - ar) ** 2 + (z - az) ** 2
    db = (rho - br) ** 2 + (z + h) ** 2
    qr, qz, dd = (ar, az, da) if da <= db else (br, -h, db)
    d = math.sqrt(dd)
    return d, qr, qz, (rho - qr) / d, (z - qz) / d


@kernel
def _cone_point(r: float, h: float, x: float, y: float, z: float) -> tuple:
    """As :func:`_box_point` for a cone (apex at ``z = h``, base of radius ``r`` at -h)."""
    rho = math.sqrt(x * x + y * y)
    ux, uy = (x / rho, y / rho) if rho > 0.0 else (1.0, 0.0)
    sd, qr, qz, mr, mz = _cone_section(r, h, rho, z)
    return sd, qr * ux, qr * uy, qz, mr * ux, mr * uy, mz


@kernel
def _sphere_solid(r1: float, c: tuple, k2: int, P2: tuple, M2: tuple, T2: tuple) -> tuple:
    """Sphere (radius ``r1``, centre ``c``) against a box, cylinder or cone (closed form)."""
    x, y, z = _mtv(M2, c[0] - T2[0], c[1] - T2[1], c[2] - T2[2])
    if k2 == BOX:
        sd, qx, qy, qz, mx, my, mz = _box_point(P2, x, y, z)
    elif k2 == CYLINDER:
        sd, qx, qy, qz, mx, my, mz = _cylinder_point(P2[0], P2[1], x, y, z)
    else:
        sd, qx, qy, qz, mx, my, mz = _cone_point(P2[0], P2[1], x, y, z)
    wx, wy, wz = _mv(M2, qx, qy, qz)
    n = _mv(M2, -mx, -my, -mz)  # from the sphere to the solid
    p1 = (c[0] + r1 * n[0], c[1] + r1 * n[1], c[2] + r1 * n[2])
    return _result(sd - r1, p1, (T2[0] + wx, T2[1] + wy, T2[2] + wz), n, 0.0)


@kernel
def _to_world(M: tuple, T: tuple, s: tuple, radius: float, n: tuple) -> tuple:
    """World point of the local core point ``s``, pushed ``radius`` along the unit ``n``."""
    wx, wy, wz = _mv(M, s[0], s[1], s[2])
    return T[0] + wx + radius * n[0], T[1] + wy + radius * n[1], T[2] + wz + radius * n[2]


@kernel
def _flat_frame(P2: tuple, M2: tuple, T2: tuple) -> tuple:
    """World unit normal and offset ``(nx, ny, nz, level)`` of a half-space or plane."""
    nl = math.sqrt(P2[0] * P2[0] + P2[1] * P2[1] + P2[2] * P2[2])
    nx, ny, nz = _mv(M2, P2[0] / nl, P2[1] / nl, P2[2] / nl)
    return nx, ny, nz, P2[3] / nl + nx * T2[0] + ny * T2[1] + nz * T2[2]


@kernel
def _flat_pick(k2: int, plane: tuple, lo: tuple, hi: tuple) -> tuple:
    """A shape (lowest point ``lo``, highest ``hi`` along the normal) against a flat shape.

    Half-space ``n . x <= d``: the height of the shape's lowest point along ``n``.
    Plane ``n . x = d``: the smaller of the pushes that clear the plane upward (the
    lowest point's height; ties push upward) and downward (minus the highest point's
    height), as coal. Witness 1 is that support point, witness 2 its projection.
    """
    nx, ny, nz, level = plane
    s, d, sign = lo, nx * lo[0] + ny * lo[1] + nz * lo[2] - level, -1.0
    if k2 == PLANE:
        b = nx * hi[0] + ny * hi[1] + nz * hi[2] - level  # height of the highest point
        if -d > b:
            s, d, sign = hi, -b, 1.0
    n = (sign * nx, sign * ny, sign * nz)
    return _result(d, s, (s[0] + d * n[0], s[1] + d * n[1], s[2] + d * n[2]), n, 0.0)


@kernel
def _flat_prim(
    k1: int, P1: tuple, M1: tuple, T1: tuple, k2: int, P2: tuple, M2: tuple, T2: tuple
) -> tuple:
    """A primitive (not CONVEX) against a half-space or plane, from its support points."""
    plane = _flat_frame(P2, M2, T2)
    up = (plane[0], plane[1], plane[2])
    down = (-plane[0], -plane[1], -plane[2])
    r1 = _swept(k1, P1)
    dl = _mtv(M1, down[0], down[1], down[2])
    lo = _to_world(M1, T1, _support_prim(k1, P1, dl[0], dl[1], dl[2]), r1, down)
    hi = _to_world(M1, T1, _support_prim(k1, P1, -dl[0], -dl[1], -dl[2]), r1, up)
    return _flat_pick(k2, plane, lo, hi)


@kernel
def _flat_hull(
    M1: tuple, T1: tuple, v1: np.ndarray, s1: int, e1: int, k2: int, P2: tuple, M2: tuple, T2: tuple
) -> tuple:
    """A convex hull (vertices ``v1[s1:e1]``) against a half-space or plane."""
    plane = _flat_frame(P2, M2, T2)
    up = (plane[0], plane[1], plane[2])
    down = (-plane[0], -plane[1], -plane[2])
    dl = _mtv(M1, down[0], down[1], down[2])
    lo = _to_world(M1, T1, _support_hull(v1, s1, e1, dl[0], dl[1], dl[2]), 0.0, down)
    hi = _to_world(M1, T1, _support_hull(v1, s1, e1, -dl[0], -dl[1], -dl[2]), 0.0, up)
    return _flat_pick(k2, plane, lo, hi)


# -- GJK ----------------------------------------------------------------------------------
# Workspace W (8, 9): rows 0-3 the simplex (w = a - b, a, b, in shape 1's frame), rows
# 4-6 columns 0-3 the weights and two scratch weight rows, row 7 the GJK point v.
_LAM, _TMP, _TMP2, _V = 4, 5, 6, 7


@kernel(inline=True)
def _support_pair(
    shape1: tuple, shape2: tuple, Mr: tuple, Tr: tuple, dx: float, dy: float, dz: float
) -> tuple:
    """Support point ``(a - b, a, b)`` of the difference of the cores along ``d``.

    ``a`` is on core 1 along ``d``, ``b`` on core 2 along ``-d``, all in shape 1's frame
    (where shape 2 sits at ``x -> Mr x + Tr``).
    """
    ax, ay, az = _support(shape1, dx, dy, dz)
    lx, ly, lz = _mtv(Mr, -dx, -dy, -dz)
    sx, sy, sz = _support(shape2, lx, ly, lz)
    bx, by, bz = _mv(Mr, sx, sy, sz)
    bx, by, bz = bx + Tr[0], by + Tr[1], bz + Tr[2]
    return (ax - bx, ay - by, az - bz, ax, ay, az, bx, by, bz)


@kernel(inline=True)
def _put(W: np.ndarray, row: int, w: tuple) -> None:
    """``W[row, 0:9] = w``."""
    for c in range(9):
        W[row, c] = w[c]


@kernel(inline=True)
def _seg(W: np.ndarray, i: int, j: int, dst: int) -> float:
    """Closest point to the origin of segment ``W[i], W[j]``: its squared norm.

    The weights go to ``W[dst, 0:4]`` (all four written).
    """
    ax, ay, az = W[i, 0], W[i, 1], W[i, 2]
    ux, uy, uz = W[j, 0] - ax, W[j, 1] - ay, W[j, 2] - az
    den = ux * ux + uy * uy + uz * uz
    t = 0.0
    if den > 0.0:
        t = _clamp(-(ax * ux + ay * uy + az * uz) / den, 0.0, 1.0)
    for c in range(4):
        W[dst, c] = 0.0
    W[dst, i] = 1.0 - t
    W[dst, j] = t
    px, py, pz = ax + t * ux, ay + t * uy, az + t * uz
    return px * px + py * py + pz * pz


@kernel(inline=True)
def _keep_best(W: np.ndarray, best: float, cand: float, dst: int, src: int) -> float:
    """Copy the candidate weights ``W[src]`` to ``W[dst]`` when ``cand < best``."""
    if cand < best:
        for c in range(4):
            W[dst, c] = W[src, c]
        return cand
    return best


@kernel(inline=True)
def _tri_edges(W: np.ndarray, i: int, j: int, k: int, use: tuple, dst: int, tmp: int) -> float:
    """Best of the triangle's edges opposite the vertices flagged in ``use``."""
    best = math.inf
    if use[0]:
        best = _keep_best(W, best, _seg(W, j, k, tmp), dst, tmp)
    if use[1]:
        best = _keep_best(W, best, _seg(W, k, i, tmp), dst, tmp)
    if use[2]:
        best = _keep_best(W, best, _seg(W, i, j, tmp), dst, tmp)
    return best


@kernel
def _tri(W: np.ndarray, i: int, j: int, k: int, dst: int, tmp: int) -> float:
    """Closest point to the origin of triangle ``W[i], W[j], W[k]``: squared distance.

    The origin's projection on the plane if inside, else the best edge facing the origin
    (every edge when the triangle is degenerate); weights in ``W[dst, 0:4]``.
    """
    ax, ay, az = W[i, 0], W[i, 1], W[i, 2]
    bx, by, bz = W[j, 0] - ax, W[j, 1] - ay, W[j, 2] - az
    cx, cy, cz = W[k, 0] - ax, W[k, 1] - ay, W[k, 2] - az
    nx, ny, nz = by * cz - bz * cy, bz * cx - bx * cz, bx * cy - by * cx
    nn = nx * nx + ny * ny + nz * nz
    ex, ey, ez = cx - bx, cy - by, cz - bz
    scale = max(bx * bx + by * by + bz * bz, cx * cx + cy * cy + cz * cz)
    scale = max(scale, ex * ex + ey * ey + ez * ez)
    flat = nn <= _DEGENERATE * _DEGENERATE * scale * scale
    if flat:
        return _tri_edges(W, i, j, k, (flat, flat, flat), dst, tmp)
    inv = 1.0 / nn
    f = (nx * ax + ny * ay + nz * az) * inv
    q = (f * nx - ax, f * ny - ay, f * nz - az)  # the projection, relative to W[i]
    nrm = (nx * inv, ny * inv, nz * inv)
    wj = _det(nrm, q, (cx, cy, cz))  # barycentric weights of the projection
    wk = _det(nrm, (bx, by, bz), q)
    wi = 1.0 - wj - wk
    if wi >= 0.0 and wj >= 0.0 and wk >= 0.0:
        for c in range(4):
            W[dst, c] = 0.0
        W[dst, i], W[dst, j], W[dst, k] = wi, wj, wk
        return f * f * nn
    return _tri_edges(W, i, j, k, (wi < 0.0, wj < 0.0, wk < 0.0), dst, tmp)


@kernel
def _tet_weights(W: np.ndarray) -> tuple:
    """Barycentric weights of the origin in the tetrahedron ``W[0:4]``: ``(ok, w0..w3)``.

    ``ok`` is False when the tetrahedron is degenerate (volume below :data:`_DEGENERATE`
    times the cube of twice its longest edge from ``W[0]``).
    """
    a = (W[0, 0], W[0, 1], W[0, 2])
    ab = (W[1, 0] - a[0], W[1, 1] - a[1], W[1, 2] - a[2])
    ac = (W[2, 0] - a[0], W[2, 1] - a[1], W[2, 2] - a[2])
    ad = (W[3, 0] - a[0], W[3, 1] - a[1], W[3, 2] - a[2])
    vol = _det(ab, ac, ad)
    size = max(
        ab[0] * ab[0] + ab[1] * ab[1] + ab[2] * ab[2], ac[0] * ac[0] + ac[1] * ac[1] + ac[2] * ac[2]
    )
    size = 4.0 * max(size, ad[0] * ad[0] + ad[1] * ad[1] + ad[2] * ad[2])  # >= longest edge^2
    if abs(vol) <= _DEGENERATE * size * math.sqrt(size):
        return False, 0.0, 0.0, 0.0, 0.0
    ma = (-a[0], -a[1], -a[2])  # the origin relative to W[0]
    inv = 1.0 / vol
    w1 = _det(ma, ac, ad) * inv
    w2 = _det(ab, ma, ad) * inv
    w3 = _det(ab, ac, ma) * inv
    return True, 1.0 - w1 - w2 - w3, w1, w2, w3


@kernel
def _tet(W: np.ndarray) -> float:
    """Closest point to the origin of the tetrahedron ``W[0:4]``: squared distance.

    0 when the origin is inside (the four weights kept); else the best face facing the
    origin (every face when the tetrahedron is degenerate). Weights in ``W[_LAM]``.
    """
    ok, w0, w1, w2, w3 = _tet_weights(W)
    if ok and w0 >= 0.0 and w1 >= 0.0 and w2 >= 0.0 and w3 >= 0.0:
        W[_LAM, 0], W[_LAM, 1], W[_LAM, 2], W[_LAM, 3] = w0, w1, w2, w3
        return 0.0
    weights = (w0, w1, w2, w3)
    lam, tmp, tmp2 = np.int64(_LAM), np.int64(_TMP), np.int64(_TMP2)
    best = math.inf
    for f in range(4):  # the face opposite vertex f
        if not ok or weights[f] < 0.0:
            i, j, k = (f + 1) % 4, (f + 2) % 4, (f + 3) % 4
            best = _keep_best(W, best, _tri(W, i, j, k, tmp, tmp2), lam, tmp)
    return best


@kernel
def _closest(W: np.ndarray, n: int) -> float:
    """Squared distance of the simplex ``W[0:n]`` to the origin; weights in ``W[_LAM]``."""
    if n == 1:
        W[_LAM, 0], W[_LAM, 1], W[_LAM, 2], W[_LAM, 3] = 1.0, 0.0, 0.0, 0.0
        return W[0, 0] * W[0, 0] + W[0, 1] * W[0, 1] + W[0, 2] * W[0, 2]
    i0, lam, tmp = np.int64(0), np.int64(_LAM), np.int64(_TMP)
    if n == 2:
        return _seg(W, i0, i0 + 1, lam)
    if n == 3:
        return _tri(W, i0, i0 + 1, i0 + 2, lam, tmp)
    return _tet(W)


@kernel(inline=True)
def _compact(W: np.ndarray, n: int) -> int:
    """Keep the simplex vertices of positive weight (rows and weights moved up); count."""
    m = 0
    for i in range(n):
        if W[_LAM, i] > 0.0:
            if m != i:
                for c in range(9):
                    W[m, c] = W[i, c]
                W[_LAM, m] = W[_LAM, i]
            m += 1
    return m


@kernel(inline=True)
def _known(W: np.ndarray, n: int, w: tuple) -> bool:
    """Whether the point ``w`` repeats a simplex vertex (GJK made no progress)."""
    for i in range(n):
        dx, dy, dz = w[0] - W[i, 0], w[1] - W[i, 1], w[2] - W[i, 2]
        if dx * dx + dy * dy + dz * dz <= 1e-28:
            return True
    return False


@kernel
def _gjk(shape1: tuple, shape2: tuple, Mr: tuple, Tr: tuple, W: np.ndarray) -> tuple[int, int]:
    """GJK on the cores in shape 1's frame: ``(simplex size, state)``.

    ``W[_V]`` holds the start direction on entry and the closest point of the Minkowski
    difference found on exit; the simplex is ``W[0:n]`` with weights ``W[_LAM, 0:n]``.
    The state is ``_SEPARATED`` (duality gap below :data:`GJK_TOL`, or no progress),
    ``_CAP`` (iteration cap) or ``_OVERLAP`` (origin in the simplex, or within
    :data:`GJK_TOUCH` of it).
    """
    n = np.int64(0)
    prev = math.inf
    vx, vy, vz = W[_V, 0], W[_V, 1], W[_V, 2]
    for it in range(GJK_MAX_ITER):
        w = _support_pair(shape1, shape2, Mr, Tr, -vx, -vy, -vz)
        if it > 0:
            vv = vx * vx + vy * vy + vz * vz
            if vv - (vx * w[0] + vy * w[1] + vz * w[2]) <= GJK_TOL * math.sqrt(vv):
                return n, _SEPARATED
            if _known(W, n, w):
                return n, _SEPARATED
        _put(W, n, w)
        d2 = _closest(W, n + 1)
        if n == 3 and d2 == 0.0:
            return 4, _OVERLAP
        n = _compact(W, n + 1)
        vx = vy = vz = 0.0
        for i in range(n):
            vx += W[_LAM, i] * W[i, 0]
            vy += W[_LAM, i] * W[i, 1]
            vz += W[_LAM, i] * W[i, 2]
        W[_V, 0], W[_V, 1], W[_V, 2] = vx, vy, vz
        if d2 <= GJK_TOUCH * GJK_TOUCH:
            return n, _OVERLAP
        if d2 >= prev:  # no progress (rounding): v is the best point found
            return n, _SEPARATED
        prev = d2
    return n, _CAP


@kernel(inline=True)
def _gjk_result(W: np.ndarray, n: int) -> tuple:
    """Core distance, witnesses (shape 1's frame) and normal of a GJK simplex."""
    ax = ay = az = bx = by = bz = 0.0
    for i in range(n):
        lam = W[_LAM, i]
        ax, ay, az = ax + lam * W[i, 3], ay + lam * W[i, 4], az + lam * W[i, 5]
        bx, by, bz = bx + lam * W[i, 6], by + lam * W[i, 7], bz + lam * W[i, 8]
    vx, vy, vz = ax - bx, ay - by, az - bz
    d = math.sqrt(vx * vx + vy * vy + vz * vz)
    return d, (ax, ay, az), (bx, by, bz), _unit(-vx, -vy, -vz)


# -- EPA ----------------------------------------------------------------------------------
@kernel
def _perp(x: float, y: float, z: float) -> tuple[float, float, float]:
    """A unit vector perpendicular to the non-zero ``(x, y, z)`` (crossed with its least axis)."""
    ax, ay, az = abs(x), abs(y), abs(z)
    if ax <= ay and ax <= az:
        return _unit(0.0, z, -y)
    if ay <= az:
        return _unit(-z, 0.0, x)
    return _unit(y, -x, 0.0)


@kernel
def _tri_normal(W: np.ndarray, i: int, j: int, k: int) -> tuple[float, float, float]:
    """Unit normal ``(W[j] - W[i]) x (W[k] - W[i])`` (x axis when degenerate)."""
    bx, by, bz = W[j, 0] - W[i, 0], W[j, 1] - W[i, 1], W[j, 2] - W[i, 2]
    cx, cy, cz = W[k, 0] - W[i, 0], W[k, 1] - W[i, 1], W[k, 2] - W[i, 2]
    return _unit(by * cz - bz * cy, bz * cx - bx * cz, bx * cy - by * cx)


@kernel
def _off_hull(W: np.ndarray, n: int, w: tuple) -> float:
    """Squared distance of ``w`` to the affine hull of the simplex ``W[0:n]`` (n <= 3)."""
    wx, wy, wz = w[0] - W[0, 0], w[1] - W[0, 1], w[2] - W[0, 2]
    if n == 1:
        return wx * wx + wy * wy + wz * wz
    if n == 2:
        ux, uy, uz = _unit(W[1, 0] - W[0, 0], W[1, 1] - W[0, 1], W[1, 2] - W[0, 2])
        along = wx * ux + wy * uy + wz * uz
        return wx * wx + wy * wy + wz * wz - along * along
    i0 = np.int64(0)
    ux, uy, uz = _tri_normal(W, i0, i0 + 1, i0 + 2)
    return (wx * ux + wy * uy + wz * uz) ** 2


@kernel
def _blow_directions(W: np.ndarray, n: int) -> tuple:
    """Three search directions off the simplex ``W[0:n]`` (axes; perpendiculars; normal)."""
    if n == 1:
        return (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
    if n == 2:
        ex, ey, ez = W[1, 0] - W[0, 0], W[1, 1] - W[0, 1], W[1, 2] - W[0, 2]
        d1 = _perp(ex, ey, ez)
        d2 = _unit(ey * d1[2] - ez * d1[1], ez * d1[0] - ex * d1[2], ex * d1[1] - ey * d1[0])
        return d1, d2, _unit(d1[0] + d2[0], d1[1] + d2[1], d1[2] + d2[2])
    i0 = np.int64(0)
    d1 = _tri_normal(W, i0, i0 + 1, i0 + 2)
    return d1, d1, d1


@kernel
def _blow_up(shape1: tuple, shape2: tuple, Mr: tuple, Tr: tuple, W: np.ndarray, n: int) -> int:
    """Grow a GJK simplex at the origin to a tetrahedron; returns its size (4: done).

    Support points are tried along directions off the simplex (both ways); one is kept
    when it stands :data:`_BLOWUP` off the simplex's affine hull.
    """
    while n < 4:
        dirs = _blow_directions(W, n)
        added = False
        for idx in range(6):
            d = dirs[idx // 2]
            sign = 1.0 if idx % 2 == 0 else -1.0
            w = _support_pair(shape1, shape2, Mr, Tr, sign * d[0], sign * d[1], sign * d[2])
            if _off_hull(W, n, w) > _BLOWUP * _BLOWUP:
                _put(W, n, w)
                added = True
                break
        if not added:
            return n
        n += 1
    return n


# EPA arrays: E (float) rows 0..EPA_MAX_VERTS-1 the vertices (w, a, b), row
# EPA_MAX_VERTS + f the unit normal and plane offset of face f (columns 0-3);
# G (int) row f: vertices (0-2), neighbours across edges (3-5), alive (6), mark (7),
# and columns 8-13 as lists: visible faces (8), free slots (9), new slots (10), horizon
# edges (11-13); row _EPA_MAX_FACES: faces in use (0) and free slots (1).
_NV = EPA_MAX_VERTS


@kernel
def _cross(E: np.ndarray, i: int, j: int, k: int) -> tuple[float, float, float, bool]:
    """``(E[j] - E[i]) x (E[k] - E[i])`` of three EPA vertices, and whether it is flat.

    Flat: its norm (the doubled area) is below :data:`_FLAT_FACE` times the lengths of
    the two edges, whatever the size of the polytope.
    """
    bx, by, bz = E[j, 0] - E[i, 0], E[j, 1] - E[i, 1], E[j, 2] - E[i, 2]
    cx, cy, cz = E[k, 0] - E[i, 0], E[k, 1] - E[i, 1], E[k, 2] - E[i, 2]
    nx, ny, nz = by * cz - bz * cy, bz * cx - bx * cz, bx * cy - by * cx
    nn = nx * nx + ny * ny + nz * nz
    bc = (bx * bx + by * by + bz * bz) * (cx * cx + cy * cy + cz * cz)
    return nx, ny, nz, nn <= _FLAT_FACE * _FLAT_FACE * bc


@kernel
def _face(E: np.ndarray, G: np.ndarray, f: int, i: int, j: int, k: int) -> bool:
    """Face ``f`` := vertices ``(i, j, k)`` (counter-clockwise from outside), alive.

    Its unit normal and plane offset go to ``E[_NV + f]``; False when flat
    (:func:`_cross`; the plane is then left at infinity).
    """
    G[f, 0], G[f, 1], G[f, 2] = i, j, k
    G[f, 6] = 1
    G[f, 7] = -1
    nx, ny, nz, flat = _cross(E, i, j, k)
    if flat:
        E[_NV + f, 0], E[_NV + f, 1], E[_NV + f, 2], E[_NV + f, 3] = 0.0, 0.0, 0.0, math.inf
        return False
    norm = math.sqrt(nx * nx + ny * ny + nz * nz)
    nx, ny, nz = nx / norm, ny / norm, nz / norm
    E[_NV + f, 0], E[_NV + f, 1], E[_NV + f, 2] = nx, ny, nz
    E[_NV + f, 3] = nx * E[i, 0] + ny * E[i, 1] + nz * E[i, 2]
    return True


@kernel
def _epa_start(W: np.ndarray, E: np.ndarray, G: np.ndarray) -> bool:
    """The starting polytope of EPA: the GJK tetrahedron ``W[0:4]``, faces outward."""
    for i in range(4):
        for c in range(9):
            E[i, c] = W[i, c]
    g = (
        0.25 * (E[0, 0] + E[1, 0] + E[2, 0] + E[3, 0]) - E[0, 0],
        0.25 * (E[0, 1] + E[1, 1] + E[2, 1] + E[3, 1]) - E[0, 1],
        0.25 * (E[0, 2] + E[1, 2] + E[2, 2] + E[3, 2]) - E[0, 2],
    )
    ab = (E[1, 0] - E[0, 0], E[1, 1] - E[0, 1], E[1, 2] - E[0, 2])
    ac = (E[2, 0] - E[0, 0], E[2, 1] - E[0, 1], E[2, 2] - E[0, 2])
    flip = _det(g, ab, ac) > 0.0  # the normal of face (0, 1, 2) points to the centroid
    tet = ((0, 1, 2), (0, 3, 1), (0, 2, 3), (1, 3, 2))
    for f in range(4):
        i, j, k = tet[f]
        if not (_face(E, G, f, j, i, k) if flip else _face(E, G, f, i, j, k)):
            return False
    for f in range(4):
        for e in range(3):
            a, b = G[f, e], G[f, (e + 1) % 3]
            for h in range(4):
                for e2 in range(3):
                    if G[h, e2] == b and G[h, (e2 + 1) % 3] == a:
                        G[f, 3 + e] = h
    G[_EPA_MAX_FACES, 0], G[_EPA_MAX_FACES, 1] = 4, 0
    return True


@kernel
def _nearest_face(E: np.ndarray, G: np.ndarray) -> int:
    """The live face nearest the origin (smallest plane offset; first on ties)."""
    best, best_d = 0, math.inf
    for f in range(G[_EPA_MAX_FACES, 0]):
        if G[f, 6] == 1 and E[_NV + f, 3] < best_d:
            best, best_d = f, E[_NV + f, 3]
    return best


@kernel
def _horizon(E: np.ndarray, G: np.ndarray, w: int, f: int, visible: float) -> tuple[int, int]:
    """Faces seen from vertex ``w`` (flood from face ``f``) and the horizon: their counts.

    A face is seen when ``w`` stands above its plane by more than ``visible`` [m]. Seen
    faces go to ``G[:, 8]``, horizon edges ``(i, j, outer face)`` to ``G[:, 11:14]``.
    """
    wx, wy, wz = E[w, 0], E[w, 1], E[w, 2]
    G[f, 7] = w
    G[0, 8] = f
    nvis, top, nh = 1, 0, 0
    while top < nvis:  # the seen list doubles as the flood queue
        g = G[top, 8]
        top += 1
        for e in range(3):
            o = G[g, 3 + e]
            if G[o, 7] == w:
                continue
            height = E[_NV + o, 0] * wx + E[_NV + o, 1] * wy + E[_NV + o, 2] * wz - E[_NV + o, 3]
            if height > visible:
                G[o, 7] = w
                G[nvis, 8] = o
                nvis += 1
            else:
                G[nh, 11], G[nh, 12], G[nh, 13] = G[g, e], G[g, (e + 1) % 3], o
                nh += 1
    return nvis, nh


@kernel
def _loop_ok(E: np.ndarray, G: np.ndarray, nh: int, w: int) -> bool:
    """Whether the horizon is one simple loop whose new faces are not flat."""
    for k in range(nh):
        starts = 0
        ends = 0
        for m in range(nh):
            if G[m, 11] == G[k, 12]:
                starts += 1
            if G[m, 12] == G[k, 12]:
                ends += 1
        if starts != 1 or ends != 1:
            return False
        if _cross(E, G[k, 11], G[k, 12], w)[3]:
            return False
    return True


@kernel
def _link(G: np.ndarray, nh: int) -> None:
    """Neighbours of the new faces ``G[k, 10] = (horizon edge k, new vertex)``.

    Across the horizon edge, the outer face (and it back); across the other two edges,
    the new faces that continue the horizon loop.
    """
    for k in range(nh):
        i, j, o, fk = G[k, 11], G[k, 12], G[k, 13], G[k, 10]
        nxt = 0
        for m in range(nh):
            if G[m, 11] == j:
                nxt = m
        G[fk, 3] = o
        G[fk, 4] = G[nxt, 10]
        G[G[nxt, 10], 5] = fk
        for e in range(3):
            if G[o, e] == j and G[o, (e + 1) % 3] == i:
                G[o, 3 + e] = fk


@kernel
def _expand(E: np.ndarray, G: np.ndarray, w: int, f: int, visible: float) -> bool:
    """Add vertex ``w`` to the polytope: remove the faces it sees, cone the horizon.

    ``visible``: the height [m] above which ``w`` sees a face (:func:`_horizon`). False
    (polytope unchanged) when the horizon is not a simple loop, a new face would be flat
    or the face arrays are full.
    """
    nvis, nh = _horizon(E, G, w, f, visible)
    nf, nfree = G[_EPA_MAX_FACES, 0], G[_EPA_MAX_FACES, 1]
    if nh < 3 or nfree + nvis + (_EPA_MAX_FACES - nf) < nh or not _loop_ok(E, G, nh, w):
        return False
    for k in range(nvis):
        G[G[k, 8], 6] = 0
        G[nfree, 9] = G[k, 8]
        nfree += 1
    for k in range(nh):
        if nfree > 0:
            nfree -= 1
            slot = G[nfree, 9]
        else:
            slot = nf
            nf += 1
        G[k, 10] = slot
        _face(E, G, slot, G[k, 11], G[k, 12], w)
    G[_EPA_MAX_FACES, 0], G[_EPA_MAX_FACES, 1] = nf, nfree
    _link(G, nh)
    return True


@kernel
def _face_point(E: np.ndarray, face: tuple, n: tuple, dist: float) -> tuple:
    """Witnesses ``(a, b)`` (shape 1's frame) of a face at the origin's projection on it.

    ``face`` holds the face's three vertex rows of ``E``, ``n`` its unit normal and
    ``dist`` its plane offset: the vertices' ``a`` and ``b`` weighted by the barycentric
    coordinates of ``dist * n`` (so ``a - b = dist * n``).
    """
    i, j, k = face
    q = (dist * n[0], dist * n[1], dist * n[2])
    wi = _det(
        n,
        (E[j, 0] - q[0], E[j, 1] - q[1], E[j, 2] - q[2]),
        (E[k, 0] - q[0], E[k, 1] - q[1], E[k, 2] - q[2]),
    )
    wj = _det(
        n,
        (E[k, 0] - q[0], E[k, 1] - q[1], E[k, 2] - q[2]),
        (E[i, 0] - q[0], E[i, 1] - q[1], E[i, 2] - q[2]),
    )
    wk = _det(
        n,
        (E[i, 0] - q[0], E[i, 1] - q[1], E[i, 2] - q[2]),
        (E[j, 0] - q[0], E[j, 1] - q[1], E[j, 2] - q[2]),
    )
    total = wi + wj + wk
    if total <= 0.0:
        wi, wj, wk, total = 1.0, 1.0, 1.0, 3.0
    wi, wj, wk = wi / total, wj / total, wk / total
    a = (
        wi * E[i, 3] + wj * E[j, 3] + wk * E[k, 3],
        wi * E[i, 4] + wj * E[j, 4] + wk * E[k, 4],
        wi * E[i, 5] + wj * E[j, 5] + wk * E[k, 5],
    )
    b = (
        wi * E[i, 6] + wj * E[j, 6] + wk * E[k, 6],
        wi * E[i, 7] + wj * E[j, 7] + wk * E[k, 7],
        wi * E[i, 8] + wj * E[j, 8] + wk * E[k, 8],
    )
    return a, b


@kernel
def _epa_result(E: np.ndarray, G: np.ndarray, f: int) -> tuple:
    """Signed core distance, witnesses (shape 1's frame) and normal of face ``f``.

    The witnesses are the face's vertices weighted at the origin's projection on it; the
    distance is ``n . (a - b)``, the face's plane offset in exact arithmetic, but not
    moved by a tilt of a rounded normal (on a sliver face metres long, the offset taken
    at a vertex is off by the tilt times the vertex's distance from the projection).
    """
    n = (E[_NV + f, 0], E[_NV + f, 1], E[_NV + f, 2])
    a, b = _face_point(E, (G[f, 0], G[f, 1], G[f, 2]), n, E[_NV + f, 3])
    dist = n[0] * (a[0] - b[0]) + n[1] * (a[1] - b[1]) + n[2] * (a[2] - b[2])
    return -dist, a, b, n


@kernel
def _epa_bound(E: np.ndarray, best: tuple) -> tuple:
    """The shortest separating move found, as a result (EPA stopped before converging).

    ``best = (up, face, n, dist, s)``: the nearest face of an earlier polytope (vertex
    rows ``face``, unit normal ``n``, plane offset ``dist``), the support point ``s =
    (w, a, b)`` along ``n`` and its support value ``up = n . w``, the smallest found.
    Moving shape 2 by ``up`` along ``n`` separates the shapes: ``-up`` is returned, an
    upper bound of the depth (the face's ``dist`` is a lower bound). The witnesses are
    the face's, each moved along ``n`` onto its shape's supporting plane (``a`` by
    ``n . s_a - n . a``, ``b`` by ``n . b - n . s_b``: together ``up - dist``, so
    ``a' - b' = up n``); they stay within the face's support gap of the shapes.
    """
    up, face, n, dist, s = best
    a, b = _face_point(E, face, n, dist)
    g1 = n[0] * (s[3] - a[0]) + n[1] * (s[4] - a[1]) + n[2] * (s[5] - a[2])
    g2 = n[0] * (b[0] - s[6]) + n[1] * (b[1] - s[7]) + n[2] * (b[2] - s[8])
    a = (a[0] + g1 * n[0], a[1] + g1 * n[1], a[2] + g1 * n[2])
    b = (b[0] - g2 * n[0], b[1] - g2 * n[1], b[2] - g2 * n[2])
    return -up, a, b, n


@kernel
def _vertex_size(E: np.ndarray, w: int) -> float:
    """The largest absolute coordinate of EPA vertex ``w`` [m]."""
    return max(abs(E[w, 0]), abs(E[w, 1]), abs(E[w, 2]))


@kernel
def _epa(shape1: tuple, shape2: tuple, Mr: tuple, Tr: tuple, W: np.ndarray) -> tuple:
    """EPA on the cores from the GJK tetrahedron ``W[0:4]``.

    Returns ``(ok, signed core distance, a, b, n, status)`` in shape 1's frame; ``ok`` is
    False when the starting tetrahedron is degenerate. Converged (the nearest face's
    support gap below the larger of :data:`EPA_TOL`, :data:`EPA_REL_TOL` times its
    distance and :data:`_VISIBLE` times the polytope's size): that face's distance and its
    point at the origin's projection. Otherwise (vertex cap, or a polytope that cannot
    grow): the shortest separating move found, an upper bound of the depth (never smaller
    than the true one: the safe side for collision checks), with the witnesses of the
    face it was found from (:func:`_epa_bound`).
    """
    E = np.empty((EPA_MAX_VERTS + _EPA_MAX_FACES, 9))
    G = np.empty((_EPA_MAX_FACES + 1, 14), dtype=np.int64)
    if not _epa_start(W, E, G):
        zero = (0.0, 0.0, 0.0)
        return False, 0.0, zero, zero, zero, STATUS_EPA_FAILED
    size = max(_vertex_size(E, 0), _vertex_size(E, 1), _vertex_size(E, 2), _vertex_size(E, 3))
    status = STATUS_EPA_CAP
    w = 4
    f = _nearest_face(E, G)
    n = (E[_NV + f, 0], E[_NV + f, 1], E[_NV + f, 2])
    s = _support_pair(shape1, shape2, Mr, Tr, n[0], n[1], n[2])
    best = (math.inf, (G[f, 0], G[f, 1], G[f, 2]), n, E[_NV + f, 3], s)
    while True:
        dist = E[_NV + f, 3]
        up = n[0] * s[0] + n[1] * s[1] + n[2] * s[2]  # a separating move: depth <= up
        if up < best[0]:
            best = (up, (G[f, 0], G[f, 1], G[f, 2]), n, dist, s)
        if up - dist <= max(EPA_TOL, EPA_REL_TOL * abs(dist), _VISIBLE * size):
            status = STATUS_OK
            break
        if w == EPA_MAX_VERTS:
            break
        for c in range(9):
            E[w, c] = s[c]
        size = max(size, _vertex_size(E, w))
        if not _expand(E, G, w, f, _VISIBLE * size):
            status = STATUS_EPA_FAILED
            break
        w += 1
        f = _nearest_face(E, G)
        n = (E[_NV + f, 0], E[_NV + f, 1], E[_NV + f, 2])
        s = _support_pair(shape1, shape2, Mr, Tr, n[0], n[1], n[2])
    if status == STATUS_OK:
        d, a, b, n = _epa_result(E, G, f)
    else:
        d, a, b, n = _epa_bound(E, best)
    return True, d, a, b, n, status


# -- general pair -------------------------------------------------------------------------
@kernel
def _cores(shape1: tuple, shape2: tuple, Mr: tuple, Tr: tuple, guess: tuple) -> tuple:
    """Signed distance of the cores (shape 1's frame): GJK, then EPA on overlap.

    ``guess`` is a direction from shape 1 toward shape 2 (shape 1's frame) to start GJK
    from, such as the normal of the same pair a moment ago; ``(0, 0, 0)``: start from the
    centres; so does a guess that is not finite. The start changes how many iterations
    GJK needs, not where it stops (the duality gap below :data:`GJK_TOL`).

    Returns ``(d, a, b, n, status)``: distance, witnesses on the cores, unit normal.
    """
    W = np.empty((8, 9))
    gx, gy, gz = guess
    if (gx != 0.0 or gy != 0.0 or gz != 0.0) and math.isfinite(gx + gy + gz):
        W[_V, 0], W[_V, 1], W[_V, 2] = -gx, -gy, -gz
    else:
        c1 = _centre(shape1)
        cx, cy, cz = _centre(shape2)
        c2 = _mv(Mr, cx, cy, cz)
        W[_V, 0], W[_V, 1], W[_V, 2] = (
            c1[0] - c2[0] - Tr[0],
            c1[1] - c2[1] - Tr[1],
            c1[2] - c2[2] - Tr[2],
        )
    if W[_V, 0] == 0.0 and W[_V, 1] == 0.0 and W[_V, 2] == 0.0:
        W[_V, 0] = 1.0
    n, state = _gjk(shape1, shape2, Mr, Tr, W)
    d, a, b, nrm = _gjk_result(W, n)
    if state != _OVERLAP:
        return d, a, b, nrm, (STATUS_OK if state == _SEPARATED else STATUS_GJK_CAP)
    if n < 4:
        n = _blow_up(shape1, shape2, Mr, Tr, W, n)
    if n == 4:
        ok, de, ae, be, ne, status = _epa(shape1, shape2, Mr, Tr, W)
        if ok:
            return de, ae, be, ne, status
    return d, a, b, nrm, STATUS_EPA_FAILED


@kernel
def _swept(kind: int, P: tuple) -> float:
    """Radius of the ball swept along the core: a sphere's or capsule's radius, else 0."""
    if kind == SPHERE or kind == CAPSULE:
        return P[0]
    return 0.0


@kernel
def _general(
    shape1: tuple, M1: tuple, T1: tuple, shape2: tuple, M2: tuple, T2: tuple, guess: tuple
) -> tuple:
    """Any pair of convex shapes: GJK/EPA on the cores, then the swept radii.

    ``guess``: a world direction from shape 1 toward shape 2 to start GJK from (zeros:
    none; :func:`_cores`).
    """
    Mr = (
        M1[0] * M2[0] + M1[3] * M2[3] + M1[6] * M2[6],
        M1[0] * M2[1] + M1[3] * M2[4] + M1[6] * M2[7],
        M1[0] * M2[2] + M1[3] * M2[5] + M1[6] * M2[8],
        M1[1] * M2[0] + M1[4] * M2[3] + M1[7] * M2[6],
        M1[1] * M2[1] + M1[4] * M2[4] + M1[7] * M2[7],
        M1[1] * M2[2] + M1[4] * M2[5] + M1[7] * M2[8],
        M1[2] * M2[0] + M1[5] * M2[3] + M1[8] * M2[6],
        M1[2] * M2[1] + M1[5] * M2[4] + M1[8] * M2[7],
        M1[2] * M2[2] + M1[5] * M2[5] + M1[8] * M2[8],
    )
    Tr = _mtv(M1, T2[0] - T1[0], T2[1] - T1[1], T2[2] - T1[2])
    d, a, b, nl, status = _cores(shape1, shape2, Mr, Tr, _mtv(M1, guess[0], guess[1], guess[2]))
    r1, r2 = _swept(shape1[0], shape1[1]), _swept(shape2[0], shape2[1])
    n = _mv(M1, nl[0], nl[1], nl[2])
    aw = _mv(M1, a[0], a[1], a[2])
    bw = _mv(M1, b[0], b[1], b[2])
    p1 = (T1[0] + aw[0] + r1 * n[0], T1[1] + aw[1] + r1 * n[1], T1[2] + aw[2] + r1 * n[2])
    p2 = (T1[0] + bw[0] - r2 * n[0], T1[1] + bw[1] - r2 * n[1], T1[2] + bw[2] - r2 * n[2])
    return _result(d - r1 - r2, p1, p2, n, float(status))


# -- dispatch -----------------------------------------------------------------------------
# A pair takes one of three routes: NaN (unsupported kinds), the closed forms (no
# vertex array involved, so no reference counting on the hot path) or the vertex route
# (hull supports, GJK/EPA). Each route orders the pair so that k1 <= k2 and swaps the
# result back.
_ROUTE_NAN, _ROUTE_CLOSED, _ROUTE_VERTS = 0, 1, 2
#: No start direction for GJK: start from the shapes' centres.
_NO_GUESS = (0.0, 0.0, 0.0)


@kernel
def _route(k1: int, k2: int) -> int:
    """The route of a pair of kinds (any order)."""
    lo, hi = min(k1, k2), max(k1, k2)
    if lo < SPHERE or hi > PLANE or lo >= HALFSPACE:
        return _ROUTE_NAN
    if hi >= HALFSPACE:
        return _ROUTE_VERTS if lo == CONVEX else _ROUTE_CLOSED
    if lo == SPHERE and (
        hi == SPHERE or hi == CAPSULE or hi == BOX or hi == CYLINDER or hi == CONE
    ):
        return _ROUTE_CLOSED
    if lo == CAPSULE and hi == CAPSULE:
        return _ROUTE_CLOSED
    return _ROUTE_VERTS


@kernel
def _closed(
    k1: int, P1: tuple, M1: tuple, T1: tuple, k2: int, P2: tuple, M2: tuple, T2: tuple
) -> tuple:
    """The closed forms, for ``k1 <= k2`` on the closed route."""
    if k2 >= HALFSPACE:
        return _flat_prim(k1, P1, M1, T1, k2, P2, M2, T2)
    if k1 == CAPSULE:
        return _capsules(P1, M1, T1, P2, M2, T2)
    if k2 == SPHERE:
        return _balls(T1, P1[0], T2, P2[0], (1.0, 0.0, 0.0))
    if k2 == CAPSULE:
        return _sphere_capsule(P1[0], T1, P2, M2, T2)
    return _sphere_solid(P1[0], T1, k2, P2, M2, T2)


@kernel
def _closed_pair(
    k1: int, P1: tuple, M1: tuple, T1: tuple, k2: int, P2: tuple, M2: tuple, T2: tuple
) -> tuple:
    """Result of a pair on the closed route, any order."""
    if k1 > k2:
        return _swapped(_closed(k2, P2, M2, T2, k1, P1, M1, T1))
    return _closed(k1, P1, M1, T1, k2, P2, M2, T2)


@kernel
def _verts_ordered(
    k1: int,
    P1: tuple,
    M1: tuple,
    T1: tuple,
    v1: np.ndarray,
    s1: int,
    e1: int,
    k2: int,
    P2: tuple,
    M2: tuple,
    T2: tuple,
    v2: np.ndarray,
    s2: int,
    e2: int,
    guess: tuple,
) -> tuple:
    """A pair on the vertex route with ``k1 <= k2``: hull against flat, else GJK/EPA."""
    if k2 >= HALFSPACE:
        return _flat_hull(M1, T1, v1, s1, e1, k2, P2, M2, T2)
    return _general((k1, P1, v1, s1, e1), M1, T1, (k2, P2, v2, s2, e2), M2, T2, guess)


@kernel
def _verts_pair(
    k1: int,
    P1: tuple,
    M1: tuple,
    T1: tuple,
    v1: np.ndarray,
    s1: int,
    e1: int,
    k2: int,
    P2: tuple,
    M2: tuple,
    T2: tuple,
    v2: np.ndarray,
    s2: int,
    e2: int,
    guess: tuple,
) -> tuple:
    """Result of a pair on the vertex route, any order (``guess``: :func:`_general`)."""
    if k1 > k2:
        back = (-guess[0], -guess[1], -guess[2])
        r = _verts_ordered(k2, P2, M2, T2, v2, s2, e2, k1, P1, M1, T1, v1, s1, e1, back)
        return _swapped(r)
    return _verts_ordered(k1, P1, M1, T1, v1, s1, e1, k2, P2, M2, T2, v2, s2, e2, guess)


@kernel
def _nan_result() -> tuple:
    """The result of an unsupported pair: NaN everywhere, :data:`STATUS_UNSUPPORTED`."""
    nan = (math.nan, math.nan, math.nan)
    return _result(math.nan, nan, nan, nan, float(STATUS_UNSUPPORTED))


@kernel(inline=True)
def _read(g: int, params: np.ndarray, rot: np.ndarray, trans: np.ndarray) -> tuple:
    """Parameters, rotation and translation of table shape ``g`` as tuples."""
    P = (params[g, 0], params[g, 1], params[g, 2], params[g, 3])
    M = (rot[g, 0, 0], rot[g, 0, 1], rot[g, 0, 2], rot[g, 1, 0], rot[g, 1, 1],
         rot[g, 1, 2], rot[g, 2, 0], rot[g, 2, 1], rot[g, 2, 2])  # fmt: skip
    return P, M, (trans[g, 0], trans[g, 1], trans[g, 2])


@kernel(inline=True)
def _table(
    g1: int,
    g2: int,
    kind: np.ndarray,
    params: np.ndarray,
    vstart: np.ndarray,
    verts: np.ndarray,
    rot: np.ndarray,
    trans: np.ndarray,
    guess: tuple,
) -> tuple:
    """Result of shapes ``g1``, ``g2`` of a table (``guess``: :func:`_general`)."""
    k1, k2 = kind[g1], kind[g2]
    route = _route(k1, k2)
    P1, M1, T1 = _read(g1, params, rot, trans)
    P2, M2, T2 = _read(g2, params, rot, trans)
    if route == _ROUTE_CLOSED:
        return _closed_pair(k1, P1, M1, T1, k2, P2, M2, T2)
    if route == _ROUTE_VERTS:
        s1, e1, s2, e2 = vstart[g1], vstart[g1 + 1], vstart[g2], vstart[g2 + 1]
        return _verts_pair(
            k1, P1, M1, T1, verts, s1, e1, k2, P2, M2, T2, verts, s2, e2, guess
        )  # fmt: skip
    return _nan_result()


# -- public kernels -----------------------------------------------------------------------
@kernel
def shape_distance(
    k1: int,
    p1: np.ndarray,
    R1: np.ndarray,
    t1: np.ndarray,
    v1: np.ndarray,
    k2: int,
    p2: np.ndarray,
    R2: np.ndarray,
    t2: np.ndarray,
    v2: np.ndarray,
    out: np.ndarray,
) -> float:
    """Signed distance [m] between two convex shapes placed in the world.

    Args:
        k1: Shape code of shape 1 (:mod:`stackik.geometry.shapes`).
        p1: Its 4 parameters [m], float64 ``(4,)``.
        R1: Its world rotation, ``(3, 3)``.
        t1: Its world translation [m], ``(3,)``.
        v1: Its hull vertices in its local frame [m], ``(m, 3)`` (CONVEX; may be empty
            for other kinds).
        k2: Shape code of shape 2.
        p2: Its parameters [m].
        R2: Its world rotation.
        t2: Its world translation [m].
        v2: Its hull vertices [m].
        out: Float64 ``(9,)`` or ``(10,)``: receives the witness point on shape 1 [m]
            (``out[0:3]``), on shape 2 [m] (``out[3:6]``) and the unit normal from shape 1
            to shape 2 (``out[6:9]``), all in world coordinates, with
            ``p2 - p1 = d * n``; ``out[9]``, when present, the status (module docstring).

    Returns:
        The signed distance ``d`` [m]: negative when the shapes overlap (minus the
        penetration depth). NaN (and NaN outputs) when either shape is a MESH or an
        unknown kind, or both are half-spaces / planes.
    """
    P1 = (p1[0], p1[1], p1[2], p1[3])
    P2 = (p2[0], p2[1], p2[2], p2[3])
    M1 = (R1[0, 0], R1[0, 1], R1[0, 2], R1[1, 0], R1[1, 1], R1[1, 2], R1[2, 0], R1[2, 1], R1[2, 2])
    M2 = (R2[0, 0], R2[0, 1], R2[0, 2], R2[1, 0], R2[1, 1], R2[1, 2], R2[2, 0], R2[2, 1], R2[2, 2])
    T1 = (t1[0], t1[1], t1[2])
    T2 = (t2[0], t2[1], t2[2])
    route = _route(k1, k2)
    if route == _ROUTE_CLOSED:
        r = _closed_pair(k1, P1, M1, T1, k2, P2, M2, T2)
    elif route == _ROUTE_VERTS:
        zero = np.int64(0)  # no literal: one compiled specialisation for every caller
        e1, e2 = zero + v1.shape[0], zero + v2.shape[0]
        r = _verts_pair(k1, P1, M1, T1, v1, zero, e1, k2, P2, M2, T2, v2, zero, e2, _NO_GUESS)
    else:
        r = _nan_result()
    return _store(out, r)


@kernel
def table_distance(
    g1: int,
    g2: int,
    kind: np.ndarray,
    params: np.ndarray,
    vstart: np.ndarray,
    verts: np.ndarray,
    rot: np.ndarray,
    trans: np.ndarray,
    out: np.ndarray,
) -> float:
    """:func:`shape_distance` of shapes ``g1`` and ``g2`` of a :class:`ShapeTable`.

    Args:
        g1: Index of shape 1 in the table.
        g2: Index of shape 2.
        kind: The table's shape codes, ``(n,)``.
        params: The table's parameters [m], ``(n, 4)``.
        vstart: The table's vertex ranges, ``(n + 1,)``.
        verts: The table's hull vertices [m], ``(m, 3)``.
        rot: World rotations of the table's shapes, ``(n, 3, 3)``.
        trans: World translations [m], ``(n, 3)``.
        out: As in :func:`shape_distance`.

    Returns:
        The signed distance [m] (see :func:`shape_distance`).
    """
    return _store(out, _table(g1, g2, kind, params, vstart, verts, rot, trans, _NO_GUESS))


@kernel(inline=True)  # (inlined into the collision step's loop over its queries)
def table_distance_from(
    g1: int,
    g2: int,
    kind: np.ndarray,
    params: np.ndarray,
    vstart: np.ndarray,
    verts: np.ndarray,
    rot: np.ndarray,
    trans: np.ndarray,
    guess: np.ndarray,
    out: np.ndarray,
) -> float:
    """:func:`table_distance`, with GJK started from a given direction.

    A pair queried again and again as it moves (the collision constraint's pairs, once
    per control step) starts GJK from the normal it had a moment ago: curved shapes
    (cylinders, cones) then converge in a few iterations instead of many. The result is
    the same up to GJK's tolerance (the duality gap below :data:`GJK_TOL`); closed
    forms and flat shapes ignore the guess.

    Args:
        g1: Index of shape 1 in the table.
        g2: Index of shape 2.
        kind: The table's shape codes, ``(n,)``.
        params: The table's parameters [m], ``(n, 4)``.
        vstart: The table's vertex ranges, ``(n + 1,)``.
        verts: The table's hull vertices [m], ``(m, 3)``.
        rot: World rotations of the table's shapes, ``(n, 3, 3)``.
        trans: World translations [m], ``(n, 3)``.
        guess: A world direction from shape 1 toward shape 2, ``(3,)`` (any length;
            zeros or a non-finite entry: start from the centres, as
            :func:`table_distance`).
        out: As in :func:`shape_distance`.

    Returns:
        The signed distance [m] (see :func:`shape_distance`).
    """
    start = (guess[0], guess[1], guess[2])
    return _store(out, _table(g1, g2, kind, params, vstart, verts, rot, trans, start))


@kernel
def batch_distance(
    first: np.ndarray,
    second: np.ndarray,
    kind: np.ndarray,
    params: np.ndarray,
    vstart: np.ndarray,
    verts: np.ndarray,
    rot: np.ndarray,
    trans: np.ndarray,
    dist: np.ndarray,
    witness: np.ndarray,
) -> None:
    """:func:`table_distance` of every pair ``(first[k], second[k])``.

    Args:
        first: Shape 1 of every pair, int64 ``(p,)``.
        second: Shape 2 of every pair, int64 ``(p,)``.
        kind: The table's shape codes.
        params: The table's parameters [m].
        vstart: The table's vertex ranges.
        verts: The table's hull vertices [m].
        rot: World rotations of the table's shapes, ``(n, 3, 3)``.
        trans: World translations [m], ``(n, 3)``.
        dist: Receives the signed distances [m], ``(p,)``.
        witness: Receives each pair's ``out`` of :func:`shape_distance`, ``(p, 9)`` or
            ``(p, 10)`` (with the status).
    """
    m = min(witness.shape[1], 10)
    for k in range(first.shape[0]):
        r = _table(first[k], second[k], kind, params, vstart, verts, rot, trans, _NO_GUESS)
        dist[k] = r[0]
        for c in range(m):
            witness[k, c] = r[c + 1]


@register_warmup
def _warm_up_distance_kernels() -> None:
    """Run each public kernel once (a box against an ellipsoid: every kernel compiles)."""
    kind = np.array([BOX, ELLIPSOID], dtype=np.int64)
    params = np.array([[0.1, 0.2, 0.3, 0.0], [0.1, 0.2, 0.3, 0.0]])
    vstart = np.zeros(3, dtype=np.int64)
    verts = np.zeros((0, 3))
    rot = np.array([np.eye(3), np.eye(3)])
    trans = np.array([[0.0, 0.0, 0.0], [0.1, 0.5, 0.0]])
    out = np.empty(10)
    shape_distance(BOX, params[0], rot[0], trans[0], verts, ELLIPSOID, params[1], rot[1],
                   trans[1], verts, out)  # fmt: skip
    table_distance(0, 1, kind, params, vstart, verts, rot, trans, out)
    table_distance_from(0, 1, kind, params, vstart, verts, rot, trans, np.ones(3), out)
    pair = np.array([0], dtype=np.int64)
    batch_distance(pair, pair + 1, kind, params, vstart, verts, rot, trans, np.empty(1),
                   np.empty((1, 10)))  # fmt: skip
