"""Retrieval measures of a TREC run with ``trec_eval``'s semantics, vectorized over queries.

What ``trec_eval`` (and ``ir_measures``, ``ranx`` with its defaults) computes, which differs
from judging a run's candidates as a ranking of its own:

* the queries are those of the run that the qrels judge; each scores, 0 where the run
  retrieves nothing relevant (a query whose judgments hold nothing relevant scores 0 too);
  ``complete=True`` (``trec_eval -c``) adds every query of the qrels that the run lacks,
  after the run's, each scoring 0 on every measure and counted in the means;
  ``max_docs=N`` (``trec_eval -M N``) evaluates each query's first N documents only
  (:func:`first_documents`);
* the run's order is its scores, descending, ties broken by document id, descending (the
  rank column is ignored);
* ``mrr@k`` is MS MARCO's ``MRR@k`` (``trec_eval`` has no cut reciprocal rank; ``ir_measures``
  computes ``RR@k`` with MS MARCO's evaluation), which breaks ties by document id,
  ascending; ``mrr`` without a cut is ``trec_eval``'s ``recip_rank``;
* relevant means a label of at least ``relevance_level`` (default 1; ``trec_eval -l N``):
  every binary measure reads it from one place, :attr:`_Judged.relevant` (per retrieved
  document) and :attr:`_Judged.n_rel` (per query); nDCG keeps graded gains whatever the
  level, as ``trec_eval`` does: the label itself as the gain (``trec_eval``'s
  ``ndcg_cut``) and ``log2(1 + r)``, its ideal taken over every judged document of the
  query, retrieved or not; AP divides by every relevant judged document.

Measures (``@k`` cuts the run at rank k): ``ndcg@k``, ``mrr@k`` (reciprocal rank of the
first relevant document), ``map@k`` (average precision), ``precision@k`` (``p@k``; trec_eval's
``P_k``: divided by k), ``recall@k`` (divided by the relevant judged documents), ``rprec``
(precision at R, the relevant judged documents), ``bpref`` (judged documents only: an
unjudged one is skipped, as is one the qrels give a relevance below 0, trec_eval's "in the
pool but unjudged" (:attr:`~groupbias.data.trec.Qrels.unjudged`); the non-relevant ones are
those judged below the relevance level), ``success@k`` (a relevant document in the top k)
and ``judged@k`` (ir_measures' ``Judged@k``: the share of the top k that the qrels hold a
line for, ties by document id ascending, divided by the run's length where it is shorter
than k; trec_eval has no such measure). Every binary measure takes the relevance level.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..core.errors import ParameterError
from ..core.validation import integer
from .declaration import metric_info

__all__ = ["TREC_MEASURES", "judged_queries", "trec_queries", "first_documents", "trec_measures"]

#: measure names (lower case, before ``@k``) this module computes
TREC_MEASURES = (
    "ndcg", "mrr", "map", "p", "precision", "recall", "rprec", "bpref", "success", "judged"
)  # fmt: skip
#: the measures that need a cutoff, and those that take none
_CUT = ("p", "precision", "recall", "success")
_UNCUT = ("rprec", "bpref")


def _parse(name: str) -> tuple[str, int | None]:
    base, _, cut = name.strip().lower().partition("@")
    if base not in TREC_MEASURES:
        raise ParameterError("metrics", f"one of {', '.join(TREC_MEASURES)} (with @k)", name)
    if not cut:
        if base in _CUT:
            raise ParameterError("metrics", f"{base}@k with a cutoff k", name)
        return base, None
    if base in _UNCUT:
        raise ParameterError("metrics", f"{base} without a cutoff (trec_eval has none)", name)
    if not cut.isdigit() or int(cut) < 1:
        raise ParameterError("metrics", "a cutoff k >= 1 after '@'", name)
    return base, int(cut)


def judged_queries(run, qrels, *, complete: bool = False) -> np.ndarray:
    """Which queries of ``run`` the ``qrels`` judge (bool [run.n_queries]): the queries a run
    is evaluated on, as ``trec_eval`` does; none is a :class:`ParameterError` (unless
    ``complete``: the qrels' queries then all score 0)."""
    judged = np.isin(run.query_ids.astype(str), qrels.query_ids.astype(str))
    if not judged.any() and not (complete and qrels.query_ids.size):
        raise ParameterError(
            "qrels", "judgments of the run's queries", f"none of its {run.n_queries} queries"
        )
    return judged


def trec_queries(run, qrels, *, complete: bool = False) -> np.ndarray:
    """The query ids (str) a run is evaluated on, in the order of the per-query values:
    the run's judged queries in run order, then (``complete``, ``trec_eval -c``) the
    qrels' queries the run lacks, in the qrels' order."""
    qids = run.query_ids[judged_queries(run, qrels, complete=complete)].astype(str)
    if not complete:
        return qids
    judged = _first_seen(qrels.query_ids.astype(str))
    return np.concatenate([qids, judged[~np.isin(judged, qids)]])


def _first_seen(values: np.ndarray) -> np.ndarray:
    """The distinct ``values`` in the order they first appear."""
    _, first = np.unique(values, return_index=True)
    return values[np.sort(first)]


def first_documents(run, n: int | None):
    """``run`` with each query's first ``n`` documents in ``trec_eval``'s order (score
    descending, ties by document id descending), in the file's order (``trec_eval -M n``);
    ``run`` itself for ``n=None``."""
    if n is None:
        return run
    n = integer("max_docs", n, low=1, fix="each query's first N documents (trec_eval -M N)")
    qi = np.repeat(np.arange(run.n_queries), np.diff(run.qptr))
    _, doc_rank = np.unique(run.item_ids.astype(str), return_inverse=True)
    order = np.lexsort((-doc_rank, -run.scores, qi))
    keep = np.sort(order[np.arange(qi.size) - run.qptr[qi[order]] < n])
    sizes = np.bincount(qi[keep], minlength=run.n_queries)
    qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return replace(run, qptr=qptr, item_ids=run.item_ids[keep], scores=run.scores[keep])


def check_relevance_level(level) -> int:
    """``trec_eval -l``: the smallest label that counts as relevant, an integer >= 1."""
    return integer(
        "relevance_level", level, low=1,
        fix="the smallest grade that counts as relevant (trec_eval -l N), 1 by default",
    )  # fmt: skip


@dataclass(frozen=True)
class _Judged:
    """A run's judged queries in trec_eval's order: per retrieved document its query
    ``q_of``, 1-based ``rank``, ``label``, whether it is ``relevant`` (label >= the relevance
    level) and MS MARCO's rank ``rank_up`` (ties by document id, ascending); per query the
    offsets ``qptr``, sizes and relevant judged documents ``n_rel`` and non-relevant ones
    ``n_nonrel`` (below the level, a relevance below 0 not counted); per retrieved document
    whether the qrels hold a line for it (``judged``) and whether that line judges it,
    with a relevance of 0 or more (``assessed``: what trec_eval calls judged); every
    judged document's query ``jq`` and label ``jl``."""

    qids: np.ndarray
    q_of: np.ndarray
    rank: np.ndarray
    rank_up: np.ndarray
    label: np.ndarray
    relevant: np.ndarray
    qptr: np.ndarray
    n_rel: np.ndarray
    jq: np.ndarray
    jl: np.ndarray
    judged: np.ndarray
    assessed: np.ndarray
    n_nonrel: np.ndarray

    @classmethod
    def of(cls, run, qrels, *, complete: bool = False, level: int = 1) -> _Judged:
        judged = judged_queries(run, qrels, complete=complete)
        sizes = np.diff(run.qptr)
        keep = np.repeat(judged, sizes)
        qids = trec_queries(run, qrels, complete=complete)
        sizes = np.concatenate([sizes[judged], np.zeros(qids.size - judged.sum(), np.int64)])
        q_of = np.repeat(np.arange(qids.size), sizes)
        docs, scores = run.item_ids[keep].astype(str), run.scores[keep]
        _, doc_rank = np.unique(docs, return_inverse=True)
        qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        order = np.lexsort((-doc_rank, -scores, q_of))  # trec_eval: ids descending
        up = np.lexsort((doc_rank, -scores, q_of))  # MS MARCO: ids ascending
        rank = np.empty(docs.size, dtype=np.int64)
        rank[order] = np.arange(docs.size) - qptr[q_of[order]] + 1
        rank_up = np.empty(docs.size, dtype=np.int64)
        rank_up[up] = np.arange(docs.size) - qptr[q_of[up]] + 1
        label = qrels.lookup(qids[q_of], docs)
        on = np.isin(qrels.query_ids.astype(str), qids)
        by_id = np.argsort(qids)
        jq = by_id[np.searchsorted(qids[by_id], qrels.query_ids.astype(str)[on])]
        jl = qrels.labels[on]
        n_rel = np.bincount(jq, weights=(jl >= level).astype(float), minlength=qids.size)
        pooled = _unjudged(qrels)
        nonrel = (jl < level) & ~pooled[on]
        n_nonrel = np.bincount(jq, weights=nonrel.astype(float), minlength=qids.size)
        at = _line_of(qrels, qids[q_of], docs)
        judged_docs = at >= 0
        assessed = judged_docs & ~pooled[np.maximum(at, 0)]
        return cls(
            qids, q_of, rank, rank_up, label, label >= level, qptr, n_rel, jq, jl, judged_docs,
            assessed, n_nonrel,
        )  # fmt: skip

    def above(self, mask: np.ndarray) -> np.ndarray:
        """Per retrieved document, the documents of ``mask`` at or above its rank."""
        o = np.lexsort((self.rank, self.q_of))
        seen = np.empty(mask.size)
        c = np.cumsum(mask[o])
        seen[o] = c - np.concatenate([[0], c])[self.qptr[:-1]][self.q_of[o]]
        return seen

    def per_query(self, values: np.ndarray) -> np.ndarray:
        return np.bincount(self.q_of, weights=values, minlength=self.qids.size)


def _unjudged(qrels) -> np.ndarray:
    """Per qrels line, whether its relevance was below 0 (trec_eval: pooled, unjudged)."""
    if qrels.unjudged is None:
        return np.zeros(qrels.labels.size, dtype=bool)
    return np.asarray(qrels.unjudged, dtype=bool)


def _line_of(qrels, query_ids: np.ndarray, docs: np.ndarray) -> np.ndarray:
    """The qrels line of every ``(query, document)`` pair, -1 where it has none."""
    key = np.char.add(np.char.add(qrels.query_ids.astype(str), "\t"), qrels.item_ids.astype(str))
    pairs = np.char.add(np.char.add(query_ids.astype(str), "\t"), docs.astype(str))
    if key.size == 0:
        return np.full(pairs.size, -1, dtype=np.int64)
    order = np.argsort(key)
    pos = np.minimum(np.searchsorted(key[order], pairs), key.size - 1)
    return np.where(key[order][pos] == pairs, order[pos], -1)


def _ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a / b``, 0 where ``b`` is 0."""
    return np.where(b > 0, a / np.where(b > 0, b, 1.0), 0.0)


def _ndcg(j: _Judged, k: int | None) -> np.ndarray:
    cut = j.rank <= (k or j.rank.size)
    dcg = j.per_query(np.where(cut, j.label / np.log2(1.0 + j.rank), 0.0))
    o = np.lexsort((-j.jl, j.jq))  # the ideal: each query's judged labels, descending
    sl, sq = j.jl[o], j.jq[o]
    ir = np.arange(sl.size) - np.searchsorted(sq, np.arange(j.qids.size))[sq] + 1
    gain = np.where(ir <= (k or ir.size), sl / np.log2(1.0 + ir), 0.0)
    return _ratio(dcg, np.bincount(sq, weights=gain, minlength=j.qids.size))


def _mrr(j: _Judged, k: int | None) -> np.ndarray:
    rank = j.rank if k is None else j.rank_up
    hit = j.relevant & (rank <= (k or rank.size))
    first = np.full(j.qids.size, np.inf)
    np.minimum.at(first, j.q_of[hit], rank[hit].astype(float))
    return np.where(np.isfinite(first), 1.0 / first, 0.0)


def _map(j: _Judged, k: int | None) -> np.ndarray:
    hit = j.relevant & (j.rank <= (k or j.rank.size))
    seen = j.above(hit)  # relevant documents at or above each rank
    return _ratio(j.per_query(np.where(hit, seen / j.rank, 0.0)), j.n_rel)


def _precision(j: _Judged, k: int | None) -> np.ndarray:
    return j.per_query((j.relevant & (j.rank <= (k or 1))).astype(float)) / float(k or 1)


def _recall(j: _Judged, k: int | None) -> np.ndarray:
    hits = j.per_query((j.relevant & (j.rank <= (k or j.rank.size))).astype(float))
    return _ratio(hits, j.n_rel)


def _rprec(j: _Judged, k: None) -> np.ndarray:
    hits = j.per_query((j.relevant & (j.rank <= j.n_rel[j.q_of])).astype(float))
    return _ratio(hits, j.n_rel)


def _bpref(j: _Judged, k: None) -> np.ndarray:
    rel = j.assessed & j.relevant
    nonrel_above = j.above(j.assessed & ~j.relevant)
    r, n = j.n_rel[j.q_of], j.n_nonrel[j.q_of]
    frac = _ratio(np.minimum(nonrel_above, r), np.minimum(n, r))
    term = np.where(nonrel_above > 0, 1.0 - frac, 1.0)
    return _ratio(j.per_query(np.where(rel, term, 0.0)), j.n_rel)


def _success(j: _Judged, k: int | None) -> np.ndarray:
    hits = j.per_query((j.relevant & (j.rank <= (k or 1))).astype(float))
    return (hits > 0).astype(float)


@metric_info(
    name="judged",
    aliases=("Judged",),
    label="Judged",
    needs=("judgments",),
    groups=("all",),
    ranked=True,
    undefined="the run retrieves nothing for a judged query",
)
def _judged(j: _Judged, k: int | None) -> np.ndarray:
    """ir_measures' ``Judged@k``: the share of the top k (ties by document id, ascending)
    that the qrels judge; a run shorter than k is divided by its length."""
    size = np.diff(j.qptr).astype(float)
    top = j.rank_up <= (k or j.rank_up.size)
    cut = size if k is None else np.minimum(size, float(k))
    return _ratio(j.per_query((j.judged & top).astype(float)), cut)


_MEASURES = {
    "ndcg": _ndcg,
    "mrr": _mrr,
    "map": _map,
    "p": _precision,
    "precision": _precision,
    "recall": _recall,
    "rprec": _rprec,
    "bpref": _bpref,
    "success": _success,
    "judged": _judged,
}


def trec_measures(
    run,
    qrels,
    metrics: Sequence[str],
    *,
    complete: bool = False,
    relevance_level: int = 1,
    max_docs: int | None = None,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``(query_ids, {name: per-query values})`` of ``run`` (a
    :class:`~groupbias.data.trec.TrecRun`) against ``qrels`` (a
    :class:`~groupbias.data.trec.Qrels`): the queries of :func:`trec_queries` and each
    measure of ``metrics`` (names as in the module docstring, any case: ``nDCG@10``);
    ``complete`` (``trec_eval -c``), ``relevance_level`` (``-l``) and ``max_docs`` (``-M``)
    as there."""
    parsed = {name: _parse(name) for name in metrics}
    level = check_relevance_level(relevance_level)
    run = first_documents(run, max_docs)
    if not parsed:
        return trec_queries(run, qrels, complete=bool(complete)), {}
    judged = _Judged.of(run, qrels, complete=bool(complete), level=level)
    return judged.qids, {name: _MEASURES[b](judged, k) for name, (b, k) in parsed.items()}
