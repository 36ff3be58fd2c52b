"""Constraint families of the KinematicsSolver (STYLE.md item 8 families, per constraint).

- Joint limits -> velocity box: hand-computed values (margins, braking term,
  outside-limit recovery), a property test, the solver's box, and long rollouts
  toward targets outside the workspace that never leave the position limits.
- Self-collision: the distance row against finite differences of the exact distance,
  row structure, broadphase soundness, pair selection and per-pair overrides, and
  rollouts that drive the arm into itself (stopping and sliding).
- CoM support polygon: rows against finite differences, hand-computed bounds, the
  humanoid rollout that pushes the CoM outward.
- Relative pose: rows against finite differences, bounds, a dual-arm rollout.
- User rows, tight point / frame-pose constraints, floating-base bounds.
- Typed errors for bad input everywhere.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stackik import (
    CollisionGeometryNotFound,
    CollisionMarginWarning,
    FrameNotFound,
    InvalidBounds,
    InvalidInput,
    NonFiniteInput,
    RobotModel,
    ShapeError,
    SolverStatus,
)
from stackik.constraints import (
    ComPolygonConstraint,
    RelativePoseConstraint,
    TightFramePoseConstraint,
    calculate_velocity_box_constraint,
)
from stackik.constraints.collision import MAX_LEARNED_ERROR, CollisionTuningMode
from stackik.constraints.limits import velocity_box
from stackik.sns import TaskSolveMode
from stackik.solver import KinematicsSolver
from stackik.tasks import TaskType

ROBOTS = Path(__file__).resolve().parents[1] / "robots"
EPS = 1e-6
PANDA_READY = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
FOOT_HALF = np.array([0.1292, 0.04675])  # half length / width of the humanoid's sole box [m]


# -- robots ------------------------------------------------------------------------------------
def load_panda() -> RobotModel:
    return RobotModel(ROBOTS / "panda" / "panda.urdf", srdf_path=ROBOTS / "panda" / "panda.srdf")


def load_dual_arm() -> RobotModel:
    return RobotModel(
        ROBOTS / "dual_arm" / "dual_arm.urdf", srdf_path=ROBOTS / "dual_arm" / "dual_arm.srdf"
    )


@pytest.fixture(scope="module")
def panda() -> RobotModel:
    return load_panda()


@pytest.fixture(scope="module")
def dual_arm() -> RobotModel:
    return load_dual_arm()


@pytest.fixture(scope="module")
def humanoid() -> RobotModel:
    return RobotModel(
        ROBOTS / "humanoid" / "humanoid.urdf",
        floating_base=True,
        srdf_path=ROBOTS / "humanoid" / "humanoid.srdf",
    )


@pytest.fixture(scope="module")
def ur5() -> RobotModel:
    return RobotModel(ROBOTS / "ur5" / "ur5.urdf")


def dual_ready(robot: RobotModel, right_joint5: float = 0.0) -> np.ndarray:
    """Both arms in the panda 'ready' pose (clear of self-collision)."""
    q = robot.neutral_configuration()
    for side in ("left", "right"):
        for j, v in ((2, -0.5), (4, -2.0), (6, 1.6), (7, 0.8)):
            q[robot.get_joint_config_index(f"{side}_panda_joint{j}")] = v
    q[robot.get_joint_config_index("right_panda_joint5")] = right_joint5
    return q


def fd_vector(robot: RobotModel, q: np.ndarray, value) -> np.ndarray:
    """Central difference of ``value()`` (read from the cache) along each tangent direction."""
    cols = []
    for e in np.eye(robot.nv):
        robot.update_kinematics(robot.integrate(q, EPS * e))
        plus = np.array(value(), dtype=float)
        robot.update_kinematics(robot.integrate(q, -EPS * e))
        minus = np.array(value(), dtype=float)
        cols.append((plus - minus) / (2 * EPS))
    robot.update_kinematics(q)
    return np.array(cols).T


def solved(res) -> bool:
    """A step that solved, or a stall the engine reports as such.

    A stall (``NO_PROGRESS``): the constraints block the highest-priority level entirely
    (scale 0) and the step is zero; the engine never calls that SUCCESS.
    """
    if res.status == SolverStatus.NO_PROGRESS:
        return bool(res.task_scales[0] <= 1e-12 and np.abs(res.solution).max() <= 1e-12)
    return res.status == SolverStatus.SUCCESS


def max_violation(x: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> float:
    return float(np.max(np.maximum(lower - x, x - upper), initial=-np.inf))


# ============================================================================================
# Joint limits -> velocity box
# ============================================================================================
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # Far from both limits: the velocity limit binds.
        ((1.0, 1.0, 2.0, 10.0, 0.01), (-2.0, 2.0)),
        # 1 mrad from the upper limit, no braking term: m / dt = 0.1.
        ((1.0, 0.001, 2.0, math.inf, 0.01), (-2.0, 0.1)),
        # Braking term: a (sqrt(dt^2 + 2 m / a) - dt) with a = 1, m = 0.5 -> 0.990050.
        ((0.5, 0.5, 2.0, 1.0, 0.01), (-(math.sqrt(1.0001) - 0.01), math.sqrt(1.0001) - 0.01)),
        # At the limit: no motion toward it.
        ((0.0, 1.0, 2.0, 10.0, 0.01), (-0.0, 2.0)),
        # Outside the upper limit by 5 mrad: driven back at m / dt = 0.5.
        ((1.0, -0.005, 2.0, 10.0, 0.01), (-2.0, -0.5)),
        # Far outside: the recovery is capped at v_max.
        ((-0.1, 1.0, 2.0, 10.0, 0.01), (2.0, 2.0)),
        # No velocity limit, no acceleration limit: pure position step.
        ((0.3, 0.2, math.inf, math.inf, 0.1), (-3.0, 2.0)),
        # Outside a limit of a narrow range: the recovery wins over the braking bound of
        # the other side (regression: the box used to come out empty, lower > upper).
        ((0.001, -0.001, 2.0, 10.0, 0.01), (-0.1, -0.1)),
        ((-0.02, 0.03, 2.0, 10.0, 0.01), (2.0, 2.0)),
    ],
)
def test_velocity_box_hand_computed(args, expected):
    lo, hi = calculate_velocity_box_constraint(*args)
    assert lo == pytest.approx(expected[0], abs=1e-12)
    assert hi == pytest.approx(expected[1], abs=1e-12)


def test_velocity_box_braking_term_is_the_stopping_bound():
    """v_up solves v dt + v^2 / (2 a) = m when it binds."""
    dt, a = 0.01, 4.0
    for m in (1e-4, 0.01, 0.3):
        _, v = calculate_velocity_box_constraint(1.0, m, math.inf, a, dt)
        assert v * dt + v * v / (2 * a) == pytest.approx(m, rel=1e-12)


@pytest.mark.parametrize(
    "args",
    [
        (0.1, 0.1, 2.0, 10.0, 0.0),
        (0.1, 0.1, 2.0, 10.0, -0.01),
        (0.1, 0.1, 2.0, 10.0, math.inf),
        (math.nan, 0.1, 2.0, 10.0, 0.01),
        (0.1, math.nan, 2.0, 10.0, 0.01),
        (0.1, 0.1, 0.0, 10.0, 0.01),
        (0.1, 0.1, -1.0, 10.0, 0.01),
        (0.1, 0.1, 2.0, 0.0, 0.01),
        (0.1, 0.1, math.nan, 10.0, 0.01),
    ],
)
def test_velocity_box_bad_input_is_a_typed_error(args):
    with pytest.raises(InvalidInput):
        calculate_velocity_box_constraint(*args)


finite = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(
    q_min=finite,
    span=st.floats(min_value=0.0, max_value=2.0),
    t=st.floats(min_value=-0.2, max_value=1.2),
    vmax=st.floats(min_value=0.01, max_value=10.0),
    amax=st.one_of(st.floats(min_value=0.01, max_value=100.0), st.just(math.inf)),
    dt=st.floats(min_value=1e-4, max_value=0.1),
)
def test_velocity_box_properties(q_min, span, t, vmax, amax, dt):
    q_max = q_min + span
    q = q_min + t * span if span > 0 else q_min + (t - 0.5) * 0.1
    lo, hi = calculate_velocity_box_constraint(q - q_min, q_max - q, vmax, amax, dt)
    assert lo <= hi  # never empty while q_min <= q_max
    assert max(abs(lo), abs(hi)) <= vmax * (1 + 1e-12)
    if q_min <= q <= q_max:
        assert lo <= 0.0 <= hi
        # A step at either bound stays inside the limits ...
        for v in (lo, hi):
            assert q_min - 1e-12 <= q + v * dt <= q_max + 1e-12
        # ... and can still brake to rest before the limit with deceleration amax.
        if math.isfinite(amax):
            assert hi * dt + hi * hi / (2 * amax) <= (q_max - q) * (1 + 1e-9) + 1e-15
            assert -lo * dt + lo * lo / (2 * amax) <= (q - q_min) * (1 + 1e-9) + 1e-15
    elif q > q_max:
        assert hi < 0.0  # driven back down
    else:
        assert lo > 0.0  # driven back up


def test_solver_box_matches_the_velocity_box(panda):
    """The Problem's box is the hand-built one: limits minus margins, velocity, braking."""
    lo_q, hi_q = panda.get_joint_limits()
    q = np.clip(PANDA_READY + np.array([2.8, 0, 0, 1.9, 0, 2.1, 0]), lo_q, hi_q)
    q[0] = hi_q[0] - 0.02  # close to a limit
    q[3] = hi_q[3] - 0.01  # inside the limit, but within the 0.05 margin band
    panda.update_kinematics(q)
    solver = KinematicsSolver(panda, dt=0.01)
    solver.set_limit_recovery_gain(1.0)  # the plain box (a solver starts with EmbodiK's
    solver.set_limit_recovery_hysteresis(0.0, 0.0)  # recovery gain 0.5, enter 1e-4)
    panda.set_acceleration_limits(np.full(7, 5.0))
    try:
        margin = 0.05
        solver.set_limit_margin(margin)
        box = solver.build_problem(q)
        vmax = panda.get_velocity_limits()
        bl, bu = velocity_box(
            q - (lo_q + margin), (hi_q - margin) - q, vmax, np.full(7, 5.0), solver.dt
        )
        np.testing.assert_allclose(box.box_lower, bl, atol=1e-15)
        np.testing.assert_allclose(box.box_upper, bu, atol=1e-15)
        assert box.box_upper[0] < vmax[0]  # the margin + braking term bind near the limit
        assert box.box_upper[3] < 0  # joint 4 is inside its limit but beyond the margin
        # Position limits off: the velocity limits only.
        solver.enable_position_limits(False)
        p = solver.build_problem(q)
        np.testing.assert_array_equal(p.box_lower, -vmax)
        np.testing.assert_array_equal(p.box_upper, vmax)
        # Velocity limits off too: unbounded.
        solver.enable_velocity_limits(False)
        p = solver.build_problem(q)
        assert np.all(np.isinf(p.box_lower)) and np.all(np.isinf(p.box_upper))
        # Velocity limits off, position limits on: the position terms with v_max = inf.
        solver.enable_position_limits(True)
        p = solver.build_problem(q)
        bl, bu = velocity_box(
            q - (lo_q + margin), (hi_q - margin) - q, np.full(7, np.inf), np.full(7, 5.0), 0.01
        )
        np.testing.assert_allclose(p.box_upper, bu, atol=1e-15)
        # apply_limits=False: unbounded whatever the settings.
        solver.enable_velocity_limits(True)
        p = solver.build_problem(q, apply_limits=False)
        assert np.all(p.box_lower == -np.inf) and np.all(p.box_upper == np.inf)
    finally:
        panda.set_acceleration_limits(np.full(7, 10.0))


