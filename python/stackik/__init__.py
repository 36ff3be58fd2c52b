"""stackik: prioritized (stack-of-tasks) inverse kinematics with the SNS method on Pinocchio.

The public API is re-exported here; see the README and ``docs/`` for a tour.
"""

from ._version import __version__
from .errors import (
    CollisionGeometryNotFound,
    FrameNotFound,
    InvalidBounds,
    InvalidInput,
    InvalidTransform,
    JointNotFound,
    MalformedDescription,
    MeshNotFound,
    NameNotFound,
    NonFiniteInput,
    NotWithinLimits,
    RobotFileNotFound,
    RobotLoadError,
    ShapeError,
    StackIKError,
    TaskNotFound,
)
from .global_ik import BatchIKOptions, BranchFlags
from .model import ReferenceFrame, RobotModel
from .position_ik import PositionIKOptions, PositionStepOptions, ResolutionMethod, TaskTarget
from .results import PathResult, PositionIKResult, SolverStatus, VelocitySolverResult
from .sns import TaskSolveMode
from .solver import KinematicsSolver, Problem
from .spatial import (
    Rt,
    as_se3,
    clamp_configuration,
    compute_pose_error,
    limit_task_velocity,
    normalize_quaternion,
    q2r,
    r2q,
)
from .tasks import (
    AbsoluteFrameTask,
    COMTask,
    FrameTask,
    JointTask,
    MultiJointTask,
    PostureTask,
    RelativeFrameTask,
    Task,
    TaskType,
)

__all__ = [
    "AbsoluteFrameTask",
    "BatchIKOptions",
    "BranchFlags",
    "COMTask",
    "CollisionGeometryNotFound",
    "FrameNotFound",
    "FrameTask",
    "InvalidBounds",
    "InvalidInput",
    "InvalidTransform",
    "JointNotFound",
    "JointTask",
    "KinematicsSolver",
    "MalformedDescription",
    "MeshNotFound",
    "MultiJointTask",
    "NameNotFound",
    "NonFiniteInput",
    "NotWithinLimits",
    "PathResult",
    "PositionIKOptions",
    "PositionIKResult",
    "PositionStepOptions",
    "PostureTask",
    "Problem",
    "ReferenceFrame",
    "RelativeFrameTask",
    "ResolutionMethod",
    "RobotFileNotFound",
    "RobotLoadError",
    "RobotModel",
    "Rt",
    "ShapeError",
    "SolverStatus",
    "StackIKError",
    "Task",
    "TaskNotFound",
    "TaskSolveMode",
    "TaskTarget",
    "TaskType",
    "VelocitySolverResult",
    "__version__",
    "as_se3",
    "clamp_configuration",
    "compute_pose_error",
    "limit_task_velocity",
    "normalize_quaternion",
    "q2r",
    "r2q",
]
