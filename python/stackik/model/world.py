"""The world around a robot: obstacles and attached objects, as shared, swappable data.

A :class:`World` holds named **obstacles** (coal shapes at world poses, optionally with
a velocity) and **attached objects** (shapes carried by a robot link: a grasped part, a
tool). It is data, not behaviour: the collision pipeline of each solver reads it.

**Threads.** Obstacle poses are world state that a sensor thread updates while control
loops run. Everything a reader needs is one immutable :class:`WorldState` (layout,
poses, velocities), published by swapping one reference (read-copy-update):

- a writer (``set_obstacle_pose`` and friends) builds the next state from the current
  one under a writer-only lock and publishes it with a single reference assignment;
- a reader (a solver step) reads :attr:`World.state` once and works on that snapshot:
  it never holds a lock, never sees a torn pose (the arrays it holds are never written
  again), and sees every update published before its step began.

Structural changes (adding, removing, attaching) publish a state with a new
:attr:`WorldLayout.revision`; pose and velocity updates keep the layout and publish new
pose arrays only. Every solver on a robot reads the robot's world at each step, so an
update takes effect at the next step of each of them, including solvers configured
before the obstacle existed.

Units: metres, radians, seconds; velocities in world axes, the linear one at the
obstacle's origin [m/s], the angular one [rad/s].
"""

from __future__ import annotations

import math
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import coal
import numpy as np
import pinocchio as pin

from .. import _pickling, _validate
from ..errors import InvalidInput, MeshNotFound, ObstacleNotFound, ShapeError, StackIKError
from ..spatial import as_se3, is_rigid
from ._pose_kernel import first_fault, place_poses, pose_ok, stamped_twist, stamped_twists
from .collision import as_convex, convex_hull
from .meshes import collada_unit
from .serialization import mesh_from_state, mesh_state

__all__ = [
    "AttachedObject",
    "Obstacle",
    "World",
    "WorldLayout",
    "WorldState",
    "check_shape",
    "check_state",
    "load_mesh",
]

#: coal shape types an obstacle or attached object may have.
SHAPE_TYPES: tuple[type, ...] = (
    coal.Box,
    coal.Sphere,
    coal.Capsule,
    coal.Cylinder,
    coal.Cone,
    coal.Ellipsoid,
    coal.Plane,
    coal.Halfspace,
    coal.ConvexBase,
    coal.BVHModelBase,
)

#: Largest size accepted for a shape dimension [m].
MAX_SIZE = _validate.MAX_MAGNITUDE

#: Smallest extent a loaded mesh must have in at least one axis [m]: a mesh scaled below
#: it (1 um) in every axis is a wrong scale, not a part (a flat or thin mesh is fine).
MIN_MESH_EXTENT = 1e-6


def _sizes(geometry: Any) -> list[tuple[str, float]]:
    """The named dimensions of a primitive [m] (empty for hulls, meshes and planes)."""
    g = geometry
    if isinstance(g, coal.Box):
        return [(f"half side {a}", float(v)) for a, v in zip("xyz", g.halfSide, strict=True)]
    if isinstance(g, coal.Sphere):
        return [("radius", float(g.radius))]
    if isinstance(g, (coal.Capsule, coal.Cylinder, coal.Cone)):
        return [("radius", float(g.radius)), ("half length", float(g.halfLength))]
    if isinstance(g, coal.Ellipsoid):
        return [(f"radius {a}", float(v)) for a, v in zip("xyz", g.radii, strict=True)]
    return []


def _check_plane(geometry: Any, what: str) -> None:
    n = np.asarray(geometry.n, dtype=float)
    d = float(geometry.d)
    if not (np.isfinite(n).all() and math.isfinite(d)):
        raise InvalidInput(f"{what}: plane normal and offset must be finite", what=what)
    if abs(float(np.linalg.norm(n)) - 1.0) > 1e-9:
        raise InvalidInput(f"{what}: plane normal must be a unit vector, got {n}", what=what)
    if abs(d) > MAX_SIZE:
        raise InvalidInput(f"{what}: plane offset {d} beyond {MAX_SIZE:g} m", what=what)


def _check_points(geometry: Any, what: str) -> None:
    convex = isinstance(geometry, coal.ConvexBase)
    if not (geometry.num_points if convex else geometry.num_vertices):
        # (asked first: coal crashes when the points of an empty shape are read)
        raise InvalidInput(f"{what}: the shape has no vertices", what=what)
    if not convex:
        _check_mesh(geometry, what)
    pts = np.asarray(geometry.points() if convex else geometry.vertices(), dtype=float)
    if pts.size == 0:
        raise InvalidInput(f"{what}: the shape has no vertices", what=what)
    if not np.isfinite(pts).all() or np.abs(pts).max() > MAX_SIZE:
        raise InvalidInput(f"{what}: vertices must be finite and within {MAX_SIZE:g} m", what=what)


def _check_mesh(geometry: Any, what: str) -> None:
    """A BVH mesh must be finished (``endModel()``) and made of triangles.

    coal crashes the process on the first distance to an unfinished mesh, and refuses
    (a bare ``ValueError``, in every later query) a point cloud.
    """
    state = geometry.build_state
    if state != coal.BVHBuildState.BVH_BUILD_STATE_PROCESSED:
        raise InvalidInput(
            f"{what}: the mesh is not finished (build state {state.name}; call endModel() "
            "after adding its triangles)",
            what=what,
        )
    if geometry.getModelType() != coal.BVHModelType.BVH_MODEL_TRIANGLES or not geometry.num_tris:
        raise InvalidInput(
            f"{what}: the mesh has no triangles (a point cloud: coal computes no distance to "
            "it; give its convex hull, stackik.model.collision.convex_hull(points))",
            what=what,
        )


