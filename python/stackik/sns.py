"""Prioritized velocity IK with the Saturation-in-the-Null-Space (SNS) method.

Given a stack of tasks in priority order, each a Jacobian ``J_k`` (``m_k x n``)
and a desired task velocity ``xdot_k`` (``m_k``), and constraints
``lower <= C dq <= upper`` plus a joint-velocity box ``box_lower <= dq <=
box_upper``, :func:`solve` finds the joint velocity ``dq`` that achieves each
task as well as possible without disturbing any higher-priority task and
without violating a constraint.

The method is the multi-task SNS with optimal task scaling of

    F. Flacco, A. De Luca, O. Khatib, "Control of redundant robots under hard
    joint constraints: saturation in the null space", IEEE Transactions on
    Robotics 31(3):637-654, 2015,

generalised so that general constraint rows are saturated exactly like joint
bounds, with an exact per-level QP (``quadprog``) as the fallback when the
greedy saturation cannot find a feasible scale. See ``docs/sns.md`` for the
equations.

This module is plain NumPy in and out; it never imports Pinocchio. The inner
loops live in :mod:`stackik._sns_kernels` and are compiled with numba on first
use when numba is installed (otherwise they run as slow pure Python).

Units: ``dq`` is in the joint velocity units of the model [rad/s or m/s per
joint]; each task velocity is in the units of its Jacobian's rows; constraint
bounds are in the units of ``C dq``.
"""

from __future__ import annotations

import enum
import math
import time
from collections.abc import Sequence

import numpy as np

from stackik import _sns_kernels as _kern
from stackik.errors import InvalidInput, ShapeError
from stackik.results import SolverStatus, VelocitySolverResult

__all__ = [
    "DEFAULT_DAMPING",
    "DEFAULT_TOLERANCE",
    "SNSSolver",
    "TaskSolveMode",
    "solve",
]

DEFAULT_DAMPING = 1e-3
"""Default damping ``lambda`` of the selectively damped pseudo-inverse."""

DEFAULT_TOLERANCE = 1e-3
"""Default singular-value threshold ``epsilon`` below which damping starts."""

_FEAS_TOL = 1e-12  # relative slack of the saturation test: |bound| * tol + tol
_ACTIVE_TOL = 1e-9  # a row within this (relative) distance of a bound is reported active
_VIOLATION_TOL = 1e-9  # largest accepted constraint violation of a returned dq
_SNAP_TOL = 1e-12  # largest rounding miss of a projected start point that is snapped away
_QP_REG = 1e-7  # proximal weight that makes the lexicographic QP stages strictly convex

_F64 = np.float64


class TaskSolveMode(enum.IntEnum):
    """How a priority level treats a task it cannot fully achieve.

    Attributes:
        SCALE: Scale the whole task velocity by ``s_k`` in [0, 1] (direction
            kept) to the largest value the constraints allow; default.
        MIN_ERROR: Least-squares best effort: minimise ``||J_k dq - xdot_k||``
            inside the constraints (direction may change); ``s_k`` is reported as 1.
    """

    SCALE = 0
    MIN_ERROR = 1


def _fresh(a: object) -> np.ndarray:
    """Return ``a`` as a C-contiguous, writeable float64 array (no copy when already one)."""
    if type(a) is np.ndarray and a.dtype == _F64 and a.flags.carray:
        return a
    return np.array(a, dtype=_F64, order="C")


def _mode_value(mode: object) -> int:
    """Map a :class:`TaskSolveMode`, its name or its value to an int; -1 if unknown."""
    if isinstance(mode, str):
        try:
            return int(TaskSolveMode[mode.strip().upper()])
        except KeyError:
            return -1
    try:
        return int(TaskSolveMode(mode))
    except (ValueError, TypeError):
        return -1


