"""What every closed-form solver offers: all branches of a pose, with their FK errors."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import InvalidInput
from ..spatial import as_se3
from .geometry import ChainGeometry

__all__ = ["MAX_BRANCHES", "AnalyticSolver"]

#: Most branches a 6R closed form returns (2 x 2 x 2).
MAX_BRANCHES = 8


class AnalyticSolver:
    """Closed-form inverse kinematics of one 6R chain: every branch of a pose at once.

    Subclasses (one per kinematic family) set :attr:`family` and :attr:`parameters` and
    implement :meth:`_solve_into`. Solutions are chain configurations with every angle
    in ``(-pi, pi]`` (one representative per branch; the ``+-2 pi`` copies and the joint
    limits are the caller's business), each with its forward-kinematics errors computed
    by the product of exponentials of the joint lines (equal to Pinocchio's FK to
    rounding, which :func:`~stackik.analytic.detect` verified at load).

    Attributes:
        family: ``"ur"``, ``"opw"`` or ``"spherical"``.
        geometry: The joint lines the solver was built from.
        parameters: The family's parameters read from the description [m, rad].
    """

    family = ""

    def __init__(self, geometry: ChainGeometry, parameters: dict[str, Any]) -> None:
        if not isinstance(geometry, ChainGeometry) or not isinstance(parameters, dict):
            raise InvalidInput(
                f"{type(self).__name__} needs a ChainGeometry and a dict of parameters "
                f"(stackik.analytic.detect makes both), got {type(geometry).__name__} and "
                f"{type(parameters).__name__}"
            )
        self.geometry = geometry
        self.parameters = parameters
        self._axes = np.ascontiguousarray(geometry.axes)
        self._points = np.ascontiguousarray(geometry.points)
        self._tip = np.ascontiguousarray(geometry.tip)
        self._out = np.zeros((MAX_BRANCHES, 6))
        self._err = np.zeros((MAX_BRANCHES, 2))

    def fk(self, q: np.ndarray) -> np.ndarray:
        """Tip pose (4x4, base frame) at the chain configuration ``q`` [rad].

        Computed by this family's own model: the joint lines, unless a subclass has its
        own parameters (OPW).
        """
        return self.geometry.fk(q)

    def _solve_into(self, R: np.ndarray, p: np.ndarray, out: np.ndarray, err: np.ndarray) -> int:
        """Write the branches of ``(R, p)`` and their errors into ``out``, ``err``; count."""
        raise NotImplementedError

    def solve_raw(self, R: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Branches of a tip pose given as a checked rotation and position (base frame).

        The hot path of global IK: no input check. Returns ``(Q, errors)``: solutions
        (k x 6, angles in ``(-pi, pi]``) and their position [m] and orientation [rad]
        errors (k x 2). The arrays are the solver's buffers: copy before the next call.
        """
        out, err = self._out, self._err
        k = self._solve_into(R, p, out, err)
        return out[:k], err[:k]

    def solve(self, T_base_tip: object) -> tuple[np.ndarray, np.ndarray]:
        """Every branch of a tip pose (SE3 or 4x4, base frame [m]).

        Returns:
            ``(Q, errors)``: the solutions (k x 6, angles in ``(-pi, pi]`` [rad], at
            most 8) and their position [m] and orientation [rad] errors (k x 2). A pose
            outside the workspace gives ``k = 0``.

        Raises:
            ShapeError, NonFiniteInput, InvalidTransform: Bad pose.
        """
        T = as_se3(T_base_tip, "T_base_tip")
        Q, err = self.solve_raw(
            np.ascontiguousarray(T.rotation), np.ascontiguousarray(T.translation)
        )
        return Q.copy(), err.copy()

    def __getstate__(self) -> dict[str, Any]:
        return {"geometry": self.geometry, "parameters": self.parameters}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}"
            for k, v in self.parameters.items()
            if isinstance(v, (int, float)) and math.isfinite(v)
        )
        return f"{type(self).__name__}({self.geometry.tip_frame!r}, {shown})"
