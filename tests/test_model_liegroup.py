"""Configuration-space operations of RobotModel: integrate, difference, normalize, sampling."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from stackik import RobotModel
from stackik.errors import InvalidInput
from stackik.model import Kinematics
from stackik.model.kinematics import vector_space
from stackik.model.robot import DEFAULT_BASE_SAMPLING_RANGE


def _same_configuration(robot, qa, qb, atol=1e-12):
    """Equal up to the sign of the base quaternion (q and -q are one rotation)."""
    qa, qb = np.array(qa), np.array(qb)
    if robot.is_floating_base and np.dot(qa[3:7], qb[3:7]) < 0:
        qb[3:7] *= -1
    np.testing.assert_allclose(qa, qb, atol=atol)


def test_neutral_configuration(arm, floating_arm):
    np.testing.assert_array_equal(arm.neutral_configuration(), [0, 1, 0, 0])
    np.testing.assert_array_equal(
        floating_arm.neutral_configuration(), [0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0]
    )


def test_integrate_by_joint_type(floating_arm):
    # Base: q_base (+) v = M0 * exp6(v) (body-frame twist); revolute and prismatic add;
    # a continuous joint's (cos, sin) turns by the angle.
    rng = np.random.default_rng(0)
    M0 = pin.SE3(pin.exp3(rng.normal(size=3)), rng.normal(size=3))
    q = np.concatenate([pin.SE3ToXYZQUAT(M0), [0.2, np.cos(0.5), np.sin(0.5), 0.05]])
    v = np.array([0.1, -0.2, 0.3, 0.4, -0.1, 0.2, 0.3, 0.7, 0.02])
    q1 = floating_arm.integrate(q, v)
    base = pin.XYZQUATToSE3(q1[:7])
    np.testing.assert_allclose(
        base.homogeneous, (M0 * pin.exp6(pin.Motion(v[:6]))).homogeneous, atol=1e-12
    )
    np.testing.assert_allclose(q1[7:], [0.5, np.cos(1.2), np.sin(1.2), 0.07], atol=1e-12)
    # dt scales the velocity.
    np.testing.assert_allclose(floating_arm.integrate(q, v, 0.25), floating_arm.integrate(q, v / 4))


@pytest.mark.parametrize("seed", range(5))
def test_integrate_difference_round_trip(floating_arm, rand_q, seed):
    rng = np.random.default_rng(seed)
    q0 = rand_q(floating_arm, seed)
    v = rng.uniform(-1, 1, floating_arm.nv)
    q1 = floating_arm.integrate(q0, v)
    assert np.linalg.norm(q1[3:7]) == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(floating_arm.difference(q0, q1), v, atol=1e-10)
    q2 = rand_q(floating_arm, seed + 50)
    d = floating_arm.difference(q0, q2)
    _same_configuration(floating_arm, floating_arm.integrate(q0, d), q2, atol=1e-10)
    np.testing.assert_allclose(floating_arm.difference(q0, q0), np.zeros(9), atol=1e-14)
    # log(X^-1) = -log(X): swapping the ends flips the tangent vector.
    np.testing.assert_allclose(d, -floating_arm.difference(q2, q0), atol=1e-10)


def test_difference_matches_pinocchio(floating_arm, rand_q):
    q0, q1 = rand_q(floating_arm, 1), rand_q(floating_arm, 2)
    np.testing.assert_allclose(
        floating_arm.difference(q0, q1), pin.difference(floating_arm.model, q0, q1), atol=1e-14
    )


def test_normalize(floating_arm):
    q = np.array([0.1, 0.2, 0.3, 0.0, 0.0, 3.0, 4.0, 0.4, 3.0, 4.0, 0.1])
    original = q.copy()
    qn = floating_arm.normalize(q)
    np.testing.assert_array_equal(q, original)  # the input is not modified
    np.testing.assert_allclose(qn[3:7], [0, 0, 0.6, 0.8], atol=1e-15)
    np.testing.assert_allclose(qn[8:10], [0.6, 0.8], atol=1e-15)
    np.testing.assert_array_equal(qn[[0, 1, 2, 7, 10]], q[[0, 1, 2, 7, 10]])


def test_random_configuration_inside_limits(arm, floating_arm, mimic_robot):
    for robot in (arm, floating_arm, mimic_robot):
        lo, hi = robot.get_joint_limits()
        for seed in range(100):
            q = robot.random_configuration(seed)
            assert q.shape == (robot.nq,)
            assert np.all(np.isfinite(q))
            assert np.all(q >= lo) and np.all(q <= hi)


def test_random_configuration_manifold_parts(floating_arm):
    angles = []
    for seed in range(200):
        q = floating_arm.random_configuration(seed)
        assert np.linalg.norm(q[3:7]) == pytest.approx(1.0, abs=1e-12)
        assert q[8] ** 2 + q[9] ** 2 == pytest.approx(1.0, abs=1e-12)
        assert np.all(np.abs(q[:3]) <= DEFAULT_BASE_SAMPLING_RANGE)
        angles.append(np.arctan2(q[9], q[8]))
    # The continuous joint covers the whole circle, not a sub-range.
    assert min(angles) < -2.5 and max(angles) > 2.5


def test_random_configuration_is_deterministic_for_a_seed(floating_arm):
    a = floating_arm.random_configuration(42)
    np.testing.assert_array_equal(a, floating_arm.random_configuration(42))
    np.testing.assert_array_equal(a, floating_arm.random_configuration(np.random.default_rng(42)))
    assert not np.allclose(a, floating_arm.random_configuration(43))
    rng = np.random.default_rng(7)
    assert not np.allclose(
        floating_arm.random_configuration(rng), floating_arm.random_configuration(rng)
    )


def test_random_configuration_uses_finite_base_limits(floating_arm):
    lo, hi = floating_arm.get_joint_limits()
    lo[:3], hi[:3] = [5.0, -1.0, 0.0], [5.5, -0.9, 0.01]
    floating_arm.set_joint_limits(lo, hi)
    for seed in range(20):
        q = floating_arm.random_configuration(seed)
        assert np.all(q[:3] >= lo[:3]) and np.all(q[:3] <= hi[:3])


def test_random_configuration_rejects_unbounded_joint(arm):
    lo, hi = arm.get_joint_limits()
    hi[3] = np.inf
    arm.set_joint_limits(lo, hi)
    with pytest.raises(InvalidInput, match="j3"):
        arm.random_configuration(0)


def test_random_orientation_is_spread(floating_arm):
    # A uniform rotation has E[R] = 0; a biased sampler (e.g. uniform Euler angles or a
    # box in quaternion space) would not average out.
    Rs = [pin.XYZQUATToSE3(floating_arm.random_configuration(s)[:7]).rotation for s in range(400)]
    assert np.abs(np.mean(Rs, axis=0)).max() < 0.12


def test_lie_group_validates_input(floating_arm):
    q = floating_arm.neutral_configuration()
    with pytest.raises(InvalidInput):
        floating_arm.integrate(q, np.zeros(8))
    with pytest.raises(InvalidInput):
        floating_arm.difference(q, q[:-1])
    with pytest.raises(InvalidInput):
        floating_arm.normalize(q[:-1])


def test_reduced_and_mimic_models_sample(arm_path):
    robot = RobotModel(arm_path, ["j2"])
    for seed in range(10):
        q = robot.random_configuration(seed)
        assert q[0] ** 2 + q[1] ** 2 == pytest.approx(1.0)


PANDA = Path(__file__).resolve().parents[1] / "robots" / "panda" / "panda.urdf"
MIMIC = Path(__file__).resolve().parent / "data" / "mimic.urdf"


@pytest.mark.parametrize(
    ("which", "flat"),
    [("panda", True), ("mimic_keep", True), ("arm", False), ("floating_arm", False),
     ("mimic_fold", False)],
)  # fmt: skip
def test_kinematics_difference_is_pinocchios_bit_for_bit(which, flat, arm, floating_arm, rand_q):
    """The subtraction shortcut gives Pinocchio's numbers, and only where it may be taken."""
    robot = {
        "panda": lambda: RobotModel(PANDA, load_collisions=False),
        "mimic_keep": lambda: RobotModel(MIMIC, mimic="keep"),
        "mimic_fold": lambda: RobotModel(MIMIC, mimic="fold"),
        "arm": lambda: arm,
        "floating_arm": lambda: floating_arm,
    }[which]()
    model = robot.model
    # a continuous joint's (cos, sin) pair, a floating base and a folded mimic joint are
    # left to Pinocchio
    assert vector_space(model) is flat
    kin = Kinematics(robot)
    for seed in range(40):
        q0, q1 = rand_q(robot, 2 * seed), rand_q(robot, 2 * seed + 1)
        if flat:  # far outside the limits too: the shortcut is exact anywhere
            q1 = q1 + 10.0 ** (seed % 7 - 3) * np.sign(np.sin(np.arange(robot.nq) + seed))
        expected = pin.difference(model, q0, q1)
        got = kin.difference(q0, q1)
        assert got.shape == (robot.nv,)
        assert np.array_equal(got.view(np.int64), expected.view(np.int64))
