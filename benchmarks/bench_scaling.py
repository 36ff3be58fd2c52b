"""How one velocity step scales: against the robot's DoF and against the collision pairs.

DoF: each robot's end frames follow small moving pose targets at priority 0, a posture
task below, joint limits on: the Panda (7 DoF), the dual arm (15), the humanoid (31
joints, 37 DoF with its floating base; soles and hands) and ``robots/multi_arm`` (eight
Panda arms, 62 with the floating base; ``robots/tools/multi_arm.py``).

Pairs: the humanoid of ``bench_velocity.py`` problem (C) with self-collision on the
first N of its SRDF-active pairs (N = 0 ... all).

Obstacles: the Panda (self-collision on) in a world of N boxes out of its reach (a ring
3 m away), its tool on a small circle: every robot geometry is paired with every
obstacle, and each pair's distance bound is kept every step.

Printed: median and p99 microseconds of one ``solve_velocity`` call (kinematics
included), per-phase medians and QP fallbacks; ``--plot PATH`` draws both curves
(matplotlib).

Run: ``python benchmarks/bench_scaling.py [--steps N] [--plot docs/images/scaling.png]``.
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np
from bench_velocity import humanoid_solver, stats

import stackik
from stackik.solver import KinematicsSolver

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
DT = 0.01

#: name -> (urdf, floating base, end frames)
BODIES = {
    "panda": (ROBOTS / "panda" / "panda.urdf", False, ["panda_hand_tcp"]),
    "dual_arm": (ROBOTS / "dual_arm" / "dual_arm.urdf", False, ["left_tcp", "right_tcp"]),
    "humanoid": (
        ROBOTS / "humanoid" / "humanoid.urdf",
        True,
        ["left_sole", "right_sole", "left_hand", "right_hand"],
    ),
    "multi_arm": (
        ROBOTS / "multi_arm" / "multi_arm.urdf",
        True,
        [f"arm{i}_tcp" for i in range(8)],
    ),
}


def ready(robot: stackik.RobotModel) -> np.ndarray:
    """A configuration away from limits: the middle of every bounded joint range."""
    q = robot.neutral_configuration()
    lo, hi = robot.get_joint_limits()
    for info in robot.joint_infos:
        i = info.idx_q
        if info.nq == 1 and np.isfinite(lo[i]) and np.isfinite(hi[i]):
            q[i] = 0.5 * (lo[i] + hi[i])
    return q


def time_steps(solver: KinematicsSolver, q: np.ndarray, move, steps: int) -> dict:
    """Median / p99 [us] of ``steps`` closed-loop solves, phases and fallbacks."""
    solver.enable_timing_breakdown(True)
    stackik.warmup(solver)
    robot = solver.robot
    times, phases, fallbacks = [], [], 0
    for i in range(steps + 50):
        move(i)
        t = time.perf_counter()
        res = solver.solve_velocity(q)
        elapsed = time.perf_counter() - t
        q = robot.integrate(q, res.solution, DT)
        if i >= 50:
            times.append(elapsed)
            phases.append(res.timings)
            fallbacks += bool(res.fallback_levels)
    med, p99, _ = stats(times)

    def phase(key: str) -> float:
        return 1e3 * float(np.median([p.get(key, 0.0) for p in phases]))

    return {
        "median": med,
        "p99": p99,
        "kinematics": phase("kinematics_ms"),
        "collision": phase("collision_ms"),
        "problem": phase("problem_ms"),
        "solve": phase("solve_ms"),
        "fallbacks": fallbacks / steps,
    }


def dof_case(name: str, steps: int) -> tuple[int, dict]:
    urdf, floating, frames = BODIES[name]
    robot = stackik.RobotModel(urdf, floating_base=floating)
    q0 = ready(robot)
    robot.update_kinematics(q0)
    solver = KinematicsSolver(robot, dt=DT)
    tasks = [solver.add_frame_task(f, f) for f in frames]
    starts = [robot.get_frame_pose(f) for f in frames]
    solver.add_posture_task("posture").priority = 1

    def move(i: int) -> None:
        a = 2 * np.pi * i / 400
        offset = 0.03 * np.array([np.cos(a), np.sin(a), 0.0])
        for k, (task, T) in enumerate(zip(tasks, starts, strict=True)):
            moving = k % 2 == 0 or name != "humanoid"  # the humanoid's soles stay put
            task.set_target_pose(T.translation + (offset if moving else 0.0), T.rotation)

    return robot.nv, time_steps(solver, q0, move, steps)


def pairs_case(count: int | None, steps: int) -> tuple[int, dict]:
    names = stackik.RobotModel(
        ROBOTS / "humanoid" / "humanoid.urdf",
        floating_base=True,
        srdf_path=ROBOTS / "humanoid" / "humanoid.srdf",
    ).get_collision_pair_names()
    chosen = names if count is None else names[:count]
    solver, q0, move, _ = humanoid_solver(chosen if chosen else None)
    return len(chosen), time_steps(solver, q0, move, steps)


def obstacles_case(count: int, steps: int) -> tuple[int, dict]:
    """The Panda among ``count`` boxes out of reach; returns (watched pairs, figures)."""
    import warnings

    import coal
    import pinocchio as pin

    robot = stackik.RobotModel(
        ROBOTS / "panda" / "panda.urdf",
        srdf_path=ROBOTS / "panda" / "panda.srdf",
        load_visuals=False,
    )
    for k in range(count):
        a = 2 * np.pi * k / count
        centre = np.array([3.0 * np.cos(a), 3.0 * np.sin(a), 0.5])
        robot.add_obstacle(f"box{k}", coal.Box(0.1, 0.1, 0.1), pin.SE3(np.eye(3), centre))
    q0 = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
    robot.update_kinematics(q0)
    solver = KinematicsSolver(robot, dt=DT)
    tool = solver.add_frame_task("tool", "panda_hand_tcp")
    solver.add_posture_task("posture").priority = 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stackik.CollisionMarginWarning)
        solver.configure_collision_constraint(0.02)
    start = robot.get_frame_pose("panda_hand_tcp")

    def move(i: int) -> None:
        a = 2 * np.pi * i / 400
        offset = 0.05 * np.array([np.cos(a) - 1.0, np.sin(a), 0.0])
        tool.set_target_pose(start.translation + offset, start.rotation)

    pairs = len(solver.get_constraint("collision").pair_names())  # type: ignore[union-attr]
    return pairs, time_steps(solver, q0, move, steps)


def row(label: str, r: dict) -> str:
    return (
        f"  {label:>12s}  median {r['median']:7.1f}  p99 {r['p99']:7.1f}   kinematics "
        f"{r['kinematics']:5.1f}  collision {r['collision']:6.1f}  problem {r['problem']:6.1f}  "
        f"solve {r['solve']:6.1f}  QP fallback {100 * r['fallbacks']:3.0f} %"
    )


def plot(path: str, dof: list, pairs: list) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, data, xlabel in (
        (axes[0], dof, "velocity DoF (nv)"),
        (axes[1], pairs, "collision pairs watched (humanoid)"),
    ):
        x = [d[0] for d in data]
        for key, style in (("median", "o-"), ("p99", "s--")):
            ax.plot(x, [d[1][key] for d in data], style, label=key)
        ax.plot(x, [d[1]["solve"] for d in data], "^:", label="SNS solve (median)")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("one step [us]")
        ax.grid(alpha=0.3)
        ax.legend()
    axes[0].set_title("step time against DoF")
    axes[1].set_title("step time against collision pairs")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--plot", default=None, help="write the figure (PNG) here")
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, python {platform.python_version()}")
    print("DoF scaling (frame tasks at priority 0, posture, limits):")
    dof = []
    for name in BODIES:
        nv, r = dof_case(name, args.steps)
        dof.append((nv, r))
        print(row(f"{name} {nv}", r))
    print("collision pairs (humanoid, problem C + self-collision on N pairs):")
    pairs = []
    for count in (0, 25, 50, 100, 200, None):
        n, r = pairs_case(count, args.steps)
        pairs.append((n, r))
        print(row(f"{n} pairs", r))
    print("obstacles (Panda with self-collision, N boxes out of reach):")
    for count in (0, 10, 100, 300, 1000):
        n, r = obstacles_case(count, args.steps)
        print(row(f"{count} boxes, {n} pairs", r))
    if args.plot:
        plot(args.plot, dof, pairs)


if __name__ == "__main__":
    main()
