"""Config names -> loaders: every dataset config resolves, groupings apply to all splits."""

from __future__ import annotations

import numpy as np
import pytest

from groupbias.errors import GroupingError, MissingFilesError
from data_loaders.registry import LOADERS, load_grouped, load_splits
from experiments.common import dataset_config


def _write_lightgbm(path, rng, n_queries):
    sizes = rng.integers(2, 6, size=n_queries)
    lines = []
    for _ in range(int(sizes.sum())):
        feats = " ".join(f"{j}:{rng.random():.4f}" for j in range(3))
        lines.append(f"{rng.integers(0, 3)} {feats}")
    path.write_text("\n".join(lines) + "\n")
    path.with_name(path.name + ".query").write_text("\n".join(map(str, sizes)) + "\n")
    return sizes


def test_lightgbm_config_loads_both_splits_and_feature_grouping(tmp_path, monkeypatch, rng):
    tr = _write_lightgbm(tmp_path / "train.txt", rng, 30)
    te = _write_lightgbm(tmp_path / "test.txt", rng, 10)
    monkeypatch.setenv("GROUPBIAS_LIGHTGBM", str(tmp_path))
    cfg = dataset_config("lightgbm")
    splits = load_splits(cfg)
    assert splits["train"].list_sizes.tolist() == tr.tolist()
    assert splits["test"].list_sizes.tolist() == te.tolist()
    with pytest.raises(GroupingError, match="grouping=feature"):
        load_grouped(cfg, {"kind": "builtin"})
    fid = int(splits["train"].feature_ids[0])
    g = load_grouped(cfg, {"kind": "feature", "feature_id": fid, "threshold": "mean"})
    # one threshold, computed on train, applied to both splits
    thr = splits["train"].feature(fid).astype(np.float64).mean()
    for name in ("train", "test"):
        expect = (splits[name].feature(fid) < thr).astype(float)
        np.testing.assert_array_equal(g[name].groups, expect)


def test_missing_licensed_data_names_the_files(tmp_path):
    cfg = {**dataset_config("mslr"), "root": str(tmp_path)}
    with pytest.raises(MissingFilesError, match="Fold1/train.txt"):
        load_splits(cfg)


def test_unknown_loader_and_grouping_kind():
    with pytest.raises(GroupingError, match="unknown loader"):
        load_splits({"loader": "nope"})
    with pytest.raises(GroupingError, match="grouping.kind"):
        load_grouped(dataset_config("synthetic"), {"kind": "magic"})


def test_every_dataset_config_names_a_loader():
    from pathlib import Path

    from groupbias.cli import CONFIG_DIR

    for p in sorted((Path(CONFIG_DIR) / "dataset").glob("*.yaml")):
        assert dataset_config(p.stem)["loader"] in LOADERS, p.name
