"""`groupbias experiment=estimator_robustness` end to end at tiny scale."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _groupbias(tmp_path, *overrides: str, timeout: int = 600):
    """Run the CLI with runs under ``tmp_path``."""
    env = {**os.environ, "GROUPBIAS_RUNS": str(tmp_path)}
    cmd = [sys.executable, "-m", "groupbias.app.cli", "experiment=estimator_robustness", *overrides]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def robustness_run(tmp_path_factory):
    """runs/estimator_robustness at a tiny scale through the command: (process, run folder)."""
    tmp_path = tmp_path_factory.mktemp("robustness")
    out = _groupbias(
        tmp_path,
        "experiment.repetitions=2",
        "experiment.ratios=[1.0,0.6]",
        "experiment.betas=[1.0]",
        "experiment.fig9_stds=[0.3]",
        "experiment.fig9_modes=[]",
        "experiment.datasets=[{dataset: synthetic, params: {n_queries: 1000, "
        "list_size: [10, 60], affected_share: 0.35}}]",
        "progress=false",
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out, next(tmp_path.glob("estimator_robustness/*"))


@pytest.mark.slow
def test_robustness_experiment_runs_and_shows_the_calibrated_gain(robustness_run):
    out, run = robustness_run
    assert "per-query mean |β̂_q − β_q|" in out.stdout
    for stem in ("estimator_robustness_synthetic", "estimator_fig9"):
        assert (run / f"{stem}.png").stat().st_size > 1000
        assert (run / f"{stem}.pdf").exists()
    recs = json.loads((run / "metrics.json").read_text())["records"]
    first = [r for r in recs if r["repetition"] == 0]  # the cells of one repetition
    err = {(r["estimator"], r["ratio"]): r["value"] for r in first if r["metric"] == "abs_error"}
    assert err[("calibrated", 0.6)] <= 0.05 < err[("ks", 0.6)]
    fig9 = {r["estimator"]: r["value"] for r in first if r["metric"] == "per_query_error"}
    assert fig9["shrinkage"] < min(fig9["per-query KS"], fig9["cluster KS"])


@pytest.mark.slow
def test_report_aggregates_the_estimator_robustness_folder(robustness_run, tmp_path):
    """`groupbias-report runs/estimator_robustness`: estimator and utility ratio are keys
    (rows of the tabular table), the repetitions mean ± s.d. with n = 2."""
    import numpy as np
    import pandas as pd

    from groupbias.reporting.aggregate import main as report_main

    _, run = robustness_run
    assert report_main([str(run), "--out", str(tmp_path)]) == 0
    recs = json.loads((run / "metrics.json").read_text())["records"]
    summary = pd.read_parquet(tmp_path / "summary.parquet")
    err = summary[summary["metric"] == "abs_error"].set_index(["estimator", "ratio"])
    for (name, ratio), row in err.iterrows():
        vals = [
            r["value"]
            for r in recs
            if r["metric"] == "abs_error" and (r["estimator"], r["ratio"]) == (name, ratio)
        ]
        assert row["n"] == 2 and row["mean"] == pytest.approx(np.mean(vals), abs=1e-12)
        assert row["sd"] == pytest.approx(np.std(vals, ddof=1), abs=1e-12)
    md = (tmp_path / "table_tabular.md").read_text()
    assert "| synthetic · estimator=calibrated · ratio=0.6 |" in md


def test_a_bad_estimator_key_in_the_experiment_is_named(tmp_path):
    out = _groupbias(tmp_path, "experiment.estimators.wasserstein.distance=energy", timeout=300)
    assert out.returncode == 2
    assert "experiment.estimators.wasserstein.distance" in out.stderr