def _limits_rollout(robot, solver, q, steps, seed, lo, hi, frame, reach):
    """Step toward random far targets (outside the workspace); return the worst excursion."""
    rng = np.random.default_rng(seed)
    ee = solver.add_frame_task("ee", frame)
    post = solver.add_posture_task("post")
    post.priority = 1
    worst = np.inf
    statuses = set()
    lim_lo, lim_hi = robot.get_joint_limits()
    for k in range(steps):
        if k % 250 == 0:
            d = rng.normal(size=3)
            ee.set_target_pose(
                pin.SE3(pin.exp3(rng.normal(size=3) * 2), reach * d / np.linalg.norm(d))
            )
            post.set_target_configuration(
                np.where(rng.random(robot.nq) < 0.5, lim_lo - 1, lim_hi + 1)
            )
        res = solver.solve_velocity(q)
        statuses.add(SolverStatus.SUCCESS if solved(res) else res.status)
        q = q + res.solution * solver.dt
        worst = min(worst, float(np.min(q - lo)), float(np.min(hi - q)))
    return worst, statuses


def test_stepping_never_leaves_position_limits_10000_steps(panda):
    """10 000 steps toward targets 2 m away (outside the reach): q stays inside its limits."""
    panda.update_kinematics(PANDA_READY)
    solver = KinematicsSolver(panda, dt=0.01)
    lo, hi = panda.get_joint_limits()
    worst, statuses = _limits_rollout(
        panda, solver, PANDA_READY.copy(), 10_000, 1, lo, hi, "panda_hand_tcp", 2.0
    )
    assert worst >= -1e-12, f"left the limits by {-worst}"
    assert worst < 1e-6  # the targets did push joints onto their limits
    assert statuses == {SolverStatus.SUCCESS}


def test_stepping_respects_limit_margins_and_acceleration_1000_steps(ur5):
    q0 = np.array([0.0, -1.2, 1.5, -1.6, -1.5, 0.0])
    ur5.update_kinematics(q0)
    solver = KinematicsSolver(ur5, dt=0.005)
    margin = 0.2
    solver.set_limit_margin(margin)
    ur5.set_acceleration_limits(np.full(6, 2.0))
    try:
        lo, hi = ur5.get_joint_limits()
        worst, statuses = _limits_rollout(
            ur5, solver, q0.copy(), 1_000, 2, lo + margin, hi - margin, "tool0", 3.0
        )
    finally:
        ur5.set_acceleration_limits(np.full(6, 10.0))
    assert worst >= -1e-12
    assert statuses == {SolverStatus.SUCCESS}


def test_joint_outside_its_limit_is_driven_back(panda):
    hi = panda.get_joint_limits()[1]
    q = PANDA_READY.copy()
    q[5] = hi[5] + 0.3  # 0.3 rad beyond the limit
    panda.update_kinematics(q)
    solver = KinematicsSolver(panda, dt=0.01)
    solver.set_limit_recovery_gain(1.0)  # full recovery (EmbodiK's default gain is 0.5)
    post = solver.add_posture_task("post")
    post.set_target_configuration(np.where(np.arange(7) == 5, hi + 1.0, PANDA_READY))
    excess = [q[5] - hi[5]]
    for _ in range(40):
        res = solver.solve_velocity(q)
        assert solved(res), res.status_message
        q = q + res.solution * solver.dt
        excess.append(q[5] - hi[5])
    excess = np.array(excess)
    inside = np.flatnonzero(excess <= 1e-12)
    assert inside.size, "never came back inside"
    first = inside[0]
    assert np.all(np.diff(excess[: first + 1]) < 0)  # monotone recovery
    assert first <= 20  # at v_max = 2.61 rad/s, 0.3 rad takes 12 steps
    assert np.all(excess[first:] <= 1e-12)  # and it stays inside (the target is outside)


def test_floating_base_bounds(humanoid):
    q = humanoid.neutral_configuration()
    humanoid.update_kinematics(q)
    solver = KinematicsSolver(humanoid, dt=0.01)
    lo, hi = np.array([-0.05, -0.05, -0.1]), np.array([0.05, 0.05, 0.1])
    solver.set_base_position_bounds(lo, hi)
    solver.set_base_orientation_bounds([-0.2] * 3, [0.2] * 3)
    pelvis = solver.add_frame_task("pelvis", "pelvis")
    pelvis.set_target_pose(pin.SE3(pin.exp3(np.array([0.3, 0.2, 1.0])), np.array([0.5, -0.3, 0.4])))
    pelvis.gain = 5.0
    p = solver.build_problem(q)
    np.testing.assert_array_equal(p.box_lower[3:6], -0.2)
    np.testing.assert_array_equal(p.box_upper[3:6], 0.2)
    assert np.all(p.box_upper[:3] == 1.0)  # the free-flyer's default velocity bound [m/s]
    rows = p.constraint_slices["base_bounds"]
    np.testing.assert_allclose(p.C[rows][:, :3], humanoid.data.oMi[1].rotation)
    np.testing.assert_allclose(p.lower[rows], (lo - q[:3]) / 0.01)
    worst = -np.inf
    for _ in range(300):
        res = solver.solve_velocity(q)
        assert solved(res), res.status_message
        assert np.all(np.abs(res.solution[3:6]) <= 0.2 + 1e-12)
        q = humanoid.integrate(q, res.solution * solver.dt)
        humanoid.update_kinematics(q)
        worst = max(worst, max_violation(q[:3], lo, hi))
    # First-order rows, SE(3) integration: only a second-order excursion (rotation x step).
    assert worst < 1e-5
    assert np.isclose(q[0], 0.05, atol=1e-4)  # pressed against the bound it was pushed to
    solver.clear_base_bounds()
    assert "base_position" not in solver.build_problem(q).constraint_slices


def test_base_bounds_need_a_floating_base(panda):
    solver = KinematicsSolver(panda)
    with pytest.raises(InvalidInput):
        solver.set_base_position_bounds(-np.ones(3), np.ones(3))
    with pytest.raises(InvalidInput):
        solver.set_base_orientation_bounds(-np.ones(3), np.ones(3))


def test_base_bounds_bad_input(humanoid):
    solver = KinematicsSolver(humanoid)
    with pytest.raises(InvalidBounds):
        solver.set_base_position_bounds(np.ones(3), -np.ones(3))
    with pytest.raises(ShapeError):
        solver.set_base_position_bounds(np.ones(2), np.ones(2))
    with pytest.raises(NonFiniteInput):
        solver.set_base_orientation_bounds([np.nan] * 3, np.ones(3))


# ============================================================================================
# Self-collision
# ============================================================================================
@pytest.mark.parametrize("which", ["panda", "dual_arm"])
def test_collision_distance_row_matches_finite_differences(which):
    robot = load_panda() if which == "panda" else load_dual_arm()
    solver = KinematicsSolver(robot, dt=0.01)
    solver.configure_collision_constraint(
        0.0, max_constraints=10_000, activation_margin=10.0, patch_tolerance=0.0
    )
    cc = solver.get_constraint("collision")
    gm = robot.collision_model
    ref = pin.GeometryData(gm)  # independent distance evaluation for the reference
    for req in ref.distanceRequests:
        req.enable_signed_distance = True
        req.gjk_tolerance = 1e-12
        req.gjk_max_iterations = 1000
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(2):
        q = robot.random_configuration(rng)
        solver.kinematics.update(q)
        C, lower, upper = cc.rows(0.01)
        assert np.all(upper == np.inf) and np.all(np.isfinite(lower))
        pair_ids = [int(cc.pair_indices[k]) for k in cc.last_pairs]
        d0 = cc.last_distances.copy()
        separated = d0 > 5e-3

        def dists(qq, pair_ids=pair_ids):
            data = robot.model.createData()
            pin.forwardKinematics(robot.model, data, qq)
            pin.updateGeometryPlacements(robot.model, data, gm, ref)
            return np.array([pin.computeDistance(gm, ref, k).min_distance for k in pair_ids])

        fd = np.array(
            [
                (dists(robot.integrate(q, 1e-5 * e)) - dists(robot.integrate(q, -1e-5 * e))) / 2e-5
                for e in np.eye(robot.nv)
            ]
        ).T
        np.testing.assert_allclose(C[separated], fd[separated], atol=2e-5)
        np.testing.assert_allclose(dists(q)[separated], d0[separated], atol=1e-9)
        checked += int(separated.sum())
    assert checked > 100


def test_collision_support_point_rows_match_finite_differences():
    """Each row (witness or support point) is the exact rate of its plane gap.

    For a row point ``s`` and normal ``n``: the gap ``n . (p - s)`` with ``s`` fixed to
    geometry 1 and the plane (through ``p = s``, normal ``n``) fixed to geometry 2, i.e.
    the two bodies' relative velocity at ``s`` along ``n``.
    """
    panda = load_panda()  # its own: tightening GJK must not leak into other tests
    solver = KinematicsSolver(panda, dt=0.01)
    solver.configure_collision_constraint(
        0.0, max_constraints=10_000, activation_margin=10.0, patch_tolerance=10.0
    )
    cc = solver.get_constraint("collision")
    gm = panda.collision_model
    rng = np.random.default_rng(11)
    checked = 0
    for _ in range(3):
        q = panda.random_configuration(rng)
        solver.kinematics.update(q)
        C, _, _ = cc.rows(0.01)
        rot, trans = cc.placements()  # where the step placed each geometry
        oMg0 = [pin.SE3(rot[i], trans[i]) for i in range(gm.ngeoms)]
        # Rebuild each row's gap from its point (fixed to geometry 1) and the plane
        # through it with the row's normal (fixed to geometry 2); witness rows included.
        for row, ((g_pt, g_plane), s, n) in enumerate(
            zip(cc.last_row_geometries, cc.last_row_points, cc.last_row_normals, strict=True)
        ):
            s_local = oMg0[g_pt].actInv(s)
            p_local = oMg0[g_plane].actInv(s)
            n_local = oMg0[g_plane].rotation.T @ n

            def gap(
                qq, s_local=s_local, p_local=p_local, n_local=n_local, g_pt=g_pt, g_plane=g_plane
            ):
                data = panda.model.createData()
                pin.forwardKinematics(panda.model, data, qq)
                ref = pin.GeometryData(gm)
                pin.updateGeometryPlacements(panda.model, data, gm, ref)
                sw = ref.oMg[int(g_pt)].act(s_local)
                pw = ref.oMg[int(g_plane)].act(p_local)
                return float((ref.oMg[int(g_plane)].rotation @ n_local) @ (pw - sw))

            fd = np.array(
                [
                    (gap(panda.integrate(q, 1e-6 * e)) - gap(panda.integrate(q, -1e-6 * e))) / 2e-6
                    for e in np.eye(panda.nv)
                ]
            )
            # The row is the rate of the gap: the bodies' relative velocity at the point.
            np.testing.assert_allclose(C[row], fd, atol=1e-7)
            checked += 1
    assert checked > 20


def test_collision_rows_learn_their_linearization_error(panda):
    """A pair found closer than its row promised gets that shortfall as extra room.

    The documented rule, replayed over steps that jump the arm into and out of near
    contact: promise = d - gain (d_eff - hold) after each step; at the next step
    learned = min(max(learned / 2, promise - d), MAX_LEARNED_ERROR) and
    hold = min_distance + recovery_deadband + learned.
    """
    gain, dt, dm = 0.3, 0.02, 0.01
    solver = KinematicsSolver(panda, dt=dt)
    solver.configure_collision_constraint(
        dm, max_constraints=100, activation_margin=0.1, patch_tolerance=0.0, gain=gain
    )
    cc = solver.get_constraint("collision")
    db = cc.recovery_deadband
    q_near = PANDA_READY + np.array([0.0, 0.0, 0.0, -0.6, 0.0, 2.0, 0.0])
    learned: dict[int, float] = {}
    promise: dict[int, float] = {}
    shortfalls = 0
    for q in (PANDA_READY, q_near, q_near, PANDA_READY, PANDA_READY):
        p = solver.build_problem(q)  # one row per pair (no patch rows)
        now = {}
        for row, (slot, d) in enumerate(zip(cc.last_pairs, cc.last_distances, strict=True)):
            had = slot in promise
            room = 0.5 * learned.get(slot, 0.0)
            if had:
                shortfalls += promise[slot] - d > room
                room = max(room, promise[slot] - d)
            room = min(room, MAX_LEARNED_ERROR)
            hold = dm + db + room
            d_eff = d if d >= hold else (hold if d >= hold - db / 2 else d + db / 2)
            assert p.lower[row] == pytest.approx(-gain * (d_eff - hold) / dt, abs=1e-9)
            learned[slot] = room
            now[slot] = d - gain * (d_eff - hold)
        promise = now
    assert shortfalls > 0  # (holds: the jumps broke some promises)
    assert any(0 < v < MAX_LEARNED_ERROR for v in learned.values())  # (holds: decay seen)


