"""Evaluate scores on ranking data by metric names: the one-call entry point of the library.

``regime="ltr"`` judges the *ranking* by the scores (a model's output: ρ(DTR) and Δ(EEL)
compare the ranking's exposure with the target exposure of the true relevance);
``regime="tabular"`` treats the scores as utility estimates (paper §3.1, Table 1).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core.errors import ParameterError
from ..core.validation import choice, vector
from ..data.ranking_data import RankingData
from ..simulate.group_bias import relevance_from_labels
from .catalog import DEFAULT_METRICS, EvalSpec, compute_metrics, eel_thresholds, parse_metric
from .inputs import check_both_groups, check_reduce, reduce_queries

__all__ = ["evaluate"]


def evaluate(
    scores,
    data: RankingData,
    *,
    metrics: Sequence = DEFAULT_METRICS,
    regime: str = "ltr",
    relevance=None,
    reduce: str | None = "mean",
) -> dict:
    """``{metric key: value}`` of ``scores`` on ``data`` for every metric of ``metrics``.

    ``data`` must be grouped (``data.groups``); ``relevance``: the true P(R) per item
    (default ``labels / label_max``); ``metrics``: names of
    :data:`groupbias.core.registry.METRICS` such as ``"ndcg@10"``, ``"ndcg@10:affected"``,
    ``"rho_dtr"``, ``"delta_eel"``, ``"awrf"``; ``reduce="mean"`` (default): each value is
    the mean over the queries where the metric is defined; ``reduce=None``: float64
    [n_queries] each (NaN where a query is skipped). Example::

        import groupbias as gb

        test = gb.load_dataset("trec2020", split="test")
        gb.evaluate(test.labels, test, metrics=["ndcg@10", "rho_dtr", "delta_eel"])
    """
    choice("regime", regime, ("ltr", "tabular"))
    check_reduce(reduce)
    if data.groups is None:
        raise ParameterError(
            "data.groups",
            "a grouped dataset",
            None,
            fix="apply a grouping (e.g. gb.load_dataset(..., grouping=...))",
        )
    if relevance is None:
        relevance = relevance_from_labels(data.labels, label_max=data.label_max)
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
    fairness = any(parse_metric(m).name != "ndcg" for m in spec.metrics)
    if fairness and reduce is not None:  # one-group (or one-item) lists would read as fair
        check_both_groups(data.groups, data.qptr)
    per_query = compute_metrics(np.asarray(scores, dtype=np.float64), spec, regime=regime)
    return {k: reduce_queries(v, reduce) for k, v in per_query.items()}
