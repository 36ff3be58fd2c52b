"""Small scripts written against EmbodiK's API (seed 004), as a porting user writes them.

Each snippet is plain EmbodiK code: it imports ``embodik`` and nothing of stackik. The
runner (:func:`run`) executes it with ``import embodik`` replaced by the library under
test, ``import stackik as embodik``: the only change a port makes. A snippet passes when
it runs to its end (its own ``assert`` lines check the behaviour it relies on).

``python tests/embodik_snippets.py`` prints the pass table of both libraries.
"""

from __future__ import annotations

import importlib.util
import textwrap
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATHS = {
    "PANDA": str(ROOT / "robots" / "panda" / "panda.urdf"),
    "PANDA_SRDF": str(ROOT / "robots" / "panda" / "panda.srdf"),
    "GRIPPER": str(ROOT / "tests" / "data" / "gripper.urdf"),
}

#: Shared prelude: the robot and a configuration most snippets start from.
PRELUDE = """
import numpy as np
import embodik

robot = embodik.RobotModel(PANDA, False)
q0 = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
TIP = "panda_hand_tcp"
"""

SNIPPETS: dict[str, str] = {}


def snippet(name: str, code: str) -> None:
    SNIPPETS[name] = textwrap.dedent(code)


# -- RobotModel ---------------------------------------------------------------------------------
snippet(
    "model_sizes_and_names",
    """
    assert robot.nq == 7 and robot.nv == 7 and not robot.is_floating_base
    names = robot.get_joint_names()
    assert "panda_joint1" in names and robot.has_joint("panda_joint4")
    assert robot.has_frame(TIP) and TIP in robot.get_frame_names()
    assert robot.get_joint_config_index("panda_joint3") == 2
    assert robot.get_joint_velocity_index("panda_joint3") == 2
    assert robot.get_joint_config_size("panda_joint3") == 1
    assert robot.get_joint_velocity_size("panda_joint3") == 1
    """,
)
snippet(
    "frame_pose_after_update",
    """
    robot.update_configuration(q0)
    T = robot.get_frame_pose(TIP)
    p = np.asarray(T.translation)
    R = np.asarray(T.rotation)
    assert p.shape == (3,) and R.shape == (3, 3)
    assert np.allclose(R @ R.T, np.eye(3), atol=1e-9)
    assert np.allclose(robot.get_current_configuration(), q0)
    """,
)
snippet(
    "frame_jacobian_matches_finite_differences",
    """
    robot.update_kinematics(q0)
    J = robot.get_frame_jacobian(TIP)
    p0 = np.asarray(robot.get_frame_pose(TIP).translation).copy()
    eps = 1e-6
    for i in range(7):
        dq = np.zeros(7)
        dq[i] = eps
        robot.update_kinematics(q0 + dq)
        p1 = np.asarray(robot.get_frame_pose(TIP).translation)
        assert np.allclose((p1 - p0) / eps, J[:3, i], atol=1e-4)
    """,
)
snippet(
    "configurations_and_lie_group",
    """
    lo, hi = robot.get_joint_limits()
    q = robot.random_configuration()
    assert np.all(q >= lo) and np.all(q <= hi)
    n = robot.neutral_configuration()
    assert n.shape == (7,)
    v = robot.difference(q0, q)
    assert np.allclose(robot.integrate(q0, v, 1.0), q, atol=1e-12)
    assert np.allclose(robot.integrate(q0, v, 0.5), q0 + 0.5 * v, atol=1e-12)
    assert np.allclose(robot.normalize(q), q)
    """,
)
snippet(
    "limits",
    """
    lo, hi = robot.get_joint_limits()
    assert lo.shape == hi.shape == (7,) and np.all(lo < hi)
    assert robot.get_velocity_limits().shape == (7,)
    assert robot.get_effort_limits().shape == (7,)
    acc = robot.get_acceleration_limits()
    robot.set_acceleration_limits(acc * 2.0)
    assert np.allclose(robot.get_acceleration_limits(), acc * 2.0)
    robot.set_acceleration_limits(acc)
    """,
)
snippet(
    "dynamics",
    """
    M = robot.compute_mass_matrix(q0)
    assert np.allclose(M, M.T) and np.all(np.linalg.eigvalsh(M) > 0)
    g = robot.compute_generalized_gravity(q0)
    assert np.allclose(robot.rnea(q0, np.zeros(7), np.zeros(7)), g)
    c = robot.compute_coriolis(q0, np.zeros(7))
    assert np.allclose(c, 0.0)
    assert np.allclose(robot.get_gravity(), [0, 0, -9.81])
    """,
)
snippet(
    "center_of_mass",
    """
    robot.update_kinematics(q0)
    com = robot.get_com_position()
    Jc = robot.get_com_jacobian()
    assert com.shape == (3,) and Jc.shape == (3, 7)
    """,
)
snippet(
    "collision_queries",
    """
    robot.update_kinematics(q0)
    assert robot.has_collision_geometry()
    pairs = robot.get_collision_pair_names()
    d = robot.compute_collision_distances()
    assert len(d) == len(pairs) > 0
    assert robot.compute_min_collision_distance() == min(d)
    assert robot.check_collision(min_distance=10.0)
    """,
)
snippet(
    "mimic_joints_keep_pinocchio_layout",
    """
    gripper = embodik.RobotModel(GRIPPER, False)
    assert gripper.nq == 10 and gripper.nv == 10  # pin.buildModelFromUrdf's layout
    q = gripper.neutral_configuration()
    gripper.update_kinematics(q)
    assert np.asarray(gripper.get_frame_pose("tcp").translation).shape == (3,)
    """,
)

