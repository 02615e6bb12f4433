"""TREC files (runs, qrels, item→group files): written by the framework, read back
identically, read by ir_measures, and an external run evaluated to the same numbers the
framework computes on the same rankings; malformed files named by file and line."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pytest

import groupbias as gb
from groupbias.core.errors import DataFormatError, ParameterError
from groupbias.data.ranking_data import RankingData
from groupbias.data.trec import groups_of, with_usable_ids
from groupbias.evaluation.evaluate import run_data
from groupbias.reporting.aggregate import main as report_main

CORE = ["ndcg@10", "rho_dtr", "delta_eel"]


@pytest.fixture(scope="module")
def synthetic_test():
    return gb.load_dataset("synthetic", n_queries=120, list_size=[4, 30], split="test")


@pytest.fixture
def trec2020(trec_root, monkeypatch):
    monkeypatch.setenv("GROUPBIAS_TREC_FAIR", str(trec_root))
    return gb.load_dataset("trec2020", split="test")


def _write_all(tmp_path, scores, data):
    return (
        gb.write_run(tmp_path / "x.run", scores, data, tag="ours"),
        gb.write_qrels(tmp_path / "x.qrels", data),
        gb.write_groups(tmp_path / "x.groups", data),
    )


def test_positional_item_ids_where_a_dataset_has_none(synthetic_test):
    d = synthetic_test
    assert d.item_ids is None
    ids = gb.item_ids_of(d)
    q0 = str(d.query_ids[0])
    assert list(ids[: d.qptr[1]]) == [f"{q0}_{i}" for i in range(d.qptr[1])]


def test_runs_qrels_and_groups_read_back_identically(tmp_path, synthetic_test):
    d = synthetic_test
    scores = np.random.default_rng(0).random(d.n_items) ** 7  # many digits, tiny values
    scores[::4] = 0.5  # ties: written in list order, read back in it
    run_path, qrels_path, groups_path = _write_all(tmp_path, scores, d)
    run = gb.read_run(run_path)
    assert run.tag == "ours" and run.n_queries == d.n_queries
    np.testing.assert_array_equal(run.query_ids, d.query_ids.astype(str))
    # the file is in rank order; mapped back to the items, every score is bit-identical
    back = pd.Series(run.scores, index=run.item_ids).reindex(gb.item_ids_of(d)).to_numpy()
    np.testing.assert_array_equal(back, scores)
    lines = run_path.read_text().splitlines()
    assert lines[0].split()[3] == "1" and lines[0].split()[1] == "Q0"
    first = np.sort(scores[: d.qptr[1]])[::-1]
    assert [float(x.split()[4]) for x in lines[: d.qptr[1]]] == first.tolist()
    qrels = gb.read_qrels(qrels_path)
    np.testing.assert_array_equal(qrels.labels, d.labels)
    np.testing.assert_array_equal(qrels.item_ids, gb.item_ids_of(d))
    groups = gb.read_groups(groups_path)
    np.testing.assert_array_equal(groups.lookup(qrels.query_ids, qrels.item_ids), d.groups)


def test_ir_measures_reads_them_and_agrees_on_ndcg(tmp_path, synthetic_test):
    d = synthetic_test
    scores = np.random.default_rng(1).random(d.n_items)  # no ties (trec_eval breaks by docno)
    run_path, qrels_path, groups_path = _write_all(tmp_path, scores, d)
    run = list(ir_measures.read_trec_run(str(run_path)))
    qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))
    assert len(run) == len(qrels) == d.n_items
    assert {(r.query_id, r.doc_id, r.score) for r in run} == {
        (q, i, s)
        for q, i, s in zip(
            d.query_ids[d.query_index()].astype(str), gb.item_ids_of(d), scores.tolist()
        )
    }
    assert sorted(q.relevance for q in qrels) == sorted(d.labels.astype(int).tolist())
    theirs = ir_measures.calc_aggregate([ir_measures.nDCG @ 10], qrels, run)[ir_measures.nDCG @ 10]
    # trec_eval's gain is the label itself: linear, which "exp2" equals on labels 0/1 only
    ours = gb.evaluate_run(
        run_path, qrels_path, groups_path, metrics=[{"name": "ndcg@10", "gain": "linear"}]
    )
    assert ours["ndcg@10"] == pytest.approx(theirs, abs=1e-12)


@pytest.mark.realdata
def test_external_trec2020_run_equals_the_internal_evaluation(tmp_path, trec2020):
    """TREC 2020 test split: a biased ranking (ties among the equal utilities) written as a
    run, qrels and group file, evaluated from the files: NDCG@10, ρ(DTR), Δ(EEL) and AWRF
    equal the framework's own evaluation of the same rankings to 1e-12, per query too."""
    d = trec2020
    sim = gb.GroupBias(beta_std=0.1).simulate(d, beta=0.6, rng=np.random.default_rng(0))
    metrics = [*CORE, "awrf"]
    internal = gb.evaluate(sim.attractiveness, d, regime="ltr", metrics=metrics, reduce=None)
    paths = _write_all(tmp_path, sim.attractiveness, d)
    external = gb.evaluate_run(*paths, metrics=metrics, reduce=None)
    for m in metrics:
        np.testing.assert_allclose(external[m], internal[m], rtol=0, atol=1e-12)
    means = gb.evaluate_run(*paths, metrics=["nDCG@10", "Rho_DTR", "delta_eel"])
    assert means["nDCG@10"] == pytest.approx(np.nanmean(internal["ndcg@10"]), abs=1e-12)
    assert means["Rho_DTR"] == pytest.approx(np.nanmean(internal["rho_dtr"]), abs=1e-12)


