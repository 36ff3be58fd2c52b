"""Pairs that no joint moves: a fixed base resting on a table.

Their distance is the same in every configuration (checked with coal called directly),
so the velocity step cannot change it: the pair stays watched and reported, its row
bounds nothing (the step of a solver that leaves the pair out is the same step), its
messages say so, and configuring the constraint warns with the exclusion to use.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import coal
import numpy as np
import pinocchio as pin
import pytest

from stackik import KinematicsSolver, RobotModel, SolverStatus
from stackik.errors import CollisionMarginWarning, FixedPairWarning

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
#: What a violation message says of a pair no joint velocity moves apart.
UNMOVED = "no joint velocity changes its distance, so no step can push it out"
#: A 5 cm table top whose upper face is the base's bottom face (z = 0).
TABLE = (coal.Box(1.0, 1.0, 0.05), np.array([0.0, 0.0, -0.025]))


def panda_on_table() -> RobotModel:
    robot = RobotModel(ROBOTS / "panda" / "panda.urdf", srdf_path=ROBOTS / "panda" / "panda.srdf")
    T = np.eye(4)
    T[:3, 3] = TABLE[1]
    robot.add_obstacle("table", TABLE[0], T)
    return robot


def base_table_distances(robot: RobotModel, q: np.ndarray) -> dict[str, float]:
    """coal's distance of each panda_link0 geometry to the table, placed by Pinocchio."""
    gm = robot.collision_model
    data = robot.model.createData()
    gd = pin.GeometryData(gm)
    pin.updateGeometryPlacements(robot.model, data, gm, gd, q)
    out = {}
    for g, obj in enumerate(gm.geometryObjects):
        if not obj.name.startswith("panda_link0"):
            continue
        req, res = coal.DistanceRequest(), coal.DistanceResult()
        req.enable_signed_distance = True
        M = gd.oMg[g]
        out[obj.name] = coal.distance(
            obj.geometry,
            coal.Transform3s(M.rotation, M.translation),
            TABLE[0],
            coal.Transform3s(np.eye(3), TABLE[1]),
            req,
            res,
        )
    return out


def hand_position(robot: RobotModel, q: np.ndarray) -> np.ndarray:
    """panda_hand's world position at ``q`` by Pinocchio's forward kinematics [m]."""
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, q)
    return data.oMf[robot.model.getFrameId("panda_hand")].translation.copy()


def reaching_solver(robot: RobotModel, **collision: object) -> KinematicsSolver:
    solver = KinematicsSolver(robot, dt=0.01)
    hand = solver.add_frame_task("hand", "panda_hand")
    robot.update_kinematics(READY)
    P = robot.get_frame_pose("panda_hand")
    hand.set_target_pose(pin.SE3(P.rotation, P.translation + np.array([0.1, 0.1, -0.1])))
    solver.add_posture_task("posture").priority = 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionMarginWarning)
        solver.configure_collision_constraint(0.02, **collision)
    return solver


def test_the_base_on_the_table_keeps_its_distance_in_every_configuration():
    robot = panda_on_table()
    rng = np.random.default_rng(3)
    lo, hi = robot.model.lowerPositionLimit, robot.model.upperPositionLimit
    ref = base_table_distances(robot, READY)
    assert ref and all(abs(d) < 1e-6 for d in ref.values())  # resting on it
    for _ in range(5):
        q = rng.uniform(lo, hi)
        assert base_table_distances(robot, q) == pytest.approx(ref, abs=1e-9)


def test_configuring_warns_of_the_fixed_pairs_below_their_minimum_with_the_exclusion():
    robot = panda_on_table()
    solver = KinematicsSolver(robot, dt=0.01)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        solver.configure_collision_constraint(0.02)
    fixed = [
        w.message
        for w in caught
        if isinstance(w.message, CollisionMarginWarning) and "moves apart" in str(w.message)
    ]
    assert len(fixed) == 1
    # its own class (a CollisionMarginWarning), which the margin warnings are not
    assert [w.message for w in caught if isinstance(w.message, FixedPairWarning)] == fixed
    names = {(a, b) for a, b, _, _ in fixed[0].pairs}
    assert names == {(g, "table") for g in base_table_distances(robot, READY)}
    for _, _, d, minimum in fixed[0].pairs:
        assert abs(d) < 1e-6 and minimum == 0.02
    assert "exclude_pairs=[('panda_link0_0', 'table')" in str(fixed[0])
    # once per pair: a rebuild of the same pairs (a new global minimum) stays quiet
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        assert solver.set_collision_min_distance(0.02)
    assert not [w for w in again if "no joint moves apart" in str(w.message)]
    # left out: no warning
    other = KinematicsSolver(robot, dt=0.01)
    with warnings.catch_warnings(record=True) as quiet:
        warnings.simplefilter("always")
        other.configure_collision_constraint(0.02, exclude_pairs=[("panda_link0", "table")])
    assert not [w for w in quiet if "no joint moves apart" in str(w.message)]


