"""Every IK branch: find_configs(all_branches=True) against independent closed forms.

For each arm, N poses are the forward kinematics of configurations drawn uniformly
inside the joint limits (fixed seed). The reference branches of a pose come from a
solver written independently of stackik's (tests/ur5_dh.py: Universal Robots' standard
DH closed form; tests/arm_references.py: the OPW paper's formulas on robots/opw_arm, and
damped Newton on Pinocchio from 150 random starts for robots/spherical_arm), keeping
those with a 2 pi copy inside the limits. stackik runs
``find_configs(T, frame, time_budget=B, reference_q=0, all_branches=True)`` through the
closed form (the default when one applies) and through the numeric search alone
(``analytic=False``), the whole call timed.

Reported per arm and path: the share of poses where every reference branch is found
(all poses, and the well-conditioned ones: smallest singular value of the 6x6 Jacobian
at least 0.02 at every reference branch), the mean share of branches found, median and
p95 time (wall clock; and the p95 of the process CPU time, which the machine's
load does not inflate), and invalid configurations (Pinocchio FK on a fresh model beyond 1e-4 m or
1e-3 rad, or outside the limits). A returned configuration matches a reference branch
when every joint agrees modulo 2 pi within 1e-2 rad (numeric solutions meet the 1e-5 m /
1e-4 rad pose tolerance, which allows ~5e-3 rad near singularities); each reference
branch is matched once. TRAC-IK (pytracik, Speed, 5 ms, epsilon 1e-5; one solution from
the mid-range configuration, only its C++ call timed) runs on the same poses.

``--repeat R`` runs the timed part R times and reports the median of each figure
(the machine is shared: timings are noisy; the measured cost of one Levenberg-Marquardt
iteration is printed as a load indicator). A last pass runs the numeric search with a
count budget (``time_budget=None, max_attempts=A``, default 48 starts): its figures do
not depend on the machine or its load. This is a benchmark script, not a test.

Run: ``PYTHONPATH=python python benchmarks/bench_branches.py [--n 300] [--budget 0.002]``.
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin
from trac_ik_protocol import ORI_OK, POS_OK, Verifier, cpu_name, make_trac_ik

import stackik
from stackik import RobotModel
from stackik.ik.chain import SerialChain
from stackik.solver import KinematicsSolver

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from arm_references import multistart_solutions, opw_arm_closed_form  # noqa: E402
from ur5_dh import ur5_closed_form  # noqa: E402

ROBOTS = ROOT / "robots"
MATCH = 1e-2  # rad
WELL_CONDITIONED = 0.02


def _ur5(T: np.ndarray, model: pin.Model) -> list[np.ndarray]:
    return [q for _, q in ur5_closed_form(T)]


def _opw(T: np.ndarray, model: pin.Model) -> list[np.ndarray]:
    return opw_arm_closed_form(T)


def _multistart(T: np.ndarray, model: pin.Model) -> list[np.ndarray]:
    return multistart_solutions(model, "tool0", T, starts=150, seed=0)


#: name -> (URDF folder, tip frame, limits override or None, reference solver)
ARMS: dict[str, tuple[str, str, float | None, Callable]] = {
    "ur5": ("ur5", "tool0", None, _ur5),
    "ur5_pi": ("ur5", "tool0", math.pi, _ur5),
    "opw_arm": ("opw_arm", "tool0", None, _opw),
    "spherical_arm": ("spherical_arm", "tool0", None, _multistart),
}


@dataclass
class Case:
    """The poses of one arm and their reference branches (inside the limits)."""

    name: str
    robot: RobotModel
    check: Verifier
    tip: str
    poses: list[pin.SE3]
    branches: list[list[np.ndarray]]
    well: np.ndarray


def _wrap(x: np.ndarray) -> np.ndarray:
    return (np.asarray(x) + math.pi) % (2 * math.pi) - math.pi


def _in_limits(q: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> bool:
    """Whether some 2 pi copy of every joint lies inside [lo, hi]."""
    for v, a, b in zip(_wrap(q), lo, hi, strict=True):
        if not any(a - 1e-9 <= v + 2 * math.pi * k <= b + 1e-9 for k in (-2, -1, 0, 1, 2)):
            return False
    return True


def _sigma_min(check: Verifier, q: np.ndarray) -> float:
    fid = check.fid
    J = pin.computeFrameJacobian(check.model, check.data, q, fid, pin.LOCAL)
    return float(np.linalg.svd(J, compute_uv=False)[-1])


def build(name: str, n: int, seed: int) -> Case:
    folder, tip, half, reference = ARMS[name]
    urdf = ROBOTS / folder / f"{folder}.urdf"
    robot = RobotModel(urdf, load_collisions=False, load_visuals=False)
    check = Verifier(urdf, tip)
    if half is not None:
        robot.set_joint_limits(np.full(robot.nq, -half), np.full(robot.nq, half))
        check.lower[:] = -half
        check.upper[:] = half
    rng = np.random.default_rng(seed)
    lo, hi = check.lower, check.upper
    poses, branches, well = [], [], []
    for _ in range(n):
        T = check.pose(rng.uniform(lo, hi))
        refs = [q for q in reference(T.homogeneous, check.model) if _in_limits(q, lo, hi)]
        poses.append(T)
        branches.append(refs)
        well.append(min(_sigma_min(check, q) for q in refs) >= WELL_CONDITIONED)
    return Case(name, robot, check, tip, poses, branches, np.array(well))


def _matched(found: list[np.ndarray], refs: list[np.ndarray]) -> int:
    free = list(range(len(refs)))
    hits = 0
    for q in found:
        for k in free:
            if np.abs(_wrap(q - refs[k])).max() < MATCH:
                free.remove(k)
                hits += 1
                break
    return hits


def run(
    case: Case, analytic: bool, budget: float | None, attempts: int | None = None
) -> dict[str, float]:
    """One pass over the poses; figures as a dict (``budget=None``: count budget only)."""
    solver = KinematicsSolver(case.robot)
    solver.prepare_global_ik(case.tip)
    ref_q = np.zeros(case.robot.nq)
    limit = {} if attempts is None else {"max_attempts": attempts}
    times, cpu, share, complete, invalid, methods = [], [], [], [], 0, set()
    starts = []
    for k, (T, refs) in enumerate(zip(case.poses, case.branches, strict=True)):
        c0, t0 = time.process_time(), time.perf_counter()
        res = solver.find_configs(
            T, case.tip, None, budget, ref_q, seed=k, all_branches=True, analytic=analytic, **limit
        )
        times.append((time.perf_counter() - t0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3)
        starts.append(res.attempts)
        methods.add(res.method)
        invalid += sum(not case.check.ok(q, T) for q in res)
        hits = _matched(list(res), refs)
        share.append(hits / len(refs) if refs else 1.0)
        complete.append(hits == len(refs))
    t, c = np.array(times), np.array(complete)
    return {
        "all": 100 * c.mean(),
        "all_well": 100 * c[case.well].mean(),
        "mean_share": 100 * float(np.mean(share)),
        "median": float(np.median(t)),
        "p95": float(np.percentile(t, 95)),
        "cpu_p95": float(np.percentile(cpu, 95)),
        "late": 100 * float(np.mean(t > budget * 1e3)) if budget else 0.0,
        "attempts": float(np.mean(starts)),
        "invalid": invalid,
        "method": ",".join(sorted(methods)),
    }


def run_trac_ik(case: Case, budget: float = 0.005) -> dict[str, float] | None:
    folder = ARMS[case.name][0]
    urdf = ROBOTS / folder / f"{folder}.urdf"
    base = "base_link"  # the root link of every arm here
    solve = make_trac_ik(urdf, base, case.tip, case.check, budget)
    if solve is None:
        return None
    seed = 0.5 * (case.check.lower + case.check.upper)
    times, ok = [], []
    for T in case.poses:
        quat = pin.Quaternion(T.rotation).coeffs()
        q, dt = solve(seed, T, quat)
        times.append(dt * 1e3)
        ok.append(case.check.ok(q, T))
    t = np.array(times)
    return {
        "success": 100 * float(np.mean(ok)),
        "median": float(np.median(t)),
        "p95": float(np.percentile(t, 95)),
    }


def _median_of(runs: list[dict]) -> dict:
    out = dict(runs[0])
    for key, value in runs[0].items():
        if isinstance(value, float):
            out[key] = float(np.median([r[key] for r in runs]))
    return out


def _print(r: dict, label: str, timing: bool = True) -> None:
    line = (
        f"  {label:18s} every branch {r['all']:6.2f} % (well-conditioned {r['all_well']:6.2f} %), "
        f"mean share {r['mean_share']:6.2f} %, invalid {r['invalid']}, "
        f"{r['attempts']:.1f} starts"
    )
    if timing:
        line += (
            f", median {r['median']:.3f} ms, p95 {r['p95']:.3f} ms (CPU p95 "
            f"{r['cpu_p95']:.3f} ms, {r['late']:.1f} % beyond the budget)"
        )
    print(line)


def main() -> None:
    """Run the benchmark and print one line per arm and path."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=300, help="poses per arm")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=float, default=0.002, help="time budget [s]")
    parser.add_argument("--repeat", type=int, default=1, help="timed passes (median)")
    parser.add_argument("--arms", nargs="*", default=list(ARMS))
    parser.add_argument(
        "--attempts", type=int, default=48, help="starts of the count-budget numeric pass"
    )
    args = parser.parse_args()
    stackik.warmup()  # compiled kernels from the first timed call, not plain Python
    print(
        f"# {cpu_name()}, Python {platform.python_version()}, numpy {np.__version__}, "
        f"Pinocchio {pin.__version__}; N = {args.n}, seed {args.seed}, budget "
        f"{args.budget * 1e3:g} ms, {args.repeat} pass(es); tolerances {POS_OK} m / {ORI_OK} rad"
    )
    for name in args.arms:
        case = build(name, args.n, args.seed)
        counts = np.bincount([len(b) for b in case.branches], minlength=9)
        print(
            f"{name}: {args.n} poses, {int(case.well.sum())} well-conditioned; reference "
            f"branches per pose (in limits) {dict(enumerate(counts.tolist()))}"
        )
        cost = SerialChain.from_robot(case.robot, case.tip).iteration_cost()
        print(f"  one Levenberg-Marquardt iteration: {cost * 1e6:.2f} us now (load indicator)")
        for analytic in (True, False):
            r = _median_of([run(case, analytic, args.budget) for _ in range(args.repeat)])
            _print(r, f"{r['method']:18s}")
        r = run(case, False, None, args.attempts)
        _print(r, f"numeric, {args.attempts} starts", timing=False)
        trac = run_trac_ik(case)
        if trac is not None:
            print(
                f"  {'TRAC-IK (1 sol.)':18s} success {trac['success']:6.2f} %, median "
                f"{trac['median']:.3f} ms, p95 {trac['p95']:.3f} ms"
            )


if __name__ == "__main__":
    main()