@pytest.mark.realdata
def test_track_format_doc_ids_and_labelled_groups(tmp_path, trec_root, monkeypatch):
    """The track's own files name papers by their ids; a group file of labels (H/L) is read
    with the affected label."""
    monkeypatch.setenv("GROUPBIAS_TREC_FAIR", str(trec_root))
    d = gb.load_dataset("trec2020_track", split="train")
    scores = np.random.default_rng(2).random(d.n_items)
    run_path = gb.write_run(tmp_path / "t.run", scores, d)
    qrels_path = gb.write_qrels(tmp_path / "t.qrels", d)
    assert gb.read_run(run_path).item_ids[0] in set(d.item_ids)
    g = groups_of(d)  # one membership per paper id: written as docno group
    (tmp_path / "t.groups").write_text(
        "".join(f"{i} {'L' if x == 1 else 'H'}\n" for i, x in zip(g.item_ids, g.groups))
    )
    got = gb.evaluate_run(run_path, qrels_path, tmp_path / "t.groups", affected="L")
    want = gb.evaluate(scores, d, regime="ltr")
    for k in want:
        assert got[k] == pytest.approx(want[k], abs=1e-12)


def test_unjudged_queries_are_left_out_and_unjudged_items_count_as_not_relevant(tmp_path):
    d = RankingData(
        np.zeros((5, 1)), [1.0, 0.0, 1.0, 0.0, 1.0], [0, 3, 5], ["q1", "q2"],
        item_ids=["a", "b", "c", "a", "d"], groups=[1.0, 0.0, 1.0, 0.0, 1.0],
    )  # fmt: skip
    run = gb.write_run(tmp_path / "r.run", [0.9, 0.8, 0.7, 0.6, 0.5], d)
    (tmp_path / "q.qrels").write_text("q1 0 a 1\nq1 0 c 1\nq1 0 zz -2\n")  # b unjudged
    gb.write_groups(tmp_path / "g.groups", d)
    data, _ = run_data(run, tmp_path / "q.qrels", tmp_path / "g.groups")
    assert list(data.query_ids) == ["q1"] and list(data.labels) == [1.0, 0.0, 1.0]
    qrels = gb.read_qrels(tmp_path / "q.qrels")
    assert qrels.labels.tolist() == [1.0, 1.0, 0.0]
    assert qrels.unjudged.tolist() == [False, False, True]  # trec_eval: pooled, unjudged
    again = gb.read_qrels(qrels.write(tmp_path / "again.qrels"))
    assert again.labels.tolist() == [1.0, 1.0, 0.0]
    assert again.unjudged.tolist() == [False, False, True]


