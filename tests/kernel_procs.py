"""Fresh interpreters for the kernel-cache and first-use tests (a JIT state is per process).

Each runs a code string with a folder of test kernel modules on ``PYTHONPATH`` and a
given cache folder, without any inherited switch that would change how kernels load.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

#: Probe code (needs ``os`` and ``time``): with ``KMOD_BARRIER`` set, wait here until the
#: other process of a pair gets here too.
BARRIER = """
barrier = os.environ.get("KMOD_BARRIER", "")
if barrier:  # start together with the other process
    open(barrier + "." + str(os.getpid()), "w").close()
    while len([f for f in os.listdir(os.path.dirname(barrier))
               if f.startswith(os.path.basename(barrier) + ".")]) < 2:
        time.sleep(0.01)
"""

#: Inherited variables that change how kernels load; dropped unless given.
SWITCHES = ("NUMBA_DISABLE_JIT", "STACKIK_DISABLE_JIT", "NUMBA_CPU_NAME", "STACKIK_FIRST_USE")


def environment(folder: Path, cache: Path, **extra: str) -> dict[str, str]:
    """This process's environment with ``folder`` importable and ``cache`` as the cache."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")]),
        "STACKIK_CACHE_DIR": str(cache),
        **extra,
    }
    for name in SWITCHES:
        if name not in extra:
            env.pop(name, None)
    return env


def start(code: str, folder: Path, cache: Path, *args: str, **extra: str) -> subprocess.Popen:
    """Start ``python -c code args`` (see :func:`environment`)."""
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        env=environment(folder, cache, **extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen) -> tuple[dict, str]:
    """Wait for ``proc``; its last stdout line as JSON, and its stderr."""
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1]), err
