"""Compiled building blocks of the closed-form solvers: 3-D algebra, subproblems, checks.

Every function is a :func:`stackik._jit.kernel` (numba is imported on first use).
3-vectors are tuples ``(x, y, z)`` and 3x3 matrices row-major 9-tuples: numba keeps
them in registers, so a whole 8-branch solve allocates nothing. The subproblems are the
classical ones of screw-theory inverse kinematics (Paden, Kahan; see R. Murray, Z. Li,
S. Sastry, *A Mathematical Introduction to Robotic Manipulation*, 1994, sec. 3.3),
written here for lines given by a unit axis ``k`` and a point:

* :func:`rotation_angle` (subproblem 1): the angle about ``k`` that turns ``x`` onto
  ``y`` (their components perpendicular to ``k``);
* :func:`cos_sin_roots`: ``A cos t + B sin t = C``, the scalar equation the distance,
  height and projection subproblems reduce to;
* :func:`two_axes` (subproblem 2): ``R(k1, t1) R(k2, t2) x = y`` for axes through one
  point.
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel

__all__ = [
    "BOUNDARY_SLACK",
    "add",
    "angles12",
    "cos_sin_roots",
    "cross",
    "cubic_roots",
    "dot",
    "mat",
    "mm",
    "mmt",
    "mtm",
    "mtv",
    "mv",
    "pose_errors",
    "pose_errors_rows",
    "quartic_roots",
    "rot",
    "rotation_angle",
    "row",
    "scale",
    "sub",
    "transform_rows",
    "two_axes",
    "wrap",
]

#: Slack of ``|C| <= sqrt(A^2 + B^2)`` in :func:`cos_sin_roots` (relative): a target on
#: the boundary of the workspace (stretched or folded arm) is kept, clamped to it.
BOUNDARY_SLACK = 1e-9


# -- 3-vectors and 3x3 matrices as tuples -------------------------------------------------------
@kernel
def angles12(out: list) -> tuple:
    """The 12 angles of up to 4 ``(q1, q2, q3)`` triples as a tuple (a kernel's return)."""
    return (
        out[0],
        out[1],
        out[2],
        out[3],
        out[4],
        out[5],
        out[6],
        out[7],
        out[8],
        out[9],
        out[10],
        out[11],
    )


@kernel
def row(A: np.ndarray, i: int) -> tuple:
    """Row ``i`` of an (n, 3) array as a 3-tuple."""
    return (A[i, 0], A[i, 1], A[i, 2])


@kernel
def mat(A: np.ndarray) -> tuple:
    """The top-left 3x3 block of an array as a row-major 9-tuple."""
    return (A[0, 0], A[0, 1], A[0, 2], A[1, 0], A[1, 1], A[1, 2], A[2, 0], A[2, 1], A[2, 2])


@kernel
def dot(a: tuple, b: tuple) -> float:
    """``a . b``."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@kernel
def cross(a: tuple, b: tuple) -> tuple:
    """``a x b``."""
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@kernel
def add(a: tuple, b: tuple) -> tuple:
    """``a + b``."""
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@kernel
def sub(a: tuple, b: tuple) -> tuple:
    """``a - b``."""
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@kernel
def scale(s: float, a: tuple) -> tuple:
    """``s a``."""
    return (s * a[0], s * a[1], s * a[2])


@kernel
def mv(M: tuple, x: tuple) -> tuple:
    """``M x``."""
    return (
        M[0] * x[0] + M[1] * x[1] + M[2] * x[2],
        M[3] * x[0] + M[4] * x[1] + M[5] * x[2],
        M[6] * x[0] + M[7] * x[1] + M[8] * x[2],
    )


@kernel
def mtv(M: tuple, x: tuple) -> tuple:
    """``M^T x``."""
    return (
        M[0] * x[0] + M[3] * x[1] + M[6] * x[2],
        M[1] * x[0] + M[4] * x[1] + M[7] * x[2],
        M[2] * x[0] + M[5] * x[1] + M[8] * x[2],
    )


@kernel
def mm(A: tuple, B: tuple) -> tuple:
    """``A B``."""
    return (
        A[0] * B[0] + A[1] * B[3] + A[2] * B[6],
        A[0] * B[1] + A[1] * B[4] + A[2] * B[7],
        A[0] * B[2] + A[1] * B[5] + A[2] * B[8],
        A[3] * B[0] + A[4] * B[3] + A[5] * B[6],
        A[3] * B[1] + A[4] * B[4] + A[5] * B[7],
        A[3] * B[2] + A[4] * B[5] + A[5] * B[8],
        A[6] * B[0] + A[7] * B[3] + A[8] * B[6],
        A[6] * B[1] + A[7] * B[4] + A[8] * B[7],
        A[6] * B[2] + A[7] * B[5] + A[8] * B[8],
    )


@kernel
def mtm(A: tuple, B: tuple) -> tuple:
    """``A^T B``."""
    return mm((A[0], A[3], A[6], A[1], A[4], A[7], A[2], A[5], A[8]), B)


@kernel
def mmt(A: tuple, B: tuple) -> tuple:
    """``A B^T``."""
    return mm(A, (B[0], B[3], B[6], B[1], B[4], B[7], B[2], B[5], B[8]))


@kernel
def rot(k: tuple, t: float) -> tuple:
    """The rotation by ``t`` [rad] about the unit axis ``k`` (Rodrigues), a 9-tuple."""
    c, s = math.cos(t), math.sin(t)
    v = 1.0 - c
    x, y, z = k[0], k[1], k[2]
    return (
        c + v * x * x,
        v * x * y - s * z,
        v * x * z + s * y,
        v * x * y + s * z,
        c + v * y * y,
        v * y * z - s * x,
        v * x * z - s * y,
        v * y * z + s * x,
        c + v * z * z,
    )


@kernel
def angle_about(M: tuple, k: tuple) -> float:
    """The angle [rad] of a rotation ``M`` about the unit axis ``k`` (``M = rot(k, t)``)."""
    s = 0.5 * (k[0] * (M[7] - M[5]) + k[1] * (M[2] - M[6]) + k[2] * (M[3] - M[1]))
    return math.atan2(s, 0.5 * (M[0] + M[4] + M[8] - 1.0))


@kernel
def wrap(t: float) -> float:
    """An angle wrapped into ``(-pi, pi]`` [rad]."""
    w = t - 2.0 * math.pi * math.floor((t + math.pi) / (2.0 * math.pi))
    return w + 2.0 * math.pi if w <= -math.pi else w


# -- subproblems ---------------------------------------------------------------------------------
@kernel
def rotation_angle(k: tuple, x: tuple, y: tuple) -> float:
    """Subproblem 1: the angle [rad] about ``k`` turning ``x``'s perpendicular part onto ``y``'s.

    Returns 0 when either perpendicular part vanishes (every angle fits: a singular
    configuration, one of a continuum is returned).
    """
    xp = sub(x, scale(dot(k, x), k))
    yp = sub(y, scale(dot(k, y), k))
    c = dot(xp, yp)
    s = dot(k, cross(xp, yp))
    if abs(c) + abs(s) < 1e-14 * (1.0 + dot(x, x) + dot(y, y)):
        return 0.0
    return math.atan2(s, c)


@kernel
def cos_sin_roots(A: float, B: float, C: float) -> tuple:
    """Roots of ``A cos t + B sin t = C``: ``(count, t0, t1)``, count 0 or 2.

    A right-hand side up to :data:`BOUNDARY_SLACK` beyond the amplitude counts as on the
    boundary (a double root, returned twice).
    """
    r = math.sqrt(A * A + B * B)
    if r < 1e-14:
        return (0, 0.0, 0.0)
    ratio = C / r
    if abs(ratio) > 1.0 + BOUNDARY_SLACK:
        return (0, 0.0, 0.0)
    base = math.atan2(B, A)
    d = math.acos(min(1.0, max(-1.0, ratio)))
    return (2, base + d, base - d)


@kernel
def two_axes(k1: tuple, k2: tuple, x: tuple, y: tuple) -> tuple:
    """Subproblem 2: ``R(k1, t1) R(k2, t2) x = y`` for axes through the origin.

    Returns ``(count, t1, t2, t1', t2')`` with count 0 or 2 (a double root twice);
    ``x`` and ``y`` must have equal norms.
    """
    c12 = dot(k1, k2)
    den = 1.0 - c12 * c12
    if den < 1e-14:
        return (0, 0.0, 0.0, 0.0, 0.0)
    # z = R(k2, t2) x = R(k1, t1)^T y lies on both cones: k1.z = k1.y, k2.z = k2.x
    u, v = dot(k1, y), dot(k2, x)
    alpha = (u - c12 * v) / den
    beta = (v - c12 * u) / den
    n = cross(k1, k2)
    nn = dot(n, n)
    g2 = (dot(x, x) - alpha * alpha - beta * beta - 2.0 * alpha * beta * c12) / nn
    if g2 < -BOUNDARY_SLACK * (dot(x, x) + 1e-300) / nn:
        return (0, 0.0, 0.0, 0.0, 0.0)
    g = math.sqrt(max(g2, 0.0))
    base = add(scale(alpha, k1), scale(beta, k2))
    za = add(base, scale(g, n))
    zb = sub(base, scale(g, n))
    return (
        2,
        rotation_angle(k1, za, y),
        rotation_angle(k2, x, za),
        rotation_angle(k1, zb, y),
        rotation_angle(k2, x, zb),
    )


# -- checks --------------------------------------------------------------------------------------
@kernel
def pose_errors(
    axes: np.ndarray,
    points: np.ndarray,
    tip: np.ndarray,
    q: np.ndarray,
    R: np.ndarray,
    p: np.ndarray,
    err: np.ndarray,
) -> None:
    """Position [m] and orientation [rad] error of ``q`` against the pose ``(R, p)``.

    Forward kinematics by the product of exponentials of the joint lines
    (``axes``, ``points``, zero-configuration ``tip`` pose); ``err[0]`` the distance,
    ``err[1]`` the rotation angle of ``R^T R(q)``.
    """
    Rc = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
    pc = (0.0, 0.0, 0.0)
    for i in range(q.shape[0]):
        Ri = rot(row(axes, i), q[i])
        o = row(points, i)
        pc = add(pc, mv(Rc, sub(o, mv(Ri, o))))
        Rc = mm(Rc, Ri)
    e = sub(add(pc, mv(Rc, (tip[0, 3], tip[1, 3], tip[2, 3]))), (p[0], p[1], p[2]))
    err[0] = math.sqrt(dot(e, e))
    E = mtm(mat(R), mm(Rc, mat(tip)))
    sx, sy, sz = 0.5 * (E[7] - E[5]), 0.5 * (E[2] - E[6]), 0.5 * (E[3] - E[1])
    err[1] = math.atan2(math.sqrt(sx * sx + sy * sy + sz * sz), 0.5 * (E[0] + E[4] + E[8] - 1.0))


@kernel
def pose_errors_rows(
    axes: np.ndarray,
    points: np.ndarray,
    tip: np.ndarray,
    Q: np.ndarray,
    count: int,
    R: np.ndarray,
    p: np.ndarray,
    err: np.ndarray,
) -> int:
    """:func:`pose_errors` of the first ``count`` rows of ``Q`` into ``err``; returns ``count``."""
    for i in range(count):
        pose_errors(axes, points, tip, Q[i], R, p, err[i])
    return count


@kernel
def transform_rows(M: np.ndarray, R: np.ndarray, p: np.ndarray) -> tuple:
    """``(R, p) M`` for a 4x4 ``M``: the rotation (9-tuple) and translation (3-tuple)."""
    Rt = mat(R)
    return mm(Rt, mat(M)), add(mv(Rt, (M[0, 3], M[1, 3], M[2, 3])), (p[0], p[1], p[2]))


# -- real roots of polynomials up to degree 4 ---------------------------------------------------
@kernel
def _poly(c: tuple, x: float) -> float:
    """``c[0] x^4 + c[1] x^3 + c[2] x^2 + c[3] x + c[4]``."""
    return (((c[0] * x + c[1]) * x + c[2]) * x + c[3]) * x + c[4]


@kernel
def _bisect(c: tuple, lo: float, hi: float) -> float:
    """A root of the polynomial ``c`` in ``[lo, hi]``, whose ends have opposite signs."""
    flo = _poly(c, lo)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        fm = _poly(c, mid)
        if fm == 0.0:
            return mid
        if (fm > 0.0) == (flo > 0.0):
            lo, flo = mid, fm
        else:
            hi = mid
    return 0.5 * (lo + hi)


@kernel
def _roots_between(c: tuple, cuts: tuple, ncuts: int, bound: float) -> tuple:
    """Real roots of ``c`` isolated by its sorted critical points ``cuts[:ncuts]``.

    On each interval between consecutive critical points (and ``+-bound``, beyond which
    there is no root) the polynomial is monotone: a sign change brackets exactly one
    root. A critical point where the polynomial vanishes to rounding is a double root.
    """
    out = [0.0, 0.0, 0.0, 0.0]
    k = 0
    lo = -bound
    for i in range(ncuts + 1):
        hi = bound if i == ncuts else cuts[i]
        flo, fhi = _poly(c, lo), _poly(c, hi)
        if k < 4 and ((flo < 0.0 < fhi) or (fhi < 0.0 < flo)):
            out[k] = _bisect(c, lo, hi)
            k += 1
        if i < ncuts and k < 4:
            x = abs(cuts[i])
            size = (((abs(c[0]) * x + abs(c[1])) * x + abs(c[2])) * x + abs(c[3])) * x + abs(c[4])
            if abs(fhi) <= 1e-13 * size:
                out[k] = cuts[i]
                k += 1
        lo = hi
    return k, out[0], out[1], out[2], out[3]


@kernel
def _cauchy(c: tuple, lead: int) -> float:
    """Cauchy's bound on the real roots, from the leading coefficient ``c[lead]``."""
    m = 0.0
    for i in range(lead + 1, 5):
        m = max(m, abs(c[i]))
    return 1.0 + m / abs(c[lead])


@kernel
def _quadratic(a: float, b: float, cc: float) -> tuple:
    """Real roots of ``a x^2 + b x + cc`` (``a != 0``), sorted: ``(count, r0, r1)``."""
    disc = b * b - 4.0 * a * cc
    if disc < 0.0:
        return 0, 0.0, 0.0
    q = -0.5 * (b + math.copysign(math.sqrt(disc), b))
    r0 = q / a
    r1 = cc / q if q != 0.0 else r0
    return 2, min(r0, r1), max(r0, r1)


@kernel
def cubic_roots(c: tuple) -> tuple:
    """Real roots of ``c[1] x^3 + c[2] x^2 + c[3] x + c[4]`` (``c[0] = 0``, ``c[1] != 0``)."""
    n, r0, r1 = _quadratic(3.0 * c[1], 2.0 * c[2], c[3])
    cuts = (r0, r1, 0.0, 0.0)
    return _roots_between(c, cuts, n, _cauchy(c, 1))


@kernel
def quartic_roots(c: tuple) -> tuple:
    """Real roots of ``c[0] x^4 + ... + c[4]`` (``c[0] != 0``): ``(count, r0, r1, r2, r3)``.

    Root isolation by the critical points (the real roots of the derivative, a cubic
    solved the same way), then bisection on each monotone interval: robust, no
    eigenvalue solver, double roots kept.
    """
    d = (0.0, 4.0 * c[0], 3.0 * c[1], 2.0 * c[2], c[3])
    n, r0, r1, r2, _ = cubic_roots(d)
    # the derivative's roots are sorted interval by interval
    cuts = (r0, r1, r2, 0.0)
    return _roots_between(c, cuts, n, _cauchy(c, 0))
