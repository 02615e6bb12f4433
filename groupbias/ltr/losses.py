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

import torch
import torch.nn.functional as F

from ..errors import ParameterError
from ..validation import check_k

_SCHEMES = {
    "lambdaRank": "lambdaRank", "lambdaRank_scheme": "lambdaRank",
    "ndcgLoss2": "ndcgLoss2", "ndcgLoss2_scheme": "ndcgLoss2",
    "ndcgLoss2PP": "ndcgLoss2PP", "ndcgLoss2PP_scheme": "ndcgLoss2PP",
    "rankNet": "rankNet", "rankNet_scheme": "rankNet", None: "rankNet",
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
    disc = 1.0 / torch.log2(torch.arange(2, sorted_g.shape[1] + 2, device=gains.device,
                                         dtype=gains.dtype))
    return (sorted_g * disc).sum(dim=1)


def lambda_loss(scores: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor, *,
                weighting: str | None = "lambdaRank", k: int | None = None, sigma: float = 1.0,
                mu: float = 10.0, gain: str = "exp2", eps: float = 1e-10,
                reduction: str = "mean") -> torch.Tensor:
    """LambdaLoss of padded lists (formulas in the module docstring).

    Parameters
    ----------
    scores : float [B, L] (any float dtype; computed in float32 or wider)
    labels : float [B, L], non-negative on real slots, anything on padded slots
    mask : bool [B, L], True = real item
    weighting : "lambdaRank" | "ndcgLoss2" | "ndcgLoss2PP" | "rankNet" (allRank names too)
    k : rank cutoff (None = no cutoff); sigma : sigmoid scale; mu : NDCG-Loss2++ weight
    gain : "exp2" or "linear"; eps : lower bound of maxDCG
    reduction : "mean" (over lists with at least one pair; 0 if none), "sum" or "none" ([B])

    Scores of padded slots are never read (they may be inf or nan), so padding changes neither
    the loss nor the gradient of any real item's score.
    """
    scheme = _SCHEMES.get(weighting, "") if isinstance(weighting, (str, type(None))) else ""
    if not scheme:
        raise ParameterError("weighting", "one of lambdaRank, ndcgLoss2, ndcgLoss2PP, rankNet",
                             weighting)
    check_k(k)
    if reduction not in ("mean", "sum", "none"):
        raise ParameterError("reduction", "'mean', 'sum' or 'none'", reduction)
    if scores.shape != labels.shape or scores.shape != mask.shape or scores.dim() != 2:
        raise ParameterError("scores/labels/mask", "equal 2-D shapes [B, L]",
                             (tuple(scores.shape), tuple(labels.shape), tuple(mask.shape)))
    mask = mask.to(torch.bool)
    work = torch.promote_types(scores.dtype, torch.float32)
    s = scores.to(work).masked_fill(~mask, 0.0)  # padded scores never reach the gradient
    y = labels.to(work).masked_fill(~mask, 0.0)

    with torch.no_grad():
        pair = mask[:, :, None] & mask[:, None, :] & (y[:, :, None] > y[:, None, :])
        needs_ranks = scheme != "rankNet" or k is not None
        if needs_ranks:
            ranks = _ranks(s, mask)
            rf = ranks.to(work)
        if k is not None:
            pair &= torch.minimum(ranks[:, :, None], ranks[:, None, :]) <= k
        if scheme == "rankNet":
            weights = None
        else:
            g = list_gains(y, mask, gain=gain)
            G = g / ideal_dcg(g, k=k).clamp(min=eps)[:, None]
            dG = (G[:, :, None] - G[:, None, :]).abs()
            weights = torch.zeros_like(dG)
            if scheme in ("lambdaRank", "ndcgLoss2PP"):
                d = 1.0 / torch.log2(1.0 + rf)
                if k is not None:
                    d = d.masked_fill(ranks > k, 0.0)
                weights = weights + dG * (d[:, :, None] - d[:, None, :]).abs()
            if scheme in ("ndcgLoss2", "ndcgLoss2PP"):
                t = (rf[:, :, None] - rf[:, None, :]).abs().clamp(min=1.0)
                delta = 1.0 / torch.log2(1.0 + t) - 1.0 / torch.log2(2.0 + t)
                w2 = delta * dG
                weights = weights + (mu * w2 if scheme == "ndcgLoss2PP" else w2)

    diff = sigma * (s[:, :, None] - s[:, None, :])
    pair_loss = F.softplus(-diff) / math.log(2.0)
    if weights is not None:
        pair_loss = pair_loss * weights
    per_list = torch.where(pair, pair_loss, torch.zeros((), dtype=work, device=s.device)
                           ).sum(dim=(1, 2))
    if reduction == "none":
        return per_list
    if reduction == "sum":
        return per_list.sum()
    has_pair = pair.any(dim=(1, 2))
    return per_list.sum() / has_pair.sum().clamp(min=1).to(work)


def padded_ndcg(scores: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor, *,
                k: int | None = 10, gain: str = "exp2") -> tuple[torch.Tensor, torch.Tensor]:
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
        ndcg = torch.where(valid, dcg / idcg.clamp(min=torch.finfo(work).tiny),
                           torch.zeros_like(dcg))
    return ndcg, valid


# ---- TEMP SHIM ----
from dataclasses import dataclass  # noqa: E402


@dataclass(frozen=True)
class LambdaLoss:
    weighting: str = "lambdaRank"
    k: int | None = None
    sigma: float = 1.0
    mu: float = 10.0
    gain: str = "exp2"
    eps: float = 1e-10
    reduction: str = "mean"

    def __post_init__(self):
        from ..validation import choice, real
        choice("weighting", self.weighting, ("lambdaRank", "ndcgLoss2", "ndcgLoss2PP", "rankNet"))
        check_k(self.k)
        real("sigma", self.sigma, low=0, low_open=True)
        real("mu", self.mu, low=0)
        choice("gain", self.gain, ("exp2", "linear"))
        real("eps", self.eps, low=0, low_open=True)
        choice("reduction", self.reduction, ("mean", "sum", "none"))

    def __call__(self, scores, labels, mask):
        return lambda_loss(scores, labels, mask, weighting=self.weighting, k=self.k,
                           sigma=self.sigma, mu=self.mu, gain=self.gain, eps=self.eps,
                           reduction=self.reduction)
