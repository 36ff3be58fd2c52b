"""Generate the robot descriptions of ``robots/`` (URDF + SRDF).

Run from anywhere::

    python robots/tools/generate.py            # write all robots
    python robots/tools/generate.py --check    # only report, write nothing

Figures (DH tables, limits, masses, anthropometric fractions) and their
sources are documented in ``robots/README.md``.  The SRDFs are written afterwards by
``robots/tools/srdf.py`` (``RobotModel.compute_collision_exclusions``).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from arms6r import build_opw_arm, build_spherical_arm
from urdfgen import (
    PI,
    Joint,
    Link,
    Robot,
    box,
    cyl_x,
    cyl_y,
    cyl_z,
    sphere,
)

ROBOTS = Path(__file__).resolve().parents[1]

# --------------------------------------------------------------------------
# Franka Emika Panda: modified (Craig) DH, from Franka's published table
# --------------------------------------------------------------------------
PANDA_A = [0.0, 0.0, 0.0, 0.0825, -0.0825, 0.0, 0.088]
PANDA_D = [0.333, 0.0, 0.316, 0.0, 0.384, 0.0, 0.0]
PANDA_ALPHA = [0.0, -PI / 2, PI / 2, PI / 2, -PI / 2, PI / 2, PI / 2]
PANDA_FLANGE_D = 0.107
PANDA_HAND_YAW = -PI / 4
PANDA_TCP_Z = 0.1034
PANDA_LOWER = [-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973]
PANDA_UPPER = [2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973]
PANDA_VELOCITY = [2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61]
PANDA_EFFORT = [87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0]
# link masses (kg): links 1..7 from Gaz et al. 2019 (identified parameters);
# link0 = ~18 kg datasheet arm weight minus the moving links; hand = Franka Hand datasheet.
PANDA_MASS = [2.0, 4.970684, 0.646926, 3.228604, 3.587895, 1.225946, 1.666555, 0.735522]
PANDA_HAND_MASS = 0.73


def mdh_origin(a: float, d: float, alpha: float) -> tuple[tuple, tuple]:
    """URDF joint origin equal to RotX(alpha) TransX(a) TransZ(d) (exact for 0, +-pi/2)."""
    if alpha == 0.0:
        xyz = (a, 0.0, d)
    elif alpha == PI / 2:
        xyz = (a, -d, 0.0)
    elif alpha == -PI / 2:
        xyz = (a, d, 0.0)
    else:  # pragma: no cover - not used
        xyz = (a, -d * math.sin(alpha), d * math.cos(alpha))
    return xyz, (alpha, 0.0, 0.0)


def panda_shapes() -> list[list]:
    """Primitive collision shapes of panda link0..link7 and the hand, in their frames."""
    link0 = [cyl_z(0.09, 0.0, 0.14), box((-0.19, -0.07, 0.0), (-0.06, 0.07, 0.1))]
    link1 = [cyl_z(0.07, -0.2, 0.0), sphere(0.07)]
    link2 = [cyl_z(0.07, -0.07, 0.07), cyl_y(0.06, -0.2, -0.05)]
    link3 = [
        cyl_z(0.06, -0.14, 0.0),
        sphere(0.06),
        box((0.0, -0.05, -0.05), (0.0825, 0.05, 0.05)),
        cyl_y(0.055, -0.06, 0.06, x=0.0825),
    ]
    link4 = [cyl_z(0.055, -0.06, 0.06), cyl_y(0.055, 0.0, 0.12)]
    link5 = [
        cyl_y(0.055, -0.06, 0.06),  # wrist housing around the joint-6 axis
        cyl_z(0.04, -0.3, -0.04, x=-0.055),  # forearm, behind the notch for the hand
        box((-0.095, -0.045, -0.31), (0.06, 0.045, -0.25)),  # lower forearm towards the elbow
    ]
    link6 = [
        cyl_z(0.055, -0.05, 0.05),
        box((0.0, -0.045, -0.045), (0.088, 0.045, 0.045)),
        cyl_y(0.05, -0.05, 0.045, x=0.088),
    ]
    link7 = [cyl_z(0.045, 0.05, 0.107)]
    hand = [
        box((-0.03, -0.1, 0.0), (0.03, 0.1, 0.06)),
        box((-0.012, -0.05, 0.058), (0.012, 0.05, 0.112)),
    ]
    return [link0, link1, link2, link3, link4, link5, link6, link7, hand]


def add_panda(
    robot: Robot,
    prefix: str,
    parent: str | None = None,
    mount_xyz: tuple = (0.0, 0.0, 0.0),
    mount_rpy: tuple = (0.0, 0.0, 0.0),
    tcp_name: str | None = None,
) -> None:
    """Add a 7-DoF Panda arm (links ``{prefix}link0..8``, ``{prefix}hand``, tcp)."""
    shapes = panda_shapes()
    names = [f"{prefix}link{i}" for i in range(9)]
    for i in range(8):
        robot.add_link(Link(names[i], PANDA_MASS[i], shapes[i]))
    robot.add_link(Link(names[8]), comment="flange frame (no body)")
    if parent is not None:
        robot.add_joint(
            Joint(f"{prefix}mount_joint", parent, names[0], mount_xyz, mount_rpy, kind="fixed")
        )
    for i in range(7):
        xyz, rpy = mdh_origin(PANDA_A[i], PANDA_D[i], PANDA_ALPHA[i])
        robot.add_joint(
            Joint(
                f"{prefix}joint{i + 1}",
                names[i],
                names[i + 1],
                xyz,
                rpy,
                lower=PANDA_LOWER[i],
                upper=PANDA_UPPER[i],
                effort=PANDA_EFFORT[i],
                velocity=PANDA_VELOCITY[i],
            ),
            comment=(
                f"MDH row {i + 1}: a={PANDA_A[i]} d={PANDA_D[i]} alpha={PANDA_ALPHA[i] / PI:g}*pi"
            ),
        )
    robot.add_joint(
        Joint(f"{prefix}joint8", names[7], names[8], (0.0, 0.0, PANDA_FLANGE_D), kind="fixed"),
        comment="flange: d=0.107",
    )
    hand = f"{prefix}hand"
    robot.add_link(Link(hand, PANDA_HAND_MASS, shapes[8]))
    robot.add_joint(
        Joint(f"{prefix}hand_joint", names[8], hand, rpy=(0.0, 0.0, PANDA_HAND_YAW), kind="fixed"),
        comment="hand rotated -pi/4 about the flange z axis",
    )
    tcp = tcp_name or f"{prefix}hand_tcp"
    robot.add_link(Link(tcp), comment="tool centre point (no body)")
    robot.add_joint(
        Joint(f"{prefix}hand_tcp_joint", hand, tcp, (0.0, 0.0, PANDA_TCP_Z), kind="fixed")
    )


def build_panda() -> Robot:
    """Franka Emika Panda, 7 DoF, hand and TCP frames."""
    robot = Robot("panda")
    robot.header = """Franka Emika Panda (7 DoF), written for stackik from Franka's published
