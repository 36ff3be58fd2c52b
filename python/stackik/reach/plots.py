"""Figures of studies and capability maps (matplotlib, no GUI backend: works headless)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidInput
from ..model.world import World
from .settings import Reason

if TYPE_CHECKING:
    from .capability import CapabilityMap
    from .result import ReachComparison, ReachResult

__all__ = ["REASON_COLOURS", "plot_comparison", "plot_map_slice", "plot_reasons", "plot_result"]

#: Colour of each reason in :func:`plot_reasons` (matplotlib colour names, all distinct).
REASON_COLOURS: dict[Reason, str] = {
    Reason.REACHABLE: "tab:green",
    Reason.OUT_OF_REACH: "0.75",
    Reason.NO_IK: "tab:gray",
    Reason.COLLISION: "tab:red",
    Reason.LIMITS: "tab:purple",
    Reason.BUDGET: "tab:brown",
    Reason.CONSTRAINT: "tab:pink",
    Reason.WORLD_COLLISION: "tab:orange",
    Reason.NOT_RUN: "black",
}

SUFFIXES = (".png", ".svg", ".pdf")
_AXES = {"x": 0, "y": 1, "z": 2}


def check_suffix(path: str | os.PathLike[str] | None) -> None:
    """Raise :class:`InvalidInput` unless ``path`` is None or ends in .png, .svg or .pdf."""
    if path is not None and Path(path).suffix.lower() not in SUFFIXES:
        raise InvalidInput(
            f"figure file must end in {', '.join(SUFFIXES)}, got {str(path)!r}",
            what="path",
            value=str(path),
        )


def _figure(size: tuple[float, float]) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=size, dpi=110, layout="constrained")


def _save(fig: Any, path: str | os.PathLike[str] | None) -> None:
    if path is not None:
        fig.savefig(str(path))


def _label(value: str) -> str:
    return {"score": "score", "reachable": "reachable"}.get(value, f"score: {value}")


def plot_result(
    result: ReachResult,
    path: str | os.PathLike[str] | None,
    value: str = "score",
    title: str | None = None,
    slices: int = 4,
) -> Any:
    """A study's heat map: grid slices for grid targets, else over the workpiece."""
    check_suffix(path)
    if not len(result):
        raise InvalidInput("nothing to plot: the study has no targets", what="result")
    v = result.values(value)
    if result.targets.grid is not None:
        fig = _grid_slices(result, np.nan_to_num(v, nan=0.0), value, slices)
    else:
        fig = _workpiece(result, v, value)
    s = result.summary()
    fig.suptitle(
        title
        or f"{result.header.get('robot', {}).get('name', '')} {result.frame}: "
        f"{s.reachable}/{s.evaluated} reachable ({100 * s.fraction:.1f} %), "
        + (f"mean score {s.mean_score:.3f}" if s.scored else "no evaluators (no score)")
    )
    _save(fig, path)
    return fig


def _grid_slices(result: ReachResult, v: np.ndarray, value: str, slices: int) -> Any:
    grid = result.targets.grid
    assert grid is not None
    per_voxel = v.reshape(grid.n_voxels, grid.n_orientations).mean(axis=1).reshape(grid.shape)
    nz = grid.shape[2]
    ks = np.unique(np.linspace(0, nz - 1, min(max(1, int(slices)), nz)).round().astype(int))
    fig = _figure((3.6 * len(ks) + 0.8, 3.8))
    axes = fig.subplots(1, len(ks), squeeze=False)[0]
    r = grid.resolution
    x0, y0 = grid.origin[0] - r / 2, grid.origin[1] - r / 2
    ext = (x0, x0 + r * grid.shape[0], y0, y0 + r * grid.shape[1])
    im = None
    for ax, k in zip(axes, ks, strict=True):
        im = ax.imshow(
            per_voxel[:, :, k].T, origin="lower", extent=ext, vmin=0.0, vmax=1.0, cmap="viridis"
        )
        ax.set_title(f"z = {grid.origin[2] + r * k:.2f} m")
        ax.set_xlabel("x [m]")
        ax.set_aspect("equal")
    axes[0].set_ylabel("y [m]")
    fig.colorbar(im, ax=list(axes), label=f"mean {_label(value)} over orientations")
    return fig


