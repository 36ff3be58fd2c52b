"""Reachability studies at scale: workpiece studies (REACH) and capability maps.

- targets: :func:`grid_targets`, :func:`targets_from_mesh`, :func:`targets_from_csv`,
  orientation sets; every set is an ``(N, 4, 4)`` pose array with metadata
  (:class:`TargetSet`).
- :class:`ReachStudy`: chunks of spatially coherent targets, envelope rejection,
  neighbour seeding, random restarts, full-robot verification, evaluators; run in this
  process, a local process pool or on Ray; a resumable zarr store.
- :class:`ReachResult`: per-target arrays, ``summary()``, ``compare()``, ``plot()``,
  ``save()`` / ``load()``, CSV and HDF5 export.
- :class:`CapabilityMap`: reachability index per voxel, fast lookups, slices, inverse
  reachability and base placement.

Layer: above the solver facade (it may import ``stackik.solver`` and below, never
``control`` or ``viz``). Its optional dependencies (zarr, trimesh, matplotlib, rich or
tqdm, ray, scipy, h5py) are imported inside the functions that need them:
``pip install "stackik[reach]"`` (``"stackik[cluster]"`` adds Ray).
"""

from .capability import BasePlacement, CapabilityMap
from .describe import StudyMismatch
from .envelope import ReachEnvelope
from .evaluators import (
    CollisionDistance,
    EvaluationContext,
    Evaluator,
    JointLimitDistance,
    Manipulability,
    ReferencePosture,
    default_evaluators,
)
from .result import ReachComparison, ReachResult, ReachSummary
from .settings import ReachBudget, Reason
from .study import ReachStudy
from .targets import (
    GridSpec,
    TargetSet,
    grid_targets,
    sphere_rotations,
    super_fibonacci_rotations,
    targets_from_csv,
    targets_from_mesh,
)

__all__ = [
    "BasePlacement",
    "CapabilityMap",
    "CollisionDistance",
    "EvaluationContext",
    "Evaluator",
    "GridSpec",
    "JointLimitDistance",
    "Manipulability",
    "ReachBudget",
    "ReachComparison",
    "ReachEnvelope",
    "ReachResult",
    "ReachStudy",
    "ReachSummary",
    "Reason",
    "ReferencePosture",
    "StudyMismatch",
    "TargetSet",
    "default_evaluators",
    "grid_targets",
    "sphere_rotations",
    "super_fibonacci_rotations",
    "targets_from_csv",
    "targets_from_mesh",
]
