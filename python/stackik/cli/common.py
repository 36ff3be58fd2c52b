"""What every command shares: the consoles, one-line error reporting, robot loading."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from ..errors import FixedPairWarning, StackIKError
from ..model import RobotModel

#: Standard output and error consoles of every command.
out = Console()
err = Console(stderr=True, soft_wrap=True)

#: Global options (set by the application callback).
STATE = {"debug": False}

F = TypeVar("F", bound=Callable[..., Any])

# Arguments and options that several commands take.
UrdfArg = Annotated[
    Path, typer.Argument(help="URDF or XACRO file (.xacro is expanded).", show_default=False)
]
SrdfOpt = Annotated[Path | None, typer.Option("--srdf", help="SRDF with disabled pairs.")]
PackageDirsOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--package-dir", "-p", help="Extra folder searched for package:// meshes (repeatable)."
    ),
]
FloatingOpt = Annotated[bool, typer.Option("--floating-base", help="Add a free-flyer root joint.")]
SceneOpt = Annotated[
    Path | None,
    typer.Option(
        "--scene",
        help="YAML scene of obstacles and attached objects loaded into the robot's world.",
    ),
]


def one_line_errors(func: F) -> F:
    """Report stackik and file errors as one line (exit code 1) unless ``--debug``.

    The message is printed as text (no rich markup), its lines joined into one.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (StackIKError, OSError) as exc:
            if STATE["debug"]:
                raise
            # One line whatever the message holds (a YAML parser's report spans several).
            message = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
            err.print(
                f"[bold red]error:[/] {type(exc).__name__}: {escape(message)}", highlight=False
            )
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]


def load_scene(robot: RobotModel, scene: Path | None) -> list[str]:
    """Load a scene file into ``robot.world`` (nothing without one); return the names added.

    Raises:
        RobotFileNotFound: No such file.
        MalformedScene: The file breaks the scene format (the message names the entry).
        FrameNotFound: An attached object names a link the robot lacks.
    """
    if scene is None:
        return []
    return robot.load_scene(scene)


def load_robot(
    path: Path,
    srdf: Path | None = None,
    package_dirs: list[Path] | None = None,
    floating_base: bool = False,
    load_visuals: bool = False,
    load_collisions: bool = True,
) -> RobotModel:
    """Load a URDF or XACRO file as the commands do (visual meshes off by default)."""
    dirs = [str(p) for p in package_dirs or []] or None
    srdf_path = str(srdf) if srdf is not None else None
    if path.suffix == ".xacro":
        return RobotModel.from_xacro(
            path,
            floating_base,
            package_dirs=dirs,
            srdf_path=srdf_path,
            load_visuals=load_visuals,
            load_collisions=load_collisions,
        )
    return RobotModel(
        path,
        floating_base=floating_base,
        package_dirs=dirs,
        srdf_path=srdf_path,
        load_visuals=load_visuals,
        load_collisions=load_collisions,
    )


def configure_collision(solver: Any, min_distance: float, leaving_out: str) -> None:
    """Configure the collision constraint of a solver a command builds; report on stderr.

    Pairs no joint moves apart that sit inside ``min_distance`` (a base resting on the
    scene's table) are left out, with a note naming them and ``leaving_out`` (what they
    are left out of); the user cannot exclude them from the command line, and their
    distance is the same in every configuration. Other warnings print as one line each.

    Args:
        solver: The command's ``KinematicsSolver``.
        min_distance: The constraint's minimum distance [m].
        leaving_out: Ends "note: left out of ...", e.g. "the study".
    """
    caught = _configure(solver, min_distance, [])
    fixed = [(a, b) for w in caught if isinstance(w, FixedPairWarning) for a, b, _, _ in w.pairs]
    if fixed:
        caught = _configure(solver, min_distance, fixed)
        listed = ", ".join(f"{a}/{b}" for a, b in fixed)
        err.print(
            f"note: left out of {leaving_out}: {escape(listed)} (no joint moves them apart: "
            "their distance is the same in every configuration)",
            highlight=False,
        )
    for w in caught:
        err.print(f"[yellow]warning:[/] {escape(str(w))}", highlight=False)


def _configure(solver: Any, min_distance: float, exclude: list[tuple[str, str]]) -> list[Warning]:
    """Configure the collision constraint; the warnings it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        solver.configure_collision_constraint(min_distance, exclude_pairs=exclude)
    return [w.message for w in caught if isinstance(w.message, Warning)]
