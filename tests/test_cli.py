"""The stackik command line: output against the library call it wraps, one-line errors."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

pytest.importorskip("typer")
from typer.testing import CliRunner

import stackik
from stackik import RobotModel, SolverStatus
from stackik.cli.app import app
from stackik.cli.checks import check_description

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
UR5 = ROBOTS / "ur5" / "ur5.urdf"


def run(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_help_lists_the_commands():
    res = run("--help")
    assert res.exit_code == 0
    assert "exclusions" in res.output


def test_exclusions_writes_the_srdf_the_library_computes(tmp_path):
    out = tmp_path / "ur5.srdf"
    res = run("exclusions", UR5, "--samples", "300", "--seed", "4", "--write", out)
    assert res.exit_code == 0, res.output
    report = RobotModel(UR5, load_visuals=False).compute_collision_exclusions(samples=300, seed=4)
    assert out.read_text() == report.to_srdf()
    assert report.summary().split(",")[0] in res.output.replace("\n", " ")
    for p in report.of("always_close"):
        assert p.link_a[:8] in res.output
    # The written exclusions load back: the disabled pairs are gone from the robot.
    robot = RobotModel(UR5, srdf_path=out, load_visuals=False)
    active = {frozenset(pair) for pair in robot.get_collision_pair_links()}
    disabled = {frozenset((p.link_a, p.link_b)) for p in report.disabled()}
    assert disabled and not active & disabled
    checked = {frozenset((p.link_a, p.link_b)) for p in report.of("checked")}
    assert checked <= active


def test_errors_are_one_line_with_exit_code_1(tmp_path):
    res = run("exclusions", tmp_path / "missing.urdf")
    assert res.exit_code == 1
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: RobotFileNotFound")
    res = run("exclusions", UR5, "--samples", "0")
    assert res.exit_code == 1 and "samples must be an integer" in res.output


def test_debug_shows_the_exception(tmp_path):
    res = run("--debug", "exclusions", tmp_path / "missing.urdf")
    assert res.exit_code != 0
    assert type(res.exception).__name__ == "RobotFileNotFound"


def test_console_script_without_typer_says_which_extra_to_install():
    code = "import sys; sys.modules['typer'] = None; from stackik.cli import main; main()"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert res.returncode == 2
    assert "pip install 'stackik[cli]'" in res.stderr


# -- info, check, view, bench ---------------------------------------------------------------
PANDA = ROBOTS / "panda" / "panda.urdf"
PANDA_SRDF = ROBOTS / "panda" / "panda.srdf"
HUMANOID = ROBOTS / "humanoid" / "humanoid.urdf"
DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize("command", ["info", "check", "exclusions", "view", "bench"])
def test_every_command_has_help(command):
    res = run(command, "--help")
    assert res.exit_code == 0 and "Usage" in res.output
    assert command in run("--help").output


def _commands(group, path=()):
    """Every leaf command of the command tree under ``group``, with its argument path."""
    for name, cmd in group.commands.items():
        if getattr(cmd, "commands", None):  # (a group: typer's own, not always click's class)
            yield from _commands(cmd, (*path, name))
        else:
            yield (*path, name), cmd


def test_help_prints_every_option_help_as_written_units_included():
    """Rich markup would take "[m]" or "[rad or m]" for a style tag and drop it: every
    bracketed unit of an option's help text appears in the printed help."""
    import re

    import typer

    seen = 0
    for path, cmd in _commands(typer.main.get_command(app)):
        res = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "240"})
        assert res.exit_code == 0, res.output
        printed = " ".join(re.sub(r"[│╭╮╰╯─]", " ", res.output).split())
        for param in cmd.params:
            for token in re.findall(r"\[[^\]]+\]", getattr(param, "help", None) or ""):
                assert token in printed, (path, param.name, token)
                seen += 1
    assert seen >= 10  # (the units of the reach and exclusions options among them)