@pytest.mark.parametrize(
    ("name", "text", "line", "says"),
    [
        ("r.run", "1 Q0 a 1 0.5 t\n1 Q0 b 2 0.4\n", 2, "at least 6 fields .*, got 5"),
        ("r.run", "# my run\n1 Q0 a 1 0.5 t\n1 Q0 b 2 0.4\n", 3, "at least 6 fields .*, got 5"),
        ("r.run", "# my run\n\n1 Q0 a 1 0.5 t\n  \n1 Q0 b 2 x t\n", 5, "not a finite number"),
        ("r.run", "\n# my run\n1 Q0 a 1 0.5 t\n1 Q0 a 2 0.4 t\n", 4, "appears twice"),
        ("q.qrels", "# judged by\n1 0 a 1\n# round 2\n1 0 b 1 x\n", 4, "4 fields .*, got 5"),
        ("q.qrels", "# judged by\n1 0 a 1\n# round 2\n1 0 b\n", 4, "4 fields .*, got 3"),
        ("g.groups", "# g\na 1\nb 1 0\n", 3, "2 fields .* first line, got 3"),
        ("r.run", "1 Q0 a 1 0.5 t\n1 Q0 b 2 high t\n", 2, "not a finite number"),
        ("r.run", "1 Q0 a 1 0.5 t\n1 Q0 a 2 0.4 t\n", 2, "appears twice"),
        ("r.run", "1 Q0 a 1 0.5 t\n1 Q0 b 2\n", 2, "got 4"),
        ("q.qrels", "1 0 a 1\n1 0 b x\n", 2, "not a finite number"),
        ("g.groups", "a 1\nb 2\n", 2, "not a membership"),
    ],
)
def test_malformed_files_name_the_file_and_line(tmp_path, name, text, line, says):
    path = tmp_path / name
    path.write_text(text)
    reader = {"run": gb.read_run, "qrels": gb.read_qrels, "groups": gb.read_groups}
    with pytest.raises(DataFormatError, match=says) as err:
        reader[path.suffix[1:]](path)
    assert err.value.line == line and err.value.path == str(path)
    same = re.search(r"expected (?:at least )?(\d+) fields.*got (\d+)", str(err.value))
    assert same is None or same.group(1) != same.group(2), str(err.value)


#: trec_eval's own test files (tests/data/trec_eval/README.md: source and licence)
TREC_EVAL = Path(__file__).parent / "trec_eval"


def _lines(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines()]


def test_runs_keep_their_first_six_fields_and_the_last_tag_as_trec_eval_does():
    run = gb.read_run(TREC_EVAL / "results.trunc")  # lines of 7 and 9 fields
    want = {(f[0], f[2]): float(f[4]) for f in _lines(TREC_EVAL / "results.trunc")}
    q = np.repeat(run.query_ids, np.diff(run.qptr))
    assert dict(zip(zip(q, run.item_ids), run.scores.tolist())) == want
    assert list(run.query_ids) == ["301", "303"] and run.tag == "STANDARD"
    tags = _lines(TREC_EVAL / "results.test")
    assert gb.read_run(TREC_EVAL / "results.test").tag == tags[-1][5]  # tab-separated


