"""Compiled kernels of jerk-limited joint motion (see :mod:`stackik.constraints.motion`).

One joint moves with position ``p``, velocity ``v`` and acceleration ``a``, under a
velocity limit ``V``, an acceleration limit ``A`` and a jerk limit ``J`` (all > 0).

**Braking profile.** The time-optimal way to rest (``v = a = 0``) with ``|a| <= A`` and
``|jerk| <= J``. Let ``s`` be the sign of ``v + a |a| / (2 J)``, the velocity reached if
the acceleration were ramped to zero at once; in the frame flipped by ``s`` that
velocity is >= 0 and the profile is

1. jerk ``-J`` from ``a`` down to ``a1 = -min(A, sqrt(J v + a^2 / 2))``;
2. constant ``a1`` (only when ``A`` binds);
3. jerk ``+J`` from ``a1`` back to 0, reaching ``v = 0`` exactly.

``J v + a^2 / 2`` is constant along phase 1, so the profile recomputed from any of its
own states is its remainder: following it tick by tick stops where it said it would.
In the flipped frame the velocity is >= 0 after at most one upward zero crossing in
phase 1, so the positions covered are ``[p + min(0, x_cross), p + x_stop]``.

**Stopping distance from a cruise** (``a = 0``, speed ``w >= 0``):
``D(w) = w^1.5 / sqrt(J)`` when ``w <= A^2 / J``, else ``w^2 / (2 A) + w A / (2 J)``.
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel


@kernel(inline=True)
def brake_plan(
    v: float, a: float, A: float, J: float
) -> tuple[float, float, float, float, float, float, float]:
    """The braking profile of one joint in its flipped frame.

    Args:
        v: Velocity [unit/s].
        a: Acceleration [unit/s^2].
        A: Acceleration limit (> 0) [unit/s^2].
        J: Jerk limit (> 0) [unit/s^3].

    Returns:
        ``(s, vf, af, a1, t1, t2, t3)``: the sign of the flipped frame, the flipped
        velocity and acceleration, the plateau acceleration (<= 0) and the three phase
        durations [s].
    """
    s = 1.0 if v + a * abs(a) / (2.0 * J) >= 0.0 else -1.0
    vf = s * v
    af = s * a
    peak = math.sqrt(max(J * vf + 0.5 * af * af, 0.0))
    a1 = -min(A, peak)
    if a1 > af:  # only for a state beyond the acceleration limit: no phase 1
        a1 = af
    t1 = (af - a1) / J
    v1 = vf + af * t1 - 0.5 * J * t1 * t1
    t3 = -a1 / J
    t2 = 0.0
    if a1 < 0.0:
        t2 = max((v1 - 0.5 * a1 * a1 / J) / (-a1), 0.0)
    return s, vf, af, a1, t1, t2, t3


@kernel(inline=True)
def brake_extent(p: float, v: float, a: float, A: float, J: float) -> tuple[float, float]:
    """Lowest and highest position [unit] the braking profile from ``(p, v, a)`` covers."""
    s, vf, af, a1, t1, t2, t3 = brake_plan(v, a, A, J)
    x1 = vf * t1 + 0.5 * af * t1 * t1 - J * t1 * t1 * t1 / 6.0
    v1 = vf + af * t1 - 0.5 * J * t1 * t1
    x2 = x1 + v1 * t2 + 0.5 * a1 * t2 * t2
    v2 = v1 + a1 * t2
    x3 = x2 + v2 * t3 + 0.5 * a1 * t3 * t3 + J * t3 * t3 * t3 / 6.0
    xc = 0.0
    if vf < 0.0:  # moving the other way first: it stops there, then comes back
        tc = (af - math.sqrt(max(af * af + 2.0 * J * vf, 0.0))) / J
        xc = min(vf * tc + 0.5 * af * tc * tc - J * tc * tc * tc / 6.0, 0.0)
    lo = min(xc, x3, 0.0)
    hi = max(x3, 0.0)
    if s > 0.0:
        return p + lo, p + hi
    return p - hi, p - lo


@kernel(inline=True)
def brake_sample(
    p: float, v: float, a: float, A: float, J: float, t: float
) -> tuple[float, float, float]:
    """State ``(p, v, a)`` after ``t`` [s] along the braking profile (at rest after it)."""
    s, vf, af, a1, t1, t2, t3 = brake_plan(v, a, A, J)
    if t <= t1:
        x = vf * t + 0.5 * af * t * t - J * t * t * t / 6.0
        return p + s * x, s * (vf + af * t - 0.5 * J * t * t), s * (af - J * t)
    x1 = vf * t1 + 0.5 * af * t1 * t1 - J * t1 * t1 * t1 / 6.0
    v1 = vf + af * t1 - 0.5 * J * t1 * t1
    if t <= t1 + t2:
        u = t - t1
        return p + s * (x1 + v1 * u + 0.5 * a1 * u * u), s * (v1 + a1 * u), s * a1
    x2 = x1 + v1 * t2 + 0.5 * a1 * t2 * t2
    v2 = v1 + a1 * t2
    u = min(t - t1 - t2, t3)
    x = x2 + v2 * u + 0.5 * a1 * u * u + J * u * u * u / 6.0
    if u >= t3:
        return p + s * x, 0.0, 0.0
    return p + s * x, s * (v2 + a1 * u + 0.5 * J * u * u), s * (a1 + J * u)


@kernel(inline=True)
def cruise_speed(margin: float, A: float, J: float, dt: float) -> float:
    """Largest speed ``w`` with ``w dt + D(w) <= margin`` (the module docstring's D).

    A joint cruising at ``w`` for one more step of ``dt`` [s] can still brake within
    ``margin`` [unit]. A negative margin (beyond the limit) gives ``margin / dt``, the
    speed back; a margin under 1e-9 gives 0 (a joint resting on its limit stays exactly
    there instead of creeping by rounding).
    """
    if margin < 1e-9:
        return min(margin, 0.0) / dt
    w_knee = A * A / J  # above it the acceleration limit binds while braking
    d_knee = w_knee * A / J + w_knee * dt  # w^1.5 / sqrt(J) at w_knee, plus the step
    if margin >= d_knee:
        b = A / (2.0 * J) + dt
        return A * (math.sqrt(b * b + 2.0 * margin / A) - b)
    # s^3 / sqrt(J) + s^2 dt = margin in s = sqrt(w): Newton from above (convex, increasing)
    rj = math.sqrt(J)
    x = min((margin * rj) ** (1.0 / 3.0), math.sqrt(margin / dt))
    for _ in range(30):
        f = x * x * x / rj + x * x * dt - margin
        if f <= 1e-15 * margin:
            break
        x -= f / (3.0 * x * x / rj + 2.0 * x * dt)
    x = max(x, 0.0)
    while x * x * x / rj + x * x * dt > margin and x > 0.0:  # rounding: land inside
        x *= 1.0 - 1e-12
    return x * x


@kernel(inline=True)
def reach(a: float, A: float, J: float, h: float) -> float:
    """Largest velocity gain [unit/s] within ``h`` [s] from acceleration ``a``.

    The acceleration rises at ``J`` up to ``A`` (it may start above ``A`` only when the
    state is already beyond its limit; then it falls to ``A``).
    """
    if a >= A:
        ts = min((a - A) / J, h)
        return a * ts - 0.5 * J * ts * ts + A * (h - ts)
    ts = (A - a) / J
    if ts >= h:
        return a * h + 0.5 * J * h * h
    return a * ts + 0.5 * J * ts * ts + A * (h - ts)


@kernel
def motion_box(
    position: np.ndarray,
    velocity: np.ndarray,
    acceleration: np.ndarray,
    vmax: np.ndarray,
    amax: np.ndarray,
    jmax: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    dt: float,
    horizon: float,
    lo: np.ndarray,
    hi: np.ndarray,
    cruise_lo: np.ndarray,
    cruise_hi: np.ndarray,
) -> None:
    """Narrow the velocity box ``lo``/``hi`` (size nv) to what the motion can follow.

    For joint ``j``: the velocities reachable within ``horizon`` [s] from
    ``(velocity[j], acceleration[j])`` under the jerk and acceleration limits, within
    ``+-vmax[j]``, and (finite ``lower``/``upper``) a speed that can cruise for ``dt``
    [s] more (a step, plus any delay of the filter) and still brake before the position
    limits (:func:`cruise_speed`; these bounds alone also go to ``cruise_lo`` and
    ``cruise_hi``). When the other bounds already in the box leave nothing reachable,
    the box becomes the reachable velocity nearest to them: no motion can do better.
    """
    for j in range(lo.shape[0]):
        v = velocity[j]
        a = acceleration[j]
        A = amax[j]
        J = jmax[j]
        r_hi = min(v + reach(a, A, J, horizon), vmax[j])
        r_lo = max(v - reach(-a, A, J, horizon), -vmax[j])
        if r_lo > r_hi:  # a state beyond the velocity limit: head back at once
            r_lo = r_hi = min(max(v, -vmax[j]), vmax[j])
        cruise_hi[j] = math.inf
        cruise_lo[j] = -math.inf
        if upper[j] < math.inf:
            cruise_hi[j] = cruise_speed(upper[j] - position[j], A, J, dt)
        if lower[j] > -math.inf:
            cruise_lo[j] = -cruise_speed(position[j] - lower[j], A, J, dt)
        b_lo = max(lo[j], cruise_lo[j])
        b_hi = min(hi[j], cruise_hi[j])
        new_lo = max(b_lo, r_lo)
        new_hi = min(b_hi, r_hi)
        if new_lo > new_hi:
            if b_hi < r_lo:
                new_lo = new_hi = r_lo
            elif b_lo > r_hi:
                new_lo = new_hi = r_hi
            else:  # the other bounds are inverted among themselves
                new_lo = new_hi = min(max(0.5 * (b_lo + b_hi), r_lo), r_hi)
        lo[j] = new_lo
        hi[j] = new_hi


@kernel
def guard_limits(
    p0: np.ndarray,
    v0: np.ndarray,
    a0: np.ndarray,
    p1: np.ndarray,
    v1: np.ndarray,
    a1: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    amax: np.ndarray,
    jmax: np.ndarray,
    dt: float,
    braked: np.ndarray,
) -> int:
    """Keep every joint able to stop inside its position limits; return how many braked.

    ``(p1, v1, a1)`` is the proposed state after a step of ``dt`` [s] from
    ``(p0, v0, a0)``. A joint whose braking profile from the proposed state would leave
    ``[lower, upper]`` follows its braking profile from the previous state instead
    (written over ``p1, v1, a1``; ``braked[j]`` set). When the previous state could
    stop inside, so can the new one: the remainder of a braking profile is the braking
    profile of its states.
    """
    count = 0
    for j in range(p1.shape[0]):
        braked[j] = False
        if lower[j] == -math.inf and upper[j] == math.inf:
            continue
        lo, hi = brake_extent(p1[j], v1[j], a1[j], amax[j], jmax[j])
        if lo >= lower[j] and hi <= upper[j]:
            continue
        p, v, a = brake_sample(p0[j], v0[j], a0[j], amax[j], jmax[j], dt)
        p1[j] = p
        v1[j] = v
        a1[j] = a
        braked[j] = True
        count += 1
    return count


@kernel
def brake_all(
    p: np.ndarray,
    v: np.ndarray,
    a: np.ndarray,
    amax: np.ndarray,
    jmax: np.ndarray,
    dt: float,
) -> int:
    """One step of ``dt`` [s] of every joint's braking profile, in place; joints moving."""
    moving = 0
    for j in range(p.shape[0]):
        p[j], v[j], a[j] = brake_sample(p[j], v[j], a[j], amax[j], jmax[j], dt)
        if v[j] != 0.0 or a[j] != 0.0:
            moving += 1
    return moving


@kernel
def brake_extents(
    p: np.ndarray,
    v: np.ndarray,
    a: np.ndarray,
    amax: np.ndarray,
    jmax: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
) -> None:
    """:func:`brake_extent` of every joint into ``lo`` and ``hi``."""
    for j in range(p.shape[0]):
        lo[j], hi[j] = brake_extent(p[j], v[j], a[j], amax[j], jmax[j])


@kernel
def brake_stops(
    p: np.ndarray,
    v: np.ndarray,
    a: np.ndarray,
    amax: np.ndarray,
    jmax: np.ndarray,
    stop: np.ndarray,
) -> None:
    """Where every joint comes to rest along its braking profile, into ``stop``."""
    for j in range(p.shape[0]):
        stop[j] = brake_sample(p[j], v[j], a[j], amax[j], jmax[j], math.inf)[0]


@kernel
def brake_stops_together(
    p: np.ndarray,
    v: np.ndarray,
    a: np.ndarray,
    amax: np.ndarray,
    jmax: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    stop: np.ndarray,
) -> float:
    """Where the joints come to rest when they brake together, into ``stop``; the time [s].

    Braking together (ruckig's phase synchronization) stretches every joint's profile
    to the slowest one's duration ``T``, so the motion keeps its direction: a joint
    whose own profile takes ``T_j`` and covers ``B_j`` covers about ``B_j T / T_j``
    (exact for profiles of one shape; within a few per cent when the accelerations are
    not proportional to the velocities). Clipped into ``[lower, upper]``.
    """
    n = p.shape[0]
    duration = np.empty(n)
    longest = 0.0
    for j in range(n):
        t1, t2, t3 = brake_plan(v[j], a[j], amax[j], jmax[j])[4:]
        duration[j] = t1 + t2 + t3
        stop[j] = brake_sample(p[j], v[j], a[j], amax[j], jmax[j], math.inf)[0] - p[j]
        longest = max(longest, duration[j])
    for j in range(n):
        travel = stop[j] * (longest / duration[j]) if duration[j] > 0.0 else 0.0
        stop[j] = min(max(p[j] + travel, lower[j]), upper[j])
    return longest