def check_shape(geometry: object, what: str = "shape") -> coal.CollisionGeometry:
    """Check that ``geometry`` is a supported coal shape of physical size.

    Raises:
        InvalidInput: Not a supported coal shape, or a dimension that is not finite, not
            positive or beyond 1e6 m (a plane normal that is not a unit vector); a hull
            or mesh without vertices, or with vertices not finite or beyond 1e6 m; a BVH
            mesh that is not finished (no ``endModel()``) or has no triangles (a point
            cloud).
    """
    if not isinstance(geometry, SHAPE_TYPES):
        names = sorted(t.__name__ for t in SHAPE_TYPES)
        raise InvalidInput(
            f"{what} must be a coal shape ({', '.join(names)}), got {type(geometry).__name__}",
            what=what,
        )
    for name, value in _sizes(geometry):
        if not (math.isfinite(value) and 0.0 < value <= MAX_SIZE):
            raise InvalidInput(
                f"{what}: {name} must be in (0, {MAX_SIZE:g}] m, got {value}", what=what
            )
    if isinstance(geometry, (coal.Plane, coal.Halfspace)):
        _check_plane(geometry, what)
    elif isinstance(geometry, (coal.ConvexBase, coal.BVHModelBase)):
        _check_points(geometry, what)
    return geometry


def _stored_shape(geometry: coal.CollisionGeometry, what: str) -> coal.CollisionGeometry:
    """The shape a world keeps for a checked one: itself, or the same solid or surface.

    - A ``ConvexBase`` that is not a ``coal.Convex`` (``convexHull(points, False, ...)``)
      cannot be pickled by coal: it is kept as a ``coal.Convex`` with the same points in
      the same order (:func:`~stackik.model.collision.as_convex`).
    - A ``coal.BVHModelOBB`` mesh is kept as a ``coal.BVHModelOBBRSS`` with the same
      vertices and triangles, the type coal's mesh loader builds: coal computes no
      distance between the two types (a bare ``ValueError`` in every query of such a
      pair: an OBB part held near a mesh loaded from a file), and prints a line for
      every distance to an OBB mesh. The distances are the same.

    Raises:
        InvalidInput: qhull cannot hull its points (naming ``what``).
    """
    if isinstance(geometry, coal.ConvexBase) and not isinstance(geometry, coal.Convex):
        try:
            return as_convex(geometry)
        except InvalidInput as exc:
            raise InvalidInput(f"{what}: {exc}", what=what) from None
    if isinstance(geometry, coal.BVHModelBase) and type(geometry) is not coal.BVHModelOBBRSS:
        state = mesh_state(geometry)
        if state is not None:  # (checked: a finished triangle mesh)
            return mesh_from_state(("mesh", coal.BVHModelOBBRSS, state[2], state[3]))
    return geometry


def _mesh_scale(scale: object) -> np.ndarray:
    """A mesh scale as three positive finite factors (a number applies to every axis).

    Raises:
        InvalidInput: Not numbers, or not positive and finite (at most ``MAX_SIZE``).
        ShapeError: Neither one number nor three.
    """
    if isinstance(scale, (bool, str, bytes)) or (
        isinstance(scale, (list, tuple)) and any(isinstance(v, (bool, str)) for v in scale)
    ):
        message = f"mesh scale must be a number or three numbers, got {scale!r}"
        raise InvalidInput(message, what="scale", value=scale)
    try:
        s = np.asarray(scale, dtype=float)
    except (TypeError, ValueError):
        message = f"mesh scale must be a number or three numbers, got {scale!r}"
        raise InvalidInput(message, what="scale", value=scale) from None
    if s.shape not in ((), (3,)):
        raise ShapeError("mesh scale", (3,), s.shape)
    s = np.broadcast_to(s, (3,)).copy()
    if not (np.isfinite(s).all() and (s > 0).all() and (s <= MAX_SIZE).all()):
        raise InvalidInput(
            f"mesh scale must be positive and finite, got {scale!r}", what="scale", value=scale
        )
    return s


def load_mesh(
    path: str | os.PathLike[str], scale: float | Sequence[float] = 1.0, convex: bool = True
) -> coal.CollisionGeometry:
    """Load an STL/OBJ/DAE mesh with coal; its convex hull unless ``convex`` is False.

    A COLLADA file's ``<unit meter="...">`` is applied (assimp ignores it): a part drawn
    in millimetres loads at its size in metres, as RViz and Gazebo show it.

    Args:
        path: Mesh file.
        scale: Uniform scale, or per-axis scales (3,), applied on top of a COLLADA unit.
        convex: Return the convex hull (fast distances, compiled); False keeps the
            exact triangle mesh (a coal query per pair, about 100x slower).

    Raises:
        MeshNotFound: The file does not exist.
        ShapeError: A scale of neither one number nor three.
        InvalidInput: Bad scale, a file coal cannot read or that has no vertices, or a
            mesh that spans less than 1 um (:data:`MIN_MESH_EXTENT`) in every axis at
            its scale (a flat or thin one is fine: its hull is given 1 mm of thickness).
    """
    from .loading import check_path

    file = check_path(path, "mesh path", hint=None)
    if not file.is_file():
        raise MeshNotFound(str(path), str(path), [str(file.parent)], subject="obstacle mesh")
    s = _mesh_scale(scale)
    try:
        s = s * collada_unit(file)  # (assimp ignores COLLADA's unit)
    except ValueError as exc:
        raise InvalidInput(f"mesh {str(path)!r}: {exc}", what="path", value=str(path)) from None
    try:
        mesh = coal.MeshLoader().load(str(file), s)
    except (RuntimeError, ValueError) as exc:
        raise InvalidInput(f"coal cannot read mesh {str(path)!r}: {exc}", what="path") from exc
    check_shape(mesh, f"mesh {str(path)!r}")
    vertices = np.asarray(mesh.vertices(), dtype=float)
    _check_extent(vertices, str(path), scale)
    if not convex:
        return mesh
    return convex_hull(vertices)


def _check_extent(vertices: np.ndarray, path: str, scale: object) -> None:
    """Refuse a loaded mesh smaller than :data:`MIN_MESH_EXTENT` in every axis.

    Raises:
        InvalidInput: Naming the file, the scale and the extent.
    """
    extent = vertices.max(axis=0) - vertices.min(axis=0)
    if float(extent.max()) < MIN_MESH_EXTENT:
        raise InvalidInput(
            f"mesh {path!r} at scale {scale!r} spans {float(extent.max()):.3g} m at most "
            f"(below {MIN_MESH_EXTENT:g} m in every axis): nothing of physical size is left "
            "(a wrong scale or unit?)",
            what="scale",
            value=scale,
        )


