"""Checks of the estimator's assumption, always on (docs/method.md, "Diagnostics").

The KS estimator assumes both groups' utilities share one distribution (Eq. 13, Remark 3).
Real sensitive attributes often violate it (groups of unequal merit), and then β̂ is wrong
even when there is no bias at all. Whenever true relevance is known (every simulation),
:meth:`Diagnostics.check` records per dataset and grouping:

- ``utility_ratio``: mean relevance of the affected group / of the non-affected group;
- ``ks_relevance``: ``KS(R_A, R_N)``, the KS distance between the groups' relevance
  distributions, over all queries and (``ks_relevance_cluster``) averaged over the clusters
  the estimate uses;
- ``null_beta_hat``: the estimator's mean β̂ on attractiveness simulated at β = 1 with the
  run's per-query noise (the *null check*), ``null_beta_true`` the mean true ``beta_q`` of
  that simulation (below 1 only by the clipped noise), ``null_bias`` = ``null_beta_hat −
  null_beta_true`` (the estimator's signed bias there) and ``null_error`` its size.
  The pipelines simulate it (:meth:`groupbias.simulate.group_bias.GroupBias.simulate_null`) and
  hand it in: the estimate stage never simulates.

A null error above ``null_tolerance`` (default 0.05) marks the run: an
:class:`~groupbias.core.errors.AssumptionWarning` names the estimator that ran, the cause it
measured and a remedy that estimator does not already apply, and the records carry
``assumption_violated = 1``, which Tables 1 and 2 flag. The calibrated estimator's check
runs on the run's own labeled sample (its error is that sample's). Without true relevance,
:func:`estimate_summary` reports what the estimate says about itself: the curve minimum, the
width of its flat region, the spread over clusters, and the bootstrap interval when one was
computed.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from ..core.errors import AssumptionWarning
from ..core.registry import ESTIMATORS
from ..core.segments import query_index
from ..core.validation import real
from ..data.membership import affected_group, utility_ratio
from ..data.ranking_data import RankingData
from .beta_estimate import BetaEstimate
from .estimators import estimate_simulated
from .ks import ks_curves

if TYPE_CHECKING:  # the type of the null simulation the pipelines hand in
    from ..simulate.group_bias import Simulation

__all__ = [
    "Diagnostics",
    "AssumptionCheck",
    "estimate_summary",
    "estimator_name",
    "DIAGNOSTIC_METRICS",
]

#: the metric names of the diagnostic records
DIAGNOSTIC_METRICS = (
    "utility_ratio",
    "ks_relevance",
    "ks_relevance_cluster",
    "null_beta_hat",
    "null_beta_true",
    "null_bias",
    "null_error",
    "assumption_violated",
)


def estimator_name(estimator) -> str:
    """The name ``estimator``'s class is registered under (``ks``, ``calibrated``,
    ``shrinkage``; :data:`~groupbias.core.registry.ESTIMATORS`), else the class name."""
    for name in ESTIMATORS:
        if type(estimator) is ESTIMATORS.get(name):
            return name
    return type(estimator).__name__


@dataclass(frozen=True)
class AssumptionCheck:
    """The outcome of :meth:`Diagnostics.check` for one dataset and grouping: the measured
    values, the ``estimator`` that ran (its registered name), the number of clusters its
    estimate used and, for the calibrated estimator, its labeled sample (``labeled_queries``
    and the affected items with positive relevance in them, ``labeled_positives``)."""

    utility_ratio: float
    ks_relevance: float
    ks_relevance_cluster: float
    null_beta_hat: float
    null_beta_true: float
    tolerance: float
    estimator: str = "ks"
    n_clusters: int = 1
    labeled_queries: int | None = None
    labeled_positives: int | None = None

    @property
    def null_bias(self) -> float:
        """``mean β̂ - mean beta_q`` of the null simulation (β = 1): the estimator's bias
        there, signed (negative: it under-estimates, and would over-correct)."""
        return self.null_beta_hat - self.null_beta_true

    @property
    def null_error(self) -> float:
        """``|mean β̂ - mean beta_q|`` of the null simulation (β = 1)."""
        return abs(self.null_bias)

    @property
    def violated(self) -> bool:
        """The null check failed (or gave no estimate at all)."""
        return not np.isfinite(self.null_beta_hat) or self.null_error > self.tolerance

    def values(self) -> dict:
        return {
            "utility_ratio": self.utility_ratio,
            "ks_relevance": self.ks_relevance,
            "ks_relevance_cluster": self.ks_relevance_cluster,
            "null_beta_hat": self.null_beta_hat,
            "null_beta_true": self.null_beta_true,
            "null_bias": self.null_bias,
            "null_error": self.null_error,
            "assumption_violated": float(self.violated),
        }

    def records(self, base: dict) -> list[dict]:
        """One tidy record per diagnostic (``condition="diagnostic"``)."""
        return [
            {**base, "metric": k, "condition": "diagnostic", "value": float(v)}
            for k, v in self.values().items()
        ]

    @property
    def unequal_merit(self) -> bool:
        """The groups' relevance distributions differ over all queries by more than the
        tolerance (KS distance or mean-utility ratio)."""
        return bool(
            self.ks_relevance > self.tolerance or abs(1.0 - self.utility_ratio) > self.tolerance
        )

    @property
    def small_clusters(self) -> bool:
        """Equal merit overall but not within the estimate's clusters (several of them)."""
        return self.n_clusters > 1 and self.ks_relevance_cluster > self.tolerance

    def message(self, where: str) -> str:
        """The warning: what the null check found, the cause it measured for the estimator
        that ran, and a remedy that estimator does not already apply."""
        scaled = (
            f", its affected attractiveness scaled to the known β {LABELED_CHECK_BETA:g} and "
            f"β̂ rescaled by 1 / {LABELED_CHECK_BETA:g}"
            if self.labeled_queries is not None
            else ""
        )
        head = (
            f"{where}: the {self.estimator} estimator's assumption fails: on data simulated "
            f"without bias (β = 1, mean β_q {self.null_beta_true:.3f} after clipping the "
            f"noise{scaled}) it estimates β̂ = {self.null_beta_hat:.3f} (null bias "
            f"{self.null_bias:+.3f}: off by {self.null_error:.3f} > {self.tolerance:g}). "
        )
        return head + self.cause() + "; β̂ and the corrected metrics of this run are not reliable."

    def cause(self) -> str:
        """The cause the check measured and its remedy (see :meth:`message`)."""
        if self.labeled_queries is not None:
            return (
                f"Cause: the calibrated estimator learns the affected group's utilities from "
                f"its labeled sample ({self.labeled_queries} queries holding "
                f"{self.labeled_positives} affected items with positive relevance; the null "
                "check ran on the same sample), and that sample is too small or not "
                "representative of the others. Remedy: a larger estimator.labeled_fraction"
            )
        if self.unequal_merit:
            return (
                f"Cause: the groups' utilities differ (affected / non-affected mean utility "
                f"{self.utility_ratio:.3f}, KS distance {self.ks_relevance:.3f}), which the "
                f"{self.estimator} estimator assumes away (Eq. 13). Remedy: "
                "estimator=calibrated (learns the affected group's utilities from a small "
                "labeled sample) or a grouping whose groups have equal merit"
            )
        if self.small_clusters:
            other = "" if self.estimator == "shrinkage" else " or estimator=shrinkage"
            return (
                f"Cause: the groups have equal merit overall (KS distance "
                f"{self.ks_relevance:.3f}) but not within the estimator's {self.n_clusters} "
                f"clusters (mean KS distance {self.ks_relevance_cluster:.3f}): the clusters "
                f"are too small. Remedy: larger clusters (estimator.cluster_size){other}"
            )
        scope = "one cluster" if self.n_clusters == 1 else f"{self.n_clusters} clusters"
        return (
            f"Cause: not the groups' merit (KS distance {self.ks_relevance:.3f} over all "
            f"queries, {self.ks_relevance_cluster:.3f} within the estimate's {scope}) but the "
            f"{self.estimator} estimator's own sampling error on this data (few affected "
            "scores: a flat KS curve). Remedy: more queries per cluster, and an interval to "
            "judge β̂ by (estimator.bootstrap=200)"
        )


