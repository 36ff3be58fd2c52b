"""Robot-level tests of candidate configurations: pose, limits, collision, user callback.

Every configuration global IK returns passes these on the full
:class:`~stackik.RobotModel`, exactly as the solver would see it:

1. Pinocchio forward kinematics puts the frame within the tolerances of the target;
2. the chain joints are inside their limits, shrunk by the solver's limit margin;
3. when a collision constraint is configured, no watched pair (the robot's own, its
   attached objects, the world's obstacles) is closer than its minimum distance;
4. the user's ``validate(q) -> bool`` accepts it.

The checker computes in a :class:`Workspace` (a Pinocchio ``Data`` and a collision
pipeline) owned by its global-IK layer, never in the robot's or the engine's caches.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pinocchio as pin

from ..constraints.collision import pair_levers
from ..model import RobotModel
from ..model.kinematics import joint_placements_copy, joint_placements_view
from ..model.pipeline import CollisionPipeline, CollisionWatch, GeometrySet
from .chains import ChainSetup

__all__ = [
    "MOTION_SPLIT_DEPTH",
    "POSE_SLACK",
    "CandidateChecker",
    "CollisionWatch",
    "Validator",
    "Workspace",
]

Validator = Callable[[np.ndarray], bool]

#: Slack of the pose test of a candidate over the tolerance [m or rad] (compiled FK and
#: Pinocchio's differ by rounding only).
POSE_SLACK = 1e-9

#: Halvings of a joint motion :meth:`CandidateChecker.motion_clear` makes at most before
#: it counts a pair it cannot prove clear as a collision (pieces of 1/1024 of the motion).
MOTION_SPLIT_DEPTH = 10


class Workspace:
    """Scratch kinematics and collision state of one global-IK layer (rebuilt on change).

    Args:
        robot: The robot description.
    """

    def __init__(self, robot: RobotModel) -> None:
        self._robot = robot
        self._revision = -1
        self._rebuild()

    def __getstate__(self) -> dict[str, Any]:
        return {"robot": self._robot}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._robot = state["robot"]
        self._rebuild()

    def _rebuild(self) -> None:
        """Forget the scratch data; each part is created on first use.

        A Pinocchio ``Data`` holds ``nv^3``-sized tensors, a collision pipeline a slot
        per geometry and pair: a solver that never runs global IK does not pay for them.
        """
        self._revision = self._robot.revision
        self._data: pin.Data | None = None
        self._view: np.ndarray | None = None
        self._pipeline: CollisionPipeline | None = None
        self._levers: tuple[GeometrySet, np.ndarray, np.ndarray] | None = None

    def prepare(self) -> None:
        """Create the scratch data now (a query's budget should not pay for it)."""
        self.pipeline  # noqa: B018 - created on first access
        self.data  # noqa: B018

    @property
    def pipeline(self) -> CollisionPipeline:
        """The scratch collision pipeline.

        Also for a robot without collision geometry: its attached objects have pairs.
        """
        if self._revision != self._robot.revision:
            self._rebuild()
        if self._pipeline is None:
            self._pipeline = CollisionPipeline(self._robot)
        return self._pipeline

    @property
    def data(self) -> pin.Data:
        """The scratch Pinocchio data."""
        if self._revision != self._robot.revision:
            self._rebuild()
        if self._data is None:
            self._data = pin.Data(self._robot.model)
            self._view = joint_placements_view(self._data)
        return self._data

    def margins(
        self, q: np.ndarray, watch: CollisionWatch, rows: np.ndarray | None = None
    ) -> np.ndarray:
        """Each watched pair's ``distance - threshold`` [m] at ``q``.

        The forward kinematics runs into :attr:`data`; distances are the collision
        pipeline's exact ones (compiled; coal for triangle meshes). Empty without
        collision geometry or pairs.

        Args:
            q: Robot configuration (size nq).
            watch: The pairs and their minimum distances.
            rows: Only these watched pairs (indices into ``watch.geometry_pairs``), in
                this order; None: every one.
        """
        if self._revision != self._robot.revision:
            self._rebuild()
        pairs, thresholds = watch.geometry_pairs, watch.geometry_thresholds
        if pairs is None or not len(pairs):
            return np.zeros(0)
        assert thresholds is not None
        if rows is not None:
            pairs, thresholds = pairs[rows], thresholds[rows]
        pipeline = self.pipeline
        pipeline.world = watch.world
        data = self.data
        pin.forwardKinematics(self._robot.model, data, q)
        view = self._view
        pipeline.place(view if view is not None else joint_placements_copy(data), watch.state)
        return pipeline.distances(pairs) - thresholds

    def min_margin(self, q: np.ndarray, watch: CollisionWatch) -> float:
        """Smallest ``distance - threshold`` [m] over the watched pairs at ``q``.

        See :meth:`margins`; ``inf`` without collision geometry or pairs.
        """
        m = self.margins(q, watch)
        return float(np.min(m)) if m.size else math.inf

    def pair_levers(self, watch: CollisionWatch) -> np.ndarray:
        """Motion levers of the watched pairs, ``(P, nv)`` [m per rad or m].

        Pair ``k``'s distance changes by at most ``levers[k] . |dv|`` along any joint
        motion of tangent ``dv`` (the collision constraint's own bound:
        :func:`~stackik.constraints.collision.pair_levers`). Kept while the
        geometry set and the pairs are the same.
        """
        pairs = watch.geometry_pairs
        if pairs is None or not len(pairs):
            return np.zeros((0, self._robot.nv))
        gs = self.pipeline.geometry(watch.state)
        cached = self._levers
        if cached is not None and cached[0] is gs and np.array_equal(cached[1], pairs):
            return cached[2]
        levers = pair_levers(self._robot, gs, pairs)
        self._levers = (gs, pairs.copy(), levers)
        return levers

    def frame_pose(self, q: np.ndarray, fid: int) -> pin.SE3:
        """World pose of frame ``fid`` at ``q`` (a copy)."""
        data = self.data
        pin.framesForwardKinematics(self._robot.model, data, q)
        return pin.SE3(data.oMf[fid])


class CandidateChecker:
    """Robot-level test of candidate configurations of one query.

    Args:
        robot: The robot description.
        workspace: Scratch data of the calling layer.
        setup: The query's chain setup.
        target: World pose the frame must reach (None: no pose test).
        tol_p: Position tolerance [m].
        tol_o: Orientation tolerance [rad].
        validate: The user's callback, or None.
        watch: Pairs to check and their minimum distances, or None.
    """

    def __init__(
        self,
        robot: RobotModel,
        workspace: Workspace,
        setup: ChainSetup,
        target: pin.SE3 | None,
        tol_p: float,
        tol_o: float,
        validate: Validator | None,
        watch: CollisionWatch | None,
    ) -> None:
        self.robot = robot
        self.model = robot.model
        self.workspace = workspace
        self.setup = setup
        self.target = target
        self.tol_p = tol_p + POSE_SLACK
        self.tol_o = tol_o + POSE_SLACK
        self.validate = validate
        self.watch = (
            watch
            if watch is not None and watch.geometry_pairs is not None and len(watch.geometry_pairs)
            else None
        )
        kept = robot.kept_mimic_joints
        self.couple: Callable[[np.ndarray], np.ndarray] | None = robot.apply_mimic if kept else None
        # kept followers that are chain joints: coupling them moves the chain
        chain_joints = set(setup.chain.joint_ids)
        self.couples_chain = any(
            robot.get_pinocchio_joint_id(f) in chain_joints for f, _, _, _ in kept
        )
        # the joints off the chain keep their reference values: the model's limits of
        # theirs that have finite ones (every candidate of the query carries them)
        lo, hi = self.model.lowerPositionLimit, self.model.upperPositionLimit
        off = np.ones(self.model.nq, dtype=bool)
        off[np.asarray(setup.chain.idx_q, dtype=np.int64)] = False
        off &= np.isfinite(lo) & np.isfinite(hi)
        self._off = (np.flatnonzero(off), lo[off].copy(), hi[off].copy())
        self._kept: list[tuple[bytes, np.ndarray]] = []  # (q's bytes, margins), last two
        self._lever: np.ndarray | None = None  # (the watched pairs' levers, on first use)

    def coupled(self, q: np.ndarray, qc: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
        """A candidate with every kept mimic follower set from its leader.

        Robots loaded with ``mimic="keep"`` carry followers in ``q``; a candidate leaves
        the chain with them held at ``reference_q`` (or, on the chain, as the search left
        them), so each is set to ``multiplier * leader + offset`` before it is checked
        or returned.

        Args:
            q: Robot configuration of the candidate.
            qc: Its chain configuration [rad or m].

        Returns:
            ``(q, qc, moved)``: the coupled configuration, its chain configuration, and
            whether a chain joint moved (its pose must then be checked again).
        """
        if self.couple is None:
            return q, qc, False
        q = self.couple(q)
        if not self.couples_chain:
            return q, qc, False
        qc2 = self.setup.chain.from_full(q)
        return q, qc2, not np.array_equal(qc2, qc)

    def pose_error(self, q: np.ndarray) -> tuple[float, float]:
        """Position [m] and orientation [rad] error of the frame at ``q`` (Pinocchio FK)."""
        data = self.workspace.data
        pin.framesForwardKinematics(self.model, data, q)
        tgt = self.target
        assert tgt is not None
        # target^-1 * pose: its translation has the norm of the world position error and
        # its rotation the angle of the orientation error.
        M = tgt.actInv(data.oMf[self.setup.fid])
        x, y, z = M.translation.tolist()
        a, b, c = pin.log3(M.rotation).tolist()
        return math.sqrt(x * x + y * y + z * z), math.sqrt(a * a + b * b + c * c)

    def limits_ok(self, qc: np.ndarray) -> bool:
        """Chain joints inside the effective (margin, locks) and the model's limits."""
        s = self.setup
        # Scalar comparisons beat NumPy calls at chain sizes; NaN fails both.
        return all(
            lo <= v <= hi
            for lo, v, hi in zip(
                s.check_lower.tolist(), qc.tolist(), s.check_upper.tolist(), strict=True
            )
        )

    def off_chain_ok(self, q: np.ndarray) -> bool:
        """The joints off the chain (held at the reference) inside the model's limits."""
        idx, lo, hi = self._off
        if not idx.size:
            return True
        v = q[idx]
        return bool(np.all((lo <= v) & (v <= hi)))

    def collision_ok(self, q: np.ndarray) -> bool:
        """No watched pair below its minimum distance (True without a constraint)."""
        m = self.margins(q)
        return m is None or not m.size or float(np.min(m)) >= 0.0

    def margins(self, q: np.ndarray) -> np.ndarray | None:
        """Each watched pair's ``distance - min_distance`` [m] at ``q`` (None: no constraint).

        The last two configurations' are kept: a path checks a configuration, then the
        motion to it from the one before (:meth:`motion_clear`).
        """
        watch = self.watch
        if watch is None:
            return None
        key = q.tobytes()
        kept = self._kept
        for qk, mk in kept:
            if qk == key:
                return mk
        m = self.workspace.margins(q, watch)
        kept.append((key, m))
        if len(kept) > 2:
            del kept[0]
        return m

    def motion_clear(
        self, qa: np.ndarray, qb: np.ndarray, margins_a: np.ndarray | None = None
    ) -> bool:
        """No watched pair below its minimum anywhere on the joint motion from ``qa`` to ``qb``.

        The motion is the joint-space segment ``q(t) = qa (+) t (qb (-) qa)``, ``t`` in
        [0, 1] (linear for revolute and prismatic joints): what a controller
        interpolating the two configurations executes. Conservative advancement: pair
        ``k`` closes by at most ``lever_k . |qb (-) qa|`` over the segment (its levers
        bound how fast any point of its geometries moves per joint), so it stays at or
        above its minimum when its margins at the two ends add up to at least that. A
        pair that does not is checked again on each half of the segment, down to
        :data:`MOTION_SPLIT_DEPTH` halvings; still unproven there, the motion counts as a
        collision (conservative: a pair that comes within ``lever_k . |qb (-) qa| /
        2**depth`` [m] of its minimum can be rejected though it never goes below it).
        Only the pairs still open are queried on the halves. True without a constraint.

        Args:
            qa: Configuration at the start of the motion (size nq).
            qb: Configuration at its end.
            margins_a: :meth:`margins` at ``qa`` when the caller has them (None: computed
                or taken from the last two configurations').

        Returns:
            Whether the whole motion keeps every watched pair at its minimum or above.
        """
        watch, mb = self.watch, self.margins(qb)
        ma = self.margins(qa) if margins_a is None else margins_a
        if watch is None or ma is None or mb is None or not ma.size:
            return True
        if ma.min() < 0.0 or mb.min() < 0.0:
            return False
        if self._lever is None:
            self._lever = self.workspace.pair_levers(watch)
        lever = self._lever
        open_ = ma + mb < lever @ np.abs(pin.difference(self.model, qa, qb))
        if not open_.any():
            return True  # (the common case: every pair proven at once)
        rows = np.flatnonzero(open_)
        return self._split_clear(watch, lever, [(qa, qb, rows, ma[rows], mb[rows], 0)])

    def _split_clear(
        self,
        watch: CollisionWatch,
        lever: np.ndarray,
        stack: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]],
    ) -> bool:
        """:meth:`motion_clear` of the pairs not proven on whole segments: halve them.

        Each entry: the segment's ends, the watched pairs still open on it, their margins
        at the two ends [m], and the halvings made so far.
        """
        model = self.model
        while stack:
            qa, qb, rows, ma, mb, depth = stack.pop()
            if depth == MOTION_SPLIT_DEPTH:
                return False
            qm = pin.interpolate(model, qa, qb, 0.5)
            mm = self.workspace.margins(qm, watch, rows)
            if mm.min() < 0.0:
                return False
            for q0, q1, m0, m1 in ((qm, qb, mm, mb), (qa, qm, ma, mm)):
                open_ = m0 + m1 < lever[rows] @ np.abs(pin.difference(model, q0, q1))
                if open_.any():
                    stack.append((q0, q1, rows[open_], m0[open_], m1[open_], depth + 1))
        return True

    def reason(self, q: np.ndarray, qc: np.ndarray, check_pose: bool = True) -> str:
        """``""`` when ``q`` passes every test, else the first failed test's name.

        Names: ``"pose"``, ``"limits"``, ``"collision"``, ``"validation"``.
        """
        if check_pose:
            ep, eo = self.pose_error(q)
            if not (ep <= self.tol_p and eo <= self.tol_o):
                return "pose"
        if not self.limits_ok(qc) or not self.off_chain_ok(q):
            return "limits"
        if not self.collision_ok(q):
            return "collision"
        if self.validate is not None and not bool(self.validate(q.copy())):
            return "validation"
        return ""
