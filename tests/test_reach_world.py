"""Reachability studies in a workcell: the world around the robot.

Checked against coal called directly (a Pinocchio ``GeometryModel`` built here from the
URDF, with the obstacle added on the universe joint) and closed forms:

- a target inside a box obstacle (its tool point 5 cm or more inside) is
  ``WORLD_COLLISION``; the same study without the obstacle reaches it;
- every target a study in the world labels ``REACHABLE`` keeps every robot geometry at
  least the collision constraint's minimum distance from the obstacle (coal), and every
  watched self-collision pair too;
- the study reads the robot's world by default, as a snapshot taken when the run starts:
  an obstacle moved during the run (by the ``validate`` callback, standing in for a
  sensor thread) changes nothing; an explicit ``world=`` is used instead of the robot's;
- a capability map voxel inside the obstacle is not reachable;
- the world travels once per worker process (never with a chunk), the serial executor
  pickles nothing, and the process pool gives the serial executor's results bit for bit;
- a store records the world: resuming with another world is a ``StudyMismatch``, with
  the same world it resumes;
- the collision constraint's exclusions and per-pair minimums apply by name to the world
  it reads only: another world's obstacle named like one of its objects is checked at
  its own or the global minimum (coal); those named by the robot alone apply to any world;
- a world whose objects take the robot's names, or name links it lacks, is refused; a
  world distance that is not a number is a collision;
- wrong argument types are ``InvalidInput`` naming the argument.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
from pathlib import Path

import coal
import numpy as np
import pinocchio as pin
import pytest

from stackik import KinematicsSolver, RobotModel, World
from stackik.errors import FrameNotFound, InvalidInput, NonFiniteInput
from stackik.reach import CapabilityMap, ReachResult, ReachStudy, Reason
from stackik.reach.describe import StudyMismatch
from stackik.reach.executors import WorkerContext

pytest.importorskip("zarr")

ROOT = Path(__file__).resolve().parents[1]
PANDA = ROOT / "robots" / "panda" / "panda.urdf"
PANDA_SRDF = ROOT / "robots" / "panda" / "panda.srdf"
FRAME = "panda_hand_tcp"
MIN_DISTANCE = 0.01
#: The block: a box of half sizes HALF centred at CENTRE (top face at z = 0.3 m).
CENTRE = np.array([0.5, 0.0, 0.15])
HALF = np.array([0.15, 0.2, 0.15])
#: Tool pointing down.
DOWN = np.diag([1.0, -1.0, -1.0])


def block_pose(shift: float = 0.0) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = CENTRE + np.array([0.0, shift, 0.0])
    return T


def make_world(shift: float = 0.0, cls: type[World] = World) -> World:
    world = cls()
    world.add_obstacle("block", coal.Box(*(2 * HALF)), block_pose(shift))
    return world


def poses_at(points: np.ndarray) -> np.ndarray:
    T = np.repeat(np.eye(4)[None], len(points), axis=0)
    T[:, :3, :3] = DOWN
    T[:, :3, 3] = points
    return T


def depth_inside(points: np.ndarray) -> np.ndarray:
    """How far each point is inside the block (negative: outside) [m], closed form."""
    return np.min(HALF - np.abs(points - CENTRE), axis=1)


def targets() -> np.ndarray:
    xs = np.linspace(0.4, 0.6, 3)
    ys = np.linspace(-0.1, 0.1, 3)
    zs = np.array([0.2, 0.25, 0.4, 0.5])
    grid = np.stack(np.meshgrid(xs, ys, zs, indexing="ij"), axis=-1).reshape(-1, 3)
    return grid


class CoalCheck:
    """The Panda's collision geometry from its URDF plus the block, queried with coal."""

    def __init__(self, block: np.ndarray) -> None:
        self.model, self.geom, _ = pin.buildModelsFromUrdf(
            str(PANDA), geometry_types=[pin.GeometryType.COLLISION, pin.GeometryType.VISUAL]
        )
        self.data = self.model.createData()
        self.names = {g.name: k for k, g in enumerate(self.geom.geometryObjects)}
        n_robot = self.geom.ngeoms
        box = pin.GeometryObject("block", 0, pin.SE3(block), coal.Box(*(2 * HALF)))
        ob = self.geom.addGeometryObject(box)
        for g in range(n_robot):
            self.geom.addCollisionPair(pin.CollisionPair(g, ob))
        self.gdata = pin.GeometryData(self.geom)
        self.n_world = n_robot

    def world_distances(self, q: np.ndarray) -> np.ndarray:
        pin.computeDistances(self.model, self.data, self.geom, self.gdata, q)
        return np.array([r.min_distance for r in self.gdata.distanceResults])

    def distance(self, q: np.ndarray, a: str, b: str) -> float:
        pin.updateGeometryPlacements(self.model, self.data, self.geom, self.gdata, q)
        ia, ib = self.names[a], self.names[b]
        Ma, Mb = self.gdata.oMg[ia], self.gdata.oMg[ib]
        return coal.distance(
            self.geom.geometryObjects[ia].geometry,
            coal.Transform3s(Ma.rotation, Ma.translation),
            self.geom.geometryObjects[ib].geometry,
            coal.Transform3s(Mb.rotation, Mb.translation),
            coal.DistanceRequest(),
            coal.DistanceResult(),
        )


