"""Which collision pairs to disable: sampled like MoveIt's setup assistant.

:func:`collision_exclusions` samples random configurations inside the joint limits and,
for every pair of links carrying collision geometry, records the smallest signed
distance between their shapes. Each link pair then falls into one category:

- ``adjacent``: the links are joined by one joint (or rigidly by fixed joints); their
  distance means nothing (their shapes meet at the joint);
- ``default``: in collision at the neutral configuration;
- ``always_colliding``: in collision in at least ``always_fraction`` of the samples;
- ``always_close``: never farther apart than ``close_distance`` and never in collision
  in any sample (parts mounted next to each other). These are the pairs that trap a
  collision constraint: with a ``min_distance`` above their largest distance, no
  configuration is feasible. A pair that is always close but does collide sometimes
  stays ``checked`` (its collisions are real); the collision constraint then lowers its
  minimum distance with a warning (see :class:`~stackik.constraints.CollisionConstraint`);
- ``never_colliding``: never closer than ``never_distance`` in any sample (0: never in
  collision, MoveIt's rule). MoveIt disables these; a collision constraint with a
  margin larger than ``never_distance`` may still need them, so
  :meth:`CollisionExclusionReport.disabled` keeps them unless asked;
- ``checked``: everything else.

The report writes SRDF ``<disable_collisions>`` lines with the category as the reason.
Sampling is reproducible: the same ``samples`` and ``seed`` give the same report.
"""

from __future__ import annotations

import xml.sax.saxutils as saxutils
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pinocchio as pin

from .. import _validate
from ..errors import InvalidInput
from .collision import CollisionState
from .joints import JointKind

if TYPE_CHECKING:
    from .robot import RobotModel

__all__ = ["CATEGORIES", "CollisionExclusionReport", "LinkPairStats", "collision_exclusions"]

#: Categories, in the order they are decided (the first that applies wins).
CATEGORIES = (
    "adjacent",
    "default",
    "always_colliding",
    "always_close",
    "never_colliding",
    "checked",
)
_REASONS = {
    "adjacent": "Adjacent",
    "default": "Default",
    "always_colliding": "Always",
    "always_close": "Close",
    "never_colliding": "Never",
}


@dataclass
class LinkPairStats:
    """Sampled distances of one link pair (smallest over the pair's shapes) [m].

    Attributes:
        link_a: First link.
        link_b: Second link.
        category: One of :data:`CATEGORIES`.
        min_distance: Smallest sampled distance (negative: penetration) [m].
        max_distance: Largest sampled distance [m].
        neutral_distance: Distance at the neutral configuration [m].
        collision_fraction: Share of samples in collision.
    """

    link_a: str
    link_b: str
    category: str
    min_distance: float = float("nan")
    max_distance: float = float("nan")
    neutral_distance: float = float("nan")
    collision_fraction: float = float("nan")


