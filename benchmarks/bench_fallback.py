"""Benchmark: the exact QP fallback of the humanoid problems, and what a warm start could save.

``bench_velocity.py``'s problem (D) (the humanoid with self-collision; ``--problem G``:
the generated 30-joint humanoid with about 900 pairs) runs ``--steps`` velocity steps.
Each step records whether a level fell back to the exact QP and how long the SNS solve
took.

The problem of every fallback step (``solver.build_problem``, the same rows the step
solved) is then solved again by a standalone :class:`stackik.sns.SNSSolver` on the
``quadprog`` reference path (``SNSSolver._reference_qp``, the debugging hook the tests
use; quadprog runs the same Goldfarb-Idnani dual active-set method as the kernel). Each QP
reports its size, its active-set iterations and its active constraints at the solution.

The iterations answer the issue's question "would starting each step's active set from
the previous tick's cut the fallback?": a carried-over active set can save at most those
iterations, each an O(n^2) update, while the fallback's cost is dominated by building the
level's reduced problem (factoring the task block, projecting every constraint row).

Run: ``python benchmarks/bench_fallback.py [--steps 2000] [--problem D|G]``.
"""

from __future__ import annotations

import argparse
import platform
import time
import warnings

import bench_velocity as bv
import numpy as np
import quadprog

import stackik
from stackik.sns import SNSSolver
from stackik.sns import qp as sns_qp


def _cases(problem: str):
    """``bench_velocity.py``'s solver, start configuration and target mover of ``problem``."""
    if problem == "D":
        solver, q0, move, _ = bv.humanoid_solver([])
        return solver, q0, move
    if problem == "G":
        urdf, srdf = bv.humanoid30_files()
        robot = stackik.RobotModel(urdf, srdf_path=srdf, load_visuals=False)
        q0 = bv.humanoid30.start_configuration(robot)
        robot.update_kinematics(q0)
        solver = stackik.KinematicsSolver(robot, dt=bv.DT)
        palms = bv._hand_tasks(solver, "palm")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", stackik.CollisionMarginWarning)
            solver.configure_collision_constraint(bv.MIN_DISTANCE)
        return solver, q0, bv._follow(robot, palms, "palm", bv.palm_targets)
    raise SystemExit(f"unknown problem {problem!r} (D or G)")


def timed_run(steps: int, problem: str) -> tuple[np.ndarray, np.ndarray, list, SNSSolver]:
    """Step the solver: fallbacks, (solve time [us], iterations) and fallback problems.

    Also returns a reference SNS solver with the engine's weights, damping and tolerance.
    """
    solver, q0, move = _cases(problem)
    engine = solver.engine
    ref = SNSSolver(
        solver.robot.nv,
        joint_weights=engine.joint_weights,
        damping=engine.damping,
        tolerance=engine.tolerance,
    )
    solver.enable_timing_breakdown(True)
    q = q0.copy()
    fell, solve_us, problems, iters = [], [], [], []
    for i in range(steps):
        move(i)
        res = solver.solve_velocity(q)
        if res.fallback_levels:
            problems.append(solver.build_problem(q, advance=False))
        fell.append(bool(res.fallback_levels))
        solve_us.append(res.timings["solve_ms"] * 1e3)
        iters.append(res.iterations)
        q = solver.robot.integrate(q, res.solution, solver.dt)
    return np.array(fell), np.column_stack([solve_us, iters]), problems, ref


def reference_qps(problems: list, ref: SNSSolver) -> np.ndarray:
    """(variables, rows, iterations, active, quadprog time [us]) of every fallback QP."""
    stats: list[tuple[int, int, int, int, float]] = []

    def counting(G, a, A, b, meq):  # the reference's quadprog call, with its counters
        t = time.perf_counter()
        try:
            if A.shape[0] == 0:
                out = quadprog.solve_qp(G, a)
            else:
                out = quadprog.solve_qp(G, a, np.ascontiguousarray(A.T), b, meq)
        except ValueError:
            return None
        us = (time.perf_counter() - t) * 1e6
        stats.append((G.shape[0], A.shape[0], int(out[3][0]), int(np.sum(out[5] > 0)), us))
        return out[0]

    plain = sns_qp.quadprog_solve
    sns_qp.quadprog_solve = counting
    try:
        ref._reference_qp()
        for p in problems:
            ref.solve(
                [x for _, x in p.levels], [J for J, _ in p.levels], p.C, p.lower, p.upper,
                box_lower=p.box_lower, box_upper=p.box_upper, modes=p.modes,
            )  # fmt: skip
    finally:
        sns_qp.quadprog_solve = plain
    return np.array(stats, dtype=float).reshape(-1, 5)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--problem", default="D")
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, python {platform.python_version()}")
    fell, solve_us, problems, ref = timed_run(args.steps, args.problem)
    warm = slice(min(300, args.steps // 4), None)  # the first steps load kernels
    f, s, it_sns = fell[warm], solve_us[warm, 0], solve_us[warm, 1]
    print(f"\nproblem ({args.problem}): {f.size} steps after the first {warm.start}")
    print(f"  exact QP fallback in {f.mean():.0%} of the steps")
    if f.any() and (~f).any():
        with_qp, without = np.median(s[f]), np.median(s[~f])
        print(
            f"  SNS solve, median [us]: {with_qp:.1f} with a fallback, {without:.1f} without "
            f"(a fallback step takes {with_qp - without:.1f} longer: the greedy iterations "
            "that gave up, the reduced problem, the QP)"
        )
        print(
            f"  saturation iterations per step, median: {np.median(it_sns[f]):.0f} with a "
            f"fallback, {np.median(it_sns[~f]):.0f} without"
        )
    st = reference_qps(problems, ref)
    if not st.size:
        print("  no fallback: nothing to warm start")
        return
    var, rows, it, act, us = st.T
    print(
        f"  {len(st)} QPs of {len(problems)} fallback steps (quadprog reference): "
        f"variables median {np.median(var):.0f}, rows median {np.median(rows):.0f}"
    )
    print(
        f"  active-set iterations per QP: median {np.median(it):.0f}, mean {it.mean():.2f}, "
        f"max {it.max():.0f}; active constraints at the solution: median {np.median(act):.0f}"
    )
    saved = np.minimum(it, act)  # adds a carried-over active set could skip, at most
    print(
        f"  a warm-started active set could skip at most {saved.mean():.2f} iterations per "
        f"QP (mean; each an O(n^2) = O({np.median(var):.0f}^2) update of the factors)"
    )
    print(
        f"  quadprog's own time per QP: median {np.median(us):.1f} us (its Cholesky factor "
        "of G and the iterations, through its Python wrapper)"
    )


if __name__ == "__main__":
    main()
