"""Constraint: the base class of every constraint family.

A constraint contributes rows ``lower <= C v <= upper`` on the joint velocity ``v``
(size nv) for one step of length ``dt``. :meth:`Constraint.rows` reads the robot's
kinematics cache; it never runs forward kinematics itself.
"""

from __future__ import annotations

import numpy as np

from ..model import RobotModel


class Constraint:
    """Base class of all velocity constraints.

    Args:
        name: Constraint name (used in results and messages).
        robot: Robot whose kinematics cache the constraint reads.
    """

    def __init__(self, name: str, robot: RobotModel) -> None:
        self.name = name
        self._robot = robot
        self.active = True

    def rows(self, dt: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows ``(C, lower, upper)`` for a step of ``dt`` [s]; ``C`` is rows x nv."""
        raise NotImplementedError

    def _empty(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return np.zeros((0, self._robot.nv)), np.zeros(0), np.zeros(0)
