"""Velocity IK with priorities: a tool pose above a posture, on the Panda.

The tool pose task is priority 0; a posture task asking for a different arm shape is
priority 1 and may only use the motion the tool task leaves free (the arm's null
space). The script checks that the posture task does not change the tool's velocity,
then runs the control loop until the tool reaches its target: the tool error goes to
zero while the posture error stays wherever the tool lets it. Joint limits are hard
constraints throughout.

Run: ``python examples/velocity_ik.py [--headless]``. Headless (also with
``STACKIK_HEADLESS=1``) it prints what it did and exits; otherwise it then opens the
viewer (``pip install -e ".[viz]"``): drag the tool's gizmo and the arm follows.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
import pinocchio as pin

import stackik

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
TOOL = "panda_hand_tcp"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--headless", action="store_true", help="no viewer, short run")
    args = parser.parse_args()
    headless = args.headless or os.environ.get("STACKIK_HEADLESS", "") not in ("", "0")

    robot = stackik.RobotModel(
        ROBOTS / "panda" / "panda.urdf", srdf_path=ROBOTS / "panda" / "panda.srdf"
    )
    q = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
    robot.update_kinematics(q)
    solver = stackik.KinematicsSolver(robot, dt=0.01)
    tool = solver.add_frame_task("tool", TOOL)  # priority 0: the highest
    tool.gain = 10.0
    T = robot.get_frame_pose(TOOL)
    tool.set_target_pose(pin.SE3(T.rotation, T.translation + np.array([0.1, 0.15, -0.1])))
    posture = solver.add_posture_task("posture")
    posture.priority = 1  # only what the tool task leaves free
    posture.gain = 2.0
    posture.set_target_configuration(np.array([0.8, 0.3, 0.6, -1.5, 0.4, 1.8, 0.0]))

    # Strict priorities: the posture task does not change the tool's velocity.
    J_tool = robot.get_frame_jacobian(TOOL)
    with_posture = solver.solve_velocity(q).solution
    posture.active = False
    tool_only = solver.solve_velocity(q).solution
    posture.active = True
    difference = np.linalg.norm(J_tool @ with_posture - J_tool @ tool_only)
    print(f"tool velocity with and without the posture task differs by {difference:.1e}")

    steps = 0
    while steps < 1000:
        result = solver.solve_velocity(q)
        q = robot.integrate(q, result.solution, solver.dt)
        steps += 1
        if np.linalg.norm(tool.get_error()) < 1e-6:
            break
    print(f"after {steps} steps ({steps * solver.dt:.2f} s): status {result.status.name}")
    tool_error = np.linalg.norm(tool.get_error())
    print(f"  tool error {tool_error:.1e} (its level's scale {result.task_scales[0]:.2f})")
    print(
        f"  posture error {np.linalg.norm(posture.get_error()):.3f} rad "
        "(the posture task only gets the tool task's null space)"
    )
    lower, upper = robot.get_joint_limits()
    print(f"  inside the joint limits: {bool(np.all((q >= lower) & (q <= upper)))}")

    if not headless:
        from stackik.viz import show  # pip install -e ".[viz]"

        show(robot, solver, q=q)


if __name__ == "__main__":
    main()
