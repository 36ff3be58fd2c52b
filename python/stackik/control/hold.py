"""Holding a stopped robot in place while it gives way to obstacles.

When the watchdog of a :class:`~stackik.control.ControlLoop` has brought the robot to
rest and the solver watches collisions, the loop keeps solving: every task is pulled
back to the value it had where the robot stopped, so a moving obstacle pushes the arm
aside (the collision constraint's rows) and the arm returns when it has passed. A
:class:`TaskHold` keeps what that takes: each active task's error at the stop
configuration, and the target velocities it suspends.
"""

from __future__ import annotations

import numpy as np

from ..solver import KinematicsSolver
from ..tasks import Task

__all__ = ["TaskHold"]


class TaskHold:
    """Each active task's error at the hold configuration; their target velocities.

    The task velocity while holding is ``gain (e(q) - e(q_hold))``: zero at ``q_hold``
    (to the last bit: the same numbers), and pulling each task back to its value at
    ``q_hold`` with the task's own gain and Jacobian. A target velocity (feed-forward)
    would make the held robot move: it is suspended and put back by :meth:`release`.

    Args:
        solver: The loop's solver; its kinematics are left at ``q_hold``.
        q_hold: The configuration to hold (size nq; the loop's own, valid).
    """

    def __init__(self, solver: KinematicsSolver, q_hold: np.ndarray) -> None:
        solver.kinematics.set_unchecked(q_hold)
        self._solver = solver
        self._held: dict[int, tuple[Task, np.ndarray, np.ndarray | None]] = {}
        for task in solver.tasks:
            if not task.active:
                continue
            task.update()
            velocity = task.target_velocity
            task.clear_target_velocity()
            self._held[id(task)] = (task, task.get_error(), velocity)

    def pull(self) -> None:
        """Make each active task's error override (its present error) relative to the hold.

        Call after every active task got its present error as its override
        (:meth:`~stackik.tasks.Task.override_with_present_error`). A task activated, or
        given other rows, since the hold began is held where it is (a zero override).
        """
        for task in self._solver.tasks:
            present = task.error_override
            if not task.active or present is None:
                continue
            held = self._held.get(id(task))
            if held is not None and held[0] is task and held[1].shape == present.shape:
                task.set_error_override(present - held[1])
            else:
                task.set_error_override(np.zeros_like(present))

    def release(self) -> None:
        """Clear the error overrides and put the suspended target velocities back."""
        for task in self._solver.tasks:
            task.clear_error_override()
        for task, _, velocity in self._held.values():
            if velocity is not None:
                task.set_target_velocity(velocity)
        self._held = {}
