"""Tabular regime (paper §3.1, §6.3, Table 1).

Head queries: attractiveness P(A) is observed directly (clicks already debiased for position
and trust), only group bias remains. For one dataset + grouping + β:

1. relevance P(R) from the labels (:func:`groupbias.simulate.group_bias.relevance_from_labels`);
2. biased attractiveness ``a = β_q P(R)`` for the affected group, β_q ~ N(β, σ_β) per query;
3. β̂ per query cluster by the amortized KS grid search (Eq. 14);
4. IPS-corrected utilities ``a / β̂`` for the affected group;
5. NDCG@10 (overall and per group), ρ(DTR) and Δ(EEL) of the biased and corrected utilities,
   with full information (the true relevance) as the ideal, and paired tests per query.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core.errors import ParameterError
from ..data.ranking_data import RankingData
from ..estimate.beta_estimate import BetaEstimate
from ..estimate.correction import ips_correct
from ..estimate.diagnostics import Diagnostics
from ..estimate.estimators import Estimator, estimate_simulated
from ..evaluation.catalog import DEFAULT_METRICS, EvalSpec, eel_thresholds
from ..evaluation.protocol import DETERMINISTIC, EvaluationProtocol
from ..simulate.group_bias import GroupBias, Simulation
from .null_check import DEFAULT_DIAGNOSTICS, check_assumption, simulate_null, stage_generators
from .records import correlation_records, estimate_record, record_base, records_for


@dataclass
class TabularResult:
    """Everything one tabular run produced."""

    beta: float
    beta_hat: np.ndarray  # per cluster
    beta_hat_per_query: np.ndarray
    beta_query: np.ndarray  # the simulated beta_q
    per_query: dict[str, dict[str, np.ndarray]]
    records: list[dict] = field(default_factory=list)
    attractiveness: np.ndarray | None = None
    corrected: np.ndarray | None = None


def correct_and_evaluate(
    data: RankingData,
    sim: Simulation,
    est: BetaEstimate,
    *,
    base: dict,
    metrics: Sequence = DEFAULT_METRICS,
    correlations=(),
    protocol: EvaluationProtocol = DETERMINISTIC,
):
    """IPS-correct the simulated attractiveness ``sim`` with the estimate ``est``
    (:func:`groupbias.estimate.estimators.estimate_simulated`), and evaluate biased and
    corrected utilities under the evaluation ``protocol`` (default: deterministic). Returns
    ``(corrected, per_query, records)``, the β̂ record last."""
    if data.groups is None:
        raise ParameterError("data.groups", "a grouped dataset", None, "apply a grouping first")
    corrected = ips_correct(
        sim.attractiveness, data.groups, qptr=data.qptr, beta_hat_per_query=est.beta_hat_per_query
    )
    spec = EvalSpec(
        labels=data.labels,
        relevance=sim.relevance,
        groups=data.groups,
        qptr=data.qptr,
        thresholds=eel_thresholds(data.labels, data.label_max),
        metrics=tuple(metrics),
    )
    per_query = {
        "biased": protocol.evaluate(sim.attractiveness, spec, regime="tabular"),
        "corrected": protocol.evaluate(corrected, spec, regime="tabular"),
    }
    records = records_for(per_query, base=base)
    records += correlation_records(per_query, correlations, base=base)
    records.append(estimate_record(est, base))
    return corrected, per_query, records


def run_tabular(
    data: RankingData,
    *,
    beta: float,
    bias: GroupBias,
    estimator: Estimator,
    rng: np.random.Generator,
    dataset: str | None = None,
    metrics: Sequence = DEFAULT_METRICS,
    correlations=(),
    clusters: np.ndarray | None = None,
    beta_std: float | None = None,
    keep_scores: bool = False,
    diagnostics: Diagnostics | None = DEFAULT_DIAGNOSTICS,
    protocol: EvaluationProtocol = DETERMINISTIC,
) -> TabularResult:
    """One tabular-regime run; returns β̂, per-query metric vectors and tidy records.

    ``bias``: the group-bias model (simulates at ``beta``; ``beta_std`` overrides its noise);
    ``estimator``: any :class:`~groupbias.estimate.estimators.Estimator` (``clusters``:
    explicit query clusters for it); ``metrics``: names of :data:`groupbias.core.registry.METRICS`;
    ``correlations``: metric pairs whose per-query Pearson correlation is recorded;
    ``diagnostics``: the assumption check run beside (None: skipped); ``protocol``: the
    :class:`~groupbias.evaluation.protocol.EvaluationProtocol` (default: deterministic).
    The stages in order: simulate (the run's and the check's null simulation), estimate (β̂
    and the check), correct and evaluate; the check's records come last."""
    streams = stage_generators(rng)
    sim = bias.simulate(data, beta=beta, rng=rng, beta_std=beta_std)
    null = simulate_null(data, bias=bias, rng=streams.null, diagnostics=diagnostics)
    base = record_base(dataset or data.name, "tabular", beta, bias, estimator, beta_std)
    est = estimate_simulated(estimator, data, sim, rng=rng, clusters=clusters)
    checks = check_assumption(
        data, est, null, estimator=estimator, diagnostics=diagnostics, base=base
    )
    del null  # its scores are not needed any more
    corrected, per_query, records = correct_and_evaluate(
        data,
        sim,
        est,
        base=base,
        metrics=metrics,
        correlations=correlations,
        protocol=protocol,
    )
    kept = (sim.attractiveness, corrected) if keep_scores else (None, None)
    return TabularResult(
        beta=float(beta),
        beta_hat=est.beta_hat,
        beta_hat_per_query=est.beta_hat_per_query,
        beta_query=sim.beta_query,
        per_query=per_query,
        records=records + checks,
        attractiveness=kept[0],
        corrected=kept[1],
    )
