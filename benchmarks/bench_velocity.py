"""Benchmark: one velocity-IK step (kinematics update included), stackik vs EmbodiK vs pink.

Problems, all on robots shipped in ``robots/`` and run in this one process:

(A) Panda: frame task on ``panda_hand_tcp`` following a moving target (priority 0),
    posture task below it (priority 1), joint position and velocity limits.
(B) The same with self-collision avoidance on every pair the SRDF leaves active; the
    target circles through the space next to the robot's base and presses the hand
    toward the arm's own links. Collision rows are active in every step, and at the
    2 cm margin SNS scales the whole tool task to zero: the arm stalls (status
    ``NO_PROGRESS``) in almost every step (1984 of a 2000-step run, the other 16
    ``SUCCESS``), so (B)'s timings are mostly those of blocked steps.
(C) Humanoid on a floating base (37 DoF): both sole frames held (priority 0), the right
    hand reaching forward and sideways (priority 1), the CoM kept over the support
    polygon of the two feet, posture (priority 2).
(D) (C) with self-collision avoidance on every pair the humanoid's SRDF leaves active.
(E) Dual arm (14 DoF + torso): both hands following moving targets (priority 0), a
    relative-pose constraint that keeps the hands' relative pose within +-2 cm / +-0.1
    rad of the start (a held object), self-collision avoidance, posture (priority 1).
    The tcps start mirrored, a half turn apart, where the rotation vector jumps; the
    constraint is therefore on ``left_tcp`` and ``right_held``, a frame fixed to the
    right tcp and turned so that the pair starts at the identity rotation (a generated
    copy of ``robots/dual_arm`` with that one frame added, for both libraries): both
    bound the same relative rotation, far from pi. Printed: each library's largest
    change of the held pair's relative pose over the run (Pinocchio).
(F) (B)'s Panda, tasks, targets and pairs, plus a world: a table in front of the robot,
    a wall behind it and a person of 10 capsules (torso, head, upper arms, forearms,
    thighs, shins; the sizes of ``examples/teleop_person.py``) walking back and forth in
    front of the arm, reaching toward it with the right arm. All 10 capsules move every
    step (one ``world.set_obstacle_poses`` call, stamped, outside the timed region; its
    cost is printed separately). The walk itself (the capsules' 4x4 poses: about 20
    ``np.cross`` calls per step, the harness's own numpy) is computed for every step
    before the run, as a recorded stream is replayed, so the timed thread does not run
    it between steps (``--live-person`` computes it there instead, as before 2026-11-29:
    the step then starts on caches that work flushed). EmbodiK 0.23.2 has no world
    obstacles in its Python API (no add_obstacle or collision object on RobotModel /
    KinematicsSolver), so (F) runs stackik only and says so.
(G) The generated 30-joint humanoid of ``benchmarks/humanoid30.py`` (fixed pelvis,
    about 900 active self-collision pairs): both palms following targets that bring the
    hands toward each other and the chest (priority 0), posture (priority 1),
    self-collision with (D)'s margin. EmbodiK runs the same URDF with the same pairs.

Fair gains: every library gets the same task gains [1/s] (``PANDA_GAINS``,
``HUMANOID_GAINS``, ``HANDS_GAINS``, read by every library's setup), printed per library
and problem. stackik takes them as the task's ``gain``; EmbodiK's task ``weight`` is its
gain (its task velocity is ``weight * error``); pink's ``gain`` is the fraction of the
error removed per step (velocity ``gain * error / dt``), so it gets gain x dt. One step
toward a target 1 cm away then commands gain x error in stackik and pink; EmbodiK,
left at its defaults, damps the singular values of a task Jacobian below 0.1 in its
regularized pseudo-inverse and commands somewhat less where a task has them ((A)'s
tool at the start: 9.16 /s for the gain 10; exactly the gain with its regularization
epsilon at 1e-6).

Fair pairs: every library checks the same collision pairs. The SRDFs name links;
EmbodiK's ``apply_collision_exclusions`` matches geometry names, so the link pairs are
expanded to geometry names for it (given link names it would silently disable
nothing). Each library's active pair count, the steps with collision rows active
(stackik), the final task error and the smallest pair distance over the run (coal,
the same pair set for every library) are printed so the runs can be compared. The
referees measure each step's resulting configuration, the robot at the end of the step:
(F)'s smallest robot-world distance pairs it with the person at that same instant.

Printed per library: median / p99 / max microseconds per solve call (the library's
kinematics update included; target setting and integration outside), the ratio of each
peer's median and p99 to stackik's (only when stackik ran in the same problem); the same
calls' thread CPU time (``time.thread_time``: on a shared machine the wall times include
the slices other processes held the core, the CPU times do not; work a library hands to
other threads is not in them); each library's task gains; for stackik the per-phase
medians (kinematics, collision rows, other assembly, SNS solve) and how many steps
needed the exact QP fallback. For every problem with collision: the mean (and largest)
number of exact distance queries per step (the constraint's ``exact_queries``), the
mean number of queries skipped by the time budget (``skipped_queries``), the watched
pairs and the QP fallback rate (steps whose ``fallback_levels`` is not empty). ``--paced`` also runs
stackik's problems in a loop paced at 1 kHz (sleep until the next deadline, then
solve; and the same with a spin-wait), the way a control loop sees them. pink is a
weighted QP (no strict priorities) and has no CoM-polygon or relative-pose constraint;
EmbodiK and pink are skipped when not installed (``pip install -e ".[bench]"``).

Run: ``python benchmarks/bench_velocity.py [--steps N] [--problems A B ...] [--paced]
[--libs stackik ...] [--interleave BLOCK] [--live-person]``. With ``--interleave`` the
libraries take turns every BLOCK steps, so that a machine whose speed drifts loads them
alike.
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import coal
import humanoid30
import numpy as np
import pinocchio as pin

import stackik
from stackik.model.loading import parse_srdf_disabled_pairs
from stackik.solver import KinematicsSolver

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
PANDA = ROBOTS / "panda" / "panda.urdf"
PANDA_SRDF = ROBOTS / "panda" / "panda.srdf"
HUMANOID = ROBOTS / "humanoid" / "humanoid.urdf"
HUMANOID_SRDF = ROBOTS / "humanoid" / "humanoid.srdf"
DUAL = ROBOTS / "dual_arm" / "dual_arm.urdf"
DUAL_SRDF = ROBOTS / "dual_arm" / "dual_arm.srdf"
TOOL = "panda_hand_tcp"
DT = 0.01
Q_PANDA = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
MIN_DISTANCE = 0.02  # the collision margin of (B), (D), (E) [m]

# Task gains [1/s] of each problem, by task name: the one source every library's setup
# reads. A task's commanded velocity is gain x error. stackik takes them as ``gain``;
# EmbodiK's task ``weight`` is its gain (its task velocity is ``weight * error``), so it
# gets weight = gain; pink's ``gain`` is the fraction of the error removed in one step
# (velocity ``gain * error / dt``), so it gets gain x DT.
#: (A), (B), (F): the Panda's tool task and the posture.
PANDA_GAINS = {"ee": 10.0, "posture": 1.0}
#: (C), (D): the humanoid's soles, right hand and posture.
HUMANOID_GAINS = {"left_sole": 10.0, "right_sole": 10.0, "hand": 5.0, "posture": 1.0}
#: (E), (G): the left and right hand (tcp or palm) tasks and the posture.
HANDS_GAINS = {"left": 5.0, "right": 5.0, "posture": 1.0}


@dataclass
class Case:
    """One library on one problem: a timed step and what to report after the run."""

    step: Callable[[int], float]
    q: Callable[[], np.ndarray] = lambda: np.zeros(0)
    error: Callable[[], float] = lambda: float("nan")
    pairs: int = 0
    phases: list[dict[str, float]] = field(default_factory=list)
    fallbacks: int = 0
    active_steps: int = 0
    queries: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    notes: list[Callable[[], str]] = field(default_factory=list)
    world_distance: Callable[[np.ndarray, int], float] | None = None  # (q, step) -> [m]
    cpu: list[float] = field(default_factory=list)
    smallest_world: float = float("inf")
    statuses: dict[str, int] = field(default_factory=dict)
    #: Called with the number of steps before a run (what the harness computes ahead).
    prepare: Callable[[int], None] = lambda steps: None
    #: The task gains [1/s] the library was given, read back from its task objects.
    gains: str = ""
    #: (E): the held pair's (position [m], rotation [rad]) change from the start at q.
    held_change: Callable[[np.ndarray], tuple[float, float]] | None = None
    largest_held: tuple[float, float] = (0.0, 0.0)


def gain_line(gains: dict[str, float], how: str) -> str:
    """The printed gains line: ``gains`` [1/s] by task name, and how they were set."""
    listed = ", ".join(f"{name} {value:g}" for name, value in gains.items())
    return f"           task gains [1/s]: {listed} ({how})"


def stats(samples: list[float]) -> tuple[float, float, float]:
    """Median, p99 and max of samples given in seconds, in microseconds."""
    a = np.asarray(samples) * 1e6
    return float(np.median(a)), float(np.percentile(a, 99)), float(a.max())


# -- targets ---------------------------------------------------------------------------
def panda_target(i: int, collide: bool) -> tuple[np.ndarray, np.ndarray]:
    """Moving tool target (position [m], rotation) at step ``i``."""
    R = np.diag([1.0, -1.0, -1.0])  # tool pointing down
    a = 2 * np.pi * i / 400
    if collide:  # sweeps through the space next to the base: drives the hand into the arm
        p = np.array([0.05 + 0.15 * np.cos(a), 0.15 * np.sin(a), 0.15])
    else:
        p = np.array([0.45 + 0.1 * np.cos(a), 0.1 * np.sin(a), 0.45])
    return p, R


def hand_target(i: int, start: np.ndarray) -> np.ndarray:
    a = 2 * np.pi * i / 500
    return start + np.array([0.25 + 0.1 * np.sin(a), -0.2, 0.1 * np.cos(a)])


def dual_targets(i: int, start: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Both hands carry a virtual object along a circle (relative pose kept) [m]."""
    a = 2 * np.pi * i / 500
    shift = np.array([0.1 * np.sin(a), 0.1 * np.cos(a) - 0.1, 0.05 * np.sin(2 * a)])
    return start[0] + shift, start[1] + shift


