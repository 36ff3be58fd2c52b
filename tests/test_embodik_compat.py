"""stackik against the installed EmbodiK 0.23.2 (the ``test`` extra installs it).

Where EmbodiK is installed, its own functions are the reference: the velocity box on a
grid, the ``utils`` helpers and the SE3 / SO3 classes, result fields, enum members and
module-level names. Each difference that remains is listed in ``docs/embodik.md``; the
tests below name it where they skip it.
"""

from __future__ import annotations

import importlib
import itertools
import math
from pathlib import Path

import numpy as np
import pytest

import stackik
from stackik import InvalidInput, KinematicsSolver, RobotModel

embodik = pytest.importorskip("embodik")

ROOT = Path(__file__).resolve().parents[1]
PANDA = ROOT / "robots" / "panda" / "panda.urdf"


@pytest.fixture(scope="module")
def robots() -> tuple[object, RobotModel]:
    return embodik.RobotModel(str(PANDA), False), RobotModel(PANDA, load_visuals=False)


# -- 1. calculate_velocity_box_constraint ---------------------------------------------------------
#: Distances to a limit: past it (beyond and within EmbodiK's 1e-4 enter epsilon), at it,
#: inside it, and around the 0.01 headroom activation margin [rad].
MARGINS = [-0.3, -0.02, -0.0011, -2e-4, -1e-4, -5e-5, 0.0, 1e-5, 1e-4, 0.005, 0.01, 0.0101, 0.5]
VELOCITIES = [0.1, 1.0, 2.6]
ACCELERATIONS = [0.5, 10.0, 1e4]
DTS = [0.001, 0.01, 0.1]
HEADROOMS = [-1.0, 0.0, 0.05, 0.3, 5.0]


def _capped(h: float, margin: float, v: float, dt: float) -> float:
    """stackik's one deliberate difference: a headroom never exceeds v_max nor m / dt."""
    return min(h, v, margin / dt) if h >= 0.0 and margin > 0.0 else h


def _compare(ek, sk, grid) -> tuple[int, int]:
    """(points, points where the headroom cap made the difference); asserts agreement."""
    differ = 0
    n = 0
    for ml, mu, v, a, dt, h in grid:
        got = sk.calculate_velocity_box_constraint(ml, mu, v, a, dt, h, 0.01)
        plain = ek.calculate_velocity_box_constraint(ml, mu, v, a, dt, h, 0.01)
        # EmbodiK's lower bound depends on the headroom of the lower side only (and the
        # upper on the upper side's): the reference caps each side as stackik does.
        lower = ek.calculate_velocity_box_constraint(ml, mu, v, a, dt, _capped(h, ml, v, dt))[0]
        upper = ek.calculate_velocity_box_constraint(ml, mu, v, a, dt, _capped(h, mu, v, dt))[1]
        assert got == pytest.approx((lower, upper), abs=1e-12), (ml, mu, v, a, dt, h)
        differ += got != pytest.approx(plain, abs=1e-12)
        n += 1
    return n, differ


@pytest.mark.parametrize("gain", [None, 0.2, 1.0])
def test_velocity_box_matches_embodik_on_a_grid(robots, gain):
    er, sr = robots
    ek, sk = embodik.KinematicsSolver(er), KinematicsSolver(sr)
    if gain is not None:
        ek.set_limit_recovery_gain(gain)
        sk.set_limit_recovery_gain(gain)
    grid = itertools.product(MARGINS, MARGINS, VELOCITIES, ACCELERATIONS, DTS, HEADROOMS)
    n, differ = _compare(ek, sk, grid)
    assert n == len(MARGINS) ** 2 * 3 * 3 * 3 * 5
    # the cap binds only for headrooms above v_max or above m / dt (5.0, some 0.3 / 0.05)
    assert 0 < differ < n // 10


