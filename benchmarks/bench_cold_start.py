"""Cold start: from a fresh process to the first solves, with an empty and a warm kernel cache.

Each case runs in a new interpreter (the way a user, a container or a pool worker
starts) on the Panda with a frame task, a posture task, joint limits and self-collision.
The phases, each as wall clock *since process start* (the interpreter's own start-up
included) and as the phase's own time:

* ``import``: ``import stackik``;
* ``setup``: loading the robot and configuring the solver;
* ``warmup``: ``stackik.warmup(solver)`` (only in the warm-up cases);
* ``solve_velocity``: the first ``solve_velocity``;
* ``solve_position``: the first ``solve_position`` (a reachable pose);
* ``find_configs``: the first ``find_configs`` (numeric multi-start, 7-DoF arm, 50 ms
  budget);
* ``compiled``: when the process runs compiled kernels (``stackik._jit.load()`` waits
  for the background switch of a first use that started on plain Python kernels).

By default (``STACKIK_FIRST_USE=python``) a first use runs the kernels as plain Python
while a background thread loads them (on an empty cache: after worker processes have
compiled every kernel); the ``STACKIK_FIRST_USE=wait`` cases load or compile before the
first call returns (the behaviour before; ``--before`` adds its empty-cache case, minutes
on 2 cores). Then ``python examples/demo.py`` with an empty cache (its whole wall time),
and the ten kernels whose compilation cost the most in the empty-cache run, from
``stackik._jit.compile_log()`` (numba's compile events, in this process and in the
worker processes): *self* is the kernel's own compile time (callees compiled while typing
it excluded), *total* includes them.

Run: ``python benchmarks/bench_cold_start.py [--repeat 3] [--skip-demo] [--before]
[--json OUT]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import json, sys, time, warnings
t_start = time.perf_counter()
marks = {}
import numpy as np
import stackik
from stackik import _jit
marks["import"] = time.perf_counter()
robots = sys.argv[1]
robot = stackik.RobotModel(f"{robots}/panda/panda.urdf", srdf_path=f"{robots}/panda/panda.srdf")
solver = stackik.KinematicsSolver(robot, dt=0.01)
solver.add_frame_task("ee", "panda_hand_tcp").set_target_position([0.4, 0.1, 0.4])
solver.add_posture_task("posture").priority = 1
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    solver.configure_collision_constraint(0.02)
q = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
marks["setup"] = time.perf_counter()
if sys.argv[2] == "warmup":
    stackik.warmup(solver)
    marks["warmup"] = time.perf_counter()
solver.solve_velocity(q)
marks["solve_velocity"] = time.perf_counter()
python_first = _jit.runs_python_first() and not _jit.is_compiled()
robot.update_kinematics(np.array([0.3, -0.2, 0.1, -1.9, 0.1, 1.8, 0.5]))
target = robot.get_frame_pose("panda_hand_tcp")
robot.update_kinematics(q)
res = solver.solve_position(q, target, "panda_hand_tcp")
marks["solve_position"] = time.perf_counter()
found = solver.find_configs(target, "panda_hand_tcp", max_solutions=2, time_budget=0.05, seed=1)
marks["find_configs"] = time.perf_counter()
_jit.load()  # waits for the switch to compiled kernels (a first use that ran Python)
marks["compiled"] = time.perf_counter()
log = [list(r) for r in _jit.compile_log()]  # (kernel, own s, total s, in a worker)
print(json.dumps({"t_start": t_start, "marks": marks, "log": log, "python_first": python_first,
                  "position_status": res.status.name, "found": len(found)}))
"""

PHASES = (
    "import",
    "setup",
    "warmup",
    "solve_velocity",
    "solve_position",
    "find_configs",
    "compiled",
)


def _env(cache: str | None, first_use: str = "python") -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), env.get("PYTHONPATH", "")])
    env["STACKIK_FIRST_USE"] = first_use
    if cache is not None:
        env["STACKIK_CACHE_DIR"] = cache
    return env