def test_collision_rows_structure(panda):
    panda.update_kinematics(PANDA_READY)
    solver = KinematicsSolver(panda, dt=0.02)
    solver.configure_collision_constraint(
        0.01, max_constraints=4, gain=0.3, activation_margin=0.1, patch_tolerance=0.0
    )
    p = solver.build_problem(PANDA_READY)
    cc = solver.get_constraint("collision")
    rows = p.constraint_slices["collision"]
    n = rows.stop - rows.start
    assert 1 <= n <= 4
    d = cc.last_distances
    # Most urgent first: time to violation = slack / predicted closing (none is urgent yet).
    np.testing.assert_allclose(cc.last_slack, d - 0.01)
    tau = cc.last_slack / cc.last_closing
    assert np.all(cc.last_slack > cc.last_closing) and np.all(np.diff(tau) >= 0)
    assert np.all(d < 0.01 + 0.1)
    # The damper aims at the hold distance min_distance + recovery_deadband.
    hold = 0.01 + cc.recovery_deadband
    np.testing.assert_allclose(p.lower[rows], -0.3 * (d - hold) / 0.02)
    assert np.all(p.upper[rows] == np.inf)
    # The robot's closest pair overall has a row.
    assert d.min() == pytest.approx(panda.compute_min_collision_distance(), abs=1e-6)
    assert solver.get_collision_min_distance() == 0.01
    solver.clear_collision_constraint()
    assert solver.get_collision_min_distance() == -1.0
    assert "collision" not in solver.build_problem(PANDA_READY).constraint_slices


def test_collision_broadphase_never_drops_a_close_pair(dual_arm):
    """Every pair closer than min_distance + margin (exact distance) gets a row."""
    solver = KinematicsSolver(dual_arm)
    solver.configure_collision_constraint(0.02, max_constraints=10_000, activation_margin=0.08)
    cc = solver.get_constraint("collision")
    rng = np.random.default_rng(4)
    names = dual_arm.get_collision_pair_names()
    total = 0
    for _ in range(5):
        q = dual_arm.random_configuration(rng)
        dual_arm.update_kinematics(q)
        exact = np.array(dual_arm.compute_collision_distances())
        close = {names[k] for k in np.flatnonzero(exact < 0.02 + 0.08 - 1e-6)}
        solver.build_problem(q)
        rowed = {cc.pair_names()[k] for k in cc.last_pairs}
        assert close <= rowed
        assert np.all(cc.last_distances < 0.1)
        total += len(close)
    assert total > 10


def test_collision_nearest_pair_only(panda):
    panda.update_kinematics(PANDA_READY)
    solver = KinematicsSolver(panda)
    solver.configure_collision_constraint(
        0.01, nearest_points_all_pairs=False, activation_margin=1.0, patch_tolerance=0.0
    )
    p = solver.build_problem(PANDA_READY)
    assert p.constraint_slices["collision"].stop - p.constraint_slices["collision"].start == 1


def test_collision_pair_selection_and_names(panda):
    solver = KinematicsSolver(panda)
    solver.configure_collision_constraint(0.01)
    pairs = solver.get_active_collision_pairs()  # regression: NumPy ints as indices raised
    assert pairs == panda.get_collision_pair_names()
    assert all(isinstance(a, str) and isinstance(b, str) for a, b in pairs)
    solver.configure_collision_constraint(0.01, exclude_pairs=[("panda_hand", "panda_link0")])
    excluded = set(pairs) - set(solver.get_active_collision_pairs())
    assert excluded and all(
        {a.rsplit("_", 1)[0], b.rsplit("_", 1)[0]} == {"panda_hand", "panda_link0"}
        for a, b in excluded
    )
    solver.add_collision_constraint([("panda_hand", "panda_link1")], min_distance=0.03)
    only = solver.get_active_collision_pairs()
    assert only and all(
        {a.rsplit("_", 1)[0], b.rsplit("_", 1)[0]} == {"panda_hand", "panda_link1"} for a, b in only
    )
    assert solver.get_collision_min_distance() == 0.03
    solver.clear_collision_constraint()
    assert solver.get_active_collision_pairs() == []


def test_collision_pair_min_distance_overrides():
    # Without the SRDF: it disables link3 / link5, which never get farther apart than
    # 2.8 cm (a pair a margin could trap), and this test needs that pair watched.
    panda = RobotModel(ROBOTS / "panda" / "panda.urdf")
    panda.update_kinematics(PANDA_READY)
    solver = KinematicsSolver(panda, dt=0.01)
    solver.configure_collision_constraint(
        0.01, max_constraints=100, activation_margin=0.2, patch_tolerance=0.0
    )
    assert solver.get_collision_pair_min_distance_overrides() == []
    # link3 / link5 are 0.0223 m apart at the ready pose.
    links, dists = panda.get_collision_pair_links(), panda.compute_collision_distances()
    pairs35 = zip(links, dists, strict=True)
    d35 = min(v for (a, b), v in pairs35 if {a, b} == {"panda_link3", "panda_link5"})
    assert d35 == pytest.approx(0.02234, abs=1e-4)
    # Immediate override (smaller than the current distance).
    solver.set_collision_pair_min_distance("panda_link3", "panda_link5", 0.02, False)
    over = dict(solver.get_collision_pair_min_distance_overrides())
    assert over and set(over.values()) == {0.02}
    assert all(k.startswith("panda_link3_") and "|panda_link5_" in k for k in over)
    p = solver.build_problem(PANDA_READY)
    cc = solver.get_constraint("collision")
    names = cc.pair_names()
    for row, slot in enumerate(cc.last_pairs):
        a, b = names[slot]
        hold = (0.02 if f"{a}|{b}" in over else 0.01) + cc.recovery_deadband
        assert p.lower[row] == pytest.approx(-0.5 * (cc.last_distances[row] - hold) / 0.01)
    # Deferred override: 0.03 is larger than the current 0.0223, so it waits until clear.
    solver.set_collision_pair_min_distance("panda_link3", "panda_link5", 0.03)
    assert set(dict(solver.get_collision_pair_min_distance_overrides()).values()) == {0.02}
    solver.set_collision_pair_min_distance("panda_link3", "panda_link5", 0.03, False)
    assert set(dict(solver.get_collision_pair_min_distance_overrides()).values()) == {0.03}
    solver.clear_collision_pair_min_distance("panda_link3", "panda_link5")
    assert solver.get_collision_pair_min_distance_overrides() == []
    with pytest.raises(CollisionGeometryNotFound):
        solver.set_collision_pair_min_distance("panda_link3", "nope", 0.02)
    with pytest.raises(InvalidInput):
        solver.set_collision_pair_min_distance("panda_link3", "panda_link5", -0.01)


def test_deferred_override_latches_once_the_pair_is_clear():
    panda = RobotModel(ROBOTS / "panda" / "panda.urdf")  # link3 / link5 watched (no SRDF)
    panda.update_kinematics(PANDA_READY)
    solver = KinematicsSolver(panda, dt=0.01)
    solver.configure_collision_constraint(0.01, activation_margin=0.2)
    solver.set_collision_pair_min_distance("panda_link3", "panda_link5", 0.04)
    assert solver.get_collision_pair_min_distance_overrides() == []
    q = PANDA_READY.copy()
    q[3] = -1.5  # opens the elbow: link3 / link5 move apart
    solver.build_problem(q)
    assert set(dict(solver.get_collision_pair_min_distance_overrides()).values()) == {0.04}


#: The collision settings of the reconfiguration tests, set through the solver.
_TUNING_SETTERS = (
    ("set_collision_constraint_activation_multiplier", 3.0),
    ("set_collision_max_separation_speed_nonpenetrating", 0.1),
    ("set_collision_recovery_scale", 0.5),
    ("set_collision_repulsion_deadband", 0.002),
    ("set_collision_tuning_mode", "speed"),
    ("set_collision_refinement_time_budget_us", 300),
    ("enable_sphere_broadphase", False),
)
_TUNING_GETTERS = {
    "get_collision_constraint_activation_multiplier": 3.0,
    "get_collision_max_separation_speed_nonpenetrating": 0.1,
    "get_collision_recovery_scale": 0.5,
    "get_collision_repulsion_deadband": 0.002,
    "get_collision_tuning_mode": CollisionTuningMode.SPEED,
    "get_collision_refinement_time_budget_us": 300,
    "sphere_broadphase_enabled": False,
    "get_proximity_gated_collision_activation_enabled": True,
}
_NOT_HAND = [("panda_link5_0", "panda_hand_0")]


def _tune(solver: KinematicsSolver) -> None:
    for name, value in _TUNING_SETTERS:
        getattr(solver, name)(value)


def _collision_rows(solver: KinematicsSolver) -> tuple[np.ndarray, ...]:
    p = solver.build_problem(PANDA_READY)
    rows = p.constraint_slices["collision"]
    return p.C[rows], p.lower[rows], p.upper[rows]


