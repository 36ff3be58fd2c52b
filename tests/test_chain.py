"""Tests of stackik.ik.chain: compiled chain kinematics and the global pose IK.

Every number is checked against an independent computation: Pinocchio's frame
placements and LOCAL_WORLD_ALIGNED Jacobians for the kinematics, and Pinocchio forward
kinematics plus the model's limits for every IK solution.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from stackik import (
    FrameNotFound,
    InvalidInput,
    InvalidTransform,
    NonFiniteInput,
    RobotModel,
    ShapeError,
    _pose_kernel,
)
from stackik.ik import chain as chain_mod
from stackik.ik import chain_kernels
from stackik.ik.chain import ChainIKResult, SerialChain

ROOT = Path(__file__).resolve().parents[1]
ROBOTS = ROOT / "robots"
PANDA = ROBOTS / "panda" / "panda.urdf"
UR5 = ROBOTS / "ur5" / "ur5.urdf"
DUAL = ROBOTS / "dual_arm" / "dual_arm.urdf"
DATA = Path(__file__).resolve().parent / "data"

# Success thresholds of the TRAC-IK benchmark protocol (the solver's defaults are stricter).
POS_OK = 1e-4  # m
ORI_OK = 1e-3  # rad


def needs(*paths):
    missing = [str(p.relative_to(ROOT)) for p in paths if not p.exists()]
    return pytest.mark.skipif(bool(missing), reason=f"missing {', '.join(missing)}")


# A 7-joint arm with every supported joint type: aligned and unaligned revolute axes,
# an unaligned prismatic joint, an unaligned continuous joint, and rotated origins.
MIXED_URDF = """<?xml version="1.0"?>
<robot name="mixed">
  <link name="base"/>
  <joint name="j1" type="revolute">
    <parent link="base"/><child link="l1"/>
    <origin xyz="0.05 0 0.2" rpy="0 0 0.3"/><axis xyz="0 0 1"/>
    <limit lower="-2.5" upper="2.5" effort="10" velocity="1"/>
  </joint>
  <link name="l1"/>
  <joint name="slide" type="prismatic">
    <parent link="l1"/><child link="l2"/>
    <origin xyz="0 0.1 0.1" rpy="0.2 -0.1 0"/><axis xyz="0 0.6 0.8"/>
    <limit lower="-0.1" upper="0.3" effort="10" velocity="1"/>
  </joint>
  <link name="l2"/>
  <joint name="j3" type="revolute">
    <parent link="l2"/><child link="l3"/>
    <origin xyz="0 0 0.3" rpy="0 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-2" upper="2" effort="10" velocity="1"/>
  </joint>
  <link name="l3"/>
  <joint name="spin" type="continuous">
    <parent link="l3"/><child link="l4"/>
    <origin xyz="0.25 0 0" rpy="0 0.4 0"/><axis xyz="0.7071067811865476 0.7071067811865476 0"/>
  </joint>
  <link name="l4"/>
  <joint name="j5" type="revolute">
    <parent link="l4"/><child link="l5"/>
    <origin xyz="0 0 0.2" rpy="0 0 0"/><axis xyz="1 0 0"/>
    <limit lower="-2.5" upper="2.5" effort="10" velocity="1"/>
  </joint>
  <link name="l5"/>
  <joint name="j6" type="revolute">
    <parent link="l5"/><child link="l6"/>
    <origin xyz="0 0.05 0.15" rpy="0.1 0.2 0.3"/><axis xyz="0.36 0.48 0.8"/>
    <limit lower="-2.5" upper="2.5" effort="10" velocity="1"/>
  </joint>
  <link name="l6"/>
  <joint name="j7" type="revolute">
    <parent link="l6"/><child link="l7"/>
    <origin xyz="0 0 0.1" rpy="0 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="10" velocity="1"/>
  </joint>
  <link name="l7"/>
  <joint name="tool_joint" type="fixed">
    <parent link="l7"/><child link="tool"/>
    <origin xyz="0.02 0 0.08" rpy="0.5 0 0"/>
  </joint>
  <link name="tool"/>
