"""A browser viewer for robots, targets and collision pairs (``pip install "stackik[viz]"``).

:class:`Viewer` serves a page (viser) showing a robot's visual geometry (collision
geometry on a toggle). With a solver, each frame task gets a draggable gizmo and a
solver loop makes the robot follow; without one, each joint gets a slider. The page
also shows the obstacles and attached objects of the robot's world, followed live (each
obstacle with a gizmo that moves it), the closest-point segment of each watched
collision pair (the robot's own and its pairs with the world), coloured by its distance
to ``min_distance``, the centre of mass with its support polygon, and a panel of task
errors, level scales, solver status and step time.

Layer: viz, beside control and reach, above the solver. viser is imported when a viewer
is built; ``import stackik`` never imports this package.
"""

from .loop import LiveLoop, LoopSnapshot, TaskRow, ThreadedLoop, WatchedPairs
from .overlays import PairSegments, distance_color
from .viewer import Viewer, show
from .world import WorldScene

__all__ = [
    "LiveLoop",
    "LoopSnapshot",
    "PairSegments",
    "TaskRow",
    "ThreadedLoop",
    "Viewer",
    "WatchedPairs",
    "WorldScene",
    "distance_color",
    "show",
]
