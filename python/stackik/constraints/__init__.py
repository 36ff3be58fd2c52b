"""Constraint families: one module per family, each subclassing `Constraint` (base.py)."""

from .base import Constraint
from .collision import CollisionConstraint
from .com_polygon import ComPolygonConstraint
from .limits import calculate_velocity_box_constraint
from .linear import LinearConstraint, TightFramePoseConstraint, TightPointConstraint
from .relative_pose import RelativePoseConstraint

__all__ = [
    "CollisionConstraint",
    "ComPolygonConstraint",
    "Constraint",
    "LinearConstraint",
    "RelativePoseConstraint",
    "TightFramePoseConstraint",
    "TightPointConstraint",
    "calculate_velocity_box_constraint",
]
