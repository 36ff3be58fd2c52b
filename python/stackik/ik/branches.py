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
from typing import NamedTuple

import numpy as np

from ..errors import InvalidInput
from ..model.joints import JointKind, classify
from .chain import SerialChain

__all__ = ["BranchFlags", "as_branch", "check_branch_structure", "flags_at", "matches"]

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
        c = int(code)
        if not 0 <= c <= 7:
            raise InvalidInput(f"a configuration code is in [0, 7], got {code!r}")
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
