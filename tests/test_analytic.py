"""Closed-form solvers (stackik.analytic): detection, parameters, every branch, verification.

Every solution is checked against Pinocchio's forward kinematics on a fresh Data, and
the branch sets against references written independently of the solvers:

- UR5: the standard-DH closed form of tests/ur5_dh.py (Universal Robots' table);
- robots/opw_arm: the formulas of Brandstötter et al. (2014) on the generator's OPW
  table (tests/arm_references.py); its parameters must be read back from the URDF;
- robots/spherical_arm and other spherical wrists: damped Newton from many random
  starts on Pinocchio (tests/arm_references.py).
"""

from __future__ import annotations

import math
import pickle
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from arm_references import (
    OPW_ARM,
    OPW_ARM_SIGNS,
    OPW_ARM_ZERO,
    multistart_solutions,
    opw_arm_closed_form,
)
from stackik import InvalidInput, KinematicsSolver, RobotModel
from stackik.analytic import (
    AnalyticDetection,
    ChainGeometry,
    SphericalSolver,
    URSolver,
    analytic_ik,
    detect,
    verify,
    wrap_angles,
)
from test_global_ik import SPHERICAL_URDF
from ur5_dh import ur5_closed_form

ROBOTS = Path(__file__).resolve().parents[1] / "robots"


def load(name: str) -> pin.Model:
    return pin.buildModelFromUrdf(str(ROBOTS / name / f"{name}.urdf"))


def pose(model: pin.Model, q: np.ndarray, frame: str) -> np.ndarray:
    data = model.createData()
    pin.framesForwardKinematics(model, data, q)
    return data.oMf[model.getFrameId(frame)].homogeneous.copy()


def same_set(a: list[np.ndarray], b: list[np.ndarray], tol: float = 1e-7) -> bool:
    """Equal sets of configurations modulo 2 pi."""
    if len(a) != len(b):
        return False
    return all(min(np.abs(wrap_angles(x - y)).max() for y in b) < tol for x in a)


def check_branches(model, frame, solver, T, reference):
    Q, err = solver.solve(T)
    assert err.max() < 1e-9
    for q in Q:
        assert np.all(np.abs(q) <= math.pi)
        np.testing.assert_allclose(pose(model, q, frame), T, atol=1e-9)
    assert same_set(list(Q), list(reference))


# -- detection ---------------------------------------------------------------------------------
def test_each_arm_gets_its_family():
    cases = {
        ("ur5", "tool0"): "ur",
        ("opw_arm", "tool0"): "opw",
        ("spherical_arm", "tool0"): "spherical",
    }
    for (name, tip), family in cases.items():
        found = detect(load(name), tip)
        assert isinstance(found, AnalyticDetection) and found, (name, found.reasons)
        assert found.family == family and found.reasons[family] == ""
        assert "closed form verified" in str(found)
    spherical = detect(pin.buildModelFromXML(SPHERICAL_URDF), "tool")
    assert spherical.family == "opw"  # axes 2-3 parallel, 1-2 and 3-4 perpendicular


def test_declined_chains_say_why():
    panda = detect(load("panda"), "panda_hand_tcp")
    assert not panda and panda.solver is None and panda.family is None
    assert set(panda.reasons) == {"opw", "ur", "spherical"}
    assert all("7" in why for why in panda.reasons.values())
    assert "no closed form" in str(panda)
    ur5 = detect(load("ur5"), "tool0", families=("opw", "spherical"))
    assert not ur5
    assert "perpendicular" in ur5.reasons["opw"] and "meet" in ur5.reasons["spherical"]
    # an axis 1e-6 rad off parallel: no exact closed form
    text = (ROBOTS / "ur5" / "ur5.urdf").read_text()
    bent = text.replace(
        '<origin xyz="-0.425 0 0" rpy="0 0 0"/>', '<origin xyz="-0.425 0 0" rpy="1e-6 0 0"/>'
    )
    assert bent != text
    assert not detect(pin.buildModelFromXML(bent), "tool0", families=("ur",))
    with pytest.raises(InvalidInput, match="unknown closed-form"):
        detect(load("ur5"), "tool0", families=("dh",))


def test_ur5_parameters():
    prm = detect(load("ur5"), "tool0").solver.parameters
    assert prm["upper_arm"] == pytest.approx(0.425, abs=1e-12)
    assert prm["forearm"] == pytest.approx(0.39225, abs=1e-12)
    assert prm["lateral_offset"] == pytest.approx(0.10915, abs=1e-12)
    assert prm["wrist_offset"] == pytest.approx(0.09465, abs=1e-12)
    assert prm["flange"] == pytest.approx(0.0823, abs=1e-12)


def test_opw_parameters_are_read_from_the_urdf():
    solver = detect(load("opw_arm"), "tool0").solver
    prm = solver.parameters
    for key, value in OPW_ARM.items():
        assert prm[key] == pytest.approx(value, abs=1e-12), key
    np.testing.assert_allclose(prm["signs"], OPW_ARM_SIGNS)
    np.testing.assert_allclose(wrap_angles(np.array(prm["offsets"]) - OPW_ARM_ZERO), 0, atol=1e-12)
    np.testing.assert_allclose(prm["base"], np.eye(4), atol=1e-12)
    np.testing.assert_allclose(prm["flange_to_tip"], np.eye(4), atol=1e-12)


