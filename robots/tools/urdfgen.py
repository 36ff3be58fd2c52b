"""Tiny URDF/SRDF writer used to generate the robot descriptions in ``robots/``.

The robot files in ``robots/`` are checked in; this module (together with
``generate.py``) is only needed to regenerate them.  Everything here is
self-contained: links carry primitive collision shapes (box, cylinder, sphere),
inertias are either given explicitly or derived from the shapes, and the SRDF
is derived from the kinematic tree (adjacent pairs) plus a sampling-based
search for pairs that never come close ("Never" pairs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

PI = math.pi


def fmt(value: float) -> str:
    """Format a float exactly (shortest round-trip repr), with -0 printed as 0."""
    value = float(value)
    if value == 0.0:
        return "0"
    text = repr(value)
    if text.endswith(".0"):
        text = text[:-2]
    return text


def fmt_short(value: float) -> str:
    """Format a physical parameter with 9 significant digits."""
    value = float(value)
    if abs(value) < 1e-15:
        return "0"
    return f"{value:.9g}"


def rot_x(a: float) -> np.ndarray:
    """Rotation matrix about x."""
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rot_y(a: float) -> np.ndarray:
    """Rotation matrix about y."""
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rot_z(a: float) -> np.ndarray:
    """Rotation matrix about z."""
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rpy_matrix(rpy: tuple[float, float, float]) -> np.ndarray:
    """URDF convention: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    return rot_z(rpy[2]) @ rot_y(rpy[1]) @ rot_x(rpy[0])


@dataclass
class Shape:
    """A primitive collision shape placed in its link frame."""

    kind: str  # "box" | "cylinder" | "sphere"
    dims: tuple[float, ...]  # box: (x, y, z); cylinder: (radius, length); sphere: (radius,)
    xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def volume(self) -> float:
        """Volume of the primitive."""
        if self.kind == "box":
            return self.dims[0] * self.dims[1] * self.dims[2]
        if self.kind == "cylinder":
            r, length = self.dims
            return PI * r * r * length
        return 4.0 / 3.0 * PI * self.dims[0] ** 3

    def unit_inertia(self) -> np.ndarray:
        """Inertia tensor per unit mass about the shape centre, in the link frame."""
        if self.kind == "box":
            x, y, z = self.dims
            local = np.diag([y * y + z * z, x * x + z * z, x * x + y * y]) / 12.0
        elif self.kind == "cylinder":
            r, h = self.dims
            t = (3.0 * r * r + h * h) / 12.0
            local = np.diag([t, t, r * r / 2.0])
        else:
            r = self.dims[0]
            local = np.eye(3) * 0.4 * r * r
        rot = rpy_matrix(self.rpy)
        return rot @ local @ rot.T

    def xml(self) -> str:
        """The ``<geometry>`` element of the shape."""
        if self.kind == "box":
            return f'<box size="{" ".join(fmt_short(v) for v in self.dims)}"/>'
        if self.kind == "cylinder":
            radius, length = (fmt_short(v) for v in self.dims)
            return f'<cylinder radius="{radius}" length="{length}"/>'
        return f'<sphere radius="{fmt_short(self.dims[0])}"/>'


def cyl_x(r: float, x0: float, x1: float, y: float = 0.0, z: float = 0.0) -> Shape:
    """Cylinder of radius r whose axis runs along x from x0 to x1."""
    return Shape("cylinder", (r, abs(x1 - x0)), ((x0 + x1) / 2, y, z), (0.0, PI / 2, 0.0))


def cyl_y(r: float, y0: float, y1: float, x: float = 0.0, z: float = 0.0) -> Shape:
    """Cylinder of radius r whose axis runs along y from y0 to y1."""
    return Shape("cylinder", (r, abs(y1 - y0)), (x, (y0 + y1) / 2, z), (PI / 2, 0.0, 0.0))


def cyl_z(r: float, z0: float, z1: float, x: float = 0.0, y: float = 0.0) -> Shape:
    """Cylinder of radius r whose axis runs along z from z0 to z1."""
    return Shape("cylinder", (r, abs(z1 - z0)), (x, y, (z0 + z1) / 2))


def box(lo: tuple[float, float, float], hi: tuple[float, float, float]) -> Shape:
    """Axis-aligned box spanning the corners lo and hi."""
    size = tuple(b - a for a, b in zip(lo, hi, strict=True))
    centre = tuple((b + a) / 2 for a, b in zip(lo, hi, strict=True))
    return Shape("box", size, centre)  # type: ignore[arg-type]


