"""Query limits: a time budget (``SPEED``'s included) and ``nearest_points_all_pairs=False``.

- The pair cache's full scan keeps the pairs' bounds: on a scan step every pair is
  listed; with a query budget the most urgent pairs must still be queried first, so a
  pair sitting at its minimum keeps its row. The scan used to forget every bound, and
  the budget then queried the pairs in index order: a SCARA's arm went 2.7 mm into a
  plate with SUCCESS.
- A query limit never skips a pair whose distance bound is below its minimum: every
  pair below its minimum is among the step's hits, and the step is COLLISION_VIOLATED
  naming the deepest. A one-query budget and the nearest-pair-only mode used to starve
  never-measured pairs' rivals: a humanoid's hand went 54 mm (budget) and 67 mm
  (nearest only) into its thigh with SUCCESS.
- The budget's per-query cost is measured on the exact queries alone: it used to be the
  whole collision phase over the query count, so a Panda among 1000 far boxes (a fixed
  cost of ~400 us per step) got one query per step from ``SPEED``'s 300 us and stayed
  80 mm inside a ball with SUCCESS.

Distances from coal, placed by Pinocchio.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import coal
import numpy as np
import pinocchio as pin

from inline_urdf import joint, link
from stackik import KinematicsSolver, RobotModel, SolverStatus, TaskType
from stackik.constraints import CollisionConstraint
from stackik.constraints import _collision_kernel as ck
from stackik.errors import CollisionMarginWarning

ROBOTS = Path(__file__).resolve().parents[1] / "robots"

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


def scara_at_plate() -> tuple[RobotModel, KinematicsSolver, coal.Box, pin.SE3]:
    """The SCARA with its tool task toward TARGET past the tilted plate, 20 mm margin."""
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
    return robot, solver, plate, plate_pose


def drive(cache: bool) -> tuple[list[bool], float]:
    """120 steps of the tool dragged into the plate, one exact query per step.

    Returns:
        Per step, whether l1/plate had a row; the smallest l1/plate distance by coal [m].
    """
    robot, solver, plate, plate_pose = scara_at_plate()
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


# -- a query limit never skips a pair below its minimum ------------------------------------------
def coal_distances(robot: RobotModel, q: np.ndarray, names: list[tuple[str, str]]) -> np.ndarray:
    """coal's signed distance of each named pair (geometry or obstacle names) at ``q``."""
    gm = robot.collision_model
    data, gd = robot.model.createData(), pin.GeometryData(gm)
    pin.updateGeometryPlacements(robot.model, data, gm, gd, q)
    shapes = {}
    for g, obj in enumerate(gm.geometryObjects):
        M = gd.oMg[g]
        shapes[obj.name] = (obj.geometry, coal.Transform3s(M.rotation, M.translation))
    for name in robot.world.get_obstacle_names():
        T = robot.world.get_obstacle_pose(name)
        shape = robot.world.get_obstacle(name).geometry
        shapes[name] = (shape, coal.Transform3s(T.rotation, T.translation))
    req = coal.DistanceRequest()
    req.enable_signed_distance = True
    req.gjk_tolerance, req.epa_tolerance = 1e-9, 1e-7
    out = np.empty(len(names))
    for i, (a, b) in enumerate(names):
        out[i] = coal.distance(*shapes[a], *shapes[b], req, coal.DistanceResult())
    return out


def check_reported(
    solver: KinematicsSolver, col: CollisionConstraint, q: np.ndarray, res: object
) -> int:
    """Every pair coal finds below its minimum at ``q`` by more than 0.1 mm is reported.

    The step is COLLISION_VIOLATED, naming the deepest pair (coal's), and every such pair
    has rows (a hit ranked most urgent). Returns how many pairs were below.
    """
    names = col.pair_names()
    gap = coal_distances(solver.robot, q, names) - col._pairs.pf[:, ck.PF_MIN]
    below = np.flatnonzero(gap < -1e-4)
    if below.size:
        assert res.status == SolverStatus.COLLISION_VIOLATED, (res.status, gap.min())
        deepest = np.flatnonzero(gap < gap.min() + 1e-6)  # (a symmetric body: ties)
        named = [f"collision pair {a}/{b} at distance" for a, b in (names[k] for k in deepest)]
        assert any(n in res.status_message for n in named), (named, res.status_message)
        assert set(below.tolist()) <= set(col.last_pairs)
    return int(below.size)


