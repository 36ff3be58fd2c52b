"""Small URDF texts for tests: links with one collision primitive, joints with limits."""

from __future__ import annotations

INERTIA = (
    '<inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" '
    'iyz="0"/></inertial>'
)


def link(name: str, geometry: str = "", xyz: str = "0 0 0") -> str:
    """A link with unit inertia and, when ``geometry`` (URDF geometry XML) is given, a collision."""
    col = f'<collision><origin xyz="{xyz}"/><geometry>{geometry}</geometry></collision>'
    return f'<link name="{name}">{INERTIA}{col if geometry else ""}</link>'


def sphere(radius: float) -> str:
    """URDF geometry XML of a sphere [m]."""
    return f'<sphere radius="{radius}"/>'


def joint(
    name: str,
    kind: str,
    parent: str,
    child: str,
    xyz: str,
    limits: tuple[float, float],
    axis: str = "0 0 1",
) -> str:
    """A joint at ``xyz`` in its parent, about (or along) ``axis``, with ``limits`` [rad or m]."""
    lo, hi = limits
    return (
        f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{xyz}"/><axis xyz="{axis}"/><limit lower="{lo}" upper="{hi}" '
        'effort="10" velocity="1"/></joint>'
    )
