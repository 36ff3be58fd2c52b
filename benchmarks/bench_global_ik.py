"""Global IK through the robot-level API on the TRAC-IK protocol: stackik vs TRAC-IK vs EmbodiK.

Protocol (Beeson & Ames, "TRAC-IK: An open-source library for improved solving of
generic inverse kinematics", Humanoids 2015): draw N joint configurations uniformly
inside the joint limits (fixed seed), take the tip pose of each as the target, and solve
from the mid-range configuration with a 5 ms budget per query. A query succeeds when the
returned configuration is inside the joint limits and Pinocchio's forward kinematics puts
the tip within 1e-4 m and 1e-3 rad of the target.

stackik is driven through ``KinematicsSolver.find_configs`` (``max_solutions=1``,
``time_budget=budget``, ``reference_q`` = mid-range), i.e. the full robot-level path:
4x4 target validation, the chain search, and the candidate checks on the RobotModel
(Pinocchio FK, limits with the solver's margin, collision distances when ``--collision``
configures a collision constraint, a validation callback when ``--validate`` passes one).
The whole call is timed.

TRAC-IK (``pytracik``, "Speed" mode, epsilon 1e-5, the URDF's limits passed explicitly
because pytracik mis-reads ``<safety_controller>``) times only its C++ ``ik`` call.
EmbodiK's ``KinematicsSolver.solve_position`` (a local solver: one start, no restarts)
is timed around the call, with tolerances 5e-5 m / 5e-4 rad so that it stops once the
protocol's thresholds are met, once with its default options and once (``EmbodiK*``) with
``dt = 0.1`` and 1000 iterations, the best of a small sweep. All get the same targets and
seeds in the same run; each is skipped when not installed. This is a benchmark script,
not a timed test.

Run: ``PYTHONPATH=python python benchmarks/bench_global_ik.py [--n 1000] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np
import pinocchio as pin
from trac_ik_protocol import CASES, ORI_OK, POS_OK, Verifier, cpu_name, make_trac_ik, ratio, stats

import stackik
from stackik import RobotModel
from stackik.solver import KinematicsSolver


def make_embodik(urdf: Path, tip: str, dt: float | None = None, max_iterations: int | None = None):
    """An EmbodiK solve_position function, or None when embodik is missing.

    ``dt`` and ``max_iterations`` override EmbodiK's defaults (0.01 and 100).
    """
    try:
        import embodik
    except ImportError:
        return None
    solver = embodik.KinematicsSolver(embodik.RobotModel(str(urdf)))
    opts = embodik.PositionIKOptions()
    opts.position_tolerance = 0.5 * POS_OK
    opts.orientation_tolerance = 0.5 * ORI_OK
    if dt is not None:
        opts.dt = dt
    if max_iterations is not None:
        opts.max_iterations = max_iterations

    def solve(seed: np.ndarray, H: np.ndarray):
        t0 = time.perf_counter()
        res = solver.solve_position(seed, H, tip, opts)
        dt = time.perf_counter() - t0
        q = np.asarray(res.q_solution)
        return (q if q.size else None), dt

    return solve


def run(robot: str, n: int, seed: int, budget: float, collision: bool, validate: bool) -> None:
    urdf, base, tip = CASES[robot]
    srdf = urdf.with_suffix(".srdf")
    model = RobotModel(urdf, srdf_path=srdf if srdf.exists() else None)
    solver = KinematicsSolver(model)
    if collision:
        solver.configure_collision_constraint(0.0)
    solver.prepare_global_ik(tip)  # chain extraction and numba's cache, off the clock
    check = Verifier(urdf, tip)
    rng = np.random.default_rng(seed)
    Q = rng.uniform(check.lower, check.upper, (n, check.model.nq))
    mid = 0.5 * (check.lower + check.upper)
    targets = [check.pose(q) for q in Q]
    H = [T.homogeneous for T in targets]
    callback = (lambda q: bool(np.all(np.isfinite(q)))) if validate else None
    extras = [s for s, on in (("collision constraint", collision), ("callback", validate)) if on]
    print(
        f"{robot}: {check.model.nq} joints, {n} targets (seed {seed}), budget {budget * 1e3:g} ms"
        + (f", with {' and '.join(extras)}" if extras else "")
    )

    for k in range(5):  # warm up the whole path before timing
        solver.find_configs(H[k], tip, 1, budget, mid, callback)
    ok = np.zeros(n, dtype=bool)
    t_ms = np.empty(n)
    clock = time.perf_counter
    for k in range(n):
        t0 = clock()
        sols = solver.find_configs(H[k], tip, 1, budget, mid, callback)
        t_ms[k] = (clock() - t0) * 1e3
        ok[k] = bool(sols) and check.ok(sols[0], targets[k])
    ours = stats("stackik", ok, t_ms)
    if collision:
        # Targets drawn in self-collision may have no collision-free solution at all.
        names = model.get_collision_pair_names()
        watched = [names.index(p) for p in solver.get_active_collision_pairs()]
        free = np.empty(n, dtype=bool)
        for k, q in enumerate(Q):
            model.update_kinematics(q)
            free[k] = np.asarray(model.compute_collision_distances())[watched].min() >= 0.0
        print(
            f"            {free.sum()} targets come from collision-free configurations; "
            f"stackik solves {100 * ok[free].mean():.2f} % of them"
        )

    # The batched form: one compiled loop, every row checked on the robot.
    from stackik import BatchIKOptions

    t0 = clock()
    batch = solver.solve_position_batch(np.stack(H), tip, mid, BatchIKOptions(time_budget=budget))
    t_batch = clock() - t0
    batch_ok = np.array(
        [s and check.ok(q, T) for s, q, T in zip(batch.success, batch.q, targets, strict=True)]
    )
    print(
        f"  batch     success {100 * batch_ok.mean():6.2f} %  {t_batch / n * 1e3:.3f} ms per "
        f"target on average ({n / t_batch:.0f} solves/s)"
    )

    trac = make_trac_ik(urdf, base, tip, check, budget)
    if trac is None:
        print("  TRAC-IK   (pytracik not importable: skipped)")
    else:
        quats = [pin.Quaternion(T.rotation).coeffs().copy() for T in targets]  # x, y, z, w
        for k in range(5):
            trac(mid, targets[k], quats[k])
        ok_t = np.zeros(n, dtype=bool)
        t_t = np.empty(n)
        for k, T in enumerate(targets):
            q, dt = trac(mid, T, quats[k])
            t_t[k] = dt * 1e3
            ok_t[k] = check.ok(q, T)
        ratio("TRAC-IK", ours, stats("TRAC-IK", ok_t, t_t))

    # EmbodiK with its defaults, then with the options that did best on these robots in a
    # small sweep (dt 0.1, 1000 iterations); it is a local solver started at mid-range.
    for label, dt, iters in (("EmbodiK", None, None), ("EmbodiK*", 0.1, 1000)):
        emb = make_embodik(urdf, tip, dt, iters)
        if emb is None:
            print("  EmbodiK   (embodik not importable: skipped)")
            break
        for k in range(5):
            emb(mid, H[k])
        ok_e = np.zeros(n, dtype=bool)
        t_e = np.empty(n)
        for k, T in enumerate(targets):
            q, elapsed = emb(mid, H[k])
            t_e[k] = elapsed * 1e3
            ok_e[k] = check.ok(q, T)
        ratio(label, ours, stats(label, ok_e, t_e))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="targets per robot (>= 500)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the target draw")
    parser.add_argument("--budget", type=float, default=0.005, help="time budget per query [s]")
    parser.add_argument("--robots", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument(
        "--collision",
        action="store_true",
        help="configure a collision constraint (min_distance 0): candidates must be "
        "collision-free (targets whose every solution collides then fail)",
    )
    parser.add_argument("--validate", action="store_true", help="pass a validation callback")
    args = parser.parse_args()
    stackik.warmup()  # compiled kernels from the first timed call, not plain Python
    import numba

    print(
        f"{cpu_name()}, Python {platform.python_version()}, numba {numba.__version__}, "
        f"Pinocchio {pin.__version__}, numpy {np.__version__}"
    )
    for robot in args.robots:
        run(robot, args.n, args.seed, args.budget, args.collision, args.validate)


if __name__ == "__main__":
    main()
