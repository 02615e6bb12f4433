"""Tests of the amortized KS estimator of the group propensity (paper §5.1–5.2)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from groupbias.core.errors import ParameterError
from groupbias.estimate import ks_exact
from groupbias.estimate.beta_estimate import BetaEstimate
from groupbias.estimate.ks import (
    argmin_largest,
    default_grid,
    estimate_beta,
    ks_curves,
    ks_statistic,
    random_clusters,
    tie_break_jitter,
)


def brute_curves(x, cx, y, cy, n_clusters, grid):
    """Independent reference: scipy's two-sample KS on A_A / beta for every grid point."""
    out = np.full((n_clusters, grid.size), np.nan)
    with np.errstate(divide="ignore"):  # scipy's p-value of one-point samples
        for c in range(n_clusters):
            xa, ya = x[cx == c], y[cy == c]
            if xa.size and ya.size:
                out[c] = [stats.ks_2samp(xa / b, ya, method="asymp").statistic for b in grid]
    return out


def first_min_largest(curves, grid):
    """Reference argmin with ties to the largest beta, by a plain loop."""
    out = []
    for row in curves:
        if np.all(np.isnan(row)):
            out.append(np.nan)
            continue
        best = np.nanmin(row)
        out.append(max(b for b, v in zip(grid, row) if v == best))
    return np.array(out)


# --------------------------------------------------------------------------- ks_statistic


def test_ks_statistic_hand_value():
    # F_a jumps 1/2 at 1 and 2; F_b jumps 1/3 at 2, 3, 4: at x = 1, |1/2 - 0| = 1/2,
    # at x = 2, |1 - 1/3| = 2/3 (the supremum), at 3, |1 - 2/3| = 1/3.
    assert ks_statistic(np.array([1.0, 2.0]), np.array([2.0, 3.0, 4.0])) == pytest.approx(2 / 3)


def test_ks_statistic_matches_scipy_with_ties(rng):
    for _ in range(20):
        a = rng.integers(0, 5, rng.integers(1, 30)).astype(float)
        b = rng.integers(0, 5, rng.integers(1, 30)).astype(float)
        assert ks_statistic(a, b) == stats.ks_2samp(a, b, method="asymp").statistic


def test_subnormal_and_tiny_scores_are_exact():
    # divisions near the bottom of the float range must still count exactly
    x = np.array([5e-324, 1e-310, 2e-308, 0.3, 0.0])
    y = np.array([1e-323, 2e-310, 4e-308, 0.5, 0.0])
    grid = np.array([0.01, 0.5, 0.6, 1.0])
    for method in ("pairs", "bound"):
        got = ks_curves(x, y, grid=grid, method=method, split=2)
        ref = brute_curves(x, np.zeros(5, int), y, np.zeros(5, int), 1, grid)
        np.testing.assert_array_equal(got, ref)


def test_ks_statistic_rejects_empty():
    with pytest.raises(ParameterError, match="a:"):
        ks_statistic(np.array([]), np.array([1.0]))


# --------------------------------------------------------------------------- exact KS curves


@pytest.mark.parametrize("method", ["auto", "pairs", "bound"])
def test_ks_curves_equal_brute_force_with_ties_and_clusters(rng, method):
    grid = default_grid(0.05)
    for trial in range(12):
        n_c = int(rng.integers(1, 5))
        m, n = int(rng.integers(0, 60)), int(rng.integers(1, 60))
        if trial % 2:  # heavy ties: grades and grades times a few betas
            x = rng.integers(0, 5, m) / 4 * rng.choice([0.5, 0.8, 1.0], m)
            y = rng.integers(0, 5, n) / 4
        else:
            x, y = rng.random(m) * 0.7, rng.random(n)
        cx, cy = rng.integers(0, n_c, m), rng.integers(0, n_c, n)
        got = ks_curves(
            x,
            y,
            grid=grid,
            affected_cluster=cx,
            non_affected_cluster=cy,
            n_clusters=n_c,
            method=method,
            split=int(rng.integers(2, 6)),
        )
        ref = brute_curves(x, cx, y, cy, n_c, grid)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
        ok = ~np.isnan(ref)
        assert np.max(np.abs(got[ok] - ref[ok]), initial=0) <= 1e-12
        np.testing.assert_array_equal(argmin_largest(got, grid), first_min_largest(ref, grid))


