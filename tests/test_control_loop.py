"""ControlLoop: convergence, the commanded stream's safety, the watchdog, targets from threads.

Every safety claim is checked on the **commanded** stream with computations that share
nothing with stackik: a Pinocchio model and geometry built here from the URDF, distances
from ``pinocchio.computeDistances`` (coal), the CoM from ``pinocchio.centerOfMass``,
finite differences of the commanded positions against the Panda's libfranka limits.
"""

from __future__ import annotations

import gc
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import stackik
from stackik.control.timing import quiet_runtime
from stackik.errors import (
    InvalidInput,
    InvalidTransform,
    NonFiniteInput,
    NotWithinLimits,
    ShapeError,
    TaskNotFound,
)

ROOT = Path(__file__).resolve().parents[1]
PANDA = ROOT / "robots" / "panda" / "panda.urdf"
PANDA_SRDF = ROOT / "robots" / "panda" / "panda.srdf"
PROFILE = ROOT / "robots" / "panda" / "motion_limits.yaml"
HUMANOID = ROOT / "robots" / "humanoid" / "humanoid.urdf"
DT = 0.001
Q0 = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
MIN_DISTANCE = 0.02
#: Finite-difference tolerance (rounding of the positions only) and the solver's own
#: collision tolerance (docs/solver.md: pairs stay at min_distance - 1e-4 or more).
FD_TOL = 1e-7
COLLISION_TOL = 1e-4

# libfranka's limits, written here again (independent of the shipped profile)
PANDA_V = np.array([2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61])
PANDA_A = np.array([15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0])
PANDA_J = np.array([7500.0, 3750.0, 5000.0, 6250.0, 7500.0, 10000.0, 10000.0])