# -- robots ----------------------------------------------------------------------------
def humanoid_setup() -> tuple[np.ndarray, np.ndarray]:
    """Initial configuration (knees bent) and the support polygon corners [m]."""
    robot = stackik.RobotModel(HUMANOID, floating_base=True)
    q = robot.neutral_configuration()
    for name, v in (("hip_pitch", -0.3), ("knee", 0.6), ("ankle_pitch", -0.3)):
        for side in ("left", "right"):
            q[robot.get_joint_config_index(f"{side}_{name}_joint")] = v
    robot.update_kinematics(q)
    corners = []
    for sole in ("left_sole", "right_sole"):
        T = robot.get_frame_pose(sole)
        for dx in (-0.1, 0.1):
            for dy in (-0.05, 0.05):
                corners.append(T.act(np.array([dx, dy, 0.0]))[:2])
    return q, convex_hull(np.array(corners))


def convex_hull(points: np.ndarray) -> np.ndarray:
    """Counter-clockwise convex hull of 2-D points (Andrew's monotone chain)."""
    pts = sorted(map(tuple, points))

    def turn(o: tuple, a: tuple, b: tuple) -> float:
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    def half(seq: list) -> list:
        out: list = []
        for p in seq:
            while len(out) >= 2 and turn(out[-2], out[-1], p) <= 0:
                out.pop()
            out.append(p)
        return out

    lower, upper = half(pts), half(pts[::-1])
    return np.array(lower[:-1] + upper[:-1])


def dual_ready(robot: stackik.RobotModel) -> np.ndarray:
    """Both arms in the Panda 'ready' pose, hands in front of the torso."""
    q = robot.neutral_configuration()
    for side in ("left", "right"):
        for j, v in ((2, -0.5), (4, -2.0), (6, 1.6), (7, 0.8)):
            q[robot.get_joint_config_index(f"{side}_panda_joint{j}")] = v
    return q


def geometry_pairs(robot: stackik.RobotModel, srdf: Path) -> list[tuple[str, str]]:
    """The SRDF's disabled link pairs expanded to every pair of their geometries."""
    by_link: dict[str, list[str]] = {}
    for g in robot.get_collision_geometries():
        by_link.setdefault(str(g["parent_frame"]), []).append(str(g["name"]))
    out = []
    for a, b in parse_srdf_disabled_pairs(srdf.read_text(), "srdf"):
        out += [(ga, gb) for ga in by_link.get(a, []) for gb in by_link.get(b, [])]
    return out


