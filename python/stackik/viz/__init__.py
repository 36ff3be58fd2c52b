"""A browser viewer for robots, targets and collision pairs (``pip install "stackik[viz]"``).

:class:`Viewer` serves a page (viser) showing a robot's visual geometry (collision
geometry on a toggle). With a solver, each frame task gets a draggable gizmo and a
solver loop makes the robot follow; without one, each joint gets a slider. The page
also shows the closest-point segment of each watched collision pair, coloured by its
distance to ``min_distance``, the centre of mass with its support polygon, and a panel
of task errors, level scales, solver status and step time.

Layer: viz, beside control and reach, above the solver. viser is imported when a viewer
is built; ``import stackik`` never imports this package.
"""

from .loop import LiveLoop, LoopSnapshot, TaskRow, ThreadedLoop
from .overlays import PairSegments, distance_color
from .viewer import Viewer, show

__all__ = [
    "LiveLoop",
    "LoopSnapshot",
    "PairSegments",
    "TaskRow",
    "ThreadedLoop",
    "Viewer",
    "distance_color",
    "show",
]
