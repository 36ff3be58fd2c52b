"""Benchmark: one velocity-IK step (kinematics update included), stackik vs EmbodiK vs pink.

Problems, all on robots shipped in ``robots/`` and run in this one process:

(A) Panda: frame task on ``panda_hand_tcp`` following a moving target (priority 0),
    posture task below it (priority 1), joint position and velocity limits;
    ``q += dq * dt`` for 2000 steps.
(B) The same with self-collision avoidance on every pair the SRDF leaves active; the
    target passes close to the robot's base, so collision rows are active for part of
    the run.
(C) Humanoid on a floating base (37 DoF): both sole frames held (priority 0), the right
    hand reaching forward and sideways (priority 1), the CoM kept over the support
    polygon of the two feet, posture (priority 2).

Printed per library: median / p99 / max microseconds per solve call (the library's
kinematics update included; target setting and integration outside), and the ratio of each
peer's median and p99 to stackik's. pink is a weighted QP (no strict priorities) and
has no CoM-polygon constraint; EmbodiK and pink are skipped when not installed
(``pip install -e ".[bench]"``).

Run: ``python benchmarks/bench_velocity.py [--steps N]``.
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import stackik
from stackik.model.loading import parse_srdf_disabled_pairs
from stackik.solver import KinematicsSolver

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
PANDA = ROBOTS / "panda" / "panda.urdf"
PANDA_SRDF = ROBOTS / "panda" / "panda.srdf"
HUMANOID = ROBOTS / "humanoid" / "humanoid.urdf"
HUMANOID_SRDF = ROBOTS / "humanoid" / "humanoid.srdf"
TOOL = "panda_hand_tcp"
DT = 0.01
Q_PANDA = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])


def stats(samples: list[float]) -> tuple[float, float, float]:
    """Median, p99 and max of samples given in seconds, in microseconds."""
    a = np.asarray(samples) * 1e6
    return float(np.median(a)), float(np.percentile(a, 99)), float(a.max())


def run(step: Callable[[int], float], steps: int, warmup: int = 50) -> tuple[float, float, float]:
    """Run ``steps`` steps; each returns the seconds its solve call took (kinematics included).

    Setting targets and integrating ``q`` happen outside the timed call, alike for every
    library.
    """
    for i in range(warmup):
        step(i)
    return stats([step(i) for i in range(steps)])


def panda_target(i: int, collide: bool) -> tuple[np.ndarray, np.ndarray]:
    """Moving tool target (position [m], rotation) at step ``i``."""
    R = np.diag([1.0, -1.0, -1.0])  # tool pointing down
    a = 2 * np.pi * i / 400
    if collide:  # sweeps through the space next to the base: drives the hand into the arm
        p = np.array([0.05 + 0.15 * np.cos(a), 0.15 * np.sin(a), 0.15])
    else:
        p = np.array([0.45 + 0.1 * np.cos(a), 0.1 * np.sin(a), 0.45])
    return p, R


# -- stackik ---------------------------------------------------------------------------
def stackik_panda(collide: bool) -> Callable[[int], float]:
    robot = stackik.RobotModel(PANDA, srdf_path=PANDA_SRDF)
    solver = KinematicsSolver(robot, dt=DT)
    robot.update_kinematics(Q_PANDA)
    ee = solver.add_frame_task("ee", TOOL)
    ee.gain = 10.0
    post = solver.add_posture_task("posture")
    post.priority = 1
    if collide:
        solver.configure_collision_constraint(0.02)
    state = {"q": Q_PANDA.copy()}

    def step(i: int) -> np.ndarray:
        p, R = panda_target(i, collide)
        ee.set_target_pose(p, R)
        t = time.perf_counter()
        res = solver.solve_velocity(state["q"])
        elapsed = time.perf_counter() - t
        state["q"] = robot.integrate(state["q"], res.solution, DT)
        return elapsed

    return step


def humanoid_setup() -> tuple[np.ndarray, np.ndarray]:
    """Initial configuration (knees bent) and the support polygon corners [m]."""
    robot = stackik.RobotModel(HUMANOID, floating_base=True)
    q = robot.neutral_configuration()
    for name, v in (("hip_pitch", -0.3), ("knee", 0.6), ("ankle_pitch", -0.3)):
        for side in ("left", "right"):
            q[robot.get_joint_config_index(f"{side}_{name}_joint")] = v
    robot.update_kinematics(q)
    corners = []
    for sole in ("left_sole", "right_sole"):
        T = robot.get_frame_pose(sole)
        for dx in (-0.1, 0.1):
            for dy in (-0.05, 0.05):
                corners.append(T.act(np.array([dx, dy, 0.0]))[:2])
    return q, convex_hull(np.array(corners))


def convex_hull(points: np.ndarray) -> np.ndarray:
    """Counter-clockwise convex hull of 2-D points (Andrew's monotone chain)."""
    pts = sorted(map(tuple, points))

    def turn(o: tuple, a: tuple, b: tuple) -> float:
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    def half(seq: list) -> list:
        out: list = []
        for p in seq:
            while len(out) >= 2 and turn(out[-2], out[-1], p) <= 0:
                out.pop()
            out.append(p)
        return out

    lower, upper = half(pts), half(pts[::-1])
    return np.array(lower[:-1] + upper[:-1])


def hand_target(i: int, start: np.ndarray) -> np.ndarray:
    a = 2 * np.pi * i / 500
    return start + np.array([0.25 + 0.1 * np.sin(a), -0.2, 0.1 * np.cos(a)])


def stackik_humanoid() -> Callable[[int], float]:
    robot = stackik.RobotModel(HUMANOID, floating_base=True, srdf_path=HUMANOID_SRDF)
    q0, polygon = humanoid_setup()
    robot.update_kinematics(q0)
    solver = KinematicsSolver(robot, dt=DT)
    for sole in ("left_sole", "right_sole"):
        solver.add_frame_task(sole, sole).gain = 10.0
    hand = solver.add_frame_task("hand", "right_hand", stackik.tasks.TaskType.FRAME_POSITION)
    hand.priority, hand.gain = 1, 5.0
    post = solver.add_posture_task("posture")
    post.priority = 2
    solver.configure_com_constraint(polygon, margin=0.1)
    start = robot.get_frame_pose("right_hand").translation.copy()
    state = {"q": q0.copy()}

    def step(i: int) -> np.ndarray:
        hand.set_target_position(hand_target(i, start))
        t = time.perf_counter()
        res = solver.solve_velocity(state["q"])
        elapsed = time.perf_counter() - t
        state["q"] = robot.integrate(state["q"], res.solution, DT)
        return elapsed

    return step


# -- EmbodiK ---------------------------------------------------------------------------
def embodik_panda(collide: bool) -> Callable[[int], float]:
    import embodik

    robot = embodik.RobotModel(str(PANDA), False)
    solver = embodik.KinematicsSolver(robot)
    solver.dt = DT
    ee = solver.add_frame_task("ee", TOOL)
    post = solver.add_posture_task("posture")
    post.priority = 1
    post.set_target_configuration(Q_PANDA)
    if collide:
        robot.apply_collision_exclusions(parse_srdf_disabled_pairs(PANDA_SRDF.read_text(), "srdf"))
        solver.configure_collision_constraint(0.02, max_constraints=8)
    state = {"q": Q_PANDA.copy()}

    def step(i: int) -> np.ndarray:
        p, R = panda_target(i, collide)
        ee.set_target_pose(p, R)
        t = time.perf_counter()
        res = solver.solve_velocity(state["q"], True)
        elapsed = time.perf_counter() - t
        state["q"] = state["q"] + np.asarray(res.solution) * DT
        return elapsed

    return step


def embodik_humanoid() -> Callable[[int], float]:
    import embodik

    robot = embodik.RobotModel(str(HUMANOID), True)
    q0, polygon = humanoid_setup()
    robot.update_configuration(q0)
    solver = embodik.KinematicsSolver(robot)
    solver.dt = DT
    for sole in ("left_sole", "right_sole"):
        t = solver.add_frame_task(sole, sole)
        T = robot.get_frame_pose(sole)
        t.set_target_pose(np.asarray(T.translation), np.asarray(T.rotation))
    hand = solver.add_frame_task("hand", "right_hand", embodik.TaskType.FRAME_POSITION)
    hand.priority = 1
    post = solver.add_posture_task("posture")
    post.priority = 2
    post.set_target_configuration(q0)
    solver.configure_com_constraint(polygon, margin=0.1)
    start = np.asarray(robot.get_frame_pose("right_hand").translation).copy()
    state = {"q": q0.copy()}

    def step(i: int) -> np.ndarray:
        hand.set_target_position(hand_target(i, start))
        t = time.perf_counter()
        res = solver.solve_velocity(state["q"], True)
        elapsed = time.perf_counter() - t
        state["q"] = np.asarray(robot.integrate(state["q"], np.asarray(res.solution), DT))
        return elapsed

    return step


# -- pink ------------------------------------------------------------------------------
def pink_panda(collide: bool) -> Callable[[int], float]:
    import pink
    import pinocchio as pin

    robot = stackik.RobotModel(PANDA, srdf_path=PANDA_SRDF)
    model = robot.model
    kwargs = {}
    barriers = []
    if collide:
        gm = robot.collision_model
        kwargs = {"collision_model": gm, "collision_data": pin.GeometryData(gm)}
        barriers = [pink.barriers.SelfCollisionBarrier(len(gm.collisionPairs), d_min=0.02)]
    config = pink.Configuration(model, model.createData(), Q_PANDA.copy(), **kwargs)
    ee = pink.tasks.FrameTask(TOOL, position_cost=1.0, orientation_cost=1.0, gain=1.0)
    post = pink.tasks.PostureTask(cost=1e-3)
    post.set_target(Q_PANDA)
    state = {"q": Q_PANDA.copy()}

    def step(i: int) -> np.ndarray:
        p, R = panda_target(i, collide)
        ee.set_target(pin.SE3(R, p))
        t = time.perf_counter()
        config.update(state["q"])  # pink's kinematics update
        v = pink.solve_ik(
            config, [ee, post], DT, solver="quadprog", barriers=barriers, safety_break=False
        )
        elapsed = time.perf_counter() - t
        state["q"] = pin.integrate(model, state["q"], v * DT)
        return elapsed

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args()
    print(
        f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}"
    )
    problems = {
        "A": {
            "stackik": lambda: stackik_panda(False),
            "embodik": lambda: embodik_panda(False),
            "pink": lambda: pink_panda(False),
        },
        "B": {
            "stackik": lambda: stackik_panda(True),
            "embodik": lambda: embodik_panda(True),
            "pink": lambda: pink_panda(True),
        },
        "C": {"stackik": stackik_humanoid, "embodik": embodik_humanoid},
    }
    for name, libs in problems.items():
        print(f"\nproblem ({name}): {args.steps} steps, microseconds per step")
        base = None
        for lib, make in libs.items():
            try:
                step = make()
            except ImportError as exc:
                print(f"  {lib:8s} skipped ({exc})")
                continue
            med, p99, mx = run(step, args.steps)
            ratio = ""
            if base is None:
                base = (med, p99)
            else:
                ratio = f"  ({med / base[0]:.2f}x / {p99 / base[1]:.2f}x stackik)"
            print(f"  {lib:8s} median {med:8.1f}  p99 {p99:8.1f}  max {mx:9.1f}{ratio}")


if __name__ == "__main__":
    main()