# -- velocity IK --------------------------------------------------------------------------------
snippet(
    "frame_task_velocity_loop",
    """
    robot.update_configuration(q0)
    solver = embodik.KinematicsSolver(robot)
    solver.dt = 0.01
    ee = solver.add_frame_task("ee", TIP)
    start = robot.get_frame_pose(TIP)
    target = np.asarray(start.translation) + np.array([0.05, -0.03, 0.04])
    ee.set_target_pose(target, np.asarray(start.rotation))
    q = q0.copy()
    for _ in range(600):
        result = solver.solve_velocity(q, True)
        assert result.status == embodik.SolverStatus.SUCCESS
        q = robot.integrate(q, result.joint_velocities, solver.dt)
    robot.update_configuration(q)
    assert np.linalg.norm(np.asarray(robot.get_frame_pose(TIP).translation) - target) < 1e-3
    """,
)
snippet(
    "position_task_with_posture",
    """
    robot.update_configuration(q0)
    solver = embodik.KinematicsSolver(robot)
    ee = solver.add_frame_task("ee", TIP, embodik.TaskType.FRAME_POSITION)
    posture = solver.add_posture_task("posture")
    assert posture.priority > ee.priority  # the posture acts in the frame task's null space
    posture.set_target_configuration(q0)
    target = np.asarray(robot.get_frame_pose(TIP).translation) + np.array([0.0, 0.05, 0.0])
    ee.set_target_position(target)
    q = q0.copy()
    for _ in range(600):
        dq = solver.solve_velocity_dq(q, True)
        q = robot.integrate(q, dq, solver.dt)
    robot.update_configuration(q)
    assert np.linalg.norm(np.asarray(robot.get_frame_pose(TIP).translation) - target) < 1e-3
    """,
)
snippet(
    "joint_task_and_task_registry",
    """
    solver = embodik.KinematicsSolver(robot)
    j = solver.add_joint_task("j1", "panda_joint1", 0.3)
    j.priority = 0
    q = q0.copy()
    for _ in range(800):
        q = robot.integrate(q, solver.solve_velocity(q).joint_velocities, solver.dt)
    assert abs(q[0] - 0.3) < 1e-3
    assert [t.name for t in solver.tasks] == ["j1"]
    assert solver.get_task("j1").name == "j1"
    solver.remove_task("j1")
    assert len(solver.tasks) == 0
    solver.add_com_task("com")
    solver.clear_tasks()
    assert len(solver.tasks) == 0
    """,
)
snippet(
    "masks_modes_and_weights",
    """
    solver = embodik.KinematicsSolver(robot)
    robot.update_configuration(q0)
    ee = solver.add_frame_task("ee", TIP)
    ee.set_position_mask(np.array([1.0, 1.0, 0.0]))
    ee.set_orientation_mask(np.array([0.0, 0.0, 0.0]))
    ee.weight = 2.0
    ee.solve_mode = embodik.TaskSolveMode.MIN_ERROR
    result = solver.solve_velocity(q0)
    assert result.status == embodik.SolverStatus.SUCCESS
    assert len(result.task_scales) == 1
    """,
)
snippet(
    "relative_and_absolute_frame_tasks",
    """
    robot.update_configuration(q0)
    solver = embodik.KinematicsSolver(robot)
    rel = solver.add_relative_frame_task("rel", "panda_link7", TIP)
    absolute = solver.add_absolute_frame_task("abs", "panda_link7", TIP, 0.5)
    absolute.priority = 1
    result = solver.solve_velocity(q0)
    assert result.status == embodik.SolverStatus.SUCCESS
    assert rel.get_dimension() == 6 and absolute.get_dimension() == 6
    """,
)
snippet(
    "task_update_and_error",
    """
    solver = embodik.KinematicsSolver(robot)
    ee = solver.add_frame_task("ee", TIP)
    robot.update_kinematics(q0)
    T = robot.get_frame_pose(TIP)
    p = np.asarray(T.translation) + np.array([0.1, 0.0, 0.0])
    ee.set_target_pose(p, np.asarray(T.rotation))
    ee.update(robot)
    e = ee.get_error()
    assert np.allclose(e[:3], [0.1, 0.0, 0.0], atol=1e-9) and np.allclose(e[3:], 0.0, atol=1e-9)
    assert ee.get_jacobian().shape == (6, 7)
    """,
)
snippet(
    "solver_settings",
    """
    solver = embodik.KinematicsSolver(robot)
    assert solver.dt == 0.01
    solver.set_damping(1e-3)
    solver.set_tolerance(1e-6)
    solver.set_max_iterations(30)
    solver.enable_position_limits(True)
    solver.enable_velocity_limits(True)
    solver.add_frame_task("ee", TIP)
    assert solver.solve_velocity(q0).status == embodik.SolverStatus.SUCCESS
    """,
)
snippet(
    "velocity_box_helper",
    """
    solver = embodik.KinematicsSolver(robot)
    lower, upper = solver.calculate_velocity_box_constraint(0.5, 0.5, 2.0, 10.0, 0.01)
    assert (lower, upper) == (-2.0, 2.0)
    lower, upper = solver.calculate_velocity_box_constraint(0.001, 0.5, 2.0, 10.0, 0.01)
    assert abs(lower + 0.1) < 1e-12  # 1 mm from the limit: 0.1 rad/s at most
    solver.set_limit_recovery_gain(0.5)
    lower, _ = solver.calculate_velocity_box_constraint(-0.0011, 0.5, 1.0, 10.0, 0.01)
    assert abs(lower - 0.055) < 1e-12
    lower, upper = solver.calculate_velocity_box_constraint(0.3, 0.5, 1.0, 0.5, 0.1, 0.6)
    assert abs(lower + 0.6) < 1e-12  # the headroom, beyond its 0.01 activation margin
    """,
)
snippet(
    "joint_limits_hold_in_a_long_loop",
    """
    solver = embodik.KinematicsSolver(robot)
    robot.update_configuration(q0)
    ee = solver.add_frame_task("ee", TIP, embodik.TaskType.FRAME_POSITION)
    ee.set_target_position(np.array([1.5, 0.0, 0.2]))  # out of reach
    lo, hi = robot.get_joint_limits()
    q = q0.copy()
    for _ in range(500):
        q = robot.integrate(q, solver.solve_velocity(q, True).joint_velocities, solver.dt)
        assert np.all(q >= lo - 1e-6) and np.all(q <= hi + 1e-6)
    """,
)
snippet(
    "linear_velocity_constraints",
    """
    solver = embodik.KinematicsSolver(robot)
    solver.add_joint_task("j", "panda_joint2", 1.0)
    C = np.zeros((1, 7))
    C[0, 1] = 1.0
    solver.set_linear_velocity_constraints(C, np.array([-0.2]), np.array([0.2]))
    assert solver.get_linear_velocity_constraint_rows() == 1
    dq = solver.solve_velocity(q0).joint_velocities
    assert dq[1] <= 0.2 + 1e-9
    solver.clear_linear_velocity_constraints()
    assert solver.get_linear_velocity_constraint_rows() == 0
    """,
)
snippet(
    "tight_point_constraint",
    """
    robot.update_configuration(q0)
    solver = embodik.KinematicsSolver(robot)
    p = np.asarray(robot.get_frame_pose(TIP).translation).copy()
    solver.add_tight_point_constraint(TIP, p, 1e-4)
    solver.add_posture_task("posture").set_target_configuration(q0 + 0.3)
    q = q0.copy()
    for _ in range(50):
        q = robot.integrate(q, solver.solve_velocity(q).joint_velocities, solver.dt)
    robot.update_configuration(q)
    assert np.linalg.norm(np.asarray(robot.get_frame_pose(TIP).translation) - p) < 1e-3
    solver.clear_tight_point_constraints()
    """,
)
snippet(
    "stall_handler_and_elastic_band_api",
    """
    robot.update_configuration(q0)
    solver = embodik.KinematicsSolver(robot)
    solver.configure_stall_handler(5, 0.005, 0.3)
    solver.enable_stall_handler(0.02)
    assert solver.stall_handler_enabled() and not solver.stall_handler_is_relaxed()
    assert solver.stall_handler_consecutive_stall_steps() == 0
    solver.disable_stall_handler()
    assert not solver.stall_handler_enabled()
    solver.enable_elastic_band(0.05)
    solver.configure_elastic_band(0.05, 0.01, 0.2, 3, True)
    assert solver.elastic_band_enabled() and not solver.elastic_band_is_expanded()
    assert solver.elastic_band_deltas().shape == (7,)
    assert solver.elastic_band_max_delta() == 0.0
    solver.disable_elastic_band()
    assert not solver.elastic_band_enabled()
    """,
)
snippet(
    "elastic_band_gets_through_a_limit_stall",
    """
    solver = embodik.KinematicsSolver(robot)
    lo, hi = robot.get_joint_limits()
    solver.add_joint_task("j4", "panda_joint4", hi[3] + 0.2)
    solver.enable_elastic_band(0.05)
    q = q0.copy()
    q[3] = hi[3] - 0.05
    for _ in range(150):
        result = solver.solve_velocity(q, True)
        q = q + np.asarray(result.joint_velocities) * solver.dt
    assert q[3] > hi[3] + 0.01  # past the stall, within delta_max
    assert q[3] <= hi[3] + 0.05 + 1e-9
    """,
)
snippet(
    "collision_constraint_keeps_distance",
    """
    robot = embodik.RobotModel(PANDA, False)
    robot.update_configuration(q0)
    solver = embodik.KinematicsSolver(robot)
    solver.configure_collision_constraint(0.02, [("panda_hand_0", "panda_link0_0")])
    assert solver.get_collision_min_distance() == 0.02
    d = solver.evaluate_min_collision_distance(q0)
    assert d is not None and d > 0.02
    solver.clear_collision_constraint()
    assert solver.get_collision_min_distance() == -1
    """,
)
snippet(
    "com_and_relative_pose_constraints",
    """
    solver = embodik.KinematicsSolver(robot)
    square = np.array([[-1.0, -1.0], [1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]])
    solver.configure_com_constraint(square, 0.0)
    solver.configure_relative_pose_constraint(
        "panda_link0", TIP, np.full(6, -10.0), np.full(6, 10.0)
    )
    solver.add_frame_task("ee", TIP)
    assert solver.solve_velocity(q0).status == embodik.SolverStatus.SUCCESS
    solver.clear_com_constraint()
    solver.clear_relative_pose_constraint()
    """,
)

