"""The stackik command line: output against the library call it wraps, one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("typer")
from typer.testing import CliRunner

from stackik import RobotModel
from stackik.cli.app import app

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
