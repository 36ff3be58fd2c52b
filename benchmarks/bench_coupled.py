"""Benchmark: one velocity step of a robot with kept mimic joints, keep against fold.

The keep layout (``mimic="keep"``, the default) solves each step in the couplings' null
space (``v = G z + v0``); the fold layout has no couplings to solve. Both on
``tests/data/gripper.urdf`` (an arm with two mimic followers), and the Panda (no
couplings) for reference: a frame task and a posture task, ``solve_velocity(q)`` after
200 warm-up steps. Printed: median and p99 of one step [µs]. Timing depends on the
machine and on what else runs on it; run it on a quiet machine, several times.

Run: ``python benchmarks/bench_coupled.py [--steps N]``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import stackik

ROOT = Path(__file__).resolve().parents[1]


def step_times(robot: stackik.RobotModel, tip: str, q: np.ndarray, steps: int) -> np.ndarray:
    """Times of ``steps`` velocity steps [s] at ``q`` of a frame task and a posture task."""
    solver = stackik.KinematicsSolver(robot, dt=0.001)
    solver.add_frame_task("tip", tip)
    solver.add_posture_task("posture").priority = 1
    for _ in range(200):
        solver.solve_velocity(q)
    out = np.empty(steps)
    for k in range(steps):
        t0 = time.perf_counter()
        solver.solve_velocity(q)
        out[k] = time.perf_counter() - t0
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    args = parser.parse_args()
    stackik.warmup()  # compiled kernels from the first timed call, not plain Python
    cases = [
        (
            "panda (no couplings)",
            ROOT / "robots" / "panda" / "panda.urdf",
            "keep",
            "panda_hand_tcp",
        ),
        ("gripper, keep", ROOT / "tests" / "data" / "gripper.urdf", "keep", "tcp"),
        ("gripper, fold", ROOT / "tests" / "data" / "gripper.urdf", "fold", "tcp"),
    ]
    for label, path, layout, tip in cases:
        robot = stackik.RobotModel(path, mimic=layout, load_visuals=False, load_collisions=False)
        q = robot.apply_mimic(robot.neutral_configuration())
        if robot.nq == 7:  # the Panda: its ready pose
            q = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
        t = step_times(robot, tip, q, args.steps) * 1e6
        print(f"{label:24s} median {np.median(t):7.1f} µs   p99 {np.percentile(t, 99):7.1f} µs")


if __name__ == "__main__":
    main()
