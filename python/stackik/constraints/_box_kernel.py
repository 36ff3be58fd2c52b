"""Compiled kernel of the joint-limit velocity box (see :mod:`stackik.constraints.limits`)."""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel

#: Layout of the ``options`` array of :func:`limit_box`.
OPT_RECOVERY_GAIN = 0  # fraction of the violation recovered per step, in (0, 1]
OPT_RELEASE = 1  # violations up to this [rad or m] are only held, not pushed back
OPT_ENTER = 2  # a violation must exceed this to start a recovery [rad or m]
OPT_EXIT = 3  # a recovery ends this far inside the limit [rad or m]
OPT_SOFT_ZONE = 4  # approach speed ramps down to 0 over this distance (0: off) [rad or m]
OPT_HEADROOM = 5  # minimum speed kept toward a limit (<= 0: off) [rad/s or m/s]
OPT_HEADROOM_MARGIN = 6  # ... by joints farther than this from the limit [rad or m]
OPT_HEADROOM_FRACTION = 7  # minimum speed as a fraction of the velocity limit (<= 0: off)
OPT_COUNT = 8


def default_options() -> np.ndarray:
    """Options reproducing the plain braking box: full recovery, no hysteresis."""
    opts = np.zeros(OPT_COUNT)
    opts[OPT_RECOVERY_GAIN] = 1.0
    return opts


@kernel(inline=True)
def approach_bound(m: float, vmax: float, inv_acc: float, dt: float, opts: np.ndarray) -> float:
    """Speed allowed toward a limit ``m >= 0`` away [rad/s or m/s].

    The braking bound ``2 m / (dt + sqrt(dt^2 + 2 m / a))`` (the largest speed that can
    still stop before the limit with deceleration ``a``; ``m / dt`` as ``a -> inf``),
    capped by ``vmax``; with a soft zone ``z``, also by ``vmax m / z``. With a headroom
    ``h`` (EmbodiK's ``min_velocity_headroom``; or a fraction of a finite ``vmax``), a
    joint *farther* than the headroom margin from the limit may move toward it at least
    at ``min(h, vmax, m / dt)``: never above its velocity limit, never past the limit in
    one step. Within the margin the braking bound stands.
    """
    b = min(vmax, 2.0 * m / (dt + math.sqrt(dt * dt + 2.0 * m * inv_acc)))
    zone = opts[OPT_SOFT_ZONE]
    if zone > 0.0 and m < zone:
        b = min(b, vmax * m / zone)
    head = opts[OPT_HEADROOM]
    if opts[OPT_HEADROOM_FRACTION] > 0.0 and vmax < math.inf:
        head = max(head, opts[OPT_HEADROOM_FRACTION] * vmax)
    if head > 0.0 and m > opts[OPT_HEADROOM_MARGIN]:
        b = max(b, min(head, vmax, m / dt))
    return b


@kernel(inline=True)
def recovery_bound(m: float, vmax: float, dt: float, opts: np.ndarray, state: int) -> tuple:
    """``(bound, state)`` on a side whose limit is ``m`` away (``m < 0``: violated).

    The bound is the largest speed allowed *toward* the limit (negative: the joint must
    move away at least that fast). ``state`` is 1 while a recovery runs: it starts when
    the violation exceeds the enter epsilon and ends once the joint is the exit
    epsilon inside. A running recovery asks ``gain (exit - m) / dt`` (capped by
    ``vmax``) unless the violation is within the release margin; otherwise the joint
    is only held (bound 0).
    """
    violation = -m
    if state == 0 and violation > opts[OPT_ENTER]:
        state = 1
    if state == 1 and m >= opts[OPT_EXIT]:
        state = 0
    if state == 0 or 0.0 < violation <= opts[OPT_RELEASE]:
        return min(0.0, vmax), state
    push = opts[OPT_RECOVERY_GAIN] * (opts[OPT_EXIT] - m) / dt
    return max(-push, -vmax), state


@kernel(inline=True)
def side_bound(
    m: float, vmax: float, inv_acc: float, dt: float, opts: np.ndarray, state: int
) -> tuple:
    """``(bound toward the limit, state)`` of one side ``m`` from its (shrunk) limit."""
    bound = 0.0
    if m < 0.0 or state == 1:
        bound, state = recovery_bound(m, vmax, dt, opts, state)
    if m >= 0.0 and state == 0:
        bound = approach_bound(m, vmax, inv_acc, dt, opts)
    return bound, state


@kernel
def limit_box(
    q: np.ndarray,
    q_index: np.ndarray,
    v_index: np.ndarray,
    q_lower: np.ndarray,
    q_upper: np.ndarray,
    margin: np.ndarray,
    acc: np.ndarray,
    dt: float,
    opts: np.ndarray,
    state: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
) -> None:
    """Tighten the velocity box ``lo``/``hi`` in place with the position-limit bounds.

    Joint ``k`` at ``x = q[q_index[k]]`` (velocity index ``j = v_index[k]``) has its
    limits shrunk by ``margin[k]``. Toward a limit ``m >= 0`` away it may move at
    :func:`approach_bound`; while it is outside a limit, or recovering (``state[k]``
    holds the upper and lower recovery flags), :func:`recovery_bound` decides. A
    recovery wins over the other side's bound so the box is never empty.
    """
    for k in range(q_index.shape[0]):
        j = v_index[k]
        x = q[q_index[k]]
        inv_acc = 1.0 / acc[j]
        mu = (q_upper[q_index[k]] - margin[k]) - x
        ml = x - (q_lower[q_index[k]] + margin[k])
        vmax_hi = hi[j]
        vmax_lo = -lo[j]
        forced_hi = False
        forced_lo = False
        if mu != math.inf:
            hi[j], state[k, 0] = side_bound(mu, vmax_hi, inv_acc, dt, opts, state[k, 0])
            forced_hi = hi[j] < 0.0
        if ml != math.inf:
            bound, state[k, 1] = side_bound(ml, vmax_lo, inv_acc, dt, opts, state[k, 1])
            lo[j] = -bound
            forced_lo = lo[j] > 0.0
        if forced_hi and lo[j] > hi[j]:
            lo[j] = hi[j]
        elif forced_lo and hi[j] < lo[j]:
            hi[j] = lo[j]


@kernel
def joint_box(
    q: np.ndarray,
    vmax: np.ndarray,
    switches: tuple,
    joints: tuple,
    acc: np.ndarray,
    dt: float,
    opts: np.ndarray,
    state: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
) -> None:
    """The joint limits' whole box in one call: the velocity limits, then :func:`limit_box`.

    Args:
        q: Configuration (size nq).
        vmax: Velocity limits (size nv) [rad/s or m/s].
        switches: ``(velocity, position)``: which of the two limits apply.
        joints: ``(q_index, v_index, q_lower, q_upper, margin)`` of :func:`limit_box`.
        acc: Acceleration limits (size nv).
        dt: Step [s].
        opts: Options (:func:`default_options`).
        state: Recovery flags, updated.
        lo: Lower velocity bounds, tightened in place.
        hi: Upper velocity bounds, tightened in place.
    """
    velocity, position = switches
    if velocity:
        for j in range(vmax.shape[0]):
            lo[j] = max(lo[j], -vmax[j])
            hi[j] = min(hi[j], vmax[j])
    if position:
        q_index, v_index, q_lower, q_upper, margin = joints
        limit_box(q, q_index, v_index, q_lower, q_upper, margin, acc, dt, opts, state, lo, hi)
