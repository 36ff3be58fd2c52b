"""Cold start: from a fresh process to the first ``solve_velocity``, with and without warm-up.

Each case runs in a new interpreter (the way a teleop process starts) on the Panda with
a frame task, a posture task and self-collision, and prints:

* ``import``: ``import stackik``;
* ``setup``: loading the robot and configuring the solver;
* ``warmup``: ``stackik.warmup(solver)`` (only in the warm-up cases);
* ``first solve`` and ``second solve``.

Cases: the kernel cache warm (compiled earlier) without and with ``warmup``; the kernel
cache empty (a fresh ``STACKIK_CACHE_DIR``), where ``warmup`` compiles every kernel the
solver needs, up front instead of on the first control tick.

Run: ``python benchmarks/bench_cold_start.py [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import json, sys, time, warnings
t0 = time.perf_counter()
import numpy as np
import stackik
t1 = time.perf_counter()
robots = sys.argv[1]
robot = stackik.RobotModel(f"{robots}/panda/panda.urdf", srdf_path=f"{robots}/panda/panda.srdf")
solver = stackik.KinematicsSolver(robot, dt=0.001)
solver.add_frame_task("ee", "panda_hand_tcp").set_target_position([0.4, 0.1, 0.4])
solver.add_posture_task("posture").priority = 1
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    solver.configure_collision_constraint(0.02)
q = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
t2 = time.perf_counter()
if sys.argv[2] == "warmup":
    stackik.warmup(solver)
t3 = time.perf_counter()
solver.solve_velocity(q)
t4 = time.perf_counter()
solver.solve_velocity(q)
t5 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "setup": t2 - t1, "warmup": t3 - t2,
                  "first solve": t4 - t3, "second solve": t5 - t4}))
"""


def probe(mode: str, cache: str | None) -> dict[str, float]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), env.get("PYTHONPATH", "")])
    if cache is not None:
        env["STACKIK_CACHE_DIR"] = cache
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT / "robots"), mode],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def show(label: str, runs: list[dict[str, float]]) -> None:
    keys = runs[0].keys()
    cells = [f"{k} {1e3 * min(r[k] for r in runs):8.1f} ms" for k in keys]
    print(f"  {label:32s} " + "  ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per warm case (best)")
    args = parser.parse_args()
    probe("plain", None)  # make sure the default cache is warm
    print("best of the runs, each in a fresh process:")
    show("warm cache, no warm-up", [probe("plain", None) for _ in range(args.repeat)])
    show("warm cache, stackik.warmup(solver)", [probe("warmup", None) for _ in range(args.repeat)])
    with tempfile.TemporaryDirectory() as empty:
        show("empty cache, stackik.warmup(solver)", [probe("warmup", empty)])
    with tempfile.TemporaryDirectory() as empty:
        show("empty cache, no warm-up", [probe("plain", empty)])


if __name__ == "__main__":
    main()