class SNSSolver:
    """Reusable SNS solver for a fixed number of joints (the 1 kHz hot path).

    Buffers are allocated once; each :meth:`solve` copies the task rows into
    them and runs the compiled kernel. The configuration is validated here and
    raises typed errors; :meth:`solve` itself never raises and reports problems
    through :attr:`VelocitySolverResult.status`.

    Args:
        n: Number of joint velocity variables.
        joint_weights: Positive metric weights, size ``n`` (default ones). The
            solver minimises ``sum_i w_i dq_i^2`` among equally good solutions,
            so a joint with a larger weight moves less (weighted pseudo-inverse
            ``W^-1 J^T (J W^-1 J^T)^-1``).
        damping: Damping ``lambda`` of near-singular directions (>= 0).
        tolerance: Singular-value threshold ``epsilon`` (>= 0): directions with
            ``sigma >= epsilon`` are inverted exactly, smaller ones are damped.
        max_iterations: Cap on saturation iterations per priority level
            (default ``n + 2``, which never binds: each iteration saturates a row
            and removes a null-space direction).
        exact_fallback: When the greedy saturation finds no feasible scale for
            a SCALE level with more than one null-space direction left, solve
            that level exactly with a QP (``quadprog``, ~50-150 us). If False
            the level holds instead (``s_k = 0``, the higher levels' ``dq`` is
            kept; always feasible, no QP). Levels with one direction left are
            always solved exactly in closed form; MIN_ERROR levels always use
            the QP when the greedy cannot reach ``s = 1``.
        use_numba: Compile the kernel with numba (if installed). False runs the
            identical pure-Python kernel (slow; for debugging and tests).

    Raises:
        InvalidInput: ``n`` negative, weights not positive and finite, damping
            or tolerance negative or not finite, ``max_iterations < 1``.
        ShapeError: ``joint_weights`` is not of shape ``(n,)``.
    """

    def __init__(
        self,
        n: int,
        *,
        joint_weights: Sequence[float] | np.ndarray | None = None,
        damping: float = DEFAULT_DAMPING,
        tolerance: float = DEFAULT_TOLERANCE,
        max_iterations: int | None = None,
        exact_fallback: bool = True,
        use_numba: bool = True,
    ) -> None:
        if int(n) != n or n < 0:
            raise InvalidInput(f"n must be a non-negative integer, given {n!r}")
        n = int(n)
        if joint_weights is None:
            w = np.ones(n)
        else:
            w = np.array(joint_weights, dtype=_F64)
            if w.shape != (n,):
                raise ShapeError("joint_weights", (n,), w.shape)
            if not (np.all(np.isfinite(w)) and np.all(w > 0.0)):
                raise InvalidInput("joint_weights must be positive and finite")
        for name, value in (("damping", damping), ("tolerance", tolerance)):
            if not (math.isfinite(value) and value >= 0.0):
                raise InvalidInput(f"{name} must be finite and >= 0, given {value!r}")
        if max_iterations is not None and max_iterations < 1:
            raise InvalidInput(f"max_iterations must be >= 1, given {max_iterations!r}")
        self.n = n
        self.joint_weights = w
        self.damping = float(damping)
        self.tolerance = float(tolerance)
        self.max_iterations = int(max_iterations) if max_iterations is not None else n + 2
        self.exact_fallback = bool(exact_fallback)
        self._hold = 0 if self.exact_fallback else _kern.FLAG_HOLD
        self._wis = 1.0 / np.sqrt(w)
        self._prm = np.array([self.damping, self.tolerance, _FEAS_TOL, _ACTIVE_TOL])
        self._iprm = np.zeros(4, dtype=np.int64)
        self._info = np.zeros(8, dtype=np.int64)
        self._fout = np.zeros(1)
        self._u = np.zeros(n)
        self._Zc = np.zeros((n, n))
        self._Zn = np.zeros((n, n))
        self._rows = 0
        self._J = np.zeros((0, n))
        self._x = np.zeros(0)
        self._offs_cache: dict[int, np.ndarray] = {}
        self._modes_cache: dict[int, np.ndarray] = {}
        self._box_lo = np.full(n, -np.inf)
        self._box_hi = np.full(n, np.inf)
        self._C0 = np.zeros((0, n))
        self._b0 = np.zeros(0)
        self._act = np.zeros(n, dtype=np.int64)
        self._run, self.compiled = _kern.load(use_numba)

    # ------------------------------------------------------------------ API
    def solve(
        self,
        goals: Sequence[np.ndarray],
        jacobians: Sequence[np.ndarray],
        C: np.ndarray | None = None,
        lower: np.ndarray | None = None,
        upper: np.ndarray | None = None,
        *,
        box_lower: np.ndarray | None = None,
        box_upper: np.ndarray | None = None,
        modes: Sequence[TaskSolveMode | str | int] | None = None,
    ) -> VelocitySolverResult:
        """Solve one prioritized velocity problem.

        Args:
            goals: Task velocities ``xdot_k``, highest priority first; each of
                shape ``(m_k,)`` in the units of its Jacobian's rows.
            jacobians: Task Jacobians ``J_k``, each ``(m_k, n)``.
            C: General constraint rows, ``(p, n)``, or None.
            lower: Lower bounds of ``C dq``, ``(p,)`` (``-inf`` allowed; None = all ``-inf``).
            upper: Upper bounds of ``C dq``, ``(p,)`` (``+inf`` allowed; None = all ``+inf``).
            box_lower: Joint velocity lower bounds, ``(n,)`` [rad/s or m/s]; None = unbounded.
            box_upper: Joint velocity upper bounds, ``(n,)`` [rad/s or m/s]; None = unbounded.
            modes: One :class:`TaskSolveMode` (or its name) per task; None = all SCALE.

        Returns:
            The :class:`VelocitySolverResult`. ``task_errors[k]`` is
            ``||J_k dq - s_k xdot_k||``; ``saturated_joints`` and
            ``saturated_constraints`` list the box and general rows at a bound.
        """
        t0 = time.perf_counter()
        try:
            return self._solve(t0, goals, jacobians, C, lower, upper, box_lower, box_upper, modes)
        except Exception as exc:  # the hot path never raises
            try:
                nlev = len(goals)
            except TypeError:
                nlev = 0
            return self._result_error(
                SolverStatus.INVALID_INPUT
                if isinstance(exc, (TypeError, ValueError))
                else SolverStatus.NUMERICAL_ERROR,
                f"unexpected {type(exc).__name__}: {exc}",
                t0,
                nlev,
            )

    # ------------------------------------------------------------ internals
    def _result_error(
        self, status: SolverStatus, message: str, t0: float, nlev: int
    ) -> VelocitySolverResult:
        return VelocitySolverResult(
            solution=np.zeros(self.n),
            status=status,
            status_message=message,
            task_scales=np.zeros(nlev),
            task_errors=np.zeros(nlev),
            computation_time_ms=(time.perf_counter() - t0) * 1e3,
        )

    def _solve(self, t0, goals, jacobians, C, lower, upper, box_lower, box_upper, modes):
        n = self.n
        err = self._result_error
        if (type(goals) not in (list, tuple) and not isinstance(goals, Sequence)) or (
            type(jacobians) not in (list, tuple) and not isinstance(jacobians, Sequence)
        ):
            return err(
                SolverStatus.INVALID_INPUT,
                "goals and jacobians must be sequences (one entry per priority level)",
                t0,
                0,
            )
        nlev = len(goals)
        if len(jacobians) != nlev:
            return err(
                SolverStatus.SHAPE_MISMATCH,
                f"expected one Jacobian per goal: {nlev} goals, {len(jacobians)} jacobians",
                t0,
                nlev,
            )

        # Task rows: shapes here, finiteness in the kernel.
        offs = self._offs_cache.get(nlev)
        if offs is None:
            offs = self._offs_cache[nlev] = np.zeros(nlev + 1, dtype=np.int64)
        jac = []
        total = 0
        for k in range(nlev):
            Jk = jacobians[k]
            if type(Jk) is not np.ndarray:
                Jk = np.asarray(Jk, dtype=_F64)
            if Jk.ndim != 2 or Jk.shape[1] != n:
                return err(
                    SolverStatus.SHAPE_MISMATCH,
                    f"jacobians[{k}]: expected shape (m, {n}), given {Jk.shape}",
                    t0,
                    nlev,
                )
            jac.append(Jk)
            total += Jk.shape[0]
            offs[k + 1] = total
        if total > self._rows:
            self._rows = max(total, 2 * self._rows)
            self._J = np.zeros((self._rows, n))
            self._x = np.zeros(self._rows)
        Jbuf = self._J
        xbuf = self._x
        o = 0
        for k in range(nlev):
            Jk = jac[k]
            m = Jk.shape[0]
            g = goals[k]
            if type(g) is not np.ndarray:
                g = np.asarray(g, dtype=_F64)
            if g.shape != (m,):
                return err(
                    SolverStatus.SHAPE_MISMATCH,
                    f"goals[{k}]: expected shape ({m},) to match jacobians[{k}], given {g.shape}",
                    t0,
                    nlev,
                )
            Jbuf[o : o + m] = Jk
            xbuf[o : o + m] = g
            o += m

        # Modes.
        if modes is None:
            mode_arr = self._modes_cache.get(nlev)
            if mode_arr is None:
                mode_arr = self._modes_cache[nlev] = np.zeros(nlev, dtype=np.int64)
        else:
            if len(modes) != nlev:
                return err(
                    SolverStatus.SHAPE_MISMATCH,
                    f"modes: expected {nlev} entries (one per task), given {len(modes)}",
                    t0,
                    nlev,
                )
            mode_arr = np.array([_mode_value(md) for md in modes], dtype=np.int64)
            if nlev and mode_arr.min() < 0:
                bad = int(np.flatnonzero(mode_arr < 0)[0])
                return err(
                    SolverStatus.INVALID_INPUT,
                    f"modes[{bad}]: unknown task mode {modes[bad]!r}; expected one of "
                    f"{[md.name for md in TaskSolveMode]}",
                    t0,
                    nlev,
                )

        # General rows.
        if C is None or (
            type(C) is np.ndarray and C.size == 0 and C.ndim == 2 and C.shape[1] in (0, n)
        ):
            for name, b in (("lower", lower), ("upper", upper)):
                if b is not None and np.size(b) != 0:
                    return err(
                        SolverStatus.SHAPE_MISMATCH,
                        f"{name}: expected shape (0,) since C is empty, given {np.shape(b)}",
                        t0,
                        nlev,
                    )
            Cg = self._C0
            gl = gu = self._b0
        else:
            Cg = _fresh(C)
            if Cg.ndim != 2 or Cg.shape[1] != n:
                return err(
                    SolverStatus.SHAPE_MISMATCH,
                    f"C: expected shape (p, {n}), given {Cg.shape}",
                    t0,
                    nlev,
                )
            p = Cg.shape[0]
            gl = np.full(p, -np.inf) if lower is None else _fresh(lower)
            gu = np.full(p, np.inf) if upper is None else _fresh(upper)
            for name, b in (("lower", gl), ("upper", gu)):
                if b.shape != (p,):
                    return err(
                        SolverStatus.SHAPE_MISMATCH,
                        f"{name}: expected shape ({p},) to match C, given {b.shape}",
                        t0,
                        nlev,
                    )
        p = Cg.shape[0]

        # Joint velocity box.
        bl = self._box_lo if box_lower is None else _fresh(box_lower)
        bu = self._box_hi if box_upper is None else _fresh(box_upper)
        for name, b in (("box_lower", bl), ("box_upper", bu)):
            if b.shape != (n,):
                return err(
                    SolverStatus.SHAPE_MISMATCH,
                    f"{name}: expected shape ({n},), given {b.shape}",
                    t0,
                    nlev,
                )

        if n == 0:
            return VelocitySolverResult(
                solution=np.zeros(0),
                status=SolverStatus.EMPTY_PROBLEM,
                status_message="no joint velocity variables (n == 0)",
                task_scales=np.zeros(nlev),
                task_errors=np.zeros(nlev),
                computation_time_ms=(time.perf_counter() - t0) * 1e3,
            )

        if self._act.shape[0] < n + p:
            self._act = np.zeros(n + p, dtype=np.int64)
        act = self._act
        Jv = Jbuf[:total]
        xv = xbuf[:total]
        dq = np.empty(n)
        scales = np.empty(nlev)
        errs = np.zeros(nlev)
        iprm = self._iprm
        info = self._info
        iprm[0] = 0
        iprm[1] = self.max_iterations
        iprm[2] = self._hold
        iprm[3] = n
        u = self._u
        status = SolverStatus.SUCCESS
        message = "solved"
        qp_levels: list[int] = []
        held: list[int] = []
        infeasible_msg = ""
        while True:
            self._run(
                Jv,
                xv,
                offs,
                mode_arr,
                Cg,
                gl,
                gu,
                bl,
                bu,
                self._wis,
                self._prm,
                iprm,
                u,
                self._Zc,
                self._Zn,
                dq,
                scales,
                errs,
                act,
                self._fout,
                info,
            )
            code = int(info[0])
            if code == _kern.OK:
                break
            if code == _kern.NEED_LEVEL:
                k = int(info[1])
                qp_levels.append(k)
                ok = self._qp_level(
                    Jv, xv, offs, mode_arr, Cg, gl, gu, bl, bu, k, int(info[3]), scales
                )
                if not ok:
                    held.append(k)
                rn = int(info[4])
                self._Zc[:, :rn] = self._Zn[:, :rn]
                iprm[0] = k + 1
                iprm[2] = _kern.FLAG_SKIP_CHECKS | _kern.FLAG_HAVE_START | self._hold
                iprm[3] = rn
                continue
            if code == _kern.NEED_START:
                gl, gu, infeasible_msg = self._qp_start(Cg, gl, gu, bl, bu)
                iprm[0] = 0
                iprm[2] = _kern.FLAG_SKIP_CHECKS | _kern.FLAG_HAVE_START | self._hold
                continue
            return err(SolverStatus.INVALID_INPUT, self._validation_message(code, offs), t0, nlev)

        nbox = int(info[1])
        nact = int(info[2])
        if self._fout[0] > _VIOLATION_TOL and not infeasible_msg:
            status = SolverStatus.CONSTRAINT_VIOLATION
            message = (
                f"numerical trouble: the solution violates a constraint by {self._fout[0]:.3g}"
            )
        elif infeasible_msg:
            status = SolverStatus.INFEASIBLE
            message = infeasible_msg
        elif total == 0:
            status = SolverStatus.EMPTY_PROBLEM
            message = (
                "no task rows: returned the minimum-norm point of the constraint set "
                "(dq = 0 when it is feasible)"
            )
        elif info[7] and status == SolverStatus.SUCCESS:
            status = SolverStatus.MAX_ITERATIONS
            message = (
                f"saturation stopped at max_iterations={self.max_iterations} on some "
                "level; the best feasible scale found is returned"
            )
        if qp_levels and status == SolverStatus.SUCCESS:
            message = f"solved (exact QP fallback on levels {qp_levels})"
            if held:
                message += (
                    f"; quadprog failed on levels {held}, which hold the higher "
                    "levels' solution (s = 0)"
                )
        return VelocitySolverResult(
            solution=dq,
            status=status,
            status_message=message,
            task_scales=scales,
            task_errors=errs,
            saturated_joints=act[:nbox].tolist(),
            saturated_constraints=act[nbox:nact].tolist(),
            iterations=int(info[5]),
            computation_time_ms=(time.perf_counter() - t0) * 1e3,
        )

    def _validation_message(self, code: int, offs: np.ndarray) -> str:
        """Name the offending entry of a validation failure reported by the kernel."""
        i = int(self._info[1])
        j = int(self._info[2])
        if code in (_kern.BAD_JACOBIAN, _kern.BAD_GOAL):
            k = int(np.searchsorted(offs, i, side="right")) - 1
            row = i - int(offs[k])
            if code == _kern.BAD_JACOBIAN:
                return f"jacobians[{k}] contains NaN or inf (row {row}, column {j})"
            return f"goals[{k}] contains NaN or inf (entry {row})"
        return {
            _kern.BAD_C: f"C contains NaN or inf (row {i}, column {j})",
            _kern.NAN_BOUNDS: f"lower/upper contain NaN (row {i})",
            _kern.INVERTED_BOUNDS: (f"lower > upper at row {i} (or lower = +inf / upper = -inf)"),
            _kern.NAN_BOX: f"box_lower/box_upper contain NaN (joint {i})",
            _kern.INVERTED_BOX: (
                f"box_lower > box_upper at joint {i} (or lower = +inf / upper = -inf)"
            ),
        }.get(code, f"unexpected kernel code {code}")

    def _weighted_rows(self, Cg, gl, gu, bl, bu):
        """All constraint rows in weighted coordinates ``u = W^{1/2} dq``: box first."""
        wis = self._wis
        rows = np.vstack([np.diag(wis), Cg * wis])
        return rows, np.concatenate([bl, gl]), np.concatenate([bu, gu])

    def _qp_start(self, Cg, gl, gu, bl, bu):
        """Find the start point when ``dq = 0`` (clipped to the box) breaks a general row.

        Solves ``min ||u||^2`` over the constraint set. If the set is empty, the
        box stays hard and the general rows get slacks ``t``: ``min ||t||^2``
        (plus a tiny ``||u||^2``); the general bounds are then widened to the
        least-violating point so the levels below still run.

        Returns:
            ``(lower, upper, message)``: the (possibly widened) general bounds
            and an empty message, or the INFEASIBLE message.
        """
        n = self.n
        rows, lo, hi = self._weighted_rows(Cg, gl, gu, bl, bu)
        A, b, eq = _ineq_rows(rows, np.zeros(rows.shape[0]), lo, hi, 0.0, widen=False)
        u = _start_by_projection(rows, lo, hi)
        if u is not None:
            # Snap: the saturation test needs the start point exactly inside, so the
            # bounds it misses by rounding (at most _SNAP_TOL) are widened to it.
            u = np.clip(u, bl / self._wis, bu / self._wis)
            self._u[:] = u
            v = rows[n:] @ u
            return np.minimum(gl, v), np.maximum(gu, v), ""
        u = _quadprog(np.eye(n), np.zeros(n), A, b, eq)
        if u is not None and _max_violation(rows, u, lo, hi) <= _VIOLATION_TOL:
            self._u[:] = u
            return gl, gu, ""
        p = Cg.shape[0]
        Cw = rows[n:]
        # Variables (u, t); box hard, general rows soft.
        G = np.diag(np.concatenate([np.full(n, 1e-8), np.ones(p)]))
        blocks = []
        rhs = []
        fin_lo = np.isfinite(bl)
        fin_hi = np.isfinite(bu)
        eye = np.eye(n + p)
        blocks.append(eye[:n][fin_lo])
        rhs.append((bl / self._wis)[fin_lo])
        blocks.append(-eye[:n][fin_hi])
        rhs.append(-(bu / self._wis)[fin_hi])
        glo = np.isfinite(gl)
        ghi = np.isfinite(gu)
        blocks.append(np.hstack([Cw, np.eye(p)])[glo])
        rhs.append(gl[glo])
        blocks.append(np.hstack([-Cw, np.eye(p)])[ghi])
        rhs.append(-gu[ghi])
        blocks.append(eye[n:])
        rhs.append(np.zeros(p))
        z = _quadprog(G, np.zeros(n + p), np.vstack(blocks), np.concatenate(rhs), 0)
        if z is None:
            u = np.clip(np.zeros(n), bl / self._wis, bu / self._wis)
        else:
            u = np.clip(z[:n], bl / self._wis, bu / self._wis)
        self._u[:] = u
        v = Cw @ u
        worst = int(np.argmax(np.maximum(gl - v, v - gu)))
        amount = float(max(gl[worst] - v[worst], v[worst] - gu[worst]))
        message = (
            f"the constraint set is empty (no dq satisfies every row); returned the "
            f"least-violating solution: row {worst} is violated by {amount:.3g} "
            "(joint velocity box kept hard)"
        )
        return np.minimum(gl, v), np.maximum(gu, v), message

    def _qp_level(self, Jv, xv, offs, modes, Cg, gl, gu, bl, bu, k, r, scales) -> bool:
        """Exact per-level QP fallback (lexicographic, two quadprog stages).

        Works in the coordinates ``u = u_prev + Z y`` of the null space of the
        higher levels, so their achieved task values are kept exactly. Only the
        directions of ``J_k Z`` with singular value ``>= tolerance`` are treated
        as achievable (``E = U^T J_k Z``); damped directions are left free.

        SCALE: stage 1 maximises ``s`` (``min (s-1)^2/2 + reg ||y||^2/2``) subject
        to ``E y = U^T (s xdot_k - J_k u_prev)`` and the constraints; if no
        ``s`` in [0, 1] is feasible it minimises the residual instead. MIN_ERROR:
        stage 1 minimises ``||E y - U^T (xdot_k - J_k u_prev)||^2``. Stage 2 fixes
        what stage 1 achieved and minimises ``||y||^2`` (the SNS minimum norm).

        Returns:
            False if quadprog failed: the level then holds ``u_prev`` with
            ``s = 0``, which is feasible and keeps the higher levels.
        """
        u_prev = self._u.copy()
        if r == 0:
            scales[k] = 1.0
            return True
        Z = self._Zc[:, :r]
        o, m = int(offs[k]), int(offs[k + 1] - offs[k])
        Jk = Jv[o : o + m] * self._wis
        xk = xv[o : o + m]
        rows, lo, hi = self._weighted_rows(Cg, gl, gu, bl, bu)
        M0 = Jk @ Z
        U, S, _ = np.linalg.svd(M0, full_matrices=False)
        keep = S >= max(self.tolerance, 1e-12 * max(1.0, S[0] if S.size else 0.0))
        Uk = U[:, keep]
        E = Uk.T @ M0
        xt = Uk.T @ xk
        ct = Uk.T @ (Jk @ u_prev)
        rho = E.shape[0]
        A, b, eq = _ineq_rows(rows @ Z, rows @ u_prev, lo, hi, 1e-11)
        if eq:  # Equality rows (lower == upper) of the reduced problem lead.
            A_eq, b_eq, A, b = A[:eq], b[:eq], A[eq:], b[eq:]
        else:
            A_eq = np.zeros((0, r))
            b_eq = np.zeros(0)
        scale = 1.0
        if modes[k] == TaskSolveMode.SCALE:
            zr = np.zeros((A.shape[0], 1))
            A1 = np.vstack(
                [
                    np.hstack([E, -xt[:, None]]),
                    np.hstack([A_eq, np.zeros((eq, 1))]),
                    np.hstack([A, zr]),
                    np.eye(1, r + 1, r),
                    -np.eye(1, r + 1, r),
                ]
            )
            b1 = np.concatenate([-ct, b_eq, b, [0.0, -1.0]])
            G1 = np.diag(np.concatenate([np.full(r, _QP_REG), [1.0]]))
            a1 = np.eye(1, r + 1, r)[0]
            z = _quadprog(G1, a1, A1, b1, rho + eq)
            # No scale keeps the task direction: least residual along the ray.
            D = np.hstack([E, -xt[:, None]])
            for reg in (_QP_REG, 1e3 * _QP_REG):
                if z is not None:
                    break
                G1 = D.T @ D + reg * np.eye(r + 1)
                a1 = -D.T @ ct + reg * np.eye(1, r + 1, r)[0]
                z = _quadprog(G1, a1, A1[rho:], b1[rho:], eq)
            if z is None:
                scales[k] = 0.0
                return False
            y1 = z[:r]
            scale = float(min(max(z[r], 0.0), 1.0))
            target = E @ y1
        else:
            y1 = None
            for reg in (_QP_REG, 1e3 * _QP_REG):
                if y1 is not None:
                    break
                y1 = _quadprog(
                    E.T @ E + reg * np.eye(r),
                    E.T @ (xt - ct),
                    np.vstack([A_eq, A]),
                    np.concatenate([b_eq, b]),
                    eq,
                )
            if y1 is None:
                scales[k] = 0.0
                return False
            target = E @ y1
        # Stage 2: keep what stage 1 achieved, minimum norm.
        y2 = _quadprog(
            np.eye(r),
            np.zeros(r),
            np.vstack([E, A_eq, A]),
            np.concatenate([target, b_eq, b]),
            rho + eq,
        )
        y = y1 if y2 is None else y2
        u = u_prev + Z @ y
        if _max_violation(rows, u, lo, hi) > _max_violation(rows, u_prev + Z @ y1, lo, hi):
            u = u_prev + Z @ y1
        self._u[:] = u
        scales[k] = scale
        return True


