"""What every command shares: the consoles, one-line error reporting, robot loading."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from ..errors import StackIKError
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


def one_line_errors(func: F) -> F:
    """Report stackik and file errors as one line (exit code 1) unless ``--debug``."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (StackIKError, OSError) as exc:
            if STATE["debug"]:
                raise
            err.print(f"[bold red]error:[/] {type(exc).__name__}: {exc}", highlight=False)
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]


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
