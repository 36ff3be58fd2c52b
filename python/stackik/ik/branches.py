"""Branch (configuration) flags of 6R arms, vcKinSolver-style.

Flags are defined geometrically from the joint axes at a configuration, for 6R arms
with a spherical wrist and for UR-type arms alike (axes 2 and 3 parallel, axes 4-5 and
5-6 meeting). With ``a_i`` the unit axis of joint i and ``o_i`` a point of it (base
frame), ``c`` the point where axes 5 and 6 meet (the wrist centre of a spherical wrist;
UR's ``p5``) and ``w`` the point of axis 4 where axis 5 meets it:

    shoulder = sign((c - o_1) . (a_2 x a_1))          front (+1) / back (-1)
    elbow    = sign(a_3 . ((o_3 - o_2) x (w - o_3)))   above (+1) / below (-1)
    wrist    = sign(a_5 . (a_4 x a_6))                 not flipped (+1) / flipped

Each is 0 exactly on the singularity separating its two branches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .. import _validate
from ..errors import InvalidInput
from ..model.joints import JointKind, classify
from .chain import SerialChain

__all__ = [
    "BranchFlags",
    "BranchGeometry",
    "as_branch",
    "check_branch_structure",
    "flags_at",
    "matches",
]

#: Distance between two axes under which they count as intersecting [m], and the
#: ``|a x b|`` under which two axes count as parallel.
_GEOMETRY_TOLERANCE = 1e-6


class BranchFlags(NamedTuple):
    """Configuration (branch) flags of a 6R arm, vcKinSolver-style.

    Each flag is +1 or -1 (0 exactly on the singular boundary between two branches):

    * ``shoulder``: +1 "front", -1 "back": the side of joint 1's axis the wrist point lies
      on, along ``a2 x a1``;
    * ``elbow``: +1 "above", -1 "below": the turning sense of the elbow triangle (joint 2,
      joint 3, wrist) about ``a3``;
    * ``wrist``: +1 "not flipped", -1 "flipped": the sign of ``a5 . (a4 x a6)``.

    On the shipped UR5 they equal ``robots/README.md``'s ``(s1, s3, s5)``:
    ``s1 = sign(wrap(q1 - atan2(p5y, p5x) - pi/2))``, ``s3 = sign(sin q3)``,
    ``s5 = sign(sin q5)``. A flag given as ``None`` in a query matches any value.
    """

    shoulder: int
    elbow: int
    wrist: int

    @property
    def front(self) -> bool:
        """The wrist point is in front of joint 1's axis."""
        return self.shoulder > 0

    @property
    def above(self) -> bool:
        """The elbow is above (turns positively)."""
        return self.elbow > 0

    @property
    def flipped(self) -> bool:
        """The wrist is flipped."""
        return self.wrist < 0

    @property
    def code(self) -> int:
        """The configuration integer of vcKinSolver: bit 2 back, bit 1 below, bit 0 flipped."""
        return (self.shoulder < 0) << 2 | (self.elbow < 0) << 1 | int(self.wrist < 0)

    @classmethod
    def from_code(cls, code: int) -> BranchFlags:
        """Flags from vcKinSolver's configuration integer (0: front, above, not flipped)."""
        c = _validate.count(code, "configuration code", minimum=0, maximum=7)
        return cls(-1 if c & 4 else 1, -1 if c & 2 else 1, -1 if c & 1 else 1)


# -- geometry helpers ---------------------------------------------------------------------------
def _closest_point(p1: np.ndarray, d1: np.ndarray, p2: np.ndarray, d2: np.ndarray):
    """Point of line 1 closest to line 2 and the distance between the lines [m]."""
    w = p1 - p2
    b = float(d1 @ d2)
    den = 1.0 - b * b  # unit directions
    if den < 1e-12:  # parallel: any point
        return p1, float(np.linalg.norm(np.cross(w, d2)))
    d, e = float(d1 @ w), float(d2 @ w)
    s = (b * e - d) / den
    t = (e - b * d) / den
    c1 = p1 + s * d1
    return c1, float(np.linalg.norm(c1 - (p2 + t * d2)))


