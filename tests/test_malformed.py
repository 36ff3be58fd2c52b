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


# -- absurd magnitudes, non-physical inertia, messages urdfdom gives without a reason --------
#: file -> fragments the error message must contain (beyond the file name).
MAGNITUDE_CASES = {
    "box_huge": ["link 'base'", "<box> size", "'1e300 0.2 0.1' is beyond +-1e+06"],
    "origin_huge": ["joint 'elbow'/<origin> xyz", "'0 0 1e300' is beyond +-1e+06"],
    "mass_huge": ["link 'base'/<inertial>/<mass> value", "'1e300' is beyond"],
    "limits_huge": ["joint 'shoulder'/<limit> lower", "'-1e300' is beyond", "1e+16 for no limit"],
    "inertia_negative": ["link 'base'/<inertial>/<inertia>", "not positive semi-definite"],
    "inertia_not_definite": ["link 'base'/<inertial>/<inertia>", "not positive semi-definite"],
    "inertia_triangle": ["link 'base'/<inertial>/<inertia>", "violate the triangle inequality"],
    "damping_nan": ["joint 'shoulder'/<dynamics> damping", "'nan' is not finite"],
    "calibration_abc": ["joint 'shoulder'/<calibration> rising", "'abc' is not 1 number"],
    "robot_without_name": ["<robot>: has no name"],
}


@pytest.mark.parametrize("name", sorted(MAGNITUDE_CASES))
def test_absurd_or_unparsable_values_are_named_before_urdfdom_sees_them(name):
    path = CORPUS / f"{name}.urdf"
    with pytest.raises(MalformedDescription) as err:
        RobotModel(path)
    message = str(err.value)
    assert err.value.path == str(path)
    for fragment in MAGNITUDE_CASES[name]:
        assert fragment in message, (fragment, message)
    assert "does not contain a valid URDF model" not in message  # urdfdom's only words


def test_the_magnitude_rule_is_the_targets_rule():
    from stackik._validate import MAX_MAGNITUDE

    text = (CORPUS / "valid.urdf").read_text()
    at_limit = text.replace('<origin xyz="0 0 0.3"/>', f'<origin xyz="0 0 {MAX_MAGNITUDE:g}"/>')
    assert RobotModel.from_urdf_string(at_limit).nq == 2
    beyond = text.replace(
        '<origin xyz="0 0 0.3"/>', f'<origin xyz="0 0 {MAX_MAGNITUDE * 1.01:g}"/>'
    )
    with pytest.raises(MalformedDescription, match="beyond"):
        RobotModel.from_urdf_string(beyond)


def test_sdformat_no_limit_reads_as_unbounded():
    text = (CORPUS / "valid.urdf").read_text()
    free = text.replace('lower="-1.5" upper="1.5"', 'lower="-1e16" upper="1e16"')
    robot = RobotModel.from_urdf_string(free)
    lower, upper = robot.get_joint_limits()
    assert lower[0] == -np.inf and upper[0] == np.inf


@pytest.mark.parametrize("name", ["inertia_negative", "inertia_triangle", "inertia_not_definite"])
def test_strict_false_loads_a_non_physical_inertia_as_written(name):
    robot = RobotModel(CORPUS / f"{name}.urdf", strict=False)
    assert robot.nq == 2


def test_physical_inertias_pass_within_rounding():
    """A thin rod (I1 ~ 0, I2 = I3) and moments rounded by a CAD export are fine."""
    text = (CORPUS / "valid.urdf").read_text()
    base = '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>'
    for inertia in (
        '<inertia ixx="0" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/>',
        '<inertia ixx="0.0100000001" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.02"/>',
        '<inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/>',
        '<inertia ixx="-5e-20" ixy="0" ixz="0" iyy="-5e-20" iyz="0" izz="0"/>',
    ):
        assert RobotModel.from_urdf_string(text.replace(base, inertia)).nq == 2


