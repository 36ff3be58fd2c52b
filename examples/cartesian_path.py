"""A straight-line Cartesian path: the UR5's tool moves 30 cm along a line, orientation kept.

``generate_path`` tracks the straight line from the tool's pose at the start
configuration to a target pose in small sub-steps, each solved from the previous one
(so the arm stays on its branch), and returns the configurations of evenly spaced points.
Every point is checked like a global-IK candidate (joint limits, self-collision); a
point that cannot be reached, or a branch jump, stops the path and says where. The
script checks the result with forward kinematics: how far the tool strays from the line.

Run: ``python examples/cartesian_path.py [--headless]``. Headless (also with
``STACKIK_HEADLESS=1``) it prints what it did and exits; otherwise it then replays the
path, back and forth, in the viewer (``pip install -e ".[viz]"``).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
import pinocchio as pin

import stackik

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
TOOL = "tool0"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--headless", action="store_true", help="no viewer")
    args = parser.parse_args()
    headless = args.headless or os.environ.get("STACKIK_HEADLESS", "") not in ("", "0")

    robot = stackik.RobotModel(ROBOTS / "ur5" / "ur5.urdf", srdf_path=ROBOTS / "ur5" / "ur5.srdf")
    solver = stackik.KinematicsSolver(robot)
    solver.configure_collision_constraint(0.005)  # every point keeps 5 mm between links

    start = np.array([0.3, -1.2, 1.4, -1.8, -1.5, 0.2])
    kin = robot.create_kinematics(start)
    T0 = kin.frame_pose(TOOL)
    T1 = pin.SE3(T0.rotation, T0.translation + np.array([0.0, 0.3, 0.0]))  # 30 cm along y
    path = solver.generate_path(start, T1, TOOL, n_points=31)
    print(f"status {path.status.name}: {len(path.configurations)} of 31 points")
    if path.status != stackik.SolverStatus.SUCCESS:
        print(f"  stopped at point {path.bad_index}: {path.status_message}")
        return

    # Check with forward kinematics: distance of each point's tool position to the line.
    line = T1.translation - T0.translation
    line /= np.linalg.norm(line)
    off_line, tilt = 0.0, 0.0
    for q in path.configurations:
        kin.update(q)
        T = kin.frame_pose(TOOL)
        d = T.translation - T0.translation
        off_line = max(off_line, float(np.linalg.norm(d - (d @ line) * line)))
        tilt = max(tilt, float(np.linalg.norm(pin.log3(T0.rotation.T @ T.rotation))))
    steps = np.abs(np.diff(path.configurations, axis=0)).max()
    print(f"  tool off the line by {off_line:.1e} m at most, tilted {tilt:.1e} rad")
    print(f"  largest joint change between neighbouring points {steps:.3f} rad")

    if not headless:
        from stackik.viz import show  # pip install -e ".[viz]"

        there_and_back = np.vstack([path.configurations, path.configurations[::-1]])
        show(robot, configurations=there_and_back, dt=0.05)


if __name__ == "__main__":
    main()
