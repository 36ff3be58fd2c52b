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
from .model import ReferenceFrame, RobotModel
from .results import SolverStatus, VelocitySolverResult
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

__all__ = [
    "CollisionGeometryNotFound",
    "FrameNotFound",
    "InvalidBounds",
    "InvalidInput",
    "InvalidTransform",
    "JointNotFound",
    "MalformedDescription",
    "MeshNotFound",
    "NameNotFound",
    "NonFiniteInput",
    "NotWithinLimits",
    "ReferenceFrame",
    "RobotFileNotFound",
    "RobotLoadError",
    "RobotModel",
    "Rt",
    "ShapeError",
    "SolverStatus",
    "StackIKError",
    "TaskNotFound",
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
