"""Benchmark: the 1 kHz teleoperation loop (ControlLoop) against the naive loop a user writes.

Runs, each for ``--ticks`` ticks (default 10^5, 100 s each):

(P) Panda with self-collision avoidance on every SRDF-active pair, the shipped libfranka
    limits: :class:`stackik.ControlLoop` in its own thread at 1 kHz while a device thread
    sends tool poses at 250 Hz (a smooth motion that jumps every 1-2.5 s, near the arm's
    body at times, with dropouts that make the watchdog stop the arm).
(H) The humanoid of ``benchmarks/bench_velocity.py`` problem (C): both soles held, the
    right hand reaching, the CoM over the support polygon, posture; jerk limits 500 times
    the acceleration limits.
(HC) (H) with self-collision avoidance on every pair the humanoid's SRDF leaves active
    (``bench_velocity.py`` problem (D)), 2 cm margin.
(G) The generated 30-joint humanoid of ``benchmarks/humanoid30.py`` (about 900 active
    self-collision pairs, ``bench_velocity.py`` problem (G)): both palms following a
    device that brings them together in front of the chest, posture, self-collision.
(N) The naive loop on (P)'s problem: ``solve_velocity``, integrate, ``time.sleep(dt)``.

Printed per run: ticks, deadline misses (a tick ending after its release plus one
period, plus releases skipped after long overruns), ticks whose compute exceeded the
period, compute median / p99 / max, period jitter p99 and start latency p99, all in
microseconds. Timing depends on the machine and on what else runs on it; run it on a
quiet machine, several times.

Run: ``python benchmarks/bench_teleop.py [--ticks N] [--cpu K] [--priority P] [--spin-us S]
[--only P H HC G N]``. ``--spin-us`` is how long before each release the loop's thread
stops sleeping and spins (the loop's default 300 µs; 1000 spins the whole period, which
keeps the core and its caches warm between ticks at the cost of a busy core).
"""

from __future__ import annotations

import argparse
import platform
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

import stackik

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
PANDA = ROBOTS / "panda" / "panda.urdf"
PANDA_SRDF = ROBOTS / "panda" / "panda.srdf"
HUMANOID = ROBOTS / "humanoid" / "humanoid.urdf"
HUMANOID_SRDF = ROBOTS / "humanoid" / "humanoid.srdf"
DT = 0.001
Q_PANDA = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])


@dataclass(frozen=True)
class Run:
    """How each loop runs: its thread's CPU, SCHED_FIFO priority and spin before a release.

    Attributes:
        ticks: Ticks per run (at 1 kHz).
        cpu: CPU to pin the loop to (None: any).
        prio: SCHED_FIFO priority (None: default scheduling).
        spin_us: ``ControlLoop.start(spin_us=...)`` [µs] (``--spin-us``).
    """

    ticks: int
    cpu: int | None = None
    prio: int | None = None
    spin_us: float = 300.0


def panda_solver() -> tuple[stackik.KinematicsSolver, stackik.MotionLimits]:
    robot = stackik.RobotModel(PANDA, srdf_path=PANDA_SRDF, load_visuals=False)
    limits = stackik.load_motion_limits(robot, ROBOTS / "panda" / "motion_limits.yaml")
    robot.update_kinematics(Q_PANDA)
    solver = stackik.KinematicsSolver(robot, dt=DT)
    solver.add_frame_task("tool", "panda_hand_tcp").gain = 20.0
    posture = solver.add_posture_task("posture")
    posture.priority, posture.gain = 1, 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stackik.CollisionMarginWarning)
        solver.configure_collision_constraint(min_distance=0.02)
    return solver, limits


def panda_pose(t: float, centre: np.ndarray) -> pin.SE3:
    wobble = np.array([np.sin(2.1 * t), np.sin(1.3 * t), 0.8 * np.cos(1.7 * t)])
    return pin.SE3(np.diag([1.0, -1.0, -1.0]), centre + 0.12 * wobble)


def device(loop: stackik.ControlLoop, seconds: float, stop: threading.Event) -> None:
    """A 250 Hz device: smooth motion, jumps, dropouts (the watchdog stops the arm)."""
    rng = np.random.default_rng(0)
    start = time.monotonic()
    centre = np.array([0.45, 0.0, 0.35])
    next_jump, next_dropout = 1.5, 4.0
    while not stop.is_set() and (t := time.monotonic() - start) < seconds:
        if t >= next_jump:
            centre = rng.uniform([-0.05, -0.45, 0.1], [0.65, 0.45, 0.7])
            next_jump = t + rng.uniform(1.0, 2.5)
        if t >= next_dropout:
            silence = rng.uniform(0.2, 0.5)
            time.sleep(silence)
            next_dropout = t + silence + rng.uniform(3.0, 6.0)
            continue
        loop.set_target("tool", panda_pose(t, centre))
        time.sleep(0.004)


