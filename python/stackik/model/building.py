"""From URDF text to Pinocchio models: build, reduce, default limits, mimic ranges.

:func:`build` is the whole construction of a robot description; :class:`RobotModel`
calls it once. Everything here runs at configuration time and raises typed errors.
Mimic joints are folded into their leaders or kept as joints of their own (see
:mod:`stackik.model.mimic`).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pinocchio as pin

from .. import _validate
from ..errors import (
    InvalidInput,
    JointNotFound,
    MalformedDescription,
    ModelTooLarge,
    StackIKError,
)
from . import loading
from .collision import convexify
from .kinematics import data_bytes
from .meshes import (
    MeshReference,
    apply_collada_units,
    check_loaded_meshes,
    check_mesh_files,
    explain_load_error,
    mesh_references,
)
from .mimic import (
    LAYOUTS,
    Coupling,
    couple,
    declarations,
    leader_first_urdf,
    restore_names,
    strip_rank,
)
from .validation import check_urdf

#: Velocity limit used where the URDF gives none [rad/s or m/s].
DEFAULT_VELOCITY_LIMIT = 2.0
#: Effort limit used where the URDF gives none [N m or N].
DEFAULT_EFFORT_LIMIT = 100.0
#: Acceleration limit used for every joint until set [rad/s^2 or m/s^2] (URDF has none).
DEFAULT_ACCELERATION_LIMIT = 10.0
#: Velocity bound of a floating base's linear coordinates [m/s] (URDF gives none; an
#: unbounded base lets a far target ask for any speed).
DEFAULT_BASE_LINEAR_VELOCITY = 1.0
#: Velocity bound of a floating base's angular coordinates [rad/s].
DEFAULT_BASE_ANGULAR_VELOCITY = 2.0

#: Magnitude from which a Pinocchio position limit counts as unbounded.
UNBOUNDED = 1e10


@dataclass
class Built:
    """The Pinocchio objects of one description.

    Attributes:
        model: Kinematic and inertial model (limits defaulted, mimic ranges applied).
        visual: Visual geometry, or None when not loaded.
        collision: Collision geometry (convexified unless exact meshes were asked for),
            or None when not loaded.
        mimic: The mimic couplings whose follower and leader are both in the model.
        links: Names of the URDF's links.
        joints: Names of the URDF's joints (fixed ones included).
        mimic_layout: ``"fold"`` or ``"keep"`` (see :mod:`stackik.model.mimic`).
    """

    model: pin.Model
    visual: pin.GeometryModel | None
    collision: pin.GeometryModel | None
    mimic: list[Coupling] = field(default_factory=list)
    links: set[str] = field(default_factory=set)
    joints: set[str] = field(default_factory=set)
    mimic_layout: str = "keep"


def build(
    text: str,
    source: str,
    urdf_dir: Path | None,
    actuated_joint_names: Sequence[str] | None,
    floating_base: bool,
    package_dirs: Sequence[str | os.PathLike[str]] | str | None,
    load_visuals: bool,
    load_collisions: bool,
    exact_collision_meshes: bool,
    mimic: str = "keep",
    strict: bool = True,
) -> Built:
    """Build the Pinocchio models of a URDF description.

    Raises:
        MalformedDescription: Invalid XML or a description Pinocchio rejects.
        MeshNotFound: A mesh could not be resolved.
        JointNotFound, InvalidInput: Bad ``actuated_joint_names`` or ``mimic``.
    """
    if not isinstance(mimic, str) or mimic not in LAYOUTS:
        raise InvalidInput(f"mimic must be one of {LAYOUTS}, got {mimic!r}", what="mimic")
    floating_base = _validate.flag(floating_base, "floating_base")
    load_visuals = _validate.flag(load_visuals, "load_visuals")
    load_collisions = _validate.flag(load_collisions, "load_collisions")
    exact_collision_meshes = _validate.flag(exact_collision_meshes, "exact_collision_meshes")
    strict = _validate.flag(strict, "strict")
    loading.check_package_dirs(package_dirs)
    if actuated_joint_names is not None:
        actuated_joint_names = _check_actuated(actuated_joint_names)
    root = loading.parse_xml(text, source)
    if root.tag != "robot":
        raise MalformedDescription(source, f"root element is <{root.tag}>, expected <robot>")
    check_urdf(root, source, strict)
    links = {str(link.get("name")) for link in root.findall("link")}
    joints = {str(joint.get("name")) for joint in root.findall("joint")}
    sections = [s for s, keep in (("visual", load_visuals), ("collision", load_collisions)) if keep]
    loading.strip_sections(root, [s for s in ("visual", "collision") if s not in sections])
    loading.resolve_mesh_paths(root, source, urdf_dir, package_dirs, sections)
    apply_collada_units(root, sections, source)
    meshes = mesh_references(root, sections)
    check_mesh_files(meshes, source)
    couplings = declarations(root)
    fold = mimic == "fold"
    pin_root, renamed = leader_first_urdf(root, couplings, source) if fold else (root, {})
    xml = ET.tostring(pin_root, encoding="unicode")
    reduced = actuated_joint_names is not None
    model, geoms = _pinocchio_models(
        xml, source, floating_base, sections, fold, meshes, check=not reduced
    )
    restore_names(model, renamed)
    if actuated_joint_names is not None:
        model, geoms = reduce_model(model, geoms, actuated_joint_names, couplings)
        check_memory(model, source)
    col = geoms.get("collision")
    if col is not None and not exact_collision_meshes:
        try:
            convexify(col)
        except InvalidInput as exc:
            raise MalformedDescription(source, str(exc)) from None
    apply_default_limits(model, floating_base)
    present = restrict_mimic_leaders(model, root, source, couplings)
    return Built(model, geoms.get("visual"), col, present, links, joints, mimic)


def machine_memory() -> int | None:
    """Bytes of memory of this machine, or of its container when that is less (None: unknown)."""
    sizes = []
    try:
        sizes.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows) or no such name
        pass
    for limit in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            sizes.append(int(text))
    return min(sizes) if sizes else None


def check_memory(model: pin.Model, source: str) -> None:
    """Refuse a model one Pinocchio ``Data`` of which cannot fit in this machine's memory.

    Every owner of kinematics (the robot's own cache, each solver) needs one ``Data``,
    and Pinocchio's grows as ``nv^3`` (:func:`~stackik.model.kinematics.data_bytes`):
    failing here, before any is created, says why instead of a ``MemoryError`` later.

    Raises:
        ModelTooLarge: One ``Data`` would not fit.
    """
    available = machine_memory()
    needed = data_bytes(model.nv)
    if available is not None and needed > available:
        raise ModelTooLarge(source, model.nv, needed, available)


def _check_actuated(names: object) -> list[str]:
    """``actuated_joint_names`` as a list of distinct non-empty names."""
    if isinstance(names, (str, bytes)):
        raise InvalidInput("actuated_joint_names must be a sequence of names, not a string")
    if not isinstance(names, Iterable):
        raise InvalidInput(
            f"actuated_joint_names must be a sequence of joint names, got {type(names).__name__}",
            what="actuated_joint_names",
            value=names,
        )
    out = [_validate.name(n, "an actuated joint name") for n in names]
    duplicates = sorted({n for n in out if out.count(n) > 1})
    if duplicates:
        raise InvalidInput(f"actuated_joint_names lists {duplicates} more than once")
    return out


def _pinocchio_models(
    xml: str,
    source: str,
    floating_base: bool,
    sections: Sequence[str],
    fold: bool,
    meshes: Sequence[MeshReference] = (),
    check: bool = True,
) -> tuple[pin.Model, dict[str, pin.GeometryModel]]:
    """The kinematic model and the geometry of each section (``check``: memory first)."""
    kinds = {"collision": pin.COLLISION, "visual": pin.VISUAL}
    try:
        if floating_base:
            model = pin.buildModelFromXML(xml, pin.JointModelFreeFlyer(), "root_joint", mimic=fold)
        else:
            model = pin.buildModelFromXML(xml, mimic=fold)
        if check:  # before the geometry, which takes long for thousands of links
            check_memory(model, source)
        # (filled into a model of ours: without one, Pinocchio 4.1's binding keeps a
        # Python wrapper of every geometry model it makes alive, pointing at freed memory)
        geoms = {
            s: pin.buildGeomFromUrdfString(model, xml, kinds[s], geometry_model=pin.GeometryModel())
            for s in sections
        }
    except StackIKError:  # a RuntimeError too: ours already names the fault
        raise
    except (RuntimeError, ValueError) as exc:
        explained = explain_load_error(str(exc), meshes, source)
        if explained is not None:
            raise explained from None
        reason = strip_rank(str(exc))
        raise MalformedDescription(source, f"Pinocchio/urdfdom rejected it: {reason}") from exc
    for section, geom_model in geoms.items():
        check_loaded_meshes(geom_model, model, section, source)
    return model, geoms


def reduce_model(
    model: pin.Model,
    geoms: dict[str, pin.GeometryModel],
    names: Sequence[str],
    couplings: Sequence[Coupling] = (),
) -> tuple[pin.Model, dict[str, pin.GeometryModel]]:
    """Lock every joint not in ``names`` at its neutral value (a reduced model).

    A mimic follower is no variable: it stays coupled to its leader when the leader is
    kept, and is locked with it otherwise (Pinocchio cannot lock a leader alone; a kept
    follower is locked at its leader's neutral value mapped through the coupling).

    Raises:
        InvalidInput: ``names`` is a string, or names a mimic follower.
        JointNotFound: An unknown joint name.
    """
    if isinstance(names, str):
        raise InvalidInput("actuated_joint_names must be a sequence of names, not a string")
    joint_names = list(model.names)[1:]
    leaders = {c.follower: c.leader for c in couplings}
    for n in names:
        if n not in joint_names:
            raise JointNotFound(n, joint_names)
        if n in leaders:
            raise InvalidInput(
                f"joint {n!r} mimics {leaders[n]!r} and is not a variable; name its leader"
            )
    keep = set(names) | {"root_joint"} | {f for f, lead in leaders.items() if lead in names}
    lock = [model.getJointId(n) for n in joint_names if n not in keep]
    q0 = couple(model, list(couplings), pin.neutral(model))
    keys = list(geoms)
    if not keys:
        return pin.buildReducedModel(model, lock, q0), geoms
    reduced, reduced_geoms = pin.buildReducedModel(model, [geoms[k] for k in keys], lock, q0)
    return reduced, dict(zip(keys, reduced_geoms, strict=True))


def apply_default_limits(model: pin.Model, floating_base: bool) -> None:
    """Say inf for unbounded positions; default missing velocity and effort limits.

    Pinocchio marks "unbounded" with the largest double; inf is understood by every
    consumer (samplers, velocity boxes). A free-flyer is not actuated: no effort bound,
    and the finite default velocity bounds :data:`DEFAULT_BASE_LINEAR_VELOCITY` and
    :data:`DEFAULT_BASE_ANGULAR_VELOCITY` (change them with ``set_velocity_limits``).
    """
    lo, hi = model.lowerPositionLimit.copy(), model.upperPositionLimit.copy()
    lo[lo <= -UNBOUNDED] = -np.inf
    hi[hi >= UNBOUNDED] = np.inf
    model.lowerPositionLimit, model.upperPositionLimit = lo, hi
    vel = np.array(model.velocityLimit, dtype=float)
    vel[~np.isfinite(vel) | (vel <= 0)] = DEFAULT_VELOCITY_LIMIT
    eff = np.array(model.effortLimit, dtype=float)
    eff[~np.isfinite(eff) | (eff <= 0)] = DEFAULT_EFFORT_LIMIT
    if floating_base:
        vel[:3] = DEFAULT_BASE_LINEAR_VELOCITY
        vel[3:6] = DEFAULT_BASE_ANGULAR_VELOCITY
        eff[:6] = np.inf
    model.velocityLimit = vel
    model.effortLimit = eff


def _urdf_mimic_limits(root: ET.Element) -> dict[str, tuple[float, float]]:
    out = {}
    for joint in root.iter("joint"):
        limit = joint.find("limit")
        if joint.find("mimic") is not None and limit is not None:
            if joint.get("type") != "continuous":
                out[str(joint.get("name"))] = (
                    float(limit.get("lower", "-inf")),
                    float(limit.get("upper", "inf")),
                )
    return out


def restrict_mimic_leaders(
    model: pin.Model, root: ET.Element, source: str, couplings: Sequence[Coupling]
) -> list[Coupling]:
    """Shrink each leader joint's range so its mimic followers stay inside their limits.

    A follower obeys ``q_f = multiplier * q_l + offset``; both joints' ranges must hold,
    so the leader's range is intersected with the follower's mapped back through it
    (in both layouts: a kept follower also keeps its own limits).

    Returns:
        The couplings whose follower and leader are both in ``model``.

    Raises:
        MalformedDescription: No leader value keeps a follower inside its limits.
    """
    urdf_limits = _urdf_mimic_limits(root)
    lo, hi = model.lowerPositionLimit.copy(), model.upperPositionLimit.copy()
    mimic = []
    for c in couplings:
        if not (model.existJointName(c.follower) and model.existJointName(c.leader)):
            continue
        mimic.append(c)
        name, mult, off = c.follower, c.multiplier, c.offset
        leader = model.joints[model.getJointId(c.leader)]
        iq = leader.idx_q
        if name in urdf_limits and mult != 0.0 and leader.nq == 1:
            a, b = ((v - off) / mult for v in urdf_limits[name])
            lo[iq] = max(lo[iq], min(a, b))
            hi[iq] = min(hi[iq], max(a, b))
            if lo[iq] > hi[iq]:
                raise MalformedDescription(
                    source, f"mimic joint {name!r}: no leader value keeps both in limits"
                )
    model.lowerPositionLimit, model.upperPositionLimit = lo, hi
    return mimic
