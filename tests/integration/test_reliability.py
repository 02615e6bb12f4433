"""No number that means nothing: runs that computed nothing fail and are not stored, skipped
datasets are recomputed when their data appears, degenerate settings and one-group data are
refused up front naming the key, errors reach the command line as one line with exit code 2,
and damaged run folders are reported or cleaned."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

import groupbias as gb
from experiments.common import with_validation
from groupbias.app.cli import CONFIG_DIR, run
from groupbias.core.errors import ConfigError, GroupingError
from groupbias.data.datasets import BuiltinGrouping, DatasetInfo
from groupbias.reporting.aggregate import main as report_main

REPO = Path(__file__).resolve().parents[2]
TINY = ["dataset.params.n_queries=60", "dataset.params.list_size=[4,20]"]


def _compose(overrides):
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        return compose(config_name="config", overrides=overrides)


def _cli(args, tmp_path, env_extra=None):
    env = {**os.environ, "GROUPBIAS_RUNS": str(tmp_path / "runs"), **(env_extra or {})}
    exe = Path(sys.executable).with_name("groupbias")
    return subprocess.run(
        [str(exe), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow  # a subprocess or a whole run: seconds
def test_a_run_where_every_dataset_was_skipped_fails_and_stores_nothing(tmp_path):
    env = {"GROUPBIAS_TREC_FAIR": str(tmp_path / "nowhere")}
    res = _cli(["experiment=table1", "experiment.datasets=[trec2019,trec2020]"], tmp_path, env)
    assert res.returncode == 2, res.stderr[-2000:]
    assert "nothing was computed" in res.stderr and "Traceback" not in res.stderr
    (meta,) = list((tmp_path / "runs" / "table1").rglob("meta.json"))
    assert json.loads(meta.read_text())["status"] == "failed"
    assert not list((tmp_path / "runs").rglob("metrics.json"))


@pytest.mark.realdata
def test_a_skipped_dataset_is_recomputed_when_its_data_appears(trec_root, tmp_path, monkeypatch):
    cfg = _compose(
        [
            "experiment=table1",
            f"paths.runs={tmp_path}",
            *TINY,
            "experiment.datasets=[synthetic,trec2020]",
            "bias.betas=[0.8]",
        ]
    )
    monkeypatch.setenv("GROUPBIAS_TREC_FAIR", str(tmp_path / "nowhere"))
    first = run(cfg)
    assert {r["dataset"] for r in first["records"]} == {"synthetic"}
    assert any("TREC 2020" in s for s in first["skipped"])
    monkeypatch.setenv("GROUPBIAS_TREC_FAIR", str(trec_root))
    second = run(cfg)  # not "already complete": the skipped dataset is computed now
    assert {r["dataset"] for r in second["records"]} == {"synthetic", "TREC 2020"}
    assert not second["skipped"]
    synth = [r for r in first["records"] if r["dataset"] == "synthetic"]
    assert synth == [r for r in second["records"] if r["dataset"] == "synthetic"]


@pytest.mark.parametrize(
    "override, key",
    [
        ("experiment.repetitions=0", "experiment.repetitions"),
        ("experiment.repetitions=-1", "experiment.repetitions"),
        ("experiment.cluster_sizes=[]", "experiment.cluster_sizes"),
        ("trainer.max_epochs=0", "trainer.max_epochs"),
        ("trainer.max_epochs=abc", "trainer.max_epochs"),
        ("trainer.patience=-1", "trainer.patience"),
        ("bias.betas=[1.5]", "bias.betas"),
        ("bias.relevance=foo", "bias.relevance"),
        ("estimator.grid_step=0.3", "estimator.grid_step"),
        ("seed=abc", "seed"),
        ("seed=-1", "seed"),
        ("grouping=feature", None),
    ],
)
def test_degenerate_settings_are_refused_naming_the_key(override, key, tmp_path):
    extra = ["grouping.feature_id=abc"] if override == "grouping=feature" else []
    cfg = _compose(
        ["experiment=ablation_cluster_size", f"paths.runs={tmp_path}", *TINY, override, *extra]
    )
    with pytest.raises(ConfigError) as info:  # as given on the command line
        run(cfg, overridden=[o.split("=")[0] for o in (override, *extra)])
    assert info.value.key == (key or "grouping.feature_id")
    assert not (tmp_path / "ablation_cluster_size").exists()  # refused before any data


@pytest.mark.realdata
def test_a_split_the_dataset_lacks_names_experiment_split(trec_root, tmp_path, monkeypatch):
    monkeypatch.setenv("GROUPBIAS_TREC_FAIR", str(trec_root))
    cfg = _compose(
        [
            "experiment=table1",
            f"paths.runs={tmp_path}",
            "dataset=trec2019",
            "experiment.split=valid",
        ]
    )
    with pytest.raises(ConfigError) as info:
        run(cfg, data_overridden=True)
    assert info.value.key == "experiment.split" and "'valid'" in str(info.value)


def _one_group_data(n_queries=30):
    qptr = np.arange(0, 5 * n_queries + 1, 5)
    n = int(qptr[-1])
    rng = np.random.default_rng(0)
    return gb.RankingData(
        rng.normal(size=(n, 2)),
        rng.integers(0, 2, n).astype(float),
        qptr,
        np.arange(n_queries),
        groups=np.ones(n),
        name="onegroup",
    )


def test_one_group_data_is_refused_saying_how_many_queries_have_both_groups():
    info = DatasetInfo("onegroup", "one group", object)
    with pytest.raises(GroupingError, match=r"only 0 of 30 queries have items of both groups"):
        BuiltinGrouping().apply({"train": _one_group_data()}, info)
    # a few two-group queries are below the configured threshold too
    d = _one_group_data()
    g = d.groups.copy()
    g[[0, 5, 10]] = 0.0
    with pytest.raises(GroupingError, match=r"only 3 of 30 .* at least 10 .*min_two_group"):
        BuiltinGrouping().apply({"train": d.with_groups(g)}, info)
    assert BuiltinGrouping(min_two_group_queries=3).apply({"train": d.with_groups(g)}, info)


@pytest.mark.slow  # a subprocess or a whole run: seconds
def test_cli_errors_are_one_line_and_verbose_shows_the_traceback(tmp_path):
    res = _cli(["bias.relevance=foo"], tmp_path)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.splitlines()[0].startswith("groupbias: error: bias.relevance:")
    loud = _cli(["bias.relevance=foo", "verbose=true"], tmp_path)
    assert loud.returncode != 0 and "Traceback" in loud.stderr


def test_table_rows_name_the_grouping_used(tmp_path, monkeypatch, rng):
    for split, n in (("train", 40), ("test", 10)):
        sizes = rng.integers(3, 8, size=n)
        lines = [
            f"{rng.integers(0, 3)} 1:{rng.random():.4f} 2:{rng.random():.4f}"
            for _ in range(int(sizes.sum()))
        ]
        (tmp_path / f"{split}.txt").write_text("\n".join(lines) + "\n")
        (tmp_path / f"{split}.txt.query").write_text("\n".join(map(str, sizes)) + "\n")
    monkeypatch.setenv("GROUPBIAS_LIGHTGBM", str(tmp_path))
    cfg = _compose(
        [
            "experiment=table1",
            f"paths.runs={tmp_path / 'runs'}",
            "dataset=lightgbm",
            "+dataset.params.cache=false",
            "grouping=feature",
            "grouping.feature_id=1",
            "bias.betas=[0.8]",
        ]
    )
    recs = run(cfg, data_overridden=True)["records"]
    assert {r["dataset"] for r in recs} == {"LightGBM file [1, mean]"}


def test_a_validation_split_is_held_out_when_the_dataset_has_none(capsys):
    data = _one_group_data(50)
    out = with_validation({"train": data, "test": data}, 0.2, seed=0, title="x")
    assert out["valid"].n_queries == 10 and out["train"].n_queries == 40
    assert not set(out["valid"].query_ids) & set(out["train"].query_ids)
    assert "10 of 50 training queries" in capsys.readouterr().out
    same = with_validation({"train": data, "valid": data}, 0.2, seed=0, title="x")
    assert same["train"] is data


def test_leftover_tmp_files_are_removed_and_a_truncated_meta_is_named(tmp_path, capsys):
    cfg = _compose(
        [
            "experiment=table1",
            f"paths.runs={tmp_path}",
            *TINY,
            "experiment.datasets=[synthetic]",
            "bias.betas=[0.8]",
        ]
    )
    rd = tmp_path / "table1"
    (rd / "steps").mkdir(parents=True)
    stale = rd / "steps" / ".x.json.abc123.tmp"
    stale.write_text("half a write")
    run(cfg)
    assert not stale.exists()
    meta = rd / "meta.json"
    meta.write_text(meta.read_text()[:40])  # a write cut short
    assert report_main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(meta) in err and "truncated" in err
