"""The collision pipeline's geometry: the robot, its attached objects and the world, in one table.

A :class:`GeometrySet` lists every collision geometry an owner (a collision constraint,
a configuration checker) must consider, in three blocks:

1. the robot's collision geometries, in the order of its ``GeometryModel``;
2. the attached objects of its world (each on a robot link);
3. the world's obstacles.

For each geometry it keeps the joint that carries it (-1 for an obstacle), its fixed
placement in that joint's frame, its shape in the kernel encoding of
:mod:`stackik.geometry` and the support points of its contact patches. Robot-robot and
robot-world pairs are then one list to the compiled kernels; only their origin differs.

A :class:`CollisionPipeline` is one owner's working copy: the set (rebuilt when the
robot's pair list, its frames or the world's layout change), the world placements of
every geometry, and exact distances of any pairs, computed by compiled code (coal only
for exact triangle meshes). It needs no ``GeometryData``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import coal
import numpy as np
import pinocchio as pin

from .. import _validate
from .._validate import check_out, shape_of
from ..errors import CollisionGeometryNotFound, InvalidInput, ShapeError
from ..geometry import MESH, ShapeTable
from ..geometry.kernels import batch_distance
from ._pipeline_kernel import place_geometries, place_one
from .world import World, WorldLayout, WorldState

if TYPE_CHECKING:
    from .robot import RobotModel

__all__ = [
    "ATTACHED",
    "OBSTACLE",
    "ROBOT",
    "CollisionPipeline",
    "CollisionWatch",
    "GeometrySet",
    "has_movers",
    "place_geometries",
    "place_one",
    "world_watch",
]

#: Origin of a geometry: the robot's own, an attached object, a world obstacle.
ROBOT, ATTACHED, OBSTACLE = 0, 1, 2

#: Support points per cylinder or cone rim (the rim between two points is at most
#: ``r (1 - cos(pi / n))`` closer: 1.9 % of the radius for 16).
RIM_POINTS = 16


def support_points(geometry: Any) -> tuple[np.ndarray, float]:
    """Local support points of a shape for contact-patch rows, and the radius along the normal.

    Box corners, cylinder and cone rims (and the apex), capsule segment ends (radius
    added), convex hull vertices; smooth shapes (sphere, ellipsoid) and unbounded ones
    (planes) have none: their witness point is the patch.
    """
    g = geometry
    if isinstance(g, coal.Box):
        h = np.asarray(g.halfSide)
        signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
        return signs * h, 0.0
    if isinstance(g, (coal.Cylinder, coal.Cone)):
        a = np.linspace(0.0, 2 * np.pi, RIM_POINTS, endpoint=False)
        ring = np.column_stack([g.radius * np.cos(a), g.radius * np.sin(a)])
        if isinstance(g, coal.Cone):
            base = np.column_stack([ring, np.full(len(a), -g.halfLength)])
            return np.vstack([base, [[0.0, 0.0, g.halfLength]]]), 0.0
        caps = [np.column_stack([ring, np.full(len(a), z)]) for z in (-g.halfLength, g.halfLength)]
        return np.vstack(caps), 0.0
    if isinstance(g, coal.Capsule):
        return np.array([[0.0, 0.0, -g.halfLength], [0.0, 0.0, g.halfLength]]), g.radius
    if isinstance(g, coal.ConvexBase):
        return np.array(g.points()).reshape(-1, 3), 0.0
    return np.zeros((0, 3)), 0.0


@dataclass(frozen=True)
class GeometrySet:
    """Every collision geometry of a robot and its world, as kernel tables.

    Attributes:
        key: ``(collision revision, robot revision, world layout)`` it was built at (the
            layout object itself, compared by identity).
        names: Geometry names (robot geometries; attached-object and obstacle names).
        links: Link of each geometry (attached objects and obstacles: their own name).
        carrier: Link carrying each geometry (attached objects: their link; obstacles:
            their name).
        origin: :data:`ROBOT`, :data:`ATTACHED` or :data:`OBSTACLE`, int64 ``(n,)``.
        joint: Pinocchio joint moving each geometry (-1 for obstacles), int64 ``(n,)``.
        slot: Row of each obstacle in the world's pose arrays (-1 otherwise).
        local_rot: Rotation in the joint frame, ``(n, 3, 3)``.
        local_trans: Translation in the joint frame [m], ``(n, 3)``.
        shapes: The :class:`~stackik.geometry.ShapeTable`.
        geometries: The coal shapes themselves (for coal on triangle meshes).
        sup_points: Support points of every geometry, stacked [m] (local frames).
        sup_offset: Geometry ``g``'s points are ``sup_points[sup_offset[g]:sup_offset[g+1]]``.
        sup_radius: Radius added along the normal to each geometry's points [m].
        robot_count: Number of robot geometries (the first block).
        attached: For each attached object: ``(index, allowed links)``.
        obstacle_min: Minimum distance of each geometry's obstacle [m] (NaN: none set).
    """

    key: tuple[int, int, WorldLayout]
    names: tuple[str, ...]
    links: tuple[str, ...]
    carrier: tuple[str, ...]
    origin: np.ndarray
    joint: np.ndarray
    slot: np.ndarray
    local_rot: np.ndarray
    local_trans: np.ndarray
    shapes: ShapeTable
    geometries: tuple[Any, ...]
    sup_points: np.ndarray
    sup_offset: np.ndarray
    sup_radius: np.ndarray
    robot_count: int
    attached: tuple[tuple[int, frozenset[str]], ...]
    obstacle_min: np.ndarray

    @property
    def size(self) -> int:
        """Number of geometries."""
        return len(self.names)

    @functools.cached_property
    def has_meshes(self) -> bool:
        """Whether a geometry is an exact triangle mesh (queried with coal; read once)."""
        return bool((self.shapes.kind == MESH).any())

    def resolve(self, name: str) -> list[int]:
        """Geometries named by a geometry, link, attached-object or obstacle name.

        ``"*"`` names every geometry.

        Raises:
            CollisionGeometryNotFound: No geometry answers to ``name``.
        """
        if name == "*":
            return list(range(self.size))
        ids = [g for g, n in enumerate(self.names) if n == name]
        if not ids:
            ids = [g for g, link in enumerate(self.links) if link == name]
        if not ids:
            raise CollisionGeometryNotFound(name, sorted(set(self.names) | set(self.links)))
        return ids

    def world_pairs(self, robot_pairs: np.ndarray) -> np.ndarray:
        """Every candidate pair, ``(pairs, 2)`` geometry indices, robot side first.

        ``robot_pairs`` are the robot's own active pairs; then each attached object
        against the robot geometries not on its link, its allowed links or the body that
        carries it (the geometries on its frame's joint: a tool on ``panda_hand_tcp`` or
        ``panda_hand`` is one body with the hand and ``panda_link7``, whose distance to it
        no motion changes), attached objects on different bodies against each other, and
        every robot or attached geometry against every obstacle.
        """
        out = [np.asarray(robot_pairs, dtype=np.int64).reshape(-1, 2)]
        nr = self.robot_count
        joint = self.joint
        for a, allowed in self.attached:
            skip = allowed | {self.carrier[a]}
            others = [g for g in range(nr) if self.links[g] not in skip and joint[g] != joint[a]]
            out.append(self._pairs_with(a, others))
        for i, (a, allowed_a) in enumerate(self.attached):
            for b, allowed_b in self.attached[i + 1 :]:
                ca, cb = self.carrier[a], self.carrier[b]
                apart = ca != cb and joint[a] != joint[b]
                if apart and ca not in allowed_b and cb not in allowed_a:
                    out.append(np.array([[a, b]], dtype=np.int64))
        movers = np.flatnonzero(self.origin != OBSTACLE)
        obstacles = np.flatnonzero(self.origin == OBSTACLE)
        if len(obstacles):
            grid = np.stack(np.meshgrid(movers, obstacles, indexing="ij"), axis=-1)
            out.append(grid.reshape(-1, 2).astype(np.int64))
        return np.concatenate(out) if out else np.zeros((0, 2), dtype=np.int64)

    @staticmethod
    def _pairs_with(a: int, others: Sequence[int]) -> np.ndarray:
        return np.array([[g, a] for g in others], dtype=np.int64).reshape(-1, 2)


def has_movers(robot: RobotModel, state: WorldState) -> bool:
    """Whether anything of the robot can collide: its collision geometry, or an attached object.

    A robot loaded without collision geometry (``load_collisions=False``) that carries an
    attached object has pairs too: the object against every obstacle (and against the
    other attached objects).
    """
    return robot.collision is not None or bool(state.layout.attached)


def _robot_block(robot: RobotModel) -> tuple[list[Any], ...]:
    """Names, links, joints, local placements and shapes of the robot's geometries."""
    col = robot.collision
    names: list[str] = []
    links: list[str] = []
    joints: list[int] = []
    placements: list[pin.SE3] = []
    shapes: list[Any] = []
    if col is None:
        return names, links, joints, placements, shapes
    for obj, link in zip(col.geom_model.geometryObjects, col.link_names, strict=True):
        names.append(obj.name)
        links.append(link)
        joints.append(int(obj.parentJoint))
        placements.append(pin.SE3(obj.placement))
        shapes.append(obj.geometry)
    return names, links, joints, placements, shapes


