"""The analyzer's one-pass tokenisation (joined texts, stop words and stems per distinct
word) against a plain per-text, per-word reference, and the index built from its ids."""

from __future__ import annotations

import re

import numpy as np
import pytest
import Stemmer

from groupbias.retrieval.bm25 import LUCENE_STOPWORDS, Analyzer, BM25Index

TRICKY = [
    "John's dog's bone; the dogs' bones. 'S at the start, x's",
    "'s",
    "ΟΔΟΣ Σίσυφος İstanbul ÉCOLE naïve Straße ǅemal",
    "under_score a1b2 3.14 _x_ running RAN runs ab a ",
    "",
    "the and of it",
    "sep\x00inside\x00 and JOHN’S",
    "ends with possessive Mary's",
]


def _reference(texts, stop, stemmer):
    stem = None if stemmer == "none" else Stemmer.Stemmer(
        "porter" if stemmer == "porter" else "english")  # fmt: skip
    out = []
    for t in texts:
        words = re.findall(r"[^\W_]+", re.sub(r"(?<=\w)['’]s\b", "", t.lower()))
        words = [w for w in words if w not in stop]
        if stem is not None:
            words = [(stem.stemWord(w) or w) if len(w) > 2 else w for w in words]
        out.append(words)
    return out


def _sample(seed, n):
    rng = np.random.default_rng(seed)
    pool = [w for t in TRICKY for w in t.split(" ")] + ["Cats", "cat's", "generalization",
                                                         "the", "Is", "connected", "b"]  # fmt: skip
    return [" ".join(rng.choice(pool, size=int(rng.integers(0, 15)))) for _ in range(n)]


@pytest.mark.parametrize(
    "stopwords,stemmer",
    [("lucene", "porter"), ("lucene", "snowball"), ("none", "none"), (["Dog", "bone"], "porter")],
)
def test_analyzed_tokens_equal_a_per_text_reference(stopwords, stemmer):
    stop = (
        {
            "lucene": LUCENE_STOPWORDS,
            "none": frozenset(),
        }.get(stopwords)
        if isinstance(stopwords, str)
        else {w.lower() for w in stopwords}
    )
    a = Analyzer(stopwords=stopwords, stemmer=stemmer)
    joinable = [t.replace("\x00", " ") for t in TRICKY]  # the one-pass path, no fallback
    for texts in (TRICKY, TRICKY[:1], [], ["", ""], _sample(0, 300), joinable):
        want = _reference(texts, stop, stemmer)
        assert a.analyze(texts) == want
        terms, ids, lengths = a.term_ids(texts)
        assert terms == sorted({w for ws in want for w in ws})
        assert lengths.tolist() == [len(ws) for ws in want]
        assert [terms[i] for i in ids] == [w for ws in want for w in ws]


def test_index_counts_weights_and_lengths_follow_the_tokens():
    texts = _sample(1, 200)
    ix = BM25Index(texts)
    tokens = _reference(texts, LUCENE_STOPWORDS, "porter")
    terms = sorted({w for ws in tokens for w in ws})
    assert list(ix.vocab) == terms and ix.lengths.tolist() == [len(ws) for ws in tokens]
    dense = np.zeros((len(texts), len(terms)))
    for d, ws in enumerate(tokens):
        for w in ws:
            dense[d, ix.vocab[w]] += 1
    np.testing.assert_array_equal(ix.counts.toarray(), dense)
    # Lucene BM25 by hand (k1 0.9, b 0.4)
    n, df = len(texts), (dense > 0).sum(axis=0)
    idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
    lengths = dense.sum(axis=1, keepdims=True)
    norm = 0.9 * (1 - 0.4 + 0.4 * lengths / lengths.mean())
    want = np.where(dense > 0, idf * dense / (dense + norm), 0.0)
    np.testing.assert_allclose(ix.weights.toarray().T, want, rtol=1e-12, atol=0)
