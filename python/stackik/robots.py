"""Real robots in one line: the descriptions of the ``example-robot-data`` package.

``pip install stackik[robots]`` installs `example-robot-data
<https://github.com/Gepetto/example-robot-data>`_: URDF, SRDF and mesh files of about
forty real robots (arms, hands, humanoids, quadrupeds, mobile manipulators, aerial
robots). :func:`load` builds a :class:`~stackik.RobotModel` of one of them with the
options it needs: its meshes' package folder, its SRDF's disabled collision pairs when
it ships one, and a floating base for robots that walk, fly or roll freely::

    import stackik

    panda = stackik.robots.load("panda")            # real meshes, SRDF pairs
    talos = stackik.robots.load("talos")            # floating base
    print(stackik.robots.available())               # every name

The PyPI wheel of ``example-robot-data`` ships data only (no Python module), under
``<prefix>/share/example-robot-data/robots``; it is found through the installed
distribution's file list, then the ``example_robot_data`` module of a ROS or conda
install, then ``<sys.prefix>/share``. The environment variable
``STACKIK_ROBOT_DATA`` names the ``robots`` folder explicitly.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import RobotDataNotFound, RobotNotFound
from .model import RobotModel

__all__ = ["ROBOTS", "RobotInfo", "available", "data_dir", "info", "load"]

#: The distribution that ships the files, and the extra that installs it.
DISTRIBUTION = "example-robot-data"
EXTRA = "stackik[robots]"
#: Environment variable naming the ``robots`` folder (overrides every search).
ENV_VAR = "STACKIK_ROBOT_DATA"
_SHARE = ("share", "example-robot-data", "robots")


@dataclass(frozen=True)
class RobotInfo:
    """One robot of :data:`ROBOTS`.

    Attributes:
        name: The name :func:`load` takes.
        kind: ``"arm"``, ``"hand"``, ``"humanoid"``, ``"biped"``, ``"quadruped"``,
            ``"mobile manipulator"``, ``"aerial"`` or ``"toy"``.
        urdf: The URDF, relative to the ``robots`` folder.
        srdf: Its SRDF (disabled collision pairs), relative to that folder, or None.
        floating_base: Whether :func:`load` adds a free-flyer root joint.
        description: What it is, in a few words.
    """

    name: str
    kind: str
    urdf: str
    srdf: str | None
    floating_base: bool
    description: str


def _r(
    name: str, kind: str, urdf: str, srdf: str | None, floating: bool, text: str
) -> tuple[str, RobotInfo]:
    return name, RobotInfo(name, kind, urdf, srdf, floating, text)


_UR = "ur_description/urdf"
_TALOS = "talos_data/robots"
_TALOS_SRDF = "talos_data/srdf/talos.srdf"
_ANYMAL = "anymal_b_simple_description"

#: Every robot :func:`load` offers, by name.
ROBOTS: dict[str, RobotInfo] = dict(
    [
        # -- arms -------------------------------------------------------------------------
        _r("panda", "arm", "panda_description/urdf/panda.urdf",
           "panda_description/srdf/panda.srdf", False,
           "Franka Emika Panda, 7 joints and a two-finger gripper (one mimic joint)"),
        _r("ur3", "arm", f"{_UR}/ur3_robot.urdf", None, False, "Universal Robots UR3"),
        _r("ur3_gripper", "arm", f"{_UR}/ur3_gripper.urdf",
           "ur_description/srdf/ur3_gripper.srdf", False, "UR3 with a gripper"),
        _r("ur3_limited", "arm", f"{_UR}/ur3_joint_limited_robot.urdf", None, False,
           "UR3 with joint limits of +-pi"),
        _r("ur5", "arm", f"{_UR}/ur5_robot.urdf", "ur_description/srdf/ur5.srdf", False,
           "Universal Robots UR5"),
        _r("ur5_gripper", "arm", f"{_UR}/ur5_gripper.urdf",
           "ur_description/srdf/ur5_gripper.srdf", False, "UR5 with a gripper"),
        _r("ur5_limited", "arm", f"{_UR}/ur5_joint_limited_robot.urdf",
           "ur_description/srdf/ur5_joint_limited_robot.srdf", False,
           "UR5 with joint limits of +-pi"),
        _r("ur10", "arm", f"{_UR}/ur10_robot.urdf", None, False, "Universal Robots UR10"),
        _r("ur10_limited", "arm", f"{_UR}/ur10_joint_limited_robot.urdf", None, False,
           "UR10 with joint limits of +-pi"),
        _r("kinova", "arm", "kinova_description/robots/kinova.urdf",
           "kinova_description/srdf/kinova.srdf", False,
           "Kinova Jaco arm with a three-finger hand"),
        _r("xarm7", "arm", "xarm_description/urdf/xarm7.urdf",
           "xarm_description/srdf/xarm7.srdf", False, "UFactory xArm 7"),
        _r("z1", "arm", "z1_description/urdf/z1.urdf", "z1_description/srdf/z1.srdf", False,
           "Unitree Z1"),
        _r("so100", "arm", "so_arm_description/urdf/so100.urdf", None, False,
           "SO-100, a low-cost 5-joint arm with a gripper"),
        _r("so101", "arm", "so_arm_description/urdf/so101.urdf", None, False,
           "SO-101, a low-cost 5-joint arm with a gripper"),
        # Talos' SRDF names links of the whole robot: not for the arm alone.
        _r("talos_arm", "arm", f"{_TALOS}/talos_left_arm.urdf", None, False,
           "the left arm of PAL Robotics' Talos, fixed at the shoulder"),
        _r("baxter", "arm", "baxter_description/urdf/baxter.urdf", None, False,
           "Rethink Robotics Baxter, two 7-joint arms on a fixed torso"),
        _r("finger_edu", "arm", "finger_edu_description/robots/finger_edu.urdf",
           "finger_edu_description/srdf/finger_edu.srdf", False,
           "Open Dynamic Robot Initiative's three-joint finger"),
        # -- hands ------------------------------------------------------------------------
        _r("allegro_right_hand", "hand", "allegro_hand_description/urdf/allegro_right_hand.urdf",
           None, False, "Wonik Allegro hand, right, 16 joints"),
        _r("allegro_left_hand", "hand", "allegro_hand_description/urdf/allegro_left_hand.urdf",
           None, False, "Wonik Allegro hand, left, 16 joints"),
        # -- humanoids and bipeds (floating base) -----------------------------------------
        _r("talos", "humanoid", f"{_TALOS}/talos_reduced.urdf", _TALOS_SRDF, True,
           "PAL Robotics Talos, reduced model (no fingers)"),
        _r("talos_box", "humanoid", f"{_TALOS}/talos_reduced_box.urdf", _TALOS_SRDF, True,
           "Talos, reduced, with box collision shapes"),
        _r("talos_full", "humanoid", f"{_TALOS}/talos_full_v2.urdf", _TALOS_SRDF, True,
           "Talos with its grippers"),
        _r("talos_full_box", "humanoid", f"{_TALOS}/talos_full_v2_box.urdf", _TALOS_SRDF,
           True, "Talos with its grippers, box collision shapes"),
        _r("romeo", "humanoid", "romeo_description/urdf/romeo.urdf",
           "romeo_description/srdf/romeo.srdf", True, "Aldebaran Romeo"),
        _r("icub", "humanoid", "icub_description/robots/icub.urdf",
           "icub_description/srdf/icub.srdf", True, "IIT iCub"),
        _r("icub_reduced", "humanoid", "icub_description/robots/icub_reduced.urdf",
           "icub_description/srdf/icub.srdf", True, "IIT iCub, reduced model"),
        _r("simple_humanoid", "humanoid", "simple_humanoid_description/urdf/simple_humanoid.urdf",
           "simple_humanoid_description/srdf/simple_humanoid.srdf", True,
           "a humanoid of simple shapes"),
        _r("simple_humanoid_classical", "humanoid",
           "simple_humanoid_description/urdf/simple_humanoid_classical.urdf",
           "simple_humanoid_description/srdf/simple_humanoid_classical.srdf", True,
           "a humanoid of simple shapes, classical joint layout"),
        _r("g1", "humanoid", "g1_description/urdf/g1_29dof_rev_1_0.urdf", None, True,
           "Unitree G1, 29 joints"),
        _r("g1_with_hands", "humanoid", "g1_description/urdf/g1_29dof_with_hand_rev_1_0.urdf",
           None, True, "Unitree G1 with its hands"),
        _r("bolt", "biped", "bolt_description/robots/bolt.urdf",
           "bolt_description/srdf/bolt.srdf", True, "Open Dynamic Robot Initiative's Bolt"),
        # -- quadrupeds (floating base) ---------------------------------------------------
        _r("anymal", "quadruped", f"{_ANYMAL}/robots/anymal.urdf", f"{_ANYMAL}/srdf/anymal.srdf",
           True, "ANYbotics ANYmal B"),
        _r("anymal_kinova", "quadruped", f"{_ANYMAL}/robots/anymal-kinova.urdf",
           f"{_ANYMAL}/srdf/anymal-kinova.srdf", True, "ANYmal B carrying a Kinova arm"),
        _r("anymal_c", "quadruped", "anymal_c_simple_description/urdf/anymal.urdf",
           "anymal_c_simple_description/srdf/anymal.srdf", True, "ANYbotics ANYmal C"),
        _r("hyq", "quadruped", "hyq_description/robots/hyq_no_sensors.urdf",
           "hyq_description/srdf/hyq.srdf", True, "IIT HyQ"),
        # solo.srdf names Solo 12's shoulder links: not for Solo 8.
        _r("solo8", "quadruped", "solo_description/robots/solo.urdf", None, True,
           "Open Dynamic Robot Initiative's Solo 8"),
        _r("solo12", "quadruped", "solo_description/robots/solo12.urdf",
           "solo_description/srdf/solo.srdf", True, "Open Dynamic Robot Initiative's Solo 12"),
        _r("a1", "quadruped", "a1_description/urdf/a1.urdf", "a1_description/srdf/a1.srdf",
           True, "Unitree A1"),
        _r("go1", "quadruped", "go1_description/urdf/go1.urdf", "go1_description/srdf/go1.srdf",
           True, "Unitree Go1"),
        _r("go2", "quadruped", "go2_description/urdf/go2.urdf", "go2_description/srdf/go2.srdf",
           True, "Unitree Go2"),
        _r("b1", "quadruped", "b1_description/urdf/b1.urdf", "b1_description/srdf/b1.srdf",
           True, "Unitree B1"),
        _r("b1_z1", "quadruped", "b1_description/urdf/b1-z1.urdf",
           "b1_description/srdf/b1-z1.srdf", True, "Unitree B1 carrying a Z1 arm"),
        _r("laikago", "quadruped", "laikago_description/urdf/laikago.urdf", None, True,
           "Unitree Laikago"),
        # -- mobile manipulators ----------------------------------------------------------
        _r("tiago", "mobile manipulator", "tiago_description/robots/tiago.urdf", None, False,
           "PAL Robotics TIAGo (base joints fixed, wheels free)"),
        _r("tiago_dual", "mobile manipulator", "tiago_description/robots/tiago_dual.urdf", None,
           False, "TIAGo with two arms"),
        _r("tiago_no_hand", "mobile manipulator", "tiago_description/robots/tiago_no_hand.urdf",
           None, False, "TIAGo without its hand"),
        _r("tiago_pro", "mobile manipulator", "tiago_pro_description/robots/tiago_pro.urdf",
           None, False, "PAL Robotics TIAGo Pro"),
        _r("pr2", "mobile manipulator", "pr2_description/urdf/pr2.urdf",
           "pr2_description/srdf/pr2.srdf", False, "Willow Garage PR2"),
        # -- aerial (floating base) -------------------------------------------------------
        _r("hector", "aerial", "hector_description/robots/quadrotor_base.urdf", None, True,
           "Hector quadrotor"),
        _r("iris", "aerial", "iris_description/robots/iris_simple.urdf", None, True,
           "3DR Iris quadrotor"),
        _r("borinot", "aerial", "borinot_description/urdf/borinot_flying_arm_2.urdf",
           "borinot_description/srdf/borinot_flying_arm_2.srdf", True,
           "Borinot hexarotor with a two-joint arm"),
        _r("hextilt", "aerial", "hextilt_description/urdf/hextilt_flying_arm_5.urdf",
           "hextilt_description/srdf/hextilt_flying_arm_5.srdf", True,
           "tilted hexarotor with a five-joint arm"),
        # -- toys -------------------------------------------------------------------------
        _r("double_pendulum", "toy", "double_pendulum_description/urdf/double_pendulum.urdf",
           None, False, "a double pendulum"),
        _r("double_pendulum_continuous", "toy",
           "double_pendulum_description/urdf/double_pendulum_continuous.urdf", None, False,
           "a double pendulum with continuous joints"),
        _r("double_pendulum_simple", "toy",
           "double_pendulum_description/urdf/double_pendulum_simple.urdf", None, False,
           "a double pendulum of simple shapes"),
        _r("asr_twodof", "toy", "asr_twodof_description/urdf/TwoDofs.urdf", None, False,
           "a planar two-joint arm"),
    ]
)  # fmt: skip


def available(kind: str | None = None) -> list[str]:
    """Names of the robots :func:`load` offers (of one ``kind`` when given), sorted.

    Listing needs nothing installed; loading needs ``pip install stackik[robots]``.
    """
    return sorted(n for n, r in ROBOTS.items() if kind is None or r.kind == kind)


def info(name: str) -> RobotInfo:
    """The :class:`RobotInfo` of a robot.

    Raises:
        RobotNotFound: Unknown name (the error lists the closest ones).
    """
    try:
        return ROBOTS[name]
    except (KeyError, TypeError):
        raise RobotNotFound(str(name), ROBOTS) from None


def _from_distribution() -> Path | None:
    """The ``robots`` folder listed in the installed distribution's files (the wheel)."""
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in dist.files or ():
        parts = f.parts
        for i in range(len(parts) - len(_SHARE) + 1):
            if parts[i : i + len(_SHARE)] == _SHARE:
                return Path(str(dist.locate_file(Path(*parts[: i + len(_SHARE)]))))
    return None


