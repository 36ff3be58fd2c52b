"""``stackik check``: the validation report of a robot description, as data.

:func:`check_description` loads a URDF or XACRO file (and its SRDF) the way
:class:`~stackik.RobotModel` does and collects what is wrong instead of stopping at the
first fault:

- the description does not load (``MalformedDescription`` names the element);
- meshes that cannot be found (every one of them, with the folders searched);
- the SRDF does not load or names unknown links;
- link pairs still checked for collision although they are in contact at the neutral
  configuration or in almost every sampled configuration (errors: every configuration
  would count as a collision), or never farther apart than ``close_distance`` (warnings:
  a collision margin above their largest distance can never hold), each with the SRDF
  ``<disable_collisions>`` line that removes it;
- no collision geometry at all (a warning);
- with a scene file: a scene that does not load (an error naming the entry), and robot
  geometries or attached objects in collision with an obstacle, or attached objects in
  collision with the robot, at the neutral configuration (warnings: exclude the pair,
  or the solver starts in collision there; a pair no joint moves apart, such as a fixed
  base resting on a table, says so and gives its ``exclude_pairs`` entry).
"""

from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET
import xml.sax.saxutils as saxutils
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import FixedPairWarning, FrameNotFound, InvalidInput, MeshNotFound, RobotLoadError
from ..model import RobotModel
from ..model.loading import parse_xml, process_xacro, read_text, resolve_mesh_paths
from ..results import CollisionDebugInfo
from .common import load_robot

#: SRDF ``reason`` of each exclusion category the check reports.
REASONS = {"default": "Default", "always_colliding": "Always", "always_close": "Close"}
#: Categories that are errors when their pairs stay checked (the others are warnings).
ERROR_CATEGORIES = ("default", "always_colliding")


@dataclass(frozen=True)
class Finding:
    """One line of the report.

    Attributes:
        level: ``"error"`` or ``"warning"``.
        check: What was checked (``"load"``, ``"mesh"``, ``"srdf"``, ``"collision"``,
            ``"scene"``).
        message: What is wrong, naming the element, file or pair.
        srdf: The SRDF line that fixes it, when there is one.
    """

    level: str
    check: str
    message: str
    srdf: str = ""


@dataclass
class DescriptionReport:
    """Everything :func:`check_description` found.

    Attributes:
        path: The description checked.
        robot: The loaded robot (None when it does not load).
        findings: Errors and warnings, in the order found.
        samples: Configurations sampled for the collision checks (0: not run).
    """

    path: str
    robot: RobotModel | None = None
    findings: list[Finding] = field(default_factory=list)
    samples: int = 0

    @property
    def errors(self) -> list[Finding]:
        """The errors."""
        return [f for f in self.findings if f.level == "error"]

    @property
    def warnings(self) -> list[Finding]:
        """The warnings."""
        return [f for f in self.findings if f.level == "warning"]

    def srdf_lines(self) -> list[str]:
        """The ``<disable_collisions>`` lines to add to the SRDF, one per reported pair."""
        return [f.srdf for f in self.findings if f.srdf]


def _urdf_text(path: Path) -> str:
    if path.suffix == ".xacro":
        return process_xacro(path, {})
    return read_text(path)


def missing_meshes(
    path: Path, package_dirs: list[Path] | None = None
) -> tuple[list[MeshNotFound], ET.Element]:
    """Every mesh of a description that cannot be resolved (the library's search rules).

    Raises:
        RobotFileNotFound, MalformedDescription: The file is missing or not XML.
    """
    text = _urdf_text(path)
    root = parse_xml(text, str(path))
    dirs = [str(d) for d in package_dirs or []] or None
    missing: list[MeshNotFound] = []
    seen: set[str] = set()
    for link in root.iter("link"):
        for section in ("visual", "collision"):
            for elem in link.iter(section):
                # One element at a time: resolve_mesh_paths stops at the first missing mesh.
                single = ET.Element("robot")
                holder = ET.SubElement(single, "link")
                holder.append(elem)
                try:
                    resolve_mesh_paths(single, str(path), path.resolve().parent, dirs, [section])
                except MeshNotFound as exc:
                    if exc.filename not in seen:
                        seen.add(exc.filename)
                        missing.append(exc)
    return missing, root


def _srdf_line(link_a: str, link_b: str, category: str) -> str:
    a, b = saxutils.quoteattr(link_a), saxutils.quoteattr(link_b)
    reason = saxutils.quoteattr(REASONS[category])
    return f"<disable_collisions link1={a} link2={b} reason={reason}/>"


