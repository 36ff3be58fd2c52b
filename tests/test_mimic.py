"""Mimic joints: the fold and keep layouts, the coupling constraint, any declaration order.

- ``mimic="keep"``: q layout and forward kinematics equal Pinocchio's plain model of
  the file (``pin.buildModelFromUrdf``); ``"fold"``: FK equals the plain model with each
  follower set by its ``<mimic>`` rule.
- A keep robot's solvers couple each follower to its leader (checked from q, step
  after step, and after a drifted start); fold and keep reach the same tool pose.
- The MimicConstraint's rows against the closed form ``v_f - m v_l = (m q_l + c - q_f)/dt``.
- URDFs that declare (or visit) a mimic joint before its leader load in both layouts.
"""

from __future__ import annotations

import itertools
import pickle
import re
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from stackik import (
    InvalidInput,
    JointNotFound,
    KinematicsSolver,
    MalformedDescription,
    RobotModel,
    SolverStatus,
)
from stackik.constraints import MimicConstraint

DATA = Path(__file__).resolve().parent / "data"
GRIPPER = DATA / "gripper.urdf"
ARM_JOINTS = [f"joint{k}" for k in range(1, 7)]
FRAMES = ["tcp", "left_tip", "right_tip", "inner_tip", "outer_link"]
#: (follower, leader, multiplier, offset) as written in gripper.urdf
RULES = [
    ("finger_joint2", "finger_joint1", 1.0, 0.0),
    ("inner_knuckle", "outer_knuckle", -2.0, 0.1),
]


def load(layout: str, path: Path = GRIPPER, **kw) -> RobotModel:
    return RobotModel(path, mimic=layout, load_visuals=False, load_collisions=False, **kw)


def plain_model(path: Path = GRIPPER) -> pin.Model:
    return pin.buildModelFromUrdf(str(path))


def fk(model: pin.Model, q: np.ndarray, frame: str) -> np.ndarray:
    data = model.createData()
    pin.framesForwardKinematics(model, data, q)
    return data.oMf[model.getFrameId(frame)].homogeneous.copy()


def plain_q(model: pin.Model, values: dict[str, float]) -> np.ndarray:
    """A plain-model configuration from joint values, followers set by their rules."""
    values = dict(values)
    for f, lead, m, c in RULES:
        values[f] = m * values[lead] + c
    q = pin.neutral(model)
    for name, v in values.items():
        q[model.joints[model.getJointId(name)].idx_q] = v
    return q


def joint_values(robot: RobotModel, q: np.ndarray) -> dict[str, float]:
    return {n: q[robot.get_joint_config_index(n)] for n in robot.controlled_joint_names}


@pytest.fixture(scope="module")
def keep() -> RobotModel:
    return load("keep")


@pytest.fixture(scope="module")
def fold() -> RobotModel:
    return load("fold")


# -- layouts -----------------------------------------------------------------------------------
def test_keep_layout_is_pinocchios_plain_model(keep, fold):
    plain = plain_model()
    assert (keep.nq, keep.nv) == (plain.nq, plain.nv) == (10, 10)
    assert (fold.nq, fold.nv) == (8, 8)
    assert list(keep.model.names) == list(plain.names)
    for name in plain.names[1:]:
        j = plain.joints[plain.getJointId(name)]
        assert keep.get_joint_config_index(name) == j.idx_q
        assert keep.get_joint_velocity_index(name) == j.idx_v
        assert keep.get_joint_config_size(name) == j.nq
    assert keep.mimic_layout == "keep" and fold.mimic_layout == "fold"
    assert keep.mimic_joints == fold.mimic_joints == RULES
    assert keep.kept_mimic_joints == RULES and fold.kept_mimic_joints == []
    assert keep.controlled_joint_names == fold.controlled_joint_names
    assert "finger_joint2" not in keep.controlled_joint_names
    assert fold.get_joint_config_size("finger_joint2") == 0


@pytest.mark.parametrize("seed", range(5))
def test_keep_fk_equals_plain_pinocchio(keep, seed):
    plain = plain_model()
    # any q, coupled or not: the same model gives the same FK
    q = np.random.default_rng(seed).uniform(plain.lowerPositionLimit, plain.upperPositionLimit)
    keep.update_kinematics(q)
    for frame in FRAMES:
        np.testing.assert_allclose(keep.get_frame_pose(frame).homogeneous, fk(plain, q, frame))


