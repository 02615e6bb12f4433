# long: the packed sorts and their exact fallbacks (argsort, partition) build the same views
"""A score vector ranked once, per query, and shared by every metric that needs its ranking.

:class:`Ranking` holds the scores of all queries (flat array + offsets ``qptr``) and sorts
them *within* queries, lazily and once:

* queries are grouped by list length into padded blocks ``[rows, width]`` (the widths of a
  block within 25 % of each other; padding sorts last), and each block is sorted by one
  per-row ``argsort``: linear in the number of items for bounded list lengths, with no global
  sort of all items and no regrouping by query;
* a top-k cutoff on long lists uses ``partition`` (the k-th largest score of every row)
  and sorts only the selected items; rows where the k-th score is tied with items further
  down fall back to the full sort of that row, so tie handling stays exact.

The rank weights of one ranking (:meth:`Ranking.weights`: the DCG discount
``1 / log2(1 + r)`` by default, cut at ``k``) come back as an :class:`Exposure`, the items
of every query with a non-zero weight; ``ties="average"`` gives every tie block the mean
weight of the ranks it occupies (the expected weight when tied items are permuted
uniformly at random), ``ties="stable"`` breaks ties by original position. Sorts, views and
weights are cached on the object: NDCG@k overall and per group, ρ(DTR), Δ(EEL) and the
related-work metrics of one score vector share them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, partial
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..core.compiled import CompiledLoops
from ..core.errors import ParameterError
from ..core.segments import segment_sum
from ..core.threads import in_parallel
from ..core.validation import check_k, check_qptr, check_threads, choice, vector

__all__ = [
    "Ranking",
    "DeterministicRanking",
    "Exposure",
    "PaddedBlock",
    "TIES",
    "as_ranking",
    "log_discount",
    "padded_blocks",
    "rank_weights",
    "load_ranking_loops",
    "loop_rows",
    "ranking_loops",
    "use_ranking_loops",
]

TIES = ("average", "stable")
#: widths of one padded block differ by at most this factor
_WIDTH_RATIO = 1.25
#: partition (instead of a full sort) for a cutoff k when every list of a block has at
#: least this many times k items
_PARTITION_FACTOR = 2


#: items from which a ranking loads the compiled loops (importing numba and the loops,
#: about half a second once per process, costs what they save on about 10^6 items); once
#: loaded, they serve every size
LOOPS_MIN_ITEMS = 1 << 20
_ranking_loops = CompiledLoops("groupbias.rank.ranking_loops", LOOPS_MIN_ITEMS)


def use_ranking_loops(mode: str) -> str:
    """Whether rankings and the metrics over them use the compiled loops of
    :mod:`groupbias.rank.ranking_loops`: ``"auto"`` (default: when numba is installed and
    a call has at least :data:`LOOPS_MIN_ITEMS` items, or the loops are already loaded),
    ``"never"`` or ``"always"`` (when numba is installed). Both paths give the same bits.
    Returns the previous mode."""
    return _ranking_loops.use(mode)


def load_ranking_loops() -> bool:
    """Load the compiled loops of :mod:`groupbias.rank.ranking_loops` now (importing numba
    and the loops, about half a second once per process; compiled on first use, then
    cached on disk), so that they serve every later call whatever its size. False when
    numba is not installed (the numpy passes, same results)."""
    return ranking_loops(LOOPS_MIN_ITEMS) is not None


def ranking_loops(n_items: int):
    """:mod:`groupbias.rank.ranking_loops` when it serves a call over ``n_items`` items
    (see :func:`use_ranking_loops`), else None."""
    return _ranking_loops.serving(n_items)


#: items from which a loop's rows are split between the threads of :func:`loop_rows`
_THREAD_MIN_ITEMS = 1 << 17


def loop_rows(
    n_rows: int,
    n_items: int,
    task: Callable[[int, int], object],
    sizes: np.ndarray | None = None,
) -> list:
    """``task(r0, r1)`` over consecutive row ranges covering ``0 .. n_rows``: on the cores
    this process may use (one range each, the compiled loops and numpy's sort release the
    GIL) when there are at least :data:`_THREAD_MIN_ITEMS` items, else one call. The
    calling thread takes the first range while the pool's threads take the others (it
    would otherwise wait idle, and a pool thread takes a while to wake). The ranges hold
    equal numbers of rows, or of items when the rows' ``sizes`` are given (rows of unequal
    lengths). Every row is computed alone, so the results do not depend on the split.
    Returns the results, in row order."""
    threads = 1 if n_items < _THREAD_MIN_ITEMS else min(check_threads(None), n_rows)
    if threads < 2:
        return [task(0, n_rows)]
    if sizes is None:
        cuts = [n_rows * i // threads for i in range(threads + 1)]
    else:
        ends = np.cumsum(sizes)
        shares = [n_items * i // threads for i in range(1, threads)]
        cuts = [0, *(int(c) for c in np.searchsorted(ends, shares)), n_rows]
    return in_parallel([partial(task, a, b) for a, b in zip(cuts[:-1], cuts[1:], strict=True)])


def log_discount(max_len: int, k: int | None, offset: int = 1) -> np.ndarray:
    """``table[r - 1] = 1 / log2(offset + r)`` for ``r = 1..max_len``, 0 beyond ``k``
    (``offset=1``: the DCG discount; ``offset=2``: the same discount shifted down one rank,
    ``1 / log2(2 + r)``)."""
    r = np.arange(1, max_len + 1, dtype=np.float64)
    table = 1.0 / np.log2(float(offset) + r)
    if k is not None:
        table[k:] = 0.0
    return table


def rank_weights(
    max_len: int, k: int | None, offset: int = 1, table: np.ndarray | None = None
) -> np.ndarray:
    """The weight of ranks ``1..max_len``: ``table[r - 1]`` (0 where ``table`` is shorter)
    or, without a table, :func:`log_discount`; 0 beyond ``k``."""
    if table is None:
        return log_discount(max_len, k, offset)
    t = np.zeros(max_len)
    t[: min(max_len, table.size)] = table[:max_len]
    if k is not None:
        t[k:] = 0.0
    return t


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

    def partitions(self, k: int) -> bool:
        """Whether the top ``k`` of this block's rows come from a partition at the k-th
        score (every list has at least :data:`_PARTITION_FACTOR` ``* k`` items) rather than
        a sort of whole rows."""
        return int(self.sizes.min()) >= _PARTITION_FACTOR * k

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
#: slots of every row whose columns the compiled loops read right after the sort (a top-k
#: view with k below it is then a slice), and the keys sorted at a time (about the cache
#: of one core) so that they are read while cached
_HEAD_SLOTS = 16
_CHUNK_KEYS = 1 << 15
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


def _loop_packed_sort(loops, block: PaddedBlock, scores: np.ndarray):
    """:func:`_packed_sort` with the keys built by the compiled loops straight from the
    flat scores (one pass, the finiteness check included): the same sorted keys."""
    w = block.width
    bits = max(1, (w - 1).bit_length())
    if bits > _PACK_BITS or block.rows.size == 0:
        return None
    keys = np.empty((block.rows.size, w))
    mask = np.int64((1 << bits) - 1)
    heads = np.empty((block.rows.size, min(w, _HEAD_SLOTS)), dtype=np.int64)
    first_tie = np.empty(block.rows.size, dtype=np.int64)
    chunk = max(1, _CHUNK_KEYS // w)

    def task(r0: int, r1: int) -> bool:
        for c0 in range(r0, r1, chunk):  # build, sort and read while the rows are cached
            rows = slice(c0, min(c0 + chunk, r1))
            part = keys[rows]
            args = (block.starts[rows], block.sizes[rows], bits, _PACK_FILL, _PACK_LOW, part)
            if not loops.packed_keys(scores, *args):
                return False
            part.sort(axis=1)
            loops.packed_heads(
                part.view(np.int64), mask, block.sizes[rows], heads[rows], first_tie[rows]
            )
        return True

    if not all(loop_rows(block.rows.size, keys.size, task)):
        return None
    return keys, mask, heads, first_tie


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
    loops: Any = None  # groupbias.rank.ranking_loops, where it serves
    #: from the loops: the columns of the first slots of every row, and the first of them
    #: tied with the slot before (the number of those slots when none is)
    heads: np.ndarray | None = None
    first_tie: np.ndarray | None = None

    def tied(self) -> bool:
        """Two items of a row of the block tie (or nearly: see :func:`_packed_sort`)."""
        if self.tied_rows is None:
            if self.loops is not None:
                self.tied_rows = np.empty(self.block.rows.size, dtype=bool)
                self.loops.packed_tied_rows(
                    self.keys.view(np.int64), self.mask, self.block.sizes, self.tied_rows
                )
            else:
                _, trunc = _packed_top(self.keys, self.mask, self.keys.shape[1])
                self.tied_rows = _packed_tied_rows(trunc, self.block.sizes)
        return bool(self.tied_rows.any())

    def slot_weights(self, table: np.ndarray, out: np.ndarray) -> bool:
        """``out[item] = table[slot]`` for every item of the block by the compiled loops,
        the rows with ties found on the way; False (and ``out`` to be overwritten) when
        the block has ties."""
        tied = np.empty(self.block.rows.size, dtype=bool)
        b = self.block
        keys = self.keys.view(np.int64)

        def task(r0: int, r1: int) -> None:
            sizes = b.sizes[r0:r1]
            args = (keys[r0:r1], self.mask, b.starts[r0:r1], sizes, table, out, tied[r0:r1])
            self.loops.sorted_slot_weights(*args)

        loop_rows(b.rows.size, keys.size, task)
        self.tied_rows = tied
        return not tied.any()

    def _loop_top(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``(cols, tied)`` of the first ``n`` slots by the compiled loops (one pass)."""
        if self.heads is not None and self.first_tie is not None and n <= self.heads.shape[1]:
            tied = self.first_tie < np.minimum(n, self.block.sizes)
            return np.ascontiguousarray(self.heads[:, :n]), tied
        cols = np.empty((self.block.rows.size, n), dtype=np.int64)
        first_tie = np.empty(self.block.rows.size, dtype=np.int64)
        keys = self.keys.view(np.int64)
        self.loops.packed_heads(keys, self.mask, self.block.sizes, cols, first_tie)
        return cols, first_tie < np.minimum(n, self.block.sizes)

    def view(self, n: int) -> _View:
        """The first ``n`` slots of every row (no ties: see :meth:`tied`)."""
        if self.loops is not None and n < self.keys.shape[1]:
            return _View(self.block, self._loop_top(n)[0], None, None)
        return _View(self.block, _packed_top(self.keys, self.mask, n)[0], None, None)

    def top_view(self, k: int) -> _View | None:
        """The top-``k`` view of :func:`_partition_rows` when no two of the first ``k + 1``
        items of any row tie (every list longer than ``k``), else None."""
        if self.loops is not None:
            cols, tied = self._loop_top(k + 1)
        else:
            cols, trunc = _packed_top(self.keys, self.mask, k + 1)
            tied = _packed_tied_rows(trunc, self.block.sizes)
        if tied.any():
            return None
        return _View(self.block, np.ascontiguousarray(cols[:, :k]), None, None)


