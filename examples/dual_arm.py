"""Dual arm with a relative-pose constraint: two hands carry a box together.

The dual-arm torso (a torso joint and two 7-joint arms) holds a box between its hands.
A relative-pose constraint keeps the right hand's pose in the left hand's frame within
5 mm and 0.05 rad of where it starts (a box with a little play). Only the left hand gets a
target (priority 0), 15 cm forward and 15 cm up; a posture task (priority 1) keeps the
arms natural. The right hand follows by itself: the constraint moves it so the box is
never stretched or twisted.

Run: ``python examples/dual_arm.py [--headless]``. Headless (also with
``STACKIK_HEADLESS=1``) it prints what it did and exits; otherwise it then opens the
viewer (``pip install -e ".[viz]"``): drag the left hand, the right one follows.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
import pinocchio as pin

import stackik

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
HALF_WIDTH = np.array([0.005, 0.005, 0.005, 0.05, 0.05, 0.05])  # [m] x3, [rad] x3


def relative_pose(robot: stackik.RobotModel) -> pin.SE3:
    """``T_left^-1 T_right``: the right hand's pose in the left hand's frame."""
    return robot.get_frame_pose("left_tcp").actInv(robot.get_frame_pose("right_tcp"))


def deviation(T: pin.SE3, T0: pin.SE3) -> np.ndarray:
    """Position change [m] and rotation vector from ``T0.rotation`` [rad] of ``T``."""
    return np.r_[T.translation - T0.translation, pin.log3(T0.rotation.T @ T.rotation)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--headless", action="store_true", help="no viewer")
    args = parser.parse_args()
    headless = args.headless or os.environ.get("STACKIK_HEADLESS", "") not in ("", "0")

    robot = stackik.RobotModel(
        ROBOTS / "dual_arm" / "dual_arm.urdf", srdf_path=ROBOTS / "dual_arm" / "dual_arm.srdf"
    )
    q = robot.neutral_configuration()
    for side in ("left", "right"):  # both arms in the Panda's "ready" pose
        for joint, value in ((2, -0.5), (4, -2.0), (6, 1.6), (7, 0.8)):
            q[robot.get_joint_config_index(f"{side}_panda_joint{joint}")] = value
    robot.update_kinematics(q)
    start = relative_pose(robot)

    solver = stackik.KinematicsSolver(robot, dt=0.01)
    # Rotation bounds measured from the start's relative rotation (the hands face each
    # other: a rotation of about pi, where rotation vectors would wrap around).
    centre = np.r_[start.translation, np.zeros(3)]
    solver.configure_relative_pose_constraint(
        "left_tcp",
        "right_tcp",
        centre - HALF_WIDTH,
        centre + HALF_WIDTH,
        reference_rotation=start.rotation,
    )
    left = solver.add_frame_task("left", "left_tcp")
    left.gain = 2.0
    T = robot.get_frame_pose("left_tcp")
    left.set_target_pose(pin.SE3(T.rotation, T.translation + np.array([0.15, 0.0, 0.15])))
    solver.add_posture_task("posture").priority = 1
    solver.configure_collision_constraint(min_distance=0.01)

    right_start = robot.get_frame_pose("right_tcp").translation.copy()
    drift = np.zeros(2)  # largest position [m] and rotation [rad] change of the box
    for _ in range(400):
        result = solver.solve_velocity(q)
        q = robot.integrate(q, result.solution, solver.dt)
        robot.update_kinematics(q)
        change = np.abs(deviation(relative_pose(robot), start))
        drift = np.maximum(drift, [change[:3].max(), change[3:].max()])
    moved = np.linalg.norm(robot.get_frame_pose("right_tcp").translation - right_start)
    print(f"status {result.status.name}")
    print(f"  left hand {np.linalg.norm(left.get_error()) * 1e3:.2f} mm from its target")
    print(f"  right hand moved {moved * 100:.1f} cm with it (it has no target of its own)")
    print(
        f"  box: within {drift[0] * 1e3:.2f} mm and {drift[1]:.3f} rad of its start "
        f"(bounds {HALF_WIDTH[0] * 1e3:.0f} mm, {HALF_WIDTH[3]} rad per axis; the constraint "
        "acts on velocities, so a fast motion may overshoot a bound slightly)"
    )

    if not headless:
        from stackik.viz import show  # pip install -e ".[viz]"

        show(robot, solver, q=q)


if __name__ == "__main__":
    main()
