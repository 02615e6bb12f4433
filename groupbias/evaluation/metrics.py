"""Ranking quality and fairness-of-exposure metrics (paper §4.1–4.2, §6.2–6.3).

All metrics work on flat arrays with query offsets ``qptr`` (items of query ``i`` are
``qptr[i]:qptr[i+1]``) and are vectorized over all queries. Every metric has two forms:

* ``<metric>_per_query(...)`` returns float64 ``[n_queries]``, NaN for skipped queries;
* ``<metric>(...)`` returns one float: the mean over the non-NaN queries (NaN when every
  query is skipped), or the amortized / summed variant where offered.

Shared conventions (see ``docs/metrics.md`` for the full statement):

* Ranks start at 1. The exposure (DCG discount) of rank ``r`` is ``1 / log2(1 + r)``; with a
  cutoff ``k`` ranks ``r > k`` have exposure 0; ``k=None`` means no cutoff.
* A ranking sorts a query's items by score, descending. Ties in the scores are handled by
  ``ties``: ``"average"`` (default) gives every item of a tie block the mean exposure of the
  ranks the block occupies, which is the expected exposure when tied items are permuted
  uniformly at random, so the result does not depend on the input order; ``"stable"``
  breaks ties by original position (earlier first); ``"pessimistic"`` (NDCG only) puts the
  items with the smallest gain first among ties (worst case).
* ``groups`` holds the membership of every item in the affected group ``G_A``: 1 = affected,
  0 = non-affected, a fraction = probability of being affected. Group sums weight item
  ``i`` by ``g_i`` for ``G_A`` and by ``1 - g_i`` for ``G_N``.
* Empty queries are always skipped (NaN).
* Every function that ranks ``scores`` also accepts a :class:`groupbias.rank.ranking.Ranking`
  of them (``Ranking(scores, qptr)``): the scores are then sorted once, within queries, and
  the sort is shared by every metric given the same ranking.
"""

from __future__ import annotations

import numpy as np

from ..core.errors import ParameterError
from ..core.registry import METRICS
from ..core.segments import nanmean, query_index, segment_max, segment_sum, sort_within
from ..core.validation import check_k, check_qptr, choice, is_integer, vector
from ..rank.plackett_luce import PlackettLuce
from ..rank.ranking import Ranking
from .catalog import metric_info
from .exposure import (
    discount_table,
    item_exposure,
    max_list_size,
    sorted_ranks,
)

__all__ = [
    "position_exposure",
    "expected_exposure",
    "target_exposure",
    "group_exposure",
    "discretize",
    "ndcg",
    "ndcg_per_query",
    "rho_dtr_tabular",
    "rho_dtr_tabular_per_query",
    "rho_dtr_ranking",
    "rho_dtr_ranking_per_query",
    "delta_eel_tabular",
    "delta_eel_tabular_per_query",
    "delta_eel_ranking",
    "delta_eel_ranking_per_query",
]

GAINS = ("exp2", "linear")
TIES = ("average", "stable", "pessimistic")
EXPOSURE_TIES = ("average", "stable")
GROUPS = ("all", "affected", "non_affected")
ON_NO_RELEVANT = ("skip", "zero", "one")
ON_ZERO_UTILITY = ("extend", "skip", "one", "zero")
ON_ZERO_NDCG = ("keep", "skip")
BINS = ("thresholds", "query_minmax")
ON_SINGLE_GROUP = ("count", "skip")
DTR_AGGREGATES = ("per_query", "amortized")
EEL_AGGREGATES = ("mean", "sum")
DISTANCES = ("l2", "l1", "sq_l2")


# --------------------------------------------------------------------------- validation


def item_vector(
    name: str, values, n: int | None, *, nonnegative: bool = False, unit: bool = False
) -> np.ndarray:
    """A per-item metric input: finite, optionally non-negative or in [0, 1]."""
    if unit:
        return vector(
            name,
            values,
            n,
            low=0.0,
            high=1.0,
            what="values in [0, 1] (1 = affected, 0 = non-affected)",
        )
    return vector(
        name,
        values,
        n,
        low=0.0 if nonnegative else None,
        what="non-negative values" if nonnegative else None,
        fix="drop or impute them before computing metrics",
    )