def build_geometry_set(robot: RobotModel, state: WorldState) -> GeometrySet:
    """The :class:`GeometrySet` of a robot and one world snapshot."""
    names, links, joints, placements, shapes = _robot_block(robot)
    carrier = list(links)
    origin = [ROBOT] * len(names)
    nr = len(names)
    attached = []
    model = robot.model
    for a in state.layout.attached:
        frame = model.frames[robot.get_frame_id(a.link)]
        attached.append((len(names), frozenset(a.allowed_links)))
        names.append(a.name)
        links.append(a.name)
        carrier.append(a.link)
        joints.append(int(frame.parentJoint))
        placements.append(frame.placement * pin.SE3(a.placement))
        shapes.append(a.geometry)
        origin.append(ATTACHED)
    first_obstacle = len(names)
    obstacle_min = [np.nan] * len(names)
    for o in state.layout.obstacles:
        names.append(o.name)
        links.append(o.name)
        carrier.append(o.name)
        joints.append(-1)
        placements.append(pin.SE3.Identity())
        shapes.append(o.geometry)
        origin.append(OBSTACLE)
        obstacle_min.append(np.nan if o.min_distance is None else o.min_distance)
    n = len(names)
    slot = np.full(n, -1, dtype=np.int64)
    slot[first_obstacle:] = np.arange(n - first_obstacle)
    support = [support_points(g) for g in shapes]
    counts = [len(p) for p, _ in support]
    col_rev = robot.collision.revision if robot.collision is not None else -1
    return GeometrySet(
        key=(col_rev, robot.revision, state.layout),
        names=tuple(names),
        links=tuple(links),
        carrier=tuple(carrier),
        origin=np.array(origin, dtype=np.int64),
        joint=np.array(joints, dtype=np.int64),
        slot=slot,
        local_rot=np.array([p.rotation for p in placements]).reshape(n, 3, 3),
        local_trans=np.array([p.translation for p in placements]).reshape(n, 3),
        shapes=ShapeTable.from_coal(shapes),
        geometries=tuple(shapes),
        sup_points=(
            np.vstack([p.reshape(-1, 3) for p, _ in support]) if support else np.zeros((0, 3))
        ),
        sup_offset=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
        sup_radius=np.array([r for _, r in support], dtype=float),
        robot_count=nr,
        attached=tuple(attached),
        obstacle_min=np.array(obstacle_min, dtype=float),
    )


