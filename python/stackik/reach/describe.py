"""Fingerprints of what defines a study's results: the robot description and solver settings.

A stored study records them; resuming with anything different is a typed error
(:class:`StudyMismatch`).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import coal
import numpy as np

from ..constraints.collision import CollisionConstraint
from ..constraints.com_polygon import ComPolygonConstraint
from ..errors import InvalidInput
from ..geometry import ShapeTable
from ..model import RobotModel
from ..model.world import WorldState

__all__ = [
    "StudyMismatch",
    "robot_digest",
    "solver_settings",
    "to_json",
    "world_fingerprint",
]


class StudyMismatch(InvalidInput):
    """A stored study was made with other settings than the run that resumes it.

    Attributes:
        what: The setting that differs (``"robot"``, ``"frame"``, ``"solver"``, ...).
        stored: Its stored value.
        given: The value of this run.
    """

    def __init__(self, path: str, what: str, stored: object, given: object) -> None:
        self.path = path
        self.stored = stored
        self.given = given
        where, a, b = _first_difference(stored, given)
        at = f" at {where}" if where else ""
        super().__init__(
            f"{path}: the stored study has another {what}{at} ({_short(a)} vs this run's "
            f"{_short(b)}); use another store or resume=False to start over",
            what=what,
        )


class _Absent:
    """What :func:`_first_difference` gives for a side that has no value there."""

    def __repr__(self) -> str:
        return "(absent)"


#: The missing side of a difference: a key or a list item only the other value has.
_ABSENT = _Absent()


def _short(value: object) -> str:
    if value is _ABSENT:
        return "(absent)"
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _first_difference(a: object, b: object, where: str = "") -> tuple[str, object, object]:
    """The first place two JSON values differ: its path (``obstacles[1].pose``) and values.

    Mappings are compared key by key in sorted order, lists item by item; where the
    structure itself differs (another type, another length) that place and its two
    values are returned. A key or an item only one side has is given against
    ``_ABSENT`` (a stored ``null`` is not a missing value).
    """
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            path = f"{where}.{key}" if where else str(key)
            if key not in a or key not in b:
                return path, a.get(key, _ABSENT), b.get(key, _ABSENT)
            if a[key] != b[key]:
                return _first_difference(a[key], b[key], path)
    elif isinstance(a, list) and isinstance(b, list):
        for k, (x, y) in enumerate(zip(a, b, strict=False)):
            if x != y:
                return _first_difference(x, y, f"{where}[{k}]")
        if len(a) != len(b):  # (one list goes on: its first extra item, against nothing)
            k = min(len(a), len(b))
            return f"{where}[{k}]", a[k] if k < len(a) else _ABSENT, b[k] if k < len(b) else _ABSENT
    return where, a, b


def _update(h: Any, *items: object) -> None:
    for item in items:
        if isinstance(item, np.ndarray):
            h.update(np.ascontiguousarray(item, dtype=float).tobytes())
        else:
            h.update(repr(item).encode())
        h.update(b"|")


def robot_digest(robot: RobotModel) -> str:
    """SHA-256 of the kinematic and collision description (joints, frames, limits, shapes).

    Two robots loaded from the same files (and edited the same way) have the same digest;
    any change of a joint placement, axis, limit, frame, collision shape or active pair
    changes it.
    """
    m = robot.model
    h = hashlib.sha256()
    _update(h, m.name, m.nq, m.nv, robot.is_floating_base)
    for j in range(1, m.njoints):
        jm = m.joints[j]
        _update(h, m.names[j], jm.shortname(), int(m.parents[j]))
        _update(h, m.jointPlacements[j].homogeneous)
        sl = slice(jm.idx_q, jm.idx_q + jm.nq)
        _update(h, m.lowerPositionLimit[sl], m.upperPositionLimit[sl])
    for f in m.frames:
        _update(h, f.name, int(f.parentJoint), f.placement.homogeneous)
    for g in robot.get_collision_geometries():
        _update(h, g["name"], g["parent_joint"], g["geometry_type"], g["placement"])
        _update(h, sorted((k, repr(v)) for k, v in dict(g["params"]).items()))  # type: ignore[call-overload]
    _update(h, robot.get_collision_pair_names())
    _update(h, robot.base_placement.homogeneous)
    return h.hexdigest()


def _shape_digest(geometry: Any) -> str:
    """SHA-256 of a coal shape: its type and its kernel encoding (sizes, vertices).

    An exact triangle mesh (queried with coal, so not in the kernel encoding) adds its
    vertices and triangles.
    """
    table = ShapeTable.from_coal([geometry])
    h = hashlib.sha256()
    _update(h, type(geometry).__name__, table.kind, table.params, table.verts)
    if isinstance(geometry, coal.BVHModelBase):
        tris = [geometry.tri_indices(i) for i in range(geometry.num_tris)]
        _update(
            h,
            np.asarray(geometry.vertices(), dtype=float),
            np.array([[t[0], t[1], t[2]] for t in tris], dtype=float),
        )
    return h.hexdigest()


def world_fingerprint(state: WorldState) -> dict[str, Any] | None:
    """What of a world snapshot defines reachability (None: an empty world).

    Obstacles (name, shape digest, pose, own minimum distance) in slot order and
    attached objects (name, link, shape digest, placement, allowed links). Stored in a
    study's header and compared on resume; velocities do not count.
    """
    layout = state.layout
    if not (layout.obstacles or layout.attached):
        return None
    obstacles = [
        {
            "name": o.name,
            "shape": _shape_digest(o.geometry),
            "rotation": state.rotations[k].tolist(),
            "translation": state.translations[k].tolist(),
            "min_distance": o.min_distance,
        }
        for k, o in enumerate(layout.obstacles)
    ]
    attached = [
        {
            "name": a.name,
            "link": a.link,
            "shape": _shape_digest(a.geometry),
            "placement": np.asarray(a.placement, dtype=float).tolist(),
            "allowed_links": list(a.allowed_links),
        }
        for a in layout.attached
    ]
    return {"obstacles": obstacles, "attached": attached}


def solver_settings(solver: Any) -> dict[str, Any]:
    """What of a solver defines reachability: limit margin, collision, CoM polygons."""
    out: dict[str, Any] = {"limit_margin": float(solver.get_limit_margin())}
    col = solver.get_constraint("collision")
    if isinstance(col, CollisionConstraint) and col.active:
        out["collision"] = {
            "min_distance": float(col.min_distance),
            "pairs": [list(p) for p in col.pair_names()],
            "overrides": _checked_minimums(col),
        }
        rules = _name_rules(col)
        if rules["exclude"] or rules["overrides"]:  # (none: a store written before resumes)
            out["collision"]["rules"] = rules
    coms = [c for c in solver.constraints if isinstance(c, ComPolygonConstraint) and c.active]
    if coms:
        out["com_polygons"] = [
            {"vertices": c.vertices.tolist(), "shrink": c.shrink, "frame": c.frame_name}
            for c in coms
        ]
    return out


def _name_rules(col: CollisionConstraint) -> dict[str, list[list[object]]]:
    """The constraint's exclusions and per-pair overrides by the names they were given.

    A study of another :class:`~stackik.World` than the one the constraint reads applies
    these rules to its own pairs (:func:`stackik.reach.verify.study_world_watch`): a rule
    named by the robot alone can change only those pairs, which the constraint's own
    pairs and minimums above do not show. Recorded as given (in order, an override's
    minimum None once cleared), so a store resumes only with the same rules.
    """
    exclude, overrides = col.name_rules()
    return {
        "exclude": [[a, b] for a, b in exclude],
        "overrides": [[a, b, None if m is None else float(m)] for (a, b), m in overrides],
    }


def _checked_minimums(col: CollisionConstraint) -> list[list[object]]:
    """``["a|b", minimum]`` of each pair a study checks at another minimum than the global.

    The minimums a study's checks keep (:meth:`CollisionConstraint.watch`): an override
    still waiting in the velocity steps (``activate_when_clear``) counts, as it does in
    the checks, so a store written with one does not resume a study without it.
    """
    watch = col.watch()
    assert watch.names is not None and watch.geometry_thresholds is not None
    glob = col.min_distance
    return [
        [f"{a}|{b}", float(m)]
        for (a, b), m in zip(watch.names, watch.geometry_thresholds.tolist(), strict=True)
        if m != glob
    ]


def to_json(value: object) -> Any:
    """``value`` with NumPy scalars and arrays as plain Python (for zarr attributes)."""
    return json.loads(json.dumps(value, default=_plain))


def _plain(v: object) -> object:
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (np.integer, np.floating, np.bool_)):
        return v.item()
    return str(v)
