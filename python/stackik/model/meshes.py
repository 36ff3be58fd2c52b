"""Mesh files of a description: checked before coal loads them, and after.

coal (through assimp) reports a mesh it cannot read with its C++ file and line and a
hint that "the mesh directory may be wrong", even when the file exists and is only
empty or degenerate. It loads a mesh with NaN vertices without complaint, and a vertex
at 1e20 m crashes its convex hull (the process ends). Here:

- :func:`mesh_references` lists which link and section use which file, at which scale;
- :func:`check_mesh_files` reads every STL file before coal does (binary or ASCII):
  an empty file, no triangles, every triangle collapsed, a non-finite vertex or one
  beyond :data:`~stackik._validate.MAX_MAGNITUDE` is refused, naming the file and the
  link;
- :func:`explain_load_error` turns coal's message about a file of any other format into
  one naming the file, the link and the loader's own reason;
- :func:`check_loaded_meshes` checks the vertices coal loaded, whatever the format;
- :func:`collada_unit` reads a COLLADA file's length unit, which assimp ignores (a mesh
  drawn in millimetres or inches loads 1000 or 39.4 times too large), and
  :func:`apply_collada_units` scales such meshes of a description to their size in
  metres before Pinocchio loads them, as RViz and Gazebo show them.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import coal
import numpy as np
import pinocchio as pin

from .._validate import MAX_MAGNITUDE
from ..errors import MalformedDescription

__all__ = [
    "MeshReference",
    "apply_collada_units",
    "check_loaded_meshes",
    "check_mesh_files",
    "collada_unit",
    "explain_load_error",
    "mesh_references",
    "read_stl",
]

#: One binary STL triangle: normal, three corners, attribute byte count.
_STL_TRIANGLE = np.dtype([("normal", "<f4", (3,)), ("corners", "<f4", (3, 3)), ("attr", "<u2")])
_ASCII_VERTEX = re.compile(rb"vertex\s+(\S+)\s+(\S+)\s+(\S+)")
_LOAD_FAILURE = re.compile(r"Could not load resource (?P<path>[^\n]+)\n(?P<reason>[^\n]*)")


@dataclass(frozen=True)
class MeshReference:
    """One ``<mesh>`` of a description.

    Attributes:
        link: The link it belongs to.
        section: ``"visual"`` or ``"collision"``.
        index: Which of the link's ``section`` elements (0 first).
        path: The resolved file.
        scale: The ``scale`` attribute (1 when absent).
    """

    link: str
    section: str
    index: int
    path: str
    scale: tuple[float, float, float]

    def where(self) -> str:
        """The element, for messages."""
        return f"link {self.link!r} <{self.section}> #{self.index} mesh {self.path!r}"


def _scale(mesh: ET.Element) -> tuple[float, float, float]:
    try:
        x, y, z = (float(v) for v in (mesh.get("scale") or "1 1 1").split())
    except ValueError:  # check_urdf has refused it already
        return (1.0, 1.0, 1.0)
    return (x, y, z)


def _mesh_elements(
    root: ET.Element, sections: Sequence[str]
) -> Iterator[tuple[str, str, int, ET.Element]]:
    """``(link, section, index of the section element, <mesh>)`` under the given sections."""
    for link in root.iter("link"):
        for section in sections:
            for k, elem in enumerate(link.findall(section)):
                for mesh in elem.iter("mesh"):
                    yield str(link.get("name")), section, k, mesh


def mesh_references(root: ET.Element, sections: Sequence[str]) -> list[MeshReference]:
    """Every ``<mesh>`` under the given link sections (filenames already resolved)."""
    return [
        MeshReference(link, section, k, str(mesh.get("filename", "")), _scale(mesh))
        for link, section, k, mesh in _mesh_elements(root, sections)
    ]


class _Unreadable(ValueError):
    """An STL file whose text is not numbers (the reason is the message)."""


def read_stl(path: str | Path) -> np.ndarray | None:
    """The triangles of an STL file, shape (n, 3, 3) [file units].

    Returns:
        None when the file is neither a binary STL of consistent size nor ASCII STL
        (coal decides then).

    Raises:
        _Unreadable: An ASCII vertex that is not three numbers.
    """
    data = Path(path).read_bytes()
    if len(data) >= 84:
        n = int.from_bytes(data[80:84], "little")
        if len(data) == 84 + 50 * n:
            return np.frombuffer(data, _STL_TRIANGLE, count=n, offset=84)["corners"].astype(float)
    if data.lstrip()[:5].lower() != b"solid":
        return None
    rows = _ASCII_VERTEX.findall(data)
    if len(rows) % 3:
        return None
    try:
        values = [[float(v) for v in row] for row in rows]
    except ValueError:
        bad = next(row for row in rows if not _all_floats(row))
        text = b" ".join(bad).decode(errors="replace")
        raise _Unreadable(f"vertex {text!r} is not three numbers") from None
    return np.array(values, dtype=float).reshape(-1, 3, 3)


def _all_floats(row: Sequence[bytes]) -> bool:
    try:
        [float(v) for v in row]
    except ValueError:
        return False
    return True


def _vertex_fault(points: np.ndarray) -> str:
    """What is wrong with a (n, 3) vertex array [m], or ``""``."""
    finite = np.isfinite(points).all(axis=1)
    if not finite.all():
        k = int(np.flatnonzero(~finite)[0])
        return f"vertex {k} is {tuple(points[k].tolist())}: not finite"
    big = (np.abs(points) > MAX_MAGNITUDE).any(axis=1)
    if big.any():
        k = int(np.flatnonzero(big)[0])
        return (
            f"vertex {k} is {tuple(points[k].tolist())}: beyond +-{MAX_MAGNITUDE:g} m, "
            "no robot part is that large"
        )
    return ""


def _stl_fault(path: str, scale: tuple[float, float, float]) -> str:
    """What is wrong with an STL file, or ``""`` (also when coal must decide)."""
    if Path(path).stat().st_size == 0:
        return "the file is empty"
    try:
        triangles = read_stl(path)
    except _Unreadable as exc:
        return str(exc)
    if triangles is None:
        return ""
    if triangles.shape[0] == 0:
        return "it has no triangles"
    fault = _vertex_fault(triangles.reshape(-1, 3) * np.asarray(scale))
    if fault:
        return fault
    a, b, c = triangles[:, 0], triangles[:, 1], triangles[:, 2]
    collapsed = (a == b).all(axis=1) | (b == c).all(axis=1) | (a == c).all(axis=1)
    if collapsed.all():
        return (
            f"all {len(triangles)} of its triangles have coincident corners: no surface "
            "is left to collide with"
        )
    return ""


def check_mesh_files(refs: Sequence[MeshReference], source: str) -> None:
    """Refuse empty, triangle-less, collapsed, non-finite or huge meshes before coal reads them.

    Every file is checked for emptiness; STL files (binary or ASCII) are read and their
    triangles checked. Other formats are checked once loaded
    (:func:`check_loaded_meshes`).

    Raises:
        MalformedDescription: Naming the link, the section, the file and the fault.
    """
    seen: set[tuple[str, tuple[float, float, float]]] = set()
    for ref in refs:
        key = (ref.path, ref.scale)
        if key in seen:
            continue
        seen.add(key)
        if ref.path.lower().endswith(".stl"):
            fault = _stl_fault(ref.path, ref.scale)
        else:
            fault = "the file is empty" if Path(ref.path).stat().st_size == 0 else ""
        if fault:
            raise MalformedDescription(source, f"{ref.where()}: {fault}")


def explain_load_error(
    message: str, refs: Sequence[MeshReference], source: str
) -> MalformedDescription | None:
    """The error naming the link and the file for coal's "Could not load resource" failure.

    Returns:
        The error to raise, or None when ``message`` is not about one of ``refs``.
    """
    match = _LOAD_FAILURE.search(message)
    if match is None:
        return None
    path = match.group("path").strip()
    ref = next((r for r in refs if r.path == path), None)
    if ref is None:
        return None
    reason = match.group("reason").strip() or "no reason given"
    exists = "the file exists, so it is damaged or not a mesh" if Path(path).is_file() else ""
    detail = f"; {exists}" if exists else ""
    return MalformedDescription(
        source, f"{ref.where()}: the mesh loader cannot read it ({reason}){detail}"
    )


def check_loaded_meshes(
    geom_model: pin.GeometryModel, model: pin.Model, section: str, source: str
) -> None:
    """Every triangle mesh coal loaded has finite vertices within the magnitude rule.

    Raises:
        MalformedDescription: Naming the link, the section, the file and the vertex.
    """
    for obj in geom_model.geometryObjects:
        geom = obj.geometry
        if not isinstance(geom, coal.BVHModelBase) or geom.num_vertices == 0:
            continue
        fault = _vertex_fault(np.asarray(geom.vertices()))
        if fault:
            link = model.frames[obj.parentFrame].name
            raise MalformedDescription(
                source, f"link {link!r} <{section}> mesh {obj.meshPath!r}: {fault}"
            )


def collada_unit(path: str | Path) -> float:
    """The length unit of a COLLADA (.dae) file [m per file unit]: ``<asset><unit meter>``.

    COLLADA's default, and the answer for a file that declares none, is 1 (metres). Only
    the document's own ``<asset>`` counts (the first to close: the root's comes first and
    holds no other). A file that is not XML gives 1 as well: coal reports it when it loads
    the mesh. Any other format (a path not ending in ``.dae``) has no unit: 1.

    Raises:
        ValueError: The unit is not a positive, finite number (the caller names the file).
    """
    if not str(path).lower().endswith(".dae"):
        return 1.0
    try:
        for _, elem in ET.iterparse(str(path), events=("end",)):
            tag = elem.tag.rsplit("}", 1)[-1]
            if tag == "asset":
                unit = next((c for c in elem if c.tag.rsplit("}", 1)[-1] == "unit"), None)
                return 1.0 if unit is None else _unit_meters(unit.get("meter", "1"))
    except ET.ParseError:
        return 1.0
    return 1.0


def _unit_meters(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0.0 < value <= MAX_MAGNITUDE):
        raise ValueError(f"<unit meter={text!r}> is not a positive length in metres")
    return value


def apply_collada_units(root: ET.Element, sections: Sequence[str], source: str) -> None:
    """Scale every COLLADA ``<mesh>`` of the description by its file's unit (in place).

    The ``scale`` attribute becomes the description's scale times the unit, so that
    Pinocchio loads the mesh once, at its size in metres (its ``meshScale`` is that
    product). Filenames must be resolved already.

    Raises:
        MalformedDescription: A file's unit is not a positive length, naming the link.
    """
    units: dict[str, float] = {}
    for link, section, _, mesh in _mesh_elements(root, sections):
        path = str(mesh.get("filename", ""))
        if path not in units:
            try:
                units[path] = collada_unit(path)
            except ValueError as exc:
                raise MalformedDescription(
                    source, f"link {link!r} <{section}> mesh {path!r}: {exc}"
                ) from None
        unit = units[path]
        if unit != 1.0:
            mesh.set("scale", " ".join(repr(v * unit) for v in _scale(mesh)))
