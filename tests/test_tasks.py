"""Task families of the KinematicsSolver (STYLE.md item 8 families, per task).

Every task (FrameTask in its three types and with masks, PostureTask, COMTask,
JointTask / MultiJointTask, RelativeFrameTask, AbsoluteFrameTask) is checked for:

- its Jacobian against finite differences on random configurations, integrating
  along each tangent direction with ``robot.integrate`` (orientation rows against
  ``log3`` of the rotation change; error rows as ``-d(error)/d(eps)``);
- zero velocity when the task is met;
- a strictly decreasing error in a convergence rollout;
- typed errors for bad input; and the task API (targets, feed-forward velocity,
  masks, excluded joints, priority / weight / gain).

Robots are the shipped ones under ``robots/``; a continuous joint comes from an
inline URDF string.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from stackik import (
    FrameNotFound,
    InvalidInput,
    InvalidTransform,
    JointNotFound,
    NonFiniteInput,
    RobotModel,
    ShapeError,
    SolverStatus,
    StackIKError,
    TaskNotFound,
)
from stackik.solver import KinematicsSolver
from stackik.tasks import (
    AbsoluteFrameTask,
    COMTask,
    FrameTask,
    JointTask,
    MultiJointTask,
    PostureTask,
    RelativeFrameTask,
    TaskType,
)

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
EPS = 1e-6  # finite-difference step along a tangent direction
FD_TOL = 1e-6  # central differences are O(eps^2) + round-off ~1e-10 / eps
PANDA_READY = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])

CONTINUOUS_URDF = """<?xml version="1.0"?>
<robot name="wheel_arm">
  <link name="base"/>
  <joint name="spin" type="continuous">
    <parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0.1"/><axis xyz="0 0 1"/>
  </joint>
  <link name="l1">
    <inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/>
    </inertial>
  </link>
  <joint name="slide" type="prismatic">
    <parent link="l1"/><child link="l2"/>
    <origin xyz="0.2 0 0"/><axis xyz="1 0 0"/>
    <limit lower="-0.1" upper="0.3" effort="10" velocity="1"/>
  </joint>
  <link name="l2">
    <inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/>
    </inertial>
  </link>
