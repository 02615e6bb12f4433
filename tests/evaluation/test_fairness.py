"""Tests of groupbias.evaluation.fairness: AWRF, nDCG×AWRF, TED/TExFAIR/RBDF, NFaiRR,
CWEx/ΔExposure, RaB/ARaB and the per-query correlation.

Golden values are hand arithmetic (written out with comments), the reference notebook's
own worked ARaB example, brute force over tie permutations, and per-query reference loops
written here independently of the vectorized code (plain Python over ranked lists).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from groupbias import fairness as F
from groupbias import metrics as M
from groupbias.core.errors import ParameterError
from groupbias.data.membership import membership_from_groups, term_membership
from groupbias.evaluation.catalog import EvalSpec, compute_metrics
from groupbias.evaluation.stats import per_query_correlation

L2 = math.log2
V1, V2, V3, V4 = (1.0 / L2(1 + r) for r in (1, 2, 3, 4))  # 1, 0.63093, 0.5, 0.43068
T4 = V1 + V2 + V3 + V4  # 2.5616063...

FEM = [1.0, 0.0]  # an item entirely of group 0 ("female" in seed 000's Fig. 1)
MAL = [0.0, 1.0]  # entirely group 1 ("male")
NONE = [0.0, 0.0]  # no group association (non-representative / neutral)
DESC4 = np.array([4.0, 3.0, 2.0, 1.0])  # scores that rank items in input order


def one_query(rows, scores=None):
    m = np.array(rows, dtype=float)
    s = DESC4[: len(rows)] if scores is None else np.asarray(scores, dtype=float)
    return s, np.array([0, len(rows)]), m


def h_js(p, t):  # Jensen-Shannon divergence, base 2, written out
    mid = [(a + b) / 2 for a, b in zip(p, t)]
    kl = lambda x, y: sum(a * L2(a / b) for a, b in zip(x, y) if a > 0)  # noqa: E731
    return 0.5 * kl(p, mid) + 0.5 * kl(t, mid)


# ----------------------------------------------------------------------------- seed 000, Fig. 1


def test_seed000_motivating_case_nfairr_cannot_tell_texfair_can():
    # Fig. 1: left list male, female, female, male; right list male x4. Every item is
    # entirely one group, so omega = 1 - (|1 - .5| + |0 - .5|) = 0 for all of them.
    rows = [MAL, FEM, FEM, MAL] + [MAL, MAL, MAL, MAL]
    m = np.array(rows)
    s = np.concatenate([DESC4, DESC4])
    q = np.array([0, 4, 8])
    fairr = F.fairr(s, qptr=q, membership=m, k=4, reduce=None)
    np.testing.assert_allclose(fairr, [0.0, 0.0])  # FaiRR identical: 0 and 0
    # IFaiRR over the candidates is 0 as well: NFaiRR undefined for both lists
    assert np.isnan(F.nfairr(s, qptr=q, membership=m, k=4, reduce=None)).all()
    # with a neutral document elsewhere in the collection, NFaiRR = 0 / 1 = 0 for both
    m3 = np.vstack([m, [NONE]])
    s3 = np.append(s, 0.0)
    q3 = np.array([0, 4, 8, 9])
    nf = F.nfairr(s3, qptr=q3, membership=m3, k=4, background="collection", reduce=None)
    np.testing.assert_allclose(nf[:2], [0.0, 0.0])
    # TExFAIR (uniform target, all items representative so RBDF = 1):
    # left: E_f = v2 + v3, E_m = v1 + v4; TED = |p_f - 1/2| + |p_m - 1/2| = |E_m - E_f| / E
    ted_left = abs((V1 + V4) - (V2 + V3)) / T4  # 0.1170155...
    tex = F.texfair(s, qptr=q, membership=m, k=4, reduce=None)
    np.testing.assert_allclose(tex, [1.0 - ted_left, 0.0])  # right list: p_m = 1, TED = 1
    assert tex[0] > tex[1]


# ----------------------------------------------------------------------------- AWRF


def test_awrf_hand_values_js_l1_kl():
    s, q, m = one_query([MAL, FEM, FEM, MAL])
    pf = (V2 + V3) / T4  # 0.4414876...
    p = [pf, 1 - pf]
    js = h_js(p, [0.5, 0.5])
    np.testing.assert_allclose(F.awrf_distance(s, qptr=q, membership=m, reduce=None), [js])
    np.testing.assert_allclose(F.awrf(s, qptr=q, membership=m, reduce=None), [1 - js])
    l1 = abs(pf - 0.5) + abs(1 - pf - 0.5)
    np.testing.assert_allclose(
        F.awrf_distance(s, qptr=q, membership=m, distance="l1", reduce=None), [l1]
    )
    kl = pf * L2(pf / 0.5) + (1 - pf) * L2((1 - pf) / 0.5)
    np.testing.assert_allclose(
        F.awrf_distance(s, qptr=q, membership=m, distance="kl", reduce=None), [kl]
    )
    # KL is infinite when the target gives a group 0 that the ranking exposes
    d = F.awrf_distance(s, qptr=q, membership=m, distance="kl", target=[1, 0], reduce=None)
    assert np.isinf(d[0])
    # k = 2: only ranks 1 (male) and 2 (female): p_f = v2 / (1 + v2)
    pf2 = V2 / (V1 + V2)
    np.testing.assert_allclose(
        F.awrf_distance(s, qptr=q, membership=m, k=2, distance="l1", reduce=None),
        [2 * abs(pf2 - 0.5)],
    )


def test_awrf_targets_and_weights():
    # candidates: f, f, f, m (in rank order); two relevant: ranks 1 and 4
    s, q, m = one_query([FEM, FEM, FEM, MAL])
    labels = np.array([1.0, 0.0, 0.0, 2.0])
    pf = (V1 + V2 + V3) / T4
    # corpus share (3/4, 1/4); L1 = |pf - 3/4| + |(1 - pf) - 1/4| = 2 |pf - 3/4|
    np.testing.assert_allclose(
        F.awrf_distance(s, qptr=q, membership=m, target="corpus", distance="l1", reduce=None),
        [2 * abs(pf - 0.75)],
    )
    # relevant share: one f and one m relevant -> (1/2, 1/2)
    np.testing.assert_allclose(
        F.awrf_distance(
            s, qptr=q, membership=m, labels=labels, target="relevant", distance="l1", reduce=None
        ),
        [2 * abs(pf - 0.5)],
    )
    # a global target vector (normalized): (1, 3) -> (1/4, 3/4)
    np.testing.assert_allclose(
        F.awrf_distance(s, qptr=q, membership=m, target=[1, 3], distance="l1", reduce=None),
        [2 * abs(pf - 0.25)],
    )
    # geometric weights 1, .5, .25, .125: p_f = 1.75 / 1.875
    np.testing.assert_allclose(
        F.awrf_distance(
            s, qptr=q, membership=m, weights="geometric", patience=0.5, distance="l1", reduce=None
        ),
        [2 * abs(1.75 / 1.875 - 0.5)],
    )
    # uniform weights: p_f = 3/4;  custom per-rank weights (2, 0, 0, 1): p_f = 2/3
    np.testing.assert_allclose(
        F.awrf_distance(s, qptr=q, membership=m, weights="uniform", distance="l1", reduce=None),
        [0.5],
    )
    np.testing.assert_allclose(
        F.awrf_distance(
            s, qptr=q, membership=m, weights=[2.0, 0.0, 0.0, 1.0], distance="l1", reduce=None
        ),
        [2 * abs(2 / 3 - 0.5)],
    )
    # no relevant item -> target undefined -> NaN
    assert np.isnan(
        F.awrf(s, qptr=q, membership=m, labels=np.zeros(4), target="relevant", reduce=None)
    )[0]


def test_awrf_degenerate_queries():
    # one group only in the list: p = (1, 0) against (1/2, 1/2), midpoint (3/4, 1/4):
    # JS = 1/2 log2(4/3) + 1/2 (1/2 log2(2/3) + 1/2 log2(2)) = 0.3112781
    s, q, m = one_query([FEM, FEM, FEM])
    js = h_js([1.0, 0.0], [0.5, 0.5])  # 0.3112781...
    assert js == pytest.approx(0.5 * L2(4 / 3) + 0.5 * (0.5 * L2(2 / 3) + 0.5 * L2(2)))
    np.testing.assert_allclose(F.awrf_distance(s, qptr=q, membership=m, reduce=None), [js])
    np.testing.assert_allclose(
        F.awrf(s, qptr=q, membership=m, distance="l1", reduce=None), [0.0]
    )  # 1 - (1/2 + 1/2)
    # target = corpus share (1, 0): a one-group list matches it exactly
    np.testing.assert_allclose(F.awrf(s, qptr=q, membership=m, target="corpus", reduce=None), [1.0])
    # no representative item in the top k: skip (default) or fair
    s, q, m = one_query([NONE, NONE, FEM])
    assert np.isnan(F.awrf(s, qptr=q, membership=m, k=2, reduce=None)[0])
    np.testing.assert_allclose(
        F.awrf(s, qptr=q, membership=m, k=2, on_no_representative="fair", reduce=None), [1.0]
    )
    # k longer than the list equals no cutoff
    s, q, m = one_query([MAL, FEM, FEM, MAL])
    np.testing.assert_allclose(
        F.awrf(s, qptr=q, membership=m, k=50, reduce=None),
        F.awrf(s, qptr=q, membership=m, reduce=None),
    )
    # empty queries are NaN
    out = F.awrf(
        DESC4[:2], qptr=np.array([0, 0, 2, 2]), membership=np.array([FEM, MAL]), reduce=None
    )
    assert np.isnan(out[0]) and np.isnan(out[2]) and out[1] > 0


def test_ndcg_awrf_is_product():
    s, q, m = one_query([FEM, FEM, FEM, MAL])
    labels = np.array([1.0, 0.0, 0.0, 2.0])
    nd = M.ndcg(s, labels, qptr=q, k=3, reduce=None)
    aw = F.awrf(s, qptr=q, membership=m, labels=labels, k=3, target="relevant", reduce=None)
    np.testing.assert_allclose(
        F.ndcg_awrf(s, labels, qptr=q, membership=m, k=3, reduce=None), nd * aw
    )
    # hand: DCG@3 = (2^1 - 1) * 1 = 1; IDCG@3 = 3 + 1 * v2; AWRF: p_f = 1 at k=3 vs (1/2, 1/2)
    expected = 1.0 / (3.0 + V2) * (1.0 - h_js([1.0, 0.0], [0.5, 0.5]))
    np.testing.assert_allclose(F.ndcg_awrf(s, labels, qptr=q, membership=m, k=3), expected)


# ----------------------------------------------------------------------------- TED / RBDF


def test_ted_rbdf_hand_values():
    # rank order f, none, m, none (k = None): E_f = 1, E_m = v3 = .5 -> p = (2/3, 1/3)
    s, q, m = one_query([FEM, NONE, MAL, NONE])
    bias = abs(2 / 3 - 0.5) + abs(1 / 3 - 0.5)  # = 1/3
    rbdf = (V1 + V3) / T4  # representative ranks 1, 3
    np.testing.assert_allclose(F.rbdf(s, qptr=q, membership=m, reduce=None), [rbdf])
    np.testing.assert_allclose(F.ted(s, qptr=q, membership=m, reduce=None), [bias * rbdf])
    np.testing.assert_allclose(F.ted(s, qptr=q, membership=m, rbdf=False, reduce=None), [bias])
    np.testing.assert_allclose(F.texfair(s, qptr=q, membership=m, reduce=None), [1.0 - bias * rbdf])
    # k = 2: only f and none: p = (1, 0), bias = 1, RBDF = 1 / (1 + v2)
    np.testing.assert_allclose(F.ted(s, qptr=q, membership=m, k=2, reduce=None), [1.0 / (V1 + V2)])
    # k longer than the list equals no cutoff
    np.testing.assert_allclose(
        F.ted(s, qptr=q, membership=m, k=9, reduce=None),
        F.ted(s, qptr=q, membership=m, reduce=None),
    )


def test_ted_term_exposure_weights_by_frequency():
    # seed 000 §6: one female term in a long document at rank 1 does not balance many male
    # terms at rank 2. Term shares M/|d|: d1 = 1/10 female, d2 = 4/8 male.
    tm = term_membership(
        ["she " + "x " * 9, "he his he him x x x x"],
        {"f": ["she", "her"], "m": ["he", "his", "him"]},
    )
    np.testing.assert_allclose(tm.term_exposure, [[0.1, 0.0], [0.0, 0.5]])
    s, q = DESC4[:2], np.array([0, 2])
    te_f, te_m = 0.1 * V1, 0.5 * V2  # Eq. 8: tf / |d| / log2(1 + r)
    pf = te_f / (te_f + te_m)
    np.testing.assert_allclose(
        F.ted(s, qptr=q, membership=tm.term_exposure, reduce=None), [2 * abs(pf - 0.5)]
    )
    # with document-level shares the two documents nearly balance (only rank weights differ)
    pf_doc = V1 / (V1 + V2)
    np.testing.assert_allclose(
        F.ted(s, qptr=q, membership=tm.membership, reduce=None), [2 * abs(pf_doc - 0.5)]
    )


def test_ted_no_representative_and_more_groups():
    s, q, m = one_query([NONE, NONE, NONE])
    np.testing.assert_allclose(F.ted(s, qptr=q, membership=m, reduce=None), [0.0])
    np.testing.assert_allclose(F.texfair(s, qptr=q, membership=m, reduce=None), [1.0])
    assert np.isnan(F.ted(s, qptr=q, membership=m, on_no_representative="skip", reduce=None))[0]
    np.testing.assert_allclose(F.rbdf(s, qptr=q, membership=m, reduce=None), [0.0])
    # three groups, target (1/2, 1/4, 1/4): max TED = 2 (1 - 1/4) = 1.5; a list entirely
    # of group 2 has p = (0, 0, 1): TED = 1/2 + 1/4 + 3/4 = 1.5, TExFAIR = 0
    s, q, m = one_query([[0, 0, 1], [0, 0, 1]])
    np.testing.assert_allclose(F.ted(s, qptr=q, membership=m, target=[2, 1, 1], reduce=None), [1.5])
    np.testing.assert_allclose(
        F.texfair(s, qptr=q, membership=m, target=[2, 1, 1], reduce=None), [0.0]
    )
    # the same list under the uniform 3-group target: TED = 1/3 + 1/3 + 2/3 = 4/3 = max
    np.testing.assert_allclose(F.texfair(s, qptr=q, membership=m, reduce=None), [0.0])
    # a perfectly balanced list reaches TExFAIR = max: exposure v1 : v2 : v3 split evenly
    third = [1 / 3, 1 / 3, 1 / 3]
    s, q, m = one_query([third, third, third])
    np.testing.assert_allclose(F.texfair(s, qptr=q, membership=m, reduce=None), [4 / 3])


# ----------------------------------------------------------------------------- NFaiRR


def test_neutrality_and_nfairr_hand_values():
    # counts: d1 (2, 2) -> omega 1; d2 (3, 1) -> 1 - (.25 + .25) = .5; d3 (0, 0) -> 1;
    # d4 (1, 0) -> 0 with tau = 0, 1 with tau = 1 (sum 1 <= tau)
    counts = np.array([[2, 2], [3, 1], [0, 0], [1, 0]], dtype=float)
    np.testing.assert_allclose(F.neutrality(counts), [1.0, 0.5, 1.0, 0.0])
    np.testing.assert_allclose(F.neutrality(counts, tau=1), [1.0, 0.5, 1.0, 1.0])
    # ranking d2, d4, d1, d3 -> omega in rank order (.5, 0, 1, 1)
    s = np.array([2.0, 4.0, 1.0, 3.0])
    q = np.array([0, 4])
    fairr = 0.5 * V1 + 0.0 * V2 + 1.0 * V3 + 1.0 * V4
    ideal = 1.0 * V1 + 1.0 * V2 + 0.5 * V3 + 0.0 * V4  # omega sorted (1, 1, .5, 0)
    np.testing.assert_allclose(F.fairr(s, qptr=q, membership=counts, reduce=None), [fairr])
    np.testing.assert_allclose(F.nfairr(s, qptr=q, membership=counts, reduce=None), [fairr / ideal])
    # k = 2: FaiRR = .5; IFaiRR = 1 + v2
    np.testing.assert_allclose(
        F.nfairr(s, qptr=q, membership=counts, k=2, reduce=None), [0.5 / (V1 + V2)]
    )
    # tau = 1: omega in rank order (.5, 1, 1, 1); ideal (1, 1, 1, .5)
    np.testing.assert_allclose(
        F.nfairr(s, qptr=q, membership=counts, tau=1, reduce=None),
        [(0.5 + V2 + V3 + V4) / (V1 + V2 + V3 + 0.5 * V4)],
    )
    # non-uniform balance J = (3/4, 1/4): d2 becomes perfectly neutral, d1 1 - (1/4 + 1/4)
    np.testing.assert_allclose(F.neutrality(counts, target=[3, 1]), [0.5, 1.0, 1.0, 0.5])
    # three groups: an item entirely one group has omega = 1 - (2/3 + 1/3 + 1/3) = -1/3
    np.testing.assert_allclose(F.neutrality(np.array([[5.0, 0, 0]])), [-1 / 3])


def test_nfairr_background_collection():
    # two queries; the collection's omegas: q0 (.5, 0), q1 (1, 1, 0)
    counts = np.array([[3, 1], [1, 0], [0, 0], [0, 0], [2, 0]], dtype=float)
    s = np.array([2.0, 1.0, 3.0, 2.0, 1.0])
    q = np.array([0, 2, 5])
    # k = 2: IFaiRR(collection) = 1 + v2 for both queries
    np.testing.assert_allclose(
        F.nfairr(s, qptr=q, membership=counts, k=2, background="collection", reduce=None),
        [0.5 / (V1 + V2), 1.0],
    )
    with pytest.raises(ParameterError, match="k"):
        F.nfairr(s, qptr=q, membership=counts, background="collection", reduce=None)


# ----------------------------------------------------------------------------- CWEx


def test_cwex_hand_values():
    # rank order neutral, f, m, f
    s, q, m = one_query([NONE, FEM, MAL, FEM])
    ex_n, ex_f, ex_m = V1 / T4, (V2 + V4) / T4, V3 / T4
    x = F.class_exposure(s, qptr=q, membership=m)
    np.testing.assert_allclose(x, [[ex_f, ex_m, ex_n]])
    gap = abs(ex_f - ex_m)
    np.testing.assert_allclose(F.delta_exposure(s, qptr=q, membership=m, reduce=None), [gap])
    for alpha in (0.2, 0.5, 0.7):
        np.testing.assert_allclose(
            F.cwex(s, qptr=q, membership=m, alpha=alpha, reduce=None),
            [alpha * ex_n - (1 - alpha) * gap],
        )
    # k = 2: Exposure_max = 1 + v2; neutral 1/(1+v2), f v2/(1+v2), m 0
    np.testing.assert_allclose(
        F.cwex(s, qptr=q, membership=m, k=2, alpha=0.5, reduce=None),
        [0.5 * V1 / (V1 + V2) - 0.5 * V2 / (V1 + V2)],
    )


def test_cwex_assignments_and_more_groups():
    # a mixed item (1/2, 1/2) at rank 1, a female item at rank 2
    s, q, m = one_query([[0.5, 0.5], FEM])
    tot = V1 + V2
    # expected: f 0.5 + v2, m 0.5, neutral 0
    np.testing.assert_allclose(
        F.class_exposure(s, qptr=q, membership=m), [[(0.5 + V2) / tot, 0.5 / tot, 0.0]]
    )
    # hard: the mixed item is neutral
    np.testing.assert_allclose(
        F.class_exposure(s, qptr=q, membership=m, assignment="hard"),
        [[V2 / tot, 0.0, 1.0 / tot]],
    )
    # counts need assignment="hard"
    with pytest.raises(ParameterError, match="assignment='hard'"):
        F.cwex(s, qptr=q, membership=np.array([[2.0, 1.0], [0, 3.0]]), reduce=None)
    c = F.class_exposure(s, qptr=q, membership=np.array([[2.0, 1.0], [0, 3.0]]), assignment="hard")
    np.testing.assert_allclose(c, [[0.0, V2 / tot, 1.0 / tot]])
    # three groups: ΔExposure is the largest gap; ranks g0, g1, g2 -> (1, v2, v3) / T3
    s, q, m = one_query([[1, 0, 0], [0, 1, 0], [0, 0, 1]])
    t3 = V1 + V2 + V3
    np.testing.assert_allclose(
        F.delta_exposure(s, qptr=q, membership=m, reduce=None), [(V1 - V3) / t3]
    )
    # one-group list: gap = 1, no neutral: CWEx = -(1 - alpha) = alpha - 1 (lower bound)
    s, q, m = one_query([FEM, FEM])
    np.testing.assert_allclose(F.cwex(s, qptr=q, membership=m, alpha=0.2, reduce=None), [-0.8])
    # all neutral: CWEx = alpha (upper bound)
    s, q, m = one_query([NONE, NONE])
    np.testing.assert_allclose(F.cwex(s, qptr=q, membership=m, alpha=0.7, reduce=None), [0.7])


# ----------------------------------------------------------------------------- RaB / ARaB


def test_arab_reference_notebook_example():
    # the reference notebook's own test list: (female, male) term counts at ranks 1..10
    fem = [0, 3, 0, 0, 0, 0, 0, 0, 0, 0]
    mal = [0, 0, 0, 0, 0, 0, 0, 5, 0, 2]
    counts = np.array([fem, mal], dtype=float).T
    s = np.arange(10, 0, -1, dtype=float)
    q = np.array([0, 10])
    # RaB@10 = mean(f - m) = (3 - 5 - 2) / 10 = -0.4
    np.testing.assert_allclose(
        F.rank_bias(s, qptr=q, membership=counts, k=10, magnitude="tc", reduce=None), [-0.4]
    )
    # ARaB@10: RaB@x for x = 1..10 is 0, 3/2, 3/3, 3/4, 3/5, 3/6, 3/7, -2/8, -2/9, -4/10
    rab_x = [0, 3 / 2, 1, 3 / 4, 3 / 5, 3 / 6, 3 / 7, -2 / 8, -2 / 9, -4 / 10]
    np.testing.assert_allclose(
        F.arab(s, qptr=q, membership=counts, k=10, magnitude="tc", reduce=None), [sum(rab_x) / 10]
    )
    # the reference reports male - female: pair (1, 0) flips the sign
    np.testing.assert_allclose(
        F.arab(s, qptr=q, membership=counts, k=10, magnitude="tc", pair=(1, 0), reduce=None),
        [-sum(rab_x) / 10],
    )
    # TF: ln(1 + count): RaB@10 = (ln 4 - ln 6 - ln 3) / 10
    np.testing.assert_allclose(
        F.rank_bias(s, qptr=q, membership=counts, k=10, magnitude="tf", reduce=None),
        [(math.log(4) - math.log(6) - math.log(3)) / 10],
    )
    # Boolean: RaB@10 = (1 - 1 - 1) / 10; ARaB@3 = (0 + 1/2 + 1/3) / 3
    np.testing.assert_allclose(
        F.rank_bias(s, qptr=q, membership=counts, k=10, magnitude="bool", reduce=None), [-0.1]
    )
    np.testing.assert_allclose(
        F.arab(s, qptr=q, membership=counts, k=3, magnitude="bool", reduce=None),
        [(0 + 1 / 2 + 1 / 3) / 3],
    )
    # k longer than the list: T = n = 10
    np.testing.assert_allclose(
        F.arab(s, qptr=q, membership=counts, k=40, magnitude="tc", reduce=None), [sum(rab_x) / 10]
    )


# ----------------------------------------------------------------------------- ties


def test_tie_average_is_mean_over_tie_permutations_for_linear_metrics():
    # scores with a tie block of three at the top; the metrics linear in the rank weights
    # (FaiRR, class exposure, RaB, ARaB) under ties="average" equal the mean over the 3!
    # orders of the tied items (CWEx, AWRF and TED are then computed from these expected
    # exposures)
    counts = np.array([[2, 0], [0, 1], [1, 1], [0, 0], [3, 1]], dtype=float)
    scores = np.array([5.0, 5.0, 5.0, 2.0, 1.0])
    q = np.array([0, 5])
    share = counts / np.maximum(counts.sum(1, keepdims=True), 1)
    metrics = {
        "fairr": lambda s: F.fairr(s, qptr=q, membership=counts, k=3, reduce=None),
        "class_exposure": lambda s: F.class_exposure(s, qptr=q, membership=share, k=2)[0],
        "arab": lambda s: F.arab(s, qptr=q, membership=counts, k=4, reduce=None),
        "rab": lambda s: F.rank_bias(s, qptr=q, membership=counts, k=2, reduce=None),
    }
    for name, fn in metrics.items():
        vals = []
        for perm in itertools.permutations([0, 1, 2]):
            s = scores.copy()
            s[list(perm)] = [5.3, 5.2, 5.1]  # one strict order of the tie
            vals.append(fn(s))
        np.testing.assert_allclose(fn(scores), np.mean(vals, axis=0), atol=1e-12, err_msg=name)


# ----------------------------------------------------------------------------- reference loop


def ref_ranked(s, rows, k):
    order = sorted(range(len(s)), key=lambda i: -s[i])  # stable: ties by position
    top = order if k is None else order[:k]
    return [rows[i] for i in top], [1.0 / L2(1 + r) for r in range(1, len(top) + 1)]


def ref_target(target, rows, labels):
    g = len(rows[0]) if rows else 0
    if not isinstance(target, str):
        return [t / sum(target) for t in target]
    if target == "uniform":
        return [1.0 / g] * g
    acc = [0.0] * g
    for i, r in enumerate(rows):
        if sum(r) > 0 and (target == "corpus" or labels[i] > 0):
            acc = [a + x / sum(r) for a, x in zip(acc, r)]
    return None if sum(acc) == 0 else [a / sum(acc) for a in acc]


def ref_awrf_distance(s, rows, labels, k, target, distance):
    ranked, v = ref_ranked(s, rows, k)
    g = len(rows[0])
    e = [sum(v[r] * ranked[r][j] for r in range(len(ranked))) for j in range(g)]
    t = ref_target(target, rows, labels)
    if sum(e) == 0 or t is None:
        return math.nan
    p = [x / sum(e) for x in e]
    if distance == "l1":
        return sum(abs(a - b) for a, b in zip(p, t))
    if distance == "kl":
        return sum(a * L2(a / b) if b > 0 else math.inf for a, b in zip(p, t) if a > 0)
    return h_js(p, t)


def ref_ted(s, rows, labels, k, target, rbdf):
    ranked, v = ref_ranked(s, rows, k)
    g = len(rows[0])
    t = ref_target(target, rows, labels)
    e = [sum(v[r] * ranked[r][j] for r in range(len(ranked))) for j in range(g)]
    if t is None:
        return math.nan, math.nan
    max_ted = 2 * (1 - min(t))
    if sum(e) == 0:
        return 0.0, max_ted
    bias = sum(abs(x / sum(e) - b) for x, b in zip(e, t))
    factor = sum(v[r] for r in range(len(ranked)) if sum(ranked[r]) > 0) / sum(v)
    return (bias * factor if rbdf else bias), max_ted


def ref_omega(row, tau=0.0):
    tot = sum(row)
    if tot <= tau:
        return 1.0
    return 1.0 - sum(abs(x / tot - 1.0 / len(row)) for x in row)


def ref_nfairr(s, rows, k):
    ranked, v = ref_ranked(s, rows, k)
    fairr = sum(ref_omega(r) * w for r, w in zip(ranked, v))
    best = sorted((ref_omega(r) for r in rows), reverse=True)[: len(v)]
    ideal = sum(o * w for o, w in zip(best, v))
    return fairr / ideal if ideal > 0 else math.nan


def ref_cwex(s, rows, k, alpha, assignment):
    ranked, v = ref_ranked(s, rows, k)
    g = len(rows[0])
    ex = [0.0] * (g + 1)
    for r, w in zip(ranked, v):
        if assignment == "hard":
            pos = [j for j in range(g) if r[j] > 0]
            cls = [0.0] * (g + 1)
            cls[pos[0] if len(pos) == 1 else g] = 1.0
        else:
            cls = list(r) + [1.0 - sum(r)]
        ex = [a + w * c for a, c in zip(ex, cls)]
    ex = [a / sum(v) for a in ex]
    gap = max(ex[:g]) - min(ex[:g])
    return alpha * ex[g] - (1 - alpha) * gap, gap


def ref_arab(s, rows, k, magnitude, pair):
    # as the reference notebook: RaB@t = mean of the top-t magnitudes; ARaB@t = mean of
    # RaB@x over the x = 1..t the list reaches
    order = sorted(range(len(s)), key=lambda i: -s[i])
    f = {"tc": lambda x: x, "tf": lambda x: math.log(1 + x), "bool": lambda x: float(x > 0)}
    bias = [f[magnitude](rows[i][pair[0]]) - f[magnitude](rows[i][pair[1]]) for i in order]
    t = len(bias) if k is None else k
    rab = lambda x: float(np.mean(bias[:x]))  # noqa: E731
    arab = float(np.mean([rab(x) for x in range(1, t + 1) if len(bias) >= x]))
    return rab(t), arab


def random_case(rng, n_queries=50, max_len=14, n_groups=3):
    sizes = rng.integers(0, max_len + 1, size=n_queries)
    qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(qptr[-1])
    scores = rng.random(n)
    raw = rng.random((n, n_groups)) * (rng.random((n, n_groups)) < 0.5)
    raw[rng.random(n) < 0.2] = 0.0  # some non-representative rows
    labels = rng.integers(0, 3, size=n).astype(float)
    return scores, qptr, raw, labels


def per_query(qptr, fn):
    return np.array([fn(a, b) for a, b in zip(qptr[:-1], qptr[1:])])


def check(vec, ref):
    vec, ref = np.asarray(vec, float), np.asarray(ref, float)
    assert np.array_equal(np.isnan(vec), np.isnan(ref))
    ok = ~np.isnan(ref)
    np.testing.assert_allclose(vec[ok], ref[ok], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("k", [None, 3, 30])
def test_vectorized_matches_per_query_reference(rng, k):
    s, q, raw, labels = random_case(rng)
    share = raw / np.where(raw.sum(1, keepdims=True) > 0, raw.sum(1, keepdims=True), 1)
    rows = share.tolist()
    empty = lambda a, b: a == b  # noqa: E731

    def ref(fn):
        return per_query(q, lambda a, b: math.nan if empty(a, b) else fn(a, b))

    for target in ("uniform", "corpus", "relevant", [1, 2, 3]):
        for distance in ("js", "l1", "kl"):
            check(
                F.awrf_distance(
                    s,
                    qptr=q,
                    membership=share,
                    labels=labels,
                    k=k,
                    target=target,
                    distance=distance,
                    reduce=None,
                ),
                ref(
                    lambda a, b: ref_awrf_distance(
                        s[a:b], rows[a:b], labels[a:b], k, target, distance
                    )
                ),
            )
        for rbdf in (True, False):
            check(
                F.ted(
                    s,
                    qptr=q,
                    membership=raw,
                    labels=labels,
                    k=k,
                    target=target,
                    rbdf=rbdf,
                    reduce=None,
                ),
                ref(
                    lambda a, b: ref_ted(s[a:b], raw.tolist()[a:b], labels[a:b], k, target, rbdf)[0]
                ),
            )
            check(
                F.texfair(
                    s,
                    qptr=q,
                    membership=share,
                    labels=labels,
                    k=k,
                    target=target,
                    rbdf=rbdf,
                    reduce=None,
                ),
                ref(
                    lambda a, b: (lambda r: r[1] - r[0])(
                        ref_ted(s[a:b], rows[a:b], labels[a:b], k, target, rbdf)
                    )
                ),
            )
    check(
        F.nfairr(s, qptr=q, membership=raw, k=k, reduce=None),
        ref(lambda a, b: ref_nfairr(s[a:b], raw.tolist()[a:b], k)),
    )
    for alpha in (0.2, 0.7):
        check(
            F.cwex(s, qptr=q, membership=share, k=k, alpha=alpha, reduce=None),
            ref(lambda a, b: ref_cwex(s[a:b], rows[a:b], k, alpha, "expected")[0]),
        )
        check(
            F.cwex(s, qptr=q, membership=raw, k=k, alpha=alpha, assignment="hard", reduce=None),
            ref(lambda a, b: ref_cwex(s[a:b], raw.tolist()[a:b], k, alpha, "hard")[0]),
        )
    check(
        F.delta_exposure(s, qptr=q, membership=share, k=k, reduce=None),
        ref(lambda a, b: ref_cwex(s[a:b], rows[a:b], k, 0.5, "expected")[1]),
    )
    counts = np.floor(raw * 6)
    for magnitude in ("tc", "tf", "bool"):
        for pair in ((0, 1), (2, 0)):
            check(
                F.rank_bias(
                    s, qptr=q, membership=counts, k=k, magnitude=magnitude, pair=pair, reduce=None
                ),
                ref(lambda a, b: ref_arab(s[a:b], counts.tolist()[a:b], k, magnitude, pair)[0]),
            )
            check(
                F.arab(
                    s, qptr=q, membership=counts, k=k, magnitude=magnitude, pair=pair, reduce=None
                ),
                ref(lambda a, b: ref_arab(s[a:b], counts.tolist()[a:b], k, magnitude, pair)[1]),
            )


def test_bounds_on_random_two_group_data(rng):
    s, q, raw, labels = random_case(rng, n_queries=80, max_len=20, n_groups=2)
    share = raw / np.where(raw.sum(1, keepdims=True) > 0, raw.sum(1, keepdims=True), 1)
    for k in (None, 5):
        aw = F.awrf(s, qptr=q, membership=share, k=k, reduce=None)
        assert np.nanmin(aw) >= 0 and np.nanmax(aw) <= 1
        tex = F.texfair(s, qptr=q, membership=share, k=k, reduce=None)
        assert np.nanmin(tex) >= 0 and np.nanmax(tex) <= 1
        nf = F.nfairr(s, qptr=q, membership=share, k=k, reduce=None)
        assert np.nanmin(nf) >= 0 and np.nanmax(nf) <= 1 + 1e-12
        rb = F.rbdf(s, qptr=q, membership=share, k=k, reduce=None)
        assert np.nanmin(rb) >= 0 and np.nanmax(rb) <= 1
        for alpha in (0.2, 0.5, 0.7):
            cw = F.cwex(s, qptr=q, membership=share, k=k, alpha=alpha, reduce=None)
            assert np.nanmin(cw) >= alpha - 1 - 1e-12 and np.nanmax(cw) <= alpha + 1e-12
        de = F.delta_exposure(s, qptr=q, membership=share, k=k, reduce=None)
        assert np.nanmin(de) >= 0 and np.nanmax(de) <= 1
        empty = np.diff(q) == 0
        for v in (aw, tex, nf, rb, de):
            assert np.isnan(v[empty]).all()


def test_membership_from_groups_feeds_the_metrics(rng):
    # our affected-group vector: every item representative (rows sum to 1), so RBDF = 1 and
    # TED equals AWRF's L1 distance to the uniform target
    s, q, _, labels = random_case(rng, n_queries=30, n_groups=2)
    groups = (rng.random(s.size) < 0.3).astype(float)
    m = membership_from_groups(groups)
    check(
        F.ted(s, qptr=q, membership=m, k=10, reduce=None),
        F.awrf_distance(s, qptr=q, membership=m, k=10, distance="l1", reduce=None),
    )
    rb = F.rbdf(s, qptr=q, membership=m, k=10, reduce=None)
    assert np.allclose(rb[~np.isnan(rb)], 1.0)
    # crisp groups: no item is neutral, every omega is 0 -> NFaiRR undefined everywhere
    assert np.isnan(F.nfairr(s, qptr=q, membership=m, k=10, reduce=None)).all()


def test_inputs_are_not_modified(rng):
    s, q, raw, labels = random_case(rng, n_queries=10)
    copies = [x.copy() for x in (s, q, raw, labels)]
    F.awrf(s, qptr=q, membership=raw, labels=labels, target="relevant", reduce=None)
    F.texfair(s, qptr=q, membership=raw, reduce=None)
    F.nfairr(s, qptr=q, membership=raw, reduce=None)
    F.cwex(s, qptr=q, membership=raw, assignment="hard", reduce=None)
    F.arab(s, qptr=q, membership=raw, reduce=None)
    for a, b in zip(copies, (s, q, raw, labels)):
        assert np.array_equal(a, b)


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "call, match",
    [
        (
            lambda s, q, m: F.awrf(s, qptr=q, membership=m[:, 0], reduce=None),
            "membership_from_groups",
        ),
        (lambda s, q, m: F.awrf(s, qptr=q, membership=m[:, :1], reduce=None), "at least 2 group"),
        (lambda s, q, m: F.awrf(s, qptr=q, membership=-m, reduce=None), "non-negative"),
        (lambda s, q, m: F.awrf(s, qptr=q, membership=m[:2], reduce=None), "rows"),
        (lambda s, q, m: F.awrf(s, qptr=q, membership=m * np.nan, reduce=None), "finite"),
        (lambda s, q, m: F.awrf(s, qptr=q, membership=m, target="world", reduce=None), "target"),
        (lambda s, q, m: F.awrf(s, qptr=q, membership=m, target=[1, 2, 3], reduce=None), "target"),
        (lambda s, q, m: F.awrf(s, qptr=q, membership=m, target="relevant", reduce=None), "labels"),
        (lambda s, q, m: F.awrf(s, qptr=q, membership=m, distance="l2", reduce=None), "distance"),
        (lambda s, q, m: F.awrf(s, qptr=q, membership=m, weights="rbp", reduce=None), "weights"),
        (lambda s, q, m: F.awrf(s, qptr=q, membership=m, weights=[-1.0], reduce=None), "weights"),
        (
            lambda s, q, m: F.awrf(
                s, qptr=q, membership=m, weights="geometric", patience=0, reduce=None
            ),
            "patience",
        ),
        (lambda s, q, m: F.awrf(s, qptr=q, membership=m, k=0, reduce=None), "k"),
        (lambda s, q, m: F.awrf(s, qptr=q, membership=m, ties="random", reduce=None), "ties"),
        (
            lambda s, q, m: F.awrf(
                s, qptr=q, membership=m, on_no_representative="zero", reduce=None
            ),
            "on_no_representative",
        ),
        (lambda s, q, m: F.ted(s, qptr=q, membership=m, rbdf=1, reduce=None), "rbdf"),
        (lambda s, q, m: F.nfairr(s, qptr=q, membership=m, tau=-1, reduce=None), "tau"),
        (
            lambda s, q, m: F.nfairr(s, qptr=q, membership=m, background="web", reduce=None),
            "background",
        ),
        (lambda s, q, m: F.cwex(s, qptr=q, membership=m, alpha=1.5, reduce=None), "alpha"),
        (
            lambda s, q, m: F.cwex(s, qptr=q, membership=m, assignment="soft", reduce=None),
            "assignment",
        ),
        (lambda s, q, m: F.arab(s, qptr=q, membership=m, pair=(0, 0), reduce=None), "pair"),
        (lambda s, q, m: F.arab(s, qptr=q, membership=m, pair=(0, 2), reduce=None), "pair"),
        (
            lambda s, q, m: F.arab(s, qptr=q, membership=m, magnitude="log", reduce=None),
            "magnitude",
        ),
        (lambda s, q, m: F.arab(s, qptr=np.array([0, 2]), membership=m, reduce=None), "qptr"),
    ],
)
def test_bad_parameters_raise(call, match):
    s = DESC4.copy()
    q = np.array([0, 4])
    m = np.array([FEM, MAL, FEM, NONE])
    with pytest.raises(ParameterError, match=match):
        call(s, q, m)


# ----------------------------------------------------------------------------- evaluator hook


def test_several_metrics_of_one_ranking_by_name(rng):
    """The related-work metrics of one ranking at once, by name (the catalog), with an
    evaluation spec that holds only labels, offsets and memberships."""
    s, q, raw, labels = random_case(rng, n_queries=20, n_groups=2)
    share = raw / np.where(raw.sum(1, keepdims=True) > 0, raw.sum(1, keepdims=True), 1)

    def by_name(metrics, labels=labels):
        spec = EvalSpec(
            labels=labels,
            relevance=None,
            groups=None,
            qptr=q,
            membership=share,
            metrics=tuple(metrics),
        )
        return compute_metrics(s, spec, regime="ltr")

    out = by_name(
        [
            "awrf@5",
            "texfair@5",
            "ndcg_awrf@5",
            {"name": "cwex", "alpha": 0.2, "key": "cwex@0.2", "k": 5},
            {"name": "cwex", "alpha": 0.7, "key": "cwex@0.7", "k": 5},
            {"name": "arab", "magnitude": "bool", "k": 5},
        ]
    )
    assert list(out) == ["awrf@5", "texfair@5", "ndcg_awrf@5", "cwex@0.2", "cwex@0.7", "arab"]
    check(out["cwex@0.2"], F.cwex(s, qptr=q, membership=share, k=5, alpha=0.2, reduce=None))
    check(out["ndcg_awrf@5"], F.ndcg_awrf(s, labels, qptr=q, membership=share, k=5, reduce=None))
    check(out["arab"], F.arab(s, qptr=q, membership=share, k=5, magnitude="bool", reduce=None))
    check(out["awrf@5"], F.awrf(s, qptr=q, membership=share, labels=labels, k=5, reduce=None))
    with pytest.raises(ParameterError, match="registered metric name"):
        by_name(["eel"])
    with pytest.raises(ParameterError, match="distinct"):
        by_name(["cwex", "cwex"])
    with pytest.raises(ParameterError, match="labels"):
        by_name(["ndcg_awrf"], labels=None)


# ----------------------------------------------------------------------------- real data


@pytest.mark.realdata
def test_term_based_metrics_on_trec_fair_titles(trec_root, tmp_path, rng):
    from data_loaders.trec_fair import load_trec_fair_track
    from groupbias.data.membership import load_term_lists

    data = load_trec_fair_track(trec_root, 2020)
    papers = pd.read_csv(
        trec_root / "2020" / "corpus-subset-for-queries.papers.csv",
        usecols=["paper_sha", "paper_title"],
        dtype=str,
        keep_default_na=False,
    )
    title = dict(zip(papers["paper_sha"].str.strip(), papers["paper_title"]))
    texts = [title.get(str(i)) for i in data.item_ids]
    (tmp_path / "life.txt").write_text(
        "# life-science terms\ncancer\npatients\nclinical\ndisease\ncell\ncells\n"
        "treatment\nhealth\nprotein\ngene\ntumor\nbrain\n",
        encoding="utf-8",
    )
    (tmp_path / "computing.txt").write_text(
        "learning\nnetwork\nnetworks\ndata\nalgorithm\nneural\nmodel\nmodels\ndeep\n"
        "system\nsystems\ngraph\ncomputing\n",
        encoding="utf-8",
    )
    lists = load_term_lists(
        {"life": tmp_path / "life.txt", "computing": tmp_path / "computing.txt"}
    )
    tm = term_membership(texts, lists)
    rep = tm.representative
    assert 0.05 < rep.mean() < 0.95  # both kinds of titles occur
    assert tm.counts[:, 0].sum() > 0 and tm.counts[:, 1].sum() > 0

    s = data.features[:, 0].astype(float) + rng.random(data.labels.size)  # citations
    q = data.qptr
    k = 10
    share, term_exp, counts = tm.membership, tm.term_exposure, tm.counts
    rows_s, rows_t, rows_c = share.tolist(), term_exp.tolist(), counts.tolist()
    lab = data.labels

    def ref(fn):
        return per_query(q, fn)

    tex = F.texfair(s, qptr=q, membership=term_exp, k=k, reduce=None)
    check(
        tex,
        ref(
            lambda a, b: (lambda r: r[1] - r[0])(
                ref_ted(s[a:b], rows_t[a:b], lab[a:b], k, "uniform", True)
            )
        ),
    )
    assert np.nanmin(tex) >= 0 and np.nanmax(tex) <= 1
    aw = F.awrf(s, qptr=q, membership=share, labels=lab, k=k, target="relevant", reduce=None)
    check(
        aw,
        ref(lambda a, b: 1 - ref_awrf_distance(s[a:b], rows_s[a:b], lab[a:b], k, "relevant", "js")),
    )
    assert np.nanmin(aw) >= 0 and np.nanmax(aw) <= 1
    nf = F.nfairr(s, qptr=q, membership=counts, k=k, reduce=None)
    check(nf, ref(lambda a, b: ref_nfairr(s[a:b], rows_c[a:b], k)))
    assert np.nanmin(nf) >= 0 and np.nanmax(nf) <= 1 + 1e-12
    cw = F.cwex(s, qptr=q, membership=counts, k=k, assignment="hard", reduce=None)
    check(cw, ref(lambda a, b: ref_cwex(s[a:b], rows_c[a:b], k, 0.5, "hard")[0]))
    assert np.nanmin(cw) >= -0.5 and np.nanmax(cw) <= 0.5
    ar = F.arab(s, qptr=q, membership=counts, k=k, magnitude="tf", reduce=None)
    check(ar, ref(lambda a, b: ref_arab(s[a:b], rows_c[a:b], k, "tf", (0, 1))[1]))
    assert np.all(np.isfinite(ar))
    # seed 000's comparison: per-query correlation between TExFAIR and NFaiRR
    r, p, n = per_query_correlation(tex, nf)
    assert n > 50 and -1 <= r <= 1
