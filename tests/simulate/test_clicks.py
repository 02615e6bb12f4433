"""Click logs: simulation (against closed-form click rates and a per-session reference
loop), the Parquet format and its checks, position-bias estimation against the true
propensities, and drift tracking of a step change."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from data_loaders.synthetic import make_synthetic
from groupbias.core.errors import DataFormatError, ParameterError
from groupbias.estimate.drift import (
    detect_change,
    ewma_beta,
    group_click_series,
    settling_sessions,
    sliding_beta,
)
from groupbias.estimate.propensity import (
    debiased_attractiveness,
    em_propensities,
    estimate_propensities,
    harvest_propensities,
)
from groupbias.simulate.clicks import (
    ClickLog,
    Drift,
    UserModel,
    read_click_log,
    simulate_click_log,
    top_k_table,
    write_click_log,
)
from groupbias.simulate.group_bias import draw_query_beta, relevance_from_labels


@pytest.fixture(scope="module")
def data():
    d = make_synthetic(n_queries=240, list_size=(10, 60), seed=7)
    rel = relevance_from_labels(d.labels, label_max=4)
    rng = np.random.default_rng(3)
    scores = rel + rng.normal(0, 0.3, rel.size)
    return d, rel, scores


def _sim(data, n_sessions, rng, **kw):
    d, rel, scores = data
    return simulate_click_log(
        rel,
        d.groups,
        qptr=d.qptr,
        logging_scores=scores,
        n_sessions=n_sessions,
        rng=rng,
        **kw,
    )


def _one_query():
    rel = np.array([0.9, 0.5, 0.2])
    groups = np.array([0.0, 1.0, 1.0])
    return rel, groups, np.array([0, 3]), np.array([3.0, 2.0, 1.0])


def test_top_k_table_by_hand():
    scores = np.array([0.1, 0.9, 0.5, 2.0, 1.0])
    t = top_k_table(scores, np.array([0, 3, 5]), 3)
    assert t.tolist() == [[1, 2, 0], [3, 4, -1]]


def test_pbm_click_rates_match_the_closed_form():
    """Deterministic ranking, no intervention: P(click at k) = k^-eta (eps + (1 - eps) a)
    with a = P(R) (g beta + 1 - g)."""
    rel, groups, qptr, scores = _one_query()
    user = UserModel("pbm", eta=1.0, noise=0.1)
    sim = simulate_click_log(
        rel,
        groups,
        qptr=qptr,
        logging_scores=scores,
        n_sessions=200_000,
        rng=np.random.default_rng(0),
        positions=3,
        user=user,
        beta_query=np.array([0.5]),
        intervention="none",
    )
    a = rel * (groups * 0.5 + 1 - groups)
    want = np.array([1.0, 1 / 2, 1 / 3]) * (0.1 + 0.9 * a)
    shown, clicks = sim.log.counts(qptr, 3)
    got = clicks.sum(axis=1) / shown.sum(axis=1)
    se = np.sqrt(want * (1 - want) / 200_000)
    assert np.all(np.abs(got - want) < 5 * se)
    assert np.array_equal(np.diag(shown), [200_000] * 3)  # item i always at position i + 1


def test_cascade_stops_after_a_click_without_continuation():
    """λ = 0: at most one click per session, and P(click at 2) = (1 - c1) c2."""
    rel, groups, qptr, scores = _one_query()
    sim = simulate_click_log(
        rel,
        groups,
        qptr=qptr,
        logging_scores=scores,
        n_sessions=100_000,
        rng=np.random.default_rng(1),
        positions=3,
        user=UserModel("cascade", continuation=0.0),
        intervention="none",
    )
    per_session = np.bincount(sim.log.session, weights=sim.log.click)
    assert per_session.max() == 1
    _, clicks = sim.log.counts(qptr, 3)
    rate2 = clicks[1, 1] / 100_000
    want = (1 - 0.9) * 0.5
    assert abs(rate2 - want) < 5 * np.sqrt(want * (1 - want) / 100_000)


def test_interventions_move_items_and_keep_every_session_a_permutation(data):
    d, rel, scores = data
    sim = _sim(
        data,
        5000,
        np.random.default_rng(2),
        intervention="swap",
        intervention_rate=0.5,
    )
    log = sim.log
    flat = log.flat_items(d.qptr)
    top = top_k_table(scores, d.qptr, 10)
    # every session shows the logging top-10 of its query, maybe reordered
    key_shown = np.sort(flat.reshape(-1, 10), axis=1)
    q = log.query.reshape(-1, 10)[:, 0]
    assert np.array_equal(key_shown, np.sort(top[q], axis=1))
    moved = (flat.reshape(-1, 10) != top[q]).any(axis=1).mean()
    assert 0.4 < moved < 0.6
    # a swap exchanges exactly two positions, one of them the first
    diff = flat.reshape(-1, 10) != top[q]
    assert np.all(diff.sum(axis=1)[diff.any(axis=1)] == 2)
    assert np.all(diff[diff.any(axis=1), 0])


def test_vectorized_simulation_matches_a_per_session_loop_in_distribution(data):
    """Click rates per position agree with a plain per-session reference implementation."""
    d, rel, scores = data
    rng = np.random.default_rng(4)
    bq = draw_query_beta(d.n_queries, beta_mean=0.7, beta_std=0.1, rng=rng)
    n = 20_000
    sim = _sim(
        data,
        n,
        rng,
        beta_query=bq,
        user=UserModel(noise=0.05),
        intervention="none",
    )
    ours = np.bincount(sim.log.position, weights=sim.log.click, minlength=11)[1:] / n
    top = top_k_table(scores, d.qptr, 10)
    ref = np.zeros(10)
    loop_rng = np.random.default_rng(5)
    for _ in range(n):
        qi = int(loop_rng.integers(0, d.n_queries))
        for k in range(10):
            i = top[qi, k]
            a = rel[i] * (bq[qi] if d.groups[i] == 1 else 1.0)
            if loop_rng.random() < (1 / (k + 1)) * (0.05 + 0.95 * a):
                ref[k] += 1
    ref /= n
    se = np.sqrt(ours * (1 - ours) / n) * np.sqrt(2)
    assert np.all(np.abs(ours - ref) < 5 * se + 1e-9)


def test_drift_schedules():
    t = np.array([0.0, 0.25, 0.5, 0.75])
    assert np.allclose(Drift("step", 0.8, 0.6, 0.5).beta_at(t), [0.8, 0.8, 0.6, 0.6])
    assert np.allclose(Drift("linear", 0.8, 0.6).beta_at(t), [0.8, 0.75, 0.7, 0.65])
    assert np.allclose(Drift("none", 0.7).beta_at(t), 0.7)
    with pytest.raises(ParameterError) as e:
        Drift("sideways")
    assert e.value.name == "kind"


def test_session_beta_follows_the_drift_around_query_offsets(data):
    d, rel, scores = data
    bq = np.full(d.n_queries, 0.8)
    bq[0] = 0.9
    sim = _sim(
        data,
        1000,
        np.random.default_rng(6),
        beta_query=bq,
        beta_mean=0.8,
        drift=Drift("step", 0.8, 0.6, 0.5),
    )
    q = sim.log.query[np.r_[True, np.diff(sim.log.session) != 0]]
    want = np.where(np.arange(1000) < 500, 0.8, 0.6) + np.where(q == 0, 0.1, 0.0)
    assert np.allclose(sim.beta_session, want)


# ----------------------------------------------------------------------------- files


def test_parquet_round_trip(tmp_path, data):
    d, rel, scores = data
    sim = _sim(
        data,
        500,
        np.random.default_rng(7),
    )
    path = write_click_log(tmp_path / "log.parquet", sim.log)
    back = read_click_log(path)
    for col in ("session", "query", "item", "position", "click", "time"):
        assert np.array_equal(getattr(back, col), getattr(sim.log, col)), col
    assert back.source == str(path)
    assert not list(tmp_path.glob(".*tmp"))  # atomic: no temporary left


def _frame(**changes):
    cols = {
        "session": [0, 0, 1],
        "query": [0, 0, 1],
        "item": [0, 1, 0],
        "position": [1, 2, 1],
        "click": [1, 0, 0],
    }
    cols.update(changes)
    return pd.DataFrame({k: v for k, v in cols.items() if v is not None})


@pytest.mark.parametrize(
    ("changes", "column"),
    [
        ({"click": None}, "click"),
        ({"position": [1, 0, 1]}, "position"),
        ({"position": [1, 1, 1]}, "position"),
        ({"click": [1, 2, 0]}, "click"),
        ({"query": [0.0, 0.5, 1.0]}, "query"),
        ({"item": ["a", "b", "c"]}, "item"),
        ({"session": [0, -1, 1]}, "session"),
        ({"time": ["x", "y", "z"]}, "time"),
        ({"time": [0.0, np.nan, 1.0]}, "time"),
    ],
)
def test_reading_a_bad_log_names_file_and_column(tmp_path, changes, column):
    path = tmp_path / "user.parquet"
    _frame(**changes).to_parquet(path)
    with pytest.raises(DataFormatError) as e:
        read_click_log(path)
    assert e.value.field == column
    assert str(path) in str(e.value)


def test_reading_bool_clicks_and_a_non_parquet_file(tmp_path):
    path = tmp_path / "ok.parquet"
    _frame(click=[True, False, False]).to_parquet(path)
    assert read_click_log(path).click.tolist() == [1, 0, 0]
    bad = tmp_path / "bad.parquet"
    bad.write_text("session,query\n")
    with pytest.raises(DataFormatError) as e:
        read_click_log(bad)
    assert str(bad) in str(e.value)
    with pytest.raises(FileNotFoundError):
        read_click_log(tmp_path / "absent.parquet")


def test_log_items_outside_the_dataset_are_refused():
    log = ClickLog(
        session=np.array([0]),
        query=np.array([0]),
        item=np.array([5]),
        position=np.array([1]),
        click=np.array([1], dtype=np.int8),
        source="mine.parquet",
    )
    with pytest.raises(DataFormatError) as e:
        log.counts(np.array([0, 3]), 10)
    assert e.value.field == "item" and "mine.parquet" in str(e.value)


# ----------------------------------------------------------------------------- position bias


def test_propensity_estimators_recover_theta_from_exact_expected_counts():
    """With counts equal to their expectations (θ_k γ_d · n), both methods give θ exactly."""
    theta = np.array([1.0, 0.6, 0.4, 0.25])
    gamma = np.array([0.9, 0.5, 0.3, 0.7, 0.1])
    shown = np.full((5, 4), 1000.0)
    clicks = shown * gamma[:, None] * theta[None, :]
    assert np.allclose(harvest_propensities(shown, clicks).theta, theta)
    em = em_propensities(shown, clicks, max_iter=5000, tol=1e-12)
    assert np.allclose(em.theta, theta, atol=1e-3)
    assert np.allclose(em.gamma, gamma, atol=1e-3)


@pytest.mark.parametrize("method", ["harvest", "em"])
@pytest.mark.parametrize(("n_sessions", "bound"), [(20_000, 0.3), (100_000, 0.1)])
def test_estimated_propensities_are_close_to_the_truth(data, method, n_sessions, bound):
    """η = 1 unknown to the estimators; shuffle interventions in 10 % of the sessions."""
    d, rel, scores = data
    rng = np.random.default_rng(11)
    bq = draw_query_beta(d.n_queries, beta_mean=0.8, beta_std=0.1, rng=rng)
    sim = _sim(
        data,
        n_sessions,
        rng,
        beta_query=bq,
        intervention="shuffle",
        intervention_rate=0.1,
        user=UserModel(noise=0.02),
    )
    shown, clicks = sim.log.counts(d.qptr, 10)
    est = estimate_propensities(shown, clicks, method=method)
    rel_err = np.abs(est.theta / sim.examination - 1)
    assert rel_err.max() < bound, (method, est.theta)


def test_harvesting_across_several_logging_policies_without_interventions(data):
    """Three deterministic logging rankers, no intervention: items move between positions
    across the policies, which is enough for both estimators (3·10⁵ sessions: < 10 %)."""
    d, rel, _ = data
    rng = np.random.default_rng(5)
    shown = clicks = 0
    for _ in range(3):
        scores = rel + rng.normal(0, 0.5, rel.size)
        sim = simulate_click_log(
            rel,
            d.groups,
            qptr=d.qptr,
            logging_scores=scores,
            n_sessions=100_000,
            rng=rng,
            intervention="none",
        )
        s, c = sim.log.counts(d.qptr, 10)
        shown, clicks = shown + s, clicks + c
    for est in (harvest_propensities(shown, clicks), em_propensities(shown, clicks)):
        assert np.abs(est.theta / sim.examination - 1).max() < 0.1, est.method


def test_harvesting_needs_interventions(data):
    d, rel, scores = data
    sim = _sim(
        data,
        1000,
        np.random.default_rng(12),
        intervention="none",
    )
    with pytest.raises(ParameterError) as e:
        harvest_propensities(*sim.log.counts(d.qptr, 10))
    assert e.value.name == "log" and "intervention" in str(e.value)


def test_debiased_attractiveness_by_hand():
    shown = np.array([[10.0, 10.0], [0.0, 0.0], [0.0, 4.0]])
    clicks = np.array([[6.0, 2.0], [0.0, 0.0], [0.0, 1.0]])
    a, seen = debiased_attractiveness(shown, clicks, [1.0, 0.5])
    assert np.allclose(a, [8 / 15, 0.0, 1 / 2])
    assert seen.tolist() == [True, False, True]


# ----------------------------------------------------------------------------- drift


@pytest.fixture(scope="module")
def step_log(data):
    d, rel, scores = data
    rng = np.random.default_rng(21)
    bq = draw_query_beta(d.n_queries, beta_mean=0.8, beta_std=0.1, rng=rng)
    sim = _sim(
        data,
        200_000,
        rng,
        beta_query=bq,
        beta_mean=0.8,
        drift=Drift("step", 0.8, 0.6, 0.5),
        intervention="shuffle",
    )
    shown, clicks = sim.log.counts(d.qptr, 10)
    theta = harvest_propensities(shown, clicks).theta
    return sim, group_click_series(sim.log, d.groups, qptr=d.qptr, propensity=theta)


def test_drift_estimators_track_a_step_from_0_8_to_0_6(step_log):
    """Stated bound: with a 10⁴-session window (EWMA half-life 5·10³) the estimate is within
    0.05 of β = 0.6 from at most 2·10⁴ sessions after the step on, and the CUSUM test puts
    the change within one block (2·10³ sessions) of the truth."""
    sim, series = step_log
    change = 100_000
    for est in (sliding_beta(series, 10_000), ewma_beta(series, 5_000)):
        lag = settling_sessions(est, change=change, target=0.6, tolerance=0.05)
        assert lag is not None and lag <= 20_000
        assert abs(np.mean(est[60_000:change]) - 0.8) < 0.03
    cp = detect_change(series, bins=100)
    assert cp.detected(0.01)
    assert abs(cp.session - change) <= 2_000
    assert abs(cp.before - 0.8) < 0.03 and abs(cp.after - 0.6) < 0.03


def test_change_detector_is_quiet_without_a_change(data):
    d, rel, scores = data
    rng = np.random.default_rng(22)
    sim = _sim(
        data,
        100_000,
        rng,
        beta_query=np.full(d.n_queries, 0.7),
        intervention="shuffle",
    )
    theta = harvest_propensities(*sim.log.counts(d.qptr, 10)).theta
    series = group_click_series(sim.log, d.groups, qptr=d.qptr, propensity=theta)
    assert not detect_change(series, bins=50).detected(0.01)


def test_level_rescales_the_ratio_track(step_log):
    _, series = step_log
    raw = sliding_beta(series, 5000)
    scaled = sliding_beta(series, 5000, level=0.7)
    assert np.allclose(scaled, raw * 0.7 / series.overall())


def test_debiased_attractiveness_clips_tiny_propensities():
    shown = np.array([[2.0, 4.0]])
    clicks = np.array([[1.0, 1.0]])
    a, _ = debiased_attractiveness(shown, clicks, [1.0, 0.0], min_propensity=0.1)
    assert np.allclose(a, [2 / (2 + 0.4)])
    with pytest.raises(ParameterError) as e:
        debiased_attractiveness(shown, clicks, [1.0, -0.5])
    assert e.value.name == "propensity"


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"n_sessions": 0}, "n_sessions"),
        ({"intervention": "flip"}, "intervention"),
        ({"intervention_rate": 1.5}, "intervention_rate"),
        ({"temperature": -1.0}, "temperature"),
        ({"positions": 0}, "positions"),
        ({"beta_query": np.full(1, 1.5)}, "beta_query"),
        ({"beta_query": np.full(1, 0.5), "drift": Drift("step")}, "beta_mean"),
        ({"logging_scores": np.zeros(4)}, "logging_scores"),
    ],
)
def test_simulation_refuses_bad_settings_by_name(kwargs, name):
    rel, groups, qptr, scores = _one_query()
    args = {"logging_scores": scores, "n_sessions": 10, "rng": np.random.default_rng(0)}
    args.update(kwargs)
    with pytest.raises(ParameterError) as e:
        simulate_click_log(rel, groups, qptr=qptr, **args)
    assert e.value.name == name


def test_user_model_settings_are_refused_by_name():
    for kwargs, name in (
        ({"kind": "dbn2"}, "kind"),
        ({"eta": -1}, "eta"),
        ({"noise": 1.0}, "noise"),
    ):
        with pytest.raises(ParameterError) as e:
            UserModel(**kwargs)
        assert e.value.name == name
