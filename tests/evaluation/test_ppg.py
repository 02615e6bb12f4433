"""groupbias.evaluation.ppg: the released permutation-graph learner, checked against hand
enumeration of its sampler, a hand computation of one update, and the released reference
rebasing; and the ``paper_code_ppg`` preset through the protocol."""

from __future__ import annotations

import math

import numpy as np
import pytest

from groupbias.core.errors import ParameterError
from groupbias.evaluation.ppg import PPGLearner, QueryCopies, inversions, merge_sample, rebase
from groupbias.evaluation.protocol import EvaluationProtocol
from groupbias.rank.ranking import log_discount
from groupbias.rank.sampled import SampledRankings


def test_the_merge_sampler_of_three_positions_has_the_enumerated_distribution():
    """Three positions: the lower pair is sampled first ([2, 1] with P12), then position 0
    moves down past the lower items one by one (each with its P), and, as released, an item
    never refused stops one place before the end. Enumerating the draws by hand:
    [0,1,2] (1-P12)(1-P01), [1,0,2] (1-P12) P01, [0,2,1] P12 (1-P02), [2,0,1] P12 P02;
    [1,2,0] and [2,1,0] never occur."""
    p01, p02, p12 = 0.3, 0.6, 0.8
    P = np.array([[0, p01, p02], [0, 0, p12], [0, 0, 0]], dtype=float)
    expected = {
        (0, 1, 2): (1 - p12) * (1 - p01),
        (1, 0, 2): (1 - p12) * p01,
        (0, 2, 1): p12 * (1 - p02),
        (2, 0, 1): p12 * p02,
    }
    rng = np.random.default_rng(0)
    n = 40_000
    counts: dict[tuple, int] = {}
    for _ in range(n):
        key = tuple(merge_sample(P, rng).tolist())
        counts[key] = counts.get(key, 0) + 1
    assert set(counts) == set(expected)
    for key, p in expected.items():
        se = math.sqrt(p * (1 - p) / n)
        assert abs(counts[key] / n - p) < 4.5 * se, (key, counts[key] / n, p)


def test_an_item_never_refused_stops_one_place_before_the_boundary():
    """With every swap certain, the released merge of [0] and [2, 1] gives [2, 0, 1]: item 0
    passes 2 and 1, yet lands before 1 (its loop ends without a refusal)."""
    P = np.triu(np.ones((3, 3)), 1)
    assert merge_sample(P, np.random.default_rng(0)).tolist() == [2, 0, 1]
    # a pair of one group (P = 0) is never passed
    P[0, 2] = 0.0
    assert merge_sample(P, np.random.default_rng(0)).tolist() == [0, 2, 1]


def test_rebase_keeps_the_swapped_pairs_complement_in_the_new_order():
    """Reference [a, b, c] with P(a,b) = 0.2, P(a,c) = 0.7, P(b,c) = 0.4; the new reference
    [b, a, c] swapped (a, b): in it P(b,a) = 0.8, P(b,c) = 0.4, P(a,c) = 0.7."""
    P = np.array([[0, 0.2, 0.7], [0, 0, 0.4], [0, 0, 0]])
    got = rebase(P, np.array([1, 0, 2]))
    want = np.array([[0, 0.8, 0.4], [0, 0, 0.7], [0, 0, 0]])
    np.testing.assert_allclose(got, want, atol=1e-15)
    assert inversions(np.array([1, 0, 2])).sum() == 1


