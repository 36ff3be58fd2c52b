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
    lever: np.ndarray,
    moved: np.ndarray,
    first: np.ndarray,
    second: np.ndarray,
    d_last: np.ndarray,
    moved_first: np.ndarray,
    moved_second: np.ndarray,
    threshold: np.ndarray,
    out: np.ndarray,
) -> int:
    """Advance each geometry's motion budget and list the pairs that need an exact query.

    ``moved[g]`` accumulates ``sum_k lever[g, k] |dq_k|``, an upper bound on how far any
    point of geometry g has travelled [m] (a point at distance at most ``L`` from a
    revolute axis moves at most ``L |dtheta|``; prismatic and base translation levers
    are 1). Pair ``k`` was at distance ``d_last[k]`` when ``moved`` read
    ``(moved_first[k], moved_second[k])``, so its distance now is at least
    ``d_last[k] - (moved[first] - moved_first[k]) - (moved[second] - moved_second[k])``.

    Returns:
        The number of pair slots written to ``out`` whose bound is ``<= threshold``.
    """
    ng, nv = lever.shape
    for g in range(ng):
        s = 0.0
        for k in range(nv):
            s += lever[g, k] * dq_abs[k]
        moved[g] += s
    count = 0
    for k in range(first.shape[0]):
        bound = (
            d_last[k] - (moved[first[k]] - moved_first[k]) - (moved[second[k]] - moved_second[k])
        )
        if bound <= threshold[k]:
            out[count] = k
            count += 1
    return count


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
    rot: np.ndarray,
    trans: np.ndarray,
    sup_points: np.ndarray,
    sup_offset: np.ndarray,
    sup_radius: np.ndarray,
    patch_tol: float,
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
    distance ``d_eff[h]`` (after the recovery deadband), limit ``d_min[h]``, normal and
    witness points. ``rot``/``trans`` hold each geometry's world placement. A pair within
    ``patch_tol`` of its limit adds, for each shape, its support points (shifted by the
    shape's radius along the normal) whose plane gap ``g`` is below ``dist + patch_tol``;
    past ``max_per_side`` of them, only those extreme along ``max_per_side`` evenly spaced
    in-plane directions. A support row's damper distance is ``max(g, d_min)``.

    Returns:
        The number of rows written.
    """
    nrows = 0
    idx = np.empty(sup_points.shape[0], dtype=np.int64)
    gaps = np.empty(sup_points.shape[0])
    world = np.empty((sup_points.shape[0], 3))
    chosen = np.zeros(sup_points.shape[0], dtype=np.bool_)
    for h in range(first.shape[0]):
        f = first[h]
        s = second[h]
        n0 = normal[h, 0]
        n1 = normal[h, 1]
        n2 = normal[h, 2]
        lower[nrows] = -gain_over_dt * (d_eff[h] - d_min[h])
        row_geom[nrows, 0] = f
        row_geom[nrows, 1] = s
        row_point[nrows, 0] = p1[h, 0]
        row_point[nrows, 1] = p1[h, 1]
        row_point[nrows, 2] = p1[h, 2]
        row_normal[nrows, 0] = n0
        row_normal[nrows, 1] = n1
        row_normal[nrows, 2] = n2
        nrows += 1
        if patch_tol <= 0.0 or dist[h] - d_min[h] > patch_tol:
            continue
        # In-plane axes t1, t2 of the contact normal.
        if abs(n0) < 0.9:
            t10, t11, t12 = 0.0, n2, -n1
        else:
            t10, t11, t12 = -n2, 0.0, n0
        tn = math.sqrt(t10 * t10 + t11 * t11 + t12 * t12)
        t10 /= tn
        t11 /= tn
        t12 /= tn
        t20 = n1 * t12 - n2 * t11
        t21 = n2 * t10 - n0 * t12
        t22 = n0 * t11 - n1 * t10
        for side in range(2):
            geom = f if side == 0 else s
            sign = 1.0 if side == 0 else -1.0
            if side == 0:
                qx, qy, qz = p2[h, 0], p2[h, 1], p2[h, 2]
            else:
                qx, qy, qz = p1[h, 0], p1[h, 1], p1[h, 2]
            a = sup_offset[geom]
            b = sup_offset[geom + 1]
            rad = sup_radius[geom] * sign
            count = 0
            for i in range(a, b):
                x = sup_points[i, 0]
                y = sup_points[i, 1]
                z = sup_points[i, 2]
                wx = (
                    rot[geom, 0, 0] * x
                    + rot[geom, 0, 1] * y
                    + rot[geom, 0, 2] * z
                    + trans[geom, 0]
                    + rad * n0
                )
                wy = (
                    rot[geom, 1, 0] * x
                    + rot[geom, 1, 1] * y
                    + rot[geom, 1, 2] * z
                    + trans[geom, 1]
                    + rad * n1
                )
                wz = (
                    rot[geom, 2, 0] * x
                    + rot[geom, 2, 1] * y
                    + rot[geom, 2, 2] * z
                    + trans[geom, 2]
                    + rad * n2
                )
                g = sign * ((qx - wx) * n0 + (qy - wy) * n1 + (qz - wz) * n2)
                if g < dist[h] + patch_tol:
                    idx[count] = i
                    gaps[count] = g
                    world[count, 0] = wx
                    world[count, 1] = wy
                    world[count, 2] = wz
                    chosen[count] = count < max_per_side
                    count += 1
            if count > max_per_side:
                for c in range(count):
                    chosen[c] = False
                for k in range(max_per_side):
                    ang = 2.0 * math.pi * k / max_per_side
                    d0 = math.cos(ang) * t10 + math.sin(ang) * t20
                    d1 = math.cos(ang) * t11 + math.sin(ang) * t21
                    d2 = math.cos(ang) * t12 + math.sin(ang) * t22
                    best = 0
                    best_v = -1e300
                    for c in range(count):
                        v = world[c, 0] * d0 + world[c, 1] * d1 + world[c, 2] * d2
                        if v > best_v:
                            best_v = v
                            best = c
                    chosen[best] = True
            for c in range(count):
                if not chosen[c]:
                    continue
                g = gaps[c]
                if g < d_min[h]:
                    g = d_min[h]
                lower[nrows] = -gain_over_dt * (g - d_min[h])
                row_geom[nrows, 0] = f
                row_geom[nrows, 1] = s
                row_point[nrows, 0] = world[c, 0]
                row_point[nrows, 1] = world[c, 1]
                row_point[nrows, 2] = world[c, 2]
                row_normal[nrows, 0] = n0
                row_normal[nrows, 1] = n1
                row_normal[nrows, 2] = n2
                nrows += 1
    # Rows: n^T (J_s^(2) - J_s^(1)) with J_s = J_lin - [s]x J_ang over each body's joints.
    nv = J.shape[1]
    for r in range(nrows):
        f = row_geom[r, 0]
        s = row_geom[r, 1]
        n0 = row_normal[r, 0]
        n1 = row_normal[r, 1]
        n2 = row_normal[r, 2]
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
    return nrows