class Independent:
    """Limits and distances from the URDF, without stackik."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self.model = pin.buildModelFromUrdf(str(PANDA))
        self.data = self.model.createData()
        self.geom = pin.buildGeomFromUrdf(
            self.model, str(PANDA), pin.GeometryType.COLLISION, package_dirs=[str(PANDA.parent)]
        )
        self.geom.removeAllCollisionPairs()
        for a, b in pairs:
            ia, ib = self.geom.getGeometryId(a), self.geom.getGeometryId(b)
            self.geom.addCollisionPair(pin.CollisionPair(ia, ib))
        self.gdata = pin.GeometryData(self.geom)

    def distance(self, q: np.ndarray) -> float:
        pin.computeDistances(self.model, self.data, self.geom, self.gdata, q)
        return min(r.min_distance for r in self.gdata.distanceResults)

    def inside_limits(self, Q: np.ndarray) -> bool:
        lo, hi = self.model.lowerPositionLimit, self.model.upperPositionLimit
        return bool(np.all(Q >= lo) and np.all(Q <= hi))


def assert_libfranka_ok(Q: np.ndarray) -> None:
    v = np.diff(Q, axis=0) / DT
    a = np.diff(v, axis=0) / DT
    j = np.diff(a, axis=0) / DT
    assert np.all(np.abs(v) <= PANDA_V * (1 + FD_TOL)), np.abs(v).max(0) / PANDA_V
    assert np.all(np.abs(a) <= PANDA_A * (1 + FD_TOL)), np.abs(a).max(0) / PANDA_A
    assert np.all(np.abs(j) <= PANDA_J * (1 + FD_TOL)), np.abs(j).max(0) / PANDA_J


def panda_loop(collision: bool = True, **kwargs):
    robot = stackik.RobotModel(PANDA, srdf_path=PANDA_SRDF, load_visuals=False)
    limits = stackik.load_motion_limits(robot, PROFILE)
    robot.update_kinematics(Q0)
    solver = stackik.KinematicsSolver(robot, dt=DT)
    tool = solver.add_frame_task("tool", "panda_hand_tcp")
    tool.gain = 20.0
    posture = solver.add_posture_task("posture")
    posture.priority, posture.gain = 1, 2.0
    if collision:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", stackik.CollisionMarginWarning)
            solver.configure_collision_constraint(min_distance=MIN_DISTANCE)
    limiter = stackik.JointMotionLimiter.from_limits(robot, DT, limits)
    return stackik.ControlLoop(solver, Q0, limiter=limiter, **kwargs)


def test_configuration_mistakes_raise(tmp_path):
    robot = stackik.RobotModel(PANDA, load_visuals=False)
    solver = stackik.KinematicsSolver(robot, dt=0.01)
    with pytest.raises(InvalidInput, match=r"solver\.dt"):
        stackik.ControlLoop(solver, Q0)
    solver.dt = DT
    with pytest.raises(InvalidInput, match="panda_joint1"):  # no jerk limits anywhere
        stackik.ControlLoop(solver, Q0)
    limits = stackik.MotionLimits.from_file(robot, PROFILE)
    limiter = stackik.JointMotionLimiter.from_limits(robot, DT, limits)
    with pytest.raises(InvalidInput, match="target_timeout"):
        stackik.ControlLoop(solver, Q0, limiter=limiter, target_timeout=-1.0)
    with pytest.raises(NotWithinLimits):
        stackik.ControlLoop(solver, np.zeros(7), limiter=limiter)
    other = stackik.RobotModel(PANDA, load_visuals=False)
    with pytest.raises(InvalidInput, match="another robot"):
        stackik.ControlLoop(solver, Q0, limiter=stackik.JointMotionLimiter.from_limits(
            other, DT, limits))  # fmt: skip
    with pytest.raises(InvalidInput, match=r"limiter\.dt"):
        stackik.ControlLoop(
            solver, Q0, limiter=stackik.JointMotionLimiter.from_limits(robot, 0.002, limits)
        )


def test_converges_to_a_reachable_pose_within_the_limits():
    loop = panda_loop(target_timeout=None)
    robot = loop.solver.robot
    q_goal = np.array([0.5, 0.1, -0.3, -1.7, 0.3, 1.9, 0.3])
    goal = robot.create_kinematics(q_goal).frame_pose("panda_hand_tcp")
    loop.set_target("tool", goal)
    Q = [loop.q]
    for _ in range(3000):
        Q.append(loop.step().configuration)
    Q = np.array(Q)
    assert_libfranka_ok(Q)
    for q in Q[-200:]:  # reached, and stays (the posture may still move in the null space)
        reached = robot.create_kinematics(q).frame_pose("panda_hand_tcp")
        error = stackik.compute_pose_error(reached, goal)
        assert np.linalg.norm(error[:3]) < 1e-5 and np.linalg.norm(error[3:]) < 1e-5
    assert loop.state is stackik.LoopState.RUNNING and loop.stats.solver_failures == 0


def _teleop_run(ticks: int, seed: int) -> tuple[np.ndarray, stackik.ControlLoop, list[str]]:
    """A hand-held target: smooth motion, jumps, dropouts; near the body at times."""
    loop = panda_loop(target_timeout=0.1)
    rng = np.random.default_rng(seed)
    R = np.diag([1.0, -1.0, -1.0])  # tool pointing down
    Q, states = [loop.q], []
    centre = np.array([0.4, 0.0, 0.4])
    dropout_until = -1
    for k in range(ticks):
        if k % 1500 == 0:  # jump: a new place, sometimes close to the arm's own body
            centre = rng.uniform([-0.1, -0.5, 0.05], [0.7, 0.5, 0.8])
        if k % 2500 == 1200:
            dropout_until = k + int(rng.integers(150, 600))  # the device stops sending
        if k > dropout_until:
            t = k * DT
            p = centre + 0.12 * np.array([np.sin(2.1 * t), np.sin(1.3 * t), np.cos(1.7 * t)])
            loop.set_target("tool", pin.SE3(R, p))
        Q.append(loop.step().configuration)
        states.append(loop.state.name)
    return np.array(Q), loop, states


def _check_stream(Q: np.ndarray, loop: stackik.ControlLoop) -> float:
    collision = loop.solver.get_constraint("collision")
    checker = Independent(collision.pair_names())
    assert checker.inside_limits(Q)
    assert_libfranka_ok(Q)
    return min(checker.distance(q) for q in Q)


def test_commanded_stream_is_collision_free_and_within_limits():
    Q, loop, states = _teleop_run(6000, seed=3)
    closest = _check_stream(Q, loop)
    assert closest >= MIN_DISTANCE - COLLISION_TOL
    assert {"STOPPING", "HOLDING"} <= set(states)  # the dropouts stopped it
    assert loop.stats.watchdog_stops >= 2


@pytest.mark.slow
def test_commanded_stream_stays_safe_for_a_hundred_thousand_ticks():
    Q, loop, _ = _teleop_run(100_000, seed=4)
    closest = _check_stream(Q, loop)
    assert closest >= MIN_DISTANCE - COLLISION_TOL
    assert loop.stats.watchdog_stops >= 30


def test_watchdog_stops_smoothly_holds_and_resumes():
    loop = panda_loop(target_timeout=0.05)
    robot = loop.solver.robot
    start = robot.create_kinematics(Q0).frame_pose("panda_hand_tcp")
    far = pin.SE3(start.rotation, start.translation + np.array([0.0, 0.35, -0.1]))
    Q, states = [loop.q], []
    for k in range(1200):
        if k < 150 or k >= 900:  # targets, then none for 750 ms, then again
            loop.set_target("tool", far if k < 150 else start)
        Q.append(loop.step().configuration)
        states.append(loop.state)
    Q = np.array(Q)
    assert_libfranka_ok(Q)  # the stop and the restart included
    first_stop = states.index(stackik.LoopState.STOPPING)
    assert first_stop == 150 + 50 - 1  # 50 ticks after the last target (ticks 0..149)
    held = states.index(stackik.LoopState.HOLDING)
    assert held > first_stop and np.linalg.norm(np.diff(Q[first_stop:held], axis=0)[0]) > 0
    # holding: not a single bit moves
    assert np.all(Q[held + 1 : 901] == Q[held + 1])
    assert states[900] is stackik.LoopState.RUNNING
    assert np.linalg.norm(Q[-1] - Q[901]) > 0.05  # it went back toward the start
    assert loop.stats.watchdog_stops == 1
    # the stop ended where the IK had guarded it: the stop configuration of the state at
    # the last RUNNING tick
    v = np.diff(Q[first_stop - 2 : first_stop + 1], axis=0) / DT
    assert np.linalg.norm(v[-1]) > 0.1  # it was moving when the targets stopped


def _held_arm_and_a_ball(collision: bool):
    """The tool sent one target, then silence; at rest, a ball flies through the hand.

    The ball (radius 4 cm) moves at 0.3 m/s along -x, its velocity given to the world,
    from 35 cm in front of the stopped tool to 35 cm behind it. Returns the commanded
    configurations, the ball's centre at each tick, the loop's states and the loop.
    """
    import coal

    loop = panda_loop(collision=collision, target_timeout=0.05)
    robot = loop.solver.robot
    tool = robot.create_kinematics(Q0).frame_pose("panda_hand_tcp")
    loop.set_target("tool", tool)
    for _ in range(200):  # stopped by the watchdog, at rest
        loop.step()
    assert loop.state is stackik.LoopState.HOLDING
    start = tool.translation + np.array([0.35, 0.0, 0.0])
    velocity = np.array([-0.3, 0.0, 0.0])
    robot.add_obstacle("ball", coal.Sphere(0.04), pin.SE3(np.eye(3), start))
    Q, centres, states = [loop.q], [start], []
    for k in range(1, 3500):
        centre = start + velocity * (k * DT) if k <= 2333 else start + velocity * 2.333
        robot.set_obstacle_pose("ball", pin.SE3(np.eye(3), centre))
        robot.set_obstacle_velocity("ball", velocity if k <= 2333 else np.zeros(3))
        Q.append(loop.step().configuration)
        centres.append(centre)
        states.append(loop.state)
    return np.array(Q), np.array(centres), states, loop


def _ball_distances(Q: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """coal's distance from the robot (Pinocchio placements) to the ball, per tick."""
    import coal

    model = pin.buildModelFromUrdf(str(PANDA))
    data = model.createData()
    geom = pin.buildGeomFromUrdf(
        model, str(PANDA), pin.GeometryType.COLLISION, package_dirs=[str(PANDA.parent)]
    )
    gdata = pin.GeometryData(geom)
    ball = coal.Sphere(0.04)
    out = np.empty(len(Q))
    for k, (q, c) in enumerate(zip(Q, centres, strict=True)):
        pin.updateGeometryPlacements(model, data, geom, gdata, q)
        to = coal.Transform3s(np.eye(3), c)
        best = np.inf
        for g, obj in enumerate(geom.geometryObjects):
            M = gdata.oMg[g]
            res = coal.DistanceResult()
            req = coal.DistanceRequest()
            d = coal.distance(
                obj.geometry, coal.Transform3s(M.rotation, M.translation), ball, to, req, res
            )
            best = min(best, d)
        out[k] = best
    return out


