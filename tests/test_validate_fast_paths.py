"""The short-vector fast paths of ``stackik._validate`` accept exactly what the NumPy
checks accept, and every rejection still names its entries."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from stackik import _validate
from stackik.errors import InvalidInput, NonFiniteInput

BAD = (np.nan, np.inf, -np.inf)


@pytest.mark.parametrize("n", [1, 7, 37, 64, 65, 200])
def test_a_non_finite_entry_anywhere_is_named(n):
    rng = np.random.default_rng(n)
    for bad in BAD:
        for k in sorted({0, n // 2, n - 1}):
            x = rng.uniform(-5.0, 5.0, n)
            x[k] = bad
            assert not _validate.all_finite(x)
            assert _validate.all_finite(x) == bool(np.isfinite(x).all())
            with pytest.raises(NonFiniteInput) as err:
                _validate.vector(x, n, "x")
            assert str(k) in str(err.value)
            with pytest.raises(NonFiniteInput):
                _validate.floats(x.reshape(1, n), (1, None), "x")
            with pytest.raises((NonFiniteInput, InvalidInput)):
                _validate.bounded_vector(x, n, _validate.MAX_MAGNITUDE, "x")


def test_entries_whose_sum_overflows_are_finite():
    x = np.array([1e308, 1e308, -1e308])  # the sum overflows; every entry is finite
    assert _validate.all_finite(x)
    assert _validate.vector(x, 3, "x") is x
    with pytest.raises(InvalidInput):  # beyond MAX_MAGNITUDE, named by the slow path
        _validate.bounded_vector(x, 3, _validate.MAX_MAGNITUDE, "x")


def test_finite_vectors_pass_unchanged():
    rng = np.random.default_rng(0)
    for n in (0, 1, 7, 64, 65, 500):
        x = rng.uniform(-1e6, 1e6, n)
        assert _validate.all_finite(x)
        assert _validate.vector(x, n, "x") is x
        assert _validate.bounded_vector(x, n, _validate.MAX_MAGNITUDE, "x") is x
    edge = np.array([_validate.MAX_MAGNITUDE, -_validate.MAX_MAGNITUDE])
    assert _validate.bounded_vector(edge, 2, _validate.MAX_MAGNITUDE, "x") is edge
    beyond = np.nextafter(edge, np.inf * edge)
    with pytest.raises(InvalidInput):
        _validate.bounded_vector(beyond, 2, _validate.MAX_MAGNITUDE, "x")


@pytest.mark.parametrize("n", [1, 7, 38, 200])
def test_the_norm_pass_accepts_exactly_the_bounded_finite_vectors(n):
    """A vector whose norm is within the bound passes at once; one entry just past the
    bound, or not finite, still fails with its name, also under an infinite bound, and
    huge entries raise no overflow warning."""
    rng = np.random.default_rng(n)
    limit = 2.5
    x = rng.uniform(-1.0, 1.0, n) * (limit / np.sqrt(n))
    assert np.linalg.norm(x) <= limit
    assert _validate.bounded_vector(x, n, limit, "x") is x
    for k in sorted({0, n - 1}):
        beyond = x.copy()
        beyond[k] = np.nextafter(limit, np.inf) * (-1.0 if k else 1.0)
        with pytest.raises(InvalidInput, match="x"):
            _validate.bounded_vector(beyond, n, limit, "x")
        for bad in BAD:
            y = x.copy()
            y[k] = bad
            with pytest.raises(NonFiniteInput):
                _validate.bounded_vector(y, n, limit, "x")
            with pytest.raises(NonFiniteInput):
                _validate.bounded_vector(y, n, np.inf, "x")
    crowded = np.full(n, 0.9 * limit)  # every entry within the bound, its norm beyond (n > 1)
    assert _validate.bounded_vector(crowded, n, limit, "x") is crowded
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (a NumPy overflow warning would fail here)
        with pytest.raises(InvalidInput):
            _validate.bounded_vector(np.full(n, 1e300), n, limit, "x")