</robot>
"""


# -- helpers -------------------------------------------------------------------------------------
def load(path: Path) -> pin.Model:
    return pin.buildModelFromUrdf(str(path))


def in_limits_q(model: pin.Model, rng: np.random.Generator) -> np.ndarray:
    """Uniform configuration inside the limits (continuous joints: any angle)."""
    lo = np.where(np.isfinite(model.lowerPositionLimit), model.lowerPositionLimit, -1.0)
    hi = np.where(np.isfinite(model.upperPositionLimit), model.upperPositionLimit, 1.0)
    lo = np.maximum(lo, -10.0)
    hi = np.minimum(hi, 10.0)
    q = pin.neutral(model)
    q[:] = rng.uniform(lo, hi)
    return pin.normalize(model, q)


def pin_pose(model: pin.Model, q_full: np.ndarray, frame: str, base: str | None = None) -> pin.SE3:
    data = model.createData()
    pin.framesForwardKinematics(model, data, q_full)
    T = pin.SE3(data.oMf[model.getFrameId(frame)])
    if base is not None:
        T = data.oMf[model.getFrameId(base)].inverse() * T
    return T


def pin_jacobian(model: pin.Model, q_full: np.ndarray, frame: str) -> np.ndarray:
    data = model.createData()
    return pin.computeFrameJacobian(
        model, data, q_full, model.getFrameId(frame), pin.LOCAL_WORLD_ALIGNED
    )


def verified(chain: SerialChain, result: ChainIKResult, T_target: pin.SE3) -> bool:
    """The protocol's success test, with Pinocchio FK and the model's own limits."""
    model = chain.model
    q_full = chain.to_full(result.q)
    T = pin_pose(model, q_full, chain.tip_frame, chain.base_frame)
    pos = np.linalg.norm(T.translation - T_target.translation)
    ori = np.linalg.norm(pin.log3(T_target.rotation @ T.rotation.T))
    lo = chain.lower - 1e-12
    hi = chain.upper + 1e-12
    inside = bool(np.all(result.q >= lo) and np.all(result.q <= hi))
    return bool(pos < POS_OK and ori < ORI_OK and inside)


@pytest.fixture(scope="module")
def panda() -> SerialChain:
    if not PANDA.exists():
        pytest.skip("missing robots/panda/panda.urdf")
    return SerialChain.from_model(load(PANDA), "panda_hand_tcp")


@pytest.fixture(scope="module")
def ur5() -> SerialChain:
    if not UR5.exists():
        pytest.skip("missing robots/ur5/ur5.urdf")
    return SerialChain.from_model(load(UR5), "tool0")


@pytest.fixture(scope="module")
def mixed() -> SerialChain:
    return SerialChain.from_model(pin.buildModelFromXML(MIXED_URDF), "tool")


# -- extraction and mapping ------------------------------------------------------------------
def test_panda_chain_structure(panda):
    assert panda.n == 7
    assert panda.joint_names == [f"panda_joint{i}" for i in range(1, 8)]
    np.testing.assert_array_equal(panda.lower, panda.model.lowerPositionLimit)
    np.testing.assert_array_equal(panda.upper, panda.model.upperPositionLimit)
    np.testing.assert_allclose(
        panda.mid_configuration(), 0.5 * (panda.lower + panda.upper), atol=1e-15
    )


def test_mixed_chain_types_and_limits(mixed):
    assert mixed.joint_names == ["j1", "slide", "j3", "spin", "j5", "j6", "j7"]
    kinds = [mixed.model.joints[j].shortname() for j in mixed.joint_ids]
    assert kinds[1] == "JointModelPrismaticUnaligned"
    assert kinds[3] == "JointModelRevoluteUnboundedUnaligned"
    assert kinds[5] == "JointModelRevoluteUnaligned"
    assert mixed.continuous.tolist() == [False, False, False, True, False, False, False]
    assert np.isinf(mixed.lower[3]) and np.isinf(mixed.upper[3])
    assert (mixed.lower[1], mixed.upper[1]) == (-0.1, 0.3)


def test_to_full_from_full_round_trip(mixed):
    model = mixed.model
    rng = np.random.default_rng(3)
    q_ref = in_limits_q(model, rng)
    qc = mixed.from_full(q_ref)
    np.testing.assert_allclose(mixed.to_full(qc, q_ref), q_ref, atol=1e-15)
    qc2 = qc + 0.1
    qc2[3] = 2.5  # continuous joint written as (cos, sin)
    full = mixed.to_full(qc2)
    i = mixed.idx_q[3]
    np.testing.assert_allclose(full[i : i + 2], [np.cos(2.5), np.sin(2.5)], atol=1e-15)
    np.testing.assert_allclose(mixed.from_full(full), qc2, atol=1e-15)


@needs(DUAL)
def test_to_full_keeps_joints_off_the_chain():
    model = load(DUAL)
    ch = SerialChain.from_model(model, "left_tcp", "base_link")
    assert ch.joint_names[0] == "torso_joint" and ch.n == 8
    q_ref = in_limits_q(model, np.random.default_rng(0))
    qc = np.zeros(ch.n)
    full = ch.to_full(qc, q_ref)
    off = np.setdiff1d(np.arange(model.nq), ch.idx_q)
    np.testing.assert_array_equal(full[off], q_ref[off])
    np.testing.assert_array_equal(full[ch.idx_q], qc)


@needs(PANDA)
def test_from_robot_matches_from_model():
    robot = RobotModel(PANDA, load_visuals=False, load_collisions=False)
    a = SerialChain.from_robot(robot, "panda_hand_tcp")
    b = SerialChain.from_model(load(PANDA), "panda_hand_tcp")
    assert a.joint_names == b.joint_names
    q = np.linspace(-0.5, 0.5, 7)
    for x, y in zip(a.fk(q), b.fk(q), strict=True):
        np.testing.assert_allclose(x, y, atol=1e-15)


# -- forward kinematics and Jacobian against Pinocchio ------------------------------------
CASES = [
    (PANDA, "panda_hand_tcp", None),
    (UR5, "tool0", None),
    (DUAL, "left_tcp", "base_link"),
    (DUAL, "left_tcp", None),
]


@pytest.mark.parametrize(("path", "tip", "base"), CASES)
def test_fk_and_jacobian_match_pinocchio(path, tip, base):
    if not path.exists():
        pytest.skip(f"missing {path}")
    model = load(path)
    ch = SerialChain.from_model(model, tip, base)
    rng = np.random.default_rng(11)
    for _ in range(20):
        q_full = in_limits_q(model, rng)
        qc = ch.from_full(q_full)
        R, p = ch.fk(qc)
        T = pin_pose(model, q_full, tip, base)
        np.testing.assert_allclose(R, T.rotation, atol=1e-12)
        np.testing.assert_allclose(p, T.translation, atol=1e-12)
        J = ch.jacobian(qc)
        Jp = pin_jacobian(model, q_full, tip)[:, ch.idx_v]
        np.testing.assert_allclose(J, Jp, atol=1e-12)


@needs(DUAL)
def test_fk_and_jacobian_relative_to_torso():
    """Chain torso -> left_tcp: poses and axes expressed in the torso frame."""
    model = load(DUAL)
    ch = SerialChain.from_model(model, "left_tcp", "torso")
    assert "torso_joint" not in ch.joint_names and ch.n == 7
    rng = np.random.default_rng(5)
    for _ in range(20):
        q_full = in_limits_q(model, rng)
        qc = ch.from_full(q_full)
        R, p = ch.fk(qc)
        T = pin_pose(model, q_full, "left_tcp", "torso")
        np.testing.assert_allclose(R, T.rotation, atol=1e-12)
        np.testing.assert_allclose(p, T.translation, atol=1e-12)
        # The torso does not move with the arm joints: rotate the world-aligned columns.
        R_wt = pin_pose(model, q_full, "torso").rotation
        Jw = pin_jacobian(model, q_full, "left_tcp")[:, ch.idx_v]
        expected = np.vstack([R_wt.T @ Jw[:3], R_wt.T @ Jw[3:]])
        np.testing.assert_allclose(ch.jacobian(qc), expected, atol=1e-12)


def test_fk_and_jacobian_prismatic_and_unaligned(mixed):
    model = mixed.model
    rng = np.random.default_rng(2)
    for _ in range(30):
        q_full = in_limits_q(model, rng)
        qc = mixed.from_full(q_full)
        R, p = mixed.fk(qc)
        T = pin_pose(model, q_full, "tool")
        np.testing.assert_allclose(R, T.rotation, atol=1e-12)
        np.testing.assert_allclose(p, T.translation, atol=1e-12)
        np.testing.assert_allclose(
            mixed.jacobian(qc), pin_jacobian(model, q_full, "tool")[:, mixed.idx_v], atol=1e-12
        )


def test_fk_accepts_fortran_and_strided_input(mixed):
    q = np.asfortranarray(np.linspace(-0.3, 0.3, 14).reshape(2, 7))[0]
    R, p = mixed.fk(q)
    R2, p2 = mixed.fk(np.ascontiguousarray(q))
    np.testing.assert_array_equal(R, R2)
    np.testing.assert_array_equal(p, p2)


def test_pose_error_log3_matches_pinocchio():
    """The kernel's log3 (run as plain Python) against pin.log3, including angles near pi."""
    pose_error = getattr(_pose_kernel.pose_error, "py_func", _pose_kernel.pose_error)
    rng = np.random.default_rng(4)
    e = np.empty(6)
    for k in range(300):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        angle = [rng.uniform(0, np.pi), np.pi - 10.0 ** rng.uniform(-12, -2), 1e-9, 0.0][k % 4]
        R_target = pin.exp3(rng.normal(size=3))
        R = pin.exp3(-angle * axis) @ R_target  # R_target R^T = exp(angle axis)
        T = np.hstack([R_target, rng.normal(size=(3, 1))])
        p = rng.normal(size=3)
        ep, eo = pose_error(T, R, p, e)
        w = pin.log3(R_target @ R.T)
        np.testing.assert_allclose(e[:3], T[:, 3] - p, atol=1e-15)
        np.testing.assert_allclose(e[3:], w, atol=1e-9)
        assert eo == pytest.approx(np.linalg.norm(w), abs=1e-9)
        assert ep == pytest.approx(np.linalg.norm(T[:, 3] - p), abs=1e-15)


