"""Target sets of reachability studies: grids, workpiece surfaces, CSV files.

Every target set is a :class:`TargetSet`: an ``(N, 4, 4)`` array of world poses of the
tool frame (``T_world_tool``) plus optional per-target metadata arrays. Three builders:

- :func:`grid_targets`: voxel centres times a uniform orientation set (capability maps);
- :func:`targets_from_mesh`: points on a workpiece surface (trimesh: STL, OBJ, PLY; point
  clouds as PLY with normals), the tool's approach axis along minus the surface normal;
- :func:`targets_from_csv`: rows of position and quaternion.

Orientation sets: :func:`super_fibonacci_rotations` (Alexa, "Super-Fibonacci Spirals:
Fast, Low-Discrepancy Sampling of SO(3)", CVPR 2022) and :func:`sphere_rotations`
(approach directions on a Fibonacci sphere times roll angles about them).
"""

from __future__ import annotations

import csv
import hashlib
import logging
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import _validate
from ..errors import InvalidInput, MalformedDescription, RobotFileNotFound, ShapeError
from ..model.loading import check_path
from ..spatial import as_se3, check_pose_stack

__all__ = [
    "GridSpec",
    "TargetSet",
    "as_target_set",
    "grid_targets",
    "rotation_angle",
    "sphere_rotations",
    "super_fibonacci_rotations",
    "targets_from_csv",
    "targets_from_mesh",
]

#: ``psi`` of the super-Fibonacci spiral: the real root of ``psi^4 = psi + 4``.
_PSI = 1.533751168755204288118041
#: Largest number of targets a builder produces (memory guard: 128 bytes per pose).
MAX_TARGETS = 50_000_000
#: CSV column names, in the order of a file without a header.
CSV_COLUMNS = ("x", "y", "z", "qw", "qx", "qy", "qz")
_AXES = {"x": 0, "y": 1, "z": 2}


