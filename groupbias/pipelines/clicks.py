"""Learning to rank from a click log: position bias and group bias corrected together.

For one dataset + grouping + β and a number of sessions:

1. a logging policy ranks every query (:func:`logging_scores`: noisy relevance, or a linear
   ranker fitted by least squares on the labels of a small random fraction of the training
   queries);
2. sessions are simulated on the train split (and, in proportion to its queries, on the
   valid split) with :func:`groupbias.simulate.clicks.simulate_click_log`: users biased by position
   (θ_k) and by group (β_q);
3. position propensities θ̂ are estimated from the train log without knowing η
   (:mod:`groupbias.estimate.propensity`); every item's attractiveness is estimated per condition
   (:func:`labels_from_clicks`):

   - ``none``: the naive click rate ``Σ c / Σ n`` (no correction);
   - ``position``: IPS over positions ``Σ c / Σ n θ̂_k``;
   - ``group``: the naive click rate, then the group correction ``a / β̂_q`` for affected
     items with β̂ from the estimator on it;
   - ``both``: IPS over positions, then the group correction with β̂ estimated on the
     position-debiased attractiveness (doubly corrected labels);

   items never shown get label 0, and β̂ is estimated on the items shown;
4. the attention ranker is trained on each condition's labels (the recipe's loss; the
   ``clicks`` experiment uses the IPS-weighted counterfactual LambdaLoss) and on full
   information (true relevance); each ranks the test split, judged by NDCG@10, ρ(DTR),
   Δ(EEL) against true labels, with paired tests of ``both`` against every other condition
   (:func:`groupbias.pipelines.records.records_for` with ``focus="both"``).

The valid split's labels (for early stopping) come from its own log, corrected with the
train split's θ̂ and the mean β̂ of its clusters: users are biased there too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core.errors import ParameterError
from ..core.io import write_npz_atomic
from ..core.validation import choice, integer, real
from ..data.ranking_data import RankingData
from ..estimate.correction import ips_correct
from ..estimate.estimators import Estimator
from ..estimate.propensity import (
    PROPENSITY_METHODS,
    PositionEstimate,
    debiased_attractiveness,
    estimate_propensities,
)
from ..evaluation.catalog import compute_metrics
from ..simulate.clicks import INTERVENTIONS, ClickLog, UserModel, simulate_click_log

__all__ = [
    "CORRECTIONS",
    "LOGGING_POLICIES",
    "ClickSettings",
    "ClickLabels",
    "logging_scores",
    "labels_from_clicks",
    "simulate_split_log",
    "valid_labels",
    "evaluate_ranker",
]

CORRECTIONS = ("none", "position", "group", "both")
LOGGING_POLICIES = ("noisy_relevance", "noisy_attractiveness", "ranker")


@dataclass(frozen=True)
class ClickSettings:
    """How sessions are logged and read back: ``positions`` shown; ``user`` model (PBM,
    η = 1, noise clicks ε = 0.01); ``logging`` policy ("noisy_relevance":
    ``P(R) + N(0, logging_noise)``; "noisy_attractiveness": ``a + N(0, logging_noise)`` with
    the group-biased attractiveness ``a``, a production ranker that learned from biased
    clicks and shows affected items lower; "ranker": least squares on the relevance of
    ``labeled_fraction`` of the queries); ``temperature`` of Plackett–Luce logging
    (0: deterministic); ``intervention`` ("none" | "swap" | "shuffle") in a share
    ``intervention_rate`` of the sessions; ``propensity``: "harvest" or "em". The defaults
    are those of ``experiment=clicks`` and ``experiment=drift``, whose config keys build
    these settings (``experiments.clicks.ClickLogKeys``)."""

    positions: int = 10
    user: UserModel = field(default_factory=lambda: UserModel(noise=0.01))
    logging: str = "noisy_attractiveness"
    logging_noise: float = 0.2
    labeled_fraction: float = 0.1
    temperature: float = 0.2
    intervention: str = "shuffle"
    intervention_rate: float = 0.1
    propensity: str = "harvest"

    def __post_init__(self) -> None:
        integer("positions", self.positions, low=1)
        if not isinstance(self.user, UserModel):
            raise ParameterError("user", "a groupbias.simulate.clicks.UserModel", self.user)
        choice("logging", self.logging, LOGGING_POLICIES)
        real("logging_noise", self.logging_noise, low=0.0)
        real("labeled_fraction", self.labeled_fraction, low=0.0, high=1.0, low_open=True)
        real("temperature", self.temperature, low=0.0)
        choice("intervention", self.intervention, INTERVENTIONS)
        real("intervention_rate", self.intervention_rate, low=0.0, high=1.0)
        choice("propensity", self.propensity, PROPENSITY_METHODS)

    def simulation_options(self) -> dict:
        """The keyword arguments of :func:`~groupbias.simulate.clicks.simulate_click_log` that these
        settings fix (positions, user model, logging temperature, interventions)."""
        return {
            "positions": self.positions,
            "user": self.user,
            "temperature": self.temperature,
            "intervention": self.intervention,
            "intervention_rate": self.intervention_rate,
        }


def logging_scores(
    data: RankingData,
    relevance: np.ndarray,
    attractiveness: np.ndarray,
    settings: ClickSettings,
    rng: np.random.Generator,
) -> np.ndarray:
    """The logging policy's score of every item (see :class:`ClickSettings`)."""
    if settings.logging != "ranker":
        target = relevance if settings.logging == "noisy_relevance" else attractiveness
        return target + rng.normal(0.0, settings.logging_noise, relevance.size)
    n_q = data.n_queries
    n_lab = max(1, int(round(settings.labeled_fraction * n_q)))
    chosen = np.sort(rng.choice(n_q, size=n_lab, replace=False))
    sub = data.subset(chosen)
    x = np.column_stack([sub.features.astype(np.float64), np.ones(sub.n_items)])
    in_chosen = np.isin(data.query_index(), chosen)  # the subset's items, in its order
    w, *_ = np.linalg.lstsq(x, relevance[in_chosen], rcond=None)
    return np.column_stack([data.features.astype(np.float64), np.ones(data.n_items)]) @ w


