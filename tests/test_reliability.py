"""Reliability: threads, determinism, budgets, targets, floating bases, collision rows.

Every check uses an independent computation where it judges a result: Pinocchio and
coal called directly, never the solver's own bookkeeping.
"""

from __future__ import annotations

import multiprocessing
import pickle
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import stackik
from stackik import (
    InvalidInput,
    InvalidTransform,
    KinematicsSolver,
    NonFiniteInput,
    RobotModel,
    ShapeError,
    SolverStatus,
    StackIKError,
)
from stackik.constraints import CollisionConstraint, Constraint, register_constraint

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
PANDA_READY = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
TIP = "panda_hand_tcp"


def panda(srdf: bool = True) -> RobotModel:
    srdf_path = ROBOTS / "panda" / "panda.srdf" if srdf else None
    return RobotModel(ROBOTS / "panda" / "panda.urdf", srdf_path=srdf_path)


def independent_distances(robot: RobotModel, q: np.ndarray) -> np.ndarray:
    """Signed distances of the robot's active pairs with fresh Pinocchio and coal data."""
    model, gm = robot.model, robot.collision_model
    data, gd = model.createData(), pin.GeometryData(gm)
    for req in gd.distanceRequests:
        req.enable_signed_distance = True
    pin.computeDistances(model, data, gm, gd, q)
    return np.array([r.min_distance for r in gd.distanceResults])


def rollout(solver: KinematicsSolver, q: np.ndarray, target: pin.SE3, steps: int) -> np.ndarray:
    """``steps`` velocity steps toward ``target``; every joint velocity, stacked."""
    solver.get_task("ee").set_target_pose(target)
    out = []
    for _ in range(steps):
        res = solver.solve_velocity(q)
        out.append(res.solution)
        q = solver.robot.integrate(q, res.solution, solver.dt)
    return np.array(out)


def make_solver(robot: RobotModel, collision: bool = True) -> KinematicsSolver:
    robot.update_kinematics(PANDA_READY)
    solver = KinematicsSolver(robot, dt=0.01)
    ee = solver.add_frame_task("ee", TIP)
    ee.gain = 10.0
    solver.add_posture_task("posture").priority = 1
    if collision:
        solver.configure_collision_constraint(0.01)
    return solver


def far_target(k: int) -> pin.SE3:
    rng = np.random.default_rng(k)
    return pin.SE3(
        pin.exp3(rng.normal(scale=0.8, size=3)), rng.uniform([0.2, -0.5, 0.1], [0.7, 0.5, 0.8])
    )


