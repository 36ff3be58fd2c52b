"""Memory grows with the robot, not with a power of it.

Pinocchio allocates (and zeroes) second-order derivative tensors of ``nv^3`` numbers in
every ``Data``: 0.85 GB at 300 degrees of freedom, 256 GB at 2000. Loading a description
used to create two of them (the robot's kinematics cache and its dynamics) and a
collision state of 5.6 kB per geometry pair: a 300-DoF chain peaked at 2.7 GB, a
2000-DoF chain ended in a bare ``MemoryError``. Now every ``Data`` and collision state
is created on first use, and a model one ``Data`` of which cannot fit in the machine's
memory is refused at once with :class:`~stackik.ModelTooLarge`.

Each measurement runs in a child process (peak RSS of a fresh interpreter).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import stackik
from stackik import ModelTooLarge, RobotModel
from stackik.model.building import machine_memory
from stackik.model.kinematics import data_bytes

PYTHONPATH = str(Path(stackik.__file__).parents[1])
MB = 2**20


def chain_urdf(n: int) -> str:
    """An n-DoF serial chain, one cylinder per link (n (n + 1) / 2 candidate pairs)."""
    parts = [
        '<robot name="chain">',
        '<link name="l0"><collision><geometry><box size="0.1 0.1 0.1"/></geometry>'
        "</collision></link>",
    ]
    for i in range(1, n + 1):
        parts.append(
            f'<link name="l{i}"><inertial><mass value="0.1"/><inertia ixx="1e-4" ixy="0" '
            'ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial><collision><origin '
            'xyz="0 0 0.05"/><geometry><cylinder radius="0.02" length="0.1"/></geometry>'
            "</collision></link>"
        )
        axis = "0 0 1" if i % 2 else "0 1 0"
        parts.append(
            f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/><child '
            f'link="l{i}"/><origin xyz="0 0 0.1"/><axis xyz="{axis}"/><limit lower="-2" '
            'upper="2" effort="1" velocity="1"/></joint>'
        )
    parts.append("</robot>")
    return "\n".join(parts)


def run_child(code: str, inherit_environment: bool = False) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON line (peak RSS added).

    The peak is the process's own high-water mark (``VmHWM``): ``ru_maxrss`` would also
    count the parent's pages of the fork that preceded the ``exec``. With
    ``inherit_environment`` the child also gets this process's environment (its kernel
    cache: a long run needs the compiled kernels).
    """
    env = dict(os.environ) if inherit_environment else {}
    script = (
        "import json, re\n"
        f"{code}\n"
        "status = open('/proc/self/status').read()\n"
        "out['peak_mb'] = int(re.search(r'VmHWM:\\s+(\\d+) kB', status).group(1)) / 1024\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": PYTHONPATH, "PATH": ""},
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_data_estimate_matches_pinocchio():
    """One Pinocchio Data of a 120-DoF chain, measured against data_bytes (within 25 %)."""
    out = run_child(
        "import pinocchio as pin\n"
        f"model = pin.buildModelFromXML({chain_urdf(120)!r})\n"
        "def rss():\n"
        "    return int(open('/proc/self/statm').read().split()[1]) * 4096\n"
        "before = rss()\n"
        "data = pin.Data(model)\n"
        "out = {'bytes': rss() - before}\n"
    )
    assert out["bytes"] == pytest.approx(data_bytes(120), rel=0.25)


def test_a_300_dof_chain_loads_in_300_mb(tmp_path):
    path = tmp_path / "chain300.urdf"
    path.write_text(chain_urdf(300))
    out = run_child(
        "import stackik\n"
        f"robot = stackik.RobotModel({str(path)!r})\n"
        "out = {'nv': robot.nv, 'pairs': len(robot.get_collision_pair_names())}\n"
    )
    assert out["nv"] == 300
    assert out["pairs"] == 300 * 301 // 2 - 300  # all but the adjacent ones
    assert out["peak_mb"] <= 300, out


