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
``{xyz, quat: [x, y, z, w]}`` (scalar last), or a 4x4 matrix as four rows of four;
identity when omitted. Obstacle poses are in the world frame, attached objects' in their
link frame.

Sizes are numbers in metres (``true``/``false`` and quoted text such as ``'0.1'`` are
refused; ``1e-3`` is a number, as in YAML 1.2), vectors flat lists. A
quaternion or rotation matrix within :data:`ROUNDING` of unit or orthonormal (written to
four decimals) is made exact; one farther off is refused. A plane or halfspace normal of
any nonzero length is made unit (divided by its largest component first, so that its
length neither overflows nor underflows), its offset with it.

The YAML is plain: anchors and aliases (``&x``, ``*x``, ``<<: *x``) are refused, and so
is nesting deeper than :data:`MAX_DEPTH`. A mesh obstacle's ``source`` is its mesh file;
other obstacles have None.

Every mistake is a :class:`~stackik.errors.MalformedScene` (a
:class:`~stackik.errors.MalformedDescription`) naming the file, the
entry and the fault; :func:`load_scene` adds all of a file or, on a mistake, nothing.
"""

from __future__ import annotations

import math
import os
import re
import reprlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import coal
import numpy as np
import pinocchio as pin

from ..errors import MalformedDescription, MalformedScene, StackIKError
from .world import MAX_SIZE, World, check_shape, load_mesh

__all__ = ["SHAPE_KEYS", "load_scene", "parse_scene"]

#: How deeply a scene's YAML may nest (a scene needs five levels: the file, a list, an
#: entry, a pose, a row of its matrix); deeper is refused before it is read.
MAX_DEPTH = 16

#: Values quoted in messages are shortened (their start, then ``...``).
_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxlist, _SHORT.maxtuple, _SHORT.maxdict = 3, 8, 8, 6
_SHORT.maxstring, _SHORT.maxother = 60, 60


def _shown(value: object) -> str:
    """``repr(value)``, shortened for a message (at most a few hundred characters)."""
    return _SHORT.repr(value)


def _key_order(key: object) -> tuple[int, str]:
    """Text keys first, in order; keys of other YAML types (numbers, null) after them."""
    return (0, key) if isinstance(key, str) else (1, repr(key))


def _keys(keys: Iterable[object]) -> str:
    """Mapping keys of any YAML type, sorted (:func:`_key_order`), for a message."""
    return _shown(sorted(keys, key=_key_order))


#: How far from unit a quaternion, or from orthonormal a rotation matrix, may be written
#: (four decimals are common): within it, it is normalized; beyond it, refused.
ROUNDING = 1e-3

#: Numbers with an exponent that YAML 1.1 leaves as text (``1e-3``, ``2E5``, ``1.5e3``).
_EXPONENT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)[eE][-+]?[0-9]+$")
#: The YAML tag the loader gives such a plain (unquoted) value.
_EXPONENT_TAG = "tag:stackik,2026:exponent"


class _ExponentText(str):
    """A plain YAML value written as a number with an exponent (``1e-3``).

    Text where the scene expects text (a name, a link, a path: ``name: 1e5`` is the name
    ``'1e5'``), a number where it expects a number (:meth:`_Entry.floats`).
    """

    def number(self) -> float | None:
        """The number it spells (YAML's ``_`` digit separators removed), else None."""
        try:
            return float(self.replace("_", ""))
        except ValueError:
            return None


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

    def floats(
        self, value: object, shape: int | tuple[int, int], what: str, shown: object = None
    ) -> np.ndarray:
        """``value`` as finite numbers of ``shape``: ``n`` (a flat list) or ``(rows, cols)``.

        A nested list where a flat one is expected, or rows of other lengths, is refused
        (not flattened into the expected count).
        """
        shown = value if shown is None else shown
        dims = shape if isinstance(shape, tuple) else (shape,)
        if isinstance(shape, tuple):
            expected = f"{shape[0]} rows of {shape[1]} finite numbers"
        else:
            expected = "a finite number" if shape == 1 else f"{shape} finite numbers"
        if _has_bool(value):  # (YAML's true/false would read as 1 and 0)
            self.fail(
                f"{what} must be {expected}, got {_shown(shown)} (true/false is not a number)"
            )
        value = _exponents_read(value)
        if _has_text(value):  # (numpy would read '0.1' as 0.1)
            self.fail(
                f"{what} must be {expected}, got {_shown(shown)} (a quoted value is text, "
                "not a number)"
            )
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            arr = np.zeros(0)
        if arr.shape != dims or not np.isfinite(arr).all():
            self.fail(f"{what} must be {expected}, got {_shown(shown)}")
        return arr

    def number(self, value: object, what: str) -> float:
        read = _exponents_read(value)
        return float(self.floats([read] if np.isscalar(read) else read, 1, what, value)[0])

    def name(self) -> str:
        name = self.data.get("name")
        if not isinstance(name, str) or not name.strip():
            self.fail(f"needs a non-empty 'name', got {_shown(name)}")
        self.where = f"{self.where} ({_shown(name)})"
        return str(name)


def _has_bool(value: object) -> bool:
    """Whether ``value`` is a boolean or a (nested) list holding one."""
    if isinstance(value, (bool, np.bool_)):
        return True
    return isinstance(value, (list, tuple)) and any(_has_bool(v) for v in value)


def _exponents_read(value: object) -> object:
    """``value`` with its plain exponent values (:class:`_ExponentText`) as numbers."""
    if isinstance(value, _ExponentText):
        number = value.number()
        return value if number is None else number
    if isinstance(value, list):
        return [_exponents_read(v) for v in value]
    return value


def _has_text(value: object) -> bool:
    """Whether ``value`` is text or a (nested) list holding some."""
    if isinstance(value, (str, bytes, np.str_)):
        return True
    return isinstance(value, (list, tuple)) and any(_has_text(v) for v in value)


def _sizes(e: _Entry, values: np.ndarray, what: str) -> None:
    """Sizes as written in the file: each in ``(0, MAX_SIZE]`` [m]."""
    if not ((values > 0.0).all() and (values <= MAX_SIZE).all()):
        e.fail(f"{what} must be in (0, {MAX_SIZE:g}] m, got {values.tolist()}")


def _radius_length(e: _Entry, value: object, kind: str) -> tuple[float, float]:
    if not isinstance(value, Mapping) or set(value) != {"radius", "length"}:
        e.fail(f"{kind} needs {{radius, length}}, got {_shown(value)}")
    assert isinstance(value, Mapping)
    r = e.number(value["radius"], f"{kind} radius")
    length = e.number(value["length"], f"{kind} length")
    _sizes(e, np.array([r, length]), f"{kind} radius and length")
    return r, length


def _flat(e: _Entry, value: object, kind: str) -> tuple[np.ndarray, float]:
    """The unit normal and offset [m] of ``{normal, offset}`` (the same set, any length).

    The normal is first divided by its largest component, so that its length can
    neither overflow (``1e160`` squared) nor underflow (``1e-300`` squared); the offset
    is divided the same way.
    """
    if not isinstance(value, Mapping) or set(value) != {"normal", "offset"}:
        e.fail(f"{kind} needs {{normal, offset}}, got {_shown(value)}")
    assert isinstance(value, Mapping)
    n = e.floats(value["normal"], 3, f"{kind} normal")
    offset = e.number(value["offset"], f"{kind} offset")
    largest = float(np.abs(n).max())
    scaled = n / largest if largest > 0.0 else n  # (largest component 1)
    norm = float(np.linalg.norm(scaled))  # (in [1, sqrt 3] unless n is zero)
    if not (math.isfinite(norm) and norm > 0.0):
        e.fail(f"{kind} normal must have a finite, positive length, got {n.tolist()}")
    d = offset / largest / norm
    if not math.isfinite(d):
        e.fail(
            f"{kind} offset over the normal's length must be finite, got offset {offset!r} "
            f"for the normal {n.tolist()}"
        )
    return scaled / norm, d


def _mesh(e: _Entry, value: object, path: Path) -> Any:
    assert isinstance(value, Mapping)  # (_mesh_path checked it)
    extra = set(value) - {"path", "scale", "convex"}
    if extra:
        e.fail(f"mesh has unknown keys {_keys(extra)}")
    scale = value.get("scale", 1.0)
    scale = (
        e.number(scale, "mesh scale") if np.isscalar(scale) else tuple(e.floats(scale, 3, "scale"))
    )
    convex = value.get("convex", True)
    if not isinstance(convex, bool):
        e.fail(f"mesh convex must be true or false, got {_shown(convex)}")
    try:
        return load_mesh(path, scale, convex=convex)
    except StackIKError as exc:
        e.fail(str(exc))


def _mesh_path(e: _Entry, folder: Path) -> Path | None:
    """The file of the entry's ``mesh`` (relative to the scene's folder), or None."""
    if "mesh" not in e.data:
        return None
    value = e.data["mesh"]
    if not isinstance(value, Mapping) or "path" not in value:
        e.fail(f"mesh needs at least {{path}}, got {_shown(value)}")
    assert isinstance(value, Mapping)
    return folder / str(value["path"])


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
        path = _mesh_path(e, folder)
        assert path is not None
        shape = _mesh(e, value, path)
    try:
        return check_shape(shape, kind)
    except StackIKError as exc:
        e.fail(str(exc))


def _pose(e: _Entry, value: object) -> pin.SE3:
    if value is None:
        return pin.SE3.Identity()
    if isinstance(value, list):
        T = e.floats(value, (4, 4), "pose matrix")
        try:
            from ..spatial import as_se3

            return as_se3(_nearest_rigid(T), "pose")
        except StackIKError as exc:
            e.fail(str(exc))
    if not isinstance(value, Mapping) or not set(value) <= {"xyz", "rpy", "quat"}:
        e.fail(f"pose must be {{xyz, rpy}} or {{xyz, quat}} or a 4x4 matrix, got {_shown(value)}")
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
        e.fail(f"unknown keys {_keys(extra)} (shapes: {', '.join(SHAPE_KEYS)})")


def _entries(doc: Mapping[Any, Any], key: str, source: str) -> list:
    """The list under ``key`` (empty when absent or empty)."""
    items = doc.get(key)
    if items is None:
        return []
    if not isinstance(items, list):
        kind = (
            "one mapping (write each entry as a list item, '- name: ...')"
            if isinstance(items, Mapping)
            else _shown(items)
        )
        raise MalformedScene(source, f"{key} must be a list of entries, got {kind}")
    return items


def _scene_loader(yaml: Any, source: str) -> Any:
    """A safe YAML loader for scenes: no key twice, no anchors or aliases, little nesting.

    - A key given twice in one mapping is refused (the safe loader keeps the last of
      two equal keys: ``name: a`` then ``name: b`` in one entry would load one obstacle,
      silently dropping the other).
    - Anchors and aliases (``&x``, ``*x``, ``<<: *x``) are refused where they are
      written: a scene has no use for them, an alias of its own anchor builds a list
      that holds itself, and nested aliases expand a few hundred bytes into millions
      of values.
    - Nesting deeper than :data:`MAX_DEPTH` is refused before it is built.
    """

    class Loader(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                mark = event.start_mark
                raise MalformedScene(
                    source,
                    f"line {mark.line + 1}, column {mark.column + 1}: YAML anchors and "
                    "aliases ('&name', '*name', '<<') are not allowed in a scene; write "
                    "the value out",
                )
            if self.depth >= MAX_DEPTH:
                mark = event.start_mark
                raise MalformedScene(
                    source,
                    f"line {mark.line + 1}, column {mark.column + 1}: nested too deeply "
                    f"(beyond {MAX_DEPTH} levels)",
                )
            self.depth += 1
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    def mapping(loader: Any, node: Any, deep: bool = False) -> dict:
        seen: set[object] = set()
        for k, _ in node.value:
            key = loader.construct_object(k, deep=deep)
            try:
                twice = key in seen
                seen.add(key)
            except TypeError:  # (unhashable: construct_mapping refuses it)
                continue
            if twice:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {_shown(key)} is given twice in one mapping", k.start_mark
                )
        return loader.construct_mapping(node, deep=deep)

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    # YAML 1.2 numbers: an exponent without a dot or without a sign (1e-3, 2E5, 1.5e3) is
    # a number where the scene takes one (YAML 1.1, the safe loader's, reads it as text),
    # and stays text where it takes text (a name, a link, a path).
    Loader.add_implicit_resolver(_EXPONENT_TAG, _EXPONENT, list("-+0123456789."))
    Loader.add_constructor(
        _EXPONENT_TAG, lambda loader, node: _ExponentText(loader.construct_scalar(node))
    )
    return Loader


def _read_yaml(text: str, source: str) -> Mapping[Any, Any]:
    """The scene's top-level mapping (empty for an empty file)."""
    import yaml

    try:
        doc = yaml.load(text, Loader=_scene_loader(yaml, source)) or {}
    except yaml.YAMLError as exc:
        raise MalformedScene(source, f"invalid YAML: {exc}") from exc
    except RecursionError:
        raise MalformedScene(source, "invalid YAML: nested too deeply") from None
    if not isinstance(doc, Mapping):
        raise MalformedScene(
            source, f"top level must hold obstacles/attached, got {type(doc).__name__}"
        )
    extra = set(doc) - {"obstacles", "attached"}
    if extra:
        raise MalformedScene(
            source, f"top level must hold obstacles/attached, got unknown keys {_keys(extra)}"
        )
    return doc


def parse_scene(text: str, source: str = "<scene>", folder: Path | None = None) -> dict:
    """Read scene YAML into ``{"obstacles": [...], "attached": [...]}`` (shapes built).

    Each obstacle is ``(name, shape, pose, min_distance, source)`` (``source`` the mesh
    file of a mesh entry, else None: the arguments of :meth:`World.add_obstacle`), each
    attached object ``(name, link, shape, pose, allowed_links)``.

    Raises:
        MalformedScene: Invalid YAML (or YAML anchors and aliases, or nesting beyond
            :data:`MAX_DEPTH`), or an entry that breaks the format.
    """
    folder = Path.cwd() if folder is None else folder
    doc = _read_yaml(text, source)
    out: dict[str, list] = {"obstacles": [], "attached": []}
    for k, item in enumerate(_entries(doc, "obstacles", source)):
        e = _Entry(source, f"obstacles[{k}]", item)
        name = e.name()
        _known_keys(e, {"name", "pose", "min_distance"})
        shape = _shape(e, folder)
        mesh = _mesh_path(e, folder)
        out["obstacles"].append(
            (
                name,
                shape,
                _pose(e, e.data.get("pose")),
                _optional_distance(e),
                None if mesh is None else str(mesh),
            )
        )
    for k, item in enumerate(_entries(doc, "attached", source)):
        e = _Entry(source, f"attached[{k}]", item)
        name = e.name()
        _known_keys(e, {"name", "link", "pose", "allowed_links"})
        link = e.data.get("link")
        if not isinstance(link, str):
            e.fail(f"needs a 'link' name, got {_shown(link)}")
        allowed = e.data.get("allowed_links", [])
        if not isinstance(allowed, list) or not all(isinstance(a, str) for a in allowed):
            e.fail(f"allowed_links must be a list of link names, got {_shown(allowed)}")
        out["attached"].append(
            (
                name,
                str(link),
                _shape(e, folder),
                _pose(e, e.data.get("pose")),
                list(map(str, allowed)),
            )
        )  # (plain text: a link written 1e5 is read as an _ExponentText)
    return out


def load_scene(
    path: str | os.PathLike[str], world: World, robot: object | None = None
) -> list[str]:
    """Add the obstacles and attached objects of a scene file to ``world``.

    Args:
        path: The YAML scene file.
        world: The world to fill (a robot's ``robot.world``, or one of your own).
        robot: When given, attached objects' links are checked against it. Without
            it they are checked against the robots already using ``world``; a world no
            robot uses yet takes any link name, and the robot that takes the world
            (``robot.set_world``) refuses one it lacks (``InvalidInput``).

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
                    raise MalformedScene(
                        str(path), f"attached[{k}] ({_shown(name)}): {exc}"
                    ) from None
    try:  # (all or nothing: a mistake leaves the world as it was)
        world.add_objects(scene["obstacles"], scene["attached"])
    except StackIKError as exc:
        raise MalformedScene(str(path), str(exc)) from None
    return [entry[0] for entry in scene["obstacles"] + scene["attached"]]
