"""Kinematics: one owner's kinematics cache over its own Pinocchio ``Data``.

A :class:`~stackik.RobotModel` is a shareable description. Whoever computes with it
owns a :class:`Kinematics`: the robot keeps one for its own convenience methods
(``update_kinematics``, ``get_frame_pose``, ...), and every solver owns another, so
solvers on one robot never see each other's configuration and may run in parallel
threads.

One :meth:`Kinematics.update` is one Pinocchio pass: joint placements, joint Jacobians
(``data.J``, world frame) and frame placements (``data.oMf``); with a velocity also the
joint velocities. The centre of mass is computed on first request, once per update.

The ``Data`` is created on first use, not with the cache: Pinocchio allocates its
second-order dynamics derivatives, ``nv^3`` numbers each, in every ``Data`` (0.85 GB at
300 degrees of freedom), so a description loads without one and each owner pays for
its own only when it computes.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from .. import _pickling, _validate
from ..errors import InvalidInput

_UPDATES = itertools.count(1)  # (the stamps' clock: next() is atomic under the GIL)


def _keep_clock_ahead_of(stamp: int) -> None:
    """Move the stamps' clock past ``stamp`` (see :meth:`Kinematics.keep_stamp`)."""
    global _UPDATES
    if stamp >= next(_UPDATES):
        _UPDATES = itertools.count(stamp + 1)


if TYPE_CHECKING:
    from .robot import RobotModel

__all__ = [
    "DATA_BYTES_PER_NV3",
    "Kinematics",
    "as_kinematics",
    "data_bytes",
    "jacobian_columns",
    "joint_placements_copy",
    "joint_placements_view",
    "support_columns",
    "vector_space",
]


class _PlacementBuffer:
    """Exposes the memory of ``data.oMi`` to NumPy and keeps its ``Data`` alive."""

    def __init__(self, data: pin.Data, address: int, njoints: int) -> None:
        self.data = data  # the array's base holds this object, and so the Data
        self.__array_interface__ = {
            "shape": (njoints, 12),
            "typestr": "<f8",
            "data": (address, False),
            "version": 3,
        }


def joint_placements_copy(data: pin.Data) -> np.ndarray:
    """``data.oMi`` as a new ``(njoints, 12)`` array (rotation by columns, translation)."""
    out = np.empty((len(data.oMi), 12))
    for j, M in enumerate(data.oMi):
        out[j, :9] = M.rotation.ravel(order="F")
        out[j, 9:] = M.translation
    return out


def joint_placements_view(data: pin.Data) -> np.ndarray | None:
    """A live, zero-copy ``(njoints, 12)`` view of ``data.oMi``, or None.

    Row ``j`` holds joint ``j``'s world rotation column by column (9) and its
    translation (3): Pinocchio stores ``oMi`` as a contiguous vector of SE3 (an
    Eigen 3x3 column-major matrix and a 3-vector each). The layout is verified
    against ``data.oMi`` before the view is handed out; None when it does not hold
    (then read ``data.oMi`` itself). The view keeps ``data`` alive.
    """
    n = len(data.oMi)
    if n < 2:
        return None
    first = data.oMi[0].rotation.__array_interface__["data"][0]
    second = data.oMi[1].rotation.__array_interface__["data"][0]
    shift = data.oMi[0].translation.__array_interface__["data"][0] - first
    if second - first != 96 or shift != 72:
        return None
    view = np.asarray(_PlacementBuffer(data, first, n))
    view.flags.writeable = False
    if not np.array_equal(view, joint_placements_copy(data)):
        return None
    return view


#: Bytes of a Pinocchio ``Data`` per ``nv^3``: its second-order RNEA derivative tensors
#: (four of ``nv^3`` doubles, allocated and zeroed by every ``Data``; measured with
#: Pinocchio 4.1: 32 to 34 bytes per ``nv^3`` from nv = 100 to 300).
DATA_BYTES_PER_NV3 = 32


def jacobian_columns(model: pin.Model) -> np.ndarray:
    """The velocity coordinate each column of Pinocchio's joint Jacobian ``data.J`` adds to.

    ``data.J`` has a column per extended velocity coordinate: a folded mimic joint has
    its own, which Pinocchio fills with the leader's motion scaled by the multiplier
    (the mimic joint's motion subspace). That column adds, as it is, to its leader's
    velocity coordinate; every other column is its own coordinate. Returns the int64
    map ``(nx,)``.
    """
    nx = int(getattr(model, "nvExtended", model.nv))
    colmap = np.arange(nx, dtype=np.int64)
    for j in range(1, model.njoints):
        cols = _extended_columns(model.joints[j])
        colmap[cols] = model.joints[j].idx_v + np.arange(cols.stop - cols.start)
    return colmap