def _ineq_rows(R, v0, lo, hi, slack, widen=True):
    """Inequalities ``A y >= b`` for ``lo <= R y + v0 <= hi``, equalities first.

    Rows that cannot move (``R_i = 0``) are dropped; rows with ``lo == hi`` are
    returned first as equalities (their count is the third return value).
    With ``widen`` each bound is widened to contain the current point ``y = 0``
    (which the previous level left feasible up to rounding) plus
    ``slack * (1 + |bound|)``, so ``y = 0`` is strictly feasible for quadprog.
    """
    with np.errstate(invalid="ignore"):
        moving = np.abs(R).max(axis=1, initial=0.0) > 1e-14
        R, v0, lo, hi = R[moving], v0[moving], lo[moving], hi[moving]
        is_eq = np.isfinite(lo) & (lo == hi)
        has_lo = np.isfinite(lo) & ~is_eq
        has_hi = np.isfinite(hi) & ~is_eq
        A = np.vstack([R[is_eq], R[has_lo], -R[has_hi]])
        lo_h, v_lo = lo[has_lo], v0[has_lo]
        hi_h, v_hi = hi[has_hi], v0[has_hi]
        top = 0.0 if widen else np.inf
        b = np.concatenate(
            [
                lo[is_eq] - v0[is_eq],
                np.minimum(lo_h - v_lo, top) - slack * (1.0 + np.abs(lo_h)),
                np.minimum(v_hi - hi_h, top) - slack * (1.0 + np.abs(hi_h)),
            ]
        )
    return A, b, int(is_eq.sum())


