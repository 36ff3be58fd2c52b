"""The viewer without a browser: shapes, overlays, the solver loop and the viser server API.

The browser test (``test_viewer_browser.py``) checks what a page renders; these check
what the viewer computes and sends, against independent computations (Pinocchio
forward kinematics, coal distances, the solver itself).
"""

from __future__ import annotations

import colorsys
import importlib.util
import subprocess
import sys
import time
from pathlib import Path

import coal
import numpy as np
import pinocchio as pin
import pytest

import stackik
from stackik import InvalidInput, KinematicsSolver, RobotModel, TaskNotFound, TaskType
from stackik.viz import ThreadedLoop, Viewer, distance_color
from stackik.viz.loop import level_scales
from stackik.viz.overlays import PairOverlay, inside_polygon, polygon_in_world, support_outline
from stackik.viz.shapes import COLLISION_RGB, DEFAULT_VISUAL_RGB, geometry_specs, primitives

ROOT = Path(__file__).resolve().parents[1]
ROBOTS = ROOT / "robots"
MESH_URDF = ROOT / "tests" / "data" / "mypkg" / "urdf" / "mesh_robot.urdf"
Q_PANDA = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
TOOL = "panda_hand_tcp"


@pytest.fixture(scope="module")
def panda():
    return RobotModel(ROBOTS / "panda" / "panda.urdf", srdf_path=ROBOTS / "panda" / "panda.srdf")


def panda_solver(robot, q=Q_PANDA):
    robot.update_kinematics(q)
    solver = KinematicsSolver(robot, dt=0.01)
    tool = solver.add_frame_task("tool", TOOL)
    tool.gain = 10.0
    solver.add_posture_task("posture").priority = 1
    solver.configure_collision_constraint(0.01)
    return solver


