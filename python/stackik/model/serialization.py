"""Pickling Pinocchio models and geometry so that every description round-trips.

Importing :mod:`stackik` registers picklers (:mod:`copyreg`) for ``pinocchio.Model``
and ``pinocchio.GeometryModel``: everything that pickles one (a robot, a solver, a
worker's task, or user code in the same process) goes through them. They change
nothing that Pinocchio pickles correctly; they work around these faults and costs of
the libraries' own serialization:

- **Mimic joints.** Pinocchio's serialization (pickle, text, XML and binary alike)
  drops a ``JointModelMimic``'s extended velocity size: the restored model crashes the
  process in its first kinematics pass. :func:`mimic_repairs` records, from the live
  model, what each mimic joint is (its own joint's kind and axis, its leader, scaling
  and offset); :func:`repair_mimic_joints` rebuilds those joints in the restored model.
- **Geometry models.** coal pickles a ``GeometryModel`` through boost's polymorphic
  registry, which breaks ("unregistered class") when another copy of coal is loaded in
  the process (EmbodiK ships one). :func:`geometry_state` pickles each geometry object
  field by field with its concrete shape, which coal pickles without the registry.
- **Triangle meshes.** coal pickles a mesh (``BVHModel``) as a text archive of its
  bounding-volume tree: about 40 MB and 4 s for one 20,000-triangle visual mesh, and its
  archive of a ``BVHModelOBB`` is broken (the copy crashes the process in a distance
  query). A mesh is pickled as its vertices and triangles instead (about 50x smaller)
  and its tree is built again on unpickling, the way coal's mesh loader builds it: the
  same vertices and triangles give the same tree, node for node, and the same
  distances, bit for bit. This holds for the meshes of a geometry model and for every
  finished triangle mesh pickled on its own (``coal.BVHModelOBB`` and
  ``coal.BVHModelOBBRSS``: a world's obstacles and attached objects, or user code).
- **Hulls without faces.** coal cannot pickle a ``coal.ConvexBase`` (what
  ``ConvexBase.convexHull(points, False, ...)`` returns): it is pickled as its points and
  comes back as a ``coal.Convex`` with the same points in the same order
  (:func:`~stackik.model.collision.as_convex`).
"""

from __future__ import annotations

import copyreg
from dataclasses import dataclass
from typing import Any

import coal
import numpy as np
import pinocchio as pin

from ..errors import InvalidInput
from .collision import convex_with_points

__all__ = [
    "MimicRepair",
    "geometry_from_state",
    "geometry_state",
    "mesh_from_state",
    "mesh_state",
    "mimic_repairs",
    "register",
    "repair_mimic_joints",
]

#: Step of the leader used to read a mimic joint's axis from its motion [rad or m].
_PROBE = 1e-3


@dataclass(frozen=True)
class MimicRepair:
    """What one mimic joint of a model is, to rebuild it after unpickling.

    Attributes:
        joint_id: The mimic (follower) joint's Pinocchio index.
        leader_id: The joint it mimics.
        kind: ``"revolute"``, ``"revolute_unbounded"`` or ``"prismatic"`` (an unaligned
            joint about ``axis``), or the class name of an aligned joint
            (``"JointModelRX"``, ...).
        axis: Unit axis of the follower's own motion, in its joint frame (zeros for an
            aligned joint).
        scaling: ``q_follower = scaling * q_leader + offset``.
        offset: Offset [rad or m].
    """

    joint_id: int
    leader_id: int
    kind: str
    axis: tuple[float, float, float]
    scaling: float
    offset: float


def _motion(joint: Any, q: np.ndarray) -> pin.SE3:
    data = joint.createData()
    joint.calc(data, q)
    return pin.SE3(data.M)


def _own_type(mimic: Any) -> str:
    """Pinocchio's class name of the joint a mimic joint wraps (from its description)."""
    for line in str(mimic).splitlines():
        if "Mimicking joint type:" in line:
            return line.split(":", 1)[1].strip()
    return ""


def _velocity_axis(model: pin.Model, mimic: Any, leader: Any) -> tuple[np.ndarray, np.ndarray]:
    """The follower's angular and linear velocity when its leader moves at 1 (exact).

    The joint's motion subspace times the velocity: its stored axis times ``scaling``,
    with no rounding when ``scaling`` is 1.
    """
    data = mimic.createData()
    v = np.zeros(model.nv)
    v[leader.idx_v] = 1.0
    mimic.calc(data, pin.neutral(model), v)
    return np.array(data.v.angular), np.array(data.v.linear)


