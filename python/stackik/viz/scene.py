"""The robot and its overlays as viser scene nodes (viser is passed in, never imported here).

:class:`RobotScene` places one group node per moving joint (``/robot/<joint>``) and hangs
each visual and collision geometry under its joint at its fixed placement, so a new
configuration moves only the joint nodes. :class:`OverlayScene` draws the collision-pair
segments (a label on the nearest segment to each obstacle or attached object), the
centre of mass and the support polygon.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pinocchio as pin

from ..model import Kinematics, RobotModel
from ..spatial import r2q
from .overlays import PairSegments, inside_polygon, support_outline
from .shapes import GeometrySpec, Primitive, geometry_specs

_COM_RGB = (40, 40, 40)
_INSIDE_RGB = (60, 180, 75)
_OUTSIDE_RGB = (220, 30, 30)


def safe_name(name: str) -> str:
    """A scene-tree path component (no slashes, no spaces)."""
    return "".join(c if c.isalnum() or c in "_-." else "_" for c in name) or "_"


def wxyz(rotation: np.ndarray) -> np.ndarray:
    """Unit quaternion ``[w, x, y, z]`` (viser's order) of a rotation matrix."""
    return r2q(rotation)


def add_primitive(scene: Any, name: str, part: Primitive, spec: GeometrySpec, visible: bool) -> Any:
    """Add one part of a geometry as a scene node ``name`` (its pose in the parent node)."""
    if part.kind == "line":
        assert part.vertices is not None
        return scene.add_line_segments(
            name,
            part.vertices.reshape(1, 2, 3).astype(np.float32),
            spec.color,
            thickness=3.0,
            thickness_units="screen",
            visible=visible,
        )
    common = {
        "color": spec.color,
        "opacity": spec.opacity,
        "position": part.offset,
        "wxyz": part.wxyz,
    }
    if part.kind == "box":
        return scene.add_box(name, dimensions=part.size, visible=visible, **common)
    if part.kind == "sphere":
        return scene.add_icosphere(name, radius=part.size[0], visible=visible, **common)
    if part.kind == "ellipsoid":
        return scene.add_icosphere(name, radius=1.0, scale=part.size, visible=visible, **common)
    if part.kind == "cylinder":
        return scene.add_cylinder(
            name, radius=part.size[0], height=part.size[1], visible=visible, **common
        )
    assert part.vertices is not None and part.faces is not None
    return scene.add_mesh_simple(
        name,
        part.vertices.astype(np.float32),
        part.faces,
        flat_shading=True,
        side="double",
        visible=visible,
        **common,
    )


class RobotScene:
    """A robot's visual and collision geometry in a viser scene.

    Args:
        scene: The viser ``SceneApi`` (``server.scene``).
        robot: The robot.
        show_collision: Show the collision geometry at the start (the visual geometry
            always starts visible).
        root: Scene-tree path of the robot.
    """

    def __init__(
        self, scene: Any, robot: RobotModel, show_collision: bool = False, root: str = "/robot"
    ) -> None:
        self.robot = robot
        self.root = root
        model = robot.model
        visual, skipped_visual = geometry_specs(robot.visual_model)
        collision, skipped_collision = geometry_specs(robot.collision_model, collision=True)
        #: Geometry that the viewer cannot draw (planes, height fields, ...).
        self.skipped = skipped_visual + skipped_collision
        joints = sorted({s.joint for s in visual + collision} - {0})
        #: Scene node of each moving joint that carries geometry, by Pinocchio index.
        self.joint_nodes = {
            j: scene.add_frame(f"{root}/{safe_name(model.names[j])}", show_axes=False)
            for j in joints
        }
        self.visual_nodes = self._add(scene, visual, "visual", True)
        self.collision_nodes = self._add(scene, collision, "collision", show_collision)

    def _parent(self, joint: int) -> str:
        if joint == 0:
            return f"{self.root}/world"
        return f"{self.root}/{safe_name(self.robot.model.names[joint])}"

    def _add(
        self, scene: Any, specs: list[GeometrySpec], kind: str, visible: bool
    ) -> dict[str, list[Any]]:
        nodes: dict[str, list[Any]] = {}
        for spec in specs:
            path = f"{self._parent(spec.joint)}/{kind}/{safe_name(spec.name)}"
            group = scene.add_frame(
                path,
                show_axes=False,
                position=spec.placement.translation,
                wxyz=wxyz(spec.placement.rotation),
                visible=visible,
            )
            parts = [
                add_primitive(scene, f"{path}/{k}", part, spec, True)
                for k, part in enumerate(spec.parts)
            ]
            nodes[path] = [group, *parts]
        return nodes

    @property
    def node_names(self) -> list[str]:
        """Scene paths of the visual geometry nodes."""
        return list(self.visual_nodes)

    def set_visible(self, visual: bool, collision: bool) -> None:
        """Show or hide the visual and the collision geometry."""
        for nodes, flag in ((self.visual_nodes, visual), (self.collision_nodes, collision)):
            for group, *_ in nodes.values():
                if group.visible != flag:
                    group.visible = flag

    def draw(self, kinematics: Kinematics) -> None:
        """Move every joint node to its placement in ``kinematics`` (updated by the caller)."""
        oMi = kinematics.data.oMi
        for j, node in self.joint_nodes.items():
            M: pin.SE3 = oMi[j]
            node.position = M.translation
            node.wxyz = wxyz(M.rotation)


class OverlayScene:
    """Collision-pair segments, the CoM and the support polygon as scene nodes.

    Args:
        scene: The viser ``SceneApi``.
        root: Scene-tree path of the overlays.
    """

    def __init__(self, scene: Any, root: str = "/overlays") -> None:
        self.scene = scene
        self.root = root
        self.pairs: Any = None
        #: The label on the nearest segment to each world object, by its name.
        self.labels: dict[str, Any] = {}
        self._label_count = 0
        self.com = scene.add_icosphere(f"{root}/com", radius=0.03, color=_COM_RGB, visible=False)
        self.com_drop: Any = None
        self.polygon: Any = None

    def draw_pairs(self, segments: PairSegments | None) -> None:
        """Show the closest-point segments (None or no segment: hide them)."""
        if segments is None or not len(segments.points):
            if self.pairs is not None:
                self.pairs.visible = False
            self._draw_labels(None)
            return
        colors = np.repeat(segments.colors[:, None, :], 2, axis=1).astype(np.uint8)
        self.pairs = self.scene.add_line_segments(
            f"{self.root}/pairs",
            segments.points.astype(np.float32),
            colors,
            thickness=6.0,
            thickness_units="screen",
        )
        self._draw_labels(segments)

    def _draw_labels(self, segments: PairSegments | None) -> None:
        """Label the nearest segment to each obstacle (or attached object) with its name."""
        nearest: dict[str, int] = {}
        if segments is not None:
            d = segments.distances
            for k, label in enumerate(segments.labels):
                if label and (label not in nearest or d[k] < d[nearest[label]]):
                    nearest[label] = k
        for label in [n for n in self.labels if n not in nearest]:
            self.labels.pop(label).remove()
        for label, k in nearest.items():
            assert segments is not None
            text = f"{label}: {1e3 * segments.distances[k]:.0f} mm"
            position = segments.points[k, 1]
            node = self.labels.get(label)
            if node is None:
                self._label_count += 1
                self.labels[label] = self.scene.add_label(
                    f"{self.root}/labels/{self._label_count}",
                    text,
                    position=position,
                    font_screen_scale=0.8,
                    anchor="bottom-left",
                )
            else:
                node.text = text
                node.position = position

    def draw_com(self, com: np.ndarray | None, polygon: np.ndarray | None, ground_z: float) -> None:
        """Show the CoM, its vertical drop and the support polygon (None: hide).

        Args:
            com: CoM position (3,) [m], or None to hide the CoM overlays.
            polygon: Support polygon vertices (N x 3, world) [m], or None.
            ground_z: Height of the drop line's foot when there is no polygon [m].
        """
        if com is None:
            for node in (self.com, self.com_drop, self.polygon):
                if node is not None:
                    node.visible = False
            return
        inside = polygon is None or inside_polygon(com[:2], polygon[:, :2])
        color = _INSIDE_RGB if inside else _OUTSIDE_RGB
        self.com.position = com
        self.com.visible = True
        foot_z = float(np.mean(polygon[:, 2])) if polygon is not None else ground_z
        drop = np.array([[com, [com[0], com[1], foot_z]]], dtype=np.float32)
        self.com_drop = self.scene.add_line_segments(
            f"{self.root}/com_drop", drop, color, thickness=2.0, thickness_units="screen"
        )
        if polygon is not None:
            self.polygon = self.scene.add_line_segments(
                f"{self.root}/support",
                support_outline(polygon).astype(np.float32),
                color,
                thickness=3.0,
                thickness_units="screen",
            )