def test_one_epoch_is_the_released_update():
    """One epoch with one sample, recomputed by hand: ``P - lr f (E/P - (1-E)/(1-P))`` on
    the pairs of different groups, then negatives to 0.05 and values >= 0.95 to 0.95, then
    the sampled ranking (the first is always better than nothing) becomes the reference."""
    scores = np.array([0.9, 0.8, 0.3])  # reference = by score: items 0, 1, 2
    groups = np.array([0.0, 1.0, 1.0])
    grades = np.array([1.0, 1.0, 0.0])
    table = log_discount(3, None, 2)
    task = QueryCopies(scores, grades, groups, table, "eel", sessions=1)
    allowed = np.array([[0, 1, 1], [0, 0, 0], [0, 0, 0]], dtype=float)
    np.testing.assert_array_equal(task.allowed, allowed)
    learner = PPGLearner(epochs=1, lr=0.1, samples=1, sessions=1, seed=0)
    P0 = allowed * 0.5
    perm = task.sample(P0, np.random.default_rng(7))  # the draw the epoch will make
    order = task.reference[perm]
    # f by hand: grades [1, 1, 0]: ranks 1-2 share (e1 + e2) / 2, the third gets e3
    e = table
    target = np.array([(e[0] + e[1]) / 2, (e[0] + e[1]) / 2 + e[2]])
    exposure = np.array([sum(e[r] for r in range(3) if groups[order[r]] == g) for g in (0, 1)])
    f = float(((exposure - target) ** 2).sum())
    P, ref, best_f, better = learner.epoch(
        task, P0, task.reference, np.inf, np.random.default_rng(7)
    )
    assert better and best_f == pytest.approx(f, abs=1e-15)
    np.testing.assert_array_equal(ref, order)
    swapped = np.array([[perm.tolist().index(j) < perm.tolist().index(i) and i < j
                         for j in range(3)] for i in range(3)])  # fmt: skip
    step = P0 - 0.1 * f * np.where(swapped, 1 / 0.5, -1 / (1 - 0.5)) * allowed
    step[step < 0] = 0.05
    step[step >= 0.95] = 0.95
    # in the new reference: the swapped pairs hold 1 - P, rows and columns reordered
    flipped = np.where(swapped, 1 - step, step) * allowed
    want = np.zeros((3, 3))
    for a in range(3):
        for b in range(a + 1, 3):
            x, y = perm[a], perm[b]
            want[a, b] = flipped[min(x, y), max(x, y)]
    np.testing.assert_allclose(P, want, atol=1e-15)


def test_fit_gives_rankings_of_every_query_and_the_same_bits_for_a_seed():
    rng = np.random.default_rng(3)
    qptr = np.array([0, 5, 12, 13])
    scores = rng.random(13)
    groups = (rng.random(13) < 0.5).astype(float)
    grades = np.floor(scores * 3)
    learner = PPGLearner(epochs=5, samples=4, sessions=3, seed=1)
    a = learner.fit(scores, grades, qptr=qptr, groups=groups)
    b = learner.fit(scores, grades, qptr=qptr, groups=groups)
    assert isinstance(a, SampledRankings) and a.sessions == 3
    np.testing.assert_array_equal(a.ranks, b.ranks)
    for s in range(3):
        for lo, hi in zip(qptr[:-1], qptr[1:]):
            assert sorted(a.ranks[s, lo:hi].tolist()) == list(range(1, hi - lo + 1))
    # the mean weight of every item over the rankings
    w = a.weights(k=None, offset=2).dense()
    table = log_discount(7, None, 2)
    np.testing.assert_allclose(w, table[a.ranks - 1].mean(axis=0), atol=1e-15)
    with pytest.raises(ParameterError, match="crisp"):
        learner.fit(scores, grades, qptr=qptr, groups=np.full(13, 0.5))


def test_the_protocol_takes_the_ppg_learner_and_refuses_keys_it_would_not_read():
    proto = EvaluationProtocol(mode="policy", learner="ppg", sessions=2, epochs=3, offset=2)
    assert proto.ppg is not None and proto.ppg.sessions == 2
    with pytest.raises(ParameterError, match="sessions"):
        EvaluationProtocol(mode="policy", sessions=2)  # a key of learner="ppg"
    with pytest.raises(ParameterError, match="level"):
        EvaluationProtocol(mode="policy", learner="ppg", level="group")  # a PL setting
    with pytest.raises(ParameterError, match="learn"):
        EvaluationProtocol(mode="policy", learner="ppg", learn=False)