def _stabilize(view: _View, scores: np.ndarray) -> _View:
    """Stable ties from an unstable sort: rows with tied items are sorted again."""
    if view.count is None:
        return view
    tied = (view.count > 1).any(axis=1)
    cols = view.cols.copy()
    cols[tied] = np.argsort(-scores[tied], axis=1, kind="stable")
    return _View(view.block, cols, None, None)


def _partition_rows(block: PaddedBlock, scores: np.ndarray, k: int, stable: bool) -> list[_View]:
    """Top-k views of a block whose lists all have more than k items: partition at the k-th
    largest score, sort the k selected items; rows where that score is tied with an item
    outside the top k are fully sorted instead."""
    w = scores.shape[1]
    kth = np.partition(scores, w - k, axis=1)[:, w - k : w - k + 1]
    sel = scores >= kth
    simple = np.count_nonzero(sel, axis=1) == k
    views = []
    if simple.any():
        every = bool(simple.all())
        sub = block if every else block.subset(simple)
        cols = (np.flatnonzero(sel if every else sel[simple]) % w).reshape(-1, k)
        keys = -np.take_along_axis(scores if every else scores[simple], cols, axis=1)
        o = np.argsort(keys, axis=1, kind="stable")
        cols = np.take_along_axis(cols, o, axis=1)
        above, count = (None, None)
        if not stable:
            above, count = _tie_blocks(np.take_along_axis(keys, o, axis=1), sub.sizes)
        views.append(_View(sub, cols, above, count))
    if not simple.all():
        rest = block.subset(~simple)
        views.append(_sort_rows(rest, scores[~simple][:, : rest.width], stable).head(k))
    return views