def _axes(chain: SerialChain, qc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit axis and one point of each joint's axis line, base frame, at ``qc``.

    From the world-aligned Jacobian: column ``[v_i ; a_i]`` with ``v_i = a_i x (p - o_i)``
    gives the foot of the perpendicular ``o_i = p - v_i x a_i``.
    """
    _, p = chain.fk(qc)
    J = chain.jacobian(qc)
    a = J[3:].T.copy()
    return a, p - np.cross(J[:3].T, a)


def _sign(x: float, scale: float) -> int:
    return 0 if abs(x) <= 1e-12 * max(scale, 1.0) else (1 if x > 0 else -1)


def flags_at(chain: SerialChain, qc: np.ndarray) -> BranchFlags:
    """Branch flags of a chain configuration (see :class:`BranchFlags` for the definition)."""
    a, o = _axes(chain, qc)
    c, _ = _closest_point(o[4], a[4], o[5], a[5])  # wrist point: axes 5 and 6 meet there
    w, _ = _closest_point(o[3], a[3], o[4], a[4])  # a point of axis 4 (axis 5 meets it)
    shoulder = float((c - o[0]) @ np.cross(a[1], a[0]))
    elbow = float(a[2] @ np.cross(o[2] - o[1], w - o[2]))
    wrist = float(a[4] @ np.cross(a[3], a[5]))
    return BranchFlags(_sign(shoulder, 1.0), _sign(elbow, 1.0), _sign(wrist, 1.0))


def check_branch_structure(chain: SerialChain) -> None:
    """Raise unless the chain is a 6R arm whose flags are defined (spherical or UR wrist)."""
    name = f"chain to {chain.tip_frame!r}"
    if chain.n != 6 or chain.continuous.any():
        raise InvalidInput(f"branch flags need a 6R arm; the {name} has {chain.n} joints")
    kinds = [classify(chain.model.joints[j]) for j in chain.joint_ids]
    if any(k != JointKind.REVOLUTE for k in kinds):
        raise InvalidInput(
            f"branch flags need revolute joints; the {name} has {[str(k) for k in kinds]}"
        )
    rng = np.random.default_rng(0)
    lo = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
    hi = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
    for _ in range(3):  # a structural property: test it away from special configurations
        a, o = _axes(chain, rng.uniform(lo, hi))
        if np.linalg.norm(np.cross(a[1], a[2])) > _GEOMETRY_TOLERANCE:
            raise InvalidInput(f"branch flags need parallel axes 2 and 3 ({name})")
        if np.linalg.norm(np.cross(a[0], a[1])) < 1e-3:
            raise InvalidInput(f"branch flags need axes 1 and 2 not parallel ({name})")
        for i, j in ((3, 4), (4, 5)):
            if _closest_point(o[i], a[i], o[j], a[j])[1] > _GEOMETRY_TOLERANCE:
                raise InvalidInput(
                    f"branch flags need a spherical or UR-type wrist: axes {i + 1} and "
                    f"{j + 1} do not meet ({name})"
                )


def matches(flags: BranchFlags, wanted: tuple[int | None, int | None, int | None]) -> bool:
    """Whether ``flags`` agree with every flag of ``wanted`` that is not None."""
    return all(w is None or f == w for f, w in zip(flags, wanted, strict=True))


def as_branch(branch: object) -> tuple[int | None, int | None, int | None] | None:
    """A branch request as three flags (None: any); None when no branch is asked for."""
    if branch is None:
        return None
    if isinstance(branch, (int, np.integer)) and not isinstance(branch, bool):
        return tuple(BranchFlags.from_code(int(branch)))  # type: ignore[return-value]
    try:
        items = list(branch)  # type: ignore[call-overload]
    except TypeError:
        items = []
    if len(items) != 3 or any(v not in (None, -1, 1) for v in items):
        raise InvalidInput(
            f"branch must be BranchFlags, 3 values in (+1, -1, None) or a code 0-7, got {branch!r}"
        )
    return tuple(None if v is None else int(v) for v in items)  # type: ignore[return-value]


# -- flags of solutions, from the joint lines at zero ------------------------------------------
def _sign_of(x: float) -> int:
    return 0 if abs(x) <= 1e-12 else (1 if x > 0 else -1)


def _angle_about(n: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    """Signed angle [rad] about the unit ``n`` from ``x`` to ``y`` (parts perpendicular to n)."""
    x = x - float(x @ n) * n
    y = y - float(y @ n) * n
    return math.atan2(float(n @ np.cross(x, y)), float(x @ y))


class BranchTarget(NamedTuple):
    """Flags of the configurations reaching one target (see :class:`BranchGeometry`).

    Attributes:
        c: The target's wrist point [m].
        shoulder: ``(A, B)``: the shoulder flag is ``sign(A cos q1 + B sin q1)``.
        elbow: ``(A, B)`` of ``q3``.
        wrist: ``(A, B)`` of ``q5``.
    """

    c: np.ndarray
    shoulder: tuple[float, float]
    elbow: tuple[float, float]
    wrist: tuple[float, float]

    def shoulder_flag(self, q1: float) -> int:
        """Shoulder flag of the configurations with this ``q1`` [rad] reaching the target."""
        a, b = self.shoulder
        return _sign_of(a * math.cos(q1) + b * math.sin(q1))

    def flags(self, qc: np.ndarray) -> BranchFlags:
        """Flags of a configuration ``qc`` (chain angles) that reaches the target."""
        t1, t3, t5 = float(qc[0]), float(qc[2]), float(qc[4])
        a, b = self.shoulder
        e, f = self.elbow
        g, h = self.wrist
        return BranchFlags(
            _sign_of(a * math.cos(t1) + b * math.sin(t1)),
            _sign_of(e * math.cos(t3) + f * math.sin(t3)),
            _sign_of(g * math.cos(t5) + h * math.sin(t5)),
        )


@dataclass(frozen=True)
class BranchGeometry:
    """What the flags and the branch flips of a 6R arm need, read once from its lines.

    For a configuration that reaches a target, each flag depends on one joint: the
    elbow on ``q3`` and the wrist on ``q5`` (``A cos q + B sin q``: the elbow triangle and
    the wrist axes turn rigidly with the other joints), the shoulder on ``q1`` given the
    target's wrist point ``c`` (the point where axes 5 and 6 meet, fixed in the tip
    frame): ``(c - o_1) . (R_1(q_1) a_2 x a_1)``. When ``c`` keeps its coordinate ``h``
    along the parallel axes 2-3 (UR-type and spherical wrists: ``lateral``), the two
    shoulder angles reaching ``c`` are the roots of ``(R_1(q_1) a_2) . (c - o_1) = h``.

    Attributes:
        o1: A point of axis 1 [m].
        c_tip: The wrist point in the tip frame [m].
        shoulder_axes: ``a_2 x a_1`` and ``(a_1 x a_2) x a_1``: the shoulder function's
            ``(A, B)`` are their dot products with ``c - o_1``.
        lateral: ``(h, a_1 . a_2, n_perp, a_1 x a_2, a_1)`` of the shoulder equation, or
            ``None`` when it does not apply.
        elbow: ``(A, B)`` of the elbow function of ``q3``.
        wrist: ``(A, B)`` of the wrist function of ``q5``.
        shoulder_mirror: ``q2`` at which the upper arm is parallel to axis 1.
        elbow_plane: In the plane of the parallel axes 2-3, the upper arm ``x`` and the
            forearm's ``u`` and ``a_3 x u`` (2-D coordinates; ``u`` from axis 3 to the point
            of axis 4 met by axis 5, at ``q3 = 0``).
        axis_signs: ``a_3 . a_2`` and ``a_4 . a_2`` (0 when axis 4 is not parallel).
    """

    o1: np.ndarray
    c_tip: np.ndarray
    shoulder_axes: tuple[np.ndarray, np.ndarray]
    lateral: tuple[float, float, np.ndarray, np.ndarray, np.ndarray] | None
    elbow: tuple[float, float]
    wrist: tuple[float, float]
    shoulder_mirror: float
    elbow_plane: tuple[tuple[float, float], tuple[float, float], tuple[float, float]]
    axis_signs: tuple[float, float]

    @classmethod
    def from_lines(cls, axes: np.ndarray, points: np.ndarray, tip: np.ndarray) -> BranchGeometry:
        """From the joint lines at zero of an arm with flags, and its tip pose (4x4).

        The arm must pass :func:`check_branch_structure` (axes 2 and 3 parallel, axes
        4-5 and 5-6 meeting).
        """
        a, o = axes, points
        n = a[1]
        c, _ = _closest_point(o[4], a[4], o[5], a[5])
        w, _ = _closest_point(o[3], a[3], o[4], a[4])
        d, u = o[2] - o[1], w - o[2]
        elbow = (float(u @ np.cross(a[2], d)), float(np.cross(a[2], u) @ np.cross(a[2], d)))
        a54 = np.cross(a[4], a[3])
        wrist = (float(a[5] @ a54), float(np.cross(a[4], a[5]) @ a54))
        parallel4 = float(np.linalg.norm(np.cross(a[3], n))) <= _GEOMETRY_TOLERANCE
        on_axis4 = float(np.linalg.norm(np.cross(c - o[3], a[3]))) <= _GEOMETRY_TOLERANCE
        cn = float(a[0] @ n)
        lateral = (
            (float(n @ (c - o[0])), cn, n - cn * a[0], np.cross(a[0], n), a[0].copy())
            if (parallel4 or on_axis4)
            else None
        )
        # 2-D frame of the plane perpendicular to the parallel axes 2-3
        x = d - float(d @ n) * n
        e1 = x / np.linalg.norm(x)
        e2 = np.cross(n, e1)
        s3 = float(np.sign(a[2] @ n))
        up = u - float(u @ n) * n
        au = np.cross(a[2], u)
        return cls(
            o[0].copy(),
            np.linalg.solve(tip, np.append(c, 1.0))[:3],
            (np.cross(n, a[0]), np.cross(np.cross(a[0], n), a[0])),
            lateral,
            elbow,
            wrist,
            _angle_about(n, d, a[0]),
            (
                (float(x @ e1), float(x @ e2)),
                (float(up @ e1), float(up @ e2)),
                (float(au @ e1), float(au @ e2)),
            ),
            (s3, float(np.sign(a[3] @ n)) if parallel4 else 0.0),
        )

    def target(self, R: np.ndarray, p: np.ndarray) -> BranchTarget:
        """The flag functions of the configurations reaching the tip pose ``(R, p)``."""
        c = R @ self.c_tip + p
        v = c - self.o1
        u1, u2 = self.shoulder_axes
        return BranchTarget(c, (float(v @ u1), float(v @ u2)), self.elbow, self.wrist)

    def shoulder_angles(self, c: np.ndarray) -> list[float]:
        """The two ``q1`` putting axes 2-3 in line with the wrist point ``c`` ([] if none)."""
        if self.lateral is None:
            return []
        h, cn, n_perp, a1xn, a1 = self.lateral
        v = c - self.o1
        A, B = float(n_perp @ v), float(a1xn @ v)
        C = h - cn * float(a1 @ v)
        r = math.hypot(A, B)
        if r < 1e-12 or abs(C) > r:
            return []
        base, d = math.atan2(B, A), math.acos(C / r)
        return [base + d, base - d]

    @staticmethod
    def zero_of(ab: tuple[float, float]) -> float:
        """A zero of ``A cos t + B sin t`` [rad] (the other is ``pi`` away)."""
        return math.atan2(ab[0], -ab[1])

    @staticmethod
    def half(ab: tuple[float, float], sign: int, u: float) -> float:
        """An angle where ``sign(A cos t + B sin t) = sign``: ``u`` in [0, 1] across the half."""
        centre = math.atan2(ab[1], ab[0]) + (0.0 if sign > 0 else math.pi)
        return centre + (u - 0.5) * 0.9 * math.pi

    def flip_elbow(self, qc: np.ndarray) -> np.ndarray:
        """The elbow mirrored (a seed for the branch with the other elbow flag).

        ``q3`` is reflected about its stretched value and ``q2`` turned so that the wrist
        point stays (exact); on UR-type arms ``q4`` keeps the wrist's orientation, which
        makes the whole pose exact.
        """
        (x1, x2), (u1, u2), (v1, v2) = self.elbow_plane
        s3, s4 = self.axis_signs
        t3 = float(qc[2])
        c, s = math.cos(t3), math.sin(t3)
        y1, y2 = x1 + c * u1 + s * v1, x2 + c * u2 + s * v2  # axis 2 -> wrist point
        beta = math.atan2(x1 * y2 - x2 * y1, x1 * y1 + x2 * y2)
        q = qc.copy()
        q[1] += 2.0 * beta
        q[2] = 2.0 * self.zero_of(self.elbow) - t3
        if s4:
            q[3] -= s4 * (2.0 * beta + s3 * (q[2] - t3))
        return q

    def flip_wrist(self, qc: np.ndarray) -> np.ndarray:
        """The wrist flipped: ``q5`` reflected about its singular value, ``q4, q6 + pi``."""
        q = qc.copy()
        q[3] += math.pi
        q[4] = 2.0 * self.zero_of(self.wrist) - qc[4]
        q[5] += math.pi
        return q

    def mirror_arm(self, qc: np.ndarray, q1: float) -> np.ndarray:
        """The arm swung to the other side of axis 1 (a seed flipping shoulder and elbow).

        ``q1`` is set (to the other shoulder root), the upper arm and the elbow are
        mirrored about axis 1.
        """
        q = qc.copy()
        q[0] = q1
        q[1] = 2.0 * self.shoulder_mirror - qc[1]
        q[2] = 2.0 * self.zero_of(self.elbow) - qc[2]
        return q
