"""The joint lines of a revolute chain, read from a Pinocchio model (product of exponentials).

A chain of revolute joints between a base frame and a tip frame is described, at the
zero configuration, by each joint's unit axis ``a_i`` and one point ``o_i`` of its line
(base frame) and the tip pose ``M``. Forward kinematics is then the product of
exponentials

    T(q) = E_1(q_1) E_2(q_2) ... E_n(q_n) M,   E_i(t): rotation by t about the line (a_i, o_i)

with ``q_i`` the model's own joint coordinate: no DH table, no offsets; whatever the
URDF's zero is, it is the zero here. Every closed-form solver of :mod:`stackik.analytic`
works on these lines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from .. import _validate
from ..errors import FrameNotFound, InvalidInput
from ..model.joints import JointKind, classify

__all__ = ["ChainGeometry", "common_normal", "parallel", "rotation", "wrap_angles"]


def rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotation matrix by ``angle`` [rad] about the unit ``axis`` (Rodrigues)."""
    x, y, z = axis
    c, s = math.cos(angle), math.sin(angle)
    t = 1.0 - c
    return np.array(
        [
            [c + t * x * x, t * x * y - s * z, t * x * z + s * y],
            [t * x * y + s * z, c + t * y * y, t * y * z - s * x],
            [t * x * z - s * y, t * y * z + s * x, c + t * z * z],
        ]
    )


def wrap_angles(q: np.ndarray) -> np.ndarray:
    """Angles wrapped into ``(-pi, pi]`` [rad] (a new array).

    Raises:
        InvalidInput: ``q`` is not numbers.
    """
    try:
        angles = np.array(q, dtype=float, ndmin=1)
    except (TypeError, ValueError):
        raise InvalidInput(f"angles must be numbers, got {q!r}", what="q") from None
    out = np.mod(angles + math.pi, 2.0 * math.pi) - math.pi
    out[out <= -math.pi] += 2.0 * math.pi
    return out