def _from_module() -> Path | None:
    """The folder named by the ``example_robot_data`` module (ROS, conda and source installs)."""
    try:
        if importlib.util.find_spec("example_robot_data") is None:
            return None
        from example_robot_data.path import (  # type: ignore[import-not-found]
            EXAMPLE_ROBOT_DATA_MODEL_DIR,
        )
    except (ImportError, ValueError):
        return None
    return Path(EXAMPLE_ROBOT_DATA_MODEL_DIR)


def _candidates() -> list[Path]:
    found = [_from_distribution(), _from_module()]
    prefixes = [sys.prefix, os.path.join(sys.prefix, "lib", "cmeel.prefix")]
    found += [Path(p, *_SHARE) for p in prefixes]
    return [p for p in found if p is not None]


def data_dir() -> Path:
    """The ``robots`` folder of the installed ``example-robot-data``.

    Raises:
        RobotDataNotFound: ``example-robot-data`` is not installed (the message names the
            extra that installs it), or ``STACKIK_ROBOT_DATA`` names no folder.
    """
    explicit = os.environ.get(ENV_VAR)
    if explicit:
        if not Path(explicit).is_dir():
            raise RobotDataNotFound(
                explicit, f"{ENV_VAR} names no folder; unset it or point it at the robots folder"
            )
        return Path(explicit)
    searched = _candidates()
    for path in searched:
        if path.is_dir():
            return path
    raise RobotDataNotFound(
        DISTRIBUTION,
        f"the {DISTRIBUTION} package is not installed: pip install '{EXTRA}' "
        f"(searched: {', '.join(str(p) for p in searched)})",
    )


