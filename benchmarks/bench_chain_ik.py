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
from pathlib import Path

import numpy as np
import pinocchio as pin

from stackik.chain import SerialChain

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
CASES = {
    "panda": (ROBOTS / "panda" / "panda.urdf", "panda_link0", "panda_hand_tcp"),
    "ur5": (ROBOTS / "ur5" / "ur5.urdf", "base_link", "tool0"),
}
POS_OK = 1e-4  # m
ORI_OK = 1e-3  # rad


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


class Verifier:
    """Success test of the protocol with Pinocchio FK and the model's limits."""

    def __init__(self, chain: SerialChain) -> None:
        self.chain = chain
        self.data = chain.model.createData()
        self.fid = chain.model.getFrameId(chain.tip_frame)

    def pose(self, q_chain: np.ndarray) -> pin.SE3:
        """Tip pose by Pinocchio."""
        pin.framesForwardKinematics(self.chain.model, self.data, self.chain.to_full(q_chain))
        return pin.SE3(self.data.oMf[self.fid])

    def ok(self, q_chain: np.ndarray | None, target: pin.SE3) -> bool:
        """Inside the limits and within the protocol's tolerances of ``target``."""
        if q_chain is None or not np.all(np.isfinite(q_chain)):
            return False
        ch = self.chain
        if np.any(q_chain < ch.lower) or np.any(q_chain > ch.upper):
            return False
        T = self.pose(q_chain)
        pos = np.linalg.norm(T.translation - target.translation)
        ori = np.linalg.norm(pin.log3(target.rotation @ T.rotation.T))
        return bool(pos < POS_OK and ori < ORI_OK)


def make_trac_ik(urdf: Path, base: str, tip: str, chain: SerialChain, budget: float):
    """A pytracik solver with the URDF's limits, or None when pytracik is missing."""
    try:
        import pytracik
    except ImportError:
        return None
    solver = pytracik.TRAC_IK(base, tip, urdf.read_text(), budget, 1e-5, pytracik.SolveType.Speed)
    if pytracik.get_num_joints(solver) != chain.n:
        raise RuntimeError("TRAC-IK and stackik disagree on the chain")
    # pytracik reads <safety_controller> limits when present; pass the URDF's own limits.
    pytracik.set_joint_limits(solver, chain.lower.tolist(), chain.upper.tolist())

    def solve(
        seed: np.ndarray, T: pin.SE3, quat_xyzw: np.ndarray
    ) -> tuple[np.ndarray | None, float]:
        p = T.translation
        qx, qy, qz, qw = quat_xyzw
        t0 = time.perf_counter()
        r = pytracik.ik(solver, seed, p[0], p[1], p[2], qx, qy, qz, qw)
        dt = time.perf_counter() - t0
        return (np.asarray(r[1:]) if r[0] >= 0 else None), dt

    return solve


def stats(name: str, ok: np.ndarray, times_ms: np.ndarray) -> dict[str, float]:
    out = {
        "success": 100.0 * ok.mean(),
        "median": float(np.median(times_ms)),
        "p95": float(np.percentile(times_ms, 95)),
        "max": float(times_ms.max()),
        "mean": float(times_ms.mean()),
    }
    print(
        f"  {name:8s} success {out['success']:6.2f} %  median {out['median']:.3f} ms  "
        f"p95 {out['p95']:.3f} ms  max {out['max']:.3f} ms  mean {out['mean']:.3f} ms"
    )
    return out


def run(robot: str, n: int, seed: int, budget: float) -> None:
    urdf, base, tip = CASES[robot]
    model = pin.buildModelFromUrdf(str(urdf))
    chain = SerialChain.from_model(model, tip)
    check = Verifier(chain)
    rng = np.random.default_rng(seed)
    Q = rng.uniform(chain.lower, chain.upper, (n, chain.n))
    q_seed = chain.mid_configuration()
    targets = [check.pose(q) for q in Q]
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
        ok[k] = res.success and check.ok(res.q, T)
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
        [s and check.ok(r[2:], T) for s, r, T in zip(success, rows, targets, strict=True)]
    )
    print(
        f"  batch    success {100 * batch_ok.mean():6.2f} %  {t_batch / n * 1e3:.3f} ms per "
        f"target on average ({n / t_batch:.0f} solves/s)"
    )

    trac = make_trac_ik(urdf, base, tip, chain, budget)
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
    theirs = stats("TRAC-IK", ok_t, t_t)
    print(
        f"  ratio    TRAC-IK / stackik: median {theirs['median'] / ours['median']:.1f}x, "
        f"p95 {theirs['p95'] / ours['p95']:.1f}x, mean {theirs['mean'] / ours['mean']:.1f}x; "
        f"success {ours['success'] - theirs['success']:+.2f} points"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="targets per robot")
    parser.add_argument("--seed", type=int, default=0, help="seed of the target draw")
    parser.add_argument("--budget", type=float, default=0.005, help="time budget per query [s]")
    parser.add_argument("--robots", nargs="+", default=list(CASES), choices=list(CASES))
    args = parser.parse_args()
    import numba

    print(
        f"{cpu_name()}, Python {platform.python_version()}, numba {numba.__version__}, "
        f"Pinocchio {pin.__version__}, numpy {np.__version__}"
    )
    for robot in args.robots:
        run(robot, args.n, args.seed, args.budget)


if __name__ == "__main__":
    main()
