"""EmbodiK API completeness: every seed-004 name exists, and each knob changes what it says.

Effects are checked against independent computations (coal distances through Pinocchio,
finite differences, the documented closed-form bounds), not only attributes.
"""

from __future__ import annotations

import logging
import pickle
import re
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from stackik import InvalidInput, KinematicsSolver, RobotModel
from stackik.constraints.collision import CollisionTuningMode
from stackik.tasks import TaskType

ROOT = Path(__file__).resolve().parents[1]
ROBOTS = ROOT / "robots"
SEED = ROOT.parent / "shared" / "seeds" / "004_0700a7047d014c5c.txt"
PANDA_READY = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
TIP = "panda_hand_tcp"


@pytest.fixture(scope="module")
def panda() -> RobotModel:
    return RobotModel(ROBOTS / "panda" / "panda.urdf", srdf_path=ROBOTS / "panda" / "panda.srdf")


def collision_solver(robot: RobotModel, min_distance: float = 0.01, **kw) -> KinematicsSolver:
    solver = KinematicsSolver(robot, dt=0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solver.configure_collision_constraint(min_distance, **kw)
    return solver


def independent_min_distance(robot: RobotModel, pairs: list[tuple[str, str]], q) -> float:
    """Smallest distance over named geometry pairs, with Pinocchio + coal directly."""
    gm = pin.GeometryModel(robot.collision_model)
    gm.removeAllCollisionPairs()
    for a, b in pairs:
        gm.addCollisionPair(pin.CollisionPair(gm.getGeometryId(a), gm.getGeometryId(b)))
    gd = pin.GeometryData(gm)
    for req in gd.distanceRequests:  # coal's default GJK tolerance (1e-6) is too loose
        req.enable_signed_distance = True
        req.gjk_tolerance = 1e-10
    data = robot.model.createData()
    pin.computeDistances(robot.model, data, gm, gd, q)
    return min(r.min_distance for r in gd.distanceResults)


def seed_004_names() -> set[str]:
    """The method names of the EmbodiK API reference, as shipped with the tests."""
    lines = (ROOT / "tests" / "data" / "embodik_api_names.txt").read_text().splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def test_every_seed_004_name_exists_on_the_same_class():
    names = seed_004_names()
    assert len(names) > 100
    missing = sorted(
        n for n in names if not hasattr(KinematicsSolver, n) and not hasattr(RobotModel, n)
    )
    assert not missing


def test_the_shipped_name_list_matches_the_reference_when_it_is_at_hand():
    if not SEED.exists():  # a checkout without the reference documents: the list is the record
        assert seed_004_names()
        return
    text = SEED.read_text()
    assert seed_004_names() == set(re.findall(r"^([a-z_][a-z0-9_]*) method descriptor", text, re.M))


# -- collision tuning ------------------------------------------------------------------------
def test_set_collision_min_distance_moves_every_row(panda):
    solver = KinematicsSolver(panda, dt=0.01)
    assert solver.set_collision_min_distance(0.02) is False  # no constraint yet
    solver = collision_solver(panda, 0.01, activation_margin=0.2, patch_tolerance=0.0)
    cc = solver.get_constraint("collision")
    assert solver.set_collision_min_distance(0.015) is True
    assert solver.get_collision_min_distance() == 0.015
    p = solver.build_problem(PANDA_READY)
    hold = 0.015 + cc.recovery_deadband
    for row, d in enumerate(cc.last_distances):
        assert p.lower[row] == pytest.approx(-cc.gain * (d - hold) / 0.01)


def test_settings_changed_between_steps_reach_the_next_steps_rows(panda):
    # the kernel's settings are rewritten only when one changed: dt and the deadband must
    solver = collision_solver(panda, 0.01, activation_margin=0.2, patch_tolerance=0.0)
    cc = solver.get_constraint("collision")
    for _ in range(3):
        solver.solve_velocity(PANDA_READY)
    for dt, deadband in ((0.02, 5e-5), (0.02, 2e-3), (0.005, 0.0)):
        solver.dt = dt
        solver.set_collision_repulsion_deadband(deadband)
        p = solver.build_problem(PANDA_READY)
        hold = cc.min_distance + deadband
        assert len(cc.last_distances) > 0
        for row, d in enumerate(cc.last_distances):
            assert p.lower[row] == pytest.approx(-cc.gain * (d - hold) / dt)


def test_activation_multiplier_and_gating(panda):
    solver = collision_solver(panda, 0.01, activation_margin=0.05, patch_tolerance=0.0)
    cc = solver.get_constraint("collision")
    assert solver.get_collision_constraint_activation_margin() == 0.05
    solver.build_problem(PANDA_READY)
    base = set(cc.last_pairs)
    solver.set_collision_constraint_activation_multiplier(1.5)  # 1.5 * 1 cm
    assert solver.get_collision_constraint_activation_multiplier() == 1.5
    assert solver.get_collision_constraint_activation_margin() == pytest.approx(0.015)
    solver.build_problem(PANDA_READY)
    assert set(cc.last_pairs) < base and all(d < 0.025 for d in cc.last_distances)
    solver.set_proximity_gated_collision_activation_enabled(False)
    assert not solver.get_proximity_gated_collision_activation_enabled()
    assert solver.get_collision_constraint_activation_margin() == 0.05
    solver.build_problem(PANDA_READY)
    assert set(cc.last_pairs) == base


def test_recovery_scale_separation_cap_and_deadband(panda):
    """A pair inside its minimum: the row's recovery is scaled and capped as documented."""
    dmin = 0.065  # the ready pose has pairs 6.0 and 6.3 cm apart
    solver = collision_solver(panda, dmin, activation_margin=0.05, patch_tolerance=0.0)
    lowered = dict(solver.get_collision_pair_min_distance_overrides())
    cc = solver.get_constraint("collision")
    p = solver.build_problem(PANDA_READY)
    d = cc.last_distances
    names = cc.pair_names()
    watched = np.array(["|".join(names[k]) not in lowered for k in cc.last_pairs])
    inside = np.flatnonzero(watched & (d > 0) & (d < dmin - cc.recovery_deadband))
    assert inside.size
    k = int(inside[0])
    full = p.lower[k]
    hold = dmin + cc.recovery_deadband
    assert full == pytest.approx(cc.gain * (hold - (d[k] + cc.recovery_deadband / 2)) / 0.01)
    # (reset: a pair that stays where its row asked it to leave would teach the row a
    # linearization error, see the collision module)
    solver.set_collision_recovery_scale(0.2)
    assert solver.get_collision_recovery_scale() == 0.2
    cc.reset()
    assert solver.build_problem(PANDA_READY).lower[k] == pytest.approx(0.2 * full)
    solver.set_collision_max_separation_speed_nonpenetrating(0.01)
    assert solver.get_collision_max_separation_speed_nonpenetrating() == 0.01
    cc.reset()
    assert solver.build_problem(PANDA_READY).lower[k] == pytest.approx(0.01)
    solver.set_collision_repulsion_deadband(0.004)
    assert solver.get_collision_repulsion_deadband() == 0.004
    with pytest.raises(InvalidInput):
        solver.set_collision_recovery_scale(0.0)
    with pytest.raises(InvalidInput):
        solver.set_collision_max_separation_speed_nonpenetrating(-1.0)


def test_query_budget_sphere_switch_cache_and_presets(panda):
    solver = collision_solver(panda, 0.01, activation_margin=0.3)
    cc = solver.get_constraint("collision")
    solver.build_problem(PANDA_READY)
    listed_all = cc.exact_queries
    solver.set_collision_refinement_time_budget_us(1)  # 1 us: the most urgent pair only
    cc.reset()
    solver.build_problem(PANDA_READY)
    assert solver.get_collision_refinement_time_budget_us() == 1
    assert 1 <= cc.exact_queries < listed_all
    assert cc.exact_queries + cc.skipped_queries <= listed_all + cc.skipped_queries
    solver.set_collision_refinement_time_budget_us(0)
    # Without the sphere test every listed pair is queried exactly.
    solver.enable_sphere_broadphase(False)
    assert not solver.sphere_broadphase_enabled()
    cc.reset()
    solver.build_problem(PANDA_READY)
    assert cc.exact_queries >= listed_all
    solver.enable_sphere_broadphase(True)
    # Nothing moves: the motion bounds re-list only the pairs within activation; the pair
    # cache also re-queries its candidates (pairs just beyond activation).
    solver.set_collision_constraint_activation_multiplier(2.0)  # activation 2 cm
    cc.reset()
    solver.build_problem(PANDA_READY)
    solver.build_problem(PANDA_READY)
    near_only = cc.exact_queries
    solver.enable_collision_pair_cache(True, 4, 0.5, 16)
    cc.reset()
    for _ in range(5):  # the full scan at the 4th step finds the candidates
        solver.build_problem(PANDA_READY)
    assert cc.exact_queries > near_only
    solver.enable_collision_pair_cache(False)
    for mode in CollisionTuningMode:
        solver.set_collision_tuning_mode(mode)
        assert solver.get_collision_tuning_mode() == mode
    assert (
        solver.get_collision_refinement_time_budget_us() == 300
    )  # SPEED (EmbodiK 0.23.2's budget)
    with pytest.raises(InvalidInput):
        solver.set_collision_tuning_mode("fastest")


# -- collision evaluation and debug --------------------------------------------------------------
def test_evaluate_distances_are_exact_and_side_effect_free(panda):
    solver = collision_solver(panda, 0.01)
    # Before a collision constraint: every active pair of the robot (as EmbodiK), at the
    # robot's current configuration when no q is given.
    panda.update_kinematics(PANDA_READY)
    bare = KinematicsSolver(panda).evaluate_min_collision_distance()
    every = panda.get_collision_pair_names()
    assert bare == pytest.approx(independent_min_distance(panda, every, PANDA_READY), abs=1e-9)
    q = panda.random_configuration(5)
    before = solver.kinematics.q.copy()
    d = solver.evaluate_min_collision_distance(q)
    pairs = solver.get_active_collision_pairs()
    assert d == pytest.approx(independent_min_distance(panda, pairs, q), abs=1e-9)
    assert solver.evaluate_post_step_collision_distance(q) == d
    np.testing.assert_array_equal(solver.kinematics.q, before)


def test_evaluate_without_q_reads_the_robots_current_configuration(panda):
    """Seed 004: no ``q`` (or an empty one) means the current configuration: after
    ``robot.update_kinematics(q)``, ``q`` (not the solver's last step's)."""
    solver = collision_solver(panda, 0.01)
    solver.solve_velocity(np.zeros(panda.nq))  # the solver's cache now holds zeros
    pairs = solver.get_active_collision_pairs()
    seeds = iter(range(100))  # a separated configuration: exact to 1e-9 there (no EPA)
    while (
        expected := independent_min_distance(
            panda, pairs, q := panda.random_configuration(next(seeds))
        )
    ) < 0.005:
        pass
    panda.update_kinematics(q)
    np.testing.assert_array_equal(panda.get_current_configuration(), q)
    assert expected != pytest.approx(independent_min_distance(panda, pairs, np.zeros(panda.nq)))
    for empty in ((), (np.zeros(0),), ([],)):
        assert solver.evaluate_min_collision_distance(*empty) == pytest.approx(expected, abs=1e-9)
        post = solver.evaluate_post_step_collision_distance(*empty)
        assert post == pytest.approx(expected, abs=1e-9)
        info = solver.evaluate_collision_debug(*empty)
        assert info is not None and info.distance == pytest.approx(expected, abs=1e-9)


def test_evaluate_without_q_after_a_step_reads_the_steps_configuration(panda):
    """EmbodiK's steps set the robot's configuration, so ``solve_velocity(q1)`` then
    ``evaluate_min_collision_distance()`` is the distance at ``q1`` there. stackik's steps
    leave the robot alone: no ``q`` reads whichever was set later, the solver's step or
    the robot's update (it read the robot's configuration after a step: 59.8 mm where
    the step was at 5.1 mm)."""
    q0 = PANDA_READY.copy()
    q1 = q0.copy()
    q1[3], q1[5] = -2.8, 3.0  # the hand folded back close to the arm
    panda.update_kinematics(q0)
    solver = collision_solver(panda, 0.02)
    pairs = solver.get_active_collision_pairs()
    at_q0 = independent_min_distance(panda, pairs, q0)
    at_q1 = independent_min_distance(panda, pairs, q1)
    assert abs(at_q0 - at_q1) > 0.01
    solver.solve_velocity(q1)
    assert solver.evaluate_min_collision_distance() == pytest.approx(at_q1, abs=1e-9)
    info = solver.evaluate_collision_debug()
    assert info is not None and info.distance == pytest.approx(at_q1, abs=1e-9)
    panda.update_kinematics(q0)  # the robot's update is the later one now
    assert solver.evaluate_min_collision_distance() == pytest.approx(at_q0, abs=1e-9)
    solver.solve_velocity(q1)
    assert solver.evaluate_min_collision_distance() == pytest.approx(at_q1, abs=1e-9)
    copy = pickle.loads(pickle.dumps(solver))  # (the order survives pickling)
    assert copy.evaluate_min_collision_distance() == pytest.approx(at_q1, abs=1e-9)
    panda.update_kinematics(q0)
    copy = pickle.loads(pickle.dumps(solver))  # (the robot's update is the later one)
    assert copy.evaluate_min_collision_distance() == pytest.approx(at_q0, abs=1e-9)
    copy.solve_velocity(q1)  # (and a step of the copy is later than both)
    assert copy.evaluate_min_collision_distance() == pytest.approx(at_q1, abs=1e-9)


def test_last_collision_debug_list_is_nearest_first(panda):
    """EmbodiK lists the last step's pairs nearest first (as ``evaluate_collision_debug_list``
    does); the list followed the rows' order."""
    q1 = PANDA_READY.copy()
    q1[3], q1[5] = -2.8, 3.0
    solver = collision_solver(panda, 0.02)
    solver.solve_velocity(q1)
    infos = solver.get_last_collision_debug_list()
    distances = [i.distance for i in infos]
    assert len(infos) >= 3 and distances == sorted(distances)
    assert distances != [i.distance for i in solver.get_constraint("collision").debug_info()]
    pairs = [(i.geometry_a, i.geometry_b) for i in infos]
    for info, d in zip(infos, distances, strict=True):  # (coal: each pair's own distance)
        pair = (info.geometry_a, info.geometry_b)
        assert d == pytest.approx(independent_min_distance(panda, [pair], q1), abs=1e-6)
    assert len(set(pairs)) == len(pairs)


def test_collision_debug_before_configuration_evaluates_the_models_pairs(panda):
    """EmbodiK: ``evaluate_collision_debug(q)`` before ``configure_collision_constraint``
    reports the nearest of every active pair of the model (coal over all of them)."""
    bare = KinematicsSolver(panda)
    every = panda.get_collision_pair_names()
    for seed in range(3):
        q = panda.random_configuration(seed)
        info = bare.evaluate_collision_debug(q)
        assert info is not None
        assert info.distance == pytest.approx(independent_min_distance(panda, every, q), abs=1e-5)
        assert (info.geometry_a, info.geometry_b) in every or (
            info.geometry_b,
            info.geometry_a,
        ) in every


def test_collision_debug_rows_match_finite_differences(panda):
    solver = collision_solver(panda, 0.01, patch_tolerance=0.0)
    info = solver.evaluate_collision_debug(PANDA_READY)
    assert info is not None
    assert info.distance == pytest.approx(solver.evaluate_min_collision_distance(PANDA_READY))
    assert np.linalg.norm(info.point_b - info.point_a) == pytest.approx(info.distance, abs=1e-6)
    pair = [(info.geometry_a, info.geometry_b)]

    def dist(q):
        return independent_min_distance(panda, pair, q)

    eps = 1e-6
    fd = np.array(
        [
            (
                dist(panda.integrate(PANDA_READY, eps * e))
                - dist(panda.integrate(PANDA_READY, -eps * e))
            )
            / (2 * eps)
            for e in np.eye(panda.nv)
        ]
    )
    np.testing.assert_allclose(info.jacobian, fd, atol=1e-5)
    # After a solve, the debug list has one record per pair with rows, with the rows used.
    assert solver.get_last_collision_debug() is None
    solver.solve_velocity(PANDA_READY)
    records = solver.get_last_collision_debug_list()
    cc = solver.get_constraint("collision")
    assert len(records) == len(cc.last_pairs) > 0
    p = solver.build_problem(PANDA_READY)
    rows = p.constraint_slices["collision"]
    for rec in solver.get_last_collision_debug_list():
        assert any(np.allclose(rec.jacobian, row) for row in p.C[rows])
    assert solver.get_last_collision_debug().distance == min(r.distance for r in records)


# -- limits and solver knobs ---------------------------------------------------------------------
def test_limit_knobs_change_the_velocity_box(panda):
    solver = KinematicsSolver(panda, dt=0.01)
    lo_lim, hi_lim = panda.get_joint_limits()
    q = PANDA_READY.copy()
    q[3] = hi_lim[3] + 0.01
    solver.set_limit_recovery_gain(1.0)  # (EmbodiK's default is 0.5)
    full = solver.build_problem(q).box_upper[3]
    assert full == pytest.approx(-0.01 / 0.01)
    solver.set_limit_recovery_gain(0.5)
    assert solver.build_problem(q).box_upper[3] == pytest.approx(0.5 * full)
    solver.set_limit_exit_release_margin(0.02)
    assert solver.build_problem(q).box_upper[3] == 0.0
    solver.set_limit_exit_release_margin(0.0)
    solver.set_limit_recovery_hysteresis(0.05, 0.0)
    fresh = KinematicsSolver(panda, dt=0.01)
    fresh.set_limit_recovery_hysteresis(0.05, 0.0)
    assert fresh.build_problem(q).box_upper[3] == 0.0  # 1 cm < enter epsilon: held
    q2 = PANDA_READY.copy()
    q2[0] = hi_lim[0] - 0.02
    # Saturation exit (EmbodiK's): beyond 0.01 from a limit, at least 0.1 v_max toward it,
    # never past the limit in one step. At dt = 0.1 the braking bound 2 m / (dt +
    # sqrt(dt^2 + 2 m / a)) = 0.183 is below 0.1 v_max = 0.2175, so it is raised to
    # min(0.2175, m / dt = 0.2).
    slow = KinematicsSolver(panda, dt=0.1)
    plain = slow.build_problem(q2).box_upper[0]
    a = panda.acceleration_limits[0]
    assert plain == pytest.approx(0.04 / (0.1 + np.sqrt(0.01 + 0.04 / a)))
    slow.enable_saturation_exit_behavior(True)
    assert slow.saturation_exit_behavior_enabled()
    vmax0 = panda.get_velocity_limits()[0]
    assert slow.build_problem(q2).box_upper[0] == pytest.approx(min(0.1 * vmax0, 0.02 / 0.1))
    assert plain < 0.2
    q3 = q2.copy()
    q3[0] = hi_lim[0] - 0.005  # within the 0.01 margin: the braking bound stands
    slow.enable_saturation_exit_behavior(False)
    braking = slow.build_problem(q3).box_upper[0]
    slow.enable_saturation_exit_behavior(True)
    assert slow.build_problem(q3).box_upper[0] == braking
    fresh.set_constraint_tolerance(1e-3)
    assert fresh.get_tolerance() == 1e-3
    fresh.set_linear_velocity_constraints(np.eye(7)[:1], [-0.1], [0.1])
    p = fresh.build_problem(q2)
    assert p.lower[0] == pytest.approx(-0.1 - 1e-3) and p.upper[0] == pytest.approx(0.1 + 1e-3)
    fresh.set_regularization_epsilon(1e-5)
    assert fresh.get_tolerance() == 1e-5
    with pytest.warns(DeprecationWarning):
        fresh.set_solver_recovery_enabled(True)
    assert fresh.solver_recovery_enabled() is False
    assert lo_lim.shape == (7,)


def test_position_ik_debug_logs_every_iteration(panda, caplog):
    solver = KinematicsSolver(panda, dt=0.01)
    target = panda.create_kinematics(PANDA_READY + 0.1).frame_pose(TIP)
    solver.enable_position_ik_debug(True)
    with caplog.at_level(logging.DEBUG, logger="stackik.position_ik"):
        res = solver.solve_position(PANDA_READY, target, TIP)
    lines = [r for r in caplog.records if "position IK iteration" in r.getMessage()]
    assert len(lines) == res.iterations + 1
    solver.enable_position_ik_debug(False)
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="stackik.position_ik"):
        solver.solve_position(PANDA_READY, target, TIP)
    assert not caplog.records


