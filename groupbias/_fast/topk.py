"""The ``k`` largest stored entries of every row of a CSR matrix (the top k of a batched
search), largest first, ties by the smaller column.

The numpy path, vectorized over rows: rows longer than ``k`` are grouped by length into
padded blocks (:func:`~groupbias._fast.rows.padded_blocks`) and one ``np.partition`` per
block gives every row's k-th largest value; the entries at or above it (k per row, more
where the k-th value is tied) are the only ones sorted. Rows with no entry above ``k``, a
``k`` of None, and values that are not floats or hold NaN (whose order the partition does
not define) take one sort of all entries; both give the same output.
"""

from __future__ import annotations

import numpy as np

from .rows import padded_blocks

__all__ = ["top_k_rows"]


def top_k_rows(
    indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, k: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(qptr, columns, values)`` of the ``k`` largest entries of every row of the CSR
    arrays (no duplicate entries), largest first, ties by the smaller column; ``k`` None:
    every entry. ``qptr`` and ``columns`` int64, ``values`` of ``data``'s dtype."""
    indptr = np.asarray(indptr, dtype=np.int64)
    n_rows = indptr.size - 1
    sizes = np.diff(indptr)
    rows = np.repeat(np.arange(n_rows, dtype=np.int64), sizes)
    cols, vals = indices, data
    if k is not None and 0 < k < int(sizes.max(initial=0)) and _partitionable(data):
        thresholds = np.full(n_rows, -np.inf)
        for block in padded_blocks(indptr):
            if block.width > k:
                padded = block.padded(data, -np.inf)
                kth = block.width - k
                thresholds[block.rows] = np.partition(padded, kth, axis=1)[:, kth]
        keep = np.flatnonzero(data >= thresholds[rows])
        rows, cols, vals = rows[keep], indices[keep], data[keep]
    order = np.lexsort((cols, -vals, rows))
    rows, cols, vals = rows[order], cols[order].astype(np.int64), vals[order]
    counts = np.bincount(rows, minlength=n_rows)
    if k is not None:
        starts = np.cumsum(counts) - counts
        first = np.arange(rows.size) - np.repeat(starts, counts) < k
        rows, cols, vals = rows[first], cols[first], vals[first]
        counts = np.minimum(counts, k)
    qptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return qptr, cols, vals


def _partitionable(data: np.ndarray) -> bool:
    return data.dtype.kind == "f" and not np.isnan(data).any()
