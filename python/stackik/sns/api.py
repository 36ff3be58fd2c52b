"""Public API of the SNS core: :class:`TaskSolveMode`, :class:`SNSSolver`, :func:`solve`.

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
bounds, with an exact per-level QP (a dual active-set solver run in the kernel,
:mod:`stackik.sns.levelqp`) as the fallback when the greedy saturation cannot find a
feasible scale. See
``docs/sns.md`` for the equations.

This module checks shapes and modes, stacks the levels into the solver's buffers,
runs the entry kernel :func:`stackik.sns.run.sns_run` (compiled through
:mod:`stackik._jit`) with the QP fallbacks, and builds the result. Nothing here
raises from a solve: problems become a status and a message.

Units: ``dq`` is in the joint velocity units of the model [rad/s or m/s per
joint]; each task velocity is in the units of its Jacobian's rows; constraint
bounds are in the units of ``C dq``.
"""

from __future__ import annotations

import enum
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stackik import _jit, _validate
from stackik.errors import InvalidInput, ShapeError
from stackik.results import SolverStatus, VelocitySolverResult

from . import qp, run
from .codes import (
    ACTIVE_TOL,
    BAD_C,
    BAD_GOAL,
    BAD_JACOBIAN,
    BAD_SHAPE,
    FEAS_TOL,
    FLAG_HAVE_START,
    FLAG_HOLD,
    FLAG_PYTHON_FALLBACKS,
    FLAG_SKIP_CHECKS,
    INVERTED_BOUNDS,
    INVERTED_BOX,
    LEVEL_QP_FAILED,
    MODE_MIN_ERROR,
    MODE_SCALE,
    NAN_BOUNDS,
    NAN_BOX,
    NEED_LEVEL,
    NEED_START,
    OK,
    SHAPE_BOUNDS,
    SHAPE_BOX,
    SHAPE_C,
    SHAPE_J,
    SHAPE_MODE_VALUE,
    SHAPE_MODES,
    SHAPE_OFFSETS,
    SHAPE_ORDER,
    SHAPE_X,
    VIOLATION_TOL,
)

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

_F64 = np.float64
_F64_DTYPE = np.dtype(np.float64)

_Modes = Sequence["TaskSolveMode | str | int"]


class TaskSolveMode(enum.IntEnum):
    """How a priority level treats a task it cannot fully achieve.

    Attributes:
        SCALE: Scale the whole task velocity by ``s_k`` in [0, 1] (direction
            kept) to the largest value the constraints allow; default.
        MIN_ERROR: Least-squares best effort: minimise ``||J_k dq - xdot_k||``
            inside the constraints (direction may change); ``s_k`` is reported as 1.
        SCALE_ELASTIC: EmbodiK's SCALE with the elastic band: solved exactly as SCALE
            (a level may mix it with SCALE); a solver with an active task in this mode
            enables its elastic band with EmbodiK's defaults (``delta_max`` 0.05,
            ``expand_rate`` 0.01, ``decay_rate`` 0.2, ``stall_threshold`` 3, only
            saturated joints) if the band is not enabled yet, so limit-dominated stalls
            widen the saturated joints' limits (see
            :meth:`stackik.KinematicsSolver.enable_elastic_band`).
    """

    SCALE = MODE_SCALE
    MIN_ERROR = MODE_MIN_ERROR
    SCALE_ELASTIC = 2

    @property
    def kernel_mode(self) -> int:
        """The SNS kernel's mode code (SCALE_ELASTIC solves as SCALE)."""
        return MODE_MIN_ERROR if self is TaskSolveMode.MIN_ERROR else MODE_SCALE


