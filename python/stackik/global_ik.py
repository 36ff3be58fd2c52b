"""Global IK: multi-start search, alternate configurations, branch flags, Cartesian paths.

Every query runs the compiled Levenberg-Marquardt search of
:class:`~stackik.ik.chain.SerialChain` on the joints between the world (or the last joint
the chain cannot model, e.g. a free-flyer) and the target frame; the other joints are
held at a reference configuration. Each candidate is then checked on the full
:class:`~stackik.model.RobotModel`, exactly as the
:class:`~stackik.solver.KinematicsSolver` would see it:

1. Pinocchio forward kinematics puts the frame within the tolerances of the target;
2. the chain joints are inside their limits, shrunk by the solver's registered limit
   margin (the search itself runs inside those shrunk limits);
3. when a collision constraint is configured, no watched pair is closer than its
   ``min_distance`` (global value or per-pair override);
4. the user's ``validate(q) -> bool`` accepts it.

Rejected candidates send the search on from a new random start until the time budget
(or the attempt cap) runs out. Random draws come from one ``numpy`` generator seeded by
``seed``, so a query is reproducible whenever the time budget does not cut it.

Branch flags follow Visual Components' vcKinSolver (front/back, elbow above/below,
wrist flipped) and are defined geometrically from the joint axes, for 6R arms with a
spherical wrist and for UR-type arms alike (see :meth:`GlobalIKMixin.branch_flags`).

The mixin's methods become :class:`~stackik.solver.KinematicsSolver` methods; ``self``
is the solver.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pinocchio as pin

from . import _validate
from .errors import InvalidInput, JointNotFound
from .ik.chain import SerialChain
from .results import PathResult, SolverStatus
from .spatial import as_se3, check_pose_stack

if TYPE_CHECKING:
    from .solver import KinematicsSolver

__all__ = ["BatchIKOptions", "BranchFlags", "GlobalIKMixin"]

Validator = Callable[[np.ndarray], bool]

_REVOLUTE = ("JointModelRX", "JointModelRY", "JointModelRZ", "JointModelRevoluteUnaligned")
_CONTINUOUS = (
    "JointModelRUBX",
    "JointModelRUBY",
    "JointModelRUBZ",
    "JointModelRevoluteUnboundedUnaligned",
)
_PRISMATIC = ("JointModelPX", "JointModelPY", "JointModelPZ", "JointModelPrismaticUnaligned")
_CHAIN_KINDS = _REVOLUTE + _CONTINUOUS + _PRISMATIC

#: Slack of the limit test of a candidate [rad or m] (the search clips into the limits).
_LIMIT_SLACK = 1e-9
#: Slack of the pose test of a candidate over the tolerance [m or rad] (compiled FK vs
#: Pinocchio's differ by rounding only).
_POSE_SLACK = 1e-9
#: Distance between two axes under which they count as intersecting [m], and the
#: ``|a x b|`` under which two axes count as parallel.
_GEOMETRY_TOLERANCE = 1e-6
#: Chains kept per solver (keyed by frame, margin, locks, limits, base placement).
_CACHE_SIZE = 32
_TWO_PI = 2.0 * math.pi


class BranchFlags(NamedTuple):
    """Configuration (branch) flags of a 6R arm, vcKinSolver-style.

    Each flag is +1 or -1 (0 exactly on the singular boundary between two branches):

    * ``shoulder``: +1 "front", -1 "back": the side of joint 1's axis the wrist point lies
      on, along ``a2 x a1``;
    * ``elbow``: +1 "above", -1 "below": the turning sense of the elbow triangle (joint 2,
      joint 3, wrist) about ``a3``;
    * ``wrist``: +1 "not flipped", -1 "flipped": the sign of ``a5 . (a4 x a6)``.

    On the shipped UR5 they equal ``robots/README.md``'s ``(s1, s3, s5)``:
    ``s1 = sign(wrap(q1 - atan2(p5y, p5x) - pi/2))``, ``s3 = sign(sin q3)``,
    ``s5 = sign(sin q5)``. A flag given as ``None`` in a query matches any value.
    """

    shoulder: int
    elbow: int
    wrist: int

    @property
    def front(self) -> bool:
        """The wrist point is in front of joint 1's axis."""
        return self.shoulder > 0

    @property
    def above(self) -> bool:
        """The elbow is above (turns positively)."""
        return self.elbow > 0

    @property
    def flipped(self) -> bool:
        """The wrist is flipped."""
        return self.wrist < 0

    @property
    def code(self) -> int:
        """The configuration integer of vcKinSolver: bit 2 back, bit 1 below, bit 0 flipped."""
        return (self.shoulder < 0) << 2 | (self.elbow < 0) << 1 | int(self.wrist < 0)

    @classmethod
    def from_code(cls, code: int) -> BranchFlags:
        """Flags from vcKinSolver's configuration integer (0: front, above, not flipped)."""
        c = int(code)
        if not 0 <= c <= 7:
            raise InvalidInput(f"a configuration code is in [0, 7], got {code!r}")
        return cls(-1 if c & 4 else 1, -1 if c & 2 else 1, -1 if c & 1 else 1)


@dataclass
class BatchIKOptions:
    """Options of :meth:`GlobalIKMixin.solve_position_batch`.

    Attributes:
        time_budget: Budget per target [s], turned into an iteration cap from the
            measured iteration cost (the run is then machine-speed independent for a
            given cap; pass ``max_iterations`` to fix it).
        max_iterations: Iteration cap per target (overrides ``time_budget``).
        position_tolerance: Success threshold on the position error [m].
        orientation_tolerance: Success threshold on the rotation angle [rad].
        rng_seed: Seed of the restart generator.
        locked_joints: Joints held at their seed values.
        repair_invalid: Re-search (multi-start, within ``time_budget``) the targets whose
            converged configuration fails the robot-level checks.
        return_success: Also return the per-target success flags.
    """

    time_budget: float = 0.005
    max_iterations: int | None = None
    position_tolerance: float = 1e-5
    orientation_tolerance: float = 1e-4
    rng_seed: int = 0
    locked_joints: Sequence[str] = ()
    repair_invalid: bool = True
    return_success: bool = False


