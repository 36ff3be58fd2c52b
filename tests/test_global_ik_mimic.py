"""Global IK on a robot loaded with ``mimic="keep"``: every candidate is coupled.

The robot is the shipped UR5 with, written inline, a two-finger gripper on ``tool0``
(``finger_b_joint`` mimics ``finger_a_joint``) and a cable guide on the base that turns
at half the shoulder's angle (``guide_joint`` mimics ``shoulder_pan_joint``, multiplier
0.5, offset 0.1). References are independent of the solver: Pinocchio's plain model of
the same text (``pin.buildModelFromXML``: the keep layout is Pinocchio's) on a fresh
``Data``, and the UR5's standard-DH closed form (tests/ur5_dh.py).

- find_configs (closed form, numeric, all_branches, include_alternates) and
  nearest_config return configurations whose followers equal ``m * leader + c``
  although ``reference_q`` holds them uncoupled, that reach the target by Pinocchio FK,
  and whose arm joints are branches of the DH closed form.
- A frame beyond a follower whose leader is off the chain (``finger_b_tip``): the
  follower is held at its coupled value and the search still reaches the target.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from stackik import KinematicsSolver, RobotModel
from ur5_dh import ur5_closed_form

UR5 = Path(__file__).resolve().parents[1] / "robots" / "ur5" / "ur5.urdf"
GRIPPER = """
  <link name="finger_a"/>
  <link name="finger_b"/>
  <link name="finger_b_tip"/>
  <link name="guide"/>
  <joint name="finger_a_joint" type="prismatic">
    <parent link="tool0"/><child link="finger_a"/><origin xyz="0 0.01 0.05"/>
    <axis xyz="0 1 0"/><limit lower="0" upper="0.04" effort="20" velocity="0.2"/>
  </joint>
  <joint name="finger_b_joint" type="prismatic">
    <parent link="tool0"/><child link="finger_b"/><origin xyz="0 -0.01 0.05"/>
    <axis xyz="0 -1 0"/><limit lower="0" upper="0.04" effort="20" velocity="0.2"/>
    <mimic joint="finger_a_joint"/>
  </joint>
  <joint name="finger_b_tip_joint" type="fixed">
    <parent link="finger_b"/><child link="finger_b_tip"/><origin xyz="0 0 0.04"/>
  </joint>
  <joint name="guide_joint" type="revolute">
    <parent link="base_link"/><child link="guide"/><origin xyz="0 0 0.05"/>
    <axis xyz="0 0 1"/><limit lower="-3.5" upper="3.5" effort="5" velocity="2"/>
    <mimic joint="shoulder_pan_joint" multiplier="0.5" offset="0.1"/>
  </joint>
