"""Tests of the IPS correction of group bias (paper §5)."""

from __future__ import annotations

import numpy as np
import pytest

from groupbias.core.errors import ParameterError
from groupbias.estimate.correction import correct_with_estimate, ips_correct
from groupbias.estimate.ks import estimate_beta
from groupbias.simulate.group_bias import simulate_attractiveness


def test_hand_example():
    a = np.array([0.4, 0.5, 0.3, 0.6])
    g = np.array([1.0, 0.0, 0.5, 1.0])
    qptr = np.array([0, 3, 4])
    out = ips_correct(a, g, qptr=qptr, beta_hat_per_query=np.array([0.8, 0.5]))
    expected = [
        0.4 / 0.8,  # affected
        0.5,  # non-affected unchanged
        0.3 / (0.5 * 0.8 + 0.5),  # probability 1/2: 0.3 / 0.9
        0.6 / 0.5,
    ]
    np.testing.assert_allclose(out, expected)


def test_nan_estimate_leaves_query_unchanged_and_inputs_intact():
    a = np.array([0.4, 0.5, 0.3, 0.6])
    g = np.array([1.0, 0.0, 1.0, 0.0])
    qptr = np.array([0, 2, 4])
    b = np.array([np.nan, 0.5])
    out = ips_correct(a, g, qptr=qptr, beta_hat_per_query=b)
    np.testing.assert_allclose(out, [0.4, 0.5, 0.6, 0.6])
    np.testing.assert_array_equal(a, [0.4, 0.5, 0.3, 0.6])
    assert not np.shares_memory(out, a)


@pytest.mark.parametrize("beta", [0.0, -0.2, 1.5, np.inf])
def test_rejects_impossible_estimates(beta):
    with pytest.raises(ParameterError, match="beta_hat_per_query"):
        ips_correct(
            np.array([0.4]),
            np.array([1.0]),
            qptr=np.array([0, 1]),
            beta_hat_per_query=np.array([beta]),
        )


def test_validation():
    with pytest.raises(ParameterError, match="groups"):
        ips_correct(
            np.array([0.4]),
            np.array([2.0]),
            qptr=np.array([0, 1]),
            beta_hat_per_query=np.array([0.5]),
        )
    with pytest.raises(ParameterError, match="beta_hat_per_query"):
        ips_correct(
            np.array([0.4]),
            np.array([1.0]),
            qptr=np.array([0, 1]),
            beta_hat_per_query=np.array([0.5, 0.5]),
        )
    with pytest.raises(ParameterError, match="attractiveness"):
        ips_correct(
            np.array([-0.4]),
            np.array([1.0]),
            qptr=np.array([0, 1]),
            beta_hat_per_query=np.array([0.5]),
        )


def test_true_beta_inverts_the_simulation(rng):
    n_q, size = 30, 7
    qptr = np.arange(0, n_q * size + 1, size)
    rel = rng.random(n_q * size)
    g = rng.random(n_q * size)  # membership probabilities, the expectation model
    beta = rng.uniform(0.3, 1.0, n_q)
    a = simulate_attractiveness(rel, g, qptr=qptr, beta_query=beta)
    np.testing.assert_allclose(
        ips_correct(a, g, qptr=qptr, beta_hat_per_query=beta), rel, rtol=1e-12
    )


def test_estimate_then_correct_restores_group_balance(rng):
    # equal relevance distributions, beta_q ~ N(0.7, 0.1): after the amortized correction
    # the mean positive score of the affected group matches the non-affected one again
    n_q, size = 500, 20
    qptr = np.arange(0, n_q * size + 1, size)
    g = (rng.random(n_q * size) < 0.5).astype(float)
    rel = rng.integers(0, 5, n_q * size) / 4
    beta = np.clip(rng.normal(0.7, 0.1, n_q), 0.01, 1)
    a = simulate_attractiveness(rel, g, qptr=qptr, beta_query=beta)
    est = estimate_beta(a, g, qptr=qptr, rng=rng)
    corrected = correct_with_estimate(a, g, qptr=qptr, estimate=est)
    aff, non = (g == 1) & (rel > 0), (g == 0) & (rel > 0)
    biased_ratio = a[aff].mean() / a[non].mean()
    corrected_ratio = corrected[aff].mean() / corrected[non].mean()
    assert abs(biased_ratio - 0.7) < 0.03
    assert abs(corrected_ratio - 1.0) < 0.03
    np.testing.assert_array_equal(corrected[g == 0], a[g == 0])


def test_an_overflowing_correction_is_refused_naming_the_item():
    # 1.7e308 / 0.01 is beyond the largest float: an error, not an inf score
    a = np.array([1.0, 1.7e308, 2.0])
    g = np.array([0.0, 1.0, 1.0])
    with pytest.raises(ParameterError, match=r"item 1: 1\.7e\+308 / 0\.01 overflows"):
        ips_correct(a, g, qptr=np.array([0, 3]), beta_hat_per_query=np.array([0.01]))
    # the same scores corrected by a propensity that keeps them finite are fine
    out = ips_correct(a, g, qptr=np.array([0, 3]), beta_hat_per_query=np.array([1.0]))
    np.testing.assert_array_equal(out, a)
