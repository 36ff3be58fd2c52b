"""Seed 003's joint callback under hostile input: a typed error or a finite output.

Each input key is fed infinities, 1e300, NaN and wrong types; limits inverted; a start
outside the limits; input that is not a dict. The callback either raises a
``StackIKError`` naming the key, or returns finite numbers: never a non-finite position
or velocity, never a bare ``AttributeError``/``TypeError``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import stackik
from stackik.errors import InvalidBounds, InvalidInput, NotWithinLimits, StackIKError

BASE = {
    "pos": 0.2,
    "vel": 0.0,
    "targetPos": 1.0,
    "maxVel": 1.0,
    "maxAccel": 2.0,
    "maxJerk": 20.0,
    "dt": 0.01,
    "lowLimit": -2.0,
    "highLimit": 2.0,
}
_handles = itertools.count()


def call(**changes: object) -> dict:
    data = {**BASE, "handle": f"test-{next(_handles)}", **changes}
    return stackik.joint_callback({k: v for k, v in data.items() if v is not ...})


def assert_finite(out: dict) -> None:
    assert math.isfinite(out["pos"]) and math.isfinite(out["vel"]), out
    assert isinstance(out["immobile"], bool)


@pytest.mark.parametrize("key", ["pos", "vel", "targetPos", "targetVel"])
@pytest.mark.parametrize("value", [math.inf, -math.inf, 1e300, -1e300, 1e7, math.nan])
def test_states_and_targets_beyond_the_range_are_refused(key, value):
    with pytest.raises(InvalidInput) as exc:
        call(**{key: value})
    assert key in str(exc.value)
    assert exc.value.what == key


@pytest.mark.parametrize("key", ["lowLimit", "highLimit"])
@pytest.mark.parametrize("value", [1e300, -1e300, math.nan, "abc", 1 + 1j])
def test_position_limits_beyond_the_range_are_refused(key, value):
    with pytest.raises(InvalidInput) as exc:
        call(**{key: value})
    assert key in str(exc.value)


def test_infinite_limits_mean_none_and_the_output_is_finite():
    out = call(lowLimit=-math.inf, highLimit=math.inf, targetPos=1e6)
    assert_finite(out)
    assert out["vel"] > 0  # on its way to the far target
    # Without limit keys at all, the same.
    assert call(lowLimit=..., highLimit=..., targetPos=1e6) == out


def test_inverted_limits_are_refused():
    with pytest.raises(InvalidBounds, match="lowLimit"):
        call(lowLimit=1.0, highLimit=-1.0, pos=0.0)


@pytest.mark.parametrize("pos", [2.5, -2.0000001, 1e6])
def test_a_start_outside_the_limits_is_refused(pos):
    with pytest.raises(NotWithinLimits) as exc:
        call(pos=pos)
    assert exc.value.value == pos
    assert (exc.value.lower, exc.value.upper) == (-2.0, 2.0)


def test_a_start_on_a_limit_is_inside():
    assert_finite(call(pos=2.0, targetPos=0.0))
    assert_finite(call(pos=-2.0, targetPos=0.0))


@pytest.mark.parametrize("bad", [5, None, "pos", [("pos", 0.0)], 1.5, object()])
def test_input_that_is_not_a_dict_is_refused(bad):
    with pytest.raises(InvalidInput, match="in_data must be a dict"):
        stackik.joint_callback(bad)


@pytest.mark.parametrize("key", ["cyclic", "first"])
@pytest.mark.parametrize("value", ["false", math.nan, 2, [0]])
def test_flags_are_bools(key, value):
    with pytest.raises(InvalidInput, match=key):
        call(**{key: value})


def test_an_unhashable_handle_is_refused():
    with pytest.raises(InvalidInput, match="handle"):
        stackik.joint_callback({**BASE, "handle": [1, 2]})


def test_a_state_beyond_the_velocity_limit_brakes_finitely():
    """A reported velocity far beyond maxVel (the limits were lowered): it brakes."""
    handle = "brake"
    state = {"pos": 0.0, "vel": 50.0}
    speeds = []
    for k in range(400):
        out = stackik.joint_callback(
            {**BASE, **state, "handle": handle, "first": k == 0, "lowLimit": -1e6,
             "highLimit": 1e6, "targetPos": 0.0, "maxAccel": 100.0, "maxJerk": 1000.0}
        )  # fmt: skip
        assert_finite(out)
        speeds.append(abs(out["vel"]))
        state = {"pos": out["pos"], "vel": out["vel"]}
    assert speeds[0] < 50.0  # slower at once
    assert max(speeds[200:]) <= 1.0 + 1e-9  # within the limit once braked


def test_random_hostile_inputs_give_a_typed_error_or_finite_numbers():
    rng = np.random.default_rng(5)
    pool = [0.0, 0.5, -0.5, 1.0, 2.0, -2.0, 1e6, -1e6, 1e300, math.inf, -math.inf, math.nan,
            "1", None, True, 3 + 0j]  # fmt: skip
    keys = ["pos", "vel", "targetPos", "targetVel", "maxVel", "maxAccel", "maxJerk", "dt",
            "lowLimit", "highLimit"]  # fmt: skip
    outcomes = {"error": 0, "finite": 0}
    for trial in range(3000):
        data = dict(BASE, handle=trial % 7)
        for key in rng.choice(keys, size=int(rng.integers(1, 4)), replace=False):
            data[str(key)] = pool[int(rng.integers(len(pool)))]
        try:
            out = stackik.joint_callback(data)
        except StackIKError:
            outcomes["error"] += 1
            continue
        assert_finite(out)
        lo, hi = data["lowLimit"], data["highLimit"]
        if isinstance(lo, float) and isinstance(hi, float) and abs(float(data["vel"])) < 1e-12:
            # From rest inside the limits the output stays inside them.
            assert lo - 1e-9 <= out["pos"] <= hi + 1e-9, (data, out)
        outcomes["finite"] += 1
    assert outcomes["error"] > 500 and outcomes["finite"] > 500, outcomes
