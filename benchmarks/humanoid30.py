"""A generated 30-joint humanoid with about 900 active self-collision pairs (benchmarks).

The issue's target "on any 30-joint humanoid with about 900 active self-collision
pairs, a step's p99 must be <= 500 us" is checked on this description, shared by
``bench_velocity.py`` (problem G) and ``bench_teleop.py``.

Kinematics (x forward, y left, z up at the zero configuration; fixed pelvis): a 2-dof
torso (yaw, pitch), a 2-dof neck (yaw, pitch), two 7-dof arms (shoulder pitch, roll,
yaw, elbow, wrist yaw, pitch, roll) and two 6-dof legs (hip yaw, roll, pitch, knee,
ankle pitch, roll): 30 revolute joints. Collision geometry: cylinders, spheres and
boxes on every body, joint housings included; each hand carries a palm and four
fingers (fixed to the wrist), each foot a sole and a toe.

Pairs: every pair of geometries minus those on the same body or on adjacent bodies
(parent/child through a joint; stackik's default), minus the pairs closer than
``CLOSE`` at the start configuration (they could never keep any margin). The SRDF
written next to the URDF disables the latter, so every library loads the same set.

Run ``python benchmarks/humanoid30.py`` to print the counts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: Pairs closer than this at the start configuration are disabled [m].
CLOSE = 0.03
FINGERS = 4
PHALANGES = 1


def _fmt(v: tuple[float, ...]) -> str:
    return " ".join(f"{x:.4g}" for x in v)


class _Urdf:
    """A tiny URDF writer: links with collision geometry, revolute and fixed joints."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.joints: list[str] = []

    def link(self, name: str, geoms: list[tuple[str, str, tuple, tuple]] = ()) -> None:
        """``geoms``: (shape, size attributes, xyz, rpy) per collision element."""
        body = [
            f'<link name="{name}">',
            '  <inertial><mass value="1.0"/>'
            '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>',
        ]
        for shape, attrs, xyz, rpy in geoms:
            body.append(
                f'  <collision><origin xyz="{_fmt(xyz)}" rpy="{_fmt(rpy)}"/>'
                f"<geometry><{shape} {attrs}/></geometry></collision>"
            )
        body.append("</link>")
        self.parts.append("\n".join(body))

    def joint(
        self, name: str, parent: str, child: str, xyz: tuple, axis: str | None, lim: float = 2.0
    ) -> None:
        kind = "revolute" if axis else "fixed"
        extra = (
            f'<axis xyz="{axis}"/><limit lower="{-lim}" upper="{lim}" effort="50" velocity="3"/>'
            if axis
            else ""
        )
        self.parts.append(
            f'<joint name="{name}" type="{kind}"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{_fmt(xyz)}" rpy="0 0 0"/>{extra}</joint>'
        )
        if axis:
            self.joints.append(name)

    def text(self) -> str:
        return (
            '<?xml version="1.0"?>\n<robot name="humanoid30">\n'
            + "\n".join(self.parts)
            + "\n</robot>\n"
        )


def _cylinder(r: float, z0: float, z1: float, x: float = 0.0, y: float = 0.0) -> tuple:
    """A cylinder along z from ``z0`` to ``z1`` (segment end points) [m]."""
    return ("cylinder", f'radius="{r}" length="{abs(z1 - z0)}"', (x, y, 0.5 * (z0 + z1)), (0, 0, 0))


def _sphere(r: float, xyz: tuple) -> tuple:
    return ("sphere", f'radius="{r}"', xyz, (0, 0, 0))


def _box(size: tuple, xyz: tuple) -> tuple:
    return ("box", f'size="{_fmt(size)}"', xyz, (0, 0, 0))


