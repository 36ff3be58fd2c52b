"""The benchmarks' generated 30-joint humanoid (``benchmarks/humanoid30.py``).

The issue's p99 target is stated for "a 30-joint humanoid with about 900 active
self-collision pairs"; these tests check that the generated description is one, with
Pinocchio and coal called directly (not through stackik's pair bookkeeping).
"""

from __future__ import annotations

import importlib.util
import itertools
import xml.etree.ElementTree as ET
from pathlib import Path

import coal
import numpy as np
import pinocchio as pin
import pytest

import stackik

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "humanoid30.py"


@pytest.fixture(scope="module")
def h30():
    spec = importlib.util.spec_from_file_location("humanoid30", BENCH)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.fixture(scope="module")
def files(h30, tmp_path_factory):
    return h30.write(tmp_path_factory.mktemp("h30"))


def _independent_pairs(urdf: Path, srdf: Path) -> tuple[pin.Model, pin.GeometryModel, list]:
    """Pairs off the same or adjacent bodies, minus the SRDF's link pairs (Pinocchio only)."""
    model = pin.buildModelFromUrdf(str(urdf))
    geom = pin.buildGeomFromUrdf(model, str(urdf), pin.GeometryType.COLLISION)
    disabled = {
        frozenset((e.get("link1"), e.get("link2")))
        for e in ET.parse(srdf).getroot().iter("disable_collisions")
    }
    objs = geom.geometryObjects
    out = []
    for i, j in itertools.combinations(range(len(objs)), 2):
        a, b = objs[i].parentJoint, objs[j].parentJoint
        if a == b or model.parents[a] == b or model.parents[b] == a:
            continue
        links = frozenset(model.frames[o.parentFrame].name for o in (objs[i], objs[j]))
        if links not in disabled:
            out.append((i, j))
    return model, geom, out


def test_thirty_joints_and_about_900_pairs(h30, files) -> None:
    urdf, srdf, close = files
    model, _, pairs = _independent_pairs(urdf, srdf)
    assert model.nq == model.nv == 30
    revolute = {"JointModelRX", "JointModelRY", "JointModelRZ"}
    assert {j.shortname() for j in model.joints[1:]} <= revolute
    assert 850 <= len(pairs) <= 950
    robot = stackik.RobotModel(urdf, srdf_path=srdf, load_visuals=False)
    assert robot.nv == 30
    assert len(robot.collision.pair_names()) == len(pairs)  # type: ignore[union-attr]
    assert close == len(ET.parse(srdf).getroot().findall("disable_collisions"))


def test_start_configuration_keeps_every_pair_apart(h30, files) -> None:
    """At the start, every active pair is at least ``CLOSE`` apart (coal on Pinocchio)."""
    urdf, srdf, _ = files
    model, geom, pairs = _independent_pairs(urdf, srdf)
    robot = stackik.RobotModel(urdf, srdf_path=srdf, load_visuals=False)
    q = h30.start_configuration(robot)
    data, gdata = model.createData(), pin.GeometryData(geom)
    pin.updateGeometryPlacements(model, data, geom, gdata, q)
    req, res = coal.DistanceRequest(), coal.DistanceResult()
    d = []
    for i, j in pairs:
        Ti = coal.Transform3s(gdata.oMg[i].rotation, gdata.oMg[i].translation)
        Tj = coal.Transform3s(gdata.oMg[j].rotation, gdata.oMg[j].translation)
        objs = geom.geometryObjects
        d.append(coal.distance(objs[i].geometry, Ti, objs[j].geometry, Tj, req, res))
    assert min(d) >= h30.CLOSE
    robot.update_kinematics(q)
    assert robot.compute_min_collision_distance() == pytest.approx(min(d), abs=1e-6)
    assert np.isfinite(d).all()