# ============================================================================================
# Threads
# ============================================================================================
def test_solvers_sharing_one_robot_in_two_threads_match_the_sequential_run():
    robot = panda()
    expected = [rollout(make_solver(robot), PANDA_READY, far_target(k), 400) for k in (1, 2)]
    solvers = [make_solver(robot), make_solver(robot)]
    results: dict[int, np.ndarray] = {}

    def run(k: int) -> None:
        for _ in range(3):  # several passes interleave with the other thread's
            results[k] = rollout(solvers[k], PANDA_READY, far_target(k + 1), 400)

    threads = [threading.Thread(target=run, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    # Meanwhile the robot's own cache is used by this thread as well.
    for _ in range(200):
        robot.update_kinematics(robot.random_configuration(0))
        robot.compute_collision_distances()
    for t in threads:
        t.join()
    for k in (0, 1):
        np.testing.assert_array_equal(results[k], expected[k])


def test_one_solver_called_from_two_threads_serializes():
    robot = panda()
    solver = make_solver(robot)
    solver.get_task("ee").set_target_pose(far_target(3))
    rng = np.random.default_rng(4)
    qs = [PANDA_READY + rng.uniform(-0.3, 0.3, 7) for _ in range(40)]
    expected = [solver.solve_velocity(q).solution for q in qs]
    got: dict[int, list[np.ndarray]] = {0: [], 1: []}

    def run(k: int) -> None:
        for q in qs[k::2] * 5:
            got[k].append(solver.solve_velocity(q).solution)

    threads = [threading.Thread(target=run, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in (0, 1):
        mine = expected[k::2] * 5
        for a, b in zip(got[k], mine, strict=True):
            np.testing.assert_array_equal(a, b)


def test_find_configs_from_two_threads_respects_min_distance():
    robot = panda()
    solver = make_solver(robot)
    solver.configure_collision_constraint(0.02)
    rng = np.random.default_rng(5)
    lo, hi = robot.get_joint_limits()
    targets = []
    for _ in range(30):
        q = rng.uniform(lo, hi)
        data = robot.model.createData()
        pin.framesForwardKinematics(robot.model, data, q)
        targets.append(pin.SE3(data.oMf[robot.get_frame_id(TIP)]))
    found: list[np.ndarray] = []
    lock = threading.Lock()

    def run(k: int) -> None:
        for T in targets[k::2]:
            res = solver.find_configs(T, TIP, max_solutions=4, time_budget=0.05, seed=k)
            with lock:
                found.extend(res)

    threads = [threading.Thread(target=run, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(found) > 20
    watched = {p: k for k, p in enumerate(robot.get_collision_pair_names())}
    idx = [watched[p] for p in solver.get_active_collision_pairs()]
    for q in found:
        assert independent_distances(robot, q)[idx].min() >= 0.02 - 1e-9


def test_targets_written_from_another_thread_are_never_torn():
    """A frame target is replaced as one object: position and rotation always match."""
    robot = panda(srdf=False)
    robot.update_kinematics(PANDA_READY)
    solver = KinematicsSolver(robot)
    ee = solver.add_frame_task("ee", TIP)
    poses = [pin.SE3(pin.exp3(np.array([0, 0, a])), np.array([a, a, a])) for a in (0.1, 0.7)]
    stop = threading.Event()

    def writer() -> None:
        k = 0
        while not stop.is_set():
            ee.set_target_pose(poses[k % 2])
            ee.set_target_position(poses[k % 2].translation)
            k += 1

    t = threading.Thread(target=writer)
    t.start()
    try:
        for _ in range(20_000):
            T = ee.target_pose
            a = T.translation[0]
            assert np.allclose(T.translation, a) and np.allclose(
                T.rotation, pin.exp3(np.array([0, 0, a]))
            )
    finally:
        stop.set()
        t.join()


# ============================================================================================
# Determinism
# ============================================================================================
def test_repeated_solve_position_with_collision_is_bit_identical():
    robot = panda()
    solver = make_solver(robot)
    target = far_target(6)
    first = solver.solve_position(PANDA_READY, target, TIP)
    for _ in range(30):
        again = solver.solve_position(PANDA_READY, target, TIP)
        np.testing.assert_array_equal(again.solution, first.solution)
        assert again.iterations == first.iterations


def test_a_distance_query_elsewhere_does_not_change_a_solve():
    robot = panda()
    solver = make_solver(robot)
    target = far_target(7)
    clean = rollout(solver, PANDA_READY, target, 200)
    solver2 = make_solver(robot)
    solver2.get_task("ee").set_target_pose(target)
    q = PANDA_READY.copy()
    rng = np.random.default_rng(8)
    disturbed = []
    for _ in range(200):
        robot.update_kinematics(robot.random_configuration(rng))  # the robot's own cache
        robot.compute_collision_distances()
        solver.solve_velocity(robot.random_configuration(rng))  # another solver
        res = solver2.solve_velocity(q)
        disturbed.append(res.solution)
        q = robot.integrate(q, res.solution, solver2.dt)
    np.testing.assert_array_equal(np.array(disturbed), clean)


def test_find_configs_is_reproducible_for_a_seed():
    robot = panda()
    solver = make_solver(robot)
    target = far_target(9)
    a = solver.find_configs(target, TIP, 8, time_budget=1.0, seed=3, max_attempts=30)
    b = solver.find_configs(target, TIP, 8, time_budget=1.0, seed=3, max_attempts=30)
    assert len(a) == len(b) > 0
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    assert a.rejected == b.rejected and a.attempts == b.attempts


# ============================================================================================
# Budgets (logical: no callback starts after the deadline but at most one)
# ============================================================================================
@pytest.mark.parametrize("alternates", [False, True])
def test_find_configs_budget_with_a_slow_callback(alternates):
    ur5 = RobotModel(ROBOTS / "ur5" / "ur5.urdf", srdf_path=ROBOTS / "ur5" / "ur5.srdf")
    solver = KinematicsSolver(ur5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stackik.errors.CollisionMarginWarning)
        solver.configure_collision_constraint(0.005)
    solver.prepare_global_ik("tool0")
    q = np.array([0.3, -1.2, 1.4, -1.8, -1.5, 0.2])
    target = ur5.create_kinematics(q).frame_pose("tool0")
    starts: list[float] = []

    def slow(qq: np.ndarray) -> bool:
        starts.append(time.perf_counter())
        time.sleep(0.002)
        return False  # reject everything: the search runs to its deadline

    # The smallest budget in which the search validates at least one candidate: on a
    # loaded machine (or while the kernels still run as plain Python) 10 ms can pass
    # before the first one, and the assertions below would hold vacuously.
    for budget in (0.01, 0.05, 0.25, 1.0):
        starts.clear()
        t0 = time.perf_counter()
        res = solver.find_configs(
            target, "tool0", 64, budget, validate=slow, include_alternates=alternates
        )
        if starts:
            break
    deadline = res.deadline  # the budget starts after the target checks
    assert t0 + budget <= deadline <= time.perf_counter()
    assert len(res) == 0 and res.stopped_by == "time_budget"
    assert res.rejected["validation"] == len(starts) > 0
    assert sum(s > deadline for s in starts) <= 1
    near = solver.nearest_config(target, "tool0", q, time_budget=budget, validate=slow)
    assert near is None


# ============================================================================================
# Targets and inputs
# ============================================================================================
def test_se3_targets_are_checked_like_matrices():
    robot = panda()
    solver = make_solver(robot, collision=False)
    bad = pin.SE3.Identity()
    bad.rotation = np.diag([1.0, 2.0, 1.0])
    with pytest.raises(InvalidTransform):
        solver.get_task("ee").set_target_pose(bad)
    with pytest.raises(InvalidTransform):
        solver.solve_position(PANDA_READY, bad, TIP)
    with pytest.raises(InvalidTransform):
        solver.find_configs(bad, TIP)
    nan = pin.SE3.Identity()
    nan.translation = np.array([np.nan, 0.0, 0.0])
    with pytest.raises(NonFiniteInput):
        solver.get_task("ee").set_target_pose(nan)


@pytest.mark.parametrize("x", [np.nan, np.inf, 1e300])
def test_generate_path_with_a_bad_translation_gives_a_typed_error(x):
    robot = panda()
    solver = make_solver(robot, collision=False)
    T = robot.get_frame_pose(TIP)
    T_bad = T.homogeneous.copy()
    T_bad[0, 3] = x
    with pytest.raises((NonFiniteInput, InvalidTransform)):
        solver.generate_path(PANDA_READY, T_bad, TIP, 5)
    T_se3 = pin.SE3(T.rotation, np.array([x, 0.0, 0.0]))
    with pytest.raises((NonFiniteInput, InvalidTransform)):
        solver.generate_path(PANDA_READY, T_se3, TIP, 5)


def test_complex_configurations_are_refused():
    robot = panda()
    solver = make_solver(robot, collision=False)
    qc = PANDA_READY.astype(complex) + 1e-3j
    res = solver.solve_velocity(qc)
    assert res.status == SolverStatus.INVALID_INPUT and "complex" in res.status_message
    with pytest.raises(InvalidInput, match="complex"):
        robot.update_kinematics(qc)
    with pytest.raises(InvalidInput, match="complex"):
        solver.solve_position(qc, far_target(1), TIP)
    with pytest.raises((InvalidInput, ShapeError)):
        solver.find_configs(far_target(1), TIP, reference_q=qc)


def test_far_target_on_a_floating_base_gives_finite_bounded_velocities():
    humanoid = RobotModel(ROBOTS / "humanoid" / "humanoid.urdf", floating_base=True)
    q = humanoid.neutral_configuration()
    humanoid.update_kinematics(q)
    solver = KinematicsSolver(humanoid, dt=0.01)
    pelvis = solver.add_frame_task("pelvis", "pelvis")
    pelvis.set_target_pose(pin.SE3(np.eye(3), np.array([1e5, -3e4, 2e4])))
    pelvis.gain = 100.0
    vmax = humanoid.get_velocity_limits()
    for _ in range(50):
        res = solver.solve_velocity(q)
        assert res.status == SolverStatus.SUCCESS, res.status_message
        assert np.all(np.isfinite(res.solution))
        assert np.all(np.abs(res.solution) <= vmax + 1e-9)
        q = humanoid.integrate(q, res.solution, solver.dt)
    assert np.all(np.isfinite(q))
    with pytest.raises(InvalidInput, match=r"v\[0\] = 1e\+308"):
        humanoid.integrate(q, np.full(humanoid.nv, 1e308), 10.0)
    with pytest.raises(InvalidInput, match=r"integrate\(q, v, dt\) result\[0\] = 1e\+09"):
        humanoid.integrate(q, np.full(humanoid.nv, 1e6), 1e3)


# ============================================================================================
# Collision rows under a small row budget
# ============================================================================================
def test_fast_hand_sweep_keeps_min_distance_with_a_small_row_budget():
    """Held contacts fill a 3-row budget while the left hand sweeps into the right one.

    Rows go to the pairs that can violate their limit first, and a pair that can cross
    within the step is never dropped: the hands stop at min_distance (10 mm). Distances
    are checked with fresh Pinocchio and coal data every step.
    """
    path = ROBOTS / "humanoid"
    robot = RobotModel(path / "humanoid.urdf", floating_base=True, srdf_path=path / "humanoid.srdf")
    q = robot.neutral_configuration()
    for side in ("left", "right"):
        for joint, v in (("hip_pitch", -0.3), ("knee", 0.6), ("ankle_pitch", -0.3)):
            q[robot.get_joint_config_index(f"{side}_{joint}_joint")] = v
    robot.update_kinematics(q)
    dt = 0.02
    solver = KinematicsSolver(robot, dt=dt)
    for foot in ("left_sole", "right_sole"):
        solver.add_frame_task(foot, foot).gain = 50.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stackik.errors.CollisionMarginWarning)
        solver.configure_collision_constraint(0.01, max_constraints=3)
    posture = solver.add_posture_task("posture")
    posture.priority = 1
    posture.gain = 20.0
    q_arms = q.copy()
    for side in ("left", "right"):
        q_arms[robot.get_joint_config_index(f"{side}_shoulder_pitch_joint")] = -1.3
        q_arms[robot.get_joint_config_index(f"{side}_elbow_joint")] = 0.3
    posture.set_target_configuration(q_arms)
    for _ in range(300):  # arms forward; legs, arms and torso settle into held contacts
        q = robot.integrate(q, solver.solve_velocity(q).solution, dt)
    hand = solver.add_frame_task("hand", "left_hand", stackik.TaskType.FRAME_POSITION)
    hand.gain = 1.0 / dt
    solver.add_frame_task("hold", "right_hand").gain = 1.0 / dt
    robot.update_kinematics(q)
    left = robot.get_frame_pose("left_hand").translation
    right = robot.get_frame_pose("right_hand").translation
    links = robot.get_collision_pair_links()
    hands = {"left_hand_link", "right_hand_link", "left_forearm_link", "right_forearm_link"}
    across = [
        k
        for k, (a, b) in enumerate(links)
        if {a, b} <= hands and a.split("_")[0] != b.split("_")[0]
    ]
    cc = solver.get_constraint("collision")
    worst, extra = np.inf, 0
    for step in range(200):
        hand.set_target_position(left + min(1.0, step / 20) * 1.3 * (right - left))
        res = solver.solve_velocity(q)
        # SUCCESS, or the reported stall: the collision rows hold the hands (scale 0, dq 0)
        stalled = res.status == SolverStatus.NO_PROGRESS and res.task_scales[0] <= 1e-12
        assert stalled or res.status == SolverStatus.SUCCESS, res.status_message
        assert not stalled or np.abs(res.solution).max() <= 1e-12
        q = robot.integrate(q, res.solution, dt)
        worst = min(worst, independent_distances(robot, q)[across].min())
        extra = max(extra, cc.last_extra_pairs)
    assert extra > 0  # the budget was exceeded by pairs that could cross: they kept rows
    assert worst >= 0.01 - 1e-4, worst  # at min_distance, less the 50 µm recovery deadband


def test_infeasible_start_names_the_collision_pair():
    robot = panda()
    q = np.array([0.0, -0.3, 0.0, -2.9, 0.0, 0.6, 0.0])  # hand folded into link 2
    robot.update_kinematics(q)
    solver = KinematicsSolver(robot, dt=0.001)
    solver.add_frame_task("ee", TIP)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stackik.errors.CollisionMarginWarning)
        solver.configure_collision_constraint(0.06, gain=1.0)
    res = solver.solve_velocity(q)
    # a start inside the minimum: COLLISION_VIOLATED, with the solver's own outcome (the
    # recovery asks more than the velocity box allows: the least-violating step)
    assert res.status == SolverStatus.COLLISION_VIOLATED
    assert "least-violating" in res.status_message
    assert "collision pair panda_link2_0/panda_hand_1" in res.status_message
    assert "min_distance 60.00 mm" in res.status_message


def test_margin_trap_is_warned_and_lowered():
    """The UR5's forearm and wrist 2 are never more than 9.2 mm apart."""
    ur5 = RobotModel(ROBOTS / "ur5" / "ur5.urdf", srdf_path=ROBOTS / "ur5" / "ur5.srdf")
    solver = KinematicsSolver(ur5)
    with pytest.warns(stackik.errors.CollisionMarginWarning, match="forearm_link") as record:
        solver.configure_collision_constraint(0.01)
    lowered = record[0].message.pairs
    assert lowered and all(d_used < d_max < 0.01 for _, _, d_max, d_used in lowered)
    overrides = dict(solver.get_collision_pair_min_distance_overrides())
    assert {f"{a}|{b}" for a, b, _, _ in lowered} <= set(overrides)
    q = np.array([0.3, -1.2, 1.4, -1.8, -1.5, 0.2])
    ur5.update_kinematics(q)
    tool = solver.add_frame_task("tool", "tool0")
    T = ur5.get_frame_pose("tool0")
    tool.set_target_pose(pin.SE3(T.rotation, T.translation + np.array([0.0, 0.0, 0.05])))
    res = solver.solve_velocity(q)
    assert res.status == SolverStatus.SUCCESS, res.status_message
    assert issubclass(stackik.errors.CollisionMarginWarning, UserWarning)
    assert isinstance(StackIKError("x"), Exception)


# ============================================================================================
# Errors carry what was wrong as attributes
# ============================================================================================
def test_errors_name_the_argument_and_value_as_attributes():
    robot = panda(srdf=False)
    solver = KinematicsSolver(robot, dt=0.01)
    with pytest.raises(InvalidInput) as info:
        solver.set_damping(-1.0)
    assert (info.value.what, info.value.value) == ("damping", -1.0)
    with pytest.raises(InvalidInput) as info:
        solver.set_max_iterations(0)
    assert (info.value.what, info.value.value) == ("max_iter", 0)
    q = PANDA_READY.copy()
    q[3] = np.nan
    with pytest.raises(NonFiniteInput) as info:
        robot.update_kinematics(q)
    assert (info.value.what, info.value.indices) == ("q", [3])
    with pytest.raises(ShapeError) as info:
        robot.update_kinematics(np.zeros(5))
    assert (info.value.what, info.value.expected, info.value.given) == ("q", (7,), (5,))
    q[3] = 2e6
    with pytest.raises(InvalidInput) as info:
        robot.update_kinematics(q)
    assert (info.value.what, info.value.value) == ("q", 2e6)
    with pytest.raises(InvalidInput) as info:
        solver.add_frame_task("ee", TIP).priority = 1.5
    assert info.value.what == "task 'ee': priority" and info.value.value == 1.5


# ============================================================================================
# Pickling: solvers and robots go to worker processes and compute the same numbers
# ============================================================================================
def _configured_solver() -> KinematicsSolver:
    robot = panda()
    solver = KinematicsSolver(robot, dt=0.01)
    ee = solver.add_frame_task("ee", TIP)
    ee.set_target_pose(pin.SE3(np.eye(3), np.array([0.35, 0.25, 0.35])))
    solver.add_posture_task("posture").priority = 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stackik.errors.CollisionMarginWarning)
        solver.configure_collision_constraint(0.02)
    return solver


def _rollout_of(solver: KinematicsSolver, q: np.ndarray, steps: int) -> np.ndarray:
    for _ in range(steps):
        q = solver.robot.integrate(q, solver.solve_velocity(q).solution, solver.dt)
    return q


def _worker_rollout(blob: bytes) -> np.ndarray:
    solver = pickle.loads(blob)
    return _rollout_of(solver, PANDA_READY.copy(), 150)


def test_a_pickled_solver_continues_bit_identically():
    solver = _configured_solver()
    q = _rollout_of(solver, PANDA_READY.copy(), 20)  # temporal state (collision) is built
    copy = pickle.loads(pickle.dumps(solver))
    assert copy.robot is not solver.robot
    np.testing.assert_array_equal(_rollout_of(copy, q, 150), _rollout_of(solver, q, 150))
    target = solver.robot.create_kinematics(q).frame_pose(TIP)
    a = solver.find_configs(target, TIP, 4, 0.5, seed=5, max_attempts=20)
    b = copy.find_configs(target, TIP, 4, 0.5, seed=5, max_attempts=20)
    assert len(a) == len(b) > 0
    for qa, qb in zip(a, b, strict=True):
        np.testing.assert_array_equal(qa, qb)


def test_a_pickled_robot_is_the_same_description():
    robot = panda()
    robot.add_frame("probe", TIP, pin.SE3(np.eye(3), np.array([0.0, 0.0, 0.05])))
    copy = pickle.loads(pickle.dumps(robot))
    q = robot.random_configuration(3)
    for r in (robot, copy):
        r.update_kinematics(q)
    np.testing.assert_array_equal(
        copy.get_frame_pose("probe").homogeneous, robot.get_frame_pose("probe").homogeneous
    )
    np.testing.assert_array_equal(
        copy.compute_collision_distances(), robot.compute_collision_distances()
    )
    assert copy.get_collision_pair_names() == robot.get_collision_pair_names()


def test_a_solver_sent_to_a_spawned_process_computes_the_same_numbers():
    solver = _configured_solver()
    expected = _rollout_of(solver, PANDA_READY.copy(), 150)
    fresh = _configured_solver()  # the worker starts from the same untouched state
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        got = pool.apply(_worker_rollout, (pickle.dumps(fresh),))
    np.testing.assert_array_equal(got, expected)


def test_com_of_a_temporary_cache_stays_valid():
    """``create_kinematics(q).com`` outlives the cache it came from (a copy, not a view)."""
    humanoid = RobotModel(ROBOTS / "humanoid" / "humanoid.urdf", floating_base=True)
    q = humanoid.neutral_configuration()
    model = humanoid.model
    data = model.createData()
    expected = pin.centerOfMass(model, data, q).copy()
    for _ in range(200):
        com = humanoid.create_kinematics(q).com
        _ = [np.random.default_rng(0).random(1000) for _ in range(5)]  # reuse freed memory
        np.testing.assert_allclose(com, expected, atol=1e-12)


def test_inspecting_a_step_leaves_no_trace_on_the_following_steps():
    """build_problem(advance=False), rows() inside a snapshot: the solves stay bit-identical.

    The collision constraint carries state from step to step (broadphase distances,
    learned linearization errors, the rows' promises) and the limit box its recovery
    flags; inspecting a step must not advance them. The target sweeps the hand into
    the arm next to the base, so collision rows are active in part of the run.
    """
    warnings.simplefilter("ignore")
    plain = make_solver(panda())
    inspected = pickle.loads(pickle.dumps(plain))
    q_a = q_b = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
    active = 0
    for i in range(300):
        a = 2 * np.pi * i / 150
        target = pin.SE3(
            np.diag([1.0, -1.0, -1.0]), np.array([0.05 + 0.15 * np.cos(a), 0.15 * np.sin(a), 0.15])
        )
        for s in (plain, inspected):
            s.get_task("ee").set_target_pose(target)
        problem = inspected.build_problem(q_b, advance=False)
        col = inspected.get_constraint("collision")
        saved = col.snapshot()
        col.rows(inspected.dt)
        col.restore(saved)
        res_a, res_b = plain.solve_velocity(q_a), inspected.solve_velocity(q_b)
        np.testing.assert_array_equal(res_a.solution, res_b.solution)
        assert res_a.status == res_b.status
        active += (
            problem.constraint_slices["collision"].stop
            > problem.constraint_slices["collision"].start
        )
        q_a = plain.robot.integrate(q_a, res_a.solution, plain.dt)
        q_b = inspected.robot.integrate(q_b, res_b.solution, inspected.dt)
    assert active > 20  # the collision rows did take part


# -- the step lock --------------------------------------------------------------------------
def _waits_for(lock: threading.RLock, call) -> tuple[bool, object]:
    """Whether ``call`` (in a thread) waits while another thread holds ``lock``; its result."""
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with lock:
            held.set()
            release.wait(10.0)

    out: list[object] = []
    h = threading.Thread(target=holder)
    h.start()
    held.wait(10.0)
    caller = threading.Thread(target=lambda: out.append(call()))
    caller.start()
    caller.join(0.3)
    waited = caller.is_alive()
    release.set()
    caller.join(10.0)
    h.join(10.0)
    return waited, out[0] if out else None


def test_a_restored_constraint_keeps_its_engines_step_lock():
    """``restore`` puts back every attribute of a snapshot: a snapshot taken before the
    constraint was registered gave it back its own lock, and its calls stopped waiting for
    a running step (the memory-corrupting race again; found by a review)."""
    robot = panda()
    solver = KinematicsSolver(robot)
    col = CollisionConstraint("collision", solver.kinematics, 0.02)
    initial = col.snapshot()
    solver.engine.add_constraint(col)
    col.restore(initial)
    step_lock = solver.engine._step_lock
    assert col._lock is step_lock
    waited, names = _waits_for(step_lock, col.pair_names)
    assert waited and names == col.pair_names()
    # (the build_problem path, which snapshots and restores every constraint)
    solver.engine.build_problem(PANDA_READY, advance=False)
    assert col._lock is step_lock


def test_a_validate_callback_may_hand_pair_reads_to_another_thread():
    """Global IK holds the solver's lock while it calls ``validate``; the collision pairs'
    getters wait only for a running step, so a callback may have another thread read them
    (it waited for good when they took the solver's lock; found by a review)."""
    from concurrent.futures import ThreadPoolExecutor

    robot = panda()
    solver = KinematicsSolver(robot)
    solver.configure_collision_constraint(0.01)
    expected = solver.get_active_collision_pairs()
    pool = ThreadPoolExecutor(1)
    seen: list[int] = []

    def validate(q: np.ndarray) -> bool:
        pairs = pool.submit(solver.get_active_collision_pairs).result(timeout=20.0)
        seen.append(len(pairs))
        return True

    kin = robot.create_kinematics()
    kin.update(PANDA_READY)
    goal = kin.frame_pose("panda_hand_tcp")
    goal.translation = goal.translation + np.array([0.05, 0.0, 0.0])
    path = solver.generate_path(PANDA_READY, goal, "panda_hand_tcp", 3, validate)
    assert path.success, path.status_message
    configs = solver.find_configs(
        goal, "panda_hand_tcp", 4, time_budget=0.2, reference_q=PANDA_READY, validate=validate
    )
    assert len(configs) >= 1
    pool.shutdown()
    assert seen and set(seen) == {len(expected)}


@register_constraint
class CappedFirstJoint(Constraint):
    """One row ``|dq_0| <= 0.1``; pickles its own way, as families written before locks."""

    family = "test_capped_first_joint"
    order = 45

    def __init__(self, name: str, kinematics: object) -> None:
        super().__init__(name, kinematics)
        self._cache = threading.Lock()  # (something that does not pickle)

    def __getstate__(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if k != "_cache"}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._cache = threading.Lock()

    def max_rows(self) -> int:
        return 1

    def write_rows(self, dt, C, lower, upper) -> int:  # type: ignore[no-untyped-def]
        C[0] = 0.0
        C[0, 0] = 1.0
        lower[0], upper[0] = -0.1, 0.1
        return 1


def test_a_family_with_its_own_getstate_still_pickles():
    """A constraint family written before constraints had a lock may pickle its whole
    ``__dict__`` in its own ``__getstate__``: the lock is left out whatever it returns (a
    solver holding one raised a bare ``TypeError: cannot pickle '_thread.RLock'``; found
    by a review)."""
    import copy

    robot = panda()
    solver = KinematicsSolver(robot)
    solver.add_frame_task("ee", "panda_hand_tcp").set_target_pose(
        pin.SE3(np.eye(3), np.array([0.3, 0.3, 0.4]))
    )
    solver.engine.add_constraint(CappedFirstJoint("cap", solver.kinematics))
    for other in (pickle.loads(pickle.dumps(solver)), copy.deepcopy(solver)):
        cap = other.engine.get_constraint("cap")
        assert cap._lock is other.engine._step_lock  # (its new engine's)
        for q in (PANDA_READY, PANDA_READY + 0.1):
            a, b = solver.solve_velocity(q), other.solve_velocity(q)
            np.testing.assert_array_equal(a.solution, b.solution)
            assert abs(b.solution[0]) <= 0.1 + 1e-12  # (its row holds)
