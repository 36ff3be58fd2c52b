"""The kernel cache (stackik._kcache through stackik._jit): shared by processes, fail-safe.

* two processes on an empty cache compile each kernel once (a file lock; the second
  waits and loads), get identical results, and a third process on the warm cache
  compiles nothing;
* warm-up jobs run in parallel worker processes into the shared cache;
* an unwritable folder falls back (with a warning) and still works; a corrupted cache
  file is compiled again, never crashed on; another numba version or CPU gets its own
  folder;
* the one-line notice while kernels compile, silenced through logging.

Every case runs in fresh interpreters on small kernel modules written by the test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import kernel_procs

#: A module of kernels: a chain of callers and a few independent loops.
KERNELS = """
import numpy as np
from stackik._jit import kernel

@kernel
def leaf(x):
    s = 0.0
    for i in range(x.size):
        s += np.sin(x[i]) * np.cos(x[i] * 0.5) + np.sqrt(abs(x[i]) + 1.0)
    return s

@kernel
def middle(x):
    t = 0.0
    for k in range(3):
        t += leaf(x) * (k + 1)
    return t

@kernel
def top(x):
    return middle(x) + leaf(x)

@kernel
def norm2(a):
    s = 0.0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            s += a[i, j] * a[i, j]
    return np.sqrt(s)

@kernel
def cumsum(x, out):
    acc = 0.0
    for i in range(x.size):
        acc += x[i]
        out[i] = acc
    return acc

def job_top():
    top(np.linspace(0.0, 1.0, 7))

def job_rest():
    norm2(np.ones((2, 3)))
    cumsum(np.arange(4.0), np.empty(4))
"""

#: Calls every kernel (in the order given by KMOD_ORDER) and prints a JSON line.
CALLS = (
    """
import json, os, sys, time
import numpy as np
import kmod
from stackik import _jit
_jit.load()
"""
    + kernel_procs.BARRIER
    + """
x = np.linspace(-1.0, 2.0, 11)
calls = {
    "top": lambda: kmod.top(x),
    "leaf": lambda: kmod.leaf(x),
    "norm2": lambda: kmod.norm2(np.outer(x, x)),
    "cumsum": lambda: kmod.cumsum(x, np.empty(x.size)),
}
order = os.environ["KMOD_ORDER"].split(",") if "KMOD_ORDER" in os.environ else list(calls)
values = {name: float(calls[name]()).hex() for name in order}
print(json.dumps({"values": values, "compiled": [r[0] for r in _jit.compile_log()],
                  "folder": _jit.cache_dir()}))
"""
)


def _start(code: str, folder: Path, cache: Path, *args: str, **extra: str) -> subprocess.Popen:
    """A fresh interpreter; these cases are about compiling (the first use that runs plain
    Python first is test_first_use.py), so ``STACKIK_FIRST_USE=wait`` unless given."""
    return kernel_procs.start(code, folder, cache, *args, **{"STACKIK_FIRST_USE": "wait", **extra})


_finish = kernel_procs.finish


def _run(code: str, folder: Path, cache: Path, *args: str, **extra: str) -> tuple[dict, str]:
    return _finish(_start(code, folder, cache, *args, **extra))


@pytest.fixture
def kmod(tmp_path: Path) -> Path:
    (tmp_path / "kmod.py").write_text(KERNELS)
    return tmp_path


def test_two_processes_on_an_empty_cache_compile_each_kernel_once(kmod, tmp_path):
    cache = tmp_path / "cache"
    barrier = str(tmp_path / "sync" / "go")
    (tmp_path / "sync").mkdir()
    first = _start(CALLS, kmod, cache, KMOD_BARRIER=barrier, KMOD_ORDER="top,norm2,cumsum,leaf")
    second = _start(CALLS, kmod, cache, KMOD_BARRIER=barrier, KMOD_ORDER="cumsum,leaf,norm2,top")
    (a, err_a), (b, err_b) = _finish(first), _finish(second)
    assert a["folder"] == b["folder"]
    assert a["values"] == b["values"]  # bit for bit (float.hex)
    compiled = a["compiled"] + b["compiled"]
    names = {"kmod.leaf", "kmod.middle", "kmod.top", "kmod.norm2", "kmod.cumsum"}
    assert sorted(compiled) == sorted(names)  # every kernel once, by one of the two
    # the one-line notice: only from a process that compiled
    for out, err in ((a, err_a), (b, err_b)):
        assert err.count("compiling numba kernels") == (1 if out["compiled"] else 0)
    # a third process on the now warm cache compiles nothing and agrees
    c, err_c = _run(CALLS, kmod, cache)
    assert c["compiled"] == [] and "compiling" not in err_c
    assert c["values"] == a["values"]
    # and the plain-Python run of the same calls agrees with the compiled ones
    plain, _ = _run(CALLS, kmod, tmp_path / "unused", STACKIK_DISABLE_JIT="1")
    for name, value in plain["values"].items():
        assert float.fromhex(value) == pytest.approx(float.fromhex(a["values"][name]), rel=1e-12)


WORKERS = """
import json
from stackik import _jit
import kmod
ran = _jit.warmup(workers=2, jobs=["kmod:job_top", "kmod:job_rest"])
log = _jit.compile_log()
print(json.dumps({"ran": ran, "worker": sorted(r[0] for r in log if r[3]),
                  "here": sorted(r[0] for r in log if not r[3])}))
