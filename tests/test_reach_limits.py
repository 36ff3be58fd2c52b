"""``LIMITS`` is true: a target so labelled has no solution inside the limits.

The shipped Panda (self-collision at 0 m) studies a box workpiece with the default
budget. Every target labelled ``LIMITS`` ("reachable only outside the joint limits") is
studied again with a generous search (60 rounds of 200-iteration restarts inside the
limits, verified by the same solver): it reaches none of them. Before the limits probe
spent restarts inside the limits, that search reached 5 of the 13 targets so labelled
here (near-face poses with joint 4 near its lower limit).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

trimesh = pytest.importorskip("trimesh")

from stackik import KinematicsSolver, RobotModel  # noqa: E402
from stackik.reach import ReachBudget, ReachStudy, Reason, targets_from_mesh  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PANDA = ROOT / "robots" / "panda" / "panda.urdf"


def box_poses(tmp_path: Path) -> np.ndarray:
    box = trimesh.creation.box(extents=(0.3, 0.5, 0.2))
    box.apply_translation((0.5, 0.0, 0.1))
    keep = box.face_normals[:, 2] > -0.5  # no targets under the part
    path = tmp_path / "box.stl"
    trimesh.Trimesh(box.vertices, box.faces[keep], process=False).export(path)
    rolls = 6
    return np.concatenate(
        [
            targets_from_mesh(path, spacing=0.03, roll=2 * np.pi * k / rolls, seed=k).poses
            for k in range(rolls)
        ]
    )


def test_limits_labels_survive_a_generous_search(tmp_path):
    robot = RobotModel(PANDA, srdf_path=PANDA.with_suffix(".srdf"), load_visuals=False)
    solver = KinematicsSolver(robot)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pairs always close get a lower minimum
        solver.configure_collision_constraint(0.0)
    poses = box_poses(tmp_path)
    res = ReachStudy(robot, "panda_hand_tcp", poses, solver, evaluators=[]).run(
        "serial", progress=False
    )
    assert res.reachable.sum() > 500
    # Reached only without limits, and none inside them: LIMITS and COLLISION labels.
    assert (res.reason == Reason.COLLISION).sum() > 20
    limits = np.flatnonzero(res.reason == Reason.LIMITS)
    generous = ReachBudget(neighbor_attempts=0, restart_rounds=60, restart_iterations=200)
    suspects = np.flatnonzero(np.isin(res.reason, [Reason.LIMITS, Reason.NO_IK]))
    again = ReachStudy(
        robot, "panda_hand_tcp", poses[suspects], solver, evaluators=[], seeding="random",
        budget=generous,
    ).run("serial", progress=False)  # fmt: skip
    reached = suspects[again.reason == Reason.REACHABLE]
    assert not np.isin(reached, limits).any(), f"{np.isin(reached, limits).sum()} false LIMITS"
    # Every target the generous search reached was reached within limits there: its
    # configuration is inside them.
    lo, hi = robot.get_joint_limits()
    q = again.q[again.reason == Reason.REACHABLE]
    assert np.all((q >= lo - 1e-9) & (q <= hi + 1e-9))


def test_confirmation_rounds_are_a_budget_setting():
    assert ReachBudget().limits_confirm_rounds > 0
    with pytest.raises(Exception, match="limits_confirm_rounds"):
        ReachBudget(limits_confirm_rounds=-1)
