"""The collision step's compiled record (stackik.constraints._collision_ws).

Once kernels run compiled, the collision constraint hands its per-layout arrays to the
kernel as one record instead of one by one. These tests step twin solvers, one through
the record and one through the argument-by-argument call (whose rows the world and
collision tests check against coal), and require the same bits: solutions, rows, the
pairs' carried state and the step's records, through obstacles that move, appear and
disappear, inspection that leaves no trace, and pickling.
"""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path

import coal
import numpy as np
import pytest

import stackik
from stackik import _jit
from stackik.constraints import CollisionConstraint
from stackik.constraints import _collision_kernel as ck
from stackik.errors import CollisionMarginWarning

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
PANDA_READY = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
TCP = "panda_hand_tcp"

pytestmark = pytest.mark.skipif(
    not _jit.load(), reason="the record is made only when kernels run compiled"
)


def _pose(x: float, y: float, z: float) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T


def _solver(record: bool) -> tuple[stackik.KinematicsSolver, CollisionConstraint]:
    robot = stackik.RobotModel(
        ROBOTS / "panda" / "panda.urdf", srdf_path=ROBOTS / "panda" / "panda.srdf"
    )
    robot.add_obstacle("ball", coal.Sphere(0.06), _pose(0.45, 0.0, 0.45))
    robot.add_obstacle("post", coal.Capsule(0.04, 0.6), _pose(0.3, -0.35, 0.4))
    robot.update_kinematics(PANDA_READY)
    solver = stackik.KinematicsSolver(robot, dt=0.01)
    ee = solver.add_frame_task("ee", TCP)
    ee.gain = 10.0
    solver.add_posture_task("posture").priority = 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionMarginWarning)
        solver.configure_collision_constraint(0.02)
    collision = solver.engine.constraints_of("collision")[0]
    assert isinstance(collision, CollisionConstraint)
    if not record:
        collision._one_call = _argument_by_argument(collision)  # type: ignore[method-assign]
    return solver, collision


def _argument_by_argument(c: CollisionConstraint):
    """The step's call with every array passed on its own (``collision_step``, no record).

    The obstacles' motion first, from Python, as the staged path does it (the record's
    kernel does the same call itself).
    """

    def one_call(gs, state, dq, oMi, C, lower) -> None:
        c._obstacle_motion(state)
        ps = c._pairs
        ck.collision_step(
            dq, ps.lever, ps.pairs, ps.pf, ps.pi, c._cfg,
            (oMi, gs.joint, gs.local_rot, gs.local_trans, state.rotations),
            *c._kernel_tables(gs),
            (gs.slot, state.translations, c._obs_vel, c._disp, c._obs_extra, c._offset),
            c._kin.joint_jacobians_view(), c._columns, c._work, c._sel,
            (C, lower, c._row_geoms, c._row_points, c._row_normals), c._counts,
        )  # fmt: skip

    return one_call


def _target(solver: stackik.KinematicsSolver, i: int) -> None:
    """An end-effector target swept through the ball (the arm must go round it)."""
    p = np.array([0.45 + 0.1 * np.sin(0.02 * i), 0.25 * np.cos(0.015 * i), 0.45])
    solver.get_task("ee").set_target_pose(p, np.diag([1.0, -1.0, -1.0]))


def _move_world(robot: stackik.RobotModel, i: int) -> None:
    robot.set_obstacle_pose("ball", _pose(0.45 + 0.002 * (i % 40), 0.0, 0.45))
    if i == 60:
        robot.add_obstacle("plate", coal.Box(0.3, 0.3, 0.02), _pose(0.4, 0.0, 0.2))
    if i == 120:
        robot.remove_obstacle("post")


def _step(solver: stackik.KinematicsSolver, q: np.ndarray, i: int) -> tuple:
    _move_world(solver.robot, i)
    _target(solver, i)
    result = solver.solve_velocity(q)
    c = solver.engine.constraints_of("collision")[0]
    assert isinstance(c, CollisionConstraint)
    state = (
        result.solution.copy(),
        result.status,
        c.last_pairs.copy(),
        c.last_distances.copy(),
        c.last_row_normals.copy(),
        c._pairs.pf.copy(),
        c._pairs.pi.copy(),
    )
    return state, q + result.solution * 0.01


def _same(a: tuple, b: tuple) -> None:
    for x, y in zip(a, b, strict=True):
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y)
        else:
            assert x == y


def test_the_record_step_gives_the_bits_of_the_argument_by_argument_step():
    fast, fast_c = _solver(record=True)
    slow, slow_c = _solver(record=False)
    qa = qb = PANDA_READY.copy()
    records: list = []  # (the records themselves: an id() is reused once one is freed)
    rows = 0
    for i in range(180):
        a, qa = _step(fast, qa, i)
        b, qb = _step(slow, qb, i)
        _same(a, b)
        rows += len(a[2])
        if not any(r is fast_c._ws[3] for r in records):
            records.append(fast_c._ws[3])
        assert slow_c._ws[3] is None
    assert rows > 50  # the arm worked against the obstacles
    # A record per layout: the start, the plate added, the post removed.
    assert len(records) == 3 and fast_c._ws[3] is not None


def test_a_record_of_an_older_layout_is_never_used():
    """A layout change by restore() or by another pair set makes the record again."""
    solver, c = _solver(record=True)
    q = PANDA_READY.copy()
    for i in range(5):
        _, q = _step(solver, q, i)
    first = c._ws[3]
    solver.robot.add_obstacle("plate", coal.Box(0.3, 0.3, 0.02), _pose(0.4, 0.0, 0.2))
    solver.solve_velocity(q)
    assert c._ws[3] is not first and c._ws[1] is c._pairs and c._ws[2] is c._work


def test_inspection_with_the_record_leaves_no_trace():
    inspected, _ = _solver(record=True)
    plain, _ = _solver(record=True)
    qa = qb = PANDA_READY.copy()
    for i in range(40):
        if i % 7 == 3:
            inspected.engine.build_problem(qa, advance=False)
        a, qa = _step(inspected, qa, i)
        b, qb = _step(plain, qb, i)
        _same(a, b)


def test_a_pickled_solver_drops_its_record_and_steps_the_same():
    solver, c = _solver(record=True)
    q = PANDA_READY.copy()
    for i in range(30):
        _, q = _step(solver, q, i)
    assert c._ws[3] is not None
    copy = pickle.loads(pickle.dumps(solver))
    copy_c = copy.engine.constraints_of("collision")[0]
    assert copy_c._ws == (None, None, None, None)
    qa = qb = q
    for i in range(30, 60):
        a, qa = _step(solver, qa, i)
        b, qb = _step(copy, qb, i)
        _same(a, b)
    assert copy_c._ws[3] is not None