def _inputs(
    first_name: str,
    first,
    second_name: str | None,
    second,
    qptr,
    groups,
    *,
    need_groups: bool,
    second_nonnegative: bool = True,
    first_nonnegative: bool = False,
):
    """Validated ``(first, second, qptr, groups)``; ``first`` may be a :class:`Ranking`
    (its scores are used, its offsets must be ``qptr``)."""
    if isinstance(first, Ranking):
        x = first.scores
        if first_nonnegative:
            x = item_vector(first_name, x, None, nonnegative=True)
    else:
        x = item_vector(first_name, first, None, nonnegative=first_nonnegative)
    n = x.size
    y = (
        None
        if second_name is None
        else item_vector(second_name, second, n, nonnegative=second_nonnegative)
    )
    q = check_qptr(qptr, n)
    if isinstance(first, Ranking):
        Ranking.of(first, q, first_name)
    g = None
    if groups is not None:
        g = item_vector("groups", groups, n, unit=True)
    elif need_groups:
        raise ParameterError("groups", "an array of affected-group memberships in [0, 1]", None)
    return x, y, q, g


def ranking_of(scores, x: np.ndarray, q: np.ndarray) -> Ranking:
    """``scores`` when it is a :class:`Ranking`, else the ranking of the validated ``x``."""
    return scores if isinstance(scores, Ranking) else Ranking.trusted(x, q)


# --------------------------------------------------------------------------- exposure


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
    s, _, q, _ = _inputs("scores", scores, None, None, qptr, None, need_groups=False)
    offset = check_offset(offset)
    return ranking_of(scores, s, q).weights(check_k(k), ties, offset=offset).dense().copy()


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


def _group_sums(values: np.ndarray, g: np.ndarray, qptr: np.ndarray, qidx: np.ndarray):
    return (segment_sum(values * g, qptr, qidx), segment_sum(values * (1.0 - g), qptr, qidx))


def group_exposure(exposure, groups, *, qptr) -> np.ndarray:
    """Per-query group exposure ``[E_A, E_N]``: float64 [n_queries, 2] with
    ``E_A = sum_i g_i eps_i`` and ``E_N = sum_i (1 - g_i) eps_i``."""
    e, _, q, g = _inputs(
        "exposure", exposure, None, None, qptr, groups, need_groups=True, first_nonnegative=True
    )
    ea, en = _group_sums(e, g, q, query_index(q))
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
    t = _thresholds(thresholds, levels)
    return np.searchsorted(t, s, side="right").astype(np.int64)


def _thresholds(thresholds, levels) -> np.ndarray:
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


# --------------------------------------------------------------------------- NDCG


