"""RobotModel: a robot loaded from URDF/XACRO into Pinocchio (a shareable description).

A :class:`RobotModel` is a description: the Pinocchio model, the geometry, limits, names
and joint kinds. Any number of solvers may share one, across threads; each solver owns
its own :class:`~stackik.model.kinematics.Kinematics` (Pinocchio ``Data``) and collision
state.

For the EmbodiK-style convenience API (``update_kinematics``, ``get_frame_pose``,
``compute_collision_distances``, ...) the robot also keeps one kinematics cache and one
collision state of its own. Each of those calls is atomic (a lock), but they share one
"current configuration": a thread that needs its own configuration uses a solver, or
its own cache from :meth:`RobotModel.create_kinematics`.

The model is split by concern inside this package: :mod:`~stackik.model.loading`
(files, XACRO, meshes, SRDF), :mod:`~stackik.model.building` (Pinocchio models, limits,
mimic joints), :mod:`~stackik.model.joints` (joint kinds), :mod:`~stackik.model.kinematics`
(the kinematics cache), :mod:`~stackik.model.dynamics` and
:mod:`~stackik.model.collision`.
"""

from __future__ import annotations

import math
import os
import pickle
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from .. import _pickling, _validate
from ..errors import (
    CollisionGeometryNotFound,
    FrameNotFound,
    InvalidInput,
    JointNotFound,
    NonFiniteInput,
    ShapeError,
)
from ..spatial import SE3Pose, as_se3
from . import building, loading
from .building import (
    DEFAULT_ACCELERATION_LIMIT,
    DEFAULT_EFFORT_LIMIT,
    DEFAULT_VELOCITY_LIMIT,
)
from .collision import CollisionModel, CollisionState, validate_pairs
from .dynamics import Dynamics
from .exclusions import CollisionExclusionReport, collision_exclusions
from .joints import (
    DEFAULT_BASE_SAMPLING_RANGE,
    JointInfo,
    JointKind,
    joint_table,
    sample_configuration,
    unit_blocks,
)
from .kinematics import Kinematics
from .mimic import couple
from .validation import check_srdf
from .world import World, allowed_link_names

if TYPE_CHECKING:
    from .pipeline import CollisionPipeline, GeometrySet

__all__ = [
    "DEFAULT_ACCELERATION_LIMIT",
    "DEFAULT_BASE_SAMPLING_RANGE",
    "DEFAULT_EFFORT_LIMIT",
    "DEFAULT_VELOCITY_LIMIT",
    "ReferenceFrame",
    "RobotModel",
]

ReferenceFrame = pin.ReferenceFrame
"""Pinocchio's reference frames for Jacobians: ``LOCAL``, ``WORLD``, ``LOCAL_WORLD_ALIGNED``."""

#: Largest magnitude accepted in a configuration or tangent vector [rad, m, rad/s, m/s,
#: rad/s^2 ...]: nothing physical is larger, and larger values overflow the dynamics.
MAX_MAGNITUDE = _validate.MAX_MAGNITUDE

_REFERENCE_FRAMES = {
    "local": pin.LOCAL,
    "world": pin.WORLD,
    "local_world_aligned": pin.LOCAL_WORLD_ALIGNED,
}


def as_reference_frame(rf: object) -> pin.ReferenceFrame:
    """A :class:`ReferenceFrame` from the enum itself or its lower-case name.

    Raises:
        InvalidInput: Anything else.
    """
    if isinstance(rf, pin.ReferenceFrame):
        return rf
    if isinstance(rf, str) and rf.lower() in _REFERENCE_FRAMES:
        return _REFERENCE_FRAMES[rf.lower()]
    raise InvalidInput(
        f"reference_frame must be a ReferenceFrame or one of {sorted(_REFERENCE_FRAMES)}, "
        f"got {rf!r}"
    )


def _frame_ids(model: pin.Model) -> dict[str, int]:
    """Frame name -> index; when names repeat, the most specific frame type wins."""
    rank = {pin.JOINT: 0, pin.FIXED_JOINT: 1, pin.BODY: 2, pin.OP_FRAME: 3, pin.SENSOR: 3}
    ids: dict[str, int] = {}
    for fid, f in enumerate(model.frames):
        prev = ids.get(f.name)
        if prev is None or rank.get(f.type, 0) >= rank.get(model.frames[prev].type, 0):
            ids[f.name] = fid
    return ids


