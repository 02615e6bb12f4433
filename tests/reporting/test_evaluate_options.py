"""`groupbias-report evaluate` with trec_eval's options (-c, -l N, -q) and its output
format, on trec_eval's own test files (tests/data/trec_eval): the lines it prints are
trec_eval's, character for character, for every measure both name."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from groupbias.reporting.aggregate import main as report_main

DATA = Path(__file__).parents[1] / "data" / "trec_eval"


def _evaluate(capsys, *args: str) -> tuple[int, str, str]:
    code = report_main(["evaluate", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("out", "qrels", "run", "options"),
    [
        ("out.test.aq", "qrels.test", "results.test", ["-q"]),
        ("out.test.aqc", "qrels.test", "results.trunc", ["-q", "-c"]),
        ("out.test.aql", "qrels.rel_level", "results.test", ["-q", "-l", "2"]),
        ("out.test.aqc", "qrels.test", "results.trunc", ["--per-query", "--complete"]),
    ],
)
def test_trec_eval_format_prints_trec_eval_s_lines(capsys, out, qrels, run, options):
    code, printed, _ = _evaluate(
        capsys, "--run", str(DATA / run), "--qrels", str(DATA / qrels),
        "--metrics", "map,ndcg", "--format", "trec_eval", *options,
    )  # fmt: skip
    assert code == 0
    theirs = [
        line
        for line in (DATA / out).read_text().splitlines()
        if line.split()[0] in ("map", "ndcg", "runid", "num_q")
    ]
    ours = printed.splitlines()
    # trec_eval prints each query's measures in its own measure order, then the summary
    by_query = sorted(ours[:-4], key=lambda line: line.split()[1])
    assert sorted(by_query) == sorted(t for t in theirs if "\tall\t" not in t)
    assert ours[-4:] == [t for t in theirs if "\tall\t" in t]


#: trec_eval's names of the measures the catalogue offers beside map and ndcg
BOTH_NAME = (
    "recip_rank,Rprec,bpref,P_5,P_1000,recall_10,success_1,success_10,ndcg_cut_10,map_cut_100"
)


@pytest.mark.parametrize(
    ("out", "qrels", "run", "options"),
    [
        ("out.test.aqc", "qrels.test", "results.trunc", ["-q", "-c"]),
        ("out.test.aqcM", "qrels.test", "results.trunc", ["-q", "-c", "-M", "100"]),
        ("out.test.aql", "qrels.rel_level", "results.test", ["-q", "-l", "2"]),
    ],
)
def test_every_measure_both_name_prints_trec_eval_s_lines(capsys, out, qrels, run, options):
    """P, recall, R-precision, bpref, Success and the cut measures under -c, -M and -l:
    every line (each query's and the means) as trec_eval prints it."""
    code, printed, _ = _evaluate(
        capsys, "--run", str(DATA / run), "--qrels", str(DATA / qrels),
        "--metrics", BOTH_NAME, "--format", "trec_eval", *options,
    )  # fmt: skip
    assert code == 0
    names = {*BOTH_NAME.split(","), "runid", "num_q"}
    theirs = [line for line in (DATA / out).read_text().splitlines() if line.split()[0] in names]
    assert sorted(printed.splitlines()) == sorted(theirs) and len(theirs) == (3 + 1) * 10 + 2


def test_without_q_only_the_means_and_the_table_format_lists_each_query(capsys, tmp_path):
    files = ["--run", str(DATA / "results.trunc"), "--qrels", str(DATA / "qrels.test")]
    code, printed, _ = _evaluate(capsys, *files, "--metrics", "map", "--format", "trec_eval")
    assert code == 0 and [line.split("\t")[1] for line in printed.splitlines()] == ["all"] * 3
    code, printed, _ = _evaluate(
        capsys, *files, "--metrics", "map,ndcg", "-c", "-q", "--out", str(tmp_path / "e")
    )
    rows: dict[str, list[str]] = {}  # the first line of each name: means, then queries
    for line in printed.splitlines():
        rows.setdefault(line.split()[0], line.split()[1:])
    assert rows["map"] == ["0.1016", "3"] and rows["302"] == ["0.0000", "0.0000"]
    per_query = pd.read_csv(tmp_path / "e_per_query.csv", dtype={"query": str})
    assert per_query["query"].tolist() == ["301", "303", "302"]  # the run's, then -c's
    np.testing.assert_allclose(per_query["map"], [0.0324, 0.2723, 0.0], atol=0.5e-4)


def test_options_the_evaluation_cannot_use_are_refused(capsys):
    files = ["--run", str(DATA / "results.test"), "--qrels", str(DATA / "qrels.rel_level")]
    code, _, err = _evaluate(capsys, *files, "-l", "2", "--semantics", "candidates")
    assert code == 2 and "relevance_level" in err and "trec_eval" in err
    code, _, err = _evaluate(capsys, *files, "-l", "0")
    assert code == 2 and "relevance_level" in err
    code, _, err = _evaluate(capsys, *files, "--metrics", "ndcg@10,rho_dtr")
    assert code == 2 and "groups" in err.splitlines()[0]
    code, _, err = _evaluate(capsys, "--run", str(DATA / "results.test"), "--metrics", "map")
    assert code == 2 and "--qrels" in err


def test_max_docs_evaluates_each_query_s_first_documents(capsys):
    code, printed, _ = _evaluate(
        capsys, "--run", str(DATA / "results.trunc"), "--qrels", str(DATA / "qrels.test"),
        "--metrics", "map,ndcg", "-c", "-q", "-M", "100", "--format", "trec_eval",
    )  # fmt: skip
    assert code == 0
    theirs = {
        line
        for line in (DATA / "out.test.aqcM").read_text().splitlines()
        if line.split()[0] in ("map", "ndcg", "runid", "num_q")
    }
    assert set(printed.splitlines()) == theirs
    code, _, err = _evaluate(capsys, "--run", str(DATA / "results.trunc"), "--qrels",
                             str(DATA / "qrels.test"), "--metrics", "map", "-M", "0")  # fmt: skip
    assert code == 2 and "max_docs" in err
