"""SE(3)/SO(3) helpers of stackik.spatial, against closed forms and Pinocchio."""

from __future__ import annotations

import itertools

import numpy as np
import pinocchio as pin
import pytest

from stackik import (
    InvalidBounds,
    InvalidTransform,
    NonFiniteInput,
    ShapeError,
    as_se3,
    clamp_configuration,
    compute_pose_error,
    limit_task_velocity,
    normalize_quaternion,
    q2r,
    r2q,
)
from stackik.errors import InvalidInput
from stackik.spatial import Rt, check_rotation  # (stackik.Rt is EmbodiK's: a utils.SE3)


def _quat_matrix(w, x, y, z):
    """Rotation matrix of a unit quaternion, the textbook closed form."""
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def _random_unit_quats(n, seed=0):
    q = np.random.default_rng(seed).normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def _random_rotation(seed):
    return pin.exp3(np.random.default_rng(seed).uniform(-3, 3, 3))


# -- Rt and as_se3 -------------------------------------------------------------------------------
def test_rt():
    T = Rt()
    assert isinstance(T, pin.SE3)
    np.testing.assert_array_equal(T.homogeneous, np.eye(4))
    R = _random_rotation(1)
    T = Rt(R, [1, 2, 3])
    expected = np.eye(4)
    expected[:3, :3], expected[:3, 3] = R, [1, 2, 3]
    np.testing.assert_allclose(T.homogeneous, expected, atol=1e-15)
    np.testing.assert_array_equal(Rt(t=(0.5, 0, 0)).translation, [0.5, 0, 0])
    np.testing.assert_allclose(Rt(R).rotation, R)
    with pytest.raises(InvalidTransform):
        Rt(2 * R)
    with pytest.raises(ShapeError):
        Rt(R, [1, 2])
    with pytest.raises(NonFiniteInput):
        Rt(R, [1, np.nan, 2])


def test_as_se3_accepts_se3_and_matrices():
    T = pin.SE3(_random_rotation(2), np.array([0.1, 0.2, 0.3]))
    assert as_se3(T) is T
    M = as_se3(T.homogeneous)
    assert isinstance(M, pin.SE3)
    np.testing.assert_allclose(M.homogeneous, T.homogeneous, atol=0)
    as_se3(T.homogeneous.tolist())  # nested lists are fine


def test_as_se3_rejects_invalid_transforms():
    T = pin.SE3(_random_rotation(3), np.array([0.1, 0.2, 0.3])).homogeneous
    skew = T.copy()
    skew[0, 1] += 1e-3
    with pytest.raises(InvalidTransform, match="not a rotation"):
        as_se3(skew)
    mirror = T.copy()
    mirror[:3, 0] *= -1  # orthonormal, det = -1: a reflection
    with pytest.raises(InvalidTransform, match="det R = -1"):  # (its |R^T R - I| is 0)
        as_se3(mirror)
    scaled = T.copy()
    scaled[:3, :3] *= 1.01
    with pytest.raises(InvalidTransform):
        as_se3(scaled)
    last = T.copy()
    last[3] = [0, 0, 1, 1]
    with pytest.raises(InvalidTransform, match="last row"):
        as_se3(last)
    nan = T.copy()
    nan[1, 3] = np.nan
    with pytest.raises(NonFiniteInput) as exc:
        as_se3(nan)
    assert exc.value.indices == [7]
    inf = T.copy()
    inf[0, 0] = np.inf
    with pytest.raises(NonFiniteInput):
        as_se3(inf)
    with pytest.raises(ShapeError) as shape:
        as_se3(T[:3])
    assert shape.value.given == (3, 4)
    with pytest.raises(ShapeError):
        as_se3(np.eye(4).ravel())


def test_check_rotation_tolerance():
    R = _random_rotation(4)
    np.testing.assert_array_equal(check_rotation(R + 1e-9), R + 1e-9)  # rounding is fine
    with pytest.raises(InvalidTransform):
        check_rotation(R + 1e-4)


# -- quaternions ---------------------------------------------------------------------------------
@pytest.mark.parametrize("order", ["sxyz", "wxyz"])
def test_q2r_scalar_first(order):
    for w, x, y, z in _random_unit_quats(20):
        R = q2r([w, x, y, z], order)
        np.testing.assert_allclose(R, _quat_matrix(w, x, y, z), atol=1e-14)
        np.testing.assert_allclose(R, pin.Quaternion(w, x, y, z).toRotationMatrix(), atol=1e-14)