def test_branch_and_bound_on_large_samples_equals_brute_force(rng):
    # large enough for several pruning levels; two clusters of different sizes
    grid = np.array([0.3, 0.55, 0.7, 0.71, 0.72, 0.9, 1.0])
    x = np.concatenate([rng.random(4000) * 0.7, rng.integers(1, 5, 900) / 4 * 0.6])
    cx = np.r_[np.zeros(4000, int), np.ones(900, int)]
    y = np.concatenate([rng.random(5000), rng.integers(1, 5, 1100) / 4])
    cy = np.r_[np.zeros(5000, int), np.ones(1100, int)]
    ref = brute_curves(x, cx, y, cy, 2, grid)
    for split in (2, 16):
        got = ks_curves(
            x,
            y,
            grid=grid,
            affected_cluster=cx,
            non_affected_cluster=cy,
            method="bound",
            split=split,
        )
        assert np.max(np.abs(got - ref)) <= 1e-12


@pytest.mark.parametrize("method", ["auto", "pairs", "bound"])
def test_tiny_work_budgets_give_identical_curves(rng, monkeypatch, method):
    # budgets of a few elements force grid chunks, one-cluster tiles, sliced run blocks and
    # one-cluster all-pairs chunks; the curves must not change by a bit
    grid = np.array([0.2, 0.5, 0.7, 0.71, 0.9, 1.0])
    sizes_x, sizes_y = [3000, 40, 1, 0, 200, 7], [2500, 60, 5, 9, 0, 300]
    cx = np.repeat(np.arange(6), sizes_x)
    cy = np.repeat(np.arange(6), sizes_y)
    x = np.round(rng.random(cx.size) * 0.8, 3)
    y = np.round(rng.random(cy.size), 3)
    kw = dict(grid=grid, affected_cluster=cx, non_affected_cluster=cy, method=method, split=3)
    if method == "pairs":
        keep_x, keep_y = cx != 0, cy != 0  # the big cluster only through the bound method
        x, cx, y, cy = x[keep_x], cx[keep_x], y[keep_y], cy[keep_y]
        kw.update(affected_cluster=cx, non_affected_cluster=cy)
    default = ks_curves(x, y, **kw)
    monkeypatch.setattr(ks_exact, "_WORK", 24)
    monkeypatch.setattr(ks_exact, "_PAIR_WORK", 50)
    small = ks_curves(x, y, **kw)
    assert default.tobytes() == small.tobytes()
    ref = brute_curves(x, cx, y, cy, 6, grid)
    np.testing.assert_array_equal(np.isnan(small), np.isnan(ref))
    ok = ~np.isnan(ref)
    assert np.max(np.abs(small[ok] - ref[ok])) <= 1e-12


def test_large_unbalanced_cluster_goes_to_the_bound_method(rng, monkeypatch):
    # m * n <= 0.25 * n_grid * (m + n) but an all-pairs cost above the budget: "auto" must
    # not build the pairs (the budget is the memory bound), and the curve is the same
    x = rng.random(3)
    y = rng.random(20_000)
    monkeypatch.setattr(ks_exact, "_ks_dense", lambda *a: pytest.fail("all pairs used"))
    monkeypatch.setattr(ks_exact, "_PAIR_WORK", 10_000)
    got = ks_curves(x, y, grid=np.array([0.5, 1.0]))
    assert (
        np.max(
            np.abs(
                got
                - brute_curves(
                    x, np.zeros(3, int), y, np.zeros(20_000, int), 1, np.array([0.5, 1.0])
                )
            )
        )
        <= 1e-12
    )


