"""Bootstrap resampling over the flat layout (all replicates at once, no loop per query).

Two schemes, both returning *item indices* into the original flat arrays plus the offsets of
the resampled queries, so any estimator runs on ``values[index]`` with ``qptr=new_qptr``:

- :func:`resample_queries`: for every replicate and every query cluster ``c`` with ``n_c``
  queries, draw ``n_c`` of its queries with replacement (the bootstrap *over queries*,
  cluster by cluster). Replicate ``b``'s copy of cluster ``c`` gets the label
  ``b * n_clusters + c``.
- :func:`resample_items`: for every replicate and query, draw the query's affected items and
  its non-affected items with replacement, keeping both counts (the bootstrap *within
  queries*; its spread is the sampling noise of a per-query estimate). Resampled query
  ``b * n_queries + q`` is replicate ``b`` of query ``q``.

Replicates are produced in batches whose total size stays below a memory bound.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..core.segments import query_index

__all__ = ["resample_queries", "resample_items", "replicate_batches"]

_ITEMS = 20_000_000  # resampled items per batch (memory bound)


def replicate_batches(n_boot: int, n_items: int) -> Iterator[range]:
    """Ranges of replicate numbers whose resampled items fit the memory bound."""
    per = max(1, _ITEMS // max(n_items, 1))
    for lo in range(0, n_boot, per):
        yield range(lo, min(n_boot, lo + per))


def _gather(qptr: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Item indices of ``queries`` (in that order) and their new offsets."""
    sizes = qptr[1:][queries] - qptr[:-1][queries]
    new_qptr = np.zeros(queries.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=new_qptr[1:])
    starts = np.repeat(qptr[:-1][queries] - new_qptr[:-1], sizes)
    return np.arange(new_qptr[-1], dtype=np.int64) + starts, new_qptr


def resample_queries(
    qptr: np.ndarray,
    cluster_of_query: np.ndarray,
    reps: range,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Query bootstrap within clusters for the replicates ``reps``.

    Returns ``(item_index [n_new_items], new_qptr [n_new_queries + 1], new_cluster
    [n_new_queries])`` with ``new_cluster = b * n_clusters + c`` for replicate ``b`` (counted
    from ``reps.start``) of cluster ``c``.
    """
    cq = np.asarray(cluster_of_query, dtype=np.int64)
    n_c = int(cq.max(initial=-1)) + 1
    order = np.argsort(cq, kind="stable")  # queries grouped by cluster
    size = np.bincount(cq, minlength=n_c)
    start = np.concatenate(([0], np.cumsum(size)[:-1]))
    b = len(reps)
    slot_cluster = np.tile(cq[order], b)  # one slot per query per replicate
    draw = (rng.random(slot_cluster.size) * size[slot_cluster]).astype(np.int64)
    queries = order[start[slot_cluster] + np.minimum(draw, size[slot_cluster] - 1)]
    rep = np.repeat(np.arange(b, dtype=np.int64), cq.size)
    items, new_qptr = _gather(np.asarray(qptr, dtype=np.int64), queries)
    return items, new_qptr, rep * n_c + slot_cluster


def resample_items(
    qptr: np.ndarray,
    affected: np.ndarray,
    reps: range,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Item bootstrap within every query and group for the replicates ``reps``.

    Returns ``(item_index [b * n_items], new_qptr [b * n_queries + 1])``: resampled query
    ``r * n_queries + q`` holds, for replicate ``r`` of query ``q``, as many affected and
    non-affected items as ``q``, drawn with replacement from ``q``'s items of that group.
    """
    qptr = np.asarray(qptr, dtype=np.int64)
    aff = np.asarray(affected, dtype=bool)
    n_q = qptr.size - 1
    qi = query_index(qptr)
    # items sorted by (query, group): one block per (query, group)
    order = np.lexsort((~aff, qi))
    block = qi[order] * 2 + (~aff[order])
    count = np.bincount(block, minlength=2 * n_q)
    bstart = np.concatenate(([0], np.cumsum(count)[:-1]))
    b = len(reps)
    slot_block = np.tile(block, b)
    draw = (rng.random(slot_block.size) * count[slot_block]).astype(np.int64)
    items = order[bstart[slot_block] + np.minimum(draw, count[slot_block] - 1)]
    sizes = np.tile(np.diff(qptr), b)
    new_qptr = np.zeros(b * n_q + 1, dtype=np.int64)
    np.cumsum(sizes, out=new_qptr[1:])
    return items, new_qptr
