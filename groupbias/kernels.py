"""Ranking kernels shared by the metrics: within-query orders, ranks and exposure.

All work on flat arrays with query offsets ``qptr`` and the item-to-query index ``qidx``
(:func:`groupbias.segments.query_index`); inputs are trusted (validated by the public metric
functions that call them).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "discount_table",
    "sorted_ranks",
    "max_list_size",
    "group_by_query",
    "order_desc",
    "block_mean",
    "tie_average_exposure",
    "item_exposure",
    "nanmean",
]


def discount_table(max_len: int, k: int | None) -> np.ndarray:
    """``table[r - 1] = 1 / log2(1 + r)`` for ``r = 1..max_len``, 0 beyond ``k``."""
    r = np.arange(1, max_len + 1, dtype=np.float64)
    table = 1.0 / np.log2(1.0 + r)
    if k is not None:
        table[k:] = 0.0
    return table


def sorted_ranks(qptr: np.ndarray, qidx: np.ndarray) -> np.ndarray:
    """1-based rank of every slot of a within-query sorted order (queries contiguous)."""
    return np.arange(qidx.size, dtype=np.int64) - qptr[qidx] + 1


def max_list_size(qptr: np.ndarray) -> int:
    return int(np.max(np.diff(qptr))) if qptr.size > 1 else 0


def group_by_query(order: np.ndarray, qidx: np.ndarray) -> np.ndarray:
    """Stable reordering of ``order`` by query: LSD radix passes over 16-bit digits of the
    query index (numpy's stable sort is a radix sort for 16-bit keys)."""
    n_queries = int(qidx[-1]) + 1 if qidx.size else 0
    if n_queries <= 1 << 16:
        return order[np.argsort(qidx.astype(np.uint16)[order], kind="stable")]
    qo = qidx[order]
    if n_queries <= 1 << 32:
        p = np.argsort((qo & 0xFFFF).astype(np.uint16), kind="stable")
        p = p[np.argsort((qo[p] >> 16).astype(np.uint16), kind="stable")]
        return order[p]
    return order[np.argsort(qo, kind="stable")]


def order_desc(key: np.ndarray, qidx: np.ndarray, *, stable: bool) -> np.ndarray:
    """Within-query order by ``key`` descending (equal to ``segments.sort_within``).

    One global sort of the keys, then a stable radix pass that groups items by query. With
    ``stable=False`` the order among tied keys is unspecified (enough wherever tied items
    share their exposure); with ``stable=True`` ties keep their original order.
    """
    neg = -key
    order = np.argsort(neg)
    if stable and order.size > 1:
        sv = neg[order]
        if np.any(sv[1:] == sv[:-1]):
            order = np.argsort(neg, kind="stable")
    return group_by_query(order, qidx)


def block_mean(values_sorted: np.ndarray, keys_sorted: np.ndarray, qidx: np.ndarray) -> np.ndarray:
    """Replace every value by the mean over its block of equal consecutive keys within a
    query (arrays in within-query sorted order)."""
    n = values_sorted.size
    if n == 0:
        return values_sorted
    start = np.empty(n, dtype=bool)
    start[0] = True
    start[1:] = (keys_sorted[1:] != keys_sorted[:-1]) | (qidx[1:] != qidx[:-1])
    if start.all():
        return values_sorted
    block = np.cumsum(start) - 1
    sums = np.bincount(block, weights=values_sorted)
    counts = np.bincount(block)
    return (sums / counts)[block]


_MAX_CODES = 1024


def _small_codes(key: np.ndarray):
    """Integer codes ``key - min`` when all keys are integers spanning < 1024 values."""
    if key.size == 0:
        return None, 0
    lo, hi = key.min(), key.max()
    if hi - lo >= _MAX_CODES:
        return None, 0
    shifted = key - lo
    codes = shifted.astype(np.int64)
    if not np.array_equal(codes, shifted):
        return None, 0
    return codes, int(hi - lo) + 1


def tie_average_exposure(
    key: np.ndarray, qptr: np.ndarray, qidx: np.ndarray, k: int | None
) -> np.ndarray:
    """Per-item exposure of the ranking by ``key`` (descending) with every tie block
    sharing the mean exposure of its ranks: ``eps_i = (C(a + c) - C(a)) / c`` where ``a``
    items of the query rank above the block, ``c`` is the block size and ``C`` the prefix
    sum of the position exposures."""
    n = key.size
    table = discount_table(max_list_size(qptr), k)
    n_queries = qptr.size - 1
    codes, n_codes = _small_codes(key)
    if codes is not None and n_queries * n_codes <= 4 * n + 1024:
        cell = qidx * n_codes + codes
        counts = np.bincount(cell, minlength=n_queries * n_codes).reshape(n_queries, n_codes)
        at_least = np.cumsum(counts[:, ::-1], axis=1)[:, ::-1]
        above = at_least - counts
        prefix = np.concatenate([[0.0], np.cumsum(table)])
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = (prefix[above + counts] - prefix[above]) / counts
        return mean.ravel()[cell]
    order = order_desc(key, qidx, stable=False)
    exp_sorted = table[sorted_ranks(qptr, qidx) - 1] if n else np.zeros(0)
    exp_sorted = block_mean(exp_sorted, key[order], qidx)
    out = np.empty(n, dtype=np.float64)
    out[order] = exp_sorted
    return out


def item_exposure(
    scores: np.ndarray, qptr: np.ndarray, qidx: np.ndarray, k: int | None, ties: str
) -> np.ndarray:
    """Per-item exposure of the ranking by ``scores`` with ``ties`` "average" or
    "stable"."""
    if ties == "average":
        return tie_average_exposure(scores, qptr, qidx, k)
    order = order_desc(scores, qidx, stable=True)
    out = np.empty(scores.size, dtype=np.float64)
    if scores.size:
        out[order] = discount_table(max_list_size(qptr), k)[sorted_ranks(qptr, qidx) - 1]
    return out


def nanmean(values: np.ndarray) -> float:
    ok = ~np.isnan(values)
    return float(values[ok].mean()) if ok.any() else float("nan")
