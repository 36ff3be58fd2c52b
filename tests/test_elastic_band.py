"""The elastic band through EmbodiK's names alone: limit-dominated stalls widen limits.

A joint task asks joint 4 of the Panda to go 0.2 rad past its upper limit: the joint
saturates at the limit and the task stalls. ``enable_elastic_band`` /
``configure_elastic_band`` (nothing stackik-only) must then widen the joint's limit by
``expand_rate`` per step up to ``delta_max``, move the joint further than without the
band, report the widening, decay it once the stall ends and never let a joint past its
URDF limit by more than its reported delta. EmbodiK 0.23.2, run on the same stall, is the
reference for what the band widens without a limit margin: the URDF limit itself.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from stackik import KinematicsSolver, RobotModel, SolverStatus
from stackik.sns import TaskSolveMode

PANDA = Path(__file__).resolve().parents[1] / "robots" / "panda" / "panda.urdf"
READY = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
J4 = 3  # velocity (and q) index of panda_joint4


@pytest.fixture(scope="module")
def panda() -> RobotModel:
    return RobotModel(PANDA, load_visuals=False)


def start(robot) -> np.ndarray:
    q = READY.copy()
    q[J4] = robot.get_joint_limits()[1][J4] - 0.05
    return q


def drive(robot, solver, q, steps, record):
    """Step (``q += dq dt``) and record per step: q after, deltas, result."""
    for _ in range(steps):
        res = solver.solve_velocity(q, True)
        q = q + res.solution * solver.dt
        record.append((q.copy(), solver.elastic_band_deltas(), res))
    return q


def stall_run(robot, band: bool, steps: int = 120, **configure):
    solver = KinematicsSolver(robot)
    solver.dt = 0.01
    hi = robot.get_joint_limits()[1]
    task = solver.add_joint_task("j4", "panda_joint4", hi[J4] + 0.2)
    if band:
        solver.enable_elastic_band(0.05)
        solver.configure_elastic_band(0.05, 0.01, 0.2, 3, **configure)
    record: list = []
    q = drive(robot, solver, start(robot), steps, record)
    return solver, task, q, record


def assert_within_band(robot, record):
    """No joint is further past its URDF limit than its reported delta, at any step."""
    lo, hi = robot.get_joint_limits()
    for q, deltas, _ in record:
        assert np.all(q <= hi + deltas + 1e-12) and np.all(q >= lo - deltas - 1e-12)


def test_without_the_band_the_task_stalls_at_the_limit(panda):
    hi = panda.get_joint_limits()[1]
    solver, _, q, record = stall_run(panda, band=False)
    assert abs(q[J4] - hi[J4]) < 1e-3 and q[J4] <= hi[J4] + 1e-12
    assert record[-1][2].status == SolverStatus.NO_PROGRESS  # a reported stall
    assert not solver.elastic_band_enabled() and not solver.elastic_band_deltas().any()


def test_a_limit_stall_widens_the_saturated_joint_and_the_task_progresses(panda):
    hi = panda.get_joint_limits()[1]
    _, _, q_off, _ = stall_run(panda, band=False)
    solver, _, q, record = stall_run(panda, band=True)
    assert solver.elastic_band_enabled()
    deltas = np.array([d for _, d, _ in record])
    # only the saturated joint widens, to delta_max
    assert deltas[-1, J4] == pytest.approx(0.05) and solver.elastic_band_max_delta() == 0.05
    assert not np.delete(deltas, J4, axis=1).any()
    assert solver.elastic_band_is_expanded()
    # by expand_rate per step (a step widens by 0.01 or not at all), never past delta_max
    steps = np.diff(deltas[:, J4])
    assert np.all(np.isclose(steps, 0.0) | np.isclose(steps, 0.01))
    assert deltas[:, J4].max() <= 0.05 + 1e-15
    # only after stall_threshold (3) consecutive stalled steps saturated at the limit
    first = int(np.flatnonzero(deltas[:, J4])[0])
    stalled = [J4 in r.saturated_joints and r.task_scales[0] < 0.1 for _, _, r in record]
    assert all(stalled[first - 2 : first + 1])
    # the task makes progress it does not make without the band: 0.05 rad further
    assert q_off[J4] <= hi[J4] + 1e-12
    assert q[J4] - q_off[J4] == pytest.approx(0.05, abs=1e-3)
    assert_within_band(panda, record)


def test_expand_only_saturated_off_widens_every_limited_joint(panda):
    solver, _, _, record = stall_run(panda, band=True, steps=60, expand_only_saturated=False)
    deltas = solver.elastic_band_deltas()
    assert deltas[J4] > 0.0
    np.testing.assert_array_equal(deltas, np.full(7, deltas[J4]))
    assert_within_band(panda, record)


def test_the_band_decays_once_the_stall_ends_and_is_zero_at_rest(panda):
    lo, hi = panda.get_joint_limits()
    solver, task, q, record = stall_run(panda, band=True)
    task.set_target_value(hi[J4] - 0.3)  # the stall ends: the target is inside again
    after: list = []
    q = drive(panda, solver, q, 300, after)
    widening = np.array([d[J4] for _, d, _ in after])
    inside = np.array([qq[J4] < hi[J4] - 0.01 for qq, _, _ in after])  # left the room
    k = int(np.flatnonzero(inside)[0]) + 1
    assert widening[k] > 0.0
    # decays by decay_rate per step from there, down to exactly zero
    run = widening[k:]
    live = run > 0
    np.testing.assert_allclose(run[1:][live[1:]], 0.8 * run[:-1][live[1:]], rtol=1e-12)
    assert not solver.elastic_band_deltas().any() and not solver.elastic_band_is_expanded()
    assert solver.elastic_band_max_delta() == 0.0
    assert lo[J4] <= q[J4] <= hi[J4]  # back inside the URDF limits
    assert_within_band(panda, record + after)


def test_disable_resets_the_band(panda):
    hi = panda.get_joint_limits()[1]
    solver, _, q, _ = stall_run(panda, band=True)
    assert solver.elastic_band_max_delta() == pytest.approx(0.05)
    solver.disable_elastic_band()
    assert not solver.elastic_band_enabled() and not solver.elastic_band_deltas().any()
    assert solver.get_constraint("joint_limits").relief.max() == 0.0
    # the joint, 5 cm past its URDF limit, is driven back again
    assert q[J4] > hi[J4] + 0.04
    assert solver.build_problem(q).box_upper[J4] < 0.0


def test_a_scale_elastic_task_turns_the_band_on(panda):
    hi = panda.get_joint_limits()[1]
    solver = KinematicsSolver(panda)
    task = solver.add_joint_task("j4", "panda_joint4", hi[J4] + 0.2)
    task.solve_mode = TaskSolveMode.SCALE_ELASTIC
    assert not solver.elastic_band_enabled()
    record: list = []
    q = drive(panda, solver, start(panda), 120, record)
    assert solver.elastic_band_enabled()
    assert q[J4] > hi[J4] + 0.04  # EmbodiK's defaults: delta_max 0.05
    assert_within_band(panda, record)


def test_a_margin_keeps_the_band_inside_the_urdf_limits(panda):
    hi = panda.get_joint_limits()[1]
    solver = KinematicsSolver(panda)
    solver.set_limit_margin(0.05)
    solver.add_joint_task("j4", "panda_joint4", hi[J4] + 0.2)
    solver.enable_elastic_band(0.05)
    record: list = []
    q = drive(panda, solver, start(panda), 120, record)
    assert solver.elastic_band_deltas()[J4] == pytest.approx(0.05)
    assert hi[J4] - 0.05 + 0.04 < q[J4] <= hi[J4] + 1e-12  # the margin is lent back


@pytest.mark.skipif(importlib.util.find_spec("embodik") is None, reason="embodik not installed")
def test_embodik_widens_the_urdf_limit_itself():
    """The measurement behind the default: EmbodiK 0.23.2 has no position-limit margin, its
    band lets the stalled joint past its URDF limit (by at most delta_max)."""
    import embodik

    robot = embodik.RobotModel(str(PANDA), False)
    hi = robot.get_joint_limits()[1]
    solver = embodik.KinematicsSolver(robot)
    solver.dt = 0.01
    solver.add_joint_task("j4", "panda_joint4", hi[J4] + 0.2)
    q = READY.copy()
    q[J4] = hi[J4] - 0.05
    past = []
    for band in (False, True):
        if band:
            solver.enable_elastic_band(0.05)
        for _ in range(120):
            res = solver.solve_velocity(q, True)
            q = q + np.asarray(res.joint_velocities) * solver.dt
        past.append(q[J4] - hi[J4])
    assert past[0] <= 0.0  # without the band: stopped at the limit
    assert 0.01 < past[1] <= 0.05  # with it: past the URDF limit, within delta_max
