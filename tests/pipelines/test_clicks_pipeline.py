"""Learning from click logs: the per-correction labels against the simulation's truth, and
experiment=clicks / experiment=drift end to end at small scale."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

from data_loaders.synthetic import make_synthetic
from groupbias.app.cli import CONFIG_DIR, run
from groupbias.core.errors import ParameterError
from groupbias.estimate.estimators import KSEstimator
from groupbias.pipelines.clicks import (
    ClickSettings,
    labels_from_clicks,
    logging_scores,
    simulate_split_log,
    valid_labels,
)
from groupbias.pipelines.records import records_for
from groupbias.simulate.clicks import UserModel, read_click_log
from groupbias.simulate.group_bias import simulate_attractiveness


@pytest.fixture(scope="module")
def fitted():
    data = make_synthetic(n_queries=300, list_size=(10, 40), affected_share=0.35, seed=3)
    rng = np.random.default_rng(0)
    rel = data.labels / 4.0
    beta_q = np.full(data.n_queries, 0.6)
    att = simulate_attractiveness(rel, data.groups, qptr=data.qptr, beta_query=beta_q)
    settings = ClickSettings(
        user=UserModel(noise=0.0),
        logging="noisy_attractiveness",
        logging_noise=0.5,
        temperature=0.3,
    )
    scores = logging_scores(data, rel, att, settings, rng)
    log = simulate_split_log(
        data,
        relevance=rel,
        beta_query=beta_q,
        scores=scores,
        n_sessions=300_000,
        settings=settings,
        rng=rng,
    )
    est = KSEstimator(cluster_size=None)
    out = labels_from_clicks(log, data, estimator=est, rng=rng, settings=settings)
    return data, rel, att, log, settings, out


def _ratio(labels, truth, mask):
    return labels[mask].sum() / truth[mask].sum()


def test_each_correction_undoes_its_bias(fitted):
    """Position IPS recovers the attractiveness β·P(R) (affected) and P(R) (others); the
    group step then recovers P(R) for the affected group; the naive click rate is lower
    by the mean examination, more so for the affected items shown lower."""
    data, rel, att, _, _, out = fitted
    seen = out.observed & (rel > 0)
    aff = seen & (data.groups == 1)
    non = seen & (data.groups == 0)
    assert abs(_ratio(out.labels["position"], att, aff) - 1) < 0.05
    assert abs(_ratio(out.labels["position"], att, non) - 1) < 0.05
    assert abs(_ratio(out.labels["both"], rel, aff) - 1) < 0.1
    assert abs(out.beta_hat["both"] - 0.6) < 0.06
    naive_aff = _ratio(out.labels["none"], att, aff)
    naive_non = _ratio(out.labels["none"], att, non)
    assert naive_aff < naive_non < 0.8
    assert np.max(np.abs(out.position.theta / UserModel().examination(10) - 1)) < 0.1
    assert np.all(out.labels["none"][~out.observed] == 0)


def test_valid_labels_use_the_train_estimates(fitted):
    data, rel, _, log, settings, out = fitted
    vl = valid_labels(log, data, out, settings)
    assert np.allclose(vl["position"], out.labels["position"])
    g = data.groups == 1
    assert np.allclose(vl["both"][g], out.labels["position"][g] / out.beta_hat["both"])
    assert np.allclose(vl["both"][~g], out.labels["position"][~g])


def test_no_estimate_leaves_the_labels_uncorrected(fitted):
    """Without affected items in the train split every cluster fails: β̂ is NaN (no
    estimate) and the valid split's affected items keep their position-debiased labels."""
    data, _, _, log, settings, _ = fitted
    none = data.with_groups(np.zeros(data.n_items))
    out = labels_from_clicks(
        log, none, estimator=KSEstimator(), rng=np.random.default_rng(0), settings=settings
    )
    assert np.isnan(out.beta_hat["group"]) and np.isnan(out.beta_hat["both"])
    np.testing.assert_array_equal(out.labels["both"], out.labels["position"])
    vl = valid_labels(log, data, out, settings)  # the valid split has affected items
    np.testing.assert_array_equal(vl["both"], vl["position"])
    np.testing.assert_array_equal(vl["group"], vl["none"])


def test_records_pair_the_focus_with_every_condition():
    a = np.array([0.5, 0.6, 0.7, 0.8])
    per_query = {
        "both": {"m": a},
        "position": {"m": a - np.array([0.1, 0.12, 0.09, 0.11])},
        "full": {"m": a.copy()},
    }
    recs = records_for(per_query, base={"x": 1}, focus="both")
    both = next(r for r in recs if r["condition"] == "both")
    assert both["value"] == pytest.approx(0.65)
    assert both["p_vs_full"] == 1.0  # identical vectors
    from scipy import stats

    assert both["p_vs_position"] == pytest.approx(
        stats.ttest_rel(a, per_query["position"]["m"]).pvalue
    )
    assert all("p_vs_both" not in r for r in recs)


