"""The JIT loader (stackik._jit): cache folder keyed on every kernel source, kernels
defined after loading, the Python fallback.

Each case runs in a fresh interpreter: loading is once per process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

CALLEE = """
from stackik._jit import kernel

@kernel
def bump(x):
    return x + {step}
"""

CALLER = """
from stackik._jit import kernel
from kmod_callee import bump

@kernel
def twice_bumped(x):
    return 2.0 * bump(x)
"""

RUN = """
import kmod_callee, kmod_caller
from stackik import _jit
print(kmod_caller.twice_bumped(1.0), _jit.is_compiled(), _jit.cache_dir())
"""


def _python(code: str, folder: Path, cache: Path, **env: str) -> list[str]:
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")]),
        "STACKIK_CACHE_DIR": str(cache),
        "STACKIK_FIRST_USE": "wait",  # these cases are about the compiled path
        **env,
    }
    environment.pop("NUMBA_DISABLE_JIT", None)
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_editing_a_callee_file_never_runs_stale_cached_code(tmp_path):
    """A cached caller embeds its callee's code; an edited callee must still be seen."""
    cache = tmp_path / "cache"
    (tmp_path / "kmod_caller.py").write_text(CALLER)
    (tmp_path / "kmod_callee.py").write_text(CALLEE.format(step=1.0))
    first = _python(RUN, tmp_path, cache)
    assert first[:2] == ["4.0", "True"]
    again = _python(RUN, tmp_path, cache)  # served from the cache, same folder
    assert again == first
    (tmp_path / "kmod_callee.py").write_text(CALLEE.format(step=2.0))
    edited = _python(RUN, tmp_path, cache)
    assert edited[0] == "6.0"  # 2 * (1 + 2): the callee's new code
    assert edited[2] != first[2]  # a new cache folder for the new sources
    assert Path(first[2]).parent == cache and Path(edited[2]).parent == cache


def test_kernels_defined_after_loading_are_bound_at_once(tmp_path):
    """A module imported after load(): its kernels call each other compiled."""
    (tmp_path / "kmod_callee.py").write_text(CALLEE.format(step=1.0))
    (tmp_path / "kmod_caller.py").write_text(CALLER)
    code = """
    from stackik import _jit
    import stackik
    _jit.load()                       # every stackik kernel bound before the imports below
    import kmod_callee, kmod_caller
    print(kmod_caller.twice_bumped(1.0), type(kmod_callee.bump).__name__)
    """
    value, kind = _python(code, tmp_path, tmp_path / "cache")
    assert value == "4.0"
    assert kind == "CPUDispatcher"


@pytest.mark.parametrize("flag", ["STACKIK_DISABLE_JIT"])
def test_python_fallback_gives_the_same_result(tmp_path, flag):
    (tmp_path / "kmod_callee.py").write_text(CALLEE.format(step=1.0))
    (tmp_path / "kmod_caller.py").write_text(CALLER)
    out = _python(RUN, tmp_path, tmp_path / "cache", **{flag: "1"})
    assert out[:2] == ["4.0", "False"]


LATE = """
from stackik._jit import kernel

@kernel(digest=False)
def late(x):
    return x + 1.0
"""


def test_a_kernel_left_out_of_the_digest_never_moves_the_cache_folder(tmp_path):
    """``kernel(digest=False)``: importing its module before loading keeps the folder."""
    (tmp_path / "kmod_late.py").write_text(LATE)
    (tmp_path / "kmod_callee.py").write_text(CALLEE.format(step=1.0))
    code = """
    from stackik import _jit
    import stackik
    before = _jit.sources_digest()
    import kmod_late
    late = _jit.sources_digest()
    import kmod_callee
    counted = _jit.sources_digest()
    print(before == late, before == counted, kmod_late.late(1.0), _jit.is_compiled())
    """
    assert _python(code, tmp_path, tmp_path / "cache") == ["True", "False", "2.0", "True"]