modified-DH table (Craig convention): T_i = RotX(alpha_{i-1}) TransX(a_{i-1}) RotZ(q_i) TransZ(d_i)
  a     = [0, 0, 0, 0.0825, -0.0825, 0, 0.088]
  d     = [0.333, 0, 0.316, 0, 0.384, 0, 0]
  alpha = [0, -pi/2, pi/2, pi/2, -pi/2, pi/2, pi/2]
  flange: d = 0.107 (panda_link8); hand: -pi/4 about z; TCP: 0.1034 along the hand z axis.
Each joint origin is RotX(alpha) TransX(a) TransZ(d), i.e. xyz=(a, -d sin(alpha), d cos(alpha)),
rpy=(alpha, 0, 0), so panda_linkI is exactly the MDH frame I.
Collision geometry: primitives only (approximation of the real links). Generated by
robots/tools/generate.py; see robots/README.md for sources."""
    add_panda(robot, "panda_")
    return robot


# --------------------------------------------------------------------------
# Universal Robots UR5 (CB-series): standard DH from Universal Robots
# --------------------------------------------------------------------------
UR5_D = [0.089159, 0.0, 0.0, 0.10915, 0.09465, 0.0823]
UR5_A = [0.0, -0.425, -0.39225, 0.0, 0.0, 0.0]
UR5_ALPHA = [PI / 2, 0.0, 0.0, PI / 2, -PI / 2, 0.0]
UR5_MASS = [3.7, 8.393, 2.275, 1.219, 1.219, 0.1879]
UR5_BASE_MASS = 4.0
# centres of mass published by Universal Robots, expressed in DH frame i (the frame
# at the distal end of link i)
UR5_COM_DH = [
    (0.0, -0.02561, 0.00193),
    (0.2125, 0.0, 0.11336),
    (0.15, 0.0, 0.0265),
    (0.0, -0.0018, 0.01634),
    (0.0, 0.0018, 0.01634),
    (0.0, 0.0, -0.001159),
]
UR5_EFFORT = [150.0, 150.0, 150.0, 28.0, 28.0, 28.0]
UR5_JOINTS = [
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
]
UR5_LINKS = [
    "base_link",
    "shoulder_link",
    "upper_arm_link",
    "forearm_link",
    "wrist_1_link",
    "wrist_2_link",
    "wrist_3_link",
]


def dh_after(d: float, a: float, alpha: float, point: tuple) -> tuple:
    """Map a point from DH frame i to the URDF link-i frame: TransZ(d) TransX(a) RotX(alpha)."""
    x, y, z = point
    c, s = math.cos(alpha), math.sin(alpha)
    return (x + a, c * y - s * z, s * y + c * z + d)


def build_ur5() -> Robot:
    """UR5 with URDF joint zero == DH zero and tool0 == DH frame 6."""
    robot = Robot("ur5")
    robot.header = """Universal Robots UR5 (CB-series), written for stackik from the standard DH