def support_columns(model: pin.Model, joint: int) -> np.ndarray:
    """Which columns of ``data.J`` move joint ``joint`` (its ancestors'): bool ``(nx,)``."""
    support = np.zeros(int(getattr(model, "nvExtended", model.nv)), dtype=np.bool_)
    if joint <= 0:
        return support
    for i in list(model.supports[joint])[1:]:
        support[_extended_columns(model.joints[i])] = True
    return support


def _extended_columns(jm: Any) -> slice:
    """The columns of ``data.J`` that belong to joint model ``jm`` (extended coordinates)."""
    start = int(getattr(jm, "idx_vExtended", jm.idx_v))
    return slice(start, start + int(getattr(jm, "nvExtended", jm.nv)))


def vector_space(model: pin.Model) -> bool:
    """Whether every joint's configuration space is a vector space (``q1 - q0`` is exact).

    Revolute, prismatic, helical, translation, universal and ZYX-spherical joints have as
    many configuration entries as velocities, and Pinocchio's ``difference`` on them is
    the subtraction ``q1 - q0``; a quaternion, a planar or a ``(cos, sin)`` joint has more
    entries than velocities. Composite and mimic joints are left to Pinocchio.
    """
    for jm in model.joints[1:]:
        name = jm.shortname()
        if jm.nq != jm.nv or "Composite" in name or "Mimic" in name:
            return False
    return True


def data_bytes(nv: int) -> int:
    """Estimated bytes of one Pinocchio ``Data`` of a model with ``nv`` velocities."""
    return DATA_BYTES_PER_NV3 * nv**3


