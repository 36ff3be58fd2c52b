"""Typed errors of stackik.

Every error raised by the package derives from :class:`StackIKError`, and each
subclass carries the data that explains it (names, sizes, bounds), so callers can
react programmatically rather than parsing messages. Errors are raised at
configuration time and at the API boundary; the solvers' hot paths return a
status instead (see :class:`stackik.results.SolverStatus`).
"""

from __future__ import annotations

import difflib
import pickle
from collections.abc import Iterable, Sequence
from typing import Any


def _blank(cls: type[BaseException]) -> BaseException:
    """An instance of ``cls`` made by the constructor of its built-in layout.

    ``RuntimeError.__new__`` refuses a class that also derives from ``OSError`` (as
    :class:`RobotFileNotFound` does), so the first built-in base that accepts it makes it.
    """
    for base in cls.__mro__:
        if base.__module__ == "builtins":
            try:
                return base.__new__(cls)  # type: ignore[call-overload]
            except TypeError:
                continue
    raise TypeError(f"{cls.__name__} has no built-in exception base")  # pragma: no cover


def _restore(cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    """Rebuild a pickled error without calling its ``__init__`` (see ``_reduce``)."""
    exc = _blank(cls)
    exc.args = args
    exc.__dict__.update(state)
    return exc


def _reduce(exc: BaseException) -> tuple[Any, ...]:
    """Pickle an error as its class, its ``args`` and its attributes.

    Python's default pickles an exception as ``cls(*args)``: the ``args`` of these
    errors are their formatted message, not their constructor's arguments, so the
    default fails to unpickle (a process pool then breaks) or nests the message in
    itself. Restoring the state as it is works for every subclass, present and future.
    An attribute that does not pickle (a lambda given as an offending value, say) is
    replaced by its ``repr``, so the error still reaches the caller.
    """
    state = {}
    for key, value in exc.__dict__.items():
        try:
            pickle.dumps(value)
        except Exception:  # any failure of a foreign object's pickling
            value = repr(value)
        state[key] = value
    return (_restore, (type(exc), exc.args, state))


class StackIKError(RuntimeError):
    """Root of every error raised by stackik.

    A :class:`RuntimeError` (what EmbodiK raises), so ``except RuntimeError`` written for
    EmbodiK catches stackik's errors too; the subclasses keep their ``KeyError``,
    ``ValueError`` or ``FileNotFoundError`` base where they have one. Every error pickles
    with its message and attributes, so a worker process that raises one hands the same
    error to its caller.
    """

    __reduce__ = _reduce


class RobotLoadError(StackIKError):
    """A robot description could not be loaded.

    Attributes:
        path: The file (or ``"<string>"``) that failed to load.
        reason: The underlying parser's message.
    """

    def __init__(self, path: str, reason: str, subject: str = "robot description") -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"cannot load {subject} {path!r}: {reason}")


class RobotFileNotFound(RobotLoadError, FileNotFoundError):
    """The robot description (or scene) file does not exist."""

    def __init__(self, path: str, subject: str = "robot description") -> None:
        super().__init__(path, "file not found", subject)


class ModelTooLarge(RobotLoadError):
    """The robot has too many degrees of freedom for this machine's memory.

    Pinocchio allocates (and zeroes) its second-order dynamics derivatives, ``nv^3``
    numbers each, in every ``Data``; stackik needs at least one ``Data`` to compute
    anything, so a model whose ``Data`` cannot fit is refused before it is built.

    Attributes:
        nv: Degrees of freedom of the model.
        needed: Bytes of one Pinocchio ``Data`` (estimate).
        memory: Bytes of memory of this machine (or its container).
    """

    def __init__(self, path: str, nv: int, needed: int, memory: int) -> None:
        self.nv = nv
        self.needed = needed
        self.memory = memory
        super().__init__(
            path,
            f"{nv} degrees of freedom: one Pinocchio Data needs about {needed / 2**30:.3g} GiB "
            f"(Pinocchio allocates its second-order dynamics derivatives, nv^3 numbers each, "
            f"in every Data), more than this machine's {memory / 2**30:.3g} GiB",
        )


