"""stackik: prioritized (stack-of-tasks) inverse kinematics with the SNS method on Pinocchio.

The public API is re-exported here; see the README and ``docs/`` for a tour.
"""

from . import robots
from ._version import __version__
from .constraints.collision import CollisionTuningMode
from .control import (
    ControlLoop,
    JointCommand,
    JointMotionLimiter,
    LoopState,
    LoopStats,
    MotionLimits,
    joint_callback,
    load_motion_limits,
)
from .engine import Problem, VelocityEngine
from .errors import (
    CollisionGeometryNotFound,
    CollisionMarginWarning,
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
from .ik.batch import BatchIKOptions
from .ik.branches import BranchFlags
from .ik.position import PositionIKOptions, PositionStepOptions, ResolutionMethod, TaskTarget
from .model import JointKind, Kinematics, ReferenceFrame, RobotModel
from .results import (
    BatchIKResult,
    CollisionDebugInfo,
    FindConfigsResult,
    PathResult,
    PositionIKResult,
    SolverStatus,
    VelocitySolverResult,
)
from .sns import TaskSolveMode
from .solver import KinematicsSolver, warmup, warmup_in_background
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
from .utils import SE3, SO3, PoseData

__all__ = [
    "SE3",
    "SO3",
    "AbsoluteFrameTask",
    "BatchIKOptions",
    "BatchIKResult",
    "BranchFlags",
    "COMTask",
    "CollisionDebugInfo",
    "CollisionGeometryNotFound",
    "CollisionMarginWarning",
    "CollisionTuningMode",
    "ControlLoop",
    "FindConfigsResult",
    "FrameNotFound",
    "FrameTask",
    "InvalidBounds",
    "InvalidInput",
    "InvalidTransform",
    "JointCommand",
    "JointKind",
    "JointMotionLimiter",
    "JointNotFound",
    "JointTask",
    "Kinematics",
    "KinematicsSolver",
    "LoopState",
    "LoopStats",
    "MalformedDescription",
    "MeshNotFound",
    "MotionLimits",
    "MultiJointTask",
    "NameNotFound",
    "NonFiniteInput",
    "NotWithinLimits",
    "PathResult",
    "PoseData",
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
    "VelocityEngine",
    "VelocitySolverResult",
    "__version__",
    "as_se3",
    "clamp_configuration",
    "compute_pose_error",
    "joint_callback",
    "limit_task_velocity",
    "load_motion_limits",
    "normalize_quaternion",
    "q2r",
    "r2q",
    "robots",
    "warmup",
    "warmup_in_background",
]
