"""A process's first kernel call (stackik._jit.start): plain Python at once, then compiled.

* on an empty cache the first call does not wait for the compiler: it runs the plain
  Python kernels while worker processes fill the cache, then the process loads the
  machine code and switches, every module's name and every reference held before the
  switch included; a later process on the warm cache compiles nothing;
* two processes starting together on an empty cache compile each kernel once;
* ``STACKIK_FIRST_USE=wait`` compiles before the first call returns;
* the plain Python kernels give the compiled ones' results bit for bit on the real
  solver: velocity steps with self-collision, a world of moving obstacles and the exact
  QP fallback, position IK and the global search (the switch must not change a result).

Every first use runs in a fresh interpreter: the switch is once per process.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import coal
import numpy as np
import pytest

import kernel_procs
import stackik

ROOT = Path(__file__).resolve().parents[1]

KMOD = """
import numpy as np
from stackik._jit import kernel, register_warmup

@kernel
def leaf(x):
    s = 0.0
    for i in range(x.size):
        s += np.sin(x[i]) * np.cos(0.5 * x[i]) + np.sqrt(abs(x[i]) + 1.0)
    return s

@kernel
def top(x):
    return 2.0 * leaf(x) + 1.0

@register_warmup
def job():
    top(np.linspace(0.0, 1.0, 5))
"""

PROBE = (
    """
import json, os, time
import numpy as np
import kmod
from stackik import _jit
"""
    + kernel_procs.BARRIER
    + """
x = np.linspace(-1.0, 2.0, 11)
_jit.start(jobs=["kmod:job"])  # as a first call would, with this module's job only
held = kmod.top  # a reference taken before the switch
first = kmod.top(x)
state = {
    "python_first": _jit.runs_python_first(),
    "compiled_first": _jit.is_compiled(),
    "own_compiles_first": [r[0] for r in _jit.compile_log() if not r[3]],
}
_jit.load()  # waits for the switch
print(json.dumps({
    **state, "first": float(first).hex(), "after": float(kmod.top(x)).hex(),
    "held": float(held(x)).hex(), "compiled": _jit.is_compiled(),
    "kind": type(kmod.top).__name__, "log": _jit.compile_log(), "folder": _jit.cache_dir(),
}))
"""
)


def _start(folder: Path, cache: Path, **extra: str) -> subprocess.Popen:
    return kernel_procs.start(PROBE, folder, cache, **extra)


_finish = kernel_procs.finish


@pytest.fixture
def kmod(tmp_path: Path) -> Path:
    (tmp_path / "kmod.py").write_text(KMOD)
    return tmp_path


def _expected(x: np.ndarray) -> str:
    """``top(x)`` computed here in plain NumPy, in the kernel's order."""
    s = 0.0
    for v in x:
        s += np.sin(v) * np.cos(0.5 * v) + np.sqrt(abs(v) + 1.0)
    return float(2.0 * s + 1.0).hex()


def test_an_empty_cache_runs_python_at_once_then_switches_to_compiled(kmod, tmp_path):
    cache = tmp_path / "cache"
    out, err = _finish(_start(kmod, cache))
    assert out["python_first"] and not out["compiled_first"]
    assert out["own_compiles_first"] == []  # the first call did not wait for the compiler
    assert out["compiled"] and out["kind"] == "CPUDispatcher"
    value = _expected(np.linspace(-1.0, 2.0, 11))
    assert out["first"] == out["after"] == out["held"] == value  # bit for bit
    workers = {r[0] for r in out["log"] if r[3]}
    assert {"kmod.top", "kmod.leaf"} <= workers  # compiled by the worker processes
    assert not [r for r in out["log"] if not r[3]]  # and nothing in this process
    assert err.count("in the background") == 1 and "plain Python" in err  # the one notice
    again, err = _finish(_start(kmod, cache))  # a later process: loads, compiles nothing
    assert again["python_first"] and again["compiled"]
    assert again["log"] == [] and again["after"] == value


def test_two_processes_on_an_empty_cache_compile_each_kernel_once(kmod, tmp_path):
    cache = tmp_path / "cache"
    barrier = str(tmp_path / "barrier" / "b")
    os.makedirs(os.path.dirname(barrier))
    procs = [_start(kmod, cache, KMOD_BARRIER=barrier) for _ in range(2)]
    outs = [_finish(p)[0] for p in procs]
    names = [r[0] for o in outs for r in o["log"]]
    assert names.count("kmod.top") == 1 and names.count("kmod.leaf") == 1
    assert all(o["compiled"] and o["after"] == outs[0]["after"] for o in outs)
    assert outs[0]["folder"] == outs[1]["folder"]


