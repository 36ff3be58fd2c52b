"""Timing of a fixed-rate loop: the schedule, the wait, OS scheduling, and the statistics.

The schedule is absolute: tick ``k`` is released at ``t0 + k * period`` on the monotonic
nanosecond clock (``time.monotonic_ns``), so rounding and late ticks never make it
drift. The wait sleeps until ``spin`` before the release, then spins on the clock (a
sleep alone wakes up tens to hundreds of microseconds late).
"""

from __future__ import annotations

import gc
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

__all__ = ["LoopStats", "Recorder", "quiet_runtime", "set_realtime", "wait_until"]


def wait_until(release_ns: int, spin_ns: int) -> int:
    """Sleep, then spin, until the monotonic clock reaches ``release_ns``; return the time."""
    now = time.monotonic_ns()
    if release_ns - now > spin_ns:
        time.sleep((release_ns - now - spin_ns) * 1e-9)
    now = time.monotonic_ns()
    while now < release_ns:
        now = time.monotonic_ns()
    return now


def set_realtime(cpu: int | None, priority: int | None) -> str:
    """Pin the calling thread to ``cpu`` and give it FIFO priority ``priority``, if allowed.

    Returns:
        What was done and what the OS refused, in words (never raises).
    """
    notes = []
    if cpu is not None:
        try:
            os.sched_setaffinity(0, {cpu})  # 0: the calling thread on Linux
            notes.append(f"pinned to CPU {cpu}")
        except (AttributeError, OSError, ValueError) as exc:
            notes.append(f"CPU affinity not set ({type(exc).__name__}: {exc})")
    if priority is not None:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
            notes.append(f"real-time priority SCHED_FIFO {priority}")
        except (AttributeError, OSError, ValueError) as exc:
            notes.append(
                f"real-time priority not set ({type(exc).__name__}: {exc}; needs CAP_SYS_NICE "
                "or an rtprio limit)"
            )
    return "; ".join(notes) if notes else "default OS scheduling"


class quiet_runtime:
    """Context: no garbage-collector pauses and a short GIL switch interval while inside.

    On entry: one full collection, ``gc.freeze()`` (the objects alive now are never
    scanned again), ``gc.disable()``, and ``sys.setswitchinterval(switch_s)`` so another
    Python thread holding the GIL gives it back within ``switch_s`` instead of 5 ms.
    On exit every setting is restored. Both are process-wide.

    The short interval works both ways: another thread that wants the GIL while the
    loop computes a tick takes it after ``switch_s`` too, and the tick waits for it.
    :meth:`hold` sets the interval to ``hold_s`` for the tick's compute and
    :meth:`share` puts ``switch_s`` back for the wait: the other threads then take the
    GIL while the loop sleeps or spins, and not in the middle of a tick (unless the
    tick computes for longer than ``hold_s``).
    """

    def __init__(self, switch_s: float = 1e-4, hold_s: float = 0.005) -> None:
        self.switch_s = switch_s
        self.hold_s = hold_s
        self._was_enabled = True
        self._switch = 0.005

    def hold(self) -> None:
        """The long switch interval, for a tick's compute (process-wide)."""
        sys.setswitchinterval(self.hold_s)

    def share(self) -> None:
        """The short switch interval, for the wait between ticks (process-wide)."""
        sys.setswitchinterval(self.switch_s)

    def __enter__(self) -> quiet_runtime:
        self._was_enabled = gc.isenabled()
        self._switch = sys.getswitchinterval()
        gc.collect()
        gc.freeze()
        gc.disable()
        sys.setswitchinterval(self.switch_s)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setswitchinterval(self._switch)
        gc.unfreeze()
        if self._was_enabled:
            gc.enable()


