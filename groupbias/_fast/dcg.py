"""DCG@k and the ideal DCG@k of a score array by a top-k selection per query, no sort.

The compiled loop :func:`groupbias._fast.ranking_loops.top_k_dcg` keeps, per query, the k
largest scores in a small buffer kept sorted by insertion (most items cost one comparison
with the k-th best so far; lists of 16 items or more are first bounded by the k-th largest
of 16 lane maxima), forms the DCG of the k selected labels and the ideal DCG from the counts
of every grade, and says which queries have a tie touching the selection: those are ranked
again by the row sort (:class:`~groupbias._fast.rows.RowSort`, average ties). The results
agree with the ranking path of :func:`groupbias.evaluation.metrics.ndcg` within the equality
contract (sums in item order).
"""

from __future__ import annotations

import numpy as np

from .rows import RowSort, loop_rows, ranking_loops

__all__ = ["dcg_at_k"]

#: the largest grade the loop counts (gains ``2^63 - 1`` are still finite)
_MAX_GRADE = 63
_GRADES = np.arange(_MAX_GRADE + 1, dtype=np.float64)
_GAIN_TABLES = {"exp2": np.exp2(_GRADES) - 1.0, "linear": _GRADES}


def _subset(qptr: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The items of ``queries`` in order and their offsets."""
    sizes = np.diff(qptr)[queries]
    sub_q = np.concatenate([[0], np.cumsum(sizes)])
    starts = np.repeat(qptr[queries] - sub_q[:-1], sizes)
    return np.arange(sub_q[-1]) + starts, sub_q


def dcg_at_k(
    scores: np.ndarray,
    labels: np.ndarray,
    qptr: np.ndarray,
    weights: np.ndarray | None,
    k: int | None,
    gain: str,
    discount: np.ndarray,
) -> tuple[np.ndarray, np.ndarray] | None:
    """``(DCG@k, IDCG@k)`` per query (float64 [n_queries], 0 for empty queries) of the
    ranking by ``scores`` with average ties, from validated float64 ``scores`` and ``labels``,
    int64 ``qptr``, the group weight of every item (``weights``: 0 or 1, or None for every
    item), ``gain`` "exp2" or "linear" and the rank weights ``discount`` (the DCG discount
    of ranks 1 .. the longest list, 0 beyond ``k``). None where this primitive does not
    serve the input (no cutoff or one above 128, labels that are not grades in [0, 63],
    non-finite scores, fractional weights, or backend/size choosing the numpy path): the
    ranking path computes the same."""
    n = scores.size
    loops = None if k is None or n == 0 else ranking_loops(n)
    if loops is None or k is None or k > loops.TOP_K_MAX:
        return None
    if weights is not None and not np.all((weights == 0.0) | (weights == 1.0)):
        return None
    s, lab = np.ascontiguousarray(scores), np.ascontiguousarray(labels)
    wt = np.empty(0) if weights is None else np.ascontiguousarray(weights, dtype=np.float64)
    gains = _GAIN_TABLES[gain]
    n_q = qptr.size - 1
    dcg, ideal, tied = np.empty(n_q), np.empty(n_q), np.empty(n_q, dtype=bool)
    table = np.ascontiguousarray(discount[: min(k, discount.size)])
    if table.size < k:
        table = np.concatenate([table, np.zeros(k - table.size)])

    def task(q0: int, q1: int) -> int:
        part = slice(q0, q1)
        args = (s, lab, wt, qptr[q0 : q1 + 1], k, table, gains)
        return int(loops.top_k_dcg(*args, dcg[part], ideal[part], tied[part]))

    if min(loop_rows(n_q, n, task, np.diff(qptr))) < 0:
        return None
    if tied.any():  # these queries ranked whole, ties sharing their mean weight
        queries = np.flatnonzero(tied)
        items, sub_q = _subset(qptr, queries)
        x = gains[lab[items].astype(np.int64)]
        if weights is not None:
            x = x * wt[items]
        rows = RowSort(s[items], sub_q)
        dcg[queries] = rows.weights(discount, k, stable=False).sums(x)
    return dcg, ideal
