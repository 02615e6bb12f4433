"""groupbias.rank.ranking: one within-query sort per score vector, shared by every metric.

References are per-query loops written here (tie blocks found by comparing scores, ranks by
Python's sorted), and ir_measures (pytrec_eval) for NDCG@k on long lists."""

from __future__ import annotations

import numpy as np
import pytest

import groupbias._fast.rows as R
import groupbias.evaluation.fairness as F
import groupbias.evaluation.metrics as M
from groupbias._fast import use_backend
from groupbias.core.errors import ParameterError
from groupbias.evaluation.catalog import (
    EvalSpec,
    compute_metrics,
    eel_thresholds,
)
from groupbias.rank.ranking import DeterministicRanking, argsort_order

pytestmark = pytest.mark.reproducibility


def lists(rng, n_queries, max_len, ties):
    sizes = rng.integers(0, max_len + 1, size=n_queries)
    qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(qptr[-1])
    scores = rng.integers(0, 6, size=n) / 5.0 if ties else rng.random(n)
    return scores, qptr


def ref_weights(s, k, ties, table):
    """Per-query rank weights: ``table[r - 1]`` of the rank, 0 beyond k; average ties: the
    mean over the ranks ``a + 1 .. a + c`` of the block (``a`` items score higher, ``c``
    score the same); stable ties: ranks by (score descending, position)."""
    n = s.size
    w = np.array([table[r] if (k is None or r < k) and r < table.size else 0.0 for r in range(n)])
    out = np.zeros(n)
    if ties == "stable":
        for r, i in enumerate(sorted(range(n), key=lambda i: (-s[i], i))):
            out[i] = w[r]
        return out
    for i in range(n):
        above = int(np.sum(s > s[i]))
        count = int(np.sum(s == s[i]))
        out[i] = w[above : above + count].mean()
    return out


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("max_len", [4, 70, 300])
def test_weights_match_per_query_reference(rng, ties, max_len):
    s, q = lists(rng, 40, max_len, ties)
    table = 1.0 / np.log2(np.arange(2, max_len + 2))
    geometric = 0.7 ** np.arange(max_len)
    for k in (None, 1, 3, 10, 25):
        for mode in ("average", "stable"):
            # the references (per-query loops) once, for both ways of reaching the view
            want = [
                [ref_weights(s[a:b], k, mode, t) for t in (table, geometric)]
                for a, b in zip(q[:-1], q[1:])
            ]
            for full_first in (False, True):
                r = DeterministicRanking(s, q)
                if full_first:  # the top-k view then comes from the full sort
                    r.weights(None, mode)
                dense = r.weights(k, mode).dense()
                geo = r.weights(k, mode, table=geometric).dense()
                for i, (want_dense, want_geo) in enumerate(want):
                    sl = slice(q[i], q[i + 1])
                    np.testing.assert_allclose(dense[sl], want_dense, rtol=0, atol=1e-13)
                    np.testing.assert_allclose(geo[sl], want_geo, rtol=0, atol=1e-13)


def test_sums_and_ranks(rng):
    s, q = lists(rng, 60, 90, ties=True)
    r = DeterministicRanking(s, q)
    v = rng.random(s.size)
    sizes = np.diff(q)
    qidx = np.repeat(np.arange(sizes.size), sizes)
    for k in (None, 2, 10):
        ex = r.weights(k)
        want = np.bincount(qidx, weights=v * ex.dense(), minlength=sizes.size)
        np.testing.assert_allclose(ex.sums(v), want, rtol=0, atol=1e-12)
        np.testing.assert_allclose(
            ex.sums(v, v, combine=lambda a, b: a * b),
            np.bincount(qidx, weights=v * v * ex.dense(), minlength=sizes.size),
            rtol=0,
            atol=1e-12,
        )
    ranks = r.ranks()
    for i in range(q.size - 1):
        a, b = q[i], q[i + 1]
        order = sorted(range(b - a), key=lambda j: (-s[a + j], j))
        want = np.empty(b - a, dtype=np.int64)
        want[order] = np.arange(1, b - a + 1)
        np.testing.assert_array_equal(ranks[a:b], want)