# -- inverse kinematics ------------------------------------------------------------------
@pytest.mark.parametrize("which", ["panda", "ur5", "mixed"])
def test_converges_from_nearby_seeds(which, request):
    ch = request.getfixturevalue(which)
    rng = np.random.default_rng(21)
    for _ in range(20):
        q_star = ch.random_configuration(rng)
        R, p = ch.fk(q_star)
        seed = np.clip(q_star + rng.normal(0, 0.05, ch.n), ch.lower, ch.upper)
        res = ch.solve(
            R, p, seed, position_tolerance=1e-6, orientation_tolerance=1e-6, time_budget=0.05
        )
        assert res.success
        T = pin_pose(ch.model, ch.to_full(res.q), ch.tip_frame)
        assert np.linalg.norm(T.translation - p) < 1e-6
        assert np.linalg.norm(pin.log3(R @ T.rotation.T)) < 1e-6
        assert res.position_error == pytest.approx(np.linalg.norm(T.translation - p), abs=1e-12)
        assert res.restarts == 0 and res.iterations < 30


@pytest.mark.parametrize("which", ["panda", "ur5"])
def test_success_rate_trac_ik_protocol(which, request):
    """200 targets from uniform in-limit configurations, solved from mid-range in 5 ms."""
    ch = request.getfixturevalue(which)
    rng = np.random.default_rng(1234)
    Q = rng.uniform(ch.lower, ch.upper, (200, ch.n))
    seed = ch.mid_configuration()
    ok = 0
    for q in Q:
        T = pin_pose(ch.model, ch.to_full(q), ch.tip_frame)
        res = ch.solve(T.rotation, T.translation, seed, time_budget=0.005)
        ok += res.success and verified(ch, res, T)
    assert ok / len(Q) >= 0.995