def test_configuring_the_collision_constraint_again_keeps_its_settings_and_overrides(panda):
    """configure_collision_constraint called again (here to exclude a pair) keeps every
    setting made on the constraint it replaces, and the per-pair minimums by name: its
    rows equal those of a solver configured with the new arguments and set up after."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = KinematicsSolver(panda, dt=0.01)
        again.configure_collision_constraint(0.05, gain=0.8, patch_tolerance=0.0)
        _tune(again)
        again.set_collision_pair_min_distance("panda_link5", "panda_hand", 0.03, False)
        overrides = again.get_collision_pair_min_distance_overrides()
        again.configure_collision_constraint(0.065, exclude_pairs=_NOT_HAND, max_constraints=20)
        after = KinematicsSolver(panda, dt=0.01)
        after.configure_collision_constraint(
            0.065, exclude_pairs=_NOT_HAND, max_constraints=20, gain=0.8, patch_tolerance=0.0
        )
        _tune(after)
        after.set_collision_pair_min_distance("panda_link5", "panda_hand", 0.03, False)
        plain = KinematicsSolver(panda, dt=0.01)
        plain.configure_collision_constraint(0.065, exclude_pairs=_NOT_HAND, max_constraints=20)
    for getter, value in _TUNING_GETTERS.items():
        assert getattr(again, getter)() == value, getter
    assert again.get_collision_constraint_activation_margin() == pytest.approx(3.0 * 0.065)
    cc = again.get_constraint("collision")
    assert (cc.gain, cc.patch_tolerance, cc.max_constraints, cc.min_distance) == (
        0.8, 0.0, 20, 0.065,
    )  # fmt: skip
    kept = again.get_collision_pair_min_distance_overrides()
    assert kept == after.get_collision_pair_min_distance_overrides()
    ours = {k for k, v in kept if v == 0.03}  # (the others: pairs lowered at 6.5 cm)
    assert ours == {k for k, v in overrides if v == 0.03} - {"panda_link5_0|panda_hand_0"}
    assert ours
    rows, expected, default = _collision_rows(again), _collision_rows(after), _collision_rows(plain)
    for got, want in zip(rows, expected, strict=True):
        np.testing.assert_array_equal(got, want)
    assert rows[0].shape != default[0].shape or not np.array_equal(rows[1], default[1])
    # the arguments given win; a per-pair minimum whose pairs are excluded is kept by name
    with pytest.warns(CollisionMarginWarning):  # (link2 / link4 lowered, as above)
        again.configure_collision_constraint(
            0.065, exclude_pairs=[("panda_link5", "panda_hand")], recovery_deadband=0.001
        )
    assert again.get_collision_repulsion_deadband() == 0.001
    assert again.get_constraint("collision").gain == 0.8
    assert not any("panda_hand" in k for k, _ in again.get_collision_pair_min_distance_overrides())
    with pytest.warns(CollisionMarginWarning):
        again.configure_collision_constraint(0.065)
    assert ours < {k for k, v in again.get_collision_pair_min_distance_overrides() if v == 0.03}


def test_collision_settings_made_without_a_constraint_apply_at_configuration(panda):
    """As in EmbodiK, the collision settings can be made before configuring (or after
    clearing) the constraint and apply to it; per-pair minimums need the constraint."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        before = KinematicsSolver(panda, dt=0.01)
        assert before.get_collision_tuning_mode() == CollisionTuningMode.PRECISE
        _tune(before)
        for getter, value in _TUNING_GETTERS.items():
            assert getattr(before, getter)() == value, getter
        with pytest.raises(InvalidInput, match="configure_collision_constraint"):
            before.set_collision_pair_min_distance("panda_link5", "panda_hand", 0.03)
        with pytest.raises(InvalidInput, match="configure_collision_constraint"):
            before.clear_collision_pair_min_distance("panda_link5", "panda_hand")
        before.configure_collision_constraint(
            0.065, exclude_pairs=_NOT_HAND, max_constraints=20, gain=0.8, patch_tolerance=0.0
        )
        before.set_collision_pair_min_distance("panda_link5", "panda_hand", 0.03, False)
        after = KinematicsSolver(panda, dt=0.01)
        after.configure_collision_constraint(
            0.065, exclude_pairs=_NOT_HAND, max_constraints=20, gain=0.8, patch_tolerance=0.0
        )
        _tune(after)
        after.set_collision_pair_min_distance("panda_link5", "panda_hand", 0.03, False)
        expected = _collision_rows(after)
        for got, want in zip(_collision_rows(before), expected, strict=True):
            np.testing.assert_array_equal(got, want)
        # cleared and configured again: the settings and the minimums by name come back
        before.clear_collision_constraint()
        assert before.get_collision_pair_min_distance_overrides() == []
        assert before.get_collision_repulsion_deadband() == 0.002
        before.configure_collision_constraint(0.065, exclude_pairs=_NOT_HAND, max_constraints=20)
    for getter, value in _TUNING_GETTERS.items():
        assert getattr(before, getter)() == value, getter
    assert before.get_collision_pair_min_distance_overrides() == (
        after.get_collision_pair_min_distance_overrides()
    )
    for got, want in zip(_collision_rows(before), expected, strict=True):
        np.testing.assert_array_equal(got, want)


def test_a_waiting_or_latched_override_stays_so_when_configured_again():
    panda = RobotModel(ROBOTS / "panda" / "panda.urdf")  # link3 / link5 watched (no SRDF)
    solver = KinematicsSolver(panda, dt=0.01)
    solver.configure_collision_constraint(0.01, activation_margin=0.2)
    solver.set_collision_pair_min_distance("panda_link3", "panda_link5", 0.04)
    solver.configure_collision_constraint(0.01)
    assert solver.get_collision_pair_min_distance_overrides() == []  # (still waiting)
    watch = solver.get_constraint("collision").watch()
    checked = dict(zip(watch.names, watch.geometry_thresholds.tolist(), strict=True))
    link35 = [
        v for (a, b), v in checked.items() if {a[:11], b[:11]} == {"panda_link3", "panda_link5"}
    ]
    assert link35 and set(link35) == {0.04}  # (configurations are checked against it)
    q = PANDA_READY.copy()
    q[3] = -1.5  # opens the elbow: link3 / link5 move apart, the override latches
    solver.build_problem(q)
    solver.configure_collision_constraint(0.01, activation_margin=0.2)
    solver.build_problem(PANDA_READY)  # (back where link3 / link5 are 2.2 cm apart)
    assert set(dict(solver.get_collision_pair_min_distance_overrides()).values()) == {0.04}


@pytest.mark.parametrize("how", ["configure", "set_collision_min_distance"])
def test_a_waiting_override_is_held_at_the_new_global_minimum_meanwhile(panda, how):
    """A larger minimum waiting for its pair to reach it (``activate_when_clear``) holds the
    pair at the global minimum meanwhile; the global minimum raised from 20 to 50 mm
    (a second configure, or ``set_collision_min_distance``) kept that pair at the old
    20 mm: coal measured it 20.05 mm apart while every other pair kept 50 mm. It is held
    at 50 mm, as without the override, and the override keeps waiting."""
    tool = (np.array([0.25, 0.0, 0.12]), np.diag([1.0, -1.0, -1.0]))
    solver = KinematicsSolver(panda, dt=0.01)
    solver.add_frame_task("ee", "panda_hand").set_target_pose(*tool)
    solver.add_posture_task("posture").priority = 1
    solver.configure_collision_constraint(0.02)
    solver.set_collision_pair_min_distance("panda_link2", "panda_link4", 0.2)  # (59 mm now)
    if how == "configure":
        solver.configure_collision_constraint(0.05)
    else:
        solver.set_collision_min_distance(0.05)
    pairs = [p for p in solver.get_active_collision_pairs() if p[0].startswith("panda_link2")]
    q, closest = PANDA_READY.copy(), np.inf
    for _ in range(200):
        q = q + solver.solve_velocity(q).solution * 0.01
        closest = min(closest, _coal_min(panda, pairs, q))
    assert 0.05 - 1e-4 <= closest < 0.0505
    assert solver.get_collision_pair_min_distance_overrides() == []  # (still waiting)


def _coal_min(robot: RobotModel, pairs: list[tuple[str, str]], q: np.ndarray) -> float:
    """Smallest distance of named geometry pairs, with Pinocchio and coal directly."""
    gm = pin.GeometryModel(robot.collision_model)
    gm.removeAllCollisionPairs()
    for a, b in pairs:
        gm.addCollisionPair(pin.CollisionPair(gm.getGeometryId(a), gm.getGeometryId(b)))
    gd = pin.GeometryData(gm)
    pin.computeDistances(robot.model, robot.model.createData(), gm, gd, q)
    return min(r.min_distance for r in gd.distanceResults)


def test_an_assigned_tuning_mode_is_checked(panda):
    """``tuning_mode`` was the one setting taken unchecked (``col.tuning_mode = 42`` read
    back 42, and a reconfigure carried it over): a typed error, the old value kept."""
    solver = KinematicsSolver(panda, dt=0.01)
    solver.configure_collision_constraint(0.01)
    col = solver.get_constraint("collision")
    for bad in ("bogus", 42, None):
        with pytest.raises(InvalidInput, match="tuning_mode"):
            col.tuning_mode = bad
        with pytest.raises(InvalidInput, match="tuning_mode"):
            col.settings.tuning_mode = bad
    assert col.tuning_mode == CollisionTuningMode.PRECISE
    solver.set_collision_tuning_mode("SPEED")  # (as the docs write it)
    assert col.tuning_mode == CollisionTuningMode.SPEED
    col.tuning_mode = "balanced"  # (a name only: set_tuning_mode applies a preset)
    solver.configure_collision_constraint(0.01)
    assert solver.get_collision_tuning_mode() == CollisionTuningMode.BALANCED


def test_pair_minimums_refuse_names_without_a_watched_pair(panda):
    """Names that exist but share no watched pair: InvalidInput with both names and why."""
    solver = KinematicsSolver(panda, dt=0.01)
    solver.configure_collision_constraint(0.01)
    cases = [
        ("panda_link1", "panda_link2", "not an active pair of the robot"),  # adjacent
        ("panda_hand_0", "panda_hand_0", "the same geometry"),
    ]
    for a, b, why in cases:
        with pytest.raises(InvalidInput) as err:
            solver.set_collision_pair_min_distance(a, b, 0.02, False)
        assert f"{a!r}" in str(err.value) and f"{b!r}" in str(err.value) and why in str(err.value)
    only = KinematicsSolver(panda, dt=0.01)
    only.configure_collision_constraint(0.01, include_pairs=[("panda_hand", "panda_link1")])
    with pytest.raises(InvalidInput, match="include_pairs"):
        only.set_collision_pair_min_distance("panda_hand", "panda_link0", 0.02)
    excluded = KinematicsSolver(panda, dt=0.01)
    excluded.configure_collision_constraint(0.01, exclude_pairs=[("panda_hand", "panda_link0")])
    with pytest.raises(InvalidInput, match="exclude_pairs"):
        excluded.set_collision_pair_min_distance("panda_hand", "panda_link0", 0.02)
    for s in (solver, only, excluded):
        assert s.get_collision_pair_min_distance_overrides() == []
    with pytest.raises(CollisionGeometryNotFound):  # (an unknown name, as before)
        solver.set_collision_pair_min_distance("panda_hand", "nope", 0.02)


def _listed_overrides(solver: object) -> dict[frozenset[str], float]:
    """A solver's ``get_collision_pair_min_distance_overrides()`` by unordered name pair."""
    listed = solver.get_collision_pair_min_distance_overrides()  # type: ignore[attr-defined]
    return {frozenset(k.split("|")): v for k, v in listed}


def test_pair_minimums_match_link_names_containing_a_name_as_embodik_does():
    """The reference: an override covers the pairs whose parent frame names contain the
    two names. EmbodiK 0.23.2, on the same pairs, lists the same overrides."""
    embodik = pytest.importorskip("embodik")
    urdf, srdf = ROBOTS / "panda" / "panda.urdf", ROBOTS / "panda" / "panda.srdf"
    ours = RobotModel(urdf, srdf_path=srdf)
    theirs = embodik.RobotModel(str(urdf), False)
    keep = {frozenset(p) for p in ours.get_collision_pair_names()}
    theirs.apply_collision_exclusions(
        [p for p in theirs.get_collision_pair_names() if frozenset(p) not in keep]
    )
    assert {frozenset(p) for p in theirs.get_collision_pair_names()} == keep
    solvers = (KinematicsSolver(ours), embodik.KinematicsSolver(theirs))
    calls = [
        ("set", "link", "hand", 0.03),  # every panda_link* against panda_hand
        ("set", "link2", "link4", 0.02),
        ("set", "link2", "panda_hand", 0.025),  # (exact and contained names mixed)
        ("clear", "link5", "hand"),
    ]
    for s in solvers:
        s.configure_collision_constraint(0.05)
        for call, a, b, *d in calls:
            if call == "set":
                s.set_collision_pair_min_distance(a, b, *d, False)
            else:
                s.clear_collision_pair_min_distance(a, b)
    listed = _listed_overrides(solvers[0])
    assert listed == _listed_overrides(solvers[1]) and len(listed) > 10
    assert {v for k, v in listed.items() if any("link2" in n for n in k)} == {0.02, 0.025}
    minimums = {
        frozenset((i.geometry_a, i.geometry_b)): i.min_distance
        for i in solvers[0].evaluate_collision_debug_list(PANDA_READY)
    }
    assert all(minimums[pair] == value for pair, value in listed.items())
    for s in solvers:
        s.clear_collision_pair_min_distance("link", "hand")
    assert _listed_overrides(solvers[0]) == _listed_overrides(solvers[1])
    assert set(_listed_overrides(solvers[0]).values()) == {0.02}