parameters published by Universal Robots:
  i :  d_i        a_i       alpha_i
  1 :  0.089159   0         +pi/2
  2 :  0         -0.425      0
  3 :  0         -0.39225    0
  4 :  0.10915    0         +pi/2
  5 :  0.09465    0         -pi/2
  6 :  0.0823     0          0
  T_i = RotZ(theta_i) TransZ(d_i) TransX(a_i) RotX(alpha_i),  base->tool0 = T_1 ... T_6.
RELATION URDF <-> DH (no offsets, NOT the ROS-Industrial layout):
  * theta_i == q_i exactly (joint zero is the DH zero: arm stretched horizontally along -x),
    and every joint axis is +z of its URDF joint frame;
  * base_link == DH frame 0 (z up, no rotation about z; ROS-Industrial's base_link is
    rotated by pi about z with respect to this frame);
  * link i frame == DH frame (i-1) rotated by theta_i about its z axis, so the origin of
    joint i+1 is TransZ(d_i) TransX(a_i) RotX(alpha_i): xyz=(a_i, 0, d_i), rpy=(alpha_i, 0, 0);
  * tool0 == DH frame 6 (flange, z out of the flange): fixed xyz=(0, 0, d6) on wrist_3_link.
Collision geometry: primitives only. Generated by robots/tools/generate.py."""
    s = [
        [cyl_z(0.075, 0.0, 0.038)],
        [cyl_z(0.06, 0.038, 0.145), cyl_y(0.06, -0.08, 0.0, z=UR5_D[0])],
        [
            cyl_z(0.06, 0.08, 0.19),
            cyl_x(0.054, -0.365, -0.06, z=0.13585),
            cyl_z(0.058, 0.08, 0.19, x=-0.425),
        ],
        [
            cyl_z(0.05, -0.03, 0.075),
            cyl_x(0.04, -0.345, -0.05, z=0.01615),
            cyl_z(0.045, -0.03, 0.055, x=-0.39225),
        ],
        [cyl_z(0.045, 0.03, UR5_D[3]), cyl_y(0.045, -0.045, 0.045, z=UR5_D[3])],
        [cyl_z(0.045, 0.03, UR5_D[4]), cyl_y(0.045, -0.045, 0.045, z=UR5_D[4])],
        [cyl_z(0.0375, 0.045, UR5_D[5])],
    ]
    robot.add_link(Link(UR5_LINKS[0], UR5_BASE_MASS, s[0]), comment="DH frame 0")
    for i in range(6):
        com = dh_after(UR5_D[i], UR5_A[i], UR5_ALPHA[i], UR5_COM_DH[i])
        robot.add_link(
            Link(UR5_LINKS[i + 1], UR5_MASS[i], s[i + 1], com=com),
            comment=f"DH frame {i} rotated by theta_{i + 1}",
        )
        if i == 0:
            xyz, rpy = (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
        else:
            xyz, rpy = (UR5_A[i - 1], 0.0, UR5_D[i - 1]), (UR5_ALPHA[i - 1], 0.0, 0.0)
        robot.add_joint(
            Joint(
                UR5_JOINTS[i],
                UR5_LINKS[i],
                UR5_LINKS[i + 1],
                xyz,
                rpy,
                lower=-2 * PI,
                upper=2 * PI,
                effort=UR5_EFFORT[i],
                velocity=3.15,
            ),
            comment=(
                f"theta_{i + 1} = q (no offset); origin = DH row {i}"
                if i
                else "theta_1 = q (no offset)"
            ),
        )
    robot.add_link(Link("tool0"), comment="DH frame 6 (tool flange)")
    robot.add_joint(
        Joint(
            "wrist_3-tool0_fixed_joint", UR5_LINKS[6], "tool0", (0.0, 0.0, UR5_D[5]), kind="fixed"
        ),
        comment="DH row 6: d6 = 0.0823",
    )
    return robot


# --------------------------------------------------------------------------
# Dual-arm torso robot with two Panda arms
# --------------------------------------------------------------------------
DUAL_PEDESTAL_H = 0.75
DUAL_SHOULDER_Y = 0.25
DUAL_SHOULDER_Z = 0.5
DUAL_TORSO_MASS = 15.0
DUAL_BASE_MASS = 40.0


def build_dual_arm() -> Robot:
    """Fixed pedestal, torso yaw joint, two Panda arms pointing sideways at neutral."""
    robot = Robot("dual_arm")
    robot.header = """Dual-arm torso robot, written for stackik.
