"""Result records of a run: one tidy record per condition × metric, with paired tests.

Every pipeline turns its per-query metric vectors (``per_query[condition][metric]``, float64
[n_queries]) into records here: the mean over the queries where the metric is defined, the
number of those queries, and the p-values of paired tests: of each condition against a
reference condition (the regimes), or of one condition against each other (the click
experiment). The fields every record of a run shares (:func:`record_base`) and the β̂ record
(:func:`estimate_record`) are written here too.
"""

from __future__ import annotations

import numpy as np

from ..core.errors import ParameterError
from ..core.segments import nanmean
from ..estimate.beta_estimate import BetaEstimate
from ..estimate.diagnostics import estimate_summary
from ..estimate.estimators import Estimator
from ..evaluation.stats import paired_test
from ..simulate.group_bias import GroupBias

__all__ = ["record_base", "estimate_record", "records_for", "correlation_records"]


def record_base(
    dataset: str,
    regime: str,
    beta: float,
    bias: GroupBias,
    estimator: Estimator,
    beta_std: float | None = None,
) -> dict:
    """The fields every result record of one run shares."""
    cs = getattr(estimator, "cluster_size", None)
    return {
        "dataset": dataset,
        "regime": regime,
        "beta": float(beta),
        "beta_std": float(bias.beta_std if beta_std is None else beta_std),
        "variant": bias.variant,
        "cluster_size": None if cs is None else cs if cs == "auto" else int(cs),
    }


def estimate_record(est: BetaEstimate, base: dict) -> dict:
    """The β̂ record: mean
    (:attr:`~groupbias.estimate.beta_estimate.BetaEstimate.beta_hat_mean`, NaN: no estimate)
    and spread of the finite cluster estimates, and what the estimate says about itself
    (:func:`groupbias.estimate.diagnostics.estimate_summary`: curve minimum, flat width,
    bootstrap interval); the cluster size an ``"auto"`` estimator chose, and the mean bias a
    bias-corrected estimator subtracted (``bias_subtracted``)."""
    bh = est.beta_hat[np.isfinite(est.beta_hat)]
    rec = {
        **base,
        "metric": "beta_hat",
        "condition": "estimate",
        "value": est.beta_hat_mean,
        "std": float(np.std(bh)) if bh.size else float("nan"),
        "n_clusters": int(est.beta_hat.size),
        **estimate_summary(est),
    }
    if "cluster_size" in est.info:  # what cluster_size="auto" chose
        cs = est.info["cluster_size"]
        rec["cluster_size_chosen"] = None if cs is None else int(cs)
    if "bias" in est.info:  # estimator.bias_correction=bootstrap: the mean bias subtracted
        bias = np.asarray(est.info["bias"], dtype=np.float64)
        ok = np.isfinite(bias)
        rec["bias_subtracted"] = float(bias[ok].mean()) if ok.any() else float("nan")
    return rec


def records_for(
    per_query: dict[str, dict[str, np.ndarray]],
    *,
    base: dict,
    against: str = "biased",
    focus: str | None = None,
    test: str = "ttest",
) -> list[dict]:
    """Tidy records (one per condition × metric) from per-query metric vectors.

    ``per_query[condition][metric]`` are per-query vectors; a record holds the mean over the
    queries where the metric is defined and their number. Paired tests on the same queries:
    every condition other than ``against`` is tested against it (field ``p_value``; none
    when ``against`` was not run) or, with ``focus`` (``against`` is then not used), that
    one condition against every other (fields ``p_vs_<other>``, in the order of
    ``per_query``). Fewer than two queries where both are defined give a NaN p-value.
    """
    recs = []
    for cond, mets in per_query.items():
        pairs = _paired_with(cond, per_query, against, focus)
        for metric, vals in mets.items():
            rec = {
                **base,
                "metric": metric,
                "condition": cond,
                "value": nanmean(vals),
                "n_queries": int(np.sum(~np.isnan(vals))),
            }
            for name, other in pairs:
                try:
                    _, p, _n = paired_test(vals, per_query[other][metric], test=test)
                except ParameterError:  # fewer than two queries where both are defined
                    p = float("nan")
                rec[name] = float(p)
            recs.append(rec)
    return recs


def _paired_with(cond: str, per_query: dict, against: str, focus: str | None) -> list:
    """``(field, other condition)`` of every paired test of condition ``cond``."""
    if focus is None:
        return [("p_value", against)] if cond != against and against in per_query else []
    if cond != focus:
        return []
    return [(f"p_vs_{other}", other) for other in per_query if other != focus]


def correlation_records(
    per_query: dict[str, dict[str, np.ndarray]], pairs, *, base: dict
) -> list[dict]:
    """Per-query Pearson correlation between two metrics of the same ranking, one record
    per condition and pair (``metric = "pearson(a,b)"``; Abolghasemi et al. 2024 compares
    TExFAIR with
    NFaiRR this way). Pairs whose metrics were not computed raise ``ParameterError``;
    fewer than two queries with both defined give NaN."""
    from ..evaluation.stats import per_query_correlation

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
