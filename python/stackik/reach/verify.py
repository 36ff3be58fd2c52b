"""The full-robot test of a study's candidates: what "reachable" means for a solver.

A chain configuration that converged is accepted when, on the full robot:

1. Pinocchio's forward kinematics puts the frame within the position and orientation
   tolerances of the target;
2. the chain joints are inside the model's limits shrunk by the solver's limit margin
   (the search already stays inside; this re-checks);
3. every pair the solver's collision constraint watches is at least its minimum distance
   apart (global or per-pair), when the solver has one; and every pair between the robot
   (or its attached objects) and the study's world (its obstacles; the attached objects
   against the rest of the robot) is at least its minimum distance apart: the
   constraint's for that pair, else the obstacle's own, else the constraint's global
   one (0 m without a collision constraint); the constraint's exclusions and per-pair
   minimums apply by name only to the world it reads (another world's objects are not
   the ones its names mean; see :func:`study_world_watch`);
4. the centre of mass lies in every active CoM support polygon of the solver (shrunk by
   the constraint's margin);
5. the study's ``validate(q)`` callback accepts it.

Self-collisions are tested with coal's collision query at a security margin just above
each pair's minimum distance, stopping at the first hit (about 6x faster than all
distances); a hit is confirmed with the exact distance of the pair (and, if it holds, of
every watched pair), so the test equals ``distance >= min_distance`` on every pair.
World pairs are tested with the collision pipeline's exact distances
(:class:`~stackik.model.pipeline.CollisionPipeline`: one compiled call over every
robot-world pair) on a frozen snapshot of the world.

A configuration in self-collision is a ``COLLISION`` whether or not it also touches the
world (the world is not what stops it); one free of self-collision that touches the
world is a ``WORLD_COLLISION``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import coal
import numpy as np
import pinocchio as pin

from ..constraints.com_polygon import ComPolygonConstraint
from ..ik.checks import CollisionWatch
from ..model.collision import CollisionState
from ..model.kinematics import joint_placements_copy, joint_placements_view
from ..model.pipeline import CollisionPipeline, GeometrySet, build_geometry_set, world_watch
from ..model.world import World

if TYPE_CHECKING:
    from ..ik.chains import ChainSetup
    from ..model import RobotModel

__all__ = [
    "CandidateVerifier",
    "ComCheck",
    "NameRules",
    "SelfCollisionCheck",
    "WorldCollisionCheck",
    "robot_named",
    "study_world_watch",
]

#: Result codes of :meth:`CandidateVerifier.check` (0: accepted).
OK, POSE, LIMITS, COLLISION, CONSTRAINT, WORLD = 0, 1, 2, 3, 4, 5
#: Security margin of the fast collision query above each pair's minimum distance [m].
_BAND = 1e-4
#: Slack of the pose and limit tests (compiled FK and Pinocchio differ by rounding).
_SLACK = 1e-9


class SelfCollisionCheck:
    """Watched pairs at or above their minimum distances (own coal state).

    Args:
        robot: The robot description (with collision geometry).
        watch: The pairs and their minimum distances [m].
    """

    def __init__(self, robot: RobotModel, watch: CollisionWatch) -> None:
        col = robot.collision
        assert col is not None
        self.model = robot.model
        self.geom_model = col.geom_model
        self.pairs = [int(k) for k in watch.pairs]
        self.thresholds = [float(t) for t in watch.thresholds]
        self.exact = CollisionState(col)
        gd = pin.GeometryData(self.geom_model)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            for k in range(len(self.geom_model.collisionPairs)):
                gd.deactivateCollisionPair(k)
            for k, thr in zip(self.pairs, self.thresholds, strict=True):
                gd.activateCollisionPair(k)
                req = gd.collisionRequests[k]
                req.security_margin = thr + _BAND
                # Deterministic queries: never a warm start from an earlier query.
                req.gjk_initial_guess = coal.GJKInitialGuess.DefaultGuess
                req.enable_cached_gjk_guess = False
        self.geom_data = gd

    def ok(self, data: pin.Data, q: np.ndarray) -> bool:
        """Whether every watched pair is at least its minimum distance apart at ``q``.

        Runs the forward kinematics into ``data`` (joint placements).
        """
        if not pin.computeCollisions(self.model, data, self.geom_model, self.geom_data, q, True):
            return True
        # The first watched pair that reported a hit (the query stops there).
        results = self.geom_data.collisionResults
        state = self.exact
        state.update_placements(data)
        for k, thr in zip(self.pairs, self.thresholds, strict=True):
            if results[k].isCollision():
                if state.distance(k).min_distance < thr:
                    return False
                break
        return all(
            state.distance(k).min_distance >= thr
            for k, thr in zip(self.pairs, self.thresholds, strict=True)
        )

    def min_distance(self, data: pin.Data, q: np.ndarray) -> float:
        """Smallest distance of the watched pairs at ``q`` [m]."""
        pin.forwardKinematics(self.model, data, q)
        self.exact.update_placements(data)
        return min((self.exact.distance(k).min_distance for k in self.pairs), default=math.inf)


class WorldCollisionCheck:
    """Robot-world pairs at or above their minimum distances (own collision pipeline).

    Args:
        robot: The robot description.
        world: The world (a frozen snapshot: :meth:`~stackik.model.world.World.from_state`).
        pairs: Geometry pairs of the pipeline's table, robot side first, ``(P, 2)``.
        thresholds: Minimum distance of each pair [m].
    """

    def __init__(
        self, robot: RobotModel, world: World, pairs: np.ndarray, thresholds: np.ndarray
    ) -> None:
        self.pipeline = CollisionPipeline(robot, world)
        self.state = world.state
        self.pipeline.geometry(self.state)
        self.pairs = np.ascontiguousarray(pairs, dtype=np.int64).reshape(-1, 2)
        self.thresholds = np.asarray(thresholds, dtype=float).reshape(-1)
        self._data: pin.Data | None = None
        self._view: np.ndarray | None = None

    def _place(self, data: pin.Data) -> None:
        """World placements of every geometry from the joint placements in ``data``."""
        if data is not self._data:  # a live view of data.oMi, made once per Data
            self._data, self._view = data, joint_placements_view(data)
        view = self._view
        self.pipeline.place(view if view is not None else joint_placements_copy(data), self.state)

    def margin(self, data: pin.Data) -> float:
        """Smallest ``distance - threshold`` [m] at the joint placements in ``data``.

        The forward kinematics must have run into ``data`` (``oMi``).
        """
        if not len(self.pairs):
            return math.inf
        self._place(data)
        d = self.pipeline.distances(self.pairs)
        return float(np.min(d - self.thresholds))

    def min_distance(self, data: pin.Data) -> float:
        """Smallest distance of the pairs [m] at the joint placements in ``data``."""
        if not len(self.pairs):
            return math.inf
        self._place(data)
        return float(np.min(self.pipeline.distances(self.pairs)))


class ComCheck:
    """The centre of mass inside a CoM polygon constraint's shrunk support polygon.

    Args:
        constraint: The solver's constraint (its vertices, frame and shrink are read).
        model: The Pinocchio model.
    """

    def __init__(self, constraint: ComPolygonConstraint, model: pin.Model) -> None:
        self.vertices = np.asarray(constraint.vertices, dtype=float)
        self.shrink = float(constraint.shrink)
        name = constraint.frame_name
        self.fid = None if name == "world" else model.getFrameId(name)
        self.model = model

    def ok(self, data: pin.Data, q: np.ndarray) -> bool:
        """Whether the CoM's ground projection keeps the shrunk slack on every edge."""
        com = pin.centerOfMass(self.model, data, q)
        v = self.vertices
        if self.fid is not None:
            pin.updateFramePlacement(self.model, data, self.fid)
            M = data.oMf[self.fid]
            pts = np.column_stack([v, np.zeros(len(v))])
            v = (pts @ M.rotation.T + M.translation)[:, :2]
        e = np.roll(v, -1, axis=0) - v
        if float(np.sum(v[:, 0] * np.roll(v[:, 1], -1) - v[:, 1] * np.roll(v[:, 0], -1))) < 0:
            e = -e  # a clockwise outline: flip the edges so the normals point inward
        normals = np.stack([-e[:, 1], e[:, 0]], axis=1)
        normals /= np.linalg.norm(normals, axis=1, keepdims=True)
        slack = np.sum(normals * (com[:2] - v), axis=1) - self.shrink
        return bool((slack >= -_SLACK).all())


