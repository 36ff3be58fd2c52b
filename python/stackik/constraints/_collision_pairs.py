"""The pairs a collision constraint watches, and what the compiled step needs of them.

:func:`build_pairs` turns a :class:`~stackik.model.pipeline.GeometrySet` (robot,
attached objects, obstacles) and the constraint's selection into a :class:`PairSet`:
the geometry index pairs, each pair's minimum distance, the motion levers of the
broadphase, and the column map from Pinocchio's joint Jacobian to the velocity
coordinates. Everything here runs when the constraint is configured or the world's
layout changes, never on a step that changes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from .. import _validate
from ..errors import CollisionGeometryNotFound
from ..model import RobotModel
from ..model.joints import JointKind
from ..model.kinematics import jacobian_columns, support_columns
from ..model.pipeline import ATTACHED, OBSTACLE, ROBOT, GeometrySet
from ._collision_kernel import (
    PF_COLUMNS,
    PF_LOW,
    PF_MIN,
    PF_PENDING,
    PI_EXACT_STEP,
    PI_PROMISE_STEP,
)

__all__ = [
    "PairSet",
    "Saved",
    "build_pairs",
    "joint_columns",
    "name_key",
    "override_ids",
    "pair_levers",
    "unwatched_reason",
]

NamePair = tuple[str, str]


#: A pair's saved minimum [m], pending minimum [m], whether it follows the default, and
#: the default it had [m] (:meth:`PairSet.saved_minimums`).
Saved = tuple[float, float, bool, float]


def _kept_minimum(saved: Saved, default: float) -> tuple[float, float]:
    """A pair's (minimum, pending minimum) [m] restored under a new ``default``.

    A larger override still waiting (``activate_when_clear``) holds the pair at its
    default meanwhile: at the new default, not the one saved (the global minimum raised
    to 50 mm kept such a pair at the old 20 mm), and in effect at once when the new
    default already reaches it.
    """
    minimum, pending, _, old_default = saved
    if not math.isfinite(pending):
        return minimum, pending
    if minimum == old_default:
        minimum = default
    return (pending, math.inf) if pending <= minimum else (minimum, pending)


def name_key(a: str, b: str) -> NamePair:
    """An unordered name pair, as a key (the smaller name first)."""
    return (a, b) if a <= b else (b, a)


def _index_key(a: int, b: int) -> tuple[int, int]:
    """An unordered geometry index pair, as a key."""
    return (a, b) if a <= b else (b, a)


@dataclass
class PairSet:
    """The watched pairs of a collision constraint (see the module docstring).

    Attributes:
        pairs: Geometry indices ``(P, 2)``; the moving (robot or attached) side first.
        robot_index: Index of each pair in the robot's active pair list (-1: a pair
            with an attached object or an obstacle).
        names: Geometry names of each pair.
        default_min: Each pair's default minimum distance [m]: the constraint's, an
            obstacle's own, or a lowered one for a robot pair that can never reach it.
        follows: Whether each pair's minimum is its default (no override).
        pf: Per-pair float state (columns ``PF_*`` of the kernel module).
        pi: Per-pair int state (columns ``PI_*``).
        lever: Motion levers ``(P, nv)`` [m per rad or m].
        reach: Largest distance of a point of each obstacle from its origin [m].
    """

    pairs: np.ndarray
    robot_index: np.ndarray
    names: list[NamePair]
    default_min: np.ndarray
    follows: np.ndarray
    pf: np.ndarray
    pi: np.ndarray
    lever: np.ndarray
    reach: np.ndarray

    def __len__(self) -> int:
        return len(self.pairs)

    def reset_motion(self) -> None:
        """Forget every pair's distance bounds and promises (all are checked next step)."""
        self.pf[:, PF_LOW] = -np.inf
        self.pf[:, 3:7] = 0.0  # exact distance, motion, learned error, promise
        self.pi[:, PI_EXACT_STEP] = -2
        self.pi[:, PI_PROMISE_STEP] = -2
        self.pi[:, 2] = 0

    def saved_minimums(self) -> dict[NamePair, Saved]:
        """Each pair's (minimum, pending minimum, follows-default, default), by name."""
        pf, default = self.pf, self.default_min
        return {
            name_key(*n): (
                float(pf[k, PF_MIN]),
                float(pf[k, PF_PENDING]),
                bool(f),
                float(default[k]),
            )
            for k, (n, f) in enumerate(zip(self.names, self.follows, strict=True))
        }

    def restore_minimums(self, saved: dict[NamePair, Saved]) -> np.ndarray:
        """Put back the minimums of :meth:`saved_minimums` by name; the pairs it lacks.

        Returns:
            Per pair, whether ``saved`` has no entry for it (bool ``(P,)``).
        """
        fresh = np.ones(len(self), dtype=bool)
        for k, n in enumerate(self.names):
            value = saved.get(name_key(*n))
            if value is None:
                continue
            fresh[k] = False
            if not value[2]:
                self.pf[k, PF_MIN], self.pf[k, PF_PENDING] = _kept_minimum(
                    value, self.default_min[k]
                )
                self.follows[k] = False
        return fresh

    def matching(self, ids_a: set[int], ids_b: set[int]) -> np.ndarray:
        """Slots of the pairs with one geometry in ``ids_a`` and the other in ``ids_b``."""
        f, s = self.pairs[:, 0], self.pairs[:, 1]
        ia, ib = np.isin(f, list(ids_a)), np.isin(s, list(ids_b))
        ja, jb = np.isin(s, list(ids_a)), np.isin(f, list(ids_b))
        return np.flatnonzero((ia & ib) | (ja & jb))


