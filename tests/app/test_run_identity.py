"""A run is complete only on the data it was computed on: its identity holds the content
digests of every file it read, so a dataset variable pointing elsewhere, an edited file or a
kill followed by a change of data recomputes ("already complete" never answers for other data,
and records of old and new data never mix)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from groupbias.app import runs
from groupbias.app.cli import CONFIG_DIR, run
from groupbias.data.datasets import DatasetSpec

pytestmark = pytest.mark.reproducibility


def _svmlight_lines(variant: int, n_features: int, qid: bool = True) -> list[str]:
    rng = np.random.default_rng(variant)
    lines = []
    for q in range(12):
        for _ in range(5):
            feats = " ".join(f"{j}:{rng.random():.3f}" for j in (1, 2, n_features))
            lines.append(f"{rng.integers(0, 5)}" + (f" qid:{q}" if qid else "") + f" {feats}")
    return lines


def write_lightgbm(d: Path, variant: int) -> dict:
    d.mkdir(parents=True, exist_ok=True)
    (d / "train.txt").write_text("\n".join(_svmlight_lines(variant, 3, qid=False)) + "\n")
    (d / "train.txt.query").write_text("5\n" * 12)
    return {"GROUPBIAS_LIGHTGBM": str(d)}


def write_yahoo(d: Path, variant: int) -> dict:
    d.mkdir(parents=True, exist_ok=True)
    (d / "set1.train.txt").write_text("\n".join(_svmlight_lines(variant, 700)) + "\n")
    return {"GROUPBIAS_YAHOO": str(d)}


def write_mslr(d: Path, variant: int) -> dict:
    (d / "Fold1").mkdir(parents=True, exist_ok=True)
    (d / "Fold1" / "train.txt").write_text("\n".join(_svmlight_lines(variant, 136)) + "\n")
    return {"GROUPBIAS_MSLR": str(d)}


def write_iitjee(d: Path, variant: int) -> dict:
    d.mkdir(parents=True, exist_ok=True)
    rows = ["REGST_NO,NAME,category,sub_category,GENDER,PIN_RES,PARENT_NAM,math,phys,chem,mark"]
    for i in range(40):
        mark = (i * 7 + variant * 13) % 100
        gender = "F" if i % 3 == 0 else "M"
        rows.append(f"{1000 + i},N{i},GE,GE1,{gender},{110000 + i % 4},P{i},10,10,10,{mark}")
    (d / "iitjee2009.csv").write_text("\n".join(rows) + "\n")
    return {"GROUPBIAS_IITJEE": str(d / "iitjee2009.csv")}


def write_trec_ppg(d: Path, variant: int) -> dict:
    (d / "ppg" / "2019").mkdir(parents=True, exist_ok=True)
    rows = ["sensitive_attribute,session,score,feature_1,feature_2"]
    for s in range(15 + variant):
        for j in range(4):
            rows.append(f"{'HL'[j % 2]},{s},{(s + j + variant) % 2},0.{j},0.{(s + variant) % 10}")
    (d / "ppg" / "2019" / "train.csv").write_text("\n".join(rows) + "\n")
    return {"GROUPBIAS_TREC_FAIR": str(d)}


def write_movielens(d: Path, variant: int) -> dict:
    d.mkdir(parents=True, exist_ok=True)
    lines = [
        f"{u}::{m}::{1 + (u * m + variant) % 5}::9783{u}{m}\n"
        for u in range(1, 13)
        for m in (10, 20, 30, 40)
    ]
    (d / "ratings.dat").write_text("".join(lines))
    countries = ("USA", "France", "USA", "France") if variant == 0 else ("France",) * 3 + ("USA",)
    (d / "meta.csv").write_text(
        "movie_id,country,gross\n"
        + "".join(f"{m},{countries[k]},{1000 * m}\n" for k, m in enumerate((10, 20, 30, 40)))
    )
    return {
        "GROUPBIAS_MOVIELENS": str(d / "ratings.dat"),
        "GROUPBIAS_MOVIELENS_META": str(d / "meta.csv"),
    }


#: (dataset, writer, the variable switched to the other copy)
CASES = [
    ("lightgbm", write_lightgbm, "GROUPBIAS_LIGHTGBM"),
    ("yahoo", write_yahoo, "GROUPBIAS_YAHOO"),
    ("mslr", write_mslr, "GROUPBIAS_MSLR"),
    ("iitjee", write_iitjee, "GROUPBIAS_IITJEE"),
    ("trec2019", write_trec_ppg, "GROUPBIAS_TREC_FAIR"),
    ("movielens_country", write_movielens, "GROUPBIAS_MOVIELENS"),
    ("movielens_country", write_movielens, "GROUPBIAS_MOVIELENS_META"),
]


def _summary_run(name: str, calls: list):
    """A run that loads ``name`` and stores one record per step: the labels' sum, the
    affected share (when grouped), and the number of items."""

    def fn(run_dir):
        data = DatasetSpec(name=name).load(only=("train",))["train"]

        def step(what):
            calls.append(what)
            value = {
                "labels": float(data.labels.sum()),
                "groups": -1.0 if data.groups is None else float(data.groups.mean()),
                "items": float(data.n_items),
            }[what]
            return {"records": [{"metric": what, "value": value}]}

        recs = []
        for what in ("labels", "groups", "items"):
            recs += run_dir.step(what, lambda w=what: step(w), key={"what": what})["records"]
        return {"records": recs}

    return fn


@pytest.mark.parametrize("name, writer, variable", CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_a_dataset_variable_pointing_at_other_data_recomputes(
    name, writer, variable, tmp_path, monkeypatch
):
    monkeypatch.setenv("GROUPBIAS_CACHE", str(tmp_path / "cache"))
    first, other = writer(tmp_path / "a", 0), writer(tmp_path / "b", 1)
    for k, v in first.items():
        monkeypatch.setenv(k, v)
    calls: list = []
    cfg = {"experiment": {"name": "x"}, "dataset": {"name": name}}
    m1, skipped = runs.run_once(tmp_path / "run", cfg, _summary_run(name, calls))
    assert not skipped and len(calls) == 3
    again, skipped = runs.run_once(tmp_path / "run", cfg, _summary_run(name, calls))
    assert skipped and again == m1 and len(calls) == 3  # same data: complete, nothing rerun
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    (rec,) = meta["inputs"]
    assert rec["split"] == "train" and rec["dataset"]["name"] == name
    assert all(str(tmp_path / "a") in p for p in rec["paths"].values())
    assert all(len(v) == 64 for v in rec["fingerprint"].values())

    monkeypatch.setenv(variable, other[variable])  # the same command, other data
    m2, skipped = runs.run_once(tmp_path / "run", cfg, _summary_run(name, calls))
    assert not skipped and len(calls) == 6  # every step computed again
    assert m2 != m1
    moved = json.loads((tmp_path / "run" / "meta.json").read_text())["inputs"][0]
    assert any(str(tmp_path / "b") in p for p in moved["paths"].values())
    assert moved["fingerprint"] != rec["fingerprint"]


def test_an_edited_file_recomputes_even_with_size_and_mtime_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("GROUPBIAS_CACHE", str(tmp_path / "cache"))
    env = write_lightgbm(tmp_path / "a", 0)
    monkeypatch.setenv("GROUPBIAS_LIGHTGBM", env["GROUPBIAS_LIGHTGBM"])
    calls: list = []
    cfg = {"experiment": {"name": "x"}}
    m1, _ = runs.run_once(tmp_path / "run", cfg, _summary_run("lightgbm", calls))
    f = tmp_path / "a" / "train.txt"
    st = f.stat()
    text = f.read_text()
    first = text.index(" ")  # the first label: 0..4 -> another digit, same size
    f.write_text(str((int(text[0]) + 1) % 5) + text[1:])
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert f.stat().st_size == st.st_size and first == 1
    m2, skipped = runs.run_once(tmp_path / "run", cfg, _summary_run("lightgbm", calls))
    assert not skipped and m2["records"][0] != m1["records"][0]
    assert calls.count("labels") == 2


def test_kill_change_data_resume_never_mixes_old_and_new_records(tmp_path, monkeypatch):
    monkeypatch.setenv("GROUPBIAS_CACHE", str(tmp_path / "cache"))
    old, new = write_lightgbm(tmp_path / "a", 0), write_lightgbm(tmp_path / "b", 1)
    monkeypatch.setenv("GROUPBIAS_LIGHTGBM", old["GROUPBIAS_LIGHTGBM"])
    cfg = {"experiment": {"name": "x"}}
    calls: list = []
    full = _summary_run("lightgbm", calls)

    def killed_after_two_steps(run_dir):
        data = DatasetSpec(name="lightgbm").load(only=("train",))["train"]
        run_dir.step(
            "labels",
            lambda: {"records": [{"metric": "labels", "value": 1.0}]},
            key={"what": "labels"},
        )
        run_dir.step(
            "groups",
            lambda: {"records": [{"metric": "groups", "value": 2.0}]},
            key={"what": "groups"},
        )
        assert data.n_items == 60
        raise KeyboardInterrupt  # killed before the third step

    with pytest.raises(KeyboardInterrupt):
        runs.run_once(tmp_path / "run", cfg, killed_after_two_steps)
    assert len(list((tmp_path / "run" / "steps").iterdir())) == 2
    monkeypatch.setenv("GROUPBIAS_LIGHTGBM", new["GROUPBIAS_LIGHTGBM"])
    resumed, _ = runs.run_once(tmp_path / "run", cfg, full)
    assert calls == ["labels", "groups", "items"]  # nothing of the old data reused
    clean, _ = runs.run_once(tmp_path / "clean", cfg, _summary_run("lightgbm", []))
    assert resumed == clean
    # on unchanged data the finished steps of a killed run are reused
    monkeypatch.setenv("GROUPBIAS_LIGHTGBM", old["GROUPBIAS_LIGHTGBM"])
    with pytest.raises(KeyboardInterrupt):
        runs.run_once(tmp_path / "run2", cfg, killed_after_two_steps)
    calls.clear()
    runs.run_once(tmp_path / "run2", cfg, full)
    assert calls == ["items"]


def test_meta_records_version_commit_and_inputs(tmp_path, monkeypatch):
    monkeypatch.setenv("GROUPBIAS_CACHE", str(tmp_path / "cache"))
    env = write_trec_ppg(tmp_path / "a", 0)
    monkeypatch.setenv("GROUPBIAS_TREC_FAIR", env["GROUPBIAS_TREC_FAIR"])
    runs.run_once(tmp_path / "run", {"a": 1}, _summary_run("trec2019", []))
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    assert meta["groupbias_version"] and "git_commit" in meta
    commit = runs.git_commit()
    assert commit is None or (len(commit) == 40 and meta["git_commit"] == commit)
    (rec,) = meta["inputs"]
    csv = tmp_path / "a" / "ppg" / "2019" / "train.csv"
    import hashlib

    assert rec["paths"] == {"csv": str(csv)}
    assert rec["fingerprint"] == {"csv": hashlib.sha256(csv.read_bytes()).hexdigest()}
    step = json.loads((tmp_path / "run" / "steps" / "labels.json").read_text())
    assert step["inputs"] == meta["inputs"]


@pytest.mark.slow  # a subprocess or a whole run: seconds
def test_the_command_recomputes_when_the_dataset_variable_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("GROUPBIAS_CACHE", str(tmp_path / "cache"))
    envs = [write_lightgbm(tmp_path / d, v) for d, v in (("a", 0), ("b", 1))]
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose(
            config_name="config",
            overrides=[
                "experiment=table1",
                f"paths.runs={tmp_path / 'runs'}",
                "dataset=lightgbm",
                "grouping=feature",
                "grouping.feature_id=1",
                "grouping.min_two_group_queries=3",
                "bias.betas=[0.8]",
            ],
        )
    results = []
    for env in (envs[0], envs[0], envs[1]):
        monkeypatch.setenv("GROUPBIAS_LIGHTGBM", env["GROUPBIAS_LIGHTGBM"])
        results.append(run(cfg, data_overridden=True))
    assert results[0] == results[1]  # the same data: "already complete"
    assert results[2] != results[0]  # other data behind the same command
    ndcg = [[r["value"] for r in res["records"] if r["metric"] == "ndcg@10"] for res in results]
    assert ndcg[2] != ndcg[0]


_OPENED: list = []  # the files the audit hook collects while a test listens (else None)


def _audit(event, args):
    if event == "open" and _OPENED and _OPENED[-1] is not None and args and args[0] is not None:
        if isinstance(args[0], (str, bytes, os.PathLike)):
            _OPENED[-1].add(os.path.abspath(os.fsdecode(args[0])))


@pytest.mark.parametrize(
    "name, writer", [(c[0], c[1]) for c in CASES[:6]], ids=[c[0] for c in CASES[:6]]
)
def test_the_declared_sources_are_every_file_the_loader_reads(name, writer, tmp_path, monkeypatch):
    """The fingerprint covers what the loader opens (an audit hook lists every file opened
    while the split loads; the cache's own files aside)."""
    import sys

    if not _OPENED:
        sys.addaudithook(_audit)
    monkeypatch.setenv("GROUPBIAS_CACHE", str(tmp_path / "cache"))
    for k, v in writer(tmp_path / "a", 0).items():
        monkeypatch.setenv(k, v)
    records: list = []
    from groupbias.data.datasets import recording_inputs

    opened: set = set()
    _OPENED.append(opened)
    try:
        with recording_inputs(records.append):
            DatasetSpec(name=name).load(only=("train",))
    finally:
        _OPENED.append(None)
    read = {p for p in opened if p.startswith(str(tmp_path / "a"))}
    assert read and read <= set(records[0]["paths"].values())
