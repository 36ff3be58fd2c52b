"""Motion-limits profiles: per-joint velocity, acceleration and jerk limits from a file.

A URDF gives velocity limits only; a real controller also bounds acceleration and jerk
(the Franka Panda's rejects a command stream whose 1 ms finite differences exceed them).
A profile is a YAML or JSON file::

    joints:
      panda_joint1: {velocity: 2.175, acceleration: 15.0, jerk: 7500.0}
      ...

Every key is optional per joint (a joint or a field left out keeps the robot's value;
jerk has none on the robot). A joint with several velocity coordinates (a floating
base) takes a list of that many values. The shipped Panda has one:
``robots/panda/motion_limits.yaml``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import _validate
from ..errors import InvalidInput, JointNotFound, MalformedDescription, RobotFileNotFound
from ..model import RobotModel, check_robot, joints
from ..model.loading import check_path

__all__ = ["MotionLimits", "load_motion_limits"]

_FIELDS = ("velocity", "acceleration", "jerk")


def coordinate_names(robot: RobotModel) -> list[str]:
    """A name per velocity coordinate: the joint's, with ``[k]`` for multi-DoF joints."""
    return joints.coordinate_names(robot.joint_infos, robot.nv)


@dataclass(frozen=True)
class MotionLimits:
    """Per-joint motion limits of a robot, one entry per velocity coordinate (size nv).

    Attributes:
        names: Name of each velocity coordinate (the joint's name; ``name[k]`` for the
            coordinates of a multi-DoF joint).
        velocity: Velocity limits [rad/s or m/s].
        acceleration: Acceleration limits [rad/s^2 or m/s^2].
        jerk: Jerk limits [rad/s^3 or m/s^3] (``inf`` where none is known).
    """

    names: tuple[str, ...]
    velocity: np.ndarray
    acceleration: np.ndarray
    jerk: np.ndarray

    @classmethod
    def of_robot(cls, robot: RobotModel) -> MotionLimits:
        """The robot's own velocity and acceleration limits, no jerk limits.

        Raises:
            InvalidInput: ``robot`` is not a :class:`RobotModel`.
        """
        check_robot(robot)
        return cls(
            tuple(coordinate_names(robot)),
            robot.get_velocity_limits(),
            robot.get_acceleration_limits(),
            np.full(robot.nv, np.inf),
        )

    @classmethod
    def from_file(cls, robot: RobotModel, path: str | os.PathLike[str]) -> MotionLimits:
        """Read a profile (YAML, or JSON for a ``.json`` file) for ``robot``.

        Args:
            robot: The robot the profile is for.
            path: The profile file.

        Raises:
            RobotFileNotFound: No such file.
            MalformedDescription: Not valid YAML/JSON, or not the profile's layout.
            JointNotFound: A joint the robot does not have (the closest names listed).
            InvalidInput: A value that is not a number > 0; ``robot`` not a robot or
                ``path`` not a path.
        """
        data = _read(check_path(path, "path"))
        joints = data.get("joints") if isinstance(data, dict) else None
        if not isinstance(joints, dict):
            raise MalformedDescription(str(path), "expected a mapping 'joints: {name: {...}}'")
        limits = cls.of_robot(robot)
        arrays = {"velocity": limits.velocity, "acceleration": limits.acceleration}
        arrays["jerk"] = limits.jerk
        by_name = {info.name: info for info in robot.joint_infos if info.nv > 0}
        for name, entry in joints.items():
            info = by_name.get(str(name))
            if info is None:
                raise JointNotFound(str(name), by_name)
            unknown = sorted(set(entry) - set(_FIELDS)) if isinstance(entry, dict) else None
            if unknown is None or unknown:
                raise MalformedDescription(
                    str(path),
                    f"joint {name!r}: expected a mapping with keys among {_FIELDS}"
                    + (f", got {unknown}" if unknown else f", got {entry!r}"),
                )
            for field, value in entry.items():
                what = f"{name}.{field}"
                arrays[field][info.idx_v : info.idx_v + info.nv] = _values(value, info.nv, what)
        return limits

    def apply_to(self, robot: RobotModel) -> None:
        """Set the robot's velocity and acceleration limits to these.

        The solver's joint-limit box (and every solver on the robot) then uses them.

        Raises:
            ShapeError: The limits are not of the robot's size.
        """
        robot.set_velocity_limits(self.velocity)
        robot.set_acceleration_limits(self.acceleration)


def _read(path: Path) -> Any:
    if not path.is_file():
        raise RobotFileNotFound(str(path))
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise MalformedDescription(str(path), str(exc)) from None
    import yaml  # PyYAML (a dependency of xacro)

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise MalformedDescription(str(path), str(exc)) from None


def _values(value: object, n: int, what: str) -> np.ndarray:
    """``n`` limits (> 0) from a number, or a list of ``n`` numbers."""
    arr = np.atleast_1d(_validate.as_floats(value, what, (n,)))
    if arr.shape == (1,) and n > 1:
        arr = np.full(n, arr[0])
    if arr.shape != (n,) or not np.all(arr > 0) or np.isnan(arr).any():
        raise InvalidInput(
            f"{what} must be {n} number(s) > 0, got {value!r}", what=what, value=value
        )
    return arr


def load_motion_limits(robot: RobotModel, path: str | os.PathLike[str]) -> MotionLimits:
    """Read a motion-limits profile and apply its velocity and acceleration limits.

    One call for a robot with a shipped profile::

        limits = stackik.load_motion_limits(robot, "robots/panda/motion_limits.yaml")
        limiter = stackik.JointMotionLimiter.from_limits(robot, 0.001, limits)

    Args:
        robot: The robot; its velocity and acceleration limits are set from the file.
        path: The profile (YAML, or JSON for ``.json``).

    Returns:
        The limits (velocity, acceleration and jerk per velocity coordinate).

    Raises:
        RobotFileNotFound, MalformedDescription, JointNotFound, InvalidInput: See
            :meth:`MotionLimits.from_file`.
    """
    limits = MotionLimits.from_file(robot, path)
    limits.apply_to(robot)
    return limits
