"""The short-vector fast paths of ``stackik._validate`` accept exactly what the NumPy
checks accept, and every rejection still names its entries."""

from __future__ import annotations

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
