"""Scene files: a world of named obstacles and attached objects, written in YAML.

A scene file has two optional lists, ``obstacles`` and ``attached``::

    # units: metres and radians
    obstacles:
      - name: table
        box: [1.0, 0.6, 0.05]              # full side lengths
        pose: {xyz: [0.5, 0.0, -0.025]}
        min_distance: 0.02                 # optional: kept from this obstacle
      - name: post
        cylinder: {radius: 0.05, length: 1.0}
        pose: {xyz: [0.4, 0.4, 0.5], rpy: [0.0, 0.0, 0.3]}
      - name: floor
        halfspace: {normal: [0, 0, 1], offset: -0.3}
      - name: bin
        mesh: {path: meshes/bin.stl, scale: 0.001, convex: true}
    attached:
      - name: tool
        link: panda_hand
        capsule: {radius: 0.02, length: 0.12}
        pose: {xyz: [0.0, 0.0, 0.1]}
        allowed_links: [panda_link7]

**Shapes** (exactly one per entry): ``box: [x, y, z]`` (full sizes), ``sphere: r``,
``cylinder``/``capsule``/``cone: {radius, length}`` (along the local z axis; ``length``
is the full length), ``ellipsoid: [rx, ry, rz]``, ``plane``/``halfspace: {normal,
offset}`` (the set ``n . x = d`` / ``n . x <= d``), ``mesh: {path, scale, convex}``
(STL/OBJ/DAE; ``path`` relative to the scene file; its convex hull unless ``convex:
false``).

**Poses**: ``{xyz: [x, y, z], rpy: [roll, pitch, yaw]}`` (URDF's fixed-axis rpy) or
``{xyz, quat: [x, y, z, w]}`` (scalar last), or a 4x4 matrix as four rows; identity when
omitted. Obstacle poses are in the world frame, attached objects' in their link frame.

Sizes are numbers in metres (``true``/``false`` is refused). A quaternion or rotation
matrix within :data:`ROUNDING` of unit or orthonormal (written to four decimals) is made
exact; one farther off is refused.

Every mistake is a :class:`~stackik.errors.MalformedScene` (a
:class:`~stackik.errors.MalformedDescription`) naming the file, the
entry and the fault; :func:`load_scene` adds all of a file or, on a mistake, nothing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import coal
import numpy as np
import pinocchio as pin

from ..errors import MalformedDescription, MalformedScene, StackIKError
from .world import MAX_SIZE, World, check_shape, load_mesh

__all__ = ["SHAPE_KEYS", "load_scene", "parse_scene"]

#: How far from unit a quaternion, or from orthonormal a rotation matrix, may be written
#: (four decimals are common): within it, it is normalized; beyond it, refused.
ROUNDING = 1e-3

#: The shape keys an entry may have (exactly one).
SHAPE_KEYS = (
    "box",
    "sphere",
    "cylinder",
    "capsule",
    "cone",
    "ellipsoid",
    "plane",
    "halfspace",
    "mesh",
)


class _Entry:
    """One list entry being read, for messages that name it."""

    def __init__(self, source: str, where: str, data: object) -> None:
        self.source = source
        self.where = where
        if not isinstance(data, Mapping):
            self.fail(f"must be a mapping, got {type(data).__name__}")
        self.data: Mapping[str, Any] = data  # type: ignore[assignment]

    def fail(self, message: str) -> None:
        raise MalformedScene(self.source, f"{self.where}: {message}")

    def floats(self, value: object, n: int, what: str, shown: object = None) -> np.ndarray:
        shown = value if shown is None else shown
        expected = "a finite number" if n == 1 else f"{n} finite numbers"
        if _has_bool(value):  # (YAML's true/false would read as 1 and 0)
            self.fail(f"{what} must be {expected}, got {shown!r} (true/false is not a number)")
        try:
            arr = np.asarray(value, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            arr = np.zeros(0)
        if arr.shape != (n,) or not np.isfinite(arr).all():
            self.fail(f"{what} must be {expected}, got {shown!r}")
        return arr

    def number(self, value: object, what: str) -> float:
        return float(self.floats([value] if np.isscalar(value) else value, 1, what, value)[0])

    def name(self) -> str:
        name = self.data.get("name")
        if not isinstance(name, str) or not name.strip():
            self.fail(f"needs a non-empty 'name', got {name!r}")
        self.where = f"{self.where} ({name!r})"
        return str(name)


def _has_bool(value: object) -> bool:
    """Whether ``value`` is a boolean or a (nested) list holding one."""
    if isinstance(value, (bool, np.bool_)):
        return True
    return isinstance(value, (list, tuple)) and any(_has_bool(v) for v in value)


def _sizes(e: _Entry, values: np.ndarray, what: str) -> None:
    """Sizes as written in the file: each in ``(0, MAX_SIZE]`` [m]."""
    if not ((values > 0.0).all() and (values <= MAX_SIZE).all()):
        e.fail(f"{what} must be in (0, {MAX_SIZE:g}] m, got {values.tolist()}")


def _radius_length(e: _Entry, value: object, kind: str) -> tuple[float, float]:
    if not isinstance(value, Mapping) or set(value) != {"radius", "length"}:
        e.fail(f"{kind} needs {{radius, length}}, got {value!r}")
    assert isinstance(value, Mapping)
    r = e.number(value["radius"], f"{kind} radius")
    length = e.number(value["length"], f"{kind} length")
    _sizes(e, np.array([r, length]), f"{kind} radius and length")
    return r, length


def _flat(e: _Entry, value: object, kind: str) -> tuple[np.ndarray, float]:
    if not isinstance(value, Mapping) or set(value) != {"normal", "offset"}:
        e.fail(f"{kind} needs {{normal, offset}}, got {value!r}")
    assert isinstance(value, Mapping)
    n = e.floats(value["normal"], 3, f"{kind} normal")
    norm = float(np.linalg.norm(n))
    if norm == 0.0:
        e.fail(f"{kind} normal must not be zero")
    return n / norm, e.number(value["offset"], f"{kind} offset") / norm


def _mesh(e: _Entry, value: object, folder: Path) -> Any:
    if not isinstance(value, Mapping) or "path" not in value:
        e.fail(f"mesh needs at least {{path}}, got {value!r}")
    assert isinstance(value, Mapping)
    extra = set(value) - {"path", "scale", "convex"}
    if extra:
        e.fail(f"mesh has unknown keys {sorted(extra)}")
    path = folder / str(value["path"])
    scale = value.get("scale", 1.0)
    scale = (
        e.number(scale, "mesh scale") if np.isscalar(scale) else tuple(e.floats(scale, 3, "scale"))
    )
    convex = value.get("convex", True)
    if not isinstance(convex, bool):
        e.fail(f"mesh convex must be true or false, got {convex!r}")
    try:
        return load_mesh(path, scale, convex=convex)
    except StackIKError as exc:
        e.fail(str(exc))


def _shape(e: _Entry, folder: Path) -> Any:
    keys = [k for k in SHAPE_KEYS if k in e.data]
    if len(keys) != 1:
        e.fail(f"needs exactly one shape key of {list(SHAPE_KEYS)}, got {keys or 'none'}")
    kind = keys[0]
    value = e.data[kind]
    if kind == "box":
        size = e.floats(value, 3, "box")
        _sizes(e, size, "box sizes")
        shape: Any = coal.Box(*size)
    elif kind == "sphere":
        r = e.number(value, "sphere radius")
        _sizes(e, np.array([r]), "sphere radius")
        shape = coal.Sphere(r)
    elif kind in ("cylinder", "capsule", "cone"):
        r, length = _radius_length(e, value, kind)
        shape = {"cylinder": coal.Cylinder, "capsule": coal.Capsule, "cone": coal.Cone}[kind](
            r, length
        )
    elif kind == "ellipsoid":
        radii = e.floats(value, 3, "ellipsoid radii")
        _sizes(e, radii, "ellipsoid radii")
        shape = coal.Ellipsoid(*radii)
    elif kind in ("plane", "halfspace"):
        n, d = _flat(e, value, kind)
        shape = (coal.Plane if kind == "plane" else coal.Halfspace)(n, d)
    else:
        shape = _mesh(e, value, folder)
    try:
        return check_shape(shape, kind)
    except StackIKError as exc:
        e.fail(str(exc))


def _pose(e: _Entry, value: object) -> pin.SE3:
    if value is None:
        return pin.SE3.Identity()
    if isinstance(value, list):
        T = e.floats(value, 16, "pose matrix").reshape(4, 4)
        try:
            from ..spatial import as_se3

            return as_se3(_nearest_rigid(T), "pose")
        except StackIKError as exc:
            e.fail(str(exc))
    if not isinstance(value, Mapping) or not set(value) <= {"xyz", "rpy", "quat"}:
        e.fail(f"pose must be {{xyz, rpy}} or {{xyz, quat}} or a 4x4 matrix, got {value!r}")
    assert isinstance(value, Mapping)
    if "rpy" in value and "quat" in value:
        e.fail("pose has both rpy and quat")
    xyz = e.floats(value.get("xyz", [0, 0, 0]), 3, "xyz")
    if "quat" in value:
        q = e.floats(value["quat"], 4, "quat (x, y, z, w)")
        norm = float(np.linalg.norm(q))
        if abs(norm - 1.0) > ROUNDING:
            e.fail(f"quat must be a unit quaternion (within {ROUNDING:g}), got {q.tolist()}")
        q = q / norm  # (written to a few decimals)
        R = pin.Quaternion(q[3], q[0], q[1], q[2]).toRotationMatrix()
    else:
        R = pin.rpy.rpyToMatrix(*e.floats(value.get("rpy", [0, 0, 0]), 3, "rpy"))
    return pin.SE3(R, xyz)


def _nearest_rigid(T: np.ndarray) -> np.ndarray:
    """``T`` with a rotation written to a few decimals made orthonormal (else as it is).

    A rotation part within :data:`ROUNDING` of a rotation (``|R^T R - I|`` and ``det R``)
    is replaced by the nearest rotation (the polar factor); anything farther is left for
    the pose check to refuse.
    """
    R = T[:3, :3]
    if np.abs(R.T @ R - np.eye(3)).max() > ROUNDING or np.linalg.det(R) <= 0.0:
        return T
    U, _, Vt = np.linalg.svd(R)
    out = T.copy()
    out[:3, :3] = U @ Vt
    return out


def _optional_distance(e: _Entry) -> float | None:
    if "min_distance" not in e.data:
        return None
    d = e.number(e.data["min_distance"], "min_distance")
    if d < 0:
        e.fail(f"min_distance must be >= 0, got {d}")
    return d


def _known_keys(e: _Entry, allowed: set[str]) -> None:
    extra = set(e.data) - allowed - set(SHAPE_KEYS)
    if extra:
        e.fail(f"unknown keys {sorted(extra)} (shapes: {', '.join(SHAPE_KEYS)})")


def _entries(doc: Mapping[str, Any], key: str, source: str) -> list:
    """The list under ``key`` (empty when absent or empty)."""
    items = doc.get(key)
    if items is None:
        return []
    if not isinstance(items, list):
        kind = (
            "one mapping (write each entry as a list item, '- name: ...')"
            if isinstance(items, Mapping)
            else repr(items)
        )
        raise MalformedScene(source, f"{key} must be a list of entries, got {kind}")
    return items


def _unique_keys_loader(yaml: Any) -> Any:
    """A safe YAML loader that refuses a key given twice in one mapping.

    (The safe loader keeps the last of two equal keys: ``name: a`` then ``name: b`` in
    one entry would load one obstacle, silently dropping the other.)
    """

    class Loader(yaml.SafeLoader):
        pass

    def mapping(loader: Any, node: Any, deep: bool = False) -> dict:
        keys = [loader.construct_object(k, deep=deep) for k, _ in node.value]
        for k in keys:
            if keys.count(k) > 1:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {k!r} is given twice in one mapping", node.start_mark
                )
        return loader.construct_mapping(node, deep=deep)

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    return Loader


def parse_scene(text: str, source: str = "<scene>", folder: Path | None = None) -> dict:
    """Read scene YAML into ``{"obstacles": [...], "attached": [...]}`` (shapes built).

    Each obstacle is ``(name, shape, pose, min_distance)``, each attached object
    ``(name, link, shape, pose, allowed_links)``.

    Raises:
        MalformedScene: Invalid YAML, or an entry that breaks the format.
    """
    import yaml

    folder = Path.cwd() if folder is None else folder
    try:
        doc = yaml.load(text, Loader=_unique_keys_loader(yaml)) or {}
    except yaml.YAMLError as exc:
        raise MalformedScene(source, f"invalid YAML: {exc}") from exc
    except RecursionError:
        raise MalformedScene(source, "invalid YAML: nested too deeply") from None
    if not isinstance(doc, Mapping) or not set(doc) <= {"obstacles", "attached"}:
        keys = sorted(doc) if isinstance(doc, Mapping) else type(doc).__name__
        raise MalformedScene(source, f"top level must hold obstacles/attached, got {keys}")
    out: dict[str, list] = {"obstacles": [], "attached": []}
    for k, item in enumerate(_entries(doc, "obstacles", source)):
        e = _Entry(source, f"obstacles[{k}]", item)
        name = e.name()
        _known_keys(e, {"name", "pose", "min_distance"})
        out["obstacles"].append(
            (name, _shape(e, folder), _pose(e, e.data.get("pose")), _optional_distance(e))
        )
    for k, item in enumerate(_entries(doc, "attached", source)):
        e = _Entry(source, f"attached[{k}]", item)
        name = e.name()
        _known_keys(e, {"name", "link", "pose", "allowed_links"})
        link = e.data.get("link")
        if not isinstance(link, str):
            e.fail(f"needs a 'link' name, got {link!r}")
        allowed = e.data.get("allowed_links", [])
        if not isinstance(allowed, list) or not all(isinstance(a, str) for a in allowed):
            e.fail(f"allowed_links must be a list of link names, got {allowed!r}")
        out["attached"].append(
            (name, link, _shape(e, folder), _pose(e, e.data.get("pose")), allowed)
        )
    return out


def load_scene(
    path: str | os.PathLike[str], world: World, robot: object | None = None
) -> list[str]:
    """Add the obstacles and attached objects of a scene file to ``world``.

    Args:
        path: The YAML scene file.
        world: The world to fill (a robot's ``robot.world``, or one of your own).
        robot: When given, attached objects' links are checked against it.

    Returns:
        The names added, in file order.

    Raises:
        RobotFileNotFound: No such file ("cannot load scene ...: file not found").
        MalformedScene: The file is not text or breaks the format, a name is taken or
            given twice, or an attached object names a link the robot lacks (the message
            names the entry). Nothing is added then.
        InvalidInput: ``path`` is not a path.
    """
    from .loading import check_path, read_text

    path = check_path(path, "scene path", hint=None)
    try:
        text = read_text(path, "scene")
    except MalformedDescription as exc:  # (not text: a scene's own error)
        raise MalformedScene(str(path), exc.reason) from None
    scene = parse_scene(text, str(path), path.resolve().parent)
    if robot is not None:  # (links first: the world knows only the robots bound to it)
        for k, (name, link, _, _, allowed) in enumerate(scene["attached"]):
            for lk in (link, *allowed):
                try:
                    robot.get_frame_id(lk)  # type: ignore[attr-defined]
                except StackIKError as exc:
                    raise MalformedScene(str(path), f"attached[{k}] ({name!r}): {exc}") from None
    obstacles = [(n, shape, pose, d, str(path)) for n, shape, pose, d in scene["obstacles"]]
    try:  # (all or nothing: a mistake leaves the world as it was)
        world.add_objects(obstacles, scene["attached"])
    except StackIKError as exc:
        raise MalformedScene(str(path), str(exc)) from None
    return [entry[0] for entry in scene["obstacles"] + scene["attached"]]