class Kinematics:
    """A kinematics cache: a Pinocchio ``Data`` and the configuration it was computed at.

    Args:
        robot: The robot description.
        q: Start configuration (size nq); the robot's neutral configuration when omitted.
            Trusted: pass a configuration checked by
            :meth:`~stackik.RobotModel.check_configuration`.

    Attributes:
        robot: The robot description (shared, never written).
        version: Incremented by every update; caches keyed on it stay valid until the
            next update.
        layout_revision: Incremented whenever a task or constraint reading this cache,
            or the engine that owns it, changes what decides a step's stacked layout
            (tasks and constraints added or removed, a priority, dimension, mask, solve
            mode, weight or ``active`` flag): the engine keeps its layout and constraint
            plan while it holds.
    """

    def __init__(self, robot: RobotModel, q: np.ndarray | None = None) -> None:
        if not all(hasattr(robot, a) for a in ("model", "nv", "neutral_configuration")):
            # (robot.py builds on this module: the type is checked by what it offers)
            raise InvalidInput(
                f"robot must be a stackik RobotModel, got {type(robot).__name__}", what="robot"
            )
        self.robot = robot
        self._q = robot.neutral_configuration() if q is None else np.array(q, dtype=float)
        self._zero_v = np.zeros(robot.nv)
        self._zero_v.flags.writeable = False  # shared by every update without a velocity
        self._v = self._zero_v
        self._moving = False
        self.version = 0
        #: When the configuration was last set, on a clock shared by every cache of the
        #: process (0: never); see :meth:`set_unchecked`. Unpickled caches keep theirs and
        #: the clock moves past them.
        self.stamp = 0
        self.layout_revision = 0
        self._forget()

    def touch_layout(self) -> None:
        """Record a change of what decides the stacked layout (see ``layout_revision``)."""
        self.layout_revision += 1

    # -- pickling: the Data is rebuilt from the pickled configuration ---------------------
    def __getstate__(self) -> dict[str, Any]:
        return _pickling.without(self.__dict__, ("_data", "_placements", "_jacobians"))

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.keep_stamp(int(state.get("stamp", 0)))
        self._forget()

    def keep_stamp(self, stamp: int) -> None:
        """Take ``stamp`` (an unpickled cache's, maybe from another process's clock).

        The clock moves past it, so caches pickled together (a solver's and its robot's)
        keep their order and every later update of this process is later than both.
        """
        self.stamp = stamp
        _keep_clock_ahead_of(stamp)

    # -- state ---------------------------------------------------------------------------
    def _forget(self) -> None:
        """Drop the Data: the next use creates it (at the current description)."""
        self._revision = -1
        self._model = self.robot.model
        self._flat = vector_space(self._model)
        self._data: pin.Data | None = None
        self._com_version = -1

    def _rebuild(self) -> None:
        """(Re)create the Data when the description changed (frames added, base moved)."""
        self._revision = self.robot.revision
        self._model = self.robot.model
        self._flat = vector_space(self._model)
        self._data = pin.Data(self._model)
        self._refresh()
        self._placements = joint_placements_view(self._data)
        self._jacobians = self._data.J.reshape(6, -1)  # a live view of the Data's memory

    @property
    def model(self) -> pin.Model:
        """The Pinocchio model (the robot's; shared, read only)."""
        return self._model

    def difference(
        self, q0: np.ndarray, q1: np.ndarray, out: np.ndarray | None = None
    ) -> np.ndarray:
        """Tangent displacement from ``q0`` to ``q1`` (size nv) [rad or m]; unchecked.

        Pinocchio's ``difference`` on the model; where every joint's configuration space
        is a vector space (:func:`vector_space`) the same numbers come from ``q1 - q0``
        without the call into Pinocchio. Both configurations must be valid (checked and
        normalized) and of size nq.

        Args:
            q0: Start configuration (size nq).
            q1: End configuration (size nq).
            out: Where to write the result (float64, size nv; unchecked); a new array
                when omitted.

        Returns:
            The displacement (``out`` when given).
        """
        if self._flat:
            return np.subtract(q1, q0, out=out)
        if out is None:
            return pin.difference(self._model, q0, q1)
        out[:] = pin.difference(self._model, q0, q1)
        return out

    @property
    def data(self) -> pin.Data:
        """The Pinocchio data of this cache (owned: only this cache writes it)."""
        if self._revision != self.robot.revision:
            self._rebuild()
        return self._data

    def joint_placements(self) -> np.ndarray:
        """World placements of every joint, ``(njoints, 12)``.

        Each row: the rotation by columns, then the translation [m].

        A live view of the Pinocchio data (no copy) where the memory layout allows (see
        :func:`joint_placements_view`), else a copy. Valid until the next update; read
        it again after each update rather than keeping it.
        """
        if self._revision != self.robot.revision:  # (the data property's check, inlined)
            self._rebuild()
        view = self._placements
        return view if view is not None else joint_placements_copy(self._data)

    @property
    def q(self) -> np.ndarray:
        """Configuration of the last update (read only view) [rad or m]."""
        return self._q

    @property
    def v(self) -> np.ndarray:
        """Velocity of the last update (zero when none was given) [rad/s or m/s]."""
        return self._v

    # -- updates -------------------------------------------------------------------------
    def update(self, q: object, v: object | None = None) -> None:
        """Check and set q (and optionally v), then run one Pinocchio pass.

        Raises:
            ShapeError, NonFiniteInput, InvalidInput: Bad q or v (nothing is changed).
        """
        qv = self.robot.check_configuration(q)
        if v is None or _validate.is_empty(v):
            self.set_unchecked(qv, None)
        else:
            self.set_unchecked(qv, self.robot.check_velocity(v))

    def set_unchecked(self, q: np.ndarray, v: np.ndarray | None = None) -> None:
        """Set a configuration already checked (and normalized) and run one Pinocchio pass.

        The arrays are copied; :attr:`stamp` tells which of two caches was set later.
        """
        self.stamp = next(_UPDATES)
        self._q = np.array(q, dtype=float)
        self._q.setflags(write=False)
        if v is None:
            self._v, self._moving = self._zero_v, False
        else:
            self._v = np.array(v, dtype=float)
            self._v.flags.writeable = False
            self._moving = bool(self._v.any())
        if self._revision != self.robot.revision:
            self._rebuild()
        else:
            self._refresh()

    def _refresh(self) -> None:
        m, d = self._model, self._data
        assert d is not None
        if self._moving:
            pin.forwardKinematics(m, d, self._q, self._v)
            pin.computeJointJacobians(m, d)
        else:
            pin.computeJointJacobians(m, d, self._q)
        pin.updateFramePlacements(m, d)
        self._com_version = -1
        self.version += 1

    # -- frames --------------------------------------------------------------------------
    def frame_placement(self, frame_id: int) -> pin.SE3:
        """``T_world_frame`` of a frame by Pinocchio index (a reference into the Data)."""
        return self.data.oMf[frame_id]

    def frame_pose(self, frame_name: str) -> pin.SE3:
        """World pose ``T_world_frame`` of a named frame (a copy)."""
        return pin.SE3(self.data.oMf[self.robot.get_frame_id(frame_name)])

    def frame_jacobian(
        self, frame_id: int, reference_frame: pin.ReferenceFrame = pin.LOCAL_WORLD_ALIGNED
    ) -> np.ndarray:
        """6 x nv frame Jacobian ``[linear; angular]`` (a new array)."""
        if self._model.nv == 0:  # nothing moves; Pinocchio refuses an empty Jacobian
            return np.zeros((6, 0))
        J = pin.getFrameJacobian(self._model, self.data, frame_id, reference_frame)
        return J.reshape(6, self._model.nv)  # Pinocchio returns a vector when nv = 1

    def joint_jacobian(
        self, joint_id: int, reference_frame: pin.ReferenceFrame = pin.LOCAL_WORLD_ALIGNED
    ) -> np.ndarray:
        """6 x nv Jacobian of a joint frame by Pinocchio index (a new array)."""
        J = pin.getJointJacobian(self._model, self.data, joint_id, reference_frame)
        return J.reshape(6, self._model.nv)  # a vector when nv = 1

    def joint_jacobians_view(self) -> np.ndarray:
        """Pinocchio's world joint Jacobian ``data.J``, without a copy.

        Same validity as :meth:`com_view`. Pinocchio hands a 6 x 1 matrix back as a
        vector; this is always a 6-row matrix (a view). Its columns are Pinocchio's
        extended velocity coordinates: ``nv`` of them, except on a model with folded
        mimic joints, which has a column per mimic joint too (``model.nvExtended``).
        """
        if self._revision != self.robot.revision:
            self._rebuild()
        return self._jacobians

    def relative_pose_jacobian(self, fa: int, fb: int) -> tuple[pin.SE3, np.ndarray]:
        """``T_ab = T_a^-1 T_b`` and its 6 x nv Jacobian (rows in frame a's axes).

        With ``d = p_b - p_a`` and world-aligned frame Jacobians ``[J_v; J_w]``:
        ``J_p = R_a^T (J_v,b - J_v,a + [d]x J_w,a)`` and ``J_r = R_a^T (J_w,b - J_w,a)``;
        the angular rows map v to the spatial angular velocity of ``R_ab``.
        """
        Ta, Tb = self.frame_placement(fa), self.frame_placement(fb)
        Ja = self.frame_jacobian(fa, pin.LOCAL_WORLD_ALIGNED)
        Jb = self.frame_jacobian(fb, pin.LOCAL_WORLD_ALIGNED)
        RaT = Ta.rotation.T
        d = Tb.translation - Ta.translation
        skew = np.array([[0.0, -d[2], d[1]], [d[2], 0.0, -d[0]], [-d[1], d[0], 0.0]])
        J = np.empty((6, self._model.nv))
        J[:3] = RaT @ (Jb[:3] - Ja[:3] + skew @ Ja[3:])
        J[3:] = RaT @ (Jb[3:] - Ja[3:])
        return Ta.actInv(Tb), J

    # -- centre of mass --------------------------------------------------------------------
    def _ensure_com(self) -> None:
        if self._com_version != self.version:
            pin.jacobianCenterOfMass(self._model, self.data, False)
            self._com_version = self.version

    @property
    def com(self) -> np.ndarray:
        """World position of the centre of mass [m] (a copy)."""
        return self.com_view().copy()

    @property
    def com_jacobian(self) -> np.ndarray:
        """3 x nv CoM Jacobian in world axes (a copy)."""
        return self.com_jacobian_view().copy()

    def com_view(self) -> np.ndarray:
        """:attr:`com` without the copy, for hot paths.

        A view into this cache's Pinocchio data: valid until the next update, and only
        while this cache is alive (the view does not keep it alive).
        """
        self._ensure_com()
        return self.data.com[0]

    def com_jacobian_view(self) -> np.ndarray:
        """:attr:`com_jacobian` without the copy (same validity as :meth:`com_view`)."""
        self._ensure_com()
        return self.data.Jcom.reshape(3, self._model.nv)  # a vector when nv = 1

    def com_velocity(self) -> np.ndarray:
        """``J_com v`` for the velocity of the last update [m/s]."""
        return self.com_jacobian_view() @ self._v

    def __repr__(self) -> str:
        return f"Kinematics({self.robot!r}, version={self.version})"


def as_kinematics(source: object) -> Kinematics:
    """The kinematics cache a task or constraint reads.

    A :class:`Kinematics` is used as it is; a :class:`~stackik.RobotModel` stands for its
    own cache (``robot.kinematics``), which is what a task or constraint built outside a
    solver reads.

    Raises:
        InvalidInput: Neither.
    """
    if isinstance(source, Kinematics):
        return source
    kin = getattr(source, "kinematics", None)
    if isinstance(kin, Kinematics):
        return kin
    raise InvalidInput(f"expected a RobotModel or a Kinematics cache, got {type(source).__name__}")