def test_the_lazy_data_computes_what_pinocchio_computes(tmp_path):
    """Created on first use, the caches give Pinocchio's numbers (a 12-DoF chain)."""
    import pinocchio as pin

    text = chain_urdf(12)
    robot = RobotModel.from_urdf_string(text)
    rng = np.random.default_rng(4)
    q = rng.uniform(-1.5, 1.5, 12)
    robot.update_kinematics(q)
    model = pin.buildModelFromXML(text)
    data = pin.Data(model)
    pin.framesForwardKinematics(model, data, q)
    np.testing.assert_allclose(
        robot.get_frame_pose("l12").homogeneous, data.oMf[model.getFrameId("l12")].homogeneous
    )
    np.testing.assert_allclose(
        robot.compute_mass_matrix(q), pin.crba(model, pin.Data(model), q), atol=1e-12
    )
    distances = robot.compute_collision_distances()
    geom_model = robot.collision_model  # the robot's active pairs, queried by Pinocchio
    geom_data = pin.GeometryData(geom_model)
    pin.updateGeometryPlacements(model, data, geom_model, geom_data, q)
    pin.computeDistances(geom_model, geom_data)
    expected = [r.min_distance for r in geom_data.distanceResults]
    assert len(distances) == len(robot.get_collision_pair_names()) == len(expected)
    np.testing.assert_allclose(distances, expected, atol=1e-9)


def test_a_2000_dof_chain_fails_early_with_a_typed_error(tmp_path):
    """256 GB for one Data: refused before any is created (in 16 GB, the child's budget)."""
    path = tmp_path / "chain2000.urdf"
    path.write_text(chain_urdf(2000))
    out = run_child(
        "import stackik\n"
        "from stackik.model import building\n"
        "building.machine_memory = lambda: 16 * 2**30  # the same answer on every machine\n"
        "try:\n"
        f"    stackik.RobotModel({str(path)!r})\n"
        "    out = {'loaded': True}\n"
        "except stackik.ModelTooLarge as exc:\n"
        "    out = {'loaded': False, 'message': str(exc), 'nv': exc.nv,\n"
        "           'needed': exc.needed, 'memory': exc.memory,\n"
        "           'load_error': isinstance(exc, stackik.RobotLoadError)}\n"
    )
    assert out["loaded"] is False
    assert out["nv"] == 2000 and out["needed"] == data_bytes(2000) == 256 * 10**9
    assert out["memory"] == 16 * 2**30
    assert out["load_error"]
    assert "2000 degrees of freedom" in out["message"] and "nv^3" in out["message"]
    assert "238 GiB" in out["message"] and "16 GiB" in out["message"]
    assert out["peak_mb"] <= 500, out


def test_the_machine_memory_is_known_here():
    memory = machine_memory()
    assert memory is not None and memory > 256 * MB


def test_a_model_that_fits_after_reduction_loads(tmp_path, monkeypatch):
    """The check applies to the model built: a reduced one is judged by its own nv."""
    from stackik.model import building

    monkeypatch.setattr(building, "machine_memory", lambda: data_bytes(10))
    text = chain_urdf(20)
    with pytest.raises(ModelTooLarge) as err:
        RobotModel.from_urdf_string(text)
    assert err.value.nv == 20
    robot = RobotModel.from_urdf_string(text, [f"j{i}" for i in range(1, 9)])
    assert robot.nv == 8


def test_robots_made_and_dropped_leave_no_geometry_models_behind():
    """Pinocchio 4.1's ``buildGeomFromUrdfString`` without a model to fill kept a Python
    wrapper of every geometry model it made alive (two per robot: collision, visual),
    pointing at freed memory once the robot was gone."""
    import gc

    import pinocchio as pin

    panda = Path(__file__).resolve().parents[1] / "robots" / "panda"

    def alive() -> int:
        gc.collect()
        return sum(isinstance(o, pin.GeometryModel) for o in gc.get_objects())

    RobotModel(panda / "panda.urdf", srdf_path=panda / "panda.srdf")
    before = alive()
    for _ in range(10):
        RobotModel(panda / "panda.urdf", srdf_path=panda / "panda.srdf")
    assert alive() == before


