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
from collections.abc import Sequence
from typing import Any

import numpy as np
import pinocchio as pin

from .. import _validate
from ..analytic import AnalyticDetection, AnalyticSolver, ChainGeometry, detect
from ..constraints.collision import CollisionConstraint
from ..engine import VelocityEngine
from ..errors import InvalidInput
from ..model import RobotModel
from ..model.joints import JointKind
from ..results import FindConfigsResult
from ..spatial import as_se3
from .allbranches import analytic_branches, branch_combinations, search_branches
from .branches import BranchFlags, BranchGeometry, as_branch, flags_at, matches
from .chain import SerialChain
from .chains import LIMIT_SLACK, ChainCatalog, ChainSetup, two_pi_turns
from .checks import CandidateChecker, CollisionWatch, Validator, Workspace
from .query import SearchOutcome, SearchQuery

__all__ = ["GlobalIK", "SearchOutcome", "SearchQuery"]

#: Default ``min_joint_distance`` of ``all_branches`` on redundant chains [rad or m].
REDUNDANT_SEPARATION = 0.25
#: Limit given to unbounded joints of the branch search's chain (SerialChain's "no limit").
_FREE = 1e10


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
        self._detections: dict[tuple[str, int], AnalyticDetection] = {}
        self._branch_geometries: dict[tuple[str, int], BranchGeometry | None] = {}
        self._free_chains: dict[tuple[str, bytes, bytes, int], SerialChain] = {}

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
        """Pairs and minimum distances of the engine's collision constraint (None without).

        Every pair the constraint watches (robot, attached objects, world obstacles) at
        its current minimum distance (global, obstacle's own or per-pair override).
        """
        col = self._engine.get_constraint("collision")
        if not isinstance(col, CollisionConstraint) or not col.active:
            return None
        return col.watch()

    def checker(
        self,
        setup: ChainSetup,
        target: pin.SE3 | None,
        tol_p: float,
        tol_o: float,
        validate: Validator | None,
    ) -> CandidateChecker:
        """A candidate checker for one query (the layer's workspace, the engine's pairs)."""
        self.workspace.prepare()  # its data, created before a query's budget starts
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
        if query.branch is not None:
            target = query.branch_target
            flags = target.flags(qc) if target is not None else flags_at(query.setup.chain, qc)
            if not matches(flags, query.branch):
                found.rejected["branch"] += 1
                return
        q, qc, _ = query.checker.coupled(query.setup.chain.to_full(qc, query.q_ref), qc)
        why = query.checker.reason(q, qc)
        if why:
            found.rejected[why] += 1
            return
        found.q.append(q)
        found.qc.append(qc)

    # -- public API --------------------------------------------------------------------------
    def prepare(self, frame_name: str) -> None:
        """Build (and compile or load) the chain of ``frame_name`` now, off the hot path.

        Also detects (and verifies) the closed-form solver of the frame's chain, reads
        its branch geometry and creates the scratch data the candidate checks use.
        """
        self.workspace.prepare()
        self.chains.plain(frame_name).iteration_cost()
        self.branch_geometry(frame_name)
        setup = self.setup(frame_name, (), self.reference(None))
        free = self._free_chain(setup, frame_name)
        if free is not None:
            free.iteration_cost()
        detection = self.analytic(frame_name)
        if detection.solver is not None:
            g = detection.solver.geometry
            detection.solver.solve_raw(g.tip[:3, :3].copy(), g.tip[:3, 3].copy())

    # -- closed forms and branch flags, per frame (rebuilt when the description changes) -----
    def analytic(self, frame_name: str) -> AnalyticDetection:
        """The closed-form solver of the chain to ``frame_name``, or why none applies.

        Raises:
            FrameNotFound: Unknown frame.
        """
        key = (frame_name, self._robot.revision)
        detection = self._detections.get(key)
        if detection is None:
            _, base = self.chains.frame(frame_name)
            detection = detect(self._robot.model, frame_name, base)
            self._detections[key] = detection
        return detection

    def branch_geometry(self, frame_name: str) -> BranchGeometry | None:
        """What the flags of the chain to ``frame_name`` need (None: the arm has none)."""
        key = (frame_name, self._robot.revision)
        if key not in self._branch_geometries:
            geo = None
            try:
                self.chains.branch_chain(frame_name)
                _, base = self.chains.frame(frame_name)
                lines = ChainGeometry.from_model(self._robot.model, frame_name, base)
                geo = BranchGeometry.from_lines(lines.axes, lines.points, lines.tip)
            except InvalidInput:
                geo = None
            self._branch_geometries[key] = geo
        return self._branch_geometries[key]

    def _closed_form(
        self, frame_name: str, analytic: bool, setup: ChainSetup, locked: Sequence[str]
    ) -> AnalyticSolver | None:
        """The solver a query uses: None when switched off, with locks, or when none applies."""
        if not analytic or locked:
            return None
        solver = self.analytic(frame_name).solver
        if solver is None or list(solver.geometry.joint_ids) != list(setup.chain.joint_ids):
            return None
        return solver

    def find(
        self,
        target_pose: object,
        frame_name: str,
        max_solutions: int | None,
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
        all_branches: bool = False,
        analytic: bool = True,
        min_joint_distance: float | None = None,
    ) -> FindConfigsResult:
        """find_configs / nearest_config: search, then sort (nearest: over the variants).

        See :meth:`stackik.KinematicsSolver.find_configs` for the arguments.
        """
        t0 = time.perf_counter()
        T = as_se3(target_pose, "target_pose")
        q_ref = self.reference(reference_q)
        if self._robot.kept_mimic_joints:  # joints off the chain are held at q_ref
            q_ref = self._robot.apply_mimic(q_ref)
        all_branches = _validate.flag(all_branches, "all_branches")
        include_alternates = _validate.flag(include_alternates, "include_alternates")
        analytic = _validate.flag(analytic, "analytic")
        n_max = self._max_solutions(max_solutions, all_branches)
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
        solver = self._closed_form(frame_name, analytic, setup, locked_joints)
        geo = self.branch_geometry(frame_name) if setup.chain.n == 6 else None
        checker = self.checker(setup, T, tol_p, tol_o, validate)
        T_base = self.target_in_base(setup, T, q_ref)
        R = np.ascontiguousarray(T_base.rotation)
        p = np.ascontiguousarray(T_base.translation)
        search_chain = self._free_chain(setup, frame_name) if all_branches else None
        if all_branches and solver is None:
            (search_chain or setup.chain).iteration_cost()  # measured once per chain
        # Chain preparation (first query of a frame) is not counted against the budget.
        query = SearchQuery(
            setup=setup,
            R=R,
            p=p,
            checker=checker,
            q_ref=q_ref,
            max_solutions=n_max,
            deadline=time.perf_counter() + budget,
            tol_p=tol_p,
            tol_o=tol_o,
            branch=wanted,
            distinct=distinct,
            max_attempts=max_attempts,
            include_alternates=include_alternates and not nearest,
            max_iterations=max_iterations,
            all_branches=all_branches,
            separation=self._separation(min_joint_distance, all_branches, setup, distinct),
            branch_geometry=geo,
            branch_target=geo.target(R, p) if geo is not None else None,
            expected=(
                len(branch_combinations(wanted))
                if geo is not None and geo.lateral is not None
                else None
            ),
            search_chain=search_chain,
        )
        rng_seed = 0 if seed is None else _validate.count(seed, "seed", 0, 2**63 - 1)
        if solver is not None:
            found = analytic_branches(query, solver)
        elif all_branches:
            found = search_branches(query, rng_seed)
        else:
            found = self.search(query, rng_seed)
        method = "numeric" if solver is None else f"analytic:{solver.family}"
        return self._result(query, found, w, nearest, include_alternates, method, t0)

    def _result(
        self,
        query: SearchQuery,
        found: SearchOutcome,
        w: np.ndarray,
        nearest: bool,
        include_alternates: bool,
        method: str,
        t0: float,
    ) -> FindConfigsResult:
        """Rank, cap, add the alternates (all_branches or closed form) and wrap up."""
        target = query.branch_target
        configs = list(found.q)
        flags: list[BranchFlags | None] = (
            list(found.flags)
            if found.flags
            else [target.flags(qc) if target is not None else None for qc in found.qc]
        )
        order = self._chain_order(query, configs, w)[: query.max_solutions]
        configs, flags = [configs[k] for k in order], [flags[k] for k in order]
        ids = list(range(len(configs)))  # a branch's id: its rank among the branches
        if nearest:
            configs = self._nearest(query, configs, w) if include_alternates else configs[:1]
            chain = query.setup.chain
            flags = [target.flags(chain.from_full(q)) if target else None for q in configs]
            ids = list(range(len(configs)))
        elif include_alternates and (query.all_branches or method != "numeric"):
            configs, flags, ids = self._with_alternates(query, configs, flags, ids, w)
            if not query.all_branches:  # the copies count toward max_solutions
                n = query.max_solutions
                configs, flags, ids = configs[:n], flags[:n], ids[:n]
        return FindConfigsResult(
            configs,
            dict(found.rejected),
            found.attempts,
            found.iterations,
            (time.perf_counter() - t0) * 1e3,
            found.stopped_by,
            query.deadline,
            branches=flags,
            branch_ids=ids,
            rejected_branches=found.branch_rejections,
            method=method,
        )

    def _with_alternates(
        self,
        query: SearchQuery,
        configs: list[np.ndarray],
        flags: list[BranchFlags | None],
        ids: list[int],
        w: np.ndarray,
    ) -> tuple[list[np.ndarray], list[BranchFlags | None], list[int]]:
        """Each branch followed by its other copies inside the limits that pass ``validate``."""
        chain = query.setup.chain
        out_q, out_f, out_i = [], [], []
        for q, f, i in zip(configs, flags, ids, strict=True):
            out_q.append(q)
            out_f.append(f)
            out_i.append(i)
            for alt in query.setup.alternates(chain.from_full(q))[1:]:
                full, alt, moved = query.checker.coupled(chain.to_full(alt, query.q_ref), alt)
                if moved and any(np.array_equal(full, o) for o in out_q):
                    continue  # a copy of a kept follower, undone by its coupling
                if not query.checker.reason(full, alt, check_pose=moved):
                    out_q.append(full)
                    out_f.append(f)
                    out_i.append(i)
        order = self._chain_order(query, out_q, w)
        return [out_q[k] for k in order], [out_f[k] for k in order], [out_i[k] for k in order]

    def _free_chain(self, setup: ChainSetup, frame_name: str) -> SerialChain | None:
        """The setup's chain with every revolute joint spanning a full turn unbounded.

        Such a joint reaches every angle modulo 2 pi inside its limits, so the branch
        search may cross them (the solution is folded back); Levenberg-Marquardt is then
        never stopped at an angle limit on its way. None when no joint qualifies.
        """
        wide = setup.revolute & (setup.upper - setup.lower >= 2.0 * math.pi - 1e-12)
        if not wide.any():
            return None
        key = (frame_name, setup.lower.tobytes(), setup.upper.tobytes(), self._robot.revision)
        chain = self._free_chains.get(key)
        if chain is None:
            plain = setup.chain
            model = pin.Model(plain.model)
            lo = model.lowerPositionLimit.copy()
            hi = model.upperPositionLimit.copy()
            for k in np.flatnonzero(wide):
                lo[plain.idx_q[k]], hi[plain.idx_q[k]] = -_FREE, _FREE
            model.lowerPositionLimit, model.upperPositionLimit = lo, hi
            chain = SerialChain.from_model(model, frame_name, setup.base_frame)
            if len(self._free_chains) >= 32:
                self._free_chains.pop(next(iter(self._free_chains)))
            self._free_chains[key] = chain
        return chain

    @staticmethod
    def _max_solutions(max_solutions: object, all_branches: bool) -> int:
        """The cap on configurations (None: 1, or no cap with all_branches)."""
        if max_solutions is None:
            return _validate.MAX_COUNT if all_branches else 1
        return _validate.count(max_solutions, "max_solutions")

    def _separation(
        self, min_joint_distance: object, all_branches: bool, setup: ChainSetup, distinct: float
    ) -> float:
        """Smallest joint distance between two branches [rad or m] (see find_configs)."""
        if min_joint_distance is not None:
            return _validate.positive_float(min_joint_distance, "min_joint_distance")
        if all_branches and setup.chain.n > 6:
            return REDUNDANT_SEPARATION
        return distinct

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

    @staticmethod
    def _chain_order(query: SearchQuery, configs: list[np.ndarray], w: np.ndarray) -> list[int]:
        """Indices of ``configs`` nearest ``reference_q`` first (stable).

        The configurations differ from the reference on the chain joints only, so the
        distance ``sqrt(sum w_i delta_q_i^2)`` of ``difference(reference_q, q)`` is computed
        on them, all rows at once (continuous joints: the wrapped angle difference).
        """
        if len(configs) <= 1:
            return list(range(len(configs)))
        chain = query.setup.chain
        Q = np.array(configs)
        cont = chain.continuous
        d = Q[:, chain.idx_q] - query.q_ref[chain.idx_q]
        for k in np.flatnonzero(cont):
            i = chain.idx_q[k]
            ref = math.atan2(query.q_ref[i + 1], query.q_ref[i])
            turn = np.arctan2(Q[:, i + 1], Q[:, i]) - ref
            d[:, k] = np.mod(turn + math.pi, 2 * math.pi) - math.pi
        dist = (d * d) @ w[chain.idx_v]
        return [int(k) for k in np.argsort(dist, kind="stable")]

    def _nearest(self, query: SearchQuery, found: list[np.ndarray], w: np.ndarray) -> list:
        """The nearest of every variant (2 pi turns included) that passes the checks."""
        if not found:
            return []
        chain, q_ref = query.setup.chain, query.q_ref
        ranked = []
        for q in found:
            for k, qc in enumerate(query.setup.alternates(chain.from_full(q))):
                alt, qc, moved = (
                    (q, qc, False)
                    if k == 0
                    else query.checker.coupled(chain.to_full(qc, q_ref), qc)
                )
                ranked.append((self._distance(q_ref, alt, w), k, alt, qc, moved))
        ranked.sort(key=lambda item: item[0])
        for _, k, alt, qc, moved in ranked:
            if k == 0:  # an original: it passed every check already
                return [alt]
            if time.perf_counter() >= query.deadline:
                continue  # no budget left to check a variant; the originals stay valid
            # A turn keeps the pose and every placement: limits and the callback are all
            # that can reject it.
            if not query.checker.reason(alt, qc, check_pose=moved):
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
