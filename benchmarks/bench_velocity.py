"""Benchmark: one velocity-IK step (kinematics update included), stackik vs EmbodiK vs pink.

Problems, all on robots shipped in ``robots/`` and run in this one process:

(A) Panda: frame task on ``panda_hand_tcp`` following a moving target (priority 0),
    posture task below it (priority 1), joint position and velocity limits.
(B) The same with self-collision avoidance on every pair the SRDF leaves active; the
    target passes close to the robot's base, so collision rows are active for part of
    the run.
(C) Humanoid on a floating base (37 DoF): both sole frames held (priority 0), the right
    hand reaching forward and sideways (priority 1), the CoM kept over the support
    polygon of the two feet, posture (priority 2).
(D) (C) with self-collision avoidance on every pair the humanoid's SRDF leaves active.
(E) Dual arm (14 DoF + torso): both hands following moving targets (priority 0), a
    relative-pose constraint that keeps the hands' relative pose within +-2 cm / +-0.1
    rad of the start (a held object), self-collision avoidance, posture (priority 1).
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

Fair pairs: every library checks the same collision pairs. The SRDFs name links;
EmbodiK's ``apply_collision_exclusions`` matches geometry names, so the link pairs are
expanded to geometry names for it (given link names it would silently disable
nothing). Each library's active pair count, the steps with collision rows active
(stackik), the final task error and the smallest pair distance over the run (coal,
the same pair set for every library) are printed so the runs can be compared.

Printed per library: median / p99 / max microseconds per solve call (the library's
kinematics update included; target setting and integration outside), the ratio of each
peer's median and p99 to stackik's; the same calls' thread CPU time
(``time.thread_time``: on a shared machine the wall times include the slices other
processes held the core, the CPU times do not; work a library hands to other threads is
not in them); for stackik the per-phase medians (kinematics,
collision rows, other assembly, SNS solve) and how many steps needed the exact QP
fallback. For every problem with collision: the mean (and largest) number of exact
distance queries per step (the constraint's ``exact_queries``), the mean number of
queries skipped by the time budget (``skipped_queries``), the watched pairs and the QP
fallback rate (steps whose ``fallback_levels`` is not empty). ``--paced`` also runs
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


def stackik_panda(collide: bool) -> Case:
    robot = stackik.RobotModel(PANDA, srdf_path=PANDA_SRDF)
    robot.update_kinematics(Q_PANDA)
    solver = KinematicsSolver(robot, dt=DT)
    ee = solver.add_frame_task("ee", TOOL)
    ee.gain = 10.0
    solver.add_posture_task("posture").priority = 1
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
        solver.add_frame_task(sole, sole).gain = 10.0
    hand = solver.add_frame_task("hand", "right_hand", stackik.tasks.TaskType.FRAME_POSITION)
    hand.priority, hand.gain = 1, 5.0
    solver.add_posture_task("posture").priority = 2
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


def stackik_dual() -> Case:
    robot = stackik.RobotModel(DUAL, srdf_path=DUAL_SRDF)
    q0 = dual_ready(robot)
    robot.update_kinematics(q0)
    solver = KinematicsSolver(robot, dt=DT)
    hands = _hand_tasks(solver, "tcp")
    rel = robot.get_frame_pose("left_tcp").actInv(robot.get_frame_pose("right_tcp"))
    lo = np.concatenate([rel.translation - 0.02, [-0.1, -0.1, -0.1]])
    hi = np.concatenate([rel.translation + 0.02, [0.1, 0.1, 0.1]])
    solver.configure_relative_pose_constraint(
        "left_tcp", "right_tcp", lo, hi, reference_rotation=rel.rotation
    )
    return _two_hands(robot, solver, q0, hands, "tcp", dual_targets)


SIDES = ("left", "right")


def _hand_tasks(solver: KinematicsSolver, frame: str) -> list:
    """Position tasks on the left and right ``frame`` (priority 0), posture below them."""
    tasks = []
    for side in SIDES:
        t = solver.add_frame_task(side, f"{side}_{frame}", stackik.tasks.TaskType.FRAME_POSITION)
        t.gain = 5.0
        tasks.append(t)
    solver.add_posture_task("posture").priority = 1
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
    ee.gain = 10.0
    solver.add_posture_task("posture").priority = 1
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
        robot.world.set_obstacle_poses(walk(i))  # the person where step i saw it
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
    )


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
    ee.weight = 1.0
    post = solver.add_posture_task("posture")
    post.priority = 1
    post.set_target_configuration(Q_PANDA)
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
        T = robot.get_frame_pose(sole)
        t.set_target_pose(np.asarray(T.translation), np.asarray(T.rotation))
    hand = solver.add_frame_task("hand", "right_hand", embodik.TaskType.FRAME_POSITION)
    hand.priority = 1
    post = solver.add_posture_task("posture")
    post.priority = 2
    post.set_target_configuration(q0)
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

    ours = stackik.RobotModel(DUAL, srdf_path=DUAL_SRDF)
    q0 = dual_ready(ours)
    ours.update_kinematics(q0)
    robot = embodik.RobotModel(str(DUAL), False)
    robot.update_configuration(q0)
    solver = embodik.KinematicsSolver(robot)
    solver.dt = DT
    hands = []
    for side in ("left", "right"):
        t = solver.add_frame_task(side, f"{side}_tcp", embodik.TaskType.FRAME_POSITION)
        hands.append(t)
    post = solver.add_posture_task("posture")
    post.priority = 1
    post.set_target_configuration(q0)
    rel = ours.get_frame_pose("left_tcp").actInv(ours.get_frame_pose("right_tcp"))
    # EmbodiK measures rotation bounds from the identity: the start rotation's vector.
    import pinocchio as pin

    w = pin.log3(rel.rotation)
    lo = np.concatenate([rel.translation - 0.02, w - 0.1])
    hi = np.concatenate([rel.translation + 0.02, w + 0.1])
    solver.configure_relative_pose_constraint("left_tcp", "right_tcp", lo, hi)
    pairs = _embodik_collision(robot, solver, DUAL_SRDF, ours)
    return _embodik_case(robot, solver, q0, _follow(ours, hands, "tcp", dual_targets), hands, pairs)


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
    for side in ("left", "right"):
        palms.append(solver.add_frame_task(side, f"{side}_palm", embodik.TaskType.FRAME_POSITION))
    post = solver.add_posture_task("posture")
    post.priority = 1
    post.set_target_configuration(q0)
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
    ee = pink.tasks.FrameTask(TOOL, position_cost=1.0, orientation_cost=1.0, gain=1.0)
    post = pink.tasks.PostureTask(cost=1e-3)
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


def report(lib: str, case: Case, base: list, measured: tuple[list[float], float]) -> None:
    times, smallest = measured
    med, p99, mx = stats(times)
    cmed, cp99, _ = stats(case.cpu) if case.cpu else (np.nan, np.nan, np.nan)
    ratio = cratio = ""
    if not base:
        base.extend([med, p99, cmed, cp99])
    else:
        ratio = f"  ({med / base[0]:.2f}x / {p99 / base[1]:.2f}x stackik)"
        cratio = f"  ({cmed / base[2]:.2f}x / {cp99 / base[3]:.2f}x stackik)"
    print(f"  {lib:8s} median {med:8.1f}  p99 {p99:8.1f}  max {mx:9.1f}{ratio}")
    if case.cpu:
        print(f"           thread CPU time: median {cmed:8.1f}  p99 {cp99:8.1f}{cratio}")
    extra = f"           final task error {case.error():.4f}"
    if np.isfinite(smallest):
        extra += f", pairs {case.pairs}, smallest self distance {1e3 * smallest:.2f} mm"
        if case.phases:
            extra += f", collision rows active in {case.active_steps} steps"
    if case.world_distance is not None:
        extra += f", smallest robot-world distance {1e3 * case.smallest_world:.2f} mm"
    print(extra)
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