FORK = """
import json, os, sys
import numpy as np
import kmod
from stackik import _jit
x = np.linspace(-1.0, 2.0, 11)
_jit.start(jobs=["kmod:job"])
first = float(kmod.top(x)).hex()  # plain Python; the background thread has started
pid = os.fork()  # (waits while that thread imports numba; then forks mid-way)
if pid == 0:  # the child: its own thread brings its kernels to compiled code
    forked_before = not _jit.is_compiled()
    _jit.load()
    with open(sys.argv[1], "w") as f:
        json.dump({"before": forked_before, "compiled": _jit.is_compiled(),
                   "value": float(kmod.top(x)).hex()}, f)
    os._exit(0)
os.waitpid(pid, 0)
_jit.load()
child = json.load(open(sys.argv[1]))
print(json.dumps({"child": child, "first": first, "value": float(kmod.top(x)).hex(),
                  "compiled": _jit.is_compiled()}))
"""


def test_a_process_forked_before_the_switch_switches_too(kmod, tmp_path):
    """A fork (multiprocessing's default on Linux) while kernels run as plain Python:
    the child does not stay on plain Python for good; its own thread switches it."""
    proc = kernel_procs.start(FORK, kmod, tmp_path / "cache", str(tmp_path / "child.json"))
    out, _ = _finish(proc)
    assert out["child"]["before"]  # forked while the kernels ran as plain Python
    assert out["compiled"] and out["child"]["compiled"]
    assert out["first"] == out["value"] == out["child"]["value"]


def test_first_use_wait_compiles_before_the_first_call_returns(kmod, tmp_path):
    out, _ = _finish(_start(kmod, tmp_path / "cache", STACKIK_FIRST_USE="wait"))
    assert not out["python_first"] and out["compiled_first"]
    assert {"kmod.top", "kmod.leaf"} <= set(out["own_compiles_first"])
    assert out["first"] == out["after"] == _expected(np.linspace(-1.0, 2.0, 11))


def test_without_workers_the_switch_comes_and_the_first_compiled_call_compiles(kmod, tmp_path):
    """``STACKIK_COMPILE_WORKERS=0``: nothing compiles in the background; after the switch
    a kernel compiles on its first call, as with ``STACKIK_FIRST_USE=wait``."""
    out, _ = _finish(_start(kmod, tmp_path / "cache", STACKIK_COMPILE_WORKERS="0"))
    assert out["python_first"] and out["compiled"] and out["kind"] == "CPUDispatcher"
    assert {"kmod.top", "kmod.leaf"} <= {r[0] for r in out["log"] if not r[3]}
    assert out["first"] == out["after"] == out["held"]


WARM_SOLVER = """
import json, time, warnings
import numpy as np
import stackik
from stackik import _jit
robots = {robots!r}
robot = stackik.RobotModel(robots + "/panda.urdf", srdf_path=robots + "/panda.srdf")
solver = stackik.KinematicsSolver(robot, dt=0.01)
solver.add_frame_task("ee", "panda_hand_tcp").set_target_position([0.4, 0.1, 0.4])
solver.add_posture_task("posture").priority = 1
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    solver.configure_collision_constraint(0.02)
q = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
first = solver.solve_velocity(q).solution.copy()
state = {{"python_first": _jit.runs_python_first(), "compiled_first": _jit.is_compiled()}}
_jit.load()
after = solver.solve_velocity(q).solution.copy()
same = first.tobytes() == after.tobytes()
log = _jit.compile_log()
print(json.dumps({{**state, "compiled": _jit.is_compiled(), "same": same, "log": log}}))
"""


def _on_the_suites_cache(code: str, **extra: str) -> tuple[dict, str]:
    """Run ``code`` in a fresh interpreter on this suite's (warm) kernel cache."""
    from stackik import _jit

    cache = Path(_jit.cache_dir()).parent
    return kernel_procs.finish(kernel_procs.start(code, ROOT / "python", cache, **extra))


def test_a_warm_machine_solves_at_once_in_python_then_runs_compiled(tmp_path):
    """The suite's own (warm) cache: the first solve does not wait for numba at all."""
    result, err = _on_the_suites_cache(WARM_SOLVER.format(robots=str(ROOT / "robots" / "panda")))
    assert result["python_first"] and not result["compiled_first"]
    assert result["compiled"] and result["same"]  # the switch changed no bit
    assert result["log"] == [] and "compiling" not in err  # loaded, not compiled


