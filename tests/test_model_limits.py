"""Joint limits of RobotModel: URDF values, defaults, setters and their validation."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from stackik import InvalidBounds, KinematicsSolver, NonFiniteInput, RobotModel, ShapeError
from stackik.errors import InvalidInput
from stackik.model import (
    DEFAULT_ACCELERATION_LIMIT,
    DEFAULT_EFFORT_LIMIT,
    DEFAULT_VELOCITY_LIMIT,
)
from stackik.model.building import DEFAULT_BASE_ANGULAR_VELOCITY, DEFAULT_BASE_LINEAR_VELOCITY

ZERO_LIMITS_URDF = """
<robot name="zero_limits">
  <link name="base"/>
  <joint name="a" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="0" velocity="0"/></joint>
  <link name="l1"/>
  <joint name="b" type="prismatic"><parent link="l1"/><child link="l2"/><axis xyz="1 0 0"/>
    <limit lower="0" upper="0.5" effort="7" velocity="0.25"/></joint>
  <link name="l2"/>
</robot>
"""


def test_urdf_limits_and_defaults(arm):
    lo, hi = arm.get_joint_limits()
    # q = [j1, cos j2, sin j2, j3]; Pinocchio bounds a continuous joint's cos/sin by 1.01.
    np.testing.assert_array_equal(lo, [-2.5, -1.01, -1.01, 0.0])
    np.testing.assert_array_equal(hi, [2.5, 1.01, 1.01, 0.2])
    # j2 is continuous without a <limit>: velocity and effort fall back to the defaults.
    np.testing.assert_array_equal(arm.get_velocity_limits(), [1.5, DEFAULT_VELOCITY_LIMIT, 0.5])
    np.testing.assert_array_equal(arm.get_effort_limits(), [50.0, DEFAULT_EFFORT_LIMIT, 20.0])
    np.testing.assert_array_equal(arm.get_acceleration_limits(), np.full(3, 10.0))
    assert (DEFAULT_VELOCITY_LIMIT, DEFAULT_EFFORT_LIMIT, DEFAULT_ACCELERATION_LIMIT) == (
        2.0,
        100.0,
        10.0,
    )


def test_zero_urdf_velocity_and_effort_take_defaults():
    robot = RobotModel.from_urdf_string(ZERO_LIMITS_URDF)
    np.testing.assert_array_equal(robot.get_velocity_limits(), [DEFAULT_VELOCITY_LIMIT, 0.25])
    np.testing.assert_array_equal(robot.get_effort_limits(), [DEFAULT_EFFORT_LIMIT, 7.0])


def test_floating_base_limits(floating_arm):
    """Unbounded position and effort; a finite default velocity bound (never inf)."""
    lo, hi = floating_arm.get_joint_limits()
    assert np.all(lo[:3] == -np.inf) and np.all(hi[:3] == np.inf)
    np.testing.assert_array_equal(lo[7:], [-2.5, -1.01, -1.01, 0.0])
    vel, eff = floating_arm.get_velocity_limits(), floating_arm.get_effort_limits()
    assert np.all(vel[:3] == DEFAULT_BASE_LINEAR_VELOCITY)
    assert np.all(vel[3:6] == DEFAULT_BASE_ANGULAR_VELOCITY)
    assert np.all(eff[:6] == np.inf)
    np.testing.assert_array_equal(vel[6:], [1.5, DEFAULT_VELOCITY_LIMIT, 0.5])
    np.testing.assert_array_equal(eff[6:], [50.0, DEFAULT_EFFORT_LIMIT, 20.0])
    np.testing.assert_array_equal(floating_arm.get_acceleration_limits(), np.full(9, 10.0))


def test_limit_getters_return_copies(arm):
    for get in (arm.get_velocity_limits, arm.get_effort_limits, arm.get_acceleration_limits):
        x = get()
        x[:] = -1.0
        assert np.all(get() > 0)
    lo, _ = arm.get_joint_limits()
    lo[:] = 5.0
    assert arm.get_joint_limits()[0][0] == -2.5


def test_set_limits_roundtrip_and_reach_pinocchio(arm):
    arm.set_joint_limits([-1, -1.01, -1.01, 0.05], [1, 1.01, 1.01, np.inf])
    lo, hi = arm.get_joint_limits()
    np.testing.assert_array_equal(lo, [-1, -1.01, -1.01, 0.05])
    np.testing.assert_array_equal(hi, [1, 1.01, 1.01, np.inf])
    np.testing.assert_array_equal(arm.model.lowerPositionLimit, lo)
    arm.set_velocity_limits([0.1, 0.2, np.inf])
    np.testing.assert_array_equal(arm.get_velocity_limits(), [0.1, 0.2, np.inf])
    np.testing.assert_array_equal(arm.model.velocityLimit, [0.1, 0.2, np.inf])
    arm.set_effort_limits((3, 4, 5))
    np.testing.assert_array_equal(arm.get_effort_limits(), [3, 4, 5])
    np.testing.assert_array_equal(arm.model.effortLimit, [3, 4, 5])
    arm.set_acceleration_limits(np.array([7.0, 8.0, 9.0]))
    np.testing.assert_array_equal(arm.get_acceleration_limits(), [7, 8, 9])


def test_setters_copy_their_input(arm):
    vel = np.array([0.1, 0.2, 0.3])
    arm.set_velocity_limits(vel)
    vel[0] = 99.0
    assert arm.get_velocity_limits()[0] == 0.1
    acc = np.array([1.0, 2.0, 3.0])
    arm.set_acceleration_limits(acc)
    acc[0] = 99.0
    assert arm.get_acceleration_limits()[0] == 1.0
    lo, hi = np.array([-1.0, -2, -2, 0]), np.array([1.0, 2, 2, 0.1])
    arm.set_joint_limits(lo, hi)
    lo[0] = -50.0
    assert arm.get_joint_limits()[0][0] == -1.0


def _snapshot(robot):
    return (
        *robot.get_joint_limits(),
        robot.get_velocity_limits(),
        robot.get_effort_limits(),
        robot.get_acceleration_limits(),
    )


def _assert_unchanged(robot, before):
    for a, b in zip(before, _snapshot(robot), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "setter", ["set_velocity_limits", "set_effort_limits", "set_acceleration_limits"]
)
def test_positive_limit_setters_validate(arm, setter):
    before = _snapshot(arm)
    set_ = getattr(arm, setter)
    with pytest.raises(ShapeError) as exc:
        set_([1.0, 2.0])
    assert exc.value.expected == (3,) and exc.value.given == (2,)
    with pytest.raises(ShapeError):
        set_(np.ones((3, 1)))
    for bad in ([1.0, 0.0, 1.0], [1.0, -2.0, 1.0], [1.0, np.nan, 1.0], [1.0, -np.inf, 1.0]):
        with pytest.raises(InvalidInput, match="positive"):
            set_(bad)
    _assert_unchanged(arm, before)


def test_set_joint_limits_validates(arm):
    before = _snapshot(arm)
    with pytest.raises(ShapeError) as exc:
        arm.set_joint_limits([-1, -1, -1], [1, 1, 1])
    assert exc.value.expected == (4,) and exc.value.given == (3,)
    with pytest.raises(ShapeError):
        arm.set_joint_limits([-1, -1, -1, 0], [1, 1, 1])
    with pytest.raises(InvalidBounds) as bounds:
        arm.set_joint_limits([-1, -1, 2, 0.3], [1, 1, 1, 0.2])
    assert bounds.value.indices == [2, 3]
    with pytest.raises(NonFiniteInput) as nan:
        arm.set_joint_limits([-1, np.nan, -1, 0], [1, 1, 1, 1])
    assert nan.value.indices == [1]
    _assert_unchanged(arm, before)


def test_set_joint_limits_drive_random_configuration(arm):
    arm.set_joint_limits([0.5, -1.01, -1.01, 0.1], [0.6, 1.01, 1.01, 0.15])
    for seed in range(20):
        q = arm.random_configuration(seed)
        assert 0.5 <= q[0] <= 0.6
        assert 0.1 <= q[3] <= 0.15


PANDA = Path(__file__).resolve().parents[1] / "robots" / "panda" / "panda.urdf"


def _limit_box(solver: KinematicsSolver, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The joint limits' velocity box of ``solver`` at ``q`` (dt 0.01 s)."""
    solver.kinematics.update(q)
    lo, hi = np.full(solver.robot.nv, -np.inf), np.full(solver.robot.nv, np.inf)
    solver.engine.joint_limits.tighten_box(0.01, lo, hi)
    return lo, hi


