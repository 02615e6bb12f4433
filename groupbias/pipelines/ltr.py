"""General LTR regime (paper §3.1, §6.3, Table 2).

For one dataset + grouping + β, the attention LambdaRank ranker is trained three times on
the training split (validation split for early stopping), each time on other labels:

- ``full``: full information, the true relevance;
- ``biased``: simulated attractiveness ``β_q P(R)`` for the affected group;
- ``corrected``: IPS-corrected attractiveness ``a / β̂`` with β̂ estimated on the training
  split (amortized KS, the configured clusters).

Training labels are put back on the grade scale (multiplied by ``label_max``) so the
LambdaLoss gain ``2^l − 1`` sees grades for full information and the corresponding real
values otherwise. The validation split gets its own simulated attractiveness (users are
biased there too) and is corrected with the mean β̂ of the training clusters. Each model
ranks the *test* split, which is evaluated against true labels: NDCG@10 overall and per
group, ρ(DTR) and Δ(EEL) of the ranking, with paired tests of corrected and full against
biased. Models, predictions (also as a TREC run file, ``<condition>/test.run``) and metrics
go into ``out_dir``, beside the test split's ``test.qrels`` and ``test.groups``
(:mod:`groupbias.data.trec`), so ``groupbias-report compare <out_dir>`` compares the
conditions query by query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..core.errors import ParameterError
from ..core.io import write_npz_atomic
from ..data.ranking_data import RankingData
from ..data.trec import with_usable_ids, write_groups, write_qrels, write_run
from ..estimate.correction import ips_correct
from ..estimate.diagnostics import Diagnostics
from ..estimate.estimators import Estimator, estimate_simulated
from ..evaluation.catalog import DEFAULT_METRICS, EvalSpec, eel_thresholds
from ..evaluation.protocol import DETERMINISTIC, EvaluationProtocol
from ..simulate.group_bias import GroupBias, relevance_from_labels
from .null_check import DEFAULT_DIAGNOSTICS, check_assumption, simulate_null, stage_generators
from .records import correlation_records, estimate_record, record_base, records_for

if TYPE_CHECKING:  # torch and Lightning are imported when a ranker is trained
    from ..ltr.datamodule import PreparedSplits

CONDITIONS = ("full", "biased", "corrected")


@dataclass
class LTRResult:
    beta: float
    beta_hat: np.ndarray
    per_query: dict[str, dict[str, np.ndarray]]
    records: list[dict] = field(default_factory=list)
    predictions: dict[str, np.ndarray] = field(default_factory=dict)


def _check_splits(splits: Mapping[str, RankingData], conditions) -> None:
    for need in ("train", "test"):
        if need not in splits:
            raise ParameterError("splits", "train and test splits", sorted(splits))
    for name, d in splits.items():
        if d.groups is None:
            raise ParameterError(f"splits[{name!r}].groups", "a grouped split", None)
    bad = [c for c in conditions if c not in CONDITIONS]
    if bad:
        raise ParameterError("conditions", f"a subset of {CONDITIONS}", list(conditions))


def label_scale(splits: Mapping[str, RankingData]) -> float:
    """One relevance scale for every split: the train split's label_max, else the largest
    label of any split (1 when all labels are 0)."""
    train = splits["train"]
    return float(
        train.label_max or max(float(d.labels.max(initial=0.0)) for d in splits.values()) or 1.0
    )


def training_labels(
    splits: Mapping[str, RankingData],
    *,
    beta: float,
    bias: GroupBias,
    estimator: Estimator,
    rng: np.random.Generator,
    beta_std: float | None = None,
    diagnostics: Diagnostics | None = None,
    base: dict | None = None,
):
    """Labels of the train and valid splits per condition, on the grade scale, the estimate
    and the diagnostic records (the assumption check on the train split when
    ``diagnostics`` is given, with ``base`` fields). The validation split gets its own
    simulated attractiveness (users are biased there too), drawn from its own generator
    (:func:`~groupbias.pipelines.null_check.stage_generators`: what the estimator draws never
    shifts it), corrected with the mean β̂ of the training clusters
    (:attr:`~groupbias.estimate.beta_estimate.BetaEstimate.beta_hat_mean`)."""
    train, valid = splits["train"], splits.get("valid")
    scale = label_scale(splits)
    streams = stage_generators(rng)
    sim = bias.simulate(train, beta=beta, rng=rng, label_max=scale, beta_std=beta_std)
    null = simulate_null(
        train, bias=bias, rng=streams.null, diagnostics=diagnostics, label_max=scale
    )
    est = estimate_simulated(estimator, train, sim, rng=rng)
    checks = check_assumption(
        train, est, null, estimator=estimator, diagnostics=diagnostics, base=base or {}
    )
    del null  # its scores are not needed any more

    def per_condition(data, sim, beta_hat_per_query):
        corrected = ips_correct(
            sim.attractiveness, data.groups, qptr=data.qptr, beta_hat_per_query=beta_hat_per_query
        )
        return {
            "full": sim.relevance * scale,
            "biased": sim.attractiveness * scale,
            "corrected": corrected * scale,
        }

    labels = per_condition(train, sim, est.beta_hat_per_query)
    vlabels = {c: None for c in CONDITIONS}
    if valid is not None:
        sim_va = bias.simulate(
            valid, beta=beta, rng=streams.validation, label_max=scale, beta_std=beta_std
        )
        vlabels = per_condition(valid, sim_va, np.full(valid.n_queries, est.beta_hat_mean))
    return labels, vlabels, est, checks


def evaluation_spec(
    test: RankingData, *, scale: float, bias: GroupBias, metrics: Sequence = DEFAULT_METRICS
) -> EvalSpec:
    """What the test rankings are judged against: true labels and relevance."""
    if test.groups is None:
        raise ParameterError("splits['test'].groups", "a grouped split", None)
    mode = "graded" if bias.relevance == "auto" else bias.relevance
    rel = relevance_from_labels(test.labels, label_max=scale, mode=mode)
    return EvalSpec(
        labels=test.labels,
        relevance=rel,
        groups=test.groups,
        qptr=test.qptr,
        thresholds=eel_thresholds(test.labels, scale),
        metrics=tuple(metrics),
    )


# long: three trainings and their records in sequence; the docstring lists the options
def run_ltr(
    splits: Mapping[str, RankingData],
    *,
    beta: float,
    bias: GroupBias,
    estimator: Estimator,
    recipe,
    rng: np.random.Generator,
    seed: int = 0,
    out_dir: str | Path,
    dataset: str | None = None,
    conditions=CONDITIONS,
    metrics: Sequence = DEFAULT_METRICS,
    correlations=(),
    beta_std: float | None = None,
    diagnostics: Diagnostics | None = DEFAULT_DIAGNOSTICS,
    protocol: EvaluationProtocol = DETERMINISTIC,
    prepared: PreparedSplits | None = None,
) -> LTRResult:
    """Train full / biased / corrected rankers and evaluate them on the test split.

    ``recipe``: a :class:`groupbias.ltr.train.RankerRecipe` (model, loss, optimizer,
    scheduler, trainer, batching); ``metrics``: names of :data:`groupbias.core.registry.METRICS`;
    ``correlations``: metric pairs whose per-query Pearson correlation is recorded;
    ``diagnostics``: the assumption check on the train split (None: skipped);
    ``protocol``: the :class:`~groupbias.evaluation.protocol.EvaluationProtocol` of the test scores
    (default: deterministic; a policy protocol evaluates each ranker's scores as a
    Plackett–Luce policy); ``prepared``: the splits' normalized lists, shared by every call
    of a run on this dataset (default: made here, once for all ``conditions``)."""
    from ..ltr.datamodule import PreparedSplits
    from ..ltr.train import train_ranker

    _check_splits(splits, conditions)
    train, test, out = splits["train"], splits["test"], Path(out_dir)
    base = record_base(dataset or train.name, "ltr", beta, bias, estimator, beta_std)
    labels, vlabels, est, checks = training_labels(
        splits,
        beta=beta,
        bias=bias,
        estimator=estimator,
        rng=rng,
        beta_std=beta_std,
        diagnostics=diagnostics,
        base=base,
    )
    spec = evaluation_spec(test, scale=label_scale(splits), bias=bias, metrics=metrics)
    named = with_usable_ids(test)  # what the test runs are judged against, as TREC files
    write_qrels(out / "test.qrels", named)
    write_groups(out / "test.groups", named)
    if prepared is None or prepared.splits is not splits:
        prepared = PreparedSplits(splits, recipe.batching.normalize)
    per_query, preds = {}, {}
    for cond in conditions:
        ranker = train_ranker(
            prepared["train"],
            prepared["valid"] if splits.get("valid") is not None else None,
            recipe=recipe,
            train_labels=labels[cond],
            valid_labels=vlabels[cond],
            seed=seed,
            out_dir=out / cond,
        )
        preds[cond] = scores = ranker.predict(prepared["test"])
        per_query[cond] = protocol.evaluate(scores, spec, regime="ltr")
        write_npz_atomic(out / cond / "test_scores.npz", scores=scores)
        write_run(out / cond / "test.run", scores, named, tag=f"groupbias-{cond}")
    records = records_for(per_query, base=base)
    records += correlation_records(per_query, correlations, base=base)
    for r in records:
        if r["condition"] == "full":
            r["beta"] = None
    records.append(estimate_record(est, base))
    records += checks
    return LTRResult(
        beta=float(beta),
        beta_hat=est.beta_hat,
        per_query=per_query,
        records=records,
        predictions=preds,
    )
