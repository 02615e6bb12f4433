"""Tabular regime (paper §3.1, §6.3, Table 1).

Head queries: attractiveness P(A) is observed directly (clicks already debiased for position
and trust), only group bias remains. For one dataset + grouping + β:

1. relevance P(R) from the labels (:func:`groupbias.simulation.relevance_from_labels`);
2. biased attractiveness ``a = β_q P(R)`` for the affected group, β_q ~ N(β, σ_β) per query;
3. β̂ per query cluster by the amortized KS grid search (Eq. 14);
4. IPS-corrected utilities ``a / β̂`` for the affected group;
5. NDCG@10 (overall and per group), ρ(DTR) and Δ(EEL) of the biased and corrected utilities,
   with full information (the true relevance) as the ideal, and paired tests per query.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..data import RankingData

from ..correction import ips_correct
from ..errors import ParameterError
from ..estimation import default_grid, estimate_beta
from ..simulation import simulate_group_bias
from .evaluation import (EvalSpec, correlation_records, eel_thresholds, records_for,
                         tabular_metrics)


@dataclass
class TabularResult:
    """Everything one tabular run produced."""

    beta: float
    beta_hat: np.ndarray                # per cluster
    beta_hat_per_query: np.ndarray
    beta_query: np.ndarray              # the simulated beta_q
    per_query: dict[str, dict[str, np.ndarray]]
    records: list[dict] = field(default_factory=list)
    attractiveness: np.ndarray | None = None
    corrected: np.ndarray | None = None


def simulate(data: RankingData, *, beta: float, beta_std: float = 0.1,
             variant: str = "normal", modes=None, beta_min: float = 0.01,
             relevance_mode: str = "auto", label_max: float | None = None,
             rng: np.random.Generator):
    """Group-biased attractiveness for ``data`` (see :func:`simulate_group_bias`).

    ``relevance_mode="auto"`` is ``label / label_max`` (graded labels; binary and [0, 1]
    continuous labels with ``label_max = 1`` are unchanged by it). For ``variant="two_mode"``
    ``beta`` is only a label (the modes' mean); the modes drive the simulation.
    """
    if data.groups is None:
        raise ParameterError("data.groups", "a grouped dataset (1 = affected, 0 = not)",
                             None, "apply a grouping (data_loaders.grouping) first")
    mode = "graded" if relevance_mode == "auto" else relevance_mode
    kw = dict(beta_std=beta_std, variant=variant, beta_min=beta_min, relevance_mode=mode,
              label_max=label_max, rng=rng)
    if variant == "two_mode":
        return simulate_group_bias(data, beta_mean=None,
                                   modes=tuple(modes) if modes is not None else (0.6, 0.8),
                                   **kw)
    return simulate_group_bias(data, beta_mean=beta, **kw)


def grade_spacing(data: RankingData, jitter_scale: str = "grade") -> float | None:
    """Spacing of the relevance grades on the P(R) scale for the estimator's tie-breaking
    noise: ``1/L`` for integer labels 0..L (1 for binary labels), None (the smallest gap)
    for continuous labels or ``jitter_scale="gap"``."""
    if jitter_scale not in ("grade", "gap"):
        raise ParameterError("estimator.jitter_scale", "'grade' or 'gap'", jitter_scale)
    lab = data.labels
    if jitter_scale == "gap" or lab.size == 0 or np.any(lab != np.round(lab)):
        return None
    top = float(data.label_max or lab.max())
    return 1.0 / top if top >= 1 else None


def _group_threshold(groups: np.ndarray) -> float | None:
    """Fractional memberships are split at 0.5 for the estimator (documented there)."""
    return 0.5 if np.any((groups != 0) & (groups != 1)) else None


def correct_and_evaluate(data: RankingData, sim, *, beta: float, cluster_size=None,
                         clusters=None, grid_step: float = 0.01, zero_policy: str = "exclude",
                         jitter: bool = True, jitter_scale: str = "grade", k: int = 10,
                         rng: np.random.Generator,
                         base: dict | None = None, fairness=(), correlations=()):
    """Estimate β̂ from simulated attractiveness ``sim``, IPS-correct, and evaluate biased and
    corrected utilities. Returns ``(estimate, corrected, per_query, records)``."""
    est = estimate_beta(sim.attractiveness, data.groups, data.qptr, clusters=clusters,
                        cluster_size=cluster_size, grid=default_grid(grid_step),
                        zero_policy=zero_policy, jitter=0.5 if jitter else 0.0,
                        jitter_scale=grade_spacing(data, jitter_scale),
                        group_threshold=_group_threshold(data.groups), rng=rng)
    corrected = ips_correct(sim.attractiveness, data.groups, data.qptr,
                            beta_hat_per_query=est.beta_hat_per_query)
    spec = EvalSpec(labels=data.labels, relevance=sim.relevance, groups=data.groups,
                    qptr=data.qptr, thresholds=eel_thresholds(data.labels, data.label_max),
                    k=k, fairness=tuple(fairness))
    per_query = {"biased": tabular_metrics(sim.attractiveness, spec),
                 "corrected": tabular_metrics(corrected, spec)}
    base = dict(base or {})
    records = records_for(per_query, base=base)
    records += correlation_records(per_query, correlations, base=base)
    bh = est.beta_hat[np.isfinite(est.beta_hat)]
    records.append({**base, "metric": "beta_hat", "condition": "estimate",
                    "value": float(np.mean(bh)) if bh.size else float("nan"),
                    "std": float(np.std(bh)) if bh.size else float("nan"),
                    "n_clusters": int(est.beta_hat.size)})
    return est, corrected, per_query, records


def run_tabular(data: RankingData, *, beta: float, beta_std: float = 0.1,
                variant: str = "normal", modes=None, beta_min: float = 0.01,
                relevance_mode: str = "auto", cluster_size: int | None = None,
                clusters: np.ndarray | None = None, grid_step: float = 0.01,
                zero_policy: str = "exclude", jitter: bool = True,
                jitter_scale: str = "grade", k: int = 10,
                rng: np.random.Generator, dataset: str | None = None,
                keep_scores: bool = False, fairness=(), correlations=()) -> TabularResult:
    """One tabular-regime run; returns β̂, per-query metric vectors and tidy records.

    ``fairness``: related-work metrics to add (see :data:`groupbias.fairness.METRICS`);
    ``correlations``: metric pairs whose per-query Pearson correlation is recorded."""
    sim = simulate(data, beta=beta, beta_std=beta_std, variant=variant, modes=modes,
                   beta_min=beta_min, relevance_mode=relevance_mode, rng=rng)
    base = {"dataset": dataset or data.name, "regime": "tabular", "beta": float(beta),
            "beta_std": float(beta_std), "variant": variant,
            "cluster_size": None if cluster_size is None else int(cluster_size)}
    est, corrected, per_query, records = correct_and_evaluate(
        data, sim, beta=beta, cluster_size=cluster_size, clusters=clusters,
        grid_step=grid_step, zero_policy=zero_policy, jitter=jitter,
        jitter_scale=jitter_scale, k=k, rng=rng, base=base,
        fairness=fairness, correlations=correlations)
    return TabularResult(
        beta=float(beta), beta_hat=est.beta_hat, beta_hat_per_query=est.beta_hat_per_query,
        beta_query=sim.beta_query, per_query=per_query, records=records,
        attractiveness=sim.attractiveness if keep_scores else None,
        corrected=corrected if keep_scores else None)