def _arm(u: _Urdf, side: str, sign: float) -> None:
    p = f"{side}_"
    u.joint(
        p + "shoulder_pitch", "chest", p + "shoulder_pitch_link", (0, 0.25 * sign, 0.30), "0 1 0"
    )
    u.link(p + "shoulder_pitch_link", [_sphere(0.05, (0, 0.02 * sign, 0))])
    u.joint(
        p + "shoulder_roll",
        p + "shoulder_pitch_link",
        p + "shoulder_roll_link",
        (0, 0.04 * sign, 0),
        "1 0 0",
    )
    u.link(p + "shoulder_roll_link", [_sphere(0.04, (0, 0.02 * sign, -0.04))])
    u.joint(
        p + "shoulder_yaw",
        p + "shoulder_roll_link",
        p + "upper_arm",
        (0, 0.02 * sign, -0.08),
        "0 0 1",
    )
    u.link(p + "upper_arm", [_cylinder(0.045, -0.04, -0.18), _sphere(0.04, (0, 0, -0.0))])
    u.joint(p + "elbow", p + "upper_arm", p + "forearm", (0, 0, -0.24), "0 1 0")
    u.link(p + "forearm", [_cylinder(0.04, -0.02, -0.16)])
    u.joint(p + "wrist_yaw", p + "forearm", p + "wrist_yaw_link", (0, 0, -0.22), "0 0 1")
    u.link(p + "wrist_yaw_link", [_sphere(0.035, (0, 0, 0))])
    u.joint(p + "wrist_pitch", p + "wrist_yaw_link", p + "wrist_pitch_link", (0, 0, -0.05), "0 1 0")
    u.link(p + "wrist_pitch_link", [_sphere(0.03, (0, 0, 0))])
    u.joint(p + "wrist_roll", p + "wrist_pitch_link", p + "hand", (0, 0, -0.04), "1 0 0")
    u.link(p + "hand", [_box((0.03, 0.08, 0.08), (0, 0, -0.06))])
    u.joint(p + "hand_frame", p + "hand", p + "palm", (0, 0, -0.06), None)
    u.link(p + "palm")
    for f in range(FINGERS):
        y = (-0.03 + 0.015 * f) * sign
        parent = p + "hand"
        z = -0.115
        for k in range(PHALANGES):
            name = f"{p}finger{f}_{k}"
            u.joint(name + "_fixed", parent, name, (0, y if k == 0 else 0, z), None)
            u.link(name, [_cylinder(0.007, -0.005, -0.025)])
            parent, z = name, -0.035


def _leg(u: _Urdf, side: str, sign: float) -> None:
    p = f"{side}_"
    u.joint(p + "hip_yaw", "pelvis", p + "hip_yaw_link", (0, 0.11 * sign, -0.12), "0 0 1", 1.0)
    u.link(p + "hip_yaw_link", [_sphere(0.045, (0, 0, 0.0))])
    u.joint(p + "hip_roll", p + "hip_yaw_link", p + "hip_roll_link", (0, 0, -0.07), "1 0 0", 1.0)
    u.link(p + "hip_roll_link", [_sphere(0.04, (0, 0, 0))])
    u.joint(p + "hip_pitch", p + "hip_roll_link", p + "thigh", (0, 0, -0.06), "0 1 0", 1.5)
    u.link(p + "thigh", [_cylinder(0.06, -0.04, -0.30)])
    u.joint(p + "knee", p + "thigh", p + "shin", (0, 0, -0.40), "0 1 0", 2.0)
    u.link(p + "shin", [_cylinder(0.05, -0.03, -0.32)])
    u.joint(p + "ankle_pitch", p + "shin", p + "ankle_link", (0, 0, -0.40), "0 1 0", 0.8)
    u.link(p + "ankle_link", [_sphere(0.035, (0, 0, 0))])
    u.joint(p + "ankle_roll", p + "ankle_link", p + "foot", (0, 0, -0.04), "1 0 0", 0.5)
    u.link(p + "foot", [_box((0.2, 0.09, 0.03), (0.03, 0, -0.05))])
    u.joint(p + "toe_fixed", p + "foot", p + "toe", (0.16, 0, -0.05), None)
    u.link(p + "toe", [_cylinder(0.015, -0.035, 0.035)])


