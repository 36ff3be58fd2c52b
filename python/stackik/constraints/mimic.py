"""MimicConstraint: couple dependent joints to their leaders (simIK's joint dependency).

For each coupling ``q_f = m q_l + c`` between two one-coordinate joints that both have
velocity entries (a robot loaded with ``mimic="keep"``, or any two joints the user
couples), one equality row

    v_f - m v_l = gain (m q_l + c - q_f) / dt

holds the follower on the leader's motion and removes any drift in one step. The row
is an equality (``lower = upper``); on a coupled configuration the right-hand side is
zero. The velocity engine does not hand these rows to SNS as rows that compete with the
tasks: it solves every step in the couplings' null space, ``v = G z + v0`` with the
followers dropped from the variables (:class:`stackik.sns.reduce.Reduction`, the folded
coordinates), ``v0`` carrying the rows' right-hand sides. The coupling then holds to
rounding and the tasks see exactly the problem of the fold layout.

The drift term is clamped into what the joint velocity box allows (read in
:meth:`MimicConstraint.tighten_box`, after the joint limits): with the leader held at
the value of its box nearest zero, the follower's velocity stays inside its own box, so
a badly coupled start configuration is pulled back as fast as the limits allow instead
of making the step infeasible. For continuous joints the angle ``atan2(sin, cos)`` is
coupled and the drift is wrapped to ``(-pi, pi]``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import _validate
from ..errors import InvalidInput
from ..model import JointKind, Kinematics, RobotModel
from .base import Constraint, register_constraint

_SCALAR = (JointKind.REVOLUTE, JointKind.PRISMATIC, JointKind.CONTINUOUS)


@register_constraint
class MimicConstraint(Constraint):
    """Equality rows ``v_f = m v_l`` plus drift correction, one per coupling.

    Added automatically to every solver on a robot loaded with ``mimic="keep"`` (named
    ``"mimic"``), for the robot's :attr:`~stackik.RobotModel.mimic_joints`.

    Args:
        name: Constraint name.
        kinematics: Kinematics cache read (a solver's), or a robot (its own cache).
        couplings: ``(follower, leader, multiplier, offset)`` tuples; the robot's kept
            mimic joints when omitted.
        gain: Fraction of the position drift removed per step, in (0, 1].

    Raises:
        JointNotFound: An unknown joint.
        InvalidInput: A joint without exactly one velocity coordinate of its own (a
            folded mimic follower, a floating base, ...), a follower coupled twice, a
            joint coupled to itself, or a bad gain / multiplier / offset.
    """

    family = "mimic"
    order = 5  # after the joint limits: tighten_box reads the box they leave

    def __init__(
        self,
        name: str,
        kinematics: Kinematics | RobotModel,
        couplings: Sequence[tuple[str, str, float, float]] | None = None,
        gain: float = 1.0,
    ) -> None:
        super().__init__(name, kinematics)
        robot = self._robot
        pairs = robot.kept_mimic_joints if couplings is None else list(couplings)
        self.gain = _validate.in_range(gain, "gain", 0.0, 1.0, open_low=True)
        self.couplings: list[tuple[str, str, float, float]] = []
        self._iq = np.zeros((len(pairs), 2), dtype=np.int64)  # follower, leader
        self._iv = np.zeros((len(pairs), 2), dtype=np.int64)
        self._continuous = np.zeros((len(pairs), 2), dtype=bool)
        self._scale = np.zeros(len(pairs))
        self._offset = np.zeros(len(pairs))
        for k, pair in enumerate(pairs):
            self._add(k, pair)
        self._box = np.full((len(pairs), 4), np.nan)  # follower lo, hi; leader lo, hi
        self._boxed = False  # whether tighten_box has filled _box
        self._rows: np.ndarray | None = None  # the (constant) coupling rows

    def _add(self, k: int, pair: tuple[str, str, float, float]) -> None:
        robot = self._robot
        try:
            follower, leader, mult, off = pair
        except (TypeError, ValueError):
            raise InvalidInput(
                f"a coupling is (follower, leader, multiplier, offset), got {pair!r}"
            ) from None
        if follower == leader:
            raise InvalidInput(f"joint {follower!r} cannot be coupled to itself")
        if follower in (c[0] for c in self.couplings):
            raise InvalidInput(f"joint {follower!r} is coupled twice")
        for j, joint in enumerate((follower, leader)):
            kind = robot.get_joint_kind(joint)
            if kind not in _SCALAR or robot.get_joint_velocity_size(joint) != 1:
                raise InvalidInput(
                    f"joint {joint!r} ({kind}) has no velocity coordinate of its own to "
                    "couple (a folded mimic follower? load the robot with mimic='keep')"
                )
            self._iq[k, j] = robot.get_joint_config_index(joint)
            self._iv[k, j] = robot.get_joint_velocity_index(joint)
            self._continuous[k, j] = kind == JointKind.CONTINUOUS
        self._scale[k] = _validate.in_range(mult, "multiplier", -1e6, 1e6)
        self._offset[k] = _validate.in_range(off, "offset", -1e6, 1e6)
        self.couplings.append((str(follower), str(leader), float(mult), float(off)))

    @property
    def velocity_couplings(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(follower v index, leader v index, multiplier)`` of each coupling (copies).

        The engine eliminates these equalities by solving in their null space
        (:class:`stackik.sns.reduce.Reduction`); the rows of :meth:`write` then hold by
        construction and give the drift terms.
        """
        return self._iv[:, 0].copy(), self._iv[:, 1].copy(), self._scale.copy()

    def max_rows(self) -> int:
        """One row per coupling."""
        return len(self.couplings)

    def drift(self) -> np.ndarray:
        """``m q_l + c - q_f`` of each coupling at the cache's configuration [rad or m]."""
        q = self._kin.q
        values = q[self._iq]
        cont = self._continuous
        if cont.any():  # continuous joints: the angle atan2(sin, cos)
            values[cont] = np.arctan2(q[self._iq[cont] + 1], q[self._iq[cont]])
        d = self._scale * values[:, 1] + self._offset - values[:, 0]
        wrap = self._continuous[:, 0]
        d[wrap] = np.pi - np.mod(np.pi - d[wrap], 2.0 * np.pi)
        return d

    def narrow_box(self, dt: float, lower: np.ndarray, upper: np.ndarray) -> None:
        """Leaves the box as it is; remembers the followers' and leaders' bounds."""
        self._box[:, 0] = lower[self._iv[:, 0]]
        self._box[:, 1] = upper[self._iv[:, 0]]
        self._box[:, 2] = lower[self._iv[:, 1]]
        self._box[:, 3] = upper[self._iv[:, 1]]
        self._boxed = True

    def write_rows(self, dt: float, C: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> int:
        """One equality row per coupling."""
        n = len(self.couplings)
        if n == 0:
            return 0
        if self._rows is None or self._rows.shape[1] != C.shape[1]:
            rows = np.zeros((n, C.shape[1]))
            k = np.arange(n)
            rows[k, self._iv[:, 0]] = 1.0
            rows[k, self._iv[:, 1]] -= self._scale
            self._rows = rows
        C[:n] = self._rows
        b = self.gain * self.drift() / dt
        box = self._box
        if self._boxed:  # clamp into what the box allows (see the module doc)
            lead = np.minimum(np.maximum(0.0, box[:, 2]), box[:, 3])
            lo, hi = box[:, 0] - self._scale * lead, box[:, 1] - self._scale * lead
            b = np.where(lo <= hi, np.minimum(np.maximum(b, lo), hi), b)
        lower[:n] = b
        upper[:n] = b
        return n

    def describe_row(self, row: int) -> str:
        """The coupling of row ``row``."""
        f, lead, m, c = self.couplings[row]
        return f"mimic coupling {f!r} = {m:g} * {lead!r} + {c:g} (constraint {self.name!r})"
