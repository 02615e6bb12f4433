"""Estimators beyond plain KS, bootstrap resampling and the assumption diagnostics."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.stats as st

import groupbias as gb
from data_loaders.synthetic import make_synthetic
from experiments.common import assumption_note
from groupbias.core.errors import AssumptionWarning
from groupbias.data.ranking_data import RankingData
from groupbias.estimate.beta_estimate import BetaEstimate
from groupbias.estimate.diagnostics import AssumptionCheck, Diagnostics, estimate_summary
from groupbias.estimate.distances import wasserstein_curves
from groupbias.estimate.estimators import AUTO_SIZES
from groupbias.estimate.ks import default_grid
from groupbias.estimate.resampling import resample_items, resample_queries
from groupbias.pipelines.tabular import run_tabular
from groupbias.reporting import paper_table
from groupbias.simulate.group_bias import Simulation


def _data(ratio=1.0, n_queries=240, seed=7):
    return make_synthetic(
        n_queries=n_queries, list_size=(10, 60), affected_share=0.35, utility_ratio=ratio, seed=seed
    )


def _estimate(est, data, sim, seed=2):
    return est.estimate(
        sim.attractiveness,
        data.groups,
        qptr=data.qptr,
        rng=np.random.default_rng(seed),
        grade_spacing=data.grade_spacing,
        relevance=sim.relevance,
    )


# ------------------------------------------------------------------------- distances


def test_wasserstein_curves_equal_scipy_per_cluster_and_grid_point():
    rng = np.random.default_rng(0)
    grid = np.array([0.25, 0.5, 0.8, 1.0])
    for trial in range(60):
        nc = int(rng.integers(1, 4))
        m, n = (int(v) for v in rng.integers(0, 12, size=2))
        x = np.round(rng.random(m) * 4) / 4 if trial % 2 else rng.random(m)
        y = np.round(rng.random(n) * 4) / 4 if trial % 3 else rng.random(n)
        cx, cy = rng.integers(0, nc, m), rng.integers(0, nc, n)
        w = wasserstein_curves(x, cx, y, cy, nc, grid)
        for c in range(nc):
            a, b = x[cx == c], y[cy == c]
            for j, beta in enumerate(grid):
                if a.size == 0 or b.size == 0:
                    assert np.isnan(w[c, j])
                else:
                    assert w[c, j] == pytest.approx(st.wasserstein_distance(a / beta, b), abs=1e-12)


def test_wasserstein_distance_recovers_beta_on_equal_merit_data():
    data = _data(n_queries=400)
    sim = gb.GroupBias(beta_std=0.0).simulate(data, beta=0.7, rng=np.random.default_rng(1))
    est = _estimate(gb.KSEstimator(distance="wasserstein"), data, sim)
    assert abs(est.beta_hat_mean - 0.7) <= 0.03


def test_unknown_distance_is_refused_by_name():
    with pytest.raises(gb.ParameterError, match="distance"):
        gb.KSEstimator(distance="energy")


# ------------------------------------------------------------------------- calibrated


def test_calibrated_reads_only_the_labeled_queries_relevance():
    data = _data()
    sim = gb.GroupBias().simulate(data, beta=0.8, rng=np.random.default_rng(1))
    est = gb.CalibratedKSEstimator(labeled_fraction=0.1, bootstrap=0)  # the point estimate
    lab = est.labeled_queries(data.n_queries, np.random.default_rng(2))
    assert lab.size == round(0.1 * data.n_queries)
    other = ~np.isin(data.query_index(), lab)
    scrambled = sim.relevance.copy()
    scrambled[other] = np.random.default_rng(9).random(int(other.sum()))
    a = _estimate(est, data, sim)
    b = est.estimate(
        sim.attractiveness,
        data.groups,
        qptr=data.qptr,
        rng=np.random.default_rng(2),
        grade_spacing=data.grade_spacing,
        relevance=scrambled,
    )
    np.testing.assert_array_equal(a.beta_hat, b.beta_hat)
    assert a.info["labeled_queries"] == lab.size


@pytest.mark.parametrize("beta", [1.0, 0.6])
def test_calibrated_survives_unequal_merit_where_plain_ks_fails(beta):
    data = _data(ratio=0.6, n_queries=1000)
    sim = gb.GroupBias().simulate(data, beta=beta, rng=np.random.default_rng(1))
    truth = float(sim.beta_query.mean())
    plain = _estimate(gb.KSEstimator(), data, sim).beta_hat_mean
    calibrated = _estimate(gb.CalibratedKSEstimator(labeled_fraction=0.05, bootstrap=0), data, sim)
    assert abs(calibrated.beta_hat_mean - truth) <= 0.05
    assert abs(plain - truth) >= 0.06 and abs(plain - truth) > 2 * abs(
        calibrated.beta_hat_mean - truth
    )


def test_calibrated_without_relevance_names_it():
    data = _data()
    sim = gb.GroupBias().simulate(data, beta=0.8, rng=np.random.default_rng(1))
    with pytest.raises(gb.ParameterError, match="relevance"):
        gb.CalibratedKSEstimator().estimate(
            sim.attractiveness, data.groups, qptr=data.qptr, rng=np.random.default_rng(0)
        )
    with pytest.raises(gb.ParameterError, match="labeled_fraction"):
        gb.CalibratedKSEstimator(labeled_fraction=0.0)


# ------------------------------------------------------------------------- shrinkage


@pytest.mark.parametrize("seed", [0, 1])
def test_shrinkage_beats_per_query_and_cluster_ks_at_sigma_03(seed):
    data = _data(seed=seed)
    sim = gb.GroupBias(beta_std=0.3).simulate(data, beta=0.8, rng=np.random.default_rng(seed))

    def err(est):
        return float(
            np.nanmean(np.abs(_estimate(est, data, sim).beta_hat_per_query - sim.beta_query))
        )

    shrink = err(gb.ShrinkageEstimator())
    assert shrink < err(gb.KSEstimator(cluster_size=1))
    assert shrink < err(gb.KSEstimator())


def test_shrinkage_settings_are_checked():
    with pytest.raises(gb.ParameterError, match="bootstrap"):
        gb.ShrinkageEstimator(bootstrap=50)
    with pytest.raises(gb.ParameterError, match="cluster_size"):
        gb.ShrinkageEstimator(cluster_size=1)


# ------------------------------------------------------------------------- bootstrap


def test_query_resampling_stays_within_clusters_and_keeps_their_sizes():
    qptr = np.array([0, 2, 5, 6, 10, 13])
    cluster = np.array([0, 1, 0, 1, 1])
    items, new_qptr, new_cluster = resample_queries(
        qptr, cluster, range(3), np.random.default_rng(0)
    )
    sizes = np.diff(qptr)
    source = np.searchsorted(qptr, items, side="right") - 1  # original query of every item
    for j in range(new_qptr.size - 1):
        q = np.unique(source[new_qptr[j] : new_qptr[j + 1]])
        assert q.size == 1 and sizes[q[0]] == new_qptr[j + 1] - new_qptr[j]
        assert new_cluster[j] % 2 == cluster[q[0]]
    assert np.bincount(new_cluster).tolist() == [2, 3] * 3


def test_item_resampling_keeps_every_query_and_group_count():
    qptr = np.array([0, 4, 9])
    aff = np.array([1, 0, 0, 1, 0, 0, 1, 0, 0], dtype=bool)
    items, new_qptr = resample_items(qptr, aff, range(4), np.random.default_rng(1))
    assert new_qptr.tolist() == [0, 4, 9, 13, 18, 22, 27, 31, 36]
    for j in range(8):
        src = items[new_qptr[j] : new_qptr[j + 1]]
        q = j % 2
        assert np.all((src >= qptr[q]) & (src < qptr[q + 1]))
        assert aff[src].sum() == aff[qptr[q] : qptr[q + 1]].sum()


def test_bootstrap_interval_covers_truth_and_narrows_with_more_queries():
    widths = []
    for n in (150, 600):
        data = _data(n_queries=n, seed=3)
        sim = gb.GroupBias().simulate(data, beta=0.7, rng=np.random.default_rng(4))
        est = _estimate(gb.KSEstimator(bootstrap=60, confidence=0.95), data, sim)
        truth = float(sim.beta_query.mean())
        assert est.ci_low[0] - 0.02 <= truth <= est.ci_high[0] + 0.02
        assert est.ci_low[0] <= est.beta_hat[0] <= est.ci_high[0]
        widths.append(float(est.ci_high[0] - est.ci_low[0]))
    assert 0 < widths[1] < widths[0]


def test_single_query_clusters_get_item_noise_intervals():
    data = _data(n_queries=20)
    sim = gb.GroupBias().simulate(data, beta=0.8, rng=np.random.default_rng(4))
    est = _estimate(gb.KSEstimator(cluster_size=1, bootstrap=20), data, sim)
    ok = np.isfinite(est.ci_low)
    assert ok.sum() >= 15 and np.mean(est.ci_high[ok] - est.ci_low[ok]) > 0.02


@pytest.mark.parametrize(("beta_std", "small"), [(0.0, False), (0.3, True)])
def test_auto_cluster_size_follows_the_heterogeneity(beta_std, small):
    data = _data(seed=1)
    sim = gb.GroupBias(beta_std=beta_std).simulate(data, beta=0.8, rng=np.random.default_rng(1))
    est = _estimate(gb.KSEstimator(cluster_size="auto"), data, sim)
    k = est.info["cluster_size"]
    assert set(est.info["mse"]) == set(AUTO_SIZES)
    if small:
        assert k is not None and k <= 2
    else:
        assert k is None or k >= 50


# ------------------------------------------------------------------------- diagnostics


def test_null_check_warns_on_unequal_merit_and_flags_the_table_row():
    data = _data(ratio=0.6)
    with pytest.warns(AssumptionWarning, match="utilities differ.*calibrated"):
        res = run_tabular(
            data,
            beta=0.8,
            bias=gb.GroupBias(),
            estimator=gb.KSEstimator(),
            rng=np.random.default_rng(0),
        )
    diag = {r["metric"]: r["value"] for r in res.records if r["condition"] == "diagnostic"}
    assert diag["assumption_violated"] == 1.0
    assert diag["null_error"] > 0.05
    assert diag["utility_ratio"] == pytest.approx(0.6, abs=0.05)
    table = paper_table(res.records, metrics=("ndcg@10",))
    cell = table[("β = 0.8", "null β̂", "")].iloc[0]
    assert cell.endswith("!") and float(cell[:-1]) == pytest.approx(diag["null_beta_hat"], abs=1e-3)


@pytest.mark.slow  # a subprocess or a whole run: seconds
def test_null_check_passes_on_equal_merit_and_with_the_calibrated_estimator():
    with warnings.catch_warnings():
        warnings.simplefilter("error", AssumptionWarning)
        for ratio, est in ((1.0, gb.KSEstimator()), (0.6, gb.CalibratedKSEstimator())):
            res = run_tabular(
                _data(ratio=ratio),
                beta=0.8,
                bias=gb.GroupBias(),
                estimator=est,
                rng=np.random.default_rng(0),
            )
            diag = {r["metric"]: r["value"] for r in res.records if r["condition"] == "diagnostic"}
            assert diag["assumption_violated"] == 0.0


def test_the_check_judges_the_null_simulation_it_is_handed():
    # 4 queries of grades 1..4 twice, one copy affected: both groups have the same relevance
    labels = np.tile([1, 1, 2, 2, 3, 3, 4, 4], 4).astype(float)
    groups = np.tile([1, 0], 16).astype(float)
    data = RankingData(
        features=np.zeros((32, 1)),
        labels=labels,
        qptr=np.arange(0, 33, 8),
        query_ids=np.arange(4),
        groups=groups,
        label_max=4.0,
    )
    rel = labels / 4

    def null(factor):  # affected attractiveness factor * P(R), true beta_q = 1 everywhere
        a = rel * np.where(groups == 1, factor, 1.0)
        return Simulation(rel, a, np.ones(4), None, np.ones(1))

    est = gb.KSEstimator(jitter=0.0)  # no noise: A_A / 0.5 equals A_N exactly
    rng = np.random.default_rng(0)
    ok = Diagnostics().check(data, null(1.0), estimator=est, rng=rng)
    assert (ok.utility_ratio, ok.ks_relevance, ok.null_beta_hat) == (1.0, 0.0, 1.0)
    assert not ok.violated
    # handed scores that are biased after all, the check reports what the estimator sees
    with pytest.warns(AssumptionWarning, match="estimates β̂ = 0.500"):
        bad = Diagnostics().check(data, null(0.5), estimator=est, rng=rng)
    assert bad.null_beta_hat == pytest.approx(0.5, abs=1e-12)
    assert bad.null_error == pytest.approx(0.5, abs=1e-12) and bad.violated


def test_null_check_does_not_change_the_run():
    data = _data()
    kw = dict(beta=0.8, bias=gb.GroupBias(), estimator=gb.KSEstimator())
    a = run_tabular(data, rng=np.random.default_rng(5), **kw)
    b = run_tabular(data, rng=np.random.default_rng(5), diagnostics=None, **kw)
    assert repr([r for r in a.records if r["condition"] != "diagnostic"]) == repr(b.records)


def test_the_warning_names_the_cause_it_measured():
    base = dict(null_beta_hat=0.9, null_beta_true=0.97, tolerance=0.05)
    small = AssumptionCheck(
        utility_ratio=0.99, ks_relevance=0.02, ks_relevance_cluster=0.21, n_clusters=20, **base
    )
    merit = AssumptionCheck(utility_ratio=0.6, ks_relevance=0.15, ks_relevance_cluster=0.15, **base)
    assert small.violated and merit.violated
    assert not small.unequal_merit and merit.unequal_merit
    assert "clusters are too small" in small.message("x") and "shrinkage" in small.message("x")
    assert "utilities differ" in merit.message("x") and "calibrated" in merit.message("x")
    ok = AssumptionCheck(
        utility_ratio=0.6,
        ks_relevance=0.15,
        ks_relevance_cluster=0.15,
        null_beta_hat=0.95,
        null_beta_true=0.97,
        tolerance=0.05,
    )
    assert not ok.violated and ok.null_error == pytest.approx(0.02)
    # the signed bias it measured is recorded beside the flag and printed in the warning
    assert ok.null_bias == pytest.approx(-0.02) and small.null_bias == pytest.approx(-0.07)
    values = small.values()
    assert values["null_bias"] == pytest.approx(-0.07) and values["assumption_violated"] == 1.0
    assert "null bias -0.070: off by 0.070 > 0.05" in small.message("x")
    recs = small.records({"dataset": "d"})
    assert [r["metric"] for r in recs if r["metric"].startswith("null")] == [
        "null_beta_hat",
        "null_beta_true",
        "null_bias",
        "null_error",
    ]
    note = assumption_note(recs)
    assert note is not None and "unreliable for d (null bias -0.070)" in note


def test_estimate_summary_by_hand():
    grid = np.array([0.25, 0.5, 0.75, 1.0])
    curves = np.array([[0.3, 0.105, 0.1, 0.2], [0.5, 0.4, 0.3, 0.2], [np.nan] * 4])
    est = BetaEstimate(
        beta_hat=np.array([0.75, 1.0, np.nan]),
        cluster_of_query=np.arange(3),
        beta_hat_per_query=np.array([0.75, 1.0, np.nan]),
        grid=grid,
        ks_curve=curves,
        n_affected=np.ones(3, np.int64),
        n_non_affected=np.ones(3, np.int64),
        cluster_labels=np.arange(3),
        ci_low=np.array([0.6, 0.9, np.nan]),
        ci_high=np.array([0.8, 1.0, np.nan]),
    )
    s = estimate_summary(est, tol=0.01)
    assert s["ks_min"] == pytest.approx((0.1 + 0.2) / 2)
    assert s["flat_width"] == pytest.approx((0.25 + 0.0) / 2)  # cluster 0: 0.5..0.75
    assert s["cluster_spread"] == pytest.approx(0.125)
    assert s["ci_low"] == pytest.approx(0.75) and s["ci_high"] == pytest.approx(0.9)


def test_an_estimate_without_a_curve_summarizes_to_nan_curve_fields():
    # an estimator with no grid search fills neither grid nor ks_curve
    est = BetaEstimate(
        beta_hat=np.array([0.6, 0.8]),
        cluster_of_query=np.array([0, 1, 1]),
        beta_hat_per_query=np.array([0.6, 0.8, 0.8]),
        n_affected=np.ones(2, np.int64),
        n_non_affected=np.ones(2, np.int64),
        cluster_labels=np.arange(2),
    )
    assert est.grid is None and est.ks_curve is None
    assert np.isnan(est.ks_min).all() and est.ks_min.shape == (2,)
    s = estimate_summary(est)
    assert np.isnan(s["ks_min"]) and np.isnan(s["flat_width"])
    assert np.isnan(s["cluster_spread"]) and np.isnan(s["ci_low"])
    assert est.beta_hat_mean == pytest.approx(0.7)


def test_default_grid_is_what_the_summary_reads():
    assert default_grid(0.25).tolist() == [0.25, 0.5, 0.75, 1.0]


def test_keep_items_by_hand_drops_emptied_queries():
    data = gb.RankingData(
        features=np.arange(12, dtype=np.float64).reshape(6, 2),
        labels=np.array([0.0, 1, 2, 3, 4, 5]),
        qptr=np.array([0, 2, 2, 5, 6]),
        query_ids=np.array([10, 11, 12, 13]),
        groups=np.array([0.0, 1, 0, 1, 1, 0]),
    )
    out = data.keep_items(np.array([True, False, False, False, True, True]))
    assert out.qptr.tolist() == [0, 1, 2, 3]
    assert out.query_ids.tolist() == [10, 12, 13]
    assert out.labels.tolist() == [0.0, 4.0, 5.0]
    assert out.groups.tolist() == [0.0, 1.0, 0.0]
    assert out.features[:, 0].tolist() == [0.0, 8.0, 10.0]


def test_auto_cluster_size_and_bootstrap_reach_the_run_records():
    data = _data(seed=1)
    res = run_tabular(
        data,
        beta=0.8,
        bias=gb.GroupBias(beta_std=0.3),
        estimator=gb.KSEstimator(cluster_size="auto", bootstrap=10),
        rng=np.random.default_rng(0),
    )
    est = next(r for r in res.records if r["metric"] == "beta_hat")
    assert est["cluster_size"] == "auto"
    assert est["cluster_size_chosen"] in [k for k in AUTO_SIZES if k is not None]
    assert est["ci_low"] <= est["ci_high"]
    assert all(r["cluster_size"] == "auto" for r in res.records)


def _two_kinds_of_queries(nq=40, size=10):
    """Half the queries hold affected positives of grade 4, half of grade 1 (non-affected:
    alternating): a labeled sample of 2 queries from one half misrepresents the other."""
    labels = np.zeros((nq, size))
    labels[:, [0, 1]] = np.where(np.arange(nq) < nq // 2, 4, 1)[:, None]
    labels[:, [5, 6]] = np.where(np.arange(nq) % 2 == 0, 4, 1)[:, None]
    return RankingData(
        features=np.zeros((nq * size, 1)),
        labels=labels.ravel(),
        qptr=np.arange(0, nq * size + 1, size),
        query_ids=np.arange(nq),
        groups=np.tile((np.arange(size) < 5).astype(float), nq),
        label_max=4.0,
    )


def test_calibrated_null_check_exercises_the_runs_labeled_sample():
    """The calibrated estimator's error is its labeled sample's: the check runs it on the
    run's own sample at the known β 0.5 (so an overestimate shows: at β = 1 it would stop at
    the grid's top), reports a bootstrap interval by default and warns with the count of
    labeled affected positives. Here the 2 labeled queries both hold grade-1 affected
    positives: β̂ = 1.00 at β = 0.8, and the null β̂ is 2.00, flagged."""
    from groupbias.estimate.diagnostics import LABELED_CHECK_BETA

    data = _two_kinds_of_queries()
    est = gb.CalibratedKSEstimator(labeled_fraction=0.05)
    assert est.bootstrap == 200
    with pytest.warns(AssumptionWarning) as caught:
        res = run_tabular(
            data,
            beta=0.8,
            bias=gb.GroupBias(beta_std=0.0),
            estimator=est,
            rng=np.random.default_rng(0),
        )
    texts = [str(w.message) for w in caught]
    assert any("2 labeled queries" in t and "hold 4 affected items" in t for t in texts)
    by = {r["metric"]: r for r in res.records if r["condition"] in ("estimate", "diagnostic")}
    assert by["beta_hat"]["value"] == pytest.approx(1.0) and res.beta_hat_per_query.size == 40
    # every bootstrap replicate draws its own labeled sample: the interval covers the true β
    # that the point estimate of this unlucky sample misses
    low, high = by["beta_hat"]["ci_low"], by["beta_hat"]["ci_high"]
    assert low <= 0.8 <= high < by["beta_hat"]["value"]
    assert by["assumption_violated"]["value"] == 1.0
    flagged = [t for t in texts if "labeled sample (2 queries holding 4" in t]
    assert flagged and "estimator=calibrated" not in flagged[0]
    # the check's number by hand: KS against the affected positives of two grade-1 queries
    # (the run's sample), affected attractiveness at β = 0.5 (σ_β = 0: no noise), rescaled
    null = gb.GroupBias(beta_std=0.0).simulate_null(data, rng=np.random.default_rng(1))
    aff = data.groups == 1
    ref = null.relevance[np.isin(data.query_index(), [20, 21]) & aff]
    hand = gb.estimate_beta(
        np.where(aff, null.attractiveness * LABELED_CHECK_BETA, null.attractiveness),
        data.groups,
        qptr=data.qptr,
        reference=ref[ref > 0],
        grade_spacing=data.grade_spacing,
        rng=np.random.default_rng(0),
    )
    assert by["null_beta_hat"]["value"] == pytest.approx(hand.beta_hat_mean / LABELED_CHECK_BETA)
    assert by["null_beta_hat"]["value"] == pytest.approx(2.0)


def test_the_warning_names_the_estimator_that_ran():
    """With one global cluster and equal KS distances the check does not blame "clusters too
    small"; the calibrated estimator is never told to use estimator=calibrated."""
    base = dict(null_beta_hat=0.9, null_beta_true=0.97, tolerance=0.05)
    equal = dict(utility_ratio=1.0, ks_relevance=0.031, ks_relevance_cluster=0.031)
    one = AssumptionCheck(**equal, **base, estimator="ks", n_clusters=1)
    assert "too small" not in one.message("x") and "sampling error" in one.message("x")
    assert "the ks estimator" in one.message("x")
    cal = AssumptionCheck(
        **equal, **base, estimator="calibrated", labeled_queries=10, labeled_positives=7
    )
    text = cal.message("x")
    assert "the calibrated estimator" in text and "estimator=calibrated" not in text
    assert "10 queries holding 7 affected items" in text and "labeled_fraction" in text
    unequal = AssumptionCheck(
        utility_ratio=0.6, ks_relevance=0.2, ks_relevance_cluster=0.2, **base, estimator="shrinkage"
    )
    assert "estimator=calibrated" in unequal.message("x")