# -- SRDF checks ---------------------------------------------------------------------------------
SRDF_CASES = {
    "self_pair": ["<disable_collisions link1='upper' link2='upper'>", "with itself"],
    "virtual_joint_missing_child": ["<virtual_joint name='world_joint'>", "no link 'base_link'"],
    "group_unknown_link": ["<group name='arm'>/<link>", "no link 'uper'", "closest: upper"],
    "group_unknown_joint": ["<group name='arm'>/<joint>", "no joint 'wrist'"],
    "group_unknown_chain": ["<group name='arm'>/<chain> tip_link", "no link 'hand'"],
    "passive_unknown_joint": ["<passive_joint name='caster'>", "no joint 'caster'"],
    "root_not_robot": ["<srdf>", "root element of an SRDF must be <robot>"],
}


@pytest.mark.parametrize("name", sorted(SRDF_CASES))
def test_malformed_srdf_names_the_element(name):
    path = CORPUS / f"{name}.srdf"
    with pytest.raises(MalformedDescription) as err:
        RobotModel(CORPUS / "valid.urdf", srdf_path=path)
    assert err.value.path == str(path)
    for fragment in SRDF_CASES[name]:
        assert fragment in str(err.value), (fragment, str(err.value))


def test_a_valid_srdf_with_groups_and_a_virtual_joint_loads():
    robot = RobotModel(CORPUS / "valid.urdf", srdf_path=CORPUS / "semantic_valid.srdf")
    assert ("base", "lower") not in robot.get_collision_pair_links()
    assert robot.load_srdf(CORPUS / "semantic_valid.srdf") == 0  # already excluded


def test_strict_false_ignores_srdf_groups_but_not_collision_pairs():
    urdf = CORPUS / "valid.urdf"
    for name in ("group_unknown_joint", "passive_unknown_joint", "virtual_joint_missing_child"):
        RobotModel(urdf, srdf_path=CORPUS / f"{name}.srdf", strict=False)
    for name in ("self_pair", "root_not_robot", "unknown_link"):
        with pytest.raises(MalformedDescription):
            RobotModel(urdf, srdf_path=CORPUS / f"{name}.srdf", strict=False)


def test_a_refused_srdf_changes_nothing():
    robot = RobotModel(CORPUS / "valid.urdf")
    before = robot.get_collision_pair_names()
    bad = CORPUS / "group_unknown_joint.srdf"
    with pytest.raises(MalformedDescription):
        robot.load_srdf(bad)
    assert robot.get_collision_pair_names() == before


# -- mesh files ----------------------------------------------------------------------------------
def _stl(triangles) -> bytes:
    import struct

    data = b"\0" * 80 + struct.pack("<I", len(triangles))
    for tri in triangles:
        data += struct.pack("<3f", 0, 0, 0)
        data += b"".join(struct.pack("<3f", *corner) for corner in tri) + b"\0\0"
    return data


TETRA = [
    [(0, 0, 0), (0.1, 0, 0), (0, 0.1, 0)],
    [(0, 0, 0), (0, 0, 0.1), (0.1, 0, 0)],
    [(0, 0, 0), (0, 0.1, 0), (0, 0, 0.1)],
    [(0.1, 0, 0), (0, 0, 0.1), (0, 0.1, 0)],
]


def _with_mesh(path: Path) -> str:
    text = (CORPUS / "valid.urdf").read_text()
    return text.replace('<cylinder radius="0.03" length="0.3"/>', f'<mesh filename="{path}"/>')