# -- stall handler and elastic band --------------------------------------------------------------
def test_stall_handler_relaxes_then_restores_the_margin(panda):
    solver = collision_solver(panda, 0.05)
    hand = solver.add_frame_task("hand", TIP, TaskType.FRAME_POSITION)
    hand.set_target_position([-0.05, 0.0, 0.3])  # inside the robot: blocked by the margin
    solver.add_posture_task("posture").priority = 1
    q = PANDA_READY.copy()
    pairs = solver.get_active_collision_pairs()
    relaxed_seen, closest = False, np.inf
    for k in range(600):
        if k == 400:
            hand.set_target_position([0.4, 0.0, 0.5])  # away from the body
        res = solver.solve_velocity(q, stall_recovery=True)
        q = q + res.solution * 0.01
        relaxed_seen |= solver.stall_handler_is_relaxed()
        d = independent_min_distance(panda, pairs, q)
        closest = min(closest, d)
        assert d >= 0.3 * 0.05 - 2e-3  # never below the floor (one step's slack)
    assert solver.stall_handler_enabled() and relaxed_seen
    assert closest < 0.05 - 5e-3  # the relaxed margin let the hand get closer
    assert not solver.stall_handler_is_relaxed()  # restored once it moved away
    assert solver.stall_handler_current_min_distance() == 0.05
    solver.disable_stall_handler()
    assert not solver.stall_handler_enabled()


