"""Whole-solver warm-up jobs: every kernel a robot's solvers reach, for ``stackik warmup``.

The kernels' own modules register small warm-ups (the SNS core, the chain, branch and
closed-form kernels); the jobs here run complete solver calls on a built-in 6-joint arm
with collision geometry (boxes, cylinders, spheres), so the constraint,
collision and position/global IK kernels compile with the argument types real calls
use. They are registered ``machine_only``: ``stackik warmup``, ``stackik._jit.warmup(
everything=True)`` and the background workers of a first use run them (each job in
its own worker process when there are several), not every ``stackik.warmup()``.
"""

from __future__ import annotations

import contextlib
import sys
import time
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from ._jit import register_warmup
from .errors import CollisionMarginWarning
from .model import RobotModel
from .solver import KinematicsSolver

__all__ = [
    "ARM_URDF",
    "arm",
    "balance_job",
    "compile_progress",
    "find_configs_job",
    "position_job",
    "velocity_job",
    "world_job",
]

_LINK = """
  <link name="{name}">
    <inertial><origin xyz="{xyz}"/><mass value="1"/>
      <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="{xyz}"/><geometry>{shape}</geometry></collision>
  </link>"""

_JOINT = """
  <joint name="j{i}" type="revolute">
    <parent link="{parent}"/><child link="{child}"/><origin xyz="{xyz}"/><axis xyz="{axis}"/>
    <limit lower="-2.8" upper="2.8" effort="10" velocity="2"/>
  </joint>"""

_SHAPES = [
    ("base", "0 0 0.05", '<box size="0.2 0.2 0.1"/>'),
    ("l1", "0 0 0.1", '<cylinder radius="0.05" length="0.2"/>'),
    ("l2", "0 0 0.15", '<cylinder radius="0.04" length="0.25"/>'),
    ("l3", "0 0 0.12", '<cylinder radius="0.04" length="0.2"/>'),
    ("l4", "0 0 0.05", '<sphere radius="0.05"/>'),
    ("l5", "0 0 0.04", '<box size="0.06 0.06 0.08"/>'),
    ("tool", "0 0 0.03", '<sphere radius="0.03"/>'),
]
_JOINTS = [
    ("0 0 0.1", "0 0 1"),
    ("0 0 0.2", "0 1 0"),
    ("0 0 0.3", "0 1 0"),
    ("0 0 0.25", "0 0 1"),
    ("0 0 0.1", "0 1 0"),
    ("0 0 0.08", "0 0 1"),
]

#: A 6-joint arm with collision primitives on every link (the warm-up robot).
ARM_URDF = (
    '<?xml version="1.0"?>\n<robot name="stackik_warmup_arm">'
    + "".join(_LINK.format(name=n, xyz=x, shape=s) for n, x, s in _SHAPES)
    + "".join(
        _JOINT.format(i=i, parent=_SHAPES[i][0], child=_SHAPES[i + 1][0], xyz=x, axis=a)
        for i, (x, a) in enumerate(_JOINTS)
    )
    + "\n</robot>\n"
)

_Q = np.array([0.3, -0.4, 0.9, 0.2, 0.6, -0.3])
_GOAL = np.array([0.5, -0.2, 0.7, -0.3, 0.4, 0.2])


def arm() -> RobotModel:
    """The warm-up arm (:data:`ARM_URDF`), its collision model built."""
    return RobotModel.from_urdf_string(ARM_URDF)


def _solver(robot: RobotModel) -> KinematicsSolver:
    """Frame task above a posture task, joint limits, self-collision avoidance."""
    solver = KinematicsSolver(robot, dt=0.01)
    robot.update_kinematics(_GOAL)
    solver.add_frame_task("tool", "tool").set_target_pose(robot.get_frame_pose("tool"))
    solver.add_posture_task("posture").priority = 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionMarginWarning)
        solver.configure_collision_constraint(0.01)
    robot.update_kinematics(_Q)
    return solver


@register_warmup(machine_only=True)
def velocity_job() -> None:
    """``solve_velocity`` with a frame task, a posture task, limits and self-collision.

    Then the control loop's present-error pass (each task's error alone).
    """
    solver = _solver(arm())
    solver.solve_velocity(_Q)
    for task in solver.tasks:
        task.override_with_present_error()
        task.clear_error_override()


