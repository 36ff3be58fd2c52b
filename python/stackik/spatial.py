"""SE(3) / SO(3) helpers over Pinocchio's own types.

Poses are :class:`pinocchio.SE3` objects (``.translation``, ``.rotation``,
``.homogeneous``). Every pose-taking function also accepts a 4x4 homogeneous matrix and
the types registered with :func:`register_pose_type` (:class:`stackik.utils.SE3` and
:class:`stackik.utils.PoseData` register themselves); every rotation-taking one accepts
a 3x3 matrix and the types registered with :func:`register_rotation_type`
(:class:`stackik.utils.SO3`). The registry keeps this module below ``stackik.utils``
(no import cycle) and keeps the 4x4 and :class:`pinocchio.SE3` fast paths as they were.

Quaternion orders (see ``docs/conventions.md``): these helpers follow seed 004
(EmbodiK, spatialmath): **scalar first** ``[w, x, y, z]`` by default (``order="sxyz"``
or ``"wxyz"``), scalar last with ``order="xyzs"`` or ``"xyzw"``. Robot configurations
are Pinocchio's: a free-flyer or spherical joint stores its quaternion **scalar last**,
``q[3:7] = [x, y, z, w]``. So ``q2r(q[3:7])`` is wrong and ``q2r(q[3:7], order="xyzw")``
is right.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pinocchio as pin

from . import _validate
from .errors import InvalidInput, InvalidTransform, ShapeError

#: Tolerance on ``R^T R - I`` and ``det R - 1`` for a matrix to count as a rotation.
ROTATION_TOLERANCE = 1e-6

#: Largest accepted translation norm of a pose [m]: farther than any robot reaches by a
#: wide margin, and far from where squared distances overflow.
MAX_TRANSLATION = 1e6

_SCALAR_FIRST = ("sxyz", "wxyz")
_SCALAR_LAST = ("xyzs", "xyzw")

#: Exact type -> converter to :class:`pinocchio.SE3` (checked afterwards like any pose).
_POSE_TYPES: dict[type, Callable[[Any], pin.SE3]] = {}
#: Exact type -> converter to a 3x3 array (checked afterwards like any rotation).
_ROTATION_TYPES: dict[type, Callable[[Any], object]] = {}


class _CallableMatrix(np.ndarray):
    """A matrix that may also be called, returning itself as a plain array.

    Lets ``T.homogeneous`` (Pinocchio's property) and ``T.homogeneous()`` (EmbodiK's
    method) both work on :class:`SE3Pose`.
    """

    def __call__(self) -> np.ndarray:
        return np.asarray(self)


class SE3Pose(pin.SE3):
    """A :class:`pinocchio.SE3` that also answers to EmbodiK's ``SE3`` names.

    ``homogeneous`` is the 4x4 array and may be called (``T.homogeneous()``); ``A`` (the
    4x4), ``R`` (rotation) and ``t`` (translation) are there too, and ``inverse()``
    keeps the type. Everything else is Pinocchio's (it *is* a ``pinocchio.SE3``).
    :meth:`stackik.RobotModel.get_frame_pose` returns one.
    """

    @property
    def homogeneous(self) -> np.ndarray:
        """The 4x4 homogeneous matrix (a new array; callable, as EmbodiK's method)."""
        return _PIN_HOMOGENEOUS(self).view(_CallableMatrix)

    @property
    def A(self) -> np.ndarray:
        """The 4x4 homogeneous matrix (a new plain array)."""
        return _PIN_HOMOGENEOUS(self)

    @property
    def R(self) -> np.ndarray:
        """The 3x3 rotation (a copy)."""
        return np.array(self.rotation)

    @property
    def t(self) -> np.ndarray:
        """The translation [m] (a copy)."""
        return np.array(self.translation)

    def inverse(self) -> SE3Pose:
        """The inverse transform (an :class:`SE3Pose`)."""
        return SE3Pose(pin.SE3.inverse(self))


_PIN_HOMOGENEOUS = pin.SE3.homogeneous.fget


def register_pose_type(cls: type, to_se3: Callable[[Any], pin.SE3]) -> None:
    """Accept instances of ``cls`` wherever a pose is taken (:func:`as_se3`).

    Args:
        cls: The pose type (exact type; subclasses register on their own).
        to_se3: Its conversion to :class:`pinocchio.SE3`; the result is checked like
            any pose, so the converter need not validate.
    """
    _POSE_TYPES[cls] = to_se3


def register_rotation_type(cls: type, to_matrix: Callable[[Any], object]) -> None:
    """Accept instances of ``cls`` wherever a rotation is taken (:func:`check_rotation`).

    Args:
        cls: The rotation type (exact type).
        to_matrix: Its conversion to a 3x3 array; the result is checked like any
            rotation.
    """
    _ROTATION_TYPES[cls] = to_matrix


def _check_order(order: str) -> bool:
    """Return True for scalar-first orders; raise for unknown ones."""
    if order in _SCALAR_FIRST:
        return True
    if order in _SCALAR_LAST:
        return False
    raise InvalidInput(f"unknown quaternion order {order!r}; use 'sxyz'/'wxyz' or 'xyzs'/'xyzw'")


def check_rotation(R: object, what: str = "rotation") -> np.ndarray:
    """Return ``R`` as a 3x3 rotation matrix, checking orthonormality and handedness.

    ``R`` is a 3x3 array or a registered rotation type (:class:`stackik.utils.SO3`).

    Raises:
        ShapeError: Not 3x3.
        NonFiniteInput: NaN or inf entries.
        InvalidTransform: Not orthonormal or ``det R != 1`` (within
            :data:`ROTATION_TOLERANCE`).
    """
    if type(R) is not np.ndarray:
        convert = _ROTATION_TYPES.get(type(R))
        if convert is not None:
            R = convert(R)
    R = _validate.matrix(R, (3, 3), what)
    (a, b, c), (d, e, f), (g, h, i) = R.tolist()
    err, det = _rotation_defect(a, b, c, d, e, f, g, h, i)
    if err > ROTATION_TOLERANCE or abs(det - 1.0) > ROTATION_TOLERANCE:
        raise InvalidTransform(
            f"{what} is not a rotation matrix (|R^T R - I| = {err:.3g}, det R = {det:.3g})"
        )
    return R


def _rotation_defect(
    a: float, b: float, c: float, d: float, e: float, f: float, g: float, h: float, i: float
) -> tuple[float, float]:
    """``(max |R^T R - I|, det R)`` of the 3x3 matrix with rows ``abc``, ``def``, ``ghi``.

    Scalar arithmetic: at 3x3 it is several times cheaper than NumPy calls, and target
    poses are set every control tick.
    """
    err = max(
        abs(a * a + d * d + g * g - 1.0),
        abs(b * b + e * e + h * h - 1.0),
        abs(c * c + f * f + i * i - 1.0),
        abs(a * b + d * e + g * h),
        abs(a * c + d * f + g * i),
        abs(b * c + e * f + h * i),
    )
    return err, a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)


