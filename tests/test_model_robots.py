"""RobotModel on the robots shipped in ``robots/`` (each test skips while its file is absent)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from stackik import FrameNotFound, RobotModel

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
PANDA = ROBOTS / "panda" / "panda.urdf"
PANDA_SRDF = ROBOTS / "panda" / "panda.srdf"
UR5 = ROBOTS / "ur5" / "ur5.urdf"
DUAL = ROBOTS / "dual_arm" / "dual_arm.urdf"
HUMANOID = ROBOTS / "humanoid" / "humanoid.urdf"
HUMANOID_SRDF = ROBOTS / "humanoid" / "humanoid.srdf"
PLANAR = ROBOTS / "planar_arm" / "planar_arm.urdf.xacro"


def needs(*paths):
    missing = [str(p.relative_to(ROBOTS.parent)) for p in paths if not p.exists()]
    return pytest.mark.skipif(bool(missing), reason=f"missing {', '.join(missing)}")


REFS = ["local", "world", "local_world_aligned"]


# -- Panda --------------------------------------------------------------------------------------
def _mdh(alpha, a, d, theta):
    """Craig's modified DH: RotX(alpha) TransX(a) RotZ(theta) TransZ(d)."""
    ca, sa, ct, st = np.cos(alpha), np.sin(alpha), np.cos(theta), np.sin(theta)
    return np.array(
        [
            [ct, -st, 0, a],
            [st * ca, ct * ca, -sa, -d * sa],
            [st * sa, ct * sa, ca, d * ca],
            [0, 0, 0, 1],
        ]
    )


def _panda_dh_fk(q):
    """Franka's published modified-DH table: link frames 1..7, flange (link8), TCP."""
    a = [0, 0, 0, 0.0825, -0.0825, 0, 0.088]
    d = [0.333, 0, 0.316, 0, 0.384, 0, 0]
    alpha = [0, -np.pi / 2, np.pi / 2, np.pi / 2, -np.pi / 2, np.pi / 2, np.pi / 2]
    T = np.eye(4)
    frames = {}
    for i in range(7):
        T = T @ _mdh(alpha[i], a[i], d[i], q[i])
        frames[f"panda_link{i + 1}"] = T
    frames["panda_link8"] = T @ _mdh(0, 0, 0.107, 0)
    hand = frames["panda_link8"] @ _mdh(0, 0, 0, -np.pi / 4)
    frames["panda_hand_tcp"] = hand @ _mdh(0, 0, 0.1034, 0)
    return frames


@pytest.fixture
def panda():
    return RobotModel(PANDA)


@needs(PANDA)
@pytest.mark.parametrize("seed", range(3))
def test_panda_fk_matches_dh_table(panda, seed):
    q = panda.random_configuration(seed)
    panda.update_kinematics(q)
    for frame, T in _panda_dh_fk(q).items():
        np.testing.assert_allclose(panda.get_frame_pose(frame).homogeneous, T, atol=1e-9)


@needs(PANDA)
@pytest.mark.parametrize("seed", range(3))
def test_panda_frame_jacobians_match_finite_differences(panda, fd_jacobian, seed):
    assert (panda.nq, panda.nv) == (7, 7)
    q = panda.random_configuration(seed)
    panda.update_kinematics(q)
    for frame in ("panda_link4", "panda_link7", "panda_hand", "panda_hand_tcp"):
        for ref in REFS:
            np.testing.assert_allclose(
                panda.get_frame_jacobian(frame, ref),
                fd_jacobian(panda.model, q, frame, ref),
                atol=1e-7,
            )


@needs(PANDA)
def test_panda_frames_and_closest_names(panda):
    for i in range(9):
        assert panda.has_frame(f"panda_link{i}")
    assert panda.has_frame("panda_hand") and panda.has_frame("panda_hand_tcp")
    with pytest.raises(FrameNotFound) as exc:
        panda.get_frame_pose("panda_lnk7")
    assert exc.value.closest[0] == "panda_link7"


@needs(PANDA, PANDA_SRDF)
def test_panda_srdf_and_collision(panda):
    n_all = len(panda.get_collision_pair_names())
    robot = RobotModel(PANDA, srdf_path=PANDA_SRDF)
    assert 0 < len(robot.get_collision_pair_names()) < n_all
    assert panda.load_srdf(PANDA_SRDF) == n_all - len(robot.get_collision_pair_names())
    for seed in range(5):
        q = robot.random_configuration(seed)
        robot.update_kinematics(q)
        d = robot.compute_collision_distances()
        assert robot.compute_min_collision_distance() == pytest.approx(min(d))
        w = robot.compute_collision_witness_points()
        np.testing.assert_allclose(np.linalg.norm(w[:, 0] - w[:, 1], axis=1), np.abs(d), atol=1e-5)


@needs(PANDA)
def test_panda_random_configurations_inside_limits(panda):
    lo, hi = panda.get_joint_limits()
    assert np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))
    for seed in range(50):
        q = panda.random_configuration(seed)
        assert np.all(q >= lo) and np.all(q <= hi)


