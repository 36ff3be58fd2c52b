"""``stackik view``: open a robot in the browser viewer (``pip install "stackik[viz]"``)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..model import RobotModel
from ..solver import KinematicsSolver
from .common import (
    FloatingOpt,
    PackageDirsOpt,
    SceneOpt,
    SrdfOpt,
    UrdfArg,
    configure_collision,
    err,
    load_robot,
    load_scene,
    one_line_errors,
)

#: Control period of the solver behind the gizmos [s].
VIEW_DT = 0.01


def view_solver(robot: RobotModel, frames: list[str], min_distance: float) -> KinematicsSolver:
    """A solver for the viewer: a frame task per frame (priority 0), a posture below it.

    Collision avoidance at ``min_distance`` [m] when the robot has collision geometry or
    carries an attached object (``min_distance < 0``: none): its own pairs and its pairs
    with the obstacles of its world.
    """
    from ..model.pipeline import has_movers

    solver = KinematicsSolver(robot, dt=VIEW_DT)
    for frame in frames:
        task = solver.add_frame_task(frame, frame)
        task.gain = 10.0
    posture = solver.add_posture_task("posture")
    posture.priority = 1
    posture.gain = 1.0
    if min_distance >= 0.0 and has_movers(robot, robot.world.state):
        configure_collision(solver, min_distance, "collision avoidance")
    return solver


@one_line_errors
def view(
    urdf: UrdfArg,
    srdf: SrdfOpt = None,
    frame: Annotated[
        list[str] | None,
        typer.Option(
            "--frame", "-f", help="Frame to drag with a gizmo (repeatable); none: joint sliders."
        ),
    ] = None,
    package_dir: PackageDirsOpt = None,
    floating_base: FloatingOpt = False,
    scene: SceneOpt = None,
    collision: Annotated[
        bool, typer.Option("--collision", help="Show the collision geometry at the start.")
    ] = False,
    min_distance: Annotated[
        float,
        typer.Option(
            help="Distance kept from the robot's own links and the scene's obstacles while "
            "dragging [m] (negative: off)."
        ),
    ] = 0.01,
    host: Annotated[str, typer.Option(help="Interface to listen on (0.0.0.0: all).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(help="Port of the page (the next free one if taken).")] = (
        8080
    ),
    duration: Annotated[
        float | None, typer.Option(help="Close after this many seconds (default: Ctrl+C).")
    ] = None,
) -> None:
    """Show a robot in the browser: drag frame targets (--frame) or move joint sliders.

    Dragging a gizmo runs the solver (the frame tasks above a posture task, joint limits
    and collision avoidance) and the robot follows. With --scene, the scene's obstacles
    are shown (each with a gizmo: drag it and the robot avoids it) and avoided. The page
    also shows the collision pairs near their minimum distance, the CoM and a panel of
    task errors.
    """
    from ..viz import Viewer

    robot = load_robot(urdf, srdf, package_dir, floating_base, load_visuals=True)
    frames = list(frame or [])
    for name in frames:
        robot.get_frame_id(name)  # FrameNotFound with the closest names
    load_scene(robot, scene)
    solver = view_solver(robot, frames, min_distance) if frames else None
    try:
        viewer = Viewer(
            robot, solver, host=host, port=port, show_collision=collision, verbose=False
        )
    except ImportError:
        err.print("[bold red]error:[/] stackik view needs viser: pip install 'stackik[viz]'")
        raise typer.Exit(1) from None
    err.print(f"stackik viewer: {viewer.url} (Ctrl+C to stop)", highlight=False)
    viewer.wait(duration)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the application."""
    app.command("view")(view)