def test_solve_mixed_chain_with_continuous_and_prismatic(mixed):
    rng = np.random.default_rng(8)
    for _ in range(30):
        q_star = mixed.random_configuration(rng)
        R, p = mixed.fk(q_star)
        res = mixed.solve(R, p, mixed.mid_configuration(), time_budget=0.05)
        assert res.success
        assert verified(mixed, res, pin.SE3(R, p))


def test_unreachable_target_returns_best_inside_limits(panda):
    R = np.eye(3)
    p = np.array([2.0, 0.3, 0.5])  # the Panda reaches < 1 m from its shoulder
    res = panda.solve(R, p, panda.mid_configuration(), time_budget=0.01)
    assert not res.success
    assert np.all(np.isfinite(res.q))
    assert np.all(res.q >= panda.lower) and np.all(res.q <= panda.upper)
    T = pin_pose(panda.model, panda.to_full(res.q), "panda_hand_tcp")
    # Reported errors are those of the returned configuration.
    assert res.position_error == pytest.approx(np.linalg.norm(T.translation - p), abs=1e-12)
    assert res.orientation_error == pytest.approx(
        np.linalg.norm(pin.log3(R @ T.rotation.T)), abs=1e-9
    )
    assert 0.9 < res.position_error < 1.5
    assert res.restarts > 0
    assert res.time_ms >= 10.0