@settings(max_examples=40, deadline=None)
@given(
    x=st.lists(
        st.sampled_from([0.0, 0.1, 0.25, 0.3, 0.5, 0.6, 0.75, 0.8, 1.0]) | st.floats(0, 1),
        min_size=1,
        max_size=25,
    ),
    y=st.lists(
        st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]) | st.floats(0, 1), min_size=1, max_size=25
    ),
    grid_idx=st.sets(st.integers(1, 100), min_size=1, max_size=8),
    method=st.sampled_from(["pairs", "bound"]),
)
def test_ks_curves_property_equals_scipy(x, y, grid_idx, method):
    x, y = np.array(x), np.array(y)
    grid = np.array(sorted(grid_idx)) / 100
    got = ks_curves(x, y, grid=grid, method=method, split=2)[0]
    ref = brute_curves(x, np.zeros(x.size, int), y, np.zeros(y.size, int), 1, grid)[0]
    assert np.max(np.abs(got - ref)) <= 1e-12
    assert argmin_largest(got[None], grid)[0] == first_min_largest(ref[None], grid)[0]


def test_ks_curves_validation():
    with pytest.raises(ParameterError, match="grid"):
        ks_curves(np.ones(3), np.ones(3), grid=[0.5, 0.4])
    with pytest.raises(ParameterError, match="grid"):
        ks_curves(np.ones(3), np.ones(3), grid=[0.0, 0.5])
    with pytest.raises(ParameterError, match="affected"):
        ks_curves(np.array([-1.0]), np.ones(3))
    with pytest.raises(ParameterError, match="method"):
        ks_curves(np.ones(3), np.ones(3), method="fast")
    with pytest.raises(ParameterError, match="affected_cluster"):
        ks_curves(np.ones(3), np.ones(3), affected_cluster=np.zeros(3, int))
    with pytest.raises(ParameterError, match="method"):  # 8000 x 8000 pairs
        ks_curves(np.ones(8000), np.ones(8000), method="pairs")


def test_default_grid_is_exact_hundredths():
    g = default_grid()
    assert g.size == 100 and g[0] == 0.01 and g[-1] == 1.0
    np.testing.assert_array_equal(
        g, np.array([float(f"0.{i:02d}") if i < 100 else 1.0 for i in range(1, 101)])
    )
    with pytest.raises(ParameterError, match="step"):
        default_grid(0.03)


# --------------------------------------------------------------------------- jitter


def test_jitter_preserves_order_and_breaks_ties(rng):
    v = np.repeat([0.0, 0.25, 0.5, 0.75, 1.0], 200)
    out = tie_break_jitter(v, rng=rng, jitter=0.9)
    assert np.unique(out).size == v.size  # every tie broken
    assert out.min() >= 0  # zeros stay non-negative
    assert np.max(np.abs(out - v)) < 0.25 / 2  # below half the gap
    order = np.argsort(out, kind="stable")
    assert np.all(np.diff(v[order]) >= 0)  # grades never swap
    assert not np.shares_memory(out, v)
    np.testing.assert_array_equal(tie_break_jitter(v, rng=rng, jitter=0), v)


def test_jitter_validation(rng):
    with pytest.raises(ParameterError, match="jitter"):
        tie_break_jitter(np.ones(3), rng=rng, jitter=1.0)
    with pytest.raises(ParameterError, match="rng"):
        tie_break_jitter(np.ones(3), rng=0)


# --------------------------------------------------------------------------- estimator


def make_biased(
    rng, n_queries=400, size=20, beta=0.7, beta_std=0.0, zero_frac=0.0, affected_frac=0.4
):
    qptr = np.arange(0, n_queries * size + 1, size)
    n = n_queries * size
    groups = (rng.random(n) < affected_frac).astype(float)
    rel = rng.random(n)
    rel[rng.random(n) < zero_frac] = 0.0
    beta_q = np.clip(rng.normal(beta, beta_std, n_queries), 0.01, 1.0)
    a = rel * np.where(groups == 1, np.repeat(beta_q, size), 1.0)
    return a, groups, qptr


