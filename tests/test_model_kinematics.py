"""Kinematics of RobotModel: FK, Jacobians, names and indices, mimic joints, tool and base frames.

Every quantity is checked against an independent computation: Pinocchio called directly
on a fresh ``Data``, a NumPy walk of the URDF tree, or central finite differences taken
along the tangent space (``pin.integrate``).
"""

from __future__ import annotations

import re

import numpy as np
import pinocchio as pin
import pytest

from stackik import FrameNotFound, InvalidTransform, MalformedDescription, RobotModel
from stackik.errors import InvalidInput

FRAMES = ["base_link", "link1", "j2", "link2", "link3", "tool"]
REFS = ["local", "world", "local_world_aligned"]
PIN_REFS = {"local": pin.LOCAL, "world": pin.WORLD, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}


# Tool position at neutral: base z 0.1 + link1 0.3; link2 is rolled by 0.1 about x, j3 sits
# 0.25 along link2's x and yaws link3 by 0.3; the tool is 0.1 along link3's x.
TOOL_AT_NEUTRAL = np.array(
    [
        0.25 + 0.1 * np.cos(0.3),
        0.1 * np.sin(0.3) * np.cos(0.1),
        0.4 + 0.1 * np.sin(0.3) * np.sin(0.1),
    ]
)


def _random_se3(seed: int) -> pin.SE3:
    rng = np.random.default_rng(seed)
    return pin.SE3(pin.exp3(rng.uniform(-2, 2, 3)), rng.uniform(-1, 1, 3))


