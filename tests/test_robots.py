"""Checks of the robot descriptions in robots/ (URDF/XACRO + SRDF)."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import xacro

from ur5_dh import UR5_A, UR5_ALPHA, UR5_D, sdh, ur5_closed_form

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
PANDA = ROBOTS / "panda" / "panda.urdf"
UR5 = ROBOTS / "ur5" / "ur5.urdf"
PLANAR = ROBOTS / "planar_arm" / "planar_arm.urdf.xacro"
DUAL = ROBOTS / "dual_arm" / "dual_arm.urdf"
HUMANOID = ROBOTS / "humanoid" / "humanoid.urdf"

URDF_ROBOTS = ["panda", "ur5", "dual_arm", "humanoid", "opw_arm", "spherical_arm"]
ALL_ROBOTS = [*URDF_ROBOTS, "planar_arm"]

# ---------------------------------------------------------------- published figures
PANDA_A = [0.0, 0.0, 0.0, 0.0825, -0.0825, 0.0, 0.088]
PANDA_D = [0.333, 0.0, 0.316, 0.0, 0.384, 0.0, 0.0]
PANDA_ALPHA = [0.0, -math.pi / 2, math.pi / 2, math.pi / 2, -math.pi / 2, math.pi / 2, math.pi / 2]
PANDA_LOWER = [-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973]
PANDA_UPPER = [2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973]
PANDA_VELOCITY = [2.175] * 4 + [2.61] * 3
PANDA_EFFORT = [87.0] * 4 + [12.0] * 3
PANDA_MOVING_MASS = 4.970684 + 0.646926 + 3.228604 + 3.587895 + 1.225946 + 1.666555 + 0.735522
PANDA_HAND_MASS = 0.73
PANDA_LINK0_MASS = 2.0

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
UR5_MASSES = [3.7, 8.393, 2.275, 1.219, 1.219, 0.1879]
UR5_EFFORT = [150.0, 150.0, 150.0, 28.0, 28.0, 28.0]

HUMANOID_JOINTS = (
    [
        f"{s}_{j}_joint"
        for s in ("left", "right")
        for j in ("hip_yaw", "hip_roll", "hip_pitch", "knee", "ankle_pitch", "ankle_roll")
    ]
    + ["torso_yaw_joint", "torso_pitch_joint", "torso_roll_joint"]
    + ["head_yaw_joint", "head_pitch_joint"]
    + [
        f"{s}_{j}_joint"
        for s in ("left", "right")
        for j in (
            "shoulder_pitch",
            "shoulder_roll",
            "shoulder_yaw",
            "elbow",
            "wrist_yaw",
            "wrist_pitch",
            "wrist_roll",
        )
    ]
)
HUMANOID_HEIGHT = 1.70
HUMANOID_MASS = 65.0


# ---------------------------------------------------------------- helpers
def rot_x(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1]], dtype=float)


def rot_z(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], dtype=float)


def trans(x: float, y: float, z: float) -> np.ndarray:
    t = np.eye(4)
    t[:3, 3] = (x, y, z)
    return t


def mdh(a: float, alpha: float, d: float, theta: float) -> np.ndarray:
    """Modified (Craig) DH: RotX(alpha_{i-1}) TransX(a_{i-1}) RotZ(theta_i) TransZ(d_i)."""
    return rot_x(alpha) @ trans(a, 0, 0) @ rot_z(theta) @ trans(0, 0, d)


def panda_frames(q: np.ndarray) -> dict[str, np.ndarray]:
    """Panda link1..link8, hand and TCP poses in link0 from the MDH table."""
    frames = {}
    t = np.eye(4)
    for i in range(7):
        t = t @ mdh(PANDA_A[i], PANDA_ALPHA[i], PANDA_D[i], q[i])
        frames[f"link{i + 1}"] = t
    frames["link8"] = t @ trans(0, 0, 0.107)
    frames["hand"] = frames["link8"] @ rot_z(-math.pi / 4)
    frames["hand_tcp"] = frames["hand"] @ trans(0, 0, 0.1034)
    return frames


def homogeneous(m: pin.SE3) -> np.ndarray:
    return np.asarray(m.homogeneous)


def urdf_path(name: str) -> Path:
    return ROBOTS / name / f"{name}.urdf"


def srdf_path(name: str) -> Path:
    return ROBOTS / name / f"{name}.srdf"


def planar_xml(**mappings: str) -> str:
    return xacro.process_file(str(PLANAR), mappings=mappings).toprettyxml()


def urdf_xml(name: str) -> str:
    if name == "planar_arm":
        return planar_xml()
    return urdf_path(name).read_text()


def load(name: str, free_flyer: bool = False) -> pin.Model:
    """Load from the URDF file (pin.buildModelFromUrdf), the xacro arm through xacro."""
    if name == "planar_arm":
        return pin.buildModelFromXML(planar_xml())
    if free_flyer:
        return pin.buildModelFromUrdf(str(urdf_path(name)), pin.JointModelFreeFlyer())
    return pin.buildModelFromUrdf(str(urdf_path(name)))


def load_with_collisions(name: str, free_flyer: bool = False):
    """Model and collision model with all pairs minus those disabled in the SRDF."""
    model = load(name, free_flyer)
    if name == "planar_arm":
        geom = pin.buildGeomFromUrdfString(model, planar_xml(), pin.COLLISION)
    else:
        geom = pin.buildGeomFromUrdf(model, str(urdf_path(name)), pin.COLLISION)
    geom.addAllCollisionPairs()
    pin.removeCollisionPairs(model, geom, str(srdf_path(name)))
    return model, geom


def clamped_neutral(model: pin.Model) -> np.ndarray:
    return np.clip(pin.neutral(model), model.lowerPositionLimit, model.upperPositionLimit)


def geom_link(geom: pin.GeometryModel, index: int) -> str:
    """URDF link of a geometry object (pinocchio names them <link>_<k>)."""
    return geom.geometryObjects[index].name.rsplit("_", 1)[0]


def srdf_pairs(name: str, reason: str | None = None) -> list[tuple[str, str]]:
    root = ET.parse(srdf_path(name)).getroot()
    return [
        (e.get("link1"), e.get("link2"))
        for e in root.iter("disable_collisions")
        if reason is None or e.get("reason") == reason
    ]


def urdf_root(name: str) -> ET.Element:
    return ET.fromstring(urdf_xml(name))


def joint_names(model: pin.Model) -> list[str]:
    return list(model.names)[1:]


# ---------------------------------------------------------------- structure and limits
@pytest.mark.parametrize("name", ALL_ROBOTS)
def test_joint_limits_are_finite_and_positive(name):
    model = load(name)
    xml_joints = [j for j in urdf_root(name).iter("joint") if j.get("type") != "fixed"]
    assert len(xml_joints) == model.nq
    for joint in xml_joints:
        assert joint.get("type") == "revolute", joint.get("name")
        assert joint.find("limit") is not None, joint.get("name")
    lower, upper = model.lowerPositionLimit, model.upperPositionLimit
    assert np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))
    assert np.all(lower < upper)
    assert np.all(model.velocityLimit > 0) and np.all(np.isfinite(model.velocityLimit))
    assert np.all(model.effortLimit > 0) and np.all(np.isfinite(model.effortLimit))


def test_panda_structure_and_limits():
    model = load("panda")
    assert model.nq == model.nv == 7
    assert joint_names(model) == [f"panda_joint{i}" for i in range(1, 8)]
    for frame in [f"panda_link{i}" for i in range(9)] + ["panda_hand", "panda_hand_tcp"]:
        assert model.existFrame(frame), frame
    root = urdf_root("panda")
    children = {j.find("child").get("link") for j in root.iter("joint")}
    assert [lk.get("name") for lk in root.iter("link") if lk.get("name") not in children] == [
        "panda_link0"
    ]
    np.testing.assert_allclose(model.lowerPositionLimit, PANDA_LOWER, atol=1e-12)
    np.testing.assert_allclose(model.upperPositionLimit, PANDA_UPPER, atol=1e-12)
    np.testing.assert_allclose(model.velocityLimit, PANDA_VELOCITY, atol=1e-12)
    np.testing.assert_allclose(model.effortLimit, PANDA_EFFORT, atol=1e-12)


def test_ur5_structure_and_limits():
    model = load("ur5")
    assert model.nq == 6
    assert joint_names(model) == UR5_JOINTS
    for frame in [*UR5_LINKS, "tool0"]:
        assert model.existFrame(frame), frame
    np.testing.assert_allclose(model.lowerPositionLimit, -2 * math.pi, atol=1e-12)
    np.testing.assert_allclose(model.upperPositionLimit, 2 * math.pi, atol=1e-12)
    np.testing.assert_allclose(model.velocityLimit, 3.15, atol=1e-12)
    np.testing.assert_allclose(model.effortLimit, UR5_EFFORT, atol=1e-12)


def test_dual_arm_structure():
    model = load("dual_arm")
    expected = (
        ["torso_joint"]
        + [f"left_panda_joint{i}" for i in range(1, 8)]
        + [f"right_panda_joint{i}" for i in range(1, 8)]
    )
    assert model.nq == 15
    assert sorted(joint_names(model)) == sorted(expected)
    for frame in ("base_link", "torso", "left_tcp", "right_tcp", "left_panda_hand"):
        assert model.existFrame(frame), frame
    for side in ("left", "right"):
        idx = [model.getJointId(f"{side}_panda_joint{i}") for i in range(1, 8)]
        q_idx = [model.joints[j].idx_q for j in idx]
        np.testing.assert_allclose(model.lowerPositionLimit[q_idx], PANDA_LOWER, atol=1e-12)
        np.testing.assert_allclose(model.upperPositionLimit[q_idx], PANDA_UPPER, atol=1e-12)


def test_humanoid_structure():
    root = urdf_root("humanoid")
    assert all(j.get("type") in ("revolute", "fixed") for j in root.iter("joint"))
    children = {j.find("child").get("link") for j in root.iter("joint")}
    assert [lk.get("name") for lk in root.iter("link") if lk.get("name") not in children] == [
        "pelvis"
    ]
    fixed = load("humanoid")
    assert fixed.nq == fixed.nv == 31
    model = load("humanoid", free_flyer=True)
    assert model.nq == 31 + 7
    assert model.nv == 31 + 6
    assert model.joints[1].shortname() == "JointModelFreeFlyer"
    assert sorted(joint_names(model)[1:]) == sorted(HUMANOID_JOINTS)
    for frame in ("pelvis", "left_sole", "right_sole", "left_hand", "right_hand", "head"):
        assert model.existFrame(frame), frame
    # left/right limits are mirror images for roll and yaw joints, equal for pitch joints
    for j in HUMANOID_JOINTS:
        if not j.startswith("left_"):
            continue
        jl, jr = fixed.getJointId(j), fixed.getJointId("right_" + j[len("left_") :])
        lo_l, hi_l = fixed.lowerPositionLimit[jl - 1], fixed.upperPositionLimit[jl - 1]
        lo_r, hi_r = fixed.lowerPositionLimit[jr - 1], fixed.upperPositionLimit[jr - 1]
        if "roll" in j or "yaw" in j:
            assert (lo_l, hi_l) == pytest.approx((-hi_r, -lo_r)), j
        else:
            assert (lo_l, hi_l) == pytest.approx((lo_r, hi_r)), j


@pytest.mark.parametrize(
    ("name", "moving_mass", "urdf_mass"),
    [
        (
            "panda",
            PANDA_MOVING_MASS + PANDA_HAND_MASS,
            PANDA_MOVING_MASS + PANDA_HAND_MASS + PANDA_LINK0_MASS,
        ),
        ("ur5", sum(UR5_MASSES), sum(UR5_MASSES) + 4.0),
        (
            "dual_arm",
            15.0 + 2 * (PANDA_MOVING_MASS + PANDA_HAND_MASS + PANDA_LINK0_MASS),
            40.0 + 15.0 + 2 * (PANDA_MOVING_MASS + PANDA_HAND_MASS + PANDA_LINK0_MASS),
        ),
        ("planar_arm", 3.0, 5.0),
    ],
)
def test_total_mass(name, moving_mass, urdf_mass):
    model = load(name)
    assert pin.computeTotalMass(model) == pytest.approx(moving_mass, abs=1e-6)
    masses = [float(m.get("value")) for m in urdf_root(name).iter("mass")]
    assert sum(masses) == pytest.approx(urdf_mass, abs=1e-6)


def test_humanoid_total_mass():
    model = load("humanoid", free_flyer=True)
    assert pin.computeTotalMass(model) == pytest.approx(HUMANOID_MASS, abs=1e-6)


def test_ur5_link_masses():
    masses = {
        lk.get("name"): float(lk.find("inertial/mass").get("value"))
        for lk in urdf_root("ur5").iter("link")
        if lk.find("inertial") is not None
    }
    assert [masses[n] for n in UR5_LINKS[1:]] == pytest.approx(UR5_MASSES, abs=1e-12)


@pytest.mark.parametrize("name", ALL_ROBOTS)
def test_links_have_physical_inertia_and_primitive_collisions(name):
    root = urdf_root(name)
    assert not list(root.iter("mesh"))
    joints = list(root.iter("joint"))
    moving_children = {j.find("child").get("link") for j in joints if j.get("type") != "fixed"}
    bodies = 0
    for link in root.iter("link"):
        inertial, collisions = link.find("inertial"), link.findall("collision")
        if link.get("name") in moving_children:
            assert inertial is not None and collisions, link.get("name")
        if inertial is None:
            assert not collisions, link.get("name")
            continue
        bodies += 1
        for element in collisions + link.findall("visual"):
            shapes = [child.tag for child in element.find("geometry")]
            assert shapes in (["box"], ["cylinder"], ["sphere"]), (link.get("name"), shapes)
        mass = float(inertial.find("mass").get("value"))
        assert mass > 0
        att = inertial.find("inertia").attrib
        tensor = np.array(
            [
                [att["ixx"], att["ixy"], att["ixz"]],
                [att["ixy"], att["iyy"], att["iyz"]],
                [att["ixz"], att["iyz"], att["izz"]],
            ],
            dtype=float,
        )
        principal = np.linalg.eigvalsh(tensor)
        assert principal.min() > 0, link.get("name")
        a, b, c = principal
        assert a + b >= c * (1 - 1e-9), link.get("name")
    assert bodies >= 3


# ---------------------------------------------------------------- kinematics
def panda_test_configurations(model: pin.Model, count: int = 8) -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    qs = [
        np.zeros(model.nq),
        clamped_neutral(model),
        model.lowerPositionLimit.copy(),
        model.upperPositionLimit.copy(),
    ]
    qs += [rng.uniform(model.lowerPositionLimit, model.upperPositionLimit) for _ in range(count)]
    return qs


def test_panda_fk_matches_modified_dh():
    model = load("panda")
    data = model.createData()
    for q in panda_test_configurations(model):
        pin.framesForwardKinematics(model, data, q)
        expected = panda_frames(q)
        for name, pose in expected.items():
            got = homogeneous(data.oMf[model.getFrameId(f"panda_{name}")])
            np.testing.assert_allclose(got, pose, atol=1e-9, err_msg=name)


def test_panda_tcp_at_zero():
    model = load("panda")
    data = model.createData()
    pin.framesForwardKinematics(model, data, np.zeros(7))
    tcp = data.oMf[model.getFrameId("panda_hand_tcp")]
    # arm straight up, flange pointing down next to the forearm
    np.testing.assert_allclose(
        tcp.translation, [0.088, 0.0, 0.333 + 0.316 + 0.384 - 0.107 - 0.1034], atol=1e-12
    )
    np.testing.assert_allclose(tcp.rotation[:, 2], [0.0, 0.0, -1.0], atol=1e-12)


def ur5_dh_frames(q: np.ndarray) -> list[np.ndarray]:
    frames = [np.eye(4)]
    for i in range(6):
        frames.append(frames[-1] @ sdh(UR5_D[i], q[i], UR5_A[i], UR5_ALPHA[i]))
    return frames


def test_ur5_fk_matches_standard_dh():
    # documented relation: base_link == DH frame 0, tool0 == DH frame 6, theta_i == q_i
    base_to_dh0 = np.eye(4)
    dh6_to_tool0 = np.eye(4)
    model = load("ur5")
    data = model.createData()
    rng = np.random.default_rng(2)
    qs = [np.zeros(6), np.full(6, 2 * math.pi), np.full(6, -2 * math.pi)]
    qs += [rng.uniform(-2 * math.pi, 2 * math.pi, 6) for _ in range(10)]
    for q in qs:
        pin.framesForwardKinematics(model, data, q)
        dh = ur5_dh_frames(q)
        tool0 = homogeneous(data.oMf[model.getFrameId("tool0")])
        np.testing.assert_allclose(tool0, base_to_dh0 @ dh[6] @ dh6_to_tool0, atol=1e-9)
        # joint i+1 frame == DH frame i rotated by theta_{i+1}: its z axis is the DH z_i
        for i in range(6):
            joint = homogeneous(data.oMi[model.getJointId(UR5_JOINTS[i])])
            np.testing.assert_allclose(joint, dh[i] @ rot_z(q[i]), atol=1e-9)


def test_ur5_zero_configuration():
    model = load("ur5")
    data = model.createData()
    pin.framesForwardKinematics(model, data, np.zeros(6))
    tool0 = data.oMf[model.getFrameId("tool0")]
    d1, a2, a3, d4, d5, d6 = 0.089159, -0.425, -0.39225, 0.10915, 0.09465, 0.0823
    np.testing.assert_allclose(tool0.translation, [a2 + a3, -(d4 + d6), d1 - d5], atol=1e-12)


def ur5_branch_flags(model: pin.Model, data: pin.Data, q: np.ndarray) -> tuple[int, int, int]:
    """Branch flags of a configuration, as documented in robots/README.md."""
    pin.framesForwardKinematics(model, data, q)
    tool0 = data.oMf[model.getFrameId("tool0")]
    wrist = tool0.act(np.array([0.0, 0.0, -UR5_D[5]]))
    delta = q[0] - math.atan2(wrist[1], wrist[0]) - math.pi / 2
    delta = (delta + math.pi) % (2 * math.pi) - math.pi
    return int(np.sign(delta)), int(np.sign(math.sin(q[2]))), int(np.sign(math.sin(q[4])))


def test_ur5_closed_form_branches_match_urdf():
    model = load("ur5")
    data = model.createData()
    rng = np.random.default_rng(6)
    counts = []
    for _ in range(50):
        q = rng.uniform(-math.pi, math.pi, 6)
        pin.framesForwardKinematics(model, data, q)
        target = homogeneous(data.oMf[model.getFrameId("tool0")])
        solutions = ur5_closed_form(target)
        assert len({flags for flags, _ in solutions}) == len(solutions) >= 2
        counts.append(len(solutions))
        matched = 0
        for flags, sol in solutions:
            pin.framesForwardKinematics(model, data, sol)
            np.testing.assert_allclose(
                homogeneous(data.oMf[model.getFrameId("tool0")]), target, atol=1e-8
            )
            assert ur5_branch_flags(model, data, sol) == flags
            wrapped = (sol - q + math.pi) % (2 * math.pi) - math.pi
            matched += bool(np.allclose(wrapped, 0.0, atol=1e-6))
        assert matched == 1
        # +-2 pi alternatives are inside the limits and give the same pose
        alt = q - 2 * math.pi * np.sign(q)
        assert np.all(np.abs(alt) <= 2 * math.pi)
        pin.framesForwardKinematics(model, data, alt)
        np.testing.assert_allclose(
            homogeneous(data.oMf[model.getFrameId("tool0")]), target, atol=1e-9
        )
    assert max(counts) == 8


@pytest.mark.parametrize(
    ("mappings", "length", "n", "prefix"),
    [
        ({}, 0.3, 3, ""),
        ({"link_length": "0.45"}, 0.45, 3, ""),
        ({"link_length": "0.2", "n_links": "5", "prefix": "p_"}, 0.2, 5, "p_"),
    ],
)
def test_planar_arm_tip_is_analytic(mappings, length, n, prefix):
    model = pin.buildModelFromXML(planar_xml(**mappings))
    assert joint_names(model) == [f"{prefix}joint{i}" for i in range(1, n + 1)]
    assert model.existFrame(f"{prefix}tip")
    data = model.createData()
    rng = np.random.default_rng(3)
    for q in [np.zeros(n)] + [rng.uniform(-2.9, 2.9, n) for _ in range(10)]:
        pin.framesForwardKinematics(model, data, q)
        tip = data.oMf[model.getFrameId(f"{prefix}tip")].translation
        angles = np.cumsum(q)
        expected = length * np.array([np.cos(angles).sum(), np.sin(angles).sum(), 0.0])
        np.testing.assert_allclose(tip, expected, atol=1e-12)


def test_dual_arm_fk_matches_panda_dh():
    model = load("dual_arm")
    data = model.createData()
    rng = np.random.default_rng(4)
    for _ in range(6):
        q = rng.uniform(model.lowerPositionLimit, model.upperPositionLimit)
        pin.framesForwardKinematics(model, data, q)
        torso = q[model.joints[model.getJointId("torso_joint")].idx_q]
        for side, sign in (("left", 1.0), ("right", -1.0)):
            idx = [
                model.joints[model.getJointId(f"{side}_panda_joint{i}")].idx_q for i in range(1, 8)
            ]
            base = homogeneous(data.oMf[model.getFrameId(f"{side}_panda_link0")])
            mount = (
                rot_z(torso)
                @ trans(0, 0, 0.75)
                @ trans(0, sign * 0.25, 0.5)
                @ rot_x(-sign * math.pi / 2)
            )
            # torso_joint origin is a pure translation, so the order of rot_z and trans(0,0,z)
            # does not matter
            np.testing.assert_allclose(base, mount, atol=1e-9)
            tcp = homogeneous(data.oMf[model.getFrameId(f"{side}_tcp")])
            np.testing.assert_allclose(
                np.linalg.inv(base) @ tcp, panda_frames(q[idx])["hand_tcp"], atol=1e-9
            )


# ---------------------------------------------------------------- humanoid frames and CoM
def foot_support(model, data, geom, gdata):
    """Corners (x, y) of both foot collision boxes in the world."""
    corners = []
    for k, obj in enumerate(geom.geometryObjects):
        if geom_link(geom, k) not in ("left_foot_link", "right_foot_link"):
            continue
        half = np.asarray(obj.geometry.halfSide)
        placement = gdata.oMg[k]
        for sx in (-1, 1):
            for sy in (-1, 1):
                p = placement.act(np.array([sx * half[0], sy * half[1], -half[2]]))
                corners.append(p[:2])
    return np.array(corners)


def lowest_point(obj: pin.GeometryObject, placement: pin.SE3) -> float:
    g, rot, z = obj.geometry, placement.rotation, placement.translation[2]
    name = type(g).__name__
    if name == "Sphere":
        return z - g.radius
    if name == "Box":
        return z - float(np.abs(rot[2, :]) @ np.asarray(g.halfSide))
    if name == "Cylinder":
        c = abs(rot[2, 2])
        return z - c * g.halfLength - math.sqrt(max(0.0, 1 - c * c)) * g.radius
    raise AssertionError(name)


def humanoid_neutral():
    model, geom = load_with_collisions("humanoid", free_flyer=True)
    data, gdata = model.createData(), pin.GeometryData(geom)
    q = clamped_neutral(model)
    pin.framesForwardKinematics(model, data, q)
    pin.updateGeometryPlacements(model, data, geom, gdata)
    return model, data, geom, gdata, q


def test_humanoid_soles_flat_and_lowest():
    model, data, geom, gdata, _q = humanoid_neutral()
    left = data.oMf[model.getFrameId("left_sole")]
    right = data.oMf[model.getFrameId("right_sole")]
    assert left.translation[2] == pytest.approx(right.translation[2], abs=1e-12)
    np.testing.assert_allclose(left.rotation, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(right.rotation, np.eye(3), atol=1e-12)
    assert left.translation[1] > 0.05 and right.translation[1] < -0.05
    sole_z = left.translation[2]
    # standing height: pelvis at the hip height 0.530 H above the soles
    assert -sole_z == pytest.approx(0.530 * HUMANOID_HEIGHT, abs=1e-9)
    for fid, frame in enumerate(model.frames):
        if frame.name.startswith(("left_sole", "right_sole")):  # the frames and their joints
            continue
        assert data.oMf[fid].translation[2] > sole_z + 0.01, frame.name
    for k, obj in enumerate(geom.geometryObjects):
        assert lowest_point(obj, gdata.oMg[k]) >= sole_z - 1e-9, obj.name
    # head frame at eye height, hands below the hips
    head = data.oMf[model.getFrameId("head")].translation
    assert head[2] - sole_z == pytest.approx(0.936 * HUMANOID_HEIGHT, abs=1e-9)
    for side in ("left_hand", "right_hand"):
        assert data.oMf[model.getFrameId(side)].translation[2] < 0.0


def test_humanoid_feet_form_support_polygon():
    model, data, geom, gdata, _q = humanoid_neutral()
    for k, obj in enumerate(geom.geometryObjects):
        if geom_link(geom, k) in ("left_foot_link", "right_foot_link"):
            size = 2 * np.asarray(obj.geometry.halfSide)
            assert size[0] >= 0.2 and size[1] >= 0.09
    corners = foot_support(model, data, geom, gdata)
    assert len(corners) == 8
    width = corners[:, 1].max() - corners[:, 1].min()
    assert width > 0.2


def test_humanoid_com_between_feet():
    model, data, geom, gdata, q = humanoid_neutral()
    com = pin.centerOfMass(model, data, q)
    corners = foot_support(model, data, geom, gdata)
    assert corners[:, 0].min() < com[0] < corners[:, 0].max()
    left_y = data.oMf[model.getFrameId("left_sole")].translation[1]
    right_y = data.oMf[model.getFrameId("right_sole")].translation[1]
    assert right_y < com[1] < left_y
    assert abs(com[1]) < 1e-9  # symmetric body
    sole_z = data.oMf[model.getFrameId("left_sole")].translation[2]
    # whole-body CoM at ~0.55-0.58 of the stature
    assert 0.54 * HUMANOID_HEIGHT < com[2] - sole_z < 0.59 * HUMANOID_HEIGHT


# ---------------------------------------------------------------- collisions and SRDF
@pytest.mark.parametrize("name", ALL_ROBOTS)
def test_srdf_names_existing_links_and_disables_adjacent(name):
    """The SRDFs are RobotModel.compute_collision_exclusions output (robots/tools/srdf.py)."""
    root = urdf_root(name)
    links = {lk.get("name") for lk in root.iter("link")}
    with_geometry = {lk.get("name") for lk in root.iter("link") if lk.find("collision") is not None}
    pairs = srdf_pairs(name)
    assert pairs
    reasons = {
        e.get("reason") for e in ET.parse(srdf_path(name)).getroot().iter("disable_collisions")
    }
    assert reasons <= {"Adjacent", "Default", "Always", "Close", "Never"}
    disabled = set()
    for a, b in pairs:
        assert a in links and b in links, (a, b)
        assert a != b
        disabled.add(frozenset((a, b)))
    assert len(disabled) == len(pairs), "duplicate SRDF entries"
    for joint in root.iter("joint"):
        if joint.get("type") == "fixed":
            continue  # fixed links merge into one body: no pair between them
        pair = frozenset((joint.find("parent").get("link"), joint.find("child").get("link")))
        if pair <= with_geometry:
            assert pair in disabled, pair


@pytest.mark.parametrize("name", ALL_ROBOTS)
def test_neutral_configuration_is_collision_free(name):
    model, geom = load_with_collisions(name, free_flyer=(name == "humanoid"))
    assert len(geom.collisionPairs) > 0
    data, gdata = model.createData(), pin.GeometryData(geom)
    pin.computeDistances(model, data, geom, gdata, clamped_neutral(model))
    for k, pair in enumerate(geom.collisionPairs):
        distance = gdata.distanceResults[k].min_distance
        assert distance > 0.0, (
            geom.geometryObjects[pair.first].name,
            geom.geometryObjects[pair.second].name,
            distance,
        )


@pytest.mark.parametrize(
    ("name", "samples"),
    [
        ("panda", 2000),
        ("dual_arm", 2000),
        ("humanoid", 2000),
        ("ur5", 1000),
        ("opw_arm", 1000),
        ("spherical_arm", 1000),
    ],
)
def test_never_and_close_pairs_never_collide(name, samples):
    """Disabled pairs that are not adjacent or always colliding never collide."""
    model = load(name)
    geom = pin.buildGeomFromUrdfString(model, urdf_xml(name), pin.COLLISION)
    never = {frozenset(p) for p in srdf_pairs(name, "Never") + srdf_pairs(name, "Close")}
    assert never
    for i in range(geom.ngeoms):
        for j in range(i + 1, geom.ngeoms):
            if frozenset((geom_link(geom, i), geom_link(geom, j))) in never:
                geom.addCollisionPair(pin.CollisionPair(i, j))
    data, gdata = model.createData(), pin.GeometryData(geom)
    rng = np.random.default_rng(5)
    lower, upper = model.lowerPositionLimit, model.upperPositionLimit
    for _ in range(samples):
        q = rng.uniform(lower, upper)
        pick = rng.uniform(size=model.nq)
        q = np.where(pick < 0.15, lower, np.where(pick > 0.85, upper, q))
        assert not pin.computeCollisions(model, data, geom, gdata, q, True), q


def active_link_pairs(name: str) -> set[frozenset]:
    _model, geom = load_with_collisions(name)
    return {
        frozenset((geom_link(geom, p.first), geom_link(geom, p.second)))
        for p in geom.collisionPairs
    }


def test_panda_self_collision_is_possible():
    active = active_link_pairs("panda")
    for link in ("panda_link0", "panda_link1", "panda_link2"):
        assert frozenset(("panda_hand", link)) in active
    model, geom = load_with_collisions("panda")
    data, gdata = model.createData(), pin.GeometryData(geom)
    # elbow folded, hand driven back into the shoulder
    q = np.array([0.0, -0.3, 0.0, -3.0, 0.0, 0.5, 0.0])
    pin.computeCollisions(model, data, geom, gdata, q, False)
    hit = {
        frozenset((geom_link(geom, p.first), geom_link(geom, p.second)))
        for k, p in enumerate(geom.collisionPairs)
        if gdata.collisionResults[k].isCollision()
    }
    assert frozenset(("panda_hand", "panda_link1")) in hit


def test_dual_arm_arms_can_touch_each_other():
    active = active_link_pairs("dual_arm")
    assert frozenset(("left_panda_hand", "right_panda_hand")) in active
    assert frozenset(("left_panda_hand", "torso")) in active


def test_humanoid_limbs_can_touch_the_body():
    active = active_link_pairs("humanoid")
    for pair in (
        ("left_hand_link", "torso_link"),
        ("left_hand_link", "right_hand_link"),
        ("left_foot_link", "right_foot_link"),
        ("left_thigh_link", "right_thigh_link"),
        ("left_hand_link", "head_link"),
        ("left_forearm_link", "pelvis"),
    ):
        assert frozenset(pair) in active, pair


def test_planar_srdf_matches_default_xacro():
    _model, geom = load_with_collisions("planar_arm")
    pairs = {
        frozenset((geom_link(geom, p.first), geom_link(geom, p.second)))
        for p in geom.collisionPairs
    }
    assert pairs == {
        frozenset(("base_link", "link2")),
        frozenset(("base_link", "link3")),
        frozenset(("link1", "link3")),
    }
