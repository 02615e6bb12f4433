"""A few rankings per query, judged by their mean exposure: the output of a learner that
returns rankings rather than a policy (:class:`~groupbias.evaluation.ppg.PPGLearner`, the
released code's permutation graph, which scores the best set of ``sessions`` rankings it
sampled)."""

from __future__ import annotations

import numpy as np

from ..core.errors import ParameterError
from ..core.validation import check_qptr, choice
from .ranking import TIES, Exposure, Ranking, rank_weights

__all__ = ["SampledRankings"]


class SampledRankings(Ranking):
    """``sessions`` rankings of every query of ``qptr``: ``order[s, i]`` is the rank (1 = top)
    of item ``i`` in ranking ``s`` (int [sessions, n_items], a permutation of ``1..n`` within
    every query). Every metric sees the mean over the rankings of each item's rank weight,
    which is the mean of the metric for metrics linear in the weights (DCG, group
    exposures)."""

    def __init__(self, ranks: np.ndarray, qptr) -> None:
        r = np.asarray(ranks)
        if r.ndim != 2 or r.dtype.kind not in "iu":
            raise ParameterError("ranks", "an int array [sessions, n_items]", r.shape)
        self.qptr = check_qptr(qptr, r.shape[1])
        sizes = np.repeat(np.diff(self.qptr), np.diff(self.qptr))
        if r.size and (r.min() < 1 or (r > sizes[None, :]).any()):
            raise ParameterError("ranks", "ranks 1..n within every query of n items", "others")
        self.ranks = r.astype(np.int64)

    @property
    def sessions(self) -> int:
        return self.ranks.shape[0]

    def weights(
        self,
        k: int | None = None,
        ties: str = "average",
        table: np.ndarray | None = None,
        offset: int = 1,
    ) -> Exposure:
        """The mean rank weight of every item over the rankings (``ties`` has no effect:
        the rankings hold no ties)."""
        choice("ties", ties, TIES)
        longest = int(np.diff(self.qptr).max(initial=0))
        w = rank_weights(longest, k, offset, table)
        dense = w[self.ranks - 1].mean(axis=0) if self.ranks.size else np.zeros(0)
        return Exposure(self.qptr, dense=dense)