class CandidateVerifier:
    """Accepts or rejects converged chain configurations on the full robot (own data).

    Args:
        robot: The robot description.
        setup: The chain setup (limits of the check, tip frame).
        q_ref: Configuration holding the joints off the chain.
        watch: Watched collision pairs, or None.
        com: CoM polygon constraints to respect.
        validate: The study's callback, or None.
        tol_p: Position tolerance [m].
        tol_o: Orientation tolerance [rad].
        world: The robot-world pairs to check (``geometry_pairs`` and
            ``geometry_thresholds`` of a watch on a frozen world), or None.
    """

    def __init__(
        self,
        robot: RobotModel,
        setup: ChainSetup,
        q_ref: np.ndarray,
        watch: CollisionWatch | None,
        com: list[ComPolygonConstraint],
        validate: Callable[[np.ndarray], bool] | None,
        tol_p: float,
        tol_o: float,
        world: CollisionWatch | None = None,
    ) -> None:
        self.robot = robot
        self.model = robot.model
        self.data = robot.model.createData()
        self.setup = setup
        self.chain = setup.chain
        self.q_ref = q_ref
        has_pairs = watch is not None and watch.pairs.size and robot.collision is not None
        self.collision = SelfCollisionCheck(robot, watch) if has_pairs else None  # type: ignore[arg-type]
        self.world = (
            WorldCollisionCheck(robot, world.world, world.geometry_pairs, world.geometry_thresholds)
            if world is not None
            and world.world is not None
            and world.geometry_pairs is not None
            and world.geometry_thresholds is not None
            and len(world.geometry_pairs)
            else None
        )
        self.coms = [ComCheck(c, robot.model) for c in com]
        self.validate = validate
        self.tol_p, self.tol_o = tol_p + _SLACK, tol_o + _SLACK
        chain = self.chain
        self._plain_k = np.flatnonzero(~chain.continuous)
        self._plain_q = chain.idx_q[self._plain_k]
        self._cont_k = np.flatnonzero(chain.continuous)
        self._cont_q = chain.idx_q[self._cont_k]
        self.distance_checker = (
            self.collision
            if self.collision is not None
            else (
                SelfCollisionCheck(robot, CollisionWatch(np.arange(n), np.zeros(n)))
                if robot.collision is not None and (n := len(robot.get_collision_pair_names()))
                else None
            )
        )

    def full(self, Qc: np.ndarray) -> np.ndarray:
        """Full configurations of chain configurations (vectorized ``to_full``), (k, nq)."""
        Q = np.repeat(self.q_ref[None], len(Qc), axis=0)
        Q[:, self._plain_q] = Qc[:, self._plain_k]
        if self._cont_k.size:
            Q[:, self._cont_q] = np.cos(Qc[:, self._cont_k])
            Q[:, self._cont_q + 1] = np.sin(Qc[:, self._cont_k])
        return Q

    def check(
        self, Qc: np.ndarray, T_world: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Test converged chain configurations against their world targets.

        Returns:
            ``(codes, Q, position_error, orientation_error)``: one code per row (0 accepted,
            else POSE, LIMITS, COLLISION, WORLD or CONSTRAINT), full configurations, and the
            frame's errors by Pinocchio FK [m, rad].
        """
        k = len(Qc)
        Q = self.full(Qc)
        codes = np.zeros(k, dtype=np.int8)
        s = self.setup
        inside = np.all((Qc >= s.check_lower) & (Qc <= s.check_upper), axis=1)
        codes[~inside] = LIMITS
        R = np.empty((k, 3, 3))
        p = np.empty((k, 3))
        model, data, fid = self.model, self.data, s.fid
        for i in range(k):
            q = Q[i]
            if self.collision is not None:
                free = self.collision.ok(data, q)
            else:
                pin.forwardKinematics(model, data, q)
                free = True
            M = pin.updateFramePlacement(model, data, fid)
            R[i], p[i] = M.rotation, M.translation
            if codes[i]:
                continue
            if not free:
                codes[i] = COLLISION
            elif self.world is not None and not self.world.margin(data) >= 0.0:  # (NaN: hit)
                codes[i] = WORLD
            elif not self._constraints_ok(q):
                codes[i] = CONSTRAINT
        ep, eo = pose_errors(R, p, T_world)
        bad_pose = ~((ep <= self.tol_p) & (eo <= self.tol_o))
        codes[bad_pose & (codes == OK)] = POSE
        return codes, Q, ep, eo

    def _constraints_ok(self, q: np.ndarray) -> bool:
        for com in self.coms:
            if not com.ok(self.data, q):
                return False
        return self.validate is None or bool(self.validate(q.copy()))

    def min_distance(self, q: np.ndarray) -> float:
        """Smallest distance of the watched pairs (every active pair without a constraint).

        With a world, its pairs count too.
        """
        if self.distance_checker is None:
            if self.world is None:
                return math.inf
            pin.forwardKinematics(self.model, self.data, q)
            return self.world.min_distance(self.data)
        d = self.distance_checker.min_distance(self.data, q)
        if self.world is not None:
            d = min(d, self.world.min_distance(self.data))
        return d


#: A collision constraint's ``(exclude_pairs, overrides)`` (see
#: :meth:`~stackik.constraints.collision.CollisionConstraint.name_rules`) and the object
#: names of the world it reads.
NameRules = tuple[
    Sequence[tuple[str, str]],
    Sequence[tuple[tuple[str, str], float | None]],
    frozenset[str],
]


def study_world_watch(
    robot: RobotModel,
    world: World | None,
    constraint: CollisionWatch | None,
    names: list[tuple[str, str]] | None,
    min_distance: float,
    constraint_geometries: Sequence[str] = (),
    rules: NameRules | None = None,
) -> CollisionWatch | None:
    """The robot-world pairs of a study and their minimum distances (None: nothing to check).

    Every pair of :meth:`~stackik.model.pipeline.GeometrySet.world_pairs` is checked at
    the obstacle's own minimum distance, else ``min_distance``, except:

    - pairs that no configuration moves: both sides fixed to the world (a robot link or
      attached object on the universe joint, such as a fixed base resting on a table,
      against an obstacle): their distance is the same for every target;
    - when ``world`` is the world the collision constraint reads (``rules`` None): the
      pairs it leaves out (``exclude_pairs``: both geometries are in its geometry set,
      ``constraint_geometries``, but it does not watch the pair), and the pairs it
      watches take its minimum distance (by name: per-pair overrides);
    - when it is another world (``rules`` given): only the constraint's exclusions and
      per-pair overrides named by the robot alone apply (see :func:`robot_named`); its
      names of world objects mean objects of its own world, not the study's.

    Args:
        robot: The robot description.
        world: The study's frozen world (None or empty: no pairs).
        constraint: The solver's collision watch (its world pairs give their minimum
            distances by name: per-pair overrides), or None without a collision
            constraint; unused with ``rules``.
        names: The constraint's pair names, aligned with ``constraint.geometry_pairs``.
        min_distance: Minimum distance of a pair nothing else sets [m] (the constraint's
            global one; 0 without a constraint).
        constraint_geometries: Names of the constraint's geometry set (robot, attached
            objects and obstacles of the world it reads); empty without a constraint.
        rules: The constraint's own ``(exclude_pairs, overrides)`` and the object names
            of the world it reads, when ``world`` is another world (None: the same
            world, or no constraint).
    """
    if world is None:
        return None
    layout = world.state.layout
    if not (layout.obstacles or layout.attached):
        return None
    known: dict[tuple[str, str], float] = {}
    if rules is None and constraint is not None and names is not None:
        if constraint.geometry_thresholds is not None:
            thresholds = constraint.geometry_thresholds
            known = {n: float(t) for n, t in zip(names, thresholds, strict=True)}
    empty = np.zeros(0, dtype=np.int64)
    watch = world_watch(robot, world, empty, np.zeros(0), min_distance, known)
    assert watch.geometry_pairs is not None and watch.geometry_thresholds is not None
    gs = build_geometry_set(robot, world.state)
    pairs = watch.geometry_pairs
    keep = (gs.joint[pairs[:, 0]] > 0) | (gs.joint[pairs[:, 1]] > 0)  # (else fixed on both sides)
    if rules is None:
        seen = set(constraint_geometries)
        for k, (a, b) in enumerate(pairs):
            pair = (gs.names[a], gs.names[b])
            if pair not in known and pair[0] in seen and pair[1] in seen:
                keep[k] = False  # excluded by the collision constraint
    else:
        keep &= ~_apply_robot_rules(gs, pairs, watch.geometry_thresholds, rules)
    watch.geometry_pairs = pairs[keep]
    watch.geometry_thresholds = watch.geometry_thresholds[keep]
    return watch if len(watch.geometry_pairs) else None


def robot_named(gs: GeometrySet, name: str, theirs: frozenset[str], part: bool) -> set[int]:
    """The geometries of ``gs`` a name of the robot alone stands for (empty: none).

    ``"*"`` stands for every geometry; a geometry or link name of the robot for its
    geometries; with ``part`` (a per-pair override's name) any other name for the robot
    geometries whose link name contains it. A name of an object of the constraint's world
    (``theirs``) stands for none here: that object is not in this world, even if one of
    its objects has the same name.
    """
    if name == "*":
        return set(range(gs.size))
    if name in theirs:
        return set()
    robot = range(gs.robot_count)
    ids = {g for g in robot if gs.names[g] == name} or {g for g in robot if gs.links[g] == name}
    if not ids and part:
        ids = {g for g in robot if name in gs.links[g]}
    return ids


def _between(pairs: np.ndarray, ids_a: set[int], ids_b: set[int]) -> np.ndarray:
    """Which pairs join a geometry of ``ids_a`` to one of ``ids_b`` (either way round)."""
    f, s = pairs[:, 0], pairs[:, 1]
    ia, ib = np.isin(f, list(ids_a)), np.isin(s, list(ids_b))
    ja, jb = np.isin(s, list(ids_a)), np.isin(f, list(ids_b))
    return (ia & ib) | (ja & jb)


def _apply_robot_rules(
    gs: GeometrySet, pairs: np.ndarray, thresholds: np.ndarray, rules: NameRules
) -> np.ndarray:
    """Apply a constraint's rules named by the robot alone to another world's pairs.

    Per-pair overrides set ``thresholds`` in place, in the order they were set (a
    cleared one: back to the default, the obstacle's own or the global minimum).

    Returns:
        Which pairs its ``exclude_pairs`` leave out.
    """
    exclude, overrides, theirs = rules
    default = thresholds.copy()
    dropped = np.zeros(len(pairs), dtype=bool)
    for a, b in exclude:
        ids_a, ids_b = robot_named(gs, a, theirs, False), robot_named(gs, b, theirs, False)
        dropped |= _between(pairs, ids_a, ids_b)
    for (a, b), value in overrides:
        ids_a, ids_b = robot_named(gs, a, theirs, True), robot_named(gs, b, theirs, True)
        hit = _between(pairs, ids_a, ids_b)
        thresholds[hit] = default[hit] if value is None else value
    return dropped


def pose_errors(R: np.ndarray, p: np.ndarray, T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Position [m] and rotation-angle [rad] errors of frames ``(R, p)`` to targets ``T``.

    The angle is ``atan2(|vee(E - E^T)| / 2, (tr E - 1) / 2)`` with ``E = R*^T R``, exact
    near 0 and pi.
    """
    ep = np.linalg.norm(p - T[:, :3, 3], axis=1)
    E = np.swapaxes(T[:, :3, :3], 1, 2) @ R
    tr = np.trace(E, axis1=1, axis2=2)
    vee = np.stack(
        [E[:, 2, 1] - E[:, 1, 2], E[:, 0, 2] - E[:, 2, 0], E[:, 1, 0] - E[:, 0, 1]], axis=1
    )
    eo = np.arctan2(0.5 * np.linalg.norm(vee, axis=1), 0.5 * (tr - 1.0))
    return ep, eo
