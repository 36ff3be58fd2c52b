"""Boundary checks shared by the public API (shapes, finiteness, bounds).

Public functions call these once; private helpers trust their inputs.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Iterable, Mapping
from typing import Any, TypeGuard

import numpy as np

from .errors import InvalidBounds, InvalidInput, NonFiniteInput, ShapeError

#: Largest magnitude accepted for a configuration, a velocity or a scalar setting (time
#: step, damping, gain, weight, distance, budget ...) [SI units]: nothing physical in a
#: robot is larger, and larger values overflow the dynamics or the squared norms.
MAX_MAGNITUDE = 1e6


def as_floats(x: object, what: str, expected: tuple[int | str, ...] | str) -> np.ndarray:
    """``x`` as a float array, refusing what a plain conversion would hide.

    Complex values would lose their imaginary part, integers beyond float range would
    overflow, ragged or non-numeric input would give object arrays, and booleans would
    pass for 0 and 1 (a mask handed where numbers belong).

    Raises:
        InvalidInput: Complex values; booleans.
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
        raise InvalidInput(
            f"{what}: complex values are not accepted, got dtype {raw.dtype}", what=what
        )
    if raw.dtype.kind == "b":
        raise InvalidInput(
            f"{what}: booleans are not numbers, got a {raw.dtype} array of shape {raw.shape}",
            what=what,
        )
    if raw.dtype.kind not in "iufO":  # text, dates, bytes: not an array of numbers
        raise ShapeError(what, expected, raw.shape)
    if raw.dtype.kind == "O" and any(isinstance(e, (bool, np.bool_)) for e in raw.flat):
        raise InvalidInput(f"{what}: booleans are not numbers", what=what)
    try:
        return np.asarray(raw, dtype=float)
    except OverflowError:
        raise NonFiniteInput(what, [0]) from None
    except (TypeError, ValueError):  # an object array holding something else than reals
        if any(isinstance(e, complex) for e in raw.flat):
            raise InvalidInput(f"{what}: complex values are not accepted", what=what) from None
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
    return finite(arr, what)


#: Arrays up to this many entries are checked by builtins on a list (faster than a
#: NumPy reduction at these sizes).
_SHORT = 64


def finite(arr: np.ndarray, what: str) -> np.ndarray:
    """``arr`` when every entry is finite.

    Raises:
        NonFiniteInput: NaN or inf entries (flat indices are reported).
    """
    if not all_finite(arr):
        raise NonFiniteInput(what, np.flatnonzero(~np.isfinite(arr)).tolist())
    return arr


def all_finite(arr: np.ndarray) -> bool:
    """Whether every entry of the float array ``arr`` is finite (neither NaN nor inf)."""
    if arr.size <= _SHORT and math.isfinite(sum(arr.ravel().tolist())):
        return True  # (a NaN or inf makes the sum non-finite; so may an overflow: see below)
    return bool(np.isfinite(arr).all())


def bounded(arr: np.ndarray, limit: float, what: str) -> np.ndarray:
    """``arr`` (finite) when every entry's magnitude is at most ``limit``.

    Raises:
        InvalidInput: An entry beyond ``limit`` (its index and value are named).
    """
    big = np.abs(arr) > limit
    if big.any():
        k = int(np.flatnonzero(big)[0])
        raise InvalidInput(
            f"{what}[{k}] = {arr.flat[k]:.3g} is beyond +-{limit:g}: "
            "no robot quantity is that large",
            what=what,
            value=float(arr.flat[k]),
        )
    return arr


def is_float_vector(x: object, n: int) -> TypeGuard[np.ndarray]:
    """Whether ``x`` is already a float64 NumPy vector of size ``n`` (no conversion needed)."""
    return isinstance(x, np.ndarray) and x.dtype == np.float64 and x.shape == (n,)


def bounded_vector(x: object, n: int, limit: float, what: str) -> np.ndarray:
    """:func:`vector` then :func:`bounded`, with one pass over ``x`` when it is valid.

    Raises:
        ShapeError, NonFiniteInput, InvalidInput: As :func:`vector` and :func:`bounded`.
    """
    if is_float_vector(x, n):
        values = x.tolist()  # (builtins on a list beat NumPy reductions on short vectors)
        norm = math.hypot(*values)
        if norm <= limit and norm < math.inf:
            return x  # (the norm bounds every |x_i|; a NaN or an inf fails it)
        if math.isfinite(sum(values)) and max(values) <= limit and min(values) >= -limit:
            return x  # (a NaN or inf makes the sum non-finite; the slow path names it)
    return bounded(vector(x, n, what), limit, what)