class MovingValidate:
    """A ``validate`` callback that moves an obstacle of a world at every call."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.calls = 0

    def __call__(self, q: np.ndarray) -> bool:
        self.calls += 1
        self.world.set_obstacle_pose("block", block_pose(5.0 if self.calls % 2 else -5.0))
        return True


class CountingWorld(World):
    """A world whose copies record every process that unpickles them (in ``path``)."""

    path = ""

    @classmethod
    def from_state(cls, state):  # the study's frozen copy carries the log's path
        world = super().from_state(state)
        world.log = cls.path
        return world

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        with open(self.log, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")


class UnpicklableWorld(World):
    """A world that refuses to be pickled."""

    def __getstate__(self) -> dict:
        raise TypeError("this world refuses to be pickled")


@pytest.fixture(scope="module")
def panda():
    return RobotModel(PANDA, srdf_path=PANDA_SRDF, load_visuals=False)


@pytest.fixture(scope="module")
def solver(panda):
    s = KinematicsSolver(panda)
    s.configure_collision_constraint(MIN_DISTANCE)
    return s


@pytest.fixture(scope="module")
def studies(panda, solver):
    """The same targets with the block (explicit world) and without it."""
    T = poses_at(targets())
    kw = {"evaluators": [], "chunk_size": 16}
    with_block = ReachStudy(panda, FRAME, T, solver, world=make_world(), **kw)
    without = ReachStudy(panda, FRAME, T, solver, **kw)
    return (
        T,
        with_block.run("serial", progress=False),
        without.run("serial", progress=False),
    )


# -- what the reasons mean -----------------------------------------------------------------------
def test_targets_inside_the_block_collide_with_the_world(studies):
    T, res, free = studies
    depth = depth_inside(T[:, :3, 3])
    inside = depth >= 0.05 - 1e-9
    assert inside.sum() >= 9
    assert np.all(res.reason[inside] == Reason.WORLD_COLLISION)
    # Without the block the same targets are reached.
    assert np.all(free.reason[inside] == Reason.REACHABLE)
    # The study without the block sees no world.
    assert not np.any(free.reason == Reason.WORLD_COLLISION)
    # Every target blocked by the world is reached once the block is gone.
    assert np.all(free.reason[res.reason == Reason.WORLD_COLLISION] == Reason.REACHABLE)
    # Above the block there is room.
    assert np.any(res.reason[depth < -0.1] == Reason.REACHABLE)
    assert res.reasons()["WORLD_COLLISION"] == int((res.reason == Reason.WORLD_COLLISION).sum())
    assert "WORLD_COLLISION" in str(res.summary())


def test_reached_targets_keep_the_distance_from_the_block(studies, solver):
    T, res, _ = studies
    check = CoalCheck(block_pose())
    col = solver.get_constraint("collision")
    robot_pairs = [p for p in col.pair_names() if "block" not in p]
    reached = np.flatnonzero(res.reachable)
    assert reached.size >= 9
    for k in reached:
        q = res.q[k]
        d = check.world_distances(q)
        assert d.min() >= MIN_DISTANCE - 1e-9, (k, d.min())
        for a, b in robot_pairs:
            assert check.distance(q, a, b) >= MIN_DISTANCE - 1e-9, (k, a, b)
        # The pose holds (Pinocchio FK).
        pin.framesForwardKinematics(check.model, check.data, q)
        M = check.data.oMf[check.model.getFrameId(FRAME)]
        assert np.linalg.norm(M.translation - T[k, :3, 3]) <= 1e-5 + 1e-9


def test_reason_codes_keep_their_values():
    assert [(r.name, int(r)) for r in Reason] == [
        ("REACHABLE", 0),
        ("OUT_OF_REACH", 1),
        ("NO_IK", 2),
        ("COLLISION", 3),
        ("LIMITS", 4),
        ("BUDGET", 5),
        ("CONSTRAINT", 6),
        ("WORLD_COLLISION", 7),
        ("NOT_RUN", -1),
    ]


def test_an_attached_tool_collides_with_the_world(panda, solver):
    """A 30 cm rod along the tool axis: 15 cm above the block, its end is 15 cm inside."""
    T = poses_at(np.array([[0.5, 0.0, 0.45], [0.45, 0.05, 0.45]]))
    world = make_world()
    tip = np.eye(4)
    tip[2, 3] = 0.15  # the rod's centre, 15 cm along the tool axis from the tool point
    world.attach_object(
        "rod",
        FRAME,
        coal.Box(0.01, 0.01, 0.3),
        tip,
        allowed_links=["panda_hand"],  # (this Panda has no fingers: a study refuses them)
    )
    plain = ReachStudy(panda, FRAME, T, solver, [], world=make_world()).run(
        "serial", progress=False
    )
    with_rod = ReachStudy(panda, FRAME, T, solver, [], world=world).run("serial", progress=False)
    assert plain.reachable.all()
    assert np.all(with_rod.reason == Reason.WORLD_COLLISION)
    # The rod's far end, by the tool pose (closed form), is inside the block.
    end = T[:, :3, 3] + 0.3 * T[:, :3, 2]
    assert np.all(depth_inside(end) >= 0.1 - 1e-9)


# -- which world, and when -----------------------------------------------------------------------
def test_default_world_is_a_snapshot_of_the_robots_world(panda, solver, studies):
    T, res, _ = studies
    robot = RobotModel(PANDA, srdf_path=PANDA_SRDF, load_visuals=False)
    s = KinematicsSolver(robot)
    s.configure_collision_constraint(MIN_DISTANCE)
    robot.add_obstacle("block", coal.Box(*(2 * HALF)), block_pose())
    mover = MovingValidate(robot.world)
    study = ReachStudy(robot, FRAME, T, s, evaluators=[], chunk_size=16, validate=mover)
    moved = study.run("serial", progress=False)
    assert mover.calls > 10  # the block moved away and back many times during the run
    np.testing.assert_array_equal(moved.reason, res.reason)
    np.testing.assert_array_equal(moved.q, res.q)
    # The next run sees the world as it is then: the block 5 m away blocks nothing.
    robot.world.set_obstacle_pose("block", block_pose(5.0))
    again = ReachStudy(robot, FRAME, T, s, evaluators=[], chunk_size=16).run(
        "serial", progress=False
    )
    assert not np.any(again.reason == Reason.WORLD_COLLISION)


def test_explicit_world_replaces_the_robots(studies):
    T, res, _ = studies
    robot = RobotModel(PANDA, srdf_path=PANDA_SRDF, load_visuals=False)
    s = KinematicsSolver(robot)
    s.configure_collision_constraint(MIN_DISTANCE)
    robot.add_obstacle("far", coal.Box(2.0, 2.0, 2.0), block_pose(5.0))
    study = ReachStudy(robot, FRAME, T, s, evaluators=[], chunk_size=16, world=make_world())
    out = study.run("serial", progress=False)
    np.testing.assert_array_equal(out.reason, res.reason)
    assert study.header()["world"]["obstacles"][0]["name"] == "block"


def test_a_solvers_own_world_is_the_studys(studies):
    """A solver given its own world (set_world) avoids it: the study checks that world.

    The same reasons as the study given the block explicitly; a map built with that solver
    has no reachable voxel inside the block; another world for the study is refused.
    """
    T, res, _ = studies
    robot = RobotModel(PANDA, srdf_path=PANDA_SRDF, load_visuals=False)
    s = KinematicsSolver(robot)
    s.configure_collision_constraint(MIN_DISTANCE)
    cell = make_world()
    s.set_world(cell)
    study = ReachStudy(robot, FRAME, T, s, evaluators=[], chunk_size=16)
    assert study.world is cell
    np.testing.assert_array_equal(study.run("serial", progress=False).reason, res.reason)
    bounds = [[0.45, -0.05, 0.2], [0.55, 0.05, 0.5]]
    kw = {"solver": s, "executor": "serial", "progress": False, "chunk_size": 64}
    cmap = CapabilityMap.build(robot, FRAME, 0.1, 3, bounds, **kw)
    inside = depth_inside(cmap.grid.centres()) >= 0.05 - 1e-9
    assert inside.any() and np.all(cmap.index.reshape(-1)[inside] == 0.0)
    assert ReachStudy(robot, FRAME, T[:1], s, world=cell).world is cell  # (the same one)
    with pytest.raises(InvalidInput, match="world of its own") as err:
        ReachStudy(robot, FRAME, T[:1], s, world=make_world())
    assert err.value.what == "world"


def test_wrong_world_type_is_invalid_input(panda):
    T = poses_at(targets()[:2])
    with pytest.raises(InvalidInput) as err:
        ReachStudy(panda, FRAME, T, world="table")
    assert err.value.what == "world"
    with pytest.raises(InvalidInput) as err:
        World.from_state("table")
    assert err.value.what == "state"
    with pytest.raises(InvalidInput) as err:
        CapabilityMap.build(panda, FRAME, 0.1, 2, [[0.4, 0.0, 0.2], [0.5, 0.1, 0.3]], world=3)
    assert err.value.what == "world"


def test_capability_map_voxel_inside_the_block_is_not_reachable(panda, solver):
    bounds = [[0.45, -0.05, 0.2], [0.55, 0.05, 0.5]]
    kw = {"solver": solver, "executor": "serial", "progress": False, "chunk_size": 64}
    blocked = CapabilityMap.build(panda, FRAME, 0.1, 3, bounds, world=make_world(), **kw)
    free = CapabilityMap.build(panda, FRAME, 0.1, 3, bounds, **kw)
    centres = blocked.grid.centres()
    inside = depth_inside(centres) >= 0.05 - 1e-9
    assert inside.any() and (~inside).any()
    idx_blocked = blocked.index.reshape(-1)
    idx_free = free.index.reshape(-1)
    assert np.all(idx_blocked[inside] == 0.0)
    assert np.all(idx_free[inside] > 0.0)
    assert blocked.result is not None
    assert np.any(blocked.result.reason == Reason.WORLD_COLLISION)
    assert blocked.reachability(CENTRE + np.array([0.0, 0.0, 0.05]))[0] == 0.0


# -- workers ---------------------------------------------------------------------------------------
def test_serial_run_pickles_nothing(panda, solver, studies):
    T, res, _ = studies
    world = make_world(cls=UnpicklableWorld)  # pickling it (or its snapshot copy) fails
    study = ReachStudy(panda, FRAME, T, solver, evaluators=[], chunk_size=16, world=world)
    with pytest.raises(TypeError, match="refuses"):
        study.worker_context().payload()
    out = study.run("serial", progress=False)
    np.testing.assert_array_equal(out.reason, res.reason)


def test_payload_holds_the_frozen_world(panda, solver):
    T = poses_at(targets())
    world = make_world()
    study = ReachStudy(panda, FRAME, T, solver, evaluators=[], world=world)
    context = study.worker_context()
    assert context.world is not None and context.world is not world
    world.set_obstacle_pose("block", block_pose(5.0))  # after the snapshot
    restored = pickle.loads(context.payload())
    np.testing.assert_array_equal(restored.world.state.translations[0], CENTRE)
    assert restored.world.get_obstacle_names() == ["block"]
    # An empty world sends nothing.
    assert ReachStudy(panda, FRAME, T, solver).worker_context().world is None


def test_pool_gets_the_world_once_per_worker_and_matches_serial(tmp_path, panda, solver, studies):
    T, res, _ = studies
    log = tmp_path / "unpickled.txt"
    CountingWorld.path = str(log)
    try:
        world = make_world(cls=CountingWorld)
        study = ReachStudy(panda, FRAME, T, solver, evaluators=[], chunk_size=8, world=world)
        assert study.n_chunks >= 4
        pooled = study.run("local", workers=2, progress=False)
    finally:
        CountingWorld.path = ""
    np.testing.assert_array_equal(pooled.reason, res.reason)
    pids = log.read_text(encoding="utf-8").split() if log.exists() else []
    assert 1 <= len(pids) <= 2 and len(set(pids)) == len(pids), pids
    assert str(os.getpid()) not in pids


# -- resume ----------------------------------------------------------------------------------------
def test_resume_checks_the_world(tmp_path, panda, solver):
    T = poses_at(targets()[:6])
    store = tmp_path / "study.zarr"
    kw = {"evaluators": [], "chunk_size": 3}
    first = ReachStudy(panda, FRAME, T, solver, world=make_world(), **kw)
    done = first.run("serial", store=store, progress=False)
    header = first.header()["world"]
    assert header["obstacles"][0]["translation"] == CENTRE.tolist()
    # Same world (a new object, same content): resumes, nothing left to solve.
    again = ReachStudy(panda, FRAME, T, solver, world=make_world(), **kw).run(
        "serial", store=store, progress=False
    )
    np.testing.assert_array_equal(again.reason, done.reason)
    # The block moved by 1 cm, or gone: another study.
    for other in (make_world(0.01), None):
        study = ReachStudy(panda, FRAME, T, solver, world=other, **kw)
        with pytest.raises(StudyMismatch) as err:
            study.run("serial", store=store, progress=False)
        assert err.value.what == "world"
    # The message names where the worlds differ, with the two values there.
    moved = ReachStudy(panda, FRAME, T, solver, world=make_world(0.01), **kw).header()["world"]
    stored = header["obstacles"][0]["translation"]
    k = next(
        i
        for i, (a, b) in enumerate(zip(stored, moved["obstacles"][0]["translation"], strict=True))
        if a != b
    )
    given = moved["obstacles"][0]["translation"][k]
    with pytest.raises(StudyMismatch) as err:
        ReachStudy(panda, FRAME, T, solver, world=make_world(0.01), **kw).run(
            "serial", store=store, progress=False
        )
    assert (
        f"another world at obstacles[0].translation[{k}] ({stored[k]} vs this run's {given})"
        in str(err.value)
    )


def test_resume_tells_a_pending_override_apart(tmp_path, panda):
    """A larger pair minimum still waiting in the velocity steps (``activate_when_clear``)
    binds a study's checks: the studies with and without it differ, and so do their
    headers (they were equal: a store written with it resumed a study without it and
    returned its results)."""
    T = poses_at(targets()[:6])
    kw = {"evaluators": [], "chunk_size": 3}
    robot = RobotModel(PANDA, srdf_path=PANDA_SRDF, load_visuals=False)
    robot.add_obstacle("block", coal.Box(*(2 * HALF)), block_pose())
    plain, waiting = solver_with(robot), solver_with(robot)
    waiting.set_collision_pair_min_distance("panda_hand", "block", 0.15)
    col = waiting.get_constraint("collision")
    assert not [k for k, _ in col.pair_min_distance_overrides() if "panda_hand" in k]  # pending
    with_it = ReachStudy(robot, FRAME, T, waiting, **kw)
    without = ReachStudy(robot, FRAME, T, plain, **kw)
    assert with_it.header() != without.header()
    store = tmp_path / "study.zarr"
    done = with_it.run("serial", store=store, progress=False)
    fresh = without.run("serial", progress=False)
    assert done.reachable.sum() < fresh.reachable.sum()  # (the override changes results)
    with pytest.raises(StudyMismatch) as err:
        without.run("serial", store=store, progress=False)
    assert "collision.overrides" in str(err.value)


def rule_study_world(change: str) -> tuple[World, np.ndarray]:
    """The world and targets of the rules test: a ball beside the elbow (``panda_link3``,
    which has no pairs with the rest of the robot), or the block under the hand."""
    rng = np.random.default_rng(1)
    n = 200
    if change == "exclusion":
        world = World()
        P = np.eye(4)
        P[:3, 3] = BALL_CENTRE
        world.add_obstacle("ball", coal.Sphere(BALL_RADIUS), P)
        points = np.c_[
            rng.uniform(0.2, 0.7, n), rng.uniform(-0.4, 0.5, n), rng.uniform(0.1, 0.7, n)
        ]
    else:
        world = make_world()
        points = np.c_[
            rng.uniform(0.3, 0.7, n), rng.uniform(-0.3, 0.3, n), rng.uniform(0.3, 0.5, n)
        ]
    return world, poses_at(points)


def ruled_solver(robot: RobotModel, change: str) -> KinematicsSolver:
    """A solver whose rule named by the robot alone changes none of its own pairs."""
    s = KinematicsSolver(robot)
    if change == "exclusion":
        s.configure_collision_constraint(MIN_DISTANCE, exclude_pairs=[("panda_link3", "*")])
        return s
    s.configure_collision_constraint(MIN_DISTANCE)
    s.set_collision_pair_min_distance("panda_hand", "*", HAND_MINIMUM)
    for a, b in robot.get_collision_pair_names():  # (the hand's robot pairs as before)
        if a.startswith("panda_hand") != b.startswith("panda_hand"):
            s.set_collision_pair_min_distance(
                "panda_hand", b if a.startswith("panda_hand") else a, MIN_DISTANCE
            )
    return s


@pytest.mark.parametrize("change", ["exclusion", "override"])
def test_resume_tells_rules_named_by_the_robot_alone_apart(tmp_path, change):
    """A study of another world applies the constraint's rules named by the robot alone
    (``("panda_link3", "*")``, ``("panda_hand", "*")``) to that world's pairs. Such a
    rule can change none of the constraint's own pairs (its world is empty here), and
    the headers were equal: a store written without the rule resumed a study with it
    and mixed the two studies' results (found by a review)."""
    world, T = rule_study_world(change)
    kw = {"evaluators": [], "chunk_size": 20}
    robot = RobotModel(PANDA, srdf_path=PANDA_SRDF, load_visuals=False)
    with_it = ReachStudy(robot, FRAME, T, ruled_solver(robot, change), world=world, **kw)
    without = ReachStudy(robot, FRAME, T, solver_with(robot), world=world, **kw)
    fresh_with = with_it.run("serial", progress=False)
    fresh_without = without.run("serial", progress=False)
    differ = fresh_with.reason != fresh_without.reason
    assert differ.any()  # (the rule changes results)
    # coal at the targets the rule decides: the reachable side keeps its minimums.
    model, geom, _ = pin.buildModelsFromUrdf(
        str(PANDA), geometry_types=[pin.GeometryType.COLLISION, pin.GeometryType.VISUAL]
    )
    data, gdata = model.createData(), geom.createData()
    obstacle = world.state.layout.obstacles[0].geometry
    M = world.state
    at = coal.Transform3s(M.rotations[0], M.translations[0])
    for t in np.flatnonzero(differ):
        ruled = bool(fresh_with.reachable[t])
        q = (fresh_with if ruled else fresh_without).q[t]
        pin.updateGeometryPlacements(model, data, geom, gdata, q)
        for k, g in enumerate(geom.geometryObjects):
            Mg = gdata.oMg[k]
            d = coal.distance(
                g.geometry, coal.Transform3s(Mg.rotation, Mg.translation), obstacle, at,
                coal.DistanceRequest(), coal.DistanceResult(),
            )  # fmt: skip
            if ruled and change == "exclusion" and g.name.startswith("panda_link3"):
                continue
            hand = ruled and change == "override" and g.name.startswith("panda_hand")
            assert d >= (HAND_MINIMUM if hand else MIN_DISTANCE) - 1e-6, (t, g.name, d)
    store = tmp_path / "study.zarr"
    without.run("serial", store=store, progress=False)
    with pytest.raises(StudyMismatch) as err:
        with_it.run("serial", store=store, progress=False)
    assert "collision.rules" in str(err.value)
    # The constraint's own pairs and minimums are the same: only the rules differ.
    cw, co = with_it.header()["solver"]["collision"], without.header()["solver"]["collision"]
    assert (cw["pairs"], cw["overrides"]) == (co["pairs"], co["overrides"])
    assert cw["rules"] and "rules" not in co  # (none recorded without rules: older stores resume)