@dataclass
class CollisionWatch:
    """The pairs a collision check watches and their minimum distances.

    Attributes:
        pairs: Index in the robot's active pair list of each watched robot pair.
        thresholds: Minimum distance of each of those pairs [m].
        geometry_pairs: Every watched pair (robot, attached objects, obstacles) as
            geometry indices of the collision pipeline, ``(P, 2)``; None: only
            ``pairs``.
        geometry_thresholds: Minimum distance of each of those [m].
        world: The world the geometry pairs belong to (None: the robot's).
        state: The snapshot of that world whose layout the geometry pairs index; a check
            places the obstacles from it (None: the world's current one). Another thread
            adding or removing an object meanwhile cannot shift the indices: the change
            counts from the next watch.
        names: The geometry names of each of ``geometry_pairs`` (None: not recorded).
        geometry_names: The names of every geometry of the set the pairs index (robot,
            attached objects and obstacles of ``state``; empty: not recorded).
    """

    pairs: np.ndarray
    thresholds: np.ndarray
    geometry_pairs: np.ndarray | None = None
    geometry_thresholds: np.ndarray | None = None
    world: World | None = None
    state: WorldState | None = None
    names: list[tuple[str, str]] | None = None
    geometry_names: Sequence[str] = ()


def world_watch(
    robot: RobotModel,
    world: World,
    pairs: np.ndarray,
    thresholds: np.ndarray,
    min_distance: float,
    known: Mapping[tuple[str, str], float] | None = None,
    state: WorldState | None = None,
) -> CollisionWatch:
    """A :class:`CollisionWatch` of robot pairs plus every robot-world pair of a world.

    The geometry pairs are the given robot pairs first (their thresholds as given), then
    :meth:`GeometrySet.world_pairs`' attached-object and obstacle pairs, each at the
    minimum distance ``known`` gives its name pair, else its obstacle's own minimum,
    else ``min_distance``.

    Args:
        robot: The robot description.
        world: The world (kept in the watch; its pipeline reads it).
        pairs: Index in the robot's active pair list of each watched robot pair.
        thresholds: Minimum distance of each of those pairs [m].
        min_distance: Minimum distance of a world pair nothing else sets [m].
        known: Minimum distances of world pairs by ``(robot-side name, world-side
            name)`` geometry names [m] (a collision constraint's, say).
        state: The snapshot whose layout is watched (default: ``world.state``).

    Returns:
        The watch (``geometry_pairs`` as indices of :func:`build_geometry_set`'s table).
    """
    state = world.state if state is None else state
    gs = build_geometry_set(robot, state)
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1)
    thresholds = np.asarray(thresholds, dtype=float).reshape(-1)
    col = robot.collision
    robot_geoms = (
        col.pair_geometries()[pairs] if col is not None and len(pairs) else np.zeros((0, 2))
    )
    all_pairs = gs.world_pairs(robot_geoms)
    limits = np.empty(len(all_pairs))
    nr = len(pairs)
    limits[:nr] = thresholds
    known = {} if known is None else known
    for k in range(nr, len(all_pairs)):
        a, b = int(all_pairs[k, 0]), int(all_pairs[k, 1])
        value = known.get((gs.names[a], gs.names[b]))
        if value is None:
            own = gs.obstacle_min[b]
            value = float(min_distance) if np.isnan(own) else float(own)
        limits[k] = value
    return CollisionWatch(pairs.copy(), thresholds.copy(), all_pairs, limits, world, state)


