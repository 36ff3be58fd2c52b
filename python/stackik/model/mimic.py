"""URDF ``<mimic>`` joints: their declarations, the two q layouts, and the load order.

A mimic joint (the *follower*) obeys ``q_f = multiplier * q_leader + offset``. stackik
offers two layouts of q for it (``RobotModel(..., mimic=...)``):

- ``"keep"`` (default): the follower stays a joint of its own, so q is laid out exactly
  as in Pinocchio's plain model of the same file (``pin.buildModelFromUrdf``) and in
  EmbodiK. The solvers couple it to its leader with an equality constraint
  (:class:`stackik.constraints.MimicConstraint`, simIK's dependent joints), which the
  velocity engine eliminates: each step is solved in the coupling's null space.
- ``"fold"`` (opt-in): Pinocchio's mimic joints; the follower has no q or v entries
  of its own (``nq``/``nv`` exclude it) and every Jacobian includes its motion through
  the leader's column. The coupling holds by construction.

**Load order.** Pinocchio adds a mimic joint only after its leader, and it visits the
joints depth first, siblings in name order. A follower that comes first (a gripper
whose mimic finger sorts before the driven one, or sits in an earlier branch) makes
Pinocchio refuse the file. For the fold layout :func:`leader_first_urdf` therefore
reorders the tree: siblings whose subtrees hold leaders are visited first. Pinocchio
cannot be told an order, so the joints are renamed with their rank for the build and
their names restored afterwards (:func:`restore_names`). The keep layout builds
Pinocchio's plain model, which loads in any order.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from ..errors import MalformedDescription
from .joints import JointKind, classify

__all__ = [
    "LAYOUTS",
    "Coupling",
    "couple",
    "declarations",
    "leader_first_urdf",
    "restore_names",
    "strip_rank",
]

#: The q layouts of mimic joints.
LAYOUTS = ("fold", "keep")

#: Separator between the rank and the name of a joint renamed for the build.
_RANK_TAG = "~stackik-rank~"


@dataclass(frozen=True)
class Coupling:
    """One ``<mimic>`` declaration: ``q_follower = multiplier * q_leader + offset``.

    Attributes:
        follower: The mimic joint.
        leader: The joint it follows.
        multiplier: Scaling (URDF default 1).
        offset: Offset [rad or m] (URDF default 0).
    """

    follower: str
    leader: str
    multiplier: float
    offset: float


def declarations(root: ET.Element) -> list[Coupling]:
    """Every ``<mimic>`` of a (validated) URDF, in document order."""
    out = []
    for joint in root.findall("joint"):
        mimic = joint.find("mimic")
        if mimic is not None:
            out.append(
                Coupling(
                    str(joint.get("name")),
                    str(mimic.get("joint")),
                    float(mimic.get("multiplier", "1")),
                    float(mimic.get("offset", "0")),
                )
            )
    return out


class _Tree:
    """The joint tree of a (validated) URDF: children of each link, subtrees."""

    def __init__(self, root: ET.Element) -> None:
        self.children: dict[str, list[str]] = {}
        self.child_link: dict[str, str] = {}
        children_of: set[str] = set()
        for joint in root.findall("joint"):
            name = str(joint.get("name"))
            parent = str(joint.find("parent").get("link"))  # type: ignore[union-attr]
            child = str(joint.find("child").get("link"))  # type: ignore[union-attr]
            self.children.setdefault(parent, []).append(name)
            self.child_link[name] = child
            children_of.add(child)
        links = [str(link.get("name")) for link in root.findall("link")]
        self.root = next(link for link in links if link not in children_of)
        self._below: dict[str, frozenset[str]] = {}

    def subtree(self, joint: str) -> frozenset[str]:
        """``joint`` and every joint below it."""
        if joint not in self._below:
            out = {joint}
            for j in self.children.get(self.child_link[joint], []):
                out |= self.subtree(j)
            self._below[joint] = frozenset(out)
        return self._below[joint]

    def name_order(self) -> list[str]:
        """Pinocchio's order: depth first from the root link, siblings by name."""
        return self.leader_first_order({})

    def leader_first_order(self, leader_of: dict[str, str]) -> list[str]:
        """Depth first, siblings by name, but leaders' subtrees before their followers'.

        A sibling whose subtree holds the leader of a follower under another sibling
        is visited before that sibling (when the two do not wait for each other).
        """
        out: list[str] = []
        self._visit(self.root, leader_of, out)
        return out

    def _visit(self, link: str, leader_of: dict[str, str], out: list[str]) -> None:
        pending = sorted(self.children.get(link, []))
        while pending:
            j = next((j for j in pending if self._ready(j, pending, leader_of)), pending[0])
            out.append(j)
            self._visit(self.child_link[j], leader_of, out)
            pending.remove(j)

    def _ready(self, j: str, pending: list[str], leader_of: dict[str, str]) -> bool:
        """No follower under ``j`` waits for a leader under another pending sibling."""
        inside = self.subtree(j)
        leaders = {leader_of[f] for f in inside if f in leader_of} - inside
        others = [self.subtree(p) for p in pending if p != j]
        return not any(lead in sub for lead in leaders for sub in others)