#: The ball beside the elbow of the rules test [m], and the hand's larger minimum [m].
BALL_CENTRE = np.array([0.12, 0.0, 0.75])
BALL_RADIUS = 0.06
HAND_MINIMUM = 0.08


def test_resume_tells_exact_meshes_apart(tmp_path, panda, solver):
    """An exact mesh obstacle (queried with coal) is part of the world a store records."""
    from stackik.model.world import load_mesh

    tetra = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf 1 2 4\nf 1 3 4\nf 2 3 4\n"
    (tmp_path / "tetra.obj").write_text(tetra)

    def mesh_world(scale: list[float]) -> World:
        world = World()
        mesh = load_mesh(tmp_path / "tetra.obj", scale, convex=False)
        world.add_obstacle("part", mesh, block_pose())
        return world

    T = poses_at(targets()[:2])
    kw = {"evaluators": [], "chunk_size": 2}
    store = tmp_path / "study.zarr"
    ReachStudy(panda, FRAME, T, solver, world=mesh_world([0.2, 0.2, 0.2]), **kw).run(
        "serial", store=store, progress=False
    )
    again = ReachStudy(panda, FRAME, T, solver, world=mesh_world([0.2, 0.2, 0.2]), **kw)
    again.run("serial", store=store, progress=False)  # (the same mesh: resumes)
    stretched = ReachStudy(panda, FRAME, T, solver, world=mesh_world([0.2, 0.2, 0.5]), **kw)
    with pytest.raises(StudyMismatch, match=r"another world at obstacles\[0\]\.shape"):
        stretched.run("serial", store=store, progress=False)


