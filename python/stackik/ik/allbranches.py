"""Every IK branch of a pose: the closed form when one applies, else a branch-aware search.

**Branches.** Two solutions are the same branch when every joint angle agrees modulo
2 pi (within the query's separation): the ``+-2 pi`` copies a wide joint range allows
are one branch. Of a branch, the copy inside the limits nearest ``reference_q`` is
returned (the distance is separable, so joint by joint; when ``validate`` rejects it,
the next copies are tried); the other copies stay available through
``include_alternates`` and ``alternate_configs``. A branch rejected by the checks
(limits, collision, ``validate``) is reported once in ``branch_rejections``.

**Closed form** (:func:`analytic_branches`): the detected solver's branches (at most
8), each checked against the query's tolerances by its own product-of-exponentials FK
(equal to Pinocchio's to rounding: verified at load), then collapsed, limited and
checked as above (collision and ``validate`` on the full robot).

**Numeric** (:func:`search_branches`): Levenberg-Marquardt starts of one attempt each
(no restart inside, so a seed's basin decides), counting distinct branches. On arms
with branch flags (:class:`~.branches.BranchGeometry`) every new branch queues seeds
toward the flag combinations still missing, built from it: the elbow mirrored (exact
on the wrist point), the wrist flipped, the arm swung to the other shoulder root; when
the queue is empty, random starts aimed at a missing combination (the shoulder root,
the elbow and wrist angles on the right side of their singular values), with a plain
random start every fourth time. On other chains, random starts (for redundant chains,
the candidate farthest from the solutions in hand). The search stops when the number
of branches the arm can have is reached (8 flag combinations on UR-type and
spherical-wrist arms with parallel axes 2-3), at ``max_solutions``, or at the budget; no
start is made when the time left is below a typical attempt (30 iterations at the
chain's measured cost) plus the result's assembly, so the call ends by its deadline.
"""

from __future__ import annotations

import functools
import math
import time
from collections import deque

import numpy as np

from .. import _validate
from ..analytic import AnalyticSolver
from .branch_kernels import DUPLICATE, OK, POSE, candidate_row, closed_form_rows, fold_seed
from .branches import BranchFlags, BranchTarget, matches
from .query import SearchOutcome, SearchQuery

__all__ = ["analytic_branches", "branch_combinations", "search_branches"]

_TWO_PI = 2.0 * math.pi
#: Every fourth seed of the aimed random phase is a plain random start.
_PLAIN_EVERY = 4
#: Iterations of a typical seeded attempt, and the time the result's assembly takes [s]:
#: the reserve under which the search starts no new attempt before its deadline.
_TYPICAL_ATTEMPT = 30
_ASSEMBLY = 30e-6


_ALL_FLAGS = tuple(BranchFlags.from_code(c) for c in range(8))


@functools.lru_cache(maxsize=64)
def branch_combinations(
    wanted: tuple[int | None, int | None, int | None] | None,
) -> tuple[BranchFlags, ...]:
    """The flag combinations a query accepts (all 8 without a ``branch`` filter)."""
    return tuple(f for f in _ALL_FLAGS if wanted is None or matches(f, wanted))


