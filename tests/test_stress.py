"""Stress tests, marked slow: run them with ``python -m pytest -m slow``.

Larger versions of properties the default suite checks on small samples.
"""

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from stackik import KinematicsSolver, RobotModel, SolverStatus

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
#: What a step may report: solved, or stalled (a zero step).
_SOLVED = (SolverStatus.SUCCESS, SolverStatus.NO_PROGRESS)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("urdf", "tip"), [("panda/panda.urdf", "panda_hand_tcp"), ("ur5/ur5.urdf", "tool0")]
)
def test_global_ik_solves_the_trac_ik_protocol(urdf, tip):
    """20 000 FK targets of uniform configurations: >= 99.9 % solved, verified by Pinocchio."""
    robot = RobotModel(ROBOTS / urdf)
    solver = KinematicsSolver(robot)
    model, data = robot.model, robot.model.createData()
    lo, hi = robot.get_joint_limits()
    mid = (lo + hi) / 2
    rng = np.random.default_rng(2026)
    fid = model.getFrameId(tip)
    solved = 0
    n = 20_000
    for k in range(n):
        q_true = rng.uniform(lo, hi)
        pin.framesForwardKinematics(model, data, q_true)
        target = data.oMf[fid].homogeneous.copy()
        # A generous budget: this checks solvability, not speed (the benchmark does that).
        configs = solver.find_configs(target, tip, time_budget=0.05, reference_q=mid, seed=k)
        if not configs:
            continue
        q = configs[0]
        pin.framesForwardKinematics(model, data, q)
        err = pin.log6(data.oMf[fid].actInv(pin.SE3(target))).vector
        assert np.all(q >= lo - 1e-12) and np.all(q <= hi + 1e-12)
        if np.linalg.norm(err[:3]) < 1e-4 and np.linalg.norm(err[3:]) < 1e-3:
            solved += 1
    assert solved / n >= 0.999


def test_limits_hold_over_long_randomized_teleop_runs():
    """Twenty 5000-step runs toward random far targets never leave the position limits."""
    robot = RobotModel(ROBOTS / "panda" / "panda.urdf", srdf_path=ROBOTS / "panda" / "panda.srdf")
    lo, hi = robot.get_joint_limits()
    rng = np.random.default_rng(7)
    for _ in range(20):
        q = rng.uniform(lo + 0.1, hi - 0.1)
        robot.update_kinematics(q)
        solver = KinematicsSolver(robot, dt=0.002)
        ee = solver.add_frame_task("ee", "panda_hand_tcp")
        ee.gain = 50.0
        solver.add_posture_task("posture").priority = 1
        for step in range(5000):
            if step % 500 == 0:  # a new target, mostly outside the workspace
                ee.set_target_pose(pin.SE3(pin.exp3(rng.normal(size=3)), rng.uniform(-1.5, 1.5, 3)))
            res = solver.solve_velocity(q)
            # A target outside the workspace stalls the arm against a limit: NO_PROGRESS,
            # a zero step by definition (never SUCCESS); nothing else is acceptable.
            assert res.status in _SOLVED, res.status_message
            if res.status == SolverStatus.NO_PROGRESS:
                assert np.abs(res.solution).max() <= 1e-12
            q = q + res.solution * solver.dt
            assert np.all(q >= lo - 1e-9) and np.all(q <= hi + 1e-9)


# -- soaks: 10^6 closed-loop steps, violations counted by independent computations -----------
@pytest.mark.parametrize("robot", ["panda", "humanoid"])
def test_soak_a_million_steps_without_a_violation(robot):
    """Panda with self-collision, humanoid with the CoM polygon (see tests/soak.py)."""
    import soak

    run = soak.soak_panda if robot == "panda" else soak.soak_humanoid
    report = run(1_000_000, seed=0)
    print(report.line())
    assert report.violations() == 0, report.line()
    assert report.smallest_margin >= 0.0
    # Random targets far outside the workspace stall the robot (NO_PROGRESS, a zero step:
    # ``report.moving_stalls`` counts any that moved, among the violations above).
    assert set(report.statuses) <= {"SUCCESS", "NO_PROGRESS"}, report.statuses
    assert report.statuses.get("SUCCESS", 0) > 0, report.statuses
