"""Ranking quality and fairness-of-exposure metrics of the paper (§4.1–4.2, §6.2–6.3): NDCG@k,
ρ(DTR) and Δ(EEL), each in its tabular form (scores are utility estimates) and its ranking
form (the exposure of the ranking by the scores, or of a policy); and the utility measures of
a retrieval run on its candidates: AP, RR, P@k, R@k, R-precision, bpref and Success@k
(:mod:`groupbias.evaluation.trec_eval` computes them with trec_eval's semantics).

One function per metric, one call shape (:mod:`groupbias.evaluation.inputs`): flat arrays
over all items of all queries with offsets ``qptr`` (items of query ``i`` are
``qptr[i]:qptr[i+1]``), vectorized over all queries, arrays positional, everything else
keyword-only; ``reduce="mean"`` (default) gives the mean over the queries where the metric is
defined (NaN when there is none), ``reduce=None`` the per-query values (float64
[n_queries], NaN for skipped queries).

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
* Every function that ranks ``scores`` also accepts a :class:`~groupbias.rank.ranking.Ranking`
  of them: a :class:`~groupbias.rank.ranking.DeterministicRanking` (the scores are sorted
  once, within queries, and the sort is shared by every metric given the same ranking) or a
  :class:`~groupbias.rank.plackett_luce.PlackettLuce` policy (its expected exposures).
"""

# long: the paper's metrics are one namespace (gb.metrics), one public function each, and
# share the ranking, gain and exposure helpers below

from __future__ import annotations

import numpy as np

from .._fast.dcg import selection_offsets, top_k_selection
from ..core.errors import ParameterError
from ..core.segments import max_list_size, query_index, segment_sum, sort_within
from ..core.validation import check_k, checked_arguments, choice, is_integer
from ..rank.ranking import TIES, DeterministicRanking, Ranking, log_discount, rank_weights
from .declaration import GROUPS, metric_info
from .exposure import (
    check_offset,
    eel_grading,
    grade_thresholds,
    group_sums,
    group_sums_pair,
    item_exposure,
    query_minmax_grades,
    threshold_target_exposure,
)
from .inputs import (
    check_both_groups,
    check_groups,
    check_reduce,
    ranking_inputs,
    reduce_queries,
    value_inputs,
)

__all__ = [
    "ndcg",
    "rho_dtr_tabular",
    "rho_dtr_ranking",
    "delta_eel_tabular",
    "delta_eel_ranking",
    "average_precision",
    "reciprocal_rank",
    "precision",
    "recall",
    "r_precision",
    "bpref",
    "success",
    "GROUPS",
]

GAINS = ("exp2", "linear")
#: the first label whose exp2 gain ``2^l - 1`` is infinite in float64
_EXP2_LIMIT = 1024
#: ties of NDCG: those of a ranking, and the worst case
NDCG_TIES = (*TIES, "pessimistic")
ON_NO_RELEVANT = ("skip", "zero", "one")
ON_ZERO_UTILITY = ("extend", "skip", "one", "zero")
ON_ZERO_NDCG = ("keep", "skip")
BINS = ("thresholds", "query_minmax")
ON_SINGLE_GROUP = ("count", "skip")
#: the distance between the group exposure vectors of Δ(EEL)
EEL_DISTANCES = ("l2", "l1", "sq_l2")
#: ``reduce`` of ρ(DTR): also ρ of the sums over all queries
DTR_REDUCE = ("mean", None, "amortized")
#: ``reduce`` of Δ(EEL): also the sum over queries
EEL_REDUCE = ("mean", None, "sum")


# --------------------------------------------------------------------------- NDCG


#: the dtype of the arrays the top-k selection takes without their element checks