def test_collision_constraint_follows_robot_pair_changes():
    """Regression: excluding pairs on the robot after configuring made rows() raise."""
    robot = load_panda()
    robot.update_kinematics(PANDA_READY)
    solver = KinematicsSolver(robot)
    solver.configure_collision_constraint(
        0.01, max_constraints=1000, activation_margin=1.0, patch_tolerance=0.0
    )
    solver.add_frame_task("ee", "panda_hand_tcp")
    before = solver.get_active_collision_pairs()
    robot.apply_collision_exclusions(
        [("panda_link3", "panda_link5"), ("panda_hand", "panda_link0")]
    )
    after = solver.get_active_collision_pairs()
    assert set(after) == set(robot.get_collision_pair_names()) and len(after) < len(before)
    p = solver.build_problem(PANDA_READY)
    assert p.constraint_slices["collision"].stop == len(after)
    res = solver.solve_velocity(PANDA_READY)
    assert res.status == SolverStatus.SUCCESS, res.status_message
    robot.reset_collision_pairs()
    robot.load_srdf(ROBOTS / "panda" / "panda.srdf")
    assert solver.get_active_collision_pairs() == before


def test_collision_constraint_bad_input(panda):
    solver = KinematicsSolver(panda)
    with pytest.raises(InvalidInput):
        solver.configure_collision_constraint(-0.01)
    with pytest.raises(InvalidInput):
        solver.configure_collision_constraint(math.nan)
    with pytest.raises(InvalidInput):
        solver.configure_collision_constraint(0.01, max_constraints=0)
    with pytest.raises(InvalidInput):
        solver.configure_collision_constraint(0.01, gain=0.0)
    with pytest.raises(InvalidInput):
        solver.configure_collision_constraint(0.01, activation_margin=-1.0)
    with pytest.raises(CollisionGeometryNotFound):
        solver.configure_collision_constraint(0.01, include_pairs=[("panda_hand", "nope")])
    with pytest.raises(InvalidInput):
        solver.configure_collision_constraint(0.01, exclude_pairs=[("panda_hand",)])
    # not a list of pairs (a number or None was a bare TypeError, a string was read
    # letter by letter); None is no pairs
    for bad in (5, "panda_hand", {"panda_hand": "panda_link0"}, [5], [b"ab"], ["ab"]):
        for key in ("include_pairs", "exclude_pairs"):
            with pytest.raises(InvalidInput):
                solver.configure_collision_constraint(0.01, **{key: bad})
        with pytest.raises(InvalidInput):
            solver.robot.apply_collision_exclusions(bad)
    with pytest.raises(InvalidInput):  # overrides need a constraint
        solver.set_collision_pair_min_distance("panda_hand", "panda_link0", 0.1)
    fresh = KinematicsSolver(panda)
    fresh.configure_collision_constraint(0.01, include_pairs=None, exclude_pairs=None)
    assert fresh.get_active_collision_pairs() == solver.robot.get_collision_pair_names()
    bare = RobotModel(ROBOTS / "panda" / "panda.urdf", load_collisions=False)
    with pytest.raises(InvalidInput):
        KinematicsSolver(bare).configure_collision_constraint(0.01)


def _collision_rollout(robot, q, targets, steps, min_distance, on=True, gain=1.0):
    """Drive frames (position tasks) toward targets; record every pair's distance per step."""
    robot.update_kinematics(q)
    solver = KinematicsSolver(robot, dt=0.01)
    if on:
        solver.configure_collision_constraint(min_distance)
    tasks = []
    for frame, target in targets.items():
        t = solver.add_frame_task(frame, frame, TaskType.FRAME_POSITION)
        t.set_target_position(target)
        t.gain = gain
        tasks.append(t)
    dmin, errors, tool = [], [], []
    for _ in range(steps):
        res = solver.solve_velocity(q)
        assert solved(res), res.status_message
        q = q + res.solution * solver.dt
        robot.update_kinematics(q)
        dmin.append(robot.compute_min_collision_distance())
        for t in tasks:
            t.update()
        errors.append(sum(np.linalg.norm(t.get_error()) for t in tasks))
        tool.append(robot.get_frame_pose(next(iter(targets))).translation)
    return np.array(dmin), np.array(errors), np.array(tool)


def test_collision_stops_arm_driven_into_its_base(panda):
    """A target inside the robot: the tool stops short, no pair ever closer than 1 cm."""
    q0 = PANDA_READY.copy()
    panda.update_kinematics(q0)
    assert panda.compute_min_collision_distance() > 0.02  # clear start
    target = {"panda_hand_tcp": np.array([-0.05, 0.0, 0.3])}
    dmin_off, _, _ = _collision_rollout(panda, q0, target, 250, 0.01, on=False)
    assert dmin_off.min() < 0.0  # without the constraint the hand goes through the body
    dmin, errors, tool = _collision_rollout(panda, q0, target, 250, 0.01)
    assert dmin.min() >= 0.01 - 1e-4
    assert dmin.min() < 0.0105  # the constraint was active
    assert errors[-1] > 0.1  # the target is not reached ...
    assert np.linalg.norm(tool[-1] - tool[-50]) < 1e-3  # ... the tool has stopped


def test_collision_slides_along_the_obstacle(panda):
    """Blocked on the straight way, the tool keeps going along the obstacle to the target."""
    q0 = PANDA_READY.copy()
    target = {"panda_hand_tcp": np.array([-0.2, -0.2, 0.1])}
    dmin_off, _, _ = _collision_rollout(panda, q0, target, 250, 0.01, on=False)
    assert dmin_off.min() < 0.0  # the unconstrained motion collides (link2 / link4)
    dmin, errors, _ = _collision_rollout(panda, q0, target, 400, 0.01)
    assert dmin.min() >= 0.01 - 1e-4
    contact = np.flatnonzero(dmin < 0.0101)
    assert contact.size > 50  # long in contact ...
    first = contact[0]
    assert errors[first] > 0.3  # ... from far away ...
    assert errors[-1] < 0.05  # ... and still it got to the target: it slid
    # It slides 19 cm toward the target while in contact, then leaves the obstacle (the
    # support rows measure exact distances to the curved link, so nothing holds it back).
    in_contact_progress = errors[contact[0]] - errors[contact[-1]]
    assert in_contact_progress > 0.15


def _face_on_scenario(name: str):
    """Targets that press a hand box face-on against another body (a contact patch)."""
    if name.startswith("panda"):
        robot = load_panda()
        target = {"base": [0.0, 0.0, 0.25], "column": [-0.3, 0.0, 0.3]}[name.split("-")[1]]
        return robot, PANDA_READY.copy(), {"panda_hand_tcp": np.array(target)}, 1.0
    robot = load_dual_arm()
    q0 = dual_ready(robot)
    robot.update_kinematics(q0)
    mid = sum(robot.get_frame_pose(f).translation for f in ("left_tcp", "right_tcp")) / 2
    return robot, q0, {"left_tcp": mid, "right_tcp": mid}, 5.0


@pytest.mark.parametrize("scenario", ["panda-base", "panda-column", "dual_arm-hands"])
def test_collision_face_on_contact_keeps_min_distance(scenario):
    """A hand box pressed face-on against another body (a contact patch) stays clear."""
    robot, q0, targets, gain = _face_on_scenario(scenario)
    dmin_off, _, _ = _collision_rollout(robot, q0, targets, 200, 0.01, on=False, gain=gain)
    assert dmin_off.min() < 0.0  # (holds: without the constraint these runs collide)
    dmin, _, _ = _collision_rollout(robot, q0, targets, 250, 0.01, gain=gain)
    assert dmin.min() < 0.0105  # (holds: the constraint becomes active)
    # Face-on contact patches: the support-point rows keep every patch point clear too,
    # and what the rows learn of their linearization error keeps sliding contacts clear.
    assert dmin.min() >= 0.01


# ============================================================================================
# CoM support polygon
# ============================================================================================
def convex_hull(points: np.ndarray) -> np.ndarray:
    """Counter-clockwise hull of 2-D points (Andrew's monotone chain)."""
    pts = sorted(map(tuple, np.round(points, 12)))

    def half(seq):
        out: list[tuple[float, float]] = []
        for p in seq:
            while (
                len(out) >= 2
                and (
                    (out[-1][0] - out[-2][0]) * (p[1] - out[-2][1])
                    - (out[-1][1] - out[-2][1]) * (p[0] - out[-2][0])
                )
                <= 0
            ):
                out.pop()
            out.append(p)
        return out[:-1]

    return np.array(half(pts) + half(pts[::-1]))


def feet_polygon(robot: RobotModel) -> np.ndarray:
    corners = []
    for sole in ("left_sole", "right_sole"):
        T = robot.get_frame_pose(sole)
        for sx in (-1, 1):
            for sy in (-1, 1):
                corners.append(T.act(np.array([sx * FOOT_HALF[0], sy * FOOT_HALF[1], 0.0]))[:2])
    return convex_hull(np.array(corners))


def crouched(robot: RobotModel) -> np.ndarray:
    q = robot.neutral_configuration()
    for side in ("left", "right"):
        for joint, v in (("hip_pitch", -0.3), ("knee", 0.6), ("ankle_pitch", -0.3)):
            q[robot.get_joint_config_index(f"{side}_{joint}_joint")] = v
    return q


@pytest.mark.parametrize("frame", ["world", "left_sole"])
def test_com_polygon_row_matches_finite_differences(humanoid, frame):
    poly = np.array([[0.1, 0.1], [-0.1, 0.1], [-0.1, -0.1], [0.1, -0.1]])
    rng = np.random.default_rng(5)
    for _ in range(3):
        q = humanoid.random_configuration(rng)
        humanoid.update_kinematics(q)
        con = ComPolygonConstraint("c", humanoid, poly, margin=0.1, frame_name=frame)
        C, lower, upper = con.rows(0.01)
        assert C.shape == (4, humanoid.nv) and np.all(upper == np.inf)
        assert np.all(np.isfinite(lower))
        # The row is the slack's rate with the polygon held where it is this step.
        frozen = ComPolygonConstraint("f", humanoid, con.world_vertices(), margin=0.0)
        shrink = con.shrink

        def slack(frozen=frozen, shrink=shrink):
            return frozen.slacks() - shrink

        np.testing.assert_allclose(con.slacks(), slack(), atol=1e-12)
        np.testing.assert_allclose(C, fd_vector(humanoid, q, slack), atol=1e-6)


def test_com_polygon_in_a_z_down_frame_keeps_inward_normals():
    """Regression: a frame with z down mirrors the projected outline (clockwise), which
    flipped every edge normal outward: the CoM at the centre was reported outside."""
    robot = RobotModel(ROBOTS / "panda" / "panda.urdf", load_collisions=False)
    robot.add_frame("z_down", "universe", pin.SE3(pin.exp3(np.array([np.pi, 0, 0])), np.zeros(3)))
    robot.update_kinematics(PANDA_READY)
    square = [[-1, -1], [1, -1], [1, 1], [-1, 1]]
    world = ComPolygonConstraint("w", robot, square)
    mirrored = ComPolygonConstraint("m", robot, square, frame_name="z_down")
    assert np.all(world.slacks() > 0.9)
    np.testing.assert_allclose(np.sort(mirrored.slacks()), np.sort(world.slacks()), atol=1e-12)
    np.testing.assert_allclose(
        np.sort(mirrored.rows(0.01)[1]), np.sort(world.rows(0.01)[1]), atol=1e-12
    )