def _follower_first(order: list[str], couplings: list[Coupling]) -> list[Coupling]:
    rank = {j: k for k, j in enumerate(order)}
    return [c for c in couplings if rank[c.leader] > rank[c.follower]]


def leader_first_urdf(
    root: ET.Element, couplings: list[Coupling], source: str
) -> tuple[ET.Element, dict[str, str]]:
    """The URDF as Pinocchio must see it to fold the mimic joints, and the renaming.

    Returns:
        ``(root, {})`` when Pinocchio's own order already has every leader before its
        followers; else a copy whose joints are renamed (and reordered) by their rank
        in a leader-first depth-first order, with the map from new names to old.

    Raises:
        MalformedDescription: No depth-first order has every leader first (a follower
            above its own leader, or mimic joints that follow each other across
            branches); the keep layout loads such files.
    """
    if not couplings:
        return root, {}
    tree = _Tree(root)
    if not _follower_first(tree.name_order(), couplings):
        return root, {}
    order = tree.leader_first_order({c.follower: c.leader for c in couplings})
    late = _follower_first(order, couplings)
    if late:
        c = late[0]
        raise MalformedDescription(
            source,
            f"mimic joint {c.follower!r} cannot be folded: no depth-first order of the tree "
            f"reaches its leader {c.leader!r} first. Load it with mimic='keep'",
        )
    width = len(str(len(order)))
    new = {old: f"{k:0{width}d}{_RANK_TAG}{old}" for k, old in enumerate(order)}
    copy = ET.fromstring(ET.tostring(root))
    joints = {str(j.get("name")): j for j in copy.findall("joint")}
    for j in joints.values():
        copy.remove(j)
    for old in order:  # document order = rank order too, whichever order urdfdom keeps
        elem = joints[old]
        elem.set("name", new[old])
        mimic = elem.find("mimic")
        if mimic is not None:
            mimic.set("joint", new[str(mimic.get("joint"))])
        copy.append(elem)
    return copy, {v: k for k, v in new.items()}


def restore_names(model: pin.Model, renamed: dict[str, str]) -> None:
    """Give joints and their frames back the names :func:`leader_first_urdf` changed."""
    if not renamed:
        return
    for j in range(1, model.njoints):
        name = model.names[j]
        if name in renamed:
            model.names[j] = renamed[name]
    for f in range(len(model.frames)):
        name = model.frames[f].name
        if name in renamed:
            model.frames[f].name = renamed[name]


def strip_rank(message: str) -> str:
    """A Pinocchio message about a renamed description, with the original names."""
    return re.sub(rf"\d+{re.escape(_RANK_TAG)}", "", message)


def _value(q: np.ndarray, joint: pin.JointModel) -> float:
    if joint.nq == 2:  # continuous: (cos, sin)
        return float(np.arctan2(q[joint.idx_q + 1], q[joint.idx_q]))
    return float(q[joint.idx_q])


def _leaders_first(couplings: list[Coupling]) -> list[Coupling]:
    """Couplings sorted so that a follower that leads another is set first (chains)."""
    leader_of = {c.follower: c.leader for c in couplings}

    def depth(joint: str) -> int:
        seen = {joint}
        n = 0
        while joint in leader_of and leader_of[joint] not in seen:
            joint = leader_of[joint]
            seen.add(joint)
            n += 1
        return n

    return sorted(couplings, key=lambda c: depth(c.follower))


def couple(model: pin.Model, couplings: list[Coupling], q: np.ndarray) -> np.ndarray:
    """``q`` with every kept follower set from its leader (followers of the keep layout).

    Couplings whose follower or leader is not a joint with q entries of its own in
    ``model`` (folded, or locked in a reduced model) are skipped; in a chain (a follower
    that leads another) the first follower is set first.
    """
    out = np.array(q, dtype=float)
    for c in _leaders_first(couplings):
        if not (model.existJointName(c.follower) and model.existJointName(c.leader)):
            continue
        jf = model.joints[model.getJointId(c.follower)]
        jl = model.joints[model.getJointId(c.leader)]
        if JointKind.MIMIC in (classify(jf), classify(jl)) or jf.nv != 1 or jl.nv != 1:
            continue
        value = c.multiplier * _value(out, jl) + c.offset
        if jf.nq == 2:
            out[jf.idx_q : jf.idx_q + 2] = np.cos(value), np.sin(value)
        else:
            out[jf.idx_q] = value
    return out
