"""Attributes of the public objects: fixed ones refuse assignment, settings are checked.

- A task's ``name`` and ``task_type``, a frame task's (or frame constraint's)
  ``frame_name``, a constraint's ``name`` and a velocity engine's ``robot``,
  ``kinematics`` and ``lock`` are fixed when the object is made. Assigning one raises
  ``InvalidInput`` naming it, and the object goes on as before (before, the assignment
  was silently ignored by the rows, or made the next ``solve_velocity`` raise).
- ``SNSSolver``'s settings (``damping``, ``tolerance``, ``max_iterations``,
  ``exact_fallback``, ``joint_weights``) are checked when set and in effect at the next
  solve: the results are those of a solver constructed with them, bit for bit (before,
  ``damping``, ``joint_weights`` and ``exact_fallback`` set after construction were
  silently ignored). ``n`` is fixed.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from stackik import KinematicsSolver, RobotModel, SolverStatus
from stackik.errors import InvalidInput
from stackik.sns import SNSSolver

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
READY = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
SQUARE = [[0.3, 0.3], [-0.3, 0.3], [-0.3, -0.3], [0.3, -0.3]]


@pytest.fixture(scope="module")
def panda() -> RobotModel:
    return RobotModel(ROBOTS / "panda" / "panda.urdf", load_visuals=False)


def _solver(panda: RobotModel) -> KinematicsSolver:
    solver = KinematicsSolver(panda, dt=0.01)
    task = solver.add_frame_task("ee", "panda_hand")
    task.set_target_position(np.array([0.4, 0.1, 0.5]))
    solver.add_posture_task("posture").priority = 1
    solver.configure_com_constraint(SQUARE, frame_name="panda_link0")
    panda.update_kinematics(READY)
    elbow = panda.get_frame_pose("panda_link4").translation
    solver.add_tight_point_constraint("panda_link4", elbow, 0.5)
    return solver


def _fixed(solver: KinematicsSolver) -> list[tuple[object, str]]:
    task, posture = solver.get_task("ee"), solver.get_task("posture")
    objects: list[tuple[object, str]] = [
        (task, "name"),
        (task, "task_type"),
        (task, "frame_name"),
        (posture, "name"),
        (posture, "task_type"),
        (solver.engine, "robot"),
        (solver.engine, "kinematics"),
        (solver.engine, "lock"),
    ]
    for c in solver.engine.constraints:
        objects.append((c, "name"))
        if hasattr(type(c), "frame_name"):
            objects.append((c, "frame_name"))
    return objects


def test_attributes_fixed_at_construction_refuse_assignment_by_name(panda):
    solver = _solver(panda)
    before = solver.solve_velocity(READY)
    fixed = _fixed(solver)
    assert {what for _, what in fixed} >= {"name", "task_type", "frame_name", "kinematics"}
    assert any(what == "frame_name" and obj is not solver.get_task("ee") for obj, what in fixed)
    for obj, what in fixed:
        old = getattr(obj, what)
        message = re.escape(f"{type(obj).__name__}.{what} is fixed")
        for value in ("other", math.nan, None, old):
            with pytest.raises(InvalidInput, match=message):
                setattr(obj, what, value)
            assert getattr(obj, what) is old
    after = solver.solve_velocity(READY)  # the solver goes on as before, never raising
    assert after.status == before.status
    np.testing.assert_array_equal(after.solution, before.solution)


def _problems(n: int, count: int, seed: int) -> list[tuple]:
    """Random two-level problems with constraint rows and a joint box (tight: QP levels)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        jacs = [rng.standard_normal((m, n)) for m in (3, n)]
        goals = [rng.standard_normal(m) * 3.0 for m in (3, n)]
        C = rng.standard_normal((4, n))
        lo, hi = -rng.uniform(0.05, 0.5, 4), rng.uniform(0.05, 0.5, 4)
        bl, bu = -rng.uniform(0.05, 1.0, n), rng.uniform(0.05, 1.0, n)
        out.append((goals, jacs, C, lo, hi, bl, bu))
    return out


SNS_SETTINGS = [
    ("damping", 0.05, [-1.0, math.nan, math.inf, "0.1", None]),
    ("tolerance", 1e-2, [-1e-3, math.nan, math.inf, "x"]),
    ("max_iterations", 2, [0, -1, 2.5, "3", None]),
    ("exact_fallback", False, ["no", 2, math.nan, None]),
    ("joint_weights", np.array([1.0, 2.0, 3.0, 0.5, 4.0, 1.5]), [np.ones(5), -np.ones(6), "x"]),
]


@pytest.mark.parametrize(("name", "value", "bad"), SNS_SETTINGS, ids=[s[0] for s in SNS_SETTINGS])
def test_an_sns_setting_is_checked_and_in_effect_at_the_next_solve(name, value, bad):
    n = 6
    base = {"tolerance": 1.0} if name == "damping" else {}  # (directions below 1 are damped)
    changed, default = SNSSolver(n, **base), SNSSolver(n, **base)
    built = SNSSolver(n, **{**base, name: value})
    before = getattr(changed, name)
    for v in bad:
        with pytest.raises(InvalidInput):
            setattr(changed, name, v)
        np.testing.assert_array_equal(getattr(changed, name), before)
    setattr(changed, name, value)
    np.testing.assert_array_equal(getattr(changed, name), value)
    differs = 0
    for goals, jacs, C, lo, hi, bl, bu in _problems(n, 25, seed=3):
        a = changed.solve(goals, jacs, C, lo, hi, box_lower=bl, box_upper=bu)
        b = built.solve(goals, jacs, C, lo, hi, box_lower=bl, box_upper=bu)
        c = default.solve(goals, jacs, C, lo, hi, box_lower=bl, box_upper=bu)
        assert a.status == b.status and a.status != SolverStatus.INVALID_INPUT
        np.testing.assert_array_equal(a.solution, b.solution)
        np.testing.assert_array_equal(a.task_scales, b.task_scales)
        differs += not np.array_equal(a.solution, c.solution)
    assert differs  # (the setting changes some solutions: it is really in effect)


def test_the_sns_size_is_fixed():
    solver = SNSSolver(4)
    with pytest.raises(InvalidInput, match=r"SNSSolver\.n is fixed"):
        solver.n = 5  # type: ignore[misc]
    assert solver.n == 4
    view = solver.joint_weights
    with pytest.raises(ValueError):
        view[0] = 7.0  # (a read-only view: set a new vector instead)
