"""Global IK on the UR5: every arm configuration for one tool pose, branch flags, alternates.

A 6R arm like the UR5 reaches a generic pose in up to 8 ways: shoulder front or back,
elbow above or below, wrist flipped or not (the branch flags, vcKinSolver's
configuration code). ``find_configs`` searches them all from random starts (a count
budget here, so the result is the same on any machine) and returns the distinct
configurations nearest to a reference first, each checked on the full robot (pose,
joint limits, self-collision). ``nearest_config`` asks for one branch, and
``alternate_configs`` lists the +-2 pi turns of the joints that give the same pose.

Run: ``python examples/global_ik.py [--headless]``. Headless (also with
``STACKIK_HEADLESS=1``) it prints the solutions and exits; otherwise it then shows them
one after the other in the viewer (``pip install -e ".[viz]"``).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

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
    solver.configure_collision_constraint(0.005)  # candidates keep 5 mm between links

    q_ref = np.array([0.3, -1.2, 1.4, -1.8, -1.5, 0.2])
    target = robot.create_kinematics(q_ref + 0.1).frame_pose(TOOL)
    configs = solver.find_configs(
        target, TOOL, max_solutions=4, time_budget=None, max_attempts=400, reference_q=q_ref
    )
    print(f"{len(configs)} configurations nearest to the reference ({configs.attempts} starts):")
    for q in configs:
        distance = np.linalg.norm(robot.difference(q_ref, q))
        print(f"  branch code {solver.branch_flags(q, TOOL).code}, {distance:.2f} rad away")

    print("one configuration per branch:")
    per_branch = []
    for code in range(8):
        flags = stackik.BranchFlags.from_code(code)
        q = solver.nearest_config(target, TOOL, reference_q=q_ref, branch=code, seed=0)
        name = (
            f"shoulder {'front' if flags.front else 'back'}, "
            f"elbow {'above' if flags.above else 'below'}, "
            f"wrist {'flipped' if flags.flipped else 'not flipped'}"
        )
        if q is None:
            print(f"  code {code} ({name}): none (out of reach, limits or self-collision)")
            continue
        per_branch.append(q)
        print(f"  code {code} ({name}): {np.linalg.norm(robot.difference(q_ref, q)):.2f} rad away")
    alternates = solver.alternate_configs(configs[0])
    print(f"the nearest configuration has {len(alternates)} +-2 pi variants (same pose)")

    if not headless:
        from stackik.viz import show  # pip install -e ".[viz]"

        show(robot, configurations=np.array(per_branch), dt=1.5)  # one branch per 1.5 s


if __name__ == "__main__":
    main()
