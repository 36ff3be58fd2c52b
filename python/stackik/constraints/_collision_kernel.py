"""Compiled kernels of the collision constraint (see :mod:`stackik.constraints.collision`).

Two pieces of the per-step work, written as loops for numba:

- :func:`motion_broadphase`: conservative lower bounds on every pair's distance from
  the last exact distance and how far each geometry can have moved since (temporal
  coherence), so pairs that cannot be near skip the exact GJK/EPA query;
- :func:`damper_rows`: the velocity-damper rows from witness points, normals and the
  world joint Jacobian ``data.J``.
"""

from __future__ import annotations

import numpy as np

from .._jit import lazy_njit


@lazy_njit
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


@lazy_njit
def damper_rows(
    J: np.ndarray,
    support: np.ndarray,
    g1: np.ndarray,
    g2: np.ndarray,
    p1: np.ndarray,
    p2: np.ndarray,
    normal: np.ndarray,
    dist: np.ndarray,
    min_dist: np.ndarray,
    gain_over_dt: float,
    C: np.ndarray,
    lower: np.ndarray,
) -> None:
    """Fill damper rows ``n^T (J_p2 - J_p1) v >= -gain (d - d_min) / dt``.

    ``J`` is Pinocchio's world-frame joint Jacobian ``data.J`` (6 x nv, spatial velocity
    at the world origin). A point ``p`` moving with the joints in ``support[g]`` has
    velocity ``(J_lin - [p]x J_ang) v`` over those columns, so
    ``n^T J_p = n^T J_lin - (n x p)^T J_ang``.
    """
    nv = J.shape[1]
    for r in range(g1.shape[0]):
        n0, n1, n2 = normal[r, 0], normal[r, 1], normal[r, 2]
        a0 = n1 * p1[r, 2] - n2 * p1[r, 1]
        a1 = n2 * p1[r, 0] - n0 * p1[r, 2]
        a2 = n0 * p1[r, 1] - n1 * p1[r, 0]
        b0 = n1 * p2[r, 2] - n2 * p2[r, 1]
        b1 = n2 * p2[r, 0] - n0 * p2[r, 2]
        b2 = n0 * p2[r, 1] - n1 * p2[r, 0]
        for k in range(nv):
            lin = n0 * J[0, k] + n1 * J[1, k] + n2 * J[2, k]
            val = 0.0
            if support[g2[r], k]:
                val += lin - (b0 * J[3, k] + b1 * J[4, k] + b2 * J[5, k])
            if support[g1[r], k]:
                val -= lin - (a0 * J[3, k] + a1 * J[4, k] + a2 * J[5, k])
            C[r, k] = val
        lower[r] = -gain_over_dt * (dist[r] - min_dist[r])
