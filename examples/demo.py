"""Demo: prioritized inverse kinematics on the shipped Franka Panda model.

Loads ``robots/panda`` with its SRDF, then drives the tool frame to a reachable target
pose with a :class:`stackik.KinematicsSolver`: the tool pose is priority 0, a posture
task that keeps the arm near a comfortable configuration is priority 1 and may only use
what the first leaves free. Joint position and velocity limits and self-collision
avoidance are hard constraints at every step. Prints what it did.

Run: ``python examples/demo.py [--steps N]``. It never opens a window (``--headless`` is
accepted, like every example's); ``python examples/viewer.py`` shows the same robot live
in the browser.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import stackik
from stackik.warmups import compile_progress

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
TOOL = "panda_hand_tcp"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600, help="maximum solver steps")
    parser.add_argument("--headless", action="store_true", help="accepted; the demo only prints")
    args = parser.parse_args()

    robot = stackik.RobotModel(
        ROBOTS / "panda" / "panda.urdf", srdf_path=ROBOTS / "panda" / "panda.srdf"
    )
    print(f"loaded {robot}")
    print(f"  joints: {', '.join(robot.controlled_joint_names)}")

    q_home = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
    q_goal = np.array([0.6, 0.2, -0.4, -1.6, 0.3, 1.9, 0.2])
    robot.update_kinematics(q_goal)
    target = robot.get_frame_pose(TOOL)
    print(f"  target for {TOOL}: position {np.round(target.translation, 4)} m")

    robot.update_kinematics(q_home)
    solver = stackik.KinematicsSolver(robot, dt=0.01)
    tool = solver.add_frame_task("tool", TOOL)  # priority 0 (highest)
    tool.gain = 20.0  # [1/s]
    tool.set_target_pose(target)
    posture = solver.add_posture_task("posture")
    posture.priority = 1
    posture.gain = 5.0
    solver.configure_collision_constraint(min_distance=0.01)
    print(f"  {solver}")

    q = q_home.copy()
    solve_us, min_distance = [], np.inf
    t0 = time.perf_counter()
    # The solver's kernels start as plain Python (same results, slower) while numba loads
    # them in the background, or, the first time on a machine, compiles them (a line on
    # stderr says so); a process that waits for them (`stackik.warmup`, or
    # STACKIK_FIRST_USE=wait) shows a progress bar while they compile.
    with compile_progress("compiling the solver kernels (first run on this machine)"):
        for step in range(1, args.steps + 1):
            result = solver.solve_velocity(q)
            if result.status != stackik.SolverStatus.SUCCESS:
                print(f"  step {step}: {result.status.name}: {result.status_message}")
                break
            solve_us.append(result.computation_time_ms * 1e3)
            q = robot.integrate(q, result.solution, solver.dt)
            robot.update_kinematics(q)
            min_distance = min(min_distance, robot.compute_min_collision_distance())
            error = stackik.compute_pose_error(robot.get_frame_pose(TOOL), target)
            if np.linalg.norm(error[:3]) < 1e-6 and np.linalg.norm(error[3:]) < 1e-6:
                break
    elapsed = time.perf_counter() - t0

    error = stackik.compute_pose_error(robot.get_frame_pose(TOOL), target)
    lower, upper = robot.get_joint_limits()
    inside = bool(np.all(q >= lower - 1e-9) and np.all(q <= upper + 1e-9))
    print(f"stopped after {step} steps, {elapsed * 1e3:.0f} ms wall time")
    print(f"  (solver kernels: {stackik.kernel_mode()})")
    print(
        f"  position error {np.linalg.norm(error[:3]):.2e} m, "
        f"orientation error {np.linalg.norm(error[3:]):.2e} rad"
    )
    print(f"  solve_velocity: median {np.median(solve_us):.1f} us over {len(solve_us)} steps")
    print(f"  joints inside limits all along: {inside}")
    print(f"  smallest self-collision distance on the way: {min_distance:.4f} m")
    print(f"  final q [rad]: {np.round(q, 4)}")


if __name__ == "__main__":
    main()