def test_an_unreachable_target_searches_until_the_budget(panda):
    """The search stops at its deadline, not before (the overrun past it is a benchmark
    figure, see bench_chain_ik.py, not a unit-test assertion)."""
    res = panda.solve(np.eye(3), [3.0, 0, 0], panda.mid_configuration(), time_budget=0.003)
    assert not res.success
    assert res.time_ms >= 3.0 and res.restarts > 0


def test_max_restarts_and_max_iterations_stop_the_search(panda):
    args = (np.eye(3), [3.0, 0, 0], panda.mid_configuration())
    res = panda.solve(*args, max_restarts=2, time_budget=1.0)
    assert not res.success and res.restarts == 2
    res = panda.solve(*args, max_iterations=123, time_budget=1.0)
    assert not res.success and res.iterations == 123


def test_deterministic_for_a_fixed_rng_seed(panda):
    rng = np.random.default_rng(99)
    seed = panda.mid_configuration()
    restarted = 0
    for _ in range(15):
        R, p = panda.fk(rng.uniform(panda.lower, panda.upper))
        kw = dict(rng_seed=7, time_budget=2.0, max_iterations=50_000)
        a = panda.solve(R, p, seed, **kw)
        b = panda.solve(R, p, seed, **kw)
        np.testing.assert_array_equal(a.q, b.q)
        assert (a.iterations, a.restarts) == (b.iterations, b.restarts)
        restarted += a.restarts > 0
    assert restarted > 0  # the random restarts were exercised


def test_joint_weights_slow_a_joint_down(panda):
    q0 = panda.mid_configuration()
    R, p = panda.fk(q0 + 0.05)
    plain = panda.solve(R, p, q0, max_iterations=1, time_budget=1.0)
    heavy = panda.solve(
        R, p, q0, max_iterations=1, time_budget=1.0, joint_weights=[100.0] + [1.0] * 6
    )
    assert abs(heavy.q[0] - q0[0]) < 0.1 * abs(plain.q[0] - q0[0])


