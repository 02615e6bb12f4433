"""Exposure: of rank positions, of a ranking or a policy (expected exposure), the EEL target
exposure of grades, per group; and the grades EEL compares (discretization).

Functions on flat arrays with query offsets ``qptr`` (items of query ``i`` are
``qptr[i]:qptr[i+1]``), vectorized over all queries. The exposure of rank ``r`` is
``e(r) = 1 / log2(offset + r)`` (``offset=1``: the DCG discount), 0 beyond a cutoff ``k``
(``k=None``: none). The kernels (:func:`tie_average_exposure`, :func:`item_exposure`) take
the item-to-query index ``qidx`` too and trust their inputs.
"""

from __future__ import annotations

import numpy as np

from .._fast.sums import group_sums as _group_sums
from .._fast.sums import threshold_target
from ..core.errors import ParameterError
from ..core.segments import max_list_size, query_index, segment_max
from ..core.validation import check_k, check_qptr, is_integer
from ..rank.ranking import DeterministicRanking, as_ranking, log_discount
from .inputs import check_groups, item_vector

__all__ = [
    "position_exposure",
    "expected_exposure",
    "check_offset",
    "target_exposure",
    "group_sums",
    "group_sums_pair",
    "eel_grading",
    "threshold_target_exposure",
    "group_exposure",
    "discretize",
    "grade_thresholds",
    "query_minmax_grades",
    "tie_average_exposure",
    "item_exposure",
]


def position_exposure(ranks, *, k: int | None = None) -> np.ndarray:
    """Exposure of 1-based ``ranks`` under the logarithmic (DCG) browsing model.

    ``e(r) = 1 / log2(1 + r)`` for ``r <= k`` and 0 beyond the cutoff ``k``
    (``k=None``: no cutoff). Returns float64 of the same shape as ``ranks``.
    """
    r = np.asarray(ranks)
    if not np.issubdtype(r.dtype, np.integer) or (r.size and r.min() < 1):
        raise ParameterError("ranks", "integer ranks >= 1", f"dtype {r.dtype}")
    k = check_k(k)
    out = 1.0 / np.log2(1.0 + r.astype(np.float64))
    if k is not None:
        out = np.where(r <= k, out, 0.0)
    return out


def expected_exposure(
    scores, *, qptr, k: int | None = None, ties: str = "average", offset: int = 1
) -> np.ndarray:
    """Exposure of every item when each query is ranked by ``scores`` (descending).

    ``eps_i = e(rank_i) = 1 / log2(1 + rank_i)`` (0 for ``rank_i > k``). With
    ``ties="average"`` items with equal scores share the mean exposure of the ranks their
    tie block occupies: the expected exposure of the stochastic ranking that permutes tied
    items uniformly at random (Diaz et al. 2020). ``ties="stable"``: ties broken by original
    position. ``offset=2`` uses ``e(r) = 1 / log2(2 + r)`` instead. A
    :class:`groupbias.rank.plackett_luce.PlackettLuce` policy gives its expected exposures. Shapes:
    ``scores`` float [n_items], ``qptr`` int [n_queries + 1]; returns float64 [n_items].
    """
    r = as_ranking(scores, qptr)
    offset = check_offset(offset)
    return r.weights(check_k(k), ties, offset=offset).dense().copy()


def check_offset(offset) -> int:
    """The discount offset ``o`` of ``e(r) = 1 / log2(o + r)``: 1 (DCG) or 2."""
    if not is_integer(offset) or offset not in (1, 2):
        raise ParameterError(
            "offset", "1 (e(r) = 1/log2(1 + r)) or 2 (e(r) = 1/log2(2 + r))", offset
        )
    return int(offset)


def target_exposure(grades, *, qptr, k: int | None = None, offset: int = 1) -> np.ndarray:
    """EEL target exposure of every item from discrete ``grades`` (§4.2.1, Diaz et al. 2020).

    The ideal stochastic ranking sorts items by grade (descending) and permutes items of equal
    grade uniformly, so every item receives the mean position exposure of the ranks its grade
    block occupies: ``eps*_i = mean_{r in block(i)} e(r)``. Continuous scores must be
    discretized first (:func:`discretize`). Returns float64 [n_items].
    """
    return expected_exposure(grades, qptr=qptr, k=k, ties="average", offset=offset)


def group_sums(
    values: np.ndarray,
    g: np.ndarray,
    qptr: np.ndarray,
    qidx: np.ndarray | None = None,
    ng: np.ndarray | None = None,
):
    """Per-query sums ``(sum_i g_i v_i, sum_i (1 - g_i) v_i)`` over the affected and the
    non-affected group (float64 [n_queries] each); ``qidx`` and ``ng`` (``1 - g``) are
    accepted and not needed."""
    return _group_sums(values, None, g, qptr)


