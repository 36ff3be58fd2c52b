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
import threading
import time
from pathlib import Path

import coal
import numpy as np
import pinocchio as pin
import pytest

import stackik
from stackik import InvalidInput, KinematicsSolver, RobotModel, TaskNotFound, TaskType
from stackik.model.collision import convex_hull
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


# -- the world: obstacles, their gizmos, attached objects, world pairs -------------------------
CUBE_OBJ = ROOT / "tests" / "data" / "mypkg" / "meshes" / "cube.obj"


@pytest.fixture
def panda_world():
    """A Panda of its own (the module's Panda keeps an empty world)."""
    return RobotModel(
        ROBOTS / "panda" / "panda.urdf",
        srdf_path=ROBOTS / "panda" / "panda.srdf",
        load_visuals=False,
    )


def pose(xyz, rpy=(0.0, 0.0, 0.0)):
    return pin.SE3(pin.rpy.rpyToMatrix(*rpy), np.asarray(xyz, dtype=float))


def node_pose(node):
    """A node's pose in its parent's frame, from what viser holds (and sends)."""
    return pin.SE3(stackik.q2r(np.array(node.wxyz)), np.array(node.position, dtype=float))


def client_drag(viewer, name, position, wxyz):
    """Deliver the message a page sends while the user drags an obstacle's gizmo.

    The message goes through viser's own dispatch (as if from a connected browser): it
    sets the gizmo's pose and fires the gizmo's update callbacks in viser's thread pool.
    """
    import asyncio

    from viser import _messages

    server = viewer.server
    gizmo = viewer.obstacle_controls[name]
    message = _messages.TransformControlsUpdateMessage(
        gizmo.name, tuple(float(x) for x in wxyz), tuple(float(x) for x in position)
    )
    done = asyncio.run_coroutine_threadsafe(
        server._websock_server._handle_incoming_message(0, message), server._event_loop
    )
    done.result(timeout=10.0)


def test_obstacle_primitives_draw_planes_as_patches_with_their_normal():
    from stackik.viz.shapes import (
        NORMAL_LENGTH,
        PLANE_PATCH_SIZE,
        PLANE_PATCH_THICKNESS,
        anchor_point,
        obstacle_primitives,
    )

    n = np.array([1.0, 2.0, 2.0]) / 3.0
    for cls, solid in ((coal.Plane, False), (coal.Halfspace, True)):
        patch, normal = obstacle_primitives(cls(n, 0.3))
        assert patch.kind == "box"
        assert patch.size == pytest.approx(
            (PLANE_PATCH_SIZE, PLANE_PATCH_SIZE, PLANE_PATCH_THICKNESS)
        )
        R = stackik.q2r(np.array(patch.wxyz))
        np.testing.assert_allclose(R[:, 2], n, atol=1e-12)  # the patch's thin axis is the normal
        # Its faces: the plane itself (plane), or the boundary on top (half-space n.x <= d).
        top = n @ np.asarray(patch.offset) + 0.5 * PLANE_PATCH_THICKNESS
        assert top == pytest.approx(0.3 + (0.0 if solid else 0.5 * PLANE_PATCH_THICKNESS))
        np.testing.assert_allclose(normal.vertices, [0.3 * n, (0.3 + NORMAL_LENGTH) * n])
        np.testing.assert_allclose(anchor_point(cls(n, 0.3)), 0.3 * n)
    # Opposite to z: half a turn, still a rotation.
    patch, _ = obstacle_primitives(coal.Halfspace(np.array([0.0, 0.0, -1.0]), 0.0))
    np.testing.assert_allclose(stackik.q2r(np.array(patch.wxyz))[:, 2], [0, 0, -1], atol=1e-12)
    # Every other shape: the robot's parts; a hull's gizmo at its bounding-box centre.
    assert obstacle_primitives(coal.Box(0.1, 0.2, 0.3)) == primitives(coal.Box(0.1, 0.2, 0.3))
    pts = np.array([[1.0, 1.0, 1.0], [1.2, 1.0, 1.0], [1.0, 1.4, 1.0], [1.0, 1.0, 1.6]])
    hull = convex_hull(pts)
    np.testing.assert_allclose(anchor_point(hull), [1.1, 1.2, 1.3])
    np.testing.assert_allclose(anchor_point(coal.Sphere(0.1)), 0.0)


