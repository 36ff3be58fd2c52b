"""Checks of a URDF or SRDF description before Pinocchio (urdfdom) and coal see it.

urdfdom silently drops an element it cannot parse (a sphere with radius ``nan``, a box
with two sizes, a mass of ``heavy``): the link then has no collision geometry or no
mass, and nothing says so. Where it does refuse (a damping of ``nan``, a robot without
a name), its only message is "The XML stream does not contain a valid URDF model". It
also accepts descriptions that are wrong (``lower > upper``, a zero joint axis, a link
with two parents, a box of 1e300 m, an inertia no rigid body has). :func:`check_urdf`
walks the XML once and raises :class:`~stackik.errors.MalformedDescription` naming the
file, the element and what is wrong, for every case it knows; :func:`check_srdf` does
the same for an SRDF against its robot.

Every number must be finite and at most :data:`~stackik._validate.MAX_MAGNITUDE` in
magnitude, the rule targets and settings follow: nothing in a robot is larger, and
larger values overflow the distance and dynamics computations.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable
from typing import NoReturn

import numpy as np

from .._validate import MAX_MAGNITUDE
from ..errors import MalformedDescription

__all__ = ["check_srdf", "check_srdf_links", "check_urdf"]

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
#: Numeric attributes of a joint's optional sub-elements (urdfdom refuses the whole
#: description, without saying why, when one does not parse).
_JOINT_NUMBERS = {
    "dynamics": ("damping", "friction"),
    "calibration": ("rising", "falling", "reference_position"),
    "safety_controller": ("soft_lower_limit", "soft_upper_limit", "k_position", "k_velocity"),
}
#: Relative tolerance of the inertia checks (CAD exports round their moments).
_INERTIA_TOLERANCE = 1e-6
#: SDFormat's "no limit" for a joint's position limits, which sdf-to-urdf converters
#: write (it reads as unbounded; any other magnitude beyond the rule is refused).
_NO_LIMIT = 1e16


class _Checker:
    """One pass over a description; ``fail`` raises with the file named."""

    def __init__(self, source: str, strict: bool = True) -> None:
        self.source = source
        self.strict = strict

    def fail(self, where: str, what: str) -> NoReturn:
        raise MalformedDescription(self.source, f"{where}: {what}")

    def numbers(
        self,
        where: str,
        text: str | None,
        count: int,
        positive: bool,
        unbounded: bool = False,
        limit: float = MAX_MAGNITUDE,
    ) -> list[float]:
        """Parse ``count`` finite numbers of magnitude at most ``limit`` (> 0 if ``positive``).

        With ``unbounded``, SDFormat's "no limit" value ``+-1e16`` passes too.
        """
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
        if not all(abs(v) <= limit or (unbounded and abs(v) == _NO_LIMIT) for v in values):
            hint = f" (write +-{_NO_LIMIT:g} for no limit)" if unbounded else ""
            self.fail(
                where, f"{text!r} is beyond +-{limit:g}: no robot quantity is that large{hint}"
            )
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
            here = f"{where}/<inertial>/<inertia>"
            values = [self.numbers(f"{here} {a}", inertia.get(a), 1, False)[0] for a in _INERTIA]
            if self.strict:
                self.inertia(here, values)
        self.origin(f"{where}/<inertial>", inertial)

    def inertia(self, where: str, values: list[float]) -> None:
        """A rigid body's inertia: positive semi-definite, principal moments a triangle.

        The principal moments ``I1 <= I2 <= I3`` of any mass distribution satisfy
        ``I1 + I2 >= I3`` (each is a sum of two of the three second moments of mass).
        """
        ixx, ixy, ixz, iyy, iyz, izz = values
        moments = np.linalg.eigvalsh(np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]))
        tol = _INERTIA_TOLERANCE * float(np.abs(moments).max()) + 1e-12
        shown = ", ".join(f"{m:.6g}" for m in moments)
        hint = " (strict=False loads it as written)"
        if moments[0] < -tol:
            self.fail(
                where,
                f"is not positive semi-definite (principal moments {shown}): no rigid body "
                f"has this inertia{hint}",
            )
        if moments[0] + moments[1] < moments[2] - tol:
            self.fail(
                where,
                f"principal moments {shown} violate the triangle inequality "
                f"({moments[0]:.6g} + {moments[1]:.6g} < {moments[2]:.6g}): no rigid body has "
                f"this inertia{hint}",
            )

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
        self._joint_numbers(where, joint)
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
                (bounds[attr],) = self.numbers(
                    f"{here} {attr}", limit.get(attr), 1, False, unbounded=True
                )
        if "lower" in bounds and "upper" in bounds and bounds["lower"] > bounds["upper"]:
            self.fail(here, f"lower {bounds['lower']} > upper {bounds['upper']}")
        for attr in ("effort", "velocity"):
            if limit.get(attr) is not None:
                (v,) = self.numbers(f"{here} {attr}", limit.get(attr), 1, False)
                if v < 0:
                    self.fail(f"{here} {attr}", f"{v} is negative")

    def _joint_numbers(self, where: str, joint: ET.Element) -> None:
        for tag, attrs in _JOINT_NUMBERS.items():
            for elem in joint.findall(tag):
                for attr in attrs:
                    if elem.get(attr) is not None:
                        # Only parsed: stackik uses none of them (PR2's gains reach 2e6).
                        self.numbers(
                            f"{where}/<{tag}> {attr}", elem.get(attr), 1, False, limit=math.inf
                        )

    def _materials(self, root: ET.Element) -> None:
        for material in root.iter("material"):
            color = material.find("color")
            if color is not None and color.get("rgba") is not None:
                name = material.get("name")
                self.numbers(f"<material name={name!r}>/<color> rgba", color.get("rgba"), 4, False)

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
        if root.get("name") is None:  # urdfdom refuses it without saying why
            self.fail("<robot>", 'has no name: write <robot name="...">')
        self._materials(root)
        names: list[str] = [self.link(link) for link in root.findall("link")]
        duplicates = sorted(n for n, k in Counter(names).items() if k > 1)
        if duplicates:
            self.fail("<robot>", f"duplicate link names {duplicates}")
        links = set(names)
        if not links:
            self.fail("<robot>", "has no <link>")
        parent_of: dict[str, str] = {}
        joints = [self.joint(j, links, parent_of) for j in root.findall("joint")]
        duplicates = sorted(n for n, k in Counter(joints).items() if k > 1)
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


def check_urdf(root: ET.Element, source: str, strict: bool = True) -> None:
    """Validate a parsed URDF ``<robot>`` element.

    Args:
        root: The parsed description.
        source: Its name for messages.
        strict: Refuse inertias no rigid body has (a negative principal moment,
            or principal moments breaking the triangle inequality).

    Raises:
        MalformedDescription: The first problem found, naming the element.
    """
    _Checker(source, strict).tree(root)


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


class _SrdfChecker:
    """One pass over an SRDF against its robot's link and joint names."""

    def __init__(self, source: str, links: set[str], joints: set[str]) -> None:
        self.source = source
        self.links = links
        self.joints = joints
        self.hint = " (strict=False loads SRDF groups and joints as written)"

    def fail(self, where: str, what: str) -> NoReturn:
        raise MalformedDescription(self.source, f"{where}: {what}")

    def name(self, where: str, kind: str, name: str | None, known: set[str]) -> str:
        if not name:
            self.fail(where, f"names no {kind}")
        if name not in known:
            close = ", ".join(sorted(_close(name, known)))
            hint = f" (closest: {close})" if close else ""
            self.fail(where, f"the robot has no {kind} {name!r}{hint}")
        return name

    def semantic(self, where: str, kind: str, name: str | None, known: set[str]) -> None:
        """A name in a group, passive joint or virtual joint (only ``strict`` refuses it)."""
        try:
            self.name(where, kind, name, known)
        except MalformedDescription as exc:
            raise MalformedDescription(self.source, exc.reason + self.hint) from None

    def pair(self, elem: ET.Element) -> tuple[str, str]:
        a, b = elem.get("link1"), elem.get("link2")
        where = f"<disable_collisions link1={a!r} link2={b!r}>"
        if not a or not b:
            self.fail("<disable_collisions>", "needs link1 and link2")
        self.name(where, "link", a, self.links)
        self.name(where, "link", b, self.links)
        if a == b:
            self.fail(
                where,
                "disables the collisions of a link with itself (a link never collides with itself)",
            )
        return a, b

    def virtual_joint(self, elem: ET.Element) -> str:
        name = elem.get("name")
        where = f"<virtual_joint name={name!r}>"
        if not name:
            self.fail("<virtual_joint>", "has no name")
        self.semantic(where, "link", elem.get("child_link"), self.links)
        return name

    def group(self, elem: ET.Element, groups: set[str], joints: set[str]) -> None:
        where = f"<group name={elem.get('name')!r}>"
        for link in elem.findall("link"):
            self.semantic(f"{where}/<link>", "link", link.get("name"), self.links)
        for joint in elem.findall("joint"):
            self.semantic(f"{where}/<joint>", "joint", joint.get("name"), joints)
        for chain in elem.findall("chain"):
            for end in ("base_link", "tip_link"):
                self.semantic(f"{where}/<chain> {end}", "link", chain.get(end), self.links)
        for sub in elem.findall("group"):
            self.semantic(f"{where}/<group>", "group", sub.get("name"), groups)

    def document(self, root: ET.Element, strict: bool) -> list[tuple[str, str]]:
        if root.tag != "robot":
            self.fail(f"<{root.tag}>", "the root element of an SRDF must be <robot>")
        if strict:
            self.semantics(root)
        return [self.pair(elem) for elem in root.iter("disable_collisions")]

    def semantics(self, root: ET.Element) -> None:
        """Virtual joints, groups and passive joints name what the robot has."""
        virtual = {self.virtual_joint(v) for v in root.findall("virtual_joint")}
        joints = self.joints | virtual
        groups = {str(g.get("name")) for g in root.findall("group") if g.get("name")}
        for g in root.findall("group"):
            self.group(g, groups, joints)
        for p in root.findall("passive_joint"):
            where = f"<passive_joint name={p.get('name')!r}>"
            self.semantic(where, "joint", p.get("name"), joints)


def _close(name: str, known: Iterable[str]) -> list[str]:
    import difflib

    return difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)


def check_srdf(
    root: ET.Element, links: set[str], joints: set[str], source: str, strict: bool = True
) -> list[tuple[str, str]]:
    """Validate a parsed SRDF against its robot; return its ``<disable_collisions>`` pairs.

    Checked: the root element is ``<robot>``; every link and joint an entry names exists
    (``<disable_collisions>``, ``<virtual_joint child_link>``, ``<group>`` links, joints,
    chains and subgroups, ``<passive_joint>``); no link is paired with itself. Named
    states (``<group_state>``) are not checked: published SRDFs often list the joints
    of a floating base their URDF lacks.

    Args:
        root: The parsed SRDF.
        links: The robot's link names.
        joints: The robot's joint names (as in its URDF, fixed joints included, and
            ``root_joint`` for a floating base).
        source: The SRDF's name for messages.
        strict: Check virtual joints, groups and passive joints too (stackik uses
            only the ``<disable_collisions>``, which are checked either way).

    Raises:
        MalformedDescription: The first problem found, naming the element.
    """
    return _SrdfChecker(source, links, joints).document(root, strict)