"""


def test_warmup_jobs_compile_in_worker_processes_into_the_shared_cache(kmod, tmp_path):
    out, _ = _run(WORKERS, kmod, tmp_path / "cache")
    assert out["ran"] == 2
    assert out["worker"] == sorted(
        ["kmod.leaf", "kmod.middle", "kmod.top", "kmod.norm2", "kmod.cumsum"]
    )
    assert out["here"] == []  # this process only loaded what the workers saved
    again, _ = _run(CALLS, kmod, tmp_path / "cache")
    assert again["compiled"] == []


def test_an_unwritable_cache_folder_falls_back_with_a_warning(kmod, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out, err = _run(CALLS, kmod, blocker, TMPDIR=str(tmp))
    assert "KernelCacheWarning" in err and "cannot be written" in err
    assert Path(out["folder"]).parent == tmp / f"stackik-{os.getuid()}"
    assert len(out["compiled"]) == 5
    again, _ = _run(CALLS, kmod, blocker, TMPDIR=str(tmp))
    assert again["compiled"] == [] and again["values"] == out["values"]


NO_FOLDER = """
from pathlib import Path
import sys
from stackik import _kcache
_kcache._fallback_base = lambda: Path(sys.argv[1])   # the fallback is unusable too
exec(open(sys.argv[2]).read())
"""


def test_without_any_writable_folder_kernels_compile_in_memory(kmod, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    script = tmp_path / "calls.py"
    script.write_text(CALLS.replace("sys.argv[1] if len(sys.argv) > 1", "'' if True"))
    script.write_text(CALLS)
    out, err = _run(NO_FOLDER, kmod, blocker, str(blocker), str(script))
    assert "compiling in memory" in err
    assert out["folder"].startswith("no cache")
    assert len(out["compiled"]) == 5


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
@pytest.mark.parametrize("which", ["nbc", "nbi"])
def test_a_corrupted_cache_file_is_compiled_again(kmod, tmp_path, damage, which):
    cache = tmp_path / "cache"
    first, _ = _run(CALLS, kmod, cache)
    files = sorted(Path(first["folder"]).rglob(f"*.{which}"))
    assert files
    for path in files:
        blob = path.read_bytes()
        if damage == "garbage":
            path.write_bytes(bytes((b * 7 + 13) % 256 for b in blob))
        elif damage == "truncated":
            path.write_bytes(blob[: len(blob) // 2])
        else:
            path.write_bytes(b"")
    second, _ = _run(CALLS, kmod, cache)
    assert second["values"] == first["values"]
    assert set(second["compiled"]) >= {"kmod.top", "kmod.norm2", "kmod.cumsum", "kmod.leaf"}
    third, _ = _run(CALLS, kmod, cache)  # repaired: loads again
    assert third["compiled"] == [] and third["values"] == first["values"]


def test_a_flipped_byte_in_compiled_code_is_caught_by_the_checksum(kmod, tmp_path):
    cache = tmp_path / "cache"
    first, _ = _run(CALLS, kmod, cache)
    for path in Path(first["folder"]).rglob("*.nbc"):
        blob = bytearray(path.read_bytes())
        blob[len(blob) * 2 // 3] ^= 0x01  # inside the pickled machine code
        path.write_bytes(bytes(blob))
    second, _ = _run(CALLS, kmod, cache)
    assert second["values"] == first["values"]
    assert len(second["compiled"]) >= 4


KEY = """
import json, sys
import numba
if sys.argv[1] != "-":
    numba.__version__ = sys.argv[1]            # as if another numba were installed
