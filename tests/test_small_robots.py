"""Robots with one and two degrees of freedom: every task family solves on them.

Pinocchio hands a 6 x 1 (or 3 x 1) Jacobian back as a vector; stackik must still see
the 6 x nv matrix. Each family's velocity step is checked against the closed-form
least-squares step ``pinv(J) xdot`` of that single task (no constraint active at the
start configuration), and position IK reaches a target made by forward kinematics.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from stackik import KinematicsSolver, RobotModel, SolverStatus, TaskType

_INERTIA = (
    '<inertial><origin xyz="0.25 0 0"/><mass value="1"/>'
    '<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>'
)


def chain_urdf(nv: int) -> str:
    """A planar chain of ``nv`` revolute joints about z, 0.5 m links, a ``tip`` frame."""
    links = ['<link name="base"/>']
    joints = []
    parent = "base"
    for k in range(nv):
        links.append(f'<link name="l{k}">{_INERTIA}</link>')
        origin = "0 0 0" if k == 0 else "0.5 0 0"
        axis = "0 0 1" if k % 2 == 0 else "0 1 0"
        joints.append(
            f'<joint name="j{k}" type="revolute"><parent link="{parent}"/><child link="l{k}"/>'
            f'<origin xyz="{origin}"/><axis xyz="{axis}"/>'
            '<limit lower="-2.5" upper="2.5" velocity="2" effort="1"/></joint>'
        )
        parent = f"l{k}"
    links.append('<link name="tip"/>')
    joints.append(
        f'<joint name="jt" type="fixed"><parent link="{parent}"/><child link="tip"/>'
        '<origin xyz="0.5 0 0"/></joint>'
    )
    return f'<robot name="chain{nv}">' + "".join(links + joints) + "</robot>"


FAMILIES = [
    "frame_pose",
    "frame_position",
    "frame_orientation",
    "posture",
    "com",
    "joint",
    "multi_joint",
    "relative_frame",
    "absolute_frame",
]


def add_family(solver: KinematicsSolver, family: str, q_target: np.ndarray) -> object:
    """Add one task of ``family`` whose target is its value at ``q_target``."""
    robot = solver.robot
    kin = robot.create_kinematics(q_target)
    pose = kin.frame_pose("tip")
    if family.startswith("frame_"):
        task = solver.add_frame_task("t", "tip", TaskType(family))
        task.set_target_pose(pose)
    elif family == "posture":
        task = solver.add_posture_task("t")
        task.set_target_configuration(q_target)
    elif family == "com":
        task = solver.add_com_task("t")
        task.set_target_position(kin.com)
    elif family == "joint":
        task = solver.add_joint_task("t", "j0", float(q_target[0]))
    elif family == "multi_joint":
        names = [f"j{k}" for k in range(robot.nv)]
        task = solver.add_multi_joint_task("t", names, q_target)
    elif family == "relative_frame":
        task = solver.add_relative_frame_task("t", "base", "tip")
        task.set_target_pose(pose)
    else:
        task = solver.add_absolute_frame_task("t", "base", "tip")
        Ta, Tb = kin.frame_pose("base"), kin.frame_pose("tip")
        rot = Ta.rotation @ pin.exp3(0.5 * pin.log3(Ta.rotation.T @ Tb.rotation))
        task.set_target_pose(pin.SE3(rot, 0.5 * (Ta.translation + Tb.translation)))
    return task


@pytest.mark.parametrize("nv", [1, 2])
@pytest.mark.parametrize("family", FAMILIES)
def test_velocity_step_is_the_least_squares_step(nv: int, family: str) -> None:
    robot = RobotModel.from_urdf_string(chain_urdf(nv))
    assert robot.nv == nv
    solver = KinematicsSolver(robot, dt=0.01)
    q0 = np.full(nv, 0.2)
    task = add_family(solver, family, np.full(nv, 0.5))
    problem = solver.build_problem(q0)
    (J, xdot) = problem.levels[0]
    assert J.shape[1] == nv
    result = solver.solve_velocity(q0)
    assert result.status == SolverStatus.SUCCESS, result.status_message
    assert result.solution.shape == (nv,)
    expected = np.linalg.lstsq(J, xdot, rcond=None)[0]
    np.testing.assert_allclose(result.solution, expected, atol=1e-9)
    assert np.abs(result.solution).max() > 1e-6, "the task asked for motion"
    assert task.get_dimension() == J.shape[0]


@pytest.mark.parametrize("nv", [1, 2])
def test_position_ik_reaches_a_forward_kinematics_target(nv: int) -> None:
    robot = RobotModel.from_urdf_string(chain_urdf(nv))
    solver = KinematicsSolver(robot, dt=0.01)
    q_star = np.linspace(0.4, 0.9, nv)
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, q_star)
    target = pin.SE3(data.oMf[robot.get_frame_id("tip")])
    res = solver.solve_position(np.zeros(nv), target, "tip")
    assert res.status == SolverStatus.SUCCESS, res.status_message
    pin.framesForwardKinematics(robot.model, data, res.solution)
    err = pin.log6(target.actInv(data.oMf[robot.get_frame_id("tip")])).vector
    assert np.abs(err).max() < 1e-6
    solver.add_frame_task("ee", "tip")
    step = solver.solve_position_step(np.zeros(nv), target, "ee")
    assert np.isfinite(step.solution).all()
    assert step.status == SolverStatus.SUCCESS, step.status_message


@pytest.mark.parametrize("nv", [1, 2])
def test_jacobian_views_have_matrix_shapes(nv: int) -> None:
    robot = RobotModel.from_urdf_string(chain_urdf(nv))
    kin = robot.create_kinematics(np.full(nv, 0.3))
    assert kin.frame_jacobian(robot.get_frame_id("tip")).shape == (6, nv)
    assert kin.joint_jacobian(1).shape == (6, nv)
    assert kin.joint_jacobians_view().shape == (6, nv)
    assert kin.com_jacobian.shape == (3, nv)
    assert robot.get_com_jacobian().shape == (3, nv)
