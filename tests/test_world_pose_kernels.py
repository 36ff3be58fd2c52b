"""The world's compiled pose updates, checked against Pinocchio and the Python checks.

A batch or stamped pose update checks, places and differentiates its poses in compiled
calls (:mod:`stackik.model._pose_kernel`): the rotation logarithm against
``pinocchio.log3`` and the exact angle-axis it came from, the pose checks against
:func:`stackik.spatial.is_rigid`, and the published velocities against finite
differences computed here with NumPy and Pinocchio.
"""

from __future__ import annotations

import coal
import numpy as np
import pinocchio as pin
import pytest

import stackik
from stackik.errors import InvalidTransform, NonFiniteInput, ObstacleNotFound, ShapeError
from stackik.model._pose_kernel import first_fault, pose_ok, rotation_log
from stackik.model.world import World
from stackik.spatial import is_rigid

ANGLES = [0.0, 1e-12, 1e-8, 1e-6, 1e-5, 1e-3, 0.1, 1.0, 2.0, 2.9, 3.0, 3.1]
ANGLES += [np.pi - 1e-3, np.pi - 1e-6, np.pi - 1e-9, np.pi]


def _log(R: np.ndarray) -> np.ndarray:
    w = np.empty(3)
    rotation_log(np.ascontiguousarray(R), w)
    return w


def test_the_rotation_log_matches_pinocchio_and_the_angle_axis_it_came_from():
    rng = np.random.default_rng(7)
    for _ in range(3000):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        truth = axis * rng.uniform(0.0, np.pi)
        R = pin.exp3(truth)
        w = _log(R)
        np.testing.assert_allclose(w, truth, rtol=0, atol=1e-13)
        np.testing.assert_allclose(w, pin.log3(R), rtol=0, atol=1e-9)  # (log3: ~3e-11 near pi)


@pytest.mark.parametrize("angle", ANGLES)
def test_the_rotation_log_holds_near_zero_and_half_a_turn(angle):
    rng = np.random.default_rng(int(angle * 1e6) % 1000)
    for _ in range(50):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        R = pin.exp3(axis * angle)
        w = _log(R)
        np.testing.assert_allclose(pin.exp3(w), R, rtol=0, atol=1e-14)  # the same rotation
        assert np.linalg.norm(w) == pytest.approx(angle, abs=1e-13)
        if angle < np.pi - 1e-6:  # (at half a turn both axis signs are the rotation)
            np.testing.assert_allclose(w, axis * angle, rtol=0, atol=1e-13)
        if 0.0 < angle <= 1e-3:  # small angles to full precision (the series below 1e-6)
            np.testing.assert_allclose(np.linalg.norm(w), angle, rtol=1e-14, atol=0)


def _bad_poses() -> list[np.ndarray]:
    T = pin.SE3.Random().homogeneous
    out = []
    for r, c, value in [(0, 0, np.nan), (1, 3, np.inf), (3, 0, 1e-9), (3, 3, 1.0 + 1e-9)]:
        B = T.copy()
        B[r, c] = value
        out.append(B)
    skew = T.copy()
    skew[0, 1] += 2e-6  # not orthonormal (beyond ROTATION_TOLERANCE = 1e-6)
    mirror = T.copy()
    mirror[:3, 0] *= -1.0  # det -1
    far = T.copy()
    far[:3, 3] = [1e6, 1.0, 0.0]
    return [*out, skew, mirror, far]


def test_the_compiled_pose_check_agrees_with_is_rigid():
    rng = np.random.default_rng(3)
    good = [pin.SE3.Random().homogeneous for _ in range(200)]
    slightly = good[0].copy()
    slightly[0, 1] += 5e-7  # within the tolerance: accepted by both
    poses = [*good, slightly, *_bad_poses()]
    for k in rng.permutation(len(poses)):
        H = poses[k][None].copy()
        assert (first_fault(H, 0) == -1) == is_rigid(poses[k]), k
        assert pose_ok(poses[k]) == is_rigid(poses[k]), k
    stack = np.stack([good[0], _bad_poses()[4], good[1], _bad_poses()[0], good[2]])
    assert first_fault(stack, 0) == 1
    assert first_fault(stack, 2) == 3
    assert first_fault(stack, 4) == -1
    assert first_fault(stack[:0], 0) == -1