MESH_CASES = {
    "empty.stl": (b"", "the file is empty"),
    "no_triangles.stl": (_stl([]), "it has no triangles"),
    "no_facets_ascii.stl": (b"solid t\nendsolid t\n", "it has no triangles"),
    "collapsed.stl": (
        _stl([[(0, 0, 0), (0, 0, 0), (0.1, 0, 0)], [(1, 1, 1)] * 3]),
        "all 2 of its triangles have coincident corners",
    ),
    "nan_vertex.stl": (
        _stl([[(0, 0, 0), (float("nan"), 0, 0), (0, 0.1, 0)], *TETRA]),
        "vertex 1 is (nan, 0.0, 0.0): not finite",
    ),
    "inf_vertex_ascii.stl": (
        b"solid t\nfacet normal 0 0 0\nouter loop\nvertex 0 0 0\nvertex inf 0 0\nvertex 0 1 0\n"
        b"endloop\nendfacet\nendsolid t\n",
        "vertex 1 is (inf, 0.0, 0.0): not finite",
    ),
    "word_vertex_ascii.stl": (
        b"solid t\nfacet normal 0 0 0\nouter loop\nvertex 0 0 abc\nvertex 1 0 0\nvertex 0 1 0\n"
        b"endloop\nendfacet\nendsolid t\n",
        "vertex '0 0 abc' is not three numbers",
    ),
}


@pytest.mark.parametrize("name", sorted(MESH_CASES))
@pytest.mark.parametrize("exact", [False, True])
def test_a_bad_stl_names_the_file_the_link_and_the_fault(tmp_path, name, exact):
    data, fault = MESH_CASES[name]
    mesh = tmp_path / name
    mesh.write_bytes(data)
    with pytest.raises(MalformedDescription) as err:
        RobotModel.from_urdf_string(_with_mesh(mesh), exact_collision_meshes=exact)
    message = str(err.value)
    assert f"link 'lower' <collision> #0 mesh {str(mesh)!r}" in message
    assert fault in message, message
    assert ".cpp" not in message and "mesh directory" not in message


def test_a_visual_mesh_is_checked_too(tmp_path):
    mesh = tmp_path / "nan.stl"
    mesh.write_bytes(MESH_CASES["nan_vertex.stl"][0])
    text = (
        (CORPUS / "valid.urdf")
        .read_text()
        .replace(
            '<link name="lower">',
            f'<link name="lower"><visual><geometry><mesh filename="{mesh}"/></geometry></visual>',
        )
    )
    with pytest.raises(MalformedDescription, match=r"link 'lower' <visual> #0 mesh .*not finite"):
        RobotModel.from_urdf_string(text)
    assert RobotModel.from_urdf_string(text, load_visuals=False).nq == 2


def test_a_scaled_mesh_obeys_the_magnitude_rule(tmp_path):
    mesh = tmp_path / "tetra.stl"
    mesh.write_bytes(_stl([[(0, 0, 0), (10, 0, 0), (0, 0.1, 0)], *TETRA]))
    text = _with_mesh(mesh)
    assert RobotModel.from_urdf_string(text).nq == 2
    big = text.replace(f'<mesh filename="{mesh}"/>', f'<mesh filename="{mesh}" scale="1e5 1 1"/>')
    assert RobotModel.from_urdf_string(big).nq == 2  # 10 * 1e5 = 1e6 m: the limit itself
    huge = text.replace(f'<mesh filename="{mesh}"/>', f'<mesh filename="{mesh}" scale="1e6 1 1"/>')
    with pytest.raises(MalformedDescription, match=r"vertex 1 is \(10000000\.0, 0\.0, 0\.0\)"):
        RobotModel.from_urdf_string(huge)


def test_a_huge_vertex_is_refused_instead_of_crashing_the_hull(tmp_path):
    """A vertex at 1e30 m ended the process in coal's convex hull (run in a child)."""
    mesh = tmp_path / "huge.stl"
    mesh.write_bytes(_stl([[(0, 0, 0), (1e30, 0, 0), (0, 0.1, 0)], *TETRA]))
    code = (
        "import stackik\n"
        "try:\n"
        f"    stackik.RobotModel.from_urdf_string({_with_mesh(mesh)!r})\n"
        "except stackik.MalformedDescription as exc:\n"
        "    print(exc)\n"
    )
    import stackik  # the child runs the code this process tests

    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(Path(stackik.__file__).parents[1]), "PATH": ""},
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"mesh {str(mesh)!r}: vertex 1 is (1.0000000150474662e+30, 0.0, 0.0)" in out.stdout
    assert "beyond +-1e+06 m" in out.stdout