@pytest.mark.parametrize("seed", range(5))
def test_fold_fk_equals_plain_pinocchio_with_coupled_followers(fold, keep, seed):
    plain = plain_model()
    q = fold.random_configuration(seed)
    values = joint_values(fold, q)
    qp = plain_q(plain, values)
    fold.update_kinematics(q)
    for frame in FRAMES:
        np.testing.assert_allclose(
            fold.get_frame_pose(frame).homogeneous, fk(plain, qp, frame), atol=1e-14
        )
    # the keep layout's configurations are coupled by construction
    qk = keep.random_configuration(seed)
    for f, lead, m, c in RULES:
        i_f, i_l = keep.get_joint_config_index(f), keep.get_joint_config_index(lead)
        assert qk[i_f] == pytest.approx(m * qk[i_l] + c, abs=1e-15)
    lo, hi = keep.get_joint_limits()
    assert np.all(qk >= lo) and np.all(qk <= hi)
    np.testing.assert_allclose(keep.neutral_configuration()[9], 0.1)  # inner = -2 * 0 + 0.1


def test_leader_ranges_are_restricted_in_both_layouts(keep, fold):
    for robot in (keep, fold):
        lo, hi = robot.get_joint_limits()
        i = robot.get_joint_config_index("outer_knuckle")
        assert (lo[i], hi[i]) == pytest.approx((-0.4, 0.3))
    lo, hi = keep.get_joint_limits()
    i = keep.get_joint_config_index("inner_knuckle")
    assert (lo[i], hi[i]) == (-0.5, 0.9)  # a kept follower keeps its own limits


def test_apply_mimic(keep, fold):
    q = np.linspace(0.01, 0.1, 10)
    out = keep.apply_mimic(q)
    assert out[7] == out[6] == q[6]
    assert out[9] == pytest.approx(-2.0 * q[8] + 0.1)
    np.testing.assert_array_equal(np.delete(out, [7, 9]), np.delete(q, [7, 9]))
    q8 = np.linspace(0.01, 0.1, 8)
    np.testing.assert_array_equal(fold.apply_mimic(q8), q8)


def test_reduced_keep_model_locks_followers_with_their_leaders():
    robot = load("keep", actuated_joint_names=[*ARM_JOINTS, "finger_joint1"])
    assert robot.nq == 8  # six arm joints, the finger and its kept follower
    assert robot.mimic_joints == [RULES[0]]
    plain = plain_model()
    q = robot.random_configuration(3)
    values = {n: q[robot.get_joint_config_index(n)] for n in [*ARM_JOINTS, "finger_joint1"]}
    values["outer_knuckle"] = 0.0  # locked at neutral, its follower at -2 * 0 + 0.1
    robot.update_kinematics(q)
    for frame in FRAMES:
        np.testing.assert_allclose(
            robot.get_frame_pose(frame).homogeneous, fk(plain, plain_q(plain, values), frame)
        )
    with pytest.raises(InvalidInput, match="name its leader"):
        load("keep", actuated_joint_names=["joint1", "finger_joint2"])


def test_bad_layout_is_a_typed_error():
    with pytest.raises(InvalidInput, match="mimic"):
        load("unfold")
    text = GRIPPER.read_text()
    assert RobotModel.from_urdf_string(text, mimic="keep", load_collisions=False).nq == 10


def test_keep_robot_pickles(keep):
    copy = pickle.loads(pickle.dumps(keep))
    assert copy.mimic_layout == "keep" and copy.mimic_joints == RULES
    assert KinematicsSolver(copy).get_constraint("mimic") is not None


