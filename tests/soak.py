"""Closed-loop soak runs, checked by independent Pinocchio / coal computations.

Each run integrates ``solve_velocity`` for many 1 ms steps toward targets that jump to
a new random place every couple of seconds, and counts violations with computations
that share nothing with the solver: a Pinocchio model, data and geometry data built
here from the URDF (and SRDF), joint limits read from that model, distances from
``pinocchio.computeDistances`` (coal), the CoM from ``pinocchio.centerOfMass``.

Run as a script for the figures of ``docs/reliability.md``::

    python tests/soak.py --steps 1000000
"""

from __future__ import annotations

import argparse
import dataclasses
import time
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin

from stackik import CollisionMarginWarning, KinematicsSolver, RobotModel
from stackik.tasks import TaskType

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
DT = 1e-3
#: Slack of the limit checks: float rounding of the integration, not a tolerance on the
#: solver [rad, m, rad/s].
EPS = 1e-9


#: A stall (NO_PROGRESS) is a step whose joint velocities are all within this [rad/s].
STALL_STEP = 1e-12


@dataclasses.dataclass
class SoakReport:
    """What a soak run counted (violations are steps; distances in m)."""

    robot: str
    steps: int
    position_limit_violations: int = 0
    velocity_limit_violations: int = 0
    collision_violations: int = 0
    com_violations: int = 0
    non_finite: int = 0
    #: NO_PROGRESS steps that moved (a stall is a zero step by definition: must stay 0).
    moving_stalls: int = 0
    statuses: dict[str, int] = dataclasses.field(default_factory=dict)
    smallest_margin: float = np.inf
    seconds: float = 0.0

    def violations(self) -> int:
        return (
            self.position_limit_violations
            + self.velocity_limit_violations
            + self.collision_violations
            + self.com_violations
            + self.non_finite
            + self.moving_stalls
        )

    def line(self) -> str:
        return (
            f"{self.robot}: {self.steps} steps in {self.seconds:.0f} s; violations: position "
            f"{self.position_limit_violations}, velocity {self.velocity_limit_violations}, "
            f"collision {self.collision_violations}, CoM {self.com_violations}, non-finite "
            f"{self.non_finite}, moving stalls {self.moving_stalls}; smallest margin "
            f"{self.smallest_margin * 1e3:.3f} mm; "
            f"statuses {self.statuses}"
        )


class IndependentChecker:
    """Limits, velocities and distances recomputed from the URDF without stackik."""

    def __init__(self, urdf: Path, srdf: Path | None, floating: bool) -> None:
        root = pin.JointModelFreeFlyer() if floating else None
        self.model = (
            pin.buildModelFromUrdf(str(urdf), root) if root else pin.buildModelFromUrdf(str(urdf))
        )
        self.data = self.model.createData()
        self.geom = pin.buildGeomFromUrdf(
            self.model, str(urdf), pin.GeometryType.COLLISION, package_dirs=[str(urdf.parent)]
        )
        self.lower = self.model.lowerPositionLimit
        self.upper = self.model.upperPositionLimit
        self.vmax = self.model.velocityLimit.copy()
        self.scalar = np.array(
            [j.nq == 1 and j.shortname() != "JointModelFreeFlyer" for j in self.model.joints[1:]]
        )
        self.pairs: list[tuple[int, int]] = []
        self.minimum = np.zeros(0)
        self.gdata: pin.GeometryData | None = None

    def watch(self, pairs: list[tuple[str, str, float]]) -> None:
        """Watch these geometry pairs with these minimum distances [m]."""
        self.geom.removeAllCollisionPairs()
        for a, b, _ in pairs:
            self.geom.addCollisionPair(
                pin.CollisionPair(self.geom.getGeometryId(a), self.geom.getGeometryId(b))
            )
        self.minimum = np.array([d for _, _, d in pairs])
        self.gdata = pin.GeometryData(self.geom)

    def limits(self, q: np.ndarray) -> bool:
        idx = [j.idx_q for j, s in zip(self.model.joints[1:], self.scalar, strict=True) if s]
        v = q[idx]
        return bool(np.all(v >= self.lower[idx] - EPS) and np.all(v <= self.upper[idx] + EPS))

    def velocity(self, dq: np.ndarray) -> bool:
        with np.errstate(over="ignore"):  # a free-flyer's limits are the largest double
            return bool(np.all(np.abs(dq) <= self.vmax * (1 + EPS) + EPS))

    def margin(self, q: np.ndarray) -> float:
        """Smallest ``distance - minimum`` over the watched pairs [m]."""
        if self.gdata is None:
            return np.inf
        pin.computeDistances(self.model, self.data, self.geom, self.gdata, q)
        d = np.array([r.min_distance for r in self.gdata.distanceResults])
        return float(np.min(d - self.minimum))

    def com_xy(self, q: np.ndarray) -> np.ndarray:
        return pin.centerOfMass(self.model, self.data, q)[:2].copy()


def _polygon_margin(p: np.ndarray, poly: np.ndarray) -> float:
    """Signed distance of ``p`` inside a counter-clockwise convex polygon [m]."""
    edges = np.roll(poly, -1, axis=0) - poly
    normals = np.stack([edges[:, 1], -edges[:, 0]], axis=1)
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    return float(np.min(-np.sum((p - poly) * normals, axis=1)))


