"""The UR5's standard DH table and its closed-form IK, shared by the tests.

Written from Universal Robots' published DH parameters, independently of the package,
as a reference to check FK, branch flags and global IK against.
"""

import math

import numpy as np

UR5_D = [0.089159, 0.0, 0.0, 0.10915, 0.09465, 0.0823]
UR5_A = [0.0, -0.425, -0.39225, 0.0, 0.0, 0.0]
UR5_ALPHA = [math.pi / 2, 0.0, 0.0, math.pi / 2, -math.pi / 2, 0.0]


def sdh(d: float, theta: float, a: float, alpha: float) -> np.ndarray:
    """Standard DH: RotZ(theta_i) TransZ(d_i) TransX(a_i) RotX(alpha_i)."""
    ct, st, ca, sa = math.cos(theta), math.sin(theta), math.cos(alpha), math.sin(alpha)
    return np.array(
        [
            [ct, -st * ca, st * sa, a * ct],
            [st, ct * ca, -ct * sa, a * st],
            [0.0, sa, ca, d],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )


def ur5_closed_form(target: np.ndarray) -> list[tuple[tuple[int, int, int], np.ndarray]]:
    """Closed-form UR5 IK on the standard DH table; branch flags (shoulder, elbow, wrist)."""
    d1, a2, a3, d4, d5, d6 = UR5_D[0], UR5_A[1], UR5_A[2], UR5_D[3], UR5_D[4], UR5_D[5]
    assert d1 > 0 and d5 > 0
    wrist = target @ np.array([0.0, 0.0, -d6, 1.0])  # origin of DH frame 5
    inv = np.linalg.inv(target)
    solutions = []
    for s1 in (1, -1):
        t1 = (
            math.atan2(wrist[1], wrist[0])
            + s1 * math.acos(d4 / math.hypot(wrist[0], wrist[1]))
            + math.pi / 2
        )
        c5 = (target[0, 3] * math.sin(t1) - target[1, 3] * math.cos(t1) - d4) / d6
        for s5 in (1, -1):
            t5 = s5 * math.acos(max(-1.0, min(1.0, c5)))
            t6 = math.atan2(
                (-inv[1, 0] * math.sin(t1) + inv[1, 1] * math.cos(t1)) / math.sin(t5),
                (inv[0, 0] * math.sin(t1) - inv[0, 1] * math.cos(t1)) / math.sin(t5),
            )
            t14 = (
                np.linalg.inv(sdh(UR5_D[0], t1, UR5_A[0], UR5_ALPHA[0]))
                @ target
                @ np.linalg.inv(sdh(UR5_D[5], t6, UR5_A[5], UR5_ALPHA[5]))
                @ np.linalg.inv(sdh(UR5_D[4], t5, UR5_A[4], UR5_ALPHA[4]))
            )
            p3 = t14[:3, 3] - d4 * np.array([0.0, 0.0, 1.0])
            c3 = (p3[0] ** 2 + p3[1] ** 2 - a2 * a2 - a3 * a3) / (2 * a2 * a3)
            if abs(c3) > 1.0:  # this shoulder/wrist branch cannot reach the target
                continue
            for s3 in (1, -1):
                t3 = s3 * math.acos(c3)
                t2 = math.atan2(p3[1], p3[0]) - math.atan2(
                    a3 * math.sin(t3), a2 + a3 * math.cos(t3)
                )
                t34 = np.linalg.inv(sdh(0.0, t2, a2, 0.0) @ sdh(0.0, t3, a3, 0.0)) @ t14
                t4 = math.atan2(t34[1, 0], t34[0, 0])
                solutions.append(((s1, s3, s5), np.array([t1, t2, t3, t4, t5, t6])))
    return solutions