# -- the coupling constraint ---------------------------------------------------------------------
def test_constraint_rows_are_the_closed_form(keep):
    solver = KinematicsSolver(keep, dt=0.01)
    c = solver.get_constraint("mimic")
    assert isinstance(c, MimicConstraint)
    q = keep.apply_mimic(keep.random_configuration(1))
    q[7] -= 0.001  # right finger 1 mm behind
    q[9] += 0.002  # inner knuckle 2 mrad ahead
    solver.kinematics.update(q)
    C, lower, upper = c.rows(0.01)
    expected = np.zeros((2, 10))
    expected[0, 7], expected[0, 6] = 1.0, -1.0
    expected[1, 9], expected[1, 8] = 1.0, 2.0
    np.testing.assert_array_equal(C, expected)
    b = [(q[6] - q[7]) / 0.01, (-2.0 * q[8] + 0.1 - q[9]) / 0.01]
    np.testing.assert_allclose(lower, b, rtol=1e-12)
    np.testing.assert_array_equal(lower, upper)
    np.testing.assert_allclose(c.drift(), [0.001, -0.002], atol=1e-15)
    assert "finger_joint2" in c.describe_row(0)
    problem = solver.build_problem(q)  # the engine stacks the same rows
    np.testing.assert_allclose(problem.C[problem.constraint_slices["mimic"]], expected)


def _drive(robot: RobotModel, q: np.ndarray, steps: int, dt: float = 0.01):
    solver = KinematicsSolver(robot, dt=dt)
    tcp = solver.add_frame_task("tcp", "tcp")
    robot.update_kinematics(q)
    goal = robot.get_frame_pose("tcp").homogeneous.copy()
    goal[:3, 3] += [0.05, -0.04, 0.03]
    tcp.set_target_pose(goal)
    finger = solver.add_joint_task("grip", "finger_joint1", 0.035)
    finger.priority = 1
    knuckle = solver.add_joint_task("knuckle", "outer_knuckle", -0.3)
    knuckle.priority = 1
    posture = solver.add_posture_task("posture")
    posture.priority = 2
    out = []
    for _ in range(steps):
        res = solver.solve_velocity(q)
        assert res.status == SolverStatus.SUCCESS, res.status_message
        q = robot.integrate(q, res.solution, dt)
        out.append((q, res.solution))
    return out


def test_a_keep_solve_keeps_the_followers_coupled(keep):
    q0 = keep.apply_mimic(np.array([0.1, 0.4, -0.8, 0.2, 0.5, -0.1, 0.01, 0.0, 0.05, 0.0]))
    lo, hi = keep.get_joint_limits()
    for q, dq in _drive(keep, q0, 60):
        for f, lead, m, c in RULES:
            i_f, i_l = keep.get_joint_config_index(f), keep.get_joint_config_index(lead)
            assert dq[i_f] == pytest.approx(m * dq[i_l], abs=1e-11)
            assert q[i_f] == pytest.approx(m * q[i_l] + c, abs=1e-13)
        assert np.all(q >= lo - 1e-9) and np.all(q <= hi + 1e-9)
    assert q[6] > q0[6] + 0.01 and q[8] < q0[8] - 0.1  # the leaders did move


def test_a_drifted_follower_is_pulled_back_within_its_velocity_limit(keep):
    q = keep.apply_mimic(np.array([0.1, 0.4, -0.8, 0.2, 0.5, -0.1, 0.01, 0.0, 0.05, 0.0]))
    q[7] = 0.03  # 2 cm off its leader: 2 m/s to fix in one step, 0.2 m/s allowed
    history = _drive(keep, q, 20)
    vmax = keep.get_velocity_limits()[7]
    gaps = [abs(q[7] - q[6]) for q, _ in history]
    assert all(abs(dq[7]) <= vmax + 1e-12 for _, dq in history)
    assert gaps[0] < 0.02 and gaps[-1] < 1e-12
    assert all(b <= a + 1e-15 for a, b in itertools.pairwise(gaps))


def test_fold_and_keep_reach_the_same_tool_pose(fold, keep):
    target_robot = load("fold")
    q_goal = np.array([0.3, 0.5, -1.0, 0.4, 0.6, -0.3, 0.02, 0.1])
    target_robot.update_kinematics(q_goal)
    target = target_robot.get_frame_pose("tcp")
    seed_f = np.array([0.2, 0.4, -0.9, 0.3, 0.5, -0.2, 0.01, 0.0])
    seed_k = keep.apply_mimic(np.insert(seed_f, [7, 8], 0.0))
    res_f = KinematicsSolver(fold).solve_position(seed_f, target, "tcp")
    res_k = KinematicsSolver(keep).solve_position(seed_k, target, "tcp")
    assert res_f.success and res_k.success
    fold.update_kinematics(res_f.solution)
    keep.update_kinematics(res_k.solution)
    T_f, T_k = fold.get_frame_pose("tcp"), keep.get_frame_pose("tcp")
    np.testing.assert_allclose(T_f.homogeneous, target.homogeneous, atol=1e-5)
    np.testing.assert_allclose(T_k.homogeneous, T_f.homogeneous, atol=1e-5)
    q = res_k.solution
    assert q[7] == pytest.approx(q[6], abs=1e-12)
    assert q[9] == pytest.approx(-2.0 * q[8] + 0.1, abs=1e-12)