def test_a_held_arm_gives_way_to_an_obstacle_and_returns():
    """HOLDING with a collision constraint keeps solving: the ball never gets closer."""
    Q, centres, states, loop = _held_arm_and_a_ball(collision=True)
    d = _ball_distances(Q, centres)
    assert d.min() >= MIN_DISTANCE - COLLISION_TOL, d.min()
    assert set(states) == {stackik.LoopState.HOLDING}  # no target came: it stayed held
    assert_libfranka_ok(Q)
    kin = loop.solver.robot.create_kinematics(Q0)
    moved = []
    for q in (Q[0], Q[-1], *Q[::50]):
        kin.update(q)
        moved.append(kin.frame_pose("panda_hand_tcp"))
    held, end = moved[0], moved[1]
    assert max(np.linalg.norm(T.translation - held.translation) for T in moved) > 0.05  # gave way
    assert np.linalg.norm(end.translation - held.translation) < 1e-3  # ... and came back
    assert np.linalg.norm(pin.log3(held.rotation.T @ end.rotation)) < 1e-3
    # Before the ball came near, the held configuration did not change by a bit.
    assert np.all(Q[:200] == Q[0])


def test_a_held_arm_without_a_collision_constraint_holds_still():
    """Without a collision constraint the hold is the limiter's: not a bit moves."""
    Q, centres, _, _ = _held_arm_and_a_ball(collision=False)
    assert np.all(Q == Q[0])
    assert _ball_distances(Q, centres).min() < 0.0  # (the ball went through the hand)


