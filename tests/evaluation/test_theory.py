"""Tests of the §4 approximations against hand values and Monte-Carlo runs of the simulator.

Monte-Carlo construction ("uniformly distributed scores", §4.1): binary relevance; unbiased
scores ``u ~ U[1/2, 1]`` for relevant and ``u ~ U[0, 1/2)`` for non-relevant items; the
simulator applies ``a = beta * u`` to affected items. NDCG, DTR utilities and EEL target
exposures are computed here with small private references (plain sorting, no library
metric code).
"""

from __future__ import annotations

import numpy as np
import pytest

from groupbias.core.errors import ParameterError
from groupbias.evaluation.theory import (
    PAPER_ALPHA,
    PAPER_ALPHA_PRIME,
    delta_eel_theory,
    expected_dcg,
    expected_ndcg,
    expected_nu,
    fit_alpha,
    ideal_dcg,
    ndcg_linear_fit,
    nu,
    rho_dtr_theory,
)
from groupbias.simulate.group_bias import simulate_attractiveness

N_N, N_POS_N, N_A, N_POS_A = 10, 5, 10, 5  # a top-20 list, as in §4.2.1
L = N_N + N_A
DISC = 1.0 / np.log2(2.0 + np.arange(L))  # 1 / log2(1 + rank), ranks 1..20


def simulate_queries(
    rng, beta, n_queries, *, n_N=N_N, n_pos_N=N_POS_N, n_A=N_A, n_pos_A=N_POS_A, exchangeable=False
):
    """Per-query blocks [N relevant, N non-relevant, A relevant, A non-relevant]."""
    size = n_N + n_A
    one = np.r_[
        np.ones(n_pos_N), np.zeros(n_N - n_pos_N), np.ones(n_pos_A), np.zeros(n_A - n_pos_A)
    ]
    r = np.tile(one, n_queries)
    g = np.tile(np.r_[np.zeros(n_N), np.ones(n_A)], n_queries)
    u = np.where(r == 1, rng.uniform(0.5, 1.0, r.size), rng.uniform(0.0, 0.5, r.size))
    if exchangeable:
        # a* = 1/2 exactly (one pinned relevant non-affected item) and non-relevant
        # non-affected scores on [beta/2, 1/2): below a* they are exchangeable with the
        # relevant affected scores beta * U[1/2, 1] | < 1/2, the mixing of Eq. (9)
        nr = (r == 0) & (g == 0)
        u[nr] = rng.uniform(beta / 2, 0.5, nr.sum())
        u[np.arange(n_queries) * size] = 0.5
    qptr = np.arange(0, n_queries * size + 1, size)
    a = simulate_attractiveness(u, g, qptr=qptr, beta_query=np.full(n_queries, beta))
    return a, r, g, qptr


# --------------------------------------------------------------------------- nu


def test_expected_nu_hand_values():
    assert expected_nu(1.0) == 1.0
    assert expected_nu(0.8) == pytest.approx(0.75)  # 2 - 1/0.8
    assert expected_nu(0.5) == 0.0  # 2 - 2
    np.testing.assert_allclose(expected_nu(np.array([0.4, 2 / 3])), [0.0, 0.5])
    with pytest.raises(ParameterError, match="beta"):
        expected_nu(0.0)


def test_nu_hand_example():
    # query 0: a* = min(0.6, 0.9) = 0.6; affected relevant 0.7 > a*, 0.5 not: nu = 1/2
    # query 1: no relevant non-affected item -> NaN; with threshold 0.45: 1/1
    a = np.array([0.6, 0.9, 0.2, 0.7, 0.5, 0.1, 0.3, 0.5])
    r = np.array([1, 1, 0, 1, 1, 0, 0, 1])
    g = np.array([0, 0, 0, 1, 1, 1, 0, 1])
    qptr = np.array([0, 6, 8])
    out = nu(a, r, g, qptr=qptr)
    assert out[0] == 0.5 and np.isnan(out[1])
    np.testing.assert_array_equal(nu(a, r, g, qptr=qptr, threshold=0.45), [1.0, 1.0])
    with pytest.raises(ParameterError, match="groups"):
        nu(a, r, np.full(8, 0.5), qptr=qptr)