def load(
    name: str,
    *,
    mimic: str = "keep",
    strict: bool = False,
    load_visuals: bool = True,
    load_collisions: bool = True,
    exact_collision_meshes: bool = False,
    floating_base: bool | None = None,
) -> RobotModel:
    """A :class:`~stackik.RobotModel` of an ``example-robot-data`` robot, meshes and all.

    The robot's mesh package folder is passed as ``package_dirs``, its SRDF's disabled
    collision pairs are applied when it ships one, and robots that walk or fly get a
    floating base (:attr:`RobotInfo.floating_base`).

    Args:
        name: One of :func:`available` (e.g. ``"panda"``, ``"ur5"``, ``"talos"``).
        mimic: Layout of mimic joints, ``"keep"`` (default, as for
            :class:`~stackik.RobotModel`) or ``"fold"``.
        strict: Refuse published faults stackik can work around (see
            :class:`~stackik.RobotModel`). Off by default: about twenty of
            ``example-robot-data``'s descriptions have inertias no rigid body has or SRDF
            groups naming links they lack, and are loaded as published.
        load_visuals: Load the visual meshes (what the viewer draws).
        load_collisions: Load the collision geometry.
        exact_collision_meshes: Keep exact collision meshes instead of convex hulls.
        floating_base: Override the robot's default floating base.

    Raises:
        RobotNotFound: Unknown name.
        RobotDataNotFound: ``example-robot-data`` is not installed
            (``pip install stackik[robots]``).
        RobotLoadError: The description failed to load (its file is named).
    """
    entry = info(name)
    root = data_dir()
    srdf = root / entry.srdf if entry.srdf is not None else None
    return RobotModel(
        root / entry.urdf,
        floating_base=entry.floating_base if floating_base is None else bool(floating_base),
        # ``package://example-robot-data/robots/...``: the package is the folder two up.
        package_dirs=[root.parent.parent],
        srdf_path=srdf,
        load_visuals=load_visuals,
        load_collisions=load_collisions,
        exact_collision_meshes=exact_collision_meshes,
        mimic=mimic,
        strict=strict,
    )
