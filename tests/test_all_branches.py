"""find_configs(all_branches=True): every branch, 2 pi copies collapsed, flags, checks.

References are independent of the solver: the UR5's standard-DH closed form
(tests/ur5_dh.py), the OPW paper's formulas on robots/opw_arm (tests/arm_references.py),
Pinocchio FK on a fresh Data and brute force over the 2 pi copies.

- The closed form (default) and the numeric search (analytic=False, count budgets)
  return one configuration per reference branch inside the limits, with its flags; the
  configuration is the in-limit copy nearest reference_q; no two results are 2 pi
  copies; include_alternates adds the copies, aligned branch ids.
- +-pi limits (the UR5 with its limits narrowed) and the OPW arm's own limits: the
  branches outside the limits are rejected as such.
- Collision and validate: only valid branches are returned; each rejected branch is
  reported with its reason; a validate that refuses the nearest copy gets another one.
- Redundant arm (Panda): distinct solutions at least min_joint_distance apart.
- nearest_config is the nearest of all branches and copies (brute force).
"""

from __future__ import annotations

import itertools
import math
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from arm_references import opw_arm_closed_form
from stackik import BranchFlags, CollisionMarginWarning, InvalidInput, KinematicsSolver, RobotModel
from ur5_dh import ur5_closed_form

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
TWO_PI = 2 * math.pi


def wrap(q):
    return (np.asarray(q) + math.pi) % TWO_PI - math.pi


def fk(robot: RobotModel, q: np.ndarray, frame: str) -> np.ndarray:
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, q)
    return data.oMf[robot.model.getFrameId(frame)].homogeneous.copy()


def nearest_copy(q, ref, lo, hi):
    """Brute force: the 2 pi copy of each joint inside [lo, hi] nearest ref (or None)."""
    out = []
    for v, r, a, b in zip(q, ref, lo, hi, strict=True):
        copies = [v + TWO_PI * k for k in range(-3, 4) if a - 1e-9 <= v + TWO_PI * k <= b + 1e-9]
        if not copies:
            return None
        out.append(min(copies, key=lambda c, r=r: abs(c - r)))
    return np.array(out)


def expected(robot, reference, ref_q):
    """Reference branches inside the limits, as their nearest copies."""
    lo, hi = robot.get_joint_limits()
    out = [nearest_copy(wrap(q), ref_q, lo, hi) for q in reference]
    return [q for q in out if q is not None]


def assert_same(found, want, tol=1e-6):
    assert len(found) == len(want), (len(found), len(want))
    for q in want:
        assert min(np.abs(np.asarray(f) - q).max() for f in found) < tol


@pytest.fixture(scope="module")
def ur5() -> RobotModel:
    return RobotModel(ROBOTS / "ur5" / "ur5.urdf", load_collisions=False, load_visuals=False)


@pytest.fixture(scope="module")
def ur5_pi() -> RobotModel:
    robot = RobotModel(ROBOTS / "ur5" / "ur5.urdf", load_collisions=False, load_visuals=False)
    robot.set_joint_limits(np.full(6, -math.pi), np.full(6, math.pi))
    return robot


def targets(robot, frame, n, seed):
    rng = np.random.default_rng(seed)
    lo, hi = robot.get_joint_limits()
    return [fk(robot, rng.uniform(lo, hi), frame) for _ in range(n)]


def check_result(robot, frame, res, T):
    lo, hi = robot.get_joint_limits()
    for q, flags in zip(res, res.branches, strict=True):
        M = fk(robot, q, frame)
        assert np.linalg.norm(M[:3, 3] - T[:3, 3]) <= 1e-5 + 1e-9
        assert np.linalg.norm(pin.log3(T[:3, :3].T @ M[:3, :3])) <= 1e-4 + 1e-9
        assert np.all(q >= lo - 1e-9) and np.all(q <= hi + 1e-9)
        assert flags is None or isinstance(flags, BranchFlags)
    keys = [wrap(q) for q in res]
    for a, b in itertools.combinations(keys, 2):
        assert np.abs(wrap(a - b)).max() > 1e-3  # no two results are 2 pi copies


