"""The input rules of the public API: no silent coercion, the 1e6 rule, typed errors.

- The hot path (``solve_velocity``, ``solve_velocity_dq``, ``solve_position_step``)
  returns ``INVALID_INPUT`` and never raises, as the docs say.
- A boolean setting is ``True``/``False`` (or 1/0): a string, NaN, None or a list is
  refused instead of read as True. Every bool-annotated parameter of the public API
  has a case below (a new one fails ``test_every_boolean_parameter_has_a_case``).
- A boolean array is not an array of numbers.
- Targets, tight points, activation multipliers and separation speeds obey the
  magnitude rule (finite, at most 1e6); names are non-empty strings; an empty axis
  mask is refused.
- Loading arguments of the wrong type raise ``InvalidInput``.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import stackik
from stackik import (
    BatchIKOptions,
    ControlLoop,
    JointMotionLimiter,
    KinematicsSolver,
    PositionIKOptions,
    PositionStepOptions,
    RobotModel,
    SolverStatus,
    StackIKError,
)
from stackik.constraints import TightFramePoseConstraint, TightPointConstraint
from stackik.errors import InvalidInput
from stackik.sns import SNSSolver

ROOT = Path(__file__).resolve().parents[1]
ROBOTS = ROOT / "robots"
ARM = Path(__file__).resolve().parent / "data" / "arm.urdf"
MESH = Path(__file__).resolve().parent / "data" / "mypkg" / "meshes" / "cube.obj"
READY = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
TIP = "panda_hand_tcp"

#: Values a plain ``bool()`` reads as True (or False) without complaint.
NOT_FLAGS = ["false", "", np.nan, 2, 0.5, None, [True], np.array([1])]
FLAGS = [True, False, np.True_, np.False_, 1, 0]


@pytest.fixture(scope="module")
def panda() -> RobotModel:
    return RobotModel(ROBOTS / "panda" / "panda.urdf", srdf_path=ROBOTS / "panda" / "panda.srdf")


@pytest.fixture
def solver(panda) -> KinematicsSolver:
    panda.update_kinematics(READY)
    s = KinematicsSolver(panda, dt=0.01)
    s.add_frame_task("ee", TIP)
    s.add_posture_task("posture").priority = 1
    return s


def far_target(panda: RobotModel) -> np.ndarray:
    """The tool's pose at READY (Pinocchio directly), moved by 5 cm per axis."""
    data = pin.Data(panda.model)
    pin.framesForwardKinematics(panda.model, data, READY)
    T = data.oMf[panda.model.getFrameId(TIP)].homogeneous.copy()
    T[:3, 3] += [0.05, -0.05, 0.05]
    return T


# -- point 2: the hot path never raises ------------------------------------------------------
def hot_path_names() -> list[str]:
    """The calls docs/reliability.md names as the hot path."""
    text = (ROOT / "docs" / "reliability.md").read_text()
    line = re.search(r"\*\*The hot path\*\* \(([^)]*)\)", text)
    assert line, "docs/reliability.md no longer states the hot path"
    return re.findall(r"`(\w+)`", line.group(1))


def test_the_documented_hot_path_returns_statuses_for_a_nan_configuration(solver, panda):
    names = hot_path_names()
    assert {"solve_velocity", "solve_velocity_dq", "solve_position_step"} <= set(names)
    q_nan = np.full(7, np.nan)
    calls = {
        "solve_velocity": lambda: solver.solve_velocity(q_nan),
        "solve_velocity_dq": lambda: solver.solve_velocity_dq(q_nan),
        "solve_position_step": lambda: solver.solve_position_step(q_nan, far_target(panda), "ee"),
    }
    for name in names:
        out = calls[name]()  # raises nothing
        if name == "solve_velocity_dq":
            np.testing.assert_array_equal(out, np.zeros(7))
        else:
            assert out.status == SolverStatus.INVALID_INPUT
            assert "NaN" in out.status_message


def test_position_step_with_a_nan_configuration_returns_invalid_input(solver, panda):
    before = solver.kinematics.q.copy()
    result = solver.solve_position_step(np.full(7, np.nan), far_target(panda), "ee")
    assert result.status == SolverStatus.INVALID_INPUT
    assert result.iterations == 0
    assert "NaN" in result.status_message and "q" in result.status_message
    np.testing.assert_array_equal(result.solution, before)  # the solver's configuration
    np.testing.assert_array_equal(solver.kinematics.q, before)  # untouched


