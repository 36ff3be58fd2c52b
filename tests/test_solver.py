"""KinematicsSolver: building the stacked Problem, solving it, settings, bad input.

- ``build_problem`` is asserted on as matrices (levels by priority, same-priority
  stacking with ``sqrt(weight)``, constraint rows and their slices, the box) and is the
  very problem ``solve_velocity`` hands to the SNS core.
- The issue's solver-level behaviour on the shipped 7-DoF arm: a frame task converges
  to a reachable pose; a posture task below it leaves ``J_frame dq`` unchanged (1e-9).
- The result object (status, message, task scales, saturated joints, timings).
- Bad input never crashes and never gives a NaN dq: typed errors at configuration
  time, INVALID_INPUT (or INFEASIBLE / EMPTY_PROBLEM) with a message on the hot path.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from stackik import (
    InvalidInput,
    NonFiniteInput,
    RobotModel,
    ShapeError,
    SolverStatus,
    TaskNotFound,
    VelocitySolverResult,
)
from stackik.sns import SNSSolver, TaskSolveMode
from stackik.solver import KinematicsSolver, Problem
from stackik.tasks import FrameTask, TaskType

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
PANDA_READY = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])


@pytest.fixture(scope="module")
def panda() -> RobotModel:
    return RobotModel(ROBOTS / "panda" / "panda.urdf", srdf_path=ROBOTS / "panda" / "panda.srdf")


@pytest.fixture(scope="module")
def humanoid() -> RobotModel:
    return RobotModel(ROBOTS / "humanoid" / "humanoid.urdf", floating_base=True)


@pytest.fixture
def solver(panda) -> KinematicsSolver:
    panda.update_kinematics(PANDA_READY)
    return KinematicsSolver(panda, dt=0.01)


def far_pose(seed: int) -> pin.SE3:
    rng = np.random.default_rng(seed)
    d = rng.normal(size=3)
    return pin.SE3(pin.exp3(rng.normal(size=3)), 1.5 * d / np.linalg.norm(d))


def reachable_pose(robot: RobotModel, frame: str, seed: int) -> tuple[pin.SE3, np.ndarray]:
    """The frame's pose at a random configuration inside the limits (so reachable)."""
    rng = np.random.default_rng(seed)
    lo, hi = robot.get_joint_limits()
    q = rng.uniform(lo + 0.3, hi - 0.3)
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, q)
    return pin.SE3(data.oMf[robot.get_frame_id(frame)]), q


# ============================================================================================
# build_problem: the stacked Problem as matrices
# ============================================================================================
def test_levels_are_ordered_by_priority_and_stacked_with_sqrt_weight(solver, panda):
    ee = solver.add_frame_task("ee", "panda_hand_tcp")
    ee.priority = 2
    ee.set_target_pose(far_pose(1))
    com = solver.add_com_task("com")
    com.priority = 0
    com.set_target_position(com.current_position + np.array([0.1, 0, 0]))
    j1 = solver.add_joint_task("j1", "panda_joint1", 0.4)
    j1.priority, j1.weight = 1, 4.0
    j2 = solver.add_joint_task("j2", "panda_joint2", -0.3)
    j2.priority, j2.weight, j2.gain = 1, 0.25, 3.0
    off = solver.add_posture_task("off")
    off.active = False
    off.priority = 1
    p = solver.build_problem(PANDA_READY)
    assert isinstance(p, Problem)
    assert p.level_tasks == [["com"], ["j1", "j2"], ["ee"]]  # inactive task skipped
    assert len(p.levels) == 3 and p.modes == [TaskSolveMode.SCALE] * 3
    # Level 0: the CoM task as is (weight 1).
    np.testing.assert_allclose(p.levels[0][0], panda.get_com_jacobian())
    np.testing.assert_allclose(p.levels[0][1], [0.1, 0, 0], atol=1e-15)
    # Level 1: rows times sqrt(weight); desired velocity gain * error, also times sqrt(w).
    J1, x1 = p.levels[1]
    np.testing.assert_array_equal(J1, np.vstack([2.0 * np.eye(7)[[0]], 0.5 * np.eye(7)[[1]]]))
    np.testing.assert_allclose(x1, [2.0 * 0.4, 0.5 * 3.0 * (-0.3 + 0.5)], atol=1e-15)
    # Level 2: the frame task.
    np.testing.assert_allclose(p.levels[2][0], panda.get_frame_jacobian("panda_hand_tcp"))
    np.testing.assert_allclose(p.levels[2][1], ee.get_error())
    # Tasks report their current error after the build (their update ran).
    T = panda.get_frame_pose("panda_hand_tcp")
    np.testing.assert_allclose(ee.get_error()[:3], far_pose(1).translation - T.translation)