# -- closed form --------------------------------------------------------------------------------
@pytest.mark.parametrize("limits", ["2pi", "pi"])
def test_ur5_every_branch_nearest_copy_and_flags(ur5, ur5_pi, limits):
    robot = ur5 if limits == "2pi" else ur5_pi
    solver = KinematicsSolver(robot)
    ref_q = np.array([0.3, -1.2, 1.4, -0.6, 1.1, 0.4])
    for T in targets(robot, "tool0", 20, seed=11):
        res = solver.find_configs(T, "tool0", reference_q=ref_q, all_branches=True)
        assert res.method == "analytic:ur" and res.stopped_by == "analytic"
        reference = ur5_closed_form(T)
        assert_same(list(res), expected(robot, [q for _, q in reference], ref_q))
        check_result(robot, "tool0", res, T)
        assert {tuple(f) for f in res.branches} <= {f for f, _ in reference}
        for q, flags in zip(res, res.branches, strict=True):
            assert solver.branch_flags(q, "tool0") == flags
        dist = [np.linalg.norm(q - ref_q) for q in res]
        assert dist == sorted(dist)
        assert res.branch_ids == sorted(set(res.branch_ids), key=res.branch_ids.index)


def test_ur5_alternates_follow_their_branch(ur5):
    solver = KinematicsSolver(ur5)
    T = targets(ur5, "tool0", 1, seed=12)[0]
    base = solver.find_configs(T, "tool0", all_branches=True)
    res = solver.find_configs(T, "tool0", all_branches=True, include_alternates=True)
    assert len(res) == sum(len(solver.alternate_configs(q)) for q in base)
    assert len(solver.get_alternate_configs(base[0])) == len(solver.alternate_configs(base[0]))
    assert set(res.branch_ids) == set(range(len(base)))
    for q, i, flags in zip(res, res.branch_ids, res.branches, strict=True):
        np.testing.assert_allclose(wrap(q - base[i]), 0.0, atol=1e-9)
        assert flags == base.branches[i]


def test_opw_arm_every_branch_in_its_limits():
    robot = RobotModel(ROBOTS / "opw_arm" / "opw_arm.urdf", load_collisions=False)
    solver = KinematicsSolver(robot)
    ref_q = np.zeros(6)
    rejected = 0
    for T in targets(robot, "tool0", 20, seed=13):
        res = solver.find_configs(T, "tool0", reference_q=ref_q, all_branches=True)
        assert res.method == "analytic:opw"
        reference = opw_arm_closed_form(T)
        assert_same(list(res), expected(robot, reference, ref_q))
        check_result(robot, "tool0", res, T)
        assert all(tuple(f) != (0, 0, 0) for f in res.branches)
        rejected += res.rejected["limits"]
        assert res.rejected["limits"] == len(reference) - len(res)
        assert [r[1] for r in res.rejected_branches] == ["limits"] * res.rejected["limits"]
    assert rejected > 0  # the arm's limits do cut branches


# -- numeric search ---------------------------------------------------------------------------
@pytest.mark.parametrize("limits", ["2pi", "pi"])
def test_numeric_search_finds_every_ur5_branch(ur5, ur5_pi, limits):
    robot = ur5 if limits == "2pi" else ur5_pi
    solver = KinematicsSolver(robot)
    ref_q = np.zeros(6)
    complete = 0
    for k, T in enumerate(targets(robot, "tool0", 12, seed=14)):
        res = solver.find_configs(
            T,
            "tool0",
            None,
            None,
            ref_q,
            seed=k,
            all_branches=True,
            analytic=False,
            max_attempts=64,
        )
        assert res.method == "numeric" and res.attempts <= 64
        reference = ur5_closed_form(T)
        want = expected(robot, [q for _, q in reference], ref_q)
        check_result(robot, "tool0", res, T)
        # every result is a reference branch (the flags tell the UR5's branches apart)
        flags = [tuple(f) for f in res.branches]
        assert len(set(flags)) == len(flags) and set(flags) <= {f for f, _ in reference}
        for q, f in zip(res, flags, strict=True):
            (w,) = [w for g, w in reference if g == f]
            assert np.abs(wrap(q - w)).max() < 1e-2  # same branch, not a far 2 pi copy
        complete += len(res) == len(want)
        if len(want) == 8:
            assert res.stopped_by == "all_branches" and len(res) == 8
    assert complete >= 11


