"""A dense dual active-set QP solver (Goldfarb-Idnani), written as kernels.

Solves

    minimize    1/2 x^T G x - a^T x
    subject to  A[i] . x  = b[i]    for i < meq
                A[i] . x >= b[i]    for meq <= i < m

with ``G`` symmetric positive definite, by the dual method of

    D. Goldfarb, A. Idnani, "A numerically stable dual method for solving strictly
    convex quadratic programs", Mathematical Programming 27:1-33, 1983

(the method ``quadprog`` implements). It starts from the unconstrained minimum
``x = G^-1 a`` and adds violated constraints one at a time, keeping the primal point
optimal for the constraints in the active set and their multipliers ``u >= 0``
(dual feasible); a constraint whose multiplier would turn negative is dropped.

Factors: with ``G = L L^T`` and ``N`` the normals of the active constraints (``q``
of them), ``L^-1 N = Q [R; 0]`` (``Q`` orthogonal, ``R`` upper triangular ``q x q``).
The solver keeps ``J = L^-T Q`` and ``R``: ``d = J^T n`` splits a normal ``n`` into
``d[:q]`` (its part in the span of the active normals) and ``d[q:]`` (the rest); the
primal step direction is ``z = J[:, q:] d[q:]`` and the dual one ``r = R^-1 d[:q]``.
Adding a constraint rotates ``d[q:]`` onto its first entry with Givens rotations
(applied to the columns of ``J``) and appends ``d[:q+1]`` as a column of ``R``;
dropping one deletes its column of ``R`` and restores the triangle with Givens
rotations on its rows (applied to the columns of ``J`` as well). ``O(nv^2)`` per
change, no refactorisation.

Tolerances (relative, so the answers do not depend on the scaling of a row):

* a constraint counts as violated when ``A[i] . x - b[i] < -1e-14 (|b[i]| +
  ||A[i]||_1 X)``, i.e. by more than the rounding of its value, where ``X`` is the
  larger of ``||x||_inf`` and the problem's distance scale ``max_i |b[i]| /
  ||A[i]||_1`` (so right-hand sides that are rounding noise around 0 do not count
  as violated while ``x`` is still near 0); the most violated one (per unit norm of
  its row) enters first;
* a constraint is linearly dependent on the active ones when
  ``||d[q:]||^2 <= 1e-20 ||d||^2`` (its normal lies in their span to ~1e-10 in the
  metric of ``G^-1``): only a step in the multipliers is then possible, and if no
  active inequality can be dropped the problem is infeasible.

Everything works in caller-provided workspaces (:func:`qp_workspace`); nothing is
allocated while iterating. The kernels run compiled through :mod:`stackik._jit` or
as plain Python.
"""

from __future__ import annotations

import math

import numpy as np

from stackik._jit import kernel

# Status of gi_solve.
QP_SOLVED = 0
QP_INFEASIBLE = 1  # the constraints admit no point
QP_NOT_CONVEX = 2  # G is not positive definite (its Cholesky factor breaks down)
QP_TROUBLE = 3  # iteration cap reached or non-finite values: numerical trouble

_VIOL_TOL = 1e-14  # relative violation below which a constraint counts as satisfied
_DEP_TOL = 1e-20  # ||d[q:]||^2 / ||d||^2 below which a normal is dependent
_INF = math.inf


