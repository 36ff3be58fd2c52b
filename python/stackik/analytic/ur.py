"""UR-type 6R arms: three parallel axes (2, 3, 4) and an offset wrist (axes 5 and 6 meet).

Closed form on the joint lines (product of exponentials, :mod:`.geometry`), with
``G = T M^-1 = E_1(q_1) ... E_6(q_6)``, ``n`` the direction of the parallel axes and
``x5`` the point where axes 5 and 6 meet (``E_5`` and ``E_6`` leave it in place):

1. **shoulder** ``q1``: rotations about lines parallel to ``n`` keep a point's
   coordinate along ``n``, so ``(R_1(q_1) n) . (G x5 - o_1) = n . (x5 - o_1)``: an
   equation ``A cos q1 + B sin q1 = C``, two roots;
2. **wrist** ``q5``: for the same reason ``n . R_5(q_5) a_6 = (R_1 n) . (R_G a_6)``, two
   roots;
3. ``q6``: ``R_6 (R_G^T R_1 n) = R_5^T n``, one rotation about ``a_6`` (subproblem 1);
4. **elbow** ``q3``: ``H = E_1^-1 G E_6^-1 E_5^-1 = E_2 E_3 E_4`` carries a point ``x4``
   of axis 4 to ``H x4 = E_2 E_3 x4``, whose distance to axis 2 fixes ``q3`` (two
   roots); then ``q2`` turns ``E_3 x4`` onto ``H x4`` about axis 2 and ``q4`` is the rest
   of ``H``'s rotation about axis 4.

Up to 2 x 2 x 2 = 8 branches. Nothing here assumes right angles or the URDF's zero: the
lines are those of the description.
"""

from __future__ import annotations

import numpy as np

from .._jit import kernel
from .base import AnalyticSolver
from .geometry import ChainGeometry, common_normal, parallel
from .kernels import (
    add,
    angle_about,
    cos_sin_roots,
    cross,
    dot,
    mm,
    mmt,
    mtm,
    mtv,
    mv,
    pose_errors_rows,
    rot,
    rotation_angle,
    row,
    scale,
    sub,
    transform_rows,
    wrap,
)

__all__ = ["URSolver", "ur_parameters"]

#: ``|a x b|`` under which two axes are parallel, and the distance [m] under which two
#: lines meet, for the structure tests (the load-time verification is the real check).
TOLERANCE = 1e-9
#: ``|a x b|`` above which two axes count as clearly not parallel.
DISTINCT = 1e-3


def ur_parameters(geometry: ChainGeometry) -> tuple[dict[str, float] | None, str]:
    """The UR-type parameters of a chain, or ``(None, why not)``.

    Parameters (lengths in m): ``upper_arm`` and ``forearm`` (distances between axes 2-3
    and 3-4), ``lateral_offset`` (coordinate of the axis 5/6 meeting point along the
    parallel axes, from joint 1's origin), ``wrist_offset`` (distance from that point to
    axis 4), ``flange`` (tip origin along axis 6 from it).
    """
    if geometry.n != 6:
        return None, f"needs 6 joints, the chain has {geometry.n}"
    a, o = geometry.axes, geometry.points
    if not (parallel(a[1], a[2], TOLERANCE) and parallel(a[1], a[3], TOLERANCE)):
        return None, "axes 2, 3 and 4 are not parallel"
    if parallel(a[0], a[1], DISTINCT):
        return None, "axis 1 is parallel to axes 2-4"
    if parallel(a[4], a[1], DISTINCT) or parallel(a[4], a[5], DISTINCT):
        return None, "axis 5 is parallel to axis 4 or to axis 6"
    d56, f5, f6 = common_normal(o[4], a[4], o[5], a[5])
    if d56 > TOLERANCE:
        return None, f"axes 5 and 6 do not meet (they are {d56:.3g} m apart)"
    upper = common_normal(o[1], a[1], o[2], a[2])[0]
    fore = common_normal(o[2], a[2], o[3], a[3])[0]
    if upper < 1e-6 or fore < 1e-6:
        return None, "axes 2-3 or 3-4 coincide"
    x5 = 0.5 * (f5 + f6)
    tip = geometry.tip[:3, 3]
    return {
        "upper_arm": upper,
        "forearm": fore,
        "lateral_offset": float(a[1] @ (x5 - o[0])),
        "wrist_offset": common_normal(x5, a[5], o[3], a[3])[0],
        "flange": float(a[5] @ (tip - x5)),
        "x5": x5.tolist(),
    }, ""


class URSolver(AnalyticSolver):
    """Closed-form IK of a UR-type arm (see the module docstring); up to 8 branches."""

    family = "ur"

    def __init__(self, geometry: ChainGeometry, parameters: dict) -> None:
        super().__init__(geometry, parameters)
        self._x5 = np.array(parameters["x5"], dtype=float)
        self._tip_inv = np.ascontiguousarray(np.linalg.inv(geometry.tip))

    def _solve_into(self, R: np.ndarray, p: np.ndarray, out: np.ndarray, err: np.ndarray) -> int:
        return int(
            ur_solve(self._axes, self._points, self._tip, self._tip_inv, self._x5, R, p, out, err)
        )