def test_the_stall_handler_never_restores_the_margin_above_the_next_distance(panda):
    """A posture target folds the arm into itself at 10 ms steps: the handler relaxes the
    margin, then raises it while the arm keeps closing. A margin raised to the closest
    distance before a step was above it after the step (193 of 400 steps began as
    violations the handler made: 47.54 mm set at 47.11 mm). Each step starts at or above
    the margin the handler set (coal at the step's configuration)."""
    solver = collision_solver(panda, 0.05)
    solver.dt = 0.01
    folded = PANDA_READY.copy()
    folded[3], folded[5] = -3.0, 3.5
    posture = solver.add_posture_task("post")
    posture.set_target_configuration(folded)
    posture.priority, posture.weight = 0, 1.0
    solver.enable_stall_handler(0.05)
    pairs = solver.get_active_collision_pairs()
    q, relaxed, caused = PANDA_READY.copy(), 0, 0
    for _ in range(400):
        margin = solver.get_collision_min_distance()
        if solver.stall_handler_is_relaxed():
            relaxed += 1
            caused += independent_min_distance(panda, pairs, q) < margin
        res = solver.solve_velocity(q, stall_recovery=True)
        q = panda.integrate(q, res.solution, 0.01)
    assert relaxed > 50 and caused == 0


def test_elastic_band_lends_the_margin_but_never_the_limit(panda):
    solver = KinematicsSolver(panda, dt=0.01)
    solver.set_limit_margin(0.3)
    task = solver.add_joint_task("j1", "panda_joint1", 2.85)  # beyond the shrunk limit
    task.gain = 5.0
    solver.configure_elastic_band(0.2, 0.01, 0.2, 3, True)
    solver.enable_elastic_band(0.2)
    upper = panda.get_joint_limits()[1][0]
    q, highest = PANDA_READY.copy(), -np.inf
    for k in range(320):
        if k == 220:
            task.set_target_value(0.0)
        q = panda.integrate(q, solver.solve_velocity(q).solution, 0.01)
        highest = max(highest, q[0])
        if k == 210:
            assert solver.elastic_band_is_expanded()
            assert solver.elastic_band_max_delta() == pytest.approx(0.2)
            assert solver.elastic_band_deltas()[0] == pytest.approx(0.2)
    assert highest == pytest.approx(upper - 0.3 + 0.2, abs=1e-6)  # the margin, never the limit
    assert solver.elastic_band_max_delta() < 1e-3  # decayed once away
    solver.disable_elastic_band()
    assert not solver.elastic_band_enabled() and not solver.elastic_band_is_expanded()


def test_collision_debug_info_answers_to_embodiks_names(panda):
    """EmbodiK's ``CollisionDebugInfo`` has ``object_a/b`` and ``point_a/b_world``: the same
    pair and witness points as EmbodiK's on the Panda (same geometry names, coal)."""
    q1 = PANDA_READY.copy()
    q1[3], q1[5] = -2.8, 3.0
    info = collision_solver(panda, 0.02).evaluate_collision_debug(q1)
    assert info is not None
    assert (info.object_a, info.object_b) == (info.geometry_a, info.geometry_b)
    assert info.point_a_world is info.point_a and info.point_b_world is info.point_b
    embodik = pytest.importorskip("embodik")
    names = {n for n in dir(embodik.CollisionDebugInfo) if not n.startswith("_")}
    assert names <= {f for f in dir(info) if not f.startswith("_")}
