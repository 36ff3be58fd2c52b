"""The in-kernel dual active-set QP (stackik.sns.activeset) against quadprog."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import quadprog

from stackik.sns.activeset import QP_INFEASIBLE, QP_NOT_CONVEX, QP_SOLVED, gi_solve, qp_workspace

PY_ROOT = Path(__file__).resolve().parents[1] / "python"
KINDS = ("plain", "dependent", "degenerate", "infeasible", "bad_equalities", "stage1", "residual")


def reference(G, a, A, b, meq):
    """quadprog's answer, or None when it reports the constraints inconsistent."""
    try:
        if A.shape[0] == 0:
            return quadprog.solve_qp(G, a)[0]
        return quadprog.solve_qp(G, a, np.ascontiguousarray(A.T), b, meq)[0]
    except ValueError:
        return None


def reference_kkt(G, a, A, b, meq):
    """quadprog's ``(x, active set, multipliers)``, or None when it reports infeasible.

    The active set is quadprog's ``iact`` (1-based there) as a set of row indices; the
    multipliers are its ``lagrangian``, one per row (0 for the inactive rows).
    """
    try:
        x, _, _, _, lam, iact = quadprog.solve_qp(G, a, np.ascontiguousarray(A.T), b, meq)
    except ValueError:
        return None
    return x, set((iact[iact > 0] - 1).tolist()), lam


def ours(G, a, A, b, meq, solve=gi_solve, workspace=qp_workspace):
    nv, m = G.shape[0], A.shape[0]
    x = np.zeros(nv)
    rows = np.ascontiguousarray(A) if m else np.zeros((1, nv))
    status = solve(G, a, rows, b if m else np.zeros(1), nv, m, meq, x, *workspace(nv, m))
    return x, status


def ours_kkt(G, a, A, b, meq):
    """gi_solve's ``(x, status, active set, multipliers)`` read back from its workspaces.

    ``Wr[4]`` flags the active rows, ``act[:q]`` lists them in the order of the
    multipliers ``Wv[3, :q]``; an equality entered with the sign ``Wr[3, i]``, so its
    multiplier for ``A[i] x = b[i]`` is ``Wr[3, i] Wv[3, j]``.
    """
    nv, m = G.shape[0], A.shape[0]
    x = np.zeros(nv)
    Wm, Wv, Wr, act = qp_workspace(nv, m)
    status = gi_solve(G, a, np.ascontiguousarray(A), b, nv, m, meq, x, Wm, Wv, Wr, act)
    active = set(np.flatnonzero(Wr[4, :m]).tolist())
    lam = np.zeros(m)
    for j in range(len(active)):
        lam[act[j]] = Wv[3, j] * Wr[3, act[j]]
    return x, status, active, lam


def assert_kkt(G, a, A, b, meq, x, active, lam, tol):
    """The optimality conditions of ``(x, lam)`` with ``active`` as the active set.

    Stationarity ``G x - a = A^T lam``, the active rows tight, the inactive rows'
    multipliers 0 and the inequalities' multipliers >= 0 (``tol`` relative).
    """
    scale = max(1.0, float(np.max(np.abs(lam), initial=0.0)), float(np.max(np.abs(a))))
    grad = G @ x - a
    np.testing.assert_allclose(
        grad, A.T @ lam, rtol=0, atol=tol * scale * max(1.0, np.abs(A).max())
    )
    rows = sorted(active)
    tight = A[rows] @ x - b[rows]
    assert np.all(np.abs(tight) <= tol * (1 + np.abs(b[rows]) + np.abs(A[rows]) @ np.abs(x)))
    inactive = np.ones(A.shape[0], dtype=bool)
    inactive[rows] = False
    assert np.all(lam[inactive] == 0.0)
    assert np.all(lam[meq:] >= -tol * scale)


