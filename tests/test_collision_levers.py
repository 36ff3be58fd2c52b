"""The collision pairs' motion levers bound how fast their geometries move.

A pair's lever ``lever[k]`` bounds how far any point of its geometries' bounding spheres
moves per unit of velocity coordinate ``k``; the broadphase of the velocity step, the
step fraction of position IK and the motion check of Cartesian paths all rest on it.
Checked against Pinocchio's Jacobians at random configurations, on an arm whose
revolute joints carry prismatic joints (their extension lengthens the lever arm) and a
translating mimic follower.
"""

from __future__ import annotations

import coal
import numpy as np
import pinocchio as pin
import pytest

from inline_urdf import joint, link, sphere
from stackik import KinematicsSolver, RobotModel, SolverStatus
from stackik.constraints.collision import pair_levers
from stackik.model.pipeline import build_geometry_set

#: Revolute about z; prismatic along x (0.1 to 1.1 m out); revolute; prismatic along y
#: (-0.4 to 0.3 m); a finger whose prismatic joint mimics the last one twice over.
URDF = (
    '<robot name="telescope">'
    + link("base")
    + link("l1")
    + link("l2", sphere(0.02), "0.05 0 0")
    + link("l3", sphere(0.03))
    + link("l4", sphere(0.01), "0 0.02 0")
    + link("finger", sphere(0.015))
    + joint("j1", "revolute", "base", "l1", "0 0 0.2", (-3, 3))
    + joint("j2", "prismatic", "l1", "l2", "0.1 0 0", (0, 1.0), "1 0 0")
    + joint("j3", "revolute", "l2", "l3", "0.1 0 0", (-2, 2))
    + joint("j4", "prismatic", "l3", "l4", "0 0 0", (-0.4, 0.3), "0 1 0")
    + '<joint name="jf" type="prismatic"><parent link="l3"/><child link="finger"/>'
    '<origin xyz="0.05 0 0"/><axis xyz="1 0 0"/><mimic joint="j4" multiplier="2" '
    'offset="0.01"/><limit lower="-1" upper="1" effort="10" velocity="1"/></joint>' + "</robot>"
)


def telescope(mimic: str = "keep") -> RobotModel:
    robot = RobotModel.from_urdf_string(URDF, mimic=mimic)
    robot.add_obstacle("post", coal.Sphere(0.05), np.eye(4))  # (a static partner)
    return robot


def speeds(robot: RobotModel, q: np.ndarray, geometry: int) -> np.ndarray:
    """Per velocity coordinate, the fastest point of the geometry's bounding sphere [m/unit].

    ``|v_centre| + |omega| r``, with the centre's velocity and the angular velocity from
    Pinocchio's Jacobian of the geometry's placement (world-aligned, at the centre).
    """
    m, gm = robot.model, robot.collision_model
    d = m.createData()
    obj = gm.geometryObjects[geometry]
    pin.computeJointJacobians(m, d, q)
    pin.updateFramePlacements(m, d)
    J = pin.getFrameJacobian(m, d, obj.parentFrame, pin.LOCAL_WORLD_ALIGNED)
    oMf = d.oMf[obj.parentFrame]
    centre = (oMf * obj.placement).translation - oMf.translation
    v = J[:3] + np.cross(J[3:].T, centre).T  # (the point's velocity: v + omega x r)
    radius = obj.geometry.radius
    return np.linalg.norm(v, axis=0) + np.linalg.norm(J[3:], axis=0) * radius


@pytest.mark.parametrize("mimic", ["keep", "fold"])
def test_the_levers_bound_every_geometrys_speed_with_prismatic_joints_below_revolute_ones(
    mimic: str,
):
    robot = telescope(mimic)
    gs = build_geometry_set(robot, robot.world.state)
    post = gs.names.index("post")
    robot_geometries = list(range(gs.robot_count))
    pairs = np.array([(g, post) for g in robot_geometries], dtype=np.int64)
    lever = pair_levers(robot, gs, pairs)
    m = robot.model
    rng = np.random.default_rng(7)
    worst = np.zeros(len(pairs))
    for _ in range(300):
        q = rng.uniform(m.lowerPositionLimit, m.upperPositionLimit)
        for k, g in enumerate(robot_geometries):
            s = speeds(robot, q, g)
            assert np.all(s <= lever[k] + 1e-9), (gs.names[g], q, s, lever[k])
            worst[k] = max(worst[k], float(np.max(s / np.where(lever[k] > 0, lever[k], 1))))
    # (the bound is not loose for nothing: the far corners come within a few percent)
    assert worst.max() > 0.9
    # the base joint's lever on the telescoped link reaches past the prismatic travel
    l2 = gs.names.index("l2_0")
    assert lever[robot_geometries.index(l2)][0] >= 0.1 + 1.0 + 0.05 + 0.02


