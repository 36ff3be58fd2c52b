"""Robot description commands: ``stackik exclusions`` (more join with the CLI work)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table

from ..model.exclusions import CATEGORIES, CollisionExclusionReport
from .common import (
    FloatingOpt,
    PackageDirsOpt,
    SrdfOpt,
    UrdfArg,
    err,
    load_robot,
    one_line_errors,
    out,
)


def exclusion_table(report: CollisionExclusionReport, verbose: bool) -> Table:
    """The pairs of a report as a table (``verbose``: the checked pairs too)."""
    table = Table(title=f"{report.robot_name}: link pairs over {report.samples} samples")
    for column in ("category", "link 1", "link 2"):
        table.add_column(column, no_wrap=True)
    for column in ("min [m]", "max [m]", "in collision"):
        table.add_column(column, justify="right")
    for category in CATEGORIES:
        if category == "checked" and not verbose:
            continue
        for p in report.of(category):
            table.add_row(
                category,
                p.link_a,
                p.link_b,
                f"{p.min_distance:.4f}",
                f"{p.max_distance:.4f}",
                f"{100 * p.collision_fraction:.0f} %",
            )
    return table


@one_line_errors
def exclusions(
    urdf: UrdfArg,
    srdf: SrdfOpt = None,
    package_dir: PackageDirsOpt = None,
    floating_base: FloatingOpt = False,
    samples: Annotated[int, typer.Option(help="Random configurations to sample.")] = 10_000,
    seed: Annotated[int, typer.Option(help="Seed of the samples (same seed, same report).")] = 0,
    close_distance: Annotated[
        float, typer.Option(help="A pair never farther apart than this is 'always close' [m].")
    ] = 0.03,
    never_distance: Annotated[
        float,
        typer.Option(help="A pair never closer than this is 'never colliding' [m] (0: touching)."),
    ] = 0.0,
    write: Annotated[
        Path | None,
        typer.Option("--write", "-o", help="Write the SRDF <disable_collisions> lines here."),
    ] = None,
    include_never: Annotated[
        bool, typer.Option(help="Also disable the never-colliding pairs in the written SRDF.")
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="List the checked pairs too.")
    ] = False,
) -> None:
    """Sample the robot and sort its link pairs as MoveIt's setup assistant does.

    Reports adjacent, default (touching at the neutral configuration), always colliding,
    always close and never colliding pairs, with the SRDF lines that disable them.
    """
    robot = load_robot(urdf, srdf, package_dir, floating_base)
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task("sampling", total=samples)
        report = robot.compute_collision_exclusions(
            samples=samples,
            seed=seed,
            close_distance=close_distance,
            never_distance=never_distance,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )
    out.print(exclusion_table(report, verbose))
    out.print(report.summary())
    if write is not None:
        report.write_srdf(write, include_never=include_never)
        out.print(f"wrote {len(report.disabled(include_never))} disabled pairs to {write}")
    else:
        out.print(report.to_srdf(include_never), markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the application."""
    app.command("exclusions")(exclusions)