# -- geometry helpers ---------------------------------------------------------------------------
def _closest_point(p1: np.ndarray, d1: np.ndarray, p2: np.ndarray, d2: np.ndarray):
    """Point of line 1 closest to line 2 and the distance between the lines [m]."""
    w = p1 - p2
    b = float(d1 @ d2)
    den = 1.0 - b * b  # unit directions
    if den < 1e-12:  # parallel: any point
        return p1, float(np.linalg.norm(np.cross(w, d2)))
    d, e = float(d1 @ w), float(d2 @ w)
    s = (b * e - d) / den
    t = (e - b * d) / den
    c1 = p1 + s * d1
    return c1, float(np.linalg.norm(c1 - (p2 + t * d2)))


def _axes(chain: SerialChain, qc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit axis and one point of each joint's axis line, base frame, at ``qc``.

    From the world-aligned Jacobian: column ``[v_i ; a_i]`` with ``v_i = a_i x (p - o_i)``
    gives the foot of the perpendicular ``o_i = p - v_i x a_i``.
    """
    _, p = chain.fk(qc)
    J = chain.jacobian(qc)
    a = J[3:].T.copy()
    return a, p - np.cross(J[:3].T, a)


def _sign(x: float, scale: float) -> int:
    return 0 if abs(x) <= 1e-12 * max(scale, 1.0) else (1 if x > 0 else -1)


def _flags_at(chain: SerialChain, qc: np.ndarray) -> BranchFlags:
    a, o = _axes(chain, qc)
    c, _ = _closest_point(o[4], a[4], o[5], a[5])  # wrist point: axes 5 and 6 meet there
    w, _ = _closest_point(o[3], a[3], o[4], a[4])  # a point of axis 4 (axis 5 meets it)
    shoulder = float((c - o[0]) @ np.cross(a[1], a[0]))
    elbow = float(a[2] @ np.cross(o[2] - o[1], w - o[2]))
    wrist = float(a[4] @ np.cross(a[3], a[5]))
    return BranchFlags(_sign(shoulder, 1.0), _sign(elbow, 1.0), _sign(wrist, 1.0))


def _check_branch_structure(chain: SerialChain) -> None:
    """Raise unless the chain is a 6R arm whose flags are defined (spherical or UR wrist)."""
    name = f"chain to {chain.tip_frame!r}"
    if chain.n != 6 or chain.continuous.any():
        raise InvalidInput(f"branch flags need a 6R arm; the {name} has {chain.n} joints")
    kinds = [chain.model.joints[j].shortname() for j in chain.joint_ids]
    if any(k not in _REVOLUTE for k in kinds):
        raise InvalidInput(f"branch flags need revolute joints; the {name} has {kinds}")
    rng = np.random.default_rng(0)
    lo = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
    hi = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
    for _ in range(3):  # a structural property: test it away from special configurations
        a, o = _axes(chain, rng.uniform(lo, hi))
        if np.linalg.norm(np.cross(a[1], a[2])) > _GEOMETRY_TOLERANCE:
            raise InvalidInput(f"branch flags need parallel axes 2 and 3 ({name})")
        if np.linalg.norm(np.cross(a[0], a[1])) < 1e-3:
            raise InvalidInput(f"branch flags need axes 1 and 2 not parallel ({name})")
        for i, j in ((3, 4), (4, 5)):
            if _closest_point(o[i], a[i], o[j], a[j])[1] > _GEOMETRY_TOLERANCE:
                raise InvalidInput(
                    f"branch flags need a spherical or UR-type wrist: axes {i + 1} and "
                    f"{j + 1} do not meet ({name})"
                )


def _matches(flags: BranchFlags, wanted: tuple[int | None, int | None, int | None]) -> bool:
    return all(w is None or f == w for f, w in zip(flags, wanted, strict=True))


def _as_branch(branch: object) -> tuple[int | None, int | None, int | None] | None:
    if branch is None:
        return None
    if isinstance(branch, (int, np.integer)) and not isinstance(branch, bool):
        return tuple(BranchFlags.from_code(int(branch)))  # type: ignore[return-value]
    try:
        items = list(branch)  # type: ignore[call-overload]
    except TypeError:
        items = []
    if len(items) != 3 or any(v not in (None, -1, 1) for v in items):
        raise InvalidInput(
            f"branch must be BranchFlags, 3 values in (+1, -1, None) or a code 0-7, got {branch!r}"
        )
    return tuple(None if v is None else int(v) for v in items)  # type: ignore[return-value]


# -- setup and checking ---------------------------------------------------------------------
@dataclass
class _Setup:
    """The chain a query searches on, and what the full model needs to check it."""

    chain: SerialChain
    base_frame: str | None
    fid: int
    revolute: np.ndarray  # chain joints that are bounded revolute joints
    lower: np.ndarray  # effective chain limits (margin, locks) [rad or m]
    upper: np.ndarray
    check_lower: np.ndarray  # effective limits within the model's, minus the slack
    check_upper: np.ndarray


class _Checker:
    """Robot-level test of candidate configurations (pose, limits, collision, callback)."""

    def __init__(
        self,
        solver: KinematicsSolver,
        setup: _Setup,
        target: pin.SE3 | None,
        tol_p: float,
        tol_o: float,
        validate: Validator | None,
    ) -> None:
        robot = solver._robot
        self.robot = robot
        self.model = robot.model
        self.data = solver._gik_state()["data"]
        self.setup = setup
        self.target = target
        self.tol_p = tol_p + _POSE_SLACK
        self.tol_o = tol_o + _POSE_SLACK
        self.validate = validate
        self.touched = False
        col = solver._collision
        self.pairs: np.ndarray | None = None
        if col is not None and col.active:
            names = {pair: k for k, pair in enumerate(robot.get_collision_pair_names())}
            overrides = dict(solver.get_collision_pair_min_distance_overrides())
            idx_pairs, thr = [], []
            for a, b in col.pair_names():
                k = names.get((a, b), names.get((b, a)))
                if k is None:
                    continue
                idx_pairs.append(k)
                thr.append(overrides.get(f"{a}|{b}", overrides.get(f"{b}|{a}", col.min_distance)))
            self.pairs = np.array(idx_pairs, dtype=int)
            self.thresholds = np.array(thr, dtype=float)

    def pose_error(self, q: np.ndarray) -> tuple[float, float]:
        """Position [m] and orientation [rad] error of the frame at ``q`` (Pinocchio FK)."""
        pin.framesForwardKinematics(self.model, self.data, q)
        T = self.data.oMf[self.setup.fid]
        tgt = self.target
        assert tgt is not None
        ep = float(np.linalg.norm(tgt.translation - T.translation))
        eo = float(np.linalg.norm(pin.log3(tgt.rotation @ T.rotation.T)))
        return ep, eo

    def limits_ok(self, qc: np.ndarray) -> bool:
        """Chain joints inside the effective (margin, locks) and the model's limits."""
        s = self.setup
        return bool((qc >= s.check_lower).all() and (qc <= s.check_upper).all())

    def collision_ok(self, q: np.ndarray) -> bool:
        """No watched pair below its minimum distance (True without a constraint)."""
        if self.pairs is None or self.pairs.size == 0:
            return True
        self.touched = True
        self.robot.update_kinematics(q)
        d = np.asarray(self.robot.compute_collision_distances(), dtype=float)
        return bool(np.all(d[self.pairs] >= self.thresholds))

    def reason(self, q: np.ndarray, qc: np.ndarray, check_pose: bool = True) -> str:
        """``""`` when ``q`` passes every test, else the first failed test's name."""
        if check_pose:
            ep, eo = self.pose_error(q)
            if not (ep <= self.tol_p and eo <= self.tol_o):
                return "pose"
        if not self.limits_ok(qc):
            return "limits"
        if not self.collision_ok(q):
            return "collision"
        if self.validate is not None and not bool(self.validate(q.copy())):
            return "validation"
        return ""


class GlobalIKMixin:
    """Global IK methods of :class:`~stackik.solver.KinematicsSolver`.

    Mixed into the solver; ``self`` is the solver (its public API plus ``_robot``,
    ``_collision``, ``_limit_margin``).
    """

    # -- state, chains ---------------------------------------------------------------------
    def _gik_state(self: KinematicsSolver) -> dict[str, Any]:
        state = self.__dict__.get("_global_ik_state")
        if state is None:
            state = {
                "setups": {},
                "bases": {},
                "plain": {},
                "data": self._robot.model.createData(),
            }
            self.__dict__["_global_ik_state"] = state
        return state

    def _chain_base(self: KinematicsSolver, frame_name: str) -> tuple[int, str | None]:
        """Frame id and chain base frame: the last joint on the path a chain cannot model."""
        robot = self._robot
        fid = robot.get_frame_id(frame_name)
        bases = self._gik_state()["bases"]
        if frame_name not in bases:
            model = robot.model
            cut = 0
            for jid in list(model.supports[model.frames[fid].parentJoint])[1:]:
                if model.joints[jid].shortname() not in _CHAIN_KINDS:
                    cut = jid
            base = None
            if cut:
                base = model.names[cut]
                if not model.existFrame(base):  # pragma: no cover - Pinocchio names joint frames
                    base = next(f.name for f in model.frames if f.parentJoint == cut)
            bases[frame_name] = base
        return fid, bases[frame_name]

    def _plain_chain(self: KinematicsSolver, frame_name: str) -> SerialChain:
        """The chain to ``frame_name`` with the model's own limits (cached)."""
        robot = self._robot
        _, base = self._chain_base(frame_name)
        lo, hi = robot.get_joint_limits()
        key = (frame_name, lo.tobytes(), hi.tobytes(), robot.base_placement.homogeneous.tobytes())
        plain = self._gik_state()["plain"]
        chain = plain.get(key)
        if chain is None:
            chain = SerialChain.from_robot(robot, frame_name, base)
            chain.warm_up()
            if len(plain) >= _CACHE_SIZE:
                plain.pop(next(iter(plain)))
            plain[key] = chain
        return chain

    def _branch_chain(self: KinematicsSolver, frame_name: str) -> SerialChain:
        """The plain chain of ``frame_name``, checked (once) to have branch flags."""
        chain = self._plain_chain(frame_name)
        checked = self._gik_state().setdefault("branch_ok", set())
        if chain not in checked:
            _check_branch_structure(chain)
            checked.add(chain)
        return chain

    def _ik_setup(
        self: KinematicsSolver,
        frame_name: str,
        locked_joints: Sequence[str],
        q_ref: np.ndarray,
        margin: float | None = None,
    ) -> _Setup:
        """The search chain: model limits shrunk by the margin, locked joints pinned."""
        robot = self._robot
        fid, base = self._chain_base(frame_name)
        plain = self._plain_chain(frame_name)
        m = self._limit_margin if margin is None else margin
        if isinstance(locked_joints, str):
            locked_joints = [locked_joints]
        locks: dict[int, float] = {}
        for name in locked_joints:
            if not isinstance(name, str) or not robot.has_joint(name):
                raise JointNotFound(str(name), robot.get_joint_names())
            jid = robot.model.getJointId(name)  # Pinocchio's index (universe = 0)
            if jid in plain.joint_ids:
                k = plain.joint_ids.index(jid)
                if plain.continuous[k]:
                    raise InvalidInput(f"joint {name!r} is continuous and cannot be locked")
                locks[k] = float(q_ref[plain.idx_q[k]])
        key = (plain, fid, m, tuple(sorted(locks.items())))
        setups = self._gik_state()["setups"]
        setup = setups.get(key)
        if setup is not None:
            return setup
        lower, upper = plain.lower.copy(), plain.upper.copy()
        if m > 0:
            bounded = np.isfinite(lower) & np.isfinite(upper)
            lower[bounded] += m
            upper[bounded] -= m
            narrow = bounded & (lower > upper)
            mid = 0.5 * (lower + upper)
            lower[narrow] = upper[narrow] = mid[narrow]
        for k, v in locks.items():
            lower[k] = upper[k] = v
        model = robot.model
        revolute = np.array(
            [model.joints[j].shortname() in _REVOLUTE for j in plain.joint_ids], dtype=bool
        )
        chain = plain
        if locks or m > 0:
            copy = pin.Model(model)
            lo = copy.lowerPositionLimit.copy()
            hi = copy.upperPositionLimit.copy()
            for k in range(plain.n):
                if not plain.continuous[k]:
                    lo[plain.idx_q[k]] = lower[k]
                    hi[plain.idx_q[k]] = upper[k]
            copy.lowerPositionLimit, copy.upperPositionLimit = lo, hi
            chain = SerialChain.from_model(copy, frame_name, base)
        raw_lo, raw_hi = robot.get_joint_limits()
        cont = plain.continuous
        check_lower = np.maximum(lower, np.where(cont, -np.inf, raw_lo[plain.idx_q]))
        check_upper = np.minimum(upper, np.where(cont, np.inf, raw_hi[plain.idx_q]))
        setup = _Setup(
            chain,
            base,
            fid,
            revolute,
            lower,
            upper,
            check_lower - _LIMIT_SLACK,
            check_upper + _LIMIT_SLACK,
        )
        if len(setups) >= _CACHE_SIZE:
            setups.pop(next(iter(setups)))
        setups[key] = setup
        return setup

    def _target_in_base(
        self: KinematicsSolver, setup: _Setup, T: pin.SE3, q_ref: np.ndarray
    ) -> pin.SE3:
        """The world target expressed in the chain's base frame at ``q_ref``."""
        if setup.base_frame is None:
            return T
        model, data = self._robot.model, self._gik_state()["data"]
        pin.framesForwardKinematics(model, data, q_ref)
        return data.oMf[model.getFrameId(setup.base_frame)].actInv(T)

    def _reference(self: KinematicsSolver, reference_q: object | None) -> np.ndarray:
        robot = self._robot
        if reference_q is None:
            return robot.get_current_configuration()
        return robot.normalize(reference_q)

    def _alternates_chain(
        self: KinematicsSolver, setup: _Setup, qc: np.ndarray
    ) -> list[np.ndarray]:
        """``qc`` and its +-2 pi variants inside the effective limits (``qc`` first)."""
        options = []
        for k in range(qc.shape[0]):
            values = [qc[k]]
            if setup.revolute[k]:
                lo, hi = setup.lower[k] - _LIMIT_SLACK, setup.upper[k] + _LIMIT_SLACK
                for sgn in (1.0, -1.0):
                    v = qc[k] + sgn * _TWO_PI
                    while lo <= v <= hi:
                        values.append(v)
                        v += sgn * _TWO_PI
            options.append(values)
        return [np.array(c) for c in itertools.product(*options)]

    def _restore(self: KinematicsSolver, checker: _Checker, q0: np.ndarray, v0: np.ndarray) -> None:
        if checker.touched:
            self._robot.update_kinematics(q0, v0)

    def _search(
        self: KinematicsSolver,
        setup: _Setup,
        T_base: pin.SE3,
        checker: _Checker,
        q_ref: np.ndarray,
        *,
        max_solutions: int,
        deadline: float,
        rng: np.random.Generator | int,
        tol_p: float,
        tol_o: float,
        branch: tuple[int | None, int | None, int | None] | None,
        distinct: float,
        max_attempts: int | None,
        include_alternates: bool,
        first_seed: np.ndarray | None = None,
    ) -> tuple[list[np.ndarray], int, dict[str, int]]:
        """Multi-start search; returns (solutions, LM iterations, rejections by reason)."""
        chain = setup.chain
        R, p = T_base.rotation, T_base.translation
        seed = chain.from_full(q_ref) if first_seed is None else first_seed
        found: list[np.ndarray] = []
        found_c: list[np.ndarray] = []
        rejected: dict[str, int] = {}
        iterations = 0
        attempts = 0
        # The first start needs no draw (most queries end there): the generator is built
        # on the second start only.
        gen = rng if isinstance(rng, np.random.Generator) else None
        rng_seed = int(gen.integers(2**31)) if gen is not None else int(rng)  # type: ignore
        while len(found) < max_solutions:
            remaining = deadline - time.perf_counter()
            if remaining <= 0 or (max_attempts is not None and attempts >= max_attempts):
                break
            if attempts:
                if gen is None:
                    gen = np.random.default_rng(rng)
                seed = chain.random_configuration(gen)
                rng_seed = int(gen.integers(2**31))
            res = chain.solve(
                R,
                p,
                seed,
                time_budget=remaining,
                position_tolerance=tol_p,
                orientation_tolerance=tol_o,
                rng_seed=rng_seed,
            )
            attempts += 1
            iterations += res.iterations
            if not res.success:
                rejected["unreachable"] = rejected.get("unreachable", 0) + 1
                continue
            candidates = self._alternates_chain(setup, res.q) if include_alternates else [res.q]
            for qc in candidates:
                if len(found) >= max_solutions:
                    break
                if any(np.max(np.abs(qc - f)) < distinct for f in found_c):
                    rejected["duplicate"] = rejected.get("duplicate", 0) + 1
                    continue
                if branch is not None and not _matches(_flags_at(chain, qc), branch):
                    rejected["branch"] = rejected.get("branch", 0) + 1
                    continue
                q = chain.to_full(qc, q_ref)
                why = checker.reason(q, qc)
                if why:
                    rejected[why] = rejected.get(why, 0) + 1
                    continue
                found.append(q)
                found_c.append(qc)
        return found, iterations, rejected

    # -- public API --------------------------------------------------------------------------
    def prepare_global_ik(self: KinematicsSolver, frame_name: str) -> None:
        """Build (and compile or load) the chain of ``frame_name`` now, off the hot path.

        The first query on a frame otherwise pays the chain extraction (~0.1 ms) and, once
        per process, the loading of numba's cached kernels (~10 ms; a few seconds on a
        cold cache); neither counts against a query's ``time_budget``.

        Raises:
            FrameNotFound: Unknown frame.
            InvalidInput: A joint on the path is not supported by :class:`SerialChain`.
        """
        self._plain_chain(frame_name).iteration_cost()

    def find_configs(
        self: KinematicsSolver,
        target_pose: object,
        frame_name: str,
        max_solutions: int = 1,
        time_budget: float = 0.005,
        reference_q: object | None = None,
        validate: Validator | None = None,
        seed: int | None = None,
        *,
        branch: object | None = None,
        locked_joints: Sequence[str] = (),
        metric: object | None = None,
        position_tolerance: float = 1e-5,
        orientation_tolerance: float = 1e-4,
        distinct_tolerance: float = 1e-3,
        include_alternates: bool = False,
        max_attempts: int | None = None,
    ) -> list[np.ndarray]:
        """Distinct configurations that put ``frame_name`` at ``target_pose`` (simIK findConfigs).

        A randomized multi-start search (the first start is ``reference_q``) inside the
        time budget; every candidate is checked on the full robot (FK pose, joint limits
        with the solver's limit margin, the collision constraint's distances when one is
        configured, then ``validate``). The search stops at ``max_solutions`` accepted
        configurations, at the budget, or after ``max_attempts`` starts.

        Args:
            target_pose: World pose of the frame, SE3 or 4x4 [m].
            frame_name: Frame to place.
            max_solutions: Largest number of configurations returned (>= 1).
            time_budget: Wall-clock budget of the search [s] (chain preparation on the
                first query of a frame is not counted; see :meth:`prepare_global_ik`).
            reference_q: Configuration (size nq) the search starts from, that holds the
                joints off the chain, and that solutions are sorted by distance to; the
                robot's current configuration when omitted.
            validate: ``validate(q) -> bool`` rejecting candidates (e.g. a user rule).
            seed: Seed of the random starts (``None``: 0). Equal seeds give equal results
                whenever the budget does not cut the search (``max_attempts`` with a
                generous budget makes them machine independent).
            branch: Only configurations on this branch: :class:`BranchFlags`, a tuple of
                three +1/-1/None (None: any) or a vcKinSolver code 0-7; 6R arms only.
            locked_joints: Joints held at their ``reference_q`` values (vcKinSolver's
                driver mask, inverted) without rebuilding the robot.
            metric: Per-joint weights (size nv) of the sorting distance
                ``sqrt(sum_i w_i dq_i^2)``, ``dq = difference(reference_q, q)``; ones
                when omitted (simIK's cMetric).
            position_tolerance: Accepted position error [m].
            orientation_tolerance: Accepted orientation error [rad].
            distinct_tolerance: Two configurations are the same when no chain joint
                differs by more than this [rad or m].
            include_alternates: Also offer each solution's +-2 pi variants (simIK
                findAlt); they count toward ``max_solutions``.
            max_attempts: Cap on the number of starts (``None``: budget only).

        Returns:
            Configurations (size nq each), nearest to ``reference_q`` first; empty when
            none was found in the budget.

        Raises:
            ShapeError, NonFiniteInput, InvalidTransform: Bad target or reference.
            FrameNotFound, JointNotFound: Unknown frame or locked joint.
            InvalidInput: Bad option values; ``branch`` on a chain without branch flags.
        """
        return self._find(
            target_pose,
            frame_name,
            max_solutions,
            time_budget,
            reference_q,
            validate,
            seed,
            branch=branch,
            locked_joints=locked_joints,
            metric=metric,
            position_tolerance=position_tolerance,
            orientation_tolerance=orientation_tolerance,
            distinct_tolerance=distinct_tolerance,
            include_alternates=include_alternates,
            max_attempts=max_attempts,
            nearest=False,
        )

    def nearest_config(
        self: KinematicsSolver,
        target_pose: object,
        frame_name: str,
        reference_q: object | None = None,
        time_budget: float = 0.02,
        validate: Validator | None = None,
        seed: int | None = None,
        *,
        max_candidates: int = 32,
        include_alternates: bool = True,
        **options: Any,
    ) -> np.ndarray | None:
        """The configuration nearest to ``reference_q`` among those found in the budget.

        vcKinSolver's "nearest configuration": collects up to ``max_candidates``
        distinct configurations like :meth:`find_configs` (same keyword options, e.g.
        ``branch=...`` for the nearest one on a branch), adds every +-2 pi variant of
        each when ``include_alternates`` (a turn of a joint closer to the reference then
        wins), and returns the nearest one that passes the checks. The search uses the
        whole budget unless ``max_candidates`` (or ``max_attempts``) stops it first.

        Returns:
            The configuration (size nq), or ``None`` when nothing was found.

        Raises:
            Same as :meth:`find_configs`.
        """
        found = self._find(
            target_pose,
            frame_name,
            max_candidates,
            time_budget,
            reference_q,
            validate,
            seed,
            include_alternates=include_alternates,
            nearest=True,
            **options,
        )
        return found[0] if found else None

    def _find(
        self: KinematicsSolver,
        target_pose: object,
        frame_name: str,
        max_solutions: int,
        time_budget: float,
        reference_q: object | None,
        validate: Validator | None,
        seed: int | None,
        *,
        branch: object | None = None,
        locked_joints: Sequence[str] = (),
        metric: object | None = None,
        position_tolerance: float = 1e-5,
        orientation_tolerance: float = 1e-4,
        distinct_tolerance: float = 1e-3,
        include_alternates: bool = False,
        max_attempts: int | None = None,
        nearest: bool = False,
    ) -> list[np.ndarray]:
        """find_configs / nearest_config: search, then sort (nearest: over the variants)."""
        robot = self._robot
        T = as_se3(target_pose, "target_pose")
        q_ref = self._reference(reference_q)
        max_solutions = _positive_int(max_solutions, "max_solutions")
        budget = _positive_float(time_budget, "time_budget")
        if max_attempts is not None:
            max_attempts = _positive_int(max_attempts, "max_attempts")
        tol_p = _positive_float(position_tolerance, "position_tolerance")
        tol_o = _positive_float(orientation_tolerance, "orientation_tolerance")
        distinct = _positive_float(distinct_tolerance, "distinct_tolerance", allow_zero=True)
        w = np.ones(robot.nv) if metric is None else _validate.vector(metric, robot.nv, "metric")
        if (w < 0).any():
            raise InvalidInput("metric weights must be >= 0")
        wanted = _as_branch(branch)
        setup = self._ik_setup(frame_name, locked_joints, q_ref)
        if wanted is not None:
            self._branch_chain(frame_name)
        checker = _Checker(self, setup, T, tol_p, tol_o, validate)
        T_base = self._target_in_base(setup, T, q_ref)
        q0, v0 = robot.get_current_configuration(), robot.get_current_velocity()

        def distance(q: np.ndarray) -> float:
            return float(np.sqrt(w @ robot.difference(q_ref, q) ** 2))

        try:
            found, _, _ = self._search(
                setup,
                T_base,
                checker,
                q_ref,
                max_solutions=max_solutions,
                deadline=time.perf_counter() + budget,
                rng=0 if seed is None else int(seed),
                tol_p=tol_p,
                tol_o=tol_o,
                branch=wanted,
                distinct=distinct,
                max_attempts=max_attempts,
                include_alternates=bool(include_alternates) and not nearest,
            )
            if nearest and found and include_alternates:
                chain = setup.chain
                ranked = []
                for q in found:
                    for k, qc in enumerate(self._alternates_chain(setup, chain.from_full(q))):
                        alt = q if k == 0 else chain.to_full(qc, q_ref)
                        ranked.append((distance(alt), k, alt, qc))
                ranked.sort(key=lambda item: item[0])
                for _, k, alt, qc in ranked:
                    # A turn keeps the pose and every placement: limits and the callback
                    # are all that can reject it.
                    if k == 0 or not checker.reason(alt, qc, check_pose=False):
                        return [alt]
                return []  # pragma: no cover - the originals passed the checks
        finally:
            self._restore(checker, q0, v0)
        if len(found) > 1:
            dist = [distance(q) for q in found]
            found = [found[k] for k in np.argsort(dist, kind="stable")]
        return found[:1] if nearest else found

    def branch_flags(self: KinematicsSolver, q: object, frame_name: str) -> BranchFlags:
        """Branch flags of a configuration of a 6R arm (spherical or UR-type wrist).

        With ``a_i`` the unit axis of joint i and ``o_i`` a point of it (base frame), ``c``
        the point where axes 5 and 6 meet (the wrist centre of a spherical wrist; UR's
        ``p5``) and ``w`` the point of axis 4 where axis 5 meets it:

            shoulder = sign((c - o_1) . (a_2 x a_1))          front (+1) / back (-1)
            elbow    = sign(a_3 . ((o_3 - o_2) x (w - o_3)))   above (+1) / below (-1)
            wrist    = sign(a_5 . (a_4 x a_6))                 not flipped (+1) / flipped

        Each is 0 exactly on the singularity separating its two branches (wrist point
        on the shoulder's boundary, elbow stretched or folded, axes 4 and 6 aligned).

        Args:
            q: Configuration (size nq).
            frame_name: Tip frame of the arm (e.g. ``"tool0"``).

        Raises:
            InvalidInput: The chain is not a 6R arm with intersecting axes 4-5 and 5-6 and
                parallel axes 2 and 3.
            ShapeError, NonFiniteInput, FrameNotFound: Bad input.
        """
        qv = self._robot.normalize(q)
        chain = self._branch_chain(frame_name)
        return _flags_at(chain, chain.from_full(qv))

    def alternate_configs(
        self: KinematicsSolver, q: object, validate: Validator | None = None
    ) -> list[np.ndarray]:
        """Configurations equivalent to ``q`` through +-2 pi turns (simIK getAlternateConfigs).

        Every revolute joint whose range exceeds 360 degrees may take ``q_i + 2 pi k``
        inside its limits; all combinations are returned (``q`` first), so all share
        every frame pose of ``q``. Continuous joints are stored as ``(cos, sin)`` and have
        no alternate value.

        Args:
            q: Configuration (size nq).
            validate: Optional ``validate(q) -> bool`` filter (``q`` itself included).

        Returns:
            The configurations (size nq each).
        """
        robot = self._robot
        qv = robot.normalize(q)
        model = robot.model
        lo, hi = robot.get_joint_limits()
        choices: list[tuple[int, list[float]]] = []
        for j in range(1, model.njoints):
            jm = model.joints[j]
            if jm.shortname() not in _REVOLUTE:
                continue
            i = jm.idx_q
            values = [qv[i]]
            for sgn in (1.0, -1.0):
                v = qv[i] + sgn * _TWO_PI
                while lo[i] - _LIMIT_SLACK <= v <= hi[i] + _LIMIT_SLACK:
                    values.append(v)
                    v += sgn * _TWO_PI
            if len(values) > 1:
                choices.append((i, values))
        out = []
        for combo in itertools.product(*(values for _, values in choices)):
            alt = qv.copy()
            for (i, _), v in zip(choices, combo, strict=True):
                alt[i] = v
            if validate is None or bool(validate(alt.copy())):
                out.append(alt)
        return out

    def generate_path(
        self: KinematicsSolver,
        start_q: object,
        target_pose: object,
        frame_name: str,
        n_points: int,
        validate: Validator | None = None,
        *,
        max_joint_jump: float = 0.3,
        max_linear_step: float = 0.005,
        max_angular_step: float = 0.02,
        locked_joints: Sequence[str] = (),
        position_tolerance: float = 1e-6,
        orientation_tolerance: float = 1e-5,
    ) -> PathResult:
        """Joint configurations along the straight Cartesian line to a pose (simIK generatePath).

        The frame moves from its pose at ``start_q`` to ``target_pose`` on a straight
        line: position interpolated linearly, orientation by slerp (``exp(s log(R1 R0^T))
        R0``). The line is tracked in sub-steps of at most ``max_linear_step`` and
        ``max_angular_step``, each solved locally (Levenberg-Marquardt from the previous
        configuration, no restart, inside the margin-shrunk limits); a sub-step whose
        joints move more than ``max_joint_jump`` is a branch jump and stops the path.
        The ``n_points`` points (``start_q`` first, the target last) are checked on the
        robot: limits, collision distances when a collision constraint is configured, and
        ``validate``. Never raises on an unreachable or invalid point: the result says
        why and at which point, with the configurations reached before it.

        Args:
            start_q: Start configuration (size nq); also holds the joints off the chain.
            target_pose: World pose of the frame at the end of the line, SE3 or 4x4 [m].
            frame_name: Frame moved along the line.
            n_points: Number of path points (>= 2).
            validate: ``validate(q) -> bool`` applied to every point.
            max_joint_jump: Largest joint change of one sub-step [rad or m].
            max_linear_step: Longest sub-step along the line [m].
            max_angular_step: Largest rotation of one sub-step [rad].
            locked_joints: Joints held at their ``start_q`` values.
            position_tolerance: Accepted position error of a point [m].
            orientation_tolerance: Accepted orientation error of a point [rad].

        Returns:
            The :class:`~stackik.results.PathResult`.

        Raises:
            ShapeError, NonFiniteInput, InvalidTransform, FrameNotFound: Bad input.
            InvalidInput: ``n_points < 2`` or bad option values.
        """
        t0 = time.perf_counter()
        robot = self._robot
        q_start = robot.normalize(start_q)
        T1 = as_se3(target_pose, "target_pose")
        n = _positive_int(n_points, "n_points")
        if n < 2:
            raise InvalidInput(f"n_points must be >= 2, got {n_points!r}")
        jump = _positive_float(max_joint_jump, "max_joint_jump")
        lin = _positive_float(max_linear_step, "max_linear_step")
        ang = _positive_float(max_angular_step, "max_angular_step")
        tol_p = _positive_float(position_tolerance, "position_tolerance")
        tol_o = _positive_float(orientation_tolerance, "orientation_tolerance")
        setup = self._ik_setup(frame_name, locked_joints, q_start)
        chain = setup.chain
        checker = _Checker(self, setup, None, tol_p, tol_o, validate)
        model, data = robot.model, self._gik_state()["data"]
        pin.framesForwardKinematics(model, data, q_start)
        T0 = pin.SE3(data.oMf[setup.fid])
        dp = T1.translation - T0.translation
        dw = pin.log3(T1.rotation @ T0.rotation.T)  # world axes

        def pose_at(s: float) -> pin.SE3:
            return pin.SE3(pin.exp3(s * dw) @ T0.rotation, T0.translation + s * dp)

        poses = np.array([pose_at(k / (n - 1)).homogeneous for k in range(n)])
        M_base = pin.SE3.Identity()
        if setup.base_frame is not None:
            M_base = pin.SE3(data.oMf[model.getFrameId(setup.base_frame)])
        configs = [q_start]
        q0, v0 = robot.get_current_configuration(), robot.get_current_velocity()

        def result(status: SolverStatus, index: int, reason: str, message: str) -> PathResult:
            return PathResult(
                status=status,
                status_message=message,
                bad_index=index,
                reason=reason,
                configurations=np.array(configs),
                poses=poses,
                computation_time_ms=(time.perf_counter() - t0) * 1e3,
            )

        try:
            qc = chain.from_full(q_start)
            why = checker.reason(q_start, qc, check_pose=False)
            if why:
                configs.clear()
                return result(
                    SolverStatus.INVALID_INPUT,
                    0,
                    why,
                    f"the start configuration fails the {why} check",
                )
            steps_per = max(
                1, math.ceil(max(np.linalg.norm(dp) / lin, np.linalg.norm(dw) / ang) / (n - 1))
            )
            total = steps_per * (n - 1)
            for k in range(1, n):
                for j in range(1, steps_per + 1):
                    s = ((k - 1) * steps_per + j) / total
                    Tb = M_base.actInv(pose_at(s))
                    res = chain.solve(
                        Tb.rotation,
                        Tb.translation,
                        qc,
                        time_budget=1.0,
                        max_restarts=0,
                        max_iterations=200,
                        position_tolerance=tol_p,
                        orientation_tolerance=tol_o,
                    )
                    if not res.success:
                        return result(
                            SolverStatus.INFEASIBLE,
                            k,
                            "unreachable",
                            f"point {k} is unreachable from point {k - 1} along the line "
                            f"(s = {s:.4f}: position error {res.position_error:.3g} m, "
                            f"orientation error {res.orientation_error:.3g} rad)",
                        )
                    step = float(np.max(np.abs(res.q - qc)))
                    if step > jump:
                        return result(
                            SolverStatus.CONSTRAINT_VIOLATION,
                            k,
                            "joint_jump",
                            f"joints jump by {step:.3g} > {jump:.3g} between points {k - 1} "
                            f"and {k} (s = {s:.4f}): a branch change or a singularity",
                        )
                    qc = res.q
                q = chain.to_full(qc, q_start)
                why = checker.reason(q, qc, check_pose=False)
                if why:
                    return result(
                        SolverStatus.CONSTRAINT_VIOLATION,
                        k,
                        why,
                        f"point {k} fails the {why} check",
                    )
                configs.append(q)
        finally:
            self._restore(checker, q0, v0)
        return result(SolverStatus.SUCCESS, -1, "", f"{n} points on the line")

    def solve_position_batch(
        self: KinematicsSolver,
        target_poses: object,
        frame_name: str,
        seeds: object | None = None,
        options: BatchIKOptions | None = None,
        validate: Validator | None = None,
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Solve many targets in one compiled loop (MotrixSim's batched rows).

        Each target is solved by :meth:`SerialChain.solve_batch` from its seed, then
        checked on the full robot like a :meth:`find_configs` candidate; with
        ``options.repair_invalid`` a target whose converged configuration fails the
        robot-level checks is searched again with random starts.

        Args:
            target_poses: World poses of the frame, shape (N, 4, 4) [m].
            frame_name: Frame to place.
            seeds: Start configurations, (N, nq) or (nq,) for all; they also hold the
                joints off the chain. The robot's current configuration when omitted.
            options: :class:`BatchIKOptions`.
            validate: ``validate(q) -> bool`` applied to every converged configuration.

        Returns:
            (N, nq + 2) rows ``[iterations, residual, q...]`` with
            ``residual = sqrt(|e_p|^2 + |e_o|^2)`` [m, rad] of the returned ``q``, and
            ``inf`` for a converged ``q`` that fails the robot-level checks; with
            ``options.return_success`` also the (N,) success flags.

        Raises:
            ShapeError, NonFiniteInput, InvalidTransform: Bad targets or seeds.
            FrameNotFound, InvalidInput: Unknown frame or bad options.
        """
        robot = self._robot
        opts = options if options is not None else BatchIKOptions()
        if not isinstance(opts, BatchIKOptions):
            raise InvalidInput(f"options must be BatchIKOptions, got {type(opts).__name__}")
        Ts = check_pose_stack(target_poses, "target_poses")
        N = Ts.shape[0]
        if seeds is None:
            S = np.broadcast_to(robot.get_current_configuration(), (N, robot.nq))
        else:
            S = np.asarray(seeds, dtype=float)
            if S.ndim == 1:
                S = np.broadcast_to(robot.normalize(S), (N, robot.nq))
            else:
                S = _validate.matrix(S, (N, robot.nq), "seeds")
                S = np.array([robot.normalize(s) for s in S])
        budget = _positive_float(opts.time_budget, "time_budget")
        tol_p = _positive_float(opts.position_tolerance, "position_tolerance")
        tol_o = _positive_float(opts.orientation_tolerance, "orientation_tolerance")
        setup = self._ik_setup(
            frame_name, opts.locked_joints, S[0] if N else robot.neutral_configuration()
        )
        if opts.locked_joints and N > 1 and not np.all(S == S[0]):
            raise InvalidInput("locked_joints in a batch need one common seed")
        chain = setup.chain
        if setup.base_frame is not None and N:
            model, data = robot.model, self._gik_state()["data"]
            bid = model.getFrameId(setup.base_frame)
            Tb = np.empty_like(Ts)
            for k in range(N):
                pin.framesForwardKinematics(model, data, S[k])
                Tb[k] = data.oMf[bid].actInv(pin.SE3(Ts[k])).homogeneous
        else:
            Tb = Ts
        seeds_c = np.array([chain.from_full(s) for s in S]) if N else np.zeros((0, chain.n))
        rows_c, ok = chain.solve_batch(
            Tb,
            seeds_c,
            time_budget=budget,
            max_iterations=opts.max_iterations,
            position_tolerance=tol_p,
            orientation_tolerance=tol_o,
            rng_seed=int(opts.rng_seed),
            return_success=True,
        )
        rows = np.empty((N, robot.nq + 2))
        rows[:, :2] = rows_c[:, :2]
        success = np.zeros(N, dtype=bool)
        q0, v0 = robot.get_current_configuration(), robot.get_current_velocity()
        checker = _Checker(self, setup, None, tol_p, tol_o, validate)
        try:
            for k in range(N):
                qc = rows_c[k, 2:]
                rows[k, 2:] = chain.to_full(qc, S[k])
                if not ok[k]:
                    continue
                checker.target = pin.SE3(Ts[k])
                if not checker.reason(rows[k, 2:], qc):
                    success[k] = True
                    continue
                rows[k, 1] = np.inf
                if not opts.repair_invalid:
                    continue
                # The batch's own start converged to this configuration: start elsewhere.
                rng = np.random.default_rng([int(opts.rng_seed), k])
                found, iters, _ = self._search(
                    setup,
                    pin.SE3(Tb[k]),
                    checker,
                    S[k],
                    max_solutions=1,
                    deadline=time.perf_counter() + budget,
                    rng=rng,
                    tol_p=tol_p,
                    tol_o=tol_o,
                    branch=None,
                    distinct=0.0,
                    max_attempts=None,
                    include_alternates=False,
                    first_seed=chain.random_configuration(rng),
                )
                rows[k, 0] += iters
                if found:
                    rows[k, 2:] = found[0]
                    ep, eo = checker.pose_error(found[0])
                    rows[k, 1] = math.hypot(ep, eo)
                    success[k] = True
        finally:
            self._restore(checker, q0, v0)
        if opts.return_success:
            return rows, success
        return rows


def _positive_float(value: object, what: str, allow_zero: bool = False) -> float:
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        v = float("nan")
    if not (math.isfinite(v) and (v >= 0 if allow_zero else v > 0)):
        raise InvalidInput(
            f"{what} must be a finite number {'>=' if allow_zero else '>'} 0, got {value!r}"
        )
    return v


def _positive_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidInput(f"{what} must be an integer >= 1, got {value!r}")
    return int(value)
