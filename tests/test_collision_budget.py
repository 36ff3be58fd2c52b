"""A query budget with the pair cache: the cache's full scan keeps the pairs' bounds.

On a scan step every pair is listed; with a query budget the pairs with the smallest
distance bounds must still be queried first (the documented order), so a pair sitting at
its minimum keeps its row. The scan used to forget every bound, and the budget then
queried the pairs in index order: a SCARA's arm went 2.7 mm into a plate with SUCCESS.
Distances from coal, placed by Pinocchio.
"""

from __future__ import annotations

import warnings

import coal
import numpy as np
import pinocchio as pin

from inline_urdf import joint, link
from stackik import KinematicsSolver, RobotModel, TaskType
from stackik.errors import CollisionMarginWarning

#: A SCARA: two revolute joints, a prismatic quill, a revolute tool.
SCARA = (
    '<robot name="scara">'
    + link("base", '<cylinder radius="0.08" length="0.4"/>', "0 0 0.2")
    + link("l1", '<box size="0.4 0.08 0.06"/>', "0.2 0 0")
    + link("l2", '<box size="0.3 0.07 0.05"/>', "0.15 0 0")
    + link("quill", '<cylinder radius="0.02" length="0.3"/>')
    + link("tool", '<sphere radius="0.03"/>', "0 0 -0.03")
    + joint("j1", "revolute", "base", "l1", "0 0 0.45", (-2.5, 2.5))
    + joint("j2", "revolute", "l1", "l2", "0.4 0 0.06", (-2.5, 2.5))
    + joint("j3", "prismatic", "l2", "quill", "0.3 0 -0.05", (-0.3, 0.0))
    + joint("j4", "revolute", "quill", "tool", "0 0 -0.16", (-3, 3))
    + "</robot>"
)
Q0 = np.array([0.0591081235, 2.2523184816, -0.2567521162, 2.6918966828])
TARGET = np.array([0.3088712498, -0.6141473761, 0.2483107781])
PLATE_R = np.array(
    [
        [0.7900487003, -0.5651418049, -0.2375663940],
        [0.5140737274, 0.8218602694, -0.2455074344],
        [0.3339928952, 0.0718361878, 0.9398341918],
    ]
)
PLATE_P = np.array([0.2711019866, -0.1698458075, 0.1472004430])


def drive(cache: bool) -> tuple[list[bool], float]:
    """120 steps of the tool dragged into the plate, one exact query per step.

    Returns:
        Per step, whether l1/plate had a row; the smallest l1/plate distance by coal [m].
    """
    robot = RobotModel.from_urdf_string(SCARA)
    R, _ = np.linalg.qr(PLATE_R)  # (the rotation, orthonormal to rounding)
    R *= np.sign(np.diag(R))
    plate_pose = pin.SE3(R, PLATE_P)
    plate = coal.Box(0.4, 0.02, 0.4)
    robot.add_obstacle("plate", plate, plate_pose)
    solver = KinematicsSolver(robot, dt=0.01)
    task = solver.add_frame_task("t", "tool", TaskType.FRAME_POSITION)
    task.set_target_position(TARGET)
    task.gain = 5.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionMarginWarning)
        solver.configure_collision_constraint(0.02)
    col = solver.get_constraint("collision")
    if cache:
        col.enable_pair_cache(True, 50, 0.02, 64)
    col.set_refinement_budget_us(1)  # (the floor: one exact query per step)
    m, gm = robot.model, robot.collision_model
    d, gd = m.createData(), pin.GeometryData(gm)
    g = gm.getGeometryId("l1_0")
    req = coal.DistanceRequest()
    req.enable_signed_distance = True
    q, closest, rows = Q0.copy(), np.inf, []
    for _ in range(120):
        res = solver.solve_velocity(q)
        pairs = {(x.geometry_a, x.geometry_b) for x in solver.get_last_collision_debug_list()}
        rows.append(("l1_0", "plate") in pairs or ("plate", "l1_0") in pairs)
        q = pin.integrate(m, q, res.solution * 0.01)
        pin.updateGeometryPlacements(m, d, gm, gd, q)
        M = gd.oMg[g]
        dist = coal.distance(
            gm.geometryObjects[g].geometry,
            coal.Transform3s(M.rotation, M.translation),
            plate,
            coal.Transform3s(plate_pose.rotation, plate_pose.translation),
            req,
            coal.DistanceResult(),
        )
        closest = min(closest, dist)
    return rows, closest


def test_the_caches_scan_step_queries_the_smallest_bounds_first_under_a_budget():
    with_cache, closest_cache = drive(cache=True)
    _, closest_alone = drive(cache=False)
    # the pair at its minimum keeps its row through the scan step (step 50: index 49)
    assert all(with_cache[44:56]), with_cache[44:56]
    # the scan lists every pair but ranks them as the budget alone does
    assert closest_cache >= closest_alone - 1e-9