def _relevance_ks(relevance, affected, qptr, cluster_of_query) -> tuple[float, float]:
    """``KS(R_A, R_N)`` overall and averaged over the clusters holding both groups."""
    x, y = relevance[affected], relevance[~affected]
    if x.size == 0 or y.size == 0:
        return float("nan"), float("nan")
    one = np.ones(1)
    overall = float(ks_curves(x, y, grid=one)[0, 0])
    n_clusters = int(cluster_of_query.max(initial=0)) + 1
    if n_clusters == 1:  # one global cluster: the same statistic
        return overall, overall
    cluster_of_item = cluster_of_query[query_index(qptr)]
    per = ks_curves(
        x,
        y,
        grid=one,
        affected_cluster=cluster_of_item[affected],
        non_affected_cluster=cluster_of_item[~affected],
        n_clusters=n_clusters,
    )[:, 0]
    ok = np.isfinite(per)
    return overall, float(per[ok].mean()) if ok.any() else float("nan")


@dataclass(frozen=True)
class Diagnostics:
    """The ``diagnostics`` config group: ``null_tolerance`` is the largest ``|1 - β̂|`` the
    null check accepts before it flags the run and warns."""

    null_tolerance: float = 0.05

    def __post_init__(self) -> None:
        real("null_tolerance", self.null_tolerance, low=0.0, high=1.0, low_open=True)

    def check(
        self,
        data: RankingData,
        null: Simulation,
        *,
        estimator,
        rng: np.random.Generator,
        estimate: BetaEstimate | None = None,
        where: str = "",
        warn: bool = True,
    ) -> AssumptionCheck:
        """Diagnose ``estimator`` on grouped ``data`` with the null simulation ``null``.

        ``null``: attractiveness simulated on ``data`` without bias but with the run's
        per-query noise (:meth:`groupbias.simulate.group_bias.GroupBias.simulate_null`: β = 1,
        clipped draws keep some ``beta_q`` below 1); the check compares the estimator's mean
        β̂ per query on it with the mean true ``beta_q``. ``rng``: draws the estimate (the
        pipelines pass the child generator that drew ``null``, so the run's own random
        stream is unchanged); ``estimate``: the run's estimate, whose clusters the null
        check reuses (so it tests the same amortization); ``where``: names the
        dataset/grouping in the warning. Estimators with a ``point`` method (those of
        :mod:`groupbias.estimate.estimators`) give the null check their point estimate,
        without a configured bootstrap interval; the tie-breaking noise is on the data's
        grade spacing.
        """
        affected = affected_group(data.groups)
        q = data.qptr
        n_q = q.size - 1
        # the run's clusters (per-query estimators keep their own), no bootstrap interval
        clusters = None if estimate is None else estimate.cluster_of_query
        if estimate is not None and estimate.beta_hat.size == data.n_queries:
            clusters = None
        runner, scale = _null_estimator(estimator, estimate)
        handed = null if scale == 1.0 else _scaled(null, affected, scale)
        null_est = estimate_simulated(runner, data, handed, rng=rng, clusters=clusters, point=True)
        per_q = null_est.beta_hat_per_query / scale
        ok = np.isfinite(per_q)
        cq = np.zeros(n_q, np.int64) if estimate is None else estimate.cluster_of_query
        overall, per_cluster = _relevance_ks(null.relevance, affected, q, cq)
        check = AssumptionCheck(
            utility_ratio=utility_ratio(null.relevance, affected),
            ks_relevance=overall,
            ks_relevance_cluster=per_cluster,
            null_beta_hat=float(per_q[ok].mean()) if ok.any() else float("nan"),
            null_beta_true=float(null.beta_query[ok].mean()) if ok.any() else 1.0,
            tolerance=float(self.null_tolerance),
            estimator=estimator_name(estimator),
            n_clusters=1 if estimate is None else int(estimate.beta_hat.size),
            labeled_queries=null_est.info.get("labeled_queries"),
            labeled_positives=null_est.info.get("labeled_positives"),
        )
        if warn and check.violated:
            warnings.warn(check.message(where or data.name), AssumptionWarning, stacklevel=2)
        return check


