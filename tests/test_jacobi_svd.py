"""The SNS kernels' one-sided Jacobi SVD on columns of very different scales.

A rotation whose ``zeta`` exceeds 1e150 (a column of 1e-160 beside one of 1) would
square it past float64: the compiled kernel got ``t = 0`` from the infinity, the plain
Python one (the first solves of a process) printed NumPy's overflow warning. Checked
against NumPy's SVD, in both forms, with warnings as errors.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from stackik.sns import linalg


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize(
    "B",
    [
        np.array([[1e-160, 1.0], [0.0, 0.0]]),
        np.array([[1e-160, 1.0, 0.0], [0.0, 1e-3, 2.0], [0.0, 0.0, 1e-170]]),
        np.array([[1.0, 1e-158], [1e-158, 1e-200]]),
    ],
)
def test_jacobi_svd_of_columns_of_very_different_scales(B, compiled):
    svd = linalg.jacobi_svd
    if not compiled:  # (the plain Python function behind the compiled kernel)
        svd = getattr(svd, "py_func", svd)
    k = B.shape[0]
    U, s, V = np.zeros((k, k)), np.zeros(k), np.zeros((k, k))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        svd(np.ascontiguousarray(B), k, U, s, V)
    assert np.all(np.isfinite(U)) and np.all(np.isfinite(s)) and np.all(np.isfinite(V))
    np.testing.assert_allclose(V.T @ V, np.eye(k), atol=1e-14)
    np.testing.assert_allclose(U @ np.diag(s) @ V.T, B, atol=1e-15 * np.abs(B).max())
    np.testing.assert_allclose(
        np.sort(s)[::-1], np.linalg.svd(B, compute_uv=False), rtol=1e-12, atol=1e-15 * s.max()
    )
