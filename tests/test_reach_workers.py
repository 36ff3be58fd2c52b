"""What a study sends its workers, and what a finished store costs to resume.

- ``RobotModel.without_visuals`` copies the description exactly (poses, Jacobians,
  collision distances bit for bit, edits such as limits and the base placement) and
  leaves the visual meshes out;
- the serial executor pickles nothing (a robot that refuses to pickle still runs);
- the pool's and Ray's payload holds the robot once, without visual geometry, a
  fraction of the robot's own pickle on example-robot-data's UR10, and its chunk solver
  gives the serial executor's results;
- the pool and Ray unpickle the payload once per worker process, not once per chunk;
- a finished store resumes without building the reach envelope, whose stored
  description equals the built envelope's.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("zarr")

from stackik import KinematicsSolver, RobotModel
from stackik.ik.global_ import GlobalIK
from stackik.reach import ReachStudy, grid_targets
from stackik.reach.envelope import ReachEnvelope, describe_envelope
from stackik.reach.executors import WorkerContext

ROOT = Path(__file__).resolve().parents[1]
PANDA = ROOT / "robots" / "panda" / "panda.urdf"
PANDA_SRDF = ROOT / "robots" / "panda" / "panda.srdf"
UR5 = ROOT / "robots" / "ur5" / "ur5.urdf"
ARRAYS = ("reason", "q", "score", "position_error", "orientation_error", "iterations")


def same(a, b) -> None:
    for name in ARRAYS:
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name


def assert_same_description(a: RobotModel, b: RobotModel, seed: int = 0) -> None:
    assert (a.nq, a.nv) == (b.nq, b.nv)
    assert a.get_frame_names() == b.get_frame_names()
    assert a.get_collision_pair_names() == b.get_collision_pair_names()
    for x, y in zip(a.get_joint_limits(), b.get_joint_limits(), strict=True):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.base_placement.homogeneous, b.base_placement.homogeneous)
    rng = np.random.default_rng(seed)
    for _ in range(4):
        q = a.random_configuration(rng)
        a.update_kinematics(q)
        b.update_kinematics(q)
        for frame in a.get_frame_names()[-4:]:
            np.testing.assert_array_equal(
                a.get_frame_pose(frame).homogeneous, b.get_frame_pose(frame).homogeneous
            )
            np.testing.assert_array_equal(
                a.get_frame_jacobian(frame, "world"), b.get_frame_jacobian(frame, "world")
            )
        np.testing.assert_array_equal(
            a.compute_collision_distances(), b.compute_collision_distances()
        )


class _Unpicklable:
    def __reduce__(self):
        raise AssertionError("the robot was pickled")


class CountingValidate:
    """A ``validate`` callback that records every process that unpickles it."""

    def __init__(self, log: str) -> None:
        self.log = log

    def __call__(self, q: np.ndarray) -> bool:
        return True

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        with open(self.log, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")


# -- the copy without visuals ------------------------------------------------------------------
def test_without_visuals_is_an_exact_independent_copy():
    robot = RobotModel(PANDA, srdf_path=PANDA_SRDF)
    robot.set_base_placement(
        np.array([[0, -1, 0, 0.3], [1, 0, 0, -0.1], [0, 0, 1, 0.7], [0, 0, 0, 1.0]])
    )
    lo, hi = robot.get_joint_limits()
    robot.set_joint_limits(lo + 0.1, hi - 0.1)
    robot.add_frame("tcp", "panda_hand", np.eye(4))
    assert robot.visual_model is not None and robot.visual_model.ngeoms > 0
    light = robot.without_visuals()
    assert light.visual_model is None and light.visual_data is None
    assert robot.visual_model.ngeoms > 0  # the original keeps its visuals
    assert_same_description(robot, light)
    # Independent: editing the copy leaves the original alone, and the copy re-mounts.
    light.set_joint_limits(lo, hi)
    np.testing.assert_array_equal(robot.get_joint_limits()[0], lo + 0.1)
    light.set_base_placement(np.eye(4))
    assert robot.base_placement.translation[2] == pytest.approx(0.7)


def test_serial_run_pickles_nothing():
    robot = RobotModel(UR5, load_visuals=False)
    ts = grid_targets([[-0.6, -0.6, 0.0], [0.6, 0.6, 0.6]], 0.4, 3)
    reference = ReachStudy(robot, "tool0", ts, chunk_size=32).run("serial", progress=False)
    robot.poison = _Unpicklable()  # any pickle of the robot now raises
    result = ReachStudy(robot, "tool0", ts, chunk_size=32).run("serial", progress=False)
    same(reference, result)
    assert result.reachable.sum() > 5


# -- the payload of the pool and Ray -----------------------------------------------------------
@pytest.fixture(scope="module")
def ur10():
    robots = pytest.importorskip("stackik.robots")
    return robots.load("ur10")  # default options: visual meshes loaded


def test_payload_holds_the_robot_once_without_visuals(ur10):
    solver = KinematicsSolver(ur10)
    solver.configure_collision_constraint(0.002)
    ts = grid_targets([[-1.0, -1.0, 0.0], [1.0, 1.0, 1.0]], 0.5, 3)
    study = ReachStudy(ur10, "tool0", ts, solver, chunk_size=32)
    context = study.worker_context()
    payload = context.payload()
    restored: WorkerContext = pickle.loads(payload)
    light = restored.solver.robot
    assert light.visual_model is None
    full, lean = len(pickle.dumps(ur10)), len(pickle.dumps(light))
    assert lean < 0.2 * full, (lean, full)
    assert len(payload) < full
    assert restored.solver.engine.robot is light  # one copy, shared by every reference
    assert_same_description(ur10, light)
    # The chunk solver a worker builds computes what the serial executor computes.
    serial = study.run("serial", progress=False)
    assert study.n_chunks >= 2 and serial.reachable.sum() > 5
    order = study.order
    for chunk in range(study.n_chunks):
        idx = order[chunk * 32 : (chunk + 1) * 32]
        res = restored.chunk_solver().solve(chunk, ts.poses[idx])
        sl = slice(chunk * 32, chunk * 32 + len(idx))
        assert np.array_equal(res.reason, serial.reason[order][sl])
        assert np.array_equal(res.q, serial.q[order][sl], equal_nan=True)


def _pids(log: Path) -> list[str]:
    return log.read_text(encoding="utf-8").split() if log.exists() else []


def _counting_study(tmp_path: Path) -> tuple[ReachStudy, Path]:
    robot = RobotModel(UR5, load_visuals=False)
    log = tmp_path / "unpickled.txt"
    ts = grid_targets([[-0.6, -0.6, 0.0], [0.6, 0.6, 0.6]], 0.2, 4)
    study = ReachStudy(robot, "tool0", ts, chunk_size=32, validate=CountingValidate(str(log)))
    assert study.n_chunks >= 8
    return study, log


@pytest.mark.slow
def test_pool_unpickles_the_payload_once_per_worker(tmp_path):
    study, log = _counting_study(tmp_path)
    serial = study.run("serial", progress=False)
    assert _pids(log) == []  # the serial executor unpickled nothing
    same(serial, study.run("local", workers=2, progress=False))
    pids = _pids(log)
    assert 1 <= len(pids) <= 2 and len(set(pids)) == len(pids), pids
    assert str(os.getpid()) not in pids


@pytest.mark.slow
def test_ray_unpickles_the_payload_once_per_worker(tmp_path):
    ray = pytest.importorskip("ray")
    study, log = _counting_study(tmp_path)
    serial = study.run("serial", progress=False)
    path = os.pathsep.join([str(ROOT / "python"), str(Path(__file__).parent)])
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": path}},
    )
    try:
        same(serial, study.run("ray", progress=False))
    finally:
        ray.shutdown()
    pids = _pids(log)
    assert 1 <= len(pids) <= 2 and len(set(pids)) == len(pids), pids


# -- resuming a finished store -----------------------------------------------------------------
def test_envelope_description_needs_no_build():
    for path, frame in ((UR5, "tool0"), (PANDA, "panda_hand")):
        robot = RobotModel(path, load_visuals=False)
        study = ReachStudy(robot, frame, grid_targets([[0, 0, 0], [0.2, 0.2, 0.2]], 0.1, 1))
        described = study.envelope_description()
        built = study.envelope()
        assert built is not None
        assert described == built.describe()
        chain = GlobalIK(KinematicsSolver(robot).engine).chains.plain(frame)
        fresh = ReachEnvelope.build(chain, samples=1000, resolution=0.02, seed=3)
        assert describe_envelope(chain, samples=1000, resolution=0.02, seed=3) == fresh.describe()


def test_finished_store_resumes_without_building_the_envelope(tmp_path, monkeypatch):
    ts = grid_targets([[-0.6, -0.6, 0.0], [0.6, 0.6, 0.6]], 0.3, 4)
    store = tmp_path / "study.zarr"
    first = ReachStudy(RobotModel(UR5, load_visuals=False), "tool0", ts, chunk_size=64)
    done = first.run("serial", store=store, progress=False)

    def no_build(*args, **kwargs):
        raise AssertionError("the envelope was built")

    monkeypatch.setattr(ReachEnvelope, "build", no_build)
    # A new robot object: nothing is cached from the first run.
    again = ReachStudy(RobotModel(UR5, load_visuals=False), "tool0", ts, chunk_size=64)
    resumed = again.run("serial", store=store, progress=False)
    same(done, resumed)
    assert resumed.complete