def test_solve_pose_accepts_se3_and_matrix(panda):
    q = np.linspace(-0.4, 0.4, 7)
    q[3] = -1.5
    R, p = panda.fk(q)
    T = pin.SE3(R, p)
    a = panda.solve_pose(T, panda.mid_configuration(), max_iterations=10_000, time_budget=1.0)
    b = panda.solve_pose(
        T.homogeneous, panda.mid_configuration(), max_iterations=10_000, time_budget=1.0
    )
    assert a.success and b.success
    np.testing.assert_array_equal(a.q, b.q)


# -- batches -----------------------------------------------------------------------------
def test_solve_batch_rows_match_single_solves(ur5, monkeypatch):
    # Tiny chunks force every single solve through many resumptions of the kernel.
    monkeypatch.setattr(chain_mod, "_FIRST_CHUNK", 3)
    rng = np.random.default_rng(5)
    targets = np.empty((25, 4, 4))
    for k in range(len(targets)):
        R, p = ur5.fk(rng.uniform(ur5.lower, ur5.upper))
        targets[k] = pin.SE3(R, p).homogeneous
    targets[-1] = pin.SE3(np.eye(3), np.array([2.0, 0.0, 0.0])).homogeneous  # unreachable
    seeds = rng.uniform(ur5.lower, ur5.upper, (len(targets), ur5.n))
    rows, success = ur5.solve_batch(
        targets, seeds, max_iterations=3000, rng_seed=3, return_success=True
    )
    assert rows.shape == (len(targets), 2 + ur5.n)
    assert success[:-1].all() and not success[-1]
    for k, T in enumerate(targets):
        res = ur5.solve(
            T[:3, :3], T[:3, 3], seeds[k], max_iterations=3000, rng_seed=3, time_budget=10.0
        )
        assert res.success == success[k]
        assert rows[k, 0] == res.iterations
        np.testing.assert_array_equal(rows[k, 2:], res.q)
        assert rows[k, 1] == pytest.approx(np.hypot(res.position_error, res.orientation_error))


def test_solve_batch_with_time_budget_and_default_seed(panda):
    rng = np.random.default_rng(6)
    targets = np.stack(
        [pin.SE3(*panda.fk(rng.uniform(panda.lower, panda.upper))).homogeneous for _ in range(50)]
    )
    rows = panda.solve_batch(targets)
    assert rows.shape == (50, 9)
    assert panda.iteration_cost() > 0
    ok = 0
    for T, row in zip(targets, rows, strict=True):
        q = row[2:]
        Tq = pin_pose(panda.model, panda.to_full(q), "panda_hand_tcp")
        ok += np.linalg.norm(Tq.translation - T[:3, 3]) < POS_OK
        assert row[1] < 1e-4 or row[0] > 0
    assert ok >= 49


# -- pickling ----------------------------------------------------------------------------
def _solve_all(ch: SerialChain) -> list[np.ndarray]:
    """Solutions of a few reachable and one unreachable target, single and batched."""
    rng = np.random.default_rng(12)
    targets = [pin.SE3(*ch.fk(ch.random_configuration(rng))).homogeneous for _ in range(6)]
    targets.append(pin.SE3(np.eye(3), np.array([3.0, 0.0, 0.0])).homogeneous)  # unreachable
    seed = ch.mid_configuration()
    out = []
    for T in targets:
        res = ch.solve(T[:3, :3], T[:3, 3], seed, max_iterations=500, rng_seed=4, time_budget=10.0)
        out += [res.q, np.array([res.iterations, res.restarts, res.position_error])]
    out.append(ch.solve_batch(np.stack(targets), seed, max_iterations=500, rng_seed=4))
    return out