@dataclass(frozen=True)
class GridSpec:
    """The voxel grid of :func:`grid_targets`.

    Attributes:
        origin: Centre of voxel ``(0, 0, 0)`` in the world [m].
        resolution: Voxel edge [m].
        shape: Voxels along x, y and z.
        rotations: The orientation set, shape ``(M, 3, 3)``; target ``v * M + o`` is voxel
            ``v`` (row-major over ``shape``) at orientation ``o``.
    """

    origin: np.ndarray
    resolution: float
    shape: tuple[int, int, int]
    rotations: np.ndarray

    @property
    def n_voxels(self) -> int:
        """Number of voxels."""
        return int(np.prod(self.shape))

    @property
    def n_orientations(self) -> int:
        """Number of orientations per voxel."""
        return int(self.rotations.shape[0])

    def centres(self) -> np.ndarray:
        """Voxel centres, shape ``(n_voxels, 3)``, row-major over :attr:`shape` [m]."""
        axes = [self.origin[d] + self.resolution * np.arange(self.shape[d]) for d in range(3)]
        return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)

    def voxel_index(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Flat voxel index of each point (nearest centre) and whether it is in the grid."""
        ijk = np.rint((np.asarray(points, dtype=np.float64) - self.origin) / self.resolution)
        shape = np.array(self.shape)
        inside = np.all((ijk >= 0) & (ijk < shape), axis=-1)
        ijk = np.clip(ijk, 0, shape - 1).astype(np.int64)
        flat = (ijk[..., 0] * shape[1] + ijk[..., 1]) * shape[2] + ijk[..., 2]
        return flat, inside

    def to_dict(self) -> dict[str, object]:
        """JSON-friendly description (the rotations as nested lists)."""
        return {
            "origin": self.origin.tolist(),
            "resolution": self.resolution,
            "shape": list(self.shape),
            "rotations": self.rotations.tolist(),
        }

    @classmethod
    def from_dict(cls, d: dict) -> GridSpec:
        """Inverse of :meth:`to_dict`.

        Raises:
            InvalidInput: ``d`` is not a grid's :meth:`to_dict`.
        """
        try:
            return cls(
                np.asarray(d["origin"], dtype=np.float64),
                float(d["resolution"]),
                (int(d["shape"][0]), int(d["shape"][1]), int(d["shape"][2])),
                np.asarray(d["rotations"], dtype=np.float64),
            )
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise InvalidInput(f"not a grid description (GridSpec.to_dict): {exc!r}") from None


@dataclass
class TargetSet:
    """Target poses of the tool frame and optional per-target metadata.

    Attributes:
        poses: World poses ``T_world_tool``, shape ``(N, 4, 4)`` [m].
        metadata: Arrays of length ``N`` (e.g. ``"normal"``, ``"voxel"``, ``"orientation"``).
        kind: ``"grid"``, ``"mesh"``, ``"points"``, ``"csv"`` or ``"poses"``.
        grid: The grid of a ``"grid"`` set.
        source: File the targets came from (mesh or CSV), else ``""``.
        mesh_transform: Pose of the mesh in the world (``"mesh"`` sets), for plots.
        mesh_scale: Scale applied to the mesh file's coordinates.
    """

    poses: np.ndarray
    metadata: dict[str, np.ndarray] = field(default_factory=dict)
    kind: str = "poses"
    grid: GridSpec | None = None
    source: str = ""
    mesh_transform: np.ndarray | None = None
    mesh_scale: float = 1.0

    def __post_init__(self) -> None:
        self.poses = check_pose_stack(self.poses, "targets")
        n = self.poses.shape[0]
        for name, arr in self.metadata.items():
            if len(arr) != n:
                raise ShapeError(f"metadata[{name!r}]", (n,), np.shape(arr))

    def __len__(self) -> int:
        return int(self.poses.shape[0])

    @property
    def positions(self) -> np.ndarray:
        """Target positions, shape ``(N, 3)`` [m]."""
        return self.poses[:, :3, 3]

    def digest(self) -> str:
        """SHA-256 of the poses (what a stored study is checked against on resume)."""
        return hashlib.sha256(np.ascontiguousarray(self.poses).tobytes()).hexdigest()

    def describe(self) -> dict[str, object]:
        """JSON-friendly summary: kind, count, digest, source and the grid."""
        out: dict[str, object] = {
            "kind": self.kind,
            "count": len(self),
            "digest": self.digest(),
            "source": self.source,
            "mesh_scale": self.mesh_scale,
        }
        if self.grid is not None:
            out["grid"] = self.grid.to_dict()
        if self.mesh_transform is not None:
            out["mesh_transform"] = self.mesh_transform.tolist()
        return out


def as_target_set(targets: object) -> TargetSet:
    """A :class:`TargetSet` as is, or an ``(N, 4, 4)`` array (or one 4x4 pose) wrapped.

    Raises:
        ShapeError, NonFiniteInput, InvalidTransform: Not a stack of rigid transforms.
    """
    if isinstance(targets, TargetSet):
        return targets
    arr = _validate.as_floats(targets, "targets", ("N", 4, 4))
    if arr.ndim == 2:
        arr = arr[None]
    return TargetSet(arr)


# -- orientation sets ---------------------------------------------------------------------------
def _quaternions_to_matrices(q: np.ndarray) -> np.ndarray:
    """Rotation matrices of unit quaternions ``[w, x, y, z]`` (rows), shape ``(M, 3, 3)``."""
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    R = np.empty((q.shape[0], 3, 3))
    R[:, 0, 0] = 1 - 2 * (y * y + z * z)
    R[:, 0, 1] = 2 * (x * y - z * w)
    R[:, 0, 2] = 2 * (x * z + y * w)
    R[:, 1, 0] = 2 * (x * y + z * w)
    R[:, 1, 1] = 1 - 2 * (x * x + z * z)
    R[:, 1, 2] = 2 * (y * z - x * w)
    R[:, 2, 0] = 2 * (x * z - y * w)
    R[:, 2, 1] = 2 * (y * z + x * w)
    R[:, 2, 2] = 1 - 2 * (x * x + y * y)
    return R


def super_fibonacci_rotations(n: int) -> np.ndarray:
    """``n`` rotations spread uniformly over SO(3) (super-Fibonacci spiral).

    Sample ``i`` (``s = i + 1/2``) is the unit quaternion
    ``(sqrt(s/n) sin(2 pi s / sqrt 2), sqrt(s/n) cos(2 pi s / sqrt 2),
    sqrt(1 - s/n) sin(2 pi s / psi), sqrt(1 - s/n) cos(2 pi s / psi))`` with
    ``psi^4 = psi + 4`` (Alexa 2022): a low-discrepancy set, deterministic.

    Args:
        n: Number of rotations (>= 1).

    Returns:
        Rotation matrices, shape ``(n, 3, 3)``.

    Raises:
        InvalidInput: ``n`` is not a positive integer.
    """
    n = _validate.count(n, "orientations", maximum=10_000_000)
    s = np.arange(n) + 0.5
    r, R = np.sqrt(s / n), np.sqrt(1.0 - s / n)
    alpha, beta = 2 * np.pi * s / np.sqrt(2.0), 2 * np.pi * s / _PSI
    q = np.stack([R * np.cos(beta), r * np.sin(alpha), r * np.cos(alpha), R * np.sin(beta)], 1)
    return _quaternions_to_matrices(q)


def _fibonacci_sphere(n: int) -> np.ndarray:
    """``n`` unit vectors spread over the sphere (Fibonacci lattice), shape ``(n, 3)``."""
    k = np.arange(n) + 0.5
    z = 1.0 - 2.0 * k / n
    phi = np.pi * (3.0 - np.sqrt(5.0)) * k
    rho = np.sqrt(1.0 - z * z)
    return np.stack([rho * np.cos(phi), rho * np.sin(phi), z], axis=1)


def _frames_with_axis(axis_dirs: np.ndarray, axis: str) -> np.ndarray:
    """Rotations whose column ``axis`` is each direction (a fixed, smooth choice of the rest)."""
    a = axis_dirs / np.linalg.norm(axis_dirs, axis=1, keepdims=True)
    helper = np.where(np.abs(a[:, 2:3]) < 0.9, [[0.0, 0.0, 1.0]], [[1.0, 0.0, 0.0]])
    u = np.cross(helper, a)
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    v = np.cross(a, u)
    k = _AXES[axis]
    cols = [u, v, a] if k == 2 else ([a, u, v] if k == 0 else [v, a, u])
    return np.stack(cols, axis=2)


def sphere_rotations(directions: int, rolls: int = 1, axis: str = "z") -> np.ndarray:
    """Tool axis along ``directions`` Fibonacci-sphere points, times ``rolls`` turns about it.

    Args:
        directions: Number of approach directions (>= 1).
        rolls: Roll angles ``2 pi k / rolls`` about the tool axis (>= 1).
        axis: Tool axis that points along each direction: ``"x"``, ``"y"`` or ``"z"``.

    Returns:
        Rotation matrices, shape ``(directions * rolls, 3, 3)``, direction-major.

    Raises:
        InvalidInput: Bad counts or axis name.
    """
    directions = _validate.count(directions, "directions", maximum=10_000_000)
    rolls = _validate.count(rolls, "rolls", maximum=10_000)
    if axis not in _AXES:
        raise InvalidInput(f"axis must be 'x', 'y' or 'z', got {axis!r}", what="axis", value=axis)
    base = _frames_with_axis(_fibonacci_sphere(directions), axis)
    angles = 2 * np.pi * np.arange(rolls) / rolls
    c, s = np.cos(angles), np.sin(angles)
    k = _AXES[axis]
    i, j = [d for d in range(3) if d != k]
    turn = np.zeros((rolls, 3, 3))
    turn[:, k, k] = 1.0
    turn[:, i, i], turn[:, i, j], turn[:, j, i], turn[:, j, j] = c, -s, s, c
    return np.einsum("dab,rbc->drac", base, turn).reshape(-1, 3, 3)


def rotation_angle(Ra: np.ndarray, Rb: np.ndarray) -> np.ndarray:
    """Angle of ``Ra^T Rb`` [rad], broadcast over leading dimensions."""
    tr = np.einsum("...ij,...ij->...", Ra, Rb)
    return np.arccos(np.clip(0.5 * (tr - 1.0), -1.0, 1.0))


def _orientation_set(orientations: object) -> np.ndarray:
    """An orientation count (super-Fibonacci) or an ``(M, 3, 3)`` rotation stack, checked."""
    if isinstance(orientations, (int, np.integer)) and not isinstance(orientations, bool):
        return super_fibonacci_rotations(int(orientations))
    R = _validate.as_floats(orientations, "orientations", ("M", 3, 3))
    if R.ndim == 2:
        R = R[None]
    T = np.tile(np.eye(4), (R.shape[0], 1, 1)) if R.ndim == 3 else None
    if T is None or R.shape[1:] != (3, 3):
        raise ShapeError("orientations", ("M", 3, 3), R.shape)
    T[:, :3, :3] = R
    return check_pose_stack(T, "orientations")[:, :3, :3].copy()


# -- grids ---------------------------------------------------------------------------------------
def _bounds(bounds: object) -> tuple[np.ndarray, np.ndarray]:
    b = _validate.as_floats(bounds, "bounds", (2, 3))
    if b.shape != (2, 3):
        raise ShapeError("bounds", (2, 3), b.shape)
    lo, hi = _validate.bounds(b[0], b[1], 3, "bounds", allow_inf=False)
    _validate.bounded(b, 1e3, "bounds")
    return lo, hi


def grid_targets(bounds: object, resolution: float, orientations: object = 50) -> TargetSet:
    """Voxel centres of a box times an orientation set (a capability map's targets).

    Voxel ``(i, j, k)`` has its centre at ``lower + resolution * (i + 1/2, j + 1/2, k + 1/2)``
    for every centre inside the box (at least one voxel per axis).

    Args:
        bounds: ``[[x_min, y_min, z_min], [x_max, y_max, z_max]]`` in the world [m].
        resolution: Voxel edge [m] (> 0).
        orientations: Number of super-Fibonacci rotations, or an ``(M, 3, 3)`` stack.

    Returns:
        A ``"grid"`` :class:`TargetSet`, voxel-major (target ``v * M + o``), with metadata
        ``"voxel"`` (flat voxel index) and ``"orientation"`` (index in the set).

    Raises:
        ShapeError, InvalidBounds, NonFiniteInput: Bad bounds.
        InvalidInput: Bad resolution or orientations, or more than 50 million targets.
    """
    lo, hi = _bounds(bounds)
    res = _validate.positive_float(resolution, "resolution")
    rots = _orientation_set(orientations)
    shape = tuple(max(1, math.floor((b - a) / res + 1e-9)) for a, b in zip(lo, hi, strict=True))
    n_vox = int(np.prod(shape))
    total = n_vox * rots.shape[0]
    if total > MAX_TARGETS:
        raise InvalidInput(
            f"the grid has {total} targets (more than {MAX_TARGETS}): use a coarser "
            "resolution, fewer orientations or smaller bounds",
            what="resolution",
            value=resolution,
        )
    spec = GridSpec(lo + 0.5 * res, res, (shape[0], shape[1], shape[2]), rots)
    centres = spec.centres()
    M = rots.shape[0]
    poses = np.zeros((n_vox, M, 4, 4))
    poses[:, :, :3, :3] = rots[None]
    poses[:, :, :3, 3] = centres[:, None]
    poses[:, :, 3, 3] = 1.0
    meta: dict[str, np.ndarray] = {
        "voxel": np.repeat(np.arange(n_vox, dtype=np.int64), M),
        "orientation": np.tile(np.arange(M, dtype=np.int32), n_vox),
    }
    return TargetSet(poses.reshape(-1, 4, 4), meta, "grid", spec)


# -- workpieces ------------------------------------------------------------------------------------
def _load_geometry(path: Path) -> Any:
    """The mesh or point cloud of a file (trimesh), with typed errors."""
    import trimesh

    if not path.exists():
        raise RobotFileNotFound(str(path))
    try:
        geom = trimesh.load(str(path), force=None, process=False)
    except Exception as exc:  # trimesh raises many types for bad files
        raise MalformedDescription(str(path), f"cannot read the mesh: {exc}") from None
    if isinstance(geom, trimesh.Scene):
        meshes = [g for g in geom.dump() if isinstance(g, trimesh.Trimesh)]
        if not meshes:
            raise MalformedDescription(str(path), "the file holds no triangle mesh")
        geom = trimesh.util.concatenate(meshes)
    if not isinstance(geom, (trimesh.Trimesh, trimesh.PointCloud)) or not len(geom.vertices):
        raise MalformedDescription(str(path), "the file holds no mesh and no point cloud")
    return geom


def _cloud_normals(geom: Any, path: Path) -> np.ndarray:
    """Per-vertex normals of a PLY point cloud (``nx, ny, nz`` vertex properties)."""
    raw = getattr(geom, "metadata", {}).get("_ply_raw", {})
    data = raw.get("vertex", {}).get("data", {}) if isinstance(raw, dict) else {}
    try:
        n = np.column_stack(
            [np.asarray(data[k], dtype=np.float64).reshape(-1) for k in ("nx", "ny", "nz")]
        )
    except (KeyError, TypeError, ValueError):
        raise MalformedDescription(
            str(path), "a point cloud needs per-vertex normals (PLY properties nx, ny, nz)"
        ) from None
    return n


def _sample_mesh(
    geom: Any, path: Path, spacing: float | None, count: int | None, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Points, unit outward normals and face indices (-1 for clouds) on the surface."""
    import trimesh

    if isinstance(geom, trimesh.PointCloud):
        points = np.asarray(geom.vertices, dtype=np.float64)
        normals = _cloud_normals(geom, path)
        keep = np.arange(len(points))
        if spacing is not None:
            from trimesh.points import remove_close

            _, mask = remove_close(points, spacing)
            keep = keep[mask]
        if count is not None and count < len(keep):
            keep = np.sort(np.random.default_rng(seed).choice(keep, count, replace=False))
        return points[keep], normals[keep], np.full(len(keep), -1, dtype=np.int64)
    mesh = geom
    if not len(mesh.faces) or mesh.area <= 0:
        raise MalformedDescription(str(path), "the mesh has no surface area")
    if count is None:
        assert spacing is not None
        # The sampler draws 3 x count candidates and drops those closer than ``spacing``
        # (it over-culls dense candidate sets): 0.6 area / spacing^2 gives the most points.
        count = max(1, math.ceil(0.6 * mesh.area / (spacing * spacing)))
    count = min(count, MAX_TARGETS)
    log = logging.getLogger("trimesh")
    level = log.level
    log.setLevel(logging.ERROR)  # "only got n/count samples" is expected with a spacing
    try:
        points, faces = trimesh.sample.sample_surface_even(mesh, count, radius=spacing, seed=seed)
    finally:
        log.setLevel(level)
    normals = np.asarray(mesh.face_normals, dtype=np.float64)[faces]
    return np.asarray(points, dtype=np.float64), normals, np.asarray(faces, dtype=np.int64)


def _approach_frames(normals: np.ndarray, approach: object, axis: str, roll: float) -> np.ndarray:
    """Tool rotations: the tool ``axis`` along the approach (minus the surface normal)."""
    if isinstance(approach, str):
        if approach != "normal":
            raise InvalidInput(
                f"approach must be 'normal' or a direction, got {approach!r}", what="approach"
            )
        dirs = -normals
    else:
        d = _validate.vector(approach, 3, "approach")
        if np.linalg.norm(d) < 1e-9:
            raise InvalidInput("approach direction must not be zero", what="approach")
        dirs = np.broadcast_to(d / np.linalg.norm(d), normals.shape)
    if axis not in _AXES:
        raise InvalidInput(f"axis must be 'x', 'y' or 'z', got {axis!r}", what="axis", value=axis)
    R = _frames_with_axis(np.asarray(dirs, dtype=np.float64), axis)
    if roll:
        k = _AXES[axis]
        i, j = [d for d in range(3) if d != k]
        turn = np.eye(3)
        c, s = math.cos(roll), math.sin(roll)
        turn[i, i], turn[i, j], turn[j, i], turn[j, j] = c, -s, s, c
        R = R @ turn
    return R


def targets_from_mesh(
    path: str | os.PathLike[str],
    spacing: float | None = None,
    count: int | None = None,
    standoff: float = 0.0,
    approach: str | Sequence[float] = "normal",
    *,
    axis: str = "z",
    roll: float = 0.0,
    pose: object | None = None,
    scale: float = 1.0,
    seed: int = 0,
) -> TargetSet:
    """Targets on a workpiece surface (REACH's target poses from a mesh or point cloud).

    Points are spread evenly over the surface (trimesh's rejection sampling, one point per
    ``spacing``), or taken from a point cloud (a PLY file with ``nx, ny, nz`` normals,
    thinned to ``spacing``). Each target sits ``standoff`` along the outward normal and
    points the tool's ``axis`` along minus the normal (``approach="normal"``) or along a
    fixed world direction; the other tool axes follow a fixed, smooth rule, then turn by
    ``roll`` about the tool axis.

    Args:
        path: STL, OBJ or PLY file (mesh or point cloud).
        spacing: Distance between targets [m, after ``scale``]; or give ``count``.
        count: Number of targets (the sampler may return fewer; see trimesh).
        standoff: Distance of the tool frame from the surface along the normal [m].
        approach: ``"normal"`` or a world direction (3 numbers) for the tool axis.
        axis: Tool axis that approaches: ``"x"``, ``"y"`` or ``"z"``.
        roll: Turn of every target about its tool axis [rad].
        pose: World pose of the mesh file's frame (4x4); identity when omitted.
        scale: Factor applied to the file's coordinates (0.001 for millimetres).
        seed: Seed of the surface sampler (same seed, same targets).

    Returns:
        A ``"mesh"`` (or ``"points"``) :class:`TargetSet` with metadata ``"point"`` and
        ``"normal"`` (world) and ``"face"`` (index, -1 for point clouds).

    Raises:
        RobotFileNotFound: The file does not exist.
        MalformedDescription: The file is not a readable mesh or point cloud, or a cloud
            has no normals.
        InvalidInput: Neither or both of ``spacing`` and ``count``, or bad values.
    """
    if (spacing is None) == (count is None):
        raise InvalidInput("give exactly one of spacing and count", what="spacing")
    scale = _validate.positive_float(scale, "scale")
    spacing_file = None
    if spacing is not None:
        spacing_file = _validate.positive_float(spacing, "spacing") / scale
    if count is not None:
        count = _validate.count(count, "count", maximum=MAX_TARGETS)
    standoff = _validate.real(standoff, "standoff")
    roll = _validate.real(roll, "roll")
    if not (math.isfinite(standoff) and abs(standoff) <= 1e3 and math.isfinite(roll)):
        raise InvalidInput("standoff and roll must be finite (|standoff| <= 1e3 m)")
    seed = _validate.count(seed, "seed", minimum=0)
    M = np.eye(4) if pose is None else as_se3(pose, "pose").homogeneous
    p = Path(path)
    geom = _load_geometry(p)
    points, normals, faces = _sample_mesh(geom, p, spacing_file, count, seed)
    norms = np.linalg.norm(normals, axis=1)
    good = norms > 1e-12
    if not good.all():
        points, normals, faces = points[good], normals[good], faces[good]
        norms = norms[good]
    if not len(points):
        raise MalformedDescription(str(p), "no surface point with a valid normal")
    normals = normals / norms[:, None]
    points = points * scale @ M[:3, :3].T + M[:3, 3]
    normals = normals @ M[:3, :3].T
    poses = np.zeros((len(points), 4, 4))
    poses[:, :3, :3] = _approach_frames(normals, approach, axis, roll)
    poses[:, :3, 3] = points + standoff * normals
    poses[:, 3, 3] = 1.0
    import trimesh

    kind = "points" if isinstance(geom, trimesh.PointCloud) else "mesh"
    meta: dict[str, np.ndarray] = {"point": points, "normal": normals, "face": faces}
    return TargetSet(poses, meta, kind, None, str(p), M, scale)


# -- CSV -------------------------------------------------------------------------------------------
def _csv_rows(path: Path) -> list[list[str]]:
    if not path.exists():
        raise RobotFileNotFound(str(path))
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = [r for r in csv.reader(f) if r and any(c.strip() for c in r)]
    except (UnicodeDecodeError, csv.Error) as exc:
        raise MalformedDescription(str(path), f"not a CSV text file: {exc}") from None
    rows = [r for r in rows if not r[0].lstrip().startswith("#")]
    if not rows:
        raise MalformedDescription(str(path), "no rows")
    return rows


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _csv_columns(path: Path, header: list[str]) -> dict[str, int]:
    names = [h.strip().lower() for h in header]
    missing = [c for c in CSV_COLUMNS if c not in names]
    if missing:
        raise MalformedDescription(
            str(path), f"header {header} lacks the columns {missing} (need x,y,z,qw,qx,qy,qz)"
        )
    dupes = sorted({n for n in names if names.count(n) > 1 and n in CSV_COLUMNS})
    if dupes:
        raise MalformedDescription(str(path), f"header repeats the columns {dupes}")
    return {c: names.index(c) for c in CSV_COLUMNS}


def targets_from_csv(path: str | os.PathLike[str]) -> TargetSet:
    """Targets from rows of position [m] and unit quaternion.

    A first row that is not numeric is a header naming the columns ``x, y, z, qw, qx, qy,
    qz`` in any order (case-insensitive; other columns are kept as text metadata).
    Without a header every row is ``x, y, z, qw, qx, qy, qz`` (scalar-first, as
    :func:`stackik.q2r`). Quaternions are normalized; blank lines and lines starting with
    ``#`` are skipped.

    Returns:
        A ``"csv"`` :class:`TargetSet` (extra header columns as string metadata).

    Raises:
        RobotFileNotFound: The file does not exist.
        MalformedDescription: A row with the wrong number of fields, a non-number, a
            zero or non-finite quaternion, a missing column; the message names the line.
    """
    p = check_path(path, "path")
    rows = _csv_rows(p)
    header = None if all(_is_number(c) for c in rows[0]) else rows[0]
    cols = (
        _csv_columns(p, header) if header is not None else {c: i for i, c in enumerate(CSV_COLUMNS)}
    )
    width = len(header) if header is not None else len(CSV_COLUMNS)
    body = rows[1:] if header is not None else rows
    if not body:
        raise MalformedDescription(str(p), "no target rows")
    values = np.empty((len(body), 7))
    first_line = 2 if header is not None else 1
    for k, row in enumerate(body):
        if len(row) != width:
            raise MalformedDescription(
                str(p), f"row {first_line + k} has {len(row)} fields, expected {width}"
            )
        try:
            values[k] = [float(row[cols[c]]) for c in CSV_COLUMNS]
        except ValueError:
            raise MalformedDescription(
                str(p), f"row {first_line + k} holds a value that is not a number: {row}"
            ) from None
    bad = ~np.isfinite(values).all(axis=1)
    q = values[:, 3:]
    norm = np.linalg.norm(q, axis=1)
    bad |= ~(norm > 1e-9)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise MalformedDescription(
            str(p), f"row {first_line + k}: non-finite value or zero quaternion"
        )
    _validate.bounded(values[:, :3], 1e6, "targets position")
    q = q / norm[:, None]
    poses = np.zeros((len(body), 4, 4))
    poses[:, :3, :3] = _quaternions_to_matrices(q)
    poses[:, :3, 3] = values[:, :3]
    poses[:, 3, 3] = 1.0
    meta: dict[str, np.ndarray] = {}
    if header is not None:
        for j, name in enumerate(header):
            if name.strip().lower() not in CSV_COLUMNS:
                meta[name.strip()] = np.array([row[j] for row in body])
    return TargetSet(poses, meta, "csv", None, str(p))