def test_same_priority_tasks_are_a_weighted_least_squares(solver):
    """Two conflicting joint targets at one level: the weighted average is achieved."""
    a = solver.add_joint_task("a", "panda_joint1", 0.3)
    b = solver.add_joint_task("b", "panda_joint1", -0.1)
    for wa, wb in ((1.0, 1.0), (3.0, 1.0), (1.0, 9.0)):
        a.weight, b.weight = wa, wb
        dq = solver.solve_velocity_dq(PANDA_READY, apply_limits=False)
        assert dq[0] == pytest.approx((wa * 0.3 - wb * 0.1) / (wa + wb), abs=1e-9)
        np.testing.assert_allclose(dq[1:], 0.0, atol=1e-12)


def test_constraint_rows_are_stacked_with_slices(panda):
    panda.update_kinematics(PANDA_READY)
    solver = KinematicsSolver(panda, dt=0.01)
    solver.add_frame_task("ee", "panda_hand_tcp")
    solver.configure_collision_constraint(
        0.01, max_constraints=3, activation_margin=0.2, patch_tolerance=0.0
    )
    c = panda.get_com_position()[:2]
    solver.configure_com_constraint(c + np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]))
    solver.configure_relative_pose_constraint(
        "panda_link0", "panda_hand_tcp", -5 * np.ones(6), 5 * np.ones(6), [1, 1, 1, 0, 0, 0]
    )
    solver.set_linear_velocity_constraints(np.eye(7)[:2], [-1, -1], [1, 1])
    T = panda.get_frame_pose("panda_hand_tcp")
    solver.add_tight_point_constraint("panda_hand_tcp", T.translation, 0.1, [1, 0, 1])
    solver.add_tight_frame_pose_constraint("panda_link8", np.eye(4), 10.0, 10.0)
    p = solver.build_problem(PANDA_READY)
    sizes = {"collision": 3, "com_polygon": 4, "relative_pose": 3, "linear": 2}
    sizes |= {"tight_point_0": 2, "tight_pose_0": 6}
    assert list(p.constraint_slices) == list(sizes)
    start = 0
    for name, n in sizes.items():
        assert p.constraint_slices[name] == slice(start, start + n)
        start += n
    assert p.C.shape == (start, 7) and p.lower.shape == p.upper.shape == (start,)
    np.testing.assert_array_equal(p.C[p.constraint_slices["linear"]], np.eye(7)[:2])
    assert (
        "constraints=['joint_limits', 'collision', 'com_polygon', 'relative_pose', 'linear'"
        in repr(solver)
    )
    # Inactive constraints contribute nothing.
    solver.get_constraint("collision").active = False
    assert "collision" not in solver.build_problem().constraint_slices


def test_build_problem_is_what_solve_velocity_solves(panda):
    panda.update_kinematics(PANDA_READY)
    solver = KinematicsSolver(panda, dt=0.01)
    ee = solver.add_frame_task("ee", "panda_hand_tcp")
    ee.set_target_pose(far_pose(2))
    post = solver.add_posture_task("post")
    post.priority = 1
    post.set_target_configuration(PANDA_READY + 0.3)
    solver.set_linear_velocity_constraints(np.eye(7)[[3]], [-0.2], [0.2])
    q = PANDA_READY + 0.05
    p = solver.build_problem(q)
    np.testing.assert_array_equal(solver.kinematics.q, q)  # the solver's own cache moved
    ref = SNSSolver(7).solve(
        [x for _, x in p.levels],
        [J for J, _ in p.levels],
        p.C,
        p.lower,
        p.upper,
        box_lower=p.box_lower,
        box_upper=p.box_upper,
        modes=p.modes,
    )
    res = solver.solve_velocity(q)
    np.testing.assert_allclose(res.solution, ref.solution, atol=1e-14)
    np.testing.assert_array_equal(res.task_scales, ref.task_scales)
    # An empty q means "the current configuration".
    np.testing.assert_allclose(solver.solve_velocity([]).solution, ref.solution, atol=1e-14)
    np.testing.assert_allclose(solver.solve_velocity_dq(), ref.solution, atol=1e-14)