@pytest.mark.parametrize(
    "call",
    [
        lambda s, T: s.solve_position_step(READY[:5], T, "ee"),
        lambda s, T: s.solve_position_step(np.full(7, np.inf), T, "ee"),
        lambda s, T: s.solve_position_step(np.ones(7, bool), T, "ee"),
        lambda s, T: s.solve_position_step(READY, np.where(np.eye(4) > 0, np.nan, T), "ee"),
        lambda s, T: s.solve_position_step(READY, np.eye(4, dtype=bool), "ee"),
        lambda s, T: s.solve_position_step(READY, T, "missing"),
        lambda s, T: s.solve_position_step(READY, T, 5),
        lambda s, T: s.solve_position_step(READY, T, "ee", "options"),
        lambda s, T: s.solve_position_step(READY, T, "ee", PositionStepOptions(max_steps=-1)),
        lambda s, T: s.solve_position_step(
            READY, T, "ee", PositionStepOptions(velocity_limits="false")
        ),
        lambda s, T: s.solve_position_step(READY, T, "ee", PositionStepOptions(record_path=None)),
    ],
    ids=[
        "short q",
        "inf q",
        "bool q",
        "nan pose",
        "bool pose",
        "unknown task",
        "task not a name",
        "options not options",
        "bad max_steps",
        "velocity_limits string",
        "record_path None",
    ],
)
def test_position_step_refuses_bad_input_with_a_status(solver, panda, call):
    T = far_target(panda)
    saved = solver.get_task("ee").target_pose
    result = call(solver, T)
    assert result.status == SolverStatus.INVALID_INPUT
    assert result.status_message
    assert np.all(np.isfinite(result.solution))
    # Nothing was changed: the task target is the one before, the next step matches a
    # fresh solver's bit for bit.
    np.testing.assert_array_equal(solver.get_task("ee").target_pose.homogeneous, saved.homogeneous)
    fresh = KinematicsSolver(solver.robot, dt=0.01)
    fresh.add_frame_task("ee", TIP)
    fresh.add_posture_task("posture").priority = 1
    a = solver.solve_position_step(READY, T, "ee")
    b = fresh.solve_position_step(READY, T, "ee")
    assert a.status == b.status == SolverStatus.SUCCESS
    np.testing.assert_array_equal(a.solution, b.solution)


def test_position_step_docstring_promises_no_exception():
    doc = inspect.getdoc(KinematicsSolver.solve_position_step)
    assert "Raises:" not in doc
    assert "never raises" in doc and "INVALID_INPUT" in doc


# -- point 4: no silent coercion ---------------------------------------------------------------
def _limits(robot: RobotModel) -> stackik.MotionLimits:
    return stackik.MotionLimits(
        tuple(stackik.control.limits.coordinate_names(robot)),
        robot.get_velocity_limits(),
        robot.get_acceleration_limits(),
        np.full(robot.nv, 500.0),
    )


def _collision(s: KinematicsSolver) -> KinematicsSolver:
    s.configure_collision_constraint(0.01)
    return s


def _status(result: object) -> None:
    """A hot-path call: refusal is a status, not an exception (re-raised for the test)."""
    assert result.status == SolverStatus.INVALID_INPUT, result
    raise InvalidInput(result.status_message)


def _dq(s: KinematicsSolver, **flag: object) -> None:
    """solve_velocity_dq refuses with zeros where a valid call moves; solve_velocity says why."""
    s.get_task("ee").set_target_pose(far_target(s.robot))
    assert s.solve_velocity_dq(READY).any()
    assert not s.solve_velocity_dq(READY, **flag).any()
    _status(s.solve_velocity(READY, **flag))


#: A valid joint-callback input.
CALLBACK = {
    "pos": 0,
    "vel": 0,
    "targetPos": 1,
    "maxVel": 1,
    "maxAccel": 1,
    "maxJerk": 1,
    "dt": 0.01,
}