def world_shapes():
    """One obstacle of every kind the world takes, at poses with rotations."""
    hull_points = np.array([[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1], [0.1, 0.1, 0.1]])
    return {
        "box": (coal.Box(0.3, 0.2, 0.1), pose([0.6, 0.4, 0.2], (0.1, 0.2, 0.3))),
        "sphere": (coal.Sphere(0.05), pose([0.5, -0.4, 0.5])),
        "capsule": (coal.Capsule(0.04, 0.3), pose([-0.4, 0.4, 0.3], (0.5, 0.0, 0.0))),
        "cylinder": (coal.Cylinder(0.05, 0.4), pose([-0.4, -0.4, 0.3], (0.0, 0.6, 0.0))),
        "cone": (coal.Cone(0.06, 0.2), pose([0.0, 0.6, 0.4], (0.0, 0.0, 0.7))),
        "ellipsoid": (coal.Ellipsoid(0.05, 0.1, 0.15), pose([0.0, -0.6, 0.4], (0.3, 0.0, 0.0))),
        "hull": (
            convex_hull(hull_points.astype(float)),
            pose([0.7, 0.0, 0.7], (0.0, 0.0, 1.0)),
        ),
        "plane": (coal.Plane(np.array([0.0, -1.0, 0.0]), 0.9), pose([0.0, 0.0, 0.0])),
        "floor": (coal.Halfspace(np.array([0.0, 0.0, 1.0]), -0.1), pose([0.0, 0.0, 0.0])),
    }


def check_parts(nodes, geometry):
    """The parts under an obstacle's group node have the shape's kind and sizes."""
    kinds = [type(n).__name__ for n in nodes[1:]]
    g = geometry
    name = type(g).__name__
    if name == "Box":
        assert kinds == ["BoxHandle"]
        np.testing.assert_allclose(nodes[1].dimensions, 2 * np.asarray(g.halfSide))
    elif name == "Sphere":
        assert kinds == ["IcosphereHandle"] and nodes[1].radius == pytest.approx(g.radius)
    elif name == "Ellipsoid":
        assert kinds == ["IcosphereHandle"] and nodes[1].radius == pytest.approx(1.0)
        np.testing.assert_allclose(nodes[1].scale, g.radii)
    elif name == "Cylinder":
        assert kinds == ["CylinderHandle"]
        assert (nodes[1].radius, nodes[1].height) == pytest.approx((g.radius, 2 * g.halfLength))
    elif name == "Capsule":
        assert kinds == ["CylinderHandle", "IcosphereHandle", "IcosphereHandle"]
        assert nodes[2].radius == pytest.approx(g.radius)
        np.testing.assert_allclose([nodes[2].position[2], nodes[3].position[2]],
                                   [g.halfLength, -g.halfLength])  # fmt: skip
    elif name == "Cone":
        assert kinds == ["MeshHandle"]
        v = np.asarray(nodes[1].vertices)
        assert (v[:, 2].min(), v[:, 2].max()) == pytest.approx((-g.halfLength, g.halfLength))
        assert np.linalg.norm(v[:, :2], axis=1).max() == pytest.approx(g.radius, rel=1e-6)
    elif name in ("Plane", "Halfspace"):
        assert kinds == ["BoxHandle", "LineSegmentsHandle"]
        R = stackik.q2r(np.array(nodes[1].wxyz))
        np.testing.assert_allclose(R[:, 2], g.n, atol=1e-7)
        assert nodes[1].dimensions[0] == pytest.approx(4.0)
    else:  # a hull or a triangle mesh: its own vertices
        assert kinds == ["MeshHandle"]
        points = g.points() if hasattr(g, "points") else g.vertices()
        np.testing.assert_allclose(np.asarray(nodes[1].vertices), np.asarray(points), atol=1e-6)