def test_new_obstacles_at_the_base_warn_at_the_callers_line_and_keep_nothing():
    """A tracker naming each new person anew: every warning names the caller's line, and
    neither Python's warning registries nor the constraint keep one entry per name."""
    import sys

    robot = panda_on_table()
    solver = reaching_solver(robot)
    q = READY.copy()

    def registries() -> int:
        return sum(
            len(getattr(m, "__warningregistry__", {}))
            for name, m in list(sys.modules.items())
            if name.startswith("stackik") or name == __name__
        )

    def visit(k: int) -> list[warnings.WarningMessage]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            robot.add_obstacle(f"person{k}", coal.Sphere(0.05), pin.SE3(np.eye(3), np.zeros(3)))
            solver.solve_velocity(q)  # (the step rebuilds the pairs and warns)
            robot.remove_obstacle(f"person{k}")
            solver.solve_velocity(q)
        return [w for w in caught if issubclass(w.category, FixedPairWarning)]

    first = visit(0)
    assert len(first) == 1 and "person0" in str(first[0].message)
    assert first[0].filename == __file__  # (the line that stepped, not stackik's)
    before = registries()
    for k in range(1, 40):
        (w,) = visit(k)
        assert f"person{k}" in str(w.message)
    assert registries() == before
    constraint = solver.get_constraint("collision")
    assert len(constraint._warned_fixed) <= len(constraint.pair_names())
    # a person who comes back below the minimum is warned of again
    assert len(visit(3)) == 1


def test_a_fixed_pair_row_bounds_nothing_and_the_step_is_the_step_without_it():
    """Stepping toward a target with the base on the table gives, bit for bit, the joint
    velocities of a solver that leaves the base/table pairs out; every step reports the
    pair (COLLISION_VIOLATED) without claiming to push it out."""
    robot = panda_on_table()
    kept = reaching_solver(robot)
    left_out = reaching_solver(robot, exclude_pairs=[("panda_link0", "table")])
    problem = kept.engine.build_problem(READY, advance=False)
    rows = problem.constraint_slices["collision"]
    C, lower = problem.C[rows], problem.lower[rows]
    fixed = ~np.any(C != 0.0, axis=1)
    assert fixed.any() and np.all(lower[fixed] == -np.inf)
    assert np.all(np.isfinite(lower[~fixed]))  # the arm's own rows keep their bounds
    debug = {(d.geometry_a, d.geometry_b): d for d in kept.evaluate_collision_debug_list(READY)}
    assert debug[("panda_link0_0", "table")].lower_bound == -np.inf
    assert not np.any(debug[("panda_link0_0", "table")].jacobian)
    assert np.isfinite(debug[("panda_hand_0", "table")].lower_bound)
    q = READY.copy()
    for _ in range(60):
        a = kept.solve_velocity(q)
        b = left_out.solve_velocity(q)
        np.testing.assert_array_equal(a.solution, b.solution)
        assert b.status != SolverStatus.COLLISION_VIOLATED
        assert a.status == SolverStatus.COLLISION_VIOLATED
        assert "panda_link0_" in a.status_message and "/table" in a.status_message
        assert UNMOVED in a.status_message
        assert "recovery rate" not in a.status_message
        assert f"(solver: {b.status_message})" in a.status_message
        last = {(d.geometry_a, d.geometry_b): d for d in kept.get_last_collision_debug_list()}
        assert last[("panda_link0_0", "table")].lower_bound == -np.inf
        q = robot.integrate(q, a.solution, 0.01)
    start = hand_position(robot, READY)
    goal = kept.get_task("hand").target_pose.translation
    end = hand_position(robot, q)
    # the hand closes in as its task law alone says, (1 - gain dt) per step, the table
    # notwithstanding
    law = (1.0 - kept.get_task("hand").gain * 0.01) ** 60
    ratio = np.linalg.norm(goal - end) / np.linalg.norm(goal - start)
    assert ratio == pytest.approx(law, rel=1e-2)


def test_position_ik_converges_and_names_the_fixed_pair():
    robot = panda_on_table()
    solver = reaching_solver(robot)
    target = solver.get_task("hand").target_pose
    solver.remove_task("hand")
    res = solver.solve_position(READY, target, "panda_hand")
    assert res.status == SolverStatus.COLLISION_VIOLATED, res.status_message
    assert res.status_message.startswith("converged in")
    assert UNMOVED in res.status_message
    reached = hand_position(robot, res.solution)
    assert np.linalg.norm(reached - target.translation) < 1e-3
    clear = reaching_solver(robot, exclude_pairs=[("panda_link0", "table")])
    clear.remove_task("hand")
    assert clear.solve_position(READY, target, "panda_hand").status == SolverStatus.SUCCESS


