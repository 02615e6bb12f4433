"""Per-query feature normalization (z-score within each query), vectorized over all queries."""

from __future__ import annotations

import numpy as np

from ..core.errors import ParameterError
from ..core.validation import check_qptr

_BLOCK = 32


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
    out = np.zeros(x.shape, dtype=np.float32)
    sizes = np.diff(qptr)
    nonempty = sizes > 0
    if not nonempty.any():
        return out
    starts = qptr[:-1][nonempty]
    n = sizes[nonempty].astype(np.float64)[:, None]
    seg = np.repeat(np.arange(starts.size), sizes[nonempty])
    # column blocks bound the float64 working memory on large data sets
    for c0 in range(0, x.shape[1], _BLOCK):
        x64 = x[:, c0 : c0 + _BLOCK].astype(np.float64)
        if not np.all(np.isfinite(x64)):
            raise ParameterError(
                "features",
                "finite values",
                "an array with nan or inf",
                fix="impute or drop missing feature values before normalizing",
            )
        mean = np.add.reduceat(x64, starts, axis=0) / n
        centered = x64 - mean[seg]
        std = np.sqrt(np.add.reduceat(centered * centered, starts, axis=0) / n)
        constant = np.maximum.reduceat(x64, starts, axis=0) == np.minimum.reduceat(
            x64, starts, axis=0
        )
        inv = np.where(constant, 0.0, 1.0 / np.where(constant, 1.0, std))
        out[:, c0 : c0 + _BLOCK] = centered * inv[seg]
    return out