@needs_viser
def test_the_viewer_draws_every_obstacle_with_its_shape_size_and_pose(panda_world):
    robot = panda_world
    shapes = world_shapes()
    for name, (shape, T) in shapes.items():
        robot.add_obstacle(name, shape, T)
    robot.add_obstacle_mesh("mesh", CUBE_OBJ, pose([0.3, 0.3, 0.9], (0.2, 0.0, 0.0)), convex=False)
    part = coal.Box(0.04, 0.04, 0.12)
    in_hand = pose([0.0, 0.0, 0.16], (0.0, 0.0, 0.4))
    robot.attach_object("part", "panda_hand", part, in_hand, allowed_links=["panda_link7"])
    with Viewer(robot, q=Q_PANDA, port=0, verbose=False, start=False) as viewer:
        viewer.refresh()
        nodes = viewer.obstacle_nodes
        assert sorted(nodes) == sorted([*shapes, "mesh"])
        mesh = robot.world.get_obstacle("mesh").geometry
        assert type(mesh).__name__.startswith("BVHModel")  # the exact triangles
        for name, (shape, T) in [*shapes.items(), ("mesh", (mesh, None))]:
            T = robot.get_obstacle_pose(name)
            np.testing.assert_allclose(node_pose(nodes[name][0]).homogeneous, T.homogeneous,
                                       atol=1e-12)  # fmt: skip
            check_parts(nodes[name], shape)
            assert nodes[name][0].name.startswith("/world/obstacles/")
        # A plane's patch: in the world, its centre is on the plane (n . x = d).
        plane = nodes["plane"]
        centre = node_pose(plane[0]).act(np.asarray(plane[1].position, dtype=float))
        assert np.array([0.0, -1.0, 0.0]) @ centre == pytest.approx(0.9)
        # The attached object sits on its link, by Pinocchio's forward kinematics.
        data = robot.model.createData()
        pin.framesForwardKinematics(robot.model, data, Q_PANDA)
        hand = data.oMf[robot.model.getFrameId("panda_hand")]
        (group, box) = viewer.attached_nodes["part"]
        np.testing.assert_allclose(node_pose(group).homogeneous, (hand * in_hand).homogeneous,
                                   atol=1e-9)  # fmt: skip
        np.testing.assert_allclose(box.dimensions, [0.04, 0.04, 0.12])
        # It moves with the robot.
        viewer.joint_sliders["panda_joint1"].value = 0.5
        viewer.refresh()
        pin.framesForwardKinematics(robot.model, data, viewer.configuration)
        hand = data.oMf[robot.model.getFrameId("panda_hand")]
        np.testing.assert_allclose(node_pose(group).homogeneous, (hand * in_hand).homogeneous,
                                   atol=1e-9)  # fmt: skip
        # Every obstacle has a gizmo at its anchor; the plane's at its point nearest the origin.
        gizmos = viewer.obstacle_controls
        assert sorted(gizmos) == sorted(nodes)
        np.testing.assert_allclose(gizmos["box"].position, shapes["box"][1].translation)
        np.testing.assert_allclose(gizmos["plane"].position, [0.0, -0.9, 0.0])
        np.testing.assert_allclose(gizmos["floor"].position, [0.0, 0.0, -0.1])


