"""Capability maps (Zacharias et al. 2007) and inverse reachability (Vahrenkamp et al.).

A capability map is a reachability study over a voxel grid times an orientation set:
voxel ``v`` has the **reachability index** ``D(v)``, the fraction of the orientations
for which the frame reaches the voxel's centre (IK-verified on the full robot with the
solver's constraints). Lookups are vectorized: the nearest voxel of a point, the nearest
voxel and orientation of a pose.

Inverse reachability: the map is built with the robot's base at ``B0`` (its base
placement when built). An entry ``E`` (a voxel centre with an orientation, world) that
is reachable means the tool reaches ``B0^-1 E`` relative to the base; a base at ``B``
then reaches the pose ``T`` when ``B0 B^-1 T`` is a reachable entry, and the bases that
reach ``T`` are ``B = T E^-1 B0`` over the reachable entries. Base placement ranks
candidate base poses by the share of task poses they reach, without solving IK again.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _validate
from ..errors import InvalidInput, ShapeError
from ..spatial import check_pose_stack
from .result import ReachResult
from .targets import GridSpec, grid_targets

__all__ = ["BasePlacement", "CapabilityMap"]

#: ``run`` arguments :meth:`CapabilityMap.build` passes on (the rest go to the study).
_RUN_ARGS = ("executor", "workers", "store", "resume", "progress", "address")


@dataclass
class BasePlacement:
    """Candidate base poses ranked by how many task poses they reach (from a map).

    Attributes:
        candidates: The candidate base poses ``T_world_base``, (K, 4, 4).
        reachable: Whether candidate k reaches task pose n (nearest map entry), (K, N).
        index: Reachability index of each task position from each candidate, (K, N).
        fraction: Share of the task poses each candidate reaches, (K,).
        mean_index: Mean index over the task positions, (K,) (the tie-breaker).
        ranking: Candidate indices, best first.
    """

    candidates: np.ndarray
    reachable: np.ndarray
    index: np.ndarray
    fraction: np.ndarray
    mean_index: np.ndarray
    ranking: np.ndarray

    @property
    def best(self) -> np.ndarray:
        """The best candidate base pose, 4x4."""
        return self.candidates[self.ranking[0]]


class CapabilityMap:
    """Reachability index per voxel over a grid of positions times orientations.

    Build with :meth:`build` (or :meth:`from_result` / :meth:`load`).

    Attributes:
        grid: The voxel grid and its orientation set.
        reachable: Whether each (voxel, orientation) is reachable, (n_voxels, M) bool.
        index: Reachability index per voxel, ``grid.shape`` in [0, 1].
        base: The robot's base placement the map was built with, 4x4 (``B0``).
        frame: The tool frame.
        result: The study behind the map (None when loaded without it).
    """

    def __init__(
        self,
        grid: GridSpec,
        reachable: np.ndarray,
        base: np.ndarray,
        frame: str,
        result: ReachResult | None = None,
    ) -> None:
        _validate.instance(grid, GridSpec, "grid", "GridSpec")
        flags = np.asarray(reachable)
        shape = (grid.n_voxels, grid.n_orientations)
        if flags.dtype != bool or flags.size != shape[0] * shape[1]:
            raise ShapeError("reachable (booleans, voxels x orientations)", shape, flags.shape)
        self.grid = grid
        self.reachable = flags.reshape(shape)
        self.index = self.reachable.mean(axis=1).reshape(grid.shape)
        self.base = np.asarray(base, dtype=float)
        self.frame = frame
        self.result = result

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        robot: Any,
        frame: str,
        resolution: float = 0.05,
        orientations: int | object = 50,
        bounds: object | None = None,
        *,
        world: Any = None,
        **run_kwargs: Any,
    ) -> CapabilityMap:
        """Solve every voxel centre at every orientation and count what is reachable.

        Args:
            robot: The :class:`~stackik.RobotModel`.
            frame: The tool frame.
            resolution: Voxel edge [m].
            orientations: Number of super-Fibonacci orientations, or an (M, 3, 3) stack.
            bounds: ``[[x, y, z]_min, [x, y, z]_max]`` in the world [m]; default: the box of
                every tool position of the reach envelope's samples, grown by half a voxel.
            world: The :class:`~stackik.World` around the robot (None: the solver's,
                ``solver.world``, its own or ``robot.world``, as it is when the map is
                built; a snapshot taken then is used for every voxel). A voxel whose
                poses are reached only through an obstacle is not reachable
                (``WORLD_COLLISION`` in :attr:`result`).
            **run_kwargs: :meth:`ReachStudy.run` arguments (``executor``, ``workers``,
                ``store``, ``resume``, ``progress``, ``address``) and :class:`ReachStudy`
                arguments (``solver``, ``evaluators`` (default none), ``seed``, ``budget``,
                ``chunk_size``, ...).

        Returns:
            The map (its :attr:`result` holds the study's per-target results).

        Raises:
            InvalidInput: Bad arguments (``world`` not a :class:`~stackik.World`, ...).
        """
        from .study import ReachStudy

        run = {k: run_kwargs.pop(k) for k in _RUN_ARGS if k in run_kwargs}
        run_kwargs.setdefault("evaluators", [])
        run_kwargs["world"] = world
        res = _validate.positive_float(resolution, "resolution")
        if bounds is None:
            probe = ReachStudy(robot, frame, np.eye(4)[None], **run_kwargs)
            env = probe.envelope()
            if env is None:
                raise InvalidInput("bounds are needed when the envelope is off", what="bounds")
            bounds = _world_bounds(probe, env.tip_bounds, res)
        targets = grid_targets(bounds, res, orientations)
        study = ReachStudy(robot, frame, targets, **run_kwargs)
        return cls.from_result(study.run(**run), robot.base_placement.homogeneous)

    @classmethod
    def from_result(cls, result: ReachResult, base: object | None = None) -> CapabilityMap:
        """The map of a finished grid study (``base``: its base placement, default stored).

        Raises:
            InvalidInput: Not a :class:`ReachResult`, its targets are not a grid, or chunks
                have not run.
        """
        _validate.instance(result, ReachResult, "result", "ReachResult")
        grid = result.targets.grid
        if grid is None:
            raise InvalidInput("a capability map needs a grid study (grid_targets)")
        if not result.complete:
            raise InvalidInput("the study is not finished: resume it before building a map")
        if base is None:
            base = result.header.get("base_placement", np.eye(4).tolist())
        return cls(grid, result.reachable, np.asarray(base, dtype=float), result.frame, result)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> CapabilityMap:
        """Read a map saved with :meth:`save` (or the store of a grid study).

        Raises:
            RobotFileNotFound, MalformedDescription: No such store, not a reach store.
            InvalidInput: Not a finished grid study.
        """
        return cls.from_result(ReachResult.load(path))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the map (its study's store, with the base placement).

        Raises:
            InvalidInput: The map has no study result to save.
        """
        if self.result is None:
            raise InvalidInput("this map has no study result to save")
        self.result.header["base_placement"] = self.base.tolist()
        self.result.save(path)

    # -- lookups --------------------------------------------------------------------------------
    def reachability(self, points: object) -> np.ndarray:
        """Reachability index of the nearest voxel of each point (0 outside the grid).

        Args:
            points: World positions, (M, 3) or (3,) [m].

        Returns:
            Indices in [0, 1], (M,).
        """
        P = _validate.as_floats(points, "points", ("M", 3)).reshape(-1, 3)
        flat, inside = self.grid.voxel_index(P)
        out = self.index.reshape(-1)[flat]
        return np.where(inside & np.isfinite(P).all(axis=1), out, 0.0)

    def query(self, poses: object) -> np.ndarray:
        """Whether the nearest map entry (voxel and orientation) of each pose is reachable.

        Args:
            poses: World poses of the tool, (M, 4, 4) or 4x4.

        Returns:
            (M,) bool; False outside the grid.
        """
        T = check_pose_stack(np.asarray(poses, dtype=float).reshape(-1, 4, 4), "poses")
        return self._entries(T)

    def _entries(self, T: np.ndarray) -> np.ndarray:
        flat, inside = self.grid.voxel_index(T[:, :3, 3])
        # Nearest orientation: largest trace of R_o^T R (smallest rotation angle).
        tr = np.einsum("mij,oij->mo", T[:, :3, :3], self.grid.rotations)
        o = np.argmax(tr, axis=1)
        return inside & self.reachable[flat, o]

    # -- inverse reachability ------------------------------------------------------------------
    def inverse(self, target: object, min_index: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """Base poses from which a task pose is reachable, with their voxels' index.

        Args:
            target: The task pose of the tool ``T_world_task``, 4x4.
            min_index: Keep entries of voxels with at least this reachability index.

        Returns:
            ``(bases, weights)``: base poses ``T_world_base = T E^-1 B0`` (K, 4, 4), one per
            reachable entry ``E``, and the reachability index of ``E``'s voxel (K,).
        """
        T = check_pose_stack(np.asarray(target, dtype=float).reshape(-1, 4, 4), "target")[0]
        v, o = np.nonzero(self.reachable)
        w = self.index.reshape(-1)[v]
        keep = w >= float(min_index)
        v, o, w = v[keep], o[keep], w[keep]
        E_inv = np.zeros((len(v), 4, 4))
        Rt = np.swapaxes(self.grid.rotations[o], 1, 2)
        E_inv[:, :3, :3] = Rt
        E_inv[:, :3, 3] = -np.einsum("kij,kj->ki", Rt, self.grid.centres()[v])
        E_inv[:, 3, 3] = 1.0
        return T @ E_inv @ self.base, w

    def base_placement(self, targets: object, candidates: object) -> BasePlacement:
        """Rank candidate base poses by the task poses they reach (no IK).

        A candidate base ``B`` reaches a task pose ``T`` when the map entry nearest
        ``B0 B^-1 T`` is reachable; candidates are ranked by that share, then by the mean
        reachability index of the task positions.

        Args:
            targets: Task poses of the tool, (N, 4, 4) [m].
            candidates: Candidate base poses ``T_world_base``, (K, 4, 4) [m].
        """
        T = check_pose_stack(targets, "targets")
        B = check_pose_stack(candidates, "candidates")
        K, N = len(B), len(T)
        reach = np.zeros((K, N), dtype=bool)
        index = np.zeros((K, N))
        for k in range(K):
            local = self.base @ np.linalg.inv(B[k]) @ T
            reach[k] = self._entries(local)
            index[k] = self.reachability(local[:, :3, 3])
        fraction = reach.mean(axis=1) if N else np.zeros(K)
        mean_index = index.mean(axis=1) if N else np.zeros(K)
        ranking = np.lexsort((-mean_index, -fraction)).astype(np.int64)
        return BasePlacement(B, reach, index, fraction, mean_index, ranking)

    # -- plots -------------------------------------------------------------------------------------
    def plot_slice(
        self, axis: str = "z", value: float = 0.0, path: str | os.PathLike[str] | None = None
    ) -> Any:
        """Heat map of the index on the grid slice nearest ``axis = value`` [m] (PNG/SVG).

        Returns:
            The matplotlib figure.
        """
        from .plots import plot_map_slice

        return plot_map_slice(self, axis, float(value), path)

    def summary(self) -> dict[str, float]:
        """Voxels, voxels with any reachable orientation, mean index over those."""
        reach = self.index.reshape(-1) > 0
        return {
            "voxels": float(self.grid.n_voxels),
            "orientations": float(self.grid.n_orientations),
            "reachable_voxels": float(reach.sum()),
            "mean_index": float(self.index.reshape(-1)[reach].mean()) if reach.any() else 0.0,
        }

    def __repr__(self) -> str:
        s = self.summary()
        return (
            f"CapabilityMap({self.frame!r}, {self.grid.shape} voxels of "
            f"{self.grid.resolution:g} m x {self.grid.n_orientations} orientations, "
            f"{int(s['reachable_voxels'])} reachable voxels)"
        )


def _world_bounds(study: Any, tip_bounds: np.ndarray, res: float) -> np.ndarray:
    """World box of the envelope's tool positions (chain base frame), grown by half a voxel."""
    lo, hi = tip_bounds
    corners = np.array(
        [[x, y, z, 1.0] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]
    )
    world = (corners @ study.chain_base_pose().T)[:, :3]
    return np.stack([world.min(axis=0) - res / 2, world.max(axis=0) + res / 2])
