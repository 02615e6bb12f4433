"""RM3 against a hand computation, bias-aware feedback (seed 003 Eq. 1), and λ = 0 equal to
plain RM3 exactly."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from groupbias.core.errors import ParameterError
from groupbias.data.text import Run
from groupbias.retrieval.bm25 import Analyzer, BM25Index
from groupbias.retrieval.expansion import RM3, debiased_feedback, expansion_terms

DOCS = [
    "nurse salary nurse pay",
    "nurse she hospital",
    "doctor salary he",
    "garden flowers",
    "nurse pay rise union",
]
RAW = Analyzer(stopwords="none", stemmer="none")


def _hand_rm3(docs, query, fb, fb_terms, alpha, weights):
    """RM3 straight from the definitions, with Python dicts."""
    tokens = [d.split() for d in docs]
    rel: Counter = Counter()
    for d, w in zip(fb, weights):
        tf = Counter(tokens[d])
        for t, c in tf.items():
            rel[t] += w * c / len(tokens[d])
    total = sum(rel.values())
    rel = Counter({t: v / total for t, v in rel.items()})
    top = sorted(rel.items(), key=lambda kv: (-kv[1], kv[0]))[:fb_terms]
    s = sum(v for _, v in top)
    q = Counter(query.split())
    out: Counter = Counter()
    for t, c in q.items():
        out[t] += alpha * c / sum(q.values())
    for t, v in top:
        out[t] += (1 - alpha) * v / s
    return dict(out)


def _as_dict(index, row):
    vocab = {j: t for t, j in index.vocab.items()}
    return {vocab[j]: v for j, v in zip(row.indices, row.data)}


def test_rm3_equals_the_hand_computation():
    ix = BM25Index(DOCS, analyzer=RAW)
    first = ix.search(["nurse pay"], k=10)
    rm3 = RM3(fb_terms=3, fb_docs=2, original_query_weight=0.4)
    got = _as_dict(ix, rm3.expand(ix, ["nurse pay"], first)[0])
    fb = first.docs[:2].tolist()
    want = _hand_rm3(DOCS, "nurse pay", fb, 3, 0.4, first.scores[:2].tolist())
    assert got.keys() == want.keys()
    for t in want:
        assert got[t] == pytest.approx(want[t], abs=1e-12)
    # Eq. 4: query-likelihood weights prod_t P(t|d); a document missing "pay" weighs 0
    ql = RM3(fb_terms=3, fb_docs=3, original_query_weight=0.4, doc_weight="query_likelihood")
    fb3 = first.docs[:3].tolist()
    lik = [
        np.prod([Counter(DOCS[d].split())[t] / len(DOCS[d].split()) for t in ("nurse", "pay")])
        for d in fb3
    ]
    want = _hand_rm3(DOCS, "nurse pay", fb3, 3, 0.4, lik)
    got = _as_dict(ix, ql.expand(ix, ["nurse pay"], first)[0])
    assert got == pytest.approx(want)


def test_kl_term_selection_follows_eq_2():
    ix = BM25Index(DOCS, analyzer=RAW)
    first = ix.search(["nurse"], k=10)
    rm3 = RM3(fb_terms=2, fb_docs=3, term_selection="kl", original_query_weight=0.0)
    got = _as_dict(ix, rm3.expand(ix, ["nurse"], first)[0])
    tokens = [d.split() for d in DOCS]
    cf = Counter(t for ts in tokens for t in ts)
    n = sum(cf.values())
    score: Counter = Counter()
    for d in first.docs[:3]:
        tf = Counter(tokens[d])
        for t, c in tf.items():
            p = c / len(tokens[d])
            score[t] += p * np.log(p / (cf[t] / n))
    top = {t for t, _ in sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))[:2]}
    assert set(got) == top and sum(got.values()) == pytest.approx(1.0)


def test_debiased_feedback_reranks_the_pool_by_eq_1():
    run = Run(np.array([0, 4]), np.array([0, 1, 2, 3]), np.array([4.0, 3.0, 2.0, 1.0]))
    bias = np.array([1.0, 0.0, 1.0, 0.0])
    # λ = 0: the retrieval order; λ = 1: the least biased first (ties by retrieval order)
    assert debiased_feedback(run, bias, 0.0, pool=4, fb_docs=2).docs.tolist() == [0, 1]
    assert debiased_feedback(run, bias, 1.0, pool=4, fb_docs=2).docs.tolist() == [1, 3]
    # λ = 0.5: rel scaled to [1, 2/3, 1/3, 0]; 0.5 rel − 0.5 bias = [0, 1/3, −1/3, 0]
    fb = debiased_feedback(run, bias, 0.5, pool=4, fb_docs=3)
    assert fb.docs.tolist() == [1, 0, 3] and fb.scores.tolist() == [3.0, 4.0, 1.0]
    with pytest.raises(ParameterError, match="bias"):
        debiased_feedback(run, np.array([2.0, 0, 0, 0]), 0.5, pool=4, fb_docs=2)


def test_lambda_zero_is_plain_rm3_exactly():
    ix = BM25Index(DOCS * 3, analyzer=RAW)
    queries = ["nurse pay", "salary", "flowers nurse"]
    first = ix.search(queries, k=20)
    rm3 = RM3(fb_terms=4, fb_docs=3)
    plain = rm3.search(ix, queries, first, k=20)
    bias = np.tile([0.0, 1.0, 1.0, 0.0, 0.5], 3)
    fb = debiased_feedback(first, bias, 0.0, pool=10, fb_docs=3)
    ours = rm3.search(ix, queries, fb, k=20)
    assert np.array_equal(ours.docs, plain.docs) and np.array_equal(ours.scores, plain.scores)
    assert (ours.meta["expanded"] != plain.meta["expanded"]).nnz == 0


def test_biased_expansion_terms_are_counted_and_weighed():
    ix = BM25Index(DOCS, analyzer=RAW)
    queries = ["nurse"]
    expanded = RM3(fb_terms=5, fb_docs=3).expand(ix, queries, ix.search(queries, k=10))
    et = expansion_terms(ix, queries, expanded, ["she", "he"])
    terms = et["terms"][0]
    assert "nurse" not in terms
    biased = [t for t in terms if t in ("she", "he")]
    assert et["n_biased"][0] == len(biased)
    assert et["weight_biased"][0] == pytest.approx(sum(terms[t] for t in biased), abs=1e-6)


@pytest.mark.realdata
def test_lambda_zero_equals_rm3_on_grep_biasir(grep_root):
    from data_loaders.text_collections import load_grep_biasir
    from groupbias.retrieval.labels import LexiconLabeller, lexicon_bias

    c = load_grep_biasir(grep_root)
    ix = BM25Index(c.texts)
    first = ix.search(c.queries, k=1000)
    rm3 = RM3()
    plain = rm3.search(ix, c.queries, first, k=1000)
    words = {"M": ("he", "him", "his", "man", "men"), "F": ("she", "her", "woman", "women")}
    bias = lexicon_bias(LexiconLabeller(words).counts(list(c.texts)).counts, "tf")
    zero = rm3.search(
        ix, c.queries, debiased_feedback(first, bias, 0.0, pool=100, fb_docs=10), k=1000
    )
    one = rm3.search(
        ix, c.queries, debiased_feedback(first, bias, 1.0, pool=100, fb_docs=10), k=1000
    )
    assert np.array_equal(zero.docs, plain.docs) and np.array_equal(zero.scores, plain.scores)
    assert not np.array_equal(one.docs, plain.docs)
