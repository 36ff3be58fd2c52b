"""Robot description commands: ``stackik info``, ``stackik check``, ``stackik exclusions``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import numpy as np
import pinocchio as pin
import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table

from ..errors import InvalidInput
from ..model import JointKind, RobotModel
from ..model.exclusions import CATEGORIES, CollisionExclusionReport
from .checks import DescriptionReport, check_description
from .common import (
    FloatingOpt,
    PackageDirsOpt,
    SceneOpt,
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


def _limit(value: float, unit: str = "") -> str:
    return f"{value:.4g}{unit}" if np.isfinite(value) else "-"


def joint_table(robot: RobotModel) -> Table:
    """Joints with their kind, position limits [rad or m], velocity and effort limits."""
    table = Table(title="joints")
    for column in ("joint", "kind"):
        table.add_column(column, no_wrap=True)
    for column in ("lower", "upper", "velocity", "effort"):
        table.add_column(column, justify="right")
    lower, upper = robot.get_joint_limits()
    velocity, effort = robot.get_velocity_limits(), robot.get_effort_limits()
    kept = {f: (lead, m, c) for f, lead, m, c in robot.kept_mimic_joints}
    for info in robot.joint_infos:
        if info.kind == JointKind.MIMIC:
            leader = next(m[1] for m in robot.mimic_joints if m[0] == info.name)
            kind = f"mimic ({info.mimic_scaling:g} x {leader} + {info.mimic_offset:g})"
            table.add_row(info.name, kind, "", "", "", "")
            continue
        scalar = info.nq == 1 and info.nv == 1
        i, k = info.idx_q, info.idx_v
        kind = str(info.kind)
        if info.name in kept:  # a follower kept in q (mimic="keep")
            lead, m, c = kept[info.name]
            kind += f", mimic ({m:g} x {lead} + {c:g})"
        table.add_row(
            info.name,
            kind,
            _limit(lower[i]) if scalar else "",
            _limit(upper[i]) if scalar else "",
            _limit(velocity[k]) if info.nv == 1 else "",
            _limit(effort[k]) if info.nv == 1 else "",
        )
    return table


def geometry_table(robot: RobotModel) -> Table:
    """Collision geometries: name, link, shape and sizes [m]."""
    table = Table(title="collision geometry")
    for column in ("geometry", "link", "shape", "sizes [m]"):
        table.add_column(column)
    for g in robot.get_collision_geometries():
        params = g["params"]
        sizes = ", ".join(f"{k} {v}" for k, v in params.items()) if isinstance(params, dict) else ""
        table.add_row(str(g["name"]), str(g["parent_frame"]), str(g["geometry_type"]), sizes)
    return table


def _frames(robot: RobotModel) -> list[str]:
    """Link and tool frames (not the joints' own frames)."""
    model = robot.model
    joint_frames = (pin.FrameType.JOINT, pin.FrameType.FIXED_JOINT)
    return [f.name for f in model.frames[1:] if f.type not in joint_frames]


@one_line_errors
def info(
    urdf: UrdfArg,
    srdf: SrdfOpt = None,
    package_dir: PackageDirsOpt = None,
    floating_base: FloatingOpt = False,
    pairs: Annotated[bool, typer.Option("--pairs", help="List the active pairs.")] = False,
) -> None:
    """Show a robot: joints with limits and kinds, frames, mass, collision geometry and pairs."""
    robot = load_robot(urdf, srdf, package_dir, floating_base)
    name = robot.model.name or urdf.stem
    out.print(
        f"[bold]{name}[/]: nq {robot.nq}, nv {robot.nv}, "
        f"{'floating' if robot.is_floating_base else 'fixed'} base, "
        f"mass {robot.get_total_mass():.3f} kg",
        highlight=False,
    )
    out.print(joint_table(robot))
    frames = _frames(robot)
    out.print(f"frames ({len(frames)}): " + ", ".join(frames), highlight=False, soft_wrap=True)
    if robot.has_collision_geometry():
        out.print(geometry_table(robot))
    active = robot.get_collision_pair_links()
    out.print(f"active collision pairs: {len(active)}", highlight=False)
    if pairs:
        for a, b in active:
            out.print(f"  {a} / {b}", highlight=False)


def print_report(report: DescriptionReport) -> None:
    """The findings of a check, one line each (never wrapped: easy to grep in CI logs)."""
    style = {"error": "bold red", "warning": "yellow"}
    counts = f"{len(report.errors)} errors, {len(report.warnings)} warnings"
    out.print(f"{report.path}: {counts}", highlight=False, soft_wrap=True)
    for f in report.findings:
        out.print(
            f"[{style[f.level]}]{f.level}[/] {escape(f'[{f.check}]')} {escape(f.message)}",
            highlight=False,
            soft_wrap=True,
        )


@one_line_errors
def check(
    urdf: UrdfArg,
    srdf: SrdfOpt = None,
    package_dir: PackageDirsOpt = None,
    floating_base: FloatingOpt = False,
    samples: Annotated[
        int, typer.Option(help="Configurations sampled for the collision checks (0: skip).")
    ] = 1000,
    seed: Annotated[int, typer.Option(help="Seed of the samples.")] = 0,
    strict: Annotated[bool, typer.Option("--strict", help="Fail on warnings too.")] = False,
    scene: SceneOpt = None,
) -> None:
    """Validate a robot description; exit code 1 when it has errors.

    Reports malformed elements, missing meshes, a bad SRDF, and link pairs that are
    still checked for collision although they are always in contact (errors) or always
    close (warnings), with the SRDF lines that disable them. With --scene: a scene that
    does not load (an error), and robot or attached geometry in collision with the
    scene at the neutral configuration (warnings).
    """
    if samples < 0:
        raise InvalidInput(f"samples must be at least 0, got {samples}")
    report = check_description(urdf, srdf, package_dir, floating_base, samples, seed, scene)
    if report.findings:
        print_report(report)
    else:
        out.print(f"{report.path}: no problem found", highlight=False)
    if report.robot is not None and report.samples:
        out.print(
            f"collision checks over {report.samples} sampled configurations, "
            f"{len(report.robot.get_collision_pair_links())} active pairs",
            highlight=False,
        )
    lines = report.srdf_lines()
    if lines:
        out.print("add to the SRDF:", highlight=False)
        for line in lines:
            out.print("  " + line, markup=False, highlight=False, soft_wrap=True)
    if report.errors or (strict and report.warnings):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the application."""
    app.command("info")(info)
    app.command("check")(check)
    app.command("exclusions")(exclusions)