class _Branches:
    """Distinct-branch bookkeeping of one query (keys, representatives, checks)."""

    def __init__(self, query: SearchQuery, found: SearchOutcome) -> None:
        self.query = query
        self.found = found
        setup = query.setup
        chain = setup.chain
        self.angle = setup.revolute | chain.continuous
        self.lower = setup.check_lower
        self.upper = setup.check_upper
        self.q_ref_chain = chain.from_full(query.q_ref)
        self.separation = max(query.separation, query.distinct)
        self.plain = ~chain.continuous
        self.plain_q = chain.idx_q[self.plain]
        self.cont = [(int(k), int(chain.idx_q[k])) for k in np.flatnonzero(chain.continuous)]
        self.angle_u8 = self.angle.astype(np.uint8)
        n = chain.n
        self.keys = np.empty((16, n))  # branch keys, accepted and rejected, for duplicates
        self.nkeys = 0
        self.key_buf, self.rep_buf = np.empty(n), np.empty(n)
        target = query.branch_target
        self.flag_coefficients = (
            np.array([target.shoulder, target.elbow, target.wrist], dtype=float)
            if target is not None
            else np.zeros((3, 2))
        )

    def gaps(self, keys: np.ndarray, others: np.ndarray) -> np.ndarray:
        """Largest joint difference (angles modulo 2 pi) of each key to each other key."""
        d = np.abs(keys[:, None, :] - others[None, :, :])
        a = self.angle
        d[..., a] = np.minimum(d[..., a], _TWO_PI - d[..., a])
        return d.max(axis=2)

    def remember(self, key: np.ndarray) -> None:
        """Add a branch key to the duplicate test."""
        if self.nkeys == len(self.keys):
            self.keys = np.concatenate([self.keys, np.empty_like(self.keys)])
        self.keys[self.nkeys] = key
        self.nkeys += 1

    def full_rows(self, Q: np.ndarray) -> np.ndarray:
        """:meth:`full` of every row of ``Q``."""
        out = np.repeat(self.query.q_ref[None, :], len(Q), axis=0)
        out[:, self.plain_q] = Q[:, self.plain]
        for k, i in self.cont:
            out[:, i], out[:, i + 1] = np.cos(Q[:, k]), np.sin(Q[:, k])
        return out

    def full(self, qc: np.ndarray) -> np.ndarray:
        """The robot configuration of a chain configuration (others held at the reference)."""
        q = self.query.q_ref.copy()
        q[self.plain_q] = qc[self.plain]
        for k, i in self.cont:
            q[i], q[i + 1] = math.cos(qc[k]), math.sin(qc[k])
        return q

    def consider(self, qc: np.ndarray, flags: BranchFlags | None, check_pose: bool) -> str:
        """Test one solution as a branch.

        Returns ``"new"`` (accepted), ``"rejected"`` (a new branch that fails a check or
        the ``branch`` filter), ``"known"`` (a branch already found) or ``"budget"`` (the
        deadline passed before its checks).
        """
        status = candidate_row(
            qc,
            self.keys,
            self.nkeys,
            self.q_ref_chain,
            self.lower,
            self.upper,
            self.angle_u8,
            self.separation,
            self.key_buf,
            self.rep_buf,
        )
        if status == DUPLICATE:
            self.found.rejected["duplicate"] += 1
            return "known"
        rep = self.rep_buf.copy() if status == OK else None
        return self.settle(self.key_buf.copy(), qc, rep, flags, check_pose)

    def settle(
        self,
        key: np.ndarray,
        qc: np.ndarray,
        rep: np.ndarray | None,
        flags: BranchFlags | None,
        check_pose: bool,
        full: np.ndarray | None = None,
    ) -> str:
        """Check and record a new branch (see :meth:`consider`).

        ``rep`` is its representative (None: no copy inside the limits), ``full`` the
        robot configuration of ``rep`` when already built.
        """
        found, query = self.found, self.query
        self.remember(key)
        if query.branch is not None and (flags is None or not matches(flags, query.branch)):
            found.rejected["branch"] += 1
            found.rejected_keys.append(key)
            return "rejected"
        why, q = "limits", qc
        checker = query.checker
        if rep is None:
            q = checker.coupled(self.full(qc), qc)[0]
        else:
            q, rep, moved = checker.coupled(self.full(rep) if full is None else full, rep)
            why = ""
            check_pose = check_pose or moved  # a kept follower on the chain was coupled
            if check_pose or checker.watch is not None or checker.validate is not None:
                if time.perf_counter() >= query.deadline:
                    found.rejected["budget"] += 1
                    found.stopped_by = "time_budget"
                    return "budget"
                why = checker.reason(q, rep, check_pose)
                if why == "validation":
                    rep, q, why = self._other_copies(rep, q)
        if why:
            found.rejected[why] += 1
            found.rejected_keys.append(key)
            found.branch_rejections.append((flags, why, q))
            return "rejected"
        assert rep is not None
        found.q.append(q)
        found.qc.append(rep)
        found.keys.append(key)
        found.flags.append(flags)
        return "new"

    def _other_copies(self, rep: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, str]:
        """The nearest copy that ``validate`` accepts (the pose and placements are equal).

        Copies are tried nearest ``reference_q`` first (sum of the joint distances); the
        limits hold by construction and the collision distances are those of ``rep``, so
        only ``validate`` runs. Each copy it rejects counts as a ``validation``
        rejection; the deadline is checked before each.
        """
        query = self.query
        validate = query.checker.validate
        assert validate is not None
        if query.checker.couples_chain:  # a coupled copy may move the frame: not tried
            return rep, q, "validation"
        copies = np.array(query.setup.alternates(rep)[1:]).reshape(-1, len(rep))
        order = np.argsort(np.abs(copies - self.q_ref_chain).sum(axis=1), kind="stable")
        fulls = self.full_rows(copies)
        if query.checker.couple is not None:  # followers off the chain set from leaders
            fulls = np.array([query.checker.couple(f) for f in fulls])
        for k in order.tolist():
            if time.perf_counter() >= query.deadline:
                self.found.stopped_by = "time_budget"
                break
            self.found.rejected["validation"] += 1  # the previous copy's
            if bool(validate(fulls[k].copy())):
                return copies[k], fulls[k], ""
        return rep, q, "validation"

    def fold(self, q: np.ndarray) -> np.ndarray:
        """A seed brought inside the search limits (nearest copy, else clipped)."""
        out = q.copy()
        fold_seed(out, self.query.setup.lower, self.query.setup.upper, self.angle_u8)
        return out