# -- plots -----------------------------------------------------------------------------------------
def test_reason_plot_colours_world_collisions_and_draws_the_block(tmp_path, studies):
    from matplotlib.colors import to_rgba

    from stackik.reach.plots import REASON_COLOURS

    _, res, _ = studies
    colours = [to_rgba(c) for c in REASON_COLOURS.values()]
    assert len(set(colours)) == len(Reason) == len(REASON_COLOURS)
    fig = res.plot_reasons(tmp_path / "reasons.png", world=make_world())
    assert (tmp_path / "reasons.png").stat().st_size > 1000
    ax = fig.axes[0]
    labels = {c.get_label(): c for c in ax.collections}
    n_world = int((res.reason == Reason.WORLD_COLLISION).sum())
    scatter = labels[f"WORLD_COLLISION ({n_world})"]
    # RGB (the 3-d view shades the alpha by depth)
    np.testing.assert_allclose(scatter.get_facecolor()[0][:3], to_rgba("tab:orange")[:3])
    # The block's 12 edges, each joining two corners CENTRE +- HALF that differ in one axis.
    signs = np.array(list(np.ndindex(2, 2, 2))) * 2 - 1
    corners = {tuple(np.round(CENTRE + sg * HALF, 12)) for sg in signs}
    edges = [line.get_data_3d() for line in ax.lines]
    assert len(edges) == 12
    for xs, ys, zs in edges:
        ends = np.column_stack([xs, ys, zs])
        assert {tuple(np.round(e, 12)) for e in ends} <= corners
        assert np.count_nonzero(np.abs(ends[0] - ends[1]) > 1e-12) == 1
    with pytest.raises(InvalidInput) as err:
        res.plot_reasons(None, world="block")
    assert err.value.what == "world"