class RobotModel:
    """A robot kinematic and dynamic model on Pinocchio, with collision geometry.

    Args:
        urdf_path: URDF file.
        actuated_joint_names: When given, build a reduced model: every other joint is
            locked at its neutral value and ``nq``/``nv`` count only these joints (and
            the floating base). May be passed positionally, as in
            ``RobotModel(path, ["j1", "j2"])``.
        floating_base: Add a free-flyer root joint named ``"root_joint"`` (q holds
            position [m] and a unit quaternion ``[x, y, z, w]``, scalar last).
        package_dirs: Extra folders searched for ``package://`` meshes (before
            ``ROS_PACKAGE_PATH`` and the URDF's ancestor folders).
        srdf_path: SRDF whose ``<disable_collisions>`` pairs are excluded.
        load_visuals: Load ``<visual>`` geometry (skip it to load without its meshes).
        load_collisions: Load ``<collision>`` geometry.
        exact_collision_meshes: Keep triangle meshes exact instead of replacing them by
            their convex hulls (about 100x slower distance queries).
        mimic: Layout of URDF ``<mimic>`` joints in q. ``"keep"`` (default, EmbodiK's
            layout): a follower keeps its q/v entries, so q is laid out as in
            Pinocchio's plain model of the file (and EmbodiK's), and the solvers
            solve every step in the coupling's null space (a
            :class:`~stackik.constraints.MimicConstraint`): followers move exactly with
            their leaders. ``"fold"`` (opt-in): a follower has no q/v entries of its own
            (``nq``/``nv`` exclude it), so q holds only free variables (no coupling
            to keep, smaller vectors, a serial-chain global IK through the follower).
            See ``docs/robot_model.md``.
        strict: Refuse what stackik can work around but is wrong all the same: an
            inertia no rigid body has (a negative principal moment, or principal
            moments breaking the triangle inequality ``I1 + I2 >= I3``), and SRDF
            groups, passive joints and virtual joints naming links or joints the robot
            lacks. Some published descriptions have such faults (about twenty of
            example-robot-data's, e.g. PR2's and TIAGo's inertias, HyQ's and Z1's SRDF
            groups): ``False`` loads them as written (the dynamics are then not a rigid
            body's; stackik uses only an SRDF's ``<disable_collisions>``, which are
            checked either way).

    Raises:
        RobotFileNotFound: ``urdf_path`` does not exist.
        MalformedDescription: The URDF or SRDF is invalid (the parser's message is kept).
        MeshNotFound: A mesh could not be resolved.
        JointNotFound: An actuated joint name is unknown.
        InvalidInput: ``mimic`` is neither ``"fold"`` nor ``"keep"``; an argument of the
            wrong type (a path that is not a ``str`` or ``os.PathLike``, a flag that is
            not a bool, names that are not strings).
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
        mimic: str = "keep",
        strict: bool = True,
    ) -> None:
        if isinstance(actuated_joint_names, bool):  # RobotModel(path, True): the 2-arg overload
            floating_base, actuated_joint_names = actuated_joint_names, None
        path = loading.check_path(urdf_path, "urdf_path")
        text = loading.read_text(path)
        self._setup(
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
            mimic,
            strict,
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
        mimic: str = "keep",
        strict: bool = True,
    ) -> RobotModel:
        """Build a model from URDF text; relative mesh paths resolve from the working folder.

        Arguments are those of :class:`RobotModel` (including the ``(text, True)`` overload).
        """
        if isinstance(actuated_joint_names, bool):
            floating_base, actuated_joint_names = actuated_joint_names, None
        self = cls.__new__(cls)
        self._setup(
            loading.check_text(urdf_xml, "urdf_xml"),
            "<string>",
            None,
            actuated_joint_names,
            floating_base,
            package_dirs,
            srdf_path,
            load_visuals,
            load_collisions,
            exact_collision_meshes,
            mimic,
            strict,
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
        mimic: str = "keep",
        strict: bool = True,
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
            mimic: Layout of mimic joints, ``"fold"`` or ``"keep"`` (see
                :class:`RobotModel`).
            strict: Refuse inertias no rigid body has and SRDF entries naming
                unknown links or joints (see :class:`RobotModel`).
            **xacro_args: XACRO arguments, e.g. ``link_length=0.5``.

        Raises:
            MalformedDescription: XACRO processing failed (its message is kept).
        """
        text = loading.process_xacro(loading.check_path(xacro_path, "xacro_path"), xacro_args)
        self = cls.__new__(cls)
        self._setup(
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
            mimic,
            strict,
        )
        self._urdf_path = str(xacro_path)
        return self

    # -- construction ----------------------------------------------------------------------
    def _setup(
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
        mimic: str,
        strict: bool = True,
    ) -> None:
        built = building.build(
            text,
            source,
            urdf_dir,
            actuated_joint_names,
            floating_base,
            package_dirs,
            load_visuals,
            load_collisions,
            exact_collision_meshes,
            mimic,
            strict,
        )
        model = built.model
        self._model = model
        self._source = source
        self._floating = _validate.flag(floating_base, "floating_base")
        self._visual_model = built.visual
        self._visual_data = pin.GeometryData(built.visual) if built.visual else None
        col = built.collision
        self._collision_geom_model = col
        self._collision = CollisionModel(model, col) if col is not None and col.ngeoms else None
        self._mimic = built.mimic
        self._mimic_layout = built.mimic_layout
        self._links = built.links
        self._strict = _validate.flag(strict, "strict")
        self._urdf_joints = built.joints
        self._acceleration_limits = np.full(model.nv, DEFAULT_ACCELERATION_LIMIT)
        self._acceleration_view = _validate.read_only_view(self._acceleration_limits)
        self._base_placement = pin.SE3.Identity()
        self._base_children = self._capture_base_children()
        self._index()
        self.revision = 0
        self._lock = threading.RLock()
        if srdf_path is not None:
            self.load_srdf(srdf_path)
        self._dynamics = Dynamics(model)
        self._kin = Kinematics(self)
        self._collision_state = CollisionState(self._collision) if self._collision else None
        self._distances: tuple[int, int, np.ndarray] | None = None
        self._pair_ranges: tuple[tuple, np.ndarray, np.ndarray] | None = None
        self._world_check: tuple[CollisionPipeline, GeometrySet | None, np.ndarray] | None = None
        self._world = World()
        self._bind_world(self._world)

    # -- pickling: a description for worker processes ----------------------------------------
    _TRANSIENT = (
        "_lock",
        "_visual_data",
        "_kin",
        "_collision_state",
        "_dynamics",
        "_distances",
        "_world_check",
    )

    def __getstate__(self) -> dict[str, Any]:
        """The description (Pinocchio models pickle exactly); caches are rebuilt."""
        with self._lock:
            state = _pickling.without(self.__dict__, self._TRANSIENT)
            state["_q_own"] = self._kin.q.copy()
            state["_q_stamp"] = self._kin.stamp  # (which update came later: see evaluate_*)
            return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        q = state.pop("_q_own")
        stamp = int(state.pop("_q_stamp", 0))
        self.__dict__.update(state)
        self._lock = threading.RLock()
        vis = self._visual_model
        self._visual_data = pin.GeometryData(vis) if vis is not None else None
        self._dynamics = Dynamics(self._model)
        self._kin = Kinematics(self, q)
        self._kin.keep_stamp(stamp)
        col = self._collision
        self._collision_state = CollisionState(col) if col is not None else None
        self._distances = None
        self._world_check = None
        self._bind_world(self._world)

    def without_visuals(self) -> RobotModel:
        """An independent copy of the robot without its visual geometry.

        What worker processes need: the kinematics, limits, frames, base placement,
        collision geometry and active pairs are copied exactly (the copy computes
        bit-identical poses, Jacobians and distances), and the ``<visual>`` meshes, which
        no solver reads, are left out (:attr:`visual_model` is None). Pickling the copy
        costs a fraction of pickling the robot when it has visual meshes.
        """
        with self._lock:
            state = self.__getstate__()
        state["_visual_model"] = None
        state["_base_children"] = {
            k: v for k, v in state["_base_children"].items() if k != "visual"
        }
        copy = type(self).__new__(type(self))
        copy.__setstate__(pickle.loads(pickle.dumps(state, pickle.HIGHEST_PROTOCOL)))
        return copy

    def _index(self) -> None:
        """Name and joint tables (rebuilt when frames are added)."""
        m = self._model
        self._frame_ids = _frame_ids(m)
        self._joint_ids = {m.names[j]: j for j in range(1, m.njoints)}
        self._joints = joint_table(m)
        self._unit_blocks = unit_blocks(self._joints)

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

    def _changed(self) -> None:
        """The description changed structurally: owners rebuild their Data."""
        self.revision += 1
        self._distances = None

    # -- properties ------------------------------------------------------------------------
    @property
    def model(self) -> pin.Model:
        """The underlying Pinocchio model (shared; modify with care)."""
        return self._model

    @property
    def data(self) -> pin.Data:
        """Pinocchio data of the robot's own cache (the last :meth:`update_kinematics`)."""
        return self._kin.data

    @property
    def kinematics(self) -> Kinematics:
        """The robot's own kinematics cache (what :meth:`update_kinematics` updates)."""
        return self._kin

    def create_kinematics(self, q: object | None = None) -> Kinematics:
        """A new, independent kinematics cache (own Pinocchio Data) at ``q``.

        Args:
            q: Start configuration (size nq); the neutral configuration when omitted.
        """
        kin = Kinematics(self)
        if q is not None:
            kin.update(q)
        return kin

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
    def source(self) -> str:
        """Name of the description (file path, or ``"<string>"``)."""
        return self._source

    @property
    def collision(self) -> CollisionModel | None:
        """The collision description: geometry and active pairs (None without geometry)."""
        return self._collision

    @property
    def collision_model(self) -> pin.GeometryModel | None:
        """Collision geometry model (``None`` without collision geometry)."""
        return self._collision.geom_model if self._collision else None

    @property
    def collision_data(self) -> pin.GeometryData | None:
        """Collision geometry data of the robot's own distance queries (None without)."""
        if self._collision_state is None:
            return None
        self._collision_state.sync()
        return self._collision_state.geom_data

    @property
    def visual_model(self) -> pin.GeometryModel | None:
        """Visual geometry model (``None`` when visuals were not loaded)."""
        return self._visual_model

    @property
    def visual_data(self) -> pin.GeometryData | None:
        """Visual geometry data (``None`` when visuals were not loaded)."""
        return self._visual_data

    @property
    def joint_infos(self) -> tuple[JointInfo, ...]:
        """Every joint (universe excluded) with its kind and q/v indices, Pinocchio order."""
        return self._joints

    def get_joint_kind(self, joint_name: str) -> JointKind:
        """The :class:`~stackik.model.joints.JointKind` of a joint."""
        return self._joints[self._jid(joint_name) - 1].kind

    @property
    def controlled_joint_names(self) -> list[str]:
        """Names of the joints that are free variables (not mimic followers, not the base)."""
        followers = {c.follower for c in self._mimic}
        return [
            i.name
            for i in self._joints
            if i.nv > 0 and i.name != "root_joint" and i.name not in followers
        ]

    @property
    def controlled_joint_indices(self) -> dict[str, int]:
        """Map from controlled joint name to its first index in the velocity vector."""
        by_name = {i.name: i.idx_v for i in self._joints}
        return {n: by_name[n] for n in self.controlled_joint_names}

    @property
    def mimic_joints(self) -> list[tuple[str, str, float, float]]:
        """Coupled joints as ``(follower, leader, multiplier, offset)``: q_f = m q_l + offset."""
        return [(c.follower, c.leader, c.multiplier, c.offset) for c in self._mimic]

    @property
    def mimic_layout(self) -> str:
        """``"fold"`` (mimic followers have no q/v entries) or ``"keep"`` (they do)."""
        return self._mimic_layout

    @property
    def kept_mimic_joints(self) -> list[tuple[str, str, float, float]]:
        """The :attr:`mimic_joints` whose followers have q/v entries (the keep layout)."""
        return self.mimic_joints if self._mimic_layout == "keep" else []

    def apply_mimic(self, q: object) -> np.ndarray:
        """``q`` with every kept mimic follower set from its leader (a copy).

        In the fold layout followers have no entries and ``q`` comes back unchanged.

        Raises:
            ShapeError, NonFiniteInput, InvalidInput: Bad ``q``.
        """
        qv = self.check_configuration(q)
        if self._mimic_layout != "keep":
            return qv.copy()
        return couple(self._model, self._mimic, qv)

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
        """Whether a frame of that name exists.

        Raises:
            InvalidInput: ``frame_name`` is not a string.
        """
        return _validate.name(frame_name, "frame_name") in self._frame_ids

    def has_joint(self, joint_name: str) -> bool:
        """Whether a joint of that name exists.

        Raises:
            InvalidInput: ``joint_name`` is not a string.
        """
        return _validate.name(joint_name, "joint_name") in self._joint_ids

    def get_frame_id(self, frame_name: str) -> int:
        """Pinocchio frame index of ``frame_name``.

        Raises:
            FrameNotFound: Unknown name (the error lists the closest names).
        """
        try:
            return self._frame_ids[frame_name]
        except (KeyError, TypeError):
            _validate.name(frame_name, "frame name")
            raise FrameNotFound(frame_name, self._frame_ids) from None

    def _jid(self, joint_name: str) -> int:
        try:
            return self._joint_ids[joint_name]
        except (KeyError, TypeError):
            _validate.name(joint_name, "joint name")
            raise JointNotFound(joint_name, self._joint_ids) from None

    def get_pinocchio_joint_id(self, joint_name: str) -> int:
        """Pinocchio's joint index of ``joint_name`` (the ``universe`` is 0)."""
        return self._jid(joint_name)

    def get_joint_id(self, joint_name: str) -> int:
        """Joint index, 0-based, excluding the ``universe`` joint (Pinocchio's id minus one)."""
        return self._jid(joint_name) - 1

    def get_joint_config_index(self, joint_name: str) -> int:
        """First index of the joint in the configuration vector q."""
        return self._model.joints[self._jid(joint_name)].idx_q

    def get_joint_config_size(self, joint_name: str) -> int:
        """Number of configuration variables of the joint (2 continuous, 0 folded mimic)."""
        return self._model.joints[self._jid(joint_name)].nq

    def get_joint_velocity_index(self, joint_name: str) -> int:
        """First index of the joint in the velocity vector v."""
        return self._model.joints[self._jid(joint_name)].idx_v

    def get_joint_velocity_size(self, joint_name: str) -> int:
        """Number of velocity variables of the joint (0 for a folded mimic follower)."""
        return self._model.joints[self._jid(joint_name)].nv

    # -- frames and base -------------------------------------------------------------------
    def add_frame(self, name: str, parent_frame: str, placement: object) -> int:
        """Add a named frame rigidly attached to ``parent_frame`` (a tool / TCP frame).

        Solvers and caches already built on this robot see the new frame at their next
        update.

        Args:
            name: New frame name (must be unused).
            parent_frame: Existing frame the new one is fixed to.
            placement: Pose of the new frame in ``parent_frame`` (SE3 or 4x4) [m].

        Returns:
            The new frame's index.

        Raises:
            InvalidInput: ``name`` is not a non-empty string or already exists.
            FrameNotFound: ``parent_frame`` is unknown.
        """
        if _validate.name(name, "frame name") in self._frame_ids:
            raise InvalidInput(f"frame {name!r} already exists")
        if name in self._world.state.layout.names():
            raise InvalidInput(f"{name!r} names an object of the robot's world")
        pid = self.get_frame_id(parent_frame)
        T = as_se3(placement, "placement")
        with self._lock:
            parent = self._model.frames[pid]
            frame = pin.Frame(name, parent.parentJoint, pid, parent.placement * T, pin.OP_FRAME)
            fid = self._model.addFrame(frame, False)
            if parent.parentJoint == 0:
                # Keep the base re-mounting consistent for frames fixed to the world.
                unmounted = self._base_placement.inverse() * self._model.frames[fid].placement
                self._base_children["frames"].append((fid, unmounted))
            self._frame_ids[name] = fid
            self._dynamics = Dynamics(self._model)
            self._changed()
            self._kin.set_unchecked(self._kin.q, self._kin.v)
        self._bind_world(self._world)  # attached objects may ride on the new frame
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
        with self._lock:
            m = self._model
            for j, orig in self._base_children["joints"]:
                m.jointPlacements[j] = T * orig
            for f, orig in self._base_children["frames"]:
                m.frames[f].placement = T * orig
            geoms = (("collision", self._collision_geom_model), ("visual", self._visual_model))
            for key, gm in geoms:
                for g, orig in self._base_children.get(key, []):
                    assert gm is not None  # children are captured only for loaded geometry
                    gm.geometryObjects[g].placement = T * orig
            self._base_placement = pin.SE3(T)
            self._changed()
            self._kin.set_unchecked(self._kin.q, self._kin.v)

    # -- configuration checks ----------------------------------------------------------------
    def check_configuration(self, q: object, what: str = "q") -> np.ndarray:
        """Validate a configuration and return it as floats, normalized.

        Quaternions and continuous joints' ``(cos, sin)`` pairs must be unit: Pinocchio
        builds rotations from them as they are, so off-unit blocks are normalized (a
        copy is made then; otherwise the input array may be returned as is).

        Raises:
            ShapeError: Wrong size.
            NonFiniteInput: NaN or inf entries.
            InvalidInput: A quaternion or ``(cos, sin)`` pair has zero norm, or an entry is
                beyond :data:`MAX_MAGNITUDE`.
        """
        qv = _validate.bounded_vector(q, self._model.nq, MAX_MAGNITUDE, what)
        copied = False
        for joint, i, n in self._unit_blocks:
            block = qv[i : i + n]
            norm = math.sqrt(float(block @ block))
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

    def check_velocity(self, v: object, what: str = "v") -> np.ndarray:
        """Validate a velocity (or any tangent vector) of size nv and return it as floats.

        Raises:
            ShapeError: Wrong size.
            NonFiniteInput: NaN or inf entries.
            InvalidInput: An entry beyond :data:`MAX_MAGNITUDE`.
        """
        return _validate.bounded_vector(v, self._model.nv, MAX_MAGNITUDE, what)

    # -- kinematics (the robot's own cache) --------------------------------------------------
    def update_configuration(self, q: object) -> None:
        """Set the configuration and run forward kinematics (see :meth:`update_kinematics`)."""
        self.update_kinematics(q)

    def update_kinematics(self, q: object, v: object | None = None) -> None:
        """Set q (and optionally v) of the robot's own cache and run one Pinocchio pass.

        Computes joint placements, joint Jacobians and frame placements; with ``v``
        also joint velocities. The CoM and collision distances are computed later, on
        first request. On bad input nothing is changed. Solvers do not read this cache:
        each owns its own.

        Args:
            q: Configuration, size ``nq``. Quaternions (floating base) and the
                ``(cos, sin)`` pairs of continuous joints are normalized.
            v: Velocity, size ``nv`` (zero when omitted or empty).

        Raises:
            ShapeError: Wrong size.
            NonFiniteInput: NaN or inf entries.
            InvalidInput: Zero-norm quaternion or ``(cos, sin)`` pair.
        """
        with self._lock:
            self._kin.update(q, v)

    def get_current_configuration(self) -> np.ndarray:
        """The configuration of the last update (a copy)."""
        return self._kin.q.copy()

    def get_current_velocity(self) -> np.ndarray:
        """The velocity of the last update (a copy; zero if none was given)."""
        return self._kin.v.copy()

    def get_frame_pose(self, frame_name: str) -> SE3Pose:
        """World pose ``T_world_frame`` of a frame at the current configuration (a copy).

        A :class:`pinocchio.SE3` that also answers to EmbodiK's names
        (``homogeneous()``, ``A``, ``R``, ``t``): :class:`stackik.spatial.SE3Pose`.
        """
        fid = self.get_frame_id(frame_name)
        with self._lock:
            return SE3Pose(self._kin.frame_placement(fid))

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
        rf = as_reference_frame(reference_frame)
        with self._lock:
            return self._kin.frame_jacobian(fid, rf)

    # -- limits ------------------------------------------------------------------------------
    def get_joint_limits(self) -> tuple[np.ndarray, np.ndarray]:
        """Position limits ``(lower, upper)`` in configuration space (size nq) [rad or m]."""
        return self._model.lowerPositionLimit.copy(), self._model.upperPositionLimit.copy()

    def set_joint_limits(self, lower: object, upper: object) -> None:
        """Set position limits (size nq, ``lower <= upper``, inf allowed) [rad or m].

        What was derived from the limits is derived again at its owners' next use (the
        description's :attr:`revision` moves on): the collision pairs' motion levers
        (a prismatic joint's travel lengthens the lever of the revolute joints above it)
        and the reach envelopes.
        """
        lo, hi = _validate.bounds(lower, upper, self.nq, "joint limits")
        self._model.lowerPositionLimit = lo.copy()
        self._model.upperPositionLimit = hi.copy()
        self._changed()

    def get_velocity_limits(self) -> np.ndarray:
        """Velocity limits (size nv) [rad/s or m/s]; a floating base gets finite defaults."""
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

    @property
    def acceleration_limits(self) -> np.ndarray:
        """Acceleration limits (size nv) [rad/s^2 or m/s^2] as a read-only view."""
        view = self._acceleration_view  # (made once per setting: read on every step)
        if view.base is not self._acceleration_limits:  # (set since, or unpickled)
            view = self._acceleration_view = _validate.read_only_view(self._acceleration_limits)
        return view

    def set_acceleration_limits(self, accel_limits: object) -> None:
        """Set acceleration limits (size nv, positive) [rad/s^2 or m/s^2]."""
        self._acceleration_limits = self._positive(accel_limits, "accel_limits")

    def _positive(self, x: object, what: str) -> np.ndarray:
        arr = _validate.as_floats(x, what, (self.nv,))
        if arr.ndim != 1 or arr.shape[0] != self.nv:
            raise ShapeError(what, (self.nv,), arr.shape)
        if np.isnan(arr).any() or (arr <= 0).any():
            raise InvalidInput(f"{what} must be positive (inf allowed), got {arr.tolist()}")
        return arr.copy()

    # -- centre of mass ------------------------------------------------------------------
    def get_com_position(self) -> np.ndarray:
        """World position of the centre of mass at the current configuration [m]."""
        with self._lock:
            return self._kin.com

    def get_com_jacobian(self) -> np.ndarray:
        """3 x nv Jacobian of the centre of mass in world axes [m/rad or m/m]."""
        with self._lock:
            return self._kin.com_jacobian

    def get_com_velocity(self) -> np.ndarray:
        """Velocity of the centre of mass, ``J_com v``, for the current v [m/s]."""
        with self._lock:
            return self._kin.com_velocity()

    def get_total_mass(self) -> float:
        """Total mass of the robot [kg]."""
        return float(pin.computeTotalMass(self._model))

    # -- dynamics (a separate Data; no kinematics cache is touched) --------------------------
    def rnea(self, q: object, v: object, a: object) -> np.ndarray:
        """Inverse dynamics ``tau = M(q) a + C(q, v) v + g(q)`` (RNEA) [N m or N]."""
        return self._dynamics.rnea(
            self.check_configuration(q), self.check_velocity(v), self.check_velocity(a, "a")
        )

    def compute_mass_matrix(self, q: object) -> np.ndarray:
        """Joint-space inertia matrix M(q) (CRBA), symmetric positive definite, nv x nv."""
        return self._dynamics.mass_matrix(self.check_configuration(q))

    def compute_generalized_gravity(self, q: object) -> np.ndarray:
        """Gravity torques g(q), RNEA with zero velocity and acceleration [N m or N]."""
        return self._dynamics.gravity(self.check_configuration(q))

    def compute_coriolis(self, q: object, v: object) -> np.ndarray:
        """Coriolis and centrifugal torques ``C(q, v) v`` [N m or N]."""
        return self._dynamics.coriolis(self.check_configuration(q), self.check_velocity(v))

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
            v: Velocity (size nv) [units/s], or a displacement ``delta_q`` with ``dt = 1``.
            dt: Duration [s] (negative integrates backwards).

        Raises:
            InvalidInput: A bad q, v or dt, or a result beyond :data:`MAX_MAGNITUDE`.
        """
        step = _validate.real(dt, "dt")
        if not np.isfinite(step):
            raise NonFiniteInput("dt", [0])
        with np.errstate(over="ignore", invalid="ignore"):
            delta_q = self.check_velocity(v) * step
            out = pin.integrate(self._model, self.check_configuration(q), delta_q)
        if not np.isfinite(out).all():
            bad = np.flatnonzero(~np.isfinite(out)).tolist()
            raise NonFiniteInput("integrate(q, v, dt) result", bad)
        return _validate.bounded(out, MAX_MAGNITUDE, "integrate(q, v, dt) result")

    def difference(self, q0: object, q1: object) -> np.ndarray:
        """Tangent displacement ``delta_q`` (size nv) with ``integrate(q0, delta_q) == q1``."""
        return pin.difference(
            self._model, self.check_configuration(q0, "q0"), self.check_configuration(q1, "q1")
        )

    def normalize(self, q: object) -> np.ndarray:
        """Project q onto the configuration manifold (re-normalize quaternions, cos/sin pairs).

        Raises:
            InvalidInput: A quaternion or ``(cos, sin)`` pair has zero norm (no direction).
        """
        # pin.normalize returns a normalized copy; it does not modify its argument.
        return pin.normalize(self._model, self.check_configuration(q))

    def neutral_configuration(self) -> np.ndarray:
        """The neutral configuration (zero joints, identity base quaternion).

        Kept mimic followers take their leader's neutral value through the coupling.
        """
        q = pin.neutral(self._model)
        return couple(self._model, self._mimic, q) if self._mimic_layout == "keep" else q

    def random_configuration(self, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """A configuration drawn uniformly inside the joint limits.

        Bounded joints are uniform in their range; continuous joints uniform in angle;
        a floating base gets a uniform random orientation and a position inside its
        limits, or within ±:data:`DEFAULT_BASE_SAMPLING_RANGE` where those are infinite.

        Kept mimic followers are set from their leaders.

        Args:
            rng: NumPy generator or seed, for reproducible draws.

        Raises:
            InvalidInput: A revolute or prismatic joint has infinite limits.
        """
        q = sample_configuration(self._model, self._joints, np.random.default_rng(rng))
        return couple(self._model, self._mimic, q) if self._mimic_layout == "keep" else q

    # -- the world: obstacles and attached objects (see stackik.model.world) ------------------
    @property
    def world(self) -> World:
        """The world of this robot (its default world unless :meth:`set_world` replaced it).

        Every solver on the robot reads it at each step (unless the solver was given a
        world of its own), so obstacle updates take effect at their next step.
        """
        return self._world

    def set_world(self, world: World) -> None:
        """Use ``world`` (shared with other robots, say) instead of the current one.

        Raises:
            InvalidInput: Not a :class:`World`, or its objects clash with this robot
                (an attached object on a link the robot lacks, a name taken by a link).
        """
        if not isinstance(world, World):
            raise InvalidInput(f"expected a stackik World, got {type(world).__name__}")
        self._bind_world(world)
        if world is not self._world:
            self._world.unbind(self)
        self._world = world

    def _bind_world(self, world: World) -> None:
        geometry = self.get_collision_geometry_names()
        world.bind(self, self.get_frame_names(), geometry)

    def add_obstacle(
        self,
        name: str,
        shape: object,
        pose: object = None,
        *,
        min_distance: float | None = None,
    ) -> None:
        """Add an obstacle to the robot's world (see :meth:`World.add_obstacle`).

        Args:
            name: Unique name (not a link or collision geometry name of the robot).
            shape: A coal ``Box``, ``Sphere``, ``Capsule``, ``Cylinder``, ``Cone``,
                ``Ellipsoid``, ``Plane``, ``Halfspace``, ``ConvexBase`` or finished BVH
                triangle mesh.
            pose: World pose (``pinocchio.SE3``, ``stackik.SE3`` or 4x4) [m].
            min_distance: Distance [m] to keep from it (None: the collision constraint's).
        """
        self._world.add_obstacle(name, shape, pose, min_distance=min_distance)

    def add_obstacle_mesh(
        self,
        name: str,
        path: str | os.PathLike[str],
        pose: object = None,
        scale: float | Sequence[float] = 1.0,
        *,
        convex: bool = True,
        min_distance: float | None = None,
    ) -> None:
        """Add an STL/OBJ/DAE obstacle, as its convex hull unless ``convex=False``."""
        self._world.add_obstacle_mesh(
            name, path, pose, scale, convex=convex, min_distance=min_distance
        )

    def set_obstacle_pose(self, name: str, pose: object, stamp: float | None = None) -> None:
        """Move an obstacle (atomic, from any thread; ``stamp`` [s] gives its velocity).

        As :meth:`stackik.model.world.World.set_obstacle_pose`: a stamp earlier than the
        obstacle's last one, or one giving a velocity beyond 1e6, raises ``InvalidInput``
        and changes nothing.
        """
        self._world.set_obstacle_pose(name, pose, stamp)

    def set_obstacle_velocity(
        self, name: str, linear: object, angular: object = (0.0, 0.0, 0.0)
    ) -> None:
        """Give an obstacle's velocity: linear [m/s] at its origin, angular [rad/s]."""
        self._world.set_obstacle_velocity(name, linear, angular)

    def remove_obstacle(self, name: str) -> None:
        """Remove an obstacle (ObstacleNotFound names the known ones)."""
        self._world.remove_obstacle(name)

    def get_obstacle_names(self) -> list[str]:
        """Names of the obstacles of the robot's world."""
        return self._world.get_obstacle_names()

    def get_obstacle_pose(self, name: str) -> pin.SE3:
        """World pose of an obstacle."""
        return self._world.get_obstacle_pose(name)

    def attach_object(
        self,
        name: str,
        link: str,
        shape: object,
        pose: object = None,
        allowed_links: Sequence[str] | str = (),
    ) -> None:
        """Attach a shape to a link (see :meth:`World.attach_object`).

        The object is watched wherever collisions are: by a collision constraint, the
        solver's ``evaluate_*``, global IK, paths and studies, and this robot's
        :meth:`check_collision` and :meth:`compute_min_collision_distance`, against every
        obstacle and the rest of the robot (not the body carrying it, nor
        ``allowed_links``). Also on a robot without collision geometry
        (``load_collisions=False``): its pairs are then the object against the obstacles
        (and against attached objects on other links).

        Raises:
            FrameNotFound: ``link`` (or an allowed link) is not a frame of the robot.
            InvalidInput: ``allowed_links`` is not a link name or a list of them.
        """
        allowed = allowed_link_names(allowed_links)
        for lk in (link, *allowed):
            self.get_frame_id(lk)
        self._world.attach_object(name, link, shape, pose, allowed)

    def load_scene(self, path: str | os.PathLike[str]) -> list[str]:
        """Add a YAML scene file's obstacles and attached objects to the robot's world.

        See :mod:`stackik.model.scene` for the format. Returns the names added.

        Raises:
            RobotFileNotFound: No such file.
            MalformedScene: The file breaks the format, a name is taken, or an attached
                object names a link the robot lacks (the message names the entry); nothing
                is added then.
        """
        from .scene import load_scene

        return load_scene(path, self._world, self)

    def detach_object(self, name: str) -> None:
        """Remove an attached object."""
        self._world.detach_object(name)

    def get_attached_object_names(self) -> list[str]:
        """Names of the attached objects."""
        return self._world.get_attached_object_names()

    # -- collision ---------------------------------------------------------------------------
    def has_collision_geometry(self) -> bool:
        """Whether the robot has collision geometry."""
        return self._collision is not None

    def load_srdf(self, srdf_path: str | os.PathLike[str]) -> int:
        """Exclude the ``<disable_collisions>`` pairs of an SRDF file.

        The whole SRDF is checked against the robot first (see
        :func:`~stackik.model.validation.check_srdf`; a robot loaded with
        ``strict=False`` checks only the root element and the ``<disable_collisions>``).

        Returns:
            The number of geometry pairs removed.

        Raises:
            RobotFileNotFound: No such file.
            MalformedDescription: Not XML, a root element other than ``<robot>``, an
                entry naming a link or joint the robot does not have, a link paired
                with itself (the element is named).
        """
        text = loading.read_text(loading.check_path(srdf_path, "srdf_path"))
        root = loading.parse_xml(text, str(srdf_path))
        joints = self._urdf_joints | ({"root_joint"} if self._floating else set())
        pairs = check_srdf(root, self._links, joints, str(srdf_path), self._strict)
        if self._collision is None:
            return 0
        with self._lock:
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
        with self._lock:
            self._collision.exclude_pairs(pairs)

    def reset_collision_pairs(self) -> None:
        """Re-activate all pairs between non-adjacent links (undo every exclusion)."""
        if self._collision is not None:
            with self._lock:
                self._collision.reset_pairs()

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

    def compute_collision_exclusions(
        self,
        samples: int = 1000,
        seed: int = 0,
        close_distance: float = 0.03,
        always_fraction: float = 0.95,
        progress: Callable[[int, int], None] | None = None,
        never_distance: float = 0.0,
        limit_fraction: float = 1.0 / 3.0,
    ) -> CollisionExclusionReport:
        """Sample configurations and sort every link pair, as MoveIt's setup assistant does.

        Reports adjacent, default (colliding at the neutral configuration), always
        colliding, always close (never farther apart than ``close_distance``: a collision
        constraint with a larger ``min_distance`` could never be satisfied) and never
        colliding pairs; ``report.write_srdf(path)`` writes the SRDF
        ``<disable_collisions>`` lines. See :mod:`stackik.model.exclusions`.

        Args:
            samples: Random configurations inside the joint limits.
            seed: Their seed (the same seed gives the same report).
            close_distance: Threshold of "always close" [m].
            always_fraction: Share of colliding samples from which a pair is "always
                colliding".
            progress: Called as ``progress(done, samples)`` every 100 samples.
            never_distance: A pair never closer than this in any sample is "never
                colliding" [m] (0: never in collision, MoveIt's rule).
            limit_fraction: Odds that a joint value is drawn at a limit.

        Raises:
            InvalidInput: No collision geometry, or bad arguments.
        """
        return collision_exclusions(
            self,
            samples,
            seed,
            close_distance,
            always_fraction,
            progress,
            never_distance,
            limit_fraction,
        )

    def sampled_pair_distance_range(
        self, samples: int = 64, seed: int = 0
    ) -> tuple[np.ndarray, np.ndarray]:
        """Smallest and largest sampled distance of every active pair [m] (cached).

        Used to warn when a collision constraint's ``min_distance`` exceeds what a pair can
        ever reach. Computed once per pair list, in a cache of its own.
        """
        if self._collision is None:
            return np.zeros(0), np.zeros(0)
        key = (self._collision.revision, self.revision, int(samples), int(seed))
        cached = self._pair_ranges
        if cached is not None and cached[0] == key:
            return cached[1], cached[2]
        kin = self.create_kinematics()
        state = CollisionState(self._collision)
        rng = np.random.default_rng(seed)
        lo = np.full(len(self._collision.geom_model.collisionPairs), np.inf)
        hi = -lo
        for _ in range(int(samples)):
            kin.set_unchecked(self.random_configuration(rng))
            d = state.distances(kin.data)
            np.minimum(lo, d, out=lo)
            np.maximum(hi, d, out=hi)
        self._pair_ranges = (key, lo, hi)
        return lo, hi

    def compute_collision_distances(self) -> list[float]:
        """Signed distance [m] of every active pair at the current configuration.

        Negative values are penetration depths. Computed once per configuration.
        """
        with self._lock:
            return self._collision_distances().tolist()

    def _collision_distances(self) -> np.ndarray:
        if self._collision is None or self._collision_state is None:
            return np.zeros(0)
        key = (self._kin.version, self._collision.revision)
        if self._distances is None or self._distances[:2] != key:
            d = self._collision_state.distances(self._kin.data)
            self._distances = (key[0], key[1], d)
        return self._distances[2]

    def compute_collision_witness_points(self) -> np.ndarray:
        """Nearest points of each active pair, shape (pairs, 2, 3), world frame [m]."""
        if self._collision_state is None:
            return np.zeros((0, 2, 3))
        with self._lock:
            self._collision_distances()
            return self._collision_state.nearest_points()

    def _world_distances(self) -> np.ndarray:
        """Signed distances [m] of the world pairs at the current configuration.

        The pairs of :meth:`~stackik.model.pipeline.GeometrySet.world_pairs` without
        the robot's own: each attached object against the robot geometries and attached
        objects a collision constraint pairs it with, and every robot geometry and
        attached object against every obstacle, measured with the collision pipeline
        (compiled; coal for triangle meshes). Empty, without touching the pipeline, when
        the world has no obstacle and no attached object. Callers hold the lock.
        """
        state = self._world.state
        if not (state.layout.obstacles or state.layout.attached):
            return np.zeros(0)
        from .pipeline import CollisionPipeline  # (it imports the compiled geometry kernels)

        check = self._world_check
        if check is None:
            check = self._world_check = (CollisionPipeline(self), None, np.zeros((0, 2)))
        pipeline = check[0]
        gs = pipeline.place(self._kin.joint_placements(), state)
        if check[1] is not gs:  # (the pairs of a geometry set: rebuilt with it)
            none = np.zeros((0, 2), dtype=np.int64)
            check = self._world_check = (pipeline, gs, gs.world_pairs(none))
        pairs = check[2]
        return pipeline.distances(pairs) if len(pairs) else np.zeros(0)

    def compute_min_collision_distance(self, *, world: bool = True) -> float:
        """Smallest signed distance [m] at the current configuration (negative: overlap).

        Over the robot's active pairs and, with ``world`` (the default), the pairs of
        its world (:attr:`world`) as a collision constraint pairs them: every robot
        geometry and attached object against every obstacle, and each attached object
        against the rest of the robot (not the body carrying it, nor its allowed links).
        An obstacle's own ``min_distance`` plays no part here.

        Args:
            world: Include the world's pairs; False: the robot's own pairs only (the
                value :meth:`compute_collision_distances` lists).

        Returns:
            The distance; inf without pairs (no collision geometry and, with ``world``,
            no attached object, or no obstacle to pair it with).

        Raises:
            InvalidInput: ``world`` is not a bool.
        """
        with_world = _validate.flag(world, "world")
        with self._lock:
            d = self._collision_distances()
            smallest = float(d.min()) if d.size else float("inf")
            if with_world:
                w = self._world_distances()
                if w.size:
                    smallest = min(smallest, float(w.min()))
        return smallest

    def check_collision(self, min_distance: float = 0.0, *, world: bool = True) -> bool:
        """Whether any pair is at distance <= ``min_distance`` [m] at the current configuration.

        The pairs of :meth:`compute_min_collision_distance`: the robot's own and, with
        ``world`` (the default), every robot geometry and attached object against every
        obstacle of its world and each attached object against the rest of the robot.
        ``min_distance`` applies to every pair (an obstacle's own is not used). With the
        default 0, whether anything touches or overlaps.

        Args:
            min_distance: Distance threshold [m] (finite).
            world: Include the world's pairs; False: the robot's own pairs only.

        Raises:
            NonFiniteInput: ``min_distance`` is NaN or infinite.
            InvalidInput: ``min_distance`` is not a number, or ``world`` not a bool.
        """
        threshold = _validate.real(min_distance, "min_distance")
        if not np.isfinite(threshold):
            raise NonFiniteInput("min_distance", [0])
        return self.compute_min_collision_distance(world=world) <= threshold


def check_robot(value: object, what: str = "robot") -> RobotModel:
    """``value`` when it is a :class:`RobotModel`.

    Raises:
        InvalidInput: Anything else (named with its type).
    """
    return _validate.instance(value, RobotModel, what, "stackik RobotModel")