@pytest.mark.parametrize("which", ["ur5", "mixed"])
def test_pickled_chain_solves_bit_identically(which, request):
    ch = request.getfixturevalue(which)
    ch.iteration_cost()  # pickle a chain with its caches filled
    copy = pickle.loads(pickle.dumps(ch))
    assert copy is not ch and copy.model is not ch.model
    assert repr(copy) == repr(ch) and copy.joint_ids == ch.joint_ids
    for name in ("idx_q", "idx_v", "continuous", "lower", "upper"):
        np.testing.assert_array_equal(getattr(copy, name), getattr(ch, name))
    q = ch.mid_configuration() + 0.1
    for a, b in zip(ch.fk(q), copy.fk(q), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ch.jacobian(q), copy.jacobian(q))
    for a, b in zip(_solve_all(ch), _solve_all(copy), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(copy.to_full(q), ch.to_full(q))


def test_pickled_chain_solves_in_another_process(mixed, tmp_path):
    """A worker process unpickles the chain and returns the same solutions."""
    blob = tmp_path / "chain.pkl"
    blob.write_bytes(pickle.dumps(mixed))
    code = (
        "import pickle, sys, numpy as np, test_chain as t;"
        f"ch = pickle.loads(open({str(blob)!r}, 'rb').read());"
        "sys.stdout.buffer.write(pickle.dumps(t._solve_all(ch)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        env={"PYTHONPATH": f"{ROOT / 'python'}:{Path(__file__).resolve().parent}", "PATH": ""},
    ).stdout
    for a, b in zip(_solve_all(mixed), pickle.loads(out), strict=True):
        np.testing.assert_array_equal(a, b)


# -- errors ------------------------------------------------------------------------------
def test_bad_solve_inputs_raise_typed_errors(mixed):
    R, p = mixed.fk(np.zeros(7))
    seed = np.zeros(7)
    with pytest.raises(ShapeError):
        mixed.solve(np.eye(4), p, seed)
    with pytest.raises(ShapeError):
        mixed.solve(R, p[:2], seed)
    with pytest.raises(ShapeError):
        mixed.solve(R, p, np.zeros(6))
    with pytest.raises(NonFiniteInput):
        mixed.solve(R, [0.1, np.nan, 0.2], seed)
    with pytest.raises(NonFiniteInput):
        mixed.solve(R, p, [0, 0, np.inf, 0, 0, 0, 0])
    with pytest.raises(NonFiniteInput):
        bad = R.copy()
        bad[1, 1] = np.nan
        mixed.solve(bad, p, seed)
    with pytest.raises(InvalidTransform):
        mixed.solve(R * 1.01, p, seed)
    with pytest.raises(InvalidTransform):
        mixed.solve(-R, p, seed)  # a reflection, det = -1
    with pytest.raises(InvalidInput):
        mixed.solve(R, p, seed, position_tolerance=0.0)
    with pytest.raises(InvalidInput):
        mixed.solve(R, p, seed, time_budget=-1.0)
    with pytest.raises(InvalidInput):
        mixed.solve(R, p, seed, joint_weights=[1, 1, 1, 0, 1, 1, 1])
    with pytest.raises(ShapeError):
        mixed.solve(R, p, seed, joint_weights=[1, 1])
    with pytest.raises(ShapeError):
        mixed.fk(np.zeros(3))
    with pytest.raises(NonFiniteInput):
        mixed.jacobian([0, 0, 0, np.nan, 0, 0, 0])
    with pytest.raises(ShapeError):
        mixed.to_full(np.zeros(7), np.zeros(3))
    with pytest.raises(ShapeError):
        mixed.from_full(np.zeros(2))


def test_bad_batch_inputs_raise_typed_errors(mixed):
    T = np.stack([np.eye(4)] * 3)
    with pytest.raises(ShapeError):
        mixed.solve_batch(np.zeros((3, 3, 4)))
    with pytest.raises(ShapeError):
        mixed.solve_batch(T, np.zeros((2, 7)))
    bad = T.copy()
    bad[1, :3, :3] *= 2.0
    with pytest.raises(InvalidTransform):
        mixed.solve_batch(bad)
    bad = T.copy()
    bad[2, 0, 3] = np.nan
    with pytest.raises(NonFiniteInput):
        mixed.solve_batch(bad)


def test_extraction_errors(mixed):
    model = mixed.model
    with pytest.raises(FrameNotFound):
        SerialChain.from_model(model, "tol")
    with pytest.raises(FrameNotFound):
        SerialChain.from_model(model, "tool", "nowhere")
    with pytest.raises(InvalidInput, match="no joint"):
        SerialChain.from_model(model, "l7", "tool")
    with pytest.raises(InvalidInput, match="not on the path"):
        SerialChain.from_model(model, "l3", "l5")


def test_free_flyer_on_the_path_is_rejected():
    robot = RobotModel(
        DATA / "arm.urdf", floating_base=True, load_visuals=False, load_collisions=False
    )
    with pytest.raises(InvalidInput, match="root_joint"):
        SerialChain.from_robot(robot, "tool")
    # A base frame past the free-flyer leaves a valid chain.
    ch = SerialChain.from_robot(robot, "tool", "base_link")
    assert "root_joint" not in ch.joint_names


def test_spherical_joint_is_rejected():
    model = pin.Model()
    j = model.addJoint(0, pin.JointModelRZ(), pin.SE3.Identity(), "yaw")
    j = model.addJoint(j, pin.JointModelSpherical(), pin.SE3.Identity(), "ball")
    model.addFrame(pin.Frame("tip", j, 0, pin.SE3.Identity(), pin.OP_FRAME))
    with pytest.raises(InvalidInput, match="ball"):
        SerialChain.from_model(model, "tip")


def test_mimic_joint_is_rejected():
    robot = RobotModel(DATA / "mimic.urdf", load_visuals=False, load_collisions=False, mimic="fold")
    with pytest.raises(InvalidInput, match="follower"):
        SerialChain.from_robot(robot, "tip")


def test_import_does_not_import_numba():
    code = "import sys, stackik, stackik.ik.chain; assert 'numba' not in sys.modules"
    subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        env={"PYTHONPATH": str(ROOT / "python"), "PATH": ""},
    )


