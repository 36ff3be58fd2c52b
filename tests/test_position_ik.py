"""Position IK (solve_position, solve_position_in_tcp, solve_position_step).

Every pose is checked with a fresh Pinocchio ``Data`` (not the robot's cache), limits
against the model's limits, collision distances with the robot's own distance query.

- Convergence from nearby seeds to 1e-6 (Panda, UR5), for the three resolution methods
  on an easy target; per-joint max step honoured on every iterate.
- The temporary task is removed (also on error) and the registered tasks and solver
  settings are left as they were; the registered tasks work in its null space.
- Unreachable targets: a non-success status with the best iterate, never an exception.
- The registered limit margin and collision constraint hold on every iterate.
- Stepping with one or several registered frame tasks, with per-target gains.
- Bad input raises typed errors.
"""

from __future__ import annotations

import itertools
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
from stackik.ik.position import (
    PositionIKOptions,
    PositionStepOptions,
    ResolutionMethod,
    TaskTarget,
)
from stackik.solver import KinematicsSolver

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
PANDA_READY = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
TIP = "panda_hand_tcp"


# KinematicsSolver carries the position and global IK mixins.
Solver = KinematicsSolver


@pytest.fixture(scope="module")
def panda() -> RobotModel:
    return RobotModel(ROBOTS / "panda" / "panda.urdf", srdf_path=ROBOTS / "panda" / "panda.srdf")


@pytest.fixture(scope="module")
def ur5() -> RobotModel:
    return RobotModel(ROBOTS / "ur5" / "ur5.urdf", load_collisions=False, load_visuals=False)


@pytest.fixture(scope="module")
def dual() -> RobotModel:
    return RobotModel(
        ROBOTS / "dual_arm" / "dual_arm.urdf", load_collisions=False, load_visuals=False
    )


@pytest.fixture
def solver(panda) -> Solver:
    panda.update_kinematics(PANDA_READY)
    return Solver(panda, dt=0.01)


def fk(robot: RobotModel, q: np.ndarray, frame: str) -> pin.SE3:
    """World pose of ``frame`` by a fresh Pinocchio Data."""
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, q)
    return pin.SE3(data.oMf[robot.model.getFrameId(frame)])


def pose_errors(T: pin.SE3, target: pin.SE3) -> tuple[float, float]:
    return (
        float(np.linalg.norm(T.translation - target.translation)),
        float(np.linalg.norm(pin.log3(target.rotation @ T.rotation.T))),
    )


def in_limits(robot: RobotModel, q: np.ndarray, margin: float = 0.0, eps: float = 1e-9) -> bool:
    lo, hi = robot.get_joint_limits()
    return bool(np.all(q >= lo + margin - eps) and np.all(q <= hi - margin + eps))


def nearby_problem(robot: RobotModel, frame: str, seed: int, spread: float = 0.15):
    """A configuration inside the limits, its frame pose, and a seed near it."""
    rng = np.random.default_rng(seed)
    lo, hi = robot.get_joint_limits()
    q = rng.uniform(lo + 0.3, hi - 0.3)
    return q, fk(robot, q, frame), np.clip(q + rng.uniform(-spread, spread, q.size), lo, hi)


# -- convergence ---------------------------------------------------------------------------
@pytest.mark.parametrize(("robot_name", "frame"), [("panda", TIP), ("ur5", "tool0")])
def test_converges_from_nearby_seeds_to_1e6(robot_name, frame, request):
    robot = request.getfixturevalue(robot_name)
    s = Solver(robot)
    opts = PositionIKOptions(position_tolerance=1e-6, orientation_tolerance=1e-6)
    for k in range(5):
        _, target, seed = nearby_problem(robot, frame, k)
        res = s.solve_position(seed, target, frame, opts)
        assert res.status == SolverStatus.SUCCESS and res.success and res.converged
        ep, eo = pose_errors(fk(robot, res.solution, frame), target)
        assert ep <= 1e-6 and eo <= 1e-6
        assert res.position_error == pytest.approx(ep, abs=1e-12)
        assert res.orientation_error == pytest.approx(eo, abs=1e-12)
        assert res.final_error == pytest.approx(np.hypot(ep, eo), abs=1e-12)
        assert in_limits(robot, res.solution)
        assert 0 < res.iterations <= 15
        assert res.computation_time_ms > 0
        # the solver's own cache is left at the solution
        np.testing.assert_allclose(s.kinematics.q, res.solution)