#: ``"Owner.parameter"`` -> a call with the value ``b`` for that parameter.
CASES = {
    "BatchIKOptions.repair_invalid": lambda s, b: s.solve_position_batch(
        far_target(s.robot)[None], TIP, options=BatchIKOptions(repair_invalid=b)
    ),
    "ControlLoop.anticipate": lambda s, b: ControlLoop(
        s, READY, 100.0, JointMotionLimiter(s.robot, 0.01, max_jerk=500.0), anticipate=b
    ),
    "ControlLoop.start.warm": lambda s, b: _start_and_stop(s, b),
    "JointMotionLimiter.synchronize": lambda s, b: JointMotionLimiter(
        s.robot, 0.01, max_jerk=500.0, synchronize=b
    ),
    "JointMotionLimiter.from_limits.synchronize": lambda s, b: JointMotionLimiter.from_limits(
        s.robot, 0.01, _limits(s.robot), synchronize=b
    ),
    "KinematicsSolver.enable_position_limits.enable": lambda s, b: s.enable_position_limits(b),
    "KinematicsSolver.enable_velocity_limits.enable": lambda s, b: s.enable_velocity_limits(b),
    "KinematicsSolver.enable_timing_breakdown.enable": lambda s, b: s.enable_timing_breakdown(b),
    "KinematicsSolver.add_constraint.replace": lambda s, b: s.add_constraint(
        TightPointConstraint("tp", s.kinematics, TIP, [0.3, 0.0, 0.5]), replace=b
    ),
    "KinematicsSolver.configure_collision_constraint.nearest_points_all_pairs": (
        lambda s, b: s.configure_collision_constraint(0.01, nearest_points_all_pairs=b)
    ),
    "KinematicsSolver.set_collision_pair_min_distance.activate_when_clear": (
        lambda s, b: _collision(s).set_collision_pair_min_distance(
            "panda_link1", "panda_link5", 0.02, activate_when_clear=b
        )
    ),
    "KinematicsSolver.configure_com_constraint.use_acceleration_limits": (
        lambda s, b: s.configure_com_constraint(
            [[-1, -1], [1, -1], [1, 1], [-1, 1]], use_acceleration_limits=b
        )
    ),
    "KinematicsSolver.build_problem.apply_limits": lambda s, b: s.build_problem(READY, b),
    "KinematicsSolver.build_problem.advance": lambda s, b: s.build_problem(READY, advance=b),
    "KinematicsSolver.solve_velocity.apply_limits": lambda s, b: _status(
        s.solve_velocity(READY, apply_limits=b)
    ),
    "KinematicsSolver.solve_velocity.stall_recovery": lambda s, b: _status(
        s.solve_velocity(READY, stall_recovery=b)
    ),
    "KinematicsSolver.solve_velocity_dq.apply_limits": lambda s, b: _dq(s, apply_limits=b),
    "KinematicsSolver.solve_velocity_dq.stall_recovery": lambda s, b: _dq(s, stall_recovery=b),
    "KinematicsSolver.find_configs.all_branches": lambda s, b: s.find_configs(
        far_target(s.robot), TIP, all_branches=b
    ),
    "KinematicsSolver.find_configs.analytic": lambda s, b: s.find_configs(
        far_target(s.robot), TIP, analytic=b
    ),
    "KinematicsSolver.find_configs.include_alternates": lambda s, b: s.find_configs(
        far_target(s.robot), TIP, include_alternates=b
    ),
    "KinematicsSolver.nearest_config.include_alternates": lambda s, b: s.nearest_config(
        far_target(s.robot), TIP, READY, include_alternates=b
    ),
    "KinematicsSolver.set_proximity_gated_collision_activation_enabled.enabled": (
        lambda s, b: _collision(s).set_proximity_gated_collision_activation_enabled(b)
    ),
    "KinematicsSolver.enable_collision_pair_cache.enable": (
        lambda s, b: _collision(s).enable_collision_pair_cache(b)
    ),
    "KinematicsSolver.enable_sphere_broadphase.enable": (
        lambda s, b: _collision(s).enable_sphere_broadphase(b)
    ),
    "KinematicsSolver.enable_saturation_exit_behavior.enable": (
        lambda s, b: s.enable_saturation_exit_behavior(b)
    ),
    "KinematicsSolver.set_solver_recovery_enabled.enable": (
        lambda s, b: s.set_solver_recovery_enabled(b)
    ),
    "KinematicsSolver.enable_position_ik_debug.enable": lambda s, b: s.enable_position_ik_debug(b),
    "KinematicsSolver.configure_elastic_band.expand_only_saturated": (
        lambda s, b: s.configure_elastic_band(expand_only_saturated=b)
    ),
    **{
        f"PositionIKOptions.{field}": (
            lambda s, b, field=field: s.solve_position(
                READY, far_target(s.robot), TIP, PositionIKOptions(**{field: b})
            )
        )
        for field in (
            "velocity_limits",
            "use_registered_tasks",
            "classify_stagnation_as_no_progress",
            "record_path",
        )
    },
    **{
        f"PositionStepOptions.{field}": (
            lambda s, b, field=field: _status(
                s.solve_position_step(
                    READY, far_target(s.robot), "ee", PositionStepOptions(**{field: b})
                )
            )
        )
        for field in ("velocity_limits", "record_path")
    },
    **{
        f"RobotModel{ctor}.{arg}": (
            lambda s, b, ctor=ctor, arg=arg: (
                RobotModel(ARM, **{arg: b})
                if ctor == ""
                else (
                    RobotModel.from_urdf_string(ARM.read_text(), **{arg: b})
                    if ctor == ".from_urdf_string"
                    else RobotModel.from_xacro(ARM, **{arg: b})
                )
            )
        )
        for ctor in ("", ".from_urdf_string", ".from_xacro")
        for arg in (
            "floating_base",
            "load_visuals",
            "load_collisions",
            "exact_collision_meshes",
            "strict",
        )
    },
    "Task.active": lambda s, b: setattr(s.get_task("ee"), "active", b),
    "Constraint.active": lambda s, b: setattr(s.constraints[0], "active", b),
    "JointLimitsConstraint.position_limits": lambda s, b: setattr(
        s.engine.joint_limits, "position_limits", b
    ),
    "VelocityEngine.timing": lambda s, b: setattr(s.engine, "timing", b),
    "VelocityEngine.add_constraint.replace": lambda s, b: s.engine.add_constraint(
        TightPointConstraint("tp", s.kinematics, TIP, [0.3, 0.0, 0.5]), replace=b
    ),
    "VelocityEngine.build_problem.apply_limits": lambda s, b: s.engine.build_problem(READY, b),
    "VelocityEngine.build_problem.advance": lambda s, b: s.engine.build_problem(READY, advance=b),
    "VelocityEngine.solve.apply_limits": lambda s, b: _status(s.engine.solve(READY, b)),
    "SNSSolver.exact_fallback": lambda s, b: SNSSolver(3, exact_fallback=b),
    "SNSSolver.use_numba": lambda s, b: SNSSolver(3, use_numba=b),
    "joint_callback.cyclic": lambda s, b: stackik.joint_callback({**CALLBACK, "cyclic": b}),
    "joint_callback.first": lambda s, b: stackik.joint_callback({**CALLBACK, "first": b}),
    "CollisionExclusionReport.to_srdf.include_never": lambda s, b: _exclusions(s).to_srdf(b),
    "CollisionExclusionReport.disabled.include_never": lambda s, b: _exclusions(s).disabled(b),
    "ElasticBandHandler.expand_only_saturated": lambda s, b: stackik.ElasticBandHandler(
        s, expand_only_saturated=b
    ),
    "RobotModel.add_obstacle_mesh.convex": lambda s, b: s.robot.add_obstacle_mesh(
        "m", MESH, np.eye(4), convex=b
    ),
    "RobotModel.check_collision.world": lambda s, b: s.robot.check_collision(world=b),
    "RobotModel.compute_min_collision_distance.world": (
        lambda s, b: s.robot.compute_min_collision_distance(world=b)
    ),
    "World.add_obstacle_mesh.convex": lambda s, b: stackik.World().add_obstacle_mesh(
        "m", MESH, np.eye(4), convex=b
    ),
    "Rotation.from_euler.degrees": lambda s, b: stackik.Rotation.from_euler("x", 0.1, b),
    "SO3.from_euler.degrees": lambda s, b: stackik.SO3.from_euler("x", 0.1, degrees=b),
    "limit_task_velocity.enable_debug": lambda s, b: stackik.utils.limit_task_velocity(
        np.ones(6), enable_debug=b
    ),
}
#: Parameters where None has a meaning of its own ("decide for me").
NONE_MEANS_DEFAULT = {"ControlLoop.anticipate"}

