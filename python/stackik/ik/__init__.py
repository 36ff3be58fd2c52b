"""Layers above the velocity engine: position IK, global IK, branches, paths, chains, batches.

Each module here uses :class:`stackik.engine.VelocityEngine` (or the serial-chain
kernels) through their public methods and never imports the
:class:`stackik.KinematicsSolver` facade.
"""