def test_target_as_4x4_and_se3_give_the_same_result(solver, panda):
    _, target, seed = nearby_problem(panda, TIP, 11)
    a = solver.solve_position(seed, target, TIP)
    b = solver.solve_position(seed, target.homogeneous, TIP)
    np.testing.assert_array_equal(a.solution, b.solution)


@pytest.mark.parametrize("method", list(ResolutionMethod))
def test_resolution_methods_converge_on_an_easy_target(solver, panda, method):
    T0 = fk(panda, PANDA_READY, TIP)
    target = pin.SE3(pin.exp3(np.array([0.0, 0.05, 0.0])) @ T0.rotation, T0.translation + 0.03)
    opts = PositionIKOptions(
        method=method,
        max_iterations=1000,
        position_tolerance=1e-4,
        orientation_tolerance=1e-3,
    )
    res = solver.solve_position(PANDA_READY, target, TIP, opts)
    assert res.success, res.status_message
    ep, eo = pose_errors(fk(panda, res.solution, TIP), target)
    assert ep <= 1e-4 and eo <= 1e-3
    if method != ResolutionMethod.JACOBIAN_TRANSPOSE:
        assert res.iterations <= 10  # Gauss-Newton (damped or not) is fast here
    # the method string works too
    assert solver.solve_position(PANDA_READY, target, TIP, opts).success
    opts.method = method.value
    assert solver.solve_position(PANDA_READY, target, TIP, opts).success


def test_error_strictly_decreases_in_a_rollout(solver, panda):
    _, target, seed = nearby_problem(panda, TIP, 3, spread=0.3)
    res = solver.solve_position(seed, target, TIP, PositionIKOptions(record_path=True))
    assert res.success
    errors = [np.hypot(*pose_errors(fk(panda, q, TIP), target)) for q in res.path]
    assert len(errors) == res.iterations + 1
    assert all(b < a for a, b in itertools.pairwise(errors))


def test_max_joint_step_is_honoured(solver, panda):
    T0 = fk(panda, PANDA_READY, TIP)
    target = pin.SE3(T0.rotation, T0.translation + np.array([0.15, -0.1, 0.05]))
    steps = np.full(panda.nv, 0.02)
    steps[0] = 0.005
    opts = PositionIKOptions(max_joint_step=steps, record_path=True, max_iterations=300)
    res = solver.solve_position(PANDA_READY, target, TIP, opts)
    assert res.success
    moves = np.abs(np.diff(res.path, axis=0))
    assert np.all(moves <= steps + 1e-12)
    assert (moves / steps).max(axis=1).max() == pytest.approx(1.0)  # the bound is active
    # a scalar bound applies to every joint
    opts.max_joint_step = 0.01
    res = solver.solve_position(PANDA_READY, target, TIP, opts)
    assert res.success and np.abs(np.diff(res.path, axis=0)).max() <= 0.01 + 1e-12


def test_locked_joints_do_not_move(solver, panda):
    q, target, seed = nearby_problem(panda, TIP, 5)
    seed[0] = q[0]  # the target stays reachable with joint 1 held
    opts = PositionIKOptions(locked_joints=["panda_joint1"], record_path=True)
    res = solver.solve_position(seed, target, TIP, opts)
    assert res.success
    assert np.all(res.path[:, 0] == seed[0])
    assert all(t.get_excluded_joint_indices() == [] for t in solver.tasks)


