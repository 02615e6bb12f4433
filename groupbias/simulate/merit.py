"""Datasets whose groups differ in merit by a chosen amount (the robustness experiments).

:func:`at_utility_ratio` removes affected items at random until the affected group's mean
relevance is ``ratio`` times the non-affected group's: relevant affected items (relevance
``> 0``) to lower the ratio, non-relevant ones to raise it. With ``S_A``, ``n_A`` the affected
group's relevance sum and size, ``mu_N`` the non-affected mean, ``t = ratio * mu_N`` and
``s`` the mean relevance of the candidates, removing

    d = (S_A - t n_A) / (s - t)     candidates  (lowering, relevant items), or
    d = n_A - S_A / t               candidates  (raising, non-relevant items)

reaches the target in expectation (rounded to whole items; the achieved ratio is returned).
Queries left without items are dropped.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..core.errors import ParameterError
from ..core.validation import generator, real
from ..data.membership import affected_group, utility_ratio
from ..data.ranking_data import RankingData
from .group_bias import relevance_from_labels

__all__ = ["at_utility_ratio"]


def at_utility_ratio(
    data: RankingData, ratio: float, *, rng: np.random.Generator, label_max: float | None = None
) -> tuple[RankingData, float]:
    """``(data with affected items removed, achieved ratio)`` (see the module docstring).

    ``label_max``: the relevance scale ``label / label_max`` (default the data's)."""
    t_ratio = real("ratio", ratio, low=0.0, low_open=True)
    generator(rng)
    if data.groups is None:
        raise ParameterError("data.groups", "a grouped dataset", None, "apply a grouping first")
    rel = relevance_from_labels(data.labels, label_max=label_max or data.label_max)
    aff = affected_group(data.groups)
    if not aff.any() or aff.all():
        raise ParameterError("data.groups", "both groups present", "one group only")
    now = utility_ratio(rel, aff)
    s_a, n_a = float(rel[aff].sum()), int(aff.sum())
    t = t_ratio * float(rel[~aff].mean())
    lower = t_ratio < now
    cand = np.flatnonzero(aff & ((rel > 0) if lower else (rel == 0)))
    if lower:
        s = float(rel[cand].mean())
        d = (s_a - t * n_a) / (s - t) if s > t else cand.size + 1.0
    else:
        d = n_a - s_a / t
    d = int(round(d))
    if d > cand.size or (lower and d >= n_a):
        raise ParameterError(
            "ratio",
            f"a utility ratio reachable by removing affected items (now {now:.3f})",
            ratio,
            fix="choose a ratio nearer the data's own",
        )
    keep = np.ones(data.n_items, dtype=bool)
    keep[rng.permutation(cand)[: max(d, 0)]] = False
    out = data.keep_items(keep)
    out = replace(out, meta={**data.meta, "utility_ratio_target": t_ratio})
    return out, utility_ratio(rel[keep], aff[keep])