class Exposure:
    """Rank weights of one ranking, per item.

    Given as ``parts`` (a deterministic ranking: per padded block, the flat index, weight
    and validity of every slot down to the cutoff) or ``dense`` (the weight of every item,
    float64 [n_items]: a policy's expected exposures). ``sums(values)`` is the per-query
    weighted sum ``sum_i w_i values_i`` (float64 [n_queries]); ``dense()`` the weight of
    every item (float64 [n_items], 0 beyond the cutoff)."""

    def __init__(
        self, qptr: np.ndarray, *, parts: list | None = None, dense: np.ndarray | None = None
    ) -> None:
        if (parts is None) == (dense is None):
            raise ParameterError("parts", "either parts or dense weights", "both or neither")
        self._parts = parts or []  # (block, index [m, w], weight [m, w], valid [m, w])
        self.qptr = qptr
        self.n_items, self.n_queries = int(qptr[-1]), qptr.size - 1
        self._dense = dense

    @property
    def n_slots(self) -> int:
        """Weighted slots held (every item when the weights are dense)."""
        if self._dense is not None and not self._parts:
            return self.n_items
        return sum(p[1].size for p in self._parts)

    def sums(self, *values: np.ndarray, combine: Callable | None = None) -> np.ndarray:
        """``sum_i w_i x_i`` per query with ``x = combine(*values)`` item by item (default:
        the single array given); ``combine`` only sees the items with a weight."""
        if self.n_slots > self.n_items // 2:
            x = values[0] if combine is None else combine(*values)
            return segment_sum(x * self.dense(), self.qptr)
        out = np.zeros(self.n_queries)
        for block, index, weight, _ in self._parts:
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
            for block, index, weight, valid in self._parts:
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


