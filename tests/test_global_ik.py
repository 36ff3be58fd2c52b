"""Global IK (find_configs, branch flags, alternate configurations, paths, batches).

Every solution is checked independently: Pinocchio forward kinematics with a fresh
``Data``, the model's joint limits, the robot's own collision distances, the callback.

- find_configs: distinct solutions that verify by FK, respect the limits, the registered
  limit margin, the collision constraint and the callback; sorted by the joint metric;
  deterministic for a seed; locked joints stay put; floating-base robots; unreachable
  targets give an empty list.
- Branch flags: the UR5's 8 closed-form (standard DH) branches carry the README's flags;
  a spherical-wrist 6R arm's wrist flip flips only the wrist flag; find_configs(branch=)
  returns every branch of both arms; the vcKinSolver code round-trips.
- alternate_configs: the 64 +-2 pi variants of a UR5 configuration, all at one pose.
- generate_path: points on the straight line (position and slerped orientation) without
  jumps; unreachable and rejected points report their index and the points so far.
- solve_position_batch: (N, nq + 2) rows that verify by FK.
- Bad input raises typed errors.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from stackik import (
    FrameNotFound,
    InvalidInput,
    InvalidTransform,
    JointNotFound,
    NonFiniteInput,
    RobotModel,
    ShapeError,
    SolverStatus,
)
from stackik.ik.batch import BatchIKOptions
from stackik.ik.branches import BranchFlags
from stackik.solver import KinematicsSolver
from ur5_dh import ur5_closed_form

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
PANDA_READY = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
TIP = "panda_hand_tcp"
POS_OK, ORI_OK = 1e-5, 1e-4  # the solvers' default tolerances [m, rad]


# A 6R arm with a spherical wrist (axes 4, 5, 6 meet at the wrist centre), a shoulder
# offset and an elbow offset, like common industrial arms.
SPHERICAL_URDF = """<?xml version="1.0"?>
<robot name="spherical6r">
  <link name="base"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0.4"/><axis xyz="0 0 1"/>
    <limit lower="-3.1" upper="3.1" effort="10" velocity="2"/></joint>
  <link name="l1"/>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/>
    <origin xyz="0.1 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-3.1" upper="3.1" effort="10" velocity="2"/></joint>
  <link name="l2"/>
  <joint name="j3" type="revolute"><parent link="l2"/><child link="l3"/>
    <origin xyz="0 0 0.5"/><axis xyz="0 1 0"/>
    <limit lower="-3.1" upper="3.1" effort="10" velocity="2"/></joint>
  <link name="l3"/>
  <joint name="j4" type="revolute"><parent link="l3"/><child link="l4"/>
    <origin xyz="0.2 0 0.05"/><axis xyz="1 0 0"/>
    <limit lower="-3.1" upper="3.1" effort="10" velocity="2"/></joint>
  <link name="l4"/>
  <joint name="j5" type="revolute"><parent link="l4"/><child link="l5"/>
    <origin xyz="0.25 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-3.1" upper="3.1" effort="10" velocity="2"/></joint>
  <link name="l5"/>
  <joint name="j6" type="revolute"><parent link="l5"/><child link="l6"/>
    <origin xyz="0 0 0"/><axis xyz="1 0 0"/>
    <limit lower="-3.1" upper="3.1" effort="10" velocity="2"/></joint>
  <link name="l6"/>
  <joint name="tool_joint" type="fixed"><parent link="l6"/><child link="tool"/>
    <origin xyz="0.08 0 0" rpy="0 1.5707963267948966 0"/></joint>
  <link name="tool"/>
