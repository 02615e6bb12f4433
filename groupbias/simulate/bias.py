"""The group-bias model of a run (the ``bias`` config group): how attractiveness is simulated.

:class:`GroupBias` holds the settings of :func:`~groupbias.simulate.group_bias.simulate_group_bias`
stay fixed across an experiment (the noise around β, its lower bound, the variant, how labels
become relevance) and the list of β values the experiment sweeps; ``simulate(data, beta=...,
rng=...)`` draws one biased data set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..core.errors import ParameterError
from ..core.validation import choice, real, sequence
from ..data.ranking_data import RankingData
from .group_bias import OUT_OF_RANGE, Simulation, simulate_group_bias

__all__ = ["GroupBias", "BIAS_VARIANTS", "RELEVANCE"]

BIAS_VARIANTS = ("normal", "two_mode")
RELEVANCE = ("auto", "graded", "continuous")


def _beta(name: str, value) -> float:
    return real(name, value, low=0.0, high=1.0, low_open=True, what="betas in (0, 1]")


def _betas(name: str, values) -> tuple[float, ...]:
    return sequence(
        name, values, _beta, what="a non-empty list of betas in (0, 1], e.g. [0.8, 0.6]"
    )


@dataclass(frozen=True)
class GroupBias:
    """Group-biased attractiveness ``a = β_q P(R)`` for the affected group (paper Eq. 2).

    Attributes
    ----------
    betas : the β values an experiment sweeps (each in (0, 1]; 1 = no bias)
    variant : ``"normal"`` (β_q ~ N(β, beta_std) per query) or ``"two_mode"`` (half the
        queries around each of ``modes``, §6.4.2; β is then only a label)
    beta_std : the per-query noise σ_β (>= 0)
    beta_min : lower bound of β_q (draws below are clipped or redrawn, ``out_of_range``)
    modes : the two-mode means (``variant="two_mode"`` only)
    relevance : how labels become P(R): ``"auto"``/``"graded"`` (label / label_max) or
        ``"continuous"`` (labels are already in [0, 1])
    out_of_range : ``"clip"`` or ``"resample"`` (see
        :func:`groupbias.simulate.group_bias.draw_query_beta`)
    """

    betas: Sequence[float] = (0.8, 0.6)
    variant: str = "normal"
    beta_std: float = 0.1
    beta_min: float = 0.01
    modes: Sequence[float] | None = None
    relevance: str = "auto"
    out_of_range: str = "clip"

    def __post_init__(self) -> None:
        object.__setattr__(self, "betas", _betas("betas", self.betas))
        choice("variant", self.variant, BIAS_VARIANTS)
        real("beta_std", self.beta_std, low=0.0, what="a standard deviation >= 0")
        real("beta_min", self.beta_min, low=0.0, high=1.0, low_open=True)
        if self.modes is not None:
            object.__setattr__(self, "modes", _betas("modes", self.modes))
        if self.variant == "two_mode" and not self.modes:
            raise ParameterError(
                "modes", "the propensity means of variant two_mode, e.g. [0.6, 0.8]", self.modes
            )
        if self.variant == "normal" and self.modes is not None:
            raise ParameterError(
                "modes",
                "null with variant normal (modes are used by variant two_mode only)",
                list(self.modes),
            )
        choice("relevance", self.relevance, RELEVANCE)
        choice("out_of_range", self.out_of_range, OUT_OF_RANGE)

    def simulate(
        self,
        data: RankingData,
        *,
        beta: float,
        rng: np.random.Generator,
        label_max: float | None = None,
        beta_std: float | None = None,
    ) -> Simulation:
        """One biased data set for ``data`` (grouped) at ``beta``.

        ``label_max``: top of the label scale (default the data's); ``beta_std``: override
        the noise (e.g. 0 for the β = 1 reference of the impact figures).
        """
        if data.groups is None:
            raise ParameterError(
                "data.groups",
                "a grouped dataset (1 = affected, 0 = not)",
                None,
                "apply a grouping first",
            )
        two_mode = self.variant == "two_mode"
        return simulate_group_bias(
            data,
            beta_mean=None if two_mode else real("beta", beta, low=0.0, high=1.0, low_open=True),
            variant=self.variant,
            modes=tuple(self.modes or ()) if two_mode else (0.6, 0.8),
            beta_std=self.beta_std if beta_std is None else beta_std,
            beta_min=self.beta_min,
            relevance_mode="graded" if self.relevance == "auto" else self.relevance,
            label_max=label_max,
            out_of_range=self.out_of_range,
            rng=rng,
        )

    def simulate_null(
        self, data: RankingData, *, rng: np.random.Generator, label_max: float | None = None
    ) -> Simulation:
        """Attractiveness without bias but with this model's per-query noise: β = 1, variant
        ``normal``, ``beta_std`` of this model (clipped draws keep some ``β_q`` below 1). The
        data of the estimator's null check
        (:meth:`groupbias.estimate.diagnostics.Diagnostics.check`)."""
        null = replace(self, variant="normal", modes=None)
        return null.simulate(data, beta=1.0, rng=rng, label_max=label_max)
