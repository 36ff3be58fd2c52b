"""ReachStudy: reachability of many targets, in chunks, on any executor, resumable."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import _validate
from ..constraints.collision import CollisionConstraint
from ..errors import FrameNotFound, InvalidInput
from ..ik.global_ import GlobalIK
from ..model import RobotModel
from ..model.world import World, WorldState
from .describe import robot_digest, solver_settings, world_fingerprint
from .envelope import ReachEnvelope, describe_envelope, envelope_for
from .evaluators import Evaluator, check_evaluators, evaluator_settings
from .executors import EXECUTORS, WorkerContext, run_chunks
from .progress import progress_bar
from .result import ReachResult
from .settings import ReachBudget, StudySpec
from .solve import ChunkResult
from .store import ReachStore, stackik_version
from .targets import TargetSet, as_target_set

__all__ = ["ReachStudy", "check_world_fits", "spatial_order"]

#: Default number of targets per chunk.
DEFAULT_CHUNK_SIZE = 2048


def spatial_order(positions: np.ndarray) -> np.ndarray:
    """A spatially coherent order of points: their Morton (Z-order) curve.

    Positions are quantized to ``2^21`` cells per axis of their bounding box; points in
    one cell (a grid voxel's orientations) keep their given order.
    """
    P = np.asarray(positions, dtype=float)
    if not len(P):
        return np.zeros(0, dtype=np.int64)
    lo = P.min(axis=0)
    extent = float((P.max(axis=0) - lo).max())
    cells = 2**21 - 1
    idx = np.zeros(P.shape, dtype=np.uint64)
    if extent > 0:
        idx = np.minimum(np.floor((P - lo) / extent * cells), cells).astype(np.uint64)
    code = np.zeros(len(P), dtype=np.uint64)
    for bit in range(21):
        for d in range(3):
            code |= ((idx[:, d] >> np.uint64(bit)) & np.uint64(1)) << np.uint64(3 * bit + d)
    return np.argsort(code, kind="stable").astype(np.int64)


def _default_reference(robot: RobotModel, gik: GlobalIK, frame: str) -> np.ndarray:
    """The middle of the frame's chain joint limits, the neutral configuration elsewhere."""
    chain = gik.chains.plain(frame)
    return chain.to_full(chain.mid_configuration(), robot.neutral_configuration())


class ReachStudy:
    """Which of many target poses a robot's frame reaches, and how well (REACH).

    Targets are sorted along a spatial curve and cut into chunks of ``chunk_size``;
    each chunk is solved with neighbour seeding (see :mod:`stackik.reach.solve`) on an
    executor, written to an optional zarr store as it finishes, and scored by the
    evaluators. The result depends only on the inputs and ``seed``: the same on every
    executor, with any number of workers, after a resume.

    Args:
        robot: The robot.
        frame: The tool frame placed on the targets.
        targets: A :class:`~stackik.reach.TargetSet` or an ``(N, 4, 4)`` pose array [m].
        solver: A configured :class:`~stackik.KinematicsSolver` on ``robot``: its limit
            margin, collision constraint (pairs, minimum distances) and CoM polygons
            define what "reachable" means. None: a plain solver (limits only).
        evaluators: Scores of reached targets (default: manipulability and distance to
            the joint limits); ``[]`` for none.
        seeding: ``"neighbors"`` (solutions of solved neighbours first, REACH),
            ``"reference"`` (the reference configuration, then random restarts) or
            ``"random"`` (random restarts only).
        time_budget: Opt-in wall-clock cap per target [s] (a chunk gets ``m *
            time_budget``): targets left when it runs out get reason ``BUDGET``. It
            **breaks reproducibility** (the cut depends on the machine's speed and load);
            the default ``None`` bounds the work by ``budget`` only.
        seed: Seed of the random restarts (per chunk: ``(seed, chunk)``).
        budget: The per-target attempts and iterations (:class:`ReachBudget`).
        reference_q: The first start of every target and the value of the joints off the
            chain (default: the middle of the chain's limits, neutral elsewhere).
        locked_joints: Joints held at ``reference_q``.
        position_tolerance: Accepted position error [m].
        orientation_tolerance: Accepted orientation error [rad].
        chunk_size: Targets per chunk (the unit of work, storage and resume).
        validate: ``validate(q) -> bool``: a further test of every candidate (must be
            picklable for the process pool and Ray).
        envelope: Reject targets outside the reach envelope without IK (True), or not.
        world: The :class:`~stackik.World` around the robot (obstacles, attached
            objects). None: the solver's world (``solver.world``: its own, given with
            ``solver.set_world``, or the robot's), as it is when :meth:`run` starts; a
            solver with a world of its own takes no other. Either way each run takes
            one snapshot of the world's state when it starts and every chunk, on every
            worker, checks that frozen copy: a sensor thread moving obstacles during
            the study does not make chunks disagree (the moves count from the next
            run). Every configuration is checked against every robot-world pair (see
            :class:`~stackik.reach.Reason` ``WORLD_COLLISION``); the snapshot's
            obstacles and poses are stored in the header, and a store resumes only
            with the same world. The collision constraint's exclusions and per-pair
            minimums apply to it by name only when it is the world the constraint
            reads (see the reachability guide, "Studies in a workcell").

    Raises:
        InvalidInput: Bad arguments (the message names which), ``world`` other than
            the world of a solver that has its own, or a world whose obstacles or
            attached objects take names of the robot's links or collision geometries.
        FrameNotFound, JointNotFound: Unknown frame or locked joint, or an attached
            object of the world on (or allowed to touch) a link the robot lacks.
    """

    def __init__(
        self,
        robot: RobotModel,
        frame: str,
        targets: TargetSet | object,
        solver: Any = None,
        evaluators: Sequence[Evaluator] | None = None,
        seeding: str = "neighbors",
        time_budget: float | None = None,
        *,
        seed: int = 0,
        budget: ReachBudget | None = None,
        reference_q: object | None = None,
        locked_joints: Sequence[str] = (),
        position_tolerance: float = 1e-5,
        orientation_tolerance: float = 1e-4,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        validate: Callable[[np.ndarray], bool] | None = None,
        envelope: bool = True,
        world: World | None = None,
    ) -> None:
        from ..solver import KinematicsSolver

        if not isinstance(robot, RobotModel):
            raise InvalidInput(f"robot must be a RobotModel, got {type(robot).__name__}")
        if world is not None and not isinstance(world, World):
            raise InvalidInput(
                f"world must be a stackik World, got {type(world).__name__}", what="world"
            )
        robot.get_frame_id(frame)
        if solver is None:
            solver = KinematicsSolver(robot)
        elif not isinstance(solver, KinematicsSolver):
            raise InvalidInput(f"solver must be a KinematicsSolver, got {type(solver).__name__}")
        elif solver.robot is not robot:
            raise InvalidInput("the solver is built on another robot", what="solver")
        self.world = _study_world(world, solver.world if solver.world is not robot.world else None)
        self.robot = robot
        if self.world is not None:  # (the robot's own world refuses what does not fit it)
            check_world_fits(robot, self.world.state)
        self.solver = solver
        self.frame = frame
        self.targets = as_target_set(targets)
        self.chunk_size = _validate.count(chunk_size, "chunk_size", maximum=10_000_000)
        gik = GlobalIK(solver.engine)
        if reference_q is None:
            q_ref = _default_reference(robot, gik, frame)
        else:
            q_ref = robot.check_configuration(reference_q, "reference_q")
        self.spec = StudySpec(
            frame=frame,
            reference_q=np.asarray(q_ref, dtype=float),
            seed=seed,
            budget=ReachBudget() if budget is None else budget,
            seeding=seeding,
            position_tolerance=position_tolerance,
            orientation_tolerance=orientation_tolerance,
            locked_joints=tuple(locked_joints),
            evaluators=check_evaluators(evaluators),
            validate=validate,
            time_budget=time_budget,
            envelope=_validate.flag(envelope, "envelope"),
        )
        # Fail now, not in a worker: the chain to the frame and the locked joints.
        gik.setup(frame, self.spec.locked_joints, self.spec.reference_q)
        self._plain_chain = gik.chains.plain(frame)
        base = self._plain_chain.base_frame
        self._base_pose = np.eye(4)
        if base is not None:
            fid = robot.get_frame_id(base)
            self._base_pose = gik.workspace.frame_pose(self.spec.reference_q, fid).homogeneous
        self._order: np.ndarray | None = None
        self._envelope: ReachEnvelope | None = None

    # -- what the study is ------------------------------------------------------------------
    @property
    def order(self) -> np.ndarray:
        """Processing order of the targets (computed once)."""
        if self._order is None:
            self._order = spatial_order(self.targets.positions)
        return self._order

    @property
    def n_chunks(self) -> int:
        """Number of chunks."""
        return max(1, -(-len(self.targets) // self.chunk_size))

    def chain_base_pose(self) -> np.ndarray:
        """World pose of the searched chain's base at ``reference_q`` (identity: the world)."""
        return self._base_pose.copy()

    def envelope(self) -> ReachEnvelope | None:
        """The reach envelope used (built once per robot and frame, cached with the robot)."""
        if not self.spec.envelope:
            return None
        if self._envelope is None:
            self._envelope = envelope_for(self.robot, self._plain_chain)
        return self._envelope

    def envelope_description(self) -> dict[str, object] | None:
        """The envelope's settings, without building it (None when the envelope is off)."""
        if not self.spec.envelope:
            return None
        if self._envelope is not None:
            return self._envelope.describe()
        return describe_envelope(self._plain_chain)

    def world_state(self) -> WorldState:
        """The current snapshot of the study's world (its own, or the robot's)."""
        return (self.world if self.world is not None else self.robot.world).state

    def header(self, state: WorldState | None = None) -> dict[str, Any]:
        """The description stored with the results and compared on resume.

        Cheap: the envelope is described from its settings, not built.

        Args:
            state: The world snapshot of the run (default: the current one).
        """
        state = self.world_state() if state is None else state
        return {
            "kind": "study",
            "stackik_version": stackik_version(),
            "robot": {
                "name": self.robot.model.name,
                "digest": robot_digest(self.robot),
                "source": self.robot.source,
            },
            "frame": self.frame,
            "solver": solver_settings(self.solver),
            "spec": self.spec.describe(),
            "evaluators": evaluator_settings(self.spec.evaluators),
            "targets": self.targets.describe(),
            "envelope": self.envelope_description(),
            "world": world_fingerprint(state),
            "chunk_size": self.chunk_size,
            "base_placement": self.robot.base_placement.homogeneous.tolist(),
        }

    # -- running ------------------------------------------------------------------------------
    def run(
        self,
        executor: str = "local",
        workers: int | None = None,
        store: str | os.PathLike[str] | None = None,
        resume: bool = True,
        progress: bool = True,
        address: str | None = None,
    ) -> ReachResult:
        """Solve every chunk (those not finished in ``store``) and return the results.

        Args:
            executor: ``"local"`` (a process pool over ``workers`` processes, default every
                core), ``"ray"`` (Ray tasks; ``pip install stackik[cluster]``; a local
                Ray instance unless ``address`` or an existing ``ray.init``) or
                ``"serial"`` (this process).
            workers: Number of processes (None: every core, or the Ray cluster's CPUs).
            store: A zarr directory written as chunks finish (None: results in memory).
            resume: With an existing ``store`` of the same study, skip its finished chunks;
                ``False`` starts over (the store is replaced).
            progress: Show a progress bar (targets, targets/s, ETA).
            address: Ray cluster address (``executor="ray"`` only).

        Returns:
            The :class:`ReachResult` of every target.

        Raises:
            InvalidInput: Unknown executor, bad worker count; a world whose objects
                take names of the robot's links or geometries (as when the study was
                made: the world may have changed since).
            FrameNotFound: An attached object of the world on (or allowed to touch) a
                link the robot lacks.
            NonFiniteInput, InvalidTransform, ShapeError: The world's snapshot holds a
                pose or velocity that is not finite, or malformed arrays
                (:meth:`~stackik.model.world.World.from_state`).
            StudyMismatch: ``store`` holds a study with other settings (robot, frame,
                solver, evaluators, targets, ...).
        """
        if executor not in EXECUTORS:
            raise InvalidInput(
                f"executor must be one of {EXECUTORS}, got {executor!r}",
                what="executor",
                value=executor,
            )
        if workers is not None:
            workers = _validate.count(workers, "workers", maximum=4096)
        resume, progress = _validate.flag(resume, "resume"), _validate.flag(progress, "progress")
        t0 = time.perf_counter()
        state = self.world_state()  # one snapshot for the whole run
        frozen = self._freeze(state)  # (checked before anything is stored)
        header = self.header(state)
        st = self._open_store(store, header, resume) if store is not None else None
        done = st.done if st is not None else np.zeros(self.n_chunks, dtype=bool)
        pending = np.flatnonzero(~done)
        arrays = _empty_arrays(len(self.targets), self.robot.nq, self.spec.evaluators)
        order, cs = self.order, self.chunk_size
        jobs = _Jobs(self.targets.poses, order, cs, pending)
        finished_targets = sum(min(cs, len(order) - c * cs) for c in np.flatnonzero(done))
        stats: dict[str, Any] = {"chunks": 0, "cpu_time": 0.0, "chunk_time": 0.0, "timings": {}}
        # The envelope is built only when a chunk is left to solve.
        results = (
            run_chunks(self._context(state, frozen), jobs, executor, workers, address)
            if len(jobs)
            else iter(())
        )
        with progress_bar(len(order), finished_targets, "reach", progress) as bar:
            for res in results:
                if st is not None:
                    st.write_chunk(res.chunk, _chunk_arrays(res))
                _place(arrays, res, cs)
                done[res.chunk] = True
                _count(stats, res)
                bar.update(len(res.reason))
        wall = time.perf_counter() - t0
        if st is not None:
            st.add_wall_time(wall)
            result = ReachResult.from_arrays(st.read())
            result.run_stats = stats
            return result
        data = {
            "header": {**header, "wall_time": wall},
            "order": order,
            "poses": self.targets.poses,
            "metadata": self.targets.metadata,
            "done": done,
            **arrays,
        }
        result = _result_in_memory(data, self.targets)
        result.run_stats = stats
        return result

    def worker_context(self, state: WorldState | None = None) -> WorkerContext:
        """What every worker of a run gets: the solver, the spec, the envelope, the world.

        Args:
            state: The world snapshot of the run (default: the current one); the context
                holds a frozen copy of it (None when the world is empty).

        Raises:
            InvalidInput, FrameNotFound, NonFiniteInput, InvalidTransform, ShapeError:
                The snapshot does not fit the robot or is malformed (as :meth:`run`).
        """
        state = self.world_state() if state is None else state
        return self._context(state, self._freeze(state))

    def _source(self) -> World:
        """The world the study reads: its own, or the robot's."""
        return self.world if self.world is not None else self.robot.world

    def _freeze(self, state: WorldState) -> World | None:
        """A frozen copy of a snapshot of the study's world (None when it is empty), checked."""
        layout = state.layout
        if not (layout.obstacles or layout.attached):
            return None
        check_world_fits(self.robot, state)
        return type(self._source()).from_state(state)

    def _context(self, state: WorldState, frozen: World | None) -> WorkerContext:
        """The workers' context of a run on ``frozen``, a copy of the snapshot ``state``.

        The frozen copy is the collision constraint's world (its exclusions and per-pair
        minimums apply to it by name) when it was taken from the very world the
        constraint reads, or from a snapshot of it with the same objects (one layout).
        """
        col = self.solver.get_constraint("collision")
        same = isinstance(col, CollisionConstraint) and (
            col.world is self._source() or col.world.state.layout is state.layout
        )
        return WorkerContext(self.solver, self.spec, self.envelope(), frozen, same)

    def _open_store(self, path: str | os.PathLike[str], header: dict, resume: bool) -> ReachStore:
        p = Path(path)
        if resume and p.exists():
            st = ReachStore.open(p, writable=True)
            st.check_resume(header)
            return st
        return ReachStore.create(
            p,
            header,
            self.order,
            self.targets.poses,
            self.targets.metadata,
            self.robot.nq,
            [str(e.name) for e in self.spec.evaluators],
        )

    def __repr__(self) -> str:
        return (
            f"ReachStudy({self.robot.model.name!r}, frame={self.frame!r}, "
            f"{len(self.targets)} targets, {self.n_chunks} chunks)"
        )


class _Jobs:
    """The pending chunks as ``(chunk, poses)``, each chunk's poses gathered when sent."""

    def __init__(self, poses: np.ndarray, order: np.ndarray, cs: int, chunks: np.ndarray):
        self.poses, self.order, self.cs, self.chunks = poses, order, cs, chunks

    def __len__(self) -> int:
        return len(self.chunks)

    def __iter__(self) -> Iterator[tuple[int, np.ndarray]]:
        for c in self.chunks:
            yield int(c), self.poses[self.order[c * self.cs : (c + 1) * self.cs]]


def _empty_arrays(N: int, nq: int, evaluators: Sequence[Evaluator]) -> dict[str, Any]:
    return {
        "reason": np.full(N, -1, dtype=np.int8),
        "q": np.full((N, nq), np.nan),
        "score": np.zeros(N),
        "scores": {str(e.name): np.zeros(N) for e in evaluators},
        "position_error": np.full(N, np.inf),
        "orientation_error": np.full(N, np.inf),
        "iterations": np.zeros(N, dtype=np.int32),
        "solve_time": np.zeros(N, dtype=np.float32),
    }


def _chunk_arrays(res: ChunkResult) -> dict[str, Any]:
    return {
        "reason": res.reason,
        "q": res.q,
        "score": res.score,
        "scores": res.scores,
        "position_error": res.position_error,
        "orientation_error": res.orientation_error,
        "iterations": res.iterations,
        "solve_time": res.solve_time,
    }


def _place(arrays: dict[str, Any], res: ChunkResult, cs: int) -> None:
    """Copy a chunk's results into the processing-order arrays."""
    sl = slice(res.chunk * cs, res.chunk * cs + len(res.reason))
    for name, values in _chunk_arrays(res).items():
        if name == "scores":
            for k, v in values.items():
                arrays["scores"][k][sl] = v
        else:
            arrays[name][sl] = values


def _count(stats: dict[str, Any], res: ChunkResult) -> None:
    """Add a chunk's times to a run's figures."""
    stats["chunks"] += 1
    stats["cpu_time"] += res.cpu_time
    stats["chunk_time"] += res.elapsed
    for k, v in res.timings.items():
        stats["timings"][k] = stats["timings"].get(k, 0.0) + v


def _result_in_memory(data: dict[str, Any], targets: TargetSet) -> ReachResult:
    result = ReachResult.from_arrays(data)
    result.targets = targets  # the caller's set (metadata kept exactly as given)
    return result


def check_world_fits(robot: RobotModel, state: WorldState) -> None:
    """Refuse a world snapshot whose objects clash with the robot.

    A world bound to the robot (``robot.world``, a solver's ``set_world``) refuses such
    objects when they are added; a standalone :class:`~stackik.World` knows no robot,
    so a study checks its world against the robot it studies.

    Raises:
        InvalidInput: An obstacle or attached object takes the name of a link (frame)
            or collision geometry of the robot (a name in a pair list would mean two
            things; such an obstacle would not be told from the robot's geometry).
        FrameNotFound: An attached object is carried by, or allowed to touch, a link the
            robot does not have (the message names the object and the link).
    """
    layout = state.layout
    frames = robot.get_frame_names()
    taken = set(frames).union(robot.get_collision_geometry_names())
    clash = sorted(taken.intersection(layout.names()))
    if clash:
        raise InvalidInput(
            f"the study's world has objects named like links or collision geometries of "
            f"the robot: {clash} (rename them: a name must mean one thing)",
            what="world",
            value=clash,
        )
    known = set(frames)
    for a in layout.attached:
        for k, link in enumerate((a.link, *a.allowed_links)):
            if link not in known:
                err = FrameNotFound(link, frames)
                role = "is carried by" if k == 0 else "is allowed to touch"
                err.message = (
                    f"attached object {a.name!r} of the study's world {role} {link!r}, "
                    f"which the robot does not have: {err.message}"
                )
                raise err


def _study_world(given: World | None, own: World | None) -> World | None:
    """The study's world: ``given``, else the solver's ``own`` (None: the robot's).

    Raises:
        InvalidInput: ``given`` is another world than the one the solver avoids: its
            IK would avoid one world and the study check another.
    """
    if given is None or own is None or given is own:
        return own if given is None else given
    raise InvalidInput(
        "the solver avoids a world of its own (solver.set_world), so the study checks that "
        "one: pass world=None or the solver's world",
        what="world",
    )