def ndcg_per_query(
    scores,
    labels,
    *,
    qptr,
    groups=None,
    group: str = "all",
    k: int | None = None,
    gain: str = "exp2",
    ties: str = "average",
    on_no_relevant: str = "skip",
    on_zero_ndcg: str = "keep",
) -> np.ndarray:
    """NDCG@k of every query (§4.1, §6.2 Fig. 2/5), float64 [n_queries].

    ``DCG@k = sum_{r=1}^{min(k, n)} w_(r) gain(l_(r)) / log2(1 + r)`` over the ranking by
    ``scores`` (descending), ``IDCG@k`` the same over the ranking by ``w * gain(l)``
    (descending), ``NDCG@k = DCG@k / IDCG@k``.

    * ``gain="exp2"`` (default): ``2^l - 1``; ``gain="linear"``: ``l``. Labels must be
      non-negative (graded labels, or relevance probabilities in the tabular regime).
    * ``group``: ``"all"`` uses ``w_i = 1``; ``"affected"`` uses ``w_i = g_i`` and
      ``"non_affected"`` ``w_i = 1 - g_i``: the ranking is the full ranking of the query, but
      only the relevant items of that group count as relevant (for crisp groups: the labels
      of the other group are set to 0, in DCG and in IDCG alike).
    * ``ties``: ``"average"`` (expected DCG under uniformly random tie-breaking; default),
      ``"stable"`` (original position) or ``"pessimistic"`` (smallest gain first).
    * ``on_no_relevant``: a query with ``IDCG = 0`` is ``"skip"`` (NaN, excluded from the
      mean; default), ``"zero"`` (0) or ``"one"`` (1). Empty queries are always NaN.
    * ``on_zero_ndcg``: ``"skip"`` makes every query with NDCG = 0 NaN (the mean is then
      over the queries with NDCG > 0); ``"keep"`` (default) counts them.
    * ``scores`` may be a :class:`groupbias.rank.plackett_luce.PlackettLuce` policy: its expected
      NDCG (DCG is linear in the expected exposures); ``ties`` then has no effect and
      ``"pessimistic"`` is refused.
    """
    s, lab, q, g = _inputs(
        "scores", scores, "labels", labels, qptr, groups, need_groups=group != "all"
    )
    group = choice("group", group, GROUPS)
    gain = choice("gain", gain, GAINS)
    ties = choice("ties", ties, TIES)
    on_no_relevant = choice("on_no_relevant", on_no_relevant, ON_NO_RELEVANT)
    on_zero_ndcg = choice("on_zero_ndcg", on_zero_ndcg, ON_ZERO_NDCG)
    k = check_k(k)
    r = ranking_of(scores, s, q)
    if ties == "pessimistic" and isinstance(r, PlackettLuce):
        raise ParameterError(
            "ties", "'average' or 'stable' for a policy (it has no worst-case order)", ties
        )
    out = _ndcg(r, lab, g, group, k, gain, ties, on_no_relevant)
    if on_zero_ndcg == "skip":
        out[out == 0.0] = np.nan
    return out


def _base_gain(gain: str):
    return (lambda lab: np.exp2(lab) - 1.0) if gain == "exp2" else (lambda lab: lab)


def _gain_fn(gain: str, group: str):
    """``(labels, groups) -> gains`` of the items of ``group``."""
    base = _base_gain(gain)
    if group == "affected":
        return lambda lab, g: base(lab) * g
    if group == "non_affected":
        return lambda lab, g: base(lab) * (1.0 - g)
    return lambda lab, g: base(lab)


def _ideal_dcg(r: Ranking, lab, g, group, k, gain) -> np.ndarray:
    """IDCG@k per query: the top-k gains of every query, sorted (ties need no care)."""
    base = _base_gain(gain)
    if group == "all":
        return r.rerank(lab).best(k, base)
    w = g if group == "affected" else 1.0 - g
    if np.all((g == 0.0) | (g == 1.0)):  # crisp groups: gain(label * w) = gain(label) * w
        return r.rerank(lab * w).best(k, base)
    return r.rerank(base(lab) * w).best(k)


def _ndcg(r: Ranking, lab, g, group, k, gain, ties, on_no_relevant):
    q = r.qptr
    gains = _gain_fn(gain, group)
    g_or_lab = lab if g is None else g
    if ties == "pessimistic":  # among tied scores the smallest gain ranks first
        qidx = query_index(q)
        item_gains = gains(lab, g_or_lab)
        order = sort_within(r.scores, q, descending=True, tiebreak=item_gains, qidx=qidx)
        exposure = np.empty(r.n_items, dtype=np.float64)
        if r.n_items:
            exposure[order] = discount_table(max_list_size(q), k)[sorted_ranks(q, qidx) - 1]
        dcg = segment_sum(item_gains * exposure, q, qidx)
    else:
        dcg = r.weights(k, ties).sums(lab, g_or_lab, combine=gains)
    idcg = _ideal_dcg(r, lab, g, group, k, gain)
    out = np.full(q.size - 1, np.nan)
    pos = idcg > 0
    out[pos] = dcg[pos] / idcg[pos]
    nonempty = np.diff(q) > 0
    fill = {"skip": np.nan, "zero": 0.0, "one": 1.0}[on_no_relevant]
    out[~pos & nonempty] = fill
    return out