# ============================================================================================
# The behaviour on the 7-DoF arm
# ============================================================================================
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_frame_task_converges_to_a_reachable_pose(panda, seed):
    target, _ = reachable_pose(panda, "panda_hand_tcp", seed)
    q = PANDA_READY.copy()
    panda.update_kinematics(q)
    solver = KinematicsSolver(panda, dt=0.01)
    ee = solver.add_frame_task("ee", "panda_hand_tcp")
    ee.gain = 10.0
    ee.set_target_pose(target)
    post = solver.add_posture_task("post")  # keeps the redundancy away from the limits
    post.priority = 1
    lo, hi = panda.get_joint_limits()
    for _ in range(1500):
        res = solver.solve_velocity(q)
        assert res.status == SolverStatus.SUCCESS, res.status_message
        q = q + res.solution * solver.dt
        assert np.all(q >= lo - 1e-12) and np.all(q <= hi + 1e-12)
        if np.linalg.norm(ee.get_error()) < 1e-9:
            break
    panda.update_kinematics(q)
    T = panda.get_frame_pose("panda_hand_tcp")
    assert np.linalg.norm(T.translation - target.translation) < 1e-6
    assert np.linalg.norm(pin.log3(T.rotation @ target.rotation.T)) < 1e-6


@pytest.mark.parametrize("seed", range(5))
def test_posture_below_does_not_change_frame_velocity(panda, seed):
    """Strict priority: J_frame dq is the same with and without the lower posture task."""
    rng = np.random.default_rng(seed)
    lo, hi = panda.get_joint_limits()
    q = rng.uniform(lo + 0.2, hi - 0.2)
    panda.update_kinematics(q)
    solver = KinematicsSolver(panda, dt=0.01)
    ee = solver.add_frame_task("ee", "panda_hand_tcp")
    # Reachable nearby targets (full scale) and far ones (the frame task saturates).
    near = panda.get_frame_pose("panda_hand_tcp")
    near.translation += rng.normal(size=3) * 0.005
    for target, saturated in ((near, False), (far_pose(seed), True)):
        ee.set_target_pose(target)
        alone = solver.solve_velocity(q)
        post = solver.add_posture_task("post")
        post.priority = 1
        post.set_target_configuration(rng.uniform(lo, hi))
        post.gain = 10.0
        both = solver.solve_velocity(q)
        solver.remove_task("post")
        assert alone.status == both.status == SolverStatus.SUCCESS
        J = panda.get_frame_jacobian("panda_hand_tcp")
        np.testing.assert_allclose(J @ both.solution, J @ alone.solution, atol=1e-9)
        assert both.task_scales[0] == pytest.approx(alone.task_scales[0], abs=1e-12)
        if saturated:  # joints at their bounds: the frame task takes what is left
            assert alone.task_scales[0] < 1.0 and alone.saturated_joints
        else:  # a redundant arm: the posture moves in the frame task's null space
            assert alone.task_scales[0] == pytest.approx(1.0)
            assert np.linalg.norm(both.solution - alone.solution) > 1e-3


# ============================================================================================
# The result object
# ============================================================================================
def test_result_fields(solver, panda):
    ee = solver.add_frame_task("ee", "panda_hand_tcp")
    ee.set_target_pose(far_pose(3))
    ee.gain = 50.0  # asks far more than the joint velocity limits allow
    post = solver.add_posture_task("post")
    post.priority = 1
    res = solver.solve_velocity(PANDA_READY)
    assert isinstance(res, VelocitySolverResult)
    assert res.status == SolverStatus.SUCCESS and res.success and res.status_message
    assert res.solution.shape == (7,) and np.all(np.isfinite(res.solution))
    assert res.task_scales.shape == (2,) and 0.0 < res.task_scales[0] < 1.0
    vmax = panda.get_velocity_limits()
    assert res.saturated_joints, "a joint must sit at its velocity bound"
    for j in res.saturated_joints:
        assert abs(res.solution[j]) == pytest.approx(vmax[j], abs=1e-9)
    assert np.all(np.abs(res.solution) <= vmax + 1e-12)
    assert res.computation_time_ms > 0.0
    assert res.timings == {}
    solver.enable_timing_breakdown(True)
    timed = solver.solve_velocity(PANDA_READY)
    assert set(timed.timings) == {"kinematics_ms", "problem_ms", "solve_ms"}
    assert all(v >= 0 for v in timed.timings.values())
    assert sum(timed.timings.values()) == pytest.approx(timed.computation_time_ms, rel=1e-6)
    np.testing.assert_array_equal(solver.solve_velocity_dq(PANDA_READY), timed.solution)
    # Without limits the same request exceeds the velocity limits at full scale.
    free = solver.solve_velocity(PANDA_READY, apply_limits=False)
    assert free.task_scales[0] == pytest.approx(1.0)
    assert np.any(np.abs(free.solution) > vmax)


def test_no_tasks_is_an_empty_problem(solver):
    res = solver.solve_velocity(PANDA_READY)
    assert res.status == SolverStatus.EMPTY_PROBLEM and res.status_message
    np.testing.assert_array_equal(res.solution, np.zeros(7))
    solver.add_posture_task("none", [])  # a task with no rows
    assert solver.solve_velocity(PANDA_READY).status == SolverStatus.EMPTY_PROBLEM