STALE = """
import json, sys, warnings
import coal
import numpy as np
import stackik
from stackik import _jit
from stackik.reach import ReachStudy

root = {root!r}
T = np.eye(4)
T[:3, 3] = [0.6, 0.0, -0.02]
panda = stackik.RobotModel(root + "/panda/panda.urdf", srdf_path=root + "/panda/panda.srdf")
panda.add_obstacle("table", coal.Box(0.6, 1.4, 0.04), T)
arm = stackik.KinematicsSolver(panda, dt=0.01)
arm.add_frame_task("ee", "panda_hand_tcp").set_target_position([0.4, 0.1, 0.4])
arm.add_posture_task("posture").priority = 1
arm.configure_collision_constraint(0.02)
ur5 = stackik.RobotModel(root + "/ur5/ur5.urdf", srdf_path=root + "/ur5/ur5.srdf")
six = stackik.KinematicsSolver(ur5)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    six.configure_collision_constraint(0.005)
q = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
q6 = np.array([0.3, -1.2, 1.4, -1.8, -1.5, 0.2])
teleop = stackik.KinematicsSolver(panda, dt=0.001)
teleop.add_frame_task("tool", "panda_hand_tcp")
teleop.configure_collision_constraint(0.02)
limits = stackik.load_motion_limits(panda, root + "/panda/motion_limits.yaml")
limiter = stackik.JointMotionLimiter.from_limits(panda, 0.001, limits)
loop = stackik.ControlLoop(teleop, q, rate_hz=1000.0, limiter=limiter)


def work():
    arm.solve_velocity(q)
    panda.update_kinematics(np.array([0.3, -0.2, 0.1, -1.9, 0.1, 1.8, 0.5]))
    goal = panda.get_frame_pose("panda_hand_tcp")
    panda.update_kinematics(q)
    arm.solve_position(q, goal, "panda_hand_tcp")
    arm.find_configs(
        goal, "panda_hand_tcp", max_solutions=2, time_budget=None, max_attempts=4, seed=1
    )
    arm.evaluate_min_collision_distance(q)
    pose = ur5.create_kinematics(q6).frame_pose("tool0")
    six.find_configs(pose, "tool0", max_solutions=4, seed=0)
    six.nearest_config(pose, "tool0", reference_q=q6, seed=0)
    six.generate_path(q6, ur5.create_kinematics(q6 + 0.05).frame_pose("tool0"), "tool0", n_points=5)
    ReachStudy(ur5, "tool0", [pose.homogeneous], six).run("local", workers=1)
    loop.set_target("tool", np.array([0.45, 0.05, 0.4]))
    for _ in range(3):
        loop.step()  # the motion constraint's and the limiter's kernels


with _jit._LOCK:  # holds the switch back (it takes this lock) until the work is done
    work()  # plain Python kernels: every solver and helper takes its references now
    assert not _jit.is_compiled()
    from stackik.ik import chain_kernels

    kept = chain_kernels.prepare_kernel  # the control: a reference that does go stale
_jit.load()  # the switch
# (by identity: a code object's hash can change while the interpreter specializes it,
# which made a lookup by value miss now and then)
codes = {{id(k.py_func.__code__): k.module + "." + k.name for k in _jit._KERNELS}}
stale = set()
callers = set()  # where each stale call came from: a failure names its caller


def watch(frame, event, arg):
    # A compiled call can reach the profiler too: numba's dispatcher then synthesizes a
    # frame with the kernel's own code object and no caller (f_back None) so that
    # profilers see it. A plain-Python call always has its Python caller.
    name = codes.get(id(frame.f_code)) if event == "call" else None
    if name is not None and frame.f_back is not None:
        stale.add(name)
        back = frame.f_back
        callers.add(name + " <- " + back.f_code.co_filename + ":" + str(back.f_lineno))


sys.setprofile(watch)
work()
found = sorted(stale)
kept(np.eye(3), np.zeros(3), np.zeros(6), np.zeros((6, chain_kernels.P_COLS)), 1e-9,
     np.empty((3, 4)), np.empty(6))  # (the watch must see this one)
sys.setprofile(None)
control = sorted(stale - set(found))
print(json.dumps({{"compiled": _jit.is_compiled(), "stale": found, "control": control}}))
print("switched by the background thread:", _jit._tier.switched, file=sys.stderr)
print("stale calls:", sorted(callers), file=sys.stderr)
"""