class CollisionPipeline:
    """One owner's collision geometry, placements and exact distances (see the module doc).

    Args:
        robot: The robot description.
        world: A world of its own; None reads ``robot.world`` at every call (so a world
            the robot is given later is followed too).
    """

    def __init__(self, robot: RobotModel, world: World | None = None) -> None:
        self.robot = robot
        self.world = world
        self._set: GeometrySet | None = None
        self.rot = np.zeros((0, 3, 3))
        self.trans = np.zeros((0, 3))

    def world_state(self) -> WorldState:
        """The current snapshot of the world this pipeline reads (one atomic read)."""
        return (self.world if self.world is not None else self.robot.world).state

    def geometry(self, state: WorldState | None = None) -> GeometrySet:
        """The geometry set for ``state`` (the current snapshot when omitted).

        Rebuilt only when the robot's pair list or frames or the world's layout changed.
        """
        state = self.world_state() if state is None else state
        col = self.robot.collision
        key = (
            col.revision if col is not None else -1,
            self.robot.revision,
            state.layout,  # (the layout itself: a new world counts revisions from 1 again)
        )
        gs = self._set
        if gs is None or gs.key != key:
            gs = self._set = build_geometry_set(self.robot, state)
            self.rot = np.zeros((gs.size, 3, 3))
            self.trans = np.zeros((gs.size, 3))
        return gs

    def place(
        self,
        oMi: np.ndarray,
        state: WorldState | None = None,
        obstacles: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> GeometrySet:
        """World placements of every geometry into :attr:`rot` and :attr:`trans`.

        Args:
            oMi: Joint placements, ``(njoints, 12)`` (``Kinematics.joint_placements()``
                or :func:`~stackik.model.kinematics.joint_placements_view`).
            state: The world snapshot (the current one when omitted).
            obstacles: Obstacle rotations and positions to use instead of the
                snapshot's (predicted poses, say), by world slot.

        Raises:
            ShapeError: ``oMi`` or ``obstacles`` do not have the robot's joints or the
                world's slots (the compiled placement reads them without bounds checks).
        """
        state = self.world_state() if state is None else state
        gs = self.geometry(state)
        rot, trans = (state.rotations, state.translations) if obstacles is None else obstacles
        _check_placements(oMi, self.robot.model.njoints, rot, trans, state.rotations.shape[0])
        place_geometries(
            oMi, gs.joint, gs.slot, gs.local_rot, gs.local_trans, rot, trans, self.rot, self.trans
        )
        return gs

    def distances(self, pairs: np.ndarray, witness: np.ndarray | None = None) -> np.ndarray:
        """Exact signed distances [m] of geometry pairs at the last :meth:`place`.

        Args:
            pairs: ``(p, 2)`` geometry indices.
            witness: Optional ``(p, 9)`` output: witness point on the first geometry,
                on the second, and the unit normal from the first to the second (world).

        Returns:
            The distances (negative: penetration depth).

        Raises:
            InvalidInput: No :meth:`place` yet, or a geometry index outside the placed
                set (the compiled distance indexes without bounds checks).
            ShapeError: ``pairs`` is not ``(p, 2)`` integers, or ``witness`` not a
                writable float64 ``(p, 9)``.
        """
        gs = self._set
        if gs is None:
            raise InvalidInput("CollisionPipeline.distances: call place() first", what="place")
        pairs = _pair_indices(pairs, len(gs.shapes))
        dist = np.empty(len(pairs))
        out = np.empty((len(pairs), 9)) if witness is None else witness
        check_out(out, (len(pairs), 9), "witness")
        t = gs.shapes
        first = np.ascontiguousarray(pairs[:, 0])  # one compiled layout: contiguous
        second = np.ascontiguousarray(pairs[:, 1])
        batch_distance(
            first, second, t.kind, t.params, t.vstart, t.verts, self.rot, self.trans, dist, out
        )
        if gs.has_meshes:
            self._mesh_distances(gs, pairs, dist, out)
        return dist

    def _mesh_distances(
        self, gs: GeometrySet, pairs: np.ndarray, dist: np.ndarray, out: np.ndarray
    ) -> None:
        """Distances of the pairs with an exact triangle mesh, with coal (kernels: NaN)."""
        for k in np.flatnonzero(np.isnan(dist)):
            a, b = int(pairs[k, 0]), int(pairs[k, 1])
            dist[k] = mesh_distance(gs, a, b, self.rot, self.trans, out[k])

    def names_of(self, pairs: Iterable[Sequence[int]]) -> list[tuple[str, str]]:
        """Geometry names of pairs."""
        names = self.geometry().names
        return [(names[int(a)], names[int(b)]) for a, b in pairs]


def mesh_distance(
    gs: GeometrySet, a: int, b: int, rot: np.ndarray, trans: np.ndarray, out: np.ndarray
) -> float:
    """Signed distance of two geometries at the given placements, with coal.

    The witness points and normal go to ``out``.
    """
    req = coal.DistanceRequest()
    req.enable_signed_distance = True
    req.gjk_initial_guess = coal.GJKInitialGuess.DefaultGuess  # (no guess from earlier calls)
    res = coal.DistanceResult()
    ta = coal.Transform3s(rot[a], trans[a])
    tb = coal.Transform3s(rot[b], trans[b])
    d = float(coal.distance(gs.geometries[a], ta, gs.geometries[b], tb, req, res))
    p1, p2 = res.getNearestPoint1(), res.getNearestPoint2()
    out[0:3] = p1
    out[3:6] = p2
    out[6:9] = _witness_normal(d, p1, p2, np.asarray(res.normal), trans[b] - trans[a])
    return d


def _witness_normal(
    d: float, p1: np.ndarray, p2: np.ndarray, reported: np.ndarray, centres: np.ndarray
) -> np.ndarray:
    """The unit normal from ``a`` to ``b`` of a coal distance result.

    coal leaves ``DistanceResult.normal`` unset for two triangle meshes, so the normal
    is ``(p2 - p1) / d`` whenever the witness points set it (``p2 - p1 = d n``); in
    contact (``d`` about 0) coal's normal when it is a finite unit vector, else the
    direction between the two placements (``centres``, b's origin minus a's).
    """
    gap = np.asarray(p2, dtype=float) - np.asarray(p1, dtype=float)
    if abs(d) > 1e-9 and np.all(np.isfinite(gap)):
        norm = float(np.linalg.norm(gap))
        if norm > 0.0:
            return gap / (norm if d > 0.0 else -norm)
    if np.all(np.isfinite(reported)) and abs(float(np.linalg.norm(reported)) - 1.0) < 1e-6:
        return reported
    norm = float(np.linalg.norm(centres))
    return centres / norm if norm > 0.0 else np.array([0.0, 0.0, 1.0])


def _pair_indices(pairs: object, n: int) -> np.ndarray:
    """``pairs`` as ``(p, 2)`` int64 geometry indices, each in ``[0, n)`` (one pair: ``(2,)``).

    Raises:
        ShapeError: Not integers of shape ``(p, 2)``.
        InvalidInput: An index outside the ``n`` placed geometries.
    """
    arr = np.asarray(pairs)
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if arr.shape == (2,):
        arr = arr.reshape(1, 2)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ShapeError("pairs (geometry indices)", ("p", 2), arr.shape)
    return _validate.indices(arr, n, arr.shape, "pairs", f"the {n} placed geometries")


def _check_placements(
    oMi: np.ndarray, njoints: int, rot: np.ndarray, trans: np.ndarray, slots: int
) -> None:
    """``oMi`` is ``(njoints, 12)`` float64; ``rot``/``trans`` cover the world's slots.

    Raises:
        ShapeError: Otherwise (named).
    """
    arrays = ((oMi, (njoints, 12), "oMi"), (rot, (slots, 3, 3), "obstacle rotations"))
    for arr, shape, what in (*arrays, (trans, (slots, 3), "obstacle positions")):
        if not isinstance(arr, np.ndarray) or arr.shape != shape or arr.dtype != np.float64:
            raise ShapeError(what, shape, shape_of(arr))
