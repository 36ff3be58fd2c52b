"""One chunk of a study: envelope rejection, neighbour seeding, restarts, verification.

A chunk is a few thousand spatially coherent targets. :class:`ChunkSolver` (one per
worker) solves it in batched stages, each one compiled loop over many targets
(:meth:`~stackik.ik.chain.SerialChain.solve_batch`), so Python's cost is per stage, not per
target:

1. **Envelope**: targets outside the reach envelope are ``OUT_OF_REACH`` (no IK).
2. **Reference**: every other target gets one attempt from the reference configuration.
3. **Neighbours** (REACH's seeding): waves in which each unsolved target is attempted
   from the solution of its nearest solved neighbour it has not tried yet (neighbours:
   the ``k`` nearest targets of the chunk in ``sqrt(|dp|^2 + (s theta)^2)``), until no
   target has an untried solved neighbour or its seeded attempts are spent.
4. **Restarts**: rounds from random configurations (seeded per chunk and round).
5. **Neighbours** again, for the targets next to those the restarts solved.
6. **Limits probe**: a short search without joint limits for the rest. A pose it reaches
   outside the limits gets ``limits_confirm_rounds`` more rounds inside the limits (from
   that solution clamped into the limits, then from random configurations) before it
   may be called ``LIMITS``.
7. **Classification** of the rest: ``WORLD_COLLISION`` when a configuration reached the
   pose inside the limits and free of self-collision but touched the world (whatever
   the other candidates did), else ``COLLISION`` / ``CONSTRAINT`` when configurations
   reached the pose but all were rejected, ``LIMITS`` when only the search without
   limits reached it, else ``NO_IK`` (``BUDGET`` when the opt-in wall-clock cap cut it).

Every converged configuration is verified on the full robot
(:class:`~stackik.reach.verify.CandidateVerifier`) before it counts or seeds a neighbour.
The result depends only on the chunk's targets, the solver and the spec: the same on any
executor, with any number of workers, after any resume.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pinocchio as pin

from ..constraints.collision import CollisionConstraint
from ..constraints.com_polygon import ComPolygonConstraint
from ..ik.chain import SerialChain
from ..ik.global_ import GlobalIK
from ..model.world import World
from .envelope import ChainGeometry, ReachEnvelope
from .evaluators import EvaluationContext, combine
from .settings import Reason, StudySpec, chunk_seed
from .verify import COLLISION, CONSTRAINT, LIMITS, OK, WORLD, CandidateVerifier, study_world_watch

__all__ = ["ChunkResult", "ChunkSolver"]

#: Stage numbers mixed into the restart seeds (restart round r: ``_STAGE_RESTART + 1 + r``,
#: limits confirmation round r: ``_STAGE_CONFIRM + 1 + r``; at most 1000 rounds each).
_STAGE_REFERENCE, _STAGE_NEIGHBOR, _STAGE_PROBE, _STAGE_RESTART = 0, 1, 2, 3
_STAGE_CONFIRM = 2000
#: Iteration-equivalent cost of a target's fixed work, to apportion a chunk's time.
_FIXED_COST_INSIDE, _FIXED_COST_OUTSIDE = 20.0, 0.2


@dataclass
class ChunkResult:
    """Arrays of one chunk, in the chunk's target order.

    Attributes:
        chunk: Chunk index.
        reason: :class:`~stackik.reach.Reason` codes (int8).
        q: Accepted configurations, NaN rows where unreachable (m, nq) [rad or m].
        score: Combined evaluator score in [0, 1] (0 where unreachable).
        scores: Each evaluator's score (0 where unreachable).
        position_error: Frame position error of ``q`` by Pinocchio FK (inf: none) [m].
        orientation_error: Its orientation error (inf: none) [rad].
        iterations: Levenberg-Marquardt iterations spent on each target.
        solve_time: The chunk's wall time apportioned by iterations [s] (not reproducible).
        elapsed: Wall time of the chunk [s].
        cpu_time: CPU time of the chunk's process [s].
        timings: Wall time by stage [s]: ``envelope``, ``ik`` (compiled searches),
            ``verify`` (full-robot tests), ``neighbors`` (the k-d tree), ``evaluate``
            and ``other``.
    """

    chunk: int
    reason: np.ndarray
    q: np.ndarray
    score: np.ndarray
    scores: dict[str, np.ndarray]
    position_error: np.ndarray
    orientation_error: np.ndarray
    iterations: np.ndarray
    solve_time: np.ndarray
    elapsed: float = 0.0
    cpu_time: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def reachable(self) -> np.ndarray:
        """Targets with reason ``REACHABLE``."""
        return self.reason == Reason.REACHABLE


@dataclass
class _State:
    """Progress of one chunk."""

    m: int
    n: int
    solved: np.ndarray = field(init=False)
    qc: np.ndarray = field(init=False)
    iters: np.ndarray = field(init=False)
    rejected: np.ndarray = field(init=False)
    world_hit: np.ndarray = field(init=False)
    tries: np.ndarray = field(init=False)
    timings: dict[str, float] = field(init=False)

    def __post_init__(self) -> None:
        self.timings = dict.fromkeys(("envelope", "ik", "verify", "neighbors", "evaluate"), 0.0)
        self.solved = np.zeros(self.m, dtype=bool)
        self.qc = np.zeros((self.m, self.n))
        self.iters = np.zeros(self.m, dtype=np.int64)
        self.rejected = np.zeros(self.m, dtype=np.int8)  # last rejection code (0: none)
        self.world_hit = np.zeros(self.m, dtype=bool)  # a candidate touched only the world
        self.tries = np.zeros(self.m, dtype=np.int64)


class ChunkSolver:
    """Solves chunks of a study in one process (built once per worker).

    Args:
        solver: The :class:`~stackik.KinematicsSolver` that defines "reachable" (its limit
            margin, collision constraint and CoM polygons).
        spec: The study's spec.
        envelope: The reach envelope of the frame (None: no rejection).
        world: The study's frozen world (None: none; its robot-world pairs are checked).
        same_world: Whether ``world`` is a snapshot of the world the solver's collision
            constraint reads: its exclusions and per-pair minimums then apply to it by
            name; otherwise only those named by the robot alone do (see
            :func:`~stackik.reach.verify.study_world_watch`).
    """

    def __init__(
        self,
        solver: Any,
        spec: StudySpec,
        envelope: ReachEnvelope | None,
        world: World | None = None,
        same_world: bool = False,
    ) -> None:
        self.spec = spec
        robot = solver.robot
        self.robot = robot
        gik = GlobalIK(solver.engine)
        q_ref = robot.normalize(spec.reference_q)
        self.q_ref = q_ref
        self.setup = gik.setup(spec.frame, spec.locked_joints, q_ref)
        self.chain = self.setup.chain
        self.q_ref_chain = self.chain.from_full(q_ref)
        self.envelope = envelope if spec.envelope else None
        coms = [
            c
            for c in solver.constraints
            if isinstance(c, ComPolygonConstraint) and getattr(c, "active", True)
        ]
        watch = gik.collision_watch()  # (one snapshot: its pairs, names and geometries)
        col = solver.get_constraint("collision")
        with_col = watch is not None and isinstance(col, CollisionConstraint)
        rules = None
        if with_col and not same_world:  # (its names of world objects mean its own world's)
            assert watch is not None and watch.state is not None
            exclude, overrides = col.name_rules()
            rules = (exclude, overrides, frozenset(watch.state.layout.names()))
        self.verifier = CandidateVerifier(
            robot,
            self.setup,
            q_ref,
            watch,
            coms,
            spec.validate,
            spec.position_tolerance,
            spec.orientation_tolerance,
            study_world_watch(
                robot,
                world,
                watch,
                watch.names if with_col and watch is not None else None,
                float(col.min_distance) if with_col else 0.0,
                watch.geometry_names if with_col and watch is not None else (),
                rules,
            ),
        )
        self.base_inverse = None
        if self.setup.base_frame is not None:
            fid = robot.get_frame_id(self.setup.base_frame)
            self.base_inverse = gik.workspace.frame_pose(q_ref, fid).inverse().homogeneous
        self.free_chain = _unlimited_chain(self.chain)
        geom = ChainGeometry.of(self.chain)
        self.sample_lower, self.sample_upper = geom.sample_lower, geom.sample_upper
        self.turns = ~geom.prismatic & ~self.chain.continuous
        raw_lo, raw_hi = robot.get_joint_limits()
        cont = self.chain.continuous
        idx = self.chain.idx_q
        self.model_lower = np.where(cont, -np.inf, raw_lo[idx])
        self.model_upper = np.where(cont, np.inf, raw_hi[idx])

    # -- the stages ----------------------------------------------------------------------------
    def solve(self, chunk: int, poses: np.ndarray) -> ChunkResult:
        """Solve one chunk of world target poses ``(m, 4, 4)``; see the module."""
        t0 = time.perf_counter()
        c0 = time.process_time()
        spec = self.spec
        m = len(poses)
        T = poses if self.base_inverse is None else self.base_inverse @ poses
        T = np.ascontiguousarray(T)
        st = _State(m, self.chain.n)
        inside = self.envelope.contains(T) if self.envelope is not None else np.ones(m, bool)
        st.timings["envelope"] = time.perf_counter() - t0
        out_q = np.full((m, self.robot.nq), np.nan)
        ep = np.full(m, np.inf)
        eo = np.full(m, np.inf)
        deadline = math.inf if spec.time_budget is None else t0 + spec.time_budget * m
        ctx = (T, poses, out_q, ep, eo)
        todo = np.flatnonzero(inside)
        if spec.seeding != "random" and todo.size:
            seeds = np.broadcast_to(self.q_ref_chain, (todo.size, self.chain.n))
            self._attempt(st, ctx, todo, seeds, chunk, _STAGE_REFERENCE, restart=False)
        tn = time.perf_counter()
        neighbors = self._neighbors(T, inside) if spec.seeding == "neighbors" else None
        st.timings["neighbors"] = time.perf_counter() - tn
        if neighbors is not None:
            self._propagate(st, ctx, inside, neighbors, chunk, deadline)
        found_by_restarts = self._restarts(st, ctx, inside, chunk, deadline)
        if neighbors is not None and found_by_restarts:
            st.tries[:] = 0
            self._propagate(st, ctx, inside, neighbors, chunk, deadline)
        if time.perf_counter() < deadline:
            self._probe(st, ctx, inside, chunk, deadline)
        reason = self._classify(st, inside, deadline)
        te = time.perf_counter()
        scores, score = self._evaluate(st, poses, out_q)
        st.timings["evaluate"] = time.perf_counter() - te
        elapsed = time.perf_counter() - t0
        st.timings["other"] = elapsed - sum(st.timings.values())
        weight = st.iters + np.where(inside, _FIXED_COST_INSIDE, _FIXED_COST_OUTSIDE)
        solve_time = (elapsed * weight / max(float(weight.sum()), 1e-12)).astype(np.float32)
        return ChunkResult(
            chunk,
            reason.astype(np.int8),
            out_q,
            score,
            scores,
            ep,
            eo,
            np.minimum(st.iters, np.iinfo(np.int32).max).astype(np.int32),
            solve_time,
            elapsed,
            time.process_time() - c0,
            st.timings,
        )

    def _attempt(
        self,
        st: _State,
        ctx: tuple,
        idx: np.ndarray,
        seeds: np.ndarray,
        chunk: int,
        stage: int,
        restart: bool,
    ) -> int:
        """Solve targets ``idx`` from ``seeds`` in one batch and verify what converged.

        Returns:
            The number of targets accepted.
        """
        if not idx.size:
            return 0
        T = ctx[0]
        b = self.spec.budget
        cap = b.restart_iterations if restart else b.attempt_iterations
        ti = time.perf_counter()
        rows, ok = self.chain.solve_batch(
            T[idx],
            np.ascontiguousarray(seeds),
            max_iterations=cap,
            max_restarts=1_000_000 if restart else 0,
            attempt_iterations=100 if restart else cap,
            position_tolerance=self.spec.position_tolerance,
            orientation_tolerance=self.spec.orientation_tolerance,
            rng_seed=chunk_seed(self.spec.seed, chunk, stage),
            return_success=True,
        )
        st.iters[idx] += rows[:, 0].astype(np.int64)
        st.timings["ik"] += time.perf_counter() - ti
        return self._verify(st, ctx, idx[ok], rows[ok, 2:])

    def _verify(self, st: _State, ctx: tuple, conv: np.ndarray, Qc: np.ndarray) -> int:
        """Verify the converged chain solutions ``Qc`` of targets ``conv`` on the robot.

        Accepted targets are marked solved with their configuration and errors; the
        others get the verifier's rejection code.

        Returns:
            The number of targets accepted.
        """
        if not conv.size:
            return 0
        _, poses, out_q, ep, eo = ctx
        tv = time.perf_counter()
        codes, Q, e_p, e_o = self.verifier.check(Qc, poses[conv])
        st.timings["verify"] += time.perf_counter() - tv
        good = codes == OK
        acc = conv[good]
        st.solved[acc] = True
        st.qc[acc] = Qc[good]
        out_q[acc] = Q[good]
        ep[acc], eo[acc] = e_p[good], e_o[good]
        st.rejected[conv[~good]] = codes[~good]
        st.world_hit[conv[codes == WORLD]] = True
        return int(acc.size)

    def _neighbors(self, T: np.ndarray, inside: np.ndarray) -> np.ndarray | None:
        """The ``k`` nearest other targets inside the envelope of each such target, (m, k).

        Rows of targets outside the envelope are never read. None when fewer than two
        targets are inside.
        """
        idx = np.flatnonzero(inside)
        m = idx.size
        if m < 2:
            return None
        # Imported here: a second on first use, never paid by chunks with nothing inside.
        from scipy.spatial import cKDTree  # type: ignore[import-untyped]

        k = min(self.spec.budget.neighbors, m - 1)
        scale = self.spec.budget.neighbor_scale / math.sqrt(2.0)
        # |R_a - R_b|_F = 2 sqrt(2) sin(theta / 2) ~ sqrt(2) theta for small angles.
        Ti = T[idx]
        feat = np.concatenate([Ti[:, :3, 3], scale * Ti[:, :3, :3].reshape(m, 9)], axis=1)
        _, nb = cKDTree(feat).query(feat, k=k + 1)
        nb = np.asarray(nb).reshape(m, k + 1)
        # Drop each target itself (normally first; ties with duplicates put it elsewhere).
        own = nb == np.arange(m)[:, None]
        drop = np.where(own.any(axis=1), np.argmax(own, axis=1), k)
        keep = np.ones_like(nb, dtype=bool)
        keep[np.arange(m), drop] = False
        out = np.zeros((T.shape[0], k), dtype=np.int64)
        out[idx] = idx[nb[keep].reshape(m, k)]
        return out

    def _propagate(
        self,
        st: _State,
        ctx: tuple,
        inside: np.ndarray,
        nb: np.ndarray,
        chunk: int,
        deadline: float,
    ) -> None:
        """Waves of attempts seeded from the nearest untried solved neighbour."""
        tried = np.zeros(nb.shape, dtype=bool)
        limit = self.spec.budget.neighbor_attempts
        while time.perf_counter() < deadline:
            un = np.flatnonzero(inside & ~st.solved & (st.tries < limit))
            if not un.size:
                return
            cand = st.solved[nb[un]] & ~tried[un]
            has = cand.any(axis=1)
            un = un[has]
            if not un.size:
                return
            j = np.argmax(cand[has], axis=1)
            tried[un, j] = True
            st.tries[un] += 1
            seeds = st.qc[nb[un, j]]
            self._attempt(st, ctx, un, seeds, chunk, _STAGE_NEIGHBOR, restart=False)

    def _restarts(
        self, st: _State, ctx: tuple, inside: np.ndarray, chunk: int, deadline: float
    ) -> int:
        """Rounds from random configurations; returns the number of targets they solved."""
        found = 0
        for r in range(self.spec.budget.restart_rounds):
            if time.perf_counter() >= deadline:
                break
            un = np.flatnonzero(inside & ~st.solved)
            if not un.size:
                break
            rng = np.random.default_rng([self.spec.seed, chunk, _STAGE_RESTART, r])
            seeds = rng.uniform(self.sample_lower, self.sample_upper, (un.size, self.chain.n))
            found += self._attempt(st, ctx, un, seeds, chunk, _STAGE_RESTART + 1 + r, restart=True)
        return found

    def _probe(
        self, st: _State, ctx: tuple, inside: np.ndarray, chunk: int, deadline: float
    ) -> None:
        """A short search without joint limits for the targets nothing reached.

        A solution that fits the limits after 2 pi turns of its revolute joints is
        verified like any candidate (and may make the target reachable); the targets
        whose solutions do not fit get more restarts inside the limits
        (:meth:`_confirm_limits`) before they are recorded as limits rejections.
        """
        cap = self.spec.budget.limits_probe_iterations
        probe = np.flatnonzero(inside & ~st.solved & (st.rejected == 0))
        if not (probe.size and cap):
            return
        T = ctx[0]
        seeds = np.broadcast_to(self.q_ref_chain, (probe.size, self.chain.n))
        ti = time.perf_counter()
        rows, ok = self.free_chain.solve_batch(
            T[probe],
            np.ascontiguousarray(seeds),
            max_iterations=cap,
            position_tolerance=self.spec.position_tolerance,
            orientation_tolerance=self.spec.orientation_tolerance,
            rng_seed=chunk_seed(self.spec.seed, chunk, _STAGE_PROBE),
            return_success=True,
        )
        st.iters[probe] += rows[:, 0].astype(np.int64)
        st.timings["ik"] += time.perf_counter() - ti
        conv = probe[ok]
        if not conv.size:
            return
        Qc, fits = self._turned_into_limits(rows[ok, 2:])
        self._verify(st, ctx, conv[fits], Qc[fits])
        outside = conv[~fits]
        clamped = np.clip(Qc[~fits], self.chain.lower, self.chain.upper)
        self._confirm_limits(st, ctx, outside, clamped, chunk, deadline)
        left = outside[~st.solved[outside] & (st.rejected[outside] == 0)]
        st.rejected[left] = LIMITS

    def _confirm_limits(
        self,
        st: _State,
        ctx: tuple,
        idx: np.ndarray,
        clamped: np.ndarray,
        chunk: int,
        deadline: float,
    ) -> None:
        """Restarts inside the limits for targets reached only outside them.

        The search without limits proves the pose is reachable by the arm's geometry;
        the budget's few restarts often missed a solution inside the limits (near a
        joint limit, say), so ``limits_confirm_rounds`` rounds are spent before the
        target may be labelled ``LIMITS``: the first from the outside solution clamped
        into the limits, the others from random configurations.
        """
        rounds = self.spec.budget.limits_confirm_rounds
        if not (idx.size and rounds):
            return
        stage = _STAGE_CONFIRM
        self._attempt(st, ctx, idx, clamped, chunk, stage, restart=True)
        for r in range(1, rounds):
            if time.perf_counter() >= deadline:
                return
            un = idx[~st.solved[idx]]
            if not un.size:
                return
            rng = np.random.default_rng([self.spec.seed, chunk, stage, r])
            seeds = rng.uniform(self.sample_lower, self.sample_upper, (un.size, self.chain.n))
            self._attempt(st, ctx, un, seeds, chunk, stage + r, restart=True)

    def _turned_into_limits(self, Qc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Revolute joints turned by multiples of 2 pi into the search limits, and fit."""
        lo, hi = self.chain.lower, self.chain.upper
        Q = Qc.copy()
        t = self.turns
        if t.any():
            two_pi = 2.0 * math.pi
            # The turn that lands nearest the middle of the range, when the range is bounded.
            mid = np.where(np.isfinite(lo) & np.isfinite(hi), 0.5 * (lo + hi), 0.0)
            k = np.round((mid[t] - Q[:, t]) / two_pi)
            Q[:, t] += two_pi * k
        fits = np.all((Q >= lo) & (Q <= hi), axis=1)
        return Q, fits

    def _classify(self, st: _State, inside: np.ndarray, deadline: float) -> np.ndarray:
        """A :class:`Reason` for every target."""
        reason = np.full(st.m, Reason.NO_IK, dtype=np.int8)
        reason[~inside] = Reason.OUT_OF_REACH
        reason[st.solved] = Reason.REACHABLE
        open_ = inside & ~st.solved
        reason[open_ & (st.rejected == COLLISION)] = Reason.COLLISION
        reason[open_ & (st.rejected == CONSTRAINT)] = Reason.CONSTRAINT
        reason[open_ & (st.rejected == LIMITS)] = Reason.LIMITS
        reason[open_ & st.world_hit] = Reason.WORLD_COLLISION
        if time.perf_counter() >= deadline:
            reason[open_ & (st.rejected == 0)] = Reason.BUDGET
        return reason

    def _evaluate(
        self, st: _State, poses: np.ndarray, out_q: np.ndarray
    ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Each evaluator's scores and their weighted mean (zeros where unreachable)."""
        m = st.m
        acc = np.flatnonzero(st.solved)
        evs = self.spec.evaluators
        ctx = EvaluationContext(
            poses[acc],
            out_q[acc],
            st.qc[acc],
            self.chain,
            self.model_lower,
            self.model_upper,
            self.q_ref,
            self.verifier.min_distance,
            self.robot.difference,
        )
        scores: dict[str, np.ndarray] = {}
        weights: dict[str, float] = {}
        for ev in evs:
            s = np.zeros(m)
            if acc.size:
                s[acc] = np.clip(np.asarray(ev.evaluate(ctx), dtype=float).reshape(-1), 0.0, 1.0)
            scores[str(ev.name)] = s
            weights[str(ev.name)] = float(ev.weight)
        return scores, combine(scores, weights, m)


def _unlimited_chain(chain: SerialChain) -> SerialChain:
    """The chain with its position limits removed (revolute joints draw restarts in +-pi)."""
    model = pin.Model(chain.model)
    lo = model.lowerPositionLimit.copy()
    hi = model.upperPositionLimit.copy()
    for k in range(chain.n):
        if not chain.continuous[k]:
            lo[chain.idx_q[k]] = -1e10
            hi[chain.idx_q[k]] = 1e10
    model.lowerPositionLimit, model.upperPositionLimit = lo, hi
    return SerialChain.from_model(model, chain.tip_frame, chain.base_frame)
