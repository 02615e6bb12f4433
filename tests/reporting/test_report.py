"""`groupbias-report` on the folders the command writes: runs that differ in a setting are
rows of their own (the setting a column), seeds become mean ± s.d. with n, tidy numbers
(Parquet and CSV) are the source of every table. The demo, clicks, drift and
estimator-robustness folders are aggregated in the tests that make them (test_demo.py,
test_clicks_pipeline.py, test_estimator_robustness.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from groupbias.reporting.aggregate import main as report_main
from groupbias.reporting.results import read_runs, run_settings

REPO = Path(__file__).resolve().parents[2]
TINY = ["dataset.params.n_queries=60", "dataset.params.list_size=[4,20]"]
SYNTHETIC = "experiment.datasets=[synthetic]"


def run_groupbias(cwd: Path, *args: str):
    exe = Path(sys.executable).with_name("groupbias")
    res = subprocess.run(
        [str(exe), *args], cwd=cwd, env=dict(os.environ), capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    return res


def _records(folder: Path) -> list[dict]:
    return json.loads((folder / "metrics.json").read_text())["records"]


def _at_beta(summary: pd.DataFrame, beta) -> pd.Series:
    """The summary rows at ``beta`` (None: full information, which has no β)."""
    return summary["beta"].isna() if beta is None else np.isclose(summary["beta"], beta)


@pytest.mark.slow
def test_table1_default_and_policy_runs_are_rows_of_one_report(tmp_path):
    """The sequence docs/table1_trec.md recommends: `groupbias experiment=table1`, then the
    same with evaluation=policy into runs/table1/evaluation=policy (inside the first); once
    refused ("expected one record per dataset, β, metric and condition")."""
    run_groupbias(tmp_path, "experiment=table1", SYNTHETIC, *TINY, "hydra.run.dir=runs/table1")
    run_groupbias(
        tmp_path, "experiment=table1", SYNTHETIC, *TINY, "evaluation=policy",
        "evaluation.epochs=20", "evaluation.samples=20",
        "hydra.run.dir='runs/table1/evaluation=policy'",
    )  # fmt: skip
    root = tmp_path / "runs" / "table1"
    settings = run_settings(read_runs([root]))
    assert sorted(settings["evaluation"]) == ["deterministic", "policy"]
    assert report_main([str(root)]) == 0
    out = root / "report"
    records = pd.read_parquet(out / "records.parquet")
    assert set(records["run"]) == {".", "evaluation=policy"}
    summary = pd.read_csv(out / "summary.csv")
    for folder, mode in ((root, "deterministic"), (root / "evaluation=policy", "policy")):
        for r in _records(folder):
            row = summary[
                (summary["evaluation"] == mode)
                & (summary["metric"] == r["metric"])
                & (summary["condition"] == r["condition"])
                & _at_beta(summary, r["beta"])
            ]
            assert len(row) == 1 and row["n"].iloc[0] == 1
            assert row["mean"].iloc[0] == pytest.approx(r["value"], abs=1e-12)
    md = (out / "table_tabular.md").read_text()
    rows = [line.split("|")[1].strip() for line in md.splitlines() if line.startswith("| synth")]
    assert sorted(rows)[0].startswith("synthetic · evaluation=deterministic")
    assert sorted(rows)[1].startswith("synthetic · evaluation=policy")
    # the table's CSV holds numbers, not "1.000*"
    table_csv = pd.read_csv(out / "table_tabular.csv")
    assert table_csv["value"].dtype == float and "*" not in (out / "table_tabular.csv").read_text()


@pytest.mark.slow
def test_a_three_seed_sweep_becomes_mean_sd_and_n(tmp_path):
    """`groupbias -m experiment=table1 seed=0,1,2 ...`: every cell mean ± s.d. (sample)
    with n = 3, equal to the three runs' numbers computed by hand."""
    run_groupbias(
        tmp_path, "-m", "experiment=table1", "seed=0,1,2", SYNTHETIC, *TINY, "paths.runs=runs"
    )
    root = tmp_path / "runs" / "table1"
    folders = sorted(p.parent for p in root.rglob("metrics.json"))
    assert len(folders) == 3
    assert report_main([str(root), "--out", str(tmp_path / "report")]) == 0
    records = pd.read_parquet(tmp_path / "report" / "records.parquet")
    assert sorted(records["seed"].unique()) == [0, 1, 2]
    summary = pd.read_parquet(tmp_path / "report" / "summary.parquet")
    assert "seed" not in summary.columns and set(summary["n"]) == {3}
    per_run = [
        {(r["metric"], r["condition"], r["beta"]): r["value"] for r in _records(f)} for f in folders
    ]
    for key in per_run[0]:
        values = [run[key] for run in per_run]
        row = summary[
            (summary["metric"] == key[0])
            & (summary["condition"] == key[1])
            & _at_beta(summary, key[2])
        ]
        assert len(row) == 1
        assert row["mean"].iloc[0] == pytest.approx(np.mean(values), abs=1e-12)
        assert row["sd"].iloc[0] == pytest.approx(np.std(values, ddof=1), abs=1e-12)
    want = [run[("rho_dtr", "corrected", 0.6)] for run in per_run]
    md = (tmp_path / "report" / "table_tabular.md").read_text()
    assert f"{np.mean(want):.3f} ± {np.std(want, ddof=1):.3f}" in md
    assert "mean ± s.d. over 3 repetitions (or seeds)" in md


