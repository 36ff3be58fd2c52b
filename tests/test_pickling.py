"""Every description pickles and comes back computing exactly what the original computes.

Pinocchio's own serialization drops a mimic joint's extended velocity size (the
restored model crashes the process in its first kinematics pass), and coal's geometry
pickling breaks when a second copy of coal is loaded (EmbodiK ships one). Round trips
that could crash run in a child process, so a regression fails the test instead of
ending the run.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from stackik import KinematicsSolver, RobotModel

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
ROBOTS = ROOT / "robots"

DESCRIPTIONS = [
    ("panda", ROBOTS / "panda" / "panda.urdf", ROBOTS / "panda" / "panda.srdf"),
    ("ur5", ROBOTS / "ur5" / "ur5.urdf", ROBOTS / "ur5" / "ur5.srdf"),
    ("humanoid", ROBOTS / "humanoid" / "humanoid.urdf", ROBOTS / "humanoid" / "humanoid.srdf"),
    ("dual_arm", ROBOTS / "dual_arm" / "dual_arm.urdf", ROBOTS / "dual_arm" / "dual_arm.srdf"),
    ("multi_arm", ROBOTS / "multi_arm" / "multi_arm.urdf", ROBOTS / "multi_arm" / "multi_arm.srdf"),
    ("opw_arm", ROBOTS / "opw_arm" / "opw_arm.urdf", ROBOTS / "opw_arm" / "opw_arm.srdf"),
    (
        "spherical_arm",
        ROBOTS / "spherical_arm" / "spherical_arm.urdf",
        ROBOTS / "spherical_arm" / "spherical_arm.srdf",
    ),
    ("gripper", DATA / "gripper.urdf", None),
    ("mimic_chain", DATA / "mimic.urdf", None),
]


def load(path: Path, srdf: Path | None, mimic: str) -> RobotModel:
    floating = path.parent.name == "humanoid"
    return RobotModel(path, floating_base=floating, srdf_path=srdf, mimic=mimic)


def assert_same_robot(a: RobotModel, b: RobotModel, seed: int = 3) -> None:
    """Same sizes, and at random configurations the same frames, Jacobians and distances."""
    assert (a.nq, a.nv, a.mimic_layout) == (b.nq, b.nv, b.mimic_layout)
    assert a.get_frame_names() == b.get_frame_names()
    assert a.get_collision_pair_names() == b.get_collision_pair_names()
    rng = np.random.default_rng(seed)
    for _ in range(3):
        q = a.random_configuration(rng)
        for r in (a, b):
            r.update_kinematics(q)
        for frame in a.get_frame_names()[-3:]:
            np.testing.assert_array_equal(
                a.get_frame_pose(frame).homogeneous, b.get_frame_pose(frame).homogeneous
            )
            np.testing.assert_array_equal(
                a.get_frame_jacobian(frame, "world"), b.get_frame_jacobian(frame, "world")
            )
        if a.has_collision_geometry():
            np.testing.assert_array_equal(
                a.compute_collision_distances(), b.compute_collision_distances()
            )


@pytest.mark.parametrize("mimic", ["fold", "keep"])
@pytest.mark.parametrize(("name", "path", "srdf"), DESCRIPTIONS, ids=[d[0] for d in DESCRIPTIONS])
def test_every_description_round_trips(name: str, path: Path, srdf: Path | None, mimic: str):
    robot = load(path, srdf, mimic)
    copy = pickle.loads(pickle.dumps(robot))
    assert_same_robot(robot, copy)


def test_xacro_description_round_trips():
    robot = RobotModel.from_xacro(ROBOTS / "planar_arm" / "planar_arm.urdf.xacro")
    assert_same_robot(robot, pickle.loads(pickle.dumps(robot)))


def test_folded_mimic_model_matches_pinocchio_after_a_round_trip():
    """The restored mimic joints move as Pinocchio's own model of the file does."""
    robot = RobotModel(DATA / "gripper.urdf", mimic="fold")
    assert len(robot.model.mimicking_joints) == 2
    copy = pickle.loads(pickle.dumps(robot))
    plain = pin.buildModelFromUrdf(str(DATA / "gripper.urdf"), mimic=True)
    data, data_copy = plain.createData(), copy.model.createData()
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = pin.randomConfiguration(plain)
        pin.computeJointJacobians(plain, data, q)
        pin.computeJointJacobians(copy.model, data_copy, q)
        for j in range(plain.njoints):
            np.testing.assert_allclose(
                data.oMi[j].homogeneous, data_copy.oMi[j].homogeneous, atol=1e-15
            )
        frame = plain.getFrameId("right_finger")
        np.testing.assert_allclose(
            pin.getFrameJacobian(plain, data, frame, pin.WORLD),
            pin.getFrameJacobian(copy.model, data_copy, frame, pin.WORLD),
            atol=1e-15,
        )
        rng.random()