# -- command line ----------------------------------------------------------------------------------
def test_cli_study_in_a_scene(tmp_path):
    pytest.importorskip("typer")
    from typer.testing import CliRunner

    from stackik.cli.app import app

    scene = tmp_path / "cell.yaml"
    scene.write_text(
        "obstacles:\n"
        f"  - {{name: block, box: {(2 * HALF).tolist()}, pose: {{xyz: {CENTRE.tolist()}}}}}\n"
    )
    csv = tmp_path / "targets.csv"
    points = np.array([[0.5, 0.0, 0.25], [0.5, 0.0, 0.45]])  # 5 cm inside, 15 cm above
    # Tool pointing down: rotation pi about x, quaternion (w, x, y, z) = (0, 1, 0, 0).
    csv.write_text("".join(f"{x},{y},{z},0,1,0,0\n" for x, y, z in points))
    reasons = {}
    for flag in ("--collision", "--no-collision"):
        out = tmp_path / f"{flag}.zarr"
        res = CliRunner().invoke(
            app,
            [
                str(a)
                for a in (
                    "reach", "study", "--robot", PANDA, "--srdf", PANDA_SRDF, "--frame", FRAME,
                    "--targets", csv, "--out", out, "--executor", "serial", "--no-progress",
                    "--scene", scene, "--min-distance", MIN_DISTANCE, flag,
                )
            ],
        )  # fmt: skip
        assert res.exit_code == 0, res.output
        result = ReachResult.load(out)
        reasons[flag] = [Reason(int(r)) for r in result.reason]
        if flag == "--collision":
            assert "WORLD_COLLISION" in res.output
            assert result.header["world"]["obstacles"][0]["name"] == "block"
        else:
            assert result.header["world"] is None
    assert reasons["--collision"] == [Reason.WORLD_COLLISION, Reason.REACHABLE]
    assert reasons["--no-collision"] == [Reason.REACHABLE, Reason.REACHABLE]


def test_store_written_before_worlds_resumes(tmp_path, panda, solver):
    import zarr

    from stackik.reach.store import FORMAT

    T = poses_at(targets()[:4])
    store = tmp_path / "old.zarr"
    kw = {"evaluators": [], "chunk_size": 2}
    first = ReachStudy(panda, FRAME, T, solver, **kw).run("serial", store=store, progress=False)
    root = zarr.open_group(str(store), mode="r+")
    header = dict(root.attrs[FORMAT])
    assert header.pop("world") is None
    root.attrs[FORMAT] = header  # as a store written before studies had a world
    again = ReachStudy(panda, FRAME, T, solver, **kw).run("serial", store=store, progress=False)
    np.testing.assert_array_equal(again.reason, first.reason)
    with pytest.raises(StudyMismatch) as err:
        ReachStudy(panda, FRAME, T, solver, world=make_world(), **kw).run(
            "serial", store=store, progress=False
        )
    assert err.value.what == "world"


