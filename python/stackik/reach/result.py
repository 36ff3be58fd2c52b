"""Results of a reachability study: arrays per target, summary, comparison, plots, files."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidInput
from ..model.loading import check_path
from .settings import Reason
from .store import ReachStore
from .targets import GridSpec, TargetSet

__all__ = ["ReachComparison", "ReachResult", "ReachSummary"]


@dataclass
class ReachSummary:
    """Headline figures of a study.

    Attributes:
        targets: Number of targets.
        evaluated: Targets whose chunk has run.
        reachable: Reachable targets.
        fraction: ``reachable / evaluated`` (0 when nothing ran).
        mean_score: Mean combined score of the reachable targets (0 when none).
        solve_time: Sum of the targets' apportioned solve times [s] (CPU work).
        wall_time: Wall-clock time of the run(s) that made the result [s].
        reasons: Targets per :class:`Reason` name.
        scored: Whether the study has evaluators (else ``mean_score`` is 0).
    """

    targets: int
    evaluated: int
    reachable: int
    fraction: float
    mean_score: float
    solve_time: float
    wall_time: float
    reasons: dict[str, int] = field(default_factory=dict)
    scored: bool = True

    @property
    def targets_per_second(self) -> float:
        """Evaluated targets per second of solve time (per core)."""
        return self.evaluated / self.solve_time if self.solve_time > 0 else 0.0

    def __str__(self) -> str:
        lines = [
            f"targets      {self.targets}"
            + (f" ({self.evaluated} evaluated)" if self.evaluated != self.targets else ""),
            f"reachable    {self.reachable} ({100 * self.fraction:.2f} %)",
            f"mean score   {self.mean_score:.4f}"
            if self.scored
            else "mean score   - (no evaluators)",
            f"solve time   {self.solve_time:.2f} s ({self.targets_per_second:.0f} targets/s "
            f"per core), wall {self.wall_time:.2f} s",
        ]
        lines += [f"  {name:<16}{count}" for name, count in self.reasons.items() if count]
        return "\n".join(lines)


@dataclass
class ReachComparison:
    """REACH's study comparison: per-target gains and losses of study ``b`` over ``a``.

    Attributes:
        names: Labels of the two studies.
        gained: Targets reachable in ``b`` only.
        lost: Targets reachable in ``a`` only.
        both: Targets reachable in both.
        score_delta: ``b.score - a.score`` per target (0 where either is unreachable).
        summaries: The two studies' summaries.
    """

    names: tuple[str, str]
    gained: np.ndarray
    lost: np.ndarray
    both: np.ndarray
    score_delta: np.ndarray
    summaries: tuple[ReachSummary, ReachSummary]

    def table(self) -> str:
        """A text table: reachable, fraction, mean score, gains and losses."""
        a, b = self.summaries
        na, nb = self.names
        w = max(12, len(na), len(nb)) + 2
        both = self.both
        mean_delta = float(self.score_delta[both].mean()) if both.any() else 0.0
        rows = [
            f"{'':<{w}}{'reachable':>11}{'fraction':>10}{'mean score':>12}",
            f"{na:<{w}}{a.reachable:>11}{100 * a.fraction:>9.2f}%{a.mean_score:>12.4f}",
            f"{nb:<{w}}{b.reachable:>11}{100 * b.fraction:>9.2f}%{b.mean_score:>12.4f}",
            f"gained in {nb}: {int(self.gained.sum())}, lost: {int(self.lost.sum())}, "
            f"reachable in both: {int(both.sum())} (mean score change {mean_delta:+.4f})",
        ]
        return "\n".join(rows)

    def __str__(self) -> str:
        return self.table()


@dataclass
class ReachResult:
    """Per-target results of a study, in the order of its targets.

    Attributes:
        targets: The study's targets.
        reason: :class:`Reason` code per target (int8; ``NOT_RUN`` for chunks not run).
        q: A configuration reaching each target (NaN rows where unreachable), (N, nq).
        score: Combined evaluator score in [0, 1] (0 where unreachable).
        scores: Each evaluator's score.
        position_error: Frame position error of ``q`` by Pinocchio FK (inf: none) [m].
        orientation_error: Its orientation error (inf: none) [rad].
        iterations: Levenberg-Marquardt iterations spent per target.
        solve_time: Wall time apportioned to each target by its iterations [s]; the only
            array that differs between identical runs.
        header: The stored description (robot, frame, solver, spec, evaluators, ...).
        order: Processing order of the targets (chunk ``c`` is ``order[c*C:(c+1)*C]``).
        done: Which chunks have run.
        wall_time: Wall-clock time of the run(s) [s].
        run_stats: Figures of the chunks this process computed in its last ``run`` (not
            stored): ``chunks``, ``cpu_time`` [s], ``chunk_time`` [s] and ``timings`` (wall
            time by stage [s], see :class:`~stackik.reach.solve.ChunkResult`).
    """

    targets: TargetSet
    reason: np.ndarray
    q: np.ndarray
    score: np.ndarray
    scores: dict[str, np.ndarray]
    position_error: np.ndarray
    orientation_error: np.ndarray
    iterations: np.ndarray
    solve_time: np.ndarray
    header: dict[str, Any]
    order: np.ndarray
    done: np.ndarray
    wall_time: float = 0.0
    run_stats: dict[str, Any] = field(default_factory=dict)

    # -- views ---------------------------------------------------------------------------
    @property
    def reachable(self) -> np.ndarray:
        """Targets with a configuration that passed every test, (N,) bool."""
        return self.reason == Reason.REACHABLE

    @property
    def complete(self) -> bool:
        """Whether every chunk has run."""
        return bool(self.done.all())

    @property
    def frame(self) -> str:
        """The tool frame."""
        return str(self.header.get("frame", ""))

    def __len__(self) -> int:
        return int(self.reason.shape[0])

    def reasons(self) -> dict[str, int]:
        """Number of targets per reason name."""
        return {r.name: int(np.count_nonzero(self.reason == r)) for r in Reason}

    def summary(self) -> ReachSummary:
        """Fraction reachable, mean score of the reachable targets and times."""
        ran = self.reason != Reason.NOT_RUN
        reach = self.reachable
        n_ran, n_reach = int(ran.sum()), int(reach.sum())
        return ReachSummary(
            targets=len(self),
            evaluated=n_ran,
            reachable=n_reach,
            fraction=n_reach / n_ran if n_ran else 0.0,
            mean_score=float(self.score[reach].mean()) if n_reach else 0.0,
            solve_time=float(np.sum(self.solve_time, dtype=np.float64)),
            wall_time=float(self.wall_time),
            reasons=self.reasons(),
            scored=bool(self.scores),
        )

    def compare(self, other: ReachResult, names: Sequence[str] = ("a", "b")) -> ReachComparison:
        """Per-target gains and losses of ``other`` over this study (same targets).

        Raises:
            InvalidInput: The studies have different targets.
        """
        if not isinstance(other, ReachResult):
            raise InvalidInput(f"compare needs a ReachResult, got {type(other).__name__}")
        if len(self) != len(other) or not np.array_equal(self.targets.poses, other.targets.poses):
            detail = (
                f"{len(self)} vs {len(other)} targets"
                if len(self) != len(other)
                else "the same number of targets, at other poses"
            )
            raise InvalidInput(
                f"the studies have different targets ({detail}): only studies over the "
                "same targets compare",
                what="other",
            )
        a, b = self.reachable, other.reachable
        both = a & b
        delta = np.where(both, other.score - self.score, 0.0)
        return ReachComparison(
            (str(names[0]), str(names[1])),
            b & ~a,
            a & ~b,
            both,
            delta,
            (self.summary(), other.summary()),
        )

    # -- plots -------------------------------------------------------------------------------
    def plot(
        self, path: str | os.PathLike[str] | None = None, value: str = "score", **kwargs: Any
    ) -> Any:
        """Heat map of the targets: over the workpiece, or over slices of a grid.

        Args:
            path: Write the figure here (``.png`` or ``.svg``); None: only return it.
            value: ``"score"``, ``"reachable"`` or an evaluator's name.
            **kwargs: ``title``, ``slices`` (grid studies: number of z slices).

        Returns:
            The matplotlib figure.

        Raises:
            InvalidInput: Unknown value name or file suffix.
        """
        from .plots import plot_result

        return plot_result(self, path, value, **kwargs)

    def plot_reasons(
        self, path: str | os.PathLike[str] | None = None, world: Any = None, **kwargs: Any
    ) -> Any:
        """Every target coloured by its :class:`Reason` (``WORLD_COLLISION``: orange).

        Args:
            path: Write the figure here (``.png`` or ``.svg``); None: only return it.
            world: A :class:`~stackik.World` whose box obstacles are drawn (None: none).
            **kwargs: ``title``.

        Returns:
            The matplotlib figure.

        Raises:
            InvalidInput: Bad file suffix, ``world`` not a World.
        """
        from .plots import plot_reasons

        return plot_reasons(self, path, world, **kwargs)

    def values(self, value: str) -> np.ndarray:
        """The per-target values a plot shows (see :meth:`plot`), NaN where unreachable."""
        if value == "score":
            v = self.score.astype(float)
        elif value == "reachable":
            return self.reachable.astype(float)
        elif value in self.scores:
            v = self.scores[value].astype(float)
        else:
            raise InvalidInput(
                f"unknown value {value!r}: use 'score', 'reachable' or one of "
                f"{sorted(self.scores)}",
                what="value",
                value=value,
            )
        return np.where(self.reachable, v, np.nan)

    # -- files ---------------------------------------------------------------------------------
    @classmethod
    def from_arrays(cls, data: dict[str, Any], wall_time: float = 0.0) -> ReachResult:
        """Build from a store's arrays (processing order) and header."""
        header = data["header"]
        order = np.asarray(data["order"], dtype=np.int64)
        tdesc = header.get("targets", {})
        grid = GridSpec.from_dict(tdesc["grid"]) if "grid" in tdesc else None
        mesh_T = tdesc.get("mesh_transform")
        targets = TargetSet(
            data["poses"],
            dict(data["metadata"]),
            str(tdesc.get("kind", "poses")),
            grid,
            str(tdesc.get("source", "")),
            None if mesh_T is None else np.asarray(mesh_T, dtype=float),
            float(tdesc.get("mesh_scale", 1.0)),
        )

        def unsort(arr: np.ndarray) -> np.ndarray:
            out = np.empty_like(arr)
            out[order] = arr
            return out

        return cls(
            targets=targets,
            reason=unsort(data["reason"]),
            q=unsort(data["q"]),
            score=unsort(data["score"]),
            scores={k: unsort(v) for k, v in data["scores"].items()},
            position_error=unsort(data["position_error"]),
            orientation_error=unsort(data["orientation_error"]),
            iterations=unsort(data["iterations"]),
            solve_time=unsort(data["solve_time"]),
            header=header,
            order=order,
            done=np.asarray(data["done"], dtype=bool),
            wall_time=float(header.get("wall_time", wall_time)),
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ReachResult:
        """Read a study store (finished or not: targets of unfinished chunks are NOT_RUN).

        Raises:
            RobotFileNotFound: No such path.
            MalformedDescription: Not a stackik reach store.
            InvalidInput: ``path`` is not a path.
        """
        return cls.from_arrays(ReachStore.open(check_path(path, "path")).read())

    def _sorted_arrays(self) -> dict[str, Any]:
        o = self.order
        return {
            "reason": self.reason[o],
            "q": self.q[o],
            "score": self.score[o],
            "scores": {k: v[o] for k, v in self.scores.items()},
            "position_error": self.position_error[o],
            "orientation_error": self.orientation_error[o],
            "iterations": self.iterations[o],
            "solve_time": self.solve_time[o],
        }

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the result as a study store (read back with :meth:`load`)."""
        header = {k: v for k, v in self.header.items() if k not in ("format", "format_version")}
        header["wall_time"] = self.wall_time
        nq = int(self.q.shape[1])
        store = ReachStore.create(
            path,
            {k: v for k, v in header.items() if k != "nq"},
            self.order,
            self.targets.poses,
            self.targets.metadata,
            nq,
            list(self.scores),
        )
        arrays = self._sorted_arrays()
        if self.complete:
            store.write_all(arrays)
        else:
            cs = store.chunk_size
            for c in np.flatnonzero(self.done):
                sl = slice(c * cs, (c + 1) * cs)
                store.write_chunk(int(c), _slice(arrays, sl))

    def table(self) -> dict[str, np.ndarray]:
        """Flat columns: index, position, quaternion (w, x, y, z), results, q, scores."""
        from ..spatial import r2q

        P = self.targets.positions
        quat = (
            np.array([r2q(R) for R in self.targets.poses[:, :3, :3]])
            if len(self)
            else np.zeros((0, 4))
        )
        cols: dict[str, np.ndarray] = {
            "index": np.arange(len(self)),
            "x": P[:, 0],
            "y": P[:, 1],
            "z": P[:, 2],
            "qw": quat[:, 0],
            "qx": quat[:, 1],
            "qy": quat[:, 2],
            "qz": quat[:, 3],
            "reachable": self.reachable.astype(np.int8),
            "reason": np.array([Reason(int(r)).name for r in self.reason]),
            "score": self.score,
        }
        for k, v in self.scores.items():
            cols[f"score_{k}"] = v
        cols["position_error"] = self.position_error
        cols["orientation_error"] = self.orientation_error
        cols["iterations"] = self.iterations
        for j in range(self.q.shape[1]):
            cols[f"q{j}"] = self.q[:, j]
        return cols

    def to_csv(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`table` as CSV (a header row, one row per target)."""
        import csv

        cols = self.table()
        names = list(cols)
        with open(Path(path), "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(names)
            for k in range(len(self)):
                w.writerow([_fmt(cols[n][k]) for n in names])

    def to_hdf5(self, path: str | os.PathLike[str]) -> None:
        """Write the arrays to HDF5 (h5py): ``poses``, results, ``scores/<name>``, header."""
        import json

        import h5py  # type: ignore[import-untyped]

        with h5py.File(Path(path), "w") as f:
            f.attrs["stackik_reach"] = json.dumps(self.header)
            f.create_dataset("poses", data=self.targets.poses, compression="gzip")
            for name in ("reason", "q", "score", "position_error", "orientation_error"):
                f.create_dataset(name, data=getattr(self, name), compression="gzip")
            f.create_dataset("reachable", data=self.reachable)
            f.create_dataset("iterations", data=self.iterations)
            f.create_dataset("solve_time", data=self.solve_time)
            g = f.create_group("scores")
            for k, v in self.scores.items():
                g.create_dataset(k, data=v)

    def __repr__(self) -> str:
        s = self.summary()
        return (
            f"ReachResult({s.targets} targets, {s.reachable} reachable "
            f"({100 * s.fraction:.1f} %), frame={self.frame!r})"
        )


def _slice(arrays: dict[str, Any], sl: slice) -> dict[str, Any]:
    out = {k: v[sl] for k, v in arrays.items() if k != "scores"}
    out["scores"] = {k: v[sl] for k, v in arrays["scores"].items()}
    return out


def _fmt(v: object) -> object:
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, np.integer):
        return int(v)
    return v
