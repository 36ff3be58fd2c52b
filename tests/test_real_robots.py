"""Real robots from the installed example-robot-data package (the ``robots`` extra).

- ``stackik.robots`` lists its robots, loads them with their meshes, their SRDF's
  disabled pairs and a floating base where they walk or fly, and says what to install
  (a typed error) when the package is missing; an unknown name lists close ones;
- every robot it offers pickles in both mimic layouts and comes back computing the same
  poses, Jacobians and collision distances, bit for bit (each round trip in a child
  process, so a crash fails the test instead of ending the run);
- the viewer's scene specs of a loaded robot draw its meshes: the vertex and triangle
  counts (and the vertices) of coal and trimesh loading the same files.

Nothing is downloaded: the files are those the extra installs.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import coal
import numpy as np
import pytest

from stackik import RobotModel, robots
from stackik.errors import RobotDataNotFound, RobotLoadError, RobotNotFound

try:
    DATA = robots.data_dir()
except RobotDataNotFound:  # pragma: no cover - the test extra installs the package
    pytest.skip("example-robot-data is not installed", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
#: Round-tripped in the default run: two arms and a humanoid; the others are slow-marked.
DEFAULT_ROUND_TRIPS = ("panda", "ur5", "icub_reduced")


# -- listing and loading -----------------------------------------------------------------------
def test_available_lists_the_real_robots():
    names = robots.available()
    assert names == sorted(names) and len(names) >= 40
    for name in ("panda", "ur5", "ur10", "talos", "kinova", "anymal", "solo12", "tiago"):
        assert name in names
    assert "talos" in robots.available("humanoid") and "panda" not in robots.available("humanoid")
    for name in names:
        entry = robots.info(name)
        assert (DATA / entry.urdf).is_file(), entry.urdf
        assert entry.srdf is None or (DATA / entry.srdf).is_file(), entry.srdf
        assert entry.floating_base == (entry.kind in {"humanoid", "biped", "quadruped", "aerial"})


def _srdf_pairs(path: Path) -> set[frozenset[str]]:
    root = ET.parse(path).getroot()
    return {frozenset((e.get("link1"), e.get("link2"))) for e in root.iter("disable_collisions")}


def test_panda_loads_with_meshes_and_srdf():
    panda = robots.load("panda")
    # 7 joints + two fingers: the follower finger keeps its q entry (mimic="keep", the
    # default and EmbodiK's layout); folded, it has none
    assert not panda.is_floating_base and panda.nq == 9
    assert robots.load("panda", mimic="fold", load_visuals=False).nq == 8
    visual = panda.visual_model
    assert visual is not None and visual.ngeoms == 11
    for obj in visual.geometryObjects:
        assert Path(obj.meshPath).is_file() and obj.meshPath.startswith(str(DATA))
        assert type(obj.geometry).__name__.startswith("BVHModel")
    disabled = _srdf_pairs(DATA / robots.info("panda").srdf)
    active = {frozenset(p) for p in panda.get_collision_pair_links()}
    assert disabled and active and not (active & disabled)
    # The pairs the SRDF disables are active without it.
    plain = RobotModel(
        DATA / robots.info("panda").urdf, package_dirs=[DATA.parent.parent], load_visuals=False
    )
    assert {frozenset(p) for p in plain.get_collision_pair_links()} & disabled


def test_legged_and_humanoid_robots_get_a_floating_base():
    talos = robots.load("talos", load_visuals=False)
    assert talos.is_floating_base and talos.nq == talos.nv + 1
    assert talos.get_joint_names()[0] == "root_joint"
    ur5 = robots.load("ur5", load_visuals=False)
    assert not ur5.is_floating_base and ur5.nq == ur5.nv == 6
    fixed = robots.load("solo12", load_visuals=False, floating_base=False)
    assert not fixed.is_floating_base and fixed.nq == 12


def test_unknown_robot_lists_close_names():
    with pytest.raises(RobotNotFound, match="panda") as err:
        robots.load("pandaa")
    assert "panda" in err.value.closest


def test_missing_package_says_which_extra_to_install(monkeypatch, tmp_path):
    def no_distribution(name):
        raise importlib.metadata.PackageNotFoundError(name)

    real_find_spec = importlib.util.find_spec
    monkeypatch.delenv(robots.ENV_VAR, raising=False)
    monkeypatch.setattr(importlib.metadata, "distribution", no_distribution)
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "example_robot_data" else real_find_spec(name, *a),
    )
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    with pytest.raises(RobotDataNotFound, match=r"pip install 'stackik\[robots\]'") as err:
        robots.load("panda")
    assert isinstance(err.value, RobotLoadError)
    monkeypatch.setenv(robots.ENV_VAR, str(tmp_path / "nowhere"))
    with pytest.raises(RobotDataNotFound, match=robots.ENV_VAR):
        robots.data_dir()
    monkeypatch.setenv(robots.ENV_VAR, str(DATA))
    assert robots.data_dir() == DATA


# -- pickling every robot, both mimic layouts, in a child process -------------------------------
ROUND_TRIP = """
import pickle, sys
import numpy as np
import stackik