def test_runs_made_through_the_library_differ_by_their_resolved_keys(tmp_path):
    """Without the command's overrides file, the resolved configuration keys that differ
    become the columns (one per key; one per group where several of its keys differ)."""
    import yaml

    for name, cfg in (
        ("a", {"seed": 0, "estimator": {"cluster_size": None, "tie": "largest"}}),
        ("b", {"seed": 1, "estimator": {"cluster_size": 10, "tie": "middle"}}),
    ):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "config.yaml").write_text(yaml.safe_dump({**cfg, "paths": {"runs": name}}))
        (folder / "meta.json").write_text(json.dumps({"status": "complete"}))
        (folder / "metrics.json").write_text(
            json.dumps({"records": [{"metric": "m", "value": 1.0}]})
        )
    settings = run_settings(read_runs([tmp_path]))
    assert sorted(settings.columns) == ["estimator", "seed"]  # paths do not change results
    assert settings["estimator"].tolist() == [
        "cluster_size=null,tie=largest",
        "cluster_size=10,tie=middle",
    ]


def _hand_run(folder: Path, records: list[dict], **meta) -> Path:
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text(json.dumps({"status": "complete", **meta}))
    (folder / "metrics.json").write_text(json.dumps({"records": records}))
    return folder


def test_a_copied_run_folder_counts_once(tmp_path, capsys):
    """Two folders of one run (same config fingerprint, seed and data digests) are one
    replicate, not two with s.d. 0; another seed is a second replicate."""
    import shutil

    inputs = [{"key": "synthetic/test", "fingerprint": "abc"}]
    rec = [{"metric": "ndcg@10", "condition": "biased", "value": 0.5}]
    first = _hand_run(tmp_path / "runs" / "s0", rec, fingerprint="f1", seed=0, inputs=inputs)
    shutil.copytree(first, tmp_path / "runs" / "copy_of_s0")
    assert report_main([str(tmp_path / "runs"), "--out", str(tmp_path / "r1")]) == 0
    out = capsys.readouterr().out
    note = [line for line in out.splitlines() if "note:" in line]
    assert len(note) == 1 and "copy_of_s0" in note[0] and "s0 " in note[0]
    assert "counted once" in note[0]
    summary = pd.read_csv(tmp_path / "r1" / "summary.csv")
    assert summary["n"].tolist() == [1] and summary["mean"].tolist() == [0.5]
    rec2 = [{**rec[0], "value": 0.7}]
    _hand_run(tmp_path / "runs" / "s1", rec2, fingerprint="f2", seed=1, inputs=inputs)
    assert report_main([str(tmp_path / "runs"), "--out", str(tmp_path / "r2")]) == 0
    summary = pd.read_csv(tmp_path / "r2" / "summary.csv")
    assert summary["n"].tolist() == [2] and summary["mean"].iloc[0] == pytest.approx(0.6)
    # the same config and seed on other data is another run
    other = [{"key": "synthetic/test", "fingerprint": "xyz"}]
    _hand_run(tmp_path / "runs" / "s0_new", rec2, fingerprint="f1", seed=0, inputs=other)
    assert report_main([str(tmp_path / "runs"), "--out", str(tmp_path / "r3")]) == 0
    assert pd.read_csv(tmp_path / "r3" / "summary.csv")["n"].tolist() == [3]


