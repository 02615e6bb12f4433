"""The pairwise permutation-graph learner of the paper's released evaluation code (PPG).

For every query the learner keeps a *reference* order of ``sessions`` copies of its items
(each copy sorted by the scores, ``argsort()[::-1]`` as released) and a swap probability
``P[i, j]`` for every pair of reference positions ``i < j`` of one copy whose items are in
different groups (0.5 at the start; pairs of one group never swap). A ranking is sampled
per copy by a recursive merge: both halves are sampled, then, from the last item of the
upper half up, each upper item moves down past the lower items that follow it, one after
another, each passed with probability ``P``, stopping at the first refusal, at an item of
its own group or at the next upper item (as released, an item that is never refused still
stops one place before that boundary). Each epoch draws ``samples`` rankings of all copies,
scores each by the objective ``f`` (lower is better: the squared distance of the copies'
mean group exposures to the EEL target, or DTR − 1), and takes the step

    P ← P − lr · mean_samples f · (E / P − (1 − E) / (1 − P))

over the allowed pairs (``E[i, j] = 1`` where the sample put ``j`` before ``i``), then sets
``P < 0`` to 0.05 and ``P ≥ 0.95`` to 0.95. When an epoch found a ranking better than every
earlier one, that ranking becomes the reference (``P`` of the pairs it swapped becomes
``1 − P``). Learning stops after ``epochs`` or ``patience`` epochs without a better
ranking; the best rankings found (one per copy) are the output, judged by their mean
exposure (:class:`~groupbias.rank.sampled.SampledRankings`). The random draws come from a
seeded generator (the released code uses numpy's global one, unseeded), so the same seed
gives the same rankings; the released code's own output varies from run to run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.errors import ParameterError
from ..core.validation import check_qptr, choice, integer, real, vector
from ..rank.ranking import log_discount
from ..rank.sampled import SampledRankings

__all__ = ["PPG_OBJECTIVES", "PPGLearner", "merge_sample"]

PPG_OBJECTIVES = ("eel", "dtr")
#: the released clipping of the swap probabilities after every step
_LOW, _HIGH = 0.05, 0.95


@dataclass(frozen=True)
class PPGLearner:
    """See the module docstring: ``epochs`` (50), ``lr`` (0.1), ``samples`` per epoch (16),
    ``sessions`` (4 copies of every query), ``patience`` (10 epochs), ``seed``; the
    released defaults (``codes/configs/fairness.yaml``)."""

    epochs: int = 50
    lr: float = 0.1
    samples: int = 16
    sessions: int = 4
    patience: int = 10
    seed: int = 0

    def __post_init__(self) -> None:
        integer("epochs", self.epochs, low=1)
        real("lr", self.lr, low=0.0, low_open=True)
        integer("samples", self.samples, low=1)
        integer("sessions", self.sessions, low=1)
        integer("patience", self.patience, low=0)
        integer("seed", self.seed, low=0)

    def fit(
        self,
        scores,
        grades,
        *,
        qptr,
        groups,
        objective: str = "eel",
        offset: int = 2,
        progress: Callable[[int, int], None] | None = None,
    ) -> SampledRankings:
        """The best ``sessions`` rankings of every query: ``scores`` (the released code's
        ``y_pred``: the reference order and, for DTR, the utilities), ``grades`` (the EEL
        levels of the target, e.g. per-query min–max bins of the scores), ``groups``
        (0/1), exposure ``1 / log2(offset + r)``; ``progress(done, total)`` after every
        query."""
        s = vector("scores", scores)
        q = check_qptr(qptr, s.size)
        gr = vector("grades", grades, s.size)
        g = vector("groups", groups, s.size, low=0.0, high=1.0)
        if not np.isin(g, (0.0, 1.0)).all():
            raise ParameterError("groups", "crisp 0/1 group memberships", "fractional ones")
        choice("objective", objective, PPG_OBJECTIVES)
        table = log_discount(int(np.diff(q).max(initial=0)), None, offset)
        ranks = np.empty((self.sessions, s.size), dtype=np.int64)
        n_queries = q.size - 1
        for i in range(n_queries):
            a, b = int(q[i]), int(q[i + 1])
            rng = np.random.default_rng([self.seed, i])
            task = QueryCopies(s[a:b], gr[a:b], g[a:b], table, objective, self.sessions)
            order = self._learn(task, rng)  # [sessions, n]: items in ranked order
            ranks[:, a:b][np.arange(self.sessions)[:, None], order] = np.arange(1, b - a + 1)
            if progress is not None:
                progress(i + 1, n_queries)
        return SampledRankings(ranks, q)

    def _learn(self, task: QueryCopies, rng: np.random.Generator) -> np.ndarray:
        """The released ``Learner.fit`` on one query's copies: the best rankings found."""
        ref, P = task.reference, task.allowed * 0.5
        best_f, last_better = np.inf, -1
        for epoch in range(self.epochs):
            P, ref, best_f, better = self.epoch(task, P, ref, best_f, rng)
            if better:
                last_better = epoch
            if epoch - last_better > self.patience:
                break
        return task.ranked_items(ref)

    def epoch(self, task: QueryCopies, P, ref, best_f: float, rng: np.random.Generator):
        """One epoch: ``samples`` rankings, the step on ``P``, the clipping, and the best
        ranking as the new reference when one beat ``best_f``. Returns ``(P, ref, best_f,
        better)``."""
        upper = P > 0  # the pairs that may swap, in the current reference's positions
        grad = np.zeros_like(P)
        inv = np.divide(1.0, P, out=np.zeros_like(P), where=upper)
        inv_rest = np.divide(1.0, 1.0 - P, out=np.zeros_like(P), where=upper)
        found = None  # this epoch's ranking better than every earlier one
        for _ in range(self.samples):
            perm = task.sample(P, rng)
            f = task.objective(ref[perm])
            if f < best_f:
                best_f, found = f, perm
            grad += f * np.where(inversions(perm) & upper, inv, -inv_rest)
        P = P - self.lr * grad / self.samples
        P[P < 0] = _LOW
        P[P >= _HIGH] = _HIGH
        if found is None:
            return P, ref, best_f, False
        return rebase(P, found), ref[found], best_f, True