def test_a_target_ends_the_hold_and_restores_the_target_velocity():
    loop = panda_loop(target_timeout=0.05)
    tool = loop.solver.get_task("tool")
    start = loop.solver.robot.create_kinematics(Q0).frame_pose("panda_hand_tcp")
    loop.set_target("tool", start, velocity=np.zeros(6))
    for _ in range(200):
        loop.step()
    assert loop.state is stackik.LoopState.HOLDING
    assert tool.target_velocity is None and tool.error_override is not None  # held
    goal = pin.SE3(start.rotation, start.translation + np.array([0.0, 0.1, 0.0]))
    loop.set_target("tool", goal)
    loop.step()
    assert loop.state is stackik.LoopState.RUNNING
    assert np.array_equal(tool.target_velocity, np.zeros(6))  # put back
    for _ in range(1500):
        loop.set_target("tool", goal)
        loop.step()
    reached = loop.solver.robot.create_kinematics(loop.q).frame_pose("panda_hand_tcp")
    assert np.linalg.norm(reached.translation - goal.translation) < 1e-3


def _held_panda(**kwargs) -> tuple[stackik.ControlLoop, pin.SE3]:
    """A Panda loop stopped by its watchdog (collision constraint on), at rest."""
    loop = panda_loop(target_timeout=0.05, **kwargs)
    start = loop.solver.robot.create_kinematics(Q0).frame_pose("panda_hand_tcp")
    loop.set_target("tool", start, velocity=np.array([0.01, 0.0, 0.0, 0.0, 0.0, 0.0]))
    for _ in range(300):
        loop.step()
    assert loop.state is stackik.LoopState.HOLDING
    return loop, start


def test_a_held_robot_ignores_targets_masks_and_velocities_set_on_its_tasks():
    """The hold keeps the tasks' values where the robot stopped, whatever their targets."""
    loop, start = _held_panda()
    tool = loop.solver.get_task("tool")
    held = loop.q
    tool.set_target_pose(pin.SE3(start.rotation, start.translation + np.array([0, 0.1, 0])))
    tool.set_target_velocity(np.array([0.0, 0.05, 0.0, 0.0, 0.0, 0.0]))
    Q = [loop.step().configuration for _ in range(300)]
    tool.set_position_mask([0, 1, 0])
    Q += [loop.step().configuration for _ in range(300)]
    assert all(np.array_equal(q, held) for q in Q)  # not a bit moved
    assert tool.target_velocity is None  # suspended while holding ...
    loop.set_target("tool", start)
    loop.step()
    assert np.array_equal(tool.target_velocity, [0.0, 0.05, 0.0, 0.0, 0.0, 0.0])  # ... the latest


def test_stopping_the_loops_thread_gives_the_tasks_back():
    """After stop() in a hold, the tasks have their target velocities and no override."""
    loop, _ = _held_panda()
    tool = loop.solver.get_task("tool")
    loop.start()
    time.sleep(0.05)
    loop.stop()
    assert np.array_equal(tool.target_velocity, [0.01, 0.0, 0.0, 0.0, 0.0, 0.0])
    assert tool.error_override is None


