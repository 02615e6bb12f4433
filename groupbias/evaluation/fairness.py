"""Group-fairness metrics of ranked lists from related work, on item-group membership.

AWRF (Sapiezynski et al. 2019; TREC Fair 2022) and nDCG × AWRF, TED / TExFAIR with the
rank-biased discounting factor RBDF (Abolghasemi et al. 2024), NFaiRR (Rekabsaz et al.
2021), CWEx(α) and ΔExposure (Mousavian et al. 2025), rank bias RaB and average rank bias
ARaB (Rekabsaz & Schedl 2020); the per-query Pearson correlation between two metrics is
:func:`groupbias.evaluation.stats.per_query_correlation`. ``docs/fairness_metrics.md`` states
every formula and convention.

Layout and call shape follow :mod:`groupbias.evaluation.metrics`: one function per metric,
flat arrays over all items of all queries with offsets ``qptr``, arrays positional
(``scores``, ``labels``), everything else keyword-only, ``k=None`` for no cutoff, ranks start
at 1, ties ``"average"`` (tied items share the mean weight of the ranks their block occupies)
or ``"stable"``; ``reduce="mean"`` (default) gives the mean over the queries where the metric
is defined, ``reduce=None`` the per-query values (float64 ``[n_queries]``, NaN = skipped;
empty queries are always skipped). ``scores`` may be a
:class:`~groupbias.rank.ranking.Ranking`: a deterministic ranking, or a Plackett–Luce policy
for the metrics of exposure (not for RaB / ARaB, which weigh rank positions).

``membership`` is float ``[n_items, n_groups]`` (``n_groups >= 2``), non-negative: row ``i``
is item ``i``'s association with every group — probabilities (hard 0/1 labels, or
fractions), term counts, or term shares (:mod:`groupbias.data.membership`). A row of zeros means
no group association (unknown group, or no group-representative term): such an item is
*non-representative* for TED/RBDF, *neutral* for NFaiRR and CWEx, and contributes nothing to
AWRF's group exposure. Our affected-group vector ``groups`` becomes the 2-column matrix
``[affected, non-affected]`` with :func:`groupbias.data.membership.membership_from_groups`.
"""

# long: the related-work metrics are one namespace (gb.fairness); they share the membership
# helpers (targets, column sums, rank weights), and most lines are the formulas in docstrings

from __future__ import annotations

import numpy as np

from ..core.errors import ParameterError
from ..core.segments import max_list_size, query_index, segment_sum
from ..core.validation import check_k, choice, is_integer, real
from ..rank.ranking import TIES, DeterministicRanking, Ranking, as_ranking
from .declaration import metric_info
from .exposure import tie_average_exposure
from .inputs import check_reduce, item_vector, membership_matrix, reduce_queries
from .metrics import ndcg

__all__ = [
    "awrf",
    "awrf_distance",
    "ndcg_awrf",
    "rbdf",
    "ted",
    "texfair",
    "neutrality",
    "fairr",
    "nfairr",
    "class_exposure",
    "cwex",
    "delta_exposure",
    "rank_bias",
    "arab",
]

TARGETS = ("uniform", "corpus", "relevant")
AWRF_DISTANCES = ("js", "l1", "kl")
WEIGHTS = ("log", "geometric", "uniform")
ON_NO_REPRESENTATIVE = ("skip", "fair")
#: NFaiRR's background set S, one set of names everywhere (docs/fairness_metrics.md): the
#: query's candidates (of a retrieval run: every document it retrieved), the ranking's own
#: top k (the retrieval judge's; :func:`nfairr` sees only the items passed), every item of
#: every query
BACKGROUNDS = ("candidates", "top_k", "collection")
#: documented aliases: ``retrieved``, the retrieval judge's earlier name of ``candidates``
BACKGROUND_ALIASES = {"retrieved": "candidates"}
ASSIGNMENTS = ("expected", "hard")
MAGNITUDES = ("tc", "tf", "bool")
_ROW_SUM_TOL = 1e-9
#: the cutoff of a related-work metric asked for by name without ``@k`` (``"awrf"`` =
#: ``"awrf@10"``; ``{"name": "awrf", "k": None}`` for no cutoff)
DEFAULT_K = 10


#: what a related-work metric reads: memberships, and the relevance labels for some
MEMBERSHIP = ("membership",)
WITH_LABELS = ("membership", "labels")
#: why a related-work metric has no value on any list (said when no query has one)
NO_REPRESENTATIVE = "no candidate list holds a group-representative document"
NO_NEUTRAL = "no candidate list holds a neutral document"
NO_NEUTRAL_WHY = " (every document is entirely one group's, so no reordering is more neutral)"