_REPORTS: dict[int, object] = {}


def _start_and_stop(s: KinematicsSolver, warm: object) -> None:
    """A loop started in its thread with ``warm`` (checked before the thread starts)."""
    loop = ControlLoop(s, READY, 100.0, JointMotionLimiter(s.robot, 0.01, max_jerk=500.0))
    loop.start(warm=warm)  # type: ignore[arg-type]
    loop.stop()


def _exclusions(s: KinematicsSolver) -> stackik.CollisionExclusionReport:
    key = id(s.robot)
    if key not in _REPORTS:
        _REPORTS[key] = s.robot.compute_collision_exclusions(samples=20, seed=0)
    return _REPORTS[key]  # type: ignore[return-value]


def _bool_parameters() -> set[str]:
    """``Owner.method.param`` (or ``Owner.param`` for constructors and option fields) of
    every bool-annotated parameter of the public API (results excluded)."""
    found: set[str] = set()

    def scan(obj: object, qual: str) -> None:
        try:
            sig = inspect.signature(obj)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return
        for p in sig.parameters.values():
            if p.annotation in ("bool", "bool | None", bool):
                found.add(f"{qual}.{p.name}")

    for name in stackik.__all__:
        obj = getattr(stackik, name)
        if name.endswith("Result") or name in ("CollisionDebugInfo", "SolveDiagnostics"):
            continue  # outputs
        if inspect.isclass(obj):
            scan(obj, name)
            for attr, fn in vars(obj).items():
                if attr.startswith("_"):
                    continue
                if isinstance(fn, (staticmethod, classmethod)):
                    fn = fn.__func__
                if isinstance(fn, property):
                    if fn.fset is not None and "bool" in str(fn.fget.__annotations__.get("return")):
                        found.add(f"{name}.{attr}")
                elif callable(fn):
                    scan(fn, f"{name}.{attr}")
        elif callable(obj):
            scan(obj, name)
    return found


