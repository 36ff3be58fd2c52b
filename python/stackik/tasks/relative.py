"""RelativeFrameTask and AbsoluteFrameTask: tasks on a pair of frames (dual-arm work).

Relative task, on ``T_ab = T_a^-1 T_b`` with rows in frame a's axes; with
``d = p_b - p_a`` and world-aligned frame Jacobians ``[J_v; J_w]``:

    J_p = R_a^T (J_v,b - J_v,a + [d]x J_w,a),    J_r = R_a^T (J_w,b - J_w,a)
    e   = [p_ab* - p_ab ; log3(R_ab* R_ab^T)]

Absolute task, on the frame between a and b: ``p = (1 - alpha) p_a + alpha p_b`` and
``R = R_a exp(alpha phi)`` with ``phi = log3(R_a^T R_b)`` (rows in world axes):

    J_p = (1 - alpha) J_v,a + alpha J_v,b
    J_r = J_w,a + R alpha Jexp3(alpha phi) Jlog3(R_ab) R_b^T (J_w,b - J_w,a)
    e   = [p* - p ; log3(R* R^T)]

(``Jexp3`` and ``Jlog3`` are the right Jacobians of SO(3)'s exp and log.)
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from .. import _validate
from ..model import Kinematics, RobotModel
from ..spatial import as_se3
from .base import Task, TaskType, register_task


class _PairTask(Task):
    def __init__(
        self,
        name: str,
        kinematics: Kinematics | RobotModel,
        frame_a: str,
        frame_b: str,
        priority: int = 0,
        weight: float = 1.0,
    ) -> None:
        super().__init__(name, kinematics, 6, priority, weight)
        self.frame_a, self.frame_b = frame_a, frame_b
        robot = self._robot
        self._fa, self._fb = robot.get_frame_id(frame_a), robot.get_frame_id(frame_b)
        self._target = self._current()

    def _current(self) -> pin.SE3:
        raise NotImplementedError

    def set_position_mask(self, mask: object) -> None:
        """Which position axes are controlled (1) or free (0)."""
        self._set_mask(0, mask)  # type: ignore[arg-type]

    def set_orientation_mask(self, mask: object) -> None:
        """Which rotation axes are controlled (1) or free (0)."""
        self._set_mask(3, mask)  # type: ignore[arg-type]

    def set_target_pose(self, pose: object) -> None:
        """Set the target pose (SE3 or 4x4) [m]."""
        self._target = pin.SE3(as_se3(pose, f"{self.name} target pose"))

    def capture_current_as_target(self) -> None:
        """Make the pose in the cache's current configuration the target."""
        self._target = self._current()

    @property
    def target_pose(self) -> pin.SE3:
        """The target pose."""
        return pin.SE3(self._target)

    @property
    def current_pose(self) -> pin.SE3:
        """The tracked pose in the cache's current configuration."""
        return self._current()


@register_task
class RelativeFrameTask(_PairTask):
    """Track the pose of frame b in frame a, ``T_a^-1 T_b``.

    Args:
        name: Task name.
        kinematics: Kinematics cache read (a solver's), or a robot (its own cache).
        frame_a: Reference frame.
        frame_b: Tracked frame.

    The target starts at the current relative pose.
    """

    family = "relative_frame"
    _task_type = TaskType.RELATIVE_FRAME

    def _current(self) -> pin.SE3:
        kin = self._kin
        return kin.frame_placement(self._fa).actInv(kin.frame_placement(self._fb))

    def _compute(self, J: np.ndarray, error: np.ndarray) -> None:
        Tab, J[:] = self._kin.relative_pose_jacobian(self._fa, self._fb)
        error[:3] = self._target.translation - Tab.translation
        error[3:] = pin.log3(self._target.rotation @ Tab.rotation.T)


@register_task
class AbsoluteFrameTask(_PairTask):
    """Track the frame interpolated between frames a and b at ratio ``alpha``.

    Args:
        name: Task name.
        kinematics: Kinematics cache read (a solver's), or a robot (its own cache).
        frame_a: First frame.
        frame_b: Second frame.
        alpha: Interpolation ratio in [0, 1]: 0 is frame a, 1 frame b, 0.5 the middle.
    """

    family = "absolute_frame"
    _task_type = TaskType.ABSOLUTE_FRAME

    def __init__(
        self,
        name: str,
        kinematics: Kinematics | RobotModel,
        frame_a: str,
        frame_b: str,
        alpha: float = 0.5,
        priority: int = 0,
        weight: float = 1.0,
    ) -> None:
        self._alpha = self._check_alpha(alpha)
        super().__init__(name, kinematics, frame_a, frame_b, priority, weight)

    @staticmethod
    def _check_alpha(alpha: float) -> float:
        return _validate.in_range(alpha, "alpha", 0.0, 1.0)

    def get_alpha(self) -> float:
        """The interpolation ratio."""
        return self._alpha

    def set_alpha(self, alpha: float) -> None:
        """Set the interpolation ratio in [0, 1].

        The target pose is kept: the newly tracked frame is driven to it. Call
        :meth:`capture_current_as_target` to hold the new frame where it is instead.
        """
        self._alpha = self._check_alpha(alpha)

    def _current(self) -> pin.SE3:
        Ta, Tb = self._kin.frame_placement(self._fa), self._kin.frame_placement(self._fb)
        a = self._alpha
        phi = pin.log3(Ta.rotation.T @ Tb.rotation)
        return pin.SE3(
            Ta.rotation @ pin.exp3(a * phi), (1 - a) * Ta.translation + a * Tb.translation
        )

    def _compute(self, J: np.ndarray, error: np.ndarray) -> None:
        kin = self._kin
        Ta, Tb = kin.frame_placement(self._fa), kin.frame_placement(self._fb)
        Ja = kin.frame_jacobian(self._fa, pin.LOCAL_WORLD_ALIGNED)
        Jb = kin.frame_jacobian(self._fb, pin.LOCAL_WORLD_ALIGNED)
        a = self._alpha
        Rab = Ta.rotation.T @ Tb.rotation
        phi = pin.log3(Rab)
        R = Ta.rotation @ pin.exp3(a * phi)
        J[:3] = (1 - a) * Ja[:3] + a * Jb[:3]
        coupling = R @ (a * pin.Jexp3(a * phi)) @ pin.Jlog3(Rab) @ Tb.rotation.T
        J[3:] = Ja[3:] + coupling @ (Jb[3:] - Ja[3:])
        error[:3] = self._target.translation - ((1 - a) * Ta.translation + a * Tb.translation)
        error[3:] = pin.log3(self._target.rotation @ R.T)