def random_qp(rng, kind, nv_max=50, m_max=150):
    """A random strictly convex QP of one of KINDS (up to 50 variables, ~150 rows)."""
    nv = int(rng.integers(1, nv_max + 1))
    m = int(rng.integers(0, m_max + 1))
    M = rng.standard_normal((nv + int(rng.integers(0, 5)), nv))
    G = M.T @ M + rng.uniform(1e-3, 1) * np.eye(nv)
    a = rng.standard_normal(nv) * rng.choice([0.1, 1, 10])
    A = rng.standard_normal((m, nv))
    x0 = rng.standard_normal(nv) * 0.5  # feasible by construction (before "infeasible")
    slack = rng.uniform(0, 1, m)
    meq = int(rng.integers(1, min(m, nv) + 1)) if m and rng.random() < 0.4 else 0
    if kind == "dependent" and m > max(4, meq):  # scaled copies, of equalities too
        k = int(rng.integers(1, m // 2))
        A[rng.integers(meq, m, k)] = A[rng.integers(0, m, k)] * rng.uniform(0.5, 2, k)[:, None]
    if kind == "degenerate":  # up to 2 nv rows tight at x0 (a vertex cone with interior)
        w = rng.standard_normal(nv)
        k = min(m, int(rng.integers(1, 2 * nv + 1)))
        A[:k] *= np.sign(A[:k] @ w)[:, None]
        slack[:k] = 0.0
        meq = 0
    if kind == "stage1":  # the SNS level QP's stage 1: G = diag(1e-7, ..., 1), a = e_s
        G = np.diag(np.concatenate([np.full(nv - 1, 1e-7), [1.0]]))
        a = np.eye(1, nv, nv - 1)[0]
    if kind == "residual":  # the residual QP: D^T D + 1e-7 I, D rank deficient
        D = rng.standard_normal((max(1, nv - 1), nv))
        G = D.T @ D + 1e-7 * np.eye(nv)
        a = D.T @ rng.standard_normal(D.shape[0])
    b = A @ x0 - slack
    b[:meq] = A[:meq] @ x0
    if kind == "infeasible" and m > meq:  # a contradicting pair of inequalities
        i = int(rng.integers(meq, m))
        A = np.vstack([A, -A[i]])
        b = np.concatenate([b, [-b[i] + rng.uniform(0.01, 1)]])
    if kind == "bad_equalities" and meq and m > meq:  # a dependent, inconsistent equality
        j = int(rng.integers(0, meq))
        A = np.vstack([A[:meq], 2 * A[j], A[meq:]])
        b = np.concatenate([b[:meq], [2 * b[j] + rng.uniform(0.01, 1)], b[meq:]])
        meq += 1
    return G, a, A, b, meq


@pytest.mark.parametrize("kind", KINDS)
def test_matches_quadprog_on_random_problems(kind):
    """Same verdict, solution, active set and multipliers as quadprog (400 problems each).

    Solutions agree to 1e-9 relative; for the badly conditioned residual QPs
    (cond(G) up to ~1e9) the difference is measured in the metric of G (the directions
    G barely weighs are only determined to ~cond(G) * eps by either solver). The active
    sets are the same rows and the multipliers agree to 1e-9 relative, except at the
    degenerate vertices (more rows tight than variables), where the multipliers are not
    unique: there both answers must satisfy the optimality conditions. A problem one
    solver calls infeasible the other does too, and a solved point satisfies the rows.
    """
    rng = np.random.default_rng(1100 + KINDS.index(kind))
    verdicts = set()
    for _ in range(400):
        G, a, A, b, meq = random_qp(rng, kind)
        ref = reference_kkt(G, a, A, b, meq) if A.shape[0] else None
        x_ref = ref[0] if ref is not None else reference(G, a, A, b, meq)
        x, status = ours(G, a, A, b, meq)
        verdicts.add(status)
        assert status in (QP_SOLVED, QP_INFEASIBLE)
        assert (status == QP_SOLVED) == (x_ref is not None)
        if x_ref is None:
            continue
        scale = max(1.0, float(np.max(np.abs(x_ref))))
        if kind == "residual":
            dx = x - x_ref
            g_norm = max(1.0, float(np.sqrt(x_ref @ G @ x_ref)))
            assert np.sqrt(dx @ G @ dx) <= 1e-9 * g_norm
            assert np.max(np.abs(dx)) <= 1e-6 * scale
        else:
            np.testing.assert_allclose(x, x_ref, rtol=0, atol=1e-9 * scale)
        v = A @ x - b
        assert np.all(np.abs(v[:meq]) <= 1e-9 * (1 + np.abs(b[:meq])))
        assert np.all(v[meq:] >= -1e-9 * (1 + np.abs(b[meq:])))
        if ref is None:
            continue
        x2, _, active, lam = ours_kkt(G, a, A, b, meq)
        np.testing.assert_array_equal(x2, x)
        assert_kkt(G, a, A, b, meq, x, active, lam, 1e-9)
        if kind != "degenerate":
            assert active == ref[1]
            lam_scale = max(1.0, float(np.max(np.abs(ref[2]))))
            np.testing.assert_allclose(lam, ref[2], rtol=0, atol=1e-9 * lam_scale)
    if kind in ("infeasible", "bad_equalities"):
        assert verdicts == {QP_SOLVED, QP_INFEASIBLE}


def test_small_known_answers():
    # min 1/2 |x|^2 - [1, 1] x s.t. x0 + x1 <= 1  ->  x = (0.5, 0.5)
    x, status = ours(np.eye(2), np.ones(2), np.array([[-1.0, -1.0]]), np.array([-1.0]), 0)
    assert status == QP_SOLVED
    np.testing.assert_allclose(x, [0.5, 0.5], atol=1e-15)
    # an equality and an inactive bound
    A = np.array([[1.0, -1.0], [1.0, 0.0]])
    x, status = ours(np.eye(2), np.array([2.0, 0.0]), A, np.array([0.0, -5.0]), 1)
    assert status == QP_SOLVED
    np.testing.assert_allclose(x, [1.0, 1.0], atol=1e-15)
    # no constraints: G^-1 a
    G = np.array([[4.0, 1.0], [1.0, 3.0]])
    x, status = ours(G, np.array([1.0, 2.0]), np.zeros((0, 2)), np.zeros(0), 0)
    np.testing.assert_allclose(x, np.linalg.solve(G, [1.0, 2.0]), atol=1e-15)


def test_infeasible_and_not_convex():
    A = np.array([[1.0, 0.0], [-1.0, 0.0]])
    _, status = ours(np.eye(2), np.zeros(2), A, np.array([1.0, 0.0]), 0)  # x0 >= 1, x0 <= 0
    assert status == QP_INFEASIBLE
    _, status = ours(np.diag([1.0, -1.0]), np.zeros(2), A, np.array([-1.0, -1.0]), 0)
    assert status == QP_NOT_CONVEX
    zero_row = np.zeros((1, 2))
    _, status = ours(np.eye(2), np.zeros(2), zero_row, np.array([1.0]), 0)  # 0 >= 1
    assert status == QP_INFEASIBLE
    _, status = ours(np.eye(2), np.zeros(2), zero_row, np.array([-1.0]), 0)  # 0 >= -1
    assert status == QP_SOLVED


def test_redundant_and_parallel_constraints():
    """Duplicated, scaled and parallel rows: quadprog's point, optimality conditions hold.

    min 1/2 |x|^2 - 3 x0 - x1 under x0 = x1 (given three times, once scaled) and
    x0 + x1 <= 1 (given three times, once scaled by 3) with the parallel, inactive
    x0 + x1 <= 2: the answer is (0.5, 0.5), one row of each family active (the copies
    are dependent on it); without the equalities it is (1.5, -0.5). Then a degenerate
    vertex (x0 <= 0.5, x1 <= 0.5 and x0 + x1 <= 1 all tight at the answer, multipliers
    not unique).
    """
    G, a = np.eye(2), np.array([3.0, 1.0])
    A = np.array(
        [[1.0, -1.0], [1.0, -1.0], [2.0, -2.0], [-1.0, -1.0], [-1.0, -1.0], [-3.0, -3.0], [-1, -1]]
    )
    b = np.array([0.0, 0.0, 0.0, -1.0, -1.0, -3.0, -2.0])
    for meq, rows, rhs, answer in ((3, A, b, [0.5, 0.5]), (0, A[3:], b[3:], [1.5, -0.5])):
        x, status, active, lam = ours_kkt(G, a, rows, rhs, meq)
        assert status == QP_SOLVED
        np.testing.assert_allclose(x, answer, rtol=0, atol=1e-15)
        np.testing.assert_allclose(x, reference(G, a, rows, rhs, meq), rtol=0, atol=1e-15)
        assert_kkt(G, a, rows, rhs, meq, x, active, lam, 1e-12)
        assert len(active & set(range(meq))) == (meq > 0)
        assert len(active - set(range(meq))) == 1
        assert lam[-1] == 0.0  # the parallel row x0 + x1 <= 2 is not active
    vertex = np.array([[-1.0, 0.0], [0.0, -1.0], [-1.0, -1.0]])
    x, status, active, lam = ours_kkt(
        G, np.array([2.0, 2.0]), vertex, np.array([-0.5, -0.5, -1.0]), 0
    )
    assert status == QP_SOLVED
    np.testing.assert_allclose(x, [0.5, 0.5], rtol=0, atol=1e-15)
    assert_kkt(
        G, np.array([2.0, 2.0]), vertex, np.array([-0.5, -0.5, -1.0]), 0, x, active, lam, 1e-12
    )


@pytest.mark.parametrize(
    ("A", "b", "meq"),
    [
        ([[1.0, 1.0], [-2.0, -2.0]], [1.0, 0.0], 0),  # x0 + x1 >= 1 and x0 + x1 <= 0
        ([[1.0, -1.0], [2.0, -2.0]], [0.0, 1.0], 2),  # x0 = x1 and 2 x0 - 2 x1 = 1
        ([[1.0, 0.0], [-1.0, 0.0]], [1.0, 0.0], 1),  # x0 = 1 and x0 <= 0
        ([[1.0, 0.0], [1.0, 0.0], [-3.0, 0.0], [0.0, 1.0]], [1.0, 1.0, -2.0, 0.0], 0),
    ],
)
def test_parallel_contradicting_rows_are_infeasible(A, b, meq):
    """Contradicting parallel rows: reported infeasible (as by quadprog), never a point."""
    A, b = np.array(A), np.array(b)
    assert reference(np.eye(2), np.ones(2), A, b, meq) is None
    _, status = ours(np.eye(2), np.ones(2), A, b, meq)
    assert status == QP_INFEASIBLE


def test_plain_python_matches_compiled():
    """The kernels run as plain Python (STACKIK_DISABLE_JIT=1) give the same answers."""
    rng = np.random.default_rng(11)
    kinds = ("plain", "dependent", "degenerate", "infeasible", "stage1")
    problems = [random_qp(rng, kind, 12, 30) for kind in kinds]
    code = (
        "import pickle, sys; from stackik.sns.activeset import gi_solve, qp_workspace; "
        "import numpy as np; from stackik import _jit; assert not _jit.load(); out = []\n"
        "for G, a, A, b, meq in pickle.load(sys.stdin.buffer):\n"
        "    x = np.zeros(G.shape[0]); A = A if A.shape[0] else np.zeros((1, G.shape[0]))\n"
        "    s = gi_solve(G, a, A, b if b.size else np.zeros(1), G.shape[0], b.size, meq, x,"
        " *qp_workspace(G.shape[0], b.size))\n"
        "    out.append((x, s))\n"
        "pickle.dump(out, sys.stdout.buffer)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=pickle.dumps(problems),
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(PY_ROOT), "STACKIK_DISABLE_JIT": "1"},
        check=True,
    )
    for (G, a, A, b, meq), (x_py, s_py) in zip(problems, pickle.loads(done.stdout), strict=True):
        x, status = ours(G, a, A, b, meq)
        assert status == s_py
        np.testing.assert_allclose(x, x_py, rtol=0, atol=1e-12)