@checked_arguments
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
    reduce: str | None = "mean",
):
    """NDCG@k (§4.1, §6.2 Fig. 2/5).

    ``DCG@k = sum_{r=1}^{min(k, n)} w_(r) gain(l_(r)) / log2(1 + r)`` over the ranking by
    ``scores`` (descending), ``IDCG@k`` the same over the ranking by ``w * gain(l)``
    (descending), ``NDCG@k = DCG@k / IDCG@k``.

    * ``gain="exp2"`` (default): ``2^l - 1``; ``gain="linear"``: ``l``; labels >= 0.
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
    * ``scores`` may be a :class:`~groupbias.rank.plackett_luce.PlackettLuce` policy: its
      expected NDCG (DCG is linear in the expected exposures); ``"pessimistic"`` is refused.

    ``reduce``: ``"mean"`` (default) or ``None``. Two queries, the second without a
    relevant item (skipped)::

        ndcg([2.0, 1.0, 0.5, 0.1], [0, 1, 0, 0], qptr=[0, 2, 4], k=1, reduce=None)
        # -> [0.0, nan]: the relevant item of query 0 ranks second, beyond k = 1
    """
    check_reduce(reduce)
    group = choice("group", group, GROUPS)
    gain = choice("gain", gain, GAINS)
    ties = choice("ties", ties, NDCG_TIES)
    on_no_relevant = choice("on_no_relevant", on_no_relevant, ON_NO_RELEVANT)
    on_zero_ndcg = choice("on_zero_ndcg", on_zero_ndcg, ON_ZERO_NDCG)
    k = check_k(k)
    q = selection_offsets(scores, labels, qptr, groups, group, ties)
    selected = None if q is None else _selection(scores, labels, q, groups, group, k, gain)
    if q is None or selected is None:  # the checks, then the ranking's weights (or the selection)
        dcg, idcg, q = _checked_dcg(scores, labels, qptr, groups, group, k, gain, ties, q)
    else:
        dcg, idcg = selected
    out = _ndcg(dcg, idcg, q, on_no_relevant)
    if on_zero_ndcg == "skip":
        out[out == 0.0] = np.nan
    return out if reduce is None else reduce_queries(out, reduce)


def _checked_dcg(scores, labels, qptr, groups, group, k, gain, ties, tried):
    """``(DCG@k, IDCG@k, qptr)`` after the checks of every input (``tried``: not None when
    the selection has refused these arrays already, so it is not run a second time)."""
    r, lab, q = ranking_inputs(scores, "labels", labels, qptr)
    g = None if groups is None and group == "all" else check_groups(groups, r.n_items)
    _check_gain(gain, lab)
    given = tried is not None or isinstance(scores, Ranking)
    return (*_dcg_and_ideal(r, lab, g, group, k, gain, ties, given), q)


def _selection(scores, lab, q, g, group, k, gain):
    """DCG@k and IDCG@k per query by the top-k selection, or None where it does not serve."""
    return top_k_selection(scores, lab, q, g, group, k, gain, rank_weights(max_list_size(q), k))


def _dcg_and_ideal(r: Ranking, lab, g, group, k, gain, ties, given: bool):
    """DCG@k and IDCG@k per query: by the top-k selection of a score array where it serves
    (``given``: the caller passed a ranking, whose cached sorts serve instead, or the
    selection has refused these arrays already), else from the ranking's weights and the
    best grades."""
    if ties == "average" and not given and isinstance(r, DeterministicRanking):
        selected = _selection(r.scores, lab, r.qptr, g, group, k, gain)
        if selected is not None:
            return selected
    gains = _gain_fn(gain, group)
    g_or_lab = lab if g is None else g
    if ties == "pessimistic":
        dcg = _pessimistic_dcg(_scored(r), gains(lab, g_or_lab), k)
    else:
        dcg = r.weights(k, ties).sums(lab, g_or_lab, combine=gains)
    return dcg, _ideal_dcg(r, lab, g, group, k, gain)


def _check_gain(gain: str, lab: np.ndarray) -> None:
    """Refuse labels whose exp2 gain is infinite (a NaN query would leave the mean)."""
    if gain == "exp2" and lab.size and lab.max() >= _EXP2_LIMIT:
        raise ParameterError(
            "labels",
            f"labels below {_EXP2_LIMIT} with gain='exp2' (2**{_EXP2_LIMIT} overflows float64)",
            f"maximum {lab.max()!r}",
            fix="use gain='linear', or rescale the labels",
        )


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

    def best(values, fn=None):
        like = r if isinstance(r, DeterministicRanking) else None
        return DeterministicRanking.trusted(values, r.qptr, like).best(k, fn)

    if group == "all":
        return best(lab, base)
    w = g if group == "affected" else 1.0 - g
    if np.all((g == 0.0) | (g == 1.0)):  # crisp groups: gain(label * w) = gain(label) * w
        return best(lab * w, base)
    return best(base(lab) * w)