def check_translation(t: object, what: str = "translation") -> np.ndarray:
    """Return ``t`` as a finite 3-vector of norm at most :data:`MAX_TRANSLATION` [m].

    Raises:
        ShapeError, NonFiniteInput: Not 3 finite numbers.
        InvalidTransform: Farther than :data:`MAX_TRANSLATION`.
    """
    v = _validate.vector(t, 3, what)
    x, y, z = v.tolist()
    if x * x + y * y + z * z > MAX_TRANSLATION * MAX_TRANSLATION:
        raise InvalidTransform(f"{what} {v.tolist()} is farther than {MAX_TRANSLATION:g} m")
    return v


def _is_valid_homogeneous(T: np.ndarray) -> bool:
    """Whether a float 4x4 passes every check of :func:`as_se3` (scalar fast path).

    Targets are set every control tick; at 4x4, scalar arithmetic is several times
    cheaper than NumPy calls. False sends the caller to the checks that name the fault.
    """
    (a, b, c, x), (d, e, f, y), (g, h, i, z), last = T.tolist()
    total = a + b + c + d + e + f + g + h + i + x + y + z
    if not math.isfinite(total) or last != [0.0, 0.0, 0.0, 1.0]:
        return False
    err, det = _rotation_defect(a, b, c, d, e, f, g, h, i)
    return (
        err <= ROTATION_TOLERANCE
        and abs(det - 1.0) <= ROTATION_TOLERANCE
        and x * x + y * y + z * z <= MAX_TRANSLATION * MAX_TRANSLATION
    )


def is_rigid(T: np.ndarray) -> bool:
    """Whether a float 4x4 array is a rigid transform :func:`as_se3` accepts (no raise)."""
    return _is_valid_homogeneous(T)