def _start_by_projection(rows, lo, hi, max_rounds: int = 4):
    """Minimum-norm point on the violated rows' bounds, if it satisfies every row.

    Starting from ``u = 0``, the rows ``u`` violates are made equalities at the bound
    they cross and ``u`` becomes the minimum-norm point satisfying them; rows violated
    by that point join the set, a few rounds at most. This is the exact QP answer
    whenever the final active set is right (the usual case: a few damper rows asking
    for recovery), found with one small least-squares solve per round.

    Returns:
        The point, or None when the rounds do not reach a feasible point.
    """
    n = rows.shape[1]
    u = np.zeros(n)
    active = np.zeros(rows.shape[0], dtype=bool)
    target = np.zeros(rows.shape[0])
    for _ in range(max_rounds):
        v = rows @ u
        below = v < lo - _SNAP_TOL
        above = v > hi + _SNAP_TOL
        if not (below.any() or above.any()):
            return u
        new = (below | above) & ~active
        if not new.any():
            return None  # an active row is still missed: inconsistent guess, use the QP
        active |= new
        target[below] = lo[below]
        target[above] = hi[above]
        A = rows[active]
        u = np.linalg.lstsq(A, target[active], rcond=None)[0]
    v = rows @ u
    ok = np.all(v >= lo - _SNAP_TOL) and np.all(v <= hi + _SNAP_TOL)
    return u if ok else None