def humanoid_into_its_thigh(**configure: object) -> tuple[KinematicsSolver, CollisionConstraint]:
    """The floating humanoid, self-collision only, its left hand driven across its body."""
    robot = RobotModel(
        ROBOTS / "humanoid" / "humanoid.urdf",
        srdf_path=ROBOTS / "humanoid" / "humanoid.srdf",
        floating_base=True,
        load_visuals=False,
    )
    q = pin.neutral(robot.model)
    robot.update_kinematics(q)
    solver = KinematicsSolver(robot, dt=0.01)
    hand = solver.add_frame_task("lh", "left_hand", TaskType.FRAME_POSITION)
    solver.add_frame_task("base", "pelvis", TaskType.FRAME_POSE, priority=1)
    hand.gain = 2.0
    hand.set_target_position(
        robot.get_frame_pose("left_hand").translation + np.array([0.0, 0.21, 0.175])
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionMarginWarning)
        solver.configure_collision_constraint(0.02, **configure)
    col = solver.get_constraint("collision")
    assert isinstance(col, CollisionConstraint)
    return solver, col


def drive_and_check(solver: KinematicsSolver, col: CollisionConstraint, steps: int = 80) -> dict:
    """``steps`` velocity steps, each checked by :func:`check_reported`; what they did."""
    q = pin.neutral(solver.robot.model)
    seen = {"below": 0, "skipped": 0, "exhausted": 0, "max_queries": 0}
    for _ in range(steps):
        res = solver.solve_velocity(q)
        seen["below"] += check_reported(solver, col, q, res)
        seen["skipped"] += col.skipped_queries
        seen["exhausted"] += res.collision_budget_exhausted
        seen["max_queries"] = max(seen["max_queries"], res.collision_exact_distance_queries)
        assert res.collision_budget_exhausted is (col.skipped_queries > 0)
        q = solver.robot.integrate(q, res.solution, solver.dt)
    return seen


def test_a_one_query_budget_still_queries_every_pair_that_may_be_below_its_minimum():
    solver, col = humanoid_into_its_thigh()
    col.set_refinement_budget_us(1)  # (the floor: one or two queries per step)
    seen = drive_and_check(solver, col)
    assert seen["below"] > 0  # (the start: a forearm 0.15 mm inside the pelvis's margin)
    assert seen["exhausted"] > 40  # the budget did skip pairs, and said so
    # Without the budget, the same drive reports the same way (the reference).
    solver, col = humanoid_into_its_thigh()
    drive_and_check(solver, col)


def test_nearest_pair_only_still_queries_every_pair_that_may_be_below_its_minimum():
    solver, col = humanoid_into_its_thigh(nearest_points_all_pairs=False)
    seen = drive_and_check(solver, col)
    assert seen["below"] > 0
    # the other candidates are skipped, and counted so (they used to count as bound-culled)
    assert seen["skipped"] > 0 and seen["exhausted"] > 40


def test_the_limit_keeps_the_pairs_below_their_minimum_then_the_most_urgent():
    """apply_budget on a hand-made state: the must pairs whatever the limit, then urgency."""
    pf = np.zeros((6, ck.PF_COLUMNS))
    pf[:, ck.PF_MIN] = 0.02
    # bounds: never measured, below, far (slow), near (can reach it this step), far (fast)
    pf[:, ck.PF_LOW] = [-np.inf, 0.015, 0.06, 0.0205, 0.05, 0.03]
    pf[:, ck.PF_MOTION] = [0.0, 0.0, 0.001, 0.001, 0.01, 0.001]
    cfg = np.zeros(ck.CFG_SIZE)
    cfg[ck.CFG_ALL_PAIRS] = 1.0
    cfg[ck.CFG_QUERY_BUDGET] = 1
    query = np.arange(6, dtype=np.int64)
    kept = ck.apply_budget(query, 6, pf, cfg)
    assert kept == 2 and sorted(query[:2]) == [0, 1]  # the limit of 1 is exceeded by both
    # then: can reach its minimum within the step (slack 0.5 mm <= 1 mm), by time to
    # reach it: 0.03 / 0.01 = 3 steps (k = 4) before 0.01 / 0.001 = 10 (k = 5), 40 (k = 2)
    assert query[2:].tolist() == [3, 4, 5, 2]
    cfg[ck.CFG_QUERY_BUDGET] = 4
    query = np.arange(6, dtype=np.int64)
    assert ck.apply_budget(query, 6, pf, cfg) == 4 and query[2:4].tolist() == [3, 4]
    cfg[ck.CFG_QUERY_BUDGET] = 0
    cfg[ck.CFG_ALL_PAIRS] = 0.0  # nearest only: one query beside the must pairs
    query = np.arange(6, dtype=np.int64)
    assert ck.apply_budget(query, 6, pf, cfg) == 2
    cfg[ck.CFG_ALL_PAIRS] = 1.0  # no limit: nothing reordered
    query = np.arange(6, dtype=np.int64)
    assert ck.apply_budget(query, 6, pf, cfg) == 6 and query.tolist() == list(range(6))


