"""Jerk-limited joint motion: the braking math, the motion box, the limiter, seed 003's callback.

Independent references: ruckig's own velocity interface sampled finely (the time-optimal
braking profile), closed forms, and finite differences of the commanded positions (what
a robot controller such as libfranka checks at 1 ms).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from ruckig import (
    ControlInterface,
    InputParameter,
    OutputParameter,
    Result,
    Ruckig,
    Synchronization,
)

import stackik
from stackik.constraints import JointMotionConstraint
from stackik.constraints.motion import braking_extent, braking_speed, braking_stops
from stackik.errors import (
    InvalidInput,
    JointNotFound,
    MalformedDescription,
    NotWithinLimits,
    RobotFileNotFound,
    ShapeError,
)

ROOT = Path(__file__).resolve().parents[1]
PANDA = ROOT / "robots" / "panda" / "panda.urdf"
PROFILE = ROOT / "robots" / "panda" / "motion_limits.yaml"
DT = 0.001

#: Relative tolerance of the finite-difference checks: the differences of positions
#: that are exact samples of one jerk-limited trajectory are weighted averages of its
#: velocity, acceleration and jerk; only rounding of the positions remains (~1e-11).
FD_TOL = 1e-7

# Franka Panda limits (libfranka): what robots/panda/motion_limits.yaml must ship.
PANDA_V = np.array([2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61])
PANDA_A = np.array([15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0])
PANDA_J = np.array([7500.0, 3750.0, 5000.0, 6250.0, 7500.0, 10000.0, 10000.0])

SPIN_URDF = """<robot name="spin">
  <link name="base"/>
  <link name="l1"/>
  <link name="l2"/>
  <joint name="wheel" type="continuous">
    <parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit effort="1" velocity="3"/>
  </joint>
  <joint name="slide" type="prismatic">
    <parent link="l1"/><child link="l2"/><axis xyz="1 0 0"/>
    <limit lower="-0.2" upper="0.3" effort="1" velocity="0.5"/>
  </joint>
</robot>"""


def ruckig_brake(v: float, a: float, A: float, J: float, step: float = 1e-5) -> np.ndarray:
    """Positions of ruckig's time-optimal stop from (0, v, a), sampled every ``step`` [s]."""
    otg, inp, out = Ruckig(1, step), InputParameter(1), OutputParameter(1)
    inp.control_interface = ControlInterface.Velocity
    inp.max_velocity, inp.max_acceleration, inp.max_jerk = [1e3], [A], [J]
    inp.current_position, inp.current_velocity, inp.current_acceleration = [0.0], [v], [a]
    inp.target_velocity, inp.target_acceleration = [0.0], [0.0]
    xs = [0.0]
    while True:
        res = otg.update(inp, out)
        xs.append(out.new_position[0])
        out.pass_to_input(inp)
        if res == Result.Finished:
            return np.array(xs)


def finite_differences(P: np.ndarray, dt: float = DT) -> tuple[np.ndarray, ...]:
    v = np.diff(P, axis=0) / dt
    a = np.diff(v, axis=0) / dt
    return v, a, np.diff(a, axis=0) / dt


def assert_within(P: np.ndarray, vmax: np.ndarray, amax: np.ndarray, jmax: np.ndarray) -> None:
    v, a, j = finite_differences(P)
    assert np.all(np.abs(v) <= vmax * (1 + FD_TOL)), np.abs(v).max(0) / vmax
    assert np.all(np.abs(a) <= amax * (1 + FD_TOL)), np.abs(a).max(0) / amax
    assert np.all(np.abs(j) <= jmax * (1 + FD_TOL)), np.abs(j).max(0) / jmax


@pytest.fixture(scope="module")
def panda() -> stackik.RobotModel:
    return stackik.RobotModel(PANDA)


@pytest.fixture(scope="module")
def limits(panda: stackik.RobotModel) -> stackik.MotionLimits:
    return stackik.MotionLimits.from_file(panda, PROFILE)


