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
* by **Monte Carlo** for the longer queries: ``samples`` rankings per query drawn by
  Gumbel-max for all queries at once (queries of similar length padded into blocks, in
  memory-bounded batches of ``batch_items`` values). The per-item standard error is
  ``sd / sqrt(samples)`` and comes back with the mean (:class:`ExpectedExposure`).

The sampled keys are float32 with the item's column packed into the lowest mantissa bits
(one SIMD sort of the keys, no argsort): two perturbed scores closer than about ``2^-16``
of their magnitude (``2^-(23 - bits)``, ``bits = ceil(log2(width))``) are ordered by column
instead of by value — a bias far below the Monte-Carlo error. Lists over 1024 items use a
float64 argsort instead.

A policy is a :class:`groupbias.ranking.Ranking` of its logits whose rank weights are the
expected exposures, so every metric that accepts a ranking accepts a policy:
``ndcg_per_query(policy, labels, qptr=qptr, k=10)`` is the expected NDCG@10 (DCG is linear
in the exposures), ``rho_dtr_ranking_per_query(policy, ...)`` and
``delta_eel_ranking_per_query(policy, ...)`` use the expected group exposure. Metrics that
need one deterministic ranking (rank positions, ``ties="pessimistic"``) refuse a policy.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .errors import ParameterError
from .ranking import Exposure, Ranking, rank_weights
from .segments import segment_sum
from .validation import check_k, integer, vector

__all__ = ["PlackettLuce", "ExpectedExposure", "EXACT_MAX", "all_rankings", "ranking_log_probs"]

#: longest list whose expected exposure is enumerated exactly by default (6! = 720 rankings)
EXACT_MAX = 6
#: the most rankings enumerated for one list (8! = 40320)
_ENUMERATE_LIMIT = 8
#: widest padded block sampled with packed float32 keys
_PACKED_WIDTH = 1024
#: smallest uniform draw (keeps -log(-log u) finite)
_TINY = np.float32(2.0**-25)
#: exponential race (one logarithm per draw) when every logit of a block is at most this
#: far below its row's maximum (exp(60) stays far inside float32)
_RACE_SPREAD = 60.0
#: 1 / p of padding slots in the race (they come last)
_RACE_PAD = 1e36


@dataclass(frozen=True)
class ExpectedExposure:
    """Expected exposure of every item (float64 [n_items]), its Monte-Carlo standard error
    (0 where exact), which items were computed exactly (bool [n_items]) and the number of
    sampled rankings per query of the other items."""

    mean: np.ndarray
    stderr: np.ndarray
    exact: np.ndarray
    samples: int


class _PolicyExposure(Exposure):
    """Rank weights given per item (the expected exposures of a policy)."""

    def __init__(self, dense: np.ndarray, qptr: np.ndarray) -> None:
        super().__init__([], qptr)
        self._dense = dense

    def sums(self, *values: np.ndarray, combine=None) -> np.ndarray:
        x = values[0] if combine is None else combine(*values)
        return segment_sum(x * self.dense(), self.qptr)


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


