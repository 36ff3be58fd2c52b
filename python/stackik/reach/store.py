"""The study store: a chunked zarr (v3) group, written as chunks finish, resumable.

Layout (``N`` targets, chunks of ``C`` targets in processing order)::

    study.zarr/
      zarr.json              attributes["stackik_reach"]: the header (format, kind,
                             stackik version, robot name and digest, frame, solver
                             settings, study spec, evaluators, targets, envelope, chunking)
      order                  (N,) int64: processing position -> target index
      poses                  (N, 4, 4) float64, target order
      meta/<name>            (N,) per-target metadata, target order
      results/reason         (N,) int8, processing order, chunks of C (fill -1: not run)
      results/q              (N, nq) float64 (NaN: none)
      results/score          (N,) float64 and results/scores/<evaluator>
      results/position_error, results/orientation_error   (N,) float64 (inf: none)
      results/iterations     (N,) int32
      results/solve_time     (N,) float32 [s] (apportioned wall time; not reproducible)
      done                   (n_chunks,) bool, one file per chunk

A chunk's arrays are written first (each array's chunk is one file, written
atomically by zarr), then its ``done`` flag: a run killed at any point (SIGKILL included)
restarts with every flagged chunk kept and every other one computed again, once.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from .. import _validate
from .._version import __version__
from ..errors import InvalidInput, MalformedDescription, RobotFileNotFound
from .describe import StudyMismatch, to_json

__all__ = ["FORMAT", "FORMAT_VERSION", "ReachStore"]

FORMAT = "stackik.reach"
FORMAT_VERSION = 1
#: Header entries compared on resume, in the order they are reported.
RESUME_KEYS = (
    "kind",
    "robot",
    "frame",
    "solver",
    "spec",
    "evaluators",
    "targets",
    "envelope",
    "world",
    "chunk_size",
    "stackik_version",
)
#: Fill values of the result arrays (what a chunk that never ran reads as).
FILL = {
    "reason": -1,
    "q": np.nan,
    "score": 0.0,
    "position_error": np.inf,
    "orientation_error": np.inf,
    "iterations": 0,
    "solve_time": 0.0,
}
_DTYPES = {
    "reason": "int8",
    "q": "float64",
    "score": "float64",
    "position_error": "float64",
    "orientation_error": "float64",
    "iterations": "int32",
    "solve_time": "float32",
}


class ReachStore:
    """A study's zarr store (see the module for the layout).

    Use :meth:`create` or :meth:`open`; :meth:`write_chunk` as chunks finish.
    """

    def __init__(self, path: str | os.PathLike[str], group: Any) -> None:
        self.path = str(path)
        self.group = group
        self.header: dict[str, Any] = dict(group.attrs[FORMAT])
        self._done = np.asarray(group["done"][:], dtype=bool)

    # -- construction -----------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        header: dict[str, Any],
        order: np.ndarray,
        poses: np.ndarray,
        metadata: dict[str, np.ndarray],
        nq: int,
        evaluators: list[str],
    ) -> ReachStore:
        """Create (or replace) a store with its header, order, targets and empty results.

        Raises:
            InvalidInput: ``path`` exists and is not a stackik study store (nothing is
                deleted then).
        """
        import zarr

        p = Path(path)
        if p.exists():
            if not _is_reach_store(p):
                raise InvalidInput(
                    f"{p} exists and is not a stackik reach store: refusing to replace it",
                    what="store",
                    value=str(p),
                )
            shutil.rmtree(p)
        header = to_json({"format": FORMAT, "format_version": FORMAT_VERSION, **header, "nq": nq})
        N = len(order)
        cs = int(header["chunk_size"])
        n_chunks = max(1, -(-N // cs))
        root = zarr.open_group(str(p), mode="w")
        root.attrs[FORMAT] = header
        _array(root, "order", np.asarray(order, dtype=np.int64), (cs,))
        _array(root, "poses", np.asarray(poses, dtype=np.float64), (cs, 4, 4))
        meta = root.create_group("meta")
        for name, arr in metadata.items():
            _array(meta, name, _storable(arr), (cs, *np.shape(arr)[1:]))
        res = root.create_group("results")
        for name in ("reason", "score", "position_error", "orientation_error"):
            res.create_array(
                name, shape=(N,), chunks=(cs,), dtype=_DTYPES[name], fill_value=FILL[name]
            )
        for name in ("iterations", "solve_time"):
            res.create_array(
                name, shape=(N,), chunks=(cs,), dtype=_DTYPES[name], fill_value=FILL[name]
            )
        res.create_array("q", shape=(N, nq), chunks=(cs, nq), dtype="float64", fill_value=np.nan)
        scores = res.create_group("scores")
        for name in evaluators:
            scores.create_array(name, shape=(N,), chunks=(cs,), dtype="float64", fill_value=0.0)
        root.create_array("done", shape=(n_chunks,), chunks=(1,), dtype="bool", fill_value=False)
        return cls(p, root)

    @classmethod
    def open(cls, path: str | os.PathLike[str], writable: bool = False) -> ReachStore:
        """Open an existing store.

        Raises:
            RobotFileNotFound: No such path.
            MalformedDescription: Not a stackik reach store (or of a newer format).
        """
        import zarr

        p = Path(path)
        if not p.exists():
            raise RobotFileNotFound(str(p))
        if not _is_reach_store(p):
            raise MalformedDescription(
                str(p), "not a stackik reach store (no stackik_reach header)"
            )
        writable = _validate.flag(writable, "writable")
        try:
            root = zarr.open_group(str(p), mode="r+" if writable else "r")
        except Exception as exc:  # zarr raises several types for broken stores
            raise MalformedDescription(str(p), f"cannot open the zarr store: {exc}") from None
        header: dict[str, Any] = dict(root.attrs.get(FORMAT, {}))  # type: ignore[arg-type]
        if int(header.get("format_version", 0)) > FORMAT_VERSION:
            raise MalformedDescription(
                str(p),
                f"format version {header.get('format_version')} is newer than this stackik's",
            )
        return cls(p, root)

    # -- state ------------------------------------------------------------------------------
    @property
    def chunk_size(self) -> int:
        """Targets per chunk."""
        return int(self.header["chunk_size"])

    @property
    def n_chunks(self) -> int:
        """Number of chunks."""
        return int(self._done.shape[0])

    @property
    def done(self) -> np.ndarray:
        """Which chunks are finished (a copy)."""
        return self._done.copy()

    def check_resume(self, header: dict[str, Any]) -> None:
        """Raise :class:`StudyMismatch` on the first setting that differs from ``header``."""
        given = to_json(header)
        for key in RESUME_KEYS:
            if self.header.get(key) != given.get(key):
                raise StudyMismatch(self.path, key, self.header.get(key), given.get(key))

    # -- writing ----------------------------------------------------------------------------
    def add_wall_time(self, seconds: float) -> None:
        """Add a run's wall-clock time to the header's ``wall_time`` [s]."""
        self.header["wall_time"] = float(self.header.get("wall_time", 0.0)) + float(seconds)
        self.group.attrs[FORMAT] = self.header

    def write_chunk(self, chunk: int, arrays: dict[str, Any]) -> None:
        """Write one finished chunk's result arrays, then flag it done."""
        cs = self.chunk_size
        start = chunk * cs
        res = self.group["results"]
        for name in ("reason", "q", "score", "position_error", "orientation_error"):
            res[name][start : start + len(arrays["reason"])] = arrays[name]
        for name in ("iterations", "solve_time"):
            res[name][start : start + len(arrays["reason"])] = arrays[name]
        scores = res["scores"]
        for name, values in arrays["scores"].items():
            scores[name][start : start + len(values)] = values
        self.group["done"][chunk] = True
        self._done[chunk] = True

    def write_all(self, arrays: dict[str, Any]) -> None:
        """Write complete results (processing order) and flag every chunk done."""
        res = self.group["results"]
        for name in ("reason", "q", "score", "position_error", "orientation_error"):
            res[name][:] = arrays[name]
        for name in ("iterations", "solve_time"):
            res[name][:] = arrays[name]
        for name, values in arrays["scores"].items():
            res["scores"][name][:] = values
        self.group["done"][:] = True
        self._done[:] = True

    # -- reading ----------------------------------------------------------------------------
    def read(self) -> dict[str, Any]:
        """Everything: header, order, poses, metadata and results (processing order)."""
        g = self.group
        res = g["results"]
        out: dict[str, Any] = {
            "header": self.header,
            "order": np.asarray(g["order"][:]),
            "poses": np.asarray(g["poses"][:]),
            "metadata": {k: np.asarray(v[:]) for k, v in g["meta"].arrays()},
            "done": self.done,
        }
        for name in _DTYPES:
            out[name] = np.asarray(res[name][:])
        out["scores"] = {k: np.asarray(v[:]) for k, v in res["scores"].arrays()}
        names = [e["name"] for e in self.header.get("evaluators", [])]
        out["scores"] = {n: out["scores"][n] for n in names if n in out["scores"]}
        return out


def _is_reach_store(p: Path) -> bool:
    meta = p / "zarr.json"
    if not meta.is_file():
        return False
    try:
        return f'"{FORMAT}"' in meta.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False


def _storable(arr: np.ndarray) -> np.ndarray:
    a = np.asarray(arr)
    if a.dtype.kind in "US":
        return a.astype(object)
    return a


def _array(group: Any, name: str, data: np.ndarray, chunks: tuple[int, ...]) -> None:
    if data.dtype == object:
        arr = group.create_array(name, shape=data.shape, chunks=chunks[: data.ndim], dtype=str)
    else:
        arr = group.create_array(
            name, shape=data.shape, chunks=chunks[: data.ndim], dtype=data.dtype
        )
    if data.size:
        arr[...] = data


def stackik_version() -> str:
    """The running stackik version (recorded in every store)."""
    return __version__