def test_com_polygon_bounds_hand_computed(panda):
    panda.update_kinematics(PANDA_READY)
    c = panda.get_com_position()[:2]
    # Axis-aligned square around the CoM, offset so the four slacks differ.
    x0, x1, y0, y1 = c[0] - 0.05, c[0] + 0.3, c[1] - 0.2, c[1] + 0.001
    poly = [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]
    dt, vmax, amax = 0.01, 0.4, 0.1
    con = ComPolygonConstraint("c", panda, poly, com_vel_max=vmax, com_acc_max=amax)
    s = np.array([c[1] - y0, x1 - c[0], y1 - c[1], c[0] - x0])  # edges CCW from the bottom
    np.testing.assert_allclose(con.slacks(), s, atol=1e-12)
    C, lower, _ = con.rows(dt)
    expected = -np.minimum(np.minimum(vmax, s / dt), np.sqrt(2 * amax * s))
    np.testing.assert_allclose(lower, expected, atol=1e-12)
    normals = np.array([[0, 1], [-1, 0], [0, -1], [1, 0]], dtype=float)
    np.testing.assert_allclose(C, normals @ panda.get_com_jacobian()[:2], atol=1e-12)
    # Without the braking term: min(v_max, s / dt).
    con = ComPolygonConstraint("c", panda, poly, use_acceleration_limits=False)
    np.testing.assert_allclose(con.rows(dt)[1], -np.minimum(vmax, s / dt), atol=1e-12)
    # CoM outside an edge: the row drives it back at min(-s / dt, v_max).
    outside = [[x0, y0], [x1, y0], [x1, c[1] - 0.002], [x0, c[1] - 0.002]]
    con = ComPolygonConstraint("c", panda, outside)
    s_out = con.slacks()
    assert s_out[2] == pytest.approx(-0.002)
    assert con.rows(dt)[1][2] == pytest.approx(min(0.002 / dt, 0.4))
    # Proximity filter: only edges nearer than the threshold give rows.
    con = ComPolygonConstraint("c", panda, poly, proximity_fraction=0.5)
    assert con.proximity_threshold == pytest.approx(0.5 * con.inradius)
    keep = s < con.proximity_threshold
    assert 0 < keep.sum() < 4
    np.testing.assert_allclose(con.rows(dt)[1], expected[keep], atol=1e-12)
    solver = KinematicsSolver(panda)
    assert solver.get_com_proximity_threshold() == 0.0
    solver.configure_com_constraint(poly, proximity_fraction=0.5)
    assert solver.get_com_proximity_threshold() == pytest.approx(con.proximity_threshold)
    solver.clear_com_constraint()
    assert solver.get_com_proximity_threshold() == 0.0
    assert "com_polygon" not in solver.build_problem().constraint_slices


@pytest.mark.parametrize(
    ("polygon", "error"),
    [
        ([], ShapeError),
        (np.zeros((0, 2)), InvalidInput),
        ([[0, 0], [1, 0]], InvalidInput),
        ([[0, 0], [1, 0], [2, 0]], InvalidInput),  # zero area
        ([[0, 0], [1, 0], [0.2, 0.2], [0, 1]], InvalidInput),  # reflex vertex
        ([[0, 0], [1, 0], [1, 0], [0, 1]], InvalidInput),  # repeated vertex
        ([[0, 0], [1, 0], [np.nan, 1]], InvalidInput),
        (np.zeros((3, 4)), ShapeError),
        # A pentagram turns left at every vertex but winds twice (regression: accepted).
        (
            [[1, 0], [-0.809, 0.588], [0.309, -0.951], [0.309, 0.951], [-0.809, -0.588]],
            InvalidInput,
        ),
    ],
)
def test_com_polygon_bad_polygons(panda, polygon, error):
    with pytest.raises(error):
        KinematicsSolver(panda).configure_com_constraint(polygon)


def test_com_polygon_other_bad_input(panda):
    tri = [[0, 0], [1, 0], [0, 1]]
    solver = KinematicsSolver(panda)
    with pytest.raises(InvalidInput):
        solver.configure_com_constraint(tri, margin=0.9)  # shrinks to nothing
    with pytest.raises(InvalidInput):
        solver.configure_com_constraint(tri, margin=-0.1)
    with pytest.raises(FrameNotFound):
        solver.configure_com_constraint(tri, frame_name="nope")
    with pytest.raises(InvalidInput):
        solver.configure_com_constraint(tri, com_vel_max=0.0)
    with pytest.raises(InvalidInput):
        solver.configure_com_constraint(tri, proximity_fraction=-1.0)
    # Clockwise and 3-D vertices are accepted (reordered, z dropped).
    solver.configure_com_constraint([[0, 0, 5], [0, 1, 5], [1, 0, 5]])
    np.testing.assert_array_equal(
        solver.get_constraint("com_polygon").vertices, [[1, 0], [0, 1], [0, 0]]
    )


@pytest.mark.parametrize("target_xy", [(0.6, 0.3), (-0.4, 0.0), (0.0, -0.5)])
def test_com_stays_in_support_polygon_when_pushed_out(humanoid, target_xy):
    q = crouched(humanoid)
    humanoid.update_kinematics(q)
    poly = feet_polygon(humanoid)
    solver = KinematicsSolver(humanoid, dt=0.01)
    solver.configure_com_constraint(poly, margin=0.1)
    feet = [solver.add_frame_task(f, f) for f in ("left_sole", "right_sole")]  # priority 0
    com = solver.add_com_task("com")
    com.priority = 1
    com.set_position_mask([1, 1, 0])
    com.set_target_position([*target_xy, 0.0])
    post = solver.add_posture_task("post")
    post.priority = 2
    post.weight = 0.01
    con = solver.get_constraint("com_polygon")
    assert con.slacks().min() > 0.05  # starts well inside
    assert np.any(con._half_planes(poly)[0] @ np.array(target_xy) - con._half_planes(poly)[1] < 0)
    feet0 = [humanoid.get_frame_pose(f.frame_name) for f in feet]
    slack = []
    for _ in range(300):
        res = solver.solve_velocity(q)
        assert res.status == SolverStatus.SUCCESS, res.status_message
        q = humanoid.integrate(q, res.solution * solver.dt)
        humanoid.update_kinematics(q)
        slack.append(con.slacks().min())
    slack = np.array(slack)
    assert slack.min() >= -1e-9  # inside the shrunk polygon at every step
    assert slack[-1] < 1e-3  # pressed against its boundary
    for f, T0 in zip(feet, feet0, strict=True):
        drift = pin.log6(T0.actInv(humanoid.get_frame_pose(f.frame_name))).vector
        assert np.linalg.norm(drift) < 1e-4  # the feet held


# ============================================================================================
# Relative pose
# ============================================================================================
def test_relative_pose_rows_match_finite_differences(dual_arm):
    rng = np.random.default_rng(6)
    checked = 0
    while checked < 3:
        q = dual_arm.random_configuration(rng)
        dual_arm.update_kinematics(q)
        con = RelativePoseConstraint(
            "r", dual_arm, "left_tcp", "right_tcp", -np.ones(6), np.ones(6)
        )
        x = con.coordinates()
        if np.linalg.norm(x[3:]) > 2.8:  # log3 coordinates are singular at pi
            continue
        C, lower, upper = con.rows(0.01)
        np.testing.assert_allclose(C, fd_vector(dual_arm, q, con.coordinates), atol=1e-6)
        np.testing.assert_allclose(lower, 0.5 * (-1 - x) / 0.01, atol=1e-12)
        np.testing.assert_allclose(upper, 0.5 * (1 - x) / 0.01, atol=1e-12)
        Tab = dual_arm.get_frame_pose("left_tcp").actInv(dual_arm.get_frame_pose("right_tcp"))
        np.testing.assert_allclose(x, np.r_[Tab.translation, pin.log3(Tab.rotation)], atol=1e-12)
        masked = RelativePoseConstraint(
            "m", dual_arm, "left_tcp", "right_tcp", -np.ones(6), np.ones(6), [1, 0, 1, 0, 0, 1]
        )
        np.testing.assert_allclose(masked.rows(0.01)[0], C[[0, 2, 5]], atol=1e-15)
        checked += 1


def _pull_apart_rollout(robot, q, reference_rotation=None):
    """Tasks pull the TCPs apart (and twist one) against relative-pose bounds of
    +-5 cm / +-0.1 rad around the start; returns the solver, bounds and worst violation."""
    robot.update_kinematics(q)
    solver = KinematicsSolver(robot, dt=0.01)
    Ta, Tb = robot.get_frame_pose("left_tcp"), robot.get_frame_pose("right_tcp")
    Rref = np.eye(3) if reference_rotation is None else reference_rotation
    x0 = np.r_[Ta.actInv(Tb).translation, pin.log3(Rref.T @ Ta.actInv(Tb).rotation)]
    half = np.array([0.05, 0.05, 0.05, 0.1, 0.1, 0.1])
    lo, hi = x0 - half, x0 + half
    solver.configure_relative_pose_constraint(
        "left_tcp", "right_tcp", lo, hi, reference_rotation=reference_rotation
    )
    left = solver.add_frame_task("l", "left_tcp")
    right = solver.add_frame_task("r", "right_tcp")
    twist = pin.exp3(np.array([0.5, 0, 0]))
    left.set_target_pose(pin.SE3(twist @ Ta.rotation, Ta.translation + np.array([0, 0.3, 0.1])))
    right.set_target_pose(pin.SE3(Tb.rotation, Tb.translation + np.array([0.0, -0.3, -0.1])))
    con = solver.get_constraint("relative_pose")
    worst = -np.inf
    for _ in range(300):
        res = solver.solve_velocity(q)
        assert solved(res), res.status_message
        q = q + res.solution * solver.dt
        robot.update_kinematics(q)
        worst = max(worst, max_violation(con.coordinates(), lo, hi))
    x = con.coordinates()
    at_bound = np.min(np.minimum(x - lo, hi - x))
    return solver, worst, at_bound


def test_relative_pose_holds_while_tasks_pull_apart(dual_arm):
    q = dual_ready(dual_arm, right_joint5=1.5)  # relative rotation 1.65 rad, far from pi
    solver, worst, at_bound = _pull_apart_rollout(dual_arm, q)
    assert worst <= 1e-9
    assert at_bound < 1e-3  # the tasks pushed it to a bound
    solver.clear_relative_pose_constraint()
    assert "relative_pose" not in solver.build_problem().constraint_slices


def test_relative_pose_with_reference_rotation_near_pi(dual_arm):
    """Mirrored TCPs (relative rotation ~pi): bounds about a reference rotation hold."""
    q = dual_ready(dual_arm)
    dual_arm.update_kinematics(q)
    Ta, Tb = dual_arm.get_frame_pose("left_tcp"), dual_arm.get_frame_pose("right_tcp")
    R0 = Ta.actInv(Tb).rotation
    assert np.linalg.norm(pin.log3(R0)) > 2.8  # the plain rotation vector is near its wrap
    # Rows against finite differences of the reference-relative coordinates.
    con = RelativePoseConstraint(
        "r", dual_arm, "left_tcp", "right_tcp", -np.ones(6), np.ones(6), reference_rotation=R0
    )
    rng = np.random.default_rng(8)
    for _ in range(2):
        qq = q + 0.05 * rng.standard_normal(dual_arm.nq)
        dual_arm.update_kinematics(qq)
        C, _, _ = con.rows(0.01)
        np.testing.assert_allclose(C, fd_vector(dual_arm, qq, con.coordinates), atol=1e-6)
        Tab = dual_arm.get_frame_pose("left_tcp").actInv(dual_arm.get_frame_pose("right_tcp"))
        np.testing.assert_allclose(con.coordinates()[3:], pin.log3(R0.T @ Tab.rotation), atol=1e-12)
    _, worst, at_bound = _pull_apart_rollout(dual_arm, q, reference_rotation=R0)
    assert worst <= 1e-9
    assert at_bound < 1e-3


def test_relative_pose_bad_input(dual_arm):
    solver = KinematicsSolver(dual_arm)
    with pytest.raises(InvalidBounds):
        solver.configure_relative_pose_constraint("left_tcp", "right_tcp", np.ones(6), -np.ones(6))
    with pytest.raises(NonFiniteInput):
        solver.configure_relative_pose_constraint("left_tcp", "right_tcp", [np.nan] * 6, np.ones(6))
    with pytest.raises(ShapeError):
        solver.configure_relative_pose_constraint("left_tcp", "right_tcp", -np.ones(5), np.ones(5))
    with pytest.raises(FrameNotFound):
        solver.configure_relative_pose_constraint("left_tcp", "nope", -np.ones(6), np.ones(6))
    with pytest.raises(ShapeError):
        solver.configure_relative_pose_constraint(
            "left_tcp", "right_tcp", -np.ones(6), np.ones(6), axis_mask=[1, 1]
        )
    with pytest.raises(InvalidInput):
        RelativePoseConstraint(
            "r", dual_arm, "left_tcp", "right_tcp", -np.ones(6), np.ones(6), gain=2
        )


