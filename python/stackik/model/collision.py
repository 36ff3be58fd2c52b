"""Collision geometry of a robot: coal shapes, the pair list, distance queries.

Two objects with two owners:

- :class:`CollisionModel` is part of the shareable robot description: the geometry,
  the active pair list and name resolution. It changes only at configuration time
  (SRDF exclusions, reset) and then bumps its :attr:`~CollisionModel.revision`.
- :class:`CollisionState` is one owner's query state: its own ``GeometryData`` (world
  placements, coal requests and results). The robot keeps one for its own distance
  methods and every collision constraint owns another, so queries never share state.
  Requests never warm-start GJK from an earlier call, so the same configuration always
  gives bit-identical distances.

Meshes become their convex hulls by default: a convex-convex distance (GJK) costs
about a microsecond, a triangle-mesh distance about a hundred times more. Exact
meshes are kept on request.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import coal
import numpy as np
import pinocchio as pin

from .. import _pickling, _validate
from ..errors import CollisionGeometryNotFound, InvalidInput

#: Thickness given to a flat (coplanar), linear or single-point collision mesh before
#: its convex hull is built [m]: qhull cannot hull a degenerate point set (coal crashes
#: the process on it), and a flat plate is a legitimate collision shape.
DEGENERATE_MESH_THICKNESS = 1e-3

#: Spread below which a direction of a vertex set counts as missing, relative to the size
#: of its coordinates: the set is then flat (or a line, or a point) and is thickened by
#: :data:`DEGENERATE_MESH_THICKNESS`. Mesh files store float32 (binary STL always, and
#: assimp, which coal's loader uses, transforms in float32): each coordinate is rounded to
#: 2**-24 (6e-8) of its magnitude, so a plate in a tilted plane lies up to about 1e-7 of
#: its coordinates off that plane. Such a sliver is rounding, not shape (and qhull, inside
#: coal, crashed the process on it). 1e-6 is 16 float32 steps: 1 um for a part within
#: 1 m of its origin, far below the thickness it is given.
FLAT_TOLERANCE = 1e-6

#: qhull options of a hull: triangulated output ("Qt"); "Pp" keeps qhull from printing its
#: precision warnings (a narrow or nearly flat set), which crashes the process in coal's
#: build of qhull (its error stream is unusable). "Pp" changes nothing else: the hull is
#: the one "Qt" gives.
QHULL_OPTIONS = "Qt Pp"

#: qhull options of the retry from joggled input (see :func:`convex_hull`).
QHULL_JOGGLED = "QJ Pp"


def _affine_rank(points: np.ndarray) -> int:
    """Dimension of the affine hull of ``points`` (0 for a point, 3 for a solid).

    A principal direction counts when the points' RMS spread along it exceeds
    :data:`FLAT_TOLERANCE` of the size of the set: the larger of its RMS spread along its
    main direction and its largest coordinate magnitude (float32 rounding scales with the
    coordinates, so a part drawn far from its origin is rounded more coarsely). A set
    spread by less than 1e-12 (singular value) is a point.
    """
    if len(points) < 2:
        return 0
    centred = points - points.mean(axis=0)
    s = np.linalg.svd(centred, compute_uv=False)  # (s_i = sqrt(n) * RMS spread along axis i)
    size = max(float(s[0]), np.sqrt(len(points)) * float(np.abs(points).max()))
    return int(np.sum(s > max(FLAT_TOLERANCE * size, 1e-12)))


def thicken(points: np.ndarray, thickness: float = DEGENERATE_MESH_THICKNESS) -> np.ndarray:
    """Points of a degenerate set pushed ``thickness / 2`` both ways along its missing axes.

    A plane gains its normal, a line two perpendicular axes, a point all three: the
    result has a proper 3-D convex hull that contains the original points. A set that
    is flat only within :data:`FLAT_TOLERANCE` (float32 rounding) is pushed along its
    least spread axis.
    """
    centred = points - points.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=True)
    rank = _affine_rank(points)
    out = [points]
    half = 0.5 * thickness
    for axis in vt[rank:]:
        out = [p + sign * half * axis for p in out for sign in (1.0, -1.0)]
    return np.vstack(out)


def _qhull(points: np.ndarray) -> coal.Convex:
    """The hull (with triangles) coal builds of a non-degenerate point set ``(n, 3)`` [m].

    Raises:
        InvalidInput: qhull (or coal) cannot hull the points.
    """
    vertices = coal.StdVec_Vec3s()
    for p in points:
        vertices.append(p)
    try:
        return coal.ConvexBase.convexHull(vertices, True, QHULL_OPTIONS)
    except RuntimeError as exc:
        if "Too many neighbors" not in str(exc):
            raise InvalidInput(f"the convex hull failed: {_coal_message(exc)}") from None
    try:
        return coal.ConvexBase.convexHull(vertices, True, QHULL_JOGGLED)
    except RuntimeError as exc:
        raise InvalidInput(f"the convex hull failed: {_coal_message(exc)}") from None


def convex_hull(points: np.ndarray) -> coal.Convex:
    """Convex hull of mesh vertices with coal (qhull), degenerate sets thickened first.

    A set that is flat, a line or a point (within :data:`FLAT_TOLERANCE`: a plate read
    from a binary STL is flat only to float32 rounding) is thickened by
    :data:`DEGENERATE_MESH_THICKNESS` first (:func:`thicken`). qhull's triangulated
    output ("Qt") can give a vertex more neighbours than coal stores (coal: "Too many
    neighbors", e.g. the centre of a finely tessellated disc); the hull is then built
    from joggled input ("QJ": every facet simplicial, points moved by about 1e-11 of the
    mesh size; qhull's joggle is seeded, so the result is the same in every run).
    qhull's precision warnings are not printed ("Pp", :data:`QHULL_OPTIONS`).

    Raises:
        InvalidInput: No vertices, non-finite ones, or qhull cannot hull them.
    """
    pts = np.asarray(points, dtype=float).reshape(-1, 3)
    if len(pts) == 0 or not np.isfinite(pts).all():
        raise InvalidInput("a collision mesh has no vertices or non-finite ones")
    if len(pts) < 4 or _affine_rank(pts) < 3:
        pts = thicken(pts)
    return _qhull(pts)


def as_convex(geometry: coal.ConvexBase) -> coal.Convex:
    """A ``coal.Convex`` (which pickles) with the points of a hull that has no faces.

    ``coal.ConvexBase.convexHull(points, False, ...)`` gives a ``ConvexBase``, which
    coal cannot pickle: see :func:`convex_with_points` (its swept-sphere radius is kept).
    A ``Convex`` is returned as it is.

    Raises:
        InvalidInput: qhull cannot hull its points.
    """
    if isinstance(geometry, coal.Convex):
        return geometry
    points = np.asarray(geometry.points(), dtype=float).reshape(-1, 3)
    return convex_with_points(points, float(geometry.getSweptSphereRadius()))


def convex_with_points(points: np.ndarray, radius: float = 0.0) -> coal.Convex:
    """A ``coal.Convex`` with exactly these hull vertices, in this order, and their faces.

    The same points in the same order give the same support points, so the compiled
    distances of a ``ConvexBase`` with these points. Should qhull not return every point
    unmoved (a point inside the hull, a joggled or thickened hull), the hull itself is
    returned (:func:`convex_hull`: the same solid within 1e-11 of its size, or thickened
    when flat).

    Args:
        points: ``(n, 3)`` vertices [m].
        radius: Swept-sphere radius of the hull [m] (coal's; 0: none).

    Raises:
        InvalidInput: qhull cannot hull the points.
    """
    hull = _hull_with_points(np.asarray(points, dtype=float).reshape(-1, 3))
    if radius:
        hull.setSweptSphereRadius(radius)
    return hull


def _hull_with_points(pts: np.ndarray) -> coal.Convex:
    """:func:`convex_with_points` without a swept-sphere radius."""
    if len(pts) < 4 or not np.isfinite(pts).all() or _affine_rank(pts) < 3:
        return convex_hull(pts)
    hull = _qhull(pts)
    index = {tuple(p): k for k, p in enumerate(pts.tolist())}
    order = [index.get(tuple(p)) for p in np.asarray(hull.points()).reshape(-1, 3).tolist()]
    if None in order or len(set(order)) != len(pts):
        return hull
    triangles = coal.StdVec_Triangle()
    for t in map(hull.polygons, range(int(hull.num_polygons))):
        triangles.append(coal.Triangle(order[t[0]], order[t[1]], order[t[2]]))
    vertices = coal.StdVec_Vec3s()
    for p in pts:
        vertices.append(p)
    return coal.Convex(vertices, triangles)


def _coal_message(exc: Exception) -> str:
    """The ``message:`` line of a coal exception (without its C++ file and line)."""
    for line in str(exc).splitlines():
        if line.startswith("message:"):
            return line[len("message:") :].strip()
    return str(exc).strip()


def convexify(geom_model: pin.GeometryModel) -> None:
    """Replace every triangle-mesh geometry of ``geom_model`` by its convex hull, in place.

    Flat, linear or single-point meshes become thin solids of
    :data:`DEGENERATE_MESH_THICKNESS` (coal would crash on them).

    Raises:
        InvalidInput: A mesh cannot be hulled (the geometry and its file are named).
    """
    for obj in geom_model.geometryObjects:
        geom = obj.geometry
        if isinstance(geom, coal.BVHModelBase):
            try:
                obj.geometry = convex_hull(np.array(geom.vertices()))
            except InvalidInput as exc:
                raise InvalidInput(
                    f"collision geometry {obj.name!r} (mesh {obj.meshPath!r}): {exc}"
                ) from None


def _shape_params(geom: coal.CollisionGeometry) -> tuple[str, dict[str, object]]:
    if isinstance(geom, coal.Sphere):
        return "sphere", {"radius": geom.radius}
    if isinstance(geom, coal.Box):
        return "box", {"size": (2.0 * geom.halfSide).tolist()}
    if isinstance(geom, coal.Cylinder):
        return "cylinder", {"radius": geom.radius, "length": 2.0 * geom.halfLength}
    if isinstance(geom, coal.Capsule):
        return "capsule", {"radius": geom.radius, "length": 2.0 * geom.halfLength}
    if isinstance(geom, coal.ConvexBase):
        return "convex", {"num_points": int(geom.num_points)}
    if isinstance(geom, coal.BVHModelBase):
        return "mesh", {"num_vertices": int(geom.num_vertices), "num_tris": int(geom.num_tris)}
    return type(geom).__name__.lower(), {}


class CollisionModel:
    """Collision geometry and its active pairs (part of the robot description).

    Built by :class:`stackik.RobotModel` (``robot.collision``); the robot's collision
    methods are the user-facing way to change it.

    Args:
        model: Pinocchio kinematic model.
        geom_model: Collision geometry (already convexified if wanted).
        reset: Activate every non-adjacent pair (otherwise keep ``geom_model``'s pairs).

    Attributes:
        revision: Incremented whenever the pair list changes; owners of a
            :class:`CollisionState` rebuild it when it differs from theirs.
    """

    def __init__(self, model: pin.Model, geom_model: pin.GeometryModel, reset: bool = True) -> None:
        if not (isinstance(model, pin.Model) and isinstance(geom_model, pin.GeometryModel)):
            raise InvalidInput(
                "CollisionModel needs a pinocchio.Model and a pinocchio.GeometryModel, got "
                f"{type(model).__name__} and {type(geom_model).__name__}"
            )
        self.model = model
        self.geom_model = geom_model
        self.revision = 0
        self._link_of = [model.frames[o.parentFrame].name for o in geom_model.geometryObjects]
        if reset:
            self.reset_pairs()

    @property
    def link_names(self) -> list[str]:
        """Link (frame) name of every geometry, by geometry index."""
        return list(self._link_of)

    def link_of(self, geometry: int) -> str:
        """Link (frame) name carrying a geometry."""
        return self._link_of[geometry]

    # -- pairs -----------------------------------------------------------------------------
    def reset_pairs(self) -> None:
        """Activate every pair between geometries on links that can move relative to each other.

        Excluded: geometries rigidly attached to the same joint body (their distance
        never changes) and geometries on adjacent bodies (parent/child through a joint).
        """
        gm = self.geom_model
        gm.removeAllCollisionPairs()
        parents = self.model.parents
        objs = gm.geometryObjects
        for i in range(len(objs)):
            ji = objs[i].parentJoint
            for j in range(i + 1, len(objs)):
                jj = objs[j].parentJoint
                if ji == jj or parents[ji] == jj or parents[jj] == ji:
                    continue
                gm.addCollisionPair(pin.CollisionPair(i, j))
        self.revision += 1

    def resolve_names(self, name: str) -> list[int]:
        """Geometry indices named by a geometry name or a link (frame) name."""
        gm = self.geom_model
        if gm.existGeometryName(name):
            return [gm.getGeometryId(name)]
        ids = [i for i, link in enumerate(self._link_of) if link == name]
        if not ids:
            names = [o.name for o in gm.geometryObjects] + sorted(set(self._link_of))
            raise CollisionGeometryNotFound(name, names)
        return ids

    def exclude_pairs(self, pairs: Iterable[tuple[str, str]], strict: bool = True) -> int:
        """Deactivate pairs named by link or geometry names.

        Args:
            pairs: ``(name_a, name_b)`` tuples.
            strict: When False, names without collision geometry are skipped (SRDF
                files often name links that carry none).

        Returns:
            The number of geometry pairs removed.
        """
        strict = _validate.flag(strict, "strict")
        gm = self.geom_model
        # Resolve every name before removing anything, so an unknown name leaves the pair
        # list (and the GeometryData sized from it) untouched.
        resolved = []
        for a, b in pairs:
            try:
                resolved.append((self.resolve_names(a), self.resolve_names(b)))
            except CollisionGeometryNotFound:
                if strict:
                    raise
        removed = 0
        for ia, ib in resolved:
            for i in ia:
                for j in ib:
                    cp = pin.CollisionPair(min(i, j), max(i, j))
                    if i != j and gm.existCollisionPair(cp):
                        gm.removeCollisionPair(cp)
                        removed += 1
        self.revision += 1
        return removed

    def pair_names(self) -> list[tuple[str, str]]:
        """Active pairs as ``(geometry_a, geometry_b)`` names."""
        objs = self.geom_model.geometryObjects
        return [
            (objs[cp.first].name, objs[cp.second].name) for cp in self.geom_model.collisionPairs
        ]

    def pair_links(self) -> list[tuple[str, str]]:
        """Active pairs as ``(link_a, link_b)`` names."""
        link = self._link_of
        return [(link[cp.first], link[cp.second]) for cp in self.geom_model.collisionPairs]

    def pair_index(self, first: int, second: int) -> int:
        """Index of the active pair between two geometries, or -1 when it is not active."""
        gm = self.geom_model
        k = gm.findCollisionPair(
            pin.CollisionPair(int(min(first, second)), int(max(first, second)))
        )
        return int(k) if k < len(gm.collisionPairs) else -1

    def pair_geometries(self) -> np.ndarray:
        """``(first, second)`` geometry indices of every active pair, shape (pairs, 2)."""
        pairs = self.geom_model.collisionPairs
        return np.array([(cp.first, cp.second) for cp in pairs], dtype=np.int64).reshape(-1, 2)

    def geometries(self) -> list[dict[str, object]]:
        """Describe every collision geometry.

        Returns:
            One dict per geometry with ``name``, ``parent_frame`` (link name),
            ``parent_joint``, ``placement`` (4x4 in the parent joint frame),
            ``geometry_type`` and ``params`` (sizes in metres).
        """
        out = []
        for obj, link in zip(self.geom_model.geometryObjects, self._link_of, strict=True):
            kind, params = _shape_params(obj.geometry)
            out.append(
                {
                    "name": obj.name,
                    "parent_frame": link,
                    "parent_joint": self.model.names[obj.parentJoint],
                    "placement": obj.placement.homogeneous.copy(),
                    "geometry_type": kind,
                    "params": params,
                }
            )
        return out


class CollisionState:
    """One owner's collision query state: a ``GeometryData`` over a :class:`CollisionModel`.

    Rebuilt automatically when the description's pair list changes. Distance requests
    ask for signed distances and never reuse a GJK guess from an earlier query. The
    ``GeometryData`` is created on first use: it holds about 5.6 kB per pair (requests,
    results and GJK/EPA solvers), 250 MB for the 45,000 pairs of a 300-link chain, so
    an owner that never queries does not pay for it.

    Args:
        collision: The collision description.
    """

    def __init__(self, collision: CollisionModel) -> None:
        _validate.instance(collision, CollisionModel, "collision", "CollisionModel")
        self.collision = collision
        self._revision = -1
        self._rebuild()

    def __getstate__(self) -> dict[str, Any]:
        return _pickling.without(self.__dict__, ("_geom_data",))

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._rebuild()

    def _rebuild(self) -> None:
        self._revision = self.collision.revision
        self._geom_data: pin.GeometryData | None = None

    @property
    def geom_data(self) -> pin.GeometryData:
        """The ``GeometryData`` of this owner (created on first use)."""
        if self._geom_data is None:
            self._geom_data = self._new_geometry_data()
        return self._geom_data

    def _new_geometry_data(self) -> pin.GeometryData:
        geom_data = pin.GeometryData(self.collision.geom_model)
        with warnings.catch_warnings():
            # coal deprecates the flag in favour of gjk_initial_guess, but Pinocchio's
            # requests still set it, and it alone makes GJK reuse the previous query's
            # answer: off, so one configuration always gives the same distances.
            warnings.simplefilter("ignore", DeprecationWarning)
            for req in geom_data.distanceRequests:
                # coal always computes nearest points; the signed distance must be asked.
                req.enable_signed_distance = True
                req.gjk_initial_guess = coal.GJKInitialGuess.DefaultGuess
                req.enable_cached_gjk_guess = False
        return geom_data

    def sync(self) -> bool:
        """Rebuild when the pair list changed; return whether it did."""
        if self._revision != self.collision.revision:
            self._rebuild()
            return True
        return False

    def update_placements(self, data: pin.Data) -> None:
        """World placements of every geometry from the joint placements in ``data``."""
        self.sync()
        col = self.collision
        pin.updateGeometryPlacements(col.model, data, col.geom_model, self.geom_data)

    def distances(self, data: pin.Data) -> np.ndarray:
        """Signed distances [m] of all active pairs at the placements in ``data``.

        Negative values are penetration depths. ``data`` must hold up-to-date joint
        placements (``oMi``).
        """
        self.update_placements(data)
        pin.computeDistances(self.collision.geom_model, self.geom_data)
        return np.array([r.min_distance for r in self.geom_data.distanceResults])

    def distance(self, pair: int) -> coal.DistanceResult:
        """Exact query of one active pair at the current placements (its result object)."""
        return pin.computeDistance(self.collision.geom_model, self.geom_data, int(pair))

    def nearest_points(self) -> np.ndarray:
        """Witness points of the last :meth:`distances` call, shape (pairs, 2, 3), world [m]."""
        res = self.geom_data.distanceResults
        out = np.empty((len(res), 2, 3))
        for k, r in enumerate(res):
            out[k, 0] = r.getNearestPoint1()
            out[k, 1] = r.getNearestPoint2()
        return out


def validate_pairs(pairs: object) -> list[tuple[str, str]]:
    """``pairs`` as a list of name pairs: an iterable of 2-sequences of strings.

    ``None`` is no pairs.

    Raises:
        InvalidInput: Not an iterable of pairs (a string, a number, a mapping), or an
            entry that is not two names.
    """
    if pairs is None:
        return []
    out = []
    for p in _validate.items(pairs, "collision pairs"):
        if (
            isinstance(p, (str, bytes))
            or not isinstance(p, Sequence)
            or len(p) != 2
            or not all(isinstance(x, str) for x in p)
        ):
            raise InvalidInput(f"collision pair must be two names, got {p!r}")
        out.append((p[0], p[1]))
    return out
