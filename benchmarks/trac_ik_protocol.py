"""The TRAC-IK benchmark protocol shared by the IK benchmarks (not a benchmark itself).

N joint configurations drawn uniformly inside the limits (fixed seed); their FK pose is
the target; each query starts from the mid-range configuration with a time budget;
success = position error < 1e-4 m and orientation error < 1e-3 rad, verified by
Pinocchio FK on a freshly loaded model, solution inside the URDF limits.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pinocchio as pin

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
#: Robot name -> (URDF, base link, tip frame).
CASES = {
    "panda": (ROBOTS / "panda" / "panda.urdf", "panda_link0", "panda_hand_tcp"),
    "ur5": (ROBOTS / "ur5" / "ur5.urdf", "base_link", "tool0"),
}
POS_OK = 1e-4  # m
ORI_OK = 1e-3  # rad


def cpu_name() -> str:
    """The CPU model name, for the printed header."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


class Verifier:
    """Success test of the protocol: Pinocchio FK on a fresh model, URDF limits."""

    def __init__(self, urdf: Path, tip: str) -> None:
        self.model = pin.buildModelFromUrdf(str(urdf))
        self.data = self.model.createData()
        self.fid = self.model.getFrameId(tip)
        self.lower = self.model.lowerPositionLimit.copy()
        self.upper = self.model.upperPositionLimit.copy()

    def pose(self, q: np.ndarray) -> pin.SE3:
        """Tip pose by Pinocchio (a copy)."""
        pin.framesForwardKinematics(self.model, self.data, q)
        return pin.SE3(self.data.oMf[self.fid])

    def ok(self, q: np.ndarray | None, target: pin.SE3) -> bool:
        """Inside the limits and within the protocol's tolerances of ``target``."""
        if q is None or len(q) != self.model.nq or not np.all(np.isfinite(q)):
            return False
        if np.any(q < self.lower) or np.any(q > self.upper):
            return False
        T = self.pose(q)
        pos = np.linalg.norm(T.translation - target.translation)
        ori = np.linalg.norm(pin.log3(target.rotation @ T.rotation.T))
        return bool(pos < POS_OK and ori < ORI_OK)


def make_trac_ik(
    urdf: Path, base: str, tip: str, check: Verifier, budget: float
) -> Callable[[np.ndarray, pin.SE3, np.ndarray], tuple[np.ndarray | None, float]] | None:
    """A pytracik solve function with the URDF's limits, or None when pytracik is missing.

    The function takes ``(seed, target SE3, quaternion xyzw)`` and returns ``(q or None,
    seconds of the C++ ik call)``.
    """
    try:
        import pytracik
    except ImportError:
        return None
    solver = pytracik.TRAC_IK(base, tip, urdf.read_text(), budget, 1e-5, pytracik.SolveType.Speed)
    if pytracik.get_num_joints(solver) != check.model.nq:
        raise RuntimeError("TRAC-IK and the model disagree on the chain")
    # pytracik reads <safety_controller> limits when present; pass the URDF's own limits.
    pytracik.set_joint_limits(solver, check.lower.tolist(), check.upper.tolist())

    def solve(seed: np.ndarray, T: pin.SE3, quat_xyzw: np.ndarray):
        p = T.translation
        qx, qy, qz, qw = quat_xyzw
        t0 = time.perf_counter()
        r = pytracik.ik(solver, seed, p[0], p[1], p[2], qx, qy, qz, qw)
        dt = time.perf_counter() - t0
        return (np.asarray(r[1:]) if r[0] >= 0 else None), dt

    return solve


def stats(name: str, ok: np.ndarray, times_ms: np.ndarray) -> dict[str, float]:
    """Print and return success %, median, p95, max and mean times [ms]."""
    out = {
        "success": 100.0 * ok.mean(),
        "median": float(np.median(times_ms)),
        "p95": float(np.percentile(times_ms, 95)),
        "max": float(times_ms.max()),
        "mean": float(times_ms.mean()),
    }
    print(
        f"  {name:9s} success {out['success']:6.2f} %  median {out['median']:.3f} ms  "
        f"p95 {out['p95']:.3f} ms  max {out['max']:.3f} ms  mean {out['mean']:.3f} ms"
    )
    return out


def ratio(name: str, ours: dict[str, float], theirs: dict[str, float]) -> None:
    """Print a peer's figures over stackik's."""
    print(
        f"  ratio     {name} / stackik: median {theirs['median'] / ours['median']:.1f}x, "
        f"p95 {theirs['p95'] / ours['p95']:.1f}x, mean {theirs['mean'] / ours['mean']:.1f}x; "
        f"success {ours['success'] - theirs['success']:+.2f} points"
    )
