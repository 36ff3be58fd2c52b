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


def test_teleop_runs_headless_and_its_stream_passes_the_controller_checks(tmp_path):
    env = {**os.environ, "STACKIK_HEADLESS": "1"}
    command = [sys.executable, str(ROOT / "examples" / "teleop.py"), "--seconds", "1.5"]
    try:
        import matplotlib  # noqa: F401  (the plot extra)

        command += ["--plot", str(tmp_path / "teleop.png")]
    except ImportError:
        pass
    out = subprocess.run(
        command, capture_output=True, text=True, timeout=300, check=True, env=env
    ).stdout
    assert "deadline misses" in out and "period jitter p99" in out
    assert "libfranka limits respected on every tick: True" in out
    assert "joint position limits respected on every tick: True" in out
    closest = float(out.split("closest collision pair distance: ")[1].split(" mm")[0])
    assert closest > 0.0  # collision-free (the loop's tests check the 20 mm margin)
    if "--plot" in command:
        assert (tmp_path / "teleop.png").stat().st_size > 10_000
