"""Position bias from a click log without knowing η, and position-debiased attractiveness.

Both estimators read the log's counts per (item, position): ``shown[d, k]`` and
``clicks[d, k]`` (:meth:`groupbias.simulate.clicks.ClickLog.counts`), and assume the position-based
model ``P(C | d, k) = θ_k γ_d``. Propensities are relative to position 1 (``θ̂_1 = 1``),
the scale IPS needs (a common factor only rescales every label).

- :func:`harvest_propensities` (intervention harvesting, Agarwal et al. 2019, with position
  1 as the reference): an item shown at both positions 1 and ``k`` (swap or shuffle
  interventions, or several logging policies) has click rates ``θ_1 γ_d`` and ``θ_k γ_d``;
  over all such items ``θ̂_k = Σ_d w_d ctr_dk / Σ_d w_d ctr_d1`` with
  ``w_d = n_d1 n_dk / (n_d1 + n_dk)`` (the precision of a difference of two rates), a
  ratio of two weighted sums that is consistent for ``θ_k / θ_1``.
- :func:`em_propensities` (the EM of Wang et al. 2018, with one relevance parameter per
  item instead of a regression): E-step, the posterior of (examined, attractive) for every
  non-click; M-step, ``θ_k`` and ``γ_d`` as expected counts over shown counts.

:func:`debiased_attractiveness` is the IPS estimate ``Σ_k c_dk / Σ_k n_dk θ̂_k`` of every
item's attractiveness (clicks over examination-weighted impressions), the naive click rate
when ``propensity`` is all ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import ParameterError
from ..core.validation import integer, real, vector

__all__ = [
    "PositionEstimate",
    "harvest_propensities",
    "em_propensities",
    "estimate_propensities",
    "debiased_attractiveness",
    "PROPENSITY_METHODS",
]

PROPENSITY_METHODS = ("harvest", "em")


@dataclass(frozen=True)
class PositionEstimate:
    """Propensities ``theta`` (float64 [k], ``theta[0] = 1``), the ``method``, and for EM
    the per-item attractiveness ``gamma`` and the iterations run."""

    theta: np.ndarray
    method: str
    gamma: np.ndarray | None = None
    iterations: int = 0


def _counts(shown, clicks) -> tuple[np.ndarray, np.ndarray]:
    n = np.asarray(shown, dtype=np.float64)
    c = np.asarray(clicks, dtype=np.float64)
    if n.ndim != 2 or c.shape != n.shape or n.shape[1] < 1:
        raise ParameterError(
            "shown/clicks", "equal 2-D count arrays [n_items, positions]", (n.shape, c.shape)
        )
    if np.any(~np.isfinite(n)) or np.any(n < 0) or np.any(c < 0) or np.any(c > n):
        raise ParameterError("clicks", "counts with 0 <= clicks <= shown", "other values")
    return n, c


def harvest_propensities(shown, clicks) -> PositionEstimate:
    """Intervention harvesting against position 1 (module docstring)."""
    n, c = _counts(shown, clicks)
    both = (n[:, :1] > 0) & (n > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        ctr = np.where(n > 0, c / np.maximum(n, 1.0), 0.0)
        w = np.where(both, n[:, :1] * n / np.maximum(n[:, :1] + n, 1.0), 0.0)
    num = (w * ctr).sum(axis=0)
    den = (w * ctr[:, :1]).sum(axis=0)
    missing = np.flatnonzero(den[1:] <= 0) + 2
    if missing.size:
        raise ParameterError(
            "log",
            "clicked items shown both at position 1 and at every other position",
            f"none for position(s) {missing.tolist()}",
            fix="log with interventions (swap / shuffle) or several logging policies",
        )
    theta = num / den
    theta[0] = 1.0
    return PositionEstimate(theta=theta, method="harvest")


def em_propensities(
    shown, clicks, *, max_iter: int = 500, tol: float = 1e-7, init: float = 0.5
) -> PositionEstimate:
    """EM for the position-based model (module docstring), started at ``θ_k = γ_d =
    init``; stops when no propensity moves by more than ``tol`` in one iteration."""
    n, c = _counts(shown, clicks)
    integer("max_iter", max_iter, low=1)
    real("tol", tol, low=0.0, low_open=True)
    p0 = real("init", init, low=0.0, high=1.0, low_open=True, high_open=True)
    if not c[:, 0].sum() > 0:  # θ is relative to position 1: nothing to fit without clicks
        raise ParameterError(
            "clicks",
            "clicks at position 1 (θ_k = P(examined at k) / P(examined at 1))",
            f"{c.sum():g} clicks in all, {c[:, 0].sum():g} at position 1",
            fix="log more sessions",
        )
    seen = n.sum(axis=1) > 0
    n, c = n[seen], c[seen]
    nc = n - c
    theta = np.full(n.shape[1], p0)
    gamma = np.full(n.shape[0], p0)
    shown_k = np.maximum(n.sum(axis=0), 1e-300)
    shown_d = n.sum(axis=1)
    done = 0
    for step in range(1, int(max_iter) + 1):  # iterations, each vectorized over all counts
        done = step
        tg = theta[None, :] * gamma[:, None]
        denom = np.maximum(1.0 - tg, 1e-12)
        e_not_r = theta[None, :] * (1.0 - gamma[:, None]) / denom  # P(E=1, R=0 | C=0)
        r_not_e = (1.0 - theta[None, :]) * gamma[:, None] / denom  # P(E=0, R=1 | C=0)
        new_theta = np.clip((c + nc * e_not_r).sum(axis=0) / shown_k, 1e-12, 1.0)
        gamma = np.clip((c + nc * r_not_e).sum(axis=1) / shown_d, 1e-12, 1.0 - 1e-12)
        moved = float(np.max(np.abs(new_theta - theta)))
        theta = new_theta
        if moved < tol:
            break
    full_gamma = np.zeros(seen.size)
    full_gamma[seen] = gamma * theta[0]
    return PositionEstimate(theta=theta / theta[0], method="em", gamma=full_gamma, iterations=done)


def estimate_propensities(shown, clicks, *, method: str = "harvest") -> PositionEstimate:
    """:func:`harvest_propensities` or :func:`em_propensities` by name."""
    if method == "harvest":
        return harvest_propensities(shown, clicks)
    if method == "em":
        return em_propensities(shown, clicks)
    raise ParameterError("method", "one of " + ", ".join(map(repr, PROPENSITY_METHODS)), method)


def debiased_attractiveness(
    shown, clicks, propensity, *, min_propensity: float = 0.01
) -> tuple[np.ndarray, np.ndarray]:
    """``(attractiveness float64 [n_items], observed bool [n_items])``: the IPS estimate
    ``Σ_k c_dk / Σ_k n_dk θ_k`` (module docstring); items never shown get 0 and
    ``observed = False``. Propensities below ``min_propensity`` are clipped up to it
    (propensity clipping: a small log can estimate ``θ̂_k = 0`` for a deep position, which
    would make its clicks weigh infinitely)."""
    n, c = _counts(shown, clicks)
    floor = real("min_propensity", min_propensity, low=0.0, high=1.0, low_open=True)
    theta = np.maximum(vector("propensity", propensity, n.shape[1], low=0.0, per="position"), floor)
    weighted = n @ theta
    observed = n.sum(axis=1) > 0
    out = np.zeros(n.shape[0])
    out[observed] = c.sum(axis=1)[observed] / weighted[observed]
    return out, observed