def _graded_target(loops, values: np.ndarray, qptr: np.ndarray, grading) -> np.ndarray:
    """The EEL target exposure of the grades of ``values`` (``grading = (thresholds,
    prefix)``) by the compiled loops, dense."""
    out = np.empty(values.size)
    loops.eel_target(values, grading[0], qptr, grading[1], out)
    return out


#: the largest grade whose rows the compiled loops sort by counting
_LOOP_MAX_GRADE = 63


def _loop_grade_tops(loops, values: np.ndarray, blocks: list[PaddedBlock], k: int | None):
    """The ``min(k, width)`` largest values of every row of every block, descending and as
    float64 (``-inf`` in the padding), from counts per grade in the compiled loops: what
    :meth:`DeterministicRanking._int16_tops` gives, in one pass over the items. None
    unless every value is a whole number in ``[0, 63]`` (graded labels)."""
    tops = []
    for b in blocks:
        top = np.empty((b.rows.size, b.width if k is None else min(k, b.width)))

        def task(r0: int, r1: int, b=b, top=top) -> bool:
            args = (b.starts[r0:r1], b.sizes[r0:r1], _LOOP_MAX_GRADE, top[r0:r1])
            return bool(loops.grade_tops(values, *args))

        if not all(loop_rows(b.rows.size, int(b.sizes.sum()), task)):
            return None
        tops.append(top)
    return tops


#: the padding of int16 rows (below every value :func:`_small_integers` accepts)
_INT16_FILL = np.int16(-32768)


def _small_integers(values: np.ndarray) -> np.ndarray | None:
    """``values`` as int16 when every one is a whole number in ``[-32767, 32767]`` (graded
    labels: their rows sort several times faster than float64 rows), else None."""
    codes = values.astype(np.int16)
    if not np.array_equal(codes, values) or (codes.size and codes.min() == _INT16_FILL):
        return None
    return codes


