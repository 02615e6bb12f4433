"""Compiled loop of the per-query z-score (numba; loaded only through
:func:`groupbias._fast.zscore.zscore_rows`): every query's rows are read three times while
they sit in the cache (sums and extremes, squared deviations, output), so the whole matrix
crosses memory once in and once out.

The statistics are the numpy path's: float64 sums in item order, the mean as ``sum / n``,
the population standard deviation of the centred values, 0 where a feature is constant in
the query; the output is ``(x - mean) / std`` rounded to float32.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["zscore_queries"]


@numba.njit(nogil=True, cache=True)
def zscore_queries(x, qptr, q0, q1, out):
    """Rows of the queries ``q0 .. q1 - 1`` of ``x`` [n, f] (float32 or float64, C order)
    standardized into ``out`` [n, f] float32; returns False (and stops) at a non-finite
    value."""
    f = x.shape[1]
    total = np.empty(f)
    dev = np.empty(f)
    lo = np.empty(f)
    hi = np.empty(f)
    inv = np.empty(f)
    for q in range(q0, q1):
        s, e = qptr[q], qptr[q + 1]
        if e <= s:
            continue
        n = np.float64(e - s)
        total[:] = 0.0
        dev[:] = 0.0
        lo[:] = np.inf
        hi[:] = -np.inf
        for i in range(s, e):
            for j in range(f):
                v = np.float64(x[i, j])
                if not np.isfinite(v):
                    return False
                total[j] += v
                lo[j] = min(lo[j], v)
                hi[j] = max(hi[j], v)
        for j in range(f):
            total[j] /= n  # the mean
        for i in range(s, e):
            for j in range(f):
                d = np.float64(x[i, j]) - total[j]
                dev[j] += d * d
        for j in range(f):
            inv[j] = 0.0 if lo[j] == hi[j] else 1.0 / np.sqrt(dev[j] / n)
        for i in range(s, e):
            for j in range(f):
                out[i, j] = np.float32((np.float64(x[i, j]) - total[j]) * inv[j])
    return True