def _quadprog(G, a, A, b, meq):
    """``argmin 1/2 x^T G x - a^T x`` s.t. ``A x >= b`` (first ``meq`` rows equal), or None."""
    import quadprog

    try:
        if A.shape[0] == 0:
            return quadprog.solve_qp(G, a)[0]
        return quadprog.solve_qp(G, a, np.ascontiguousarray(A.T), b, meq)[0]
    except ValueError:
        return None


def _max_violation(rows, u, lo, hi) -> float:
    """Largest violation of ``lo <= rows u <= hi``."""
    v = rows @ u
    return float(np.max(np.maximum(lo - v, v - hi), initial=0.0))


def solve(
    goals: Sequence[np.ndarray],
    jacobians: Sequence[np.ndarray],
    C: np.ndarray | None = None,
    lower: np.ndarray | None = None,
    upper: np.ndarray | None = None,
    *,
    box_lower: np.ndarray | None = None,
    box_upper: np.ndarray | None = None,
    joint_weights: np.ndarray | None = None,
    modes: Sequence[TaskSolveMode | str | int] | None = None,
    damping: float = DEFAULT_DAMPING,
    tolerance: float = DEFAULT_TOLERANCE,
    max_iterations: int | None = None,
    exact_fallback: bool = True,
) -> VelocitySolverResult:
    """Solve a prioritized velocity IK problem with the SNS method.

    Finds ``dq`` such that, level by level (highest priority first), task ``k``
    achieves ``J_k dq = s_k xdot_k`` with the largest scale ``s_k`` in [0, 1]
    (SCALE mode) or the least-squares best ``J_k dq ~ xdot_k`` (MIN_ERROR
    mode), without changing what the higher levels achieved, while
    ``lower <= C dq <= upper`` and ``box_lower <= dq <= box_upper`` always hold.
    Among equally good solutions the weighted norm ``sum_i w_i dq_i^2`` of the
    correction made at each level is minimal.

    This convenience wrapper builds a :class:`SNSSolver` per call; reuse an
    :class:`SNSSolver` in a control loop. It never raises.

    Args:
        goals: Task velocities ``xdot_k``, highest priority first, each ``(m_k,)``.
        jacobians: Task Jacobians ``J_k``, each ``(m_k, n)``.
        C: General constraint rows ``(p, n)`` or None.
        lower: Lower bounds of ``C dq``, ``(p,)``, ``-inf`` allowed.
        upper: Upper bounds of ``C dq``, ``(p,)``, ``+inf`` allowed.
        box_lower: Joint velocity lower bounds ``(n,)`` [rad/s or m/s].
        box_upper: Joint velocity upper bounds ``(n,)`` [rad/s or m/s].
        joint_weights: Positive metric weights ``(n,)``; heavier joints move less.
        modes: One :class:`TaskSolveMode` per task (default all SCALE).
        damping: Damping ``lambda`` of near-singular directions (>= 0).
        tolerance: Singular-value threshold ``epsilon`` below which damping
            starts (>= 0); directions above it are inverted exactly.
        max_iterations: Cap on saturation iterations per level (default ``n + 2``).
        exact_fallback: See :class:`SNSSolver`.

    Returns:
        A :class:`VelocitySolverResult`; see :meth:`SNSSolver.solve`.
        With no task rows the status is EMPTY_PROBLEM and ``solution`` is the
        minimum-norm point of the constraint set (``dq = 0`` when feasible).
    """
    t0 = time.perf_counter()
    nlev = len(goals) if isinstance(goals, Sequence) else 0
    n = _infer_n(jacobians, C, box_lower, box_upper, joint_weights)
    try:
        solver = SNSSolver(
            n,
            joint_weights=joint_weights,
            damping=damping,
            tolerance=tolerance,
            max_iterations=max_iterations,
            exact_fallback=exact_fallback,
        )
    except ShapeError as exc:
        status, message = SolverStatus.SHAPE_MISMATCH, str(exc)
    except (InvalidInput, ValueError, TypeError) as exc:
        status, message = SolverStatus.INVALID_INPUT, str(exc)
    else:
        return solver.solve(
            goals, jacobians, C, lower, upper, box_lower=box_lower, box_upper=box_upper, modes=modes
        )
    return VelocitySolverResult(
        solution=np.zeros(n),
        status=status,
        status_message=message,
        task_scales=np.zeros(nlev),
        task_errors=np.zeros(nlev),
        computation_time_ms=(time.perf_counter() - t0) * 1e3,
    )


def _infer_n(jacobians, C, box_lower, box_upper, joint_weights) -> int:
    """Number of joints from the first input that tells it (0 if none does)."""
    try:
        if isinstance(jacobians, Sequence) and len(jacobians) > 0:
            shape = np.shape(jacobians[0])
            if len(shape) == 2:
                return int(shape[1])
        if C is not None and np.ndim(C) == 2 and np.size(C) > 0:
            return int(np.shape(C)[1])
        for v in (box_lower, box_upper, joint_weights):
            if v is not None and np.ndim(v) == 1:
                return int(np.size(v))
    except (ValueError, TypeError):
        pass
    return 0
