"""The velocity engine keeps its stacked layout and constraint plan while nothing changes.

Every change that decides them (a task's priority, weight, mask, solve mode or active
flag, a constraint's active flag, tasks and constraints added or removed) bumps the
kinematics cache's ``layout_revision``, and the next step is then the step of a solver
built afresh in the changed state: same problem matrices, same solution, bit for bit
(each step starts a new motion, so that no step-to-step state tells them apart).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from stackik import KinematicsSolver, RobotModel, TaskSolveMode
from stackik.constraints import LinearConstraint

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
PANDA = ROBOTS / "panda" / "panda.urdf"
PANDA_SRDF = ROBOTS / "panda" / "panda.srdf"
READY = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
DT = 0.01


def _setup(solver: KinematicsSolver, state: dict) -> None:
    """Tasks and constraints as ``state`` says (the fresh solver is built with this)."""
    ee = solver.add_frame_task("ee", "panda_hand")
    ee.set_target_pose(np.array([0.45, 0.1, 0.45]), np.diag([1.0, -1.0, -1.0]))
    ee.gain = 10.0
    ee.priority = state.get("ee_priority", 0)
    ee.weight = state.get("ee_weight", 1.0)
    if "ee_mask" in state:
        ee.set_orientation_mask(state["ee_mask"])
    post = solver.add_posture_task("posture")
    post.priority = 1
    post.solve_mode = state.get("posture_mode", TaskSolveMode.SCALE)
    post.active = state.get("posture_active", True)
    if state.get("joint4_task"):
        solver.add_joint_task("j4", "panda_joint4", -1.5).priority = 2
    solver.configure_collision_constraint(0.02)
    solver.get_constraint("collision").active = state.get("collision_active", True)
    if state.get("row"):
        row = np.zeros((1, 7))
        row[0, 0] = 1.0
        solver.add_constraint(LinearConstraint("row", solver.kinematics, row, [-0.05], [0.05]))


def _solver(state: dict) -> KinematicsSolver:
    robot = RobotModel(PANDA, srdf_path=PANDA_SRDF, load_visuals=False)
    solver = KinematicsSolver(robot, dt=DT)
    _setup(solver, state)
    return solver


def _bits(solver: KinematicsSolver) -> tuple:
    solver.engine.reset()  # (a fresh solver has no step-to-step collision state)
    problem = solver.engine.build_problem(READY, advance=False)
    res = solver.solve_velocity(READY)
    return (
        problem.J.tobytes(),
        problem.xdot.tobytes(),
        problem.offsets.tobytes(),
        [m.name for m in problem.modes],
        problem.C.tobytes(),
        problem.lower.tobytes(),
        sorted(problem.constraint_slices),
        res.solution.tobytes(),
        res.status,
        res.task_scales.tobytes(),
    )


CHANGES: list[tuple[str, Callable[[KinematicsSolver], None], dict]] = [
    ("priority", lambda s: setattr(s.get_task("ee"), "priority", 2), {"ee_priority": 2}),
    ("weight", lambda s: setattr(s.get_task("ee"), "weight", 4.0), {"ee_weight": 4.0}),
    (
        "mask",
        lambda s: s.get_task("ee").set_orientation_mask([0, 0, 1]),
        {"ee_mask": [0, 0, 1]},
    ),
    (
        "solve mode",
        lambda s: setattr(s.get_task("posture"), "solve_mode", TaskSolveMode.MIN_ERROR),
        {"posture_mode": TaskSolveMode.MIN_ERROR},
    ),
    (
        "task active",
        lambda s: setattr(s.get_task("posture"), "active", False),
        {"posture_active": False},
    ),
    (
        "task added",
        lambda s: setattr(s.add_joint_task("j4", "panda_joint4", -1.5), "priority", 2),
        {"joint4_task": True},
    ),
    (
        "constraint active",
        lambda s: setattr(s.get_constraint("collision"), "active", False),
        {"collision_active": False},
    ),
    (
        "constraint added",
        lambda s: s.add_constraint(
            LinearConstraint("row", s.kinematics, np.eye(7)[:1], [-0.05], [0.05])
        ),
        {"row": True},
    ),
]


@pytest.mark.parametrize("name,change,state", CHANGES, ids=[c[0] for c in CHANGES])
def test_the_next_step_sees_each_layout_change(name: str, change: Callable, state: dict):
    solver = _solver({})
    before = _bits(solver)
    revision = solver.kinematics.layout_revision
    change(solver)
    assert solver.kinematics.layout_revision > revision, name
    after = _bits(solver)
    assert after != before, f"{name}: the change did not change the step"
    assert after == _bits(_solver(state)), f"{name}: not the step of a fresh solver"


def test_removing_what_was_added_gives_the_first_step_back():
    solver = _solver({})
    first = _bits(solver)
    solver.add_joint_task("j4", "panda_joint4", -1.5).priority = 2
    row = LinearConstraint("row", solver.kinematics, np.eye(7)[:1], [-0.05], [0.05])
    solver.add_constraint(row)
    assert _bits(solver) != first
    revision = solver.kinematics.layout_revision
    solver.remove_task("j4")
    solver.engine.remove_constraint("row")
    assert solver.kinematics.layout_revision > revision
    assert _bits(solver) == first


def test_steps_without_changes_keep_the_revision():
    solver = _solver({})
    solver.solve_velocity(READY)
    revision = solver.kinematics.layout_revision
    ee = solver.get_task("ee")
    for i in range(5):
        ee.set_target_pose(np.array([0.45, 0.1 + 0.01 * i, 0.45]), np.diag([1.0, -1.0, -1.0]))
        ee.gain = 5.0 + i  # (a gain is a value of the step, not of its layout)
        solver.solve_velocity(READY)
    assert solver.kinematics.layout_revision == revision


class _Switched(LinearConstraint):
    """A family that computes ``active`` from a switch of its own (no setter call)."""

    def __init__(self, *args: object) -> None:
        self.switch = {"on": True}
        super().__init__(*args)  # type: ignore[arg-type]

    @property  # type: ignore[override]
    def active(self) -> bool:
        return self.switch["on"]

    @active.setter
    def active(self, value: bool) -> None:
        pass


def test_a_family_that_computes_active_is_read_every_step():
    solver = _solver({})
    first = _bits(solver)
    row = _Switched("row", solver.kinematics, np.eye(7)[:1], [-0.05], [0.05])
    row.switch = {"on": False}
    solver.add_constraint(row)
    assert _bits(solver) == first  # (off: the step of the solver without it)
    revision = solver.kinematics.layout_revision
    row.switch["on"] = True  # (no setter: the revision stays)
    on = _bits(solver)
    assert solver.kinematics.layout_revision == revision
    assert on != first and on == _bits(_solver({"row": True}))
    row.switch["on"] = False
    assert _bits(solver) == first