</robot>
"""


# KinematicsSolver carries the position and global IK mixins.
Solver = KinematicsSolver


@pytest.fixture(scope="module")
def panda() -> RobotModel:
    return RobotModel(ROBOTS / "panda" / "panda.urdf", srdf_path=ROBOTS / "panda" / "panda.srdf")


@pytest.fixture(scope="module")
def ur5() -> RobotModel:
    return RobotModel(ROBOTS / "ur5" / "ur5.urdf", load_collisions=False, load_visuals=False)


@pytest.fixture(scope="module")
def spherical() -> RobotModel:
    return RobotModel.from_urdf_string(SPHERICAL_URDF)


@pytest.fixture(scope="module")
def ur5_solver(ur5) -> Solver:
    s = Solver(ur5)
    s.prepare_global_ik("tool0")
    return s


@pytest.fixture
def solver(panda) -> Solver:
    panda.update_kinematics(PANDA_READY)
    s = Solver(panda)
    s.prepare_global_ik(TIP)
    return s


def fk(robot: RobotModel, q: np.ndarray, frame: str) -> pin.SE3:
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, q)
    return pin.SE3(data.oMf[robot.model.getFrameId(frame)])


def pose_errors(T: pin.SE3, target: pin.SE3) -> tuple[float, float]:
    return (
        float(np.linalg.norm(T.translation - target.translation)),
        float(np.linalg.norm(pin.log3(target.rotation @ T.rotation.T))),
    )


def verifies(robot: RobotModel, q: np.ndarray, frame: str, target: pin.SE3, margin=0.0) -> bool:
    ep, eo = pose_errors(fk(robot, q, frame), target)
    lo, hi = robot.get_joint_limits()
    inside = np.all(q >= lo + margin - 1e-9) and np.all(q <= hi - margin + 1e-9)
    return bool(ep <= POS_OK + 1e-9 and eo <= ORI_OK + 1e-9 and inside)


def random_target(robot: RobotModel, frame: str, seed: int, shrink: float = 0.0):
    rng = np.random.default_rng(seed)
    lo, hi = robot.get_joint_limits()
    q = rng.uniform(lo + shrink, hi - shrink)
    return q, fk(robot, q, frame)


# -- UR5 closed form (standard DH, robots/README.md) --------------------------------------
# -- find_configs ----------------------------------------------------------------------------
def test_find_configs_returns_distinct_verified_solutions(solver, panda):
    _, target = random_target(panda, TIP, 1, shrink=0.2)
    calls = []

    def rule(q: np.ndarray) -> bool:
        calls.append(q.copy())
        return bool(q[0] > -1.0)

    ref = PANDA_READY
    sols = solver.find_configs(target, TIP, 6, 0.5, ref, rule, seed=3)
    assert len(sols) == 6 and calls
    for q in sols:
        assert verifies(panda, q, TIP, target) and q[0] > -1.0
    flat = np.array(sols)
    gaps = [np.abs(flat[i] - flat[j]).max() for i in range(6) for j in range(i)]
    assert min(gaps) > 1e-3
    dist = [np.linalg.norm(q - ref) for q in sols]
    assert dist == sorted(dist)
    # a metric weighting one joint changes the order accordingly
    w = np.array([100.0, 1, 1, 1, 1, 1, 1])
    sols_w = solver.find_configs(target, TIP, 6, 0.5, ref, rule, seed=3, metric=w)
    dist_w = [np.sqrt(w @ (q - ref) ** 2) for q in sols_w]
    assert dist_w == sorted(dist_w)
    # the robot's kinematics cache is untouched
    np.testing.assert_array_equal(panda.get_current_configuration(), PANDA_READY)


def test_find_configs_is_deterministic_for_a_seed(ur5_solver, ur5):
    _, target = random_target(ur5, "tool0", 2)
    ref = np.zeros(6)
    opts = {"max_attempts": 200, "analytic": False}  # the numeric search
    a = ur5_solver.find_configs(target, "tool0", 4, 1.0, ref, seed=7, **opts)
    b = ur5_solver.find_configs(target, "tool0", 4, 1.0, ref, seed=7, **opts)
    c = ur5_solver.find_configs(target, "tool0", 4, 1.0, ref, seed=8, **opts)
    assert len(a) == 4
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    assert any(not np.array_equal(x, y) for x, y in zip(a, c, strict=True))


def test_find_configs_with_a_count_budget_only(ur5_solver, ur5):
    """time_budget=None: the search is bounded by iterations, the same on any machine."""
    _, target = random_target(ur5, "tool0", 3)
    num = {"analytic": False}  # the numeric search (the closed form needs no budget)
    a = ur5_solver.find_configs(target, "tool0", 8, None, np.zeros(6), max_iterations=4000, **num)
    b = ur5_solver.find_configs(target, "tool0", 8, None, np.zeros(6), max_iterations=4000, **num)
    assert len(a) == len(b) > 0 and a.iterations == b.iterations
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    far = pin.SE3(np.eye(3), np.array([3.0, 0.0, 0.5]))
    miss = ur5_solver.find_configs(far, "tool0", 1, None, np.zeros(6), max_iterations=500, **num)
    assert len(miss) == 0 and miss.stopped_by == "max_iterations"
    assert 500 <= miss.iterations  # the cap is checked between starts
    few = ur5_solver.find_configs(far, "tool0", 1, None, np.zeros(6), max_attempts=3, **num)
    assert few.attempts == 3 and few.stopped_by == "max_attempts"
    assert few.iterations <= 3 * 2000  # one start each (no restarts inside an attempt)
    with pytest.raises(InvalidInput, match="time_budget=None needs"):
        ur5_solver.find_configs(far, "tool0", 1, None)


def test_find_configs_respects_margin_and_collision_constraint(solver, panda):
    solver.set_limit_margin(0.1)
    d_min = 0.03
    solver.configure_collision_constraint(d_min)
    names = panda.get_collision_pair_names()
    watched = [names.index(p) for p in solver.get_active_collision_pairs()]
    targets = []
    for k in range(100):  # targets whose hand is clear of the rest by 6 cm
        q, target = random_target(panda, TIP, 10 + k, shrink=0.3)
        panda.update_kinematics(q)
        if panda.compute_min_collision_distance() > 0.06:
            targets.append(target)
    for k, target in enumerate(targets[:3]):
        sols = solver.find_configs(target, TIP, 4, 0.5, PANDA_READY, seed=k)
        assert sols
        for q in sols:
            assert verifies(panda, q, TIP, target, margin=0.1)
            panda.update_kinematics(q)
            assert np.asarray(panda.compute_collision_distances())[watched].min() >= d_min
    # a colliding pose is rejected (its pose is only reachable in collision, or not at all)
    q_hit = np.array([0.0, -0.3, 0.0, -3.0, 0.0, 0.5, 0.0])
    target = fk(panda, q_hit, TIP)
    for q in solver.find_configs(target, TIP, 3, 0.2, PANDA_READY, max_attempts=50):
        panda.update_kinematics(q)
        assert np.asarray(panda.compute_collision_distances())[watched].min() >= d_min


def test_find_configs_with_locked_joints(solver, panda):
    q_true, target = random_target(panda, TIP, 4, shrink=0.3)
    ref = PANDA_READY.copy()
    ref[[0, 6]] = q_true[[0, 6]]
    locked = ["panda_joint1", "panda_joint7"]
    sols = solver.find_configs(target, TIP, 3, 0.1, ref, locked_joints=locked, seed=1)
    assert sols
    for q in sols:
        assert verifies(panda, q, TIP, target)
        assert q[0] == ref[0] and q[6] == ref[6]


def test_find_configs_on_a_floating_base_holds_the_base():
    robot = RobotModel(ROBOTS / "panda" / "panda.urdf", floating_base=True, load_collisions=False)
    s = Solver(robot)
    ref = robot.neutral_configuration()
    ref[:3] = (0.3, -0.2, 0.1)
    ref[3:7] = pin.Quaternion(pin.exp3(np.array([0.0, 0.0, 0.7]))).coeffs()
    ref[7:] = PANDA_READY
    q_true = ref.copy()
    q_true[7:] += 0.2
    target = fk(robot, q_true, TIP)
    sols = s.find_configs(target, TIP, 2, 0.5, ref)
    assert sols
    for q in sols:
        np.testing.assert_array_equal(q[:7], ref[:7])
        ep, eo = pose_errors(fk(robot, q, TIP), target)
        assert ep <= POS_OK and eo <= ORI_OK


def test_unreachable_target_gives_an_empty_list(solver):
    far = pin.SE3(np.eye(3), np.array([2.0, 0.0, 0.5]))
    found = solver.find_configs(far, TIP, 1, 0.005, PANDA_READY)
    assert len(found) == 0 and not found and list(found) == []
    assert found.attempts >= 1 and found.stopped_by == "time_budget"
    assert found.rejected["unreachable"] + found.rejected["budget"] == found.attempts
    assert solver.nearest_config(far, TIP, PANDA_READY, time_budget=0.005) is None


def test_nearest_config_prefers_the_reference_turn(ur5_solver, ur5):
    q_true = np.array([0.3, -1.2, 1.4, -0.6, 1.1, -0.4])
    target = fk(ur5, q_true, "tool0")
    ref = q_true + np.array([0.05, 0.0, 0.0, 0.0, 0.0, 2 * math.pi - 0.05])
    q = ur5_solver.nearest_config(target, "tool0", ref, time_budget=0.2, seed=0)
    assert q is not None and verifies(ur5, q, "tool0", target)
    np.testing.assert_allclose(q[:5], q_true[:5], atol=1e-4)
    assert q[5] == pytest.approx(q_true[5] + 2 * math.pi, abs=1e-4)


# -- branch flags ------------------------------------------------------------------------
def test_ur5_branch_flags_of_the_closed_form_branches(ur5_solver, ur5):
    rng = np.random.default_rng(6)
    seen = set()
    for _ in range(20):
        q = rng.uniform(-math.pi, math.pi, 6)
        target = fk(ur5, q, "tool0").homogeneous
        for flags, sol in ur5_closed_form(target):
            np.testing.assert_allclose(fk(ur5, sol, "tool0").homogeneous, target, atol=1e-8)
            got = ur5_solver.branch_flags(sol, "tool0")
            assert isinstance(got, BranchFlags)
            assert tuple(got) == flags
            seen.add(flags)
    assert len(seen) == 8


def test_ur5_find_configs_per_branch(ur5_solver, ur5):
    q_true = np.array([0.4, -1.0, 1.2, -0.8, 1.3, 0.2])
    target = fk(ur5, q_true, "tool0")
    branches = {flags for flags, _ in ur5_closed_form(target.homogeneous)}
    assert len(branches) == 8
    for flags in branches:
        sols = ur5_solver.find_configs(target, "tool0", 2, 0.5, q_true, branch=flags, seed=1)
        assert sols, flags
        for q in sols:
            assert tuple(ur5_solver.branch_flags(q, "tool0")) == flags
            assert verifies(ur5, q, "tool0", target)
    # a partial branch (None: any) and a vcKinSolver code
    sols = ur5_solver.find_configs(target, "tool0", 3, 0.5, q_true, branch=(1, None, None))
    assert sols and all(ur5_solver.branch_flags(q, "tool0").shoulder == 1 for q in sols)
    code = ur5_solver.branch_flags(q_true, "tool0").code
    sols = ur5_solver.find_configs(target, "tool0", 1, 0.5, q_true, branch=code)
    assert BranchFlags.from_code(code) == ur5_solver.branch_flags(sols[0], "tool0")


def test_spherical_wrist_branch_flags(spherical):
    s = Solver(spherical)
    q = np.array([0.3, 0.4, 0.9, 0.5, 0.7, -0.4])
    flags = s.branch_flags(q, "tool")
    flip = q + np.array([0.0, 0.0, 0.0, math.pi, 0.0, math.pi])
    flip[4] = -q[4]
    flip = (flip + math.pi) % (2 * math.pi) - math.pi
    np.testing.assert_allclose(
        fk(spherical, flip, "tool").homogeneous, fk(spherical, q, "tool").homogeneous, atol=1e-12
    )
    flipped = s.branch_flags(flip, "tool")
    assert flipped == BranchFlags(flags.shoulder, flags.elbow, -flags.wrist)
    assert flags.code ^ flipped.code == 1
    # every branch is found, and each solution carries its flags
    target = fk(spherical, q, "tool")
    found = set()
    for code in range(8):
        wanted = BranchFlags.from_code(code)
        sols = s.find_configs(target, "tool", 1, 0.5, q, branch=wanted, seed=code)
        if sols:
            assert s.branch_flags(sols[0], "tool") == wanted
            assert verifies(spherical, sols[0], "tool", target)
            found.add(code)
    assert found == set(range(8))


def test_branch_flags_need_a_6r_arm(solver):
    with pytest.raises(InvalidInput, match="6R"):
        solver.branch_flags(PANDA_READY, TIP)
    with pytest.raises(InvalidInput, match="6R"):
        solver.find_configs(fk(solver.robot, PANDA_READY, TIP), TIP, branch=(1, 1, 1))
    with pytest.raises(InvalidInput):
        BranchFlags.from_code(9)


# -- alternate configurations ------------------------------------------------------------
def test_alternate_configs_share_the_pose(ur5_solver, ur5):
    q = np.array([0.3, -1.2, 1.4, -0.6, 1.1, 0.4])
    alts = ur5_solver.alternate_configs(q)
    assert len(alts) == 64
    np.testing.assert_array_equal(alts[0], q)
    T = fk(ur5, q, "tool0").homogeneous
    for a in alts:
        np.testing.assert_allclose(fk(ur5, a, "tool0").homogeneous, T, atol=1e-9)
        assert np.all(np.abs(a) <= 2 * math.pi)
        np.testing.assert_allclose(np.remainder(a - q + 1.0, 2 * math.pi), 1.0, atol=1e-12)
    assert len({tuple(np.round(a, 9)) for a in alts}) == 64
    # a filter, and a joint at 0 having three values (0 and +-2 pi)
    assert len(ur5_solver.alternate_configs(q, validate=lambda x: x[0] > 0)) == 32
    q0 = q.copy()
    q0[0] = 0.0
    assert len(ur5_solver.alternate_configs(q0)) == 96
    # find_configs offers the turns of each solution too (simIK findAlt): one numeric start
    sols = ur5_solver.find_configs(
        T, "tool0", 10, 0.5, q, include_alternates=True, max_attempts=1, analytic=False
    )
    assert len(sols) == 10
    np.testing.assert_allclose(sols[0], q, atol=1e-4)  # the nearest: the reference itself
    for a in sols:
        assert verifies(ur5, a, "tool0", pin.SE3(T))
        np.testing.assert_allclose(np.remainder(a - sols[0] + 1.0, 2 * math.pi), 1.0, atol=1e-9)


def test_alternate_configs_of_a_panda_are_itself(solver):
    alts = solver.alternate_configs(PANDA_READY)
    assert len(alts) == 1
    np.testing.assert_array_equal(alts[0], PANDA_READY)


# -- Cartesian paths ---------------------------------------------------------------------
def test_generate_path_follows_the_line(solver, panda):
    T0 = fk(panda, PANDA_READY, TIP)
    T1 = pin.SE3(
        pin.exp3(np.array([0.2, -0.1, 0.3])) @ T0.rotation,
        T0.translation + np.array([0.15, 0.2, -0.1]),
    )
    res = solver.generate_path(PANDA_READY, T1, TIP, 11)
    assert res.success and res.bad_index == -1, res.status_message
    assert res.configurations.shape == (11, 7) and res.poses.shape == (11, 4, 4)
    np.testing.assert_array_equal(res.configurations[0], PANDA_READY)
    d = T1.translation - T0.translation
    w = pin.log3(T1.rotation @ T0.rotation.T)
    for k, q in enumerate(res.configurations):
        s = k / 10
        T = fk(panda, q, TIP)
        # on the line through T0 and T1, at its share of the way
        off = T.translation - T0.translation
        assert np.linalg.norm(np.cross(off, d)) / np.linalg.norm(d) < 1e-5
        expected = pin.SE3(pin.exp3(s * w) @ T0.rotation, T0.translation + s * d)
        ep, eo = pose_errors(T, expected)
        assert ep < 1e-5 and eo < 1e-4
        np.testing.assert_allclose(res.poses[k], expected.homogeneous, atol=1e-12)
        assert verifies(panda, q, TIP, expected)
    assert np.abs(np.diff(res.configurations, axis=0)).max() < 0.3


def test_generate_path_reports_the_first_bad_point(solver, panda):
    T0 = fk(panda, PANDA_READY, TIP)
    far = pin.SE3(T0.rotation, T0.translation + np.array([1.5, 0.0, 0.0]))
    res = solver.generate_path(PANDA_READY, far, TIP, 10)
    assert res.status == SolverStatus.INFEASIBLE and res.reason == "unreachable"
    assert 0 < res.bad_index < 10 and res.configurations.shape == (res.bad_index, 7)
    assert f"point {res.bad_index}" in res.status_message
    # a callback rejecting a point
    T1 = pin.SE3(T0.rotation, T0.translation + np.array([0.0, 0.2, 0.0]))
    z0 = T0.translation[1]

    def rule(q: np.ndarray) -> bool:
        return fk(panda, q, TIP).translation[1] < z0 + 0.11

    res = solver.generate_path(PANDA_READY, T1, TIP, 5, rule)
    assert res.status == SolverStatus.CONSTRAINT_VIOLATION and res.reason == "validation"
    assert res.bad_index == 3 and len(res.configurations) == 3
    # a start outside the margin
    solver.set_limit_margin(0.1)
    q_bad = PANDA_READY.copy()
    q_bad[0] = panda.get_joint_limits()[1][0] - 0.05
    res = solver.generate_path(q_bad, T1, TIP, 5)
    assert res.status == SolverStatus.INVALID_INPUT and res.bad_index == 0
    assert res.reason == "limits" and len(res.configurations) == 0


def test_generate_path_detects_a_branch_jump(solver, panda):
    T0 = fk(panda, PANDA_READY, TIP)
    T1 = pin.SE3(T0.rotation, T0.translation + np.array([0.1, 0.0, 0.0]))
    res = solver.generate_path(PANDA_READY, T1, TIP, 3, max_joint_jump=1e-3)
    assert res.status == SolverStatus.CONSTRAINT_VIOLATION and res.reason == "joint_jump"
    assert res.bad_index == 1


@pytest.mark.parametrize(
    ("option", "value", "turn"),
    [
        ("max_linear_step", 1e-300, 0.0),
        ("max_linear_step", 1e-8, 0.0),  # (0.1 m / 1e-8 m: 1e7 sub-steps)
        ("max_angular_step", 1e-300, 0.0),  # (a pure translation: |log3| is rounding)
        ("max_angular_step", 1e-9, 0.3),
    ],
)
def test_a_step_too_short_for_the_line_is_refused_not_walked(solver, panda, option, value, turn):
    """A positive step so short that the line would take more than a million sub-steps
    (each a small IK solve) is an ``InvalidInput`` naming it; it ran for ever (1e-300:
    about 1e299 sub-steps; found by a review)."""
    T0 = fk(panda, PANDA_READY, TIP)
    T1 = pin.SE3(pin.exp3(np.array([0.0, 0.0, turn])) @ T0.rotation, T0.translation)
    T1.translation = T0.translation + np.array([0.1, 0.0, 0.0])
    with pytest.raises(InvalidInput, match=f"{option} = .* sub-steps, more than 1e\\+06"):
        solver.generate_path(PANDA_READY, T1, TIP, 3, **{option: value})
    # (a short step that stays within the cap is walked: 0.1 m / 1e-4 m = 1000 sub-steps)
    res = solver.generate_path(PANDA_READY, T1, TIP, 3, max_linear_step=1e-4)
    assert res.success, res.status_message


# -- batch -------------------------------------------------------------------------------
def test_solve_position_batch_rows(solver, panda):
    rng = np.random.default_rng(0)
    lo, hi = panda.get_joint_limits()
    Q = rng.uniform(lo, hi, (40, 7))
    targets = np.array([fk(panda, q, TIP).homogeneous for q in Q])
    res = solver.solve_position_batch(targets, TIP)
    assert len(res) == 40 and res.q.shape == (40, 7) and res.as_rows().shape == (40, 9)
    assert res.success.shape == res.iterations.shape == res.residual.shape == (40,)
    res2 = solver.solve_position_batch(
        targets, TIP, PANDA_READY, BatchIKOptions(max_iterations=20000)
    )
    assert res2.success.all()
    for q, it, residual, T in zip(res2.q, res2.iterations, res2.residual, targets, strict=True):
        assert it >= 0 and residual < 1.5e-4
        assert verifies(panda, q, TIP, pin.SE3(T))
    # a validation callback sends rejected rows to a new search
    res3 = solver.solve_position_batch(
        targets[:10], TIP, Q[:10], BatchIKOptions(time_budget=0.05), validate=lambda q: q[0] > 0
    )
    for q, residual, good in zip(res3.q, res3.residual, res3.success, strict=True):
        if good:
            assert q[0] > 0
        else:
            assert residual == np.inf
    assert res3.success.sum() >= 5


# -- bad input ---------------------------------------------------------------------------
def test_bad_input_raises_typed_errors(solver, panda):
    T = fk(panda, PANDA_READY, TIP).homogeneous
    skew = T.copy()
    skew[:3, :3] *= 1.1
    nan_T = T.copy()
    nan_T[1, 1] = np.nan
    with pytest.raises(InvalidTransform):
        solver.find_configs(skew, TIP)
    with pytest.raises(NonFiniteInput):
        solver.find_configs(nan_T, TIP)
    with pytest.raises(ShapeError):
        solver.find_configs(T[:3], TIP)
    with pytest.raises(FrameNotFound):
        solver.find_configs(T, "panda_hand_tpc")
    with pytest.raises(ShapeError):
        solver.find_configs(T, TIP, reference_q=np.zeros(3))
    with pytest.raises(JointNotFound):
        solver.find_configs(T, TIP, locked_joints=["nope"])
    for kwargs in (
        {"max_solutions": 0},
        {"time_budget": -1.0},
        {"time_budget": float("nan")},
        {"branch": (1, 2, 1)},
        {"metric": -np.ones(7)},
    ):
        with pytest.raises(InvalidInput):
            solver.find_configs(T, TIP, **kwargs)
    with pytest.raises(InvalidInput):
        solver.generate_path(PANDA_READY, T, TIP, 1)
    with pytest.raises(InvalidTransform):
        solver.generate_path(PANDA_READY, skew, TIP, 4)
    with pytest.raises(FrameNotFound):
        solver.generate_path(PANDA_READY, T, "nope", 4)
    with pytest.raises(ShapeError):
        solver.solve_position_batch(T, TIP)
    with pytest.raises(InvalidTransform):
        solver.solve_position_batch(np.stack([T, skew]), TIP)
    with pytest.raises(ShapeError):
        solver.solve_position_batch(np.stack([T, T]), TIP, np.zeros((3, 7)))
    with pytest.raises(NonFiniteInput):
        solver.alternate_configs(np.full(7, np.nan))