def _expand(
    gs: GeometrySet, specs: Sequence[NamePair], strict: bool = True
) -> list[tuple[set[int], set[int]]]:
    """The geometry index sets each name pair stands for.

    Raises:
        CollisionGeometryNotFound: A name no geometry answers to (``strict``); otherwise
            such a name stands for no geometry (an obstacle removed since).
    """
    return [(_ids(gs, a, strict), _ids(gs, b, strict)) for a, b in specs]


def _ids(gs: GeometrySet, name: str, strict: bool) -> set[int]:
    try:
        return set(gs.resolve(name))
    except CollisionGeometryNotFound:
        if strict:
            raise
        return set()


def _select(
    gs: GeometrySet,
    robot_pairs: np.ndarray,
    include: Sequence[NamePair],
    exclude: Sequence[NamePair],
    strict: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Watched pairs and their robot pair indices (``strict``: see :func:`_expand`).

    ``include`` (when given) selects among the robot's own pairs; every pair with an
    attached object or an obstacle is watched. ``exclude`` removes pairs of any origin.
    """
    n_robot = len(robot_pairs)
    robot_ids = np.arange(n_robot)
    if include:
        keep = np.zeros(n_robot, dtype=bool)
        for a, b in _expand(gs, include, strict):
            f, s = robot_pairs[:, 0], robot_pairs[:, 1]
            keep |= (np.isin(f, list(a)) & np.isin(s, list(b))) | (
                np.isin(s, list(a)) & np.isin(f, list(b))
            )
        robot_pairs, robot_ids = robot_pairs[keep], robot_ids[keep]
    pairs = gs.world_pairs(robot_pairs)
    index = np.concatenate([robot_ids, np.full(len(pairs) - len(robot_ids), -1)])
    drop = np.zeros(len(pairs), dtype=bool)
    for a, b in _expand(gs, exclude, strict):
        f, s = pairs[:, 0], pairs[:, 1]
        drop |= (np.isin(f, list(a)) & np.isin(s, list(b))) | (
            np.isin(s, list(a)) & np.isin(f, list(b))
        )
    return pairs[~drop], index[~drop].astype(np.int64)


def _defaults(
    gs: GeometrySet,
    pairs: np.ndarray,
    index: np.ndarray,
    min_distance: float,
    highest: np.ndarray,
) -> tuple[np.ndarray, list[tuple[str, str, float, float]]]:
    """Default minimum of each pair, and the robot pairs whose minimum is lowered.

    A robot pair that can never be ``min_distance`` apart (largest sampled distance below
    it) gets half that distance; NaN when always in collision (not watched).
    """
    out = np.full(len(pairs), float(min_distance))
    lowered: list[tuple[str, str, float, float]] = []
    for k, (a, b) in enumerate(pairs):
        obstacle_min = gs.obstacle_min[b]
        if not np.isnan(obstacle_min):
            out[k] = obstacle_min
        r = index[k]
        if r < 0 or r >= len(highest) or highest[r] >= min_distance:
            continue
        d_max = float(highest[r])
        out[k] = 0.5 * d_max if d_max > 0 else np.nan
        lowered.append((gs.names[a], gs.names[b], d_max, float(out[k])))
    return out, lowered


def joint_columns(robot: RobotModel, gs: GeometrySet) -> tuple[np.ndarray, ...]:
    """``(support, colmap)`` of the row kernel for Pinocchio's joint Jacobian.

    ``data.J`` has a column per extended velocity coordinate (a folded mimic joint has
    its own, already scaled by its multiplier); ``support[g, c]`` says whether column
    ``c`` moves geometry ``g`` (one of its joint's ancestors), and column ``c`` adds to
    velocity coordinate ``colmap[c]`` (a mimic column to its leader's).
    """
    m = robot.model
    colmap = jacobian_columns(m)
    support = np.zeros((gs.size, colmap.size), dtype=np.bool_)
    for g in range(gs.size):
        support[g] = support_columns(m, int(gs.joint[g]))
    return support, colmap


def _geometry_levers(robot: RobotModel, gs: GeometrySet) -> tuple[np.ndarray, ...]:
    """Per-geometry levers ``(n, nv)``, and which joints carry each geometry rigidly.

    ``lever[g, k]`` bounds how far a point of geometry g moves per unit of velocity
    coordinate k: 1 for translations; for rotations the distance from the joint to the
    geometry's bounding sphere, at most the joint placements along the path, the
    farthest travel of the translating joints below it (:func:`_joint_travel`) and the
    sphere's offset and radius. Obstacles have none (their motion is their own).
    """
    m = robot.model
    infos = robot.joint_infos  # by Pinocchio joint id - 1
    shapes = gs.shapes
    center = np.einsum("gij,gj->gi", gs.local_rot, shapes.center) + gs.local_trans
    offset = np.linalg.norm(center, axis=1) + np.where(np.isfinite(shapes.radius), shapes.radius, 0)
    travel = _joint_travel(robot)
    step = [
        float(np.linalg.norm(m.jointPlacements[k].translation)) + travel[k]
        for k in range(m.njoints)
    ]
    n = gs.size
    lever = np.zeros((n, m.nv))
    rigid = np.zeros((n, m.nv), dtype=np.bool_)
    coupled = np.zeros((n, m.nv), dtype=np.bool_)
    for g in range(n):
        if gs.origin[g] == OBSTACLE or gs.joint[g] <= 0:
            continue
        path = list(m.supports[int(gs.joint[g])])[1:]
        for pos, i in enumerate(path):
            reach = sum(step[k] for k in path[pos + 1 :]) + offset[g]
            _add_lever(lever[g], rigid[g], coupled[g], infos[i - 1], reach, travel[i] > 0.0)
    return lever, rigid, coupled


def _farthest(lower: np.ndarray, upper: np.ndarray) -> float:
    """Largest magnitude of a coordinate within its limits [m] (capped at 1e6 m when unbounded)."""
    far = float(np.max(np.maximum(np.abs(lower), np.abs(upper)), initial=0.0))
    return min(far, _validate.MAX_MAGNITUDE) if math.isfinite(far) else _validate.MAX_MAGNITUDE


def _mimic_translates(robot: RobotModel, jid: int) -> bool:
    """Whether a mimic follower translates its child (Pinocchio hides the joint it copies).

    Read from its placement in its parent, ``liMi``, at the neutral configuration and
    with the leader's coordinate moved by 0.1.
    """
    m = robot.model
    d = m.createData()
    q = pin.neutral(m)
    pin.forwardKinematics(m, d, q)
    before = d.liMi[jid].translation.copy()
    q[robot.joint_infos[jid - 1].idx_q] += 0.1
    pin.forwardKinematics(m, d, q)
    return bool(np.linalg.norm(d.liMi[jid].translation - before) > 1e-9)


def _joint_travel(robot: RobotModel) -> list[float]:
    """Per Pinocchio joint id, how far it can carry its child from its placement [m].

    0 for rotations; for a prismatic joint (or a translating mimic follower) the
    farthest value its limits allow, for a planar joint the length of its farthest x and
    y together (1e6 m when unbounded). A revolute joint above such a joint reaches that
    much farther. The bound is the limits', not the configuration's: a prismatic joint
    given a range of hundreds of metres makes the levers of the joints above it that
    long (a looser broadphase, and shorter position-IK steps near obstacles).
    """
    m = robot.model
    lo, hi = m.lowerPositionLimit, m.upperPositionLimit
    out = [0.0] * m.njoints
    for info in robot.joint_infos:
        q = slice(info.idx_q, info.idx_q + 1)
        if info.kind == JointKind.PRISMATIC:
            out[info.pin_id] = _farthest(lo[q], hi[q])
        elif info.kind == JointKind.PLANAR:  # (x and y together: their combined length)
            x = _farthest(lo[info.idx_q : info.idx_q + 1], hi[info.idx_q : info.idx_q + 1])
            y = _farthest(lo[info.idx_q + 1 : info.idx_q + 2], hi[info.idx_q + 1 : info.idx_q + 2])
            out[info.pin_id] = min(math.hypot(x, y), _validate.MAX_MAGNITUDE)
        elif info.kind == JointKind.MIMIC and _mimic_translates(robot, info.pin_id):
            lead = _farthest(lo[q], hi[q])
            out[info.pin_id] = min(
                abs(info.mimic_scaling) * lead + abs(info.mimic_offset), _validate.MAX_MAGNITUDE
            )
    return out


def _add_lever(
    lever: np.ndarray,
    rigid: np.ndarray,
    coupled: np.ndarray,
    info: object,
    reach: float,
    translates: bool = False,
) -> None:
    """Lever of one joint on a geometry's path (``reach``: its distance bound) [m].

    ``translates``: a mimic follower that translates (its lever is its multiplier).
    """
    kind, lo = info.kind, info.idx_v  # type: ignore[attr-defined]
    n = info.nv  # type: ignore[attr-defined]
    if kind == JointKind.MIMIC:
        arm = 1.0 if translates else reach
        lever[lo] += abs(info.mimic_scaling) * arm  # type: ignore[attr-defined]
        coupled[lo] = True
        return
    rigid[lo : lo + n] = True
    if kind == JointKind.PRISMATIC:
        lever[lo : lo + n] += 1.0
    elif kind == JointKind.FREE_FLYER:
        lever[lo : lo + 3] += 1.0
        lever[lo + 3 : lo + 6] += reach
    elif n == 1:  # revolute, bounded or continuous
        lever[lo] += reach
    else:  # planar, spherical, composite: conservative
        lever[lo : lo + n] += reach + 1.0


def pair_levers(robot: RobotModel, gs: GeometrySet, pairs: np.ndarray) -> np.ndarray:
    """Per pair, the levers of the joints that move its geometries relative to each other.

    A joint that carries both geometries (a common ancestor, not through a mimic
    coupling) moves them rigidly together: it cannot change their distance.
    """
    lever, rigid, coupled = _geometry_levers(robot, gs)
    f, s = pairs[:, 0], pairs[:, 1]
    shared = rigid[f] & rigid[s] & ~coupled[f] & ~coupled[s]
    return np.where(shared, 0.0, lever[f] + lever[s])


def obstacle_reach(gs: GeometrySet) -> np.ndarray:
    """Largest distance of a point of each obstacle from its origin [m] (by world slot)."""
    obstacles = np.flatnonzero(gs.origin == OBSTACLE)
    shapes = gs.shapes
    out = np.empty(len(obstacles))
    for g in obstacles:
        out[gs.slot[g]] = float(np.linalg.norm(shapes.center[g]) + shapes.radius[g])
    return out


def build_pairs(
    robot: RobotModel,
    gs: GeometrySet,
    include: Sequence[NamePair],
    exclude: Sequence[NamePair],
    min_distance: float,
    strict: bool = True,
) -> tuple[PairSet, list[tuple[str, str, float, float]]]:
    """The :class:`PairSet` of a geometry set, every pair at its default minimum.

    ``strict``: a name of ``include``/``exclude`` that no geometry answers to raises
    :class:`~stackik.errors.CollisionGeometryNotFound`; otherwise it names nothing (a
    world object removed since the names were checked).

    Returns:
        The pair set, and the robot pairs whose minimum was lowered (for a warning).
    """
    col = robot.collision
    robot_pairs = col.pair_geometries() if col is not None else np.zeros((0, 2), np.int64)
    pairs, index = _select(gs, robot_pairs, include, exclude, strict)
    highest = robot.sampled_pair_distance_range()[1] if (index >= 0).any() else np.zeros(0)
    default, lowered = _defaults(gs, pairs, index, min_distance, highest)
    keep = ~np.isnan(default)
    pairs, index, default = pairs[keep], index[keep], default[keep]
    names = [(gs.names[a], gs.names[b]) for a, b in pairs]
    npairs = len(pairs)
    pf = np.zeros((npairs, PF_COLUMNS))
    pf[:, PF_MIN] = default
    pf[:, PF_PENDING] = np.inf
    follows = np.ones(npairs, dtype=bool)
    ps = PairSet(
        pairs=pairs.astype(np.int64),
        robot_index=index,
        names=names,
        default_min=default,
        follows=follows,
        pf=pf,
        pi=np.zeros((npairs, 3), dtype=np.int64),
        lever=pair_levers(robot, gs, pairs) if npairs else np.zeros((0, robot.nv)),
        reach=obstacle_reach(gs),
    )
    ps.reset_motion()
    return ps, lowered


def override_ids(gs: GeometrySet, name: str, strict: bool = True) -> set[int]:
    """The geometries a per-pair override's name stands for.

    A geometry, link, attached-object or obstacle name (``"*"``: every geometry) names
    those (:meth:`~stackik.model.pipeline.GeometrySet.resolve`); any other non-empty name
    stands for every robot geometry whose link (parent frame) name contains it, as the
    EmbodiK reference matches (``"link2"``: the geometries of ``panda_link2``).

    Raises:
        CollisionGeometryNotFound: Neither (``strict``; otherwise: no geometry).
    """
    try:
        return set(gs.resolve(name))
    except CollisionGeometryNotFound:
        ids = {g for g in range(gs.robot_count) if name and name in gs.links[g]}
        if ids or not strict:
            return ids
        raise


def unwatched_reason(
    gs: GeometrySet,
    robot_pairs: np.ndarray,
    selection: tuple[Sequence[NamePair], Sequence[NamePair]],
    ids_a: set[int],
    ids_b: set[int],
) -> str:
    """Why no watched pair joins a geometry of ``ids_a`` to one of ``ids_b`` (a message).

    Args:
        gs: The geometry set.
        robot_pairs: The robot's active pairs (geometry indices).
        selection: The constraint's ``(include_pairs, exclude_pairs)``.
        ids_a: Geometries of one name.
        ids_b: Geometries of the other.
    """
    wanted = {_index_key(i, j) for i in ids_a for j in ids_b if i != j}
    if not wanted:
        return "both names stand for the same geometry"
    include, exclude = selection

    def kept(inc: Sequence[NamePair], exc: Sequence[NamePair]) -> bool:
        pairs = _select(gs, robot_pairs, inc, exc, strict=False)[0]
        return any(_index_key(int(a), int(b)) in wanted for a, b in pairs)

    if not kept((), ()):
        return _never_paired(gs, wanted)
    if not kept(include, ()):
        return "their robot pairs are not among include_pairs"
    if not kept(include, exclude):
        return "exclude_pairs leaves their pairs out"
    return (
        "their pairs are in collision in every sampled configuration, so they are not "
        "watched (see CollisionMarginWarning)"
    )


def _never_paired(gs: GeometrySet, wanted: set[tuple[int, int]]) -> str:
    """Why geometry pairs are no candidates at all (see ``GeometrySet.world_pairs``)."""
    kinds = {tuple(sorted((int(gs.origin[a]), int(gs.origin[b])))) for a, b in wanted}
    reasons = []
    if (ROBOT, ROBOT) in kinds:
        reasons.append(
            "their robot geometries are not an active pair of the robot (the same or "
            "adjacent links, or disabled by the SRDF or apply_collision_exclusions)"
        )
    if any(ATTACHED in k for k in kinds):
        reasons.append(
            "an attached object is not paired with the body that carries it (the links "
            "on its frame's joint) nor with its allowed_links"
        )
    if (OBSTACLE, OBSTACLE) in kinds:
        reasons.append("obstacles are not paired with each other")
    return "; ".join(reasons) or "they are no candidate pair"