base_link (pedestal, fixed) -> torso_joint (revolute about z, 0.75 m up) -> torso
  -> left_panda_link0  at (0, +0.25, 0.5) in torso, rpy (-pi/2, 0, 0): arm base z axis along +y
  -> right_panda_link0 at (0, -0.25, 0.5) in torso, rpy (+pi/2, 0, 0): arm base z axis along -y
Each arm is the Panda of robots/panda (modified DH table, limits) with joint names
left_panda_joint1..7 / right_panda_joint1..7 and end frames left_tcp / right_tcp.
Generated by robots/tools/generate.py."""
    robot.add_link(
        Link("base_link", DUAL_BASE_MASS, [box((-0.2, -0.2, 0.0), (0.2, 0.2, DUAL_PEDESTAL_H))]),
        comment="pedestal",
    )
    robot.add_link(
        Link(
            "torso",
            DUAL_TORSO_MASS,
            [
                box((-0.11, -0.15, 0.0), (0.11, 0.15, 0.45)),
                box((-0.08, -DUAL_SHOULDER_Y, 0.43), (0.08, DUAL_SHOULDER_Y, 0.57)),
            ],
        )
    )
    robot.add_joint(
        Joint(
            "torso_joint",
            "base_link",
            "torso",
            (0.0, 0.0, DUAL_PEDESTAL_H),
            lower=-2.5,
            upper=2.5,
            effort=300.0,
            velocity=1.5,
        )
    )
    add_panda(
        robot,
        "left_panda_",
        "torso",
        (0.0, DUAL_SHOULDER_Y, DUAL_SHOULDER_Z),
        (-PI / 2, 0.0, 0.0),
        tcp_name="left_tcp",
    )
    add_panda(
        robot,
        "right_panda_",
        "torso",
        (0.0, -DUAL_SHOULDER_Y, DUAL_SHOULDER_Z),
        (PI / 2, 0.0, 0.0),
        tcp_name="right_tcp",
    )
    return robot


# --------------------------------------------------------------------------
# Humanoid from Winter's anthropometric tables (H = 1.70 m, M = 65 kg)
# --------------------------------------------------------------------------
H = 1.70
M = 65.0
# segment lengths, Winter (2009) Fig. 4.1 (Drillis & Contini), fractions of H
HIP_Z = 0.530 * H  # greater trochanter (hip joint) height
THIGH = 0.245 * H
SHANK = 0.246 * H
ANKLE_Z = 0.039 * H
FOOT_L = 0.152 * H
FOOT_W = 0.055 * H
HIP_W = 0.191 * H
SHOULDER_W = 0.259 * H
SHOULDER_Z = 0.818 * H
EYE_Z = 0.936 * H
UPPER_ARM = 0.186 * H
FOREARM = 0.146 * H
HAND_L = 0.108 * H
# modelling choices (documented in README)
HIP_Y = HIP_W / 4  # hip joint centres at the quarter points of the hip width
WAIST_Z = 0.06 * H  # lumbar (L4-L5) joint above the hip-joint line
HEEL_X = -0.2 * FOOT_L  # ankle 20 % of the foot length in front of the heel
# segment mass fractions and CoM fractions (from proximal end), Winter Table 4.1
MASS_FRAC = {
    "hand": 0.006,
    "forearm": 0.016,
    "upper_arm": 0.028,
    "foot": 0.0145,
    "shank": 0.0465,
    "thigh": 0.100,
    "head": 0.081,
    "trunk": 0.355,  # thorax + abdomen (C7-T1 to L4-L5)
    "pelvis": 0.142,
}
COM_FRAC = {"hand": 0.506, "forearm": 0.430, "upper_arm": 0.436, "shank": 0.433, "thigh": 0.433}
TRUNK_COM_FROM_TOP = 0.63  # thorax + abdomen: 0.63 of C7-T1 -> L4-L5 from C7-T1
PELVIS_COM_FROM_TOP = 0.105  # pelvis: 0.105 of L4-L5 -> greater trochanter from L4-L5
GYRATION = {"hand": 0.297, "forearm": 0.303, "upper_arm": 0.322, "shank": 0.302, "thigh": 0.323}
# small housings of the intermediate (virtual) links of multi-DoF joints; their mass is
# taken from the segment named second so that the Winter segment masses add up to M
VIRTUAL = {
    "hip_yaw": (0.1, 0.055, "thigh"),
    "hip_roll": (0.1, 0.055, "thigh"),
    "ankle_pitch": (0.05, 0.04, "foot"),
    "torso_yaw": (0.2, 0.05, "trunk"),
    "torso_pitch": (0.2, 0.05, "trunk"),
    "head_yaw": (0.05, 0.045, "head"),
    "shoulder_pitch": (0.05, 0.05, "upper_arm"),
    "shoulder_roll": (0.05, 0.05, "upper_arm"),
    "wrist_yaw": (0.02, 0.03, "hand"),
    "wrist_pitch": (0.02, 0.03, "hand"),
}


def segment_mass(name: str) -> float:
    """Winter segment mass minus the housings of virtual links assigned to it."""
    m = MASS_FRAC[name] * M
    for vm, _r, seg in VIRTUAL.values():
        if seg == name:
            m -= vm
    return m


def limb_inertia(seg: str, length: float, radius: float) -> np.ndarray:
    """Limb inertia about its CoM: transverse from Winter's radius of gyration, axial = m r^2/2."""
    m = segment_mass(seg)
    it = m * (GYRATION[seg] * length) ** 2
    return np.diag([it, it, 0.5 * m * radius * radius])


