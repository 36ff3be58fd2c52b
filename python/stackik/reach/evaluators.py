"""Evaluators: how good a reached target is, as a score in [0, 1] (REACH's evaluators).

Each evaluator is a small class with a ``name``, a ``weight`` and ``evaluate(ctx)``
returning one score per reached target; the study's ``score`` is the weighted mean
``sum_k w_k s_k / sum_k w_k``. A user adds one without touching the package::

    class Height(Evaluator):
        name = "height"

        def evaluate(self, ctx):
            return np.clip(ctx.poses[:, 2, 3] / 2.0, 0.0, 1.0)

Evaluators travel to worker processes by pickling: define them in an importable module
(not inside a function). ``settings()`` is what a study stores and compares on resume.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from .. import _validate
from ..errors import InvalidInput

if TYPE_CHECKING:
    from ..ik.chain import SerialChain

__all__ = [
    "CollisionDistance",
    "EvaluationContext",
    "Evaluator",
    "JointLimitDistance",
    "Manipulability",
    "ReferencePosture",
    "combine",
    "default_evaluators",
]


@dataclass
class EvaluationContext:
    """What evaluators see: the reached targets of one chunk and their configurations.

    Attributes:
        poses: World target poses, (r, 4, 4) [m].
        q: Full configurations (r, nq) [rad or m].
        q_chain: Chain joint values (r, n) [rad or m].
        chain: The serial chain searched (its limits include the solver's margin).
        lower: Model lower limits of the chain joints (r-independent, (n,)).
        upper: Model upper limits of the chain joints.
        reference_q: The study's reference configuration (nq,).
        distance_fn: Smallest watched pair distance of a configuration [m] (``inf`` without
            collision geometry); called by :meth:`min_distances`.
        difference_fn: ``robot.difference(q0, q1)`` (a joint displacement, size nv).
    """

    poses: np.ndarray
    q: np.ndarray
    q_chain: np.ndarray
    chain: SerialChain
    lower: np.ndarray
    upper: np.ndarray
    reference_q: np.ndarray
    distance_fn: Callable[[np.ndarray], float]
    difference_fn: Callable[[np.ndarray, np.ndarray], np.ndarray]
    _jacobians: np.ndarray | None = field(default=None, repr=False)
    _distances: np.ndarray | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return int(self.q.shape[0])

    def jacobians(self) -> np.ndarray:
        """World-aligned 6 x n chain Jacobians ``[linear; angular]``, (r, 6, n) (cached)."""
        if self._jacobians is None:
            n = self.chain.n
            J = np.empty((len(self), 6, n))
            for k in range(len(self)):
                J[k] = self.chain.jacobian(self.q_chain[k])
            self._jacobians = J
        return self._jacobians

    def min_distances(self) -> np.ndarray:
        """Smallest distance of the watched collision pairs, (r,) [m] (cached)."""
        if self._distances is None:
            self._distances = np.array([self.distance_fn(q) for q in self.q], dtype=float)
        return self._distances


class Evaluator:
    """Base class: a named, weighted score in [0, 1] of reached targets.

    Subclasses set ``name`` and implement :meth:`evaluate`; they may extend
    :meth:`settings` with their parameters.

    Args:
        weight: Weight in the combined score (>= 0).
    """

    name = "evaluator"

    def __init__(self, weight: float = 1.0) -> None:
        self.weight = _validate.positive_float(weight, "weight", allow_zero=True)

    def evaluate(self, ctx: EvaluationContext) -> np.ndarray:
        """Scores of the reached targets, (r,) in [0, 1]."""
        raise NotImplementedError

    def settings(self) -> dict[str, Any]:
        """Parameters that define the scores (stored with a study, compared on resume)."""
        return {"class": type(self).__name__, "name": self.name, "weight": self.weight}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.settings().items() if k != "class")
        return f"{type(self).__name__}({args})"


class Manipulability(Evaluator):
    """Yoshikawa's manipulability ``w = sqrt(det(J J^T))``, scaled into [0, 1].

    ``J`` is the chain's 6 x n world-aligned Jacobian (``rows="all"``), or its position
    rows (``"position"``, [m]) or orientation rows (``"orientation"``). The score is
    ``min(1, w / scale)``; without a ``scale`` it is the largest ``w`` of 4096 random
    configurations of the chain (seeded, so every worker gets the same), a robot-specific
    "good" value.

    Args:
        weight: Weight in the combined score.
        rows: ``"all"``, ``"position"`` or ``"orientation"``.
        scale: ``w`` that scores 1 (> 0), or None.
    """

    name = "manipulability"
    _ROWS: ClassVar[dict[str, slice]] = {
        "all": slice(0, 6),
        "position": slice(0, 3),
        "orientation": slice(3, 6),
    }

    def __init__(self, weight: float = 1.0, rows: str = "all", scale: float | None = None):
        super().__init__(weight)
        if rows not in self._ROWS:
            raise InvalidInput(
                f"rows must be 'all', 'position' or 'orientation', got {rows!r}", what="rows"
            )
        self.rows = rows
        self.scale = None if scale is None else _validate.positive_float(scale, "scale")
        self._auto: dict[int, float] = {}

    def values(self, J: np.ndarray) -> np.ndarray:
        """``sqrt(det(J J^T))`` of a stack of Jacobians, (r,)."""
        Js = J[:, self._ROWS[self.rows], :]
        return np.sqrt(np.maximum(np.linalg.det(Js @ np.swapaxes(Js, 1, 2)), 0.0))

    def _scale(self, chain: SerialChain) -> float:
        if self.scale is not None:
            return self.scale
        key = id(chain)
        if key not in self._auto:
            rng = np.random.default_rng(0)
            J = np.array([chain.jacobian(chain.random_configuration(rng)) for _ in range(4096)])
            self._auto[key] = max(float(self.values(J).max()), 1e-12)
        return self._auto[key]

    def evaluate(self, ctx: EvaluationContext) -> np.ndarray:
        """``min(1, sqrt(det(J J^T)) / scale)``."""
        if not len(ctx):
            return np.zeros(0)
        return np.minimum(1.0, self.values(ctx.jacobians()) / self._scale(ctx.chain))

    def settings(self) -> dict[str, Any]:
        """Weight, rows and scale."""
        return {**super().settings(), "rows": self.rows, "scale": self.scale}

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_auto"} | {"_auto": {}}


class JointLimitDistance(Evaluator):
    """Distance to the joint limits: ``min_i d_i`` raised to ``exponent``.

    ``d_i = min(q_i - lo_i, hi_i - q_i) / ((hi_i - lo_i) / 2)`` is 1 in the middle of
    joint i's range and 0 at a limit (the model's limits; unbounded joints count 1).
    REACH's joint-limit evaluator.

    Args:
        weight: Weight in the combined score.
        exponent: Shape of the penalty (> 0; 1: linear).
    """

    name = "joint_limits"

    def __init__(self, weight: float = 1.0, exponent: float = 1.0) -> None:
        super().__init__(weight)
        self.exponent = _validate.positive_float(exponent, "exponent")

    def evaluate(self, ctx: EvaluationContext) -> np.ndarray:
        """``(min_i d_i) ** exponent``."""
        lo, hi = ctx.lower, ctx.upper
        bounded = np.isfinite(lo) & np.isfinite(hi) & (hi > lo)
        if not len(ctx) or not bounded.any():
            return np.ones(len(ctx))
        q = ctx.q_chain[:, bounded]
        half = 0.5 * (hi[bounded] - lo[bounded])
        d = np.minimum(q - lo[bounded], hi[bounded] - q) / half
        return np.clip(d.min(axis=1), 0.0, 1.0) ** self.exponent

    def settings(self) -> dict[str, Any]:
        """Weight and exponent."""
        return {**super().settings(), "exponent": self.exponent}


class CollisionDistance(Evaluator):
    """Distance to collision: ``min(1, d / distance)``.

    ``d`` is the smallest distance of the pairs the solver's collision constraint watches
    (every active pair when the solver has none) and, in a study with a world, of every
    robot-world pair [m]; ``distance`` [m] scores 1.

    Args:
        weight: Weight in the combined score.
        distance: Clearance that scores 1 [m] (> 0).
    """

    name = "collision_distance"

    def __init__(self, weight: float = 1.0, distance: float = 0.1) -> None:
        super().__init__(weight)
        self.distance = _validate.positive_float(distance, "distance")

    def evaluate(self, ctx: EvaluationContext) -> np.ndarray:
        """``clip(d / distance, 0, 1)``."""
        return np.clip(ctx.min_distances() / self.distance, 0.0, 1.0)

    def settings(self) -> dict[str, Any]:
        """Weight and distance."""
        return {**super().settings(), "distance": self.distance}


class ReferencePosture(Evaluator):
    """Closeness to a reference posture: ``exp(-|delta_q|^2 / (2 sigma^2))``.

    ``delta_q = difference(q_ref, q)`` over every joint [rad or m]; ``q_ref`` is the
    given posture or the study's reference configuration.

    Args:
        weight: Weight in the combined score.
        sigma: Distance that scores ``exp(-1/2)`` [rad] (> 0).
        posture: Reference configuration (size nq), or None for the study's.
    """

    name = "reference_posture"

    def __init__(self, weight: float = 1.0, sigma: float = 1.0, posture: object = None) -> None:
        super().__init__(weight)
        self.sigma = _validate.positive_float(sigma, "sigma")
        self.posture = None
        if posture is not None:
            arr = _validate.as_floats(posture, "posture", ("nq",))
            if arr.ndim != 1 or not np.isfinite(arr).all():
                raise InvalidInput("posture must be a finite configuration vector", what="posture")
            self.posture = arr.copy()

    def evaluate(self, ctx: EvaluationContext) -> np.ndarray:
        """``exp(-|difference(q_ref, q)|^2 / (2 sigma^2))``."""
        ref = ctx.reference_q if self.posture is None else self.posture
        if ref.shape != ctx.reference_q.shape:
            raise InvalidInput(
                f"posture has {ref.shape[0]} entries, the robot nq={ctx.reference_q.shape[0]}",
                what="posture",
            )
        d2 = np.array([float(np.sum(ctx.difference_fn(ref, q) ** 2)) for q in ctx.q])
        return np.exp(-d2 / (2.0 * self.sigma**2)) if len(d2) else np.zeros(0)

    def settings(self) -> dict[str, Any]:
        """Weight, sigma and posture."""
        posture = None if self.posture is None else self.posture.tolist()
        return {**super().settings(), "sigma": self.sigma, "posture": posture}


def default_evaluators() -> list[Evaluator]:
    """Manipulability and distance to the joint limits, weight 1 each."""
    return [Manipulability(), JointLimitDistance()]


def check_evaluators(evaluators: Sequence[object] | None) -> list[Evaluator]:
    """The evaluators of a study (defaults when None), checked for names and methods.

    Raises:
        InvalidInput: Not an evaluator, or two with one name.
    """
    evs = default_evaluators() if evaluators is None else list(evaluators)
    names = []
    for ev in evs:
        if not (hasattr(ev, "evaluate") and hasattr(ev, "name") and hasattr(ev, "weight")):
            raise InvalidInput(f"not an evaluator (needs name, weight, evaluate): {ev!r}")
        _validate.positive_float(ev.weight, f"{ev.name}.weight", allow_zero=True)
        names.append(str(ev.name))
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InvalidInput(f"two evaluators share the names {dupes}: give them distinct names")
    return evs  # type: ignore[return-value]


def evaluator_settings(evaluators: Sequence[Evaluator]) -> list[dict[str, Any]]:
    """Each evaluator's settings (a plain name and weight for duck-typed ones)."""
    out = []
    for ev in evaluators:
        s = getattr(ev, "settings", None)
        out.append(s() if callable(s) else {"name": ev.name, "weight": float(ev.weight)})
    return out


def combine(scores: dict[str, np.ndarray], weights: dict[str, float], r: int) -> np.ndarray:
    """Weighted mean ``sum_k w_k s_k / sum_k w_k`` (zeros when every weight is 0)."""
    total = sum(weights.values())
    if not scores or total <= 0 or not math.isfinite(total):
        return np.zeros(r)
    out = np.zeros(r)
    for name, s in scores.items():
        out += weights[name] * s
    return out / total
