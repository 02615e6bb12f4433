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

from ..core.errors import ParameterError
from ..core.validation import check_qptr
from .rows import RowSort, loop_rows, ranking_loops

__all__ = ["dcg_at_k", "selection_offsets", "top_k_selection"]

_FLOAT64 = np.dtype(np.float64)

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


def selection_offsets(scores, labels, qptr, groups, group: str, ties: str) -> np.ndarray | None:
    """The checked offsets where the top-k selection may take NDCG's arrays without their
    element checks (float64 arrays of one shape, average ties, memberships given exactly
    when a group is asked: its loop checks the values it reads, finite scores and labels
    whole numbers in [0, 63], and a value it refuses sends the call through the checks,
    which name it); None for any other input, which takes the checked path."""
    if ties != "average" or (groups is None) != (group == "all"):
        return None  # (memberships given for group="all" are checked by the other path)
    for a in (scores, labels) if groups is None else (scores, labels, groups):
        if not isinstance(a, np.ndarray) or a.dtype != _FLOAT64 or a.shape != scores.shape:
            return None
    if scores.ndim != 1:
        return None
    try:
        q = check_qptr(qptr, scores.size)
    except ParameterError:
        return None
    return q if q.size else None


def top_k_selection(scores, labels, qptr, groups, group: str, k, gain: str, discount):
    """:func:`dcg_at_k` of the items of ``group`` (``"all"``, ``"affected"``: weight
    ``groups``, ``"non_affected"``: ``1 - groups``), or None where it does not serve."""
    weights = None if groups is None or group == "all" else groups
    if weights is not None and group == "non_affected":
        weights = 1.0 - weights
    return dcg_at_k(scores, labels, qptr, weights, k, gain, discount)


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
