"""``stackik bench``: a short local benchmark of ``solve_velocity`` on the shipped Panda.

Two problems of ``benchmarks/bench_velocity.py`` (without the peer libraries): (A) a
frame task following a moving target above a posture task, inside the joint position
and velocity limits; (B) the same with self-collision avoidance, the target sweeping
next to the base. Each step's ``solve_velocity`` call is timed (kinematics included;
target setting and integration outside). ``benchmarks/bench_velocity.py`` has the full
comparison against EmbodiK and pink.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.table import Table

from .. import _validate
from ..model import RobotModel
from ..solver import KinematicsSolver
from ..solver import warmup as solver_warmup
from .common import one_line_errors, out

#: The robots shipped with the source checkout (``robots/``).
ROBOTS = Path(__file__).resolve().parents[3] / "robots"
TOOL = "panda_hand_tcp"
DT = 0.01
Q_START = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
WARMUP = 50


@dataclass(frozen=True)
class BenchFigures:
    """Timing of one problem [µs per ``solve_velocity`` call].

    Attributes:
        problem: What was solved.
        steps: Timed steps.
        median: Median.
        p99: 99th percentile.
        max: Largest.
        failures: Steps whose status was not SUCCESS.
    """

    problem: str
    steps: int
    median: float
    p99: float
    max: float
    failures: int


def _target(i: int, collide: bool) -> tuple[np.ndarray, np.ndarray]:
    R = np.diag([1.0, -1.0, -1.0])  # tool pointing down
    a = 2 * np.pi * i / 400
    if collide:  # sweeps through the space next to the base
        return np.array([0.05 + 0.15 * np.cos(a), 0.15 * np.sin(a), 0.15]), R
    return np.array([0.45 + 0.1 * np.cos(a), 0.1 * np.sin(a), 0.45]), R


def bench_panda(robot: RobotModel, steps: int, collide: bool) -> BenchFigures:
    """Time ``steps`` control steps of problem (A) or, with ``collide``, (B)."""
    solver = KinematicsSolver(robot, dt=DT)
    robot.update_kinematics(Q_START)
    tool = solver.add_frame_task("tool", TOOL)
    tool.gain = 20.0
    posture = solver.add_posture_task("posture")
    posture.priority = 1
    if collide:
        solver.configure_collision_constraint(min_distance=0.01)
    q = Q_START.copy()
    times, failures = [], 0
    for i in range(WARMUP + steps):
        p, R = _target(i, collide)
        tool.set_target_position(p)
        tool.set_target_orientation(R)
        t0 = time.perf_counter()
        result = solver.solve_velocity(q)
        elapsed = time.perf_counter() - t0
        q = robot.integrate(q, result.solution, DT)
        if i >= WARMUP:
            times.append(elapsed)
            failures += result.status.name != "SUCCESS"
    us = np.asarray(times) * 1e6
    name = "(B) + self-collision avoidance" if collide else "(A) frame task + posture, limits"
    return BenchFigures(
        name,
        steps,
        float(np.median(us)),
        float(np.percentile(us, 99)),
        float(us.max()),
        failures,
    )


@one_line_errors
def bench(
    steps: Annotated[int, typer.Option(help="Timed control steps per problem.")] = 3000,
    urdf: Annotated[
        Path, typer.Option(help="The Panda URDF (default: robots/panda/ of the checkout).")
    ] = ROBOTS / "panda" / "panda.urdf",
    srdf: Annotated[Path | None, typer.Option(help="Its SRDF (default: next to it).")] = None,
) -> None:
    """Time solve_velocity on the shipped Panda: median and p99 per call, in µs."""
    steps = _validate.count(steps, "steps")
    srdf = srdf if srdf is not None else urdf.with_suffix(".srdf")
    robot = RobotModel(urdf, srdf_path=srdf if srdf.exists() else None, load_visuals=False)
    robot.get_frame_id(TOOL)  # FrameNotFound for another robot
    table = Table(title=f"solve_velocity on {robot.model.name or urdf.stem}, dt {DT} s")
    table.add_column("problem")
    for column in ("steps", "median [µs]", "p99 [µs]", "max [µs]", "not SUCCESS"):
        table.add_column(column, justify="right")
    solver_warmup()  # compiled kernels from the first timed call, not plain Python
    for collide in (False, True):
        f = bench_panda(robot, steps, collide)
        table.add_row(
            f.problem,
            str(f.steps),
            f"{f.median:.1f}",
            f"{f.p99:.1f}",
            f"{f.max:.0f}",
            str(f.failures),
        )
    out.print(table)
    out.print("kinematics included; the kernels were loaded (or compiled) before timing")


def register(app: typer.Typer) -> None:
    """Add this module's commands to the application."""
    app.command("bench")(bench)