def test_numeric_search_is_reproducible_and_keeps_its_count_budget(ur5):
    solver = KinematicsSolver(ur5)
    T = targets(ur5, "tool0", 1, seed=15)[0]
    opts = {"all_branches": True, "analytic": False, "max_iterations": 3000, "seed": 3}
    a = solver.find_configs(T, "tool0", None, None, np.zeros(6), **opts)
    b = solver.find_configs(T, "tool0", None, None, np.zeros(6), **opts)
    assert a.iterations == b.iterations and len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    few = solver.find_configs(T, "tool0", 2, None, np.zeros(6), **opts)
    assert len(few) == 2 and few.stopped_by == "max_solutions"


def test_numeric_search_on_the_opw_arm():
    robot = RobotModel(ROBOTS / "opw_arm" / "opw_arm.urdf", load_collisions=False)
    solver = KinematicsSolver(robot)
    for k, T in enumerate(targets(robot, "tool0", 3, seed=16)):
        res = solver.find_configs(
            T,
            "tool0",
            None,
            None,
            np.zeros(6),
            seed=k,
            all_branches=True,
            analytic=False,
            max_attempts=200,
        )
        want = expected(robot, opw_arm_closed_form(T), np.zeros(6))
        check_result(robot, "tool0", res, T)
        assert len(res) == len(want)


def test_branch_filter_and_locked_joints(ur5):
    solver = KinematicsSolver(ur5)
    T = targets(ur5, "tool0", 1, seed=17)[0]
    shoulder = solver.find_configs(T, "tool0", all_branches=True, branch=(1, None, None))
    assert shoulder and all(f.shoulder == 1 for f in shoulder.branches)
    everything = solver.find_configs(T, "tool0", all_branches=True)
    assert len(shoulder) == sum(f.shoulder == 1 for f in everything.branches)
    q_true = everything[0]
    locked = solver.find_configs(
        T, "tool0", None, 0.5, q_true, all_branches=True, locked_joints=["shoulder_pan_joint"]
    )
    assert locked.method == "numeric" and locked
    assert all(q[0] == q_true[0] for q in locked)


def test_nearest_config_is_the_nearest_branch_and_copy(ur5):
    solver = KinematicsSolver(ur5)
    rng = np.random.default_rng(18)
    lo, hi = ur5.get_joint_limits()
    for T in targets(ur5, "tool0", 5, seed=18):
        ref = rng.uniform(lo, hi)
        q = solver.nearest_config(T, "tool0", ref)
        every = [a for _, b in ur5_closed_form(T) for a in solver.alternate_configs(b)]
        best = min(every, key=lambda c: np.linalg.norm(c - ref))
        np.testing.assert_allclose(q, best, atol=1e-7)


# -- checks: collision and validate -------------------------------------------------------------
def test_collision_free_branches_only_and_rejections_reported():
    robot = RobotModel(ROBOTS / "ur5" / "ur5.urdf", srdf_path=ROBOTS / "ur5" / "ur5.srdf")
    solver = KinematicsSolver(robot)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionMarginWarning)
        solver.configure_collision_constraint(0.005)
    names = robot.get_collision_pair_names()
    watched = [names.index(p) for p in solver.get_active_collision_pairs()]
    seen_rejection = False
    for T in targets(robot, "tool0", 30, seed=19):
        # a generous budget: the first collision query loads the collision kernels
        res = solver.find_configs(T, "tool0", time_budget=2.0, all_branches=True)
        for q in res:
            robot.update_kinematics(q)
            assert np.asarray(robot.compute_collision_distances())[watched].min() >= 0.005
        for flags, reason, q in res.rejected_branches:
            assert reason == "collision" and isinstance(flags, BranchFlags)
            robot.update_kinematics(q)
            assert np.asarray(robot.compute_collision_distances())[watched].min() < 0.005
            seen_rejection = True
        reference = {f for f, _ in ur5_closed_form(T)}
        got = {tuple(f) for f in res.branches} | {tuple(r[0]) for r in res.rejected_branches}
        assert got == reference
        assert res.rejected["collision"] == len(res.rejected_branches)
    assert seen_rejection


