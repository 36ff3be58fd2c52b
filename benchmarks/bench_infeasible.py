"""Benchmark: a velocity step whose constraint set is empty (objects inside the robot).

A person of capsules standing inside the Panda's reach (a sensor that sees them late, a
start inside the minimum distance) makes many pairs penetrate at once: their damper rows
conflict, no velocity satisfies them all, and the step returns the least-violating
solution. Its start point minimises the squared violations of the rows over the joint
velocity box. Solved as one QP with a slack per row (``n + p`` variables), that took
tens of milliseconds for a few hundred rows; solved over the joint velocities alone
(``n`` variables, :func:`stackik.sns.qp.hinge_least_squares`) it takes a fraction of one.

Per scene (``N`` capsules of radius ``r`` at random places in the workspace, fixed
seed), the script prints the step's median time and its rows, then solves the step's
least-violating start both ways in the same process and prints their times and
objectives.

Run: ``python benchmarks/bench_infeasible.py [--steps 50]``.
"""

from __future__ import annotations

import argparse
import platform
import time
import warnings
from pathlib import Path

import coal
import numpy as np

import stackik
from stackik.sns import qp

PANDA = Path(__file__).resolve().parents[1] / "robots" / "panda"
Q = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
SCENES = ((3, 0.1), (10, 0.1), (10, 0.25), (20, 0.25))


def scene(count: int, radius: float) -> tuple[stackik.KinematicsSolver, stackik.RobotModel]:
    """The Panda at Q with its tool task, self-collision and ``count`` capsules in reach."""
    robot = stackik.RobotModel(PANDA / "panda.urdf", srdf_path=PANDA / "panda.srdf")
    robot.update_kinematics(Q)
    solver = stackik.KinematicsSolver(robot, dt=0.001)
    solver.add_frame_task("tool", "panda_hand_tcp").set_target_position([0.4, 0.1, 0.4])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stackik.CollisionMarginWarning)
        solver.configure_collision_constraint(0.05)
    rng = np.random.default_rng(0)
    for k in range(count):
        T = np.eye(4)
        T[:3, 3] = rng.uniform([-0.2, -0.3, 0.1], [0.6, 0.3, 0.9])
        robot.add_obstacle(f"capsule{k}", coal.Capsule(radius, 0.6), T)
    return solver, robot


def timed(fn, repeat: int = 5) -> tuple[float, object]:
    """Smallest wall time of ``repeat`` calls [ms], and the last result."""
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best * 1e3, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=50)
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, python {platform.python_version()}")
    for count, radius in SCENES:
        solver, _ = scene(count, radius)
        stackik.warmup(solver)
        ms = []
        for _ in range(args.steps):
            t = time.perf_counter()
            res = solver.solve_velocity(Q)
            ms.append((time.perf_counter() - t) * 1e3)
        p = solver.build_problem(Q)  # the step's rows (unit joint weights: u = dq)
        print(
            f"\n{count} capsules of radius {radius} m: {res.status.name}, "
            f"{p.C.shape[0]} rows; step median {np.median(ms):.2f} ms, max {max(ms):.2f} ms"
        )
        rows = (p.C, p.lower, p.upper, p.box_lower, p.box_upper)
        lo, hi = p.box_lower, p.box_upper
        t_n, u_n = timed(lambda rows=rows: qp.hinge_least_squares(*rows))
        t_s, u_s = timed(lambda rows=rows: qp.slack_least_squares(*rows), 1)
        f = [
            "did not settle"
            if u is None
            else f"{qp.least_violation_objective(p.C, p.lower, p.upper, np.clip(u, lo, hi)):.9g}"
            for u in (u_n, u_s)
        ]
        print(f"  least-violating start over the joints alone: {t_n:8.2f} ms, objective {f[0]}")
        print(f"  as one QP with a slack per row:              {t_s:8.2f} ms, objective {f[1]}")


if __name__ == "__main__":
    main()
