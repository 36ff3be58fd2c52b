"""Boundary checks shared by the public API (shapes, finiteness, bounds).

Public functions call these once; private helpers trust their inputs.
"""

from __future__ import annotations

import numpy as np

from .errors import InvalidBounds, InvalidInput, NonFiniteInput, ShapeError


def vector(x: object, n: int, what: str) -> np.ndarray:
    """Return ``x`` as a finite float vector of size ``n``.

    Raises:
        ShapeError: ``x`` does not have ``n`` entries.
        NonFiniteInput: ``x`` has NaN or inf entries.
    """
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ShapeError(what, (n,), ()) from exc
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ShapeError(what, (n,), arr.shape)
    finite = np.isfinite(arr)
    if not finite.all():
        raise NonFiniteInput(what, np.flatnonzero(~finite).tolist())
    return arr


def matrix(x: object, shape: tuple[int | None, int | None], what: str) -> np.ndarray:
    """Return ``x`` as a finite 2-D float array; ``None`` in ``shape`` means any size.

    Raises:
        ShapeError: Wrong number of dimensions or sizes.
        NonFiniteInput: NaN or inf entries (flat indices are reported).
    """
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ShapeError(what, str(shape), ()) from exc
    if arr.ndim != 2 or any(
        s is not None and s != g for s, g in zip(shape, arr.shape, strict=True)
    ):
        raise ShapeError(what, tuple(-1 if s is None else s for s in shape), arr.shape)
    finite = np.isfinite(arr)
    if not finite.all():
        raise NonFiniteInput(what, np.flatnonzero(~finite).tolist())
    return arr


def bounds(
    lower: object, upper: object, n: int, what: str, allow_inf: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Validate a pair of bound vectors of size ``n`` with ``lower <= upper``.

    Infinite entries are allowed when ``allow_inf`` (one-sided bounds); NaN never is.

    Raises:
        ShapeError: A vector has the wrong size.
        NonFiniteInput: NaN entries (or inf when ``allow_inf`` is false).
        InvalidBounds: ``lower > upper`` somewhere.
    """
    lo = np.asarray(lower, dtype=float)
    hi = np.asarray(upper, dtype=float)
    for arr, name in ((lo, f"{what} lower"), (hi, f"{what} upper")):
        if arr.ndim != 1 or arr.shape[0] != n:
            raise ShapeError(name, (n,), arr.shape)
        bad = np.isnan(arr) if allow_inf else ~np.isfinite(arr)
        if bad.any():
            raise NonFiniteInput(name, np.flatnonzero(bad).tolist())
    inverted = lo > hi
    if inverted.any():
        raise InvalidBounds(what, np.flatnonzero(inverted).tolist())
    return lo, hi


def positive_float(value: object, what: str, allow_zero: bool = False) -> float:
    """Return ``value`` as a finite float > 0 (``>= 0`` with ``allow_zero``).

    Raises:
        InvalidInput: Not a number, not finite, or out of range.
    """
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        v = float("nan")
    if not (np.isfinite(v) and (v >= 0 if allow_zero else v > 0)):
        sign = ">= 0" if allow_zero else "> 0"
        raise InvalidInput(f"{what} must be a finite number {sign}, got {value!r}")
    return v


def count(value: object, what: str, minimum: int = 1) -> int:
    """Return ``value`` as an integer ``>= minimum`` (bools are refused).

    Raises:
        InvalidInput: Not an integer or below ``minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InvalidInput(f"{what} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def is_empty(x: object) -> bool:
    """Whether an optional array argument means "not given": ``None`` or of length 0."""
    if x is None:
        return True
    try:
        return len(x) == 0  # type: ignore[arg-type]
    except TypeError:
        return False