def _run(overrides, tmp_path):
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose(config_name="config", overrides=[f"paths.runs={tmp_path}", *overrides])
    run(cfg)


def _run_quietly(tmp_path_factory, name: str, overrides) -> tuple:
    """runs/<name> made with ``overrides`` in a fresh folder: the run folder and what the
    experiment printed."""
    import contextlib
    import io

    tmp_path = tmp_path_factory.mktemp(name)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        _run([f"experiment={name}", *overrides], tmp_path)
    return tmp_path / name, out.getvalue()


@pytest.fixture(scope="module")
def clicks_run(tmp_path_factory):
    """runs/clicks at a tiny scale."""
    return _run_quietly(
        tmp_path_factory,
        "clicks",
        [
            "experiment.sessions=[2000,8000]",
            "experiment.datasets=[{dataset: synthetic,"
            " params: {n_queries: 60, list_size: [10, 20]}}]",
            "trainer.max_epochs=2",
            "model.fc_model.sizes=[8]",
            "model.transformer.d_ff=8",
            "model.transformer.h=1",
        ],
    )


@pytest.fixture(scope="module")
def drift_run(tmp_path_factory):
    """runs/drift at a tiny scale."""
    return _run_quietly(
        tmp_path_factory,
        "drift",
        [
            "experiment.sessions=40000",
            "experiment.window=4000",
            "experiment.half_life=2000",
            "experiment.bins=20",
            "experiment.tolerance=0.1",
        ],
    )


@pytest.mark.slow
def test_clicks_experiment_end_to_end(clicks_run):
    run_dir, out = clicks_run
    assert "synthetic, β = 0.7" in out
    import json

    recs = json.loads((run_dir / "metrics.json").read_text())["records"]
    df = pd.DataFrame(recs)
    for n in (2000, 8000):
        part = df[(df["n_sessions"] == n) & (df["metric"] == "rho_dtr")]
        assert set(part["condition"]) == {"full", "none", "position", "group", "both"}
        both = part[part["condition"] == "both"].iloc[0]
        assert {"p_vs_position", "p_vs_group", "p_vs_none", "p_vs_full"} <= set(both.index)
    assert set(df[df["metric"] == "beta_hat"]["condition"]) == {"group", "both"}
    logs = sorted(run_dir.glob("models/*/beta0.7/rep0/n*/train_clicks.parquet"))
    assert len(logs) == 2
    assert read_click_log(logs[1]).n_sessions == 8000
    assert (run_dir / "clicks_synthetic.png").is_file()
    assert (run_dir / "clicks.txt").read_text().strip()


@pytest.mark.slow
def test_report_aggregates_the_clicks_folder(clicks_run, tmp_path):
    """`groupbias-report runs/clicks` (once a KeyError: 'regime'): tidy records and a
    summary keyed by sessions and condition, every number as recorded."""
    import json

    from groupbias.reporting.aggregate import main as report_main

    run_dir, _ = clicks_run
    assert report_main([str(run_dir), "--out", str(tmp_path)]) == 0
    recs = json.loads((run_dir / "metrics.json").read_text())["records"]
    summary = pd.read_parquet(tmp_path / "summary.parquet")
    assert len(pd.read_parquet(tmp_path / "records.parquet")) == len(recs) == len(summary)
    got = summary.set_index(["n_sessions", "metric", "condition"])
    for r in recs:
        row = got.loc[(r["n_sessions"], r["metric"], r["condition"])]
        assert row["n"] == 1 and row["mean"] == pytest.approx(r["value"], nan_ok=True)
    md = (tmp_path / "summary.md").read_text()
    assert "| condition | n_sessions |" in md and "theta_error" in md


@pytest.mark.slow
def test_drift_experiment_end_to_end(drift_run):
    import json

    run_dir, out = drift_run
    recs = json.loads((run_dir / "metrics.json").read_text())["records"]
    step = {r["metric"]: r for r in recs if r["drift"] == "step"}
    assert abs(step["change_session"]["value"] - 20000) <= 2000
    assert step["change_session"]["p_value"] < 0.01
    assert step["settle_sliding"]["value"] is not None
    assert abs(step["beta_after"]["value"] - 0.6) < 0.05
    assert (run_dir / "drift_synthetic.png").is_file()
    assert "settle_sliding" in out


