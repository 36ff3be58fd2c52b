"""The browser viewer: a robot, its targets and its collision pairs, live, on viser.

``Viewer(robot)`` shows the robot with one slider per joint. ``Viewer(robot, solver)``
puts a draggable gizmo on the target of every frame task and runs the solver loop
(``solve_velocity`` then ``integrate``, at a fixed rate, in a thread of its own): drag a
gizmo and the robot follows. Around the robot: the obstacles and attached objects of its
world, followed live (each obstacle with a gizmo of its own: drag it and the solver
avoids it from its next step), the closest-point segment of each watched collision
pair within reach of its ``min_distance`` (red at or below it, through orange and
yellow to green; pairs with the world labelled with the obstacle's name), the centre of
mass with its support polygon, and a panel of task errors, level scales, the solver
status and the step time.

viser is imported when a viewer is built (``pip install "stackik[viz]"``), never by
``import stackik``.
"""

from __future__ import annotations

import contextlib
import io
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pinocchio as pin

from .._validate import flag, positive_float
from ..constraints import ComPolygonConstraint
from ..errors import InvalidInput, TaskNotFound
from ..model import JointKind, RobotModel
from ..model.world import World, WorldState
from ..solver import KinematicsSolver
from ..spatial import as_se3, q2r
from ..tasks import FrameTask, TaskType
from .loop import (
    WATCH_REFRESH,
    LiveLoop,
    LoopFactory,
    LoopSnapshot,
    WatchedPairs,
    threaded_loop,
    watched_pairs,
)
from .overlays import PairOverlay, PairSegments, polygon_in_world
from .scene import OverlayScene, RobotScene, wxyz
from .world import WorldScene

#: How often the side panel text is refreshed [s].
PANEL_PERIOD = 0.25
#: Without a collision constraint: every pair of the robot and its world, at 0 m.
_ALL_PAIRS = WatchedPairs(None)


def _import_viser() -> Any:
    try:
        import viser
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ImportError(
            "the stackik viewer needs viser: pip install 'stackik[viz]'", name=exc.name
        ) from exc
    return viser


class _Sliders:
    """One slider per scalar joint (revolute, prismatic, continuous) for slider mode."""

    def __init__(self, gui: Any, robot: RobotModel, q: np.ndarray) -> None:
        self.robot = robot
        lower, upper = robot.get_joint_limits()
        self.handles: dict[str, Any] = {}
        self._layout: list[tuple[Any, JointKind, int]] = []
        for info in robot.joint_infos:
            if info.kind not in (JointKind.REVOLUTE, JointKind.PRISMATIC, JointKind.CONTINUOUS):
                continue
            i = info.idx_q
            if info.kind == JointKind.CONTINUOUS:
                lo, hi, value = -np.pi, np.pi, float(np.arctan2(q[i + 1], q[i]))
            else:
                default = np.pi if info.kind == JointKind.REVOLUTE else 1.0
                lo = float(lower[i]) if np.isfinite(lower[i]) else -default
                hi = float(upper[i]) if np.isfinite(upper[i]) else default
                value = float(np.clip(q[i], lo, hi))
            handle = gui.add_slider(info.name, min=lo, max=hi, step=1e-3, initial_value=value)
            self.handles[info.name] = handle
            self._layout.append((handle, info.kind, i))

    def read(self, q: np.ndarray) -> np.ndarray:
        """``q`` with the slider values written in (a copy)."""
        out = q.copy()
        for handle, kind, i in self._layout:
            value = float(handle.value)
            if kind == JointKind.CONTINUOUS:
                out[i], out[i + 1] = np.cos(value), np.sin(value)
            else:
                out[i] = value
        return out

    def write(self, q: np.ndarray) -> None:
        """Move the sliders to configuration ``q``."""
        for handle, kind, i in self._layout:
            if kind == JointKind.CONTINUOUS:
                handle.value = float(np.arctan2(q[i + 1], q[i]))
            else:
                handle.value = float(np.clip(q[i], handle.min, handle.max))


def _frame_tasks(solver: KinematicsSolver | None) -> list[FrameTask]:
    if solver is None:
        return []
    return [t for t in solver.tasks if isinstance(t, FrameTask)]


def _pose_of(handle: Any) -> tuple[np.ndarray, np.ndarray]:
    return np.array(handle.position, dtype=float), np.array(handle.wxyz, dtype=float)