@pytest.mark.parametrize("order", ["xyzs", "xyzw"])
def test_q2r_scalar_last(order):
    for w, x, y, z in _random_unit_quats(20, seed=1):
        np.testing.assert_allclose(q2r([x, y, z, w], order), _quat_matrix(w, x, y, z), atol=1e-14)


def test_q2r_default_order_is_scalar_first():
    # 90 deg about z: (w, x, y, z) = (cos 45, 0, 0, sin 45).
    c = np.sqrt(0.5)
    np.testing.assert_allclose(q2r([c, 0, 0, c]), pin.rpy.rpyToMatrix(0, 0, np.pi / 2), atol=1e-15)
    np.testing.assert_allclose(
        q2r([0, 0, c, c], "xyzw"), pin.rpy.rpyToMatrix(0, 0, np.pi / 2), atol=1e-15
    )


def test_q2r_normalizes_its_input():
    q = np.array([0.3, -0.2, 0.5, 0.7])
    np.testing.assert_allclose(q2r(5 * q), q2r(q / np.linalg.norm(q)), atol=1e-15)
    with pytest.raises(InvalidInput, match="zero norm"):
        q2r([0, 0, 0, 0])


@pytest.mark.parametrize("order", ["sxyz", "wxyz", "xyzs", "xyzw"])
def test_r2q_round_trips(order):
    scalar_first = order in ("sxyz", "wxyz")
    for seed in range(20):
        R = _random_rotation(seed)
        q = r2q(R, order)
        assert np.linalg.norm(q) == pytest.approx(1.0, abs=1e-14)
        w = q[0] if scalar_first else q[3]
        assert w >= 0.0
        np.testing.assert_allclose(q2r(q, order), R, atol=1e-14)
        xyzw = pin.Quaternion(R).coeffs()
        xyzw = xyzw if xyzw[3] >= 0 else -xyzw
        np.testing.assert_allclose(q, np.roll(xyzw, 1) if scalar_first else xyzw, atol=1e-14)
    # ... and quaternion -> matrix -> quaternion, up to the sign convention.
    for wxyz in _random_unit_quats(20, seed=2):
        q = wxyz if scalar_first else np.roll(wxyz, -1)
        back = r2q(q2r(q, order), order)
        np.testing.assert_allclose(back, q if wxyz[0] >= 0 else -q, atol=1e-14)


def test_quaternion_orders_are_validated():
    with pytest.raises(InvalidInput, match="order"):
        q2r([1, 0, 0, 0], "wxzy")
    with pytest.raises(InvalidInput, match="order"):
        r2q(np.eye(3), "quat")
    with pytest.raises(InvalidTransform):
        r2q(2 * np.eye(3))
    with pytest.raises(ShapeError):
        q2r([1, 0, 0])


def test_normalize_quaternion():
    q = np.array([1.0, 2.0, -2.0, 4.0])
    np.testing.assert_allclose(normalize_quaternion(q), q / 5.0, atol=1e-16)
    np.testing.assert_array_equal(q, [1.0, 2.0, -2.0, 4.0])  # input untouched
    with pytest.raises(InvalidInput, match="zero norm"):
        normalize_quaternion([0.0, 0.0, 0.0, 0.0])
    with pytest.raises(InvalidInput, match="zero norm"):
        normalize_quaternion([1e-14, 0.0, 0.0, 0.0])
    with pytest.raises(NonFiniteInput):
        normalize_quaternion([np.nan, 0, 0, 1])
    with pytest.raises(ShapeError):
        normalize_quaternion([1, 0, 0, 0, 0])


# -- pose error ----------------------------------------------------------------------------------
def test_pose_error_zero_for_equal_poses():
    for seed in range(5):
        T = pin.SE3(_random_rotation(seed), np.random.default_rng(seed).normal(size=3))
        np.testing.assert_allclose(compute_pose_error(T, T), np.zeros(6), atol=1e-15)
        np.testing.assert_allclose(
            compute_pose_error(T.homogeneous, pin.SE3(T)), np.zeros(6), atol=1e-15
        )


