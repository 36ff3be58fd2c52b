"""Smoke-run the examples headless for a few steps: they are documentation that must work."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_demo_runs_and_reports():
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py"), "--steps", "300"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    assert "loaded RobotModel('panda'" in out
    assert "joints inside limits all along: True" in out
    err = float(out.split("position error ")[1].split(" m")[0])
    assert err < 1e-5  # it reached the target


def _run_headless(script: str, *args: str) -> str:
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / script), "--headless", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        env={**os.environ, "STACKIK_HEADLESS": "1"},
    ).stdout


def test_reach_study_example_runs_headless(tmp_path):
    out = _run_headless("reach_study.py", "--figures", str(tmp_path), "--workers", "2")
    assert "targets on workpiece.stl" in out and "gained in moved" in out
    for name in ("reach_study.png", "reach_compare.png"):
        assert (tmp_path / name).stat().st_size > 1000


def test_capability_map_example_runs_headless(tmp_path):
    out = _run_headless("capability_map.py", "--figures", str(tmp_path), "--workers", "2")
    assert "CapabilityMap('panda_hand_tcp'" in out and "checked with IK from that base" in out
    for name in ("capability_map_z.png", "capability_map_y.png"):
        assert (tmp_path / name).stat().st_size > 1000