def _ir_measures_ndcg(s, lab, q, k):
    import ir_measures
    from ir_measures import nDCG

    qrels, run = [], []
    for i in range(q.size - 1):
        for j in range(q[i], q[i + 1]):
            qrels.append(ir_measures.Qrel(f"q{i}", f"d{j}", int(lab[j])))
            run.append(ir_measures.ScoredDoc(f"q{i}", f"d{j}", float(s[j])))
    measure = nDCG(gains={lv: 2**lv - 1 for lv in range(5)}) @ k
    out = np.full(q.size - 1, np.nan)
    for m in ir_measures.pytrec_eval.iter_calc([measure], qrels, run):
        out[int(m.query_id[1:])] = m.value
    return out


@pytest.mark.parametrize("k", [5, 10])
def test_ndcg_on_long_lists_matches_ir_measures(rng, k):
    # lists of 20..300 items: the padded blocks hold lists of different lengths
    sizes = rng.integers(20, 301, size=40)
    q = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(q[-1])
    s = rng.permutation(n) / n  # distinct scores, exact in float32 (pytrec_eval)
    lab = rng.choice(5, size=n, p=[0.52, 0.32, 0.13, 0.02, 0.01]).astype(float)
    ours = M.ndcg(DeterministicRanking(s, q), lab, qptr=q, k=k, reduce=None)
    theirs = _ir_measures_ndcg(s, lab, q, k)
    ok = ~np.isnan(ours)
    assert ok.sum() > 30
    np.testing.assert_allclose(ours[ok], theirs[ok], rtol=0, atol=1e-12)


def test_boundary_ties_at_the_cutoff(rng):
    # the 10th score of every list is tied with items further down: exact tie handling
    # needs the whole tie block (those rows are fully sorted)
    sizes = np.full(30, 60)
    q = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    s = np.tile(np.r_[np.linspace(1, 0.5, 9), np.full(6, 0.4), rng.random(45) * 0.3], 30)
    s[:60] = rng.random(60)  # one row without ties
    for mode in ("average", "stable"):
        dense = DeterministicRanking(s, q).weights(10, mode).dense()
        table = 1.0 / np.log2(np.arange(2, 62))
        for i in range(30):
            sl = slice(q[i], q[i + 1])
            np.testing.assert_allclose(dense[sl], ref_weights(s[sl], 10, mode, table), atol=1e-13)


def _spec(rng, n_queries=80, max_len=60):
    s, q = lists(rng, n_queries, max_len, ties=False)
    n = s.size
    lab = rng.integers(0, 5, size=n).astype(float)
    return s, EvalSpec(
        labels=lab,
        relevance=lab / 4,
        groups=(rng.random(n) < 0.4).astype(float),
        qptr=q,
        thresholds=eel_thresholds(lab, 4),
        metrics=("ndcg@10", "ndcg@10:affected", "ndcg@10:non_affected", "rho_dtr", "delta_eel"),
    )


def _count_sorts(monkeypatch):
    calls = {"packed": 0, "sort": 0}
    packed_sort, sort_rows = R._packed_sort, R._sort_rows

    def counted(name, fn):
        def call(*a, **kw):
            calls[name] += 1
            return fn(*a, **kw)

        return call

    monkeypatch.setattr(R, "_packed_sort", counted("packed", packed_sort))
    monkeypatch.setattr(R, "_sort_rows", counted("sort", sort_rows))
    return calls