def test_info_shows_what_the_library_reports():
    res = run("info", PANDA, "--srdf", PANDA_SRDF, "--pairs")
    assert res.exit_code == 0, res.output
    robot = RobotModel(PANDA, srdf_path=PANDA_SRDF, load_visuals=False)
    out = res.output
    assert f"mass {robot.get_total_mass():.3f} kg" in out
    lower, upper = robot.get_joint_limits()
    for name in robot.controlled_joint_names:
        i = robot.get_joint_config_index(name)
        row = next(line for line in out.splitlines() if f" {name} " in line)
        assert "revolute" in row and f"{lower[i]:.4g}" in row and f"{upper[i]:.4g}" in row
    assert f"active collision pairs: {len(robot.get_collision_pair_links())}" in out
    for a, b in robot.get_collision_pair_links()[:5]:
        assert f"{a} / {b}" in out
    assert "panda_hand_tcp" in out and "panda_link0_0" in out


def test_info_shows_mimic_joints():
    res = run("info", DATA / "mimic.urdf")
    assert res.exit_code == 0, res.output
    assert "mimic (-2 x leader + 0.3)" in res.output


def test_check_passes_a_shipped_robot_with_its_srdf():
    res = run("check", PANDA, "--srdf", PANDA_SRDF, "--samples", "200")
    assert res.exit_code == 0, res.output
    assert "no problem found" in res.output and "200 sampled" in res.output


def test_check_reports_pairs_in_contact_with_the_srdf_lines():
    res = run("check", HUMANOID, "--floating-base", "--samples", "200")
    assert res.exit_code == 1, res.output
    robot = RobotModel(HUMANOID, floating_base=True, load_visuals=False)
    report = robot.compute_collision_exclusions(samples=200)
    defaults = report.of("default")
    assert defaults  # the humanoid's zero-length joint chains overlap by design
    text = " ".join(res.output.split())
    for p in defaults:
        assert f'link1="{p.link_a}" link2="{p.link_b}" reason="Default"' in text
    # With the shipped SRDF the same pairs are disabled: no error left.
    srdf = ROBOTS / "humanoid" / "humanoid.srdf"
    res = run("check", HUMANOID, "--floating-base", "--srdf", srdf, "--samples", "200")
    assert res.exit_code == 0, res.output


def test_check_warnings_fail_only_when_strict():
    # Without its SRDF, the Panda has pairs that are always close (warnings), no error.
    res = run("check", PANDA, "--samples", "200")
    assert res.exit_code == 0, res.output
    assert "warning" in res.output and 'reason="Close"' in " ".join(res.output.split())
    assert run("check", PANDA, "--samples", "200", "--strict").exit_code == 1


def test_check_reports_malformed_elements():
    res = run("check", DATA / "malformed" / "box_two_sizes.urdf")
    assert res.exit_code == 1
    line = next(ln for ln in res.output.splitlines() if ln.startswith("error [load]"))
    assert "<box> size: '0.1 0.1' has 2 number(s), expected 3" in line


def test_check_lists_every_missing_mesh(tmp_path):
    urdf = (DATA / "mypkg" / "urdf" / "mesh_robot.urdf").read_text()
    urdf = urdf.replace("package://mypkg/meshes/cube.obj", "package://nowhere/a.obj", 1)
    urdf = urdf.replace("package://mypkg/meshes/cube.obj", "missing/b.stl", 1)
    path = tmp_path / "robot.urdf"
    path.write_text(urdf)
    res = run("check", path)
    assert res.exit_code == 1
    text = " ".join(res.output.split())
    assert "package://nowhere/a.obj" in text and "missing/b.stl" in text
    report = check_description(path)
    assert [(f.level, f.check) for f in report.findings] == [("error", "mesh")] * 2
    # The library itself stops at the first one.
    with pytest.raises(stackik.MeshNotFound):
        RobotModel(path)


def test_check_reports_a_bad_srdf(tmp_path):
    srdf = tmp_path / "bad.srdf"
    srdf.write_text(
        '<robot name="x"><disable_collisions link1="nope" link2="panda_link1"/></robot>'
    )
    res = run("check", PANDA, "--srdf", srdf, "--samples", "0")
    assert res.exit_code == 1
    assert "srdf" in res.output and "nope" in res.output


