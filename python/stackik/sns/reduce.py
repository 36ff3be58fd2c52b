"""Equality couplings eliminated by a change of variables: ``v = G z + v0``.

A coupling ``v_f = m v_l + b`` (a mimic follower ``f`` and its leader ``l``) is an
equality. Instead of handing it to SNS as a row that competes with the tasks (an equality
row is pinned like a saturated bound, and greedy saturation can then stall where the
coupled problem is regular), the problem is solved in the coupling's null space: every
follower is dropped from the variables and ``v = G z + v0``, where ``z`` holds the free
velocities (every index that is no follower, in increasing order), ``G`` (nv x nz) maps
them to all velocities and ``v0`` (nv) carries the drift terms ``b``. A chain (a follower
that leads another) composes: ``v_f2 = m2 (m1 v_l + b1) + b2``.

Each row of ``G`` has one non-zero entry at most (a follower moves with its root leader
only), so ``G``'s columns have disjoint supports. Any problem on ``v`` maps exactly:

- task rows ``J v = xdot`` become ``(J G) z = xdot - J v0``;
- general rows ``lower <= C v <= upper`` become ``lower - C v0 <= (C G) z <= upper - C v0``;
- the box stays a box: a free joint keeps its bounds, a follower's bounds
  ``lo_f <= g z_k + v0_f <= hi_f`` (``g`` the product of multipliers to its root leader
  ``k``) narrow its root leader's.

The solution maps back as ``v = G z + v0``; the coupling holds to rounding. Plain NumPy:
this module knows nothing of robots (the engine builds the couplings from its mimic
constraints).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stackik.errors import InvalidInput

__all__ = ["Reduction"]


class Reduction:
    """The change of variables ``v = G z + v0`` of a set of equality couplings.

    Args:
        nv: Number of velocity variables.
        followers: Velocity index of each coupling's follower.
        leaders: Velocity index of each coupling's leader.
        multipliers: ``m`` of each coupling (``v_f = m v_l + b``).

    Raises:
        InvalidInput: An index out of range, a follower coupled twice, a joint coupled to
            itself, or a cycle of couplings.

    Attributes:
        nv: Number of velocity variables.
        nz: Number of free variables (``nv`` less the followers).
        free: Velocity index of each free variable (increasing), size nz.
        G: The basis, nv x nz.
    """

    def __init__(
        self,
        nv: int,
        followers: Sequence[int] | np.ndarray,
        leaders: Sequence[int] | np.ndarray,
        multipliers: Sequence[float] | np.ndarray,
    ) -> None:
        self.nv = int(nv)
        f = np.asarray(followers, dtype=np.int64)
        lead = np.asarray(leaders, dtype=np.int64)
        mult = np.asarray(multipliers, dtype=float)
        self._check(f, lead)
        leader_of = {int(a): (int(b), float(m)) for a, b, m in zip(f, lead, mult, strict=True)}
        self.order = self._leaders_first(leader_of)  # coupling rows, leaders composed first
        self._f = f
        self._l = lead
        self._m = mult
        is_free = np.ones(self.nv, dtype=bool)
        is_free[f] = False
        self.free = np.flatnonzero(is_free)
        self.nz = int(self.free.size)
        column = np.full(self.nv, -1, dtype=np.int64)
        column[self.free] = np.arange(self.nz)
        coef = np.zeros(self.nv)
        coef[self.free] = 1.0
        for k in self.order:  # a follower's column is its leader's (already final) times m
            column[f[k]] = column[lead[k]]
            coef[f[k]] = mult[k] * coef[lead[k]]
        self.root = column[f]  # free index of each coupling's root leader
        self.gain = coef[f]  # product of multipliers from the root leader
        self.G = np.zeros((self.nv, self.nz))
        self.G[np.arange(self.nv), column] = coef
        # A follower of a follower composes the drift terms in order; else one assignment.
        self._chained = bool(np.isin(lead, f).any())
        self._moving = self.gain != 0.0  # couplings whose follower bounds its root leader
        roots = self.root[self._moving]
        self._one_each = bool(np.unique(roots).size == roots.size)  # a follower per root

    def _check(self, f: np.ndarray, lead: np.ndarray) -> None:
        for what, idx in (("follower", f), ("leader", lead)):
            if idx.size and (idx.min() < 0 or idx.max() >= self.nv):
                raise InvalidInput(f"a coupling's {what} index is out of range [0, {self.nv})")
        if np.unique(f).size != f.size:
            raise InvalidInput("a velocity is the follower of two couplings")
        if np.any(f == lead):
            raise InvalidInput("a velocity is coupled to itself")

    @staticmethod
    def _leaders_first(leader_of: dict[int, tuple[int, float]]) -> list[int]:
        """Coupling indices ordered so that a follower's leader is composed before it.

        Raises:
            InvalidInput: The couplings form a cycle.
        """
        depth: dict[int, int] = {}
        for start in leader_of:
            path: list[int] = []
            j = start
            while j in leader_of and j not in depth:
                if j in path:
                    raise InvalidInput(f"couplings form a cycle through velocity {j}")
                path.append(j)
                j = leader_of[j][0]
            d = depth.get(j, -1)  # -1 below a root leader (a free variable)
            for node in reversed(path):
                d += 1
                depth[node] = d
        followers = list(leader_of)
        return sorted(range(len(followers)), key=lambda k: depth[followers[k]])

    # -- mapping one step ------------------------------------------------------------------
    def offset(self, drift: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``v0`` (nv) from each coupling's drift term ``b`` (in coupling order)."""
        out.fill(0.0)
        if not self._chained:
            out[self._f] = drift
            return out
        for k in self.order:
            out[self._f[k]] = self._m[k] * out[self._l[k]] + drift[k]
        return out

    def box(
        self,
        lower: np.ndarray,
        upper: np.ndarray,
        v0: np.ndarray,
        z_lower: np.ndarray,
        z_upper: np.ndarray,
    ) -> None:
        """The box of ``z`` from the box of ``v`` (see the module docstring).

        Where the followers' bounds would leave a root leader no value (a badly drifted
        start) they are skipped: the leader's own box wins, the followers' bounds are the
        ones that do not hold.
        """
        np.take(lower, self.free, out=z_lower)
        np.take(upper, self.free, out=z_upper)
        k = self._moving
        g, f, j = self.gain[k], self._f[k], self.root[k]
        a = (lower[f] - v0[f]) / g
        b = (upper[f] - v0[f]) / g
        flip = g < 0.0
        lo = np.where(flip, b, a)
        hi = np.where(flip, a, b)
        if self._one_each:
            new_lo, new_hi = np.maximum(z_lower[j], lo), np.minimum(z_upper[j], hi)
        else:
            new_lo, new_hi = z_lower.copy(), z_upper.copy()
            np.maximum.at(new_lo, j, lo)
            np.minimum.at(new_hi, j, hi)
            new_lo, new_hi = new_lo[j], new_hi[j]
        ok = new_lo <= new_hi  # (a root whose followers leave it no value keeps its own box)
        z_lower[j[ok]] = new_lo[ok]
        z_upper[j[ok]] = new_hi[ok]

    def solution(self, z: np.ndarray, v0: np.ndarray) -> np.ndarray:
        """``v = G z + v0`` (a new array)."""
        return self.G @ z + v0
