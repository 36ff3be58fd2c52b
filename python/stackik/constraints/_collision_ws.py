"""The collision step's persistent arrays as one compiled argument (a numba StructRef).

Crossing from Python into compiled code costs about 50 ns per array argument (numba
types and unboxes each one, and walks nested tuples element by element): the 57
arrays of :func:`~stackik.constraints._collision_kernel.collision_step` cost about
3.4 us per step, more than the broadphase of a Panda's 68 pairs. Most of them belong
to the constraint and change only with its layout (pair tables, shape tables, scratch
and record buffers). :func:`new_workspace` gathers those once per layout into one
compiled record; :func:`~stackik.constraints._collision_kernel.collision_step_ws`
then takes the record and the seven arrays that change from step to step.

The record holds references to the arrays themselves (no copies): what the kernel
writes into them (the pairs' state, the rows' records) is what Python reads.

This module imports numba. It is imported only once the kernels run compiled (never
at ``import stackik``, never while they run as plain Python); the plain-Python path
passes the same fields as they are (:class:`~stackik.constraints._collision_kernel.LayoutArrays`).
Its kernel is left out of the cache folder's digest
(``kernel(digest=False)``): the folder must not depend on whether this module happened
to be imported before the kernels loaded.
"""

from __future__ import annotations

from typing import Any

from numba.core import types
from numba.core.extending import overload
from numba.experimental import structref

from .._jit import kernel
from ._collision_kernel import LayoutArrays

_new: Any = structref.new  # (an intrinsic: called from compiled code with the type only)

#: The record's fields, each a tuple of arrays: those of :class:`LayoutArrays`.
FIELDS = tuple(LayoutArrays.__annotations__)  # (its field names, in order)


@structref.register
class WorkspaceType(types.StructRef):
    """numba type of a :class:`Workspace`; its field types are those of the arrays given."""

    def preprocess_fields(self, fields: Any) -> tuple:
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class Workspace(structref.StructRefProxy):
    """A collision constraint's per-layout kernel arrays, as one compiled argument.

    Opaque to Python: only compiled code reads its fields.
    """


structref.define_boxing(WorkspaceType, Workspace)


def _gather(*fields: tuple) -> Any:
    """The record of :data:`FIELDS` (compiled code only; see :func:`new_workspace`)."""
    raise NotImplementedError("compiled code only")


@overload(_gather)
def _gather_typed(*fields: Any) -> Any:
    record = WorkspaceType(list(zip(FIELDS, fields, strict=True)))

    def build(*fields: Any) -> Any:
        ws = _new(record)
        ws.pairs, ws.placement, ws.geometry = fields[0], fields[1], fields[2]
        ws.shapes, ws.motion, ws.columns = fields[3], fields[4], fields[5]
        ws.work, ws.sel, ws.out = fields[6], fields[7], fields[8]
        return ws

    return build


@kernel(digest=False)  # (see the module docstring)
def new_workspace(
    pairs: tuple,
    placement: tuple,
    geometry: tuple,
    shapes: tuple,
    motion: tuple,
    columns: tuple,
    work: tuple,
    sel: tuple,
    out: tuple,
) -> Workspace:
    """One record of a layout's persistent arrays (references, not copies).

    Args:
        pairs: ``(lever, pairs, pf, pi, cfg, counts)``.
        placement: ``(joint, local_rot, local_trans)`` of the geometries.
        geometry: ``(kind, params, rot, trans, sup_points, sup_offset, sup_radius)``.
        shapes: ``(kind, params, vstart, verts, center, radius)``.
        motion: ``(slot, obs_vel, disp, extra, offset, obs_prev, reach)``.
        columns: ``(support, colmap)`` of the Jacobian columns.
        work: The broadphase's scratch arrays.
        sel: The row selection's scratch arrays.
        out: ``(row_geom, row_point, row_normal)``, the rows' records.

    Returns:
        The record :func:`~stackik.constraints._collision_kernel.collision_step_ws` takes.
    """
    return _gather(pairs, placement, geometry, shapes, motion, columns, work, sel, out)