class _Rejected(Exception):
    """An input the solver refuses: becomes a result with this status and message."""

    def __init__(self, status: SolverStatus, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _fresh(a: object) -> np.ndarray:
    """Return ``a`` as a C-contiguous, aligned float64 array (no copy when already one)."""
    if type(a) is np.ndarray and a.dtype is _F64_DTYPE and a.flags.carray:
        return a
    return np.array(a, dtype=_F64, order="C")


def _mode_value(mode: Any) -> int:
    """Map a :class:`TaskSolveMode`, its name or its value to an int; -1 if unknown."""
    if isinstance(mode, str):
        try:
            return TaskSolveMode[mode.strip().upper()].kernel_mode
        except KeyError:
            return -1
    try:
        return TaskSolveMode(mode).kernel_mode
    except (ValueError, TypeError):
        return -1


def _level_guess(goals: Any) -> int:
    """``len(goals)``, or 0 when it has none (for the result of a rejected call)."""
    try:
        return len(goals)
    except TypeError:
        return 0


def _checked_weights(n: int, joint_weights: Sequence[float] | np.ndarray | None) -> np.ndarray:
    """The joint weights as a float64 ``(n,)`` array of positive finite values.

    Raises:
        ShapeError: Not of shape ``(n,)``.
        InvalidInput: Not positive and finite.
    """
    if joint_weights is None:
        return np.ones(n)
    w = _validate.vector(joint_weights, n, "joint_weights").copy()
    if not np.all(w > 0.0):
        k = int(np.flatnonzero(w <= 0.0)[0])
        raise InvalidInput(
            f"joint_weights must be > 0, joint_weights[{k}] = {w[k]:g}",
            what="joint_weights",
            value=float(w[k]),
        )
    return w


def _checked_count(n: int) -> int:
    """``n`` as a non-negative int, else :class:`InvalidInput`."""
    return _validate.count(n, "n", minimum=0)


def _compiled_entry() -> Callable[..., float]:
    """The entry kernel as bound by :func:`stackik._jit.start`.

    The dispatcher once kernels are compiled (or the plain function without numba);
    during a first use that runs plain Python (:func:`stackik._jit.start`), the
    :class:`~stackik._jit.Kernel` itself, which follows the switch to compiled code.
    """
    _jit.start()
    return _jit.follow(run.sns_run)


def _kernel_setting(index: int, what: str, doc: str) -> Any:
    """A setting kept in the kernel's parameter vector ``_prm[index]`` (>= 0, finite)."""

    def get(self: SNSSolver) -> float:
        return float(self._prm[index])

    def put(self: SNSSolver, value: float) -> None:
        self._prm[index] = _validate.positive_float(value, what, allow_zero=True)

    return property(get, put, doc=doc + " (>= 0, finite; checked when set)")


class SNSSolver:
    """Reusable SNS solver for a fixed number of joints (the 1 kHz hot path).

    Buffers are allocated once; each :meth:`solve` copies the task rows into
    them and runs the compiled kernel; :meth:`solve_stacked` runs it on rows the
    caller has already stacked. The configuration is validated here and raises
    typed errors; the solves never raise and report problems through
    :attr:`VelocitySolverResult.status`.

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
            that level exactly with a QP (in the compiled kernel). If False
            the level holds instead (``s_k = 0``, the higher levels' ``dq`` is
            kept; always feasible, no QP). Levels with one direction left are
            always solved exactly in closed form; MIN_ERROR levels always use
            the QP when the greedy cannot reach ``s = 1``.
        use_numba: Run the kernels compiled with numba (if installed). False runs
            the identical kernels as plain Python, all the way down (slow; for
            debugging and tests; numba is not imported).

    Raises:
        InvalidInput: ``n`` negative, weights not positive and finite, damping
            or tolerance negative or not finite, ``max_iterations < 1``.
        ShapeError: ``joint_weights`` is not of shape ``(n,)``.
    """

    n: int = _validate.fixed_property(
        "n", "make a solver of the other size", "Number of joint velocity variables (fixed)."
    )
    damping: float = _kernel_setting(0, "damping", "Damping ``lambda`` (near-singular directions).")
    tolerance: float = _kernel_setting(1, "tolerance", "Singular-value threshold ``epsilon``.")

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
        n = _checked_count(n)
        w = _checked_weights(n, joint_weights)
        damping = _validate.positive_float(damping, "damping", allow_zero=True)
        tolerance = _validate.positive_float(tolerance, "tolerance", allow_zero=True)
        if max_iterations is not None:
            max_iterations = _validate.count(max_iterations, "max_iterations")
        self._n = n
        self._joint_weights = w
        exact_fallback = _validate.flag(exact_fallback, "exact_fallback")
        # Kernel flags of a fresh solve: hold (no exact fallback), or the quadprog reference.
        self._flags = 0 if exact_fallback else FLAG_HOLD
        self._wis = 1.0 / np.sqrt(w)
        self._prm = np.array([float(damping), float(tolerance), FEAS_TOL, ACTIVE_TOL])
        # [start level, max iterations, flags, r]; only a QP fallback changes [0], [2], [3]
        # (_resumed); [1] is max_iterations.
        iterations = int(max_iterations) if max_iterations is not None else n + 2
        self._iprm = np.array([0, iterations, self._flags, n], dtype=np.int64)
        self._resumed = False
        self._info = np.zeros(8, dtype=np.int64)
        self._u = np.zeros(n)
        self._Zc = np.zeros((n, n))
        self._Zn = np.zeros((n, n))
        self._rows = 0
        self._J = np.zeros((0, n))
        self._x = np.zeros(0)
        self._views: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # (J, x) of each height
        self._offs_cache: dict[int, np.ndarray] = {}
        self._modes_cache: dict[int, np.ndarray] = {}
        self._box_lo = np.full(n, -np.inf)
        self._box_hi = np.full(n, np.inf)
        self._C0 = np.zeros((0, n))
        self._b0 = np.zeros(0)
        self._act = np.zeros(n, dtype=np.int64)
        self._levels: dict[int, np.ndarray] = {}  # how each level was solved, per level count
        self._run: Callable[..., float]
        self._use_numba = _validate.flag(use_numba, "use_numba")
        if self._use_numba:
            self._run = _compiled_entry()
        else:
            self._run = run.python_sns_run()

    # -- settings (checked when set, in effect at the next solve) ----------------------------
    @property
    def joint_weights(self) -> np.ndarray:
        """Positive metric weights, size ``n`` (a read-only view; set a new vector)."""
        return _validate.read_only_view(self._joint_weights)

    @joint_weights.setter
    def joint_weights(self, weights: Sequence[float] | np.ndarray) -> None:
        w = _checked_weights(self._n, weights)
        self._joint_weights = w
        self._wis[:] = 1.0 / np.sqrt(w)

    @property
    def max_iterations(self) -> int:
        """Cap on saturation iterations per priority level (>= 1)."""
        return int(self._iprm[1])

    @max_iterations.setter
    def max_iterations(self, value: int) -> None:
        self._iprm[1] = _validate.count(value, "max_iterations")

    @property
    def exact_fallback(self) -> bool:
        """Solve a level the greedy saturation cannot scale with the exact QP (else hold)."""
        return not self._flags & FLAG_HOLD

    @exact_fallback.setter
    def exact_fallback(self, value: bool) -> None:
        hold = 0 if _validate.flag(value, "exact_fallback") else FLAG_HOLD
        self._flags = (self._flags & ~FLAG_HOLD) | hold
        self._iprm[2] = self._flags

    @property
    def compiled(self) -> bool:
        """Whether the solves run compiled kernels now (False: plain Python)."""
        return self._use_numba and _jit.is_compiled()

    def _reference_qp(self, enable: bool = True) -> None:
        """Run the exact fallbacks in Python with ``quadprog`` (the reference).

        The compiled kernel then hands a level that needs the exact QP back
        (``NEED_LEVEL``, solved by :func:`stackik.sns.qp.qp_level`) and so does a start
        point that needs more than ``clip(0, box)`` (``NEED_START``,
        :func:`stackik.sns.qp.qp_start`); by default both are solved in the kernel
        (:mod:`stackik.sns.levelqp`, :mod:`stackik.sns.startpoint`). For tests and
        debugging.
        """
        flag = FLAG_PYTHON_FALLBACKS if enable else 0
        self._flags = (self._flags & ~FLAG_PYTHON_FALLBACKS) | flag
        self._iprm[2] = self._flags

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
        modes: _Modes | None = None,
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
        nlev = 0
        try:
            if (type(goals) not in (list, tuple) and not isinstance(goals, Sequence)) or (
                type(jacobians) not in (list, tuple) and not isinstance(jacobians, Sequence)
            ):
                raise _Rejected(
                    SolverStatus.INVALID_INPUT,
                    "goals and jacobians must be sequences (one entry per priority level)",
                )
            nlev = len(goals)
            J, x, offs = self._stack_levels(goals, jacobians, nlev)
            mode_arr = self._mode_array(modes, nlev)
            Cg, gl, gu = self._general_rows(C, lower, upper)
            bl, bu = self._box(box_lower, box_upper)
        except _Rejected as rej:
            return self._result_error(rej.status, rej.message, t0, nlev)
        except Exception as exc:  # the hot path never raises
            return self._unexpected(exc, t0, _level_guess(goals))
        return self._solve_stacked(t0, J, x, offs, mode_arr, Cg, gl, gu, bl, bu)

    def solve_stacked(
        self,
        J: np.ndarray,
        x: np.ndarray,
        offsets: np.ndarray,
        modes: np.ndarray | None,
        C: np.ndarray,
        lower: np.ndarray,
        upper: np.ndarray,
        box_lower: np.ndarray,
        box_upper: np.ndarray,
    ) -> VelocitySolverResult:
        """Solve a problem whose levels the caller has already stacked (no copies).

        The velocity engine builds its rows in its own buffers and calls this
        directly. Shapes, finiteness and bound order are checked in the compiled
        kernel (``INVALID_INPUT``, naming the argument; the kernels index by the
        shapes without bounds checks, so a mismatch never reaches them). The result
        is bit-identical to :meth:`solve` on the same problem. Never raises.

        Args:
            J: All levels' task rows, highest priority first, ``(M, n)``.
            x: Their task velocities, ``(M,)``.
            offsets: Level ``k`` is rows ``offsets[k]:offsets[k+1]``; int64 ``(L+1,)``
                with ``offsets[0] = 0`` and ``offsets[L] = M``.
            modes: :class:`TaskSolveMode` values, int64 ``(L,)``; None = all SCALE.
            C: General constraint rows ``(p, n)`` (``p`` may be 0).
            lower: Lower bounds of ``C dq``, ``(p,)`` (``-inf`` allowed).
            upper: Upper bounds of ``C dq``, ``(p,)`` (``+inf`` allowed).
            box_lower: Joint velocity lower bounds ``(n,)`` [rad/s or m/s].
            box_upper: Joint velocity upper bounds ``(n,)`` [rad/s or m/s].

        Every array is C-contiguous float64 (int64 where said) and stays the
        caller's: it is read, never written, and not kept after the call.

        Returns:
            The :class:`VelocitySolverResult`, as :meth:`solve`.
        """
        t0 = time.perf_counter()
        return self._solve_stacked(t0, J, x, offsets, modes, C, lower, upper, box_lower, box_upper)

    # ------------------------------------------------- validation and stacking
    def _stack_levels(
        self, goals: Sequence[Any], jacobians: Sequence[Any], nlev: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Check the task shapes and copy the rows into the stacked buffers.

        Every Jacobian's shape is checked before any goal's (the first bad one is
        reported).

        Returns:
            ``(J, x, offsets)``: views of the buffers and the level offsets.
        """
        if len(jacobians) != nlev:
            raise _Rejected(
                SolverStatus.SHAPE_MISMATCH,
                f"expected one Jacobian per goal: {nlev} goals, {len(jacobians)} jacobians",
            )
        n = self._n
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
                raise _Rejected(
                    SolverStatus.SHAPE_MISMATCH,
                    f"jacobians[{k}]: expected shape (m, {n}), given {Jk.shape}",
                )
            jac.append(Jk)
            total += Jk.shape[0]
            offs[k + 1] = total
        if total > self._rows:
            self._rows = max(total, 2 * self._rows)
            self._J = np.zeros((self._rows, n))
            self._x = np.zeros(self._rows)
            self._views.clear()
        views = self._views.get(total)
        if views is None:
            views = self._views[total] = (self._J[:total], self._x[:total])
        J, x = views
        o = 0
        for k, Jk in enumerate(jac):
            m = Jk.shape[0]
            g = goals[k]
            if type(g) is not np.ndarray:
                g = np.asarray(g, dtype=_F64)
            if g.shape != (m,):
                raise _Rejected(
                    SolverStatus.SHAPE_MISMATCH,
                    f"goals[{k}]: expected shape ({m},) to match jacobians[{k}], given {g.shape}",
                )
            J[o : o + m] = Jk
            x[o : o + m] = g
            o += m
        return J, x, offs

    def _all_scale(self, nlev: int) -> np.ndarray:
        """The (cached) int64 modes array of ``nlev`` SCALE levels."""
        mode_arr = self._modes_cache.get(nlev)
        if mode_arr is None:
            mode_arr = self._modes_cache[nlev] = np.zeros(nlev, dtype=np.int64)
        return mode_arr

    def _mode_array(self, modes: _Modes | None, nlev: int) -> np.ndarray:
        """The modes as an int64 array of :class:`TaskSolveMode` values, one per level."""
        if modes is None:
            return self._all_scale(nlev)
        if len(modes) != nlev:
            raise _Rejected(
                SolverStatus.SHAPE_MISMATCH,
                f"modes: expected {nlev} entries (one per task), given {len(modes)}",
            )
        mode_arr = np.array([_mode_value(md) for md in modes], dtype=np.int64)
        if nlev and mode_arr.min() < 0:
            bad = int(np.flatnonzero(mode_arr < 0)[0])
            raise _Rejected(
                SolverStatus.INVALID_INPUT,
                f"modes[{bad}]: unknown task mode {modes[bad]!r}; expected one of "
                f"{[md.name for md in TaskSolveMode]}",
            )
        return mode_arr

    def _general_rows(
        self, C: Any, lower: Any, upper: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The general rows and bounds as C-contiguous float64 arrays (shape-checked)."""
        n = self._n
        if C is None or (
            type(C) is np.ndarray and C.size == 0 and C.ndim == 2 and C.shape[1] in (0, n)
        ):
            for name, b in (("lower", lower), ("upper", upper)):
                if b is not None and np.size(b) != 0:
                    raise _Rejected(
                        SolverStatus.SHAPE_MISMATCH,
                        f"{name}: expected shape (0,) since C is empty, given {np.shape(b)}",
                    )
            return self._C0, self._b0, self._b0
        Cg = _fresh(C)
        if Cg.ndim != 2 or Cg.shape[1] != n:
            raise _Rejected(
                SolverStatus.SHAPE_MISMATCH, f"C: expected shape (p, {n}), given {Cg.shape}"
            )
        p = Cg.shape[0]
        gl = np.full(p, -np.inf) if lower is None else _fresh(lower)
        gu = np.full(p, np.inf) if upper is None else _fresh(upper)
        if gl.shape != (p,) or gu.shape != (p,):
            name, b = ("lower", gl) if gl.shape != (p,) else ("upper", gu)
            raise _Rejected(
                SolverStatus.SHAPE_MISMATCH,
                f"{name}: expected shape ({p},) to match C, given {b.shape}",
            )
        return Cg, gl, gu

    def _box(self, box_lower: Any, box_upper: Any) -> tuple[np.ndarray, np.ndarray]:
        """The joint velocity box as C-contiguous float64 ``(n,)`` arrays (shape-checked)."""
        n = self._n
        bl = self._box_lo if box_lower is None else _fresh(box_lower)
        bu = self._box_hi if box_upper is None else _fresh(box_upper)
        if bl.shape != (n,) or bu.shape != (n,):
            name, b = ("box_lower", bl) if bl.shape != (n,) else ("box_upper", bu)
            raise _Rejected(
                SolverStatus.SHAPE_MISMATCH, f"{name}: expected shape ({n},), given {b.shape}"
            )
        return bl, bu

    # ------------------------------------------------- kernel and fallbacks
    def _solve_stacked(
        self,
        t0: float,
        J: np.ndarray,
        x: np.ndarray,
        offs: np.ndarray,
        modes: np.ndarray | None,
        Cg: np.ndarray,
        gl: np.ndarray,
        gu: np.ndarray,
        bl: np.ndarray,
        bu: np.ndarray,
    ) -> VelocitySolverResult:
        """Run the kernel and its QP fallbacks on stacked levels; never raises."""
        nlev = 0
        try:
            nlev = offs.shape[0] - 1
            if nlev < 0:
                message = "offsets is empty: expected L + 1 >= 1 entries (0, ..., rows of J)"
                return self._result_error(SolverStatus.INVALID_INPUT, message, t0, 0)
            if modes is None:
                modes = self._all_scale(nlev)
            if self._n == 0:
                return self._result_error(
                    SolverStatus.EMPTY_PROBLEM, "no joint velocity variables (n == 0)", t0, nlev
                )
            return self._run_kernel(t0, J, x, offs, modes, Cg, gl, gu, bl, bu)
        except Exception as exc:  # the hot path never raises
            return self._unexpected(exc, t0, nlev)

    def _run_kernel(
        self,
        t0: float,
        J: np.ndarray,
        x: np.ndarray,
        offs: np.ndarray,
        modes: np.ndarray,
        Cg: np.ndarray,
        gl: np.ndarray,
        gu: np.ndarray,
        bl: np.ndarray,
        bu: np.ndarray,
    ) -> VelocitySolverResult:
        """Run the kernel; finish in Python what it hands back, and resume.

        The kernel solves the QP fallback levels and the start point itself; it hands
        back only an empty constraint set (``NEED_START``: the least-violating point,
        :func:`stackik.sns.qp.qp_start`), or, with :meth:`_reference_qp`, every start
        point and QP level to the ``quadprog`` reference.
        """
        n = self._n
        nlev = offs.shape[0] - 1
        if self._act.shape[0] < n + Cg.shape[0]:
            self._act = np.zeros(n + Cg.shape[0], dtype=np.int64)
        act = self._act
        dq = np.empty(n)
        scales = np.empty(nlev)
        errs = np.empty(nlev)  # (every entry written when the kernel returns OK)
        levels = self._levels.get(nlev)
        if levels is None:
            levels = self._levels[nlev] = np.zeros(nlev, dtype=np.int64)
        iprm = self._iprm
        info = self._info
        if self._resumed:  # a QP fallback of an earlier solve changed iprm
            iprm[0] = 0
            iprm[2] = self._flags
            iprm[3] = n
            self._resumed = False
        qp_levels: list[int] = []
        held: list[int] = []
        infeasible_msg = ""
        while True:
            violation = self._run(
                J, x, offs, modes, Cg, gl, gu, bl, bu, self._wis, self._prm, iprm, self._u,
                self._Zc, self._Zn, dq, scales, errs, act, levels, info,
            )  # fmt: skip
            code = info.item(0)
            if code == OK:
                if info.item(6):  # levels solved by the in-kernel QP fallback
                    qp_levels += np.flatnonzero(levels).tolist()
                    held += np.flatnonzero(levels == LEVEL_QP_FAILED).tolist()
                break
            if code == NEED_LEVEL:
                k = int(info[1])
                qp_levels.append(k)
                if not self._qp_level(J, x, offs, modes, Cg, gl, gu, bl, bu, scales):
                    held.append(k)
            elif code == NEED_START:
                compiled = not (self._flags & FLAG_PYTHON_FALLBACKS)
                gl, gu, infeasible_msg = qp.qp_start(
                    Cg, gl, gu, bl, bu, self._wis, self._u, compiled
                )
                self._resumed = True
                iprm[0] = 0
                iprm[2] = FLAG_SKIP_CHECKS | FLAG_HAVE_START | self._flags
            else:
                message = self._validation_message(code, offs)
                return self._result_error(SolverStatus.INVALID_INPUT, message, t0, nlev)
        total = int(offs[nlev])
        return self._result(t0, dq, scales, errs, total, violation, qp_levels, held, infeasible_msg)

    def _qp_level(
        self,
        J: np.ndarray,
        x: np.ndarray,
        offs: np.ndarray,
        modes: np.ndarray,
        Cg: np.ndarray,
        gl: np.ndarray,
        gu: np.ndarray,
        bl: np.ndarray,
        bu: np.ndarray,
        scales: np.ndarray,
    ) -> bool:
        """Solve the level the kernel handed back with the exact QP; set up the resume.

        Returns:
            False if a quadprog stage failed (the level holds, ``s = 0``).
        """
        info = self._info
        iprm = self._iprm
        k = int(info[1])
        rows = qp.weighted_rows(Cg, gl, gu, bl, bu, self._wis)
        ok = qp.qp_level(
            J, x, offs, modes, rows, self._wis, self.tolerance, self._u, self._Zc, k,
            int(info[3]), scales,
        )  # fmt: skip
        rn = int(info[4])
        self._Zc[:, :rn] = self._Zn[:, :rn]
        self._resumed = True
        iprm[0] = k + 1
        iprm[2] = FLAG_SKIP_CHECKS | FLAG_HAVE_START | self._flags
        iprm[3] = rn
        return ok

    # -------------------------------------------------------------- results
    def _status(
        self,
        total: int,
        violation: float,
        qp_levels: list[int],
        held: list[int],
        infeasible_msg: str,
    ) -> tuple[SolverStatus, str]:
        """Status and message of a finished solve (kernel code OK)."""
        status = SolverStatus.SUCCESS
        message = "solved"
        if violation > VIOLATION_TOL and not infeasible_msg:
            status = SolverStatus.CONSTRAINT_VIOLATION
            message = f"numerical trouble: the solution violates a constraint by {violation:.3g}"
        elif infeasible_msg:
            status = SolverStatus.INFEASIBLE
            message = infeasible_msg
        elif total == 0:
            status = SolverStatus.EMPTY_PROBLEM
            message = (
                "no task rows: returned the minimum-norm point of the constraint set "
                "(dq = 0 when it is feasible)"
            )
        elif self._info[7]:
            status = SolverStatus.MAX_ITERATIONS
            message = (
                f"saturation stopped at max_iterations={self.max_iterations} on some "
                "level; the best feasible scale found is returned"
            )
        if qp_levels and status == SolverStatus.SUCCESS:
            message = f"solved (exact QP fallback on levels {qp_levels})"
            if held:
                message += (
                    f"; the exact QP failed on levels {held}, which hold the higher "
                    "levels' solution (s = 0)"
                )
        return status, message

    def _result(
        self,
        t0: float,
        dq: np.ndarray,
        scales: np.ndarray,
        errs: np.ndarray,
        total: int,
        violation: float,
        qp_levels: list[int],
        held: list[int],
        infeasible_msg: str,
    ) -> VelocitySolverResult:
        """The result of a finished solve (kernel code OK)."""
        _, nbox, nact, _, _, iterations, _, hit_max = self._info.tolist()
        if violation == math.inf:  # box_activity: dq overflowed
            return self._result_error(
                SolverStatus.NUMERICAL_ERROR,
                "numerical overflow: the solution is not finite (task or constraint "
                "entries too large for float64 products; scale the problem)",
                t0,
                len(scales),
            )
        if qp_levels or infeasible_msg or hit_max or not total or violation > VIOLATION_TOL:
            status, message = self._status(total, violation, qp_levels, held, infeasible_msg)
        else:  # the common case, without the checks of _status
            status, message = SolverStatus.SUCCESS, "solved"
        active = self._act[:nact].tolist()
        return VelocitySolverResult.of_step(
            dq,
            status,
            message,
            scales,
            errs,
            active[:nbox],
            active[nbox:],
            iterations,
            (time.perf_counter() - t0) * 1e3,
            qp_levels,
        )

    def _result_error(
        self, status: SolverStatus, message: str, t0: float, nlev: int
    ) -> VelocitySolverResult:
        """A zero result with ``status`` and ``message`` (nothing solved)."""
        return VelocitySolverResult(
            solution=np.zeros(self._n),
            status=status,
            status_message=message,
            task_scales=np.zeros(nlev),
            task_errors=np.zeros(nlev),
            computation_time_ms=(time.perf_counter() - t0) * 1e3,
        )

    def _unexpected(self, exc: Exception, t0: float, nlev: int) -> VelocitySolverResult:
        """The result of an exception nothing expected (bad input types, numerical trouble)."""
        status = (
            SolverStatus.INVALID_INPUT
            if isinstance(exc, (TypeError, ValueError))
            else SolverStatus.NUMERICAL_ERROR
        )
        return self._result_error(status, f"unexpected {type(exc).__name__}: {exc}", t0, nlev)

    def _validation_message(self, code: int, offs: np.ndarray) -> str:
        """Name the offending entry of a validation failure reported by the kernel."""
        if code == BAD_SHAPE:
            return self._shape_message()
        i = int(self._info[1])
        j = int(self._info[2])
        if code in (BAD_JACOBIAN, BAD_GOAL):
            k = int(np.searchsorted(offs, i, side="right")) - 1
            row = i - int(offs[k])
            if code == BAD_JACOBIAN:
                return f"jacobians[{k}] contains NaN or inf (row {row}, column {j})"
            return f"goals[{k}] contains NaN or inf (entry {row})"
        return {
            BAD_C: f"C contains NaN or inf (row {i}, column {j})",
            NAN_BOUNDS: f"lower/upper contain NaN (row {i})",
            INVERTED_BOUNDS: f"lower > upper at row {i} (or lower = +inf / upper = -inf)",
            NAN_BOX: f"box_lower/box_upper contain NaN (joint {i})",
            INVERTED_BOX: f"box_lower > box_upper at joint {i} (or lower = +inf / upper = -inf)",
        }.get(code, f"unexpected kernel code {code}")

    def _shape_message(self) -> str:
        """The message of a ``BAD_SHAPE`` (``info``: argument, expected, given)."""
        what, expected, given = (int(v) for v in self._info[1:4])
        return _SHAPE_MESSAGES.get(what, "shape {what}: expected {expected}, given {given}").format(
            what=what, expected=expected, given=given, next=expected + 1
        )


#: The messages of the BAD_SHAPE arguments (``info[1]``) of a stacked problem.
_SHAPE_MESSAGES = {
    SHAPE_J: "J has {given} columns, expected n = {expected}",
    SHAPE_X: "x has {given} entries, expected one per row of J ({expected})",
    SHAPE_OFFSETS: "offsets must run from 0 to the rows of J: expected {expected}, got {given}",
    SHAPE_ORDER: "offsets go back after level {expected}: offsets[{next}] = {given}",
    SHAPE_MODES: "modes has {given} entries, expected one per level ({expected})",
    SHAPE_C: "C has {given} columns, expected n = {expected}",
    SHAPE_BOUNDS: "lower/upper have {given} entries, expected one per row of C ({expected})",
    SHAPE_BOX: "box_lower/box_upper have {given} entries, expected n = {expected}",
    SHAPE_MODE_VALUE: "modes[{expected}] = {given} is not a TaskSolveMode value (0 or 1)",
}


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
    modes: _Modes | None = None,
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


def _infer_n(jacobians: Any, C: Any, box_lower: Any, box_upper: Any, joint_weights: Any) -> int:
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


@_jit.register_warmup
def _warmup() -> None:
    """Solve two tiny problems to load the SNS kernels.

    Two levels, a general row and a box; then rows no step can satisfy together (the
    least-violating start point).
    """
    solver = SNSSolver(3)
    goals = [np.array([0.5]), np.array([0.1, -0.2, 0.3])]
    jacobians = [np.array([[1.0, 0.5, 0.0]]), np.eye(3)]
    lo, hi = np.full(3, -0.3), np.full(3, 0.3)
    row, low, high = np.array([[1.0, 1.0, 1.0]]), np.array([-0.2]), np.array([0.2])
    solver.solve(goals, jacobians, row, low, high, box_lower=lo, box_upper=hi)
    rows = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    lower, upper = np.array([0.1, -np.inf]), np.array([np.inf, -0.1])
    solver.solve(goals, jacobians, rows, lower, upper, box_lower=lo, box_upper=hi)
