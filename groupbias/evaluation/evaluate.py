"""Evaluate scores on ranking data by metric names: the one-call entry point of the library,
and :func:`evaluate_run` for an external TREC run with its qrels and item→group file.

The regime is always said, never assumed (the same scores give very different ρ(DTR) and
Δ(EEL) in the two): ``regime="ltr"`` judges the *ranking* by the scores (a model's output:
ρ(DTR) and Δ(EEL) compare the ranking's exposure with the target exposure of the true
relevance); ``regime="tabular"`` treats the scores as utility estimates (paper §3.1,
Table 1).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence

import numpy as np

from ..core.errors import GroupBiasWarning, ParameterError
from ..core.validation import checked_arguments, choice, vector
from ..data.ranking_data import RankingData
from ..data.trec import read_groups, read_qrels, read_run
from ..simulate.group_bias import relevance_from_labels
from .catalog import (
    DEFAULT_METRICS,
    EvalSpec,
    compute_metrics,
    declaration_of,
    eel_thresholds,
    parse_metric,
)
from .inputs import check_both_groups, check_reduce, reduce_queries
from .protocol import EvaluationProtocol
from .trec_eval import (
    TREC_MEASURES,
    check_relevance_level,
    first_documents,
    judged_queries,
    trec_measures,
    trec_queries,
)

__all__ = ["evaluate", "evaluate_run", "run_data", "run_queries"]


@checked_arguments
def evaluate(
    scores,
    data: RankingData,
    *,
    metrics: Sequence = DEFAULT_METRICS,
    regime: str | None = None,
    relevance=None,
    reduce: str | None = "mean",
) -> dict:
    """``{metric key: value}`` of ``scores`` on ``data`` for every metric of ``metrics``.

    ``regime`` (required): ``"ltr"`` (the ranking the scores induce: a model's output, a
    run) or ``"tabular"`` (the scores are utility estimates, e.g. corrected attractiveness);
    ``data`` must be grouped (``data.groups``); ``relevance``: the true P(R) per item
    (default ``labels / label_max``); ``metrics``: names of
    :data:`groupbias.core.registry.METRICS` such as ``"ndcg@10"``, ``"ndcg@10:affected"``,
    ``"rho_dtr"``, ``"delta_eel"``, ``"awrf"``; ``reduce="mean"`` (default): each value is
    the mean over the queries where the metric is defined; ``reduce=None``: float64
    [n_queries] each (NaN where a query is skipped). Example::

        import groupbias as gb

        test = gb.load_dataset("trec2020", split="test")
        gb.evaluate(test.labels, test, regime="ltr", metrics=["ndcg@10", "rho_dtr", "delta_eel"])
    """
    regime = _check_regime(regime)
    check_reduce(reduce)
    if data.groups is None:
        raise ParameterError(
            "data.groups",
            "a grouped dataset",
            None,
            fix="apply a grouping (e.g. gb.load_dataset(..., grouping=...))",
        )
    if relevance is None:
        relevance = _relevance_from_labels(data, regime)
    relevance = vector(
        "relevance",
        relevance,
        data.n_items,
        low=0.0,
        high=1.0,
        what="probabilities of relevance P(R) in [0, 1]",
        fix="divide graded labels by their maximum (the default does so)",
    )
    spec = EvalSpec(
        labels=data.labels,
        relevance=relevance,
        groups=data.groups,
        qptr=data.qptr,
        thresholds=eel_thresholds(data.labels, data.label_max),
        metrics=tuple(metrics),
    )
    _refuse_one_group_means(data, spec.metrics, reduce)
    scores = vector("scores", scores, data.n_items, fix="drop or impute them before evaluating")
    per_query = compute_metrics(scores, spec, regime=regime)
    return {k: reduce_queries(v, reduce) for k, v in per_query.items()}


def _relevance_from_labels(data: RankingData, regime: str) -> np.ndarray:
    """The default true P(R), ``labels / label_max``. In the tabular regime the scores are
    estimates of a relevance the caller simulated (``sim.relevance``): a default taken
    silently would compare them with another scale, so it is named in a warning."""
    top = data.label_max if data.label_max else float(data.labels.max(initial=0.0))
    if regime == "tabular":
        warnings.warn(
            f"evaluate(regime='tabular') without relevance=: the true P(R) is taken as "
            f"labels / {top:g} (data.labels / data.label_max); pass relevance= (e.g. "
            "sim.relevance) when the scores estimate another relevance",
            GroupBiasWarning,
            stacklevel=3,
        )
    return relevance_from_labels(data.labels, label_max=data.label_max)


def _check_regime(regime) -> str:
    """The regime, which the caller must say (no default)."""
    if regime is None:
        raise ParameterError(
            "regime",
            "'ltr' (the ranking by the scores) or 'tabular' (the scores are utility estimates)",
            None,
            fix="say which: the same scores give different ρ(DTR) and Δ(EEL) in the two regimes",
        )
    return choice("regime", regime, ("ltr", "tabular"))


def _refuse_one_group_means(data: RankingData, metrics, reduce) -> None:
    """A mean of a fairness metric over lists that each hold one group (or one item) would
    read as perfectly fair: refused (the per-query values keep their conventions)."""
    fairness = any(parse_metric(m).name != "ndcg" for m in metrics)
    if fairness and reduce is not None and data.groups is not None:
        check_both_groups(data.groups, data.qptr)


def _load(given, reader, **options):
    """``given`` itself, or read from the path ``given``."""
    if isinstance(given, (str, os.PathLike)):
        return reader(given, **options)
    return given


def run_data(run, qrels, groups, *, affected: str | None = None, label_max=None):
    """The ranking data of an external run: the run's items per query (its candidates),
    labels from ``qrels`` (0 where unjudged), memberships from ``groups`` (every ranked item
    needs one). ``run``/``qrels``/``groups``: paths or :class:`~groupbias.data.trec.TrecRun`
    / :class:`~groupbias.data.trec.Qrels` / :class:`~groupbias.data.trec.GroupFile`;
    ``affected``: the affected group's label in a group file of labels; ``label_max``: the
    top of the label scale (default the largest label in ``qrels``). Queries the qrels do
    not judge are left out (as ``trec_eval`` does). Returns ``(data, scores)``."""
    run = _load(run, read_run)
    qrels = _load(qrels, read_qrels)
    if groups is None:
        raise ParameterError(
            "groups", "an item→group file (docno group)", None,
            fix="the measures of the run's candidates need each item's group (--groups); "
            "trec_eval's measures (nDCG, MAP, MRR, P, recall, Rprec, bpref, Success with "
            "semantics='trec_eval'; Judged) need none",
        )  # fmt: skip
    groups = _load(groups, read_groups, affected=affected)
    judged = judged_queries(run, qrels)
    keep = np.repeat(judged, np.diff(run.qptr))
    sizes = np.diff(run.qptr)[judged]
    qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    qids = np.repeat(run.query_ids[judged], sizes)
    items = run.item_ids[keep]
    labels = qrels.lookup(qids, items)
    top = float(label_max) if label_max is not None else float(qrels.labels.max(initial=0.0))
    data = RankingData(
        features=np.zeros((items.size, 0), dtype=np.float32),
        labels=labels,
        qptr=qptr,
        query_ids=run.query_ids[judged],
        item_ids=items,
        groups=groups.lookup(qids, items),
        label_max=top or 1.0,
        name=f"run {run.tag}",
    )
    return data, run.scores[keep]


#: how :func:`evaluate_run` computes the utility measures of a run (nDCG, MAP, P, ...)
SEMANTICS = ("trec_eval", "candidates")


def _trec_name(r) -> str:
    return r.name if r.k is None else f"{r.name}@{r.k}"


def _by_trec_eval(r, semantics: str) -> bool:
    """Whether :mod:`.trec_eval` computes the request ``r``: a measure it has, over all
    items and without options, under trec_eval's semantics (or one that needs to know
    which documents are judged, which only the qrels say)."""
    if r.name not in TREC_MEASURES or r.group != "all" or r.options:
        return False
    return semantics == "trec_eval" or "judgments" in declaration_of(r.name).needs


@checked_arguments
def evaluate_run(
    run,
    qrels,
    groups=None,
    *,
    metrics: Sequence = DEFAULT_METRICS,
    affected: str | None = None,
    label_max=None,
    protocol: EvaluationProtocol | None = None,
    reduce: str | None = "mean",
    semantics: str = "trec_eval",
    complete: bool = False,
    relevance_level: int = 1,
    max_docs: int | None = None,
) -> dict:
    """``{metric key: value}`` of an external TREC run (a ranking: the LTR regime) against
    ``qrels`` and an item→group file: the same numbers :func:`evaluate` gives on the same
    rankings of the same data (:func:`run_data` builds it; true relevance
    ``label / label_max``). ``groups`` is needed only by metrics of groups (ρ(DTR), Δ(EEL),
    AWRF, ...; None for the trec_eval measures under ``semantics="trec_eval"``). ``metrics``:
    names of :data:`groupbias.core.registry.METRICS`, ir_measures', trec_eval's and ranx's
    names too (``nDCG@10``, ``P_10``, ``r-precision``); ``protocol``: an
    :class:`~groupbias.evaluation.protocol.EvaluationProtocol` (default: deterministic);
    ``reduce``: as in :func:`evaluate`; ``semantics``: ``"trec_eval"`` (default) computes
    nDCG, MRR, MAP, P, R, R-precision, bpref and Success as ``trec_eval`` / ``ir_measures`` do
    (``judged``, which needs the qrels, always so)
    (:mod:`groupbias.evaluation.trec_eval`: every judged query of the run scores, the ideal
    from every judged document, linear gains, ties by document id), ``"candidates"`` judges
    the run's candidates as a ranking of their own, as every other metric (the metrics'
    own conventions: ``2^l - 1`` gains, queries without a relevant candidate skipped).
    ``trec_eval``'s options: ``complete`` (``-c``) adds the qrels' queries the run lacks (0 on
    the ``trec_eval`` measures, counted in their means; NaN on the others: no ranking);
    ``relevance_level`` (``-l N``): binary measures count a label >= N as relevant, nDCG
    keeps graded gains; ``max_docs`` (``-M N``): each query's first N documents only.
    ``reduce=None``: per query, in :func:`run_queries`' order. Example::

        import groupbias as gb

        gb.evaluate_run("bm25.run", "test.qrels", "test.groups", affected="L",
                        metrics=["nDCG@10", "rho_dtr", "delta_eel", "awrf"])
    """
    check_reduce(reduce)
    level = _relevance_level(relevance_level, choice("semantics", semantics, SEMANTICS))
    run, qrels = first_documents(_load(run, read_run), max_docs), _load(qrels, read_qrels)
    requests = [parse_metric(m) for m in metrics]
    trec = [r for r in requests if _by_trec_eval(r, semantics)]
    _, values = trec_measures(
        run, qrels, [_trec_name(r) for r in trec], complete=complete, relevance_level=level
    )
    per_query = {r.key: values[_trec_name(r)] for r in trec}
    rest = [m for m, r in zip(metrics, requests, strict=True) if r not in trec]
    if rest:
        options = dict(affected=affected, label_max=label_max, protocol=protocol)
        per_query |= _on_candidates_of(run, qrels, groups, rest, reduce, complete, options)
    return {r.key: reduce_queries(per_query[r.key], reduce) for r in requests}


def _on_candidates_of(run, qrels, groups, metrics, reduce, complete: bool, options) -> dict:
    """Per-query values of ``metrics`` on the run's candidates (the metrics that are not
    ``trec_eval``'s), NaN on the queries ``complete`` adds (they have no ranking)."""
    if groups is None:
        raise ParameterError(
            "groups", f"an item→group file for {', '.join(map(str, metrics))}", None,
            fix="give groups= (lines 'docno group'), or only trec_eval's measures (nDCG, MAP, "
            "MRR, P, R, R-precision, bpref, Success)",
        )  # fmt: skip
    protocol = options.pop("protocol")
    data, scores = run_data(run, qrels, groups, **options)
    _refuse_one_group_means(data, metrics, reduce)
    unranked = run_queries(run, qrels, complete=complete).size - data.n_queries
    return {
        key: np.concatenate([values, np.full(unranked, np.nan)])
        for key, values in _on_candidates(data, scores, metrics, protocol).items()
    }