def ndcg(
    scores,
    labels,
    *,
    qptr,
    groups=None,
    group: str = "all",
    k: int | None = None,
    gain: str = "exp2",
    ties: str = "average",
    on_no_relevant: str = "skip",
    on_zero_ndcg: str = "keep",
) -> float:
    """Mean NDCG@k over the queries that are not skipped (see :func:`ndcg_per_query`);
    NaN when every query is skipped."""
    return nanmean(
        ndcg_per_query(
            scores,
            labels,
            qptr=qptr,
            groups=groups,
            group=group,
            k=k,
            gain=gain,
            ties=ties,
            on_no_relevant=on_no_relevant,
            on_zero_ndcg=on_zero_ndcg,
        )
    )


# --------------------------------------------------------------------------- DTR


def _rho(xa, xn, ya, yn, on_zero_utility: str) -> np.ndarray:
    """``rho = min(r, 1/r)``, ``r = (X_A / X_N) / (Y_A / Y_N)``, elementwise.

    Computed as ``min(num, den) / max(num, den)`` with ``num = X_A * Y_N`` and
    ``den = Y_A * X_N``. NaN when ``X_A + X_N = 0`` or ``Y_A + Y_N = 0`` (no target can be
    derived). When a group has zero true utility (``Y_A = 0`` or ``Y_N = 0``):
    ``on_zero_utility="extend"`` gives 1 if the estimate also gives that group zero (the two
    agree) and 0 otherwise (``r`` is 0 or infinite); ``"skip"`` gives NaN.
    """
    xa, xn, ya, yn = (np.asarray(v, dtype=np.float64) for v in (xa, xn, ya, yn))
    num = xa * yn
    den = ya * xn
    hi = np.maximum(num, den)
    lo = np.minimum(num, den)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(hi > 0, lo / np.where(hi > 0, hi, 1.0), 1.0)
    zero = (ya == 0) | (yn == 0)
    if on_zero_utility == "skip":
        rho = np.where(zero, np.nan, rho)
    undefined = ((xa + xn) <= 0) | ((ya + yn) <= 0)
    if on_zero_utility in ("one", "zero"):  # any query without utility in a group
        fill = 1.0 if on_zero_utility == "one" else 0.0
        return np.where(zero, fill, np.where(undefined, np.nan, rho))
    return np.where(undefined, np.nan, rho)


def _aggregate_rho(xa, xn, ya, yn, aggregate, on_zero_utility) -> float:
    if aggregate == "per_query":
        return nanmean(_rho(xa, xn, ya, yn, on_zero_utility))
    return float(_rho(xa.sum(), xn.sum(), ya.sum(), yn.sum(), on_zero_utility))


