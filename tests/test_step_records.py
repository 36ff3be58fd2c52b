"""What a velocity step reports beside its solution: the stall message and the collision counts.

A stalled step names its highest-priority level, the task speed it asks for and what
blocks it; a step with a collision constraint counts its watched pairs, exact queries and
culled pairs. Each is checked against the task's own error and gain, and the collision
constraint's own counters, read after the step; the pairs culled by the bounding-sphere
test and by the distance bounds against the balls' closed forms and coal's distances.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from stackik import KinematicsSolver, RobotModel, SolverStatus
from test_collision_budget import coal_distances
from test_world import robot_obstacle_distances

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
PANDA = ROBOTS / "panda" / "panda.urdf"
READY = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
J4 = 3  # velocity (and q) index of panda_joint4


def test_a_stall_names_its_level_its_demand_and_what_blocks_it():
    robot = RobotModel(PANDA, load_visuals=False)
    solver = KinematicsSolver(robot, dt=0.01)
    hi = robot.get_joint_limits()[1]
    q = READY.copy()
    q[J4] = hi[J4]  # at the upper limit, asked to go 0.2 rad past it
    task = solver.add_joint_task("j4", "panda_joint4", hi[J4] + 0.2)
    task.gain = 3.0
    res = solver.solve_velocity(q)
    assert res.status == SolverStatus.NO_PROGRESS
    assert not res.solution.any() and res.task_scales[0] == 0.0
    demand = abs(task.gain * float(task.get_error()[0]))  # one row, weight 1
    assert math.isclose(demand, 3.0 * 0.2, rel_tol=1e-12)
    assert robot.get_joint_velocity_index("panda_joint4") == J4
    assert res.status_message == (
        f"stalled: the highest-priority level (j4) got scale 0 and the step is zero while it "
        f"asks for |xdot| = {demand:.3g}; blocked by saturated joints [{J4}] (panda_joint4) "
        "and constraint rows []"
    )
    assert res.saturated_joints == [J4]
    assert solver.describe_saturation() == [
        f"joint 'panda_joint4' (velocity index {J4}) at a bound of its velocity box, "
        f"dq = {res.solution[J4]:.4g}"
    ]
    assert res.collision_pairs_considered == res.collision_exact_distance_queries == 0
    assert not res.collision_budget_exhausted  # (no collision constraint)
    assert math.isclose(solver.engine.top_demand, demand, rel_tol=1e-12)
    q[J4] = hi[J4] - 0.1  # room to move: no stall
    assert solver.solve_velocity(q).status == SolverStatus.SUCCESS


def _linear_rows(solver: KinematicsSolver, name: str, spec: str) -> None:
    """Constraint ``name``: a row per letter, ``f`` free (``|dq_1| <= 1``), ``b`` blocking
    (``dq_4 <= 0``); replaces one of that name."""
    from stackik.constraints import LinearConstraint

    C = np.zeros((len(spec), 7))
    lower, upper = np.full(len(spec), -1.0), np.full(len(spec), 1.0)
    for r, kind in enumerate(spec):
        C[r, 0 if kind == "f" else J4] = 1.0
        upper[r] = 1.0 if kind == "f" else 0.0
    solver.add_constraint(LinearConstraint(name, solver.kinematics, C, lower, upper), True)


def _stalled_solver(a: str, b: str) -> KinematicsSolver:
    """A Panda whose top joint task pushes joint 4 up; constraints ``a`` then ``b``."""
    solver = KinematicsSolver(RobotModel(PANDA, load_visuals=False), dt=0.01)
    solver.add_joint_task("top", "panda_joint4", float(READY[J4]) + 0.3)
    _linear_rows(solver, "a", a)
    _linear_rows(solver, "b", b)
    return solver


def test_a_repeated_stall_names_what_blocks_each_step_as_a_fresh_solver_does():
    """The stall message's note is kept while a stall repeats; it follows every change.

    Each step's message is compared with that of a solver built afresh in the same
    state (no earlier stall to remember): the same rows again, the blocking row moved to
    another index, and the same row index owned by the other constraint.
    """
    solver = _stalled_solver("", "b")
    cases = [("", "b", 0, "b"), ("", "b", 0, "b"), ("ff", "b", 2, "b"), ("f", "fb", 2, "b"),
             ("ffb", "f", 2, "a"), ("f", "fb", 2, "b")]  # fmt: skip
    for a, b, row, owner in cases:
        _linear_rows(solver, "a", a)
        _linear_rows(solver, "b", b)
        res = solver.solve_velocity(READY)
        fresh = _stalled_solver(a, b).solve_velocity(READY)
        assert res.status == fresh.status == SolverStatus.NO_PROGRESS
        assert res.saturated_constraints == fresh.saturated_constraints == [row]
        assert res.status_message == fresh.status_message
        assert res.status_message.endswith(f"constraint rows [{row}] ({owner})")
    # the joint at its position limit blocks instead, then another joint: the note follows
    solver.remove_constraint("b")
    hi = solver.robot.get_joint_limits()[1]
    for j in (J4, 5, J4):
        name = f"panda_joint{j + 1}"
        q = READY.copy()
        q[j] = hi[j]
        solver.clear_tasks()
        solver.add_joint_task("top", name, float(hi[j]) + 0.2)
        res = solver.solve_velocity(q)
        assert res.status == SolverStatus.NO_PROGRESS
        assert res.status_message.endswith(
            f"blocked by saturated joints [{j}] ({name}) and constraint rows []"
        ), res.status_message


def _collision_solver(
    robot: RobotModel, target: tuple[float, float, float]
) -> tuple[KinematicsSolver, Any]:
    """A Panda solver: the hand to ``target`` (pointing down), 20 mm collision minimum."""
    solver = KinematicsSolver(robot, dt=0.01)
    solver.add_frame_task("ee", "panda_hand").set_target_pose(
        np.array(target), np.diag([1.0, -1.0, -1.0])
    )
    solver.configure_collision_constraint(0.02)
    return solver, solver.get_constraint("collision")


def _panda() -> RobotModel:
    return RobotModel(PANDA, srdf_path=ROBOTS / "panda" / "panda.srdf", load_visuals=False)


def test_a_step_counts_the_collision_constraints_pairs_and_queries():
    robot = _panda()
    solver, col = _collision_solver(robot, (0.3, 0.0, 0.25))
    q = READY.copy()
    seen_queries = 0
    for i in range(40):
        res = solver.solve_velocity(q)
        watched = len(col.pair_names())
        assert res.collision_pairs_considered == watched > 0
        assert res.collision_exact_distance_queries == col.exact_queries
        # bound-culled: not listed by the distance bounds; sphere-culled: listed, then
        # ruled out by the bounding spheres (results.py's definitions)
        culled = watched - col.listed_pairs
        assert res.collision_bound_culled_pairs == culled >= 0
        spheres = col.listed_pairs - col.exact_queries - col.skipped_queries
        assert res.collision_sphere_culled_pairs == spheres >= 0
        if i == 0:  # every bound is -inf after configuring: nothing is bound-culled
            assert culled == 0
        assert res.collision_budget_exhausted is (col.skipped_queries > 0)
        seen_queries += col.exact_queries
        q = robot.integrate(q, res.solution, solver.dt)
    assert seen_queries > 0


def _ball_radius(shape: object) -> float:
    """Radius of the bounding ball about the shape's origin (closed forms: coal's primitives)."""
    import coal

    if isinstance(shape, coal.Sphere):
        return shape.radius
    if isinstance(shape, coal.Box):
        return 0.5 * float(np.linalg.norm(shape.halfSide * 2.0))
    assert isinstance(shape, coal.Cylinder), type(shape)
    return math.hypot(shape.radius, shape.halfLength)


def test_the_sphere_culled_pairs_are_those_whose_bounding_balls_are_apart():
    """A Panda (boxes, cylinders, spheres) among 100 far balls: the pairs the sphere test
    rules out are counted as sphere-culled, those the distance bounds rule out as
    bound-culled (both used to be counted as bound-culled). Each ball from the shapes'
    closed forms, placed by Pinocchio; the distances from coal."""
    import coal
    import pinocchio as pin

    robot = _panda()
    for k in range(100):
        pose = pin.SE3(np.eye(3), np.array([1.5 + 0.05 * k, 0.0, 0.5]))
        robot.add_obstacle(f"o{k}", coal.Sphere(0.02), pose)
    solver = KinematicsSolver(robot, dt=0.01)
    solver.add_frame_task("tool", "panda_hand_tcp")
    solver.configure_collision_constraint(0.02)
    col = solver.get_constraint("collision")
    names = col.pair_names()
    gm = robot.collision_model
    data, gd = robot.model.createData(), pin.GeometryData(gm)
    pin.updateGeometryPlacements(robot.model, data, gm, gd, READY)
    ball = {o.name: (gd.oMg[g].translation, _ball_radius(o.geometry))
            for g, o in enumerate(gm.geometryObjects)}  # fmt: skip
    for name in robot.world.get_obstacle_names():
        ball[name] = (robot.world.get_obstacle_pose(name).translation, 0.02)
    gap = np.array(
        [np.linalg.norm(ball[a][0] - ball[b][0]) - ball[a][1] - ball[b][1] for a, b in names]
    )
    threshold = 0.02 + col.activation  # (every pair's minimum; nothing moves yet)
    apart = int(np.count_nonzero(gap > threshold))
    assert 0 < apart < len(names)
    # The first step: every bound is -inf, so every pair is listed; the sphere test rules
    # out those whose balls are apart; the rest are queried.
    res = solver.solve_velocity(READY)
    assert res.collision_pairs_considered == len(names)
    assert res.collision_bound_culled_pairs == 0
    assert res.collision_sphere_culled_pairs == apart
    assert res.collision_exact_distance_queries == len(names) - apart
    assert not res.collision_budget_exhausted
    # The same configuration again: the bounds (the balls' gaps, the exact distances) rule
    # out every pair beyond its activation distance; the rest were queried in the step
    # before, so they skip the sphere test.
    res = solver.solve_velocity(READY)
    near = int(np.count_nonzero(coal_distances(robot, READY, names) <= threshold))
    assert near > 0
    assert res.collision_sphere_culled_pairs == 0
    assert res.collision_exact_distance_queries == near
    assert res.collision_bound_culled_pairs == len(names) - near


def test_a_stall_at_an_obstacle_names_its_constraint_and_each_row_its_pair():
    """A hand pressed against a plate stalls; the message names the collision constraint,
    and describe_saturation() each saturated row's pair at coal's distance."""
    import re

    import coal

    robot = _panda()
    robot.update_kinematics(READY)
    hand = robot.get_frame_pose("panda_hand").translation
    plate = np.eye(4)
    plate[:3, 3] = hand - np.array([0.0, 0.0, 0.15])  # 27 mm under the hand
    robot.add_obstacle("plate", coal.Box(0.5, 0.5, 0.02), plate)
    solver, _ = _collision_solver(robot, tuple(hand - np.array([0.0, 0.0, 0.4])))
    q = READY.copy()
    assert solver.describe_saturation() == []  # (no step yet)
    stalls = 0
    for _ in range(300):
        res = solver.solve_velocity(q)
        lines = solver.describe_saturation()
        assert len(lines) == len(res.saturated_joints) + len(res.saturated_constraints)
        rows = lines[len(res.saturated_joints) :]
        for r, line in zip(res.saturated_constraints, rows, strict=True):
            m = re.fullmatch(
                rf"row {r}: collision pair (\S+)/(\S+) at (-?[\d.]+) mm "
                r"\(min_distance 20\.00 mm\)",
                line,
            )
            assert m, line
            d = robot_obstacle_distances(robot, q)[(m[1], m[2])] if m[2] == "plate" else None
            if d is not None:  # the step's own distance, printed to 0.01 mm
                assert abs(float(m[3]) - 1e3 * d) <= 0.006, (line, d)
        if res.status == SolverStatus.NO_PROGRESS:
            stalls += 1
            assert res.saturated_constraints
            assert res.status_message.endswith(
                f"and constraint rows {res.saturated_constraints} (collision)"
            )
            assert any("/plate at " in line for line in lines)
        q = robot.integrate(q, res.solution, solver.dt)
    assert stalls > 0  # (the plate stops the hand: the stall was seen)


def test_a_step_writes_its_rows_with_the_geometry_set_of_its_layout():
    """Through obstacles added, moved and removed between steps, the set a step used is
    the one its pairs were built for: the pipeline's set for the step's world snapshot."""
    import coal

    robot = _panda()
    ball = np.eye(4)
    ball[:3, 3] = (0.45, 0.0, 0.45)
    robot.add_obstacle("ball", coal.Sphere(0.06), ball)
    solver, col = _collision_solver(robot, (0.45, 0.0, 0.3))
    q = READY.copy()
    for i in range(40):
        if i == 10:
            plate = np.eye(4)
            plate[:3, 3] = (0.4, 0.0, 0.2)
            robot.add_obstacle("plate", coal.Box(0.3, 0.3, 0.02), plate)
        if i == 25:
            robot.remove_obstacle("ball")
        ball[0, 3] = 0.45 + 0.002 * (i % 10)
        if i < 25:
            robot.set_obstacle_pose("ball", ball)
        res = solver.solve_velocity(q)
        gs = col.geometry  # (the pipeline's set for the step's snapshot)
        assert gs is col._gs  # (what the step wrote its rows with)
        assert ("plate" in gs.names) is (i >= 10) and ("ball" in gs.names) is (i < 25)
        assert col.last_world_state is robot.world.state
        q = robot.integrate(q, res.solution, solver.dt)


def test_a_step_result_made_by_of_step_is_the_constructors():
    import dataclasses

    from stackik import VelocitySolverResult

    args = dict(
        solution=np.arange(7.0),
        status=SolverStatus.NO_PROGRESS,
        status_message="stalled",
        task_scales=np.array([0.0, 1.0]),
        task_errors=np.array([0.5, 0.0]),
        saturated_joints=[3],
        saturated_constraints=[0, 2],
        iterations=3,
        computation_time_ms=0.04,
        fallback_levels=[1],
    )
    fast = VelocitySolverResult.of_step(**args)
    made = VelocitySolverResult(**args)
    names = [f.name for f in dataclasses.fields(VelocitySolverResult)]
    assert sorted(vars(fast)) == sorted(names)
    for name in names:
        a, b = getattr(fast, name), getattr(made, name)
        assert type(a) is type(b), name
        if isinstance(a, np.ndarray):
            assert a is args[name]
        else:
            assert a == b, name
    # the per-result defaults are made per result, never shared
    other = VelocitySolverResult.of_step(**args)
    assert (
        other.timings is not fast.timings
        and other.task_used_fallback is not fast.task_used_fallback
    )
    fast.timings["x"] = 1.0
    assert made.timings == {} and other.timings == {}
    assert fast.final_error == made.final_error and fast.success is made.success is False
