"""Ranking kernels shared by the metrics: within-query orders, ranks and exposure.

All work on flat arrays with query offsets ``qptr`` and the item-to-query index ``qidx``
(:func:`groupbias.core.segments.query_index`); inputs are trusted (validated by the public metric
functions that call them).
"""

from __future__ import annotations

import numpy as np

from ..rank.ranking import Ranking, log_discount

__all__ = [
    "discount_table",
    "sorted_ranks",
    "max_list_size",
    "tie_average_exposure",
    "item_exposure",
]


#: ``table[r - 1] = 1 / log2(1 + r)`` for ``r = 1..max_len``, 0 beyond ``k``
discount_table = log_discount


def sorted_ranks(qptr: np.ndarray, qidx: np.ndarray) -> np.ndarray:
    """1-based rank of every slot of a within-query sorted order (queries contiguous)."""
    return np.arange(qidx.size, dtype=np.int64) - qptr[qidx] + 1


def max_list_size(qptr: np.ndarray) -> int:
    return int(np.max(np.diff(qptr))) if qptr.size > 1 else 0


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
    key: np.ndarray, qptr: np.ndarray, qidx: np.ndarray, k: int | None, offset: int = 1
) -> np.ndarray:
    """Per-item exposure of the ranking by ``key`` (descending) with every tie block
    sharing the mean exposure of its ranks: ``eps_i = (C(a + c) - C(a)) / c`` where ``a``
    items of the query rank above the block, ``c`` is the block size and ``C`` the prefix
    sum of the position exposures ``1 / log2(offset + r)``."""
    n = key.size
    table = discount_table(max_list_size(qptr), k, offset)
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
    return Ranking.trusted(key, qptr).weights(k, "average", offset=offset).dense()


def item_exposure(
    scores: np.ndarray,
    qptr: np.ndarray,
    qidx: np.ndarray,
    k: int | None,
    ties: str,
    offset: int = 1,
) -> np.ndarray:
    """Per-item exposure ``1 / log2(offset + rank)`` of the ranking by ``scores`` with
    ``ties`` "average" or "stable"."""
    if ties == "average":
        return tie_average_exposure(scores, qptr, qidx, k, offset)
    return Ranking.trusted(scores, qptr).weights(k, "stable", offset=offset).dense()