def test_infeasible_constraints_give_a_status_not_nan(solver):
    solver.add_frame_task("ee", "panda_hand_tcp").set_target_pose(far_pose(4))
    # Joint 1 must move at >= 5 rad/s, but its velocity limit is 2.175 rad/s.
    solver.set_linear_velocity_constraints(np.eye(7)[[0]], [5.0], [np.inf])
    res = solver.solve_velocity(PANDA_READY)
    assert res.status == SolverStatus.INFEASIBLE and "row 0" in res.status_message
    assert np.all(np.isfinite(res.solution))
    assert res.solution[0] == pytest.approx(2.175)  # the least-violating point, box kept


# ============================================================================================
# Task management and settings
# ============================================================================================
def test_task_registry(solver):
    a = solver.add_frame_task("a", "panda_hand_tcp")
    b = solver.add_posture_task("b")
    c = solver.add_com_task("c")
    assert solver.tasks == [a, b, c]
    assert solver.get_task("b") is b
    solver.remove_task("b")
    assert solver.tasks == [a, c]
    with pytest.raises(TaskNotFound) as exc:
        solver.get_task("b")
    assert exc.value.name == "b" and set(exc.value.available) == {"a", "c"}
    with pytest.raises(TaskNotFound) as exc:
        solver.remove_task("cc")
    assert "c" in exc.value.closest
    with pytest.raises(InvalidInput):
        solver.add_joint_task("a", "panda_joint1")
    b2 = solver.add_joint_task("b", "panda_joint1", 0.0)  # a removed name is free again
    assert solver.get_task("b") is b2
    solver.clear_tasks()
    assert solver.tasks == []
    assert solver.build_problem(PANDA_READY).levels == []
    assert "tasks=[]" in repr(solver)


def test_settings_and_their_bad_values(solver):
    assert solver.dt == 0.01
    solver.dt = 0.002
    assert solver.dt == 0.002
    for bad in (0.0, -0.01, np.nan, np.inf, "fast", None):
        with pytest.raises(InvalidInput):
            solver.dt = bad
    assert solver.dt == 0.002
    with pytest.raises(InvalidInput):
        KinematicsSolver(solver.robot, dt=0.0)
    for setter, bad in (
        (solver.set_damping, -1.0),
        (solver.set_damping, np.nan),
        (solver.set_tolerance, -1e-3),
        (solver.set_tolerance, np.inf),
        (solver.set_max_iterations, 0),
        (solver.set_limit_margin, -0.1),
        (solver.set_limit_margin, np.nan),
    ):
        with pytest.raises(InvalidInput):
            setter(bad)
    with pytest.raises(ShapeError):
        solver.set_joint_weights(np.ones(6))
    with pytest.raises(InvalidInput):
        solver.set_joint_weights(np.r_[np.ones(6), 0.0])
    with pytest.raises(NonFiniteInput):
        solver.set_joint_weights(np.r_[np.ones(6), np.nan])
    solver.set_damping(0.01)
    solver.set_tolerance(0.02)
    solver.set_max_iterations(3)
    solver.add_frame_task("ee", "panda_hand_tcp").set_target_pose(far_pose(5))
    res = solver.solve_velocity(PANDA_READY)
    assert res.status in (SolverStatus.SUCCESS, SolverStatus.MAX_ITERATIONS)
    assert np.all(np.isfinite(res.solution))


def test_joint_weights_make_a_joint_move_less(solver):
    ee = solver.add_frame_task("ee", "panda_hand_tcp", TaskType.FRAME_POSITION)
    ee.set_target_position(ee.current_position + np.array([0.02, 0.01, -0.01]))
    light = solver.solve_velocity_dq(PANDA_READY, apply_limits=False)
    solver.set_joint_weights([100.0, 1, 1, 1, 1, 1, 1])
    heavy = solver.solve_velocity_dq(PANDA_READY, apply_limits=False)
    J = solver.robot.get_frame_jacobian("panda_hand_tcp")[:3]
    np.testing.assert_allclose(J @ heavy, J @ light, atol=1e-12)  # same task velocity
    assert abs(heavy[0]) < 0.1 * abs(light[0])