def test_validate_rejects_branches_and_copies(ur5):
    solver = KinematicsSolver(ur5)
    T = targets(ur5, "tool0", 1, seed=20)[0]
    # (a budget no loaded machine runs out of: the counts below are not about time)
    res = solver.find_configs(
        T, "tool0", all_branches=True, validate=lambda q: q[2] > 0, time_budget=10.0
    )
    everything = solver.find_configs(T, "tool0", all_branches=True, time_budget=10.0)
    assert all(q[2] > 0 for q in res)
    # elbow angles in (-2 pi, 0] have a copy in (0, 2 pi]: the copy is taken
    assert len(res) == len(everything)
    assert res.rejected["validation"] >= sum(q[2] <= 0 for q in everything)
    # a rule no copy can pass: the branch is reported
    res = solver.find_configs(
        T, "tool0", all_branches=True, validate=lambda q: q[4] > 7, time_budget=10.0
    )
    assert len(res) == 0 and len(res.rejected_branches) == len(everything)
    assert {r[1] for r in res.rejected_branches} == {"validation"}


# -- redundant arm ------------------------------------------------------------------------------
def test_redundant_arm_spreads_over_the_self_motion():
    robot = RobotModel(ROBOTS / "panda" / "panda.urdf", load_collisions=False)
    solver = KinematicsSolver(robot)
    T = fk(robot, np.array([0.1, -0.4, 0.2, -2.1, 0.1, 1.7, 0.6]), "panda_hand_tcp")
    res = solver.find_configs(
        T,
        "panda_hand_tcp",
        12,
        None,
        np.zeros(7),
        all_branches=True,
        min_joint_distance=0.3,
        max_attempts=300,
    )
    assert res.method == "numeric" and len(res) == 12
    check_result(robot, "panda_hand_tcp", res, T)
    assert all(f is None for f in res.branches)
    for a, b in itertools.combinations(list(res), 2):
        assert np.abs(wrap(a - b)).max() >= 0.3


def test_floating_base_chain_starts_at_the_base():
    robot = RobotModel(ROBOTS / "ur5" / "ur5.urdf", floating_base=True, load_collisions=False)
    solver = KinematicsSolver(robot)
    ref = robot.neutral_configuration()
    ref[:3] = (0.4, -0.2, 0.3)
    ref[3:7] = pin.Quaternion(pin.exp3(np.array([0.2, 0.0, 0.7]))).coeffs()
    q_true = ref.copy()
    q_true[7:] = (0.3, -1.2, 1.4, -0.6, 1.1, 0.4)
    T = fk(robot, q_true, "tool0")
    res = solver.find_configs(T, "tool0", reference_q=ref, all_branches=True)
    assert res.method == "analytic:ur" and len(res) == 8
    for q in res:
        np.testing.assert_array_equal(q[:7], ref[:7])
        np.testing.assert_allclose(fk(robot, q, "tool0"), T, atol=1e-9)
    numeric = solver.find_configs(
        T, "tool0", None, None, ref, all_branches=True, analytic=False, max_attempts=64
    )
    assert len(numeric) == 8 and numeric.stopped_by == "all_branches"


def test_bad_options(ur5):
    solver = KinematicsSolver(ur5)
    T = targets(ur5, "tool0", 1, seed=21)[0]
    with pytest.raises(InvalidInput):
        solver.find_configs(T, "tool0", all_branches=True, min_joint_distance=-1.0)
    with pytest.raises(InvalidInput):
        solver.find_configs(T, "tool0", 0, all_branches=True)
