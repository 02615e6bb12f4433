"""BM25 retrieval over a text collection: an analyzer, an index, and search for many
(weighted) queries at once.

- :class:`Analyzer`: the stated tokenisation. Lower-case; English possessives (``'s``)
  dropped; tokens are maximal runs of Unicode letters and digits; stop words (``"lucene"``:
  the 33 words of Lucene's English analyzer, which Anserini uses; ``"none"``; or a list);
  stemming (``"porter"``: the Porter stemmer as in Anserini; ``"snowball"``: English
  Snowball; ``"none"``), through PyStemmer. A collection is analyzed in one pass
  (:meth:`Analyzer.term_ids`: the texts joined, tokenised at once, stop words and stems
  decided once per distinct word).
- :class:`BM25Index`: the Lucene variant of BM25 (Kamphuis et al. 2020, as Anserini / Lucene
  8+ score it) with ``k1`` and ``b`` (Anserini's defaults 0.9 / 0.4)::

      idf(t)    = ln(1 + (N − df_t + 0.5) / (df_t + 0.5))
      w(t, d)   = idf(t) · tf / (tf + k1 (1 − b + b |d| / avgdl))
      s(q, d)   = sum_t q_t · w(t, d)                (q_t: the term's query weight)

  The weights ``w(t, d)`` are computed by ``bm25s`` (sparse-matrix BM25, the embedded
  default engine, no JVM); :meth:`BM25Index.search` multiplies the sparse query-weight
  matrix of all queries with them and keeps the top k of every query (ties: the earlier
  document first, as Lucene orders equal scores by document number). Only documents that
  contain a query term are retrieved. The term-count matrix of the documents is kept for
  relevance feedback (:mod:`groupbias.retrieval.expansion`).
- :class:`PyseriniSearcher`: Anserini through ``pyserini`` (an optional extra; it needs a
  JDK that pyserini supports) on an existing Lucene index, for the engine seed 003 used.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from .._fast.topk import product_top_k
from .._fast.topk import top_k_rows as _top_k_rows
from ..core.errors import ParameterError
from ..core.validation import check_k, choice, real
from ..data.text import Run

__all__ = [
    "Analyzer",
    "BM25Index",
    "PyseriniSearcher",
    "LUCENE_STOPWORDS",
    "ON_EMPTY",
    "top_k_rows",
]

#: Lucene's English stop set (EnglishAnalyzer.ENGLISH_STOP_WORDS_SET), as Anserini uses it
LUCENE_STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with".split()
)
STEMMERS = ("porter", "snowball", "none")
#: what a query with no term left after analysis does: an error, or an empty result counted
ON_EMPTY = ("raise", "skip")
#: ``'s`` after a word character (the quote first: the engine then skips ahead to quotes)
_POSSESSIVE = re.compile(r"['’](?<=\w['’])s\b")
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Analyzer:
    """Tokenisation and stemming of documents and queries (module docstring)."""

    stopwords: str | Sequence[str] = "lucene"
    stemmer: str = "porter"

    def __post_init__(self) -> None:
        if isinstance(self.stopwords, str):
            choice("stopwords", self.stopwords, ("lucene", "none"))
        elif not all(isinstance(w, str) for w in self.stopwords):
            raise ParameterError("stopwords", "'lucene', 'none' or a list of words", self.stopwords)
        choice("stemmer", self.stemmer, STEMMERS)

    @cached_property
    def _stop(self) -> frozenset:
        if isinstance(self.stopwords, str):
            return LUCENE_STOPWORDS if self.stopwords == "lucene" else frozenset()
        return frozenset(w.lower() for w in self.stopwords)

    @cached_property
    def _stem(self):
        if self.stemmer == "none":
            return None
        import Stemmer  # PyStemmer

        return Stemmer.Stemmer("porter" if self.stemmer == "porter" else "english")

    def words(self, text: str) -> list[str]:
        """The unstemmed tokens of ``text`` without stop words."""
        stop = self._stop
        return [w for w in _WORD.findall(_POSSESSIVE.sub("", text.lower())) if w not in stop]

    def analyze(self, texts: Sequence[str]) -> list[list[str]]:
        """The analyzed tokens of every text (each distinct word stemmed once)."""
        terms, ids, lengths = self.term_ids(texts)
        return _split(np.asarray(terms, dtype=object)[ids].tolist(), lengths)

    def term_ids(self, texts: Sequence[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
        """``(terms, ids, lengths)``: the analyzed terms of ``texts`` in sorted order, the
        term of every token of every text (int64, the texts one after another) and every
        text's number of tokens (int64). The same tokens as :meth:`analyze`, found in one
        pass: the texts are joined by a separator, lower-cased and tokenised at once, and
        stop words and stems are decided once per distinct word."""
        words, ids, sep = _word_ids(list(texts))
        stop, stemmer = self._stop, self._stem
        keep = [w not in stop for w in words]
        if sep is not None:
            keep[sep] = False
        kept = [w for w, k in zip(words, keep, strict=True) if k]
        if stemmer is not None:
            long = [w for w in kept if len(w) > 2]
            stems = dict(zip(long, stemmer.stemWords(long), strict=True))
            kept = [stems.get(w) or w for w in kept]
        terms = sorted(set(kept))
        column = {t: j for j, t in enumerate(terms)}
        word_term = np.full(len(words), -1, dtype=np.int64)
        word_term[np.flatnonzero(keep)] = [column[t] for t in kept]
        doc = np.cumsum(ids == sep) if sep is not None else np.zeros(ids.size, dtype=np.int64)
        tid = word_term[ids]
        mask = tid >= 0
        lengths = np.bincount(doc[mask], minlength=len(texts)).astype(np.int64)
        return terms, tid[mask], lengths


#: joins the texts for one pass of the tokeniser: not a word character, not cased and not
#: case-ignorable (lower-casing and the possessive rule see a text's end at it)
_SEP = "\x00"
_WORD_OR_SEP = re.compile(r"[^\W_]+|\x00")


def _word_ids(texts: list[str]) -> tuple[list[str], np.ndarray, int | None]:
    """``(words, ids, sep)``: the distinct lower-cased tokens (possessives dropped) of the
    texts in order of first appearance, every token's index into them (int64; the texts
    one after another with the separator ``words[sep]`` between two texts) and ``sep``
    (None for fewer than two texts). A text that holds the separator itself is tokenised
    alone (the same tokens)."""
    if len(texts) < 2:
        tokens = _WORD.findall(_POSSESSIVE.sub("", texts[0].lower())) if texts else []
    else:
        joined = _SEP.join(texts)
        if joined.count(_SEP) == len(texts) - 1:
            tokens = _WORD_OR_SEP.findall(_POSSESSIVE.sub("", joined.lower()))
        else:
            tokens = []
            for t in texts:
                tokens += _WORD.findall(_POSSESSIVE.sub("", t.lower()))
                tokens.append(_SEP)
            tokens.pop()
    import pandas as pd

    ids, uniques = pd.factorize(np.array(tokens, dtype=object))  # in order of appearance
    words = uniques.tolist()
    sep = words.index(_SEP) if len(texts) > 1 else None
    return words, ids.astype(np.int64, copy=False), sep


def _split(flat: list, lengths: np.ndarray) -> list[list]:
    """``flat`` cut into consecutive lists of ``lengths``."""
    ends = np.cumsum(lengths)
    return [flat[i:j] for i, j in zip((ends - lengths).tolist(), ends.tolist(), strict=True)]


def top_k_rows(matrix, k: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(qptr, columns, values)`` of the ``k`` largest stored entries of every row of the
    CSR ``matrix``, largest first (ties: smaller column first); vectorized over rows, only
    the entries that can make a row's top ``k`` sorted."""
    m = matrix.tocsr()
    m.sum_duplicates()
    return _top_k_rows(m.indptr, m.indices, m.data, k)