def test_velocity_box_matches_embodik_with_release_hysteresis_and_saturation_exit(robots):
    er, sr = robots
    grid = list(itertools.product(MARGINS, [0.5, 1e-5], [1.0], [10.0, 0.5], [0.01, 0.1], [-1.0]))
    for setup in (
        ("set_limit_exit_release_margin", 0.001),
        ("set_limit_recovery_hysteresis", 0.001, 0.003),
        ("set_limit_recovery_hysteresis", 0.0005, 0.0),
        ("enable_saturation_exit_behavior", True),
    ):
        ek, sk = embodik.KinematicsSolver(er), KinematicsSolver(sr)
        for s in (ek, sk):
            getattr(s, setup[0])(*setup[1:])
        _compare(ek, sk, grid)


def test_velocity_box_issue_cases_and_call_forms(robots):
    er, sr = robots
    ek, sk = embodik.KinematicsSolver(er), KinematicsSolver(sr)
    for s in (ek, sk):
        s.set_limit_recovery_gain(0.5)
    # the three differences measured in the issue
    assert sk.calculate_velocity_box_constraint(-0.0011, 0.5, 1, 10, 0.01) == pytest.approx(
        (0.055, 1.0)
    )
    lo, hi = sk.calculate_velocity_box_constraint(-1e-4, 0.5, 1, 10, 0.01)
    assert lo == 0.0 and hi == 1.0  # within the enter epsilon: held, not pushed
    assert sk.calculate_velocity_box_constraint(-0.1, -0.2, 1, 10, 0.01) == (-1.0, 1.0)
    # positional and keyword headroom arguments; the defaults equal omitting them
    args = (0.3, 0.02, 1.0, 0.5, 0.1)
    base = sk.calculate_velocity_box_constraint(*args)
    assert sk.calculate_velocity_box_constraint(*args, -1.0, 0.01) == base
    assert (
        sk.calculate_velocity_box_constraint(
            *args, min_velocity_headroom=-1.0, headroom_activation_margin=0.01
        )
        == base
    )
    # 0.3 rad/s for 0.1 s would carry the joint 1 cm past a limit 2 cm away: EmbodiK
    # allows it, stackik caps the headroom at m / dt (the deliberate difference).
    e_lo, e_hi = ek.calculate_velocity_box_constraint(*args, 0.3)
    s_lo, s_hi = sk.calculate_velocity_box_constraint(*args, 0.3)
    assert s_lo == pytest.approx(e_lo) and e_hi == pytest.approx(0.3)
    assert s_hi == pytest.approx(0.02 / 0.1) and s_hi * 0.1 <= 0.02 + 1e-15
    with pytest.raises(InvalidInput):
        sk.calculate_velocity_box_constraint(0.1, 0.1, 1.0, 10.0, 0.0)


@pytest.mark.parametrize("seed", range(3))
def test_no_step_crosses_a_limit_with_any_headroom(robots, seed):
    """Headroom semantics, in every case: one step at either bound stays inside the limits."""
    _, sr = robots
    sk = KinematicsSolver(sr)
    rng = np.random.default_rng(seed)
    for _ in range(2000):
        span = rng.uniform(0.0, 1.0)
        q = rng.uniform(-0.1, span + 0.1)
        v, a, dt = rng.uniform(0.05, 3.0), rng.uniform(0.1, 50.0), rng.uniform(1e-3, 0.1)
        h, act = rng.uniform(-0.5, 5.0), rng.uniform(0.0, 0.05)
        lo, hi = sk.calculate_velocity_box_constraint(q, span - q, v, a, dt, h, act)
        assert lo <= hi and max(-lo, hi) <= v + 1e-12
        if 0.0 <= q <= span:
            assert -1e-12 <= q + lo * dt and q + hi * dt <= span + 1e-12
            if h > 0 and q > act:  # farther than the margin: at least the headroom
                assert -lo >= min(h, v, q / dt) - 1e-12
            if h > 0 and span - q > act:
                assert hi >= min(h, v, (span - q) / dt) - 1e-12
        elif math.isfinite(q):
            assert (lo >= 0.0) if q < 0.0 else (hi <= 0.0)  # never pushed further out