# -- braking math --------------------------------------------------------------------------
def test_braking_extent_and_stop_match_ruckig():
    rng = np.random.default_rng(0)
    for _ in range(150):
        A, J = rng.uniform(2.0, 20.0), rng.uniform(500.0, 10000.0)
        v, a = rng.uniform(-2.5, 2.5), rng.uniform(-A, A)
        xs = ruckig_brake(v, a, A, J)
        lo, hi = braking_extent([0.0], [v], [a], A, J)
        stop = braking_stops(
            np.zeros(1), np.full(1, v), np.full(1, a), np.full(1, A), np.full(1, J), np.empty(1)
        )
        assert stop[0] == pytest.approx(xs[-1], abs=1e-9)
        # sampled every 10 us, the extrema are within a sample's travel of the exact ones
        assert lo[0] <= xs.min() + 1e-12 and hi[0] >= xs.max() - 1e-12
        assert lo[0] >= xs.min() - 3e-5 and hi[0] <= xs.max() + 3e-5


def test_braking_speed_is_the_fastest_cruise_that_stops_in_time():
    for A, J, margin in [(7.5, 3750.0, 0.3), (20.0, 10000.0, 1e-4), (15.0, 7500.0, 0.02)]:
        w = braking_speed(margin, A, J, DT)
        # closed forms of the stopping distance from a cruise at w (a = 0)
        if w <= A * A / J:
            dist = w**1.5 / math.sqrt(J)
        else:
            dist = w * w / (2 * A) + w * A / (2 * J)
        assert w * DT + dist == pytest.approx(margin, rel=1e-9)
        assert ruckig_brake(w, 0.0, A, J)[-1] + w * DT <= margin * (1 + 1e-6)
    assert braking_speed(-0.002, 10.0, 5000.0, DT) == pytest.approx(-2.0)


def test_braking_helpers_refuse_bad_input():
    with pytest.raises(InvalidInput):
        braking_speed(float("nan"), 1.0, 1.0, DT)
    with pytest.raises(InvalidInput):
        braking_speed(0.1, 0.0, 1.0, DT)
    with pytest.raises(ShapeError):
        braking_extent([0.0, 1.0], [0.0], [0.0], 1.0, 1.0)


# -- the motion box --------------------------------------------------------------------------
def test_motion_box_is_what_the_limits_reach_within_the_horizon(panda, limits):
    solver = stackik.KinematicsSolver(panda, dt=DT)
    q = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
    motion = JointMotionConstraint(
        "joint_motion", solver.kinematics, limits.velocity, limits.acceleration, limits.jerk,
        horizon=0.004,
    )  # fmt: skip
    solver.add_constraint(motion)
    v = np.array([0.5, -0.2, 0.0, 1.0, -2.5, 0.3, 0.0])
    a = np.array([2.0, -7.5, 0.0, -5.0, 0.0, 19.0, -1.0])
    motion.set_state(v, a)
    problem = solver.build_problem(q)
    h = 0.004
    for j in range(7):
        A, J, V = limits.acceleration[j], limits.jerk[j], limits.velocity[j]
        # integrate the fastest acceleration ramp numerically (independent of the kernel)
        t = np.linspace(0.0, h, 40001)
        up = np.minimum(a[j] + J * t, A)
        down = np.maximum(a[j] - J * t, -A)
        hi = min(v[j] + np.trapezoid(up, t), V)
        lo = max(v[j] + np.trapezoid(down, t), -V)
        assert problem.box_upper[j] == pytest.approx(hi, abs=1e-8)
        assert problem.box_lower[j] == pytest.approx(lo, abs=1e-8)


def test_motion_box_near_a_limit_lets_the_joint_brake_in_time(panda, limits):
    solver = stackik.KinematicsSolver(panda, dt=DT)
    upper = panda.get_joint_limits()[1]
    q = np.array([0.0, upper[1] - 0.05, 0.0, -2.2, 0.0, 2.0, 0.8])
    motion = JointMotionConstraint(
        "joint_motion", solver.kinematics, limits.velocity, limits.acceleration, limits.jerk
    )
    solver.add_constraint(motion)
    v = np.zeros(7)
    v[1] = 0.8  # within the horizon it could reach 0.94 rad/s; the limit allows less
    motion.set_state(v, np.zeros(7))
    problem = solver.build_problem(q)
    w = problem.box_upper[1]
    assert w == pytest.approx(braking_speed(0.05, limits.acceleration[1], limits.jerk[1], DT))
    assert q[1] + w * DT + ruckig_brake(w, 0.0, limits.acceleration[1], limits.jerk[1])[-1] <= (
        upper[1] + 1e-9
    )


