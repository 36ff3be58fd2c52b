"""Closed-form inverse kinematics for the 6R arm families that have one.

The families are recognised from the joint lines of the chain between two frames of
any description (no DH table is entered by hand) and verified against Pinocchio at load:

* ``ur``: UR-type arms, axes 2, 3 and 4 parallel, axes 5 and 6 meeting
  (:mod:`.ur`);
* ``opw``: ortho-parallel arms with a spherical wrist, in the OPW parameterisation of
  Brandstötter et al. 2014 (:mod:`.opw`);
* ``spherical``: spherical-wrist arms in general (Pieper's decoupling; :mod:`.spherical`).

Each solver returns every branch of a pose (up to 8) with angles in ``(-pi, pi]``.
:func:`detect` says which family applies to a chain and why the others do not;
:func:`analytic_ik` does the same for a frame of a :class:`~stackik.RobotModel`.
Global IK (``KinematicsSolver.find_configs``) uses the detected solver automatically.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model import check_robot
from .base import MAX_BRANCHES, AnalyticSolver
from .detect import FAMILIES, AnalyticDetection, detect, verify
from .geometry import ChainGeometry, wrap_angles
from .opw import OPWSolver
from .spherical import SphericalSolver
from .ur import URSolver

if TYPE_CHECKING:
    from ..model import RobotModel

__all__ = [
    "FAMILIES",
    "MAX_BRANCHES",
    "AnalyticDetection",
    "AnalyticSolver",
    "ChainGeometry",
    "OPWSolver",
    "SphericalSolver",
    "URSolver",
    "analytic_ik",
    "detect",
    "verify",
    "wrap_angles",
]


def analytic_ik(
    robot: RobotModel, frame_name: str, base_frame: str | None = None
) -> AnalyticDetection:
    """Which closed-form solver applies to ``frame_name`` of a robot, and why not.

    Args:
        robot: The robot description.
        frame_name: Tip frame.
        base_frame: Base frame of the chain (``None``: the world).

    Returns:
        An :class:`AnalyticDetection`: ``.solver`` (with ``.family`` and
        ``.parameters``) or ``None``, and ``.reasons`` per family.

    Raises:
        FrameNotFound: Unknown frame.
    """
    check_robot(robot)
    return detect(robot.model, frame_name, base_frame)