@dataclass(frozen=True)
class ChainGeometry:
    """Joint lines of a revolute chain at the zero configuration, in the base frame.

    Attributes:
        tip_frame: Name of the tip frame.
        base_frame: Name of the base frame (``None``: the world).
        joint_ids: Pinocchio joint indices, root to tip.
        joint_names: Joint names, root to tip.
        continuous: Whether each joint is continuous (stored as ``(cos, sin)``).
        axes: Unit axis of each joint, shape (n, 3).
        points: One point of each joint's line [m], shape (n, 3) (the joint origin).
        tip: Tip pose at the zero configuration, 4x4 [m].
    """

    tip_frame: str
    base_frame: str | None
    joint_ids: tuple[int, ...]
    joint_names: tuple[str, ...]
    continuous: tuple[bool, ...]
    axes: np.ndarray
    points: np.ndarray
    tip: np.ndarray

    @property
    def n(self) -> int:
        """Number of joints."""
        return len(self.joint_ids)

    @classmethod
    def from_model(
        cls, model: pin.Model, tip_frame: str, base_frame: str | None = None
    ) -> ChainGeometry:
        """Read the joint lines from ``base_frame`` (or the world) to ``tip_frame``.

        Args:
            model: Pinocchio model.
            tip_frame: Name of the tip frame.
            base_frame: A frame on the path from the world to the tip; poses are
                expressed in it and joints up to its parent joint are left out.

        Raises:
            FrameNotFound: Unknown frame.
            InvalidInput: The base frame is not on the tip's path, no joint lies
                between, or a joint on the path is not a one-axis rotation (revolute or
                continuous).
        """
        tip_id = _frame_id(model, tip_frame)
        support = list(model.supports[model.frames[tip_id].parentJoint])
        base_joint = 0
        if base_frame is not None:
            base_joint = model.frames[_frame_id(model, base_frame)].parentJoint
            if base_joint not in support:
                raise InvalidInput(
                    f"base frame {base_frame!r} is not on the path from the world to {tip_frame!r}",
                    what="base_frame",
                    value=base_frame,
                )
        joint_ids = support[support.index(base_joint) + 1 :]
        if not joint_ids:
            raise InvalidInput(f"no joint between {base_frame or 'the world'!r} and {tip_frame!r}")
        kinds = [classify(model.joints[j]) for j in joint_ids]
        for j, kind in zip(joint_ids, kinds, strict=True):
            if not kind.is_rotation:
                raise InvalidInput(
                    f"joint {model.names[j]!r} on the chain to {tip_frame!r} is {kind}; "
                    "closed-form solvers need revolute joints",
                    what="frame_name",
                    value=tip_frame,
                )
        data = model.createData()
        q0 = pin.neutral(model)
        pin.framesForwardKinematics(model, data, q0)
        base = pin.SE3.Identity()
        if base_frame is not None:
            base = pin.SE3(data.oMf[_frame_id(model, base_frame)])
        axes, points = [], []
        for j in joint_ids:
            M = base.actInv(data.oMi[j])
            axes.append(M.rotation @ _local_axis(model.joints[j], q0))
            points.append(M.translation.copy())
        tip = base.actInv(data.oMf[tip_id]).homogeneous
        return cls(
            tip_frame,
            base_frame,
            tuple(int(j) for j in joint_ids),
            tuple(model.names[j] for j in joint_ids),
            tuple(k == JointKind.CONTINUOUS for k in kinds),
            np.array(axes),
            np.array(points),
            np.array(tip),
        )

    def fk(self, q: np.ndarray) -> np.ndarray:
        """Tip pose (4x4, base frame) at the chain configuration ``q`` [rad]."""
        T = np.eye(4)
        for a, o, t in zip(self.axes, self.points, np.asarray(q, dtype=float), strict=True):
            R = rotation(a, float(t))
            E = np.eye(4)
            E[:3, :3] = R
            E[:3, 3] = o - R @ o
            T = T @ E
        return T @ self.tip

    def lines(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Axes and points of every joint line at ``q`` (base frame), shapes (n, 3)."""
        R, p = np.eye(3), np.zeros(3)
        axes, points = np.empty_like(self.axes), np.empty_like(self.points)
        for i, t in enumerate(np.asarray(q, dtype=float)):
            axes[i] = R @ self.axes[i]
            points[i] = R @ self.points[i] + p
            Ri = rotation(self.axes[i], float(t))
            p = R @ (self.points[i] - Ri @ self.points[i]) + p
            R = R @ Ri
        return axes, points


def _frame_id(model: pin.Model, name: str) -> int:
    _check_model(model)
    if not isinstance(name, str) or not model.existFrame(name):
        raise FrameNotFound(str(name), [f.name for f in model.frames])
    return int(model.getFrameId(name))


def _local_axis(jm: pin.JointModel, q0: np.ndarray) -> np.ndarray:
    """Unit rotation axis of a one-axis joint in its own frame (its motion subspace)."""
    jd = jm.createData()
    jm.calc(jd, q0)
    w = np.asarray(jd.S).reshape(6)[3:]
    return w / np.linalg.norm(w)


def common_normal(
    o1: np.ndarray, a1: np.ndarray, o2: np.ndarray, a2: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray]:
    """Distance [m] between two lines and the feet of their common normal.

    For parallel lines the feet are ``o1`` and its projection on line 2.
    """
    w = o1 - o2
    b = float(a1 @ a2)
    den = 1.0 - b * b
    if den < 1e-18:
        f2 = o2 + float(a2 @ w) * a2
        return float(np.linalg.norm(o1 - f2)), o1.copy(), f2
    d, e = float(a1 @ w), float(a2 @ w)
    s = (b * e - d) / den
    t = (e - b * d) / den
    f1, f2 = o1 + s * a1, o2 + t * a2
    return float(np.linalg.norm(f1 - f2)), f1, f2


def parallel(a: np.ndarray, b: np.ndarray, tol: float) -> bool:
    """Whether two unit axes are parallel (or antiparallel) within ``|a x b| <= tol``."""
    return float(np.linalg.norm(np.cross(a, b))) <= tol


def _check_model(model: object) -> None:
    """Refuse anything but a Pinocchio model (InvalidInput naming the type)."""
    _validate.instance(model, pin.Model, "model", "pinocchio.Model")