# -- position IK --------------------------------------------------------------------------------
snippet(
    "solve_position_reaches_a_pose",
    """
    solver = embodik.KinematicsSolver(robot)
    robot.update_configuration(q0)
    T = robot.get_frame_pose(TIP).homogeneous()
    T[:3, 3] += np.array([0.03, 0.02, -0.02])
    options = embodik.PositionIKOptions()
    options.max_iterations = 200
    result = solver.solve_position(q0, T, TIP, options)
    assert result.status == embodik.SolverStatus.SUCCESS
    robot.update_configuration(result.q_solution)
    assert np.linalg.norm(np.asarray(robot.get_frame_pose(TIP).translation) - T[:3, 3]) < 2e-3
    assert result.position_error < 2e-3 and result.iterations_used > 0
    assert np.allclose(result.achieved_pose[:3, 3], T[:3, 3], atol=2e-3)
    """,
)
snippet(
    "solve_position_in_tcp",
    """
    solver = embodik.KinematicsSolver(robot)
    step = np.eye(4)
    step[2, 3] = 0.02  # 2 cm along the tool's own z axis
    result = solver.solve_position_in_tcp(q0, step, TIP)
    assert result.status == embodik.SolverStatus.SUCCESS
    robot.update_configuration(q0)
    T0 = robot.get_frame_pose(TIP)
    robot.update_configuration(result.q_solution)
    T1 = robot.get_frame_pose(TIP)
    moved = np.asarray(T1.translation) - np.asarray(T0.translation)
    assert np.allclose(moved, 0.02 * np.asarray(T0.rotation)[:, 2], atol=2e-3)
    """,
)
snippet(
    "solve_position_step_teleop",
    """
    solver = embodik.KinematicsSolver(robot)
    robot.update_configuration(q0)
    ee = solver.add_frame_task("ee", TIP)
    T = robot.get_frame_pose(TIP).homogeneous()
    T[:3, 3] += np.array([0.02, 0.0, 0.0])
    options = embodik.PositionStepOptions()
    options.max_steps = 50
    q = q0.copy()
    result = solver.solve_position_step(q, T, "ee", options)
    assert result.status == embodik.SolverStatus.SUCCESS
    robot.update_configuration(result.q_solution)
    left = np.linalg.norm(np.asarray(robot.get_frame_pose(TIP).translation) - T[:3, 3])
    assert left < 0.8 * 0.02  # 50 steps of 10 ms closed part of the 2 cm
    """,
)
snippet(
    "results_fields",
    """
    solver = embodik.KinematicsSolver(robot)
    solver.add_frame_task("ee", TIP)
    r = solver.solve_velocity(q0, True)
    assert r.joint_velocities.shape == (7,) and len(r.solution) == 7
    assert r.limits_applied and r.computation_time_ms >= 0.0
    assert len(r.task_scales) == len(r.task_errors) == len(r.task_modes_effective) == 1
    assert r.status_message is not None and r.saturated_joints == []
    assert r.weighted_fallback_used is False and r.preferred_lock_used is False
    assert r.recovery_stage == embodik.SolverRecoveryStage.PRIORITIZED
    """,
)