def test_collision_distance_score_counts_the_world(panda, solver):
    from stackik.reach import CollisionDistance

    T = poses_at(np.array([[0.5, 0.0, 0.33], [0.45, 0.05, 0.335], [0.55, -0.05, 0.34]]))
    res = ReachStudy(
        panda, FRAME, T, solver, [CollisionDistance(distance=1.0)], world=make_world()
    ).run("serial", progress=False)
    assert res.reachable.all()
    check = CoalCheck(block_pose())
    pairs = solver.get_constraint("collision").pair_names()
    for k in range(len(T)):
        q = res.q[k]
        d_world = check.world_distances(q).min()
        d_self = min(check.distance(q, a, b) for a, b in pairs)
        assert d_world < d_self  # the block is the nearest thing
        assert res.scores["collision_distance"][k] == pytest.approx(min(d_world, d_self), abs=1e-6)


def test_a_base_resting_on_a_table_does_not_block_every_target(panda, solver):
    """The Panda's base link touches the table top: that pair is the same for every target."""
    T = poses_at(np.array([[0.5, 0.0, 0.2], [0.4, 0.2, 0.3], [0.5, 0.0, -0.03], [0.5, 0.1, -0.05]]))
    world = World()
    table = np.eye(4)
    table[2, 3] = -0.025  # top face at z = 0, where panda_link0 stands
    world.add_obstacle("table", coal.Box(2.0, 2.0, 0.05), table)
    res = ReachStudy(panda, FRAME, T, solver, [], world=world).run("serial", progress=False)
    assert res.reachable[:2].all()  # above the table
    # The tool point 3 and 5 cm inside the table: the hand above it crosses the top face.
    assert np.all(res.reason[2:] == Reason.WORLD_COLLISION)
    # coal: the base touches the table (distance below the minimum), every moving link keeps it.
    model, geom, _ = pin.buildModelsFromUrdf(
        str(PANDA), geometry_types=[pin.GeometryType.COLLISION, pin.GeometryType.VISUAL]
    )
    data = model.createData()
    box = geom.addGeometryObject(
        pin.GeometryObject("table", 0, pin.SE3(table), coal.Box(2, 2, 0.05))
    )
    for g in range(box):
        geom.addCollisionPair(pin.CollisionPair(g, box))
    gdata = pin.GeometryData(geom)
    fixed = [g.parentJoint == 0 for g in geom.geometryObjects[:box]]
    assert any(fixed)
    for k in np.flatnonzero(res.reachable):
        pin.computeDistances(model, data, geom, gdata, res.q[k])
        d = np.array([r.min_distance for r in gdata.distanceResults])
        assert d[np.array(fixed)].min() < MIN_DISTANCE  # never checked: always this close
        assert d[~np.array(fixed)].min() >= MIN_DISTANCE - 1e-9


def test_a_part_touching_the_body_that_carries_it_does_not_block_every_target(panda, solver):
    """A part on the hand reaches back into ``panda_link7`` (coal: 3 cm inside at every
    configuration: joint 7 carries both). That pair is the same for every target, so it
    is not checked (every target was WORLD_COLLISION)."""
    T = poses_at(np.array([[0.5, 0.0, 0.5], [0.4, 0.2, 0.4], [0.3, -0.2, 0.6]]))
    world = World()
    part = np.eye(4)
    part[2, 3] = 0.02
    world.attach_object("part", "panda_hand", coal.Box(0.04, 0.04, 0.10), part)
    res = ReachStudy(panda, FRAME, T, solver, [], world=world).run("serial", progress=False)
    assert res.reachable.all()
    model, geom, _ = pin.buildModelsFromUrdf(
        str(PANDA), geometry_types=[pin.GeometryType.COLLISION, pin.GeometryType.VISUAL]
    )
    data = model.createData()
    (link7,) = [k for k, g in enumerate(geom.geometryObjects) if g.name.startswith("panda_link7")]
    hand = model.getFrameId("panda_hand")
    for q in res.q:
        pin.framesForwardKinematics(model, data, q)
        gd = pin.GeometryData(geom)
        pin.updateGeometryPlacements(model, data, geom, gd)
        M, L = data.oMf[hand] * pin.SE3(part), gd.oMg[link7]
        d = coal.distance(
            coal.Box(0.04, 0.04, 0.10), coal.Transform3s(M.rotation, M.translation),
            geom.geometryObjects[link7].geometry, coal.Transform3s(L.rotation, L.translation),
            coal.DistanceRequest(), coal.DistanceResult(),
        )  # fmt: skip
        assert d < -0.02  # (inside the link, however the arm stands)


def test_pairs_the_constraint_excludes_are_not_checked():
    T = poses_at(np.array([[0.5, 0.0, 0.25]]))  # 5 cm inside the block
    robot = RobotModel(PANDA, srdf_path=PANDA_SRDF, load_visuals=False)
    robot.add_obstacle("block", coal.Box(*(2 * HALF)), block_pose())
    hand = ["panda_hand", "panda_link7", "panda_link6", "panda_link5"]
    s = KinematicsSolver(robot)
    s.configure_collision_constraint(MIN_DISTANCE, exclude_pairs=[(h, "block") for h in hand])
    res = ReachStudy(robot, FRAME, T, s, []).run("serial", progress=False)
    blocked = ReachStudy(robot, FRAME, T, solver_with(robot), []).run("serial", progress=False)
    assert blocked.reason[0] == Reason.WORLD_COLLISION
    assert res.reason[0] == Reason.REACHABLE
    # The links left in the block's pairs keep their distance (coal).
    check = CoalCheck(block_pose())
    d = check.world_distances(res.q[0])
    watched = [
        k for k, g in enumerate(check.geom.geometryObjects[: check.n_world])
        if not any(g.name.startswith(h + "_") or g.name == h for h in hand)
    ]  # fmt: skip
    assert d[watched].min() >= MIN_DISTANCE - 1e-9