def _pessimistic_dcg(r: DeterministicRanking, item_gains: np.ndarray, k) -> np.ndarray:
    """DCG@k with the smallest gain first among tied scores."""
    q = r.qptr
    qidx = query_index(q)
    order = sort_within(r.scores, q, descending=True, tiebreak=item_gains, qidx=qidx)
    exposure = np.empty(r.n_items, dtype=np.float64)
    if r.n_items:
        ranks = np.arange(qidx.size, dtype=np.int64) - q[qidx] + 1  # of every sorted slot
        exposure[order] = log_discount(max_list_size(q), k)[ranks - 1]
    return segment_sum(item_gains * exposure, q, qidx)


def _scored(r: Ranking) -> DeterministicRanking:
    """The deterministic ranking that worst-case ties need (a policy has no worst case)."""
    try:
        return DeterministicRanking.of(r, r.qptr)
    except ParameterError:
        raise ParameterError(
            "ties", "'average' or 'stable' for a policy (it has no worst-case order)", "pessimistic"
        ) from None


def _ndcg(dcg: np.ndarray, idcg: np.ndarray, q: np.ndarray, on_no_relevant: str):
    """NDCG per query from DCG and IDCG; queries without IDCG as ``on_no_relevant``.
    ``IDCG = 0`` only where every gain is 0 (gains and weights are never negative), so
    ``DCG`` is 0 there too and the ratio NaN."""
    with np.errstate(invalid="ignore", divide="ignore"):
        out = dcg / idcg
    if on_no_relevant != "skip":  # (empty queries stay NaN)
        out[(idcg <= 0) & (q[1:] > q[:-1])] = 1.0 if on_no_relevant == "one" else 0.0
    return out


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


def _reduce_rho(sums, reduce, on_zero_utility):
    """ρ per query, its mean, or ρ of the sums over all queries (``"amortized"``)."""
    xa, xn, ya, yn = sums
    if reduce == "amortized":
        return float(_rho(xa.sum(), xn.sum(), ya.sum(), yn.sum(), on_zero_utility))
    return reduce_queries(_rho(xa, xn, ya, yn, on_zero_utility), reduce, DTR_REDUCE)


@checked_arguments
def rho_dtr_tabular(
    estimated_utility,
    true_relevance,
    *,
    qptr,
    groups,
    on_zero_utility: str = "extend",
    reduce: str | None = "mean",
):
    """ρ(DTR) of the DTR target exposure in the tabular regime (§4.2.2).

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
    utility). Both inputs float [n_items], non-negative. ``reduce``: ``"mean"`` (default,
    over the non-NaN queries), ``None`` (float64 [n_queries]) or ``"amortized"`` (``Ũ_g``
    and ``U_g`` summed over all queries first, ρ of the sums).
    """
    check_reduce(reduce, DTR_REDUCE)
    on_zero_utility = choice("on_zero_utility", on_zero_utility, ON_ZERO_UTILITY)
    x, y, q = value_inputs(
        "estimated_utility",
        estimated_utility,
        "true_relevance",
        true_relevance,
        qptr,
        first_nonnegative=True,
    )
    g = check_groups(groups, x.size)
    if reduce is not None:  # a mean over one-group queries only would read as fair
        check_both_groups(g, q)
    qidx = query_index(q)
    sums = (*group_sums(x, g, q, qidx), *group_sums(y, g, q, qidx))
    return _reduce_rho(sums, reduce, on_zero_utility)


