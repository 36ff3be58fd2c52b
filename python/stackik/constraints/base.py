"""Constraint: the base class of every constraint family, and the family registry.

A constraint bounds the joint velocity ``v`` (size nv) for one step of length ``dt``,
in one or both of two ways:

- **rows** ``lower <= C v <= upper``: the family declares an upper bound on its row
  count (:meth:`Constraint.max_rows`) and :meth:`Constraint.write` fills the first rows
  of views into the velocity engine's preallocated row buffer, returning how many it
  wrote;
- **the joint velocity box** ``lo <= v <= hi``: :meth:`Constraint.tighten_box` narrows
  it in place (joint limits, floating-base angular bounds).

A constraint reads one :class:`~stackik.model.kinematics.Kinematics` cache (its
solver's); it never runs forward kinematics and never calls a QP solver.

A new family is one module with one subclass decorated with
:func:`register_constraint`, plus its import in ``stackik/constraints/__init__.py``;
the engine needs no edit. A family implements :meth:`Constraint.write_rows` and/or
:meth:`Constraint.narrow_box`, which fill buffers without checking them; the public
:meth:`Constraint.write` and :meth:`Constraint.tighten_box` check the buffers they are
given first (a compiled writer does not check bounds) and then call them. The velocity
engine calls the unchecked methods on its own buffers, which it sized by this step's
:meth:`Constraint.max_rows`. A family that overrides ``write`` or ``tighten_box``
itself (the protocol before the split) is called through them. Families stack their
rows in ``order`` (then insertion).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, ClassVar, Concatenate, ParamSpec, TypeVar

import numpy as np

from .. import _pickling, _validate
from .._validate import check_out
from ..errors import InvalidInput, ShapeError
from ..model import Kinematics, RobotModel, as_kinematics

__all__ = ["Constraint", "check_out", "constraint_families", "register_constraint"]

_FAMILIES: dict[str, type[Constraint]] = {}

C = TypeVar("C", bound="type[Constraint]")


def register_constraint(cls: C) -> C:
    """Register a constraint family under its ``family`` name (class decorator).

    Raises:
        InvalidInput: ``cls`` is not a :class:`Constraint` subclass.
    """
    if not (isinstance(cls, type) and issubclass(cls, Constraint)):
        raise InvalidInput(
            f"register_constraint needs a Constraint subclass, got {cls!r}", what="cls"
        )
    _FAMILIES[cls.family] = cls
    return cls


def constraint_families() -> dict[str, type[Constraint]]:
    """Registered constraint families by name."""
    return dict(_FAMILIES)


_F64 = np.dtype(np.float64)


_RLOCK = type(threading.RLock())


def _check_lock(lock: object) -> threading.RLock:
    """``lock`` if it is a ``threading.RLock`` (a step takes it again inside), else InvalidInput."""
    if not isinstance(lock, _RLOCK):
        raise InvalidInput(
            f"lock must be a threading.RLock, got {type(lock).__name__}", what="lock"
        )
    return lock


def _lock_of(constraint: Constraint) -> threading.RLock:
    """A constraint's lock: its engine's step lock, else its own (made at first use).

    Made here when a family's ``__init__`` or ``__setstate__`` skipped the base class's.
    """
    lock = constraint.__dict__.get("_lock")
    if lock is None:
        lock = constraint.__dict__.setdefault("_lock", threading.RLock())
    return lock


_C = TypeVar("_C", bound="Constraint")
_P = ParamSpec("_P")
_R = TypeVar("_R")


def _guarded(method: Callable[Concatenate[_C, _P], _R]) -> Callable[Concatenate[_C, _P], _R]:
    """Run a constraint's method under its lock (see :meth:`Constraint.share_lock`).

    For the calls that read or replace what a step uses: from another thread they wait
    for a running step to end.
    """

    @functools.wraps(method)
    def call(self: _C, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with _lock_of(self):
            return method(self, *args, **kwargs)

    return call


def _vectors_fit(a: object, b: object, size: int) -> bool:
    """Whether ``a`` and ``b`` are writable float64 vectors of ``size`` (the fast check)."""
    return (
        isinstance(a, np.ndarray)
        and isinstance(b, np.ndarray)
        and a.shape == b.shape == (size,)
        and a.dtype is _F64
        and b.dtype is _F64
        and a.flags.writeable
        and b.flags.writeable
    )


class Constraint:
    """Base class of all velocity constraints.

    Args:
        name: Constraint name (used in results and messages).
        kinematics: The kinematics cache read (a solver's), or a robot (its own cache).

    Attributes:
        name: Constraint name.
        active: Inactive constraints contribute nothing.
        family: Registry name of the family (class attribute).
        order: Stacking order of the family's rows (class attribute; lower first).
        is_limit: Whether ``apply_limits=False`` switches it off (class attribute).
    """

    family: ClassVar[str] = "constraint"
    order: ClassVar[int] = 100
    is_limit: ClassVar[bool] = False
    name: str = _validate.fixed_property(
        "name", "remove the constraint and add it again", "Constraint name (fixed when made)."
    )

    def __init__(self, name: str, kinematics: Kinematics | RobotModel) -> None:
        self._name = _validate.name(name, "constraint name")
        self._kin = as_kinematics(kinematics)
        self._robot = self._kin.robot
        self._lock = threading.RLock()  # (its engine's step lock once registered)
        self.active = True

    @property
    def active(self) -> bool:
        """Whether the constraint contributes rows (or narrows the box)."""
        return self._active

    @active.setter
    def active(self, value: bool) -> None:
        self._active = _validate.flag(value, f"constraint {self.name!r}: active")
        self._kin.touch_layout()  # (the engine's constraint plan holds while it does not move)

    @property
    def kinematics(self) -> Kinematics:
        """The kinematics cache this constraint reads."""
        return self._kin

    @property
    def robot(self) -> RobotModel:
        """The robot description."""
        return self._robot

    # -- the protocol ------------------------------------------------------------------
    def max_rows(self) -> int:
        """Largest number of rows :meth:`write` may produce in one step."""
        return 0

    def write(self, dt: float, C: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> int:
        """Write this step's rows into the first rows of the given views (checked).

        Checks the buffers against :meth:`max_rows` (asked here), then calls
        :meth:`write_rows`.

        Args:
            dt: Step length [s].
            C: View of :meth:`max_rows` x nv rows to fill.
            lower: View of :meth:`max_rows` lower bounds.
            upper: View of :meth:`max_rows` upper bounds.

        Returns:
            The number of rows written.

        Raises:
            ShapeError, InvalidInput: The buffers have fewer than :meth:`max_rows` rows
                of nv, or are not writable float64 arrays; ``dt`` is not a positive
                number.
        """
        dt = _validate.positive_float(dt, "dt")
        self._check_rows(C, lower, upper)
        return self.write_rows(dt, C, lower, upper)

    def write_rows(self, dt: float, C: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> int:
        """Write this step's rows into buffers sized by this step's :meth:`max_rows` (unchecked).

        The velocity engine's call on its own buffers: it asked :meth:`max_rows` in the
        same step and hands C-contiguous, writable float64 views of at least that many
        rows of nv. The buffers are **not checked** (a compiled writer would write past
        smaller ones); call :meth:`write` with buffers of your own.

        Args:
            dt: Step length [s].
            C: Rows to fill (at least :meth:`max_rows` x nv).
            lower: Their lower bounds.
            upper: Their upper bounds.

        Returns:
            The number of rows written.
        """
        return 0

    def tighten_box(self, dt: float, lower: np.ndarray, upper: np.ndarray) -> None:
        """Narrow the joint velocity box ``lower <= v <= upper`` (size nv) in place (checked).

        Checks the buffers, then calls :meth:`narrow_box`.

        Raises:
            ShapeError, InvalidInput: ``lower`` or ``upper`` is not a writable float64
                vector of size nv; ``dt`` is not a positive number.
        """
        dt = _validate.positive_float(dt, "dt")
        self._check_box(lower, upper)
        self.narrow_box(dt, lower, upper)

    def narrow_box(self, dt: float, lower: np.ndarray, upper: np.ndarray) -> None:
        """Narrow the joint velocity box in place (unchecked: writable float64 vectors of nv).

        The velocity engine's call on its own box; call :meth:`tighten_box` with
        buffers of your own.

        Args:
            dt: Step length [s].
            lower: Lower bounds of ``v`` (size nv) [rad/s or m/s].
            upper: Upper bounds of ``v`` (size nv) [rad/s or m/s].
        """

    def _check_rows(
        self, C: np.ndarray, lower: np.ndarray, upper: np.ndarray, need: int | None = None
    ) -> None:
        """Check the buffers of :meth:`write`: room for ``need`` rows of nv.

        :meth:`write` calls it before :meth:`write_rows` (the engine's own views skip
        it: they are sized by the same step's :meth:`max_rows`).

        Args:
            C: The row buffer given to ``write`` (rows x nv).
            lower: Its lower bounds (rows).
            upper: Its upper bounds (rows).
            need: Rows the step may write (default: :meth:`max_rows`).

        Raises:
            ShapeError, InvalidInput: See :func:`check_out`.
        """
        need = self.max_rows() if need is None else need
        nv = self._robot.nv
        rows = C.shape[0] if isinstance(C, np.ndarray) and C.ndim == 2 else -1
        if rows >= need and C.shape[1] == nv and C.dtype is _F64 and C.flags.writeable:
            if _vectors_fit(lower, upper, rows):
                return  # (the common case)
        if rows < need:
            raise ShapeError(f"constraint {self.name!r}: C", (need, nv), _validate.shape_of(C))
        check_out(C, (rows, nv), f"constraint {self.name!r}: C")
        check_out(lower, (rows,), f"constraint {self.name!r}: lower")
        check_out(upper, (rows,), f"constraint {self.name!r}: upper")

    def _check_box(self, lower: np.ndarray, upper: np.ndarray) -> None:
        """Check the buffers of :meth:`tighten_box`: two vectors of size nv.

        Raises:
            ShapeError, InvalidInput: See :func:`check_out`.
        """
        shape = (self._robot.nv,)
        if not _vectors_fit(lower, upper, shape[0]):
            check_out(lower, shape, f"constraint {self.name!r}: lower")
            check_out(upper, shape, f"constraint {self.name!r}: upper")

    def reset(self) -> None:
        """Forget state carried from step to step (called when a new motion starts)."""

    def share_lock(self, lock: threading.RLock) -> None:
        """Guard this constraint's calls from other threads with ``lock``.

        The velocity engine that registers a constraint gives it its step lock, which it
        holds across each step: a family whose step state a call outside the step can
        replace (the collision constraint's pairs, read by compiled code without bounds
        checks; rows whose number a call can change between a step's ``max_rows`` and
        ``write_rows``) takes it in those calls (:func:`_guarded`), so they wait for a step
        in another thread to end.

        Raises:
            InvalidInput: ``lock`` is not a ``threading.RLock``.
        """
        self._lock = _check_lock(lock)

    # -- pickling: a lock does not pickle (a new one, or the new engine's step lock) ----------
    def __getstate__(self) -> dict[str, Any]:
        with _lock_of(self):
            return _pickling.without(self.__dict__, ("_lock",))

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickling (and ``copy``) without the lock, whatever a family's ``__getstate__`` keeps.

        A family written before constraints had a lock may return its whole
        ``__dict__``; the lock is left out here (an unpickled constraint makes a new one
        at its first guarded call, and its engine gives it its step lock).
        """
        reduced = super().__reduce_ex__(protocol)
        if isinstance(reduced, tuple) and len(reduced) > 2 and isinstance(reduced[2], dict):
            if "_lock" in reduced[2]:
                state = {k: v for k, v in reduced[2].items() if k != "_lock"}
                reduced = (*reduced[:2], state, *reduced[3:])
        return reduced

    def step_fraction(self, delta_v: np.ndarray) -> float:
        """Largest fraction in [0, 1] of a displacement this constraint allows in one go.

        ``delta_v`` (size nv) is the last step's solution times its period.

        Rows bound the first-order motion; a layer taking long steps (position IK) also
        asks this, so that nothing the rows did not see is crossed in one step. 1 for
        families with nothing to add.
        """
        return 1.0

    def violation(self) -> str | None:
        """What of this constraint the last step's configuration violates, or None.

        Read after a step (the velocity engine turns a SUCCESS into the family's
        violation status while this is not None); None for families whose rows hold
        exactly at the configuration they were written at.
        """
        return None

    def violation_at(self, q: np.ndarray) -> str | None:
        """What of this constraint configuration ``q`` violates, or None (no side effects)."""
        return None

    def describe_row(self, row: int) -> str:
        """What row ``row`` of this step's rows stands for (used in status messages).

        Raises:
            InvalidInput: ``row`` is not an integer.
        """
        return f"row {_row_index(row)} of constraint {self.name!r}"

    # -- step-to-step state ----------------------------------------------------------------
    def snapshot(self) -> dict[str, tuple[object, object]]:
        """The state this constraint carries from step to step, copied.

        Every attribute is saved: arrays, tuples of arrays, lists, sets and dicts by
        their contents (restored in place, so views and other holders of them stay
        valid), other values by reference. Attributes holding other objects (coal data) are not
        deep-copied: they must hold no state that changes a later step's rows.

        Returns:
            An opaque value for :meth:`restore`.
        """
        return {k: (v, _contents(v)) for k, v in vars(self).items()}

    def restore(self, snapshot: dict[str, tuple[object, object]]) -> None:
        """Put back the state saved by :meth:`snapshot` (inspection leaves no trace).

        Raises:
            InvalidInput: ``snapshot`` is not a value :meth:`snapshot` returned (nothing
                is changed).
        """
        _check_snapshot(snapshot)
        lock = self.__dict__.get("_lock")  # (in force: its engine's, given after the snapshot)
        for name in [k for k in vars(self) if k not in snapshot]:
            delattr(self, name)
        for name, (obj, saved) in snapshot.items():
            _put_back(obj, saved)
            setattr(self, name, obj)
        if lock is not None:
            self._lock = lock

    # -- inspection ----------------------------------------------------------------------
    def rows(self, dt: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """This step's rows ``(C, lower, upper)`` as new arrays (for inspection and tests).

        ``C`` is rows x nv. Reads the cache's current configuration. Like a step, this
        advances the state carried from step to step and the ``last_*`` records; take a
        :meth:`snapshot` first and :meth:`restore` it to leave no trace.
        """
        cap = self.max_rows()
        C = np.empty((cap, self._robot.nv))
        lower, upper = np.empty(cap), np.empty(cap)
        n = self.write(dt, C, lower, upper)
        return C[:n].copy(), lower[:n].copy(), upper[:n].copy()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, active={self.active})"


def _row_index(row: object) -> int:
    """``row`` as an int (any integer, also a negative one, which names no row)."""
    return _validate.count(row, "row", minimum=-(2**31))


def _check_snapshot(snapshot: object) -> None:
    """Refuse anything but a constraint's :meth:`Constraint.snapshot`.

    (Restoring a foreign dict would delete every attribute it does not name.)
    """
    ok = (
        isinstance(snapshot, dict)
        and "_name" in snapshot
        and all(isinstance(v, tuple) and len(v) == 2 for v in snapshot.values())
    )
    if not ok:
        raise InvalidInput(
            f"not a constraint snapshot (Constraint.snapshot()): {type(snapshot).__name__}",
            what="snapshot",
        )


def _contents(value: object) -> object:
    """A copy of the contents of a mutable container (None for other values).

    A tuple of arrays (a kernel's buffers) is a container of its arrays' contents.
    """
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (list, set, dict)):
        return value.copy()
    if _array_tuple(value):
        assert isinstance(value, tuple)
        return tuple(a.copy() for a in value)
    return None


def _array_tuple(value: object) -> bool:
    return (
        isinstance(value, tuple) and bool(value) and all(isinstance(a, np.ndarray) for a in value)
    )


def _put_back(obj: object, saved: object) -> None:
    """Write ``saved`` (from :func:`_contents`) back into ``obj`` in place."""
    if isinstance(obj, np.ndarray) and isinstance(saved, np.ndarray):
        if obj.flags.writeable:
            obj[...] = saved
    elif isinstance(obj, list) and isinstance(saved, list):
        obj[:] = saved
    elif isinstance(obj, (set, dict)) and isinstance(saved, (set, dict)):
        obj.clear()
        obj.update(saved)
    elif _array_tuple(obj) and isinstance(saved, tuple):
        assert isinstance(obj, tuple)
        for array, contents in zip(obj, saved, strict=True):
            _put_back(array, contents)