def related_work(**declaration):
    """The declaration (:func:`~groupbias.evaluation.declaration.metric_info`) of a
    related-work metric: asked for by name it gets a ranking, has no ``:group`` suffix and
    cuts at :data:`DEFAULT_K` without ``@k``."""
    return metric_info(
        related_work=True, ranked=True, groups=("all",), default_k=DEFAULT_K, **declaration
    )


# --------------------------------------------------------------------------- validation


def _prepare(scores, qptr, membership, k, ties):
    """``(ranking, qptr, qidx, membership, k, ties)``, validated; ``scores`` may be a
    :class:`~groupbias.rank.ranking.Ranking` of the queries ``qptr``."""
    r = as_ranking(scores, qptr)
    q = r.qptr
    m = membership_matrix(membership, r.n_items)
    return r, q, query_index(q), m, check_k(k), choice("ties", ties, TIES)


def _distribution(name: str, value, n_groups: int, choices=TARGETS) -> np.ndarray:
    """A user-given group distribution (any non-negative weights, normalized to sum 1)."""
    try:
        a = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        a = np.array([np.nan])
    if (
        a.ndim != 1
        or a.size != n_groups
        or not np.all(np.isfinite(a))
        or a.min() < 0
        or a.sum() <= 0
    ):
        raise ParameterError(
            name,
            f"one of {', '.join(map(repr, choices))} or "
            f"{n_groups} non-negative weights with a positive sum",
            value,
        )
    return a / a.sum()


def _row_sum(m: np.ndarray) -> np.ndarray:
    """``m.sum(axis=1)`` by column (faster for the few groups of a membership matrix)."""
    out = m[:, 0].copy()
    for g in range(1, m.shape[1]):
        out += m[:, g]
    return out


def _column_sums(weights: np.ndarray, m: np.ndarray, q: np.ndarray, qidx: np.ndarray) -> np.ndarray:
    """``out[q, g] = sum_{i in q} weights_i * m[i, g]`` (float64 [n_queries, n_groups]).

    Only items with a non-zero weight are visited (with a cutoff k most items of long
    lists have weight 0)."""
    nq = q.size - 1
    nz = np.flatnonzero(weights)
    if nz.size < weights.size // 2:
        weights, m, qidx = weights[nz], m[nz], qidx[nz]
    out = np.empty((nq, m.shape[1]))
    for g in range(m.shape[1]):
        out[:, g] = np.bincount(qidx, weights=weights * m[:, g], minlength=nq)
    return out


def _row_shares(m: np.ndarray) -> np.ndarray:
    """Rows normalized to sum 1; rows of zeros stay zero."""
    rows = _row_sum(m)[:, None]
    return np.divide(m, rows, out=np.zeros_like(m), where=rows > 0)


def _targets(target, m: np.ndarray, labels, q: np.ndarray, qidx: np.ndarray) -> np.ndarray:
    """Target group distribution of every query, float64 [n_queries, n_groups]; NaN rows
    where it is undefined (no item, or no relevant item, with a group association)."""
    nq, n_groups = q.size - 1, m.shape[1]
    if not isinstance(target, str):
        return np.broadcast_to(_distribution("target", target, n_groups), (nq, n_groups))
    target = choice("target", target, TARGETS)
    if target == "uniform":
        return np.full((nq, n_groups), 1.0 / n_groups)
    if target == "relevant":
        if labels is None:
            raise ParameterError(
                "labels",
                "relevance labels (target='relevant' is the "
                "group share among the relevant items, label > 0)",
                None,
            )
        rel = np.flatnonzero(labels > 0)
        m, qidx = m[rel], qidx[rel]
    sums = _column_sums(np.ones(m.shape[0]), _row_shares(m), q, qidx)
    tot = sums.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = sums / tot[:, None]
    out[tot <= 0] = np.nan
    return out


def _labels(labels, n: int) -> np.ndarray | None:
    return None if labels is None else item_vector("labels", labels, n, nonnegative=True)


# --------------------------------------------------------------------------- rank weights


def _weight_table(max_len: int, k: int | None, weights, patience: float) -> np.ndarray:
    r = np.arange(1, max_len + 1, dtype=np.float64)
    if isinstance(weights, str):
        if weights == "log":
            table = 1.0 / np.log2(1.0 + r)
        elif weights == "geometric":
            table = patience ** (r - 1.0)
        else:
            table = np.ones(max_len)
    else:
        table = np.zeros(max_len)
        n = min(max_len, weights.size)
        table[:n] = weights[:n]
    if k is not None:
        table[k:] = 0.0
    return table


