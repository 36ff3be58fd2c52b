"""The collision constraint's settings: checked when set, in effect at the next step.

Every setting is a checked attribute: a bad value raises ``InvalidInput`` naming it (the
old value stays), so it can never reach the compiled step as a string, a NaN or an out
of range number. A setting changed between steps gives the steps of a constraint
configured with it from the start, bit for bit; ``min_distance`` set by assignment is
:meth:`set_min_distance` (the pairs' own minimums follow).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from stackik import KinematicsSolver, RobotModel, SolverStatus
from stackik.errors import InvalidInput

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
PANDA = ROBOTS / "panda" / "panda.urdf"
PANDA_SRDF = ROBOTS / "panda" / "panda.srdf"
READY = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
#: The hand pulled down toward the base (pairs come within their activation distance).
TARGET = (np.array([0.25, 0.0, 0.12]), np.diag([1.0, -1.0, -1.0]))

#: (setting, a valid value, bad values)
SETTINGS = [
    ("max_constraints", 3, [0, -1, 2.5, "3", None, math.nan]),
    ("gain", 0.8, [0.0, -0.1, 1.5, math.nan, math.inf, "0.5", None]),
    ("activation_margin", 0.08, [-0.01, math.nan, math.inf, "0.1", None]),
    ("patch_tolerance", 0.0, [-1e-3, math.nan, math.inf, "x"]),
    ("recovery_deadband", 1e-4, [-1e-4, math.nan, math.inf, [1e-4]]),
    ("nearest_points_all_pairs", False, ["false", 2, math.nan, None]),
    ("activation_multiplier", 2.0, [math.nan, math.inf, "2", 1e12]),
    ("proximity_gating", False, ["no", 0.5, None]),
    ("recovery_scale", 0.5, [0.0, 1.01, math.nan, "1"]),
    ("max_separation_speed", 0.3, [0.0, -1.0, math.nan, "fast"]),
    ("refinement_budget_us", 50, [1.5, math.nan, "50", None]),
    ("sphere_broadphase", False, ["yes", 3, None]),
    ("approach_deceleration", 5.0, [0.0, -2.0, math.nan, "5"]),
    ("min_distance", 0.03, [-0.01, math.nan, math.inf, "0.02", None]),
]


def _solver(robot: RobotModel, **settings: object) -> KinematicsSolver:
    solver = KinematicsSolver(robot, dt=0.01)
    solver.add_frame_task("ee", "panda_hand").set_target_pose(*TARGET)
    solver.add_posture_task("posture").priority = 1
    solver.configure_collision_constraint(0.02, **settings)  # type: ignore[arg-type]
    return solver


@pytest.fixture(scope="module")
def robot() -> RobotModel:
    return RobotModel(PANDA, srdf_path=PANDA_SRDF, load_visuals=False)


@pytest.mark.parametrize(("name", "good", "bad"), SETTINGS, ids=[s[0] for s in SETTINGS])
def test_a_bad_setting_is_refused_by_name_and_the_old_value_stays(robot, name, good, bad):
    solver = _solver(robot)
    col = solver.get_constraint("collision")
    before = getattr(col, name)
    for value in bad:
        with pytest.raises(InvalidInput, match=name):
            setattr(col, name, value)
        assert getattr(col, name) == before
    setattr(col, name, good)
    assert getattr(col, name) == good
    res = solver.solve_velocity(READY)  # the hot path still runs (never raises)
    assert res.status in (SolverStatus.SUCCESS, SolverStatus.NO_PROGRESS)
    assert np.isfinite(res.solution).all()


def _run(solver: KinematicsSolver, steps: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``steps`` steps from READY, integrated: each step's solution and collision rows.

    The rows (``C`` and its bounds) are read from the step's problem, built first
    without advancing any state (the step itself then builds the same one).
    """
    robot = solver.robot
    q, out = READY.copy(), []
    for _ in range(steps):
        problem = solver.build_problem(q, advance=False)
        rows = problem.constraint_slices.get("collision", slice(0, 0))
        C, lower = problem.C[rows], problem.lower[rows]
        res = solver.solve_velocity(q)
        out.append((res.solution.copy(), np.concatenate([C.ravel(), lower])))
        q = robot.integrate(q, res.solution, solver.dt)
    return out


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("gain", 0.9),
        ("max_constraints", 2),
        ("activation_margin", 0.12),
        ("patch_tolerance", 0.0),
        ("recovery_deadband", 2e-3),
    ],
)
def test_a_setting_changed_between_steps_gives_the_steps_of_one_configured_with_it(
    robot, name, value
):
    changed = _solver(robot)
    changed.solve_velocity(READY)  # (a step with the old value: its settings are in use)
    col = changed.get_constraint("collision")
    col.reset()  # (forget that step's motion bounds and learned errors)
    setattr(col, name, value)
    fresh = _solver(robot, **{name: value})
    a, b = _run(changed, 40), _run(fresh, 40)
    assert sum(rows.size for _, rows in b) > 0  # (pairs with rows: the setting is exercised)
    for (dq_a, rows_a), (dq_b, rows_b) in zip(a, b, strict=True):
        np.testing.assert_array_equal(rows_a, rows_b)
        np.testing.assert_array_equal(dq_a, dq_b)


def test_min_distance_set_by_assignment_moves_every_pairs_minimum(robot):
    solver = _solver(robot)
    col = solver.get_constraint("collision")
    col.min_distance = 0.035
    assert col.min_distance == 0.035
    assert col.pair_min_distance_overrides() == []  # every pair at the new minimum
    fresh = _solver(robot)
    fresh.get_constraint("collision").set_min_distance(0.035)
    a, b = _run(solver, 30), _run(fresh, 30)
    for (dq_a, rows_a), (dq_b, rows_b) in zip(a, b, strict=True):
        np.testing.assert_array_equal(rows_a, rows_b)
        np.testing.assert_array_equal(dq_a, dq_b)
    other = _solver(robot)  # the old minimum gives other steps
    assert any(not np.array_equal(x[1], y[1]) for x, y in zip(a, _run(other, 30), strict=True))
