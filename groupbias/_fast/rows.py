# long: the padded layout, the packed sorts and their exact fallbacks build the same views
"""The row sort: every query's items ranked within the query, once, for every metric.

The numpy path of rankings. Queries are grouped by list length into padded blocks
``[rows, width]`` (widths within 25 % of each other; padding sorts last) and each block is
sorted at once:

* by one value-only sort of packed keys (the score with its column in the lowest mantissa
  bits: numpy's SIMD sort), exact for rows where no two truncated keys are equal; rows with
  ties (or near-ties) take a per-row ``argsort``;
* a top-k cutoff takes the first k slots of the sorted rows (whole tie blocks with average
  ties), so tie handling stays exact.

:class:`RowSort` holds the sorts of one score vector; the rank weights it gives back are
:class:`Slots` (per block the flat index and the weight of every slot down to the cutoff).
``ties="average"`` (``stable=False``) gives every tie block the mean weight of the ranks it
occupies, ``stable=True`` breaks ties by original position. The per-query sums over a
ranking (:meth:`RowSort.group_sums`) and rows too long to pay for threads run the compiled
loops of :mod:`groupbias._fast.ranking_loops` where :func:`~groupbias._fast.backend.compiled`
says they serve.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, partial

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..core.segments import segment_sum
from .backend import compiled
from .threads import cores, in_parallel

__all__ = [
    "PaddedBlock",
    "RowSort",
    "Slots",
    "flat64",
    "loop_rows",
    "padded_blocks",
    "padded_layouts",
    "ranking_loops",
]

#: widths of one padded block differ by at most this factor
_WIDTH_RATIO = 1.25
#: items from which the compiled loops serve a call under backend "auto"
LOOPS_MIN_ITEMS = 1 << 14
#: items from which a loop's rows are split between threads
_THREAD_MIN_ITEMS = 1 << 17


def flat64(*arrays: np.ndarray) -> bool:
    """Every array is float64 and contiguous (what the compiled loops are compiled for)."""
    return all(a.dtype == np.float64 and a.flags.c_contiguous for a in arrays)


def ranking_loops(n_items: int):
    """:mod:`groupbias._fast.ranking_loops` when it serves a call over ``n_items`` items,
    else None (the numpy passes)."""
    return compiled("ranking_loops", n_items, LOOPS_MIN_ITEMS)


def loop_rows(
    n_rows: int,
    n_items: int,
    task: Callable[[int, int], object],
    sizes: np.ndarray | None = None,
) -> list:
    """``task(r0, r1)`` over consecutive row ranges covering ``0 .. n_rows``: one range per
    core when there are at least :data:`_THREAD_MIN_ITEMS` items (the compiled loops
    release the GIL), else one call. The ranges hold equal numbers of rows, or of items
    when the rows' ``sizes`` are given. Every row is computed alone, so the results do not
    depend on the split. Returns the results, in row order."""
    threads = 1 if n_items < _THREAD_MIN_ITEMS else min(cores(), n_rows)
    if threads < 2:
        return [task(0, n_rows)]
    if sizes is None:
        cuts = [n_rows * i // threads for i in range(threads + 1)]
    else:
        ends = np.cumsum(sizes)
        shares = [n_items * i // threads for i in range(1, threads)]
        cuts = [0, *(int(c) for c in np.searchsorted(ends, shares)), n_rows]
    return in_parallel([partial(task, a, b) for a, b in zip(cuts[:-1], cuts[1:], strict=True)])


@dataclass(frozen=True)
class PaddedBlock:
    """Queries ``rows`` padded to ``width`` columns; ``index[r, j]`` is the flat item of
    column ``j`` of row ``r`` (a real item of the same row in the padding)."""

    rows: np.ndarray
    starts: np.ndarray
    sizes: np.ndarray
    width: int
    contiguous: bool

    @cached_property
    def valid(self) -> np.ndarray:
        return np.arange(self.width) < self.sizes[:, None]

    def index(self, cols: np.ndarray | None = None) -> np.ndarray:
        """Flat item of every column (``cols``: of every slot); in the padding an item
        further down (gather with ``np.take(..., mode="clip")``, never scatter there)."""
        return self.starts[:, None] + (np.arange(self.width)[None, :] if cols is None else cols)

    def padded(self, values: np.ndarray, fill: float | np.integer) -> np.ndarray:
        """``values`` of the block's rows, ``[rows, width]``, ``fill`` in the padding (a
        view of ``values`` when the block is contiguous). A row is copied as one run of
        ``width`` values (a row of a sliding-window view), not gathered item by item."""
        if self.contiguous:
            s = int(self.starts[0])
            return values[s : s + self.rows.size * self.width].reshape(-1, self.width)
        n, w = values.size, self.width
        if n >= w:
            out = sliding_window_view(values, w)[np.minimum(self.starts, n - w)]
            late = np.flatnonzero(self.starts > n - w)  # rows whose window runs off the end
            if late.size:
                out[late] = np.take(values, self.index()[late], mode="clip")
        else:
            out = np.take(values, self.index(), mode="clip")
        np.copyto(out, fill, where=~self.valid)
        return out

    def unpad(self, values: np.ndarray, out: np.ndarray) -> None:
        """Write ``values`` [rows, width] of the block's rows into ``out`` [n_items] at
        their items, the padding left out (the inverse of :meth:`padded`; one run when the
        block is contiguous)."""
        if self.contiguous:
            s = int(self.starts[0])
            out[s : s + values.size] = values.ravel()
            return
        valid = self.valid
        out[self.index()[valid]] = values[valid]

    def subset(self, mask: np.ndarray) -> PaddedBlock:
        sizes = self.sizes[mask]
        width = int(sizes.max()) if sizes.size else 0
        return PaddedBlock(self.rows[mask], self.starts[mask], sizes, width, False)


def padded_blocks(qptr: np.ndarray) -> list[PaddedBlock]:
    """Non-empty queries grouped by list length (widths within :data:`_WIDTH_RATIO`)."""
    sizes = np.diff(qptr)
    order = np.argsort(sizes, kind="stable")
    s = sizes[order]
    i = int(np.searchsorted(s, 1))
    out = []
    while i < s.size:
        j = int(np.searchsorted(s, max(s[i] + 1, int(s[i] * _WIDTH_RATIO) + 1)))
        rows = order[i:j]
        width = int(s[j - 1])
        contiguous = bool(s[i] == width and rows[-1] - rows[0] == rows.size - 1)
        if contiguous:
            rows = np.arange(rows[0], rows[0] + rows.size)
        out.append(PaddedBlock(rows, qptr[rows], sizes[rows], width, contiguous))
        i = j
    return out


def padded_layouts(qptr: np.ndarray, n_items: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(starts, sizes)`` of the padded blocks that hold the queries of ``qptr`` together:
    every non-empty query in one block when padding at most quadruples the ``n_items``,
    else :func:`padded_blocks` of similar lengths."""
    sizes = np.diff(qptr)
    rows = np.flatnonzero(sizes > 0)
    if rows.size and int(sizes.max()) * rows.size <= 4 * n_items:
        return [(qptr[rows], sizes[rows])]
    return [(b.starts, b.sizes) for b in padded_blocks(qptr)]