def test_a_mesh_coal_cannot_read_is_named_without_cpp_text(tmp_path):
    """A truncated binary STL (not one our reader knows): coal's reason, our element."""
    mesh = tmp_path / "truncated.stl"
    mesh.write_bytes(_stl(TETRA)[:120])
    with pytest.raises(MalformedDescription) as err:
        RobotModel.from_urdf_string(_with_mesh(mesh))
    message = str(err.value)
    assert f"link 'lower' <collision> #0 mesh {str(mesh)!r}" in message
    assert "the mesh loader cannot read it" in message and "the file exists" in message
    assert ".cpp" not in message and "mesh directory" not in message


def test_a_non_stl_mesh_with_a_nan_vertex_is_caught_after_loading(tmp_path):
    mesh = tmp_path / "nan.obj"
    mesh.write_text(
        "v 0 0 0\nv nan 0 0\nv 0 0.1 0\nv 0 0 0.1\nf 1 2 3\nf 1 3 4\nf 1 2 4\nf 2 3 4\n"
    )
    with pytest.raises(MalformedDescription) as err:
        RobotModel.from_urdf_string(_with_mesh(mesh))
    message = str(err.value)
    assert f"link 'lower' <collision> mesh {str(mesh)!r}" in message
    assert "not finite" in message


def _prism(n: int, apex: bool) -> list:
    """Triangles of a finely tessellated cylinder (radius 0.1, height 0.3) or cone."""
    a = np.linspace(0, 2 * np.pi, n, endpoint=False)
    ring = [(0.1 * np.cos(t), 0.1 * np.sin(t)) for t in a]
    low = [(x, y, 0.0) for x, y in ring]
    top = [(0.0, 0.0, 0.3)] * n if apex else [(x, y, 0.3) for x, y in ring]
    tris = []
    for i in range(n):
        j = (i + 1) % n
        tris.append([low[i], low[j], top[j]])
        if not apex:
            tris.append([low[i], top[j], top[i]])
    for i in range(1, n - 1):  # caps as fans
        tris.append([low[0], low[i + 1], low[i]])
        if not apex:
            tris.append([top[0], top[i], top[i + 1]])
    return tris


def test_a_finely_tessellated_cylinder_gets_its_hull(tmp_path):
    """qhull's triangulated caps gave a vertex more neighbours than coal stores
    ("Too many neighbors", a bare RuntimeError at load); the hull is then built from
    joggled input, within 1e-9 m of the mesh."""
    triangles = _prism(600, apex=False)
    mesh = tmp_path / "cylinder.stl"
    mesh.write_bytes(_stl(triangles))
    robot = RobotModel.from_urdf_string(_with_mesh(mesh))
    hull = robot.collision_model.geometryObjects[2].geometry
    points = np.array(hull.points())
    corners = np.unique(np.array(triangles, dtype=np.float32).reshape(-1, 3), axis=0)
    assert hull.num_points == len(corners) == 1200
    nearest = np.linalg.norm(points[:, None, :] - corners[None, :, :], axis=2).min(axis=1)
    assert nearest.max() < 1e-9


def test_a_mesh_coal_cannot_hull_is_named(tmp_path):
    """A cone's apex has 600 neighbours in any hull: refused, naming the mesh."""
    mesh = tmp_path / "cone.stl"
    mesh.write_bytes(_stl(_prism(600, apex=True)))
    with pytest.raises(MalformedDescription) as err:
        RobotModel.from_urdf_string(_with_mesh(mesh))
    assert f"(mesh {str(mesh)!r})" in str(err.value)
    assert "the convex hull failed: Too many neighbors" in str(err.value)
    assert RobotModel.from_urdf_string(_with_mesh(mesh), exact_collision_meshes=True).nq == 2