def wait_for(condition, timeout=30.0):
    """Poll ``condition`` until true; False after ``timeout`` s (a wait, not a speed check)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


# -- shapes --------------------------------------------------------------------------------------
def test_primitives_of_every_coal_shape():
    assert primitives(coal.Box(0.1, 0.2, 0.3))[0].size == pytest.approx((0.1, 0.2, 0.3))
    assert primitives(coal.Sphere(0.05))[0].size == (0.05,)
    assert primitives(coal.Ellipsoid(0.1, 0.2, 0.3))[0].size == pytest.approx((0.1, 0.2, 0.3))
    assert primitives(coal.Cylinder(0.05, 0.4))[0].size == pytest.approx((0.05, 0.4))
    capsule = primitives(coal.Capsule(0.05, 0.4))
    assert [p.kind for p in capsule] == ["cylinder", "sphere", "sphere"]
    assert capsule[1].offset == pytest.approx((0, 0, 0.2))
    assert capsule[2].offset == pytest.approx((0, 0, -0.2))
    cone = primitives(coal.Cone(0.1, 0.4))[0]
    assert cone.kind == "mesh"
    assert cone.vertices[:, 2].min() == pytest.approx(-0.2)  # base at -halfLength
    assert cone.vertices[:, 2].max() == pytest.approx(0.2)  # apex at +halfLength
    assert np.linalg.norm(cone.vertices[:-2, :2], axis=1) == pytest.approx(0.1)
    assert primitives(coal.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0)) == ()


def test_mesh_geometry_keeps_the_triangles_coal_loaded():
    robot = RobotModel(MESH_URDF, package_dirs=[ROOT / "tests" / "data"])
    visual, skipped = geometry_specs(robot.visual_model)
    assert not skipped
    cube = next(s for s in visual if s.name.startswith("cube"))
    (mesh,) = cube.parts
    assert mesh.kind == "mesh" and mesh.faces.shape == (12, 3)
    # The cube of side 0.1 m: every vertex at +-0.05.
    np.testing.assert_allclose(np.abs(mesh.vertices), 0.05)
    collision, _ = geometry_specs(robot.collision_model, collision=True)
    hull = next(s for s in collision if s.name.startswith("cube")).parts[0]
    assert hull.kind == "mesh" and hull.faces.max() < len(hull.vertices)
    assert {s.color for s in collision} == {COLLISION_RGB}


def test_geometry_specs_follow_the_urdf(panda):
    specs, skipped = geometry_specs(panda.visual_model)
    assert not skipped and len(specs) == panda.visual_model.ngeoms
    for spec, obj in zip(specs, panda.visual_model.geometryObjects, strict=True):
        assert spec.joint == obj.parentJoint
        np.testing.assert_allclose(spec.placement.homogeneous, obj.placement.homogeneous)
    # No <material> in the shipped URDFs: the viewer's default colour.
    assert {s.color for s in specs} == {DEFAULT_VISUAL_RGB}


# -- overlays ------------------------------------------------------------------------------------
def test_distance_color_scale():
    red = distance_color(0.01, 0.01, 0.05)
    assert red == (220, 30, 30) == distance_color(-0.1, 0.01, 0.05)
    assert distance_color(0.06, 0.01, 0.05) == (60, 180, 75) == distance_color(1.0, 0.01, 0.05)
    # Red, orange, yellow, green: the hue only grows with the distance.
    colors = [distance_color(0.01 + d, 0.01, 0.05) for d in np.linspace(0.0, 0.06, 40)]
    hues = [colorsys.rgb_to_hsv(*(np.array(c) / 255))[0] for c in colors]
    assert hues == sorted(hues) and hues[0] == 0.0 and hues[-1] > 0.3


def test_pair_segments_are_the_witness_points(panda):
    kin = panda.create_kinematics(Q_PANDA)
    overlay = PairOverlay(panda, show_within=0.1)
    seg = overlay.compute(kin, None, 0.01)
    panda.update_kinematics(Q_PANDA)
    distances = np.array(panda.compute_collision_distances())
    names = panda.get_collision_pair_names()
    expected = {names[k] for k in np.flatnonzero(distances <= 0.11)}
    assert set(seg.names) == expected and expected
    lengths = np.linalg.norm(seg.points[:, 1] - seg.points[:, 0], axis=1)
    np.testing.assert_allclose(lengths, np.abs(seg.distances), atol=1e-9)
    k = int(np.argmin(distances))
    assert seg.closest == (names[k][0], names[k][1], pytest.approx(distances[k]))
    for d, c in zip(seg.distances, seg.colors, strict=True):
        assert tuple(c) == distance_color(d, 0.01, overlay.span)
    # Only the watched pairs, and a per-pair override moves that pair's colour.
    watched = [names[k]]
    one = overlay.compute(kin, watched, 0.01, {frozenset(names[k]): distances[k] + 0.001})
    assert one.names == [names[k]]
    assert tuple(one.colors[0]) == (220, 30, 30)


def test_support_polygon_helpers():
    square = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], dtype=float)
    assert inside_polygon(np.array([0.5, 0.5]), square)
    assert inside_polygon(np.array([0.5, 0.5]), square[::-1])  # either orientation
    assert not inside_polygon(np.array([1.5, 0.5]), square)
    outline = support_outline(np.column_stack([square, np.zeros(4)]))
    assert outline.shape == (4, 2, 3)
    np.testing.assert_array_equal(outline[-1, 1], outline[0, 0])  # closed


def test_polygon_in_a_moving_frame(panda):
    kin = panda.create_kinematics(Q_PANDA)
    pts = polygon_in_world(kin, np.array([[0.1, 0.0], [0.0, 0.1], [0.0, 0.0]]), TOOL)
    T = kin.frame_pose(TOOL)
    np.testing.assert_allclose(pts[0], T.act(np.array([0.1, 0.0, 0.0])))
    np.testing.assert_allclose(polygon_in_world(kin, np.eye(3)[:, :2], "world")[:, 2], 0.0)


# -- the solver loop -------------------------------------------------------------------------------
def test_threaded_loop_step_is_solve_then_integrate(panda):
    solver = panda_solver(panda)
    twin = panda_solver(panda)  # the same problem, stepped by hand
    T = panda.get_frame_pose(TOOL)
    target = pin.SE3(T.rotation, T.translation + np.array([0.05, 0.05, 0.0]))
    loop = ThreadedLoop(solver, Q_PANDA, rate=100.0)  # dt 0.01: one step per tick
    loop.set_frame_target("tool", target)
    twin.get_task("tool").set_target_pose(target)
    q = Q_PANDA.copy()
    for _ in range(5):
        snap = loop.step()
        result = twin.solve_velocity(q)
        q = panda.integrate(q, result.solution, twin.dt)
    np.testing.assert_allclose(snap.q, q, atol=1e-12)
    assert snap.steps == 5 and snap.status == "SUCCESS"
    assert [(t.name, t.priority) for t in snap.tasks] == [("tool", 0), ("posture", 1)]
    assert snap.tasks[0].error == pytest.approx(np.linalg.norm(twin.get_task("tool").get_error()))
    loop.reset(Q_PANDA)
    np.testing.assert_array_equal(loop.snapshot().q, Q_PANDA)


def test_a_failing_step_stops_the_loop_and_says_why(panda, monkeypatch):
    solver = panda_solver(panda)

    def broken(q):
        raise stackik.InvalidInput("no good")

    monkeypatch.setattr(solver, "solve_velocity", broken)
    loop = ThreadedLoop(solver, Q_PANDA)
    loop.start()
    assert wait_for(lambda: loop.snapshot().status == "ERROR")
    loop.stop()
    assert loop.snapshot().status_message == "InvalidInput: no good"
    np.testing.assert_array_equal(loop.snapshot().q, Q_PANDA)


def test_steps_per_tick_keep_real_time(panda):
    solver = panda_solver(panda)
    solver.dt = 0.001
    assert ThreadedLoop(solver, Q_PANDA, rate=100.0).steps_per_tick == 10
    assert ThreadedLoop(solver, Q_PANDA, rate=10.0).steps_per_tick == 20  # capped
    with pytest.raises(InvalidInput):
        ThreadedLoop(solver, Q_PANDA, rate=0.0)


def test_level_scales_map_priorities_to_levels(panda):
    solver = panda_solver(panda)
    solver.add_joint_task("j", "panda_joint1", 0.0).priority = 7
    assert level_scales(solver, np.array([1.0, 0.5, 0.25])) == {0: 1.0, 1: 0.5, 7: 0.25}


# -- the viewer and its server ---------------------------------------------------------------------
needs_viser = pytest.mark.skipif(
    importlib.util.find_spec("viser") is None, reason="viser is not installed (the viz extra)"
)


def joint_node_pose(viewer, joint):
    node = viewer.joint_nodes[joint]
    return np.array(node.position), np.array(node.wxyz)


def test_import_stackik_viz_does_not_import_viser():
    code = "import sys, stackik.viz; print('viser' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT / "python"), "PATH": ""},
    )
    assert out.stdout.strip() == "False"


@needs_viser
def test_slider_mode_draws_the_configuration(panda):
    with Viewer(panda, q=Q_PANDA, port=0, verbose=False, start=False) as viewer:
        assert list(viewer.joint_sliders) == panda.controlled_joint_names
        assert viewer.target_controls == {} and viewer.snapshot is None
        assert len(viewer.robot_nodes) == panda.visual_model.ngeoms
        viewer.joint_sliders["panda_joint1"].value = 0.7
        viewer.refresh()
        q = viewer.configuration
        assert q[0] == pytest.approx(0.7) and q[1:] == pytest.approx(Q_PANDA[1:])
        data = panda.model.createData()
        pin.forwardKinematics(panda.model, data, q)
        jid = panda.model.getJointId("panda_joint4")
        position, quat = joint_node_pose(viewer, "panda_joint4")
        np.testing.assert_allclose(position, data.oMi[jid].translation, atol=1e-9)
        np.testing.assert_allclose(stackik.q2r(quat), data.oMi[jid].rotation, atol=1e-9)
        viewer.set_configuration(Q_PANDA)
        assert viewer.joint_sliders["panda_joint1"].value == pytest.approx(0.0)


@needs_viser
def test_dragging_a_target_moves_the_robot(panda):
    solver = panda_solver(panda)
    with Viewer(panda, solver, q=Q_PANDA, port=0, verbose=False) as viewer:
        assert set(viewer.target_controls) == {"tool"}
        gizmo = viewer.target_controls["tool"]
        T = panda.get_frame_pose(TOOL)
        np.testing.assert_allclose(gizmo.position, T.translation, atol=1e-9)
        # Move the gizmo through viser's server API, as a drag in the page would.
        goal = T.translation + np.array([0.1, 0.15, -0.1])
        gizmo.position = goal
        assert wait_for(lambda: np.linalg.norm(viewer.configuration - Q_PANDA) > 0.05)

        def reached():
            kin = panda.create_kinematics(viewer.configuration)
            return np.linalg.norm(kin.frame_pose(TOOL).translation - goal) < 1e-4

        assert wait_for(reached)
        snap = viewer.snapshot
        assert snap.status == "SUCCESS" and snap.steps > 0
        assert snap.tasks[0].name == "tool" and snap.tasks[0].error < 1e-3
        # The drawn robot is the solved configuration.
        viewer.refresh()
        kin = panda.create_kinematics(viewer.configuration)
        position, _ = joint_node_pose(viewer, "panda_joint7")
        jid = panda.model.getJointId("panda_joint7")
        np.testing.assert_allclose(position, kin.data.oMi[jid].translation, atol=1e-3)
        assert "| tool | 0 |" in viewer.panel_text


@needs_viser
def test_set_target_and_pause(panda):
    solver = panda_solver(panda)
    with Viewer(panda, solver, q=Q_PANDA, port=0, verbose=False) as viewer:
        with pytest.raises(TaskNotFound):
            viewer.set_target("posture", np.eye(4))
        T = panda.get_frame_pose(TOOL)
        up = T.translation + np.array([0.0, 0.0, 0.05])
        viewer.set_target("tool", pin.SE3(T.rotation, up))
        np.testing.assert_allclose(viewer.target_controls["tool"].position, up)
        assert wait_for(lambda: viewer.snapshot.tasks and viewer.snapshot.tasks[0].error < 1e-4)
        viewer.controls["Run"].value = False  # the "Run" checkbox of the page
        viewer.refresh()
        steps = viewer.snapshot.steps
        time.sleep(0.2)
        assert viewer.snapshot.steps == steps  # paused


@needs_viser
def test_play_replays_a_motion(panda):
    path = np.array([Q_PANDA + k * 0.01 for k in range(5)])
    with Viewer(panda, port=0, verbose=False, start=False) as viewer:
        viewer.play(path, dt=1000.0, loop=False)  # stays on the first configuration
        viewer.refresh()
        np.testing.assert_allclose(viewer.configuration, path[0])
        with pytest.raises(InvalidInput):
            viewer.play(np.zeros((0, 7)))
        viewer.set_configuration(Q_PANDA)  # ends the replay
        np.testing.assert_allclose(viewer.configuration, Q_PANDA)


@needs_viser
def test_com_and_support_polygon_on_a_floating_base():
    robot = RobotModel(ROBOTS / "humanoid" / "humanoid.urdf", floating_base=True)
    solver = KinematicsSolver(robot)
    kin = robot.create_kinematics()
    polygon = np.array([[-0.2, -0.2], [0.2, -0.2], [0.2, 0.2], [-0.2, 0.2]])
    solver.configure_com_constraint(polygon)
    with Viewer(robot, solver, port=0, verbose=False, start=False) as viewer:
        viewer.refresh()
        overlays = viewer.overlays
        assert overlays.com.visible
        np.testing.assert_allclose(overlays.com.position, kin.com, atol=1e-9)
        assert overlays.polygon is not None
        assert np.asarray(overlays.polygon.points).shape == (4, 2, 3)


@needs_viser
def test_bad_viewer_input(panda):
    with pytest.raises(InvalidInput):
        Viewer("robots/panda/panda.urdf", port=0, verbose=False)
    other = RobotModel(ROBOTS / "ur5" / "ur5.urdf", load_visuals=False)
    with pytest.raises(InvalidInput):
        Viewer(panda, KinematicsSolver(other), port=0, verbose=False)
    with pytest.raises(stackik.ShapeError):
        Viewer(panda, q=np.zeros(3), port=0, verbose=False)
    with pytest.raises(InvalidInput):
        Viewer(panda, port=0, verbose=False, fps=0.0)


@needs_viser
def test_without_visual_geometry_the_collision_geometry_shows():
    robot = RobotModel(ROBOTS / "ur5" / "ur5.urdf", load_visuals=False)
    with Viewer(robot, port=0, verbose=False, start=False) as viewer:
        assert viewer.robot_nodes == []
        assert viewer.controls["Collision geometry"].value
        viewer.refresh()
        assert viewer.joint_nodes  # the collision shapes hang on the joints


@needs_viser
def test_position_task_gizmo_has_no_rotation_handles(panda):
    panda.update_kinematics(Q_PANDA)
    solver = KinematicsSolver(panda)
    solver.add_frame_task("p", TOOL, TaskType.FRAME_POSITION)
    with Viewer(panda, solver, port=0, verbose=False, start=False) as viewer:
        assert viewer.target_controls["p"].disable_rotations