</robot>
"""


# -- robots (module scope: loading is cheap, but the first SNS solve compiles numba) ------
@pytest.fixture(scope="module")
def panda() -> RobotModel:
    return RobotModel(ROBOTS / "panda" / "panda.urdf", srdf_path=ROBOTS / "panda" / "panda.srdf")


@pytest.fixture(scope="module")
def ur5() -> RobotModel:
    return RobotModel(ROBOTS / "ur5" / "ur5.urdf")


@pytest.fixture(scope="module")
def planar() -> RobotModel:
    return RobotModel.from_xacro(ROBOTS / "planar_arm" / "planar_arm.urdf.xacro")


@pytest.fixture(scope="module")
def dual_arm() -> RobotModel:
    return RobotModel(
        ROBOTS / "dual_arm" / "dual_arm.urdf", srdf_path=ROBOTS / "dual_arm" / "dual_arm.srdf"
    )


@pytest.fixture(scope="module")
def humanoid() -> RobotModel:
    return RobotModel(ROBOTS / "humanoid" / "humanoid.urdf", floating_base=True)


@pytest.fixture(scope="module")
def wheel() -> RobotModel:
    return RobotModel.from_urdf_string(CONTINUOUS_URDF)


@pytest.fixture(scope="module")
def robots(panda, ur5, planar, dual_arm, humanoid) -> dict[str, RobotModel]:
    return {
        "panda": panda,
        "ur5": ur5,
        "planar": planar,
        "dual_arm": dual_arm,
        "humanoid": humanoid,
    }


TIP = {
    "panda": "panda_hand_tcp",
    "ur5": "tool0",
    "planar": "tip",
    "dual_arm": "left_tcp",
    "humanoid": "left_hand",
}


# -- finite-difference helpers ---------------------------------------------------------------
# Tasks read their solver's own kinematics cache: the helpers move the robot's cache and
# the cache of the solver made by ``make_solver`` together.
_SOLVERS: list[KinematicsSolver] = []


def set_q(robot: RobotModel, q: np.ndarray) -> None:
    """Update the robot's cache and the current solver's cache at ``q``."""
    robot.update_kinematics(q)
    for solver in _SOLVERS:
        if solver.robot is robot:
            solver.kinematics.update(q)


def fd_vector(robot: RobotModel, q: np.ndarray, value) -> np.ndarray:
    """Central difference of ``value()`` (read from the robot's cache) along each tangent."""
    cols = []
    for e in np.eye(robot.nv):
        set_q(robot, robot.integrate(q, EPS * e))
        plus = np.array(value(), dtype=float)
        set_q(robot, robot.integrate(q, -EPS * e))
        minus = np.array(value(), dtype=float)
        cols.append((plus - minus) / (2 * EPS))
    set_q(robot, q)
    return np.array(cols).T


def fd_rotation(robot: RobotModel, q: np.ndarray, rotation) -> np.ndarray:
    """World angular velocity per tangent direction: ``log3(R(+) R(-)^T) / (2 eps)``."""
    cols = []
    for e in np.eye(robot.nv):
        set_q(robot, robot.integrate(q, EPS * e))
        Rp = np.array(rotation())
        set_q(robot, robot.integrate(q, -EPS * e))
        Rm = np.array(rotation())
        cols.append(pin.log3(Rp @ Rm.T) / (2 * EPS))
    set_q(robot, q)
    return np.array(cols).T


def fd_error(robot: RobotModel, q: np.ndarray, task) -> np.ndarray:
    """``-d(error)/d(eps)``: what the Jacobian must equal for the error rows."""

    def err() -> np.ndarray:
        task.update()
        return task.get_error().copy()

    return -fd_vector(robot, q, err)


def random_qs(robot: RobotModel, seed: int, n: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [robot.random_configuration(rng) for _ in range(n)]


def nearby(robot: RobotModel, q: np.ndarray, seed: int, scale: float = 0.15) -> np.ndarray:
    """A configuration a small random tangent step away, clipped inside the limits."""
    rng = np.random.default_rng(seed)
    q2 = robot.integrate(q, rng.uniform(-scale, scale, robot.nv))
    lo, hi = robot.get_joint_limits()
    return np.where(np.isfinite(lo) & np.isfinite(hi), np.clip(q2, lo + 0.05, hi - 0.05), q2)


def make_solver(robot: RobotModel, q: np.ndarray, dt: float = 0.01) -> KinematicsSolver:
    robot.update_kinematics(q)
    solver = KinematicsSolver(robot, dt=dt)
    _SOLVERS[:] = [solver]
    return solver


# ============================================================================================
# Finite-difference Jacobians
# ============================================================================================
@pytest.mark.parametrize("name", ["panda", "ur5", "planar", "dual_arm", "humanoid"])
def test_frame_task_jacobian_matches_finite_differences(robots, name):
    robot = robots[name]
    for q in random_qs(robot, seed=11):
        solver = make_solver(robot, q)
        task = solver.add_frame_task("f", TIP[name])
        task.set_target_pose(pin.SE3.Random())  # far target: the error rows are exercised
        task.update()
        J = task.get_jacobian()
        assert J.shape == (6, robot.nv)
        np.testing.assert_allclose(
            J[:3], fd_vector(robot, q, lambda task=task: task.current_position), atol=FD_TOL
        )
        np.testing.assert_allclose(
            J[3:], fd_rotation(robot, q, lambda task=task: task.current_orientation), atol=FD_TOL
        )
        # Position error rows: e = p* - p, so J = -de/deps exactly.
        np.testing.assert_allclose(J[:3], fd_error(robot, q, task)[:3], atol=FD_TOL)


@pytest.mark.parametrize("name", ["panda", "humanoid"])
def test_frame_task_orientation_error_rate_at_target(robots, name):
    """At the target, d log3(R* R^T) = -omega exactly: the full error obeys J = -de/deps."""
    robot = robots[name]
    for q in random_qs(robot, seed=12, n=2):
        solver = make_solver(robot, q)
        task = solver.add_frame_task("f", TIP[name])  # target = current pose
        task.update()
        np.testing.assert_allclose(task.get_error(), 0.0, atol=1e-12)
        np.testing.assert_allclose(task.get_jacobian(), fd_error(robot, q, task), atol=FD_TOL)


def test_frame_task_types_and_masks_select_rows(panda):
    q = random_qs(panda, seed=13, n=1)[0]
    solver = make_solver(panda, q)
    full = solver.add_frame_task("pose", "panda_hand_tcp")
    pos = solver.add_frame_task("pos", "panda_hand_tcp", TaskType.FRAME_POSITION)
    ori = solver.add_frame_task("ori", "panda_hand_tcp", TaskType.FRAME_ORIENTATION)
    target = pin.SE3(pin.exp3(np.array([0.2, -0.1, 0.3])), np.array([0.3, 0.2, 0.5]))
    for t in (full, pos, ori):
        t.set_target_pose(target)
        t.update()
    J6, e6 = full.get_jacobian(), full.get_error()
    assert full.get_dimension() == 6 and pos.get_dimension() == 3 and ori.get_dimension() == 3
    assert full.get_type() == TaskType.FRAME_POSE
    assert (
        pos.get_type() == TaskType.FRAME_POSITION and ori.get_type() == TaskType.FRAME_ORIENTATION
    )
    np.testing.assert_array_equal(pos.get_jacobian(), J6[:3])
    np.testing.assert_array_equal(ori.get_jacobian(), J6[3:])
    np.testing.assert_array_equal(pos.get_error(), e6[:3])
    np.testing.assert_array_equal(ori.get_error(), e6[3:])
    # The error is the documented one: [p* - p ; log3(R* R^T)].
    T = panda.get_frame_pose("panda_hand_tcp")
    np.testing.assert_allclose(e6[:3], target.translation - T.translation, atol=1e-15)
    np.testing.assert_allclose(e6[3:], pin.log3(target.rotation @ T.rotation.T), atol=1e-12)

    full.set_position_mask([1, 0, 1])
    full.set_orientation_mask([0, 1, 0])
    full.update()
    assert full.get_dimension() == 3
    np.testing.assert_array_equal(full.get_jacobian(), J6[[0, 2, 4]])
    np.testing.assert_array_equal(full.get_error(), e6[[0, 2, 4]])
    full.set_target_velocity(np.arange(6.0))
    np.testing.assert_allclose(full.get_velocity(), (np.arange(6.0) + full.gain * e6)[[0, 2, 4]])
    # Masks on the part a task does not control are configuration errors.
    with pytest.raises(InvalidInput):
        pos.set_orientation_mask([1, 1, 1])
    with pytest.raises(InvalidInput):
        ori.set_position_mask([1, 1, 1])
    with pytest.raises(InvalidInput):
        full.set_position_mask([1, 1])


@pytest.mark.parametrize("name", ["panda", "humanoid"])
def test_com_task_jacobian_matches_finite_differences(robots, name):
    robot = robots[name]
    for q in random_qs(robot, seed=14):
        solver = make_solver(robot, q)
        task = solver.add_com_task("com")
        task.set_target_position(task.current_position + np.array([0.1, -0.2, 0.05]))
        task.update()
        J = task.get_jacobian()
        np.testing.assert_allclose(J, fd_vector(robot, q, robot.get_com_position), atol=FD_TOL)
        np.testing.assert_allclose(J, fd_error(robot, q, task), atol=FD_TOL)
        np.testing.assert_allclose(
            task.get_error(), task.target_position - robot.get_com_position(), atol=1e-15
        )
        task.set_position_mask([1, 1, 0])
        task.update()
        np.testing.assert_array_equal(task.get_jacobian(), J[:2])


@pytest.mark.parametrize("name", ["panda", "ur5", "humanoid"])
def test_posture_task_jacobian_matches_finite_differences(robots, name):
    robot = robots[name]
    for q in random_qs(robot, seed=15):
        solver = make_solver(robot, q)
        task = solver.add_posture_task("post")
        task.set_target_configuration(random_qs(robot, seed=99, n=1)[0])
        task.update()
        J = task.get_jacobian()
        first = 6 if robot.is_floating_base else 0
        assert task.controlled_joint_indices == list(range(first, robot.nv))
        np.testing.assert_array_equal(J, np.eye(robot.nv)[first:])
        np.testing.assert_allclose(J, fd_error(robot, q, task), atol=FD_TOL)


def test_posture_task_with_base_rows_is_exact_at_target(humanoid):
    """On the free-flyer, d difference(q, q*) = -I only at q = q*; check there."""
    q = random_qs(humanoid, seed=16, n=1)[0]
    solver = make_solver(humanoid, q)
    task = solver.add_posture_task("post", list(range(humanoid.nv)))
    task.update()
    np.testing.assert_allclose(task.get_error(), 0.0, atol=1e-12)
    np.testing.assert_allclose(task.get_jacobian(), fd_error(humanoid, q, task), atol=FD_TOL)


def test_an_error_override_drives_the_velocity_and_nothing_else(panda, humanoid):
    """With an override ``e0`` the rows are ``sqrt(w) (gain e0 + v*[S])``; the Jacobian and
    the reported error stay the task's own (Pinocchio); clearing it, or a new mask, gives the
    task's own velocity back."""
    q = random_qs(panda, seed=31, n=1)[0]
    solver = make_solver(panda, q)
    task = solver.add_frame_task("ee", "panda_hand_tcp", weight=0.5)
    task.gain = 3.0
    task.set_target_pose(pin.SE3(pin.exp3(np.array([0.1, -0.2, 0.3])), np.array([0.3, 0.2, 0.5])))
    task.set_position_mask([1, 0, 1])
    feed = np.arange(1.0, 7.0)
    task.set_target_velocity(feed)
    rows = [0, 2, 3, 4, 5]
    J0, x0 = np.empty((5, 7)), np.empty(5)
    task.write(J0, x0)
    own = task.get_error()
    override = np.array([0.01, -0.02, 0.03, -0.04, 0.05])
    task.set_error_override(override)
    J1, x1 = np.empty((5, 7)), np.empty(5)
    task.write(J1, x1)
    root = np.sqrt(0.5)
    np.testing.assert_array_equal(J1, J0)
    np.testing.assert_array_equal(task.get_error(), own)
    np.testing.assert_allclose(x1, root * (3.0 * override + feed[rows]), rtol=1e-14)
    np.testing.assert_allclose(x0, root * (3.0 * own + feed[rows]), rtol=1e-14)
    np.testing.assert_array_equal(task.error_override, override)
    T = panda.create_kinematics(q).frame_pose("panda_hand_tcp")
    np.testing.assert_allclose(own[:2], (task.target_pose.translation - T.translation)[[0, 2]])
    task.clear_error_override()
    task.write(J1, x1)
    np.testing.assert_array_equal(x1, x0)
    task.set_error_override(override)
    task.set_position_mask([1, 1, 1])  # the override was for the old rows
    assert task.error_override is None
    with pytest.raises(ShapeError):  # the old rows' buffers: refused, never written past
        task.write(J1, x1)
    task.update()
    task.override_with_current_error()  # the error here, kept while the solve moves on
    here = task.get_error().copy()
    solver.kinematics.update(random_qs(panda, seed=34, n=1)[0])
    J6, x6 = np.empty((6, 7)), np.empty(6)
    task.write(J6, x6)
    assert np.abs(task.get_error() - here).max() > 1e-3
    np.testing.assert_array_equal(task.error_override, here)
    np.testing.assert_allclose(x6, root * (3.0 * here + feed), rtol=1e-14)
    with pytest.raises(ShapeError):
        task.set_error_override(np.zeros(5))
    with pytest.raises(NonFiniteInput):
        task.set_error_override([np.nan] + [0.0] * 5)
    # The posture task (its own kernel) follows the same rule.
    qh = random_qs(humanoid, seed=32, n=1)[0]
    hsolver = make_solver(humanoid, qh)
    post = hsolver.add_posture_task("post", [2, 7, 20])
    post.gain = 2.0
    post.set_target_configuration(random_qs(humanoid, seed=33, n=1)[0])
    post.set_error_override([0.1, 0.2, 0.3])
    J, x = np.empty((3, humanoid.nv)), np.empty(3)
    post.write(J, x)
    root = np.sqrt(post.weight)
    np.testing.assert_allclose(x, root * 2.0 * np.array([0.1, 0.2, 0.3]), rtol=1e-15)
    np.testing.assert_allclose(J, root * np.eye(humanoid.nv)[[2, 7, 20]], rtol=1e-15)
    with pytest.raises(ShapeError):
        post.write(np.empty((2, humanoid.nv)), np.empty(2))
    e = pin.difference(humanoid.model, qh, post.target_configuration)
    np.testing.assert_allclose(post.get_error(), e[[2, 7, 20]], rtol=1e-14)


@pytest.mark.parametrize("seed", [41, 42, 43])
def test_the_present_error_override_is_the_tasks_error_there(panda, seed):
    """``override_with_present_error``: the error of ``update()`` bit for bit (frame tasks
    of each type and with masks, a posture task on some joints, a CoM task by the generic
    path), and Pinocchio's frame pose error and configuration difference."""
    q = random_qs(panda, seed=seed, n=1)[0]
    solver = make_solver(panda, q)
    target = pin.SE3(pin.exp3(np.array([0.3, -0.1, 0.2])), np.array([0.4, -0.1, 0.45]))
    full = solver.add_frame_task("full", "panda_hand_tcp")
    full.set_target_pose(target)
    masked = solver.add_frame_task("masked", "panda_link6", TaskType.FRAME_POSITION)
    masked.set_target_position(np.array([0.2, 0.3, 0.6]))
    masked.set_position_mask([1, 0, 1])
    post = solver.add_posture_task("post", [1, 3, 5])
    post.set_target_configuration(random_qs(panda, seed=seed + 10, n=1)[0])
    com = solver.add_com_task("com")
    com.set_target_position(np.array([0.05, 0.0, 0.3]))
    tasks = [full, masked, post, com]
    for task in tasks:
        task.override_with_present_error()
    present = [task.error_override.copy() for task in tasks]
    for task, got in zip(tasks, present, strict=True):
        task.clear_error_override()
        task.update()
        task.override_with_current_error()
        np.testing.assert_array_equal(got, task.error_override)
    data = pin.Data(panda.model)
    pin.framesForwardKinematics(panda.model, data, q)
    T = data.oMf[panda.model.getFrameId("panda_hand_tcp")]
    pinocchio_error = np.concatenate(
        [target.translation - T.translation, pin.log3(target.rotation @ T.rotation.T)]
    )
    np.testing.assert_allclose(present[0], pinocchio_error, rtol=0, atol=1e-12)
    p6 = data.oMf[panda.model.getFrameId("panda_link6")].translation
    np.testing.assert_allclose(present[1], (np.array([0.2, 0.3, 0.6]) - p6)[[0, 2]], atol=1e-14)
    e = pin.difference(panda.model, q, post.target_configuration)
    np.testing.assert_allclose(present[2], e[[1, 3, 5]], rtol=1e-14, atol=1e-15)


def test_posture_rows_written_for_the_solver_in_closed_form(humanoid):
    """The rows a step stacks: ``sqrt(w) I[S]`` (excluded columns zero) and
    ``sqrt(w) (gain difference(q, q*)[S] + v*[S])``, against Pinocchio's difference."""
    q = random_qs(humanoid, seed=21, n=1)[0]
    target = random_qs(humanoid, seed=22, n=1)[0]
    solver = make_solver(humanoid, q)
    rows = [2, 7, 8, 20, 30]
    task = solver.add_posture_task("post", rows, weight=0.3)
    task.gain = 2.5
    task.set_target_configuration(target)
    feed = np.linspace(-1.0, 1.0, humanoid.nv)
    task.set_target_velocity(feed)
    task.set_excluded_joint_indices([8, 30])
    J = np.full((len(rows), humanoid.nv), np.nan)
    xdot = np.full(len(rows), np.nan)
    task.write(J, xdot)
    root = np.sqrt(0.3)
    J_ref = np.eye(humanoid.nv)[rows]
    J_ref[:, [8, 30]] = 0.0
    np.testing.assert_allclose(J, root * J_ref, rtol=0, atol=1e-15)
    e = pin.difference(humanoid.model, q, target)
    np.testing.assert_allclose(xdot, root * (2.5 * e[rows] + feed[rows]), rtol=1e-14, atol=1e-15)
    task.clear_target_velocity()
    task.clear_excluded_joint_indices()
    task.write(J, xdot)
    np.testing.assert_allclose(J, root * np.eye(humanoid.nv)[rows], rtol=0, atol=1e-15)
    np.testing.assert_allclose(xdot, root * 2.5 * e[rows], rtol=1e-14, atol=1e-15)


def test_posture_task_controlled_joints_by_name_and_index(panda):
    solver = make_solver(panda, PANDA_READY)
    by_name = solver.add_posture_task("a", ["panda_joint2", "panda_joint5"])
    by_index = solver.add_posture_task("b", [1, 4])
    assert by_name.controlled_joint_indices == by_index.controlled_joint_indices == [1, 4]
    target = PANDA_READY + np.arange(7) * 0.1
    by_name.set_target_configuration(target)
    by_name.update()
    np.testing.assert_allclose(by_name.get_error(), [0.1, 0.4], atol=1e-15)
    np.testing.assert_array_equal(by_name.get_jacobian(), np.eye(7)[[1, 4]])
    np.testing.assert_array_equal(by_name.target_configuration, target)


def test_joint_tasks_jacobian_and_error(panda, ur5):
    for robot, names in ((panda, ["panda_joint3", "panda_joint6"]), (ur5, ["elbow_joint"])):
        for q in random_qs(robot, seed=17):
            solver = make_solver(robot, q)
            multi = solver.add_multi_joint_task("m", names, [0.1] * len(names))
            single = solver.add_joint_task("s", names[0], -0.2)
            for task in (multi, single):
                task.update()
                np.testing.assert_allclose(
                    task.get_jacobian(), fd_error(robot, q, task), atol=FD_TOL
                )
            iv = [robot.get_joint_velocity_index(n) for n in names]
            np.testing.assert_array_equal(multi.get_jacobian(), np.eye(robot.nv)[iv])
            iq = [robot.get_joint_config_index(n) for n in names]
            np.testing.assert_allclose(multi.get_error(), 0.1 - q[iq], atol=1e-15)
            assert multi.joint_indices == iv
            assert single.get_type() == TaskType.JOINT


def test_joint_task_continuous_joint_wraps_the_error(wheel):
    q = wheel.neutral_configuration()
    q[:2] = [np.cos(-np.pi + 0.1), np.sin(-np.pi + 0.1)]
    solver = make_solver(wheel, q)
    task = solver.add_joint_task("spin", "spin", np.pi - 0.1)
    task.update()
    # Shortest way from -pi + 0.1 to pi - 0.1 is -0.2 rad, not +2 pi - 0.2.
    np.testing.assert_allclose(task.get_error(), [-0.2], atol=1e-12)
    np.testing.assert_allclose(task.get_jacobian(), fd_error(wheel, q, task), atol=FD_TOL)
    # The solver turns the joint the short way.
    dq = solver.solve_velocity_dq(q, apply_limits=False)
    assert dq[0] == pytest.approx(-0.2, abs=1e-9)


@pytest.mark.parametrize("seed", [21, 22])
def test_relative_frame_task_jacobian_matches_finite_differences(dual_arm, seed):
    for q in random_qs(dual_arm, seed=seed, n=2):
        solver = make_solver(dual_arm, q)
        task = solver.add_relative_frame_task("rel", "left_tcp", "right_tcp")
        Ta, Tb = dual_arm.get_frame_pose("left_tcp"), dual_arm.get_frame_pose("right_tcp")
        assert task.current_pose.isApprox(Ta.actInv(Tb), 1e-12)
        task.set_target_pose(pin.SE3.Random())
        task.update()
        J = task.get_jacobian()
        np.testing.assert_allclose(
            J[:3],
            fd_vector(dual_arm, q, lambda task=task: task.current_pose.translation),
            atol=FD_TOL,
        )
        # Angular rows: spatial angular velocity of R_ab (in frame a's axes).
        np.testing.assert_allclose(
            J[3:],
            fd_rotation(dual_arm, q, lambda task=task: task.current_pose.rotation),
            atol=FD_TOL,
        )
        np.testing.assert_allclose(J[:3], fd_error(dual_arm, q, task)[:3], atol=FD_TOL)
        task.capture_current_as_target()
        task.update()
        np.testing.assert_allclose(task.get_error(), 0.0, atol=1e-12)
        np.testing.assert_allclose(J, fd_error(dual_arm, q, task), atol=FD_TOL)


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.5, 1.0])
def test_absolute_frame_task_jacobian_matches_finite_differences(dual_arm, alpha):
    """The angular rows use Jexp3 / Jlog3; checked on configurations far from identity."""
    for q in random_qs(dual_arm, seed=23, n=3):
        solver = make_solver(dual_arm, q)
        task = solver.add_absolute_frame_task("abs", "left_tcp", "right_tcp", alpha)
        assert task.get_alpha() == alpha
        Ta, Tb = dual_arm.get_frame_pose("left_tcp"), dual_arm.get_frame_pose("right_tcp")
        T = task.current_pose
        # The documented interpolation: p = (1-a) p_a + a p_b, R = R_a exp(a log3(R_a^T R_b)).
        np.testing.assert_allclose(
            T.translation, (1 - alpha) * Ta.translation + alpha * Tb.translation, atol=1e-14
        )
        phi = pin.log3(Ta.rotation.T @ Tb.rotation)
        np.testing.assert_allclose(T.rotation, Ta.rotation @ pin.exp3(alpha * phi), atol=1e-12)
        if alpha == 0.0:
            assert T.isApprox(Ta, 1e-12)
        if alpha == 1.0:
            assert T.isApprox(Tb, 1e-9)
        task.set_target_pose(pin.SE3.Random())
        task.update()
        J = task.get_jacobian()
        np.testing.assert_allclose(
            J[:3],
            fd_vector(dual_arm, q, lambda task=task: task.current_pose.translation),
            atol=FD_TOL,
        )
        np.testing.assert_allclose(
            J[3:], fd_rotation(dual_arm, q, lambda task=task: task.current_pose.rotation), atol=1e-5
        )
        task.capture_current_as_target()
        task.update()
        np.testing.assert_allclose(J, fd_error(dual_arm, q, task), atol=1e-5)


