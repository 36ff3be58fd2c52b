"""Reading robot descriptions: URDF files and strings, XACRO, mesh paths, SRDF.

Mesh filenames (``package://pkg/...``, ``file://...``, relative paths) are resolved
here, before Pinocchio sees the URDF, so a missing mesh is reported with the name
and every directory searched instead of a bare parser failure.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ..errors import InvalidInput, MalformedDescription, MeshNotFound, RobotFileNotFound

#: Element tags whose ``filename`` attribute names a mesh file.
_MESH_TAGS = ("mesh",)


#: What bytes given as a description's path most likely were.
URDF_TEXT_HINT = "URDF text goes to RobotModel.from_urdf_string"


def check_path(value: object, what: str, hint: str | None = URDF_TEXT_HINT) -> Path:
    """``value`` as a file path: a non-empty ``str`` or ``os.PathLike`` of ``str``.

    Args:
        value: The path.
        what: Its name in messages.
        hint: Appended to the message for bytes (None: nothing).

    Raises:
        InvalidInput: None, a number, bytes, an empty string, or anything else.
    """
    if isinstance(value, (bytes, bytearray)):
        more = f"; {hint}" if hint else ""
        raise InvalidInput(
            f"{what} must be a path (str or os.PathLike), got bytes{more}", what=what
        )
    if not isinstance(value, (str, os.PathLike)):
        raise InvalidInput(
            f"{what} must be a path (str or os.PathLike), got {type(value).__name__}",
            what=what,
            value=value,
        )
    text = os.fspath(value)
    if not isinstance(text, str):
        raise InvalidInput(f"{what} must be a str path, got {type(text).__name__}", what=what)
    if not text.strip():
        raise InvalidInput(f"{what} is empty", what=what, value=value)
    return Path(text)


def check_text(value: object, what: str) -> str:
    """Description text given as ``str`` (or UTF-8 ``bytes``).

    Raises:
        InvalidInput: Not text (a path, say: the hint names the right constructor).
        MalformedDescription: Bytes that are not UTF-8.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedDescription(
                "<string>", f"not UTF-8 text: byte 0x{value[exc.start]:02x} at offset {exc.start}"
            ) from None
    hint = "; for a file use RobotModel(path)" if isinstance(value, os.PathLike) else ""
    raise InvalidInput(
        f"{what} must be the description's text (str), got {type(value).__name__}{hint}",
        what=what,
        value=value,
    )


def check_package_dirs(value: object) -> list[str | os.PathLike[str]]:
    """``package_dirs`` as a list of paths (``None``: none; one path: a list of one).

    Raises:
        InvalidInput: Not a path or a sequence of paths.
    """
    if value is None:
        return []
    if isinstance(value, (str, os.PathLike)):
        value = [value]
    if not isinstance(value, Iterable) or isinstance(value, (bytes, bytearray)):
        raise InvalidInput(
            f"package_dirs must be a path or a list of paths, got {type(value).__name__}",
            what="package_dirs",
            value=value,
        )
    return [check_path(d, "package_dirs entry") for d in value]


def read_text(path: str | os.PathLike[str], subject: str = "robot description") -> str:
    """Read a description (or scene) file as UTF-8 text.

    Args:
        path: The file.
        subject: What it holds, for the messages ("robot description", "scene").

    Raises:
        RobotFileNotFound: The file does not exist.
        MalformedDescription: It is not UTF-8 text (the offending byte is named).
    """
    p = Path(path)
    if not p.is_file():
        raise RobotFileNotFound(str(path), subject)
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        bad = exc.object[exc.start : exc.start + 1].hex()
        raise MalformedDescription(
            str(path), f"not UTF-8 text: byte 0x{bad} at offset {exc.start}", subject
        ) from None


def process_xacro(
    path: str | os.PathLike[str], mappings: Mapping[str, object] | None = None
) -> str:
    """Expand a XACRO file into URDF text.

    Args:
        path: XACRO file.
        mappings: XACRO arguments (``<xacro:arg name=...>``), values converted with ``str``.

    Returns:
        The expanded URDF XML text.

    Raises:
        RobotFileNotFound: The file does not exist.
        MalformedDescription: XACRO or XML processing failed (the processor's message
            is kept).
    """
    p = Path(path)
    if not p.is_file():
        raise RobotFileNotFound(str(path))
    import xacro  # imported here: a few ms, only needed for XACRO input

    str_mappings = {str(k): _xacro_value(v) for k, v in (mappings or {}).items()}
    try:
        doc = xacro.process_file(str(p), mappings=str_mappings)
    except Exception as exc:  # xacro raises many unrelated types (XacroException, ExpatError, ...)
        raise MalformedDescription(str(path), f"xacro: {exc}") from exc
    return doc.toprettyxml(indent="  ")