# -- helpers ------------------------------------------------------------------------------------
snippet(
    "utils_helpers",
    """
    from embodik.utils import Rt, compute_pose_error, limit_task_velocity, q2r, r2q

    R = q2r(np.array([1.0, 0.0, 0.0, 0.0]))
    assert np.allclose(R, np.eye(3))
    assert np.allclose(r2q(np.eye(3), order="xyzs"), [0, 0, 0, 1])
    T1 = Rt(t=np.array([1.0, 2.0, 3.0]))
    T2 = Rt(R=np.eye(3), t=np.array([1.0, 2.5, 3.0]))
    assert np.allclose(T1.homogeneous()[:3, 3], [1, 2, 3])
    assert np.allclose(compute_pose_error(T1, T2), [0, 0.5, 0, 0, 0, 0])
    v = limit_task_velocity(np.array([1.0, 0, 0, 0, 0, 2.0]), 0.1, 0.2)
    assert np.allclose(v, [0.1, 0, 0, 0, 0, 0.2])
    """,
)
snippet(
    "rotations_scipy_style",
    """
    from embodik import SO3, Rotation

    R = Rotation.from_euler("xyz", [0.1, 0.2, 0.3])
    assert np.allclose(R.as_matrix(), SO3.RPY([0.1, 0.2, 0.3]).R)
    q = R.as_quat()
    assert np.allclose(Rotation.from_quat(q).as_matrix(), R.as_matrix())
    assert np.allclose(Rotation.from_rotvec(R.as_rotvec()).as_matrix(), R.as_matrix())
    assert np.allclose(R.apply([1.0, 0.0, 0.0]), R.as_matrix()[:, 0])
    assert np.allclose((R * R.inv()).as_matrix(), np.eye(3))
    assert np.allclose(SO3.Rz(np.pi / 2).apply([1.0, 0.0, 0.0]), [0.0, 1.0, 0.0])
    assert np.allclose(Rotation.identity().as_matrix(), np.eye(3))
    """,
)
snippet(
    "se3_algebra",
    """
    T = embodik.SE3(embodik.exp3(np.array([0.0, 0.0, 0.5])), np.array([0.1, 0.2, 0.3]))
    U = T * T.inverse()
    assert np.allclose(U.homogeneous(), np.eye(4))
    p = T.act(np.array([1.0, 0.0, 0.0]))
    assert np.allclose(T.actInv(p), [1.0, 0.0, 0.0])
    assert np.allclose(T.A, T.homogeneous()) and np.allclose(T.t, T.translation)
    assert T == embodik.SE3(T.R, T.t)
    """,
)
snippet(
    "status_hints_and_norms",
    """
    hint = embodik.get_solver_status_hint(embodik.SolverStatus.NO_PROGRESS, "stuck")
    assert "stuck" in hint
    assert embodik.pose_error_norm([0.0, 0.0, 0.0], [3.0, 4.0, 0.0]) == 5.0
    assert embodik.pose_error_norm([0.0], [1.0, 2.0]) == float("inf")
    assert embodik.SolverStatus.COLLISION_VIOLATED != embodik.SolverStatus.SUCCESS
    assert embodik.TaskSolveMode.SCALE_ELASTIC != embodik.TaskSolveMode.SCALE
    """,
)
snippet(
    "errors_are_runtime_errors",
    """
    try:
        robot.get_frame_pose("no_such_frame")
    except RuntimeError as exc:
        assert "no_such_frame" in str(exc)
    else:
        raise AssertionError("no error")
    try:
        embodik.KinematicsSolver(robot).add_frame_task("x", "no_such_frame")
    except ValueError:
        pass
    else:
        raise AssertionError("no error")
    """,
)

