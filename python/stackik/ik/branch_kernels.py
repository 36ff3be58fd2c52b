"""Compiled bookkeeping of the closed-form branches of one pose (see :mod:`.allbranches`)."""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel, register_warmup

__all__ = [
    "DUPLICATE",
    "LIMITS",
    "OK",
    "POSE",
    "candidate_row",
    "closed_form_rows",
    "fold_seed",
]

#: Row status codes of :func:`closed_form_rows`.
OK, POSE, DUPLICATE, LIMITS = 0, 1, 2, 3
_TWO_PI = 2.0 * math.pi


@kernel
def _sign(x: float) -> int:
    if abs(x) <= 1e-12:
        return 0
    return 1 if x > 0.0 else -1


@kernel(inline=True)
def nearest_copy(v: float, ref: float, lo: float, hi: float) -> float:
    """The 2 pi copy of angle ``v`` nearest ``ref``, then turned into ``[lo, hi]`` if it can be.

    The result is outside the limits only when no copy fits (the caller checks).
    """
    v += _TWO_PI * math.floor((ref - v) / _TWO_PI + 0.5)
    if v < lo:
        v += _TWO_PI * math.ceil((lo - v) / _TWO_PI)
    if v > hi:
        v -= _TWO_PI * math.ceil((v - hi) / _TWO_PI)
    return v


@kernel
def closed_form_rows(
    Q: np.ndarray,
    err: np.ndarray,
    ref: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    angle: np.ndarray,
    tol: np.ndarray,
    coef: np.ndarray,
    reps: np.ndarray,
    status: np.ndarray,
    flags: np.ndarray,
) -> None:
    """Status, nearest copy and flags of every closed-form branch (rows of ``Q``).

    Args:
        Q: Branches (k x n), angles in ``(-pi, pi]``.
        err: Their FK errors (k x 2) [m, rad].
        ref: Reference chain configuration (n).
        lo: Lower limits of the check (n) [rad or m].
        hi: Upper limits of the check (n).
        angle: 1 for joints whose value is an angle (their copies differ by 2 pi).
        tol: Position and orientation tolerances, then the separation of two branches.
        coef: ``(A, B)`` of the shoulder, elbow and wrist flag functions of joints 1, 3
            and 5 (3 x 2; all zero: no flags).
        reps: Out: the copy inside the limits nearest ``ref`` (k x n).
        status: Out: :data:`OK`, :data:`POSE` (beyond the tolerances), :data:`DUPLICATE`
            (within the separation of an earlier row not rejected for its pose) or
            :data:`LIMITS` (no copy inside the limits).
        flags: Out: the flags (k x 3).
    """
    k, n = Q.shape[0], Q.shape[1]
    for i in range(k):
        status[i] = OK
        if not (err[i, 0] <= tol[0] and err[i, 1] <= tol[1]):
            status[i] = POSE
        for j, c in ((0, 0), (2, 1), (4, 2)):
            flags[i, c] = _sign(coef[c, 0] * math.cos(Q[i, j]) + coef[c, 1] * math.sin(Q[i, j]))
        if status[i] == POSE:
            continue
        for m in range(i):
            if status[m] == POSE:
                continue
            gap = 0.0
            for j in range(n):
                d = abs(Q[i, j] - Q[m, j])
                if angle[j]:
                    d = min(d, _TWO_PI - d)
                gap = max(gap, d)
            if gap < tol[2]:
                status[i] = DUPLICATE
                break
        if status[i] == DUPLICATE:
            continue
        for j in range(n):
            v = nearest_copy(Q[i, j], ref[j], lo[j], hi[j]) if angle[j] else Q[i, j]
            reps[i, j] = v
            if not lo[j] <= v <= hi[j]:
                status[i] = LIMITS


@kernel
def candidate_row(
    qc: np.ndarray,
    keys: np.ndarray,
    nkeys: int,
    ref: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    angle: np.ndarray,
    sep: float,
    key: np.ndarray,
    rep: np.ndarray,
) -> int:
    """Branch key, duplicate test and nearest copy of one search candidate.

    Args:
        qc: The candidate (n).
        keys: Keys of the branches found so far (rows ``0 .. nkeys - 1``).
        nkeys: Their number.
        ref: Reference chain configuration (n).
        lo: Lower limits of the check (n) [rad or m].
        hi: Upper limits of the check (n).
        angle: 1 for joints whose value is an angle.
        sep: Separation of two branches [rad or m].
        key: Out: the candidate's key (angles wrapped into ``(-pi, pi]``).
        rep: Out: its copy inside the limits nearest ``ref``.

    Returns:
        :data:`OK`, :data:`DUPLICATE` or :data:`LIMITS`.
    """
    n = qc.shape[0]
    for j in range(n):
        v = qc[j]
        if angle[j]:
            v -= _TWO_PI * math.floor((v + math.pi) / _TWO_PI)
            if v <= -math.pi:
                v += _TWO_PI
        key[j] = v
    for m in range(nkeys):
        gap = 0.0
        for j in range(n):
            d = abs(key[j] - keys[m, j])
            if angle[j]:
                d = min(d, _TWO_PI - d)
            gap = max(gap, d)
        if gap < sep:
            return DUPLICATE
    status = OK
    for j in range(n):
        v = nearest_copy(qc[j], ref[j], lo[j], hi[j]) if angle[j] else qc[j]
        rep[j] = v
        if not lo[j] <= v <= hi[j]:
            status = LIMITS
    return status


@kernel
def fold_seed(q: np.ndarray, lo: np.ndarray, hi: np.ndarray, angle: np.ndarray) -> None:
    """Bring a seed inside ``[lo, hi]`` in place: angles by 2 pi turns, then clipping."""
    for j in range(q.shape[0]):
        v = q[j]
        if angle[j]:
            if v < lo[j]:
                v += _TWO_PI * math.ceil((lo[j] - v) / _TWO_PI)
            if v > hi[j]:
                v -= _TWO_PI * math.ceil((v - hi[j]) / _TWO_PI)
        q[j] = min(max(v, lo[j]), hi[j])


@register_warmup
def _warm_up_branch_kernels() -> None:
    """Run each kernel once on a 6-joint example."""
    n = 6
    Q = np.zeros((2, n))
    Q[1, 0] = 1.0
    zeros, ones = np.zeros(n), np.ones(n, dtype=np.uint8)
    lo, hi = np.full(n, -7.0), np.full(n, 7.0)
    closed_form_rows(
        Q,
        np.zeros((2, 2)),
        zeros,
        lo,
        hi,
        ones,
        np.array([1e-5, 1e-4, 1e-3]),
        np.ones((3, 2)),
        np.empty((2, n)),
        np.empty(2, dtype=np.int64),
        np.empty((2, 3), dtype=np.int64),
    )
    candidate_row(Q[1], Q, 1, zeros, lo, hi, ones, 1e-3, np.empty(n), np.empty(n))
    fold_seed(np.full(n, 8.0), lo, hi, ones)