def _dtr_tabular_sums(
    estimated_utility, true_relevance, qptr, groups
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    x, y, q, g = _inputs(
        "estimated_utility",
        estimated_utility,
        "true_relevance",
        true_relevance,
        qptr,
        groups,
        need_groups=True,
        first_nonnegative=True,
    )
    qidx = query_index(q)
    xa, xn = _group_sums(x, g, q, qidx)
    ya, yn = _group_sums(y, g, q, qidx)
    return xa, xn, ya, yn


def rho_dtr_tabular_per_query(
    estimated_utility, true_relevance, *, qptr, groups, on_zero_utility: str = "extend"
) -> np.ndarray:
    """ρ(DTR) of the DTR target exposure in the tabular regime (§4.2.2), per query.

    DTR (Singh & Joachims 2018) targets group exposure proportional to group utility,
    ``E_g ∝ U_g`` with ``U_g = sum_{i in q} w_g(i) rel_i`` (``w_A = g_i``, ``w_N = 1 - g_i``).
    With ``Ũ_g`` computed the same way from ``estimated_utility`` (biased or corrected
    attractiveness) and ``U_g`` from ``true_relevance`` (on the scale the estimate
    estimates, e.g. P(R)):

        r = (Ũ_A / Ũ_N) / (U_A / U_N),    ρ = min(r, 1 / r) ∈ [0, 1].

    Queries with no true or no estimated utility at all are NaN. A group with zero true
    utility (including a group with no items): ``on_zero_utility="extend"`` (default)
    gives 1 when ``Ũ`` also gives it zero and 0 otherwise; ``"skip"`` gives NaN;
    ``"one"`` (fair) and ``"zero"`` give 1 and 0 whatever ``Ũ`` is (also when no group has
    utility). Both inputs float [n_items], non-negative; returns float64 [n_queries].
    """
    on_zero_utility = choice("on_zero_utility", on_zero_utility, ON_ZERO_UTILITY)
    return _rho(
        *_dtr_tabular_sums(estimated_utility, true_relevance, qptr, groups), on_zero_utility
    )


def rho_dtr_tabular(
    estimated_utility,
    true_relevance,
    *,
    qptr,
    groups,
    aggregate: str = "per_query",
    on_zero_utility: str = "extend",
) -> float:
    """ρ(DTR), tabular regime: ``aggregate="per_query"`` (default) is the mean of
    :func:`rho_dtr_tabular_per_query` over non-NaN queries; ``"amortized"`` sums ``Ũ_g``
    and ``U_g`` over all queries first and returns ρ of the sums."""
    aggregate = choice("aggregate", aggregate, DTR_AGGREGATES)
    on_zero_utility = choice("on_zero_utility", on_zero_utility, ON_ZERO_UTILITY)
    return _aggregate_rho(
        *_dtr_tabular_sums(estimated_utility, true_relevance, qptr, groups),
        aggregate,
        on_zero_utility,
    )


def _dtr_ranking_sums(
    scores, true_relevance, qptr, groups, k, ties, offset=1
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    s, y, q, g = _inputs(
        "scores", scores, "true_relevance", true_relevance, qptr, groups, need_groups=True
    )
    offset = check_offset(offset)
    e = ranking_of(scores, s, q).weights(check_k(k), ties, offset=offset).dense()
    qidx = query_index(q)
    xa, xn = _group_sums(e, g, q, qidx)
    ya, yn = _group_sums(y, g, q, qidx)
    return xa, xn, ya, yn


def rho_dtr_ranking_per_query(
    scores,
    true_relevance,
    *,
    qptr,
    groups,
    k: int | None = None,
    ties: str = "average",
    on_zero_utility: str = "extend",
    offset: int = 1,
) -> np.ndarray:
    """ρ(DTR) of a model's ranking (general LTR regime, §6.2–6.3), per query.

        r = (E_A / U_A) / (E_N / U_N),    ρ = min(r, 1 / r) ∈ [0, 1],

    with ``E_g = sum_i w_g(i) e(rank_i)`` the exposure the ranking by ``scores`` gives group
    ``g`` (``e(r) = 1/log2(1 + r)``, 0 beyond ``k``; ties as in :func:`expected_exposure`)
    and ``U_g = sum_i w_g(i) rel_i`` its true utility. ρ = 1 when exposure is exactly
    proportional to utility. Degenerate queries as in :func:`rho_dtr_tabular_per_query`
    (with ``E`` in place of ``Ũ``): with ``"extend"`` a group that has items but no
    utility gets ρ = 0 when it receives exposure. ``offset=2``: ``e(r) = 1/log2(2 + r)``.
    A :class:`groupbias.rank.plackett_luce.PlackettLuce` policy is judged by its expected exposure.
    Returns float64 [n_queries].
    """
    on_zero_utility = choice("on_zero_utility", on_zero_utility, ON_ZERO_UTILITY)
    return _rho(
        *_dtr_ranking_sums(scores, true_relevance, qptr, groups, k, ties, offset),
        on_zero_utility,
    )


def rho_dtr_ranking(
    scores,
    true_relevance,
    *,
    qptr,
    groups,
    k: int | None = None,
    ties: str = "average",
    aggregate: str = "per_query",
    on_zero_utility: str = "extend",
    offset: int = 1,
) -> float:
    """ρ(DTR) of a ranking: mean over queries (``"per_query"``, default) or ρ of the
    exposure and utility sums over all queries (``"amortized"``)."""
    aggregate = choice("aggregate", aggregate, DTR_AGGREGATES)
    on_zero_utility = choice("on_zero_utility", on_zero_utility, ON_ZERO_UTILITY)
    return _aggregate_rho(
        *_dtr_ranking_sums(scores, true_relevance, qptr, groups, k, ties, offset),
        aggregate,
        on_zero_utility,
    )


# --------------------------------------------------------------------------- EEL


def _distance(da: np.ndarray, dn: np.ndarray, distance: str) -> np.ndarray:
    if distance == "l2":
        return np.sqrt(da * da + dn * dn)
    if distance == "sq_l2":
        return da * da + dn * dn
    return np.abs(da) + np.abs(dn)


def _eel_finish(ea, en, ta, tn, g, q, qidx, distance, on_single_group):
    out = _distance(ea - ta, en - tn, distance)
    out[np.diff(q) == 0] = np.nan
    if on_single_group == "skip":
        na, nn = _group_sums(np.ones(g.size), g, q, qidx)
        out[(na == 0) | (nn == 0)] = np.nan
    return out


def _grades(values: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``#{thresholds <= value}`` per item (one comparison pass per threshold when there
    are few: faster than a binary search per item)."""
    if t.size > 8:
        return np.searchsorted(t, values, side="right").astype(np.float64)
    out = np.zeros(values.size)
    for th in t:
        out += values >= th
    return out


def _eel_grader(thresholds, levels, bins: str):
    """``(values, qptr, qidx) -> grades`` of the Δ(EEL) discretization ``bins``."""
    bins = choice("bins", bins, BINS)
    if bins == "thresholds":
        t = _thresholds(thresholds, levels)
        return lambda v, q, qidx: _grades(v, t)
    if thresholds is not None:
        raise ParameterError(
            "thresholds",
            "None with bins='query_minmax' (the bins come from each query's range)",
            thresholds,
        )
    n = 2 if levels is None else levels
    if not is_integer(n) or n < 1:
        raise ParameterError("levels", "an integer >= 1", levels)
    return lambda v, q, qidx: query_minmax_grades(v, q, qidx, int(n))


def query_minmax_grades(values: np.ndarray, qptr: np.ndarray, qidx: np.ndarray, levels: int):
    """Grades ``floor((v - lo) / ((hi - lo) / levels))`` with ``lo = min - 1e-10`` and
    ``hi = max + 1e-10`` of each query: ``levels`` equal-width bins over the query's own
    range (0 .. levels - 1; a query whose values are all equal has one grade)."""
    lo = -segment_max(-values, qptr)[qidx] - 1e-10
    hi = segment_max(values, qptr)[qidx] + 1e-10
    return np.floor((values - lo) / ((hi - lo) / levels))


def _eel_parts(x, y, q, g, grade, k, offset, model_exposure, discretize_true):
    """Group exposures ``(E_A, E_N, T_A, T_N)`` of the model (``model_exposure``, or the
    target exposure of the grades of ``x``) and of the target from ``y``."""
    qidx = query_index(q)
    if model_exposure is None:
        model_exposure = item_exposure(grade(x, q, qidx), q, qidx, k, "average", offset)
    tgt_grades = grade(y, q, qidx) if discretize_true else y
    tgt = item_exposure(tgt_grades, q, qidx, k, "average", offset)
    ea, en = _group_sums(model_exposure, g, q, qidx)
    ta, tn = _group_sums(tgt, g, q, qidx)
    return ea, en, ta, tn, qidx


def delta_eel_tabular_per_query(
    estimated_scores,
    true_relevance,
    *,
    qptr,
    groups,
    thresholds=None,
    levels: int | None = None,
    discretize_true: bool = True,
    k: int | None = None,
    distance: str = "l2",
    on_single_group: str = "count",
    bins: str = "thresholds",
    offset: int = 1,
) -> np.ndarray:
    """Δ(EEL) between the EEL group target exposure from estimated and from true scores
    (tabular regime, §4.2.1), per query.

    Both score vectors are discretized (:func:`discretize` with ``thresholds``/``levels``,
    default ``a* = 0.5``; ``discretize_true=False`` uses ``true_relevance`` as given, e.g.
    graded labels), item target exposures ``eps*`` follow :func:`target_exposure` (tie blocks
    of equal grade, ``e(r) = 1/log2(1 + r)``, 0 beyond ``k``, default no cutoff), and the
    group target exposure is ``E_g = sum_i w_g(i) eps*_i``. Then

        Δ(EEL) = || [Ẽ_A, Ẽ_N] - [E_A, E_N] ||

    with ``distance="l2"`` (default, as stated in §6.2), ``"l1"`` or ``"sq_l2"``. Since both
    vectors sum to the same total exposure, the two components are ``±δ`` and ℓ2 = √2·|δ|,
    ℓ1 = 2|δ| (the "multiply it by 2" of the Theorem 4.2 proof). A query whose items are all
    in one group has Δ = 0; ``on_single_group="skip"`` makes it NaN instead.
    ``bins="query_minmax"`` grades by ``levels`` (default 2) equal-width bins over each
    query's own min–max range (:func:`query_minmax_grades`) instead of fixed thresholds;
    ``offset=2`` uses ``e(r) = 1/log2(2 + r)``. Returns float64 [n_queries] (unnormalized
    exposure units).
    """
    x, y, q, g = _inputs(
        "estimated_scores",
        estimated_scores,
        "true_relevance",
        true_relevance,
        qptr,
        groups,
        need_groups=True,
        second_nonnegative=False,
    )
    k = check_k(k)
    distance = choice("distance", distance, DISTANCES)
    on_single_group = choice("on_single_group", on_single_group, ON_SINGLE_GROUP)
    grade = _eel_grader(thresholds, levels, bins)
    offset = check_offset(offset)
    parts = _eel_parts(x, y, q, g, grade, k, offset, None, discretize_true)
    ea, en, ta, tn, qidx = parts
    return _eel_finish(ea, en, ta, tn, g, q, qidx, distance, on_single_group)


def _aggregate_eel(values: np.ndarray, aggregate: str) -> float:
    if aggregate == "mean":
        return nanmean(values)
    ok = ~np.isnan(values)
    return float(values[ok].sum()) if ok.any() else float("nan")


def delta_eel_tabular(
    estimated_scores, true_relevance, *, qptr, groups, aggregate: str = "mean", **options
) -> float:
    """Δ(EEL), tabular regime: the mean (default) or sum over non-NaN queries of
    :func:`delta_eel_tabular_per_query` (``options``: its keyword options)."""
    aggregate = choice("aggregate", aggregate, EEL_AGGREGATES)
    return _aggregate_eel(
        delta_eel_tabular_per_query(
            estimated_scores, true_relevance, qptr=qptr, groups=groups, **options
        ),
        aggregate,
    )


def delta_eel_ranking_per_query(
    scores,
    true_relevance,
    *,
    qptr,
    groups,
    thresholds=None,
    levels: int | None = None,
    discretize_true: bool = True,
    k: int | None = None,
    ties: str = "average",
    distance: str = "l2",
    on_single_group: str = "count",
    bins: str = "thresholds",
    offset: int = 1,
) -> np.ndarray:
    """Δ(EEL) of a model's ranking (general LTR regime, §6.2–6.3), per query.

    The group exposure of the deterministic ranking by ``scores``
    (``E_g = sum_i w_g(i) e(rank_i)``, ties as in :func:`expected_exposure`) — or the
    expected group exposure of a :class:`groupbias.rank.plackett_luce.PlackettLuce` policy — against
    the full-information EEL group target exposure from ``true_relevance`` (discretized as
    in :func:`delta_eel_tabular_per_query`, with the same ``bins``), with the same cutoff
    ``k``, discount ``offset``, distance and single-group handling. Returns float64
    [n_queries].
    """
    s, y, q, g = _inputs(
        "scores",
        scores,
        "true_relevance",
        true_relevance,
        qptr,
        groups,
        need_groups=True,
        second_nonnegative=False,
    )
    k = check_k(k)
    ties = choice("ties", ties, EXPOSURE_TIES)
    distance = choice("distance", distance, DISTANCES)
    on_single_group = choice("on_single_group", on_single_group, ON_SINGLE_GROUP)
    grade = _eel_grader(thresholds, levels, bins)
    offset = check_offset(offset)
    model = ranking_of(scores, s, q).weights(k, ties, offset=offset).dense()
    ea, en, ta, tn, qidx = _eel_parts(s, y, q, g, grade, k, offset, model, discretize_true)
    return _eel_finish(ea, en, ta, tn, g, q, qidx, distance, on_single_group)


def delta_eel_ranking(
    scores, true_relevance, *, qptr, groups, aggregate: str = "mean", **options
) -> float:
    """Δ(EEL) of a ranking: the mean (default) or sum over non-NaN queries of
    :func:`delta_eel_ranking_per_query` (``options``: its keyword options)."""
    aggregate = choice("aggregate", aggregate, EEL_AGGREGATES)
    return _aggregate_eel(
        delta_eel_ranking_per_query(scores, true_relevance, qptr=qptr, groups=groups, **options),
        aggregate,
    )


# --------------------------------------------------------------------------- metrics by name
# groupbias.core.registry.METRICS entries (groupbias.evaluation.catalog): one call shape,
# fn(scores, spec, *, regime, k, group, **options) -> float64 [n_queries]


def _no_cutoff(name: str, k) -> None:
    if k is not None:
        raise ParameterError(
            "metrics",
            f"{name} without @k in the tabular regime (the "
            "scores are utility estimates, not a ranking)",
            f"{name}@{k}",
        )


@METRICS.register("ndcg")
@metric_info(default_k=None, groups=GROUPS, ranked=True)
def _ndcg_metric(scores, spec, *, regime, k, group, **options) -> np.ndarray:
    """NDCG@k (:func:`ndcg_per_query`) of the ranking by ``scores`` against ``spec.labels``,
    over all items or one group (``ndcg@10:affected``); no ``@k``: the whole list."""
    return ndcg_per_query(
        scores, spec.labels, qptr=spec.qptr, groups=spec.groups, group=group, k=k, **options
    )


@METRICS.register("rho_dtr")
@metric_info(default_k=None, groups=("all",), ranked=True)
def _rho_dtr_metric(scores, spec, *, regime, k, group, **options) -> np.ndarray:
    """ρ(DTR) against ``spec.relevance``: ``regime="tabular"``, the scores are utility
    estimates (:func:`rho_dtr_tabular_per_query`, no cutoff); ``"ltr"``, the exposure of the
    ranking by the scores (:func:`rho_dtr_ranking_per_query`, cutoff ``k``)."""
    if regime == "tabular":
        _no_cutoff("rho_dtr", k)
        return rho_dtr_tabular_per_query(
            scores, spec.relevance, qptr=spec.qptr, groups=spec.groups, **options
        )
    return rho_dtr_ranking_per_query(
        scores, spec.relevance, qptr=spec.qptr, groups=spec.groups, k=k, **options
    )


@METRICS.register("delta_eel")
@metric_info(default_k=None, groups=("all",), ranked=True)
def _delta_eel_metric(scores, spec, *, regime, k, group, **options) -> np.ndarray:
    """Δ(EEL) against ``spec.relevance`` with the grade thresholds ``spec.thresholds``
    (an option ``thresholds`` overrides them), cutoff ``k`` on the target exposures:
    tabular, the scores are utility estimates (:func:`delta_eel_tabular_per_query`), or
    of the ranking by the scores (:func:`delta_eel_ranking_per_query`)."""
    fn = delta_eel_tabular_per_query if regime == "tabular" else delta_eel_ranking_per_query
    if options.get("bins", "thresholds") == "thresholds":
        options = {"thresholds": spec.thresholds, **options}
    return fn(scores, spec.relevance, qptr=spec.qptr, groups=spec.groups, k=k, **options)
