"""Teleoperation in a changing world: a person walks past a working Panda.

The scene of ``examples/teleop_person.py``: ten capsules moved by a sensor thread while
the 1 kHz loop runs. Every commanded configuration of a deterministic run (4500 ticks,
the sensor between ticks) is checked with coal on Pinocchio's forward kinematics, against
the world snapshot the loop read at that tick: never closer than ``min_distance``; the
threaded run (the sensor in its own thread at 1 kHz) is checked at 300 evenly spaced
ticks.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "teleop_person.py"


@pytest.fixture(scope="module")
def scene():
    spec = importlib.util.spec_from_file_location("teleop_person", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["teleop_person"] = module
    spec.loader.exec_module(module)
    return module


def test_every_commanded_configuration_keeps_clear_of_the_person(scene):
    out = scene.run(4.5, threaded=False, sensor_hz=500.0)
    record = out["record"]
    assert len(record["q"]) == 4500
    assert out["versions"] > 50  # the world changed under the loop
    d = scene.closest_distances(out["robot"], record["q"], record["world"])
    assert d.min() >= scene.MIN_DISTANCE - 1e-4
    assert d.min() < scene.MIN_DISTANCE + 0.01  # the person came close: the arm gave way
    lag = out["lag"]
    assert lag.max() > 0.03  # the tool left its circle ...
    assert lag[-1] < 0.005  # ... and went back to it


def test_the_loop_runs_while_a_thread_moves_obstacles_at_1khz(scene):
    out = scene.run(1.5, threaded=True, sensor_hz=1000.0)
    loop = out["loop"]
    assert loop.ticks >= 1500 and not loop.is_running
    stats = loop.stats
    assert stats.ticks >= 1500
    record = out["record"]
    step = max(1, len(record["q"]) // 300)
    d = scene.closest_distances(out["robot"], record["q"][::step], record["world"][::step])
    assert np.all(np.isfinite(d)) and d.min() >= scene.MIN_DISTANCE - 1e-4


#: Run in a child process (a heap corrupted by the race killed the whole interpreter):
#: the loop in its thread, another thread changing the world's layout and the pairs'
#: minimums and reading them back at 200 Hz.
RACE = r"""
import sys, threading, time
import coal, numpy as np, stackik
ROOT = sys.argv[1]
robot = stackik.RobotModel(ROOT + "/robots/panda/panda.urdf",
                           srdf_path=ROOT + "/robots/panda/panda.srdf", load_visuals=False)
q0 = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
kin = robot.create_kinematics(); kin.update(q0)
hand = kin.frame_pose("panda_hand_tcp").translation.copy()
ball = np.eye(4); ball[:3, 3] = hand + [0.2, 0.0, 0.0]
robot.add_obstacle("ball", coal.Sphere(0.05), ball)
solver = stackik.KinematicsSolver(robot, dt=1e-3)
tool = solver.add_frame_task("tool", "panda_hand_tcp", stackik.TaskType.FRAME_POSITION)
tool.gain = 20.0
posture = solver.add_posture_task("posture")
posture.priority, posture.gain = 1, 2.0
solver.configure_collision_constraint(0.05)
limits = stackik.load_motion_limits(robot, ROOT + "/robots/panda/motion_limits.yaml")
limiter = stackik.JointMotionLimiter.from_limits(robot, 1e-3, limits)
loop = stackik.ControlLoop(solver, q0, rate_hz=1000.0, limiter=limiter)
loop.set_target("tool", hand)
far = np.eye(4); far[:3, 3] = [2.0, 2.0, 2.0]
stop = threading.Event(); errors = []; ops = [0]
def other():
    k = 0
    while not stop.is_set():
        try:
            if k % 2 == 0:
                robot.add_obstacle("far", coal.Box(0.05, 0.05, 0.05), far)
            else:
                robot.world.remove_obstacle("far")
            solver.get_collision_pair_min_distance_overrides()  # (the first to see the layout)
            if k % 4 == 0:
                solver.set_collision_pair_min_distance("*", "ball", 0.07)
            elif k % 4 == 2:
                solver.clear_collision_pair_min_distance("*", "ball")
            solver.get_active_collision_pairs()
        except Exception as exc:
            errors.append(repr(exc))
        k += 1; ops[0] = k
        time.sleep(0.005)
