"""RobotModel: a robot loaded from URDF/XACRO into Pinocchio, with a kinematics cache.

One call to :meth:`RobotModel.update_kinematics` runs a single Pinocchio pass
(forward kinematics, joint Jacobians, frame placements); every pose and Jacobian
query afterwards reads that cache. The centre of mass and collision distances are
computed lazily, once per configuration, only when asked for. Dynamics functions
take their own arguments and use a separate Pinocchio ``Data``, so they never
disturb the kinematics cache.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pinocchio as pin

from .. import _validate
from ..errors import (
    CollisionGeometryNotFound,
    FrameNotFound,
    InvalidInput,
    JointNotFound,
    MalformedDescription,
    NonFiniteInput,
    ShapeError,
)
from ..spatial import as_se3
from . import loading
from .collision import CollisionModel, convexify, validate_pairs

ReferenceFrame = pin.ReferenceFrame
"""Pinocchio's reference frames for Jacobians: ``LOCAL``, ``WORLD``, ``LOCAL_WORLD_ALIGNED``."""

#: Velocity limit used where the URDF gives none [rad/s or m/s].
DEFAULT_VELOCITY_LIMIT = 2.0
#: Effort limit used where the URDF gives none [N m or N].
DEFAULT_EFFORT_LIMIT = 100.0
#: Acceleration limit used for every joint until set [rad/s^2 or m/s^2] (URDF has none).
DEFAULT_ACCELERATION_LIMIT = 10.0
#: Half-width of the box that :meth:`RobotModel.random_configuration` samples a floating
#: base's position from when its limits are infinite [m].
DEFAULT_BASE_SAMPLING_RANGE = 1.0

#: Magnitude from which a Pinocchio position limit counts as unbounded.
_UNBOUNDED = 1e10

_REFERENCE_FRAMES = {
    "local": pin.LOCAL,
    "world": pin.WORLD,
    "local_world_aligned": pin.LOCAL_WORLD_ALIGNED,
}

_CONTINUOUS = (
    "JointModelRUBX",
    "JointModelRUBY",
    "JointModelRUBZ",
    "JointModelRevoluteUnboundedUnaligned",
)
_QUATERNION_JOINTS = {"JointModelFreeFlyer": 3, "JointModelSpherical": 0}


def _reference_frame(rf: object) -> pin.ReferenceFrame:
    if isinstance(rf, pin.ReferenceFrame):
        return rf
    if isinstance(rf, str) and rf.lower() in _REFERENCE_FRAMES:
        return _REFERENCE_FRAMES[rf.lower()]
    raise InvalidInput(
        f"reference_frame must be a ReferenceFrame or one of {sorted(_REFERENCE_FRAMES)}, "
        f"got {rf!r}"
    )