def test_absolute_frame_task_set_alpha(dual_arm):
    q = random_qs(dual_arm, seed=24, n=1)[0]
    solver = make_solver(dual_arm, q)
    task = solver.add_absolute_frame_task("abs", "left_tcp", "right_tcp")
    assert task.get_alpha() == 0.5
    task.set_alpha(1.0)
    assert task.current_pose.isApprox(dual_arm.get_frame_pose("right_tcp"), 1e-9)
    for bad in (-0.1, 1.5, float("nan"), "x"):
        with pytest.raises(InvalidInput):
            task.set_alpha(bad)
        with pytest.raises(InvalidInput):
            AbsoluteFrameTask("bad", dual_arm, "left_tcp", "right_tcp", bad)


# ============================================================================================
# Zero velocity when the task is met
# ============================================================================================
def _add_task(solver: KinematicsSolver, kind: str):
    """One task of each family; its target is the current value (the task is met)."""
    robot = solver.robot
    if kind == "frame_pose":
        return solver.add_frame_task("t", "left_tcp")
    if kind == "frame_position":
        return solver.add_frame_task("t", "left_tcp", TaskType.FRAME_POSITION)
    if kind == "frame_orientation":
        return solver.add_frame_task("t", "left_tcp", TaskType.FRAME_ORIENTATION)
    if kind == "posture":
        return solver.add_posture_task("t")
    if kind == "com":
        return solver.add_com_task("t")
    if kind == "joint":
        name = "left_panda_joint4"
        return solver.add_joint_task(
            "t", name, robot.get_current_configuration()[robot.get_joint_config_index(name)]
        )
    if kind == "multi_joint":
        return solver.add_multi_joint_task("t", ["left_panda_joint2", "right_panda_joint6"])
    if kind == "relative":
        return solver.add_relative_frame_task("t", "left_tcp", "right_tcp")
    if kind == "absolute":
        return solver.add_absolute_frame_task("t", "left_tcp", "right_tcp", 0.3)
    raise AssertionError(kind)


