"""Benchmark: collision queries on example-robot-data's Panda (issue target: debug <= 2 ms).

Prints, in milliseconds (median / p99 over the calls, this process), for the Panda of
``stackik.robots.load("panda")`` in both mimic layouts, with
``configure_collision_constraint(0.02)``:

* ``evaluate_collision_debug(q)`` (the nearest watched pair: names, witnesses, normal,
  Jacobian row and bound);
* ``evaluate_min_collision_distance(q)``, the reference the target was set against;

at random configurations inside the joint limits. Needs the ``robots`` extra
(example-robot-data).

Run: ``python benchmarks/bench_collision_debug.py [--calls N]``.
"""

from __future__ import annotations

import argparse
import platform
import time
import warnings

import numpy as np

import stackik
from stackik import robots


def timed(fn, qs: list[np.ndarray]) -> tuple[float, float]:
    t = np.empty(len(qs))
    for k, q in enumerate(qs):
        t0 = time.perf_counter()
        fn(q)
        t[k] = time.perf_counter() - t0
    t *= 1e3
    return float(np.median(t)), float(np.percentile(t, 99))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    stackik.warmup()  # compiled kernels from the first timed call, not plain Python
    print(f"stackik {stackik.__version__}, Python {platform.python_version()}")
    print(f"{'call':48s} {'median ms':>10s} {'p99 ms':>10s}")
    for mimic in ("keep", "fold"):
        run_layout(mimic, args.calls)


def run_layout(mimic: str, calls: int) -> None:
    """Time both queries on the Panda loaded with one mimic layout."""
    robot = robots.load("panda", mimic=mimic)
    solver = stackik.KinematicsSolver(robot, dt=0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stackik.CollisionMarginWarning)
        solver.configure_collision_constraint(0.02)
    lo, hi = robot.get_joint_limits()
    rng = np.random.default_rng(0)
    qs = [lo + rng.random(lo.size) * (hi - lo) for _ in range(calls)]
    solver.evaluate_collision_debug(qs[0])  # loads the kernels
    solver.evaluate_min_collision_distance(qs[0])
    for name in ("evaluate_collision_debug", "evaluate_min_collision_distance"):
        med, p99 = timed(getattr(solver, name), qs)
        print(f"{name + ' (' + mimic + ', nq ' + str(robot.nq) + ')':48s} {med:10.3f} {p99:10.3f}")


if __name__ == "__main__":
    main()
