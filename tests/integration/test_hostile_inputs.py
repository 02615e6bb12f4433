"""Hostile inputs, one class per test group (the classes of docs/reliability.md, numbered as
there): each gets a typed error naming the file, line, field or key, a result marked as
undefined, or a bounded cost; never a traceback, a crash, a silent merge or a "perfect"
number that means nothing."""

from __future__ import annotations

import json
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
from groupbias.core.validation import check_qptr

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
    from groupbias.core.validation import offsets_from_sizes

    wrapped = np.cumsum([0, WRAP, WRAP, WRAP, WRAP])  # [0, 2**62, -2**63, -2**62, 0]
    assert wrapped[-1] == 0 and np.all(np.diff(wrapped) >= 0)  # np.diff wraps back
    with pytest.raises(ParameterError, match="qptr"):
        check_qptr(wrapped, 0)
    with pytest.raises(DataError, match="qptr"):
        gb.RankingData(np.zeros((0, 1)), np.zeros(0), wrapped, np.arange(4))
    with pytest.raises(ParameterError, match="sum fits in int64"):
        offsets_from_sizes([WRAP] * 4)
    np.testing.assert_array_equal(offsets_from_sizes([2, 0, 3]), [0, 2, 2, 5])


# ---- 3: labels that make every ranking equal ---------------------------------------------


def _compose(overrides):
    from hydra import compose, initialize_config_dir

    from groupbias.app.cli import CONFIG_DIR

    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        return compose(config_name="config", overrides=overrides)


def test_3_all_zero_lightgbm_labels_are_refused_when_grouped(tmp_path):
    from data_loaders.grouping import FeatureGrouping

    lines = [f"0 0:{i / 10:.1f} 1:{i % 2}" for i in range(60)]
    _lightgbm(tmp_path, [5] * 12, lines=lines)
    grouping = FeatureGrouping(feature_id=1, min_two_group_queries=3)
    with pytest.raises(DataError, match="no query has two different labels .*labels: 0\\)"):
        gb.load_dataset(
            "lightgbm", root=str(tmp_path), split="train", grouping=grouping, cache=False
        )


def test_3_all_zero_trec_labels_are_refused(tmp_path):
    d = tmp_path / "ppg" / "2019"
    d.mkdir(parents=True)
    rows = "".join(f"{'HL'[i % 2]},{i // 4},0,0.{i}\n" for i in range(48))
    (d / "train.csv").write_text("sensitive_attribute,session,score,feature_1\n" + rows)
    with pytest.raises(DataError, match="no query has two different labels"):
        gb.load_dataset("trec2019", root=str(tmp_path), split="train")


def test_3_a_run_whose_every_result_is_undefined_is_not_stored(tmp_path):
    from groupbias.app import runs
    from groupbias.core.errors import NothingComputedError

    def nan_run(run_dir):
        return {
            "records": [
                {"metric": "ndcg@10", "value": float("nan")},
                {"metric": "x", "value": None},
            ]
        }

    with pytest.raises(NothingComputedError, match="undefined"):
        runs.run_once(tmp_path / "r", {"a": 1}, nan_run)
    assert not (tmp_path / "r" / "metrics.json").exists()


# ---- 4: silent overflow -------------------------------------------------------------------


def test_4_exp2_gain_beyond_float64_is_refused_not_dropped_from_the_mean():
    labels = np.array([1000.0, 0.0, 2000.0, 1.0])
    with pytest.raises(ParameterError, match="labels below 1024 with gain='exp2'"):
        gb.metrics.ndcg([0.9, 0.1, 0.5, 0.4], labels, qptr=[0, 2, 4])
    assert gb.metrics.ndcg([0.9, 0.1, 0.5, 0.4], labels, qptr=[0, 2, 4], gain="linear") == 1.0
    # labels x 1000 through the one-call API: refused, not NDCG over 5 of 36 queries
    data = _grouped(36, labels_scale=1000.5)
    with pytest.raises(ParameterError, match="exp2"):
        gb.evaluate(np.arange(data.n_items, dtype=float), data, regime="ltr", metrics=["ndcg@10"])


