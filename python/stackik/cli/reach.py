"""Reachability commands: ``stackik reach study | map | show | compare``.

Each wraps the :mod:`stackik.reach` call of the same name and prints its summary; long
runs show a progress bar (targets, targets/s, ETA). Errors (a missing or malformed file,
a store of another study) print one line and exit with code 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import InvalidInput
from .common import (
    FloatingOpt,
    PackageDirsOpt,
    SceneOpt,
    SrdfOpt,
    configure_collision,
    load_robot,
    load_scene,
    one_line_errors,
    out,
)

reach_app = typer.Typer(
    name="reach",
    help="Reachability studies: workpiece studies (REACH), capability maps, plots.",
    no_args_is_help=True,
    rich_markup_mode="markdown",  # (units such as [m] are text, not rich markup)
)

RobotOpt = Annotated[
    Path,
    typer.Option(
        "--robot", "-r", help="URDF or XACRO file (.xacro is expanded).", show_default=False
    ),
]
FrameOpt = Annotated[str, typer.Option("--frame", "-f", help="Tool frame placed on the targets.")]
OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Zarr store written as chunks finish.")]
ExecutorOpt = Annotated[
    str, typer.Option("--executor", "-e", help="local (process pool), ray or serial.")
]
WorkersOpt = Annotated[
    int | None, typer.Option("--workers", "-w", help="Processes (default: every core).")
]
ResumeOpt = Annotated[
    bool, typer.Option("--resume/--no-resume", help="Skip the chunks a same-study store has.")
]
MinDistanceOpt = Annotated[
    float,
    typer.Option(
        "--min-distance",
        help=(
            "Collision minimum distance [m] (robots with geometry or --scene attached "
            "objects; self and --scene pairs)."
        ),
    ),
]
CollisionOpt = Annotated[
    bool,
    typer.Option(
        "--collision/--no-collision",
        help="Check self-collision and the --scene obstacles (the default); targets "
        "reached only through an obstacle are WORLD_COLLISION.",
    ),
]
MarginOpt = Annotated[float, typer.Option("--limit-margin", help="Joint-limit margin [rad or m].")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the random restarts.")]
PlotOpt = Annotated[
    Path | None, typer.Option("--plot", help="Also draw the result's figure (.png or .svg).")
]
AddressOpt = Annotated[
    str | None, typer.Option("--address", help="Ray cluster address (--executor ray).")
]
ProgressOpt = Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bar.")]

MESH_SUFFIXES = (".stl", ".obj", ".ply", ".off", ".glb", ".gltf")


def _solver(robot: Any, collision: bool, min_distance: float, limit_margin: float) -> Any:
    """The study's solver; pairs no joint moves apart (a base on a table) are left out.

    A study leaves such pairs out of its world checks (their distance is the same for
    every target); its solver's collision constraint leaves them out too, so that its
    steps do not report them, and a note says so instead of the constraint's warning.
    """
    from ..model.pipeline import has_movers
    from ..solver import KinematicsSolver

    solver = KinematicsSolver(robot)
    if limit_margin:
        solver.set_limit_margin(limit_margin)
    if collision and has_movers(robot, robot.world.state):
        configure_collision(solver, min_distance, "the study")
    return solver


def _targets(path: Path, spacing: float | None, count: int | None, standoff: float, scale: float):
    from ..reach import targets_from_csv, targets_from_mesh

    suffix = path.suffix.lower()
    if suffix == ".csv":
        return targets_from_csv(path)
    if suffix in MESH_SUFFIXES:
        if spacing is None and count is None:
            spacing = 0.05
        return targets_from_mesh(path, spacing, count, standoff, scale=scale)
    raise InvalidInput(
        f"--targets must be a .csv file or a mesh ({', '.join(MESH_SUFFIXES)}), got {path.name!r}",
        what="targets",
        value=str(path),
    )


def _report(result: Any) -> None:
    out.print(str(result.summary()), highlight=False)


@one_line_errors
def study(
    robot_path: RobotOpt,
    frame: FrameOpt,
    targets: Annotated[
        Path, typer.Option("--targets", "-t", help="Workpiece mesh (STL/OBJ/PLY) or CSV of poses.")
    ],
    out_path: OutOpt,
    srdf: SrdfOpt = None,
    package_dir: PackageDirsOpt = None,
    floating_base: FloatingOpt = False,
    scene: SceneOpt = None,
    spacing: Annotated[
        float | None, typer.Option(help="Target spacing on the mesh [m] (default 0.05).")
    ] = None,
    count: Annotated[int | None, typer.Option(help="Number of targets on the mesh.")] = None,
    standoff: Annotated[float, typer.Option(help="Distance off the surface [m].")] = 0.0,
    scale: Annotated[float, typer.Option(help="Mesh units to metres (0.001 for mm).")] = 1.0,
    collision: CollisionOpt = True,
    min_distance: MinDistanceOpt = 0.0,
    limit_margin: MarginOpt = 0.0,
    executor: ExecutorOpt = "local",
    workers: WorkersOpt = None,
    resume: ResumeOpt = True,
    seed: SeedOpt = 0,
    address: AddressOpt = None,
    plot: PlotOpt = None,
    progress: ProgressOpt = True,
) -> None:
    """Reachability of workpiece targets (REACH): which poses the frame reaches, how well."""
    from ..model.world import World
    from ..reach import ReachStudy
    from ..reach.plots import check_suffix

    check_suffix(plot)
    robot = load_robot(robot_path, srdf, package_dir, floating_base)
    load_scene(robot, scene)  # in the robot's world before the solver and the study exist
    solver = _solver(robot, collision, min_distance, limit_margin)
    ts = _targets(targets, spacing, count, standoff, scale)
    world = None if collision else World()  # --no-collision: the scene is not checked
    result = ReachStudy(robot, frame, ts, solver, seed=seed, world=world).run(
        executor, workers, out_path, resume, progress, address
    )
    _report(result)
    out.print(f"wrote {out_path}")
    if plot is not None:
        result.plot(plot)
        out.print(f"wrote {plot}")


@one_line_errors
def capability_map(
    robot_path: RobotOpt,
    frame: FrameOpt,
    out_path: OutOpt,
    srdf: SrdfOpt = None,
    package_dir: PackageDirsOpt = None,
    floating_base: FloatingOpt = False,
    scene: SceneOpt = None,
    resolution: Annotated[float, typer.Option(help="Voxel edge [m].")] = 0.05,
    orientations: Annotated[int, typer.Option(help="Orientations per voxel.")] = 50,
    bounds: Annotated[
        tuple[float, float, float, float, float, float] | None,
        typer.Option(help="xmin ymin zmin xmax ymax zmax [m] (default: the reach envelope)."),
    ] = None,
    collision: CollisionOpt = True,
    min_distance: MinDistanceOpt = 0.0,
    limit_margin: MarginOpt = 0.0,
    executor: ExecutorOpt = "local",
    workers: WorkersOpt = None,
    resume: ResumeOpt = True,
    seed: SeedOpt = 0,
    address: AddressOpt = None,
    plot: PlotOpt = None,
    progress: ProgressOpt = True,
) -> None:
    """Capability map: the reachability index of every voxel (fraction of orientations)."""
    from ..model.world import World
    from ..reach import CapabilityMap
    from ..reach.plots import check_suffix

    check_suffix(plot)
    robot = load_robot(robot_path, srdf, package_dir, floating_base)
    load_scene(robot, scene)  # in the robot's world before the solver and the study exist
    solver = _solver(robot, collision, min_distance, limit_margin)
    box = None if bounds is None else [bounds[:3], bounds[3:]]
    cmap = CapabilityMap.build(
        robot,
        frame,
        resolution,
        orientations,
        box,
        solver=solver,
        world=None if collision else World(),  # --no-collision: the scene is not checked
        seed=seed,
        executor=executor,
        workers=workers,
        store=out_path,
        resume=resume,
        progress=progress,
        address=address,
    )
    assert cmap.result is not None
    _report(cmap.result)
    s = cmap.summary()
    out.print(
        f"{int(s['reachable_voxels'])} of {int(s['voxels'])} voxels reachable, "
        f"mean index {s['mean_index']:.3f}; wrote {out_path}"
    )
    if plot is not None:
        cmap.result.plot(plot)
        out.print(f"wrote {plot}")


@one_line_errors
def show(
    store: Annotated[Path, typer.Argument(help="A study or map store (.zarr).")],
    out_path: Annotated[
        Path | None, typer.Option("--out", "-o", help="Figure file (.png or .svg).")
    ] = None,
    value: Annotated[str, typer.Option(help="score, reachable or an evaluator's name.")] = "score",
    axis: Annotated[str, typer.Option(help="Map slice axis (grid studies, with --at).")] = "z",
    at: Annotated[
        float | None, typer.Option(help="Draw the map slice at this coordinate [m].")
    ] = None,
) -> None:
    """Summary of a stored study or map, and its heat map."""
    from ..reach import CapabilityMap, ReachResult
    from ..reach.plots import check_suffix

    check_suffix(out_path)
    result = ReachResult.load(store)
    _report(result)
    if not result.complete:
        out.print(f"{int((~result.done).sum())} of {len(result.done)} chunks not run yet")
    if out_path is None:
        return
    if at is not None:
        CapabilityMap.from_result(result).plot_slice(axis, at, out_path)
    else:
        result.plot(out_path, value)
    out.print(f"wrote {out_path}")


@one_line_errors
def compare(
    a: Annotated[Path, typer.Argument(help="First study store (the baseline).")],
    b: Annotated[Path, typer.Argument(help="Second study store.")],
    out_path: Annotated[
        Path | None, typer.Option("--out", "-o", help="Figure of gains and losses (.png/.svg).")
    ] = None,
) -> None:
    """Compare two studies over the same targets: gains, losses, score change."""
    from ..reach import ReachResult
    from ..reach.plots import check_suffix, plot_comparison

    check_suffix(out_path)
    ra, rb = ReachResult.load(a), ReachResult.load(b)
    comparison = ra.compare(rb, names=(a.name, b.name))
    out.print(comparison.table(), highlight=False)
    if out_path is not None:
        plot_comparison(ra, comparison, out_path)
        out.print(f"wrote {out_path}")


reach_app.command("study")(study)
reach_app.command("map")(capability_map)
reach_app.command("show")(show)
reach_app.command("compare")(compare)


def register(app: typer.Typer) -> None:
    """Add the ``reach`` command group to the application."""
    app.add_typer(reach_app, name="reach")