@dataclass(frozen=True)
class LoopStats:
    """Timing and safety counters of a :class:`~stackik.control.ControlLoop`.

    Percentiles cover the last ``window`` ticks; counts and maxima cover every tick.

    Attributes:
        ticks: Ticks run.
        deadline_misses: Ticks that ended after their deadline (their release plus one
            period; with :meth:`~stackik.control.ControlLoop.step`, their start plus one
            period), plus release times skipped after a long overrun.
        overruns: Ticks whose compute alone took longer than the period.
        compute_median_us: Median compute time of a tick [µs].
        compute_p99_us: 99th percentile [µs].
        compute_max_us: Largest [µs].
        jitter_p99_us: 99th percentile of ``|start_k - start_(k-1) - period|`` [µs] (the
            loop's own thread only; 0 with ``step()``).
        latency_p99_us: 99th percentile of the start's delay after the release [µs]
            (own thread only).
        watchdog_stops: Times the watchdog stopped the robot.
        infeasible_ticks: Ticks whose velocity IK was INFEASIBLE (the constraints
            conflicted with what the motion limits allow within the tick; the least
            violating velocity was followed).
        solver_failures: Ticks whose IK gave another non-SUCCESS status than those
            counted apart (a status without a solution gives zero velocity, which the
            limiter decelerates toward; MAX_ITERATIONS and CONSTRAINT_VIOLATION give the
            best velocity found, which is followed).
        guard_brakes: Ticks on which the position-limit guard braked a joint.
        rejected_targets: ``set_target`` calls refused with an error.
        period_us: The loop period [µs].
        scheduling: CPU affinity and real-time priority, as granted or refused.
        window: Ticks the percentiles cover.
        collision_violations: Ticks whose IK found a collision pair below its minimum
            distance (``COLLISION_VIOLATED``; the step pushing it out was followed), at
            the configuration the tick solves at: while the arm moves, where its joints
            come to rest if they brake now, not the commanded configuration.
        stalled_ticks: Ticks whose highest-priority task was blocked (``NO_PROGRESS``:
            limits or constraints leave it no motion; the zero step was followed). An
            operator pressing the target into an obstacle or past a joint limit.
    """

    ticks: int
    deadline_misses: int
    overruns: int
    compute_median_us: float
    compute_p99_us: float
    compute_max_us: float
    jitter_p99_us: float
    latency_p99_us: float
    watchdog_stops: int
    infeasible_ticks: int
    solver_failures: int
    guard_brakes: int
    rejected_targets: int
    period_us: float
    scheduling: str
    window: int
    collision_violations: int = 0
    stalled_ticks: int = 0

    def report(self) -> str:
        """A readable summary (several lines)."""
        return "\n".join(
            [
                f"ticks {self.ticks} at {1e6 / self.period_us:.0f} Hz "
                f"(period {self.period_us:.0f} us), deadline misses {self.deadline_misses}, "
                f"ticks computing longer than the period {self.overruns}",
                f"compute per tick: median {self.compute_median_us:.1f} us, "
                f"p99 {self.compute_p99_us:.1f} us, max {self.compute_max_us:.1f} us",
                f"period jitter p99 {self.jitter_p99_us:.1f} us, "
                f"start latency p99 {self.latency_p99_us:.1f} us",
                f"watchdog stops {self.watchdog_stops}, infeasible IK ticks "
                f"{self.infeasible_ticks}, collision violations {self.collision_violations}, "
                f"stalled ticks {self.stalled_ticks}, IK failures {self.solver_failures}, "
                f"position-guard brakes {self.guard_brakes}, rejected targets "
                f"{self.rejected_targets}",
                f"scheduling: {self.scheduling}",
            ]
        )


class Recorder:
    """Preallocated per-tick timing records (ring buffers) and counters."""

    def __init__(self, period_ns: int, window: int = 1 << 17) -> None:
        self.period_ns = period_ns
        self.window = window
        self.compute = np.zeros(window)
        self.jitter = np.zeros(window)
        self.latency = np.zeros(window)
        self.clear()

    def clear(self) -> None:
        """Forget every record."""
        self.ticks = 0
        self.timed = 0  # ticks with a start time from the loop's own thread
        self.misses = 0
        self.overruns = 0
        self.compute_max = 0.0
        self.last_start = -1
        self.counts = dict.fromkeys(
            ("watchdog", "infeasible", "violated", "stalled", "failure", "guard", "rejected"), 0
        )
        self.scheduling = "driven by step()"

    def tick(self, start_ns: int, end_ns: int, deadline_ns: int) -> None:
        """Record one tick's compute time and whether it missed its deadline."""
        i = self.ticks % self.window
        us = (end_ns - start_ns) * 1e-3
        self.compute[i] = us
        self.compute_max = max(self.compute_max, us)
        if end_ns > deadline_ns:
            self.misses += 1
        if end_ns - start_ns > self.period_ns:
            self.overruns += 1
        self.ticks += 1

    def release(self, start_ns: int, release_ns: int) -> None:
        """Record a threaded tick's start against its release time."""
        i = self.timed % self.window
        self.latency[i] = (start_ns - release_ns) * 1e-3
        if self.last_start >= 0:
            self.jitter[i] = abs(start_ns - self.last_start - self.period_ns) * 1e-3
        self.last_start = start_ns
        self.timed += 1

    def stats(self) -> LoopStats:
        """The statistics so far."""
        n = min(self.ticks, self.window)
        m = min(self.timed, self.window)
        comp = self.compute[:n]
        c = self.counts
        return LoopStats(
            ticks=self.ticks,
            deadline_misses=self.misses,
            overruns=self.overruns,
            compute_median_us=float(np.median(comp)) if n else 0.0,
            compute_p99_us=float(np.percentile(comp, 99)) if n else 0.0,
            compute_max_us=self.compute_max,
            jitter_p99_us=float(np.percentile(self.jitter[1:m] if m > 1 else [0.0], 99)),
            latency_p99_us=float(np.percentile(self.latency[:m], 99)) if m else 0.0,
            watchdog_stops=c["watchdog"],
            infeasible_ticks=c["infeasible"],
            solver_failures=c["failure"],
            guard_brakes=c["guard"],
            rejected_targets=c["rejected"],
            period_us=self.period_ns * 1e-3,
            scheduling=self.scheduling,
            window=self.window,
            collision_violations=c["violated"],
            stalled_ticks=c["stalled"],
        )