def test_every_boolean_parameter_has_a_case():
    missing = sorted(_bool_parameters() - set(CASES))
    assert not missing, f"add a case to CASES for {missing}"


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_boolean_setting_refuses_what_is_not_a_flag(solver, case):
    for bad in NOT_FLAGS:
        if bad is None and case in NONE_MEANS_DEFAULT:
            continue
        with pytest.raises(InvalidInput) as exc:
            CASES[case](solver, bad)
        assert "True or False" in str(exc.value) or "flag" in str(exc.value), str(exc.value)


@pytest.mark.parametrize(
    "case",
    [
        "KinematicsSolver.enable_position_limits.enable",
        "Task.active",
        "KinematicsSolver.enable_collision_pair_cache.enable",
        "KinematicsSolver.configure_elastic_band.expand_only_saturated",
        "KinematicsSolver.configure_com_constraint.use_acceleration_limits",
        "RobotModel.floating_base",
    ],
)
def test_a_boolean_setting_takes_bools_and_one_or_zero(solver, case):
    for good in FLAGS:
        CASES[case](solver, good)


def test_the_refused_string_false_changes_nothing(solver):
    solver.enable_position_limits(False)
    with pytest.raises(InvalidInput):
        solver.enable_position_limits("false")
    assert solver.position_limits_enabled() is False
    task = solver.get_task("ee")
    with pytest.raises(InvalidInput):
        task.active = "false"
    assert task.active is True
    with pytest.raises(InvalidInput):
        solver.enable_timing_breakdown("yes")
    assert not solver.solve_velocity(READY).timings


@pytest.mark.parametrize("mask", [[np.nan, 1, 1], [2, 0, 1], ["1", "0", "1"], [1, 1], []])
@pytest.mark.parametrize("setter", ["set_position_mask", "set_orientation_mask"])
def test_axis_masks_are_flags(solver, mask, setter):
    task = solver.get_task("ee")
    with pytest.raises(InvalidInput):
        getattr(task, setter)(mask)
    assert task.row_mask.all()
    getattr(task, setter)(np.array([True, False, True]))
    getattr(task, setter)([1.0, 0.0, 1.0])
    assert task.get_dimension() == 5  # 2 + 3 rows


