"""Compiled per-tick vector work of :class:`stackik.control.ControlLoop`.

The loop's smoothing stages, the lead of its configuration ahead and its braking-time
bound run on every tick over every joint; as NumPy expressions on short vectors each
costs a microsecond or more of dispatch. These kernels do the same arithmetic, in the
same order, in one compiled call each (``tests/test_control_loop_kernels.py`` checks
them bit for bit against the NumPy expressions). Every array is trusted: the loop's own,
of the robot's ``nv``.
"""

from __future__ import annotations

import numpy as np

from .._jit import kernel, register_warmup


@kernel(inline=True)
def clip_value(x: float, lo: float, hi: float) -> float:
    """``min(max(x, lo), hi)`` with NumPy's NaN rule (a NaN stays NaN)."""
    if x < lo:
        x = lo
    if x > hi:
        x = hi
    return x


@kernel
def smooth_stages(
    w: np.ndarray,
    first: np.ndarray,
    second: np.ndarray,
    alpha: float,
    lower: np.ndarray,
    upper: np.ndarray,
) -> None:
    """Two first-order stages toward ``w``, each kept in ``[lower, upper]`` (in place).

    ``first += alpha (w - first)``, ``second += alpha (first - second)`` with ``first``
    the new one, then both clipped [rad/s or m/s].
    """
    for i in range(w.shape[0]):
        f = first[i] + alpha * (w[i] - first[i])
        s = second[i] + alpha * (f - second[i])
        first[i] = clip_value(f, lower[i], upper[i])
        second[i] = clip_value(s, lower[i], upper[i])


@kernel
def lead_positions(
    stop: np.ndarray, v: np.ndarray, delay: float, lower: np.ndarray, upper: np.ndarray
) -> None:
    """``stop += v delay``, clipped into ``[lower, upper]`` (in place) [rad or m]."""
    for i in range(stop.shape[0]):
        stop[i] = clip_value(stop[i] + v[i] * delay, lower[i], upper[i])


@kernel
def braking_bound(v: np.ndarray, amax: np.ndarray, jmax: np.ndarray) -> float:
    """The slowest joint's ``|v| / a_max + a_max / j_max`` [s]; 0 when nothing moves."""
    moving = False
    for i in range(v.shape[0]):
        if v[i] != 0.0:
            moving = True
            break
    if not moving:
        return 0.0
    worst = -np.inf
    for i in range(v.shape[0]):
        t = abs(v[i]) / amax[i] + amax[i] / jmax[i]
        if t > worst or t != t:
            worst = t
    return worst


@register_warmup
def _warm_up_loop_kernels() -> None:
    """Run the loop's kernels once on two joints (the argument types real ticks use)."""
    n = 2
    w, lo, hi = np.array([0.2, -0.1]), np.full(n, -1.0), np.full(n, 1.0)
    smooth_stages(w, np.zeros(n), np.zeros(n), 0.5, lo, hi)
    view = w.view()
    view.flags.writeable = False  # (the loop reads the limiter's state as read-only views)
    for v in (w, view):
        lead_positions(np.zeros(n), v, 0.01, lo, hi)
        braking_bound(v, np.full(n, 5.0), np.full(n, 50.0))