def test_an_evaluation_ranks_the_scores_once(rng):
    s, spec = _spec(rng)
    blocks = R.padded_blocks(spec.qptr)
    n_sorts = len(R._merged(blocks))  # small blocks are sorted together
    assert 0 < n_sorts < len(blocks)
    with pytest.MonkeyPatch.context() as mp:
        calls = _count_sorts(mp)
        out = compute_metrics(s, spec, regime="ltr")
    # rho_dtr and delta_eel rank every item: one packed sort per merged block (no ties:
    # no exact sort), reused by NDCG@10
    assert calls == {"packed": n_sorts, "sort": 0}
    kw = {"qptr": spec.qptr, "groups": spec.groups}
    for group in ("all", "affected", "non_affected"):
        key = "ndcg@10" if group == "all" else f"ndcg@10:{group}"
        want = M.ndcg(s, spec.labels, group=group, k=10, **kw, reduce=None)
        np.testing.assert_allclose(out[key], want, rtol=0, atol=1e-12)
    want = M.rho_dtr_ranking(s, spec.relevance, **kw, reduce=None)
    np.testing.assert_allclose(out["rho_dtr"], want, rtol=0, atol=1e-12)
    # tabular: only NDCG ranks the scores; its three variants share one top-10 cut
    with pytest.MonkeyPatch.context() as mp:
        calls = _count_sorts(mp)
        compute_metrics(s, spec, regime="tabular")
    assert calls == {"packed": n_sorts, "sort": 0}
    # tied scores: the blocks with ties are ranked again exactly
    tied = np.round(s, 1)
    with pytest.MonkeyPatch.context() as mp:
        calls = _count_sorts(mp)
        compute_metrics(tied, spec, regime="ltr")
    assert calls["packed"] == n_sorts and calls["sort"] > 0


def _exact_only(mp):
    """Take the exact paths only: per-row argsort and float label sorts (the
    implementation before the packed sorts)."""
    mp.setattr(R, "_packed_sort", lambda block, scores: None)
    mp.setattr(R, "ranking_loops", lambda n_items: None)


def _metric_values(s, lab, rel, g, q):
    r = DeterministicRanking(s, q)
    kw = {"qptr": q, "groups": g}
    out = [r.ranks().astype(float), r.best(10, lambda x: np.exp2(x) - 1), r.best(None)]
    for k in (None, 1, 3, 10, 25):
        for ties in ("average", "stable"):
            e = r.weights(k, ties)
            out += [e.dense(), e.sums(lab), e.sums(lab, g, combine=lambda a, b: a * b)]
    for k in (1, 5, 10):
        for group in ("all", "affected", "non_affected"):
            for ties in ("average", "stable", "pessimistic"):
                out.append(M.ndcg(s, lab, group=group, k=k, ties=ties, **kw, reduce=None))
    out.append(M.ndcg(s, rel, k=None, gain="linear", **kw, reduce=None))
    out.append(M.rho_dtr_ranking(s, rel, **kw, reduce=None))
    out.append(M.delta_eel_ranking(s, rel, thresholds=[0.3, 0.6], **kw, reduce=None))
    m = np.stack([g, 1 - g], axis=1)
    for fn in (F.awrf, F.texfair, F.nfairr, F.arab):
        out.append(fn(s, qptr=q, membership=m, k=5, reduce=None))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_packed_sorts_give_the_exact_paths_bits(seed):
    """The packed sorts of the numpy path give every metric the same bits as its exact
    paths (per-row argsorts): random lists with ties, empty and one-item queries, scores of
    both signs and +-0 (backend numpy: the compiled loops are compared in tests/_fast)."""
    with use_backend("numpy"):
        _packed_against_exact(seed)


def _packed_against_exact(seed):
    rng = np.random.default_rng(seed)
    for trial in range(12):
        sizes = rng.integers(0, [2, 8, 40, 140][trial % 4] + 1, size=int(rng.integers(1, 60)))
        sizes[rng.random(sizes.size) < 0.1] = 1
        q = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        n = int(q[-1])
        s = [rng.random(n), rng.integers(0, 6, n) / 5.0, np.round(rng.normal(size=n), 1)][trial % 3]
        if trial % 2:  # a few ties and signed zeros among distinct scores
            s = rng.normal(size=n)
            s[rng.random(n) < 0.05] = 0.25
            s[rng.random(n) < 0.05] = -0.0
            s[rng.random(n) < 0.05] = 0.0
        lab = rng.integers(0, 5, n).astype(float)
        rel, g = lab / 4, (rng.random(n) < 0.4).astype(float)
        g[rng.random(n) < 0.1] = 0.5
        fast = _metric_values(s, lab, rel, g, q)
        with pytest.MonkeyPatch.context() as mp:
            _exact_only(mp)
            exact = _metric_values(s, lab, rel, g, q)
        for a, b in zip(fast, exact, strict=True):
            np.testing.assert_array_equal(a, b)


