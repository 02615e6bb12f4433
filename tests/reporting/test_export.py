"""`groupbias-report export` on every dataset config whose data is present: ranking data
and text collections (documents with labels, no per-item ``labels``) alike; the files it
writes read back and count what the dataset holds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from groupbias.core.registry import DATASETS
from groupbias.data.datasets import load_dataset
from groupbias.data.text import TextCollection
from groupbias.data.trec import read_groups, read_qrels
from groupbias.reporting.aggregate import main as report_main
from groupbias.reporting.subcommands import config_params

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data"
#: the shared copies of the datasets that are not licensed, by the variable naming them
SHARED_COPIES = {"GROUPBIAS_TREC_FAIR": "trec-fair", "GROUPBIAS_GREP_BIASIR": "grep-biasir"}
CONFIGS = sorted(p.stem for p in (REPO / "configs" / "dataset").glob("*.yaml"))


def _own_text_files(folder: Path) -> list[str]:
    """A user's collection (``text_files``): 4 documents, 2 queries, qrels, groups; the
    options the export needs beside the config's."""
    folder.mkdir()
    docs = ["d1\tshe wrote", "d2\the wrote", "d3\tthey wrote", "d4\tit rained"]
    (folder / "collection.tsv").write_text("\n".join(docs) + "\n")
    (folder / "queries.tsv").write_text("q1\twho wrote\nq2\train\n")
    (folder / "qrels.txt").write_text("q1 0 d1 1\nq1 0 d2 2\nq2 0 d4 1\n")
    (folder / "groups.tsv").write_text("d1\tF\nd2\tM\nd3\tN\n")
    return ["--root", str(folder), "--param", "groups=groups.tsv"]


def _point_at_data(monkeypatch, name: str) -> None:
    """Point the dataset's variable at the shared copy, or skip naming the absent data."""
    info = DATASETS.get(name)
    if info.env_var is None:  # built in, or the user's files (made by the test)
        return
    if os.environ.get(info.env_var):
        return
    shared = SHARED / SHARED_COPIES.get(info.env_var, "-")
    if not shared.exists():
        pytest.skip(f"{name}: data absent (licensed or your own; set {info.env_var})")
    monkeypatch.setenv(info.env_var, str(shared))


@pytest.mark.slow
@pytest.mark.parametrize("name", CONFIGS)
def test_export_writes_qrels_and_groups_of_every_present_dataset(
    name, monkeypatch, tmp_path, capsys
):
    _point_at_data(monkeypatch, name)
    info = DATASETS.get(name)
    own = _own_text_files(tmp_path / "own") if name == "text_files" else []
    split, out = "test", ["--out", str(tmp_path)]
    if split not in info.splits:  # the track's JSON has one sample: a one-line error, exit 2
        assert report_main(["export", name, "--split", "test", *out]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 2 and "split" in err[0] and "hint:" in err[1]
        split = next(iter(info.splits))
    assert report_main(["export", name, "--split", split, *out, *own]) == 0
    params = {**config_params(name), **({"groups": "groups.tsv"} if own else {})}
    root = own[1] if own else None
    data = load_dataset(name, split=split, root=root, **params)
    qrels = read_qrels(tmp_path / f"{name}_{split}.qrels")
    groups_path = tmp_path / f"{name}_{split}.groups"
    if isinstance(data, TextCollection):
        # every judged pair once; every document with its first label's value
        assert qrels.labels.size == data.qrels.nnz
        label = next(iter(data.doc_labels))
        values = data.label(label)
        first = next(v for v in values.tolist() if v)
        groups = read_groups(groups_path, affected=first)
        assert groups.item_ids.size == data.n_docs
        assert int(groups.groups.sum()) == sum(v == first for v in values.tolist())
        lines = groups_path.read_text().splitlines()
        assert sum(line.endswith(" unknown") for line in lines) == sum(not v for v in values)
    else:
        assert qrels.labels.size == data.n_items  # every item, zeros included
        assert qrels.labels.sum() == pytest.approx(float(data.labels.sum()))
        groups = read_groups(groups_path)
        assert set(groups.groups.tolist()) <= {0.0, 1.0} or groups.groups.max() <= 1.0
