"""Vectorized primitives over flat arrays with query offsets (``qptr``).

Every hot path of the library (metrics, estimator, simulator) is written with these instead
of a Python loop per query. Items of query ``i`` are ``qptr[i]:qptr[i+1]``. Empty queries are
allowed everywhere and contribute nothing.
"""

from __future__ import annotations

import numpy as np


def list_sizes(qptr: np.ndarray) -> np.ndarray:
    """Items per query, int64 [n_queries]."""
    return np.diff(np.asarray(qptr, dtype=np.int64))


def query_index(qptr: np.ndarray) -> np.ndarray:
    """Query index of every item, int64 [n_items]."""
    sizes = list_sizes(qptr)
    return np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)


def segment_sum(values: np.ndarray, qptr: np.ndarray, qidx: np.ndarray | None = None) -> np.ndarray:
    """Per-query sum of ``values`` (float64 [n_queries]); 0 for empty queries.

    One sequential pass (``np.add.reduceat`` over the query starts); ``qidx`` is accepted
    for callers that have it and not needed."""
    qptr = np.asarray(qptr, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    out = np.zeros(qptr.size - 1, dtype=np.float64)
    nonempty = qptr[1:] > qptr[:-1]
    if values.size and nonempty.any():
        out[nonempty] = np.add.reduceat(values, qptr[:-1][nonempty])
    return out


def segment_max(values: np.ndarray, qptr: np.ndarray, empty: float = -np.inf) -> np.ndarray:
    """Per-query maximum; ``empty`` for empty queries."""
    qptr = np.asarray(qptr, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    out = np.full(qptr.size - 1, empty, dtype=np.float64)
    nonempty = qptr[1:] > qptr[:-1]
    if values.size:
        if nonempty.any():
            out[nonempty] = np.maximum.reduceat(values, qptr[:-1][nonempty])
    return out


def sort_within(
    scores: np.ndarray,
    qptr: np.ndarray,
    *,
    descending: bool = True,
    tiebreak: np.ndarray | None = None,
    qidx: np.ndarray | None = None,
) -> np.ndarray:
    """Item order that sorts each query's items by score, queries kept in place.

    Returns int64 [n_items] indices ``order`` such that ``scores[order]`` is sorted within
    every query segment (descending by default). Ties are broken by ``tiebreak`` (ascending:
    a smaller tiebreak value ranks first) and then stably by original position.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if qidx is None:
        qidx = query_index(qptr)
    key = -scores if descending else scores
    if tiebreak is None:
        return np.lexsort((key, qidx))
    return np.lexsort((np.asarray(tiebreak), key, qidx))


def ranks_within(
    scores: np.ndarray,
    qptr: np.ndarray,
    *,
    descending: bool = True,
    tiebreak: np.ndarray | None = None,
) -> np.ndarray:
    """1-based rank of every item within its query (int64 [n_items]), ties broken as in
    :func:`sort_within`."""
    qptr = np.asarray(qptr, dtype=np.int64)
    qidx = query_index(qptr)
    order = sort_within(scores, qptr, descending=descending, tiebreak=tiebreak, qidx=qidx)
    ranks = np.empty(order.size, dtype=np.int64)
    ranks[order] = np.arange(order.size, dtype=np.int64) - qptr[qidx[order]] + 1
    return ranks


def nanmean(values: np.ndarray) -> float:
    """Mean of the non-NaN entries; NaN when there are none."""
    ok = ~np.isnan(values)
    return float(values[ok].mean()) if ok.any() else float("nan")


def query_blocks(qptr: np.ndarray, limit: int) -> list[int]:
    """Query indices cutting ``qptr``'s queries into consecutive blocks of at most ``limit``
    items (a longer query alone), as ``[0, c1, ..., n_queries]``."""
    nq = len(qptr) - 1
    cuts = [0]
    while cuts[-1] < nq:
        last = int(np.searchsorted(qptr, qptr[cuts[-1]] + limit, side="right")) - 1
        cuts.append(max(last, cuts[-1] + 1))
    return cuts


def max_list_size(qptr: np.ndarray) -> int:
    """The longest list (0 without queries)."""
    return int(np.max(np.diff(qptr))) if len(qptr) > 1 else 0
