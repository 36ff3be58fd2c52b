"""The ``stackik reach`` commands against the library calls they wrap; one-line errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

pytest.importorskip("typer")
pytest.importorskip("zarr")
pytest.importorskip("matplotlib")
from typer.testing import CliRunner

from stackik import FixedPairWarning, KinematicsSolver, RobotModel
from stackik.cli.app import app
from stackik.reach import ReachResult, ReachStudy, targets_from_csv

ROOT = Path(__file__).resolve().parents[1]
UR5 = ROOT / "robots" / "ur5" / "ur5.urdf"
UR5_SRDF = ROOT / "robots" / "ur5" / "ur5.srdf"
WORKPIECE = ROOT / "examples" / "data" / "workpiece.stl"


def run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def lines(output: str) -> list[str]:
    return [ln for ln in output.splitlines() if ln.strip()]


@pytest.fixture(scope="module")
def csv_targets(tmp_path_factory):
    robot = RobotModel(UR5, load_visuals=False)
    data = robot.model.createData()
    fid = robot.model.getFrameId("tool0")
    rng = np.random.default_rng(3)
    path = tmp_path_factory.mktemp("cli") / "targets.csv"
    rows = ["qw,qx,qy,qz,x,y,z"]
    for k in range(40):
        q = rng.uniform(-np.pi, np.pi, 6)
        pin.framesForwardKinematics(robot.model, data, q)
        M = data.oMf[fid]
        if k == 0:
            M = pin.SE3(M.rotation, np.array([3.0, 0.0, 0.0]))  # out of reach
        w, x, y, z = pin.Quaternion(M.rotation).coeffs()[[3, 0, 1, 2]]
        rows.append(",".join(f"{v:.17g}" for v in (w, x, y, z, *M.translation)))
    path.write_text("\n".join(rows) + "\n")
    return path


def test_help_lists_the_reach_commands():
    res = run("reach", "--help")
    assert res.exit_code == 0
    for cmd in ("study", "map", "show", "compare"):
        assert cmd in res.output


def test_study_equals_the_library(tmp_path, csv_targets):
    out = tmp_path / "study.zarr"
    res = run(
        "reach", "study", "--robot", UR5, "--srdf", UR5_SRDF, "--frame", "tool0",
        "--targets", csv_targets, "--out", out, "--executor", "serial", "--no-progress",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    stored = ReachResult.load(out)
    robot = RobotModel(UR5, srdf_path=UR5_SRDF, load_visuals=False)
    solver = KinematicsSolver(robot)
    solver.configure_collision_constraint(0.0)
    lib = ReachStudy(robot, "tool0", targets_from_csv(csv_targets), solver).run(
        "serial", progress=False
    )
    assert np.array_equal(stored.reason, lib.reason)
    assert np.array_equal(stored.q, lib.q, equal_nan=True)
    s = lib.summary()
    assert f"reachable    {s.reachable} ({100 * s.fraction:.2f} %)" in res.output
    assert stored.reason[0] == 1  # the far target: OUT_OF_REACH
    # resuming a different study in that store is refused, with one line
    res = run(
        "reach", "study", "--robot", UR5, "--frame", "tool0", "--targets", csv_targets,
        "--out", out, "--executor", "serial", "--no-progress", "--limit-margin", "0.1",
    )  # fmt: skip
    assert res.exit_code == 1
    assert lines(res.output)[-1].startswith("error: StudyMismatch")


def test_a_base_resting_on_the_scenes_table_is_left_out_with_a_note(tmp_path):
    """The Panda's base 5 mm above a table, under a 10 mm minimum: the study leaves those
    pairs out (the same distance for every target), and so does its solver; the command
    says so in a note, not with the constraint's warning, and the study is the library's
    study on a solver that keeps the pairs."""
    import coal

    panda, panda_srdf = (
        ROOT / "robots" / "panda" / "panda.urdf",
        ROOT / "robots" / "panda" / "panda.srdf",
    )
    scene = tmp_path / "cell.yaml"
    scene.write_text(
        "obstacles:\n"
        "  - {name: table, box: [1.2, 1.0, 0.05], pose: {xyz: [0.4, 0.0, -0.03]}}\n"
        "  - {name: post, cylinder: {radius: 0.04, length: 0.8}, pose: {xyz: [0.45, -0.15, 0.4]}}\n"
    )
    targets = tmp_path / "targets.csv"
    rows = [f"{x},{y},0.1,0,1,0,0" for x in (0.3, 0.45, 0.6) for y in (-0.25, 0.0, 0.25)]
    targets.write_text("x,y,z,qw,qx,qy,qz\n" + "\n".join(rows) + "\n")
    out = tmp_path / "study.zarr"
    res = run(
        "reach", "study", "--robot", panda, "--srdf", panda_srdf, "--frame", "panda_hand_tcp",
        "--targets", targets, "--out", out, "--scene", scene, "--min-distance", "0.01",
        "--executor", "serial", "--no-progress",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    # The pairs, by coal: the base's geometries (on no joint) closer than 10 mm to the table.
    robot = RobotModel(panda, srdf_path=panda_srdf, load_visuals=False)
    robot.load_scene(scene)
    gm = robot.collision_model
    gd = pin.GeometryData(gm)
    pin.updateGeometryPlacements(robot.model, robot.model.createData(), gm, gd, robot.kinematics.q)
    T = robot.world.get_obstacle_pose("table")
    table = robot.world.get_obstacle("table").geometry
    near = []
    for g, obj in enumerate(gm.geometryObjects):
        M = gd.oMg[g]
        d = coal.distance(
            obj.geometry, coal.Transform3s(M.rotation, M.translation),
            table, coal.Transform3s(T.rotation, T.translation),
            coal.DistanceRequest(), coal.DistanceResult(),
        )  # fmt: skip
        if obj.parentJoint == 0 and d < 0.01:
            near.append(f"{obj.name}/table")
    assert near  # (the scene puts the base inside the minimum)
    flat = " ".join(res.output.split())
    assert f"note: left out of the study: {', '.join(near)} (no joint moves them apart" in flat
    assert "warning" not in res.output
    solver = KinematicsSolver(robot)
    with pytest.warns(FixedPairWarning):
        solver.configure_collision_constraint(0.01)  # (keeps the pairs)
    lib = ReachStudy(robot, "panda_hand_tcp", targets_from_csv(targets), solver).run(
        "serial", progress=False
    )
    stored = ReachResult.load(out)
    assert np.array_equal(stored.reason, lib.reason)
    assert np.array_equal(stored.q, lib.q, equal_nan=True)
    assert 0 < lib.summary().reachable < len(rows)  # (the post blocks some targets)


def test_study_on_a_mesh_with_a_plot_then_show_and_compare(tmp_path):
    a, b = tmp_path / "a.zarr", tmp_path / "b.zarr"
    fig = tmp_path / "a.png"
    common = ["--robot", UR5, "--srdf", UR5_SRDF, "--frame", "tool0", "--targets", WORKPIECE]
    res = run("reach", "study", *common, "--spacing", "0.06", "--out", a, "--plot", fig,
              "--executor", "serial", "--no-progress")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert fig.stat().st_size > 1000 and fig.read_bytes()[:4] == b"\x89PNG"
    res = run("reach", "study", *common, "--spacing", "0.06", "--out", b, "--min-distance",
              "0.02", "--executor", "serial", "--no-progress")  # fmt: skip
    assert res.exit_code == 0, res.output
    shown = tmp_path / "shown.svg"
    res = run("reach", "show", a, "--out", shown, "--value", "manipulability")
    assert res.exit_code == 0 and shown.read_text().lstrip().startswith("<?xml")
    res = run("reach", "compare", a, b, "--out", tmp_path / "cmp.png")
    assert res.exit_code == 0, res.output
    ra, rb = ReachResult.load(a), ReachResult.load(b)
    c = ra.compare(rb, names=("a.zarr", "b.zarr"))
    assert c.table().splitlines()[-1] in res.output.replace("\n", " ") or "gained" in res.output
    assert (tmp_path / "cmp.png").stat().st_size > 1000


def test_map_then_show_a_slice(tmp_path):
    out = tmp_path / "map.zarr"
    res = run(
        "reach", "map", "--robot", UR5, "--frame", "tool0", "--resolution", "0.3",
        "--orientations", "4", "--no-collision", "--out", out, "--executor", "serial",
        "--no-progress",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "voxels reachable" in res.output
    fig = tmp_path / "slice.png"
    res = run("reach", "show", out, "--out", fig, "--axis", "z", "--at", "0.3")
    assert res.exit_code == 0, res.output
    assert fig.read_bytes()[:4] == b"\x89PNG"


def test_errors_are_one_line_with_exit_code_1(tmp_path, csv_targets):
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text("x,y,z,qw,qx,qy,qz\n1,2,3,1,0,0\n")
    for args, name in [
        (("study", "--robot", tmp_path / "none.urdf", "--frame", "tool0", "--targets",
          csv_targets, "--out", tmp_path / "o.zarr"), "RobotFileNotFound"),
        (("study", "--robot", UR5, "--frame", "tool0", "--targets", bad_csv, "--out",
          tmp_path / "o.zarr"), "MalformedDescription"),
        (("study", "--robot", UR5, "--frame", "tool0", "--targets", tmp_path / "t.txt",
          "--out", tmp_path / "o.zarr"), "InvalidInput"),
        (("study", "--robot", UR5, "--frame", "nope", "--targets", csv_targets, "--out",
          tmp_path / "o.zarr"), "FrameNotFound"),
        (("show", tmp_path / "missing.zarr"), "RobotFileNotFound"),
        (("show", tmp_path), "MalformedDescription"),
        (("study", "--robot", UR5, "--frame", "tool0", "--targets", csv_targets, "--out",
          tmp_path / "o.zarr", "--plot", tmp_path / "f.jpg"), "InvalidInput"),
    ]:  # fmt: skip
        res = run("reach", *args)
        assert res.exit_code == 1, (args, res.output)
        assert len(lines(res.output)) == 1 and lines(res.output)[0].startswith(f"error: {name}")


def test_study_and_map_load_the_scene_into_the_robot(tmp_path, csv_targets, monkeypatch):
    import stackik.reach as reach

    scene = tmp_path / "cell.yaml"
    scene.write_text(
        "obstacles:\n"
        "  - {name: wall, box: [0.1, 2.0, 2.0], pose: {xyz: [0.6, 0.0, 0.5]}}\n"
        "  - {name: floor, halfspace: {normal: [0, 0, 1], offset: -0.05}}\n"
    )
    seen = {}

    class Recording(reach.ReachStudy):
        def __init__(self, robot, frame, targets, solver=None, **kwargs):
            seen["study"] = (robot.get_obstacle_names(), solver.get_active_collision_pairs())
            super().__init__(robot, frame, targets, solver, **kwargs)

    monkeypatch.setattr(reach, "ReachStudy", Recording)
    out = tmp_path / "study.zarr"
    res = run(
        "reach", "study", "--robot", UR5, "--srdf", UR5_SRDF, "--frame", "tool0",
        "--targets", csv_targets, "--out", out, "--executor", "serial", "--no-progress",
        "--scene", scene,
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    names, pairs = seen["study"]
    assert names == ["wall", "floor"]
    assert ("wrist_3_link_0", "wall") in pairs  # the study's solver watches the scene
    assert ReachResult.load(out).complete

    build = reach.CapabilityMap.build.__func__

    def recording_build(cls, robot, *args, **kwargs):
        seen["map"] = robot.get_obstacle_names()
        return build(cls, robot, *args, **kwargs)

    monkeypatch.setattr(reach.CapabilityMap, "build", classmethod(recording_build))
    res = run(
        "reach", "map", "--robot", UR5, "--frame", "tool0", "--resolution", "0.3",
        "--orientations", "4", "--no-collision", "--out", tmp_path / "map.zarr",
        "--executor", "serial", "--no-progress", "--scene", scene,
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert seen["map"] == ["wall", "floor"]
    # A bad scene: one line, exit code 1, before any work.
    scene.write_text("obstacles:\n  - {name: wall, box: [0.1, 2.0]}\n")
    res = run(
        "reach", "study", "--robot", UR5, "--frame", "tool0", "--targets", csv_targets,
        "--out", tmp_path / "o.zarr", "--scene", scene,
    )  # fmt: skip
    assert res.exit_code == 1
    assert len(lines(res.output)) == 1 and lines(res.output)[0].startswith("error: MalformedScene")
    assert not (tmp_path / "o.zarr").exists()
