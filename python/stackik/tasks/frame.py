"""FrameTask: drive a frame's position and/or orientation to a target pose.

With ``T = (R, p)`` the frame's world pose and ``T* = (R*, p*)`` the target, the
error and Jacobian are expressed in world axes (LOCAL_WORLD_ALIGNED):

    e = [p* - p ; log3(R* R^T)],    J = [J_v ; J_w]

where ``J_v`` maps v to the frame origin's velocity and ``J_w`` to its angular
velocity, both in world axes. ``FRAME_POSITION`` keeps the first three rows,
``FRAME_ORIENTATION`` the last three; per-axis masks drop further rows (simIK's
x / y / z / alpha-beta / gamma constraints, here on world axes).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from .. import _validate
from ..errors import InvalidInput
from ..model import Kinematics, RobotModel
from ..model.kinematics import jacobian_columns, support_columns
from ..spatial import as_se3, check_rotation, check_translation
from ._frame_kernel import frame_error, frame_error_jacobian, frame_rows
from .base import NO_VALUES, Task, TaskType, register_task

_ROWS = {
    TaskType.FRAME_POSE: (0, 6),
    TaskType.FRAME_POSITION: (0, 3),
    TaskType.FRAME_ORIENTATION: (3, 6),
}


def _own(a: np.ndarray) -> np.ndarray:
    """A C-ordered float64 copy (the compiled rows see one array type, never the caller's)."""
    return np.array(a, dtype=np.float64, order="C")


@register_task
class FrameTask(Task):
    """Track a target pose (or its position / orientation part) with one frame.

    Args:
        name: Task name.
        kinematics: Kinematics cache read (a solver's), or a robot (its own cache).
        frame_name: Controlled frame.
        task_type: ``FRAME_POSE`` (6 rows), ``FRAME_POSITION`` or ``FRAME_ORIENTATION``.

    The target starts at the frame's pose in the cache's current configuration, so a
    new task holds the frame still until a target is set.
    """

    family = "frame"
    frame_name: str = _validate.fixed_property(
        "frame_name",
        "add a task on the other frame",
        "The frame the task moves (fixed when the task is made).",
    )

    def __init__(
        self,
        name: str,
        kinematics: Kinematics | RobotModel,
        frame_name: str,
        task_type: TaskType = TaskType.FRAME_POSE,
        priority: int = 0,
        weight: float = 1.0,
    ) -> None:
        if task_type not in _ROWS:
            raise InvalidInput(f"FrameTask type must be one of {[t.name for t in _ROWS]}")
        super().__init__(name, kinematics, 6, priority, weight)
        self._task_type = task_type
        self._frame_name = frame_name
        self._fid = self._robot.get_frame_id(frame_name)
        lo, hi = _ROWS[task_type]
        self._mask[:] = False
        self._mask[lo:hi] = True
        self._set_rows(np.flatnonzero(self._mask))
        current = self._kin.frame_placement(self._fid)
        # (position, rotation) replaced as one object: a target set from another thread
        # is never seen half written. Both are the task's own C-ordered copies.
        self._target = (_own(current.translation), _own(current.rotation))
        self._spec_revision = -1
        self._spec: tuple[tuple, tuple] = ((), ())

    @property
    def frame_id(self) -> int:
        """Pinocchio index of the controlled frame."""
        return self._fid

    def set_position_mask(self, mask: object) -> None:
        """Which world axes (x, y, z) of the position are controlled (1) or free (0)."""
        if self._task_type == TaskType.FRAME_ORIENTATION:
            raise InvalidInput(f"task {self.name!r} controls no position")
        self._set_mask(0, mask)  # type: ignore[arg-type]

    def set_orientation_mask(self, mask: object) -> None:
        """Which world rotation axes (x, y, z) are controlled (1) or free (0)."""
        if self._task_type == TaskType.FRAME_POSITION:
            raise InvalidInput(f"task {self.name!r} controls no orientation")
        self._set_mask(3, mask)  # type: ignore[arg-type]

    def set_target_pose(self, pose: object, rotation: object | None = None) -> None:
        """Set the target pose as SE3 / 4x4, or as ``(position, rotation)`` [m]."""
        if rotation is None:
            T = as_se3(pose, f"{self.name} target pose")
            self._target = (_own(T.translation), _own(T.rotation))
        else:
            p = check_translation(pose, f"{self.name} target position")
            R = check_rotation(rotation, f"{self.name} target rotation")
            self._target = (_own(p), _own(R))

    def set_target_position(self, position: object) -> None:
        """Set the target position in world coordinates [m]."""
        p = check_translation(position, f"{self.name} target position")
        self._target = (_own(p), self._target[1])

    def set_target_orientation(self, rotation: object) -> None:
        """Set the target orientation as a 3x3 rotation matrix (world)."""
        R = check_rotation(rotation, f"{self.name} target rotation")
        self._target = (self._target[0], _own(R))

    @property
    def target_pose(self) -> pin.SE3:
        """The target pose ``T_world_target``."""
        p, R = self._target
        return pin.SE3(R, p)

    @property
    def current_position(self) -> np.ndarray:
        """Frame position in the cache's current configuration [m]."""
        return self._kin.frame_placement(self._fid).translation.copy()

    @property
    def current_orientation(self) -> np.ndarray:
        """Frame rotation matrix in the cache's current configuration."""
        return self._kin.frame_placement(self._fid).rotation.copy()

    def _live(self) -> tuple[np.ndarray, np.ndarray, tuple[tuple, tuple]]:
        """The cache's live joint placements and joint Jacobian, and the frame's spec."""
        kin = self._kin
        oMi = kin.joint_placements()  # (brings the cache's Data up to date first)
        if self._spec_revision != kin.robot.revision:
            self._spec = self._frame_spec()
        return oMi, kin.joint_jacobians_view(), self._spec

    def _compute(self, J: np.ndarray, error: np.ndarray) -> None:
        """One compiled call on the cache's live joint placements and joint Jacobian."""
        oMi, Jw, (frame, columns) = self._live()
        frame_error_jacobian(oMi, Jw, frame, columns, self._target, J, error)

    def override_with_present_error(self) -> None:
        """The pose error at the cache's configuration as the override (no Jacobian)."""
        oMi, _, (frame, _) = self._live()
        self._fresh = False
        frame_error(oMi, frame, self._target, self._error)
        self.override_with_current_error()

    def write_rows(self, J: np.ndarray, xdot: np.ndarray) -> None:
        """The masked rows and task velocity, scaled by ``sqrt(weight)``, in one compiled call.

        The same numbers as the base class's path (``_compute``, masking, velocity).
        """
        self._fresh = False
        oMi, Jw, spec = self._live()
        rows, override = self._rows_for(J, xdot)
        tv = self._target_velocity
        frame_rows(
            oMi, Jw, spec, self._target, (rows, self._excluded_cols),
            (self._gain, self._root),
            (
                self._J, self._error, NO_VALUES if override is None else override,
                NO_VALUES if tv is None else tv,
            ),
            J, xdot,
        )  # fmt: skip

    def _frame_spec(self) -> tuple[tuple, tuple]:
        """The frame's parent joint and placement in it, and the Jacobian's columns."""
        model = self._kin.model
        f = model.frames[self._fid]
        joint = int(f.parentJoint)
        frame = (joint, _own(f.placement.rotation), _own(f.placement.translation))
        self._spec_revision = self._kin.robot.revision
        return frame, (support_columns(model, joint), jacobian_columns(model))
