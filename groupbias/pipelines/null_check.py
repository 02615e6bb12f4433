"""The null check both regimes run on their training data before they correct it, in order:
the null simulation of the assumption check (simulate stage, beside the run's own
simulation), then, after β̂ (:func:`groupbias.estimate.estimators.estimate_simulated`), the
assumption check of the estimator (:mod:`groupbias.estimate.diagnostics`) on it (estimate
stage).

Random streams (:func:`stage_generators`): the run's generator draws the run's own
simulation and then β̂, nothing else; every other stage that draws (the null simulation and
its estimate, the validation split's simulation) gets its own child generator, spawned
before any stage draws. So no setting of one stage shifts what another draws: the biased
condition of a run is the same whichever estimator ran (the estimator draws its labeled
sample, jitter and bootstrap after everything the biased labels are made of)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data.ranking_data import RankingData
from ..estimate.beta_estimate import BetaEstimate
from ..estimate.diagnostics import Diagnostics
from ..estimate.estimators import Estimator
from ..simulate.group_bias import GroupBias, Simulation

__all__ = [
    "DEFAULT_DIAGNOSTICS",
    "NullSimulation",
    "StageGenerators",
    "stage_generators",
    "simulate_null",
    "check_assumption",
]

#: the assumption check a run makes unless told otherwise (null tolerance 0.05)
DEFAULT_DIAGNOSTICS = Diagnostics()


@dataclass(frozen=True, eq=False)
class StageGenerators:
    """The children of a run's generator (module docstring): ``null`` draws the null
    simulation of the assumption check and its estimate, ``validation`` the validation
    split's simulation."""

    null: np.random.Generator
    validation: np.random.Generator


def stage_generators(rng: np.random.Generator) -> StageGenerators:
    """The stages' own generators, spawned from ``rng`` in a fixed order (spawning leaves
    ``rng``'s own stream unchanged)."""
    null, validation = rng.spawn(2)
    return StageGenerators(null=null, validation=validation)


@dataclass(frozen=True, eq=False)
class NullSimulation:
    """The data of the assumption check: ``simulation`` without bias (β = 1, the run's
    per-query noise) and ``rng``, the generator that drew it and then draws the check's
    estimate."""

    simulation: Simulation
    rng: np.random.Generator


def simulate_null(
    data: RankingData,
    *,
    bias: GroupBias,
    rng: np.random.Generator,
    diagnostics: Diagnostics | None,
    label_max: float | None = None,
) -> NullSimulation | None:
    """The null simulation of ``diagnostics``' check on ``data`` (None without diagnostics),
    drawn from ``rng``, the check's own generator (:attr:`StageGenerators.null`, so a run
    draws the same with and without the check). ``label_max``: the label scale (default the
    data's)."""
    if diagnostics is None:
        return None
    return NullSimulation(bias.simulate_null(data, rng=rng, label_max=label_max), rng)


def check_assumption(
    data: RankingData,
    est: BetaEstimate,
    null: NullSimulation | None,
    *,
    estimator: Estimator,
    diagnostics: Diagnostics | None,
    base: dict,
) -> list[dict]:
    """The assumption check of ``estimator`` on ``data`` (null check on ``null``, utility
    ratio, relevance KS; :meth:`Diagnostics.check`) as records with the ``base`` fields;
    warns when it fails. No records without diagnostics."""
    if diagnostics is None or null is None:
        return []
    where = f"{base.get('dataset', data.name)} (β = {base.get('beta')})"
    check = diagnostics.check(
        data, null.simulation, estimator=estimator, rng=null.rng, estimate=est, where=where
    )
    return check.records(base)
