"""The live solver loop behind the viewer, and the small interface the viewer uses.

The viewer needs four things from whatever runs the robot: start, stop, move a frame
task's target, and a :class:`LoopSnapshot` of the latest step. :class:`LiveLoop` is that
interface; :class:`ThreadedLoop` implements it with a thread of its own that calls
``solve_velocity`` and ``integrate`` at a fixed rate. A teleoperation control loop can
take its place through an adapter with these four methods (the viewer builds its loop
with the ``loop_factory`` it is given).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pinocchio as pin

from .._validate import positive_float
from ..solver import KinematicsSolver


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
class LoopSnapshot:
    """The state of a running loop after its latest step.

    Attributes:
        q: Configuration (size nq) [rad or m].
        steps: Solver steps taken since the start.
        status: Name of the last solve's :class:`~stackik.SolverStatus`.
        status_message: Its message.
        tasks: One row per active task.
        step_time_ms: Median ``computation_time_ms`` of the recent solves [ms].
    """

    q: np.ndarray
    steps: int = 0
    status: str = ""
    status_message: str = ""
    tasks: tuple[TaskRow, ...] = field(default_factory=tuple)
    step_time_ms: float = float("nan")


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
        self._snapshot = LoopSnapshot(q=q0.copy())
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
            self._snapshot = LoopSnapshot(q=q0.copy(), steps=self._steps)

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
        )
        with self._lock:
            if generation == self._generation:
                self._q = q
                self._snapshot = snap
            return self._snapshot

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
