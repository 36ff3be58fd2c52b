"""Teleoperation in a changing world: a person walks past a working Panda.

The scene of ``examples/teleop_person.py``: ten capsules moved by a sensor thread while
the 1 kHz loop runs. Every commanded configuration of a deterministic run (4500 ticks,
the sensor between ticks) is checked with coal on Pinocchio's forward kinematics, against
the world snapshot the loop read at that tick: never closer than ``min_distance``; the
threaded run (the sensor in its own thread at 1 kHz) is checked at 300 evenly spaced
ticks.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "teleop_person.py"


@pytest.fixture(scope="module")
def scene():
    spec = importlib.util.spec_from_file_location("teleop_person", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["teleop_person"] = module
    spec.loader.exec_module(module)
    return module


def test_every_commanded_configuration_keeps_clear_of_the_person(scene):
    out = scene.run(4.5, threaded=False, sensor_hz=500.0)
    record = out["record"]
    assert len(record["q"]) == 4500
    assert out["versions"] > 50  # the world changed under the loop
    d = scene.closest_distances(out["robot"], record["q"], record["world"])
    assert d.min() >= scene.MIN_DISTANCE - 1e-4
    assert d.min() < scene.MIN_DISTANCE + 0.01  # the person came close: the arm gave way
    lag = out["lag"]
    assert lag.max() > 0.03  # the tool left its circle ...
    assert lag[-1] < 0.005  # ... and went back to it


def test_the_loop_runs_while_a_thread_moves_obstacles_at_1khz(scene):
    out = scene.run(1.5, threaded=True, sensor_hz=1000.0)
    loop = out["loop"]
    assert loop.ticks >= 1500 and not loop.is_running
    stats = loop.stats
    assert stats.ticks >= 1500
    record = out["record"]
    step = max(1, len(record["q"]) // 300)
    d = scene.closest_distances(out["robot"], record["q"][::step], record["world"][::step])
    assert np.all(np.isfinite(d)) and d.min() >= scene.MIN_DISTANCE - 1e-4
