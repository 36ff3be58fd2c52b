"""Regenerate the shipped SRDF files with ``RobotModel.compute_collision_exclusions``.

    python robots/tools/srdf.py [panda ur5 dual_arm humanoid planar_arm] [--check]

Each robot is sampled (30 000 configurations, seed 0, a third of the joint values at a
limit) and its SRDF lists the pairs that are adjacent, in collision at the neutral
configuration, always in collision, always closer than 3 cm without ever colliding
(mounted parts: a collision margin could never hold for them), or never closer than
1 cm (checking them buys nothing for margins up to 1 cm).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROBOTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROBOTS.parent / "python"))

from stackik import RobotModel  # noqa: E402

SAMPLES = 30_000
CLOSE_DISTANCE = 0.03
NEVER_DISTANCE = 0.01


def load(name: str) -> RobotModel:
    """A shipped robot, without its SRDF."""
    if name == "planar_arm":
        return RobotModel.from_xacro(ROBOTS / name / "planar_arm.urdf.xacro")
    return RobotModel(ROBOTS / name / f"{name}.urdf", floating_base=name == "humanoid")


def main() -> None:
    """Regenerate (or with --check, report) the SRDF of each named robot."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="report only, write nothing")
    parser.add_argument(
        "robots",
        nargs="*",
        default=["panda", "ur5", "dual_arm", "humanoid", "planar_arm", "opw_arm", "spherical_arm"],
    )
    args = parser.parse_args()
    for name in args.robots:
        t0 = time.perf_counter()
        report = load(name).compute_collision_exclusions(
            samples=SAMPLES, seed=0, close_distance=CLOSE_DISTANCE, never_distance=NEVER_DISTANCE
        )
        risky = [
            p
            for p in report.disabled(True)
            if p.category in ("always_close", "never_colliding") and p.collision_fraction > 0
        ]
        print(f"{name}: {report.summary()} ({time.perf_counter() - t0:.1f} s)")
        for p in risky:
            print(f"  disabled but collides in {100 * p.collision_fraction:.1f} %: {p}")
        if not args.check:
            report.write_srdf(ROBOTS / name / f"{name}.srdf", include_never=True)


if __name__ == "__main__":
    main()
