"""Task families: one module per family, each subclassing :class:`~stackik.tasks.base.Task`."""

from .base import Task, TaskType
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
]