# -- known behavioural differences (docs/embodik.md) --------------------------------------------
snippet(
    "solver_moves_the_robot",
    """
    robot.update_configuration(q0)
    solver = embodik.KinematicsSolver(robot)
    ee = solver.add_frame_task("ee", TIP)
    q1 = q0 + 0.1
    solver.solve_velocity(q1, True)  # EmbodiK evaluates at q1 on the robot itself
    assert np.allclose(robot.get_current_configuration(), q1)
    """,
)
snippet(
    "get_task_of_an_unknown_name_is_none",
    """
    solver = embodik.KinematicsSolver(robot)
    assert solver.get_task("missing") is None
    """,
)

#: Snippets that pass on EmbodiK 0.23.2 and deliberately not on stackik, with the reason
#: (each is a migration note in docs/embodik.md).
KNOWN_DIFFERENCES = {
    "solver_moves_the_robot": (
        "a solver owns its kinematics: solve_velocity(q) does not update the robot's own "
        "state (robot.update_configuration(q) is the one-line change)"
    ),
    "get_task_of_an_unknown_name_is_none": (
        "an unknown task name raises TaskNotFound (a KeyError, ValueError and RuntimeError) "
        "instead of returning None"
    ),
}


def run(module: str, name: str) -> tuple[bool, str]:
    """Run one snippet with ``module`` imported as ``embodik``: (passed, error)."""
    code = PRELUDE + SNIPPETS[name]
    if module != "embodik":
        code = code.replace("import embodik\n", f"import {module} as embodik\n")
        code = code.replace("from embodik.", f"from {module}.").replace(
            "from embodik import", f"from {module} import"
        )
    space: dict = dict(PATHS)
    try:
        exec(compile(code, f"<snippet {name} on {module}>", "exec"), space)
    except Exception as exc:  # a failing snippet is a result, not an error of the runner
        return False, f"{type(exc).__name__}: {exc}".splitlines()[0]
    return True, ""


def table(modules: tuple[str, ...] = ("embodik", "stackik")) -> dict[str, dict[str, tuple]]:
    """Every snippet's (passed, error) per installed module."""
    present = [m for m in modules if importlib.util.find_spec(m) is not None]
    return {m: {name: run(m, name) for name in SNIPPETS} for m in present}


if __name__ == "__main__":  # pragma: no cover - a report for humans
    results = table()
    for name in SNIPPETS:
        row = "  ".join(
            f"{m}: {'pass' if results[m][name][0] else 'FAIL ' + results[m][name][1]}"
            for m in results
        )
        print(f"{name:45s} {row}")
    if "embodik" in results and "stackik" in results:
        ok = [n for n in SNIPPETS if results["embodik"][n][0]]
        both = [n for n in ok if results["stackik"][n][0]]
        print(f"pass rate on stackik of what passes on EmbodiK: {len(both)}/{len(ok)}")
    del traceback
