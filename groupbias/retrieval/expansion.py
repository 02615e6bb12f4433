"""Query expansion by pseudo-relevance feedback: RM3 (Lavrenko & Croft; Abdul-Jaleel et al.
2004) with Anserini's parameter names and defaults, and bias-aware feedback (Bigdeli et al.
2021, seed 003).

RM3 (:class:`RM3`), for every query at once (sparse matrices over all queries):

1. the feedback set ``F``: the top ``fb_docs`` documents of the first retrieval (Anserini's
   ``fbDocs``, default 10), or the debiased set of :func:`debiased_feedback`;
2. ``P(t | d) = tf(t, d) / |d|``, each feedback document weighted by ``doc_weight``:
   ``"score"`` (its retrieval score, as Anserini's RM3 does) or ``"query_likelihood"``
   (``prod_{t in q} P(t | d)``, seed 003 Eq. 4; a document missing a query term weighs 0);
   the relevance model ``P(t | F) ∝ sum_{d in F} weight(d) P(t | d)``;
3. the ``fb_terms`` expansion terms (``fbTerms``, default 10): the largest ``P(t | F)``
   (``term_selection="weight"``, Anserini) or the largest ``Score_t = sum_{d in F} P(t | d)
   log(P(t | d) / P(t | C))`` (``"kl"``, seed 003 Eq. 2); their weights renormalized to 1;
4. ``q'(w) = α P(w | q) + (1 − α) P(w | F)`` (Eq. 3) with α = ``original_query_weight``
   (``originalQueryWeight``, default 0.5) and ``P(w | q)`` the query's term counts
   normalized to 1; ``q'`` is searched with BM25 as a weighted query.

Bias-aware feedback (:func:`debiased_feedback`, Eq. 1): the top ``pool`` documents of the
first retrieval are re-ranked by ``Rel_debiased(d) = (1 − λ) Rel(d) − λ Bias(d)``, with
``Rel`` the retrieval score min–max scaled to [0, 1] within the query's pool and ``Bias(d)``
in [0, 1] (:func:`groupbias.retrieval.labels.lexicon_bias`, or 1 for a document an LLM labelled
male or female); the first ``fb_docs`` of that order are the feedback set, each keeping its
retrieval score. With λ = 0 the order is the retrieval order (ties by it), so the feedback
set, and the expanded query, are exactly plain RM3's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import ParameterError
from ..core.validation import choice, integer, real
from ..data.text import Run
from .bm25 import BM25Index, top_k_rows

__all__ = ["RM3", "debiased_feedback", "expansion_terms", "DOC_WEIGHTS", "TERM_SELECTIONS"]

DOC_WEIGHTS = ("score", "query_likelihood")
TERM_SELECTIONS = ("weight", "kl")


def _pairs(run: Run):
    return run.query_index(), run.docs


@dataclass(frozen=True)
class RM3:
    """RM3 expansion (module docstring); Anserini's names: ``fb_terms`` (fbTerms),
    ``fb_docs`` (fbDocs), ``original_query_weight`` (originalQueryWeight)."""

    fb_terms: int = 10
    fb_docs: int = 10
    original_query_weight: float = 0.5
    doc_weight: str = "score"
    term_selection: str = "weight"

    def __post_init__(self) -> None:
        integer("fb_terms", self.fb_terms, low=1)
        integer("fb_docs", self.fb_docs, low=1)
        real("original_query_weight", self.original_query_weight, low=0.0, high=1.0)
        choice("doc_weight", self.doc_weight, DOC_WEIGHTS)
        choice("term_selection", self.term_selection, TERM_SELECTIONS)

    def expand(self, index: BM25Index, queries, feedback: Run):
        """The expanded queries (CSR ``[n_queries, n_terms]`` of term weights, rows summing
        to 1) from the ``feedback`` run (its first ``fb_docs`` documents of each query)."""
        from scipy import sparse

        fb = feedback.top(self.fb_docs)
        q = index.query_weights(queries)
        q = _row_normalized(q)
        qi, docs = _pairs(fb)
        lengths = np.maximum(index.lengths[docs], 1).astype(np.float64)
        ptd = sparse.diags(1.0 / lengths) @ index.counts[docs]  # P(t|d) of every pair
        ptd = ptd.tocsr()
        w = self._doc_weights(q, qi, ptd, fb.scores)
        agg = sparse.csr_matrix((w, (qi, np.arange(qi.size))), shape=(q.shape[0], qi.size))
        relevance = _row_normalized(agg @ ptd)
        if self.term_selection == "weight":
            select = relevance
        else:
            pc = index.collection_model()
            kl = ptd.copy()
            kl.data = kl.data * np.log(kl.data / pc[kl.indices])
            member = sparse.csr_matrix(
                (np.ones(qi.size), (qi, np.arange(qi.size))), shape=(q.shape[0], qi.size)
            )
            select = (member @ kl).tocsr()
        qptr, terms, _ = top_k_rows(select, self.fb_terms)
        rows = np.repeat(np.arange(q.shape[0]), np.diff(qptr))
        picked = np.zeros(0)  # no feedback term at all: an object array from scipy otherwise
        if rows.size:
            picked = np.asarray(relevance[rows, terms], dtype=np.float64).ravel()
        chosen = sparse.csr_matrix((picked, (rows, terms)), shape=relevance.shape)
        alpha = self.original_query_weight
        return (alpha * q + (1.0 - alpha) * _row_normalized(chosen)).tocsr()

    def _doc_weights(self, q, qi, ptd, scores) -> np.ndarray:
        if self.doc_weight == "score":
            return np.asarray(scores, dtype=np.float64)
        qp = q[qi]  # the query row of every (query, document) pair
        present = qp.multiply(ptd > 0)
        n_terms = np.diff(qp.indptr)
        matched = np.diff(present.tocsr().indptr)
        logp = ptd.copy()
        logp.data = np.log(logp.data)
        ll = np.asarray((qp > 0).multiply(logp).sum(axis=1)).ravel()
        return np.where(matched == n_terms, np.exp(ll), 0.0)

    def search(
        self, index: BM25Index, queries, first: Run, *, k: int | None, tag: str = "rm3"
    ) -> Run:
        """Expand with the first ``fb_docs`` of ``first`` and retrieve the top ``k``."""
        expanded = self.expand(index, queries, first)
        run = index.search(expanded, k=k, on_empty="skip", tag=tag)
        run.meta["expanded"] = expanded
        return run


def expansion_terms(index: BM25Index, queries, expanded, biased_terms) -> dict:
    """Seed 003 Table 2 per query: the number and summed weight of the *biased* expansion
    terms (terms of ``expanded`` not in the original query that are among
    ``biased_terms``, analyzed like the documents), float64 [n_queries] each, and every
    query's expansion terms with their weights (``{term: weight}``, for the record)."""
    original = index.query_weights(queries)
    e = expanded.tocsr().copy()
    e = e - e.multiply(original > 0)  # drop the original query's terms
    e.eliminate_zeros()
    words = sorted({w for ws in index.analyzer.analyze(list(biased_terms)) for w in ws})
    cols = np.array([index.vocab[w] for w in words if w in index.vocab], dtype=np.int64)
    mask = np.zeros(index.n_terms, dtype=bool)
    mask[cols] = True
    biased = e.multiply(mask[None, :]).tocsr()
    biased.eliminate_zeros()
    vocab = np.empty(index.n_terms, dtype=object)
    vocab[list(index.vocab.values())] = list(index.vocab)
    terms = [
        dict(zip(vocab[e.indices[a:b]].tolist(), np.round(e.data[a:b], 6).tolist()))
        for a, b in zip(e.indptr[:-1], e.indptr[1:])
    ]
    return {
        "n_biased": np.diff(biased.indptr).astype(np.float64),
        "weight_biased": np.asarray(biased.sum(axis=1)).ravel(),
        "terms": terms,
    }