def test_records_without_keys_are_an_error_naming_the_folder(tmp_path, capsys):
    """A metrics.json whose records hold only numbers cannot be grouped: one line naming
    its folder and a hint, exit code 2 (not pandas' "No group keys passed!")."""
    _hand_run(tmp_path / "good", [{"metric": "m", "value": 1.0}], fingerprint="g")
    _hand_run(tmp_path / "bad", [{"value": 1.0}, {"value": 2.0, "seed": 1}], fingerprint="b")
    assert report_main([str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and str(tmp_path / "bad" / "metrics.json") in err[0]
    assert "no field saying what it is" in err[0] and "hint:" in err[1]


def test_two_experiments_full_information_rows_stay_apart(tmp_path):
    """Full information has no β (None); the LTR records of two experiments share every
    table cell but the experiment: two rows named by it, not 'expected one record per
    dataset, β, metric, condition' (a missing β used to drop out of the cell check)."""
    import yaml

    for name, extra in (("demo", {"repetitions": 2}), ("table2", {"alpha": 0.001})):
        recs = [
            dict(regime="ltr", dataset="synthetic", metric="ndcg@10", condition=cond,
                 beta=None if cond == "full" else 0.7, value=v)
            for cond, v in (("full", 0.9), ("biased", 0.6), ("corrected", 0.8))
        ]  # fmt: skip
        folder = _hand_run(tmp_path / "runs" / name, recs, fingerprint=name)
        cfg = {"experiment": {"name": name, **extra}, "seed": 0}
        (folder / "config.yaml").write_text(yaml.safe_dump(cfg))
    assert report_main([str(tmp_path / "runs")]) == 0
    md = (tmp_path / "runs" / "report" / "table_ltr.md").read_text()
    rows = sorted(line.split("|")[1].strip() for line in md.splitlines() if "synthetic" in line)
    assert rows == ["synthetic · experiment=demo", "synthetic · experiment=table2"]


#: the Okabe–Ito palette (Okabe & Ito 2008), told apart with the common colour blindnesses
OKABE_ITO = {"#000000", "#e69f00", "#56b4e9", "#009e73", "#f0e442", "#0072b2", "#d55e00", "#cc79a7"}
#: the range each drawn metric can take (docs/metrics.md)
RANGES = {"ndcg@10": (0.0, 1.0), "rho_dtr": (0.0, 1.0), "delta_eel": (0.0, np.inf)}


@pytest.mark.slow
def test_the_degradation_figure_of_a_three_seed_table1_sweep_is_ready_for_a_paper(
    tmp_path, monkeypatch
):
    """`groupbias -m experiment=table1 seed=0,1,2 'bias.betas=[1.0,...,0.6]'` then
    `groupbias-report runs/table1`: every panel has full information, biased and corrected,
    each the mean of the three seeds (by hand from the runs' records), with a band; the
    lines differ in colour (Okabe–Ito), line style and marker, and where they coincide the
    one drawn over another has the smaller or a hollow marker; the legend says what the
    band is and n; the y axes stay within each metric's range (the NDCG axis once ran to
    1.04); PNG, PDF (no Type 3 fonts) and SVG are written."""
    from matplotlib.collections import PolyCollection
    from matplotlib.colors import to_hex

    from groupbias.reporting import plots

    betas = [1.0, 0.9, 0.8, 0.7, 0.6]
    run_groupbias(
        tmp_path, "-m", "experiment=table1", "seed=0,1,2", "bias.betas=[1.0,0.9,0.8,0.7,0.6]",
        SYNTHETIC, *TINY, "paths.runs=runs",
    )  # fmt: skip
    root = tmp_path / "runs" / "table1"
    figures = []
    save = plots.save_figure
    monkeypatch.setattr(
        plots, "save_figure", lambda fig, stem: figures.append(fig) or save(fig, stem)
    )
    assert report_main([str(root)]) == 0
    assert len(figures) == 1
    fig = figures[0]
    runs = [_records(f.parent) for f in sorted(root.rglob("metrics.json"))]
    assert len(runs) == 3
    for ax, metric in zip(fig.axes, ("ndcg@10", "rho_dtr", "delta_eel"), strict=True):
        lines = {ln.get_label(): ln for ln in ax.get_lines()}
        assert sorted(lines) == ["biased", "corrected", "full information"]
        for cond, line in lines.items():
            key = {"full information": "full"}.get(cond, cond)
            want = [
                np.mean([r["value"] for run in runs for r in run
                         if (r["metric"], r["condition"]) == (metric, key)
                         and (key == "full" or r["beta"] == b)])
                for b in betas
            ]  # fmt: skip
            assert list(line.get_xdata()) == betas
            assert np.allclose(line.get_ydata(), want, rtol=0, atol=1e-12), (metric, cond)
        assert len([c for c in ax.collections if isinstance(c, PolyCollection)]) == 3
        drawn = list(lines.values())
        for i, a in enumerate(drawn):
            assert to_hex(a.get_color()) in OKABE_ITO
            for b in drawn[i + 1 :]:
                assert to_hex(a.get_color()) != to_hex(b.get_color())
                assert a.get_linestyle() != b.get_linestyle()
                assert a.get_marker() != b.get_marker()
                top, below = (a, b) if a.get_zorder() > b.get_zorder() else (b, a)
                assert top.get_zorder() != below.get_zorder()
                hollow = top.get_markerfacecolor() == "none"
                assert hollow or top.get_markersize() < below.get_markersize()
        lo, hi = RANGES[metric]
        bottom, top_ = ax.get_ylim()
        assert lo <= bottom < top_ <= hi, (metric, ax.get_ylim())
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == [
        "full information",
        "biased",
        "corrected",
        "line: mean; band: ± 1 s.d. (sample); n = 3 seeds",
    ]
    out = root / "report"
    for ext in ("png", "pdf", "svg"):
        assert (out / f"degradation_tabular.{ext}").stat().st_size > 1000
    pdf = (out / "degradation_tabular.pdf").read_bytes()
    assert b"/Type3" not in pdf and (b"/TrueType" in pdf or b"/CIDFontType2" in pdf)
