"""Compiled kernel of the joint-limit velocity box (see :mod:`stackik.constraints.limits`)."""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel


@kernel
def limit_box(
    q: np.ndarray,
    q_index: np.ndarray,
    v_index: np.ndarray,
    q_lower: np.ndarray,
    q_upper: np.ndarray,
    margin: float,
    acc: np.ndarray,
    dt: float,
    lo: np.ndarray,
    hi: np.ndarray,
) -> None:
    """Tighten the velocity box ``lo``/``hi`` in place with the position-limit bounds.

    For joint ``k`` at ``x = q[q_index[k]]`` with velocity index ``j = v_index[k]`` and
    limits shrunk by ``margin``, the bound toward a limit ``m >= 0`` away is
    ``2 m / (dt + sqrt(dt^2 + 2 m / a))``, which equals ``a (sqrt(dt^2 + 2 m / a) - dt)``
    (the largest speed that can still stop before the limit with deceleration ``a``) and
    tends to ``m / dt`` as ``a -> inf`` (then ``1 / a = 0``). A joint
    outside a limit gets ``m / dt`` back toward it (never faster than the existing
    velocity bound), and that recovery wins over the other side's bound so the box is
    never empty.
    """
    for k in range(q_index.shape[0]):
        j = v_index[k]
        x = q[q_index[k]]
        inv_acc = 1.0 / acc[j]
        mu = (q_upper[q_index[k]] - margin) - x
        ml = x - (q_lower[q_index[k]] + margin)
        vmax_hi = hi[j]
        vmax_lo = -lo[j]
        if mu == math.inf:
            pass
        elif mu >= 0.0:
            hi[j] = min(vmax_hi, 2.0 * mu / (dt + math.sqrt(dt * dt + 2.0 * mu * inv_acc)))
        else:
            hi[j] = max(mu / dt, -vmax_hi)
        if ml == math.inf:
            pass
        elif ml >= 0.0:
            lo[j] = max(-vmax_lo, -2.0 * ml / (dt + math.sqrt(dt * dt + 2.0 * ml * inv_acc)))
        else:
            lo[j] = min(-ml / dt, vmax_lo)
        if mu < 0.0 and ml >= 0.0 and lo[j] > hi[j]:
            lo[j] = hi[j]
        elif ml < 0.0 and mu >= 0.0 and hi[j] < lo[j]:
            hi[j] = lo[j]