@needs_viser
def test_the_viewer_follows_the_world_moved_from_another_thread(panda_world):
    robot = panda_world
    robot.add_obstacle("ball", coal.Sphere(0.05), pose([0.5, 0.3, 0.5]))
    with Viewer(robot, port=0, verbose=False) as viewer:  # the display thread runs
        assert wait_for(lambda: "ball" in viewer.obstacle_nodes)
        group = viewer.obstacle_nodes["ball"][0]
        final = pose([0.3, -0.2, 0.6], (0.3, 0.2, 0.1))

        def sensor():  # another thread publishing poses, as a tracker would
            for k in range(50):
                robot.set_obstacle_pose("ball", pose([0.5, 0.3 - 0.01 * k, 0.5]))
                time.sleep(0.002)
            robot.set_obstacle_pose("ball", final)

        thread = threading.Thread(target=sensor)
        thread.start()
        thread.join()

        def at(node, T):
            return np.allclose(node_pose(node).homogeneous, T.homogeneous, atol=1e-9)

        assert wait_for(lambda: at(group, final))
        assert wait_for(lambda: at(viewer.obstacle_controls["ball"], final))  # the gizmo too
        # Added and removed from another thread: the nodes appear and disappear.
        adder = threading.Thread(
            target=robot.add_obstacle,
            args=("post", coal.Cylinder(0.04, 0.8), pose([0.4, 0.4, 0.4])),
        )
        adder.start()
        adder.join()
        assert wait_for(lambda: "post" in viewer.obstacle_nodes)
        check_parts(viewer.obstacle_nodes["post"], coal.Cylinder(0.04, 0.8))
        old = viewer.obstacle_nodes["ball"] + [viewer.obstacle_controls["ball"]]
        remover = threading.Thread(target=robot.remove_obstacle, args=("ball",))
        remover.start()
        remover.join()
        assert wait_for(lambda: "ball" not in viewer.obstacle_nodes)
        assert "ball" not in viewer.obstacle_controls
        for node in old:  # gone from the scene: viser warns on a second removal
            with pytest.warns(UserWarning, match="already removed"):
                node.remove()
        # Replaced under the same name by a larger shape: redrawn.
        robot.remove_obstacle("post")
        robot.add_obstacle("post", coal.Cylinder(0.08, 1.0), pose([0.4, 0.4, 0.4]))
        assert wait_for(
            lambda: (
                "post" in viewer.obstacle_nodes
                and viewer.obstacle_nodes["post"][1].radius == pytest.approx(0.08)
            )
        )
        # A new world for the robot: its obstacles replace the old ones.
        world = stackik.World()
        world.add_obstacle("crate", coal.Box(0.2, 0.2, 0.2), pose([0.5, 0.0, 0.1]))
        robot.set_world(world)
        assert wait_for(lambda: sorted(viewer.obstacle_nodes) == ["crate"])


