"""groupbias._fast.dcg: NDCG@k by a top-k selection per query (backend numba) agrees with
the ranking path (backend numpy: padded blocks, row sorts, average ties) within the
equality contract (1e-12), on random lists with ties (in the top k, at the k-th score, deep
in the list), signed zeros, empty and one-item queries, lists of 0..300 items, every cutoff,
group and gain; queries with ties touching the selection are ranked again, and inputs the
loop does not cover take the ranking path whole. Hand values and a brute-force expectation
over tie orders are the golden values."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import groupbias._fast.dcg as D
import groupbias.evaluation.metrics as M
from groupbias._fast import use_backend
from groupbias._fast.dcg import dcg_at_k
from groupbias.rank.ranking import DeterministicRanking, rank_weights

pytestmark = pytest.mark.reproducibility

#: the contract's tolerance of metrics across paths
RTOL = 1e-12


@pytest.fixture(autouse=True)
def numba_backend():
    with use_backend("numba"):
        yield


def _selected(s, lab, q, weights, k, gain="exp2"):
    sizes = np.diff(q)
    return dcg_at_k(s, lab, q, weights, k, gain, rank_weights(int(sizes.max()), k))


def _inputs(rng, sizes, ties: str):
    q = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(q[-1])
    scores = rng.random(n)
    if ties == "coarse":  # ties everywhere: few distinct scores
        scores = np.round(scores * 20) / 20
    elif ties == "some":  # a few queries with a tie (one block redone, the others not)
        for i in rng.choice(sizes.size, 3, replace=False):
            a, b = q[i], q[i + 1]
            if b - a >= 2:
                scores[a + 1] = scores[a]
        scores[rng.random(n) < 0.01] = -0.0
        scores[rng.random(n) < 0.01] = 0.0
    labels = rng.choice(5, size=n, p=[0.5, 0.3, 0.12, 0.05, 0.03]).astype(np.float64)
    groups = (rng.random(n) < 0.3).astype(np.float64)
    return scores, labels, groups, q


def _ranking_path(monkeypatch, *args, **kw):
    with use_backend("numpy"):
        return M.ndcg(*args, **kw)


def _close(got, want):
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-15, equal_nan=True)


@pytest.mark.parametrize("ties", ["none", "some", "coarse"])
@pytest.mark.parametrize("k", [1, 5, 10, 20, None])
def test_selection_agrees_with_the_ranking_path(rng, monkeypatch, ties, k):
    sizes = np.concatenate([rng.integers(0, 301, 400), [0, 1, 1, 2, 15, 16, 17, 32, 300]])
    rng.shuffle(sizes)
    s, lab, g, q = _inputs(rng, sizes, ties)
    for group in ("all", "affected", "non_affected"):
        for gain in ("exp2", "linear"):
            kw = dict(qptr=q, groups=g, group=group, k=k, gain=gain, reduce=None)
            got = M.ndcg(s, lab, **kw)
            want = _ranking_path(monkeypatch, s, lab, **kw)
            _close(got, want)


@pytest.mark.parametrize("lengths", ["equal", "short", "long"])
def test_selection_serves_and_matches_per_block(rng, monkeypatch, lengths):
    """The loop serves these inputs (not a vacuous comparison), with and without tied
    blocks, for lists of one length (one contiguous block) and of many lengths."""
    n_q = 300
    sizes = {
        "equal": np.full(n_q, 120),
        "short": rng.integers(1, 40, n_q),
        "long": rng.integers(16, 260, n_q),
    }[lengths]
    for ties in ("none", "some"):
        s, lab, g, q = _inputs(rng, sizes, ties)
        gains = M._gain_fn("exp2", "all")
        out = _selected(s, lab, q, None, 10)
        assert out is not None
        dcg, idcg = out
        with use_backend("numpy"):
            r = DeterministicRanking(s, q)
            _close(dcg, r.weights(10, "average").sums(lab, lab, combine=gains))
            _close(idcg, DeterministicRanking(lab, q).best(10, M._base_gain("exp2")))
        got = M.ndcg(s, lab, qptr=q, k=10, reduce=None)
        _close(got, _ranking_path(monkeypatch, s, lab, qptr=q, k=10, reduce=None))


def _expected_dcg(scores, labels, ks):
    """DCG@k for every k of ``ks``, averaged over every order of the tied items (brute
    force over every order of each block of equal scores, blocks by descending score: the
    orders a stable sort of all the permutations of the list gives, each as often; one pass
    over the orders serves every k)."""
    blocks = [
        [i for i in range(len(scores)) if scores[i] == v] for v in sorted(set(scores), reverse=True)
    ]
    totals, count = dict.fromkeys(ks, 0.0), 0
    for orders in itertools.product(*(itertools.permutations(b) for b in blocks)):
        order = [i for block in orders for i in block]
        dcg = 0.0
        for r, i in enumerate(order[: max(ks)]):
            dcg += (2.0 ** labels[i] - 1) / np.log2(r + 2)
            if r + 1 in totals:
                totals[r + 1] += dcg
        count += 1
    return {k: total / count for k, total in totals.items()}


def test_ties_touching_the_selection_give_the_expected_dcg_over_tie_orders(rng):
    """A brute-force expectation over all orders of tied items (lists of 7), against the
    selection with its redo of tied queries."""
    sizes = np.full(40, 7)
    q = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    s = np.round(rng.random(q[-1]) * 4) / 4  # few distinct scores: ties everywhere
    lab = rng.integers(0, 4, q[-1]).astype(np.float64)
    want = [_expected_dcg(s[a:b], lab[a:b], (1, 3, 5)) for a, b in zip(q[:-1], q[1:])]
    for k in (1, 3, 5):
        dcg, _ = _selected(s, lab, q, None, k)
        np.testing.assert_allclose(dcg, [w[k] for w in want], rtol=1e-12)


def test_hand_computed_ndcg_through_the_selection():
    # query 0: scores rank items 2, 0, 1, 3 (labels 0, 2, 1, 0); k = 2:
    # DCG = 0 / log2(2) + 3 / log2(3); IDCG = 3 / log2(2) + 1 / log2(3)
    scores = np.array([0.5, 0.25, 0.75, 0.125] + list(np.linspace(0.9, 0.1, 20)))
    labels = np.array([2.0, 1.0, 0.0, 0.0] + [1.0] + [0.0] * 19)
    q = np.array([0, 4, 24])
    got = M.ndcg(scores, labels, qptr=q, k=2, reduce=None)
    assert got[0] == pytest.approx((3 / np.log2(3)) / (3 + 1 / np.log2(3)), rel=1e-15)
    assert got[1] == pytest.approx(1.0)


def test_inputs_the_loop_does_not_cover_take_the_ranking_path(rng):
    s, lab, g, q = _inputs(rng, rng.integers(20, 60, 50), "none")
    frac = lab + 0.5  # not grades
    assert _selected(s, frac, q, None, 10) is None
    assert _selected(s, lab, q, None, None) is None  # no cutoff
    assert _selected(s, lab, q, g * 0.5, 10) is None  # fractional weights
    assert _selected(s, lab, q, None, 200) is None  # beyond the longest cutoff
    assert _selected(s, lab * 100, q, None, 10) is None  # grades above 63
    assert _selected(s, lab, q, None, 10) is not None
    with use_backend("numpy"):  # the knob: the numpy path whatever the size
        assert _selected(s, lab, q, None, 10) is None
    # and ndcg still gives the ranking path's values there
    want = M.ndcg(s, frac, qptr=q, k=10, reduce=None)
    assert np.isfinite(want).any()


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("scores", np.nan, "finite"),
        ("scores", np.inf, "finite"),
        ("labels", np.nan, "labels"),
        ("labels", -1.0, "labels"),
        ("labels", 2000.0, "overflows"),
        ("groups", 0.5, None),  # fractional: a weight, not refused
        ("groups", np.nan, "groups"),
    ],
)
def test_values_the_loop_reads_unchecked_are_refused_as_by_the_checks(
    rng, monkeypatch, field, value, message
):
    # float64 arrays skip the element checks and go straight to the loop, which checks
    # what it reads; a value it refuses sends the call through the checks
    s, lab, g, q = _inputs(rng, rng.integers(20, 60, 50), "none")
    arrays = {"scores": s, "labels": lab, "groups": g}
    arrays[field][int(q[7]) + 3] = value
    kw = dict(qptr=q, groups=g, group="affected", k=10, reduce=None)
    if message is None:
        got = M.ndcg(s, lab, **kw)
        _close(got, _ranking_path(monkeypatch, s, lab, **kw))
        return
    with pytest.raises(M.ParameterError, match=message):
        M.ndcg(s, lab, **kw)


def test_the_unchecked_lane_serves_float64_arrays(rng, monkeypatch):
    s, lab, g, q = _inputs(rng, rng.integers(0, 200, 300), "some")
    calls = []
    real = D.dcg_at_k
    monkeypatch.setattr(D, "dcg_at_k", lambda *a, **k: calls.append(1) or real(*a, **k))
    for group, groups in (("all", None), ("affected", g), ("non_affected", g)):
        calls.clear()
        got = M.ndcg(s, lab, qptr=q, groups=groups, group=group, k=10, reduce=None)
        assert calls == [1]  # one selection, before any check of the arrays
        kw = dict(qptr=q, groups=groups, group=group, k=10, reduce=None)
        _close(got, _ranking_path(monkeypatch, s, lab, **kw))


def test_order_keys_compare_as_the_scores_do(rng):
    from groupbias._fast.ranking_loops import order_key

    x = np.concatenate(
        [
            rng.normal(size=300) * rng.choice([1e-300, 1e-5, 1.0, 1e300], 300),
            [0.0, -0.0, 5e-324, -5e-324, np.inf, -np.inf, 1.0, -1.0],
        ]
    )
    keys = np.array([order_key(b) for b in x.view(np.int64)])
    for op in (np.greater, np.equal):
        np.testing.assert_array_equal(op.outer(keys, keys), op.outer(x, x))


@pytest.mark.parametrize(
    "bad",
    [
        [0, 70, 60, 150, 200],  # decreasing, with the key (size, last) of a kept layout
        [0, 70, 90, 150, 199],  # ends before the last item
        [5, 70, 90, 150, 200],  # does not start at 0
        [0, -10, 90, 150, 200],
        [0, 70, 90, 150, 2**62],
    ],
)
def test_int64_offsets_are_refused_by_name(rng, bad):
    # int64 offsets are checked before the selection reads them, and the checks name them
    s, lab = rng.random(200), rng.integers(0, 5, 200).astype(float)
    M.ndcg(s, lab, qptr=np.array([0, 70, 90, 150, 200], dtype=np.int64), k=5)  # kept
    with pytest.raises(M.ParameterError, match="qptr"):
        M.ndcg(s, lab, qptr=np.array(bad, dtype=np.int64), k=5, reduce=None)


@pytest.mark.parametrize("fill", ["skip", "zero", "one"])
def test_queries_without_a_relevant_item_and_empty_ones_through_the_selection(
    rng, monkeypatch, fill
):
    sizes = np.array([30, 0, 25, 40, 0, 18])
    s, lab, g, q = _inputs(rng, sizes, "none")
    lab[q[2] : q[3]] = 0.0  # no relevant item
    got = M.ndcg(s, lab, qptr=q, k=10, on_no_relevant=fill, reduce=None)
    want = _ranking_path(monkeypatch, s, lab, qptr=q, k=10, on_no_relevant=fill, reduce=None)
    _close(got, want)
    assert np.isnan(got[[1, 4]]).all()  # empty queries: always NaN
    assert np.isnan(got[2]) if fill == "skip" else got[2] == (fill == "one")