class BM25Index:
    """BM25 (Lucene variant) over ``texts`` with ``k1``, ``b`` and ``analyzer`` (module
    docstring). ``vocab``: term -> column; ``counts``: CSR int ``[n_docs, n_terms]`` term
    counts; ``lengths``: analyzed document lengths; ``weights``: CSR ``[n_terms, n_docs]``
    of ``w(t, d)``."""

    def __init__(
        self,
        texts: Sequence[str],
        *,
        k1: float = 0.9,
        b: float = 0.4,
        analyzer: Analyzer | None = None,
    ) -> None:
        import bm25s
        from scipy import sparse

        self.k1 = real("k1", k1, low=0.0)
        self.b = real("b", b, low=0.0, high=1.0)
        self.analyzer = analyzer or Analyzer()
        terms, ids, lengths = self.analyzer.term_ids(list(texts))
        n_docs, n_cols = lengths.size, len(terms)
        if n_cols == 0:  # bm25s would fail on an empty vocabulary (max() of nothing)
            raise ParameterError(
                "texts",
                "at least one document with a term left after analysis",
                f"{n_docs} documents without one",
                fix=f"check the texts (stop words: {self.analyzer.stopwords!r})",
            )
        docs = _split(ids.tolist(), lengths)
        # term ids in sorted term order (bm25s would number them in set order, which
        # changes from process to process; ties broken by term id must not)
        self.vocab: dict[str, int] = {t: j for j, t in enumerate(terms)}
        engine = bm25s.BM25(k1=self.k1, b=self.b, method="lucene", dtype="float64")
        engine.index((docs, dict(self.vocab)), show_progress=False)
        sc = engine.scores
        self.weights = sparse.csr_matrix(
            (sc["data"], sc["indices"], sc["indptr"]), shape=(n_cols, n_docs)
        )
        indptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        self.counts = sparse.csr_matrix((np.ones(ids.size), ids, indptr), shape=(n_docs, n_cols))
        self.counts.sum_duplicates()
        self.lengths = lengths
        self.n_docs = n_docs

    @property
    def n_terms(self) -> int:
        return int(self.weights.shape[0])

    def query_weights(self, queries: Any):
        """CSR ``[n_queries, n_terms]``: a text query's analyzed term counts (a repeated term
        counts twice), or a mapping ``{analyzed term: weight}``; terms absent from the
        collection drop out. A sparse matrix ``[n_queries, n_terms]`` (RM3's expanded
        queries) is taken as it is."""
        from scipy import sparse

        if sparse.issparse(queries):
            if queries.shape[1] != self.n_terms:
                raise ParameterError("queries", f"{self.n_terms} term columns", queries.shape)
            return sparse.csr_matrix(queries, dtype=np.float64)

        rows, cols, vals = [], [], []
        texts = [q for q in queries if isinstance(q, str)]
        analyzed = iter(self.analyzer.analyze(texts))
        for i, q in enumerate(queries):
            items = _term_items(next(analyzed)) if isinstance(q, str) else q.items()
            for term, w in items:
                j = self.vocab.get(term)
                if j is not None:
                    rows.append(i)
                    cols.append(j)
                    vals.append(float(w))
        m = sparse.csr_matrix((vals, (rows, cols)), shape=(len(queries), self.n_terms))
        m.sum_duplicates()
        return m

    def search(
        self,
        queries: Any,
        *,
        k: int | None = 1000,
        on_empty: str = "raise",
        tag: str = "bm25",
    ) -> Run:
        """The top ``k`` documents of every query (a :class:`~groupbias.data.text.Run`).

        A query with no term of the collection left after analysis: ``on_empty="raise"``
        (default; :class:`ParameterError` naming the query) or ``"skip"`` (an empty result,
        its index in ``run.meta["empty_queries"]``)."""
        k = check_k(k)
        on_empty = choice("on_empty", on_empty, ON_EMPTY)
        q = self.query_weights(queries)
        empty = np.flatnonzero(np.diff(q.indptr) == 0)
        if empty.size and on_empty == "raise":
            raise ParameterError(
                f"queries[{int(empty[0])}]",
                "a query with at least one term of the collection after analysis",
                "no terms" if not isinstance(queries, Sequence) else queries[int(empty[0])],
                fix="on_empty='skip' counts such queries and returns no documents for them",
            )
        qptr, docs, scores = product_top_k(q, self.weights, k)
        return Run(qptr, docs, scores, tag, meta={"empty_queries": empty.tolist()})

    def score_pairs(self, queries, query_index, docs) -> np.ndarray:
        """``s(q, d)`` of given (query, document) pairs: float64, 0 where no term matches."""
        q = self.query_weights(queries)
        qi = np.asarray(query_index, dtype=np.int64)
        d = np.asarray(docs, dtype=np.int64)
        wt = self.weights.T.tocsr()  # [n_docs, n_terms]
        return np.asarray(q[qi].multiply(wt[d]).sum(axis=1)).ravel()

    def collection_model(self) -> np.ndarray:
        """``P(t | C)``: every term's share of all tokens, float64 [n_terms]."""
        cf = np.asarray(self.counts.sum(axis=0)).ravel()
        return cf / max(cf.sum(), 1.0)