@runtime_checkable
class Ranking(Protocol):
    """What every exposure-based metric consumes: the rank weights of the items of every
    query (``weights(k, ties, table, offset)`` → :class:`Exposure`). A
    :class:`DeterministicRanking` (the order of a score vector) and a
    :class:`~groupbias.rank.plackett_luce.PlackettLuce` policy (expected exposures)
    implement it; metrics that weigh rank positions themselves (RaB, ARaB, pessimistic ties,
    a top-N cut) need a :class:`DeterministicRanking` (:meth:`DeterministicRanking.of`).
    Both declare the protocol, which gives them ``n_items`` and ``n_queries`` from ``qptr``."""

    qptr: np.ndarray

    @property
    def n_items(self) -> int:
        return int(self.qptr[-1])

    @property
    def n_queries(self) -> int:
        return self.qptr.size - 1

    def blocks(self) -> list[PaddedBlock]:
        """The queries padded into blocks of similar length (computed once per ranking)."""
        ...

    def weights(
        self,
        k: int | None = None,
        ties: str = "average",
        table: np.ndarray | None = None,
        offset: int = 1,
    ) -> Exposure: ...


def as_ranking(scores, qptr, name: str = "scores") -> Ranking:
    """``scores`` itself when it is a :class:`Ranking` of the queries ``qptr`` (a
    deterministic ranking or a policy), else the :class:`DeterministicRanking` of the score
    array ``scores``."""
    if not isinstance(scores, np.ndarray) and isinstance(scores, Ranking):
        _check_same_queries(scores, qptr, name)
        return scores
    return DeterministicRanking(scores, qptr, name=name)


def _check_same_queries(ranking: Ranking, qptr, name: str) -> None:
    q = np.asarray(qptr)
    if q.shape != ranking.qptr.shape or not np.array_equal(q, ranking.qptr):
        raise ParameterError(name, "a ranking of the queries qptr", "other offsets")