#: where the check of an estimator that learns from a labeled sample puts the truth: its
#: affected attractiveness is scaled by this factor, so that β̂ / factor shows over- and
#: underestimates alike (up to 1 / factor) instead of stopping at the grid's top, 1
LABELED_CHECK_BETA = 0.5


def _null_estimator(estimator, estimate: BetaEstimate | None) -> tuple:
    """``(estimator, scale)`` of the null check: the estimator itself on the null simulation
    (scale 1) or, for one that learns from a labeled sample (``with_labeled_sample``: the
    calibrated estimator), the same estimator on the run's own labeled sample, at the known
    β :data:`LABELED_CHECK_BETA` (its error is that sample's, in either direction: a sample
    of too high utilities shrinks β̂, one of too low utilities raises it past 1)."""
    pin = getattr(estimator, "with_labeled_sample", None)
    if pin is None or estimate is None or "labeled" not in estimate.info:
        return estimator, 1.0
    return pin(estimate.info["labeled"]), LABELED_CHECK_BETA


def _scaled(null: Simulation, affected: np.ndarray, scale: float) -> Simulation:
    """The null simulation with the affected group's attractiveness (and β_q) times ``scale``."""
    return replace(
        null,
        attractiveness=np.where(affected, null.attractiveness * scale, null.attractiveness),
        beta_query=null.beta_query * scale,
    )