# ============================================================================================
# Bad input on the hot path: a status and a message, never a crash or NaN
# ============================================================================================
@pytest.mark.parametrize(
    ("q", "fragment"),
    [
        (np.zeros(5), "expected shape (7,)"),
        (np.zeros(8), "expected shape (7,)"),
        (np.zeros((7, 1)), "expected shape (7,)"),
        (np.full(7, np.nan), "NaN"),
        (np.r_[np.zeros(6), np.inf], "NaN or inf"),
        ("seven", "q"),
        (object(), "q"),
    ],
)
def test_bad_q_gives_invalid_input_status(solver, panda, q, fragment):
    ee = solver.add_frame_task("ee", "panda_hand_tcp")
    ee.set_target_pose(far_pose(6))
    solver.add_posture_task("post").priority = 1
    before = panda.get_current_configuration()
    res = solver.solve_velocity(q)
    assert res.status == SolverStatus.INVALID_INPUT
    assert fragment in res.status_message
    np.testing.assert_array_equal(res.solution, np.zeros(7))
    assert res.task_scales.shape == (2,)
    np.testing.assert_array_equal(solver.solve_velocity_dq(q), np.zeros(7))
    # Nothing changed: the next good call works from the previous configuration.
    np.testing.assert_array_equal(panda.get_current_configuration(), before)
    assert solver.solve_velocity(PANDA_READY).status == SolverStatus.SUCCESS
    with pytest.raises((ShapeError, NonFiniteInput)):
        solver.build_problem(q)


def test_bad_floating_base_quaternion(humanoid):
    q = humanoid.neutral_configuration()
    humanoid.update_kinematics(q)
    solver = KinematicsSolver(humanoid)
    solver.add_frame_task("hand", "left_hand").set_target_pose(far_pose(7))
    q_bad = q.copy()
    q_bad[3:7] = 0.0
    res = solver.solve_velocity(q_bad)
    assert res.status == SolverStatus.INVALID_INPUT and "quaternion" in res.status_message
    assert np.all(res.solution == 0.0) and res.solution.shape == (humanoid.nv,)
    # An unnormalized quaternion is normalized, not rejected.
    q_scaled = q.copy()
    q_scaled[3:7] *= 3.0
    assert solver.solve_velocity(q_scaled).status == SolverStatus.SUCCESS


def test_nan_targets_are_rejected_at_configuration_time(solver):
    ee = solver.add_frame_task("ee", "panda_hand_tcp")
    target = ee.target_pose
    with pytest.raises(NonFiniteInput):
        ee.set_target_position([0.3, np.nan, 0.5])
    with pytest.raises(NonFiniteInput):
        ee.set_target_velocity([np.nan] * 6)
    post = solver.add_posture_task("post")
    with pytest.raises(NonFiniteInput):
        post.set_target_configuration(np.full(7, np.nan))
    assert ee.target_pose.isApprox(target)
    res = solver.solve_velocity(PANDA_READY)
    assert res.status == SolverStatus.SUCCESS
    np.testing.assert_allclose(res.solution, 0.0, atol=1e-12)


def test_a_level_mixing_solve_modes_is_invalid_input():
    robot = RobotModel(ROBOTS / "panda" / "panda.urdf")
    robot.update_kinematics(np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8]))
    solver = KinematicsSolver(robot)
    solver.add_frame_task("ee", "panda_hand_tcp")
    post = solver.add_posture_task("posture", priority=0)
    post.solve_mode = TaskSolveMode.MIN_ERROR  # same priority 0 as "ee", other mode
    res = solver.solve_velocity()
    assert res.status == SolverStatus.INVALID_INPUT
    assert "share priority 0" in res.status_message and "MIN_ERROR" in res.status_message
    assert np.all(res.solution == 0.0)
    post.priority = 1  # its own level: fine
    assert solver.solve_velocity().status == SolverStatus.SUCCESS


def test_a_new_constraint_family_needs_no_engine_edit(panda):
    """A family is one class and one registration; the solver takes it as it is."""
    from stackik.constraints import Constraint, constraint_families, register_constraint

    @register_constraint
    class ElbowSpeed(Constraint):
        """|v_elbow + v_wrist| <= bound: one row whose bound depends on dt."""

        family = "elbow_speed_test"
        order = 45

        def __init__(self, name, kinematics, bound):
            super().__init__(name, kinematics)
            self.bound = bound

        def max_rows(self):
            return 1

        def write(self, dt, C, lower, upper):
            C[0] = 0.0
            C[0, 3] = C[0, 5] = 1.0
            lower[0], upper[0] = -self.bound, self.bound
            return 1

    assert constraint_families()["elbow_speed_test"] is ElbowSpeed
    panda.update_kinematics(PANDA_READY)
    solver = KinematicsSolver(panda, dt=0.01)
    ee = solver.add_frame_task("ee", "panda_hand_tcp")
    ee.set_target_pose(far_pose(4))
    ee.gain = 50.0
    free = solver.solve_velocity(PANDA_READY).solution
    assert abs(free[3] + free[5]) > 0.05  # the task alone would move them fast
    solver.add_constraint(ElbowSpeed("elbow", solver.kinematics, 0.05))
    p = solver.build_problem(PANDA_READY)
    rows = p.constraint_slices["elbow"]
    np.testing.assert_array_equal(p.C[rows], np.eye(7)[[3]] + np.eye(7)[[5]])
    res = solver.solve_velocity(PANDA_READY)
    assert res.status == SolverStatus.SUCCESS, res.status_message
    assert abs(res.solution[3] + res.solution[5]) <= 0.05 + 1e-12
    assert [c.family for c in solver.constraints] == ["joint_limits", "elbow_speed_test"]
    with pytest.raises(InvalidInput):  # built on another cache: refused
        solver.add_constraint(ElbowSpeed("other", panda, 0.1))


