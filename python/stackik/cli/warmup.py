"""``stackik warmup``: compile every kernel for this machine, in parallel, into the cache.

Run it once where the kernel cache should be filled ahead of use: a Docker image build,
a cluster node's setup, a CI job's first step. Every registered warm-up job (the SNS
core, the chain, branch and closed-form kernels, whole solver calls on a built-in arm)
runs in a worker process, as many at once as the machine has cores; the workers share
the cache folder and never compile the same kernel twice (file locks). Later processes
on this machine (with the same stackik, numba and CPU) load every kernel from the
cache.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

from .. import _jit
from ..solver import warmup as solver_warmup
from .common import PackageDirsOpt, SrdfOpt, err, load_robot, one_line_errors, out


@one_line_errors
def warmup(
    workers: Annotated[
        int | None,
        typer.Option("--workers", "-j", help="Worker processes (default: one per core)."),
    ] = None,
    robot: Annotated[
        Path | None,
        typer.Option("--robot", help="Also warm a solver step of this URDF/XACRO robot."),
    ] = None,
    srdf: SrdfOpt = None,
    package_dirs: PackageDirsOpt = None,
) -> None:
    """Compile every kernel for this machine into the shared cache, in parallel."""
    count = workers if workers is not None else (os.cpu_count() or 1)
    if count < 1:
        err.print("[bold red]error:[/] --workers must be at least 1")
        raise typer.Exit(2)
    start = time.perf_counter()
    jobs = None
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        "{task.fields[job]}",
        console=err,
    ) as bar:
        _jit.load()
        jobs = _jit.warmup_jobs(everything=True)
        task = bar.add_task(f"compiling on {count} worker(s)", total=len(jobs), job="")

        def progress(done: int, total: int, job: str) -> None:
            bar.update(task, completed=done, job=job.rsplit(":", 1)[-1])

        _jit.warmup(workers=count, progress=progress, everything=True)
        bar.update(task, completed=len(jobs), job="loaded")
    if robot is not None:
        solver_warmup(load_robot(robot, srdf, package_dirs))
    took = time.perf_counter() - start
    log = _jit.compile_log()
    missing = _jit.missing_kernels() if _jit.is_compiled() else []
    out.print(
        f"warmup: {len(jobs)} jobs, {len(log)} kernel compilations, {took:.1f} s; "
        f"cache: {_jit.cache_dir()}",
        highlight=False,
        soft_wrap=True,
    )
    if missing:
        err.print(
            f"[yellow]not reached by any warm-up job ({len(missing)}):[/] " + ", ".join(missing),
            highlight=False,
        )


def register(app: typer.Typer) -> None:
    """Add this module's commands to the application."""
    app.command("warmup")(warmup)
