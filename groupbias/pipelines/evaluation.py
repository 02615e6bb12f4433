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

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .. import metrics as M
from ..errors import ParameterError
from ..registry import METRICS
from ..stats import paired_test
from ..validation import check_k, choice


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
    integral = lab.size > 0 and np.all(lab == np.round(lab))
    top = float(label_max) if label_max else (float(lab.max()) if lab.size else 1.0)
    if integral and top >= 2 and top == round(top):
        L = int(top)
        return tuple((j - 0.5) / L for j in range(1, L + 1))
    if not 0 < bin_width <= 1:
        raise ParameterError("bin_width", "a bin width in (0, 1]", bin_width)
    n = int(round(1 / bin_width))
    return tuple(j * bin_width for j in range(1, n))


#: what the paper's tables and figures report: NDCG@10 overall and per group, ρ(DTR), Δ(EEL)
DEFAULT_METRICS = ("ndcg@10", "ndcg@10:affected", "ndcg@10:non_affected", "rho_dtr", "delta_eel")
#: related-work metrics named without ``@k`` are computed at this cutoff
DEFAULT_K = 10
GROUPS = ("all", "affected", "non_affected")
REGIMES = ("tabular", "ltr")


@dataclass(frozen=True)
class EvalSpec:
    """What to evaluate against: true labels (NDCG), true relevance P(R) (ρ(DTR), Δ(EEL)),
    groups, offsets, the EEL grade thresholds, and the metrics to compute (names or
    mappings of :data:`groupbias.registry.METRICS`, see :func:`parse_metric`).
    ``membership``: [n_items, n_groups] for the related-work metrics (default
    ``[groups, 1 - groups]``)."""

    labels: np.ndarray
    relevance: np.ndarray
    groups: np.ndarray
    qptr: np.ndarray
    thresholds: tuple[float, ...]
    metrics: tuple = DEFAULT_METRICS
    membership: np.ndarray | None = None


@dataclass(frozen=True)
class MetricRequest:
    """One parsed metric: registry name, cutoff, group, output key and options."""

    name: str
    k: int | None
    group: str
    key: str
    options: dict


def parse_metric(spec) -> MetricRequest:
    """``"base[@k][:group]"`` (``"ndcg@10"``, ``"ndcg@10:affected"``, ``"rho_dtr"``,
    ``"awrf@5"``) or ``{"name": "cwex", "key": "cwex@0.2", "alpha": 0.2, ...}`` (options
    are the metric's keywords; ``k`` and ``group`` may be given there too)."""
    if isinstance(spec, str):
        text, options, key = spec, {}, spec
    elif isinstance(spec, Mapping) and isinstance(spec.get("name"), str):
        options = {k: v for k, v in spec.items() if k not in ("name", "key")}
        text, key = spec["name"], spec.get("key", spec["name"])
    else:
        raise ParameterError("metrics", "a metric name or a mapping with a 'name'", spec)
    base, _, group = text.partition(":")
    base, at, k = base.partition("@")
    kk = options.pop("k", None) if not at else check_k(int(k) if k.isdigit() else k)
    group = options.pop("group", group or "all")
    if base not in METRICS:
        raise ParameterError(
            "metrics", "names of groupbias.registry.METRICS: " + ", ".join(METRICS.names()), text
        )
    choice("metrics (group suffix)", group, GROUPS)
    if group != "all" and base != "ndcg":
        raise ParameterError("metrics", "a group suffix only on ndcg (e.g. ndcg@10:affected)", text)
    return MetricRequest(base, check_k(kk), group, str(key), options)


def validate_metrics(specs) -> list[MetricRequest]:
    """Parse every metric up front (unknown names and repeated output keys raise)."""
    if isinstance(specs, (str, Mapping)):
        raise ParameterError("metrics", "a list of metric names or mappings", specs)
    out = [parse_metric(s) for s in specs]
    keys = [r.key for r in out]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ParameterError(
            "metrics", "distinct output keys", dup[0], fix="give repeated metrics a 'key'"
        )
    return out


