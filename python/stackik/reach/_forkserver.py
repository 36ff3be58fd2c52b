"""Imported by the process pool's fork server only: warm state every worker inherits.

The local executor forks its workers from a server process (multiprocessing's
``forkserver``) that imports this module first. Importing it loads what every chunk
solver needs and would otherwise load in each worker: the compiled serial-chain kernels
(numba's cache, ~1 s per process) and SciPy's k-d tree. Nothing else imports this module;
``import stackik`` never runs it.
"""

from __future__ import annotations

import pinocchio as pin
from scipy.spatial import cKDTree  # type: ignore[import-untyped]  # noqa: F401

from .. import _jit
from ..ik.chain import SerialChain

# The compiled kernels themselves, not the plain Python that a first use starts on: the
# workers forked from here inherit them.
_jit.load()

_ONE_JOINT = """<?xml version="1.0"?>
<robot name="warm">
  <link name="a"/>
  <joint name="j" type="revolute"><parent link="a"/><child link="b"/>
    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <link name="b"/>
</robot>
"""

SerialChain.from_model(pin.buildModelFromXML(_ONE_JOINT), "b").warm_up()