def test_user_couplings_on_any_robot(fold):
    solver = KinematicsSolver(fold)
    assert solver.get_constraint("mimic") is None  # nothing to couple in the fold layout
    c = MimicConstraint("wrist", solver.kinematics, [("joint5", "joint3", 0.5, -0.1)], gain=0.5)
    solver.add_constraint(c)
    q = np.array([0.2, 0.4, -0.9, 0.3, 0.5 * -0.9 - 0.1 + 0.003, -0.2, 0.01, 0.0])
    tcp = solver.add_frame_task("tcp", "tcp")
    tcp.set_position_mask([1, 1, 1])
    tcp.set_orientation_mask([0, 0, 0])
    fold.update_kinematics(q)
    tcp.set_target_pose(fold.get_frame_pose("tcp"))
    res = solver.solve_velocity(q)
    assert res.status == SolverStatus.SUCCESS
    # half the 3 mrad drift removed in this step (gain 0.5)
    assert res.solution[4] - 0.5 * res.solution[2] == pytest.approx(-0.15, abs=1e-9)
    q[4] = 0.5  # 1.05 rad off: the correction is clamped to joint5's velocity limit
    res = solver.solve_velocity(q)
    assert res.status == SolverStatus.SUCCESS
    vmax = fold.get_velocity_limits()[4]
    assert res.solution[4] - 0.5 * res.solution[2] == pytest.approx(-vmax, abs=1e-9)
    with pytest.raises(InvalidInput, match="mimic='keep'"):
        MimicConstraint("m", solver.kinematics, [("finger_joint2", "finger_joint1", 1.0, 0.0)])
    with pytest.raises(InvalidInput, match="itself"):
        MimicConstraint("m", solver.kinematics, [("joint1", "joint1", 1.0, 0.0)])
    with pytest.raises(InvalidInput, match="twice"):
        MimicConstraint(
            "m", solver.kinematics, [("joint1", "joint2", 1, 0), ("joint1", "joint3", 1, 0)]
        )
    with pytest.raises(JointNotFound):
        MimicConstraint("m", solver.kinematics, [("joint9", "joint2", 1.0, 0.0)])
    with pytest.raises(InvalidInput):
        MimicConstraint("m", solver.kinematics, [("joint1", "joint2")])


# -- declaration order -----------------------------------------------------------------------------
FIRST = """<robot name="mimic_first">
  <link name="base"/><link name="hand"/><link name="palm"/><link name="lf"/><link name="rf"/>
  <link name="tip"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="hand"/>
    <axis xyz="0 0 1"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <!-- declared first, and visited first: "a_finger" sorts before "palm_joint" -->
  <joint name="a_finger" type="prismatic"><parent link="hand"/><child link="lf"/>
    <origin xyz="0.1 0 0.1"/><axis xyz="0 -1 0"/>
    <limit lower="0" upper="0.04" effort="1" velocity="0.2"/>
    <mimic joint="z_finger" multiplier="0.5" offset="0.01"/></joint>
  <joint name="palm_joint" type="fixed"><parent link="hand"/><child link="palm"/>
    <origin xyz="0 0 0.05"/></joint>
  <joint name="z_finger" type="prismatic"><parent link="palm"/><child link="rf"/>
    <origin xyz="0.1 0 0.05"/><axis xyz="0 1 0"/>
    <limit lower="0" upper="0.04" effort="1" velocity="0.2"/></joint>
  <joint name="tip_joint" type="fixed"><parent link="lf"/><child link="tip"/>
    <origin xyz="0.02 0 0"/></joint>
</robot>
"""