def _xacro_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_xml(text: str, source: str) -> ET.Element:
    """Parse description XML, raising :class:`MalformedDescription` with the parser's message."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise MalformedDescription(source, f"XML parse error: {exc}") from exc
    return root


def package_search_dirs(
    urdf_dir: Path | None, package_dirs: Sequence[str | os.PathLike[str]] | str | None
) -> list[Path]:
    """Directories searched for ``package://`` resources, in priority order.

    The order is: the explicit ``package_dirs``, every entry of ``ROS_PACKAGE_PATH``,
    then the URDF file's folder and each of its ancestors.
    """
    dirs: list[Path] = [Path(d) for d in check_package_dirs(package_dirs)]
    for entry in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep):
        if entry:
            dirs.append(Path(entry))
    if urdf_dir is not None:
        dirs.append(urdf_dir)
        dirs.extend(urdf_dir.parents)
    seen: set[Path] = set()
    unique = []
    for d in dirs:
        d = d.resolve()
        if d not in seen:
            seen.add(d)
            unique.append(d)
    return unique


def _find_package_file(package: str, rel: str, search: Iterable[Path]) -> Path | None:
    for base in search:
        # The package folder itself is on the path, or is a child of a path entry.
        for candidate in (base / package / rel, base / rel if base.name == package else None):
            if candidate is not None and candidate.is_file():
                return candidate
    return None


def resolve_mesh_paths(
    root: ET.Element,
    source: str,
    urdf_dir: Path | None,
    package_dirs: Sequence[str | os.PathLike[str]] | str | None,
    sections: Sequence[str],
) -> set[str]:
    """Rewrite mesh filenames under the given link sections to absolute paths.

    Args:
        root: Parsed ``<robot>`` element (modified in place).
        source: Name of the description for error messages.
        urdf_dir: Folder of the URDF file, or ``None`` for a string.
        package_dirs: Extra package search directories.
        sections: Link sub-elements whose meshes must resolve (``"visual"``,
            ``"collision"``).

    Returns:
        The set of absolute mesh paths referenced.

    Raises:
        MeshNotFound: A mesh could not be found; the error names it and the search path.
    """
    search = package_search_dirs(urdf_dir, package_dirs)
    found: set[str] = set()
    for link in root.iter("link"):
        for section in sections:
            for elem in link.iter(section):
                for tag in _MESH_TAGS:
                    for mesh in elem.iter(tag):
                        name = mesh.get("filename", "")
                        path = _resolve_one(name, urdf_dir, search)
                        if path is None:
                            where = [str(d) for d in search]
                            raise MeshNotFound(source, name, where)
                        mesh.set("filename", str(path))
                        found.add(str(path))
    return found


def _resolve_one(name: str, urdf_dir: Path | None, search: list[Path]) -> Path | None:
    if name.startswith("package://"):
        rest = name[len("package://") :]
        package, _, rel = rest.partition("/")
        return _find_package_file(package, rel, search)
    if name.startswith("file://"):
        p = Path(name[len("file://") :])
        return p if p.is_file() else None
    p = Path(name)
    if p.is_absolute():
        return p if p.is_file() else None
    # A URDF given as a string has no folder: its relative paths mean the working folder.
    base = urdf_dir if urdf_dir is not None else Path.cwd()
    if (base / p).is_file():
        return (base / p).resolve()
    for base in search:
        if (base / p).is_file():
            return (base / p).resolve()
    return None


def strip_sections(root: ET.Element, sections: Sequence[str]) -> None:
    """Remove the given link sub-elements (e.g. ``visual``) from the description in place."""
    for link in root.iter("link"):
        for section in sections:
            for elem in list(link.findall(section)):
                link.remove(elem)


def parse_srdf_disabled_pairs(text: str, source: str) -> list[tuple[str, str]]:
    """Read the ``<disable_collisions link1=... link2=...>`` pairs of an SRDF text.

    Raises:
        MalformedDescription: The SRDF is not valid XML or an entry lacks a link name.
    """
    root = parse_xml(text, source)
    pairs = []
    for elem in root.iter("disable_collisions"):
        a, b = elem.get("link1"), elem.get("link2")
        if not a or not b:
            raise MalformedDescription(source, "<disable_collisions> needs link1 and link2")
        pairs.append((a, b))
    return pairs
