"""The reach envelope: a fast, vectorized test that rejects targets no configuration reaches.

Built once per robot and frame from forward-kinematics samples and cached with the robot
(:func:`envelope_for`). Two necessary conditions are tested for a target pose ``T``:

1. **tip**: the tool frame's origin ``p`` lies where the tip has been seen;
2. **wrist**: a point ``c`` fixed in the tool frame that the last joints cannot move (the
   point of the last joint's axis nearest the previous axis: their intersection when
   they meet, e.g. a spherical wrist's centre or the UR wrist's ``p5``) lies where it has
   been seen. ``c = T c_tool`` depends on the target's orientation, so this rejects
   orientations the arm cannot take at a reachable position.

When the first joint is a rotation, both are tested in cylindrical coordinates about its
axis, ``(r, h)`` = (distance to the axis, height along it): rotating the first joint
keeps both, so the map is two-dimensional, densely sampled and independent of the first
joint's value (a sound outer bound also when that joint's range is under a full turn).
Otherwise a 3-D occupancy grid is used. The occupancy grids are dilated by
``dilation`` cells: a sampled envelope is an inner approximation of the reachable set,
and the dilation covers the gaps between samples (tested: no pose of fresh random
configurations is rejected).
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pinocchio as pin

from .. import _validate
from ..errors import InvalidInput
from ..model.joints import classify

if TYPE_CHECKING:
    from ..ik.chain import SerialChain
    from ..model import RobotModel

__all__ = [
    "ChainGeometry",
    "ReachEnvelope",
    "describe_envelope",
    "envelope_for",
    "sampling_ranges",
]

#: Default number of forward-kinematics samples of an envelope.
DEFAULT_SAMPLES = 200_000
#: Default cell size of the occupancy grids [m].
DEFAULT_RESOLUTION = 0.01
#: Default dilation of the occupancy grids [cells].
DEFAULT_DILATION = 2
#: Distance under which two joint axes count as meeting [m].
_AXIS_MEET = 1e-7
#: Samples per vectorized forward-kinematics batch (bounds the memory of a build).
_BATCH = 100_000
#: Rounds of rim refinement, perturbed copies per rim sample, and their spread [rad or m].
_REFINE_ROUNDS = 2
_REFINE_COPIES = 2
_REFINE_SIGMA = 0.05
#: Cells next to the axis of a cylindrical grid filled toward the axis.
_AXIS_FILL = 6


@dataclass
class ChainGeometry:
    """A serial chain as placements and joint axes, for vectorized forward kinematics.

    Attributes:
        placements: ``(n + 1, 4, 4)``: base to joint 1, joint i-1 to joint i, last joint
            to tip.
        axes: Unit joint axes in their joint frames, ``(n, 3)``.
        prismatic: Whether each joint translates.
        sample_lower: Lower end of the range samples are drawn from [rad or m].
        sample_upper: Upper end of that range.
    """

    placements: np.ndarray
    axes: np.ndarray
    prismatic: np.ndarray
    sample_lower: np.ndarray
    sample_upper: np.ndarray

    @classmethod
    def of(cls, chain: SerialChain) -> ChainGeometry:
        """The geometry of a :class:`~stackik.ik.chain.SerialChain` (its model and joints)."""
        model = chain.model
        tip = model.frames[model.getFrameId(chain.tip_frame)]
        first = pin.SE3.Identity()
        if chain.base_frame is not None:
            first = model.frames[model.getFrameId(chain.base_frame)].placement.inverse()
        q0 = pin.neutral(model)
        mats, axes, prism = [], [], []
        for i, jid in enumerate(chain.joint_ids):
            M = model.jointPlacements[jid]
            mats.append((first * M if i == 0 else M).homogeneous)
            jm = model.joints[jid]
            kind = classify(jm)
            jd = jm.createData()
            jm.calc(jd, q0)
            S = np.asarray(jd.S).reshape(6)
            is_prismatic = not kind.is_rotation
            a = S[:3] if is_prismatic else S[3:]
            axes.append(a / np.linalg.norm(a))
            prism.append(is_prismatic)
        mats.append(tip.placement.homogeneous)
        prismatic = np.array(prism, dtype=bool)
        lo, hi = sampling_ranges(chain.lower, chain.upper, prismatic)
        return cls(np.array(mats), np.array(axes), prismatic, lo, hi)

    @property
    def n(self) -> int:
        """Number of joints."""
        return int(self.axes.shape[0])

    def fk(self, Q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Tip poses of many chain configurations ``Q`` (m, n): ``R`` (m, 3, 3), ``p`` (m, 3)."""
        m = Q.shape[0]
        R = np.broadcast_to(self.placements[0, :3, :3], (m, 3, 3)).copy()
        p = np.broadcast_to(self.placements[0, :3, 3], (m, 3)).copy()
        for i in range(self.n):
            a = self.axes[i]
            if self.prismatic[i]:
                p += (R @ a) * Q[:, i : i + 1]
            else:
                R = R @ _axis_rotations(a, Q[:, i])
            M = self.placements[i + 1]
            p += R @ M[:3, 3]
            R = R @ M[:3, :3]
        return R, p

    def points(self, Q: np.ndarray, local: np.ndarray) -> np.ndarray:
        """Base-frame positions of points fixed in the tip frame, for many configurations.

        Propagates the points from the tip to the base (vectors only, no rotation
        matrices: several times cheaper than :meth:`fk`).

        Args:
            Q: Chain configurations, (m, n) [rad or m].
            local: Points in tip-frame coordinates, (k, 3) [m].

        Returns:
            Positions, (k, m, 3) [m].
        """
        m = Q.shape[0]
        M = self.placements[-1]
        start = local @ M[:3, :3].T + M[:3, 3]  # (k, 3), in the last joint's frame
        # Components as separate (k, m) arrays: elementwise work only.
        x = [np.repeat(start[:, d : d + 1], m, axis=1) for d in range(3)]
        for i in range(self.n - 1, -1, -1):
            a0, a1, a2 = (float(v) for v in self.axes[i])
            q = Q[:, i]
            if self.prismatic[i]:
                x = [x[0] + a0 * q, x[1] + a1 * q, x[2] + a2 * q]
            else:
                c, sn = np.cos(q), np.sin(q)
                k = (a0 * x[0] + a1 * x[1] + a2 * x[2]) * (1.0 - c)
                x = [
                    x[0] * c + (a1 * x[2] - a2 * x[1]) * sn + a0 * k,
                    x[1] * c + (a2 * x[0] - a0 * x[2]) * sn + a1 * k,
                    x[2] * c + (a0 * x[1] - a1 * x[0]) * sn + a2 * k,
                ]
            R, t = self.placements[i, :3, :3], self.placements[i, :3, 3]
            x = [R[r, 0] * x[0] + R[r, 1] * x[1] + R[r, 2] * x[2] + t[r] for r in range(3)]
        return np.stack(x, axis=-1)

    def sample(self, rng: np.random.Generator, m: int) -> np.ndarray:
        """``m`` configurations drawn uniformly in the sampling ranges, (m, n)."""
        return rng.uniform(self.sample_lower, self.sample_upper, (m, self.n))


