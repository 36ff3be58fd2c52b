"""Straight-line Cartesian paths (simIK generatePath) on the global-IK layer.

The frame moves from its pose at the start configuration to a target pose on a
straight line: position interpolated linearly, orientation by slerp
(``exp(s log(R1 R0^T)) R0``). The line is tracked in sub-steps of at most
``max_linear_step`` and ``max_angular_step``, each solved locally (Levenberg-Marquardt
from the previous configuration, no restart, inside the margin-shrunk limits); a
sub-step whose joints move more than ``max_joint_jump`` is a branch jump and stops the
path. Every path point is checked on the robot like a global-IK candidate. The motion
between checked configurations is checked for collision as a whole, not only at its
ends: each joint-space segment from a sub-step's configuration to the next, and from a
point to the next (what a controller interpolating the returned configurations executes),
must keep every watched pair (robot, attached objects, world) at or above its minimum
distance by conservative advancement
(:meth:`~stackik.ik.checks.CandidateChecker.motion_clear`). A line through an obstacle
stops between the points it falls between, however thin the obstacle. The check is
conservative (a segment it cannot prove clear within
:data:`~stackik.ik.checks.MOTION_SPLIT_DEPTH` halvings counts as a collision) and only
rejects: it never changes a configuration.
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
from ..results import PathResult, SolverStatus
from ..spatial import as_se3
from .chain import SerialChain
from .chains import ChainSetup
from .checks import CandidateChecker, Validator
from .global_ import GlobalIK

__all__ = ["generate_path"]


#: Most sub-steps a path may take along its whole line (each is one small IK solve).
MAX_SUB_STEPS = 1_000_000


@dataclass
class _Line:
    """The straight line from ``T0`` to ``T1`` and how it is cut."""

    T0: pin.SE3
    dp: np.ndarray
    dw: np.ndarray
    n: int
    steps_per: int
    M_base: pin.SE3

    def pose(self, s: float) -> pin.SE3:
        """World pose at fraction ``s`` of the line."""
        return pin.SE3(pin.exp3(s * self.dw) @ self.T0.rotation, self.T0.translation + s * self.dp)


class _PathStop(Exception):
    """A path point failed: ``(status, index, reason, message)``."""

    def __init__(self, status: SolverStatus, index: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.index, self.reason, self.message = status, index, reason, message


def generate_path(
    gik: GlobalIK,
    start_q: object,
    target_pose: object,
    frame_name: str,
    n_points: int,
    validate: Validator | None = None,
    *,
    max_joint_jump: float = 0.3,
    max_linear_step: float = 0.005,
    max_angular_step: float = 0.02,
    locked_joints: Sequence[str] = (),
    position_tolerance: float = 1e-6,
    orientation_tolerance: float = 1e-5,
) -> PathResult:
    """Joint configurations along the straight Cartesian line to a pose.

    See :meth:`stackik.KinematicsSolver.generate_path` for the arguments. Never raises on
    an unreachable or invalid point: the result says why and at which point.

    Raises:
        ShapeError, NonFiniteInput, InvalidTransform, FrameNotFound: Bad input.
        InvalidInput: ``n_points < 2`` or bad option values (also a step so short that
            the line would take more than :data:`MAX_SUB_STEPS` sub-steps).
    """
    t0 = time.perf_counter()
    q_start = gik.reference(start_q)
    T1 = as_se3(target_pose, "target_pose")
    n = _validate.count(n_points, "n_points", minimum=2)
    jump = _validate.positive_float(max_joint_jump, "max_joint_jump")
    lin = _validate.positive_float(max_linear_step, "max_linear_step")
    ang = _validate.positive_float(max_angular_step, "max_angular_step")
    tol_p = _validate.positive_float(position_tolerance, "position_tolerance")
    tol_o = _validate.positive_float(orientation_tolerance, "orientation_tolerance")
    setup = gik.setup(frame_name, locked_joints, q_start)
    checker = gik.checker(setup, None, tol_p, tol_o, validate)
    line = _line(gik, setup, q_start, T1, n, lin, ang)
    poses = np.array([line.pose(k / (n - 1)).homogeneous for k in range(n)])
    configs = [q_start]
    try:
        _walk(setup, checker, line, q_start, configs, jump, tol_p, tol_o)
    except _PathStop as stop:
        if stop.index == 0:
            configs.clear()
        return PathResult(
            stop.status,
            stop.message,
            stop.index,
            stop.reason,
            np.array(configs),
            poses,
            (time.perf_counter() - t0) * 1e3,
        )
    return PathResult(
        SolverStatus.SUCCESS,
        f"{n} points on the line",
        -1,
        "",
        np.array(configs),
        poses,
        (time.perf_counter() - t0) * 1e3,
    )


def _line(
    gik: GlobalIK,
    setup: ChainSetup,
    q_start: np.ndarray,
    T1: pin.SE3,
    n: int,
    lin: float,
    ang: float,
) -> _Line:
    ws = gik.workspace
    T0 = ws.frame_pose(q_start, setup.fid)
    dp = T1.translation - T0.translation
    dw = pin.log3(T1.rotation @ T0.rotation.T)  # world axes
    M_base = pin.SE3.Identity()
    if setup.base_frame is not None:
        M_base = ws.frame_pose(q_start, gik.robot.get_frame_id(setup.base_frame))
    need = {
        "max_linear_step": float(np.linalg.norm(dp)) / lin,
        "max_angular_step": float(np.linalg.norm(dw)) / ang,
    }
    name = max(need, key=need.__getitem__)
    if need[name] > MAX_SUB_STEPS:
        length, unit = (
            (np.linalg.norm(dp), "m") if name == "max_linear_step" else (np.linalg.norm(dw), "rad")
        )
        raise InvalidInput(
            f"{name} = {lin if name == 'max_linear_step' else ang:.3g} cuts the line "
            f"({length:.3g} {unit}) into {need[name]:.3g} sub-steps, more than "
            f"{MAX_SUB_STEPS:.0e}: give a longer step"
        )
    steps_per = max(1, math.ceil(max(need.values()) / (n - 1)))
    return _Line(T0, dp, dw, n, steps_per, M_base)


def _walk(
    setup: ChainSetup,
    checker: CandidateChecker,
    line: _Line,
    q_start: np.ndarray,
    configs: list[np.ndarray],
    jump: float,
    tol_p: float,
    tol_o: float,
) -> None:
    """Track the line point by point; raise :class:`_PathStop` at the first failure."""
    chain = setup.chain
    qc = chain.from_full(q_start)
    why = checker.reason(q_start, qc, check_pose=False)
    if why:
        raise _PathStop(
            SolverStatus.INVALID_INPUT, 0, why, f"the start configuration fails the {why} check"
        )
    q_prev = q_point = q_start
    m_point = checker.margins(q_start)
    for k in range(1, line.n):
        for j in range(1, line.steps_per + 1):
            s = ((k - 1) * line.steps_per + j) / (line.steps_per * (line.n - 1))
            qc = _sub_step(chain, line, qc, s, k, jump, tol_p, tol_o)
            q = chain.to_full(qc, q_start)
            if j < line.steps_per:
                q_prev = _moved(checker, q_prev, q, k, s)
        why = checker.reason(q, qc, check_pose=False)
        if why:
            raise _PathStop(
                SolverStatus.CONSTRAINT_VIOLATION, k, why, f"point {k} fails the {why} check"
            )
        q_prev = _moved(checker, q_prev, q, k, s)
        if line.steps_per > 1:  # (the motion a controller interpolating the points makes)
            _moved(checker, q_point, q, k, s, m_point)
        q_point, m_point = q, checker.margins(q)
        configs.append(q)


def _moved(
    checker: CandidateChecker,
    q_prev: np.ndarray,
    q: np.ndarray,
    k: int,
    s: float,
    m_prev: np.ndarray | None = None,
) -> np.ndarray:
    """``q`` when the joint motion to it from ``q_prev`` is clear; raise :class:`_PathStop`.

    The motion between two checked configurations is checked as a whole (conservative
    advancement, :meth:`CandidateChecker.motion_clear`; ``m_prev``: the margins at
    ``q_prev`` when known), not only its ends.
    """
    if not checker.motion_clear(q_prev, q, m_prev):
        raise _PathStop(
            SolverStatus.CONSTRAINT_VIOLATION, k, "collision",
            f"the line collides between point {k - 1} and point {k} (s = {s:.4f})",
        )  # fmt: skip
    return q


def _sub_step(
    chain: SerialChain,
    line: _Line,
    qc: np.ndarray,
    s: float,
    k: int,
    jump: float,
    tol_p: float,
    tol_o: float,
) -> np.ndarray:
    """Solve one sub-step of the line locally from ``qc``; raise on a failure or a jump."""
    Tb = line.M_base.actInv(line.pose(s))
    res = chain.solve(
        Tb.rotation,
        Tb.translation,
        qc,
        time_budget=1.0,
        max_restarts=0,
        max_iterations=200,
        position_tolerance=tol_p,
        orientation_tolerance=tol_o,
    )
    if not res.success:
        raise _PathStop(
            SolverStatus.INFEASIBLE,
            k,
            "unreachable",
            f"point {k} is unreachable from point {k - 1} along the line "
            f"(s = {s:.4f}: position error {res.position_error:.3g} m, "
            f"orientation error {res.orientation_error:.3g} rad)",
        )
    step = float(np.max(np.abs(res.q - qc)))
    if step > jump:
        raise _PathStop(
            SolverStatus.CONSTRAINT_VIOLATION,
            k,
            "joint_jump",
            f"joints jump by {step:.3g} > {jump:.3g} between points {k - 1} "
            f"and {k} (s = {s:.4f}): a branch change or a singularity",
        )
    return np.asarray(res.q)