# -- 5. drop-in: result fields ---------------------------------------------------------------------
READY = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
TIP = "panda_hand_tcp"


def _public(obj) -> set[str]:
    return {n for n in dir(obj) if not n.startswith("_")}


def _jacobian(robot: RobotModel, q: np.ndarray) -> np.ndarray:
    return robot.create_kinematics(q).frame_jacobian(robot.get_frame_id(TIP))


def _both_solves(robots):
    er, sr = robots
    out = []
    for robot, lib in ((er, embodik), (sr, stackik)):
        solver = lib.KinematicsSolver(robot)
        robot.update_kinematics(READY)
        ee = solver.add_frame_task("ee", TIP)
        T = robot.get_frame_pose(TIP)
        ee.set_target_position(np.asarray(T.translation) + np.array([0.1, 0.0, 0.0]))
        vel = solver.solve_velocity(READY, True)
        H = np.asarray(T.homogeneous()) if callable(T.homogeneous) else T.homogeneous
        H = H.copy()
        H[0, 3] += 0.05
        pos = solver.solve_position(READY, H, TIP)
        out.append((vel, pos))
    return out


def test_every_embodik_result_field_exists_with_its_meaning(robots):
    (e_vel, e_pos), (s_vel, s_pos) = _both_solves(robots)
    assert _public(e_vel) <= _public(s_vel), sorted(_public(e_vel) - _public(s_vel))
    assert _public(e_pos) <= _public(s_pos), sorted(_public(e_pos) - _public(s_pos))
    assert _public(e_pos.diagnostics) <= _public(s_pos.diagnostics)
    # the same meaning, where both solvers have the concept
    assert s_vel.joint_velocities is s_vel.solution
    np.testing.assert_array_equal(e_vel.joint_velocities, e_vel.solution)
    # the frame task's orientation target is the pose at the robot's q when it was added
    # (updated after the solver was built), as in EmbodiK: the step is pure translation
    J6 = _jacobian(robots[1], READY)
    np.testing.assert_allclose(J6 @ s_vel.solution, [0.1, 0, 0, 0, 0, 0], atol=1e-9)
    np.testing.assert_allclose(J6 @ e_vel.joint_velocities, [0.1, 0, 0, 0, 0, 0], atol=1e-2)
    assert s_vel.limits_applied is True and s_vel.saturated_joints == []
    assert [m.name for m in s_vel.task_modes_effective] == ["SCALE"]
    assert s_vel.task_used_fallback == [False] and s_vel.weighted_fallback_used is False
    assert s_vel.preferred_lock_attempted is False and np.isnan(s_vel.weighted_advisory_v_norm)
    assert s_vel.recovery_stage.name == e_vel.recovery_stage.name == "PRIORITIZED"
    assert s_vel.solver_computation_time_ms > 0.0
    # final_error: ||J dq - xdot||; the task is met in one step here (xdot reachable)
    assert s_vel.final_error < 1e-9
    sv = np.linalg.svd(J6, compute_uv=False)
    assert s_vel.condition_number == pytest.approx(sv[0] / sv[-1])
    # position IK: the configuration, traces and achieved pose
    # (EmbodiK stops at its 1 mm default tolerance, stackik at 0.01 mm: docs/embodik.md)
    assert e_pos.position_error <= 1e-3 and s_pos.position_error <= 1e-5
    np.testing.assert_allclose(s_pos.q_solution, e_pos.q_solution, atol=5e-3)
    assert s_pos.iterations_used == s_pos.iterations == len(s_pos.position_error_trace) - 1
    assert s_pos.position_error_trace[0] == pytest.approx(e_pos.position_error_trace[0])
    assert s_pos.position_error_trace[-1] == pytest.approx(s_pos.position_error)
    H = robots[1].create_kinematics(s_pos.solution).frame_pose(TIP).homogeneous
    np.testing.assert_allclose(s_pos.achieved_pose, H, atol=1e-12)
    d = s_pos.diagnostics
    assert d.any_intervention is False and d.task_scales == list(s_pos.task_scales)