def run_loop(loop: stackik.ControlLoop, run: Run, feed):
    """Run ``loop`` in its own thread for ``run.ticks`` ticks while ``feed`` sends targets."""
    stop = threading.Event()
    feeder = threading.Thread(target=feed, args=(loop, run.ticks * DT + 5.0, stop), daemon=True)
    loop.start(cpu=run.cpu, priority=run.prio, spin_us=run.spin_us)
    feeder.start()
    while loop.ticks < run.ticks and loop.is_running:
        time.sleep(0.05)
    loop.stop()
    stop.set()
    feeder.join()
    return loop.stats


def print_stats(name: str, stats: stackik.LoopStats) -> None:
    print(f"\n({name})")
    print("  " + stats.report().replace("\n", "\n  "))


def bench_panda(run: Run) -> None:
    solver, limits = panda_solver()
    limiter = stackik.JointMotionLimiter.from_limits(solver.robot, DT, limits)
    loop = stackik.ControlLoop(solver, Q_PANDA, limiter=limiter)
    stackik.warmup()
    for _ in range(200):  # warm: the first solves load the compiled kernels
        loop.set_target("tool", panda_pose(0.0, np.array([0.45, 0.0, 0.35])))
        loop.step()
    loop.reset(Q_PANDA)
    stats = run_loop(loop, run, device)
    print_stats("P: Panda, self-collision, ControlLoop in its thread", stats)


def humanoid_solver(
    collide: bool = False,
) -> tuple[stackik.KinematicsSolver, np.ndarray, np.ndarray]:
    """bench_velocity.py's problem (C): soles held, the right hand reaching, CoM, posture.

    ``collide``: problem (D), with self-collision on every SRDF-active pair.
    """
    from bench_velocity import humanoid_setup  # the same problem, from its own script

    robot = stackik.RobotModel(HUMANOID, floating_base=True, srdf_path=HUMANOID_SRDF)
    q0, polygon = humanoid_setup()
    robot.update_kinematics(q0)
    solver = stackik.KinematicsSolver(robot, dt=DT)
    for sole in ("left_sole", "right_sole"):
        solver.add_frame_task(sole, sole).gain = 10.0
    hand = solver.add_frame_task("hand", "right_hand", stackik.TaskType.FRAME_POSITION)
    hand.priority, hand.gain = 1, 5.0
    solver.add_posture_task("posture").priority = 2
    solver.configure_com_constraint(polygon, margin=0.1)
    if collide:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", stackik.CollisionMarginWarning)
            solver.configure_collision_constraint(min_distance=0.02)
    start = robot.get_frame_pose("right_hand").translation.copy()
    return solver, q0, start


def humanoid_loop(solver: stackik.KinematicsSolver, q0: np.ndarray) -> stackik.ControlLoop:
    """A ControlLoop with jerk limits of 500 times the acceleration limits [1/s]."""
    robot = solver.robot
    limiter = stackik.JointMotionLimiter(
        robot, DT, max_jerk=500.0 * robot.get_acceleration_limits()
    )
    return stackik.ControlLoop(solver, q0, limiter=limiter)


def bench_humanoid(run: Run, collide: bool = False) -> None:
    solver, q0, start = humanoid_solver(collide)
    loop = humanoid_loop(solver, q0)

    def feed(loop: stackik.ControlLoop, seconds: float, stop: threading.Event) -> None:
        t0 = time.monotonic()
        while not stop.is_set() and (t := time.monotonic() - t0) < seconds:
            a = 2 * np.pi * t / 0.5
            offset = np.array([0.25 + 0.1 * np.sin(a), -0.2, 0.1 * np.cos(a)])
            loop.set_target("hand", start + offset)
            time.sleep(0.004)

    stackik.warmup()
    for _ in range(100):
        loop.set_target("hand", start)
        loop.step()
    loop.reset(q0)
    stats = run_loop(loop, run, feed)
    if collide:
        print_stats("HC: humanoid, CoM polygon, self-collision, ControlLoop in its thread", stats)
    else:
        print_stats("H: humanoid, CoM polygon, ControlLoop in its thread", stats)


