"""Robot descriptions: loading URDF/XACRO/SRDF into Pinocchio, kinematics, dynamics, collision.

What each module holds (and it imports only NumPy, Pinocchio, coal, xacro and the
package's ``errors``, ``spatial`` and ``_validate`` modules; nothing above ``model``):

- ``robot.py``: :class:`RobotModel`, the shareable description and its EmbodiK API.
- ``loading.py``: files, XACRO, mesh paths, SRDF parsing.
- ``building.py``: Pinocchio models from URDF text, reduction, limits, mimic ranges.
- ``joints.py``: :class:`JointKind`, the one place that knows Pinocchio joint types.
- ``mimic.py``: ``<mimic>`` declarations, the fold/keep layouts, the load order.
- ``kinematics.py``: :class:`Kinematics`, one owner's kinematics cache (own ``Data``).
- ``dynamics.py``: RNEA, CRBA, gravity and Coriolis terms in a private ``Data``.
- ``collision.py``: :class:`CollisionModel` (geometry and pairs, shared) and
  :class:`CollisionState` (one owner's ``GeometryData``).
- ``serialization.py``: picklers for Pinocchio models and geometry that round-trip
  mimic joints and survive a second copy of coal in the process (registered here).
"""

from . import serialization  # noqa: F401  (registers the Pinocchio picklers)
from .building import DEFAULT_ACCELERATION_LIMIT, DEFAULT_EFFORT_LIMIT, DEFAULT_VELOCITY_LIMIT
from .collision import CollisionModel, CollisionState
from .joints import JointInfo, JointKind
from .kinematics import Kinematics, as_kinematics
from .robot import ReferenceFrame, RobotModel, as_reference_frame, check_robot

__all__ = [
    "DEFAULT_ACCELERATION_LIMIT",
    "DEFAULT_EFFORT_LIMIT",
    "DEFAULT_VELOCITY_LIMIT",
    "CollisionModel",
    "CollisionState",
    "JointInfo",
    "JointKind",
    "Kinematics",
    "ReferenceFrame",
    "RobotModel",
    "as_kinematics",
    "as_reference_frame",
    "check_robot",
]