@checked_arguments
def rho_dtr_ranking(
    scores,
    true_relevance,
    *,
    qptr,
    groups,
    k: int | None = None,
    ties: str = "average",
    on_zero_utility: str = "extend",
    offset: int = 1,
    reduce: str | None = "mean",
):
    """ρ(DTR) of a model's ranking (general LTR regime, §6.2–6.3).

        r = (E_A / U_A) / (E_N / U_N),    ρ = min(r, 1 / r) ∈ [0, 1],

    with ``E_g = sum_i w_g(i) e(rank_i)`` the exposure the ranking by ``scores`` gives group
    ``g`` (``e(r) = 1/log2(1 + r)``, 0 beyond ``k``; ties as in
    :func:`~groupbias.evaluation.exposure.expected_exposure`) and ``U_g = sum_i w_g(i)
    rel_i`` its true utility. ρ = 1 when exposure is exactly proportional to utility.
    Degenerate queries as in :func:`rho_dtr_tabular` (with ``E`` in place of ``Ũ``): with
    ``"extend"`` a group that has items but no utility gets ρ = 0 when it receives exposure.
    ``offset=2``: ``e(r) = 1/log2(2 + r)``. A
    :class:`~groupbias.rank.plackett_luce.PlackettLuce` policy is judged by its expected
    exposure. ``reduce``: ``"mean"``, ``None`` or ``"amortized"`` (ρ of the sums of ``E_g``
    and ``U_g`` over all queries).
    """
    check_reduce(reduce, DTR_REDUCE)
    on_zero_utility = choice("on_zero_utility", on_zero_utility, ON_ZERO_UTILITY)
    r, y, q = ranking_inputs(scores, "true_relevance", true_relevance, qptr)
    g = check_groups(groups, r.n_items)
    if reduce is not None:  # a mean over one-group queries only would read as fair
        check_both_groups(g, q)
    offset = check_offset(offset)
    k = check_k(k)
    if isinstance(r, DeterministicRanking):  # from the sorts (no dense weights on the fast path)
        sums = r.exposure_group_sums(y, g, k=k, ties=choice("ties", ties, TIES), offset=offset)
        return _reduce_rho(tuple(sums.T), reduce, on_zero_utility)
    e = r.weights(k, ties, offset=offset).dense()
    return _reduce_rho(group_sums_pair(e, y, g, q), reduce, on_zero_utility)


# --------------------------------------------------------------------------- EEL


def _distance(da: np.ndarray, dn: np.ndarray, distance: str) -> np.ndarray:
    if distance == "l2":
        return np.sqrt(da * da + dn * dn)
    if distance == "sq_l2":
        return da * da + dn * dn
    return np.abs(da) + np.abs(dn)


def _grades(values: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``#{thresholds <= value}`` per item (one comparison pass per threshold when there
    are few: faster than a binary search per item)."""
    if t.size > 8:
        return np.searchsorted(t, values, side="right").astype(np.float64)
    out = np.zeros(values.size)
    for th in t:
        out += values >= th
    return out


class _ThresholdGrades:
    """``(values, qptr, qidx) -> grades`` ``#{t in thresholds : t <= value}``."""

    def __init__(self, thresholds: np.ndarray) -> None:
        self.thresholds = thresholds

    def __call__(self, values, qptr, qidx) -> np.ndarray:
        return _grades(values, self.thresholds)


def _graded_exposure(values, q, qidx, grade, k, offset) -> np.ndarray:
    """The EEL target exposure of the grades of ``values`` (``qidx``: None until needed)."""
    if isinstance(grade, _ThresholdGrades):
        out = threshold_target_exposure(values, grade.thresholds, q, k, offset)
        if out is not None:
            return out
    qidx = query_index(q) if qidx is None else qidx
    return item_exposure(grade(values, q, qidx), q, qidx, k, "average", offset)


def _eel_grader(thresholds, levels, bins: str):
    """``(values, qptr, qidx) -> grades`` of the Δ(EEL) discretization ``bins``."""
    bins = choice("bins", bins, BINS)
    if bins == "thresholds":
        return _ThresholdGrades(grade_thresholds(thresholds, levels))
    if thresholds is not None:
        raise ParameterError(
            "thresholds",
            "None with bins='query_minmax' (the bins come from each query's range)",
            thresholds,
        )
    n = 2 if levels is None else levels
    if not is_integer(n) or n < 2:  # one level: every item in one grade, Δ(EEL) = 0 always
        raise ParameterError("levels", "an integer >= 2", levels)
    return lambda v, q, qidx: query_minmax_grades(v, q, qidx, int(n))


def _delta_eel(
    model_exposure, y, q, g, *, grade, k, offset, discretize_true, distance, on_single_group
):
    """Δ(EEL) per query of the item exposures ``model_exposure`` against the EEL target
    exposure of the true relevance ``y``."""
    if discretize_true:
        tgt = _graded_exposure(y, q, None, grade, k, offset)
    else:
        tgt = item_exposure(y, q, query_index(q), k, "average", offset)
    ea, en, ta, tn = group_sums_pair(model_exposure, tgt, g, q)
    return _eel_distances(ea, en, ta, tn, q, g, distance, on_single_group)


