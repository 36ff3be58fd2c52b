"""Reachability studies (stackik.reach): targets, envelope, correctness, results, maps.

Every reached target is checked independently of the package: Pinocchio forward
kinematics on a model built here from the URDF, the URDF's joint limits, coal distances
of the watched pairs on a geometry model built here (``pinocchio.computeDistance``), the
UR5's closed-form IK (``tests/ur5_dh.py``) for what is truly reachable, evaluator formulas
recomputed with Pinocchio's own Jacobian.

- targets: grids (centres, orientations, metadata), super-Fibonacci and sphere sets,
  CSV with and without a header (errors name the row), workpiece meshes and point clouds
  (approach along minus the normal, standoff, spacing), typed errors.
- envelope: vectorized chain FK equals Pinocchio; no pose of fresh random
  configurations is rejected; far targets are.
- studies: reached targets verify (pose, limits with the margin, collision distances);
  UR5 grid against the closed form (no false positives, false negatives <= 1 %);
  reasons (OUT_OF_REACH, LIMITS, CONSTRAINT, COLLISION, BUDGET); evaluators' formulas;
  a user evaluator; bad input.
- results: summary, compare, plot (PNG files), save/load, CSV, HDF5.
- capability maps: index = fraction reachable, lookups, slices, save/load, inverse
  reachability and base placement.
"""

from __future__ import annotations

import csv
import math
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

pytest.importorskip("zarr")
pytest.importorskip("trimesh")
pytest.importorskip("matplotlib")

from stackik import (
    FrameNotFound,
    InvalidInput,
    KinematicsSolver,
    MalformedDescription,
    RobotFileNotFound,
    RobotModel,
    ShapeError,
)
from stackik.reach import (
    CapabilityMap,
    CollisionDistance,
    Evaluator,
    JointLimitDistance,
    Manipulability,
    ReachBudget,
    ReachResult,
    ReachStudy,
    Reason,
    ReferencePosture,
    grid_targets,
    sphere_rotations,
    super_fibonacci_rotations,
    targets_from_csv,
    targets_from_mesh,
)
from stackik.reach.envelope import ChainGeometry, ReachEnvelope
from stackik.reach.study import spatial_order
from ur5_dh import UR5_A, UR5_ALPHA, UR5_D, sdh

ROOT = Path(__file__).resolve().parents[1]
ROBOTS = ROOT / "robots"
UR5 = ROBOTS / "ur5" / "ur5.urdf"
UR5_SRDF = ROBOTS / "ur5" / "ur5.srdf"
PANDA = ROBOTS / "panda" / "panda.urdf"
PANDA_SRDF = ROBOTS / "panda" / "panda.srdf"
WORKPIECE = ROOT / "examples" / "data" / "workpiece.stl"
TOL_P, TOL_O = 1e-5, 1e-4


# -- independent checks ---------------------------------------------------------------------
class Independent:
    """A robot rebuilt from its URDF with Pinocchio alone (model, geometry, limits)."""

    def __init__(self, urdf: Path, srdf: Path | None = None) -> None:
        self.model, self.geom, _ = pin.buildModelsFromUrdf(
            str(urdf), geometry_types=[pin.GeometryType.COLLISION, pin.GeometryType.VISUAL]
        )
        self.data = self.model.createData()
        self.gdata = pin.GeometryData(self.geom)
        self.names = {g.name: k for k, g in enumerate(self.geom.geometryObjects)}

    def pose(self, q: np.ndarray, frame: str) -> pin.SE3:
        pin.framesForwardKinematics(self.model, self.data, q)
        return pin.SE3(self.data.oMf[self.model.getFrameId(frame)])

    def errors(self, q: np.ndarray, frame: str, T: np.ndarray) -> tuple[float, float]:
        M = pin.SE3(T).actInv(self.pose(q, frame))
        return float(np.linalg.norm(M.translation)), float(np.linalg.norm(pin.log3(M.rotation)))

    def distances(self, q: np.ndarray, pairs: list[tuple[str, str]]) -> np.ndarray:
        """coal distances of the named geometry pairs at ``q`` (one Pinocchio call)."""
        key = tuple(pairs)
        if getattr(self, "_pairs_key", None) != key:
            self.geom.removeAllCollisionPairs()
            for a, b in pairs:
                self.geom.addCollisionPair(pin.CollisionPair(self.names[a], self.names[b]))
            self.gdata = pin.GeometryData(self.geom)
            self._pairs_key = key
        pin.computeDistances(self.model, self.data, self.geom, self.gdata, q)
        return np.array([r.min_distance for r in self.gdata.distanceResults])

    def distance(self, q: np.ndarray, a: str, b: str) -> float:
        pin.updateGeometryPlacements(self.model, self.data, self.geom, self.gdata, q)
        req = pin.coal.DistanceRequest()
        res = pin.coal.DistanceResult()
        ga, gb = self.geom.geometryObjects[self.names[a]], self.geom.geometryObjects[self.names[b]]
        Ma, Mb = self.gdata.oMg[self.names[a]], self.gdata.oMg[self.names[b]]
        return pin.coal.distance(
            ga.geometry, pin.coal.Transform3s(Ma.rotation, Ma.translation),
            gb.geometry, pin.coal.Transform3s(Mb.rotation, Mb.translation), req, res,
        )  # fmt: skip


