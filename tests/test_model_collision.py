"""Collision geometry of RobotModel: pair selection, exclusions, distances, witness points.

Distances are checked against closed-form sphere/box formulas and against ``coal.distance``
called directly on shapes built from the URDF, placed with poses from Pinocchio.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import coal
import numpy as np
import pinocchio as pin
import pytest

from stackik import CollisionGeometryNotFound, MalformedDescription, RobotModel
from stackik.errors import InvalidInput

# Three sibling sliders along x, so every pair is active (no two links are adjacent):
# sphere A (r 0.1) at x = qa, sphere B (r 0.2) at x = 1 + qb, box C (0.1 cube) at
# (qc, 0.5, 0).
SLIDERS_URDF = """
<robot name="sliders">
  <link name="base"/>
  <joint name="ja" type="prismatic"><parent link="base"/><child link="a"/>
    <axis xyz="1 0 0"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <link name="a"><collision><geometry><sphere radius="0.1"/></geometry></collision></link>
  <joint name="jb" type="prismatic"><parent link="base"/><child link="b"/><origin xyz="1 0 0"/>
    <axis xyz="1 0 0"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <link name="b"><collision><geometry><sphere radius="0.2"/></geometry></collision></link>
  <joint name="jc" type="prismatic"><parent link="base"/><child link="c"/><origin xyz="0 0.5 0"/>
    <axis xyz="1 0 0"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <link name="c"><collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision></link>
</robot>
"""

ARM_DEFAULT_PAIRS = [
    ("base_link_0", "link2_0"),
    ("base_link_0", "link2_1"),
    ("base_link_0", "link3_0"),
    ("base_link_0", "tool_0"),
    ("link1_0", "link3_0"),
    ("link1_0", "tool_0"),
]


@pytest.fixture
def sliders():
    return RobotModel.from_urdf_string(SLIDERS_URDF)


def _q_sliders(robot, qa, qb, qc):
    q = np.zeros(3)
    for name, value in (("ja", qa), ("jb", qb), ("jc", qc)):
        q[robot.get_joint_config_index(name)] = value
    return q


def _box_sphere(center, half, radius):
    outside = np.maximum(np.abs(center) - half, 0.0)
    inside = min(float(np.max(np.abs(center) - half)), 0.0)
    return float(np.linalg.norm(outside)) + inside - radius


# -- URDF shapes rebuilt independently -----------------------------------------------------------
def _urdf_shapes(urdf_text):
    """Per link, its collision shapes as (coal shape, kind, params, 4x4 origin in the link)."""
    out = {}
    for link in ET.fromstring(urdf_text).iter("link"):
        shapes = []
        for col in link.findall("collision"):
            g = col.find("geometry")[0]
            if g.tag == "box":
                size = np.array(g.get("size").split(), dtype=float)
                shape, params = coal.Box(*size), {"half": size / 2}
            elif g.tag == "sphere":
                r = float(g.get("radius"))
                shape, params = coal.Sphere(r), {"radius": r}
            elif g.tag == "cylinder":
                r, length = float(g.get("radius")), float(g.get("length"))
                shape, params = coal.Cylinder(r, length), {"radius": r, "half": length / 2}
            else:  # pragma: no cover - the fixtures use primitives only
                raise AssertionError(g.tag)
            shapes.append((shape, g.tag, params, _origin(col.find("origin"))))
        out[link.get("name")] = shapes
    return out


def _origin(elem):
    T = np.eye(4)
    if elem is not None:
        T[:3, :3] = pin.rpy.rpyToMatrix(*np.array(elem.get("rpy", "0 0 0").split(), dtype=float))
        T[:3, 3] = np.array(elem.get("xyz", "0 0 0").split(), dtype=float)
    return T


def _geom(name, urdf_shapes):
    link, _, k = name.rpartition("_")
    return link, urdf_shapes[link][int(k)]


def _surface_sdf(kind, params, T_world, p):
    """Signed distance from world point ``p`` to the shape's surface (0 on the surface)."""
    x = np.linalg.solve(T_world, np.append(p, 1.0))[:3]
    if kind == "sphere":
        return np.linalg.norm(x) - params["radius"]
    if kind == "box":
        d = np.abs(x) - params["half"]
    else:  # cylinder along z
        d = np.array([np.hypot(x[0], x[1]) - params["radius"], abs(x[2]) - params["half"]])
    return np.linalg.norm(np.maximum(d, 0.0)) + min(d.max(), 0.0)


def _world_shape_pose(robot_model, q, link, origin):
    data = robot_model.createData()
    pin.framesForwardKinematics(robot_model, data, q)
    return data.oMf[robot_model.getFrameId(link)].homogeneous @ origin