def test_a_bool_array_is_not_a_configuration_or_a_target(solver, panda):
    result = solver.solve_velocity(np.ones(7, bool))
    assert result.status == SolverStatus.INVALID_INPUT
    assert "booleans" in result.status_message
    task = solver.get_task("ee")
    with pytest.raises(InvalidInput, match="booleans"):
        task.set_target_pose(np.eye(4, dtype=bool))
    with pytest.raises(InvalidInput, match="booleans"):
        task.set_target_velocity(np.ones(6, bool))
    with pytest.raises(InvalidInput, match="booleans"):
        panda.update_kinematics(np.zeros(7, bool))
    with pytest.raises(InvalidInput, match="booleans"):
        solver.get_task("posture").set_target_configuration([True] * 7)


# -- point 5: the magnitude rule, names, axis masks ----------------------------------------------
@pytest.mark.parametrize("big", [1e300, -1e7, np.inf])
def test_targets_and_settings_obey_the_magnitude_rule(solver, big):
    s = solver
    with pytest.raises(InvalidInput):
        s.get_task("ee").set_target_velocity([big, 0, 0, 0, 0, 0])
    with pytest.raises(InvalidInput):
        s.add_joint_task("j", "panda_joint1", big)
    joint = s.add_joint_task("j1", "panda_joint1", 0.1)
    with pytest.raises(InvalidInput):
        joint.set_target_value(big)
    assert joint.target_values[0] == 0.1
    with pytest.raises(InvalidInput):
        s.add_multi_joint_task("m", ["panda_joint1", "panda_joint2"], [0.0, big])
    com = s.add_com_task("com")
    with pytest.raises(InvalidInput):
        com.set_target_position([0.0, big, 0.0])
    with pytest.raises(InvalidInput):
        s.add_tight_point_constraint(TIP, [big, 0.0, 0.5])
    with pytest.raises(InvalidInput):
        s.set_linear_velocity_constraints(np.ones((1, 7)), [-big if big > 0 else big], [1e301])
    with pytest.raises(InvalidInput):
        s.set_linear_velocity_constraints(np.full((1, 7), 1e300), [-1.0], [1.0])
    _collision(s)
    with pytest.raises(InvalidInput):
        s.set_collision_constraint_activation_multiplier(-abs(big) if np.isfinite(big) else big)
    if np.isfinite(big):
        with pytest.raises(InvalidInput):
            s.set_collision_max_separation_speed_nonpenetrating(abs(big))


def test_the_magnitude_rule_keeps_what_means_none(solver):
    _collision(solver)
    solver.set_collision_max_separation_speed_nonpenetrating(np.inf)  # no cap
    assert solver.get_collision_max_separation_speed_nonpenetrating() == np.inf
    solver.set_collision_constraint_activation_multiplier(-1.0)  # <= 0: the margin
    assert solver.get_collision_constraint_activation_multiplier() == 0.0
    solver.set_linear_velocity_constraints(np.ones((1, 7)), [-np.inf], [0.5])  # one-sided
    solver.get_task("ee").set_target_velocity([1e6, 0, 0, 0, 0, 0])  # the limit itself


@pytest.mark.parametrize("name", [5, None, "", b"ee", ("ee",)])
def test_names_are_non_empty_strings(solver, panda, name):
    with pytest.raises(InvalidInput):
        solver.add_frame_task(name, TIP)
    with pytest.raises(InvalidInput):
        solver.add_posture_task(name)
    with pytest.raises(InvalidInput):
        TightPointConstraint(name, solver.kinematics, TIP, [0.3, 0.0, 0.5])
    if name != "":  # an empty frame name is simply not found
        with pytest.raises(InvalidInput):
            solver.add_frame_task("x", name)
        with pytest.raises(InvalidInput):
            panda.get_frame_id(name)
        with pytest.raises(InvalidInput):
            panda.get_joint_id(name)
    assert [t.name for t in solver.tasks] == ["ee", "posture"]