def estimate_summary(est: BetaEstimate, tol: float = 0.01) -> dict:
    """What an estimate says about itself without true relevance.

    ``ks_min``: mean over clusters of the curve's minimum (0 = a perfect match after
    rescaling); ``flat_width``: mean over clusters of the width in β of the grid region whose
    curve lies within ``tol`` of its minimum (wide = the data hardly determine β);
    ``cluster_spread``: standard deviation of the cluster estimates; ``ci_low``/``ci_high``:
    mean bootstrap interval bounds (NaN when no interval was computed). An estimate without
    a curve (``ks_curve`` None) has NaN ``ks_min`` and ``flat_width``."""
    curves, grid = est.ks_curve, est.grid
    ok = np.zeros(est.n_clusters, dtype=bool)
    if curves is not None and grid is not None:
        ok = np.isfinite(est.beta_hat) & ~np.all(np.isnan(curves), axis=1)
    out = {
        "ks_min": float("nan"),
        "flat_width": float("nan"),
        "cluster_spread": float("nan"),
        "ci_low": float("nan"),
        "ci_high": float("nan"),
    }
    if ok.any() and curves is not None and grid is not None:
        curves = curves[ok]
        lo = np.nanmin(curves, axis=1, keepdims=True)
        near = curves <= lo + tol
        first = grid[np.argmax(near, axis=1)]
        last = grid[grid.size - 1 - np.argmax(near[:, ::-1], axis=1)]
        out["ks_min"] = float(lo.mean())
        out["flat_width"] = float(np.mean(last - first))
        out["cluster_spread"] = float(np.std(est.beta_hat[ok]))
    if est.ci_low is not None and est.ci_high is not None:
        good = np.isfinite(est.ci_low) & np.isfinite(est.ci_high)
        if good.any():
            out["ci_low"] = float(est.ci_low[good].mean())
            out["ci_high"] = float(est.ci_high[good].mean())
    return out
