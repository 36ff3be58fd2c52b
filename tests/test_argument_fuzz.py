"""Every public method of the main objects refuses junk arguments with a typed error.

Each method that takes required positional arguments is called with one junk value in
every one of them (None, a number, a string, NaN, an empty list, a dict, a bare object,
-1, 1e300, a NaN array): it must succeed or raise a :class:`stackik.StackIKError`,
never a bare ``TypeError``, ``AttributeError`` or NumPy error. The only methods left
out are the documented unchecked fast paths (``write_rows`` and ``narrow_box``: the
velocity engine's calls on its own buffers; ``follow_velocity``: the control loop's
limiter tick on its own finite velocity).
"""

from __future__ import annotations

import enum
import importlib
import inspect
import math
import warnings
from pathlib import Path

import coal
import numpy as np
import pytest

import stackik

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
JUNK = [None, 5, "x", math.nan, [], {}, object(), -1.0, 1e300, np.array([np.nan])]
#: Documented unchecked fast paths, and calls that start, stop or show something.
UNCHECKED = {"write_rows", "narrow_box", "follow_velocity"}
NOT_CALLED = {"start", "stop", "reset", "show", "serve"}


def _objects() -> dict[str, object]:
    robot = stackik.RobotModel(
        ROBOTS / "panda" / "panda.urdf", srdf_path=ROBOTS / "panda" / "panda.srdf"
    )
    q0 = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
    robot.update_kinematics(q0)
    robot.add_obstacle("table", coal.Box(1.0, 1.0, 0.05))
    robot.attach_object("part", "panda_hand", coal.Sphere(0.02))
    solver = stackik.KinematicsSolver(robot, dt=0.001)
    frame = solver.add_frame_task("ee", "panda_hand_tcp")
    posture = solver.add_posture_task("posture")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stackik.CollisionMarginWarning)
        solver.configure_collision_constraint(0.01)
    limiter = stackik.JointMotionLimiter(
        robot, 0.001, max_jerk=500.0 * robot.get_acceleration_limits()
    )
    loop = stackik.ControlLoop(solver, q0, limiter=limiter)
    others = {
        "CoMTask": solver.add_com_task("com"),
        "RelativeFrameTask": solver.add_relative_frame_task("rel", "panda_link3", "panda_hand"),
        "JointTask": solver.add_joint_task("joint", "panda_joint1", 0.0),
        "MultiJointTask": solver.add_multi_joint_task("joints", ["panda_joint1", "panda_joint2"]),
        "JointLimits": solver.get_constraint("joint_limits"),
        "SNSSolver": stackik.sns.SNSSolver(7),
    }
    return others | {
        "World": robot.world,
        "RobotModel": robot,
        "KinematicsSolver": solver,
        "FrameTask": frame,
        "PostureTask": posture,
        "CollisionConstraint": solver.get_constraint("collision"),
        "JointMotionLimiter": limiter,
        "ControlLoop": loop,
    }


def _required(fn: object) -> int:
    """How many required positional parameters ``fn`` has (0: none, or no signature)."""
    try:
        params = inspect.signature(fn).parameters.values()  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(1 for p in params if p.default is p.empty and p.kind in kinds)


def _methods(obj: object) -> list[tuple[str, object]]:
    """Public methods of ``obj`` but the unchecked and the starting/stopping ones."""
    return [
        (name, fn)
        for name, fn in inspect.getmembers(obj, predicate=callable)
        if not (name.startswith("_") or name in UNCHECKED | NOT_CALLED or inspect.isclass(fn))
    ]


