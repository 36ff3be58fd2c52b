"""Demo: prioritized inverse kinematics on the shipped Franka Panda model.

Loads ``robots/panda``, picks a reachable target pose for the tool frame, and drives
the arm there with the SNS solver: the tool pose is priority 1, a posture task that
keeps the arm near a comfortable configuration is priority 2 and may only use what
the first leaves free. Joint velocities stay inside a box derived from the position
and velocity limits, so the arm never leaves its limits. Prints what it did.

Run: ``python examples/demo.py [--steps N]``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import stackik
from stackik import sns

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
TOOL = "panda_hand_tcp"


def velocity_box(
    robot: stackik.RobotModel, q: np.ndarray, dt: float
) -> tuple[np.ndarray, np.ndarray]:
    """Joint velocity bounds [rad/s] that keep ``q + dq * dt`` inside the position limits."""
    lower, upper = robot.get_joint_limits()
    vmax = robot.get_velocity_limits()
    return np.maximum(-vmax, (lower - q) / dt), np.minimum(vmax, (upper - q) / dt)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400, help="maximum solver steps")
    args = parser.parse_args()

    robot = stackik.RobotModel(
        ROBOTS / "panda" / "panda.urdf", srdf_path=ROBOTS / "panda" / "panda.srdf"
    )
    print(f"loaded {robot}")
    print(f"  joints: {', '.join(robot.controlled_joint_names)}")

    lower, upper = robot.get_joint_limits()
    q_home = np.clip(np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8]), lower, upper)
    q_goal = np.array([0.6, 0.2, -0.4, -1.6, 0.3, 1.9, 0.2])
    robot.update_kinematics(q_goal)
    target = robot.get_frame_pose(TOOL)
    print(f"  target for {TOOL}: position {np.round(target.translation, 4)} m")

    dt, gain = 0.01, 20.0  # [s], [1/s]
    q = q_home.copy()
    t0 = time.perf_counter()
    solve_ms = []
    for step in range(args.steps):
        robot.update_kinematics(q)
        error = stackik.compute_pose_error(robot.get_frame_pose(TOOL), target)
        if np.linalg.norm(error[:3]) < 1e-6 and np.linalg.norm(error[3:]) < 1e-6:
            break
        J_tool = robot.get_frame_jacobian(TOOL, stackik.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        xdot_tool = stackik.limit_task_velocity(gain * error, 1.0, 2.0)
        J_posture = np.eye(robot.nv)
        xdot_posture = gain * (q_home - q)
        box_lower, box_upper = velocity_box(robot, q, dt)
        result = sns.solve(
            [xdot_tool, xdot_posture],
            [J_tool, J_posture],
            box_lower=box_lower,
            box_upper=box_upper,
        )
        if result.status != stackik.SolverStatus.SUCCESS:
            print(f"  step {step}: solver status {result.status.name}: {result.status_message}")
            break
        solve_ms.append(result.computation_time_ms)
        q = robot.integrate(q, result.solution, dt)
    elapsed = time.perf_counter() - t0

    robot.update_kinematics(q)
    error = stackik.compute_pose_error(robot.get_frame_pose(TOOL), target)
    inside = bool(np.all(q >= lower - 1e-9) and np.all(q <= upper + 1e-9))
    print(f"solved in {step} steps, {elapsed * 1e3:.1f} ms wall time")
    print(
        f"  position error {np.linalg.norm(error[:3]):.2e} m, orientation error "
        f"{np.linalg.norm(error[3:]):.2e} rad"
    )
    print(f"  median SNS solve {np.median(solve_ms) * 1e3:.1f} us over {len(solve_ms)} solves")
    print(
        f"  joints inside limits: {inside}; minimum self-collision distance "
        f"{robot.compute_min_collision_distance():.3f} m"
    )
    print(f"  final q [rad]: {np.round(q, 4)}")


if __name__ == "__main__":
    main()