def urdf() -> str:
    """The humanoid's URDF text."""
    u = _Urdf()
    u.link("pelvis", [_box((0.18, 0.3, 0.1), (0, 0, 0))])
    u.joint("torso_yaw", "pelvis", "torso_yaw_link", (0, 0, 0.1), "0 0 1", 1.0)
    u.link("torso_yaw_link", [_cylinder(0.05, 0.0, 0.01)])
    u.joint("torso_pitch", "torso_yaw_link", "chest", (0, 0, 0.08), "0 1 0", 0.6)
    u.link("chest", [_box((0.18, 0.32, 0.26), (0, 0, 0.22)), _cylinder(0.06, 0.05, 0.06)])
    u.joint("neck_yaw", "chest", "neck", (0, 0, 0.4), "0 0 1", 1.2)
    u.link("neck", [_cylinder(0.035, 0.0, 0.04)])
    u.joint("neck_pitch", "neck", "head", (0, 0, 0.08), "0 1 0", 0.6)
    u.link("head", [_sphere(0.1, (0, 0, 0.12)), _box((0.04, 0.1, 0.04), (0.09, 0, 0.1))])
    for side, sign in (("left", 1.0), ("right", -1.0)):
        _arm(u, side, sign)
        _leg(u, side, sign)
    assert len(u.joints) == 30
    return u.text()


def start_configuration(robot: object) -> np.ndarray:
    """Arms forward and bent, hands in front of the chest; legs slightly bent."""
    q = np.zeros(30)
    values = {"shoulder_pitch": -0.6, "elbow": -1.2, "hip_pitch": -0.3, "knee": 0.6}
    for side, sign in (("left", 1.0), ("right", -1.0)):
        for joint, v in values.items():
            q[robot.get_joint_config_index(f"{side}_{joint}")] = v
        q[robot.get_joint_config_index(f"{side}_shoulder_roll")] = 0.2 * sign
        q[robot.get_joint_config_index(f"{side}_ankle_pitch")] = -0.3
    return q


def write(folder: Path) -> tuple[Path, Path, int]:
    """Write ``humanoid30.urdf`` and ``humanoid30.srdf`` into ``folder``.

    Returns both paths and the number of pairs the SRDF disables (close at the start).
    """
    import stackik

    folder = Path(folder)
    text = urdf()
    path = folder / "humanoid30.urdf"
    path.write_text(text)
    robot = stackik.RobotModel(path, load_visuals=False)
    robot.update_kinematics(start_configuration(robot))
    links = robot.collision.pair_links()  # type: ignore[union-attr]
    d = np.asarray(robot.compute_collision_distances())
    close = sorted({links[k] for k in np.flatnonzero(d < CLOSE)})
    lines = [f'  <disable_collisions link1="{a}" link2="{b}" reason="Close"/>' for a, b in close]
    srdf = folder / "humanoid30.srdf"
    srdf.write_text(
        '<?xml version="1.0"?>\n<robot name="humanoid30">\n' + "\n".join(lines) + "\n</robot>\n"
    )
    return path, srdf, len(close)


def main() -> None:
    import tempfile

    import stackik

    with tempfile.TemporaryDirectory() as tmp:
        path, srdf, close = write(Path(tmp))
        robot = stackik.RobotModel(path, srdf_path=srdf, load_visuals=False)
        all_pairs = len(stackik.RobotModel(path, load_visuals=False).collision.pair_names())  # type: ignore[union-attr]
        geoms = robot.get_collision_geometries()
        pairs = robot.collision.pair_names()  # type: ignore[union-attr]
        robot.update_kinematics(start_configuration(robot))
        print(
            f"humanoid30: {robot.nv} joints, {len(geoms)} geometries, {all_pairs} pairs off the "
            f"same or adjacent bodies, {close} closer than {CLOSE} m at the start disabled, "
            f"{len(pairs)} active; smallest distance {robot.compute_min_collision_distance():.4f} m"
        )


if __name__ == "__main__":
    main()
