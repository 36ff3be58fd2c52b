"""The control loop's compiled per-tick kernels against the NumPy expressions they replace.

Smoothing stages, the lead of the configuration ahead and the braking-time bound must give
the very same bits as the NumPy code (the loop's commands are reproducible across the
change), NaN and infinite bounds included.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import stackik
from stackik.control._loop_kernel import braking_bound, lead_positions, smooth_stages
from stackik.errors import ShapeError

ROOT = Path(__file__).resolve().parents[1]


def _bounds(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    lo = -rng.uniform(0.1, 2.0, n)
    hi = rng.uniform(0.1, 2.0, n)
    lo[::5], hi[1::5] = -np.inf, np.inf
    return lo, hi


@pytest.mark.parametrize("n", [1, 7, 37])
def test_smoothing_stages_match_numpy_bit_for_bit(n):
    rng = np.random.default_rng(n)
    for case in range(50):
        w = rng.normal(scale=3.0, size=n)
        first, second = rng.normal(size=n), rng.normal(size=n)
        if case == 3:
            w[0] = np.nan
        lo, hi = _bounds(rng, n)
        alpha = float(rng.uniform(0.0, 1.0))
        f_ref, s_ref = first.copy(), second.copy()
        f_ref += alpha * (w - f_ref)
        s_ref += alpha * (f_ref - s_ref)
        np.maximum(f_ref, lo, out=f_ref)
        np.minimum(f_ref, hi, out=f_ref)
        np.maximum(s_ref, lo, out=s_ref)
        np.minimum(s_ref, hi, out=s_ref)
        smooth_stages(w, first, second, alpha, lo, hi)
        np.testing.assert_array_equal(first, f_ref)
        np.testing.assert_array_equal(second, s_ref)


@pytest.mark.parametrize("n", [1, 7, 37])
def test_lead_positions_match_numpy_bit_for_bit(n):
    rng = np.random.default_rng(10 + n)
    for _ in range(50):
        stop, v = rng.normal(size=n), rng.normal(scale=2.0, size=n)
        v.flags.writeable = False  # (the loop's state views are read-only)
        lo, hi = _bounds(rng, n)
        delay = float(rng.uniform(0.0, 0.05))
        ref = stop + v * delay
        np.maximum(ref, lo, out=ref)
        np.minimum(ref, hi, out=ref)
        lead_positions(stop, v, delay, lo, hi)
        np.testing.assert_array_equal(stop, ref)


@pytest.mark.parametrize("n", [1, 7, 37])
def test_braking_bound_matches_numpy_bit_for_bit(n):
    rng = np.random.default_rng(20 + n)
    amax, jmax = rng.uniform(1.0, 20.0, n), rng.uniform(50.0, 5000.0, n)
    assert braking_bound(np.zeros(n), amax, jmax) == 0.0
    for case in range(50):
        v = rng.normal(size=n)
        v[rng.random(n) < 0.3] = 0.0
        if case == 7:
            v[-1] = np.nan
        ref = 0.0 if not v.any() else float((np.abs(v) / amax + amax / jmax).max())
        got = braking_bound(v, amax, jmax)
        assert got == ref or (np.isnan(ref) and np.isnan(got))


def test_the_limiters_braking_time_checks_what_it_is_given():
    robot = stackik.RobotModel(ROOT / "robots" / "panda" / "panda.urdf", load_collisions=False)
    limiter = stackik.JointMotionLimiter(
        robot, 0.001, max_jerk=500.0 * robot.get_acceleration_limits()
    )
    amax, jmax = limiter.max_acceleration, limiter.max_jerk
    v = np.linspace(-0.5, 0.5, 7)
    t = limiter.braking_time(v)
    assert t == float((np.abs(v) / amax + amax / jmax).max())
    assert t > 0.0
    assert limiter.braking_time(v.tolist()) == t  # a list is checked, then the same bound
    assert limiter.braking_time(np.zeros(7)) == 0.0
    with pytest.raises(ShapeError):
        limiter.braking_time(np.zeros(6))
    with pytest.raises(ShapeError):
        limiter.braking_time(np.zeros(8))