def sampling_ranges(
    lower: np.ndarray, upper: np.ndarray, prismatic: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The ranges random configurations are drawn from, as the chain's restarts do.

    The limits where bounded; an unbounded side is replaced so that the range is
    2 pi wide for a rotation (centred on 0 when both sides are open) and 2 m for a
    translation.
    """
    half = np.where(prismatic, 1.0, math.pi)
    lo_ok, hi_ok = np.isfinite(lower), np.isfinite(upper)
    lo = np.where(lo_ok, lower, np.where(hi_ok, upper - 2 * half, -half))
    hi = np.where(hi_ok, upper, lo + 2 * half)
    return lo, hi


def _axis_rotations(a: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """Rotations of ``angles`` about the unit axis ``a`` (Rodrigues), (m, 3, 3)."""
    K = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    s, c = np.sin(angles)[:, None, None], np.cos(angles)[:, None, None]
    return np.eye(3) + s * K + (1.0 - c) * (K @ K)


def _axis_lines(chain: SerialChain, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Point and direction of each joint axis, and the tip rotation, in the base frame.

    From the Jacobian column ``[a_i x (p - o_i); a_i]``: ``p + a_i x v_i`` lies on axis i.
    """
    J = chain.jacobian(q)
    R, p = chain.fk(q)
    a, v = J[3:].T, J[:3].T
    return p + np.cross(a, v), a, R


def _closest_on_first(o1: np.ndarray, a1: np.ndarray, o2: np.ndarray, a2: np.ndarray):
    """Point of line 1 nearest line 2 and their distance (parallel lines: ``o1``, inf)."""
    w = o1 - o2
    b, d, e = float(a1 @ a2), float(a1 @ w), float(a2 @ w)
    den = 1.0 - b * b
    if den < 1e-12:
        return o1.copy(), math.inf
    t, s = (b * e - d) / den, (e - b * d) / den
    x1 = o1 + t * a1
    return x1, float(np.linalg.norm(x1 - (o2 + s * a2)))


def wrist_point(chain: SerialChain, geometry: ChainGeometry) -> tuple[np.ndarray, int]:
    """The point of the tool frame the last joints cannot move, and how many joints move it.

    Returns:
        ``(c_tool, k)``: the point in tip-frame coordinates [m], and ``k`` such that it
        depends on the first ``k`` joints only (``n`` when the last joint translates).
    """
    n = geometry.n
    q = np.clip(chain.mid_configuration() + 0.3, geometry.sample_lower, geometry.sample_upper)
    o, a, R = _axis_lines(chain, q)
    p = chain.fk(q)[1]
    if geometry.prismatic[-1] or n < 2:
        return np.zeros(3), n
    if geometry.prismatic[-2]:
        c, k = o[-1], n - 1
    else:
        c, dist = _closest_on_first(o[-1], a[-1], o[-2], a[-2])
        k = n - 1
        if dist < _AXIS_MEET:
            k = n - 2
            for j in range(n - 3, -1, -1):
                w = c - o[j]
                if geometry.prismatic[j] or np.linalg.norm(w - a[j] * (a[j] @ w)) > _AXIS_MEET:
                    break
                k = j
    return R.T @ (c - p), max(k, 1)


@dataclass
class ReachEnvelope:
    """Where a frame's origin and its wrist point have been seen, as occupancy grids.

    Attributes:
        frame: The tool frame.
        wrist: The wrist point in tool-frame coordinates [m] (see the module).
        wrist_joints: Number of joints that move the wrist point.
        cylindrical: Grids over ``(r, h)`` about the first joint's axis (else x, y, z).
        axis_origin: A point of the first joint's axis (base frame) [m].
        axis: Its unit direction.
        lower: Grid origin: ``(r, h)`` or ``(x, y, z)`` of cell 0's corner [m].
        resolution: Cell size [m].
        tip: Occupancy of the tool origin.
        wrist_grid: Occupancy of the wrist point.
        tip_bounds: Bounding box of the sampled tool origins in the base frame, (2, 3) [m].
        samples: Number of configurations sampled.
        seed: Seed of the samples.
    """

    frame: str
    wrist: np.ndarray
    wrist_joints: int
    cylindrical: bool
    axis_origin: np.ndarray
    axis: np.ndarray
    lower: np.ndarray
    resolution: float
    tip: np.ndarray
    wrist_grid: np.ndarray
    tip_bounds: np.ndarray
    samples: int
    seed: int

    @classmethod
    def build(
        cls,
        chain: SerialChain,
        samples: int = DEFAULT_SAMPLES,
        resolution: float = DEFAULT_RESOLUTION,
        dilation: int = DEFAULT_DILATION,
        seed: int = 0,
    ) -> ReachEnvelope:
        """Sample ``samples`` configurations of ``chain`` and record where the points go.

        Args:
            chain: The serial chain (poses in its base frame).
            samples: Configurations drawn uniformly inside the limits.
            resolution: Cell size of the grids [m].
            dilation: Cells added around every occupied cell.
            seed: Seed of the samples (same seed, same envelope).

        Raises:
            InvalidInput: Bad counts or resolution.
        """
        if not all(hasattr(chain, a) for a in ("model", "tip_frame", "joint_ids")):
            raise InvalidInput(
                f"chain must be a stackik SerialChain, got {type(chain).__name__}", what="chain"
            )
        samples = _validate.count(samples, "samples", minimum=100, maximum=100_000_000)
        h = _validate.positive_float(resolution, "resolution")
        dilation = _validate.count(dilation, "dilation", minimum=0, maximum=100)
        geom = ChainGeometry.of(chain)
        c_tool, k = wrist_point(chain, geom)
        cylindrical = not geom.prismatic[0]
        R0 = geom.placements[0, :3, :3]
        axis = R0 @ geom.axes[0] if cylindrical else np.zeros(3)
        origin = geom.placements[0, :3, 3].copy()
        rng = np.random.default_rng(seed)
        Q = np.concatenate(
            [geom.sample(rng, min(_BATCH, samples - s)) for s in range(0, samples, _BATCH)]
        )
        env = cls(
            chain.tip_frame, c_tool, k, cylindrical, origin, axis, np.zeros(0), h,
            np.zeros(0, dtype=bool), np.zeros(0, dtype=bool), np.zeros((2, 3)), samples,
            int(seed),
        )  # fmt: skip
        tip_pts, a, b = _sample_points(env, geom, Q)
        pad = (dilation + 2) * h
        # Refinement: the workspace's rim is reached by few configurations (an arm
        # stretched out), so samples in rim cells are perturbed and added, twice.
        for _ in range(_REFINE_ROUNDS):
            lower = np.minimum(a.min(axis=0), b.min(axis=0)) - pad
            rim = np.flatnonzero(_rim_samples(a, lower, h) | _rim_samples(b, lower, h))
            # At most a quarter of the samples per copy (a thin workspace is all rim).
            rim = rim[:: max(1, -(-4 * rim.size // samples))]
            extra = np.repeat(Q[rim], _REFINE_COPIES, axis=0)
            extra += rng.normal(0.0, _REFINE_SIGMA, extra.shape)
            extra = np.clip(extra, geom.sample_lower, geom.sample_upper)
            t2, a2, b2 = _sample_points(env, geom, extra)
            Q = np.concatenate([Q, extra])
            tip_pts, a, b = (
                np.concatenate([tip_pts, t2]),
                np.concatenate([a, a2]),
                np.concatenate([b, b2]),
            )
        env.tip_bounds = np.stack([tip_pts.min(axis=0), tip_pts.max(axis=0)])
        lower = np.minimum(a.min(axis=0), b.min(axis=0)) - pad
        if cylindrical:
            lower[0] = 0.0
        upper = np.maximum(a.max(axis=0), b.max(axis=0)) + pad
        env.lower = lower
        shape = tuple(int(s) for s in np.ceil((upper - lower) / h).astype(int) + 1)
        env.tip = _occupancy(a, lower, h, shape, dilation, cylindrical)
        env.wrist_grid = _occupancy(b, lower, h, shape, dilation, cylindrical)
        return env

    def coordinates(self, points: np.ndarray) -> np.ndarray:
        """``(r, h)`` about the first axis (cylindrical) or the points themselves."""
        if not self.cylindrical:
            return points
        d = points - self.axis_origin
        z = d @ self.axis
        r = np.linalg.norm(d - z[:, None] * self.axis, axis=1)
        return np.stack([r, z], axis=1)

    def _lookup(self, grid: np.ndarray, points: np.ndarray) -> np.ndarray:
        idx = np.floor((self.coordinates(points) - self.lower) / self.resolution).astype(np.int64)
        inside = np.all((idx >= 0) & (idx < np.array(grid.shape)), axis=1)
        out = np.zeros(len(points), dtype=bool)
        out[inside] = grid[tuple(idx[inside].T)]
        return out

    def contains(self, poses: np.ndarray) -> np.ndarray:
        """Whether each pose (base frame, (N, 4, 4)) passes both tests (vectorized)."""
        poses = np.asarray(poses, dtype=float)
        p = poses[:, :3, 3]
        ok = self._lookup(self.tip, p)
        c = np.einsum("nij,j->ni", poses[:, :3, :3], self.wrist) + p
        ok[ok] = self._lookup(self.wrist_grid, c[ok])
        return ok

    def describe(self) -> dict[str, object]:
        """The settings that define the envelope (stored with a study).

        :func:`describe_envelope` gives the same description without building it.
        """
        return _description(
            self.frame,
            self.samples,
            self.seed,
            self.resolution,
            self.cylindrical,
            self.wrist,
            self.wrist_joints,
        )


def _description(
    frame: str,
    samples: int,
    seed: int,
    resolution: float,
    cylindrical: bool,
    wrist: np.ndarray,
    wrist_joints: int,
) -> dict[str, object]:
    return {
        "frame": frame,
        "samples": int(samples),
        "seed": int(seed),
        "resolution": float(resolution),
        "cylindrical": bool(cylindrical),
        "wrist": np.asarray(wrist, dtype=float).tolist(),
        "wrist_joints": int(wrist_joints),
    }


def describe_envelope(
    chain: SerialChain,
    samples: int = DEFAULT_SAMPLES,
    resolution: float = DEFAULT_RESOLUTION,
    seed: int = 0,
) -> dict[str, object]:
    """The :meth:`ReachEnvelope.describe` of an envelope of ``chain``, without building it.

    Everything the description holds follows from the settings and the chain's geometry
    (the wrist point and whether the grids are cylindrical), so no configuration is
    sampled: a resumed study compares its stored header in milliseconds.

    Raises:
        InvalidInput: Bad counts or resolution (as :meth:`ReachEnvelope.build`).
    """
    samples = _validate.count(samples, "samples", minimum=100, maximum=100_000_000)
    h = _validate.positive_float(resolution, "resolution")
    geom = ChainGeometry.of(chain)
    c_tool, k = wrist_point(chain, geom)
    return _description(chain.tip_frame, samples, int(seed), h, not geom.prismatic[0], c_tool, k)


def _sample_points(
    env: ReachEnvelope, geom: ChainGeometry, Q: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tip positions, and grid coordinates of the tip and the wrist point, of ``Q``."""
    tips, a, b = [], [], []
    local = np.stack([np.zeros(3), env.wrist])
    for start in range(0, len(Q), _BATCH):
        p, c = geom.points(Q[start : start + _BATCH], local)
        tips.append(p)
        a.append(env.coordinates(p))
        b.append(env.coordinates(c))
    return np.concatenate(tips), np.concatenate(a), np.concatenate(b)


def _cells(pts: np.ndarray, lower: np.ndarray, h: float) -> np.ndarray:
    return np.floor((pts - lower) / h).astype(np.int64)


def _rim_samples(pts: np.ndarray, lower: np.ndarray, h: float) -> np.ndarray:
    """Samples in occupied cells that have an empty neighbour (the sampled set's rim)."""
    idx = _cells(pts, lower, h)
    shape = tuple(int(s) for s in idx.max(axis=0) + 2)
    grid = np.zeros(shape, dtype=bool)
    grid[tuple(idx.T)] = True
    rim = np.zeros(shape, dtype=bool)
    for d in range(grid.ndim):
        for step in (1, -1):
            rim |= grid & ~np.roll(grid, step, axis=d)
    return rim[tuple(idx.T)]


def _occupancy(
    pts: np.ndarray,
    lower: np.ndarray,
    h: float,
    shape: tuple[int, ...],
    dilation: int,
    cylindrical: bool,
) -> np.ndarray:
    """Occupied cells, dilated; cylindrical grids are also filled in toward the axis.

    Near the axis few samples land in a cell (the area of a ring shrinks with ``r``), so
    the cells between the axis and the first occupied cell of a row, when that cell is
    within :data:`_AXIS_FILL` cells, are filled.
    """
    grid = np.zeros(shape, dtype=bool)
    grid[tuple(_cells(pts, lower, h).T)] = True
    if cylindrical:
        near: np.ndarray = np.asarray(grid[:_AXIS_FILL].any(axis=0))
        first = np.argmax(grid, axis=0)
        rows = np.arange(shape[0])[:, None]
        grid |= near[None, :] & (rows <= first[None, :])
    for _ in range(dilation):
        grown = grid.copy()
        for d in range(grid.ndim):
            lo = [slice(None)] * grid.ndim
            hi = [slice(None)] * grid.ndim
            lo[d], hi[d] = slice(1, None), slice(None, -1)
            grown[tuple(lo)] |= grid[tuple(hi)]
            grown[tuple(hi)] |= grid[tuple(lo)]
        grid = grown
    return grid


#: Envelopes by robot (weak: they go with the robot), then by frame and settings.
_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def envelope_for(
    robot: RobotModel,
    chain: SerialChain,
    samples: int = DEFAULT_SAMPLES,
    resolution: float = DEFAULT_RESOLUTION,
    dilation: int = DEFAULT_DILATION,
    seed: int = 0,
) -> ReachEnvelope:
    """The envelope of ``chain`` on ``robot``, built on first use and cached with the robot.

    The cache key holds the chain's frames and limits, the robot's revision and base
    placement and the settings, so an edited robot gets a new envelope.
    """
    key = (
        chain.tip_frame,
        chain.base_frame,
        chain.lower.tobytes(),
        chain.upper.tobytes(),
        robot.revision,
        robot.base_placement.homogeneous.tobytes(),
        samples,
        resolution,
        dilation,
        seed,
    )
    per_robot = _CACHE.setdefault(robot, {})
    env = per_robot.get(key)
    if env is None:
        env = ReachEnvelope.build(chain, samples, resolution, dilation, seed)
        per_robot[key] = env
    return env
