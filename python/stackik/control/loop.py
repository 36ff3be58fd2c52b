"""ControlLoop: velocity IK at a fixed rate, a jerk-limited joint output, a target watchdog.

One tick (:meth:`ControlLoop.step`):

1. take the latest target of each task (published whole by :meth:`set_target`, from any
   thread);
2. the watchdog: no target for ``target_timeout`` seconds -> STOPPING (the limiter
   brakes every joint to rest within its acceleration and jerk limits) -> HOLDING (with
   an active collision constraint the loop keeps solving, every task pulled back to
   where the robot stopped: it gives way to an obstacle coming at it and returns); a
   new target -> RUNNING again, from whatever state the joints are in;
3. RUNNING:

   a. the motion constraint takes the limiter's commanded state: the IK's velocity
      stays within what the limiter reaches within 20 ms;
   b. ``q_ahead``, where the motion is headed: the joints go on at their velocity for
      the smoothing delay (below), then, with anticipation (on with a collision
      constraint), brake together to rest as the limiter (and the watchdog) brakes;
      and a feed-forward for every task that makes it see its error at the commanded
      configuration ``q``, not at ``q_ahead``;
   c. ``solve_velocity(q_ahead)`` gives the desired velocity ``w`` (the position it
      implies is ``q + w dt``): the constraints act on the configuration the robot can
      still stop at, so velocity dampers that assume an instant stop (self-collision)
      brake early enough for the acceleration and jerk limits;
   d. ``w`` passes two first-order smoothing stages (``smoothing`` = 10 ms each,
      critically damped, a delay of ``2 smoothing``) and the limiter follows it
      (ruckig's velocity interface) -> the command.

4. ``on_command(command)``.

:meth:`ControlLoop.start` runs the ticks in a thread of their own on an absolute
schedule (see :mod:`stackik.control.timing`). ``docs/teleop.md`` explains the choices
and the measured figures.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pinocchio as pin

from .. import _validate
from ..constraints.collision import CollisionConstraint
from ..constraints.motion import JointMotionConstraint
from ..errors import InvalidInput, StackIKError
from ..results import SolverStatus
from ..solver import KinematicsSolver, warmup
from ._loop_kernel import lead_positions, smooth_stages
from .hold import TaskHold
from .limiter import JointCommand, JointMotionLimiter
from .targets import Staged, stage
from .timing import LoopStats, Recorder, quiet_runtime, set_realtime, wait_until

__all__ = ["ControlLoop", "LoopState"]

#: Name of the motion constraint the loop adds to its solver.
MOTION_CONSTRAINT = "joint_motion"


class LoopState(enum.Enum):
    """What the loop does with the robot.

    Attributes:
        RUNNING: Following the targets.
        STOPPING: No target for ``target_timeout``: braking to rest.
        HOLDING: Stopped, holding the position until a target arrives (giving way to
            obstacles and returning, when the solver has an active collision
            constraint).
    """

    RUNNING = "running"
    STOPPING = "stopping"
    HOLDING = "holding"

    def __str__(self) -> str:
        return self.name


#: Non-SUCCESS statuses counted apart from IK failures (their step is followed).
_COUNTED = {
    SolverStatus.INFEASIBLE: "infeasible",
    SolverStatus.COLLISION_VIOLATED: "violated",
    SolverStatus.NO_PROGRESS: "stalled",
}


class ControlLoop:
    """Teleoperation at a fixed rate: velocity IK, jerk-limited joint commands, a watchdog.

    Args:
        solver: The solver with the tasks and constraints (its ``dt`` must be the loop
            period). The loop adds a :class:`~stackik.constraints.JointMotionConstraint`
            named ``"joint_motion"`` to it.
        q0: The robot's configuration at the start (size nq), at rest.
        rate_hz: Loop rate [Hz].
        limiter: The joint limiter (its ``dt`` must be the period); default
            ``JointMotionLimiter(solver.robot, 1 / rate_hz)``, which needs the robot's
            jerk limits (see :func:`~stackik.control.load_motion_limits`).
        target_timeout: Seconds without a new target before the watchdog stops the
            robot; None disables the watchdog. Counted in ticks (``target_timeout *
            rate_hz``), so a simulator stepping faster or slower than real time sees the
            same behaviour.
        on_command: Called with each tick's :class:`JointCommand` (in the loop's thread).
        anticipate: Solve at the stopping configuration (step 3b above), so that
            constraints whose damper assumes an instant stop (self-collision, relative
            pose, linear rows) brake in time for the acceleration and jerk limits.
            None (default): when the solver has an active collision constraint. Off,
            the solve runs where the smoothing delay alone leads: better for
            constraints that are braking-aware already (the CoM polygon's
            ``sqrt(2 a s)`` bound), which the stop's joint-space extrapolation (a
            straight line in joint space, some tenths of a radian long at speed) only
            blurs.
        smoothing: Time constant [s] of each of the two first-order stages that smooth
            the IK velocity before the limiter (0: none). The limiter answers every
            change of its setpoint time-optimally, with a pulse at the jerk limit; the
            IK velocity changes in small steps (targets arriving every few ms, rows and
            saturations switching), which would make the arm buzz within its limits.
        approach_deceleration: Deceleration [m/s^2] the collision constraints assume the
            robot can give a closing pair (they brake, or give way to a moving obstacle,
            from ``v^2 / (2 a)`` before the minimum distance; see
            ``CollisionConstraint.set_approach_deceleration``). None leaves the
            constraints' own setting. The loop also predicts moving obstacles over the
            time its solve looks ahead (``CollisionConstraint.obstacle_lead``).

    Raises:
        InvalidInput: A period that differs from ``solver.dt`` or the limiter's ``dt``,
            a limiter for another robot, a bad rate or timeout.
        NotWithinLimits: ``q0`` outside the position limits.
    """

    def __init__(
        self,
        solver: KinematicsSolver,
        q0: object,
        rate_hz: float = 1000.0,
        limiter: JointMotionLimiter | None = None,
        target_timeout: float | None = 0.1,
        on_command: Callable[[JointCommand], Any] | None = None,
        *,
        anticipate: bool | None = None,
        smoothing: float = 0.01,
        approach_deceleration: float | None = 2.0,
    ) -> None:
        _validate.instance(solver, KinematicsSolver, "solver", "stackik KinematicsSolver")
        rate = _validate.positive_float(rate_hz, "rate_hz")
        period = 1.0 / rate
        if abs(solver.dt - period) > 1e-9 * period:
            raise InvalidInput(
                f"solver.dt = {solver.dt:g} s but the loop period is {period:g} s "
                f"(rate_hz = {rate:g}): build the solver with dt=1/rate_hz",
                what="rate_hz",
                value=rate_hz,
            )
        robot = solver.robot
        if limiter is None:
            limiter = JointMotionLimiter(robot, period)
        if limiter.robot is not robot:
            raise InvalidInput("the limiter is for another robot than the solver's", what="limiter")
        if abs(limiter.dt - period) > 1e-9 * period:
            raise InvalidInput(
                f"limiter.dt = {limiter.dt:g} s but the loop period is {period:g} s",
                what="limiter",
            )
        if on_command is not None and not callable(on_command):
            raise InvalidInput("on_command must be callable", what="on_command", value=on_command)
        self._smoothing = _validate.positive_float(smoothing, "smoothing", allow_zero=True)
        self._approach = (
            None
            if approach_deceleration is None
            else _validate.positive_float(approach_deceleration, "approach_deceleration")
        )
        self._alpha = period / (self._smoothing + period)
        self._solver = solver
        self._robot = robot
        self._limiter = limiter
        self._rate = rate
        self._period = period
        self._period_ns = round(1e9 * period)
        self._timeout_ticks = self._timeout(target_timeout, rate)
        self._target_timeout = target_timeout
        self.on_command = on_command
        self.anticipate = None if anticipate is None else _validate.flag(anticipate, "anticipate")
        self._motion = JointMotionConstraint(
            MOTION_CONSTRAINT,
            solver.kinematics,
            limiter.max_velocity,
            limiter.max_acceleration,
            limiter.max_jerk,
            limiter.lower,
            limiter.upper,
            delay=2.0 * self._smoothing,  # the smoothing stages' delay
        )
        solver.add_constraint(self._motion, replace=True)
        self._lock = threading.Lock()
        self._pending: dict[str, Staged] = {}
        self._recorder = Recorder(self._period_ns)
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._compensating = False  # the tasks carry error overrides (_present_errors)
        self._hold: TaskHold | None = None  # HOLDING with a collision constraint (_stopped)
        self.reset(q0)

    @staticmethod
    def _timeout(value: float | None, rate: float) -> int | None:
        if value is None:
            return None
        seconds = _validate.positive_float(value, "target_timeout")
        return max(1, round(seconds * rate))

    # -- properties ------------------------------------------------------------------------
    @property
    def solver(self) -> KinematicsSolver:
        """The solver."""
        return self._solver

    @property
    def limiter(self) -> JointMotionLimiter:
        """The joint limiter."""
        return self._limiter

    @property
    def motion_constraint(self) -> JointMotionConstraint:
        """The joint-motion box the loop added to the solver (its ``horizon`` [s])."""
        return self._motion

    @property
    def rate_hz(self) -> float:
        """Loop rate [Hz]."""
        return self._rate

    @property
    def period(self) -> float:
        """Loop period [s]."""
        return self._period

    @property
    def target_timeout(self) -> float | None:
        """Seconds without a target before the watchdog stops the robot (None: never)."""
        return self._target_timeout

    @property
    def state(self) -> LoopState:
        """RUNNING, STOPPING or HOLDING."""
        return self._state

    @property
    def q(self) -> np.ndarray:
        """The commanded configuration (size nq) (a copy)."""
        return self._q.copy()

    @property
    def command(self) -> JointCommand:
        """The last tick's command (the start state before the first tick)."""
        return self._command

    @property
    def ticks(self) -> int:
        """Ticks run since the start (or :meth:`reset`)."""
        return self._recorder.ticks

    @property
    def stats(self) -> LoopStats:
        """Timing and safety counters so far."""
        return self._recorder.stats()

    @property
    def is_running(self) -> bool:
        """Whether the loop's own thread runs."""
        return self._thread is not None and self._thread.is_alive()

    # -- targets ---------------------------------------------------------------------------
    def set_target(
        self, task_name: str, target: object | None = None, *, velocity: object | None = None
    ) -> None:
        """Give a task a new target; safe from any thread, at any rate.

        The next tick takes the latest target of each task, whole. Also feeds the
        watchdog.

        Args:
            task_name: A task of the loop's solver.
            target: A pose (``pinocchio.SE3`` or 4x4) for frame and relative tasks, a
                position (3) [m] for frame and CoM tasks, a rotation (3x3) for frame
                tasks, a configuration (nq) for a posture task, values for joint tasks.
            velocity: Task target velocity (feed-forward; the task's full size, 6 for a
                pose [m/s; rad/s]), set with the target in the same tick.

        Raises:
            TaskNotFound: No such task.
            InvalidInput, ShapeError, NonFiniteInput, InvalidTransform: An invalid target
                (the loop keeps the last valid one).
        """
        try:
            staged = stage(self._solver.get_task(task_name), target, velocity)
        except StackIKError:
            with self._lock:
                self._recorder.counts["rejected"] += 1
            raise
        with self._lock:
            self._pending[task_name] = staged

    def _take_targets(self) -> bool:
        if not self._pending:
            return False
        with self._lock:
            pending, self._pending = self._pending, {}
        for staged in pending.values():
            staged.apply()
        return True

    # -- one tick ----------------------------------------------------------------------------
    def reset(self, q0: object) -> None:
        """Start again at rest at ``q0`` (size nq): RUNNING, statistics cleared.

        Raises:
            InvalidInput: The loop's thread runs.
            ShapeError, NonFiniteInput, NotWithinLimits: A bad ``q0``.
        """
        if self.is_running:
            raise InvalidInput("stop() the loop before reset()", what="reset")
        q = np.array(self._robot.check_configuration(q0, "q0"), dtype=float)
        self._end_hold()
        self._limiter.reset(q)
        self._q = q
        self._views = self._limiter.state_views()
        self._motion.reset()
        self._state = LoopState.RUNNING
        self._last_target = 0
        self._recorder.clear()
        self._pending.clear()
        nv = self._robot.nv
        self._previous = self._views[0].copy()
        if self._compensating:
            self._clear_error_overrides()
        self._smooth = (np.zeros(nv), np.zeros(nv))
        self._command = JointCommand(self._previous.copy(), np.zeros(nv), np.zeros(nv), q.copy())

    def step(self) -> JointCommand:
        """Run one tick now (for callers that own the clock: a simulator, an RT thread).

        Returns:
            The tick's command (also passed to ``on_command``).

        Raises:
            InvalidInput: The loop's own thread runs.
        """
        if self.is_running:
            raise InvalidInput("the loop runs in its thread: do not also call step()")
        start = time.monotonic_ns()
        command = self._tick()
        end = time.monotonic_ns()
        self._recorder.tick(start, end, start + self._period_ns)
        return command

    def _tick(self) -> JointCommand:
        tick = self._recorder.ticks
        if self._hold is not None and self._pending:  # a target ends the hold
            self._end_hold()
        if self._take_targets():
            self._last_target = tick
            if self._state is not LoopState.RUNNING:  # resume from the present motion
                self._state = LoopState.RUNNING
                for stage in self._smooth:
                    stage[:] = self._views[1]
        elif (
            self._state is LoopState.RUNNING
            and self._timeout_ticks is not None
            and tick - self._last_target >= self._timeout_ticks
        ):
            self._state = LoopState.STOPPING
            self._recorder.counts["watchdog"] += 1
        command = self._follow() if self._state is LoopState.RUNNING else self._stopped()
        command.configuration = self._configuration(command)
        self._command = command
        if self.on_command is not None:
            self.on_command(command)
        return command

    def _collision_constraints(self) -> list[CollisionConstraint]:
        """The solver's active collision constraints."""
        return [
            c
            for c in self._solver.engine.constraints_of("collision")
            if isinstance(c, CollisionConstraint) and c.active
        ]

    def _stopped(self) -> JointCommand:
        """A tick without targets: brake to rest (STOPPING), then hold (HOLDING).

        At rest with an active collision constraint, the hold keeps solving
        (:class:`~stackik.control.hold.TaskHold`): each task is pulled back to its value
        where the robot stopped, so the robot gives way to an obstacle coming at it and
        returns when it has passed; with nothing near, the command does not change by a
        bit. Without one, the limiter holds the position.
        """
        if self._state is LoopState.HOLDING and self._collision_constraints():
            if self._hold is None:
                self._hold = TaskHold(self._solver, self._q)
                for stage in self._smooth:  # (the smoothing starts from rest)
                    stage[:] = self._views[1]
            return self._follow(self._hold)
        if self._hold is not None:  # (the collision constraint was switched off)
            self._end_hold()
        command = self._limiter.brake()
        if self._state is LoopState.STOPPING and self._limiter.at_rest:
            self._state = LoopState.HOLDING
        return command

    def _end_hold(self) -> None:
        """Back to the tasks' own errors and target velocities."""
        if self._hold is not None:
            self._hold.release()
            self._hold = None
            self._compensating = False

    def _follow(self, hold: TaskHold | None = None) -> JointCommand:
        """IK where the motion is headed, tasks from the present; then the limiter.

        With ``hold``, every task is pulled back to the held configuration
        (:meth:`TaskHold.pull`).
        """
        p, v, a = self._views
        self._motion.set_state(v, a, p)
        q_solve: np.ndarray | None = self._q
        cols = self._collision_constraints()
        anticipating = bool(cols) if self.anticipate is None else bool(self.anticipate)
        self._lead_obstacles(cols, v, anticipating)
        offset = None
        if not self._limiter.at_rest and (self._smoothing or anticipating):
            q_ahead = self._configuration_ahead(p, v, anticipating)
            self._present_errors(q_ahead, hold)
            q_solve = None  # the solver's kinematics are at q_ahead already
            if cols:  # (both configurations are the loop's own: valid, normalized)
                offset = self._solver.kinematics.difference(self._q, q_ahead)
        elif hold is not None:
            self._present_errors(self._q, hold)
            q_solve = None  # (at q: the loop's own configuration)
        elif self._compensating:
            self._clear_error_overrides()
        for c in cols:
            c.set_solve_offset(offset)
        result = self._solver.solve_velocity(q_solve)
        counts = self._recorder.counts
        if result.status is not SolverStatus.SUCCESS:
            counts[_COUNTED.get(result.status, "failure")] += 1
        command = self._limiter.follow_velocity(self._smoothed(result.solution))
        if command.braked_joints:
            counts["guard"] += 1
        return command

    def _lead_obstacles(
        self, cols: list[CollisionConstraint], v: np.ndarray, anticipating: bool
    ) -> None:
        """Predict moving obstacles over the time the solve looks ahead.

        The solve runs where the joints come to rest if they brake now (after the
        smoothing delay); a moving obstacle goes on meanwhile, so the collision
        constraints place it where its velocity takes it in that time: the braking
        time (each joint ``|v| / a_max + a_max / j_max``, the slowest) plus the delay.
        """
        if not cols:
            return
        lead = 2.0 * self._smoothing
        if anticipating:
            lead += self._limiter.braking_time(v)
        for c in cols:
            c.obstacle_lead = lead
            if self._approach is not None and c.approach_deceleration != self._approach:
                c.approach_deceleration = self._approach

    def _smoothed(self, w: np.ndarray) -> np.ndarray:
        """Two first-order stages of time constant ``smoothing`` (critically damped).

        Kept within the motion constraint's position-limit bounds, so the smoothing
        delay never carries a joint past the speed it may have near its limits.
        """
        if self._smoothing == 0.0:
            return w
        first, second = self._smooth
        motion = self._motion
        smooth_stages(w, first, second, self._alpha, motion.cruise_lower, motion.cruise_upper)
        return second

    def _configuration_ahead(self, p: np.ndarray, v: np.ndarray, anticipating: bool) -> np.ndarray:
        """Where the motion is headed (size nq): the configuration the constraints guard.

        The joints go on at their velocity for the smoothing stages' delay (``2
        smoothing``) before a new IK velocity reaches them; with anticipation, they then
        brake together to rest.
        """
        lim = self._limiter
        stop = lim.stop_positions() if anticipating else p.copy()
        if self._smoothing:
            lead_positions(stop, v, 2.0 * self._smoothing, self._motion.lower, self._motion.upper)
        if lim.has_configuration:
            return lim.to_configuration(stop)
        return pin.integrate(self._robot.model, self._q, stop - p)  # (the loop's own, valid)

    def _present_errors(self, q_ahead: np.ndarray, hold: TaskHold | None = None) -> None:
        """Every task's velocity from its error at the present configuration.

        The solve runs at ``q_ahead`` so that the constraints guard where the motion is
        headed; a task would then also see its error from there, and a velocity that
        feeds back into its own error through the braking distance makes the loop ring.
        Each task's velocity is therefore ``gain e(q) + target_velocity``, with the exact
        error at the present configuration ``q`` (a first-order ``J delta`` tracks a
        jumping target a quarter worse, the braking distance being tenths of a radian
        at speed), given as its error override; its Jacobian is the one at ``q_ahead``.
        The kinematics are left at ``q_ahead`` for the solve. With ``hold``, each task's
        present "error" is its pull back to the held configuration
        (:meth:`TaskHold.pull`, with its Jacobian at ``q``).
        """
        kin = self._solver.kinematics
        kin.set_unchecked(self._q)
        if hold is not None:
            hold.pull(self._q)
        else:
            for task in self._solver.tasks:
                if task.active:
                    task.override_with_present_error()
        kin.set_unchecked(q_ahead)
        self._compensating = True

    def _clear_error_overrides(self) -> None:
        """At rest the two configurations agree: the tasks use their own errors again."""
        for task in self._solver.tasks:
            task.clear_error_override()
        self._compensating = False

    def _configuration(self, command: JointCommand) -> np.ndarray:
        """The commanded configuration after the tick (integrated for multi-DoF joints)."""
        if command.configuration is not None:
            self._q = command.configuration
        else:
            delta = command.position - self._previous
            # (the loop's own configuration and the limiter's finite, bounded step)
            self._q = pin.integrate(self._robot.model, self._q, delta)
        self._previous = command.position
        return self._q.copy()

    # -- the loop's own thread -------------------------------------------------------------
    def start(
        self,
        cpu: int | None = None,
        priority: int | None = None,
        spin_us: float = 300.0,
        warm: bool = True,
    ) -> None:
        """Run the ticks in a thread of their own at ``rate_hz`` until :meth:`stop`.

        With ``warm`` (the default) it first calls :func:`stackik.warmup` on the solver:
        it waits for the compiled kernels (loaded in the background for the first seconds
        of a process, or compiled on a first use) and steps a copy of the solver once, so
        that no tick runs on plain Python kernels (2-4 ms a tick where a compiled Panda
        tick takes 0.1-0.3 ms: a 1 kHz loop started right after the import missed most
        of its deadlines) or compiles a kernel specialisation mid-run.

        While it runs, Python's garbage collector is frozen and disabled, and the GIL
        switch interval is 100 µs while the loop waits between ticks and 5 ms while a
        tick computes, so other threads take the GIL between ticks rather than in the
        middle of one (process-wide; restored by :meth:`stop`; see
        :class:`~stackik.control.timing.quiet_runtime`).

        Args:
            cpu: Pin the loop's thread to this CPU (Linux), if permitted.
            priority: Give it SCHED_FIFO real-time priority (1-99), if permitted; what
                the OS refused is in ``stats.scheduling``.
            spin_us: Sleep until this long before each release, then spin [µs].
            warm: Warm the kernels up first (see above); False starts at once.

        Raises:
            InvalidInput: Already running, or bad arguments.
        """
        if self.is_running:
            raise InvalidInput("the loop already runs", what="start")
        if _validate.flag(warm, "warm"):
            warmup(self._solver)
        if cpu is not None:
            cpu = _validate.count(cpu, "cpu", minimum=0)
        if priority is not None:
            priority = _validate.count(priority, "priority", minimum=1, maximum=99)
        spin_ns = round(1e3 * _validate.positive_float(spin_us, "spin_us", allow_zero=True))
        self._stop.clear()
        self._error = None
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(cpu, priority, spin_ns, ready), name="stackik-control",
            daemon=True,
        )  # fmt: skip
        self._thread.start()
        ready.wait()

    def stop(self, timeout: float = 2.0) -> None:
        """Stop the loop's thread (after its current tick) and restore the runtime settings.

        The robot is left where the last command put it (brake first, e.g. by letting
        the watchdog stop it, if it moves). The tasks are left without the loop's error
        overrides, with their target velocities (a hold suspends them). Re-raises an
        exception the loop's thread met (e.g. from ``on_command``).
        """
        thread = self._thread
        if thread is None:
            return
        self._stop.set()
        thread.join(_validate.positive_float(timeout, "timeout"))
        self._thread = None
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _run(
        self, cpu: int | None, priority: int | None, spin_ns: int, ready: threading.Event
    ) -> None:
        rec = self._recorder
        rec.scheduling = set_realtime(cpu, priority)
        period = self._period_ns
        with quiet_runtime() as runtime:
            ready.set()
            release = time.monotonic_ns() + period
            while not self._stop.is_set():
                start = wait_until(release, spin_ns)
                rec.release(start, release)
                runtime.hold()
                try:
                    self._tick()
                except BaseException as exc:  # stop the loop; stop() re-raises it
                    self._error = exc
                    break
                finally:
                    runtime.share()
                end = time.monotonic_ns()
                rec.tick(start, end, release + period)
                release += period
                if end > release + period:  # over a period late: skip the missed releases
                    skipped = (end - release) // period
                    rec.misses += skipped
                    release += skipped * period
        self._release_tasks()

    def _release_tasks(self) -> None:
        """The tasks as the user left them: no override, their target velocities back.

        The loop's thread ends with it: the solver may be used outside the loop next (a
        later start() or a tick sets what it needs again).
        """
        self._end_hold()
        if self._compensating:
            self._clear_error_overrides()

    def __enter__(self) -> ControlLoop:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return (
            f"ControlLoop({self._robot!r}, rate_hz={self._rate:g}, state={self._state}, "
            f"ticks={self.ticks})"
        )