def _eel_sums_by_sorts(r: Ranking, y, g, q, ties: str, opts: dict) -> np.ndarray | None:
    """The group sums of a deterministic ranking's exposure and of the EEL target of
    thresholded grades, by :meth:`DeterministicRanking.exposure_group_sums`; None for a
    policy or min-max bins."""
    grade = opts["grade"]
    if not (isinstance(r, DeterministicRanking) and isinstance(grade, _ThresholdGrades)):
        return None
    k, offset = opts["k"], opts["offset"]
    grading = eel_grading(grade.thresholds, q, k, offset)
    if grading is None:
        return None

    def target() -> np.ndarray:
        return _graded_exposure(y, q, None, grade, k, offset)

    kw = {"k": k, "ties": ties, "offset": offset, "target": target, "grading": grading}
    return r.exposure_group_sums(y, g, **kw)


def _eel_distances(ea, en, ta, tn, q, g, distance, on_single_group) -> np.ndarray:
    """Δ(EEL) per query from the group sums of the model's exposure and of the target."""
    out = _distance(ea - ta, en - tn, distance)
    out[np.diff(q) == 0] = np.nan
    if on_single_group == "skip":
        na, nn = group_sums(np.ones(g.size), g, q)
        out[(na == 0) | (nn == 0)] = np.nan
    return out


def _eel_options(thresholds, levels, k, distance, on_single_group, bins, offset) -> dict:
    """The validated options shared by both forms of Δ(EEL)."""
    return {
        "grade": _eel_grader(thresholds, levels, bins),
        "k": check_k(k),
        "offset": check_offset(offset),
        "distance": choice("distance", distance, EEL_DISTANCES),
        "on_single_group": choice("on_single_group", on_single_group, ON_SINGLE_GROUP),
    }


@checked_arguments
def delta_eel_tabular(
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
    reduce: str | None = "mean",
):
    """Δ(EEL) between the EEL group target exposure from estimated and from true scores
    (tabular regime, §4.2.1).

    Both score vectors are discretized (:func:`~groupbias.evaluation.exposure.discretize`
    with ``thresholds``/``levels``, default ``a* = 0.5``; ``discretize_true=False`` uses
    ``true_relevance`` as given, e.g. graded labels), item target exposures ``eps*`` follow
    :func:`~groupbias.evaluation.exposure.target_exposure` (tie blocks of equal grade,
    ``e(r) = 1/log2(1 + r)``, 0 beyond ``k``, default no cutoff), and the group target
    exposure is ``E_g = sum_i w_g(i) eps*_i``. Then

        Δ(EEL) = || [Ẽ_A, Ẽ_N] - [E_A, E_N] ||

    with ``distance="l2"`` (default, as stated in §6.2), ``"l1"`` or ``"sq_l2"``. Since both
    vectors sum to the same total exposure, the two components are ``±δ`` and ℓ2 = √2·|δ|,
    ℓ1 = 2|δ| (the "multiply it by 2" of the Theorem 4.2 proof). A query whose items are all
    in one group has Δ = 0; ``on_single_group="skip"`` makes it NaN instead.
    ``bins="query_minmax"`` grades by ``levels`` (default 2) equal-width bins over each
    query's own min–max range (:func:`query_minmax_grades`) instead of fixed thresholds;
    ``offset=2`` uses ``e(r) = 1/log2(2 + r)``. Unnormalized exposure units. ``reduce``:
    ``"mean"`` (default), ``None`` (float64 [n_queries]) or ``"sum"`` (over non-NaN queries).
    """
    check_reduce(reduce, EEL_REDUCE)
    x, y, q = value_inputs(
        "estimated_scores",
        estimated_scores,
        "true_relevance",
        true_relevance,
        qptr,
        second_nonnegative=False,
    )
    g = check_groups(groups, x.size)
    if reduce is not None:  # a mean over one-group queries only would read as fair
        check_both_groups(g, q)
    opts = _eel_options(thresholds, levels, k, distance, on_single_group, bins, offset)
    model = _graded_exposure(x, q, None, opts["grade"], opts["k"], opts["offset"])
    out = _delta_eel(model, y, q, g, discretize_true=discretize_true, **opts)
    return reduce_queries(out, reduce, EEL_REDUCE)