def _grouped(n_queries, size=6, labels_scale=1.0, seed=0):
    rng = np.random.default_rng(seed)
    n = n_queries * size
    return gb.RankingData(
        rng.random((n, 2)),
        rng.integers(0, 5, n) * labels_scale,
        np.arange(0, n + 1, size),
        np.arange(n_queries),
        groups=np.tile([1.0, 0.0], n // 2),
        label_max=4.0 * labels_scale,
    )


@pytest.mark.parametrize("n", [4, 6, 12])
def test_4_plackett_luce_logits_beyond_float64_precision_are_refused(n):
    from groupbias.rank.plackett_luce import PlackettLuce

    tied = np.r_[np.full(n // 2, 1.0), np.zeros(n - n // 2)]
    table = 1 / np.log2(np.arange(2, n + 2))
    fine = PlackettLuce(tied * 1e8, [0, n], samples=200).weights(None, "average").dense()
    assert fine.sum() == pytest.approx(table.sum(), rel=1e-6)  # exposures still add up
    assert fine.max() <= 1.0
    with pytest.raises(ParameterError, match="span at most 1e\\+09"):
        PlackettLuce(tied * 1e300, [0, n])


def test_4_a_tiny_temperature_names_the_key():
    from groupbias.evaluation.catalog import EvalSpec, eel_thresholds
    from groupbias.evaluation.protocol import EvaluationProtocol

    data = _grouped(10)
    spec = EvalSpec(
        labels=data.labels,
        relevance=data.labels / 4,
        groups=data.groups,
        qptr=data.qptr,
        thresholds=eel_thresholds(data.labels, 4.0),
        metrics=("ndcg@10",),
    )
    proto = EvaluationProtocol(mode="policy", learn=False, temperature=1e-300)
    with pytest.raises(ParameterError) as info:
        proto.evaluate(data.labels / 4, spec, regime="ltr")
    assert info.value.name == "evaluation.temperature"
    ok = EvaluationProtocol(mode="policy", learn=False, temperature=0.1)
    assert np.nanmax(ok.evaluate(data.labels / 4, spec, regime="ltr")["ndcg@10"]) <= 1.0


# ---- 5: lists where a metric means nothing ------------------------------------------------


@pytest.mark.parametrize(
    "override, key",
    [
        ("evaluation.top_n=1", "evaluation.top_n"),
        ("evaluation.eel_levels=1", "evaluation.eel_levels"),
    ],
)
def test_5_settings_that_make_every_list_perfect_are_refused(override, key, tmp_path):
    from groupbias.app.cli import run
    from groupbias.core.errors import ConfigError

    cfg = _compose(
        ["experiment=table1", "evaluation=paper_code", f"paths.runs={tmp_path}", override]
    )
    with pytest.raises(ConfigError) as info:
        run(cfg)
    assert info.value.key == key and not list(tmp_path.iterdir())


def test_5_one_group_data_and_one_item_lists_are_refused_by_evaluate():
    one_group = gb.RankingData(
        np.zeros((6, 1)),
        np.array([1.0, 0, 1, 0, 1, 0]),
        [0, 2, 4, 6],
        np.arange(3),
        groups=np.ones(6),
    )
    with pytest.raises(ParameterError, match="every query holds one group"):
        gb.evaluate(np.arange(6.0), one_group, regime="ltr")
    one_item = gb.RankingData(
        np.zeros((6, 1)),
        np.array([1.0, 0, 1, 0, 1, 0]),
        np.arange(7),
        np.arange(6),
        groups=np.array([1.0, 0, 1, 0, 1, 0]),
    )
    with pytest.raises(ParameterError, match="lists of one item"):
        gb.evaluate(np.arange(6.0), one_item, regime="ltr", metrics=["rho_dtr"])
    for metric in (gb.metrics.rho_dtr_tabular, gb.metrics.delta_eel_tabular):
        with pytest.raises(ParameterError, match="groups"):
            metric(np.arange(6.0) / 6, one_group.labels, qptr=one_group.qptr, groups=np.ones(6))
    # per query (reduce=None) the documented conventions stay: the caller judges the lists
    per = gb.metrics.rho_dtr_tabular(
        np.arange(6.0) / 6, one_group.labels, qptr=one_group.qptr, groups=np.ones(6), reduce=None
    )
    assert per.shape == (3,)


def test_5_one_eel_level_is_refused_by_the_metric():
    with pytest.raises(ParameterError, match="levels"):
        gb.metrics.delta_eel_tabular(
            [0.1, 0.9], [0.0, 1.0], qptr=[0, 2], groups=[1, 0], bins="query_minmax", levels=1
        )


def test_5_equal_fractional_memberships_are_refused_not_read_as_fair():
    # 0.5 for every item: any ranking gives both "groups" half of every query's exposure, so
    # rho(DTR) read 1.0 and delta(EEL) 8.7e-17 whatever the scores
    rng = np.random.default_rng(0)
    qptr, half = np.arange(0, 41, 10), np.full(40, 0.5)
    s, y = rng.random(40), rng.random(40)
    for metric in (
        gb.metrics.rho_dtr_tabular,
        gb.metrics.delta_eel_tabular,
        gb.metrics.rho_dtr_ranking,
        gb.metrics.delta_eel_ranking,
    ):
        with pytest.raises(ParameterError, match=r"equal within every query \(0\.5 for every"):
            metric(s, y, qptr=qptr, groups=half)
    data = gb.RankingData(rng.random((40, 2)), (y > 0.5) * 1.0, qptr, np.arange(4), groups=half)
    with pytest.raises(ParameterError, match="differ in affected-group membership"):
        gb.evaluate(s, data, regime="ltr")
    from groupbias.core.errors import GroupingError
    from groupbias.data.datasets import check_two_groups

    with pytest.raises(GroupingError, match="only 0 of 4 queries"):
        check_two_groups({"test": data}, 1, who="fractional")
    # one query whose items differ is enough for a mean, as for hard groups
    mixed = half.copy()
    mixed[:2] = [0.9, 0.1]
    rho = gb.metrics.rho_dtr_tabular(s, y, qptr=qptr, groups=mixed, reduce=None)
    assert rho[0] < 1.0 and np.all(rho[1:] == 1.0)


# ---- 6: ids are integers or strings, never floats ------------------------------------------


def test_6_ids_never_pass_through_floats():
    from groupbias.core.validation import identifiers

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


# ---- 9: the learned policy in bounded memory ---------------------------------------------


def test_9_small_data_trains_in_one_piece_and_large_data_in_chunks_within_the_budget():
    from groupbias._fast.rows import padded_layouts
    from groupbias.evaluation import fair_exposure as F

    q = np.arange(0, 20 * 200 + 1, 20)
    layouts = padded_layouts(q, int(q[-1]))
    assert F._chunks(layouts, 32) == [layouts]  # 4,000 items: as before, one piece
    q = np.arange(0, 20 * 5000 + 1, 20)
    layouts = padded_layouts(q, int(q[-1]))
    chunks = F._chunks(layouts, 32)
    assert len(chunks) > 1
    for chunk in chunks:
        ((starts, sizes),) = chunk
        assert 32 * starts.size * int(sizes.max()) <= F.TRAIN_VALUES
    rows = np.concatenate([c[0][0] for c in chunks])
    np.testing.assert_array_equal(rows, layouts[0][0])  # every query once, in order


@pytest.mark.slow  # a subprocess or a whole run: seconds
def test_9_chunked_training_learns_the_policy_of_one_piece(monkeypatch):
    from groupbias._fast.rows import padded_layouts
    from groupbias.evaluation import fair_exposure as F

    rng = np.random.default_rng(3)
    q = np.arange(0, 10 * 60 + 1, 10)
    u = rng.random(q[-1])
    grades = np.round(4 * u)
    learner = F.FairExposureLearner(epochs=150, samples=16)
    whole = learner.fit(u, grades, qptr=q).weights(None, "average").dense()
    monkeypatch.setattr(F, "TRAIN_VALUES", 16 * 10 * 7)  # pieces of 7 queries
    assert len(F._chunks(padded_layouts(q, u.size), 16)) == 9
    pieces = learner.fit(u, grades, qptr=q).weights(None, "average").dense()
    target = F.target_exposure(grades, qptr=q)
    err_whole = np.abs(whole - target).mean()
    assert np.abs(pieces - target).mean() == pytest.approx(err_whole, rel=0.25, abs=0.01)
    assert np.abs(pieces - whole).max() < 0.15


@pytest.mark.slow
@pytest.mark.soak
def test_9_the_learned_policy_of_a_million_items_stays_under_1_gb(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "policy_memory.py"
    out = subprocess.run(
        [sys.executable, str(script), "--items", "1000000", "--ours-only", "--epochs", "1"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    peak = float(out.stdout.strip().splitlines()[-1].split()[1])
    assert peak < 1024, out.stdout


# ---- 10: tiny hostile files that would ask for unbounded memory ----------------------------


def test_10_one_large_feature_id_in_a_small_file_is_refused_before_allocating(tmp_path):
    lines = [f"{i % 2} 0:0.5 {'100000' if i == 0 else '2'}:1" for i in range(5000)]
    path = _lightgbm(tmp_path, [10] * 500, lines=lines)
    assert path.stat().st_size < 70_000
    with pytest.raises(DataFormatError, match=r"1\.9 GiB dense matrix .* \(0\.002 %") as info:
        load_lightgbm(path, cache=False)
    assert info.value.field == "feature id"


def test_10_labels_up_to_1e30_are_refused_before_building_eel_levels():
    data = gb.RankingData(
        np.zeros((8, 1)),
        np.array([0, 1e30] * 4),
        [0, 4, 8],
        np.arange(2),
        groups=np.array([1.0, 0.0] * 4),
    )
    with pytest.raises(ParameterError, match="L <= 1000"):
        gb.evaluate(
            np.arange(8.0), data, regime="ltr", relevance=data.labels / 1e30, metrics=["delta_eel"]
        )


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


def test_10_a_grid_step_of_1e_7_is_refused_naming_the_key(tmp_path):
    from groupbias.core.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        _check(["experiment=table1", "estimator.grid_step=1e-7"], tmp_path)
    assert info.value.key == "estimator.grid_step" and "10,000 grid points" in str(info.value)


def test_10_a_click_position_of_10_12_is_refused_before_counting():
    from groupbias.simulate.clicks import ClickLog

    log = ClickLog(
        session=np.array([0, 0]),
        query=np.array([0, 0]),
        item=np.array([0, 1]),
        position=np.array([1, 10**12]),
        click=np.array([1, 0], dtype=np.int8),
        source="log.parquet",
    )
    with pytest.raises(DataFormatError) as info:
        log.counts(np.array([0, 3]))
    assert info.value.field == "position" and "outside 1..3" in str(info.value)


def test_10_impossible_sizes_are_refused_with_the_memory_they_need(tmp_path):
    from groupbias.core.errors import ConfigError
    from groupbias.simulate.clicks import simulate_click_log

    cases = [  # before: numpy's "Unable to allocate 298. GiB", scipy's "The function value
        # at x=60.0 is NaN", a MemoryError
        (["dataset.params.list_size=[100000000,100000000]"], "dataset.params.list_size"),
        (["+dataset.params.n_grades=100000"], "dataset.params.n_grades"),
        (["experiment=drift", "experiment.sessions=10000000000"], "experiment.sessions"),
        (["experiment=clicks", "experiment.sessions=[1000,10000000000]"], "experiment.sessions"),
    ]
    for args, key in cases:
        with pytest.raises(ConfigError) as info:
            _check(args, tmp_path)
        assert info.value.key == key, args
        assert key.endswith("n_grades") or "would need about" in str(info.value)
    assert not (tmp_path / "runs").exists()
    rel = np.linspace(0.0, 1.0, 10)
    with pytest.raises(ParameterError, match=r"n_sessions: .* would need about 4\.5 TiB"):
        simulate_click_log(
            rel,
            np.tile([1.0, 0.0], 5),
            qptr=[0, 5, 10],
            logging_scores=rel,
            n_sessions=10**10,
            rng=np.random.default_rng(0),
        )


def test_10_a_pipe_is_refused_naming_its_path(tmp_path):
    # bash's <(cat f) is /dev/fd/63, a pipe; resolved it was /proc/<pid>/fd/pipe:[...], and
    # the cache raised FileNotFoundError for that name
    read, write = os.pipe()
    os.write(write, b"1 qid:1 1:0.5\n0 qid:1 1:0.1\n")
    os.close(write)
    path = f"/dev/fd/{read}"
    try:
        for cache in (True, False):
            with pytest.raises(DataFormatError) as info:
                load_svmlight(path, cache_dir=tmp_path / "cache", cache=cache)
            assert info.value.path == path and "not a regular file" in str(info.value)
            assert "Write the data to a file first" in str(info.value)
    finally:
        os.close(read)


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


def _not_an_object(d):
    (d / "manifest.json").write_text("[1, 2]")


def _other_values(d):
    labels = np.load(d / "labels.npy")
    with open(d / "labels.npy", "wb") as fh:  # same dtype and shape, other values
        np.save(fh, 1.0 - labels, allow_pickle=False)


@pytest.mark.parametrize(
    "damage, warning",
    [
        (_not_an_object, "ignoring unreadable cache entry"),
        (_other_values, "differs from the digest"),
    ],
)
def test_15_a_damaged_or_tampered_cache_entry_is_rebuilt_not_served(damage, warning, tmp_path):
    path, first, d = _cached_entry(tmp_path)
    damage(d)
    with pytest.warns(UserWarning, match=warning):
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


def _track(tmp_path, sample_lines: bytes):
    d = tmp_path / "2020"
    d.mkdir(parents=True)
    (d / "TREC-Fair-Ranking-training-sample.json").write_bytes(sample_lines)
    (d / "corpus-subset-for-queries.papers.csv").write_text("paper_sha,n_citations\np1,1\n")
    (d / "corpus-subset-for-queries.paper_authors.csv").write_text(
        "paper_sha,corpus_author_id,position\np1,1,1\n"
    )
    (d / "corpus-subset-for-queries.authors.csv").write_text("corpus_author_id,h_class\n1,H\n")
    return d / "TREC-Fair-Ranking-training-sample.json"


@pytest.mark.parametrize(
    "sample, line, words",
    [
        (b'{"qid": 1, "documents": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n", 1, "nested"),
        ('{"qid": 1, "documents": []}\n'.encode("utf-16"), 1, "UTF-16"),
        (b'{"qid": 1, "documents": []}\n{"qid": 2, "q": "\xff\xfe"}\n', 2, "not valid UTF-8"),
        (
            b'{"qid": 1, "documents": [{"doc_id": "p1", "relevance": 1}, '
            b'{"doc_id": "p1", "relevance": 0}]}\n',
            1,
            "listed twice",
        ),
    ],
)
def test_15_trec_track_json_faults_name_the_line(sample, line, words, tmp_path):
    from data_loaders.trec_fair import load_trec_fair_track

    path = _track(tmp_path, sample)
    with pytest.raises(DataFormatError) as info:
        load_trec_fair_track(tmp_path, 2020)
    assert info.value.path == str(path) and info.value.line == line and words in str(info.value)


def test_15_trec_track_qids_beyond_int64_load_as_strings(tmp_path):
    from data_loaders.trec_fair import load_trec_fair_track

    docs = '[{"doc_id": "p1", "relevance": 1}]'
    lines = [
        f'{{"qid": {2**70}, "documents": {docs}}}',
        f'{{"qid": "{"9" * 5000}", "documents": {docs}}}',
    ]
    _track(tmp_path, ("\n".join(lines) + "\n").encode())
    data = load_trec_fair_track(tmp_path, 2020, unknown="affected")
    assert list(data.query_ids) == [str(2**70), "9" * 5000]
    (tmp_path / "2020" / "TREC-Fair-Ranking-training-sample.json").write_text(
        f'{{"qid": {"9" * 5000}, "documents": {docs}}}\n'
    )
    with pytest.raises(DataFormatError) as info:
        load_trec_fair_track(tmp_path, 2020)
    assert info.value.line == 1


def test_15_a_byte_order_mark_in_the_iitjee_header_is_read(tmp_path):
    from data_loaders.iitjee import load_iitjee

    head = "REGST_NO,NAME,category,sub_category,GENDER,PIN_RES,PARENT_NAM,math,phys,chem,mark"
    rows = [f"{i},n,GE,GE1,{'FM'[i % 2]},1,p,1,2,3,{10 * i}" for i in range(1, 9)]
    (tmp_path / "jee.csv").write_bytes(("\ufeff" + "\n".join([head, *rows]) + "\n").encode())
    data = load_iitjee(tmp_path / "jee.csv")
    assert data.n_items == 8


def test_15_a_column_named_twice_in_a_trec_header_is_a_format_error(tmp_path):
    d = tmp_path / "ppg" / "2019"
    d.mkdir(parents=True)
    (d / "train.csv").write_text(
        "sensitive_attribute,session,score,feature_1,feature_2,feature_2\nH,1,1,0.1,0.2,0.3\n"
    )
    with pytest.raises(DataFormatError) as info:
        load_trec_fair_ppg(tmp_path, year=2019)
    assert (info.value.line, info.value.field) == (1, "feature_2")


def test_15_a_udata_header_with_hyphens_is_skipped(tmp_path):
    (tmp_path / "u.data").write_text("user-id\titem-id\trating\ttimestamp\n1\t10\t5\t88\n")
    data = load_movielens(tmp_path / "u.data", grouping=None)
    assert data.n_items == 1 and data.query_ids.tolist() == [1]


def test_15_a_missing_links_file_names_its_option_through_the_registry(tmp_path, monkeypatch):
    from groupbias.core.errors import MissingFilesError
    from groupbias.data.datasets import DatasetSpec

    (tmp_path / "ratings.dat").write_text("1::10::4::1\n")
    tmd = tmp_path / "tmd"
    tmd.mkdir()
    (tmd / "movies_metadata.csv").write_text("id,imdb_id,production_countries,revenue\n")
    monkeypatch.setenv("GROUPBIAS_MOVIELENS", str(tmp_path / "ratings.dat"))
    monkeypatch.setenv("GROUPBIAS_MOVIELENS_META", str(tmd))
    with pytest.raises(MissingFilesError) as info:
        DatasetSpec(name="movielens_country").load()
    assert "dataset.params.links" in str(info.value)
    assert "point GROUPBIAS_MOVIELENS" not in str(info.value)


def test_15_an_io_error_while_reading_names_the_file(tmp_path, monkeypatch):
    import errno

    from data_loaders import registry
    from groupbias.data.datasets import DatasetSpec

    d = tmp_path / "ppg" / "2019"
    d.mkdir(parents=True)
    (d / "train.csv").write_text("sensitive_attribute,session,score,feature_1\nH,1,1,0.1\n")
    monkeypatch.setenv("GROUPBIAS_TREC_FAIR", str(tmp_path))

    def eio(*args, **kwargs):
        raise OSError(errno.EIO, "Input/output error", str(d / "train.csv"))

    monkeypatch.setattr(registry.trec_fair, "load_trec_fair_ppg", eio)
    with pytest.raises(DataError, match=r"train.csv: cannot read the data \(Input/output error\)"):
        DatasetSpec(name="trec2019").load(only=("train",))


def test_15_a_string_high_level_is_refused_before_reading(tmp_path):
    # before: numpy's UFuncTypeError from `gid >= "4"` after every file was read
    from data_loaders.text_collections import load_trec_fair_text
    from data_loaders.trec_fair import load_trec_fair_track

    for load in (load_trec_fair_track, load_trec_fair_text):
        with pytest.raises(ParameterError, match=r"high_level: expected an integer .* got '4'"):
            load(tmp_path, 2019, high_level="4")


def _text_files(tmp_path, queries=None, documents=None):
    from pathlib import Path

    tiny = Path(__file__).resolve().parents[1] / "data" / "tiny_text"
    for name in ("collection.tsv", "queries.tsv", "qrels.txt", "groups.tsv"):
        lines = (tiny / name).read_text().splitlines()
        text = {"queries.tsv": queries, "collection.tsv": documents}.get(name)
        if text is not None:
            lines = [f"{line.split(chr(9), 1)[0]}\t{text(i)}" for i, line in enumerate(lines)]
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    from groupbias.data.text import load_text_collection

    return load_text_collection(
        tmp_path / "collection.tsv",
        tmp_path / "queries.tsv",
        tmp_path / "qrels.txt",
        groups=tmp_path / "groups.tsv",
    )


def test_15_stop_word_queries_and_empty_documents_are_named(tmp_path):
    from experiments.retrieval_common import BM25Settings
    from groupbias.app.cli import run
    from groupbias.core.errors import GroupBiasWarning

    def fair_qr(root):
        cfg = _compose(
            [
                "experiment=fair_qr",
                "dataset=text_files",
                f"dataset.root={root}",
                "dataset.params.groups=groups.tsv",
                "dataset.params.group_label=gender",
                "experiment.datasets=[]",
                "experiment.fair_qr.top_k=3",
                "experiment.fair_qr.depth=10",
                f"paths.runs={tmp_path / 'runs'}",
            ]
        )
        with pytest.raises(DataFormatError) as info:
            run(cfg)
        return info.value

    (tmp_path / "a").mkdir()
    _text_files(tmp_path / "a", queries=lambda i: "the of and")
    # before: scipy's "does not support dtype object" from RM3 over empty feedback
    error = fair_qr(tmp_path / "a")
    assert error.path == str(tmp_path / "a" / "queries.tsv") and "'q1', 'q2'" in str(error)
    (tmp_path / "b").mkdir()
    _text_files(tmp_path / "b", documents=lambda i: "the" if i % 2 else "")
    # before: bm25s's "max() arg is an empty sequence"
    error = fair_qr(tmp_path / "b")
    assert error.path == str(tmp_path / "b" / "collection.tsv")
    assert "none of the 12 documents keeps a term" in str(error)
    (tmp_path / "c").mkdir()
    c = _text_files(tmp_path / "c", queries=lambda i: "nurse salary" if i else "the of")
    bm25 = BM25Settings(depth=10)
    with pytest.warns(GroupBiasWarning, match=r"1 of \d+ queries keep no term.*'q1'"):
        first = bm25.first_run(bm25.index(c), c)
    assert first.meta["empty_queries"] == [0]
    from groupbias.retrieval.expansion import RM3

    empty = bm25.index(c).search(["the"], k=10, on_empty="skip")
    expanded = RM3().expand(bm25.index(c), ["the"], empty)  # no feedback: no crash
    assert expanded.shape[0] == 1 and expanded.nnz == 0


# ---- 16: library calls -------------------------------------------------------------------


@pytest.mark.parametrize("what", ["labels", "features"])
def test_16_ranking_data_refuses_nan(what):
    feats, labels = np.zeros((4, 2)), np.array([0.0, 1.0, 2.0, 0.0])
    (feats if what == "features" else labels)[1] = np.nan
    with pytest.raises(DataError, match="NaN|finite"):
        gb.RankingData(feats, labels, [0, 2, 4], np.arange(2))


def test_16_evaluate_refuses_relevance_above_one():
    data = _grouped(4)
    with pytest.raises(ParameterError, match="relevance: expected probabilities"):
        gb.evaluate(np.arange(data.n_items, dtype=float), data, regime="ltr", relevance=data.labels)


def test_16_a_tensor_that_requires_grad_is_a_parameter_error():
    torch = pytest.importorskip("torch")
    scores = torch.tensor([0.3, 0.2, 0.9, 0.1], requires_grad=True)
    with pytest.raises(ParameterError, match="detach"):
        gb.metrics.ndcg(scores, [1, 0, 1, 0], qptr=[0, 2, 4])
    with pytest.raises(ParameterError, match="detach"):
        gb.metrics.rho_dtr_tabular(scores, [1, 0, 1, 0], qptr=[0, 2, 4], groups=[1, 0, 1, 0])
    data = gb.RankingData(
        np.zeros((4, 1)), [1.0, 0, 1, 0], [0, 2, 4], np.arange(2), groups=[1.0, 0, 1, 0]
    )
    with pytest.raises(ParameterError, match="scores: .*detach"):  # before: RuntimeError
        gb.evaluate(scores, data, regime="ltr")


def test_16_a_misnamed_or_missing_keyword_is_named_with_a_suggestion():
    # before: Python's bare "got an unexpected keyword argument 'beta'" and "missing 1
    # required keyword-only argument: 'qptr'"
    from groupbias.core.errors import ArgumentError

    data = _grouped(4)
    with pytest.raises(ArgumentError, match="beta: not a keyword argument of simulate_group_") as e:
        gb.simulate_group_bias(data, beta=0.8, rng=np.random.default_rng(0))
    assert "Did you mean beta_mean" in str(e.value) and isinstance(e.value, TypeError)
    with pytest.raises(ArgumentError, match="qptr: missing required argument of ndcg") as e:
        gb.metrics.ndcg(data.labels, data.labels)
    assert e.value.name == "qptr" and "data.qptr" in str(e.value)
    with pytest.raises(ArgumentError, match="groups: missing .* of rho_dtr_tabular"):
        gb.metrics.rho_dtr_tabular(data.labels / 4, data.labels / 4, qptr=data.qptr)
    with pytest.raises(ArgumentError, match="metric: .* evaluate.*Did you mean metrics"):
        gb.evaluate(data.labels, data, regime="ltr", metric=["ndcg@10"])
    from groupbias.core.validation import checked_arguments

    @checked_arguments
    def inner(x, *, y):
        raise TypeError("raised inside")

    with pytest.raises(TypeError, match="raised inside") as e:  # left alone
        inner(1, y=2)
    assert not isinstance(e.value, ArgumentError)


def test_16_evaluate_names_the_relevance_it_assumed_in_the_tabular_regime():
    from groupbias.core.errors import GroupBiasWarning

    data = _grouped(4)
    with pytest.warns(GroupBiasWarning, match=r"without relevance=.*labels / 4"):
        gb.evaluate(data.labels / 4, data, regime="tabular")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", GroupBiasWarning)
        gb.evaluate(data.labels / 4, data, regime="tabular", relevance=data.labels / 4)
        gb.evaluate(data.labels, data, regime="ltr")  # a ranking: the labels are the truth


def test_16_messages_and_reprs_say_what_they_count():
    data = _grouped(4)
    with pytest.raises(ParameterError, match=r"length 4 \(one value per query\), got 'length 3'"):
        gb.simulate_attractiveness(
            data.labels / 4, data.groups, qptr=data.qptr, beta_query=[0.8, 0.8, 0.8]
        )
    with pytest.raises(ParameterError, match="one value per query"):
        gb.ips_correct(data.labels, data.groups, qptr=data.qptr, beta_hat_per_query=np.ones(5))
    text = repr(data)  # before: every array in full
    assert text.startswith("RankingData(") and "n_queries=4, n_items=24" in text
    assert "float32[24, 2]" in text and "array(" not in text and len(text) < 300
    assert "TextCollection" in gb.load_dataset.__doc__  # grep_biasir gives {'test': one}


# ---- 7, 11, 12: the command line, checked before anything is made ---------------------------


def _check(args, tmp_path):
    from groupbias.app.preflight import check_command_line

    return check_command_line([f"paths.runs={tmp_path / 'runs'}", *args])


@pytest.mark.parametrize(
    "args, key, words",
    [
        (
            ["estimator.clustr_size=10"],
            "estimator.clustr_size",
            "did you mean estimator.cluster_size",
        ),
        (
            ["experiment=table1", "experiment.repetitions=1"],
            "experiment.repetitions",
            "unknown key",
        ),
        (["bias.betas=[0.8"], "bias.betas=[0.8", "cannot read this override"),
        (["bias.betas=[0.8,]"], "bias.betas=[0.8,]", "cannot read this override"),
        (["=="], "==", "cannot read this override"),
        (["=0.5"], "=0.5", "no key before"),
        (["+seed=1"], "seed", "already set"),
        (["estimator=wassertein"], "estimator", "did you mean wasserstein"),
        (["estimator=amortized"], "estimator", "did you mean ks? (the new name of amortized)"),
        (["experiment=bogus"], "experiment", "the options are ablation_cluster_size"),
        (["dataset=nonexistent"], "dataset", "iitjee, lightgbm"),
        (["-m", "estimator.cluster_size=1,2,"], "estimator.cluster_size=1,2,", "cannot read"),
        (["estimator.cluster_size=1,2"], "estimator.cluster_size", "needs -m"),
        (
            ["experiment=table1", "dataset.root=/data"],
            "dataset.root",
            "dataset=<name> dataset.root",
        ),
        (  # a map listing no keys: the hint says how to add one
            ["experiment=table1", "dataset=yahoo", "dataset.params.fold=1"],
            "dataset.params.fold",
            "+dataset.params.fold=... adds a key",
        ),
    ],
)
def test_11_hydra_errors_become_one_line_naming_the_key(args, key, words, tmp_path):
    from groupbias.core.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        _check(args, tmp_path)
    assert info.value.key == key
    assert words in str(info.value) and "\n" not in str(info.value)
    assert not (tmp_path / "runs").exists()


def test_11_the_documented_movielens_keys_are_accepted(tmp_path):
    # docs/datasets.md: dataset.params.metadata / dataset.params.links, without a '+'
    for name in ("movielens_country", "movielens_bo"):
        args = [f"dataset={name}", "dataset.params.metadata=/m.csv", "dataset.params.links=/l.csv"]
        _check(["experiment=table1", *args], tmp_path)


@pytest.mark.parametrize(
    "override, key",
    [
        ("paths.runs=", "paths.runs"),
        ("experiment.name=../../x", "experiment.name"),
        ("experiment.name=a/b", "experiment.name"),
    ],
)
def test_7_output_never_leaves_the_runs_folder(override, key, tmp_path):
    from groupbias.app.preflight import check_command_line
    from groupbias.core.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        check_command_line([f"paths.runs={tmp_path / 'runs'}", "experiment=table1", override])
    assert info.value.key == key
    assert not list(tmp_path.iterdir())


def test_7_an_empty_runs_key_is_refused_and_an_empty_variable_is_unset(tmp_path, monkeypatch):
    from groupbias.app.preflight import check_command_line
    from groupbias.core.errors import ConfigError

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="paths.runs: expected a folder, got ''"):
        check_command_line(["experiment=table1", "paths.runs="])
    monkeypatch.setenv("GROUPBIAS_RUNS", "")  # unset, as every empty GROUPBIAS_* variable
    assert check_command_line(["experiment=table1"]) == 1
    assert not list(tmp_path.iterdir())


def test_12_run_folder_names_are_flat_short_shell_safe_and_distinct():
    from groupbias.app.preflight import run_dirname

    sizes = "[" + ",".join(str(k) for k in range(1, 120)) + "]"
    cases = [
        ["estimator.cluster_size=10"],
        ["dataset=trec2019", "dataset.root=/data/trec fair/2019"],
        ["dataset=trec2019", "dataset.root=/data/trec_fair/2019"],
        [f"experiment.cluster_sizes={sizes}"],
        ["experiment.split=" + "s" * 300],
        ["bias.betas=[0.8,0.6]", "experiment=table1", "paths.runs=/x", "launcher=slurm"],
    ]
    names = [run_dirname(c) for c in cases]
    for name in names:
        assert name and len(name.encode()) <= 120
        assert not set(name) & set("/[], '\"$`*?;&|<>()\\")
    assert len(set(names)) == len(names)
    assert names[0] == "estimator.cluster_size=10"  # plain names stay as they were
    assert names[-1] == "bias.betas=0.8_0.6"  # where and how to run never name a folder
    assert run_dirname(["experiment=demo", "progress=false"]) == ""


def test_14_a_bad_value_in_the_middle_of_a_sweep_stops_before_the_first_job(tmp_path):
    from groupbias.core.errors import ConfigError

    args = ["-m", "experiment=ablation_cluster_size", "estimator.cluster_size=1,abc,20"]
    with pytest.raises(ConfigError) as info:
        _check(args, tmp_path)
    assert info.value.key == "estimator.cluster_size" and "'abc'" in str(info.value)
    assert not (tmp_path / "runs").exists()
    assert _check(args[:2] + ["estimator.cluster_size=1,5,20"], tmp_path) == 3


# ---- 8: settings quietly replaced or doubled ----------------------------------------------


@pytest.mark.parametrize(
    "args, key",
    [
        (["experiment=table1", "experiment.datasets=[]"], "experiment.datasets"),
        (
            ["experiment=table1", "experiment.datasets=[synthetic,synthetic]"],
            "experiment.datasets[1]",
        ),
        (["experiment=table1", "bias.betas=[0.8,0.8]"], "bias.betas"),
        (["experiment=demo", "experiment.table_betas=[0.55]"], "experiment.table_betas"),
        (["experiment=table1", "+evaluation.learn=true"], "evaluation.learn"),
        (["experiment=table1", "+evaluation.temperature=0.5"], "evaluation.temperature"),
    ],
)
def test_8_settings_are_never_quietly_replaced_doubled_or_ignored(args, key, tmp_path):
    from groupbias.core.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        _check(args, tmp_path)
    assert info.value.key == key


# ---- 14: late errors moved early ----------------------------------------------------------


@pytest.mark.parametrize(
    "override, key",
    [
        ("trainer.precision=bogus", "trainer.precision"),
        ("trainer.devices=0", "trainer.devices"),
        ("trainer.loggers=[csv,tensorboard]", "trainer.loggers"),
        ("trainer.accelerator=warp", "trainer.accelerator"),
    ],
)
def test_14_trainer_settings_fail_before_any_data_is_read(override, key, tmp_path):
    from groupbias.core.errors import ConfigError

    if "tensorboard" in override:
        import importlib.util

        if importlib.util.find_spec("tensorboard") or importlib.util.find_spec("tensorboardX"):
            pytest.skip("tensorboard is installed here")
    with pytest.raises(ConfigError) as info:
        _check(["experiment=table2", override], tmp_path)
    assert info.value.key == key


def test_14_trainer_gpu_without_a_gpu_is_refused(tmp_path):
    import torch

    from groupbias.core.errors import ConfigError

    if torch.cuda.is_available():
        assert _check(["experiment=table2", "trainer=gpu"], tmp_path) == 1
        return
    with pytest.raises(ConfigError) as info:
        _check(["experiment=table2", "trainer=gpu"], tmp_path)
    assert info.value.key == "trainer.accelerator" and "trainer=cpu" in str(info.value)


def test_14_a_diverged_ranker_is_named_at_its_first_non_finite_loss(tmp_path, rng):
    import functools

    import torch

    from groupbias.core.errors import ConfigError
    from groupbias.ltr.datamodule import BatchSpec
    from groupbias.ltr.model import ScorerSpec
    from groupbias.ltr.train import RankerRecipe, TrainerSpec, train_ranker

    data = _grouped(30)
    recipe = RankerRecipe(
        model=ScorerSpec(
            fc_model={"sizes": [8], "input_norm": False, "activation": "ReLU", "dropout": 0.0},
            transformer={"N": 1, "d_ff": 8, "h": 1, "positional_encoding": None, "dropout": 0.0},
            post_model={"output_activation": None, "d_output": 1},
        ),
        trainer=TrainerSpec(max_epochs=5, enable_progress_bar=False, patience=None),
        optimizer=functools.partial(torch.optim.SGD, lr=1e30),
        batching=BatchSpec(batch_size=8),
    )
    with pytest.raises(ConfigError) as info:
        train_ranker(data, None, recipe=recipe, seed=0, out_dir=tmp_path)
    assert info.value.key == "optimizer.lr" and "diverged" in str(info.value)


# ---- 11, 13: the command itself (subprocesses) --------------------------------------------

FAST = [
    "experiment=ablation_cluster_size",
    "dataset.params.n_queries=200",
    "experiment.repetitions=2",
    "progress=false",
]
LONG = [
    "experiment=ablation_cluster_size",
    "dataset.params.n_queries=3000",
    "experiment.repetitions=6",
    "progress=false",
]
#: a run of 6 steps (2 β x 3 repetitions, about 1 s each): the disk fills after the first
#: and the resumed command computes the other 5 (LONG's 11 made that test 17 s)
MID = [*LONG[:2], "experiment.repetitions=3", LONG[3]]


def _command(args, tmp_path, **kw):
    import subprocess
    import sys
    from pathlib import Path

    exe = Path(sys.executable).with_name("groupbias")
    env = {**os.environ, "GROUPBIAS_RUNS": str(tmp_path / "runs"), **kw.pop("env", {})}
    return subprocess.Popen(
        [str(exe), *args],
        env=env,
        cwd=tmp_path,
        stdout=kw.pop("stdout", subprocess.PIPE),
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **kw,
    )


def _finish(proc, timeout=300):
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def test_11_the_command_prints_one_error_line_and_a_hint_and_makes_no_folder(tmp_path):
    code, _, err = _finish(_command(["estimator.clustr_size=10"], tmp_path))
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 2, err
    assert lines[0].startswith("groupbias: error: estimator.clustr_size: unknown key")
    assert lines[1] == "groupbias: hint: did you mean estimator.cluster_size?"
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow
def test_13_a_file_as_runs_folder_and_a_file_size_limit_are_named(tmp_path):
    import resource

    f = tmp_path / "a-file"
    f.write_text("x")
    code, _, err = _finish(_command([*FAST, f"paths.runs={f}"], tmp_path))
    assert code == 2 and f"{f} is a file, not a folder" in err and "Traceback" not in err

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (70_000, 70_000))

    code, _, err = _finish(_command(FAST, tmp_path, preexec_fn=limit))
    assert code == 2 and "Traceback" not in err, err
    first = err.splitlines()[0]
    assert first.startswith(f"groupbias: error: {tmp_path / 'runs'}") and "File too large" in first
    assert "ulimit -f" in err
    assert not list((tmp_path / "runs").rglob("*.tmp"))
    code, _, err = _finish(_command(FAST, tmp_path))  # the limit gone, the same command resumes
    assert code == 0, err

    def tiny():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))

    code, _, err = _finish(_command([*FAST, "seed=1"], tmp_path, preexec_fn=tiny))
    assert code == 2 and err.startswith("groupbias: error: ulimit -f: files are limited to 1000")
    assert list((tmp_path / "runs").rglob("metrics.json"))


def _mount_tmpfs(where, size, *, read_only=False):
    import subprocess

    where.mkdir(parents=True, exist_ok=True)
    opts = f"size={size}" + (",ro" if read_only else "")
    ok = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(where)], capture_output=True
    )
    return ok.returncode == 0


def _umount(where) -> None:
    """Unmount ``where`` (lazily when something still holds it)."""
    import subprocess

    if subprocess.run(["umount", str(where)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _fill(disk):
    """Write a file until the disk is full."""
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"x" * (1 << 16)):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)


@pytest.mark.slow
@pytest.mark.soak
def test_13_a_full_disk_and_a_read_only_folder_are_named(tmp_path):
    import subprocess
    import time

    disk = tmp_path / "disk"
    if os.geteuid() != 0 or not _mount_tmpfs(disk, "150k"):
        pytest.skip("mounting a small tmpfs needs root")
    env = {"GROUPBIAS_RUNS": str(disk)}
    try:  # too little room to start: refused up front
        code, _, err = _finish(_command(FAST, tmp_path, env=env))
        assert code == 2 and f"the disk holding {disk} has" in err and "KiB free" in err, err
        subprocess.run(["mount", "-o", "remount,size=40m", str(disk)], check=True)
        proc = _command(MID, tmp_path, env=env)  # the disk fills while the run goes on
        while not list(disk.rglob("steps/*.json")) and proc.poll() is None:
            time.sleep(0.05)
        _fill(disk)
        code, _, err = _finish(proc)
        assert code == 2 and "No space left on device" in err and "free space" in err, err
        assert "Traceback" not in err and not list(disk.rglob("*.tmp"))
        (disk / "filler").unlink()
        code, _, err = _finish(_command(MID, tmp_path, env=env))  # the same command resumes
        assert code == 0, err
    finally:
        _umount(disk)
    ro = tmp_path / "ro"
    if not _mount_tmpfs(ro, "1m", read_only=True):
        pytest.skip("no read-only tmpfs")
    try:
        code, _, err = _finish(_command(FAST, tmp_path, env={"GROUPBIAS_RUNS": str(ro)}))
        assert code == 2 and f"cannot write in {ro}" in err and "Traceback" not in err
    finally:
        _umount(ro)


@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_13_an_interrupted_run_says_so_in_one_line_and_resumes(sig, code, tmp_path):
    import signal
    import time

    def as_from_a_terminal():  # a suite started in the background (`make test &`, nohup)
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # hands its children SIGINT ignored

    proc = _command(LONG, tmp_path, preexec_fn=as_from_a_terminal)
    deadline = time.time() + 120
    while not list((tmp_path / "runs").rglob("steps/*.json")) and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(getattr(signal, sig))
    got, _, err = _finish(proc)
    assert got == code, err
    assert err.strip().splitlines() == ["groupbias: interrupted; the same command resumes"]
    (meta,) = list((tmp_path / "runs").rglob("meta.json"))
    assert json.loads(meta.read_text())["status"] == "interrupted"


@pytest.mark.slow
def test_13_a_closed_pipe_is_quiet_and_the_run_goes_on(tmp_path):
    proc = _command(FAST, tmp_path)
    proc.stdout.readline()
    proc.stdout.close()  # `groupbias ... | head -1`
    err = proc.stderr.read()
    proc.wait(timeout=300)
    assert proc.returncode == 0 and "Traceback" not in err and "BrokenPipe" not in err, err
    (meta,) = list((tmp_path / "runs").rglob("meta.json"))
    assert json.loads(meta.read_text())["status"] == "complete"


def test_16_ips_correct_refuses_a_beta_hat_that_would_make_inf():
    with pytest.raises(ParameterError, match="beta_hat_per_query"):
        gb.ips_correct([0.5, 0.2], [1.0, 0.0], qptr=[0, 2], beta_hat_per_query=[1e-320])
    out = gb.ips_correct([0.5, 0.2], [1.0, 0.0], qptr=[0, 2], beta_hat_per_query=[1e-300])
    assert np.isfinite(out).all()


def test_16_em_propensities_refuse_a_log_without_clicks():
    from groupbias.estimate.propensity import em_propensities

    shown = np.ones((5, 3)) * 10
    with pytest.raises(ParameterError, match="clicks at position 1"):
        em_propensities(shown, np.zeros_like(shown))


def test_16_a_metric_option_is_named_with_its_metric():
    data = _grouped(4)
    with pytest.raises(ParameterError) as info:
        gb.evaluate(
            np.arange(data.n_items, dtype=float),
            data,
            regime="ltr",
            metrics=[{"name": "cwex", "alpha": -1}],
        )
    assert info.value.name == "cwex.alpha"


def test_16_cluster_labels_of_mixed_kinds_are_a_parameter_error(rng):
    a = rng.random(40)
    groups = np.tile([1.0, 0.0], 20)
    labels = np.array([1, "a", 1, "a"], dtype=object)
    with pytest.raises(ParameterError, match="mix of int, str"):
        gb.estimate_beta(a, groups, qptr=np.arange(0, 41, 10), clusters=labels, rng=rng)


@pytest.mark.parametrize("damage", ["truncated", "list", "directory", "binary"])
@pytest.mark.parametrize("name", ["metrics.json", "meta.json"])
def test_16_the_report_names_a_damaged_run_file(name, damage, tmp_path, capsys):
    from groupbias.reporting.aggregate import main as report_main

    run = tmp_path / "runs" / "x"
    run.mkdir(parents=True)
    (run / "meta.json").write_text('{"status": "complete"}')
    (run / "metrics.json").write_text('{"records": [{"metric": "m", "value": 1.0}]}')
    target = run / name
    if damage == "truncated":
        target.write_text(target.read_text()[:9])
    elif damage == "list":
        target.write_text("[1, 2]")
    elif damage == "directory":
        target.unlink()
        target.mkdir()
    else:
        target.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    assert report_main([str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert str(target) in err and "Traceback" not in err


@pytest.mark.parametrize(
    "command", ["evaluate", "export", pytest.param("aggregate", marks=pytest.mark.slow)]
)  # aggregate makes a run first: seconds
@pytest.mark.parametrize("where", ["a_file/x", "/dev/null/x"])
def test_14_an_out_that_cannot_be_a_folder_is_one_line(tmp_path, capsys, command, where):
    from groupbias.reporting.aggregate import main as report_main

    (tmp_path / "a_file").write_text("x")
    out = str(tmp_path / where) if not where.startswith("/") else where
    (tmp_path / "r.run").write_text("1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0 t\n")
    (tmp_path / "q.qrels").write_text("1 0 a 1\n1 0 b 0\n")
    (tmp_path / "g.groups").write_text("a 1\nb 0\n")
    runs = tmp_path / "runs"
    runs.mkdir()
    args = {
        "evaluate": ["evaluate", "--run", str(tmp_path / "r.run"), "--qrels",
                     str(tmp_path / "q.qrels"), "--groups", str(tmp_path / "g.groups")],
        "export": ["export", "synthetic"],
        "aggregate": [str(runs)],
    }[command]  # fmt: skip
    if command == "aggregate":  # a complete run to aggregate
        _tiny_run(runs)
    assert report_main([*args, "--out", out]) == 2
    err = capsys.readouterr().err
    assert "cannot write" in err and "Traceback" not in err and len(err.splitlines()) == 2


def _tiny_run(root):
    from hydra import compose, initialize_config_dir

    from groupbias.app.cli import run
    from groupbias.app.command import CONFIG_DIR

    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        cfg = compose(
            config_name="config",
            overrides=["experiment=theory", f"paths.runs={root}", "experiment.n_queries=100"],
        )
    run(cfg)


def test_14_a_hydra_run_dir_under_a_file_is_refused_before_hydra(tmp_path):
    from groupbias.core.errors import ConfigError

    with pytest.raises(ConfigError, match="hydra.run.dir: /dev/null is a file"):
        _check(["experiment=theory", "hydra.run.dir=/dev/null/x"], tmp_path)
