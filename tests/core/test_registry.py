"""Datasets by name: every dataset config names a registered dataset, loaders are reached
through the registry, groupings apply to all splits, and missing data names what to set."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import groupbias as gb
from data_loaders.grouping import FeatureGrouping
from groupbias.app.cli import CONFIG_DIR
from groupbias.core.errors import GroupingError, MissingFilesError, ParameterError
from groupbias.core.registry import DATASETS, ESTIMATORS, Registry
from groupbias.data.datasets import (
    BuiltinGrouping,
    DatasetInfo,
    DatasetSpec,
    register_dataset,
)


def _write_lightgbm(path, rng, n_queries):
    sizes = rng.integers(2, 6, size=n_queries)
    lines = []
    for _ in range(int(sizes.sum())):
        feats = " ".join(f"{j}:{rng.random():.4f}" for j in range(3))
        lines.append(f"{rng.integers(0, 3)} {feats}")
    path.write_text("\n".join(lines) + "\n")
    path.with_name(path.name + ".query").write_text("\n".join(map(str, sizes)) + "\n")
    return sizes


def test_lightgbm_loads_both_splits_and_feature_grouping(tmp_path, monkeypatch, rng):
    tr = _write_lightgbm(tmp_path / "train.txt", rng, 30)
    te = _write_lightgbm(tmp_path / "test.txt", rng, 10)
    monkeypatch.setenv("GROUPBIAS_LIGHTGBM", str(tmp_path))
    spec = DatasetSpec(name="lightgbm", params={"cache": False})
    splits = spec.load()
    assert splits["train"].list_sizes.tolist() == tr.tolist()
    assert splits["test"].list_sizes.tolist() == te.tolist()
    with pytest.raises(GroupingError, match="grouping=feature"):
        BuiltinGrouping().apply(splits, spec.info)
    fid = int(splits["train"].feature_ids[0])
    g = FeatureGrouping(feature_id=fid).apply(splits, spec.info)
    # one threshold, computed on train, applied to both splits
    thr = splits["train"].feature(fid).astype(np.float64).mean()
    for name in ("train", "test"):
        expect = (splits[name].feature(fid) < thr).astype(float)
        np.testing.assert_array_equal(g[name].groups, expect)


def test_missing_licensed_data_names_the_files_and_the_variable(tmp_path):
    with pytest.raises(MissingFilesError, match="Fold1/train.txt") as info:
        DatasetSpec(name="mslr", root=str(tmp_path)).load()
    assert "GROUPBIAS_MSLR" in str(info.value)


def test_unknown_names_and_options_are_rejected():
    with pytest.raises(ParameterError, match="registered dataset"):
        DatasetSpec(name="nope")
    with pytest.raises(ParameterError, match="params.folds"):
        DatasetSpec(name="mslr", params={"folds": 2})
    with pytest.raises(ParameterError, match="params.fold"):
        DatasetSpec(name="mslr", params={"fold": 9})
    with pytest.raises(ParameterError, match="threshold"):
        FeatureGrouping(feature_id=1, threshold="median")


def test_every_dataset_config_names_a_registered_dataset():
    import yaml

    for p in sorted((Path(CONFIG_DIR) / "dataset").glob("*.yaml")):
        cfg = yaml.safe_load(p.read_text())
        assert cfg["name"] == p.stem and cfg["name"] in DATASETS, p.name


def test_load_dataset_by_name_and_a_user_dataset(rng):
    splits = gb.load_dataset("synthetic", n_queries=30, list_size=[3, 6])
    assert set(splits) == {"train", "valid", "test"}
    assert all(d.groups is not None for d in splits.values())

    class Options:
        def __init__(self, *, n: int = 3):
            self.n = n

        def load(self, root, split):
            qptr = np.array([0, 2, self.n + 2])
            return gb.RankingData(
                np.zeros((self.n + 2, 1)),
                np.arange(self.n + 2) % 2,
                qptr,
                np.array([0, 1]),
                groups=np.array([0, 1] * 2 + [1] * (self.n - 2), float),
            )

    register_dataset(DatasetInfo("tiny_user_data", "tiny", Options), replace=True)
    d = gb.load_dataset("tiny_user_data", split="train", n=4)
    assert d.n_items == 6 and d.n_queries == 2


def test_registry_basics():
    r = Registry("thing")
    r.register("a", 1)
    assert r.get("a") == 1 and "a" in r and r.names() == ["a"]
    with pytest.raises(ParameterError, match="one of a"):
        r.get("b")
    with pytest.raises(ParameterError, match="not registered yet"):
        r.register("a", 2)
    assert "ks" in ESTIMATORS