name = sys.argv[1]
for mimic in ("fold", "keep"):
    robot = stackik.robots.load(name, mimic=mimic)
    copy = pickle.loads(pickle.dumps(robot))
    assert (copy.nq, copy.nv, copy.mimic_layout) == (robot.nq, robot.nv, mimic)
    assert copy.get_frame_names() == robot.get_frame_names()
    assert copy.get_collision_pair_names() == robot.get_collision_pair_names()
    vis = robot.visual_model
    assert (copy.visual_model is None) == (vis is None)
    assert vis is None or copy.visual_model.ngeoms == vis.ngeoms
    rng = np.random.default_rng(7)
    frames = robot.get_frame_names()
    for _ in range(3):
        q = robot.random_configuration(rng)
        robot.update_kinematics(q)
        copy.update_kinematics(q)
        for frame in frames[:: max(1, len(frames) // 12)] + frames[-2:]:
            a, b = robot.get_frame_pose(frame), copy.get_frame_pose(frame)
            assert np.array_equal(a.homogeneous, b.homogeneous), frame
            assert np.array_equal(
                robot.get_frame_jacobian(frame, "world"), copy.get_frame_jacobian(frame, "world")
            ), frame
        assert np.array_equal(
            robot.compute_collision_distances(), copy.compute_collision_distances()
        )
    print(mimic, robot.nq, robot.nv, len(robot.mimic_joints), "ok")
"""


def _round_trip(name: str, tmp_path: Path) -> None:
    script = tmp_path / "round_trip.py"
    script.write_text(textwrap.dedent(ROUND_TRIP))
    done = subprocess.run(
        [sys.executable, str(script), name],
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=ROOT,
    )
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-3000:]}"
    lines = done.stdout.split("\n")
    assert [ln.split()[0] for ln in lines if ln.endswith("ok")] == ["fold", "keep"], done.stdout


@pytest.mark.parametrize("name", DEFAULT_ROUND_TRIPS)
def test_robot_round_trips_in_both_mimic_layouts(name, tmp_path):
    _round_trip(name, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in robots.available() if n not in DEFAULT_ROUND_TRIPS])
def test_every_other_robot_round_trips(name, tmp_path):
    _round_trip(name, tmp_path)


# -- what the viewer draws -----------------------------------------------------------------------
class _Node(SimpleNamespace):
    pass


class _RecordingScene:
    """A stand-in for viser's scene API that records what the viewer adds."""

    def __init__(self) -> None:
        self.meshes: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.frames: list[str] = []

    def add_frame(self, name, **kwargs):
        self.frames.append(name)
        return _Node(visible=kwargs.get("visible", True))

    def add_mesh_simple(self, name, vertices, faces, **kwargs):
        self.meshes[name] = (np.asarray(vertices), np.asarray(faces))
        return _Node(visible=True)

    def __getattr__(self, kind):  # add_box, add_icosphere, add_cylinder
        return lambda name, **kwargs: _Node(visible=True)


def _same_rows(a: np.ndarray, b: np.ndarray, atol: float) -> bool:
    a = a[np.lexsort(a.T[::-1])]
    b = b[np.lexsort(b.T[::-1])]
    return a.shape == b.shape and np.allclose(a, b, atol=atol)


@pytest.mark.parametrize("name", ["xarm7", pytest.param("panda", marks=pytest.mark.slow)])
def test_viewer_draws_the_real_meshes(name):
    trimesh = pytest.importorskip("trimesh")
    from stackik.viz.scene import RobotScene
    from stackik.viz.shapes import geometry_specs

    robot = robots.load(name)
    specs, skipped = geometry_specs(robot.visual_model)
    assert not skipped and len(specs) == robot.visual_model.ngeoms
    for spec, obj in zip(specs, robot.visual_model.geometryObjects, strict=True):
        (part,) = spec.parts
        assert part.kind == "mesh"
        scale = np.asarray(obj.meshScale, dtype=float)
        # coal's own loader on the same file: the same vertices and triangles.
        ref = coal.MeshLoader().load(obj.meshPath, scale)
        assert part.vertices.shape == (ref.num_vertices, 3)
        assert part.faces.shape == (ref.num_tris, 3)
        np.testing.assert_array_equal(part.vertices, np.asarray(ref.vertices()))
        if obj.meshPath.lower().endswith(".stl"):  # trimesh reads STL without extras
            mesh = trimesh.load(obj.meshPath, force="mesh")
            assert (len(mesh.vertices), len(mesh.faces)) == (len(part.vertices), len(part.faces))
            assert _same_rows(np.asarray(mesh.vertices) * scale, part.vertices, 1e-6)
    scene = _RecordingScene()
    drawn = RobotScene(scene, robot)
    assert len(drawn.visual_nodes) == len(specs)
    visual_meshes = {k: v for k, v in scene.meshes.items() if "/visual/" in k}
    assert len(visual_meshes) == len(specs)
    counts = sorted(v[0].shape[0] for v in visual_meshes.values())
    assert counts == sorted(s.parts[0].vertices.shape[0] for s in specs)
