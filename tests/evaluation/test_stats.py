"""Tests of groupbias.evaluation.stats: paired tests against scipy and hand cases."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats as sps

from groupbias.core.errors import ParameterError
from groupbias.evaluation.stats import paired_test, per_query_correlation, significance_marker


def test_ttest_matches_scipy_and_hand_formula(rng):
    a = rng.normal(0.8, 0.1, size=200)
    b = a - rng.normal(0.02, 0.05, size=200)
    stat, p, n = paired_test(a, b)
    ref = sps.ttest_rel(a, b)
    assert n == 200
    assert stat == pytest.approx(ref.statistic, rel=1e-12)
    assert p == pytest.approx(ref.pvalue, rel=1e-12)
    d = a - b  # t = mean(d) / (sd(d) / sqrt(n))
    assert stat == pytest.approx(d.mean() / (d.std(ddof=1) / math.sqrt(d.size)), rel=1e-10)
    _, p_greater, _ = paired_test(a, b, alternative="greater")
    assert p_greater == pytest.approx(sps.ttest_rel(a, b, alternative="greater").pvalue)


def test_wilcoxon_matches_scipy(rng):
    a = rng.random(60)
    b = a + rng.normal(0.05, 0.2, size=60)
    stat, p, n = paired_test(a, b, test="wilcoxon")
    ref = sps.wilcoxon(a, b)
    assert (stat, n) == (pytest.approx(ref.statistic), 60)
    assert p == pytest.approx(ref.pvalue, rel=1e-12)


def test_wilcoxon_hand_case():
    # differences 1, 2, 3, -4 (no ties): ranks 1, 2, 3, 4; R+ = 6, R- = 4 -> W = min = 4
    a = np.array([2.0, 4.0, 6.0, 0.0])
    b = np.array([1.0, 2.0, 3.0, 4.0])
    stat, p, n = paired_test(a, b, test="wilcoxon")
    assert stat == 4.0 and n == 4
    # exact null: 2^4 sign patterns; P(min(R+, R-) <= 4) = 2 * P(R+ <= 4);
    # subsets of {1,2,3,4} with sum <= 4: {}, {1}, {2}, {3}, {4}, {1,2}, {1,3} -> 7 of 16
    assert p == pytest.approx(2 * 7 / 16)


def test_nan_pairs_are_dropped(rng):
    a = rng.random(30)
    b = rng.random(30)
    a[3] = np.nan
    b[7] = np.nan
    b[3] = np.nan
    keep = np.ones(30, bool)
    keep[[3, 7]] = False
    stat, p, n = paired_test(a, b)
    ref = sps.ttest_rel(a[keep], b[keep])
    assert n == 28
    assert (stat, p) == (pytest.approx(ref.statistic), pytest.approx(ref.pvalue))


def test_identical_samples():
    a = np.array([0.1, 0.5, 0.9, np.nan])
    for test in ("ttest", "wilcoxon"):
        assert paired_test(a, a.copy(), test=test) == (0.0, 1.0, 3)


def test_hand_ttest():
    # d = (1, 2, 3): mean 2, sd 1, t = 2 / (1 / sqrt(3)) = 2 sqrt(3)
    stat, p, n = paired_test(np.array([1.0, 2.0, 3.0]), np.zeros(3))
    assert stat == pytest.approx(2 * math.sqrt(3)) and n == 3
    # two-sided p = 2 * (1 - F_t(2 sqrt 3; df = 2)); F_t for df=2: 1/2 + t / (2 sqrt(2 + t^2))
    t = 2 * math.sqrt(3)
    assert p == pytest.approx(2 * (0.5 - t / (2 * math.sqrt(2 + t * t))))


def test_bad_inputs():
    a = np.array([0.1, 0.2, 0.3])
    with pytest.raises(ParameterError, match="b_per_query"):
        paired_test(a, a[:2])
    with pytest.raises(ParameterError, match="test"):
        paired_test(a, a, test="sign")
    with pytest.raises(ParameterError, match="alternative"):
        paired_test(a, a, alternative="up")
    with pytest.raises(ParameterError, match="a_per_query"):
        paired_test(np.array([0.1, np.nan]), np.array([0.2, 0.3]))
    with pytest.raises(ParameterError, match="a_per_query"):
        paired_test(np.array([0.1, np.inf]), np.array([0.2, 0.3]))
    with pytest.raises(ParameterError, match="a_per_query"):
        paired_test(a.reshape(3, 1), a)


def test_significance_marker():
    assert significance_marker(0.0009) == "*"
    assert significance_marker(0.001) == ""
    assert significance_marker(0.04, alpha=0.05) == "*"
    assert significance_marker(float("nan")) == ""
    assert significance_marker(np.float64(1e-5)) == "*"
    with pytest.raises(ParameterError, match="alpha"):
        significance_marker(0.1, alpha=1.5)
    with pytest.raises(ParameterError, match="p"):
        significance_marker(1.2)
    with pytest.raises(ParameterError, match="p"):
        significance_marker("0.01")


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_ttest_agrees_with_scipy_over_sizes_and_edge_cases(rng, alternative):
    """The t-test is computed here (scipy.stats is not imported for it); scipy's
    ``ttest_rel`` is the reference: random sizes, tiny and huge effects, constant
    non-zero differences (sd 0: t = ±inf, p = 0 or 1)."""
    cases = []
    for n in (2, 3, 5, 30, 1000):
        a = rng.normal(size=n)
        cases += [(a, a - rng.normal(0.0, 1.0, n)), (a, a - rng.normal(3.0, 0.01, n))]
    cases += [(np.array([1.0, 2.0, 3.0]), np.array([0.5, 1.5, 2.5]))]  # d = 0.5 always
    cases += [(np.array([0.0, 0.0, 0.0]), np.array([0.5, 0.5, 0.5]))]  # d = -0.5 always
    for a, b in cases:
        stat, p, _ = paired_test(a, b, alternative=alternative)
        with warnings.catch_warnings():  # scipy warns of the constant differences
            warnings.simplefilter("ignore")
            ref = sps.ttest_rel(a, b, alternative=alternative)
        assert stat == pytest.approx(ref.statistic, rel=1e-12)
        assert p == pytest.approx(ref.pvalue, rel=1e-10, abs=1e-300)


def test_t_distribution_tail_against_closed_forms_and_scipy():
    """P(|T| >= t): exact for 1 (Cauchy) and 2 degrees of freedom; scipy.special.stdtr
    elsewhere, from tiny to huge t and up to 10^5 degrees of freedom."""
    from scipy.special import stdtr

    from groupbias.evaluation.stats import t_two_sided_p

    for t in (1e-6, 1e-3, 0.5, 1.0, 3.0, 30.0, 1e3, 1e6):
        cauchy = 2 * math.atan(1 / t) / math.pi  # 1 - (2/pi) atan(t)
        two = 2 / (math.sqrt(2 + t * t) * (math.sqrt(2 + t * t) + t))  # 1 - t / sqrt(2 + t^2)
        assert t_two_sided_p(1, t) == pytest.approx(cauchy, rel=1e-14)
        assert t_two_sided_p(2, t) == pytest.approx(two, rel=1e-14)
        assert t_two_sided_p(7, -t) == t_two_sided_p(7, t)
    for df in (3, 5, 29, 99, 100, 101, 199, 999, 4999, 29999, 99999):
        for t in (0.01, 0.3, 1.0, 1.96, 2.5, 3.3, 5.0, 8.0, 15.0, 40.0):
            ref = 2 * stdtr(df, -t)
            if ref > 1e-300:
                assert t_two_sided_p(df, t) == pytest.approx(ref, rel=1e-10), (df, t)
    assert t_two_sided_p(10, 0.0) == 1.0 and t_two_sided_p(10, math.inf) == 0.0


def test_t_distribution_tail_refuses_bad_input_by_name():
    from groupbias.evaluation.stats import t_two_sided_p

    for df in (0, -1.0, math.nan, math.inf):
        with pytest.raises(ParameterError, match="df"):
            t_two_sided_p(df, 1.0)
    for t in (math.nan, "1.0", None):
        with pytest.raises(ParameterError, match="t"):
            t_two_sided_p(5, t)


# ----------------------------------------------------------------------------- correlation


def test_per_query_correlation():
    a = np.array([1.0, 2.0, 3.0, np.nan])
    b = np.array([2.0, 4.0, 7.0, 1.0])
    # pairs (1,2), (2,4), (3,7): deviations (-1, 0, 1) and (-7/3, -1/3, 8/3);
    # r = 5 / sqrt(2 * 114/9)
    r, p, n = per_query_correlation(a, b)
    assert n == 3
    assert r == pytest.approx(5 / math.sqrt(2 * 114 / 9))
    assert p == pytest.approx(sps.pearsonr([1, 2, 3], [2, 4, 7]).pvalue)
    r, p, n = per_query_correlation([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])
    assert math.isnan(r) and math.isnan(p) and n == 3
    with pytest.raises(ParameterError, match="at least 2"):
        per_query_correlation([1.0, np.nan], [np.nan, 2.0])
    with pytest.raises(ParameterError, match="length"):
        per_query_correlation([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ParameterError, match="infinite"):
        per_query_correlation([1.0, np.inf], [1.0, 2.0])
