"""Yahoo!, MSLR and LightGBM loaders on files written in the corpora's exact layouts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from data_loaders.lightgbm import load_lightgbm, read_query_file
from data_loaders.mslr import load_mslr
from data_loaders.yahoo import load_yahoo
from groupbias.core.errors import DataFormatError, MissingFilesError, ParameterError


# ---- Yahoo! -----------------------------------------------------------------------------------
def _yahoo_lines(rng, n_queries, first_qid):
    """Sparse lines as in set1.*.txt: '<grade> qid:<q> <fid>:<value> ...', ids in 1..700."""
    lines, dense = [], []
    for q in range(first_qid, first_qid + n_queries):
        for _ in range(rng.integers(2, 6)):
            ids = np.sort(rng.choice(np.arange(1, 701), size=rng.integers(5, 40), replace=False))
            vals = np.round(rng.random(ids.size), 5)
            grade = int(rng.integers(0, 5))
            lines.append(f"{grade} qid:{q} " + " ".join(f"{i}:{v:.5g}" for i, v in zip(ids, vals)))
            row = np.zeros(700, np.float32)
            row[ids - 1] = [float(f"{v:.5g}") for v in vals]
            dense.append((grade, q, row))
    return lines, dense


@pytest.fixture
def yahoo_dir(tmp_path, rng):
    d = tmp_path / "ltrc_yahoo"
    d.mkdir()
    truth = {}
    for k, split in enumerate(("train", "valid", "test")):
        lines, dense = _yahoo_lines(rng, 4, 1 + 100 * k)
        (d / f"set1.{split}.txt").write_text("\n".join(lines) + "\n")
        truth[split] = dense
    # a line in the paper's terms: feature 426 set on the first train item
    lines = (d / "set1.train.txt").read_text().split("\n")
    toks = lines[0].split()
    toks = [t for t in toks if not t.startswith("426:")]
    ids = [int(t.split(":")[0]) for t in toks[2:]]
    pos = 2 + int(np.searchsorted(ids, 426))
    toks.insert(pos, "426:0.21")
    lines[0] = " ".join(toks)
    (d / "set1.train.txt").write_text("\n".join(lines))
    truth["train"][0][2][425] = np.float32(0.21)
    return d, truth


def test_yahoo_splits_exact(yahoo_dir, tmp_path):
    d, truth = yahoo_dir
    for split in ("train", "valid", "test"):
        data = load_yahoo(d, split=split, cache_dir=tmp_path / "c")
        grades, qids, rows = zip(*truth[split])
        assert data.features.shape == (len(rows), 700)
        np.testing.assert_array_equal(data.feature_ids, np.arange(1, 701))
        np.testing.assert_array_equal(data.features, np.stack(rows))
        np.testing.assert_array_equal(data.labels, grades)
        _, first = np.unique(qids, return_index=True)
        np.testing.assert_array_equal(data.query_ids, np.asarray(qids)[np.sort(first)])
        assert data.qptr[-1] == len(rows) and data.label_max == 4
        assert data.name == f"yahoo/set1/{split}"
    train = load_yahoo(d, split="train", cache_dir=tmp_path / "c")
    assert train.feature(426)[0] == np.float32(0.21)
    assert train.meta["cache"] == "hit"


def test_yahoo_root_from_environment(yahoo_dir, tmp_path, monkeypatch):
    d, truth = yahoo_dir
    monkeypatch.setenv("GROUPBIAS_YAHOO", str(d))
    data = load_yahoo(split="valid", cache=False)
    assert data.n_items == len(truth["valid"])
    monkeypatch.delenv("GROUPBIAS_YAHOO")
    with pytest.raises(MissingFilesError, match="GROUPBIAS_YAHOO"):
        load_yahoo(split="valid", cache=False)


def test_yahoo_missing_file_and_bad_split(tmp_path):
    with pytest.raises(MissingFilesError) as ei:
        load_yahoo(tmp_path, split="test", cache=False)
    assert ei.value.expected == ["set1.test.txt"] and ei.value.directory == str(tmp_path)
    with pytest.raises(ParameterError, match="split"):
        load_yahoo(tmp_path, split="dev", cache=False)


@pytest.mark.parametrize("grade", ["5", "-1", "2.5"])
def test_yahoo_grade_outside_scale(tmp_path, grade):
    (tmp_path / "set1.train.txt").write_text(f"0 qid:1 4:0.5\n{grade} qid:1 10:0.21\n")
    with pytest.raises(DataFormatError) as ei:
        load_yahoo(tmp_path, split="train", cache=False)
    assert ei.value.line == 2 and ei.value.field == "label"


# ---- MSLR -------------------------------------------------------------------------------------
def _mslr_file(path: Path, rng, n_queries, first_qid):
    """Dense lines as in FoldK/*.txt: '<grade> qid:<q> 1:<v> 2:<v> ... 136:<v>'."""
    rows, grades, qids, lines = [], [], [], []
    for q in range(first_qid, first_qid + n_queries):
        for _ in range(rng.integers(1, 6)):
            v = np.where(
                rng.random(136) < 0.5,
                rng.integers(0, 200, 136),
                np.round(rng.normal(0, 20, 136), 6),
            )
            g = int(rng.integers(0, 5))
            lines.append(
                f"{g} qid:{q} "
                + " ".join(
                    f"{j + 1}:{x:.6f}".rstrip("0").rstrip(".")
                    if x != int(x)
                    else f"{j + 1}:{int(x)}"
                    for j, x in enumerate(v)
                )
            )
            rows.append(v.astype(np.float32))
            grades.append(g)
            qids.append(q)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return np.stack(rows), np.array(grades), np.array(qids)


def test_mslr_folds_and_splits(tmp_path, rng):
    root = tmp_path / "MSLR-WEB10K"
    truth = {}
    for fold in (1, 2):
        for k, split in enumerate(("train", "vali", "test")):
            truth[fold, split] = _mslr_file(
                root / f"Fold{fold}" / f"{split}.txt", rng, 3, 1 + 10 * k
            )
    for (fold, split), (X, y, q) in truth.items():
        data = load_mslr(root, fold=fold, split=split, cache_dir=tmp_path / "c")
        np.testing.assert_array_equal(data.features, X)
        np.testing.assert_array_equal(data.labels, y)
        np.testing.assert_array_equal(data.query_ids, np.unique(q))
        np.testing.assert_array_equal(np.diff(data.qptr), np.bincount(q)[np.unique(q)])
        np.testing.assert_array_equal(data.feature_ids, np.arange(1, 137))
        assert data.name == f"mslr/Fold{fold}/{split}" and data.label_max == 4
    d = load_mslr(root, fold=1, split="train", cache_dir=tmp_path / "c")
    np.testing.assert_array_equal(d.feature(127), truth[1, "train"][0][:, 126])


def test_mslr_exact_line(tmp_path):
    line = "2 qid:1 " + " ".join(f"{j}:{j % 7}" for j in range(1, 136)) + " 136:0.5"
    (tmp_path / "Fold1").mkdir()
    (tmp_path / "Fold1" / "train.txt").write_text(line + "\n")
    d = load_mslr(tmp_path, cache=False)
    assert d.labels.tolist() == [2.0] and d.query_ids.tolist() == [1]
    assert d.features[0, 134] == 135 % 7 and d.features[0, 135] == 0.5


def test_mslr_errors(tmp_path, monkeypatch):
    with pytest.raises(MissingFilesError) as ei:
        load_mslr(tmp_path, fold=3, split="vali", cache=False)
    assert ei.value.expected == ["Fold3/vali.txt"]
    with pytest.raises(ParameterError, match="vali"):
        load_mslr(tmp_path, split="valid", cache=False)
    with pytest.raises(ParameterError, match="fold"):
        load_mslr(tmp_path, fold=6, cache=False)
    monkeypatch.delenv("GROUPBIAS_MSLR", raising=False)
    with pytest.raises(MissingFilesError, match="GROUPBIAS_MSLR"):
        load_mslr(cache=False)
    monkeypatch.setenv("GROUPBIAS_MSLR", str(tmp_path))
    (tmp_path / "Fold1").mkdir()
    (tmp_path / "Fold1" / "train.txt").write_text("1 qid:1 1:2\n3 qid:1 137:1\n")
    with pytest.raises(DataFormatError) as ei:
        load_mslr(cache=False)
    assert ei.value.line == 2 and "out of range 1..136" in str(ei.value)


# ---- LightGBM ---------------------------------------------------------------------------------
def test_lightgbm_data_and_query_file(tmp_path):
    data = tmp_path / "rank.train"
    data.write_text("0 0:1.5 2:3\n1 1:2\n2 0:4\n0 2:1\n1 1:1 2:2\n")
    (tmp_path / "rank.train.query").write_text("2\n3\n")
    d = load_lightgbm(data, cache_dir=tmp_path / "c")
    np.testing.assert_array_equal(d.qptr, [0, 2, 5])
    np.testing.assert_array_equal(d.query_ids, [0, 1])
    np.testing.assert_array_equal(d.feature_ids, [0, 1, 2])  # zero-based ids
    np.testing.assert_array_equal(
        d.features, [[1.5, 0, 3], [0, 2, 0], [4, 0, 0], [0, 0, 1], [0, 1, 2]]
    )
    np.testing.assert_array_equal(d.labels, [0, 1, 2, 0, 1])
    assert load_lightgbm(data, cache_dir=tmp_path / "c").meta["cache"] == "hit"
    # the query file is part of the cache key
    (tmp_path / "rank.train.query").write_text("1\n4\n")
    np.testing.assert_array_equal(load_lightgbm(data, cache_dir=tmp_path / "c").qptr, [0, 1, 5])


def test_lightgbm_qid_ignored_base_one_and_query_path(tmp_path):
    data = tmp_path / "d.txt"
    data.write_text("1 qid:7 1:2 3:1\n0 qid:7 2:5\n2 qid:9 3:3\n")
    q = tmp_path / "groups.txt"
    q.write_text("2\n1\n\n")
    d = load_lightgbm(data, q, feature_id_base=1, n_features=3, cache=False)
    np.testing.assert_array_equal(d.features, [[2, 0, 1], [0, 5, 0], [0, 0, 3]])
    np.testing.assert_array_equal(d.qptr, [0, 2, 3])


def test_lightgbm_errors(tmp_path):
    data = tmp_path / "t.txt"
    data.write_text("0 1:1\n1 1:2\n1 2:2\n")
    with pytest.raises(MissingFilesError) as ei:
        load_lightgbm(data, cache=False)
    assert ei.value.expected == ["t.txt.query"]
    (tmp_path / "t.txt.query").write_text("2\n2\n")
    with pytest.raises(DataFormatError) as ei:
        load_lightgbm(data, cache=False)
    msg = str(ei.value)
    assert "t.txt.query" in msg and str(data) in msg and "4" in msg and "3 data lines" in msg
    (tmp_path / "t.txt.query").write_text("2\nx\n")
    with pytest.raises(DataFormatError) as ei:
        load_lightgbm(data, cache=False)
    assert ei.value.line == 2 and ei.value.field == "group size"
    (tmp_path / "t.txt.query").write_text("3\n0\n")
    with pytest.raises(DataFormatError, match="positive"):
        read_query_file(tmp_path / "t.txt.query")
    (tmp_path / "t.txt.query").write_text("1\n12345678901234567890\n")  # beyond int64
    with pytest.raises(DataFormatError) as ei:
        read_query_file(tmp_path / "t.txt.query")
    assert ei.value.line == 2 and ei.value.field == "group size"
    (tmp_path / "t.txt.query").write_text("")
    with pytest.raises(DataFormatError, match="no group sizes"):
        read_query_file(tmp_path / "t.txt.query")
    data.write_text("0 1:1\n1 1:x\n")
    (tmp_path / "t.txt.query").write_text("2\n")
    with pytest.raises(DataFormatError) as ei:
        load_lightgbm(data, cache=False)
    assert ei.value.line == 2 and ei.value.path == str(data)


def test_registry_uses_these_loaders(yahoo_dir, tmp_path, rng):
    from groupbias.data.datasets import DatasetSpec

    d, truth = yahoo_dir
    out = DatasetSpec(
        name="yahoo",
        root=str(d),
        params={"cache": False},
        splits={"train": "train", "test": "test"},
    ).load()
    assert out["test"].n_items == len(truth["test"])
    root = tmp_path / "mslr"
    _mslr_file(root / "Fold2" / "vali.txt", rng, 2, 1)
    out = DatasetSpec(name="mslr", root=str(root), params={"fold": 2, "cache": False}).load(
        only=("valid",)
    )
    assert out["valid"].n_features == 136


def test_cache_false_bypasses_the_cache_in_every_cached_loader(
    yahoo_dir, tmp_path, rng, monkeypatch
):
    from groupbias.data.datasets import DatasetSpec

    cdir = tmp_path / "cache"
    monkeypatch.setenv("GROUPBIAS_CACHE", str(cdir))
    d, _ = yahoo_dir
    mslr_root = tmp_path / "mslr"
    _mslr_file(mslr_root / "Fold1" / "train.txt", rng, 2, 1)
    lgb = tmp_path / "lgb"
    lgb.mkdir()
    (lgb / "train.txt").write_text("0 1:1\n1 2:2\n1 1:3\n")
    (lgb / "train.txt.query").write_text("2\n1\n")
    specs = [
        ("yahoo", d, {}),
        ("mslr", mslr_root, {}),
        ("lightgbm", lgb, {}),
    ]
    for name, root, params in specs:
        spec = DatasetSpec(name=name, root=str(root), params={**params, "cache": False})
        out = spec.load(only=("train",))
        assert "cache" not in out["train"].meta
    assert not cdir.exists() or not any(cdir.rglob("*.npy"))
    # and with the default the same loads do go through the cache
    for name, root, params in specs:
        out = DatasetSpec(name=name, root=str(root), params=params).load(only=("train",))
        assert out["train"].meta["cache"] == "stored"
    assert len(list((cdir / "ranking").iterdir())) == 3