LONG_RUN = """
import ctypes, gc, warnings
from pathlib import Path
import coal, numpy as np, pinocchio as pin, stackik
libc = ctypes.CDLL("libc.so.6")
def rss():  # [MiB], after the collector and with freed heap pages given back
    gc.collect()
    libc.malloc_trim(0)
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
panda = Path(ROBOTS) / "panda"
robot = stackik.RobotModel(panda / "panda.urdf", srdf_path=panda / "panda.srdf")
at = lambda *p: pin.SE3(np.eye(3), np.array(p))
robot.add_obstacle("ball", coal.Sphere(0.05), at(0.4, 0.3, 0.4))
robot.add_obstacle("table", coal.Box(1.0, 0.8, 0.05), at(0.5, 0.0, -0.1))
solver = stackik.KinematicsSolver(robot, dt=0.001)
tool = solver.add_frame_task("tool", "panda_hand_tcp")
tool.gain = 20.0
solver.add_posture_task("posture").priority = 1
solver.configure_collision_constraint(min_distance=0.02)
down = np.diag([1.0, -1.0, -1.0])
goals = [pin.SE3(down, np.array([0.45, 0.15, 0.35])), pin.SE3(down, np.array([0.35, -0.15, 0.45]))]
held = np.eye(4)
held[:3, 3] = [0.0, 0.0, 0.1]
q = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
names = [0, None]  # (how many new names, the last one)
def event(k):
    kind = (k // 10) % 4
    if kind == 0:  # a tracker's new name (at the base: a warned, unmovable pair), the last one goes
        robot.add_obstacle(f"person{k}", coal.Box(0.05, 0.05, 0.05), at(0.0, 0.0, 0.05))
        if names[1] is not None:
            robot.remove_obstacle(names[1])
        names[:] = [names[0] + 1, f"person{k}"]
    elif kind == 1:  # the same name added and removed
        if robot.world.has_obstacle("cup"):
            robot.remove_obstacle("cup")
        else:
            robot.add_obstacle("cup", coal.Cylinder(0.03, 0.2), at(0.2, 0.5, 0.3))
    elif "part" in robot.get_attached_object_names():
        robot.detach_object("part")
    else:
        robot.attach_object("part", "panda_hand", coal.Box(0.03, 0.03, 0.08), held)
def run(k0, k1):
    global q
    for k in range(k0, k1):
        t = k * 1e-3
        robot.set_obstacle_pose("ball", at(0.4, 0.3 + 0.05 * np.sin(t), 0.4), stamp=t)
        if k % 10 == 0:
            event(k)
        if k % 500 == 0:
            solver.configure_collision_constraint(min_distance=0.02)
        tool.set_target_pose(goals[(k // 2000) % 2])
        q = q + solver.solve_velocity(q).solution * 1e-3
with warnings.catch_warnings():
    warnings.simplefilter("default")
    run(0, 4000)
    before = rss()
    run(4000, STEPS)
    out = {"growth_mb": rss() - before, "names": names[0], "q": q.tolist()}
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim, /proc")
def test_a_long_run_in_a_changing_world_keeps_its_memory():
    """40,000 steps of a Panda in a world that changes every 10 steps (a new obstacle name
    each 40 steps, at the base where each one is warned of; an obstacle added and removed;
    a part attached and detached; a stamped moving ball every step; the constraint
    configured again every 500 steps): the resident memory after the first 4000 steps
    does not grow. The reading moves by up to 0.4 MB run to run (the heap's layout);
    a kilobyte kept per new name would be 1 MB, 20 bytes per step 0.8 MB."""
    code = LONG_RUN.replace("ROBOTS", repr(str(Path(__file__).resolve().parents[1] / "robots")))
    out = run_child(code.replace("STEPS", "44000"), inherit_environment=True)
    assert out["names"] == 1100
    assert np.all(np.isfinite(out["q"]))
    assert out["growth_mb"] < 0.75, out
