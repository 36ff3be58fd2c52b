"""Constraint families: one module per family, each a registered ``Constraint`` (base.py).

Constraints read a :class:`~stackik.model.kinematics.Kinematics` cache and write rows
``lower <= C v <= upper`` into the velocity engine's buffers, or narrow the joint
velocity box; they never run forward kinematics and never call a QP solver. Imports:
NumPy, Pinocchio, coal, ``stackik.model``, the package's helpers and the kernels of
this package (``_box_kernel``, ``_collision_kernel``, compiled through ``stackik._jit``).

A new family is one new module with a ``@register_constraint`` class and one import
line here; the engine needs no edit.
"""

from .base import Constraint, check_out, constraint_families, register_constraint
from .base_bounds import FloatingBaseBounds
from .collision import CollisionConstraint, CollisionSettings
from .com_polygon import ComPolygonConstraint
from .limits import JointLimitsConstraint, calculate_velocity_box_constraint
from .linear import LinearConstraint, TightFramePoseConstraint, TightPointConstraint
from .mimic import MimicConstraint
from .motion import JointMotionConstraint
from .relative_pose import RelativePoseConstraint

__all__ = [
    "CollisionConstraint",
    "CollisionSettings",
    "ComPolygonConstraint",
    "Constraint",
    "FloatingBaseBounds",
    "JointLimitsConstraint",
    "JointMotionConstraint",
    "LinearConstraint",
    "MimicConstraint",
    "RelativePoseConstraint",
    "TightFramePoseConstraint",
    "TightPointConstraint",
    "calculate_velocity_box_constraint",
    "check_out",
    "constraint_families",
    "register_constraint",
]