@needs_viser
def test_dragging_an_obstacle_gizmo_moves_the_obstacle(panda_world, monkeypatch):
    robot = panda_world
    robot.add_obstacle("box", coal.Box(0.2, 0.2, 0.2), pose([0.5, 0.3, 0.3]))
    robot.add_obstacle("floor", coal.Halfspace(np.array([0.0, 0.0, 1.0]), -0.1))
    solver = panda_solver(robot)
    world = robot.world
    calls = []
    publish = world.set_obstacle_pose

    def recording(name, pose_, stamp=None):
        calls.append((name, pin.SE3(pose_)))
        publish(name, pose_, stamp)

    monkeypatch.setattr(world, "set_obstacle_pose", recording)
    with Viewer(robot, solver, q=Q_PANDA, port=0, verbose=False, start=False) as viewer:
        viewer.refresh()
        assert calls == []  # drawing publishes nothing
        # A drag in the page: viser fires the gizmo's callback, which publishes the pose.
        R = pin.rpy.rpyToMatrix(0.0, 0.0, 0.5)
        client_drag(viewer, "box", [0.4, -0.2, 0.35], stackik.r2q(R))
        assert wait_for(lambda: len(calls) == 1)
        name, T = calls[0]
        assert name == "box"
        np.testing.assert_allclose(T.translation, [0.4, -0.2, 0.35], atol=1e-12)
        np.testing.assert_allclose(T.rotation, R, atol=1e-12)
        np.testing.assert_allclose(robot.get_obstacle_pose("box").homogeneous, T.homogeneous)
        # The solver sees it at its next step: its nearest box pair is where the box now is.
        near = [i for i in solver.evaluate_collision_debug_list(Q_PANDA) if i.geometry_b == "box"]
        corner = T.actInv(near[0].point_b)
        assert np.abs(corner).max() == pytest.approx(0.1, abs=1e-9)  # on the moved box
        viewer.refresh()  # the drawing follows; nothing published twice
        np.testing.assert_allclose(node_pose(viewer.obstacle_nodes["box"][0]).homogeneous,
                                   T.homogeneous, atol=1e-12)  # fmt: skip
        assert len(calls) == 1
        # A half-space's gizmo sits on its boundary: the obstacle moves by the drag.
        client_drag(viewer, "floor", [0.0, 0.0, -0.25], [1.0, 0.0, 0.0, 0.0])
        assert wait_for(lambda: len(calls) == 2)
        np.testing.assert_allclose(calls[1][1].translation, [0.0, 0.0, -0.15], atol=1e-12)
        # A pose set on the gizmo through viser's API is a drag too (applied at a refresh).
        viewer.obstacle_controls["box"].position = np.array([0.6, 0.0, 0.2])
        viewer.refresh()
        assert len(calls) == 3 and calls[2][0] == "box"
        np.testing.assert_allclose(calls[2][1].translation, [0.6, 0.0, 0.2])
        # A degenerate pose (a zero quaternion) is not published; the gizmo goes back.
        before = robot.get_obstacle_pose("box")
        gizmo = viewer.obstacle_controls["box"]
        client_drag(viewer, "box", [1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0])

        def back():
            viewer.refresh()
            return np.allclose(gizmo.position, before.translation, atol=1e-12)

        assert wait_for(back)
        np.testing.assert_allclose(robot.get_obstacle_pose("box").homogeneous, before.homogeneous)
        assert [name for name, _ in calls] == ["box", "floor", "box"]
        # The checkbox hides the gizmos, not the obstacles.
        viewer.controls["Obstacle gizmos"].value = False
        viewer.refresh()
        assert not any(g.visible for g in viewer.obstacle_controls.values())
        assert all(n[0].visible for n in viewer.obstacle_nodes.values())
        viewer.controls["Obstacles"].value = False
        viewer.refresh()
        assert not any(n[0].visible for n in viewer.obstacle_nodes.values())


@needs_viser
def test_the_pair_overlay_shows_obstacle_pairs_as_the_solver_measures_them(panda_world):
    robot = panda_world
    robot.update_kinematics(Q_PANDA)
    tcp = robot.get_frame_pose(TOOL).translation
    ball = pose(tcp + np.array([0.0, 0.09, 0.0]))
    robot.add_obstacle("ball", coal.Sphere(0.03), ball, min_distance=0.02)
    robot.add_obstacle("table", coal.Box(0.5, 0.5, 0.02), pose([0.5, 0.0, tcp[2] - 0.08]))
    robot.add_obstacle("far", coal.Sphere(0.05), pose([-1.0, -1.0, 1.5]))
    solver = panda_solver(robot)  # min_distance 0.01
    solver.configure_collision_constraint(0.01, exclude_pairs=[("*", "table")])
    with Viewer(robot, solver, q=Q_PANDA, port=0, verbose=False, start=False) as viewer:
        viewer.refresh()
        seg = viewer.pair_segments
        expected = {
            (i.geometry_a, i.geometry_b): i
            for i in solver.evaluate_collision_debug_list(Q_PANDA)
            if i.geometry_b in ("ball", "far") and i.distance <= i.min_distance + 0.1
        }
        shown = {
            names: k for k, names in enumerate(seg.names) if names[1] in ("ball", "far", "table")
        }
        assert set(shown) == set(expected) and expected  # no table pair: it is excluded
        for names, k in shown.items():
            info = expected[names]
            np.testing.assert_allclose(seg.points[k, 0], info.point_a, atol=1e-12)
            np.testing.assert_allclose(seg.points[k, 1], info.point_b, atol=1e-12)
            assert seg.distances[k] == pytest.approx(info.distance, abs=1e-12)
            assert seg.min_distances[k] == pytest.approx(0.02)  # the ball's own
            assert seg.labels[k] == "ball"
            assert tuple(seg.colors[k]) == distance_color(info.distance, 0.02, 0.05)
        # An independent distance: coal between the hand and the ball.
        name = min(shown, key=lambda n: seg.distances[shown[n]])
        gid = robot.collision_model.getGeometryId(name[0])
        data = robot.model.createData()
        pin.framesForwardKinematics(robot.model, data, Q_PANDA)
        gdata = robot.collision_model.createData()
        pin.updateGeometryPlacements(robot.model, data, robot.collision_model, gdata, Q_PANDA)
        M = gdata.oMg[gid]
        hand = robot.collision_model.geometryObjects[gid].geometry
        req, res = coal.DistanceRequest(), coal.DistanceResult()
        d = coal.distance(
            hand, coal.Transform3s(M.rotation, M.translation),
            coal.Sphere(0.03), coal.Transform3s(np.eye(3), ball.translation), req, res,
        )  # fmt: skip
        assert seg.distances[shown[name]] == pytest.approx(d, abs=1e-6)
        assert seg.closest[:2] == name
        # The page labels the nearest segment with the obstacle's name.
        label = viewer.overlays.labels["ball"]
        assert label.text == f"ball: {1e3 * d:.0f} mm"
        np.testing.assert_allclose(label.position, seg.points[shown[name], 1], atol=1e-7)
        # The ball moves away: its segments and its label go at the next refresh.
        robot.set_obstacle_pose("ball", pose([-1.0, 1.0, 1.5]))
        viewer.refresh()
        assert "ball" not in viewer.pair_segments.labels and "ball" not in viewer.overlays.labels