# -- UR5 and the dual arm ------------------------------------------------------------------------
@needs(UR5)
def test_ur5_jacobian_matches_finite_differences(fd_jacobian):
    robot = RobotModel(UR5)
    assert (robot.nq, robot.nv) == (6, 6)
    tip = robot.model.frames[-1].name
    for seed in range(3):
        q = robot.random_configuration(seed)
        robot.update_kinematics(q)
        np.testing.assert_allclose(
            robot.get_frame_jacobian(tip), fd_jacobian(robot.model, q, tip), atol=1e-7
        )


@needs(DUAL)
def test_dual_arm_tcps_are_independent(fd_jacobian):
    robot = RobotModel(DUAL)
    q = robot.random_configuration(0)
    robot.update_kinematics(q)
    for side, other in (("left", "right"), ("right", "left")):
        J = robot.get_frame_jacobian(f"{side}_tcp")
        np.testing.assert_allclose(J, fd_jacobian(robot.model, q, f"{side}_tcp"), atol=1e-7)
        for name in robot.controlled_joint_names:
            if name.startswith(other):
                assert not J[:, robot.get_joint_velocity_index(name)].any()


# -- humanoid ------------------------------------------------------------------------------------
@pytest.fixture
def humanoid():
    return RobotModel(HUMANOID, floating_base=True)


@needs(HUMANOID)
def test_humanoid_structure(humanoid):
    assert (humanoid.nq, humanoid.nv) == (7 + 31, 6 + 31)
    assert len(humanoid.controlled_joint_names) == 31
    for frame in ("pelvis", "left_sole", "right_sole", "left_hand", "right_hand"):
        assert humanoid.has_frame(frame)
    rng = np.random.default_rng(0)
    base = pin.SE3(pin.exp3(rng.normal(size=3)), rng.normal(size=3))
    q = humanoid.random_configuration(1)
    q[:7] = pin.SE3ToXYZQUAT(base)
    humanoid.update_kinematics(q)
    np.testing.assert_allclose(
        humanoid.get_frame_pose("pelvis").homogeneous, base.homogeneous, atol=1e-12
    )


@needs(HUMANOID)
@pytest.mark.parametrize("seed", range(3))
def test_humanoid_integrate_difference_round_trip(humanoid, seed):
    rng = np.random.default_rng(seed)
    q0 = humanoid.random_configuration(seed)
    v = rng.uniform(-0.5, 0.5, humanoid.nv)
    q1 = humanoid.integrate(q0, v)
    assert np.linalg.norm(q1[3:7]) == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(humanoid.difference(q0, q1), v, atol=1e-10)
    q2 = humanoid.random_configuration(seed + 10)
    q3 = humanoid.integrate(q0, humanoid.difference(q0, q2))
    if np.dot(q3[3:7], q2[3:7]) < 0:
        q3[3:7] *= -1
    np.testing.assert_allclose(q3, q2, atol=1e-10)
    # Integrating the base twist is M0 * exp6(v_base) (twist in the pelvis frame).
    M0, M1 = pin.XYZQUATToSE3(q0[:7]), pin.XYZQUATToSE3(q1[:7])
    np.testing.assert_allclose(
        M1.homogeneous, (M0 * pin.exp6(pin.Motion(v[:6]))).homogeneous, atol=1e-12
    )


@needs(HUMANOID)
def test_humanoid_sole_jacobian_and_com(humanoid, fd_jacobian, fd_com):
    q = humanoid.random_configuration(4)
    humanoid.update_kinematics(q)
    for frame in ("left_sole", "right_hand"):
        np.testing.assert_allclose(
            humanoid.get_frame_jacobian(frame), fd_jacobian(humanoid.model, q, frame), atol=1e-7
        )
    np.testing.assert_allclose(humanoid.get_com_jacobian(), fd_com(humanoid.model, q), atol=1e-8)
    # The base columns of the CoM Jacobian move the CoM rigidly: the linear part is R_base.
    R = pin.XYZQUATToSE3(q[:7]).rotation
    np.testing.assert_allclose(humanoid.get_com_jacobian()[:, :3], R, atol=1e-12)


@needs(HUMANOID, HUMANOID_SRDF)
def test_humanoid_srdf(humanoid):
    n = len(humanoid.get_collision_pair_names())
    removed = humanoid.load_srdf(HUMANOID_SRDF)
    assert removed > 0
    assert len(humanoid.get_collision_pair_names()) == n - removed


# -- planar XACRO arm ----------------------------------------------------------------------------
@needs(PLANAR)
def test_planar_arm_link_length_argument():
    tips = []
    for length in (0.2, 0.4, 0.6):
        robot = RobotModel.from_xacro(PLANAR, link_length=length)
        robot.update_kinematics(robot.neutral_configuration())
        tips.append(robot.get_frame_pose("tip").translation)
    # The tip moves linearly with the link length (the same links, each longer).
    assert np.linalg.norm(tips[1] - tips[0]) > 0.1
    np.testing.assert_allclose(tips[2] - tips[1], tips[1] - tips[0], atol=1e-12)
