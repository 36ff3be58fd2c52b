"""Malformed robot descriptions: every one gives a typed error naming the file, the
element and what is wrong; none crashes the process, none loads silently wrong.

The corpus lives in ``tests/data/malformed``; each file differs from ``valid.urdf`` by
one defect.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from stackik import InvalidInput, MalformedDescription, RobotModel, StackIKError

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "malformed"
MESHES = ROOT / "tests" / "data" / "mypkg" / "meshes"

#: file -> fragments the error message must contain (beyond the file name).
URDF_CASES = {
    "sphere_radius_nan": ["link 'upper'", "<sphere> radius", "not finite"],
    "box_two_sizes": ["<box> size", "has 2 number(s), expected 3"],
    "cylinder_without_length": ["<cylinder> length", "is missing"],
    "misspelled_attribute": ["<sphere>", "unknown attribute(s) ['radus']"],
    "unknown_shape": ["unknown shape <cone>"],
    "mesh_without_filename": ["<mesh>", "filename"],
    "mass_nan": ["link 'upper'", "<mass> value", "not finite"],
    "mass_heavy": ["<mass> value", "'heavy' is not 1 number"],
    "mass_negative": ["<mass> value", "negative"],
    "inertia_nan": ["<inertia> ixx", "not finite"],
    "origin_two_numbers": ["<origin> xyz", "expected 3"],
    "lower_above_upper": ["joint 'shoulder'", "lower 2.0 > upper 1.5"],
    "zero_axis": ["joint 'shoulder'", "<axis>", "zero length"],
    "negative_velocity_limit": ["joint 'shoulder'", "velocity", "negative"],
    "unknown_joint_type": ["joint 'shoulder'", "type 'rotational'"],
    "duplicate_joint_names": ["duplicate joint names ['shoulder']"],
    "unknown_child_link": ["joint 'elbow'", "'forearm', which does not exist"],
    "two_parent_joints": ["joint 'extra'", "link 'lower' already has parent joint 'elbow'"],
    "mimic_of_unknown_joint": ["joint 'elbow'/<mimic>", "'wrist', which does not exist"],
    "two_root_links": ["exactly one root link", "floating_part"],
    "not_utf8": ["not UTF-8", "0xe9"],
}


@pytest.mark.parametrize("name", sorted(URDF_CASES))
def test_malformed_urdf_gives_a_typed_error_naming_the_problem(name):
    path = CORPUS / f"{name}.urdf"
    with pytest.raises(MalformedDescription) as err:
        RobotModel(path)
    message = str(err.value)
    assert str(path) in message and err.value.path == str(path)
    for fragment in URDF_CASES[name]:
        assert fragment in message, (fragment, message)


def test_the_corpus_base_is_valid():
    robot = RobotModel(CORPUS / "valid.urdf")
    assert robot.nq == 2 and len(robot.get_collision_geometry_names()) == 3
    assert robot.get_total_mass() == pytest.approx(1.0)  # the base's mass is the world's


def test_malformed_srdf_entries():
    urdf = CORPUS / "valid.urdf"
    with pytest.raises(MalformedDescription, match="no link 'upperr'"):
        RobotModel(urdf, srdf_path=CORPUS / "unknown_link.srdf")
    with pytest.raises(MalformedDescription, match="link1 and link2"):
        RobotModel(urdf, srdf_path=CORPUS / "pair_without_link2.srdf")


def test_malformed_xacro_output_is_checked_like_a_urdf():
    path = CORPUS / "radius_arg.urdf.xacro"
    assert RobotModel.from_xacro(path).has_collision_geometry()
    with pytest.raises(MalformedDescription, match="<sphere> radius"):
        RobotModel.from_xacro(path, radius="nan")
    with pytest.raises(MalformedDescription, match="must be > 0"):
        RobotModel.from_xacro(path, radius=-0.1)


def test_duplicate_actuated_joint_names():
    with pytest.raises(InvalidInput, match=r"\['shoulder'\] more than once"):
        RobotModel(CORPUS / "valid.urdf", ["shoulder", "shoulder"])


def _mesh_urdf(mesh: Path) -> str:
    return f"""<robot name="flat">
      <link name="base"><collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision></link>
      <link name="mid"/>
      <link name="plate"><collision><origin xyz="0 0 0.3"/>
        <geometry><mesh filename="{mesh}"/></geometry></collision></link>
      <joint name="j1" type="revolute"><parent link="base"/><child link="mid"/>
        <origin xyz="0 0 0.2"/><axis xyz="0 0 1"/>
        <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
      <joint name="j2" type="revolute"><parent link="mid"/><child link="plate"/>
        <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
    </robot>"""


@pytest.mark.parametrize("mesh", ["plate.obj", "triangle.obj"])
def test_coplanar_mesh_does_not_crash_the_process(mesh):
    """coal's convex hull aborts on coplanar points; the process must survive (subprocess)."""
    code = (
        "import numpy as np, stackik\n"
        f"r = stackik.RobotModel.from_urdf_string({_mesh_urdf(MESHES / mesh)!r})\n"
        "r.update_kinematics(np.array([0.0, 0.0]))\n"
        "print(len(r.compute_collision_distances()))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "python"), "PATH": ""},
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "1"


def test_flat_mesh_becomes_a_thin_solid_at_the_right_distance():
    """The plate at z = 0.5 (flat, 1 mm thick) and the base box (top at z = 0.05)."""
    from stackik.model.collision import DEGENERATE_MESH_THICKNESS

    robot = RobotModel.from_urdf_string(_mesh_urdf(MESHES / "plate.obj"))
    robot.update_kinematics(np.zeros(2))
    (d,) = robot.compute_collision_distances()
    assert d == pytest.approx(0.5 - 0.05 - DEGENERATE_MESH_THICKNESS / 2, abs=1e-9)
    plate = robot.collision_model.geometryObjects[1].geometry
    z = np.array(plate.points())[:, 2]
    assert z.max() - z.min() == pytest.approx(DEGENERATE_MESH_THICKNESS)


def test_every_loading_error_is_a_stackik_error(tmp_path):
    """A sample of broken inputs beyond the corpus: all typed, none a bare exception."""
    cases = [
        "<robot name='r'><link name='a'/><joint name='j' type='revolute'/></robot>",
        "<robot name='r'></robot>",
        "<robot name='r'><link/></robot>",
        "<not_a_robot/>",
        "<robot name='r'><link name='a'><collision><geometry/></collision></link></robot>",
        "",
    ]
    for text in cases:
        with pytest.raises(StackIKError):
            RobotModel.from_urdf_string(text)
    (tmp_path / "empty.urdf").write_bytes(b"")
    with pytest.raises(StackIKError):
        RobotModel(tmp_path / "empty.urdf")
    assert isinstance(pin.SE3.Identity(), pin.SE3)  # pinocchio still usable afterwards
