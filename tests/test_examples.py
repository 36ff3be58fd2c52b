"""Smoke-run the examples headless for a few steps: they are documentation that must work."""

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