def _fresh_box(robot: RobotModel, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The same box from a solver made after the limits were set (nothing cached)."""
    return _limit_box(KinematicsSolver(robot, dt=0.01), q)


def test_the_limit_box_follows_limits_set_after_its_first_step():
    """Velocity, position and acceleration limits set between steps reach the next step."""
    robot = RobotModel(PANDA, load_collisions=False)
    solver = KinematicsSolver(robot, dt=0.01)
    lo0, hi0 = robot.get_joint_limits()
    q = 0.5 * (lo0 + hi0)
    q[3] = hi0[3] - 0.01  # near an upper limit: the braking bound and the acceleration act
    vmax = robot.get_velocity_limits()
    np.testing.assert_array_equal(_limit_box(solver, q)[1][:3], vmax[:3])  # (mid-range joints)
    robot.set_velocity_limits(0.5 * vmax)
    lo, hi = _limit_box(solver, q)
    np.testing.assert_array_equal(hi[:3], 0.5 * vmax[:3])
    assert np.array_equal(np.stack([lo, hi]), np.stack(_fresh_box(robot, q)))
    robot.set_joint_limits(lo0, hi0 + 0.005)
    robot.set_acceleration_limits(np.full(robot.nv, 3.0))
    moved = _limit_box(solver, q)
    assert not np.array_equal(moved[1], hi)
    assert np.array_equal(np.stack(moved), np.stack(_fresh_box(robot, q)))


def test_an_unpickled_solver_reads_the_limits_of_its_own_robot():
    robot = RobotModel(PANDA, load_collisions=False)
    solver = KinematicsSolver(robot, dt=0.01)
    lower, upper = robot.get_joint_limits()
    q = lower + np.linspace(0.02, 0.98, robot.nq) * (upper - lower)  # (near both limits too)
    before = _limit_box(solver, q)
    copy = pickle.loads(pickle.dumps(solver))
    copy.robot.set_velocity_limits(0.25 * copy.robot.get_velocity_limits())
    copy.robot.set_acceleration_limits(np.full(robot.nv, 2.0))
    after = _limit_box(copy, q)
    assert np.array_equal(np.stack(after), np.stack(_fresh_box(copy.robot, q)))
    assert not np.array_equal(after[1], before[1])
    assert np.array_equal(np.stack(_limit_box(solver, q)), np.stack(before))  # the original's


def test_acceleration_limits_view_is_read_only_and_current():
    robot = RobotModel(PANDA, load_collisions=False)
    view = robot.acceleration_limits
    with pytest.raises(ValueError):
        view[0] = 1.0
    robot.set_acceleration_limits(np.arange(1.0, robot.nv + 1.0))
    np.testing.assert_array_equal(robot.acceleration_limits, np.arange(1.0, robot.nv + 1.0))
    copy = pickle.loads(pickle.dumps(robot))
    np.testing.assert_array_equal(copy.acceleration_limits, np.arange(1.0, robot.nv + 1.0))
    with pytest.raises(ValueError):
        copy.acceleration_limits[0] = 1.0
