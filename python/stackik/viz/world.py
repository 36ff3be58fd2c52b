"""The robot's world in the viewer: obstacles, their gizmos and attached objects (viser passed in).

:class:`WorldScene` follows one :class:`~stackik.model.world.World` by polling its
snapshot (``world.state``, one atomic read, never a lock) at the viewer's refresh rate:

- a new layout revision adds the nodes of new obstacles and attached objects and
  removes those of the ones gone (an obstacle replaced under the same name is redrawn);
- a new state version moves the obstacle nodes and their gizmos to the published poses.

Each obstacle hangs under ``/world/obstacles/<name>`` (a group node at its world pose,
its parts below it, from :func:`~stackik.viz.shapes.obstacle_primitives`) and gets a
transform gizmo ``/world/gizmos/<name>`` at its anchor (the bounding-box centre of a
mesh, a plane's point nearest its origin). A drag of the gizmo (or a pose set on it
through viser's API) becomes ``world.set_obstacle_pose``: every solver on the world
avoids the obstacle from its next step. Attached objects hang under
``/world/attached/<name>`` and are placed on their link at each drawn configuration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pinocchio as pin

from ..errors import StackIKError
from ..model import Kinematics
from ..model.world import AttachedObject, Obstacle, World, WorldLayout, WorldState
from ..spatial import q2r
from .scene import add_primitive, safe_name, wxyz
from .shapes import GeometrySpec, Primitive, anchor_point, obstacle_primitives

#: Colour of obstacles, of planes and half-spaces, and of attached objects [0-255].
OBSTACLE_RGB = (176, 142, 102)
PLANE_RGB = (150, 160, 175)
ATTACHED_RGB = (70, 165, 190)
#: Opacity of obstacles, of plane patches and of attached objects.
OBSTACLE_OPACITY = 0.85
PLANE_OPACITY = 0.35
ATTACHED_OPACITY = 0.8
#: Size of the obstacle gizmos [m].
GIZMO_SCALE = 0.2


@dataclass
class _Drawn:
    """The scene nodes of one obstacle or attached object."""

    item: Obstacle | AttachedObject
    nodes: list[Any]
    anchor: np.ndarray = field(default_factory=lambda: np.zeros(3))
    gizmo: Any = None
    #: The gizmo pose (position, wxyz) last written by us or last applied to the world.
    sent: tuple[np.ndarray, np.ndarray] | None = None
    #: The world pose (rotation, translation) last drawn.
    pose: tuple[np.ndarray, np.ndarray] | None = None


def _spec(item: Obstacle | AttachedObject, parts: tuple[Primitive, ...]) -> GeometrySpec:
    flat = type(item.geometry).__name__ in ("Plane", "Halfspace")
    if isinstance(item, AttachedObject):
        color, opacity = ATTACHED_RGB, ATTACHED_OPACITY
    elif flat:
        color, opacity = PLANE_RGB, PLANE_OPACITY
    else:
        color, opacity = OBSTACLE_RGB, OBSTACLE_OPACITY
    return GeometrySpec(item.name, -1, pin.SE3.Identity(), color, opacity, parts)


def _gizmo_pose(handle: Any) -> tuple[np.ndarray, np.ndarray]:
    return np.array(handle.position, dtype=float), np.array(handle.wxyz, dtype=float)


def _same(a: tuple[np.ndarray, np.ndarray] | None, b: tuple[np.ndarray, np.ndarray]) -> bool:
    return a is not None and np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def _close(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> bool:
    """The same pose up to rounding (a quaternion's sign included)."""
    dq = min(np.abs(a[1] - b[1]).max(), np.abs(a[1] + b[1]).max())
    return bool(np.abs(a[0] - b[0]).max() < 1e-12 and dq < 1e-12)


class WorldScene:
    """A world's obstacles (with gizmos) and attached objects as viser scene nodes.

    Args:
        scene: The viser ``SceneApi`` (``server.scene``).
        on_drag: Called with an obstacle's name when the user drags its gizmo (from
            viser's callback thread); the viewer then calls :meth:`apply_drag`.
        root: Scene-tree path of the world.
    """

    def __init__(self, scene: Any, on_drag: Callable[[str], None], root: str = "/world") -> None:
        self.scene = scene
        self.root = root
        self._on_drag = on_drag
        self._obstacles: dict[str, _Drawn] = {}
        self._attached: dict[str, _Drawn] = {}
        self._paths: set[str] = set()
        self._revision: int | None = None
        self._version: int | None = None
        self._world: World | None = None
        self.show_obstacles = True
        self.show_gizmos = True
        #: Set when the attached objects must be placed again (a new layout).
        self.attached_stale = True

    # -- what is drawn ---------------------------------------------------------------------------
    @property
    def obstacle_nodes(self) -> dict[str, list[Any]]:
        """Per obstacle: its group node (at its world pose), then its parts."""
        return {name: list(d.nodes) for name, d in self._obstacles.items()}

    @property
    def controls(self) -> dict[str, Any]:
        """The gizmo of each obstacle (viser ``TransformControlsHandle``), by name."""
        return {name: d.gizmo for name, d in self._obstacles.items()}

    @property
    def attached_nodes(self) -> dict[str, list[Any]]:
        """Per attached object: its group node (on its link), then its parts."""
        return {name: list(d.nodes) for name, d in self._attached.items()}

    @property
    def version(self) -> int | None:
        """The world state version drawn last (None before the first sync)."""
        return self._version

    # -- following the world -------------------------------------------------------------------
    def sync(self, world: World) -> WorldState:
        """Bring the nodes up to the world's current snapshot; return the snapshot drawn.

        Gizmos moved since the last call (a pose set through viser's API) are applied
        to the world first, so the user's drag wins over an older published pose.
        """
        if world is not self._world:  # another world: start over
            self.clear()
            self._world = world
        self._apply_pending()  # what it publishes, the read below sees
        state = world.state
        if state.layout.revision != self._revision:
            self._rebuild(state.layout)
            self._revision = state.layout.revision
            self._version = None
            self.attached_stale = True
        if state.version != self._version:
            self._place(state)
            self._version = state.version
        return state

    def apply_drag(self, name: str) -> bool:
        """Publish the pose of obstacle ``name``'s gizmo to the world if it was moved.

        Returns:
            Whether a pose was published (False: unchanged gizmo, or the obstacle is gone).
        """
        drawn = self._obstacles.get(name)
        world = self._world
        if drawn is None or drawn.gizmo is None or world is None:
            return False
        current = _gizmo_pose(drawn.gizmo)
        if _same(drawn.sent, current):
            return False
        position, quat = current
        try:
            R = q2r(quat)
            world.set_obstacle_pose(name, pin.SE3(R, position - R @ drawn.anchor))
        except StackIKError:  # removed by another thread meanwhile, or a degenerate pose
            drawn.pose = None  # the next sync puts the gizmo back on the obstacle
            self._version = None
            return False
        finally:
            drawn.sent = current
        return True

    def _apply_pending(self) -> None:
        for name in list(self._obstacles):
            self.apply_drag(name)

    def set_visible(self, obstacles: bool, gizmos: bool) -> None:
        """Show or hide the obstacles and attached objects, and the obstacle gizmos."""
        self.show_obstacles, self.show_gizmos = bool(obstacles), bool(gizmos)
        for drawn in (*self._obstacles.values(), *self._attached.values()):
            if drawn.nodes[0].visible != self.show_obstacles:
                drawn.nodes[0].visible = self.show_obstacles
            if drawn.gizmo is not None and drawn.gizmo.visible != self.show_gizmos:
                drawn.gizmo.visible = self.show_gizmos

    def draw_attached(self, kinematics: Kinematics) -> None:
        """Place every attached object on its link at the configuration of ``kinematics``."""
        for drawn in self._attached.values():
            item = drawn.item
            assert isinstance(item, AttachedObject)
            T = kinematics.frame_pose(item.link) * pin.SE3(item.placement)
            group = drawn.nodes[0]
            group.position = T.translation
            group.wxyz = wxyz(T.rotation)
        self.attached_stale = False

    def clear(self) -> None:
        """Remove every node (a new world, or the viewer closing)."""
        for drawn in (*self._obstacles.values(), *self._attached.values()):
            self._remove(drawn)
        self._obstacles.clear()
        self._attached.clear()
        self._paths.clear()
        self._revision = self._version = None

    # -- building ------------------------------------------------------------------------------
    def _path(self, folder: str, name: str) -> str:
        base = f"{self.root}/{folder}/{safe_name(name)}"
        path, k = base, 1
        while path in self._paths:  # two names with the same safe spelling
            path, k = f"{base}-{k}", k + 1
        self._paths.add(path)
        return path

    def _nodes(self, path: str, item: Obstacle | AttachedObject) -> list[Any]:
        spec = _spec(item, obstacle_primitives(item.geometry))
        group = self.scene.add_frame(path, show_axes=False, visible=self.show_obstacles)
        parts = [
            add_primitive(self.scene, f"{path}/{k}", part, spec, True)
            for k, part in enumerate(spec.parts)
        ]
        return [group, *parts]

    def _remove(self, drawn: _Drawn) -> None:
        for node in (drawn.nodes[0], drawn.gizmo):  # removing a group removes its parts
            if node is not None:
                node.remove()

    def _rebuild(self, layout: WorldLayout) -> None:
        """Nodes for the objects of a new layout (kept when the same object remains)."""
        self._obstacles = self._diff(self._obstacles, layout.obstacles, "obstacles")
        self._attached = self._diff(self._attached, layout.attached, "attached")

    def _diff(
        self,
        drawn: dict[str, _Drawn],
        items: tuple[Obstacle, ...] | tuple[AttachedObject, ...],
        folder: str,
    ) -> dict[str, _Drawn]:
        current = {item.name: item for item in items}
        out: dict[str, _Drawn] = {}
        for name, d in drawn.items():
            if current.get(name) is d.item:
                out[name] = d
            else:
                self._remove(d)
                self._paths.discard(d.nodes[0].name)
                if d.gizmo is not None:
                    self._paths.discard(d.gizmo.name)
        for name, item in current.items():
            if name not in out:
                out[name] = self._add(item, folder)
        return out

    def _add(self, item: Obstacle | AttachedObject, folder: str) -> _Drawn:
        drawn = _Drawn(item, self._nodes(self._path(folder, item.name), item))
        if isinstance(item, Obstacle):
            drawn.anchor = anchor_point(item.geometry)
            gizmo = self.scene.add_transform_controls(
                self._path("gizmos", item.name),
                scale=GIZMO_SCALE,
                visible=self.show_gizmos,
            )
            name = item.name
            gizmo.on_update(lambda _event: self._on_drag(name))
            drawn.gizmo = gizmo
        return drawn

    def _place(self, state: WorldState) -> None:
        """Move the obstacle nodes (and their gizmos, unless the user moved them) to ``state``."""
        slots = state.layout.slots
        for name, drawn in self._obstacles.items():
            k = slots[name]
            R, p = state.rotations[k], state.translations[k]
            if drawn.pose is not None and _same(drawn.pose, (R, p)):
                continue
            drawn.pose = (R, p)
            group = drawn.nodes[0]
            group.position = p
            group.wxyz = wxyz(R)
            gizmo = drawn.gizmo
            current = _gizmo_pose(gizmo)
            if drawn.sent is not None and not _same(drawn.sent, current):
                continue  # the user moved it since: applied at the next sync
            target = (p + R @ drawn.anchor, wxyz(R))
            if not _close(current, target):  # not the echo of a drag just applied
                gizmo.position, gizmo.wxyz = target
            drawn.sent = _gizmo_pose(gizmo)
