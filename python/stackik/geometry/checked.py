"""The public entry points of the distance kernels, with every argument checked first.

The kernels of :mod:`stackik.geometry.kernels` index their arrays without bounds checks
(the collision pipeline calls them with arrays it built itself); called with a short
``out`` or an index past the table they would write past the arrays. These wrappers are
what :mod:`stackik.geometry` exports: they check shapes, dtypes, finiteness and indices,
raise the typed errors of :mod:`stackik.errors`, then call the kernel unchanged (the
same bits).
"""

from __future__ import annotations

import numpy as np

from .. import _validate
from .._validate import check_out
from ..errors import InvalidInput, ShapeError
from . import kernels

__all__ = ["batch_distance", "shape_distance", "table_distance"]

_COUNT = 2**62  # any index a table can hold


def _out(out: object, rows: tuple[int, ...], what: str) -> None:
    """``out`` is a writable float64 array of ``rows + (9,)`` or ``rows + (10,)``."""
    shape = getattr(out, "shape", ())
    width = shape[-1] if isinstance(shape, tuple) and len(shape) == len(rows) + 1 else 9
    check_out(out, (*rows, width if width in (9, 10) else 9), what)


def _table(
    kind: object,
    params: object,
    vstart: object,
    verts: object,
    rot: object,
    trans: object,
) -> tuple[np.ndarray, ...]:
    """A shape table's arrays, checked against each other (see :class:`ShapeTable`)."""
    kind_a = np.asarray(kind)
    if kind_a.dtype.kind not in "iu" or kind_a.ndim != 1:
        raise ShapeError("kind (integers)", ("n",), kind_a.shape)
    n = kind_a.shape[0]
    verts_a = _validate.floats(verts, (None, 3), "verts")
    vstart_a = _validate.indices(
        vstart, verts_a.shape[0] + 1, (n + 1,), "vstart", "the hull vertices"
    )
    if vstart_a.size and np.any(np.diff(vstart_a) < 0):
        raise InvalidInput("vstart must not decrease (vertex ranges)", what="vstart")
    return (
        np.ascontiguousarray(kind_a, dtype=np.int64),
        _validate.floats(params, (n, 4), "params"),
        vstart_a,
        verts_a,
        _validate.floats(rot, (n, 3, 3), "rot"),
        _validate.floats(trans, (n, 3), "trans"),
    )


def _placed(
    k: object, p: object, R: object, t: object, v: object, which: str
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One shape of :func:`shape_distance`: code, parameters, rotation, translation, hull."""
    return (
        _validate.count(k, f"k{which}", minimum=-_COUNT, maximum=_COUNT),
        _validate.floats(p, (4,), f"p{which}"),
        _validate.floats(R, (3, 3), f"R{which}"),
        _validate.floats(t, (3,), f"t{which}"),
        _validate.floats(v, (None, 3), f"v{which}"),
    )


def shape_distance(
    k1: int,
    p1: object,
    R1: object,
    t1: object,
    v1: object,
    k2: int,
    p2: object,
    R2: object,
    t2: object,
    v2: object,
    out: np.ndarray,
) -> float:
    """Signed distance [m] between two convex shapes placed in the world.

    Args:
        k1: Shape code of shape 1 (:mod:`stackik.geometry.shapes`).
        p1: Its 4 parameters [m], ``(4,)``.
        R1: Its world rotation, ``(3, 3)``.
        t1: Its world translation [m], ``(3,)``.
        v1: Its hull vertices in its local frame [m], ``(m, 3)`` (CONVEX; may be empty
            for other kinds).
        k2: Shape code of shape 2.
        p2: Its parameters [m].
        R2: Its world rotation.
        t2: Its world translation [m].
        v2: Its hull vertices [m].
        out: Writable float64 ``(9,)`` or ``(10,)``: receives the witness point on
            shape 1 [m] (``out[0:3]``), on shape 2 [m] (``out[3:6]``) and the unit
            normal from shape 1 to shape 2 (``out[6:9]``), in world coordinates, with
            ``p2 - p1 = d * n``; ``out[9]``, when present, the status
            (:mod:`stackik.geometry.kernels`).

    Returns:
        The signed distance ``d`` [m]: negative when the shapes overlap (minus the
        penetration depth). NaN (and NaN outputs) when either shape is a MESH or an
        unknown kind, or both are half-spaces / planes.

    Raises:
        ShapeError, NonFiniteInput, InvalidInput: A bad argument (named).
    """
    _out(out, (), "out")
    one = _placed(k1, p1, R1, t1, v1, "1")
    two = _placed(k2, p2, R2, t2, v2, "2")
    return float(kernels.shape_distance(*one, *two, out))


def table_distance(
    g1: int,
    g2: int,
    kind: object,
    params: object,
    vstart: object,
    verts: object,
    rot: object,
    trans: object,
    out: np.ndarray,
) -> float:
    """:func:`shape_distance` of shapes ``g1`` and ``g2`` of a :class:`ShapeTable`.

    Args:
        g1: Index of shape 1 in the table.
        g2: Index of shape 2.
        kind: The table's shape codes, ``(n,)``.
        params: The table's parameters [m], ``(n, 4)``.
        vstart: The table's vertex ranges, ``(n + 1,)`` (not decreasing, within
            ``verts``).
        verts: The table's hull vertices [m], ``(m, 3)``.
        rot: World rotations of the table's shapes, ``(n, 3, 3)``.
        trans: World translations [m], ``(n, 3)``.
        out: As in :func:`shape_distance`.

    Returns:
        The signed distance [m] (see :func:`shape_distance`).

    Raises:
        ShapeError, NonFiniteInput, InvalidInput: A bad argument (named), or an index
            outside the table.
    """
    table = _table(kind, params, vstart, verts, rot, trans)
    n = table[0].shape[0]
    pair = _validate.indices([g1, g2], n, (2,), "g1/g2", f"the table of {n} shapes")
    _out(out, (), "out")
    return float(kernels.table_distance(int(pair[0]), int(pair[1]), *table, out))


def batch_distance(
    first: object,
    second: object,
    kind: object,
    params: object,
    vstart: object,
    verts: object,
    rot: object,
    trans: object,
    dist: np.ndarray,
    witness: np.ndarray,
) -> None:
    """:func:`table_distance` of every pair ``(first[k], second[k])``.

    Args:
        first: Shape 1 of every pair, integers ``(p,)`` in the table.
        second: Shape 2 of every pair, ``(p,)``.
        kind: The table's shape codes.
        params: The table's parameters [m].
        vstart: The table's vertex ranges.
        verts: The table's hull vertices [m].
        rot: World rotations of the table's shapes, ``(n, 3, 3)``.
        trans: World translations [m], ``(n, 3)``.
        dist: Receives the signed distances [m], writable float64 ``(p,)``.
        witness: Receives each pair's ``out`` of :func:`shape_distance`, writable
            float64 ``(p, 9)`` or ``(p, 10)`` (with the status).

    Raises:
        ShapeError, NonFiniteInput, InvalidInput: A bad argument (named), or an index
            outside the table.
    """
    table = _table(kind, params, vstart, verts, rot, trans)
    n = table[0].shape[0]
    shape = _validate.shape_of(first)
    p = shape[0] if len(shape) == 1 else -1
    within = f"the table of {n} shapes"
    a = _validate.indices(first, n, (p,), "first", within)
    b = _validate.indices(second, n, (p,), "second", within)
    check_out(dist, (p,), "dist")
    _out(witness, (p,), "witness")
    kernels.batch_distance(a, b, *table, dist, witness)