KINDS = [
    "frame_pose",
    "frame_position",
    "frame_orientation",
    "posture",
    "com",
    "joint",
    "multi_joint",
    "relative",
    "absolute",
]


@pytest.mark.parametrize("kind", KINDS)
def test_zero_velocity_when_task_is_met(dual_arm, kind):
    for q in random_qs(dual_arm, seed=31, n=2):
        solver = make_solver(dual_arm, q)
        task = _add_task(solver, kind)
        res = solver.solve_velocity(q)
        assert res.status == SolverStatus.SUCCESS, res.status_message
        np.testing.assert_allclose(task.get_error(), 0.0, atol=1e-12)
        np.testing.assert_allclose(res.solution, 0.0, atol=1e-12)


# ============================================================================================
# Strictly decreasing error in a convergence rollout
# ============================================================================================
def _set_reachable_target(task, robot: RobotModel, q_goal: np.ndarray, q_now: np.ndarray) -> None:
    """Make the task's value at ``q_goal`` its target, then return the robot to ``q_now``."""
    set_q(robot, q_goal)
    if isinstance(task, FrameTask):
        task.set_target_pose(robot.get_frame_pose(task.frame_name))
    elif isinstance(task, PostureTask):
        task.set_target_configuration(q_goal)
    elif isinstance(task, COMTask):
        task.set_target_position(robot.get_com_position())
    elif isinstance(task, MultiJointTask):
        task.set_target_values(q_goal[[robot.get_joint_config_index(n) for n in task.joint_names]])
    elif isinstance(task, (RelativeFrameTask, AbsoluteFrameTask)):
        task.capture_current_as_target()
    else:  # pragma: no cover
        raise AssertionError(type(task))
    set_q(robot, q_now)