def test_a_filter_delay_makes_the_limit_bound_earlier(panda, limits):
    solver = stackik.KinematicsSolver(panda, dt=DT)
    upper = panda.get_joint_limits()[1]
    q = np.array([0.0, upper[1] - 0.05, 0.0, -2.2, 0.0, 2.0, 0.8])
    motion = JointMotionConstraint(
        "joint_motion", solver.kinematics, limits.velocity, limits.acceleration, limits.jerk,
        delay=0.02,
    )  # fmt: skip
    solver.add_constraint(motion)
    solver.build_problem(q)
    A, J = limits.acceleration[1], limits.jerk[1]
    assert motion.cruise_upper[1] == pytest.approx(braking_speed(0.05, A, J, DT + 0.02))
    assert motion.cruise_upper[1] < braking_speed(0.05, A, J, DT)
    assert motion.cruise_lower[1] < 0 < motion.cruise_upper[1]


def test_the_brake_stops_where_stop_positions_said_keeping_its_direction(panda, limits):
    """brake() is ruckig's phase-synchronized stop; stop_positions() predicts its end."""
    rng = np.random.default_rng(5)
    limiter = stackik.JointMotionLimiter.from_limits(panda, DT, limits)
    q0 = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
    for _ in range(20):
        v = rng.uniform(-0.6, 0.6, 7) * limits.velocity
        limiter.reset(q0, v)
        predicted = limiter.stop_positions()
        P = [limiter.position]
        while not limiter.at_rest:
            P.append(limiter.brake().position)
        P = np.array(P)
        assert_within(P, limits.velocity, limits.acceleration, limits.jerk)
        travel = P[-1] - P[0]
        np.testing.assert_allclose(predicted, P[-1], atol=1e-3 * np.abs(travel).max() + 1e-9)
        # the path stays on the line of the initial velocity (phase synchronization)
        direction = v / np.linalg.norm(v)
        off_line = (P - P[0]) - np.outer((P - P[0]) @ direction, direction)
        assert np.abs(off_line).max() < 1e-3 * np.linalg.norm(travel)


def test_motion_box_is_never_empty(panda, limits):
    """Moving fast toward a limit already too close: the box is the hardest braking."""
    solver = stackik.KinematicsSolver(panda, dt=DT)
    upper = panda.get_joint_limits()[1]
    q = np.array([0.0, upper[1] - 0.01, 0.0, -2.2, 0.0, 2.0, 0.8])
    motion = JointMotionConstraint(
        "joint_motion", solver.kinematics, limits.velocity, limits.acceleration, limits.jerk
    )
    solver.add_constraint(motion)
    v = np.zeros(7)
    v[1] = 2.0
    motion.set_state(v, np.zeros(7))
    problem = solver.build_problem(q)
    assert np.all(problem.box_lower <= problem.box_upper)
    assert problem.box_lower[1] == problem.box_upper[1] < 2.0
    result = solver.solve_velocity(q)
    assert result.solution[1] == pytest.approx(problem.box_upper[1])


def test_motion_constraint_refuses_bad_settings(panda):
    kin = panda.create_kinematics()
    with pytest.raises(InvalidInput, match="max_jerk"):
        JointMotionConstraint("m", kin, 1.0, 1.0, [1.0] * 6)
    with pytest.raises(InvalidInput, match="max_acceleration"):
        JointMotionConstraint("m", kin, 1.0, -1.0, 1.0)
    with pytest.raises(InvalidInput, match="horizon"):
        JointMotionConstraint("m", kin, 1.0, 1.0, 1.0, horizon=0.0)
    spin = stackik.RobotModel.from_urdf_string(SPIN_URDF)
    with pytest.raises(InvalidInput, match="no scalar position"):
        JointMotionConstraint("m", spin.create_kinematics(), 1.0, 1.0, 1.0, [-1, -1], [1, 1])


# -- profiles --------------------------------------------------------------------------------
def test_the_panda_profile_ships_libfranka_limits(panda):
    robot = stackik.RobotModel(PANDA)
    limits = stackik.load_motion_limits(robot, PROFILE)
    assert limits.names == tuple(f"panda_joint{k}" for k in range(1, 8))
    np.testing.assert_array_equal(limits.velocity, PANDA_V)
    np.testing.assert_array_equal(limits.acceleration, PANDA_A)
    np.testing.assert_array_equal(limits.jerk, PANDA_J)
    np.testing.assert_array_equal(robot.get_acceleration_limits(), PANDA_A)  # applied
    np.testing.assert_array_equal(robot.get_velocity_limits(), PANDA_V)