def test_plain_pinocchio_refuses_a_mimic_visited_before_its_leader():
    with pytest.raises(ValueError, match="not in the kinematic tree"):
        pin.buildModelFromXML(FIRST, mimic=True)


@pytest.mark.parametrize("layout", ["fold", "keep"])
def test_mimic_joint_before_its_leader_loads(layout):
    robot = RobotModel.from_urdf_string(FIRST, mimic=layout)
    plain = pin.buildModelFromXML(FIRST)
    assert robot.mimic_joints == [("a_finger", "z_finger", 0.5, 0.01)]
    assert robot.controlled_joint_names == ["j1", "z_finger"]
    assert set(robot.model.names) == set(plain.names)
    assert {f.name for f in robot.model.frames} == {f.name for f in plain.frames}
    for seed in range(4):
        q = robot.random_configuration(seed)
        j1 = q[robot.get_joint_config_index("j1")]
        lead = q[robot.get_joint_config_index("z_finger")]
        qp = pin.neutral(plain)
        for name, v in (("j1", j1), ("z_finger", lead), ("a_finger", 0.5 * lead + 0.01)):
            qp[plain.joints[plain.getJointId(name)].idx_q] = v
        robot.update_kinematics(q)
        for frame in ("tip", "rf", "lf", "palm"):
            np.testing.assert_allclose(
                robot.get_frame_pose(frame).homogeneous, fk(plain, qp, frame), atol=1e-15
            )
    if layout == "keep":
        assert list(robot.model.names) == list(plain.names)  # Pinocchio's own order
    else:
        assert robot.nq == 2 and robot.get_joint_config_size("a_finger") == 0
    # the same tree with the follower declared last loads to the same model
    last = re.sub(
        r"(<joint name=\"a_finger\".*?</joint>)\s*(.*)(</robot>)", r"\2\1\n\3", FIRST, flags=re.S
    )
    again = RobotModel.from_urdf_string(last, mimic=layout)
    assert list(again.model.names) == list(robot.model.names)


def test_a_follower_above_its_leader_cannot_be_folded():
    text = """<robot name="r">
      <link name="a"/><link name="b"/><link name="c"/>
      <joint name="up" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/><mimic joint="down"/></joint>
      <joint name="down" type="revolute"><parent link="b"/><child link="c"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
    </robot>"""
    with pytest.raises(MalformedDescription, match="mimic='keep'"):
        RobotModel.from_urdf_string(text, mimic="fold")
    robot = RobotModel.from_urdf_string(text, mimic="keep")
    assert robot.nq == 2 and robot.mimic_joints == [("up", "down", 1.0, 0.0)]
    solver = KinematicsSolver(robot)
    solver.add_posture_task("p").set_target_configuration([0.3, 0.3])  # a coupled target
    res = solver.solve_velocity(np.zeros(2))
    assert res.solution[0] == pytest.approx(res.solution[1], abs=1e-12)


def _revolute(name, parent, child, mimic=""):
    return (
        f'<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/>'
        '<origin xyz="0.1 0.05 0"/><axis xyz="0 0 1"/>'
        f'<limit lower="-1" upper="1" effort="1" velocity="1"/>{mimic}</joint>'
    )


def _fixed(name, parent, child):
    return (
        f'<joint name="{name}" type="fixed"><parent link="{parent}"/><child link="{child}"/>'
        '<origin xyz="0.1 0 0"/></joint>'
    )


def _robot(joints):
    links = ["root", *re.findall(r'child link="(\w+)"', joints)]
    return '<robot name="r">' + "".join(f'<link name="{n}"/>' for n in links) + joints + "</robot>"


def _half(leader):
    return f'<mimic joint="{leader}" multiplier="0.5"/>'


def _check_fk_against_plain(robot, text, rules):
    plain = pin.buildModelFromXML(text)
    for seed in range(3):
        q = robot.random_configuration(seed)
        values = {n: q[robot.get_joint_config_index(n)] for n in robot.controlled_joint_names}
        for f, lead in rules:  # rules listed leaders first
            values[f] = 0.5 * values[lead]
        qp = pin.neutral(plain)
        for name, v in values.items():
            qp[plain.joints[plain.getJointId(name)].idx_q] = v
        robot.update_kinematics(q)
        for frame in plain.frames[1:]:
            np.testing.assert_allclose(
                robot.get_frame_pose(frame.name).homogeneous, fk(plain, qp, frame.name), atol=1e-15
            )