def check_reached(result: ReachResult, urdf: Path, frame: str, solver=None, margin=0.0) -> int:
    """Every reachable target: FK within tolerance, limits (margin), watched distances."""
    ind = Independent(urdf)
    lo, hi = ind.model.lowerPositionLimit + margin, ind.model.upperPositionLimit - margin
    pairs, threshold = [], 0.0
    if solver is not None and solver.get_constraint("collision") is not None:
        col = solver.get_constraint("collision")
        pairs, threshold = col.pair_names(), col.min_distance
    n = 0
    for k in np.flatnonzero(result.reachable):
        q = result.q[k]
        ep, eo = ind.errors(q, frame, result.targets.poses[k])
        assert ep <= TOL_P + 1e-9 and eo <= TOL_O + 1e-9, (k, ep, eo)
        assert np.all(q >= lo - 1e-9) and np.all(q <= hi + 1e-9), (k, q)
        if pairs:
            d = ind.distances(q, pairs)
            assert d.min() >= threshold - 1e-9, (k, pairs[int(np.argmin(d))], d.min())
        assert result.position_error[k] == pytest.approx(ep, abs=1e-9)
        n += 1
    return n


def fk_dh(q: np.ndarray) -> np.ndarray:
    T = np.eye(4)
    for i in range(6):
        T = T @ sdh(UR5_D[i], q[i], UR5_A[i], UR5_ALPHA[i])
    return T


def ur5_truth(T: np.ndarray, slack: float) -> bool:
    """Closed-form UR5 IK (standard DH) with ``slack`` on the acos arguments.

    ``slack = 0``: an exact solution exists (verified by the DH product to 1e-9).
    ``slack > 0``: a solution exists for a pose within a hair of ``T`` (the arguments
    are clipped): such targets may be reached within the IK tolerance.
    """
    d1, a2, a3, d4, d6 = UR5_D[0], UR5_A[1], UR5_A[2], UR5_D[3], UR5_D[5]
    wrist = T @ np.array([0.0, 0.0, -d6, 1.0])
    inv = np.linalg.inv(T)
    r = math.hypot(wrist[0], wrist[1])
    if r < 1e-12 or d4 / r > 1 + slack:
        return False
    for s1 in (1, -1):
        t1 = math.atan2(wrist[1], wrist[0]) + s1 * math.acos(min(1.0, d4 / r)) + math.pi / 2
        c5 = (T[0, 3] * math.sin(t1) - T[1, 3] * math.cos(t1) - d4) / d6
        if abs(c5) > 1 + slack:
            continue
        for s5 in (1, -1):
            t5 = s5 * math.acos(max(-1.0, min(1.0, c5)))
            if abs(math.sin(t5)) < 1e-9:
                t6 = 0.0
            else:
                t6 = math.atan2(
                    (-inv[1, 0] * math.sin(t1) + inv[1, 1] * math.cos(t1)) / math.sin(t5),
                    (inv[0, 0] * math.sin(t1) - inv[0, 1] * math.cos(t1)) / math.sin(t5),
                )
            t14 = (
                np.linalg.inv(sdh(d1, t1, 0.0, UR5_ALPHA[0]))
                @ T
                @ np.linalg.inv(sdh(UR5_D[5], t6, 0.0, 0.0))
                @ np.linalg.inv(sdh(UR5_D[4], t5, 0.0, UR5_ALPHA[4]))
            )
            p3 = t14[:3, 3] - d4 * np.array([0.0, 0.0, 1.0])
            c3 = (p3[0] ** 2 + p3[1] ** 2 - a2 * a2 - a3 * a3) / (2 * a2 * a3)
            if abs(c3) > 1 + slack:
                continue
            for s3 in (1, -1):
                t3 = s3 * math.acos(max(-1.0, min(1.0, c3)))
                t2 = math.atan2(p3[1], p3[0]) - math.atan2(
                    a3 * math.sin(t3), a2 + a3 * math.cos(t3)
                )
                t34 = np.linalg.inv(sdh(0.0, t2, a2, 0.0) @ sdh(0.0, t3, a3, 0.0)) @ t14
                t4 = math.atan2(t34[1, 0], t34[0, 0])
                q = np.array([t1, t2, t3, t4, t5, t6])
                err = np.abs(fk_dh(q) - T).max()
                if err < (1e-9 if slack == 0 else 1e-3):
                    return True
    return False