def matrix(x: object, shape: tuple[int | None, int | None], what: str) -> np.ndarray:
    """Return ``x`` as a finite 2-D float array; ``None`` in ``shape`` means any size.

    Raises:
        ShapeError: Wrong number of dimensions or sizes.
        NonFiniteInput: NaN or inf entries (flat indices are reported).
        InvalidInput: Complex or non-numeric entries.
    """
    return floats(x, shape, what)


def floats(x: object, shape: tuple[int | None, ...], what: str) -> np.ndarray:
    """Return ``x`` as a finite float array of ``shape``; ``None`` means any size there.

    Raises:
        ShapeError: Wrong number of dimensions or sizes.
        NonFiniteInput: NaN or inf entries (flat indices are reported).
        InvalidInput: Complex or non-numeric entries.
    """
    arr = as_floats(x, what, str(shape))
    if arr.ndim != len(shape) or any(
        s is not None and s != g for s, g in zip(shape, arr.shape, strict=True)
    ):
        raise ShapeError(what, tuple(-1 if s is None else s for s in shape), arr.shape)
    return finite(arr, what)


def bounds(
    lower: object,
    upper: object,
    n: int,
    what: str,
    allow_inf: bool = True,
    limit: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Validate a pair of bound vectors of size ``n`` with ``lower <= upper``.

    Infinite entries are allowed when ``allow_inf`` (one-sided bounds); NaN never is.
    With ``limit``, finite entries must be at most ``limit`` in magnitude.

    Raises:
        ShapeError: A vector has the wrong size.
        NonFiniteInput: NaN entries (or inf when ``allow_inf`` is false).
        InvalidInput: A finite entry beyond ``limit``.
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
        if limit is not None:
            bounded(np.where(np.isinf(arr), 0.0, arr), limit, name)
    inverted = lo > hi
    if inverted.any():
        raise InvalidBounds(what, np.flatnonzero(inverted).tolist())
    return lo, hi


def real(value: object, what: str) -> float:
    """``value`` as a float (NaN and inf pass: the caller decides), refusing non-reals.

    Raises:
        InvalidInput: A bool, a complex number, a string, a container, or an integer
            beyond the float range.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise InvalidInput(f"{what} must be a real number, got {value!r}", what=what, value=value)
    try:
        return float(value)
    except OverflowError:
        raise InvalidInput(f"{what} is beyond the float range", what=what, value=value) from None


def flag(value: object, what: str) -> bool:
    """``value`` as a bool: ``True``/``False`` (NumPy's too), or a number equal to 1 or 0.

    Every boolean setting of the public API goes through here: a plain ``bool()`` reads
    ``"false"``, ``NaN``, ``2`` and ``[0]`` as True.

    Raises:
        InvalidInput: Anything else (strings, NaN, None, containers, other numbers).
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, float, np.integer, np.floating)) and (value == 0 or value == 1):
        return bool(value)
    shown = f"{value!r}" if len(repr(value)) < 40 else f"{repr(value)[:20]}..."
    raise InvalidInput(
        f"{what} must be True or False (or 1 or 0), got {shown}", what=what, value=value
    )


def flags(x: object, n: int, what: str) -> np.ndarray:
    """``x`` as a boolean mask of ``n`` entries, each a bool or a number equal to 1 or 0.

    Raises:
        ShapeError: Not ``n`` entries.
        InvalidInput: An entry that is not a flag (NaN, 2, a string ...), named by index.
    """
    try:
        raw = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise ShapeError(what, (n,), ()) from exc
    if raw.shape != (n,):
        raise ShapeError(what, (n,), raw.shape)
    if raw.dtype.kind == "b":
        return raw.astype(bool)
    for k, e in enumerate(raw.tolist()):
        if isinstance(e, bool) or (
            isinstance(e, (int, float)) and not isinstance(e, complex) and (e == 0 or e == 1)
        ):
            continue
        raise InvalidInput(
            f"{what}[{k}] = {e!r} is not a flag: give True/False or 1/0", what=what, value=e
        )
    return np.array([bool(e) for e in raw.tolist()], dtype=bool)


