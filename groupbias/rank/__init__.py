"""Rankings of the queries' items: what every exposure-based metric consumes.

:class:`Ranking` is the protocol (rank weights per item); :class:`DeterministicRanking`
sorts a score vector within every query, :class:`PlackettLuce` is a stochastic policy judged
by its expected exposure (its Monte-Carlo engine: :mod:`groupbias._fast.plackett_luce`).
"""

from .plackett_luce import DEVICES, EXACT_MAX, ExpectedExposure, PlackettLuce
from .ranking import DeterministicRanking, Exposure, Ranking, as_ranking

__all__ = [
    "DEVICES",
    "EXACT_MAX",
    "DeterministicRanking",
    "ExpectedExposure",
    "Exposure",
    "PlackettLuce",
    "Ranking",
    "as_ranking",
]