@kernel
def _unturn(k: tuple, o: tuple, R: tuple, x: tuple) -> tuple:
    """``E^-1 x`` for the rotation ``R`` about the line (``k``, ``o``)."""
    return add(mtv(R, sub(x, o)), o)


@kernel
def _arm_one(a2: tuple, a3: tuple, a4: tuple, u: tuple, c: tuple, t: tuple, RH: tuple, q3: float):
    """``(q2, q3, q4)`` for one elbow root ``q3``."""
    R3 = rot(a3, q3)
    q2 = rotation_angle(a2, sub(mv(R3, u), c), t)  # turn E_3 x4 onto H x4 about axis 2
    return (q2, q3, angle_about(mtm(mm(rot(a2, q2), R3), RH), a4))


@kernel
def _arm(A: np.ndarray, P: np.ndarray, P4: tuple, RH: tuple) -> tuple:
    """Step 4: ``(count, (q2, q3, q4), (q2, q3, q4))`` from ``H``."""
    a2, a3, a4 = row(A, 1), row(A, 2), row(A, 3)
    o2, o3 = row(P, 1), row(P, 2)
    # parts perpendicular to the common direction of axes 2-4, from axis 3 (u: x4,
    # c: axis 2) and from axis 2 (t: H x4)
    u, c, t = sub(row(P, 3), o3), sub(o2, o3), sub(P4, o2)
    u = sub(u, scale(dot(a3, u), a3))
    c = sub(c, scale(dot(a3, c), a3))
    t = sub(t, scale(dot(a3, t), a3))
    rhs = 0.5 * (dot(u, u) + dot(c, c) - dot(t, t))
    k, r0, r1 = cos_sin_roots(dot(c, u), dot(c, cross(a3, u)), rhs)
    return k, _arm_one(a2, a3, a4, u, c, t, RH, r0), _arm_one(a2, a3, a4, u, c, t, RH, r1)


@kernel
def ur_solve(
    A: np.ndarray,
    P: np.ndarray,
    M: np.ndarray,
    Minv: np.ndarray,
    x5: np.ndarray,
    R: np.ndarray,
    p: np.ndarray,
    out: np.ndarray,
    err: np.ndarray,
) -> int:
    """Every branch of the tip pose ``(R, p)`` of a UR-type arm into ``out`` (8 x 6).

    ``A``, ``P``: axes and points of the joint lines at zero; ``M``, ``Minv``: the tip
    pose at zero and its inverse; ``x5``: the point where axes 5 and 6 meet. The FK
    errors of each row go to ``err`` (8 x 2). Returns the number of rows.
    """
    RG, pG = transform_rows(Minv, R, p)
    a1, n, a5, a6 = row(A, 0), row(A, 1), row(A, 4), row(A, 5)
    o1 = row(P, 0)
    X5 = (x5[0], x5[1], x5[2])
    # step 1: shoulder
    v = sub(add(mv(RG, X5), pG), o1)
    c1 = dot(a1, n)
    k1, s0, s1 = cos_sin_roots(
        dot(sub(n, scale(c1, a1)), v), dot(cross(a1, n), v), dot(n, sub(X5, o1)) - c1 * dot(a1, v)
    )
    c5 = dot(n, a5) * dot(a5, a6)
    count = 0
    for i1 in range(k1):
        q1 = s0 if i1 == 0 else s1
        R1 = rot(a1, q1)
        Rn = mv(R1, n)
        # step 2: wrist
        k5, w0, w1 = cos_sin_roots(dot(n, a6) - c5, dot(n, cross(a5, a6)), dot(Rn, mv(RG, a6)) - c5)
        for i5 in range(k5):
            q5 = w0 if i5 == 0 else w1
            R5 = rot(a5, q5)
            # step 3: q6
            q6 = rotation_angle(a6, mtv(RG, Rn), mtv(R5, n))
            R6 = rot(a6, q6)
            # step 4: H x4 (x4 = o_4) and the rotation of H
            x = _unturn(a6, row(P, 5), R6, _unturn(a5, row(P, 4), R5, row(P, 3)))
            P4 = _unturn(a1, o1, R1, add(mv(RG, x), pG))
            RH = mtm(R1, mmt(RG, mm(R5, R6)))
            k, arm0, arm1 = _arm(A, P, P4, RH)
            for m in range(k):
                arm = arm0 if m == 0 else arm1
                out[count, 0], out[count, 4], out[count, 5] = wrap(q1), wrap(q5), wrap(q6)
                out[count, 1], out[count, 2], out[count, 3] = (
                    wrap(arm[0]),
                    wrap(arm[1]),
                    wrap(arm[2]),
                )
                count += 1
    return pose_errors_rows(A, P, M, out, count, R, p, err)
