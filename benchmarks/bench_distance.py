"""Speed of the compiled shape-pair distance against coal (a script, not a test).

For every pair type (seeded random sizes and poses, as in the tests), prints:

* ``loop sep`` / ``loop pen``: nanoseconds per pair of :func:`batch_distance` (the
  compiled loop over many poses) on the separated and on the penetrating poses;
* ``py call``: one :func:`shape_distance` call from Python (numba's dispatch included);
* ``coal``: one ``coal.distance`` call from Python (signed distance, request, result and
  transforms built beforehand);

then the first-use compile time of the kernels (a fresh process with an empty kernel
cache) and their load time from the cache (another fresh process). With ``--accuracy``,
also the worst distance errors per pair type against coal: ``tight`` is
``coal.distance`` with GJK tolerance 1e-9 and EPA tolerance 1e-7 (128 iterations),
``default`` coal's default request (tolerances 1e-6, EPA 64 iterations); ``deeper``
counts the penetrating poses where coal tight ends on a deeper local optimum than ours
(ours then checked: moving shape 2 by our depth along our normal makes them touch).

The loop timings use 400 poses per pair type (their data stay in the caches, as in a
control step that evaluates a few hundred pairs) and the thread's CPU time.

Run: ``PYTHONPATH=python python benchmarks/bench_distance.py [--poses 400] [--no-compile]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import coal
import numpy as np

import stackik
from stackik.geometry import ShapeTable
from stackik.geometry.kernels import batch_distance, shape_distance  # (the kernels, unchecked)

ROOT = Path(__file__).resolve().parents[1]
KINDS = ["sphere", "capsule", "cylinder", "box", "convex", "cone", "ellipsoid"]
FLAT = ["halfspace", "plane"]


def make(kind: str, rng: np.random.Generator):
    """A coal shape of random size (as in tests/test_geometry_kernels.py)."""
    r, h = rng.uniform(0.03, 0.25), rng.uniform(0.03, 0.25)
    if kind == "sphere":
        return coal.Sphere(r)
    if kind in ("capsule", "cylinder", "cone"):
        return {"capsule": coal.Capsule, "cylinder": coal.Cylinder, "cone": coal.Cone}[kind](
            r, 2 * h
        )
    if kind == "box":
        return coal.Box(*rng.uniform(0.06, 0.5, 3))
    if kind == "ellipsoid":
        return coal.Ellipsoid(*rng.uniform(0.03, 0.25, 3))
    if kind == "convex":
        pts = coal.StdVec_Vec3s()
        for p in rng.normal(size=(24, 3)) * rng.uniform(0.03, 0.2, 3):
            pts.append(p)
        return coal.ConvexBase.convexHull(pts, True, "Qt")
    n = rng.normal(size=3)
    cls = coal.Halfspace if kind == "halfspace" else coal.Plane
    return cls(n / np.linalg.norm(n), rng.uniform(-0.1, 0.1))


def rotation(rng: np.random.Generator) -> np.ndarray:
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    return coal.Quaternion(q[0], q[1], q[2], q[3]).toRotationMatrix()


def case(a: str, b: str, poses: int, seed: int):
    """A table of ``poses`` pairs (shapes 2k and 2k + 1) with random sizes and poses."""
    rng = np.random.default_rng(seed)
    geoms = [make(k, rng) for _ in range(poses) for k in (a, b)]
    table = ShapeTable.from_coal(geoms)
    rot = np.array([rotation(rng) for _ in geoms])
    trans = rng.uniform(-0.25, 0.25, (len(geoms), 3))
    return geoms, table, rot, trans


def loop_ns(table: ShapeTable, rot, trans, first, second, repeat: int = 5) -> float:
    """Best CPU ns per pair of the compiled loop over the pairs ``(first, second)``.

    CPU time of the calling thread (``time.thread_time``): other load on a shared machine
    does not count. Each measurement loops at least 50 ms.
    """
    dist = np.empty(len(first))
    wit = np.empty((len(first), 9))
    args = (table.kind, table.params, table.vstart, table.verts, rot, trans, dist, wit)
    best = np.inf
    for _ in range(repeat):
        rounds, t0 = 0, time.thread_time()
        while time.thread_time() - t0 < 0.05:
            batch_distance(first, second, *args)
            rounds += 1
        best = min(best, (time.thread_time() - t0) / rounds)
    return 1e9 * best / max(len(first), 1)


def python_ns(table: ShapeTable, rot, trans, count: int) -> float:
    """Median ns of one :func:`shape_distance` call from Python."""
    out = np.empty(9)
    verts = [np.ascontiguousarray(table.vertices(g)) for g in range(2 * count)]
    times = []
    for k in range(count):
        g, h = 2 * k, 2 * k + 1
        args = (
            int(table.kind[g]),
            table.params[g],
            rot[g],
            trans[g],
            verts[g],
            int(table.kind[h]),
            table.params[h],
            rot[h],
            trans[h],
            verts[h],
            out,
        )
        t0 = time.perf_counter_ns()
        shape_distance(*args)
        times.append(time.perf_counter_ns() - t0)
    return float(np.median(times))


def coal_ns(geoms, rot, trans, count: int) -> float:
    """Median ns of one ``coal.distance`` call from Python."""
    req = coal.DistanceRequest()
    req.enable_signed_distance = True
    res = coal.DistanceResult()
    tfs = [coal.Transform3s(rot[g], trans[g]) for g in range(2 * count)]
    times = []
    for k in range(count):
        g, h = 2 * k, 2 * k + 1
        res.clear()
        t0 = time.perf_counter_ns()
        coal.distance(geoms[g], tfs[g], geoms[h], tfs[h], req, res)
        times.append(time.perf_counter_ns() - t0)
    return float(np.median(times))


TIGHT = {"gjk_tolerance": 1e-9, "epa_tolerance": 1e-7, "epa_max_iterations": 128}


def coal_d(g1, R1, t1, g2, R2, t2, **settings) -> tuple[float, np.ndarray]:
    req = coal.DistanceRequest()
    req.enable_signed_distance = True
    for key, value in settings.items():
        setattr(req, key, value)
    res = coal.DistanceResult()
    d = coal.distance(g1, coal.Transform3s(R1, t1), g2, coal.Transform3s(R2, t2), req, res)
    return float(d), np.array(res.normal)


def coal_tight(g1, R1, t1, g2, R2, t2) -> float:
    """Distance by coal tight (a sphere near a cylinder's cap inside it: as an ellipsoid).

    coal 3.0.3's sphere-cylinder routine ignores the caps when the centre is inside.
    """
    if isinstance(g1, coal.Sphere) and isinstance(g2, coal.Cylinder):
        x = R2.T @ (t1 - t2)
        side, cap = g2.radius - np.hypot(x[0], x[1]), g2.halfLength - abs(x[2])
        if side > 0.0 and 0.0 < cap < side:
            g1 = coal.Ellipsoid(g1.radius, g1.radius, g1.radius)
    return coal_d(g1, R1, t1, g2, R2, t2, **TIGHT)[0]


def accuracy_table(poses: int) -> None:
    print(f"\nWorst |d - d_coal| [m] over {poses} poses per pair type (one order):")
    print("|pair|sep vs tight|pen vs tight|sep vs default|pen vs default|deeper|EPA cap|")
    print("|---|---|---|---|---|---|---|")
    for seed, (a, b) in enumerate(pairs_list()):
        geoms, table, rot, trans = case(a, b, poses, 10_000 + seed)
        first = np.arange(0, 2 * poses, 2, dtype=np.int64)
        dist, wit = np.empty(poses), np.empty((poses, 10))
        batch_distance(first, first + 1, table.kind, table.params, table.vstart, table.verts,
                       rot, trans, dist, wit)  # fmt: skip
        worst = np.zeros(4)
        deeper = 0
        for k, g in enumerate(first):
            h = g + 1
            args = (geoms[g], rot[g], trans[g], geoms[h], rot[h], trans[h])
            tight = coal_tight(*args)
            default = coal_d(*args)[0]
            pen = int(tight <= 0.0)
            if pen and dist[k] - tight > 1e-5:  # coal on a deeper local optimum
                moved = trans[h] - dist[k] * wit[k, 6:9]
                assert abs(coal_tight(geoms[g], rot[g], trans[g], geoms[h], rot[h], moved)) < 1e-6
                deeper += 1
                continue
            worst[pen] = max(worst[pen], abs(dist[k] - tight))
            worst[2 + pen] = max(worst[2 + pen], abs(dist[k] - default))
        caps = int((wit[:, 9] == 2).sum())
        cells = "|".join(f"{w:.1e}" for w in worst)
        print(f"|{a}-{b}|{cells}|{deeper}|{caps}|", flush=True)


def pairs_list() -> list[tuple[str, str]]:
    pairs = [(a, b) for i, a in enumerate(KINDS) for b in KINDS[i:]]
    return pairs + [(a, f) for a in KINDS for f in FLAT]


def speed_table(poses: int) -> None:
    pairs = pairs_list()
    print(f"{'pair':22s} {'loop sep':>9s} {'loop pen':>9s} {'py call':>9s} {'coal':>9s}  (ns)")
    print("|pair|loop sep (ns)|loop pen (ns)|py call (ns)|coal (ns)|pen share|")
    rows = []
    for seed, (a, b) in enumerate(pairs):
        geoms, table, rot, trans = case(a, b, poses, seed)
        first = np.arange(0, 2 * poses, 2, dtype=np.int64)
        second = first + 1
        dist = np.empty(poses)
        batch_distance(
            first, second, table.kind, table.params, table.vstart, table.verts, rot, trans,
            dist, np.empty((poses, 9)),
        )  # fmt: skip
        sep, pen = dist > 0.0, dist <= 0.0
        ns_sep = loop_ns(table, rot, trans, first[sep], second[sep]) if sep.any() else np.nan
        ns_pen = loop_ns(table, rot, trans, first[pen], second[pen]) if pen.any() else np.nan
        py = python_ns(table, rot, trans, min(poses, 500))
        co = coal_ns(geoms, rot, trans, min(poses, 500))
        rows.append(f"|{a}-{b}|{ns_sep:.0f}|{ns_pen:.0f}|{py:.0f}|{co:.0f}|{pen.mean():.2f}|")
        print(f"{a + '-' + b:22s} {ns_sep:9.0f} {ns_pen:9.0f} {py:9.0f} {co:9.0f}", flush=True)
    print("\nMarkdown:\n" + "\n".join(rows))


PROBE = """
import time, numpy as np
c0, t0 = time.process_time(), time.perf_counter()
from stackik.geometry import ShapeTable
from stackik.geometry.kernels import batch_distance, shape_distance, table_distance
from stackik import _jit
_jit.load()
marks = [(time.perf_counter(), time.process_time())]
out = np.empty(9); p = np.array([0.1, 0.2, 0, 0]); e = np.zeros((0, 3)); R = np.eye(3)
shape_distance(1, p, R, np.zeros(3), e, 2, p, R, np.ones(3), e, out)
marks.append((time.perf_counter(), time.process_time()))
kind = np.array([4, 7], dtype=np.int64); params = np.array([[.1, .2, .3, 0], [.1, .2, .3, 0]])
vstart = np.zeros(3, dtype=np.int64); rot = np.array([R, R])
trans = np.array([[0, 0, 0], [.1, .5, 0.]])
table_distance(0, 1, kind, params, vstart, e, rot, trans, out)
marks.append((time.perf_counter(), time.process_time()))
f = np.array([0], dtype=np.int64); s = np.array([1], dtype=np.int64)
batch_distance(f, s, kind, params, vstart, e, rot, trans, np.empty(1), np.empty((1, 9)))
marks.append((time.perf_counter(), time.process_time()))
prev = (t0, c0)
for wall, cpu in marks:
    print(wall - prev[0], cpu - prev[1])
    prev = (wall, cpu)
"""


def compile_times() -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), env.get("PYTHONPATH", "")])
    names = ("import+load", "shape_distance", "table_distance", "batch_distance")
    with tempfile.TemporaryDirectory() as cache:
        env["STACKIK_CACHE_DIR"] = cache
        for label in ("empty cache (compile)", "warm cache (load)"):
            out = subprocess.run(
                [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
            )
            rows = [[float(x) for x in line.split()] for line in out.stdout.strip().splitlines()]
            cells = "  ".join(
                f"{n} {w:5.2f} s ({c:5.2f} s CPU)" for n, (w, c) in zip(names, rows, strict=True)
            )
            print(f"{label:22s} {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--poses", type=int, default=400)
    parser.add_argument("--no-compile", action="store_true", help="skip the compile timing")
    parser.add_argument(
        "--accuracy", type=int, default=0, metavar="POSES", help="also the errors against coal"
    )
    args = parser.parse_args()
    stackik.warmup()  # compiled kernels from the first timed call, not plain Python
    shape_distance(1, np.ones(4), np.eye(3), np.zeros(3), np.zeros((0, 3)), 1, np.ones(4),
                   np.eye(3), np.ones(3), np.zeros((0, 3)), np.empty(9))  # fmt: skip
    speed_table(args.poses)
    if args.accuracy:
        accuracy_table(args.accuracy)
    if not args.no_compile:
        print("\nFirst use of the kernels in a fresh process:")
        compile_times()


if __name__ == "__main__":
    main()