def _axis_and_kind(model: pin.Model, mimic: Any, leader: Any) -> tuple[str, np.ndarray]:
    """The follower's own joint kind and axis.

    An aligned joint (``JointModelRX`` and the like) is recorded by its class, exactly;
    an unaligned one by its axis, read from its velocity as the leader moves (exact for
    a scaling of 1), or, for a follower that does not move with a velocity, from its
    motion over a small leader step.
    """
    own = _own_type(mimic)
    if own in _ALIGNED:
        return own, np.zeros(3)
    if abs(mimic.scaling) < 1e-300:  # a follower that never moves: any axis draws the same
        return ("revolute", np.array([0.0, 0.0, 1.0]))
    w, lin = _velocity_axis(model, mimic, leader)
    revolute = own.startswith("JointModelRevolute")
    prismatic = own.startswith("JointModelPrismatic")
    if revolute and np.linalg.norm(w) > 0.0:
        kind = "revolute_unbounded" if "Unbounded" in own else "revolute"
        return kind, w / mimic.scaling
    if prismatic and np.linalg.norm(lin) > 0.0:
        return "prismatic", lin / mimic.scaling
    return _axis_from_motion(model, mimic, leader)


def _axis_from_motion(model: pin.Model, mimic: Any, leader: Any) -> tuple[str, np.ndarray]:
    """The follower's own joint kind and axis, read from its motion as the leader moves."""
    q = pin.neutral(model)
    m0 = _motion(mimic, q)
    if leader.nq == 2:  # unbounded revolute leader: (cos, sin)
        q[leader.idx_q : leader.idx_q + 2] = np.cos(_PROBE), np.sin(_PROBE)
    else:
        q[leader.idx_q] += _PROBE
    rel = m0.actInv(_motion(mimic, q))
    turn = pin.log3(rel.rotation)
    step = mimic.scaling * _PROBE
    if np.linalg.norm(turn) > 1e-12:
        kind = "revolute_unbounded" if leader.nq == 2 else "revolute"
        return kind, turn / step / np.linalg.norm(turn / step)
    shift = rel.translation
    if np.linalg.norm(shift) > 1e-12:
        return "prismatic", shift / step / np.linalg.norm(shift / step)
    raise InvalidInput(f"mimic joint {mimic.id} moves neither as a rotation nor a translation")


def mimic_repairs(model: pin.Model) -> tuple[MimicRepair, ...]:
    """A :class:`MimicRepair` for every mimic joint of a (live, intact) model."""
    out = []
    for k, jid in enumerate(model.mimicking_joints):
        mimic = model.joints[jid].extract()
        leader = model.joints[int(model.mimicked_joints[k])]
        kind, axis = _axis_and_kind(model, mimic, leader)
        out.append(
            MimicRepair(
                int(jid),
                int(leader.id),
                kind,
                (float(axis[0]), float(axis[1]), float(axis[2])),
                float(mimic.scaling),
                float(mimic.offset),
            )
        )
    return tuple(out)


#: Aligned joint classes, recorded by name (their axis is part of the class).
_ALIGNED = {
    name: getattr(pin, name)
    for name in (
        "JointModelRX", "JointModelRY", "JointModelRZ",
        "JointModelRUBX", "JointModelRUBY", "JointModelRUBZ",
        "JointModelPX", "JointModelPY", "JointModelPZ",
    )
}  # fmt: skip

_KINDS = {
    "revolute": pin.JointModelRevoluteUnaligned,
    "revolute_unbounded": pin.JointModelRevoluteUnboundedUnaligned,
    "prismatic": pin.JointModelPrismaticUnaligned,
}


def repair_mimic_joints(model: pin.Model, repairs: tuple[MimicRepair, ...]) -> None:
    """Rebuild the mimic joints of an unpickled model from their records, in place."""
    for r in repairs:
        leader = model.joints[r.leader_id]
        own = _ALIGNED[r.kind]() if r.kind in _ALIGNED else _KINDS[r.kind](np.array(r.axis))
        own.setIndexes(leader.id, leader.idx_q, leader.idx_v, leader.idx_vExtended)
        old = model.joints[r.joint_id]
        mimic = pin.JointModelMimic(own, r.scaling, r.offset)
        mimic.setIndexes(old.id, old.idx_q, old.idx_v, old.idx_vExtended)
        model.joints[r.joint_id] = pin.JointModel(mimic)


# -- geometry --------------------------------------------------------------------------------
_FIELDS = (
    "name",
    "parentJoint",
    "parentFrame",
    "meshPath",
    "meshScale",
    "overrideMaterial",
    "meshColor",
    "meshTexturePath",
    "disableCollision",
)


def geometry_state(gm: pin.GeometryModel | None) -> dict[str, Any] | None:
    """A picklable record of a geometry model: its objects and its collision pairs."""
    if gm is None:
        return None
    objects = []
    for obj in gm.geometryObjects:
        fields = {f: getattr(obj, f) for f in _FIELDS}
        fields["placement"] = obj.placement.homogeneous.copy()
        # Concrete shapes pickle without the registry; meshes as vertices and triangles.
        fields["geometry"] = mesh_state(obj.geometry) or obj.geometry
        objects.append(fields)
    pairs = [(int(cp.first), int(cp.second)) for cp in gm.collisionPairs]
    return {"objects": objects, "pairs": pairs}


