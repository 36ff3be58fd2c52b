"""Serial kinematic chains with compiled forward kinematics and a global pose IK.

:class:`SerialChain` extracts the joints on the path from a base frame to a tip frame
of a Pinocchio model into flat arrays, and runs the forward kinematics, the Jacobian and
a complete inverse-kinematics search as compiled loops: the kernels of
:mod:`stackik.ik.chain_kernels`, loaded by :mod:`stackik._jit` (numba is imported on the
first call, never by ``import stackik``). This module is the Python side: construction
from a model, input checks, options, the time budget and the results.

The IK is a projected Levenberg-Marquardt method on the 6-D pose error

    e = [p* - p ; log3(R* R^T)]        (world axes; metres and radians)

with the error-dependent damping of T. Sugihara, "Solvability-unconcerned inverse
kinematics by the Levenberg-Marquardt method", IEEE T-RO 27(5), 2011:
``lambda = E + lambda_bias`` with ``E = 1/2 e^T W_E e``. Joint limits are handled as
bounds: a joint resting on a limit whose step points outward is removed from the step
(active set) and the rest is projected into the limits. When an attempt stagnates, the
search restarts from a uniformly drawn configuration inside the limits (a seeded
xorshift generator inside the kernel makes every run reproducible), keeping the best
configuration seen. A wall-clock budget is enforced in Python between compiled chunks
of iterations.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from .. import _validate
from .._jit import register_warmup
from ..errors import FrameNotFound, InvalidInput
from ..model.joints import JointKind, classify
from ..spatial import ROTATION_TOLERANCE, as_se3, check_pose_stack, check_rotation
from . import chain_kernels as _ck
from .chain_kernels import (
    CONVERGED,
    F_COLS,
    FST_COUNT,
    FST_O_BEST,
    FST_P_BEST,
    IST_ATTEMPT_CAP,
    IST_COUNT,
    IST_ITERS,
    IST_MAX_RESTARTS,
    IST_RESTARTS,
    IST_RNG,
    IST_STATUS,
    IST_WINDOW,
    P_AXIS,
    P_COLS,
    P_HI,
    P_KIND,
    P_LO,
    P_SAMPLE_HI,
    P_SAMPLE_LO,
    PRISMATIC,
    PRM_BIAS,
    PRM_COUNT,
    PRM_STALL_RATIO,
    PRM_TOL_O,
    PRM_TOL_P,
    PRM_W_ROT,
    REVOLUTE,
    RUNNING,
    rng_seed_state,
)

if TYPE_CHECKING:
    from ..model.robot import RobotModel

__all__ = ["ChainIKResult", "SerialChain"]

# Kernels are called as ``_ck.<name>``: once stackik._jit has loaded them, the names of
# the kernels module are the numba dispatchers, so a call goes to them directly.

#: Magnitude from which a Pinocchio position limit counts as unbounded.
_UNBOUNDED = 1e10
#: Half-width of the range restarts draw an unbounded revolute joint from [rad].
_UNBOUNDED_REVOLUTE_RANGE = math.pi
#: Half-width of the range restarts draw an unbounded prismatic joint from [m].
_UNBOUNDED_PRISMATIC_RANGE = 1.0

#: Iterations between two stagnation checks of one attempt.
_STALL_WINDOW = 8
#: Default share of ``E`` an attempt must shed per window to keep going.
_DEFAULT_STALL_RATIO = 0.5
#: Default cap on the iterations of one attempt before a restart.
_DEFAULT_ATTEMPT_CAP = 100
#: Default damping bias ``lambda_bias`` of Sugihara's rule [m^2] (Sugihara's 1e-3 is far
#: too slow near singular configurations: the singular direction converges at the rate
#: ``lambda / (sigma^2 + lambda)``).
DEFAULT_DAMPING_BIAS = 1e-6
#: Iterations of the first compiled chunk of a timed solve.
_FIRST_CHUNK = 400


# -- public API -------------------------------------------------------------------------------
@dataclass(slots=True)
class ChainIKResult:
    """Outcome of :meth:`SerialChain.solve`.

    Attributes:
        q: Chain configuration [rad or m per joint], inside the joint limits: the solution
            when ``success``, otherwise the best configuration found (lowest weighted
            error ``E``).
        success: Both tolerances were met.
        iterations: LM iterations over all attempts.
        restarts: Random restarts performed.
        position_error: ``|p* - p(q)|`` [m].
        orientation_error: Angle of ``R* R(q)^T`` [rad].
        time_ms: Wall-clock time of the call [ms].
    """

    q: np.ndarray
    success: bool
    iterations: int
    restarts: int
    position_error: float
    orientation_error: float
    time_ms: float


class SerialChain:
    """The joints between a base frame and a tip frame, as flat arrays for compiled kernels.

    Build with :meth:`from_model` or :meth:`from_robot`. Poses are those of the tip frame
    expressed in the base frame (the world when no base frame is given); the chain
    configuration ``q`` holds one value per joint on the path, root to tip: an angle [rad]
    for revolute and continuous joints, a displacement [m] for prismatic ones.

    Attributes:
        model: The Pinocchio model the chain was extracted from.
        tip_frame: Name of the tip frame.
        base_frame: Name of the base frame (``None``: the world).
        joint_names: Names of the chain's joints, root to tip.
        joint_ids: Their Pinocchio joint indices.
        idx_q: Index of each joint's first entry in the model's ``q``.
        idx_v: Index of each joint in the model's ``v``.
        continuous: Whether each joint is a continuous (cos/sin, ``nq = 2``) joint.
        lower: Lower limits [rad or m] (``-inf`` when unbounded); a copy, read only.
        upper: Upper limits [rad or m] (``inf`` when unbounded); a copy, read only.
    """

    def __init__(
        self,
        model: pin.Model,
        tip_frame: str,
        base_frame: str | None,
        joint_ids: list[int],
        placements: np.ndarray,
        table: np.ndarray,
    ) -> None:
        self.model = model
        self.tip_frame = tip_frame
        self.base_frame = base_frame
        self.joint_ids = list(joint_ids)
        self.joint_names = [model.names[j] for j in joint_ids]
        self.idx_q = np.array([model.joints[j].idx_q for j in joint_ids], dtype=np.int64)
        self.idx_v = np.array([model.joints[j].idx_v for j in joint_ids], dtype=np.int64)
        self.continuous = np.array(
            [classify(model.joints[j]) == JointKind.CONTINUOUS for j in joint_ids], dtype=bool
        )
        # Index maps of to_full / from_full: one-coordinate joints, and the (chain index,
        # q index) of each continuous joint's (cos, sin) pair.
        self._plain_k = np.flatnonzero(~self.continuous)
        self._plain_q = self.idx_q[self._plain_k]
        self._cont = [(int(k), int(self.idx_q[k])) for k in np.flatnonzero(self.continuous)]
        self._F = np.ascontiguousarray(placements, dtype=float)
        self._P = np.ascontiguousarray(table, dtype=float)
        self.lower = self._P[:, P_LO].copy()
        self.upper = self._P[:, P_HI].copy()
        self._ns_per_iteration: float | None = None
        # Kernel options of the last call without joint weights (reused while unchanged).
        self._options_key: tuple[Any, ...] | None = None
        self._options: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_model(
        cls, model: pin.Model, tip_frame: str, base_frame: str | None = None
    ) -> SerialChain:
        """Extract the chain from ``base_frame`` (or the world) to ``tip_frame``.

        Args:
            model: Pinocchio model.
            tip_frame: Name of the tip frame (any frame: body, joint, fixed or operational).
            base_frame: Name of a frame on the path from the world to the tip; joints up to
                and including its parent joint are excluded and poses are expressed in it.
                ``None``: the world frame.

        Returns:
            The chain.

        Raises:
            FrameNotFound: A frame name is unknown.
            InvalidInput: The base frame is not on the tip's path, there is no joint
                between them, or a joint on the path is not revolute, prismatic or
                continuous (free-flyer, spherical, planar, helical, mimic, ...).
        """
        if not isinstance(model, pin.Model):
            raise InvalidInput(f"model must be a pinocchio.Model, got {type(model).__name__}")
        tip, joint_ids, M_joint_base = _chain_path(model, tip_frame, base_frame)
        n = len(joint_ids)
        F = np.zeros((n + 1, F_COLS))
        P = np.zeros((n, P_COLS))
        prev = M_joint_base.inverse()  # the first joint's placement is relative to the base
        q_neutral = pin.neutral(model)
        for i, jid in enumerate(joint_ids):
            P[i] = _joint_row(model, jid, q_neutral, tip_frame)
            F[i] = _placement_row(prev * model.jointPlacements[jid])
            prev = pin.SE3.Identity()
        F[n] = _placement_row(prev * tip.placement)
        return cls(model, tip_frame, base_frame, joint_ids, F, P)

    @classmethod
    def from_robot(
        cls, robot: RobotModel, tip_frame: str, base_frame: str | None = None
    ) -> SerialChain:
        """Extract the chain of a :class:`~stackik.model.RobotModel` (see :meth:`from_model`)."""
        return cls.from_model(robot.model, tip_frame, base_frame)

    # -- sizes and mapping ---------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of joints (degrees of freedom) of the chain."""
        return self._P.shape[0]

    def to_full(self, q_chain: object, q_ref: object | None = None) -> np.ndarray:
        """Model configuration with the chain joints set to ``q_chain``.

        Args:
            q_chain: Chain configuration (size :attr:`n`).
            q_ref: Model configuration (size ``model.nq``) holding the joints that are not
                on the chain; ``pin.neutral(model)`` when omitted.

        Returns:
            A new model configuration (continuous joints as ``(cos, sin)``).

        Raises:
            ShapeError: Wrong sizes.
            NonFiniteInput: NaN or inf entries.
        """
        qc = _validate.vector(q_chain, self.n, "q_chain")
        if q_ref is None:
            q = pin.neutral(self.model)
        else:
            q = _validate.vector(q_ref, self.model.nq, "q_ref").copy()
        q[self._plain_q] = qc[self._plain_k]
        for k, i in self._cont:
            q[i] = math.cos(qc[k])
            q[i + 1] = math.sin(qc[k])
        return q

    def from_full(self, q_full: object) -> np.ndarray:
        """Chain configuration read from a model configuration (size ``model.nq``).

        Continuous joints give ``atan2(sin, cos)`` in (-pi, pi].

        Raises:
            ShapeError: Wrong size.
            NonFiniteInput: NaN or inf entries.
        """
        q = _validate.vector(q_full, self.model.nq, "q_full")
        out = q[self.idx_q]  # fancy indexing: a new array
        for k, i in self._cont:
            out[k] = math.atan2(q[i + 1], q[i])
        return out

    # -- kinematics ----------------------------------------------------------------------
    def fk(self, q_chain: object) -> tuple[np.ndarray, np.ndarray]:
        """Pose of the tip in the base frame.

        Args:
            q_chain: Chain configuration (size :attr:`n`) [rad or m].

        Returns:
            ``(R, p)``: rotation (3x3) and position [m] of the tip frame.
        """
        q = np.ascontiguousarray(_validate.vector(q_chain, self.n, "q_chain"))
        R = np.empty((3, 3))
        p = np.empty(3)
        _ck.fk_kernel(self._F, self._P, q, R, p)
        return R, p

    def jacobian(self, q_chain: object) -> np.ndarray:
        """World-aligned 6 x n Jacobian of the tip (Pinocchio's ``LOCAL_WORLD_ALIGNED``).

        Rows 0-2 map joint velocities to the linear velocity of the tip origin [m/s],
        rows 3-5 to the angular velocity [rad/s], both in base-frame axes. Column ``i`` of
        a revolute joint is ``[a_i x (p_tip - o_i) ; a_i]``, of a prismatic one ``[a_i ; 0]``.

        Args:
            q_chain: Chain configuration (size :attr:`n`) [rad or m].
        """
        q = np.ascontiguousarray(_validate.vector(q_chain, self.n, "q_chain"))
        R = np.empty((3, 3))
        p = np.empty(3)
        J = np.empty((6, self.n))
        _ck.jacobian_kernel(self._F, self._P, q, R, p, J)
        return J

    # -- inverse kinematics --------------------------------------------------------------
    def _setup(
        self,
        position_tolerance: float,
        orientation_tolerance: float,
        max_restarts: int,
        joint_weights: object | None,
        orientation_weight: float,
        damping_bias: float,
        attempt_iterations: int,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Validated kernel options ``(wq, prm, ist)``; ``ist`` lacks the RNG state."""
        key = (
            position_tolerance,
            orientation_tolerance,
            max_restarts,
            orientation_weight,
            damping_bias,
            attempt_iterations,
        )
        if joint_weights is None and key == self._options_key and self._options is not None:
            return self._options
        _check_options(
            position_tolerance,
            orientation_tolerance,
            max_restarts,
            orientation_weight,
            damping_bias,
            attempt_iterations,
        )
        wq = self._inverse_weights(joint_weights)
        prm = np.empty(PRM_COUNT)
        prm[PRM_TOL_P] = position_tolerance
        prm[PRM_TOL_O] = orientation_tolerance
        prm[PRM_W_ROT] = orientation_weight
        prm[PRM_BIAS] = damping_bias
        prm[PRM_STALL_RATIO] = _DEFAULT_STALL_RATIO
        ist = np.zeros(IST_COUNT, dtype=np.int64)
        ist[IST_MAX_RESTARTS] = int(max_restarts)
        ist[IST_WINDOW] = _STALL_WINDOW
        ist[IST_ATTEMPT_CAP] = int(attempt_iterations)
        if joint_weights is None:
            self._options_key = key
            self._options = (wq, prm, ist)
        return wq, prm, ist

    def _inverse_weights(self, joint_weights: object | None) -> np.ndarray:
        """``W^-1`` of the LM step from the validated joint weights (ones by default)."""
        if joint_weights is None:
            return np.ones(self.n)
        w = _validate.vector(joint_weights, self.n, "joint_weights")
        if (w <= 0).any():
            raise InvalidInput("joint_weights must be > 0")
        return 1.0 / w

    def _prepare(
        self, target_R: object, target_p: object, seed_q: object
    ) -> tuple[np.ndarray, np.ndarray]:
        """Validated target ``T`` (3x4) and seed clipped into the limits."""
        # C order everywhere: one compiled specialisation per kernel (Pinocchio hands out
        # Fortran-ordered rotations, which would otherwise trigger a second compilation).
        R = np.ascontiguousarray(target_R, dtype=float)
        p = np.ascontiguousarray(target_p, dtype=float)
        s = np.ascontiguousarray(seed_q, dtype=float)
        T = np.empty((3, 4))
        q = np.empty(self.n)
        if (
            R.shape != (3, 3)
            or p.shape != (3,)
            or s.shape != (self.n,)
            or _ck.prepare_kernel(R, p, s, self._P, ROTATION_TOLERANCE, T, q) != 0
        ):
            # Slow path: the shared validators raise the typed error.
            check_rotation(target_R, "target_R")
            _validate.vector(target_p, 3, "target_p")
            _validate.vector(seed_q, self.n, "seed_q")
            raise InvalidInput("invalid target or seed")  # pragma: no cover - unreachable
        return T, q

    def solve(
        self,
        target_R: object,
        target_p: object,
        seed_q: object,
        *,
        time_budget: float = 0.005,
        position_tolerance: float = 1e-5,
        orientation_tolerance: float = 1e-4,
        max_restarts: int = 100_000,
        max_iterations: int | None = None,
        rng_seed: int = 0,
        joint_weights: object | None = None,
        orientation_weight: float = 1.0,
        damping_bias: float = DEFAULT_DAMPING_BIAS,
        attempt_iterations: int = _DEFAULT_ATTEMPT_CAP,
    ) -> ChainIKResult:
        """Find a chain configuration inside the limits that puts the tip at a target pose.

        Levenberg-Marquardt on ``e = [p* - p ; log3(R* R^T)]`` with Sugihara's damping
        ``lambda = E + damping_bias`` (``E = 1/2 (|e_p|^2 + w_o |e_o|^2)``): the joint
        displacement ``delta_q = W^-1 J^T (J W^-1 J^T + lambda W_E^-1)^-1 e`` over the
        joints not blocked at a limit, then projected into the limits. An attempt that
        stalls (``E`` not halved in 8 iterations) or exceeds ``attempt_iterations``
        restarts from a uniform random configuration inside the limits. Never raises on an
        unreachable target: it returns the best configuration found with ``success=False``.

        Args:
            target_R: Target rotation of the tip in the base frame (3x3, orthonormal).
            target_p: Target position of the tip in the base frame [m].
            seed_q: Initial chain configuration [rad or m] (clipped into the limits).
            time_budget: Wall-clock budget [s], checked between compiled chunks (a chunk
                is sized from the measured iteration cost to end by the deadline).
            position_tolerance: Success threshold on ``|p* - p|`` [m].
            orientation_tolerance: Success threshold on the rotation angle [rad].
            max_restarts: Maximum number of random restarts.
            max_iterations: Maximum number of LM iterations (``None``: limited by time
                only). With a generous ``time_budget`` this makes the result independent
                of the machine's speed.
            rng_seed: Seed of the restart generator; equal seeds give equal results
                whenever the time budget does not cut the search.
            joint_weights: Positive weights ``W`` (size :attr:`n`); heavier joints move
                less per step. Default: ones.
            orientation_weight: ``w_o`` of ``E`` [m^2/rad^2]: weight of the orientation
                error against the position error.
            damping_bias: ``lambda_bias`` [m^2] of the damping rule (Sugihara's ``w_N``).
                Small values keep convergence fast near singular configurations.
            attempt_iterations: Iterations after which an attempt restarts regardless.

        Returns:
            The result (never raises on unreachable targets).

        Raises:
            ShapeError: Wrong sizes.
            NonFiniteInput: NaN or inf entries.
            InvalidTransform: ``target_R`` is not a rotation matrix.
            InvalidInput: Invalid options.
        """
        t0 = time.perf_counter()
        T, q = self._prepare(target_R, target_p, seed_q)
        wq, prm, ist0 = self._setup(
            position_tolerance,
            orientation_tolerance,
            max_restarts,
            joint_weights,
            orientation_weight,
            damping_bias,
            attempt_iterations,
        )
        time_budget = _validate.positive_float(time_budget, "time_budget")
        if max_iterations is not None:
            max_iterations = _validate.count(max_iterations, "max_iterations", minimum=0)
        ist = ist0.copy()
        ist[IST_RNG] = rng_seed_state(rng_seed)
        fst = np.full(FST_COUNT, np.inf)
        qbest = q.copy()
        remaining = -1 if max_iterations is None else int(max_iterations)
        status = self._search(T, wq, prm, ist, fst, q, qbest, t0 + time_budget, remaining)
        return ChainIKResult(
            q=qbest,
            success=status == CONVERGED,
            iterations=int(ist[IST_ITERS]),
            restarts=int(ist[IST_RESTARTS]),
            position_error=float(fst[FST_P_BEST]),
            orientation_error=float(fst[FST_O_BEST]),
            time_ms=(time.perf_counter() - t0) * 1e3,
        )

    def _search(
        self,
        T: np.ndarray,
        wq: np.ndarray,
        prm: np.ndarray,
        ist: np.ndarray,
        fst: np.ndarray,
        q: np.ndarray,
        qbest: np.ndarray,
        deadline: float,
        remaining: int,
    ) -> int:
        """Run the compiled search in chunks until it stops, the cap or the deadline.

        Args:
            T: Target (3x4).
            wq: Inverse joint weights.
            prm: Float parameters of the kernel.
            ist: Integer state of the kernel (with the generator state).
            fst: Float state of the kernel.
            q: Current iterate [rad or m] (updated).
            qbest: Best configuration so far [rad or m] (updated).
            deadline: ``time.perf_counter()`` value to stop at [s].
            remaining: Iterations left (``-1``: no cap).

        Returns:
            The kernel status after the last chunk.
        """
        chunk = _FIRST_CHUNK
        while True:
            todo = chunk if remaining < 0 else min(chunk, remaining)
            tc = time.perf_counter()
            status = _ck.ik_kernel(self._F, self._P, T, wq, prm, ist, fst, q, qbest, todo)
            now = time.perf_counter()
            if status != RUNNING:
                return status
            if remaining >= 0:
                remaining -= todo
                if remaining <= 0:
                    return status
            if now >= deadline:
                return status
            # Size the next chunk from the measured iteration cost to end by the deadline.
            per_iter = (now - tc) / max(todo, 1)
            chunk = max(16, int(0.9 * (deadline - now) / max(per_iter, 1e-9)))

    def solve_pose(self, T_base_tip: object, seed_q: object, **options: Any) -> ChainIKResult:
        """:meth:`solve` for a target given as :class:`pinocchio.SE3` or a 4x4 matrix."""
        pose = as_se3(T_base_tip, "T_base_tip")
        return self.solve(pose.rotation, pose.translation, seed_q, **options)

    def iteration_cost(self) -> float:
        """Measured wall-clock cost of one LM iteration on this machine [s] (cached)."""
        if self._ns_per_iteration is None:
            # An unreachable target keeps the search busy for the whole measurement.
            T = np.zeros((3, 4))
            T[:, :3] = np.eye(3)
            T[:, 3] = 1e3
            q0 = np.clip(np.zeros(self.n), self.lower, self.upper)
            wq, prm, ist = self._setup(1e-5, 1e-4, 10**9, None, 1.0, DEFAULT_DAMPING_BIAS, 100)
            ist = ist.copy()
            ist[IST_RNG] = rng_seed_state(0)
            fst = np.full(FST_COUNT, np.inf)
            _ck.ik_kernel(self._F, self._P, T, wq, prm, ist, fst, q0.copy(), q0.copy(), 10)
            best = np.inf
            for _ in range(3):
                ist[IST_STATUS] = RUNNING
                t = time.perf_counter()
                _ck.ik_kernel(self._F, self._P, T, wq, prm, ist, fst, q0.copy(), q0.copy(), 2000)
                best = min(best, (time.perf_counter() - t) / 2000)
            self._ns_per_iteration = best * 1e9
        return self._ns_per_iteration * 1e-9

    def solve_batch(
        self,
        targets: object,
        seeds: object | None = None,
        *,
        time_budget: float = 0.005,
        max_iterations: int | None = None,
        position_tolerance: float = 1e-5,
        orientation_tolerance: float = 1e-4,
        max_restarts: int = 100_000,
        rng_seed: int = 0,
        joint_weights: object | None = None,
        orientation_weight: float = 1.0,
        damping_bias: float = DEFAULT_DAMPING_BIAS,
        attempt_iterations: int = _DEFAULT_ATTEMPT_CAP,
        return_success: bool = False,
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Solve many targets in one compiled loop.

        Each target is solved exactly as :meth:`solve` would with the same options and
        ``max_iterations`` (every target restarts from the same ``rng_seed`` stream), so
        row ``k`` equals ``solve(targets[k], seeds[k], max_iterations=...)``.

        Args:
            targets: Target poses of the tip in the base frame, shape (N, 4, 4).
            seeds: Initial configurations, shape (N, n) or (n,) for all; default: the
                middle of the limits (0 for unbounded joints).
            time_budget: Budget per target [s], turned into an iteration cap with the
                measured :meth:`iteration_cost` when ``max_iterations`` is not given.
            max_iterations: Iteration cap per target (overrides ``time_budget``).
            position_tolerance: Success threshold on the position error [m].
            orientation_tolerance: Success threshold on the orientation error [rad].
            max_restarts: Maximum random restarts per target.
            rng_seed: Seed of the restart generator.
            joint_weights: Positive joint weights (see :meth:`solve`).
            orientation_weight: Weight of the orientation error (see :meth:`solve`).
            damping_bias: Damping bias (see :meth:`solve`).
            attempt_iterations: Iterations after which an attempt restarts.
            return_success: Also return the boolean success of each target.

        Returns:
            ``(N, 2 + n)`` array of rows ``[iterations, residual, q...]`` (MotrixSim's
            batched-solver layout) with ``residual = sqrt(|e_p|^2 + |e_o|^2)`` of the
            returned ``q`` [m, rad]; with ``return_success`` also an ``(N,)`` bool array.

        Raises:
            ShapeError: Wrong sizes.
            NonFiniteInput: NaN or inf entries.
            InvalidTransform: A target is not a rigid transform.
        """
        Ts = check_pose_stack(targets, "targets")
        N = Ts.shape[0]
        return_success = _validate.flag(return_success, "return_success")
        T34 = np.ascontiguousarray(Ts[:, :3, :])
        if seeds is None:
            seeds = self.mid_configuration()
        S = np.asarray(seeds, dtype=float)
        if S.ndim == 1:
            S = np.broadcast_to(_validate.vector(S, self.n, "seeds"), (N, self.n))
        else:
            S = _validate.matrix(S, (N, self.n), "seeds")
        S = np.ascontiguousarray(np.clip(S, self.lower, self.upper))
        wq, prm, ist = self._setup(
            position_tolerance,
            orientation_tolerance,
            max_restarts,
            joint_weights,
            orientation_weight,
            damping_bias,
            attempt_iterations,
        )
        ist = ist.copy()
        ist[IST_RNG] = rng_seed_state(rng_seed)
        if max_iterations is None:
            budget = _validate.positive_float(time_budget, "time_budget")
            max_iterations = max(1, min(int(budget / self.iteration_cost()), _validate.MAX_COUNT))
        else:
            max_iterations = _validate.count(max_iterations, "max_iterations", minimum=0)
        out = np.empty((N, 3 + self.n))
        _ck.ik_batch_kernel(self._F, self._P, T34, S, wq, prm, ist, int(max_iterations), out)
        rows = np.ascontiguousarray(out[:, : 2 + self.n])
        if return_success:
            return rows, out[:, 2 + self.n] == CONVERGED
        return rows

    def warm_up(self) -> None:
        """Compile (or load from numba's cache) every kernel now, not on the first query.

        The first call in a process otherwise costs ~10 ms (cached) or a few seconds
        (cold cache); call this at configuration time to keep it off the hot path.
        """
        q = self.mid_configuration()
        R, p = self.fk(q)
        self.jacobian(q)
        self.solve(R, p, q, max_iterations=1)
        self.solve_batch(pin.SE3(R, p).homogeneous[None], q, max_iterations=1)

    def mid_configuration(self) -> np.ndarray:
        """Middle of the joint limits (0 for a joint unbounded on a side) [rad or m]."""
        lo, hi = self.lower, self.upper
        bounded = np.isfinite(lo) & np.isfinite(hi)
        mid = np.zeros(self.n)
        mid[bounded] = 0.5 * (lo[bounded] + hi[bounded])
        return np.clip(mid, lo, hi)

    def random_configuration(self, rng: np.random.Generator) -> np.ndarray:
        """Uniform configuration inside the limits (unbounded joints: the restart range)."""
        return rng.uniform(self._P[:, P_SAMPLE_LO], self._P[:, P_SAMPLE_HI])

    # -- pickling --------------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        """State for :mod:`pickle` (the chain is shipped to worker processes).

        The Pinocchio model pickles itself (Pinocchio 4); the tables are copied as they
        are, so an unpickled chain solves bit-identically. The caches are left out: the
        measured iteration cost belongs to the machine that measured it.
        """
        state = dict(self.__dict__)
        state["_ns_per_iteration"] = None
        state["_options_key"] = None
        state["_options"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore a chain from :meth:`__getstate__`."""
        self.__dict__.update(state)

    def __repr__(self) -> str:
        return (
            f"SerialChain({self.base_frame or 'world'!r} -> {self.tip_frame!r}, n={self.n}, "
            f"joints={self.joint_names})"
        )


#: A tiny chain for the registered warm-up: one revolute, one prismatic and one
#: continuous joint (the kernels' types do not depend on the chain's size or joints).
_WARMUP_URDF = """<?xml version="1.0"?>
<robot name="stackik_warmup">
  <link name="base"/>
  <joint name="turn" type="revolute">
    <parent link="base"/><child link="l1"/><origin xyz="0 0 0.1"/><axis xyz="0 0 1"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/>
  </joint>
  <link name="l1"/>
  <joint name="slide" type="prismatic">
    <parent link="l1"/><child link="l2"/><origin xyz="0.1 0 0"/><axis xyz="1 0 0"/>
    <limit lower="0" upper="0.2" effort="1" velocity="1"/>
  </joint>
  <link name="l2"/>
  <joint name="spin" type="continuous">
    <parent link="l2"/><child link="tip"/><origin xyz="0 0 0.1"/><axis xyz="0 1 0"/>
  </joint>
  <link name="tip"/>
</robot>
"""


@register_warmup
def _warm_up_chain_kernels() -> None:
    """Load every chain kernel: FK, Jacobian, one solve and one batch on a 3-joint chain.

    Registered with :func:`stackik._jit.register_warmup`, so :func:`stackik._jit.warmup`
    compiles (or loads from numba's cache) the kernels every chain uses.
    """
    SerialChain.from_model(pin.buildModelFromXML(_WARMUP_URDF), "tip").warm_up()


def _frame_id(model: pin.Model, name: str) -> int:
    if not isinstance(name, str) or not model.existFrame(name):
        raise FrameNotFound(str(name), [f.name for f in model.frames])
    return model.getFrameId(name)


def _placement_row(M: pin.SE3) -> np.ndarray:
    """Row of the placement table ``F``: ``M_R`` row-major, then ``M_p``."""
    return np.concatenate([np.asarray(M.rotation).reshape(-1), M.translation])


def _chain_path(
    model: pin.Model, tip_frame: str, base_frame: str | None
) -> tuple[pin.Frame, list[int], pin.SE3]:
    """The tip frame, the chain's joint ids (root to tip) and the base frame in its joint.

    Raises:
        FrameNotFound: A frame name is unknown.
        InvalidInput: The base frame is not on the tip's path, or no joint lies between.
    """
    tip = model.frames[_frame_id(model, tip_frame)]
    support = list(model.supports[tip.parentJoint])  # universe ... tip joint
    if base_frame is None:
        base_joint = 0
        M_joint_base = pin.SE3.Identity()
    else:
        base = model.frames[_frame_id(model, base_frame)]
        base_joint = base.parentJoint
        if base_joint not in support:
            raise InvalidInput(
                f"base frame {base_frame!r} is not on the path from the world to "
                f"{tip_frame!r} (its joint {model.names[base_joint]!r} does not support it)"
            )
        M_joint_base = pin.SE3(base.placement)
    joint_ids = support[support.index(base_joint) + 1 :]
    if not joint_ids:
        raise InvalidInput(f"no joint between {base_frame or 'the world'!r} and {tip_frame!r}")
    return tip, joint_ids, M_joint_base


def _joint_row(model: pin.Model, jid: int, q_neutral: np.ndarray, tip_frame: str) -> np.ndarray:
    """Row of the joint table ``P``: unit axis, kind code, limits and sampling range.

    Raises:
        InvalidInput: The joint is not revolute, prismatic or continuous, or its lower
            limit exceeds its upper one.
    """
    jm = model.joints[jid]
    kind = classify(jm)
    name = model.names[jid]
    if kind.is_rotation:
        code = REVOLUTE
    elif kind == JointKind.PRISMATIC:
        code = PRISMATIC
    else:
        raise InvalidInput(
            f"joint {name!r} on the chain to {tip_frame!r} is of kind {kind}; only "
            "revolute, prismatic and continuous joints are supported"
        )
    lo, hi = _joint_limits(model, jid, kind)
    row = np.zeros(P_COLS)
    row[P_AXIS : P_AXIS + 3] = _joint_axis(jm, q_neutral, code)
    row[P_KIND] = code
    row[P_LO] = lo
    row[P_HI] = hi
    half = _UNBOUNDED_REVOLUTE_RANGE if code == REVOLUTE else _UNBOUNDED_PRISMATIC_RANGE
    row[P_SAMPLE_LO], row[P_SAMPLE_HI] = _sampling_range(lo, hi, half)
    return row


def _joint_axis(jm: pin.JointModel, q_neutral: np.ndarray, code: int) -> np.ndarray:
    """Unit axis of a one-axis joint in its own frame, read from its motion subspace ``S``."""
    jd = jm.createData()
    jm.calc(jd, q_neutral)
    S = np.asarray(jd.S).reshape(6)
    axis = S[3:] if code == REVOLUTE else S[:3]
    return axis / np.linalg.norm(axis)


def _joint_limits(model: pin.Model, jid: int, kind: JointKind) -> tuple[float, float]:
    """Position limits [rad or m] of a chain joint (infinite when unbounded).

    Raises:
        InvalidInput: The lower limit exceeds the upper one.
    """
    if kind == JointKind.CONTINUOUS:
        lo, hi = -np.inf, np.inf
    else:
        iq = model.joints[jid].idx_q
        lo = float(model.lowerPositionLimit[iq])
        hi = float(model.upperPositionLimit[iq])
        lo = -np.inf if lo <= -_UNBOUNDED else lo
        hi = np.inf if hi >= _UNBOUNDED else hi
    if lo > hi:
        raise InvalidInput(f"joint {model.names[jid]!r}: lower limit {lo} > upper limit {hi}")
    return lo, hi


def _sampling_range(lo: float, hi: float, half: float) -> tuple[float, float]:
    """Range restarts draw a joint from: its limits, or ``2 half`` wide where unbounded."""
    sample_lo = lo if np.isfinite(lo) else (hi - 2 * half if np.isfinite(hi) else -half)
    sample_hi = hi if np.isfinite(hi) else sample_lo + 2 * half
    return sample_lo, sample_hi


def _check_options(
    position_tolerance: float,
    orientation_tolerance: float,
    max_restarts: int,
    orientation_weight: float,
    damping_bias: float,
    attempt_iterations: int,
) -> None:
    """Raise :class:`InvalidInput` on an invalid IK option (see :meth:`SerialChain.solve`)."""
    for name, value in (
        ("position_tolerance", position_tolerance),
        ("orientation_tolerance", orientation_tolerance),
        ("orientation_weight", orientation_weight),
        ("damping_bias", damping_bias),
    ):
        _validate.positive_float(value, name)
    _validate.count(max_restarts, "max_restarts", minimum=0)
    _validate.count(attempt_iterations, "attempt_iterations")