@pytest.mark.parametrize("beta", [0.4, 0.6, 0.8, 0.95])
def test_expected_nu_monte_carlo(beta):
    rng = np.random.default_rng(int(beta * 100))
    a, r, g, qptr = simulate_queries(rng, beta, 4000)
    v = nu(a, r, g, qptr=qptr, threshold=0.5)
    # nu is a mean of n_A^+ = 5 Bernoulli(E[nu]) per query: standard error of the mean
    p = expected_nu(beta)
    se = np.sqrt(p * (1 - p) / (5 * 4000))
    assert abs(v.mean() - p) <= 4 * se + 1e-12


def test_expected_nu_with_the_minimum_threshold_of_eq6(rng):
    # a* = min of the relevant non-affected scores tends to 1/2 with many such items:
    # E[a*] = 1/2 + 1/(2 (n + 1)); tolerance covers that offset and Monte-Carlo error
    a, r, g, qptr = simulate_queries(rng, 0.8, 300, n_N=400, n_pos_N=300, n_A=40, n_pos_A=20)
    assert abs(nu(a, r, g, qptr=qptr).mean() - expected_nu(0.8)) < 0.01


# --------------------------------------------------------------------------- NDCG (Thm 4.1)


def test_expected_dcg_hand_value():
    # n_N^+ = 1, n_N = 2, n_A^+ = 1, nu = 0: P = 1, L = 3, xi = 1 / (2 - 1 + 1) = 1/2
    # E[DCG] = 1/log2(2) + (1/2)/log2(3) + (1/2)/log2(4)
    want = 1.0 + 0.5 / np.log2(3) + 0.5 / 2.0
    assert expected_dcg(0.0, 1, 2, 1) == pytest.approx(want)
    assert expected_dcg(0.0, 1, 2, 1, k=2) == pytest.approx(1.0 + 0.5 / np.log2(3))
    assert ideal_dcg(2) == pytest.approx(1.0 + 1 / np.log2(3))
    assert expected_ndcg(1.0, 3, 7, 4) == pytest.approx(1.0)  # nu = 1: ideal
    with pytest.raises(ParameterError, match="n_pos_N"):
        expected_dcg(0.5, 4, 3, 1)
    with pytest.raises(ParameterError, match="n_N"):  # counts are whole numbers
        expected_dcg(0.5, 1, 2.5, 1)


@pytest.mark.parametrize("beta", [0.6, 0.8, 0.9])
def test_eq8_matches_simulation_when_its_mixing_assumption_holds(beta):
    rng = np.random.default_rng(int(beta * 10))
    n_q = 3000
    a, r, g, qptr = simulate_queries(rng, beta, n_q, exchangeable=True)
    v = nu(a, r, g, qptr=qptr)
    ranked = np.take_along_axis(r.reshape(n_q, L), np.argsort(-a.reshape(n_q, L)), axis=1)
    dcg = ranked @ DISC
    theory = expected_dcg(v, N_POS_N, N_N, N_POS_A)
    diff = dcg - theory
    # conditional expectation given nu: the mean difference is 0 up to Monte-Carlo error
    assert abs(diff.mean()) <= 4 * diff.std() / np.sqrt(n_q)


@pytest.mark.parametrize("beta", [0.6, 0.8])
def test_eq8_is_a_close_lower_bound_for_uniform_scores(beta):
    # with plain uniform scores the remaining relevant affected items sit above most
    # non-relevant ones, so Eq. (9)'s uniform mixing underestimates DCG, by under 2.5%
    rng = np.random.default_rng(5)
    n_q = 3000
    a, r, g, qptr = simulate_queries(rng, beta, n_q)
    v = nu(a, r, g, qptr=qptr)
    ranked = np.take_along_axis(r.reshape(n_q, L), np.argsort(-a.reshape(n_q, L)), axis=1)
    idcg = DISC[: N_POS_N + N_POS_A].sum()
    sim = (ranked @ DISC / idcg).mean()
    theory = expected_ndcg(v, N_POS_N, N_N, N_POS_A).mean()
    assert theory <= sim <= theory * 1.025


@pytest.mark.parametrize("counts", [(5, 10, 5), (2, 15, 3), (8, 12, 8), (1, 10, 9)])
def test_linear_fit_in_nu_within_five_percent_top20(counts):
    fit = ndcg_linear_fit(*counts, k=20)
    assert fit.max_relative_error < 0.05
    assert fit.slope > 0
    v = np.linspace(0, 1, 11)
    exact = expected_ndcg(v, *counts, k=20)
    np.testing.assert_array_less(np.abs(fit.slope * v + fit.intercept - exact), 0.05 * exact)


# --------------------------------------------------------------------------- EEL (Thm 4.2)


