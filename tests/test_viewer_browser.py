"""The viewer in a real browser: headless Chromium (the system's) driven by playwright.

The test serves the Panda with a solver and an obstacle in its world, opens the page,
and checks that it connects, renders a non-blank scene whose scene tree lists the
robot's joint nodes and the obstacle, that the rendered robot moves when a target is
moved through viser's server API (the robot's joint state changes, and so do the
pixels), and that hiding the obstacle changes the pixels. Requests leaving the local server are
refused: the page must not need the network. The screenshot is saved in ``tmp_path``
(and copied to ``$STACKIK_SCREENSHOT`` when set: ``docs/images/viewer.png`` comes from
there).

Needs ``chromium`` on the PATH (``.ci/run`` installs Debian's package); skipped with the
reason otherwise, and a failure under ``CI=true``. Playwright never downloads a browser
here: it is given the system's executable.
"""

from __future__ import annotations

import io
import os
import shutil
import time
from pathlib import Path

import coal
import numpy as np
import pytest

pytest.importorskip("viser")
sync_api = pytest.importorskip("playwright.sync_api")

from stackik import KinematicsSolver, RobotModel  # noqa: E402
from stackik.viz import Viewer  # noqa: E402

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
Q_PANDA = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
TOOL = "panda_hand_tcp"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
VIEWPORT = {"width": 1100, "height": 720}

if CHROMIUM is None and os.environ.get("CI") == "true":
    pytest.fail("CI must run the browser test: .ci/run installs chromium", pytrace=False)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no system chromium on the PATH (apt-get install chromium)"
)


def wait_for(condition, timeout=60.0):
    """Poll ``condition`` until true (a generous wait for a loaded machine, not a speed check)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def pixels(png: bytes) -> np.ndarray:
    """RGB pixels of a PNG screenshot (H x W x 3, uint8), decoded with imageio (viser's)."""
    import imageio.v3 as iio

    return np.asarray(iio.imread(io.BytesIO(png)))[..., :3]


def canvas_pixels(page) -> np.ndarray:
    """The 3D view only: the left part of the page, clear of the side panel."""
    return pixels(page.screenshot())[:, : VIEWPORT["width"] - 450]


def test_viewer_renders_in_headless_chromium(tmp_path):
    robot = RobotModel(ROBOTS / "panda" / "panda.urdf", srdf_path=ROBOTS / "panda" / "panda.srdf")
    robot.update_kinematics(Q_PANDA)
    crate = np.eye(4)
    crate[:3, 3] = [0.45, -0.35, 0.1]
    robot.add_obstacle("crate", coal.Box(0.2, 0.2, 0.2), crate)
    solver = KinematicsSolver(robot, dt=0.01)
    tool = solver.add_frame_task("tool", TOOL)
    tool.gain = 10.0
    solver.add_posture_task("posture").priority = 1
    solver.configure_collision_constraint(0.01)
    viewer = Viewer(robot, solver, q=Q_PANDA, port=0, verbose=False)
    outside: list[str] = []

    def local_only(route):
        url = route.request.url
        if url.startswith(viewer.url) or url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=CHROMIUM,
                args=["--use-angle=swiftshader", "--enable-unsafe-swiftshader"],
            )
            page = browser.new_page(viewport=VIEWPORT)
            page.route("**/*", local_only)
            page.goto(viewer.url)
            assert wait_for(lambda: len(viewer.server.get_clients()) == 1)
            page.wait_for_selector("canvas", timeout=60_000)
            page.wait_for_selector("text=Solver", timeout=60_000)  # the panel is filled

            # The scene tree of the page lists the robot and its joint nodes.
            page.locator("svg.tabler-icon-adjustments").first.click()
            page.locator('[data-scene-node="/robot"] svg.tabler-icon-caret-right').click()
            page.wait_for_selector('[data-scene-node="/robot/panda_joint7"]', timeout=30_000)
            nodes = page.eval_on_selector_all(
                "[data-scene-node]", "els => els.map(e => e.dataset.sceneNode)"
            )
            assert {f"/robot/panda_joint{i}" for i in range(1, 8)} <= set(nodes)
            assert {"/robot/world", "/ground", "/overlays", "/world"} <= set(nodes)
            page.locator('[data-scene-node="/world"] svg.tabler-icon-caret-right').click()
            page.locator('[data-scene-node="/world/obstacles"] svg.tabler-icon-caret-right').click()
            page.wait_for_selector('[data-scene-node="/world/obstacles/crate"]', timeout=30_000)
            page.locator("svg.tabler-icon-arrow-back").first.click()  # back to the panel

            # Non-blank: the robot and the ground grid draw over the white background.
            time.sleep(1.0)
            before = canvas_pixels(page)
            assert (np.abs(before.astype(int) - 255).sum(axis=2) > 60).mean() > 0.02

            # Move the target through the server API; the robot's joint state follows.
            gizmo = viewer.target_controls["tool"]
            T = robot.get_frame_pose(TOOL)
            goal = T.translation + np.array([0.1, 0.2, -0.1])
            gizmo.position = goal
            assert wait_for(lambda: np.linalg.norm(viewer.configuration - Q_PANDA) > 0.2)

            def reached():
                kin = robot.create_kinematics(viewer.configuration)
                return np.linalg.norm(kin.frame_pose(TOOL).translation - goal) < 1e-3

            assert wait_for(reached)
            assert viewer.snapshot.status == "SUCCESS"
            time.sleep(1.0)  # a few frames for the page
            after = canvas_pixels(page)
            changed = (np.abs(after.astype(int) - before.astype(int)).sum(axis=2) > 60).mean()
            assert changed > 0.005, f"the rendered robot did not move ({changed:.4f})"

            # The obstacle is drawn: hiding it (the "Obstacles" checkbox) changes the pixels.
            viewer.controls["Run"].value = False  # a still robot from here
            time.sleep(1.0)
            shown = canvas_pixels(page)
            viewer.controls["Obstacles"].value = False
            time.sleep(1.0)
            hidden = canvas_pixels(page)
            viewer.controls["Obstacles"].value = True
            viewer.controls["Run"].value = True
            gone = (np.abs(shown.astype(int) - hidden.astype(int)).sum(axis=2) > 60).mean()
            assert gone > 0.002, f"hiding the obstacle changed nothing ({gone:.4f})"

            # The screenshot of the docs: without the software-rendering notice and tooltips.
            notice = page.locator(".mantine-Notification-root")
            for _ in range(20):
                if notice.count() == 0:
                    break
                try:  # a notice may close itself (and leave the DOM) while we click it
                    notice.locator("button.mantine-Notification-closeButton").first.click(
                        timeout=2000
                    )
                except sync_api.Error:
                    pass
                time.sleep(0.5)
            page.mouse.move(5, VIEWPORT["height"] // 2)
            time.sleep(0.5)
            shot = tmp_path / "viewer.png"
            page.screenshot(path=str(shot))
            assert pixels(shot.read_bytes()).shape[:2] == (VIEWPORT["height"], VIEWPORT["width"])
            if os.environ.get("STACKIK_SCREENSHOT"):
                shutil.copy(shot, os.environ["STACKIK_SCREENSHOT"])
            browser.close()
    finally:
        viewer.close()
    assert not outside, f"the page asked for outside resources: {outside}"
