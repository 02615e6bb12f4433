"""The stages both regimes run on their training data before they correct it: β̂ and the
assumption check of the estimator (:mod:`groupbias.estimate.diagnostics`) as records."""

from __future__ import annotations

import numpy as np

from ..data.ranking_data import RankingData
from ..estimate.diagnostics import Diagnostics
from ..estimate.estimators import Estimator
from ..estimate.ks import BetaEstimate
from ..simulate.bias import GroupBias

__all__ = ["DEFAULT_DIAGNOSTICS", "diagnose"]

#: the assumption check a run makes unless told otherwise (null tolerance 0.05)
DEFAULT_DIAGNOSTICS = Diagnostics()


def diagnose(
    data: RankingData,
    est: BetaEstimate,
    *,
    bias: GroupBias,
    estimator: Estimator,
    diagnostics: Diagnostics,
    rng: np.random.Generator,
    base: dict,
    label_max: float | None = None,
) -> list[dict]:
    """The assumption check of ``estimator`` on this data under ``bias`` (null check at
    β = 1, utility ratio, relevance KS) as records; warns when it fails. ``label_max``: the
    label scale (default the data's)."""
    where = f"{base.get('dataset', data.name)} (β = {base.get('beta')})"
    check = diagnostics.check(
        data,
        bias=bias,
        estimator=estimator,
        rng=rng,
        estimate=est,
        grade_spacing=data.grade_spacing,
        label_max=label_max,
        where=where,
    )
    return check.records(base)