def test_global_estimate_recovers_beta(rng):
    a, g, qptr = make_biased(rng, beta=0.7)
    est = estimate_beta(a, g, qptr=qptr, rng=rng)
    assert isinstance(est, BetaEstimate)
    assert est.n_clusters == 1 and est.n_failed == 0
    assert abs(est.beta_hat[0] - 0.7) <= 0.02
    np.testing.assert_array_equal(est.beta_hat_per_query, np.full(400, est.beta_hat[0]))
    assert est.n_affected[0] == np.sum((g == 1) & (a > 0))
    assert est.n_non_affected[0] == np.sum((g == 0) & (a > 0))
    assert est.ks_curve.shape == (1, 100)
    assert est.ks_min[0] == est.ks_curve[0].min()


def test_estimator_does_not_mutate_inputs(rng):
    a, g, qptr = make_biased(rng, n_queries=20)
    a0, g0, q0 = a.copy(), g.copy(), qptr.copy()
    estimate_beta(a, g, qptr=qptr, rng=rng, cluster_size=3)
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(g, g0)
    np.testing.assert_array_equal(qptr, q0)


def test_estimator_curve_equals_brute_force_on_jittered_scores():
    rng = np.random.default_rng(3)
    a, g, qptr = make_biased(rng, n_queries=30, zero_frac=0.3)
    est = estimate_beta(a, g, qptr=qptr, rng=np.random.default_rng(7), jitter=0.5)
    # the same jitter, drawn from the same seed, on the positive scores
    pos = a > 0
    v = tie_break_jitter(a[pos], rng=np.random.default_rng(7), jitter=0.5)
    aff = g[pos] == 1
    ref = brute_curves(
        v[aff], np.zeros(aff.sum(), int), v[~aff], np.zeros((~aff).sum(), int), 1, est.grid
    )
    assert np.max(np.abs(est.ks_curve - ref)) <= 1e-12
    assert est.beta_hat[0] == first_min_largest(ref, est.grid)[0]


def test_given_clusters_with_different_beta(rng):
    a1, g1, q1 = make_biased(rng, n_queries=200, beta=0.6)
    a2, g2, q2 = make_biased(rng, n_queries=200, beta=0.9)
    a = np.r_[a1, a2]
    g = np.r_[g1, g2]
    qptr = np.r_[q1, q2[1:] + q1[-1]]
    labels = np.array(["severe"] * 200 + ["mild"] * 200)
    est = estimate_beta(a, g, qptr=qptr, rng=rng, clusters=labels)
    assert list(est.cluster_labels) == ["mild", "severe"]
    by_label = dict(zip(est.cluster_labels, est.beta_hat))
    assert abs(by_label["severe"] - 0.6) <= 0.03
    assert abs(by_label["mild"] - 0.9) <= 0.03
    assert np.all(est.beta_hat_per_query[:200] == by_label["severe"])
    assert np.all(est.beta_hat_per_query[200:] == by_label["mild"])


def test_random_cluster_scopes(rng):
    a, g, qptr = make_biased(rng, n_queries=60, size=8)
    n_q = 60
    per_query = estimate_beta(a, g, qptr=qptr, clusters=np.arange(n_q), jitter=0)
    size_one = estimate_beta(a, g, qptr=qptr, rng=rng, cluster_size=1, jitter=0)
    np.testing.assert_array_equal(per_query.beta_hat_per_query, size_one.beta_hat_per_query)
    assert size_one.n_clusters == n_q
    glob = estimate_beta(a, g, qptr=qptr, jitter=0)
    big = estimate_beta(a, g, qptr=qptr, rng=rng, cluster_size=1000, jitter=0)
    assert big.n_clusters == 1
    np.testing.assert_array_equal(big.ks_curve, glob.ks_curve)
    five = estimate_beta(a, g, qptr=qptr, rng=rng, cluster_size=5, jitter=0)
    assert five.n_clusters == 12
    assert np.all(np.bincount(five.cluster_of_query) == 5)