def test_an_empty_axis_mask_is_refused(solver):
    T = far_target(solver.robot)
    with pytest.raises(InvalidInput, match="empty"):
        solver.add_tight_point_constraint(TIP, [0.3, 0.0, 0.5], axis_mask=[])
    with pytest.raises(InvalidInput, match="empty"):
        solver.add_tight_frame_pose_constraint(TIP, T, axis_mask=np.zeros(0))
    with pytest.raises(InvalidInput, match="empty"):
        solver.configure_relative_pose_constraint(
            "panda_link0", TIP, -np.ones(6), np.ones(6), axis_mask=()
        )
    with pytest.raises(InvalidInput, match="flag"):
        solver.add_tight_point_constraint(TIP, [0.3, 0.0, 0.5], axis_mask=[np.nan, 1, 1])
    assert not solver.engine.constraints_of("tight_point")
    # None means every axis.
    c = TightPointConstraint("tp", solver.kinematics, TIP, [0.3, 0.0, 0.5], axis_mask=None)
    assert c.max_rows() == 3
    c = TightFramePoseConstraint("tq", solver.kinematics, TIP, T, axis_mask=[1, 0, 1, 0, 0, 1])
    assert c.max_rows() == 3


# -- point 6: plain Python exceptions become typed ----------------------------------------------
@pytest.mark.parametrize(
    "call",
    [
        lambda: RobotModel(None),
        lambda: RobotModel(5),
        lambda: RobotModel(b"<robot name='r'><link name='a'/></robot>"),
        lambda: RobotModel(bytes(ARM)),
        lambda: RobotModel(""),
        lambda: RobotModel.from_urdf_string(ARM),
        lambda: RobotModel.from_urdf_string(None),
        lambda: RobotModel.from_xacro(None),
        lambda: RobotModel(ARM, [1]),
        lambda: RobotModel(ARM, 5),
        lambda: RobotModel(ARM, ["j1", None]),
        lambda: RobotModel(ARM, package_dirs=5),
        lambda: RobotModel(ARM, package_dirs=[5]),
        lambda: RobotModel(ARM, srdf_path=5),
        lambda: RobotModel(ARM, mimic=5),
        lambda: stackik.joint_callback(5),
        lambda: stackik.joint_callback(None),
        lambda: stackik.joint_callback(["pos", 0.0]),
    ],
    ids=[
        "None",
        "int",
        "bytes text",
        "bytes path",
        "empty path",
        "from_urdf_string(Path)",
        "from_urdf_string(None)",
        "from_xacro(None)",
        "actuated [1]",
        "actuated 5",
        "actuated None entry",
        "package_dirs 5",
        "package_dirs [5]",
        "srdf_path 5",
        "mimic 5",
        "joint_callback(5)",
        "joint_callback(None)",
        "joint_callback(list)",
    ],
)
def test_wrong_argument_types_raise_invalid_input(call):
    with pytest.raises(InvalidInput) as exc:
        call()
    assert isinstance(exc.value, StackIKError)


def test_the_messages_say_what_was_expected():
    with pytest.raises(InvalidInput, match=r"urdf_path must be a path .* got NoneType"):
        RobotModel(None)
    with pytest.raises(InvalidInput, match="from_urdf_string"):
        RobotModel(b"<robot/>")
    with pytest.raises(InvalidInput, match=r"for a file use RobotModel\(path\)"):
        RobotModel.from_urdf_string(ARM)
    with pytest.raises(InvalidInput, match="non-empty string, got 1"):
        RobotModel(ARM, [1])
    with pytest.raises(InvalidInput, match="package_dirs must be a path or a list"):
        RobotModel(ARM, package_dirs=5)
    with pytest.raises(InvalidInput, match="in_data must be a dict"):
        stackik.joint_callback(5)


def test_bytes_text_and_path_objects_still_load():
    a = RobotModel.from_urdf_string(ARM.read_bytes())
    b = RobotModel(ARM, package_dirs=ARM.parent)
    c = RobotModel(str(ARM), ["j1", "j2"])
    assert a.nv == b.nv == 3 and c.nv == 2


def test_dataclass_fields_are_covered():
    # The option dataclasses' bool fields are reached through their calls above.
    for cls in (PositionIKOptions, PositionStepOptions, BatchIKOptions):
        for f in dataclasses.fields(cls):
            if f.type in ("bool", bool):
                assert f"{cls.__name__}.{f.name}" in CASES