@pytest.mark.parametrize("layout", ["fold", "keep"])
def test_leaders_in_later_and_deeper_branches(layout):
    # "a" (first branch) follows "bb" two levels down the second branch, whose sibling
    # "b_f" follows "cc" in the third branch: the branches are visited c, b, a to fold.
    text = _robot(
        _revolute("a", "root", "a1", _half("bb"))
        + _fixed("b", "root", "b1")
        + _fixed("c", "root", "c1")
        + _fixed("bf", "b1", "b2")
        + _revolute("bb", "b2", "bl")
        + _revolute("b_f", "b2", "bm", _half("cc"))
        + _revolute("cc", "c1", "cl")
        + _revolute("x", "a1", "a2")
    )
    robot = RobotModel.from_urdf_string(text, mimic=layout)
    assert robot.nq == (3 if layout == "fold" else 5)
    _check_fk_against_plain(robot, text, [("b_f", "cc"), ("a", "bb")])


def test_crossed_branches_cannot_be_folded_but_keep_loads_them():
    # "a" follows "e2" in the other branch, and "e3" there follows "x" under "a"
    text = _robot(
        _revolute("a", "root", "a1", _half("e2"))
        + _revolute("x", "a1", "a2")
        + _revolute("b", "root", "b1")
        + _revolute("e2", "b1", "b2")
        + _revolute("e3", "b2", "b3", _half("x"))
    )
    with pytest.raises(MalformedDescription, match="mimic='keep'"):
        RobotModel.from_urdf_string(text, mimic="fold")
    robot = RobotModel.from_urdf_string(text, mimic="keep")
    _check_fk_against_plain(robot, text, [("a", "e2"), ("e3", "x")])


def test_a_chain_of_kept_followers():
    # a = 0.5 bb and bb = 0.5 cc: Pinocchio cannot fold a mimic of a mimic; keep can
    text = _robot(
        _revolute("a", "root", "a1", _half("bb"))
        + _revolute("bb", "a1", "b1", _half("cc"))
        + _revolute("cc", "b1", "c1")
    )
    robot = RobotModel.from_urdf_string(text, mimic="keep")
    q = robot.apply_mimic([0.0, 0.0, 0.8])
    np.testing.assert_allclose(q, [0.2, 0.4, 0.8])
    solver = KinematicsSolver(robot)
    solver.add_joint_task("j", "cc", 0.5)
    res = solver.solve_velocity(q)
    v = res.solution
    assert v[1] == pytest.approx(0.5 * v[2], abs=1e-12)
    assert v[0] == pytest.approx(0.25 * v[2], abs=1e-12)
    assert v[2] < 0.0


# -- keep solves like fold: the coupling's null space ---------------------------------------------
#: A 4-joint arm whose third joint follows the second: j3 = 0.5 j2 + 0.1.
ARM4 = """<robot name="arm4">
  <link name="base"/><link name="l1"/><link name="l2"/><link name="l3"/><link name="l4"/>
  <link name="tip"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0.3"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/>
    <axis xyz="0 1 0"/><limit lower="-2.5" upper="2.5" effort="10" velocity="2"/></joint>
  <joint name="j3" type="revolute"><parent link="l2"/><child link="l3"/>
    <origin xyz="0 0 0.3"/><axis xyz="0 1 0"/>
    <limit lower="-2.5" upper="2.5" effort="10" velocity="{j3_velocity}"/>
    <mimic joint="j2" multiplier="0.5" offset="0.1"/></joint>
  <joint name="j4" type="revolute"><parent link="l3"/><child link="l4"/>
    <origin xyz="0 0 0.3"/><axis xyz="0 1 0"/>
    <limit lower="-2.5" upper="2.5" effort="10" velocity="2"/></joint>
  <joint name="tip_joint" type="fixed"><parent link="l4"/><child link="tip"/>
    <origin xyz="0 0 0.2"/></joint>
</robot>"""
#: v = G z: the keep layout's velocities from the free ones (j1, j2, j4).
G4 = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 1.0]])