def test_nearly_equal_scores_take_the_exact_path():
    # scores 1 ulp apart collide once the column replaces their low bits: those rows are
    # ranked exactly, and stay in their order
    base = np.linspace(0.2, 0.9, 50)
    s = np.concatenate([base, np.nextafter(base, 1.0)])
    q = np.array([0, 100], dtype=np.int64)
    ranks = DeterministicRanking(s, q).ranks()
    np.testing.assert_array_equal(ranks, 100 - np.argsort(np.argsort(s)))


def test_ranking_accepted_by_every_ranked_metric(rng):
    s, spec = _spec(rng, n_queries=30)
    q, g = spec.qptr, spec.groups
    r = DeterministicRanking(s, q)
    m = np.stack([g, 1 - g], axis=1)
    for fn in (F.awrf, F.texfair, F.nfairr, F.arab):
        np.testing.assert_allclose(
            fn(r, qptr=q, membership=m, k=5), fn(s, qptr=q, membership=m, k=5), atol=1e-12
        )
    np.testing.assert_allclose(
        M.delta_eel_ranking(r, spec.relevance, qptr=q, groups=g, reduce=None),
        M.delta_eel_ranking(s, spec.relevance, qptr=q, groups=g, reduce=None),
        atol=1e-12,
    )


def test_bad_inputs():
    with pytest.raises(ParameterError, match="scores"):
        DeterministicRanking(np.array([0.1, np.nan]), np.array([0, 2]))
    with pytest.raises(ParameterError, match="qptr"):
        DeterministicRanking(np.array([0.1, 0.2]), np.array([0, 3]))
    r = DeterministicRanking(np.array([0.1, 0.2, 0.3]), np.array([0, 1, 3]))
    with pytest.raises(ParameterError, match="scores"):
        M.ndcg(r, np.ones(3), qptr=np.array([0, 2, 3]), reduce=None)
    with pytest.raises(ParameterError, match="ties"):
        r.weights(3, "pessimistic")
    with pytest.raises(ParameterError, match="k"):
        r.weights(0)


def test_unpad_writes_a_blocks_rows_back_to_their_items():
    """``PaddedBlock.unpad`` is the inverse of ``padded``: every item of every block gets
    its value back, contiguous blocks and blocks with padding alike, and nothing else is
    written."""
    from groupbias._fast.rows import padded_blocks

    rng = np.random.default_rng(5)
    sizes = np.concatenate([np.full(6, 7), rng.integers(0, 12, 40), [0, 30, 1]])
    qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    values = rng.random(int(qptr[-1]))
    blocks = padded_blocks(qptr)
    assert any(b.contiguous for b in blocks) and not all(b.contiguous for b in blocks)
    out = np.full(values.size, -1.0)
    for b in blocks:
        b.unpad(b.padded(values, np.nan), out)
    np.testing.assert_array_equal(out, values)


def test_argsort_order_is_numpys_reversed_argsort_of_each_query_cut_to_top_n():
    """Per query the slice's ``np.argsort()[::-1]`` (default kind, called on the slice), cut
    to ``top_n``; by hand on a tie-free query, and equal to numpy's call on tied ones."""
    scores = np.array([0.2, 0.9, 0.5, 3.0, 1.0, 1.0, 0.0, 1.0] + [1.0, 0.0] * 15)
    qptr = np.array([0, 3, 8, 38])
    index, q = argsort_order(scores, qptr, top_n=20)
    assert index[:3].tolist() == [1, 2, 0]
    assert q.tolist() == [0, 3, 8, 28]
    for a, b, c, d in ((3, 8, 3, 8), (8, 38, 8, 28)):
        want = a + np.argsort(scores[a:b])[::-1][:20]
        assert index[c:d].tolist() == want.tolist()
    full, q_full = argsort_order(scores, qptr)
    assert q_full.tolist() == qptr.tolist() and np.array_equal(full[:28], index[:28])
