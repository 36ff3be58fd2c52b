"""Targets handed from any thread to a control loop, checked and published atomically.

:func:`stage` checks a target in the caller's thread (typed errors for anything
invalid) and builds a :class:`Staged` record of fresh, read-only arrays; the record is
published whole (one assignment under a lock), and the loop's thread applies it to the
task. A reader therefore sees a target entirely or not at all, never half written, and
a refused target leaves the last valid one in place.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from .. import _validate
from ..errors import InvalidInput
from ..spatial import as_se3, check_rotation, check_translation
from ..tasks import (
    AbsoluteFrameTask,
    COMTask,
    FrameTask,
    MultiJointTask,
    PostureTask,
    RelativeFrameTask,
    Task,
)

__all__ = ["Staged", "stage"]


@dataclass(frozen=True)
class Staged:
    """A checked target for one task: what to set and how.

    Attributes:
        task: The task.
        kind: ``"pose"``, ``"position"``, ``"rotation"``, ``"configuration"``, ``"values"``
            or ``""`` (only a velocity).
        value: The value (read-only arrays; a pose as ``(position, rotation)``).
        velocity: The task target velocity (read-only), or None to leave it.
    """

    task: Task
    kind: str
    value: object
    velocity: np.ndarray | None

    def apply(self) -> None:
        """Set the target on the task (the loop's thread)."""
        task, value = self.task, self.value
        if self.kind == "pose":
            if isinstance(task, FrameTask):
                task.set_target_pose(*value)  # type: ignore[misc]
            else:
                task.set_target_pose(pin.SE3(value[1], value[0]))  # type: ignore[attr-defined,index]
        elif self.kind == "position":
            task.set_target_position(value)  # type: ignore[attr-defined]
        elif self.kind == "rotation":
            task.set_target_orientation(value)  # type: ignore[attr-defined]
        elif self.kind == "configuration":
            task.set_target_configuration(value)  # type: ignore[attr-defined]
        elif self.kind == "values":
            task.set_target_values(value)  # type: ignore[attr-defined]
        if self.velocity is not None:
            task.set_target_velocity(self.velocity)


def _frozen(arr: np.ndarray) -> np.ndarray:
    out = np.array(arr, dtype=float)  # a copy the caller cannot change afterwards
    out.flags.writeable = False
    return out


def _pose(target: object, what: str) -> tuple[np.ndarray, np.ndarray]:
    T = as_se3(target, what)
    return _frozen(T.translation), _frozen(T.rotation)


def _frame_value(task: FrameTask, target: object, what: str) -> tuple[str, object]:
    """A frame task takes a pose, a position (3) or a rotation (3x3)."""
    shape = _shape(target)
    if isinstance(target, pin.SE3) or shape == (4, 4):
        return "pose", _pose(target, what)
    if shape == (3,):
        return "position", _frozen(check_translation(target, what))
    if shape == (3, 3):
        return "rotation", _frozen(check_rotation(target, what))
    raise InvalidInput(
        f"{what}: a frame task takes a pose (SE3 or 4x4), a position (3) or a rotation "
        f"(3x3), got shape {shape}",
        what=what,
    )


def _shape(value: object) -> tuple[int, ...]:
    """The array shape of ``value`` (``()`` for what is no array of numbers)."""
    try:
        return tuple(np.shape(value))  # type: ignore[call-overload]
    except (TypeError, ValueError):  # ragged sequences
        return ()


def _value(task: Task, target: object, what: str) -> tuple[str, object]:
    """The kind and checked value of a target for ``task``."""
    if isinstance(task, FrameTask):
        return _frame_value(task, target, what)
    if isinstance(task, (RelativeFrameTask, AbsoluteFrameTask)):
        return "pose", _pose(target, what)
    if isinstance(task, COMTask):
        return "position", _frozen(check_translation(target, what))
    if isinstance(task, PostureTask):
        return "configuration", _frozen(task.robot.check_configuration(target, what))
    if isinstance(task, MultiJointTask):
        n = len(task.joint_names)
        values = _validate.as_floats(target, what, (n,)).reshape(-1)
        return "values", _frozen(_validate.vector(values, n, what))
    raise InvalidInput(
        f"task {task.name!r} ({type(task).__name__}) takes no target from a control loop; "
        "give a velocity, or set its target on the task",
        what=what,
    )


def stage(task: Task, target: object | None, velocity: object | None) -> Staged:
    """Check a target (and/or a task target velocity) for ``task``.

    Args:
        task: The task.
        target: A pose (``pinocchio.SE3`` or 4x4) for frame and relative tasks, a
            position (3) [m] for frame and CoM tasks, a rotation (3x3) for frame tasks,
            a configuration (nq) for a posture task, joint values for joint tasks; None
            to change only the velocity.
        velocity: Task target velocity (feed-forward, the task's full size: 6 for a pose
            [m/s; rad/s]), or None.

    Raises:
        InvalidInput: Nothing given, or a target the task does not take.
        ShapeError, NonFiniteInput, InvalidTransform: A malformed value.
    """
    what = f"{task.name} target"
    if target is None and velocity is None:
        raise InvalidInput("give a target, a velocity, or both", what="target")
    kind, value = ("", None) if target is None else _value(task, target, what)
    vel = None
    if velocity is not None:
        n = task.row_mask.size
        vel = _frozen(
            _validate.bounded_vector(velocity, n, _validate.MAX_MAGNITUDE, f"{task.name} velocity")
        )
    return Staged(task, kind, value, vel)