def probe(mode: str, cache: str | None, first_use: str = "python") -> dict:
    """One fresh process; the phases as wall clock since the process was started.

    Args:
        mode: ``"warmup"`` calls ``stackik.warmup(solver)`` before the solves.
        cache: The cache base folder.
        first_use: ``STACKIK_FIRST_USE``: ``"python"`` (the default: plain Python
            kernels until the background switch) or ``"wait"`` (load or compile first).
    """
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT / "robots"), mode],
        env=_env(cache, first_use),
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    # the child's perf_counter shares the clock with ours (CLOCK_MONOTONIC on Linux)
    boot = result["t_start"] - start
    result["since_start"] = {k: boot + (v - result["t_start"]) for k, v in result["marks"].items()}
    return result


def show(label: str, runs: list[dict]) -> dict[str, float]:
    """Print the best run's phases (cumulative since process start, and own time)."""
    best = min(runs, key=lambda r: r["since_start"]["find_configs"])
    since = best["since_start"]
    cells, prev, own = [], 0.0, {}
    for key in PHASES:
        if key in since:
            own[key] = since[key] - prev
            cells.append(f"{key} {since[key]:6.2f} s (+{own[key]:5.2f})")
            prev = since[key]
    print(f"  {label:36s} " + "  ".join(cells))
    return since


def costliest(log: list[list], count: int = 10) -> list[tuple[str, float, float, int]]:
    """The kernels with the largest own compile time: (name, self s, total s, compiles)."""
    table: dict[str, list[float]] = {}
    for name, own, total, *_ in log:
        row = table.setdefault(name, [0.0, 0.0, 0])
        row[0] += own
        row[1] += total
        row[2] += 1
    ranked = sorted(table.items(), key=lambda item: -item[1][0])
    return [(name, r[0], r[1], int(r[2])) for name, r in ranked[:count]]


def demo_time(cache: str, first_use: str = "python") -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py")],
        env=_env(cache, first_use),
        capture_output=True,
        check=True,
        timeout=1800,
    )
    return time.perf_counter() - start


def run_cases(args: argparse.Namespace) -> dict:
    """Every case; returns the figures (and the empty-cache compile log under "log")."""
    report: dict = {}
    print("wall clock since process start (the phase's own time in brackets; 'compiled':")
    print("when the process runs compiled kernels):")
    with tempfile.TemporaryDirectory() as empty:
        cold = probe("plain", empty)
        report["empty cache"] = show("empty cache", [cold])
        report["log"] = cold["log"]
        warm = [probe("plain", empty) for _ in range(args.repeat)]
        report["warm cache"] = show("warm cache (same folder, next process)", warm)
        report["warm cache, warmup"] = show(
            "warm cache, stackik.warmup(solver)",
            [probe("warmup", empty) for _ in range(args.repeat)],
        )
        report["warm cache, wait"] = show(
            "warm cache, STACKIK_FIRST_USE=wait",
            [probe("plain", empty, "wait") for _ in range(args.repeat)],
        )
    if args.before:
        with tempfile.TemporaryDirectory() as empty:
            report["empty cache, wait"] = show(
                "empty cache, STACKIK_FIRST_USE=wait", [probe("plain", empty, "wait")]
            )
    if not args.skip_demo:
        with tempfile.TemporaryDirectory() as empty:
            report["demo"] = demo_time(empty)
        print(f"  python examples/demo.py, empty cache: {report['demo']:.1f} s")
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per warm case (best)")
    parser.add_argument("--skip-demo", action="store_true", help="do not time the demo")
    parser.add_argument(
        "--before", action="store_true", help="also the empty cache with STACKIK_FIRST_USE=wait"
    )
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args()
    report = run_cases(args)
    log = report.pop("log")
    workers = sum(1 for r in log if r[3])
    print(
        f"compiles in the empty-cache run: {len(log)}, {workers} of them in worker processes "
        f"(own time {sum(r[1] for r in log):.1f} s); the ten costliest kernels:"
    )
    report["costliest"] = costliest(log)
    for name, own, total, count in report["costliest"]:
        print(f"  {own:6.2f} s self  {total:6.2f} s total  x{count}  {name}")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
