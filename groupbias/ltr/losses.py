"""LambdaLoss family (Wang et al. 2018, "The LambdaLoss Framework for Ranking Metric
Optimization") on padded lists with an explicit boolean mask, and a padded NDCG@k.

Notation for one list with real items ``i`` (mask True), scores ``s_i``, labels ``y_i >= 0``:

- ``pi_i``: 1-based rank of item ``i`` when the real items are sorted by descending score
  (ties: earlier slot first);
- discount ``D(r) = log2(1 + r)``; with a cutoff ``k``, ``d(r) = 1/D(r)`` for ``r <= k`` and
  0 beyond (no cutoff: ``d = 1/D``);
- gain ``g(y) = 2^y - 1`` (``gain="exp2"``, as in allRank and the paper's model) or
  ``g(y) = y`` (``gain="linear"``);
- ``maxDCG = sum_{r <= min(n, k)} g(y_(r)) / D(r)`` over the labels sorted descending, and
  ``G_i = g(y_i) / maxDCG``.

The loss of one list is ``sum_{(i, j) in P} w_ij * log2(1 + exp(-sigma (s_i - s_j)))`` over
the pairs ``P = {(i, j): both real, y_i > y_j, min(pi_i, pi_j) <= k}`` (pairs with equal labels
or with a padded item contribute nothing), with weighting schemes

- ``"lambdaRank"``: ``w_ij = |G_i - G_j| * |d(pi_i) - d(pi_j)|`` (the |Delta NDCG@k| of
  swapping ``i`` and ``j``);
- ``"ndcgLoss2"``: ``w_ij = delta_|pi_i - pi_j| * |G_i - G_j|`` with
  ``delta_t = 1/D(t) - 1/D(t + 1)``;
- ``"ndcgLoss2PP"`` (NDCG-Loss2++): ``mu * ndcgLoss2 + lambdaRank``;
- ``"rankNet"``: ``w_ij = 1``.

allRank's names (``"lambdaRank_scheme"``, ``"ndcgLoss2PP_scheme"``, ...) are accepted too.
The weights are functions of labels and ranks and carry no gradient.

Real-valued labels (IPS-corrected labels ``y / beta_hat`` can exceed the top grade by far, e.g.
4 / 0.01 = 400): ``G_i`` is invariant to a common factor of the gains, so the exp2 gains of a
list are computed as ``2^-c (2^y - 1)`` with ``c = max(0, y_max - 60)``, which stays finite in
float32 for any finite label. Linear gain keeps the metric linear in the labels, which is what
makes an IPS-corrected label an unbiased stand-in for relevance (paper §3.1, eq. 3).

Differences from allRank's ``lambdaLoss``: masks instead of a -1 label sentinel; the ``k``
cutoff truncates the discount (allRank keeps only pairs with *both* ranks ``<= k`` and the
untruncated discount); the pair loss is an exact ``softplus`` (allRank clamps the sigmoid at
1e-10); reduction is the mean of per-list sums over the lists that have at least one pair
(allRank: sum over all pairs of the batch). Without a cutoff, ``reduction="sum"`` equals
allRank's value whenever its sigmoid clamp is inactive.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..core.errors import ParameterError
from ..core.validation import check_k, choice, real

GAINS = ("exp2", "linear")
REDUCTIONS = ("mean", "sum", "none")

#: allRank's scheme names -> ours
ALIASES = {
    "lambdaRank_scheme": "lambdaRank",
    "ndcgLoss2_scheme": "ndcgLoss2",
    "ndcgLoss2PP_scheme": "ndcgLoss2PP",
    "rankNet_scheme": "rankNet",
    None: "rankNet",
}
_EXP2_SHIFT = 60.0


def list_gains(labels: torch.Tensor, mask: torch.Tensor, *, gain: str = "exp2") -> torch.Tensor:
    """Gains of the real items, 0 at padded slots, up to a positive factor common to each list.

    ``gain="exp2"``: ``(2^y - 1) * 2^-c`` with ``c = max(0, max_list(y) - 60)`` (finite for any
    finite label); ``gain="linear"``: ``y``. Shapes ``[B, L] -> [B, L]``, float32 or wider.
    """
    y = labels.masked_fill(~mask, 0.0)
    if y.dtype not in (torch.float32, torch.float64):
        y = y.float()
    if gain == "linear":
        return y
    if gain != "exp2":
        raise ParameterError("gain", "'exp2' (2^y - 1) or 'linear' (y)", gain)
    y_max = y.amax(dim=1, keepdim=True) if y.shape[1] else y
    c = (y_max - _EXP2_SHIFT).clamp(min=0.0)
    small = torch.expm1(y.clamp(max=_EXP2_SHIFT) * math.log(2.0))
    shifted = torch.exp2(y - c) - torch.exp2(-c)
    g = torch.where(c > 0, shifted, small)
    return g.masked_fill(~mask, 0.0)


def _ranks(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """1-based rank by descending score among the real items (padded items after them)."""
    s = scores.detach().masked_fill(~mask, float("-inf"))
    order = torch.sort(s, dim=1, descending=True, stable=True).indices
    ar = torch.arange(1, s.shape[1] + 1, device=s.device).expand_as(order)
    return torch.empty_like(order).scatter_(1, order, ar)


def ideal_dcg(gains: torch.Tensor, *, k: int | None = None) -> torch.Tensor:
    """``sum_{r <= k} g_(r) / log2(1 + r)`` of each row's gains sorted descending ([B])."""
    sorted_g = torch.sort(gains, dim=1, descending=True).values
    if k is not None:
        sorted_g = sorted_g[:, :k]
    disc = 1.0 / torch.log2(
        torch.arange(2, sorted_g.shape[1] + 2, device=gains.device, dtype=gains.dtype)
    )
    return (sorted_g * disc).sum(dim=1)