def _device_run(smoothing: float) -> np.ndarray:
    """A device sending a moving pose every 4 ms (a staircase for the IK), with a jump."""
    loop = panda_loop(target_timeout=None, smoothing=smoothing)
    R = np.diag([1.0, -1.0, -1.0])
    Q = [loop.q]
    for k in range(3000):
        if k % 4 == 0:
            t = k * DT
            centre = np.array([0.45, 0.0, 0.35]) if k < 1500 else np.array([0.3, 0.3, 0.5])
            p = centre + 0.1 * np.array([np.sin(2.1 * t), np.sin(1.3 * t), np.cos(1.7 * t)])
            loop.set_target("tool", pin.SE3(R, p))
        Q.append(loop.step().configuration)
    return np.array(Q)


def test_smoothing_stops_the_buzz_of_time_optimal_tracking():
    """The limiter answers every small step of the IK velocity with a jerk pulse."""
    jerk = {}
    for smoothing in (0.0, 0.01):
        Q = _device_run(smoothing)
        assert_libfranka_ok(Q)
        j = np.diff(Q, n=3, axis=0) / DT**3 / PANDA_J
        jerk[smoothing] = float(np.sqrt(np.mean(j**2)))
    assert jerk[0.01] < 0.5 * jerk[0.0], jerk


def test_invalid_targets_are_refused_and_the_last_valid_one_kept():
    loop = panda_loop(collision=False)
    tool = loop.solver.get_task("tool")
    good = pin.SE3(np.diag([1.0, -1.0, -1.0]), np.array([0.4, 0.1, 0.4]))
    loop.set_target("tool", good)
    loop.step()
    bad_targets = [
        (np.full((4, 4), np.nan), NonFiniteInput),
        (np.eye(3) * 2.0, InvalidTransform),  # not a rotation
        (np.ones(5), InvalidInput),  # no frame-task target of that shape
        ("up", InvalidInput),
    ]
    for bad, error in bad_targets:
        with pytest.raises(error):
            loop.set_target("tool", bad)
    with pytest.raises(ShapeError):
        loop.set_target("tool", velocity=np.ones(3))  # a pose task's velocity has 6 rows
    with pytest.raises(TaskNotFound):
        loop.set_target("hand", good)
    with pytest.raises(InvalidInput):
        loop.set_target("tool")
    loop.step()
    assert np.allclose(tool.target_pose.homogeneous, good.homogeneous)
    assert loop.stats.rejected_targets == len(bad_targets) + 3
    # the posture task takes a configuration, checked too
    with pytest.raises(ShapeError):
        loop.set_target("posture", np.zeros(3))
    loop.set_target("posture", Q0, velocity=np.zeros(7))


def test_a_moving_loop_drives_each_task_by_its_error_at_the_present_configuration():
    """While the arm moves, the solve runs where the motion is headed, but every task's
    velocity comes from its error at the commanded configuration of the tick before
    (Pinocchio's frame pose and difference there); the user's feed-forward velocity is
    never touched, and a reset gives the tasks their own errors back."""
    loop = panda_loop(collision=True, target_timeout=None)
    tool, posture = loop.solver.get_task("tool"), loop.solver.get_task("posture")
    target = pin.SE3(pin.exp3(np.array([0.0, 0.3, 0.0])), np.array([0.45, 0.25, 0.35]))
    feed = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.01])
    loop.set_target("tool", target, velocity=feed)
    model = loop.solver.robot.model
    data = model.createData()
    checked = 0
    for _ in range(200):
        q_before = loop.command.configuration.copy()
        loop.step()
        override = tool.error_override
        if override is None:
            continue
        pin.framesForwardKinematics(model, data, q_before)
        T = data.oMf[model.getFrameId("panda_hand_tcp")]
        expected = np.concatenate(
            [target.translation - T.translation, pin.log3(target.rotation @ T.rotation.T)]
        )
        np.testing.assert_allclose(override, expected, atol=1e-12)
        q_post = posture.target_configuration
        np.testing.assert_allclose(
            posture.error_override, pin.difference(model, q_before, q_post), atol=1e-12
        )
        assert np.abs(tool.get_error() - override).max() > 0.0  # solved elsewhere: ahead
        checked += 1
    assert checked > 100
    np.testing.assert_array_equal(tool.target_velocity, feed)
    loop.reset(Q0)
    assert tool.error_override is None and posture.error_override is None


def _pose(k: int) -> pin.SE3:
    """Target number k: the translation and the rotation both encode k."""
    angle = 1e-4 * (k % 20000)
    return pin.SE3(pin.exp3(np.array([0.0, 0.0, angle])), np.array([0.4, 0.0, 0.3 + 1e-5 * k]))