def geometry_from_state(state: dict[str, Any] | None) -> pin.GeometryModel | None:
    """The geometry model of a :func:`geometry_state` record."""
    if state is None:
        return None
    gm = pin.GeometryModel()
    for f in state["objects"]:
        obj = pin.GeometryObject(
            f["name"],
            int(f["parentJoint"]),
            int(f["parentFrame"]),
            pin.SE3(f["placement"]),
            _shape(f["geometry"]),
            f["meshPath"],
            np.asarray(f["meshScale"], dtype=float),
            bool(f["overrideMaterial"]),
            np.asarray(f["meshColor"], dtype=float),
            f["meshTexturePath"],
        )
        obj.disableCollision = bool(f["disableCollision"])
        gm.addGeometryObject(obj)
    for a, b in state["pairs"]:
        gm.addCollisionPair(pin.CollisionPair(a, b))
    return gm


def _is_mesh(geometry: Any) -> bool:
    """Whether a coal geometry is a triangle mesh with a bounding-volume tree (BVHModel)."""
    return all(hasattr(geometry, a) for a in ("tri_indices", "num_tris", "beginModel"))


def mesh_state(geometry: Any) -> tuple[str, type, np.ndarray, np.ndarray] | None:
    """``("mesh", type, vertices, triangles)`` of a coal mesh (None for any other shape).

    Vertices are ``(V, 3)`` floats [m], triangles ``(F, 3)`` vertex indices.
    """
    if not _is_mesh(geometry) or int(geometry.num_tris) == 0:
        return None
    vertices = np.array(geometry.vertices(), dtype=float).reshape(-1, 3)
    tri = geometry.tri_indices
    faces = np.array(
        [(t[0], t[1], t[2]) for t in map(tri, range(int(geometry.num_tris)))], dtype=np.int64
    ).reshape(-1, 3)
    return ("mesh", type(geometry), vertices, faces)


def mesh_from_state(state: tuple[str, type, np.ndarray, np.ndarray]) -> Any:
    """The coal mesh of a :func:`mesh_state` record (its tree built as coal's loader does)."""
    _, cls, vertices, faces = state
    mesh = cls()
    mesh.beginModel(len(faces), len(vertices))
    mesh.addVertices(np.ascontiguousarray(vertices, dtype=float))
    mesh.addTriangles(np.ascontiguousarray(faces, dtype=np.int64))
    mesh.endModel()
    mesh.computeLocalAABB()  # (coal's own archive keeps the local box: so does this copy)
    return mesh


def _reduce_mesh(mesh: Any) -> tuple[Any, ...]:
    """A finished triangle mesh as its vertices and triangles (else coal's own pickle)."""
    finished = mesh.build_state == coal.BVHBuildState.BVH_BUILD_STATE_PROCESSED
    state = mesh_state(mesh) if finished else None
    if state is None:
        return mesh.__reduce_ex__(2)  # (coal's archive of an unfinished mesh or a cloud)
    return mesh_from_state, (state,)


#: What pickles of a ``ConvexBase`` made by the previous version call (their points and
#: swept-sphere radius): the same function.
_convex_with_points = convex_with_points


def _reduce_convex_base(hull: Any) -> tuple[Any, ...]:
    """A hull without faces (``coal.ConvexBase``, which coal cannot pickle) as its points."""
    points = np.array(hull.points(), dtype=float).reshape(-1, 3)
    return convex_with_points, (points, float(hull.getSweptSphereRadius()))


def _shape(stored: Any) -> Any:
    if isinstance(stored, tuple) and stored and stored[0] == "mesh":
        return mesh_from_state(stored)
    return stored


# -- the picklers ----------------------------------------------------------------------------
def _restore_model(reduced: tuple[Any, ...], repairs: tuple[MimicRepair, ...]) -> pin.Model:
    cls, args, state = reduced
    model = cls(*args)
    model.__setstate__(state)
    repair_mimic_joints(model, repairs)
    return model


def _reduce_model(model: pin.Model) -> tuple[Any, ...]:
    reduced = model.__reduce_ex__(2)
    if not len(model.mimicking_joints):
        return reduced
    return _restore_model, (reduced[:3], mimic_repairs(model))


def _reduce_geometry(gm: pin.GeometryModel) -> tuple[Any, ...]:
    return geometry_from_state, (geometry_state(gm),)


def register() -> None:
    """Register the picklers of Pinocchio models, geometry models and coal meshes and hulls.

    ``pinocchio.Model``, ``pinocchio.GeometryModel``, ``coal.BVHModelOBB``,
    ``coal.BVHModelOBBRSS`` and ``coal.ConvexBase`` (this exact class: a ``coal.Convex``
    pickles as coal pickles it).
    """
    copyreg.pickle(pin.Model, _reduce_model)
    copyreg.pickle(pin.GeometryModel, _reduce_geometry)
    for mesh in (coal.BVHModelOBB, coal.BVHModelOBBRSS):
        copyreg.pickle(mesh, _reduce_mesh)
    copyreg.pickle(coal.ConvexBase, _reduce_convex_base)


register()