def arm4(layout: str, j3_velocity: float = 2.0) -> RobotModel:
    text = ARM4.format(j3_velocity=j3_velocity)
    return RobotModel.from_urdf_string(text, mimic=layout, load_collisions=False)


def coupled(z: np.ndarray) -> np.ndarray:
    """The keep layout's q of free values (j1, j2, j4)."""
    return np.array([z[0], z[1], 0.5 * z[1] + 0.1, z[2]])


def coupled_jacobian(keep: RobotModel, z: np.ndarray) -> np.ndarray:
    keep.update_kinematics(coupled(z))
    return keep.get_frame_jacobian("tip")[:3] @ G4


def singular_start(keep: RobotModel) -> np.ndarray:
    """Free values where the tip's position Jacobian is singular under the coupling only."""
    det = [np.linalg.det(coupled_jacobian(keep, [0.3, 0.6, j4])) for j4 in (-0.16, -0.15)]
    a, b = -0.16, -0.15
    assert det[0] * det[1] < 0
    for _ in range(80):  # bisection on det(J G) along j4
        m = 0.5 * (a + b)
        if np.linalg.det(coupled_jacobian(keep, [0.3, 0.6, m])) * det[0] > 0:
            a = m
        else:
            b = m
    return np.array([0.3, 0.6, 0.5 * (a + b)])


def tip_rollout(robot: RobotModel, q: np.ndarray, target: np.ndarray, steps: int):
    solver = KinematicsSolver(robot, dt=0.01)
    tip = solver.add_frame_task("tip", "tip")
    tip.set_position_mask([1, 1, 1])
    tip.set_orientation_mask([0, 0, 0])
    tip.set_target_position(target)
    out = []
    for _ in range(steps):
        res = solver.solve_velocity(q)
        q = robot.integrate(q, res.solution, 0.01)
        out.append((q, res))
    return out


@pytest.fixture(scope="module")
def arms() -> tuple[RobotModel, RobotModel]:
    return arm4("keep"), arm4("fold")


def test_the_start_is_singular_only_under_the_coupling(arms):
    keep, _ = arms
    z = singular_start(keep)
    sv_coupled = np.linalg.svd(coupled_jacobian(keep, z), compute_uv=False)
    keep.update_kinematics(coupled(z))
    sv_free = np.linalg.svd(keep.get_frame_jacobian("tip")[:3], compute_uv=False)
    assert sv_coupled[-1] < 1e-12 * sv_coupled[0]
    assert sv_free[-1] > 0.05  # without the coupling the task is regular


@pytest.mark.parametrize("offset", [[0.05, 0.03, -0.04], [0.0, 0.0, -0.05], [0.0, 0.05, 0.0]])
def test_keep_moves_like_fold(arms, offset):
    keep, fold = arms
    z = singular_start(keep)
    fold.update_kinematics(z)
    target = fold.get_frame_pose("tip").translation + np.array(offset)
    run_f = tip_rollout(fold, z, target, 150)
    run_k = tip_rollout(keep, coupled(z), target, 150)
    first = run_k[0][1]
    assert first.status == SolverStatus.SUCCESS and first.task_scales[0] > 0.0
    assert np.linalg.norm(first.solution) > 1e-3  # the step is not zero
    for (qf, rf), (qk, rk) in zip(run_f, run_k, strict=True):
        assert rk.status == rf.status
        np.testing.assert_allclose(qk[[0, 1, 3]], qf, rtol=0, atol=1e-9)
        # the steps (dq dt; near the singularity rounding is amplified in dq itself)
        np.testing.assert_allclose(0.01 * rk.solution, 0.01 * G4 @ rf.solution, atol=1e-9)
        assert abs(qk[2] - (0.5 * qk[1] + 0.1)) < 1e-9
    keep.update_kinematics(run_k[-1][0])
    left = np.linalg.norm(keep.get_frame_pose("tip").translation - target)
    assert left < 0.5 * np.linalg.norm(offset)  # it got closer (damped near the singularity)