def _world(n: int = 4) -> World:
    world = World()
    for k in range(n):
        world.add_obstacle(f"o{k}", coal.Sphere(0.05), pin.SE3.Random())
    return world


def test_stamped_batch_updates_publish_finite_difference_velocities():
    world = _world(4)
    rng = np.random.default_rng(11)
    world.set_obstacle_velocity("o3", [0.3, 0.0, 0.0], [0.0, 0.0, 0.5])  # never stamped
    first = {f"o{k}": pin.SE3.Random() for k in range(3)}
    world.set_obstacle_poses(first, stamp=2.0)
    before = world.state
    assert not before.velocity_known[:3].any()  # one stamp gives no velocity yet
    second = {}
    for k in range(3):
        step = rng.normal(size=6) * [0.01, 0.01, 0.01, 0.02, 0.02, 0.02]
        second[f"o{k}"] = first[f"o{k}"] * pin.exp6(step)
    h = 0.004
    world.set_obstacle_poses(second, stamp=2.0 + h)
    s = world.state
    for k in range(3):
        H0, H1 = first[f"o{k}"].homogeneous, second[f"o{k}"].homogeneous
        np.testing.assert_array_equal(s.linear_velocity[k], (H1[:3, 3] - H0[:3, 3]) / (2.004 - 2.0))
        w = pin.log3(H1[:3, :3] @ H0[:3, :3].T) / (2.004 - 2.0)
        np.testing.assert_allclose(s.angular_velocity[k], w, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(s.rotations[k], H1[:3, :3])
        np.testing.assert_array_equal(s.translations[k], H1[:3, 3])
    assert s.velocity_known.all()
    np.testing.assert_array_equal(s.linear_velocity[3], [0.3, 0.0, 0.0])  # kept as given
    np.testing.assert_array_equal(s.angular_velocity[3], [0.0, 0.0, 0.5])
    np.testing.assert_array_equal(s.rotations[3], before.rotations[3])
    for a in (s.rotations, s.translations, s.linear_velocity, s.angular_velocity):
        assert not a.flags.writeable
    # a stamp that is not later keeps the velocities; the pose still moves
    world.set_obstacle_poses({"o0": first["o0"]}, stamp=2.0 + h)
    t = world.state
    np.testing.assert_array_equal(t.linear_velocity, s.linear_velocity)
    np.testing.assert_array_equal(t.translations[0], first["o0"].translation)


def test_a_single_stamped_pose_gives_the_same_velocity_as_a_batch():
    a, b = _world(2), _world(2)
    P0, P1 = pin.SE3.Random(), pin.SE3.Random()
    P1 = P0 * pin.exp6(np.array([0.001, -0.002, 0.0, 0.0, 0.003, -0.001]))
    a.set_obstacle_pose("o1", P0, stamp=0.5)
    a.set_obstacle_pose("o1", P1.homogeneous, stamp=0.501)
    b.set_obstacle_poses({"o1": P0.homogeneous}, stamp=0.5)
    b.set_obstacle_poses({"o1": P1}, stamp=0.501)
    np.testing.assert_array_equal(
        a.get_obstacle_velocity("o1")[0], b.get_obstacle_velocity("o1")[0]
    )
    np.testing.assert_array_equal(
        a.get_obstacle_velocity("o1")[1], b.get_obstacle_velocity("o1")[1]
    )
    w = pin.log3(P1.rotation @ P0.rotation.T) / (0.501 - 0.5)
    np.testing.assert_allclose(a.get_obstacle_velocity("o1")[1], w, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("bad", range(len(_bad_poses())))
def test_a_bad_pose_in_a_batch_is_named_and_publishes_nothing(bad):
    world = _world(3)
    world.set_obstacle_poses({"o0": np.eye(4), "o1": np.eye(4)}, stamp=1.0)
    before = world.state
    poses = {"o0": pin.SE3.Random(), "o1": _bad_poses()[bad], "o2": np.eye(4)}
    with pytest.raises((InvalidTransform, NonFiniteInput)) as info:
        world.set_obstacle_poses(poses, stamp=1.01)
    assert "'o1'" in str(info.value)
    assert world.state is before
    world.set_obstacle_poses({"o0": np.eye(4)}, stamp=1.02)  # the failed call left no stamp
    np.testing.assert_array_equal(world.get_obstacle_velocity("o0")[0], [0.0, 0.0, 0.0])


def test_batch_poses_take_every_form_and_reject_unknown_names_and_shapes():
    world = _world(3)
    near = np.eye(4)
    near[3, 0] = 1e-13  # within as_se3's last-row tolerance: taken, with the exact last row
    world.set_obstacle_poses({"o0": near, "o1": np.eye(4).astype(int), "o2": pin.SE3.Identity()})
    np.testing.assert_array_equal(world.state.rotations[:2], np.stack([np.eye(3)] * 2))
    before = world.state
    with pytest.raises(ObstacleNotFound):
        world.set_obstacle_poses({"o0": np.eye(4), "nope": np.eye(4)}, stamp=3.0)
    with pytest.raises(ShapeError):
        world.set_obstacle_poses({"o0": np.eye(3)})
    assert world.state is before


def test_single_stamped_updates_publish_frozen_velocities_and_keep_the_rest():
    world = _world(3)
    world.set_obstacle_velocity("o2", [0.0, 0.2, 0.0])
    P0 = pin.SE3.Random()
    P1 = P0 * pin.exp6(np.array([0.002, 0.0, -0.001, 0.01, 0.0, 0.02]))
    P2 = P1 * pin.exp6(np.array([0.0, 0.001, 0.0, 0.0, -0.01, 0.0]))
    world.set_obstacle_pose("o1", P0, stamp=1.0)
    world.set_obstacle_pose("o1", P1, stamp=1.002)
    first = world.state
    assert first.velocity_known.tolist() == [False, True, True]
    world.set_obstacle_pose("o1", P2.homogeneous, stamp=1.004)  # o1's velocity known already
    s = world.state
    for a, b, h in ((P1, P2, 1.004 - 1.002),):
        np.testing.assert_array_equal(s.linear_velocity[1], (b.translation - a.translation) / h)
        w = pin.log3(b.rotation @ a.rotation.T) / h
        np.testing.assert_allclose(s.angular_velocity[1], w, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(s.linear_velocity[2], [0.0, 0.2, 0.0])
    np.testing.assert_array_equal(s.linear_velocity[0], first.linear_velocity[0])
    assert s.velocity_known.tolist() == [False, True, True]
    for a in (s.linear_velocity, s.angular_velocity, s.velocity_known, s.rotations):
        assert not a.flags.writeable
    np.testing.assert_array_equal(first.translations[1], P1.translation)  # never written
    with pytest.raises(InvalidTransform, match="'o1'"):
        world.set_obstacle_pose("o1", 2 * np.eye(4), stamp=1.006)
    with pytest.raises(stackik.InvalidInput, match="stamp"):
        world.set_obstacle_pose("o1", np.eye(4), stamp=float("nan"))
    assert world.state is s


@pytest.mark.parametrize("batch", [False, True])
def test_an_unstamped_pose_ends_a_stamped_velocity_and_keeps_a_given_one(batch):
    """A stamped series' last velocity would hold for an obstacle that may have stopped:
    a pose without a stamp clears it (the solver then measures the motion itself); a
    velocity given with set_obstacle_velocity is not an estimate and stays."""
    world = _world(3)

    def move(name: str, T: object, stamp: float | None = None) -> None:
        if batch:
            world.set_obstacle_poses({name: T}, stamp=stamp)
        else:
            world.set_obstacle_pose(name, T, stamp=stamp)

    P0 = pin.SE3.Random()
    P1 = P0 * pin.exp6(np.array([0.002, 0.0, -0.001, 0.01, 0.0, 0.02]))
    move("o0", P0, 1.0)
    move("o0", P1, 1.01)
    np.testing.assert_array_equal(
        world.state.linear_velocity[0], (P1.translation - P0.translation) / (1.01 - 1.0)
    )
    assert world.state.velocity_known[0]
    move("o0", P1)  # (no stamp: the series ends)
    s = world.state
    assert not s.velocity_known[0]
    assert not s.linear_velocity[0].any() and not s.angular_velocity[0].any()
    move("o0", P0, 2.0)  # (a new series: one stamp gives no velocity yet)
    assert not world.state.velocity_known[0]
    # a given velocity: a first stamp keeps it, and so does a pose without a stamp
    world.set_obstacle_velocity("o1", [0.0, 0.2, 0.0], [0.0, 0.0, 0.1])
    move("o1", P0, 3.0)
    move("o1", P1)
    s = world.state
    assert s.velocity_known[1]
    np.testing.assert_array_equal(s.linear_velocity[1], [0.0, 0.2, 0.0])
    np.testing.assert_array_equal(s.angular_velocity[1], [0.0, 0.0, 0.1])
    # a given velocity after a stamped series ends the series: the next stamp starts one
    move("o2", P0, 4.0)
    move("o2", P1, 4.01)
    world.set_obstacle_velocity("o2", [0.1, 0.0, 0.0])
    move("o2", P0, 4.02)  # (not differentiated against the stamp before the given one)
    np.testing.assert_array_equal(world.state.linear_velocity[2], [0.1, 0.0, 0.0])
    move("o2", P1)
    assert world.state.velocity_known[2]  # (given, not estimated)


def _mover(world: World, batch: bool):
    """``move(name, T, stamp)``: one obstacle's pose, alone or as a batch of one."""

    def move(name: str, T: object, stamp: float | None = None) -> None:
        if batch:
            world.set_obstacle_poses({name: T}, stamp=stamp)
        else:
            world.set_obstacle_pose(name, T, stamp=stamp)

    return move


@pytest.mark.parametrize("batch", [False, True])
def test_a_stamp_earlier_than_the_last_one_is_refused_and_changes_nothing(batch):
    """A late sensor message (stamped before the newest one) moved the obstacle back in
    time and made the stale pose the series' reference; it is refused, naming the
    obstacle and both stamps, and the pose, velocity and series stay the newer one's."""
    world = _world(2)
    move = _mover(world, batch)
    P0 = pin.SE3.Random()
    P1 = P0 * pin.exp6(np.array([0.003, 0.0, 0.001, 0.0, 0.0, 0.02]))
    P2 = P1 * pin.exp6(np.array([0.002, -0.001, 0.0, 0.01, 0.0, 0.0]))
    move("o0", P0, 1.0)
    move("o0", P1, 1.01)
    before = world.state
    v1 = (P1.translation - P0.translation) / (1.01 - 1.0)
    np.testing.assert_array_equal(before.linear_velocity[0], v1)
    with pytest.raises(stackik.InvalidInput) as info:
        move("o0", P0, 1.0)  # (the 1.0 message again, late)
    assert str(info.value).startswith(
        "obstacle 'o0': stamp 1.0 is earlier than its last stamp 1.01"
    )
    assert info.value.what == "stamp" and info.value.value == 1.0
    assert world.state is before  # (nothing published)
    np.testing.assert_array_equal(world.get_obstacle_pose("o0").homogeneous, P1.homogeneous)
    v, w = world.get_obstacle_velocity("o0")
    np.testing.assert_array_equal(v, v1)
    np.testing.assert_array_equal(w, before.angular_velocity[0])
    with pytest.raises(stackik.InvalidInput, match=r"stamp 1\.0099999 is earlier .* 1\.01"):
        move("o0", P0, 1.0099999)  # (earlier by less than a microsecond: refused too)
    assert world.state is before
    # the series' reference is still P1 at 1.01: the next stamp differentiates against it
    move("o0", P2, 1.02)
    np.testing.assert_array_equal(
        world.state.linear_velocity[0], (P2.translation - P1.translation) / (1.02 - 1.01)
    )
    w12 = pin.log3(P2.rotation @ P1.rotation.T) / (1.02 - 1.01)
    np.testing.assert_allclose(world.state.angular_velocity[0], w12, rtol=1e-9, atol=1e-9)
    # an equal stamp replaces the pose (and the reference) and keeps the velocity
    s = world.state
    move("o0", P1, 1.02)
    np.testing.assert_array_equal(world.get_obstacle_pose("o0").homogeneous, P1.homogeneous)
    np.testing.assert_array_equal(world.state.linear_velocity[0], s.linear_velocity[0])
    move("o0", P2, 1.03)
    np.testing.assert_array_equal(
        world.state.linear_velocity[0], (P2.translation - P1.translation) / (1.03 - 1.02)
    )
    # a pose without a stamp ends the series: the next stamp may be any time (a new clock)
    move("o0", P0)
    move("o0", P1, 0.5)
    move("o0", P2, 0.51)
    np.testing.assert_array_equal(
        world.state.linear_velocity[0], (P2.translation - P1.translation) / (0.51 - 0.5)
    )


def test_a_batch_with_one_stale_stamp_is_refused_whole():
    """The batch is all or nothing: an obstacle whose stamp is fine (placed first in the
    batch) neither moves nor takes the stamp as its series' reference when another
    obstacle of the batch has a stale one."""
    world = _world(3)
    P = [pin.SE3.Random() for _ in range(3)]
    Q = [p * pin.exp6(np.array([0.001, 0.002, 0.0, 0.0, 0.01, 0.0])) for p in P]
    world.set_obstacle_poses({"o0": P[0], "o1": P[1]}, stamp=1.0)
    world.set_obstacle_pose("o1", Q[1], stamp=1.02)  # o1 is ahead of o0
    before = world.state
    with pytest.raises(stackik.InvalidInput) as info:
        world.set_obstacle_poses({"o0": Q[0], "o2": Q[2], "o1": P[1]}, stamp=1.01)
    assert "obstacle 'o1': stamp 1.01 is earlier than its last stamp 1.02" in str(info.value)
    assert world.state is before
    for k, T in enumerate((P[0], Q[1], before.pose("o2"))):
        np.testing.assert_array_equal(world.get_obstacle_pose(f"o{k}").homogeneous, T.homogeneous)
    # o0 and o2 kept their series: o0 differentiates against 1.0, o2 starts at 1.03
    world.set_obstacle_poses({"o0": Q[0], "o2": Q[2]}, stamp=1.03)
    np.testing.assert_array_equal(
        world.state.linear_velocity[0], (Q[0].translation - P[0].translation) / (1.03 - 1.0)
    )
    assert not world.state.velocity_known[2]  # (its first stamp)


_ULP = float(np.nextafter(1.0, 2.0))


@pytest.mark.parametrize("batch", [False, True])
@pytest.mark.parametrize(
    ("t0", "t1", "step", "speed"),
    [
        # 0.1 mm of pose noise over one ulp of the clock: 1e-4 / 2.2e-16 = 4.5e11 m/s
        (1.0, _ULP, [1e-4, 0.0, 0.0, 0.0, 0.0, 0.0], "4.5e+11 m/s, 0 rad/s"),
        # the smallest positive interval: the quotient overflows to inf
        (0.0, 5e-324, [-1e-4, 0.0, 0.0, 0.0, 0.0, 0.0], "inf m/s, 0 rad/s"),
        # a turn of 0.1 rad over 10 ns: 1e7 rad/s (the linear part alone is fine)
        (2.0, 2.0 + 1e-8, [0.0, 0.0, 0.0, 0.0, 0.0, 0.1], "0 m/s, 1e+07 rad/s"),
    ],
)
def test_a_velocity_estimate_beyond_the_bound_is_refused_naming_both_stamps(
    batch, t0, t1, step, speed
):
    """set_obstacle_velocity refuses a component beyond 1e6 (or not finite); the estimate
    from two stamps a hair apart skipped that check (4.5e11 m/s, or inf, reached the
    solver). It is refused the same way, naming the obstacle, both stamps and the speed,
    and nothing changes."""
    world = _world(2)
    move = _mover(world, batch)
    P0 = pin.SE3(pin.rpy.rpyToMatrix(0.1, 0.2, 0.3), np.array([0.5, -0.2, 0.4]))
    P1 = pin.SE3(pin.exp3(np.array(step[3:])) @ P0.rotation, P0.translation + step[:3])
    world.set_obstacle_velocity("o0", [0.1, 0.0, 0.0])  # (a given velocity, kept)
    move("o0", P0, t0)
    before = world.state
    with np.errstate(over="ignore"):  # what the estimate would be (inf: the 5e-324 case)
        v = (P1.translation - P0.translation) / (t1 - t0)
        w = pin.log3(P1.rotation @ P0.rotation.T) / (t1 - t0)
    assert not (np.abs(np.concatenate([v, w])) <= 1e6).all()
    with pytest.raises(stackik.InvalidInput) as info:
        move("o0", P1, t1)
    message = str(info.value)
    assert message.startswith(f"obstacle 'o0': the stamps {t0!r} and {t1!r} give a velocity of")
    assert speed in message  # (closed form: the step over the interval)
    assert info.value.what == "stamp"
    with pytest.raises(stackik.InvalidInput):  # (the check it now shares)
        world.set_obstacle_velocity("o0", v if np.isfinite(v).all() else [np.inf, 0, 0], w)
    assert world.state is before
    np.testing.assert_array_equal(world.get_obstacle_velocity("o0")[0], [0.1, 0.0, 0.0])
    np.testing.assert_array_equal(world.get_obstacle_pose("o0").homogeneous, P0.homogeneous)
    # the series kept P0 at t0 as its reference
    P2 = pin.SE3(P0.rotation, P0.translation + np.array([0.004, 0.0, 0.0]))
    move("o0", P2, t0 + 0.01)
    np.testing.assert_array_equal(
        world.get_obstacle_velocity("o0")[0],
        (P2.translation - P0.translation) / ((t0 + 0.01) - t0),
    )


@pytest.mark.parametrize("batch", [False, True])
def test_a_fast_estimate_within_the_bound_is_taken(batch):
    """The bound is set_obstacle_velocity's, no stricter: 0.5 m in 1 us is 5e5 m/s."""
    world = _world(1)
    move = _mover(world, batch)
    move("o0", np.eye(4), 0.25)
    T = np.eye(4)
    T[:3, 3] = [0.5, 0.0, -0.5]
    move("o0", T, 0.25 + 2.0**-20)  # (an exact interval: the quotient is exact too)
    np.testing.assert_array_equal(
        world.get_obstacle_velocity("o0")[0], [0.5 * 2.0**20, 0.0, -0.5 * 2.0**20]
    )


@pytest.mark.parametrize("batch", [False, True])
def test_a_stamped_series_at_constant_velocity_is_estimated_exactly(batch):
    """Constant velocity, closed form: p(t) = p0 + v t and R(t) = exp(w t) R0. With binary
    fractions for the stamps and the positions every difference is exact, so the linear
    estimate is v to the last bit at every stamp, irregular intervals included; the
    angular one is w to rounding."""
    world = _world(2)
    move = _mover(world, batch)
    v = np.array([0.25, -0.5, 0.125])  # [m/s]
    w = np.array([0.0, 0.0, 0.5])  # [rad/s]
    p0 = np.array([0.5, 0.25, 1.0])
    R0 = pin.rpy.rpyToMatrix(0.3, -0.2, 0.1)
    stamps = [1.0 + 2.0**-7 * n for n in (0, 1, 2, 4, 5, 8, 9, 10)]  # (irregular)
    for n, t in enumerate(stamps):
        move("o1", pin.SE3(pin.exp3(w * (t - 1.0)) @ R0, p0 + v * (t - 1.0)), t)
        lin, ang = world.get_obstacle_velocity("o1")
        if n == 0:
            assert not world.state.velocity_known[1]
            continue
        np.testing.assert_array_equal(lin, v)
        np.testing.assert_allclose(ang, w, rtol=0, atol=1e-12)
        assert world.state.velocity_known[1]