# -- closed form --------------------------------------------------------------------------------
def analytic_branches(query: SearchQuery, solver: AnalyticSolver) -> SearchOutcome:
    """Every branch of the closed-form solver, collapsed, limited and checked.

    The bookkeeping of all rows (tolerances, duplicates, nearest copies, flags) is one
    compiled call (:func:`.branch_kernels.closed_form_rows`); only the collision and
    ``validate`` checks, when configured, go row by row.
    """
    found = SearchOutcome(stopped_by="analytic")
    book = _Branches(query, found)
    Q, err = solver.solve_raw(query.R, query.p)
    k = len(Q)
    if not k:
        return found
    Q = Q.copy()  # angles in (-pi, pi]: the rows are their own keys
    reps = np.empty_like(Q)
    status = np.empty(k, dtype=np.int64)
    flag_rows = np.zeros((k, 3), dtype=np.int64)
    tol = np.array([query.tol_p, query.tol_o, book.separation])
    closed_form_rows(
        Q,
        err,
        book.q_ref_chain,
        book.lower,
        book.upper,
        book.angle_u8,
        tol,
        book.flag_coefficients,
        reps,
        status,
        flag_rows,
    )
    fulls = book.full_rows(reps)
    codes = status.tolist()
    if query.branch_target is not None:
        flags: list[BranchFlags | None] = [BranchFlags(*f) for f in flag_rows.tolist()]
    else:
        flags = [None] * k
    for i in range(k):
        code = codes[i]
        if code == POSE:  # a boundary root beyond rounding
            found.rejected["pose"] += 1
            q_bad = query.checker.coupled(book.full(Q[i]), Q[i])[0]
            found.branch_rejections.append((flags[i], "pose", q_bad))
        elif code == DUPLICATE:
            found.rejected["duplicate"] += 1
        else:
            rep = reps[i] if code == OK else None
            if book.settle(Q[i], Q[i], rep, flags[i], False, fulls[i]) == "budget":
                found.rejected["budget"] += k - 1 - i  # the rows not looked at
                break
    return found


# -- numeric --------------------------------------------------------------------------------
class _Seeds:
    """Where the next start of the branch search comes from (see the module docstring)."""

    def __init__(
        self, query: SearchQuery, book: _Branches, target: BranchTarget | None, rng_seed: int
    ) -> None:
        self.query = query
        self.book = book
        self.geometry = query.branch_geometry if target is not None else None
        self.target = target
        self.combos = list(branch_combinations(query.branch)) if target is not None else []
        # (source configuration, its flags, wanted flags); built into a seed when popped
        self.pending: deque[tuple[np.ndarray, BranchFlags | None, BranchFlags | None]] = deque()
        self.gen = np.random.default_rng(rng_seed)
        self.turn = 0
        chain = query.setup.chain
        self.pending.append((chain.from_full(query.q_ref), None, None))
        self.shoulders = (
            self.geometry.shoulder_angles(target.c)
            if self.geometry is not None and target is not None
            else []
        )

    def have(self) -> set[BranchFlags | None]:
        """Flags of the branches found (accepted or rejected)."""
        found = self.book.found
        return set(found.flags) | {r[0] for r in found.branch_rejections}

    def missing(self) -> list[BranchFlags]:
        """Flag combinations of no branch found yet (accepted or rejected)."""
        have = self.have()
        return [f for f in self.combos if f not in have]

    def next(self) -> tuple[np.ndarray, bool]:
        """The next seed, and whether it is aimed (one start: its basin decides).

        A queued flip first, else an aimed start toward a missing flag combination, with
        a plain random start (restarts allowed) every fourth time or when the arm has no
        flags.
        """
        missing = set(self.missing())
        while self.pending:
            source, flags, wanted = self.pending.popleft()
            if wanted is None or flags is None:
                return source, True
            if wanted in missing:
                return self._flipped(source, flags, wanted), True
        self.turn += 1
        chain = self.query.setup.chain
        if missing and self.turn % _PLAIN_EVERY:
            return self._aimed(sorted(missing)[self.turn % len(missing)]), True
        if self.query.separation > self.query.distinct and self.book.found.keys:
            return self._farthest(), True
        return chain.random_configuration(self.gen), False

    def _aimed(self, want: BranchFlags) -> np.ndarray:
        """A random start on the right side of each flag's singular value."""
        geo, tgt = self.geometry, self.target
        assert geo is not None and tgt is not None
        q = self.query.setup.chain.random_configuration(self.gen)
        roots = [r for r in self.shoulders if tgt.shoulder_flag(r) == want.shoulder]
        if roots:
            q[0] = roots[0]
        u = self.gen.random(2)
        q[2] = geo.half(geo.elbow, want.elbow, float(u[0]))
        q[4] = geo.half(geo.wrist, want.wrist, float(u[1]))
        return self.book.fold(q)

    def _farthest(self, candidates: int = 6) -> np.ndarray:
        """Of a few random starts, the one farthest from the solutions in hand."""
        chain, book = self.query.setup.chain, self.book
        best, best_d = None, -1.0
        keys = np.array(book.found.keys)
        for _ in range(candidates):
            q = chain.random_configuration(self.gen)
            d = float(book.gaps(q[None, :], keys).min())
            if d > best_d:
                best, best_d = q, d
        assert best is not None
        return best

    def flips(self, qc: np.ndarray, flags: BranchFlags) -> None:
        """Queue seeds toward every missing combination, from a new branch (nearest first)."""
        if self.geometry is None:
            return
        missing = self.missing()
        missing.sort(key=lambda m: sum(a != b for a, b in zip(m, flags, strict=True)))
        self.pending.extend((qc, flags, want) for want in missing)

    def _flipped(self, qc: np.ndarray, flags: BranchFlags, want: BranchFlags) -> np.ndarray:
        """The seed of ``want`` built from a branch with ``flags``."""
        geo = self.geometry
        assert geo is not None
        seed, elbow = qc, flags.elbow
        if want.shoulder != flags.shoulder:
            other = [r for r in self.shoulders if abs(_wrap(r - float(qc[0]))) > 1e-9]
            seed = geo.mirror_arm(seed, other[0] if other else float(qc[0]) + math.pi)
            elbow = -elbow
        if want.elbow != elbow:
            seed = geo.flip_elbow(seed)
        if want.wrist != flags.wrist:
            seed = geo.flip_wrist(seed)
        return self.book.fold(seed)