@dataclass(frozen=True)
class _View:
    """The first ``cols.shape[1]`` slots of every row of ``block`` in ranked order: the
    column of the item in each slot, and for tie blocks the slot where the block starts
    (``above``) and its size (``count``); None when no two items of a row are tied."""

    block: PaddedBlock
    cols: np.ndarray
    above: np.ndarray | None
    count: np.ndarray | None

    @property
    def valid(self) -> np.ndarray:
        return np.arange(self.cols.shape[1]) < self.block.sizes[:, None]

    def head(self, k: int) -> _View:
        """The slots of every tie block that starts within the first ``k``."""
        w = self.cols.shape[1]
        if k >= w:
            return self
        if self.above is None or self.count is None:
            return _View(self.block, self.cols[:, :k], None, None)
        end = int((self.above[:, k - 1] + self.count[:, k - 1]).max())
        return _View(self.block, self.cols[:, :end], self.above[:, :end], self.count[:, :end])


def _tie_blocks(sorted_keys: np.ndarray, sizes: np.ndarray):
    """``(above, count)`` of every slot of rows sorted by ``sorted_keys``, or
    ``(None, None)`` when no two real items of a row are tied."""
    w = sorted_keys.shape[1]
    if w < 2:
        return None, None
    eq = sorted_keys[:, 1:] == sorted_keys[:, :-1]
    eq &= np.arange(1, w) < sizes[:, None]
    if not eq.any():
        return None, None
    j = np.arange(w)
    first = np.ones(sorted_keys.shape, dtype=bool)
    first[:, 1:] = ~eq
    last = np.ones(sorted_keys.shape, dtype=bool)
    last[:, :-1] = ~eq
    above = np.maximum.accumulate(np.where(first, j, 0), axis=1)
    end = np.minimum.accumulate(np.where(last, j, w)[:, ::-1], axis=1)[:, ::-1]
    return above, end - above + 1


