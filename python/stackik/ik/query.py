"""What one global-IK search looks for, and what it has found (shared by the search modules)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .branches import BranchFlags, BranchGeometry, BranchTarget
from .chain import SerialChain
from .chains import ChainSetup
from .checks import CandidateChecker

__all__ = ["SearchOutcome", "SearchQuery"]


@dataclass
class SearchQuery:
    """What one search looks for (immutable during the search).

    Attributes (beyond the target, checker and budgets): ``all_branches`` makes the
    search count distinct branches (2 pi copies collapsed, at least ``separation``
    apart, [rad or m]) and seed toward the missing ones with ``branch_geometry`` (arms
    with branch flags); ``expected`` is the number of branches the arm can have, when
    known; ``branch_target`` gives the flags of the solutions (arms with flags);
    ``search_chain`` is the chain the branch search runs on when it differs from the
    setup's (revolute joints spanning a full turn unbounded: their limits hold modulo 2 pi).
    """

    setup: ChainSetup
    R: np.ndarray
    p: np.ndarray
    checker: CandidateChecker
    q_ref: np.ndarray
    max_solutions: int
    deadline: float
    tol_p: float
    tol_o: float
    branch: tuple[int | None, int | None, int | None] | None
    distinct: float
    max_attempts: int | None
    include_alternates: bool
    max_iterations: int | None = None
    all_branches: bool = False
    separation: float = 0.0
    branch_geometry: BranchGeometry | None = None
    branch_target: BranchTarget | None = None
    expected: int | None = None
    search_chain: SerialChain | None = None


@dataclass
class SearchOutcome:
    """What a search has found so far.

    ``q`` (full configurations) and ``qc`` (chain configurations) are the accepted
    solutions; with ``all_branches`` each has its branch ``key`` (angles wrapped into
    ``(-pi, pi]``) and ``flags``; ``rejected_keys`` are branches found and rejected
    (collision, limits, callback), ``branch_rejections`` their ``(flags, reason, q)``.
    """

    q: list[np.ndarray] = field(default_factory=list)
    qc: list[np.ndarray] = field(default_factory=list)
    rejected: Counter = field(default_factory=Counter)
    iterations: int = 0
    attempts: int = 0
    stopped_by: str = "max_solutions"
    keys: list[np.ndarray] = field(default_factory=list)
    flags: list[BranchFlags | None] = field(default_factory=list)
    rejected_keys: list[np.ndarray] = field(default_factory=list)
    branch_rejections: list[tuple[BranchFlags | None, str, np.ndarray]] = field(
        default_factory=list
    )