def as_se3(pose: object, what: str = "pose") -> pin.SE3:
    """Convert a pose to :class:`pinocchio.SE3`, checking that it is a rigid transform.

    Accepted: :class:`pinocchio.SE3`, a 4x4 homogeneous matrix, or a registered pose
    type (:class:`stackik.utils.SE3`, :class:`stackik.utils.PoseData`). Every form gets
    the same checks: a :class:`pinocchio.SE3` can hold anything.

    Raises:
        ShapeError: Not 4x4.
        NonFiniteInput: NaN or inf entries.
        InvalidTransform: The rotation block is not a rotation, the last row is not
            ``[0, 0, 0, 1]``, or the translation is beyond :data:`MAX_TRANSLATION`.
    """
    if isinstance(pose, pin.SE3):
        if _is_valid_homogeneous(pose.homogeneous):
            return pose
        check_rotation(pose.rotation, f"{what} rotation")
        check_translation(pose.translation, f"{what} translation")
        return pose
    if isinstance(pose, np.ndarray) and pose.dtype == np.float64 and pose.shape == (4, 4):
        if _is_valid_homogeneous(pose):
            return pin.SE3(pose)
    convert = _POSE_TYPES.get(type(pose))
    if convert is not None:
        return as_se3(convert(pose), what)
    T = _validate.matrix(pose, (4, 4), what)
    if np.abs(T[3] - (0.0, 0.0, 0.0, 1.0)).max() > 1e-12:
        raise InvalidTransform(f"{what}: last row must be [0, 0, 0, 1], got {T[3].tolist()}")
    R = check_rotation(T[:3, :3], f"{what} rotation")
    return pin.SE3(R, check_translation(T[:3, 3].copy(), f"{what} translation"))


def check_pose_stack(poses: object, what: str = "poses") -> np.ndarray:
    """Return an (N, 4, 4) stack of homogeneous poses as floats, checking every one.

    Vectorized for large batches; on the first bad pose it raises the same typed error
    as :func:`as_se3` would, naming its index.

    Raises:
        ShapeError: Not N x 4 x 4.
        NonFiniteInput: A pose has NaN or inf entries.
        InvalidTransform: A rotation block is not a rotation or a last row is not
            ``[0, 0, 0, 1]``.
    """
    Ts = _validate.as_floats(poses, what, ("N", 4, 4))
    if Ts.ndim != 3 or Ts.shape[1:] != (4, 4):
        raise ShapeError(what, ("N", 4, 4), Ts.shape)
    Rs = Ts[:, :3, :3]
    with np.errstate(invalid="ignore"):  # NaN entries are reported below
        gram = np.abs(np.einsum("kji,kjl->kil", Rs, Rs) - np.eye(3)).max(axis=(1, 2), initial=0)
        bad = (
            ~np.isfinite(Ts).all(axis=(1, 2))
            | (np.abs(Ts[:, 3] - (0.0, 0.0, 0.0, 1.0)).max(axis=1, initial=0) > 1e-12)
            | ~(gram <= ROTATION_TOLERANCE)
            | ~(np.abs(np.linalg.det(Rs) - 1.0) <= ROTATION_TOLERANCE)
            | ~(np.linalg.norm(Ts[:, :3, 3], axis=1) <= MAX_TRANSLATION)
        )
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        as_se3(Ts[k], f"{what}[{k}]")  # raises the typed error
    return Ts


def Rt(R: object | None = None, t: object | None = None) -> pin.SE3:
    """Build an SE3 pose from a rotation matrix and a translation [m].

    Args:
        R: 3x3 rotation matrix (identity when omitted).
        t: Translation [m] (zero when omitted).

    Returns:
        The pose as :class:`pinocchio.SE3`.
    """
    Rm = np.eye(3) if R is None else check_rotation(R)
    tv = np.zeros(3) if t is None else _validate.vector(t, 3, "translation")
    return pin.SE3(Rm, tv)


def normalize_quaternion(quaternion: object) -> np.ndarray:
    """Return the unit quaternion along ``quaternion`` (order preserved: either order works).

    Raises:
        ShapeError: Not 4 entries.
        NonFiniteInput: NaN or inf entries.
        InvalidInput: The norm is (numerically) zero, so no direction exists.
    """
    qv = _validate.vector(quaternion, 4, "quaternion")
    norm = float(np.linalg.norm(qv))
    if norm < 1e-12:
        raise InvalidInput("quaternion has zero norm and cannot be normalized")
    return qv / norm