# -- tasks and settings are left as they were -----------------------------------------------
def test_temporary_task_is_removed_and_registered_tasks_work_below_it(solver, panda):
    posture = solver.add_posture_task("posture")
    posture.priority = 3
    posture.weight = 0.5
    posture.gain = 0.2
    _, target, seed = nearby_problem(panda, TIP, 7)
    saved = (
        solver.dt,
        solver.velocity_limits_enabled(),
        solver.get_limit_margin(),
        solver.get_damping(),
    )
    res = solver.solve_position(seed, target, TIP)
    assert res.success
    assert [t.name for t in solver.tasks] == ["posture"]
    assert (posture.priority, posture.weight, posture.gain) == (3, 0.5, 0.2)
    assert (
        solver.dt,
        solver.velocity_limits_enabled(),
        solver.get_limit_margin(),
        solver.get_damping(),
    ) == saved
    # the posture task pulls the redundancy (in the target task's null space) toward its
    # target: iterating longer drifts the solution toward it, without the posture task not
    q_post = posture.target_configuration
    opts = PositionIKOptions(position_tolerance=0.0, orientation_tolerance=0.0, max_iterations=40)
    held = solver.solve_position(seed, target, TIP, opts)
    opts.use_registered_tasks = False
    free = solver.solve_position(seed, target, TIP, opts)
    assert posture.active
    for r in (held, free):
        ep, eo = pose_errors(fk(panda, r.solution, TIP), target)
        assert ep <= 1e-9 and eo <= 1e-9
    assert np.linalg.norm(held.solution - q_post) < np.linalg.norm(free.solution - q_post) - 1e-3
    # also removed when the call fails
    with pytest.raises(InvalidTransform):
        solver.solve_position(seed, np.diag([1.0, 2.0, 1.0, 1.0]), TIP)
    with pytest.raises(InvalidInput):
        solver.solve_position(seed, target, TIP, PositionIKOptions(max_joint_step=-1.0))
    assert [t.name for t in solver.tasks] == ["posture"]
    assert (
        solver.dt,
        solver.velocity_limits_enabled(),
        solver.get_limit_margin(),
        solver.get_damping(),
    ) == saved


def test_settings_are_restored_after_damped_least_squares(solver, panda):
    solver.set_damping(2e-3)
    solver.set_tolerance(3e-3)
    solver.set_limit_margin(0.01)
    _, target, seed = nearby_problem(panda, TIP, 8)
    opts = PositionIKOptions(method="damped_least_squares", damping=0.05, joint_limit_margin=0.1)
    assert solver.solve_position(seed, target, TIP, opts).success
    assert (solver.get_damping(), solver.get_tolerance(), solver.get_limit_margin()) == (
        2e-3,
        3e-3,
        0.01,
    )
    assert solver.dt == 0.01 and solver.velocity_limits_enabled()


# -- unreachable targets ---------------------------------------------------------------------
def test_unreachable_target_returns_the_best_configuration(solver, panda):
    far = pin.SE3(np.eye(3), np.array([1.5, 0.3, 0.6]))
    res = solver.solve_position(PANDA_READY, far, TIP, PositionIKOptions(record_path=True))
    assert res.status == SolverStatus.NO_PROGRESS and not res.success
    assert "no progress" in res.status_message
    assert np.all(np.isfinite(res.solution)) and in_limits(panda, res.solution)
    errors = [np.hypot(*pose_errors(fk(panda, q, TIP), far)) for q in res.path]
    assert res.final_error == pytest.approx(min(errors), abs=1e-12)
    assert res.position_error > 0.3
    opts = PositionIKOptions(classify_stagnation_as_no_progress=False)
    assert solver.solve_position(PANDA_READY, far, TIP, opts).status == SolverStatus.MAX_ITERATIONS
    opts = PositionIKOptions(max_iterations=3, stagnation_iterations=0)
    res = solver.solve_position(PANDA_READY, far, TIP, opts)
    assert res.status == SolverStatus.MAX_ITERATIONS and res.iterations == 3


# -- registered constraints ------------------------------------------------------------------
def test_registered_limit_margin_holds_on_every_iterate(solver, panda):
    margin = 0.2
    solver.set_limit_margin(margin)
    q_edge = PANDA_READY.copy()
    q_edge[0] = panda.get_joint_limits()[1][0] - 0.01  # the target needs joint 1 past the margin
    target = fk(panda, q_edge, TIP)
    seed = PANDA_READY.copy()
    seed[0] = q_edge[0] - 0.3
    res = solver.solve_position(seed, target, TIP, PositionIKOptions(record_path=True))
    assert all(in_limits(panda, q, margin, eps=1e-6) for q in res.path)
    assert res.path[:, 0].max() == pytest.approx(q_edge[0] + 0.01 - margin, abs=1e-3)  # active
    # without the margin the same target is reached
    res = solver.solve_position(seed, target, TIP, PositionIKOptions(joint_limit_margin=0.0))
    assert res.success and in_limits(panda, res.solution)