# ============================================================================================
# User rows, tight point / frame-pose constraints
# ============================================================================================
def test_linear_velocity_constraints(panda):
    panda.update_kinematics(PANDA_READY)
    solver = KinematicsSolver(panda)
    ee = solver.add_frame_task("ee", "panda_hand_tcp")
    ee.set_target_pose(pin.SE3(pin.exp3(np.array([0.3, 0.2, 0.1])), np.array([0.3, 0.3, 0.3])))
    C = np.zeros((2, 7))
    C[0, 0] = C[0, 1] = 1.0  # joint1 + joint2
    C[1, 3] = 1.0  # joint4
    solver.set_linear_velocity_constraints(C, [-0.05, -np.inf], [0.05, 0.02])
    assert solver.get_linear_velocity_constraint_rows() == 2
    solver.append_linear_velocity_constraints(np.eye(7)[[6]], [-0.01], [0.01])
    assert solver.get_linear_velocity_constraint_rows() == 3
    p = solver.build_problem(PANDA_READY)
    rows = p.constraint_slices["linear"]
    np.testing.assert_array_equal(p.C[rows], np.vstack([C, np.eye(7)[[6]]]))
    np.testing.assert_array_equal(p.lower[rows], [-0.05, -np.inf, -0.01])
    res = solver.solve_velocity(PANDA_READY)
    assert res.status == SolverStatus.SUCCESS
    v = p.C[rows] @ res.solution
    assert max_violation(v, p.lower[rows], p.upper[rows]) <= 1e-9
    assert np.isclose(abs(v[0]), 0.05) or np.isclose(v[1], 0.02)  # a row binds
    solver.clear_linear_velocity_constraints()
    assert solver.get_linear_velocity_constraint_rows() == 0
    with pytest.raises(ShapeError):
        solver.set_linear_velocity_constraints(np.eye(6), np.zeros(6), np.ones(6))
    with pytest.raises(InvalidBounds):
        solver.set_linear_velocity_constraints(np.eye(7), np.ones(7), -np.ones(7))
    with pytest.raises(NonFiniteInput):
        solver.set_linear_velocity_constraints(np.full((1, 7), np.nan), [0.0], [1.0])
    with pytest.raises(ShapeError):
        solver.set_linear_velocity_constraints(np.eye(7), np.zeros(6), np.ones(6))
    solver.set_linear_velocity_constraints(C, [-1, -1], [1, 1])
    with pytest.raises(ShapeError):
        solver.append_linear_velocity_constraints(np.eye(3), np.zeros(3), np.ones(3))
    assert solver.get_linear_velocity_constraint_rows() == 2  # a rejected append changes nothing


def test_tight_constraints_rows(panda):
    panda.update_kinematics(PANDA_READY)
    solver = KinematicsSolver(panda, dt=0.02)
    p0 = panda.get_frame_pose("panda_hand_tcp").translation
    target = p0 + np.array([0.001, -0.002, 0.0])
    solver.add_tight_point_constraint("panda_hand_tcp", target, 1e-3, axis_mask=[1, 1, 0])
    T = pin.SE3(
        pin.exp3(np.array([0.01, 0.0, -0.02])) @ panda.get_frame_pose("panda_link8").rotation,
        np.zeros(3),
    )
    solver.add_tight_frame_pose_constraint(
        "panda_link8", T, 1e-3, 1e-2, axis_mask=[0, 0, 0, 1, 1, 1]
    )
    p = solver.build_problem(PANDA_READY)
    J = panda.get_frame_jacobian("panda_hand_tcp")
    rows = p.constraint_slices["tight_point_0"]
    np.testing.assert_allclose(p.C[rows], J[:2])
    np.testing.assert_allclose(p.lower[rows], ((target - p0 - 1e-3) / 0.02)[:2])
    np.testing.assert_allclose(p.upper[rows], ((target - p0 + 1e-3) / 0.02)[:2])
    # Orientation residual r = log3(R R*^T): rows Jlog3(R R*^T)^T J_w, bounds (-+eps - r)/dt.
    R = panda.get_frame_pose("panda_link8").rotation
    Re = R @ T.rotation.T
    rows = p.constraint_slices["tight_pose_0"]
    Jw = panda.get_frame_jacobian("panda_link8")[3:]
    np.testing.assert_allclose(p.C[rows], pin.Jlog3(Re).T @ Jw, atol=1e-12)
    np.testing.assert_allclose(p.lower[rows], (-1e-2 - pin.log3(Re)) / 0.02, atol=1e-12)
    # The rows are the exact rate of the residual.
    con = TightFramePoseConstraint("t", panda, "panda_link8", T)

    def residual():
        oMf = panda.get_frame_pose("panda_link8")
        return np.r_[oMf.translation, pin.log3(oMf.rotation @ T.rotation.T)]

    np.testing.assert_allclose(
        con.rows(0.01)[0], fd_vector(panda, PANDA_READY, residual), atol=1e-6
    )
    solver.clear_tight_point_constraints()
    solver.clear_tight_frame_pose_constraints()
    assert solver.build_problem().C.shape == (0, 7)
    with pytest.raises(NonFiniteInput):
        solver.add_tight_point_constraint("panda_hand", [np.nan, 0, 0])
    with pytest.raises(InvalidInput):
        solver.add_tight_point_constraint("panda_hand", [0, 0, 0], 0.0)
    with pytest.raises(FrameNotFound):
        solver.add_tight_point_constraint("nope", [0, 0, 0])
    with pytest.raises(ShapeError):
        solver.add_tight_frame_pose_constraint("panda_hand", np.eye(3))
    with pytest.raises(InvalidInput):
        solver.add_tight_frame_pose_constraint("panda_hand", np.eye(4), 1e-3, -1.0)
    with pytest.raises(ShapeError):
        solver.add_tight_frame_pose_constraint("panda_hand", np.eye(4), axis_mask=[1, 1, 1])


def _tight_rollout(dt: float, seconds: float = 5.0) -> tuple[float, float, float]:
    """Hold the TCP with tight constraints while a posture task pulls; worst overshoots."""
    robot = load_panda()
    q = PANDA_READY.copy()
    robot.update_kinematics(q)
    solver = KinematicsSolver(robot, dt=dt)
    T0 = robot.get_frame_pose("panda_hand_tcp")
    solver.add_tight_point_constraint("panda_hand_tcp", T0.translation, 1e-4)
    solver.add_tight_frame_pose_constraint("panda_hand_tcp", T0, 1e-4, 1e-3, [0, 0, 0, 1, 1, 1])
    post = solver.add_posture_task("post")
    post.gain = 5.0
    post.solve_mode = TaskSolveMode.MIN_ERROR  # move in the 1-D null space left over
    post.set_target_configuration(q + np.array([1, 1, 1, 1, 1, -1, 1]) * 0.8)
    pos_over, rot_over = -np.inf, -np.inf
    for _ in range(round(seconds / dt)):
        problem = solver.build_problem(q)
        res = solver.solve_velocity(q)
        assert res.status == SolverStatus.SUCCESS, res.status_message
        # The solver honours the rows exactly ...
        assert max_violation(problem.C @ res.solution, problem.lower, problem.upper) < 1e-9
        q = q + res.solution * dt
        robot.update_kinematics(q)
        T = robot.get_frame_pose("panda_hand_tcp")
        pos_over = max(pos_over, np.abs(T.translation - T0.translation).max() - 1e-4)
        rot_over = max(rot_over, np.abs(pin.log3(T.rotation @ T0.rotation.T)).max() - 1e-3)
    return pos_over, rot_over, float(np.linalg.norm(q - PANDA_READY))


def test_tight_constraints_hold_the_frame_in_a_long_rollout():
    pos_over, rot_over, moved = _tight_rollout(0.01)
    # ... and the box is left only by the first-order rows' linearization error: a small
    # fraction of epsilon, shrinking with the step (about 4x per halving for the position).
    assert pos_over < 0.05 * 1e-4
    assert rot_over < 0.05 * 1e-3
    assert moved > 0.1  # the arm did move (in the null space of the held pose)
    pos_half, rot_half, _ = _tight_rollout(0.005)
    assert pos_half < pos_over / 2.5
    assert rot_half < rot_over / 2


@pytest.mark.parametrize("shape", ["sphere", "capsule", "cylinder", "box"])
def test_exact_point_distance_matches_coal(shape):
    """The support rows' point-to-primitive distance and normal, against coal's GJK/EPA."""
    import coal

    from stackik.constraints import _collision_kernel as ck

    geom, kind, params = {
        "sphere": (coal.Sphere(0.07), ck.SHAPE_SPHERE, [0.07, 0, 0]),
        "capsule": (coal.Capsule(0.05, 0.3), ck.SHAPE_CAPSULE, [0.05, 0.15, 0]),
        "cylinder": (coal.Cylinder(0.05, 0.3), ck.SHAPE_CYLINDER, [0.05, 0.15, 0]),
        "box": (coal.Box(0.2, 0.1, 0.3), ck.SHAPE_BOX, [0.1, 0.05, 0.15]),
    }[shape]
    rng = np.random.default_rng(12)
    point = coal.Sphere(1e-9)
    req, checked = coal.DistanceRequest(), 0
    req.enable_signed_distance = True
    req.gjk_tolerance = 1e-10
    for _ in range(300):
        R = pin.exp3(rng.normal(size=3))
        t = rng.normal(scale=0.1, size=3)
        p = t + rng.uniform(-0.3, 0.3, 3)
        n = np.empty(3)
        d = ck.point_distance(kind, np.array(params, float), R, t, p, n)
        res = coal.DistanceResult()
        coal.distance(geom, coal.Transform3s(R, t), point, coal.Transform3s(np.eye(3), p), req, res)
        if res.min_distance < 1e-4:
            continue  # inside: coal's EPA and the analytic depth may pick other faces
        assert d == pytest.approx(res.min_distance + 1e-9, abs=1e-7)
        np.testing.assert_allclose(n, res.normal, atol=1e-5)
        # The normal is the distance's gradient: finite differences along it and across.
        for direction in np.eye(3):
            e = 1e-6
            dp = ck.point_distance(kind, np.array(params, float), R, t, p + e * direction, n.copy())
            dm = ck.point_distance(kind, np.array(params, float), R, t, p - e * direction, n.copy())
            assert (dp - dm) / (2 * e) == pytest.approx(n @ direction, abs=1e-5)
        checked += 1
    assert checked > 150


# ============================================================================================
# Joint-limit recovery, softening, headroom and relief (the EmbodiK limit knobs)
# ============================================================================================
def _limits_box(robot, q, dt=0.01, **settings):
    from stackik.constraints.limits import JointLimitsConstraint

    c = JointLimitsConstraint("limits", robot.create_kinematics(q))
    for name, value in settings.items():
        if name == "hysteresis":
            c.set_recovery_hysteresis(*value)
        else:
            setattr(c, name, value)
    lo, hi = np.full(robot.nv, -np.inf), np.full(robot.nv, np.inf)
    c.tighten_box(dt, lo, hi)
    return c, lo, hi


