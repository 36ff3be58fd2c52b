"""A person walks past a working Panda: the arm yields, then goes back to work.

The 1 kHz :class:`stackik.ControlLoop` drives the Panda's tool around a small circle
above a table (velocity IK with self-collision and world avoidance, then a jerk-limited
joint limiter). A person modelled by ten capsules (torso, head, arms, forearms, thighs,
shins) walks along the table and reaches across it toward the tool; a "sensor" thread
moves the capsules in the robot's world at 200 Hz with time stamps, from which the
collision rows take the person's own velocity. Nothing locks the loop: each tick reads
one snapshot of the world.

At the end it checks the recorded command stream as a safety monitor would: every
commanded configuration against the person and the table, with coal called directly,
never closer than ``min_distance``; and it prints how far the tool gave way and that it
came back to its circle.

Run: ``python examples/teleop_person.py [--seconds N] [--plot out.png] [--headless]``
(``STACKIK_HEADLESS=1`` is ``--headless``: a short run with no window).
"""

from __future__ import annotations

import argparse
import os
import threading
import time
import warnings
from pathlib import Path

import coal
import numpy as np
import pinocchio as pin

import stackik

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
TOOL = "panda_hand_tcp"
RATE_HZ = 1000.0
SENSOR_HZ = 200.0
MIN_DISTANCE = 0.05  # kept from the person and the table [m]
Q_START = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
CIRCLE_CENTRE = np.array([0.45, 0.0, 0.30])
CIRCLE_RADIUS = 0.06

#: The person's capsules: name -> (radius, length) [m].
BODY = {
    "torso": (0.15, 0.45),
    "head": (0.10, 0.08),
    "upper_arm_l": (0.05, 0.28),
    "forearm_l": (0.045, 0.26),
    "upper_arm_r": (0.05, 0.28),
    "forearm_r": (0.045, 0.26),
    "thigh_l": (0.07, 0.40),
    "shin_l": (0.06, 0.40),
    "thigh_r": (0.07, 0.40),
    "shin_r": (0.06, 0.40),
}


