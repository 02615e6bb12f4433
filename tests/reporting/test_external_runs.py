"""`groupbias-report evaluate` on the bias measures of an external run: never `nan` (an
undefined measure is one error line naming why, exit 2), three-class M / F / N labels and
the gender word list of the seed papers, checked against values computed by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from groupbias.reporting.aggregate import main as report_main

#: four documents of one query, ranked d1..d4: (text, human label)
DOCS = {
    "d1": ("she and her sister", "F"),  # F terms 2, M 0, length 4
    "d2": ("he met him", "M"),  # M 2, length 3
    "d3": ("the weather", "N"),  # none, length 2
    "d4": ("he said", "M"),  # M 1, length 2
}


@pytest.fixture
def files(tmp_path):
    (tmp_path / "r.run").write_text(
        "".join(f"q1 Q0 {d} {i + 1} {4 - i}.0 t\n" for i, d in enumerate(DOCS))
    )
    (tmp_path / "q.qrels").write_text("q1 0 d1 1\nq1 0 d3 1\n")
    (tmp_path / "g.groups").write_text("".join(f"{d} {lab}\n" for d, (_, lab) in DOCS.items()))
    (tmp_path / "c.tsv").write_text("".join(f"{d}\t{t}\n" for d, (t, _) in DOCS.items()))
    (tmp_path / "w.txt").write_text("he,m\nhim,m\nshe,f\nher,f\n")
    return tmp_path


def _evaluate(files, *extra, out="e"):
    return report_main(
        ["evaluate", "--run", str(files / "r.run"), "--qrels", str(files / "q.qrels"),
         "--groups", str(files / "g.groups"), "--out", str(files / out), *extra]
    )  # fmt: skip


def _means(files, out="e") -> dict:
    return pd.read_csv(files / f"{out}.csv").set_index("metric")["value"].to_dict()


def test_nfairr_on_two_groups_is_refused_not_nan(files, capsys):
    """With hard two-group labels no document is neutral: NFaiRR has no value on any
    query; once printed as `nan` with exit 0."""
    assert _evaluate(files, "--affected", "F", "--metrics", "ndcg@10,nfairr@10") == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert "nan" not in out and len(lines) == 2 and "hint:" in lines[1]
    assert "nfairr@10" in lines[0] and "neutral" in lines[0] and "--classes" in lines[0]


def test_three_class_labels_make_n_neutral(files, capsys):
    """--classes M,F: d3 (N) is the only neutral document, at rank 3 of 4. By hand:
    FaiRR = 1/log2(4) = 0.5, the ideal puts it first (1), NFaiRR = 0.5; the affected group
    of NDCG's groups is M (the first class)."""
    assert _evaluate(files, "--classes", "M,F", "--metrics", "nfairr@10,ndcg@10") == 0
    got = _means(files)
    assert got["nfairr@10"] == pytest.approx(0.5, abs=1e-12)
    # nDCG@10 (trec_eval: linear gains, ideal d1, d3): (1 + 1/log2 4) / (1 + 1/log2 3)
    assert got["ndcg@10"] == pytest.approx(1.5 / (1 + 1 / math.log2(3)), abs=1e-12)
    assert "nan" not in capsys.readouterr().out


def test_word_list_gives_the_seed_papers_nfairr_and_arab(files):
    """--words/--corpus: term counts (M, F) d1 (0, 2), d2 (2, 0), d3 (0, 0), d4 (1, 0).
    NFaiRR, τ = 1: ω = 0, 0, 1, 1 (d4 has a single term), FaiRR = 1/2 + 1/log2 5, ideal
    1 + 1/log2 3. ARaB (tf: ln(1 + count), M − F), T = 4, weights (H_4 − H_{r−1}) / 4 =
    25/48, 13/48, 7/48, 3/48: (−12 ln 3 + 3 ln 2) / 48."""
    extra = ["--words", str(files / "w.txt"), "--corpus", str(files / "c.tsv")]
    metrics = "nfairr@10,arab@10,texfair@10,ndcg@10"
    assert _evaluate(files, "--affected", "F", *extra, "--metrics", metrics) == 0
    got = _means(files)
    want = (0.5 + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert got["nfairr@10"] == pytest.approx(want, abs=1e-12)
    assert got["arab@10"] == pytest.approx((-12 * math.log(3) + 3 * math.log(2)) / 48, abs=1e-12)
    assert 0.0 <= got["texfair@10"] <= 1.0
    per_query = pd.read_csv(files / "e_per_query.csv")
    assert per_query["query"].tolist() == ["q1"] and per_query.notna().all().all()


def test_words_without_corpus_is_one_line(files, capsys):
    assert _evaluate(files, "--affected", "F", "--words", str(files / "w.txt")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "--words/--corpus" in err[0]


def test_a_binary_word_list_is_one_line_naming_it(files, capsys):
    """--words given a binary file (here bytes of a compiled program): once a
    UnicodeDecodeError traceback; now one line naming the file and line, exit 2."""
    binary = files / "w.bin"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(128, 256)) + b"\nhe,m\n")
    extra = ["--words", str(binary), "--corpus", str(files / "c.tsv")]
    assert _evaluate(files, "--affected", "F", *extra, "--metrics", "nfairr@10") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "Traceback" not in err[0]
    assert str(binary) in err[0] and "line 1" in err[0] and "not UTF-8" in err[0]