def instance(value: Any, cls: type | tuple[type, ...], what: str, kind: str) -> Any:
    """``value`` when it is an instance of ``cls`` (``kind``: its name in the message).

    Raises:
        InvalidInput: Anything else ("{what} must be a {kind}, got {type}").
    """
    if not isinstance(value, cls):
        raise InvalidInput(f"{what} must be a {kind}, got {type(value).__name__}", what=what)
    return value


def name(value: object, what: str) -> str:
    """``value`` when it is a non-empty ``str`` (the names of tasks, constraints, frames).

    Raises:
        InvalidInput: Not a string, or an empty one.
    """
    if not isinstance(value, str) or not value:
        raise InvalidInput(
            f"{what} must be a non-empty string, got {value!r}", what=what, value=value
        )
    return value


def items(value: object, what: str) -> list[Any]:
    """``value``'s entries as a list: any iterable but a string, bytes or a mapping.

    (A string would be read letter by letter, a mapping by its keys.)

    Raises:
        InvalidInput: A string, bytes, a mapping, a 0-d array or not iterable.
    """
    if (
        isinstance(value, (str, bytes, Mapping))
        or not isinstance(value, Iterable)
        or (isinstance(value, np.ndarray) and value.ndim == 0)
    ):
        raise InvalidInput(f"{what} must be a list, got {value!r}", what=what, value=value)
    return list(value)


def magnitude(value: object, what: str, allow_inf: bool = False) -> float:
    """``value`` as a float of magnitude at most :data:`MAX_MAGNITUDE`.

    With ``allow_inf``, ``+-inf`` passes too (where infinity means "none").

    Raises:
        InvalidInput: Not a real number, NaN, or too large.
    """
    v = real(value, what)
    if not (abs(v) <= MAX_MAGNITUDE or (allow_inf and abs(v) == np.inf)):
        raise InvalidInput(
            f"{what} must be a finite number of magnitude <= {MAX_MAGNITUDE:g}, got {value!r}",
            what=what,
            value=value,
        )
    return v


def positive_float(value: object, what: str, allow_zero: bool = False) -> float:
    """Return ``value`` as a float in ``(0, MAX_MAGNITUDE]`` (``[0, ...]`` with ``allow_zero``).

    Raises:
        InvalidInput: Not a real number, not finite, or out of range.
    """
    v = real(value, what)
    if not ((v >= 0 if allow_zero else v > 0) and v <= MAX_MAGNITUDE):
        sign = ">=" if allow_zero else ">"
        raise InvalidInput(
            f"{what} must be a number {sign} 0 and <= {MAX_MAGNITUDE:g}, got {value!r}",
            what=what,
            value=value,
        )
    return v


def positive_or_inf(value: object, what: str) -> float:
    """Return ``value`` as a float > 0, where ``inf`` means "none" (NaN refused).

    Raises:
        InvalidInput: Not a real number, NaN, or not > 0.
    """
    v = real(value, what)
    if not v > 0:
        raise InvalidInput(f"{what} must be > 0, got {value!r}", what=what, value=value)
    return v


def in_range(value: object, what: str, low: float, high: float, open_low: bool = False) -> float:
    """Return ``value`` as a float in ``[low, high]`` (``(low, high]`` with ``open_low``).

    Raises:
        InvalidInput: Not a real number or out of range (NaN is out of every range).
    """
    v = real(value, what)
    ok = (v > low if open_low else v >= low) and v <= high
    if not ok:
        bracket = "(" if open_low else "["
        raise InvalidInput(
            f"{what} must be in {bracket}{low}, {high}], got {value!r}", what=what, value=value
        )
    return v


#: Largest count accepted (iterations, samples, levels): a C ``int`` in the kernels.
MAX_COUNT = 2**31 - 1


