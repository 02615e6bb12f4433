"""Plackett–Luce ranking policies over the flat layout (logits + query offsets ``qptr``).

A Plackett–Luce (PL) policy ranks the items of a query by drawing them one at a time
without replacement, item ``i`` with probability proportional to ``exp(s_i)`` among those
left::

    P(π) = Π_{r=1}^{n} exp(s_{π(r)}) / Σ_{j ≥ r} exp(s_{π(j)})

Equivalently (Gumbel-max), a sample is the ranking by ``s_i + G_i`` with ``G_i`` i.i.d.
standard Gumbel. The evaluation protocol of stochastic rankings (Diaz et al. 2020; the
paper's §4.2) judges a policy by the **expected exposure** of every item,
``ε_i = E_π[e(rank_i)]`` with ``e(r) = 1 / log2(offset + r)`` (0 beyond a cutoff ``k``).

:class:`PlackettLuce` computes it

* **exactly** for every query with at most ``exact_max`` items (default 6), by enumerating
  the ``n!`` rankings (720 for 6 items) of all queries of one length at once;
* by **Monte Carlo** for the longer queries: ``samples`` rankings per query drawn for all
  queries at once (queries of similar length padded together). The per-item standard
  error is ``sd / sqrt(samples)`` and comes back with the mean (:class:`ExpectedExposure`).

The Monte-Carlo draws (an exponential race; numpy, numba or torch, CPU or GPU) are the
engine of :mod:`groupbias._fast.plackett_luce`.

A policy implements the :class:`~groupbias.rank.ranking.Ranking` protocol: its rank weights
are the expected exposures, so every metric of exposure accepts a policy:
``ndcg(policy, labels, qptr=qptr, k=10)`` is the expected NDCG@10 (DCG is linear in the
exposures), ``rho_dtr_ranking(policy, ...)`` and ``delta_eel_ranking(policy, ...)`` use the
expected group exposure. Metrics that weigh rank positions themselves (RaB, ARaB,
``ties="pessimistic"``, a top-N cut) need a deterministic ranking and refuse a policy.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .._fast.plackett_luce import (
    DEVICES,
    NUMPY_STEP,
    TORCH_STEP,
    monte_carlo_exposure,
    resolve_device,
    sample_ranks,
)
from ..core.errors import ParameterError
from ..core.segments import segment_max
from ..core.validation import check_k, check_qptr, choice, integer, vector
from .ranking import TIES, Exposure, Ranking, rank_weights

__all__ = [
    "PlackettLuce",
    "ExpectedExposure",
    "EXACT_MAX",
    "all_rankings",
    "ranking_log_probs",
]

#: longest list whose expected exposure is enumerated exactly by default (6! = 720 rankings)
EXACT_MAX = 6
#: the most rankings enumerated for one list (8! = 40320)
_ENUMERATE_LIMIT = 8


@dataclass(frozen=True)
class ExpectedExposure:
    """Expected exposure of every item (float64 [n_items]), its Monte-Carlo standard error
    (0 where exact), which items were computed exactly (bool [n_items]) and the number of
    sampled rankings per query of the other items."""

    mean: np.ndarray
    stderr: np.ndarray
    exact: np.ndarray
    samples: int


def all_rankings(n: int) -> tuple[np.ndarray, np.ndarray]:
    """All rankings of ``n`` items (item in each slot, int [n!, n]) and the 0-based slot of
    every item in each (int [n!, n])."""
    perms = np.array(list(itertools.permutations(range(n))), dtype=np.int64).reshape(-1, n)
    slots = np.empty_like(perms)
    np.put_along_axis(slots, perms, np.broadcast_to(np.arange(n), perms.shape), axis=1)
    return perms, slots


def ranking_log_probs(logits: np.ndarray, perms: np.ndarray) -> np.ndarray:
    """``log P(π)`` of the rankings ``perms`` [P, n] (item in each slot) under the PL
    policies of the rows of ``logits`` [m, n]: float64 [m, P]."""
    lw = logits[:, perms]  # [m, P, n], logit of the item in each slot
    den = np.logaddexp.accumulate(lw[..., ::-1], axis=2)[..., ::-1]
    return (lw - den).sum(axis=2)


def _exact(logits: np.ndarray, qptr: np.ndarray, table: np.ndarray, n: int, rows) -> np.ndarray:
    """Exact expected exposure [m, n] of the queries ``rows`` (all of length ``n``)."""
    perms, slots = all_rankings(n)
    items = qptr[rows][:, None] + np.arange(n)
    p = np.exp(ranking_log_probs(logits[items], perms))  # [m, n!]
    return p @ table[:n][slots]  # [m, n]


#: the widest range of one query's logits: beyond it float64 cannot tell ``s + log 2`` from
#: ``s`` at the far end, and the probabilities of tied items stop summing to 1 (at a spread of
#: 1e13 exposures are off by several units; at 1e9 log-probabilities by at most 2e-7)
MAX_LOGIT_SPREAD = 1e9


def _check_spread(name: str, logits: np.ndarray, qptr: np.ndarray) -> None:
    """Refuse logits whose range within a query passes :data:`MAX_LOGIT_SPREAD`."""
    if logits.size == 0:
        return
    hi = segment_max(logits, qptr, empty=0.0)
    lo = -segment_max(-logits, qptr, empty=0.0)
    spread = float(np.max(hi - lo))
    if spread > MAX_LOGIT_SPREAD:
        raise ParameterError(
            name,
            f"logits that span at most {MAX_LOGIT_SPREAD:g} within a query (beyond it the "
            "policy's probabilities lose float64 precision)",
            f"a span of {spread:.3g}",
            fix="the policy is deterministic at this scale: evaluate the ranking itself "
            "(evaluation=deterministic), or raise the temperature",
        )


class PlackettLuce(Ranking):
    """The PL policies ``P(π) ∝ Π exp(logit)`` of every query (see the module docstring): a
    :class:`~groupbias.rank.ranking.Ranking` whose rank weights are expected exposures.

    ``logits`` float [n_items] (finite), ``qptr`` int [n_queries + 1]; ``samples``: rankings
    drawn per query for lists longer than ``exact_max`` (1 or more); ``exact_max``: longest
    list enumerated exactly (0..8); ``seed``: the Monte-Carlo draws (every exposure of one
    policy uses the same draws, so metrics of one policy share them); ``batch_items``: the
    sampled values of one step (memory ≈ 16 bytes each per thread; default ``2^17`` on the
    CPU, ``2^24`` with torch); ``workers``: parallel workers of the numpy path (default: the cores
    this process may use; the exposures do not depend on it); ``device``: one of
    :data:`~groupbias._fast.plackett_luce.DEVICES`.
    """

    def __init__(
        self,
        logits,
        qptr,
        *,
        samples: int = 1000,
        exact_max: int = EXACT_MAX,
        seed: int = 0,
        batch_items: int | None = None,
        workers: int | None = None,
        device: str = "cpu",
        name: str = "logits",
    ) -> None:
        self.logits = vector(name, logits, fix="drop or impute them before computing metrics")
        self.qptr = check_qptr(qptr, self.logits.size)
        _check_spread(name, self.logits, self.qptr)
        self.samples = integer("samples", samples, low=1)
        self.exact_max = integer("exact_max", exact_max, low=0, high=_ENUMERATE_LIMIT)
        self.seed = integer("seed", seed, low=0)
        self.workers = None if workers is None else integer("workers", workers, low=1)
        self.device = resolve_device(choice("device", device, DEVICES))
        if batch_items is None:
            batch_items = NUMPY_STEP if self.device == "cpu" else TORCH_STEP
        self.batch_items = integer("batch_items", batch_items, low=1)
        self._expected: dict[tuple, ExpectedExposure] = {}

    # ------------------------------------------------------------------ sampling

    def sample(self, n_samples: int, *, rng: np.random.Generator) -> np.ndarray:
        """``n_samples`` rankings of every query: the 1-based rank of every item in each,
        int32 [n_samples, n_items] (at most 10^8 values). Drawn on the CPU from ``rng``."""
        n_samples = integer("n_samples", n_samples, low=1)
        if n_samples * self.n_items > 100_000_000:
            raise ParameterError(
                "n_samples",
                f"at most {100_000_000 // max(1, self.n_items)} samples of {self.n_items} items",
                n_samples,
                fix="use expected_exposure, which streams the samples",
            )
        draw = rng.bit_generator.random_raw
        return sample_ranks(self.logits, self.qptr, n_samples, draw, self.batch_items)

    # ------------------------------------------------------------------ exposure

    def expected_exposure(
        self, k: int | None = None, *, offset: int = 1, table: np.ndarray | None = None
    ) -> ExpectedExposure:
        """Expected exposure ``E[e(rank_i)]`` of every item, ``e(r) = 1/log2(offset + r)``
        (or ``table[r - 1]``) and 0 beyond ``k``; exact for lists of at most ``exact_max``
        items, Monte Carlo (``samples`` draws) beyond. Cached per ``(k, offset)``."""
        k = check_k(k)
        offset = integer("offset", offset, low=1)
        key = (k, offset) if table is None else None
        if key is not None and key in self._expected:
            return self._expected[key]
        max_len = int(np.max(np.diff(self.qptr))) if self.n_queries else 0
        t = rank_weights(max_len, k, offset, None if table is None else vector("table", table))
        mean = np.zeros(self.n_items)
        stderr = np.zeros(self.n_items)
        exact = np.zeros(self.n_items, dtype=bool)
        sizes = np.diff(self.qptr)
        for n in range(1, min(self.exact_max, max_len) + 1):
            rows = np.flatnonzero(sizes == n)
            if rows.size:
                items = (self.qptr[rows][:, None] + np.arange(n)).ravel()
                mean[items] = _exact(self.logits, self.qptr, t, n, rows).ravel()
                exact[items] = True
        monte_carlo_exposure(
            self.logits,
            self.qptr,
            t,
            (mean, stderr),
            exact_max=self.exact_max,
            samples=self.samples,
            seed=self.seed,
            device=self.device,
            workers=self.workers,
            batch_items=self.batch_items,
        )
        out = ExpectedExposure(mean, stderr, exact, self.samples)
        if key is not None:
            self._expected[key] = out
        return out

    def weights(
        self,
        k: int | None = None,
        ties: str = "average",
        table: np.ndarray | None = None,
        offset: int = 1,
    ) -> Exposure:
        """The expected exposures as rank weights. ``ties`` ("average" or "stable") has no
        effect: a PL policy puts no probability on any particular order of equal logits."""
        choice("ties", ties, TIES)
        mean = self.expected_exposure(k, offset=offset, table=table).mean
        return Exposure(self.qptr, dense=mean)