def _check_weights(weights, patience):
    if isinstance(weights, str):
        weights = choice("weights", weights, WEIGHTS)
        if weights == "geometric":
            patience = real("patience", patience, low=0.0, high=1.0, low_open=True)
        return weights, patience
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        w = np.array([np.nan])
    if w.ndim != 1 or w.size == 0 or not np.all(np.isfinite(w)) or w.min() < 0:
        raise ParameterError(
            "weights",
            "one of "
            + ", ".join(map(repr, WEIGHTS))
            + " or a 1-D array of non-negative per-rank weights",
            weights,
        )
    return w, patience


def _rank_weights(r: Ranking, k, ties, weights="log", patience=0.5) -> np.ndarray:
    if isinstance(weights, str) and weights == "log":
        return r.weights(k, ties).dense()
    table = _weight_table(max_list_size(r.qptr), k, weights, patience)
    return r.weights(k, ties, table=table).dense()


def _finish(values: np.ndarray, q: np.ndarray) -> np.ndarray:
    values[np.diff(q) == 0] = np.nan
    return values


# --------------------------------------------------------------------------- AWRF


def _kl2(p: np.ndarray, t: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        terms = np.where(p > 0, p * np.log2(p / t), 0.0)
    return terms.sum(axis=1)


def _distribution_distance(p: np.ndarray, t: np.ndarray, distance: str) -> np.ndarray:
    if distance == "l1":
        return np.abs(p - t).sum(axis=1)
    if distance == "kl":
        return _kl2(p, t)
    mid = 0.5 * (p + t)
    return np.clip(0.5 * _kl2(p, mid) + 0.5 * _kl2(t, mid), 0.0, 1.0)


@related_work(name="awrf_distance", label="AWRF distance", needs=WITH_LABELS, direction="lower")
def awrf_distance(
    scores,
    *,
    qptr,
    membership,
    labels=None,
    k: int | None = None,
    target="uniform",
    distance: str = "js",
    weights="log",
    patience: float = 0.5,
    ties: str = "average",
    on_no_representative: str = "skip",
    reduce: str | None = "mean",
):
    """AWRF distance Δ(nE, Ê) of every query (Sapiezynski et al. 2019; Chen & Fang,
    FAIR-QR, Eq. 4–6).

    ``E_g = sum_{r <= k} v_r a_{d_r, g}`` is the attention-weighted exposure the ranking by
    ``scores`` gives group ``g`` (``a_d`` = the item's ``membership`` row), ``nE = E /
    ||E||_1`` and ``Ê`` the target distribution:

    * ``target="uniform"`` (default): ``1 / n_groups``;
    * ``"corpus"``: the group share among the query's candidates, the mean of the
      row-normalized memberships of the items with a group association;
    * ``"relevant"``: the same over the relevant items (``labels > 0``; TREC Fair 2022);
    * a vector of ``n_groups`` non-negative weights (normalized): a fixed global target,
      e.g. the share over the whole collection.

    ``distance``: ``"js"`` (default; Jensen–Shannon divergence, base 2, in [0, 1]),
    ``"l1"`` (``sum_g |nE_g − Ê_g|``, in [0, 2]) or ``"kl"`` (``KL(nE || Ê)`` in bits,
    infinite when ``Ê_g = 0 < nE_g``). ``weights``: ``"log"`` (default, ``v_r = 1 /
    log2(1 + r)``), ``"geometric"`` (``v_r = patience^(r-1)``), ``"uniform"`` (1), or an
    array of per-rank weights (``v_r = weights[r-1]``, 0 beyond its length); ``v_r = 0``
    for ``r > k``. A query with no group exposure in the top k (every item there has a row
    of zeros): ``on_no_representative="skip"`` (default, NaN) or ``"fair"`` (0). Queries
    with an undefined target are NaN. Returns float64 [n_queries].
    """
    check_reduce(reduce)
    r, q, qidx, m, k, ties = _prepare(scores, qptr, membership, k, ties)
    distance = choice("distance", distance, AWRF_DISTANCES)
    on_no_representative = choice(
        "on_no_representative", on_no_representative, ON_NO_REPRESENTATIVE
    )
    weights, patience = _check_weights(weights, patience)
    lab = _labels(labels, r.n_items)
    t = _targets(target, m, lab, q, qidx)
    w = _rank_weights(r, k, ties, weights, patience)
    exposure = _column_sums(w, m, q, qidx)
    tot = exposure.sum(axis=1)
    none = tot <= 0
    with np.errstate(invalid="ignore", divide="ignore"):
        p = exposure / np.where(none, 1.0, tot)[:, None]
    d = _distribution_distance(p, t, distance)
    d[none] = np.nan if on_no_representative == "skip" else 0.0
    d[np.isnan(t).any(axis=1)] = np.nan
    return reduce_queries(_finish(d, q), reduce)


@related_work(name="awrf", label="AWRF", needs=WITH_LABELS)
def awrf(scores, *, qptr, membership, reduce: str | None = "mean", **options):
    """AWRF in the TREC Fair 2022 orientation, ``1 − Δ(nE, Ê)`` (1 = the exposure matches
    the target); ``options`` as in :func:`awrf_distance` (``labels``, ``k``, ``target``,
    ``distance``, ``weights``, ``patience``, ``ties``, ``on_no_representative``). With the
    default JS distance the value is in [0, 1]; with ``"l1"`` in [−1, 1]."""
    check_reduce(reduce)
    d = awrf_distance(scores, qptr=qptr, membership=membership, reduce=None, **options)
    return reduce_queries(1.0 - d, reduce)


@related_work(name="ndcg_awrf", label="nDCG×AWRF", needs=WITH_LABELS)
def ndcg_awrf(
    scores,
    labels,
    *,
    qptr,
    membership,
    k: int | None = None,
    target="relevant",
    gain: str = "exp2",
    ties: str = "average",
    on_no_relevant: str = "skip",
    reduce: str | None = "mean",
    **options,
):
    """nDCG@k × AWRF@k of every query (the combined score of Chen & Fang, FAIR-QR, TREC
    Fair 2022).

    NDCG from :func:`groupbias.evaluation.metrics.ndcg` (``gain``, ``ties``,
    ``on_no_relevant``), AWRF from :func:`awrf` (``target``, and ``options``: ``distance``,
    ``weights``, ``patience``, ``on_no_representative``); the default target is the group
    share among the relevant items, as in Chen & Fang, FAIR-QR. NaN where either factor is
    NaN."""
    check_reduce(reduce)
    ties = choice("ties", ties, TIES)
    r = as_ranking(scores, qptr)
    nd = ndcg(
        r,
        labels,
        qptr=qptr,
        k=k,
        gain=gain,
        ties=ties,
        on_no_relevant=on_no_relevant,
        reduce=None,
    )
    aw = awrf(
        r,
        qptr=qptr,
        membership=membership,
        labels=labels,
        k=k,
        target=target,
        ties=ties,
        reduce=None,
        **options,
    )
    return reduce_queries(nd * aw, reduce)


# --------------------------------------------------------------------------- TED / TExFAIR


def _rbdf(w, m, q, qidx):
    # numerator and total summed the same way: RBDF is exactly 1 when every item counts
    total = segment_sum(w, q)
    rep = _row_sum(m) > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        return segment_sum(w * rep, q) / total


@related_work(name="rbdf", label="RBDF", needs=MEMBERSHIP)
def rbdf(
    scores,
    *,
    qptr,
    membership,
    k: int | None = None,
    ties: str = "average",
    reduce: str | None = "mean",
):
    """Rank-biased discounting factor (Abolghasemi et al. 2024, Eq. 11) of every query:

        RBDF = sum_{r <= k} 1[d_r in S_R] / log2(1 + r)  /  sum_{r <= k} 1 / log2(1 + r)

    with ``S_R`` the representative items (a ``membership`` row with a positive entry).
    In [0, 1]; NaN for empty queries. Returns float64 [n_queries]."""
    check_reduce(reduce)
    r, q, qidx, m, k, ties = _prepare(scores, qptr, membership, k, ties)
    return reduce_queries(_finish(_rbdf(r.weights(k, ties).dense(), m, q, qidx), q), reduce)


def _ted(scores, qptr, membership, labels, k, target, rbdf, ties, on_no_representative):
    r, q, qidx, m, k, ties = _prepare(scores, qptr, membership, k, ties)
    on_no_representative = choice(
        "on_no_representative", on_no_representative, ON_NO_REPRESENTATIVE
    )
    if not isinstance(rbdf, bool):
        raise ParameterError("rbdf", "True or False", rbdf)
    t = _targets(target, m, _labels(labels, r.n_items), q, qidx)
    w = r.weights(k, ties).dense()
    exposure = _column_sums(w, m, q, qidx)
    tot = exposure.sum(axis=1)
    none = tot <= 0
    p = exposure / np.where(none, 1.0, tot)[:, None]
    ted = np.abs(p - t).sum(axis=1)
    if rbdf:
        ted = ted * _rbdf(w, m, q, qidx)
    ted[none] = np.nan if on_no_representative == "skip" else 0.0
    max_ted = 2.0 * (1.0 - t.min(axis=1))
    ted[np.isnan(max_ted)] = np.nan
    return _finish(ted, q), max_ted


@related_work(
    name="ted", label="TED", needs=WITH_LABELS, direction="lower", undefined=NO_REPRESENTATIVE
)
def ted(
    scores,
    *,
    qptr,
    membership,
    labels=None,
    k: int | None = None,
    target="uniform",
    rbdf: bool = True,
    ties: str = "average",
    on_no_representative: str = "fair",
    reduce: str | None = "mean",
):
    """Term exposure-based divergence TED@k of every query (Abolghasemi et al. 2024, Eq. 7–12).

    With position bias ``v_r = 1 / log2(1 + r)`` (0 beyond ``k``), the group
    representation of the ranking by ``scores`` is

        p(G_i | q, k) = sum_{r <= k} v_r a_{d_r, i}  /  sum_g sum_{r <= k} v_r a_{d_r, g}

    where ``a_d`` is the item's ``membership`` row. With term shares ``a_{d,i} =
    M^{G_i}(d) / |d|`` (:attr:`TermMembership.term_exposure`) the numerator is the term
    exposure of the group's terms (Eq. 8–9). Then

        TED = sum_i |p(G_i | q, k) − p̂_i| · RBDF(q, k)          (Eq. 12)

    (``rbdf=False``: without the factor, Eq. 10). ``target`` as in
    :func:`awrf_distance` (default uniform, ``p̂_i = 1 / n_groups``). TED is in
    ``[0, 2 (1 − min_i p̂_i)]``. No representative item in the top k (``p`` undefined;
    ``RBDF = 0``): ``on_no_representative="fair"`` (default) gives TED = 0, the limit of
    Eq. 12 as RBDF → 0 (non-representative items count as unbiased); ``"skip"`` gives NaN.
    Returns float64 [n_queries].
    """
    check_reduce(reduce)
    return reduce_queries(
        _ted(scores, qptr, membership, labels, k, target, rbdf, ties, on_no_representative)[0],
        reduce,
    )


@related_work(name="texfair", label="TExFAIR", needs=WITH_LABELS, undefined=NO_REPRESENTATIVE)
def texfair(
    scores,
    *,
    qptr,
    membership,
    labels=None,
    k: int | None = None,
    target="uniform",
    rbdf: bool = True,
    ties: str = "average",
    on_no_representative: str = "fair",
    reduce: str | None = "mean",
):
    """TExFAIR@k = max(TED) − TED@k of every query (Abolghasemi et al. 2024, Eq. 13),
    higher = fairer.

    ``max(TED) = 2 (1 − min_i p̂_i)``, attained when all exposure goes to the group with the
    smallest target share and every item is representative; with two groups and the
    uniform target ``max(TED) = 1`` and TExFAIR = 1 − TED ∈ [0, 1]. Options as in
    :func:`ted`. Returns float64 [n_queries]."""
    check_reduce(reduce)
    ted, max_ted = _ted(
        scores, qptr, membership, labels, k, target, rbdf, ties, on_no_representative
    )
    return reduce_queries(max_ted - ted, reduce)


# --------------------------------------------------------------------------- NFaiRR


def neutrality(membership, *, tau: float = 0.0, target="uniform") -> np.ndarray:
    """Document neutrality ω(d) (Rekabsaz et al. 2021; Abolghasemi et al. 2024, Eq. 1),
    float64 [n_items].

    With ``M_g`` the item's ``membership`` row and ``J`` the balanced proportions
    (``target="uniform"``: ``J_g = 1 / n_groups``; or a vector of weights, normalized):

        ω = 1                                        if sum_g M_g <= tau
        ω = 1 − sum_g | M_g / sum_x M_x − J_g |      otherwise

    ``tau`` (default 0) is the threshold below which an item counts as neutral: with 0,
    exactly the items with no group association are neutral. The reference implementation
    uses ``tau = 1`` on raw term counts (an item with a single group term is neutral); pass
    :attr:`TermMembership.counts` with ``tau=1`` for that. For two groups ω ∈ [0, 1]; with
    more groups ω can be negative (down to ``1 − 2 (1 − min J)``)."""
    m = membership_matrix(membership, None)
    tau = real("tau", tau, low=0.0)
    if isinstance(target, str):
        choice("target", target, ("uniform",))
        j = np.full(m.shape[1], 1.0 / m.shape[1])
    else:
        j = _distribution("target", target, m.shape[1], choices=("uniform",))
    rows = _row_sum(m)
    inv = np.divide(1.0, rows, out=np.zeros_like(rows), where=rows > 0)
    omega = np.ones(m.shape[0])
    for g in range(m.shape[1]):
        omega -= np.abs(m[:, g] * inv - j[g])
    return np.where(rows <= tau, 1.0, omega)


def _fairr(scores, qptr, membership, k, tau, target, ties):
    r, q, qidx, m, k, ties = _prepare(scores, qptr, membership, k, ties)
    omega = neutrality(m, tau=tau, target=target)
    return q, qidx, k, omega, segment_sum(omega * r.weights(k, ties).dense(), q, qidx)


@related_work(name="fairr", label="FaiRR", needs=MEMBERSHIP, undefined=NO_NEUTRAL)
def fairr(
    scores,
    *,
    qptr,
    membership,
    k: int | None = None,
    tau: float = 0.0,
    target="uniform",
    ties: str = "average",
    reduce: str | None = "mean",
):
    """FaiRR@k = sum_{r <= min(k, n)} ω(d_r) / log2(1 + r) of every query
    (Abolghasemi et al. 2024, Eq. 2),
    ω from :func:`neutrality`. Returns float64 [n_queries] (NaN for empty queries)."""
    check_reduce(reduce)
    q, _, _, _, fairr = _fairr(scores, qptr, membership, k, tau, target, ties)
    return reduce_queries(_finish(fairr, q), reduce)


def nfairr_background(value) -> str:
    """One of :data:`BACKGROUNDS` (an alias of :data:`BACKGROUND_ALIASES` read as its name)."""
    if isinstance(value, str):
        value = BACKGROUND_ALIASES.get(value, value)
    return choice("background", value, BACKGROUNDS)


@related_work(
    name="nfairr", label="NFaiRR", needs=MEMBERSHIP, undefined=NO_NEUTRAL + NO_NEUTRAL_WHY
)
def nfairr(
    scores,
    *,
    qptr,
    membership,
    k: int | None = None,
    tau: float = 0.0,
    target="uniform",
    background: str = "candidates",
    ties: str = "average",
    reduce: str | None = "mean",
):
    """NFaiRR@k = FaiRR@k / IFaiRR@k of every query (Rekabsaz et al. 2021; Abolghasemi et al.
    2024, Eq. 3).

    IFaiRR is the FaiRR of the best ordering of the background set ``S`` (its items sorted
    by ω, descending, ``sum_{r <= min(k, |S|)} ω_(r) / log2(1 + r)``):

    * ``background="candidates"`` (default; Mousavian et al. 2025): ``S`` = the query's own
      candidate
      items, so NFaiRR ∈ [0, 1] (for ω ≥ 0) and 1 means no reordering of the candidates is
      more neutral at the top;
    * ``"collection"`` (Abolghasemi et al. 2024): ``S`` = every item passed (all queries), the same
      IFaiRR for every query; needs a cutoff ``k``.

    ω from :func:`neutrality` (``tau``, ``target``). A query with IFaiRR <= 0 (no neutral
    weight in the background, e.g. every candidate entirely one group) is NaN: NFaiRR
    cannot rank such lists. Returns float64 [n_queries]."""
    check_reduce(reduce)
    background = nfairr_background(background)
    if background == "top_k":
        raise ParameterError(
            "background",
            "candidates or collection: nfairr() sees only the items passed (for top_k pass the "
            "ranking's top k, as the retrieval judge's background: top_k does)",
            background,
        )
    q, qidx, k, omega, fairr = _fairr(scores, qptr, membership, k, tau, target, ties)
    if background == "candidates":
        ideal = segment_sum(omega * tie_average_exposure(omega, q, qidx, k), q, qidx)
    else:
        if k is None:
            raise ParameterError(
                "k",
                "a cutoff (background='collection' ranks the top k of the whole collection)",
                None,
            )
        top = np.sort(omega)[::-1][:k]
        ideal = np.full(q.size - 1, float(np.sum(top / np.log2(2.0 + np.arange(top.size)))))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(ideal > 0, fairr / np.where(ideal > 0, ideal, 1.0), np.nan)
    return reduce_queries(_finish(out, q), reduce)


# --------------------------------------------------------------------------- CWEx


def _classes(m: np.ndarray, assignment: str) -> np.ndarray:
    """Class probabilities [n_items, n_groups + 1]; the last column is the neutral class."""
    n, n_groups = m.shape
    if assignment == "expected":
        rows = _row_sum(m)
        return np.concatenate([m, np.clip(1.0 - rows, 0.0, None)[:, None]], axis=1)
    out = np.zeros((n, n_groups + 1))
    positive = m > 0
    pure = positive.sum(axis=1) == 1
    out[np.flatnonzero(pure), np.argmax(positive[pure], axis=1)] = 1.0
    out[~pure, n_groups] = 1.0
    return out


def _class_exposure(scores, qptr, membership, k, assignment, ties):
    r, q, qidx, m, k, ties = _prepare(scores, qptr, membership, k, ties)
    assignment = choice("assignment", assignment, ASSIGNMENTS)
    if assignment == "expected" and m.size:
        top = _row_sum(m).max()
        if top > 1.0 + _ROW_SUM_TOL:
            raise ParameterError(
                "membership",
                "rows summing to at most 1 for "
                "assignment='expected' (group probabilities; the rest is "
                "the neutral class)",
                f"a row sum of {top!r}",
                fix="normalize the rows, or use assignment='hard' for counts",
            )
    e = r.weights(k, ties).dense()
    nz = np.flatnonzero(e)
    cols = _column_sums(e[nz], _classes(m[nz], assignment), q, qidx[nz])
    # every item's classes sum to 1: the total is the sum of the columns (so no share
    # exceeds 1 by rounding)
    total = cols.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = cols / total[:, None]
    out[np.diff(q) == 0] = np.nan
    return out


def class_exposure(
    scores,
    *,
    qptr,
    membership,
    k: int | None = None,
    assignment: str = "expected",
    ties: str = "average",
) -> np.ndarray:
    """Normalized class exposure of every query (Mousavian et al. 2025, Eq. 2–4), float64
    [n_queries, n_groups + 1]: column ``g`` is ``Exposure_g = sum_{r <= k, d_r in g} p(r) /
    sum_{r <= min(k, n)} p(r)`` with ``p(r) = 1 / log2(1 + r)``; the last column is the
    neutral class. Columns sum to 1 (NaN rows for empty queries).

    Classes from ``membership`` (``assignment``):

    * ``"expected"`` (default): an item is in group ``g`` with probability ``M_g`` and
      neutral with probability ``1 − sum_g M_g`` (rows must sum to at most 1); the
      exposures are the expectations over these labels. Crisp rows (one-hot or zero) give
      the paper's hard classes.
    * ``"hard"``: an item is in group ``g`` when ``g`` is its only group with a positive
      association; items with no association (unknown) or with several (mixed) are neutral.
      Works with counts.
    """
    return _class_exposure(scores, qptr, membership, k, assignment, ties)


def _gap(x: np.ndarray) -> np.ndarray:
    groups = x[:, :-1]
    return groups.max(axis=1) - groups.min(axis=1)


@related_work(name="delta_exposure", label="ΔExposure", needs=MEMBERSHIP, direction="lower")
def delta_exposure(
    scores,
    *,
    qptr,
    membership,
    k: int | None = None,
    assignment: str = "expected",
    ties: str = "average",
    reduce: str | None = "mean",
):
    """ΔExposure of every query (Mousavian et al. 2025): ``max_g Exposure_g − min_g
    Exposure_g`` over
    the groups (the neutral class excluded), i.e. ``|Exposure_A − Exposure_B|`` for two
    groups and the gap between the most and the least exposed group for more. In [0, 1],
    lower = fairer. Classes and exposure as in :func:`class_exposure`."""
    check_reduce(reduce)
    return reduce_queries(
        _gap(_class_exposure(scores, qptr, membership, k, assignment, ties)), reduce
    )


@related_work(name="cwex", label="CWEx", needs=MEMBERSHIP)
def cwex(
    scores,
    *,
    qptr,
    membership,
    alpha: float = 0.5,
    k: int | None = None,
    assignment: str = "expected",
    ties: str = "average",
    reduce: str | None = "mean",
):
    """Class-wise weighted exposure CWEx(α) of every query (Mousavian et al. 2025, Eq. 1):

        CWEx = α · Exposure_neutral − (1 − α) · ΔExposure

    in ``[α − 1, α]``, higher = fairer; the paper reports α = 0.2, 0.5, 0.7. Classes and
    exposure as in :func:`class_exposure`. Returns float64 [n_queries]."""
    check_reduce(reduce)
    alpha = real("alpha", alpha, low=0.0, high=1.0)
    x = _class_exposure(scores, qptr, membership, k, assignment, ties)
    return reduce_queries(alpha * x[:, -1] - (1.0 - alpha) * _gap(x), reduce)


# --------------------------------------------------------------------------- RaB / ARaB


def _pair(pair, n_groups: int) -> tuple[int, int]:
    ok = isinstance(pair, (tuple, list)) and len(pair) == 2 and all(is_integer(x) for x in pair)
    if not ok or not all(0 <= int(x) < n_groups for x in pair) or pair[0] == pair[1]:
        raise ParameterError("pair", f"two distinct group columns in 0..{n_groups - 1}", pair)
    return int(pair[0]), int(pair[1])


def _rank_bias(scores, qptr, membership, k, magnitude, pair, ties, average):
    r, q, qidx, m, k, ties = _prepare(scores, qptr, membership, k, ties)
    ranking = DeterministicRanking.of(r, q)  # the metric weighs rank positions
    magnitude = choice("magnitude", magnitude, MAGNITUDES)
    a, b = _pair(pair, m.shape[1])
    mag = m[:, [a, b]]
    if magnitude == "tf":
        mag = np.log1p(mag)
    elif magnitude == "bool":
        mag = (mag > 0).astype(np.float64)
    sizes = np.diff(q)
    cut = sizes if k is None else np.minimum(sizes, k)
    harmonic = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, max_list_size(q) + 1))])

    def slot_fn(ranks, rows):
        t = cut[rows][:, None]
        inside = ranks <= t
        if average:
            w = (harmonic[t] - harmonic[np.minimum(ranks, t) - 1]) / t
        else:
            w = np.broadcast_to(1.0 / t, ranks.shape)
        return np.where(inside, w, 0.0)

    w = ranking.slot_weights(slot_fn, ties, k).dense()
    return _finish(segment_sum(w * (mag[:, 0] - mag[:, 1]), q, qidx), q)