@pytest.mark.slow
def test_report_aggregates_the_drift_folder(drift_run, tmp_path):
    """`groupbias-report runs/drift` (once a KeyError: 'regime'): one summary row per
    schedule and metric."""
    import json

    from groupbias.reporting.aggregate import main as report_main

    run_dir, _ = drift_run
    assert report_main([str(run_dir), "--out", str(tmp_path)]) == 0
    recs = json.loads((run_dir / "metrics.json").read_text())["records"]
    summary = pd.read_csv(tmp_path / "summary.csv").set_index(["drift", "metric"])
    assert len(summary) == len(recs)
    for r in recs:
        assert summary.loc[(r["drift"], r["metric"]), "mean"] == pytest.approx(
            r["value"], nan_ok=True
        )
    assert "| drift |" in (tmp_path / "summary.md").read_text()


def test_ranker_logging_policy_fits_a_labeled_fraction():
    """logging=ranker: least squares on 20 % of the queries' labels ranks the rest well
    (synthetic features 2..6 carry the label)."""
    from scipy import stats

    data = make_synthetic(n_queries=200, list_size=(10, 30), seed=5)
    rel = data.labels / 4.0
    settings = ClickSettings(logging="ranker", labeled_fraction=0.2)
    scores = logging_scores(data, rel, rel, settings, np.random.default_rng(1))
    assert stats.spearmanr(scores, rel).statistic > 0.6
    noisy = ClickSettings(logging="noisy_relevance", logging_noise=0.0)
    assert np.array_equal(
        logging_scores(data, rel, rel * 0.5, noisy, np.random.default_rng(1)), rel
    )
    with pytest.raises(ParameterError) as e:
        ClickSettings(labeled_fraction=0.0)
    assert e.value.name == "labeled_fraction"


@pytest.mark.parametrize("experiment", ["clicks", "drift"])
def test_a_library_user_gets_the_settings_of_the_command(experiment):
    """ClickSettings() is what experiment=clicks and experiment=drift log with: their yaml
    keys build the same settings (values read from the yaml, not from the code)."""
    import yaml

    from groupbias.app.config import build

    node = yaml.safe_load((Path(CONFIG_DIR) / "experiment" / f"{experiment}.yaml").read_text())
    exp = build(node["experiment"], "experiment")
    assert exp.settings == ClickSettings()
    assert ClickSettings().user == UserModel("pbm", 1.0, 0.01, 0.5)
    assert (ClickSettings().logging, ClickSettings().temperature) == ("noisy_attractiveness", 0.2)


def test_click_keys_name_themselves_in_errors():
    from experiments.clicks import ClickLogKeys

    for key, value in (("user_model", "dbn"), ("eta", -1.0), ("positions", 0)):
        with pytest.raises(ParameterError) as e:
            ClickLogKeys(**{key: value}).click_settings()
        assert e.value.name == key


def test_per_query_mean_over_repetitions():
    from experiments.clicks import per_query_mean

    got = per_query_mean([np.array([1.0, np.nan, np.nan]), np.array([3.0, 2.0, np.nan])])
    assert got[0] == 2.0 and got[1] == 2.0 and np.isnan(got[2])


@pytest.mark.slow
@pytest.mark.realdata
def test_clicks_and_drift_on_trec(trec_root, tmp_path, monkeypatch):
    """Both experiments run on TREC Fair data at small scale; the drift tracks rescaled to
    the estimator's level follow a step on TREC 2019, where the plain ratio cannot (the
    groups' mean utilities differ there)."""
    import json

    monkeypatch.setenv("GROUPBIAS_TREC_FAIR", str(trec_root))
    _run(
        [
            "experiment=clicks",
            "dataset=trec2020",
            "experiment.sessions=[5000]",
            "experiment.repetitions=1",
            "experiment.save_logs=false",
            "trainer.max_epochs=2",
            "model.fc_model.sizes=[8]",
            "model.transformer.d_ff=8",
            "model.transformer.h=1",
        ],
        tmp_path,
    )
    recs = json.loads((tmp_path / "clicks" / "metrics.json").read_text())["records"]
    conds = {r["condition"] for r in recs if r["metric"] == "ndcg@10"}
    assert conds == {"full", "none", "position", "group", "both"}
    _run(
        [
            "experiment=drift",
            "dataset=trec2019",
            "experiment.drifts=[step]",
            "experiment.level=estimator",
        ],
        tmp_path,
    )
    recs = json.loads((tmp_path / "drift" / "metrics.json").read_text())["records"]
    by = {r["metric"]: r["value"] for r in recs}
    assert abs(by["beta_before"] - 0.8) < 0.05 and abs(by["beta_after"] - 0.6) < 0.05
    assert abs(by["change_session"] - 100_000) <= 2000
    assert by["mae_sliding"] < 0.03