</robot>"""
#: (follower, leader, multiplier, offset) as written above
RULES = [
    ("finger_b_joint", "finger_a_joint", 1.0, 0.0),
    ("guide_joint", "shoulder_pan_joint", 0.5, 0.1),
]
ARM = [
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
]


@pytest.fixture(scope="module")
def text() -> str:
    return UR5.read_text().replace("</robot>", GRIPPER)


@pytest.fixture(scope="module")
def robot(text) -> RobotModel:
    return RobotModel.from_urdf_string(text, mimic="keep", load_collisions=False)


@pytest.fixture(scope="module")
def plain(text) -> pin.Model:
    return pin.buildModelFromXML(text)


def index(model: pin.Model, name: str) -> int:
    return model.joints[model.getJointId(name)].idx_q


def fk(model: pin.Model, q: np.ndarray, frame: str) -> pin.SE3:
    data = model.createData()
    pin.framesForwardKinematics(model, data, q)
    return data.oMf[model.getFrameId(frame)]


def assert_coupled(plain: pin.Model, q: np.ndarray) -> None:
    for follower, leader, m, c in RULES:
        assert q[index(plain, follower)] == pytest.approx(
            m * q[index(plain, leader)] + c, abs=1e-12
        )


def assert_reaches(plain: pin.Model, q: np.ndarray, frame: str, T: pin.SE3) -> None:
    err = T.actInv(fk(plain, q, frame))
    assert np.linalg.norm(err.translation) < 1e-4
    assert np.linalg.norm(pin.log3(err.rotation)) < 1e-3
    lo, hi = plain.lowerPositionLimit, plain.upperPositionLimit
    assert np.all(q >= lo - 1e-9) and np.all(q <= hi + 1e-9)


def uncoupled_reference(robot: RobotModel, plain: pin.Model) -> np.ndarray:
    """A reference whose followers are far from their coupled values."""
    q = robot.neutral_configuration()
    q[[index(plain, n) for n in ARM]] = [0.2, -1.0, 1.2, -0.4, 1.0, 0.3]
    q[index(plain, "finger_a_joint")] = 0.03
    q[index(plain, "finger_b_joint")] = 0.0
    q[index(plain, "guide_joint")] = -1.0
    return q


def target(robot: RobotModel, plain: pin.Model, frame: str) -> tuple[pin.SE3, np.ndarray]:
    q = robot.neutral_configuration()
    q[[index(plain, n) for n in ARM]] = [0.5, -1.3, 1.6, -0.9, 1.3, 0.7]
    q[index(plain, "finger_a_joint")] = 0.03
    for follower, leader, m, c in RULES:
        q[index(plain, follower)] = m * q[index(plain, leader)] + c
    return fk(plain, q, frame), q


def dh_branches(T: pin.SE3) -> list[np.ndarray]:
    return [np.asarray(q) for _, q in ur5_closed_form(T.homogeneous)]


def is_dh_branch(arm: np.ndarray, branches: list[np.ndarray]) -> bool:
    d = [np.abs((arm - b + math.pi) % (2 * math.pi) - math.pi).max() for b in branches]
    return min(d) < 1e-3


def test_the_description_keeps_its_followers(robot, plain):
    assert robot.nq == plain.nq == 9
    assert sorted(f for f, _, _, _ in robot.kept_mimic_joints) == sorted(f for f, *_ in RULES)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"max_solutions": 8},
        {"all_branches": True},
        {"all_branches": True, "include_alternates": True},
        {"all_branches": True, "analytic": False, "time_budget": None, "max_attempts": 64},
        {"max_solutions": 4, "analytic": False, "time_budget": None, "max_attempts": 64},
    ],
    ids=["one", "eight", "all", "alternates", "all-numeric", "numeric"],
)
def test_every_candidate_is_coupled(robot, plain, options):
    solver = KinematicsSolver(robot)
    T, _ = target(robot, plain, "tool0")
    ref = uncoupled_reference(robot, plain)
    res = solver.find_configs(T, "tool0", reference_q=ref, seed=0, **options)
    assert len(res) >= 1
    branches = dh_branches(T)
    arm_idx = [index(plain, n) for n in ARM]
    for q in res:
        assert_coupled(plain, q)
        assert_reaches(plain, q, "tool0", T)
        assert is_dh_branch(q[arm_idx], branches)
        # the gripper's leader is off the chain: held at the reference
        assert q[index(plain, "finger_a_joint")] == ref[index(plain, "finger_a_joint")]
    if options.get("all_branches") and not options.get("include_alternates"):
        # one configuration per DH branch, the same as on the plain UR5 (no gripper)
        ur5 = KinematicsSolver(RobotModel(UR5, load_collisions=False))
        alone = ur5.find_configs(T, "tool0", reference_q=ref[arm_idx], seed=0, **options)
        assert len(res) == len(alone)


def test_nearest_config_is_coupled(robot, plain):
    solver = KinematicsSolver(robot)
    T, _ = target(robot, plain, "tool0")
    q = solver.nearest_config(T, "tool0", reference_q=uncoupled_reference(robot, plain))
    assert q is not None
    assert_coupled(plain, q)
    assert_reaches(plain, q, "tool0", T)


def test_a_frame_beyond_a_follower_holds_it_at_its_coupled_value(robot, plain):
    solver = KinematicsSolver(robot)
    T, _ = target(robot, plain, "finger_b_tip")
    ref = uncoupled_reference(robot, plain)  # finger_a 0.03 as in the target, finger_b 0
    for options in ({"max_solutions": 4}, {"all_branches": True}):
        res = solver.find_configs(
            T, "finger_b_tip", reference_q=ref, time_budget=None, max_attempts=64, seed=0, **options
        )
        assert len(res) >= 1, options
        for q in res:
            assert_coupled(plain, q)
            assert_reaches(plain, q, "finger_b_tip", T)
            assert q[index(plain, "finger_b_joint")] == pytest.approx(0.03, abs=1e-12)
