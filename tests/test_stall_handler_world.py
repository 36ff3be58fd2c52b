"""The stall handler in a world: which margin it relaxes, how it comes back, what it reports.

The handler relaxes the collision constraint's global ``min_distance`` after stalled
steps and restores it as the robot moves again. Every distance here is coal's, with
Pinocchio placements of the robot's geometry (no stackik geometry code).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import coal
import numpy as np
import pinocchio as pin
import pytest

import stackik
from stackik import InvalidInput

PANDA = Path(__file__).resolve().parents[1] / "robots" / "panda"
Q0 = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
TIP = "panda_hand_tcp"


class Referee:
    """coal distances of named robot geometries and obstacles at a configuration."""

    def __init__(self, robot: stackik.RobotModel) -> None:
        self.model = robot.model
        self.data = self.model.createData()
        self.gm = robot.collision_model
        self.gd = pin.GeometryData(self.gm)
        self.obstacles: dict[str, tuple[coal.CollisionGeometry, np.ndarray]] = {}

    def add(self, name: str, shape: coal.CollisionGeometry, pose: np.ndarray) -> None:
        self.obstacles[name] = (shape, np.array(pose, dtype=float))

    def closest(self, q: np.ndarray, pairs: list[tuple[str, str]]) -> float:
        pin.forwardKinematics(self.model, self.data, q)
        pin.updateGeometryPlacements(self.model, self.data, self.gm, self.gd)
        placed = {
            g.name: (g.geometry, self.gd.oMg[i].homogeneous)
            for i, g in enumerate(self.gm.geometryObjects)
        }
        placed.update(self.obstacles)
        request = coal.DistanceRequest()
        request.enable_signed_distance = True
        request.gjk_tolerance = 1e-10
        best = np.inf
        for a, b in pairs:
            (sa, ma), (sb, mb) = placed[a], placed[b]
            ta = coal.Transform3s(ma[:3, :3].copy(), ma[:3, 3].copy())
            tb = coal.Transform3s(mb[:3, :3].copy(), mb[:3, 3].copy())
            best = min(best, coal.distance(sa, ta, sb, tb, request, coal.DistanceResult()))
        return best


def plate_scene(srdf: bool = True) -> tuple[stackik.RobotModel, Referee, np.ndarray]:
    """The Panda with a plate 8 cm under its tool (the tool's position returned)."""
    srdf_path = PANDA / "panda.srdf" if srdf else None
    robot = stackik.RobotModel(PANDA / "panda.urdf", srdf_path=srdf_path)
    referee = Referee(robot)
    robot.update_kinematics(Q0)
    tool = robot.get_frame_pose(TIP).translation.copy()
    pose = np.eye(4)
    pose[:3, 3] = tool + np.array([0.0, 0.0, -0.08])
    robot.add_obstacle("plate", coal.Box(0.3, 0.3, 0.02), pose)
    referee.add("plate", coal.Box(0.3, 0.3, 0.02), pose)
    return robot, referee, tool


def stall_then_leave(
    robot: stackik.RobotModel, tool: np.ndarray, steps: int = 200
) -> tuple[stackik.KinematicsSolver, np.ndarray, list[str]]:
    """Press the tool into the plate 60 steps (the handler relaxes), then lift it away."""
    solver = stackik.KinematicsSolver(robot, dt=0.01)
    task = solver.add_frame_task("tool", TIP)
    task.set_target_position(tool + np.array([0.0, 0.0, -0.25]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stackik.CollisionMarginWarning)
        solver.configure_collision_constraint(min_distance=0.03)
    solver.enable_stall_handler(0.03)
    solver.configure_stall_handler(5, 0.005, 0.3)
    q = Q0.copy()
    for _ in range(60):
        q = robot.integrate(q, solver.solve_velocity(q).solution, solver.dt)
    assert solver.stall_handler_is_relaxed()
    task.set_target_position(tool + np.array([0.0, 0.0, 0.10]))
    statuses = []
    for _ in range(steps):
        result = solver.solve_velocity(q)
        statuses.append(result.status.name)
        q = robot.integrate(q, result.solution, solver.dt)
    return solver, q, statuses


def test_the_margin_comes_back_past_a_fixture_with_a_minimum_of_its_own():
    """A post the user lets the base touch (``min_distance=0``, 4 mm from the base): the
    margin stayed at its 9 mm floor for good, capped by the post's 4 mm."""
    robot, referee, tool = plate_scene()
    post = np.eye(4)
    post[:3, 3] = [-0.219, 0.0, 0.15]
    robot.add_obstacle("post", coal.Box(0.05, 0.05, 0.3), post, min_distance=0.0)
    referee.add("post", coal.Box(0.05, 0.05, 0.3), post)
    solver, q, statuses = stall_then_leave(robot, tool)
    pairs = solver.get_constraint("collision").pair_names()
    post_pairs = [p for p in pairs if "post" in p]
    assert referee.closest(q, post_pairs) == pytest.approx(0.004, abs=1e-4)
    assert referee.closest(q, [p for p in pairs if "plate" in p]) > 0.1
    assert not solver.stall_handler_is_relaxed()
    margin = solver.get_collision_min_distance()
    assert margin == solver.stall_handler_current_min_distance() == 0.03
    assert set(statuses[-100:]) == {"SUCCESS"}


def test_the_margin_comes_back_past_robot_pairs_that_can_never_reach_it():
    """Without the SRDF, two robot pairs can never be 30 mm apart and get lowered minimums
    (5.5 and 14.0 mm); at a relaxed margin they follow it instead. The margin stayed at
    10.9 mm, and the arm stalled in free space 28 steps of 100 where a fresh solver did
    not."""
    robot, referee, tool = plate_scene(srdf=False)
    solver, q, statuses = stall_then_leave(robot, tool)
    assert not solver.stall_handler_is_relaxed()
    assert solver.get_collision_min_distance() == 0.03
    assert set(statuses[-100:]) == {"SUCCESS"}
    pairs = solver.get_constraint("collision").pair_names()
    assert referee.closest(q, [p for p in pairs if "plate" in p]) > 0.1


def test_a_fast_restore_never_starts_a_step_below_the_margin():
    """A restore rate of 0.1 m per step raised the margin from 30 to 100 mm past a ball
    at 98.8 mm that had no rows at the relaxed margin: the next step began violated."""
    robot = stackik.RobotModel(PANDA / "panda.urdf", srdf_path=PANDA / "panda.srdf")
    referee = Referee(robot)
    q = np.array([2.8973, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])  # joint 1 at its upper limit
    robot.update_kinematics(q)
    ball = np.eye(4)
    ball[:3, 3] = robot.get_frame_pose("panda_hand").translation + np.array([0.0, 0.0, 0.3])
    robot.add_obstacle("ball", coal.Sphere(0.03), ball)
    referee.add("ball", coal.Sphere(0.03), ball)
    solver = stackik.KinematicsSolver(robot, dt=0.01)
    joint = solver.add_joint_task("j1", "panda_joint1", 3.5)  # past the limit: a stall
    solver.configure_collision_constraint(0.10, include_pairs=[("panda_link0", "panda_hand")])
    pairs = solver.get_constraint("collision").pair_names()
    ball[2, 3] += 0.09 - referee.closest(q, pairs)  # 90 mm: inside the 100 mm margin
    robot.set_obstacle_pose("ball", ball)
    referee.add("ball", coal.Sphere(0.03), ball)
    solver.enable_stall_handler(0.10)
    solver.configure_stall_handler(3, 0.1, 0.3)
    relaxed = restored = 0
    for k in range(12):
        if k == 4:
            joint.set_target_value(2.80)  # free to move: the margin comes back
        margin = solver.get_collision_min_distance()
        if k >= 4:
            assert referee.closest(q, pairs) >= margin - 1e-6, k
        relaxed += solver.stall_handler_is_relaxed()
        q = robot.integrate(q, solver.solve_velocity(q).solution, solver.dt)
        restored += margin < solver.get_collision_min_distance()
    assert relaxed and restored  # (it relaxed, and it did raise the margin)


def test_changing_the_margin_keeps_the_last_steps_records():
    """Each relax or restore rebuilt the pairs and emptied the records of the step it
    followed: ``get_last_collision_debug()`` was None in 21 of 80 steps and
    ``describe_saturation()`` could not name the pair."""
    robot, referee, tool = plate_scene()
    solver = stackik.KinematicsSolver(robot, dt=0.01)
    solver.add_frame_task("tool", TIP).set_target_position(tool + np.array([0.0, 0.0, -0.25]))
    solver.configure_collision_constraint(min_distance=0.03)
    solver.enable_stall_handler(0.03)
    pairs = solver.get_constraint("collision").pair_names()
    q, changes = Q0.copy(), 0
    for _ in range(80):
        margin = solver.get_collision_min_distance()
        result = solver.solve_velocity(q)
        changes += solver.get_collision_min_distance() != margin
        last = solver.get_last_collision_debug()
        assert last is not None
        assert last.distance == pytest.approx(referee.closest(q, pairs), abs=1e-6)
        assert last.min_distance == margin  # (the step's, not the one set after it)
        for r in result.saturated_constraints:
            assert "collision pair" in solver.engine.constraints_of("collision")[0].describe_row(r)
        q = robot.integrate(q, result.solution, solver.dt)
    assert changes >= 2


def test_pairs_with_a_minimum_of_their_own_keep_it_while_the_margin_is_relaxed():
    """Only the global margin is relaxed: a plate with its own 30 mm minimum holds the
    tool at 30 mm however long it stalls (documented)."""
    robot, referee, tool = plate_scene()
    robot.remove_obstacle("plate")
    pose = referee.obstacles["plate"][1]
    robot.add_obstacle("plate", coal.Box(0.3, 0.3, 0.02), pose, min_distance=0.03)
    solver = stackik.KinematicsSolver(robot, dt=0.01)
    solver.add_frame_task("tool", TIP).set_target_position(tool + np.array([0.0, 0.0, -0.25]))
    solver.configure_collision_constraint(min_distance=0.03)
    solver.enable_stall_handler(0.03)
    plate_pairs = [p for p in solver.get_constraint("collision").pair_names() if "plate" in p]
    q = Q0.copy()
    for _ in range(120):
        result = solver.solve_velocity(q)
        q = robot.integrate(q, result.solution, solver.dt)
        if result.status.name == "SUCCESS":
            assert referee.closest(q, plate_pairs) >= 0.03 - 1e-4
    assert solver.stall_handler_is_relaxed()
    assert solver.stall_handler_current_min_distance() == pytest.approx(0.009)


def test_the_nominal_margin_is_the_margin_in_force():
    """``StallHandler(solver, 0.05)`` on a constraint configured at 20 mm reported 50 mm as
    the effective margin while the constraint held 20 mm."""
    robot, _, _ = plate_scene()
    solver = stackik.KinematicsSolver(robot, dt=0.01)
    solver.configure_collision_constraint(min_distance=0.02)
    handler = stackik.StallHandler(solver, 0.05)
    assert solver.get_collision_min_distance() == handler.current_min_distance == 0.05
    solver.configure_collision_constraint(min_distance=0.04)  # the newest word wins
    assert solver.get_collision_min_distance() == handler.current_min_distance == 0.04


@pytest.mark.parametrize(
    "kind, bad",
    [
        ("stall", {"floor_fraction": 1.5}),
        ("stall", {"restore_rate": -1.0}),
        ("stall", {"stall_threshold": 0}),
        ("stall", {"nominal_min_distance": -0.1}),
        ("band", {"expand_rate": -0.01}),
        ("band", {"decay_rate": 3.0}),
        ("band", {"stall_threshold": -2}),
    ],
)
def test_a_rejected_wrapper_argument_switches_nothing_on(kind, bad):
    robot, _, _ = plate_scene()
    solver = stackik.KinematicsSolver(robot, dt=0.01)
    solver.configure_collision_constraint(min_distance=0.02)
    with pytest.raises(InvalidInput):
        if kind == "stall":
            stackik.StallHandler(solver, **{"nominal_min_distance": 0.02, **bad})
        else:
            stackik.ElasticBandHandler(solver, **bad)
    assert not solver.stall_handler_enabled() and not solver.elastic_band_enabled()
    assert solver.get_collision_min_distance() == 0.02


def loop_at_a_plate() -> tuple[stackik.ControlLoop, stackik.KinematicsSolver, Referee, np.ndarray]:
    """A Panda's `ControlLoop` at 1 kHz (libfranka limits) with a plate 12 cm under its
    tool, the stall handler on at 20 mm (floor 6 mm)."""
    robot = stackik.RobotModel(PANDA / "panda.urdf", srdf_path=PANDA / "panda.srdf")
    referee = Referee(robot)
    q0 = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
    tool = robot.create_kinematics(q0).frame_pose(TIP).translation
    pose = np.eye(4)
    pose[:3, 3] = tool + np.array([0.0, 0.0, -0.12])
    robot.add_obstacle("plate", coal.Box(0.3, 0.3, 0.02), pose)
    referee.add("plate", coal.Box(0.3, 0.3, 0.02), pose)
    solver = stackik.KinematicsSolver(robot, dt=0.001)
    task = solver.add_frame_task("tool", TIP, stackik.TaskType.FRAME_POSITION)
    task.gain = 20.0
    posture = solver.add_posture_task("posture")
    posture.priority, posture.gain = 1, 2.0
    solver.configure_collision_constraint(min_distance=0.02)
    solver.configure_stall_handler(5, 0.005, 0.3)
    solver.enable_stall_handler(0.02)
    limits = stackik.load_motion_limits(robot, PANDA / "motion_limits.yaml")
    limiter = stackik.JointMotionLimiter.from_limits(robot, 0.001, limits)
    loop = stackik.ControlLoop(solver, q0, limiter=limiter, target_timeout=None)
    return loop, solver, referee, tool


def test_in_a_loop_accelerating_toward_a_plate_is_not_a_stall():
    """The loop's motion box holds the tool task's scale low while the arm accelerates:
    every such tick counted as a stall, and the margin fell to its floor with the hand
    100 mm from the plate (no collision row anywhere near its bound)."""
    loop, solver, referee, tool = loop_at_a_plate()
    pairs = [p for p in solver.get_constraint("collision").pair_names() if "plate" in p]
    far = 0
    for _ in range(120):
        loop.set_target("tool", tool + np.array([0.0, 0.0, -0.25]))
        q = loop.step().configuration
        if referee.closest(q, pairs) > 0.075:  # (beyond 20 mm + the 50 mm activation)
            far += 1
            assert solver.get_collision_min_distance() == 0.02
    assert far > 50


def test_in_a_loop_a_restore_never_raises_the_margin_above_the_commanded_distance():
    """The loop solves ahead of the commanded configuration; the restore measured the
    pairs there: the margin went to 11 mm with the arm at 7.7 mm, and the next ticks were
    INFEASIBLE (27 while pulling away), each one counted as a stall again."""
    loop, solver, referee, tool = loop_at_a_plate()
    pairs = [p for p in solver.get_constraint("collision").pair_names() if "plate" in p]
    statuses = []
    original = solver.solve_velocity

    def recorded(*args, **kwargs):
        result = original(*args, **kwargs)
        statuses.append(result.status.name)
        return result

    solver.solve_velocity = recorded  # type: ignore[method-assign]
    raised = 0
    for k in range(2600):
        down = k < 1500  # press into the plate, then pull up
        loop.set_target("tool", tool + np.array([0.0, 0.0, -0.25 if down else 0.05]))
        margin = solver.get_collision_min_distance()
        q = loop.step().configuration
        if solver.get_collision_min_distance() > margin:
            raised += 1
            assert referee.closest(q, pairs) >= solver.get_collision_min_distance() - 1e-5, k
    assert raised > 5 and solver.get_collision_min_distance() == 0.02
    assert "INFEASIBLE" not in statuses[1500:]


def test_a_restore_counts_the_obstacles_own_approach():
    """A plate rising at 0.3 m/s (its velocity given) under a hand lifting away: a restore
    raised the margin to 14.00 mm where the pair was 12.29 mm apart after the step (the
    plate's own motion left out), and the next five steps were COLLISION_VIOLATED."""
    robot, referee, tool = plate_scene()
    solver = stackik.KinematicsSolver(robot, dt=0.01)
    task = solver.add_frame_task("tool", TIP)
    task.set_target_position(tool + np.array([0.0, 0.0, -0.25]))
    solver.configure_collision_constraint(min_distance=0.03)
    solver.configure_stall_handler(5, 0.005, 0.3)
    solver.enable_stall_handler(0.03)
    pairs = [p for p in solver.get_constraint("collision").pair_names() if "plate" in p]
    q = Q0.copy()
    for _ in range(40):
        q = robot.integrate(q, solver.solve_velocity(q).solution, solver.dt)
    assert solver.stall_handler_is_relaxed()
    task.set_target_position(tool + np.array([0.0, 0.0, 0.10]))
    pose = referee.obstacles["plate"][1].copy()
    raised = 0
    for _ in range(60):
        robot.set_obstacle_velocity("plate", [0.0, 0.0, 0.3])
        margin = solver.get_collision_min_distance()
        q = robot.integrate(q, solver.solve_velocity(q).solution, solver.dt)
        pose[2, 3] += 0.3 * solver.dt
        robot.set_obstacle_pose("plate", pose.copy())
        referee.add("plate", coal.Box(0.3, 0.3, 0.02), pose)
        if solver.get_collision_min_distance() > margin:
            raised += 1
            assert referee.closest(q, pairs) >= solver.get_collision_min_distance()
    assert raised


def test_the_restorable_margin_of_unmeasured_pairs_is_the_margin_in_force():
    """Before any step every pair's distance is unknown: it returned -inf."""
    robot, _, _ = plate_scene()
    solver = stackik.KinematicsSolver(robot, dt=0.01)
    solver.configure_collision_constraint(min_distance=0.03)
    constraint = solver.get_constraint("collision")
    assert constraint.restorable_margin(np.zeros(7), 0.01, 0.05) == 0.03
    assert constraint.restorable_margin(np.zeros(7), 0.01, 0.02) == 0.02


@pytest.mark.parametrize("spin", [None, [1e-6, 0.0, 0.0]])
def test_a_halfspace_lets_the_margin_come_back_without_warnings(spin):
    """A halfspace has no farthest point (reach inf): every restore step warned (0 x inf
    in NumPy, an exception under ``-W error``), and any angular velocity given kept the
    margin at its floor for good, the wall 112 mm away. Its rotation counts as observed."""
    robot = stackik.RobotModel(PANDA / "panda.urdf", srdf_path=PANDA / "panda.srdf")
    robot.update_kinematics(Q0)
    tool = robot.get_frame_pose(TIP).translation.copy()
    pose = np.eye(4)
    pose[:3, 3] = tool + np.array([0.08, 0.0, 0.0])
    robot.add_obstacle("wall", coal.Halfspace(np.array([-1.0, 0.0, 0.0]), 0.0), pose)
    solver = stackik.KinematicsSolver(robot, dt=0.01)
    task = solver.add_frame_task("tool", TIP)
    task.set_target_position(tool + np.array([0.25, 0.0, 0.0]))
    solver.configure_collision_constraint(min_distance=0.03)
    solver.configure_stall_handler(5, 0.005, 0.3)
    q, relaxed = Q0.copy(), False
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for k in range(220):
            if k == 80:
                task.set_target_position(tool - np.array([0.10, 0.0, 0.0]))  # away
            if spin is not None:
                robot.set_obstacle_velocity("wall", [0.0, 0.0, 0.0], spin)
            q = robot.integrate(q, solver.solve_velocity(q, stall_recovery=True).solution, 0.01)
            relaxed |= solver.stall_handler_is_relaxed()
    assert relaxed and not solver.stall_handler_is_relaxed()
    assert solver.get_collision_min_distance() == 0.03
