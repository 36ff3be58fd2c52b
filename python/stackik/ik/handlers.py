"""EmbodiK's convenience wrappers of a solver's stall handler and elastic band.

``StallHandler(solver, nominal_min_distance)`` (``embodik.StallHandler``) and
``ElasticBandHandler(solver, delta_max)`` (``embodik.elastic_band.ElasticBandHandler``)
switch the mechanism on when built and read its state through properties. They only
call the solver's public methods (:class:`~stackik.KinematicsSolver`), so they hold no
state of their own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate
from ..errors import InvalidInput

__all__ = ["ElasticBandHandler", "StallHandler"]


class StallHandler:
    """Enable a solver's stall handler and read its state.

    Args:
        solver: The :class:`~stackik.KinematicsSolver`.
        nominal_min_distance: The collision ``min_distance`` to restore [m].
        stall_threshold: Stalled steps before the margin is relaxed.
        restore_rate: Restore speed [m per step].
        floor_fraction: Lowest margin, as a fraction of the nominal one.
    """

    def __init__(
        self,
        solver: Any,
        nominal_min_distance: float,
        stall_threshold: int = 5,
        restore_rate: float = 0.005,
        floor_fraction: float = 0.3,
    ) -> None:
        self._solver = _solver(solver, "enable_stall_handler")
        # (every argument checked first: a rejected one leaves the handler as it was)
        _validate.positive_float(nominal_min_distance, "nominal_min_distance", True)
        solver.configure_stall_handler(stall_threshold, restore_rate, floor_fraction)
        solver.enable_stall_handler(nominal_min_distance)

    @property
    def enabled(self) -> bool:
        """Whether the stall handler runs."""
        return bool(self._solver.stall_handler_enabled())

    @property
    def is_relaxed(self) -> bool:
        """Whether the collision margin is relaxed now."""
        return bool(self._solver.stall_handler_is_relaxed())

    @property
    def current_min_distance(self) -> float:
        """The effective collision ``min_distance`` [m]."""
        return float(self._solver.stall_handler_current_min_distance())

    @property
    def consecutive_stall_steps(self) -> int:
        """Consecutive stalled steps so far."""
        return int(self._solver.stall_handler_consecutive_stall_steps())

    def disable(self) -> None:
        """Stop the stall handler and restore the nominal margin."""
        self._solver.disable_stall_handler()


class ElasticBandHandler:
    """Enable a solver's elastic band with its tuning, and read its state.

    Args:
        solver: The :class:`~stackik.KinematicsSolver`.
        delta_max: Largest widening of a joint's limits [rad or m].
        expand_rate: Widening per stalled step [rad or m].
        decay_rate: Fraction taken back per step once the stall ends.
        stall_threshold: Stalled steps before widening.
        expand_only_saturated: Widen only the saturated joints.
    """

    def __init__(
        self,
        solver: Any,
        delta_max: float = 0.05,
        expand_rate: float = 0.01,
        decay_rate: float = 0.2,
        stall_threshold: int = 3,
        expand_only_saturated: bool = True,
    ) -> None:
        self._solver = _solver(solver, "enable_elastic_band")
        # (the tuning first: a rejected argument leaves the band as it was)
        solver.configure_elastic_band(
            delta_max, expand_rate, decay_rate, stall_threshold, expand_only_saturated
        )
        solver.enable_elastic_band(delta_max)

    @property
    def enabled(self) -> bool:
        """Whether the band runs."""
        return bool(self._solver.elastic_band_enabled())

    @property
    def is_expanded(self) -> bool:
        """Whether any joint has a non-zero delta."""
        return bool(self._solver.elastic_band_is_expanded())

    @property
    def max_delta(self) -> float:
        """The largest delta [rad or m]."""
        return float(self._solver.elastic_band_max_delta())

    @property
    def deltas(self) -> np.ndarray:
        """Per-joint deltas [rad or m] (size nv)."""
        return np.asarray(self._solver.elastic_band_deltas())

    def disable(self) -> None:
        """Stop the band and narrow every limit back."""
        self._solver.disable_elastic_band()


def _solver(solver: Any, method: str) -> Any:
    """``solver`` when it has ``method`` (a :class:`~stackik.KinematicsSolver`).

    Raises:
        InvalidInput: Anything else.
    """
    if not callable(getattr(solver, method, None)):
        raise InvalidInput(
            f"solver must be a stackik KinematicsSolver, got {type(solver).__name__}",
            what="solver",
        )
    return solver
