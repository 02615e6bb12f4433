"""Fair-exposure Plackett–Luce policies learned from utility scores (torch).

:class:`FairExposureLearner` learns one PL logit per item, for all queries at once, that
minimizes per query

    L(s) = λ · ||ε(s) − ε*||² − (1 − λ) · E_π[DCG(π)] / IDCG

with ``ε(s)`` the policy's expected exposure (``e(r) = 1/log2(offset + r)``), ``ε*`` the
EEL target exposure of the graded utilities (items of equal grade share the exposure of
the ranks their grade block occupies; Diaz et al. 2020), DCG with linear gain on the
utilities and ``λ = tradeoff`` ∈ [0, 1]. ``level="group"`` compares group exposures
``[E_A, E_N]`` instead of item exposures (the paper's EEL).

Lists of at most ``EXACT_MAX`` (6) items get the exact loss and gradient (expected
exposures enumerated over all rankings, as in :mod:`groupbias.rank.plackett_luce`). Longer lists get
policy gradients (REINFORCE, Williams 1992) over ``samples`` Gumbel-max
rankings per query and step, with the leave-one-out mean of the other samples' rewards as
the variance-reducing baseline: the reward of ranking ``π`` is
``λ · 2 (ε̄ − ε*) · e(π) − (1 − λ) DCG(π)/IDCG`` with ``ε̄`` the mean sampled exposure,
whose expectation's gradient is ``∇L``. Adam's step size decays linearly to 0 over
``epochs`` (the noisy gradient then settles). Logits start at ``utility / init_temperature``.
Runs on the GPU when ``device="auto"`` finds one. Memory is bounded: data whose training
steps would hold more than :data:`TRAIN_VALUES` values is trained in chunks of whole queries
one after another (each with its own random stream; data within the budget trains exactly as
one chunk), so 4M items stay under 1 GB.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .._fast.rows import padded_layouts
from .._fast.threads import torch_cores
from ..core.errors import ParameterError
from ..core.memory import release_free_memory
from ..core.validation import check_qptr, choice, integer, real, vector
from ..rank.plackett_luce import EXACT_MAX, PlackettLuce, all_rankings
from ..rank.ranking import log_discount
from .exposure import target_exposure

__all__ = ["FairExposureLearner", "LEVELS", "OBJECTIVES"]

LEVELS = ("item", "group")
OBJECTIVES = ("eel", "dtr")
TRAIN_DEVICES = ("auto", "cpu", "cuda")


class FairExposureLearner:
    """Learns PL logits trading NDCG against EEL (see the module docstring).

    ``tradeoff``: λ, the weight of the EEL term (1 = exposure only, 0 = NDCG only);
    ``epochs``: Adam steps; ``lr``: its learning rate; ``samples``: rankings per query and
    step; ``level``: ``"item"`` or ``"group"`` exposure; ``objective``: ``"eel"`` (the loss
    above) or ``"dtr"`` (fairness term ``(log (E_A/U_A) − log (E_N/U_N))²``, the squared log
    disparate treatment ratio of the utilities; 0 where a group has no utility);
    ``init_temperature``: logits start at
    ``utility / init_temperature``; ``seed``; ``device``: ``"auto"`` (GPU when present),
    ``"cpu"`` or ``"cuda"``; ``workers``: torch CPU workers while fitting (None: torch's
    default; 1 keeps the many small steps fast when other work shares the cores).
    """

    def __init__(
        self,
        tradeoff: float = 1.0,
        epochs: int = 200,
        lr: float = 0.1,
        samples: int = 32,
        level: str = "item",
        init_temperature: float = 0.1,
        objective: str = "eel",
        seed: int = 0,
        device: str = "auto",
        workers: int | None = 1,
    ) -> None:
        self.tradeoff = real("tradeoff", tradeoff, low=0.0, high=1.0)
        self.epochs = integer("epochs", epochs, low=0)
        self.lr = real("lr", lr, low=0.0, low_open=True)
        self.samples = integer("samples", samples, low=2)
        self.level = choice("level", level, LEVELS)
        self.objective = choice("objective", objective, OBJECTIVES)
        self.init_temperature = real("init_temperature", init_temperature, low=0.0, low_open=True)
        self.seed = integer("seed", seed, low=0)
        self.device = choice("device", device, TRAIN_DEVICES)
        self.workers = None if workers is None else integer("workers", workers, low=1)

    def fit(
        self,
        utility,
        grades,
        *,
        qptr,
        groups=None,
        offset: int = 1,
        progress: Callable[[int, int], None] | None = None,
        **policy_options,
    ) -> PlackettLuce:
        """The learned policy of every query: ``utility`` (float [n_items], the gains of
        the NDCG term and the initial logits), ``grades`` (the EEL grades of the target),
        ``groups`` (needed for ``level="group"``); ``progress(done, total)``: called after
        every Adam step, counting the steps of every chunk (e.g. to print how far it is);
        ``policy_options`` go to :class:`~groupbias.rank.plackett_luce.PlackettLuce`."""
        import torch

        u = vector("utility", utility)
        q = check_qptr(qptr, u.size)
        gr = vector("grades", grades, u.size)
        if (self.level == "group" or self.objective == "dtr") and groups is None:
            raise ParameterError(
                "groups", "affected-group memberships (level='group' or objective='dtr')", None
            )
        g = None if groups is None else vector("groups", groups, u.size, low=0.0, high=1.0)
        target = target_exposure(gr, qptr=q, offset=offset)
        dev = self._device(torch)
        logits = u / self.init_temperature
        out = logits.copy()
        with torch_cores(self.workers):
            chunks = list(_chunks(padded_layouts(q, u.size), self.samples))
            for i, chunk in enumerate(chunks):
                gen = torch.Generator(device=dev).manual_seed(_chunk_seed(self.seed, i))
                blocks = [
                    _TrainingBlock(starts, sizes, u, target, g, logits, offset, dev, torch)
                    for starts, sizes in chunk
                ]
                step = _chunk_progress(progress, i, len(chunks))
                self._train(blocks, [bl.logits for bl in blocks], gen, torch, step)
                for bl in blocks:
                    bl.write(out)
                del blocks  # the next chunk's tensors replace these
        release_free_memory()  # the training tensors' heap pages, before the policy samples
        return PlackettLuce(out, q, **policy_options)

    def _train(self, blocks, params, gen, torch, progress=None) -> None:
        """Adam on the logits of every block, the step size decaying linearly to 0."""
        if params and self.epochs:
            opt = torch.optim.Adam(params, lr=self.lr)
            n = self.epochs
            decay = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: 1.0 - t / n)
            for epoch in range(1, n + 1):
                opt.zero_grad()
                loss = sum(bl.surrogate(self, gen, torch) for bl in blocks)
                loss.backward()
                opt.step()
                decay.step()
                if progress is not None:
                    progress(epoch, n)

    def _device(self, torch):
        if self.device == "cuda" or (self.device == "auto" and torch.cuda.is_available()):
            if not torch.cuda.is_available():
                raise ParameterError("device", "'auto' or 'cpu' (no GPU is present)", "cuda")
            return torch.device("cuda")
        return torch.device("cpu")


def _chunk_progress(progress, i: int, n_chunks: int):
    """``progress(done, total)`` over every chunk's epochs, from one chunk's
    ``(epoch, epochs)``."""
    if progress is None:
        return None
    return lambda epoch, epochs: progress(i * epochs + epoch, n_chunks * epochs)


#: values one training step of a chunk holds at most (sampled or enumerated rankings x
#: padded items): larger data is trained in chunks of whole queries, one after another
TRAIN_VALUES = 1 << 19


def _row_cost(width: int, samples: int) -> int:
    """Values one query of a block of ``width`` holds in a step: its sampled rankings, or
    every ranking for lists short enough to enumerate."""
    rankings = math.factorial(width) if width <= EXACT_MAX else samples
    return rankings * width


def _chunks(layouts, samples: int) -> list[list[tuple[np.ndarray, np.ndarray]]]:
    """The blocks trained together: all of them when their steps hold at most
    :data:`TRAIN_VALUES` values (so the result does not depend on the budget), else pieces
    of whole queries within it, each trained on its own. Every query's logits depend on its
    own loss only and Adam updates each logit from its own gradient, so the pieces converge
    as the whole would; only the random rankings drawn differ."""
    cost = sum(_row_cost(int(sizes.max()), samples) * starts.size for starts, sizes in layouts)
    if cost <= TRAIN_VALUES:
        return [list(layouts)]
    out = []
    for starts, sizes in layouts:
        rows = max(1, TRAIN_VALUES // _row_cost(int(sizes.max()), samples))
        for a in range(0, starts.size, rows):
            out.append([(starts[a : a + rows], sizes[a : a + rows])])
    return out


def _chunk_seed(seed: int, chunk: int) -> int:
    """The generator seed of chunk ``chunk`` (the first keeps ``seed``: data that fits one
    chunk trains exactly as it always did)."""
    if chunk == 0:
        return seed
    return int(np.random.SeedSequence([seed, chunk]).generate_state(1, dtype=np.uint64)[0] >> 1)


class _TrainingBlock:
    """The queries starting at ``starts`` with ``sizes`` items, padded to ``[m, w]``, and
    their trainable logits."""

    def __init__(self, starts, sizes, u, target, g, logits, offset, dev, torch) -> None:
        w = int(sizes.max())
        valid = np.arange(w) < sizes[:, None]
        self.index = np.minimum(
            starts[:, None] + np.arange(w), starts[:, None] + sizes[:, None] - 1
        )
        self.valid_np = valid
        self.valid = torch.as_tensor(valid, device=dev)

        def pad(a, fill):
            return torch.as_tensor(
                np.where(valid, a[self.index], fill), dtype=torch.float64, device=dev
            )

        self.gain = pad(u, 0.0)
        self.target = pad(target, 0.0)
        self.g = pad(np.zeros(u.size) if g is None else g, 0.0)  # level="group" needs g
        self.logits = torch.nn.Parameter(pad(logits, 0.0))
        self.rankings = None
        if w <= EXACT_MAX:  # short lists: the exact expected exposure, an exact gradient
            perms, slots = all_rankings(w)
            # slots last to first: the suffix sums of the PL denominators are prefix sums
            self.rankings = torch.as_tensor(perms[:, ::-1].copy(), device=dev)
            self.slots = torch.as_tensor(slots, device=dev)
        self.table = torch.as_tensor(log_discount(w, None, offset), device=dev)
        ideal = torch.sort(self.gain, dim=1, descending=True).values
        self.idcg = (ideal * torch.as_tensor(log_discount(w, None, 1), device=dev)).sum(1)

    def fairness(self, expo, learner, torch):
        """The fairness term per query (float [m]) of the expected exposures ``expo``
        [m, w]: squared EEL distance (item or group level) or the squared log disparate
        treatment ratio (0 where a group has no utility)."""
        ga, gn = self.g * self.valid, (1.0 - self.g) * self.valid
        if learner.objective == "dtr":
            ua, un = (self.gain * ga).sum(1), (self.gain * gn).sum(1)
            ok = (ua > 0) & (un > 0)
            ea, en = (expo * ga).sum(1), (expo * gn).sum(1)
            x = torch.log(ea.clamp_min(1e-300) / ua.clamp_min(1e-300))
            x = x - torch.log(en.clamp_min(1e-300) / un.clamp_min(1e-300))
            return torch.where(ok, x * x, torch.zeros_like(x))
        diff = expo - self.target
        if learner.level == "group":
            return (diff * ga).sum(1) ** 2 + (diff * gn).sum(1) ** 2
        return (diff * diff).sum(1)

    def surrogate(self, learner, gen, torch):
        """A scalar whose gradient is the policy-gradient estimate of ``∇L`` (summed over
        the block's queries); the exact ``L`` for lists of at most ``EXACT_MAX`` items."""
        s_n, (m, w) = learner.samples, self.logits.shape
        lam = learner.tradeoff
        masked = torch.where(self.valid, self.logits, torch.full_like(self.logits, -1e4))
        if self.rankings is not None:
            return self._exact_loss(masked, lam, learner, torch)
        u = torch.rand((s_n, m, w), generator=gen, device=masked.device, dtype=masked.dtype)
        z = masked.detach() - torch.log(-torch.log(u.clamp_min(1e-12)))
        order = torch.argsort(z, dim=2, descending=True)
        ordered = torch.gather(masked.expand(s_n, m, w), 2, order)
        tail = torch.logcumsumexp(ordered.flip(2), dim=2).flip(2)
        slot_ok = torch.arange(w, device=masked.device) < self.valid.sum(1)[:, None]
        logp = torch.where(slot_ok, ordered - tail, torch.zeros_like(tail)).sum(2)  # [S, m]
        expo = torch.zeros_like(z).scatter_(2, order, self.table.expand(s_n, m, w))
        expo = expo * self.valid
        # the fairness term is a function f of the expected exposure: its gradient is
        # (df/dε)·∇ε, so each ranking's reward is (df/dε at the sample mean)·ε(π)
        mean = expo.mean(0).requires_grad_(True)
        (coef,) = torch.autograd.grad(self.fairness(mean, learner, torch).sum(), mean)
        with torch.no_grad():
            fair = (coef * expo).sum(2)  # [S, m]
            dcg = (torch.gather(self.gain.expand(s_n, m, w), 2, order) * _disc(w, masked)).sum(2)
            ndcg = torch.where(self.idcg > 0, dcg / self.idcg.clamp_min(1e-300), 0.0)
            reward = lam * fair - (1.0 - lam) * ndcg
            baseline = (reward.sum(0, keepdim=True) - reward) / (s_n - 1)
            adv = reward - baseline
        return (adv * logp).mean(0).sum()

    def _exact_loss(self, masked, lam: float, learner, torch):
        """``Σ_q L_q`` with the expected exposures enumerated over every ranking (padding
        slots have logit -1e4: they come last with probability 1 - O(e^-1e4))."""
        lw = masked[:, self.rankings]  # [m, P, w], last slot first
        p = torch.exp((lw - torch.logcumsumexp(lw, dim=2)).sum(2))  # [m, P]
        expo = (p @ self.table[self.slots]) * self.valid  # [m, w]
        fair = self.fairness(expo, learner, torch)
        w = masked.shape[1]
        dcg = (p @ _disc(w, masked)[self.slots] * self.gain).sum(1)
        ndcg = torch.where(self.idcg > 0, dcg / self.idcg.clamp_min(1e-300), 0.0)
        return (lam * fair - (1.0 - lam) * ndcg).sum()

    def write(self, out: np.ndarray) -> None:
        vals = self.logits.detach().cpu().numpy()
        out[self.index[self.valid_np]] = vals[self.valid_np]


def _disc(w: int, like):
    import torch

    return torch.as_tensor(log_discount(w, None, 1), device=like.device, dtype=like.dtype)