def test_profiles_refuse_what_they_cannot_read(panda, tmp_path):
    with pytest.raises(RobotFileNotFound):
        stackik.MotionLimits.from_file(panda, tmp_path / "none.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("joints: [1, 2")
    with pytest.raises(MalformedDescription):
        stackik.MotionLimits.from_file(panda, bad)
    bad.write_text("joints:\n  panda_joint9: {jerk: 1}\n")
    with pytest.raises(JointNotFound, match="panda_joint9"):
        stackik.MotionLimits.from_file(panda, bad)
    bad.write_text("joints:\n  panda_joint1: {jerk: -3}\n")
    with pytest.raises(InvalidInput, match=r"panda_joint1\.jerk"):
        stackik.MotionLimits.from_file(panda, bad)
    bad.write_text("joints:\n  panda_joint1: {snap: 3}\n")
    with pytest.raises(MalformedDescription, match="snap"):
        stackik.MotionLimits.from_file(panda, bad)
    good = tmp_path / "partial.json"
    good.write_text('{"joints": {"panda_joint2": {"jerk": 100.0}}}')
    partial = stackik.MotionLimits.from_file(panda, good)
    assert partial.jerk[1] == 100.0 and np.isinf(partial.jerk[0])


# -- the limiter -----------------------------------------------------------------------------
def test_missing_jerk_limits_name_the_joints(panda):
    with pytest.raises(InvalidInput, match="panda_joint1") as info:
        stackik.JointMotionLimiter(panda, DT)
    assert "max_jerk" in str(info.value) and "load_motion_limits" in str(info.value)
    with pytest.raises(InvalidInput, match="max_velocity"):
        stackik.JointMotionLimiter(panda, DT, max_velocity=[1.0] * 3, max_jerk=1000.0)


def _random_run(limiter, rng, ticks, velocity_mode=False):
    lower, upper = limiter.lower, limiter.upper
    span = upper - lower
    P = [limiter.position]
    for k in range(ticks):
        if k % rng.integers(20, 400) == 0:  # a new target every 20 to 400 ticks
            target = rng.uniform(lower - 0.2 * span, upper + 0.2 * span)
            speed = rng.uniform(-1.2, 1.2, limiter.robot.nv) * limiter.max_velocity
        command = limiter.step(None, speed) if velocity_mode else limiter.step(target, 0.3 * speed)
        assert command.status == stackik.SolverStatus.SUCCESS
        P.append(command.position)
    return np.array(P)


@pytest.mark.parametrize("velocity_mode", [False, True])
def test_every_tick_respects_velocity_acceleration_jerk_and_position_limits(
    panda, limits, velocity_mode
):
    limiter = stackik.JointMotionLimiter.from_limits(panda, DT, limits)
    limiter.reset(np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8]))
    P = _random_run(limiter, np.random.default_rng(1), 20000, velocity_mode)
    assert_within(P, limits.velocity, limits.acceleration, limits.jerk)
    assert np.all(P >= limiter.lower) and np.all(P <= limiter.upper)
    # the targets beyond the limits did drive joints onto them
    assert np.isclose(P, limiter.upper, atol=1e-9).any() or np.isclose(P, limiter.lower).any()


def test_a_static_target_is_reached_exactly_and_held(panda, limits):
    limiter = stackik.JointMotionLimiter.from_limits(panda, DT, limits)
    q0 = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
    limiter.reset(q0)
    target = q0 + np.array([1.0, 0.5, -0.8, 0.6, 2.0, -0.5, 1.5])
    ticks = 0
    command = limiter.step(target)
    while not (limiter.at_rest and np.array_equal(command.position, target)) and ticks < 5000:
        command = limiter.step(target)
        ticks += 1
    assert ticks < 2000  # the slowest joint needs about 1 s
    np.testing.assert_array_equal(command.configuration, target)
    assert limiter.step(target).position.tolist() == target.tolist()