_UNALIGNED = """<robot name="hand">
  <link name="palm"/><link name="a"/><link name="b"/><link name="c"/><link name="d"/>
  <joint name="lead" type="revolute"><parent link="palm"/><child link="a"/>
    <axis xyz="0 -1 -4.37114e-08"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="f1" type="revolute"><parent link="a"/><child link="b"/>
    <origin xyz="0 0 0.05"/><axis xyz="0.3 -1 0.2"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/><mimic joint="lead"/></joint>
  <joint name="f2" type="revolute"><parent link="b"/><child link="c"/>
    <origin xyz="0 0 0.05"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>
    <mimic joint="lead" multiplier="0.7" offset="0.1"/></joint>
  <joint name="f3" type="prismatic"><parent link="c"/><child link="d"/>
    <origin xyz="0 0 0.05"/><axis xyz="0 0.6 0.8"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/><mimic joint="lead"/></joint>
</robot>"""


def test_folded_followers_of_every_axis_kind_round_trip_bit_for_bit():
    """Aligned followers keep their joint class, unaligned ones their axis exactly (read
    from the joint's velocity, not from finite differences): poses and Jacobians equal."""
    robot = RobotModel.from_urdf_string(_UNALIGNED, mimic="fold")
    assert len(robot.model.mimicking_joints) == 3
    copy = pickle.loads(pickle.dumps(robot))
    rng = np.random.default_rng(3)
    for _ in range(5):
        q = robot.random_configuration(rng)
        robot.update_kinematics(q)
        copy.update_kinematics(q)
        for frame in ("b", "c", "d"):
            a, b = robot.get_frame_pose(frame), copy.get_frame_pose(frame)
            assert np.array_equal(a.homogeneous, b.homogeneous), frame
            assert np.array_equal(
                robot.get_frame_jacobian(frame, "world"), copy.get_frame_jacobian(frame, "world")
            ), frame


def _child(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT
    )


def test_plain_pinocchio_mimic_model_pickles_in_a_child_process():
    """With stackik imported, a bare ``pinocchio.Model`` with mimic joints round-trips."""
    code = (
        "import pickle, numpy as np, pinocchio as pin, stackik\n"
        f"m = pin.buildModelFromUrdf({str(DATA / 'gripper.urdf')!r}, mimic=True)\n"
        "c = pickle.loads(pickle.dumps(m))\n"
        "d = c.createData(); q = pin.neutral(c); pin.computeJointJacobians(c, d, q)\n"
        "print(c.nq, c.nv, c.nvExtended, c == m or 'types differ')\n"
    )
    done = _child(code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[:3] == ["8", "8", "10"]


def test_robot_pickles_with_embodik_loaded():
    """EmbodiK's own copy of coal breaks coal's geometry registry; stackik does not use it."""
    pytest.importorskip("embodik")
    code = (
        "import embodik, pickle, stackik\n"
        f"r = stackik.RobotModel({str(ROBOTS / 'panda' / 'panda.urdf')!r}, mimic='fold')\n"
        "c = pickle.loads(pickle.dumps(r))\n"
        "print(len(c.get_collision_pair_names()) == len(r.get_collision_pair_names()))\n"
    )
    done = _child(code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "True"


class _Unpicklable:
    def __reduce__(self):
        raise AssertionError("a query pickled the robot")


def test_collision_debug_never_pickles():
    """``evaluate_collision_debug`` probes on its own state, not on a pickled copy."""
    robot = RobotModel(ROBOTS / "panda" / "panda.urdf", srdf_path=ROBOTS / "panda" / "panda.srdf")
    solver = KinematicsSolver(robot)
    solver.configure_collision_constraint(0.01)
    robot.poison = _Unpicklable()  # any pickle of the robot now raises
    q = robot.random_configuration(2)
    info = solver.evaluate_collision_debug(q)
    assert info is not None
    assert info.distance == pytest.approx(tight_min_distance(robot, q), abs=1e-9)


def tight_min_distance(robot: RobotModel, q: np.ndarray) -> float:
    """coal over the robot's active pairs, with a GJK tolerance tighter than its default."""
    gd = pin.GeometryData(robot.collision_model)
    for req in gd.distanceRequests:
        req.enable_signed_distance = True
        req.gjk_tolerance = 1e-10
    pin.computeDistances(robot.model, robot.model.createData(), robot.collision_model, gd, q)
    return min(r.min_distance for r in gd.distanceResults)
