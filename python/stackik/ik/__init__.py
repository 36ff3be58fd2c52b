"""Layers above the velocity engine: position IK, global IK, branches, paths, chains, batches.

What each module holds (they import ``stackik.engine`` and below, never the
``KinematicsSolver`` facade):

- ``position.py``: :class:`PositionIK`, the engine iterated (``solve_position``, stepping).
- ``global_.py``: :class:`GlobalIK`, multi-start search on a serial chain, candidates
  checked on the full robot (``find_configs``, nearest, alternates, branch flags); the
  closed-form solvers of :mod:`stackik.analytic` when one applies.
- ``allbranches.py``: every branch of a pose (``all_branches``): the closed form's
  branches, or the branch-aware numeric search; ``branch_kernels.py`` its compiled
  bookkeeping; ``query.py`` what a search looks for and has found.
- ``chains.py``: the chain a query searches on and its setup (margin, locks), cached.
- ``checks.py``: the robot-level candidate test (pose, limits, collision, ``validate``)
  in the layer's own Pinocchio ``Data`` and collision state.
- ``branches.py``: :class:`BranchFlags` of 6R arms (vcKinSolver configuration flags), and
  :class:`BranchGeometry` (the flags of solutions in closed form, the branch flips).
- ``paths.py``: straight-line Cartesian paths (simIK ``generatePath``).
- ``batch.py``: many targets in one compiled loop, as a :class:`BatchIKResult`.
- ``chain.py`` / ``chain_kernels.py``: :class:`SerialChain`, compiled Levenberg-Marquardt
  IK for serial chains, and its kernels.
"""