def test_ticks_are_the_states_of_ruckig_called_directly(panda, limits):
    """Away from the position limits the limiter is ruckig, tick for tick."""
    limiter = stackik.JointMotionLimiter.from_limits(panda, DT, limits)
    q0 = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
    limiter.reset(q0)
    otg, inp, out = Ruckig(7, DT), InputParameter(7), OutputParameter(7)
    inp.max_velocity = PANDA_V.tolist()
    inp.max_acceleration = PANDA_A.tolist()
    inp.max_jerk = PANDA_J.tolist()
    inp.synchronization = Synchronization.No  # the limiter's default: each joint on its own
    inp.current_position, inp.current_velocity, inp.current_acceleration = q0, [0.0] * 7, [0.0] * 7
    rng = np.random.default_rng(5)
    for k in range(2400):
        if k % 400 == 0:  # a new target, well inside the limits (the guard stays idle)
            target = q0 + rng.uniform(-0.4, 0.4, 7)
            inp.target_position = target.tolist()
        command = limiter.step(target)
        result = otg.update(inp, out)
        assert result in (Result.Working, Result.Finished)
        out.pass_to_input(inp)
        assert command.braked_joints == ()
        np.testing.assert_allclose(command.position, out.new_position, rtol=0, atol=1e-12)
        np.testing.assert_allclose(command.velocity, out.new_velocity, rtol=0, atol=1e-9)
        np.testing.assert_allclose(command.acceleration, out.new_acceleration, atol=1e-6)


def test_follow_velocity_is_ruckig_velocity_control_and_the_checked_step(panda, limits):
    """The control loop's trusted tick: ruckig's velocity interface, tick for tick.

    Against ruckig called directly (away from the position limits the guard is idle) and
    against ``step(None, v)`` on a second limiter, bit for bit, with velocities beyond
    the limits among them (both clip them to the limits).
    """
    q0 = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
    trusted = stackik.JointMotionLimiter.from_limits(panda, DT, limits)
    checked = stackik.JointMotionLimiter.from_limits(panda, DT, limits)
    trusted.reset(q0)
    checked.reset(q0)
    otg, inp, out = Ruckig(7, DT), InputParameter(7), OutputParameter(7)
    inp.control_interface = ControlInterface.Velocity
    inp.max_velocity, inp.max_acceleration = PANDA_V.tolist(), PANDA_A.tolist()
    inp.max_jerk = PANDA_J.tolist()
    inp.synchronization = Synchronization.No
    inp.current_position, inp.current_velocity, inp.current_acceleration = q0, [0.0] * 7, [0.0] * 7
    rng = np.random.default_rng(7)
    clipped = False
    for k in range(1200):
        if k % 50 == 0:  # a new velocity; every other one beyond the limits (clipped)
            w = rng.uniform(-0.3, 0.3, 7) * (10.0 if k % 100 == 0 else 1.0)
            clipped |= bool(np.any(np.abs(w) > PANDA_V))
        a, b = trusted.follow_velocity(w), checked.step(None, w)
        for x, y in ((a.position, b.position), (a.velocity, b.velocity)):
            np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(a.configuration, b.configuration)
        assert a.status == b.status == stackik.SolverStatus.SUCCESS
        inp.target_velocity = np.clip(w, -PANDA_V, PANDA_V).tolist()
        assert otg.update(inp, out) in (Result.Working, Result.Finished)
        out.pass_to_input(inp)
        assert a.braked_joints == ()
        np.testing.assert_allclose(a.position, out.new_position, rtol=0, atol=1e-12)
        np.testing.assert_allclose(a.velocity, out.new_velocity, rtol=0, atol=1e-9)
    assert clipped


def test_a_long_rest_to_rest_move_takes_the_closed_form_time(panda, limits):
    """Velocity, acceleration and jerk all saturate: T = d/V + V/A + A/J."""
    limiter = stackik.JointMotionLimiter.from_limits(panda, DT, limits)
    q0 = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
    limiter.reset(q0)
    V, A, J, d = PANDA_V[0], PANDA_A[0], PANDA_J[0], 1.5  # joint 1: 1.5 rad
    assert V >= A * A / J and d >= V * (V / A + A / J)  # the three limits are reached
    duration = d / V + V / A + A / J  # [s], 0.8368 s
    target = q0.copy()
    target[0] += d
    P = [q0]
    while not (limiter.at_rest and P[-1][0] == target[0]) and len(P) < 3000:
        P.append(limiter.step(target).position)
    assert len(P) - 1 == math.ceil(duration / DT - 1e-9)  # ticks to arrive, exactly at rest
    v, a, j = finite_differences(np.array(P)[:, 0])
    # the finite differences reach the limits (averages of a profile that saturates them)
    assert np.abs(v).max() == pytest.approx(V, rel=1e-9)
    assert np.abs(a).max() == pytest.approx(A, rel=2e-2)  # A/J = 2 ms: averaged over 1 ms
    assert np.abs(j).max() <= J * (1 + FD_TOL) and np.abs(j).max() > 0.5 * J


