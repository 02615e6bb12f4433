"""Tests of groupbias.evaluation.metrics: NDCG, ρ(DTR), Δ(EEL) and the exposure primitives.

Golden values are hand arithmetic (written out), ir_measures (pytrec_eval), or brute force
over permutations (itertools) and per-query loops written here independently.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from groupbias import metrics as M
from groupbias.core.errors import ParameterError
from groupbias.evaluation import exposure as E
from groupbias.rank.ranking import DeterministicRanking

L2 = math.log2


def disc(r):  # exposure of 1-based rank r
    return 1.0 / L2(1 + r)


def random_data(rng, n_queries=40, max_len=12, ties=False, with_empty=True):
    sizes = rng.integers(0 if with_empty else 1, max_len + 1, size=n_queries)
    qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(qptr[-1])
    scores = rng.integers(0, 4, size=n).astype(float) if ties else rng.random(n)
    labels = rng.integers(0, 5, size=n).astype(float)
    groups = (rng.random(n) < 0.4).astype(float)
    return scores, labels, qptr, groups


# ----------------------------------------------------------------------------- reference


def ref_dcg(gains_in_rank_order, k):
    return sum(
        g * disc(r) for r, g in enumerate(gains_in_rank_order, start=1) if k is None or r <= k
    )


def ref_ndcg_query(s, lab, w, k, gain, ties):
    """Per-query NDCG by brute force over the tie-respecting permutations."""
    gains = (2.0**lab - 1.0 if gain == "exp2" else lab.astype(float)) * w
    n = len(s)
    ideal = ref_dcg(sorted(gains, reverse=True), k)
    if ideal == 0:
        return math.nan
    if ties == "stable":
        order = sorted(range(n), key=lambda i: (-s[i], i))
        return ref_dcg([gains[i] for i in order], k) / ideal
    dcgs = [
        ref_dcg([gains[i] for i in p], k)
        for p in itertools.permutations(range(n))
        if all(s[p[j]] >= s[p[j + 1]] for j in range(n - 1))
    ]
    return (np.mean(dcgs) if ties == "average" else min(dcgs)) / ideal


def ref_expected_exposure(key, k):
    """Mean exposure of every item over all rankings sorted by ``key`` (descending) where
    tied items are permuted: enumeration of all n! permutations."""
    n = len(key)
    total = np.zeros(n)
    count = 0
    for p in itertools.permutations(range(n)):
        if all(key[p[j]] >= key[p[j + 1]] for j in range(n - 1)):
            for r, i in enumerate(p, start=1):
                total[i] += disc(r) if (k is None or r <= k) else 0.0
            count += 1
    return total / count


# ----------------------------------------------------------------------------- NDCG


def test_ndcg_hand_computed_exp2_and_linear():
    # ranking by score: d2 (label 0), d3 (label 1), d1 (label 2)
    s = np.array([0.1, 0.9, 0.5])
    lab = np.array([2.0, 0.0, 1.0])
    q = np.array([0, 3])
    # exp2: DCG = 0/log2(2) + 1/log2(3) + 3/log2(4); IDCG = 3/log2(2) + 1/log2(3)
    exp2 = (1 / L2(3) + 3 / 2) / (3 + 1 / L2(3))
    # linear: DCG = 1/log2(3) + 2/2; IDCG = 2 + 1/log2(3)
    lin = (1 / L2(3) + 1) / (2 + 1 / L2(3))
    assert M.ndcg(s, lab, qptr=q) == pytest.approx(exp2, abs=1e-12)
    assert M.ndcg(s, lab, qptr=q, gain="linear") == pytest.approx(lin, abs=1e-12)
    # cutoff 2: DCG@2 = 1/log2(3); IDCG@2 = 3 + 1/log2(3)
    assert M.ndcg(s, lab, qptr=q, k=2) == pytest.approx((1 / L2(3)) / (3 + 1 / L2(3)))
    # k=1: the top item has label 0
    assert M.ndcg(s, lab, qptr=q, k=1) == 0.0


def test_ndcg_group_hand_computed():
    # items: (score, label, group) ranked a, b, c, d
    s = np.array([4.0, 3.0, 2.0, 1.0])
    lab = np.array([1.0, 2.0, 2.0, 1.0])
    g = np.array([0.0, 1.0, 0.0, 1.0])
    q = np.array([0, 4])
    # affected: gains (exp2) 0, 3, 0, 1 at ranks 1..4 -> DCG = 3/log2(3) + 1/log2(5)
    # IDCG = 3/log2(2) + 1/log2(3)
    aff = (3 / L2(3) + 1 / L2(5)) / (3 + 1 / L2(3))
    # non-affected: gains 1, 0, 3, 0 -> DCG = 1 + 3/2; IDCG = 3 + 1/log2(3)
    non = (1 + 3 / 2) / (3 + 1 / L2(3))
    assert M.ndcg(s, lab, qptr=q, groups=g, group="affected") == pytest.approx(aff)
    assert M.ndcg(s, lab, qptr=q, groups=g, group="non_affected") == pytest.approx(non)
    # probabilistic membership weights the gains: g = 0.5 everywhere halves every gain,
    # which cancels in the ratio
    half = np.full(4, 0.5)
    assert M.ndcg(s, lab, qptr=q, groups=half, group="affected") == pytest.approx(
        M.ndcg(s, lab, qptr=q)
    )


def _ir_measures_ndcg(scores, labels, qptr, k, gain, weight=None):
    ir_measures = pytest.importorskip("ir_measures")
    from ir_measures import nDCG

    qrels, run = [], []
    for qi in range(qptr.size - 1):
        for i in range(qptr[qi], qptr[qi + 1]):
            rel = labels[i] if weight is None else labels[i] * weight[i]
            qrels.append(ir_measures.Qrel(f"q{qi}", f"d{i}", int(rel)))
            run.append(ir_measures.ScoredDoc(f"q{qi}", f"d{i}", float(scores[i])))
    if gain == "linear":
        measure = nDCG if k is None else nDCG @ k
    else:  # exp2 through an explicit gain map (pytrec_eval's default gain is linear)
        gains = {lv: 2**lv - 1 for lv in range(5)}
        measure = nDCG(gains=gains) if k is None else nDCG(gains=gains) @ k
    out = np.full(qptr.size - 1, np.nan)
    for m in ir_measures.pytrec_eval.iter_calc([measure], qrels, run):
        out[int(m.query_id[1:])] = m.value
    return out


@pytest.mark.parametrize("k", [None, 3, 10])
@pytest.mark.parametrize("gain", ["exp2", "linear"])
def test_ndcg_matches_ir_measures(rng, k, gain):
    s, lab, q, g = random_data(rng, n_queries=60, max_len=15, with_empty=False)
    ours = M.ndcg(s, lab, qptr=q, k=k, gain=gain, reduce=None)
    theirs = _ir_measures_ndcg(s, lab, q, k, gain)
    has_rel = (
        np.bincount(np.repeat(np.arange(q.size - 1), np.diff(q)), weights=lab, minlength=q.size - 1)
        > 0
    )
    assert has_rel.sum() > 40
    np.testing.assert_allclose(ours[has_rel], theirs[has_rel], rtol=0, atol=1e-12)
    assert np.all(np.isnan(ours[~has_rel]))  # default: skip queries without relevant items
    # the affected-group NDCG equals plain NDCG with the other group's labels set to 0
    ours_a = M.ndcg(s, lab, qptr=q, groups=g, group="affected", k=k, gain=gain, reduce=None)
    theirs_a = _ir_measures_ndcg(s, lab, q, k, gain, weight=g)
    ok = ~np.isnan(ours_a)
    assert ok.sum() > 20
    np.testing.assert_allclose(ours_a[ok], theirs_a[ok], rtol=0, atol=1e-12)


@pytest.mark.parametrize("ties", ["average", "stable", "pessimistic"])
@pytest.mark.parametrize("k", [None, 2])
def test_ndcg_ties_brute_force(rng, ties, k):
    s, lab, q, g = random_data(rng, n_queries=25, max_len=6, ties=True)
    ours = M.ndcg(s, lab, qptr=q, k=k, ties=ties, reduce=None)
    ours_n = M.ndcg(s, lab, qptr=q, groups=g, group="non_affected", k=k, ties=ties, reduce=None)
    for qi in range(q.size - 1):
        sl = slice(q[qi], q[qi + 1])
        ref = ref_ndcg_query(s[sl], lab[sl], np.ones(q[qi + 1] - q[qi]), k, "exp2", ties)
        ref_n = ref_ndcg_query(s[sl], lab[sl], 1 - g[sl], k, "exp2", ties)
        np.testing.assert_allclose(ours[qi], ref, atol=1e-12)
        np.testing.assert_allclose(ours_n[qi], ref_n, atol=1e-12)


def test_ndcg_tie_hand_case():
    # two tied items, labels 1 and 0: average of the two orders
    s = np.array([1.0, 1.0])
    lab = np.array([0.0, 1.0])
    q = np.array([0, 2])
    # stable: label 0 first -> DCG = 1/log2(3); pessimistic is the same order
    assert M.ndcg(s, lab, qptr=q, ties="stable") == pytest.approx(1 / L2(3))
    assert M.ndcg(s, lab, qptr=q, ties="pessimistic") == pytest.approx(1 / L2(3))
    # average: (1 + 1/log2(3)) / 2, IDCG = 1
    assert M.ndcg(s, lab, qptr=q, ties="average") == pytest.approx((1 + 1 / L2(3)) / 2)
    # stable follows the input order: swapping the items gives the ideal order
    assert M.ndcg(s[::-1].copy(), lab[::-1].copy(), qptr=q, ties="stable") == 1.0


def test_ndcg_no_relevant_policies_and_empty_queries():
    s = np.array([0.3, 0.2, 0.9, 0.1])
    lab = np.array([0.0, 0.0, 1.0, 0.0])
    q = np.array([0, 2, 2, 4])  # query 1 is empty; query 0 has no relevant item
    # query 2: ranking (label 1, label 0) is ideal
    np.testing.assert_array_equal(M.ndcg(s, lab, qptr=q, reduce=None), [np.nan, np.nan, 1.0])
    np.testing.assert_array_equal(
        M.ndcg(s, lab, qptr=q, on_no_relevant="zero", reduce=None), [0.0, np.nan, 1.0]
    )
    np.testing.assert_array_equal(
        M.ndcg(s, lab, qptr=q, on_no_relevant="one", reduce=None), [1.0, np.nan, 1.0]
    )
    assert M.ndcg(s, lab, qptr=q, on_no_relevant="zero") == 0.5  # (0 + 1) / 2
    assert M.ndcg(s, lab, qptr=q) == 1.0
    assert math.isnan(M.ndcg(s, np.zeros(4), qptr=q))  # every query skipped


def test_ndcg_invariants(rng):
    s, lab, q, g = random_data(rng, n_queries=50, max_len=10, ties=True)
    base = M.ndcg(s, lab, qptr=q, k=5, reduce=None)
    ok = ~np.isnan(base)
    assert np.all((base[ok] >= 0) & (base[ok] <= 1 + 1e-12))
    # strictly increasing transform of the scores changes nothing
    np.testing.assert_allclose(
        M.ndcg(np.exp(3 * s) - 7, lab, qptr=q, k=5, reduce=None), base, atol=1e-12
    )
    # ties="average" does not depend on the item order within a query
    perm = np.concatenate(
        [q[i] + rng.permutation(q[i + 1] - q[i]) for i in range(q.size - 1)]
    ).astype(np.int64)
    np.testing.assert_allclose(
        M.ndcg(s[perm], lab[perm], qptr=q, k=5, reduce=None), base, atol=1e-12
    )
    # scoring by the labels is ideal
    np.testing.assert_allclose(M.ndcg(lab, lab, qptr=q, reduce=None)[ok], 1.0, atol=1e-12)
    # group NDCGs are in [0, 1] as well
    for grp in ("affected", "non_affected"):
        v = M.ndcg(s, lab, qptr=q, groups=g, group=grp, k=5, reduce=None)
        assert np.all((v[~np.isnan(v)] >= 0) & (v[~np.isnan(v)] <= 1 + 1e-12))


# ----------------------------------------------------------------------------- exposure


@pytest.mark.parametrize("k", [None, 1, 3])
def test_expected_exposure_brute_force(rng, k):
    for _ in range(30):
        n = int(rng.integers(1, 7))
        grades = rng.integers(0, 3, size=n).astype(float)
        q = np.array([0, n])
        ours = E.target_exposure(grades, qptr=q, k=k)
        np.testing.assert_allclose(ours, ref_expected_exposure(grades, k), atol=1e-12)


def test_exposure_paths_agree(rng):
    # integer keys take the counting path; the same ranking with non-integer keys (or a
    # wide integer range) takes the sorting path; both equal the brute force
    s, lab, q, g = random_data(rng, n_queries=50, max_len=7, ties=True)
    for k in (None, 2):
        counted = E.target_exposure(s, qptr=q, k=k)
        sorted_ = E.target_exposure(s / 3 + 0.1, qptr=q, k=k)
        wide = E.target_exposure(s * 1000.0, qptr=q, k=k)
        np.testing.assert_allclose(sorted_, counted, atol=1e-12)
        np.testing.assert_allclose(wide, counted, atol=1e-12)
        for qi in range(q.size - 1):
            sl = slice(q[qi], q[qi + 1])
            if q[qi + 1] > q[qi]:
                np.testing.assert_allclose(counted[sl], ref_expected_exposure(s[sl], k), atol=1e-12)


@pytest.mark.parametrize("n_queries", [7, 70_000])
def test_order_matches_segments_sort_within(rng, n_queries):
    from groupbias.core.segments import query_index, sort_within

    sizes = rng.integers(0, 4, size=n_queries)
    q = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    s = rng.integers(0, 3, size=int(q[-1])) / 2.0  # many ties
    qidx = query_index(q)
    order = sort_within(s, q)
    ranks = np.empty(order.size, dtype=np.int64)
    ranks[order] = np.arange(order.size) - q[qidx[order]] + 1
    np.testing.assert_array_equal(DeterministicRanking(s, q).ranks(), ranks)
    # stable ties: ranks follow the original position among tied items
    np.testing.assert_allclose(
        E.expected_exposure(s, qptr=q, ties="stable")[:50],
        E.position_exposure(np.argsort(sort_within(s, q))[:50] + 1 - q[qidx[:50]]),
        atol=0,
    )


def test_exposure_hand_case_and_total():
    grades = np.array([0.0, 1.0, 0.0, 1.0, 1.0])
    q = np.array([0, 5])
    # grade 1 occupies ranks 1..3, grade 0 ranks 4..5
    hi = (1 + 1 / L2(3) + 1 / 2) / 3
    lo = (1 / L2(5) + 1 / L2(6)) / 2
    np.testing.assert_allclose(E.target_exposure(grades, qptr=q), [lo, hi, lo, hi, hi])
    # stable ties: original position breaks ties
    np.testing.assert_allclose(
        E.expected_exposure(grades, qptr=q, ties="stable"),
        [disc(4), disc(1), disc(5), disc(2), disc(3)],
    )
    # tie averaging preserves the total exposure
    assert E.target_exposure(grades, qptr=q).sum() == pytest.approx(
        sum(disc(r) for r in range(1, 6))
    )
    np.testing.assert_allclose(E.position_exposure(np.array([1, 2, 3]), k=2), [1.0, 1 / L2(3), 0.0])


def test_group_exposure():
    e = np.array([1.0, 0.5, 0.25, 2.0])
    g = np.array([1.0, 0.0, 0.5, 0.0])
    q = np.array([0, 3, 4])
    # query 0: E_A = 1 + 0.125, E_N = 0.5 + 0.125; query 1: E_A = 0, E_N = 2
    np.testing.assert_allclose(E.group_exposure(e, g, qptr=q), [[1.125, 0.625], [0.0, 2.0]])


def test_discretize():
    s = np.array([0.0, 0.49, 0.5, 0.51, 1.0])
    np.testing.assert_array_equal(E.discretize(s), [0, 0, 1, 1, 1])
    np.testing.assert_array_equal(E.discretize(s, thresholds=(0.25, 0.5, 0.75)), [0, 1, 2, 2, 3])
    # levels=4 -> thresholds 0.25, 0.5, 0.75
    np.testing.assert_array_equal(E.discretize(s, levels=4), [0, 1, 2, 2, 3])
    np.testing.assert_array_equal(E.discretize(s, levels=2), E.discretize(s))
    with pytest.raises(ParameterError, match="levels"):
        E.discretize(s, thresholds=(0.5,), levels=2)
    with pytest.raises(ParameterError, match="thresholds"):
        E.discretize(s, thresholds=(0.5, 0.2))
    with pytest.raises(ParameterError, match="thresholds"):
        E.discretize(s, thresholds="high")
    with pytest.raises(ParameterError, match="levels"):
        E.discretize(s, levels=1)


# ----------------------------------------------------------------------------- DTR


def test_rho_dtr_tabular_hand_cases():
    q = np.array([0, 4, 8])
    g = np.array([1, 1, 0, 0, 1, 0, 0, 0], dtype=float)
    true = np.array([1.0, 0.0, 1.0, 1.0, 0.6, 0.3, 0.3, 0.0])
    # query 0: affected attractiveness scaled by beta = 0.8 -> r = (0.8/2)/(1/2) = 0.8
    # query 1: affected over-estimated by 1.25 -> r = 1.25, rho = 1/1.25 = 0.8
    est = np.array([0.8, 0.0, 1.0, 1.0, 0.75, 0.3, 0.3, 0.0])
    np.testing.assert_allclose(
        M.rho_dtr_tabular(est, true, qptr=q, groups=g, reduce=None), [0.8, 0.8]
    )
    assert M.rho_dtr_tabular(est, true, qptr=q, groups=g) == pytest.approx(0.8)
    # amortized: U_A = 1 + 0.6, U_N = 2 + 0.6, Ũ_A = 0.8 + 0.75, Ũ_N = 2.6
    r = ((0.8 + 0.75) / 2.6) / (1.6 / 2.6)
    assert M.rho_dtr_tabular(est, true, qptr=q, groups=g, reduce="amortized") == pytest.approx(
        min(r, 1 / r)
    )
    # exact estimate -> 1; scaling each input by a constant changes nothing
    np.testing.assert_allclose(M.rho_dtr_tabular(true, true, qptr=q, groups=g, reduce=None), 1)
    np.testing.assert_allclose(
        M.rho_dtr_tabular(3 * est, 0.5 * true, qptr=q, groups=g, reduce=None), [0.8, 0.8]
    )


def test_rho_dtr_tabular_per_query_beta_noise_reproduces_table1_scale(rng):
    # Ũ_A = beta_q U_A with beta_q ~ N(0.8, 0.1) per query: per-query rho = min(b, 1/b)
    n_q, size = 500, 10
    q = np.arange(n_q + 1, dtype=np.int64) * size
    g = np.tile(np.r_[np.ones(5), np.zeros(5)], n_q)
    true = rng.random(n_q * size) + 0.01
    beta = rng.normal(0.8, 0.1, size=n_q)
    est = true * np.where(g == 1, np.repeat(beta, size), 1.0)
    rho = M.rho_dtr_tabular(est, true, qptr=q, groups=g, reduce=None)
    np.testing.assert_allclose(rho, np.minimum(beta, 1 / beta), atol=1e-12)


def test_rho_dtr_degenerate_queries():
    # q0: no affected item; q1: affected items without utility, estimate agrees (0);
    # q2: affected items without utility but estimated positive; q3: no utility at all;
    # q4: empty
    q = np.array([0, 2, 4, 6, 8, 8])
    g = np.array([0, 0, 1, 0, 1, 0, 1, 0], dtype=float)
    true = np.array([1.0, 0.5, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0])
    est = np.array([0.9, 0.5, 0.0, 1.0, 0.2, 1.0, 0.3, 0.0])
    np.testing.assert_array_equal(
        M.rho_dtr_tabular(est, true, qptr=q, groups=g, reduce=None), [1.0, 1.0, 0.0, np.nan, np.nan]
    )
    np.testing.assert_array_equal(
        M.rho_dtr_tabular(est, true, qptr=q, groups=g, on_zero_utility="skip", reduce=None),
        [np.nan] * 5,
    )
    assert M.rho_dtr_tabular(est, true, qptr=q, groups=g) == pytest.approx(2 / 3)
    # no estimated utility at all while the truth has some -> NaN
    np.testing.assert_array_equal(
        M.rho_dtr_tabular(
            np.zeros(2),
            np.array([1.0, 1.0]),
            qptr=np.array([0, 2]),
            groups=np.array([1.0, 0.0]),
            reduce=None,
        ),
        [np.nan],
    )


def test_rho_dtr_ranking_hand_case():
    # ranking A1, N1, A2, N2 (ranks 1..4)
    s = np.array([4.0, 2.0, 3.0, 1.0])
    g = np.array([1.0, 1.0, 0.0, 0.0])
    true = np.array([1.0, 1.0, 2.0, 0.0])
    q = np.array([0, 4])
    ea = 1 + 1 / 2  # ranks 1 and 3
    en = 1 / L2(3) + 1 / L2(5)  # ranks 2 and 4
    r = (ea / 2.0) / (en / 2.0)  # U_A = 2, U_N = 2
    assert M.rho_dtr_ranking(s, true, qptr=q, groups=g) == pytest.approx(min(r, 1 / r))
    # cutoff k = 2: E_A = 1, E_N = 1/log2(3)
    r2 = (1 / 2.0) / ((1 / L2(3)) / 2.0)
    assert M.rho_dtr_ranking(s, true, qptr=q, groups=g, k=2) == pytest.approx(min(r2, 1 / r2))
    # k = 1: the non-affected group gets no exposure but has utility -> rho = 0
    assert M.rho_dtr_ranking(s, true, qptr=q, groups=g, k=1) == 0.0


def test_rho_dtr_ranking_matches_loop(rng):
    s, lab, q, g = random_data(rng, n_queries=60, max_len=10, ties=True)
    g = rng.random(g.size)  # probabilistic membership
    for k in (None, 3):
        ours = M.rho_dtr_ranking(s, lab, qptr=q, groups=g, k=k, reduce=None)
        for qi in range(q.size - 1):
            sl = slice(q[qi], q[qi + 1])
            if q[qi + 1] == q[qi] or lab[sl].sum() == 0:
                assert math.isnan(ours[qi])
                continue
            e = ref_expected_exposure(s[sl], k) if q[qi + 1] - q[qi] <= 7 else None
            if e is None:
                continue
            ea, en = (e * g[sl]).sum(), (e * (1 - g[sl])).sum()
            ua, un = (lab[sl] * g[sl]).sum(), (lab[sl] * (1 - g[sl])).sum()
            r = (ea / ua) / (en / un)
            assert ours[qi] == pytest.approx(min(r, 1 / r), abs=1e-12)


def test_rho_dtr_bounds_and_amortized(rng):
    s, lab, q, g = random_data(rng, n_queries=80, max_len=12)
    rho = M.rho_dtr_ranking(s, lab, qptr=q, groups=g, k=5, reduce=None)
    ok = ~np.isnan(rho)
    assert ok.sum() > 40 and np.all((rho[ok] >= 0) & (rho[ok] <= 1))
    e = E.expected_exposure(s, qptr=q, k=5)
    ea, en = (e * g).sum(), (e * (1 - g)).sum()
    ua, un = (lab * g).sum(), (lab * (1 - g)).sum()
    r = (ea / ua) / (en / un)
    assert M.rho_dtr_ranking(s, lab, qptr=q, groups=g, k=5, reduce="amortized") == pytest.approx(
        min(r, 1 / r)
    )


# ----------------------------------------------------------------------------- EEL


def test_delta_eel_tabular_hand_case():
    g = np.array([1.0, 0.0, 1.0, 0.0])
    true = np.array([0.9, 0.8, 0.1, 0.2])  # grades 1, 1, 0, 0
    est = np.array([0.45, 0.8, 0.1, 0.2])  # affected item 0 dampened below a* = 0.5
    q = np.array([0, 4])
    # truth: grade-1 block = ranks 1-2, grade-0 block = ranks 3-4
    top, bottom = (1 + 1 / L2(3)) / 2, (1 / 2 + 1 / L2(5)) / 2
    ta, tn = top + bottom, top + bottom
    # estimate: item 1 alone at rank 1; items 0, 2, 3 share ranks 2-4
    rest = (1 / L2(3) + 1 / 2 + 1 / L2(5)) / 3
    ea, en = 2 * rest, 1 + rest
    delta = abs(ea - ta)
    assert abs(en - tn) == pytest.approx(delta)  # both components move by ±delta
    kw = dict(qptr=q, groups=g)
    assert M.delta_eel_tabular(est, true, **kw) == pytest.approx(math.sqrt(2) * delta)
    assert M.delta_eel_tabular(est, true, distance="l1", **kw) == pytest.approx(2 * delta)
    assert M.delta_eel_tabular(est, true, distance="sq_l2", **kw) == pytest.approx(2 * delta**2)
    # a threshold below 0.45 keeps item 0 relevant: no change
    assert M.delta_eel_tabular(est, true, thresholds=(0.4,), **kw) == 0.0
    # cutoff k = 1: truth gives ranks 1-2 block (1 + 0) / 2 each -> E_A = E_N = 0.5;
    # estimate gives item 1 exposure 1 -> E_A = 0, E_N = 1
    assert M.delta_eel_tabular(est, true, k=1, **kw) == pytest.approx(math.sqrt(0.5))


def test_delta_eel_invariants(rng):
    s, lab, q, g = random_data(rng, n_queries=60, max_len=12, ties=True)
    rel = lab / 4.0
    kw = dict(qptr=q, groups=g)
    d0 = M.delta_eel_tabular(rel, rel, **kw, reduce=None)
    assert np.nanmax(d0) == 0.0 and np.isnan(d0[np.diff(q) == 0]).all()
    est = rel * np.where(g == 1, 0.6, 1.0)
    d = M.delta_eel_tabular(est, rel, **kw, reduce=None)
    ok = ~np.isnan(d)
    # bounded by √2 × the total exposure of the query
    total = np.array([sum(disc(r) for r in range(1, m + 1)) for m in np.diff(q)])
    assert np.all(d[ok] >= 0) and np.all(d[ok] <= math.sqrt(2) * total[ok] + 1e-12)
    assert np.any(d[ok] > 0)
    # permuting items within queries changes nothing (tie blocks are order-free)
    perm = np.concatenate(
        [q[i] + rng.permutation(q[i + 1] - q[i]) for i in range(q.size - 1)]
    ).astype(np.int64)
    np.testing.assert_allclose(
        M.delta_eel_tabular(est[perm], rel[perm], qptr=q, groups=g[perm], reduce=None),
        d,
        atol=1e-12,
    )
    np.testing.assert_allclose(
        M.delta_eel_ranking(s[perm], rel[perm], qptr=q, groups=g[perm], reduce=None),
        M.delta_eel_ranking(s, rel, **kw, reduce=None),
        atol=1e-12,
    )
    # a monotone transform of the estimate that keeps the grades keeps Δ
    np.testing.assert_allclose(
        M.delta_eel_tabular(est**0.5, rel**0.5, **kw, reduce=None)[ok],
        M.delta_eel_tabular(est, rel, thresholds=(0.25,), **kw, reduce=None)[ok],
        atol=1e-12,
    )
    # aggregates
    assert M.delta_eel_tabular(est, rel, **kw) == pytest.approx(d[ok].mean())
    assert M.delta_eel_tabular(est, rel, reduce="sum", **kw) == pytest.approx(d[ok].sum())


def test_delta_eel_ranking_matches_brute_force(rng):
    s, lab, q, g = random_data(rng, n_queries=40, max_len=7, ties=True)
    g = rng.random(g.size)
    for k, disc_true in ((None, True), (2, True), (None, False)):
        ours = M.delta_eel_ranking(
            s,
            lab / 4.0 if disc_true else lab,
            qptr=q,
            groups=g,
            k=k,
            discretize_true=disc_true,
            reduce=None,
        )
        for qi in range(q.size - 1):
            sl = slice(q[qi], q[qi + 1])
            if q[qi + 1] == q[qi]:
                assert math.isnan(ours[qi])
                continue
            grades = (lab[sl] / 4.0 >= 0.5).astype(float) if disc_true else lab[sl]
            target = ref_expected_exposure(grades, k)
            model = ref_expected_exposure(s[sl], k)
            da = ((model - target) * g[sl]).sum()
            dn = ((model - target) * (1 - g[sl])).sum()
            assert ours[qi] == pytest.approx(math.hypot(da, dn), abs=1e-12)


def test_delta_eel_ranking_perfect_and_single_group():
    # a ranking by the true grades with ties broken arbitrarily gets the target per group
    # only in expectation; with ties="average" the model exposure equals the target
    true = np.array([1.0, 0.0, 1.0, 0.0, 1.0])
    g = np.array([1.0, 1.0, 0.0, 0.0, 0.0])
    q = np.array([0, 5])
    assert M.delta_eel_ranking(true, true, qptr=q, groups=g) == pytest.approx(0.0, abs=1e-15)
    # deterministic ranking 0, 2, 4, 1, 3 (stable ties): E_A = e1 + e4 vs the target
    # E*_A = (e1 + e2 + e3) / 3 + (e4 + e5) / 2
    ea = disc(1) + disc(4)
    ta = (disc(1) + disc(2) + disc(3)) / 3 + (disc(4) + disc(5)) / 2
    assert M.delta_eel_ranking(true, true, qptr=q, groups=g, ties="stable") == pytest.approx(
        math.sqrt(2) * abs(ea - ta)
    )
    # a one-group query beside a two-group one: Δ = 0 counted, or skipped
    one = np.ones(5)
    both = np.r_[true, true]
    q2 = np.array([0, 5, 10])
    mixed = np.r_[one, g]
    per_query = M.delta_eel_ranking(-both, both, qptr=q2, groups=mixed, reduce=None)
    assert per_query[0] == pytest.approx(0, abs=1e-12) and per_query[1] > 0
    skipped = M.delta_eel_ranking(
        -both, both, qptr=q2, groups=mixed, on_single_group="skip", reduce=None
    )
    assert np.isnan(skipped[0]) and skipped[1] == per_query[1]
    skipped = M.delta_eel_tabular(
        both, both, qptr=q2, groups=1 - mixed, on_single_group="skip", reduce=None
    )
    assert np.isnan(skipped[0])
    # data where every query holds one group: refused, not "perfectly fair"
    for metric in (M.delta_eel_ranking, M.delta_eel_tabular):
        with pytest.raises(ParameterError, match="every query holds one group"):
            metric(-true, true, qptr=q, groups=one)


# ----------------------------------------------------------------------------- validation


def test_vectorized_matches_per_query_calls(rng):
    # computing all queries at once equals computing each query on its own
    s, lab, q, g = random_data(rng, n_queries=30, max_len=9, ties=True)
    rel = lab / 4.0
    allq = {
        "ndcg": M.ndcg(s, lab, qptr=q, groups=g, group="affected", k=3, reduce=None),
        "dtr_t": M.rho_dtr_tabular(rel * (1 - 0.3 * g), rel, qptr=q, groups=g, reduce=None),
        "dtr_r": M.rho_dtr_ranking(s, rel, qptr=q, groups=g, k=4, reduce=None),
        "eel_t": M.delta_eel_tabular(rel * (1 - 0.3 * g), rel, qptr=q, groups=g, reduce=None),
        "eel_r": M.delta_eel_ranking(s, rel, qptr=q, groups=g, k=4, reduce=None),
    }
    for qi in range(q.size - 1):
        sl = slice(q[qi], q[qi + 1])
        one = np.array([0, q[qi + 1] - q[qi]])
        single = {
            "ndcg": M.ndcg(
                s[sl], lab[sl], qptr=one, groups=g[sl], group="affected", k=3, reduce=None
            ),
            "dtr_t": M.rho_dtr_tabular(
                (rel * (1 - 0.3 * g))[sl], rel[sl], qptr=one, groups=g[sl], reduce=None
            ),
            "dtr_r": M.rho_dtr_ranking(s[sl], rel[sl], qptr=one, groups=g[sl], k=4, reduce=None),
            "eel_t": M.delta_eel_tabular(
                (rel * (1 - 0.3 * g))[sl], rel[sl], qptr=one, groups=g[sl], reduce=None
            ),
            "eel_r": M.delta_eel_ranking(s[sl], rel[sl], qptr=one, groups=g[sl], k=4, reduce=None),
        }
        for name, v in single.items():
            np.testing.assert_allclose(allq[name][qi], v[0], atol=1e-12, err_msg=name)


def test_inputs_not_mutated(rng):
    s, lab, q, g = random_data(rng, n_queries=10, max_len=8, ties=True)
    copies = [a.copy() for a in (s, lab, q, g)]
    M.ndcg(s, lab, qptr=q, groups=g, group="affected", ties="pessimistic")
    M.rho_dtr_ranking(s, lab, qptr=q, groups=g)
    M.delta_eel_ranking(s, lab / 4, qptr=q, groups=g)
    M.delta_eel_tabular(s / 4, lab / 4, qptr=q, groups=g)
    for a, b in zip((s, lab, q, g), copies):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda s, l, q, g: M.ndcg(s, l, qptr=q, k=0), "k"),
        (lambda s, l, q, g: M.ndcg(s, l, qptr=q, k=True), "k"),
        (lambda s, l, q, g: M.ndcg(s, l, qptr=q, k=2.0), "k"),
        (lambda s, l, q, g: M.ndcg(s, l, qptr=np.array([0, 2]), k=2), "qptr"),
        (lambda s, l, q, g: M.ndcg(s, l[:-1], qptr=q), "labels"),
        (lambda s, l, q, g: M.ndcg(s.reshape(1, -1), l, qptr=q), "scores"),
        (lambda s, l, q, g: M.ndcg(np.r_[np.nan, s[1:]], l, qptr=q), "scores"),
        (lambda s, l, q, g: M.ndcg(s, -l, qptr=q), "labels"),
        (lambda s, l, q, g: M.ndcg(s, l, qptr=q, gain="exp"), "gain"),
        (lambda s, l, q, g: M.ndcg(s, l, qptr=q, ties="random"), "ties"),
        (lambda s, l, q, g: M.ndcg(s, l, qptr=q, on_no_relevant="nan"), "on_no_relevant"),
        (lambda s, l, q, g: M.ndcg(s, l, qptr=q, group="affected"), "groups"),
        (lambda s, l, q, g: M.ndcg(s, l, qptr=q, groups=g, group="A"), "group"),
        (lambda s, l, q, g: M.ndcg(s, l, qptr=q, groups=g + 1, group="affected"), "groups"),
        (
            lambda s, l, q, g: M.rho_dtr_tabular(s, l, qptr=q, groups=g, reduce="sum"),
            "reduce",
        ),
        (lambda s, l, q, g: M.rho_dtr_tabular(-s, l, qptr=q, groups=g), "estimated_utility"),
        (lambda s, l, q, g: M.rho_dtr_ranking(s, l, qptr=q, groups=None), "groups"),
        (lambda s, l, q, g: M.rho_dtr_ranking(s, l, qptr=q, groups=g, ties="pessimistic"), "ties"),
        (
            lambda s, l, q, g: M.rho_dtr_ranking(s, l, qptr=q, groups=g, on_zero_utility="half"),
            "on_zero_utility",
        ),
        (lambda s, l, q, g: M.delta_eel_tabular(s, l, qptr=q, groups=g, distance="l3"), "distance"),
        (
            lambda s, l, q, g: M.delta_eel_tabular(s, l, qptr=q, groups=g, reduce="median"),
            "reduce",
        ),
        (
            lambda s, l, q, g: M.delta_eel_ranking(
                s, l, qptr=q, groups=g, levels=3, thresholds=(0.5,)
            ),
            "levels",
        ),
        (
            lambda s, l, q, g: M.delta_eel_ranking(s, l, qptr=q, groups=g, on_single_group="drop"),
            "on_single_group",
        ),
        (lambda s, l, q, g: E.expected_exposure(s, qptr=q, k=-1), "k"),
        (lambda s, l, q, g: E.position_exposure(np.array([0, 1])), "ranks"),
    ],
)
def test_bad_parameters_raise(call, match):
    s = np.array([0.5, 0.2, 0.9, 0.1])
    lab = np.array([1.0, 0.0, 2.0, 0.0])
    q = np.array([0, 2, 4])
    g = np.array([1.0, 0.0, 0.0, 1.0])
    with pytest.raises(ParameterError, match=match):
        call(s, lab, q, g)


def test_delta_eel_scale_behaviour():
    """docs/method.md: with fixed grade thresholds (0.25 / 0.5 / 0.75) Δ(EEL) depends on the
    utilities' scale, with per-query min-max levels it does not. One query, item 0 affected
    and relevant, item 1 not: truth grades [3, 0] give targets [1, 1/log2 3]."""
    e2 = 1 / math.log2(3)
    truth, groups, qptr = np.array([1.0, 0.0]), np.array([1, 0]), np.array([0, 2])
    est = np.array([0.3, 0.45])

    def delta(scale, **kw):
        return M.delta_eel_tabular(
            est * scale, truth, qptr=qptr, groups=groups, thresholds=(0.25, 0.5, 0.75), **kw
        )

    # x1: grades [1, 1], a tie: both get (1 + e2) / 2, so E_A moves by (1 - e2) / 2
    assert delta(1) == pytest.approx(math.sqrt(2) * (1 - e2) / 2, abs=1e-12)
    # x2: [0.6, 0.9] -> grades [2, 3]: item 1 first, E_A moves by 1 - e2
    assert delta(2) == pytest.approx(math.sqrt(2) * (1 - e2), abs=1e-12)
    # per-query min-max levels: item 1 in the upper level at every scale
    minmax = [
        M.delta_eel_tabular(est * s, truth, qptr=qptr, groups=groups, bins="query_minmax", levels=2)
        for s in (1, 2, 1000)
    ]
    assert minmax == pytest.approx([math.sqrt(2) * (1 - e2)] * 3, abs=1e-12)