# -- stackik ---------------------------------------------------------------------------
def _stackik_case(
    robot: stackik.RobotModel,
    solver: KinematicsSolver,
    q0: np.ndarray,
    set_targets: Callable[[int], None],
    tasks: list,
) -> Case:
    solver.enable_timing_breakdown(True)
    stackik.warmup(solver)
    state = {"q": q0.copy()}
    case = Case(step=lambda i: 0.0)
    col = solver.get_constraint("collision")
    case.pairs = len(col.pair_names()) if col is not None else 0  # type: ignore[attr-defined]
    case.gains = gain_line({t.name: t.gain for t in solver.tasks}, "stackik task gain")

    def step(i: int) -> float:
        set_targets(i)
        c, t = time.thread_time(), time.perf_counter()
        res = solver.solve_velocity(state["q"])
        elapsed = time.perf_counter() - t
        case.cpu.append(time.thread_time() - c)
        state["q"] = robot.integrate(state["q"], res.solution, solver.dt)
        case.phases.append(res.timings)
        case.statuses[res.status.name] = case.statuses.get(res.status.name, 0) + 1
        case.fallbacks += bool(res.fallback_levels)
        if col is not None:
            case.active_steps += len(col.last_pairs) > 0  # type: ignore[attr-defined]
            case.queries.append(col.exact_queries)  # type: ignore[attr-defined]
            case.skipped.append(col.skipped_queries)  # type: ignore[attr-defined]
        return elapsed

    case.step = step
    case.q = lambda: state["q"]
    case.error = lambda: float(sum(np.linalg.norm(t.get_error()) for t in tasks))
    return case


def _stackik_posture(solver: KinematicsSolver, priority: int, gains: dict[str, float]) -> None:
    """The posture task (target: the start configuration) at ``priority``, its gain [1/s]."""
    posture = solver.add_posture_task("posture")
    posture.priority, posture.gain = priority, gains["posture"]


def stackik_panda(collide: bool) -> Case:
    robot = stackik.RobotModel(PANDA, srdf_path=PANDA_SRDF)
    robot.update_kinematics(Q_PANDA)
    solver = KinematicsSolver(robot, dt=DT)
    ee = solver.add_frame_task("ee", TOOL)
    ee.gain = PANDA_GAINS["ee"]
    _stackik_posture(solver, 1, PANDA_GAINS)
    if collide:
        solver.configure_collision_constraint(MIN_DISTANCE)

    def targets(i: int) -> None:
        p, R = panda_target(i, collide)
        ee.set_target_pose(p, R)

    return _stackik_case(robot, solver, Q_PANDA, targets, [ee])


def humanoid_solver(
    pairs: list[tuple[str, str]] | None = None,
) -> tuple[KinematicsSolver, np.ndarray, Callable[[int], None], list]:
    """Problem (C)'s solver, with self-collision on ``pairs`` (None: off; empty: all).

    Returns the solver, its start configuration, the target mover and the hand task.
    """
    robot = stackik.RobotModel(HUMANOID, floating_base=True, srdf_path=HUMANOID_SRDF)
    q0, polygon = humanoid_setup()
    robot.update_kinematics(q0)
    solver = KinematicsSolver(robot, dt=DT)
    for sole in ("left_sole", "right_sole"):
        solver.add_frame_task(sole, sole).gain = HUMANOID_GAINS[sole]
    hand = solver.add_frame_task("hand", "right_hand", stackik.tasks.TaskType.FRAME_POSITION)
    hand.priority, hand.gain = 1, HUMANOID_GAINS["hand"]
    _stackik_posture(solver, 2, HUMANOID_GAINS)
    solver.configure_com_constraint(polygon, margin=0.1)
    if pairs is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", stackik.CollisionMarginWarning)
            solver.configure_collision_constraint(MIN_DISTANCE, include_pairs=pairs)
    start = robot.get_frame_pose("right_hand").translation.copy()
    return solver, q0, lambda i: hand.set_target_position(hand_target(i, start)), [hand]


def stackik_humanoid(collide: bool = False) -> Case:
    solver, q0, move, tasks = humanoid_solver([] if collide else None)
    return _stackik_case(solver.robot, solver, q0, move, tasks)


# -- (E): the dual arm holding an object ---------------------------------------------
#: (E)'s held pair: the left tcp and a frame fixed to the right tcp (:func:`dual_held_urdf`).
HELD = ("left_tcp", "right_held")
#: (E)'s bounds on the held pair's change from its start: position [m], rotation [rad].
HOLD_POSITION, HOLD_ROTATION = 0.02, 0.1
_DUAL_HELD: dict[str, Path] = {}


def relative_pose(
    model: pin.Model, data: pin.Data, q: np.ndarray, frames: tuple[str, str]
) -> pin.SE3:
    """Pose of ``frames[1]`` in ``frames[0]`` at ``q`` (Pinocchio directly; metres)."""
    pin.framesForwardKinematics(model, data, q)
    a, b = (data.oMf[model.getFrameId(name)] for name in frames)
    return a.actInv(b)


def dual_held_urdf() -> Path:
    """(E)'s robot: ``robots/dual_arm`` plus a frame ``right_held`` fixed to ``right_tcp``.

    In :func:`dual_ready` the two tcps are mirrored: their relative rotation is a half
    turn (angle pi), where the rotation vector (``log3``) jumps, so a box on it (EmbodiK
    bounds ``log3`` of the relative rotation) cannot hold even while the hands keep their
    relative pose. The frame is turned by the inverse of that start rotation, so the held
    pair :data:`HELD` starts at the identity rotation and both libraries bound the same
    rotation vector, far from pi. The frame has no geometry: the collision model, the
    pairs and the tasks are those of ``robots/dual_arm``. Written once per process into a
    temporary folder (the URDF's geometry is primitives: no mesh paths to resolve).
    """
    if "urdf" not in _DUAL_HELD:
        import tempfile

        model = pin.buildModelFromUrdf(str(DUAL))
        q0 = dual_ready(stackik.RobotModel(DUAL))
        start = relative_pose(model, model.createData(), q0, ("left_tcp", "right_tcp"))
        rpy = " ".join(repr(float(a)) for a in pin.rpy.matrixToRpy(start.rotation.T))
        frame = (
            '  <joint name="right_held_joint" type="fixed">\n'
            '    <parent link="right_tcp"/>\n    <child link="right_held"/>\n'
            f'    <origin xyz="0 0 0" rpy="{rpy}"/>\n  </joint>\n  <link name="right_held"/>\n'
        )
        path = Path(tempfile.mkdtemp(prefix="stackik-dual-held-")) / "dual_arm_held.urdf"
        path.write_text(DUAL.read_text().replace("</robot>", frame + "</robot>"))
        _DUAL_HELD["urdf"] = path
    return _DUAL_HELD["urdf"]


