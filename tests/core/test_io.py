import json
import os

import numpy as np
import pytest

from groupbias.core import io


def test_json_roundtrip_and_nonfinite(tmp_path):
    p = io.write_json_atomic(
        tmp_path / "a" / "m.json",
        {"x": np.float32(0.5), "n": np.int64(3), "bad": float("nan"), "arr": np.arange(3)},
    )
    assert io.read_json(p) == {"x": 0.5, "n": 3, "bad": None, "arr": [0, 1, 2]}
    assert [f for f in os.listdir(tmp_path / "a")] == ["m.json"]  # no temp file left


def test_jsonable_reads_config_nodes_and_numpy_values():
    from omegaconf import OmegaConf

    node = OmegaConf.create({"model": {"sizes": [16, 8], "rate": 0.5}, "n": 3})
    got = io.jsonable({"cfg": node, "t": (np.int64(2), np.float32(0.25)), "a": np.arange(2)})
    assert got == {
        "cfg": {"model": {"sizes": [16, 8], "rate": 0.5}, "n": 3},
        "t": [2, 0.25],
        "a": [0, 1],
    }
    assert type(got["t"][0]) is int and type(got["t"][1]) is float
    assert io.jsonable({1: np.nan, "b": np.bool_(True)}) == {"1": None, "b": True}
    json.dumps(got, allow_nan=False)  # strict JSON


def test_failed_write_keeps_old_file(tmp_path, monkeypatch):
    p = tmp_path / "m.json"
    io.write_json_atomic(p, {"v": 1})

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        io.write_json_atomic(p, {"v": 2})
    assert json.loads(p.read_text()) == {"v": 1}
    assert sorted(os.listdir(tmp_path)) == ["m.json"]


def test_npz_refuses_object_arrays(tmp_path):
    io.write_npz_atomic(tmp_path / "ok.npz", a=np.arange(4))
    assert np.load(tmp_path / "ok.npz", allow_pickle=False)["a"].tolist() == [0, 1, 2, 3]
    with pytest.raises(TypeError):
        io.write_npz_atomic(tmp_path / "bad.npz", a=np.array([{"x": 1}], dtype=object))


def test_written_files_get_ordinary_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        p = io.write_text_atomic(tmp_path / "t.txt", "x")
    finally:
        os.umask(old)
    assert (p.stat().st_mode & 0o777) == 0o644