@kernel
def qp_workspace(nv: int, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Workspaces of :func:`gi_solve` for up to ``nv`` variables and ``m`` constraints.

    Returns:
        ``(Wm, Wv, Wr, act)``: ``(2, nv, nv)`` for ``J`` and ``R``; ``(4, nv + 1)``
        for ``d``, ``z``, ``r`` and the multipliers ``u``; ``(5, max(m, 1))`` for the
        constraint values, row 2- and 1-norms, signs and active flags; ``(nv + 1,)``
        int64 for the active set.
    """
    return (
        np.empty((2, max(nv, 1), max(nv, 1))),
        np.empty((4, nv + 1)),
        np.empty((5, max(m, 1))),
        np.empty(nv + 1, dtype=np.int64),
    )


@kernel
def cholesky_inverse(G: np.ndarray, nv: int, J: np.ndarray, L: np.ndarray) -> bool:
    """``J <- L^-T`` (upper triangular) for ``G[:nv, :nv] = L L^T``; ``L`` is scratch.

    Returns:
        False when ``G`` is not (numerically) positive definite.
    """
    for j in range(nv):
        acc = G[j, j]
        for k in range(j):
            acc -= L[j, k] * L[j, k]
        if not acc > 0.0:  # (also catches NaN)
            return False
        piv = math.sqrt(acc)
        L[j, j] = piv
        for i in range(j + 1, nv):
            acc = G[i, j]
            for k in range(j):
                acc -= L[i, k] * L[j, k]
            L[i, j] = acc / piv
    # L^T J = I, column by column (back substitution; J is upper triangular).
    for c in range(nv):
        for i in range(c + 1, nv):
            J[i, c] = 0.0
        J[c, c] = 1.0 / L[c, c]
        for i in range(c - 1, -1, -1):
            acc = 0.0
            for k in range(i + 1, c + 1):
                acc += L[k, i] * J[k, c]
            J[i, c] = -acc / L[i, i]
    return True


@kernel(inline=True)
def _hypot(a: float, b: float) -> float:
    """``sqrt(a^2 + b^2)`` with the same bits compiled and as plain Python.

    ``math.hypot`` is CPython's own algorithm in plain Python and the C library's in
    compiled code; the two differ in the last bit now and then. This squares and adds
    (scaled by the larger magnitude only where the squares would overflow or underflow),
    which both run identically (IEEE ``*``, ``+``, ``/`` and ``sqrt``, no contraction).
    """
    s = a * a + b * b
    if 1e-290 < s < 1e290:
        return math.sqrt(s)
    x, y = abs(a), abs(b)
    if x < y:
        x, y = y, x
    if x == 0.0:
        return 0.0
    t = y / x
    return x * math.sqrt(1.0 + t * t)


@kernel(inline=True)
def _givens(a: float, b: float) -> tuple[float, float, float]:
    """``(c, s, rho)`` with ``[c s; -s c] [a; b] = [rho; 0]`` (``rho = +-hypot(a, b)``)."""
    if b == 0.0:
        return 1.0, 0.0, a
    rho = _hypot(a, b)
    if a < 0.0:
        rho = -rho
    return a / rho, b / rho, rho


@kernel
def add_constraint(J: np.ndarray, R: np.ndarray, d: np.ndarray, nv: int, q: int) -> None:
    """Append the normal whose ``d = J^T n`` is given as active constraint ``q``.

    Givens rotations zero ``d[q+1:]`` (bottom up) and are applied to the columns of
    ``J``; ``d[:q+1]`` becomes column ``q`` of ``R``.
    """
    for i in range(nv - 1, q, -1):
        if d[i] == 0.0:
            continue
        c, s, rho = _givens(d[i - 1], d[i])
        d[i - 1] = rho
        d[i] = 0.0
        for k in range(nv):  # (J[:, i-1], J[:, i]) <- (c J[:, i-1] + s J[:, i], ...)
            ja = J[k, i - 1]
            jb = J[k, i]
            J[k, i - 1] = c * ja + s * jb
            J[k, i] = c * jb - s * ja
    for i in range(q + 1):
        R[i, q] = d[i]


@kernel
def drop_constraint(
    J: np.ndarray,
    R: np.ndarray,
    u: np.ndarray,
    act: np.ndarray,
    nv: int,
    q: int,
    drop: int,
) -> None:
    """Remove active constraint ``drop`` of ``q``: shift ``R``'s columns, ``u`` and ``act``.

    Deleting column ``drop`` leaves ``R`` upper Hessenberg from there on; a Givens
    rotation per column restores the triangle (rows ``j, j+1``) and is applied to the
    columns ``j, j+1`` of ``J``. ``u[q]`` (the multiplier of the constraint being
    added, if any) moves to ``u[q-1]``.
    """
    for j in range(drop, q - 1):
        for i in range(j + 2):
            R[i, j] = R[i, j + 1]
        act[j] = act[j + 1]
    for j in range(drop, q):
        u[j] = u[j + 1]
    for j in range(drop, q - 1):
        c, s, rho = _givens(R[j, j], R[j + 1, j])
        R[j, j] = rho
        R[j + 1, j] = 0.0
        for col in range(j + 1, q - 1):
            rj = R[j, col]
            rk = R[j + 1, col]
            R[j, col] = c * rj + s * rk
            R[j + 1, col] = c * rk - s * rj
        for k in range(nv):
            ja = J[k, j]
            jb = J[k, j + 1]
            J[k, j] = c * ja + s * jb
            J[k, j + 1] = c * jb - s * ja


@kernel
def most_violated(
    A: np.ndarray,
    b: np.ndarray,
    m: int,
    meq: int,
    nv: int,
    x: np.ndarray,
    xref: float,
    Wr: np.ndarray,
) -> int:
    """The inactive constraint violated most per unit row norm, or -1 (``x`` is optimal).

    Writes the values ``Wr[0, i] = sgn[i] (A[i] . x - b[i])``; an equality takes the
    sign ``sgn[i] = Wr[3, i]`` that makes its value ``-|A[i] . x - b[i]|`` (it enters
    from either side). ``Wr[1]``, ``Wr[2]`` hold the rows' 2- and 1-norms, ``Wr[4]``
    the active flags; ``xref`` is the problem's distance scale.
    """
    s, nrm, nrm1, sgn, isact = Wr[0], Wr[1], Wr[2], Wr[3], Wr[4]
    big = xref
    for j in range(nv):
        big = max(big, abs(x[j]))
    p = -1
    worst = 0.0
    for i in range(m):
        if isact[i] != 0.0:
            continue
        v = 0.0
        for j in range(nv):
            v += A[i, j] * x[j]
        v -= b[i]
        if i < meq:
            sgn[i] = -1.0 if v > 0.0 else 1.0
            v = -abs(v)
        s[i] = v
        if not v < -_VIOL_TOL * (abs(b[i]) + nrm1[i] * big):
            continue
        if nrm[i] == 0.0:
            return i  # a zero row that is violated: infeasible (caught by the caller)
        ratio = v / nrm[i]
        if ratio < worst:
            worst = ratio
            p = i
    return p


@kernel
def step_directions(
    A: np.ndarray,
    p: int,
    sg: float,
    nv: int,
    q: int,
    J: np.ndarray,
    R: np.ndarray,
    d: np.ndarray,
    z: np.ndarray,
    rv: np.ndarray,
) -> tuple[float, float, float]:
    """``d = J^T n``, primal direction ``z = J[:, q:] d[q:]``, dual ``rv = R^-1 d[:q]``.

    ``n = sg A[p]`` is the normal of the constraint being added.

    Returns:
        ``(||d||^2, ||d[q:]||^2, z . n)``.
    """
    dd = 0.0
    dd2 = 0.0
    for j in range(nv):
        acc = 0.0
        for i in range(nv):
            acc += J[i, j] * A[p, i]
        acc *= sg
        d[j] = acc
        dd += acc * acc
        if j >= q:
            dd2 += acc * acc
    zn = 0.0
    for i in range(nv):
        acc = 0.0
        for j in range(q, nv):
            acc += J[i, j] * d[j]
        z[i] = acc
        zn += acc * sg * A[p, i]
    for i in range(q - 1, -1, -1):
        acc = d[i]
        for j in range(i + 1, q):
            acc -= R[i, j] * rv[j]
        rv[i] = acc / R[i, i]
    return dd, dd2, zn


@kernel
def take_step(
    x: np.ndarray,
    z: np.ndarray,
    nv: int,
    u: np.ndarray,
    rv: np.ndarray,
    act: np.ndarray,
    q: int,
    meq: int,
    t2: float,
) -> tuple[float, int]:
    """Step ``t = min(t1, t2)``: ``x += t z``, active multipliers ``-= t rv``, new ``+= t``.

    ``t1`` is the largest step before an active inequality's multiplier ``u - t rv``
    reaches 0 (``inf`` when none limits it); pass ``nv = 0`` for a step in the
    multipliers only.

    Returns:
        ``(t, j)``: the step taken and the position in the active set of the
        constraint to drop (-1 for a full step ``t = t2``).
    """
    t1 = _INF
    drop = -1
    for j in range(q):
        if act[j] >= meq and rv[j] > 0.0:
            ratio = u[j] / rv[j]
            if ratio < t1:
                t1 = ratio
                drop = j
    if t2 <= t1:
        t = t2
        drop = -1
    else:
        t = t1
    if t == _INF:
        return t, drop
    for i in range(nv):
        x[i] += t * z[i]
    for j in range(q):
        u[j] -= t * rv[j]
    u[q] += t
    return t, drop


@kernel
def gi_solve(
    G: np.ndarray,
    a: np.ndarray,
    A: np.ndarray,
    b: np.ndarray,
    nv: int,
    m: int,
    meq: int,
    x: np.ndarray,
    Wm: np.ndarray,
    Wv: np.ndarray,
    Wr: np.ndarray,
    act: np.ndarray,
) -> int:
    """``argmin 1/2 x^T G x - a^T x`` s.t. ``A x >= b``, the first ``meq`` rows equal.

    Args:
        G: Positive definite matrix, ``G[:nv, :nv]`` used (read only).
        a: Linear term, ``(>= nv,)``.
        A: Constraint rows, ``A[:m, :nv]`` used.
        b: Their right-hand sides, ``(>= m,)``.
        nv: Number of variables.
        m: Number of constraints.
        meq: Number of leading equality constraints.
        x: Receives the solution, ``(>= nv,)``.
        Wm: Workspace ``(2, >= nv, >= nv)`` (:func:`qp_workspace`).
        Wv: Workspace ``(4, >= nv + 1)``.
        Wr: Workspace ``(5, >= m)``.
        act: Workspace ``(>= nv + 1,)`` int64; holds the active set on return.

    Returns:
        ``QP_SOLVED``, ``QP_INFEASIBLE``, ``QP_NOT_CONVEX`` or ``QP_TROUBLE``.
    """
    J = Wm[0]
    R = Wm[1]
    d, z, rv, u = Wv[0], Wv[1], Wv[2], Wv[3]
    s, nrm, nrm1, sgn, isact = Wr[0], Wr[1], Wr[2], Wr[3], Wr[4]
    if not cholesky_inverse(G, nv, J, R):
        return QP_NOT_CONVEX
    # Unconstrained minimum x = G^-1 a = J J^T a.
    for j in range(nv):
        acc = 0.0
        for i in range(j + 1):
            acc += J[i, j] * a[i]
        d[j] = acc
    for i in range(nv):
        acc = 0.0
        for j in range(i, nv):
            acc += J[i, j] * d[j]
        x[i] = acc
    xref = 0.0  # distance scale of the constraint planes: max |b_i| / ||A_i||_1
    for i in range(m):
        acc = 0.0
        acc1 = 0.0
        for j in range(nv):
            acc += A[i, j] * A[i, j]
            acc1 += abs(A[i, j])
        nrm[i] = math.sqrt(acc)
        nrm1[i] = acc1
        if acc1 > 0.0:
            xref = max(xref, abs(b[i]) / acc1)
        sgn[i] = 1.0
        isact[i] = 0.0
    q = 0
    cap = 10 * (m + nv) + 20
    steps = 0
    while True:
        p = most_violated(A, b, m, meq, nv, x, xref, Wr)
        if p < 0:
            break
        sp = s[p]
        u[q] = 0.0
        while True:  # add p, dropping active constraints on the way
            steps += 1
            if steps > cap or not math.isfinite(sp):
                return QP_TROUBLE
            dd, dd2, zn = step_directions(A, p, sgn[p], nv, q, J, R, d, z, rv)
            if dd2 <= _DEP_TOL * dd or not zn > 0.0:
                # n is dependent on the active normals: only the multipliers can move.
                t, drop = take_step(x, z, 0, u, rv, act, q, meq, _INF)
                if drop < 0:
                    return QP_INFEASIBLE
            else:
                t, drop = take_step(x, z, nv, u, rv, act, q, meq, -sp / zn)
                if drop < 0:  # full step: p becomes active
                    add_constraint(J, R, d, nv, q)
                    act[q] = p
                    isact[p] = 1.0
                    q += 1
                    break
            isact[act[drop]] = 0.0  # drop a blocking constraint, then try p again
            drop_constraint(J, R, u, act, nv, q, drop)
            q -= 1
            if t > 0.0:
                acc = 0.0
                for j in range(nv):
                    acc += A[p, j] * x[j]
                sp = sgn[p] * (acc - b[p])
    return QP_SOLVED
