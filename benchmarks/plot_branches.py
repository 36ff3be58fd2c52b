"""Render the 8 IK branches of one UR5 pose (docs/images/ur5_branches.png).

Every branch of the pose comes from ``find_configs(all_branches=True)`` (the closed
form); each panel draws the arm as a polyline through its joint origins and the flange
(Pinocchio FK), with the target frame's axes, and is titled with the branch flags
(shoulder front/back, elbow above/below, wrist flipped or not) and the joint angles.

Run: ``PYTHONPATH=python python benchmarks/plot_branches.py [--out docs/images/ur5_branches.png]``
(needs matplotlib).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pinocchio as pin

import stackik
from stackik import KinematicsSolver, RobotModel

ROOT = Path(__file__).resolve().parents[1]
Q_TARGET = np.array([0.9, -2.0, -1.5, -1.2, 1.4, 0.5])


def _points(robot: RobotModel, q: np.ndarray) -> np.ndarray:
    """Joint origins and the flange, base frame [m] (repeated origins removed)."""
    model = robot.model
    data = model.createData()
    pin.framesForwardKinematics(model, data, q)
    pts = [np.zeros(3)]
    pts += [data.oMi[j].translation.copy() for j in range(1, model.njoints)]
    pts.append(data.oMf[model.getFrameId("tool0")].translation.copy())
    out = [pts[0]]
    for p in pts[1:]:
        if np.linalg.norm(p - out[-1]) > 1e-6:
            out.append(p)
    return np.array(out)


def main() -> None:
    """Solve, draw, save."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "images" / "ur5_branches.png"))
    args = parser.parse_args()
    stackik.warmup()  # compiled kernels from the first timed call, not plain Python
    robot = RobotModel(ROOT / "robots" / "ur5" / "ur5.urdf", load_collisions=False)
    solver = KinematicsSolver(robot)
    T = robot.create_kinematics(Q_TARGET).frame_pose("tool0")
    res = solver.find_configs(T, "tool0", reference_q=np.zeros(6), all_branches=True)
    order = sorted(range(len(res)), key=lambda k: res.branches[k].code)
    every = np.vstack([_points(robot, q) for q in res])
    lo, hi = every.min(axis=0) - 0.05, every.max(axis=0) + 0.05
    fig = plt.figure(figsize=(16, 8.4))
    names = {1: ("front", "above", "not flipped"), -1: ("back", "below", "flipped")}
    for panel, k in enumerate(order):
        q, flags = res[k], res.branches[k]
        ax = fig.add_subplot(2, 4, panel + 1, projection="3d")
        pts = _points(robot, q)
        ax.plot(pts[:, 0], pts[:, 1], pts[:, 2], "-o", color="tab:blue", lw=3, ms=4)
        ax.plot([-0.15, 0.15], [0, 0], [0, 0], color="0.3", lw=6)  # base
        for axis, color in zip(T.rotation.T, ("tab:red", "tab:green", "tab:orange"), strict=True):
            end = T.translation + 0.12 * axis
            ax.plot(*zip(T.translation, end, strict=True), color=color, lw=2)
        words = [names[f][i] for i, f in enumerate(flags)]
        ax.set_title(
            f"code {flags.code}: {words[0]}, elbow {words[1]},\nwrist {words[2]}\n"
            + "q = ["
            + ", ".join(f"{v:+.2f}" for v in q)
            + "]",
            fontsize=8.5,
        )
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
        ax.set_zlim(lo[2], hi[2])
        ax.set_box_aspect(tuple(hi - lo))
        ax.view_init(elev=22, azim=-60)
        ax.tick_params(labelsize=6)
    fig.suptitle(
        "The 8 IK branches of one UR5 tool0 pose (find_configs(all_branches=True), closed "
        "form); red/green/orange: target x/y/z",
        fontsize=11,
    )
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=90)
    print(f"wrote {args.out} ({len(res)} branches)")


if __name__ == "__main__":
    main()
