"""COLLADA meshes in their declared unit: obstacles and a description's links.

A ``.dae`` file may say its lengths are millimetres or inches (``<asset><unit
meter="0.001">``); assimp, which coal loads meshes with, ignores that, so a part drawn in
millimetres would load 1000 times too large. stackik reads the unit, as RViz and Gazebo
do. The loaded vertices are checked against the tetrahedron written in metres, and a
distance coal measures to the loaded shape against the closed-form distance to its face.
"""

from __future__ import annotations

from pathlib import Path

import coal
import numpy as np
import pytest

from stackik import RobotModel
from stackik.errors import InvalidInput, MalformedDescription
from test_malformed import _mesh_urdf

#: The tetrahedron [m]: the corner at the origin and one 0.2 m along each axis.
TET = np.array([[0.0, 0.0, 0.0], [0.2, 0.0, 0.0], [0.0, 0.2, 0.0], [0.0, 0.0, 0.2]])


def write_dae(path: Path, vertices: np.ndarray, meter: str | None) -> Path:
    """A COLLADA file of the tetrahedron ``vertices`` (file units), unit ``meter``."""
    unit = "" if meter is None else f'<unit name="u" meter="{meter}"/>'
    floats = " ".join(f"{v:.17g}" for v in np.asarray(vertices).ravel())
    path.write_text(
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">\n'
        f"<asset>{unit}<up_axis>Z_UP</up_axis></asset>\n"
        '<library_geometries><geometry id="t"><mesh>\n'
        f'<source id="p"><float_array id="pa" count="12">{floats}</float_array>\n'
        '<technique_common><accessor source="#pa" count="4" stride="3">'
        '<param name="X" type="float"/><param name="Y" type="float"/>'
        '<param name="Z" type="float"/></accessor></technique_common></source>\n'
        '<vertices id="v"><input semantic="POSITION" source="#p"/></vertices>\n'
        '<triangles count="4"><input semantic="VERTEX" source="#v" offset="0"/>'
        "<p>0 2 1 0 1 3 0 3 2 1 2 3</p></triangles>\n"
        "</mesh></geometry></library_geometries>\n"
        '<library_visual_scenes><visual_scene id="s"><node id="n">'
        '<instance_geometry url="#t"/></node></visual_scene></library_visual_scenes>\n'
        '<scene><instance_visual_scene url="#s"/></scene>\n'
        "</COLLADA>\n"
    )
    return path


def same_points(a: np.ndarray, b: np.ndarray) -> bool:
    """The same set of points (any order), to 0.1 µm (assimp reads single precision)."""
    key = lambda p: np.lexsort(np.round(p, 6).T[::-1])  # noqa: E731
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and np.allclose(a[key(a)], b[key(b)], rtol=0, atol=1e-7)


UNITS = {"metre (no unit)": None, "metre": "1", "millimetre": "0.001", "inch": "0.0254"}


@pytest.mark.parametrize("unit", sorted(UNITS))
def test_an_obstacle_mesh_loads_at_its_size_in_metres(tmp_path, unit):
    meter = UNITS[unit]
    scale_of_file = 1.0 if meter is None else float(meter)
    dae = write_dae(tmp_path / "part.dae", TET / scale_of_file, meter)
    robot = RobotModel(Path(__file__).resolve().parents[1] / "robots" / "panda" / "panda.urdf")
    robot.add_obstacle_mesh("hull", dae, np.eye(4))
    robot.add_obstacle_mesh("exact", dae, np.eye(4), convex=False)
    robot.add_obstacle_mesh("twice", dae, np.eye(4), scale=2.0)
    hull = robot.world.get_obstacle("hull").geometry
    assert same_points(np.asarray(hull.points()), TET)
    exact = robot.world.get_obstacle("exact").geometry
    assert same_points(np.asarray(exact.vertices()), TET)
    twice = robot.world.get_obstacle("twice").geometry
    assert same_points(np.asarray(twice.points()), 2 * TET)
    # coal's distance from a ball at (0.2, 0.2, 0.2) to the face x + y + z = 0.2
    req, res = coal.DistanceRequest(), coal.DistanceResult()
    ball = coal.Transform3s(np.eye(3), np.array([0.2, 0.2, 0.2]))
    d = coal.distance(coal.Sphere(0.01), ball, hull, coal.Transform3s(), req, res)
    assert d == pytest.approx((0.6 - 0.2) / np.sqrt(3) - 0.01, abs=1e-7)  # (single precision)


def _urdf(mesh: Path, scale: str) -> str:
    """A base box (top at z = 0.05) and a link 'plate' carrying ``mesh`` 0.5 m up."""
    return _mesh_urdf(mesh).replace(f'filename="{mesh}"', f'filename="{mesh}" scale="{scale}"')


@pytest.mark.parametrize("exact", [False, True])
def test_a_links_mesh_in_millimetres_loads_at_its_size_in_metres(tmp_path, exact):
    """The tetrahedron drawn in millimetres, 0.1 m above the link's origin, scaled 2 in z
    by the description: its lowest corner at 0.5 + 2 * 0.1 = 0.7 m, 0.65 m above the box."""
    lifted = TET + np.array([0.0, 0.0, 0.1])
    dae = write_dae(tmp_path / "arm.dae", lifted * 1000.0, "0.001")
    robot = RobotModel.from_urdf_string(_urdf(dae, "1 1 2"), exact_collision_meshes=exact)
    robot.update_kinematics(np.zeros(2))
    (d,) = robot.compute_collision_distances()
    assert d == pytest.approx(0.7 - 0.05, abs=1e-7)
    obj = robot.collision_model.geometryObjects[1]
    assert np.allclose(obj.meshScale, [0.001, 0.001, 0.002])
    points = np.asarray(obj.geometry.vertices() if exact else obj.geometry.points())
    assert same_points(points, lifted * np.array([1.0, 1.0, 2.0]))


@pytest.mark.parametrize("meter", ["abc", "-1", "0", "inf"])
def test_a_unit_that_is_not_a_length_is_named(tmp_path, meter):
    dae = write_dae(tmp_path / "bad.dae", TET, meter)
    robot = RobotModel(Path(__file__).resolve().parents[1] / "robots" / "panda" / "panda.urdf")
    with pytest.raises(InvalidInput, match=rf"bad\.dae.*<unit meter='{meter}'> is not a positive"):
        robot.add_obstacle_mesh("bad", dae, np.eye(4))
    assert robot.get_obstacle_names() == []
    with pytest.raises(MalformedDescription, match=r"link 'plate' <collision> mesh .*bad\.dae"):
        RobotModel.from_urdf_string(_urdf(dae, "1 1 1"))
