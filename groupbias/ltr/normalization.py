"""Per-query feature normalization (z-score within each query), vectorized over all queries."""

from __future__ import annotations

import numpy as np

from .._fast.zscore import zscore_rows
from ..core.errors import ParameterError
from ..core.validation import check_qptr


def zscore_within_queries(features: np.ndarray, *, qptr: np.ndarray) -> np.ndarray:
    """Standardize every feature within every query: ``(x - mean_q) / std_q``.

    ``mean_q`` and ``std_q`` (population standard deviation, ddof 0) are taken over the items
    of query ``q``. A feature that is constant within a query (max == min, which includes
    single-item queries) becomes 0 there. Input ``[n_items, f]`` (any float dtype, not
    modified); output float32 ``[n_items, f]``. Statistics are accumulated in float64.
    """
    x = np.asarray(features)
    if x.ndim != 2:
        raise ParameterError("features", "a 2-D array [n_items, n_features]", x.shape)
    qptr = check_qptr(qptr, x.shape[0])
    out = zscore_rows(x, qptr)
    if out is None:
        raise ParameterError(
            "features",
            "finite values",
            "an array with nan or inf",
            fix="impute or drop missing feature values before normalizing",
        )
    return out
