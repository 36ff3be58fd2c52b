"""Teleoperation of the Panda at 1 kHz: a hand-held device, a jerk-limited command stream.

The loop (:class:`stackik.ControlLoop`) runs in a thread of its own at 1 kHz: velocity IK
with self-collision avoidance on the shipped Panda, then a joint limiter with the Panda's
libfranka limits (``robots/panda/motion_limits.yaml``). A simulated device thread sends
tool poses at 250 Hz: a smooth motion around a point that sometimes jumps elsewhere
(close to the arm's own body at times), with dropouts during which the device sends
nothing and the loop's watchdog stops the arm, then resumes.

At the end it prints the loop's statistics and checks the recorded command stream as
the robot's controller would: the joint positions differentiated at 1 ms against the
velocity, acceleration and jerk limits, the position limits, and the closest distance
between the arm's collision pairs.

Run: ``python examples/teleop.py [--seconds N] [--plot out.png] [--headless]``
(``STACKIK_HEADLESS=1`` is ``--headless``: no window, and 1 s unless ``--seconds``).
The plot needs matplotlib (``pip install stackik[plot]``).
"""

from __future__ import annotations

import argparse
import os
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin

import stackik

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
TOOL = "panda_hand_tcp"
RATE_HZ = 1000.0
DEVICE_HZ = 250.0
Q_START = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])


class Device:
    """A simulated hand-held device: smooth motion, jumps and dropouts, at 250 Hz."""

    def __init__(self, loop: stackik.ControlLoop, seconds: float, seed: int = 0) -> None:
        self.loop = loop
        self.seconds = seconds
        self.rng = np.random.default_rng(seed)
        self.rotation = np.diag([1.0, -1.0, -1.0])  # tool pointing down
        self.sent = 0
        self.dropouts = 0

    def pose(self, t: float, centre: np.ndarray) -> pin.SE3:
        """The hand's pose at time ``t`` [s] around ``centre`` [m]."""
        wobble = np.array([np.sin(2.1 * t), np.sin(1.3 * t), 0.8 * np.cos(1.7 * t)])
        return pin.SE3(self.rotation, centre + 0.12 * wobble)

    def run(self) -> None:
        """Send targets until the time is up (the device's own thread)."""
        period = 1.0 / DEVICE_HZ
        start = time.monotonic()
        centre = np.array([0.45, 0.0, 0.35])
        next_jump, next_dropout = 1.5, 2.2
        while (t := time.monotonic() - start) < self.seconds:
            if t >= next_jump:  # the operator's hand moves somewhere else at once
                centre = self.rng.uniform([-0.05, -0.45, 0.1], [0.65, 0.45, 0.7])
                next_jump = t + self.rng.uniform(1.0, 2.5)
            if t >= next_dropout:  # the device goes silent for a while
                silence = self.rng.uniform(0.2, 0.5)
                self.dropouts += 1
                time.sleep(silence)
                next_dropout = t + silence + self.rng.uniform(1.5, 3.0)
                continue
            self.loop.set_target("tool", self.pose(t, centre))
            self.sent += 1
            time.sleep(period)


def build(record_ticks: int) -> tuple[stackik.ControlLoop, dict[str, np.ndarray]]:
    robot = stackik.RobotModel(
        ROBOTS / "panda" / "panda.urdf", srdf_path=ROBOTS / "panda" / "panda.srdf"
    )
    limits = stackik.load_motion_limits(robot, ROBOTS / "panda" / "motion_limits.yaml")
    robot.update_kinematics(Q_START)
    solver = stackik.KinematicsSolver(robot, dt=1.0 / RATE_HZ)
    tool = solver.add_frame_task("tool", TOOL)
    tool.gain = 20.0  # [1/s]
    posture = solver.add_posture_task("posture")
    posture.priority, posture.gain = 1, 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stackik.CollisionMarginWarning)
        solver.configure_collision_constraint(min_distance=0.02)  # [m]
    limiter = stackik.JointMotionLimiter.from_limits(robot, 1.0 / RATE_HZ, limits)
    record = {"q": np.zeros((record_ticks, robot.nq)), "state": np.zeros(record_ticks, int)}
    count = [0]

    def on_command(command: stackik.JointCommand) -> None:  # the loop's thread: keep it light
        k = count[0]
        if k < record_ticks:
            record["q"][k] = command.configuration
            record["state"][k] = list(stackik.LoopState).index(loop.state)
        count[0] = k + 1

    loop = stackik.ControlLoop(
        solver, Q_START, rate_hz=RATE_HZ, limiter=limiter, target_timeout=0.1,
        on_command=on_command,
    )  # fmt: skip
    record["count"] = count  # type: ignore[assignment]
    return loop, record


