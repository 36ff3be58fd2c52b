"""Joint kinds: the one module of stackik that reads Pinocchio's joint types.

Every other module asks :class:`JointKind` questions (is it revolute, continuous, a
free-flyer, a mimic follower?) through :func:`joint_table` or
:meth:`stackik.RobotModel.joint_infos`, never Pinocchio's ``shortname()`` strings.

Configuration layouts (Pinocchio's, which stackik keeps):

==============  ====  ====  ==============================================================
kind            nq    nv    q block
==============  ====  ====  ==============================================================
REVOLUTE        1     1     angle [rad]
CONTINUOUS      2     1     ``(cos theta, sin theta)``, unit norm
PRISMATIC       1     1     displacement [m]
FREE_FLYER      7     6     position [m], then a unit quaternion ``(x, y, z, w)``
SPHERICAL       4     3     a unit quaternion ``(x, y, z, w)``
PLANAR          4     3     ``(x, y, cos theta, sin theta)``
MIMIC           0     0     none: ``q_f = multiplier * q_leader + offset``
OTHER           any   any   helical, translation, universal, composite joints
==============  ====  ====  ==============================================================
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from ..errors import InvalidInput

__all__ = [
    "DEFAULT_BASE_SAMPLING_RANGE",
    "JointInfo",
    "JointKind",
    "classify",
    "coordinate_names",
    "joint_table",
    "sample_configuration",
    "scalar_limited",
    "unit_blocks",
]


class JointKind(enum.Enum):
    """What a joint is, as far as IK cares (see the module docstring for layouts)."""

    REVOLUTE = "revolute"
    CONTINUOUS = "continuous"
    PRISMATIC = "prismatic"
    FREE_FLYER = "free_flyer"
    SPHERICAL = "spherical"
    PLANAR = "planar"
    MIMIC = "mimic"
    OTHER = "other"

    def __str__(self) -> str:
        return self.value

    @property
    def is_scalar(self) -> bool:
        """One velocity coordinate: revolute, continuous or prismatic."""
        return self in (JointKind.REVOLUTE, JointKind.CONTINUOUS, JointKind.PRISMATIC)

    @property
    def is_rotation(self) -> bool:
        """A one-axis rotation (revolute or continuous)."""
        return self in (JointKind.REVOLUTE, JointKind.CONTINUOUS)


_KINDS = {
    "JointModelRX": JointKind.REVOLUTE,
    "JointModelRY": JointKind.REVOLUTE,
    "JointModelRZ": JointKind.REVOLUTE,
    "JointModelRevoluteUnaligned": JointKind.REVOLUTE,
    "JointModelRUBX": JointKind.CONTINUOUS,
    "JointModelRUBY": JointKind.CONTINUOUS,
    "JointModelRUBZ": JointKind.CONTINUOUS,
    "JointModelRevoluteUnboundedUnaligned": JointKind.CONTINUOUS,
    "JointModelPX": JointKind.PRISMATIC,
    "JointModelPY": JointKind.PRISMATIC,
    "JointModelPZ": JointKind.PRISMATIC,
    "JointModelPrismaticUnaligned": JointKind.PRISMATIC,
    "JointModelFreeFlyer": JointKind.FREE_FLYER,
    "JointModelSpherical": JointKind.SPHERICAL,
    "JointModelPlanar": JointKind.PLANAR,
    "JointModelMimic": JointKind.MIMIC,
}

#: Offset of the unit quaternion inside the q block of the quaternion joints.
_QUATERNION_OFFSET = {JointKind.FREE_FLYER: 3, JointKind.SPHERICAL: 0}


def classify(joint_model: pin.JointModel) -> JointKind:
    """The :class:`JointKind` of a Pinocchio joint model."""
    return _KINDS.get(joint_model.shortname(), JointKind.OTHER)


@dataclass(frozen=True)
class JointInfo:
    """One joint of a model: its kind and where it sits in ``q`` and ``v``.

    Attributes:
        name: Joint name.
        pin_id: Pinocchio joint index (the ``universe`` is 0).
        kind: :class:`JointKind`.
        idx_q: First index in the configuration vector (the leader's for a mimic joint).
        nq: Configuration entries (0 for a mimic follower).
        idx_v: First index in the velocity vector (the leader's for a mimic joint).
        nv: Velocity entries (0 for a mimic follower).
        parent_id: Pinocchio index of the parent joint.
        mimic_scaling: ``multiplier`` of a mimic follower (0 otherwise).
        mimic_offset: ``offset`` of a mimic follower [rad or m] (0 otherwise).
    """

    name: str
    pin_id: int
    kind: JointKind
    idx_q: int
    nq: int
    idx_v: int
    nv: int
    parent_id: int
    mimic_scaling: float = 0.0
    mimic_offset: float = 0.0

    @property
    def unit_block(self) -> tuple[int, int] | None:
        """``(start, size)`` of the q entries that must have unit norm, if any."""
        if self.kind == JointKind.CONTINUOUS:
            return self.idx_q, 2
        offset = _QUATERNION_OFFSET.get(self.kind)
        if offset is not None:
            return self.idx_q + offset, 4
        if self.kind == JointKind.PLANAR:
            return self.idx_q + 2, 2
        return None

    @property
    def is_variable(self) -> bool:
        """Whether the joint has velocity entries of its own (not a folded mimic follower).

        A mimic follower of the keep layout has entries, but is coupled to its leader
        (see :attr:`stackik.RobotModel.mimic_joints`).
        """
        return self.nv > 0


def coordinate_names(infos: Sequence[JointInfo], nv: int) -> list[str]:
    """A name per velocity coordinate (size ``nv``): the joint's, ``[k]`` for multi-DoF joints."""
    names = [""] * nv
    for info in infos:
        for k in range(info.nv):
            names[info.idx_v + k] = info.name if info.nv == 1 else f"{info.name}[{k}]"
    return names


def _info(model: pin.Model, jid: int) -> JointInfo:
    jm = model.joints[jid]
    kind = classify(jm)
    scaling = offset = 0.0
    idx_q, idx_v, nq, nv = jm.idx_q, jm.idx_v, jm.nq, jm.nv
    if kind == JointKind.MIMIC:
        mm = jm.extract()
        scaling, offset = float(mm.scaling), float(mm.offset)
        idx_q, idx_v, nq, nv = mm.idx_q, mm.idx_v, 0, 0
    return JointInfo(
        name=model.names[jid],
        pin_id=jid,
        kind=kind,
        idx_q=int(idx_q),
        nq=int(nq),
        idx_v=int(idx_v),
        nv=int(nv),
        parent_id=int(model.parents[jid]),
        mimic_scaling=scaling,
        mimic_offset=offset,
    )


def joint_table(model: pin.Model) -> tuple[JointInfo, ...]:
    """Every joint of ``model`` but the universe, in Pinocchio's order."""
    return tuple(_info(model, j) for j in range(1, model.njoints))


def unit_blocks(table: tuple[JointInfo, ...]) -> list[tuple[str, int, int]]:
    """``(joint name, first q index, size)`` of every q block that must have unit norm."""
    out = []
    for info in table:
        block = info.unit_block
        if block is not None:
            out.append((info.name, block[0], block[1]))
    return out


def scalar_limited(table: tuple[JointInfo, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Indices in q and v of the one-coordinate joints whose q is their value.

    Revolute and prismatic joints (not continuous ones, whose q is a cos/sin pair).

    These are the joints whose position limits become velocity bounds.
    """
    picked = [
        (i.idx_q, i.idx_v)
        for i in table
        if i.kind in (JointKind.REVOLUTE, JointKind.PRISMATIC) and i.nq == 1
    ]
    iq = np.array([p[0] for p in picked], dtype=np.int64)
    iv = np.array([p[1] for p in picked], dtype=np.int64)
    return iq, iv


#: Half-width of the box a floating base's position is sampled from when its limits are
#: infinite [m].
DEFAULT_BASE_SAMPLING_RANGE = 1.0


def _sample_block(
    info: JointInfo, lo: np.ndarray, hi: np.ndarray, rng: np.random.Generator
) -> np.ndarray | None:
    """A uniform sample of one joint's q block, or None to use Pinocchio's own sampler."""
    i, n = info.idx_q, info.nq
    if info.kind == JointKind.CONTINUOUS:
        a = rng.uniform(-np.pi, np.pi)
        return np.array([np.cos(a), np.sin(a)])
    offset = _QUATERNION_OFFSET.get(info.kind)
    if offset is not None:
        block = np.empty(n)
        if offset:
            bl, bh = lo[i : i + offset], hi[i : i + offset]
            span = DEFAULT_BASE_SAMPLING_RANGE
            block[:offset] = rng.uniform(
                np.where(np.isfinite(bl), bl, -span), np.where(np.isfinite(bh), bh, span)
            )
        quat = rng.normal(size=4)
        block[offset:] = quat / np.linalg.norm(quat)
        return block
    if info.kind in (JointKind.REVOLUTE, JointKind.PRISMATIC) or (
        info.kind == JointKind.OTHER and info.nq == info.nv
    ):
        bl, bh = lo[i : i + n], hi[i : i + n]
        if not (np.isfinite(bl).all() and np.isfinite(bh).all()):
            raise InvalidInput(f"joint {info.name!r} has infinite limits; set finite ones")
        # A zero-width range may read [0, -0] (PR2's URDF): NumPy refuses high < low.
        return rng.uniform(bl, np.maximum(bh, bl))
    return None


def sample_configuration(
    model: pin.Model, table: tuple[JointInfo, ...], rng: np.random.Generator
) -> np.ndarray:
    """A configuration drawn uniformly inside the joint limits.

    Bounded joints are uniform in their range; continuous joints uniform in angle; a
    quaternion joint gets a uniform random orientation (and a free-flyer a position
    inside its limits, or within ±:data:`DEFAULT_BASE_SAMPLING_RANGE` where those are
    infinite); planar and other manifold joints use Pinocchio's sampler.

    Raises:
        InvalidInput: A bounded-kind joint has infinite limits.
    """
    lo, hi = model.lowerPositionLimit, model.upperPositionLimit
    q = np.empty(model.nq)
    for info in table:
        if info.nq == 0:
            continue
        block = _sample_block(info, lo, hi, rng)
        if block is None:
            sample = pin.randomConfiguration(
                model,
                np.nan_to_num(lo, posinf=1.0, neginf=-1.0),
                np.nan_to_num(hi, posinf=1.0, neginf=-1.0),
            )
            block = sample[info.idx_q : info.idx_q + info.nq]
        q[info.idx_q : info.idx_q + info.nq] = block
    return q
