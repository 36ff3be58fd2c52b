"""Reference inverse kinematics for the closed-form tests, written independently of stackik.

* :func:`opw_arm_closed_form`: every branch of ``robots/opw_arm`` by the formulas of
  M. Brandstötter, A. Angerer, M. Hofbaur, "An analytical solution of the inverse
  kinematics problem of industrial serial manipulators with an ortho-parallel basis and
  a spherical wrist" (2014), applied to the arm's OPW table (the generator's figures,
  repeated here; the solver under test reads its parameters from the URDF instead).
* :func:`multistart_solutions`: every solution a damped Newton iteration on Pinocchio's
  FK and Jacobian finds from many random starts (a brute-force reference for chains
  without a published closed form).
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

#: robots/opw_arm, as written by robots/tools/arms6r.py (canonical frame = base_link,
#: canonical flange = tool0, theta_i = SIGNS_i * q_i + ZERO_i).
OPW_ARM = {"a1": 0.15, "a2": -0.12, "b": 0.03, "c1": 0.45, "c2": 0.60, "c3": 0.64, "c4": 0.10}
OPW_ARM_SIGNS = (-1.0, 1.0, 1.0, -1.0, 1.0, -1.0)
OPW_ARM_ZERO = (0.0, math.pi / 2, -math.pi / 2, 0.0, 0.0, 0.0)


def _wrap(x: np.ndarray) -> np.ndarray:
    return (np.asarray(x) + math.pi) % (2 * math.pi) - math.pi


def opw_arm_closed_form(T: np.ndarray) -> list[np.ndarray]:
    """The (up to 8) joint solutions of robots/opw_arm for the tool0 pose ``T`` (4x4)."""
    p = OPW_ARM
    a1, a2, b, c1, c2, c3, c4 = (p[k] for k in ("a1", "a2", "b", "c1", "c2", "c3", "c4"))
    R, u = T[:3, :3], T[:3, 3]
    cx, cy, cz = u - c4 * R[:, 2]
    nx1 = math.sqrt(max(cx * cx + cy * cy - b * b, 0.0)) - a1
    tmp3 = cz - c1
    theta1 = (
        math.atan2(cy, cx) - math.atan2(b, nx1 + a1),
        math.atan2(cy, cx) + math.atan2(b, nx1 + a1) - math.pi,
    )
    s1_2 = nx1 * nx1 + tmp3 * tmp3
    tmp4 = nx1 + 2.0 * a1
    s2_2 = tmp4 * tmp4 + tmp3 * tmp3
    k2 = a2 * a2 + c3 * c3
    arms = []
    for t1, s_2, base in (
        (theta1[0], s1_2, math.atan2(nx1, tmp3)),
        (theta1[1], s2_2, -math.atan2(tmp4, tmp3)),
    ):
        s = math.sqrt(s_2)
        c_2 = (s_2 + c2 * c2 - k2) / (2.0 * s * c2)
        c_3 = (s_2 - c2 * c2 - k2) / (2.0 * c2 * math.sqrt(k2))
        if abs(c_2) > 1.0 or abs(c_3) > 1.0:
            continue
        for sign in (-1.0, 1.0):
            t2 = sign * math.acos(c_2) + base
            t3 = -sign * math.acos(c_3) - math.atan2(a2, c3)
            arms.append((t1, t2, t3))
    out = []
    for t1, t2, t3 in arms:
        s1, co1 = math.sin(t1), math.cos(t1)
        s23, c23 = math.sin(t2 + t3), math.cos(t2 + t3)
        m = R[0, 2] * s23 * co1 + R[1, 2] * s23 * s1 + R[2, 2] * c23
        t4 = math.atan2(
            R[1, 2] * co1 - R[0, 2] * s1, R[0, 2] * c23 * co1 + R[1, 2] * c23 * s1 - R[2, 2] * s23
        )
        t5 = math.atan2(math.sqrt(max(1.0 - m * m, 0.0)), m)
        t6 = math.atan2(
            R[0, 1] * s23 * co1 + R[1, 1] * s23 * s1 + R[2, 1] * c23,
            -R[0, 0] * s23 * co1 - R[1, 0] * s23 * s1 - R[2, 0] * c23,
        )
        for theta in ((t1, t2, t3, t4, t5, t6), (t1, t2, t3, t4 + math.pi, -t5, t6 - math.pi)):
            q = [s * (t - z) for s, t, z in zip(OPW_ARM_SIGNS, theta, OPW_ARM_ZERO, strict=True)]
            out.append(_wrap(np.array(q)))
    return out


def multistart_solutions(
    model: pin.Model,
    frame: str,
    T: np.ndarray,
    starts: int = 200,
    seed: int = 0,
    tolerance: float = 1e-10,
) -> list[np.ndarray]:
    """Distinct solutions (angles wrapped) reached by damped Newton from random starts.

    Plain Pinocchio (its documented IK example): ``e = log6(M(q)^-1 T)``,
    ``J = -Jlog6(M^-1 T)^-1 J_local``, ``q <- q - J^T (J J^T + mu I)^-1 e`` (every joint
    revolute, limits ignored).
    """
    data = model.createData()
    fid = model.getFrameId(frame)
    target = pin.SE3(T)
    rng = np.random.default_rng(seed)
    found: list[np.ndarray] = []
    for _ in range(starts):
        q = rng.uniform(-math.pi, math.pi, model.nq)
        for _ in range(60):
            pin.framesForwardKinematics(model, data, q)
            iMd = data.oMf[fid].actInv(target)
            e = pin.log6(iMd).vector
            if np.linalg.norm(e) < tolerance:
                break
            J = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL)
            J = -pin.Jlog6(iMd.inverse()) @ J
            q = q - J.T @ np.linalg.solve(J @ J.T + 1e-12 * np.eye(6), e)
        else:
            continue
        q = _wrap(q)
        if all(np.abs(_wrap(q - f)).max() > 1e-6 for f in found):
            found.append(q)
    return found