def check(loop: stackik.ControlLoop, Q: np.ndarray) -> None:
    """The robot controller's view of the stream: finite differences at 1 ms, distances."""
    dt = loop.period
    lim = loop.limiter
    v = np.diff(Q, axis=0) / dt
    a = np.diff(v, axis=0) / dt
    j = np.diff(a, axis=0) / dt
    worst = [
        np.abs(x).max(axis=0) / limit if len(x) else np.zeros(len(limit))
        for x, limit in ((v, lim.max_velocity), (a, lim.max_acceleration), (j, lim.max_jerk))
    ]
    tol = 1 + 1e-7  # the finite differences of exact samples: rounding only
    ok = all(np.all(w <= tol) for w in worst)
    inside = bool(np.all(Q >= lim.lower) and np.all(Q <= lim.upper))
    robot = loop.solver.robot
    closest = np.inf
    for q in Q[:: max(1, len(Q) // 2000)]:
        robot.update_kinematics(q)
        closest = min(closest, robot.compute_min_collision_distance())
    print(
        f"largest fraction of the limits: velocity {worst[0].max():.3f}, "
        f"acceleration {worst[1].max():.3f}, jerk {worst[2].max():.3f}"
    )
    print(f"libfranka limits respected on every tick: {ok}")
    print(f"joint position limits respected on every tick: {inside}")
    print(f"closest collision pair distance: {closest * 1e3:.2f} mm (minimum 20 mm)")


def plot(loop: stackik.ControlLoop, Q: np.ndarray, path: str, show: bool) -> None:
    """Position, velocity, acceleration and jerk of every joint as a fraction of its limit."""
    import matplotlib

    if not show:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lim = loop.limiter
    dt = loop.period
    t = np.arange(len(Q)) * dt
    v = np.diff(Q, axis=0) / dt
    a = np.diff(v, axis=0) / dt
    j = np.diff(a, axis=0) / dt
    centre, half = 0.5 * (lim.upper + lim.lower), 0.5 * (lim.upper - lim.lower)
    rows = [
        ("position", (Q - centre) / half, t),
        ("velocity", v / lim.max_velocity, t[1:]),
        ("acceleration", a / lim.max_acceleration, t[2:]),
        ("jerk", j / lim.max_jerk, t[3:]),
    ]
    fig, axes = plt.subplots(4, 1, sharex=True, figsize=(11, 10))
    for ax, (name, values, times) in zip(axes, rows, strict=True):
        for k in range(values.shape[1]):
            ax.plot(times, values[:, k], lw=0.7, label=lim.joint_names[k])
        for bound in (-1.0, 1.0):
            ax.axhline(bound, color="k", ls="--", lw=0.8)
        ax.set_ylabel(f"{name}\n(fraction of limit)")
        ax.set_ylim(-1.15, 1.15)
    axes[0].legend(ncol=7, fontsize=7, loc="upper center")
    axes[-1].set_xlabel("time [s]")
    fig.suptitle("Panda teleoperation at 1 kHz: commanded joints, finite differences at 1 ms")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot written to {path}")
    if show:
        plt.show()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=None, help="run time (default 10)")
    parser.add_argument("--plot", metavar="PNG", help="draw the joints and their limits")
    parser.add_argument("--headless", action="store_true", help="no window; 1 s by default")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    headless = args.headless or os.environ.get("STACKIK_HEADLESS") == "1"
    seconds = args.seconds if args.seconds is not None else (1.0 if headless else 10.0)

    loop, record = build(record_ticks=int(seconds * RATE_HZ) + 2000)
    print(f"loaded {loop.solver.robot}")
    print(f"  {loop.solver}")
    stackik.warmup()  # compile (or load) the kernels before the first tick
    device = Device(loop, seconds, args.seed)
    sender = threading.Thread(target=device.run, name="device")
    loop.start()  # 1 kHz in its own thread
    sender.start()
    sender.join()
    time.sleep(0.3)  # the device has stopped: let the watchdog bring the arm to rest
    loop.stop()
    print(loop.stats.report())
    print(f"device: {device.sent} targets sent, {device.dropouts} dropouts")
    n = min(record["count"][0], len(record["q"]))  # type: ignore[index]
    Q = record["q"][:n]
    ticks = {s.name: int((record["state"][:n] == k).sum()) for k, s in enumerate(stackik.LoopState)}
    print(f"ticks per state: {ticks}")
    check(loop, Q)
    if args.plot:
        plot(loop, Q, args.plot, show=not headless)


if __name__ == "__main__":
    main()