def test_after_the_switch_no_reference_taken_before_runs_plain_python():
    """Solvers built and run on plain Python kernels run compiled code after the switch.

    A reference a solver kept to a plain function would run as Python for good (20-100x
    slower, silently): every kernel function call is watched after the switch.
    """
    result, err = _on_the_suites_cache(STALE.format(root=str(ROOT / "robots")))
    control = ["stackik.ik.chain_kernels.prepare_kernel"]  # a kept plain function is seen
    assert result == {"compiled": True, "stale": [], "control": control}, err


def test_warmup_on_a_copy_readies_the_first_step_of_the_solver_itself():
    """``stackik.warmup(solver)`` steps a pickled copy; the solver's own first step then
    loads and compiles nothing (a world's read-only arrays stay read only in the copy,
    else its kernels would be other specialisations)."""
    from stackik import _jit

    robots = ROOT / "robots" / "panda"
    robot = stackik.RobotModel(robots / "panda.urdf", srdf_path=robots / "panda.srdf")
    T = np.eye(4)
    T[:3, 3] = [0.6, 0.0, -0.02]
    robot.add_obstacle("table", coal.Box(0.6, 1.4, 0.04), T)
    solver = stackik.KinematicsSolver(robot, dt=0.01)
    solver.add_frame_task("ee", "panda_hand_tcp").set_target_position([0.4, 0.1, 0.4])
    solver.add_posture_task("posture").priority = 1
    solver.configure_collision_constraint(0.02)
    stackik.warmup(solver)
    before, compiles = _jit.specialisations(), len(_jit.compile_log())
    result = solver.solve_velocity(np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8]))
    assert result.status == stackik.SolverStatus.SUCCESS
    assert _jit.specialisations() == before and len(_jit.compile_log()) == compiles


# -- the real solver: plain Python and compiled give the same bits -----------------------
SCENARIO = """
import hashlib, sys, warnings
import coal
import numpy as np
sys.path.insert(0, {tests!r})
import json
import test_first_use as t
print(json.dumps({{"digest": t.scenario_digest()}}))
"""


GOALS = (
    [0.3, -0.2, 0.1, -1.9, 0.1, 1.8, 0.5],
    [0.8, 0.2, -0.4, -1.2, 0.3, 1.2, -0.2],
    [-0.6, 0.4, 0.5, -2.4, -0.4, 2.5, 1.1],
)


def scenario_digest(steps: int = 330) -> str:
    """SHA-256 of every configuration of velocity runs and of position and global IK.

    ``benchmarks/bench_velocity.py``'s problems (B) (the Panda with self-collision, its
    tool driven through the space beside the base) and (F) (the same in a world: a table,
    a wall and a person of 10 capsules walking past), ``steps`` steps each; then
    ``solve_position`` and ``find_configs`` (attempt-limited, no time budget) on three
    reachable poses.
    """
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_velocity

    digest = hashlib.sha256()
    for case in (bench_velocity.stackik_panda(True), bench_velocity.stackik_panda_world()):
        for i in range(steps):
            case.step(i)
            digest.update(np.ascontiguousarray(case.q()).tobytes())
    robots = ROOT / "robots" / "panda"
    robot = stackik.RobotModel(robots / "panda.urdf", srdf_path=robots / "panda.srdf")
    plain = stackik.KinematicsSolver(robot, dt=0.01)
    plain.add_frame_task("ee", "panda_hand_tcp")
    start = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
    for k, goal in enumerate(GOALS):
        robot.update_kinematics(np.array(goal))
        target = robot.get_frame_pose("panda_hand_tcp")
        robot.update_kinematics(start)
        digest.update(plain.solve_position(start, target, "panda_hand_tcp").solution.tobytes())
        found = plain.find_configs(
            target, "panda_hand_tcp", max_solutions=3, time_budget=None, max_attempts=30, seed=k
        )
        for config in found:
            digest.update(np.asarray(getattr(config, "q", config)).tobytes())
    return digest.hexdigest()


def test_plain_python_kernels_give_the_compiled_bits_on_the_real_solver(tmp_path):
    from stackik import _jit

    assert _jit.is_compiled()  # this process: compiled (tests/conftest.py)
    compiled = scenario_digest()
    code = SCENARIO.format(tests=str(Path(__file__).parent))
    result, _ = _on_the_suites_cache(code, STACKIK_DISABLE_JIT="1")
    assert result["digest"] == compiled