class PlackettLuce(Ranking):
    """The PL policies ``P(π) ∝ Π exp(logit)`` of every query (see the module docstring).

    ``logits`` float [n_items] (finite), ``qptr`` int [n_queries + 1]; ``samples``: rankings
    drawn per query for lists longer than ``exact_max`` (1 or more); ``exact_max``: longest
    list enumerated exactly (0..8); ``seed``: the Monte-Carlo draws (every exposure of one
    policy uses the same draws, so metrics of one policy share them); ``batch_items``: the
    most sampled values held at once (memory ≈ 12 bytes each).
    """

    def __init__(
        self,
        logits,
        qptr,
        *,
        samples: int = 1000,
        exact_max: int = EXACT_MAX,
        seed: int = 0,
        batch_items: int = 4_000_000,
        name: str = "logits",
    ) -> None:
        super().__init__(logits, qptr, name=name)
        self.samples = integer("samples", samples, low=1)
        self.exact_max = integer("exact_max", exact_max, low=0, high=_ENUMERATE_LIMIT)
        self.seed = integer("seed", seed, low=0)
        self.batch_items = integer("batch_items", batch_items, low=1)
        self._expected: dict[tuple, ExpectedExposure] = {}

    @property
    def logits(self) -> np.ndarray:
        return self.scores

    # ------------------------------------------------------------------ sampling

    def _blocks_to_sample(self):
        for b in self.blocks():
            keep = b.sizes > self.exact_max
            if keep.all():
                yield b
            elif keep.any():
                yield b.subset(keep)

    def _draws(self, block, n_samples: int, rng: np.random.Generator):
        """Sampled rankings of the queries of ``block``: yields ``(sl, s0, cols)`` with
        ``cols[s, r, j]`` the column of the item in ascending slot ``j`` (rank
        ``width - j``) of sample ``s0 + s`` of row ``sl.start + r`` of the block."""
        w = block.width
        base = block.padded(self.scores, np.nan).astype(np.float64)
        valid = block.valid
        top = np.nanmax(base, axis=1, keepdims=True)
        low = np.nanmin(base, axis=1, keepdims=True)
        centered = np.where(valid, base - top, low - top - 100.0)
        race = None
        if np.all(low - top >= -_RACE_SPREAD):  # exponential race: keys log(u) / p
            race = np.where(valid, np.exp(-centered), _RACE_PAD).astype(np.float32)
        rows_per = max(1, self.batch_items // w)
        for r0 in range(0, centered.shape[0], rows_per):
            sl = slice(r0, r0 + rows_per)
            part = centered[sl] if race is None else race[sl]
            per = max(1, self.batch_items // part.size)
            for s0 in range(0, n_samples, per):
                s_b = min(per, n_samples - s0)
                cols = _sample_slots(part, s_b, rng, race=race is not None)
                yield slice(r0, r0 + part.shape[0]), s0, cols

    def sample(self, n_samples: int, *, rng: np.random.Generator) -> np.ndarray:
        """``n_samples`` rankings of every query: the 1-based rank of every item in each,
        int32 [n_samples, n_items] (at most 10^8 values)."""
        n_samples = integer("n_samples", n_samples, low=1)
        if n_samples * self.n_items > 100_000_000:
            raise ParameterError(
                "n_samples",
                f"at most {100_000_000 // max(1, self.n_items)} samples of {self.n_items} items",
                n_samples,
                fix="use expected_exposure, which streams the samples",
            )
        out = np.empty((n_samples, self.n_items), dtype=np.int32)
        for b in self.blocks():
            w = b.width
            index = b.index()
            for sl, s0, cols in self._draws(b, n_samples, rng):
                ranks = np.empty_like(cols)
                np.put_along_axis(
                    ranks, cols, np.broadcast_to(w - np.arange(w, dtype=np.int32), cols.shape), 2
                )
                valid = b.valid[sl]
                out[s0 : s0 + cols.shape[0], index[sl][valid]] = ranks[:, valid]
        return out

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
                mean[items] = _exact(self.scores, self.qptr, t, n, rows).ravel()
                exact[items] = True
        self._monte_carlo(t, mean, stderr)
        out = ExpectedExposure(mean, stderr, exact, self.samples)
        if key is not None:
            self._expected[key] = out
        return out

    def _monte_carlo(self, table: np.ndarray, mean: np.ndarray, stderr: np.ndarray) -> None:
        rng = np.random.default_rng(self.seed)
        s_total = self.samples
        for b in self._blocks_to_sample():
            w = b.width
            tab = table[:w][::-1].astype(np.float32)  # weight of ascending slot j: rank w - j
            acc = np.zeros((b.rows.size, w))
            acc2 = np.zeros((b.rows.size, w))
            tiled: dict[tuple, tuple] = {}  # per batch shape: row offsets, tiled weights
            for sl, _, cols in self._draws(b, s_total, rng):
                # scatter the slot weights to the items: one flat assignment
                if cols.shape not in tiled:
                    s_b, m = cols.shape[:2]
                    offsets = (np.arange(s_b * m, dtype=np.int64) * w).reshape(s_b, m, 1)
                    tiled = {cols.shape: (offsets, np.tile(tab, s_b * m))}
                offsets, weights = tiled[cols.shape]
                ex = np.empty(cols.shape, dtype=np.float32)
                ex.ravel()[(cols + offsets).ravel()] = weights
                acc[sl] += ex.sum(axis=0, dtype=np.float64)
                np.square(ex, out=ex)
                acc2[sl] += ex.sum(axis=0, dtype=np.float64)
            m = acc / s_total
            var = np.maximum(acc2 / s_total - m * m, 0.0)
            se = np.sqrt(var / max(s_total - 1, 1))
            valid = b.valid
            idx = b.index()[valid]
            mean[idx] = m[valid]
            stderr[idx] = se[valid]

    def weights(
        self,
        k: int | None = None,
        ties: str = "average",
        table: np.ndarray | None = None,
        offset: int = 1,
    ) -> Exposure:
        """The expected exposures as rank weights (``ties`` has no effect: a PL policy
        puts no probability on any particular order of equal logits)."""
        return _PolicyExposure(
            self.expected_exposure(k, offset=offset, table=table).mean, self.qptr
        )

    def slot_weights(self, fn, ties: str = "average", k: int | None = None) -> Exposure:
        raise ParameterError(
            "scores",
            "a deterministic ranking (this metric weighs rank positions, not exposure)",
            "a PlackettLuce policy",
            fix="evaluate it on the policy's logits, or use ndcg, rho_dtr or delta_eel",
        )

    def ranks(self) -> np.ndarray:
        raise ParameterError(
            "scores",
            "a deterministic ranking (a policy has no single rank per item)",
            "a PlackettLuce policy",
        )


def _sample_slots(
    values: np.ndarray, n_samples: int, rng: np.random.Generator, *, race: bool
) -> np.ndarray:
    """PL rankings of the rows of ``values`` [m, w]: the column of the item in every
    ascending slot, int [n_samples, m, w] (slot ``j`` has rank ``w - j``).

    ``race=False``: ``values`` are the logits minus the row maximum (padding far below),
    keys ``logit + G`` (Gumbel-max, two logarithms per draw). ``race=True``: ``values``
    are ``exp(-(logit - max))`` (padding huge), keys ``log(u) · values = -E / p`` with
    ``E = -log u`` exponential — the item with the smallest ``E / p`` comes first, which
    is the same PL law (exponential race) with one logarithm per draw."""
    m, w = values.shape
    if w > _PACKED_WIDTH:
        if race:
            z = np.log(rng.random((n_samples, m, w)) + 2.0**-60) * values[None]
        else:
            z = values[None] + rng.gumbel(size=(n_samples, m, w))
        return np.argsort(z, axis=2, kind="stable")
    bits = max(1, int(np.ceil(np.log2(w))))
    low = np.int32((1 << bits) - 1)
    u = rng.random((n_samples, m, w), dtype=np.float32)
    np.maximum(u, _TINY, out=u)
    np.log(u, out=u)
    if race:
        np.multiply(u, values, out=u)  # -E / p
    else:
        np.negative(u, out=u)
        np.log(u, out=u)  # log(-log u) = -G
        np.subtract(values.astype(np.float32), u, out=u)  # logit + G
    keys = u.view(np.int32)
    keys &= ~low
    keys |= np.arange(w, dtype=np.int32)
    u.sort(axis=2)
    keys &= low
    return keys
