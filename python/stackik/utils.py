"""Spatial transform helpers of seed 004 (EmbodiK ``utils``): SE3, SO3, PoseData and friends.

:class:`SO3` (alias :data:`Rotation`) and :class:`SE3` are small value types with
spatialmath-style shorthands::

    from stackik.utils import SE3, SO3

    T = SE3.Trans(0.4, 0.0, 0.3) * SE3.Rx(np.pi)  # compose: T1 * T2
    T.R, T.t, T.A, T.homogeneous()  # 3x3, 3, 4x4, 4x4
    p_world = T.act([0.0, 0.0, 0.1])  # or T * p
    R = SO3.RPY(0.1, 0.2, 0.3)  # Rz(yaw) Ry(pitch) Rx(roll)

An :class:`SE3` wraps a :class:`pinocchio.SE3` (composition, inverse and point maps are
Pinocchio's), so converting to and from Pinocchio is one copy; :class:`SO3` holds a
read-only 3x3 array. Both are immutable: every operation returns a new object.

Every API of stackik that takes a pose or a rotation (task targets, ``solve_position``,
``find_configs``, :func:`stackik.spatial.as_se3`, ...) accepts them, and
:class:`PoseData`, directly: this module registers them with
:func:`stackik.spatial.register_pose_type` / :func:`~stackik.spatial.register_rotation_type`.

The functions are seed 004's: :func:`Rt` (returns an :class:`SE3` here), :func:`q2r` /
:func:`r2q` (scalar-first quaternions by default, see ``docs/conventions.md``),
:func:`compute_pose_error` / :func:`get_pose_error_vector`, :func:`limit_task_velocity`,
:func:`normalize_quaternion` and :func:`clamp_configuration`. Bad input raises the
typed errors of :mod:`stackik.errors` (a zero or non-finite quaternion included).
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np
import pinocchio as pin

from . import _validate, spatial
from .errors import InvalidInput, NonFiniteInput, ShapeError
from .spatial import (
    check_rotation,
    check_translation,
    clamp_configuration,
    normalize_quaternion,
    q2r,
    r2q,
)

__all__ = [
    "SE3",
    "SO3",
    "PoseData",
    "Rotation",
    "Rt",
    "clamp_configuration",
    "compute_absolute_frame",
    "compute_pose_error",
    "compute_relative_frame",
    "exp3",
    "get_pose_error_vector",
    "limit_task_velocity",
    "log3",
    "matrix_to_quaternion_wxyz",
    "matrix_to_quaternion_xyzw",
    "normalize_quaternion",
    "pose_error_norm",
    "q2r",
    "quaternion_wxyz_to_matrix",
    "quaternion_xyzw_to_matrix",
    "r2q",
    "rotation_from_rpy",
    "velocity_manipulability",
]

_UNITS = {"rad": 1.0, "deg": math.pi / 180.0}

#: Roll-pitch-yaw orders (spatialmath's): ``R = R_a(yaw) R_b(pitch) R_c(roll)`` for the
#: order ``"abc"``. Per order, ``(row, col, sign)`` of: ``sin(pitch)``; roll's
#: ``(sin, cos)`` scaled by ``cos(pitch)``; yaw's ``(sin, cos)`` scaled by ``cos(pitch)``;
#: and, at ``cos(pitch) = 0`` (gimbal lock, roll set to 0), yaw's ``(sin, cos)``.
_RPY_ENTRIES = {
    "zyx": ((2, 0, -1), ((2, 1, 1), (2, 2, 1)), ((1, 0, 1), (0, 0, 1)), ((0, 1, -1), (1, 1, 1))),
    "xyz": ((0, 2, 1), ((0, 1, -1), (0, 0, 1)), ((1, 2, -1), (2, 2, 1)), ((2, 1, 1), (1, 1, 1))),
    "yxz": ((1, 2, -1), ((1, 0, 1), (1, 1, 1)), ((0, 2, 1), (2, 2, 1)), ((2, 0, -1), (0, 0, 1))),
}
_RPY_ALIASES = {
    "zyx": "zyx",
    "vehicle": "zyx",
    "xyz": "xyz",
    "arm": "xyz",
    "yxz": "yxz",
    "camera": "yxz",
}


def _unit(unit: str) -> float:
    try:
        return _UNITS[unit]
    except (KeyError, TypeError):
        raise InvalidInput(f"unit must be 'rad' or 'deg', got {unit!r}", what="unit") from None


def _angle(value: object, what: str, unit: str) -> float:
    """A finite angle in radians."""
    v = _validate.real(value, what)
    if not math.isfinite(v):
        raise NonFiniteInput(what, [0])
    return v * _unit(unit)


def _rpy_order(order: str) -> str:
    try:
        return _RPY_ALIASES[order]
    except (KeyError, TypeError):
        raise InvalidInput(
            f"order must be one of {sorted(_RPY_ALIASES)}, got {order!r}", what="order"
        ) from None


def _axis_rotation(axis: int, theta: float) -> np.ndarray:
    """The rotation by ``theta`` [rad] about x (0), y (1) or z (2), in closed form."""
    c, s = math.cos(theta), math.sin(theta)
    if axis == 0:
        return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])
    if axis == 1:
        return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _three_angles(
    roll: object, pitch: object | None, yaw: object | None
) -> tuple[object, object, object]:
    """``(roll, pitch, yaw)`` from three numbers or one 3-sequence."""
    if pitch is None and yaw is None:
        r, p, y = _validate.vector(roll, 3, "rpy").tolist()
        return r, p, y
    if pitch is None or yaw is None:
        raise InvalidInput("give roll, pitch and yaw, or one sequence of three angles")
    return roll, pitch, yaw


def _vectors(v: object, what: str) -> np.ndarray:
    """A 3-vector or 3 x N columns (spatialmath's layout) as finite floats."""
    arr = _validate.as_floats(v, what, "(3,) or (3, N)")
    if arr.ndim == 0 or arr.ndim > 2 or arr.shape[0] != 3:
        raise ShapeError(what, "(3,) or (3, N)", arr.shape)
    return _validate.finite(arr, what)


def _points(p: object, what: str) -> np.ndarray:
    """A point (3,) or N points as rows (N, 3), finite floats."""
    arr = _validate.as_floats(p, what, "(3,) or (N, 3)")
    if arr.ndim == 0 or arr.ndim > 2 or arr.shape[-1] != 3:
        raise ShapeError(what, "(3,) or (N, 3)", arr.shape)
    return _validate.finite(arr, what)


def _is_flat(x: object) -> bool:
    """Whether ``x`` is one-dimensional (a translation rather than a matrix)."""
    try:
        return bool(np.ndim(x) == 1)  # type: ignore[arg-type]
    except ValueError:  # ragged nesting: let the pose checks name the fault
        return False


def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _so3(M: np.ndarray) -> SO3:
    """An :class:`SO3` around a matrix known to be a rotation (no checks, no copy)."""
    obj = object.__new__(SO3)
    obj._R = _readonly(M)
    return obj


def _se3(T: pin.SE3) -> SE3:
    """An :class:`SE3` around a Pinocchio transform known to be valid (no checks, no copy)."""
    obj = object.__new__(SE3)
    obj._T = T
    return obj


class SO3:
    """A rotation (an element of SO(3)); immutable.

    Args:
        R: A 3x3 rotation matrix, an :class:`SO3`, the rotation of an :class:`SE3`, or
            None for the identity. Checked (orthonormal, ``det R = 1`` within
            :data:`stackik.spatial.ROTATION_TOLERANCE`).

    Raises:
        ShapeError, NonFiniteInput, InvalidTransform: ``R`` is not a rotation.
    """

    __slots__ = ("_R",)
    _R: np.ndarray

    def __init__(self, R: object = None) -> None:
        if R is None:
            M = np.eye(3)
        elif isinstance(R, SO3):
            M = R._R
        elif isinstance(R, SE3):
            M = R.R.copy()
        else:
            M = check_rotation(R, "rotation").copy()
        self._R = _readonly(M)

    # -- constructors ------------------------------------------------------------------
    @classmethod
    def Rx(cls, theta: float, unit: str = "rad") -> SO3:
        """Rotation by ``theta`` about the x axis (``unit``: ``"rad"`` or ``"deg"``)."""
        return _so3(_axis_rotation(0, _angle(theta, "theta", unit)))

    @classmethod
    def Ry(cls, theta: float, unit: str = "rad") -> SO3:
        """Rotation by ``theta`` about the y axis."""
        return _so3(_axis_rotation(1, _angle(theta, "theta", unit)))

    @classmethod
    def Rz(cls, theta: float, unit: str = "rad") -> SO3:
        """Rotation by ``theta`` about the z axis."""
        return _so3(_axis_rotation(2, _angle(theta, "theta", unit)))

    @classmethod
    def RPY(
        cls,
        roll: object,
        pitch: object | None = None,
        yaw: object | None = None,
        *,
        order: str = "zyx",
        unit: str = "rad",
    ) -> SO3:
        """Rotation from roll, pitch, yaw angles (three numbers or one 3-sequence).

        Args:
            roll: Roll angle, or the sequence ``(roll, pitch, yaw)``.
            pitch: Pitch angle.
            yaw: Yaw angle.
            order: ``"zyx"`` (default, ``"vehicle"``): ``Rz(yaw) Ry(pitch) Rx(roll)``;
                ``"xyz"`` (``"arm"``): ``Rx(yaw) Ry(pitch) Rz(roll)``; ``"yxz"``
                (``"camera"``): ``Ry(yaw) Rx(pitch) Rz(roll)``.
            unit: ``"rad"`` or ``"deg"``.
        """
        axes = ["xyz".index(a) for a in _rpy_order(order)]
        r, p, y = _three_angles(roll, pitch, yaw)
        angles = (_angle(y, "yaw", unit), _angle(p, "pitch", unit), _angle(r, "roll", unit))
        M = _axis_rotation(axes[0], angles[0])
        M = M @ _axis_rotation(axes[1], angles[1])
        return _so3(M @ _axis_rotation(axes[2], angles[2]))

    @classmethod
    def AngVec(cls, theta: float, axis: object, unit: str = "rad") -> SO3:
        """Rotation by ``theta`` about ``axis`` (any non-zero 3-vector; normalized).

        Raises:
            InvalidInput: ``axis`` has zero norm.
        """
        a = _validate.vector(axis, 3, "axis")
        n = float(np.linalg.norm(a))
        if n < 1e-12:
            raise InvalidInput("axis has zero norm", what="axis")
        return _so3(pin.exp3(_angle(theta, "theta", unit) * a / n))

    @classmethod
    def Exp(cls, omega: object) -> SO3:
        """Rotation of the rotation vector ``omega`` [rad] (the exponential map)."""
        return _so3(pin.exp3(_validate.vector(omega, 3, "omega")))

    @classmethod
    def Quaternion(cls, quaternion: object, order: str = "sxyz") -> SO3:
        """Rotation of a quaternion (normalized first; see :func:`q2r` for ``order``).

        Raises:
            InvalidInput: Zero norm; NonFiniteInput: NaN or inf entries.
        """
        return _so3(q2r(quaternion, order))

    @classmethod
    def Rand(cls, rng: np.random.Generator | int | None = None) -> SO3:
        """A rotation drawn uniformly (a normalized Gaussian quaternion); ``rng``: seed."""
        q = np.random.default_rng(rng).normal(size=4)
        return _so3(q2r(q))

    # -- scipy-style constructors (EmbodiK's Rotation) -------------------------------------
    @classmethod
    def identity(cls) -> SO3:
        """The identity rotation."""
        return _so3(np.eye(3))

    @classmethod
    def from_matrix(cls, R: object) -> SO3:
        """From a 3x3 rotation matrix (checked)."""
        return cls(R)

    @classmethod
    def from_quat(cls, quaternion: object) -> SO3:
        """From a quaternion ``[x, y, z, w]`` (scalar last: scipy's and ROS's order)."""
        return _so3(q2r(quaternion, "xyzs"))

    @classmethod
    def from_rotvec(cls, rotvec: object) -> SO3:
        """From a rotation vector ``theta * axis`` [rad] (the exponential map)."""
        return cls.Exp(rotvec)

    @classmethod
    def EulerVec(cls, rotvec: object) -> SO3:
        """From a rotation vector (spatialmath's name of :meth:`from_rotvec`)."""
        return cls.Exp(rotvec)

    @classmethod
    def from_euler(cls, seq: str, angles: object, degrees: bool = False) -> SO3:
        """From Euler angles, scipy's convention.

        Args:
            seq: One to three axes: lowercase ``"xyz"`` are extrinsic (rotations about the
                fixed axes, ``R = R_3(a_3) R_2(a_2) R_1(a_1)``; ``"xyz"`` is roll, pitch,
                yaw), uppercase ``"XYZ"`` intrinsic (``R = R_1(a_1) R_2(a_2) R_3(a_3)``).
            angles: One angle per axis (a number for one axis).
            degrees: Angles in degrees instead of radians.

        Raises:
            InvalidInput: A bad sequence, or not one angle per axis.
        """
        if (
            not isinstance(seq, str)
            or not 1 <= len(seq) <= 3
            or not (set(seq) <= set("xyz") or set(seq) <= set("XYZ"))
        ):
            raise InvalidInput(
                f"seq must be 1 to 3 of 'xyz' (extrinsic) or 'XYZ' (intrinsic), got {seq!r}",
                what="seq",
            )
        a = np.atleast_1d(_validate.as_floats(angles, "angles", (len(seq),))).reshape(-1)
        if a.size != len(seq):
            raise ShapeError("angles", (len(seq),), a.shape)
        unit = "deg" if _validate.flag(degrees, "degrees") else "rad"
        mats = [
            _axis_rotation("xyz".index(c.lower()), _angle(v, "angle", unit))
            for c, v in zip(seq, a, strict=True)
        ]
        if seq.islower():
            mats.reverse()
        M = mats[0]
        for m in mats[1:]:
            M = M @ m
        return _so3(M)

    # -- views ---------------------------------------------------------------------------
    @property
    def R(self) -> np.ndarray:
        """The 3x3 rotation matrix (read only)."""
        return self._R

    @property
    def A(self) -> np.ndarray:
        """The 3x3 rotation matrix (read only; spatialmath's name)."""
        return self._R

    @property
    def rotation(self) -> np.ndarray:
        """The 3x3 rotation matrix (read only; Pinocchio's name)."""
        return self._R

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        return np.array(self._R, dtype=dtype)

    # -- algebra -------------------------------------------------------------------------
    def inv(self) -> SO3:
        """The inverse rotation ``R^T``."""
        return _so3(self._R.T.copy())

    def __mul__(self, other: object) -> Any:
        """``R1 * R2`` composes; ``R * v`` rotates a 3-vector or the columns of 3 x N."""
        if isinstance(other, SO3):
            return _so3(self._R @ other._R)
        if isinstance(other, (np.ndarray, list, tuple)):
            return self._R @ _vectors(other, "vector")
        return NotImplemented

    def act(self, v: object) -> np.ndarray:
        """Rotate a 3-vector, or each column of a 3 x N array."""
        return self._R @ _vectors(v, "vector")

    def log(self) -> np.ndarray:
        """The rotation vector ``theta * axis`` [rad] (``log3``)."""
        return pin.log3(self._R)

    def angvec(self, unit: str = "rad") -> tuple[float, np.ndarray]:
        """``(theta, unit axis)``; the axis is zero for the identity."""
        w = self.log()
        theta = float(np.linalg.norm(w))
        axis = w / theta if theta > 0.0 else np.zeros(3)
        return theta / _unit(unit), axis

    def rpy(self, order: str = "zyx", unit: str = "rad") -> np.ndarray:
        """``[roll, pitch, yaw]`` with :meth:`RPY`'s conventions (pitch in [-pi/2, pi/2]).

        At ``cos(pitch) = 0`` (gimbal lock) roll is set to 0 and yaw carries the rest.
        """
        sp, roll_e, yaw_e, lock_e = _RPY_ENTRIES[_rpy_order(order)]
        M = self._R

        def entry(e: tuple[int, int, int]) -> float:
            return float(e[2] * M[e[0], e[1]])

        rs, rc = entry(roll_e[0]), entry(roll_e[1])
        cp = math.hypot(rs, rc)
        pitch = math.atan2(entry(sp), cp)
        if cp > 1e-12:
            roll = math.atan2(rs, rc)
            yaw = math.atan2(entry(yaw_e[0]), entry(yaw_e[1]))
        else:
            roll, yaw = 0.0, math.atan2(entry(lock_e[0]), entry(lock_e[1]))
        return np.array([roll, pitch, yaw]) / _unit(unit)

    def quaternion(self, order: str = "sxyz") -> np.ndarray:
        """The unit quaternion (non-negative scalar part; see :func:`r2q` for ``order``)."""
        return r2q(self._R, order)

    def isclose(self, other: object, tol: float = 1e-10) -> bool:
        """Whether ``other`` (any rotation) differs by at most ``tol`` per entry."""
        return bool(np.abs(self._R - check_rotation(other, "other")).max() <= tol)

    # -- scipy-style outputs (EmbodiK's Rotation) ------------------------------------------
    def as_matrix(self) -> np.ndarray:
        """The 3x3 matrix (a new, writable array)."""
        return self._R.copy()

    def as_quat(self) -> np.ndarray:
        """The unit quaternion ``[x, y, z, w]`` (scalar last; non-negative ``w``)."""
        return r2q(self._R, "xyzs")

    def as_rotvec(self) -> np.ndarray:
        """The rotation vector ``theta * axis`` [rad] (``log3``)."""
        return self.log()

    def apply(self, vectors: object) -> np.ndarray:
        """Rotate a 3-vector, or each row of an (N, 3) array (scipy's layout)."""
        return _points(vectors, "vectors") @ self._R.T

    def __eq__(self, other: object) -> bool:
        """Value equality: the same matrix, entry by entry."""
        if not isinstance(other, SO3):
            return NotImplemented
        return bool(np.array_equal(self._R, other._R))

    def __hash__(self) -> int:
        return hash((self._R + 0.0).tobytes())  # (+ 0.0: -0.0 and 0.0 hash alike)

    def __repr__(self) -> str:
        rows = np.array2string(
            self._R, precision=6, suppress_small=True, separator=", ", prefix="SO3("
        )
        return f"SO3({rows})"


#: Seed 004's name of :class:`SO3`.
Rotation = SO3


class SE3:
    """A rigid transform (an element of SE(3)); immutable.

    Construction:

    - ``SE3()``: the identity;
    - ``SE3(x, y, z)`` or ``SE3([x, y, z])``: a translation [m];
    - ``SE3(R, t)``: a rotation (3x3 or :class:`SO3`) and a translation [m];
    - ``SE3(T)``: a 4x4 homogeneous matrix, a :class:`pinocchio.SE3`, an :class:`SE3`,
      an :class:`SO3` (pure rotation) or a :class:`PoseData`.

    Every input is checked like any pose (:func:`stackik.spatial.as_se3`).

    Raises:
        ShapeError, NonFiniteInput, InvalidTransform: Not a rigid transform.
        InvalidInput: More than three arguments.
    """

    __slots__ = ("_T",)
    _T: pin.SE3

    def __init__(self, *args: object) -> None:
        if len(args) == 0:
            T = pin.SE3.Identity()
        elif len(args) == 1:
            T = self._from_one(args[0])
        elif len(args) == 2:
            T = pin.SE3(check_rotation(args[0]), check_translation(args[1]))
        elif len(args) == 3:
            T = pin.SE3(np.eye(3), check_translation(args, "translation"))
        else:
            raise InvalidInput(f"SE3() takes at most 3 arguments, got {len(args)}")
        self._T = T

    @staticmethod
    def _from_one(arg: object) -> pin.SE3:
        if isinstance(arg, SE3):
            return arg._T
        if isinstance(arg, SO3):
            return pin.SE3(arg.R, np.zeros(3))
        if isinstance(arg, (list, tuple, np.ndarray)) and _is_flat(arg):
            return pin.SE3(np.eye(3), check_translation(arg, "translation"))
        return pin.SE3(spatial.as_se3(arg, "pose"))

    # -- constructors ------------------------------------------------------------------
    @classmethod
    def Trans(cls, x: object, y: float | None = None, z: float | None = None) -> SE3:
        """A translation [m]: ``Trans(x, y, z)`` or ``Trans([x, y, z])``."""
        t = x if y is None and z is None else (x, y, z)
        return _se3(pin.SE3(np.eye(3), check_translation(t, "translation")))

    @classmethod
    def Tx(cls, x: float) -> SE3:
        """A translation along x [m]."""
        return cls.Trans(x, 0.0, 0.0)

    @classmethod
    def Ty(cls, y: float) -> SE3:
        """A translation along y [m]."""
        return cls.Trans(0.0, y, 0.0)

    @classmethod
    def Tz(cls, z: float) -> SE3:
        """A translation along z [m]."""
        return cls.Trans(0.0, 0.0, z)

    @classmethod
    def Rx(cls, theta: float, unit: str = "rad") -> SE3:
        """A pure rotation about x (``unit``: ``"rad"`` or ``"deg"``)."""
        return _se3(pin.SE3(SO3.Rx(theta, unit).R, np.zeros(3)))

    @classmethod
    def Ry(cls, theta: float, unit: str = "rad") -> SE3:
        """A pure rotation about y."""
        return _se3(pin.SE3(SO3.Ry(theta, unit).R, np.zeros(3)))

    @classmethod
    def Rz(cls, theta: float, unit: str = "rad") -> SE3:
        """A pure rotation about z."""
        return _se3(pin.SE3(SO3.Rz(theta, unit).R, np.zeros(3)))

    @classmethod
    def RPY(
        cls,
        roll: object,
        pitch: object | None = None,
        yaw: object | None = None,
        *,
        order: str = "zyx",
        unit: str = "rad",
    ) -> SE3:
        """A pure rotation from roll, pitch, yaw (see :meth:`SO3.RPY`)."""
        R = SO3.RPY(roll, pitch, yaw, order=order, unit=unit).R
        return _se3(pin.SE3(R, np.zeros(3)))

    @classmethod
    def Rt(cls, R: object | None = None, t: object | None = None) -> SE3:
        """From a rotation (3x3 or :class:`SO3`; identity when omitted) and a translation."""
        Rm = np.eye(3) if R is None else check_rotation(R)
        tv = np.zeros(3) if t is None else check_translation(t)
        return _se3(pin.SE3(Rm, tv))

    @classmethod
    def Exp(cls, twist: object) -> SE3:
        """The exponential of a twist ``[v, w]`` (linear first, Pinocchio's order)."""
        return cls(pin.exp6(pin.Motion(_validate.vector(twist, 6, "twist"))))

    @classmethod
    def Rand(cls, rng: np.random.Generator | int | None = None, half_width: float = 1.0) -> SE3:
        """A uniform rotation and a translation uniform in ``[-half_width, half_width]^3``."""
        gen = np.random.default_rng(rng)
        h = _validate.positive_float(half_width, "half_width")
        R = SO3.Rand(gen).R
        return _se3(pin.SE3(R, gen.uniform(-h, h, 3)))

    # -- views ---------------------------------------------------------------------------
    @property
    def R(self) -> np.ndarray:
        """The 3x3 rotation (read only)."""
        return _readonly(self._T.rotation)

    @property
    def rotation(self) -> np.ndarray:
        """The 3x3 rotation (read only; Pinocchio's name)."""
        return _readonly(self._T.rotation)

    @property
    def t(self) -> np.ndarray:
        """The translation [m] (read only)."""
        return _readonly(self._T.translation)

    @property
    def translation(self) -> np.ndarray:
        """The translation [m] (read only; Pinocchio's name)."""
        return _readonly(self._T.translation)

    @property
    def A(self) -> np.ndarray:
        """The 4x4 homogeneous matrix (a new array)."""
        return self._T.homogeneous

    def homogeneous(self) -> np.ndarray:
        """The 4x4 homogeneous matrix (a new array; EmbodiK's method)."""
        return self._T.homogeneous

    def to_pinocchio(self) -> pin.SE3:
        """A :class:`pinocchio.SE3` copy."""
        return pin.SE3(self._T)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        return np.asarray(self._T.homogeneous, dtype=dtype)

    # -- algebra -------------------------------------------------------------------------
    def inv(self) -> SE3:
        """The inverse transform."""
        return _se3(self._T.inverse())

    inverse = inv

    def __mul__(self, other: object) -> Any:
        """``T1 * T2`` composes; ``T * p`` maps a point (3,) or the columns of 3 x N.

        ``T2`` may be an :class:`SE3`, a :class:`pinocchio.SE3` or an :class:`SO3`; the
        3 x N column layout of points is spatialmath's.
        """
        if isinstance(other, SE3):
            return _se3(self._T * other._T)
        if isinstance(other, pin.SE3):
            return _se3(self._T * spatial.as_se3(other, "other"))
        if isinstance(other, SO3):
            return _se3(self._T * pin.SE3(other.R, np.zeros(3)))
        if isinstance(other, (np.ndarray, list, tuple)):
            v = _vectors(other, "point")
            R, t = self._T.rotation, self._T.translation
            return R @ v + (t if v.ndim == 1 else t[:, None])
        return NotImplemented

    def __rmul__(self, other: object) -> Any:
        """``pinocchio.SE3 * SE3`` composes to an :class:`SE3`."""
        if isinstance(other, pin.SE3):
            return _se3(spatial.as_se3(other, "other") * self._T)
        return NotImplemented

    def act(self, p: object) -> np.ndarray:
        """Map a point (3,) or points as rows (N, 3) from this frame to the outer frame."""
        v = _points(p, "point")
        return v @ self._T.rotation.T + self._T.translation

    def actInv(self, p: object) -> np.ndarray:
        """Map a point (3,) or points as rows (N, 3) back: ``R^T (p - t)``."""
        v = _points(p, "point")
        return (v - self._T.translation) @ self._T.rotation

    def log(self) -> np.ndarray:
        """The twist ``[v, w]`` whose exponential is this transform (``log6``)."""
        return pin.log6(self._T).vector

    def interp(self, other: object, s: float) -> SE3:
        """Interpolate to ``other`` at ``s`` in [0, 1]: translation linear, rotation geodesic."""
        goal = spatial.as_se3(other, "other")
        s = _validate.in_range(s, "s", 0.0, 1.0)
        R0 = self._T.rotation
        R = R0 @ pin.exp3(s * pin.log3(R0.T @ goal.rotation))
        t = (1.0 - s) * self._T.translation + s * goal.translation
        return _se3(pin.SE3(R, t))

    def isclose(self, other: object, tol: float = 1e-10) -> bool:
        """Whether ``other`` (any pose) differs by at most ``tol`` per matrix entry."""
        H = spatial.as_se3(other, "other").homogeneous
        return bool(np.abs(self._T.homogeneous - H).max() <= tol)

    def __eq__(self, other: object) -> bool:
        """Value equality (EmbodiK's): the same rotation and translation, entry by entry."""
        if not isinstance(other, SE3):
            return NotImplemented
        return bool(np.array_equal(self._T.homogeneous, other._T.homogeneous))

    def __hash__(self) -> int:
        return hash((self._T.homogeneous + 0.0).tobytes())

    def __repr__(self) -> str:
        rows = np.array2string(
            self._T.homogeneous, precision=6, suppress_small=True, separator=", ", prefix="SE3("
        )
        return f"SE3({rows})"


class PoseData:
    """Lightweight holder of a rotation ``R`` (3x3) and a translation ``t`` [m].

    Args:
        rotation: 3x3 rotation (or :class:`SO3`), checked.
        translation: 3-vector [m], checked.

    Raises:
        ShapeError, NonFiniteInput, InvalidTransform: Not a rotation / translation.
    """

    __slots__ = ("R", "t")

    def __init__(self, rotation: object, translation: object) -> None:
        self.R = np.array(check_rotation(rotation, "rotation"))
        self.t = np.array(check_translation(translation, "translation"))

    @classmethod
    def wrap(cls, pose: object) -> PoseData:
        """A :class:`PoseData` of any pose.

        Accepted: a :class:`PoseData` (returned as is), an :class:`SE3`, a
        :class:`pinocchio.SE3`, a 4x4 matrix, or an object with ``R``/``t`` (or
        ``rotation``/``translation``) attributes.

        Raises:
            InvalidInput: Anything else (or an invalid pose: the checks' typed errors).
        """
        if isinstance(pose, cls):
            return pose
        if isinstance(pose, (SE3, pin.SE3, np.ndarray)):
            T = spatial.as_se3(pose)
            return cls(T.rotation, T.translation)
        rotation = getattr(pose, "R", getattr(pose, "rotation", None))
        translation = getattr(pose, "t", getattr(pose, "translation", None))
        if rotation is None or translation is None:
            raise InvalidInput(
                "expected a pose (SE3, pinocchio.SE3, 4x4, or an object with R/t or "
                f"rotation/translation), got {type(pose).__name__}",
                what="pose",
            )
        return cls(rotation, translation)

    def homogeneous(self) -> np.ndarray:
        """The 4x4 homogeneous matrix."""
        H = np.eye(4)
        H[:3, :3], H[:3, 3] = self.R, self.t
        return H

    def __repr__(self) -> str:
        return f"PoseData(R={self.R.tolist()}, t={self.t.tolist()})"


def Rt(R: object | None = None, t: object | None = None) -> SE3:
    """An :class:`SE3` from a rotation and a translation (spatialmath's ``SE3.Rt``).

    Args:
        R: 3x3 rotation matrix or :class:`SO3` (identity when omitted).
        t: Translation [m] (zero when omitted).

    Raises:
        ShapeError, NonFiniteInput, InvalidTransform: Not a rotation / translation.
    """
    return SE3.Rt(R, t)


def compute_pose_error(pose_current: object, pose_goal: object) -> np.ndarray:
    """6-D pose error ``[t_goal - t_current ; log3(R_goal R_current^T)]`` (world axes).

    Both poses may be any pose type (:class:`SE3`, :class:`PoseData`,
    :class:`pinocchio.SE3`, 4x4). See :func:`stackik.spatial.compute_pose_error`.
    """
    return spatial.compute_pose_error(pose_current, pose_goal)


def get_pose_error_vector(pose_current: object, pose_goal: object) -> np.ndarray:
    """Seed 004's other name of :func:`compute_pose_error` (same result)."""
    return spatial.compute_pose_error(pose_current, pose_goal)


def limit_task_velocity(
    velocity_error: object,
    max_linear_step: float = 0.1,
    max_angular_step: float = 0.1,
    *,
    enable_debug: bool = False,
    debug_logger: logging.Logger | None = None,
) -> np.ndarray:
    """Scale the linear and angular parts of a 6-D twist to bounded norms.

    See :func:`stackik.spatial.limit_task_velocity`; with ``enable_debug`` and a
    ``debug_logger``, each part that was limited is logged at INFO level.
    """
    out = spatial.limit_task_velocity(velocity_error, max_linear_step, max_angular_step)
    if _validate.flag(enable_debug, "enable_debug") and debug_logger is not None:
        v = np.asarray(velocity_error, dtype=float)
        for name, sl, unit in (("Linear", slice(0, 3), "m/s"), ("Angular", slice(3, 6), "rad/s")):
            before, after = float(np.linalg.norm(v[sl])), float(np.linalg.norm(out[sl]))
            if after < before:
                debug_logger.info("%s velocity limited: %.3f -> %.3f %s", name, before, after, unit)
    return out


def _pose_data_to_se3(pose: PoseData) -> pin.SE3:
    return pin.SE3(pose.R, pose.t)


spatial.register_pose_type(SE3, lambda T: T._T)
spatial.register_pose_type(PoseData, _pose_data_to_se3)
spatial.register_rotation_type(SO3, lambda R: R._R)


# -- EmbodiK's top-level helpers (``embodik.log3``, ``embodik.pose_error_norm``, ...) ---------
def log3(rotation: object) -> np.ndarray:
    """The rotation vector ``theta * axis`` [rad] of a 3x3 rotation (checked)."""
    return pin.log3(check_rotation(rotation))


def exp3(omega: object) -> np.ndarray:
    """The 3x3 rotation of a rotation vector ``theta * axis`` [rad]."""
    return pin.exp3(_validate.vector(omega, 3, "omega"))


def rotation_from_rpy(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """``Rz(yaw) Ry(pitch) Rx(roll)`` [rad] (Pinocchio's and EmbodiK's roll-pitch-yaw)."""
    return SO3.RPY(roll, pitch, yaw).as_matrix()


def matrix_to_quaternion_wxyz(rotation: object) -> tuple[float, float, float, float]:
    """The unit quaternion ``(w, x, y, z)`` of a rotation (non-negative ``w``)."""
    w, x, y, z = r2q(rotation, "wxyz").tolist()
    return w, x, y, z


def matrix_to_quaternion_xyzw(rotation: object) -> np.ndarray:
    """The unit quaternion ``[x, y, z, w]`` of a rotation (non-negative ``w``)."""
    return r2q(rotation, "xyzw")


def quaternion_wxyz_to_matrix(w: float, x: float, y: float, z: float) -> np.ndarray:
    """The 3x3 rotation of the quaternion ``(w, x, y, z)`` (normalized first)."""
    return q2r([w, x, y, z], "wxyz")


def quaternion_xyzw_to_matrix(x: float, y: float, z: float, w: float) -> np.ndarray:
    """The 3x3 rotation of the quaternion ``(x, y, z, w)`` (normalized first)."""
    return q2r([x, y, z, w], "xyzw")


def pose_error_norm(current: object, target: object) -> float:
    """The Euclidean norm of ``target - current`` (two pose vectors, e.g. 6-D twists).

    Returns inf when the vectors are empty, differ in length or are not 1-D numbers (as
    EmbodiK); a NaN entry gives NaN.
    """
    try:
        a = np.asarray(current, dtype=float)
        b = np.asarray(target, dtype=float)
    except (TypeError, ValueError):
        return math.inf
    if a.ndim != 1 or a.shape != b.shape or a.size == 0:
        return math.inf
    return float(np.linalg.norm(b - a))


def compute_relative_frame(T_1: object, T_2: object) -> SE3:
    """``T_1^-1 T_2``: the pose of frame 2 in frame 1 (EmbodiK's ECTS relative frame)."""
    return _se3(spatial.as_se3(T_1, "T_1").inverse() * spatial.as_se3(T_2, "T_2"))


def compute_absolute_frame(T_1: object, T_2: object, alpha: float) -> SE3:
    """The frame ``alpha`` of the way from ``T_2`` to ``T_1`` (EmbodiK's ECTS absolute frame).

    Translation ``alpha t_1 + (1 - alpha) t_2``; rotation ``R_1 exp((1 - alpha)
    log(R_1^T R_2))`` (the geodesic). ``alpha = 1`` gives ``T_1``, 0 gives ``T_2``. (The
    :class:`~stackik.AbsoluteFrameTask`'s ``alpha``, like EmbodiK's task, weighs frame b.)
    """
    A = spatial.as_se3(T_1, "T_1")
    B = spatial.as_se3(T_2, "T_2")
    a = _validate.in_range(alpha, "alpha", 0.0, 1.0)
    R = A.rotation @ pin.exp3((1.0 - a) * pin.log3(A.rotation.T @ B.rotation))
    return _se3(pin.SE3(R, a * A.translation + (1.0 - a) * B.translation))


def velocity_manipulability(jacobian: object) -> float:
    """Yoshikawa's manipulability ``sqrt(det(J J^T))`` of a Jacobian (m x n)."""
    J = _validate.as_floats(jacobian, "jacobian", ("m", "n"))
    if J.ndim != 2:
        raise ShapeError("jacobian", ("m", "n"), J.shape)
    return float(math.sqrt(max(float(np.linalg.det(J @ J.T)), 0.0)))