loop.start()
thread = threading.Thread(target=other); thread.start()
t0 = time.monotonic()
while time.monotonic() - t0 < 6.0 and loop.is_running:
    loop.set_target("tool", hand)
    time.sleep(0.01)
stop.set(); thread.join()
alive = loop.is_running
loop.stop()  # (re-raises an error of the loop's thread)
print("ALIVE", alive, "TICKS", loop.ticks, "OPS", ops[0], "ERRORS", errors[:3])
"""


def test_pairs_read_and_changed_from_another_thread_while_the_loop_runs(tmp_path):
    """The pairs' getters and minimum setters wait for a running step: they used to
    rebuild the pair set under the step's compiled kernels when the world's layout had
    changed (a heap corrupted, a segfault, or an ``IndexError`` out of the loop; found
    by a review)."""
    import subprocess

    root = str(Path(__file__).resolve().parents[1])
    out = subprocess.run(
        [sys.executable, "-c", RACE, root], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    line = out.stdout.strip().splitlines()[-1]
    assert line.startswith("ALIVE True") and "ERRORS []" in line, line
    ticks = int(line.split("TICKS ")[1].split()[0])
    ops = int(line.split("OPS ")[1].split()[0])
    assert ticks > 3000 and ops > 300, line


def test_rows_appended_from_another_thread_while_the_loop_runs():
    """``append_linear_velocity_constraints`` changed the rows between a step's sizing and
    its writing (the collision kernel releases the GIL in between): a bare ``ValueError``
    ("could not broadcast (4,7) into (3,7)") stopped the loop's thread (found by a
    review). The rows now change between steps."""
    import time
    import warnings

    import pinocchio as pin

    import stackik

    root = Path(__file__).resolve().parents[1] / "robots" / "panda"
    q0 = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
    robot = stackik.RobotModel(
        root / "panda.urdf", srdf_path=root / "panda.srdf", load_visuals=False
    )
    robot.update_kinematics(q0)
    solver = stackik.KinematicsSolver(robot, dt=1 / 500)
    solver.add_frame_task("tool", "panda_hand_tcp").gain = 20.0
    posture = solver.add_posture_task("posture")
    posture.priority, posture.gain = 1, 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solver.configure_collision_constraint(min_distance=0.02)
    limits = stackik.load_motion_limits(robot, root / "motion_limits.yaml")
    limiter = stackik.JointMotionLimiter.from_limits(robot, 1 / 500, limits)
    loop = stackik.ControlLoop(solver, q0, rate_hz=500.0, limiter=limiter, target_timeout=None)
    T0 = robot.get_frame_pose("panda_hand_tcp")
    loop.start()
    calls, t_end = 0, time.monotonic() + 3.0
    while time.monotonic() < t_end and loop.is_running:
        goal = pin.SE3(T0)
        t = calls / 300
        goal.translation = T0.translation + 0.08 * np.array([np.cos(2 * t) - 1, np.sin(2 * t), 0])
        loop.set_target("tool", goal)
        if calls % 10 == 9:
            solver.clear_linear_velocity_constraints()
        else:  # (one harmless row: |dq_0| <= 10 rad/s)
            solver.append_linear_velocity_constraints(np.eye(7)[:1], [-10.0], [10.0])
        calls += 1
        time.sleep(1 / 300)
    running = loop.is_running
    loop.stop()  # (re-raises an error of the loop's thread)
    assert running and loop.ticks > 1000 and calls > 500
    assert loop.stats.solver_failures == 0
    assert solver.get_linear_velocity_constraint_rows() == calls % 10  # (no append lost)
