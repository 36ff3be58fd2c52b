"""Ortho-parallel arms with a spherical wrist, in the OPW parameterisation.

M. Brandstötter, A. Angerer, M. Hofbaur, "An analytical solution of the inverse
kinematics problem of industrial serial manipulators with an ortho-parallel basis and a
spherical wrist", Austrian Robotics Workshop 2014, describe the KUKA, ABB, Fanuc and
Stäubli class of arms by seven lengths. In the **canonical frame** (``z`` along axis 1,
``x`` towards axis 2) at the canonical zero (arm pointing up) the axes are ``z, y, y, z,
y, z``; axis 2 passes ``(a1, *, c1)``, axis 3 lies ``c2`` above it, the wrist centre is
``(a1 + a2, b, c1 + c2 + c3)`` and the flange ``c4`` beyond it along axis 6:

    C  = R_z(t1) [a1 + c2 sin t2 + k sin(t2 + t3 + psi), b, c1 + c2 cos t2 + k cos(t2 + t3 + psi)]
    R  = R_z(t1) R_y(t2 + t3) R_z(t4) R_y(t5) R_z(t6),     flange = C + c4 R z

with ``k = hypot(a2, c3)``, ``psi = atan2(a2, c3)``. A description's joint ``i`` relates
to the canonical angle by ``t_i = s_i q_i + t0_i`` (sign ``s_i``: the URDF axis along or
against the canonical one; ``t0_i``: the canonical angle at the URDF's zero), and the
base and tip frames by fixed transforms ``B`` (base -> canonical frame) and ``E``
(flange -> tip): ``T(q) = B F(t(q)) E``. :func:`opw_parameters` reads all of them from
the joint lines; the detection then verifies ``B F E`` against Pinocchio.

The inverse (derived for this module): the wrist centre ``C = p - c4 R z``; ``t1`` keeps
its lateral coordinate at ``b`` (two roots: front, back); a planar two-link problem
gives ``t2, t3`` (elbow up, down); the wrist is the ZYZ decomposition of
``(R_z(t1) R_y(t2 + t3))^T R`` (two: ``t5`` and ``-t5``). Up to 8 branches.
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel
from .base import AnalyticSolver
from .geometry import ChainGeometry, common_normal, parallel, rotation
from .kernels import add, angles12, mat, mm, mtm, mv, pose_errors_rows, transform_rows, wrap
from .spherical import wrist_centre

__all__ = ["OPWSolver", "opw_fk", "opw_parameters"]

#: Structure tolerance: ``|a . b|`` of perpendicular axes, ``|a x b|`` of parallel ones.
TOLERANCE = 1e-9
_NAMES = ("a1", "a2", "b", "c1", "c2", "c3", "c4")


def _rot_y(t: float) -> np.ndarray:
    return rotation(np.array([0.0, 1.0, 0.0]), t)


def _rot_z(t: float) -> np.ndarray:
    return rotation(np.array([0.0, 0.0, 1.0]), t)


def opw_fk(parameters: dict, theta: np.ndarray) -> np.ndarray:
    """Canonical flange pose (4x4, canonical frame) at the canonical angles ``theta``."""
    a1, a2, b, c1, c2, c3, c4 = (parameters[k] for k in _NAMES)
    t1, t2, t3, t4, t5, t6 = theta
    k, psi = math.hypot(a2, c3), math.atan2(a2, c3)
    arm = np.array(
        [
            a1 + c2 * math.sin(t2) + k * math.sin(t2 + t3 + psi),
            b,
            c1 + c2 * math.cos(t2) + k * math.cos(t2 + t3 + psi),
        ]
    )
    R = _rot_z(t1) @ _rot_y(t2 + t3) @ _rot_z(t4) @ _rot_y(t5) @ _rot_z(t6)
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = _rot_z(t1) @ arm + c4 * R[:, 2]
    return T


def _structure(geometry: ChainGeometry) -> str:
    """Why the chain is not ortho-parallel with a spherical wrist ("" when it is)."""
    if geometry.n != 6:
        return f"needs 6 joints, the chain has {geometry.n}"
    a = geometry.axes
    for i, j in ((0, 1), (2, 3), (3, 4), (4, 5)):
        if abs(float(a[i] @ a[j])) > TOLERANCE:
            return f"axes {i + 1} and {j + 1} are not perpendicular"
    if not parallel(a[1], a[2], TOLERANCE):
        return "axes 2 and 3 are not parallel"
    return ""


def opw_parameters(geometry: ChainGeometry) -> tuple[dict | None, str]:
    """OPW parameters, joint signs and offsets and the frames ``B``, ``E``; or ``(None, why)``.

    Returns a dict with ``a1, a2, b, c1, c2, c3, c4`` [m], ``signs`` and ``offsets`` (6
    each: ``t_i = s_i q_i + t0_i`` [rad]), ``base`` (``B``, 4x4) and ``flange_to_tip``
    (``E``, 4x4). The canonical origin is the base origin's foot on axis 1, ``x`` points
    from axis 1 to axis 2 at the zero configuration (``a1 >= 0``) and ``c3 >= 0``.
    """
    why = _structure(geometry)
    if why:
        return None, why
    w, why = wrist_centre(geometry)
    if w is None:
        return None, why
    a, o = geometry.axes, geometry.points
    a1, f1, f2 = common_normal(o[0], a[0], o[1], a[1])
    s1 = 1.0 if float(f1 @ a[0]) >= 0.0 else -1.0
    z = s1 * a[0]  # axis 2 at or above the base origin's foot on axis 1: c1 >= 0
    origin = o[0] - float(o[0] @ z) * z
    x = (f2 - f1) / a1 if a1 > TOLERANCE else np.cross(a[1], z)
    if a1 <= TOLERANCE:
        a1 = 0.0
    y = np.cross(z, x)
    B = np.eye(4)
    B[:3, :3] = np.column_stack([x, y, z])
    B[:3, 3] = origin
    c2, g2, g3 = common_normal(o[1], a[1], o[2], a[2])
    if c2 < 1e-6:
        return None, "axes 2 and 3 coincide"
    d23 = g3 - g2
    t2 = math.atan2(float(d23 @ x), float(d23 @ z))
    t23 = math.atan2(float(a[3] @ x), float(a[3] @ z))
    fore = w - g3
    fore = fore - float(fore @ y) * y
    R3 = B[:3, :3] @ _rot_y(t23)  # link-3 canonical frame at q = 0, base axes
    c3, a2 = float(fore @ R3[:, 2]), float(fore @ R3[:, 0])
    s4 = 1.0
    if c3 < 0.0:  # keep the forearm along +z: axis 4 runs against the canonical one
        s4, t23, c3, a2 = -1.0, t23 + math.pi, -c3, -a2
        R3 = B[:3, :3] @ _rot_y(t23)
    if math.hypot(a2, c3) < 1e-6:
        return None, "the wrist centre lies on axis 3"
    a5 = R3.T @ a[4]
    t4 = math.atan2(-float(a5[0]), float(a5[1]))
    c4 = float(a[5] @ (geometry.tip[:3, 3] - w))
    s6 = 1.0 if c4 >= 0.0 else -1.0  # the flange beyond the wrist centre: c4 >= 0
    a6 = (R3 @ _rot_z(t4)).T @ (s6 * a[5])
    t5 = math.atan2(float(a6[0]), float(a6[2]))
    prm = {
        "a1": a1,
        "a2": a2,
        "b": float((w - origin) @ y),
        "c1": float(f1 @ z),
        "c2": c2,
        "c3": c3,
        "c4": abs(c4),
        "signs": [s1, float(np.sign(a[1] @ y)), float(np.sign(a[2] @ y)), s4, 1.0, s6],
        "offsets": [0.0, t2, t23 - t2, t4, t5, 0.0],
    }
    flange0 = opw_fk(prm, np.array(prm["offsets"]))
    prm["base"] = B.tolist()
    prm["flange_to_tip"] = (np.linalg.inv(flange0) @ np.linalg.inv(B) @ geometry.tip).tolist()
    return prm, ""


class OPWSolver(AnalyticSolver):
    """Closed-form IK of an ortho-parallel arm with a spherical wrist; up to 8 branches."""

    family = "opw"

    def __init__(self, geometry: ChainGeometry, parameters: dict) -> None:
        super().__init__(geometry, parameters)
        self._prm = np.array(
            [parameters[k] for k in _NAMES] + parameters["signs"] + parameters["offsets"]
        )
        self._base_inv = np.ascontiguousarray(np.linalg.inv(np.array(parameters["base"])))
        self._tip_to_flange = np.ascontiguousarray(
            np.linalg.inv(np.array(parameters["flange_to_tip"]))
        )

    def fk(self, q: np.ndarray) -> np.ndarray:
        """Tip pose (4x4, base frame) by the OPW model: ``B F(s q + t0) E``."""
        theta = np.array(self.parameters["signs"]) * q + np.array(self.parameters["offsets"])
        B = np.array(self.parameters["base"])
        return B @ opw_fk(self.parameters, theta) @ np.array(self.parameters["flange_to_tip"])

    def _solve_into(self, R: np.ndarray, p: np.ndarray, out: np.ndarray, err: np.ndarray) -> int:
        return int(
            opw_solve(
                self._axes,
                self._points,
                self._tip,
                self._prm,
                self._base_inv,
                self._tip_to_flange,
                R,
                p,
                out,
                err,
            )
        )


@kernel
def _flange(Binv: np.ndarray, Einv: np.ndarray, R: np.ndarray, p: np.ndarray) -> tuple:
    """The canonical flange pose ``B^-1 (R, p) E^-1`` as (9-tuple, 3-tuple)."""
    Rx, px = transform_rows(Einv, R, p)
    Rb = mat(Binv)
    return mm(Rb, Rx), add(mv(Rb, px), (Binv[0, 3], Binv[1, 3], Binv[2, 3]))


@kernel
def _ry(t: float) -> tuple:
    c, s = math.cos(t), math.sin(t)
    return (c, 0.0, s, 0.0, 1.0, 0.0, -s, 0.0, c)


@kernel
def _rz(t: float) -> tuple:
    c, s = math.cos(t), math.sin(t)
    return (c, -s, 0.0, s, c, 0.0, 0.0, 0.0, 1.0)


@kernel
def _opw_arm(prm: np.ndarray, C: tuple) -> tuple:
    """Canonical ``(t1, t2, t3)`` of the wrist centre ``C``: count, then 4 x 3 angles."""
    a1, a2, b, c1, c2, c3 = prm[0], prm[1], prm[2], prm[3], prm[4], prm[5]
    k2 = a2 * a2 + c3 * c3
    k, psi = math.sqrt(k2), math.atan2(a2, c3)
    r2 = C[0] * C[0] + C[1] * C[1]
    out = [0.0] * 12
    n = 0
    if r2 < b * b * (1.0 - 1e-12):
        return 0, angles12(out)
    r = math.sqrt(r2)
    phi = math.atan2(C[1], C[0])
    delta = math.asin(min(1.0, max(-1.0, b / r))) if r > 0.0 else 0.0
    reach = math.sqrt(max(r2 - b * b, 0.0))
    for side in range(2):
        t1 = phi - delta if side == 0 else phi - math.pi + delta
        u = (reach if side == 0 else -reach) - a1
        v = C[2] - c1
        cb = (u * u + v * v - c2 * c2 - k2) / (2.0 * c2 * k)
        if abs(cb) > 1.0 + 1e-9:
            continue
        cb = min(1.0, max(-1.0, cb))
        for elbow in range(2):
            beta = math.acos(cb) if elbow == 0 else -math.acos(cb)
            t2 = math.atan2(u, v) - math.atan2(k * math.sin(beta), c2 + k * math.cos(beta))
            out[3 * n], out[3 * n + 1], out[3 * n + 2] = t1, t2, beta - psi
            n += 1
    return n, angles12(out)


@kernel
def opw_solve(
    A: np.ndarray,
    P: np.ndarray,
    M: np.ndarray,
    prm: np.ndarray,
    Binv: np.ndarray,
    Einv: np.ndarray,
    R: np.ndarray,
    p: np.ndarray,
    out: np.ndarray,
    err: np.ndarray,
) -> int:
    """Every branch of the tip pose ``(R, p)`` of an OPW arm into ``out`` (8 x 6).

    ``prm``: ``a1, a2, b, c1, c2, c3, c4``, six signs, six offsets; ``Binv``, ``Einv``:
    the inverse base and flange-to-tip transforms. FK errors (product of exponentials
    of ``A``, ``P``, ``M``) go to ``err``. Returns the number of rows.
    """
    Rf, pf = _flange(Binv, Einv, R, p)
    c4 = prm[6]
    C = (pf[0] - c4 * Rf[2], pf[1] - c4 * Rf[5], pf[2] - c4 * Rf[8])
    sol = _opw_arm(prm, C)
    count = 0
    for i in range(sol[0]):
        t1, t2, t3 = sol[1][3 * i], sol[1][3 * i + 1], sol[1][3 * i + 2]
        W = mtm(mm(_rz(t1), _ry(t2 + t3)), Rf)  # = R_z(t4) R_y(t5) R_z(t6)
        s5 = math.sqrt(W[2] * W[2] + W[5] * W[5])
        if s5 > 1e-12:
            t4, t5, t6 = math.atan2(W[5], W[2]), math.atan2(s5, W[8]), math.atan2(W[7], -W[6])
        else:  # axes 4 and 6 aligned: one of a continuum
            t4, t5, t6 = 0.0, (0.0 if W[8] > 0.0 else math.pi), math.atan2(W[3], W[4])
        for flip in range(2):
            theta = (t1, t2, t3, t4, t5, t6)
            if flip == 1:
                theta = (t1, t2, t3, t4 + math.pi, -t5, t6 + math.pi)
            for j in range(6):
                out[count, j] = wrap(prm[7 + j] * (theta[j] - prm[13 + j]))
            count += 1
    return pose_errors_rows(A, P, M, out, count, R, p, err)