@dataclass
class CollisionExclusionReport:
    """The sampled categories of every link pair with collision geometry.

    Attributes:
        robot_name: Name written in the SRDF.
        samples: Number of random configurations sampled.
        seed: Their seed.
        close_distance: Threshold of ``always_close`` [m].
        never_distance: Threshold of ``never_colliding`` [m].
        pairs: One :class:`LinkPairStats` per link pair.
    """

    robot_name: str
    samples: int
    seed: int
    close_distance: float
    never_distance: float = 0.0
    pairs: list[LinkPairStats] = field(default_factory=list)

    def of(self, category: str) -> list[LinkPairStats]:
        """The pairs of one category."""
        if category not in CATEGORIES:
            raise InvalidInput(f"unknown category {category!r}; use one of {CATEGORIES}")
        return [p for p in self.pairs if p.category == category]

    def disabled(self, include_never: bool = False) -> list[LinkPairStats]:
        """Pairs to disable: adjacent, default, always colliding, always close (and never)."""
        never = _validate.flag(include_never, "include_never")
        skip = {"checked"} if never else {"checked", "never_colliding"}
        return [p for p in self.pairs if p.category not in skip]

    def stats(self, link_a: str, link_b: str) -> LinkPairStats:
        """The statistics of one link pair (either order).

        Raises:
            InvalidInput: No such pair with collision geometry.
        """
        for p in self.pairs:
            if {p.link_a, p.link_b} == {link_a, link_b}:
                return p
        raise InvalidInput(f"no collision pair between {link_a!r} and {link_b!r}")

    def to_srdf(self, include_never: bool = False) -> str:
        """SRDF text with one ``<disable_collisions>`` per disabled pair."""
        include_never = _validate.flag(include_never, "include_never")
        lines = [
            '<?xml version="1.0"?>',
            "<!--",
            f"Self-collision pairs disabled for {self.robot_name}, generated by",
            f"RobotModel.compute_collision_exclusions(samples={self.samples}, seed={self.seed},",
            f"close_distance={self.close_distance}, never_distance={self.never_distance}).",
            "Reasons: Adjacent (joined by a joint), Default (in collision at the neutral",
            "configuration), Always (in collision in almost every sample), Close (never",
            "farther apart than close_distance)"
            + (", Never (never closer than never_distance)." if include_never else "."),
            "-->",
            f"<robot name={saxutils.quoteattr(self.robot_name)}>",
        ]
        for p in self.disabled(include_never):
            a, b = saxutils.quoteattr(p.link_a), saxutils.quoteattr(p.link_b)
            reason = saxutils.quoteattr(_REASONS[p.category])
            lines.append(f"  <disable_collisions link1={a} link2={b} reason={reason}/>")
        lines.append("</robot>")
        return "\n".join(lines) + "\n"

    def write_srdf(self, path: str | Path, include_never: bool = False) -> None:
        """Write :meth:`to_srdf` to a file."""
        Path(path).write_text(self.to_srdf(include_never))

    def summary(self) -> str:
        """One line per category with its count."""
        counts = {c: len(self.of(c)) for c in CATEGORIES}
        return ", ".join(f"{c}: {n}" for c, n in counts.items())


def _link_pairs(robot: RobotModel) -> tuple[list[tuple[str, str]], list[list[tuple[int, int]]]]:
    """Link pairs with geometry on both sides and the geometry pairs of each."""
    col = robot.collision
    assert col is not None
    links = col.link_names
    joint_of = [o.parentJoint for o in col.geom_model.geometryObjects]
    by_pair: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for i in range(len(links)):
        for j in range(i + 1, len(links)):
            if links[i] == links[j] or joint_of[i] == joint_of[j]:
                continue
            key = (links[i], links[j]) if links[i] < links[j] else (links[j], links[i])
            by_pair.setdefault(key, []).append((i, j))
    keys = sorted(by_pair)
    return keys, [by_pair[k] for k in keys]


def _adjacent(robot: RobotModel, geoms: list[tuple[int, int]]) -> bool:
    col = robot.collision
    assert col is not None
    objs = col.geom_model.geometryObjects
    parents = robot.model.parents
    i, j = geoms[0]
    ji, jj = objs[i].parentJoint, objs[j].parentJoint
    return bool(parents[ji] == jj or parents[jj] == ji)


def _distance_model(robot: RobotModel, geometry_pairs: Iterable[tuple[int, int]]):
    """A copy of the collision geometry with the given pairs active, and its state."""
    from .collision import CollisionModel

    col = robot.collision
    assert col is not None
    gm = pin.GeometryModel(col.geom_model)
    gm.removeAllCollisionPairs()
    for i, j in geometry_pairs:
        gm.addCollisionPair(pin.CollisionPair(i, j))
    return CollisionState(CollisionModel(robot.model, gm, reset=False))


def _sample(robot: RobotModel, rng: np.random.Generator, limit_fraction: float) -> np.ndarray:
    """A random configuration; each bounded joint value sits at a limit with the given odds."""
    q = robot.random_configuration(rng)
    if limit_fraction > 0:
        lo, hi = robot.get_joint_limits()
        bounded = np.isfinite(lo) & np.isfinite(hi)
        for info in robot.joint_infos:  # only one-number joints have a meaningful limit
            if info.kind not in (JointKind.REVOLUTE, JointKind.PRISMATIC):
                bounded[info.idx_q : info.idx_q + info.nq] = False
        pick = rng.uniform(size=q.shape[0])
        half = 0.5 * limit_fraction
        q = np.where(bounded & (pick < half), lo, q)
        q = np.where(bounded & (pick > 1.0 - half), hi, q)
    return q


