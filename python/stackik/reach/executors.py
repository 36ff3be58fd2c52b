"""Where chunks run: in this process, in a local process pool, or as Ray tasks.

Every executor runs the same :class:`~stackik.reach.solve.ChunkSolver` on the same
chunks, so results are identical whatever runs them. What a worker needs is one
:class:`WorkerContext` (the solver, the study's spec, the envelope and the study's frozen
world):

- the serial executor builds its chunk solver on the context itself, nothing pickled;
- the process pool and Ray get :meth:`WorkerContext.payload`, the context pickled with
  the robot replaced by :meth:`~stackik.RobotModel.without_visuals` (no visual meshes:
  megabytes less and seconds faster on a robot loaded with its meshes). Each worker
  process unpickles it once and keeps its chunk solver: the pool through its
  initializer, Ray through an object reference that a worker fetches only when it has
  no chunk solver for that payload yet. Tasks then carry one chunk of target poses each;
  results stream back as they finish.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import pickle
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from io import BytesIO
from typing import Any, Protocol

import numpy as np

from ..model.world import World
from .envelope import ReachEnvelope
from .settings import StudySpec
from .solve import ChunkResult, ChunkSolver

__all__ = ["EXECUTORS", "WorkerContext", "run_chunks"]

EXECUTORS = ("local", "ray", "serial")
#: Tasks kept in flight per worker (so results stream while others compute).
_IN_FLIGHT = 2

Job = tuple[int, np.ndarray]


class Jobs(Protocol):
    """Chunks to run: a sized iterable of ``(chunk index, poses)``."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Job]: ...


@dataclass(frozen=True)
class WorkerContext:
    """Everything a worker needs besides its chunks, sent once per worker process.

    Attributes:
        solver: The :class:`~stackik.KinematicsSolver` that defines "reachable".
        spec: The study's spec.
        envelope: The reach envelope (None: no rejection).
        world: The study's world, a frozen snapshot taken when the run started
            (:meth:`~stackik.model.world.World.from_state`; None: no world). It travels
            in the payload, once per worker, never with a chunk.
        same_world: Whether ``world`` is a snapshot of the world the solver's collision
            constraint reads (decided when the run started, where both are the user's
            objects: a worker's copies are separate objects).
    """

    solver: Any
    spec: StudySpec
    envelope: ReachEnvelope | None
    world: World | None = None
    same_world: bool = False

    def chunk_solver(self) -> ChunkSolver:
        """A chunk solver on this context (built once per worker)."""
        return ChunkSolver(self.solver, self.spec, self.envelope, self.world, self.same_world)

    def payload(self) -> bytes:
        """The context pickled for worker processes, its robot without visual geometry.

        Every reference to the solver's robot (the solver's, an evaluator's, a
        ``validate`` callback's) becomes one copy from
        :meth:`~stackik.RobotModel.without_visuals`.
        """
        robot = self.solver.robot
        buf = BytesIO()
        _LightPickler(buf, robot, robot.without_visuals()).dump(self)
        return buf.getvalue()


def _same(obj: Any) -> Any:
    return obj


class _LightPickler(pickle.Pickler):
    """A pickler that writes ``light`` wherever it meets ``robot``."""

    def __init__(self, file: BytesIO, robot: Any, light: Any) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._robot, self._light = robot, light

    def reducer_override(self, obj: Any) -> Any:
        if obj is self._robot:
            return _same, (self._light,)
        return NotImplemented


#: The chunk solver of this worker process, by payload digest.
_WORKER: dict[str, ChunkSolver] = {}


def _solver_from(payload: bytes, key: str) -> ChunkSolver:
    cs = _WORKER.get(key)
    if cs is None:
        context: WorkerContext = pickle.loads(payload)
        _WORKER.clear()
        cs = context.chunk_solver()
        _WORKER[key] = cs
    return cs


def _init_worker(payload: bytes, key: str) -> None:
    """Pool initializer: build this process's chunk solver once."""
    _solver_from(payload, key)


def _pool_chunk(key: str, chunk: int, poses: np.ndarray) -> ChunkResult:
    return _WORKER[key].solve(chunk, poses)


