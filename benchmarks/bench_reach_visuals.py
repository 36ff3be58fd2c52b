"""What a robot's visual meshes cost a reachability run: 2,000 out-of-reach targets.

example-robot-data's UR10 loaded with default options (visual meshes included), tool
``tool0``; 2,000 targets 3 m from the base (all outside the reach envelope, so no IK
runs). The envelope is built first; then the time of ``ReachStudy.run`` is measured on
the serial executor (median of ``--repeats`` runs), and once on the local pool of 2
workers (start-up included), with the size of what the workers receive.
``python benchmarks/bench_reach_visuals.py`` (needs ``pip install stackik[robots]``).
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
import time

import numpy as np

import stackik
from stackik import RobotModel
from stackik.reach import ReachStudy, Reason


def ur10() -> RobotModel:
    try:
        from stackik import robots
    except ImportError:  # an older stackik without stackik.robots: the same files
        import importlib.metadata
        from pathlib import Path

        base = Path(str(importlib.metadata.distribution("example-robot-data").locate_file("")))
        share = base / "cmeel.prefix" / "share"
        return RobotModel(
            share / "example-robot-data" / "robots" / "ur_description" / "urdf" / "ur10_robot.urdf",
            package_dirs=[share],
        )
    return robots.load("ur10")


def far_targets(n: int, radius: float = 3.0) -> np.ndarray:
    rng = np.random.default_rng(0)
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    poses = np.repeat(np.eye(4)[None], n, axis=0)
    poses[:, :3, 3] = radius * d
    return poses


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--targets", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-pool", action="store_true")
    args = ap.parse_args()
    stackik.warmup()  # compiled kernels from the first timed call, not plain Python
    t0 = time.perf_counter()
    robot = ur10()
    load = time.perf_counter() - t0
    poses = far_targets(args.targets)
    study = ReachStudy(robot, "tool0", poses, evaluators=[])
    t0 = time.perf_counter()
    study.envelope()
    build = time.perf_counter() - t0
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        res = study.run("serial", progress=False)
        times.append(time.perf_counter() - t0)
    assert (res.reason == Reason.OUT_OF_REACH).all()
    out = {
        "robot_load_s": round(load, 2),
        "visual_geometries": robot.visual_model.ngeoms if robot.visual_model else 0,
        "robot_pickle_MB": round(len(pickle.dumps(robot)) / 1e6, 1),
        "envelope_build_s": round(build, 2),
        "serial_run_s_median": round(statistics.median(times), 4),
        "serial_run_s_all": [round(t, 4) for t in times],
    }
    context = getattr(study, "worker_context", None)
    if context is not None:
        t0 = time.perf_counter()
        payload = context().payload()
        out["worker_payload_MB"] = round(len(payload) / 1e6, 2)
        out["worker_payload_s"] = round(time.perf_counter() - t0, 3)
    if not args.no_pool:
        t0 = time.perf_counter()
        study.run("local", workers=2, progress=False)
        out["pool_2_workers_run_s"] = round(time.perf_counter() - t0, 2)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