def _wrap(t: float) -> float:
    return (t + math.pi) % _TWO_PI - math.pi


def _stop(query: SearchQuery, found: SearchOutcome, seeds: _Seeds, reserve: float) -> str:
    """Why the search stops now ("" to go on); ``reserve``: time an attempt needs [s]."""
    if query.expected is not None and not seeds.missing():
        return "all_branches"
    if len(found.q) >= query.max_solutions:
        return "max_solutions"
    if time.perf_counter() + reserve >= query.deadline:
        return "time_budget"
    if query.max_attempts is not None and found.attempts >= query.max_attempts:
        return "max_attempts"
    if query.max_iterations is not None and found.iterations >= query.max_iterations:
        return "max_iterations"
    return ""


def search_branches(query: SearchQuery, rng_seed: int) -> SearchOutcome:
    """Branch-aware multi-start search (see the module docstring)."""
    found = SearchOutcome()
    book = _Branches(query, found)
    target = query.branch_target
    seeds = _Seeds(query, book, target, rng_seed)
    chain = query.search_chain or query.setup.chain
    # No start is made that cannot end by the deadline: a typical attempt's iterations
    # and the result's assembly are kept in reserve (the first start always runs), and
    # each attempt's iterations are capped by the time left.
    cost = chain.iteration_cost()
    reserve = _TYPICAL_ATTEMPT * cost + _ASSEMBLY
    while True:
        why = _stop(query, found, seeds, reserve if found.attempts else 0.0)
        if why:
            found.stopped_by = why
            return found
        seed, aimed = seeds.next()
        left = None if query.max_iterations is None else query.max_iterations - found.iterations
        remaining = query.deadline - time.perf_counter()
        if not math.isinf(remaining):
            by_time = max(int((remaining - _ASSEMBLY) / cost), _TYPICAL_ATTEMPT)
            left = by_time if left is None else min(left, by_time)
        # An aimed seed gets one start; a plain random one may restart inside the compiled
        # search until the deadline (without one, an attempt is one start).
        single = aimed or math.isinf(query.deadline)
        res = chain.solve(
            query.R,
            query.p,
            seed,
            time_budget=min(max(remaining, 1e-9), _validate.MAX_MAGNITUDE),
            position_tolerance=query.tol_p,
            orientation_tolerance=query.tol_o,
            rng_seed=int(seeds.gen.integers(2**31)),
            max_iterations=left,
            **({"max_restarts": 0} if single else {}),
        )
        found.attempts += 1
        found.iterations += res.iterations
        if not res.success:
            late = time.perf_counter() >= query.deadline
            found.rejected["budget" if late else "unreachable"] += 1
            continue
        flags = target.flags(res.q) if target is not None else None
        if query.expected is not None and flags is not None and 0 not in flags:
            # one branch per flag combination on these arms: near a singularity two
            # solutions of one branch can differ by more than the separation
            if flags in seeds.have():
                found.rejected["duplicate"] += 1
                continue
        if book.consider(res.q, flags, check_pose=True) != "known" and flags is not None:
            seeds.flips(res.q, flags)