def count(value: object, what: str, minimum: int = 1, maximum: int = MAX_COUNT) -> int:
    """Return ``value`` as an integer in ``[minimum, maximum]`` (bools are refused).

    Raises:
        InvalidInput: Not an integer or out of range.
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or not minimum <= value <= maximum
    ):
        shown = f"{value!r}" if len(repr(value)) < 40 else f"{repr(value)[:20]}..."
        raise InvalidInput(
            f"{what} must be an integer in [{minimum}, {maximum}], got {shown}",
            what=what,
            value=value,
        )
    return int(value)


def is_empty(x: object) -> bool:
    """Whether an optional array argument means "not given": ``None`` or of length 0."""
    if x is None:
        return True
    try:
        return len(x) == 0  # type: ignore[arg-type]
    except TypeError:
        return False


def shape_of(arr: object) -> tuple[int, ...]:
    """The shape of an array, the length of a list or tuple, else ``()`` (for messages)."""
    shape = getattr(arr, "shape", None)
    if isinstance(shape, tuple):
        return shape
    return (len(arr),) if isinstance(arr, (list, tuple)) else ()


def indices(x: object, n: int, shape: tuple[int, ...], what: str, within: str) -> np.ndarray:
    """Return ``x`` as a contiguous int64 array of ``shape`` with every entry in ``[0, n)``.

    For indices that compiled code uses without bounds checks.

    Args:
        x: The indices.
        n: Their exclusive upper bound.
        shape: Their expected shape.
        what: Their name, for messages.
        within: What they index, for messages (``"the table of 3 shapes"``).

    Raises:
        ShapeError: Not integers of ``shape``.
        InvalidInput: An entry outside ``[0, n)`` (the first one is named).
    """
    arr = np.asarray(x)
    if arr.dtype.kind not in "iu" or arr.shape != shape:
        raise ShapeError(f"{what} (integers)", shape, arr.shape)
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        bad = int(arr[(arr < 0) | (arr >= n)].flat[0])
        raise InvalidInput(f"{what}: index {bad} is outside {within}", what=what)
    return np.ascontiguousarray(arr, dtype=np.int64)


def check_out(arr: object, shape: tuple[int, ...], what: str) -> None:
    """Raise unless ``arr`` is a writable float64 array of ``shape`` (an output buffer).

    Compiled writers do not check bounds: a buffer smaller than they expect would be
    written past (a heap corruption), hence the check before any write.

    Raises:
        ShapeError: ``arr`` is not an array of ``shape``.
        InvalidInput: It is not float64, or it is read-only.
    """
    if not isinstance(arr, np.ndarray) or arr.shape != shape:
        raise ShapeError(what, shape, shape_of(arr))
    if arr.dtype != np.float64 or not arr.flags.writeable:
        kind = str(arr.dtype) + ("" if arr.flags.writeable else ", read-only")
        raise InvalidInput(f"{what}: expected a writable float64 array, given {kind}", what=what)


def read_only_view(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array`` (what the public API hands out of its own arrays)."""
    view = array.view()
    view.flags.writeable = False
    return view


def fixed_attribute(owner: object, what: str, hint: str) -> InvalidInput:
    """The error of assigning an attribute fixed at construction (``what`` of ``owner``).

    Returned (the caller raises it), so that a property setter reads ``raise ...``.
    """
    return InvalidInput(
        f"{type(owner).__name__}.{what} is fixed when it is made: {hint}", what=what
    )


def fixed_property(what: str, hint: str, doc: str) -> Any:
    """A read-only attribute kept in ``_<what>``: assigning it raises :func:`fixed_attribute`.

    Annotate the class attribute with its type (``frame_name: str = fixed_property(...)``).
    """
    slot = "_" + what

    def get(self: object) -> Any:
        return getattr(self, slot)

    def refuse(self: object, value: object) -> None:
        raise fixed_attribute(self, what, hint)

    return property(get, refuse, doc=doc)


def warn_at_caller(warning: Warning) -> None:
    """Issue ``warning`` from the first frame outside the stackik package.

    For warnings whose text names changing things (pairs, distances, obstacle names)
    and whose callers warn once per thing themselves: Python's own registry would keep
    every distinct text for the life of the process (one per new obstacle name: an
    unbounded growth), so none is kept (``registry=None``); the filters apply as usual.
    The warning is attributed to the user's line, whatever the depth of the call.
    """
    frame = inspect.currentframe()
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith("stackik"):
        frame = frame.f_back
    if frame is None:  # (called from stackik alone: no caller to name)
        warnings.warn(warning, stacklevel=2)
        return
    warnings.warn_explicit(
        warning,
        type(warning),
        frame.f_code.co_filename,
        frame.f_lineno,
        module=str(frame.f_globals.get("__name__", "")),
        registry=None,
    )
