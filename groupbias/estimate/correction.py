"""Inverse-propensity correction of group bias (paper §5, Eq. 2 inverted).

With the multiplicative model ``a = beta * P(R)`` for affected items (``beta_N = 1``), the IPS
corrected score of an item is

    a_corr = a / (g * beta_hat_q + 1 - g),

i.e. ``a / beta_hat_q`` for affected items (``g = 1``), ``a`` unchanged for non-affected ones
(``g = 0``), and the inverse of the expected propensity for membership probabilities
``g in (0, 1)``. ``beta_hat_q`` is the estimate of the cluster of query ``q``
(:attr:`groupbias.estimate.beta_estimate.BetaEstimate.beta_hat_per_query`). Queries whose
estimate is NaN (the estimator's failure policy: a group had no score in the cluster) keep their
scores unchanged.
"""

from __future__ import annotations

import numpy as np

from ..core.errors import ParameterError
from ..core.validation import check_qptr, checked_arguments, vector
from ..simulate.group_bias import item_propensity

__all__ = ["ips_correct", "correct_with_estimate"]


@checked_arguments
def ips_correct(attractiveness, groups, *, qptr, beta_hat_per_query) -> np.ndarray:
    """IPS-corrected attractiveness ``a / (g * beta_hat_q + 1 - g)`` (float64 [n_items]).

    Parameters
    ----------
    attractiveness : float [n_items], finite, non-negative
    groups : float [n_items] in [0, 1] (1 = affected)
    qptr : int64 [n_queries + 1]
    beta_hat_per_query : float [n_queries], values in (0, 1] or NaN (NaN leaves the query's
        items unchanged)

    The inputs are not modified; a new array is returned.
    """
    a = vector("attractiveness", attractiveness, low=0.0, what="finite non-negative scores")
    g = vector(
        "groups", groups, a.size, low=0.0, high=1.0, what="memberships in [0, 1] (1 = affected)"
    )
    q = check_qptr(qptr, a.size)
    b = vector("beta_hat_per_query", beta_hat_per_query, q.size - 1, finite=False, per="query")
    known = ~np.isnan(b)
    # below the smallest normal float a / β̂ overflows to inf
    ok = (b >= np.finfo(np.float64).tiny) & (b <= 1)
    if np.any(known & ~ok):
        bad = b[known & ~ok]
        raise ParameterError(
            "beta_hat_per_query",
            f"propensities in [{np.finfo(np.float64).tiny:.3g}, 1] or NaN (a / β̂ must stay finite)",
            f"value {bad[0]!r}",
        )
    factor = item_propensity(g, np.where(known, b, 1.0), q)
    with np.errstate(over="ignore"):
        out = np.divide(a, factor)
    if not np.isfinite(out).all():
        i = int(np.flatnonzero(~np.isfinite(out))[0])
        raise ParameterError(
            "attractiveness",
            "scores whose corrections a / propensity stay finite",
            f"item {i}: {float(a[i])!r} / {float(factor[i])!r} overflows",
            fix="rescale the scores (their scale does not matter to the correction's ranking)",
        )
    return out


@checked_arguments
def correct_with_estimate(attractiveness, groups, *, qptr, estimate) -> np.ndarray:
    """:func:`ips_correct` with ``estimate.beta_hat_per_query`` of a
    :class:`groupbias.estimate.beta_estimate.BetaEstimate`."""
    return ips_correct(
        attractiveness, groups, qptr=qptr, beta_hat_per_query=estimate.beta_hat_per_query
    )
