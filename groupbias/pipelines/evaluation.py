"""Evaluation shared by both regimes: per-query metric vectors and paired comparisons.

Conventions (see docs/metrics.md for the definitions):
- NDCG@k ranks items by the evaluated scores and judges them by the true labels (graded
  labels, or continuous relevance in [0, 1]) with exp2 gain; per group, only the relevant
  items of that group count as relevant.
- ρ(DTR) and Δ(EEL) compare the evaluated scores with the true relevance P(R) (tabular), or
  the ranking's exposure with the true target (LTR).
- EEL needs grades: continuous scores are discretized on the relevance scale. For graded data
  with top grade L the thresholds are the midpoints ``(j - 1/2)/L``, j = 1..L (rounding P(R)
  to the nearest grade); for binary or continuous relevance the single threshold ``a* = 0.5``
  (§4.2.1, footnote 3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import ParameterError
from ..core.validation import all_integral
from ..evaluation.catalog import (
    DEFAULT_METRICS,
    MetricRequest,
    compute_metrics,
    metric_keys,
    parse_metric,
    validate_metrics,
)
from ..evaluation.stats import paired_test

__all__ = [
    "DEFAULT_METRICS",
    "EvalSpec",
    "MetricRequest",
    "eel_thresholds",
    "metric_keys",
    "parse_metric",
    "validate_metrics",
    "tabular_metrics",
    "ranking_metrics",
    "evaluate_with",
    "records_for",
    "correlation_records",
]


def eel_thresholds(
    labels: np.ndarray, label_max: float | None, *, bin_width: float = 0.25
) -> tuple[float, ...]:
    """EEL discretization thresholds on the P(R) scale (see module docstring).

    Graded labels 0..L (L >= 2): the grade midpoints ``(j - 1/2) / L``, j = 1..L, so each
    score is rounded to the nearest grade. Binary or continuous relevance: equal-width bins
    of ``bin_width`` over [0, 1] (default thresholds 0.25, 0.5, 0.75); a single threshold
    ``a* = 0.5`` (``bin_width=0.5``) would leave every biased score above 0.5 unchanged and
    hide all but the most severe bias.
    """
    lab = np.asarray(labels, dtype=np.float64)
    integral = lab.size > 0 and all_integral(lab)
    top = float(label_max) if label_max else (float(lab.max()) if lab.size else 1.0)
    if integral and top >= 2 and top == round(top):
        L = int(top)
        return tuple((j - 0.5) / L for j in range(1, L + 1))
    if not 0 < bin_width <= 1:
        raise ParameterError("bin_width", "a bin width in (0, 1]", bin_width)
    n = int(round(1 / bin_width))
    return tuple(j * bin_width for j in range(1, n))


@dataclass(frozen=True)
class EvalSpec:
    """What to evaluate against: true labels (NDCG), true relevance P(R) (ρ(DTR), Δ(EEL)),
    groups, offsets, the EEL grade thresholds, and the metrics to compute (names or
    mappings of :data:`groupbias.core.registry.METRICS`, see :func:`parse_metric`).
    ``membership``: [n_items, n_groups] for the related-work metrics (default
    ``[groups, 1 - groups]``)."""

    labels: np.ndarray
    relevance: np.ndarray
    groups: np.ndarray
    qptr: np.ndarray
    thresholds: tuple[float, ...]
    metrics: tuple = DEFAULT_METRICS
    membership: np.ndarray | None = None


def tabular_metrics(scores: np.ndarray, spec: EvalSpec) -> dict[str, np.ndarray]:
    """Per-query metric vectors of tabular utility estimates ``scores`` (float64
    [n_queries] each; NaN where a query is skipped)."""
    return compute_metrics(scores, spec, regime="tabular")


def ranking_metrics(scores: np.ndarray, spec: EvalSpec) -> dict[str, np.ndarray]:
    """Per-query metric vectors of a model's ranking by ``scores`` (LTR regime)."""
    return compute_metrics(scores, spec, regime="ltr")


def evaluate_with(protocol, scores: np.ndarray, spec: EvalSpec, *, regime: str):
    """Per-query metric vectors of ``scores`` under the evaluation ``protocol``
    (:class:`groupbias.evaluation.protocol.EvaluationProtocol`; None: deterministic, the metric
    defaults) in ``regime`` (a policy protocol always evaluates in the LTR regime)."""
    if protocol is None:
        return compute_metrics(scores, spec, regime=regime)
    return protocol.evaluate(scores, spec, regime=regime)


def _nanmean(x: np.ndarray) -> float:
    ok = ~np.isnan(x)
    return float(x[ok].mean()) if ok.any() else float("nan")


def records_for(
    per_query: dict[str, dict[str, np.ndarray]],
    *,
    base: dict,
    against: str = "biased",
    test: str = "ttest",
) -> list[dict]:
    """Tidy records (one per condition × metric) from per-query metric vectors.

    ``per_query[condition][metric]`` are per-query vectors; every condition other than
    ``against`` gets the p-value of a paired test against ``against`` on the same queries.
    """
    recs = []
    for cond, mets in per_query.items():
        for metric, vals in mets.items():
            rec = {
                **base,
                "metric": metric,
                "condition": cond,
                "value": _nanmean(vals),
                "n_queries": int(np.sum(~np.isnan(vals))),
            }
            if cond != against and against in per_query:
                try:
                    _, p, _n = paired_test(vals, per_query[against][metric], test=test)
                except ParameterError:  # fewer than two queries where both are defined
                    p = float("nan")
                rec["p_value"] = float(p)
            recs.append(rec)
    return recs


def correlation_records(
    per_query: dict[str, dict[str, np.ndarray]], pairs, *, base: dict
) -> list[dict]:
    """Per-query Pearson correlation between two metrics of the same ranking, one record
    per condition and pair (``metric = "pearson(a,b)"``; Abolghasemi et al. 2024 compares
    TExFAIR with
    NFaiRR this way). Pairs whose metrics were not computed raise ``ParameterError``;
    fewer than two queries with both defined give NaN."""
    from ..evaluation.fairness import per_query_correlation

    recs = []
    for a, b in pairs:
        for cond, mets in per_query.items():
            if a not in mets or b not in mets:
                raise ParameterError(
                    "correlations",
                    "pairs of computed metrics",
                    [a, b],
                    fix=f"computed: {sorted(mets)}",
                )
            try:
                r, p, n = per_query_correlation(mets[a], mets[b])
            except ParameterError:
                r, p, n = float("nan"), float("nan"), 0
            recs.append(
                {
                    **base,
                    "metric": f"pearson({a},{b})",
                    "condition": cond,
                    "value": float(r),
                    "p_value": float(p),
                    "n_queries": int(n),
                }
            )
    return recs
