"""Bad input to RobotModel: each case raises its typed error and changes nothing."""

from __future__ import annotations

import numpy as np
import pytest

from stackik import (
    FrameNotFound,
    JointNotFound,
    MalformedDescription,
    NonFiniteInput,
    RobotFileNotFound,
    RobotModel,
    ShapeError,
    StackIKError,
)
from stackik.errors import InvalidInput


# -- loading -------------------------------------------------------------------------------------
def test_missing_file(tmp_path):
    missing = tmp_path / "nope.urdf"
    with pytest.raises(RobotFileNotFound) as exc:
        RobotModel(missing)
    assert exc.value.path == str(missing)
    assert isinstance(exc.value, FileNotFoundError)
    assert isinstance(exc.value, StackIKError)
    with pytest.raises(RobotFileNotFound):
        RobotModel(tmp_path)  # a folder is not a description file
    with pytest.raises(RobotFileNotFound):
        RobotModel.from_xacro(tmp_path / "nope.urdf.xacro")


def test_missing_srdf(arm_path, tmp_path):
    with pytest.raises(RobotFileNotFound) as exc:
        RobotModel(arm_path, srdf_path=tmp_path / "nope.srdf")
    assert exc.value.path == str(tmp_path / "nope.srdf")


def test_malformed_xml_keeps_parser_message(arm_text, tmp_path):
    broken = arm_text.replace("</robot>", "")
    with pytest.raises(MalformedDescription) as exc:
        RobotModel.from_urdf_string(broken)
    assert exc.value.path == "<string>"
    assert "XML parse error" in exc.value.reason
    assert "no element found" in exc.value.reason  # expat's own words
    path = tmp_path / "broken.urdf"
    path.write_text(arm_text.replace("</link>", "</lnk>", 1))
    with pytest.raises(MalformedDescription) as exc:
        RobotModel(path)
    assert exc.value.path == str(path)
    assert "mismatched tag" in exc.value.reason
    assert "line" in exc.value.reason


def test_wrong_root_element():
    with pytest.raises(MalformedDescription, match="expected <robot>"):
        RobotModel.from_urdf_string("<sdf><model name='x'/></sdf>")


def test_invalid_urdf_structure_names_the_element(arm_text):
    # Well-formed XML whose joint names a child link that does not exist: the message
    # names the joint and the link (not urdfdom's generic "not a valid URDF model").
    broken = arm_text.replace('<child link="link3"/>', '<child link="link99"/>')
    with pytest.raises(MalformedDescription) as exc:
        RobotModel.from_urdf_string(broken)
    assert exc.value.path == "<string>"
    assert "joint 'j3'" in exc.value.reason and "'link99'" in exc.value.reason


def test_malformed_xacro(data_dir, tmp_path):
    with pytest.raises(MalformedDescription) as exc:
        RobotModel.from_xacro(data_dir / "bad.urdf.xacro")
    assert exc.value.reason.startswith("xacro:")
    assert "undefined_macro_call" in exc.value.reason
    broken = tmp_path / "broken.urdf.xacro"
    broken.write_text((data_dir / "planar.urdf.xacro").read_text().replace("</robot>", ""))
    with pytest.raises(MalformedDescription, match="xacro"):
        RobotModel.from_xacro(broken)


# -- names ---------------------------------------------------------------------------------------
def test_unknown_frame_suggests_close_names(arm):
    with pytest.raises(FrameNotFound) as exc:
        arm.get_frame_pose("lnk3")
    err = exc.value
    assert err.name == "lnk3"
    assert "link3" in err.closest
    assert set(err.available) == set(arm.get_frame_names())
    assert "link3" in str(err)
    assert isinstance(err, KeyError)
    for call in (
        lambda: arm.get_frame_jacobian("tooll"),
        lambda: arm.get_frame_id("tooll"),
        lambda: arm.add_frame("x", "tooll", np.eye(4)),
    ):
        with pytest.raises(FrameNotFound) as exc:
            call()
        assert exc.value.closest[0] == "tool"


def test_unknown_joint_suggests_close_names(arm):
    for method in (
        arm.get_joint_id,
        arm.get_joint_config_index,
        arm.get_joint_config_size,
        arm.get_joint_velocity_index,
        arm.get_joint_velocity_size,
    ):
        with pytest.raises(JointNotFound) as exc:
            method("j33")
        assert exc.value.name == "j33"
        assert "j3" in exc.value.closest
        assert exc.value.available == ["j1", "j2", "j3"]
    with pytest.raises(JointNotFound):
        arm.get_joint_id("link1")  # a link is not a joint


# -- arrays --------------------------------------------------------------------------------------
def _state(robot):
    return (
        robot.get_current_configuration(),
        robot.get_current_velocity(),
        robot.get_frame_pose("tool").homogeneous,
        robot.get_frame_jacobian("tool", "world"),
        robot.get_com_position(),
    )


def _assert_same(before, after):
    for a, b in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.fixture(params=[False, True], ids=["fixed", "floating"])
def robot(request, arm_path):
    r = RobotModel(arm_path, floating_base=request.param)
    rng = np.random.default_rng(3)
    r.update_kinematics(r.random_configuration(rng), rng.uniform(-1, 1, r.nv))
    return r


