"""Holding a stopped robot in place while it gives way to obstacles.

When the watchdog of a :class:`~stackik.control.ControlLoop` has brought the robot to
rest and the solver watches collisions, the loop keeps solving: every task is pulled
back to the value it had where the robot stopped, so a moving obstacle pushes the arm
aside (the collision constraint's rows) and the arm returns when it has passed. A
:class:`TaskHold` keeps what that takes: the configuration held and the target
velocities it suspends.
"""

from __future__ import annotations

import numpy as np

from ..solver import KinematicsSolver
from ..tasks import Task

__all__ = ["TaskHold"]


class TaskHold:
    """The configuration a stopped robot holds, and the target velocities suspended.

    While holding, each active task's velocity is ``gain (e(q) - e(q_hold))``: its
    error at the present configuration less its error at ``q_hold``, both against its
    target of the tick and on its rows of the tick (a target or mask set on the task
    itself meanwhile does not move the held robot). That is zero at ``q_hold`` (the
    same numbers: the command does not change by a bit), and pulls the task back to its
    value at ``q_hold`` with its own gain. A target velocity (feed-forward) would make
    the held robot move: it is suspended, also when set during the hold, and the latest
    one is put back by :meth:`release`. Each pull evaluates the tasks at ``q_hold`` (one
    kinematics pass more per tick, while holding only).

    Args:
        solver: The loop's solver.
        q_hold: The configuration to hold (size nq; the loop's own, valid).
    """

    def __init__(self, solver: KinematicsSolver, q_hold: np.ndarray) -> None:
        self._solver = solver
        self._q_hold = np.array(q_hold, dtype=float)
        self._velocities: dict[int, tuple[Task, np.ndarray]] = {}
        self._suspend()

    def _suspend(self) -> None:
        """Keep and clear every task's target velocity."""
        for task in self._solver.tasks:
            velocity = task.target_velocity
            if velocity is not None:
                self._velocities[id(task)] = (task, velocity)
                task.clear_target_velocity()

    def pull(self, q: np.ndarray) -> None:
        """Set every active task's error override to ``e(q) - e(q_hold)``.

        Args:
            q: The present configuration (size nq); the solver's kinematics are left
                at it.
        """
        self._suspend()
        kin = self._solver.kinematics
        tasks = [task for task in self._solver.tasks if task.active]
        kin.set_unchecked(self._q_hold)
        held = []
        for task in tasks:
            task.update()
            held.append(task.get_error())  # (a copy)
        kin.set_unchecked(q)
        for task, error in zip(tasks, held, strict=True):
            task.override_with_present_error()
            present = task.error_override
            if present is not None:
                task.set_error_override(present - error)

    def release(self) -> None:
        """Clear the error overrides and put the suspended target velocities back."""
        for task in self._solver.tasks:
            task.clear_error_override()
        for task, velocity in self._velocities.values():
            task.set_target_velocity(velocity)
        self._velocities = {}