def segment(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The pose (4x4) of a capsule from point ``a`` to point ``b`` (its axis is z)."""
    axis = b - a
    z = axis / np.linalg.norm(axis)
    x = np.cross([0.0, 1.0, 0.0], z) if abs(z[1]) < 0.9 else np.cross([1.0, 0.0, 0.0], z)
    x /= np.linalg.norm(x)
    T = np.eye(4)
    T[:3, :3] = np.column_stack([x, np.cross(z, x), z])
    T[:3, 3] = 0.5 * (a + b)
    return T


class Person:
    """A person walking along ``y`` at ``x = 0.95`` m, reaching across the table at mid-way.

    ``poses(t)`` gives the world pose of every capsule at time ``t`` [s]. The walk
    starts at ``y = -1.6`` m after ``start`` seconds and lasts ``duration`` seconds
    (0.64 m/s by default); around its middle the right arm reaches over the table toward
    the robot's tool (the hand ends about 15 cm beyond the circle, at up to 0.55 m/s).
    """

    def __init__(self, start: float = 0.2, duration: float = 5.0) -> None:
        self.start = start
        self.duration = duration

    def _phase(self, t: float) -> tuple[float, float]:
        """(walk progress in [0, 1], reach in [0, 1]) at time ``t``."""
        s = float(np.clip((t - self.start) / self.duration, 0.0, 1.0))
        reach = float(np.clip(1.0 - abs(s - 0.5) / 0.35, 0.0, 1.0))
        return s, 0.5 - 0.5 * np.cos(np.pi * reach)

    def poses(self, t: float) -> dict[str, np.ndarray]:
        """Capsule placements (4x4, metres) of every body part at time ``t`` (s)."""
        s, reach = self._phase(t)
        y = -1.6 + 3.2 * s
        swing = 0.35 * np.sin(2 * np.pi * 1.2 * (t - self.start)) * (0.0 < s < 1.0)
        reach_elbow = np.array([-0.26, 0.05, -0.08])  # the reaching arm: over the table
        reach_hand = CIRCLE_CENTRE + np.array([0.15 + CIRCLE_RADIUS, 0.0, 0.05])
        return body_poses(np.array([0.95, y, 0.05]), swing, reach, reach_elbow, reach_hand)


def body_poses(
    hip: np.ndarray, swing: float, reach: float, reach_elbow: np.ndarray, reach_hand: np.ndarray
) -> dict[str, np.ndarray]:
    """Capsule placements (4x4, metres) of a standing person, by body part.

    Args:
        hip: Hip position [m].
        swing: Arm and leg swing of the walk (0: at rest).
        reach: How far the right arm has gone toward its reach, in [0, 1].
        reach_elbow: Right elbow at full reach, relative to the right shoulder [m].
        reach_hand: Right hand at full reach, in the world [m].
    """
    neck = hip + np.array([0.0, 0.0, 0.55])
    out = {
        "torso": segment(hip, neck),
        "head": segment(neck + np.array([0, 0, 0.14]), neck + np.array([0, 0, 0.22])),
    }
    for side, sign in (("l", 1.0), ("r", -1.0)):
        shoulder = neck + np.array([0.0, 0.2 * sign, -0.05])
        elbow = shoulder + np.array([0.08 * swing * sign, 0.0, -0.27])
        hand = elbow + np.array([0.1 * swing * sign, 0.0, -0.25])
        if side == "r":
            elbow = (1 - reach) * elbow + reach * (shoulder + reach_elbow)
            hand = (1 - reach) * hand + reach * reach_hand
        knee = hip + np.array([0.1 * swing * sign, 0.1 * sign, -0.42])
        foot = knee + np.array([-0.05 * swing * sign, 0.0, -0.4])
        out[f"upper_arm_{side}"] = segment(shoulder, elbow)
        out[f"forearm_{side}"] = segment(elbow, hand)
        out[f"thigh_{side}"] = segment(hip + np.array([0, 0.1 * sign, 0]), knee)
        out[f"shin_{side}"] = segment(knee, foot)
    return out


def build_robot() -> stackik.RobotModel:
    robot = stackik.RobotModel(
        ROBOTS / "panda" / "panda.urdf", srdf_path=ROBOTS / "panda" / "panda.srdf"
    )
    table = np.eye(4)
    table[:3, 3] = [0.7, 0.0, 0.0]
    robot.add_obstacle("table", coal.Box(0.5, 1.6, 0.04), table)
    person = Person()
    for name, T in person.poses(0.0).items():
        radius, length = BODY[name]
        robot.add_obstacle(name, coal.Capsule(radius, length), T)
    return robot


def build_loop(robot: stackik.RobotModel) -> tuple[stackik.ControlLoop, dict]:
    """The loop, and what its ``on_command`` records (configurations, world snapshots)."""
    limits = stackik.load_motion_limits(robot, ROBOTS / "panda" / "motion_limits.yaml")
    solver = stackik.KinematicsSolver(robot, dt=1.0 / RATE_HZ)
    tool = solver.add_frame_task("tool", TOOL, stackik.TaskType.FRAME_POSITION)
    tool.gain = 20.0  # [1/s]
    posture = solver.add_posture_task("posture")
    posture.priority, posture.gain = 1, 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stackik.CollisionMarginWarning)
        solver.configure_collision_constraint(min_distance=MIN_DISTANCE, max_constraints=12)
    limiter = stackik.JointMotionLimiter.from_limits(robot, 1.0 / RATE_HZ, limits)
    record: dict = {"q": [], "world": [], "tool": []}
    collision = solver.get_constraint("collision")

    def on_command(command: stackik.JointCommand) -> None:  # the loop's thread: keep it light
        record["q"].append(command.configuration.copy())
        record["world"].append(collision.last_world_state)

    loop = stackik.ControlLoop(
        solver, Q_START, rate_hz=RATE_HZ, limiter=limiter, target_timeout=None,
        on_command=on_command,
    )  # fmt: skip
    return loop, record


def circle(t: float) -> np.ndarray:
    """The tool's working motion: a circle in a horizontal plane [m]."""
    a = 2 * np.pi * 0.25 * t
    return CIRCLE_CENTRE + CIRCLE_RADIUS * np.array([np.cos(a), np.sin(a), 0.0])


def sensor(
    robot: stackik.RobotModel, person: Person, clock, stop: threading.Event, rate_hz: float
) -> None:
    """Move the person in the robot's world at ``rate_hz``, with time stamps."""
    period = 1.0 / rate_hz
    while not stop.is_set():
        t = clock()
        robot.world.set_obstacle_poses(person.poses(t), stamp=t)
        time.sleep(period)


def closest_distances(robot: stackik.RobotModel, Q: list, worlds: list) -> np.ndarray:
    """Per recorded tick: the smallest robot-obstacle distance, coal on Pinocchio FK."""
    gm = robot.collision_model
    data = robot.model.createData()
    gd = pin.GeometryData(gm)
    req = coal.DistanceRequest()
    req.enable_signed_distance = True
    req.gjk_tolerance = 1e-9
    res = coal.DistanceResult()
    out = np.full(len(Q), np.inf)
    for k, (q, state) in enumerate(zip(Q, worlds, strict=True)):
        if state is None:
            continue
        pin.updateGeometryPlacements(robot.model, data, gm, gd, q)
        for o, obstacle in enumerate(state.layout.obstacles):
            To = coal.Transform3s(state.rotations[o], state.translations[o])
            for g, obj in enumerate(gm.geometryObjects):
                M = gd.oMg[g]
                Tg = coal.Transform3s(M.rotation, M.translation)
                d = coal.distance(obj.geometry, Tg, obstacle.geometry, To, req, res)
                out[k] = min(out[k], d)
    return out


def run(seconds: float, threaded: bool = True, sensor_hz: float = SENSOR_HZ) -> dict:
    """Run the scene; return the robot, the loop, its record and the tool's lag [m].

    The person's clock is the loop's own (its ticks over its rate), so a loop that
    falls behind real time on a loaded machine sees the person it was built for.
    ``threaded=False`` steps the loop back to back in this thread (tests), with the
    sensor thread still moving the person concurrently.
    """
    robot = build_robot()
    loop, record = build_loop(robot)
    person = Person()

    def clock() -> float:
        return loop.ticks / RATE_HZ

    stop = threading.Event()
    moving = threading.Thread(
        target=sensor, args=(robot, person, clock, stop, sensor_hz), daemon=True
    )
    moving.start()
    ticks = int(seconds * RATE_HZ)
    try:
        if threaded:
            loop.start()
            while loop.ticks < ticks:
                loop.set_target("tool", circle(clock()))  # the operator's circle
                time.sleep(0.01)
            loop.stop()
        else:
            for _ in range(ticks):
                loop.set_target("tool", circle(clock()))
                loop.step()
    finally:
        stop.set()
        moving.join()
    lag = []
    kin = robot.create_kinematics()
    for q in record["q"][:: max(1, len(record["q"]) // 400)]:
        kin.update(q)
        p = kin.frame_pose(TOOL).translation - CIRCLE_CENTRE
        lag.append(abs(np.linalg.norm(p[:2]) - CIRCLE_RADIUS) + abs(p[2]))
    return {
        "robot": robot,
        "loop": loop,
        "record": record,
        "lag": np.array(lag),
        "versions": len({id(w) for w in record["world"]}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=None, help="run time (default 6)")
    parser.add_argument("--plot", metavar="PNG", help="draw the clearance over time")
    parser.add_argument("--headless", action="store_true", help="no window; a short run")
    args = parser.parse_args()
    headless = args.headless or os.environ.get("STACKIK_HEADLESS") == "1"
    seconds = args.seconds if args.seconds is not None else (4.5 if headless else 6.0)
    stackik.warmup()  # compile (or load) the kernels before the first tick
    out = run(seconds)
    loop, record, robot = out["loop"], out["record"], out["robot"]
    print(loop.stats.report())
    step = 1  # (every commanded configuration)
    d = closest_distances(robot, record["q"], record["world"])
    print(f"commanded configurations checked with coal: {len(d)}")
    print(
        f"closest robot-world distance: {np.min(d) * 1e3:.2f} mm"
        f" (minimum {MIN_DISTANCE * 1e3:.0f} mm)"
    )
    lag = out["lag"]
    print(
        f"tool off its circle: at most {lag.max() * 1e3:.1f} mm, at the end {lag[-1] * 1e3:.1f} mm"
    )
    if args.plot:
        import matplotlib

        if headless:
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        t = np.arange(len(d)) * step / RATE_HZ
        plt.figure(figsize=(9, 3.5))
        plt.plot(t, 1e3 * d, label="closest robot-world distance")
        plt.axhline(1e3 * MIN_DISTANCE, color="r", ls="--", label="min_distance")
        plt.xlabel("time [s]")
        plt.ylabel("[mm]")
        plt.legend()
        plt.tight_layout()
        plt.savefig(args.plot, dpi=120)
        print(f"plot written to {args.plot}")


if __name__ == "__main__":
    main()