@pytest.mark.parametrize("kind", KINDS)
def test_error_strictly_decreases_in_rollout(dual_arm, kind):
    q = nearby(dual_arm, dual_arm.neutral_configuration(), seed=41, scale=0.4)
    q_goal = nearby(dual_arm, q, seed=42, scale=0.2)
    solver = make_solver(dual_arm, q)
    task = _add_task(solver, kind)
    task.gain = 20.0  # [1/s]: about 0.8 of the error left after each 10 ms step
    _set_reachable_target(task, dual_arm, q_goal, q)
    task.update()
    errors = [np.linalg.norm(task.get_error())]
    assert errors[0] > 1e-3
    for _ in range(150):
        res = solver.solve_velocity(q)
        assert res.status == SolverStatus.SUCCESS, res.status_message
        q = dual_arm.integrate(q, res.solution * solver.dt)
        set_q(dual_arm, q)
        task.update()
        errors.append(np.linalg.norm(task.get_error()))
        if errors[-1] < 1e-9:
            break
    errors = np.array(errors)
    assert np.all(np.diff(errors) < 0), f"error increased at step {np.argmax(np.diff(errors) >= 0)}"
    assert errors[-1] < 1e-6


def test_frame_task_rollout_on_floating_base(humanoid):
    """Frame and CoM tasks also converge when the free-flyer moves (integration on SE3)."""
    q = humanoid.neutral_configuration()
    solver = make_solver(humanoid, q)
    hand = solver.add_frame_task("hand", "left_hand")
    hand.gain = 20.0
    _set_reachable_target(hand, humanoid, nearby(humanoid, q, seed=43, scale=0.2), q)
    errors = []
    for _ in range(120):
        q = humanoid.integrate(q, solver.solve_velocity_dq(q) * solver.dt)
        set_q(humanoid, q)
        hand.update()
        errors.append(np.linalg.norm(hand.get_error()))
    assert np.all(np.diff(errors)[np.array(errors[1:]) > 1e-10] < 0)
    assert errors[-1] < 1e-8