# -- fixtures -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ur5():
    return RobotModel(UR5, srdf_path=UR5_SRDF, load_visuals=False)


@pytest.fixture(scope="module")
def panda():
    return RobotModel(PANDA, srdf_path=PANDA_SRDF, load_visuals=False)


@pytest.fixture(scope="module")
def ur5_collision(ur5):
    s = KinematicsSolver(ur5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s.configure_collision_constraint(0.005)
    return s


@pytest.fixture(scope="module")
def ur5_grid_study(ur5, ur5_collision):
    ts = grid_targets([[-0.9, -0.9, -0.4], [0.9, 0.9, 1.0]], 0.2, 12)
    res = ReachStudy(ur5, "tool0", ts, ur5_collision, chunk_size=512).run("serial", progress=False)
    return ts, res


# -- targets --------------------------------------------------------------------------------
def test_grid_targets_are_voxel_centres_times_orientations():
    ts = grid_targets([[0, 0, 0], [0.3, 0.2, 0.1]], 0.1, 5)
    assert ts.grid.shape == (3, 2, 1) and len(ts) == 6 * 5
    P = ts.positions.reshape(6, 5, 3)
    centres = [[x, y, 0.05] for x in (0.05, 0.15, 0.25) for y in (0.05, 0.15)]
    assert np.allclose(P[:, 0], centres)
    assert np.allclose(P, P[:, :1])  # the orientations of a voxel share its centre
    R = ts.poses[:5, :3, :3]
    assert np.allclose(R @ np.swapaxes(R, 1, 2), np.eye(3), atol=1e-12)
    assert np.allclose(np.linalg.det(R), 1.0)
    assert ts.metadata["voxel"].tolist()[:6] == [0] * 5 + [1]
    assert ts.metadata["orientation"].tolist()[:6] == [0, 1, 2, 3, 4, 0]
    flat, inside = ts.grid.voxel_index(np.array([[0.16, 0.04, 0.0], [0.5, 0.0, 0.0]]))
    assert flat[0] == 2 and inside.tolist() == [True, False]  # voxel (1, 0, 0)


def test_orientation_sets_are_rotations_spread_over_so3():
    R = super_fibonacci_rotations(200)
    assert np.allclose(R @ np.swapaxes(R, 1, 2), np.eye(3), atol=1e-12)
    assert np.allclose(np.linalg.det(R), 1.0)
    # Spread: the nearest neighbour of each rotation is far, and no two coincide.
    tr = np.einsum("aij,bij->ab", R, R)
    ang = np.arccos(np.clip((tr - 1) / 2, -1, 1)) + np.eye(200) * 10
    nearest = ang.min(axis=1)
    assert nearest.min() > 0.15 and nearest.max() < 0.8
    # Roughly uniform: the mean of R over SO(3) is 0.
    assert np.abs(R.mean(axis=0)).max() < 0.05
    S = sphere_rotations(30, 4, axis="z")
    assert S.shape == (120, 3, 3)
    assert np.allclose(S[0:4, :, 2], S[0, :, 2])  # the rolls keep the tool axis


def test_targets_from_csv_with_and_without_header(tmp_path):
    quats = np.array([[1, 0, 0, 0], [math.cos(0.3), 0, math.sin(0.3), 0]])
    f = tmp_path / "t.csv"
    f.write_text("qx,name,z,QW,y,x,qy,qz\n" + "0,a,0.3,1,0.2,0.1,0,0\n"
                 f"0,b,0.6,{quats[1, 0]},0.5,0.4,{quats[1, 2]},0\n")  # fmt: skip
    ts = targets_from_csv(f)
    assert np.allclose(ts.positions, [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    assert np.allclose(ts.poses[1, :3, :3], pin.Quaternion(*quats[1]).toRotationMatrix())
    assert ts.metadata["name"].tolist() == ["a", "b"]
    g = tmp_path / "plain.csv"
    g.write_text("0.1,0.2,0.3,2,0,0,0\n# comment\n\n0.4,0.5,0.6,0,0,0,1\n")
    ts = targets_from_csv(g)
    assert np.allclose(ts.poses[0, :3, :3], np.eye(3))  # normalized (2, 0, 0, 0)
    assert np.allclose(ts.poses[1, :3, :3], np.diag([-1, -1, 1]))
    for text, fragment in [
        ("x,y,z,qw,qx,qy\n1,2,3,1,0,0\n", "lacks the columns ['qz']"),
        ("1,2,3,1,0,0\n", "row 1 has 6 fields"),
        ("1,2,3,1,0,0,0\n1,2,3,0,0,0,0\n", "row 2: non-finite value or zero quaternion"),
        ("x,y,z,qw,qx,qy,qz\n1,2,3,1,0,0,zero\n", "row 2 holds a value that is not a number"),
    ]:
        bad = tmp_path / "bad.csv"
        bad.write_text(text)
        with pytest.raises(MalformedDescription, match=fragment.replace("[", r"\[")):
            targets_from_csv(bad)
    with pytest.raises(RobotFileNotFound):
        targets_from_csv(tmp_path / "missing.csv")


def test_targets_from_mesh_approach_along_minus_the_normal():
    import trimesh

    mesh = trimesh.load(WORKPIECE)
    ts = targets_from_mesh(WORKPIECE, spacing=0.05, standoff=0.02)
    assert 20 <= len(ts) <= 200 and ts.kind == "mesh"
    n = ts.metadata["normal"]
    assert np.allclose(ts.poses[:, :3, 2], -n)  # tool z along minus the normal
    assert np.allclose(ts.positions, ts.metadata["point"] + 0.02 * n)
    # the points lie on the surface, with their face's normal, at least a spacing apart
    tri = mesh.triangles[ts.metadata["face"]]
    bary = trimesh.triangles.points_to_barycentric(tri, ts.metadata["point"])
    assert (bary > -1e-9).all() and np.allclose(
        np.einsum("ni,nij->nj", bary, tri), ts.metadata["point"]
    )
    assert np.allclose(mesh.face_normals[ts.metadata["face"]], n)
    d = np.linalg.norm(ts.metadata["point"][:, None] - ts.metadata["point"][None], axis=-1)
    assert (d + np.eye(len(ts)) * 9).min() >= 0.05
    # a fixed approach direction, a pose and a scale
    M = np.eye(4)
    M[:3, 3] = [1.0, 0.0, 0.0]
    ts2 = targets_from_mesh(WORKPIECE, count=10, approach=(0, 0, -1), pose=M, scale=2.0)
    assert np.allclose(ts2.poses[:, :3, 2], [0, 0, -1])
    assert ts2.positions[:, 0].min() > 1.0 + 2 * 0.25 - 1e-6


def test_point_clouds_need_normals(tmp_path):
    pts = np.random.default_rng(0).uniform(0, 0.3, (40, 3))
    header = "ply\nformat ascii 1.0\nelement vertex 40\n" + "".join(
        f"property float {k}\n" for k in ("x", "y", "z", "nx", "ny", "nz")
    )
    body = "".join(f"{p[0]} {p[1]} {p[2]} 0 0 1\n" for p in pts)
    cloud = tmp_path / "cloud.ply"
    cloud.write_text(header + "end_header\n" + body)
    ts = targets_from_mesh(cloud, spacing=0.05)
    assert ts.kind == "points" and 3 <= len(ts) <= 40
    assert np.allclose(ts.poses[:, :3, 2], [0, 0, -1])
    bare = tmp_path / "bare.ply"
    bare.write_text(header.replace("property float nx\nproperty float ny\nproperty float nz\n", "")
                    + "end_header\n" + "".join(f"{p[0]} {p[1]} {p[2]}\n" for p in pts))  # fmt: skip
    with pytest.raises(MalformedDescription, match="normals"):
        targets_from_mesh(bare, spacing=0.05)
    junk = tmp_path / "junk.stl"
    junk.write_bytes(b"solid nothing\nthis is not an stl\n")
    with pytest.raises(MalformedDescription):
        targets_from_mesh(junk, spacing=0.05)
    with pytest.raises(RobotFileNotFound):
        targets_from_mesh(tmp_path / "missing.stl", spacing=0.05)
    with pytest.raises(InvalidInput, match="exactly one of spacing and count"):
        targets_from_mesh(WORKPIECE)


# -- envelope -------------------------------------------------------------------------------
@pytest.mark.parametrize("urdf,frame", [(UR5, "tool0"), (PANDA, "panda_hand_tcp")])
def test_envelope_keeps_every_reachable_pose(urdf, frame):
    robot = RobotModel(urdf, load_visuals=False)
    study = ReachStudy(robot, frame, np.eye(4)[None], evaluators=[])
    env = study.envelope()
    chain = study._plain_chain
    geom = ChainGeometry.of(chain)
    ind = Independent(urdf)
    rng = np.random.default_rng(42)
    lo, hi = ind.model.lowerPositionLimit, ind.model.upperPositionLimit
    Q = rng.uniform(lo, hi, (20_000, ind.model.nq))
    R, p = geom.fk(Q[:50])
    for k in range(50):  # vectorized FK equals Pinocchio's
        M = ind.pose(Q[k], frame)
        assert np.allclose(R[k], M.rotation, atol=1e-12) and np.allclose(p[k], M.translation)
    T = np.array([ind.pose(q, frame).homogeneous for q in Q])
    assert env.contains(T).all()
    far = T[:100].copy()
    far[:, :3, 3] += 5.0 * far[:, :3, 3] / np.linalg.norm(far[:, :3, 3], axis=1, keepdims=True)
    assert not env.contains(far).any()
    # A wrist point that the last joints cannot move: same place for any last-joint value.
    assert isinstance(env, ReachEnvelope) and env.wrist_joints < chain.n


# -- studies: correctness -------------------------------------------------------------------
def test_reached_targets_verify_independently(ur5_grid_study, ur5_collision):
    _, res = ur5_grid_study
    counts = res.reasons()
    assert counts["REACHABLE"] > 1000 and counts["OUT_OF_REACH"] > 1000
    assert counts["NOT_RUN"] == 0 and res.complete
    assert check_reached(res, UR5, "tool0", ur5_collision) == counts["REACHABLE"]
    # unreachable targets carry no configuration
    assert np.isnan(res.q[~res.reachable]).all()
    assert np.isinf(res.position_error[~res.reachable]).all()


def test_ur5_grid_against_the_closed_form(ur5):
    ts = grid_targets([[-0.95, -0.95, -0.55], [0.95, 0.95, 1.05]], 0.125, 8)
    res = ReachStudy(ur5, "tool0", ts, evaluators=[]).run("serial", progress=False)
    strict = np.array([ur5_truth(T, 0.0) for T in ts.poses])
    # Reached but not exactly reachable: only a hair outside the workspace is allowed.
    doubt = np.flatnonzero(res.reachable & ~strict)
    false_pos = np.zeros(len(ts), dtype=bool)
    false_pos[doubt] = [not ur5_truth(ts.poses[k], 1e-4) for k in doubt]
    false_neg = strict & ~res.reachable
    assert strict.sum() > 5000
    assert not false_pos.any(), np.flatnonzero(false_pos)[:10]
    assert false_neg.sum() <= 0.01 * strict.sum(), (false_neg.sum(), strict.sum())
    # The envelope never drops a truly reachable target.
    assert not (strict & (res.reason == Reason.OUT_OF_REACH)).any()
    assert check_reached(res, UR5, "tool0") == res.reachable.sum()


def test_limit_margin_and_panda(panda):
    solver = KinematicsSolver(panda)
    solver.set_limit_margin(0.05)
    ts = grid_targets([[0.2, -0.4, 0.1], [0.7, 0.4, 0.6]], 0.1, 10)
    res = ReachStudy(panda, "panda_hand_tcp", ts, solver).run("serial", progress=False)
    assert res.reachable.sum() > 100
    assert check_reached(res, PANDA, "panda_hand_tcp", solver, margin=0.05) == res.reachable.sum()


PLANAR = """<?xml version="1.0"?>
<robot name="planar2">
  <link name="base"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <link name="l1"/>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/>
    <origin xyz="0.5 0 0"/><axis xyz="0 0 1"/>
    <limit lower="0.1" upper="1.5" effort="1" velocity="1"/></joint>
  <link name="l2"/>
  <joint name="tip_joint" type="fixed"><parent link="l2"/><child link="tip"/>
    <origin xyz="0.4 0 0"/></joint>
  <link name="tip"/>
</robot>
"""


def test_reasons_limits_constraint_budget():
    robot = RobotModel.from_urdf_string(PLANAR, load_visuals=False)
    model = robot.model
    data = model.createData()
    poses = []
    for q2 in (0.8, 2.5, -1.0):  # inside the limits, beyond the upper, below the lower
        pin.framesForwardKinematics(model, data, np.array([0.3, q2]))
        poses.append(data.oMf[model.getFrameId("tip")].homogeneous)
    far = np.eye(4)
    far[0, 3] = 5.0
    T = np.array([*poses, far])
    res = ReachStudy(robot, "tip", T, evaluators=[]).run("serial", progress=False)
    # 2.5 rad puts the tip 0.3 m from the base, inside the annulus the limits allow: the
    # envelope rejects it; -1.0 reaches the annulus, but only beyond the lower limit.
    assert [Reason(r) for r in res.reason] == [
        Reason.REACHABLE, Reason.OUT_OF_REACH, Reason.LIMITS, Reason.OUT_OF_REACH
    ]  # fmt: skip
    res = ReachStudy(robot, "tip", T, evaluators=[], envelope=False).run("serial", progress=False)
    assert [Reason(r) for r in res.reason][:3] == [Reason.REACHABLE, Reason.LIMITS, Reason.LIMITS]
    res = ReachStudy(robot, "tip", T, evaluators=[], validate=_never).run("serial", progress=False)
    assert Reason(res.reason[0]) == Reason.CONSTRAINT
    # A wall-clock cap far too short: targets left are BUDGET (the opt-in, documented).
    res = ReachStudy(robot, "tip", T, evaluators=[], time_budget=1e-12).run(
        "serial", progress=False
    )
    assert Reason(res.reason[2]) == Reason.BUDGET


def _never(q: np.ndarray) -> bool:
    return False


def test_collision_reason_means_only_colliding_solutions(ur5, ur5_grid_study):
    ts, res = ur5_grid_study
    hit = np.flatnonzero(res.reason == Reason.COLLISION)
    assert hit.size > 0
    free = ReachStudy(ur5, "tool0", ts.poses[hit], evaluators=[]).run("serial", progress=False)
    # Without the collision constraint (almost) all of them are reachable.
    assert free.reachable.mean() > 0.9


# -- evaluators -----------------------------------------------------------------------------
class Height(Evaluator):
    """A user's evaluator: height of the target over 1 m."""

    name = "height"

    def evaluate(self, ctx):
        return np.clip(ctx.poses[:, 2, 3], 0.0, 1.0)


def test_evaluator_formulas(ur5, ur5_collision):
    ts = targets_from_mesh(WORKPIECE, spacing=0.08)
    q_ref = np.array([0.0, -1.2, 1.4, -1.8, -1.5, 0.0])
    evs = [
        Manipulability(scale=0.1),
        JointLimitDistance(2.0, exponent=2.0),
        CollisionDistance(distance=0.2),
        ReferencePosture(sigma=2.0),
        Height(weight=0.5),
    ]
    res = ReachStudy(ur5, "tool0", ts, ur5_collision, evs, reference_q=q_ref).run(
        "serial", progress=False
    )
    ind = Independent(UR5)
    col = ur5_collision.get_constraint("collision")
    reached = np.flatnonzero(res.reachable)
    assert reached.size > 10
    lo, hi = ind.model.lowerPositionLimit, ind.model.upperPositionLimit
    for k in reached:
        q = res.q[k]
        J = pin.computeFrameJacobian(
            ind.model, ind.data, q, ind.model.getFrameId("tool0"), pin.LOCAL_WORLD_ALIGNED
        )
        w = math.sqrt(max(np.linalg.det(J @ J.T), 0.0))
        assert res.scores["manipulability"][k] == pytest.approx(min(1.0, w / 0.1), abs=1e-9)
        d = np.min(np.minimum(q - lo, hi - q) / ((hi - lo) / 2))
        assert res.scores["joint_limits"][k] == pytest.approx(d**2, abs=1e-12)
        dmin = min(ind.distance(q, a, b) for a, b in col.pair_names())
        assert res.scores["collision_distance"][k] == pytest.approx(min(1, dmin / 0.2), abs=1e-6)
        post = math.exp(-np.sum((q - q_ref) ** 2) / (2 * 2.0**2))
        assert res.scores["reference_posture"][k] == pytest.approx(post, abs=1e-12)
        h = min(1.0, max(0.0, ts.poses[k, 2, 3]))
        assert res.scores["height"][k] == pytest.approx(h)
        total = (
            res.scores["manipulability"][k]
            + 2 * res.scores["joint_limits"][k]
            + res.scores["collision_distance"][k]
            + res.scores["reference_posture"][k]
            + 0.5 * res.scores["height"][k]
        ) / 5.5
        assert res.score[k] == pytest.approx(total)
    assert (res.score[~res.reachable] == 0).all()


# -- results ----------------------------------------------------------------------------------
def _is_png(path: Path) -> bool:
    return path.stat().st_size > 1000 and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_summary_compare_plot_save_load(tmp_path, ur5, ur5_collision):
    ts = targets_from_mesh(WORKPIECE, spacing=0.04)
    a = ReachStudy(ur5, "tool0", ts, evaluators=[Manipulability()]).run("serial", progress=False)
    lifted = ts.poses.copy()
    lifted[:, 2, 3] += 0.45  # the same part, high above: some targets are lost
    lifted_ts = type(ts)(lifted, ts.metadata, ts.kind, None, ts.source, ts.mesh_transform)
    s = a.summary()
    assert s.targets == len(ts) and s.reachable == a.reachable.sum()
    assert s.fraction == pytest.approx(a.reachable.mean())
    assert s.mean_score == pytest.approx(a.score[a.reachable].mean())
    assert "reachable" in str(s)
    b_same = ReachStudy(ur5, "tool0", ts, ur5_collision, [Manipulability()]).run(
        "serial", progress=False
    )
    c = a.compare(b_same, names=("free", "collision"))
    assert not c.gained.any() or (b_same.reachable & ~a.reachable).sum() == c.gained.sum()
    assert (c.lost == (a.reachable & ~b_same.reachable)).all()
    assert "collision" in c.table() and "gained in collision" in c.table()
    b = ReachStudy(ur5, "tool0", lifted_ts, evaluators=[Manipulability()]).run(
        "serial", progress=False
    )
    with pytest.raises(InvalidInput, match="different targets"):
        a.compare(b)
    # plots
    png, svg = tmp_path / "study.png", tmp_path / "study.svg"
    a.plot(png)
    a.plot(svg, value="manipulability")
    assert _is_png(png) and svg.read_text().lstrip().startswith("<?xml")
    with pytest.raises(InvalidInput, match="figure file"):
        a.plot(tmp_path / "fig.jpg")
    with pytest.raises(InvalidInput, match="unknown value"):
        a.plot(None, value="nope")
    # save / load
    a.save(tmp_path / "a.zarr")
    back = ReachResult.load(tmp_path / "a.zarr")
    for name in ("reason", "q", "score", "position_error", "iterations"):
        assert np.array_equal(getattr(back, name), getattr(a, name), equal_nan=True), name
    assert np.array_equal(back.targets.poses, a.targets.poses)
    assert np.array_equal(back.targets.metadata["normal"], ts.metadata["normal"])
    # exports
    a.to_csv(tmp_path / "a.csv")
    rows = list(csv.DictReader(open(tmp_path / "a.csv")))
    assert len(rows) == len(ts) and int(rows[0]["reachable"]) == int(a.reachable[0])
    assert float(rows[3]["x"]) == pytest.approx(ts.positions[3, 0])
    h5py = pytest.importorskip("h5py")
    a.to_hdf5(tmp_path / "a.h5")
    with h5py.File(tmp_path / "a.h5") as f:
        assert np.array_equal(f["reachable"][:], a.reachable)
        assert np.allclose(f["scores/manipulability"][:], a.scores["manipulability"])


# -- capability maps --------------------------------------------------------------------------
def test_capability_map_index_lookups_and_base_placement(tmp_path, ur5, ur5_grid_study):
    ts, res = ur5_grid_study
    cmap = CapabilityMap.from_result(res)
    g = cmap.grid
    frac = res.reachable.reshape(g.n_voxels, g.n_orientations).mean(axis=1)
    assert np.allclose(cmap.index.reshape(-1), frac)
    centres = g.centres()
    assert np.allclose(cmap.reachability(centres), frac)
    assert np.allclose(cmap.reachability(centres + 0.04), frac)  # the nearest voxel
    assert cmap.reachability(np.array([[9.0, 0, 0]]))[0] == 0.0
    assert np.array_equal(cmap.query(ts.poses), res.reachable)
    # plots and files
    png = tmp_path / "slice.png"
    cmap.plot_slice("z", 0.3, png)
    assert _is_png(png)
    cmap.save(tmp_path / "map.zarr")
    back = CapabilityMap.load(tmp_path / "map.zarr")
    assert np.array_equal(back.index, cmap.index) and np.allclose(back.base, np.eye(4))
    # base placement: task poses the robot reaches from its own base
    tasks = ts.poses[res.reachable][::40]
    shifted = np.eye(4)
    shifted[:3, 3] = [3.0, 0.0, 0.0]
    turned = np.eye(4)
    turned[:3, :3] = pin.rpy.rpyToMatrix(0, 0, 0.7)
    bp = cmap.base_placement(tasks, np.array([shifted, np.eye(4), turned]))
    assert bp.ranking[0] == 1 and bp.fraction[1] == 1.0 and bp.fraction[0] == 0.0
    assert np.allclose(bp.best, np.eye(4))
    # inverse reachability: every returned base reaches the task pose through its entry
    task = tasks[0]
    bases, weights = cmap.inverse(task)
    assert len(bases) == cmap.reachable.sum() and (weights > 0).all()
    local = np.linalg.inv(bases[:50]) @ task  # the task seen from each base
    assert cmap.query(local).all()


def test_capability_map_build(panda):
    cmap = CapabilityMap.build(
        panda, "panda_hand_tcp", resolution=0.25, orientations=6, executor="serial",
        progress=False,
    )  # fmt: skip
    assert cmap.result is not None and cmap.result.complete
    lo = cmap.grid.origin - cmap.grid.resolution / 2
    hi = lo + cmap.grid.resolution * np.array(cmap.grid.shape)
    env = ReachStudy(panda, "panda_hand_tcp", np.eye(4)[None]).envelope()
    assert np.all(lo <= env.tip_bounds[0] + cmap.grid.resolution)
    assert np.all(hi >= env.tip_bounds[1] - cmap.grid.resolution)
    assert 0 < cmap.index.max() <= 1.0 and "CapabilityMap" in repr(cmap)


# -- bad input --------------------------------------------------------------------------------
def test_bad_input_raises_typed_errors(ur5):
    T = np.eye(4)[None]
    with pytest.raises(FrameNotFound):
        ReachStudy(ur5, "nope", T)
    with pytest.raises(ShapeError):
        ReachStudy(ur5, "tool0", np.eye(3))
    for kwargs, what in [
        ({"seeding": "magic"}, "seeding"),
        ({"time_budget": -1.0}, "time_budget"),
        ({"chunk_size": 0}, "chunk_size"),
        ({"evaluators": [object()]}, None),
        ({"evaluators": [Manipulability(), Manipulability()]}, None),
        ({"budget": {"restart_rounds": 2}}, "budget"),
        ({"solver": "solver"}, None),
    ]:
        with pytest.raises(InvalidInput) as exc:
            ReachStudy(ur5, "tool0", T, **kwargs)
        assert what is None or exc.value.what == what
    with pytest.raises(InvalidInput):
        ReachBudget(restart_rounds=-1)
    study = ReachStudy(ur5, "tool0", T)
    with pytest.raises(InvalidInput, match="executor"):
        study.run("threads")
    with pytest.raises(InvalidInput, match="workers"):
        study.run("serial", workers=0)
    with pytest.raises(InvalidInput):
        grid_targets([[0, 0, 0], [1, 1, 1]], 1e-4, 50)  # too many targets
    with pytest.raises(InvalidInput):
        grid_targets([[1, 0, 0], [0, 1, 1]], 0.1, 5)  # inverted bounds
    with pytest.raises(ShapeError):
        grid_targets([[0, 0, 0], [1, 1, 1]], 0.1, np.eye(2))


def test_spatial_order_is_a_permutation_keeping_voxels_together():
    ts = grid_targets([[0, 0, 0], [0.4, 0.4, 0.4]], 0.1, 3)
    order = spatial_order(ts.positions)
    assert sorted(order.tolist()) == list(range(len(ts)))
    vox = ts.metadata["voxel"][order]
    assert (np.diff(vox) != 0).sum() == ts.grid.n_voxels - 1  # each voxel's targets in a row