# --------------------------------------------------------------------------- weightings
# Each weighting maps the normalized gains G [B, L], the 1-based ranks [B, L] (float) and the
# rank cutoff k to pair weights w_ij [B, L, L]; rankNet weights every pair by 1 (None).


def _swap_discount_delta(G, ranks, k):
    """|G_i - G_j| * |d(pi_i) - d(pi_j)|: the |Delta NDCG@k| of swapping i and j."""
    d = 1.0 / torch.log2(1.0 + ranks)
    if k is not None:
        d = d.masked_fill(ranks > k, 0.0)
    return (G[:, :, None] - G[:, None, :]).abs() * (d[:, :, None] - d[:, None, :]).abs()


def _rank_distance_delta(G, ranks):
    """delta_|pi_i - pi_j| * |G_i - G_j| with delta_t = 1/D(t) - 1/D(t + 1)."""
    t = (ranks[:, :, None] - ranks[:, None, :]).abs().clamp(min=1.0)
    delta = 1.0 / torch.log2(1.0 + t) - 1.0 / torch.log2(2.0 + t)
    return delta * (G[:, :, None] - G[:, None, :]).abs()


def lambdarank_weights(G, ranks, *, k=None, mu=10.0):
    """``lambdaRank``: ``|G_i - G_j| |d(pi_i) - d(pi_j)|``."""
    return _swap_discount_delta(G, ranks, k)


def ndcgloss2_weights(G, ranks, *, k=None, mu=10.0):
    """``ndcgLoss2``: ``delta_|pi_i - pi_j| |G_i - G_j|``."""
    return _rank_distance_delta(G, ranks)


def ndcgloss2pp_weights(G, ranks, *, k=None, mu=10.0):
    """``ndcgLoss2PP`` (NDCG-Loss2++): ``mu * ndcgLoss2 + lambdaRank``."""
    return mu * _rank_distance_delta(G, ranks) + _swap_discount_delta(G, ranks, k)


def ranknet_weights(G, ranks, *, k=None, mu=10.0):
    """``rankNet``: every pair weighs 1."""
    return None


#: weighting scheme -> weight function (module docstring)
WEIGHTINGS = {
    "lambdaRank": lambdarank_weights,
    "ndcgLoss2": ndcgloss2_weights,
    "ndcgLoss2PP": ndcgloss2pp_weights,
    "rankNet": ranknet_weights,
}


def pair_loss(scores: torch.Tensor, *, sigma: float) -> torch.Tensor:
    """``log2(1 + exp(-sigma (s_i - s_j)))`` for every ordered pair ([B, L] -> [B, L, L])."""
    diff = sigma * (scores[:, :, None] - scores[:, None, :])
    return F.softplus(-diff) / math.log(2.0)


def _valid_pairs(y: torch.Tensor, mask: torch.Tensor, ranks, k) -> torch.Tensor:
    """Pairs of real items with y_i > y_j (and, with a cutoff, min rank <= k)."""
    pair = mask[:, :, None] & mask[:, None, :] & (y[:, :, None] > y[:, None, :])
    if k is not None:
        pair &= torch.minimum(ranks[:, :, None], ranks[:, None, :]) <= k
    return pair


