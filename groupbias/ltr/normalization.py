"""Per-query feature normalization (z-score within each query), vectorized over all queries."""

from __future__ import annotations

from typing import NoReturn

import numpy as np

from .._fast.zscore import zscore_rows
from ..core.errors import ParameterError
from ..core.validation import check_qptr

#: rows per block of the finiteness check that precedes an in-place z-score
_CHECK_ROWS = 1 << 16


def zscore_within_queries(
    features: np.ndarray, *, qptr: np.ndarray, in_place: bool = False
) -> np.ndarray:
    """Standardize every feature within every query: ``(x - mean_q) / std_q``.

    ``mean_q`` and ``std_q`` (population standard deviation, ddof 0) are taken over the items
    of query ``q``. A feature that is constant within a query (max == min, which includes
    single-item queries) becomes 0 there. Input ``[n_items, f]`` (any float dtype, not
    modified); output float32 ``[n_items, f]``. Statistics are accumulated in float64.
    ``in_place=True`` writes the result over ``features`` when they are float32, C order and
    writeable (no second matrix in memory; the caller must not need the raw values again),
    and returns them; other inputs are copied as without it. The values are the same.
    """
    x = np.asarray(features)
    if x.ndim != 2:
        raise ParameterError("features", "a 2-D array [n_items, n_features]", x.shape)
    qptr = check_qptr(qptr, x.shape[0])
    out = None
    if in_place and x.dtype == np.float32 and x.flags.c_contiguous and x.flags.writeable:
        # checked first: a failure half-way would leave the matrix half standardized
        for s in range(0, x.shape[0], _CHECK_ROWS):
            if not np.isfinite(x[s : s + _CHECK_ROWS]).all():
                _not_finite()
        out = x
    res = zscore_rows(x, qptr, out)
    if res is None:
        _not_finite()
    return res


def _not_finite() -> NoReturn:
    raise ParameterError(
        "features",
        "finite values",
        "an array with nan or inf",
        fix="impute or drop missing feature values before normalizing",
    )
