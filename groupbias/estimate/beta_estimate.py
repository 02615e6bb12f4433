"""What every estimator of the group propensity returns: :class:`BetaEstimate`, β̂ per query
cluster and per query, the scores it rests on, an optional bootstrap interval, and, for the
grid-search estimators (:func:`groupbias.estimate.ks.estimate_beta`), the distance curve over
the β grid. An estimator without such a curve leaves ``grid`` and ``ks_curve`` None."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["BetaEstimate"]


@dataclass(frozen=True, eq=False, kw_only=True)
class BetaEstimate:
    """Result of an estimator (:func:`groupbias.estimate.ks.estimate_beta` and the
    estimators of :mod:`groupbias.estimate.estimators`).

    Attributes
    ----------
    beta_hat : float [n_clusters], NaN where the cluster lacks a group (see ``n_failed``)
    cluster_of_query : int64 [n_queries], cluster index of every query
    beta_hat_per_query : float [n_queries], ``beta_hat[cluster_of_query]``
    n_affected, n_non_affected : int64 [n_clusters], scores used per group (with a
        ``reference`` sample: the reference values compared in the cluster)
    cluster_labels : [n_clusters], the given cluster label of every cluster index
    grid : float [n_grid] or None, the candidate β of a grid search (None: the estimator
        searches no grid)
    ks_curve : float [n_clusters, n_grid] or None, the distance of the search
        (``KS(A_A / beta, A_N)`` by default) per cluster and grid point; None with ``grid``
    ci_low, ci_high : float [n_clusters] or None, a bootstrap confidence interval of
        ``beta_hat`` (:func:`groupbias.estimate.estimators.bootstrap_interval`)
    info : what an estimator reports beside (chosen cluster size, shrinkage weights, ...)
    """

    beta_hat: np.ndarray
    cluster_of_query: np.ndarray
    beta_hat_per_query: np.ndarray
    n_affected: np.ndarray
    n_non_affected: np.ndarray
    cluster_labels: np.ndarray
    grid: np.ndarray | None = None
    ks_curve: np.ndarray | None = None
    ci_low: np.ndarray | None = None
    ci_high: np.ndarray | None = None
    info: dict = field(default_factory=dict)

    @property
    def n_clusters(self) -> int:
        return int(self.beta_hat.size)

    @property
    def n_failed(self) -> int:
        """Clusters without an estimate (a group has no score)."""
        return int(np.isnan(self.beta_hat).sum())

    @property
    def beta_hat_mean(self) -> float:
        """Mean of the finite cluster estimates: the one β̂ of data the clusters do not cover
        (a validation split). NaN when every cluster failed, which means *no estimate*: the
        correction (:func:`groupbias.estimate.correction.ips_correct`) leaves queries whose
        β̂ is NaN uncorrected, exactly as dividing by 1 would (``a / 1.0``); no caller
        substitutes a value of its own."""
        ok = np.isfinite(self.beta_hat)
        return float(self.beta_hat[ok].mean()) if ok.any() else float("nan")

    @property
    def ks_min(self) -> np.ndarray:
        """Minimum of the KS curve per cluster (NaN for failed clusters, and for every
        cluster of an estimate without a curve)."""
        out = np.full(self.n_clusters, np.nan)
        if self.ks_curve is None:
            return out
        ok = ~np.isnan(self.beta_hat)
        out[ok] = self.ks_curve[ok].min(axis=1)
        return out
