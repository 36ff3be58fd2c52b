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

from ..model import RobotModel
from ..model.kinematics import joint_placements_copy, joint_placements_view
from ..model.pipeline import CollisionPipeline, CollisionWatch
from .chains import ChainSetup

__all__ = ["POSE_SLACK", "CandidateChecker", "CollisionWatch", "Validator", "Workspace"]

Validator = Callable[[np.ndarray], bool]

#: Slack of the pose test of a candidate over the tolerance [m or rad] (compiled FK and
#: Pinocchio's differ by rounding only).
POSE_SLACK = 1e-9


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

    def min_margin(self, q: np.ndarray, watch: CollisionWatch) -> float:
        """Smallest ``distance - threshold`` [m] over the watched pairs at ``q``.

        The forward kinematics runs into :attr:`data`; distances are the collision
        pipeline's exact ones (compiled; coal for triangle meshes). ``inf`` without
        collision geometry or pairs.
        """
        if self._revision != self._robot.revision:
            self._rebuild()
        if watch.geometry_pairs is None or not len(watch.geometry_pairs):
            return math.inf
        pipeline = self.pipeline
        pipeline.world = watch.world
        data = self.data
        pin.forwardKinematics(self._robot.model, data, q)
        view = self._view
        pipeline.place(view if view is not None else joint_placements_copy(data), watch.state)
        d = pipeline.distances(watch.geometry_pairs)
        assert watch.geometry_thresholds is not None
        return float(np.min(d - watch.geometry_thresholds))

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
        watch = self.watch
        if watch is None:
            return True
        return self.workspace.min_margin(q, watch) >= 0.0

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