def test_random_clusters_are_a_seeded_partition():
    c1 = random_clusters(10, cluster_size=4, rng=np.random.default_rng(0))
    c2 = random_clusters(10, cluster_size=4, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(c1, c2)
    assert sorted(np.bincount(c1)) == [3, 3, 4]
    with pytest.raises(ParameterError, match="cluster_size"):
        random_clusters(10, cluster_size=0, rng=np.random.default_rng(0))


@pytest.mark.parametrize(
    ("n", "k", "sizes"),
    [(201, 100, [67, 67, 67]), (201, 10, [9] * 9 + [10] * 12), (7, 1, [1] * 7), (5, 9, [5])],
)
def test_random_cluster_sizes_differ_by_at_most_one(n, k, sizes):
    """No remainder cluster: 201 queries in clusters of at most 100 are 67/67/67 (a 100/100/1
    cut made one query weigh as much as 100 in the mean β̂)."""
    c = random_clusters(n, cluster_size=k, rng=np.random.default_rng(3))
    assert sorted(np.bincount(c)) == sizes
    assert c.max() + 1 == -(-n // k)


def test_failed_cluster_gives_nan_and_is_counted(rng):
    # query 1 has no positive affected score; per-query estimation fails there only
    a = np.array([0.2, 0.5, 0.0, 0.4, 0.3, 0.6])
    g = np.array([1.0, 0.0, 1.0, 0.0, 1.0, 0.0])
    qptr = np.array([0, 2, 4, 6])
    est = estimate_beta(a, g, qptr=qptr, clusters=np.arange(3), jitter=0)
    assert est.n_failed == 1
    assert np.isnan(est.beta_hat[1]) and np.all(np.isnan(est.ks_curve[1]))
    # query 0: KS(0.2 / beta, 0.5) = 0 only at beta = 0.4; query 2: 0.3 / 0.6 = 0.5
    assert est.beta_hat[0] == 0.4 and est.beta_hat[2] == 0.5
    assert est.n_affected.tolist() == [1, 0, 1]


def test_flat_curve_ties_go_to_largest_beta():
    # 0.001 / beta <= 0.1 < 1 for every grid beta: KS = 1 everywhere
    est = estimate_beta(
        np.array([0.001, 1.0]), np.array([1.0, 0.0]), qptr=np.array([0, 2]), jitter=0
    )
    assert np.all(est.ks_curve == 1.0)
    assert est.beta_hat[0] == 1.0


def test_zero_atom_exclude_recovers_beta_include_does_not(rng):
    # affected items have many more non-relevant (zero) items than non-affected ones:
    # equal distributions of the relevant scores, unequal zero fractions
    n_q, size = 300, 20
    qptr = np.arange(0, n_q * size + 1, size)
    g = (rng.random(n_q * size) < 0.5).astype(float)
    rel = rng.random(n_q * size)
    zero = rng.random(n_q * size) < np.where(g == 1, 0.7, 0.4)
    rel[zero] = 0.0
    a = rel * np.where(g == 1, 0.7, 1.0)
    exc = estimate_beta(a, g, qptr=qptr, rng=rng, zero_policy="exclude")
    inc = estimate_beta(a, g, qptr=qptr, rng=rng, zero_policy="include")
    assert abs(exc.beta_hat[0] - 0.7) <= 0.02
    assert abs(inc.beta_hat[0] - 0.7) >= 0.1
    # the atom puts a floor of about |p0_A - p0_N| = 0.3 under the whole curve
    assert inc.ks_min[0] >= 0.25
    assert exc.ks_min[0] <= 0.05


def test_fractional_groups_need_threshold(rng):
    a, g, qptr = make_biased(rng, n_queries=30)
    g_frac = np.where(g == 1, 0.9, 0.1)
    with pytest.raises(ParameterError, match="groups"):
        estimate_beta(a, g_frac, qptr=qptr, rng=rng)
    est = estimate_beta(a, g_frac, qptr=qptr, rng=np.random.default_rng(1), group_threshold=0.5)
    ref = estimate_beta(a, g, qptr=qptr, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(est.ks_curve, ref.ks_curve)


def test_estimator_validation(rng):
    a, g, qptr = make_biased(rng, n_queries=5)
    with pytest.raises(ParameterError, match="rng"):
        estimate_beta(a, g, qptr=qptr)
    with pytest.raises(ParameterError, match="zero_policy"):
        estimate_beta(a, g, qptr=qptr, rng=rng, zero_policy="drop")
    with pytest.raises(ParameterError, match="clusters"):
        estimate_beta(a, g, qptr=qptr, rng=rng, clusters=np.zeros(5), cluster_size=2)
    with pytest.raises(ParameterError, match="clusters"):
        estimate_beta(a, g, qptr=qptr, rng=rng, clusters=np.zeros(4))
    with pytest.raises(ParameterError, match="attractiveness"):
        estimate_beta(-a, g, qptr=qptr, rng=rng)
    with pytest.raises(ParameterError, match="qptr"):
        estimate_beta(a, g, qptr=qptr[:-1], rng=rng)
    with pytest.raises(ParameterError, match="grid"):
        estimate_beta(a, g, qptr=qptr, rng=rng, grid=[0.5, 1.5])


def test_grade_scale_jitter_smooths_small_clusters():
    """Binary relevance, per-query clusters: with noise only on the smallest gap the KS curve
    of a 2-vs-2 query is flat and beta-hat sits at the top of the grid; noise on the grade
    spacing spreads the estimates below 1 while the global estimate stays accurate."""
    rng = np.random.default_rng(0)
    n_q, size = 300, 6
    qptr = np.arange(0, n_q * size + 1, size)
    g = np.tile([1, 1, 1, 0, 0, 0], n_q).astype(float)
    r = rng.integers(0, 2, n_q * size).astype(float)
    beta_q = np.clip(rng.normal(0.7, 0.1, n_q), 0.01, 1)
    a = r * np.where(g == 1, np.repeat(beta_q, size), 1.0)
    gap = estimate_beta(a, g, qptr=qptr, cluster_size=1, rng=np.random.default_rng(1))
    grade = estimate_beta(
        a, g, qptr=qptr, cluster_size=1, rng=np.random.default_rng(1), grade_spacing=1.0
    )
    ok = np.isfinite(gap.beta_hat) & np.isfinite(grade.beta_hat)
    assert np.mean(gap.beta_hat[ok] == 1.0) > 0.9
    assert np.mean(grade.beta_hat[ok] == 1.0) < 0.5
    glob = estimate_beta(a, g, qptr=qptr, rng=np.random.default_rng(1), grade_spacing=1.0)
    assert abs(glob.beta_hat[0] - 0.7) <= 0.05
    with pytest.raises(ParameterError, match="grade_spacing"):
        estimate_beta(a, g, qptr=qptr, rng=np.random.default_rng(1), grade_spacing=2.0)


# --------------------------------------------------------------------------- the interface


def _toy(rng, n_q=200, size=8, beta=0.7):
    qptr = np.arange(0, n_q * size + 1, size)
    g = np.tile([1.0, 0.0], n_q * size // 2)
    r = rng.integers(0, 5, n_q * size) / 4.0
    return r * np.where(g == 1, beta, 1.0), g, qptr


def test_ks_estimator_is_registered_and_equals_estimate_beta():
    from groupbias.core.registry import ESTIMATORS
    from groupbias.estimate.estimators import KSEstimator

    assert ESTIMATORS.get("ks") is KSEstimator
    a, g, qptr = _toy(np.random.default_rng(0))
    est = KSEstimator(cluster_size=20, jitter_scale="grade").estimate(
        a, g, qptr=qptr, rng=np.random.default_rng(3), grade_spacing=0.25
    )
    ref = estimate_beta(
        a, g, qptr=qptr, rng=np.random.default_rng(3), cluster_size=20, grade_spacing=0.25
    )
    np.testing.assert_array_equal(est.beta_hat, ref.beta_hat)
    # "gap" ignores the grade spacing the caller passes
    gap = KSEstimator(jitter_scale="gap").estimate(
        a, g, qptr=qptr, rng=np.random.default_rng(3), grade_spacing=0.25
    )
    ref = estimate_beta(a, g, qptr=qptr, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(gap.beta_hat, ref.beta_hat)
    assert abs(gap.beta_hat_mean - 0.7) <= 0.02


def test_ks_estimator_splits_fractional_groups_at_one_half():
    from groupbias.estimate.estimators import KSEstimator

    a, g, qptr = _toy(np.random.default_rng(1))
    frac = np.where(g == 1, 0.8, 0.1)
    est = KSEstimator().estimate(a, frac, qptr=qptr, rng=np.random.default_rng(2))
    ref = estimate_beta(a, g, qptr=qptr, rng=np.random.default_rng(2))
    np.testing.assert_array_equal(est.beta_hat, ref.beta_hat)


@pytest.mark.parametrize(
    "field, value",
    [
        ("cluster_size", 0),
        ("cluster_size", 2.5),
        ("grid_step", 0.3),
        ("grid_step", "x"),
        ("zero_policy", "drop"),
        ("jitter", 1.0),
        ("jitter", True),
        ("jitter_scale", "fine"),
    ],
)
def test_ks_estimator_names_the_bad_field(field, value):
    from groupbias.estimate.estimators import KSEstimator

    with pytest.raises(ParameterError) as info:
        KSEstimator(**{field: value})
    assert info.value.name == field


def test_every_parameter_is_checked_before_any_random_draw():
    a, g, qptr = _toy(np.random.default_rng(0), n_q=10)
    rng = np.random.default_rng(5)
    before = rng.bit_generator.state
    with pytest.raises(ParameterError, match="split"):
        estimate_beta(a, g, qptr=qptr, rng=rng, cluster_size=3, split=1)
    assert rng.bit_generator.state == before


def test_tie_rule_picks_the_top_bottom_or_middle_of_a_flat_minimum():
    from groupbias.estimate.ks import grid_argmin

    grid = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    curves = np.array(
        [
            [0.9, 0.5, 0.5, 0.5, 0.5, 0.8],  # plateau at indices 1..4
            [0.4, 0.9, 0.4, 0.9, 0.9, 0.9],  # two separate minima: 0 and 2
            [np.nan] * 6,
        ]
    )
    np.testing.assert_array_equal(grid_argmin(curves, grid, "largest")[:2], [0.5, 0.3])
    np.testing.assert_array_equal(grid_argmin(curves, grid, "smallest")[:2], [0.2, 0.1])
    np.testing.assert_array_equal(grid_argmin(curves, grid, "middle")[:2], [0.3, 0.2])
    assert np.isnan(grid_argmin(curves, grid, "middle")[2])
    # one positive item per group: the KS curve is 1 everywhere, the rule alone decides
    a = np.array([0.705, 1.0])  # 0.705 / beta never equals 1 on the grid
    g = np.array([1.0, 0.0])
    for tie, want in (("largest", 1.0), ("smallest", 0.01), ("middle", 0.5)):
        est = estimate_beta(a, g, qptr=[0, 2], jitter=0, tie=tie)
        assert est.beta_hat[0] == pytest.approx(want)
    with pytest.raises(ParameterError, match="tie"):
        estimate_beta(a, g, qptr=[0, 2], jitter=0, tie="random")
