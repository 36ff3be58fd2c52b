"""The browser viewer: drag the Panda's tool target and the arm follows, live.

``stackik.viz.Viewer(robot, solver)`` serves a page (http://127.0.0.1:8080) with the
robot, a gizmo on the target of each frame task, and the solver loop running behind it
(``solve_velocity`` then ``integrate``, 100 times a second). Here the tool pose is
priority 0, a posture task priority 1, inside the joint limits and with self-collision
avoidance. The target circles in front of the robot until you grab its gizmo (or untick
"Orbit target"). The page also shows the collision pairs near their minimum distance
(red at it, green well clear), and a panel of task errors, scales, solver status and
step time; the "Display" folder toggles the collision geometry.

Run: ``python examples/viewer.py [--port 8080]`` (``pip install -e ".[viz]"``), open
the address it prints, stop with Ctrl+C. Headless (``--headless`` or
``STACKIK_HEADLESS=1``) it starts the server on a free port, moves the target through
the API, waits until the tool is there, prints it and exits: no browser.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import pinocchio as pin

import stackik
from stackik.viz import Viewer

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
TOOL = "panda_hand_tcp"


def orbit(centre: pin.SE3, t: float) -> pin.SE3:
    """The circling target at time ``t`` [s]: radius 12 cm, one turn in 8 s."""
    a = 2 * np.pi * t / 8.0
    offset = np.array([0.0, 0.12 * np.cos(a), 0.12 * np.sin(a)])
    return pin.SE3(centre.rotation, centre.translation + offset)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--headless", action="store_true", help="no browser, a few seconds")
    parser.add_argument("--port", type=int, default=8080, help="port of the page")
    args = parser.parse_args()
    headless = args.headless or os.environ.get("STACKIK_HEADLESS", "") not in ("", "0")

    robot = stackik.RobotModel(
        ROBOTS / "panda" / "panda.urdf", srdf_path=ROBOTS / "panda" / "panda.srdf"
    )
    q = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
    robot.update_kinematics(q)
    solver = stackik.KinematicsSolver(robot, dt=0.01)
    tool = solver.add_frame_task("tool", TOOL)
    tool.gain = 10.0
    solver.add_posture_task("posture").priority = 1
    solver.configure_collision_constraint(min_distance=0.01)
    home = robot.get_frame_pose(TOOL)

    viewer = Viewer(robot, solver, q=q, port=0 if headless else args.port, verbose=not headless)
    if headless:
        target = pin.SE3(home.rotation, home.translation + np.array([0.1, 0.15, -0.1]))
        viewer.set_target("tool", target)
        deadline = time.monotonic() + 30.0  # a generous wait, for a loaded machine
        snap = viewer.snapshot
        while time.monotonic() < deadline and not (snap.tasks and snap.tasks[0].error < 1e-4):
            time.sleep(0.05)
            snap = viewer.snapshot
        url = viewer.url
        viewer.close()
        print(f"viewer served at {url}; the robot followed the target")
        print(f"  {snap.steps} solver steps, status {snap.status}")
        print(f"  tool error {snap.tasks[0].error:.1e}, step time {snap.step_time_ms:.3f} ms")
        return

    orbiting = viewer.server.gui.add_checkbox("Orbit target", True)
    viewer.target_controls["tool"].on_update(lambda _: setattr(orbiting, "value", False))
    print(f"open {viewer.url} (Ctrl+C to stop)")
    t0 = time.monotonic()
    try:
        while True:
            if orbiting.value:
                viewer.set_target("tool", orbit(home, time.monotonic() - t0))
            time.sleep(0.02)
    except KeyboardInterrupt:
        pass
    finally:
        viewer.close()


if __name__ == "__main__":
    main()