def test_wrong_size_q_v_a(robot):
    before = _state(robot)
    nq, nv = robot.nq, robot.nv
    q, v = robot.get_current_configuration(), np.zeros(nv)
    cases = [
        (lambda: robot.update_kinematics(q[:-1]), "q", (nq,), (nq - 1,)),
        (lambda: robot.update_kinematics(np.append(q, 0)), "q", (nq,), (nq + 1,)),
        (lambda: robot.update_kinematics(q[None, :]), "q", (nq,), (1, nq)),
        (lambda: robot.update_kinematics(q, v[:-1]), "v", (nv,), (nv - 1,)),
        (lambda: robot.update_configuration(q[:2]), "q", (nq,), (2,)),
        (lambda: robot.rnea(q[:-1], v, v), "q", (nq,), (nq - 1,)),
        (lambda: robot.rnea(q, v[:-1], v), "v", (nv,), (nv - 1,)),
        (lambda: robot.rnea(q, v, v[:-1]), "a", (nv,), (nv - 1,)),
        (lambda: robot.compute_mass_matrix(q[:-1]), "q", (nq,), (nq - 1,)),
        (lambda: robot.compute_coriolis(q, v[:-1]), "v", (nv,), (nv - 1,)),
        (lambda: robot.compute_generalized_gravity(np.zeros(nv)), "q", (nq,), (nv,)),
        (lambda: robot.integrate(q, v[:-1]), "v", (nv,), (nv - 1,)),
        (lambda: robot.difference(q, q[:-1]), "q1", (nq,), (nq - 1,)),
        (lambda: robot.set_gravity([0, -9.81]), "gravity", (3,), (2,)),
    ]
    for call, what, expected, given in cases:
        with pytest.raises(ShapeError) as exc:
            call()
        assert (exc.value.what, exc.value.expected, exc.value.given) == (what, expected, given)
        assert str(expected) in str(exc.value) and str(given) in str(exc.value)
    with pytest.raises(ShapeError):
        robot.update_kinematics("not a vector")
    with pytest.raises(ShapeError):
        robot.update_kinematics(None)
    _assert_same(before, _state(robot))
    np.testing.assert_array_equal(robot.get_gravity(), [0, 0, -9.81])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_q_v_a(robot, bad):
    before = _state(robot)
    q, v = robot.get_current_configuration(), robot.get_current_velocity()
    q_bad, v_bad = q.copy(), v.copy()
    q_bad[-1] = bad
    v_bad[-2] = bad
    cases = [
        (lambda: robot.update_kinematics(q_bad), "q", [robot.nq - 1]),
        (lambda: robot.update_kinematics(q, v_bad), "v", [robot.nv - 2]),
        (lambda: robot.rnea(q, v, v_bad), "a", [robot.nv - 2]),
        (lambda: robot.rnea(q_bad, v, v), "q", [robot.nq - 1]),
        (lambda: robot.compute_coriolis(q, v_bad), "v", [robot.nv - 2]),
        (lambda: robot.integrate(q, v_bad), "v", [robot.nv - 2]),
        (lambda: robot.set_gravity([0, bad, -9.81]), "gravity", [1]),
        (lambda: robot.integrate(q, v, bad), "dt", [0]),
    ]
    for call, what, indices in cases:
        with pytest.raises(NonFiniteInput) as exc:
            call()
        assert (exc.value.what, exc.value.indices) == (what, indices)
    _assert_same(before, _state(robot))


def test_zero_norm_base_quaternion(arm_path):
    robot = RobotModel(arm_path, floating_base=True)
    robot.update_kinematics(robot.random_configuration(0))
    before = _state(robot)
    q = robot.get_current_configuration()
    q[3:7] = 0.0
    with pytest.raises(InvalidInput, match="quaternion"):
        robot.update_kinematics(q)
    for call in (
        lambda: robot.rnea(q, np.zeros(9), np.zeros(9)),
        lambda: robot.integrate(q, np.zeros(9)),
        lambda: robot.normalize(q),
    ):
        with pytest.raises(InvalidInput, match="quaternion"):
            call()
    _assert_same(before, _state(robot))


def test_zero_norm_continuous_pair(arm):
    arm.update_kinematics([0.1, np.cos(0.2), np.sin(0.2), 0.05])
    before = _state(arm)
    with pytest.raises(InvalidInput, match=r"\(cos, sin\)"):
        arm.update_kinematics([0.1, 0.0, 0.0, 0.05])
    _assert_same(before, _state(arm))


def test_off_unit_continuous_pair_is_normalized(arm):
    # (2 cos a, 2 sin a) means angle a: frames must stay rigid, not be scaled by 2.
    arm.update_kinematics([0.1, 2 * np.cos(0.7), 2 * np.sin(0.7), 0.05])
    T = arm.get_frame_pose("tool")
    np.testing.assert_allclose(T.rotation @ T.rotation.T, np.eye(3), atol=1e-12)
    stored = arm.get_current_configuration()
    np.testing.assert_allclose(stored[1:3], [np.cos(0.7), np.sin(0.7)], atol=1e-15)
    ref = RobotModel(arm.urdf_path)
    ref.update_kinematics(stored)
    np.testing.assert_allclose(T.homogeneous, ref.get_frame_pose("tool").homogeneous, atol=1e-15)


def test_errors_share_one_root():
    for cls in (
        FrameNotFound,
        JointNotFound,
        MalformedDescription,
        NonFiniteInput,
        RobotFileNotFound,
        ShapeError,
    ):
        assert issubclass(cls, StackIKError)
    assert issubclass(ShapeError, ValueError) and issubclass(NonFiniteInput, InvalidInput)