def _sort_rows(block: PaddedBlock, scores: np.ndarray, stable: bool) -> _View:
    """Full sort of every row of ``scores`` (padded with -inf), descending."""
    if stable:
        return _View(block, np.argsort(-scores, axis=1, kind="stable"), None, None)
    cols = np.argsort(scores, axis=1)[:, ::-1]  # ties in any order
    above, count = _tie_blocks(-np.take_along_axis(scores, cols, axis=1), block.sizes)
    return _View(block, cols, above, count)


#: the packed sort carries the column in this many low mantissa bits at most (wider blocks
#: take the argsort path)
_PACK_BITS = 20
#: the fill of padding slots in packed keys (finite: a packed -inf would be a NaN)
_PACK_FILL = -np.finfo(np.float64).max
#: real scores at or below this value take the argsort path (they could meet the fill)
_PACK_LOW = -1e308
#: blocks are sorted together (padded to the widest of them) while the padded rows hold at
#: most this many slots: one sort call instead of one per small block
_MERGE_SLOTS = 1 << 16


def _merged(blocks: list[PaddedBlock]) -> list[tuple[PaddedBlock, list[int]]]:
    """Consecutive blocks (ordered by width) gathered into larger ones of at most
    :data:`_MERGE_SLOTS` padded slots (a block larger than that alone): ``(merged block,
    indices of its blocks)``; the rows of the merged block are those of its blocks in order."""
    out: list[tuple[PaddedBlock, list[int]]] = []
    group: list[int] = []
    rows = 0
    for i, b in enumerate(blocks):
        if group and (rows + b.rows.size) * b.width > _MERGE_SLOTS:
            out.append(_union([blocks[j] for j in group], group))
            group, rows = [], 0
        group.append(i)
        rows += b.rows.size
    if group:
        out.append(_union([blocks[j] for j in group], group))
    return out


def _union(members: list[PaddedBlock], index: list[int]) -> tuple[PaddedBlock, list[int]]:
    if len(members) == 1:
        return members[0], index
    cat = [np.concatenate([getattr(b, f) for b in members]) for f in ("rows", "starts", "sizes")]
    width = max(b.width for b in members)
    return PaddedBlock(cat[0], cat[1], cat[2], width, False), index


def _packed_sort(block: PaddedBlock, scores: np.ndarray):
    """Every row of ``scores`` sorted by one value-only sort of packed keys: the score with
    its lowest mantissa bits replaced by the column (numpy's SIMD sort of float64 values,
    about twice as fast as a per-row ``argsort``). Truncating the low bits keeps the order
    of scores that differ above them, so rows where no two truncated keys of real items are
    equal are ranked exactly; equal ones (ties, or scores within ``2^-(52 - bits)`` of each
    other) are the caller's to send to the exact path.

    Returns ``(keys, mask)``: the packed keys of every row in ascending order (padding first)
    and the column mask, or ``None`` when the block is too wide or its scores are not
    finite (or reach the padding fill)."""
    w = scores.shape[1]
    bits = max(1, (w - 1).bit_length())
    if bits > _PACK_BITS or scores.size == 0:
        return None
    mask = np.int64((1 << bits) - 1)
    keys = np.empty(scores.shape, dtype=np.float64)
    ik = keys.view(np.int64)
    np.bitwise_and(np.ascontiguousarray(scores).view(np.int64), ~mask, out=ik)
    np.bitwise_or(ik, np.arange(w, dtype=np.int64), out=ik)
    if not block.contiguous:
        np.copyto(keys, _PACK_FILL, where=~block.valid)
    keys.sort(axis=1)
    low = keys[np.arange(len(keys)), w - block.sizes]  # every row's smallest real key
    if not (np.isfinite(keys[:, -1]).all() and (low > _PACK_LOW).all()):
        return None
    return keys, mask


def _packed_top(keys: np.ndarray, mask, n: int):
    """``(cols, trunc)`` of the first ``n`` slots of every row in descending order: the
    column of each and its truncated key (float64, for the tie check). All slots (``n`` =
    the width) are unpacked in memory order and reversed as views."""
    w = keys.shape[1]
    if n >= w:
        ik = keys.view(np.int64)
        return (ik & mask)[:, ::-1], (ik & ~mask).view(np.float64)[:, ::-1]
    top = keys[:, w - 1 : w - n - 1 : -1].view(np.int64)
    return top & mask, (top & ~mask).view(np.float64)