@pytest.mark.parametrize("delta", [[0.1, 0.1, 0.1], [-0.2, 0.3, -0.4], [0.3, 0.0, 0.0]])
def test_keep_solve_position_succeeds_from_the_same_starts(arms, delta):
    keep, fold = arms
    z0 = singular_start(keep)
    fold.update_kinematics(z0 + np.array(delta))
    target = fold.get_frame_pose("tip")
    res_f = KinematicsSolver(fold).solve_position(z0, target, "tip")
    res_k = KinematicsSolver(keep).solve_position(coupled(z0), target, "tip")
    assert res_f.status == res_k.status == SolverStatus.SUCCESS
    assert res_k.iterations == res_f.iterations
    np.testing.assert_allclose(res_k.solution[[0, 1, 3]], res_f.solution, rtol=0, atol=1e-9)
    q = res_k.solution
    assert abs(q[2] - (0.5 * q[1] + 0.1)) < 1e-9


def test_the_problem_carries_the_coupling_basis(arms):
    keep, _ = arms
    solver = KinematicsSolver(keep)
    solver.add_frame_task("tip", "tip")
    q = coupled(np.array([0.1, 0.2, 0.3]))
    p = solver.build_problem(q)
    np.testing.assert_array_equal(p.coupling_basis, G4)
    np.testing.assert_array_equal(p.coupling_offset, np.zeros(4))
    q[2] += 0.001  # a drifted follower: v0 removes the drift in one step
    p = solver.build_problem(q)
    np.testing.assert_allclose(p.coupling_offset, [0, 0, -0.001 / 0.01, 0], atol=1e-12)
    np.testing.assert_array_equal(p.C[p.constraint_slices["mimic"]], [[0, -0.5, 1, 0]])
    assert KinematicsSolver(arm4("fold")).build_problem(q[[0, 1, 3]]).coupling_basis is None


def test_any_constraint_row_and_the_box_map_through_the_coupling():
    """Rows written in full v (here a user row on the follower) and the follower's own
    velocity limit act on the leader; the result is in full v, saturations named there."""
    keep = arm4("keep", j3_velocity=0.2)  # |v3| <= 0.2 means |v2| <= 0.4
    solver = KinematicsSolver(keep)
    solver.enable_position_limits(False)
    solver.add_joint_task("j2", "j2", 2.0).gain = 100.0  # asks for 100 rad/s
    q = coupled(np.array([0.1, 0.2, 0.3]))
    res = solver.solve_velocity(q)
    assert res.solution[1] == pytest.approx(0.4) and res.solution[2] == pytest.approx(0.2)
    assert res.saturated_joints == [1]  # the leader (its box came from the follower's)
    # a general row on the follower's column: v3 - v4 <= 0.05
    solver.set_linear_velocity_constraints([[0.0, 0.0, 1.0, -1.0]], [-np.inf], [0.05])
    res = solver.solve_velocity(q)
    v = res.solution
    assert v[2] - v[3] <= 0.05 + 1e-12 and v[2] == pytest.approx(0.5 * v[1], abs=1e-12)
    assert v[2] - v[3] == pytest.approx(0.05) and res.saturated_constraints == [1]
    row = solver.build_problem(q).constraint_slices["linear"].start
    assert row == 1  # after the mimic row: the index is the full problem's


def test_a_blocked_step_is_a_stall_not_a_success():
    robot = RobotModel(
        Path(__file__).resolve().parents[1] / "robots" / "panda" / "panda.urdf",
        load_visuals=False,
    )
    hi = robot.get_joint_limits()[1]
    q = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
    q[3] = hi[3]  # at joint 4's upper limit
    solver = KinematicsSolver(robot)
    task = solver.add_joint_task("j4", "panda_joint4", hi[3] + 0.5)  # beyond it
    res = solver.solve_velocity(q)
    assert res.status == SolverStatus.NO_PROGRESS
    # the level is named by its task; what blocks it, by the joint's name
    assert res.status_message.startswith("stalled: the highest-priority level (j4) got scale 0")
    assert res.status_message.endswith("saturated joints [3] (panda_joint4) and constraint rows []")
    assert res.task_scales[0] == 0.0 and not res.solution.any()
    task.set_target_value(hi[3] - 0.5)  # away from the limit: it moves
    res = solver.solve_velocity(q)
    assert res.status == SolverStatus.SUCCESS and res.solution[3] < 0.0
    task.set_target_value(hi[3])  # met: a zero step with nothing asked is a success
    res = solver.solve_velocity(q)
    assert res.status == SolverStatus.SUCCESS
