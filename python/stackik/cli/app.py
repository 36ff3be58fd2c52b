"""The typer application: global options and the command groups."""

from __future__ import annotations

from typing import Annotated

import typer

from . import bench, reach, robot, view, warmup
from .common import STATE

app = typer.Typer(
    name="stackik",
    help="Prioritized inverse kinematics on Pinocchio: robot checks, studies and tools.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",  # (units such as [m] are text, not rich markup)
)


@app.callback()
def _options(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
) -> None:
    """Prioritized inverse kinematics on Pinocchio: robot checks, studies and tools."""
    STATE["debug"] = debug


robot.register(app)
view.register(app)
bench.register(app)
reach.register(app)
warmup.register(app)
