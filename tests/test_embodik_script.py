"""A script written against EmbodiK's documented API (seed 004) runs on stackik with only
the import changed: it is executed once with ``embodik`` (when installed, to prove the
script is valid EmbodiK) and once with ``stackik`` imported under that name.
"""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROBOTS = Path(__file__).resolve().parents[1] / "robots"

SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import {module} as embodik

    robot = embodik.RobotModel("{urdf}", False)
    q = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
    robot.update_configuration(q)
    solver = embodik.KinematicsSolver(robot)
    solver.dt = 0.01
    ee = solver.add_frame_task("ee", "panda_hand_tcp")
    ee.priority = 0
    posture = solver.add_posture_task("posture")
    posture.priority = 1
    posture.set_target_configuration(q)
    start = robot.get_frame_pose("panda_hand_tcp")
    target = np.array(start.translation) + np.array([0.05, 0.05, -0.05])
    ee.set_target_pose(target, np.array(start.rotation))
    solver.configure_collision_constraint(
        0.01, [("panda_hand_0", "panda_link0_0")], [], True, 3
    )
    solver.set_collision_recovery_scale(0.2)
    solver.configure_stall_handler(5, 0.005, 0.3)
    solver.enable_stall_handler(0.01)
    lower, upper = solver.calculate_velocity_box_constraint(0.5, 0.5, 2.0, 10.0, 0.01)
    for _ in range(900):
        result = solver.solve_velocity(q, True)
        q = np.asarray(robot.integrate(q, np.asarray(result.solution), solver.dt))
        robot.update_configuration(q)
    tool = np.asarray(robot.get_frame_pose("panda_hand_tcp").translation)
    reached = np.linalg.norm(tool - target)
    T = np.eye(4)
    T[:3, :3] = np.asarray(start.rotation)
    T[:3, 3] = target + np.array([0.0, 0.02, 0.0])
    options = embodik.PositionIKOptions()
    options.max_iterations = 200
    ik = solver.solve_position(q, T, "panda_hand_tcp", options)
    distance = solver.evaluate_min_collision_distance(q)
    OUT = (float(reached), str(result.status), str(ik.status), float(distance),
           solver.stall_handler_enabled(), float(lower), float(upper))
    """
)


def run(module: str) -> tuple:
    space: dict = {}
    exec(SCRIPT.format(module=module, urdf=ROBOTS / "panda" / "panda.urdf"), space)
    return space["OUT"]


@pytest.mark.parametrize("module", ["stackik", "embodik"])
def test_an_embodik_script_runs_with_only_the_import_changed(module):
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")
    reached, status, ik_status, distance, stall_on, lower, upper = run(module)
    assert reached < 1e-3, module  # the frame task converged
    assert "SUCCESS" in status and "SUCCESS" in ik_status and stall_on
    assert distance >= 0.01 - 1e-3
    assert lower < 0 < upper
    assert np.isfinite([lower, upper]).all()