def test_collision_constraint_holds_on_every_iterate(solver, panda):
    q_hit = np.array([0.0, -0.3, 0.0, -3.0, 0.0, 0.5, 0.0])  # hand inside the shoulder
    target = fk(panda, q_hit, TIP)
    free = solver.solve_position(PANDA_READY, target, TIP)
    assert free.success
    panda.update_kinematics(free.solution)
    assert panda.compute_min_collision_distance() < 0  # unconstrained: it collides
    d_min = 0.02
    solver.configure_collision_constraint(d_min)
    res = solver.solve_position(
        PANDA_READY, target, TIP, PositionIKOptions(record_path=True, max_iterations=150)
    )
    assert not res.success
    names = panda.get_collision_pair_names()
    watched = [names.index(p) for p in solver.get_active_collision_pairs()]
    closest = []
    for q in res.path:
        panda.update_kinematics(q)
        closest.append(np.asarray(panda.compute_collision_distances())[watched].min())
    assert min(closest) >= d_min - 1e-4  # the constraint's recovery deadband is 5e-5


# -- solve_position_in_tcp ----------------------------------------------------------------
def test_solve_position_in_tcp(solver, panda):
    rel = pin.SE3(pin.exp3(np.array([0.0, 0.0, 0.3])), np.array([0.0, 0.0, 0.05]))
    res = solver.solve_position_in_tcp(PANDA_READY, rel.homogeneous, TIP)
    assert res.success
    expected = fk(panda, PANDA_READY, TIP) * rel
    ep, eo = pose_errors(fk(panda, res.solution, TIP), expected)
    assert ep <= 1e-5 and eo <= 1e-4


# -- stepping --------------------------------------------------------------------------------
def test_step_with_one_pose_target(solver, panda):
    task = solver.add_frame_task("ee", TIP)
    task.gain = 3.0
    T0 = fk(panda, PANDA_READY, TIP)
    target = pin.SE3(T0.rotation, T0.translation + np.array([0.02, 0.0, -0.01]))
    res = solver.solve_position_step(PANDA_READY, target, "ee")
    assert res.success and res.iterations == 1 and not res.converged
    before = np.linalg.norm(target.translation - T0.translation)
    assert res.position_error < before
    assert task.gain == 3.0 and task._target_velocity is None
    np.testing.assert_allclose(task.target_pose.homogeneous, target.homogeneous)
    opts = PositionStepOptions(max_steps=200, position_tolerance=1e-6, orientation_tolerance=1e-5)
    res = solver.solve_position_step(PANDA_READY, target.homogeneous, "ee", opts)
    assert res.success and res.converged and res.iterations < 200
    assert res.target_errors["ee"][0] <= 1e-6
    # the options may take the place of the task name when the target names its task
    res = solver.solve_position_step(PANDA_READY, TaskTarget("ee", target), opts)
    assert res.converged


def test_step_velocity_limits_bound_each_step(solver, panda):
    solver.add_frame_task("ee", TIP)
    T0 = fk(panda, PANDA_READY, TIP)
    target = pin.SE3(T0.rotation, T0.translation + np.array([0.3, 0.0, 0.0]))
    opts = PositionStepOptions(max_steps=5, record_path=True)
    res = solver.solve_position_step(PANDA_READY, target, "ee", opts)
    vmax = panda.get_velocity_limits() * solver.dt
    assert np.all(np.abs(np.diff(res.path, axis=0)) <= vmax + 1e-12)


