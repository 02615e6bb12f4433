"""A score vector ranked once, per query, and shared by every metric that needs its ranking.

:class:`DeterministicRanking` holds the scores of all queries (flat array + offsets
``qptr``) and ranks them *within* queries, lazily and once (the row sort of
:mod:`groupbias._fast`). Its rank weights (:meth:`DeterministicRanking.weights`: the DCG
discount ``1 / log2(1 + r)`` by default, cut at ``k``) come back as an :class:`Exposure`,
the weight of every item; ``ties="average"`` gives every tie block the mean weight of the
ranks it occupies (the expected weight when tied items are permuted uniformly at random),
``ties="stable"`` breaks ties by original position. Sorts and weights are cached on the
object: NDCG@k overall and per group, ρ(DTR), Δ(EEL) and the related-work metrics of one
score vector share them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np

from .._fast.rows import RowSort, Slots
from ..core.errors import ParameterError
from ..core.segments import segment_sum
from ..core.validation import check_k, check_qptr, choice, vector

__all__ = [
    "Ranking",
    "DeterministicRanking",
    "Exposure",
    "TIES",
    "argsort_order",
    "as_ranking",
    "log_discount",
    "rank_weights",
]

TIES = ("average", "stable")


def argsort_order(
    scores: np.ndarray, qptr: np.ndarray, top_n: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The items of every query in the order of ``np.argsort(scores[a:b])[::-1]``, cut to
    the first ``top_n``: flat gather indices (int64) and the offsets of the kept items.

    This is how the paper's released code ranks (and cuts) a list: descending scores, and
    among equal scores whatever order numpy's default sort (unstable: introsort, or a SIMD
    sort where numpy dispatches one) leaves, reversed. numpy's argsort is called on each
    query's slice of ``scores`` itself (float64, contiguous), as that code calls it, so the
    order among ties is the one it gets on this machine; it is deterministic for given
    values, but not specified by numpy and may differ between CPUs (docs/metrics.md)."""
    parts = [np.zeros(0, dtype=np.int64)]
    sizes = [0]
    for a, b in zip(qptr[:-1].tolist(), qptr[1:].tolist()):
        order = np.argsort(scores[a:b])[::-1][:top_n]
        parts.append(a + order.astype(np.int64))
        sizes.append(order.size)
    return np.concatenate(parts), np.cumsum(sizes, dtype=np.int64)


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


class Exposure:
    """Rank weights of one ranking, per item: the slots of a deterministic ranking down to
    its cutoff, or ``dense`` weights (float64 [n_items]: a policy's expected exposures).
    ``sums(values)`` is the per-query weighted sum ``sum_i w_i values_i`` (float64
    [n_queries]); ``dense()`` the weight of every item (float64 [n_items], 0 beyond the
    cutoff)."""

    def __init__(
        self, qptr: np.ndarray, *, slots: Slots | None = None, dense: np.ndarray | None = None
    ) -> None:
        if (slots is None) == (dense is None):
            raise ParameterError("slots", "either slots or dense weights", "both or neither")
        self.qptr = qptr
        self.n_items, self.n_queries = int(qptr[-1]), qptr.size - 1
        self._slots = slots
        self._dense = dense

    def sums(self, *values: np.ndarray, combine: Callable | None = None) -> np.ndarray:
        """``sum_i w_i x_i`` per query with ``x = combine(*values)`` item by item (default:
        the single array given); ``combine`` only sees the items with a weight."""
        if self._slots is not None:
            return self._slots.sums(*values, combine=combine)
        x = values[0] if combine is None else combine(*values)
        return segment_sum(x * self.dense(), self.qptr)

    def dense(self) -> np.ndarray:
        """The weight of every item, float64 [n_items]."""
        if self._dense is None and self._slots is not None:
            self._dense = self._slots.dense()
        return self._dense  # type: ignore[return-value]


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

    _rows: RowSort

    def __init__(self, scores, qptr, *, name: str = "scores") -> None:
        self.scores = vector(name, scores, fix="drop or impute them before computing metrics")
        self.qptr = check_qptr(qptr, self.scores.size)
        self._init(None)

    @classmethod
    def trusted(
        cls, scores: np.ndarray, qptr: np.ndarray, like: DeterministicRanking | None = None
    ) -> DeterministicRanking:
        """A ranking of already validated float64 scores and int64 offsets; ``like``: a
        ranking of the same queries whose layout this one shares."""
        r = cls.__new__(cls)
        r.scores, r.qptr = scores, qptr
        r._init(like)
        return r

    def _init(self, like: DeterministicRanking | None) -> None:
        rows: RowSort | None = None if like is None else like._rows
        self._rows = RowSort(self.scores, self.qptr, rows)
        self._weights: dict[tuple, Exposure] = {}

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

    def _table(self, k: int | None, offset: int, table: np.ndarray | None = None) -> np.ndarray:
        max_len = int(np.max(np.diff(self.qptr))) if self.n_queries else 0
        return rank_weights(max_len, k, offset, table)

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
        slots = self._rows.weights(self._table(k, offset, table), k, ties == "stable")
        ex = Exposure(self.qptr, slots=slots)
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
        target: Callable[[], np.ndarray] | None = None,
        grading: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> np.ndarray:
        """Per query ``[sum e g, sum e (1 - g), sum v g, sum v (1 - g)]`` (float64
        [n_queries, 4]) with ``e`` the rank weights of :meth:`weights` (``k``, ``ties``,
        ``offset``) and ``v`` = ``values`` or, given ``target`` (a function computing it)
        and ``grading = (thresholds, prefix)``, the EEL target exposure of the grades
        ``#{t <= value}`` (``prefix``: 0 and the cumulative discounts)."""

        def dense() -> np.ndarray:  # the cached weights, shared with the other metrics
            return self.weights(k, ties, offset=offset).dense()

        return self._rows.group_sums(values, g, self._table(k, offset), dense, target, grading)

    def slot_weights(self, fn: Callable, ties: str = "average", k: int | None = None) -> Exposure:
        """Rank weights ``fn(ranks, rows)`` of the slots down to rank ``k`` (``ranks`` 1-based
        int64 [m, w], ``rows`` the query of every row [m]; 0 wherever the slot is beyond
        the cutoff), tie blocks sharing their mean with ``ties="average"``."""
        ties = choice("ties", ties, TIES)
        return Exposure(self.qptr, slots=self._rows.slot_weights(fn, k, ties == "stable"))

    def best(self, k: int | None, gain: Callable | None = None) -> np.ndarray:
        """``sum_{r <= k} gain(v_(r)) / log2(1 + r)`` per query, ``v_(r)`` the r-th largest
        score of the query: the ideal DCG@k when the scores order the items by gain (ties
        need no care: equal scores have equal gains). float64 [n_queries]."""
        max_len = int(np.max(np.diff(self.qptr))) if self.n_queries else 0
        return self._rows.best(k, log_discount(max_len, None), gain)

    def ranks(self) -> np.ndarray:
        """1-based rank of every item within its query, ties by original position (int64
        [n_items])."""
        return self._rows.ranks()
