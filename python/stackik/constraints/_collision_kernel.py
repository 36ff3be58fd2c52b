"""Compiled kernels of the collision constraint (see :mod:`stackik.constraints.collision`).

Two pieces of the per-step work, written as loops for numba:

- :func:`motion_broadphase`: conservative lower bounds on every pair's distance from
  the last exact distance and how far each geometry can have moved since (temporal
  coherence), so pairs that cannot be near skip the exact GJK/EPA query;
- :func:`contact_rows`: the velocity-damper rows of the near pairs (witness points and
  contact-patch support points) from the world joint Jacobian ``data.J``.
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel


@kernel
def motion_broadphase(
    dq_abs: np.ndarray,
    pair_lever: np.ndarray,
    d_low: np.ndarray,
    step_motion: np.ndarray,
    threshold: np.ndarray,
    out: np.ndarray,
) -> int:
    """Lower every pair's distance bound by its relative motion; list the near ones.

    Pair ``k``'s two geometries approach each other by at most
    ``sum_j pair_lever[k, j] |dq_j|`` [m] in the step (a point at distance at most ``L``
    from a revolute axis moves at most ``L |dtheta|``; prismatic and base translation
    levers are 1; joints that carry both geometries move them rigidly together and have
    no lever). ``d_low[k]``, a lower bound of the pair's distance, drops by that much.

    Returns:
        The number of pair slots written to ``out`` whose bound is ``<= threshold``.
    """
    npairs, nv = pair_lever.shape
    count = 0
    for k in range(npairs):
        s = 0.0
        for j in range(nv):
            s += pair_lever[k, j] * dq_abs[j]
        step_motion[k] = s
        d_low[k] -= s
        if d_low[k] <= threshold[k]:
            out[count] = k
            count += 1
    return count


@kernel
def _row(
    lower: np.ndarray,
    r: int,
    f: int,
    s: int,
    lower_value: float,
    point: np.ndarray,
    n: np.ndarray,
    row_geom: np.ndarray,
    row_point: np.ndarray,
    row_normal: np.ndarray,
) -> None:
    """Record row ``r``: its bound, geometries, point and normal (from body 1 to body 2)."""
    lower[r] = lower_value
    row_geom[r, 0] = f
    row_geom[r, 1] = s
    for c in range(3):
        row_point[r, c] = point[c]
        row_normal[r, c] = n[c]


@kernel
def _plane_axes(n: np.ndarray, t1: np.ndarray, t2: np.ndarray) -> None:
    """Two unit axes ``t1``, ``t2`` spanning the plane normal to the unit vector ``n``."""
    if abs(n[0]) < 0.9:
        t1[0], t1[1], t1[2] = 0.0, n[2], -n[1]
    else:
        t1[0], t1[1], t1[2] = -n[2], 0.0, n[0]
    tn = math.sqrt(t1[0] * t1[0] + t1[1] * t1[1] + t1[2] * t1[2])
    t1 /= tn
    t2[0] = n[1] * t1[2] - n[2] * t1[1]
    t2[1] = n[2] * t1[0] - n[0] * t1[2]
    t2[2] = n[0] * t1[1] - n[1] * t1[0]


@kernel
def _near_points(
    geom: int,
    sign: float,
    q: np.ndarray,
    n: np.ndarray,
    rot: np.ndarray,
    trans: np.ndarray,
    sup_points: np.ndarray,
    sup_offset: np.ndarray,
    sup_radius: np.ndarray,
    limit: float,
    gaps: np.ndarray,
    world: np.ndarray,
) -> int:
    """Support points of ``geom`` whose gap to the plane through ``q`` is below ``limit``.

    Each point is moved by the shape's radius along ``sign * n`` (capsule ends); its gap
    is ``sign * n . (q - w)``. Returns how many were written to ``gaps``/``world``.
    """
    count = 0
    rad = sup_radius[geom] * sign
    for i in range(sup_offset[geom], sup_offset[geom + 1]):
        for c in range(3):
            world[count, c] = (
                rot[geom, c, 0] * sup_points[i, 0]
                + rot[geom, c, 1] * sup_points[i, 1]
                + rot[geom, c, 2] * sup_points[i, 2]
                + trans[geom, c]
                + rad * n[c]
            )
        g = sign * (
            (q[0] - world[count, 0]) * n[0]
            + (q[1] - world[count, 1]) * n[1]
            + (q[2] - world[count, 2]) * n[2]
        )
        if g < limit:
            gaps[count] = g
            count += 1
    return count


#: Shape codes of :func:`point_distance` (anything else: the tangent-plane bound).
SHAPE_PLANE, SHAPE_SPHERE, SHAPE_CAPSULE, SHAPE_CYLINDER, SHAPE_BOX = 0, 1, 2, 3, 4


@kernel
def _cylinder_local(x: float, y: float, z: float, r: float, h: float, n: np.ndarray) -> float:
    """Signed distance from a local point to a cylinder (radius r, half length h); normal."""
    rho = math.sqrt(x * x + y * y)
    ux, uy = (x / rho, y / rho) if rho > 1e-15 else (1.0, 0.0)
    sz = 1.0 if z >= 0.0 else -1.0
    dr, dz = rho - r, abs(z) - h
    if dr > 0.0 and dz > 0.0:  # beyond the rim
        d = math.sqrt(dr * dr + dz * dz)
        n[0], n[1], n[2] = dr * ux / d, dr * uy / d, dz * sz / d
        return d
    if dr > dz:  # the side is nearest (or, inside, least deep)
        n[0], n[1], n[2] = ux, uy, 0.0
        return dr
    n[0], n[1], n[2] = 0.0, 0.0, sz
    return dz


@kernel
def _box_local(x: float, y: float, z: float, h: np.ndarray, n: np.ndarray) -> float:
    """Signed distance from a local point to a box of half sides ``h``; outward normal."""
    qx, qy, qz = abs(x) - h[0], abs(y) - h[1], abs(z) - h[2]
    sx = 1.0 if x >= 0.0 else -1.0
    sy = 1.0 if y >= 0.0 else -1.0
    sz = 1.0 if z >= 0.0 else -1.0
    ox, oy, oz = max(qx, 0.0), max(qy, 0.0), max(qz, 0.0)
    out = math.sqrt(ox * ox + oy * oy + oz * oz)
    if out > 0.0:
        n[0], n[1], n[2] = sx * ox / out, sy * oy / out, sz * oz / out
        return out
    n[0] = n[1] = n[2] = 0.0  # inside: the least-deep face
    if qx >= qy and qx >= qz:
        n[0] = sx
        return qx
    if qy >= qz:
        n[1] = sy
        return qy
    n[2] = sz
    return qz


@kernel
def point_distance(
    kind: int,
    params: np.ndarray,
    R: np.ndarray,
    t: np.ndarray,
    p: np.ndarray,
    n: np.ndarray,
) -> float:
    """Exact signed distance from world point ``p`` to a primitive shape placed at (R, t).

    ``n`` receives the unit normal of the shape's surface toward ``p`` (world). Shapes:
    sphere (radius), capsule and cylinder (radius, half length), box (half sides). For
    :data:`SHAPE_PLANE` nothing is computed (returns NaN).
    """
    x = y = z = 0.0
    for c in range(3):
        x += R[c, 0] * (p[c] - t[c])
        y += R[c, 1] * (p[c] - t[c])
        z += R[c, 2] * (p[c] - t[c])
    nl = np.empty(3)
    if kind == SHAPE_SPHERE or kind == SHAPE_CAPSULE:
        hz = min(max(z, -params[1]), params[1]) if kind == SHAPE_CAPSULE else 0.0
        vz = z - hz
        norm = math.sqrt(x * x + y * y + vz * vz)
        if norm < 1e-15:
            nl[0], nl[1], nl[2] = 1.0, 0.0, 0.0
        else:
            nl[0], nl[1], nl[2] = x / norm, y / norm, vz / norm
        d = norm - params[0]
    elif kind == SHAPE_CYLINDER:
        d = _cylinder_local(x, y, z, params[0], params[1], nl)
    elif kind == SHAPE_BOX:
        d = _box_local(x, y, z, params, nl)
    else:
        return math.nan
    for c in range(3):
        n[c] = R[c, 0] * nl[0] + R[c, 1] * nl[1] + R[c, 2] * nl[2]
    return d


@kernel
def _extremes(
    count: int,
    max_per_side: int,
    world: np.ndarray,
    t1: np.ndarray,
    t2: np.ndarray,
    chosen: np.ndarray,
) -> None:
    """Mark the points of a patch that get rows: all, or the outline of a large patch.

    Past ``max_per_side`` points, the extreme one along each of ``max_per_side`` evenly
    spaced in-plane directions.
    """
    for c in range(count):
        chosen[c] = count <= max_per_side
    if count <= max_per_side:
        return
    for k in range(max_per_side):
        ang = 2.0 * math.pi * k / max_per_side
        ca, sa = math.cos(ang), math.sin(ang)
        best, best_v = 0, -1e300
        for c in range(count):
            v = 0.0
            for j in range(3):
                v += world[c, j] * (ca * t1[j] + sa * t2[j])
            if v > best_v:
                best_v, best = v, c
        chosen[best] = True


@kernel
def _jacobian_rows(
    J: np.ndarray,
    support: np.ndarray,
    nrows: int,
    row_geom: np.ndarray,
    row_point: np.ndarray,
    row_normal: np.ndarray,
    C: np.ndarray,
) -> None:
    """``C[r] = n^T (J_s^(2) - J_s^(1))`` with ``J_s = J_lin - [s]x J_ang`` per body's joints.

    ``J`` is Pinocchio's world joint Jacobian ``data.J`` (spatial velocity at the world
    origin), so ``n . (v_O + w x s) = n . v_O - (s x n) . w``.
    """
    nv = J.shape[1]
    for r in range(nrows):
        f, s = row_geom[r, 0], row_geom[r, 1]
        n0, n1, n2 = row_normal[r, 0], row_normal[r, 1], row_normal[r, 2]
        c0 = n1 * row_point[r, 2] - n2 * row_point[r, 1]
        c1 = n2 * row_point[r, 0] - n0 * row_point[r, 2]
        c2 = n0 * row_point[r, 1] - n1 * row_point[r, 0]
        for k in range(nv):
            val = (
                n0 * J[0, k]
                + n1 * J[1, k]
                + n2 * J[2, k]
                - (c0 * J[3, k] + c1 * J[4, k] + c2 * J[5, k])
            )
            C[r, k] = (val if support[s, k] else 0.0) - (val if support[f, k] else 0.0)


@kernel
def _support_gap(
    other: int,
    sign: float,
    w: np.ndarray,
    n: np.ndarray,
    plane_gap: float,
    shape_kind: np.ndarray,
    shape_params: np.ndarray,
    rot: np.ndarray,
    trans: np.ndarray,
    ns: np.ndarray,
) -> float:
    """Gap of support point ``w`` to the ``other`` shape and the row normal ``ns``.

    The normal points from body 1 to body 2 (``sign`` is +1 when ``w`` is on body 1).
    Exact for primitives; the plane gap and the pair normal ``n`` otherwise.
    """
    d = point_distance(shape_kind[other], shape_params[other], rot[other], trans[other], w, ns)
    if math.isnan(d):
        ns[0], ns[1], ns[2] = n[0], n[1], n[2]
        return plane_gap
    if sign > 0.0:  # ns points from body 2 toward w on body 1: flip it
        ns *= -1.0
    return d


@kernel
def _patch_rows(
    h: int,
    f: int,
    s: int,
    geometry: tuple,
    hits: tuple,
    reach: float,
    gain_over_dt: float,
    max_per_side: int,
    scratch: tuple,
    out: tuple,
    nrows: int,
) -> int:
    """The support-point rows of pair ``h`` (both sides); returns the new row count."""
    shape_kind, shape_params, rot, trans, sup_points, sup_offset, sup_radius = geometry
    dist, d_min, normal, p1, p2 = hits
    gaps, world, chosen, t1, t2, ns = scratch
    lower, row_geom, row_point, row_normal = out
    n = normal[h]
    _plane_axes(n, t1, t2)
    for side in range(2):
        geom, other = (f, s) if side == 0 else (s, f)
        q = p2[h] if side == 0 else p1[h]
        sign = 1.0 if side == 0 else -1.0
        limit = dist[h] + reach
        count = _near_points(
            geom, sign, q, n, rot, trans, sup_points, sup_offset, sup_radius, limit, gaps, world
        )
        _extremes(count, max_per_side, world, t1, t2, chosen)
        for c in range(count):
            if not chosen[c]:
                continue
            g = _support_gap(
                other, sign, world[c], n, gaps[c], shape_kind, shape_params, rot, trans, ns
            )
            if g >= limit:
                continue  # the other shape curves away: this point is not in the patch
            bound = -gain_over_dt * (max(g, d_min[h]) - d_min[h])
            _row(lower, nrows, f, s, bound, world[c], ns, row_geom, row_point, row_normal)
            nrows += 1
    return nrows


@kernel
def contact_rows(
    J: np.ndarray,
    support: np.ndarray,
    first: np.ndarray,
    second: np.ndarray,
    dist: np.ndarray,
    d_eff: np.ndarray,
    d_min: np.ndarray,
    normal: np.ndarray,
    p1: np.ndarray,
    p2: np.ndarray,
    shape_kind: np.ndarray,
    shape_params: np.ndarray,
    rot: np.ndarray,
    trans: np.ndarray,
    sup_points: np.ndarray,
    sup_offset: np.ndarray,
    sup_radius: np.ndarray,
    reach: np.ndarray,
    gain_over_dt: float,
    max_per_side: int,
    C: np.ndarray,
    lower: np.ndarray,
    row_geom: np.ndarray,
    row_point: np.ndarray,
    row_normal: np.ndarray,
) -> int:
    """All damper rows of the near pairs: the witness row, then each patch side's points.

    Pair ``h`` has geometries ``first[h]``/``second[h]``, distance ``dist[h]``, damper
    distance ``d_eff[h]`` (after the recovery deadband), limit ``d_min[h]``, normal (from
    geometry 1 to 2) and witness points. ``rot``/``trans`` hold each geometry's world
    placement. A pair within ``reach[h]`` of its limit (the patch tolerance plus what it
    may close this step; 0 disables) adds, for each shape, its support points (shifted by
    the shape's radius along the normal) whose gap to the tangent plane of the other
    shape is below ``dist + reach[h]``; past ``max_per_side`` of them, only
    those extreme along ``max_per_side`` evenly spaced in-plane directions. Where the other
    shape is a primitive (``shape_kind``), each such point gets its exact distance and
    normal to that shape (:func:`point_distance`), so its row is the exact rate of that
    point's distance and a curved surface does not block sliding; otherwise (hulls,
    meshes) the plane gap, a lower bound of the distance to a convex shape, with the pair's
    normal. A support row never demands separation: its damper distance is
    ``max(gap, d_min)``.

    Returns:
        The number of rows written.
    """
    npts = sup_points.shape[0]
    scratch = (
        np.empty(npts),
        np.empty((npts, 3)),
        np.zeros(npts, dtype=np.bool_),
        np.empty(3),
        np.empty(3),
        np.empty(3),
    )
    geometry = (shape_kind, shape_params, rot, trans, sup_points, sup_offset, sup_radius)
    hits = (dist, d_min, normal, p1, p2)
    out = (lower, row_geom, row_point, row_normal)
    nrows = 0
    for h in range(first.shape[0]):
        f, s = first[h], second[h]
        bound = -gain_over_dt * (d_eff[h] - d_min[h])
        _row(lower, nrows, f, s, bound, p1[h], normal[h], row_geom, row_point, row_normal)
        nrows += 1
        if reach[h] > 0.0 and dist[h] - d_min[h] <= reach[h]:
            nrows = _patch_rows(
                h,
                f,
                s,
                geometry,
                hits,
                reach[h],
                gain_over_dt,
                max_per_side,
                scratch,
                out,
                nrows,
            )
    _jacobian_rows(J, support, nrows, row_geom, row_point, row_normal, C)
    return nrows