def test_statuses_enums_and_module_names(robots):
    for enum in ("SolverStatus", "TaskSolveMode", "TaskType", "TaskLayout", "SolverRecoveryStage"):
        mine = getattr(stackik, enum).__members__
        missing = [m for m in getattr(embodik, enum).__members__ if m not in mine]
        assert missing == ([] if enum != "TaskType" else ["CENTROIDAL_MOMENTUM"]), enum
    from stackik.constraints.collision import CollisionTuningMode

    assert list(CollisionTuningMode.__members__) == list(embodik.CollisionTuningMode.__members__)
    S = stackik.SolverStatus
    assert (
        S.NON_FINITE_INPUT is S.INVALID_INPUT and S.CONSTRAINT_BOUNDS_MISMATCH is S.SHAPE_MISMATCH
    )
    assert str(S.COLLISION_VIOLATED) == "COLLISION_VIOLATED"
    assert stackik.MERGED is stackik.TaskLayout.MERGED
    assert stackik.PRIORITIZED is stackik.SolverRecoveryStage.PRIORITIZED
    # pose_error_norm: the same numbers, inf for invalid input
    for a, b in (
        ([1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 7]),
        ([0, 0], [3, 4]),
        ([1, 2], [1]),
        ([], []),
    ):
        assert stackik.pose_error_norm(a, b) == embodik.pose_error_norm(a, b)
    # get_solver_status_hint: a hint per status (EmbodiK's too), the message appended
    for name in embodik.SolverStatus.__members__:
        hint = stackik.get_solver_status_hint(getattr(embodik.SolverStatus, name), "why")
        assert hint.endswith("Details: why") and not hint.startswith("Unknown")
    assert stackik.get_solver_status_hint(S.SUCCESS) == "Solved."
    assert stackik.get_solver_status_hint("NOPE").startswith("Unknown")


def test_every_name_embodik_has_and_stackik_has_not_is_listed_in_the_docs():
    text = (ROOT / "docs" / "embodik.md").read_text()
    missing = sorted(_public(embodik) - set(dir(stackik)))
    undocumented = [n for n in missing if f"`{n}`" not in text]
    assert not undocumented, undocumented
    for enum in ("SolverStatus", "TaskSolveMode", "TaskType"):  # and the enums' members
        extra = set(getattr(embodik, enum).__members__) - set(getattr(stackik, enum).__members__)
        assert all(f"{enum}.{m}" in text for m in extra), (enum, extra)


def test_errors_are_runtime_errors_where_embodik_raises_runtime_error(robots):
    er, sr = robots
    for robot in (er, sr):
        with pytest.raises(RuntimeError):
            robot.get_joint_id("no_such_joint")
        with pytest.raises(RuntimeError):
            robot.get_joint_config_index("no_such_joint")
    with pytest.raises(KeyError):  # stackik keeps its KeyError / ValueError bases
        sr.get_joint_id("no_such_joint")
    assert issubclass(stackik.StackIKError, RuntimeError)
    assert issubclass(stackik.InvalidInput, ValueError)
    assert issubclass(stackik.RobotFileNotFound, FileNotFoundError)

    # every call where EmbodiK raises: stackik's error is an instance of EmbodiK's class
    def calls(lib, robot):
        solver = lib.KinematicsSolver(robot)
        return {
            "add_frame_task": lambda: solver.add_frame_task("x", "nope"),
            "add_joint_task": lambda: solver.add_joint_task("y", "nope"),
            "get_frame_pose": lambda: robot.get_frame_pose("nope"),
            "get_frame_jacobian": lambda: robot.get_frame_jacobian("nope"),
            "update_kinematics": lambda: robot.update_kinematics(np.zeros(3)),
            "RobotModel": lambda: lib.RobotModel("nope.urdf", False),
            "solve_position": lambda: solver.solve_position(READY, np.eye(4), "nope"),
            "set_joint_limits": lambda: robot.set_joint_limits(np.zeros(3), np.zeros(3)),
            "get_joint_velocity_index": lambda: robot.get_joint_velocity_index("nope"),
            "set_target_configuration": lambda: solver.add_posture_task(
                "p"
            ).set_target_configuration(np.zeros(3)),
        }

    expected = {}
    for name, call in calls(embodik, er).items():
        with pytest.raises(Exception) as info:
            call()
        expected[name] = type(info.value)
    assert set(expected.values()) == {RuntimeError, ValueError}
    for name, call in calls(stackik, sr).items():
        with pytest.raises(expected[name]) as info:
            call()
        assert isinstance(info.value, stackik.StackIKError), name