def metric_keys(specs) -> list[str]:
    """The output keys of ``specs``, in order (table columns)."""
    return [r.key for r in validate_metrics(specs)]


# --------------------------------------------------------------------------- registered metrics
# Call shape of every entry: fn(scores, spec, *, regime, k, group, **options) -> [n_queries]


@METRICS.register("ndcg")
def _ndcg(scores, spec: EvalSpec, *, regime, k, group, **options):
    """NDCG@k of the ranking by ``scores`` against the true labels (exp2 gain); per group,
    only the relevant items of that group count as relevant."""
    return M.ndcg_per_query(
        scores, spec.labels, qptr=spec.qptr, groups=spec.groups, group=group, k=k, **options
    )


@METRICS.register("rho_dtr")
def _rho_dtr(scores, spec: EvalSpec, *, regime, k, group, **options):
    """ρ(DTR): tabular (the scores are utility estimates) or of the ranking (LTR)."""
    if regime == "tabular":
        return M.rho_dtr_tabular_per_query(
            scores, spec.relevance, qptr=spec.qptr, groups=spec.groups, **options
        )
    return M.rho_dtr_ranking_per_query(
        scores, spec.relevance, qptr=spec.qptr, groups=spec.groups, k=k, **options
    )


@METRICS.register("delta_eel")
def _delta_eel(scores, spec: EvalSpec, *, regime, k, group, **options):
    """Δ(EEL) with the spec's grade thresholds: tabular or of the ranking (LTR)."""
    if regime == "tabular":
        return M.delta_eel_tabular_per_query(
            scores,
            spec.relevance,
            qptr=spec.qptr,
            groups=spec.groups,
            thresholds=spec.thresholds,
            **options,
        )
    return M.delta_eel_ranking_per_query(
        scores,
        spec.relevance,
        qptr=spec.qptr,
        groups=spec.groups,
        thresholds=spec.thresholds,
        k=k,
        **options,
    )


def _related_work(name: str):
    def fn(scores, spec: EvalSpec, *, regime, k, group, **options):
        from ..fairness import FAIRNESS_METRICS
        from ..membership import membership_from_groups

        m = spec.membership if spec.membership is not None else membership_from_groups(spec.groups)
        return FAIRNESS_METRICS[name](
            scores,
            spec.labels,
            qptr=spec.qptr,
            membership=m,
            k=DEFAULT_K if k is None else k,
            **options,
        )

    fn.__name__ = name
    fn.__doc__ = f"{name} of the ranking by the scores (groupbias.fairness; k default {DEFAULT_K})."
    return fn


for _name in (
    "awrf",
    "awrf_distance",
    "ndcg_awrf",
    "ted",
    "texfair",
    "rbdf",
    "nfairr",
    "fairr",
    "cwex",
    "delta_exposure",
    "rank_bias",
    "arab",
):
    METRICS.register(_name, _related_work(_name), replace=True)


def compute_metrics(scores: np.ndarray, spec: EvalSpec, regime: str) -> dict[str, np.ndarray]:
    """``{output key: float64 [n_queries]}`` of ``spec.metrics`` for ``scores``."""
    choice("regime", regime, REGIMES)
    out = {}
    for r in validate_metrics(spec.metrics):
        fn = METRICS.get(r.name)
        out[r.key] = np.asarray(
            fn(scores, spec, regime=regime, k=r.k, group=r.group, **r.options), dtype=np.float64
        )
    return out


def tabular_metrics(scores: np.ndarray, spec: EvalSpec) -> dict[str, np.ndarray]:
    """Per-query metric vectors of tabular utility estimates ``scores`` (float64
    [n_queries] each; NaN where a query is skipped)."""
    return compute_metrics(scores, spec, "tabular")


def ranking_metrics(scores: np.ndarray, spec: EvalSpec) -> dict[str, np.ndarray]:
    """Per-query metric vectors of a model's ranking by ``scores`` (LTR regime)."""
    return compute_metrics(scores, spec, "ltr")


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
    from ..fairness import per_query_correlation

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
