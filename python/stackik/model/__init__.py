"""Robot models: loading URDF/XACRO/SRDF into Pinocchio, kinematics, dynamics, collision."""

from .robot import (
    DEFAULT_ACCELERATION_LIMIT,
    DEFAULT_EFFORT_LIMIT,
    DEFAULT_VELOCITY_LIMIT,
    ReferenceFrame,
    RobotModel,
)

__all__ = [
    "DEFAULT_ACCELERATION_LIMIT",
    "DEFAULT_EFFORT_LIMIT",
    "DEFAULT_VELOCITY_LIMIT",
    "ReferenceFrame",
    "RobotModel",
]