def _packed_tied_rows(trunc: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Rows with two adjacent real slots of equal truncated keys (bool [rows]); ``trunc``
    in descending order, real slots first."""
    w = trunc.shape[1]
    if w < 2:
        return np.zeros(trunc.shape[0], dtype=bool)
    if trunc.strides[1] < 0:  # compare in memory order (ascending: real slots last)
        asc = trunc[:, ::-1]
        eq = asc[:, 1:] == asc[:, :-1]
        if int(sizes.min()) < w:
            eq &= np.arange(1, w) > (w - sizes)[:, None]
        return eq.any(axis=1)
    eq = trunc[:, 1:] == trunc[:, :-1]
    if int(sizes.min()) < w:
        eq &= np.arange(1, w) < sizes[:, None]
    return eq.any(axis=1)


@dataclass
class _Packed:
    """A block's rows sorted by :func:`_packed_sort` (``keys``: a view into the sort of its
    merged block) and which rows hold ties anywhere (computed when first asked for)."""

    block: PaddedBlock
    keys: np.ndarray
    mask: np.int64
    tied_rows: np.ndarray | None = None

    def tied(self) -> bool:
        """Two items of a row of the block tie (or nearly: see :func:`_packed_sort`)."""
        if self.tied_rows is None:
            _, trunc = _packed_top(self.keys, self.mask, self.keys.shape[1])
            self.tied_rows = _packed_tied_rows(trunc, self.block.sizes)
        return bool(self.tied_rows.any())

    def view(self, n: int) -> _View:
        """The first ``n`` slots of every row (no ties: see :meth:`tied`)."""
        return _View(self.block, _packed_top(self.keys, self.mask, n)[0], None, None)


def _stabilize(view: _View, scores: np.ndarray) -> _View:
    """Stable ties from an unstable sort: rows with tied items are sorted again."""
    if view.count is None:
        return view
    tied = (view.count > 1).any(axis=1)
    cols = view.cols.copy()
    cols[tied] = np.argsort(-scores[tied], axis=1, kind="stable")
    return _View(view.block, cols, None, None)


class Slots:
    """Rank weights of the slots of one ranking down to a cutoff: per padded block the flat
    index, weight and validity of every slot. ``sums(values)`` is the per-query weighted sum
    ``sum_i w_i values_i`` (float64 [n_queries]); ``dense()`` the weight of every item
    (float64 [n_items], 0 beyond the cutoff)."""

    def __init__(self, qptr: np.ndarray, parts: list) -> None:
        self.qptr = qptr
        self.parts = parts  # (block, index [m, w], weight [m, w], valid [m, w])
        self.n_items, self.n_queries = int(qptr[-1]), qptr.size - 1
        self._dense: np.ndarray | None = None

    @property
    def n_slots(self) -> int:
        return sum(p[1].size for p in self.parts)

    def sums(self, *values: np.ndarray, combine: Callable | None = None) -> np.ndarray:
        """``sum_i w_i x_i`` per query with ``x = combine(*values)`` item by item (default:
        the single array given); ``combine`` only sees the items with a weight."""
        if self.n_slots > self.n_items // 2:
            x = values[0] if combine is None else combine(*values)
            return segment_sum(x * self.dense(), self.qptr)
        out = np.zeros(self.n_queries)
        for block, index, weight, _ in self.parts:
            gathered: list[np.ndarray] = []
            for i, v in enumerate(values):  # an array given twice is gathered once
                same = [j for j in range(i) if values[j] is v]
                gathered.append(gathered[same[0]] if same else np.take(v, index, mode="clip"))
            x = gathered[0] if combine is None else combine(*gathered)
            out[block.rows] = (x * weight).sum(axis=1)
        return out

    def dense(self) -> np.ndarray:
        """The weight of every item, float64 [n_items]."""
        if self._dense is None:
            out = np.zeros(self.n_items)
            for block, index, weight, valid in self.parts:
                if block.contiguous and index.shape[1] == block.width:
                    out[index] = weight
                else:
                    out[index[valid]] = weight[valid]
            self._dense = out
        return self._dense


def _view_weights(v: _View, table: np.ndarray) -> tuple:
    """``(block, flat index, weight, valid)`` of the slots of one view: ``table[slot]``,
    tie blocks sharing their mean, 0 in the padding."""
    weight = _table_weights(v, table)
    if not v.block.contiguous:
        weight = np.where(v.valid, weight, 0.0)
    return v.block, v.block.index(v.cols), weight, v.valid


def _slot_mean(view: _View, values: np.ndarray) -> np.ndarray:
    """Slot values ``[rows, w]`` replaced by their tie block's mean."""
    if view.above is None or view.count is None:
        return values
    w = values.shape[1]
    c = np.zeros((values.shape[0], w + 1))
    np.cumsum(values, axis=1, out=c[:, 1:])
    hi = np.minimum(view.above + view.count, w)
    return (np.take_along_axis(c, hi, 1) - np.take_along_axis(c, view.above, 1)) / view.count