def test_a_family_writes_unchecked_rows_for_the_engine_and_checked_ones_for_callers(panda):
    """New-style families implement write_rows/narrow_box: the engine calls those on its own
    buffers; the public write/tighten_box check the caller's buffers and then call them."""
    from stackik.constraints import Constraint
    from stackik.errors import ShapeError

    calls = []

    class WristBox(Constraint):
        """|v_wrist| <= 0.05 as a box, and |v_elbow + v_wrist| <= 0.05 as a row."""

        family = "wrist_box_test"
        order = 46

        def max_rows(self):
            return 1

        def write_rows(self, dt, C, lower, upper):
            calls.append("write_rows")
            C[0] = 0.0
            C[0, 3] = C[0, 5] = 1.0
            lower[0], upper[0] = -0.05, 0.05
            return 1

        def narrow_box(self, dt, lower, upper):
            calls.append("narrow_box")
            lower[5] = max(lower[5], -0.05)
            upper[5] = min(upper[5], 0.05)

    solver = KinematicsSolver(panda, dt=0.01)
    ee = solver.add_frame_task("ee", "panda_hand_tcp")
    ee.set_target_pose(far_pose(4))
    ee.gain = 50.0
    box = solver.add_constraint(WristBox("wrist", solver.kinematics))
    res = solver.solve_velocity(PANDA_READY)
    assert calls == ["narrow_box", "write_rows"]
    assert abs(res.solution[5]) <= 0.05 + 1e-12
    assert abs(res.solution[3] + res.solution[5]) <= 0.05 + 1e-12
    # The public methods check the caller's buffers before writing.
    with pytest.raises(ShapeError):
        box.write(0.01, np.zeros((0, 7)), np.zeros(0), np.zeros(0))
    with pytest.raises(ShapeError):
        box.tighten_box(0.01, np.zeros(6), np.zeros(6))
    assert calls == ["narrow_box", "write_rows"]  # (nothing written past them)
    C, lo, hi = box.rows(0.01)
    np.testing.assert_array_equal(C, np.eye(7)[[3]] + np.eye(7)[[5]])
    assert (lo.tolist(), hi.tolist()) == ([-0.05], [0.05])
    lo7, hi7 = np.full(7, -1.0), np.full(7, 1.0)
    box.tighten_box(0.01, lo7, hi7)
    assert (lo7[5], hi7[5], lo7[4], hi7[4]) == (-0.05, 0.05, -1.0, 1.0)


def test_a_constraint_switched_off_added_or_removed_between_steps_takes_effect(panda):
    """The engine keeps its calls per set of active constraints; every change is seen."""
    from stackik.constraints import LinearConstraint

    solver = KinematicsSolver(panda, dt=0.01)
    ee = solver.add_frame_task("ee", "panda_hand_tcp")
    ee.set_target_pose(far_pose(4))
    ee.gain = 50.0
    free = solver.solve_velocity(PANDA_READY).solution
    assert abs(free[3]) > 0.05
    row = np.eye(7)[[3]]
    cap = LinearConstraint("cap", solver.kinematics, row, [-0.05], [0.05])
    solver.add_constraint(cap)
    assert abs(solver.solve_velocity(PANDA_READY).solution[3]) <= 0.05 + 1e-12
    cap.active = False
    np.testing.assert_array_equal(solver.solve_velocity(PANDA_READY).solution, free)
    cap.active = True
    assert abs(solver.solve_velocity(PANDA_READY).solution[3]) <= 0.05 + 1e-12
    solver.remove_constraint("cap")
    np.testing.assert_array_equal(solver.solve_velocity(PANDA_READY).solution, free)
    # The joint limits: off with apply_limits=False, back on at the next default step.
    q_edge = PANDA_READY.copy()
    q_edge[3] = panda.model.upperPositionLimit[3] - 1e-4
    limited = solver.solve_velocity(q_edge).solution
    unlimited = solver.solve_velocity(q_edge, apply_limits=False).solution
    assert not np.array_equal(limited, unlimited)
    np.testing.assert_array_equal(solver.solve_velocity(q_edge).solution, limited)


