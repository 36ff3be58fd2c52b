"""Rigid-body dynamics of a robot description: RNEA, CRBA, gravity and Coriolis terms.

Each call takes its own arguments and works in a private Pinocchio ``Data`` guarded by
a lock, so dynamics never touch any kinematics cache and may be called from any thread.
The ``Data`` is created by the first call (a ``Data`` holds ``nv^3``-sized derivative
tensors: a description that never asks for dynamics does not pay for them).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pinocchio as pin

__all__ = ["Dynamics"]


class Dynamics:
    """Dynamics functions over one Pinocchio model (inputs are trusted: checked by the caller).

    Args:
        model: The Pinocchio model (its gravity is read at every call).
    """

    def __init__(self, model: pin.Model) -> None:
        self._model = model
        self._created: pin.Data | None = None
        self._lock = threading.Lock()

    @property
    def _data(self) -> pin.Data:
        """The private Data, created on first use (callers hold the lock)."""
        if self._created is None:
            self._created = pin.Data(self._model)
        return self._created

    def __getstate__(self) -> dict[str, Any]:
        return {"model": self._model}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["model"])  # type: ignore[misc]

    def rnea(self, q: np.ndarray, v: np.ndarray, a: np.ndarray) -> np.ndarray:
        """Inverse dynamics ``tau = M(q) a + C(q, v) v + g(q)`` [N m or N]."""
        with self._lock:
            return pin.rnea(self._model, self._data, q, v, a).copy()

    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        """Joint-space inertia matrix M(q) (CRBA), symmetric, nv x nv."""
        with self._lock:
            M = pin.crba(self._model, self._data, q)
            return np.triu(M) + np.triu(M, 1).T

    def gravity(self, q: np.ndarray) -> np.ndarray:
        """Gravity torques g(q) [N m or N]."""
        with self._lock:
            return pin.computeGeneralizedGravity(self._model, self._data, q).copy()

    def coriolis(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Coriolis and centrifugal torques ``C(q, v) v`` [N m or N]."""
        with self._lock:
            nle = pin.nonLinearEffects(self._model, self._data, q, v).copy()
            return nle - pin.computeGeneralizedGravity(self._model, self._data, q)