def _row_normalized(m):
    from scipy import sparse

    m = sparse.csr_matrix(m)
    sums = np.asarray(m.sum(axis=1)).ravel()
    inv = np.divide(1.0, sums, out=np.zeros_like(sums), where=sums > 0)
    return (sparse.diags(inv) @ m).tocsr()


def debiased_feedback(run: Run, bias, lam: float, *, pool: int, fb_docs: int) -> Run:
    """The bias-aware feedback set of every query (module docstring, seed 003 Eq. 1): the
    top ``pool`` of ``run`` re-ranked by ``(1 − λ) Rel(d) − λ Bias(d)``, its first
    ``fb_docs``; ``bias`` float [n_docs] in [0, 1]. Vectorized over queries."""
    lam = real("lam", lam, low=0.0, high=1.0)
    integer("pool", pool, low=1)
    integer("fb_docs", fb_docs, low=1, high=pool, what=f"an integer in [1, pool={pool}]")
    b = np.asarray(bias, dtype=np.float64)
    if b.ndim != 1 or b.size == 0 or np.any(~np.isfinite(b)) or b.min() < 0 or b.max() > 1:
        raise ParameterError("bias", "Bias(d) in [0, 1] for every document", b.shape)
    top = run.top(pool)
    qi = top.query_index()
    n = top.n_queries
    lo = np.full(n, np.inf)
    hi = np.full(n, -np.inf)
    np.minimum.at(lo, qi, top.scores)
    np.maximum.at(hi, qi, top.scores)
    span = (hi - lo)[qi]
    rel = np.where(span > 0, (top.scores - lo[qi]) / np.where(span > 0, span, 1.0), 1.0)
    debiased = (1.0 - lam) * rel - lam * b[top.docs]
    order = np.lexsort((top.ranks(), -debiased, qi))
    reordered = Run(top.qptr, top.docs[order], top.scores[order], top.tag)
    return reordered.top(fb_docs)
