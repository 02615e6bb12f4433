"""The ``k`` largest stored entries of every row of a CSR matrix (the top k of a batched
search), largest first, ties by the smaller column.

The numpy path, vectorized over rows: rows longer than ``k`` are grouped by length into
padded blocks (:func:`~groupbias._fast.rows.padded_blocks`) and one ``np.partition`` per
block gives every row's k-th largest value; the entries at or above it (k per row, more
where the k-th value is tied) are the only ones sorted. Rows with no entry above ``k``, a
``k`` of None, and values that are not floats or hold NaN (whose order the partition does
not define) take one sort of all entries; both give the same output. From
:data:`LOOPS_MIN_ITEMS` entries (backend ``auto``) float rows without NaN go to the compiled
loop of :mod:`groupbias._fast.topk_loops` instead (the same per-row partition and sort, rows
split between threads), which gives the same output again. :func:`product_top_k` (the
top k of a batched search ``queries @ weights``) sums every row of the product in a dense
accumulator in that loop and selects from it at once, the product never stored.
"""

from __future__ import annotations

import numpy as np

from .backend import compiled
from .rows import loop_rows, padded_blocks

__all__ = ["LOOPS_MIN_ITEMS", "product_top_k", "top_k_rows"]

#: entries from which the compiled loop serves a call under backend "auto"
LOOPS_MIN_ITEMS = 1 << 14


def top_k_rows(
    indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, k: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(qptr, columns, values)`` of the ``k`` largest entries of every row of the CSR
    arrays (no duplicate entries), largest first, ties by the smaller column; ``k`` None:
    every entry. ``qptr`` and ``columns`` int64, ``values`` of ``data``'s dtype."""
    indptr = np.asarray(indptr, dtype=np.int64)
    n_rows = indptr.size - 1
    sizes = np.diff(indptr)
    loops = compiled("topk_loops", int(indptr[-1]), LOOPS_MIN_ITEMS)
    if loops is not None and _partitionable(data):
        return _loop_top_k(loops, indptr, indices, data, k, sizes)
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


def product_top_k(a, b, k: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`top_k_rows` of the product ``a @ b`` of two scipy CSR matrices (as scipy
    computes it). Where the compiled loop serves (float64, ``k`` given) the product is
    not stored: every row is summed into a dense accumulator (in scipy's order, zero sums
    dropped, so the same values) and its top ``k`` taken at once, rows split between
    threads; else the numpy passes on ``a @ b``."""
    n_rows = a.shape[0]
    rows = np.repeat(np.arange(n_rows), np.diff(a.indptr))
    postings = np.diff(b.indptr)[a.indices]  # an upper bound of every row's entries
    bound = np.bincount(rows, weights=postings, minlength=n_rows).astype(np.int64)
    size = int(bound.sum())
    loops = compiled("topk_loops", size, LOOPS_MIN_ITEMS)
    if k is None or loops is None or not (a.dtype == b.dtype == np.float64) or not size:
        m = a @ b  # a product of CSR matrices: no duplicate entries
        return top_k_rows(m.indptr, m.indices, m.data, k)
    bound = np.minimum(bound, k).astype(np.int64)
    starts = np.concatenate(([0], np.cumsum(bound)[:-1])).astype(np.int64)
    cols = np.empty(int(bound.sum()), dtype=np.int64)
    vals = np.empty(int(bound.sum()))
    counts = np.zeros(n_rows, dtype=np.int64)
    args = (a.indptr, a.indices, a.data, b.indptr, b.indices, b.data, k, starts, cols, vals)

    def task(r0: int, r1: int) -> bool:
        return loops.product_top_k(*args, counts, r0, r1, b.shape[1])

    if not all(loop_rows(n_rows, size, task, bound)):
        m = a @ b
        return top_k_rows(m.indptr, m.indices, m.data, k)
    keep = np.arange(cols.size) - np.repeat(starts, bound) < np.repeat(counts, bound)
    qptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return qptr, cols[keep], vals[keep]


def _loop_top_k(loops, indptr, indices, data, k, sizes):
    width = int(sizes.max(initial=0)) if k is None else k
    counts = np.minimum(sizes, width)
    qptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    cols = np.empty(int(qptr[-1]), dtype=np.int64)
    vals = np.empty(int(qptr[-1]), dtype=data.dtype)
    data, indices = np.ascontiguousarray(data), np.ascontiguousarray(indices)

    def task(r0: int, r1: int) -> None:
        loops.top_k(indptr, indices, data, width, qptr, cols, vals, r0, r1)

    loop_rows(sizes.size, int(indptr[-1]), task, sizes)
    return qptr, cols, vals


def _partitionable(data: np.ndarray) -> bool:
    return data.dtype.kind == "f" and not np.isnan(data).any()
