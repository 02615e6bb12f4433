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
  that simulation (below 1 only by the clipped noise) and ``null_error`` their distance.
  The pipelines simulate it (:meth:`groupbias.simulate.group_bias.GroupBias.simulate_null`) and
  hand it in: the estimate stage never simulates.

A null error above ``null_tolerance`` (default 0.05) marks the run: an
:class:`~groupbias.core.errors.AssumptionWarning` names the cause and the remedy and the records
carry ``assumption_violated = 1``, which Tables 1 and 2 flag. Without true relevance,
:func:`estimate_summary` reports what the estimate says about itself: the curve minimum, the
width of its flat region, the spread over clusters, and the bootstrap interval when one was
computed.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..core.errors import AssumptionWarning
from ..core.segments import query_index
from ..core.validation import real
from ..data.membership import affected_group, utility_ratio
from ..data.ranking_data import RankingData
from .estimators import estimate_simulated
from .ks import BetaEstimate, ks_curves

if TYPE_CHECKING:  # the type of the null simulation the pipelines hand in
    from ..simulate.group_bias import Simulation

__all__ = ["Diagnostics", "AssumptionCheck", "estimate_summary", "DIAGNOSTIC_METRICS"]

#: the metric names of the diagnostic records
DIAGNOSTIC_METRICS = (
    "utility_ratio",
    "ks_relevance",
    "ks_relevance_cluster",
    "null_beta_hat",
    "null_beta_true",
    "null_error",
    "assumption_violated",
)


@dataclass(frozen=True)
class AssumptionCheck:
    """The outcome of :meth:`Diagnostics.check` for one dataset and grouping."""

    utility_ratio: float
    ks_relevance: float
    ks_relevance_cluster: float
    null_beta_hat: float
    null_beta_true: float
    tolerance: float

    @property
    def null_error(self) -> float:
        """``|mean β̂ - mean beta_q|`` of the null simulation (β = 1)."""
        return abs(self.null_beta_true - self.null_beta_hat)

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

    def message(self, where: str) -> str:
        head = (
            f"{where}: the estimator's assumption fails: on data simulated without bias "
            f"(β = 1, mean β_q {self.null_beta_true:.3f} after clipping the noise) it "
            f"estimates β̂ = {self.null_beta_hat:.3f} (off by {self.null_error:.3f} > "
            f"{self.tolerance:g}). "
        )
        if self.unequal_merit:
            cause = (
                f"Cause: the groups' utilities differ (affected / non-affected mean utility "
                f"{self.utility_ratio:.3f}, KS distance {self.ks_relevance:.3f}), which the "
                "KS estimator assumes away (Eq. 13). Remedy: estimator=calibrated (learns the "
                "affected group's utilities from a small labeled sample) or a grouping whose "
                "groups have equal merit"
            )
        else:
            cause = (
                f"Cause: the groups have equal merit overall (KS distance "
                f"{self.ks_relevance:.3f}) but not within the estimator's clusters (mean KS "
                f"distance {self.ks_relevance_cluster:.3f}): the clusters are too small. "
                "Remedy: larger clusters (estimator.cluster_size) or estimator=shrinkage"
            )
        return head + cause + "; β̂ and the corrected metrics of this run are not reliable."


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
        per_q = estimate_simulated(
            estimator, data, null, rng=rng, clusters=clusters, point=True
        ).beta_hat_per_query
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
        )
        if warn and check.violated:
            warnings.warn(check.message(where or data.name), AssumptionWarning, stacklevel=2)
        return check


def estimate_summary(est: BetaEstimate, tol: float = 0.01) -> dict:
    """What an estimate says about itself without true relevance.

    ``ks_min``: mean over clusters of the curve's minimum (0 = a perfect match after
    rescaling); ``flat_width``: mean over clusters of the width in β of the grid region whose
    curve lies within ``tol`` of its minimum (wide = the data hardly determine β);
    ``cluster_spread``: standard deviation of the cluster estimates; ``ci_low``/``ci_high``:
    mean bootstrap interval bounds (NaN when no interval was computed)."""
    ok = np.isfinite(est.beta_hat) & ~np.all(np.isnan(est.ks_curve), axis=1)
    out = {
        "ks_min": float("nan"),
        "flat_width": float("nan"),
        "cluster_spread": float("nan"),
        "ci_low": float("nan"),
        "ci_high": float("nan"),
    }
    if ok.any():
        curves = est.ks_curve[ok]
        lo = np.nanmin(curves, axis=1, keepdims=True)
        near = curves <= lo + tol
        grid = est.grid
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
