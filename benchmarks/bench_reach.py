"""Reachability study throughput: verified targets per second per core, and scaling.

Three measurements (``python benchmarks/bench_reach.py``; ``--quick`` for a smoke run):

1. **Capability map**: the Panda (``panda_hand_tcp``, self-collision checked at 0 m,
   SRDF exclusions) at 5 cm x 50 orientations over the reach envelope's box: wall time
   with the local pool over every core, targets per second per core (CPU time of the
   chunks), the reasons, and where the time goes (IK iterations vs the rest).
2. **Workpiece study** (REACH): the UR5 (self-collision at 5 mm) on
   ``examples/data/workpiece.stl`` at 1 cm spacing, the part seen from 12 tool rolls,
   in one process.
3. **Scaling**: a 10 cm x 50 orientation Panda map on 1 and 2 local workers and on Ray
   with 1 and 2 CPUs; speed-up = time(1) / time(2) (worker start-up included).

Per-core rates are targets per CPU-second of the chunks (``process_time`` in the
workers): other processes on a shared machine inflate wall times, not CPU time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np

import stackik
from stackik import KinematicsSolver, RobotModel, __version__
from stackik.reach import CapabilityMap, ReachStudy, Reason, grid_targets, targets_from_mesh

ROOT = Path(__file__).resolve().parents[1]
PANDA = ROOT / "robots" / "panda" / "panda.urdf"
UR5 = ROOT / "robots" / "ur5" / "ur5.urdf"
WORKPIECE = ROOT / "examples" / "data" / "workpiece.stl"


def solver_for(urdf: Path, min_distance: float) -> KinematicsSolver:
    robot = RobotModel(urdf, srdf_path=urdf.with_suffix(".srdf"), load_visuals=False)
    solver = KinematicsSolver(robot)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pairs that are always close get a lower minimum
        solver.configure_collision_constraint(min_distance)
    return solver


def panda_map_targets(resolution: float, orientations: int):
    solver = solver_for(PANDA, 0.0)
    probe = ReachStudy(solver.robot, "panda_hand_tcp", np.eye(4)[None], solver)
    lo, hi = probe.envelope().tip_bounds
    return solver, grid_targets(
        [lo - resolution / 2, hi + resolution / 2], resolution, orientations
    )


def report(name: str, result, wall: float, workers: int) -> dict:
    s = result.summary()
    stats = result.run_stats
    cpu = stats["cpu_time"]
    per_core = s.evaluated / cpu
    reasons = {k: v for k, v in s.reasons.items() if v}
    iters = int(result.iterations.sum())
    share = {k: v / stats["chunk_time"] for k, v in stats["timings"].items()}
    print(
        f"{name}: {s.targets} targets, {s.reachable} reachable ({100 * s.fraction:.1f} %), "
        f"wall {wall:.1f} s on {workers} worker(s) ({s.targets / wall:,.0f} targets/s); "
        f"{per_core:,.0f} targets per CPU-second ({cpu:.1f} s CPU, {stats['chunk_time']:.1f} s "
        f"chunk wall time); {iters / s.targets:.1f} LM iterations per target"
    )
    print(f"  reasons: {reasons}")
    print("  chunk time by stage: " + ", ".join(f"{k} {100 * v:.0f} %" for k, v in share.items()))
    return {
        "targets": s.targets,
        "reachable": s.reachable,
        "wall_s": wall,
        "workers": workers,
        "targets_per_s": s.targets / wall,
        "targets_per_cpu_s": per_core,
        "cpu_s": cpu,
        "chunk_wall_s": stats["chunk_time"],
        "iterations_per_target": iters / s.targets,
        "reasons": reasons,
        "time_share": share,
    }


def capability_map(
    resolution: float, orientations: int, workers: int | None, figure: Path | None = None
) -> dict:
    solver, ts = panda_map_targets(resolution, orientations)
    study = ReachStudy(solver.robot, "panda_hand_tcp", ts, solver, evaluators=[])
    study.envelope()  # built once per robot; not part of the study's time
    t0 = time.perf_counter()
    res = study.run("local", workers, progress=True)
    wall = time.perf_counter() - t0
    n = workers or os.cpu_count() or 1
    out = report(f"Panda map {resolution:g} m x {orientations}", res, wall, n)
    out["grid"] = list(ts.grid.shape)
    if figure is not None:
        CapabilityMap.from_result(res).plot_slice("z", 0.35, figure)
    out["out_of_reach"] = int((res.reason == Reason.OUT_OF_REACH).sum())
    return out


def workpiece(spacing: float, rolls: int) -> dict:
    solver = solver_for(UR5, 0.005)
    poses = []
    for k in range(rolls):
        ts = targets_from_mesh(WORKPIECE, spacing=spacing, roll=2 * np.pi * k / rolls)
        poses.append(ts.poses)
    study = ReachStudy(solver.robot, "tool0", np.concatenate(poses), solver)
    study.envelope()
    t0 = time.perf_counter()
    res = study.run("serial", progress=False)
    return report(f"UR5 workpiece {spacing:g} m x {rolls} rolls", res, time.perf_counter() - t0, 1)


def scaling(resolution: float, orientations: int) -> dict:
    solver, ts = panda_map_targets(resolution, orientations)
    study = ReachStudy(solver.robot, "panda_hand_tcp", ts, solver, evaluators=[])
    study.envelope()
    times: dict[str, float] = {}
    first = None
    for workers in (1, 2):
        t0 = time.perf_counter()
        res = study.run("local", workers, progress=False)
        times[f"local_{workers}"] = time.perf_counter() - t0
        first = res if first is None else first
        assert np.array_equal(res.reason, first.reason)
    try:
        import ray
    except ImportError:
        ray = None
    if ray is not None:
        for cpus in (1, 2):
            ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
            try:
                study.run("ray", progress=False)  # start the workers (not timed)
                t0 = time.perf_counter()
                res = study.run("ray", progress=False)
                times[f"ray_{cpus}"] = time.perf_counter() - t0
                assert np.array_equal(res.reason, first.reason)
            finally:
                ray.shutdown()
    out = {"targets": len(ts), "times_s": times}
    out["speedup_local"] = times["local_1"] / times["local_2"]
    if "ray_1" in times:
        out["speedup_ray"] = times["ray_1"] / times["ray_2"]
    print(f"scaling on {len(ts)} targets: " + ", ".join(f"{k} {v:.1f} s" for k, v in times.items()))
    print(
        f"  speed-up 2 vs 1 worker: local {out['speedup_local']:.2f}"
        + (f", Ray {out['speedup_ray']:.2f}" if "speedup_ray" in out else "")
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Small sizes (a smoke run).")
    parser.add_argument("--workers", type=int, default=None, help="Map workers (default: all).")
    parser.add_argument("--json", type=Path, default=None, help="Write the figures here.")
    parser.add_argument("--slice", type=Path, default=None, help="PNG of the map's z slice.")
    parser.add_argument(
        "--only", choices=("map", "workpiece", "scaling"), default=None, help="One measurement."
    )
    args = parser.parse_args()
    stackik.warmup()  # compiled kernels from the first timed call, not plain Python
    q = args.quick
    figures = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "python": platform.python_version(),
        "stackik": __version__,
    }
    if args.only in (None, "map"):
        figures["map"] = capability_map(
            0.15 if q else 0.05, 10 if q else 50, args.workers, args.slice
        )
    if args.only in (None, "workpiece"):
        figures["workpiece"] = workpiece(0.04 if q else 0.01, 2 if q else 12)
    if args.only in (None, "scaling"):
        figures["scaling"] = scaling(0.2 if q else 0.1, 10 if q else 50)
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