# ============================================================================================
# Task API: targets, feed-forward, excluded joints, weights, errors
# ============================================================================================
def test_target_velocity_is_fed_forward(panda):
    solver = make_solver(panda, PANDA_READY)
    task = solver.add_frame_task("ee", "panda_hand_tcp")
    twist = np.array([0.05, -0.02, 0.03, 0.1, 0.0, -0.1])
    task.set_target_velocity(twist)
    res = solver.solve_velocity(PANDA_READY)
    J = panda.get_frame_jacobian("panda_hand_tcp")
    np.testing.assert_allclose(J @ res.solution, twist, atol=1e-10)
    task.clear_target_velocity()
    np.testing.assert_allclose(solver.solve_velocity_dq(PANDA_READY), 0.0, atol=1e-12)
    task.set_target_velocity(twist)
    solver.clear_all_target_velocities()
    np.testing.assert_allclose(solver.solve_velocity_dq(PANDA_READY), 0.0, atol=1e-12)


def test_excluded_joints_do_not_move_and_clearing_restores_them(panda):
    solver = make_solver(panda, PANDA_READY)
    ee = solver.add_frame_task("ee", "panda_hand_tcp", TaskType.FRAME_POSITION)
    ee.set_target_position(
        panda.get_frame_pose("panda_hand_tcp").translation + np.array([0.05, 0.05, 0.0])
    )
    ee.set_excluded_joint_indices([0, 6, 0])
    assert ee.get_excluded_joint_indices() == [0, 6]
    dq = solver.solve_velocity_dq(PANDA_READY)
    np.testing.assert_allclose(dq[[0, 6]], 0.0, atol=1e-14)
    assert np.abs(dq).max() > 1e-3
    np.testing.assert_array_equal(ee.get_jacobian()[:, [0, 6]], 0.0)
    ee.clear_excluded_joint_indices()
    ee.update()
    np.testing.assert_array_equal(ee.get_jacobian(), panda.get_frame_jacobian("panda_hand_tcp")[:3])


