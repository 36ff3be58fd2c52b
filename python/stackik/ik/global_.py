"""Global IK: multi-start search for every configuration that reaches a pose.

Every query runs the compiled Levenberg-Marquardt search of
:class:`~stackik.ik.chain.SerialChain` on the chain to the target frame (see
:mod:`stackik.ik.chains`); each candidate is then checked on the full robot
(:mod:`stackik.ik.checks`). Rejected candidates send the search on from a new random
start until the time budget (or the attempt cap) runs out; the budget is checked before
every start, every candidate and every 2 pi alternate. Random draws come from one
``numpy`` generator seeded by ``seed``, so a query is reproducible whenever the time
budget does not cut it.

:class:`GlobalIK` is a layer above the velocity engine: it reads the engine's limit
margin and collision constraint and owns its own scratch data; it never imports the
solver facade.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pinocchio as pin

from .. import _validate
from ..constraints.collision import CollisionConstraint
from ..engine import VelocityEngine
from ..errors import InvalidInput
from ..model import RobotModel
from ..model.joints import JointKind
from ..results import FindConfigsResult
from ..spatial import as_se3
from .branches import BranchFlags, as_branch, flags_at, matches
from .chains import LIMIT_SLACK, ChainCatalog, ChainSetup, two_pi_turns
from .checks import CandidateChecker, CollisionWatch, Validator, Workspace

__all__ = ["GlobalIK", "SearchOutcome", "SearchQuery"]


@dataclass
class SearchQuery:
    """What one search looks for (immutable during the search)."""

    setup: ChainSetup
    R: np.ndarray
    p: np.ndarray
    checker: CandidateChecker
    q_ref: np.ndarray
    max_solutions: int
    deadline: float
    tol_p: float
    tol_o: float
    branch: tuple[int | None, int | None, int | None] | None
    distinct: float
    max_attempts: int | None
    include_alternates: bool
    max_iterations: int | None = None


@dataclass
class SearchOutcome:
    """What a search has found so far."""

    q: list[np.ndarray] = field(default_factory=list)
    qc: list[np.ndarray] = field(default_factory=list)
    rejected: Counter = field(default_factory=Counter)
    iterations: int = 0
    attempts: int = 0
    stopped_by: str = "max_solutions"


class GlobalIK:
    """Global IK on the robot of a velocity engine (find_configs, nearest, branches).

    Args:
        engine: The velocity engine whose robot, limit margin and collision constraint
            define what a valid configuration is.
    """

    def __init__(self, engine: VelocityEngine) -> None:
        self._engine = engine
        self._robot = engine.robot
        self.chains = ChainCatalog(engine.robot)
        self.workspace = Workspace(engine.robot)

    @property
    def robot(self) -> RobotModel:
        """The robot description."""
        return self._robot

    # -- shared with paths and batches -------------------------------------------------------
    def reference(self, reference_q: object | None) -> np.ndarray:
        """``reference_q`` checked and normalized; the engine's configuration when None."""
        if reference_q is None:
            return self._engine.kinematics.q.copy()
        return self._robot.normalize(reference_q)

    def setup(self, frame_name: str, locked_joints: Sequence[str], q_ref: np.ndarray) -> ChainSetup:
        """The chain setup of a query with the engine's current limit margin."""
        margin = self._engine.joint_limits.margin
        return self.chains.setup(frame_name, locked_joints, q_ref, margin)

    def collision_watch(self) -> CollisionWatch | None:
        """Pairs and minimum distances of the engine's collision constraint (None without)."""
        col = self._engine.get_constraint("collision")
        if not isinstance(col, CollisionConstraint) or not col.active:
            return None
        names = {pair: k for k, pair in enumerate(self._robot.get_collision_pair_names())}
        overrides = dict(col.pair_min_distance_overrides())
        pairs, thresholds = [], []
        for a, b in col.pair_names():
            k = names.get((a, b), names.get((b, a)))
            if k is None:
                continue
            pairs.append(k)
            thresholds.append(
                overrides.get(f"{a}|{b}", overrides.get(f"{b}|{a}", col.min_distance))
            )
        return CollisionWatch(np.array(pairs, dtype=int), np.array(thresholds, dtype=float))

    def checker(
        self,
        setup: ChainSetup,
        target: pin.SE3 | None,
        tol_p: float,
        tol_o: float,
        validate: Validator | None,
    ) -> CandidateChecker:
        """A candidate checker for one query (the layer's workspace, the engine's pairs)."""
        return CandidateChecker(
            self._robot,
            self.workspace,
            setup,
            target,
            tol_p,
            tol_o,
            validate,
            self.collision_watch(),
        )

    def target_in_base(self, setup: ChainSetup, T: pin.SE3, q_ref: np.ndarray) -> pin.SE3:
        """The world target expressed in the chain's base frame at ``q_ref``."""
        if setup.base_frame is None:
            return T
        base = self.workspace.frame_pose(q_ref, self._robot.get_frame_id(setup.base_frame))
        return base.actInv(T)

    # -- the search ------------------------------------------------------------------------
    def search(
        self,
        query: SearchQuery,
        rng: np.random.Generator | int,
        first_seed: np.ndarray | None = None,
    ) -> SearchOutcome:
        """Multi-start search; stops at ``max_solutions``, the deadline or the attempt cap.

        The first start is always made, even if the deadline has passed (a preempted
        thread): a search never returns without having tried.
        """
        chain = query.setup.chain
        seed = chain.from_full(query.q_ref) if first_seed is None else first_seed
        found = SearchOutcome()
        # The first start needs no draw (most queries end there): the generator is built
        # on the second start only.
        gen = rng if isinstance(rng, np.random.Generator) else None
        rng_seed = int(gen.integers(2**31)) if gen is not None else int(rng)  # type: ignore
        while len(found.q) < query.max_solutions:
            remaining = query.deadline - time.perf_counter()
            if remaining <= 0 and found.attempts:  # (the first start is always made)
                found.stopped_by = "time_budget"
                break
            if query.max_attempts is not None and found.attempts >= query.max_attempts:
                found.stopped_by = "max_attempts"
                break
            if query.max_iterations is not None and found.iterations >= query.max_iterations:
                found.stopped_by = "max_iterations"
                break
            if found.attempts:
                if gen is None:
                    gen = np.random.default_rng(rng)
                seed = chain.random_configuration(gen)
                rng_seed = int(gen.integers(2**31))
            self._attempt(query, found, seed, rng_seed, remaining)
        return found

    def _attempt(
        self,
        query: SearchQuery,
        found: SearchOutcome,
        seed: np.ndarray,
        rng_seed: int,
        remaining: float,
    ) -> None:
        """One LM start, then the robot-level test of its candidates."""
        left = None if query.max_iterations is None else query.max_iterations - found.iterations
        # Without a deadline an attempt is one start (no restarts inside the compiled
        # search), so max_attempts counts starts and bounds the work.
        unbounded = math.isinf(query.deadline)
        res = query.setup.chain.solve(
            query.R,
            query.p,
            seed,
            time_budget=min(max(remaining, 1e-6), _validate.MAX_MAGNITUDE),
            position_tolerance=query.tol_p,
            orientation_tolerance=query.tol_o,
            rng_seed=rng_seed,
            max_iterations=left,
            **({"max_restarts": 0} if unbounded else {}),
        )
        found.attempts += 1
        found.iterations += res.iterations
        if not res.success:
            late = time.perf_counter() >= query.deadline
            found.rejected["budget" if late else "unreachable"] += 1
            return
        candidates = query.setup.alternates(res.q) if query.include_alternates else [res.q]
        for k, qc in enumerate(candidates):
            if len(found.q) >= query.max_solutions:
                break
            if time.perf_counter() >= query.deadline:  # checked before every candidate
                found.rejected["budget"] += len(candidates) - k
                break
            self._consider(query, found, qc)

    def _consider(self, query: SearchQuery, found: SearchOutcome, qc: np.ndarray) -> None:
        if any(np.max(np.abs(qc - f)) < query.distinct for f in found.qc):
            found.rejected["duplicate"] += 1
            return
        if query.branch is not None and not matches(flags_at(query.setup.chain, qc), query.branch):
            found.rejected["branch"] += 1
            return
        q = query.setup.chain.to_full(qc, query.q_ref)
        why = query.checker.reason(q, qc)
        if why:
            found.rejected[why] += 1
            return
        found.q.append(q)
        found.qc.append(qc)

    # -- public API --------------------------------------------------------------------------
    def prepare(self, frame_name: str) -> None:
        """Build (and compile or load) the chain of ``frame_name`` now, off the hot path."""
        self.chains.plain(frame_name).iteration_cost()

    def find(
        self,
        target_pose: object,
        frame_name: str,
        max_solutions: int,
        time_budget: float | None,
        reference_q: object | None,
        validate: Validator | None,
        seed: int | None,
        *,
        branch: object | None = None,
        locked_joints: Sequence[str] = (),
        metric: object | None = None,
        position_tolerance: float = 1e-5,
        orientation_tolerance: float = 1e-4,
        distinct_tolerance: float = 1e-3,
        include_alternates: bool = False,
        max_attempts: int | None = None,
        nearest: bool = False,
        max_iterations: int | None = None,
    ) -> FindConfigsResult:
        """find_configs / nearest_config: search, then sort (nearest: over the variants).

        See :meth:`stackik.KinematicsSolver.find_configs` for the arguments.
        """
        t0 = time.perf_counter()
        T = as_se3(target_pose, "target_pose")
        q_ref = self.reference(reference_q)
        n_max = _validate.count(max_solutions, "max_solutions")
        budget = self._budget(time_budget, max_attempts, max_iterations)
        if max_attempts is not None:
            max_attempts = _validate.count(max_attempts, "max_attempts")
        if max_iterations is not None:
            max_iterations = _validate.count(max_iterations, "max_iterations")
        tol_p = _validate.positive_float(position_tolerance, "position_tolerance")
        tol_o = _validate.positive_float(orientation_tolerance, "orientation_tolerance")
        distinct = _validate.positive_float(distinct_tolerance, "distinct_tolerance", True)
        w = self._metric(metric)
        wanted = as_branch(branch)
        setup = self.setup(frame_name, locked_joints, q_ref)
        if wanted is not None:
            self.chains.branch_chain(frame_name)
        checker = self.checker(setup, T, tol_p, tol_o, validate)
        T_base = self.target_in_base(setup, T, q_ref)
        # Chain preparation (first query of a frame) is not counted against the budget.
        query = SearchQuery(
            setup=setup,
            R=T_base.rotation,
            p=T_base.translation,
            checker=checker,
            q_ref=q_ref,
            max_solutions=n_max,
            deadline=time.perf_counter() + budget,
            tol_p=tol_p,
            tol_o=tol_o,
            branch=wanted,
            distinct=distinct,
            max_attempts=max_attempts,
            include_alternates=bool(include_alternates) and not nearest,
            max_iterations=max_iterations,
        )
        found = self.search(query, 0 if seed is None else int(seed))
        configs = self._ranked(found.q, q_ref, w)
        if nearest:
            configs = self._nearest(query, configs, w) if include_alternates else configs[:1]
        return FindConfigsResult(
            configs,
            dict(found.rejected),
            found.attempts,
            found.iterations,
            (time.perf_counter() - t0) * 1e3,
            found.stopped_by,
            query.deadline,
        )

    @staticmethod
    def _budget(time_budget: object, max_attempts: object, max_iterations: object) -> float:
        """The wall-clock budget [s]; ``None`` (no deadline) needs a count cap instead."""
        if time_budget is not None:
            return _validate.positive_float(time_budget, "time_budget")
        if max_attempts is None and max_iterations is None:
            raise InvalidInput(
                "time_budget=None needs max_attempts or max_iterations (else the search "
                "would never stop on an unreachable target)",
                what="time_budget",
            )
        return math.inf

    def _metric(self, metric: object | None) -> np.ndarray:
        nv = self._robot.nv
        w = np.ones(nv) if metric is None else _validate.vector(metric, nv, "metric")
        if (w < 0).any():
            raise InvalidInput("metric weights must be >= 0")
        return w

    def _distance(self, q_ref: np.ndarray, q: np.ndarray, w: np.ndarray) -> float:
        return float(np.sqrt(w @ self._robot.difference(q_ref, q) ** 2))

    def _ranked(self, configs: list[np.ndarray], q_ref: np.ndarray, w: np.ndarray) -> list:
        if len(configs) <= 1:
            return configs
        dist = [self._distance(q_ref, q, w) for q in configs]
        return [configs[k] for k in np.argsort(dist, kind="stable")]

    def _nearest(self, query: SearchQuery, found: list[np.ndarray], w: np.ndarray) -> list:
        """The nearest of every variant (2 pi turns included) that passes the checks."""
        if not found:
            return []
        chain, q_ref = query.setup.chain, query.q_ref
        ranked = []
        for q in found:
            for k, qc in enumerate(query.setup.alternates(chain.from_full(q))):
                alt = q if k == 0 else chain.to_full(qc, q_ref)
                ranked.append((self._distance(q_ref, alt, w), k, alt, qc))
        ranked.sort(key=lambda item: item[0])
        for _, k, alt, qc in ranked:
            if k == 0:  # an original: it passed every check already
                return [alt]
            if time.perf_counter() >= query.deadline:
                continue  # no budget left to check a variant; the originals stay valid
            # A turn keeps the pose and every placement: limits and the callback are all
            # that can reject it.
            if not query.checker.reason(alt, qc, check_pose=False):
                return [alt]
        return []  # pragma: no cover - the originals passed the checks

    def branch_flags(self, q: object, frame_name: str) -> BranchFlags:
        """Branch flags of a configuration of a 6R arm (see :mod:`stackik.ik.branches`)."""
        qv = self._robot.normalize(q)
        chain = self.chains.branch_chain(frame_name)
        return flags_at(chain, chain.from_full(qv))

    def alternate_configs(self, q: object, validate: Validator | None = None) -> list[np.ndarray]:
        """Configurations equal to ``q`` up to 2 pi turns of revolute joints (``q`` first)."""
        robot = self._robot
        qv = robot.normalize(q)
        lo, hi = robot.get_joint_limits()
        choices: list[tuple[int, list[float]]] = []
        for info in robot.joint_infos:
            if info.kind != JointKind.REVOLUTE:
                continue
            i = info.idx_q
            values = [qv[i], *two_pi_turns(qv[i], lo[i] - LIMIT_SLACK, hi[i] + LIMIT_SLACK)]
            if len(values) > 1:
                choices.append((i, values))
        out = []
        for combo in itertools.product(*(values for _, values in choices)):
            alt = qv.copy()
            for (i, _), v in zip(choices, combo, strict=True):
                alt[i] = v
            if validate is None or bool(validate(alt.copy())):
                out.append(alt)
        return out

    def __getstate__(self) -> dict[str, Any]:
        # Caches of compiled chains and scratch data are rebuilt where they are used.
        return {"_engine": self._engine}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["_engine"])  # type: ignore[misc]