def q2r(quaternion: object, order: str = "sxyz") -> np.ndarray:
    """Convert a quaternion to a 3x3 rotation matrix.

    Args:
        quaternion: 4 entries; normalized before conversion.
        order: ``"sxyz"``/``"wxyz"`` (scalar first ``[w, x, y, z]``, the default, as in
            seed 004) or ``"xyzs"``/``"xyzw"`` (scalar last ``[x, y, z, w]``, the order of
            a Pinocchio configuration's quaternion).

    Returns:
        The rotation matrix.
    """
    scalar_first = _check_order(order)
    qv = normalize_quaternion(quaternion)
    x, y, z, w = (qv[1], qv[2], qv[3], qv[0]) if scalar_first else qv
    return pin.Quaternion(w, x, y, z).toRotationMatrix()


def r2q(rotation: object, order: str = "sxyz") -> np.ndarray:
    """Convert a rotation matrix to a unit quaternion with non-negative scalar part.

    Args:
        rotation: 3x3 rotation matrix.
        order: ``"sxyz"``/``"wxyz"`` (scalar first ``[w, x, y, z]``, the default, as in
            seed 004) or ``"xyzs"``/``"xyzw"`` (scalar last ``[x, y, z, w]``, the order of
            a Pinocchio configuration's quaternion).

    Returns:
        The quaternion in the requested order.
    """
    scalar_first = _check_order(order)
    xyzw = pin.Quaternion(check_rotation(rotation)).coeffs().copy()
    if xyzw[3] < 0.0:
        xyzw = -xyzw
    return np.roll(xyzw, 1) if scalar_first else xyzw


def compute_pose_error(pose_current: object, pose_goal: object) -> np.ndarray:
    """6-D pose error from ``pose_current`` to ``pose_goal``, in the world frame.

    ``e = [t_goal - t_current, log3(R_goal R_current^T)]``: the first three entries
    are a translation [m], the last three a rotation vector [rad] expressed in the
    world frame. Driving a frame with the world-aligned twist ``K e`` reduces the error.

    Args:
        pose_current: Any pose :func:`as_se3` accepts.
        pose_goal: Any pose :func:`as_se3` accepts.

    Returns:
        The 6-vector error.
    """
    cur = as_se3(pose_current, "pose_current")
    goal = as_se3(pose_goal, "pose_goal")
    err = np.empty(6)
    err[:3] = goal.translation - cur.translation
    err[3:] = pin.log3(goal.rotation @ cur.rotation.T)
    return err


def clamp_configuration(configuration: object, lower: object, upper: object) -> np.ndarray:
    """Clip a joint configuration into ``[lower, upper]`` element-wise.

    Raises:
        ShapeError: Sizes differ.
        NonFiniteInput: The configuration has NaN or inf entries.
        InvalidBounds: ``lower > upper`` somewhere.
    """
    qv = _validate.as_floats(configuration, "configuration", ("n",))
    if qv.ndim != 1:
        raise ShapeError("configuration", ("n",), qv.shape)
    qv = _validate.vector(qv, qv.shape[0], "configuration")
    lo, hi = _validate.bounds(lower, upper, qv.shape[0], "configuration limits")
    return np.clip(qv, lo, hi)


def _non_negative_or_inf(value: object, what: str) -> float:
    v = _validate.real(value, what)
    if not v >= 0:  # also rejects NaN; inf means no limit
        raise InvalidInput(f"{what} must be >= 0, got {value!r}", what=what, value=value)
    return v


def limit_task_velocity(
    velocity_error: object, max_linear_step: float = 0.1, max_angular_step: float = 0.1
) -> np.ndarray:
    """Scale the linear and angular parts of a 6-D twist to bounded norms.

    Each part keeps its direction; a part whose norm exceeds its bound is scaled to it.

    Args:
        velocity_error: 6-vector ``[linear (m or m/s), angular (rad or rad/s)]``.
        max_linear_step: Bound on the linear part's norm [m or m/s].
        max_angular_step: Bound on the angular part's norm [rad or rad/s].

    Returns:
        The limited 6-vector (a new array).
    """
    v = _validate.vector(velocity_error, 6, "velocity_error").copy()
    max_linear_step = _non_negative_or_inf(max_linear_step, "max_linear_step")
    max_angular_step = _non_negative_or_inf(max_angular_step, "max_angular_step")
    for sl, bound in ((slice(0, 3), max_linear_step), (slice(3, 6), max_angular_step)):
        norm = float(np.linalg.norm(v[sl]))
        if norm > bound:
            v[sl] *= bound / norm
    return v
