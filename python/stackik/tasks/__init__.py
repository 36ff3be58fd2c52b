"""Task families: one module per family, each a registered subclass of ``Task`` (base.py).

Tasks read a :class:`~stackik.model.kinematics.Kinematics` cache and write their rows
into the velocity engine's stacked buffers; they never run forward kinematics and never
call a solver. Imports: NumPy, Pinocchio, ``stackik.model``, ``stackik.sns`` (for
``TaskSolveMode`` only) and the package's helpers.

A new family is one new module with a ``@register_task`` class and one import line here.
"""

from .base import Task, TaskType, register_task, task_families
from .com import COMTask
from .frame import FrameTask
from .joint import JointTask, MultiJointTask
from .posture import PostureTask
from .relative import AbsoluteFrameTask, RelativeFrameTask

__all__ = [
    "AbsoluteFrameTask",
    "COMTask",
    "FrameTask",
    "JointTask",
    "MultiJointTask",
    "PostureTask",
    "RelativeFrameTask",
    "Task",
    "TaskType",
    "register_task",
    "task_families",
]