def _workpiece(result: ReachResult, v: np.ndarray, value: str) -> Any:
    import mpl_toolkits.mplot3d  # type: ignore[import-untyped]  # noqa: F401 - 3d projection

    fig = _figure((7.0, 5.6))
    ax = fig.add_subplot(projection="3d")
    P = result.targets.positions
    ok = np.isfinite(v)
    drawn = _mesh_heat_map(ax, result, v) if result.targets.kind == "mesh" else None
    if drawn is None:
        sc = ax.scatter(*P[ok].T, c=v[ok], cmap="viridis", vmin=0.0, vmax=1.0, s=14)
    else:
        sc = drawn
    if (~ok).any():
        ax.scatter(*P[~ok].T, c="tab:red", marker="x", s=12, label="unreachable")
        ax.legend(loc="upper left")
    fig.colorbar(sc, ax=ax, shrink=0.7, label=_label(value))
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_zlabel("z [m]")
    lo, hi = P.min(axis=0), P.max(axis=0)
    ax.set_box_aspect(np.maximum(hi - lo, 1e-3 * max(float((hi - lo).max()), 1e-9)))
    return fig


def _mesh_heat_map(ax: Any, result: ReachResult, v: np.ndarray) -> Any:
    """The workpiece's faces coloured by the nearest target's value (None: no mesh file)."""
    ts = result.targets
    if not ts.source or not Path(ts.source).is_file():
        return None
    try:
        import trimesh
        from matplotlib import colormaps
        from matplotlib.cm import ScalarMappable
        from matplotlib.colors import Normalize
        from mpl_toolkits.mplot3d.art3d import Poly3DCollection  # type: ignore[import-untyped]
        from scipy.spatial import cKDTree  # type: ignore[import-untyped]

        mesh: Any = trimesh.load(ts.source, force="mesh", process=False)
    except (ImportError, ValueError, OSError):
        return None
    M = np.eye(4) if ts.mesh_transform is None else ts.mesh_transform
    verts = np.asarray(mesh.vertices, dtype=np.float64) * ts.mesh_scale @ M[:3, :3].T + M[:3, 3]
    tris = verts[np.asarray(mesh.faces)]
    if "point" in ts.metadata:
        anchors = np.asarray(ts.metadata["point"], dtype=np.float64)
    else:
        anchors = ts.positions
    _, near = cKDTree(anchors).query(tris.mean(axis=1))
    face_v = v[near]
    norm = Normalize(0.0, 1.0)
    cmap = colormaps["viridis"]
    colors = np.where(
        np.isfinite(face_v)[:, None], cmap(norm(np.nan_to_num(face_v))), (0.85, 0.3, 0.3, 1.0)
    )
    ax.add_collection3d(Poly3DCollection(tris, facecolors=colors, edgecolor="none"))
    return ScalarMappable(norm=norm, cmap=cmap)


def plot_map_slice(
    cmap: CapabilityMap,
    axis: str,
    value: float,
    path: str | os.PathLike[str] | None,
    title: str | None = None,
) -> Any:
    """The reachability index on the grid slice nearest ``axis = value``."""
    check_suffix(path)
    if axis not in _AXES:
        raise InvalidInput(f"axis must be 'x', 'y' or 'z', got {axis!r}", what="axis", value=axis)
    d = _AXES[axis]
    g = cmap.grid
    k = int(np.clip(np.rint((value - g.origin[d]) / g.resolution), 0, g.shape[d] - 1))
    index = np.take(cmap.index, k, axis=d)
    u, w = [a for a in range(3) if a != d]
    r = g.resolution
    ext = (
        g.origin[u] - r / 2,
        g.origin[u] - r / 2 + r * g.shape[u],
        g.origin[w] - r / 2,
        g.origin[w] - r / 2 + r * g.shape[w],
    )
    fig = _figure((6.0, 5.0))
    ax = fig.add_subplot()
    im = ax.imshow(index.T, origin="lower", extent=ext, vmin=0.0, vmax=1.0, cmap="viridis")
    names = "xyz"
    ax.set_xlabel(f"{names[u]} [m]")
    ax.set_ylabel(f"{names[w]} [m]")
    ax.set_aspect("equal")
    fig.colorbar(im, ax=ax, label="reachability index (fraction of orientations)")
    ax.set_title(
        title
        or f"{cmap.frame}: {names[d]} = {g.origin[d] + r * k:.3f} m\n"
        f"{g.n_orientations} orientations, {r:g} m voxels"
    )
    _save(fig, path)
    return fig