def bench_humanoid30(run: Run) -> None:
    """The generated 30-joint humanoid (about 900 self-collision pairs), palms fed at 250 Hz."""
    import tempfile

    import humanoid30
    from bench_velocity import palm_targets  # the same motion as its problem (G)

    with tempfile.TemporaryDirectory() as tmp:
        urdf, srdf, _ = humanoid30.write(Path(tmp))
        robot = stackik.RobotModel(urdf, srdf_path=srdf, load_visuals=False)
    q0 = humanoid30.start_configuration(robot)
    robot.update_kinematics(q0)
    solver = stackik.KinematicsSolver(robot, dt=DT)
    for side in ("left", "right"):
        solver.add_frame_task(side, f"{side}_palm", stackik.TaskType.FRAME_POSITION).gain = 5.0
    solver.add_posture_task("posture").priority = 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stackik.CollisionMarginWarning)
        solver.configure_collision_constraint(min_distance=0.02)
    pairs = len(solver.get_constraint("collision").pair_names())  # type: ignore[union-attr]
    start = tuple(robot.get_frame_pose(f"{s}_palm").translation.copy() for s in ("left", "right"))
    loop = humanoid_loop(solver, q0)

    def feed(loop: stackik.ControlLoop, seconds: float, stop: threading.Event) -> None:
        t0 = time.monotonic()
        while not stop.is_set() and (t := time.monotonic() - t0) < seconds:
            # bench_velocity's 500-step cycle at its 10 ms step: 5 s per cycle
            for side, p in zip(("left", "right"), palm_targets(int(t / 0.01), start), strict=True):
                loop.set_target(side, p)
            time.sleep(0.004)

    stackik.warmup()
    for _ in range(100):
        for side, p in zip(("left", "right"), start, strict=True):
            loop.set_target(side, p)
        loop.step()
    loop.reset(q0)
    stats = run_loop(loop, run, feed)
    print_stats(f"G: 30-joint humanoid, {pairs} self-collision pairs, ControlLoop", stats)


def bench_naive(run: Run) -> None:
    """What a user writes today: solve, integrate, sleep(dt); no limiter, no watchdog.

    Given the same CPU and priority as the loop's thread, for a fair comparison.
    """
    from stackik.control.timing import set_realtime

    cpu, prio, ticks = run.cpu, run.prio, run.ticks
    scheduling = set_realtime(cpu, prio) if (cpu is not None or prio is not None) else ""
    solver, _ = panda_solver()
    robot = solver.robot
    tool = solver.get_task("tool")
    q = Q_PANDA.copy()
    stackik.warmup()
    starts = np.empty(ticks, dtype=np.int64)
    compute = np.empty(ticks)
    rng = np.random.default_rng(0)
    centre = np.array([0.45, 0.0, 0.35])
    t0 = time.monotonic_ns()
    for k in range(ticks):
        start = time.monotonic_ns()
        starts[k] = start
        if k % 1500 == 0:
            centre = rng.uniform([-0.05, -0.45, 0.1], [0.65, 0.45, 0.7])
        tool.set_target_pose(panda_pose(k * DT, centre))
        res = solver.solve_velocity(q)
        q = robot.integrate(q, res.solution, DT)
        compute[k] = (time.monotonic_ns() - start) * 1e-3
        time.sleep(DT)
    periods = np.diff(starts) * 1e-3
    period_ns = round(DT * 1e9)
    ideal = t0 + np.arange(ticks) * period_ns
    misses = int(np.sum(starts - ideal > period_ns))
    overruns = int(np.sum(compute > DT * 1e6))
    print("\n(N: Panda, self-collision, the naive loop: solve_velocity, integrate, sleep(dt))")
    print(
        f"  ticks {ticks}, deadline misses {misses} (ticks starting more than a period late "
        f"on the 1 kHz schedule), ticks whose compute exceeded the period {overruns}"
    )
    print(
        f"  compute per tick: median {np.median(compute):.1f} us, p99 "
        f"{np.percentile(compute, 99):.1f} us, max {compute.max():.1f} us"
    )
    print(
        f"  period: median {np.median(periods):.1f} us, jitter p99 "
        f"{np.percentile(np.abs(periods - 1e3), 99):.1f} us; {ticks} ticks took "
        f"{(starts[-1] - starts[0]) * 1e-9:.2f} s instead of {(ticks - 1) * DT:.2f} s"
    )
    if scheduling:
        print(f"  scheduling: {scheduling}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=100_000)
    parser.add_argument("--cpu", type=int, default=None, help="pin the loop to this CPU")
    parser.add_argument("--priority", type=int, default=None, help="SCHED_FIFO priority")
    parser.add_argument("--spin-us", type=float, default=300.0, help="spin before a release")
    parser.add_argument("--only", nargs="+", default=["P", "H", "HC", "G", "N"])
    args = parser.parse_args()
    run = Run(args.ticks, args.cpu, args.priority, args.spin_us)
    print(
        f"machine: {platform.processor() or platform.machine()}, python "
        f"{platform.python_version()}, {args.ticks} ticks per run at 1 kHz, "
        f"spin {args.spin_us:g} us before each release"
    )
    if "P" in args.only:
        bench_panda(run)
    if "H" in args.only:
        bench_humanoid(run)
    if "HC" in args.only:
        bench_humanoid(run, collide=True)
    if "G" in args.only:
        bench_humanoid30(run)
    if "N" in args.only:
        bench_naive(run)


if __name__ == "__main__":
    main()