def hold_bounds(start: pin.SE3, rotation: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(E)'s 6-D relative-pose bounds about the held pair's start.

    Args:
        start: The held pair's start relative pose (translation [m]).
        rotation: The library's rotation coordinates at the start [rad].

    Returns:
        Lower and upper bounds: translation +- HOLD_POSITION, rotation +- HOLD_ROTATION.
    """
    centre = np.concatenate([start.translation, rotation])
    step = np.array(3 * [HOLD_POSITION] + 3 * [HOLD_ROTATION])
    return centre - step, centre + step


def held_referee(q0: np.ndarray) -> Callable[[np.ndarray], tuple[float, float]]:
    """(E)'s referee: how far the held pair moved from its pose at ``q0`` (Pinocchio).

    The returned function gives, at q, the largest component of the relative position
    change [m] and of the relative rotation change ``log3(R0^T R)`` [rad]: what both
    libraries bound by HOLD_POSITION and HOLD_ROTATION.
    """
    model = pin.buildModelFromUrdf(str(dual_held_urdf()))
    data = model.createData()
    start = relative_pose(model, data, q0, HELD)

    def change(q: np.ndarray) -> tuple[float, float]:
        T = relative_pose(model, data, q, HELD)
        position = np.abs(T.translation - start.translation).max()
        rotation = np.abs(pin.log3(start.rotation.T @ T.rotation)).max()
        return float(position), float(rotation)

    return change


def stackik_dual() -> Case:
    robot = stackik.RobotModel(dual_held_urdf(), srdf_path=DUAL_SRDF)
    q0 = dual_ready(robot)
    robot.update_kinematics(q0)
    solver = KinematicsSolver(robot, dt=DT)
    hands = _hand_tasks(solver, "tcp")
    rel = robot.get_frame_pose(HELD[0]).actInv(robot.get_frame_pose(HELD[1]))
    lo, hi = hold_bounds(rel, np.zeros(3))  # measured from reference_rotation
    solver.configure_relative_pose_constraint(*HELD, lo, hi, reference_rotation=rel.rotation)
    case = _two_hands(robot, solver, q0, hands, "tcp", dual_targets)
    case.held_change = held_referee(q0)
    return case


SIDES = ("left", "right")


def _hand_tasks(solver: KinematicsSolver, frame: str) -> list:
    """Position tasks on the left and right ``frame`` (priority 0), posture below them."""
    tasks = []
    for side in SIDES:
        t = solver.add_frame_task(side, f"{side}_{frame}", stackik.tasks.TaskType.FRAME_POSITION)
        t.gain = HANDS_GAINS[side]
        tasks.append(t)
    _stackik_posture(solver, 1, HANDS_GAINS)
    return tasks


def _two_hands(
    robot: stackik.RobotModel,
    solver: KinematicsSolver,
    q0: np.ndarray,
    tasks: list,
    frame: str,
    targets_of: Callable[[int, tuple[np.ndarray, np.ndarray]], tuple[np.ndarray, np.ndarray]],
) -> Case:
    """Self-collision on; the left and right ``frame`` tasks follow ``targets_of(i, start)``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stackik.CollisionMarginWarning)
        solver.configure_collision_constraint(MIN_DISTANCE)
    return _stackik_case(robot, solver, q0, _follow(robot, tasks, frame, targets_of), tasks)


def _follow(
    robot: stackik.RobotModel, tasks: list, frame: str, targets_of: Callable
) -> Callable[[int], None]:
    """Set the left and right tasks' targets of step ``i`` from where ``frame`` starts."""
    start = tuple(robot.get_frame_pose(f"{side}_{frame}").translation.copy() for side in SIDES)

    def targets(i: int) -> None:
        for t, p in zip(tasks, targets_of(i, start), strict=True):
            t.set_target_position(p)

    return targets


# -- (F): the Panda of (B) in a world with a walking person -----------------------------
def _example(name: str) -> Any:
    """A module of ``examples/`` (the person of (F) is ``teleop_person.py``'s)."""
    path = ROBOTS.parent / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_PERSON = _example("teleop_person")
#: The person's capsules (radius, length) [m].
BODY: dict[str, tuple[float, float]] = _PERSON.BODY
#: Table (box under and in front of the arm) and wall (behind it): size, centre [m].
TABLE = ((0.6, 1.4, 0.04), (0.6, 0.0, -0.02))
WALL = ((0.05, 2.0, 1.6), (-0.5, 0.0, 0.6))


def person_poses(i: int) -> dict[str, np.ndarray]:
    """The person's capsule poses (4x4, metres) at step ``i``.

    Walking back and forth along y at x = 0.62 m in front of the arm (one pass every 600
    steps), the right hand reaching toward the tool's circle while passing it.
    """
    s = 0.5 - 0.5 * np.cos(2 * np.pi * i / 1200)  # 0 -> 1 -> 0 over 1200 steps
    y = -0.9 + 1.8 * s
    swing = 0.35 * np.sin(2 * np.pi * i / 150)
    reach = float(np.clip(1.0 - abs(y) / 0.5, 0.0, 1.0))
    hip = np.array([0.62, y, 0.02])  # the right hand reaches toward the tool's circle
    return _PERSON.body_poses(
        hip, swing, reach, np.array([-0.24, 0.05, -0.1]), np.array([0.28, y, 0.3])
    )


def world_panda() -> stackik.RobotModel:
    """(B)'s Panda with a table, a wall and the person at step 0 in its world."""
    robot = stackik.RobotModel(PANDA, srdf_path=PANDA_SRDF)
    for name, (size, centre) in (("table", TABLE), ("wall", WALL)):
        T = np.eye(4)
        T[:3, 3] = centre
        robot.add_obstacle(name, coal.Box(*size), T)
    for name, T in person_poses(0).items():
        radius, length = BODY[name]
        robot.add_obstacle(name, coal.Capsule(radius, length), T)
    return robot


