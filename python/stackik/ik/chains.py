"""The serial chains global IK searches on, per tip frame, and their search setups.

A query searches on the joints between the world (or the last joint a
:class:`~stackik.ik.chain.SerialChain` cannot model, e.g. a free-flyer) and the target
frame; the other joints are held at a reference configuration. A :class:`ChainSetup`
adds what one query needs: limits shrunk by the limit margin, locked joints pinned, and
the limits the full-robot check applies. :class:`ChainCatalog` caches both.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from ..errors import InvalidInput, JointNotFound
from ..model import RobotModel
from ..model.joints import JointKind
from .branches import check_branch_structure
from .chain import SerialChain

__all__ = ["LIMIT_SLACK", "ChainCatalog", "ChainSetup", "two_pi_turns"]

#: Slack of the limit test of a candidate [rad or m] (the search clips into the limits).
LIMIT_SLACK = 1e-9
#: Chains and setups kept per catalog (keyed by frame, margin, locks, limits, base).
_CACHE_SIZE = 32
_TWO_PI = 2.0 * math.pi


@dataclass
class ChainSetup:
    """The chain a query searches on, and what the full model needs to check it.

    Attributes:
        chain: The chain searched (limits already shrunk and locks pinned).
        base_frame: Frame the chain starts from (None: the world).
        fid: Pinocchio index of the tip frame.
        revolute: Chain joints that are bounded revolute joints (they have 2 pi turns).
        lower: Effective chain lower limits (margin, locks) [rad or m].
        upper: Effective chain upper limits.
        check_lower: Limits of the full-robot check, minus :data:`LIMIT_SLACK`.
        check_upper: Upper limits of the check, plus :data:`LIMIT_SLACK`.
    """

    chain: SerialChain
    base_frame: str | None
    fid: int
    revolute: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    check_lower: np.ndarray
    check_upper: np.ndarray

    def alternates(self, qc: np.ndarray) -> list[np.ndarray]:
        """``qc`` and its +-2 pi variants inside the effective limits (``qc`` first)."""
        options = []
        for k in range(qc.shape[0]):
            values = [qc[k]]
            if self.revolute[k]:
                lo, hi = self.lower[k] - LIMIT_SLACK, self.upper[k] + LIMIT_SLACK
                values.extend(two_pi_turns(qc[k], lo, hi))
            options.append(values)
        return [np.array(c) for c in itertools.product(*options)]


def two_pi_turns(value: float, lo: float, hi: float) -> list[float]:
    """``value + 2 pi k`` for every k != 0 that stays in ``[lo, hi]`` (positive k first)."""
    out = []
    for sgn in (1.0, -1.0):
        v = value + sgn * _TWO_PI
        while lo <= v <= hi:
            out.append(v)
            v += sgn * _TWO_PI
    return out


def _bounded_cache_put(cache: dict, key: object, value: object) -> None:
    if len(cache) >= _CACHE_SIZE:
        cache.pop(next(iter(cache)))
    cache[key] = value


class ChainCatalog:
    """Serial chains of one robot by tip frame, and the search setups built on them.

    Args:
        robot: The robot description.
    """

    def __init__(self, robot: RobotModel) -> None:
        self._robot = robot
        self._bases: dict[str, str | None] = {}
        self._plain: dict[tuple, SerialChain] = {}
        self._setups: dict[tuple, ChainSetup] = {}
        self._branch_ok: set[SerialChain] = set()

    def frame(self, frame_name: str) -> tuple[int, str | None]:
        """Frame id and chain base frame: the last joint on the path a chain cannot model.

        Raises:
            FrameNotFound: Unknown frame.
        """
        robot = self._robot
        fid = robot.get_frame_id(frame_name)
        if frame_name not in self._bases:
            model = robot.model
            infos = robot.joint_infos
            cut = 0
            for jid in list(model.supports[model.frames[fid].parentJoint])[1:]:
                if not infos[jid - 1].kind.is_scalar:
                    cut = jid
            base = None
            if cut:
                base = model.names[cut]
                if not model.existFrame(base):  # pragma: no cover - Pinocchio names joint frames
                    base = next(f.name for f in model.frames if f.parentJoint == cut)
            self._bases[frame_name] = base
        return fid, self._bases[frame_name]

    def plain(self, frame_name: str) -> SerialChain:
        """The chain to ``frame_name`` with the model's own limits (cached).

        Raises:
            FrameNotFound: Unknown frame.
            InvalidInput: A joint on the path is not supported by :class:`SerialChain`.
        """
        robot = self._robot
        _, base = self.frame(frame_name)
        lo, hi = robot.get_joint_limits()
        key = (frame_name, lo.tobytes(), hi.tobytes(), robot.base_placement.homogeneous.tobytes())
        chain = self._plain.get(key)
        if chain is None:
            chain = SerialChain.from_robot(robot, frame_name, base)
            chain.warm_up()
            _bounded_cache_put(self._plain, key, chain)
        return chain

    def branch_chain(self, frame_name: str) -> SerialChain:
        """The plain chain of ``frame_name``, checked (once) to have branch flags.

        Raises:
            InvalidInput: The chain has no branch flags (not a 6R arm of the right shape).
        """
        chain = self.plain(frame_name)
        if chain not in self._branch_ok:
            check_branch_structure(chain)
            self._branch_ok.add(chain)
        return chain

    def _locks(
        self, plain: SerialChain, locked_joints: Sequence[str], q_ref: np.ndarray
    ) -> dict[int, float]:
        """Chain index -> held value of each locked joint on the chain."""
        robot = self._robot
        if isinstance(locked_joints, str):
            locked_joints = [locked_joints]
        locks: dict[int, float] = {}
        for name in locked_joints:
            if not isinstance(name, str) or not robot.has_joint(name):
                raise JointNotFound(str(name), robot.get_joint_names())
            jid = robot.get_pinocchio_joint_id(name)
            if jid in plain.joint_ids:
                k = plain.joint_ids.index(jid)
                if plain.continuous[k]:
                    raise InvalidInput(f"joint {name!r} is continuous and cannot be locked")
                locks[k] = float(q_ref[plain.idx_q[k]])
        locks.update(self._follower_locks(plain, locks, q_ref))
        return locks

    def _follower_locks(
        self, plain: SerialChain, locks: dict[int, float], q_ref: np.ndarray
    ) -> dict[int, float]:
        """Kept mimic followers on the chain whose leader is off it: held at their value.

        Such a follower is fixed by a joint the query holds at ``q_ref``, so it is pinned
        at ``m q_leader + c`` (``q_ref`` coupled). A follower whose leader is also on the
        chain stays free in the search; its candidates are coupled and checked again
        (:meth:`~stackik.ik.checks.CandidateChecker.coupled`).
        """
        robot = self._robot
        kept = robot.kept_mimic_joints
        if not kept:
            return {}
        coupled = robot.apply_mimic(q_ref)
        out: dict[int, float] = {}
        for follower, leader, _, _ in kept:
            jf = robot.get_pinocchio_joint_id(follower)
            jl = robot.get_pinocchio_joint_id(leader)
            if jf in plain.joint_ids and jl not in plain.joint_ids:
                k = plain.joint_ids.index(jf)
                if k not in locks and not plain.continuous[k]:
                    out[k] = float(coupled[plain.idx_q[k]])
        return out

    def setup(
        self, frame_name: str, locked_joints: Sequence[str], q_ref: np.ndarray, margin: float
    ) -> ChainSetup:
        """The search chain: model limits shrunk by ``margin``, locked joints pinned.

        Raises:
            FrameNotFound, JointNotFound: Unknown frame or locked joint.
            InvalidInput: A continuous joint is locked; an unsupported joint on the path.
        """
        fid, base = self.frame(frame_name)
        plain = self.plain(frame_name)
        locks = self._locks(plain, locked_joints, q_ref)
        key = (plain, fid, margin, tuple(sorted(locks.items())))
        setup = self._setups.get(key)
        if setup is None:
            setup = self._build_setup(plain, frame_name, base, fid, margin, locks)
            _bounded_cache_put(self._setups, key, setup)
        return setup

    def _build_setup(
        self,
        plain: SerialChain,
        frame_name: str,
        base: str | None,
        fid: int,
        margin: float,
        locks: dict[int, float],
    ) -> ChainSetup:
        lower, upper = _shrunk_limits(plain.lower, plain.upper, margin)
        for k, v in locks.items():
            lower[k] = upper[k] = v
        robot = self._robot
        infos = robot.joint_infos
        revolute = np.array(
            [infos[j - 1].kind == JointKind.REVOLUTE for j in plain.joint_ids], dtype=bool
        )
        chain = plain
        if locks or margin > 0:
            copy = pin.Model(robot.model)
            lo = copy.lowerPositionLimit.copy()
            hi = copy.upperPositionLimit.copy()
            for k in range(plain.n):
                if not plain.continuous[k]:
                    lo[plain.idx_q[k]] = lower[k]
                    hi[plain.idx_q[k]] = upper[k]
            copy.lowerPositionLimit, copy.upperPositionLimit = lo, hi
            chain = SerialChain.from_model(copy, frame_name, base)
        raw_lo, raw_hi = robot.get_joint_limits()
        cont = plain.continuous
        check_lower = np.maximum(lower, np.where(cont, -np.inf, raw_lo[plain.idx_q]))
        check_upper = np.minimum(upper, np.where(cont, np.inf, raw_hi[plain.idx_q]))
        return ChainSetup(
            chain,
            base,
            fid,
            revolute,
            lower,
            upper,
            check_lower - LIMIT_SLACK,
            check_upper + LIMIT_SLACK,
        )


def _shrunk_limits(
    lower: np.ndarray, upper: np.ndarray, margin: float
) -> tuple[np.ndarray, np.ndarray]:
    """Bounded limits moved ``margin`` inward; a range narrower than that becomes its middle."""
    lower, upper = lower.copy(), upper.copy()
    if margin > 0:
        bounded = np.isfinite(lower) & np.isfinite(upper)
        lower[bounded] += margin
        upper[bounded] -= margin
        narrow = bounded & (lower > upper)
        mid = 0.5 * (lower + upper)
        lower[narrow] = upper[narrow] = mid[narrow]
    return lower, upper
