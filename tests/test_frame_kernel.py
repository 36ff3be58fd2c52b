"""The compiled frame-task rows against Pinocchio called directly.

``FrameTask`` computes its pose error and LOCAL_WORLD_ALIGNED Jacobian in one compiled
call from the cache's joint placements and ``data.J``. Checked here against
``pin.updateFramePlacements``, ``pin.getFrameJacobian`` and ``pin.log3`` on random
configurations of a serial arm, a floating-base humanoid and a gripper with folded
mimic joints; the rotation log over its whole range, near 0 and near pi included.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from stackik import KinematicsSolver, RobotModel
from stackik.tasks._frame_kernel import frame_error_jacobian
from stackik.tasks.frame import FrameTask

ROOT = Path(__file__).resolve().parents[1]
PANDA = ROOT / "robots" / "panda" / "panda.urdf"
HUMANOID = ROOT / "robots" / "humanoid" / "humanoid.urdf"
GRIPPER = Path(__file__).resolve().parent / "data" / "gripper.urdf"


def _robots() -> list[tuple[RobotModel, list[str]]]:
    panda = RobotModel(PANDA, load_visuals=False, load_collisions=False)
    humanoid = RobotModel(HUMANOID, floating_base=True, load_visuals=False, load_collisions=False)
    gripper = RobotModel(GRIPPER, mimic="fold", load_visuals=False, load_collisions=False)
    return [
        (panda, ["panda_hand_tcp", "panda_link4"]),
        (humanoid, [f.name for f in humanoid.model.frames][2::9]),
        (gripper, ["tcp", "left_tip", "inner_tip", "outer_link"]),
    ]


def _random_rotation(rng: np.random.Generator) -> np.ndarray:
    return pin.exp3(rng.normal(size=3))


@pytest.mark.parametrize("case", [0, 1, 2], ids=["panda", "humanoid", "gripper_fold_mimic"])
def test_frame_rows_match_pinocchio(case: int) -> None:
    robot, frames = _robots()[case]
    rng = np.random.default_rng(7 + case)
    solver = KinematicsSolver(robot)
    tasks = [solver.add_frame_task(f"t{i}", name) for i, name in enumerate(frames)]
    model = robot.model
    data = model.createData()
    checked = 0
    for _ in range(20):
        q = robot.random_configuration(rng)
        solver._engine.update(q)
        pin.computeJointJacobians(model, data, q)
        pin.updateFramePlacements(model, data)
        for task in tasks:
            target_p = rng.uniform(-1.0, 1.0, 3)
            target_R = _random_rotation(rng)
            task.set_target_pose(target_p, target_R)
            J = np.full((6, robot.nv), np.nan)
            error = np.full(6, np.nan)
            task._compute(J, error)
            fid = model.getFrameId(task.frame_name)
            oMf = data.oMf[fid]
            J_ref = pin.getFrameJacobian(model, data, fid, pin.LOCAL_WORLD_ALIGNED)
            np.testing.assert_allclose(J, J_ref.reshape(6, robot.nv), rtol=0, atol=1e-12)
            np.testing.assert_allclose(error[:3], target_p - oMf.translation, atol=1e-12)
            np.testing.assert_allclose(
                error[3:], pin.log3(target_R @ oMf.rotation.T), rtol=0, atol=1e-11
            )
            checked += 1
    assert checked == 20 * len(tasks)


def _log(Rt: np.ndarray, R: np.ndarray) -> np.ndarray:
    """The kernel's rotation log on a frame at ``R`` (joint 0 at identity, no Jacobian)."""
    oMi = np.zeros((1, 12))
    oMi[0, :9] = R.ravel(order="F")
    frame = (0, np.eye(3), np.zeros(3))
    columns = (np.zeros(0, dtype=np.bool_), np.zeros(0, dtype=np.int64))
    J = np.zeros((6, 0))
    error = np.zeros(6)
    frame_error_jacobian(oMi, np.zeros((6, 0)), frame, columns, (np.zeros(3), Rt), J, error)
    return error[3:]


ANGLES = [0.0, 1e-14, 1e-9, 1e-5, 0.3, 1.5, 3.0, np.pi - 1e-3, np.pi - 1e-7]


@pytest.mark.parametrize("angle", ANGLES)
def test_rotation_log_over_its_range(angle: float) -> None:
    rng = np.random.default_rng(3)
    for _ in range(25):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        R = _random_rotation(rng)
        Rt = pin.exp3(angle * axis) @ R  # Rt R^T = exp(angle axis)
        got = _log(Rt, R)
        np.testing.assert_allclose(got, pin.log3(Rt @ R.T), rtol=0, atol=1e-9)
        np.testing.assert_allclose(np.linalg.norm(got), angle, rtol=0, atol=1e-9)