def _bare_exceptions(calls: list[tuple[str, object]]) -> tuple[int, dict[str, set[str]]]:
    """Call each ``(label, fn)`` with junk in every required argument.

    Returns:
        The number of calls, and per label the exceptions that were not a
        ``StackIKError`` (with the junk's type).
    """
    called = 0
    bare: dict[str, set[str]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for label, fn in calls:
            n = _required(fn)
            for junk in JUNK if n else []:
                called += 1
                try:
                    fn(*([junk] * n))  # type: ignore[operator]
                except stackik.StackIKError:
                    pass
                except Exception as exc:  # (what the test looks for)
                    bare.setdefault(label, set()).add(
                        f"{type(exc).__name__} for {type(junk).__name__}"
                    )
    return called, bare


def test_junk_arguments_get_typed_errors():
    calls = [
        (f"{label}.{name}", fn) for label, obj in _objects().items() for name, fn in _methods(obj)
    ]
    called, bare = _bare_exceptions(calls)
    assert called > 1000  # (the objects have their methods: the probe ran)
    assert not bare, "\n".join(f"{k}: {sorted(v)}" for k, v in sorted(bare.items()))


@pytest.mark.parametrize("name", sorted(UNCHECKED))
def test_the_unchecked_fast_paths_say_so(name):
    """The methods the fuzz leaves out document that they do not check their input."""
    docs = [
        getattr(cls, name).__doc__ or ""
        for cls in (
            stackik.tasks.base.Task,
            stackik.constraints.base.Constraint,
            stackik.JointMotionLimiter,
        )
        if hasattr(cls, name)
    ]
    assert docs and all(("check" in d) for d in docs), docs


def test_restoring_a_foreign_dict_leaves_a_constraint_whole():
    """``restore`` deletes the attributes a snapshot does not name: given a dict that is
    not a snapshot, it used to delete every attribute of a constraint."""
    robot = stackik.RobotModel(ROBOTS / "panda" / "panda.urdf")
    solver = stackik.KinematicsSolver(robot)
    solver.add_posture_task("posture").set_target_configuration(np.full(7, 0.3))
    limits = solver.get_constraint("joint_limits")
    before = solver.solve_velocity(np.zeros(7)).solution
    for foreign in ({}, {"x": 1}, {"_name": 5}, [("_name", ("a", None))]):
        with pytest.raises(stackik.InvalidInput):
            limits.restore(foreign)  # type: ignore[arg-type]
    limits.restore(limits.snapshot())
    np.testing.assert_array_equal(solver.solve_velocity(np.zeros(7)).solution, before)


#: The subpackages whose ``__all__`` is public API beside the top level's.
SUBPACKAGES = (
    "analytic", "constraints", "control", "geometry", "ik", "model", "reach", "robots",
    "sns", "spatial", "tasks", "utils",
)  # fmt: skip


def _entry_points() -> list[tuple[str, object]]:
    """The package's public classes (their constructors and class-level constructors)
    and functions, at the top level and in the subpackages; left out: errors, enums
    (``Enum(value)`` raises ``ValueError`` by Python's rules), result containers (made by
    the library) and ``warmup`` (compiles)."""
    modules = [stackik] + [importlib.import_module(f"stackik.{m}") for m in SUBPACKAGES]
    out: list[tuple[str, object]] = []
    seen: set[int] = set()
    for module in modules:
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if name == "warmup" or name.endswith("Result") or id(obj) in seen:
                continue
            seen.add(id(obj))
            label = f"{module.__name__}.{name}"
            if inspect.isclass(obj):
                if issubclass(obj, (BaseException, enum.Enum)):
                    continue
                out.append((label, obj))
                for attr in vars(obj):
                    if not attr.startswith("_") and isinstance(vars(obj)[attr], classmethod):
                        out.append((f"{label}.{attr}", getattr(obj, attr)))
            elif callable(obj):
                out.append((label, obj))
    return out


def test_junk_arguments_to_constructors_and_functions_get_typed_errors(tmp_path, monkeypatch):
    """``KinematicsSolver(None)``, ``ControlLoop(5, q)``, ``JointMotionLimiter(5, dt)``,
    ``load_motion_limits(robot, None)``, ``BranchFlags.from_code(None)`` and the like
    raised bare ``AttributeError`` / ``TypeError``."""
    monkeypatch.chdir(tmp_path)  # (a junk path names nothing real)
    called, bare = _bare_exceptions(_entry_points())
    assert called > 700
    assert not bare, "\n".join(f"{k}: {sorted(v)}" for k, v in sorted(bare.items()))