def _decode(tool: stackik.FrameTask) -> tuple[int, int, int]:
    T = tool.target_pose
    from_t = round((T.translation[2] - 0.3) / 1e-5)
    from_r = round(pin.log3(T.rotation)[2] / 1e-4)
    velocity = tool.target_velocity
    from_v = round(velocity[5] * 1e4) if velocity is not None else -1
    return from_t, from_r, from_v


def test_targets_written_from_another_thread_at_10khz_are_never_torn():
    loop = panda_loop(collision=False, target_timeout=None)
    tool = loop.solver.get_task("tool")
    # The velocity's masked row encodes k as well: it moves nothing, and the loop never
    # writes a task's target velocity (see ControlLoop._present_errors).
    tool.set_orientation_mask([1, 1, 0])
    stop = threading.Event()
    written = [0]

    def writer() -> None:
        k = 1
        while not stop.is_set():
            velocity = np.zeros(6)
            velocity[5] = k * 1e-4
            loop.set_target("tool", _pose(k), velocity=velocity)
            written[0] = k
            k += 1
            time.sleep(1e-4)

    thread = threading.Thread(target=writer)
    thread.start()
    seen = set()
    try:
        for _ in range(2000):
            time.sleep(loop.period)  # the loop at (about) its rate, the writer ten times faster
            loop.step()
            t, r, v = _decode(tool)
            if t:
                assert t % 20000 == r and v == t, (t, r, v)  # all from one set_target
                seen.add(t)
    finally:
        stop.set()
        thread.join()
    assert len(seen) > 500 and written[0] > len(seen)  # many targets, most overwritten


def test_a_tick_keeps_the_gil_and_the_wait_between_ticks_shares_it():
    """Other threads take the GIL while the loop waits, not in the middle of a tick.

    A tick computes with the long switch interval (``quiet_runtime.hold_s``: a thread
    that starts waiting for the GIL meanwhile waits for the tick), the wait between
    ticks with the short one (``switch_s``); both are restored by ``stop``.
    """
    seen_in_ticks: list[float] = []
    loop = panda_loop(
        collision=False, on_command=lambda _: seen_in_ticks.append(sys.getswitchinterval())
    )
    runtime = quiet_runtime()
    switch = sys.getswitchinterval()
    seen_outside: set[float] = set()
    loop.start()
    try:
        while len(seen_in_ticks) < 200:
            seen_outside.add(sys.getswitchinterval())  # (this thread: mostly between ticks)
            time.sleep(2e-4)
    finally:
        loop.stop()
    # (the interval is kept in whole microseconds: 1e-4 reads back as 9.999...e-05)
    assert runtime.hold_s == 0.005 and runtime.switch_s == 1e-4
    assert all(v == pytest.approx(runtime.hold_s, rel=1e-9) for v in seen_in_ticks)
    assert any(v == pytest.approx(runtime.switch_s, rel=1e-9) for v in seen_outside)
    assert sys.getswitchinterval() == switch


def test_the_loops_own_thread_runs_on_schedule_and_restores_the_runtime():
    commands = []
    loop = panda_loop(collision=False, on_command=commands.append)
    switch, gc_enabled = sys.getswitchinterval(), gc.isenabled()
    loop.start(cpu=0, priority=10)
    try:
        assert loop.is_running and not gc.isenabled()
        with pytest.raises(InvalidInput):
            loop.step()
        with pytest.raises(InvalidInput):
            loop.start()
        for k in range(3000):  # targets at ~10 kHz from this thread while it runs
            loop.set_target("tool", _pose(k))
            time.sleep(1e-4)
            if len(commands) > 300:
                break
    finally:
        loop.stop()
    assert not loop.is_running and gc.isenabled() == gc_enabled
    assert sys.getswitchinterval() == switch
    stats = loop.stats
    assert stats.ticks == len(commands) > 300
    assert "CPU" in stats.scheduling and "priority" in stats.scheduling
    assert "deadline misses" in stats.report() and "jitter" in stats.report()
    Q = np.array([c.configuration for c in commands])
    assert_libfranka_ok(Q)


