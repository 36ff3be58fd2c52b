"""Spherical-wrist 6R arms in general: axes 4, 5 and 6 meet at one point, the wrist centre.

The wrist joints do not move the wrist centre ``w``, so the problem decouples (Pieper):
with ``G = T M^-1 = E_1 ... E_6`` on the joint lines (:mod:`.geometry`), the
**position** subproblem is ``E_1(q_1) E_2(q_2) E_3(q_3) w = G w`` (a 3R arm reaching a
point, up to 4 solutions) and the **orientation** subproblem, per position solution,
``R_4 R_5 R_6 = (R_1 R_2 R_3)^T R_G`` (two axes by subproblem 2 on ``a_6``, then ``q_6``
by subproblem 1: 2 solutions). Up to 4 x 2 = 8 branches.

The position subproblem by the relation of axes 1 and 2:

* **general** (skew axes, distance ``a > 0``, angle ``alpha`` with ``sin alpha != 0``):
  rotations about axis 1 keep the distance to a point ``c`` of it and the height along
  ``a_1``. With ``v(q_3) = E_3 w - d`` (``d``, ``c`` the feet of the common normal on
  axes 2 and 1, ``n`` its direction, ``m = a_2 x n``), the two conditions read
  ``2 a |v_perp| cos phi = |p - c|^2 - a^2 - |v|^2`` and
  ``(a_1 . m) |v_perp| sin phi = a_1 . (p - c) - cos(alpha) (a_2 . v)`` with
  ``phi = q_2 + angle(v_perp)``; eliminating ``phi`` leaves a quadratic form in
  ``(cos q3, sin q3)``, a quartic in ``tan(q3 / 2)`` (Pieper's case of a general 3R
  arm), solved by root isolation (:func:`~.kernels.quartic_roots`); ``q2`` from ``phi``,
  ``q1`` by subproblem 1;
* **intersecting** (``a = 0``, meeting at ``c``): ``|E_3 w - c| = |p - c|`` gives ``q3``
  (two roots), subproblem 2 gives ``(q1, q2)`` (two each);
* **parallel** (``a_1 || a_2``): the height along ``a_1`` gives ``q3`` (two roots), the
  distance to axis 1 gives ``q2`` (two), subproblem 1 gives ``q1``.
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel
from .base import AnalyticSolver
from .geometry import ChainGeometry, common_normal, parallel
from .kernels import (
    add,
    angle_about,
    angles12,
    cos_sin_roots,
    cross,
    cubic_roots,
    dot,
    mm,
    mtm,
    mv,
    pose_errors_rows,
    quartic_roots,
    rot,
    rotation_angle,
    row,
    scale,
    sub,
    transform_rows,
    two_axes,
    wrap,
)

__all__ = ["SphericalSolver", "spherical_parameters"]

#: Structure tolerance (``|a x b|`` of parallel axes, distance [m] of meeting lines).
TOLERANCE = 1e-9
#: ``|a x b|`` above which two axes count as clearly not parallel.
DISTINCT = 1e-3
#: Position-subproblem cases (the ``case`` parameter).
GENERAL, INTERSECTING, PARALLEL = 0, 1, 2
_CASE_NAMES = {GENERAL: "general", INTERSECTING: "intersecting", PARALLEL: "parallel"}


def wrist_centre(geometry: ChainGeometry) -> tuple[np.ndarray | None, str]:
    """The point where axes 4, 5 and 6 meet, or ``(None, why not)``."""
    a, o = geometry.axes, geometry.points
    feet = []
    for i, j in ((3, 4), (4, 5)):
        if parallel(a[i], a[j], DISTINCT):
            return None, f"axes {i + 1} and {j + 1} are parallel"
        dist, fi, fj = common_normal(o[i], a[i], o[j], a[j])
        if dist > TOLERANCE:
            return None, f"axes {i + 1} and {j + 1} do not meet ({dist:.3g} m apart)"
        feet.extend([fi, fj])
    w = 0.25 * (feet[0] + feet[1] + feet[2] + feet[3])
    if max(float(np.linalg.norm(f - w)) for f in feet) > TOLERANCE:
        return None, "axes 4, 5 and 6 do not meet at one point"
    return w, ""


def spherical_parameters(geometry: ChainGeometry) -> tuple[dict | None, str]:
    """The spherical-wrist parameters of a chain, or ``(None, why not)``.

    Parameters: ``case`` (``"general"``, ``"intersecting"`` or ``"parallel"``: axes 1
    and 2), ``shoulder_offset`` (distance between axes 1 and 2 [m]), ``shoulder_twist``
    (angle between them [rad]), ``wrist_centre`` (base frame, at zero [m]) and the
    precomputed feet of the common normal.
    """
    if geometry.n != 6:
        return None, f"needs 6 joints, the chain has {geometry.n}"
    w, why = wrist_centre(geometry)
    if w is None:
        return None, why
    a, o = geometry.axes, geometry.points
    if common_normal(o[2], a[2], w, a[2])[0] < 1e-6:
        return None, "the wrist centre lies on axis 3"
    if common_normal(o[1], a[1], o[2], a[2])[0] < 1e-6 and parallel(a[1], a[2], TOLERANCE):
        return None, "axes 2 and 3 coincide"
    dist, c, d = common_normal(o[0], a[0], o[1], a[1])
    twist = math.atan2(float(np.linalg.norm(np.cross(a[0], a[1]))), float(a[0] @ a[1]))
    if parallel(a[0], a[1], TOLERANCE):
        if dist < 1e-6:
            return None, "axes 1 and 2 coincide"
        if parallel(a[0], a[2], DISTINCT):
            return None, "axes 1, 2 and 3 are parallel (a planar arm cannot reach a point)"
        case = PARALLEL
    elif dist <= TOLERANCE:
        case = INTERSECTING
        c = d = 0.5 * (c + d)
    elif parallel(a[0], a[1], DISTINCT):
        return None, "axes 1 and 2 are nearly parallel"
    else:
        case = GENERAL
    n = (d - c) / dist if case == GENERAL else np.zeros(3)
    return {
        "case": _CASE_NAMES[case],
        "shoulder_offset": dist,
        "shoulder_twist": twist,
        "wrist_centre": w.tolist(),
        "c": c.tolist(),
        "d": d.tolist(),
        "n": n.tolist(),
    }, ""


class SphericalSolver(AnalyticSolver):
    """Closed-form IK of a spherical-wrist 6R arm (see the module docstring); up to 8."""

    family = "spherical"

    def __init__(self, geometry: ChainGeometry, parameters: dict) -> None:
        super().__init__(geometry, parameters)
        case = {v: k for k, v in _CASE_NAMES.items()}[parameters["case"]]
        self._prm = np.array(
            [
                *parameters["wrist_centre"],
                *parameters["c"],
                *parameters["d"],
                *parameters["n"],
                float(case),
                parameters["shoulder_offset"],
            ]
        )
        self._tip_inv = np.ascontiguousarray(np.linalg.inv(geometry.tip))

    def _solve_into(self, R: np.ndarray, p: np.ndarray, out: np.ndarray, err: np.ndarray) -> int:
        return int(
            spherical_solve(
                self._axes, self._points, self._tip, self._tip_inv, self._prm, R, p, out, err
            )
        )


# -- position subproblem --------------------------------------------------------------------
@kernel
def _circle(A: np.ndarray, P: np.ndarray, w: tuple) -> tuple:
    """``E_3(q) w = g0 + cos(q) f1 + sin(q) f2``: ``(a3, g0, f1, f2)`` relative to ``o_3``."""
    a3, o3 = row(A, 2), row(P, 2)
    r = sub(w, o3)
    f0 = scale(dot(a3, r), a3)
    return a3, add(o3, f0), sub(r, f0), cross(a3, r)


@kernel
def _lin_mul(x: tuple, y: tuple) -> tuple:
    """Product of two linear forms ``x0 + xc cos + xs sin``.

    Returns the coefficients of ``(cos^2, sin^2, cos sin, cos, sin, 1)``.
    """
    return (
        x[1] * y[1],
        x[2] * y[2],
        x[1] * y[2] + x[2] * y[1],
        x[0] * y[1] + x[1] * y[0],
        x[0] * y[2] + x[2] * y[0],
        x[0] * y[0],
    )


@kernel
def _trig_value(Q: tuple, t: float) -> tuple:
    """Value and derivative of the quadratic form ``Q`` at ``(cos t, sin t)``."""
    c, s = math.cos(t), math.sin(t)
    f = Q[0] * c * c + Q[1] * s * s + Q[2] * c * s + Q[3] * c + Q[4] * s + Q[5]
    df = -2.0 * Q[0] * c * s + 2.0 * Q[1] * s * c + Q[2] * (c * c - s * s) - Q[3] * s + Q[4] * c
    return f, df


@kernel
def _elbow_roots(Q: tuple) -> tuple:
    """Angles ``t`` with ``Q(cos t, sin t) = 0`` (half-angle quartic): count and 4 roots."""
    # (1 + x^2)^2 Q with cos = (1 - x^2) / (1 + x^2), sin = 2x / (1 + x^2)
    cc, ss, cs, c, s, k = Q
    poly = (
        cc - c + k,
        -2.0 * cs + 2.0 * s,
        -2.0 * cc + 4.0 * ss + 2.0 * k,
        2.0 * cs + 2.0 * s,
        cc + c + k,
    )
    size = abs(cc) + abs(ss) + abs(cs) + abs(c) + abs(s) + abs(k)
    out = [0.0, 0.0, 0.0, 0.0]
    n = 0
    if abs(poly[0]) <= 1e-14 * size:  # t = pi is a root: the quartic drops a degree
        out[0] = math.pi
        n = 1
        poly = (0.0, poly[1], poly[2], poly[3], poly[4])
    if abs(poly[0]) > 0.0:
        m, r0, r1, r2, r3 = quartic_roots(poly)
    elif abs(poly[1]) > 0.0:
        m, r0, r1, r2, r3 = cubic_roots(poly)
    else:
        m, r0, r1, r2, r3 = 0, 0.0, 0.0, 0.0, 0.0
    for i in range(min(m, 4 - n)):
        x = r0 if i == 0 else (r1 if i == 1 else (r2 if i == 2 else r3))
        t = 2.0 * math.atan(x)
        for _ in range(3):  # polish on the circle
            f, df = _trig_value(Q, t)
            if df == 0.0:
                break
            t -= f / df
        out[n] = t
        n += 1
    return n, out[0], out[1], out[2], out[3]


@kernel
def _position_general(A: np.ndarray, P: np.ndarray, prm: np.ndarray, pw: tuple) -> tuple:
    """Skew axes 1-2: up to 4 ``(q1, q2, q3)`` (count, then 12 angles)."""
    a1, a2 = row(A, 0), row(A, 1)
    w = (prm[0], prm[1], prm[2])
    c = (prm[3], prm[4], prm[5])
    d = (prm[6], prm[7], prm[8])
    nn = (prm[9], prm[10], prm[11])
    a = prm[13]
    m = cross(a2, nn)
    cos_al, sig = dot(a1, a2), dot(a1, m)
    _, g0, f1, f2 = _circle(A, P, w)
    g0 = sub(g0, d)  # v(q3) = E_3 w - d = g0 + cos f1 + sin f2
    rp2 = dot(sub(pw, c), sub(pw, c))
    hp = dot(a1, sub(pw, c))
    v2 = (dot(g0, g0) + dot(f1, f1), 2.0 * dot(g0, f1), 2.0 * dot(g0, f2))
    vpar = (dot(a2, g0), dot(a2, f1), dot(a2, f2))
    k1 = (rp2 - a * a - v2[0], -v2[1], -v2[2])
    k2 = (hp - cos_al * vpar[0], -cos_al * vpar[1], -cos_al * vpar[2])
    s2, a2x4 = sig * sig, 4.0 * a * a
    t1, t2, t3 = _lin_mul(k1, k1), _lin_mul(k2, k2), _lin_mul(vpar, vpar)
    Q = (
        s2 * t1[0] + a2x4 * t2[0] + a2x4 * s2 * t3[0],
        s2 * t1[1] + a2x4 * t2[1] + a2x4 * s2 * t3[1],
        s2 * t1[2] + a2x4 * t2[2] + a2x4 * s2 * t3[2],
        s2 * t1[3] + a2x4 * t2[3] + a2x4 * s2 * (t3[3] - v2[1]),
        s2 * t1[4] + a2x4 * t2[4] + a2x4 * s2 * (t3[4] - v2[2]),
        s2 * t1[5] + a2x4 * t2[5] + a2x4 * s2 * (t3[5] - v2[0]),
    )
    n, r0, r1, r2, r3 = _elbow_roots(Q)
    out = [0.0] * 12
    for i in range(n):
        q3 = r0 if i == 0 else (r1 if i == 1 else (r2 if i == 2 else r3))
        cq, sq = math.cos(q3), math.sin(q3)
        v = add(g0, add(scale(cq, f1), scale(sq, f2)))
        vp = sub(v, scale(dot(a2, v), a2))
        lv = math.sqrt(dot(vp, vp))
        phi = math.atan2(
            (k2[0] + k2[1] * cq + k2[2] * sq) / sig, (k1[0] + k1[1] * cq + k1[2] * sq) / (2.0 * a)
        )
        q2 = phi - math.atan2(dot(vp, m), dot(vp, nn)) if lv > 1e-12 else 0.0
        y = add(d, mv(rot(a2, q2), v))
        out[3 * i] = rotation_angle(a1, sub(y, c), sub(pw, c))
        out[3 * i + 1], out[3 * i + 2] = q2, q3
    return n, angles12(out)


@kernel
def _position_intersecting(A: np.ndarray, P: np.ndarray, prm: np.ndarray, pw: tuple) -> tuple:
    """Axes 1-2 meeting at ``c``: up to 4 ``(q1, q2, q3)`` (count, then 12 angles)."""
    a1, a2 = row(A, 0), row(A, 1)
    w = (prm[0], prm[1], prm[2])
    c = (prm[3], prm[4], prm[5])
    _, g0, f1, f2 = _circle(A, P, w)
    g0 = sub(g0, c)
    pc = sub(pw, c)
    k, r0, r1 = cos_sin_roots(
        2.0 * dot(g0, f1), 2.0 * dot(g0, f2), dot(pc, pc) - dot(g0, g0) - dot(f1, f1)
    )
    out = [0.0] * 12
    n = 0
    for i in range(k):
        q3 = r0 if i == 0 else r1
        z = add(g0, add(scale(math.cos(q3), f1), scale(math.sin(q3), f2)))
        m, t1, t2, u1, u2 = two_axes(a1, a2, z, pc)
        for j in range(m):
            out[3 * n] = t1 if j == 0 else u1
            out[3 * n + 1] = t2 if j == 0 else u2
            out[3 * n + 2] = q3
            n += 1
    return n, angles12(out)


@kernel
def _position_parallel(A: np.ndarray, P: np.ndarray, prm: np.ndarray, pw: tuple) -> tuple:
    """Parallel axes 1-2: up to 4 ``(q1, q2, q3)`` (count, then 12 angles)."""
    a1, a2 = row(A, 0), row(A, 1)
    o1, o2 = row(P, 0), row(P, 1)
    w = (prm[0], prm[1], prm[2])
    _, g0, f1, f2 = _circle(A, P, w)
    k, r0, r1 = cos_sin_roots(dot(a1, f1), dot(a1, f2), dot(a1, sub(pw, g0)))
    t = sub(pw, o1)
    t = sub(t, scale(dot(a1, t), a1))
    cc = sub(o1, o2)
    cc = sub(cc, scale(dot(a1, cc), a1))
    out = [0.0] * 12
    n = 0
    for i in range(k):
        q3 = r0 if i == 0 else r1
        z = add(g0, add(scale(math.cos(q3), f1), scale(math.sin(q3), f2)))
        u = sub(z, o2)
        u = sub(u, scale(dot(a1, u), a1))
        rhs = 0.5 * (dot(u, u) + dot(cc, cc) - dot(t, t))
        m, s0, s1 = cos_sin_roots(dot(cc, u), dot(cc, cross(a2, u)), rhs)
        for j in range(m):
            q2 = s0 if j == 0 else s1
            out[3 * n] = rotation_angle(a1, sub(mv(rot(a2, q2), u), cc), t)
            out[3 * n + 1], out[3 * n + 2] = q2, q3
            n += 1
    return n, angles12(out)


# -- the solve -------------------------------------------------------------------------------
@kernel
def spherical_solve(
    A: np.ndarray,
    P: np.ndarray,
    M: np.ndarray,
    Minv: np.ndarray,
    prm: np.ndarray,
    R: np.ndarray,
    p: np.ndarray,
    out: np.ndarray,
    err: np.ndarray,
) -> int:
    """Every branch of the tip pose ``(R, p)`` of a spherical-wrist arm into ``out``.

    ``prm``: wrist centre, feet ``c`` and ``d`` of the common normal of axes 1-2 and its
    direction, the case code and the axes' distance (see :class:`SphericalSolver`).
    FK errors go to ``err``. Returns the number of rows (at most 8).
    """
    RG, pG = transform_rows(Minv, R, p)
    pw = add(mv(RG, (prm[0], prm[1], prm[2])), pG)
    case = int(prm[12])
    if case == GENERAL:
        sol = _position_general(A, P, prm, pw)
    elif case == INTERSECTING:
        sol = _position_intersecting(A, P, prm, pw)
    else:
        sol = _position_parallel(A, P, prm, pw)
    a1, a2, a3, a4, a5, a6 = row(A, 0), row(A, 1), row(A, 2), row(A, 3), row(A, 4), row(A, 5)
    count = 0
    for i in range(sol[0]):
        q1, q2, q3 = sol[1][3 * i], sol[1][3 * i + 1], sol[1][3 * i + 2]
        Rw = mtm(mm(mm(rot(a1, q1), rot(a2, q2)), rot(a3, q3)), RG)
        m, t4, t5, u4, u5 = two_axes(a4, a5, a6, mv(Rw, a6))
        for j in range(m):
            q4 = t4 if j == 0 else u4
            q5 = t5 if j == 0 else u5
            q6 = angle_about(mtm(mm(rot(a4, q4), rot(a5, q5)), Rw), a6)
            out[count, 0], out[count, 1], out[count, 2] = wrap(q1), wrap(q2), wrap(q3)
            out[count, 3], out[count, 4], out[count, 5] = wrap(q4), wrap(q5), wrap(q6)
            count += 1
    return pose_errors_rows(A, P, M, out, count, R, p, err)