@checked_arguments
def delta_eel_ranking(
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
    reduce: str | None = "mean",
):
    """Δ(EEL) of a model's ranking (general LTR regime, §6.2–6.3).

    The group exposure of the deterministic ranking by ``scores``
    (``E_g = sum_i w_g(i) e(rank_i)``, ties as in
    :func:`~groupbias.evaluation.exposure.expected_exposure`) — or the expected group
    exposure of a :class:`~groupbias.rank.plackett_luce.PlackettLuce` policy — against the
    full-information EEL group target exposure from ``true_relevance`` (discretized as in
    :func:`delta_eel_tabular`, with the same ``bins``), with the same cutoff ``k``, discount
    ``offset``, distance and single-group handling. ``reduce``: ``"mean"``, ``None`` or
    ``"sum"``.
    """
    check_reduce(reduce, EEL_REDUCE)
    r, y, q = ranking_inputs(
        scores, "true_relevance", true_relevance, qptr, second_nonnegative=False
    )
    g = check_groups(groups, r.n_items)
    if reduce is not None:  # a mean over one-group queries only would read as fair
        check_both_groups(g, q)
    ties = choice("ties", ties, TIES)
    opts = _eel_options(thresholds, levels, k, distance, on_single_group, bins, offset)
    sums = _eel_sums_by_sorts(r, y, g, q, ties, opts) if discretize_true else None
    if sums is not None:  # from the sorts, no dense weights on the fast path
        ea, en, ta, tn = sums.T
        out = _eel_distances(ea, en, ta, tn, q, g, opts["distance"], opts["on_single_group"])
        return reduce_queries(out, reduce, EEL_REDUCE)
    model = r.weights(opts["k"], ties, offset=opts["offset"]).dense()
    out = _delta_eel(model, y, q, g, discretize_true=discretize_true, **opts)
    return reduce_queries(out, reduce, EEL_REDUCE)


# --------------------------------------------------------------------------- retrieval runs

#: why a utility measure of a run has no value on a list (said when no query has one)
NO_RELEVANT = "no list holds a relevant item"


def run_measure(**declaration):
    """The declaration (:func:`~groupbias.evaluation.declaration.metric_info`) of a utility
    measure of a retrieval run: of the labels, over all items, given a ranking."""
    declaration = {"undefined": NO_RELEVANT, "bounds": (0.0, 1.0), **declaration}
    return metric_info(needs=("labels",), ranked=True, groups=("all",), **declaration)


def _relevant_ranks(scores, labels, qptr, k, relevant_from):
    """Ranks (ties by position), relevance and query of every item, and the cutoff."""
    r, lab, q = ranking_inputs(scores, "labels", labels, qptr)
    ranking = DeterministicRanking.of(r, q)
    if not isinstance(relevant_from, (int, float)) or isinstance(relevant_from, bool):
        raise ParameterError("relevant_from", "a grade (number)", relevant_from)
    return ranking.ranks(), lab >= relevant_from, q, query_index(q), check_k(k)


def _no_relevant(out: np.ndarray, n_rel: np.ndarray, q: np.ndarray, policy: str) -> np.ndarray:
    """``out`` with the queries without a relevant item set by ``policy`` (NaN for
    ``"skip"``, 0 for ``"zero"``) and empty queries NaN."""
    out[n_rel == 0] = np.nan if policy == "skip" else 0.0
    out[np.diff(q) == 0] = np.nan
    return out


