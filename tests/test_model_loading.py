"""Loading robots: URDF files and strings, XACRO, floating base, reduced models, meshes."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from stackik import JointNotFound, MeshNotFound, RobotModel
from stackik.errors import InvalidInput

MESH_URDF = Path(__file__).resolve().parent / "data" / "mypkg" / "urdf" / "mesh_robot.urdf"
CUBE_OBJ = Path(__file__).resolve().parent / "data" / "mypkg" / "meshes" / "cube.obj"
CUBE_URI = "package://mypkg/meshes/cube.obj"


@pytest.fixture(autouse=True)
def _no_ros_package_path(monkeypatch):
    # The mesh tests decide where packages are; an inherited ROS_PACKAGE_PATH must not help.
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)


# -- URDF files and strings ---------------------------------------------------------------------
def test_load_from_path_matches_pinocchio(arm_path):
    robot = RobotModel(arm_path)
    ref = pin.buildModelFromUrdf(str(arm_path))
    assert (robot.nq, robot.nv) == (ref.nq, ref.nv) == (4, 3)
    assert robot.get_joint_names() == ["j1", "j2", "j3"]
    assert set(robot.get_frame_names()) == {f.name for f in ref.frames}
    assert robot.urdf_path == str(arm_path)
    assert not robot.is_floating_base
    assert robot.model.name == "arm"


def test_load_from_string_equals_load_from_path(arm_path, arm_text, rand_q):
    a = RobotModel(arm_path)
    b = RobotModel.from_urdf_string(arm_text)
    assert b.urdf_path == ""
    assert (b.nq, b.nv) == (a.nq, a.nv)
    assert b.get_collision_pair_names() == a.get_collision_pair_names()
    for seed in range(3):
        q = rand_q(a, seed)
        a.update_kinematics(q)
        b.update_kinematics(q)
        for frame in ("link2", "tool"):
            np.testing.assert_allclose(
                b.get_frame_pose(frame).homogeneous, a.get_frame_pose(frame).homogeneous, atol=1e-14
            )


def test_load_from_path_accepts_str_and_pathlike(arm_path):
    assert RobotModel(str(arm_path)).nq == RobotModel(arm_path).nq == 4


# -- XACRO -------------------------------------------------------------------------------------
def _planar_tip(link_length, q):
    a, b = q
    return link_length * np.array([np.cos(a) + np.cos(a + b), np.sin(a) + np.sin(a + b), 0.0])


@pytest.mark.parametrize("link_length", [0.3, 0.5, 1.25])
def test_from_xacro_link_length_argument_changes_fk(data_dir, link_length):
    robot = RobotModel.from_xacro(data_dir / "planar.urdf.xacro", link_length=link_length)
    assert robot.urdf_path == str(data_dir / "planar.urdf.xacro")
    for q in ([0.0, 0.0], [0.4, -1.1], [2.0, 0.7]):
        robot.update_kinematics(q)
        np.testing.assert_allclose(
            robot.get_frame_pose("tip").translation, _planar_tip(link_length, q), atol=1e-12
        )


def test_from_xacro_default_argument(data_dir):
    robot = RobotModel.from_xacro(data_dir / "planar.urdf.xacro")
    robot.update_kinematics([0.0, 0.0])
    np.testing.assert_allclose(robot.get_frame_pose("tip").translation, [0.6, 0, 0], atol=1e-12)


def test_from_xacro_string_argument_and_options(data_dir):
    robot = RobotModel.from_xacro(
        data_dir / "planar.urdf.xacro",
        True,
        actuated_joint_names=["left_link2_joint"],
        prefix="left_",
        link_length=0.5,
    )
    assert robot.has_frame("left_tip") and not robot.has_frame("tip")
    assert robot.is_floating_base
    assert (robot.nq, robot.nv) == (7 + 1, 6 + 1)
    q = robot.neutral_configuration()
    q[7] = 0.5
    robot.update_kinematics(q)
    np.testing.assert_allclose(
        robot.get_frame_pose("left_tip").translation, _planar_tip(0.5, [0.0, 0.5]), atol=1e-12
    )


# -- floating base and reduced models ----------------------------------------------------------
def test_floating_base_adds_free_flyer(arm_path, rand_q):
    fixed = RobotModel(arm_path)
    robot = RobotModel(arm_path, floating_base=True)
    assert robot.is_floating_base
    assert (robot.nq, robot.nv) == (fixed.nq + 7, fixed.nv + 6)
    assert robot.get_joint_names()[0] == "root_joint"
    assert robot.get_joint_config_size("root_joint") == 7
    assert robot.get_joint_velocity_size("root_joint") == 6
    # The base pose is q[:7] = [x, y, z, qx, qy, qz, qw]: every frame moves rigidly with it.
    qj = rand_q(fixed, 4)
    fixed.update_kinematics(qj)
    base = pin.SE3(pin.Quaternion(0.2, -0.4, 0.1, 0.8).normalized().matrix(), np.array([1, 2, 3.0]))
    q = np.concatenate([pin.SE3ToXYZQUAT(base), qj])
    robot.update_kinematics(q)
    for frame in ("base_link", "link1", "tool"):
        expected = base * fixed.get_frame_pose(frame)
        np.testing.assert_allclose(
            robot.get_frame_pose(frame).homogeneous, expected.homogeneous, atol=1e-12
        )


def test_positional_true_means_floating_base(arm_path):
    robot = RobotModel(arm_path, True)
    assert robot.is_floating_base
    assert (robot.nq, robot.nv) == (11, 9)
    assert not RobotModel(arm_path, False).is_floating_base
    # The same overload for URDF text.
    robot = RobotModel.from_urdf_string(arm_path.read_text(), True)
    assert robot.is_floating_base and (robot.nq, robot.nv) == (11, 9)


def test_reduced_model_locks_other_joints_at_neutral(arm_path, rand_q):
    full = RobotModel(arm_path)
    robot = RobotModel(arm_path, ["j1", "j3"])
    assert (robot.nq, robot.nv) == (2, 2)
    assert robot.get_joint_names() == ["j1", "j3"]
    assert robot.controlled_joint_names == ["j1", "j3"]
    rng = np.random.default_rng(0)
    for _ in range(4):
        q1, q3 = rng.uniform(-2, 2), rng.uniform(0, 0.2)
        robot.update_kinematics([q1, q3])
        q_full = full.neutral_configuration()  # j2 at neutral: cos = 1, sin = 0
        q_full[full.get_joint_config_index("j1")] = q1
        q_full[full.get_joint_config_index("j3")] = q3
        full.update_kinematics(q_full)
        for frame in ("link1", "link2", "link3", "tool"):
            np.testing.assert_allclose(
                robot.get_frame_pose(frame).homogeneous,
                full.get_frame_pose(frame).homogeneous,
                atol=1e-12,
            )
        # Collision geometry is carried into the reduced model. Locking j2 welds link2 to
        # link1, so link2's pairs with the base become adjacent and drop out; the pairs
        # that remain have the full model's distances.
        reduced = dict(
            zip(robot.get_collision_pair_names(), robot.compute_collision_distances(), strict=True)
        )
        whole = dict(
            zip(full.get_collision_pair_names(), full.compute_collision_distances(), strict=True)
        )
        assert set(reduced) == {("base_link_0", "link3_0"), ("base_link_0", "tool_0")}
        for pair, d in reduced.items():
            assert d == pytest.approx(whole[pair], abs=1e-9)


def test_reduced_model_keeps_limits_of_kept_joints(arm_path):
    robot = RobotModel(arm_path, ["j1", "j3"])
    lo, hi = robot.get_joint_limits()
    np.testing.assert_array_equal(lo, [-2.5, 0.0])
    np.testing.assert_array_equal(hi, [2.5, 0.2])
    np.testing.assert_array_equal(robot.get_velocity_limits(), [1.5, 0.5])


def test_reduced_floating_model(arm_path):
    robot = RobotModel(arm_path, ["j2"], floating_base=True)
    assert (robot.nq, robot.nv) == (7 + 2, 6 + 1)
    assert robot.get_joint_names() == ["root_joint", "j2"]


def test_reduced_model_unknown_joint(arm_path):
    with pytest.raises(JointNotFound) as exc:
        RobotModel(arm_path, ["j1", "j4"])
    assert exc.value.name == "j4"
    assert "j1" in exc.value.closest


def test_reduced_model_rejects_a_bare_string(arm_path):
    with pytest.raises(InvalidInput):
        RobotModel(arm_path, "j1")


# -- mesh paths --------------------------------------------------------------------------------
def _mesh_paths(robot):
    return [o.meshPath for o in robot.collision_model.geometryObjects if o.name.startswith("cube")]


def _install(tmp_path: Path, share: str = "share") -> tuple[Path, Path]:
    """Copy the mesh robot to tmp/desc/ and its package to tmp/<share>/mypkg/ (no ancestor)."""
    urdf = tmp_path / "desc" / "robot.urdf"
    urdf.parent.mkdir(parents=True)
    shutil.copy(MESH_URDF, urdf)
    mesh = tmp_path / share / "mypkg" / "meshes" / "cube.obj"
    mesh.parent.mkdir(parents=True)
    shutil.copy(CUBE_OBJ, mesh)
    return urdf, mesh


def test_mesh_resolves_via_urdf_ancestor_folders():
    # tests/data/mypkg/urdf/mesh_robot.urdf -> tests/data is an ancestor holding mypkg/.
    robot = RobotModel(MESH_URDF)
    assert _mesh_paths(robot) == [str(CUBE_OBJ)]
    assert robot.visual_model.geometryObjects[0].meshPath == str(CUBE_OBJ)


def test_mesh_missing_raises_with_filename_and_searched_dirs(tmp_path):
    urdf, _ = _install(tmp_path)
    with pytest.raises(MeshNotFound) as exc:
        RobotModel(urdf)
    err = exc.value
    assert err.filename == CUBE_URI
    assert str(urdf.parent.resolve()) in err.searched
    assert str(tmp_path.resolve()) in err.searched
    assert CUBE_URI in str(err)
    assert str(urdf.parent.resolve()) in str(err)


def test_mesh_resolves_via_package_dirs(tmp_path):
    urdf, mesh = _install(tmp_path)
    robot = RobotModel(urdf, package_dirs=[tmp_path / "share"])
    assert _mesh_paths(robot) == [str(mesh.resolve())]
    # A single folder, given as a string, and the package folder itself both work.
    assert _mesh_paths(RobotModel(urdf, package_dirs=str(tmp_path / "share"))) == [
        str(mesh.resolve())
    ]
    assert _mesh_paths(RobotModel(urdf, package_dirs=[tmp_path / "share" / "mypkg"])) == [
        str(mesh.resolve())
    ]


def test_mesh_missing_lists_package_dirs_in_search(tmp_path):
    urdf, _ = _install(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with pytest.raises(MeshNotFound) as exc:
        RobotModel(urdf, package_dirs=[elsewhere])
    assert exc.value.searched[0] == str(elsewhere.resolve())


def test_mesh_resolves_via_ros_package_path(tmp_path, monkeypatch):
    urdf, mesh = _install(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("ROS_PACKAGE_PATH", f"{empty}:{tmp_path / 'share'}")
    assert _mesh_paths(RobotModel(urdf)) == [str(mesh.resolve())]


def test_package_dirs_take_priority_over_ros_package_path(tmp_path, monkeypatch):
    urdf, mesh_a = _install(tmp_path, "share_a")
    mesh_b = tmp_path / "share_b" / "mypkg" / "meshes" / "cube.obj"
    mesh_b.parent.mkdir(parents=True)
    shutil.copy(CUBE_OBJ, mesh_b)
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path / "share_b"))
    assert _mesh_paths(RobotModel(urdf)) == [str(mesh_b.resolve())]
    assert _mesh_paths(RobotModel(urdf, package_dirs=[tmp_path / "share_a"])) == [
        str(mesh_a.resolve())
    ]


def test_mesh_relative_filename_resolves_from_urdf_folder(tmp_path, monkeypatch):
    desc = tmp_path / "desc"
    (desc / "meshes").mkdir(parents=True)
    shutil.copy(CUBE_OBJ, desc / "meshes" / "cube.obj")
    text = MESH_URDF.read_text().replace(CUBE_URI, "meshes/cube.obj")
    (desc / "robot.urdf").write_text(text)
    monkeypatch.chdir(tmp_path)  # the working folder must not matter for a file
    robot = RobotModel(desc / "robot.urdf")
    assert _mesh_paths(robot) == [str((desc / "meshes" / "cube.obj").resolve())]


def test_mesh_relative_filename_in_string_resolves_from_working_folder(tmp_path, monkeypatch):
    (tmp_path / "meshes").mkdir()
    shutil.copy(CUBE_OBJ, tmp_path / "meshes" / "cube.obj")
    text = MESH_URDF.read_text().replace(CUBE_URI, "meshes/cube.obj")
    monkeypatch.chdir(tmp_path)
    robot = RobotModel.from_urdf_string(text)
    assert _mesh_paths(robot) == [str((tmp_path / "meshes" / "cube.obj").resolve())]


def test_mesh_file_uri_and_absolute_path(tmp_path):
    for name in (f"file://{CUBE_OBJ}", str(CUBE_OBJ)):
        robot = RobotModel.from_urdf_string(MESH_URDF.read_text().replace(CUBE_URI, name))
        assert _mesh_paths(robot) == [str(CUBE_OBJ)]
    with pytest.raises(MeshNotFound) as exc:
        RobotModel.from_urdf_string(
            MESH_URDF.read_text().replace(CUBE_URI, f"file://{tmp_path}/none.obj")
        )
    assert exc.value.filename == f"file://{tmp_path}/none.obj"


def test_load_visuals_false_skips_missing_visual_mesh():
    text = MESH_URDF.read_text()
    # Only the visual mesh is missing; the collision mesh still resolves.
    visual = '<visual><geometry><mesh filename="package://mypkg/meshes/cube.obj"/>'
    assert visual in text
    text = text.replace(visual, visual.replace("cube.obj", "missing_visual.obj"))
    with pytest.raises(MeshNotFound) as exc:
        RobotModel.from_urdf_string(text, package_dirs=[MESH_URDF.parents[2]])
    assert exc.value.filename.endswith("missing_visual.obj")
    robot = RobotModel.from_urdf_string(
        text, package_dirs=[MESH_URDF.parents[2]], load_visuals=False
    )
    assert robot.visual_model is None and robot.visual_data is None
    assert robot.has_collision_geometry()


def test_load_collisions_false(arm_path):
    robot = RobotModel(arm_path, load_collisions=False)
    assert not robot.has_collision_geometry()
    assert robot.collision_model is None
    assert robot.compute_collision_distances() == []
    assert robot.compute_min_collision_distance() == np.inf
    assert not robot.check_collision(0.1)
    assert robot.get_collision_pair_names() == []


def test_convex_hull_replaces_mesh_by_default():
    geoms = {g["name"]: g for g in RobotModel(MESH_URDF).get_collision_geometries()}
    assert geoms["cube_link_0"]["geometry_type"] == "convex"
    assert geoms["cube_link_0"]["params"] == {"num_points": 8}
    exact = {
        g["name"]: g
        for g in RobotModel(MESH_URDF, exact_collision_meshes=True).get_collision_geometries()
    }
    assert exact["cube_link_0"]["geometry_type"] == "mesh"
    assert exact["cube_link_0"]["params"] == {"num_vertices": 8, "num_tris": 12}
    assert exact["ball_link_0"]["geometry_type"] == "sphere"


def _box_sphere_distance(center, half, radius):
    outside = np.maximum(np.abs(center) - half, 0.0)
    return float(np.linalg.norm(outside)) - radius


@pytest.mark.parametrize("exact", [False, True])
def test_cube_mesh_distance_equals_box_distance(exact):
    robot = RobotModel(MESH_URDF, exact_collision_meshes=exact)
    ic = robot.get_joint_config_index("slide_cube")
    ib = robot.get_joint_config_index("slide_ball")
    # Face, edge and corner regions of the cube, all separated.
    for qc, qb in ((0.0, 0.0), (0.1, -0.2), (-0.3, 0.4), (0.25, -0.05)):
        q = np.zeros(2)
        q[ic], q[ib] = qc, qb
        robot.update_kinematics(q)
        ball = np.array([0.3 + qb, 0.12, 0.07])
        expected = _box_sphere_distance(ball - [qc, 0, 0], 0.05, 0.05)
        assert expected > 0
        (d,) = robot.compute_collision_distances()
        assert d == pytest.approx(expected, abs=1e-6)