@related_work(name="rank_bias", label="RaB", needs=MEMBERSHIP, direction="zero")
def rank_bias(
    scores,
    *,
    qptr,
    membership,
    k: int | None = None,
    magnitude: str = "tf",
    pair=(0, 1),
    ties: str = "average",
    reduce: str | None = "mean",
):
    """Rank bias RaB@k of every query (Rekabsaz & Schedl 2020; Bigdeli et al. 2021):

        RaB^g@k = (1 / T) sum_{r <= T} mag^g(d_r),    T = min(k, n)
        RaB@k   = RaB^a@k − RaB^b@k                    (a, b) = pair

    signed: positive when group ``a`` has the larger magnitude near the top (the reference
    reports male − female). The magnitude of an item comes from its ``membership`` row
    (raw term counts ``M^g(d)`` for the paper's metric, :attr:`TermMembership.counts`):
    ``magnitude="tc"`` (``M``), ``"tf"`` (default, ``ln(1 + M)``) or ``"bool"``
    (``1[M > 0]``). ``k=None``: the whole list (the paper's cutoff t; 10 in Bigdeli et al. 2021).
    Returns float64 [n_queries]."""
    check_reduce(reduce)
    return reduce_queries(
        _rank_bias(scores, qptr, membership, k, magnitude, pair, ties, average=False), reduce
    )


@related_work(name="arab", label="ARaB", needs=MEMBERSHIP, direction="zero")
def arab(
    scores,
    *,
    qptr,
    membership,
    k: int | None = None,
    magnitude: str = "tf",
    pair=(0, 1),
    ties: str = "average",
    reduce: str | None = "mean",
):
    """Average rank bias ARaB@k of every query (Rekabsaz & Schedl 2020; Bigdeli et al. 2021):

        ARaB@k = (1 / T) sum_{x=1}^{T} RaB@x = sum_{r <= T} (H_T − H_{r−1}) / T · Δmag(d_r)

    with ``T = min(k, n)``, ``H`` the harmonic numbers and ``Δmag = mag^a − mag^b``; options
    as in :func:`rank_bias`. Returns float64 [n_queries]."""
    check_reduce(reduce)
    return reduce_queries(
        _rank_bias(scores, qptr, membership, k, magnitude, pair, ties, average=True), reduce
    )
