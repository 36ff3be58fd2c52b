"""A capability map of the Panda, and where to put its base for a set of task poses.

The map (Zacharias et al. 2007) solves every voxel centre at every orientation of a
uniform set (IK-verified, with self-collision) and keeps each voxel's reachability
index: the fraction of orientations the hand reaches there. Slices of it are drawn;
then candidate base positions around a table are ranked by how many of the table's
task poses they reach, read off the map without solving IK (inverse reachability,
Vahrenkamp et al.), and the best candidate is checked with a real study.

    python examples/capability_map.py                 # 10 cm x 20 orientations
    python examples/capability_map.py --headless      # coarse and quick, no window
    python examples/capability_map.py --headless --resolution 0.1 --orientations 20 \
        --figures docs/images       # the guide's figures

``STACKIK_HEADLESS=1`` works like ``--headless``. Needs ``pip install "stackik[reach]"``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin

from stackik import KinematicsSolver, RobotModel
from stackik.reach import CapabilityMap, ReachStudy, sphere_rotations

HERE = Path(__file__).resolve().parent
PANDA = HERE.parent / "robots" / "panda" / "panda.urdf"
FRAME = "panda_hand_tcp"


def panda(base: pin.SE3 | None = None) -> tuple[RobotModel, KinematicsSolver]:
    robot = RobotModel(PANDA, srdf_path=PANDA.with_suffix(".srdf"), load_visuals=False)
    if base is not None:
        robot.set_base_placement(base)
    solver = KinematicsSolver(robot)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solver.configure_collision_constraint(0.0)
    return robot, solver


def table_tasks(n: int) -> np.ndarray:
    """Top-down grasps over a 40 x 30 cm patch of a table 1 m in front of the world origin."""
    xs, ys = np.meshgrid(np.linspace(0.8, 1.2, n), np.linspace(-0.15, 0.15, n), indexing="ij")
    down = sphere_rotations(1, 4, axis="z")  # one direction, four rolls about it...
    flip = np.diag([1.0, -1.0, -1.0])  # ...turned to point down
    poses = []
    for x, y in zip(xs.ravel(), ys.ravel(), strict=True):
        for R in down:
            T = np.eye(4)
            T[:3, :3] = flip @ R
            T[:3, 3] = [x, y, 0.1]
            poses.append(T)
    return np.array(poses)


def base_candidates() -> np.ndarray:
    """Bases on the floor around the origin, facing +x, in 10 cm steps."""
    out = []
    for x in np.arange(-0.2, 0.81, 0.1):
        for y in np.arange(-0.5, 0.51, 0.1):
            out.append(pin.SE3(np.eye(3), np.array([x, y, 0.0])).homogeneous)
    return np.array(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--headless", action="store_true", help="No window; a coarse map.")
    parser.add_argument("--figures", type=Path, default=None, help="Folder for the PNGs.")
    parser.add_argument("--workers", type=int, default=None, help="Processes (default: all).")
    parser.add_argument("--resolution", type=float, default=None, help="Voxel edge [m].")
    parser.add_argument("--orientations", type=int, default=None, help="Per voxel.")
    args = parser.parse_args()
    headless = args.headless or os.environ.get("STACKIK_HEADLESS") == "1"
    resolution = args.resolution or (0.2 if headless else 0.1)
    orientations = args.orientations or (8 if headless else 20)
    work = Path(tempfile.mkdtemp(prefix="capability_map_"))
    figures = args.figures or work
    figures.mkdir(parents=True, exist_ok=True)

    robot, solver = panda()
    cmap = CapabilityMap.build(
        robot, FRAME, resolution, orientations, solver=solver, workers=args.workers,
        store=work / "panda_map.zarr",
    )  # fmt: skip
    print(cmap)
    print(cmap.result.summary())
    cmap.plot_slice("z", 0.35, figures / "capability_map_z.png")
    cmap.plot_slice("y", 0.0, figures / "capability_map_y.png")

    tasks = table_tasks(3 if resolution > 0.1 else 5)
    ranked = cmap.base_placement(tasks, base_candidates())
    best = ranked.best
    k = ranked.ranking[0]
    print(
        f"best base of {len(ranked.candidates)}: x = {best[0, 3]:.2f} m, y = {best[1, 3]:.2f} m "
        f"reaches {100 * ranked.fraction[k]:.0f} % of {len(tasks)} task poses (from the map)"
    )
    moved, moved_solver = panda(pin.SE3(best))
    check = ReachStudy(moved, FRAME, tasks, moved_solver, evaluators=[]).run(
        "serial", progress=False
    )
    print(f"checked with IK from that base: {100 * check.summary().fraction:.0f} % reachable")
    print(f"figures in {figures}, map store in {work}")
    if not headless:
        import matplotlib.pyplot as plt

        for name in ("capability_map_z.png", "capability_map_y.png"):
            plt.figure(name)
            plt.imshow(plt.imread(figures / name))
            plt.axis("off")
        plt.show()


if __name__ == "__main__":
    main()