def _ray_chunk(boxed: list[Any], key: str, chunk: int, poses: np.ndarray) -> ChunkResult:
    # The payload's object reference comes boxed in a list, so Ray does not fetch it
    # for every task: a worker fetches it once, when it has no chunk solver for ``key``.
    cs = _WORKER.get(key)
    if cs is None:
        import ray

        cs = _solver_from(ray.get(boxed[0]), key)
    return cs.solve(chunk, poses)


def digest(payload: bytes) -> str:
    """Key of a payload (a worker rebuilds its solver when the key changes)."""
    return hashlib.sha256(payload).hexdigest()


def _serial(context: WorkerContext, jobs: Jobs) -> Iterator[ChunkResult]:
    cs = context.chunk_solver()
    for chunk, poses in jobs:
        yield cs.solve(chunk, poses)


def _context() -> Any:
    methods = multiprocessing.get_all_start_methods()
    if "forkserver" in methods:
        ctx = multiprocessing.get_context("forkserver")
        # Workers fork from a server that has loaded the compiled kernels once (and
        # imported the main module, so evaluators defined there unpickle).
        ctx.set_forkserver_preload(["__main__", __name__, f"{__package__}._forkserver"])
        return ctx
    return multiprocessing.get_context("spawn")


def _local(payload: bytes, jobs: Jobs, workers: int) -> Iterator[ChunkResult]:
    import concurrent.futures as cf

    key = digest(payload)
    pool = cf.ProcessPoolExecutor(
        workers, mp_context=_context(), initializer=_init_worker, initargs=(payload, key)
    )
    pending: set[cf.Future] = set()
    it = iter(jobs)
    try:
        for chunk, poses in it:
            pending.add(pool.submit(_pool_chunk, key, chunk, poses))
            if len(pending) >= _IN_FLIGHT * workers:
                break
        while pending:
            done, pending = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
            for fut in done:
                nxt = next(it, None)
                if nxt is not None:
                    pending.add(pool.submit(_pool_chunk, key, nxt[0], nxt[1]))
                yield fut.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _ray(
    payload: bytes, jobs: Jobs, workers: int | None, address: str | None
) -> Iterator[ChunkResult]:
    import ray

    if not ray.is_initialized():
        local = address is None
        # A local instance's workers import what this process imports (a user's
        # evaluators or validate callback defined next to the script).
        paths = [p for p in sys.path if p and os.path.isdir(p)]
        ray.init(
            address=address,
            num_cpus=workers if local else None,
            include_dashboard=False,
            logging_level=40,  # logging.ERROR
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(paths)}} if local else None,
        )
    if workers is None:
        workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
    key = digest(payload)
    boxed = [ray.put(payload)]
    task = ray.remote(num_cpus=1, max_retries=3)(_ray_chunk)
    it = iter(jobs)
    pending = []
    for chunk, poses in it:
        pending.append(task.remote(boxed, key, chunk, poses))
        if len(pending) >= _IN_FLIGHT * workers:
            break
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        nxt = next(it, None)
        if nxt is not None:
            pending.append(task.remote(boxed, key, nxt[0], nxt[1]))
        yield ray.get(done[0])


def run_chunks(
    context: WorkerContext,
    jobs: Jobs,
    executor: str,
    workers: int | None,
    address: str | None = None,
) -> Iterator[ChunkResult]:
    """Results of ``jobs`` (chunk index, poses) as they finish, on an executor.

    Args:
        context: What every worker needs (pickled once for the pool and Ray; used as
            it is by the serial executor).
        jobs: The chunks to run.
        executor: ``"local"`` (process pool), ``"ray"`` or ``"serial"``.
        workers: Processes (``None``: every core; Ray: the cluster's CPUs).
        address: Ray cluster address (``None``: a local Ray instance).
    """
    if not jobs:
        return iter(())
    if executor == "serial":
        return _serial(context, jobs)
    if executor == "ray":
        return _ray(context.payload(), jobs, workers, address)
    n = workers or os.cpu_count() or 1
    return _local(context.payload(), jobs, max(1, min(n, len(jobs))))