class Viewer:
    """A robot in the browser, live: draggable targets, its world, collision pairs, CoM, panel.

    The world shown is the solver's (``solver.world``: the robot's unless the solver was
    given its own), else the robot's (``robot.world``); the viewer reads its snapshot at
    every refresh, so obstacles added, moved or removed by any thread appear, move or
    disappear within a frame, their collision pairs with them (read from the loop's
    snapshot while it steps, from the solver while it does not). Each obstacle has a
    gizmo: dragging it publishes the obstacle's new pose (``World.set_obstacle_pose``).

    Args:
        robot: The robot to show.
        solver: A solver on ``robot``. Each of its frame tasks gets a gizmo; dragging it
            moves the task's target and the solver loop makes the robot follow. None:
            joint-slider mode (no solving).
        q: Start configuration (size nq); the solver's current configuration, or the
            robot's, when omitted.
        host: Interface the server listens on (``"0.0.0.0"``: every interface).
        port: Port of the page (the next free one when taken; 0: any free port).
        show_collision: Show the collision geometry at the start.
        rate: Ticks per second of the solver loop [Hz].
        fps: Scene updates per second [Hz].
        label: Title of the side panel (the robot's name by default).
        verbose: Let viser print its address box.
        loop_factory: Builds the solver loop from ``(solver, q, rate)``; the default runs
            ``solve_velocity`` and ``integrate`` in a thread (:class:`ThreadedLoop`).
        start: Start the loop and the display thread at once (``False``: call
            :meth:`start` later).

    Raises:
        InvalidInput: ``robot`` is not a :class:`~stackik.RobotModel`, ``solver`` is not a
            solver on it, or a rate is not positive.
        ShapeError, NonFiniteInput: Bad ``q``.
        ImportError: viser is not installed.

    Example:
        ```python
        viewer = Viewer(robot, solver, port=8080)
        viewer.wait()  # until Ctrl+C; open http://127.0.0.1:8080
        ```
    """

    def __init__(
        self,
        robot: RobotModel,
        solver: KinematicsSolver | None = None,
        *,
        q: object | None = None,
        host: str = "127.0.0.1",
        port: int = 8080,
        show_collision: bool = False,
        rate: float = 100.0,
        fps: float = 30.0,
        label: str | None = None,
        verbose: bool = True,
        loop_factory: LoopFactory | None = None,
        start: bool = True,
    ) -> None:
        if not isinstance(robot, RobotModel):
            raise InvalidInput(f"robot must be a RobotModel, got {type(robot).__name__}")
        if solver is not None and (
            not isinstance(solver, KinematicsSolver) or solver.robot is not robot
        ):
            raise InvalidInput("solver must be a KinematicsSolver on the viewer's robot")
        rate = positive_float(rate, "rate")
        self._period = 1.0 / positive_float(fps, "fps")
        show_collision = flag(show_collision, "show_collision")
        verbose, start = flag(verbose, "verbose"), flag(start, "start")
        if q is None:
            q = solver.kinematics.q if solver is not None else robot.get_current_configuration()
        q0 = robot.check_configuration(q)
        viser = _import_viser()
        self.robot = robot
        self.solver = solver
        self._name = robot.model.name or "robot"
        self._host = host
        with contextlib.nullcontext() if verbose else contextlib.redirect_stdout(io.StringIO()):
            # (viser 1.1 prints its address box whatever its own verbose says)
            self._server = viser.ViserServer(
                host=host, port=int(port), label=label or f"stackik · {self._name}",
                verbose=verbose,
            )  # fmt: skip
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None
        self._q = q0.copy()
        self._start_q = q0.copy()
        self._drawn_q: np.ndarray | None = None
        self._playback: tuple[np.ndarray, float, bool, float] | None = None
        self._kin = robot.create_kinematics(q0)
        self._pairs = PairOverlay(robot)
        self._last_panel = 0.0
        self._segments: PairSegments | None = None
        self._pairs_key: tuple[WorldState, WatchedPairs] | None = None
        self._read_watched: WatchedPairs | None = None  # read from the solver, no step running
        self._read_at = 0.0
        self._world_state: WorldState | None = None
        self._loop_running = False
        self._started = False
        #: The last error of the display thread ("" when none).
        self.display_error = ""
        try:
            self._build_scene(show_collision)
            self._build_gui(q0, show_collision or robot.visual_model is None)
            self._loop: LiveLoop | None = None
            if solver is not None:
                factory = loop_factory or threaded_loop
                self._loop = factory(solver, q0, rate)
            self._build_targets()
        except BaseException:
            self._server.stop()
            raise
        if start:
            self.start()

    # -- building ------------------------------------------------------------------------------
    def _build_scene(self, show_collision: bool) -> None:
        scene = self._server.scene
        scene.add_grid("/ground", width=2.0, height=2.0, cell_size=0.1, section_size=0.5)
        # Without visual geometry (loaded with load_visuals=False), show the collision one.
        show_collision = show_collision or self.robot.visual_model is None
        self._robot_scene = RobotScene(scene, self.robot, show_collision)
        self._world_scene = WorldScene(scene, self._on_obstacle_drag)
        self._overlays = OverlayScene(scene)
        # Look at the robot from the front right, far enough to see all of it.
        points = np.array([M.translation for M in self._kin.data.oMf])
        centre = 0.5 * (points.min(axis=0) + points.max(axis=0))
        size = max(float(np.linalg.norm(points.max(axis=0) - points.min(axis=0))), 0.5)
        camera = self._server.initial_camera
        camera.look_at = tuple(centre)
        camera.position = tuple(centre + size * np.array([0.85, 0.65, 0.4]))

    def _build_gui(self, q: np.ndarray, show_collision: bool) -> None:
        gui = self._server.gui
        self._panel = gui.add_markdown(self._panel_text(None))
        with gui.add_folder("Display"):
            self._show_visual = gui.add_checkbox("Visual geometry", True)
            self._show_collision = gui.add_checkbox("Collision geometry", bool(show_collision))
            self._show_pairs = gui.add_checkbox("Collision pairs", self._pairs.available)
            self._show_com = gui.add_checkbox("Centre of mass", self._wants_com())
            self._show_obstacles = gui.add_checkbox("Obstacles", True)
            self._show_gizmos = gui.add_checkbox("Obstacle gizmos", True)
        self.joint_sliders: dict[str, Any] = {}
        self._sliders: _Sliders | None = None
        if self.solver is None:
            with gui.add_folder("Joints"):
                self._sliders = _Sliders(gui, self.robot, q)
            self.joint_sliders = self._sliders.handles
            self._running = None
        else:
            with gui.add_folder("Solver"):
                self._running = gui.add_checkbox("Run", True)
                reset = gui.add_button("Reset")
            reset.on_click(lambda _: self.reset())

    def _build_targets(self) -> None:
        #: The gizmo of each frame task's target, by task name (viser handles).
        self.target_controls: dict[str, Any] = {}
        self._applied: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for task in _frame_tasks(self.solver):
            T = task.target_pose
            handle = self._server.scene.add_transform_controls(
                f"/targets/{task.name}",
                scale=0.15,
                disable_rotations=task.task_type == TaskType.FRAME_POSITION,
                disable_axes=task.task_type == TaskType.FRAME_ORIENTATION,
                disable_sliders=task.task_type == TaskType.FRAME_ORIENTATION,
                position=T.translation,
                wxyz=wxyz(T.rotation),
            )
            self.target_controls[task.name] = handle
            self._applied[task.name] = _pose_of(handle)

    def _wants_com(self) -> bool:
        if self.robot.is_floating_base:
            return True
        solver = self.solver
        return solver is not None and solver.get_constraint("com_polygon") is not None

    # -- public state --------------------------------------------------------------------------
    @property
    def server(self) -> Any:
        """The ``viser.ViserServer`` (add your own GUI or scene nodes to it)."""
        return self._server

    @property
    def port(self) -> int:
        """The port the page is served on."""
        return int(self._server.get_port())

    @property
    def url(self) -> str:
        """Address of the page."""
        host = "localhost" if self._host in ("0.0.0.0", "::") else self._host
        return f"http://{host}:{self.port}"

    @property
    def joint_nodes(self) -> dict[str, Any]:
        """The scene node of each moving joint that carries geometry, by joint name."""
        names = self.robot.model.names
        return {names[j]: node for j, node in self._robot_scene.joint_nodes.items()}

    @property
    def overlays(self) -> OverlayScene:
        """The overlay nodes (collision-pair segments, CoM, support polygon)."""
        return self._overlays

    @property
    def world(self) -> World:
        """The world shown: the solver's, or the robot's without a solver."""
        return self.solver.world if self.solver is not None else self.robot.world

    @property
    def obstacle_nodes(self) -> dict[str, list[Any]]:
        """Per obstacle drawn: its group node (at the obstacle's world pose), then its parts."""
        return self._world_scene.obstacle_nodes

    @property
    def obstacle_controls(self) -> dict[str, Any]:
        """The gizmo of each obstacle drawn, by name (drag it: the obstacle moves)."""
        return self._world_scene.controls

    @property
    def attached_nodes(self) -> dict[str, list[Any]]:
        """Per attached object drawn: its group node (on its link), then its parts."""
        return self._world_scene.attached_nodes

    @property
    def controls(self) -> dict[str, Any]:
        """The page's checkboxes by label (set their ``.value``).

        "Visual geometry", "Collision geometry", "Collision pairs", "Centre of mass",
        "Obstacles", "Obstacle gizmos", and "Run" (pauses the solver loop) with a solver.
        """
        out = {
            "Visual geometry": self._show_visual,
            "Collision geometry": self._show_collision,
            "Collision pairs": self._show_pairs,
            "Centre of mass": self._show_com,
            "Obstacles": self._show_obstacles,
            "Obstacle gizmos": self._show_gizmos,
        }
        if self._running is not None:
            out["Run"] = self._running
        return out

    @property
    def panel_text(self) -> str:
        """The side panel's current text (markdown)."""
        return str(self._panel.content)

    @property
    def robot_nodes(self) -> list[str]:
        """Scene-tree paths of the robot's visual geometry nodes."""
        return self._robot_scene.node_names

    @property
    def skipped_geometries(self) -> list[str]:
        """Geometry the viewer cannot draw (planes, half-spaces, height fields)."""
        return list(self._robot_scene.skipped)

    @property
    def configuration(self) -> np.ndarray:
        """The configuration shown (size nq, a copy) [rad or m]."""
        with self._lock:
            return self._current_q().copy()

    @property
    def snapshot(self) -> LoopSnapshot | None:
        """The solver loop's latest state (None in joint-slider mode)."""
        return self._loop.snapshot() if self._loop is not None else None

    @property
    def pair_segments(self) -> PairSegments | None:
        """The collision-pair segments drawn last (None before the first draw)."""
        return self._segments

    # -- control -------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the solver loop and the display thread (a no-op when running)."""
        if self._closed:
            raise InvalidInput("the viewer is closed")
        with self._lock:  # the display reads the solver's pairs only while no step runs
            self._started = True
            if self._loop is not None and not self._loop_running:
                self._loop.start()
                self._loop_running = True
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._display, name="stackik-viewer-display", daemon=True
            )
            self._thread.start()

    def set_target(self, task_name: str, pose: object) -> None:
        """Move a frame task's target (and its gizmo) to ``pose`` (SE3 or 4x4, world).

        Raises:
            TaskNotFound: No frame task of that name.
            InvalidTransform: A bad pose.
        """
        if task_name not in self.target_controls:
            raise TaskNotFound(task_name, list(self.target_controls))
        T = as_se3(pose, "pose")
        handle = self.target_controls[task_name]
        with self._lock:
            handle.position = T.translation
            handle.wxyz = wxyz(T.rotation)
            self._apply_target(task_name, handle)

    def set_configuration(self, q: object) -> None:
        """Show configuration ``q`` (size nq): moves the sliders, or restarts the solver loop."""
        q0 = self.robot.check_configuration(q)
        with self._lock:
            self._playback = None
            self._q = q0.copy()
            if self._sliders is not None:
                self._sliders.write(q0)
            if self._loop is not None and hasattr(self._loop, "reset"):
                self._loop.reset(q0)

    def reset(self) -> None:
        """Back to the start configuration, targets at the frames' poses there."""
        self.set_configuration(self._start_q)
        kin = self.robot.create_kinematics(self._start_q)
        for task in _frame_tasks(self.solver):
            if task.name in self.target_controls:
                self.set_target(task.name, kin.frame_pose(task.frame_name))

    def play(self, configurations: object, dt: float = 0.02, loop: bool = True) -> None:
        """Replay a motion: configurations (K x nq) shown ``dt`` seconds apart.

        The solver loop pauses while a motion plays; :meth:`set_configuration` ends it.

        Raises:
            ShapeError, NonFiniteInput: A bad configuration.
            InvalidInput: No configuration, or ``dt`` not positive.
        """
        qs = np.atleast_2d(np.asarray(configurations, dtype=float))
        if qs.shape[0] == 0:
            raise InvalidInput("play needs at least one configuration")
        qs = np.array([self.robot.check_configuration(q, "configurations") for q in qs])
        period = positive_float(dt, "dt")
        repeat = flag(loop, "loop")
        with self._lock:
            self._playback = (qs, period, repeat, time.perf_counter())

    def refresh(self) -> None:
        """Draw the current state now (the display thread does this ``fps`` times a second)."""
        with self._lock:
            self._draw()

    def wait(self, timeout: float | None = None) -> None:
        """Block until :meth:`close`, Ctrl+C or ``timeout`` seconds [s]; then close."""
        try:
            self._stop.wait(timeout)
        except KeyboardInterrupt:
            pass
        finally:
            self.close()

    def close(self) -> None:
        """Stop the loop and the display thread, and shut the server down."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)
        if self._loop is not None and self._loop_running:
            self._loop.stop()
            self._loop_running = False
        self._server.stop()

    def __enter__(self) -> Viewer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the display thread --------------------------------------------------------------------
    def _display(self) -> None:
        while not self._stop.is_set():
            t0 = time.perf_counter()
            try:
                with self._lock:
                    self._draw()
            except Exception as exc:  # shown in the panel; the thread keeps drawing
                if self._stop.is_set():
                    return
                self.display_error = f"{type(exc).__name__}: {exc}"
                self._stop.wait(1.0)
            self._stop.wait(max(self._period - (time.perf_counter() - t0), 0.001))

    def _current_q(self) -> np.ndarray:
        if self._playback is not None:
            qs, period, repeat, t0 = self._playback
            k = int((time.perf_counter() - t0) / period)
            return qs[k % len(qs)] if repeat else qs[min(k, len(qs) - 1)]
        if self._sliders is not None:
            return self._sliders.read(self._q)
        if self._loop is not None:
            return self._loop.snapshot().q
        return self._q

    def _apply_target(self, name: str, handle: Any) -> None:
        position, quat = _pose_of(handle)
        if self._loop is not None:
            self._loop.set_frame_target(name, pin.SE3(q2r(quat), position))
        self._applied[name] = (position, quat)

    def _poll_targets(self) -> None:
        for name, handle in self.target_controls.items():
            position, quat = _pose_of(handle)
            old_p, old_q = self._applied[name]
            if not (np.array_equal(position, old_p) and np.array_equal(quat, old_q)):
                self._apply_target(name, handle)

    def _on_obstacle_drag(self, name: str) -> None:
        """A gizmo drag in the page (viser's callback thread): publish the obstacle's pose."""
        with self._lock:
            if not self._closed:
                self._world_scene.apply_drag(name)

    def _draw(self) -> None:
        self._poll_targets()
        self._sync_running()
        q = self._current_q()
        moved = self._drawn_q is None or not np.array_equal(q, self._drawn_q)
        with self._server.atomic():
            self._robot_scene.set_visible(self._show_visual.value, self._show_collision.value)
            world = self._world_scene
            self._world_state = world.sync(self.world)
            world.set_visible(self._show_obstacles.value, self._show_gizmos.value)
            if moved:
                self._kin.update(q)
                self._robot_scene.draw(self._kin)
                self._drawn_q = q.copy()
            if moved or world.attached_stale:
                world.draw_attached(self._kin)
            self._draw_overlays(moved)
        now = time.perf_counter()
        if now - self._last_panel >= PANEL_PERIOD:
            self._panel.content = self._panel_text(self.snapshot)
            self._last_panel = now

    def _sync_running(self) -> None:
        loop = self._loop
        if loop is None or self._running is None or not self._started:
            return
        run = bool(self._running.value) and self._playback is None and not self._stop.is_set()
        if run != self._loop_running:
            loop.start() if run else loop.stop()
            self._loop_running = run

    def _watched(self, state: WorldState) -> WatchedPairs:
        """The pairs the solver watches in the world layout drawn (``state.layout``).

        While the loop steps, they come from its latest snapshot (read in the loop's
        thread between steps; the solver's constraint is never read here while a step
        may run). While it does not step (paused, playing a motion, not started) or
        when its snapshots carry none, they are read from the solver itself, again
        whenever the drawn layout is not the one they were read at, and every
        :data:`~stackik.viz.loop.WATCH_REFRESH` seconds (minimums set by name).
        """
        solver = self.solver
        if solver is None:
            return _ALL_PAIRS
        reported = self._loop.snapshot().watched if self._loop is not None else None
        if reported is not None and self._loop_running:
            return reported
        read, now = self._read_watched, time.perf_counter()
        if (
            read is None
            or read.world_layout is not state.layout
            or now - self._read_at > WATCH_REFRESH
        ):
            read = self._read_watched = watched_pairs(solver)
            self._read_at = now
        return read

    def _draw_overlays(self, moved: bool) -> None:
        if not self._show_pairs.value:
            self._overlays.draw_pairs(None)
            self._pairs_key = None
        else:
            state = self._world_state
            assert state is not None  # set by _draw just before
            watched = self._watched(state)
            key = self._pairs_key
            if moved or key is None or key[0] is not state or key[1] is not watched:
                self._segments = self._pairs.compute(
                    self._kin,
                    watched.names,
                    watched.min_distance,
                    dict(watched.overrides),
                    state,
                )
                self._pairs_key = (state, watched)
                self._overlays.draw_pairs(self._segments)
        if not self._show_com.value:
            self._overlays.draw_com(None, None, 0.0)
        elif moved:
            self._overlays.draw_com(self._kin.com.copy(), self._support_polygon(), self._ground())

    def _support_polygon(self) -> np.ndarray | None:
        solver = self.solver
        c = solver.get_constraint("com_polygon") if solver is not None else None
        if not isinstance(c, ComPolygonConstraint):
            return None
        pts = polygon_in_world(self._kin, c.vertices, c.frame_name)
        if c.frame_name == "world":
            pts[:, 2] = self._ground()
        return pts

    def _ground(self) -> float:
        """Height of the lowest frame: where a world-frame polygon is drawn [m]."""
        return float(np.min([M.translation[2] for M in self._kin.data.oMf]))

    # -- the side panel ------------------------------------------------------------------------
    def _panel_text(self, snap: LoopSnapshot | None) -> str:
        robot = self.robot
        lines = [f"**{self._name}**: {robot.nv} DoF, {len(robot.get_collision_pair_names())} pairs"]
        state = self._world_state
        if state is not None:
            for count, what in ((len(state.layout.obstacles), "obstacle"),
                                (len(state.layout.attached), "attached object")):  # fmt: skip
                if count:
                    lines[0] += f", {count} {what}{'s' if count > 1 else ''}"
        if self.solver is None:
            lines.append("Joint sliders (no solver).")
        elif snap is not None and snap.status == "ERROR":
            lines.append(f"**Solver stopped**: {snap.status_message}")
        elif snap is not None and snap.steps:
            lines.append(
                f"**Solver** `{snap.status}`, {1e3 * snap.step_time_ms:.0f} µs per step "
                f"(median), {snap.steps} steps"
            )
        if self.display_error:
            lines.append(f"**Display error**: {self.display_error}")
        seg = self._segments
        if seg is not None and seg.closest is not None:
            a, b, d = seg.closest
            lines.append(f"**Nearest its minimum** {a} / {b}: {d:.3f} m")
        text = "\n\n".join(lines)
        if snap is not None and snap.tasks:
            table = ["| task | priority | error | scale |", "|:--|--:|--:|--:|"]
            table += [
                f"| {t.name} | {t.priority} | {t.error:.2e} | {t.scale:.2f} |" for t in snap.tasks
            ]
            text += "\n\n" + "\n".join(table)
        return text


def show(
    robot: RobotModel,
    solver: KinematicsSolver | None = None,
    configurations: Sequence[np.ndarray] | np.ndarray | None = None,
    dt: float = 0.02,
    **options: Any,
) -> None:
    """Open a viewer and block until Ctrl+C (a convenience for scripts).

    Args:
        robot: The robot.
        solver: Optional solver (gizmos and the live loop).
        configurations: A motion to replay in a loop (K x nq), ``dt`` seconds apart.
        dt: Time between replayed configurations [s].
        **options: Further :class:`Viewer` arguments (``port``, ``host``, ...).
    """
    viewer = Viewer(robot, solver, **options)
    if configurations is not None:
        viewer.play(configurations, dt)
    viewer.wait()
