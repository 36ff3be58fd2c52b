"""Timing of the SNS velocity core on Panda-sized problems (a script, not a test).

Problems:
  (a) 7 joints, 2 levels: a 6-row frame task and a 7-row posture task, with a joint
      velocity box; the frame velocities are drawn so that a good share of the
      solves saturate joints and scale the task.
  (b) the same plus 10 general inequality rows (collision-like half-spaces), some
      of them active.
  (c) 12 joints (two 6-joint arms' worth), a 6-row frame task and a 12-row posture
      task, the box and 10 general rows: the posture level keeps 6 null-space
      directions, and when the greedy saturation finds no feasible scale for it the
      level's exact QP runs (in the compiled kernel).
  (d) humanoid-sized: 37 variables (a floating base of 6 and 31 joints), both feet
      (12 rows, base and leg columns), a hand (3 rows), a posture of the 31 joints,
      the box and 4 CoM-like rows; the posture level needs the QP in most solves.

Reports median / p99 / max wall-clock microseconds per ``SNSSolver.solve`` call
(end to end from Python: input checks, copies, kernel, result object), the median
CPU time of the calling thread (``time.thread_time``, robust to other load on the
machine), the share of solves that saturated something, and the share that needed
the QP fallback.

Run: ``PYTHONPATH=python python benchmarks/bench_sns.py [--solves N]``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import numpy as np

import stackik
from stackik.sns import SNSSolver

PANDA_VMAX = np.array([2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61])  # rad/s


def make_problems(rng: np.random.Generator, count: int, rows: int):
    """Random Panda-like problems: (goals, jacobians, C, lower, upper, box_lo, box_hi)."""
    problems = []
    for _ in range(count):
        # Geometric-Jacobian-like scales: linear rows ~0.3-0.8 m/rad, angular rows ~1.
        J1 = np.vstack([rng.uniform(-0.8, 0.8, (3, 7)), rng.uniform(-1.0, 1.0, (3, 7))])
        x1 = np.concatenate([rng.normal(0, 0.8, 3), rng.normal(0, 1.2, 3)])
        J2 = np.eye(7)
        x2 = rng.normal(0, 0.5, 7)
        # Box = velocity limits intersected with position-limit braking (sometimes tight).
        box_lo = -PANDA_VMAX * rng.uniform(0.2, 1.0, 7)
        box_hi = PANDA_VMAX * rng.uniform(0.2, 1.0, 7)
        if rows:
            C = rng.normal(0, 1, (rows, 7))
            lower = np.full(rows, -np.inf)
            upper = rng.uniform(0.2, 3.0, rows)
        else:
            C = lower = upper = None
        problems.append(([x1, x2], [J1, J2], C, lower, upper, box_lo, box_hi))
    return problems


def make_redundant(rng: np.random.Generator, count: int, n: int = 12, rows: int = 10):
    """Problems (c): a 6-row frame task and a posture over ``n`` joints, box, ``rows`` rows."""
    problems = []
    for _ in range(count):
        J1 = np.vstack([rng.uniform(-0.8, 0.8, (3, n)), rng.uniform(-1.0, 1.0, (3, n))])
        x1 = np.concatenate([rng.normal(0, 0.8, 3), rng.normal(0, 1.2, 3)])
        x2 = rng.normal(0, 0.5, n)
        box_lo = -2.0 * rng.uniform(0.2, 1.0, n)
        box_hi = 2.0 * rng.uniform(0.2, 1.0, n)
        C = rng.normal(0, 1, (rows, n))
        lower = np.full(rows, -np.inf)
        upper = rng.uniform(0.2, 3.0, rows)
        problems.append(([x1, x2], [J1, np.eye(n)], C, lower, upper, box_lo, box_hi))
    return problems


def make_humanoid(rng: np.random.Generator, count: int):
    """Problems (d): feet, hand and posture on a floating base (37 variables), box, CoM rows."""
    n = 37
    legs = (np.arange(6, 12), np.arange(12, 18))
    arm = np.arange(25, 32)
    problems = []
    for _ in range(count):
        feet = np.zeros((12, n))
        for f, leg in enumerate(legs):
            feet[6 * f : 6 * f + 6, :6] = np.eye(6) + rng.uniform(-0.3, 0.3, (6, 6))
            feet[6 * f : 6 * f + 6, leg] = rng.uniform(-0.8, 0.8, (6, 6))
        hand = np.zeros((3, n))
        hand[:, :6] = rng.uniform(-1.0, 1.0, (3, 6))
        hand[:, arm] = rng.uniform(-0.6, 0.6, (3, arm.size))
        posture = np.hstack([np.zeros((n - 6, 6)), np.eye(n - 6)])
        goals = [rng.normal(0, 0.05, 12), rng.normal(0, 0.8, 3), rng.normal(0, 0.5, n - 6)]
        com = np.zeros((4, n))
        com[:, :18] = rng.normal(0, 0.3, (4, 18))
        box_lo = np.concatenate([np.full(6, -np.inf), -rng.uniform(0.3, 2.0, n - 6)])
        box_hi = np.concatenate([np.full(6, np.inf), rng.uniform(0.3, 2.0, n - 6)])
        lower = -rng.uniform(0.05, 0.3, 4)
        upper = rng.uniform(0.05, 0.3, 4)
        problems.append((goals, [feet, hand, posture], com, lower, upper, box_lo, box_hi))
    return problems


def run(problems, solves: int) -> dict[str, float]:
    n = problems[0][1][0].shape[1]
    solver = SNSSolver(n)
    for goals, jacs, C, lo, hi, bl, bu in problems:  # warm up (compile / load cache)
        solver.solve(goals, jacs, C, lo, hi, box_lower=bl, box_upper=bu)
    times = np.empty(solves)
    cpu = np.empty(solves)
    saturated = fallback = scaled = 0
    clock = time.perf_counter_ns
    cpu_clock = time.thread_time_ns
    count = len(problems)
    for i in range(solves):
        goals, jacs, C, lo, hi, bl, bu = problems[i % count]
        c0 = cpu_clock()
        t0 = clock()
        res = solver.solve(goals, jacs, C, lo, hi, box_lower=bl, box_upper=bu)
        times[i] = clock() - t0
        cpu[i] = cpu_clock() - c0
        if i < count:
            assert res.success, res.status_message
            saturated += bool(res.saturated_joints or res.saturated_constraints)
            scaled += bool(res.task_scales[0] < 1.0)
            fallback += "QP fallback" in res.status_message
    us = times / 1e3
    n = min(count, solves)
    return {
        "median": float(np.median(us)),
        "p99": float(np.percentile(us, 99)),
        "max": float(us.max()),
        "cpu": float(np.median(cpu) / 1e3),
        "saturated": saturated / n,
        "scaled": scaled / n,
        "fallback": fallback / n,
    }


def import_and_compile_times() -> tuple[float, float]:
    """Fresh-process timings: ``import stackik.sns`` and the first solve (cache load)."""
    code = (
        "import time; t=time.perf_counter(); import stackik.sns as s; "
        "t1=time.perf_counter(); import numpy as np; "
        "r=s.solve([np.ones(1)],[np.ones((1,3))]); t2=time.perf_counter(); "
        "print(t1-t, t2-t1)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    imp, first = (float(v) for v in out.stdout.split())
    return imp, first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solves", type=int, default=50_000)
    parser.add_argument("--problems", type=int, default=2_000)
    args = parser.parse_args()
    stackik.warmup()  # compiled kernels from the first timed call, not plain Python
    rng = np.random.default_rng(0)
    imp, first = import_and_compile_times()
    print(
        f"import stackik.sns: {imp * 1e3:.1f} ms; first solve in a fresh process "
        f"(numba import + cached-kernel load): {first * 1e3:.0f} ms"
    )
    cases = (
        ("(a) 7 joints, frame(6) + posture(7), box", lambda: make_problems(rng, args.problems, 0)),
        ("(b) same + 10 general rows", lambda: make_problems(rng, args.problems, 10)),
        (
            "(c) 12 joints, frame(6) + posture(12), box + 10 rows",
            lambda: make_redundant(rng, args.problems),
        ),
        (
            "(d) 37 variables, feet(12) + hand(3) + posture(31), box + 4 rows",
            lambda: make_humanoid(rng, args.problems),
        ),
    )
    for label, make in cases:
        stats = run(make(), args.solves)
        print(
            f"{label}: median {stats['median']:.1f} us, p99 {stats['p99']:.1f} us, "
            f"max {stats['max']:.1f} us, CPU median {stats['cpu']:.1f} us | saturating "
            f"{stats['saturated']:.0%}, first task scaled {stats['scaled']:.0%}, "
            f"QP fallback {stats['fallback']:.1%}"
        )


if __name__ == "__main__":
    main()
