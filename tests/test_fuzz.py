"""Fuzzing every public entry point with hypothesis: shapes, NaN, inf, huge values,
wrong types and complex numbers.

The contract checked for every call: it raises a ``StackIKError`` subclass, or it
returns a result whose numbers are all finite; a result with a status is never
``SUCCESS`` when an input was invalid (NaN, inf, complex, wrong shape or type). No bare
Python exception, no crash, no NaN.
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stackik
from stackik import KinematicsSolver, RobotModel, SolverStatus, StackIKError

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
PANDA_READY = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
TIP = "panda_hand_tcp"
FUZZ = settings(
    max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True
)


@pytest.fixture(scope="module")
def panda() -> RobotModel:
    robot = RobotModel(ROBOTS / "panda" / "panda.urdf", srdf_path=ROBOTS / "panda" / "panda.srdf")
    robot.update_kinematics(PANDA_READY)
    return robot


def fresh_solver(robot: RobotModel) -> KinematicsSolver:
    robot.update_kinematics(PANDA_READY)
    solver = KinematicsSolver(robot, dt=0.01)
    solver.add_frame_task("ee", TIP)
    solver.add_posture_task("posture").priority = 1
    return solver


# -- values --------------------------------------------------------------------------------
BAD_SCALARS = [np.nan, np.inf, -np.inf, 1e300, -1e300, 1 + 2j, "x", None, [], True]


def bad_array(n: int) -> st.SearchStrategy:
    """Arrays that are invalid as a size-n vector of finite reals."""
    return st.one_of(
        st.integers(0, 12).filter(lambda m: m != n).map(np.zeros),
        st.sampled_from([np.nan, np.inf, -np.inf]).map(
            lambda x: np.where(np.arange(n) == n // 2, x, 0.1)
        ),
        st.just(np.zeros(n, dtype=complex) + 1e-3j),
        st.just(np.zeros((n, 1))),
        st.just(["a"] * n),
        st.just(None),
        st.just(object()),
        st.just([[0.0] * n, [0.0]]),
    )


def finite_array(n: int, scale: float = 3.0) -> st.SearchStrategy:
    return st.lists(st.floats(-scale, scale, allow_nan=False), min_size=n, max_size=n).map(np.array)


def any_array(n: int) -> st.SearchStrategy:
    return st.one_of(finite_array(n), bad_array(n), finite_array(n, 1e300))


def _numbers(x: object) -> list[np.ndarray]:
    """Every array of numbers inside a result (dataclasses, sequences, arrays)."""
    if isinstance(x, np.ndarray):
        return [x] if x.dtype.kind in "fc" else []
    if isinstance(x, (float, np.floating)):
        return [np.array([x])]
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return [a for f in dataclasses.fields(x) for a in _numbers(getattr(x, f.name))]
    if isinstance(x, (list, tuple, stackik.FindConfigsResult)):
        return [a for item in x for a in _numbers(item)]
    if isinstance(x, pin.SE3):
        return [x.homogeneous]
    return []


def check(call, invalid: bool) -> object:
    """Run ``call`` and check the contract (see the module docstring)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = call()
        except StackIKError:
            return None
        except Exception as exc:  # pragma: no cover - a contract violation
            pytest.fail(f"bare {type(exc).__name__}: {exc}")
    for arr in _numbers(result):
        ignore_inf = arr.ndim >= 1 and False
        assert ignore_inf or np.all(np.isfinite(arr[~np.isinf(arr)]))  # no NaN anywhere
    status = getattr(result, "status", None)
    if invalid and status is not None:
        assert status != SolverStatus.SUCCESS, result
    return result


def is_bad(x: object, n: int) -> bool:
    try:
        arr = np.asarray(x)
        if arr.dtype.kind not in "biuf" or arr.shape != (n,):
            return True
        return not np.all(np.isfinite(arr.astype(float)))
    except Exception:
        return True


def q_is_bad(q: object) -> bool:
    """For the calls where ``None`` means the current configuration or no seed."""
    return q is not None and is_bad(q, 7)


def negated(x: object) -> object:
    """``-x`` for numeric arrays, ``x`` itself otherwise (the call must then refuse it)."""
    arr = np.asarray(x) if isinstance(x, np.ndarray) else None
    return -arr if arr is not None and arr.dtype.kind in "fc" else x


# -- the robot -------------------------------------------------------------------------------
@FUZZ
@given(q=any_array(7), v=st.one_of(st.none(), any_array(7)))
def test_robot_kinematics_calls(panda, q, v):
    check(lambda: panda.update_kinematics(q, v), is_bad(q, 7))
    check(lambda: panda.integrate(q, v if v is not None else np.zeros(7), 0.01), True)
    check(lambda: panda.difference(PANDA_READY, q), is_bad(q, 7))
    check(lambda: panda.normalize(q), is_bad(q, 7))
    check(lambda: panda.rnea(q, q, q), is_bad(q, 7))
    check(lambda: panda.compute_mass_matrix(q), is_bad(q, 7))
    check(lambda: panda.compute_coriolis(PANDA_READY, q), is_bad(q, 7))
    panda.update_kinematics(PANDA_READY)