def test_warmup_runs_a_copy_and_leaves_the_solver_untouched():
    import stackik

    robot = RobotModel(ROBOTS / "panda" / "panda.urdf", srdf_path=ROBOTS / "panda" / "panda.srdf")
    q0 = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])

    def make() -> KinematicsSolver:
        s = KinematicsSolver(robot, dt=0.01)
        s.add_frame_task("ee", "panda_hand_tcp").set_target_position([0.3, 0.2, 0.4])
        s.add_posture_task("posture").priority = 1
        s.configure_collision_constraint(0.02)
        return s

    warmed, plain = make(), make()
    assert stackik.warmup(warmed, robot) >= 2
    assert stackik.warmup_in_background(warmed).join(timeout=300) is None
    q_a, q_b = q0.copy(), q0.copy()
    for _ in range(50):  # same results: the warm-up ran on copies
        q_a = robot.integrate(q_a, warmed.solve_velocity(q_a).solution, 0.01)
        q_b = robot.integrate(q_b, plain.solve_velocity(q_b).solution, 0.01)
    np.testing.assert_array_equal(q_a, q_b)
    with pytest.raises(InvalidInput, match="warmup takes solvers or robots"):
        stackik.warmup("panda")


# ============================================================================================
# The exact QP fallback of a level (solved in the SNS kernel) through the public solver
# ============================================================================================
def humanoid_reaching(robot: RobotModel) -> tuple[KinematicsSolver, np.ndarray, FrameTask]:
    """Feet, a hand reaching out, a posture and the CoM over the feet (knees bent).

    The posture level keeps many null-space directions and, while the hand pulls the
    body, often finds no feasible scale by greedy saturation: the exact QP solves it.
    Returns the solver, its start configuration and the hand task.
    """
    q = robot.neutral_configuration()
    for name, v in (("hip_pitch", -0.3), ("knee", 0.6), ("ankle_pitch", -0.3)):
        for side in ("left", "right"):
            q[robot.get_joint_config_index(f"{side}_{name}_joint")] = v
    robot.update_kinematics(q)
    corners = np.array(
        [
            robot.get_frame_pose(sole).act(np.array([dx, dy, 0.0]))[:2]
            for sole in ("left_sole", "right_sole")
            for dx in (-0.1, 0.1)
            for dy in (-0.05, 0.05)
        ]
    )
    lo, hi = corners.min(axis=0), corners.max(axis=0)  # the soles are axis-aligned
    polygon = np.array([[lo[0], lo[1]], [hi[0], lo[1]], [hi[0], hi[1]], [lo[0], hi[1]]])
    solver = KinematicsSolver(robot, dt=0.01)
    for sole in ("left_sole", "right_sole"):
        solver.add_frame_task(sole, sole).gain = 10.0
    hand = solver.add_frame_task("hand", "right_hand", TaskType.FRAME_POSITION)
    hand.priority, hand.gain = 1, 5.0
    solver.add_posture_task("posture").priority = 2
    solver.configure_com_constraint(polygon, margin=0.1)
    return solver, q, hand


def test_level_qp_fallback_matches_the_quadprog_path(humanoid):
    """solve_velocity with the in-kernel level QP gives the quadprog path's joint velocities.

    Along 150 steps of a reaching motion, each step's problem (``build_problem``) is also
    solved by an SNSSolver on the quadprog reference path (the level handed back to
    Python and solved by quadprog, as before the in-kernel QP). Same status, same
    ``fallback_levels``, joint velocities to 1e-9 relative [rad/s, m/s], scales to 1e-9.
    """
    solver, q, hand = humanoid_reaching(humanoid)
    start = humanoid.get_frame_pose("right_hand").translation.copy()
    fallbacks = 0
    for i in range(150):
        a = 2 * np.pi * i / 200
        hand.set_target_position(start + np.array([0.25 + 0.1 * np.sin(a), -0.2, 0.1 * np.cos(a)]))
        p = solver.build_problem(q)
        reference = SNSSolver(humanoid.nv)
        reference._reference_qp()
        ref = reference.solve(
            [x for _, x in p.levels],
            [J for J, _ in p.levels],
            p.C,
            p.lower,
            p.upper,
            box_lower=p.box_lower,
            box_upper=p.box_upper,
            modes=p.modes,
        )
        res = solver.solve_velocity(q)
        assert res.status == ref.status == SolverStatus.SUCCESS, res.status_message
        assert res.fallback_levels == ref.fallback_levels
        assert res.status_message == ref.status_message
        size = max(1.0, float(np.max(np.abs(ref.solution))))
        np.testing.assert_allclose(res.solution, ref.solution, rtol=0, atol=1e-9 * size)
        np.testing.assert_allclose(res.task_scales, ref.task_scales, rtol=0, atol=1e-9)
        if res.fallback_levels:
            assert res.fallback_levels == [2]  # only the posture level needs it here
            assert "exact QP fallback on levels [2]" in res.status_message
            fallbacks += 1
        else:
            assert "fallback" not in res.status_message
        q = humanoid.integrate(q, res.solution, solver.dt)
    assert 0.3 * 150 <= fallbacks < 150  # both paths (greedy and QP) are exercised


