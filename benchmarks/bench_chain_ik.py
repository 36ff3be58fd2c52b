"""Global pose IK on the TRAC-IK protocol: stackik's SerialChain against TRAC-IK.

Protocol (Beeson & Ames, "TRAC-IK: An open-source library for improved solving of
generic inverse kinematics", Humanoids 2015): draw N joint configurations uniformly
inside the joint limits (fixed seed), take the tip pose of each as the target, and solve
from the mid-range configuration with a 5 ms budget per query. A query succeeds when the
returned configuration is inside the joint limits and Pinocchio's forward kinematics puts
the tip within 1e-4 m and 1e-3 rad of the target.

Both solvers get the same targets and seeds in the same run. TRAC-IK (``pytracik``,
"Speed" mode, epsilon 1e-5) is given the URDF's limits explicitly, and only its C++
``ik`` call is timed (the quaternion it needs is computed beforehand). stackik is timed
around the whole ``SerialChain.solve`` call, input checks and result object included.

Run: ``PYTHONPATH=python python benchmarks/bench_chain_ik.py [--n 1000] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
import pinocchio as pin
from trac_ik_protocol import CASES, Verifier, cpu_name, make_trac_ik, ratio, stats

import stackik
from stackik.ik.chain import SerialChain


def run(robot: str, n: int, seed: int, budget: float) -> None:
    urdf, base, tip = CASES[robot]
    model = pin.buildModelFromUrdf(str(urdf))
    chain = SerialChain.from_model(model, tip)
    check = Verifier(urdf, tip)  # the chain is the whole arm: chain q = model q
    rng = np.random.default_rng(seed)
    Q = rng.uniform(chain.lower, chain.upper, (n, chain.n))
    q_seed = chain.mid_configuration()
    targets = [check.pose(chain.to_full(q)) for q in Q]
    quats = [pin.Quaternion(T.rotation).coeffs().copy() for T in targets]  # x, y, z, w
    print(f"{robot}: {chain.n} joints, {n} targets (seed {seed}), budget {budget * 1e3:g} ms")

    # Warm up: compile or load the cached kernels, and measure the iteration cost that
    # solve_batch turns the budget into an iteration cap with, before timing.
    for T in targets[:5]:
        chain.solve(T.rotation, T.translation, q_seed, time_budget=budget)
    chain.solve_batch(np.stack([T.homogeneous for T in targets[:5]]), q_seed)

    ok = np.zeros(n, dtype=bool)
    t_ms = np.empty(n)
    iters = np.empty(n)
    restarts = np.empty(n)
    clock = time.perf_counter
    for k, T in enumerate(targets):
        R, p = T.rotation, T.translation
        t0 = clock()
        res = chain.solve(R, p, q_seed, time_budget=budget)
        t_ms[k] = (clock() - t0) * 1e3
        ok[k] = res.success and check.ok(chain.to_full(res.q), T)
        iters[k] = res.iterations
        restarts[k] = res.restarts
    ours = stats("stackik", ok, t_ms)
    print(
        f"           iterations median {np.median(iters):.0f} p95 {np.percentile(iters, 95):.0f}"
        f" max {iters.max():.0f}; restarts mean {restarts.mean():.2f} max {restarts.max():.0f};"
        f" {chain.iteration_cost() * 1e9:.0f} ns per iteration"
    )

    # Batched form: one compiled loop over all targets (iteration cap from the budget).
    H = np.stack([T.homogeneous for T in targets])
    t0 = clock()
    rows, success = chain.solve_batch(H, q_seed, time_budget=budget, return_success=True)
    t_batch = clock() - t0
    batch_ok = np.array(
        [
            s and check.ok(chain.to_full(r[2:]), T)
            for s, r, T in zip(success, rows, targets, strict=True)
        ]
    )
    print(
        f"  batch    success {100 * batch_ok.mean():6.2f} %  {t_batch / n * 1e3:.3f} ms per "
        f"target on average ({n / t_batch:.0f} solves/s)"
    )

    budget_discipline(chain, q_seed, budget)

    trac = make_trac_ik(urdf, base, tip, check, budget)
    if trac is None:
        print("  TRAC-IK  (pytracik not importable: skipped)")
        return
    for k in range(5):
        trac(q_seed, targets[k], quats[k])
    ok_t = np.zeros(n, dtype=bool)
    t_t = np.empty(n)
    for k, T in enumerate(targets):
        q, dt = trac(q_seed, T, quats[k])
        t_t[k] = dt * 1e3
        ok_t[k] = check.ok(q, T)
    ratio("TRAC-IK", ours, stats("TRAC-IK", ok_t, t_t))


def budget_discipline(chain: SerialChain, q_seed: np.ndarray, budget: float) -> None:
    """Print how far past its budget a query runs on an unreachable target.

    Such a query searches until its deadline; the overrun is the last iteration's tail.
    """
    far = np.array([10.0, 0.0, 0.0])  # beyond every arm's reach
    spent = np.array(
        [chain.solve(np.eye(3), far, q_seed, time_budget=budget).time_ms for _ in range(200)]
    )
    over = spent - budget * 1e3
    print(
        f"  budget   unreachable target, {budget * 1e3:g} ms budget: spent median "
        f"{np.median(spent):.3f} ms, p99 {np.percentile(spent, 99):.3f} ms; overrun p99 "
        f"{np.percentile(over, 99) * 1e3:.0f} us, max {over.max() * 1e3:.0f} us"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="targets per robot")
    parser.add_argument("--seed", type=int, default=0, help="seed of the target draw")
    parser.add_argument("--budget", type=float, default=0.005, help="time budget per query [s]")
    parser.add_argument("--robots", nargs="+", default=list(CASES), choices=list(CASES))
    args = parser.parse_args()
    stackik.warmup()  # compiled kernels from the first timed call, not plain Python
    import numba

    print(
        f"{cpu_name()}, Python {platform.python_version()}, numba {numba.__version__}, "
        f"Pinocchio {pin.__version__}, numpy {np.__version__}"
    )
    for robot in args.robots:
        run(robot, args.n, args.seed, args.budget)


if __name__ == "__main__":
    main()