@pytest.mark.slow
@pytest.mark.realdata
def test_a_bm25_run_of_grep_biasir_scores_as_retrieval_fairness_does(
    grep_root, gender_wordlist, tmp_path, monkeypatch
):
    """A BM25 top-10 run of Grep-BiasIR written as a TREC file and evaluated by the command
    on the exported labels, the word list and the documents' text: NFaiRR, ARaB and CWEx
    as experiment=retrieval_fairness computes them on the collection itself (RunJudge over
    the TextCollection's own ranking data, not the run file)."""
    import dataclasses

    import numpy as np

    from groupbias.data.datasets import load_dataset
    from groupbias.pipelines.retrieval import LEXICON_METRICS, RunJudge
    from groupbias.retrieval.bm25 import BM25Index
    from groupbias.retrieval.labels import (
        GENDER_CLASSES,
        LexiconLabeller,
        load_gender_wordlist,
    )

    monkeypatch.setenv("GROUPBIAS_GREP_BIASIR", str(grep_root))
    c = load_dataset("grep_biasir", split="test")
    run = BM25Index(c.texts).search(c.queries, k=10, on_empty="skip")
    # Grep-BiasIR's documents come in gendered copies of one text: BM25 ties them, and a run
    # file's tied scores share their ranks' mean weight where RunJudge takes the run's order;
    # scores 10, 9, ..., 1 make the order the scores' own
    run = dataclasses.replace(run, scores=(11.0 - run.ranks()).astype(float))
    run.to_trec(query_ids=c.query_ids, doc_ids=c.doc_ids).write(tmp_path / "bm25.run")
    (tmp_path / "c.tsv").write_text(
        "".join(f"{d}\t{' '.join(t.split())}\n" for d, t in zip(c.doc_ids, c.texts))
    )
    assert report_main(["export", "grep_biasir", "--out", str(tmp_path)]) == 0
    args = [
        "evaluate", "--run", str(tmp_path / "bm25.run"),
        "--qrels", str(tmp_path / "grep_biasir_test.qrels"),
        "--groups", str(tmp_path / "grep_biasir_test.groups"), "--classes", "M,F",
        "--words", str(gender_wordlist), "--corpus", str(tmp_path / "c.tsv"),
        "--metrics", "nfairr@10,arab@10,cwex@10", "--out", str(tmp_path / "e"),
    ]  # fmt: skip
    assert report_main(args) == 0
    got = pd.read_csv(tmp_path / "e_per_query.csv", dtype={"query": str}).set_index("query")
    terms = LexiconLabeller(load_gender_wordlist(gender_wordlist)).counts(list(c.texts))
    judge = RunJudge(c, "gender", GENDER_CLASSES, "N", terms.counts, terms.lengths, k=10)
    metrics = [
        {"name": "nfairr", "key": "nfairr@10", "k": 10, **LEXICON_METRICS["nfairr"]},
        {"name": "arab", "key": "arab@10", "k": 10, **LEXICON_METRICS["arab"]},
        {"name": "cwex", "key": "cwex@10", "k": 10, "membership": "gendered"},
    ]
    want = judge.per_query(run, metrics)
    qids = np.asarray(c.query_ids).astype(str)
    for key, values in want.items():
        np.testing.assert_allclose(got.loc[qids, key].to_numpy(), values, rtol=0, atol=1e-12)
