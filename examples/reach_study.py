"""A REACH-style workpiece study: where can the UR5 reach a curved panel, and how well?

The panel (``examples/data/workpiece.stl``, made by ``examples/data/make_workpiece.py``)
lies in front of the robot. Targets are spread over its surface with the tool's z axis
along minus the surface normal; each is solved with neighbour seeding, checked for
self-collision (5 mm) and scored (manipulability, distance to joint limits). Then the
same part is studied with the robot placed 30 cm further back and turned 30 degrees,
and the two placements are compared target by target.

    python examples/reach_study.py                      # 1 cm spacing, figures shown
    python examples/reach_study.py --headless           # small and quick, no window
    python examples/reach_study.py --headless --spacing 0.01 --figures docs/images

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
from stackik.reach import JointLimitDistance, Manipulability, ReachStudy, targets_from_mesh

HERE = Path(__file__).resolve().parent
UR5 = HERE.parent / "robots" / "ur5" / "ur5.urdf"
WORKPIECE = HERE / "data" / "workpiece.stl"


def study(robot: RobotModel, targets, store: Path, workers: int | None):
    """One study of the targets with self-collision at 5 mm; the result is also stored."""
    solver = KinematicsSolver(robot)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a pair that is always close gets a lower minimum
        solver.configure_collision_constraint(0.005)
    evaluators = [Manipulability(), JointLimitDistance()]
    reach = ReachStudy(robot, "tool0", targets, solver, evaluators)
    return reach.run("local", workers=workers, store=store, progress=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--headless", action="store_true", help="No window; a small study.")
    parser.add_argument("--figures", type=Path, default=None, help="Folder for the PNGs.")
    parser.add_argument("--spacing", type=float, default=None, help="Target spacing [m].")
    parser.add_argument("--workers", type=int, default=None, help="Processes (default: all).")
    args = parser.parse_args()
    headless = args.headless or os.environ.get("STACKIK_HEADLESS") == "1"
    spacing = args.spacing or (0.05 if headless else 0.01)
    work = Path(tempfile.mkdtemp(prefix="reach_study_"))
    figures = args.figures or work
    figures.mkdir(parents=True, exist_ok=True)

    targets = targets_from_mesh(WORKPIECE, spacing=spacing)
    print(f"{len(targets)} targets on {WORKPIECE.name} ({spacing} m spacing)")

    robot = RobotModel(UR5, srdf_path=UR5.with_suffix(".srdf"), load_visuals=False)
    here = study(robot, targets, work / "here.zarr", args.workers)
    print("robot at the origin:\n" + str(here.summary()))

    moved = RobotModel(UR5, srdf_path=UR5.with_suffix(".srdf"), load_visuals=False)
    moved.set_base_placement(pin.SE3(pin.rpy.rpyToMatrix(0, 0, np.pi / 6), np.array([-0.3, 0, 0])))
    back = study(moved, targets, work / "moved.zarr", args.workers)
    print("robot 30 cm back, turned 30 deg:\n" + str(back.summary()))

    comparison = here.compare(back, names=("origin", "moved"))
    print(comparison.table())

    here.plot(figures / "reach_study.png", title="UR5 on the panel: score (robot at the origin)")
    from stackik.reach.plots import plot_comparison

    plot_comparison(here, comparison, figures / "reach_compare.png")
    print(f"figures in {figures}, stores in {work}")
    if not headless:
        import matplotlib.pyplot as plt

        for name in ("reach_study.png", "reach_compare.png"):
            plt.figure(name)
            plt.imshow(plt.imread(figures / name))
            plt.axis("off")
        plt.show()


if __name__ == "__main__":
    main()