# -- every branch against the references ----------------------------------------------------
def test_ur5_branches_match_the_dh_closed_form():
    model = load("ur5")
    solver = detect(model, "tool0").solver
    rng = np.random.default_rng(1)
    counts = set()
    for _ in range(40):
        T = pose(model, rng.uniform(-math.pi, math.pi, 6), "tool0")
        reference = [wrap_angles(q) for _, q in ur5_closed_form(T)]
        check_branches(model, "tool0", solver, T, reference)
        counts.add(len(reference))
    assert 8 in counts


def test_opw_branches_match_the_paper():
    model = load("opw_arm")
    solver = detect(model, "tool0").solver
    rng = np.random.default_rng(2)
    for _ in range(40):
        T = pose(model, rng.uniform(-math.pi, math.pi, 6), "tool0")
        check_branches(model, "tool0", solver, T, opw_arm_closed_form(T))


@pytest.mark.parametrize(
    ("source", "tip", "case"),
    [("spherical_arm", "tool0", "general"), ("inline", "tool", "general")],
)
def test_spherical_branches_match_a_multistart_reference(source, tip, case):
    model = load(source) if source != "inline" else pin.buildModelFromXML(SPHERICAL_URDF)
    solver = detect(model, tip, families=("spherical",)).solver
    assert isinstance(solver, SphericalSolver) and solver.parameters["case"] == case
    rng = np.random.default_rng(3)
    for k in range(4):
        q = rng.uniform(-math.pi, math.pi, 6)
        T = pose(model, q, tip)
        check_branches(model, tip, solver, T, multistart_solutions(model, tip, T, 150, seed=k))


SHOULDER_VARIANTS = {
    # axes 1 and 2 meet (a Puma-like shoulder), axis 3 twisted: intersecting case
    "intersecting": (
        '<origin xyz="0.12 0 0.2" rpy="0 0 0"/>',
        '<origin xyz="0 0 0.2" rpy="0 0 0"/>',
    ),
    # axes 1 and 2 parallel (both vertical): parallel case
    "parallel": (
        '<axis xyz="0 1 0"/>\n    <limit lower="-2.6"',
        '<axis xyz="0 0 1"/>\n    <limit lower="-2.6"',
    ),
}


@pytest.mark.parametrize("case", sorted(SHOULDER_VARIANTS))
def test_spherical_shoulder_cases(case):
    old, new = SHOULDER_VARIANTS[case]
    text = (ROBOTS / "spherical_arm" / "spherical_arm.urdf").read_text()
    assert text.count(old) == 1
    model = pin.buildModelFromXML(text.replace(old, new))
    solver = detect(model, "tool0", families=("spherical",)).solver
    assert solver is not None and solver.parameters["case"] == case
    rng = np.random.default_rng(4)
    for k in range(4):
        T = pose(model, rng.uniform(-math.pi, math.pi, 6), "tool0")
        check_branches(model, "tool0", solver, T, multistart_solutions(model, "tool0", T, 150, k))


def test_unreachable_pose_has_no_branch():
    for name in ("ur5", "opw_arm", "spherical_arm"):
        solver = detect(load(name), "tool0").solver
        T = np.eye(4)
        T[:3, 3] = (5.0, 0.0, 0.5)
        Q, err = solver.solve(T)
        assert Q.shape == (0, 6) and err.shape == (0, 2)


# -- verification and frames --------------------------------------------------------------------
def test_verification_rejects_a_wrong_solver():
    model = load("ur5")
    good = detect(model, "tool0").solver
    assert verify(good, model) == ""
    prm = dict(good.parameters)
    prm["x5"] = (np.array(prm["x5"]) + np.array([0.0, 0.0, 1e-4])).tolist()
    why = verify(URSolver(good.geometry, prm), model)
    assert "branch misses the pose" in why or "sampled configuration" in why


def test_chain_from_a_base_frame_and_continuous_joints():
    text = (ROBOTS / "ur5" / "ur5.urdf").read_text()
    text = text.replace('type="revolute"', 'type="continuous"', 2)  # joints 1 and 2
    model = pin.buildModelFromXML(text, pin.JointModelFreeFlyer())
    found = detect(model, "tool0", "base_link")
    assert found.family == "ur" and found.solver.geometry.continuous[:3] == (True, True, False)
    data = model.createData()
    q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
    pin.framesForwardKinematics(model, data, q)
    T = data.oMf[model.getFrameId("base_link")].actInv(data.oMf[model.getFrameId("tool0")])
    Q, err = found.solver.solve(T)
    assert len(Q) and err.max() < 1e-9


def test_analytic_ik_on_a_robot_and_a_solver_and_pickling():
    robot = RobotModel(ROBOTS / "ur5" / "ur5.urdf", load_collisions=False)
    found = analytic_ik(robot, "tool0")
    assert found.family == "ur"
    solver = KinematicsSolver(robot)
    assert solver.analytic_ik("tool0").family == "ur"
    panda = KinematicsSolver(RobotModel(ROBOTS / "panda" / "panda.urdf", load_collisions=False))
    assert not panda.analytic_ik("panda_hand_tcp")
    copy = pickle.loads(pickle.dumps(found.solver))
    T = pose(robot.model, np.array([0.3, -1.2, 1.4, -0.6, 1.1, 0.4]), "tool0")
    np.testing.assert_array_equal(copy.solve(T)[0], found.solver.solve(T)[0])
    geometry = ChainGeometry.from_model(robot.model, "tool0")
    np.testing.assert_allclose(geometry.fk(np.zeros(6)), pose(robot.model, np.zeros(6), "tool0"))
