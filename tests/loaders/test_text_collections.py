"""Text collections: the readers of the formats users bring, the Grep-BiasIR and TREC Fair
text loaders, TREC run files, and BM25 against a direct formula over the term counts."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

from groupbias.core.errors import DataFormatError, ParameterError
from groupbias.data.text import (
    Run,
    judgements_in,
    load_text_collection,
    read_collection_jsonl,
    read_collection_tsv,
    read_item_groups,
    read_queries,
)
from groupbias.data.trec import read_qrels, read_run
from groupbias.retrieval.bm25 import Analyzer, BM25Index


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_collection_tsv_reads_ids_and_text_and_names_a_line_without_a_tab(tmp_path):
    ids, texts = read_collection_tsv(_write(tmp_path / "c.tsv", "d1\tshe runs\n\nd2\the\twalks\n"))
    assert ids == ["d1", "d2"] and texts == ["she runs", "he walks"]
    with pytest.raises(DataFormatError, match=r"c2.tsv, line 2, field 'docid'.*no tab"):
        read_collection_tsv(_write(tmp_path / "c2.tsv", "d1\tok\nd2 no tab here\n"))
    with pytest.raises(DataFormatError, match="line 2.*repeats line 1"):
        read_collection_tsv(_write(tmp_path / "c3.tsv", "d1\ta\nd1\tb\n"))


def test_collection_jsonl_joins_title_and_contents_and_names_the_missing_field(tmp_path):
    p = _write(
        tmp_path / "c.jsonl",
        '{"id": "a", "title": "Mothers", "contents": "and sons"}\n{"id": "b", "text": "x"}\n',
    )
    assert read_collection_jsonl(p) == (["a", "b"], ["Mothers and sons", "x"])
    bad = _write(tmp_path / "bad.jsonl", '{"id": "a", "contents": "x"}\n{"contents": "y"}\n')
    with pytest.raises(DataFormatError, match=r"line 2, field 'docid'"):
        read_collection_jsonl(bad)
    with pytest.raises(DataFormatError, match="line 1: invalid JSON"):
        read_collection_jsonl(_write(tmp_path / "b2.jsonl", "{oops\n"))


def test_queries_from_tsv_and_trec_topics(tmp_path):
    assert read_queries(_write(tmp_path / "q.tsv", "1\tnurse salary\n")) == (
        ["1"],
        ["nurse salary"],
    )
    topics = _write(
        tmp_path / "topics.txt",
        "<top>\n<num> Number: 301\n<title> International Organized Crime\n"
        "<desc> Description:\nIdentify organizations.\n<narr> Narrative:\nA relevant doc.\n"
        "</top>\n<top>\n<num> Number: 302 <title> Poliomyelitis and Post-Polio\n</top>\n",
    )
    assert read_queries(topics) == (
        ["301", "302"],
        ["International Organized Crime", "Poliomyelitis and Post-Polio"],
    )
    with pytest.raises(DataFormatError, match="topic 302 has no <desc>"):
        read_queries(topics, field="desc")


def test_qrels_unknown_documents_raise_or_are_counted(tmp_path):
    p = _write(tmp_path / "qrels", "1 0 d1 2\n1 0 d9 1\n2 0 d2 0\n")
    ids = {"doc_ids": ["d1", "d2"], "query_ids": ["1", "2"]}
    with pytest.raises(DataFormatError, match=r"qrels, line 2, field 'docno'.*'d9'"):
        judgements_in(read_qrels(p), **ids, path=p)
    qi, di, g, report = judgements_in(read_qrels(p), **ids, unknown_docs="skip")
    assert qi.tolist() == [0, 1] and di.tolist() == [0, 1] and g.tolist() == [2.0, 0.0]
    assert report.skipped_unknown_doc == 1 and report.skipped_unknown_query == 0
    with pytest.raises(DataFormatError, match="line 1, field 'relevance'"):
        read_qrels(_write(tmp_path / "q2", "1 0 d1 x\n"))
    with pytest.raises(DataFormatError, match="4 fields.*got 3"):
        read_qrels(_write(tmp_path / "q3", "1 d1 1\n"))


def test_item_groups_file(tmp_path):
    assert read_item_groups(_write(tmp_path / "g.csv", "item,group\nd1,L\nd2,H\n")) == {
        "d1": "L",
        "d2": "H",
    }
    with pytest.raises(DataFormatError, match="line 2"):
        read_item_groups(_write(tmp_path / "g2.tsv", "d1\tL\nd2\n"))


def _tiny(tmp_path, groups=True):
    _write(tmp_path / "c.tsv", "d1\tshe is a nurse\nd2\the is a nurse\nd3\tthe nurse salary\n")
    _write(tmp_path / "q.tsv", "q1\tnurse salary\nq2\twho is she\n")
    _write(tmp_path / "qrels", "q1 0 d3 1\nq1 0 d1 1\nq2 0 d1 1\n")
    if groups:
        _write(tmp_path / "g.tsv", "d1\tF\nd2\tM\n")
    return load_text_collection(
        tmp_path / "c.tsv",
        tmp_path / "q.tsv",
        tmp_path / "qrels",
        groups=tmp_path / "g.tsv" if groups else None,
        group_label="gender",
    )


def test_load_text_collection_and_run_files_round_trip(tmp_path):
    c = _tiny(tmp_path)
    assert c.n_docs == 3 and c.n_queries == 2
    assert c.label("gender").tolist() == ["F", "M", ""]
    assert c.membership("gender", ["M", "F"]).tolist() == [[0, 1], [1, 0], [0, 0]]
    run = BM25Index(c.texts).search(c.queries, k=10, tag="bm25")
    ids = {"query_ids": c.query_ids, "doc_ids": c.doc_ids}
    path = run.to_trec(**ids).write(tmp_path / "run.txt")
    first = path.read_text().splitlines()[0].split()
    assert first[:4] == ["q1", "Q0", "d3", "1"] and first[5] == "bm25"
    back = Run.from_trec(read_run(path), **ids)
    assert np.array_equal(back.qptr, run.qptr) and np.array_equal(back.docs, run.docs)
    assert np.array_equal(back.scores, run.scores)  # every digit written
    _write(tmp_path / "bad.txt", "q1 Q0 d7 1 2.0 x\n")
    with pytest.raises(DataFormatError, match=r"bad.txt.*field 'docno'.*'d7'"):
        Run.from_trec(read_run(tmp_path / "bad.txt"), **ids, path=tmp_path / "bad.txt")


def test_ranking_data_of_a_run_keeps_its_order_and_completes_the_judged_view(tmp_path):
    c = _tiny(tmp_path)
    # q1 retrieves d2 only (non-relevant); q2 retrieves d1
    run = Run(np.array([0, 1, 2]), np.array([1, 0]), np.array([3.0, 2.0]))
    d = c.ranking_data(run, k=2)
    assert d.item_ids.tolist() == [1, 0] and d.labels.tolist() == [0.0, 1.0]
    j = c.ranking_data(run, k=2, judged=True)
    # q1: d2 at rank 1, a filler at rank 2, then the two relevant documents it missed (with
    # their positions, for a group target over all relevant documents)
    assert j.qptr.tolist() == [0, 4, 5]
    assert j.labels.tolist() == [0.0, 0.0, 1.0, 1.0, 1.0]
    assert j.item_ids.tolist() == [1, -1, 0, 2, 0]
    assert np.all(np.diff(j.features[:4, 0]) < 0)


def test_analyzer_states_its_tokenisation():
    a = Analyzer()
    assert a.analyze(["The women's Running-shoes, 2 pairs"]) == [
        ["women", "run", "shoe", "2", "pair"]
    ]
    assert Analyzer(stopwords="none", stemmer="none").analyze(["The cats"]) == [["the", "cats"]]


def test_an_empty_query_after_analysis_raises_or_is_counted():
    ix = BM25Index(["she is a nurse", "he is a doctor"])
    with pytest.raises(ParameterError, match=r"queries\[1\]"):
        ix.search(["nurse", "the of"], k=5)
    run = ix.search(["nurse", "the of", "zebra"], k=5, on_empty="skip")
    assert run.meta["empty_queries"] == [1, 2] and np.diff(run.qptr).tolist() == [1, 0, 0]


def _direct_bm25(tokens, k1, b):
    """BM25 (Lucene variant) straight from the term counts: {(query terms) -> scores}."""
    n = len(tokens)
    tfs = [Counter(t) for t in tokens]
    df = Counter(w for tf in tfs for w in tf)
    avgdl = sum(len(t) for t in tokens) / n

    def score(query_terms, d):
        s = 0.0
        tf = tfs[d]
        for w, qw in Counter(query_terms).items():
            if w in tf:
                idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                norm = k1 * (1 - b + b * len(tokens[d]) / avgdl)
                s += qw * idf * tf[w] / (tf[w] + norm)
        return s

    return score


@pytest.mark.realdata
@pytest.mark.parametrize("k1,b", [(0.9, 0.4), (1.2, 0.75)])
def test_bm25_equals_the_direct_formula_on_grep_biasir(grep_root, k1, b):
    from data_loaders.text_collections import load_grep_biasir

    c = load_grep_biasir(grep_root)
    ix = BM25Index(c.texts, k1=k1, b=b)
    tokens = ix.analyzer.analyze(c.texts)
    qtokens = ix.analyzer.analyze(c.queries)
    score = _direct_bm25(tokens, k1, b)
    run = ix.search(c.queries, k=None)
    for q in range(c.n_queries):
        docs = run.docs[run.qptr[q] : run.qptr[q + 1]]
        expected = np.array([score(qtokens[q], d) for d in range(c.n_docs)])
        # every document with a query term is retrieved, none other, with the formula's score
        assert set(docs.tolist()) == set(np.flatnonzero(expected > 0).tolist())
        np.testing.assert_allclose(
            run.scores[run.qptr[q] : run.qptr[q + 1]], expected[docs], rtol=0, atol=1e-6
        )
        assert np.all(np.diff(run.scores[run.qptr[q] : run.qptr[q + 1]]) <= 0)


@pytest.mark.realdata
def test_grep_biasir_loader_reads_the_real_files(grep_root):
    from data_loaders.text_collections import load_grep_biasir

    c = load_grep_biasir(grep_root)
    assert (c.n_docs, c.n_queries, int(c.qrels.sum())) == (702, 117, 351)
    g = Counter(c.label("gender").tolist())
    assert g == {"M": 232, "F": 232, "N": 233, "": 5} and c.meta["both_rows"] == 5
    assert Counter(load_grep_biasir(grep_root, both="neutral").label("gender").tolist())["N"] == 238
    with pytest.raises(DataFormatError, match="Sex & Relationship.csv, line .*content_gender"):
        load_grep_biasir(grep_root, both="raise")
    # the text: title + document (default), either alone
    alone = {t: load_grep_biasir(grep_root, text=t).texts for t in ("document", "title")}
    assert all(
        full == f"{title} {doc}"
        for full, title, doc in zip(c.texts, alone["title"], alone["document"])
    )
    with pytest.raises(ParameterError, match="text"):
        load_grep_biasir(grep_root, text="body")


@pytest.mark.realdata
def test_trec_fair_text_has_h_l_labels_and_counts_what_it_drops(trec_root):
    from data_loaders.text_collections import load_trec_fair_text

    c = load_trec_fair_text(trec_root, 2020)
    assert c.n_queries == 200 and c.n_docs > 4000
    assert set(c.label("h_class").tolist()) <= {"H", "L", ""}
    # every judgement is kept or counted
    assert c.qrels.nnz + c.meta["judgements_without_text"] == 4826


def _anserini_available() -> str | None:
    try:
        import pyserini  # noqa: F401
    except Exception as exc:
        return f"pyserini not importable ({type(exc).__name__}: {exc})"
    java = shutil.which("java")
    if java is None:
        return "no java on PATH"
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    major = int(out.split('"')[1].split(".")[0]) if '"' in out else 0
    return None if major >= 21 else f"pyserini needs JDK 21, found {out.splitlines()[0]}"


@pytest.mark.realdata
def test_bm25s_and_anserini_agree_on_grep_biasir(grep_root, tmp_path):
    reason = _anserini_available()
    if reason:
        pytest.skip(reason)
    import json

    from data_loaders.text_collections import load_grep_biasir
    from groupbias.retrieval.bm25 import PyseriniSearcher

    c = load_grep_biasir(grep_root)
    docs = tmp_path / "docs"
    docs.mkdir()
    with open(docs / "c.jsonl", "w") as fh:
        for i, t in zip(c.doc_ids, c.texts):
            fh.write(json.dumps({"id": i, "contents": t}) + "\n")
    subprocess.run(
        ["python", "-m", "pyserini.index.lucene", "--collection", "JsonCollection",
         "--input", str(docs), "--index", str(tmp_path / "idx"),
         "--generator", "DefaultLuceneDocumentGenerator", "--threads", "1"],
        check=True,
    )  # fmt: skip
    ours = BM25Index(c.texts).search(c.queries, k=10)
    theirs = PyseriniSearcher(str(tmp_path / "idx")).search(c.queries, doc_ids=c.doc_ids, k=10)
    same = [
        set(ours.docs[ours.qptr[q] : ours.qptr[q] + 5])
        == set(theirs.docs[theirs.qptr[q] : theirs.qptr[q] + 5])
        for q in range(c.n_queries)
    ]
    assert np.mean(same) > 0.9  # Lucene's lossy length norms reorder near-ties


@pytest.mark.slow  # a subprocess or a whole run: seconds
def test_term_ids_do_not_depend_on_the_process_hash_seed():
    script = (
        "from groupbias.retrieval.bm25 import BM25Index\n"
        "ix = BM25Index(['zebra apple mango', 'kiwi apple banana cherry'])\n"
        "print(sorted(ix.vocab.items(), key=lambda kv: kv[1]))\n"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(outs) == 1 and "('appl', 0)" in outs.pop()