def test_pose_error_components():
    for seed in range(10):
        rng = np.random.default_rng(seed)
        cur = pin.SE3(_random_rotation(seed), rng.normal(size=3))
        goal = pin.SE3(_random_rotation(seed + 100), rng.normal(size=3))
        e = compute_pose_error(cur, goal)
        np.testing.assert_allclose(e[:3], goal.translation - cur.translation, atol=1e-15)
        np.testing.assert_allclose(e[3:], pin.log3(goal.rotation @ cur.rotation.T), atol=1e-14)
        # The rotation vector, applied in the world frame, takes the current to the goal.
        np.testing.assert_allclose(pin.exp3(e[3:]) @ cur.rotation, goal.rotation, atol=1e-12)
        np.testing.assert_allclose(
            compute_pose_error(cur.homogeneous, goal.homogeneous), e, atol=1e-15
        )


def test_pose_error_known_values():
    cur = Rt(np.eye(3), [1, 0, 0])
    goal = Rt(pin.rpy.rpyToMatrix(0, 0, 0.5), [1, 2, 0])
    np.testing.assert_allclose(compute_pose_error(cur, goal), [0, 2, 0, 0, 0, 0.5], atol=1e-15)


def test_pose_error_decreases_along_world_aligned_twist():
    # Drive the frame with v = K e in world-aligned axes: p += dt v_lin, R = exp3(dt w) R.
    for seed in range(5):
        rng = np.random.default_rng(seed)
        cur = pin.SE3(_random_rotation(seed), rng.normal(size=3))
        goal = pin.SE3(_random_rotation(seed + 50), rng.normal(size=3))
        errors = []
        for _ in range(100):
            e = compute_pose_error(cur, goal)
            errors.append(np.linalg.norm(e))
            twist = 0.1 * e
            cur = pin.SE3(pin.exp3(twist[3:]) @ cur.rotation, cur.translation + twist[:3])
        assert all(b < a for a, b in itertools.pairwise(errors))
        assert errors[-1] < 1e-3 * errors[0]


def test_pose_error_rejects_invalid_poses():
    bad = np.eye(4)
    bad[:3, :3] *= 2
    with pytest.raises(InvalidTransform):
        compute_pose_error(bad, np.eye(4))
    with pytest.raises(ShapeError):
        compute_pose_error(np.eye(3), np.eye(4))


# -- configuration and velocity helpers ----------------------------------------------------------
def test_clamp_configuration():
    out = clamp_configuration([-2.0, 0.5, 3.0, 7.0], [-1, 0, 0, -np.inf], [1, 1, 2, np.inf])
    np.testing.assert_array_equal(out, [-1.0, 0.5, 2.0, 7.0])
    with pytest.raises(InvalidBounds) as exc:
        clamp_configuration([0, 0], [0, 1], [1, 0])
    assert exc.value.indices == [1]
    with pytest.raises(ShapeError):
        clamp_configuration([0, 0, 0], [0, 0], [1, 1])
    with pytest.raises(ShapeError):
        clamp_configuration(np.zeros((2, 2)), [0, 0], [1, 1])


def test_limit_task_velocity():
    v = np.array([0.3, 0.4, 0.0, 0.0, 0.05, 0.0])
    out = limit_task_velocity(v, max_linear_step=0.1, max_angular_step=0.1)
    np.testing.assert_allclose(out, [0.06, 0.08, 0, 0, 0.05, 0], atol=1e-16)  # linear scaled
    np.testing.assert_array_equal(v, [0.3, 0.4, 0.0, 0.0, 0.05, 0.0])  # input untouched
    rng = np.random.default_rng(0)
    for _ in range(20):
        v = rng.normal(size=6)
        lin, ang = rng.uniform(0.01, 2, 2)
        out = limit_task_velocity(v, lin, ang)
        for part, bound in ((slice(0, 3), lin), (slice(3, 6), ang)):
            n_in, n_out = np.linalg.norm(v[part]), np.linalg.norm(out[part])
            assert n_out == pytest.approx(min(n_in, bound))
            np.testing.assert_allclose(out[part] / n_out, v[part] / n_in, atol=1e-12)
    np.testing.assert_array_equal(limit_task_velocity(np.zeros(6), 0.0, 0.0), np.zeros(6))
    with pytest.raises(InvalidInput):
        limit_task_velocity(np.ones(6), -0.1, 0.1)
    with pytest.raises(InvalidInput):  # NaN would silently disable the bound
        limit_task_velocity(np.ones(6), 0.1, np.nan)
    with pytest.raises(ShapeError):
        limit_task_velocity(np.ones(5))
    with pytest.raises(NonFiniteInput):
        limit_task_velocity([0, 0, np.inf, 0, 0, 0])
