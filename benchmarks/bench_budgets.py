"""How far global IK runs past its time budget (the budget contract of docs/reliability.md).

``find_configs`` and ``nearest_config`` check their deadline between every start,
candidate and alternate: the promise is an overrun under 1 ms plus one validation
callback. This script measures the overrun (elapsed wall time minus the budget) on
queries that must use the whole budget, in three settings:

* ``plain``: an unreachable target (the search runs to its deadline);
* ``alternates + slow callback``: ``include_alternates=True`` and a ``validate`` callback
  that sleeps 2 ms and rejects everything;
* ``collision``: a collision constraint on the solver (every candidate gets a distance
  check) and a reachable target with ``max_solutions`` too large to be met.

Run: ``PYTHONPATH=python python benchmarks/bench_budgets.py [--n 200] [--budget 0.005]``.
"""

from __future__ import annotations

import argparse
import platform
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pinocchio as pin

import stackik
from stackik import CollisionMarginWarning, KinematicsSolver, RobotModel

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
SLEEP = 0.002


def overruns(query: Callable[[], object], budget: float, n: int) -> np.ndarray:
    """Elapsed minus budget [ms] of ``n`` calls."""
    out = np.empty(n)
    for k in range(n):
        t0 = time.perf_counter()
        query()
        out[k] = (time.perf_counter() - t0 - budget) * 1e3
    return out


def report(name: str, over: np.ndarray, allowance_ms: float) -> None:
    print(
        f"  {name:28s} overrun median {np.median(over):7.3f} ms  p99 "
        f"{np.percentile(over, 99):7.3f} ms  max {over.max():7.3f} ms  "
        f"(promise: < {1.0 + allowance_ms:.1f} ms)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="queries per setting")
    parser.add_argument("--budget", type=float, default=0.005, help="time budget [s]")
    args = parser.parse_args()
    stackik.warmup()  # compiled kernels from the first timed call, not plain Python
    print(f"{platform.machine()}, Python {platform.python_version()}, budget {args.budget} s")
    ur5 = RobotModel(ROBOTS / "ur5" / "ur5.urdf", srdf_path=ROBOTS / "ur5" / "ur5.srdf")
    solver = KinematicsSolver(ur5)
    solver.prepare_global_ik("tool0")
    q = np.array([0.3, -1.2, 1.4, -1.8, -1.5, 0.2])
    reachable = ur5.create_kinematics(q).frame_pose("tool0")
    far = pin.SE3(np.eye(3), np.array([5.0, 0.0, 0.0]))
    budget = args.budget

    def slow(_: np.ndarray) -> bool:
        time.sleep(SLEEP)
        return False

    print("UR5 find_configs / nearest_config")
    report(
        "plain (unreachable)",
        overruns(lambda: solver.find_configs(far, "tool0", 1, budget), budget, args.n),
        0.0,
    )
    report(
        "alternates + slow callback",
        overruns(
            lambda: solver.find_configs(
                reachable, "tool0", 64, budget, validate=slow, include_alternates=True
            ),
            budget,
            args.n,
        ),
        SLEEP * 1e3,
    )
    report(
        "nearest + slow callback",
        overruns(
            lambda: solver.nearest_config(reachable, "tool0", q, budget, validate=slow),
            budget,
            args.n,
        ),
        SLEEP * 1e3,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionMarginWarning)
        solver.configure_collision_constraint(0.01)
    report(
        "collision (64 wanted)",
        overruns(lambda: solver.find_configs(reachable, "tool0", 64, budget), budget, args.n),
        0.0,
    )


if __name__ == "__main__":
    main()
