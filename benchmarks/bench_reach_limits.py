"""How true is ``LIMITS``: its false-negative rate on a 7-DoF workpiece study.

The shipped Panda (``panda_hand_tcp``, self-collision at 0 m, SRDF exclusions) studies a
box workpiece (40 x 30 x 20 cm, 45 cm in front of it, its top at 50 cm) whose every face
but the bottom carries targets at ``--spacing`` (the tool's z axis against the face's
normal), from ``--rolls`` tool rolls, with the default budget. Every target labelled
``LIMITS`` ("reachable only outside the joint limits") is then studied again with a
generous search: ``--restarts`` rounds of random restarts within the limits (no
neighbours, 200 iterations a round), verified by the same solver. A ``LIMITS`` target
that search reaches is a false negative of the default study; the rate is their share
of the ``LIMITS`` labels. ``python benchmarks/bench_reach_limits.py [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import stackik
from stackik import KinematicsSolver, RobotModel
from stackik.reach import ReachBudget, ReachStudy, Reason, targets_from_mesh

ROOT = Path(__file__).resolve().parents[1]
PANDA = ROOT / "robots" / "panda" / "panda.urdf"


def box_targets(spacing: float, rolls: int, folder: Path) -> np.ndarray:
    import trimesh

    box = trimesh.creation.box(extents=(0.4, 0.3, 0.2))
    box.apply_translation((0.45, 0.0, 0.4))
    # Drop the bottom face: nothing reaches under the part.
    keep = box.face_normals[:, 2] > -0.5
    part = trimesh.Trimesh(box.vertices, box.faces[keep], process=False)
    path = folder / "box.stl"
    part.export(path)
    poses = [
        targets_from_mesh(path, spacing=spacing, roll=2 * np.pi * k / rolls, seed=k).poses
        for k in range(rolls)
    ]
    return np.concatenate(poses)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--spacing", type=float, default=0.02)
    ap.add_argument("--rolls", type=int, default=8)
    ap.add_argument("--restarts", type=int, default=60)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    stackik.warmup()  # compiled kernels from the first timed call, not plain Python
    spacing, rolls = (0.05, 2) if args.quick else (args.spacing, args.rolls)
    robot = RobotModel(PANDA, srdf_path=PANDA.with_suffix(".srdf"), load_visuals=False)
    solver = KinematicsSolver(robot)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solver.configure_collision_constraint(0.0)
    with tempfile.TemporaryDirectory() as tmp:
        poses = box_targets(spacing, rolls, Path(tmp))
    study = ReachStudy(robot, "panda_hand_tcp", poses, solver, evaluators=[])
    study.envelope()
    t0 = time.perf_counter()
    res = study.run("serial", progress=False)
    wall = time.perf_counter() - t0
    limits = np.flatnonzero(res.reason == Reason.LIMITS)
    generous = ReachBudget(
        neighbor_attempts=0, restart_rounds=args.restarts, restart_iterations=200
    )
    false = 0
    if limits.size:
        again = ReachStudy(
            robot, "panda_hand_tcp", poses[limits], solver, evaluators=[], seeding="random",
            budget=generous,
        )  # fmt: skip
        false = int((again.run("serial", progress=False).reason == Reason.REACHABLE).sum())
    counts = {str(Reason(r)): int((res.reason == r).sum()) for r in np.unique(res.reason)}
    out = {
        "targets": len(poses),
        "reasons": counts,
        "limits": int(limits.size),
        "limits_reached_by_generous_search": false,
        "false_negative_rate": false / max(1, limits.size),
        "false_negative_share_of_targets": false / len(poses),
        "wall_s": round(wall, 2),
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
