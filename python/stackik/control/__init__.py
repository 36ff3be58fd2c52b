"""Control: the joint-level motion limiter and the fixed-rate teleoperation loop.

- ``limits.py``: :class:`MotionLimits`, motion-limits profiles (:func:`load_motion_limits`).
- ``limiter.py``: :class:`JointMotionLimiter` (ruckig, jerk limits, position guard),
  :class:`JointCommand`, seed 003's :func:`joint_callback`.
- ``targets.py``: targets checked in the caller's thread, published whole.
- ``timing.py``: the absolute schedule, sleep-then-spin, OS scheduling, :class:`LoopStats`.
- ``loop.py``: :class:`ControlLoop`, :class:`LoopState`.

Imports: the solver facade and everything below it; nothing above (``cli``).
See ``docs/teleop.md``.
"""

from .limiter import JointCommand, JointMotionLimiter, joint_callback
from .limits import MotionLimits, load_motion_limits
from .loop import ControlLoop, LoopState
from .timing import LoopStats

__all__ = [
    "ControlLoop",
    "JointCommand",
    "JointMotionLimiter",
    "LoopState",
    "LoopStats",
    "MotionLimits",
    "joint_callback",
    "load_motion_limits",
]