def test_bench_prints_median_and_p99():
    res = run("bench", "--steps", "60")
    assert res.exit_code == 0, res.output
    rows = [line for line in res.output.splitlines() if "(A)" in line or "(B)" in line]
    assert len(rows) == 2
    for row in rows:
        cells = [c.strip() for c in row.replace("┃", "│").split("│") if c.strip()]
        steps, median, p99 = int(cells[1]), float(cells[2]), float(cells[3])
        assert steps == 60 and 0 < median <= p99


def test_bench_errors_are_one_line(tmp_path):
    res = run("bench", "--urdf", tmp_path / "none.urdf")
    assert res.exit_code == 1 and res.output.startswith("error: RobotFileNotFound")
    res = run("bench", "--urdf", ROBOTS / "ur5" / "ur5.urdf")
    assert res.exit_code == 1 and "FrameNotFound" in res.output


def test_view_serves_for_a_while():
    pytest.importorskip("viser")
    res = run(
        "view",
        PANDA,
        "--srdf",
        PANDA_SRDF,
        "--frame",
        "panda_hand_tcp",
        "--port",
        "0",
        "--duration",
        "0.5",
    )
    assert res.exit_code == 0, res.output
    assert "stackik viewer: http://127.0.0.1:" in res.output


def test_view_names_an_unknown_frame():
    res = run("view", PANDA, "--frame", "panda_hand_tpc", "--port", "0", "--duration", "0")
    assert res.exit_code == 1
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "FrameNotFound" in lines[0] and "panda_hand_tcp" in lines[0]