class DeterministicRanking(Ranking):
    """``scores`` (float [n_items], finite) of the queries ``qptr`` ranked within every
    query, descending. Pass it as ``scores`` to the metrics of
    :mod:`groupbias.evaluation.metrics` and :mod:`groupbias.evaluation.fairness` to rank
    once for all of them::

        r = DeterministicRanking(scores, qptr)
        ndcg(r, labels, qptr=qptr, k=10, reduce=None)
        rho_dtr_ranking(r, relevance, qptr=qptr, groups=groups, reduce=None)
    """

    def __init__(self, scores, qptr, *, name: str = "scores") -> None:
        self.scores = vector(name, scores, fix="drop or impute them before computing metrics")
        self.qptr = check_qptr(qptr, self.scores.size)
        self._init(None)

    @classmethod
    def trusted(
        cls,
        scores: np.ndarray,
        qptr: np.ndarray,
        blocks: list[PaddedBlock] | None = None,
    ) -> DeterministicRanking:
        """A ranking of already validated float64 scores and int64 offsets; ``blocks``: the
        padded layout of ``qptr`` when another ranking of the same queries has it."""
        r = cls.__new__(cls)
        r.scores, r.qptr = scores, qptr
        r._init(blocks)
        return r

    def _init(self, blocks: list[PaddedBlock] | None) -> None:
        self._blocks = blocks
        self._full: dict[bool, list[_View]] = {}
        self._top: dict[tuple[int, bool], list[_View]] = {}
        self._weights: dict[tuple, Exposure] = {}
        self._packed: list[_Packed | None] | None = None

    def _packed_blocks(self) -> list[_Packed | None]:
        """Every block sorted by :func:`_packed_sort` (small blocks merged for it), None
        where that sort does not apply; computed once."""
        if self._packed is None:
            blocks = self.blocks()
            out: list[_Packed | None] = [None] * len(blocks)
            loops = ranking_loops(self.n_items)
            for merged, members in _merged(blocks):
                if loops is not None:
                    packed = _loop_packed_sort(loops, merged, self.scores)
                else:
                    packed = _packed_sort(merged, self._padded(merged))
                if packed is None:
                    continue
                keys, mask = packed[:2]
                r = 0
                for i in members:
                    b = blocks[i]
                    rows = slice(r, r + b.rows.size)
                    sub = keys[rows, merged.width - b.width :]
                    p = _Packed(b, sub, mask, loops=loops)
                    if loops is not None:
                        p.heads, p.first_tie = packed[2][rows], packed[3][rows]
                    out[i] = p
                    r += b.rows.size
            self._packed = out
        return self._packed

    @classmethod
    def of(cls, scores, qptr, name: str = "scores") -> DeterministicRanking:
        """``scores`` itself when it is a :class:`DeterministicRanking` of the queries
        ``qptr``, else the ranking of the score array ``scores``; another :class:`Ranking`
        (a policy, which has no single rank per item) is refused."""
        if isinstance(scores, cls):
            _check_same_queries(scores, qptr, name)
            return scores
        if isinstance(scores, Ranking):
            raise ParameterError(
                name,
                "a deterministic ranking or scores (this metric weighs rank positions, "
                "not exposure)",
                f"a {type(scores).__name__} policy",
                fix="evaluate it on the policy's logits, or use ndcg, rho_dtr or delta_eel",
            )
        return cls(scores, qptr, name=name)

    def blocks(self) -> list[PaddedBlock]:
        """The queries padded into blocks of similar length."""
        if self._blocks is None:
            self._blocks = padded_blocks(self.qptr)
        return self._blocks

    def _padded(self, block: PaddedBlock) -> np.ndarray:
        return block.padded(self.scores, -np.inf)

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
                    if b.partitions(k):
                        v = None if p is None else p.top_view(k)
                        views += (
                            [v] if v is not None else _partition_rows(b, self._padded(b), k, stable)
                        )
                    elif p is not None and not p.tied():
                        views.append(p.view(min(k, b.width)))
                    else:
                        views.append(_sort_rows(b, self._padded(b), stable).head(k))
            self._top[(k, stable)] = views
        return self._top[(k, stable)]

    def weights(
        self,
        k: int | None = None,
        ties: str = "average",
        table: np.ndarray | None = None,
        offset: int = 1,
    ) -> Exposure:
        """Rank weights ``table[r - 1]`` (default: the discount ``1 / log2(offset + r)``)
        of every item, 0 beyond rank ``k``; cached for the default table."""
        k = check_k(k)
        ties = choice("ties", ties, TIES)
        key = (k, ties, offset) if table is None else None
        if key is not None and key in self._weights:
            return self._weights[key]
        max_len = int(np.max(np.diff(self.qptr))) if self.n_queries else 0
        t = rank_weights(max_len, k, offset, table)
        if k is None and self.n_items and not self._full and ranking_loops(self.n_items):
            ex = Exposure(self.qptr, dense=self._loop_full_weights(t, ties == "stable"))
        else:
            parts = [_view_weights(v, t) for v in self.top(k, ties == "stable")]
            ex = Exposure(self.qptr, parts=parts)
        if key is not None:
            self._weights[key] = ex
        return ex

    def exposure_group_sums(
        self,
        values: np.ndarray,
        g: np.ndarray,
        *,
        k: int | None = None,
        ties: str = "average",
        offset: int = 1,
        grading: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> np.ndarray | None:
        """Per query ``[sum e g, sum e (1 - g), sum v g, sum v (1 - g)]`` (float64
        [n_queries, 4]) with ``e`` the rank weights of :meth:`weights` (``k``, ``ties``,
        ``offset``) and ``v`` = ``values`` or, with ``grading = (thresholds, prefix)``, the
        EEL target exposure of the grades ``#{t <= value}`` (``prefix``: 0 and the cumulative
        discounts): the bits of the group sums of the dense weights, from the packed sorts in
        one pass of the compiled loops (no dense weights). Rows with ties take the dense
        weights of :meth:`weights`. None where the loops do not serve (float64 arrays of
        the ranking's items, numba installed)."""
        loops = ranking_loops(self.n_items)
        ok = values.dtype == g.dtype == np.float64 and values.flags.c_contiguous
        if loops is None or not self.n_items or not (ok and g.flags.c_contiguous):
            return None
        max_len = int(np.max(np.diff(self.qptr)))
        table = rank_weights(max_len, k, offset)
        empty = np.empty(0)
        grade_args = (empty, empty) if grading is None else grading
        out = np.zeros((self.n_queries, 4))
        redo: list[PaddedBlock] = []
        for b, p in zip(self.blocks(), self._packed_blocks(), strict=True):
            if p is None or p.loops is None:
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
        if redo:  # the dense weights (exact paths where ties are) for these blocks
            e = self.weights(k, ties, offset=offset).dense()
            v = values if grading is None else _graded_target(loops, values, self.qptr, grading)
            for b in redo:
                rows_out = np.empty((b.rows.size, 4))
                loops.group_sums2(e, v, g, b.starts, b.sizes, rows_out)
                out[b.rows] = rows_out
        return out

    def slot_weights(self, fn: Callable, ties: str = "average", k: int | None = None) -> Exposure:
        """Rank weights ``fn(ranks, rows)`` of the slots down to rank ``k`` (``ranks`` 1-based
        int64 [m, w], ``rows`` the query of every row [m]; 0 wherever the slot is beyond
        the cutoff), tie blocks sharing their mean with ``ties="average"``."""
        ties = choice("ties", ties, TIES)
        parts = []
        for v in self.top(k, ties == "stable"):
            ranks = np.broadcast_to(np.arange(1, v.cols.shape[1] + 1), v.cols.shape)
            vals = np.where(v.valid, fn(ranks, v.block.rows), 0.0)
            weight = np.where(v.valid, _slot_mean(v, vals), 0.0)
            parts.append((v.block, v.block.index(v.cols), weight, v.valid))
        return Exposure(self.qptr, parts=parts)

    def _loop_full_weights(self, table: np.ndarray, stable: bool) -> np.ndarray:
        """``table[slot]`` of every item (no cutoff) from the packed sorts, scattered by the
        compiled loops with the tie check on the way; a block with ties (or near-ties)
        takes the exact path of :meth:`full`, as there."""
        out = np.empty(self.n_items)
        for b, p in zip(self.blocks(), self._packed_blocks(), strict=True):
            if p is not None and p.loops is not None and p.slot_weights(table, out):
                continue
            v = _sort_rows(b, self._padded(b), False)
            if stable:
                v = _stabilize(v, self._padded(b))
            _, index, weight, valid = _view_weights(v, table)
            out[index[valid]] = weight[valid]
        return out

    def best(self, k: int | None, gain: Callable | None = None) -> np.ndarray:
        """``sum_{r <= k} gain(v_(r)) / log2(1 + r)`` per query, ``v_(r)`` the r-th largest
        score of the query: the ideal DCG@k when the scores order the items by gain (ties
        need no care: equal scores have equal gains). float64 [n_queries]."""
        out = np.zeros(self.n_queries)
        blocks = self.blocks()
        tops = None
        if self.n_items:
            loops = ranking_loops(self.n_items)
            tops = None if loops is None else _loop_grade_tops(loops, self.scores, blocks, k)
            if tops is None:
                tops = self._int16_tops(k)
        for i, b in enumerate(blocks):
            w = b.width if k is None else min(k, b.width)
            if tops is not None:
                top = tops[i]
            else:
                top = self._padded(b)
                if w < b.width:
                    top = np.partition(top, b.width - w, axis=1)[:, b.width - w :]
                top = np.sort(top, axis=1)[:, ::-1]
            g = top if gain is None else gain(top)
            g = np.where(top > -np.inf, g, 0.0)
            out[b.rows] = g @ log_discount(w, None)
        return out

    def _int16_tops(self, k: int | None) -> list[np.ndarray] | None:
        """The ``min(k, width)`` largest scores of every row of every block, descending and
        as float64 (``-inf`` in the padding), by one int16 sort per merged block: graded
        labels sort several times faster so than as float64 rows. None unless every score
        is a small whole number (:func:`_small_integers`)."""
        codes = _small_integers(self.scores)
        if codes is None:
            return None
        blocks = self.blocks()
        tops: list[np.ndarray] = [np.empty(0)] * len(blocks)
        for merged, members in _merged(blocks):
            srt = np.sort(merged.padded(codes, _INT16_FILL), axis=1)
            r, end = 0, merged.width
            for i in members:
                b = blocks[i]
                w = b.width if k is None else min(k, b.width)
                top16 = srt[r : r + b.rows.size, end - 1 : (end - w - 1 if w < end else None) : -1]
                tops[i] = np.where(top16 > _INT16_FILL, top16, -np.inf)
                r += b.rows.size
        return tops

    def ranks(self) -> np.ndarray:
        """1-based rank of every item within its query, ties by original position (int64
        [n_items])."""
        out = np.zeros(self.n_items, dtype=np.int64)
        for v in self.full(True):
            ranks = np.broadcast_to(np.arange(1, v.cols.shape[1] + 1), v.cols.shape)
            out[v.block.index(v.cols)[v.valid]] = ranks[v.valid]
        return out
