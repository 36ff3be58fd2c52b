"""The viewer with a world: the Panda next to a table and a post, obstacles you can drag.

``robot.load_scene("examples/data/cell.yaml")`` puts a table, a post standing on it and
the floor into the robot's world; ``Viewer(robot, solver)`` draws them, each obstacle
with a gizmo of its own. The tool target sits behind the post: the arm stops
``min_distance`` (1 cm) short of the post, and the segment between the post and the
nearest link turns red, labelled with the post's name. Drag the post's gizmo out of the
way (or untick "Orbit post" and move it yourself) and the arm reaches the target: a
gizmo drag is ``world.set_obstacle_pose``, which every solver on the robot sees at its
next step. Obstacles moved, added or removed by another thread appear in the page
within a frame.

Run: ``python examples/viewer_scene.py [--port 8080]`` (``pip install -e ".[viz]"``),
open the address it prints, stop with Ctrl+C. Headless (``--headless`` or
``STACKIK_HEADLESS=1``) it serves on a free port, lets the arm run into the post, moves
the post through its gizmo as a drag would, waits until the tool is at the target,
prints what happened and exits: no browser.
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

ROOT = Path(__file__).resolve().parents[1]
ROBOTS = ROOT / "robots"
SCENE = ROOT / "examples" / "data" / "cell.yaml"
TOOL = "panda_hand_tcp"
MIN_DISTANCE = 0.01  # [m]
#: Where the tool should go: behind the post, seen from the arm [m].
GOAL = np.array([0.45, 0.45, 0.35])


def wait_until(condition, timeout: float = 30.0) -> bool:
    """Poll ``condition`` until true or ``timeout`` seconds (generous: a loaded machine)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def post_distance(solver: stackik.KinematicsSolver, q: np.ndarray) -> tuple[float, str]:
    """The nearest robot geometry to the post at ``q``: distance [m] and geometry name."""
    pairs = [i for i in solver.evaluate_collision_debug_list(q) if i.geometry_b == "post"]
    return pairs[0].distance, pairs[0].geometry_a  # nearest first


def headless_run(robot: stackik.RobotModel, solver: stackik.KinematicsSolver, q: np.ndarray):
    viewer = Viewer(robot, solver, q=q, port=0, verbose=False)
    try:

        def tool_error() -> float:
            tasks = viewer.snapshot.tasks  # empty before the loop's first step
            return tasks[0].error if tasks else float("inf")

        # The arm presses towards the goal until the post stops it.
        steady: list[float] = []

        def stalled() -> bool:
            steady.append(tool_error())
            return len(steady) > 20 and abs(steady[-1] - steady[-20]) < 1e-5

        wait_until(stalled)
        blocked = viewer.configuration
        d, link = post_distance(solver, blocked)
        print(
            f"the post stops the arm: {link} is {1e3 * d:.2f} mm from it "
            f"(min_distance {1e3 * MIN_DISTANCE:.0f} mm), tool {tool_error():.3f} m short"
        )
        viewer.refresh()
        seg = viewer.pair_segments
        shown = [n for n, lab in zip(seg.names, seg.labels, strict=True) if lab == "post"]
        print(f"the page shows {len(shown)} segments to the post, labelled 'post'")

        # Drag the post's gizmo aside (viser's server API, as a drag in the page would).
        gizmo = viewer.obstacle_controls["post"]
        gizmo.position = np.array([0.45, -0.45, 0.55])
        wait_until(lambda: robot.get_obstacle_pose("post").translation[1] < 0.0)
        print(f"post dragged to {np.round(robot.get_obstacle_pose('post').translation, 3)}")
        reached = wait_until(lambda: tool_error() < 1e-4)
        print(
            f"after the drag the tool reached the target: {reached}, "
            f"tool error {tool_error():.1e} m"
        )
        print(f"obstacles drawn: {sorted(viewer.obstacle_nodes)}")
    finally:
        viewer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--headless", action="store_true", help="no browser, a few seconds")
    parser.add_argument("--port", type=int, default=8080, help="port of the page")
    args = parser.parse_args()
    headless = args.headless or os.environ.get("STACKIK_HEADLESS", "") not in ("", "0")

    robot = stackik.RobotModel(
        ROBOTS / "panda" / "panda.urdf", srdf_path=ROBOTS / "panda" / "panda.srdf"
    )
    print(f"scene: {robot.load_scene(SCENE)}")
    q = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
    robot.update_kinematics(q)
    solver = stackik.KinematicsSolver(robot, dt=0.01)
    tool = solver.add_frame_task("tool", TOOL)
    tool.gain = 5.0
    solver.add_posture_task("posture").priority = 1
    solver.configure_collision_constraint(min_distance=MIN_DISTANCE)
    home = robot.get_frame_pose(TOOL)
    tool.set_target_pose(pin.SE3(home.rotation, GOAL))

    if headless:
        headless_run(robot, solver, q)
        return
    viewer = Viewer(robot, solver, q=q, port=args.port)
    orbiting = viewer.server.gui.add_checkbox("Orbit post", True)
    viewer.obstacle_controls["post"].on_update(lambda _: setattr(orbiting, "value", False))
    print(f"open {viewer.url} (Ctrl+C to stop)")
    t0 = time.monotonic()
    try:
        while True:
            if orbiting.value:  # a sensor thread moving an obstacle, say
                a = 2 * np.pi * (time.monotonic() - t0) / 20.0
                p = np.array([0.45 + 0.1 * np.sin(a), 0.25 * np.cos(a), 0.55])
                robot.set_obstacle_pose("post", pin.SE3(np.eye(3), p))
            time.sleep(0.02)
    except KeyboardInterrupt:
        pass
    finally:
        viewer.close()


if __name__ == "__main__":
    main()
