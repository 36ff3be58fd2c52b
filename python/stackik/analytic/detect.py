"""Which closed-form solver applies to a chain, and why not: detection and verification.

:func:`detect` reads the joint lines of the chain between two frames
(:class:`~.geometry.ChainGeometry`), tries each family's structure test and parameter
extraction (no hand-entered tables), and verifies the candidate against Pinocchio
before accepting it:

1. the family's forward kinematics (its parameters, offsets and frames) equals
   Pinocchio's at random configurations to :data:`FK_TOLERANCE` (1e-9 m and rad);
2. its inverse returns the sampled configuration among its branches (to 1e-6 rad,
   configurations away from singularities), and every branch it returns reaches the
   pose by Pinocchio's forward kinematics.

A family that fails either test is declined with the reason; so is every family when
none fits. Families are tried in the order ``opw``, ``ur``, ``spherical`` (an OPW arm is
also a spherical-wrist arm; its closed form needs no polynomial root).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from .._jit import register_warmup
from ..errors import InvalidInput
from .base import AnalyticSolver
from .geometry import ChainGeometry, wrap_angles
from .opw import OPWSolver, opw_parameters
from .spherical import SphericalSolver, spherical_parameters
from .ur import URSolver, ur_parameters

__all__ = ["FAMILIES", "FK_TOLERANCE", "AnalyticDetection", "detect", "verify"]

#: Families in the order they are tried.
FAMILIES = ("opw", "ur", "spherical")
#: Largest disagreement with Pinocchio's forward kinematics accepted at load [m, rad].
FK_TOLERANCE = 1e-9
#: Largest FK error of a returned branch at load [m, rad] (branches near a singularity
#: of another branch are slightly less accurate than the sampled one).
BRANCH_TOLERANCE = 1e-6
#: Smallest Jacobian singular value of a sample whose own branch must be returned.
_WELL_CONDITIONED = 1e-3

_EXTRACT = {
    "opw": (opw_parameters, OPWSolver),
    "ur": (ur_parameters, URSolver),
    "spherical": (spherical_parameters, SphericalSolver),
}
_DESCRIPTION = {
    "opw": "ortho-parallel arm with a spherical wrist (OPW)",
    "ur": "UR-type arm (axes 2-4 parallel, offset wrist)",
    "spherical": "spherical-wrist arm",
}


@dataclass(frozen=True)
class AnalyticDetection:
    """Outcome of :func:`detect`: the solver that applies to a chain, or why none does.

    Attributes:
        tip_frame: Tip frame of the chain.
        base_frame: Base frame of the chain (``None``: the world).
        solver: The verified closed-form solver, or ``None``.
        reasons: For every family tried, why it does not apply (``""`` for the chosen
            one).
    """

    tip_frame: str
    base_frame: str | None
    solver: AnalyticSolver | None = None
    reasons: dict[str, str] = field(default_factory=dict)

    @property
    def family(self) -> str | None:
        """Family of the solver (``"opw"``, ``"ur"``, ``"spherical"``) or ``None``."""
        return None if self.solver is None else self.solver.family

    def __bool__(self) -> bool:
        return self.solver is not None

    def __str__(self) -> str:
        chain = f"chain {self.base_frame or 'world'} -> {self.tip_frame}"
        if self.solver is not None:
            return f"{chain}: {_DESCRIPTION[self.solver.family]}, closed form verified"
        why = "; ".join(f"{k}: {v}" for k, v in self.reasons.items())
        return f"{chain}: no closed form ({why})"


def detect(
    model: pin.Model,
    tip_frame: str,
    base_frame: str | None = None,
    families: Sequence[str] = FAMILIES,
    samples: int = 32,
    seed: int = 0,
) -> AnalyticDetection:
    """The closed-form solver of the chain from ``base_frame`` to ``tip_frame``, if any.

    Args:
        model: Pinocchio model.
        tip_frame: Tip frame of the chain.
        base_frame: Base frame (``None``: the world).
        families: Families to try, in order.
        samples: Random configurations of the verification.
        seed: Seed of the verification's configurations.

    Returns:
        An :class:`AnalyticDetection` (falsy when no family applies; ``reasons`` says
        why for each).

    Raises:
        FrameNotFound: Unknown frame.
        InvalidInput: Unknown family name.
    """
    unknown = [f for f in families if f not in _EXTRACT]
    if unknown:
        raise InvalidInput(
            f"unknown closed-form families {unknown}; known: {list(FAMILIES)}", what="families"
        )
    try:
        geometry = ChainGeometry.from_model(model, tip_frame, base_frame)
    except InvalidInput as exc:
        return AnalyticDetection(tip_frame, base_frame, None, {f: str(exc) for f in families})
    reasons: dict[str, str] = {}
    for family in families:
        extract, cls = _EXTRACT[family]
        parameters, why = extract(geometry)
        if parameters is None:
            reasons[family] = why
            continue
        solver = cls(geometry, parameters)
        why = verify(solver, model, samples, seed)
        if why:
            reasons[family] = f"verification against Pinocchio failed: {why}"
            continue
        reasons[family] = ""
        return AnalyticDetection(tip_frame, base_frame, solver, reasons)
    return AnalyticDetection(tip_frame, base_frame, None, reasons)


def _pose_error(A: np.ndarray, B: np.ndarray) -> tuple[float, float]:
    """Position [m] and rotation [rad] distance of two 4x4 poses."""
    E = A[:3, :3].T @ B[:3, :3]
    angle = math.atan2(
        float(np.linalg.norm([E[2, 1] - E[1, 2], E[0, 2] - E[2, 0], E[1, 0] - E[0, 1]])) / 2,
        (float(np.trace(E)) - 1.0) / 2,
    )
    return float(np.linalg.norm(A[:3, 3] - B[:3, 3])), abs(angle)


class _PinocchioChain:
    """Pinocchio's FK and Jacobian of a chain, as the verification's reference."""

    def __init__(self, model: pin.Model, geometry: ChainGeometry) -> None:
        self.model = model
        self.data = model.createData()
        self.geometry = geometry
        self.q = pin.neutral(model)
        self.tip = model.getFrameId(geometry.tip_frame)
        self.base = None if geometry.base_frame is None else model.getFrameId(geometry.base_frame)

    def full(self, qc: np.ndarray) -> np.ndarray:
        q = self.q.copy()
        for j, cont, t in zip(self.geometry.joint_ids, self.geometry.continuous, qc, strict=True):
            i = self.model.joints[j].idx_q
            if cont:
                q[i], q[i + 1] = math.cos(t), math.sin(t)
            else:
                q[i] = t
        return q

    def pose(self, qc: np.ndarray) -> np.ndarray:
        pin.framesForwardKinematics(self.model, self.data, self.full(qc))
        T = self.data.oMf[self.tip]
        if self.base is not None:
            T = self.data.oMf[self.base].actInv(T)
        return np.array(T.homogeneous)

    def smallest_singular_value(self, qc: np.ndarray) -> float:
        q = self.full(qc)
        J = pin.computeFrameJacobian(self.model, self.data, q, self.tip, pin.LOCAL)
        cols = [self.model.joints[j].idx_v for j in self.geometry.joint_ids]
        return float(np.linalg.svd(J[:, cols], compute_uv=False)[-1])


def verify(solver: AnalyticSolver, model: pin.Model, samples: int = 32, seed: int = 0) -> str:
    """Check a closed-form solver against Pinocchio; ``""`` when it passes, else why not.

    See the module docstring for the two tests.

    Raises:
        InvalidInput: ``solver`` is not an :class:`AnalyticSolver` or ``model`` not a
            Pinocchio model.
    """
    if not isinstance(solver, AnalyticSolver) or not isinstance(model, pin.Model):
        raise InvalidInput(
            "verify needs an AnalyticSolver and a pinocchio.Model, got "
            f"{type(solver).__name__} and {type(model).__name__}"
        )
    ref = _PinocchioChain(model, solver.geometry)
    rng = np.random.default_rng(seed)
    for _ in range(samples):
        qc = rng.uniform(-math.pi, math.pi, solver.geometry.n)
        T = ref.pose(qc)
        ep, eo = _pose_error(solver.fk(qc), T)
        if max(ep, eo) > FK_TOLERANCE:
            return f"its forward kinematics is off by {ep:.3g} m, {eo:.3g} rad"
        Q, _ = solver.solve(T)
        for sol in Q:
            ep, eo = _pose_error(ref.pose(sol), T)
            if max(ep, eo) > BRANCH_TOLERANCE:
                return f"a branch misses the pose by {ep:.3g} m, {eo:.3g} rad"
        if ref.smallest_singular_value(qc) < _WELL_CONDITIONED:
            continue
        gap = np.abs(wrap_angles(Q - qc)).max(axis=1) if len(Q) else np.array([np.inf])
        if gap.min() > BRANCH_TOLERANCE:
            return "the sampled configuration is not among the branches"
    return ""


def _joint(i: int, parent: str, xyz: str, axis: str) -> str:
    return (
        f'<joint name="j{i}" type="revolute"><parent link="{parent}"/><child link="l{i}"/>'
        f'<origin xyz="{xyz}"/><axis xyz="{axis}"/>'
        '<limit lower="-6.28" upper="6.28" effort="1" velocity="1"/></joint>'
        f'<link name="l{i}"/>'
    )


def _warmup_urdf(rows: list[tuple[str, str]], tool: str) -> str:
    body = "".join(
        _joint(i + 1, "base" if i == 0 else f"l{i}", xyz, axis)
        for i, (xyz, axis) in enumerate(rows)
    )
    return (
        f'<robot name="w"><link name="base"/>{body}<joint name="t" type="fixed">'
        f'<parent link="l6"/><child link="tool"/><origin xyz="{tool}"/></joint>'
        '<link name="tool"/></robot>'
    )


#: A UR-type arm (axes 2-4 parallel, 5-6 meeting) and an OPW arm for the warm-up.
_WARMUP_UR = _warmup_urdf(
    [
        ("0 0 0.1", "0 0 1"),
        ("0 0.12 0", "0 1 0"),
        ("0.4 -0.1 0", "0 1 0"),
        ("0.35 0 0", "0 1 0"),
        ("0 0.1 0", "0 0 1"),
        ("0 0 0.1", "0 1 0"),
    ],
    "0 0.08 0",
)
_WARMUP_OPW = _warmup_urdf(
    [
        ("0 0 0.4", "0 0 1"),
        ("0.1 0 0", "0 1 0"),
        ("0 0 0.5", "0 1 0"),
        ("0.2 0 0.05", "1 0 0"),
        ("0.25 0 0", "0 1 0"),
        ("0 0 0", "1 0 0"),
    ],
    "0.08 0 0",
)


@register_warmup
def _warm_up_closed_forms() -> None:
    """Detect and verify each family once on small arms: loads every solver kernel."""
    ur = pin.buildModelFromXML(_WARMUP_UR)
    opw = pin.buildModelFromXML(_WARMUP_OPW)
    detect(ur, "tool", samples=2)
    detect(opw, "tool", samples=2)
    detect(opw, "tool", families=("spherical",), samples=2)