# -- scenes: --scene on view and check ----------------------------------------------------------
CELL = """
obstacles:
  - name: table
    box: [0.5, 0.9, 0.04]
    pose: {xyz: [0.55, 0.0, 0.13]}
  - name: post
    cylinder: {radius: 0.04, length: 0.8}
    pose: {xyz: [0.45, 0.25, 0.55], rpy: [0.0, 0.0, 0.3]}
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def one_line(output: str) -> str:
    lines = [ln for ln in output.splitlines() if ln.strip()]
    assert len(lines) == 1, output
    return lines[0]


def test_view_loads_the_scene_into_the_robots_world(tmp_path, monkeypatch):
    pytest.importorskip("viser")
    import pinocchio as pin

    from stackik.viz import Viewer

    seen = {}
    wait = Viewer.wait

    def look_then_wait(self, timeout=None):  # what the page would show, before it closes
        self.refresh()
        seen["nodes"] = {n: np.array(v[0].position) for n, v in self.obstacle_nodes.items()}
        seen["gizmos"] = sorted(self.obstacle_controls)
        seen["pairs"] = self.solver.get_active_collision_pairs()
        wait(self, 0.0)

    monkeypatch.setattr(Viewer, "wait", look_then_wait)
    scene = write(tmp_path / "cell.yaml", CELL)
    res = run("view", PANDA, "--srdf", PANDA_SRDF, "--frame", "panda_hand_tcp", "--scene",
              scene, "--port", "0")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert sorted(seen["nodes"]) == seen["gizmos"] == ["post", "table"]
    np.testing.assert_allclose(seen["nodes"]["post"], [0.45, 0.25, 0.55])
    np.testing.assert_allclose(seen["nodes"]["table"], [0.55, 0.0, 0.13])
    assert ("panda_hand_0", "post") in seen["pairs"]  # the solver avoids the scene
    robot = RobotModel(PANDA, srdf_path=PANDA_SRDF, load_visuals=False)
    robot.load_scene(scene)  # the library's reading of the same file
    T = robot.get_obstacle_pose("post")
    assert np.allclose(T.rotation, pin.rpy.rpyToMatrix(0.0, 0.0, 0.3))


def test_the_viewers_solver_leaves_out_a_base_resting_on_the_table_with_a_note(capsys):
    """A table 5 mm under the Panda's base, a 10 mm minimum: the viewer's solver leaves
    the base/table pairs out and prints a note (the user cannot exclude them from the
    command line); its other pairs with the table stay watched."""
    import warnings

    import coal

    from stackik.cli.view import view_solver

    robot = RobotModel(PANDA, srdf_path=PANDA_SRDF, load_visuals=False)
    table = np.eye(4)
    table[:3, 3] = (0.4, 0.0, -0.03)
    robot.add_obstacle("table", coal.Box(1.2, 1.0, 0.05), table)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no warning escapes as a Python warning)
        solver = view_solver(robot, ["panda_hand_tcp"], 0.01)
    printed = " ".join(capsys.readouterr().err.split())
    q = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
    base = [  # the base's geometries inside the minimum, by coal
        g
        for g in robot.get_collision_geometry_names()
        if g.startswith("panda_link0_") and coal_distance(robot, q, g, "table") < 0.01
    ]
    pairs = solver.get_active_collision_pairs()
    assert base and not [(a, b) for a, b in pairs if a in base and b == "table"]
    assert ("panda_hand_0", "table") in pairs
    listed = ", ".join(f"{g}/table" for g in base)
    assert f"note: left out of collision avoidance: {listed} (no joint moves them apart" in printed
    assert "warning" not in printed
    # a step reports no violation (the pairs are not watched)
    assert solver.solve_velocity(q).status == SolverStatus.SUCCESS


@pytest.mark.parametrize("robot_kind", ["no geometry", "no self pairs"])
def test_the_viewers_solver_keeps_a_robot_without_self_pairs_off_the_scene(robot_kind):
    """A robot without collision geometry carrying a part, or a one-link arm with geometry
    but no pair of its own: the viewer's solver had no collision constraint (it looked at
    the robot's own pairs only), and dragging went 7.5 cm into the post. The part, or the
    link, keeps ``min_distance`` from it (coal, at every step)."""
    import coal

    from stackik.cli.view import view_solver

    geometry = (
        ""
        if robot_kind == "no geometry"
        else (
            '<collision><origin xyz="0.25 0 0"/><geometry><box size="0.5 0.05 0.05"/>'
            "</geometry></collision>"
        )
    )
    urdf = f"""<robot name="arm"><link name="base"/>
      <link name="arm">{geometry}<inertial><mass value="1"/>
        <inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <link name="tip"/>
      <joint name="yaw" type="revolute"><parent link="base"/><child link="arm"/>
        <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="2"/></joint>
      <joint name="tip_joint" type="fixed"><parent link="arm"/><child link="tip"/>
        <origin xyz="0.5 0 0"/></joint></robot>"""
    robot = RobotModel.from_urdf_string(urdf)
    post = np.eye(4)
    post[:3, 3] = (0.0, 0.5, 0.0)
    robot.add_obstacle("post", coal.Box(0.1, 0.1, 1.0), post)
    shape = coal.Box(0.5, 0.05, 0.05)
    if robot_kind == "no geometry":
        held = np.eye(4)
        held[0, 3] = 0.25
        robot.attach_object("part", "arm", shape, held)
    solver = view_solver(robot, ["tip"], 0.01)
    assert "collision" in [c.name for c in solver.constraints]
    quarter = pin.rpy.rpyToMatrix(0.0, 0.0, np.pi / 2)
    solver.get_task("tip").set_target_pose(np.array([0.0, 0.5, 0.0]), quarter)  # the post
    q, closest = np.zeros(1), np.inf
    for _ in range(200):
        q = robot.integrate(q, solver.solve_velocity(q).solution, solver.dt)
        yaw = pin.SE3(pin.rpy.rpyToMatrix(0.0, 0.0, float(q[0])), np.zeros(3))
        bar = yaw * pin.SE3(np.eye(3), np.array([0.25, 0.0, 0.0]))
        d = coal.distance(
            shape, coal.Transform3s(bar.rotation, bar.translation),
            coal.Box(0.1, 0.1, 1.0), coal.Transform3s(np.eye(3), post[:3, 3]),
            coal.DistanceRequest(), coal.DistanceResult(),
        )  # fmt: skip
        closest = min(closest, d)
    assert 0.01 - 1e-4 <= closest < 0.0105


def test_a_bad_scene_is_one_line_and_exit_code_1(tmp_path):
    bad = write(tmp_path / "bad.yaml", "obstacles:\n  - name: table\n    box: [1.0, 0.8]\n")
    res = run("view", PANDA, "--scene", bad, "--port", "0", "--duration", "0")
    assert res.exit_code == 1
    line = one_line(res.output)
    assert line.startswith("error: MalformedScene") and "obstacles[0] ('table')" in line
    assert "box must be 3 finite numbers" in line
    # A YAML syntax error: the parser's report spans lines; the error stays on one.
    broken = write(tmp_path / "broken.yaml", "obstacles: [\n  - name: x\n")
    res = run("view", PANDA, "--scene", broken, "--port", "0", "--duration", "0")
    assert res.exit_code == 1
    assert one_line(res.output).startswith("error: MalformedScene") and "line 2" in res.output
    res = run("view", PANDA, "--scene", tmp_path / "none.yaml", "--port", "0", "--duration", "0")
    assert res.exit_code == 1 and one_line(res.output).startswith("error: RobotFileNotFound")
    # An attached object on a link the robot lacks.
    text = "attached:\n  - {name: tool, link: nope, sphere: 0.02}\n"
    res = run("view", PANDA, "--scene", write(tmp_path / "a.yaml", text), "--port", "0")
    line = one_line(res.output)
    assert res.exit_code == 1 and line.startswith("error: MalformedScene")
    assert "attached[0] ('tool'): unknown frame 'nope'" in line
    res = run("--debug", "view", PANDA, "--scene", bad, "--port", "0", "--duration", "0")
    assert type(res.exception).__name__ == "MalformedScene"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            "obstacles:\n  - {name: a, box: [1, 1, 1], 1: 2, colour: red}\n",
            ["obstacles[0] ('a')", "unknown keys ['colour', 1]"],
        ),
        ("obstacles: []\n~: 1\n", ["top level", "[None]"]),
        ("obstacles:\n  - {name: a, box: &x [*x, 1, 1]}\n", ["anchors and aliases", "line 2"]),
    ],
)
def test_scene_keys_and_aliases_are_one_line_errors(tmp_path, text, words):
    """Keys that are not text and YAML aliases are the scene's one-line error in
    ``check`` (a finding) and ``view`` (exit code 1), never a traceback."""
    scene = write(tmp_path / "cell.yaml", text)
    res = run("check", PANDA, "--samples", "0", "--scene", scene)
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit), res.exception
    line = next(ln for ln in res.output.splitlines() if ln.startswith("error [scene]"))
    assert "MalformedScene" in line
    for w in words:
        assert w in " ".join(res.output.split())
    res = run("view", PANDA, "--scene", scene, "--port", "0", "--duration", "0")
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit), res.exception
    line = one_line(res.output)
    assert line.startswith("error: MalformedScene")
    for w in words:
        assert w in line


def coal_distance(robot: RobotModel, q: np.ndarray, geometry: str, obstacle: str) -> float:
    """coal's signed distance of a robot geometry at ``q`` to an obstacle (Pinocchio placements)."""
    import coal
    import pinocchio as pin

    gm = robot.collision_model
    g = gm.getGeometryId(geometry)
    T = robot.world.get_obstacle_pose(obstacle)
    data, gd = robot.model.createData(), pin.GeometryData(gm)
    pin.updateGeometryPlacements(robot.model, data, gm, gd, q)
    req, res = coal.DistanceRequest(), coal.DistanceResult()
    req.enable_signed_distance = True
    M = gd.oMg[g]
    return coal.distance(
        gm.geometryObjects[g].geometry, coal.Transform3s(M.rotation, M.translation),
        robot.world.get_obstacle(obstacle).geometry, coal.Transform3s(T.rotation, T.translation),
        req, res,
    )  # fmt: skip


