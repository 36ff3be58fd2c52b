"""Humanoid balance: a hand reaches far forward while the CoM stays over the feet.

The 31-joint humanoid on a floating base (37 DoF) stands with bent knees. Both soles are
held in place (priority 0), the right hand reaches for a point far in front of it
(priority 1) and a posture task keeps the rest natural (priority 2). A CoM constraint
keeps the centre of mass's ground projection inside the support polygon of the two
feet (shrunk by a margin). Without it the reaching hand pulls the CoM out of the
polygon (the robot would fall); with it the hand gets as far as balance allows.

Run: ``python examples/humanoid_balance.py [--headless]``. Headless (also with
``STACKIK_HEADLESS=1``) it prints both runs and exits; otherwise it then opens the
viewer (``pip install -e ".[viz]"``) with the CoM and the support polygon.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

import stackik

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
SOLES = ("left_sole", "right_sole")


def standing(robot: stackik.RobotModel) -> tuple[np.ndarray, np.ndarray]:
    """Knees bent, soles on the ground (z = 0), and the feet's support polygon (CCW)."""
    q = robot.neutral_configuration()
    for name, value in (("hip_pitch", -0.3), ("knee", 0.6), ("ankle_pitch", -0.3)):
        for side in ("left", "right"):
            q[robot.get_joint_config_index(f"{side}_{name}_joint")] = value
    kin = robot.create_kinematics(q)
    q[2] -= kin.frame_pose(SOLES[0]).translation[2]  # lower the pelvis: soles at z = 0
    kin = robot.create_kinematics(q)
    corners = np.array(
        [
            kin.frame_pose(sole).act(np.array([dx, dy, 0.0]))[:2]
            for sole in SOLES
            for dx in (-0.1, 0.1)
            for dy in (-0.05, 0.05)
        ]
    )
    # Parallel feet: the hull of the 8 corners is the outer ones, counter-clockwise from
    # the right heel (x forward, y to the left).
    hull = corners[[4, 6, 3, 1]]  # right heel, right toe, left toe, left heel (outer sides)
    return q, hull


def reach(
    robot: stackik.RobotModel, balance: bool, steps: int
) -> tuple[stackik.KinematicsSolver, np.ndarray]:
    """Reach for ``steps`` steps, with or without the CoM constraint; print what happened."""
    q, polygon = standing(robot)
    solver = stackik.KinematicsSolver(robot, dt=0.01)
    for sole in SOLES:
        solver.add_frame_task(sole, sole).gain = 10.0
    hand = solver.add_frame_task("hand", "right_hand", stackik.TaskType.FRAME_POSITION)
    hand.priority, hand.gain = 1, 2.0
    start = robot.create_kinematics(q).frame_pose("right_hand").translation
    hand.set_target_position(start + np.array([1.0, -0.3, -0.8]))
    solver.add_posture_task("posture").priority = 2
    if balance:
        solver.configure_com_constraint(polygon, margin=0.1)
    worst = -np.inf  # largest distance of the CoM outside the polygon [m]
    normals = np.array([[-e[1], e[0]] for e in np.roll(polygon, -1, axis=0) - polygon])
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    kin = robot.create_kinematics(q)  # our own cache, to read the CoM
    for _ in range(steps):
        result = solver.solve_velocity(q)
        q = robot.integrate(q, result.solution, solver.dt)
        kin.update(q)
        com = kin.com[:2].copy()
        worst = max(worst, float(np.max(-np.sum(normals * (com - polygon), axis=1))))
    label = "with the CoM constraint" if balance else "without the CoM constraint"
    print(f"{label}: status {result.status.name}")
    print(f"  hand {np.linalg.norm(hand.get_error()) * 100:.1f} cm from its target")
    if worst > 0:
        print(f"  CoM left the support polygon by up to {worst * 100:.1f} cm: the robot falls")
    else:
        margin = -worst * 100
        print(f"  CoM stayed inside the support polygon, {margin:.1f} cm from its edges or more")
    return solver, q


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--headless", action="store_true", help="no viewer, short runs")
    args = parser.parse_args()
    headless = args.headless or os.environ.get("STACKIK_HEADLESS", "") not in ("", "0")

    robot = stackik.RobotModel(
        ROBOTS / "humanoid" / "humanoid.urdf",
        floating_base=True,
        srdf_path=ROBOTS / "humanoid" / "humanoid.srdf",
    )
    steps = 150 if headless else 400
    reach(robot, balance=False, steps=steps)
    solver, q = reach(robot, balance=True, steps=steps)

    if not headless:
        from stackik.viz import show  # pip install -e ".[viz]"

        show(robot, solver, q=q)


if __name__ == "__main__":
    main()