def group_sums_pair(a: np.ndarray, b: np.ndarray, g: np.ndarray, qptr: np.ndarray):
    """:func:`group_sums` of ``a`` and of ``b``: ``(A_A, A_N, B_A, B_N)``."""
    return _group_sums(a, b, g, qptr)


def eel_grading(thresholds: np.ndarray, qptr: np.ndarray, k: int | None, offset: int):
    """``(thresholds, prefix)`` of the EEL target exposure of thresholded grades for
    :meth:`~groupbias.rank.ranking.DeterministicRanking.exposure_group_sums` (``prefix``: 0
    and the cumulative position exposures), or None where :func:`tie_average_exposure`
    would not count the grades (its count table would be too large)."""
    n, n_queries = int(qptr[-1]), qptr.size - 1
    if n_queries * (np.asarray(thresholds).size + 1) > 4 * n + 1024:
        return None
    prefix = np.concatenate([[0.0], np.cumsum(log_discount(max_list_size(qptr), k, offset))])
    return np.ascontiguousarray(thresholds, dtype=np.float64), prefix


def threshold_target_exposure(
    values: np.ndarray, thresholds: np.ndarray, qptr: np.ndarray, k: int | None, offset: int
) -> np.ndarray | None:
    """The EEL target exposure (average ties) of the grades ``#{t in thresholds : t <=
    value}`` in one pass where the fast path serves; None otherwise (then grade and call
    :func:`item_exposure`)."""
    return threshold_target(values, thresholds, qptr, log_discount(max_list_size(qptr), k, offset))


def group_exposure(exposure, groups, *, qptr) -> np.ndarray:
    """Per-query group exposure ``[E_A, E_N]``: float64 [n_queries, 2] with
    ``E_A = sum_i g_i eps_i`` and ``E_N = sum_i (1 - g_i) eps_i``."""
    e = item_vector("exposure", exposure, None, nonnegative=True)
    q = check_qptr(qptr, e.size)
    g = check_groups(groups, e.size)
    ea, en = group_sums(e, g, q, query_index(q))
    return np.stack([ea, en], axis=1)


def discretize(scores, *, thresholds=None, levels: int | None = None) -> np.ndarray:
    """Discrete grades of continuous scores (needed by EEL, §4.2.1).

    ``grade_i = #{t in thresholds : score_i >= t}`` (int64 [n_items]), i.e. a score equal to
    a threshold falls in the upper grade. ``thresholds`` must be strictly increasing;
    ``levels=n`` uses the equal-width thresholds ``1/n, 2/n, ..., (n-1)/n`` for scores in
    [0, 1]. Default (both None): ``thresholds=(0.5,)``, the paper's least controversial
    threshold ``a* = 0.5`` (binary relevant / non-relevant). Give at most one of the two.
    """
    s = item_vector("scores", scores, None)
    t = grade_thresholds(thresholds, levels)
    return np.searchsorted(t, s, side="right").astype(np.int64)


def grade_thresholds(thresholds, levels) -> np.ndarray:
    if thresholds is not None and levels is not None:
        raise ParameterError(
            "levels",
            "None when thresholds are given",
            levels,
            fix="pass either thresholds or levels, not both",
        )
    if levels is not None:
        if not is_integer(levels) or levels < 2:
            raise ParameterError("levels", "an integer >= 2", levels)
        return np.arange(1, int(levels), dtype=np.float64) / float(levels)
    if thresholds is None:
        return np.array([0.5])
    try:
        t = np.atleast_1d(np.asarray(thresholds, dtype=np.float64))
    except (TypeError, ValueError):
        t = np.array([np.nan])
    if t.ndim != 1 or t.size == 0 or not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
        raise ParameterError(
            "thresholds", "a non-empty, strictly increasing sequence of finite numbers", thresholds
        )
    return t


def query_minmax_grades(values: np.ndarray, qptr: np.ndarray, qidx: np.ndarray, levels: int):
    """Grades ``floor((v - lo) / ((hi - lo) / levels))`` with ``lo = min - 1e-10`` and
    ``hi = max + 1e-10`` of each query: ``levels`` equal-width bins over the query's own
    range (0 .. levels - 1; a query whose values are all equal has one grade)."""
    lo = -segment_max(-values, qptr)[qidx] - 1e-10
    hi = segment_max(values, qptr)[qidx] + 1e-10
    return np.floor((values - lo) / ((hi - lo) / levels))


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
    table = log_discount(max_list_size(qptr), k, offset)
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
    return DeterministicRanking.trusted(key, qptr).weights(k, "average", offset=offset).dense()


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
    return DeterministicRanking.trusted(scores, qptr).weights(k, "stable", offset=offset).dense()