def _term_items(tokens: list[str]):
    terms, counts = np.unique(np.asarray(tokens, dtype=object), return_counts=True)
    return zip(terms.tolist(), counts.tolist())


class PyseriniSearcher:
    """Anserini BM25 (and RM3) through ``pyserini`` on a Lucene index built from the
    collection (``python -m pyserini.index.lucene --collection JsonCollection ...``).
    Optional: ``pip install groupbias[anserini]`` and a JDK that pyserini supports; the
    import error says what is missing."""

    def __init__(self, index_dir: str, *, k1: float = 0.9, b: float = 0.4) -> None:
        try:
            from pyserini.search.lucene import LuceneSearcher
        except Exception as exc:  # ImportError, or the JVM failing to start
            raise ParameterError(
                "engine", "pyserini with a supported JDK (the anserini extra)", str(exc)
            ) from None
        self.searcher = LuceneSearcher(index_dir)
        self.searcher.set_bm25(real("k1", k1, low=0.0), real("b", b, low=0.0, high=1.0))

    def search(self, queries: Sequence[str], *, doc_ids, k: int = 1000, rm3=None) -> Run:
        """The top ``k`` of every query as a Run over ``doc_ids`` (the collection's ids);
        ``rm3``: an :class:`~groupbias.retrieval.expansion.RM3` to switch Anserini's RM3 on."""
        if rm3 is not None:
            self.searcher.set_rm3(rm3.fb_terms, rm3.fb_docs, rm3.original_query_weight)
        pos = {str(d): i for i, d in enumerate(doc_ids)}
        hits = self.searcher.batch_search(
            list(queries), [str(i) for i in range(len(queries))], k=k, threads=1
        )
        qptr, docs, scores = [0], [], []
        for i in range(len(queries)):
            for h in hits[str(i)]:
                docs.append(pos[h.docid])
                scores.append(h.score)
            qptr.append(len(docs))
        return Run(np.asarray(qptr), np.asarray(docs), np.asarray(scores), "anserini")