class RobotModel:
    """A robot kinematic and dynamic model on Pinocchio, with collision geometry.

    Args:
        urdf_path: URDF file.
        actuated_joint_names: When given, build a reduced model: every other joint is
            locked at its neutral value and ``nq``/``nv`` count only these joints (and
            the floating base). May be passed positionally, as in
            ``RobotModel(path, ["j1", "j2"])``.
        floating_base: Add a free-flyer root joint named ``"root_joint"`` (q holds
            position [m] and a unit quaternion ``[x, y, z, w]``).
        package_dirs: Extra folders searched for ``package://`` meshes (before
            ``ROS_PACKAGE_PATH`` and the URDF's ancestor folders).
        srdf_path: SRDF whose ``<disable_collisions>`` pairs are excluded.
        load_visuals: Load ``<visual>`` geometry (skip it to load without its meshes).
        load_collisions: Load ``<collision>`` geometry.
        exact_collision_meshes: Keep triangle meshes exact instead of replacing them by
            their convex hulls (about 100x slower distance queries).

    Raises:
        RobotFileNotFound: ``urdf_path`` does not exist.
        MalformedDescription: The URDF or SRDF is invalid (the parser's message is kept).
        MeshNotFound: A mesh could not be resolved.
        JointNotFound: An actuated joint name is unknown.
    """

    def __init__(
        self,
        urdf_path: str | os.PathLike[str],
        actuated_joint_names: Sequence[str] | bool | None = None,
        floating_base: bool = False,
        *,
        package_dirs: Sequence[str | os.PathLike[str]] | str | None = None,
        srdf_path: str | os.PathLike[str] | None = None,
        load_visuals: bool = True,
        load_collisions: bool = True,
        exact_collision_meshes: bool = False,
    ) -> None:
        if isinstance(actuated_joint_names, bool):  # RobotModel(path, True): the 2-arg overload
            floating_base, actuated_joint_names = actuated_joint_names, None
        path = Path(urdf_path)
        text = loading.read_text(path)
        self._build(
            text,
            str(urdf_path),
            path.resolve().parent,
            actuated_joint_names,
            floating_base,
            package_dirs,
            srdf_path,
            load_visuals,
            load_collisions,
            exact_collision_meshes,
        )
        self._urdf_path = str(urdf_path)

    # -- alternative constructors ------------------------------------------------------------
    @classmethod
    def from_urdf_string(
        cls,
        urdf_xml: str,
        actuated_joint_names: Sequence[str] | bool | None = None,
        floating_base: bool = False,
        *,
        package_dirs: Sequence[str | os.PathLike[str]] | str | None = None,
        srdf_path: str | os.PathLike[str] | None = None,
        load_visuals: bool = True,
        load_collisions: bool = True,
        exact_collision_meshes: bool = False,
    ) -> RobotModel:
        """Build a model from URDF text; relative mesh paths resolve from the working folder.

        Arguments are those of :class:`RobotModel` (including the ``(text, True)`` overload).
        """
        if isinstance(actuated_joint_names, bool):
            floating_base, actuated_joint_names = actuated_joint_names, None
        self = cls.__new__(cls)
        self._build(
            urdf_xml,
            "<string>",
            None,
            actuated_joint_names,
            floating_base,
            package_dirs,
            srdf_path,
            load_visuals,
            load_collisions,
            exact_collision_meshes,
        )
        self._urdf_path = ""
        return self

    @classmethod
    def from_xacro(
        cls,
        xacro_path: str | os.PathLike[str],
        floating_base: bool = False,
        *,
        actuated_joint_names: Sequence[str] | None = None,
        package_dirs: Sequence[str | os.PathLike[str]] | str | None = None,
        srdf_path: str | os.PathLike[str] | None = None,
        load_visuals: bool = True,
        load_collisions: bool = True,
        exact_collision_meshes: bool = False,
        **xacro_args: object,
    ) -> RobotModel:
        """Build a model from a XACRO file, expanded with the ``xacro`` package.

        Args:
            xacro_path: XACRO file.
            floating_base: Add a free-flyer root joint.
            actuated_joint_names: Build a reduced model (see :class:`RobotModel`).
            package_dirs: Extra ``package://`` search folders.
            srdf_path: SRDF file with disabled collision pairs.
            load_visuals: Load visual geometry.
            load_collisions: Load collision geometry.
            exact_collision_meshes: Keep exact meshes.
            **xacro_args: XACRO arguments, e.g. ``link_length=0.5``.

        Raises:
            MalformedDescription: XACRO processing failed (its message is kept).
        """
        text = loading.process_xacro(xacro_path, xacro_args)
        self = cls.__new__(cls)
        self._build(
            text,
            str(xacro_path),
            Path(xacro_path).resolve().parent,
            actuated_joint_names,
            floating_base,
            package_dirs,
            srdf_path,
            load_visuals,
            load_collisions,
            exact_collision_meshes,
        )
        self._urdf_path = str(xacro_path)
        return self

    # -- construction ----------------------------------------------------------------------
    def _build(
        self,
        text: str,
        source: str,
        urdf_dir: Path | None,
        actuated_joint_names: Sequence[str] | None,
        floating_base: bool,
        package_dirs: Sequence[str | os.PathLike[str]] | str | None,
        srdf_path: str | os.PathLike[str] | None,
        load_visuals: bool,
        load_collisions: bool,
        exact_collision_meshes: bool,
    ) -> None:
        root = loading.parse_xml(text, source)
        if root.tag != "robot":
            raise MalformedDescription(source, f"root element is <{root.tag}>, expected <robot>")
        sections = [
            s for s, keep in (("visual", load_visuals), ("collision", load_collisions)) if keep
        ]
        loading.strip_sections(root, [s for s in ("visual", "collision") if s not in sections])
        loading.resolve_mesh_paths(root, source, urdf_dir, package_dirs, sections)
        xml = ET.tostring(root, encoding="unicode")

        try:
            if floating_base:
                model = pin.buildModelFromXML(
                    xml, pin.JointModelFreeFlyer(), "root_joint", mimic=True
                )
            else:
                model = pin.buildModelFromXML(xml, mimic=True)
            geoms = {}
            for section, kind in (("collision", pin.COLLISION), ("visual", pin.VISUAL)):
                if section in sections:
                    geoms[section] = pin.buildGeomFromUrdfString(model, xml, kind)
        except (RuntimeError, ValueError) as exc:
            raise MalformedDescription(source, str(exc)) from exc

        if actuated_joint_names is not None:
            model, geoms = self._reduce(model, geoms, actuated_joint_names)

        col = geoms.get("collision")
        if col is not None and not exact_collision_meshes:
            convexify(col)

        self._model = model
        self._source = source
        self._visual_model = geoms.get("visual")
        self._visual_data = pin.GeometryData(self._visual_model) if self._visual_model else None
        self._collision = CollisionModel(model, col) if col is not None and col.ngeoms else None
        self._collision_geom_model = col
        self._floating = bool(floating_base)
        self._base_placement = pin.SE3.Identity()
        self._base_children = self._capture_base_children()
        self._apply_default_limits()
        self._restrict_mimic_leaders(root)
        self._acceleration_limits = np.full(model.nv, DEFAULT_ACCELERATION_LIMIT)
        self._index_names()
        self._unit_blocks = self._find_unit_blocks()
        if srdf_path is not None:
            self.load_srdf(srdf_path)
        self._data = model.createData()
        self._dyn_data = model.createData()
        self._q = pin.neutral(model)
        self._zero_v = np.zeros(model.nv)
        self._zero_v.flags.writeable = False  # shared by every update without v
        self._v = self._zero_v
        self._moving = False
        self._refresh()

    def _reduce(
        self, model: pin.Model, geoms: dict[str, pin.GeometryModel], names: Sequence[str]
    ) -> tuple[pin.Model, dict[str, pin.GeometryModel]]:
        if isinstance(names, str):
            raise InvalidInput("actuated_joint_names must be a sequence of names, not a string")
        joint_names = list(model.names)[1:]
        # A mimic follower is no variable: it stays coupled to its leader when the leader
        # is kept, and is locked with it otherwise (Pinocchio cannot lock a leader alone).
        leaders = {}
        for j in range(1, model.njoints):
            if model.joints[j].shortname() == "JointModelMimic":
                iq = model.joints[j].extract().idx_q
                leaders[model.names[j]] = next(
                    model.names[k]
                    for k in range(1, model.njoints)
                    if model.joints[k].nq > 0 and model.joints[k].idx_q == iq
                )
        for n in names:
            if n not in joint_names:
                raise JointNotFound(n, joint_names)
            if n in leaders:
                raise InvalidInput(
                    f"joint {n!r} mimics {leaders[n]!r} and is not a variable; name its leader"
                )
        keep = set(names) | {"root_joint"} | {f for f, lead in leaders.items() if lead in names}
        lock = [model.getJointId(n) for n in joint_names if n not in keep]
        q0 = pin.neutral(model)
        if not geoms:
            return pin.buildReducedModel(model, lock, q0), geoms
        keys = list(geoms)
        reduced, reduced_geoms = pin.buildReducedModel(model, [geoms[k] for k in keys], lock, q0)
        return reduced, dict(zip(keys, reduced_geoms, strict=True))

    def _apply_default_limits(self) -> None:
        m = self._model
        # Pinocchio marks "unbounded" with the largest double; say inf, which every
        # consumer (samplers, velocity boxes) understands.
        lo, hi = m.lowerPositionLimit.copy(), m.upperPositionLimit.copy()
        lo[lo <= -_UNBOUNDED] = -np.inf
        hi[hi >= _UNBOUNDED] = np.inf
        m.lowerPositionLimit, m.upperPositionLimit = lo, hi
        vel = np.array(m.velocityLimit, dtype=float)
        vel[~np.isfinite(vel) | (vel <= 0)] = DEFAULT_VELOCITY_LIMIT
        eff = np.array(m.effortLimit, dtype=float)
        eff[~np.isfinite(eff) | (eff <= 0)] = DEFAULT_EFFORT_LIMIT
        if self._floating:  # the free-flyer is not actuated: no velocity or effort bound
            vel[:6] = np.inf
            eff[:6] = np.inf
        m.velocityLimit = vel
        m.effortLimit = eff

    def _restrict_mimic_leaders(self, root: ET.Element) -> None:
        """Shrink each leader joint's range so its mimic followers stay inside their limits.

        A follower obeys ``q_f = multiplier * q_l + offset``; both joints' ranges must hold,
        so the leader's range is intersected with the follower's mapped back through it.
        """
        m = self._model
        urdf_limits = {}
        for joint in root.iter("joint"):
            limit = joint.find("limit")
            if (
                joint.find("mimic") is not None
                and limit is not None
                and joint.get("type") != "continuous"
            ):
                urdf_limits[joint.get("name")] = (
                    float(limit.get("lower", "-inf")),
                    float(limit.get("upper", "inf")),
                )
        lo, hi = m.lowerPositionLimit.copy(), m.upperPositionLimit.copy()
        self._mimic = []
        for jid in range(1, m.njoints):
            if m.joints[jid].shortname() != "JointModelMimic":
                continue
            jm = m.joints[jid].extract()
            name, mult, off, iq = m.names[jid], float(jm.scaling), float(jm.offset), jm.idx_q
            self._mimic.append((name, mult, off, iq))
            if name in urdf_limits and mult != 0.0:
                a, b = ((v - off) / mult for v in urdf_limits[name])
                lo[iq] = max(lo[iq], min(a, b))
                hi[iq] = min(hi[iq], max(a, b))
                if lo[iq] > hi[iq]:
                    raise MalformedDescription(
                        self._source, f"mimic joint {name!r}: no leader value keeps both in limits"
                    )
        m.lowerPositionLimit, m.upperPositionLimit = lo, hi

    def _index_names(self) -> None:
        m = self._model
        rank = {pin.JOINT: 0, pin.FIXED_JOINT: 1, pin.BODY: 2, pin.OP_FRAME: 3, pin.SENSOR: 3}
        ids: dict[str, int] = {}
        for fid, f in enumerate(m.frames):
            prev = ids.get(f.name)
            if prev is None or rank.get(f.type, 0) >= rank.get(m.frames[prev].type, 0):
                ids[f.name] = fid
        self._frame_ids = ids
        self._joint_ids = {m.names[j]: j for j in range(1, m.njoints)}

    def _find_unit_blocks(self) -> list[tuple[str, int, int]]:
        """``(joint, first q index, size)`` of every q block that must have unit norm."""
        m = self._model
        blocks = []
        for j in range(1, m.njoints):
            kind, i = m.joints[j].shortname(), m.joints[j].idx_q
            if kind in _CONTINUOUS:
                blocks.append((m.names[j], i, 2))
            elif kind in _QUATERNION_JOINTS:
                blocks.append((m.names[j], i + _QUATERNION_JOINTS[kind], 4))
        return blocks

    def _capture_base_children(self) -> dict[str, list[tuple[int, pin.SE3]]]:
        m = self._model
        out: dict[str, list[tuple[int, pin.SE3]]] = {
            "joints": [
                (j, pin.SE3(m.jointPlacements[j])) for j in range(1, m.njoints) if m.parents[j] == 0
            ],
            "frames": [
                (f, pin.SE3(m.frames[f].placement))
                for f in range(1, len(m.frames))
                if m.frames[f].parentJoint == 0
            ],
        }
        for key, gm in (("collision", self._collision_geom_model), ("visual", self._visual_model)):
            if gm is not None:
                out[key] = [
                    (g, pin.SE3(o.placement))
                    for g, o in enumerate(gm.geometryObjects)
                    if o.parentJoint == 0
                ]
        return out

    # -- properties ------------------------------------------------------------------------
    @property
    def model(self) -> pin.Model:
        """The underlying Pinocchio model (shared; modify with care)."""
        return self._model

    @property
    def data(self) -> pin.Data:
        """Pinocchio data holding the kinematics of the last :meth:`update_kinematics`."""
        return self._data

    @property
    def nq(self) -> int:
        """Number of configuration variables."""
        return self._model.nq

    @property
    def nv(self) -> int:
        """Number of velocity variables (degrees of freedom)."""
        return self._model.nv

    @property
    def is_floating_base(self) -> bool:
        """Whether the robot has a free-flyer root joint."""
        return self._floating

    @property
    def urdf_path(self) -> str:
        """Path of the description file (empty for a model built from a string)."""
        return self._urdf_path

    @property
    def collision_model(self) -> pin.GeometryModel | None:
        """Collision geometry model (``None`` without collision geometry)."""
        return self._collision.geom_model if self._collision else None

    @property
    def collision_data(self) -> pin.GeometryData | None:
        """Collision geometry data (``None`` without collision geometry)."""
        return self._collision.geom_data if self._collision else None

    @property
    def visual_model(self) -> pin.GeometryModel | None:
        """Visual geometry model (``None`` when visuals were not loaded)."""
        return self._visual_model

    @property
    def visual_data(self) -> pin.GeometryData | None:
        """Visual geometry data (``None`` when visuals were not loaded)."""
        return self._visual_data

    @property
    def controlled_joint_names(self) -> list[str]:
        """Names of the joints that are free variables (not mimic followers, not the base)."""
        m = self._model
        return [
            m.names[j]
            for j in range(1, m.njoints)
            if m.joints[j].nv > 0 and m.names[j] != "root_joint"
        ]

    @property
    def controlled_joint_indices(self) -> dict[str, int]:
        """Map from controlled joint name to its first index in the velocity vector."""
        m = self._model
        return {n: m.joints[m.getJointId(n)].idx_v for n in self.controlled_joint_names}

    @property
    def mimic_joints(self) -> list[tuple[str, str, float, float]]:
        """Coupled joints as ``(follower, leader, multiplier, offset)``: q_f = m q_l + offset."""
        m = self._model
        out = []
        for name, mult, off, idx_q in self._mimic:
            leader = next(
                m.names[j]
                for j in range(1, m.njoints)
                if m.joints[j].nq > 0 and m.joints[j].idx_q == idx_q
            )
            out.append((name, leader, mult, off))
        return out

    def __repr__(self) -> str:
        name = self._model.name or Path(self._source).stem
        return (
            f"RobotModel({name!r}, nq={self.nq}, nv={self.nv}, floating_base={self._floating}, "
            f"frames={len(self._model.frames)}, collision_pairs="
            f"{len(self._collision.geom_model.collisionPairs) if self._collision else 0})"
        )

    # -- names and indices -----------------------------------------------------------------
    def get_frame_names(self) -> list[str]:
        """Names of all frames (links, joints, fixed frames, added tool frames)."""
        return list(self._frame_ids)

    def get_joint_names(self) -> list[str]:
        """Names of all joints, excluding Pinocchio's ``universe``."""
        return list(self._joint_ids)

    def has_frame(self, frame_name: str) -> bool:
        """Whether a frame of that name exists."""
        return frame_name in self._frame_ids

    def has_joint(self, joint_name: str) -> bool:
        """Whether a joint of that name exists."""
        return joint_name in self._joint_ids

    def get_frame_id(self, frame_name: str) -> int:
        """Pinocchio frame index of ``frame_name``.

        Raises:
            FrameNotFound: Unknown name (the error lists the closest names).
        """
        try:
            return self._frame_ids[frame_name]
        except (KeyError, TypeError):
            raise FrameNotFound(str(frame_name), self._frame_ids) from None

    def _jid(self, joint_name: str) -> int:
        try:
            return self._joint_ids[joint_name]
        except (KeyError, TypeError):
            raise JointNotFound(str(joint_name), self._joint_ids) from None

    def get_joint_id(self, joint_name: str) -> int:
        """Joint index, 0-based, excluding the ``universe`` joint (Pinocchio's id minus one)."""
        return self._jid(joint_name) - 1

    def get_joint_config_index(self, joint_name: str) -> int:
        """First index of the joint in the configuration vector q."""
        return self._model.joints[self._jid(joint_name)].idx_q

    def get_joint_config_size(self, joint_name: str) -> int:
        """Number of configuration variables of the joint (2 for continuous, 0 for mimic)."""
        return self._model.joints[self._jid(joint_name)].nq

    def get_joint_velocity_index(self, joint_name: str) -> int:
        """First index of the joint in the velocity vector v."""
        return self._model.joints[self._jid(joint_name)].idx_v

    def get_joint_velocity_size(self, joint_name: str) -> int:
        """Number of velocity variables of the joint (0 for a mimic follower)."""
        return self._model.joints[self._jid(joint_name)].nv

    # -- frames and base -------------------------------------------------------------------
    def add_frame(self, name: str, parent_frame: str, placement: object) -> int:
        """Add a named frame rigidly attached to ``parent_frame`` (a tool / TCP frame).

        Args:
            name: New frame name (must be unused).
            parent_frame: Existing frame the new one is fixed to.
            placement: Pose of the new frame in ``parent_frame`` (SE3 or 4x4) [m].

        Returns:
            The new frame's index.

        Raises:
            InvalidInput: ``name`` already exists.
            FrameNotFound: ``parent_frame`` is unknown.
        """
        if name in self._frame_ids:
            raise InvalidInput(f"frame {name!r} already exists")
        pid = self.get_frame_id(parent_frame)
        T = as_se3(placement, "placement")
        parent = self._model.frames[pid]
        frame = pin.Frame(name, parent.parentJoint, pid, parent.placement * T, pin.OP_FRAME)
        fid = self._model.addFrame(frame, False)
        if parent.parentJoint == 0:
            # Keep the base re-mounting consistent for frames fixed to the world.
            unmounted = self._base_placement.inverse() * self._model.frames[fid].placement
            self._base_children["frames"].append((fid, unmounted))
        self._frame_ids[name] = fid
        self._data = self._model.createData()
        self._dyn_data = self._model.createData()
        self._refresh()
        return fid

    @property
    def base_placement(self) -> pin.SE3:
        """Pose of the robot's root link in the world, ``T_world_root`` (fixed base only)."""
        return pin.SE3(self._base_placement)

    def set_base_placement(self, placement: object) -> None:
        """Mount a fixed-base robot at ``T_world_root``; every pose and Jacobian follows.

        Args:
            placement: SE3 or 4x4 pose of the root link in the world [m].

        Raises:
            InvalidInput: The robot has a floating base (its pose is part of q).
        """
        if self._floating:
            raise InvalidInput("a floating-base robot's placement is its configuration q[:7]")
        T = as_se3(placement, "placement")
        m = self._model
        for j, orig in self._base_children["joints"]:
            m.jointPlacements[j] = T * orig
        for f, orig in self._base_children["frames"]:
            m.frames[f].placement = T * orig
        for key, gm in (("collision", self._collision_geom_model), ("visual", self._visual_model)):
            for g, orig in self._base_children.get(key, []):
                gm.geometryObjects[g].placement = T * orig
        self._base_placement = pin.SE3(T)
        self._refresh()

    # -- configuration checks ----------------------------------------------------------------
    def _check_q(self, q: object, what: str = "q") -> np.ndarray:
        qv = _validate.vector(q, self._model.nq, what)
        # Quaternions and continuous joints' (cos, sin) pairs must be unit: Pinocchio builds
        # rotations from them as they are, so an off-unit block gives a scaled "rotation".
        copied = False
        for joint, i, n in self._unit_blocks:
            norm = float(np.linalg.norm(qv[i : i + n]))
            if norm < 1e-9:
                part = "quaternion" if n == 4 else "(cos, sin) pair"
                raise InvalidInput(
                    f"{what}: {part} q[{i}:{i + n}] of joint {joint!r} has zero norm"
                )
            if abs(norm - 1.0) > 1e-12:
                if not copied:
                    qv, copied = qv.copy(), True
                qv[i : i + n] /= norm
        return qv

    def _check_v(self, v: object, what: str = "v") -> np.ndarray:
        return _validate.vector(v, self._model.nv, what)

    # -- kinematics --------------------------------------------------------------------------
    def update_configuration(self, q: object) -> None:
        """Set the configuration and run forward kinematics (see :meth:`update_kinematics`)."""
        self.update_kinematics(q)

    def update_kinematics(self, q: object, v: object | None = None) -> None:
        """Set q (and optionally v) and run one Pinocchio kinematics pass.

        Computes joint placements, joint Jacobians and frame placements; with ``v``
        also joint velocities. The CoM and collision distances are computed later, on
        first request. On bad input nothing is changed.

        Args:
            q: Configuration, size ``nq``. Quaternions (floating base) and the
                ``(cos, sin)`` pairs of continuous joints are normalized.
            v: Velocity, size ``nv`` (zero when omitted or empty).

        Raises:
            ShapeError: Wrong size.
            NonFiniteInput: NaN or inf entries.
            InvalidInput: Zero-norm quaternion or ``(cos, sin)`` pair.
        """
        qv = self._check_q(q)
        if v is None or (hasattr(v, "__len__") and len(v) == 0):  # type: ignore[arg-type]
            self._q = qv.copy()
            self._v = self._zero_v
            self._moving = False
        else:
            vv = self._check_v(v)
            self._q = qv.copy()
            self._v = vv.copy()
            self._moving = bool(vv.any())
        self._refresh()

    def _refresh(self) -> None:
        m, d = self._model, self._data
        if self._moving:
            pin.forwardKinematics(m, d, self._q, self._v)
            pin.computeJointJacobians(m, d)
        else:
            pin.computeJointJacobians(m, d, self._q)
        pin.updateFramePlacements(m, d)
        self._com_valid = False
        self._distances: np.ndarray | None = None

    def get_current_configuration(self) -> np.ndarray:
        """The configuration of the last update (a copy)."""
        return self._q.copy()

    def get_current_velocity(self) -> np.ndarray:
        """The velocity of the last update (a copy; zero if none was given)."""
        return self._v.copy()

    def get_frame_pose(self, frame_name: str) -> pin.SE3:
        """World pose ``T_world_frame`` of a frame at the current configuration (a copy)."""
        return pin.SE3(self._data.oMf[self.get_frame_id(frame_name)])

    def get_frame_jacobian(
        self, frame_name: str, reference_frame: object = pin.LOCAL_WORLD_ALIGNED
    ) -> np.ndarray:
        """6 x nv Jacobian of a frame at the current configuration, ``[linear; angular]``.

        Args:
            frame_name: Frame name.
            reference_frame: ``LOCAL`` (twist in the frame), ``WORLD`` (spatial twist at
                the world origin) or ``LOCAL_WORLD_ALIGNED`` (frame origin velocity and
                angular velocity in world axes, the default); enum or name.
        """
        fid = self.get_frame_id(frame_name)
        rf = _reference_frame(reference_frame)
        if self._model.nv == 0:  # nothing moves; Pinocchio segfaults on an empty Jacobian
            return np.zeros((6, 0))
        return pin.getFrameJacobian(self._model, self._data, fid, rf)

    # -- limits ------------------------------------------------------------------------------
    def get_joint_limits(self) -> tuple[np.ndarray, np.ndarray]:
        """Position limits ``(lower, upper)`` in configuration space (size nq) [rad or m]."""
        return self._model.lowerPositionLimit.copy(), self._model.upperPositionLimit.copy()

    def set_joint_limits(self, lower: object, upper: object) -> None:
        """Set position limits (size nq, ``lower <= upper``, inf allowed) [rad or m]."""
        lo, hi = _validate.bounds(lower, upper, self.nq, "joint limits")
        self._model.lowerPositionLimit = lo.copy()
        self._model.upperPositionLimit = hi.copy()

    def get_velocity_limits(self) -> np.ndarray:
        """Velocity limits (size nv) [rad/s or m/s]; inf for a floating base."""
        return self._model.velocityLimit.copy()

    def set_velocity_limits(self, velocity_limits: object) -> None:
        """Set velocity limits (size nv, positive) [rad/s or m/s]."""
        self._model.velocityLimit = self._positive(velocity_limits, "velocity_limits")

    def get_effort_limits(self) -> np.ndarray:
        """Effort limits (size nv) [N m or N]."""
        return self._model.effortLimit.copy()

    def set_effort_limits(self, effort_limits: object) -> None:
        """Set effort limits (size nv, positive) [N m or N]."""
        self._model.effortLimit = self._positive(effort_limits, "effort_limits")

    def get_acceleration_limits(self) -> np.ndarray:
        """Acceleration limits (size nv) [rad/s^2 or m/s^2]; URDF has none, so defaults."""
        return self._acceleration_limits.copy()

    def set_acceleration_limits(self, accel_limits: object) -> None:
        """Set acceleration limits (size nv, positive) [rad/s^2 or m/s^2]."""
        self._acceleration_limits = self._positive(accel_limits, "accel_limits")

    def _positive(self, x: object, what: str) -> np.ndarray:
        arr = np.asarray(x, dtype=float)
        if arr.ndim != 1 or arr.shape[0] != self.nv:
            raise ShapeError(what, (self.nv,), arr.shape)
        if np.isnan(arr).any() or (arr <= 0).any():
            raise InvalidInput(f"{what} must be positive (inf allowed), got {arr.tolist()}")
        return arr.copy()

    # -- centre of mass ------------------------------------------------------------------
    def _ensure_com(self) -> None:
        if not self._com_valid:
            pin.jacobianCenterOfMass(self._model, self._data, False)
            self._com_valid = True

    def get_com_position(self) -> np.ndarray:
        """World position of the centre of mass at the current configuration [m]."""
        self._ensure_com()
        return self._data.com[0].copy()

    def get_com_jacobian(self) -> np.ndarray:
        """3 x nv Jacobian of the centre of mass in world axes [m/rad or m/m]."""
        self._ensure_com()
        return self._data.Jcom.copy()

    def get_com_velocity(self) -> np.ndarray:
        """Velocity of the centre of mass, ``J_com v``, for the current v [m/s]."""
        self._ensure_com()
        return self._data.Jcom @ self._v

    def get_total_mass(self) -> float:
        """Total mass of the robot [kg]."""
        return float(pin.computeTotalMass(self._model))

    # -- dynamics (separate Data; the kinematics cache is untouched) -------------------------
    def rnea(self, q: object, v: object, a: object) -> np.ndarray:
        """Inverse dynamics ``tau = M(q) a + C(q, v) v + g(q)`` (RNEA) [N m or N]."""
        return pin.rnea(
            self._model, self._dyn_data, self._check_q(q), self._check_v(v), self._check_v(a, "a")
        ).copy()

    def compute_mass_matrix(self, q: object) -> np.ndarray:
        """Joint-space inertia matrix M(q) (CRBA), symmetric positive definite, nv x nv."""
        M = pin.crba(self._model, self._dyn_data, self._check_q(q))
        return np.triu(M) + np.triu(M, 1).T

    def compute_generalized_gravity(self, q: object) -> np.ndarray:
        """Gravity torques g(q), RNEA with zero velocity and acceleration [N m or N]."""
        return pin.computeGeneralizedGravity(self._model, self._dyn_data, self._check_q(q)).copy()

    def compute_coriolis(self, q: object, v: object) -> np.ndarray:
        """Coriolis and centrifugal torques ``C(q, v) v`` [N m or N]."""
        qv, vv = self._check_q(q), self._check_v(v)
        nle = pin.nonLinearEffects(self._model, self._dyn_data, qv, vv).copy()
        return nle - pin.computeGeneralizedGravity(self._model, self._dyn_data, qv)

    def get_gravity(self) -> np.ndarray:
        """Gravity vector in the world [m/s^2] (default ``[0, 0, -9.81]``)."""
        return self._model.gravity.linear.copy()

    def set_gravity(self, gravity: object) -> None:
        """Set the gravity vector in the world [m/s^2]."""
        g = _validate.vector(gravity, 3, "gravity")
        self._model.gravity = pin.Motion(g, np.zeros(3))

    # -- Lie group -----------------------------------------------------------------------------
    def integrate(self, q: object, v: object, dt: float = 1.0) -> np.ndarray:
        """Configuration reached from q along velocity v for time dt (exponential map).

        Args:
            q: Configuration (size nq).
            v: Velocity (size nv) [units/s], or a displacement with ``dt = 1``.
            dt: Duration [s].
        """
        step = float(dt)
        if not np.isfinite(step):
            raise NonFiniteInput("dt", [0])
        return pin.integrate(self._model, self._check_q(q), self._check_v(v) * step)

    def difference(self, q0: object, q1: object) -> np.ndarray:
        """Tangent vector v (size nv) with ``integrate(q0, v) == q1``."""
        return pin.difference(self._model, self._check_q(q0, "q0"), self._check_q(q1, "q1"))

    def normalize(self, q: object) -> np.ndarray:
        """Project q onto the configuration manifold (re-normalize quaternions, cos/sin pairs).

        Raises:
            InvalidInput: A quaternion or ``(cos, sin)`` pair has zero norm (no direction).
        """
        # pin.normalize returns a normalized copy; it does not modify its argument.
        return pin.normalize(self._model, self._check_q(q))

    def neutral_configuration(self) -> np.ndarray:
        """The neutral configuration (zero joints, identity base quaternion)."""
        return pin.neutral(self._model)

    def random_configuration(self, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """A configuration drawn uniformly inside the joint limits.

        Bounded joints are uniform in their range; continuous joints uniform in angle;
        a floating base gets a uniform random orientation and a position inside its
        limits, or within ±:data:`DEFAULT_BASE_SAMPLING_RANGE` where those are infinite.

        Args:
            rng: NumPy generator or seed, for reproducible draws.
        """
        rng = np.random.default_rng(rng)
        m = self._model
        lo = m.lowerPositionLimit.copy()
        hi = m.upperPositionLimit.copy()
        q = np.empty(m.nq)
        for j in range(1, m.njoints):
            jm = m.joints[j]
            if jm.nq == 0:
                continue
            i, n, kind = jm.idx_q, jm.nq, jm.shortname()
            if kind in _CONTINUOUS:
                a = rng.uniform(-np.pi, np.pi)
                q[i : i + 2] = (np.cos(a), np.sin(a))
            elif kind in _QUATERNION_JOINTS:
                t = _QUATERNION_JOINTS[kind]
                if t:
                    tl = np.where(
                        np.isfinite(lo[i : i + t]), lo[i : i + t], -DEFAULT_BASE_SAMPLING_RANGE
                    )
                    th = np.where(
                        np.isfinite(hi[i : i + t]), hi[i : i + t], DEFAULT_BASE_SAMPLING_RANGE
                    )
                    q[i : i + t] = rng.uniform(tl, th)
                quat = rng.normal(size=4)
                q[i + t : i + n] = quat / np.linalg.norm(quat)
            elif jm.nq == jm.nv:
                bl, bh = lo[i : i + n], hi[i : i + n]
                if not (np.isfinite(bl).all() and np.isfinite(bh).all()):
                    raise InvalidInput(f"joint {m.names[j]!r} has infinite limits; set finite ones")
                q[i : i + n] = rng.uniform(bl, bh)
            else:  # planar and other manifold joints: Pinocchio's own sampler
                sample = pin.randomConfiguration(
                    m,
                    np.nan_to_num(lo, posinf=1.0, neginf=-1.0),
                    np.nan_to_num(hi, posinf=1.0, neginf=-1.0),
                )
                q[i : i + n] = sample[i : i + n]
        return q

    # -- collision ---------------------------------------------------------------------------
    def has_collision_geometry(self) -> bool:
        """Whether the robot has collision geometry."""
        return self._collision is not None

    def load_srdf(self, srdf_path: str | os.PathLike[str]) -> int:
        """Exclude the ``<disable_collisions>`` pairs of an SRDF file.

        Returns:
            The number of geometry pairs removed.
        """
        text = loading.read_text(srdf_path)
        pairs = loading.parse_srdf_disabled_pairs(text, str(srdf_path))
        if self._collision is None:
            return 0
        self._distances = None  # the pair list changes: cached distances no longer match it
        return self._collision.exclude_pairs(pairs, strict=False)

    def apply_collision_exclusions(self, collision_pairs: Sequence[tuple[str, str]]) -> None:
        """Disable collision pairs named by link or geometry names (SRDF style).

        Raises:
            CollisionGeometryNotFound: A name has no collision geometry.
        """
        pairs = validate_pairs(collision_pairs)
        if self._collision is None:
            if pairs:  # no geometry at all: every name is unknown
                raise CollisionGeometryNotFound(pairs[0][0], [])
            return
        self._collision.exclude_pairs(pairs)
        self._distances = None

    def reset_collision_pairs(self) -> None:
        """Re-activate all pairs between non-adjacent links (undo every exclusion)."""
        if self._collision is not None:
            self._collision.reset_pairs()
            self._distances = None

    def get_collision_geometry_names(self) -> list[str]:
        """Names of the collision geometries."""
        if self._collision is None:
            return []
        return [o.name for o in self._collision.geom_model.geometryObjects]

    def get_collision_pair_names(self) -> list[tuple[str, str]]:
        """Active collision pairs as ``(geometry_a, geometry_b)`` names."""
        return self._collision.pair_names() if self._collision else []

    def get_collision_pair_links(self) -> list[tuple[str, str]]:
        """Active collision pairs as ``(link_a, link_b)`` names."""
        return self._collision.pair_links() if self._collision else []

    def get_collision_geometries(self) -> list[dict[str, object]]:
        """Every collision geometry as a dict.

        Keys: name, parent_frame, parent_joint, placement, geometry_type, params.
        """
        return self._collision.geometries() if self._collision else []

    def compute_collision_distances(self) -> list[float]:
        """Signed distance [m] of every active pair at the current configuration.

        Negative values are penetration depths. Computed once per configuration.
        """
        return self._collision_distances().tolist()

    def _collision_distances(self) -> np.ndarray:
        if self._collision is None:
            return np.zeros(0)
        if self._distances is None:
            self._distances = self._collision.distances(self._data)
        return self._distances

    def compute_collision_witness_points(self) -> np.ndarray:
        """Nearest points of each active pair, shape (pairs, 2, 3), world frame [m]."""
        if self._collision is None:
            return np.zeros((0, 2, 3))
        self._collision_distances()
        return self._collision.nearest_points()

    def compute_min_collision_distance(self) -> float:
        """Smallest signed pair distance [m]; inf without collision geometry or pairs."""
        d = self._collision_distances()
        return float(d.min()) if d.size else float("inf")

    def check_collision(self, min_distance: float = 0.0) -> bool:
        """Whether any active pair is at distance <= ``min_distance`` [m]."""
        return self.compute_min_collision_distance() <= float(min_distance)