def _record(report: SoakReport, res, q: np.ndarray, checker: IndependentChecker) -> None:
    report.statuses[res.status.name] = report.statuses.get(res.status.name, 0) + 1
    if res.status.name == "NO_PROGRESS" and np.abs(res.solution).max() > STALL_STEP:
        report.moving_stalls += 1
    if not (np.isfinite(res.solution).all() and np.isfinite(q).all()):
        report.non_finite += 1
    if not checker.velocity(res.solution):
        report.velocity_limit_violations += 1
    if not checker.limits(q):
        report.position_limit_violations += 1


def soak_panda(steps: int, seed: int = 0, min_distance: float = 0.02) -> SoakReport:
    """Panda with self-collision avoidance; the tool chases random targets near the body."""
    urdf, srdf = ROBOTS / "panda" / "panda.urdf", ROBOTS / "panda" / "panda.srdf"
    robot = RobotModel(urdf, srdf_path=srdf, load_visuals=False)
    q = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
    solver = KinematicsSolver(robot, dt=DT)
    ee = solver.add_frame_task("ee", "panda_hand_tcp")
    ee.gain = 20.0
    solver.add_posture_task("posture").priority = 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionMarginWarning)
        solver.configure_collision_constraint(min_distance)
    col = solver.get_constraint("collision")
    override = dict(col.pair_min_distance_overrides())
    checker = IndependentChecker(urdf, srdf, floating=False)
    checker.watch([(a, b, override.get(f"{a}|{b}", min_distance)) for a, b in col.pair_names()])
    rng = np.random.default_rng(seed)
    report = SoakReport("panda + self-collision", steps)
    t0 = time.perf_counter()
    for k in range(steps):
        if k % 2000 == 0:  # a new target every 2 s: near the body, any orientation
            p = rng.uniform([-0.3, -0.6, 0.0], [0.7, 0.6, 0.9])
            ee.set_target_pose(pin.SE3(pin.exp3(rng.normal(size=3)), p))
        res = solver.solve_velocity(q)
        q = robot.integrate(q, res.solution, DT)
        _record(report, res, q, checker)
        margin = checker.margin(q)
        report.smallest_margin = min(report.smallest_margin, margin)
        report.collision_violations += margin < -EPS
    report.seconds = time.perf_counter() - t0
    return report


def _humanoid_start(robot: RobotModel) -> tuple[np.ndarray, np.ndarray]:
    """Knees bent, and the support polygon (both soles' corners, counter-clockwise)."""
    q = robot.neutral_configuration()
    for name, v in (("hip_pitch", -0.3), ("knee", 0.6), ("ankle_pitch", -0.3)):
        for side in ("left", "right"):
            q[robot.get_joint_config_index(f"{side}_{name}_joint")] = v
    kin = robot.create_kinematics(q)
    corners = [
        kin.frame_pose(sole).act(np.array([dx, dy, 0.0]))[:2]
        for sole in ("left_sole", "right_sole")
        for dx in (-0.1, 0.1)
        for dy in (-0.05, 0.05)
    ]
    pts = np.array(corners)
    hull = [pts[i] for i in _hull(pts)]
    return q, np.array(hull)


def _hull(pts: np.ndarray) -> list[int]:
    """Indices of the convex hull, counter-clockwise (gift wrapping on a few points)."""
    start = int(np.lexsort((pts[:, 1], pts[:, 0]))[0])
    out, cur = [], start
    while True:
        out.append(cur)
        nxt = (cur + 1) % len(pts)
        for j in range(len(pts)):
            a, b = pts[nxt] - pts[cur], pts[j] - pts[cur]
            if a[0] * b[1] - a[1] * b[0] < 0:
                nxt = j
        cur = nxt
        if cur == start:
            return out


def soak_humanoid(steps: int, seed: int = 0) -> SoakReport:
    """Floating-base humanoid, soles held, a hand chasing targets, CoM over the polygon."""
    urdf = ROBOTS / "humanoid" / "humanoid.urdf"
    robot = RobotModel(urdf, floating_base=True, load_visuals=False)
    q, polygon = _humanoid_start(robot)
    solver = KinematicsSolver(robot, dt=DT)
    for sole in ("left_sole", "right_sole"):
        solver.add_frame_task(sole, sole).gain = 10.0
    hand = solver.add_frame_task("hand", "right_hand", TaskType.FRAME_POSITION)
    hand.priority, hand.gain = 1, 5.0
    solver.add_posture_task("posture").priority = 2
    solver.configure_com_constraint(polygon, margin=0.1)
    solver.kinematics.update(q)
    start = solver.kinematics.frame_pose("right_hand").translation.copy()
    checker = IndependentChecker(urdf, None, floating=True)
    rng = np.random.default_rng(seed)
    report = SoakReport("humanoid + CoM polygon", steps)
    t0 = time.perf_counter()
    for k in range(steps):
        if k % 2000 == 0:  # far targets too: the CoM constraint must hold the body back
            hand.set_target_position(start + rng.uniform([-0.2, -0.8, -0.6], [0.9, 0.4, 0.4]))
        res = solver.solve_velocity(q)
        q = robot.integrate(q, res.solution, DT)
        _record(report, res, q, checker)
        margin = _polygon_margin(checker.com_xy(q), polygon)
        report.smallest_margin = min(report.smallest_margin, margin)
        report.com_violations += margin < -EPS
    report.seconds = time.perf_counter() - t0
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--robots", nargs="+", default=["panda", "humanoid"])
    args = parser.parse_args()
    for name in args.robots:
        run = soak_panda if name == "panda" else soak_humanoid
        print(run(args.steps, args.seed).line(), flush=True)


if __name__ == "__main__":
    main()