def test_fit_alpha_reproduces_the_paper():
    fit = fit_alpha(20)
    assert round(fit.alpha, 3) == PAPER_ALPHA
    assert round(fit.alpha_prime, 3) == PAPER_ALPHA_PRIME
    # the mean exposure of the top m ranks, m = 1: 1/log2(2) = 1 (Eq. 11 at m = 1)
    assert abs(fit.c - 1.0) <= fit.max_relative_error
    with pytest.raises(ParameterError, match="n"):
        fit_alpha(2)


def test_delta_eel_hand_value():
    # 2 (alpha * 5 + alpha' * 5) log2(10 / 7.5) with nu = 1/2
    want = 2 * (-0.146 * 5 + -0.022 * 5) * np.log2(10 / 7.5)
    assert delta_eel_theory(0.5, 5, 10, 5) == pytest.approx(want)
    assert delta_eel_theory(1.0, 5, 10, 5) == 0.0


def eel_target_exposure_nonaffected(grades, groups, n_queries):
    """Reference EEL target (binary grades): the m relevant items share ranks 1..m, the
    others ranks m+1..n; returns the target exposure of G_N per query."""
    grades = grades.reshape(n_queries, L)
    m = grades.sum(axis=1).astype(int)
    cum = np.r_[0.0, np.cumsum(DISC)]
    top = cum[m] / np.maximum(m, 1)
    rest = (cum[L] - cum[m]) / np.maximum(L - m, 1)
    per_item = np.where(grades == 1, top[:, None], rest[:, None])
    return (per_item * (1 - groups.reshape(n_queries, L))).sum(axis=1)


@pytest.mark.parametrize("beta", [0.6, 0.8, 0.9])
def test_delta_eel_monte_carlo(beta):
    rng = np.random.default_rng(11)
    n_q = 3000
    a, r, g, qptr = simulate_queries(rng, beta, n_q)
    v = nu(a, r, g, qptr=qptr, threshold=0.5)  # grades by the threshold a* = 1/2
    true_en = eel_target_exposure_nonaffected(r, g, n_q)
    biased_en = eel_target_exposure_nonaffected((a > 0.5).astype(float), g, n_q)
    sim = 2 * (true_en - biased_en)
    theory = delta_eel_theory(v, N_POS_N, N_N, N_POS_A)
    assert np.all(sim <= 1e-12) and np.all(theory <= 0)  # G_N gains exposure
    # the log-linear fits of Eqs. (11)-(12) carry the error. For n = 20 and these counts the
    # theory overstates the change by 6% (nu = 0) to 16.4% (nu = 4/5), both 0 at nu = 1:
    # stated tolerance 17% per query
    np.testing.assert_array_less(np.abs(theory - sim), 0.17 * np.abs(sim) + 1e-12)
    assert np.all(np.abs(theory) >= np.abs(sim) - 1e-12)
    # the constants refitted for this very list length behave the same
    fit = fit_alpha(L)
    refit = delta_eel_theory(v, N_POS_N, N_N, N_POS_A, alpha=fit.alpha, alpha_prime=fit.alpha_prime)
    np.testing.assert_array_less(np.abs(refit - sim), 0.17 * np.abs(sim) + 1e-12)


# --------------------------------------------------------------------------- DTR (Thm 4.3)


@pytest.mark.parametrize("beta", [0.55, 0.7, 0.9])
def test_rho_dtr_equals_nu_monte_carlo(beta):
    rng = np.random.default_rng(3)
    n_q = 2000
    a, r, g, qptr = simulate_queries(rng, beta, n_q)
    perceived = (a > 0.5).astype(float)  # discretized at a* = 1/2
    R, P, G = (x.reshape(n_q, L) for x in (r, perceived, g))
    u_a, u_n = (R * G).sum(1), (R * (1 - G)).sum(1)  # true utilities
    pu_a, pu_n = (P * G).sum(1), (P * (1 - G)).sum(1)  # biased utilities
    rho = (pu_a / pu_n) / (u_a / u_n)  # DTR target ratio, biased / true
    v = nu(a, r, g, qptr=qptr, threshold=0.5)
    np.testing.assert_allclose(rho, rho_dtr_theory(v), atol=1e-12)
    p = expected_nu(beta)
    assert abs(rho.mean() - p) <= 4 * np.sqrt(p * (1 - p) / (5 * n_q)) + 1e-12


def test_rho_dtr_theory_validation():
    assert rho_dtr_theory(0.3) == 0.3
    with pytest.raises(ParameterError, match="nu"):
        rho_dtr_theory(1.2)
