"""Run every example headless (``--headless`` and ``STACKIK_HEADLESS=1``): they are
documentation that must work, and each claims something its output must show."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def run_example(name: str, *args: str) -> str:
    env = dict(os.environ)
    env["STACKIK_HEADLESS"] = "1"
    # The checkout's package, whatever stackik the interpreter has installed.
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "python"), *filter(None, [env.get("PYTHONPATH")])]
    )
    res = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name), "--headless", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert res.returncode == 0, f"{name} failed:\n{res.stdout}\n{res.stderr}"
    return res.stdout


def number(pattern: str, text: str) -> float:
    """The first number captured by ``pattern`` in ``text``."""
    match = re.search(pattern, text)
    assert match, f"{pattern!r} not in:\n{text}"
    return float(match.group(1))


#: Examples with a test of their own below (the others are only run).
CHECKED = {
    "demo.py",
    "velocity_ik.py",
    "self_collision.py",
    "humanoid_balance.py",
    "dual_arm.py",
    "global_ik.py",
    "cartesian_path.py",
    "viewer.py",
    "viewer_scene.py",
    "teleop.py",
    "reach_study.py",
    "capability_map.py",
}


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_says_what_it_shows_and_runs_headless(path):
    text = path.read_text()
    doc = text.split('"""')[1]
    assert len(doc.splitlines()[0]) > 20, f"{path.name}: a docstring saying what it shows"
    assert "--headless" in text, f"{path.name}: accepts --headless"
    if path.name not in CHECKED:
        assert run_example(path.name).strip()


def test_demo_runs_and_reports():
    out = run_example("demo.py", "--steps", "300")
    assert "loaded RobotModel('panda'" in out
    assert "joints inside limits all along: True" in out
    err = float(out.split("position error ")[1].split(" m")[0])
    assert err < 1e-5  # it reached the target


def test_velocity_ik_keeps_priorities():
    out = run_example("velocity_ik.py")
    assert number(r"differs by (\S+)", out) < 1e-9  # the posture leaves the tool alone
    assert "status SUCCESS" in out
    assert number(r"tool error (\S+)", out) < 1e-5
    assert number(r"posture error (\S+) rad", out) > 0.1  # it cannot have everything
    assert "inside the joint limits: True" in out


def test_self_collision_keeps_the_distance():
    out = run_example("self_collision.py")
    without, with_ = out.split("with min_distance")
    assert number(r"on the way: (\S+) mm", without) < 0.0  # links pass through each other
    assert number(r"on the way: (\S+) mm", with_) >= 20.0 - 0.1
    assert number(r"tool (\S+) mm from the target", with_) > 10.0  # stops short


def test_humanoid_keeps_its_balance():
    out = run_example("humanoid_balance.py")
    without, with_ = out.split("with the CoM constraint")
    assert "left the support polygon" in without
    assert "stayed inside the support polygon" in with_
    assert out.count("status SUCCESS") == 2


def test_dual_arm_carries_the_box():
    out = run_example("dual_arm.py")
    assert number(r"left hand (\S+) mm from its target", out) < 1.0
    assert number(r"right hand moved (\S+) cm", out) > 10.0
    assert number(r"within (\S+) mm", out) < 5.5  # bounds 5 mm (velocity level)


def test_global_ik_finds_the_branches():
    out = run_example("global_ik.py")
    found = re.findall(r"code (\d) \([^)]*\): \S+ rad away", out)
    assert len(set(found)) >= 5
    assert "64 +-2 pi variants" in out


def test_cartesian_path_is_straight():
    out = run_example("cartesian_path.py")
    assert "status SUCCESS: 31 of 31 points" in out
    assert number(r"off the line by (\S+) m", out) < 1e-5
    assert number(r"tilted (\S+) rad", out) < 1e-4


def test_viewer_example_serves_and_follows():
    pytest.importorskip("viser")
    out = run_example("viewer.py")
    assert "the robot followed the target" in out
    assert number(r"tool error (\S+),", out) < 1e-4


def test_viewer_scene_example_avoids_and_drags_the_post():
    pytest.importorskip("viser")
    out = run_example("viewer_scene.py")
    assert "scene: ['table', 'post', 'floor']" in out
    # The post stops the arm min_distance (10 mm) away, well short of the target.
    assert 10.0 - 0.2 <= number(r"is (\S+) mm from it", out) <= 12.0
    assert number(r"tool (\S+) m short", out) > 0.05
    assert number(r"the page shows (\d+) segments to the post", out) >= 1
    # Its gizmo moved it (a drag), and then the arm got there.
    assert "post dragged to [ 0.45 -0.45  0.55]" in out
    assert "the tool reached the target: True" in out
    assert number(r"tool error (\S+) m", out) < 1e-4
    assert "obstacles drawn: ['floor', 'post', 'table']" in out


def test_teleop_runs_headless_and_its_stream_passes_the_controller_checks(tmp_path):
    args = ["--seconds", "1.5"]
    try:
        import matplotlib  # noqa: F401  (the plot extra)

        args += ["--plot", str(tmp_path / "teleop.png")]
    except ImportError:
        pass
    out = run_example("teleop.py", *args)
    assert "deadline misses" in out and "period jitter p99" in out
    assert "libfranka limits respected on every tick: True" in out
    assert "joint position limits respected on every tick: True" in out
    assert number(r"watchdog stops (\d+)", out) >= 1  # the device stopped: the arm stopped
    assert number(r"'HOLDING': (\d+)", out) > 0
    closest = number(r"closest collision pair distance: (\S+) mm", out)
    assert closest > 0.0  # collision-free (the loop's tests check the 20 mm margin)
    if "--plot" in args:
        assert (tmp_path / "teleop.png").stat().st_size > 10_000


def test_reach_study_compares_two_placements(tmp_path):
    out = run_example("reach_study.py", "--figures", str(tmp_path), "--workers", "2")
    assert "targets on workpiece.stl" in out and "gained in moved" in out
    for name in ("reach_study.png", "reach_compare.png"):
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"


def test_capability_map_ranks_base_placements(tmp_path):
    out = run_example("capability_map.py", "--figures", str(tmp_path), "--workers", "2")
    assert "CapabilityMap('panda_hand_tcp'" in out
    assert number(r"checked with IK from that base: (\S+) %", out) > 50.0
    for name in ("capability_map_z.png", "capability_map_y.png"):
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"