def _padded_scores(scores: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor):
    """Check the ``[B, L]`` shapes of a loss's inputs; return ``(scores in the working
    dtype with padded entries 0, bool mask, working dtype)``: padded scores never reach the
    gradient."""
    if scores.shape != labels.shape or scores.shape != mask.shape or scores.dim() != 2:
        raise ParameterError(
            "scores/labels/mask",
            "equal 2-D shapes [B, L]",
            (tuple(scores.shape), tuple(labels.shape), tuple(mask.shape)),
        )
    mask = mask.to(torch.bool)
    work = torch.promote_types(scores.dtype, torch.float32)
    return scores.to(work).masked_fill(~mask, 0.0), mask, work


def _reduce(per_list: torch.Tensor, pair: torch.Tensor, reduction: str) -> torch.Tensor:
    if reduction == "none":
        return per_list
    if reduction == "sum":
        return per_list.sum()
    has_pair = pair.any(dim=(1, 2))
    return per_list.sum() / has_pair.sum().clamp(min=1).to(per_list.dtype)


@dataclass(frozen=True)
class LambdaLoss:
    """LambdaLoss of padded lists (formulas in the module docstring): a pair loss times a
    weighting (the ``loss`` config group).

    ``weighting``: "lambdaRank" | "ndcgLoss2" | "ndcgLoss2PP" | "rankNet"; ``k``: rank cutoff
    (None: none); ``sigma``: sigmoid scale; ``mu``: NDCG-Loss2++ weight; ``gain``: "exp2" or
    "linear"; ``eps``: lower bound of maxDCG; ``reduction``: "mean" (over lists with at least
    one pair; 0 if none), "sum" or "none" ([B]).

    ``loss(scores [B, L], labels [B, L], mask [B, L] bool) -> Tensor``. Scores of padded slots
    are never read (they may be inf or nan), so padding changes neither the loss nor the
    gradient of any real item's score.
    """

    weighting: str = "lambdaRank"
    k: int | None = None
    sigma: float = 1.0
    mu: float = 10.0
    gain: str = "exp2"
    eps: float = 1e-10
    reduction: str = "mean"

    def __post_init__(self) -> None:
        choice("weighting", self.weighting, tuple(WEIGHTINGS))
        check_k(self.k)
        real("sigma", self.sigma, low=0.0, low_open=True)
        real("mu", self.mu, low=0.0)
        choice("gain", self.gain, GAINS)
        real("eps", self.eps, low=0.0, low_open=True)
        choice("reduction", self.reduction, REDUCTIONS)

    def __call__(
        self, scores: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        s, mask, work = _padded_scores(scores, labels, mask)
        y = labels.to(work).masked_fill(~mask, 0.0)
        fn = WEIGHTINGS[self.weighting]
        with torch.no_grad():
            ranks = _ranks(s, mask) if (fn is not ranknet_weights or self.k is not None) else None
            pair = _valid_pairs(y, mask, ranks, self.k)
            weights = None
            if ranks is not None and fn is not ranknet_weights:
                g = list_gains(y, mask, gain=self.gain)
                G = g / ideal_dcg(g, k=self.k).clamp(min=self.eps)[:, None]
                weights = fn(G, ranks.to(work), k=self.k, mu=self.mu)
        loss = pair_loss(s, sigma=self.sigma)
        if weights is not None:
            loss = loss * weights
        per_list = torch.where(pair, loss, torch.zeros((), dtype=work, device=s.device)).sum(
            dim=(1, 2)
        )
        return _reduce(per_list, pair, self.reduction)


@dataclass(frozen=True)
class CounterfactualLambdaLoss:
    """IPS-weighted counterfactual LambdaLoss, linear in the labels (the ``loss`` config
    group's ``counterfactual`` option).

    Labels ``y_i`` are debiased click estimates (IPS over positions, optionally over group
    propensities): unbiased for relevance but noisy, and not graded. Every real item ``i``
    is pushed above every other real item ``j`` with weight ``y_i``:

        loss = Σ_i y_i Σ_{j ≠ i} |d(π_i) − d(π_j)| log2(1 + exp(−σ (s_i − s_j))) / Z,

    with the discount ``d`` of the module docstring (cutoff ``k``) and ``Z`` the list's ideal
    DCG of the linear gains ``y`` (no gradient; at least ``eps``). Being linear in ``y``
    (before ``Z``), the expected loss over clicks equals the loss on the true relevance up to
    that normalizer -- the unbiasedness of IPS-weighted counterfactual LTR (Joachims et al.
    2017; Wang et al. 2018) -- where LambdaLoss's ``|G_i − G_j|`` and its ``y_i > y_j`` pair
    selection are not linear. A pair of two relevant items pulls both ways; its scores settle
    at ``s_i − s_j = log(y_i / y_j)``. ``reduction`` as in :class:`LambdaLoss`.
    """

    k: int | None = None
    sigma: float = 1.0
    eps: float = 1e-10
    reduction: str = "mean"

    def __post_init__(self) -> None:
        check_k(self.k)
        real("sigma", self.sigma, low=0.0, low_open=True)
        real("eps", self.eps, low=0.0, low_open=True)
        choice("reduction", self.reduction, REDUCTIONS)

    def __call__(
        self, scores: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        s, mask, work = _padded_scores(scores, labels, mask)
        with torch.no_grad():
            y = labels.to(work).masked_fill(~mask, 0.0).clamp(min=0.0)
            ranks = _ranks(s, mask).to(work)
            d = 1.0 / torch.log2(1.0 + ranks)
            if self.k is not None:
                d = d.masked_fill(ranks > self.k, 0.0)
            z = ideal_dcg(y, k=self.k).clamp(min=self.eps)
            weights = (y / z[:, None])[:, :, None] * (d[:, :, None] - d[:, None, :]).abs()
            pair = mask[:, :, None] & mask[:, None, :] & (y[:, :, None] > 0)
            pair &= ~torch.eye(s.shape[1], dtype=torch.bool, device=s.device)
        loss = pair_loss(s, sigma=self.sigma) * weights
        per_list = torch.where(pair, loss, torch.zeros((), dtype=work, device=s.device)).sum(
            dim=(1, 2)
        )
        return _reduce(per_list, pair, self.reduction)


def lambda_loss(
    scores: torch.Tensor,
    labels: torch.Tensor,
    mask: torch.Tensor,
    *,
    weighting: str | None = "lambdaRank",
    k: int | None = None,
    sigma: float = 1.0,
    mu: float = 10.0,
    gain: str = "exp2",
    eps: float = 1e-10,
    reduction: str = "mean",
) -> torch.Tensor:
    """:class:`LambdaLoss` as a function; allRank's scheme names (``"lambdaRank_scheme"``,
    ...; None = rankNet) are accepted for ``weighting``."""
    if weighting is None or (isinstance(weighting, str) and weighting in ALIASES):
        weighting = ALIASES[weighting]
    return LambdaLoss(
        weighting=weighting, k=k, sigma=sigma, mu=mu, gain=gain, eps=eps, reduction=reduction
    )(scores, labels, mask)


def padded_ndcg(
    scores: torch.Tensor,
    labels: torch.Tensor,
    mask: torch.Tensor,
    *,
    k: int | None = 10,
    gain: str = "exp2",
) -> tuple[torch.Tensor, torch.Tensor]:
    """NDCG@k of every padded list: ``DCG@k / maxDCG@k`` with ``DCG@k = sum_{pi_i <= k} g(y_i)
    / log2(1 + pi_i)`` (ranks as in :func:`lambda_loss`, ties: earlier slot first).

    Returns ``(ndcg [B], valid [B])``; lists whose ideal DCG is 0 (no item with a positive
    label) are not valid and get ndcg 0.
    """
    check_k(k)
    mask = mask.to(torch.bool)
    work = torch.promote_types(scores.dtype, torch.float32)
    with torch.no_grad():
        s = scores.to(work)
        y = labels.to(work).masked_fill(~mask, 0.0)
        g = list_gains(y, mask, gain=gain)
        ranks = _ranks(s, mask)
        disc = 1.0 / torch.log2(1.0 + ranks.to(work))
        if k is not None:
            disc = disc.masked_fill(ranks > k, 0.0)
        dcg = (g * disc).masked_fill(~mask, 0.0).sum(dim=1)
        idcg = ideal_dcg(g, k=k)
        valid = idcg > 0
        ndcg = torch.where(
            valid, dcg / idcg.clamp(min=torch.finfo(work).tiny), torch.zeros_like(dcg)
        )
    return ndcg, valid
