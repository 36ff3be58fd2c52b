"""What a study computes: the failure reasons, the per-target budget and the study's spec."""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .. import _validate
from ..errors import InvalidInput

__all__ = ["SEEDING", "ReachBudget", "Reason", "StudySpec"]

#: Seeding strategies: neighbours' solutions first (REACH), the reference only, or random.
SEEDING = ("neighbors", "reference", "random")


class Reason(enum.IntEnum):
    """Why a target is (not) reachable; stored as ``int8``.

    Attributes:
        REACHABLE: A configuration passed every test.
        OUT_OF_REACH: Outside the reach envelope; rejected without IK.
        NO_IK: No configuration reached the pose within the budget.
        COLLISION: Configurations reached the pose, but every one was in self-collision.
        LIMITS: Reachable only outside the joint limits (or their margin): a short
            search without limits reached the pose after the budget ran out, and the
            further restarts inside the limits that this triggers
            (``ReachBudget.limits_confirm_rounds``) did not.
        BUDGET: The opt-in wall-clock cap ran out before the target was decided.
        CONSTRAINT: Configurations reached the pose, but the CoM polygon or the
            ``validate`` callback rejected every one.
        WORLD_COLLISION: A configuration reached the pose inside the limits and free of
            self-collision, but every one that did collided with the world (obstacles,
            attached objects; closer than the minimum distance). Precedence: a
            configuration in self-collision counts as ``COLLISION`` even when it also
            touches the world; a target with any configuration stopped only by the
            world is ``WORLD_COLLISION``.
        NOT_RUN: The target's chunk has not run (a partial study).
    """

    REACHABLE = 0
    OUT_OF_REACH = 1
    NO_IK = 2
    COLLISION = 3
    LIMITS = 4
    BUDGET = 5
    CONSTRAINT = 6
    WORLD_COLLISION = 7
    NOT_RUN = -1

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class ReachBudget:
    """The per-target search budget, in attempts and iterations (no wall clock).

    A target inside the envelope gets, in order: one attempt from the reference
    configuration; up to ``neighbor_attempts`` attempts from the solutions of solved
    neighbours (among its ``neighbors`` nearest targets of the chunk); then
    ``restart_rounds`` rounds from random configurations, each of at most
    ``restart_iterations`` Levenberg-Marquardt iterations (the compiled search restarts
    inside a round when it stalls). A seeded attempt is one start of at most
    ``attempt_iterations`` iterations (it ends early when it stalls). So the cost of an
    unreachable target is bounded by
    ``(1 + neighbor_attempts) * attempt_iterations + restart_rounds * restart_iterations``
    iterations (about 0.7 us each), whatever the machine.

    Attributes:
        neighbors: Nearest targets whose solutions may seed a target (>= 1).
        neighbor_attempts: Seeded attempts per target (>= 0).
        attempt_iterations: Iteration cap of a seeded attempt (>= 1).
        restart_rounds: Rounds of random restarts (>= 0).
        restart_iterations: Iteration cap of one round (>= 1).
        limits_probe_iterations: Iterations of the search without joint limits that tells
            ``LIMITS`` from ``NO_IK`` (0: off).
        limits_confirm_rounds: When that search reaches a pose outside the limits, rounds
            of restarts inside the limits (the first from its solution clamped into the
            limits, then from random configurations, ``restart_iterations`` each) spent
            before the target is labelled ``LIMITS``: a pose the budget missed is often
            reachable inside the limits too.
        neighbor_scale: Metres per radian of the neighbour distance
            ``sqrt(|dp|^2 + (scale theta)^2)`` [m/rad].
    """

    neighbors: int = 8
    neighbor_attempts: int = 3
    attempt_iterations: int = 40
    restart_rounds: int = 2
    restart_iterations: int = 100
    limits_probe_iterations: int = 50
    limits_confirm_rounds: int = 24
    neighbor_scale: float = 0.1

    def __post_init__(self) -> None:
        _validate.count(self.neighbors, "neighbors", maximum=64)
        _validate.count(self.neighbor_attempts, "neighbor_attempts", minimum=0, maximum=64)
        _validate.count(self.attempt_iterations, "attempt_iterations", maximum=1_000_000)
        _validate.count(self.restart_rounds, "restart_rounds", minimum=0, maximum=1000)
        _validate.count(self.restart_iterations, "restart_iterations", maximum=1_000_000)
        _validate.count(
            self.limits_probe_iterations, "limits_probe_iterations", minimum=0, maximum=1_000_000
        )
        _validate.count(
            self.limits_confirm_rounds, "limits_confirm_rounds", minimum=0, maximum=1000
        )
        _validate.positive_float(self.neighbor_scale, "neighbor_scale")

    def max_iterations(self) -> int:
        """Upper bound of the iterations one target costs, the limits probe aside.

        The probe and its confirmation rounds run only for targets nothing else reached.
        """
        return (
            1 + self.neighbor_attempts
        ) * self.attempt_iterations + self.restart_rounds * self.restart_iterations

    def to_dict(self) -> dict[str, Any]:
        """The fields as a dict."""
        return asdict(self)


