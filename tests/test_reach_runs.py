"""Running studies: executors agree bit for bit, the store resumes after SIGKILL, Ray.

- serial, a local pool of 1 and of 2 processes give identical arrays (all but the
  apportioned ``solve_time``), also with a user evaluator defined here;
- a study killed with SIGKILL in the middle (a subprocess) resumes from its store: the
  chunks flagged done are not written again (their files keep their times), and the
  result equals an uninterrupted run's; the partial store loads with NOT_RUN targets;
- resuming with another robot, frame, solver setting or evaluator is a typed error;
  ``resume=False`` starts over; a directory that is not a store is never replaced;
- Ray (a local ``ray.init(num_cpus=2)``) gives the local pool's results.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("zarr")

from stackik import InvalidInput, KinematicsSolver, MalformedDescription, RobotModel
from stackik.reach import (
    Evaluator,
    JointLimitDistance,
    Manipulability,
    ReachResult,
    ReachStudy,
    Reason,
    StudyMismatch,
    grid_targets,
)

ROOT = Path(__file__).resolve().parents[1]
UR5 = ROOT / "robots" / "ur5" / "ur5.urdf"
UR5_SRDF = ROOT / "robots" / "ur5" / "ur5.srdf"
ARRAYS = ("reason", "q", "score", "position_error", "orientation_error", "iterations")


class Reach(Evaluator):
    """A user's evaluator (picklable: defined at module level): distance from the base."""

    name = "radius"

    def evaluate(self, ctx):
        return np.clip(1.0 - np.linalg.norm(ctx.poses[:, :3, 3], axis=1), 0.0, 1.0)


def same(a: ReachResult, b: ReachResult) -> None:
    for name in ARRAYS:
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
    assert a.scores.keys() == b.scores.keys()
    for k in a.scores:
        assert np.array_equal(a.scores[k], b.scores[k]), k


@pytest.fixture(scope="module")
def ur5():
    return RobotModel(UR5, srdf_path=UR5_SRDF, load_visuals=False)


@pytest.fixture(scope="module")
def study(ur5):
    solver = KinematicsSolver(ur5)
    solver.configure_collision_constraint(0.002)
    ts = grid_targets([[-0.8, -0.8, -0.3], [0.8, 0.8, 0.9]], 0.2, 8)
    evs = [Manipulability(), JointLimitDistance(), Reach()]
    return ReachStudy(ur5, "tool0", ts, solver, evs, chunk_size=256)


@pytest.fixture(scope="module")
def serial(study):
    return study.run("serial", progress=False)


def test_executors_agree(study, serial):
    assert serial.reachable.sum() > 200 and study.n_chunks > 4
    same(serial, study.run("local", workers=1, progress=False))
    same(serial, study.run("local", workers=2, progress=False))
    assert (serial.scores["radius"][serial.reachable] > 0).any()


def test_ray_matches_the_local_pool(study, serial):
    ray = pytest.importorskip("ray")
    # The workers import this test module too (its evaluator).
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


SCRIPT = """
import os, sys, time
import numpy as np
from stackik import RobotModel
from stackik.reach import ReachStudy, grid_targets

PAUSE = float(os.environ.get("REACH_TEST_PAUSE", "0"))


def slow(q):
    time.sleep(PAUSE)  # a slow check: the first run lasts long enough to be killed
    return True


if __name__ == "__main__":
    robot = RobotModel({urdf!r}, load_visuals=False)
    ts = grid_targets([[-0.8, -0.8, -0.3], [0.8, 0.8, 0.9]], 0.25, 6)
    study = ReachStudy(robot, "tool0", ts, validate=slow, chunk_size=64)
    study.run("serial", store=sys.argv[1], progress=False)
    print("finished")
"""


def _done_chunks(store: Path) -> list[int]:
    folder = store / "done" / "c"
    # A kill during zarr's atomic write leaves a "<chunk>.<token>.partial" file: not done.
    names = [p.name for p in folder.iterdir()] if folder.is_dir() else []
    return sorted(int(n) for n in names if n.isdigit())