@pytest.mark.parametrize("kind", ["posture", "multi_joint"])
def test_clearing_excluded_joints_restores_constant_jacobians(panda, kind):
    """Regression: the constant-Jacobian tasks kept the zeroed columns after clearing."""
    solver = make_solver(panda, PANDA_READY)
    if kind == "posture":
        task = solver.add_posture_task("t")
        J0 = np.eye(7)
    else:
        task = solver.add_multi_joint_task("t", ["panda_joint2", "panda_joint3"])
        J0 = np.eye(7)[[1, 2]]
    task.set_excluded_joint_indices([2])
    task.update()
    expected = J0.copy()
    expected[:, 2] = 0.0
    np.testing.assert_array_equal(task.get_jacobian(), expected)
    task.clear_excluded_joint_indices()
    task.update()
    np.testing.assert_array_equal(task.get_jacobian(), J0)


def test_task_defaults_and_setters(panda):
    solver = make_solver(panda, PANDA_READY)
    task = solver.add_frame_task("ee", "panda_hand_tcp")
    assert (task.priority, task.weight, task.gain, task.active) == (0, 1.0, 1.0, True)
    task.priority = np.int64(3)
    task.weight = 0.25
    task.gain = 0
    assert (task.priority, task.weight, task.gain) == (3, 0.25, 0.0)
    assert isinstance(task.priority, int)
    assert "ee" in repr(task) and "priority=3" in repr(task)
    # A new frame task holds the frame: its target is the current pose.
    assert task.target_pose.isApprox(panda.get_frame_pose("panda_hand_tcp"), 1e-12)
    task.set_target_pose(np.array([0.1, 0.2, 0.3]), np.eye(3))
    np.testing.assert_array_equal(task.target_pose.translation, [0.1, 0.2, 0.3])
    task.set_target_pose(pin.SE3.Identity().homogeneous)
    assert task.target_pose.isIdentity()
    R = pin.exp3(np.array([0.0, 0.0, 0.5]))
    task.set_target_orientation(R)
    np.testing.assert_allclose(task.target_pose.rotation, R)


@pytest.mark.parametrize(
    ("attr", "value"),
    [
        ("priority", 1.5),
        ("priority", "a"),
        ("priority", True),
        ("weight", -1.0),
        ("weight", float("nan")),
        ("weight", float("inf")),
        ("weight", "heavy"),
        ("gain", -0.1),
        ("gain", float("nan")),
    ],
)
def test_bad_priority_weight_gain_are_typed_errors(panda, attr, value):
    solver = make_solver(panda, PANDA_READY)
    task = solver.add_frame_task("ee", "panda_hand_tcp")
    with pytest.raises(InvalidInput):
        setattr(task, attr, value)
    # The task is unchanged and the hot path keeps working.
    assert (task.priority, task.weight, task.gain) == (0, 1.0, 1.0)
    assert solver.solve_velocity(PANDA_READY).status == SolverStatus.SUCCESS


