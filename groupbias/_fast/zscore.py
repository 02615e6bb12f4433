"""Per-query z-score of a feature matrix: ``(x - mean_q) / std_q`` per feature and query.

numpy: per-query sums by ``np.add.reduceat`` over bands of columns (the float64 working
copy of one band at a time); compiled: one pass per query (:mod:`.zscore_loops`), queries
split between threads on large inputs. Both accumulate in float64 in item order and agree
within the float32 rounding of the output (the contract of ``docs/reliability.md``).
"""

from __future__ import annotations

import numpy as np

from .backend import compiled
from .rows import loop_rows

__all__ = ["zscore_rows"]

#: feature values (items x features) from which the compiled loop serves under "auto"
LOOPS_MIN_VALUES = 1 << 18
#: columns of one float64 band of the numpy path
_BAND = 32


def zscore_rows(
    x: np.ndarray, qptr: np.ndarray, out: np.ndarray | None = None
) -> np.ndarray | None:
    """``x`` [n, f] (float32 or float64) standardized within every query of ``qptr``, as
    float32 (a feature constant in a query, single-item queries included, becomes 0); None
    when ``x`` holds a non-finite value. ``out``: a float32 C-order [n, f] array to write
    into, ``x`` itself included (every query's rows are read before they are written);
    after a None it may hold some queries standardized."""
    if out is None:
        out = np.zeros(x.shape, dtype=np.float32)
    elif out is not x:
        out[...] = 0.0
    sizes = np.diff(qptr)
    if not (sizes > 0).any() or x.shape[1] == 0:
        return out if np.isfinite(x).all() else None
    loops = compiled("zscore_loops", x.size, LOOPS_MIN_VALUES)
    if loops is not None:
        x = np.ascontiguousarray(x if x.dtype in (np.float32, np.float64) else x.astype(np.float64))

        def task(q0: int, q1: int) -> bool:
            return loops.zscore_queries(x, qptr, q0, q1, out)

        return out if all(loop_rows(sizes.size, x.size, task, sizes)) else None
    nonempty = sizes > 0
    starts = qptr[:-1][nonempty]
    n = sizes[nonempty].astype(np.float64)[:, None]
    seg = np.repeat(np.arange(starts.size), sizes[nonempty])
    for c0 in range(0, x.shape[1], _BAND):
        x64 = x[:, c0 : c0 + _BAND].astype(np.float64)
        if not np.isfinite(x64).all():
            return None
        mean = np.add.reduceat(x64, starts, axis=0) / n
        centered = x64 - mean[seg]
        std = np.sqrt(np.add.reduceat(centered * centered, starts, axis=0) / n)
        constant = np.maximum.reduceat(x64, starts, axis=0) == np.minimum.reduceat(
            x64, starts, axis=0
        )
        inv = np.where(constant, 0.0, 1.0 / np.where(constant, 1.0, std))
        out[:, c0 : c0 + _BAND] = centered * inv[seg]
    return out