def test_cyclic_joints_take_the_short_way():
    robot = stackik.RobotModel.from_urdf_string(SPIN_URDF)
    limiter = stackik.JointMotionLimiter(robot, DT, max_acceleration=5.0, max_jerk=500.0)
    assert limiter.cyclic.tolist() == [True, False]
    limiter.reset([-3.0, 0.0])  # positions (nv): the wheel angle, the slide
    angles = [-3.0]
    for _ in range(3000):
        command = limiter.step([3.0, 0.0])
        angles.append(command.position[0])
    angles = np.array(angles)
    assert np.all(np.diff(angles) <= 1e-15)  # decreasing: through -pi, 0.283 rad, not 6
    assert angles[-1] == pytest.approx(3.0 - 2 * math.pi, abs=1e-12)
    q = command.configuration  # (cos, sin) of the wheel, then the slide
    assert math.atan2(q[1], q[0]) == pytest.approx(3.0, abs=1e-12)
    # a configuration (nq) as target: the angle nearest the commanded one
    command = limiter.step([math.cos(2.9), math.sin(2.9), 0.1])  # 0.1 rad back, not 6.2
    assert command.velocity[0] < 0 and command.velocity[1] > 0


def test_position_limits_hold_from_a_fast_start_and_a_moving_target(panda, limits):
    limiter = stackik.JointMotionLimiter.from_limits(panda, DT, limits)
    lower, upper = limiter.lower, limiter.upper
    q0 = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
    v0 = np.zeros(7)
    v0[1] = 1.5  # toward the upper limit of joint 2, 2.06 rad away
    limiter.reset(q0, v0)
    with pytest.raises(InvalidInput, match="cannot stop"):
        limiter.reset(np.r_[0.0, upper[1] - 0.05, q0[2:]], v0)
    with pytest.raises(NotWithinLimits):
        limiter.reset(np.r_[0.0, upper[1] + 0.01, q0[2:]])
    with pytest.raises(InvalidInput, match="beyond its limit"):
        limiter.reset(q0, v0 * 2)
    P = [limiter.position]
    target, speed = q0.copy(), np.zeros(7)
    target[1], speed[1] = upper[1] + 0.5, limits.velocity[1]
    for _ in range(3000):  # a target racing past the limit, to arrive at full speed
        P.append(limiter.step(target, speed).position)
    P = np.array(P)
    assert_within(P, limits.velocity, limits.acceleration, limits.jerk)
    assert P[:, 1].max() <= upper[1] and P[-1, 1] == pytest.approx(upper[1], abs=1e-12)
    assert np.all(P >= lower)


def test_bad_targets_brake_instead_of_raising(panda, limits):
    limiter = stackik.JointMotionLimiter.from_limits(panda, DT, limits)
    limiter.reset(np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8]), np.full(7, 0.5))
    v_before = limiter.velocity
    for bad in ([np.nan] * 7, [0.0] * 3, "seven", [1e300] * 7):
        command = limiter.step(bad)
        assert command.status == stackik.SolverStatus.INVALID_INPUT
        assert "target_position" in command.message
    assert np.all(np.abs(limiter.velocity) < np.abs(v_before))  # it braked
    assert limiter.step(None, [np.inf] * 7).status == stackik.SolverStatus.INVALID_INPUT
    for _ in range(1000):
        command = limiter.brake()
    assert limiter.at_rest and not command.velocity.any()


# -- seed 003 --------------------------------------------------------------------------------
def test_joint_callback_agrees_with_the_limiter_on_one_joint(panda, limits):
    limiter = stackik.JointMotionLimiter.from_limits(panda, DT, limits)
    q0 = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
    limiter.reset(q0)
    j = 3  # panda_joint4, limits [-3.0718, -0.0698]
    lower, upper = panda.get_joint_limits()
    state = {"pos": q0[j], "vel": 0.0}
    rng = np.random.default_rng(2)
    for k in range(3000):
        if k % 250 == 0:
            goal = rng.uniform(lower[j] - 0.3, upper[j] + 0.3)
        target = q0.copy()
        target[j] = goal
        command = limiter.step(target)
        out = stackik.joint_callback(
            {
                "handle": 7, "first": k == 0, "pos": state["pos"], "vel": state["vel"],
                "targetPos": goal, "maxVel": limits.velocity[j],
                "maxAccel": limits.acceleration[j], "maxJerk": limits.jerk[j], "dt": DT,
                "cyclic": False, "lowLimit": lower[j], "highLimit": upper[j],
            }
        )  # fmt: skip
        assert out["pos"] == pytest.approx(command.position[j], abs=1e-12)
        assert out["vel"] == pytest.approx(command.velocity[j], abs=1e-10)
        assert out["immobile"] == (limiter.velocity[j] == 0 and command.position[j] == goal)
        state = {"pos": out["pos"], "vel": out["vel"]}