def test_an_unpickled_solver_steps_bit_for_bit_as_the_original(panda):
    """A solver that has stepped pickles with its tasks and constraints; the copy rebuilds
    its layout and calls (their views of the level buffers do not survive pickling) and
    its steps are the original's, bit for bit, also after a target moves."""
    import pickle

    solver = KinematicsSolver(panda, dt=0.01)
    ee = solver.add_frame_task("ee", "panda_hand_tcp")
    ee.set_target_pose(far_pose(2))
    solver.add_posture_task("posture").priority = 1
    solver.configure_collision_constraint(0.02)
    q = PANDA_READY.copy()
    for _ in range(3):
        q = panda.integrate(q, solver.solve_velocity(q).solution, 0.01)
    copy = pickle.loads(pickle.dumps(solver))
    for k in range(4):
        if k == 2:
            for s in (solver, copy):
                s.get_task("ee").set_target_pose(far_pose(5))
        a, b = solver.solve_velocity(q), copy.solve_velocity(q)
        assert a.status == b.status
        np.testing.assert_array_equal(a.solution, b.solution)
        np.testing.assert_array_equal(a.levels[0], b.levels[0])
        np.testing.assert_array_equal(a.levels[2], b.levels[2])
        q = panda.integrate(q, a.solution, 0.01)
    # The copy's level rows are its tasks' own rows (written into the copy's buffers).
    J = copy.build_problem(q).J
    np.testing.assert_allclose(J[:6], copy.get_task("ee").get_jacobian(), rtol=0, atol=0)


def test_a_mask_changed_during_a_step_is_refused_and_taken_at_the_next(panda):
    """The engine's task writers skip the public buffer checks, so a compiled writer must
    still never write past rows sized for the old mask: a task whose mask another thread
    changes after the layout was made gets a typed refusal for that step (INVALID_INPUT,
    naming the task), and the next step uses the new mask."""
    from stackik.tasks import Task

    ee = None

    class Meddler(Task):
        """Changes the frame task's mask while the step writes its rows (as a thread would)."""

        task_type = TaskType.FRAME_POSITION

        def __init__(self, kinematics):
            super().__init__("meddler", kinematics, 1, priority=0, weight=1e-6)
            self.armed = True

        def _compute(self, J, error):
            J[:] = 0.0
            error[:] = 0.0

        def write_rows(self, J, xdot):
            super().write_rows(J, xdot)
            if self.armed:
                self.armed = False
                ee.set_position_mask([1, 0, 1])  # 6 rows -> 5, after the layout was made

    solver = KinematicsSolver(panda, dt=0.01)
    meddler = solver.add_task(Meddler(solver.kinematics))
    ee = solver.add_frame_task("ee", "panda_hand_tcp")
    ee.set_target_pose(far_pose(3))
    solver.add_posture_task("posture").priority = 1
    refused = solver.solve_velocity(PANDA_READY)
    assert refused.status == SolverStatus.INVALID_INPUT
    assert "'ee'" in refused.status_message
    np.testing.assert_array_equal(refused.solution, np.zeros(7))
    after = solver.solve_velocity(PANDA_READY)  # the new layout: 1 + 5 rows on level 0
    assert after.status in (SolverStatus.SUCCESS, SolverStatus.NO_PROGRESS), after.status_message
    J, offsets, _ = after.levels
    assert offsets[1] - offsets[0] == 6
    np.testing.assert_allclose(J[1:6], ee.get_jacobian() * np.sqrt(ee.weight), rtol=0, atol=1e-15)
    assert not meddler.armed


def test_a_support_polygon_with_fewer_vertices_than_its_planes_is_refused(humanoid):
    """Rows are sized by ``max_rows()`` (the vertices); the compiled writer writes one row
    per half plane. Vertices replaced without the planes must give a typed refusal, never
    rows written past the buffer."""
    solver, q, _ = humanoid_reaching(humanoid)
    com = solver.get_constraint("com_polygon")
    assert solver.solve_velocity(q).status != SolverStatus.INVALID_INPUT
    com.vertices = com.vertices[:3]
    res = solver.solve_velocity(q)
    assert res.status == SolverStatus.INVALID_INPUT
    assert "constraint 'com_polygon'" in res.status_message