def collision_exclusions(
    robot: RobotModel,
    samples: int = 1000,
    seed: int = 0,
    close_distance: float = 0.03,
    always_fraction: float = 0.95,
    progress: Callable[[int, int], None] | None = None,
    never_distance: float = 0.0,
    limit_fraction: float = 1.0 / 3.0,
) -> CollisionExclusionReport:
    """Sample the robot and sort every link pair into a category (see the module docstring).

    Args:
        robot: The robot (with collision geometry).
        samples: Random configurations inside the joint limits.
        seed: Seed of the samples.
        close_distance: Largest sampled distance under which a pair is ``always_close`` [m].
        always_fraction: Share of colliding samples from which a pair is
            ``always_colliding``.
        progress: Called as ``progress(done, samples)`` every 100 samples.
        never_distance: Smallest sampled distance above which a pair is
            ``never_colliding`` [m] (0: never in collision).
        limit_fraction: Odds that a joint value is drawn at one of its limits instead of
            uniformly (extreme configurations are where pairs meet).

    Raises:
        InvalidInput: No collision geometry, or bad arguments.
    """
    if robot.collision is None:
        raise InvalidInput("the robot has no collision geometry")
    samples = _validate.count(samples, "samples")
    close_distance = _validate.positive_float(close_distance, "close_distance", True)
    never_distance = _validate.positive_float(never_distance, "never_distance", True)
    always_fraction = _validate.in_range(always_fraction, "always_fraction", 0, 1, open_low=True)
    limit_fraction = _validate.in_range(limit_fraction, "limit_fraction", 0.0, 1.0)
    keys, groups = _link_pairs(robot)
    flat = [g for group in groups for g in group]
    owner = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
    state = _distance_model(robot, flat)
    kin = robot.create_kinematics()

    def link_distances(q: np.ndarray) -> np.ndarray:
        kin.set_unchecked(q)
        d = state.distances(kin.data)
        out = np.full(len(groups), np.inf)
        np.minimum.at(out, owner, d)
        return out

    neutral = link_distances(np.clip(robot.neutral_configuration(), *robot.get_joint_limits()))
    rng = np.random.default_rng(seed)
    lo, hi = np.full(len(groups), np.inf), np.full(len(groups), -np.inf)
    hits = np.zeros(len(groups))
    for k in range(int(samples)):
        d = link_distances(_sample(robot, rng, limit_fraction))
        np.minimum(lo, d, out=lo)
        np.maximum(hi, d, out=hi)
        hits += d <= 0.0
        if progress is not None and (k + 1) % 100 == 0:
            progress(k + 1, int(samples))
    report = CollisionExclusionReport(
        robot.model.name, int(samples), int(seed), close_distance, never_distance
    )
    for n, (key, group) in enumerate(zip(keys, groups, strict=True)):
        fraction = float(hits[n] / samples)
        category = _category(
            _adjacent(robot, group),
            neutral[n],
            fraction,
            (lo[n], hi[n]),
            (close_distance, never_distance, always_fraction),
        )
        report.pairs.append(
            LinkPairStats(key[0], key[1], category, lo[n], hi[n], neutral[n], fraction)
        )
    return report


def _category(
    adjacent: bool,
    neutral: float,
    fraction: float,
    sampled: tuple[float, float],
    thresholds: tuple[float, float, float],
) -> str:
    """The first category that applies (see the module docstring)."""
    close_distance, never_distance, always_fraction = thresholds
    lowest, highest = sampled
    if adjacent:
        return "adjacent"
    if neutral <= 0.0:
        return "default"
    if fraction >= always_fraction:
        return "always_colliding"
    if highest < close_distance and fraction == 0.0:
        return "always_close"
    if lowest > never_distance:
        return "never_colliding"
    return "checked"