def test_bad_task_input_raises_typed_errors(panda, dual_arm):
    solver = make_solver(panda, PANDA_READY)
    with pytest.raises(FrameNotFound) as exc:
        solver.add_frame_task("x", "panda_hand_tpc")
    assert "panda_hand_tcp" in exc.value.closest
    with pytest.raises(InvalidInput):
        solver.add_frame_task("x", "panda_hand", TaskType.COM)
    with pytest.raises(JointNotFound):
        solver.add_joint_task("x", "panda_joint9", 0.0)
    with pytest.raises(JointNotFound):
        solver.add_posture_task("x", ["nope"])
    with pytest.raises(InvalidInput):
        solver.add_posture_task("x", [7])
    with pytest.raises(InvalidInput):
        solver.add_multi_joint_task("x", [])
    with pytest.raises(InvalidInput):
        solver.add_multi_joint_task("x", "panda_joint1")
    with pytest.raises(ShapeError):
        solver.add_multi_joint_task("x", ["panda_joint1"], [0.1, 0.2])
    with pytest.raises(NonFiniteInput):
        solver.add_multi_joint_task("x", ["panda_joint1"], [np.nan])
    with pytest.raises(FrameNotFound):
        solver.add_relative_frame_task("x", "panda_hand", "nope")
    with pytest.raises(FrameNotFound):
        solver.add_absolute_frame_task("x", "nope", "panda_hand")
    assert solver.tasks == []  # nothing half-registered

    task = solver.add_frame_task("ee", "panda_hand_tcp")
    with pytest.raises(InvalidInput):
        solver.add_frame_task("ee", "panda_link8")
    with pytest.raises(NonFiniteInput):
        task.set_target_position([np.nan, 0.0, 0.0])
    with pytest.raises(NonFiniteInput):
        task.set_target_pose(np.full((4, 4), np.nan))
    with pytest.raises(InvalidTransform):
        task.set_target_orientation(np.ones((3, 3)))
    with pytest.raises(InvalidTransform):
        task.set_target_pose(np.diag([1.0, 1.0, 1.0, 2.0]))
    with pytest.raises(ShapeError):
        task.set_target_pose(np.eye(3))
    with pytest.raises(NonFiniteInput):
        task.set_target_velocity([np.inf] + [0.0] * 5)
    with pytest.raises(ShapeError):
        task.set_target_velocity([0.0] * 3)
    with pytest.raises(InvalidInput):
        task.set_excluded_joint_indices([7])
    post = solver.add_posture_task("post")
    with pytest.raises(ShapeError):
        post.set_target_configuration(np.zeros(6))
    with pytest.raises(NonFiniteInput):
        post.set_target_configuration(np.full(7, np.nan))
    com = solver.add_com_task("com")
    with pytest.raises(NonFiniteInput):
        com.set_target_position([0.0, np.nan, 0.0])
    with pytest.raises(InvalidInput):
        com.set_position_mask([1, 1, 1, 1])
    joint = solver.add_joint_task("j", "panda_joint1", 0.0)
    with pytest.raises(NonFiniteInput):
        joint.set_target_value(np.nan)
    rel = RelativeFrameTask("rel", dual_arm, "left_tcp", "right_tcp")
    with pytest.raises(NonFiniteInput):
        rel.set_target_pose(np.full((4, 4), np.nan))
    # Every one of these is a StackIKError, so callers can catch the family.
    assert issubclass(TaskNotFound, StackIKError) and issubclass(InvalidTransform, StackIKError)
    # After all the rejected input the targets are unchanged and the task is met.
    np.testing.assert_allclose(solver.solve_velocity_dq(PANDA_READY), 0.0, atol=1e-12)


def test_task_classes_are_exported_and_typed(panda):
    set_q(panda, PANDA_READY)
    assert JointTask("j", panda, "panda_joint1", 0.2).get_type() == TaskType.JOINT
    assert PostureTask("p", panda).get_type() == TaskType.POSTURE
    assert COMTask("c", panda).get_type() == TaskType.COM
    assert RelativeFrameTask("r", panda, "panda_link0", "panda_hand").get_type() == (
        TaskType.RELATIVE_FRAME
    )
    assert AbsoluteFrameTask("a", panda, "panda_link0", "panda_hand").get_type() == (
        TaskType.ABSOLUTE_FRAME
    )


@pytest.mark.parametrize("family", ["frame", "posture"])
def test_task_write_refuses_buffers_it_cannot_fill_with_a_typed_error(panda, family):
    """The public ``write`` checks a caller's buffers before any compiled writer runs:
    wrong shapes raise ShapeError; read-only, float32 or non-array buffers a typed error,
    never numba's; nothing is written."""
    solver = make_solver(panda, PANDA_READY)
    if family == "frame":
        task = solver.add_frame_task("t", "panda_hand_tcp")
    else:
        task = solver.add_posture_task("t")
    m = task.get_dimension()
    J, x = np.zeros((m, 7)), np.zeros(m)
    read_only = np.zeros((m, 7))
    read_only.flags.writeable = False
    bad = [
        ((np.zeros((m + 1, 7)), x), ShapeError),
        ((J, np.zeros(m - 1)), ShapeError),
        ((np.zeros((m, 7), dtype=np.float32), x), InvalidInput),
        ((read_only, x), InvalidInput),
        ((J.tolist(), x), ShapeError),
    ]
    for args, error in bad:
        with pytest.raises(error):
            task.write(*args)
    assert not J.any() and not x.any()
    task.write(J, x)  # the right buffers are filled
    assert J.any()
