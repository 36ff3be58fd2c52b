"""The SNS velocity core: prioritized velocity IK with the Saturation-in-the-Null-Space method.

Holds the public API (:mod:`.api`: :class:`SNSSolver`, :func:`solve`,
:class:`TaskSolveMode`), the compiled kernels split by concern (:mod:`.linalg`:
QR, Jacobi SVD, filtered pseudo-inverse, null-space basis; :mod:`.saturation`: the
scale interval, pinning a row, the exact 1-D level; :mod:`.checks`: input checks;
:mod:`.activeset`: a dual active-set QP solver; :mod:`.levelqp`: the exact QP of
one level; :mod:`.run`: the entry kernel), their shared codes (:mod:`.codes`) and
the ``quadprog`` fallbacks run from Python (:mod:`.qp`: the start point, and the
reference form of the level QP used by the tests).

Dependencies: this package may import numpy, quadprog (lazily, on the first QP),
:mod:`stackik._jit` (the one JIT loader; numba is imported by it on the first solve,
never at import), :mod:`stackik.errors` and :mod:`stackik.results`. It never imports
pinocchio or coal: it is plain NumPy in and out.
"""

from __future__ import annotations

from .api import DEFAULT_DAMPING, DEFAULT_TOLERANCE, SNSSolver, TaskSolveMode, solve

__all__ = [
    "DEFAULT_DAMPING",
    "DEFAULT_TOLERANCE",
    "SNSSolver",
    "TaskSolveMode",
    "solve",
]