def test_joint_callback_velocity_control_cyclic_and_errors():
    base = {"handle": "w", "maxVel": 2.0, "maxAccel": 4.0, "maxJerk": 100.0, "dt": DT}
    state = {"pos": 3.1, "vel": 0.0, "first": True}
    for _ in range(2000):
        out = stackik.JointMotionLimiter.joint_callback(
            {**base, **state, "targetVel": 1.5, "cyclic": True}
        )
        state = {"pos": out["pos"], "vel": out["vel"], "first": False}
        assert -math.pi <= out["pos"] < math.pi
    assert out["vel"] == pytest.approx(1.5) and not out["immobile"]
    with pytest.raises(InvalidInput, match="maxJerk"):
        stackik.joint_callback({**base, "pos": 0.0, "vel": 0.0, "maxJerk": 0.0, "targetPos": 1})
    with pytest.raises(InvalidInput, match="pos"):
        stackik.joint_callback({**base, "vel": 0.0, "targetPos": 1.0})


def test_braking_time_bounds_ruckigs_stop_of_every_joint():
    """``braking_time(v)`` is the slowest joint's ``|v|/a + a/j``: ruckig's own time-optimal
    stop (velocity interface, from zero acceleration) of every joint takes no longer, and the
    slowest joint's takes exactly that when ``|v| >= a^2/j`` (its ramp reaches ``a``)."""
    from ruckig import Trajectory

    robot = stackik.RobotModel(PANDA, load_visuals=False)
    limits = stackik.load_motion_limits(robot, PROFILE)
    limiter = stackik.JointMotionLimiter.from_limits(robot, DT, limits)
    amax, jmax = limiter.max_acceleration, limiter.max_jerk
    assert limiter.braking_time(np.zeros(7)) == 0.0
    rng = np.random.default_rng(5)
    for _ in range(20):
        v = rng.uniform(-1.0, 1.0, 7) * limiter.max_velocity
        durations = []
        for k in range(7):
            otg, inp, traj = Ruckig(1), InputParameter(1), Trajectory(1)
            inp.control_interface = ControlInterface.Velocity
            inp.current_position, inp.current_velocity = [0.0], [float(v[k])]
            inp.current_acceleration, inp.target_velocity = [0.0], [0.0]
            inp.target_acceleration = [0.0]
            inp.max_velocity, inp.max_acceleration = [1e3], [float(amax[k])]
            inp.max_jerk = [float(jmax[k])]
            assert otg.calculate(inp, traj) == Result.Working
            durations.append(traj.duration)
        bound = limiter.braking_time(v)
        assert max(durations) <= bound + 1e-12
        slowest = int(np.argmax(np.abs(v) / amax + amax / jmax))
        if abs(v[slowest]) >= amax[slowest] ** 2 / jmax[slowest]:
            assert durations[slowest] == pytest.approx(bound, rel=1e-9)


def test_motion_state_of_the_wrong_size_is_refused_and_changes_nothing(panda, limits):
    """``set_state`` checks the sizes (the compiled box reads these arrays every step)."""
    solver = stackik.KinematicsSolver(panda, dt=DT)
    motion = JointMotionConstraint(
        "joint_motion", solver.kinematics, limits.velocity, limits.acceleration, limits.jerk
    )
    v, a = np.full(7, 0.3), np.full(7, -1.0)
    motion.set_state(v, a)
    for args in ((np.zeros(6), a), (v, np.zeros(8)), (v, a, np.zeros(3)), (list(v), a)):
        with pytest.raises(ShapeError):
            motion.set_state(*args)
    np.testing.assert_array_equal(motion.velocity, v)  # the state set before stays
    np.testing.assert_array_equal(motion.acceleration, a)
