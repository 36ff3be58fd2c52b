"""Centre of mass and rigid-body dynamics of RobotModel.

The CoM is checked against Pinocchio and against a mass-weighted sum of link CoMs read
from the URDF; the dynamics terms against Pinocchio called directly and against each
other through ``tau = M(q) a + C(q, v) v + g(q)``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest

from stackik import RobotModel


def _link_inertials(urdf_text: str) -> dict[str, tuple[float, np.ndarray]]:
    out = {}
    for link in ET.fromstring(urdf_text).iter("link"):
        inertial = link.find("inertial")
        if inertial is None:
            continue
        origin = inertial.find("origin")
        c = np.zeros(3) if origin is None else np.array(origin.get("xyz").split(), dtype=float)
        out[link.get("name")] = (float(inertial.find("mass").get("value")), c)
    return out


def _vq(robot, seed):
    rng = np.random.default_rng(seed + 1000)
    return rng.uniform(-1, 1, robot.nv)


@pytest.fixture(params=[False, True], ids=["fixed", "floating"])
def robot(request, arm_path):
    return RobotModel(arm_path, floating_base=request.param)


# -- centre of mass -----------------------------------------------------------------------------
def test_total_mass(arm_path):
    # A fixed base's root link is welded to the world; Pinocchio leaves it out of the total.
    assert RobotModel(arm_path).get_total_mass() == pytest.approx(1.5 + 1.0 + 0.5)
    assert RobotModel(arm_path, True).get_total_mass() == pytest.approx(2.0 + 1.5 + 1.0 + 0.5)


@pytest.mark.parametrize("seed", range(4))
def test_com_position(robot, arm_text, rand_q, seed):
    q = rand_q(robot, seed)
    robot.update_kinematics(q)
    com = robot.get_com_position()
    np.testing.assert_allclose(
        com, pin.centerOfMass(robot.model, robot.model.createData(), q), atol=1e-14
    )
    # Mass-weighted sum of each link's URDF CoM placed by its frame pose.
    inertials = _link_inertials(arm_text)
    if not robot.is_floating_base:
        inertials.pop("base_link")
    total = sum(m for m, _ in inertials.values())
    expected = sum(m * robot.get_frame_pose(link).act(c) for link, (m, c) in inertials.items())
    np.testing.assert_allclose(com, expected / total, atol=1e-13)


@pytest.mark.parametrize("seed", range(4))
def test_com_jacobian(robot, rand_q, fd_com, seed):
    q = rand_q(robot, seed)
    robot.update_kinematics(q)
    J = robot.get_com_jacobian()
    assert J.shape == (3, robot.nv)
    np.testing.assert_allclose(
        J, pin.jacobianCenterOfMass(robot.model, robot.model.createData(), q), atol=1e-13
    )
    np.testing.assert_allclose(J, fd_com(robot.model, q), atol=1e-8)


@pytest.mark.parametrize("seed", range(3))
def test_com_velocity(robot, rand_q, seed):
    q, v = rand_q(robot, seed), _vq(robot, seed)
    robot.update_kinematics(q, v)
    vcom = robot.get_com_velocity()
    np.testing.assert_allclose(vcom, robot.get_com_jacobian() @ v, atol=1e-14)
    # Against Pinocchio's own CoM velocity, and the time derivative along v.
    data = robot.model.createData()
    pin.centerOfMass(robot.model, data, q, v)
    np.testing.assert_allclose(vcom, data.vcom[0], atol=1e-12)
    eps = 1e-6
    cp = pin.centerOfMass(robot.model, data, pin.integrate(robot.model, q, eps * v)).copy()
    cm = pin.centerOfMass(robot.model, data, pin.integrate(robot.model, q, -eps * v)).copy()
    np.testing.assert_allclose(vcom, (cp - cm) / (2 * eps), atol=1e-8)
    robot.update_kinematics(q)
    np.testing.assert_array_equal(robot.get_com_velocity(), np.zeros(3))


def test_com_cache_follows_the_configuration(arm, rand_q):
    q1, q2 = rand_q(arm, 1), rand_q(arm, 2)
    arm.update_kinematics(q1)
    c1, J1 = arm.get_com_position(), arm.get_com_jacobian()
    arm.update_kinematics(q2)
    data = arm.model.createData()
    np.testing.assert_allclose(arm.get_com_position(), pin.centerOfMass(arm.model, data, q2))
    assert not np.allclose(arm.get_com_position(), c1)
    assert not np.allclose(arm.get_com_jacobian(), J1)
    # The CoM computation must not disturb the cached frame Jacobians.
    np.testing.assert_allclose(
        arm.get_frame_jacobian("tool", "world"),
        pin.computeFrameJacobian(arm.model, data, q2, arm.get_frame_id("tool"), pin.WORLD),
        atol=1e-13,
    )


# -- dynamics -----------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_mass_matrix_symmetric_positive_definite(robot, rand_q, seed):
    q = rand_q(robot, seed)
    M = robot.compute_mass_matrix(q)
    assert M.shape == (robot.nv, robot.nv)
    np.testing.assert_array_equal(M, M.T)
    assert np.linalg.eigvalsh(M).min() > 1e-6
    # Column i of M is the torque RNEA needs for a unit acceleration, minus gravity.
    data = robot.model.createData()
    g = pin.rnea(robot.model, data, q, np.zeros(robot.nv), np.zeros(robot.nv)).copy()
    for i in range(robot.nv):
        a = np.zeros(robot.nv)
        a[i] = 1.0
        tau = pin.rnea(robot.model, data, q, np.zeros(robot.nv), a)
        np.testing.assert_allclose(M[:, i], tau - g, atol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_rnea_equals_mass_coriolis_gravity(robot, rand_q, seed):
    q, v = rand_q(robot, seed), _vq(robot, seed)
    a = np.random.default_rng(seed).normal(size=robot.nv)
    tau = robot.rnea(q, v, a)
    M = robot.compute_mass_matrix(q)
    Cv = robot.compute_coriolis(q, v)
    g = robot.compute_generalized_gravity(q)
    np.testing.assert_allclose(tau, M @ a + Cv + g, atol=1e-11)
    data = robot.model.createData()
    np.testing.assert_allclose(tau, pin.rnea(robot.model, data, q, v, a), atol=1e-12)
    # C(q, v) v from Pinocchio's Coriolis matrix, an independent algorithm.
    C = pin.computeCoriolisMatrix(robot.model, data, q, v)
    np.testing.assert_allclose(Cv, C @ v, atol=1e-11)
    np.testing.assert_allclose(g, pin.computeGeneralizedGravity(robot.model, data, q), atol=1e-12)
    # Coriolis forces are quadratic in v and vanish at rest.
    np.testing.assert_allclose(robot.compute_coriolis(q, 2 * v), 4 * Cv, atol=1e-11)
    np.testing.assert_array_equal(robot.compute_coriolis(q, np.zeros(robot.nv)), 0)


def test_gravity_get_set_is_linear(arm, rand_q):
    np.testing.assert_array_equal(arm.get_gravity(), [0, 0, -9.81])
    q = rand_q(arm, 5)
    g_default = arm.compute_generalized_gravity(q)
    assert np.abs(g_default).max() > 0.1
    arm.set_gravity([0, 0, -2 * 9.81])
    np.testing.assert_allclose(arm.compute_generalized_gravity(q), 2 * g_default, atol=1e-12)
    arm.set_gravity([1.0, 0, 0])
    gx = arm.compute_generalized_gravity(q)
    arm.set_gravity([0, 2.0, 0])
    gy = arm.compute_generalized_gravity(q)
    arm.set_gravity([1.0, 2.0, 0])
    np.testing.assert_allclose(arm.compute_generalized_gravity(q), gx + gy, atol=1e-12)
    np.testing.assert_array_equal(arm.get_gravity(), [1.0, 2.0, 0])
    arm.set_gravity(np.zeros(3))
    np.testing.assert_array_equal(arm.compute_generalized_gravity(q), 0)
    # Gravity enters RNEA and nothing else.
    v = np.array([0.2, -0.1, 0.3])
    np.testing.assert_allclose(arm.rnea(q, v, np.zeros(3)), arm.compute_coriolis(q, v), atol=1e-12)


def test_gravity_acts_on_the_mass(arm):
    # At neutral, j1 is vertical: gravity cannot load it. The prismatic j3 slides along
    # Rx(0.1) Rz(0.3) e_x, whose z part is sin(0.3) sin(0.1): holding link3 (0.5 kg)
    # against 10 m/s^2 takes 0.5 * 10 * sin(0.3) sin(0.1) N.
    arm.set_gravity([0, 0, -10.0])
    g = arm.compute_generalized_gravity(arm.neutral_configuration())
    assert g[0] == pytest.approx(0.0, abs=1e-12)
    assert g[2] == pytest.approx(0.5 * 10 * np.sin(0.3) * np.sin(0.1), abs=1e-12)
    assert abs(g[1]) > 0.5


def test_dynamics_do_not_disturb_the_kinematics_cache(robot, rand_q):
    q = rand_q(robot, 1)
    v = _vq(robot, 1)
    robot.update_kinematics(q, v)
    pose = robot.get_frame_pose("tool")
    J = robot.get_frame_jacobian("tool", "world")
    q_other, v_other = rand_q(robot, 2), _vq(robot, 2)
    robot.rnea(q_other, v_other, v_other)
    robot.compute_mass_matrix(q_other)
    robot.compute_coriolis(q_other, v_other)
    robot.compute_generalized_gravity(q_other)
    robot.integrate(q_other, v_other)
    robot.difference(q_other, q)
    np.testing.assert_array_equal(robot.get_frame_pose("tool").homogeneous, pose.homogeneous)
    np.testing.assert_array_equal(robot.get_frame_jacobian("tool", "world"), J)
    np.testing.assert_allclose(robot.get_current_configuration(), q, atol=1e-15)
    np.testing.assert_array_equal(robot.get_current_velocity(), v)
    # The lazily computed CoM still belongs to q, not to the dynamics arguments.
    np.testing.assert_allclose(
        robot.get_com_position(), pin.centerOfMass(robot.model, robot.model.createData(), q)
    )