@run_measure(name="map", aliases=("AP", "map_cut_{k}"), label="MAP")
@checked_arguments
def average_precision(
    scores,
    labels,
    *,
    qptr,
    k: int | None = None,
    relevant_from: float = 1,
    on_no_relevant: str = "skip",
    reduce: str | None = "mean",
):
    """AP@k of every query, as trec_eval's ``map_cut_k`` (MAP@10 of Bigdeli et al. 2021):

        AP@k = (1 / R) sum_{r <= k, d_r relevant} P@r,     P@r = |relevant in top r| / r

    with ``R`` the number of relevant items of the query (``labels >= relevant_from``) in
    the whole list, so the list must hold every judged relevant item (e.g.
    ``TextCollection.ranking_data(run, judged=True)``). Ties are broken by position (the
    run's order). A query without a relevant item: ``on_no_relevant="skip"`` (NaN) or
    ``"zero"``."""
    check_reduce(reduce)
    on_no_relevant = choice("on_no_relevant", on_no_relevant, ("skip", "zero"))
    ranks, rel, q, qidx, k = _relevant_ranks(scores, labels, qptr, k, relevant_from)
    inside = rel & (ranks <= (ranks.max(initial=0) if k is None else k))
    order = np.lexsort((ranks, qidx))
    hits = np.cumsum(inside[order])
    hits_before = np.repeat(np.concatenate(([0], hits))[q[:-1]], np.diff(q))
    n_hits = np.empty(ranks.size)
    n_hits[order] = hits - hits_before
    prec = np.where(inside, n_hits / np.maximum(ranks, 1), 0.0)
    n_rel = segment_sum(rel.astype(np.float64), q, qidx)
    out = segment_sum(prec, q, qidx) / np.where(n_rel > 0, n_rel, 1.0)
    return reduce_queries(_no_relevant(out, n_rel, q, on_no_relevant), reduce)


@run_measure(name="mrr", aliases=("RR", "recip_rank"), label="MRR")
@checked_arguments
def reciprocal_rank(
    scores,
    labels,
    *,
    qptr,
    k: int | None = None,
    relevant_from: float = 1,
    on_no_relevant: str = "skip",
    reduce: str | None = "mean",
):
    """RR@k of every query (MRR@10 when averaged): ``1 / r`` of the first relevant item
    (``labels >= relevant_from``) at rank ``r <= k``, 0 when none is in the top k; ties by
    position. A query without a relevant item: ``"skip"`` (NaN) or ``"zero"``."""
    check_reduce(reduce)
    on_no_relevant = choice("on_no_relevant", on_no_relevant, ("skip", "zero"))
    ranks, rel, q, qidx, k = _relevant_ranks(scores, labels, qptr, k, relevant_from)
    cut = ranks.max(initial=0) if k is None else k
    inv = np.where(rel & (ranks <= cut), 1.0 / np.maximum(ranks, 1), 0.0)
    out = np.zeros(q.size - 1)
    np.maximum.at(out, qidx, inv)
    n_rel = segment_sum(rel.astype(np.float64), q, qidx)
    return reduce_queries(_no_relevant(out, n_rel, q, on_no_relevant), reduce)


def _top_hits(scores, labels, qptr, k, relevant_from, on_no_relevant):
    """Relevant items in each query's top k (all without a cutoff), the number of relevant
    items and of items per query, and the ranks, relevance and offsets behind them."""
    choice("on_no_relevant", on_no_relevant, ("skip", "zero"))
    ranks, rel, q, qidx, k = _relevant_ranks(scores, labels, qptr, k, relevant_from)
    inside = rel if k is None else rel & (ranks <= k)
    hits = segment_sum(inside.astype(np.float64), q, qidx)
    n_rel = segment_sum(rel.astype(np.float64), q, qidx)
    return hits, n_rel, np.diff(q).astype(np.float64), (ranks, rel, q, qidx, k)


@run_measure(name="precision", aliases=("P", "P_{k}"), label="P")
@checked_arguments
def precision(
    scores, labels, *, qptr, k: int | None = None, relevant_from: float = 1,
    reduce: str | None = "mean",
):  # fmt: skip
    """P@k of every query, as trec_eval's ``P_k``: the relevant items (``labels >=
    relevant_from``) among the top k divided by k, also when the list is shorter (the rest
    counts as not relevant); without a cutoff, by the list's length. Ties by position."""
    check_reduce(reduce)
    hits, _, size, (*_, q, _, k) = _top_hits(scores, labels, qptr, k, relevant_from, "zero")
    out = hits / (float(k) if k is not None else np.maximum(size, 1.0))
    out[size == 0] = np.nan
    return reduce_queries(out, reduce)