def coal_distances(robot, q, shape, M):
    """coal's distance [m] from each collision geometry of ``robot`` at ``q`` to ``shape`` at M."""
    data, gdata = robot.model.createData(), robot.collision_model.createData()
    pin.updateGeometryPlacements(robot.model, data, robot.collision_model, gdata, q)
    out = {}
    for gid, geom in enumerate(robot.collision_model.geometryObjects):
        Mg = gdata.oMg[gid]
        out[geom.name] = coal.distance(
            geom.geometry, coal.Transform3s(Mg.rotation, Mg.translation),
            shape, coal.Transform3s(M.rotation, M.translation),
            coal.DistanceRequest(), coal.DistanceResult(),
        )  # fmt: skip
    return out


def check_new_obstacle_pairs(viewer, world, name, shape, offset):
    """Add ``name`` to ``world`` ``offset`` [m] from the tool, refresh once: its watched pairs
    are drawn at coal's distances, and the overlay and the panel name the nearest one."""
    robot, solver = viewer.robot, viewer.solver
    q = viewer.configuration
    M = pose(robot.create_kinematics(q).frame_pose(TOOL).translation + np.asarray(offset))
    world.add_obstacle(name, shape, M)
    viewer.refresh()
    assert name in viewer.obstacle_nodes
    d = coal_distances(robot, q, shape, M)
    watched = {a for a, b in solver.get_active_collision_pairs() if b == name}
    expected = {a for a in watched if d[a] <= 0.01 + 0.1}  # within 10 cm of min_distance
    seg = viewer.pair_segments
    shown = {seg.names[k][0]: k for k, label in enumerate(seg.labels) if label == name}
    assert set(shown) == expected and expected
    for a, k in shown.items():
        assert seg.distances[k] == pytest.approx(d[a], abs=1e-6)
    nearest = min(expected, key=d.get)
    assert 0.01 < d[nearest] < 0.02  # outside its minimum, within 1 cm of it
    assert seg.closest[:2] == (nearest, name)
    assert seg.closest[2] == pytest.approx(d[nearest], abs=1e-6)
    line = f"**Nearest its minimum** {nearest} / {name}: {d[nearest]:.3f} m"
    assert wait_for(lambda: viewer.refresh() or line in viewer.panel_text)