def test_qrels_skip_comment_lines_but_not_a_hash_inside_a_field():
    plain = gb.read_qrels(TREC_EVAL / "qrels.test")
    commented = gb.read_qrels(TREC_EVAL / "qrels.test.with-comments")  # 3 '#' lines
    assert commented.item_ids.size == plain.item_ids.size == len(_lines(TREC_EVAL / "qrels.test"))
    differ = np.flatnonzero(commented.item_ids != plain.item_ids)
    assert [commented.item_ids[i] for i in differ] == ["CR#93E-1860"]  # a docno, not a comment
    np.testing.assert_array_equal(commented.labels, plain.labels)
    comments = gb.read_qrels(TREC_EVAL / "qrels.comment.test.gz")  # docnos holding '#'
    assert comments.item_ids.size == 5890 and all("#" in d for d in comments.item_ids[:20])


def test_gzip_blank_lines_tabs_and_leading_spaces(tmp_path):
    text = (TREC_EVAL / "results.test").read_bytes()
    (tmp_path / "r.run.gz").write_bytes(gzip.compress(text))
    lines = text.decode().splitlines()
    odd = "\n".join(["# a run", ""] + ["  " + x.replace("\t", " \t ") for x in lines] + ["", ""])
    (tmp_path / "odd.run").write_text(odd)
    plain = gb.read_run(TREC_EVAL / "results.test")
    for other in (gb.read_run(tmp_path / "r.run.gz"), gb.read_run(tmp_path / "odd.run")):
        np.testing.assert_array_equal(other.item_ids, plain.item_ids)
        np.testing.assert_array_equal(other.scores, plain.scores)
        np.testing.assert_array_equal(other.qptr, plain.qptr)
    (tmp_path / "broken.gz").write_bytes(gzip.compress(text)[:200])
    with pytest.raises(DataFormatError, match="gzip"):
        gb.read_run(tmp_path / "broken.gz")
    (tmp_path / "only.run").write_text("# nothing yet\n\n")
    with pytest.raises(DataFormatError, match="no run lines"):
        gb.read_run(tmp_path / "only.run")


def test_an_item_without_a_group_is_named(tmp_path, synthetic_test):
    d = synthetic_test
    run_path, qrels_path, _ = _write_all(tmp_path, np.arange(d.n_items, dtype=float), d)
    (tmp_path / "few.groups").write_text("nobody 1\n")
    with pytest.raises(DataFormatError, match="no group for item"):
        gb.evaluate_run(run_path, qrels_path, tmp_path / "few.groups")
    with pytest.raises(DataFormatError, match="no item has the affected label"):
        gb.evaluate_run(run_path, qrels_path, tmp_path / "few.groups", affected="L")


def test_odd_dataset_ids_are_refused_by_name_and_replaced_where_files_must_be_written():
    d = RankingData(np.zeros((3, 1)), [1.0, 0.0, 1.0], [0, 3], [7], item_ids=["a b", "c", "d"])
    with pytest.raises(ParameterError, match="item_ids"):
        gb.item_ids_of(d)
    assert list(gb.item_ids_of(with_usable_ids(d))) == ["7_0", "7_1", "7_2"]
    with pytest.raises(ParameterError, match="scores"):
        gb.write_run("never.run", [0.1, np.nan, 0.2], with_usable_ids(d))


def test_metric_names_in_the_ir_measures_style(synthetic_test):
    d = synthetic_test
    s = np.random.default_rng(3).random(d.n_items)
    a = gb.evaluate(s, d, regime="ltr", metrics=["nDCG@10", "Delta_EEL", "AWRF"])
    b = gb.evaluate(s, d, regime="ltr", metrics=["ndcg@10", "delta_eel", "awrf"])
    assert list(a) == ["nDCG@10", "Delta_EEL", "AWRF"] and list(a.values()) == list(b.values())