def plot_comparison(
    a: ReachResult,
    comparison: ReachComparison,
    path: str | os.PathLike[str] | None,
    title: str | None = None,
) -> Any:
    """Where study ``b`` gains or loses targets over ``a``: net change per target position.

    Targets at one position (a voxel's orientations) are pooled: the colour is
    ``(gained - lost) / targets there``, from -1 (all lost) to +1 (all gained).
    """
    import mpl_toolkits.mplot3d  # noqa: F401 - registers the 3d projection

    check_suffix(path)
    if not len(a):
        raise InvalidInput("nothing to plot: the studies have no targets", what="result")
    P = a.targets.positions
    uniq, inverse = np.unique(P, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    change = comparison.gained.astype(np.float64) - comparison.lost.astype(np.float64)
    net = np.bincount(inverse, change) / np.bincount(inverse)
    changed = net != 0
    fig = _figure((7.0, 5.6))
    ax = fig.add_subplot(projection="3d")
    ax.scatter(*uniq[~changed].T, c="0.8", s=4, alpha=0.3, label="no change")
    sc = ax.scatter(*uniq[changed].T, c=net[changed], cmap="RdYlGn", vmin=-1.0, vmax=1.0, s=16)
    fig.colorbar(sc, ax=ax, shrink=0.7, label="(gained - lost) / targets at the position")
    ax.legend(loc="upper left")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_zlabel("z [m]")
    na, nb = comparison.names
    fig.suptitle(
        title
        or f"{nb} vs {na}: +{int(comparison.gained.sum())} gained, "
        f"-{int(comparison.lost.sum())} lost"
    )
    _save(fig, path)
    return fig


def plot_reasons(
    result: ReachResult,
    path: str | os.PathLike[str] | None,
    world: World | None = None,
    title: str | None = None,
) -> Any:
    """Every target coloured by its reason (:data:`REASON_COLOURS`), with the world's boxes.

    Args:
        result: The study's result.
        path: Write the figure here (``.png``, ``.svg`` or ``.pdf``); None: only return it.
        world: Draw its box obstacles as wireframes at their current poses (None: none).
        title: The figure's title (default: the counts by reason).

    Raises:
        InvalidInput: No targets, a bad suffix, or ``world`` not a World.
    """
    import mpl_toolkits.mplot3d  # noqa: F401 - registers the 3d projection

    check_suffix(path)
    if not len(result):
        raise InvalidInput("nothing to plot: the study has no targets", what="result")
    if world is not None and not isinstance(world, World):
        raise InvalidInput(
            f"world must be a stackik World, got {type(world).__name__}", what="world"
        )
    fig = _figure((7.0, 5.6))
    ax = fig.add_subplot(projection="3d")
    P = result.targets.positions
    for reason, colour in REASON_COLOURS.items():
        sel = result.reason == reason
        if sel.any():
            ax.scatter(*P[sel].T, c=colour, s=12, label=f"{reason.name} ({int(sel.sum())})")
    if world is not None:
        _draw_boxes(ax, world)
    ax.legend(loc="upper left", fontsize="small")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_zlabel("z [m]")
    fig.suptitle(title or f"{result.frame}: reasons of {len(result)} targets")
    _save(fig, path)
    return fig


def box_edges(half: np.ndarray, pose: np.ndarray) -> np.ndarray:
    """The 12 edges of a box of half sizes ``half`` [m] at ``pose`` (4x4), (12, 2, 3)."""
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    corners = corners * np.asarray(half, dtype=float)
    world = corners @ pose[:3, :3].T + pose[:3, 3]
    edges = [
        (a, b)
        for a in range(8)
        for b in range(a + 1, 8)
        if int(np.count_nonzero(corners[a] != corners[b])) == 1
    ]
    return np.array([[world[a], world[b]] for a, b in edges])


def _draw_boxes(ax: Any, world: World) -> None:
    """Wireframes of the world's box obstacles."""
    import coal

    state = world.state
    for k, obstacle in enumerate(state.layout.obstacles):
        if not isinstance(obstacle.geometry, coal.Box):
            continue
        pose = np.eye(4)
        pose[:3, :3], pose[:3, 3] = state.rotations[k], state.translations[k]
        for i, (a, b) in enumerate(box_edges(np.asarray(obstacle.geometry.halfSide), pose)):
            ax.plot(
                *np.stack([a, b]).T, color="0.3", lw=0.8, label=obstacle.name if i == 0 else None
            )