def world_distance(robot: stackik.RobotModel, q: np.ndarray) -> float:
    """Smallest robot-obstacle distance [m] at ``q``: coal on Pinocchio's placements."""
    gm = robot.collision_model
    data = robot.model.createData()
    gd = pin.GeometryData(gm)
    pin.updateGeometryPlacements(robot.model, data, gm, gd, q)
    req, res = coal.DistanceRequest(), coal.DistanceResult()
    req.enable_signed_distance = True
    out = np.inf
    for name in robot.get_obstacle_names():
        M = robot.get_obstacle_pose(name)
        To = coal.Transform3s(M.rotation, M.translation)
        shape = robot.world.get_obstacle(name).geometry
        for g, obj in enumerate(gm.geometryObjects):
            Tg = coal.Transform3s(gd.oMg[g].rotation, gd.oMg[g].translation)
            out = min(out, coal.distance(obj.geometry, Tg, shape, To, req, res))
    return float(out)


#: Compute the person's walk in the timed loop between steps (``--live-person``).
LIVE_PERSON = {"on": False}


class Walk:
    """The person's poses by step: computed ahead by :meth:`prepare`, else on demand."""

    def __init__(self) -> None:
        self.table: dict[int, dict[str, np.ndarray]] = {}

    def prepare(self, steps: int) -> None:
        """Compute the poses of steps ``0 .. steps - 1`` (nothing with ``--live-person``)."""
        if not LIVE_PERSON["on"]:
            for i in range(steps):
                if i not in self.table:
                    self.table[i] = person_poses(i)

    def __call__(self, i: int) -> dict[str, np.ndarray]:
        """The poses of step ``i`` (computed now when not ahead)."""
        found = self.table.get(i)
        return person_poses(i) if found is None else found


def stackik_panda_world() -> Case:
    robot = world_panda()
    robot.update_kinematics(Q_PANDA)
    solver = KinematicsSolver(robot, dt=DT)
    ee = solver.add_frame_task("ee", TOOL)
    ee.gain = PANDA_GAINS["ee"]
    _stackik_posture(solver, 1, PANDA_GAINS)
    solver.configure_collision_constraint(MIN_DISTANCE)
    updates: list[float] = []
    walk = Walk()

    def targets(i: int) -> None:
        p, R = panda_target(i, True)
        ee.set_target_pose(p, R)
        poses = walk(i)
        t = time.perf_counter()
        robot.world.set_obstacle_poses(poses, stamp=i * DT)
        updates.append(time.perf_counter() - t)

    case = _stackik_case(robot, solver, Q_PANDA, targets, [ee])
    case.prepare = walk.prepare

    def referee(q: np.ndarray, i: int) -> float:
        # q is the configuration step i reached: the robot at time (i + 1) dt, when the
        # person is where step i + 1 puts it (not where step i saw it, one step earlier).
        robot.world.set_obstacle_poses(walk(i + 1))
        return world_distance(robot, q)

    case.world_distance = referee

    def note() -> str:
        med, p99, _ = stats(updates[-len(case.phases) :])
        return (
            f"           person pose update (10 capsules, one stamped set_obstacle_poses, "
            f"outside the timed step): median {med:.1f} p99 {p99:.1f}"
        )

    case.notes.append(note)
    return case


def no_world_obstacles() -> Case:
    """EmbodiK 0.23.2 cannot load (F): say so instead of running another problem."""
    import embodik

    names = dir(embodik.RobotModel) + dir(embodik.KinematicsSolver)
    if any("obstacle" in n.lower() or "world" in n.lower() for n in names):
        raise NotImplementedError(f"EmbodiK {embodik.__version__} has obstacles: wire them in")
    raise NotImplementedError(f"EmbodiK: no world obstacles in {embodik.__version__}")


# -- (G): the generated 30-joint humanoid ------------------------------------------------
_H30: dict[str, Path] = {}


def humanoid30_files() -> tuple[Path, Path]:
    """The generated URDF and SRDF (written once per process into a temporary folder)."""
    if not _H30:
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="stackik-humanoid30-"))
        _H30["urdf"], _H30["srdf"], _ = humanoid30.write(folder)
    return _H30["urdf"], _H30["srdf"]