def test_cli_evaluates_a_run_and_exports_a_dataset(tmp_path, capsys, synthetic_test):
    d = synthetic_test
    paths = _write_all(tmp_path, np.random.default_rng(4).random(d.n_items), d)
    code = report_main(
        ["evaluate", "--run", str(paths[0]), "--qrels", str(paths[1]), "--groups", str(paths[2]),
         "--metrics", "nDCG@10,rho_dtr,delta_eel,awrf", "--out", str(tmp_path / "ev")]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    want = gb.evaluate_run(*paths, metrics=["nDCG@10", "rho_dtr", "delta_eel", "awrf"])
    for k, v in want.items():
        assert f"{v:8.4f}" in next(line for line in out.splitlines() if line.startswith(k))
    summary = pd.read_csv(tmp_path / "ev.csv").set_index("metric")["value"]
    assert summary["awrf"] == pytest.approx(want["awrf"], abs=1e-12)
    per_query = pd.read_csv(tmp_path / "ev_per_query.csv")
    assert len(per_query) == d.n_queries
    # a malformed file: one line naming it, a hint, exit code 2
    (tmp_path / "bad.run").write_text("1 Q0 a 1 0.5\n")
    code = report_main(
        ["evaluate", "--run", str(tmp_path / "bad.run"), "--qrels", str(paths[1]),
         "--groups", str(paths[2])]
    )  # fmt: skip
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and err[0].startswith("groupbias-report: error:") and "bad.run" in err[0]
    assert err[1].startswith("groupbias-report: hint:")
    assert report_main(["export", "synthetic", "--split", "test", "--out", str(tmp_path)]) == 0
    exported = gb.read_qrels(tmp_path / "synthetic_test.qrels")
    # the data `groupbias dataset=synthetic` loads: the options of its config file
    from groupbias.reporting.subcommands import config_params

    full = gb.load_dataset("synthetic", split="test", **config_params("synthetic"))
    np.testing.assert_array_equal(exported.labels, full.labels)
    assert gb.read_groups(tmp_path / "synthetic_test.groups").groups.size == full.n_items


@pytest.mark.parametrize("reader", ["run", "qrels", "groups"])
def test_utf16_and_non_utf8_files_are_named_with_their_line(tmp_path, reader):
    from groupbias.core.errors import DataFormatError
    from groupbias.data.trec import read_groups, read_qrels, read_run

    read = {"run": read_run, "qrels": read_qrels, "groups": read_groups}[reader]
    text = {
        "run": "1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0 t\n",
        "qrels": "1 0 a 1\n1 0 b 0\n",
        "groups": "a 1\nb 0\n",
    }[reader]
    p = tmp_path / "f"
    p.write_text(text, encoding="utf-16")
    with pytest.raises(DataFormatError, match="UTF-16") as info:
        read(p)
    assert info.value.line == 1 and str(p) in str(info.value)
    p.write_bytes(text.encode().replace(b"b", b"\xffb"))  # a byte that is not UTF-8, line 2
    with pytest.raises(DataFormatError, match="not UTF-8") as info:
        read(p)
    assert info.value.line == 2
    p.write_bytes(b"\xef\xbb\xbf" + text.encode())  # a UTF-8 byte-order mark is dropped
    assert read(p) is not None


def test_a_grade_that_is_not_a_whole_number_is_refused_naming_file_line_and_value(tmp_path):
    """Issue 39 item 2: a qrels grade 1 -> 1.5 was read silently (and trec_eval truncates
    it); it is a typed error naming the file, the line (comments counted) and the value."""
    from groupbias.core.errors import DataFormatError
    from groupbias.data.trec import read_qrels

    path = tmp_path / "q.qrels"
    path.write_text("# judged by hand\nq1 0 d1 1\nq1 0 d2 1.5\nq2 0 d3 2.0\n")
    with pytest.raises(DataFormatError) as info:
        read_qrels(path)
    err = info.value
    assert (err.line, err.field) == (3, "relevance")
    assert str(path) in str(err) and "'1.5'" in str(err) and "whole number" in str(err)
    path.write_text("q1 0 d1 1\nq1 0 d2 2.0\nq2 0 d3 -1\n")  # 2.0 is the grade 2
    assert read_qrels(path).labels.tolist() == [1.0, 2.0, 0.0]