import kmod
from stackik import _jit
_jit.load()
print(json.dumps({"folder": _jit.cache_dir()}))
"""


def test_another_numba_version_or_cpu_gets_its_own_folder(kmod, tmp_path):
    cache = tmp_path / "cache"
    base, _ = _run(KEY, kmod, cache, "-")
    other_numba, _ = _run(KEY, kmod, cache, "0.1.0")
    other_cpu, _ = _run(KEY, kmod, cache, "-", NUMBA_CPU_NAME="generic")
    again, _ = _run(KEY, kmod, cache, "-")
    folders = {base["folder"], other_numba["folder"], other_cpu["folder"]}
    assert len(folders) == 3 and again["folder"] == base["folder"]
    assert all(Path(f).parent == cache for f in folders)
    import numba

    key = (Path(base["folder"]) / "KEY.txt").read_text()
    assert f"numba: {numba.__version__}\n" in key
    assert "cpu: generic\n" in (Path(other_cpu["folder"]) / "KEY.txt").read_text()
    assert "numba: 0.1.0\n" in (Path(other_numba["folder"]) / "KEY.txt").read_text()


QUIET = """
import logging, json
logging.getLogger("stackik.jit").setLevel(logging.ERROR)
exec(open(__import__("sys").argv[1]).read())
"""


def test_the_compile_notice_is_one_line_and_can_be_silenced(kmod, tmp_path):
    loud, err = _run(CALLS, kmod, tmp_path / "a")
    assert len(loud["compiled"]) == 5
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "once per machine" in lines[0] and "warmup" in lines[0]
    script = tmp_path / "calls.py"
    script.write_text(CALLS)
    quiet, err = _run(QUIET, kmod, tmp_path / "b", str(script))
    assert err.strip() == "" and len(quiet["compiled"]) == 5


def test_a_waiting_process_loads_what_the_lock_holder_saved(kmod, tmp_path):
    """A process blocked on a kernel's lock loads the kernel once it gets the lock."""
    cache = tmp_path / "cache"
    holder = """
    import sys, time
    import numpy as np
    import kmod
    from stackik import _jit, _kcache
    _jit.load()
    path = _jit._CACHES[kmod.top.py_func].lock_path()
    assert _kcache.LOCKS.acquire(path)             # as a process compiling top would
    print("locked", flush=True)
    time.sleep(1.0)                                # the other process now waits on it
    kmod.top(np.ones(3))                           # compile and save (re-entrant lock)
    released = time.time()
    _kcache.LOCKS.release(path)
    print('{"released": %r}' % released)
    """
    proc = _start(holder, kmod, cache)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "locked"
    waiter = _start(
        CALLS + "\nprint(json.dumps({'finished': time.time()}))", kmod, cache, KMOD_ORDER="top"
    )
    out, _ = waiter.communicate(timeout=600)
    assert waiter.returncode == 0
    lines = [json.loads(line) for line in out.strip().splitlines()]
    held, _ = _finish(proc)
    assert lines[0]["compiled"] == []  # top (and its callees) came from the holder's save
    assert lines[1]["finished"] >= held["released"]  # it waited for the lock
    assert (
        lines[0]["values"]["top"] == _run(CALLS, kmod, cache, KMOD_ORDER="top")[0]["values"]["top"]
    )


COVERAGE = """
import json
from stackik import _jit
_jit.warmup(workers=None, everything=True)     # what `stackik warmup` runs
print(json.dumps({"missing": _jit.missing_kernels(), "folder": _jit.cache_dir()}))
"""


def test_stackik_warmup_compiles_every_registered_kernel(tmp_path):
    """Every kernel of the package is reached by a warm-up job (so `stackik warmup` and
    the background workers fill the whole cache). A new kernel module registers a tiny
    warm-up with ``stackik._jit.register_warmup``. Uses the session's cache folder (CI
    fills it with ``stackik warmup`` first)."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("NUMBA_DISABLE_JIT", "STACKIK_DISABLE_JIT")
    }
    out = subprocess.run(
        [sys.executable, "-c", COVERAGE],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["missing"] == []