@run_measure(name="recall", aliases=("R", "recall_{k}"), label="R")
@checked_arguments
def recall(
    scores, labels, *, qptr, k: int | None = None, relevant_from: float = 1,
    on_no_relevant: str = "skip", reduce: str | None = "mean",
):  # fmt: skip
    """R@k of every query, as trec_eval's ``recall_k``: the relevant items among the top k
    divided by all relevant items of the query's list (the qrels' relevant documents under
    trec_eval's semantics, :mod:`groupbias.evaluation.trec_eval`). Ties by position. A query
    without a relevant item: ``"skip"`` (NaN) or ``"zero"``."""
    check_reduce(reduce)
    hits, n_rel, _, (*_, q, _, k) = _top_hits(
        scores, labels, qptr, k, relevant_from, on_no_relevant
    )
    out = hits / np.maximum(n_rel, 1.0)
    return reduce_queries(_no_relevant(out, n_rel, q, on_no_relevant), reduce)


@run_measure(
    name="rprec", aliases=("Rprec", "r-precision", "R-prec"), label="R-prec", undefined=NO_RELEVANT
)
@checked_arguments
def r_precision(
    scores, labels, *, qptr, relevant_from: float = 1, on_no_relevant: str = "skip",
    reduce: str | None = "mean",
):  # fmt: skip
    """R-precision of every query, as trec_eval's ``Rprec``: P@R with R the number of
    relevant items of the query (the point where precision equals recall). Ties by
    position. A query without a relevant item: ``"skip"`` (NaN) or ``"zero"``."""
    check_reduce(reduce)
    _, n_rel, _, (ranks, rel, q, qidx, _) = _top_hits(
        scores, labels, qptr, None, relevant_from, on_no_relevant
    )
    hits = segment_sum((rel & (ranks <= n_rel[qidx])).astype(np.float64), q, qidx)
    out = hits / np.maximum(n_rel, 1.0)
    return reduce_queries(_no_relevant(out, n_rel, q, on_no_relevant), reduce)


@run_measure(name="bpref", aliases=("Bpref",), label="bpref")
@checked_arguments
def bpref(
    scores, labels, *, qptr, relevant_from: float = 1, on_no_relevant: str = "skip",
    reduce: str | None = "mean",
):  # fmt: skip
    """bpref of every query (Buckley & Voorhees 2004), as trec_eval computes it with every
    listed item judged:

        bpref = (1 / R) sum_{d relevant} (1 - min(n_d, R) / min(N, R))

    with ``R`` the relevant and ``N`` the non-relevant items of the list, ``n_d`` the
    non-relevant items ranked above ``d`` (a term is 1 when ``n_d = 0``). Unjudged documents
    count only under :mod:`groupbias.evaluation.trec_eval` (they are skipped there). Ties
    by position. A query without a relevant item: ``"skip"`` (NaN) or ``"zero"``."""
    check_reduce(reduce)
    _, n_rel, size, (ranks, rel, q, qidx, _) = _top_hits(
        scores, labels, qptr, None, relevant_from, on_no_relevant
    )
    order = np.lexsort((ranks, qidx))
    seen = np.cumsum(~rel[order])  # non-relevant items at or above each rank, cumulative
    above = np.empty(ranks.size)
    above[order] = seen - np.concatenate(([0], seen))[q[:-1]][qidx[order]]
    r, n = n_rel[qidx], (size - n_rel)[qidx]
    with np.errstate(invalid="ignore", divide="ignore"):
        term = np.where(above > 0, 1.0 - np.minimum(above, r) / np.minimum(n, r), 1.0)
    out = segment_sum(np.where(rel, term, 0.0), q, qidx) / np.maximum(n_rel, 1.0)
    return reduce_queries(_no_relevant(out, n_rel, q, on_no_relevant), reduce)


@run_measure(
    name="success",
    aliases=("Success", "success_{k}", "hit_rate"),
    label="Success",
    undefined=NO_RELEVANT,
)
@checked_arguments
def success(
    scores, labels, *, qptr, k: int | None = None, relevant_from: float = 1,
    on_no_relevant: str = "skip", reduce: str | None = "mean",
):  # fmt: skip
    """Success@k of every query, as trec_eval's ``success_k`` (ranx's ``hit_rate@k``): 1
    when a relevant item is in the top k, else 0. Ties by position. A query without a
    relevant item: ``"skip"`` (NaN) or ``"zero"``."""
    check_reduce(reduce)
    hits, n_rel, _, (*_, q, _, k) = _top_hits(
        scores, labels, qptr, k, relevant_from, on_no_relevant
    )
    out = (hits > 0).astype(np.float64)
    return reduce_queries(_no_relevant(out, n_rel, q, on_no_relevant), reduce)
