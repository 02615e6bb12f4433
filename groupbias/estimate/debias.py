"""The bias of the KS estimate, measured on the run's own data by a parametric bootstrap.

The grid search of Eq. (14) is biased: its argmin cannot pass the top of the grid (β̂ ≤ 1,
so near β = 1 it errs low), a flat curve puts β̂ where the tie rule says, and with per-query
propensities ``β_q`` the affected scores of a cluster are a *scale mixture*, which no single
``β`` maps onto the non-affected scores: the KS argmin then lands below the cluster's mean
``β_q`` (by about σ_β² / (2 β) per cluster; docs/method.md, "Small-sample bias").

:func:`bootstrap_bias` measures that bias where the estimate was made. Each replicate builds
data whose propensities are known, under the estimator's own assumption (Eq. 13: both
groups' utilities share one distribution): every positive score of a cluster is replaced
by a positive non-affected score of the same cluster drawn with replacement (zeros stay
zeros, so the groups' zero fractions are the run's), the affected ones multiplied by
``β*_q ~ N(β̂_c, beta_std)`` (clipped to ``[0.01, 1]``, as the simulator draws them). The
replicate is estimated with the same search and clusters, and the bias of cluster ``c`` is
the mean over replicates of ``β̂*_c`` minus the mean ``β*_q`` of the cluster. The corrected
estimate is ``β̂_c − bias_c`` clipped to ``[grid[0], 1]``.
"""

from __future__ import annotations

import numpy as np

from ..core.segments import query_index
from ..simulate.group_bias import draw_query_beta
from .beta_estimate import BetaEstimate
from .ks import estimate_beta

__all__ = ["BIAS_CORRECTIONS", "bootstrap_bias", "equal_merit_draw"]

#: ``estimator.bias_correction``: none, or the parametric bootstrap of :func:`bootstrap_bias`
BIAS_CORRECTIONS = ("none", "bootstrap")


def equal_merit_draw(
    attractiveness: np.ndarray,
    affected: np.ndarray,
    item_cluster: np.ndarray,
    n_clusters: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Utilities under Eq. 13 from the run's own scores: every positive score replaced by a
    positive non-affected score of its cluster drawn with replacement; zeros stay zero, and
    so do the positive scores of a cluster without positive non-affected scores."""
    pos = attractiveness > 0
    pool = np.flatnonzero(pos & ~affected)
    pool = pool[np.argsort(item_cluster[pool], kind="stable")]
    count = np.bincount(item_cluster[pool], minlength=n_clusters)
    start = np.cumsum(count) - count
    items = np.flatnonzero(pos)
    c = item_cluster[items]
    items, c = items[count[c] > 0], c[count[c] > 0]
    pick = start[c] + np.floor(rng.random(items.size) * count[c]).astype(np.int64)
    out = np.zeros_like(attractiveness, dtype=np.float64)
    out[items] = attractiveness[pool[pick]]
    return out


def bootstrap_bias(
    estimate: BetaEstimate,
    attractiveness,
    affected: np.ndarray,
    *,
    qptr,
    n_boot: int,
    beta_std: float,
    rng: np.random.Generator,
    search: dict,
) -> np.ndarray:
    """The bias of every cluster's estimate (float64 [n_clusters], NaN where the estimate
    or every replicate failed): ``mean_b(β̂*_c − mean_{q in c} β*_q)`` over ``n_boot``
    replicates drawn at ``β̂`` (module docstring). ``search``: the keyword arguments of
    :func:`~groupbias.estimate.ks.estimate_beta` that made ``estimate``."""
    a = np.asarray(attractiveness, dtype=np.float64)
    q = np.asarray(qptr, dtype=np.int64)
    cq = estimate.cluster_of_query
    n_c = estimate.n_clusters
    qi = query_index(q)
    item_cluster = cq[qi]
    size = np.bincount(cq, minlength=n_c)
    means = np.nan_to_num(estimate.beta_hat, nan=1.0)
    errors = np.full((n_boot, n_c), np.nan)
    for b in range(n_boot):
        beta_q = draw_query_beta(
            cq.size, beta_mean=means, beta_std=beta_std, rng=rng, cluster_of_query=cq
        )
        utility = equal_merit_draw(a, affected, item_cluster, n_c, rng)
        star = utility * np.where(affected, beta_q[qi], 1.0)
        rep = estimate_beta(
            star, affected.astype(np.float64), qptr=q, rng=rng, clusters=cq, **search
        )
        errors[b] = rep.beta_hat - np.bincount(cq, weights=beta_q, minlength=n_c) / size
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(errors)
        bias = np.where(ok.any(axis=0), np.where(ok, errors, 0.0).sum(axis=0), np.nan)
        bias = bias / np.maximum(ok.sum(axis=0), 1)
    bias[np.isnan(estimate.beta_hat)] = np.nan
    return bias