@needs(UR5)
def test_jit_warmup_loads_the_chain_kernels():
    """stackik._jit.warmup() compiles every chain entry kernel with the types real calls use."""
    code = """
import sys, numpy as np, pinocchio as pin, stackik, stackik._jit as jit
from stackik.ik import chain_kernels as ck
from stackik.ik.chain import SerialChain
assert jit.warmup() >= 1
names = ["fk_kernel", "jacobian_kernel", "prepare_kernel", "ik_kernel", "ik_batch_kernel"]
if jit.is_compiled():
    before = {k: len(getattr(ck, k).signatures) for k in names}
    assert all(before.values()), before
    ch = SerialChain.from_model(pin.buildModelFromUrdf(sys.argv[1]), "tool0")
    R, p = ch.fk(ch.mid_configuration() + 0.1)
    ch.jacobian(np.asfortranarray(ch.mid_configuration()))
    assert ch.solve(R, p, ch.mid_configuration()).success
    ch.solve_batch(pin.SE3(R, p).homogeneous[None], max_iterations=50)
    assert {k: len(getattr(ck, k).signatures) for k in names} == before  # nothing new
"""
    subprocess.run(
        [sys.executable, "-c", code, str(UR5)],
        check=True,
        env={"PYTHONPATH": str(ROOT / "python"), "PATH": ""},
    )


def test_warm_up_compiles_every_kernel_the_queries_use(mixed):
    from stackik import _jit

    mixed.warm_up()
    assert _jit.is_compiled()
    for name in ("ik_kernel", "fk_kernel", "jacobian_kernel", "prepare_kernel", "ik_batch_kernel"):
        signatures = getattr(chain_kernels, name).signatures
        assert signatures, name  # compiled (or loaded from the cache) before any query
    R, p = mixed.fk(mixed.mid_configuration() + 0.05)
    assert mixed.solve(R, p, mixed.mid_configuration()).success