def _table_weights(view: _View, table: np.ndarray) -> np.ndarray:
    w = view.cols.shape[1]
    if view.above is None or view.count is None:
        return np.broadcast_to(table[:w], view.cols.shape)
    prefix = np.concatenate([[0.0], np.cumsum(table)])
    return (prefix[view.above + view.count] - prefix[view.above]) / view.count


class RowSort:
    """The sorts of the scores (float64 [n_items], finite) of the queries ``qptr``, made
    when first asked for and kept: full and top-k views, rank weights, ranks, the largest
    values of every query and the group sums over the ranking."""

    def __init__(self, scores: np.ndarray, qptr: np.ndarray, like: RowSort | None = None) -> None:
        self.scores, self.qptr = scores, qptr
        self.n_items, self.n_queries = int(qptr[-1]), qptr.size - 1
        self._blocks: list[PaddedBlock] | None = None if like is None else like._blocks
        self._full: dict[bool, list[_View]] = {}
        self._top: dict[tuple[int, bool], list[_View]] = {}
        self._packed: list[_Packed | None] | None = None

    def blocks(self) -> list[PaddedBlock]:
        if self._blocks is None:
            self._blocks = padded_blocks(self.qptr)
        return self._blocks

    def _padded(self, block: PaddedBlock) -> np.ndarray:
        return block.padded(self.scores, -np.inf)

    def _packed_blocks(self) -> list[_Packed | None]:
        """Every block sorted by :func:`_packed_sort` (small blocks merged for it), None
        where that sort does not apply; computed once."""
        if self._packed is None:
            blocks = self.blocks()
            out: list[_Packed | None] = [None] * len(blocks)
            for merged, members in _merged(blocks):
                packed = _packed_sort(merged, self._padded(merged))
                if packed is None:
                    continue
                keys, mask = packed
                r = 0
                for i in members:
                    b = blocks[i]
                    out[i] = _Packed(b, keys[r : r + b.rows.size, merged.width - b.width :], mask)
                    r += b.rows.size
            self._packed = out
        return self._packed

    def full(self, stable: bool) -> list[_View]:
        """Every slot of every query in ranked order (ties: any order / original order)."""
        if stable not in self._full:
            if stable:
                views = [_stabilize(v, self._padded(v.block)) for v in self.full(False)]
            else:
                views = []
                for b, p in zip(self.blocks(), self._packed_blocks(), strict=True):
                    if p is not None and not p.tied():
                        views.append(p.view(b.width))
                    else:
                        views.append(_sort_rows(b, self._padded(b), False))
            self._full[stable] = views
        return self._full[stable]

    def top(self, k: int | None, stable: bool) -> list[_View]:
        """The slots of every query down to rank ``k`` (whole tie blocks with average ties)."""
        if k is None:
            return self.full(stable)
        if (k, stable) not in self._top:
            if False in self._full:
                views = [v.head(k) for v in self.full(stable)]
            else:
                views = []
                for b, p in zip(self.blocks(), self._packed_blocks(), strict=True):
                    if p is not None and not p.tied():
                        views.append(p.view(min(k, b.width)))
                    else:
                        views.append(_sort_rows(b, self._padded(b), stable).head(k))
            self._top[(k, stable)] = views
        return self._top[(k, stable)]

    def weights(self, table: np.ndarray, k: int | None, stable: bool) -> Slots:
        """``table[slot]`` of every slot down to rank ``k``, tie blocks sharing their mean
        unless ``stable``."""
        return Slots(self.qptr, [_view_weights(v, table) for v in self.top(k, stable)])

    def slot_weights(self, fn: Callable, k: int | None, stable: bool) -> Slots:
        """``fn(ranks, rows)`` of the slots down to rank ``k`` (``ranks`` 1-based int64
        [m, w], ``rows`` the query of every row [m]), tie blocks sharing their mean unless
        ``stable``."""
        parts = []
        for v in self.top(k, stable):
            ranks = np.broadcast_to(np.arange(1, v.cols.shape[1] + 1), v.cols.shape)
            vals = np.where(v.valid, fn(ranks, v.block.rows), 0.0)
            weight = np.where(v.valid, _slot_mean(v, vals), 0.0)
            parts.append((v.block, v.block.index(v.cols), weight, v.valid))
        return Slots(self.qptr, parts)

    def ranks(self) -> np.ndarray:
        """1-based rank of every item within its query, ties by original position."""
        out = np.zeros(self.n_items, dtype=np.int64)
        for v in self.full(True):
            ranks = np.broadcast_to(np.arange(1, v.cols.shape[1] + 1), v.cols.shape)
            out[v.block.index(v.cols)[v.valid]] = ranks[v.valid]
        return out

    def best(self, k: int | None, discount: np.ndarray, gain: Callable | None) -> np.ndarray:
        """``sum_{r <= k} gain(v_(r)) discount[r - 1]`` per query, ``v_(r)`` the r-th
        largest score of the query (float64 [n_queries])."""
        out = np.zeros(self.n_queries)
        blocks = self.blocks()
        for b in blocks:
            w = b.width if k is None else min(k, b.width)
            top = self._padded(b)
            if w < b.width:
                top = np.partition(top, b.width - w, axis=1)[:, b.width - w :]
            top = np.sort(top, axis=1)[:, ::-1]
            g = top if gain is None else gain(top)
            g = np.where(top > -np.inf, g, 0.0)
            out[b.rows] = g @ discount[:w]
        return out

    def group_sums(
        self,
        values: np.ndarray,
        g: np.ndarray,
        table: np.ndarray,
        dense: Callable[[], np.ndarray],
        target: Callable[[], np.ndarray] | None = None,
        grading: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> np.ndarray:
        """Per query ``[sum e g, sum e (1 - g), sum v g, sum v (1 - g)]`` (float64
        [n_queries, 4]) with ``e`` the rank weights ``table[slot]`` (cut at the cutoff) and
        ``v`` = ``values`` or the EEL target exposure (``target()``: it computed, ``grading =
        (thresholds, prefix)``: the same for the compiled loops). The compiled loops read
        the packed sorts (no dense weights); blocks with ties, and the numpy path, take the
        dense weights ``dense()`` (the caller's, cached with its other metrics)."""
        loops = ranking_loops(self.n_items)
        if loops is None or not self.n_items or not flat64(values, g):
            e = dense()
            v = values if target is None else target()
            ng = 1.0 - g
            sums = [segment_sum(x * y, self.qptr) for x in (e, v) for y in (g, ng)]
            return np.stack(sums, axis=1)
        out = np.zeros((self.n_queries, 4))
        redo = _loop_group_sums(loops, self, values, g, table, grading, out)
        if redo:  # the dense weights (exact paths where ties are) for these blocks
            e = dense()
            v = values if target is None else target()
            for b in redo:
                rows_out = np.empty((b.rows.size, 4))
                loops.group_sums(e, v, g, b.starts, b.sizes, rows_out)
                out[b.rows] = rows_out
        return out


def _loop_group_sums(loops, rs: RowSort, values, g, table, grading, out) -> list[PaddedBlock]:
    """:meth:`RowSort.group_sums` by the compiled loops over the packed sorts; returns the
    blocks left to the dense weights (no packed sort, or ties)."""
    empty = np.empty(0)
    grade_args = (empty, empty) if grading is None else grading
    redo: list[PaddedBlock] = []
    for b, p in zip(rs.blocks(), rs._packed_blocks(), strict=True):
        if p is None:
            redo.append(b)
            continue
        rows_out = np.empty((b.rows.size, 4))
        tied = np.empty(b.rows.size, dtype=bool)
        keys = p.keys.view(np.int64)

        def task(r0: int, r1: int, b=b, p=p, keys=keys, rows_out=rows_out, tied=tied) -> None:
            part = (keys[r0:r1], p.mask, b.starts[r0:r1], b.sizes[r0:r1], table)
            loops.ranked_group_sums(*part, values, g, grade_args, rows_out[r0:r1], tied[r0:r1])

        loop_rows(b.rows.size, keys.size, task)
        if tied.any():
            redo.append(b)
        else:
            out[b.rows] = rows_out
    return redo