def solver_with(robot: RobotModel) -> KinematicsSolver:
    s = KinematicsSolver(robot)
    s.configure_collision_constraint(MIN_DISTANCE)
    return s


def test_a_mismatch_names_the_first_item_one_list_has_more_of():
    """A stored list longer or shorter than this run's: the first item it has extra."""
    from stackik.reach.describe import _ABSENT, _first_difference

    a = {"pairs": [["l0", "l4"], ["l0", "l5"]]}
    b = {"pairs": [["l0", "l4"], ["l0", "l5"], ["l0", "table"]]}
    assert _first_difference(a, b) == ("pairs[2]", _ABSENT, ["l0", "table"])
    assert _first_difference(b, a) == ("pairs[2]", ["l0", "table"], _ABSENT)
    assert _first_difference({"x": [1, 2]}, {"x": [1, 3, 4]}) == ("x[1]", 2, 3)
    # A key only one mapping has: named, its value against _ABSENT (the first in sorted
    # order); a stored null is a value, and the message tells the two apart.
    assert _first_difference({"a": 1, "c": {"d": 2}}, {"a": 1, "b": 0, "c": {}}) == (
        "b",
        _ABSENT,
        0,
    )
    assert _first_difference({"c": {"d": 2}}, {"c": {}}) == ("c.d", 2, _ABSENT)
    assert _first_difference({"t": None}, {}) == ("t", None, _ABSENT)
    err = StudyMismatch("s.zarr", "spec", {"t": None}, {})
    assert "another spec at t (null vs this run's (absent))" in str(err)


def test_a_study_without_evaluators_titles_its_plot_without_a_score(tmp_path, panda, solver):
    T = poses_at(targets()[:4])
    res = ReachStudy(panda, FRAME, T, solver, evaluators=[]).run("serial", progress=False)
    fig = res.plot(tmp_path / "score.png")
    title = fig._suptitle.get_text()
    assert "no evaluators" in title and "mean score" not in title


# -- whose names: the constraint's world or another ------------------------------------------------
def far_below() -> np.ndarray:
    T = np.eye(4)
    T[2, 3] = -5.0
    return T


def robot_world_distance(check: CoalCheck, q: np.ndarray, moving_only: bool = False) -> float:
    """Smallest coal distance of the robot geometries (or those off the base) to the block."""
    d = check.world_distances(q)
    if moving_only:
        d = d[[g.parentJoint != 0 for g in check.geom.geometryObjects[: check.n_world]]]
    return float(d.min())


def test_an_exclusion_of_the_constraints_world_leaves_another_worlds_namesake_checked():
    """The robot's world holds a ball called "block" 5 m below, which the constraint
    excludes; the study's world has a block of its own under the targets. The study's
    block is checked: its name means another object (targets 5 and 10 cm inside it were
    REACHABLE, the robot 6 and 11 cm deep in it by coal)."""
    T = poses_at(np.array([[0.5, 0.0, 0.25], [0.5, 0.05, 0.2], [0.5, 0.0, 0.45]]))
    assert depth_inside(T[:2, :3, 3]).min() >= 0.05 - 1e-9  # closed form
    robot = RobotModel(PANDA, srdf_path=PANDA_SRDF, load_visuals=False)
    robot.add_obstacle("block", coal.Sphere(0.05), far_below())
    s = KinematicsSolver(robot)
    s.configure_collision_constraint(MIN_DISTANCE, exclude_pairs=[("*", "block")])
    res = ReachStudy(robot, FRAME, T, s, [], world=make_world()).run("serial", progress=False)
    assert list(res.reason) == [Reason.WORLD_COLLISION] * 2 + [Reason.REACHABLE]
    check = CoalCheck(block_pose())
    assert robot_world_distance(check, res.q[2]) >= MIN_DISTANCE - 1e-9
    # In the world it reads, the exclusion holds: the block it names is not checked.
    robot.world.set_obstacle_pose("block", block_pose())
    own = ReachStudy(robot, FRAME, T, s, []).run("serial", progress=False)
    assert own.reachable.all()
    assert robot_world_distance(check, own.q[0]) < 0.0  # (coal: inside the block)


def test_another_worlds_obstacle_keeps_its_own_or_the_global_minimum():
    """The global minimum is 5 cm; the robot's world holds an unrelated "block" 5 m below
    with a minimum of its own of 0 and a per-pair minimum of 0 to the hand. The study's
    block has no minimum of its own: every reached target keeps 5 cm from it (coal), as
    for a robot whose world has no such name (targets 2.1 cm from it were REACHABLE)."""
    md = 0.05
    T = poses_at(np.array([[0.5, y, z] for z in (0.33, 0.35, 0.38, 0.42) for y in (-0.1, 0, 0.1)]))
    robot = RobotModel(PANDA, srdf_path=PANDA_SRDF, load_visuals=False)
    robot.add_obstacle("block", coal.Sphere(0.05), far_below(), min_distance=0.0)
    s = KinematicsSolver(robot)
    s.configure_collision_constraint(md)
    s.set_collision_pair_min_distance("panda_hand", "block", 0.0)
    res = ReachStudy(robot, FRAME, T, s, [], world=make_world()).run("serial", progress=False)
    plain = RobotModel(PANDA, srdf_path=PANDA_SRDF, load_visuals=False)
    ps = KinematicsSolver(plain)
    ps.configure_collision_constraint(md)
    ref = ReachStudy(plain, FRAME, T, ps, [], world=make_world()).run("serial", progress=False)
    np.testing.assert_array_equal(res.reason, ref.reason)
    np.testing.assert_array_equal(res.q, ref.q)
    reached = np.flatnonzero(res.reachable)
    assert 0 < reached.size < len(T)
    check = CoalCheck(block_pose())
    for k in reached:
        assert robot_world_distance(check, res.q[k]) >= md - 1e-9, k


