"""stackik.utils: SE3, SO3, PoseData and seed 004's helpers, against closed forms and Pinocchio.

Rotation matrices are written out by hand; compositions are compared with Pinocchio's
SE3 products and with 4x4 matrix products; every conversion is round-tripped; every
pose-taking API of stackik accepts the new types.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import stackik
from stackik import (
    InvalidInput,
    InvalidTransform,
    NonFiniteInput,
    RobotModel,
    ShapeError,
    as_se3,
)
from stackik.solver import KinematicsSolver
from stackik.spatial import check_pose_stack, check_rotation
from stackik.utils import (
    SE3,
    SO3,
    PoseData,
    Rotation,
    Rt,
    compute_pose_error,
    get_pose_error_vector,
    limit_task_velocity,
    normalize_quaternion,
    q2r,
    r2q,
)

ANGLES = [-2.7, -1.0, -0.3, 0.0, 0.4, 1.2, math.pi / 2, 3.0]


def rx(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def ry(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def rz(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def homogeneous(R, t):
    H = np.eye(4)
    H[:3, :3], H[:3, 3] = R, t
    return H


def rodrigues(axis, angle):
    a = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


def random_pose(seed):
    rng = np.random.default_rng(seed)
    return homogeneous(pin.exp3(rng.uniform(-2, 2, 3)), rng.uniform(-1, 1, 3))


# -- SO3 -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("a", ANGLES)
def test_axis_rotations_are_the_textbook_matrices(a):
    np.testing.assert_allclose(SO3.Rx(a).R, rx(a), atol=1e-15)
    np.testing.assert_allclose(SO3.Ry(a).R, ry(a), atol=1e-15)
    np.testing.assert_allclose(SO3.Rz(a).R, rz(a), atol=1e-15)
    np.testing.assert_allclose(SO3.Rz(math.degrees(a), unit="deg").R, rz(a), atol=1e-14)
    assert Rotation is SO3


@pytest.mark.parametrize("seed", range(10))
def test_rpy_orders_and_round_trips(seed):
    rng = np.random.default_rng(seed)
    r, p, y = rng.uniform(-3, 3), rng.uniform(-1.5, 1.5), rng.uniform(-3, 3)
    cases = {
        "zyx": rz(y) @ ry(p) @ rx(r),
        "xyz": rx(y) @ ry(p) @ rz(r),
        "yxz": ry(y) @ rx(p) @ rz(r),
    }
    np.testing.assert_allclose(SO3.RPY(r, p, y).R, pin.rpy.rpyToMatrix(r, p, y), atol=1e-14)
    for order, expected in cases.items():
        R = SO3.RPY(r, p, y, order=order)
        np.testing.assert_allclose(R.R, expected, atol=1e-14)
        np.testing.assert_allclose(SO3.RPY([r, p, y], order=order).R, expected, atol=1e-14)
        np.testing.assert_allclose(R.rpy(order), [r, p, y], atol=1e-12)
    deg = np.degrees([r, p, y])
    np.testing.assert_allclose(SO3.RPY(deg, unit="deg").R, cases["zyx"], atol=1e-14)
    np.testing.assert_allclose(SO3.RPY(r, p, y).rpy(unit="deg"), deg, atol=1e-10)
    np.testing.assert_allclose(SO3.RPY(r, p, y, order="arm").R, cases["xyz"], atol=1e-14)


@pytest.mark.parametrize("order", ["zyx", "xyz", "yxz"])
@pytest.mark.parametrize("pitch", [math.pi / 2, -math.pi / 2])
def test_rpy_at_gimbal_lock_reproduces_the_rotation(order, pitch):
    R = SO3.RPY(0.4, pitch, -1.1, order=order)
    angles = R.rpy(order)
    assert angles[0] == 0.0
    assert abs(abs(angles[1]) - math.pi / 2) < 1e-7
    np.testing.assert_allclose(SO3.RPY(angles, order=order).R, R.R, atol=1e-9)


@pytest.mark.parametrize("seed", range(8))
def test_angvec_exp_log(seed):
    rng = np.random.default_rng(seed)
    axis, theta = rng.normal(size=3), rng.uniform(0.01, 3.1)
    R = SO3.AngVec(theta, axis)
    np.testing.assert_allclose(R.R, rodrigues(axis, theta), atol=1e-14)
    got_theta, got_axis = R.angvec()
    assert got_theta == pytest.approx(theta, abs=1e-12)
    np.testing.assert_allclose(got_axis, axis / np.linalg.norm(axis), atol=1e-10)
    np.testing.assert_allclose(SO3.Exp(theta * got_axis).R, R.R, atol=1e-14)
    np.testing.assert_allclose(R.log(), theta * axis / np.linalg.norm(axis), atol=1e-10)
    assert SO3().angvec()[0] == 0.0
    np.testing.assert_array_equal(SO3().angvec()[1], np.zeros(3))


@pytest.mark.parametrize("seed", range(8))
def test_so3_algebra(seed):
    A, B = SO3.Rand(seed), SO3.Rand(seed + 100)
    np.testing.assert_allclose((A * B).R, A.R @ B.R, atol=1e-15)
    np.testing.assert_allclose(A.inv().R, A.R.T)
    np.testing.assert_allclose((A * A.inv()).R, np.eye(3), atol=1e-14)
    v = np.array([0.3, -1.0, 2.0])
    np.testing.assert_allclose(A * v, A.R @ v)
    V = np.random.default_rng(seed).normal(size=(3, 5))
    np.testing.assert_allclose(A * V, A.R @ V)
    np.testing.assert_allclose(A.act(v), A.R @ v)
    np.testing.assert_array_equal(np.asarray(A), A.R)
    assert A.A is A.R and A.rotation is A.R


@pytest.mark.parametrize("order", ["sxyz", "xyzs"])
def test_so3_quaternion_round_trip(order):
    q_wxyz = np.array([math.cos(0.35), 0.0, 0.0, math.sin(0.35)])  # 0.7 rad about z
    q = q_wxyz if order == "sxyz" else np.roll(q_wxyz, -1)
    R = SO3.Quaternion(q, order)
    np.testing.assert_allclose(R.R, rz(0.7), atol=1e-15)
    np.testing.assert_allclose(R.quaternion(order), q, atol=1e-15)
    np.testing.assert_allclose(SO3.Quaternion(5.0 * q, order).R, rz(0.7), atol=1e-15)


def test_zero_or_non_finite_quaternions_are_typed_errors():
    for bad in ([0, 0, 0, 0], [1e-14, 0, 0, 0]):
        with pytest.raises(InvalidInput, match="zero norm"):
            SO3.Quaternion(bad)
        with pytest.raises(InvalidInput, match="zero norm"):
            q2r(bad)
        with pytest.raises(InvalidInput, match="zero norm"):
            normalize_quaternion(bad)
    for bad in ([np.nan, 0, 0, 1], [np.inf, 0, 0, 1]):
        with pytest.raises(NonFiniteInput):
            SO3.Quaternion(bad)
        with pytest.raises(NonFiniteInput):
            q2r(bad, order="xyzw")
    with pytest.raises(ShapeError):
        SO3.Quaternion([1, 0, 0])


def test_so3_rejects_bad_input():
    with pytest.raises(InvalidTransform):
        SO3(np.diag([1.0, 1.0, -1.0]))
    with pytest.raises(ShapeError):
        SO3(np.eye(4))
    with pytest.raises(NonFiniteInput):
        SO3.Rx(np.nan)
    with pytest.raises(InvalidInput):
        SO3.Rx(0.1, unit="grad")
    with pytest.raises(InvalidInput):
        SO3.RPY(0.1, 0.2)
    with pytest.raises(InvalidInput):
        SO3.RPY(0.1, 0.2, 0.3, order="zxz")
    with pytest.raises(InvalidInput):
        SO3.AngVec(0.3, [0, 0, 0])
    with pytest.raises(ShapeError):
        SO3() * np.ones(4)


def test_so3_is_immutable():
    R = SO3.Rz(0.3)
    with pytest.raises(ValueError):
        R.R[0, 0] = 2.0
    M = rz(0.3)
    R2 = SO3(M)
    M[0, 0] = 5.0  # the SO3 holds its own copy
    np.testing.assert_allclose(R2.R, rz(0.3))


# -- SE3 -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(8))
def test_composition_inverse_and_actions_match_pinocchio_and_matrices(seed):
    Ha, Hb = random_pose(seed), random_pose(seed + 50)
    A, B = SE3(Ha), SE3(Hb)
    pa, pb = pin.SE3(Ha), pin.SE3(Hb)
    np.testing.assert_allclose((A * B).A, Ha @ Hb, atol=1e-14)
    np.testing.assert_allclose((A * B).A, (pa * pb).homogeneous, atol=1e-15)
    np.testing.assert_allclose(A.inv().A, np.linalg.inv(Ha), atol=1e-13)
    np.testing.assert_allclose(A.inverse().A, pa.inverse().homogeneous, atol=1e-15)
    np.testing.assert_allclose((A * pb).A, Ha @ Hb, atol=1e-14)  # mixed operands
    assert isinstance(pa * B, SE3)
    np.testing.assert_allclose((pa * B).A, Ha @ Hb, atol=1e-14)
    np.testing.assert_allclose((A * SO3(Hb[:3, :3])).R, Ha[:3, :3] @ Hb[:3, :3], atol=1e-14)
    p = np.array([0.2, -0.4, 0.9])
    expected = (Ha @ np.append(p, 1.0))[:3]
    np.testing.assert_allclose(A.act(p), expected, atol=1e-14)
    np.testing.assert_allclose(A.act(p), pa.act(p), atol=1e-15)
    np.testing.assert_allclose(A * p, expected, atol=1e-14)
    np.testing.assert_allclose(A.actInv(expected), p, atol=1e-13)
    np.testing.assert_allclose(A.actInv(p), pa.actInv(p), atol=1e-14)
    P = np.random.default_rng(seed).normal(size=(4, 3))  # rows
    np.testing.assert_allclose(A.act(P), (Ha[:3, :3] @ P.T).T + Ha[:3, 3], atol=1e-14)
    np.testing.assert_allclose(A.actInv(A.act(P)), P, atol=1e-13)
    np.testing.assert_allclose(A * P.T, Ha[:3, :3] @ P.T + Ha[:3, 3:], atol=1e-14)  # columns


def test_constructors():
    np.testing.assert_array_equal(SE3().A, np.eye(4))
    np.testing.assert_array_equal(SE3(1, 2, 3).t, [1, 2, 3])
    np.testing.assert_array_equal(SE3([1, 2, 3]).t, [1, 2, 3])
    np.testing.assert_array_equal(SE3.Trans(1, 2, 3).A, homogeneous(np.eye(3), [1, 2, 3]))
    np.testing.assert_array_equal(SE3.Trans([1, 2, 3]).t, [1, 2, 3])
    np.testing.assert_array_equal(SE3.Tx(0.5).t, [0.5, 0, 0])
    np.testing.assert_array_equal(SE3.Ty(0.5).t, [0, 0.5, 0])
    np.testing.assert_array_equal(SE3.Tz(0.5).t, [0, 0, 0.5])
    np.testing.assert_allclose(SE3.Rx(0.3).A, homogeneous(rx(0.3), np.zeros(3)), atol=1e-15)
    np.testing.assert_allclose(SE3.Ry(30, unit="deg").R, ry(math.pi / 6), atol=1e-15)
    np.testing.assert_allclose(SE3.Rz(0.3).R, rz(0.3), atol=1e-15)
    np.testing.assert_allclose(SE3.RPY(0.1, 0.2, 0.3).R, rz(0.3) @ ry(0.2) @ rx(0.1), atol=1e-15)
    H = random_pose(3)
    for T in (
        SE3(H),
        SE3(pin.SE3(H)),
        SE3(H[:3, :3], H[:3, 3]),
        SE3(SO3(H[:3, :3]), H[:3, 3]),
        SE3.Rt(H[:3, :3], H[:3, 3]),
        Rt(H[:3, :3], H[:3, 3]),
        SE3(PoseData(H[:3, :3], H[:3, 3])),
        SE3(SE3(H)),
        SE3(H.tolist()),
    ):
        assert isinstance(T, SE3)
        np.testing.assert_allclose(T.A, H, atol=1e-15)
    np.testing.assert_allclose(SE3(SO3(H[:3, :3])).A, homogeneous(H[:3, :3], np.zeros(3)))
    np.testing.assert_allclose(SO3(SE3(H)).R, H[:3, :3])
    np.testing.assert_array_equal(Rt().A, np.eye(4))
    np.testing.assert_array_equal(Rt(t=[1, 2, 3]).t, [1, 2, 3])


def test_aliases_and_round_trips():
    H = random_pose(7)
    T = SE3(H)
    np.testing.assert_array_equal(T.R, H[:3, :3])
    np.testing.assert_array_equal(T.rotation, T.R)
    np.testing.assert_array_equal(T.t, H[:3, 3])
    np.testing.assert_array_equal(T.translation, T.t)
    np.testing.assert_array_equal(T.A, H)
    np.testing.assert_array_equal(T.homogeneous(), H)
    np.testing.assert_array_equal(np.asarray(T), H)
    P = T.to_pinocchio()
    assert isinstance(P, pin.SE3)
    np.testing.assert_array_equal(P.homogeneous, H)
    P.translation = np.zeros(3)  # a copy: the SE3 is untouched
    np.testing.assert_array_equal(T.t, H[:3, 3])
    np.testing.assert_array_equal(SE3(T.to_pinocchio()).A, H)
    np.testing.assert_array_equal(SE3(T.A).A, H)
    with pytest.raises(ValueError):
        T.R[0, 0] = 1.0
    with pytest.raises(ValueError):
        T.t[0] = 1.0
    assert T.isclose(H) and not T.isclose(SE3.Tx(1e-6) * T)
    assert "SE3(" in repr(T) and "SO3(" in repr(SO3())


@pytest.mark.parametrize("seed", range(6))
def test_exp_log_and_interp(seed):
    H = random_pose(seed)
    T = SE3(H)
    np.testing.assert_allclose(T.log(), pin.log6(pin.SE3(H)).vector, atol=1e-15)
    np.testing.assert_allclose(SE3.Exp(T.log()).A, H, atol=1e-12)
    G = SE3(random_pose(seed + 20))
    assert T.interp(G, 0.0).isclose(T, 1e-14)
    assert T.interp(G, 1.0).isclose(G, 1e-12)
    mid = T.interp(G, 0.5)
    np.testing.assert_allclose(mid.t, 0.5 * (T.t + G.t), atol=1e-15)
    w = pin.log3(T.R.T @ G.R)  # half the relative rotation, about the same axis
    np.testing.assert_allclose(pin.log3(T.R.T @ mid.R), 0.5 * w, atol=1e-12)


def test_se3_rejects_bad_input():
    bad_R = homogeneous(np.diag([1.0, -1.0, 1.0]), np.zeros(3))
    with pytest.raises(InvalidTransform):
        SE3(bad_R)
    with pytest.raises(InvalidTransform):
        SE3(pin.SE3(np.diag([2.0, 1.0, 1.0]), np.zeros(3)))
    last = np.eye(4)
    last[3, 0] = 0.1
    with pytest.raises(InvalidTransform):
        SE3(last)
    with pytest.raises(NonFiniteInput):
        SE3(np.nan, 0, 0)
    with pytest.raises(ShapeError):
        SE3(np.eye(3))
    with pytest.raises(InvalidInput):
        SE3(1, 2, 3, 4)
    with pytest.raises(InvalidTransform):
        SE3.Trans(1e7, 0, 0)
    with pytest.raises(ShapeError):
        SE3().act([1.0, 2.0])
    with pytest.raises(InvalidInput):
        SE3().interp(SE3(), 1.5)
    with pytest.raises(TypeError):
        SE3() * "pose"


# -- PoseData and the seed's functions ------------------------------------------------------------
def test_pose_data_wrap():
    H = random_pose(11)
    for pose in (SE3(H), pin.SE3(H), H, PoseData(H[:3, :3], H[:3, 3])):
        pd = PoseData.wrap(pose)
        np.testing.assert_allclose(pd.R, H[:3, :3], atol=1e-15)
        np.testing.assert_allclose(pd.t, H[:3, 3], atol=1e-15)
        np.testing.assert_allclose(pd.homogeneous(), H, atol=1e-15)
    pd = PoseData(H[:3, :3], H[:3, 3])
    assert PoseData.wrap(pd) is pd

    class Duck:
        R = H[:3, :3]
        t = H[:3, 3]

    np.testing.assert_array_equal(PoseData.wrap(Duck()).t, H[:3, 3])
    with pytest.raises(InvalidInput, match="expected a pose"):
        PoseData.wrap(3.0)
    with pytest.raises(InvalidTransform):
        PoseData(2 * np.eye(3), np.zeros(3))
    with pytest.raises(ShapeError):
        PoseData(np.eye(3), np.zeros(2))


def test_pose_error_with_every_pose_type():
    Hc, Hg = random_pose(1), random_pose(2)
    expected = np.concatenate([Hg[:3, 3] - Hc[:3, 3], pin.log3(Hg[:3, :3] @ Hc[:3, :3].T)])
    kinds = [
        lambda H: H,
        pin.SE3,
        SE3,
        lambda H: PoseData(H[:3, :3], H[:3, 3]),
    ]
    for make_c in kinds:
        for make_g in kinds:
            np.testing.assert_allclose(
                compute_pose_error(make_c(Hc), make_g(Hg)), expected, atol=1e-14
            )
    np.testing.assert_array_equal(get_pose_error_vector(SE3(Hc), SE3(Hg)), expected)


def test_limit_task_velocity_logs_when_asked(caplog):
    v = np.array([3.0, 4.0, 0.0, 0.0, 0.0, 0.05])
    logger = logging.getLogger("stackik.test")
    with caplog.at_level(logging.INFO, logger="stackik.test"):
        out = limit_task_velocity(v, 1.0, 0.1, enable_debug=True, debug_logger=logger)
    np.testing.assert_allclose(out, [0.6, 0.8, 0, 0, 0, 0.05])
    assert len(caplog.records) == 1 and "Linear velocity limited" in caplog.text
    with pytest.raises(InvalidInput):
        limit_task_velocity(v, -1.0)


def test_quaternion_helpers_are_the_spatial_ones():
    R = SO3.Rand(4).R
    np.testing.assert_allclose(q2r(r2q(R)), R, atol=1e-14)
    np.testing.assert_allclose(q2r(r2q(R, "xyzw"), "xyzw"), R, atol=1e-14)
    assert stackik.utils.q2r is stackik.q2r


# -- accepted by every pose-taking API -------------------------------------------------------------
def test_spatial_checks_accept_the_new_types():
    H = random_pose(5)
    T = SE3(H)
    out = as_se3(T)
    assert isinstance(out, pin.SE3)
    np.testing.assert_array_equal(out.homogeneous, H)
    np.testing.assert_array_equal(as_se3(PoseData.wrap(H)).homogeneous, H)
    np.testing.assert_array_equal(check_rotation(SO3(H[:3, :3])), H[:3, :3])
    stack = check_pose_stack([T, SE3.Tx(0.1)])
    np.testing.assert_array_equal(stack[0], H)
    T2 = stackik.Rt(SO3(H[:3, :3]), H[:3, 3])  # EmbodiK's top-level Rt: an SE3 of utils
    assert isinstance(T2, SE3)
    np.testing.assert_array_equal(T2.homogeneous(), H)
    np.testing.assert_array_equal(stackik.spatial.Rt(SO3(H[:3, :3]), H[:3, 3]).homogeneous, H)
    # the existing fast paths are untouched: a valid pin.SE3 comes back as is
    P = pin.SE3(H)
    assert as_se3(P) is P


ROBOTS = Path(__file__).resolve().parents[1] / "robots"


@pytest.fixture(scope="module")
def ur5():
    return RobotModel(ROBOTS / "ur5" / "ur5.urdf", load_visuals=False, load_collisions=False)


def test_task_targets_position_and_global_ik_take_se3_and_so3(ur5):
    solver = KinematicsSolver(ur5)
    q_goal = np.array([0.3, -1.2, 1.4, -0.6, 1.1, 0.4])
    ur5.update_kinematics(q_goal)
    goal = SE3(ur5.get_frame_pose("tool0"))
    task = solver.add_frame_task("tool", "tool0")
    task.set_target_pose(goal)
    np.testing.assert_allclose(task.target_pose.homogeneous, goal.A)
    task.set_target_orientation(SO3.Rz(0.2))
    np.testing.assert_allclose(task.target_pose.rotation, rz(0.2))
    solver.remove_task("tool")
    q0 = q_goal + 0.1
    a = solver.solve_position(q0, goal, "tool0")
    b = solver.solve_position(q0, goal.A, "tool0")
    np.testing.assert_array_equal(a.solution, b.solution)
    assert a.success
    sols = solver.find_configs(goal, "tool0", 2, None, q0, seed=1, max_attempts=50)
    assert len(sols) >= 1
    for q in sols:
        ur5.update_kinematics(q)
        assert goal.isclose(ur5.get_frame_pose("tool0"), 1e-4)
