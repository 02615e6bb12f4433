"""The queries of ``experiment=fair_qr`` on TREC 2020 text (docs/retrieval.md, "The queries"):
nDCG@20 and AWRF@20 are both defined for the 196 queries that have a relevant document (all
200) and retrieve something; the target counts every relevant document, also those the
run misses. Checked against the track's own files, read here without our loaders."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

pytestmark = [pytest.mark.realdata, pytest.mark.slow]  # 5 s: the index and the judge

#: the TREC 2020 queries with no term in the corpus after analysis: they retrieve nothing
EMPTY = {"109411", "30623", "64039", "132049"}
#: the queries whose BM25 top 20 holds no relevant document (AWRF was undefined for them
#: while its target counted only the relevant documents in the top 20: 189 queries)
NO_RELEVANT_IN_TOP20 = {"104830", "96265", "22465", "78466", "2728", "30631", "31412"}


def _track_relevant(root) -> dict[str, set[str]]:
    """Every query's relevant papers that the corpus subset has, from the track's files."""
    ydir = root / "2020"
    with open(ydir / "corpus-subset-for-queries.papers.csv", newline="") as f:
        corpus = {r["paper_sha"].strip() for r in csv.DictReader(f)}
    out = {}
    with open(ydir / "TREC-Fair-Ranking-training-sample.json") as f:
        for line in f:
            q = json.loads(line)
            out[str(q["qid"])] = {
                d["doc_id"] for d in q["documents"] if d["relevance"] > 0 and d["doc_id"] in corpus
            }
    return out


def test_fair_qr_averages_over_the_queries_with_a_relevant_and_a_retrieved_document(trec_root):
    from data_loaders.text_collections import load_trec_fair_text
    from experiments.fair_qr import METRICS, same_queries
    from groupbias.pipelines.retrieval import RunJudge
    from groupbias.retrieval.bm25 import Analyzer, BM25Index

    c = load_trec_fair_text(trec_root, 2020)
    index = BM25Index(c.texts, k1=1.2, b=0.75, analyzer=Analyzer())  # the experiment's BM25
    run = index.search(c.queries, k=1000, on_empty="skip")
    values = same_queries(RunJudge(c, "h_class", ("L", "H"), None, k=20).per_query(run, METRICS))
    defined = ~np.isnan(values["awrf@20"])
    ids = [str(q) for q in c.query_ids]
    relevant = _track_relevant(trec_root)
    # the rule: a relevant document in the corpus and at least one retrieved document
    rule = np.array([bool(relevant[q]) for q in ids]) & (np.diff(run.qptr) > 0)
    assert np.array_equal(defined, rule)
    assert int(defined.sum()) == 196 and len(ids) == 200
    assert {q for q, d in zip(ids, defined) if not d} == EMPTY
    assert np.array_equal(defined, ~np.isnan(values["ndcg@20"]))
    # the 7 queries the old rule dropped have no relevant document in BM25's top 20
    top = run.top(20)
    hits = np.bincount(top.query_index(), c.grades(top.query_index(), top.docs) > 0, 200)
    assert {q for q, h in zip(ids, hits) if h == 0} == NO_RELEVANT_IN_TOP20 | EMPTY