# -- 5. drop-in: tasks ---------------------------------------------------------------------------
def test_task_constructors_adders_and_update_robot(robots):
    er, sr = robots
    for lib, robot in ((embodik, er), (stackik, sr)):
        t = lib.FrameTask("f", robot, TIP, lib.TaskType.FRAME_POSE, 2, 0.5)
        assert (t.priority, t.weight) == (2, 0.5)
        p = lib.PostureTask("p", robot)
        assert (p.priority, p.weight) == (10, pytest.approx(0.1))  # EmbodiK's defaults
        j = lib.JointTask("j", robot, "panda_joint1", 0.3, 1, 2.0)
        assert (j.priority, j.weight) == (1, 2.0)
    solver = KinematicsSolver(sr)
    ee = solver.add_frame_task("ee", TIP, priority=1, weight=3.0)
    post = solver.add_posture_task("post")
    joint = solver.add_joint_task("j", "panda_joint2", 0.1, priority=2)
    assert (ee.priority, ee.weight, post.priority, post.weight) == (1, 3.0, 10, 0.1)
    assert (joint.priority, joint.weight) == (2, 1.0)
    assert (
        solver.add_com_task("c", weight=0.5).weight,
        solver.add_relative_frame_task("r", "panda_link7", TIP, priority=3).priority,
        solver.add_absolute_frame_task("a", "panda_link7", TIP, 0.3, priority=4).priority,
    ) == (0.5, 3, 4)
    # task.update(robot): evaluated at the robot's state, as EmbodiK's
    q = READY + 0.1
    e_solver = embodik.KinematicsSolver(er)
    e_ee = e_solver.add_frame_task("ee", TIP)
    position, rotation = np.array([0.4, 0.1, 0.5]), np.eye(3)
    e_ee.set_target_pose(position, rotation)
    ee.set_target_pose(position, rotation)
    for robot, task in ((er, e_ee), (sr, ee)):
        robot.update_kinematics(q)
        task.update(robot)
    np.testing.assert_allclose(ee.get_error(), e_ee.get_error(), atol=1e-12)
    np.testing.assert_allclose(ee.get_jacobian(), e_ee.get_jacobian(), atol=1e-12)
    assert not np.allclose(solver.kinematics.q, q)  # the solver's own cache was not used