def test_a_movable_pair_below_its_minimum_is_still_pushed_out_at_the_recovery_rate():
    robot = panda_on_table()
    robot.update_kinematics(READY)
    hand = robot.get_frame_pose("panda_hand").translation
    T = np.eye(4)
    T[:3, 3] = hand + np.array([0.0, 0.0, 0.19])  # above the hand: 8 mm from panda_link6
    robot.add_obstacle("ball", coal.Sphere(0.03), T)
    solver = reaching_solver(robot, exclude_pairs=[("panda_link0", "table")])
    res = solver.solve_velocity(READY)
    assert res.status == SolverStatus.COLLISION_VIOLATED, res.status_message
    assert "panda_link6_2/ball at distance 8.00 mm" in res.status_message
    assert ": the step pushes it out at the recovery rate (solver: " in res.status_message
    # (and it does: coal, placed by Pinocchio, before and after the step)
    before, after = (
        ball_distance(robot, q, "panda_link6_2", T)
        for q in (READY, pin.integrate(robot.model, READY, res.solution * 0.01))
    )
    assert abs(before - 0.008) < 1e-6
    assert after > before + 1e-4


def ball_distance(robot: RobotModel, q: np.ndarray, geometry: str, T: np.ndarray) -> float:
    """coal's distance of a robot geometry (placed by Pinocchio) to a 3 cm ball at ``T``."""
    gm = robot.collision_model
    gd = pin.GeometryData(gm)
    pin.updateGeometryPlacements(robot.model, robot.model.createData(), gm, gd, q)
    g = gm.getGeometryId(geometry)
    M = gd.oMg[g]
    req, out = coal.DistanceRequest(), coal.DistanceResult()
    return coal.distance(
        gm.geometryObjects[g].geometry,
        coal.Transform3s(M.rotation, M.translation),
        coal.Sphere(0.03),
        coal.Transform3s(np.eye(3), T[:3, 3]),
        req,
        out,
    )


def test_a_long_warning_lists_five_pairs_and_keeps_them_all():
    robot = panda_on_table()
    for i in range(7):  # balls sunk into the base, none of them moved by a joint
        T = np.eye(4)
        T[:3, 3] = (0.02 * i - 0.06, 0.0, 0.05)
        robot.add_obstacle(f"ball{i}", coal.Sphere(0.03), T)
    solver = KinematicsSolver(robot, dt=0.01)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        solver.configure_collision_constraint(0.02)
    (warning,) = [w.message for w in caught if "moves apart" in str(w.message)]
    pairs = {(a, b) for a, b, _, _ in warning.pairs}
    assert len(pairs) == len(warning.pairs) >= 8  # the table and the balls, per geometry
    assert f" and {len(pairs) - 5} more (the warning's pairs)" in str(warning)
    assert str(warning).count(" mm (minimum ") == 5
    assert str(warning).rstrip(".").endswith(", ...]")


def test_a_least_violating_step_does_not_claim_to_push_the_pair_out():
    """The hand inside a 0.4 m box: no step clears every pair (``INFEASIBLE``), and the
    least-violating step can close a pair further; the message says so instead of
    promising the recovery rate."""
    robot = panda_on_table()
    robot.update_kinematics(READY)
    T = np.eye(4)
    T[:3, 3] = robot.get_frame_pose("panda_hand").translation
    robot.add_obstacle("crate", coal.Box(0.4, 0.4, 0.4), T)
    solver = reaching_solver(robot, exclude_pairs=[("panda_link0", "table")])
    res = solver.solve_velocity(READY)
    assert res.status == SolverStatus.COLLISION_VIOLATED, res.status_message
    assert "(solver: " in res.status_message and "least-violating" in res.status_message
    assert "/crate" in res.status_message
    assert "the step pushes it out at the recovery rate" not in res.status_message
    assert "its rows ask for the recovery rate, but the constraints admit no step" in (
        res.status_message
    )
    # the solver's note names its most violated row, as without the violation report
    assert "; most violated: collision pair " in res.status_message
    # (the hand's geometries are inside the crate: coal, placed by Pinocchio)
    gm = robot.collision_model
    data = robot.model.createData()
    gd = pin.GeometryData(gm)
    pin.updateGeometryPlacements(robot.model, data, gm, gd, READY)
    g = gm.getGeometryId("panda_hand_0")
    req, out = coal.DistanceRequest(), coal.DistanceResult()
    req.enable_signed_distance = True
    M = gd.oMg[g]
    depth = coal.distance(
        gm.geometryObjects[g].geometry,
        coal.Transform3s(M.rotation, M.translation),
        coal.Box(0.4, 0.4, 0.4),
        coal.Transform3s(np.eye(3), T[:3, 3]),
        req,
        out,
    )
    assert depth < -0.05
