"""groupbias._fast.zscore: the compiled per-query z-score (threads on large inputs) and the
numpy passes agree within the contract (1e-6 relative on float32 outputs)."""

from __future__ import annotations

import numpy as np
import pytest

from groupbias._fast import use_backend
from groupbias._fast.zscore import zscore_rows

pytestmark = pytest.mark.reproducibility


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_paths_agree_on_a_large_input(dtype):
    rng = np.random.default_rng(3)
    sizes = rng.integers(0, 90, 3000)  # empty and single-item queries among them
    qptr = np.concatenate([[0], np.cumsum(sizes)])
    x = (rng.standard_normal((int(qptr[-1]), 9)) * [1, 10, 1e3, 1e-3, 1, 1, 5, 1, 2]).astype(dtype)
    x[:, 4] = 2.5  # constant everywhere
    x[: qptr[10], 7] = rng.integers(0, 3, int(qptr[10]))  # a few grades
    with use_backend("numpy"):
        ref = zscore_rows(x, qptr)
    with use_backend("numba"):  # 130k+ values: split between threads
        got = zscore_rows(x, qptr)
    assert ref is not None and got is not None and got.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)
    assert not got[:, 4].any()
    # same path, same bits
    with use_backend("numba"):
        again = zscore_rows(x, qptr)
    assert again is not None and again.tobytes() == got.tobytes()


@pytest.mark.parametrize("path", ["numpy", "numba"])
def test_a_non_finite_value_anywhere_is_reported(path):
    x = np.ones((300_000, 2), dtype=np.float32)
    qptr = np.arange(0, 300_001, 100)
    x[-1, 1] = np.inf  # the last query, on the last thread's share
    with use_backend(path):
        assert zscore_rows(x, qptr) is None


@pytest.mark.parametrize("path", ["numpy", "numba"])
def test_written_over_its_input_the_same_bits(path):
    """``out=x``: every query's rows are read before they are written, so the z-score written
    over the input equals the one written elsewhere, bit for bit, on either path."""
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 60, 4000)
    qptr = np.concatenate([[0], np.cumsum(sizes)])
    x = rng.standard_normal((int(qptr[-1]), 7)).astype(np.float32) * 3 + 1
    with use_backend(path):
        ref = zscore_rows(x, qptr)
        got = zscore_rows(x, qptr, out=x)
    assert ref is not None and got is x
    assert got.tobytes() == ref.tobytes()