def _mtimes(store: Path, chunks: list[int]) -> dict[int, int]:
    return {c: (store / "results" / "reason" / "c" / str(c)).stat().st_mtime_ns for c in chunks}


def test_resume_after_sigkill(tmp_path, ur5):
    script = tmp_path / "run_study.py"
    script.write_text(textwrap.dedent(SCRIPT.format(urdf=str(UR5))))
    store = tmp_path / "study.zarr"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(store)],
        env={**env, "REACH_TEST_PAUSE": "0.004"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while len(_done_chunks(store)) < 3 and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    killed_done = _done_chunks(store)
    partial = ReachResult.load(store)
    n_chunks = len(partial.done)
    assert 3 <= len(killed_done) < n_chunks, "the run was not killed mid-way"
    assert not partial.complete
    assert (partial.reason == Reason.NOT_RUN).sum() > 0
    before = _mtimes(store, killed_done)
    time.sleep(0.05)
    out = subprocess.run(
        [sys.executable, str(script), str(store)], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0 and "finished" in out.stdout, out.stderr
    assert _mtimes(store, killed_done) == before  # finished chunks were not computed again
    assert _done_chunks(store) == list(range(n_chunks))
    resumed = ReachResult.load(store)
    assert resumed.complete
    # The same study without interruption (validate accepts everything: same results).
    ts = grid_targets([[-0.8, -0.8, -0.3], [0.8, 0.8, 0.9]], 0.25, 6)
    robot = RobotModel(UR5, load_visuals=False)
    whole = ReachStudy(robot, "tool0", ts, chunk_size=64).run("serial", progress=False)
    same(whole, resumed)


def test_resume_checks_the_study(tmp_path, ur5, study, serial):
    store = tmp_path / "s.zarr"
    first = study.run("serial", store=store, progress=False)
    same(serial, first)
    again = study.run("serial", store=store, progress=False)  # nothing left to compute
    same(serial, again)
    ts = study.targets
    other_solver = KinematicsSolver(ur5)
    for kwargs, what in [
        ({"frame": "wrist_3_link"}, "frame"),
        ({"solver": other_solver}, "solver"),
        ({"evaluators": [Manipulability()]}, "evaluators"),
        ({"seed": 3}, "spec"),
        ({"chunk_size": 128}, "chunk_size"),
    ]:
        args = {
            "frame": "tool0",
            "solver": study.solver,
            "evaluators": study.spec.evaluators,
            "chunk_size": 256,
            **kwargs,
        }
        frame = args.pop("frame")
        other = ReachStudy(ur5, frame, ts, **args)
        with pytest.raises(StudyMismatch) as exc:
            other.run("serial", store=store, progress=False)
        assert exc.value.what == what and isinstance(exc.value, InvalidInput)
    # Another robot description: the UR5 with a narrower joint limit.
    edited = RobotModel(UR5, srdf_path=UR5_SRDF, load_visuals=False)
    lo, hi = edited.get_joint_limits()
    edited.set_joint_limits(lo * 0.5, hi)
    with pytest.raises(StudyMismatch, match="robot"):
        ReachStudy(edited, "tool0", ts, chunk_size=256).run("serial", store=store, progress=False)
    # resume=False starts over
    fresh = ReachStudy(ur5, "tool0", ts.poses[:300], chunk_size=256)
    res = fresh.run("serial", store=store, resume=False, progress=False)
    assert len(res) == 300 and ReachResult.load(store).complete
    # a folder that is not a store is neither replaced nor read
    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine")
    with pytest.raises(InvalidInput, match="not a stackik reach store"):
        fresh.run("serial", store=folder, resume=False, progress=False)
    with pytest.raises(MalformedDescription):
        fresh.run("serial", store=folder, progress=False)
    assert (folder / "keep.txt").read_text() == "mine"
