"""Tests of the SNS velocity core (stackik.sns): numbers against independent computations."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import quadprog
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from stackik import sns
from stackik.results import SolverStatus
from stackik.sns import SNSSolver, TaskSolveMode, qp

PY_ROOT = Path(__file__).resolve().parents[1] / "python"
PROP = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------- references
def pinv(A, tol=1e-10):
    """np.linalg.pinv with an absolute cutoff (a projected Jacobian may be ~1e-16)."""
    return np.linalg.pinv(A, rcond=tol / max(tol, np.abs(A).max(initial=0.0) * 10))


def classical(goals, jacs):
    """Recursive null-space projection with np.linalg.pinv (Siciliano & Slotine)."""
    n = jacs[0].shape[1]
    dq = np.zeros(n)
    P = np.eye(n)
    for x, J in zip(goals, jacs, strict=True):
        dq = dq + pinv(J @ P) @ (x - J @ dq)
        Ja = J @ P
        P = P - pinv(Ja) @ Ja
    return dq


def scaled_task_reachable(dq, k, goals, jacs, C, lo, hi, bl, bu):
    """Is there a dq' keeping J_i dq' = J_i dq (i < k), J_k dq' = s x_k for some s in
    [0, 1], inside the constraints (to 1e-9)? Independent quadprog feasibility check."""
    n = dq.size
    N = null_basis(np.vstack([np.zeros((0, n)), *jacs[:k]]), n)
    r = N.shape[1]
    Jk, xk = jacs[k], goals[k]
    eq = np.hstack([Jk @ N, -xk[:, None]])
    R = np.vstack([np.eye(n), C]) @ N
    v0 = np.vstack([np.eye(n), C]) @ dq
    L = np.concatenate([bl, lo]) - v0 - 1e-9
    H = np.concatenate([bu, hi]) - v0 + 1e-9
    fl, fh = np.isfinite(L), np.isfinite(H)
    A = np.vstack(
        [
            eq,
            np.hstack([R[fl], np.zeros((fl.sum(), 1))]),
            np.hstack([-R[fh], np.zeros((fh.sum(), 1))]),
            np.eye(1, r + 1, r),
            -np.eye(1, r + 1, r),
        ]
    )
    b = np.concatenate([-Jk @ dq, L[fl], -H[fh], [0.0, -1.0]])
    try:
        quadprog.solve_qp(np.eye(r + 1), np.zeros(r + 1), A.T.copy(), b, eq.shape[0])
        return True
    except ValueError:
        return False


def null_basis(A, n, tol=1e-10):
    if A.shape[0] == 0:
        return np.eye(n)
    if n == 0:
        return np.zeros((0, 0))
    _, s, vt = np.linalg.svd(A)
    rank = int(np.sum(s > tol * max(1.0, s[0])))
    return vt[rank:].T


def violation(dq, C=None, lo=None, hi=None, bl=None, bu=None):
    v = 0.0
    if C is not None and C.shape[0]:
        c = C @ dq
        v = max(v, float(np.max(np.maximum(lo - c, c - hi))))
    if bl is not None:
        v = max(v, float(np.max(np.maximum(bl - dq, dq - bu))))
    return v


def qp_min_error(J, x, A_in, b_in, reg=1e-12):
    """min ||J dq - x||^2 (+ reg ||dq||^2) s.t. A_in dq >= b_in, with quadprog."""
    n = J.shape[1]
    G = J.T @ J + reg * np.eye(n)
    return quadprog.solve_qp(G, J.T @ x, A_in.T.copy(), b_in, 0)[0]


def box_rows(bl, bu):
    n = bl.size
    return np.vstack([np.eye(n), -np.eye(n)]), np.concatenate([bl, -bu])


def random_problem(rng, n, ms, p, box=True, tight=1.0):
    jacs = [rng.standard_normal((m, n)) for m in ms]
    goals = [rng.standard_normal(m) * tight for m in ms]
    C = rng.standard_normal((p, n))
    lo = -rng.uniform(0.05, 1.0, p)
    hi = rng.uniform(0.05, 1.0, p)
    # some one-sided rows
    lo[rng.random(p) < 0.2] = -np.inf
    hi[rng.random(p) < 0.2] = np.inf
    if box:
        bl = -rng.uniform(0.05, 1.0, n)
        bu = rng.uniform(0.05, 1.0, n)
    else:
        bl = bu = None
    return goals, jacs, C, lo, hi, bl, bu


# ------------------------------------------------------------ basic behaviour
def test_redundancy_pins_joint_and_keeps_full_scale():
    J = np.ones((1, 4))
    bl = np.array([-2.0, -10, -10, -10])
    bu = np.array([0.0, 10, 10, 10])
    res = sns.solve([np.array([1.0])], [J], box_lower=bl, box_upper=bu)
    assert res.status == SolverStatus.SUCCESS
    assert res.task_scales[0] == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(res.solution, [0.0, 1 / 3, 1 / 3, 1 / 3], atol=1e-12)
    assert res.saturated_joints == [0]


def test_scaling_when_every_joint_saturates():
    J = np.ones((1, 4))
    res = sns.solve([np.array([1.0])], [J], box_lower=np.full(4, -0.1), box_upper=np.full(4, 0.1))
    assert res.success
    assert res.task_scales[0] == pytest.approx(0.4, abs=1e-12)
    np.testing.assert_allclose(res.solution, np.full(4, 0.1), atol=1e-12)
    assert res.saturated_joints == [0, 1, 2, 3]
    assert res.task_errors[0] == pytest.approx(0.0, abs=1e-12)


def test_partial_saturation_scale_value():
    # J = [1 2], xdot = 1, |dq| <= 0.3: pin dq1 = 0.3 then dq0 = 1 - 0.6 = 0.4 > 0.3
    # -> scale: 0.3 + 2 * 0.3 = 0.9
    res = sns.solve(
        [np.array([1.0])],
        [np.array([[1.0, 2.0]])],
        box_lower=np.full(2, -0.3),
        box_upper=np.full(2, 0.3),
    )
    assert res.task_scales[0] == pytest.approx(0.9, abs=1e-12)
    np.testing.assert_allclose(res.solution, [0.3, 0.3], atol=1e-12)


def test_a_level_of_full_column_rank_stops_before_pinning_a_row():
    """A square level blocked by the box: pinning a joint would lower the rank of ``J P``,
    so the saturation loop stops at its first iteration with the best feasible scale.

    ``dq = s J^-1 x = s (2, 0.5, 0.5, 0)`` within ``|dq| <= 1``: ``s = 0.5``. The loop
    used to pin joint 0, factor the smaller problem and stop there for the same reason
    (two iterations, the same answer).
    """
    J = np.diag([1.0, 2.0, 1.0, 1.0])
    x = np.array([2.0, 1.0, 0.5, 0.0])
    res = sns.solve([x], [J], box_lower=np.full(4, -1.0), box_upper=np.full(4, 1.0))
    assert res.status == SolverStatus.SUCCESS
    assert res.task_scales[0] == pytest.approx(0.5, abs=1e-12)
    np.testing.assert_allclose(res.solution, [1.0, 0.25, 0.25, 0.0], atol=1e-12)
    assert res.iterations == 1


def test_blocked_task_does_not_drag_independent_task():
    J1 = np.array([[1.0, 0.0, 0.0]])
    J2 = np.array([[0.0, 1.0, 0.0]])
    res = sns.solve(
        [np.array([1.0]), np.array([0.5])],
        [J1, J2],
        box_lower=np.array([0.0, -1, -1]),
        box_upper=np.array([0.0, 1, 1]),
    )
    assert res.success
    assert res.task_scales[0] == pytest.approx(0.0, abs=1e-12)
    assert res.task_scales[1] == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(res.solution, [0.0, 0.5, 0.0], atol=1e-12)


def test_blocked_by_general_row():
    # task 1 wants dq0 + dq1 = 1 but the general row forbids dq0 + dq1 > 0; task 2 is free.
    J1 = np.array([[1.0, 1.0, 0.0]])
    J2 = np.array([[0.0, 0.0, 1.0]])
    C = np.array([[1.0, 1.0, 0.0]])
    res = sns.solve(
        [np.array([1.0]), np.array([0.7])], [J1, J2], C, np.array([-1.0]), np.array([0.0])
    )
    assert res.task_scales[0] == pytest.approx(0.0, abs=1e-12)
    assert res.task_scales[1] == pytest.approx(1.0, abs=1e-12)
    assert res.solution[2] == pytest.approx(0.7, abs=1e-12)
    assert res.saturated_constraints == [0]


def test_identity_rows_in_C_match_box():
    rng = np.random.default_rng(3)
    for _ in range(20):
        goals, jacs, _, _, _, bl, bu = random_problem(rng, 6, [3, 2], 0, tight=2.0)
        a = sns.solve(goals, jacs, box_lower=bl, box_upper=bu)
        b = sns.solve(goals, jacs, np.eye(6), bl, bu)
        np.testing.assert_allclose(a.solution, b.solution, atol=1e-9)
        np.testing.assert_allclose(a.task_scales, b.task_scales, atol=1e-9)
        assert a.saturated_joints == b.saturated_constraints


def test_one_sided_rows():
    # dq0 >= 0.2 only (upper inf); min-norm start point is dq0 = 0.2; task moves dq1.
    C = np.array([[1.0, 0.0]])
    res = sns.solve(
        [np.array([0.5])], [np.array([[0.0, 1.0]])], C, np.array([0.2]), np.array([np.inf])
    )
    assert res.success
    np.testing.assert_allclose(res.solution, [0.2, 0.5], atol=1e-12)


def test_nonzero_start_point_box():
    # box excludes zero: dq0 in [0.5, 1]. Task wants dq0 + dq1 = 0 -> dq = (0.5, -0.5)
    res = sns.solve(
        [np.array([0.0])],
        [np.array([[1.0, 1.0]])],
        box_lower=np.array([0.5, -1.0]),
        box_upper=np.array([1.0, 1.0]),
    )
    assert res.success
    np.testing.assert_allclose(res.solution, [0.5, -0.5], atol=1e-12)


def test_equality_row():
    # C dq = 0 forces dq0 = dq1; task dq0 + dq1 + dq2 = 3 -> weighted min-norm (1, 1, 1)
    C = np.array([[1.0, -1.0, 0.0]])
    res = sns.solve([np.array([3.0])], [np.ones((1, 3))], C, np.zeros(1), np.zeros(1))
    assert res.success
    np.testing.assert_allclose(res.solution, [1.0, 1.0, 1.0], atol=1e-9)


# -------------------------------------------------- unconstrained equivalence
@PROP
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 10), nlev=st.integers(1, 4))
def test_unconstrained_equals_classical(seed, n, nlev):
    rng = np.random.default_rng(seed)
    ms = list(rng.integers(1, 4, nlev))
    jacs = [rng.standard_normal((m, n)) for m in ms]
    goals = [rng.standard_normal(m) for m in ms]
    # keep every projected task well conditioned (or exactly rank deficient is excluded)
    Z = np.eye(n)
    for J in jacs:
        M = J @ Z
        if M.size:
            s = np.linalg.svd(M, compute_uv=False)
            assume(s.min() > 1e-2 if M.shape[0] <= M.shape[1] else True)
            assume(M.shape[0] <= M.shape[1])
        Z = Z @ null_basis(M, Z.shape[1])
    res = sns.solve(goals, jacs)
    assert res.success
    np.testing.assert_allclose(res.solution, classical(goals, jacs), atol=1e-9)
    np.testing.assert_allclose(res.task_scales, 1.0)


def test_rank_deficient_unconstrained_equals_classical():
    rng = np.random.default_rng(0)
    J1 = rng.standard_normal((2, 5))
    J2 = np.vstack([J1[0], rng.standard_normal((2, 5))])  # shares a row with J1
    J3 = rng.standard_normal((4, 5))  # more rows than remaining freedom
    goals = [rng.standard_normal(2), rng.standard_normal(3), rng.standard_normal(4)]
    res = sns.solve(goals, [J1, J2, J3])
    np.testing.assert_allclose(res.solution, classical(goals, [J1, J2, J3]), atol=1e-9)


# ------------------------------------------------------------- property tests
@PROP
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 9),
    nlev=st.integers(1, 3),
    p=st.integers(0, 8),
    tight=st.sampled_from([0.3, 1.0, 5.0]),
)
def test_random_problems_feasible_scaled_and_prioritized(seed, n, nlev, p, tight):
    rng = np.random.default_rng(seed)
    ms = [int(m) for m in rng.integers(1, n + 1, nlev)]
    goals, jacs, C, lo, hi, bl, bu = random_problem(rng, n, ms, p, tight=tight)
    res = sns.solve(goals, jacs, C, lo, hi, box_lower=bl, box_upper=bu)
    assert res.status == SolverStatus.SUCCESS, res.status_message
    dq = res.solution
    assert np.all(np.isfinite(dq))
    # 1. constraints hold
    assert violation(dq, C, lo, hi, bl, bu) <= 1e-9
    # 2. scales in [0, 1]; exact scaled task where the task is full row rank in the
    #    null space of the levels above.
    assert np.all(res.task_scales >= 0.0) and np.all(res.task_scales <= 1.0)
    Z = np.eye(n)
    for k, (x, J) in enumerate(zip(goals, jacs, strict=True)):
        M = J @ Z
        if M.shape[0] <= M.shape[1] and M.size:
            if np.linalg.svd(M, compute_uv=False).min() > 1e-2 and scaled_task_reachable(
                dq, k, goals, jacs, C, lo, hi, bl, bu
            ):
                np.testing.assert_allclose(J @ dq, res.task_scales[k] * x, atol=1e-6)
        np.testing.assert_allclose(
            res.task_errors[k], np.linalg.norm(J @ dq - res.task_scales[k] * x), atol=1e-12
        )
        Z = Z @ null_basis(M, Z.shape[1])
    # 3. a lower-priority task does not change what the higher ones achieve
    extra_J = rng.standard_normal((2, n))
    more = sns.solve(
        [*goals, 3 * rng.standard_normal(2)],
        [*jacs, extra_J],
        C,
        lo,
        hi,
        box_lower=bl,
        box_upper=bu,
    )
    assert violation(more.solution, C, lo, hi, bl, bu) <= 1e-9
    for J in jacs:
        np.testing.assert_allclose(J @ more.solution, J @ dq, atol=1e-9)
    np.testing.assert_allclose(more.task_scales[:nlev], res.task_scales, atol=1e-12)


@PROP
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 8), p=st.integers(1, 12))
def test_general_rows_hold(seed, n, p):
    rng = np.random.default_rng(seed)
    goals, jacs, C, lo, hi, _, _ = random_problem(
        rng, n, [int(rng.integers(1, n + 1))], p, box=False, tight=3.0
    )
    # rows whose bounds do not contain zero but still admit a point
    shift = rng.standard_normal(n) * 0.3
    c0 = C @ shift
    lo2, hi2 = lo + c0, hi + c0
    for lo_, hi_ in ((lo, hi), (lo2, hi2)):
        res = sns.solve(goals, jacs, C, lo_, hi_)
        assert res.status == SolverStatus.SUCCESS, res.status_message
        assert violation(res.solution, C, lo_, hi_) <= 1e-9
        assert 0.0 <= res.task_scales[0] <= 1.0


def lp_max_scale(J, x, bl, bu):
    """max s in [0, 1] with {dq : J dq = s x, bl <= dq <= bu} non-empty (bisection with
    quadprog feasibility checks)."""
    n, m = J.shape[1], J.shape[0]
    A, b = box_rows(bl, bu)

    def feasible(s):
        try:
            quadprog.solve_qp(
                np.eye(n), np.zeros(n), np.vstack([J, A]).T.copy(), np.concatenate([s * x, b]), m
            )
            return True
        except ValueError:
            return False

    if feasible(1.0):
        return 1.0
    lo_s, hi_s = 0.0, 1.0
    for _ in range(40):
        mid = 0.5 * (lo_s + hi_s)
        lo_s, hi_s = (mid, hi_s) if feasible(mid) else (lo_s, mid)
    return lo_s


def test_single_task_box_scale_vs_lp_optimum():
    """SNS never claims more than the LP optimum of the scale, and the greedy
    saturation (Flacco et al., Alg. 1 with the best-scale memory) reaches it in the
    large majority of random problems; m = 1 tasks with one saturating joint are
    always optimal."""
    rng = np.random.default_rng(12345)
    optimal = total = 0
    for _ in range(150):
        n = int(rng.integers(2, 8))
        m = int(rng.integers(1, n))
        J = rng.standard_normal((m, n))
        if np.linalg.svd(J, compute_uv=False).min() < 0.05:
            continue
        x = rng.standard_normal(m) * 3
        bl, bu = -rng.uniform(0.05, 1.0, n), rng.uniform(0.05, 1.0, n)
        s = sns.solve([x], [J], box_lower=bl, box_upper=bu).task_scales[0]
        s_opt = lp_max_scale(J, x, bl, bu)
        assert s <= s_opt + 1e-7
        total += 1
        optimal += s >= s_opt - 1e-6
    assert optimal >= 0.9 * total
    # one joint saturating: optimal, known value
    res = sns.solve(
        [np.array([2.0])],
        [np.array([[1.0, 1.0, 1.0]])],
        box_lower=-np.ones(3),
        box_upper=np.array([0.1, 1.0, 1.0]),
    )
    assert res.task_scales[0] == 1.0
    np.testing.assert_allclose(res.solution, [0.1, 0.95, 0.95], atol=1e-12)


# ---------------------------------------------------------- weights, damping
def test_weighted_pseudo_inverse_when_unconstrained():
    rng = np.random.default_rng(7)
    for _ in range(20):
        n = 6
        J = rng.standard_normal((3, n))
        x = rng.standard_normal(3)
        w = rng.uniform(0.2, 5.0, n)
        Wi = np.diag(1 / w)
        ref = Wi @ J.T @ np.linalg.solve(J @ Wi @ J.T, x)
        res = sns.solve([x], [J], joint_weights=w)
        np.testing.assert_allclose(res.solution, ref, atol=1e-10)


def test_heavier_joint_moves_less():
    J = np.array([[1.0, 1.0]])
    res = sns.solve([np.array([1.0])], [J], joint_weights=np.array([1.0, 4.0]))
    np.testing.assert_allclose(res.solution, [0.8, 0.2], atol=1e-12)
    # with a box the weighting still decides who saturates first
    res = sns.solve(
        [np.array([1.0])],
        [J],
        joint_weights=np.array([1.0, 4.0]),
        box_lower=np.full(2, -0.7),
        box_upper=np.full(2, 0.7),
    )
    np.testing.assert_allclose(res.solution, [0.7, 0.3], atol=1e-12)
    assert res.task_scales[0] == pytest.approx(1.0)


def test_damping_exact_when_well_conditioned():
    rng = np.random.default_rng(11)
    J = rng.standard_normal((3, 5))
    x = rng.standard_normal(3)
    res = sns.solve([x], [J], damping=1e-2, tolerance=1e-3)
    np.testing.assert_allclose(res.solution, np.linalg.pinv(J) @ x, atol=1e-12)
    # smallest singular value 2e-3, just above tolerance: still exact
    U, _, Vt = np.linalg.svd(J, full_matrices=False)
    J2 = U @ np.diag([1.0, 0.5, 2e-3]) @ Vt
    res = sns.solve([x], [J2], damping=1e-2, tolerance=1e-3)
    np.testing.assert_allclose(res.solution, np.linalg.pinv(J2) @ x, rtol=1e-9)


def test_damping_bounded_near_singular():
    J = np.array([[1.0, 0.0, 0.0], [1.0, 1e-8, 0.0]])
    x = np.array([1.0, -1.0])
    assert np.linalg.norm(np.linalg.pinv(J) @ x) > 1e7  # the undamped answer explodes
    res = sns.solve([x], [J])
    assert np.all(np.isfinite(res.solution))
    assert np.linalg.norm(res.solution) < 2.0
    # exactly singular: the least-squares minimum-norm solution
    Js = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    res = sns.solve([x], [Js])
    np.testing.assert_allclose(res.solution, np.linalg.pinv(Js) @ x, atol=1e-12)
    # damped gain: sigma / (sigma^2 + lambda^2 (1 - (sigma/eps)^2)) along the weak direction
    sigma = 1e-4
    Jd = np.diag([1.0, sigma])
    res = sns.solve([np.array([0.0, 1.0])], [Jd], damping=1e-2, tolerance=1e-3)
    gain = sigma / (sigma**2 + 1e-4 * (1 - (sigma / 1e-3) ** 2))
    np.testing.assert_allclose(res.solution, [0.0, gain], rtol=1e-9)


def test_damped_level_keeps_strict_priority():
    # a near-singular first task must still be untouched by the second
    J1 = np.array([[1.0, 0.0, 0.0], [1.0, 1e-6, 0.0]])
    J2 = np.eye(3)
    x1 = np.array([1.0, 0.5])
    a = sns.solve([x1], [J1])
    b = sns.solve([x1, np.array([3.0, -2.0, 1.0])], [J1, J2])
    np.testing.assert_allclose(J1 @ b.solution, J1 @ a.solution, atol=1e-12)


# --------------------------------------------------------------- MIN_ERROR
def test_min_error_keeps_achievable_components():
    J = np.eye(2)
    x = np.array([1.0, 0.2])
    box = dict(box_lower=np.full(2, -0.5), box_upper=np.full(2, 0.5))
    scaled = sns.solve([x], [J], **box)
    np.testing.assert_allclose(scaled.solution, [0.5, 0.1], atol=1e-12)
    assert scaled.task_scales[0] == pytest.approx(0.5)
    best = sns.solve([x], [J], modes=[TaskSolveMode.MIN_ERROR], **box)
    assert best.success
    np.testing.assert_allclose(best.solution, [0.5, 0.2], atol=1e-9)
    assert best.task_scales[0] == 1.0
    assert best.task_errors[0] == pytest.approx(0.5, abs=1e-9)


@PROP
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 7), p=st.integers(0, 6))
def test_min_error_is_constrained_least_squares(seed, n, p):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, n + 2))
    goals, jacs, C, lo, hi, bl, bu = random_problem(rng, n, [m], p, tight=3.0)
    res = sns.solve(goals, jacs, C, lo, hi, box_lower=bl, box_upper=bu, modes=["min_error"])
    assert res.success, res.status_message
    dq = res.solution
    assert violation(dq, C, lo, hi, bl, bu) <= 1e-9
    A, b = box_rows(bl, bu)
    fin_lo, fin_hi = np.isfinite(lo), np.isfinite(hi)
    A = np.vstack([A, C[fin_lo], -C[fin_hi]])
    b = np.concatenate([b, lo[fin_lo], -hi[fin_hi]])
    ref = qp_min_error(jacs[0], goals[0], A, b)
    r_ref = np.linalg.norm(jacs[0] @ ref - goals[0])
    r_sns = np.linalg.norm(jacs[0] @ dq - goals[0])
    assert r_sns <= r_ref + 1e-6


def test_min_error_second_level_keeps_first():
    rng = np.random.default_rng(5)
    n = 7
    J1, J2 = rng.standard_normal((3, n)), rng.standard_normal((5, n))
    x1, x2 = rng.standard_normal(3), 4 * rng.standard_normal(5)
    bl, bu = -np.full(n, 0.6), np.full(n, 0.6)
    a = sns.solve([x1], [J1], box_lower=bl, box_upper=bu)
    b = sns.solve(
        [x1, x2],
        [J1, J2],
        box_lower=bl,
        box_upper=bu,
        modes=[TaskSolveMode.SCALE, TaskSolveMode.MIN_ERROR],
    )
    assert b.success
    np.testing.assert_allclose(J1 @ b.solution, J1 @ a.solution, atol=1e-9)
    assert violation(b.solution, bl=bl, bu=bu) <= 1e-9
    # level-2 least squares inside {J1 dq = J1 dq_a} and the box, independently
    A, bb = box_rows(bl, bu)
    Aq = np.vstack([J1, A])
    bq = np.concatenate([J1 @ a.solution, bb - 1e-9])
    G = J2.T @ J2 + 1e-12 * np.eye(n)
    ref = quadprog.solve_qp(G, J2.T @ x2, Aq.T.copy(), bq, 3)[0]
    assert np.linalg.norm(J2 @ b.solution - x2) <= np.linalg.norm(J2 @ ref - x2) + 1e-6


# ------------------------------------------------------------ robot-like case
def test_robot_like_two_tasks_ten_rows():
    rng = np.random.default_rng(2024)
    n = 7
    checked_active = 0
    for _ in range(30):
        J1 = rng.standard_normal((6, n)) * 0.5
        J2 = np.eye(n)
        x1 = rng.standard_normal(6)
        x2 = rng.standard_normal(n) * 0.5
        C = rng.standard_normal((10, n))
        lo = -rng.uniform(0.2, 1.0, 10)
        hi = rng.uniform(0.2, 1.0, 10)
        bl, bu = -np.full(n, 1.5), np.full(n, 1.5)
        solver = SNSSolver(n)
        res = solver.solve([x1, x2], [J1, J2], C, lo, hi, box_lower=bl, box_upper=bu)
        assert res.success, res.status_message
        dq = res.solution
        assert violation(dq, C, lo, hi, bl, bu) <= 1e-9
        np.testing.assert_allclose(J1 @ dq, res.task_scales[0] * x1, atol=1e-9)
        only1 = solver.solve([x1], [J1], C, lo, hi, box_lower=bl, box_upper=bu)
        np.testing.assert_allclose(J1 @ only1.solution, J1 @ dq, atol=1e-9)
        checked_active += len(res.saturated_constraints) > 0
        # reported active rows are really at a bound
        c = C @ dq
        for i in res.saturated_constraints:
            assert min(abs(c[i] - lo[i]), abs(c[i] - hi[i])) <= 1e-8
    assert checked_active >= 10


def test_solver_object_matches_function_and_is_reusable():
    rng = np.random.default_rng(9)
    solver = SNSSolver(5, damping=1e-3, tolerance=1e-3)
    for _ in range(10):
        m1, m2 = 2, 4
        goals, jacs, C, lo, hi, bl, bu = random_problem(rng, 5, [m1, m2], 3)
        a = solver.solve(goals, jacs, C, lo, hi, box_lower=bl, box_upper=bu)
        b = sns.solve(goals, jacs, C, lo, hi, box_lower=bl, box_upper=bu)
        np.testing.assert_array_equal(a.solution, b.solution)
        assert a.solution is not b.solution
    # results do not alias solver buffers
    r1 = solver.solve([np.ones(1)], [np.ones((1, 5))])
    keep = r1.solution.copy()
    solver.solve([-np.ones(1)], [np.ones((1, 5))])
    np.testing.assert_array_equal(r1.solution, keep)


def test_pure_python_kernel_matches_compiled():
    rng = np.random.default_rng(1)
    fast = SNSSolver(5)
    slow = SNSSolver(5, use_numba=False)
    for _ in range(3):
        goals, jacs, C, lo, hi, bl, bu = random_problem(rng, 5, [2, 3], 4, tight=3.0)
        a = fast.solve(goals, jacs, C, lo, hi, box_lower=bl, box_upper=bu)
        b = slow.solve(goals, jacs, C, lo, hi, box_lower=bl, box_upper=bu)
        np.testing.assert_allclose(a.solution, b.solution, atol=1e-12)
        np.testing.assert_allclose(a.task_scales, b.task_scales, atol=1e-12)


def test_pure_python_solver_does_not_import_numba():
    code = (
        "import sys, numpy as np; from stackik.sns import SNSSolver; "
        "r = SNSSolver(3, use_numba=False).solve([np.ones(1), np.ones(3)], "
        "[np.ones((1, 3)), np.eye(3)], np.ones((1, 3)), np.array([0.5]), np.array([1.0]), "
        "box_lower=np.full(3, -0.2), box_upper=np.full(3, 0.2)); "
        "print(r.status.name, 'numba' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(PY_ROOT), "PATH": ""},
        check=True,
    )
    assert out.stdout.split() == ["SUCCESS", "False"]


def test_warmup_loads_the_sns_kernels():
    from stackik import _jit
    from stackik.sns import run

    assert _jit.warmup() >= 1
    if _jit.is_compiled():
        assert run.sns_run.signatures  # the warm-up compiled (or loaded) the entry kernel


# --------------------------------------------------------------- solve_stacked
def stack(solver, goals, jacs, modes, C, lo, hi, bl, bu):
    """The arguments of solve_stacked for a solve() problem (the caller's own arrays)."""
    n = solver.n
    offsets = np.concatenate([[0], np.cumsum([J.shape[0] for J in jacs])]).astype(np.int64)
    J = np.ascontiguousarray(np.vstack([np.zeros((0, n)), *jacs]))
    x = np.ascontiguousarray(np.concatenate([np.zeros(0), *goals]))
    m = None if modes is None else np.array([int(md) for md in modes], dtype=np.int64)
    if C is None:
        C, lo, hi = np.zeros((0, n)), np.zeros(0), np.zeros(0)
    bl = np.full(n, -np.inf) if bl is None else bl
    bu = np.full(n, np.inf) if bu is None else bu
    return J, x, offsets, m, C, lo, hi, bl, bu


def assert_same_result(a, b):
    assert a.status == b.status
    assert a.status_message == b.status_message
    assert np.array_equal(a.solution, b.solution)
    assert np.array_equal(a.task_scales, b.task_scales)
    assert np.array_equal(a.task_errors, b.task_errors)
    assert a.saturated_joints == b.saturated_joints
    assert a.saturated_constraints == b.saturated_constraints
    assert a.iterations == b.iterations


def stacked_problem(rng):
    """Random problem with several levels, general rows, boxes, MIN_ERROR levels, weights."""
    n = int(rng.integers(2, 10))
    ms = [int(m) for m in rng.integers(1, n + 1, int(rng.integers(1, 5)))]
    goals, jacs, C, lo, hi, bl, bu = random_problem(
        rng, n, ms, int(rng.integers(0, 6)), tight=float(rng.choice([0.3, 1.0, 3.0]))
    )
    if rng.random() < 0.3 and C.shape[0]:  # a general row that rejects dq = 0 (start QP)
        lo[0], hi[0] = 0.2, 0.6
    modes = [TaskSolveMode(int(v)) for v in rng.random(len(ms)) < 0.35]
    weights = rng.uniform(0.5, 3.0, n) if rng.random() < 0.5 else None
    return n, goals, jacs, modes, C, lo, hi, bl, bu, weights


def test_solve_stacked_bit_identical_to_solve():
    rng = np.random.default_rng(2024)
    seen = set()
    for _ in range(300):
        n, goals, jacs, modes, C, lo, hi, bl, bu, w = stacked_problem(rng)
        solver = SNSSolver(n, joint_weights=w)
        a = solver.solve(goals, jacs, C, lo, hi, box_lower=bl, box_upper=bu, modes=modes)
        b = solver.solve_stacked(*stack(solver, goals, jacs, modes, C, lo, hi, bl, bu))
        assert_same_result(a, b)
        seen.add(a.status)
        seen.add("qp" if "QP fallback" in a.status_message else "greedy")
        seen.add("min_error" if TaskSolveMode.MIN_ERROR in modes else "scale")
    assert {SolverStatus.SUCCESS, SolverStatus.INFEASIBLE, "qp", "greedy", "min_error"} <= seen


def test_solve_stacked_defaults_and_reuse():
    rng = np.random.default_rng(5)
    solver = SNSSolver(6)
    for _ in range(20):  # one solver, alternating entry points, modes=None
        goals, jacs, C, lo, hi, bl, bu = random_problem(rng, 6, [3, 6], 4, tight=2.0)
        a = solver.solve(goals, jacs, C, lo, hi, box_lower=bl, box_upper=bu)
        b = solver.solve_stacked(*stack(solver, goals, jacs, None, C, lo, hi, bl, bu))
        assert_same_result(a, b)
        assert a.solution is not b.solution


def test_solve_stacked_uses_the_callers_arrays():
    rng = np.random.default_rng(3)
    solver = SNSSolver(5)
    goals, jacs, C, lo, hi, bl, bu = random_problem(rng, 5, [2, 5], 3, tight=3.0)
    args = stack(solver, goals, jacs, None, C, lo, hi, bl, bu)
    before = [None if a is None else a.copy() for a in args]
    seen = []
    kernel = solver._run

    def spy(*kernel_args):
        seen.append(kernel_args)
        return kernel(*kernel_args)

    solver._run = spy
    res = solver.solve_stacked(*args)
    assert res.success
    assert seen[0][0] is args[0] and seen[0][1] is args[1]  # J and x: no copies
    for a, b in zip(args, before, strict=True):  # nothing written
        assert (a is None and b is None) or np.array_equal(a, b)
    assert not any(np.shares_memory(res.solution, a) for a in args if a is not None)


def test_solve_stacked_invalid_input_messages_match_solve():
    solver = SNSSolver(3)
    jacs = [np.ones((2, 3)), np.array([[1.0, np.nan, 0.0]])]
    goals = [np.ones(2), np.ones(1)]
    C, lo, hi = np.ones((2, 3)), np.array([0.0, 2.0]), np.ones(2)
    for case in (
        (goals, jacs, None, None, None, None, None),
        (goals, [np.ones((2, 3)), np.ones((1, 3))], C, lo, hi, None, None),
        (goals, [np.ones((2, 3)), np.ones((1, 3))], None, None, None, np.ones(3), np.zeros(3)),
    ):
        g, J, Cc, lc, hc, bl, bu = case
        a = solver.solve(g, J, Cc, lc, hc, box_lower=bl, box_upper=bu)
        b = solver.solve_stacked(*stack(solver, g, J, None, Cc, lc, hc, bl, bu))
        assert a.status == SolverStatus.INVALID_INPUT
        assert_same_result(a, b)


def test_solve_stacked_never_raises():
    solver = SNSSolver(3)
    res = solver.solve_stacked(None, None, None, None, None, None, None, None, None)
    assert res.status in (SolverStatus.INVALID_INPUT, SolverStatus.NUMERICAL_ERROR)
    assert res.solution.shape == (3,)


def test_solve_stacked_refuses_mismatched_shapes_by_name():
    """Every shape of a stacked problem is checked before the kernels index by it.

    Without the check a short ``x`` or box was read past (a SUCCESS on garbage), a wide
    ``J`` made the kernel take n from it and read the box past its end; now each
    mismatch is INVALID_INPUT naming the argument, and the solver solves the right
    problem next.
    """
    rng = np.random.default_rng(11)
    n = 5
    solver = SNSSolver(n)
    goals, jacs, C, lo, hi, bl, bu = random_problem(rng, n, [2, 3], 3, tight=2.0)
    good = stack(solver, goals, jacs, [TaskSolveMode.SCALE] * 2, C, lo, hi, bl, bu)
    i64 = np.int64
    cases = {
        "J has 7 columns, expected n = 5": {"J": np.ones((5, 7))},
        "J has 3 columns, expected n = 5": {"J": np.ones((5, 3))},
        "x has 2 entries, expected one per row of J (5)": {"x": np.ones(2)},
        "offsets must run from 0 to the rows of J: expected 5, got 600": {
            "offs": np.array([0, 2, 600], dtype=i64)
        },
        "offsets must run from 0 to the rows of J: expected 0, got 1": {
            "offs": np.array([1, 2, 5], dtype=i64)
        },
        "offsets go back after level 0: offsets[1] = -1": {"offs": np.array([0, -1, 5], dtype=i64)},
        "modes has 3 entries, expected one per level (2)": {"modes": np.zeros(3, dtype=i64)},
        "modes[1] = 7 is not a TaskSolveMode value (0 or 1)": {
            "modes": np.array([0, 7], dtype=i64)
        },
        "C has 2 columns, expected n = 5": {"C": np.ones((3, 2))},
        "lower/upper have 1 entries, expected one per row of C (3)": {"lo": -np.ones(1)},
        "box_lower/box_upper have 2 entries, expected n = 5": {"bu": np.ones(2)},
        "offsets is empty: expected L + 1 >= 1 entries (0, ..., rows of J)": {
            "offs": np.zeros(0, dtype=i64)
        },
    }
    names = ["J", "x", "offs", "modes", "C", "lo", "hi", "bl", "bu"]
    reference = solver.solve_stacked(*good)
    assert reference.status == SolverStatus.SUCCESS
    for message, change in cases.items():
        args = dict(zip(names, good, strict=True)) | change
        res = solver.solve_stacked(*(args[k] for k in names))
        assert res.status == SolverStatus.INVALID_INPUT, (message, res.status_message)
        assert res.status_message == message
        assert np.all(res.solution == 0.0) and res.solution.shape == (n,)
        assert_same_result(solver.solve_stacked(*good), reference)  # nothing carried over


# ------------------------------------------------- the exact QP fallback of a level
def fallback_problem(rng):
    """Random stacked problem on which the greedy saturation often needs the exact QP.

    Small ones (4-30 joints, a posture-like or random last level, general rows with
    some equalities, now and then a locked joint) and humanoid-like ones (a floating
    base of 6 columns, feet + hand + posture of the actuated joints, CoM-like rows).
    """
    if rng.random() < 0.25:
        n = int(rng.integers(20, 41))
        feet = rng.standard_normal((12, n))
        hand = rng.standard_normal((3, n))
        posture = np.hstack([np.zeros((n - 6, 6)), np.eye(n - 6)])
        jacs = [feet, hand, posture]
        goals = [0.1 * rng.standard_normal(12), rng.standard_normal(3), rng.standard_normal(n - 6)]
    else:
        n = int(rng.integers(4, 31))
        m1 = int(rng.integers(1, min(6, n - 1) + 1))
        jacs = [rng.standard_normal((m1, n))]
        goals = [rng.standard_normal(m1) * rng.choice([0.5, 2.0, 5.0])]
        if rng.random() < 0.6:
            m2 = int(rng.integers(1, 5))
            J2 = rng.standard_normal((m2, n))
            if rng.random() < 0.3:  # a row shared with level 1 (rank-deficient level)
                J2[0] = jacs[0][0]
            if rng.random() < 0.2 and m2 > 1:
                J2[-1] = 2.0 * J2[0]
            jacs.append(J2)
            goals.append(2.0 * rng.standard_normal(m2))
        if rng.random() < 0.7:
            jacs.append(np.eye(n))
            goals.append(rng.standard_normal(n))
        else:
            m3 = int(rng.integers(1, n + 3))
            jacs.append(rng.standard_normal((m3, n)))
            goals.append(rng.standard_normal(m3))
    modes = [TaskSolveMode(int(v)) for v in rng.random(len(jacs)) < 0.3]
    p = int(rng.integers(0, 13))
    C = rng.standard_normal((p, n))
    lo, hi = -rng.uniform(0.05, 1.0, p), rng.uniform(0.05, 1.0, p)
    lo[rng.random(p) < 0.2] = -np.inf
    hi[rng.random(p) < 0.2] = np.inf
    eq = rng.random(p) < 0.1
    lo[eq] = hi[eq] = 0.0
    bl, bu = -rng.uniform(0.05, 1.0, n), rng.uniform(0.05, 1.0, n)
    if rng.random() < 0.1:
        j = int(rng.integers(0, n))
        bl[j] = bu[j] = 0.0  # a locked joint
    weights = rng.uniform(0.5, 3.0, n) if rng.random() < 0.5 else None
    return n, goals, jacs, modes, C, lo, hi, bl, bu, weights


def test_in_kernel_qp_fallback_matches_quadprog_reference():
    """The in-kernel QP fallback (stackik.sns.levelqp) gives the quadprog reference's answers.

    The reference hands each such level back to Python (stackik.sns.qp.qp_level, three
    quadprog stages). Same status, same fallback levels, same solution (1e-8 relative:
    the stage QPs carry a 1e-7 proximal term, so their solutions are determined to
    ~cond * eps only), same scales and residuals. A level whose QPs are infeasible to
    within rounding (more equality rows than null-space directions, consistent to
    ~1e-13) may be solved by one solver and held by the other: rare, and the answer
    must then still be feasible.
    """
    rng = np.random.default_rng(2026)
    count = fallbacks = held = 0
    for _ in range(500):
        n, goals, jacs, modes, C, lo, hi, bl, bu, w = fallback_problem(rng)
        ours, ref = SNSSolver(n, joint_weights=w), SNSSolver(n, joint_weights=w)
        ref._reference_qp()
        args = (goals, jacs, C, lo, hi)
        kw = dict(box_lower=bl, box_upper=bu, modes=modes)
        a, b = ours.solve(*args, **kw), ref.solve(*args, **kw)
        count += 1
        assert a.status == b.status == SolverStatus.SUCCESS, (a.status_message, b.status_message)
        fallbacks += "QP fallback" in b.status_message
        assert violation(a.solution, C, lo, hi, bl, bu) <= 1e-9
        if a.status_message != b.status_message:
            assert "failed" in a.status_message + b.status_message
            held += 1
            continue
        size = max(1.0, float(np.max(np.abs(b.solution))))
        np.testing.assert_allclose(a.solution, b.solution, rtol=0, atol=1e-8 * size)
        np.testing.assert_allclose(a.task_scales, b.task_scales, rtol=0, atol=1e-9)
        np.testing.assert_allclose(a.task_errors, b.task_errors, rtol=0, atol=1e-8 * size)
    assert fallbacks >= 0.8 * count
    assert held <= 0.01 * count


def test_fallback_levels_reported():
    """``fallback_levels`` names the levels the exact QP solved, as on the reference path.

    One solver per size is reused across problems with 1-3 levels (the per-level record
    of the kernel must not leak from one solve to the next); each answer's
    ``fallback_levels`` equals a fresh quadprog-reference solver's and the levels named
    in the message. ``exact_fallback=False``: no QP, an empty list.
    """
    rng = np.random.default_rng(8)
    solvers: dict[int, SNSSolver] = {}
    seen = quiet = 0
    for _ in range(120):
        n, goals, jacs, modes, C, lo, hi, bl, bu, _ = fallback_problem(rng)
        cut = int(rng.integers(1, len(jacs) + 1))  # now and then fewer levels
        goals, jacs, modes = goals[:cut], jacs[:cut], modes[:cut]
        ours = solvers.setdefault(n, SNSSolver(n))
        ref = SNSSolver(n)
        ref._reference_qp()
        kw = dict(box_lower=bl, box_upper=bu, modes=modes)
        res, expected = (
            ours.solve(goals, jacs, C, lo, hi, **kw),
            ref.solve(goals, jacs, C, lo, hi, **kw),
        )
        assert res.status == expected.status == SolverStatus.SUCCESS, res.status_message
        assert res.fallback_levels == expected.fallback_levels
        if "QP fallback" in res.status_message:
            named = res.status_message.split("levels [")[1].split("]")[0]
            assert res.fallback_levels == [int(k) for k in named.split(",")]
            assert all(0 <= k < len(jacs) for k in res.fallback_levels)
            seen += 1
        else:
            assert res.fallback_levels == []
            quiet += 1
    assert seen >= 40 and quiet >= 10
    # exact_fallback=False: no QP, the level holds
    n, goals, jacs, modes, C, lo, hi, bl, bu, w = fallback_problem(np.random.default_rng(1))
    solved = SNSSolver(n, joint_weights=w).solve(goals, jacs, C, lo, hi, box_lower=bl, box_upper=bu)
    assert solved.fallback_levels == [2]
    solver = SNSSolver(n, joint_weights=w, exact_fallback=False)
    res = solver.solve(goals, jacs, C, lo, hi, box_lower=bl, box_upper=bu)
    assert "QP fallback" not in res.status_message
    assert res.fallback_levels == []
    assert res.task_scales[2] == 0.0  # the level holds


# ------------------------------------------------------------ the start point
def start_problem(rng):
    """Random problem whose general rows reject dq = 0 (some of them: an empty set)."""
    n, p = int(rng.integers(2, 16)), int(rng.integers(1, 12))
    C = rng.standard_normal((p, n))
    c0 = C @ (rng.standard_normal(n) * rng.choice([0.1, 0.5, 2.0]))
    lo, hi = c0 - rng.uniform(0.0, 0.5, p), c0 + rng.uniform(0.0, 0.5, p)
    lo[rng.random(p) < 0.2] = -np.inf
    hi[rng.random(p) < 0.2] = np.inf
    eq = rng.random(p) < 0.1
    lo[eq] = hi[eq] = c0[eq]
    if rng.random() < 0.15:  # a contradicting pair: the constraint set is empty
        C = np.vstack([C, C[0]])
        lo = np.append(lo, hi[0] + 0.3 if np.isfinite(hi[0]) else 1.0)
        hi = np.append(hi, np.inf)
    bl, bu = -rng.uniform(0.5, 3.0, n), rng.uniform(0.5, 3.0, n)
    if rng.random() < 0.3:
        bl, bu = np.full(n, -np.inf), np.full(n, np.inf)
    m = int(rng.integers(1, n + 1))
    jacs = [rng.standard_normal((m, n)), np.eye(n)]
    goals = [rng.standard_normal(m), rng.standard_normal(n)]
    weights = rng.uniform(0.5, 3.0, n) if rng.random() < 0.5 else np.ones(n)
    return n, goals, jacs, C, lo, hi, bl, bu, weights


def test_start_point_matches_quadprog_reference():
    """The in-kernel start point (projection, else the active-set QP) is qp.qp_start's.

    Same verdict (a point, or an empty set left to Python) on 1500 problems; the same
    point and widened bounds to 1e-12 (by projection both solve the same small
    least-squares systems; by QP both find the unique minimum-norm point).
    """
    from stackik import _jit
    from stackik.sns import qp, run
    from stackik.sns.startpoint import start_point

    _jit.load()
    rng = np.random.default_rng(4)
    paths = set()
    for _ in range(1500):
        n, _, jacs, C, lo, hi, bl, bu, w = start_problem(rng)
        wis = 1.0 / np.sqrt(w)
        _, Cw, low, high = run.weighted_problem(np.vstack(jacs), C, lo, hi, bl, bu, wis)
        u = np.zeros(n)
        found = start_point(Cw, wis, bl, bu, low, high, u)
        u_ref = np.zeros(n)
        gl, gu, message = qp.qp_start(C, lo, hi, bl, bu, wis, u_ref)
        assert found == (message == "")
        rows = qp.weighted_rows(C, lo, hi, bl, bu, wis)
        projected = qp.start_by_projection(*rows) is not None
        paths.add("projection" if projected else "qp" if found else "empty")
        if found:
            np.testing.assert_allclose(u, u_ref, rtol=0, atol=1e-12)
            finite = np.isfinite(gl)
            np.testing.assert_allclose(low[n:][finite], gl[finite], rtol=0, atol=1e-12)
            finite = np.isfinite(gu)
            np.testing.assert_allclose(high[n:][finite], gu[finite], rtol=0, atol=1e-12)
    assert paths == {"projection", "qp", "empty"}


def test_start_point_solves_match_quadprog_reference():
    """Whole solves with the start point found in the kernel vs the quadprog reference.

    Statuses agree (an empty set is still named by Python: INFEASIBLE, same message).
    The start points agree to rounding, but a projected start sits on several rows'
    bounds at once; when a direction is tangent to such a row to rounding, the greedy
    saturation can pin the rows in another order and find another (valid) scale or
    need the QP on other levels. That happens in a few of these random problems (the
    rest give the same solution to 1e-8 and the same message), never on the robot
    benchmarks.
    """
    rng = np.random.default_rng(6)
    count = differ = 0
    for _ in range(600):
        n, goals, jacs, C, lo, hi, bl, bu, w = start_problem(rng)
        ours, ref = SNSSolver(n, joint_weights=w), SNSSolver(n, joint_weights=w)
        ref._reference_qp()
        a = ours.solve(goals, jacs, C, lo, hi, box_lower=bl, box_upper=bu)
        b = ref.solve(goals, jacs, C, lo, hi, box_lower=bl, box_upper=bu)
        count += 1
        assert a.status == b.status
        if a.status == SolverStatus.SUCCESS:
            assert violation(a.solution, C, lo, hi, bl, bu) <= 1e-9
        else:
            assert a.status_message == b.status_message
        size = max(1.0, float(np.max(np.abs(b.solution))))
        same = a.status_message == b.status_message
        differ += not (same and np.allclose(a.solution, b.solution, rtol=0, atol=1e-8 * size))
    assert differ <= 0.03 * count


# ------------------------------------------------- statuses and bad inputs
def test_infeasible_returns_least_violating_point():
    C = np.array([[1.0, 0.0], [1.0, 0.0]])
    res = sns.solve(
        [np.array([1.0])],
        [np.array([[0.0, 1.0]])],
        C,
        np.array([1.0, -np.inf]),
        np.array([np.inf, -1.0]),
    )
    assert res.status == SolverStatus.INFEASIBLE
    assert "violated" in res.status_message
    assert np.all(np.isfinite(res.solution))
    assert res.solution[0] == pytest.approx(0.0, abs=1e-6)  # splits the violation
    assert res.solution[1] == pytest.approx(1.0, abs=1e-9)  # the task still runs


def _conflicting_rows(rng: np.random.Generator, n: int, p: int):
    """Random general rows with one- and two-sided, often conflicting bounds, and a box."""
    C = rng.normal(size=(p, n)) * rng.uniform(0.1, 3.0, size=(p, 1))
    C[:, rng.integers(0, n)] *= rng.random() < 0.3  # sometimes a joint no row sees
    gl = rng.normal(size=p) * 2.0 + 1.0
    gu = gl + np.abs(rng.normal(size=p)) * (rng.random(p) < 0.5)
    gu = np.where(rng.random(p) < 0.3, np.inf, gu)
    gl = np.where(rng.random(p) < 0.2, -np.inf, gl)
    return C, gl, gu, -rng.uniform(0.2, 2.0, n), rng.uniform(0.2, 2.0, n)


def test_least_violating_start_over_the_joints_alone_is_the_slack_qps():
    """The least-violating start solved over ``u`` alone (``n`` variables) reaches the
    optimum of the slack QP in ``(u, t)`` (``n + p`` variables, quadprog) on random
    conflicting rows, to rounding, and is never worse."""
    rng = np.random.default_rng(7)
    settled = 0
    for _ in range(200):
        n, p = int(rng.integers(2, 12)), int(rng.integers(3, 120))
        C, gl, gu, lo, hi = _conflicting_rows(rng, n, p)
        u = qp.hinge_least_squares(C, gl, gu, lo, hi)
        ref = np.clip(qp.slack_least_squares(C, gl, gu, lo, hi), lo, hi)
        if u is None:
            continue
        settled += 1
        assert np.all(u >= lo) and np.all(u <= hi)
        f, f_ref = (qp.least_violation_objective(C, gl, gu, x) for x in (u, ref))
        assert f <= f_ref + 1e-12 * (1.0 + f_ref)
        assert f == pytest.approx(f_ref, rel=1e-9, abs=1e-12)
    assert settled == 200


def test_the_compiled_least_violating_start_is_the_references():
    """The compiled passes (:func:`stackik.sns.leastviolating.hinge_start`) reach the
    optimum of the NumPy/quadprog reference (:func:`hinge_least_squares`) on random
    conflicting rows (one- and two-sided, infinite bounds, a joint no row sees, a joint
    held fixed), to rounding, inside the box, and settle wherever the reference does
    (the reference is checked against the slack QP in ``(u, t)`` above)."""
    rng = np.random.default_rng(11)
    settled = 0
    for _ in range(200):
        n, p = int(rng.integers(2, 12)), int(rng.integers(3, 120))
        C, gl, gu, lo, hi = _conflicting_rows(rng, n, p)
        if rng.random() < 0.2:
            lo[0] = hi[0] = 0.3  # a joint held fixed (an equality row of the box)
        ref = qp.hinge_least_squares(C, gl, gu, lo, hi)
        u = qp.compiled_hinge(C, gl, gu, lo, hi)
        assert (u is None) == (ref is None)
        if u is None:
            continue
        settled += 1
        assert np.all(u >= lo) and np.all(u <= hi)
        f, f_ref = (qp.least_violation_objective(C, gl, gu, x) for x in (u, ref))
        assert f == pytest.approx(f_ref, rel=1e-9, abs=1e-12)
        np.testing.assert_allclose(u, ref, rtol=0, atol=1e-6 * (1.0 + np.abs(ref).max()))
    assert settled >= 150  # (169 of 200 here; the rest go to the slack QP either way)


def test_an_empty_constraint_set_gets_the_same_start_compiled_and_by_the_reference():
    """A step whose rows cannot all hold: the kernel hands the start back, the compiled
    least-violating point is used, and the step (solution, status, message) matches the
    reference path's (``_reference_qp``) to rounding."""
    rng = np.random.default_rng(5)
    checked = 0
    for _ in range(40):
        n, p = int(rng.integers(2, 8)), int(rng.integers(3, 12))
        C, gl, gu, lo, hi = _conflicting_rows(rng, n, p)
        J = rng.normal(size=(3, n))
        x = rng.normal(size=3)
        fast, ref = sns.SNSSolver(n), sns.SNSSolver(n)
        ref._reference_qp()
        a = fast.solve([x], [J], C, gl, gu, box_lower=lo, box_upper=hi)
        b = ref.solve([x], [J], C, gl, gu, box_lower=lo, box_upper=hi)
        assert a.status == b.status
        if a.status != SolverStatus.INFEASIBLE:
            continue
        checked += 1
        np.testing.assert_allclose(a.solution, b.solution, rtol=0, atol=1e-6)
        assert a.status_message.split(": row")[0] == b.status_message.split(": row")[0]
    assert checked >= 10


def test_least_violating_start_in_closed_form():
    """``u >= 1`` against ``u <= -1``: the start splits the violation (u = 0, up to the
    1e-8 weight of ||u||^2); ``u >= 2`` against ``u <= 1`` in the box ``u <= 0.5``: the
    unconstrained optimum 1.5 is clipped to the box, where the objective's gradient
    points out of it."""
    C = np.array([[1.0], [1.0]])
    u = qp.hinge_least_squares(
        C, np.array([1.0, -np.inf]), np.array([np.inf, -1.0]), np.array([-5.0]), np.array([5.0])
    )
    assert u is not None and abs(u[0]) < 1e-12
    u = qp.hinge_least_squares(
        C, np.array([2.0, -np.inf]), np.array([np.inf, 1.0]), np.array([-5.0]), np.array([0.5])
    )
    assert u is not None and u[0] == 0.5
    for compiled in (True, False):
        lower, upper, message = qp.least_violating_start(
            C, np.array([2.0, -np.inf]), np.array([np.inf, 1.0]), np.zeros(1) - 5.0,
            np.array([0.5]), np.ones(1), np.zeros(1), compiled,
        )  # fmt: skip
        assert "row 0 is violated by 1.5" in message
        np.testing.assert_array_equal(lower, [0.5, -np.inf])  # widened to the start point
        np.testing.assert_array_equal(upper, [np.inf, 1.0])
    cases = [((1.0, -1.0), 5.0, 0.0), ((2.0, 1.0), 0.5, 0.5)]  # (bounds, box top, u)
    for (low, high), top, expected in cases:
        u = qp.compiled_hinge(
            C, np.array([low, -np.inf]), np.array([np.inf, high]), np.array([-5.0]),
            np.array([top]),
        )  # fmt: skip
        assert u is not None and abs(u[0] - expected) < 1e-12


def test_empty_problems():
    res = sns.solve([], [], box_lower=np.full(3, -1.0), box_upper=np.full(3, 1.0))
    assert res.status == SolverStatus.EMPTY_PROBLEM
    np.testing.assert_array_equal(res.solution, np.zeros(3))
    # no tasks, constraints exclude zero: minimum-norm feasible point
    res = sns.solve([], [], np.array([[1.0, 1.0]]), np.array([1.0]), np.array([2.0]))
    assert res.status == SolverStatus.EMPTY_PROBLEM
    np.testing.assert_allclose(res.solution, [0.5, 0.5], atol=1e-9)
    res = sns.solve([np.zeros(0)], [np.zeros((0, 4))])
    assert res.status == SolverStatus.EMPTY_PROBLEM
    res = sns.solve([np.ones(2)], [np.zeros((2, 0))])
    assert res.status == SolverStatus.EMPTY_PROBLEM
    assert res.solution.shape == (0,)
    res = sns.solve([], [])
    assert res.status == SolverStatus.EMPTY_PROBLEM


@pytest.mark.parametrize(
    ("kwargs", "status", "words"),
    [
        (
            dict(jacobians=[np.ones((2, 3)), np.ones((1, 4))]),
            SolverStatus.SHAPE_MISMATCH,
            ["jacobians[1]", "(m, 3)", "(1, 4)"],
        ),
        (
            dict(goals=[np.ones(2), np.ones(2)]),
            SolverStatus.SHAPE_MISMATCH,
            ["goals[1]", "(1,)", "(2,)"],
        ),
        (dict(goals=[np.ones(2)]), SolverStatus.SHAPE_MISMATCH, ["1 goals", "2 jacobians"]),
        (
            dict(C=np.ones((2, 4)), lower=np.zeros(2), upper=np.ones(2)),
            SolverStatus.SHAPE_MISMATCH,
            ["C", "(p, 3)", "(2, 4)"],
        ),
        (
            dict(C=np.ones((2, 3)), lower=np.zeros(3), upper=np.ones(2)),
            SolverStatus.SHAPE_MISMATCH,
            ["lower", "(2,)", "(3,)"],
        ),
        (dict(box_lower=np.zeros(2)), SolverStatus.SHAPE_MISMATCH, ["box_lower", "(3,)"]),
        (dict(lower=np.zeros(1)), SolverStatus.SHAPE_MISMATCH, ["lower", "C is empty"]),
        (dict(modes=[TaskSolveMode.SCALE]), SolverStatus.SHAPE_MISMATCH, ["modes"]),
        (dict(modes=["scale", "bogus"]), SolverStatus.INVALID_INPUT, ["modes[1]", "bogus"]),
        (
            dict(jacobians=[np.ones((2, 3)), np.array([[1.0, np.nan, 0.0]])]),
            SolverStatus.INVALID_INPUT,
            ["jacobians[1]", "NaN", "column 1"],
        ),
        (
            dict(goals=[np.ones(2), np.array([np.inf])]),
            SolverStatus.INVALID_INPUT,
            ["goals[1]", "inf"],
        ),
        (
            dict(C=np.array([[1.0, np.inf, 0]]), lower=np.zeros(1), upper=np.ones(1)),
            SolverStatus.INVALID_INPUT,
            ["C", "row 0"],
        ),
        (
            dict(C=np.ones((2, 3)), lower=np.array([0.0, 2.0]), upper=np.ones(2)),
            SolverStatus.INVALID_INPUT,
            ["lower > upper", "row 1"],
        ),
        (
            dict(C=np.ones((1, 3)), lower=np.array([np.nan]), upper=np.ones(1)),
            SolverStatus.INVALID_INPUT,
            ["NaN"],
        ),
        (
            dict(box_lower=np.array([0.0, 1.0, 0.0]), box_upper=np.zeros(3)),
            SolverStatus.INVALID_INPUT,
            ["box_lower > box_upper", "joint 1"],
        ),
        (
            dict(box_lower=np.full(3, np.inf), box_upper=np.full(3, np.inf)),
            SolverStatus.INVALID_INPUT,
            ["joint 0"],
        ),
        (
            dict(joint_weights=np.array([1.0, -1.0, 1.0])),
            SolverStatus.INVALID_INPUT,
            ["joint_weights"],
        ),
        (dict(joint_weights=np.ones(2)), SolverStatus.SHAPE_MISMATCH, ["joint_weights"]),
        (dict(damping=-1.0), SolverStatus.INVALID_INPUT, ["damping"]),
        (dict(jacobians=[[[1, 2, 3], [4, 5]], np.ones((1, 3))]), SolverStatus.INVALID_INPUT, []),
        (dict(goals=["ab", np.ones(1)]), SolverStatus.INVALID_INPUT, []),
    ],
)
def test_bad_inputs_never_raise(kwargs, status, words):
    args = dict(goals=[np.ones(2), np.ones(1)], jacobians=[np.ones((2, 3)), np.ones((1, 3))])
    args.update(kwargs)
    res = sns.solve(**args)
    assert res.status == status, res.status_message
    for w in words:
        assert w in res.status_message
    assert np.all(np.isfinite(res.solution))


def test_solver_constructor_raises_typed_errors():
    from stackik.errors import InvalidInput, ShapeError

    with pytest.raises(ShapeError):
        SNSSolver(3, joint_weights=np.ones(4))
    with pytest.raises(InvalidInput):
        SNSSolver(3, joint_weights=np.zeros(3))
    with pytest.raises(InvalidInput):
        SNSSolver(3, tolerance=np.nan)
    with pytest.raises(InvalidInput):
        SNSSolver(-1)


def test_inputs_not_modified_and_lists_accepted():
    J = [[1.0, 0.0], [0.0, 1.0]]
    C = np.array([[1.0, 1.0]])
    lo, hi = np.array([-0.5]), np.array([0.5])
    res = sns.solve([[1.0, 1.0]], [J], C, lo, hi, box_lower=[-1, -1], box_upper=[1, 1])
    assert res.success
    np.testing.assert_allclose(res.solution, [0.25, 0.25], atol=1e-12)
    assert lo[0] == -0.5 and hi[0] == 0.5


def test_import_does_not_load_numba():
    code = "import sys, stackik.sns; print('numba' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(PY_ROOT), "PATH": ""},
        check=True,
    )
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    "J, x",
    [
        # J_ij^2 overflows float64 (1.34e154^2 > 1.8e308): found by tests/test_fuzz.py.
        (np.where(np.arange(14) == 13, 1.3407807929942597e154, 0.0).reshape(2, 7), np.zeros(2)),
        (np.full((2, 7), 1e300), np.array([1e300, -1e300])),
    ],
)
def test_overflow_is_a_numerical_error_not_nan(J, x):
    """Finite inputs whose products overflow: NUMERICAL_ERROR and a zero dq, never NaN."""
    res = sns.solve([x], [J], box_lower=np.zeros(7), box_upper=np.full(7, 10.0))
    assert res.status == SolverStatus.NUMERICAL_ERROR
    assert "overflow" in res.status_message
    np.testing.assert_array_equal(res.solution, np.zeros(7))
    assert np.all(np.isfinite(res.task_scales)) and np.all(np.isfinite(res.task_errors))
