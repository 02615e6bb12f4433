"""Tests of the group-bias simulator (paper §3 Eq. 2, §6.1, §6.4.2) and the click model."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from groupbias.core.errors import ParameterError
from groupbias.data.ranking_data import RankingData
from groupbias.simulate.clicks import (
    attractiveness_from_clicks,
    examination_probability,
    simulate_clicks,
)
from groupbias.simulate.group_bias import (
    Simulation,
    draw_query_beta,
    draw_two_mode_beta,
    relevance_from_labels,
    simulate_attractiveness,
    simulate_group_bias,
)

# --------------------------------------------------------------------------- relevance


def test_relevance_graded_default_and_given_max():
    labels = np.array([0, 1, 2, 4])
    np.testing.assert_allclose(relevance_from_labels(labels), [0, 0.25, 0.5, 1.0])  # /4
    np.testing.assert_allclose(
        relevance_from_labels(labels, label_max=8), [0, 0.125, 0.25, 0.5]
    )  # /8
    np.testing.assert_array_equal(relevance_from_labels(np.zeros(3)), np.zeros(3))


def test_relevance_continuous_passes_through_and_validates():
    s = np.array([0.0, 0.3, 1.0])
    out = relevance_from_labels(s, mode="continuous")
    np.testing.assert_array_equal(out, s)
    assert not np.shares_memory(out, s)
    with pytest.raises(ParameterError, match="labels"):
        relevance_from_labels(np.array([0.2, 1.5]), mode="continuous")


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"label_max": 0}, "label_max"),
        ({"label_max": -2}, "label_max"),
        ({"label_max": 3}, "labels"),  # a label of 4 exceeds it
        ({"mode": "binary"}, "mode"),
    ],
)
def test_relevance_rejects_impossible_parameters(kwargs, match):
    with pytest.raises(ParameterError, match=match):
        relevance_from_labels(np.array([0, 4]), **kwargs)


def test_relevance_rejects_negative_labels():
    with pytest.raises(ParameterError, match="labels"):
        relevance_from_labels(np.array([-1, 2]))


# --------------------------------------------------------------------------- propensities


def test_beta_draws_follow_the_normal(rng):
    b = draw_query_beta(200_000, beta_mean=0.6, beta_std=0.1, rng=rng)
    assert b.shape == (200_000,)
    assert abs(b.mean() - 0.6) < 0.002 and abs(b.std() - 0.1) < 0.002


@pytest.mark.reproducibility
def test_beta_draws_are_seeded():
    b1 = draw_query_beta(50, beta_mean=0.8, beta_std=0.1, rng=np.random.default_rng(0))
    b2 = draw_query_beta(50, beta_mean=0.8, beta_std=0.1, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(b1, b2)


def test_beta_clip_puts_an_atom_at_one(rng):
    b = draw_query_beta(100_000, beta_mean=0.9, beta_std=0.3, rng=rng)
    assert b.min() >= 0.01 and b.max() <= 1.0
    # P(N(0.9, 0.3) > 1) = 1 - Phi(1/3)
    assert abs(np.mean(b == 1.0) - stats.norm.sf(1 / 3)) < 0.006


def test_beta_resample_is_the_truncated_normal(rng):
    b = draw_query_beta(
        100_000, beta_mean=0.9, beta_std=0.3, rng=rng, out_of_range="resample", beta_min=0.05
    )
    assert b.min() >= 0.05 and b.max() <= 1.0 and np.mean(b == 1.0) < 1e-3
    ref = stats.truncnorm((0.05 - 0.9) / 0.3, (1 - 0.9) / 0.3, loc=0.9, scale=0.3)
    assert abs(b.mean() - ref.mean()) < 0.003
    assert stats.kstest(b[:5000], ref.cdf).pvalue > 1e-3


def test_beta_std_zero_gives_the_mean(rng):
    np.testing.assert_array_equal(
        draw_query_beta(4, beta_mean=0.7, beta_std=0, rng=rng), np.full(4, 0.7)
    )


def test_per_cluster_means(rng):
    c = np.repeat([0, 1], 20_000)
    b = draw_query_beta(40_000, beta_mean=[0.5, 0.9], beta_std=0.05, rng=rng, cluster_of_query=c)
    assert abs(b[:20_000].mean() - 0.5) < 0.003
    assert abs(b[20_000:].mean() - 0.9) < 0.003
    with pytest.raises(ParameterError, match="cluster_of_query"):
        draw_query_beta(
            3, beta_mean=[0.5, 0.9], beta_std=0.05, rng=rng, cluster_of_query=np.array([0, 1, 2])
        )


def test_two_mode_mixture(rng):
    beta, mode = draw_two_mode_beta(40_000, modes=(0.6, 0.8), beta_std=0.02, rng=rng)
    assert abs(np.mean(mode == 0) - 0.5) < 0.01
    assert abs(beta[mode == 0].mean() - 0.6) < 0.002
    assert abs(beta[mode == 1].mean() - 0.8) < 0.002


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"beta_mean": 0.0}, "beta_mean"),
        ({"beta_mean": 1.2}, "beta_mean"),
        ({"beta_mean": 0.005}, "beta_mean"),  # below beta_min
        ({"beta_std": -0.1}, "beta_std"),
        ({"beta_min": 0.0}, "beta_min"),
        ({"out_of_range": "reflect"}, "out_of_range"),
    ],
)
def test_beta_rejects_impossible_parameters(rng, kwargs, match):
    args = {"beta_mean": 0.8, "beta_std": 0.1, **kwargs}
    with pytest.raises(ParameterError, match=match):
        draw_query_beta(10, rng=rng, **args)


def test_beta_requires_a_generator():
    with pytest.raises(ParameterError, match="rng"):
        draw_query_beta(10, beta_mean=0.8, beta_std=0.1, rng=42)


# --------------------------------------------------------------------------- attractiveness


def test_attractiveness_hand_example():
    rel = np.array([0.5, 1.0, 0.4, 0.8, 1.0])
    groups = np.array([1.0, 0.0, 0.5, 1.0, 0.0])
    qptr = np.array([0, 3, 5])
    beta = np.array([0.6, 0.9])
    out = simulate_attractiveness(rel, groups, qptr=qptr, beta_query=beta)
    expected = [
        0.5 * 0.6,  # affected, query 0
        1.0,  # non-affected
        0.4 * (0.5 * 0.6 + 0.5),  # membership probability 1/2: 0.4 * 0.8
        0.8 * 0.9,  # affected, query 1
        1.0,
    ]
    np.testing.assert_allclose(out, expected)
    np.testing.assert_array_equal(rel, [0.5, 1.0, 0.4, 0.8, 1.0])  # not mutated


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"relevance": np.array([0.5, 1.5])}, "relevance"),
        ({"groups": np.array([0.0, 2.0])}, "groups"),
        ({"beta_query": np.array([0.0])}, "beta_query"),
        ({"beta_query": np.array([0.5, 0.5])}, "beta_query"),
        ({"qptr": np.array([0, 1])}, "qptr"),
    ],
)
def test_attractiveness_validation(kwargs, match):
    args = {
        "relevance": np.array([0.5, 1.0]),
        "groups": np.array([1.0, 0.0]),
        "qptr": np.array([0, 2]),
        "beta_query": np.array([0.8]),
        **kwargs,
    }
    with pytest.raises(ParameterError, match=match):
        simulate_attractiveness(
            args["relevance"], args["groups"], qptr=args["qptr"], beta_query=args["beta_query"]
        )


def make_data(rng, n_queries=50, size=10, groups=True):
    n = n_queries * size
    return RankingData(
        features=rng.random((n, 3)).astype(np.float32),
        labels=rng.integers(0, 5, n),
        qptr=np.arange(0, n + 1, size),
        query_ids=np.arange(n_queries),
        groups=(rng.random(n) < 0.4).astype(float) if groups else None,
        label_max=4.0,
        name="synthetic",
    )


def test_simulate_group_bias_normal(rng):
    data = make_data(rng)
    sim = simulate_group_bias(data, beta_mean=0.7, beta_std=0.1, rng=rng)
    assert isinstance(sim, Simulation) and sim.mode_of_query is None
    np.testing.assert_allclose(sim.relevance, data.labels / 4.0)
    bq = np.repeat(sim.beta_query, 10)
    np.testing.assert_allclose(
        sim.attractiveness, np.where(data.groups == 1, bq, 1.0) * data.labels / 4.0
    )
    assert sim.beta_query.shape == (50,)


def test_simulate_group_bias_two_mode_and_clusters(rng):
    data = make_data(rng, n_queries=400)
    sim = simulate_group_bias(data, variant="two_mode", beta_std=0.01, rng=rng)
    assert set(np.unique(sim.mode_of_query)) == {0, 1}
    assert abs(sim.beta_query[sim.mode_of_query == 0].mean() - 0.6) < 0.01
    c = np.arange(400) % 2
    sim = simulate_group_bias(
        data, variant="clusters", beta_mean=[0.5, 0.9], cluster_of_query=c, beta_std=0.0, rng=rng
    )
    np.testing.assert_array_equal(sim.beta_query, np.where(c == 0, 0.5, 0.9))
    np.testing.assert_array_equal(sim.mode_of_query, c)


def test_simulate_group_bias_validation(rng):
    with pytest.raises(ParameterError, match="groups"):
        simulate_group_bias(make_data(rng, groups=False), beta_mean=0.8, rng=rng)
    data = make_data(rng)
    with pytest.raises(ParameterError, match="beta_mean"):
        simulate_group_bias(data, variant="two_mode", beta_mean=0.8, rng=rng)
    with pytest.raises(ParameterError, match="beta_mean"):
        simulate_group_bias(data, rng=rng)
    with pytest.raises(ParameterError, match="variant"):
        simulate_group_bias(data, beta_mean=0.8, variant="uniform", rng=rng)


# --------------------------------------------------------------------------- clicks


def test_examination_probability_hand_values():
    np.testing.assert_allclose(
        examination_probability(np.array([1, 2, 4]), eta=1.0), [1.0, 0.5, 0.25]
    )
    np.testing.assert_allclose(
        examination_probability(np.array([1, 2, 4]), eta=2.0), [1.0, 0.25, 1 / 16]
    )
    with pytest.raises(ParameterError, match="eta"):
        examination_probability(np.array([1]), eta=-1)


def test_clicks_follow_the_position_based_model(rng):
    # 2000 queries of 4 items; ranking scores put the items in reverse order
    n_q, size = 2000, 4
    a = np.tile([0.2, 0.4, 0.6, 0.8], n_q)
    scores = np.tile([1.0, 2.0, 3.0, 4.0], n_q)  # rank of item j is 4 - j
    qptr = np.arange(0, n_q * size + 1, size)
    clicks, imp = simulate_clicks(a, qptr=qptr, ranking_scores=scores, n_sessions=50, rng=rng)
    pe = 1.0 / np.tile([4.0, 3.0, 2.0, 1.0], n_q)
    np.testing.assert_allclose(imp, 50 * pe)
    mean_clicks = clicks.reshape(n_q, size).mean(axis=0)
    np.testing.assert_allclose(mean_clicks, 50 * pe[:4] * a[:4], rtol=0.03)
    est = attractiveness_from_clicks(clicks, imp).reshape(n_q, size).mean(axis=0)
    np.testing.assert_allclose(est, a[:4], rtol=0.03)  # IPS is unbiased


def test_click_validation(rng):
    qptr = np.array([0, 2])
    with pytest.raises(ParameterError, match="n_sessions"):
        simulate_clicks(
            np.array([0.5, 0.5]), qptr=qptr, ranking_scores=np.ones(2), n_sessions=0, rng=rng
        )
    with pytest.raises(ParameterError, match="attractiveness"):
        simulate_clicks(
            np.array([0.5, 1.5]), qptr=qptr, ranking_scores=np.ones(2), n_sessions=3, rng=rng
        )
    np.testing.assert_array_equal(
        attractiveness_from_clicks(np.array([3, 0]), np.array([0.0, 2.0])), [0, 0]
    )