def sphere(r: float, xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> Shape:
    """Sphere of radius r at xyz."""
    return Shape("sphere", (r,), xyz)


@dataclass
class Link:
    """A URDF link: a body (mass > 0, shapes) or a pure frame (no mass, no shapes)."""

    name: str
    mass: float = 0.0
    shapes: list[Shape] = field(default_factory=list)
    com: tuple[float, float, float] | None = None
    inertia: np.ndarray | None = None  # about the CoM, link axes

    def inertial(self) -> tuple[np.ndarray, np.ndarray]:
        """CoM and inertia tensor (about the CoM) of the link."""
        volumes = np.array([s.volume() for s in self.shapes])
        masses = self.mass * volumes / volumes.sum()
        centres = np.array([s.xyz for s in self.shapes])
        centroid = masses @ centres / self.mass
        com = np.array(self.com) if self.com is not None else centroid
        if self.inertia is not None:
            return com, np.asarray(self.inertia, dtype=float)
        tensor = np.zeros((3, 3))
        for shape, m, c in zip(self.shapes, masses, centres, strict=True):
            d = c - centroid
            tensor += m * (shape.unit_inertia() + (d @ d) * np.eye(3) - np.outer(d, d))
        return com, tensor


@dataclass
class Joint:
    """A URDF joint (revolute or fixed)."""

    name: str
    parent: str
    child: str
    xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)
    kind: str = "revolute"
    axis: tuple[float, float, float] = (0.0, 0.0, 1.0)
    lower: float = 0.0
    upper: float = 0.0
    effort: float = 0.0
    velocity: float = 0.0


class Robot:
    """A kinematic tree of links and joints that can be written as URDF and SRDF."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.links: dict[str, Link] = {}
        self.joints: list[Joint] = []
        self.comments: dict[str, str] = {}  # element name -> comment written before it
        self.header = ""

    def add_link(self, link: Link, comment: str = "") -> Link:
        """Add a link (names must be unique)."""
        if link.name in self.links:
            raise ValueError(f"duplicate link {link.name}")
        self.links[link.name] = link
        if comment:
            self.comments["link:" + link.name] = comment
        return link

    def add_joint(self, joint: Joint, comment: str = "") -> Joint:
        """Add a joint; both links must already exist."""
        if joint.parent not in self.links or joint.child not in self.links:
            raise ValueError(f"joint {joint.name} refers to unknown links")
        self.joints.append(joint)
        if comment:
            self.comments["joint:" + joint.name] = comment
        return joint

    # ------------------------------------------------------------------ URDF
    def urdf(self) -> str:
        """URDF text of the robot."""
        out = ['<?xml version="1.0"?>']
        if self.header:
            out.append("<!--")
            out.extend(self.header.rstrip("\n").split("\n"))
            out.append("-->")
        out.append(f'<robot name="{self.name}">')
        # links and joints interleaved in tree order for readability
        children: dict[str, list[Joint]] = {}
        for j in self.joints:
            children.setdefault(j.parent, []).append(j)
        child_links = {j.child for j in self.joints}
        roots = [n for n in self.links if n not in child_links]
        if len(roots) != 1:
            raise ValueError(f"robot {self.name} must have exactly one root, has {roots}")

        def emit(link_name: str) -> None:
            out.extend(self._link_xml(self.links[link_name]))
            for j in children.get(link_name, []):
                out.extend(self._joint_xml(j))
                emit(j.child)

        emit(roots[0])
        out.append("</robot>")
        return "\n".join(out) + "\n"

    def _link_xml(self, link: Link) -> list[str]:
        lines = []
        comment = self.comments.get("link:" + link.name)
        if comment:
            lines.append(f"  <!-- {comment} -->")
        if link.mass <= 0.0 and not link.shapes:
            lines.append(f'  <link name="{link.name}"/>')
            return lines
        lines.append(f'  <link name="{link.name}">')
        com, tensor = link.inertial()
        lines.append("    <inertial>")
        lines.append(f'      <origin xyz="{" ".join(fmt_short(v) for v in com)}" rpy="0 0 0"/>')
        lines.append(f'      <mass value="{fmt_short(link.mass)}"/>')
        t = tensor
        lines.append(
            f'      <inertia ixx="{fmt_short(t[0, 0])}" ixy="{fmt_short(t[0, 1])}" '
            f'ixz="{fmt_short(t[0, 2])}" iyy="{fmt_short(t[1, 1])}" '
            f'iyz="{fmt_short(t[1, 2])}" izz="{fmt_short(t[2, 2])}"/>'
        )
        lines.append("    </inertial>")
        for tag in ("visual", "collision"):
            for shape in link.shapes:
                lines.append(f"    <{tag}>")
                lines.append(
                    f'      <origin xyz="{" ".join(fmt_short(v) for v in shape.xyz)}" '
                    f'rpy="{" ".join(fmt(v) for v in shape.rpy)}"/>'
                )
                lines.append(f"      <geometry>{shape.xml()}</geometry>")
                lines.append(f"    </{tag}>")
        lines.append("  </link>")
        return lines

    def _joint_xml(self, j: Joint) -> list[str]:
        lines = []
        comment = self.comments.get("joint:" + j.name)
        if comment:
            lines.append(f"  <!-- {comment} -->")
        lines.append(f'  <joint name="{j.name}" type="{j.kind}">')
        lines.append(f'    <parent link="{j.parent}"/>')
        lines.append(f'    <child link="{j.child}"/>')
        lines.append(
            f'    <origin xyz="{" ".join(fmt(v) for v in j.xyz)}" '
            f'rpy="{" ".join(fmt(v) for v in j.rpy)}"/>'
        )
        if j.kind != "fixed":
            lines.append(f'    <axis xyz="{" ".join(fmt(v) for v in j.axis)}"/>')
            lines.append(
                f'    <limit lower="{fmt(j.lower)}" upper="{fmt(j.upper)}" '
                f'effort="{fmt(j.effort)}" velocity="{fmt(j.velocity)}"/>'
            )
        lines.append("  </joint>")
        return lines