@FUZZ
@given(
    name=st.one_of(st.sampled_from([TIP, "panda_link3", "nope", "", None, 3]), st.text()),
    rf=st.sampled_from([pin.LOCAL, pin.WORLD, "local", "bad", None, 7]),
)
def test_robot_frame_queries(panda, name, rf):
    check(lambda: panda.get_frame_pose(name), False)
    check(lambda: panda.get_frame_jacobian(name, rf), False)
    check(lambda: panda.get_frame_id(name), False)
    check(lambda: panda.get_joint_config_index(name), False)


@FUZZ
@given(lo=any_array(7), hi=any_array(7), g=any_array(3), acc=any_array(7))
def test_robot_setters(lo, hi, g, acc):
    robot = RobotModel(ROBOTS / "panda" / "panda.urdf", load_collisions=False)
    check(lambda: robot.set_joint_limits(lo, hi), True)
    check(lambda: robot.set_gravity(g), True)
    check(lambda: robot.set_acceleration_limits(acc), True)
    check(lambda: robot.set_velocity_limits(acc), True)
    check(lambda: robot.add_frame("tool", TIP, np.eye(4) if is_bad(g, 3) else g), True)
    assert not np.isnan(robot.get_acceleration_limits()).any()  # inf is allowed: no braking
    assert np.all(robot.get_velocity_limits() > 0) and np.all(robot.get_acceleration_limits() > 0)


@FUZZ
@given(
    T=st.one_of(
        st.just(np.eye(4)),
        finite_array(16, 2.0).map(lambda a: a.reshape(4, 4)),
        st.sampled_from([np.nan, np.inf, 1e300]).map(lambda x: np.diag([1.0, 1.0, 1.0, x])),
        st.just(np.eye(4, dtype=complex)),
        st.just(np.eye(3)),
        st.just("pose"),
    )
)
def test_robot_placements(T):
    robot = RobotModel(ROBOTS / "panda" / "panda.urdf", load_collisions=False)
    check(lambda: robot.set_base_placement(T), True)
    check(lambda: robot.add_frame("t", TIP, T), True)
    robot.update_kinematics(PANDA_READY)
    assert np.all(np.isfinite(robot.get_frame_pose(TIP).homogeneous))


# -- the solver: settings, tasks, constraints ---------------------------------------------------
@FUZZ
@given(x=st.sampled_from([*BAD_SCALARS, -1.0, 0.0, 1e-3, 5.0, 10**400]))
def test_solver_scalar_settings(panda, x):
    solver = fresh_solver(panda)
    for call in (
        lambda: setattr(solver, "dt", x),
        lambda: solver.set_damping(x),
        lambda: solver.set_tolerance(x),
        lambda: solver.set_max_iterations(x),
        lambda: solver.set_limit_margin(x),
        lambda: setattr(solver.get_task("ee"), "weight", x),
        lambda: setattr(solver.get_task("ee"), "gain", x),
        lambda: setattr(solver.get_task("ee"), "priority", x),
    ):
        check(call, True)
    res = check(lambda: solver.solve_velocity(PANDA_READY), False)
    assert res is not None and res.status == SolverStatus.SUCCESS


@FUZZ
@given(w=any_array(7), mask=any_array(3), vel=any_array(6))
def test_task_setters(panda, w, mask, vel):
    solver = fresh_solver(panda)
    ee = solver.get_task("ee")
    check(lambda: solver.set_joint_weights(w), True)
    check(lambda: ee.set_position_mask(mask), True)
    check(lambda: ee.set_target_velocity(vel), is_bad(vel, 6))
    check(lambda: ee.set_target_position(vel[:3] if hasattr(vel, "__getitem__") else vel), True)
    check(lambda: solver.get_task("posture").set_target_configuration(w), is_bad(w, 7))
    res = check(lambda: solver.solve_velocity(PANDA_READY), False)
    assert res is not None and np.all(np.isfinite(res.solution))


@FUZZ
@given(q=any_array(7))
def test_solve_velocity_hot_path_never_raises(panda, q):
    solver = fresh_solver(panda)
    solver.get_task("ee").set_target_pose(pin.SE3(np.eye(3), np.array([0.4, 0.2, 0.5])))
    res = solver.solve_velocity(q)  # the hot path: a status, never an exception
    assert np.all(np.isfinite(res.solution))
    if q_is_bad(q):  # None means "the solver's current configuration"
        assert res.status == SolverStatus.INVALID_INPUT
    check(lambda: solver.build_problem(q), q_is_bad(q))


@FUZZ
@given(
    d=st.sampled_from([*BAD_SCALARS, -0.01, 0.0, 0.02]),
    m=st.sampled_from([*BAD_SCALARS, 0, 1, 8]),
    pairs=st.sampled_from([(), [("panda_hand", "panda_link0")], [("x", "y")], ["ab"], 3]),
)
def test_collision_configuration(panda, d, m, pairs):
    solver = fresh_solver(panda)
    check(lambda: solver.configure_collision_constraint(d, pairs, max_constraints=m), True)
    check(lambda: solver.set_collision_pair_min_distance("panda_hand", "panda_link0", d), True)
    res = check(lambda: solver.solve_velocity(PANDA_READY), False)
    assert res is not None and np.all(np.isfinite(res.solution))