def test_limit_recovery_gain_release_and_hysteresis(panda):
    lo_lim, hi_lim = panda.get_joint_limits()
    vmax = panda.get_velocity_limits()
    q = PANDA_READY.copy()
    q[3] = hi_lim[3] + 0.01  # 1 cm beyond joint 4's upper limit
    dt = 0.01
    _, lo, hi = _limits_box(panda, q, dt)
    assert hi[3] == pytest.approx(max(-0.01 / dt, -vmax[3]))  # full recovery
    _, lo, hi = _limits_box(panda, q, dt, recovery_gain=0.3)
    assert hi[3] == pytest.approx(-0.3 * 0.01 / dt)
    assert lo[3] <= hi[3]  # the recovery wins over the other side: the box is not empty
    _, lo, hi = _limits_box(panda, q, dt, release_margin=0.02)
    assert hi[3] == 0.0  # within the release margin: held, not pushed
    # Hysteresis: 1 cm is below the 2 cm enter epsilon, so no recovery starts ...
    c, lo, hi = _limits_box(panda, q, dt, hysteresis=(0.02, 0.005))
    assert hi[3] == 0.0
    # ... past it a recovery starts, and runs until 5 mm inside the limit.
    q2 = q.copy()
    q2[3] = hi_lim[3] + 0.03
    c.kinematics.update(q2)
    lo, hi = np.full(panda.nv, -np.inf), np.full(panda.nv, np.inf)
    c.tighten_box(dt, lo, hi)
    assert hi[3] == pytest.approx(max(-(0.005 + 0.03) / dt, -vmax[3]))
    q3 = q.copy()
    q3[3] = hi_lim[3] - 0.002  # back inside, but not 5 mm yet: still pushed
    c.kinematics.update(q3)
    lo, hi = np.full(panda.nv, -np.inf), np.full(panda.nv, np.inf)
    c.tighten_box(dt, lo, hi)
    assert hi[3] == pytest.approx(-(0.005 - 0.002) / dt)
    q3[3] = hi_lim[3] - 0.006  # out of the hysteresis: the braking bound again
    c.kinematics.update(q3)
    lo, hi = np.full(panda.nv, -np.inf), np.full(panda.nv, np.inf)
    c.tighten_box(dt, lo, hi)
    expected = calculate_velocity_box_constraint(
        q3[3] - lo_lim[3], 0.006, vmax[3], panda.acceleration_limits[3], dt
    )
    assert hi[3] == pytest.approx(expected[1])


def test_limit_soft_zone_headroom_and_relief(panda):
    _, hi_lim = panda.get_joint_limits()
    vmax, amax, dt = panda.get_velocity_limits(), panda.acceleration_limits, 0.01
    q = PANDA_READY.copy()
    q[0] = hi_lim[0] - 0.05  # 5 cm below the upper limit
    _, _, plain = _limits_box(panda, q, dt)
    _, _, soft = _limits_box(panda, q, dt, soft_zone=0.2)
    assert soft[0] == pytest.approx(min(plain[0], vmax[0] * 0.05 / 0.2))
    assert soft[0] < plain[0]
    # Headroom (EmbodiK's semantics): a joint farther than the activation margin from a
    # limit may move toward it at least at the headroom, capped by its velocity limit and
    # by m / dt; within the margin the braking bound stands.
    box = calculate_velocity_box_constraint
    near = 1e-4  # within the 0.01 activation margin: unchanged
    assert box(1.0, near, 2.0, 5.0, dt, 0.5, 0.01) == box(1.0, near, 2.0, 5.0, dt)
    slow = box(1.0, 0.05, 2.0, 0.5, dt)[1]  # braking with a = 0.5: 0.2187
    assert slow == pytest.approx(0.1 / (dt + math.sqrt(dt * dt + 0.2)), rel=1e-12)
    assert box(1.0, 0.05, 2.0, 0.5, dt, 0.5, 0.01)[1] == pytest.approx(0.5)
    assert box(1.0, 0.05, 2.0, 0.5, dt, 3.0, 0.01)[1] == pytest.approx(2.0)  # <= v_max
    assert box(1.0, 0.015, 2.0, 0.5, dt, 2.0, 0.01)[1] == pytest.approx(1.5)  # <= m / dt
    assert box(1.0, -0.05, 2.0, 0.5, dt, 0.5, 0.01) == box(1.0, -0.05, 2.0, 0.5, dt)
    # Relief lends the limit margin back per joint, then widens the URDF limit itself.
    c, _, margin_only = _limits_box(panda, q, dt, margin=0.04)
    c.relief = np.r_[0.03, np.zeros(panda.nv - 1)]
    lo, hi = np.full(panda.nv, -np.inf), np.full(panda.nv, np.inf)
    c.tighten_box(dt, lo, hi)
    assert hi[0] == pytest.approx(
        calculate_velocity_box_constraint(1.0, 0.05 - 0.01, vmax[0], amax[0], dt)[1]
    )
    assert hi[0] > margin_only[0]
    c.relief = np.r_[0.04, np.zeros(panda.nv - 1)]  # all of the margin: the URDF limit
    lo, hi = np.full(panda.nv, -np.inf), np.full(panda.nv, np.inf)
    c.tighten_box(dt, lo, hi)
    assert hi[0] == pytest.approx(plain[0])
    c.relief = np.r_[0.1, np.zeros(panda.nv - 1)]  # more: 6 cm past the URDF limit
    lo, hi = np.full(panda.nv, -np.inf), np.full(panda.nv, np.inf)
    c.tighten_box(dt, lo, hi)
    assert hi[0] == pytest.approx(
        calculate_velocity_box_constraint(1.0, 0.05 + 0.06, vmax[0], amax[0], dt)[1]
    )
    assert c.excursion().max() == 0.0  # (q itself is inside its URDF limits)
    with pytest.raises(InvalidInput):
        c.relief = -np.ones(panda.nv)
    with pytest.raises(InvalidInput):
        c.recovery_gain = 0.0


def test_relative_pose_learns_its_linearization_error():
    """A fast motion pressing a tight relative-pose bound: overshoots stay small."""
    robot = load_dual_arm()
    q = dual_ready(robot)
    robot.update_kinematics(q)

    def rel() -> pin.SE3:
        return robot.get_frame_pose("left_tcp").actInv(robot.get_frame_pose("right_tcp"))

    start = rel()
    half = np.array([0.001] * 3 + [0.01] * 3)
    centre = np.r_[start.translation, np.zeros(3)]
    solver = KinematicsSolver(robot, dt=0.01)
    solver.configure_relative_pose_constraint(
        "left_tcp", "right_tcp", centre - half, centre + half, reference_rotation=start.rotation
    )
    left = solver.add_frame_task("left", "left_tcp")
    left.gain = 5.0
    T = robot.get_frame_pose("left_tcp")
    left.set_target_pose(pin.SE3(T.rotation, T.translation + np.array([0.15, 0.0, 0.15])))
    worst = 0.0
    for _ in range(200):
        q = robot.integrate(q, solver.solve_velocity(q).solution, 0.01)
        robot.update_kinematics(q)
        T_ab = rel()
        x = np.r_[T_ab.translation, pin.log3(start.rotation.T @ T_ab.rotation)]
        worst = max(worst, float(np.max(np.abs(x - centre)[:3] - half[:3])))
    moved = np.linalg.norm(robot.get_frame_pose("left_tcp").translation - T.translation)
    assert moved > 0.1  # (holds: the hands travelled)
    # The first crossing (before anything is learned) stays; repeated ones do not: 0.21 mm
    # here, 0.47 mm without the learning.
    assert worst < 0.25e-3


# -- the public write / tighten_box: buffers are checked before any compiled write ---------
def _every_family() -> list:
    """One solver per robot whose constraints cover every built-in family, and a q each."""
    from stackik.constraints import (
        JointMotionConstraint,
        LinearConstraint,
        TightPointConstraint,
    )

    panda = load_panda()
    arm = KinematicsSolver(panda, dt=0.01)
    arm.configure_collision_constraint(0.02)
    kin = arm.kinematics
    arm.add_constraint(JointMotionConstraint("motion", kin, [2.0] * 7, [10.0] * 7, [100.0] * 7))
    rows = np.zeros((2, 7))
    rows[0, 1] = rows[1, 3] = 1.0
    arm.add_constraint(LinearConstraint("rows", kin, rows, [-0.3, -0.2], [0.3, 0.2]))
    arm.add_constraint(TightPointConstraint("point", kin, "panda_hand_tcp", [0.4, 0.0, 0.5]))
    T = pin.SE3(pin.exp3(np.array([3.0, 0.0, 0.0])), np.array([0.4, 0.0, 0.5]))
    arm.add_constraint(TightFramePoseConstraint("pose", kin, "panda_link8", T))
    arm.configure_relative_pose_constraint("panda_link0", "panda_hand", [-1.0] * 6, [1.0] * 6)
    polygon = np.array([[-1.0, -1.0], [1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]])
    arm.add_constraint(ComPolygonConstraint("com", kin, polygon))
    humanoid = RobotModel(ROBOTS / "humanoid" / "humanoid.urdf", floating_base=True)
    body = KinematicsSolver(humanoid, dt=0.01)
    body.set_base_position_bounds([-0.1] * 3, [0.1] * 3)
    body.set_base_orientation_bounds([-0.2] * 3, [0.2] * 3)
    gripper = RobotModel(Path(__file__).parent / "data" / "gripper.urdf", mimic="keep")
    hand = KinematicsSolver(gripper, dt=0.01)
    return [
        (arm, PANDA_READY),
        (body, humanoid.neutral_configuration()),
        (hand, gripper.neutral_configuration()),
    ]


def _bad_buffers(shape: tuple[int, ...]) -> list:
    """Buffers a compiled writer must never get: too small, wrong type, read-only, lists."""
    small = np.zeros((shape[0] - 1, *shape[1:]))
    frozen = np.zeros(shape)
    frozen.flags.writeable = False
    return [small, np.zeros(shape, dtype=np.float32), frozen, np.zeros(shape).tolist()]


def test_every_family_checks_the_buffers_of_write_and_tighten_box():
    """A public ``write`` / ``tighten_box`` refuses buffers it would write past (typed).

    The compiled writers do not check bounds: a box of the wrong size given to the joint
    limits' ``tighten_box`` corrupted the heap (``double free or corruption``). Every
    family now checks first; with the engine's own buffers the rows and box equal the
    solver's problem at the same configuration.
    """
    families = set()
    for solver, q in _every_family():
        problem = solver.build_problem(q, advance=False)  # (the engine's rows and box)
        nv = solver.robot.nv
        for c in solver.constraints:
            families.add(c.family)
            lo, hi = np.full(nv, -np.inf), np.full(nv, np.inf)
            for bad in _bad_buffers((nv,)):
                with pytest.raises(InvalidInput):  # ShapeError is an InvalidInput
                    c.tighten_box(solver.dt, bad, hi)
                with pytest.raises(InvalidInput):
                    c.tighten_box(solver.dt, lo, bad)
            assert np.all(lo == -np.inf) and np.all(hi == np.inf)  # nothing written
            need = c.max_rows()
            C, lower, upper = np.zeros((need, nv)), np.zeros(need), np.zeros(need)
            if need:
                for bad in _bad_buffers((need, nv)):
                    with pytest.raises(InvalidInput):
                        c.write(solver.dt, bad, lower, upper)
                for bad in _bad_buffers((need,)):
                    with pytest.raises(InvalidInput):
                        c.write(solver.dt, C, bad, upper)
                    with pytest.raises(InvalidInput):
                        c.write(solver.dt, C, lower, bad)
                assert not C.any() and not lower.any() and not upper.any()
            if c.family in ("collision", "relative_pose", "joint_motion"):
                continue  # (step-to-step state: checked by their own tests)
            written = c.write(solver.dt, C, lower, upper)
            rows = problem.constraint_slices.get(c.name, slice(0, 0))
            assert written == rows.stop - rows.start
            np.testing.assert_array_equal(C[:written], problem.C[rows])
            np.testing.assert_array_equal(lower[:written], problem.lower[rows])
    assert families == set(constraint_families_built_in()), families


def constraint_families_built_in() -> list[str]:
    """The families stackik registers (not those other tests register)."""
    from stackik.constraints import constraint_families

    found = constraint_families().items()
    return sorted(name for name, cls in found if cls.__module__.startswith("stackik."))