# -- pair selection ------------------------------------------------------------------------------
def test_default_pairs_skip_adjacent_links_and_same_body(arm):
    # Adjacent: base-link1, link1-link2, link2-link3. Same body: link2's two shapes, and
    # link3 with the tool (welded by a fixed joint).
    assert arm.get_collision_pair_names() == ARM_DEFAULT_PAIRS
    assert arm.get_collision_pair_links() == [
        (a.rpartition("_")[0], b.rpartition("_")[0]) for a, b in ARM_DEFAULT_PAIRS
    ]
    assert len(arm.collision_model.collisionPairs) == 6
    assert len(arm.collision_data.distanceResults) == 6
    assert arm.get_collision_geometry_names() == [
        "base_link_0",
        "link1_0",
        "link2_0",
        "link2_1",
        "link3_0",
        "tool_0",
    ]


def test_sibling_links_are_not_adjacent(sliders):
    assert sorted(sliders.get_collision_pair_links()) == [("a", "b"), ("a", "c"), ("b", "c")]


def test_get_collision_geometries(arm):
    geoms = {g["name"]: g for g in arm.get_collision_geometries()}
    assert set(geoms) == set(arm.get_collision_geometry_names())
    base = geoms["base_link_0"]
    assert (base["geometry_type"], base["parent_frame"], base["parent_joint"]) == (
        "box",
        "base_link",
        "universe",
    )
    np.testing.assert_allclose(base["params"]["size"], [0.2, 0.2, 0.1])
    np.testing.assert_allclose(base["placement"][:3, 3], [0, 0, 0.05])
    cyl = geoms["link1_0"]
    assert cyl["geometry_type"] == "cylinder" and cyl["parent_joint"] == "j1"
    assert cyl["params"] == pytest.approx({"radius": 0.04, "length": 0.3})
    assert geoms["link2_0"]["params"] == pytest.approx({"radius": 0.05})
    assert geoms["link2_1"]["params"] == pytest.approx({"radius": 0.02, "length": 0.15})
    np.testing.assert_allclose(
        geoms["link2_1"]["placement"][:3, :3], pin.rpy.rpyToMatrix(0, np.pi / 2, 0), atol=1e-12
    )
    # The tool's sphere is carried by j3 at the fixed joint's offset.
    tool = geoms["tool_0"]
    assert (tool["parent_frame"], tool["parent_joint"]) == ("tool", "j3")
    np.testing.assert_allclose(tool["placement"][:3, 3], [0.1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(
        tool["placement"][:3, :3], pin.rpy.rpyToMatrix(0, np.pi / 2, 0), atol=1e-12
    )


# -- distances -----------------------------------------------------------------------------------
def test_sphere_sphere_and_box_sphere_distances(sliders):
    for qa, qb, qc in ((0.0, 0.0, 0.0), (0.3, -0.2, 0.1), (-0.5, 0.8, -0.4), (0.2, 0.0, 0.2)):
        sliders.update_kinematics(_q_sliders(sliders, qa, qb, qc))
        d = dict(
            zip(
                sliders.get_collision_pair_links(),
                sliders.compute_collision_distances(),
                strict=True,
            )
        )
        pa, pb, pc = np.array([qa, 0, 0]), np.array([1 + qb, 0, 0]), np.array([qc, 0.5, 0])
        assert d[("a", "b")] == pytest.approx(np.linalg.norm(pb - pa) - 0.3, abs=1e-6)
        assert d[("a", "c")] == pytest.approx(_box_sphere(pa - pc, 0.05, 0.1), abs=1e-6)
        assert d[("b", "c")] == pytest.approx(_box_sphere(pb - pc, 0.05, 0.2), abs=1e-6)
        assert sliders.compute_min_collision_distance() == pytest.approx(min(d.values()))


def test_penetration_gives_negative_distance(sliders):
    # Sphere centres 0.2 apart with radii summing to 0.3: 0.1 deep.
    sliders.update_kinematics(_q_sliders(sliders, 0.5, -0.3, 1.5))
    d = dict(
        zip(sliders.get_collision_pair_links(), sliders.compute_collision_distances(), strict=True)
    )
    assert d[("a", "b")] == pytest.approx(-0.1, abs=1e-6)
    assert d[("a", "c")] > 0 and d[("b", "c")] > 0
    assert sliders.compute_min_collision_distance() == pytest.approx(-0.1, abs=1e-6)
    assert sliders.check_collision()


def test_box_sphere_penetration_depth():
    # A sphere (r 0.05) sliding into a box (0.1 cube) along x: centre 0.07 from the box
    # centre means it reaches 0.03 past the face at 0.05.
    urdf = SLIDERS_URDF.replace('<origin xyz="0 0.5 0"/>', '<origin xyz="0 0 0"/>').replace(
        '<sphere radius="0.1"/>', '<sphere radius="0.05"/>'
    )
    robot = RobotModel.from_urdf_string(urdf)
    robot.update_kinematics(_q_sliders(robot, 0.07, 1.0, 0.0))
    d = dict(
        zip(robot.get_collision_pair_links(), robot.compute_collision_distances(), strict=True)
    )
    assert d[("a", "c")] == pytest.approx(-0.03, abs=1e-5)
    assert robot.check_collision(0.0)


def test_check_collision_threshold(sliders):
    sliders.update_kinematics(_q_sliders(sliders, 0.0, 0.0, -1.5))
    d_min = sliders.compute_min_collision_distance()
    assert d_min == pytest.approx(0.7, abs=1e-6)  # spheres: 1.0 - 0.3
    assert not sliders.check_collision()
    assert not sliders.check_collision(d_min - 1e-3)
    assert sliders.check_collision(d_min + 1e-3)


@pytest.mark.parametrize("seed", range(6))
def test_distances_match_coal_on_urdf_shapes(arm, arm_text, rand_q, seed):
    shapes = _urdf_shapes(arm_text)
    q = rand_q(arm, seed, scale=2.0)
    arm.update_kinematics(q)
    distances = arm.compute_collision_distances()
    witnesses = arm.compute_collision_witness_points()
    assert witnesses.shape == (6, 2, 3)
    for (ga, gb), d, (wa, wb) in zip(
        arm.get_collision_pair_names(), distances, witnesses, strict=True
    ):
        (la, (sa, ka, pa, oa)), (lb, (sb, kb, pb, ob)) = _geom(ga, shapes), _geom(gb, shapes)
        Ta = _world_shape_pose(arm.model, q, la, oa)
        Tb = _world_shape_pose(arm.model, q, lb, ob)
        req, res = coal.DistanceRequest(), coal.DistanceResult()
        req.enable_signed_distance = True
        expected = coal.distance(
            sa,
            coal.Transform3s(Ta[:3, :3], Ta[:3, 3]),
            sb,
            coal.Transform3s(Tb[:3, :3], Tb[:3, 3]),
            req,
            res,
        )
        assert d == pytest.approx(expected, abs=1e-6)
        # Witness points lie on their shapes and are |d| apart.
        assert _surface_sdf(ka, pa, Ta, wa) == pytest.approx(0.0, abs=1e-5)
        assert _surface_sdf(kb, pb, Tb, wb) == pytest.approx(0.0, abs=1e-5)
        assert np.linalg.norm(wa - wb) == pytest.approx(abs(d), abs=1e-5)
    assert arm.compute_min_collision_distance() == pytest.approx(min(distances))


def test_witness_points_of_separated_spheres(sliders):
    sliders.update_kinematics(_q_sliders(sliders, 0.0, 0.0, -1.5))
    pairs = sliders.get_collision_pair_links()
    w = sliders.compute_collision_witness_points()[pairs.index(("a", "b"))]
    np.testing.assert_allclose(w, [[0.1, 0, 0], [0.8, 0, 0]], atol=1e-6)


def test_distances_follow_the_configuration(sliders):
    sliders.update_kinematics(_q_sliders(sliders, 0.0, 0.0, -1.5))
    d0 = sliders.compute_collision_distances()
    sliders.update_kinematics(_q_sliders(sliders, 0.1, 0.0, -1.5))
    d1 = sliders.compute_collision_distances()
    i = sliders.get_collision_pair_links().index(("a", "b"))
    assert d1[i] == pytest.approx(d0[i] - 0.1, abs=1e-6)


# -- exclusions ----------------------------------------------------------------------------------
def test_srdf_exclusions(arm_path, data_dir):
    robot = RobotModel(arm_path, srdf_path=data_dir / "arm.srdf")
    expected = [("base_link_0", "link3_0"), ("base_link_0", "tool_0"), ("link1_0", "link3_0")]
    assert robot.get_collision_pair_names() == expected
    other = RobotModel(arm_path)
    assert len(other.compute_collision_distances()) == 6
    # Two pairs for base_link-link2 (link2 has two shapes) and one for link1-tool.
    assert other.load_srdf(data_dir / "arm.srdf") == 3
    assert other.get_collision_pair_names() == expected
    assert len(other.compute_collision_distances()) == 3
    assert len(other.compute_collision_witness_points()) == 3
    assert other.load_srdf(data_dir / "arm.srdf") == 0


def test_srdf_link_without_geometry_is_skipped_and_an_unknown_link_is_an_error(tmp_path):
    urdf = """<robot name="r">
      <link name="base"><collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision></link>
      <link name="marker"/>
      <link name="mid"/>
      <link name="arm"><collision><geometry><sphere radius="0.05"/></geometry></collision></link>
      <joint name="fix" type="fixed"><parent link="base"/><child link="marker"/></joint>
      <joint name="j1" type="revolute"><parent link="base"/><child link="mid"/>
        <origin xyz="0 0 0.5"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <joint name="j2" type="revolute"><parent link="mid"/><child link="arm"/>
        <origin xyz="0 0 0.5"/><axis xyz="0 1 0"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
    </robot>"""
    ok = tmp_path / "ok.srdf"
    ok.write_text('<robot><disable_collisions link1="marker" link2="arm"/></robot>')
    robot = RobotModel.from_urdf_string(urdf, srdf_path=ok)  # marker has no geometry: skipped
    assert robot.get_collision_pair_names() == [("base_0", "arm_0")]
    bad = tmp_path / "bad.srdf"
    bad.write_text('<robot><disable_collisions link1="base" link2="armm"/></robot>')
    with pytest.raises(MalformedDescription, match="no link 'armm'") as err:
        RobotModel.from_urdf_string(urdf, srdf_path=bad)
    assert str(bad) in str(err.value)


def test_malformed_srdf(arm_path, tmp_path):
    bad = tmp_path / "bad.srdf"
    bad.write_text("<robot><disable_collisions link1='a'/></robot>")
    with pytest.raises(MalformedDescription, match="link1 and link2"):
        RobotModel(arm_path, srdf_path=bad)
    bad.write_text("<robot><disable_collisions link1='a' link2='b'></robot>")
    with pytest.raises(MalformedDescription, match="mismatched tag"):
        RobotModel(arm_path).load_srdf(bad)


def test_apply_collision_exclusions_by_link_and_geometry(arm):
    arm.update_kinematics(arm.random_configuration(0))
    full = dict(zip(arm.get_collision_pair_names(), arm.compute_collision_distances(), strict=True))
    arm.apply_collision_exclusions([("link3", "base_link")])
    assert ("base_link_0", "link3_0") not in arm.get_collision_pair_names()
    arm.apply_collision_exclusions([("link2_1", "base_link_0")])  # one of link2's two shapes
    names = arm.get_collision_pair_names()
    assert names == [
        ("base_link_0", "link2_0"),
        ("base_link_0", "tool_0"),
        ("link1_0", "link3_0"),
        ("link1_0", "tool_0"),
    ]
    # The remaining distances are those of the same pairs before.
    for pair, d in zip(names, arm.compute_collision_distances(), strict=True):
        assert d == pytest.approx(full[pair], abs=1e-12)
    arm.reset_collision_pairs()
    assert arm.get_collision_pair_names() == ARM_DEFAULT_PAIRS
    assert len(arm.compute_collision_distances()) == 6


def test_apply_collision_exclusions_unknown_name_changes_nothing(arm):
    arm.update_kinematics(arm.random_configuration(1))
    before = arm.compute_collision_distances()
    with pytest.raises(CollisionGeometryNotFound) as exc:
        arm.apply_collision_exclusions([("link3", "base_link"), ("link_2", "tool")])
    assert exc.value.name == "link_2"
    assert "link2" in exc.value.closest
    assert arm.get_collision_pair_names() == ARM_DEFAULT_PAIRS
    assert arm.compute_collision_distances() == before
    with pytest.raises(CollisionGeometryNotFound):
        arm.apply_collision_exclusions([("tool", "universe")])  # a frame without geometry
    with pytest.raises(InvalidInput):
        arm.apply_collision_exclusions([("link3", "base_link", "tool")])
    with pytest.raises(InvalidInput):
        arm.apply_collision_exclusions([("link3", 3)])
    assert arm.get_collision_pair_names() == ARM_DEFAULT_PAIRS


def test_exclusions_without_collision_geometry(arm_path, data_dir):
    robot = RobotModel(arm_path, load_collisions=False)
    assert robot.load_srdf(data_dir / "arm.srdf") == 0
    with pytest.raises(CollisionGeometryNotFound):
        robot.apply_collision_exclusions([("link1", "link3")])
    robot.apply_collision_exclusions([])
    robot.reset_collision_pairs()
    assert robot.compute_collision_witness_points().shape == (0, 2, 3)
    assert robot.get_collision_geometries() == []