def _relevance_level(level, semantics: str) -> int:
    """``trec_eval -l``'s level, which only the ``trec_eval`` semantics has."""
    level = check_relevance_level(level)
    if level != 1 and semantics != "trec_eval":
        raise ParameterError(
            "relevance_level", "1 with semantics='candidates'", level,
            fix="the relevance level is trec_eval's option: use semantics='trec_eval'",
        )  # fmt: skip
    return level


def run_queries(run, qrels, *, complete: bool = False) -> np.ndarray:
    """The query ids of :func:`evaluate_run`'s per-query values (``reduce=None``): the run's
    judged queries in run order, then, with ``complete``, the qrels' queries it lacks."""
    return trec_queries(_load(run, read_run), _load(qrels, read_qrels), complete=complete)


def _on_candidates(data: RankingData, scores, metrics, protocol) -> dict:
    """Per-query values of ``metrics`` on the run's candidates (the LTR regime)."""
    if protocol is None:
        return evaluate(scores, data, regime="ltr", metrics=metrics, reduce=None)
    spec = EvalSpec(
        labels=data.labels,
        relevance=relevance_from_labels(data.labels, label_max=data.label_max),
        groups=data.groups,
        qptr=data.qptr,
        thresholds=eel_thresholds(data.labels, data.label_max),
        metrics=tuple(metrics),
    )
    return protocol.evaluate(scores, spec, regime="ltr")