def test_step_with_several_targets_and_per_target_gains(dual):
    s = Solver(dual, dt=0.02)
    q0 = np.concatenate([[0.1], PANDA_READY, PANDA_READY])
    s.add_frame_task("left", "left_tcp")
    s.add_frame_task("right", "right_tcp")
    TL0, TR0 = fk(dual, q0, "left_tcp"), fk(dual, q0, "right_tcp")
    TL = pin.SE3(TL0.rotation, TL0.translation + np.array([0.05, 0.0, 0.03]))
    TR = pin.SE3(pin.exp3(np.array([0.1, 0.0, 0.0])) @ TR0.rotation, TR0.translation - 0.03)
    opts = PositionStepOptions(max_steps=300, velocity_limits=False)
    res = s.solve_position_step(q0, [TaskTarget("left", TL), TaskTarget("right", TR)], opts)
    assert res.success and res.converged, res.status_message
    for frame, T in (("left_tcp", TL), ("right_tcp", TR)):
        ep, eo = pose_errors(fk(dual, res.solution, frame), T)
        assert ep <= 1e-5 and eo <= 1e-4
    assert set(res.target_errors) == {"left", "right"}
    # zero gains on the right target: the right hand holds still while the left one moves
    opts = PositionStepOptions(max_steps=20, velocity_limits=False)
    res = s.solve_position_step(
        q0, [TaskTarget("left", TL, 0.5, 0.5), TaskTarget.from_se3("right", TR, 0.0, 0.0)], opts
    )
    assert res.target_errors["left"][0] < 0.2 * np.linalg.norm(TL.translation - TL0.translation)
    # (no feedback at zero gain: only a second-order drift)
    assert pose_errors(fk(dual, res.solution, "right_tcp"), TR0)[0] < 1e-3


def test_step_no_progress_detection(solver, panda):
    solver.add_frame_task("ee", TIP)
    far = pin.SE3(np.eye(3), np.array([1.5, 0.3, 0.6]))
    opts = PositionStepOptions(max_steps=400, no_progress_max_steps=10, velocity_limits=False)
    res = solver.solve_position_step(PANDA_READY, far, "ee", opts)
    assert res.status == SolverStatus.NO_PROGRESS and res.iterations < 400


# -- bad input -------------------------------------------------------------------------------
def test_bad_input_raises_typed_errors(solver, panda):
    T = fk(panda, PANDA_READY, TIP).homogeneous
    skew = T.copy()
    skew[:3, :3] *= 1.1
    nan_T = T.copy()
    nan_T[0, 3] = np.nan
    with pytest.raises(InvalidTransform):
        solver.solve_position(PANDA_READY, skew, TIP)
    with pytest.raises(NonFiniteInput):
        solver.solve_position(PANDA_READY, nan_T, TIP)
    with pytest.raises(ShapeError):
        solver.solve_position(PANDA_READY, T[:3], TIP)
    with pytest.raises(ShapeError):
        solver.solve_position(PANDA_READY[:5], T, TIP)
    with pytest.raises(NonFiniteInput):
        solver.solve_position(np.full(7, np.nan), T, TIP)
    with pytest.raises(FrameNotFound):
        solver.solve_position(PANDA_READY, T, "panda_hand_tpc")
    for bad in (
        PositionIKOptions(max_iterations=-1),
        PositionIKOptions(position_gain=0.0),
        PositionIKOptions(method="newton"),
        PositionIKOptions(max_joint_step=[0.1, 0.2]),
        PositionIKOptions(dt=float("nan")),
    ):
        with pytest.raises(InvalidInput):
            solver.solve_position(PANDA_READY, T, TIP, bad)
    with pytest.raises(JointNotFound):
        solver.solve_position(PANDA_READY, T, TIP, PositionIKOptions(locked_joints=["nope"]))
    with pytest.raises(InvalidTransform):
        solver.solve_position_in_tcp(PANDA_READY, skew, TIP)

    # solve_position_step is the hot path: the same faults give INVALID_INPUT, named.
    def refused(result, words):
        assert result.status == SolverStatus.INVALID_INPUT, result
        assert result.iterations == 0
        np.testing.assert_array_equal(result.solution, PANDA_READY)
        assert words in result.status_message, result.status_message

    refused(solver.solve_position_step(PANDA_READY, T, "nope"), "unknown task 'nope'")
    solver.add_posture_task("posture")
    refused(solver.solve_position_step(PANDA_READY, T, "posture"), "need frame tasks")
    refused(solver.solve_position_step(PANDA_READY, T), "needs frame_task_name")
    solver.add_frame_task("ee", TIP)
    twice = [TaskTarget("ee", T), TaskTarget("ee", T)]
    refused(solver.solve_position_step(PANDA_READY, twice), "has two targets")
    refused(solver.solve_position_step(PANDA_READY, skew, "ee"), "ee target pose rotation")
    assert [t.name for t in solver.tasks] == ["posture", "ee"]
    assert solver.get_task("ee").gain == 1.0