def inversions(perm: np.ndarray) -> np.ndarray:
    """``E[x, y]`` (bool [n, n]): ``x < y`` and ``perm`` puts reference position ``y`` before
    ``x``."""
    pos = np.empty_like(perm)
    pos[perm] = np.arange(perm.size)
    n = perm.size
    later = np.arange(n)[:, None] < np.arange(n)[None, :]
    return later & (pos[None, :] < pos[:, None])


def rebase(P: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """The swap probabilities relative to the new reference ``perm`` (the released
    ``_update_ref``): pairs it swapped keep ``1 − P``, then rows and columns follow it."""
    Q = np.abs(P - inversions(perm))
    Q = Q[perm][:, perm]
    return np.triu(Q + Q.T, 1)


def merge_sample(P: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One ranking of the positions ``0..n-1`` of one copy by the recursive merge of the
    module docstring (``P``: the copy's swap probabilities, upper triangle)."""
    n = P.shape[0]
    if n <= 1:
        return np.arange(n)
    if n == 2:
        return np.array([1, 0]) if rng.random() < P[0, 1] else np.array([0, 1])
    mid = n // 2
    up = merge_sample(P[:mid, :mid], rng)
    down = merge_sample(P[mid:, mid:], rng) + mid
    merged = list(np.concatenate([up, down]))
    for i in reversed(range(mid)):
        # the next upper item's position: where this one's moves end
        end = merged.index(up[i + 1]) if i < mid - 1 else n
        if end == i + 1:
            continue
        stop = end - 1  # never refused: one place before the boundary, as released
        for j in range(i + 1, end):
            p = P[merged[i], merged[j]]
            if p == 0 or not rng.random() < p:
                stop = j
                break
        if stop > i + 1:
            merged.insert(stop - 1, merged.pop(i))
    return np.asarray(merged, dtype=np.int64)


class QueryCopies:
    """One query's ``sessions`` copies: the reference order (items sorted by score, as the
    released ``argsort()[::-1]``), the pairs that may swap, the objective."""

    def __init__(self, scores, grades, groups, table, objective: str, sessions: int):
        n = scores.size
        self.n, self.sessions = n, sessions
        first = np.argsort(scores)[::-1]
        self.reference = np.concatenate([first + c * n for c in range(sessions)])
        self.scores, self.groups = np.tile(scores, sessions), np.tile(groups, sessions)
        copy = np.repeat(np.arange(sessions), n)
        g = self.groups[self.reference]
        c = copy[self.reference]
        self.allowed = np.triu(((g[:, None] != g[None, :]) & (c[:, None] == c[None, :])) * 1.0, 1)
        self.exposure = table[:n]
        self.objective = self._eel(grades, groups) if objective == "eel" else self._dtr()

    def sample(self, P: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One ranking of every copy (positions of the reference order)."""
        n = self.n
        return np.concatenate(
            [
                merge_sample(P[c * n : (c + 1) * n, c * n : (c + 1) * n], rng) + c * n
                for c in range(self.sessions)
            ]
        )

    def ranked_items(self, order: np.ndarray) -> np.ndarray:
        """Items (0..n-1) in ranked order, one row per copy."""
        return (order.reshape(self.sessions, self.n) % self.n).astype(np.int64)

    def _group_exposure(self, order: np.ndarray) -> np.ndarray:
        """Mean over the copies of ``[E_0, E_1]`` of the ranking ``order`` (items)."""
        g = self.groups[order].reshape(self.sessions, self.n)
        e1 = float((g * self.exposure).sum()) / self.sessions
        return np.array([float(self.exposure.sum()) - e1, e1])

    def _eel(self, grades, groups) -> Callable[[np.ndarray], float]:
        levels = np.sort(grades)[::-1]
        per_level = {lv: self.exposure[levels == lv].mean() for lv in np.unique(levels)}
        item = np.array([per_level[lv] for lv in grades])
        target = np.array([item[groups == 0].sum(), item[groups == 1].sum()])

        def f(order: np.ndarray) -> float:
            return float(np.square(self._group_exposure(order) - target).sum())

        return f

    def _dtr(self) -> Callable[[np.ndarray], float]:
        u = np.array([self.scores[self.groups == 0].sum(), self.scores[self.groups == 1].sum()])

        def f(order: np.ndarray) -> float:
            ratio = np.divide(
                self._group_exposure(order) * self.sessions, u, out=np.zeros(2), where=u != 0
            )
            if ratio[0] * ratio[1] == 0:
                return 0.0
            return float(max(ratio) / min(ratio) - 1.0)

        return f