def coal_distance_rates(robot: RobotModel, q: np.ndarray, geometry: str, obstacle: str):
    """Central differences of coal's signed distance per joint."""
    h = 1e-6
    return np.array([
        (coal_distance(robot, q + h * e, geometry, obstacle)
         - coal_distance(robot, q - h * e, geometry, obstacle)) / (2 * h)
        for e in np.eye(robot.model.nv)
    ])  # fmt: skip


def test_check_loads_the_scene_and_reports_its_contacts(tmp_path):
    scene = write(tmp_path / "cell.yaml", CELL)
    res = run("check", PANDA, "--srdf", PANDA_SRDF, "--samples", "0", "--scene", scene)
    assert res.exit_code == 0 and "no problem found" in res.output, res.output
    # A box through the base: every base geometry inside it is reported, at its depth;
    # and a ball in the hand.
    hand = RobotModel(PANDA, load_visuals=False)
    hand.update_kinematics(hand.neutral_configuration())
    x, y, z = hand.get_frame_pose("panda_hand").translation
    text = (
        "obstacles:\n  - {name: block, box: [0.3, 0.3, 0.3], pose: {xyz: [0, 0, 0.1]}}\n"
        f"  - {{name: ball, sphere: 0.03, pose: {{xyz: [{x}, {y}, {z}]}}}}\n"
    )
    scene = write(tmp_path / "block.yaml", text)
    with warnings.catch_warnings(record=True) as raised:
        warnings.simplefilter("always")
        res = run("check", PANDA, "--srdf", PANDA_SRDF, "--samples", "0", "--scene", scene)
    assert res.exit_code == 0, res.output  # warnings
    # (the base's contacts are findings with their exclusion, not a Python warning too)
    assert not [w for w in raised if issubclass(w.category, stackik.FixedPairWarning)]
    robot = RobotModel(PANDA, srdf_path=PANDA_SRDF, load_visuals=False)
    robot.load_scene(scene)
    q0 = robot.neutral_configuration()
    inside = [
        i for i in stackik.KinematicsSolver(robot).evaluate_collision_debug_list(q0)
        if i.geometry_b == "block" and i.distance <= 0.0
    ]  # fmt: skip
    assert inside
    text = " ".join(res.output.split())
    for info in inside:
        assert (
            f"warning [scene] {info.geometry_a} / block is in collision at the neutral "
            f"configuration (depth {-1e3 * info.distance:.1f} mm)"
        ) in text
        # a pair no joint velocity moves apart (coal's distance has zero derivatives:
        # the base's pairs, and a link that turns about the block's normal) gets its
        # exclusion; the others do not
        hint = (
            "cannot push it out: exclude it if the contact is intended, "
            f"exclude_pairs=[('{info.geometry_a}', 'block')]"
        )
        fixed = np.abs(coal_distance_rates(robot, q0, info.geometry_a, "block")).max() < 1e-7
        assert (hint in text) == fixed, info.geometry_a
    assert any(i.geometry_a.startswith("panda_link0_") for i in inside)
    in_ball = [
        i for i in stackik.KinematicsSolver(robot).evaluate_collision_debug_list(q0)
        if i.geometry_b == "ball" and i.distance <= 0.0
    ]  # fmt: skip
    assert in_ball
    for info in in_ball:  # the hand moves out of the ball: no exclusion offered
        assert np.abs(coal_distance_rates(robot, q0, info.geometry_a, "ball")).max() > 1e-3
        assert f"{info.geometry_a} / ball is in collision" in text
        assert f"exclude_pairs=[('{info.geometry_a}', 'ball')]" not in text
    assert run("check", PANDA, "--srdf", PANDA_SRDF, "--samples", "0", "--scene", scene,
               "--strict").exit_code == 1  # fmt: skip
    # A scene that does not load is an error of the report.
    bad = write(tmp_path / "bad.yaml", "obstacles:\n  - name: table\n    sphere: -1\n")
    res = run("check", PANDA, "--samples", "0", "--scene", bad)
    assert res.exit_code == 1
    line = next(ln for ln in res.output.splitlines() if ln.startswith("error [scene]"))
    assert "MalformedScene" in line and "obstacles[0] ('table')" in line