# -- forward kinematics -------------------------------------------------------------------------
def test_neutral_state_after_loading(arm):
    np.testing.assert_array_equal(arm.get_current_configuration(), [0, 1, 0, 0])
    np.testing.assert_array_equal(arm.get_current_velocity(), np.zeros(3))
    np.testing.assert_allclose(arm.get_frame_pose("tool").translation, TOOL_AT_NEUTRAL, atol=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_frame_pose_matches_pinocchio(arm, rand_q, pin_pose, seed):
    q = rand_q(arm, seed)
    arm.update_kinematics(q)
    np.testing.assert_array_equal(arm.get_current_configuration(), q)
    for frame in arm.get_frame_names():
        T = arm.get_frame_pose(frame)
        assert isinstance(T, pin.SE3)
        ref = pin_pose(arm.model, q, frame)
        np.testing.assert_allclose(T.homogeneous, ref.homogeneous, atol=1e-13)
        np.testing.assert_allclose(T.homogeneous[:3, :3], T.rotation, atol=0)
        np.testing.assert_allclose(T.homogeneous[:3, 3], T.translation, atol=0)


@pytest.mark.parametrize("seed", range(5))
def test_frame_pose_matches_numpy_urdf_walk(arm, arm_text, chain_fk, rand_q, seed):
    q = rand_q(arm, seed)
    arm.update_kinematics(q)
    c2, s2 = q[arm.get_joint_config_index("j2") : arm.get_joint_config_index("j2") + 2]
    values = {"j1": q[0], "j2": np.arctan2(s2, c2), "j3": q[3]}
    for link in ("link1", "link2", "link3", "tool"):
        np.testing.assert_allclose(
            arm.get_frame_pose(link).homogeneous, chain_fk(arm_text, link, values), atol=1e-12
        )


def test_frame_pose_is_a_copy(arm):
    T = arm.get_frame_pose("tool")
    T.translation = np.array([9.0, 9.0, 9.0])
    np.testing.assert_allclose(arm.get_frame_pose("tool").translation, TOOL_AT_NEUTRAL, atol=1e-12)
    q = arm.get_current_configuration()
    q[0] = 1.0
    assert arm.get_current_configuration()[0] == 0.0


def test_update_configuration_equals_update_kinematics(arm, rand_q):
    q = rand_q(arm, 11)
    arm.update_configuration(q)
    T = arm.get_frame_pose("tool")
    arm.update_kinematics(arm.neutral_configuration())
    arm.update_kinematics(q, None)
    np.testing.assert_array_equal(arm.get_frame_pose("tool").homogeneous, T.homogeneous)


def test_update_kinematics_stores_velocity(arm, rand_q):
    q = rand_q(arm, 3)
    v = np.array([0.3, -0.2, 0.1])
    arm.update_kinematics(q, v)
    np.testing.assert_array_equal(arm.get_current_velocity(), v)
    arm.update_kinematics(q, [])
    np.testing.assert_array_equal(arm.get_current_velocity(), np.zeros(3))


def test_floating_base_quaternion_is_normalized(floating_arm):
    q = floating_arm.neutral_configuration()
    q[:3] = [0.1, 0.2, 0.3]
    q[3:7] = [0.0, 0.0, 2.0, 2.0]  # a 90 deg yaw, scaled by 2 * sqrt(2)
    floating_arm.update_kinematics(q)
    stored = floating_arm.get_current_configuration()
    np.testing.assert_allclose(stored[3:7], [0, 0, np.sqrt(0.5), np.sqrt(0.5)], atol=1e-15)
    R = floating_arm.get_frame_pose("base_link").rotation
    np.testing.assert_allclose(R, pin.rpy.rpyToMatrix(0, 0, np.pi / 2), atol=1e-12)


# -- Jacobians ----------------------------------------------------------------------------------
@pytest.mark.parametrize("ref", REFS)
@pytest.mark.parametrize("seed", range(4))
def test_frame_jacobian_matches_pinocchio(arm, rand_q, ref, seed):
    q = rand_q(arm, seed)
    arm.update_kinematics(q)
    data = arm.model.createData()
    for frame in FRAMES:
        expected = pin.computeFrameJacobian(
            arm.model, data, q, arm.model.getFrameId(frame), PIN_REFS[ref]
        )
        np.testing.assert_allclose(
            arm.get_frame_jacobian(frame, PIN_REFS[ref]), expected, atol=1e-13
        )
        # Names are accepted in any case.
        np.testing.assert_allclose(arm.get_frame_jacobian(frame, ref.upper()), expected, atol=1e-13)


def test_frame_jacobian_default_is_local_world_aligned(arm, rand_q):
    arm.update_kinematics(rand_q(arm, 1))
    np.testing.assert_array_equal(
        arm.get_frame_jacobian("tool"), arm.get_frame_jacobian("tool", pin.LOCAL_WORLD_ALIGNED)
    )


@pytest.mark.parametrize("ref", REFS)
@pytest.mark.parametrize("seed", range(4))
def test_frame_jacobian_matches_finite_differences(arm, rand_q, fd_jacobian, ref, seed):
    q = rand_q(arm, seed)
    arm.update_kinematics(q)
    for frame in FRAMES:
        J = arm.get_frame_jacobian(frame, ref)
        assert J.shape == (6, 3)
        np.testing.assert_allclose(J, fd_jacobian(arm.model, q, frame, ref), atol=1e-7)


@pytest.mark.parametrize("ref", REFS)
@pytest.mark.parametrize("seed", range(3))
def test_floating_base_jacobian_matches_finite_differences(
    floating_arm, rand_q, fd_jacobian, ref, seed
):
    q = rand_q(floating_arm, seed)
    floating_arm.update_kinematics(q)
    for frame in ("base_link", "link2", "tool"):
        J = floating_arm.get_frame_jacobian(frame, ref)
        assert J.shape == (6, 9)
        np.testing.assert_allclose(J, fd_jacobian(floating_arm.model, q, frame, ref), atol=1e-7)


def test_jacobian_of_known_arm_column(arm):
    # At neutral, j1 spins about world z: the tool moves with z x p.
    J = arm.get_frame_jacobian("tool", "local_world_aligned")
    x, y, _ = TOOL_AT_NEUTRAL
    np.testing.assert_allclose(J[:, 0], [-y, x, 0, 0, 0, 1], atol=1e-12)


def test_jacobian_with_velocity_update(arm, rand_q, fd_jacobian):
    # A non-zero v takes a different Pinocchio path; the Jacobian must be the same.
    q = rand_q(arm, 9)
    arm.update_kinematics(q, [0.5, -1.0, 0.2])
    np.testing.assert_allclose(
        arm.get_frame_jacobian("tool"), fd_jacobian(arm.model, q, "tool"), atol=1e-7
    )


def test_bad_reference_frame(arm):
    with pytest.raises(InvalidInput, match="reference_frame"):
        arm.get_frame_jacobian("tool", "body")


# -- names and indices ---------------------------------------------------------------------------
@pytest.mark.parametrize("floating", [False, True])
def test_joint_indices_match_pinocchio(arm_path, floating):
    robot = RobotModel(arm_path, floating_base=floating)
    m = robot.model
    names = list(m.names)[1:]
    assert robot.get_joint_names() == names
    for pin_id, name in enumerate(names, start=1):
        assert robot.has_joint(name)
        assert robot.get_joint_id(name) == pin_id - 1
        j = m.joints[pin_id]
        assert robot.get_joint_config_index(name) == j.idx_q
        assert robot.get_joint_config_size(name) == j.nq
        assert robot.get_joint_velocity_index(name) == j.idx_v
        assert robot.get_joint_velocity_size(name) == j.nv
    assert robot.get_joint_config_size("j2") == 2  # continuous: cos, sin
    assert robot.get_joint_velocity_size("j2") == 1
    offset = 7 if floating else 0
    assert robot.get_joint_config_index("j3") == 3 + offset
    assert robot.get_joint_velocity_index("j3") == 2 + (6 if floating else 0)
    expected = {"j1": 0, "j2": 1, "j3": 2}
    assert robot.controlled_joint_indices == {
        k: v + (6 if floating else 0) for k, v in expected.items()
    }


def test_frame_names_and_ids(arm):
    m = arm.model
    assert arm.get_frame_names() == [f.name for f in m.frames]
    for name in arm.get_frame_names():
        assert arm.has_frame(name)
        assert arm.get_frame_id(name) == m.getFrameId(name)
    assert not arm.has_frame("link4")
    assert not arm.has_joint("link1")  # a link, not a joint
    assert not arm.has_joint("universe")


def test_frame_name_shared_by_joint_and_link_prefers_the_link():
    urdf = """
    <robot name="same">
      <link name="base"/>
      <joint name="arm" type="revolute"><parent link="base"/><child link="arm"/>
        <origin xyz="0 0 1"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <link name="arm"/>
    </robot>"""
    robot = RobotModel.from_urdf_string(urdf)
    fid = robot.get_frame_id("arm")
    assert robot.model.frames[fid].type == pin.BODY
    assert robot.get_joint_id("arm") == 0


@pytest.mark.parametrize(
    "make",
    [
        lambda p: RobotModel.from_urdf_string("<robot name='static'><link name='tool'/></robot>"),
        lambda p: RobotModel(p, []),  # every joint locked
    ],
    ids=["single_link", "all_locked"],
)
def test_zero_dof_models(arm_path, make):
    robot = make(arm_path)
    assert (robot.nq, robot.nv) == (0, 0)
    robot.update_kinematics([])
    J = robot.get_frame_jacobian("tool", "world")
    assert J.shape == (6, 0)
    assert robot.random_configuration(0).shape == (0,)
    if robot.has_frame("link3"):  # the arm, welded at neutral
        np.testing.assert_allclose(robot.get_frame_pose("tool").translation, TOOL_AT_NEUTRAL)


# -- mimic joints --------------------------------------------------------------------------------
def _strip_mimic(text: str) -> str:
    return re.sub(r"<mimic[^>]*/>", "", text)


def _full_q(full: pin.Model, q_leader_model: np.ndarray) -> np.ndarray:
    j0, lead = q_leader_model
    q = np.zeros(full.nq)
    q[full.joints[full.getJointId("j0")].idx_q] = j0
    q[full.joints[full.getJointId("leader")].idx_q] = lead
    q[full.joints[full.getJointId("follower")].idx_q] = -2.0 * lead + 0.3
    return q


def test_mimic_follower_is_not_a_variable(mimic_robot, mimic_text):
    full = pin.buildModelFromXML(_strip_mimic(mimic_text))
    assert (full.nq, full.nv) == (3, 3)
    assert (mimic_robot.nq, mimic_robot.nv) == (2, 2)
    assert mimic_robot.has_joint("follower")
    assert mimic_robot.get_joint_config_size("follower") == 0
    assert mimic_robot.get_joint_velocity_size("follower") == 0
    assert mimic_robot.controlled_joint_names == ["j0", "leader"]
    assert mimic_robot.mimic_joints == [("follower", "leader", -2.0, 0.3)]


@pytest.mark.parametrize("seed", range(5))
def test_mimic_fk_equals_full_model_with_coupled_follower(
    mimic_robot, mimic_text, chain_fk, pin_pose, seed
):
    full = pin.buildModelFromXML(_strip_mimic(mimic_text))
    q = np.random.default_rng(seed).uniform([-1, -0.35], [1, 0.4])
    mimic_robot.update_kinematics(q)
    for frame in ("l1", "l2", "tip"):
        T = mimic_robot.get_frame_pose(frame).homogeneous
        np.testing.assert_allclose(
            T, pin_pose(full, _full_q(full, q), frame).homogeneous, atol=1e-12
        )
        # ... and a NumPy walk of the URDF that applies the <mimic> rule itself.
        np.testing.assert_allclose(
            T, chain_fk(mimic_text, frame, {"j0": q[0], "leader": q[1]}), atol=1e-12
        )


@pytest.mark.parametrize("ref", REFS)
@pytest.mark.parametrize("seed", range(3))
def test_mimic_jacobian(mimic_robot, mimic_text, fd_jacobian, ref, seed):
    full = pin.buildModelFromXML(_strip_mimic(mimic_text))
    q = np.random.default_rng(seed).uniform([-1, -0.35], [1, 0.4])
    mimic_robot.update_kinematics(q)
    J = mimic_robot.get_frame_jacobian("tip", ref)
    np.testing.assert_allclose(J, fd_jacobian(mimic_robot.model, q, "tip", ref), atol=1e-7)
    # Chain rule on the uncoupled model: d/d(leader) = J_leader + multiplier * J_follower.
    Jf = pin.computeFrameJacobian(
        full, full.createData(), _full_q(full, q), full.getFrameId("tip"), PIN_REFS[ref]
    )
    iv = {n: full.joints[full.getJointId(n)].idx_v for n in ("j0", "leader", "follower")}
    expected = np.column_stack([Jf[:, iv["j0"]], Jf[:, iv["leader"]] - 2.0 * Jf[:, iv["follower"]]])
    np.testing.assert_allclose(J, expected, atol=1e-12)


def test_mimic_leader_limits_keep_follower_in_its_limits(mimic_robot):
    lo, hi = mimic_robot.get_joint_limits()
    # follower = -2 leader + 0.3 in [-0.5, 1.0]  <=>  leader in [-0.35, 0.4].
    il = mimic_robot.get_joint_config_index("leader")
    assert lo[il] == pytest.approx(-0.35)
    assert hi[il] == pytest.approx(0.4)
    assert (lo[0], hi[0]) == (-1.0, 1.0)
    for seed in range(50):
        q = mimic_robot.random_configuration(seed)
        follower = -2.0 * q[il] + 0.3
        assert -0.5 - 1e-12 <= follower <= 1.0 + 1e-12


def test_mimic_with_unreachable_follower_limits_is_rejected(mimic_text):
    text = mimic_text.replace('<limit lower="-0.5" upper="1.0"', '<limit lower="5.0" upper="6.0"')
    with pytest.raises(MalformedDescription, match="follower"):
        RobotModel.from_urdf_string(text)


def test_mimic_with_positive_multiplier_shrinks_leader(mimic_text):
    text = mimic_text.replace('multiplier="-2.0" offset="0.3"', 'multiplier="0.5" offset="-0.1"')
    robot = RobotModel.from_urdf_string(text)
    lo, hi = robot.get_joint_limits()
    # follower = 0.5 leader - 0.1 in [-0.5, 1.0]  <=>  leader in [-0.8, 2.2] -> [-0.8, 1.5].
    assert (lo[1], hi[1]) == (pytest.approx(-0.8), pytest.approx(1.5))


@pytest.mark.parametrize(
    ("kept", "values"),
    [
        (["j0", "leader"], lambda q: {"j0": q[0], "leader": q[1]}),
        (["leader"], lambda q: {"leader": q[0]}),  # j0 locked at 0
        (["j0"], lambda q: {"j0": q[0]}),  # leader locked at 0, so follower at 0.3
    ],
)
def test_reduced_mimic_model_keeps_the_coupling(data_dir, mimic_text, chain_fk, kept, values):
    robot = RobotModel(data_dir / "mimic.urdf", kept, mimic="fold")
    assert robot.get_joint_names()[: len(kept)] == kept
    assert robot.nv == len(kept)
    if "leader" in kept:
        assert robot.mimic_joints == [("follower", "leader", -2.0, 0.3)]
        lo, hi = robot.get_joint_limits()
        il = robot.get_joint_config_index("leader")
        assert (lo[il], hi[il]) == (pytest.approx(-0.35), pytest.approx(0.4))
    for seed in range(3):
        q = robot.random_configuration(seed)
        robot.update_kinematics(q)
        np.testing.assert_allclose(
            robot.get_frame_pose("tip").homogeneous,
            chain_fk(mimic_text, "tip", values(q)),
            atol=1e-12,
        )


def test_reduced_model_rejects_a_mimic_follower(data_dir):
    with pytest.raises(InvalidInput, match="leader"):
        RobotModel(data_dir / "mimic.urdf", ["j0", "follower"])


# -- tool frames ---------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(3))
def test_add_frame_pose_and_jacobian(arm, rand_q, fd_jacobian, seed):
    X = _random_se3(seed)
    fid = arm.add_frame("tcp", "link3", X)
    assert arm.has_frame("tcp") and arm.get_frame_id("tcp") == fid
    assert arm.model.frames[fid].name == "tcp"
    # A second frame on the first, given as a 4x4 matrix.
    Y = _random_se3(seed + 100)
    arm.add_frame("tcp2", "tcp", Y.homogeneous)
    q = rand_q(arm, seed)
    arm.update_kinematics(q)
    parent = arm.get_frame_pose("link3")
    np.testing.assert_allclose(
        arm.get_frame_pose("tcp").homogeneous, (parent * X).homogeneous, atol=1e-12
    )
    np.testing.assert_allclose(
        arm.get_frame_pose("tcp2").homogeneous, (parent * X * Y).homogeneous, atol=1e-12
    )
    for ref in REFS:
        for frame in ("tcp", "tcp2"):
            np.testing.assert_allclose(
                arm.get_frame_jacobian(frame, ref),
                fd_jacobian(arm.model, q, frame, ref),
                atol=1e-7,
            )


def test_add_frame_keeps_configuration_and_refreshes_cache(arm, rand_q):
    q = rand_q(arm, 7)
    arm.update_kinematics(q)
    X = _random_se3(1)
    arm.add_frame("tcp", "tool", X)
    np.testing.assert_array_equal(arm.get_current_configuration(), q)
    expected = arm.get_frame_pose("tool") * X
    np.testing.assert_allclose(
        arm.get_frame_pose("tcp").homogeneous, expected.homogeneous, atol=1e-12
    )


def test_add_frame_errors_leave_model_unchanged(arm):
    n = len(arm.get_frame_names())
    with pytest.raises(InvalidInput, match="already exists"):
        arm.add_frame("tool", "link3", pin.SE3.Identity())
    with pytest.raises(FrameNotFound) as exc:
        arm.add_frame("tcp", "link_3", pin.SE3.Identity())
    assert "link3" in exc.value.closest
    bad = np.eye(4)
    bad[0, 1] = 0.5
    with pytest.raises(InvalidTransform):
        arm.add_frame("tcp", "link3", bad)
    assert len(arm.get_frame_names()) == n == len(arm.model.frames)
    assert not arm.has_frame("tcp")


# -- base placement ------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(3))
def test_set_base_placement_moves_every_frame(arm_path, rand_q, seed):
    ref = RobotModel(arm_path)
    robot = RobotModel(arm_path)
    ref.add_frame("base_tcp", "base_link", _random_se3(5))
    robot.add_frame("base_tcp", "base_link", _random_se3(5))  # fixed to the world, added before
    T = _random_se3(seed)
    robot.set_base_placement(T)
    robot.add_frame("late_tcp", "base_link", _random_se3(6))  # ... and after mounting
    ref.add_frame("late_tcp", "base_link", _random_se3(6))
    np.testing.assert_allclose(robot.base_placement.homogeneous, T.homogeneous, atol=0)
    q = rand_q(ref, seed + 10)
    ref.update_kinematics(q)
    robot.update_kinematics(q)
    for frame in ref.get_frame_names():
        expected = pin.SE3.Identity() if frame == "universe" else T * ref.get_frame_pose(frame)
        np.testing.assert_allclose(
            robot.get_frame_pose(frame).homogeneous, expected.homogeneous, atol=1e-12
        )
    R = T.rotation
    for frame in ("link1", "tool", "late_tcp"):
        J0 = ref.get_frame_jacobian(frame, "local_world_aligned")
        J = robot.get_frame_jacobian(frame, "local_world_aligned")
        np.testing.assert_allclose(J[:3], R @ J0[:3], atol=1e-12)
        np.testing.assert_allclose(J[3:], R @ J0[3:], atol=1e-12)
        np.testing.assert_allclose(
            robot.get_frame_jacobian(frame, "local"),
            ref.get_frame_jacobian(frame, "local"),
            atol=1e-12,
        )
    com0 = ref.get_com_position()
    np.testing.assert_allclose(robot.get_com_position(), T.act(com0), atol=1e-12)
    np.testing.assert_allclose(robot.get_com_jacobian(), R @ ref.get_com_jacobian(), atol=1e-12)
    # The whole robot, base geometry included, moves rigidly: distances do not change.
    np.testing.assert_allclose(
        robot.compute_collision_distances(), ref.compute_collision_distances(), atol=1e-9
    )


def test_set_base_placement_moves_visual_geometry(arm_path, rand_q):
    ref, robot = RobotModel(arm_path), RobotModel(arm_path)
    T = _random_se3(8)
    robot.set_base_placement(T)
    q = rand_q(ref, 8)
    placements = []
    for r in (ref, robot):
        r.update_kinematics(q)
        assert r.visual_model.ngeoms == 2
        pin.updateGeometryPlacements(r.model, r.data, r.visual_model, r.visual_data)
        placements.append([pin.SE3(M) for M in r.visual_data.oMg])
    for M0, M in zip(*placements, strict=True):
        np.testing.assert_allclose(M.homogeneous, (T * M0).homogeneous, atol=1e-12)


def test_set_base_placement_is_absolute_and_applies_immediately(arm):
    q = np.array([0.3, np.cos(0.4), np.sin(0.4), 0.1])
    arm.update_kinematics(q)
    unmounted = arm.get_frame_pose("tool")
    T1, T2 = _random_se3(1), _random_se3(2)
    arm.set_base_placement(T1)
    np.testing.assert_array_equal(arm.get_current_configuration(), q)
    np.testing.assert_allclose(
        arm.get_frame_pose("tool").homogeneous, (T1 * unmounted).homogeneous, atol=1e-12
    )
    arm.set_base_placement(T2.homogeneous)
    np.testing.assert_allclose(
        arm.get_frame_pose("tool").homogeneous, (T2 * unmounted).homogeneous, atol=1e-12
    )
    arm.set_base_placement(pin.SE3.Identity())
    np.testing.assert_allclose(
        arm.get_frame_pose("tool").homogeneous, unmounted.homogeneous, atol=1e-12
    )


def test_set_base_placement_jacobian_matches_finite_differences(arm, rand_q, fd_jacobian):
    arm.set_base_placement(_random_se3(4))
    q = rand_q(arm, 2)
    arm.update_kinematics(q)
    for ref in REFS:
        np.testing.assert_allclose(
            arm.get_frame_jacobian("tool", ref), fd_jacobian(arm.model, q, "tool", ref), atol=1e-7
        )


def test_set_base_placement_rejected_for_floating_base(floating_arm):
    before = floating_arm.get_frame_pose("tool")
    with pytest.raises(InvalidInput, match="floating"):
        floating_arm.set_base_placement(_random_se3(0))
    np.testing.assert_array_equal(
        floating_arm.get_frame_pose("tool").homogeneous, before.homogeneous
    )


def test_set_base_placement_rejects_invalid_transform(arm):
    before = arm.get_frame_pose("tool")
    T = np.eye(4)
    T[:3, :3] *= 2.0
    with pytest.raises(InvalidTransform):
        arm.set_base_placement(T)
    np.testing.assert_array_equal(arm.get_frame_pose("tool").homogeneous, before.homogeneous)
    np.testing.assert_array_equal(arm.base_placement.homogeneous, np.eye(4))


@pytest.mark.parametrize("floating", [False, True])
def test_kinematics_difference_into_a_buffer_is_pinocchios(arm, floating_arm, rand_q, floating):
    """``Kinematics.difference(q0, q1, out=)`` writes Pinocchio's displacement into ``out``.

    A fixed arm (a vector space: the subtraction) and a floating one (Pinocchio's Lie
    group difference), against ``pin.difference`` on the model.
    """
    robot = floating_arm if floating else arm
    kin = robot.kinematics
    q0, q1 = rand_q(robot, 3), rand_q(robot, 4)
    expected = pin.difference(robot.model, q0, q1)
    out = np.full(robot.nv, np.nan)
    got = kin.difference(q0, q1, out=out)
    assert got is out
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(kin.difference(q0, q1), expected)