def palm_targets(i: int, start: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Both palms circle in front of the chest and come together at the midline [m].

    The palms start 0.8 m apart (y = +-0.4 m); half-way through each 500-step cycle
    their targets are 8 cm apart, closer than the hands' width allows, and pulled 12 cm
    toward the chest, so hand-hand and hand-forearm pairs reach their limit.
    """
    a = 2 * np.pi * i / 500
    close = 0.5 - 0.5 * np.cos(a)  # 0 at the start, 1 half-way: hands near the midline
    out = []
    for p, sign in zip(start, (1.0, -1.0), strict=True):
        shift = np.array(
            [-0.12 * close + 0.04 * np.sin(2 * a), -sign * 0.36 * close, 0.06 * np.sin(a)]
        )
        out.append(p + shift)
    return out[0], out[1]


def stackik_humanoid30() -> Case:
    urdf, srdf = humanoid30_files()
    robot = stackik.RobotModel(urdf, srdf_path=srdf, load_visuals=False)
    q0 = humanoid30.start_configuration(robot)
    robot.update_kinematics(q0)
    solver = KinematicsSolver(robot, dt=DT)
    palms = _hand_tasks(solver, "palm")
    return _two_hands(robot, solver, q0, palms, "palm", palm_targets)


# -- EmbodiK ---------------------------------------------------------------------------
def _embodik_case(robot, solver, q0, set_targets, tasks, pairs: int) -> Case:
    state = {"q": q0.copy()}
    cpu: list[float] = []

    def step(i: int) -> float:
        set_targets(i)
        c, t = time.thread_time(), time.perf_counter()
        res = solver.solve_velocity(state["q"], True)
        elapsed = time.perf_counter() - t
        cpu.append(time.thread_time() - c)
        state["q"] = np.asarray(robot.integrate(state["q"], np.asarray(res.solution), DT))
        return elapsed

    return Case(
        step=step,
        q=lambda: state["q"],
        error=lambda: float(sum(np.linalg.norm(t.get_error()) for t in tasks)),
        pairs=pairs,
        cpu=cpu,
        gains=gain_line({t.name: t.weight for t in solver.tasks}, "EmbodiK task weight = gain"),
    )


def _embodik_posture(solver, q0: np.ndarray, priority: int, gains: dict[str, float]) -> None:
    """EmbodiK's posture task toward ``q0`` at ``priority``; its weight is its gain [1/s]."""
    post = solver.add_posture_task("posture")
    post.priority = priority
    post.weight = gains["posture"]
    post.set_target_configuration(q0)


def _embodik_collision(robot, solver, srdf: Path, ours: stackik.RobotModel) -> int:
    """EmbodiK self-collision on the same pairs as stackik; returns its active pair count."""
    robot.apply_collision_exclusions(geometry_pairs(ours, srdf))
    solver.configure_collision_constraint(MIN_DISTANCE, max_constraints=8)
    return len(robot.get_collision_pair_names())


def embodik_panda(collide: bool) -> Case:
    import embodik

    robot = embodik.RobotModel(str(PANDA), False)
    solver = embodik.KinematicsSolver(robot)
    solver.dt = DT
    ee = solver.add_frame_task("ee", TOOL)
    ee.weight = PANDA_GAINS["ee"]  # EmbodiK's task velocity is weight * error
    _embodik_posture(solver, Q_PANDA, 1, PANDA_GAINS)
    pairs = 0
    if collide:
        ours = stackik.RobotModel(PANDA, srdf_path=PANDA_SRDF)
        pairs = _embodik_collision(robot, solver, PANDA_SRDF, ours)

    def targets(i: int) -> None:
        p, R = panda_target(i, collide)
        ee.set_target_pose(p, R)

    return _embodik_case(robot, solver, Q_PANDA, targets, [ee], pairs)


def embodik_humanoid(collide: bool = False) -> Case:
    import embodik

    robot = embodik.RobotModel(str(HUMANOID), True)
    q0, polygon = humanoid_setup()
    robot.update_configuration(q0)
    solver = embodik.KinematicsSolver(robot)
    solver.dt = DT
    for sole in ("left_sole", "right_sole"):
        t = solver.add_frame_task(sole, sole)
        t.weight = HUMANOID_GAINS[sole]
        T = robot.get_frame_pose(sole)
        t.set_target_pose(np.asarray(T.translation), np.asarray(T.rotation))
    hand = solver.add_frame_task("hand", "right_hand", embodik.TaskType.FRAME_POSITION)
    hand.priority, hand.weight = 1, HUMANOID_GAINS["hand"]
    _embodik_posture(solver, q0, 2, HUMANOID_GAINS)
    solver.configure_com_constraint(polygon, margin=0.1)
    pairs = 0
    if collide:
        ours = stackik.RobotModel(HUMANOID, floating_base=True, srdf_path=HUMANOID_SRDF)
        pairs = _embodik_collision(robot, solver, HUMANOID_SRDF, ours)
    start = np.asarray(robot.get_frame_pose("right_hand").translation).copy()
    return _embodik_case(
        robot, solver, q0, lambda i: hand.set_target_position(hand_target(i, start)), [hand], pairs
    )


def embodik_dual() -> Case:
    import embodik

    urdf = dual_held_urdf()
    ours = stackik.RobotModel(urdf, srdf_path=DUAL_SRDF)
    q0 = dual_ready(ours)
    ours.update_kinematics(q0)
    robot = embodik.RobotModel(str(urdf), False)
    robot.update_configuration(q0)
    solver = embodik.KinematicsSolver(robot)
    solver.dt = DT
    hands = []
    for side in SIDES:
        t = solver.add_frame_task(side, f"{side}_tcp", embodik.TaskType.FRAME_POSITION)
        t.weight = HANDS_GAINS[side]
        hands.append(t)
    _embodik_posture(solver, q0, 1, HANDS_GAINS)
    rel = ours.get_frame_pose(HELD[0]).actInv(ours.get_frame_pose(HELD[1]))
    # EmbodiK bounds log3 of the relative rotation itself (no reference rotation): the
    # held pair starts at the identity, far from log3's jump at pi, so its box and
    # stackik's (about the start rotation) are the same set.
    lo, hi = hold_bounds(rel, pin.log3(rel.rotation))
    solver.configure_relative_pose_constraint(*HELD, lo, hi)
    pairs = _embodik_collision(robot, solver, DUAL_SRDF, ours)
    case = _embodik_case(robot, solver, q0, _follow(ours, hands, "tcp", dual_targets), hands, pairs)
    case.held_change = held_referee(q0)
    return case


def embodik_humanoid30() -> Case:
    import embodik

    urdf, srdf = humanoid30_files()
    ours = stackik.RobotModel(urdf, srdf_path=srdf, load_visuals=False)
    q0 = humanoid30.start_configuration(ours)
    ours.update_kinematics(q0)
    robot = embodik.RobotModel(str(urdf), False)
    robot.update_configuration(q0)
    solver = embodik.KinematicsSolver(robot)
    solver.dt = DT
    palms = []
    for side in SIDES:
        palms.append(solver.add_frame_task(side, f"{side}_palm", embodik.TaskType.FRAME_POSITION))
        palms[-1].weight = HANDS_GAINS[side]
    _embodik_posture(solver, q0, 1, HANDS_GAINS)
    # EmbodiK also watches adjacent bodies' pairs: exclude what stackik does not watch.
    watched = {tuple(p) for p in ours.collision.pair_names()}  # type: ignore[union-attr]
    extra = [p for p in map(tuple, robot.get_collision_pair_names()) if p not in watched]
    robot.apply_collision_exclusions(geometry_pairs(ours, srdf) + extra)
    solver.configure_collision_constraint(MIN_DISTANCE, max_constraints=8)
    pairs = len(robot.get_collision_pair_names())
    return _embodik_case(
        robot, solver, q0, _follow(ours, palms, "palm", palm_targets), palms, pairs
    )


# -- pink ------------------------------------------------------------------------------
def pink_panda(collide: bool) -> Case:
    import pink
    import pinocchio as pin

    robot = stackik.RobotModel(PANDA, srdf_path=PANDA_SRDF)
    model = robot.model
    kwargs = {}
    barriers = []
    if collide:
        gm = robot.collision_model
        kwargs = {"collision_model": gm, "collision_data": pin.GeometryData(gm)}
        barriers = [pink.barriers.SelfCollisionBarrier(len(gm.collisionPairs), d_min=MIN_DISTANCE)]
    config = pink.Configuration(model, model.createData(), Q_PANDA.copy(), **kwargs)
    # pink's gain is the fraction of the error removed in one step (velocity gain x
    # error / dt): the problem's gains [1/s] times DT.
    ee = pink.tasks.FrameTask(
        TOOL, position_cost=1.0, orientation_cost=1.0, gain=PANDA_GAINS["ee"] * DT
    )
    post = pink.tasks.PostureTask(cost=1e-3, gain=PANDA_GAINS["posture"] * DT)
    post.set_target(Q_PANDA)
    state = {"q": Q_PANDA.copy()}
    cpu: list[float] = []

    def step(i: int) -> float:
        p, R = panda_target(i, collide)
        ee.set_target(pin.SE3(R, p))
        c, t = time.thread_time(), time.perf_counter()
        config.update(state["q"])  # pink's kinematics update
        v = pink.solve_ik(
            config, [ee, post], DT, solver="quadprog", barriers=barriers, safety_break=False
        )
        elapsed = time.perf_counter() - t
        cpu.append(time.thread_time() - c)
        state["q"] = pin.integrate(model, state["q"], v * DT)
        return elapsed

    def error() -> float:
        return float(np.linalg.norm(ee.compute_error(config)))

    return Case(
        step=step,
        q=lambda: state["q"],
        error=error,
        pairs=len(robot.collision_model.collisionPairs) if collide else 0,
        cpu=cpu,
        gains=gain_line({"ee": ee.gain / DT, "posture": post.gain / DT}, "pink gain / dt"),
    )


PROBLEMS: dict[str, dict[str, Callable[[], Case]]] = {
    "A": {
        "stackik": lambda: stackik_panda(False),
        "embodik": lambda: embodik_panda(False),
        "pink": lambda: pink_panda(False),
    },
    "B": {
        "stackik": lambda: stackik_panda(True),
        "embodik": lambda: embodik_panda(True),
        "pink": lambda: pink_panda(True),
    },
    "C": {"stackik": stackik_humanoid, "embodik": embodik_humanoid},
    "D": {"stackik": lambda: stackik_humanoid(True), "embodik": lambda: embodik_humanoid(True)},
    "E": {"stackik": stackik_dual, "embodik": embodik_dual},
    "F": {"stackik": stackik_panda_world, "embodik": no_world_obstacles},
    "G": {"stackik": stackik_humanoid30, "embodik": embodik_humanoid30},
}

#: Robot (with the problem's SRDF) whose pair set measures every library's margin.
REFEREE = {"B": (PANDA, PANDA_SRDF, False), "D": (HUMANOID, HUMANOID_SRDF, True)}
REFEREE["E"] = (DUAL, DUAL_SRDF, False)
REFEREE["F"] = REFEREE["B"]


def referee_robot(problem: str) -> stackik.RobotModel | None:
    """The referee model of ``problem`` (None: the problem has no collision)."""
    if problem == "G":
        urdf, srdf = humanoid30_files()
        return stackik.RobotModel(urdf, srdf_path=srdf, load_visuals=False)
    if problem not in REFEREE:
        return None
    urdf, srdf, floating = REFEREE[problem]
    return stackik.RobotModel(urdf, floating_base=floating, srdf_path=srdf)


# -- running ---------------------------------------------------------------------------
def _reset(case: Case, warm: int) -> None:
    """Run ``warm`` untimed steps, then forget what they recorded."""
    for i in range(warm):
        case.step(i)
    case.phases.clear()
    case.queries.clear()
    case.skipped.clear()
    case.cpu.clear()
    case.statuses.clear()
    case.fallbacks = case.active_steps = 0
    case.smallest_world = np.inf
    case.largest_held = (0.0, 0.0)


def _timed(case: Case, i: int, out: dict) -> None:
    """One timed step; its configuration is kept for the referees (after the run)."""
    out["times"].append(case.step(i))
    out["qs"].append((case.q().copy(), i))


def _referee(problem: str, case: Case, qs: list[tuple[np.ndarray, int]]) -> float:
    """Smallest pair distance [m] over the steps' configurations (coal; inf: no referee).

    Run after the timed steps, so that no step starts on caches the referee flushed.
    """
    referee = referee_robot(problem)
    smallest = np.inf
    for q, i in qs:
        if referee is not None:
            referee.update_kinematics(q)
            smallest = min(smallest, referee.compute_min_collision_distance())
        if case.world_distance is not None:
            case.smallest_world = min(case.smallest_world, case.world_distance(q, i))
        if case.held_change is not None:
            moved = case.held_change(q)
            case.largest_held = (
                max(case.largest_held[0], moved[0]),
                max(case.largest_held[1], moved[1]),
            )
    return smallest


def run(problem: str, case: Case, steps: int, warm: int = 50) -> tuple[list[float], float]:
    """Run ``steps`` timed steps after ``warm`` untimed ones.

    Returns the step times and, where the problem has a referee, the smallest pair
    distance over its pairs (coal, computed outside the timed call).
    """
    times = run_interleaved(problem, {"one": case}, steps, steps, warm)
    return times["one"]


def run_interleaved(
    problem: str, cases: dict[str, Case], steps: int, block: int, warm: int = 50
) -> dict[str, tuple[list[float], float]]:
    """:func:`run` for several libraries at once, taking turns every ``block`` steps.

    On a machine whose speed drifts from one second to the next, every library then
    sees the same mix of quiet and loaded stretches.
    """
    out: dict[str, dict] = {lib: {"times": [], "qs": []} for lib in cases}
    for case in cases.values():
        case.prepare(warm + steps)
        _reset(case, warm)
    for start in range(warm, warm + steps, block):
        for lib, case in cases.items():
            for i in range(start, min(start + block, warm + steps)):
                _timed(case, i, out[lib])
    return {lib: (o["times"], _referee(problem, cases[lib], o["qs"])) for lib, o in out.items()}


def phase_line(case: Case) -> str:
    """Median per-phase times [us] of a stackik run."""
    if not case.phases:
        return ""
    keys = {k for p in case.phases for k in p}

    def med(key: str) -> float:
        return 1e3 * float(np.median([p.get(key, 0.0) for p in case.phases]))

    col = med("collision_ms") if "collision_ms" in keys else 0.0
    n = len(case.phases)
    return (
        f"           phases (median us): kinematics {med('kinematics_ms'):.1f}, collision "
        f"{col:.1f}, other assembly {med('problem_ms') - col:.1f}, solve {med('solve_ms'):.1f}; "
        f"QP fallback in {case.fallbacks} of {n} steps ({100 * case.fallbacks / max(n, 1):.0f} %)"
    )


def query_line(case: Case) -> str:
    """Exact distance queries per step of a stackik run with collision."""
    if not case.queries:
        return ""
    q = np.asarray(case.queries)
    return (
        f"           exact queries per step: mean {q.mean():.1f}, median {np.median(q):.0f}, "
        f"max {q.max()}; skipped (time budget) mean {np.mean(case.skipped):.1f}; "
        f"watched pairs {case.pairs}"
    )


def paced(case: Case, steps: int, spin: bool, rate_hz: float = 1000.0) -> tuple[float, float]:
    """Median / p99 [us] of the solve in a loop paced at ``rate_hz`` (sleep or spin)."""
    period = 1.0 / rate_hz
    times = []
    case.prepare(steps)
    deadline = time.perf_counter()
    for i in range(steps):
        deadline += period
        times.append(case.step(i))
        if spin:
            while time.perf_counter() < deadline:
                pass
        else:
            wait = deadline - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
    med, p99, _ = stats(times)
    return med, p99


def result_line(case: Case, smallest: float) -> str:
    """The run's outcome: final task error and the referees' figures (mm, rad)."""
    extra = f"           final task error {case.error():.4f}"
    if np.isfinite(smallest):
        extra += f", pairs {case.pairs}, smallest self distance {1e3 * smallest:.2f} mm"
        if case.phases:
            extra += f", collision rows active in {case.active_steps} steps"
    if case.world_distance is not None:
        extra += f", smallest robot-world distance {1e3 * case.smallest_world:.2f} mm"
    if case.held_change is not None:
        moved, turned = case.largest_held
        extra += (
            f", largest held-pair change {1e3 * moved:.2f} mm / {turned:.4f} rad "
            f"(bounds {1e3 * HOLD_POSITION:g} mm / {HOLD_ROTATION:g} rad)"
        )
    return extra


def report(lib: str, case: Case, base: list, measured: tuple[list[float], float]) -> None:
    """Print one library's result lines for a problem.

    ``base`` holds stackik's median / p99 wall and CPU times [us] of this problem: the
    stackik case fills it, every other library's lines give their ratios to it, and
    without a stackik run (``--libs`` without it, or stackik skipped) none is printed.
    """
    times, smallest = measured
    med, p99, mx = stats(times)
    cmed, cp99, _ = stats(case.cpu) if case.cpu else (np.nan, np.nan, np.nan)
    ratio = cratio = ""
    if lib == "stackik":  # the ratios' base: stackik's figures only (none: no ratios)
        base[:] = [med, p99, cmed, cp99]
    elif base:
        ratio = f"  ({med / base[0]:.2f}x / {p99 / base[1]:.2f}x stackik)"
        cratio = f"  ({cmed / base[2]:.2f}x / {cp99 / base[3]:.2f}x stackik)"
    print(f"  {lib:8s} median {med:8.1f}  p99 {p99:8.1f}  max {mx:9.1f}{ratio}")
    if case.cpu:
        print(f"           thread CPU time: median {cmed:8.1f}  p99 {cp99:8.1f}{cratio}")
    print(result_line(case, smallest))
    if case.gains:
        print(case.gains)
    if case.phases:
        print(phase_line(case))
    if case.queries:
        print(query_line(case))
    if set(case.statuses) - {"SUCCESS"}:  # what the timed steps reported (stackik)
        counts = ", ".join(f"{k} {v}" for k, v in sorted(case.statuses.items()))
        print(f"           statuses: {counts}")
    for note in case.notes:
        print(note())


def _make(lib: str, make: Callable[[], Case]) -> Case | None:
    """The library's case, or None (said) when the library cannot run it."""
    try:
        return make()
    except (ImportError, NotImplementedError) as exc:
        print(f"  {lib:8s} skipped ({exc})")
        return None


def _interleaved(
    name: str, libs: dict[str, Callable[[], Case]], steps: int, block: int, base: list
) -> None:
    """Build every library's case, run them taking turns, then report each."""
    cases = {lib: _make(lib, make) for lib, make in libs.items()}
    ready = {lib: case for lib, case in cases.items() if case is not None}
    print(f"  (the libraries take turns every {block} steps)")
    measured = run_interleaved(name, ready, steps, block)
    for lib, case in ready.items():
        report(lib, case, base, measured[lib])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=list(PROBLEMS))
    parser.add_argument("--paced", action="store_true", help="also run paced at 1 kHz")
    parser.add_argument(
        "--libs", nargs="+", default=None, help="only these libraries (stackik, embodik, pink)"
    )
    parser.add_argument(
        "--interleave",
        type=int,
        default=0,
        metavar="BLOCK",
        help="the libraries take turns every BLOCK steps (0: one after the other)",
    )
    parser.add_argument(
        "--live-person",
        action="store_true",
        help="(F): compute the person's walk between the timed steps (default: before the run)",
    )
    args = parser.parse_args()
    LIVE_PERSON["on"] = args.live_person
    print(
        f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}"
    )
    for name in args.problems:
        print(f"\nproblem ({name}): {args.steps} steps, microseconds per step")
        base: list[float] = []
        libs = {k: v for k, v in PROBLEMS[name].items() if args.libs is None or k in args.libs}
        if args.interleave > 0:
            _interleaved(name, libs, args.steps, args.interleave, base)
        else:
            for lib, make in libs.items():
                case = _make(lib, make)
                if case is not None:
                    report(lib, case, base, run(name, case, args.steps))
        if args.paced:
            for spin in (False, True):
                med, p99 = paced(PROBLEMS[name]["stackik"](), args.steps, spin)
                how = "spin" if spin else "sleep"
                print(f"  paced 1 kHz ({how:5s}) stackik median {med:8.1f}  p99 {p99:8.1f}")


if __name__ == "__main__":
    main()