@register_warmup(machine_only=True)
def world_job() -> None:
    """``solve_velocity`` near a moving obstacle of every primitive kind, stamped poses too.

    Then a step with a query time budget (its three timed calls).
    """
    import coal

    robot = arm()
    shapes = [coal.Box(0.1, 0.1, 0.1), coal.Sphere(0.05), coal.Capsule(0.04, 0.2)]
    shapes += [coal.Cylinder(0.04, 0.2), coal.Halfspace(np.array([0.0, 0.0, 1.0]), -0.5)]
    for k, shape in enumerate(shapes):
        pose = np.eye(4)
        pose[:3, 3] = [0.25, 0.1 * k - 0.2, 0.5]
        robot.add_obstacle(f"warmup{k}", shape, pose)
    solver = _solver(robot)
    solver.solve_velocity(_Q)
    pose = np.eye(4)
    pose[:3, 3] = [0.24, -0.2, 0.5]
    robot.set_obstacle_pose("warmup0", pose)  # a moving obstacle: its velocity bounds
    solver.solve_velocity(_Q)
    for k in range(2):  # stamped updates: the compiled checks and velocity estimates
        pose[0, 3] += 0.001
        robot.world.set_obstacle_poses({"warmup0": pose, "warmup1": np.eye(4)}, stamp=0.001 * k)
        robot.set_obstacle_pose("warmup2", pose, stamp=0.001 * k)
    solver.solve_velocity(_Q)
    solver.set_collision_refinement_time_budget_us(300)  # (a budget's step: three calls)
    solver.solve_velocity(_Q)


@register_warmup(machine_only=True)
def balance_job() -> None:
    """``solve_velocity`` with the centre of mass kept over a support polygon."""
    solver = _solver(arm())
    solver.configure_com_constraint([[0.3, 0.3], [-0.3, 0.3], [-0.3, -0.3], [0.3, -0.3]])
    solver.solve_velocity(_Q)


@register_warmup(machine_only=True)
def position_job() -> None:
    """``solve_position`` to a reachable pose (with the collision constraint)."""
    robot = arm()
    solver = _solver(robot)
    robot.update_kinematics(_GOAL)
    target = robot.get_frame_pose("tool")
    solver.solve_position(_Q, target, "tool")


@register_warmup(machine_only=True)
def find_configs_job() -> None:
    """``find_configs`` (the numeric multi-start search and its checks)."""
    robot = arm()
    solver = _solver(robot)
    robot.update_kinematics(_GOAL)
    target = robot.get_frame_pose("tool")
    solver.find_configs(target, "tool", max_solutions=2, time_budget=0.02, seed=0)


@contextlib.contextmanager
def compile_progress(label: str = "compiling kernels") -> Iterator[None]:
    """Show the kernels that compile while the block runs (nothing when none does).

    A ``rich`` progress bar on stderr (the ``cli`` extra) over the kernels not yet in
    the cache; without ``rich``, one plain line when compiling starts and one when the
    block ends. Kernels that load from the cache show nothing, and so does a first use
    that runs the kernels as plain Python while they compile in the background
    (:func:`stackik._jit.start`; its one line on stderr says so).

    Args:
        label: What the bar says.
    """
    from . import _jit

    if _jit.runs_python_first():  # nothing compiles here: the kernels start as Python
        yield
        return
    state: dict[str, Any] = {"count": 0, "bar": None, "task": None, "start": None}
    total = max(1, len(_jit.missing_kernels()))
    rich: Any = None
    try:
        import rich.console
        import rich.progress

        rich = rich.progress
    except ImportError:  # the core install: plain lines
        pass

    def hook(event: str, name: str) -> None:
        if state["start"] is None:
            state["start"] = time.perf_counter()
            if rich is not None:
                bar = rich.Progress(
                    "[progress.description]{task.description}",
                    rich.BarColumn(),
                    rich.MofNCompleteColumn(),
                    rich.TimeElapsedColumn(),
                    "{task.fields[kernel]}",
                    console=rich.Console(stderr=True),
                    transient=False,
                )
                state["bar"], state["task"] = bar, bar.add_task(label, total=total, kernel="")
                bar.start()
            else:
                print(f"{label} (once per machine) ...", file=sys.stderr, flush=True)
        if event == "end":
            state["count"] += 1
            if state["bar"] is not None:
                short = name.rsplit(".", 1)[-1]
                state["bar"].update(state["task"], completed=state["count"], kernel=short)

    remove = _jit.on_compile(hook)
    try:
        yield
    finally:
        remove()
        if state["bar"] is not None:
            state["bar"].update(state["task"], completed=total, kernel="done")
            state["bar"].stop()
        elif state["start"] is not None:
            took = time.perf_counter() - state["start"]
            print(f"{label}: {state['count']} compiled in {took:.0f} s", file=sys.stderr)