@needs_viser
def test_an_obstacle_added_while_the_loop_does_not_step_has_its_pairs_drawn(panda_world):
    """Not started, or paused with the page's "Run" checkbox, the loop takes no step that
    would report the new layout's pairs: the viewer reads them from the solver."""
    robot = panda_world
    solver = panda_solver(robot)
    under = [0.0, 0.0, -0.075]  # a 5 cm ball, 15 mm from the hand
    with Viewer(robot, solver, q=Q_PANDA, port=0, verbose=False, start=False) as viewer:
        viewer.refresh()
        assert viewer.obstacle_nodes == {} and "ball" not in viewer.pair_segments.labels
        check_new_obstacle_pairs(viewer, robot.world, "ball", coal.Sphere(0.05), under)
        # The solver given a world of its own: the viewer shows its obstacle's pairs.
        own = stackik.World()
        solver.set_world(own)
        viewer.refresh()
        assert "ball" not in viewer.obstacle_nodes and "ball" not in viewer.pair_segments.labels
        check_new_obstacle_pairs(viewer, own, "crate", coal.Box(0.1, 0.1, 0.1), under)
    solver.set_world(None)
    robot.remove_obstacle("ball")
    with Viewer(robot, solver, q=Q_PANDA, port=0, verbose=False) as viewer:
        assert wait_for(lambda: viewer.snapshot.steps > 0)
        viewer.controls["Run"].value = False  # the user pauses the loop in the page
        viewer.refresh()
        steps = viewer.snapshot.steps
        check_new_obstacle_pairs(viewer, robot.world, "ball", coal.Sphere(0.05), under)
        assert viewer.snapshot.steps == steps  # no step ran: the pairs came from the solver


def test_the_threaded_loop_reports_the_watched_pairs(panda_world):
    robot = panda_world
    solver = panda_solver(robot)
    loop = ThreadedLoop(solver, Q_PANDA)
    watched = loop.snapshot().watched
    assert watched.names == tuple(solver.get_active_collision_pairs())
    assert watched.min_distance == 0.01
    # An obstacle added while the loop runs: reported after the next tick, with its minimum.
    robot.add_obstacle("ball", coal.Sphere(0.05), pose([0.5, 0.3, 0.5]), min_distance=0.03)
    watched = loop.step().watched
    assert watched.names == tuple(solver.get_active_collision_pairs())
    assert ("panda_hand_0", "ball") in watched.names
    assert watched.overrides[frozenset(("panda_hand_0", "ball"))] == 0.03
    assert watched.world_layout is robot.world.state.layout
    # Without a collision constraint: None (every pair is shown).
    bare = KinematicsSolver(robot)
    assert ThreadedLoop(bare, Q_PANDA).snapshot().watched.names is None


def test_a_hull_built_without_its_faces_is_drawn_as_the_hull_of_its_points():
    """A coal ConvexBase made without its faces (convexHull(points, False)) is drawn as
    the hull of its points, its gizmo at their bounding box's centre."""
    from stackik.viz.shapes import anchor_point, primitives

    pts = np.array([[x, y, z] for x in (0.0, 0.2) for y in (0.0, 0.3) for z in (0.0, 0.1)])
    v = coal.StdVec_Vec3s()
    for p in pts:
        v.append(p)
    hull = coal.ConvexBase.convexHull(v, False, None)
    assert not hasattr(hull, "polygons") or not hull.num_polygons
    (mesh,) = primitives(hull)
    assert mesh.kind == "mesh" and len(mesh.faces) == 12  # (a box: two triangles a face)
    np.testing.assert_allclose(mesh.vertices.min(axis=0), pts.min(axis=0), atol=1e-9)
    np.testing.assert_allclose(mesh.vertices.max(axis=0), pts.max(axis=0), atol=1e-9)
    np.testing.assert_allclose(anchor_point(hull), [0.1, 0.15, 0.05])


def test_a_quiet_viewer_prints_no_address_box(capsys):
    """verbose=False keeps viser's address box off stdout (viser 1.1 prints it anyway)."""
    from stackik.viz import Viewer

    robot = RobotModel(ROBOTS / "panda" / "panda.urdf", load_visuals=False)
    with Viewer(robot, port=0, verbose=False, start=False):
        pass
    assert "╭" not in capsys.readouterr().out