# -- 5. drop-in: utils, SE3 and SO3 ---------------------------------------------------------------
def test_every_utils_name_exists_and_computes_the_same():
    eu = importlib.import_module("embodik.utils")
    su = stackik.utils
    typing_names = {"Any", "Optional", "Tuple", "annotations", "np"}
    assert _public(eu) - typing_names <= _public(su)
    rng = np.random.default_rng(0)
    for _ in range(5):
        w = rng.normal(size=4)
        R = su.q2r(w)
        np.testing.assert_allclose(R, eu.q2r(w), atol=1e-12)
        np.testing.assert_allclose(su.q2r(w, "xyzs"), eu.q2r(w, "xyzs"), atol=1e-12)
        q_e, q_s = eu.r2q(R), su.r2q(R)
        assert np.allclose(q_s, q_e, atol=1e-12) or np.allclose(q_s, -q_e, atol=1e-12)
        t1, t2 = rng.normal(size=3), rng.normal(size=3)
        R2 = su.q2r(rng.normal(size=4))
        A, B = eu.Rt(R, t1), eu.Rt(R2, t2)
        np.testing.assert_allclose(
            su.compute_pose_error(su.Rt(R, t1), su.Rt(R2, t2)), eu.compute_pose_error(A, B)
        )
        np.testing.assert_allclose(
            su.get_pose_error_vector(su.PoseData(R, t1), su.PoseData(R2, t2)),
            eu.get_pose_error_vector(eu.PoseData(R, t1), eu.PoseData(R2, t2)),
        )
        v = rng.normal(size=6)
        np.testing.assert_allclose(
            su.limit_task_velocity(v, 0.2, 0.3), eu.limit_task_velocity(v, 0.2, 0.3)
        )
        np.testing.assert_allclose(su.normalize_quaternion(w), eu.normalize_quaternion(w))
        lo, hi = -np.ones(4), np.ones(4)
        np.testing.assert_allclose(
            su.clamp_configuration(2 * w, lo, hi), eu.clamp_configuration(2 * w, lo, hi)
        )
    np.testing.assert_allclose(su.Rt().homogeneous(), eu.Rt().homogeneous())


def test_se3_and_so3_methods_match_embodik():
    rng = np.random.default_rng(1)
    E, S = embodik, stackik
    assert _public(E.SE3) <= _public(S.SE3)
    assert _public(E.SO3) <= _public(S.SO3) and S.Rotation is S.SO3
    for _ in range(5):
        rv, rpy, t, p = (
            rng.normal(size=3),
            rng.normal(size=3),
            rng.normal(size=3),
            rng.normal(size=3),
        )
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        pairs = [
            (E.SO3.from_rotvec(rv), S.SO3.from_rotvec(rv)),
            (E.SO3.EulerVec(rv), S.SO3.EulerVec(rv)),
            (E.SO3.from_quat(quat), S.SO3.from_quat(quat)),
            (E.SO3.from_euler("xyz", rpy), S.SO3.from_euler("xyz", rpy)),
            (
                E.SO3.from_euler("xyz", np.degrees(rpy), degrees=True),
                S.SO3.from_euler("xyz", np.degrees(rpy), degrees=True),
            ),
            (E.SO3.from_euler("y", rpy[0]), S.SO3.from_euler("y", rpy[0])),
            (E.SO3.Rz(rpy[2]), S.SO3.Rz(rpy[2])),
            (E.SO3.RPY(rpy), S.SO3.RPY(rpy)),
            (E.SO3.AngVec(rpy[0], rv), S.SO3.AngVec(rpy[0], rv)),
            (E.SO3.identity(), S.SO3.identity()),
        ]
        for e_r, s_r in pairs:
            np.testing.assert_allclose(s_r.as_matrix(), e_r.as_matrix(), atol=1e-12)
            np.testing.assert_allclose(s_r.R, e_r.R, atol=1e-12)
            np.testing.assert_allclose(s_r.as_rotvec(), e_r.as_rotvec(), atol=1e-9)
            q_e, q_s = e_r.as_quat(), s_r.as_quat()  # the same rotation; the sign may differ
            assert np.allclose(q_s, q_e, atol=1e-12) or np.allclose(q_s, -q_e, atol=1e-12)
            np.testing.assert_allclose(s_r.apply(p), e_r.apply(p), atol=1e-12)
            np.testing.assert_allclose(s_r.inv().R, e_r.inv().R, atol=1e-12)
            np.testing.assert_allclose((s_r * s_r).R, (e_r * e_r).R, atol=1e-12)
        e_T, s_T = E.SE3(pairs[0][0].R, t), S.SE3(pairs[0][1].R, t)
        for name in ("homogeneous",):
            np.testing.assert_allclose(getattr(s_T, name)(), getattr(e_T, name)(), atol=1e-12)
        np.testing.assert_allclose(s_T.A, e_T.A, atol=1e-12)
        np.testing.assert_allclose(s_T.act(p), e_T.act(p), atol=1e-12)
        np.testing.assert_allclose(s_T.actInv(p), e_T.actInv(p), atol=1e-12)
        np.testing.assert_allclose(s_T.inverse().A, e_T.inverse().A, atol=1e-12)
        np.testing.assert_allclose((s_T * s_T).A, (e_T * e_T).A, atol=1e-12)
        np.testing.assert_allclose(S.SE3.Rt(s_T.R, t).A, E.SE3.Rt(e_T.R, t).A, atol=1e-12)
        # value equality (EmbodiK's SE3 compares by value)
        assert (s_T == S.SE3(s_T.R, t)) and (e_T == E.SE3(e_T.R, t))
        assert s_T != S.SE3(s_T.R, t + 1e-9) and not (e_T == E.SE3(e_T.R, t + 1e-9))
        assert S.SO3.Rx(0.3) == S.SO3.Rx(0.3) and hash(s_T) == hash(S.SE3(s_T.R, t))