@dataclass(frozen=True)
class Obstacle:
    """A named shape in the world.

    Attributes:
        name: Unique name.
        geometry: The coal shape (in its own frame).
        min_distance: Minimum distance [m] kept from this obstacle (None: each
            collision constraint's own ``min_distance``).
        source: Mesh file it was loaded from, or None.
    """

    name: str
    geometry: coal.CollisionGeometry
    min_distance: float | None = None
    source: str | None = None


@dataclass(frozen=True)
class AttachedObject:
    """A shape carried by a robot link (a grasped part, a tool).

    Attributes:
        name: Unique name (obstacles and attached objects share one namespace).
        link: The robot link (frame) it moves with.
        geometry: The coal shape.
        placement: Its pose in the link frame (4x4) [m].
        allowed_links: Links it may touch besides its own (e.g. the fingers holding it).
    """

    name: str
    link: str
    geometry: coal.CollisionGeometry
    placement: np.ndarray
    allowed_links: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class WorldLayout:
    """The structure of a world at one revision: its obstacles and attached objects.

    Layouts compare (and hash) by identity: each change of a world's objects makes a new
    one, and two worlds never share one (unless one was made from the other's snapshot,
    with the same objects). Caches of what a layout decides (pair sets, geometry tables)
    key on the layout itself, never on its revision alone: a new world counts its
    revisions from 1 again.

    Attributes:
        revision: Changes whenever an obstacle or attached object is added or removed.
        obstacles: Obstacles in slot order (the rows of the pose arrays).
        attached: Attached objects.
    """

    revision: int = 0
    obstacles: tuple[Obstacle, ...] = ()
    attached: tuple[AttachedObject, ...] = ()
    slots: Mapping[str, int] = field(default_factory=dict)

    def slot(self, name: str) -> int:
        """Row of an obstacle in the pose arrays.

        Raises:
            ObstacleNotFound: Unknown obstacle (the error lists the known ones).
        """
        try:
            return self.slots[name]
        except (KeyError, TypeError):
            raise ObstacleNotFound(str(name), self.slots) from None

    def names(self) -> list[str]:
        """Every name in use: obstacles, then attached objects."""
        return [o.name for o in self.obstacles] + [a.name for a in self.attached]


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class WorldState:
    """One consistent snapshot of a world: layout, poses and velocities (read only).

    Attributes:
        layout: The structure.
        rotations: World rotation of each obstacle, (n, 3, 3).
        translations: World position of each obstacle [m], (n, 3).
        linear_velocity: Velocity of each obstacle's origin [m/s], (n, 3).
        angular_velocity: Angular velocity [rad/s], (n, 3).
        velocity_known: Whether a velocity was given or estimated for each obstacle
            (else a consumer may estimate it from successive snapshots).
        version: Increases with every publication.
    """

    layout: WorldLayout
    rotations: np.ndarray
    translations: np.ndarray
    linear_velocity: np.ndarray
    angular_velocity: np.ndarray
    velocity_known: np.ndarray
    version: int = 0

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickle read only, as published (NumPy's pickles drop the flag).

        A copy's kernels then see the array types of the original's, so
        ``stackik.warmup`` on a copy readies the original's first step.
        """
        for name, value in state.items():
            object.__setattr__(
                self, name, _frozen(value) if isinstance(value, np.ndarray) else value
            )

    @classmethod
    def empty(cls) -> WorldState:
        """A world with nothing in it."""
        z = _frozen(np.zeros((0, 3)))
        return cls(
            WorldLayout(),
            _frozen(np.zeros((0, 3, 3))),
            z,
            z,
            z,
            _frozen(np.zeros(0, dtype=bool)),
        )

    def pose(self, name: str) -> pin.SE3:
        """World pose of an obstacle (a copy)."""
        k = self.layout.slot(name)
        return pin.SE3(self.rotations[k].copy(), self.translations[k].copy())


def _given_matrix(pose: object) -> np.ndarray | None:
    """An SE3's homogeneous matrix, or a float 4x4 array itself (unchecked); else None."""
    if isinstance(pose, pin.SE3):
        return pose.homogeneous
    if isinstance(pose, np.ndarray) and pose.dtype == np.float64 and pose.shape == (4, 4):
        return pose
    return None


def _converted(pose: object, name: str) -> np.ndarray:
    """The pose through :func:`~stackik.spatial.as_se3` (which raises the typed error)."""
    return as_se3(pose, f"obstacle {name!r} pose").homogeneous


def _pose_matrix(
    pose: object, name: str, rigid: Callable[[np.ndarray], bool] = is_rigid
) -> np.ndarray:
    """An obstacle pose as a checked 4x4 float matrix of its own.

    SE3 and float 4x4 poses that ``rigid`` accepts are taken as they are (a pose
    update passes the compiled check, :func:`~stackik.model._pose_kernel.pose_ok`);
    the rest go through :func:`~stackik.spatial.as_se3`, which raises the typed error.
    """
    H = _given_matrix(pose)
    if H is None:
        return _converted(pose, name)
    if H is pose:  # (the caller's array: checked as copied)
        H = H.copy()
    if rigid(H):
        return H
    return _converted(pose, name)


def _pose_stack(poses: Mapping[str, object], names: list[str]) -> np.ndarray:
    """The poses of ``names`` (the keys of ``poses``) as a checked ``(m, 4, 4)`` stack.

    ``pinocchio.SE3`` and float 4x4 poses are copied as they are and checked in one
    compiled call; other forms, and a pose that fails a check, go through
    :func:`~stackik.spatial.as_se3`, which raises the typed error naming the obstacle.
    """
    H = np.empty((len(names), 4, 4))
    for k, name in enumerate(names):
        given = _given_matrix(poses[name])
        H[k] = _converted(poses[name], name) if given is None else given
    k = first_fault(H, 0)
    while k >= 0:  # (as_se3 raises, or takes a last row within its tolerance)
        H[k] = _converted(poses[names[k]], names[k])
        k = first_fault(H, k + 1)
    return H


def _stamp(stamp: object) -> float:
    """A pose's time stamp as a finite float [s] (InvalidInput otherwise)."""
    if type(stamp) is float and -math.inf < stamp < math.inf:  # (the common case)
        return stamp
    t = _validate.real(stamp, "stamp")
    if not math.isfinite(t):
        raise InvalidInput(f"stamp must be finite, got {stamp!r}", what="stamp")
    return t


def _stale(name: str, t: float, last: float) -> InvalidInput:
    """The error of a stamp earlier than the obstacle's last one (a late message)."""
    return InvalidInput(
        f"obstacle {name!r}: stamp {t!r} is earlier than its last stamp {last!r} "
        "(a late or out-of-order message); nothing was changed",
        what="stamp",
        value=t,
    )


def _too_fast(
    name: str, t0: float, t: float, linear: np.ndarray, angular: np.ndarray
) -> InvalidInput:
    """The error of a stamped velocity beyond the bound of an explicit one.

    ``linear`` [m/s] and ``angular`` [rad/s] are the refused estimate.
    """
    speed = math.hypot(*linear.tolist())  # (no overflow on the way to the norm)
    spin = math.hypot(*angular.tolist())
    return InvalidInput(
        f"obstacle {name!r}: the stamps {t0!r} and {t!r} give a velocity of {speed:.3g} m/s, "
        f"{spin:.3g} rad/s (each component must be finite and within "
        f"+-{_validate.MAX_MAGNITUDE:g}: stamps too close together for the pose's noise?); "
        "nothing was changed",
        what="stamp",
        value=t,
    )


def _velocity_copies(s: WorldState) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Writable copies of a snapshot's linear and angular velocities and known flags."""
    return s.linear_velocity.copy(), s.angular_velocity.copy(), s.velocity_known.copy()


def _entry(kind: str, k: int, entry: tuple, make: Callable[..., Any]) -> Any:
    """``make(entry)``, a mistake re-raised naming the entry (``obstacles[k] ('name')``)."""
    try:
        return make(tuple(entry))
    except StackIKError as exc:
        name = entry[0] if entry else None
        raise InvalidInput(f"{kind}[{k}] ({name!r}): {exc}", what=kind) from exc
    except (TypeError, ValueError) as exc:  # (not a tuple, or a wrong number of fields)
        raise InvalidInput(f"{kind}[{k}]: {exc}", what=kind) from None


def _check_name(name: object, what: str = "name") -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput(f"{what} must be a non-empty string, got {name!r}", what=what)
    return name


def allowed_link_names(value: object) -> tuple[str, ...]:
    """``allowed_links`` as a tuple of names: one link name, or an iterable of them.

    Raises:
        InvalidInput: Neither a name nor an iterable of non-empty strings.
    """
    if isinstance(value, str):  # one link (iterating it would give its letters)
        return (_check_name(value, "allowed link"),)
    return tuple(_check_name(a, "allowed link") for a in _validate.items(value, "allowed_links"))


def _velocity(value: object, what: str) -> np.ndarray:
    return _validate.bounded_vector(value, 3, _validate.MAX_MAGNITUDE, what)


def _with_poses(
    state: WorldState,
    rotations: np.ndarray,
    translations: np.ndarray,
    velocities: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> WorldState:
    """``state`` with new pose arrays (and velocities) and the next version (a new snapshot).

    A sensor thread's pose update publishes through here: it skips the frozen
    dataclass's per-field ``__setattr__`` and builds exactly what
    ``WorldState(layout, rotations, translations, ...)`` would. The arrays are taken
    over as they are: frozen arrays of checked poses, of ``state``'s shapes and types;
    ``velocities`` is ``(linear_velocity, angular_velocity, velocity_known)``, the
    state's own when None.
    """
    new = object.__new__(WorldState)
    fields = new.__dict__
    fields.update(state.__dict__)
    fields["rotations"] = rotations
    fields["translations"] = translations
    if velocities is not None:
        v, w, known = velocities
        fields["linear_velocity"] = v
        fields["angular_velocity"] = w
        fields["velocity_known"] = known
    fields["version"] = state.version + 1
    return new


def check_state(state: WorldState) -> None:
    """Check a snapshot's arrays: one row per obstacle, rigid finite poses, finite velocities.

    Raises:
        ShapeError: An array without one row per obstacle of the layout.
        NonFiniteInput, InvalidTransform, InvalidInput: An obstacle's pose or velocity
            (as :meth:`World.set_obstacle_pose` and :meth:`World.set_obstacle_velocity`
            refuse them; the message names the obstacle).
    """
    obstacles = state.layout.obstacles
    n = len(obstacles)
    arrays = (
        ("rotations", state.rotations, (n, 3, 3)),
        ("translations", state.translations, (n, 3)),
        ("linear_velocity", state.linear_velocity, (n, 3)),
        ("angular_velocity", state.angular_velocity, (n, 3)),
        ("velocity_known", state.velocity_known, (n,)),
    )
    for what, a, shape in arrays:
        if np.shape(a) != shape:
            raise ShapeError(f"world state {what}", shape, np.shape(a))
    H = np.zeros((n, 4, 4))
    H[:, :3, :3] = state.rotations
    H[:, :3, 3] = state.translations
    H[:, 3, 3] = 1.0
    k = first_fault(H, 0)
    while k >= 0:  # (as_se3 raises, or accepts a pose within its tolerance)
        _converted(H[k], obstacles[k].name)
        k = first_fault(H, k + 1)
    for what, v in (("linear", state.linear_velocity), ("angular", state.angular_velocity)):
        if v.size and not float(np.abs(v).max()) <= _validate.MAX_MAGNITUDE:
            for row, o in zip(v, obstacles, strict=True):
                _velocity(row, f"obstacle {o.name!r} {what} velocity")


class World:
    """Obstacles and attached objects shared by robots and solvers (see the module doc).

    Every robot has a default world (``robot.world``); the ``robot.add_obstacle`` family
    is a convenience on it. A world may also be built on its own and given to several
    robots (``robot.set_world``) or to one solver (``solver.set_world``).

    Example:
        >>> import coal, numpy as np
        >>> world = World()
        >>> world.add_obstacle("table", coal.Box(1.0, 0.6, 0.05), np.eye(4))
        >>> world.get_obstacle_names()
        ['table']
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = WorldState.empty()
        self._stamps: dict[str, tuple[float, np.ndarray]] = {}
        #: Obstacles whose velocity is an estimate from their stamps (not given).
        self._estimated: set[str] = set()
        self._links: dict[int, frozenset[str]] = {}
        self._reserved: dict[int, frozenset[str]] = {}
        self._finalizers: dict[int, weakref.finalize] = {}
        self._dead: list[int] = []  # (keys of collected users, see _purge)

    @classmethod
    def from_state(cls, state: WorldState) -> World:
        """A new world whose current state is ``state`` (a frozen copy of a snapshot).

        The snapshot's arrays are read only, so the copy shares them; later updates of
        the world the snapshot came from do not reach it (and the other way round).
        A reachability study runs on such a copy, so every chunk sees the same world.
        The snapshot is checked as :meth:`set_obstacle_poses` and
        :meth:`set_obstacle_velocity` check what they publish (a snapshot of a world
        always passes; one assembled by hand, say with ``dataclasses.replace``, may not).

        Raises:
            InvalidInput: ``state`` is not a :class:`WorldState`, or a velocity beyond
                1e6 (the message names the obstacle).
            ShapeError: Its arrays do not have one row per obstacle of its layout.
            NonFiniteInput, InvalidTransform: An obstacle's pose or velocity is not finite,
                or its pose not a rigid transform within 1e6 m (the message names the
                obstacle).
        """
        if not isinstance(state, WorldState):
            raise InvalidInput(
                f"state must be a WorldState, got {type(state).__name__}", what="state"
            )
        check_state(state)
        world = cls()
        world._state = state
        return world

    # -- pickling: the lock is rebuilt; the robots using it bind again --------------------
    def __getstate__(self) -> dict[str, Any]:
        dropped = ("_lock", "_links", "_reserved", "_finalizers", "_dead")
        return _pickling.without(self.__dict__, dropped)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("_estimated", set())  # (a world pickled before it existed)
        self._lock = threading.Lock()
        self._links = {}
        self._reserved = {}
        self._finalizers = {}
        self._dead = []

    # -- reading ---------------------------------------------------------------------------
    @property
    def state(self) -> WorldState:
        """The current snapshot (one atomic read; never changes afterwards)."""
        return self._state

    @property
    def revision(self) -> int:
        """The layout revision (changes when obstacles are added or removed)."""
        return self._state.layout.revision

    def get_obstacle_names(self) -> list[str]:
        """Names of the obstacles, in the order they were added."""
        return [o.name for o in self._state.layout.obstacles]

    def get_attached_object_names(self) -> list[str]:
        """Names of the attached objects."""
        return [a.name for a in self._state.layout.attached]

    def has_obstacle(self, name: str) -> bool:
        """Whether an obstacle of that name exists.

        Raises:
            InvalidInput: ``name`` is not a string.
        """
        return _validate.name(name, "obstacle name") in self._state.layout.slots

    def get_obstacle(self, name: str) -> Obstacle:
        """The obstacle of that name (ObstacleNotFound lists the known ones)."""
        layout = self._state.layout
        return layout.obstacles[layout.slot(name)]

    def get_obstacle_pose(self, name: str) -> pin.SE3:
        """World pose of an obstacle (ObstacleNotFound lists the known ones)."""
        return self._state.pose(name)

    def get_obstacle_velocity(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """``(linear [m/s], angular [rad/s])`` velocity of an obstacle (zeros: unknown)."""
        state = self._state
        k = state.layout.slot(name)
        return state.linear_velocity[k].copy(), state.angular_velocity[k].copy()

    def get_attached_object(self, name: str) -> AttachedObject:
        """The attached object of that name (ObstacleNotFound lists the known ones)."""
        for a in self._state.layout.attached:
            if a.name == name:
                return a
        raise ObstacleNotFound(str(name), self.get_attached_object_names(), "attached object")

    # -- binding to robots -----------------------------------------------------------------
    def bind(self, owner: object, links: Iterable[str], reserved: Iterable[str] = ()) -> None:
        """Register (or update) a robot that uses this world.

        Attached objects must then name one of its ``links``, and no object may take
        one of the ``reserved`` names (its links and collision geometries), so that a
        name in a pair list always means one thing.

        Raises:
            InvalidInput: An existing object names a link the robot lacks, or takes a
                reserved name.
        """
        known = frozenset(_check_name(k, "link") for k in _validate.items(links, "links"))
        names = frozenset(_check_name(r, "name") for r in _validate.items(reserved, "reserved"))
        names |= known
        layout = self._state.layout
        for a in layout.attached:
            self._check_link(a.link, [known])
        clash = sorted(names.intersection(layout.names()))
        if clash:
            raise InvalidInput(f"world objects {clash} take names of the robot's links/geometries")
        with self._lock:
            self._purge()
            if id(owner) not in self._finalizers:  # (forgotten when the owner is collected)
                self._finalizers[id(owner)] = weakref.finalize(owner, self._dead.append, id(owner))
            self._links[id(owner)] = known
            self._reserved[id(owner)] = names

    def unbind(self, owner: object) -> None:
        """Forget a robot registered with :meth:`bind` (it uses another world now)."""
        with self._lock:
            finalizer = self._finalizers.pop(id(owner), None)
            self._links.pop(id(owner), None)
            self._reserved.pop(id(owner), None)
        if finalizer is not None:
            finalizer.detach()  # (it would keep this world alive as long as the owner)

    def _purge(self) -> None:
        """Forget the users collected since (callers hold the writer lock).

        A collected user's finalizer only appends its key to ``_dead`` (an atomic append,
        no lock: it may run inside a locked section of this very thread); the records are
        dropped here, before they are read.
        """
        while self._dead:
            key = self._dead.pop()
            self._finalizers.pop(key, None)
            self._links.pop(key, None)
            self._reserved.pop(key, None)

    @staticmethod
    def _check_link(link: str, link_sets: Sequence[frozenset[str]]) -> None:
        for known in link_sets:
            if link not in known:
                n = len(link_sets)
                shared = (
                    f"every robot using this world places its attached objects, and {n} do: "
                    "the link must be one of each (give the robots worlds of their own); "
                    if n > 1
                    else ""
                )
                raise InvalidInput(
                    f"link {link!r} is not a link of a robot using this world ({shared}"
                    f"that robot's links: {sorted(known)})",
                    what="link",
                    value=link,
                )

    # -- publishing ------------------------------------------------------------------------
    def _publish(self, state: WorldState) -> None:
        """Swap in the next state (callers hold the writer lock)."""
        self._state = replace(state, version=self._state.version + 1)

    def _new_layout(self, obstacles: tuple[Obstacle, ...], attached: tuple) -> WorldLayout:
        slots = {o.name: k for k, o in enumerate(obstacles)}
        return WorldLayout(self._state.layout.revision + 1, obstacles, attached, slots)

    def _free_name(self, name: str) -> str:
        _check_name(name)
        self._purge()
        if name == "*":
            raise InvalidInput(
                "'*' cannot name an object: it stands for every geometry in exclude_pairs",
                what="name",
            )
        if name in self._state.layout.names():
            raise InvalidInput(f"the world already has an object named {name!r}", what="name")
        if any(name in names for names in self._reserved.values()):
            raise InvalidInput(
                f"{name!r} names a link or collision geometry of a robot using this world",
                what="name",
            )
        return name

    # -- obstacles -------------------------------------------------------------------------
    def add_obstacle(
        self,
        name: str,
        shape: coal.CollisionGeometry,
        pose: object = None,
        *,
        min_distance: float | None = None,
        source: str | None = None,
    ) -> None:
        """Add an obstacle.

        Args:
            name: Unique name.
            shape: A coal ``Box``, ``Sphere``, ``Capsule``, ``Cylinder``, ``Cone``,
                ``Ellipsoid``, ``Plane``, ``Halfspace``, ``ConvexBase`` or BVH mesh (a
                finished triangle mesh: ``endModel()`` called). A ``ConvexBase`` without
                faces is kept as a ``coal.Convex`` with the same points (coal cannot
                pickle it), a ``BVHModelOBB`` as a ``BVHModelOBBRSS`` with the same
                triangles (coal pairs the two types with no distance).
            pose: World pose (``pinocchio.SE3``, ``stackik.SE3`` or 4x4); identity when
                omitted.
            min_distance: Minimum distance [m] to keep from it (None: the collision
                constraint's ``min_distance``).
            source: Where the shape came from (a mesh file), for descriptions.

        Raises:
            InvalidInput: Name in use or empty, unsupported or absurd shape (an
                unfinished mesh or a point cloud among them), bad distance, a ``source``
                that is not a string.
            ShapeError, NonFiniteInput, InvalidTransform: Bad pose.
        """
        with self._lock:
            self._publish_added([self._new_obstacle((name, shape, pose, min_distance, source))], [])

    def add_objects(
        self,
        obstacles: Sequence[tuple] = (),
        attached: Sequence[tuple] = (),
    ) -> None:
        """Add obstacles and attached objects together: all of them or, on a mistake, none.

        Readers see the world before or after the whole addition (one new snapshot),
        never a part of it.

        Args:
            obstacles: ``(name, shape, pose, min_distance, source)`` per obstacle, the
                arguments of :meth:`add_obstacle`.
            attached: ``(name, link, shape, pose, allowed_links)`` per object, the
                arguments of :meth:`attach_object`.

        Raises:
            InvalidInput: A name given twice, or any mistake :meth:`add_obstacle` or
                :meth:`attach_object` refuses; the message names the entry
                (``obstacles[k] ('name'): ...``). Nothing is added then.
        """
        obstacles = list(_validate.items(obstacles, "obstacles"))
        attached = list(_validate.items(attached, "attached"))
        names = [
            e[0] for e in (*obstacles, *attached)
            if isinstance(e, (tuple, list)) and e and isinstance(e[0], str)
        ]  # fmt: skip
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise InvalidInput(f"names {twice} are given twice", what="name")
        with self._lock:
            new_obstacles = [
                _entry("obstacles", k, entry, self._new_obstacle)
                for k, entry in enumerate(obstacles)
            ]
            new_attached = [
                _entry("attached", k, entry, self._new_attached) for k, entry in enumerate(attached)
            ]
            self._publish_added(new_obstacles, new_attached)

    def _new_obstacle(self, entry: tuple) -> tuple[Obstacle, pin.SE3]:
        """A checked obstacle and its pose from ``(name, shape, pose, min_distance, source)``.

        Callers hold the writer lock.
        """
        name, shape, pose, min_distance, source = entry
        self._free_name(name)
        shape = _stored_shape(check_shape(shape, f"obstacle {name!r}"), f"obstacle {name!r}")
        T = pin.SE3.Identity() if pose is None else as_se3(pose, f"obstacle {name!r} pose")
        d = None
        if min_distance is not None:
            d = _validate.positive_float(min_distance, "min_distance", allow_zero=True)
        if source is not None and not isinstance(source, str):
            raise InvalidInput(
                f"source must be a string or None, got {source!r}", what="source", value=source
            )
        return Obstacle(name, shape, d, source), T

    def _publish_added(
        self, obstacles: list[tuple[Obstacle, pin.SE3]], attached: list[AttachedObject]
    ) -> None:
        """Publish the state with these obstacles and attached objects added, as one."""
        s = self._state
        layout = self._new_layout(
            (*s.layout.obstacles, *(o for o, _ in obstacles)), (*s.layout.attached, *attached)
        )
        if not obstacles:
            self._publish(replace(s, layout=layout))
            return
        rot = np.array([T.rotation for _, T in obstacles])
        trans = np.array([T.translation for _, T in obstacles])
        z = np.zeros((len(obstacles), 3))
        self._publish(
            WorldState(
                layout,
                _frozen(np.concatenate([s.rotations, rot])),
                _frozen(np.concatenate([s.translations, trans])),
                _frozen(np.concatenate([s.linear_velocity, z])),
                _frozen(np.concatenate([s.angular_velocity, z])),
                _frozen(np.concatenate([s.velocity_known, np.zeros(len(obstacles), bool)])),
            )
        )

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
        """Add an obstacle from an STL/OBJ/DAE file (its convex hull unless ``convex=False``).

        Raises:
            MeshNotFound: No such file.
            InvalidInput: Unreadable mesh, bad scale or name.
        """
        _check_name(name)
        mesh = load_mesh(path, scale, convex=_validate.flag(convex, "convex"))
        self.add_obstacle(name, mesh, pose, min_distance=min_distance, source=str(path))

    def remove_obstacle(self, name: str) -> None:
        """Remove an obstacle (ObstacleNotFound lists the known ones)."""
        with self._lock:
            s = self._state
            k = s.layout.slot(name)
            keep = [i for i in range(len(s.layout.obstacles)) if i != k]
            layout = self._new_layout(tuple(s.layout.obstacles[i] for i in keep), s.layout.attached)
            self._end_series(name)
            self._publish(
                WorldState(
                    layout,
                    _frozen(s.rotations[keep]),
                    _frozen(s.translations[keep]),
                    _frozen(s.linear_velocity[keep]),
                    _frozen(s.angular_velocity[keep]),
                    _frozen(s.velocity_known[keep]),
                )
            )

    def set_obstacle_pose(self, name: str, pose: object, stamp: float | None = None) -> None:
        """Move an obstacle (atomic; cheap enough for a sensor thread at 1 kHz).

        Args:
            name: Obstacle name.
            pose: New world pose (``pinocchio.SE3``, ``stackik.SE3`` or 4x4).
            stamp: Time of the measurement [s]. Successive stamped poses give the
                obstacle's velocity (finite differences), which the collision rows use
                for its approach speed; an explicit :meth:`set_obstacle_velocity` is
                replaced by the estimate. The estimate holds until the next pose: a
                pose without a stamp clears it (the solver then estimates the motion
                from its own steps), as does a velocity given explicitly; either ends
                the series, and the next stamp starts a new one at any time (a
                restarted sensor clock). Within a series the stamps must not go back:
                a stamp earlier than the obstacle's last one (a late message) is
                refused, and one equal to it replaces the pose (and the reference the
                next stamp is differentiated against) and keeps the velocity. The
                estimate is held to the bound of :meth:`set_obstacle_velocity`
                (finite, every component within 1e6).

        Raises:
            ObstacleNotFound: Unknown name.
            ShapeError, NonFiniteInput, InvalidTransform: Bad pose.
            InvalidInput: Non-finite stamp; a stamp earlier than the obstacle's last
                one (the message names the obstacle and both stamps); a velocity
                estimate that is not finite or beyond 1e6 (stamps too close together
                for the pose's noise: the message names the obstacle, both stamps and
                the estimated speed). Nothing changes then: pose, velocity and series
                stay as they were.
        """
        H = _pose_matrix(pose, name, pose_ok)
        t = None if stamp is None else _stamp(stamp)
        with self._lock:
            s = self._state
            k = s.layout.slot(name)
            R, p = s.rotations.copy(), s.translations.copy()
            R[k], p[k] = H[:3, :3], H[:3, 3]
            if t is not None:
                motion = self._estimate_one(name, k, H, t, s)
            else:
                motion = self._forget_estimates([name], s) if self._stamps else None
            self._state = _with_poses(s, _frozen(R), _frozen(p), motion)

    def set_obstacle_poses(self, poses: Mapping[str, object], stamp: float | None = None) -> None:
        """Move several obstacles in one atomic update (one snapshot sees all or none).

        Arguments as :meth:`set_obstacle_pose`, ``poses`` mapping names to poses. The
        poses are checked, placed and (stamped) differentiated in compiled calls, one
        for all of them. The stamp is every pose's, held to each obstacle's own series
        as in :meth:`set_obstacle_pose` (earlier than an obstacle's last stamp:
        refused; equal: the pose replaced, the velocity kept).

        Raises:
            InvalidInput: ``poses`` is not a mapping; a bad stamp or velocity estimate
                for any of the obstacles, as :meth:`set_obstacle_pose`, naming the
                obstacle. The batch is all or nothing: no obstacle of it changes (pose,
                velocity or series).
            ObstacleNotFound, ShapeError, NonFiniteInput, InvalidTransform: As
                :meth:`set_obstacle_pose`, naming the obstacle; nothing changes.
        """
        if not isinstance(poses, Mapping):
            raise InvalidInput(
                f"poses must map obstacle names to poses, got {type(poses).__name__}",
                what="poses",
                value=poses,
            )
        names = list(poses)
        H = _pose_stack(poses, names)
        t = None if stamp is None else _stamp(stamp)
        with self._lock:
            s = self._state
            slots = np.array([s.layout.slot(n) for n in names], dtype=np.int64)
            R, p = s.rotations.copy(), s.translations.copy()
            place_poses(H, slots, R, p)
            if t is not None:
                motion = self._estimate(names, H, slots, t, s)
            else:
                motion = self._forget_estimates(names, s) if self._stamps else None
            self._state = _with_poses(s, _frozen(R), _frozen(p), motion)

    def _forget_estimates(
        self, names: list[str], s: WorldState
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Clear the velocities estimated from stamps of obstacles moved without one.

        An unstamped pose ends the stamped series: the velocity its last two stamps gave
        would otherwise hold for an obstacle that may have stopped; the solver's own
        estimate (its displacement between steps) takes over. A velocity given with
        :meth:`set_obstacle_velocity` is not an estimate and stays.

        Returns:
            The next ``(linear, angular, known)`` arrays (frozen), or None when none of
            ``names`` had a stamped velocity.
        """
        estimated = [n for n in names if self._end_series(n)]
        if not estimated:
            return None
        v, w, known = _velocity_copies(s)
        for n in estimated:
            k = s.layout.slot(n)
            v[k], w[k], known[k] = 0.0, 0.0, False
        return _frozen(v), _frozen(w), _frozen(known)

    def _end_series(self, name: str) -> bool:
        """Forget an obstacle's stamped series; whether its velocity was the estimate.

        Callers hold the writer lock.
        """
        self._stamps.pop(name, None)
        if name in self._estimated:
            self._estimated.discard(name)
            return True
        return False

    def _estimate(
        self, names: list[str], H: np.ndarray, slots: np.ndarray, t: float, s: WorldState
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Velocities from the previous stamped pose of each obstacle (finite differences).

        An obstacle without an earlier stamp (or stamped at ``t`` already) keeps its
        velocity; each pose becomes its obstacle's previous stamped pose. Callers hold
        the writer lock; nothing is kept when one obstacle's stamp or velocity is refused.

        Returns:
            The next ``(linear, angular, known)`` arrays (frozen), or None when every
            obstacle keeps its velocity.

        Raises:
            InvalidInput: A stamp earlier than its obstacle's last one, or a velocity
                beyond the bound of :meth:`set_obstacle_velocity` (:func:`_stale`,
                :func:`_too_fast`).
        """
        h = np.zeros(len(names))
        H0 = np.empty_like(H)
        stamps = self._stamps
        moved = []  # (the obstacles differentiated)
        for k, name in enumerate(names):
            prev = stamps.get(name)
            if prev is not None and t != prev[0]:
                if t < prev[0]:
                    raise _stale(name, t, prev[0])
                h[k] = t - prev[0]
                H0[k] = prev[1]
                moved.append(name)
        motion = None
        if moved:
            v, w, known = _velocity_copies(s)
            bad = stamped_twists(H, H0, h, slots, v, w, known)
            if bad >= 0:
                j, name = slots[bad], names[bad]
                raise _too_fast(name, stamps[name][0], t, v[j], w[j])
            motion = _frozen(v), _frozen(w), _frozen(known)
        for name, Hk in zip(names, H, strict=True):
            stamps[name] = (t, Hk)  # (H is this update's own array, never written again)
        self._estimated.update(moved)
        return motion

    def _estimate_one(
        self, name: str, k: int, H: np.ndarray, t: float, s: WorldState
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """:meth:`_estimate` of one obstacle (slot ``k``, pose ``H``, a 4x4 of its own)."""
        prev = self._stamps.get(name)
        if prev is None or t == prev[0]:
            self._stamps[name] = (t, H)
            return None
        t0, H0 = prev
        if t < t0:
            raise _stale(name, t, t0)
        v, w = s.linear_velocity.copy(), s.angular_velocity.copy()
        if not stamped_twist(H, H0, t - t0, k, v, w):
            raise _too_fast(name, t0, t, v[k], w[k])
        self._stamps[name] = (t, H)
        self._estimated.add(name)
        known = s.velocity_known
        if not known[k]:  # (else the snapshot's own flags stay)
            known = known.copy()
            known[k] = True
            known.setflags(write=False)
        v.setflags(write=False)
        w.setflags(write=False)
        return v, w, known

    def set_obstacle_velocity(
        self, name: str, linear: object, angular: object = (0.0, 0.0, 0.0)
    ) -> None:
        """Give an obstacle's velocity: linear [m/s] at its origin and angular [rad/s].

        The collision rows then account for the obstacle's own approach speed. The pose
        is not integrated: keep updating it with :meth:`set_obstacle_pose`.

        Raises:
            ObstacleNotFound: Unknown name.
            ShapeError, NonFiniteInput, InvalidInput: Not 3-vectors of finite values
                within 1e6.
        """
        lin = _velocity(linear, f"obstacle {name!r} linear velocity")
        ang = _velocity(angular, f"obstacle {name!r} angular velocity")
        with self._lock:
            s = self._state
            k = s.layout.slot(name)
            v, w = s.linear_velocity.copy(), s.angular_velocity.copy()
            known = s.velocity_known.copy()
            v[k], w[k], known[k] = lin, ang, True
            self._end_series(name)  # (a given velocity: the stamped series ends)
            self._publish(
                WorldState(
                    s.layout, s.rotations, s.translations, _frozen(v), _frozen(w), _frozen(known)
                )
            )

    # -- attached objects ----------------------------------------------------------------------
    def attach_object(
        self,
        name: str,
        link: str,
        shape: coal.CollisionGeometry,
        pose: object = None,
        allowed_links: Sequence[str] | str = (),
    ) -> None:
        """Attach a shape to a robot link (a grasped part, a tool).

        It moves with the link and collides with the world and the rest of the robot,
        except the body that carries it (every link on its frame's joint) and ``allowed_links``.
        A robot without collision geometry of its own is watched through it (the object
        against every obstacle).

        Args:
            name: Unique name (shared namespace with obstacles).
            link: Robot link (frame) carrying it.
            shape: A coal shape, as for :meth:`add_obstacle`.
            pose: Its pose in the link frame (identity when omitted).
            allowed_links: Links it may touch (e.g. the gripper's fingers): a list of
                names, or one name.

        Raises:
            InvalidInput: Name in use, bad or unbounded shape (Plane, Halfspace),
                ``allowed_links`` not names, or a link that a robot using this world does
                not have.
        """
        with self._lock:
            self._publish_added([], [self._new_attached((name, link, shape, pose, allowed_links))])

    def _new_attached(self, entry: tuple) -> AttachedObject:
        """A checked attached object from ``(name, link, shape, pose, allowed_links)``.

        Callers hold the writer lock.
        """
        name, link, shape, pose, allowed_links = entry
        _check_name(link, "link")
        allowed = allowed_link_names(allowed_links)
        self._free_name(name)
        what = f"attached object {name!r}"
        shape = _stored_shape(check_shape(shape, what), what)
        if isinstance(shape, (coal.Plane, coal.Halfspace)):
            kind = type(shape).__name__
            raise InvalidInput(
                f"attached object {name!r}: a {kind} is unbounded, it cannot be carried by"
                " a link (attach a bounded shape, such as a thin Box)",
                what=f"attached object {name!r}",
            )
        T = pin.SE3.Identity() if pose is None else as_se3(pose, f"{name!r} pose")
        for lk in (link, *allowed):
            self._check_link(lk, list(self._links.values()))
        return AttachedObject(name, link, shape, _frozen(T.homogeneous.copy()), allowed)

    def detach_object(self, name: str) -> None:
        """Remove an attached object (ObstacleNotFound lists the attached ones)."""
        with self._lock:
            s = self._state
            names = [a.name for a in s.layout.attached]
            if name not in names:
                raise ObstacleNotFound(str(name), names, "attached object")
            attached = tuple(a for a in s.layout.attached if a.name != name)
            self._publish(replace(s, layout=self._new_layout(s.layout.obstacles, attached)))

    def clear(self) -> None:
        """Remove every obstacle and attached object."""
        with self._lock:
            self._stamps.clear()
            self._estimated.clear()
            empty = WorldState.empty()
            layout = replace(empty.layout, revision=self._state.layout.revision + 1)
            self._publish(replace(empty, layout=layout))

    def __repr__(self) -> str:
        layout = self._state.layout
        return (
            f"World(obstacles={[o.name for o in layout.obstacles]}, "
            f"attached={[a.name for a in layout.attached]})"
        )