def _collision_findings(robot: RobotModel, samples: int, seed: int) -> list[Finding]:
    if not robot.has_collision_geometry():
        return [Finding("warning", "collision", "no collision geometry: no collision avoidance")]
    report = robot.compute_collision_exclusions(samples=samples, seed=seed)
    active = {frozenset(p) for p in robot.get_collision_pair_links()}
    out = []
    for category in REASONS:
        for p in report.of(category):
            if frozenset((p.link_a, p.link_b)) not in active:
                continue  # already disabled (SRDF)
            what = {
                "default": "in collision at the neutral configuration",
                "always_colliding": f"in collision in {100 * p.collision_fraction:.0f} % of "
                "the samples",
                "always_close": f"never farther apart than {p.max_distance:.4f} m",
            }[category]
            level = "error" if category in ERROR_CATEGORIES else "warning"
            out.append(
                Finding(
                    level,
                    "collision",
                    f"{p.link_a} / {p.link_b} is checked but {what}",
                    _srdf_line(p.link_a, p.link_b, category),
                )
            )
    return out


def _scene_findings(robot: RobotModel, scene: Path) -> list[Finding]:
    """Load a scene into the robot's world; its faults and its contacts at the neutral pose."""
    from ..solver import KinematicsSolver

    try:
        robot.load_scene(scene)
    except (RobotLoadError, FrameNotFound, InvalidInput) as exc:
        message = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        return [Finding("error", "scene", f"{type(exc).__name__}: {message}")]
    world = set(robot.world.state.layout.names())
    out = []
    # Without a collision constraint, the solver's probe watches every pair at 0 m. Its
    # warning of pairs no joint moves apart is left out: each is a finding below, with
    # the exclusion.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FixedPairWarning)
        infos = KinematicsSolver(robot).evaluate_collision_debug_list(robot.neutral_configuration())
    for info in infos:
        if info.distance > 0.0 or not {info.geometry_a, info.geometry_b} & world:
            continue
        out.append(
            Finding(
                "warning",
                "scene",
                f"{info.geometry_a} / {info.geometry_b} is in collision at the neutral "
                f"configuration (depth {-1e3 * info.distance:.1f} mm)" + _fixed_hint(info),
            )
        )
    return out


def _fixed_hint(info: CollisionDebugInfo) -> str:
    """For a pair no joint velocity moves apart (a fixed base on a table): the exclusion."""
    if np.any(info.jacobian):
        return ""
    return (
        "; no joint velocity changes its distance, so the solver cannot push it out: "
        f"exclude it if the contact is intended, exclude_pairs=[({info.geometry_a!r}, "
        f"{info.geometry_b!r})]"
    )


def check_description(
    path: Path,
    srdf: Path | None = None,
    package_dirs: list[Path] | None = None,
    floating_base: bool = False,
    samples: int = 1000,
    seed: int = 0,
    scene: Path | None = None,
) -> DescriptionReport:
    """Load a description and collect what is wrong with it (see the module docstring).

    Args:
        path: URDF or XACRO file.
        srdf: SRDF with disabled pairs.
        package_dirs: Extra folders searched for ``package://`` meshes.
        floating_base: Load with a free-flyer root joint.
        samples: Configurations sampled for the collision checks (0: skip them).
        seed: Seed of the samples.
        scene: A YAML scene file loaded into the robot's world and checked with it.
    """
    report = DescriptionReport(str(path))
    try:
        missing, _ = missing_meshes(path, package_dirs)
    except RobotLoadError as exc:
        report.findings.append(Finding("error", "load", str(exc)))
        return report
    for mesh in missing:
        report.findings.append(Finding("error", "mesh", str(mesh)))
    try:
        robot = load_robot(path, None, package_dirs, floating_base, load_collisions=not missing)
    except RobotLoadError as exc:
        report.findings.append(Finding("error", "load", str(exc)))
        return report
    report.robot = robot
    if srdf is not None:
        try:
            robot.load_srdf(srdf)
        except RobotLoadError as exc:
            report.findings.append(Finding("error", "srdf", str(exc)))
    if samples > 0 and not missing:
        report.samples = samples
        report.findings.extend(_collision_findings(robot, samples, seed))
    if scene is not None:
        report.findings.extend(_scene_findings(robot, scene))
    return report