def test_start_warms_the_kernels_up_before_the_first_tick(monkeypatch):
    """A loop started right after the import ticked on the plain Python kernels while the
    compiled ones loaded (2-4 ms a tick at 1 kHz: most deadlines missed). ``start()``
    first runs ``stackik.warmup`` on its solver, before any tick; ``warm=False`` skips it."""
    import stackik.control.loop as loop_module

    seen = []

    def record(*targets):
        seen.append((targets, loop.stats.ticks, stackik.kernel_mode()))
        return 0

    monkeypatch.setattr(loop_module, "warmup", record)
    loop = panda_loop(collision=False)
    loop.start()
    loop.stop()
    assert len(seen) == 1 and seen[0][0] == (loop.solver,) and seen[0][1] == 0
    loop.start(warm=False)
    loop.stop()
    assert len(seen) == 1


def test_an_exception_in_on_command_stops_the_thread_and_is_raised_by_stop():
    def failing(command: stackik.JointCommand) -> None:
        raise RuntimeError("driver gone")

    loop = panda_loop(collision=False, on_command=failing)
    loop.start()
    deadline = time.monotonic() + 5.0
    while loop.is_running and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(RuntimeError, match="driver gone"):
        loop.stop()
    assert gc.isenabled()


def _hull(points: np.ndarray) -> np.ndarray:
    """Counter-clockwise convex hull (monotone chain)."""
    pts = sorted(map(tuple, points))

    def half(seq: list) -> list:
        out: list = []
        for p in seq:
            while (
                len(out) >= 2
                and (
                    (out[-1][0] - out[-2][0]) * (p[1] - out[-2][1])
                    - (out[-1][1] - out[-2][1]) * (p[0] - out[-2][0])
                )
                <= 0
            ):
                out.pop()
            out.append(p)
        return out

    return np.array(half(pts)[:-1] + half(pts[::-1])[:-1])


def _polygon_margin(p: np.ndarray, poly: np.ndarray) -> float:
    edges = np.roll(poly, -1, axis=0) - poly
    normals = np.stack([edges[:, 1], -edges[:, 0]], axis=1)
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    return float(np.min(-np.sum((p - poly) * normals, axis=1)))


def test_humanoid_on_a_floating_base_keeps_its_com_over_the_feet():
    robot = stackik.RobotModel(HUMANOID, floating_base=True, load_visuals=False)
    q = robot.neutral_configuration()
    for name, value in (("hip_pitch", -0.3), ("knee", 0.6), ("ankle_pitch", -0.3)):
        for side in ("left", "right"):
            q[robot.get_joint_config_index(f"{side}_{name}_joint")] = value
    robot.update_kinematics(q)
    corners = [
        robot.get_frame_pose(sole).act(np.array([dx, dy, 0.0]))[:2]
        for sole in ("left_sole", "right_sole")
        for dx, dy in ((-0.1, -0.05), (0.1, -0.05), (0.1, 0.05), (-0.1, 0.05))
    ]
    polygon = _hull(np.array(corners))
    solver = stackik.KinematicsSolver(robot, dt=DT)
    for sole in ("left_sole", "right_sole"):
        solver.add_frame_task(sole, sole).gain = 10.0
    hand = solver.add_frame_task("hand", "right_hand", stackik.TaskType.FRAME_POSITION)
    hand.priority, hand.gain = 1, 5.0
    solver.add_posture_task("posture").priority = 2
    solver.configure_com_constraint(polygon, margin=0.15)
    shrink = solver.get_constraint("com_polygon").shrink  # 0.15 of the mean radius [m]
    # base 1 m/s and 2 rad/s, joints 2 rad/s; 10 rad/s^2 (the model's default); jerk
    speeds = np.r_[[1.0] * 3, [2.0] * 3, [2.0] * (robot.nv - 6)]
    limiter = stackik.JointMotionLimiter(robot, DT, max_velocity=speeds, max_jerk=2000.0)
    loop = stackik.ControlLoop(solver, q, limiter=limiter, target_timeout=None)
    far = robot.get_frame_pose("right_hand").translation + np.array([1.0, -0.5, -0.5])
    loop.set_target("hand", far)  # beyond reach: the CoM constraint must hold the body back
    model = pin.buildModelFromUrdf(str(HUMANOID), pin.JointModelFreeFlyer())
    data = model.createData()
    margins, Q = [], []
    for _ in range(1500):
        command = loop.step()
        Q.append(command.position)
        com = pin.centerOfMass(model, data, command.configuration)[:2]
        margins.append(_polygon_margin(com, polygon))
    assert min(margins) >= shrink - 1e-4  # held at the shrunk polygon, as the plain IK does
    assert margins[-1] < shrink + 1e-3  # and it was pressed against it
    V, A, J = limiter.max_velocity, limiter.max_acceleration, limiter.max_jerk
    v = np.diff(np.array(Q), axis=0) / DT  # the floating base's coordinates included
    a = np.diff(v, axis=0) / DT
    j = np.diff(a, axis=0) / DT
    assert np.all(np.abs(v) <= V * (1 + 1e-7)) and np.all(np.abs(a) <= A * (1 + 1e-7))
    assert np.all(np.abs(j) <= J * (1 + 1e-7))
    assert command.configuration.shape == (robot.nq,)
    assert np.linalg.norm(command.configuration[3:7]) == pytest.approx(1.0)


