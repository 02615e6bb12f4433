"""Hostile inputs, one class per test group (the classes of docs/reliability.md, numbered as
there): each gets a typed error naming the file, line, field or key, a result marked as
undefined, or a bounded cost; never a traceback, a crash, a silent merge or a "perfect"
number that means nothing."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import groupbias as gb
from data_loaders.lightgbm import load_lightgbm
from data_loaders.movielens import load_movielens
from data_loaders.svmlight import load_svmlight
from data_loaders.trec_fair import load_trec_fair_ppg
from groupbias.core.errors import DataError, DataFormatError, ParameterError
from groupbias.core.validation import check_qptr, identifiers, offsets_from_sizes

WRAP = 4611686018427387904  # 2**62: four of them wrap int64 around to exactly 0


def _lightgbm(tmp_path, sizes, lines=None, name="train.txt"):
    n = sum(sizes) if lines is None else len(lines)
    lines = lines or [f"{i % 2} 0:{i / 10:.1f} 1:{(i * 7) % 5}" for i in range(n)]
    (tmp_path / name).write_text("\n".join(lines) + "\n")
    (tmp_path / f"{name}.query").write_text("\n".join(map(str, sizes)) + "\n")
    return tmp_path / name


# ---- 2: offsets that wrap around int64 ------------------------------------------------------


def test_2_group_sizes_that_wrap_int64_are_a_format_error_of_the_query_file(tmp_path):
    path = _lightgbm(tmp_path, [WRAP] * 4, lines=["1 0:1", "0 0:2"])
    for cache in (False, True):
        with pytest.raises(DataFormatError) as info:
            load_lightgbm(path, cache=cache, cache_dir=tmp_path / "cache")
        assert info.value.path == str(tmp_path / "train.txt.query")
        assert "add up to 18446744073709551616 items" in str(info.value)


def test_2_wrapped_offsets_are_refused_by_every_check():
    wrapped = np.cumsum([0, WRAP, WRAP, WRAP, WRAP])  # [0, 2**62, -2**63, -2**62, 0]
    assert wrapped[-1] == 0 and np.all(np.diff(wrapped) >= 0)  # np.diff wraps back
    with pytest.raises(ParameterError, match="qptr"):
        check_qptr(wrapped, 0)
    with pytest.raises(DataError, match="qptr"):
        gb.RankingData(np.zeros((0, 1)), np.zeros(0), wrapped, np.arange(4))
    with pytest.raises(ParameterError, match="sum fits in int64"):
        offsets_from_sizes([WRAP] * 4)
    np.testing.assert_array_equal(offsets_from_sizes([2, 0, 3]), [0, 2, 2, 5])


# ---- 6: ids are integers or strings, never floats ------------------------------------------


def test_6_ids_never_pass_through_floats():
    big = np.array([2**53, 2**53 + 1])
    assert identifiers("id", big).tolist() == [2**53, 2**53 + 1]
    assert identifiers("id", ["7", " 8 ", "+9"]).tolist() == [7, 8, 9]
    huge = identifiers("id", [str(10**30 + 1), str(10**30 + 2)])
    assert huge.dtype.kind == "U" and len(set(huge)) == 2
    with pytest.raises(ParameterError, match="floats merge"):
        identifiers("id", big.astype(float))
    with pytest.raises(DataError, match="query_ids.*floats merge"):
        gb.RankingData(np.zeros((2, 1)), np.zeros(2), [0, 1, 2], np.array([1.0, 2.0]))


def test_6_trec_sessions_beyond_int64_stay_distinct(tmp_path):
    d = tmp_path / "ppg" / "2019"
    d.mkdir(parents=True)
    rows = [(f"{10**30 + s}", a, r) for s in (1, 2, 3) for a, r in (("H", 1), ("L", 0))]
    text = "sensitive_attribute,session,score,feature_1\n" + "".join(
        f"{a},{s},{r},0.{i}\n" for i, (s, a, r) in enumerate(rows)
    )
    (d / "train.csv").write_text(text)
    data = load_trec_fair_ppg(tmp_path, year=2019)
    assert data.n_queries == 3 and list(data.query_ids) == [str(10**30 + s) for s in (1, 2, 3)]


def test_6_movielens_users_beyond_2_53_stay_distinct(tmp_path):
    rows = [(2**53, 10, 4), (2**53 + 1, 10, 3), (2**53, 20, 5), (2**53 + 1, 20, 1)]
    (tmp_path / "ratings.dat").write_text(
        "".join(f"{u}::{m}::{r}::97830{i}\n" for i, (u, m, r) in enumerate(rows))
    )
    meta = tmp_path / "meta.csv"
    meta.write_text("movie_id,country,gross\n10,USA,1\n20,France,2\n")
    data = load_movielens(tmp_path, metadata=meta, grouping="country")
    assert sorted(data.query_ids.tolist()) == [2**53, 2**53 + 1]
    assert data.n_items == 4


def test_6_a_float_id_names_its_line(tmp_path):
    (tmp_path / "ratings.dat").write_text("1::10::4::1\n1.5::20::3::2\n")
    with pytest.raises(DataFormatError) as info:
        load_movielens(tmp_path, grouping=None)
    assert (info.value.line, info.value.field) == (2, "UserID")


# ---- 10: tiny hostile files that would ask for unbounded memory ----------------------------


def test_10_one_large_feature_id_in_a_small_file_is_refused_before_allocating(tmp_path):
    lines = [f"{i % 2} 0:0.5 {'100000' if i == 0 else '2'}:1" for i in range(5000)]
    path = _lightgbm(tmp_path, [10] * 500, lines=lines)
    assert path.stat().st_size < 70_000
    with pytest.raises(DataFormatError, match=r"1\.9 GiB dense matrix .* \(0\.002 %") as info:
        load_lightgbm(path, cache=False)
    assert info.value.field == "feature id"


def test_10_a_fifo_is_refused_instead_of_blocking(tmp_path):
    fifo = tmp_path / "train.txt"
    os.mkfifo(fifo)
    result: list = []

    def load():
        try:
            load_svmlight(fifo, cache_dir=tmp_path / "cache")
        except Exception as exc:  # noqa: BLE001 - the outcome is what the test judges
            result.append(exc)

    t = threading.Thread(target=load, daemon=True)
    t.start()
    t.join(10)
    if t.is_alive():  # unblock the reader so the test process can end
        with open(fifo, "w"):
            pass
        pytest.fail("load_svmlight blocked on a FIFO")
    assert isinstance(result[0], DataFormatError) and "not a regular file" in str(result[0])


# ---- 15: loader inputs -------------------------------------------------------------------


@pytest.mark.parametrize(
    "line, field",
    [
        ("1 qid:1 " + "9" * 5000 + ":1", "token 3"),
        ("1 qid:" + "9" * 5000 + " 1:1", "qid"),
        (f"1 qid:{2**70} 1:1", "qid"),
    ],
)
def test_15_huge_ids_are_format_errors(tmp_path, line, field):
    (tmp_path / "f.txt").write_text(f"0 qid:1 1:1\n{line}\n")
    with pytest.raises(DataFormatError) as info:
        load_svmlight(tmp_path / "f.txt", cache=False)
    assert (info.value.line, info.value.field) == (2, field)


def test_15_a_5000_digit_group_size_is_a_format_error(tmp_path):
    path = _lightgbm(tmp_path, ["9" * 5000], lines=["1 0:1"])
    with pytest.raises(DataFormatError) as info:
        load_lightgbm(path, cache=False)
    assert info.value.line == 1 and info.value.field == "group size"


def _cached_entry(tmp_path):
    path = _lightgbm(tmp_path, [3, 3])
    first = load_lightgbm(path, cache_dir=tmp_path / "cache")
    entry = tmp_path / "cache" / "ranking"
    (d,) = [p for p in entry.iterdir() if not p.name.startswith(".")]
    return path, first, d


def test_15_a_cache_manifest_that_is_not_an_object_is_rebuilt(tmp_path):
    path, first, d = _cached_entry(tmp_path)
    (d / "manifest.json").write_text("[1, 2]")
    with pytest.warns(UserWarning, match="ignoring unreadable cache entry"):
        again = load_lightgbm(path, cache_dir=tmp_path / "cache")
    assert again.meta["cache"] == "stored"
    np.testing.assert_array_equal(again.labels, first.labels)


def test_15_a_tampered_cache_entry_of_the_right_shape_is_not_served(tmp_path):
    path, first, d = _cached_entry(tmp_path)
    labels = np.load(d / "labels.npy")
    with open(d / "labels.npy", "wb") as fh:  # same dtype and shape, other values
        np.save(fh, 1.0 - labels, allow_pickle=False)
    with pytest.warns(UserWarning, match="differs from the digest"):
        again = load_lightgbm(path, cache_dir=tmp_path / "cache")
    assert again.meta["cache"] == "stored"
    np.testing.assert_array_equal(again.labels, first.labels)


def test_15_temporary_folders_of_killed_cache_writes_are_removed(tmp_path):
    path, _, d = _cached_entry(tmp_path)
    dead = d.parent / f".tmp-{d.name[:16]}-{2**22 + 12345}-abc"  # no such process
    live = d.parent / f".tmp-{d.name[:16]}-{os.getppid()}-abc"  # a running writer
    for t in (dead, live):
        t.mkdir()
        (t / "features.npy").write_bytes(b"x" * 100)
    load_lightgbm(path, cache_dir=tmp_path / "cache")
    assert not dead.exists() and live.exists()


# ---- 16: library calls -------------------------------------------------------------------


@pytest.mark.parametrize("what", ["labels", "features"])
def test_16_ranking_data_refuses_nan(what):
    feats, labels = np.zeros((4, 2)), np.array([0.0, 1.0, 2.0, 0.0])
    (feats if what == "features" else labels)[1] = np.nan
    with pytest.raises(DataError, match="NaN|finite"):
        gb.RankingData(feats, labels, [0, 2, 4], np.arange(2))


def test_16_a_tensor_that_requires_grad_is_a_parameter_error():
    torch = pytest.importorskip("torch")
    scores = torch.tensor([0.3, 0.2, 0.9, 0.1], requires_grad=True)
    with pytest.raises(ParameterError, match="detach"):
        gb.metrics.ndcg(scores, [1, 0, 1, 0], qptr=[0, 2, 4])
    with pytest.raises(ParameterError, match="detach"):
        gb.metrics.rho_dtr_tabular(scores, [1, 0, 1, 0], qptr=[0, 2, 4], groups=[1, 0, 1, 0])