def test_speed_among_many_far_obstacles_measures_the_queries_not_the_phase():
    """SPEED (300 us) on a Panda among 1000 far boxes, a ball through its forearm."""
    robot = RobotModel(
        ROBOTS / "panda" / "panda.urdf",
        srdf_path=ROBOTS / "panda" / "panda.srdf",
        load_visuals=False,
    )
    rng = np.random.default_rng(0)
    for k in range(1000):  # 2.5 m to 4 m away: never near the arm
        d = rng.normal(size=3)
        d *= rng.uniform(2.5, 4.0) / np.linalg.norm(d)
        robot.add_obstacle(f"far{k}", coal.Box(0.05, 0.05, 0.05), pin.SE3(np.eye(3), d))
    q = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
    robot.update_kinematics(q)
    ball = pin.SE3(np.eye(3), robot.get_frame_pose("panda_link4").translation.copy())
    robot.add_obstacle("ball", coal.Sphere(0.04), ball)
    solver = KinematicsSolver(robot, dt=0.01)
    tool = solver.add_frame_task("tool", "panda_hand_tcp", TaskType.FRAME_POSITION)
    tool.set_target_position(
        robot.get_frame_pose("panda_hand_tcp").translation + np.array([0.0, 0.1, 0.0])
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionMarginWarning)
        solver.configure_collision_constraint(0.02)
    solver.set_collision_tuning_mode("speed")
    col = solver.get_constraint("collision")
    assert isinstance(col, CollisionConstraint)
    names = col.pair_names()
    assert len(names) > 20000
    near = [k for k, (a, b) in enumerate(names) if not (a.startswith("far") or b.startswith("far"))]
    near_names = [names[k] for k in near]
    far = np.array([k for k in range(len(names)) if k not in set(near)])
    assert coal_distances(robot, q, [names[k] for k in far]).min() > 1.0  # (and stay so)
    thresholds = col._pairs.pf[near, ck.PF_MIN] + col.activation
    below = 0
    for i in range(25):
        res = solver.solve_velocity(q)
        d = coal_distances(robot, q, near_names)
        gap = d - col._pairs.pf[near, ck.PF_MIN]
        if gap.min() < -1e-4:
            below += 1
            assert res.status == SolverStatus.COLLISION_VIOLATED
        # every pair within its activation distance is queried (PRECISE queries these 11)
        assert res.collision_exact_distance_queries >= np.count_nonzero(d < thresholds)
        if i >= 3:  # the budget allows at least 15 queries (20 us each at most)
            assert 0.05 <= col._query_us <= 20.0
            assert col._cfg[ck.CFG_QUERY_BUDGET] >= 15
            assert not res.collision_budget_exhausted
        q = robot.integrate(q, res.solution, solver.dt)
    assert below >= 3  # the ball started deep in the forearm, and the steps said so


def test_a_budget_that_never_binds_gives_the_bits_of_no_budget():
    """The budget's three calls (the exact queries timed) give the one call's results."""

    def run(budget: int) -> list:
        robot, solver, _, _ = scara_at_plate()
        solver.set_collision_refinement_time_budget_us(budget)
        q, out = Q0.copy(), []
        for _ in range(60):
            res = solver.solve_velocity(q)
            out.append((res.solution.copy(), res.status, res.collision_exact_distance_queries))
            q = robot.integrate(q, res.solution, solver.dt)
        return out

    # 10 s: more queries than the pairs at any cost the measurement can give (<= 20 us)
    timed, plain = run(10_000_000), run(0)
    assert any(n > 0 for _, _, n in plain)
    for (x, sx, nx), (y, sy, ny) in zip(timed, plain, strict=True):
        assert np.array_equal(x, y) and sx == sy and nx == ny