def simulate_split_log(
    data: RankingData,
    *,
    relevance: np.ndarray,
    beta_query: np.ndarray,
    scores: np.ndarray,
    n_sessions: int,
    settings: ClickSettings,
    rng: np.random.Generator,
) -> ClickLog:
    """Sessions on one split under ``settings`` (group propensities ``beta_query``)."""
    if data.groups is None:
        raise ParameterError("data.groups", "a grouped split", None)
    return simulate_click_log(
        relevance,
        data.groups,
        qptr=data.qptr,
        logging_scores=scores,
        n_sessions=n_sessions,
        rng=rng,
        beta_query=beta_query,
        **settings.simulation_options(),
    ).log


@dataclass
class ClickLabels:
    """Attractiveness estimates per condition (float64 [n_items] each, P(A) scale), the
    position estimate, and for ``group`` and ``both`` β̂ per query and its mean over the
    clusters (:attr:`~groupbias.estimate.beta_estimate.BetaEstimate.beta_hat_mean`; NaN: not
    estimated)."""

    labels: dict[str, np.ndarray]
    position: PositionEstimate
    beta_hat_per_query: dict[str, np.ndarray]
    beta_hat: dict[str, float]
    observed: np.ndarray


def _shown_qptr(data: RankingData, observed: np.ndarray) -> np.ndarray:
    """Query offsets of the items shown at least once (``observed``), queries kept."""
    qidx = data.query_index()
    counts = np.bincount(qidx[observed], minlength=data.n_queries)
    return np.concatenate(([0], np.cumsum(counts))).astype(np.int64)


def _group_correct(att, data, observed, estimator, rng, relevance):
    sub_qptr = _shown_qptr(data, observed)
    est = estimator.estimate(
        att[observed],
        data.groups[observed],
        qptr=sub_qptr,
        rng=rng,
        grade_spacing=None,
        relevance=None if relevance is None else relevance[observed],
    )
    corrected = ips_correct(
        att, data.groups, qptr=data.qptr, beta_hat_per_query=est.beta_hat_per_query
    )
    return corrected, est.beta_hat_per_query, est.beta_hat_mean


def labels_from_clicks(
    log: ClickLog,
    data: RankingData,
    *,
    estimator: Estimator,
    rng: np.random.Generator,
    settings: ClickSettings,
    conditions: Sequence[str] = CORRECTIONS,
    relevance: np.ndarray | None = None,
) -> ClickLabels:
    """Per-condition attractiveness of every item of ``data`` from ``log`` (module
    docstring). ``relevance``: editorial P(R) where known, passed to the estimator only as
    its labeled sample (the calibrated estimator reads it)."""
    if data.groups is None:
        raise ParameterError("data.groups", "a grouped split", None)
    shown, clicks = log.counts(data.qptr, settings.positions)
    pos = estimate_propensities(shown, clicks, method=settings.propensity)
    naive, observed = debiased_attractiveness(shown, clicks, np.ones(settings.positions))
    ips, _ = debiased_attractiveness(shown, clicks, pos.theta)
    base = {"none": naive, "position": ips, "group": naive, "both": ips}
    labels, per_query, level = {}, {}, {}
    for cond in conditions:
        if cond not in CORRECTIONS:
            raise ParameterError("conditions", f"a subset of {CORRECTIONS}", list(conditions))
        if cond in ("group", "both"):
            labels[cond], per_query[cond], level[cond] = _group_correct(
                base[cond], data, observed, estimator, rng, relevance
            )
        else:
            labels[cond] = base[cond]
    return ClickLabels(labels, pos, per_query, level, observed)


def valid_labels(
    log: ClickLog, data: RankingData, fitted: ClickLabels, settings: ClickSettings
) -> dict[str, np.ndarray]:
    """The valid split's labels per condition: its own log, the train split's θ̂ and mean
    β̂ (module docstring)."""
    shown, clicks = log.counts(data.qptr, settings.positions)
    naive, _ = debiased_attractiveness(shown, clicks, np.ones(settings.positions))
    ips, _ = debiased_attractiveness(shown, clicks, fitted.position.theta)
    base = {"none": naive, "position": ips, "group": naive, "both": ips}
    out = {}
    for cond in fitted.labels:
        if cond in fitted.beta_hat:
            b = np.full(data.n_queries, fitted.beta_hat[cond])
            out[cond] = ips_correct(base[cond], data.groups, qptr=data.qptr, beta_hat_per_query=b)
        else:
            out[cond] = base[cond]
    return out


def evaluate_ranker(ranker, test: RankingData, spec, out_dir: Path) -> dict[str, np.ndarray]:
    """Per-query metrics of ``ranker`` on ``test`` (scores saved under ``out_dir``)."""
    scores = ranker.predict(test)
    write_npz_atomic(out_dir / "test_scores.npz", scores=scores)
    return compute_metrics(scores, spec, regime="ltr")
