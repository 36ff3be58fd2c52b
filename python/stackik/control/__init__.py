"""Control: the joint-level motion limiter and the fixed-rate teleoperation loop.

- ``limits.py``: :class:`MotionLimits`, motion-limits profiles (:func:`load_motion_limits`).
- ``limiter.py``: :class:`JointMotionLimiter` (ruckig, jerk limits, position guard),
  :class:`JointCommand`, seed 003's :func:`joint_callback`.

Imports: the solver facade and everything below it; nothing above (``cli``).
See ``docs/teleop.md``.
"""

from .limiter import JointCommand, JointMotionLimiter, joint_callback
from .limits import MotionLimits, load_motion_limits

__all__ = [
    "JointCommand",
    "JointMotionLimiter",
    "MotionLimits",
    "joint_callback",
    "load_motion_limits",
]
