"""NDCG@k of a score array by a top-k selection per query instead of a sort.

The compiled loop :func:`groupbias.rank.ranking_loops.top_k_dcg` keeps, per query, the k
largest scores in a small buffer kept sorted by insertion (most items cost one comparison
with the k-th best so far), forms the DCG of the k selected labels and the ideal gains from
the counts of every grade, and says which queries have a tie touching the selection. The
result has the bits of the ranking path of :func:`groupbias.evaluation.metrics.ndcg`
(:class:`~groupbias.rank.ranking.DeterministicRanking`: the same padded blocks, the same
pairwise row sums, the same BLAS product per block for the ideal DCG); a block holding a
tie takes that path (its views then depend on the ties of all its rows), and so does every
input the loop does not cover: no numba, no cutoff or one above
:data:`~groupbias.rank.ranking_loops.TOP_K_MAX`, labels that are not grades in ``[0, 63]``,
fractional group weights, or cutoffs long enough that the ranking path sums dense weights.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.errors import ParameterError
from ..core.validation import check_qptr
from ..rank.ranking import (
    DeterministicRanking,
    Exposure,
    PaddedBlock,
    log_discount,
    loop_rows,
    padded_blocks,
    ranking_loops,
)

__all__ = ["selected_dcg"]

#: the largest grade the loop counts (gains ``2^63 - 1`` are still finite)
_MAX_GRADE = 63


def _gain_table(gain: str) -> np.ndarray:
    """The gain of every grade ``0 .. 63``, as the ranking path computes it from labels."""
    grades = np.arange(_MAX_GRADE + 1, dtype=np.float64)
    return np.exp2(grades) - 1.0 if gain == "exp2" else grades


_GAIN_TABLES = {gain: _gain_table(gain) for gain in ("exp2", "linear")}


@dataclass(frozen=True)
class _Layout:
    """What the loop needs of the queries ``qptr`` at a cutoff ``k``, computed once per
    (offsets, k): the padded blocks of the ranking path, the view width of each, the block
    table of :func:`~groupbias.rank.ranking_loops.top_k_dcg`, the row and block of every
    query, the list sizes and the rank weights; whether the ranking path would sum dense
    weights (views over half the items), and whether the rows are the queries in order
    (one block, no empty query)."""

    blocks: list[PaddedBlock]
    views: list[int]
    view_slots: list[int]
    table: np.ndarray
    n_rows: int
    n_ideal: int
    slots: np.ndarray
    sizes: np.ndarray
    discount: np.ndarray
    ideal_discounts: list[np.ndarray]
    dense: bool
    in_order: bool


#: the layouts of the last offsets seen (a metric is often called on the same queries),
#: for query sets small enough that the layout is a noticeable part of a call (a larger
#: one's layout is computed again: a kept one would hold memory in proportion)
_LAYOUTS: dict[tuple[int, int, int], tuple[np.ndarray, _Layout]] = {}
_LAYOUTS_KEPT = 4
_LAYOUT_KEPT_QUERIES = 1 << 16


def _layout(qptr: np.ndarray, n_items: int, k: int) -> _Layout:
    """The :class:`_Layout` of the int64 offsets ``qptr`` of ``n_items`` items at ``k``,
    reused while the offsets are equal to those of a kept one (checked offsets); others
    are checked first (:class:`~groupbias.core.errors.ParameterError`)."""
    key = (k, qptr.size, n_items)
    kept = _LAYOUTS.get(key)
    if kept is not None and kept[0].tobytes() == qptr.tobytes():
        return kept[1]
    qptr = check_qptr(qptr, n_items)
    blocks = padded_blocks(qptr)
    views = [min(k, b.width) for b in blocks]
    view_slots = [b.rows.size * w for b, w in zip(blocks, views, strict=True)]
    table = np.zeros((len(blocks), 5), dtype=np.int64)
    off = 0
    for i, (b, w) in enumerate(zip(blocks, views, strict=True)):
        table[i] = (b.rows.size, w, not b.partitions(k), off, b.width)
        off += b.rows.size * w + (b.rows.size * w) % 2  # 16-byte aligned, as numpy's
    np.cumsum(table[:, 0], out=table[:, 0])
    n_rows = int(table[-1, 0])
    n_queries = qptr.size - 1
    slots = np.full(2 * n_queries, -1, dtype=np.int64)  # row, then block, of every query
    rows = blocks[0].rows if len(blocks) == 1 else np.concatenate([b.rows for b in blocks])
    slots[rows] = np.arange(n_rows)
    slots[n_queries + rows] = np.repeat(np.arange(len(blocks)), [b.rows.size for b in blocks])
    sizes = np.diff(qptr)
    layout = _Layout(
        blocks=blocks,
        views=views,
        view_slots=view_slots,
        table=table,
        n_rows=n_rows,
        n_ideal=off,
        slots=slots,
        sizes=sizes,
        discount=log_discount(int(sizes.max()), k),
        ideal_discounts=[log_discount(w, None) for w in views],
        dense=sum(view_slots) > n_items // 2,
        in_order=len(blocks) == 1 and blocks[0].contiguous and n_rows == n_queries,
    )
    if qptr.size <= _LAYOUT_KEPT_QUERIES:
        for old in list(_LAYOUTS)[: max(0, len(_LAYOUTS) - _LAYOUTS_KEPT + 1)]:
            _LAYOUTS.pop(old, None)  # the oldest (another thread may have taken it)
        _LAYOUTS[key] = (qptr.copy(), layout)
    return layout


# long: the loop over row ranges and the exact redo of tied blocks
def selected_dcg(
    scores: np.ndarray,
    labels: np.ndarray,
    qptr: np.ndarray,
    weights: np.ndarray | None,
    k: int | None,
    gain: str,
    sums: Callable[[Exposure], np.ndarray],
) -> tuple[np.ndarray, np.ndarray] | None:
    """``(DCG@k, IDCG@k)`` per query (float64 [n_queries], 0 for empty queries) of the
    ranking by ``scores`` with average ties, from validated float64 ``scores`` and
    ``labels``, int64 ``qptr`` and the group weight of every item (``weights``: 0 or 1, or
    None for every item). ``sums(exposure)`` gives the DCG per query from the rank weights of
    the ranking path (for the blocks with ties). None where the loop does not serve."""
    n = scores.size
    loops = None if k is None or n == 0 else ranking_loops(n)
    if loops is None or k is None or k > loops.TOP_K_MAX:
        return None
    if weights is not None and not np.all((weights == 0.0) | (weights == 1.0)):
        return None
    try:
        lay = _layout(qptr, n, k)
    except ParameterError:
        return None  # the checks of the other path name the problem
    if lay.dense:
        return None  # the ranking path sums dense weights in item order there
    s = np.ascontiguousarray(scores)
    bits = s.view(np.int64)
    lab = np.ascontiguousarray(labels)
    wt = np.empty(0) if weights is None else np.ascontiguousarray(weights)
    gains = _GAIN_TABLES[gain]
    out = (np.empty(lay.n_rows), np.empty(lay.n_rows, dtype=bool), np.empty(lay.n_ideal))
    slots, table, discount = lay.slots, lay.table, lay.discount

    def task(q0: int, q1: int) -> int:
        args = (s, bits, lab, wt, qptr, slots, table, (q0, q1), k, discount, gains, out)
        return int(loops.top_k_dcg(*args))

    tied_rows = loop_rows(qptr.size - 1, n, task, lay.sizes)
    if min(tied_rows) < 0:
        return None
    dcg_rows, tied, ideal = out
    if lay.in_order and not any(tied_rows):  # the rows are the queries
        m, w = lay.n_rows, lay.views[0]
        return dcg_rows, ideal[: m * w].reshape(m, w) @ lay.ideal_discounts[0]
    dcg, idcg = np.zeros(qptr.size - 1), np.zeros(qptr.size - 1)
    redone: list[PaddedBlock] = []
    clean_slots = 0
    first = 0
    parts = zip(lay.blocks, lay.views, lay.view_slots, lay.table, lay.ideal_discounts, strict=True)
    for b, w, n_slots, (end, _, _, o, _), ideal_discount in parts:
        m = b.rows.size
        idcg[b.rows] = ideal[o : o + m * w].reshape(m, w) @ ideal_discount
        if tied[first:end].any():
            redone.append(b)
        else:
            dcg[b.rows] = dcg_rows[first:end]
            clean_slots += n_slots
        first = int(end)
    if redone:  # the ranking path's views of these blocks (ties widen them)
        ex = DeterministicRanking.trusted(scores, qptr, redone).weights(k, "average")
        if clean_slots + ex.n_slots > n // 2:
            return None  # dense weights after all
        exact = sums(ex)
        for b in redone:
            dcg[b.rows] = exact[b.rows]
    return dcg, idcg