def test_from_euler_follows_scipy_for_other_sequences():
    scipy_rotation = pytest.importorskip("scipy.spatial.transform").Rotation
    rng = np.random.default_rng(2)
    for seq in ("zyx", "XYZ", "ZYX", "zx", "YZ", "x"):
        a = rng.normal(size=len(seq))
        np.testing.assert_allclose(
            stackik.SO3.from_euler(seq, a).as_matrix(),
            scipy_rotation.from_euler(seq, a).as_matrix(),
            atol=1e-12,
        )
    with pytest.raises(InvalidInput):
        stackik.SO3.from_euler("xyZ", [0, 0, 0])
    with pytest.raises(InvalidInput):
        stackik.SO3.from_euler("xyz", [0, 0])


def test_top_level_helpers_match_embodik():
    rng = np.random.default_rng(3)
    E, S = embodik, stackik
    for _ in range(3):
        w = rng.normal(size=3)
        R = E.exp3(w)
        np.testing.assert_allclose(S.exp3(w), R, atol=1e-12)
        np.testing.assert_allclose(S.log3(R), E.log3(R), atol=1e-12)
        np.testing.assert_allclose(S.rotation_from_rpy(*w), E.rotation_from_rpy(*w), atol=1e-12)
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        np.testing.assert_allclose(
            S.quaternion_wxyz_to_matrix(*q), E.quaternion_wxyz_to_matrix(*q), atol=1e-12
        )
        np.testing.assert_allclose(
            S.quaternion_xyzw_to_matrix(*q), E.quaternion_xyzw_to_matrix(*q), atol=1e-12
        )
        for got, ref in (
            (S.matrix_to_quaternion_wxyz(R), E.matrix_to_quaternion_wxyz(R)),
            (S.matrix_to_quaternion_xyzw(R), E.matrix_to_quaternion_xyzw(R)),
        ):
            got, ref = np.asarray(got), np.asarray(ref)
            assert np.allclose(got, ref, atol=1e-12) or np.allclose(got, -ref, atol=1e-12)
        A = E.SE3(E.exp3(rng.normal(size=3)), rng.normal(size=3))
        B = E.SE3(E.exp3(rng.normal(size=3)), rng.normal(size=3))
        a, b = S.SE3(A.R, A.t), S.SE3(B.R, B.t)
        np.testing.assert_allclose(
            S.compute_relative_frame(a, b).A, E.compute_relative_frame(A, B).A, atol=1e-12
        )
        for alpha in (0.0, 0.3, 1.0):
            np.testing.assert_allclose(
                S.compute_absolute_frame(a, b, alpha).A,
                E.compute_absolute_frame(A, B, alpha).A,
                atol=1e-12,
            )
        J = rng.normal(size=(3, 5))
        assert S.velocity_manipulability(J) == pytest.approx(E.velocity_manipulability(J))
