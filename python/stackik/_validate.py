"""Boundary checks shared by the public API (shapes, finiteness, bounds).

Public functions call these once; private helpers trust their inputs.
"""

from __future__ import annotations

import numpy as np

from .errors import InvalidBounds, InvalidInput, NonFiniteInput, ShapeError


def as_floats(x: object, what: str, expected: tuple[int | str, ...] | str) -> np.ndarray:
    """``x`` as a float array, refusing what a plain conversion would hide.

    Complex values would lose their imaginary part, integers beyond float range would
    overflow, ragged or non-numeric input would give object arrays.

    Raises:
        InvalidInput: Complex values.
        ShapeError: Not a rectangular numeric array (``expected`` is reported).
        NonFiniteInput: A number beyond the float range.
    """
    if isinstance(x, np.ndarray) and x.dtype == np.float64:
        return x
    try:
        raw = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise ShapeError(what, expected, ()) from exc
    if np.iscomplexobj(raw):
        raise InvalidInput(f"{what}: complex values are not accepted, got dtype {raw.dtype}")
    if raw.dtype.kind not in "biufO":  # text, dates, bytes: not an array of numbers
        raise ShapeError(what, expected, raw.shape)
    try:
        return np.asarray(raw, dtype=float)
    except OverflowError:
        raise NonFiniteInput(what, [0]) from None
    except (TypeError, ValueError):  # an object array holding something else than reals
        if any(isinstance(e, complex) for e in raw.flat):
            raise InvalidInput(f"{what}: complex values are not accepted") from None
        raise ShapeError(what, expected, raw.shape) from None


def vector(x: object, n: int, what: str) -> np.ndarray:
    """Return ``x`` as a finite float vector of size ``n``.

    Raises:
        ShapeError: ``x`` does not have ``n`` entries.
        NonFiniteInput: ``x`` has NaN or inf entries.
        InvalidInput: Complex or non-numeric entries.
    """
    arr = as_floats(x, what, (n,))
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
        InvalidInput: Complex or non-numeric entries.
    """
    arr = as_floats(x, what, str(shape))
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
    lo = as_floats(lower, f"{what} lower", (n,))
    hi = as_floats(upper, f"{what} upper", (n,))
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