def box_inertia(m: float, size: tuple[float, float, float]) -> np.ndarray:
    """Solid box inertia about its centre."""
    x, y, z = size
    return np.diag([y * y + z * z, x * x + z * z, x * x + y * y]) * m / 12.0


def build_humanoid() -> Robot:
    """31-DoF humanoid; pelvis root (the free-flyer is added by the loader)."""
    r = Robot("humanoid")
    r.header = f"""Humanoid (31 revolute joints), written for stackik.
Root link: pelvis (no floating joint here: load with pin.JointModelFreeFlyer()).
Segment lengths, masses, CoM positions and limb radii of gyration from D. A. Winter,
"Biomechanics and Motor Control of Human Movement" (4th ed., 2009), Fig. 4.1 and
Table 4.1, for a body of height H = {H} m and mass M = {M} kg.
All frames: x forward, y left, z up at the neutral (zero) configuration.
Torso: yaw, pitch and roll at the lumbar (L4-L5) joint (3 joints, so that the total is 31).
Pitch joints turn about y, roll about x, yaw about z; the elbow turns about -y so that
flexion is positive for the knee and the elbow.
Named frames: left_sole / right_sole (sole centre, z up), left_hand / right_hand (palm
centre), head (head centre, eye height).  Generated by robots/tools/generate.py."""
    # ---- pelvis
    pelvis_size = (0.2, HIP_W - 0.0001, WAIST_Z + 0.06)
    pelvis_box = box((-0.1, -pelvis_size[1] / 2, -0.06), (0.1, pelvis_size[1] / 2, WAIST_Z))
    m_pelvis = segment_mass("pelvis")
    pelvis_com = (0.0, 0.0, WAIST_Z - PELVIS_COM_FROM_TOP * WAIST_Z)
    r.add_link(
        Link(
            "pelvis",
            m_pelvis,
            [pelvis_box],
            com=pelvis_com,
            inertia=box_inertia(m_pelvis, pelvis_size),
        ),
        comment="origin: midpoint of the hip joint centres, 0.530 H above the floor",
    )

    def virtual_link(name: str, key: str) -> None:
        m, rad, _seg = VIRTUAL[key]
        r.add_link(Link(name, m, [sphere(rad)]), comment="joint housing (virtual link)")

    def rev(name, parent, child, xyz, axis, lower, upper, effort, velocity):
        r.add_joint(
            Joint(
                name,
                parent,
                child,
                xyz,
                axis=axis,
                lower=lower,
                upper=upper,
                effort=effort,
                velocity=velocity,
            )
        )

    x_axis, y_axis, z_axis, neg_y = (
        (1.0, 0.0, 0.0),
        (0.0, 1.0, 0.0),
        (0.0, 0.0, 1.0),
        (0.0, -1.0, 0.0),
    )

    # ---- legs
    thigh_r, shank_r = 0.07, 0.05
    for side, sgn in (("left", 1.0), ("right", -1.0)):
        p = f"{side}_"
        virtual_link(p + "hip_yaw_link", "hip_yaw")
        # yaw +: toes outward for the left leg (external rotation)
        lo, hi = (-0.698, 0.785) if sgn > 0 else (-0.785, 0.698)
        rev(
            p + "hip_yaw_joint",
            "pelvis",
            p + "hip_yaw_link",
            (0.0, sgn * HIP_Y, 0.0),
            z_axis,
            lo,
            hi,
            80.0,
            6.0,
        )
        virtual_link(p + "hip_roll_link", "hip_roll")
        # roll +: left leg outward (abduction)
        lo, hi = (-0.524, 0.785) if sgn > 0 else (-0.785, 0.524)
        rev(
            p + "hip_roll_joint",
            p + "hip_yaw_link",
            p + "hip_roll_link",
            (0.0, 0.0, 0.0),
            x_axis,
            lo,
            hi,
            150.0,
            6.0,
        )
        m = segment_mass("thigh")
        r.add_link(
            Link(
                p + "thigh_link",
                m,
                [cyl_z(thigh_r, -THIGH + 0.03, 0.0)],
                com=(0.0, 0.0, -COM_FRAC["thigh"] * THIGH),
                inertia=limb_inertia("thigh", THIGH, thigh_r),
            )
        )
        # pitch -: flexion (thigh forward), +: extension
        rev(
            p + "hip_pitch_joint",
            p + "hip_roll_link",
            p + "thigh_link",
            (0.0, 0.0, 0.0),
            y_axis,
            -2.094,
            0.524,
            200.0,
            7.0,
        )
        m = segment_mass("shank")
        r.add_link(
            Link(
                p + "shank_link",
                m,
                [cyl_z(shank_r, -SHANK + 0.03, 0.0)],
                com=(0.0, 0.0, -COM_FRAC["shank"] * SHANK),
                inertia=limb_inertia("shank", SHANK, shank_r),
            )
        )
        rev(
            p + "knee_joint",
            p + "thigh_link",
            p + "shank_link",
            (0.0, 0.0, -THIGH),
            y_axis,
            -0.087,
            2.443,
            200.0,
            8.0,
        )
        virtual_link(p + "ankle_pitch_link", "ankle_pitch")
        # pitch +: plantarflexion (toes down)
        rev(
            p + "ankle_pitch_joint",
            p + "shank_link",
            p + "ankle_pitch_link",
            (0.0, 0.0, -SHANK),
            y_axis,
            -0.349,
            0.873,
            150.0,
            8.0,
        )
        m = segment_mass("foot")
        foot_h = 0.05
        sole_x = HEEL_X + FOOT_L / 2
        foot_box = box(
            (HEEL_X, -FOOT_W / 2, -ANKLE_Z), (HEEL_X + FOOT_L, FOOT_W / 2, -ANKLE_Z + foot_h)
        )
        # foot CoM halfway between the ankle and the head of the 2nd metatarsal (~75 % of the
        # foot length from the heel), Winter's 0.50 fraction
        foot_com = (0.5 * (HEEL_X + 0.75 * FOOT_L), 0.0, -ANKLE_Z / 2)
        r.add_link(
            Link(
                p + "foot_link",
                m,
                [foot_box],
                com=foot_com,
                inertia=box_inertia(m, (FOOT_L, FOOT_W, foot_h)),
            )
        )
        # roll +: left foot sole turns inward (inversion)
        lo, hi = (-0.349, 0.611) if sgn > 0 else (-0.611, 0.349)
        rev(
            p + "ankle_roll_joint",
            p + "ankle_pitch_link",
            p + "foot_link",
            (0.0, 0.0, 0.0),
            x_axis,
            lo,
            hi,
            60.0,
            8.0,
        )
        r.add_link(Link(p + "sole"), comment="sole centre, z up (contact frame)")
        r.add_joint(
            Joint(
                p + "sole_joint", p + "foot_link", p + "sole", (sole_x, 0.0, -ANKLE_Z), kind="fixed"
            )
        )

    # ---- torso
    virtual_link("torso_yaw_link", "torso_yaw")
    virtual_link("torso_pitch_link", "torso_pitch")
    rev(
        "torso_yaw_joint",
        "pelvis",
        "torso_yaw_link",
        (0.0, 0.0, WAIST_Z),
        z_axis,
        -0.785,
        0.785,
        150.0,
        4.0,
    )
    trunk_len = SHOULDER_Z - HIP_Z - WAIST_Z  # L4-L5 to C7-T1 (taken at shoulder height)
    torso_size = (0.2, 0.3, trunk_len + 0.0124)
    m = segment_mass("trunk")
    r.add_link(
        Link(
            "torso_link",
            m,
            [box((-0.1, -0.15, 0.0), (0.1, 0.15, torso_size[2]))],
            com=(0.0, 0.0, (1.0 - TRUNK_COM_FROM_TOP) * trunk_len),
            inertia=box_inertia(m, torso_size),
        ),
        comment="thorax + abdomen; origin at the lumbar (L4-L5) joint",
    )
    # pitch +: bend forward (flexion)
    rev(
        "torso_pitch_joint",
        "torso_yaw_link",
        "torso_pitch_link",
        (0.0, 0.0, 0.0),
        y_axis,
        -0.436,
        1.309,
        200.0,
        4.0,
    )
    # roll +: lean to the right (lateral flexion; the torso turns about +x)
    rev(
        "torso_roll_joint",
        "torso_pitch_link",
        "torso_link",
        (0.0, 0.0, 0.0),
        x_axis,
        -0.611,
        0.611,
        200.0,
        4.0,
    )

    # ---- head
    virtual_link("head_yaw_link", "head_yaw")
    rev(
        "head_yaw_joint",
        "torso_link",
        "head_yaw_link",
        (0.0, 0.0, trunk_len),
        z_axis,
        -1.396,
        1.396,
        20.0,
        6.0,
    )
    head_c = EYE_Z - SHOULDER_Z
    head_r = 0.1
    m = segment_mass("head")
    r.add_link(
        Link(
            "head_link",
            m,
            [cyl_z(0.05, 0.0, head_c - 0.06), sphere(head_r, (0.0, 0.0, head_c))],
            com=(0.0, 0.0, head_c),
            inertia=np.diag(
                [0.4 * m * head_r**2 * 1.15, 0.4 * m * head_r**2 * 1.15, 0.4 * m * head_r**2]
            ),
        ),
        comment="head and neck; origin at the base of the neck (C7-T1)",
    )
    # pitch +: nod forward (flexion)
    rev(
        "head_pitch_joint",
        "head_yaw_link",
        "head_link",
        (0.0, 0.0, 0.0),
        y_axis,
        -1.047,
        0.873,
        20.0,
        6.0,
    )
    r.add_link(Link("head"), comment="head centre at eye height")
    r.add_joint(Joint("head_frame_joint", "head_link", "head", (0.0, 0.0, head_c), kind="fixed"))

    # ---- arms
    ua_r, fa_r = 0.045, 0.038
    hand_size = (0.085, 0.03, HAND_L)
    for side, sgn in (("left", 1.0), ("right", -1.0)):
        p = f"{side}_"
        virtual_link(p + "shoulder_pitch_link", "shoulder_pitch")
        # pitch -: arm forward (flexion)
        rev(
            p + "shoulder_pitch_joint",
            "torso_link",
            p + "shoulder_pitch_link",
            (0.0, sgn * SHOULDER_W / 2, trunk_len),
            y_axis,
            -3.142,
            1.047,
            80.0,
            8.0,
        )
        virtual_link(p + "shoulder_roll_link", "shoulder_roll")
        # roll +: left arm sideways up (abduction)
        lo, hi = (-0.349, 3.142) if sgn > 0 else (-3.142, 0.349)
        rev(
            p + "shoulder_roll_joint",
            p + "shoulder_pitch_link",
            p + "shoulder_roll_link",
            (0.0, 0.0, 0.0),
            x_axis,
            lo,
            hi,
            80.0,
            8.0,
        )
        m = segment_mass("upper_arm")
        r.add_link(
            Link(
                p + "upper_arm_link",
                m,
                [cyl_z(ua_r, -UPPER_ARM + 0.03, 0.0), sphere(0.05)],
                com=(0.0, 0.0, -COM_FRAC["upper_arm"] * UPPER_ARM),
                inertia=limb_inertia("upper_arm", UPPER_ARM, ua_r),
            )
        )
        rev(
            p + "shoulder_yaw_joint",
            p + "shoulder_roll_link",
            p + "upper_arm_link",
            (0.0, 0.0, 0.0),
            z_axis,
            -1.571,
            1.571,
            40.0,
            8.0,
        )
        m = segment_mass("forearm")
        r.add_link(
            Link(
                p + "forearm_link",
                m,
                [cyl_z(fa_r, -FOREARM + 0.02, 0.0)],
                com=(0.0, 0.0, -COM_FRAC["forearm"] * FOREARM),
                inertia=limb_inertia("forearm", FOREARM, fa_r),
            )
        )
        # about -y: flexion positive
        rev(
            p + "elbow_joint",
            p + "upper_arm_link",
            p + "forearm_link",
            (0.0, 0.0, -UPPER_ARM),
            neg_y,
            -0.087,
            2.618,
            60.0,
            8.0,
        )
        virtual_link(p + "wrist_yaw_link", "wrist_yaw")
        rev(
            p + "wrist_yaw_joint",
            p + "forearm_link",
            p + "wrist_yaw_link",
            (0.0, 0.0, -FOREARM),
            z_axis,
            -1.571,
            1.571,
            10.0,
            8.0,
        )
        virtual_link(p + "wrist_pitch_link", "wrist_pitch")
        # pitch +: fingers backward (ulnar deviation with the palm facing the thigh)
        rev(
            p + "wrist_pitch_joint",
            p + "wrist_yaw_link",
            p + "wrist_pitch_link",
            (0.0, 0.0, 0.0),
            y_axis,
            -0.436,
            0.611,
            10.0,
            8.0,
        )
        m = segment_mass("hand")
        hand_z = -COM_FRAC["hand"] * HAND_L
        hi_box = box(
            (-hand_size[0] / 2, -hand_size[1] / 2, -HAND_L),
            (hand_size[0] / 2, hand_size[1] / 2, -0.01),
        )
        it = m * (GYRATION["hand"] * HAND_L) ** 2
        r.add_link(
            Link(
                p + "hand_link",
                m,
                [hi_box],
                com=(0.0, 0.0, hand_z),
                inertia=np.diag([it, it, m * (hand_size[0] ** 2 + hand_size[1] ** 2) / 12.0]),
            )
        )
        # roll +: left fingers outward (extension, palm facing the thigh)
        lo, hi = (-1.396, 1.222) if sgn > 0 else (-1.222, 1.396)
        rev(
            p + "wrist_roll_joint",
            p + "wrist_pitch_link",
            p + "hand_link",
            (0.0, 0.0, 0.0),
            x_axis,
            lo,
            hi,
            10.0,
            8.0,
        )
        r.add_link(Link(p + "hand"), comment="palm centre")
        r.add_joint(
            Joint(
                p + "hand_frame_joint",
                p + "hand_link",
                p + "hand",
                (0.0, 0.0, hand_z),
                kind="fixed",
            )
        )
    return r


def write_robot(robot: Robot, folder: str, check: bool = False) -> None:
    """Write the URDF of a robot into robots/<folder>/ (its SRDF comes from srdf.py)."""
    print(f"{robot.name}: {len(robot.links)} links")
    if check:
        return
    out = ROBOTS / folder
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{folder}.urdf").write_text(robot.urdf())


def main() -> None:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="report only, write nothing")
    parser.add_argument(
        "robots",
        nargs="*",
        default=["panda", "ur5", "dual_arm", "humanoid", "opw_arm", "spherical_arm"],
    )
    args = parser.parse_args()
    builders = {
        "panda": build_panda,
        "ur5": build_ur5,
        "dual_arm": build_dual_arm,
        "humanoid": build_humanoid,
        "opw_arm": build_opw_arm,
        "spherical_arm": build_spherical_arm,
    }
    for name in args.robots:
        write_robot(builders[name](), name, check=args.check)
    if not args.check:
        print("now run: python robots/tools/srdf.py " + " ".join(args.robots))


if __name__ == "__main__":
    main()
