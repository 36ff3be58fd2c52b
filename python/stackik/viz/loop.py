"""The live solver loop behind the viewer, and the small interface the viewer uses.

The viewer needs four things from whatever runs the robot: start, stop, move a frame
task's target, and a :class:`LoopSnapshot` of the latest step. :class:`LiveLoop` is that
interface; :class:`ThreadedLoop` implements it with a thread of its own that calls
``solve_velocity`` and ``integrate`` at a fixed rate. A teleoperation control loop can
take its place through an adapter with these four methods (the viewer builds its loop
with the ``loop_factory`` it is given).

A snapshot may also carry the collision pairs the solver watches and their minimum
distances (:class:`WatchedPairs`, read in the loop's thread between steps), so that the
viewer's display thread never reads the solver's collision constraint while a step runs
(the constraint rebuilds its pair tables when the world's layout changes).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pinocchio as pin

from .._validate import positive_float
from ..constraints import CollisionConstraint
from ..solver import KinematicsSolver

#: How often a :class:`ThreadedLoop` re-reads the watched collision pairs when the
#: world's layout has not changed [s] (per-pair minimums set by name, say).
WATCH_REFRESH = 0.25


@dataclass(frozen=True)
class TaskRow:
    """One task in a snapshot.

    Attributes:
        name: Task name.
        priority: Its priority (0 is the highest).
        error: Norm of its masked error after the last step (units of the task: m, rad).
        scale: Scale ``s`` in [0, 1] achieved by its priority level in the last solve
            (NaN when the solve reported no scale).
    """

    name: str
    priority: int
    error: float
    scale: float


@dataclass(frozen=True)
class WatchedPairs:
    """The collision pairs a solver watches, with their minimum distances.

    Attributes:
        names: The watched pairs by geometry, obstacle or attached-object name (None:
            no collision constraint; every pair of the robot and its world is shown).
        min_distance: The constraint's global minimum distance [m] (0 without one).
        overrides: Minimum distances that differ from it, keyed by
            ``frozenset({name_a, name_b})`` [m] (per-pair settings, obstacles' own).
        world_layout: The world layout they were read at (compared by identity: a
            world swapped for another at the same revision is another layout).
    """

    names: tuple[tuple[str, str], ...] | None
    min_distance: float = 0.0
    overrides: Mapping[frozenset[str], float] = field(default_factory=dict)
    world_layout: object = None


def watched_pairs(solver: KinematicsSolver) -> WatchedPairs:
    """The pairs ``solver`` watches now (call it where no step of the solver can run)."""
    layout = solver.world.state.layout
    if not isinstance(solver.get_constraint("collision"), CollisionConstraint):
        return WatchedPairs(None, 0.0, {}, layout)
    overrides = {}
    for key, d in solver.get_collision_pair_min_distance_overrides():
        a, _, b = key.partition("|")
        overrides[frozenset((a, b))] = d
    return WatchedPairs(
        tuple(solver.get_active_collision_pairs()),
        solver.get_collision_min_distance(),
        overrides,
        layout,
    )


@dataclass(frozen=True)
class LoopSnapshot:
    """The state of a running loop after its latest step.

    Attributes:
        q: Configuration (size nq) [rad or m].
        steps: Solver steps taken since the start.
        status: Name of the last solve's :class:`~stackik.SolverStatus`.
        status_message: Its message.
        tasks: One row per active task.
        step_time_ms: Median ``computation_time_ms`` of the recent solves [ms].
        watched: The collision pairs the solver watches, at the world layout of the
            latest step (None: the loop does not report them; the viewer then reads
            them from the solver itself, as it does while the loop is stopped).
    """

    q: np.ndarray
    steps: int = 0
    status: str = ""
    status_message: str = ""
    tasks: tuple[TaskRow, ...] = field(default_factory=tuple)
    step_time_ms: float = float("nan")
    watched: WatchedPairs | None = None


class LiveLoop(Protocol):
    """What the viewer needs from a running control loop."""

    def start(self) -> None:
        """Start stepping (in the loop's own thread)."""

    def stop(self) -> None:
        """Stop stepping and join the thread."""

    def set_frame_target(self, task_name: str, pose: pin.SE3) -> None:
        """Move a frame task's target pose (world frame)."""

    def snapshot(self) -> LoopSnapshot:
        """The latest state (safe to call from any thread)."""


#: Builds the loop of a viewer from its solver, start configuration and rate [Hz].
LoopFactory = Callable[[KinematicsSolver, np.ndarray, float], LiveLoop]


def level_scales(solver: KinematicsSolver, scales: np.ndarray) -> dict[int, float]:
    """Map each active priority to the scale of its level (levels: sorted priorities)."""
    priorities = sorted({t.priority for t in solver.tasks if t.active})
    return {
        p: float(scales[k]) if k < len(scales) else float("nan") for k, p in enumerate(priorities)
    }


class ThreadedLoop:
    """``solve_velocity`` then ``integrate``, at a fixed rate, in a thread of its own.

    Each tick runs as many solver steps as keep the robot in real time (``1 / (rate *
    dt)``, at least one, at most ``max_steps_per_tick``), each integrated over the
    solver's ``dt``. A failed solve (invalid input, numerical error) returns a zero
    velocity, so the robot simply holds.

    Args:
        solver: The solver to step (only this loop's thread calls it once started).
        q: Start configuration (size nq).
        rate: Ticks per second [Hz].
        max_steps_per_tick: Cap on the solver steps of one tick.
    """

    def __init__(
        self,
        solver: KinematicsSolver,
        q: np.ndarray,
        rate: float = 100.0,
        max_steps_per_tick: int = 20,
    ) -> None:
        self.solver = solver
        self.rate = positive_float(rate, "rate")
        self.period = 1.0 / self.rate
        self.steps_per_tick = int(
            min(max(1, round(self.period / solver.dt)), max(1, int(max_steps_per_tick)))
        )
        q0 = solver.robot.check_configuration(q)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._times: deque[float] = deque(maxlen=100)
        self._q = q0.copy()
        self._watched = watched_pairs(solver)
        self._watched_at = time.perf_counter()
        self._snapshot = LoopSnapshot(q=q0.copy(), watched=self._watched)
        self._steps = 0
        self._generation = 0  # bumped by reset: a tick that started before it is dropped

    # -- LiveLoop ------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the thread (a no-op when it runs)."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="stackik-viewer-loop", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread and wait for it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None

    def set_frame_target(self, task_name: str, pose: pin.SE3) -> None:
        """Move the target of frame task ``task_name`` (its target is replaced atomically)."""
        self.solver.get_task(task_name).set_target_pose(pose)  # type: ignore[attr-defined]

    def snapshot(self) -> LoopSnapshot:
        """The latest state."""
        with self._lock:
            return self._snapshot

    # -- running -------------------------------------------------------------------------------
    def reset(self, q: np.ndarray) -> None:
        """Restart from configuration ``q`` (size nq) at the next tick."""
        q0 = self.solver.robot.check_configuration(q)
        with self._lock:
            self._generation += 1
            self._q = q0.copy()
            self._snapshot = LoopSnapshot(q=q0.copy(), steps=self._steps, watched=self._watched)

    def step(self) -> LoopSnapshot:
        """Run one tick now (what the thread does at each period) and return its snapshot."""
        solver = self.solver
        with self._lock:
            q, generation = self._q, self._generation
        result = None
        for _ in range(self.steps_per_tick):
            result = solver.solve_velocity(q)
            q = solver.robot.integrate(q, result.solution, solver.dt)
            self._times.append(result.computation_time_ms)
            self._steps += 1
        assert result is not None
        scales = level_scales(solver, np.asarray(result.task_scales))
        rows = tuple(
            TaskRow(t.name, t.priority, float(np.linalg.norm(t.get_error())), scales[t.priority])
            for t in solver.tasks
            if t.active
        )
        snap = LoopSnapshot(
            q=q.copy(),
            steps=self._steps,
            status=result.status.name,
            status_message=result.status_message,
            tasks=rows,
            step_time_ms=float(np.median(self._times)),
            watched=self._refresh_watched(),
        )
        with self._lock:
            if generation == self._generation:
                self._q = q
                self._snapshot = snap
            return self._snapshot

    def _refresh_watched(self) -> WatchedPairs:
        """The watched pairs, re-read when the world's layout changed or every 0.25 s."""
        now = time.perf_counter()
        layout = self.solver.world.state.layout
        if layout is not self._watched.world_layout or now - self._watched_at > WATCH_REFRESH:
            self._watched = watched_pairs(self.solver)
            self._watched_at = now
        return self._watched

    def _run(self) -> None:
        next_tick = time.perf_counter()
        while not self._stop.is_set():
            try:
                self.step()
            except Exception as exc:  # a configuration error: report it and stop stepping
                with self._lock:
                    self._snapshot = LoopSnapshot(
                        q=self._q.copy(),
                        steps=self._steps,
                        status="ERROR",
                        status_message=f"{type(exc).__name__}: {exc}",
                        watched=self._watched,
                    )
                return
            next_tick += self.period
            delay = next_tick - time.perf_counter()
            if delay < -self.period:  # fell behind (a slow machine): do not try to catch up
                next_tick = time.perf_counter()
                delay = 0.0
            self._stop.wait(max(delay, 0.0))


def threaded_loop(solver: KinematicsSolver, q: np.ndarray, rate: float) -> LiveLoop:
    """The default :data:`LoopFactory`: a :class:`ThreadedLoop`."""
    return ThreadedLoop(solver, q, rate)
