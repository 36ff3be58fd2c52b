"""Batched position IK: many targets in one compiled loop (MotrixSim's batched rows).

Each target is solved by :meth:`~stackik.ik.chain.SerialChain.solve_batch` from its
seed, then checked on the full robot like a global-IK candidate; with
``repair_invalid`` a target whose converged configuration fails the robot-level checks
is searched again with random starts.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from .. import _validate
from ..errors import InvalidInput
from ..results import BatchIKResult
from ..spatial import check_pose_stack
from .chains import ChainSetup
from .checks import Validator
from .global_ import GlobalIK, SearchQuery

__all__ = ["BatchIKOptions", "solve_position_batch"]


@dataclass
class BatchIKOptions:
    """Options of :meth:`~stackik.KinematicsSolver.solve_position_batch`.

    Attributes:
        time_budget: Budget per target [s], turned into an iteration cap from the
            measured iteration cost (the run is then machine-speed independent for a
            given cap; pass ``max_iterations`` to fix it).
        max_iterations: Iteration cap per target (overrides ``time_budget``).
        position_tolerance: Success threshold on the position error [m].
        orientation_tolerance: Success threshold on the rotation angle [rad].
        rng_seed: Seed of the restart generator.
        locked_joints: Joints held at their seed values.
        repair_invalid: Re-search (multi-start, within ``time_budget``) the targets whose
            converged configuration fails the robot-level checks.
    """

    time_budget: float = 0.005
    max_iterations: int | None = None
    position_tolerance: float = 1e-5
    orientation_tolerance: float = 1e-4
    rng_seed: int = 0
    locked_joints: Sequence[str] = ()
    repair_invalid: bool = True


def _seeds(gik: GlobalIK, seeds: object | None, N: int) -> np.ndarray:
    robot = gik.robot
    if seeds is None:
        return np.broadcast_to(gik.reference(None), (N, robot.nq))
    S = _validate.as_floats(seeds, "seeds", ("N", robot.nq))
    if S.ndim == 1:
        return np.broadcast_to(robot.normalize(S), (N, robot.nq))
    S = _validate.matrix(S, (N, robot.nq), "seeds")
    return np.array([robot.normalize(s) for s in S])


def _targets_in_base(gik: GlobalIK, setup: ChainSetup, Ts: np.ndarray, S: np.ndarray):
    """Targets in the chain's base frame at each seed (the world when there is no base)."""
    if setup.base_frame is None or not len(Ts):
        return Ts
    Tb = np.empty_like(Ts)
    for k in range(len(Ts)):
        Tb[k] = gik.target_in_base(setup, pin.SE3(Ts[k]), S[k]).homogeneous
    return Tb


def solve_position_batch(
    gik: GlobalIK,
    target_poses: object,
    frame_name: str,
    seeds: object | None = None,
    options: BatchIKOptions | None = None,
    validate: Validator | None = None,
) -> BatchIKResult:
    """Solve many targets; see :meth:`stackik.KinematicsSolver.solve_position_batch`.

    Raises:
        ShapeError, NonFiniteInput, InvalidTransform: Bad targets or seeds.
        FrameNotFound, InvalidInput: Unknown frame or bad options.
    """
    robot = gik.robot
    opts = options if options is not None else BatchIKOptions()
    if not isinstance(opts, BatchIKOptions):
        raise InvalidInput(f"options must be BatchIKOptions, got {type(opts).__name__}")
    repair = _validate.flag(opts.repair_invalid, "repair_invalid")
    Ts = check_pose_stack(target_poses, "target_poses")
    N = Ts.shape[0]
    S = _seeds(gik, seeds, N)
    budget = _validate.positive_float(opts.time_budget, "time_budget")
    tol_p = _validate.positive_float(opts.position_tolerance, "position_tolerance")
    tol_o = _validate.positive_float(opts.orientation_tolerance, "orientation_tolerance")
    setup = gik.setup(frame_name, opts.locked_joints, S[0] if N else gik.reference(None))
    if opts.locked_joints and N > 1 and not np.all(S == S[0]):
        raise InvalidInput("locked_joints in a batch need one common seed")
    chain = setup.chain
    Tb = _targets_in_base(gik, setup, Ts, S)
    seeds_c = np.array([chain.from_full(s) for s in S]) if N else np.zeros((0, chain.n))
    rows_c, ok = chain.solve_batch(
        Tb,
        seeds_c,
        time_budget=budget,
        max_iterations=opts.max_iterations,
        position_tolerance=tol_p,
        orientation_tolerance=tol_o,
        rng_seed=int(opts.rng_seed),
        return_success=True,
    )
    result = BatchIKResult(
        success=np.zeros(N, dtype=bool),
        q=np.empty((N, robot.nq)),
        iterations=rows_c[:, 0].astype(np.int64),
        residual=rows_c[:, 1].copy(),
    )
    checker = gik.checker(setup, None, tol_p, tol_o, validate)
    for k in range(N):
        qc = rows_c[k, 2:]
        result.q[k] = chain.to_full(qc, S[k])
        if not ok[k]:
            continue
        checker.target = pin.SE3(Ts[k])
        if not checker.reason(result.q[k], qc):
            result.success[k] = True
            continue
        result.residual[k] = np.inf
        if repair:
            query = SearchQuery(
                setup=setup,
                R=Tb[k, :3, :3],
                p=Tb[k, :3, 3],
                checker=checker,
                q_ref=S[k],
                max_solutions=1,
                deadline=time.perf_counter() + budget,
                tol_p=tol_p,
                tol_o=tol_o,
                branch=None,
                distinct=0.0,
                max_attempts=None,
                include_alternates=False,
            )
            _repair(gik, query, result, k, int(opts.rng_seed))
    return result


def _repair(gik: GlobalIK, query: SearchQuery, result: BatchIKResult, k: int, seed: int) -> None:
    """Search target ``k`` again from random starts (its own start converged to a reject)."""
    rng = np.random.default_rng([seed, k])
    found = gik.search(query, rng, first_seed=query.setup.chain.random_configuration(rng))
    result.iterations[k] += found.iterations
    if found.q:
        result.q[k] = found.q[0]
        ep, eo = query.checker.pose_error(found.q[0])
        result.residual[k] = math.hypot(ep, eo)
        result.success[k] = True
