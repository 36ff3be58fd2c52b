"""Checks of a URDF description before Pinocchio (urdfdom) sees it.

urdfdom silently drops an element it cannot parse (a sphere with radius ``nan``, a box
with two sizes, a mass of ``heavy``): the link then has no collision geometry or no
mass, and nothing says so. It also accepts some descriptions that are wrong
(``lower > upper``, a zero joint axis, a link with two parents). :func:`check_urdf`
walks the XML once and raises :class:`~stackik.errors.MalformedDescription` naming the
file, the element and what is wrong, for every case it knows.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from typing import NoReturn

from ..errors import MalformedDescription

__all__ = ["check_srdf_links", "check_urdf"]

_JOINT_TYPES = {"revolute", "continuous", "prismatic", "fixed", "floating", "planar"}

#: Attributes of each geometry shape: required, then optional.
_SHAPES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "box": (("size",), ()),
    "sphere": (("radius",), ()),
    "cylinder": (("radius", "length"), ()),
    "capsule": (("radius", "length"), ()),
    "mesh": (("filename",), ("scale",)),
}
#: How many numbers each numeric attribute holds, and whether they must be > 0.
_NUMBERS = {
    ("box", "size"): (3, True),
    ("sphere", "radius"): (1, True),
    ("cylinder", "radius"): (1, True),
    ("cylinder", "length"): (1, True),
    ("capsule", "radius"): (1, True),
    ("capsule", "length"): (1, True),
    ("mesh", "scale"): (3, False),
}
_INERTIA = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


class _Checker:
    """One pass over a description; ``fail`` raises with the file named."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, what: str) -> NoReturn:
        raise MalformedDescription(self.source, f"{where}: {what}")

    def numbers(self, where: str, text: str | None, count: int, positive: bool) -> list[float]:
        """Parse ``count`` finite numbers (``> 0`` when ``positive``)."""
        if text is None:
            self.fail(where, "is missing")
        try:
            values = [float(v) for v in text.split()]
        except ValueError:
            self.fail(where, f"{text!r} is not {count} number(s)")
        if len(values) != count:
            self.fail(where, f"{text!r} has {len(values)} number(s), expected {count}")
        if not all(math.isfinite(v) for v in values):
            self.fail(where, f"{text!r} is not finite")
        if positive and not all(v > 0 for v in values):
            self.fail(where, f"{text!r} must be > 0")
        return values

    def origin(self, where: str, elem: ET.Element) -> None:
        origin = elem.find("origin")
        if origin is None:
            return
        for attr in ("xyz", "rpy"):
            if origin.get(attr) is not None:
                self.numbers(f"{where}/<origin> {attr}", origin.get(attr), 3, False)

    # -- links ---------------------------------------------------------------------------
    def geometry(self, where: str, elem: ET.Element) -> None:
        geometry = elem.find("geometry")
        if geometry is None:
            self.fail(where, "has no <geometry>")
        shapes = [child for child in geometry if isinstance(child.tag, str)]
        if len(shapes) != 1:
            tags = [c.tag for c in shapes]
            self.fail(f"{where}/<geometry>", f"needs exactly one shape, has {tags}")
        shape = shapes[0]
        spec = _SHAPES.get(shape.tag)
        if spec is None:
            self.fail(f"{where}/<geometry>", f"unknown shape <{shape.tag}>; use {sorted(_SHAPES)}")
        required, optional = spec
        here = f"{where}/<geometry>/<{shape.tag}>"
        unknown = sorted(set(shape.attrib) - set(required) - set(optional))
        if unknown:
            self.fail(here, f"unknown attribute(s) {unknown}; expected {list(required + optional)}")
        for attr in required + optional:
            count_positive = _NUMBERS.get((shape.tag, attr))
            value = shape.get(attr)
            if count_positive is not None and (attr in required or value is not None):
                self.numbers(f"{here} {attr}", value, *count_positive)
        if shape.tag == "mesh" and not (shape.get("filename") or "").strip():
            self.fail(here, "filename is missing or empty")

    def inertial(self, where: str, inertial: ET.Element) -> None:
        mass = inertial.find("mass")
        if mass is None:
            self.fail(f"{where}/<inertial>", "has no <mass>")
        (m,) = self.numbers(f"{where}/<inertial>/<mass> value", mass.get("value"), 1, False)
        if m < 0:
            self.fail(f"{where}/<inertial>/<mass> value", f"{m} is negative")
        inertia = inertial.find("inertia")
        if inertia is not None:
            for attr in _INERTIA:
                self.numbers(f"{where}/<inertial>/<inertia> {attr}", inertia.get(attr), 1, False)
        self.origin(f"{where}/<inertial>", inertial)

    def link(self, link: ET.Element) -> str:
        name = link.get("name")
        if not name:
            self.fail("<link>", "has no name")
        where = f"link {name!r}"
        for section in ("visual", "collision"):
            for k, elem in enumerate(link.findall(section)):
                here = f"{where} <{section}> #{k}"
                self.geometry(here, elem)
                self.origin(here, elem)
        inertial = link.find("inertial")
        if inertial is not None:
            self.inertial(where, inertial)
        return name

    # -- joints --------------------------------------------------------------------------
    def joint(self, joint: ET.Element, links: set[str], parent_of: dict[str, str]) -> str:
        name = joint.get("name")
        if not name:
            self.fail("<joint>", "has no name")
        where = f"joint {name!r}"
        kind = joint.get("type")
        if kind not in _JOINT_TYPES:
            self.fail(where, f"type {kind!r} is not one of {sorted(_JOINT_TYPES)}")
        parent, child = self._ends(where, joint, links)
        if child in parent_of:
            self.fail(where, f"link {child!r} already has parent joint {parent_of[child]!r}")
        parent_of[child] = name
        self.origin(where, joint)
        if kind in ("revolute", "continuous", "prismatic", "planar"):
            self._axis(where, joint)
        if kind in ("revolute", "prismatic"):
            self._limit(where, joint, required=True)
        elif joint.find("limit") is not None:
            self._limit(where, joint, required=False)
        self._mimic(where, joint)
        if parent == child:
            self.fail(where, f"parent and child are the same link {child!r}")
        return name

    def _ends(self, where: str, joint: ET.Element, links: set[str]) -> tuple[str, str]:
        ends = []
        for tag in ("parent", "child"):
            elem = joint.find(tag)
            link = elem.get("link") if elem is not None else None
            if not link:
                self.fail(where, f"has no <{tag} link=...>")
            if link not in links:
                self.fail(where, f"<{tag}> names link {link!r}, which does not exist")
            ends.append(str(link))
        return ends[0], ends[1]

    def _axis(self, where: str, joint: ET.Element) -> None:
        axis = joint.find("axis")
        if axis is None:
            return  # URDF default: x
        values = self.numbers(f"{where}/<axis> xyz", axis.get("xyz"), 3, False)
        if math.hypot(*values) < 1e-12:
            self.fail(f"{where}/<axis> xyz", f"{axis.get('xyz')!r} has zero length")

    def _limit(self, where: str, joint: ET.Element, required: bool) -> None:
        limit = joint.find("limit")
        if limit is None:
            if required:
                self.fail(where, "needs a <limit> (lower, upper, effort, velocity)")
            return
        here = f"{where}/<limit>"
        bounds = {}
        for attr in ("lower", "upper"):
            if limit.get(attr) is not None:
                (bounds[attr],) = self.numbers(f"{here} {attr}", limit.get(attr), 1, False)
        if "lower" in bounds and "upper" in bounds and bounds["lower"] > bounds["upper"]:
            self.fail(here, f"lower {bounds['lower']} > upper {bounds['upper']}")
        for attr in ("effort", "velocity"):
            if limit.get(attr) is not None:
                (v,) = self.numbers(f"{here} {attr}", limit.get(attr), 1, False)
                if v < 0:
                    self.fail(f"{here} {attr}", f"{v} is negative")

    def _mimic(self, where: str, joint: ET.Element) -> None:
        mimic = joint.find("mimic")
        if mimic is None:
            return
        if not mimic.get("joint"):
            self.fail(f"{where}/<mimic>", "names no joint")
        for attr in ("multiplier", "offset"):
            if mimic.get(attr) is not None:
                self.numbers(f"{where}/<mimic> {attr}", mimic.get(attr), 1, False)

    # -- the whole tree --------------------------------------------------------------------
    def tree(self, root: ET.Element) -> None:
        names: list[str] = [self.link(link) for link in root.findall("link")]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            self.fail("<robot>", f"duplicate link names {duplicates}")
        links = set(names)
        if not links:
            self.fail("<robot>", "has no <link>")
        parent_of: dict[str, str] = {}
        joints = [self.joint(j, links, parent_of) for j in root.findall("joint")]
        duplicates = sorted({n for n in joints if joints.count(n) > 1})
        if duplicates:
            self.fail("<robot>", f"duplicate joint names {duplicates}")
        for joint in root.findall("joint"):
            mimic = joint.find("mimic")
            if mimic is not None and mimic.get("joint") not in joints:
                self.fail(
                    f"joint {joint.get('name')!r}/<mimic>",
                    f"follows joint {mimic.get('joint')!r}, which does not exist",
                )
        roots = sorted(links - set(parent_of))
        if len(roots) != 1:
            self.fail("<robot>", f"needs exactly one root link (a tree), has {roots}")


def check_urdf(root: ET.Element, source: str) -> None:
    """Validate a parsed URDF ``<robot>`` element.

    Raises:
        MalformedDescription: The first problem found, naming the element.
    """
    _Checker(source).tree(root)


def check_srdf_links(pairs: Iterable[tuple[str, str]], links: set[str], source: str) -> None:
    """Every link an SRDF ``<disable_collisions>`` entry names exists in the robot.

    Raises:
        MalformedDescription: An entry names an unknown link.
    """
    for a, b in pairs:
        for name in (a, b):
            if name not in links:
                raise MalformedDescription(
                    source,
                    f"<disable_collisions link1={a!r} link2={b!r}>: the robot has no link {name!r}",
                )