@dataclass
class StudySpec:
    """Everything a worker needs besides the solver: frame, budget, seeds, evaluators.

    Attributes:
        frame: The tool frame.
        reference_q: Start of the first attempt and value of the joints off the chain.
        seed: Seed of the random restarts (per chunk: ``(seed, chunk)``).
        budget: The per-target budget.
        seeding: ``"neighbors"``, ``"reference"`` or ``"random"``.
        position_tolerance: Accepted position error [m].
        orientation_tolerance: Accepted orientation error [rad].
        locked_joints: Joints held at ``reference_q``.
        evaluators: The evaluators.
        validate: ``validate(q) -> bool`` or None.
        time_budget: Opt-in wall-clock cap per target [s] (None: none); breaks
            reproducibility (see :class:`~stackik.reach.ReachStudy`).
        envelope: Use the reach envelope to reject targets without IK.
    """

    frame: str
    reference_q: np.ndarray
    seed: int = 0
    budget: ReachBudget = field(default_factory=ReachBudget)
    seeding: str = "neighbors"
    position_tolerance: float = 1e-5
    orientation_tolerance: float = 1e-4
    locked_joints: tuple[str, ...] = ()
    evaluators: list = field(default_factory=list)
    validate: Callable[[np.ndarray], bool] | None = None
    time_budget: float | None = None
    envelope: bool = True

    def __post_init__(self) -> None:
        if self.seeding not in SEEDING:
            raise InvalidInput(
                f"seeding must be one of {SEEDING}, got {self.seeding!r}",
                what="seeding",
                value=self.seeding,
            )
        if not isinstance(self.budget, ReachBudget):
            raise InvalidInput(
                f"budget must be a ReachBudget, got {type(self.budget).__name__}", what="budget"
            )
        self.seed = _validate.count(self.seed, "seed", minimum=0, maximum=2**63 - 1)
        self.position_tolerance = _validate.positive_float(
            self.position_tolerance, "position_tolerance"
        )
        self.orientation_tolerance = _validate.positive_float(
            self.orientation_tolerance, "orientation_tolerance"
        )
        if self.time_budget is not None:
            self.time_budget = _validate.positive_float(self.time_budget, "time_budget")
        if isinstance(self.locked_joints, str):
            self.locked_joints = (self.locked_joints,)
        self.locked_joints = tuple(self.locked_joints)
        if self.validate is not None and not callable(self.validate):
            raise InvalidInput("validate must be callable", what="validate")

    def describe(self) -> dict[str, Any]:
        """The settings that define the results (stored with a study, checked on resume)."""
        return {
            "frame": self.frame,
            "reference_q": [float(x) for x in self.reference_q],
            "seed": self.seed,
            "budget": self.budget.to_dict(),
            "seeding": self.seeding,
            "position_tolerance": self.position_tolerance,
            "orientation_tolerance": self.orientation_tolerance,
            "locked_joints": list(self.locked_joints),
            "validate": _callable_name(self.validate),
            "time_budget": self.time_budget,
            "envelope": self.envelope,
        }


def _callable_name(fn: object) -> str | None:
    if fn is None:
        return None
    mod = getattr(fn, "__module__", "?")
    return f"{mod}.{getattr(fn, '__qualname__', type(fn).__name__)}"


def chunk_seed(seed: int, chunk: int, stage: int) -> int:
    """A restart seed in ``[0, 2^31)`` for one chunk and stage, independent of workers."""
    mixed = np.random.SeedSequence([seed, chunk, stage]).generate_state(1, dtype=np.uint32)
    return int(mixed[0]) & 0x7FFFFFFF


def finite_or_none(value: float | None) -> float | None:
    """``value`` when finite, else None (JSON has no inf)."""
    return None if value is None or not math.isfinite(value) else float(value)


def as_names(names: Sequence[str]) -> list[str]:
    """Names as a list of strings."""
    return [str(n) for n in names]