class MalformedDescription(RobotLoadError):
    """The URDF, XACRO or SRDF text is not valid (the parser's message is kept)."""


class MalformedScene(MalformedDescription):
    """A scene file (obstacles, attached objects) is not valid; the entry is named."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(path, reason, "scene")


class MeshNotFound(RobotLoadError):
    """A mesh referenced by the description (or given as an obstacle) could not be found.

    Attributes:
        filename: The mesh filename as written in the description.
        searched: Directories that were searched.
    """

    def __init__(
        self, path: str, filename: str, searched: Sequence[str], subject: str = "robot description"
    ) -> None:
        self.filename = filename
        self.searched = list(searched)
        if subject != "robot description":  # a file named directly: no search path to fix
            super().__init__(path, "no such file", subject)
            return
        where = ", ".join(self.searched) if self.searched else "(no search directories)"
        super().__init__(
            path,
            f"mesh {filename!r} not found; searched: {where}. Pass package_dirs=..., set "
            "ROS_PACKAGE_PATH, or load with load_visuals=False / load_collisions=False",
        )


def _closest(name: str, available: Iterable[str], n: int = 5) -> list[str]:
    available = [a for a in available if isinstance(a, str)]
    if not isinstance(name, str):  # a number or None asked for by mistake: nothing is close
        return []
    close = difflib.get_close_matches(name, available, n=n, cutoff=0.4)
    if not close:
        close = [a for a in available if name.lower() in a.lower()][:n]
    return close


class NameNotFound(StackIKError, KeyError, ValueError):
    """A named entity (frame, joint, task, ...) does not exist.

    A :class:`KeyError`, and also a :class:`ValueError` and (through
    :class:`StackIKError`) a :class:`RuntimeError`: EmbodiK raises ``ValueError`` for an
    unknown frame or joint given to a task and ``RuntimeError`` from the robot's getters.

    Attributes:
        kind: What was looked up (``"frame"``, ``"joint"``, ...).
        name: The name that was asked for.
        available: All valid names.
        closest: The valid names closest to ``name``.
    """

    kind = "name"

    def __init__(self, name: str, available: Iterable[str]) -> None:
        self.name = name
        self.available = list(available)
        self.closest = _closest(name, self.available)
        hint = f"; closest: {', '.join(self.closest)}" if self.closest else ""
        self.message = f"unknown {self.kind} {name!r}{hint}"
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


class FrameNotFound(NameNotFound):
    """A frame name is not in the model."""

    kind = "frame"


class JointNotFound(NameNotFound):
    """A joint name is not in the model."""

    kind = "joint"


class TaskNotFound(NameNotFound):
    """A task name is not registered with the solver."""

    kind = "task"


class CollisionGeometryNotFound(NameNotFound):
    """A collision geometry or link name has no collision geometry."""

    kind = "collision geometry"


class ObstacleNotFound(NameNotFound):
    """An obstacle or attached-object name is not in the world.

    The message names the known ones (the first ten), or says there are none.
    """

    kind = "obstacle"

    def __init__(self, name: str, available: Iterable[str], kind: str = "obstacle") -> None:
        self.kind = kind
        super().__init__(name, available)
        known = self.available
        listed = ", ".join(known[:10]) + (f" and {len(known) - 10} more" if len(known) > 10 else "")
        hint = f"known: {listed}" if known else f"there is no {kind}"
        self.message = f"unknown {kind} {name!r}; {hint}"
        self.args = (self.message,)


class InvalidInput(StackIKError, ValueError):
    """An argument has an invalid value, type or shape.

    Attributes:
        what: Name of the offending argument or setting (None when the message is the
            only description, e.g. a relation between several arguments).
        value: The offending value when one value is at fault (else None).
    """

    def __init__(self, message: str, *, what: str | None = None, value: object = None) -> None:
        super().__init__(message)
        self.what = what
        self.value = value


class ShapeError(InvalidInput):
    """An array argument has the wrong shape.

    Attributes:
        what: Name of the argument.
        expected: Expected shape.
        given: Shape that was passed.
    """

    def __init__(
        self, what: str, expected: tuple[int | str, ...] | str, given: tuple[int, ...]
    ) -> None:
        self.expected = expected
        self.given = given
        super().__init__(f"{what}: expected shape {expected}, given {given}", what=what)


class NonFiniteInput(InvalidInput):
    """An array argument contains NaN or infinity.

    Attributes:
        what: Name of the argument.
        indices: Indices of the non-finite entries.
    """

    def __init__(self, what: str, indices: Sequence[int]) -> None:
        self.indices = list(indices)
        super().__init__(f"{what} contains NaN or inf at indices {self.indices}", what=what)


class NotWithinLimits(InvalidInput):
    """A joint value is outside its limits.

    Attributes:
        joint: Joint name.
        value: Offending value.
        lower: Lower limit.
        upper: Upper limit.
    """

    def __init__(self, joint: str, value: float, lower: float, upper: float) -> None:
        self.joint = joint
        self.lower = lower
        self.upper = upper
        super().__init__(
            f"joint {joint!r} value {value:.6g} outside limits [{lower:.6g}, {upper:.6g}]",
            what=joint,
            value=value,
        )


class InvalidBounds(InvalidInput):
    """Lower bounds exceed upper bounds.

    Attributes:
        what: Name of the bounded quantity.
        indices: Indices where ``lower > upper``.
    """

    def __init__(self, what: str, indices: Sequence[int]) -> None:
        self.indices = list(indices)
        super().__init__(f"{what}: lower > upper at indices {self.indices}", what=what)


class InvalidTransform(InvalidInput):
    """A pose or rotation is not a valid rigid transform (e.g. non-orthonormal rotation)."""


class CollisionMarginWarning(UserWarning):
    """A collision pair can never be as far apart as the requested minimum distance.

    Raised as a warning (not an error) by the collision constraint, which lowers those
    pairs' minimum distance (or stops watching a pair that is always in collision) so
    the constraint stays feasible. Also raised for a pair no joint moves (a fixed base
    resting on a table) that is below its minimum: it stays watched and reported, its
    row bounds nothing, and the message shows how to leave it out.

    Attributes:
        pairs: ``(geometry_a, geometry_b, largest sampled distance [m], minimum used [m])``
            (for a pair no joint moves: its distance, the same in every configuration,
            and its minimum).
    """

    def __init__(self, message: str, pairs: list[tuple[str, str, float, float]]) -> None:
        super().__init__(message)
        self.pairs = pairs

    __reduce__ = _reduce


class FixedPairWarning(CollisionMarginWarning):
    """A collision pair that no joint moves apart is below its minimum distance.

    Its distance is the same in every configuration (a fixed base resting on a table):
    the velocity step's rows of the pair bound nothing and each step reports
    ``COLLISION_VIOLATED``; position and global IK find every configuration in collision.
    Leave the pair out (``exclude_pairs``) when the contact is intended. A
    :class:`CollisionMarginWarning`, so filters on that class catch it too.

    Attributes:
        pairs: ``(geometry_a, geometry_b, distance [m], minimum distance [m])``.
    """


class RobotDataNotFound(RobotLoadError):
    """The files of a named robot are not installed (``stackik.robots``).

    The message says what to install: ``pip install stackik[robots]`` brings the
    ``example-robot-data`` package.
    """


class RobotNotFound(NameNotFound):
    """A robot name is not one that :func:`stackik.robots.load` offers."""

    kind = "robot"


class KernelCacheWarning(UserWarning):
    """The compiled-kernel cache cannot be used as configured (e.g. an unwritable folder).

    Kernels still work: the cache moves to a per-user folder under the system temporary
    directory, or, failing that, kernels are compiled in memory by every process.
    """