def test_a_cartesian_path_swinging_a_telescoped_link_through_a_plate_stops():
    robot = RobotModel.from_urdf_string(URDF)
    q0 = np.array([0.0, 0.8, 0.0, 0.0, 0.01])
    q1 = np.array([0.4, 0.8, -0.4, 0.0, 0.01])
    T1 = pin.SE3(robot.create_kinematics(q1).frame_pose("l3"))
    R = pin.utils.rotate("z", 0.2)  # (a thin plate across the arc l2's sphere sweeps)
    robot.add_obstacle("plate", coal.Box(0.3, 0.001, 0.3), pin.SE3(R, R @ [0.95, 0, 0.2]))
    solver = KinematicsSolver(robot)
    solver.configure_collision_constraint(0.0)
    res = solver.generate_path(
        q0, T1, "l3", 2, max_linear_step=1.0, max_angular_step=1.0, max_joint_jump=1.0
    )
    assert res.status == SolverStatus.CONSTRAINT_VIOLATION, res.status_message
    assert "between point 0 and point 1" in res.status_message
    # (coal on the joint-linear motion: the sphere of l2 goes into the plate)
    gm = robot.collision_model
    g = gm.getGeometryId("l2_0")
    d, gd = robot.model.createData(), pin.GeometryData(gm)
    plate = pin.SE3(R, R @ np.array([0.95, 0, 0.2]))
    depths = []
    for t in np.linspace(0.0, 1.0, 401):
        pin.updateGeometryPlacements(
            robot.model, d, gm, gd, pin.interpolate(robot.model, q0, q1, t)
        )
        M = gd.oMg[g]
        req, out = coal.DistanceRequest(), coal.DistanceResult()
        req.enable_signed_distance = True
        depths.append(
            coal.distance(
                gm.geometryObjects[g].geometry,
                coal.Transform3s(M.rotation, M.translation),
                coal.Box(0.3, 0.001, 0.3),
                coal.Transform3s(plate.rotation, plate.translation),
                req,
                out,
            )
        )
    assert min(depths) < -0.005
    assert depths[0] > 0.05 and depths[-1] > 0.05


@pytest.mark.parametrize("multiplier", [2.0, -3.0])
def test_a_translating_mimic_followers_lever_is_its_multiplier(multiplier: float):
    text = URDF.replace('multiplier="2"', f'multiplier="{multiplier}"')
    robot = RobotModel.from_urdf_string(text, mimic="fold")
    robot.add_obstacle("post", coal.Sphere(0.05), np.eye(4))
    gs = build_geometry_set(robot, robot.world.state)
    finger = gs.names.index("finger_0")
    lever = pair_levers(robot, gs, np.array([(finger, gs.names.index("post"))]))[0]
    j4 = robot.joint_infos[robot.model.getJointId("j4") - 1].idx_v
    assert lever[j4] == pytest.approx(abs(multiplier))  # (j4 is not on its path: the mimic alone)


#: A revolute base carrying a planar joint (x, y in the plane, a turn about z) and a ball.
PLANAR = (
    '<robot name="slider">'
    + link("base")
    + link("table")
    + link("puck", sphere(0.03), "0.1 0 0")
    + joint("j1", "revolute", "base", "table", "0 0 0.1", (-3, 3))
    + '<joint name="p" type="planar"><parent link="table"/><child link="puck"/>'
    '<origin xyz="0.2 0 0"/><axis xyz="0 0 1"/></joint>' + "</robot>"
)


def test_the_levers_bound_the_speed_above_a_planar_joint_at_its_corners():
    robot = RobotModel.from_urdf_string(PLANAR)
    lo, hi = robot.get_joint_limits()
    lo[1:3], hi[1:3] = -1.0, 1.0  # (x and y; the turn's cos and sin keep theirs)
    lo[3:5], hi[3:5] = -1.0, 1.0
    robot.set_joint_limits(lo, hi)
    robot.add_obstacle("post", coal.Sphere(0.05), np.eye(4))
    gs = build_geometry_set(robot, robot.world.state)
    puck = gs.names.index("puck_0")
    lever = pair_levers(robot, gs, np.array([(puck, gs.names.index("post"))]))[0]
    rng = np.random.default_rng(3)
    corners = [(1.0, 1.0), (-1.0, 1.0), (1.0, -1.0), (-1.0, -1.0)]
    for x, y in corners + [tuple(rng.uniform(-1, 1, 2)) for _ in range(100)]:
        a = rng.uniform(-np.pi, np.pi)
        q = np.array([rng.uniform(-3, 3), x, y, np.cos(a), np.sin(a)])
        assert np.all(speeds(robot, q, 0) <= lever + 1e-9), (q, speeds(robot, q, 0), lever)


def test_widened_joint_limits_lengthen_the_constraints_levers():
    robot = telescope()
    lo, hi = robot.get_joint_limits()
    hi[1] = 0.05  # (j2: a short telescope)
    robot.set_joint_limits(lo, hi)
    solver = KinematicsSolver(robot)
    solver.configure_collision_constraint(0.0)
    q = np.array([0.0, 0.02, 0.0, 0.0, 0.01])
    solver.solve_velocity(q)
    hi[1] = 1.0  # (widened after the constraint built its pairs)
    robot.set_joint_limits(lo, hi)
    q = np.array([0.0, 0.9, 0.0, 0.0, 0.01])
    solver.solve_velocity(q)
    col = solver.get_constraint("collision")
    names = col.pair_names()
    k = (
        names.index(("l2_0", "post"))
        if ("l2_0", "post") in names
        else names.index(("post", "l2_0"))
    )
    l2 = robot.collision_model.getGeometryId("l2_0")
    assert speeds(robot, q, l2)[0] <= col._pairs.lever[k][0] + 1e-9
    assert col._pairs.lever[k][0] >= 0.1 + 1.0 + 0.05 + 0.02