def test_a_continuous_joint_turns_the_short_way_in_the_loop():
    urdf = """<robot name="spin"><link name="base"/><link name="l1"/><link name="l2"/>
      <joint name="wheel" type="continuous"><parent link="base"/><child link="l1"/>
        <axis xyz="0 0 1"/><limit effort="1" velocity="3"/></joint>
      <joint name="slide" type="prismatic"><parent link="l1"/><child link="l2"/>
        <axis xyz="1 0 0"/><limit lower="-0.2" upper="0.3" effort="1" velocity="0.5"/></joint>
    </robot>"""
    robot = stackik.RobotModel.from_urdf_string(urdf)
    solver = stackik.KinematicsSolver(robot, dt=DT)
    wheel = solver.add_joint_task("wheel", "wheel", 0.0)
    wheel.gain = 10.0
    limiter = stackik.JointMotionLimiter(robot, DT, max_acceleration=5.0, max_jerk=500.0)
    q0 = np.array([np.cos(-3.0), np.sin(-3.0), 0.0])
    loop = stackik.ControlLoop(solver, q0, limiter=limiter, target_timeout=None)
    loop.set_target("wheel", 3.0)  # 0.28 rad away through -pi, 6 rad the long way
    angles = [loop.command.position[0]]
    for _ in range(3000):
        angles.append(loop.step().position[0])
    # down through -pi (0.28 rad), never up through 0 (6 rad); a P task overshoots a little
    assert max(angles) <= -3.0 + 1e-12 and min(angles) > -3.0 - 0.28 - 0.1
    q = loop.q
    assert np.arctan2(q[1], q[0]) == pytest.approx(3.0, abs=1e-4)
    assert angles[-1] == pytest.approx(3.0 - 2 * np.pi, abs=1e-4)


def test_a_blocked_main_task_counts_as_stalled_not_as_failure(record_statuses):
    """A joint task asking past panda_joint4's upper limit: once the joint is at the
    limit the step is zero and the solver reports NO_PROGRESS; the loop counts those
    ticks as stalled, the commanded joint never passes the URDF limit."""
    robot = stackik.RobotModel(PANDA, load_visuals=False)
    limits = stackik.load_motion_limits(robot, PROFILE)
    upper = pin.buildModelFromUrdf(str(PANDA)).upperPositionLimit[3]
    q0 = Q0.copy()
    q0[3] = upper - 0.02
    solver = stackik.KinematicsSolver(robot, dt=DT)
    solver.add_joint_task("j4", "panda_joint4", upper + 0.3)
    statuses = record_statuses(solver)
    limiter = stackik.JointMotionLimiter.from_limits(robot, DT, limits)
    loop = stackik.ControlLoop(solver, q0, limiter=limiter, target_timeout=None)
    Q = np.array([loop.step().configuration for _ in range(1500)])
    assert np.all(Q[:, 3] <= upper + 1e-12)
    assert Q[-1, 3] == pytest.approx(upper, abs=2e-3)  # it went to the limit and stays
    stalled = statuses.count(stackik.SolverStatus.NO_PROGRESS)
    stats = loop.stats
    assert stalled > 100 and stats.stalled_ticks == stalled
    apart = (stackik.SolverStatus.SUCCESS, stackik.SolverStatus.NO_PROGRESS)
    assert stats.infeasible_ticks == statuses.count(stackik.SolverStatus.INFEASIBLE)
    assert stats.solver_failures == sum(
        s not in (*apart, stackik.SolverStatus.INFEASIBLE) for s in statuses
    )
    assert stats.ticks == len(statuses) == 1500
    assert f"stalled ticks {stalled}" in stats.report()
    # what blocks it, by name (the last tick stalled at the limit)
    assert statuses[-1] == stackik.SolverStatus.NO_PROGRESS
    assert robot.get_joint_velocity_index("panda_joint4") == 3
    assert solver.describe_saturation() == [
        "joint 'panda_joint4' (velocity index 3) at a bound of its velocity box, dq = 0"
    ]