def test_exclusions_and_minimums_named_by_the_robot_alone_apply_to_another_world():
    """``("panda_hand", "*")`` names the robot alone: it applies to any world's objects.
    A name of the constraint's world (its ball) does not reach the study's ball."""
    T = poses_at(np.array([[0.5, 0.0, 0.25]]))  # 5 cm inside the block
    robot = RobotModel(PANDA, srdf_path=PANDA_SRDF, load_visuals=False)
    robot.add_obstacle("ball", coal.Sphere(0.05), far_below())
    hand = ["panda_hand", "panda_link7", "panda_link6", "panda_link5"]
    s = KinematicsSolver(robot)
    s.configure_collision_constraint(MIN_DISTANCE, exclude_pairs=[(h, "*") for h in hand])
    s.set_collision_pair_min_distance("link4", "*", 0.03)  # (part of a link name)
    s.set_collision_pair_min_distance("panda_link3", "ball", 0.0)
    cell = make_world()
    cell.add_obstacle("ball", coal.Sphere(0.05), block_pose(0.6))
    study = ReachStudy(robot, FRAME, T, s, [], world=cell)
    res = study.run("serial", progress=False)
    assert res.reason[0] == Reason.REACHABLE  # (the hand's links may enter the block)
    check = CoalCheck(block_pose())
    d = check.world_distances(res.q[0])
    geoms = check.geom.geometryObjects[: check.n_world]
    for k, g in enumerate(geoms):
        if not any(g.name.startswith(h + "_") or g.name == h for h in hand):
            limit = 0.03 if g.name.startswith("panda_link4") else MIN_DISTANCE
            assert d[k] >= limit - 1e-9, g.name
    # The pairs and minimums the study checks, by name.
    verifier = study.worker_context().chunk_solver().verifier
    assert verifier.world is not None
    gs = verifier.world.pipeline.geometry(verifier.world.state)
    checked = {
        (gs.names[a], gs.names[b]): float(t)
        for (a, b), t in zip(verifier.world.pairs, verifier.world.thresholds, strict=True)
    }
    assert checked and not any(gs.links[a] in hand for a, _ in verifier.world.pairs)
    for (a, b), t in checked.items():
        assert t == (0.03 if a.startswith("panda_link4") else MIN_DISTANCE), (a, b)
    assert ("panda_link3_0", "ball") in checked  # (at the global minimum, not 0)


def test_a_copy_of_the_constraints_world_is_that_world():
    """A ``World.from_state`` copy of the world the constraint reads has its objects (one
    layout): the constraint's exclusions apply to it, as to that world itself."""
    T = poses_at(np.array([[0.5, 0.0, 0.25]]))
    robot = RobotModel(PANDA, srdf_path=PANDA_SRDF, load_visuals=False)
    robot.add_obstacle("block", coal.Box(*(2 * HALF)), block_pose())
    s = KinematicsSolver(robot)
    s.configure_collision_constraint(MIN_DISTANCE, exclude_pairs=[("*", "block")])
    copy = World.from_state(robot.world.state)
    study = ReachStudy(robot, FRAME, T, s, [], world=copy)
    assert study.worker_context().same_world
    own = ReachStudy(robot, FRAME, T, s, []).run("serial", progress=False)
    res = study.run("serial", progress=False)
    assert own.reason[0] == res.reason[0] == Reason.REACHABLE
    np.testing.assert_array_equal(res.q, own.q)
    # Another world with its own block: checked (its block is another object).
    assert not ReachStudy(robot, FRAME, T, s, [], world=make_world()).worker_context().same_world


def test_a_world_that_does_not_fit_the_robot_is_refused(tmp_path, panda, solver):
    """A standalone world knows no robot: the study refuses objects named like the robot's
    links or geometries (an obstacle called "panda_link3_0" was never checked: the robot
    9 cm deep in it, REACHABLE) and attached objects on, or allowed to touch, links the
    robot lacks (an unknown allowed link was silently accepted)."""
    T = poses_at(np.array([[0.5, 0.0, 0.45]]))
    for name in ("panda_link3_0", "panda_link3", "panda_hand_tcp"):
        world = World()
        world.add_obstacle(name, coal.Sphere(0.08), block_pose())
        with pytest.raises(InvalidInput, match=name) as err:
            ReachStudy(panda, FRAME, T, solver, [], world=world)
        assert err.value.what == "world"
    # An object added after the study was made: refused when the run takes its snapshot,
    # before anything is stored.
    world = make_world()
    study = ReachStudy(panda, FRAME, T, solver, [], world=world)
    world.add_obstacle("panda_link5_0", coal.Sphere(0.05), block_pose(1.0))
    store = tmp_path / "study.zarr"
    with pytest.raises(InvalidInput, match="panda_link5_0"):
        study.run("serial", store=store, progress=False)
    assert not store.exists()
    for link, allowed in (("tool0", ()), ("panda_hand", ("panda_link7", "wrist_3_link"))):
        world = make_world()
        world.attach_object("tool", link, coal.Sphere(0.02), allowed_links=allowed)
        unknown = link if link == "tool0" else "wrist_3_link"
        with pytest.raises(FrameNotFound, match=f"'tool'.*'{unknown}'") as err:
            ReachStudy(panda, FRAME, T, solver, [], world=world)
        assert err.value.name == unknown
    # A fitting world is accepted.
    world = make_world()
    world.attach_object("tool", "panda_hand", coal.Sphere(0.02), allowed_links="panda_link7")
    ReachStudy(panda, FRAME, T, solver, [], world=world)


def test_a_world_distance_that_is_not_a_number_is_a_collision(panda, solver):
    """A world whose snapshot has a NaN obstacle position (``World.from_state`` refuses
    one; this world is forged past it) cannot certify any configuration: every target is
    WORLD_COLLISION (NaN compared below zero as False: every target was REACHABLE)."""
    T = poses_at(np.array([[0.5, 0.0, 0.45], [0.45, 0.1, 0.5]]))  # above the block
    study = ReachStudy(panda, FRAME, T, solver, [], world=make_world())
    context = study.worker_context()
    assert study.run("serial", progress=False).reachable.all()
    state = context.world.state
    translations = state.translations.copy()
    translations[0, 0] = np.nan
    forged = World()
    forged._state = dataclasses.replace(state, translations=translations)
    with pytest.raises(NonFiniteInput, match="'block'"):
        World.from_state(forged.state)
    bad = WorkerContext(context.solver, context.spec, context.envelope, forged, True)
    out = bad.chunk_solver().solve(0, T)
    assert np.all(out.reason == Reason.WORLD_COLLISION)
