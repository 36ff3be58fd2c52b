"""Self-collision avoidance: the Panda's tool is sent to a point above its own base.

Reaching the target folds the arm into itself. Without a collision constraint the
solver reaches it, and two links pass through each other. With
``configure_collision_constraint(min_distance=0.02)`` every active pair of the robot
(the SRDF disables those that are always close or adjacent) stays at least 2 cm apart:
the tool stops as near the target as that allows.

Run: ``python examples/self_collision.py [--headless]``. Headless (also with
``STACKIK_HEADLESS=1``) it prints both runs and exits; otherwise it then opens the
viewer (``pip install -e ".[viz]"``) with the collision pairs drawn as segments,
coloured by their distance to ``min_distance``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

import stackik

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
TARGET = np.array([0.0, 0.0, 0.15])  # [m], above the base, inside the arm's own body
MIN_DISTANCE = 0.02  # [m]


def run(
    robot: stackik.RobotModel, avoid: bool, steps: int
) -> tuple[stackik.KinematicsSolver, np.ndarray]:
    """Drive the tool to TARGET for ``steps`` steps; print the closest pair met."""
    q = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
    robot.update_kinematics(q)
    solver = stackik.KinematicsSolver(robot, dt=0.01)
    tool = solver.add_frame_task("tool", "panda_hand_tcp", stackik.TaskType.FRAME_POSITION)
    tool.gain = 5.0
    tool.set_target_position(TARGET)
    solver.add_posture_task("posture").priority = 1
    if avoid:
        solver.configure_collision_constraint(min_distance=MIN_DISTANCE)
    closest = np.inf
    for _ in range(steps):
        result = solver.solve_velocity(q)
        q = robot.integrate(q, result.solution, solver.dt)
        robot.update_kinematics(q)
        closest = min(closest, robot.compute_min_collision_distance())
    distances = robot.compute_collision_distances()
    pair = robot.get_collision_pair_names()[int(np.argmin(distances))]
    label = f"with min_distance={MIN_DISTANCE} m" if avoid else "without collision avoidance"
    print(f"{label}: status {result.status.name}")
    print(f"  closest pair on the way: {closest * 1e3:+.1f} mm (now {pair[0]} / {pair[1]})")
    print(f"  tool {np.linalg.norm(tool.get_error()) * 1e3:.1f} mm from the target")
    return solver, q


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--headless", action="store_true", help="no viewer")
    args = parser.parse_args()
    headless = args.headless or os.environ.get("STACKIK_HEADLESS", "") not in ("", "0")

    robot = stackik.RobotModel(
        ROBOTS / "panda" / "panda.urdf", srdf_path=ROBOTS / "panda" / "panda.srdf"
    )
    run(robot, avoid=False, steps=600)
    solver, q = run(robot, avoid=True, steps=600)

    if not headless:
        from stackik.viz import show  # pip install -e ".[viz]"

        show(robot, solver, q=q)


if __name__ == "__main__":
    main()