def test_rotation_log_at_pi_is_a_log() -> None:
    """At exactly pi either axis sign is a logarithm: exp of the result gives the rotation."""
    rng = np.random.default_rng(5)
    for _ in range(25):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        R = _random_rotation(rng)
        Rt = pin.exp3(np.pi * axis) @ R
        got = _log(Rt, R)
        np.testing.assert_allclose(np.linalg.norm(got), np.pi, atol=1e-7)
        np.testing.assert_allclose(pin.exp3(got), Rt @ R.T, atol=1e-12)


def test_targets_are_the_tasks_own_copies() -> None:
    """A target array the caller changes afterwards does not move the target."""
    robot = _robots()[0][0]
    task = FrameTask("ee", robot, "panda_hand_tcp")
    p = np.array([0.4, 0.1, 0.5])
    R = np.asfortranarray(pin.exp3(np.array([0.1, 0.2, 0.3])))
    task.set_target_pose(p, R)
    p[0] = 9.0
    R[0, 0] = 5.0
    got_p, got_R = task._target
    assert got_p[0] == 0.4 and got_R.flags.c_contiguous
    np.testing.assert_array_equal(got_R, pin.exp3(np.array([0.1, 0.2, 0.3])))


@pytest.mark.parametrize("kind", ["FRAME_POSE", "FRAME_POSITION", "FRAME_ORIENTATION"])
def test_frame_task_rows_in_one_call_match_pinocchio_and_the_python_path(kind):
    """The task's compiled rows and velocity (masks, weight, feed-forward velocity, error
    override, excluded joints) against Pinocchio called directly, and bit for bit against
    the base class's path (``_compute``, masking, velocity in NumPy)."""
    from stackik.tasks import TaskType
    from stackik.tasks.base import Task

    rng = np.random.default_rng(7)
    humanoid = RobotModel(HUMANOID, floating_base=True, load_visuals=False, load_collisions=False)
    model = humanoid.model
    solver = KinematicsSolver(humanoid)
    task = FrameTask("t", solver.kinematics, "right_hand", TaskType[kind])
    data = model.createData()
    pin.seed(7)  # (Pinocchio's own generator: the same configurations in any test order)
    for case in range(6):
        q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
        solver.kinematics.set_unchecked(q)
        target = pin.SE3(_random_rotation(rng), rng.normal(size=3))
        task.set_target_pose(target)
        task.gain = float(rng.uniform(0.5, 20.0))
        task.weight = [1.0, 4.0, 0.3][case % 3]
        if kind == "FRAME_POSE" and case >= 2:
            task.set_position_mask([1, 0, 1])
        tv = rng.normal(size=6) if case % 2 else None
        if tv is None:
            task.clear_target_velocity()
        else:
            task.set_target_velocity(tv)
        task.set_excluded_joint_indices([0, 7, 12] if case >= 3 else [])
        rows = {"FRAME_POSE": np.arange(6), "FRAME_POSITION": np.arange(3)}.get(
            kind, np.arange(3, 6)
        )
        if kind == "FRAME_POSE" and case >= 2:
            rows = np.array([0, 2, 3, 4, 5])
        assert task.get_dimension() == rows.size
        m = rows.size
        override = rng.normal(size=m) if case == 5 else None
        if override is None:
            task.clear_error_override()
        else:
            task.set_error_override(override)
        J, xdot = np.full((m, model.nv), np.nan), np.full(m, np.nan)
        task.write_rows(J, xdot)
        # Pinocchio directly.
        pin.computeJointJacobians(model, data, q)
        pin.updateFramePlacements(model, data)
        fid = model.getFrameId("right_hand")
        oMf = data.oMf[fid]
        J6 = pin.getFrameJacobian(model, data, fid, pin.LOCAL_WORLD_ALIGNED)
        e6 = np.r_[target.translation - oMf.translation, pin.log3(target.rotation @ oMf.rotation.T)]
        J_ref = J6[rows].copy()
        J_ref[:, task.get_excluded_joint_indices()] = 0.0
        e = e6[rows] if override is None else override
        x_ref = task.gain * e + (0.0 if tv is None else tv[rows])
        root = np.sqrt(task.weight)
        np.testing.assert_allclose(J, root * J_ref, rtol=0, atol=1e-12)
        np.testing.assert_allclose(xdot, root * x_ref, rtol=0, atol=1e-12)
        # The base class's path gives the same bits.
        J2, x2 = np.full((m, model.nv), np.nan), np.full(m, np.nan)
        Task.write_rows(task, J2, x2)
        np.testing.assert_array_equal(J, J2)
        np.testing.assert_array_equal(xdot, x2)