@FUZZ
@given(
    poly=st.one_of(
        finite_array(8, 0.5).map(lambda a: a.reshape(4, 2)),
        st.just(np.zeros((2, 2))),
        st.just(np.full((4, 2), np.nan)),
        st.just([[0, 0], [1, 0], [1, 1], [0, 1]]),
        st.just("square"),
    ),
    bounds=any_array(6),
    C=st.one_of(finite_array(14).map(lambda a: a.reshape(2, 7)), st.just(np.full((2, 7), np.inf))),
)
def test_other_constraints(panda, poly, bounds, C):
    solver = fresh_solver(panda)
    check(lambda: solver.configure_com_constraint(poly), True)
    check(
        lambda: solver.configure_relative_pose_constraint(
            "panda_link0", TIP, negated(bounds), bounds
        ),
        True,
    )
    check(lambda: solver.set_linear_velocity_constraints(C, [-1, -1], [1, 1]), True)
    point = bounds[:3] if isinstance(bounds, (np.ndarray, list)) else bounds
    check(lambda: solver.add_tight_point_constraint(TIP, point, 0.01), True)
    check(lambda: solver.add_tight_frame_pose_constraint(TIP, poly, 0.01, 0.01), True)
    res = check(lambda: solver.solve_velocity(PANDA_READY), False)
    assert res is not None and np.all(np.isfinite(res.solution))


# -- position and global IK --------------------------------------------------------------------
POSES = st.one_of(
    st.just(pin.SE3(np.eye(3), np.array([0.4, 0.1, 0.5]))),
    st.sampled_from([np.nan, np.inf, 1e300]).map(
        lambda x: pin.SE3(np.eye(3), np.array([x, 0.0, 0.5]))
    ),
    st.just(pin.SE3(np.diag([1.0, 2.0, 1.0]), np.zeros(3))),
    st.sampled_from([np.nan, 1e300]).map(lambda x: np.diag([1.0, 1.0, 1.0, 1.0]) * x),
    st.just(np.eye(4, dtype=complex)),
    st.just(np.eye(3)),
    st.just(None),
)


def _pose_is_bad(T: object) -> bool:
    return not (isinstance(T, pin.SE3) and np.all(np.isfinite(T.translation))) or (
        np.abs(T.translation).max() > 1e6 or not np.allclose(T.rotation, np.eye(3))
    )


@FUZZ
@given(T=POSES, q=any_array(7), budget=st.sampled_from([*BAD_SCALARS, 0.002, 1e-9]))
def test_position_and_global_ik(panda, T, q, budget):
    solver = fresh_solver(panda)
    bad = _pose_is_bad(T) or q_is_bad(q)
    opts = stackik.PositionIKOptions(max_iterations=20)
    check(lambda: solver.solve_position(q, T, TIP, opts), bad)
    check(lambda: solver.solve_position_in_tcp(q, T, TIP, opts), bad)
    check(lambda: solver.solve_position_step(q, T, "ee"), bad)
    check(lambda: solver.find_configs(T, TIP, 2, budget, q), bad)
    check(lambda: solver.nearest_config(T, TIP, q, budget), bad)
    check(lambda: solver.generate_path(q, T, TIP, 3), bad)
    check(lambda: solver.alternate_configs(q), is_bad(q, 7))
    stack = np.array([T.homogeneous if isinstance(T, pin.SE3) else np.eye(4)] * 2)
    check(lambda: solver.solve_position_batch(stack, TIP, q), bad)


# -- spatial helpers and the SNS core -------------------------------------------------------------
@FUZZ
@given(v=any_array(4), R=st.one_of(st.just(np.eye(3)), any_array(9)), x=any_array(6))
def test_spatial_helpers(v, R, x):
    check(lambda: stackik.q2r(v), is_bad(v, 4))
    check(lambda: stackik.normalize_quaternion(v), is_bad(v, 4))
    check(lambda: stackik.r2q(R), True)
    check(lambda: stackik.Rt(R, x[:3] if hasattr(x, "__getitem__") else x), True)
    check(lambda: stackik.limit_task_velocity(x, 0.1, 0.1), is_bad(x, 6))
    check(lambda: stackik.compute_pose_error(np.eye(4), R), True)
    check(lambda: stackik.clamp_configuration(x, -np.ones(6), np.ones(6)), True)


@FUZZ
@given(J=any_array(14), x=any_array(2), lo=any_array(7))
def test_sns_core(J, x, lo):
    from stackik.sns import solve

    Jm = np.asarray(J).reshape(2, 7) if not is_bad(J, 14) else J
    bad = is_bad(J, 14) or is_bad(x, 2) or is_bad(lo, 7)
    check(lambda: solve([x], [Jm], box_lower=lo, box_upper=np.ones(7) * 10), bad)
