"""Retrieval measures of a TREC run with ``trec_eval``'s semantics, vectorized over queries.

What ``trec_eval`` (and ``ir_measures``, ``ranx`` with its defaults) computes, which differs
from judging a run's candidates as a ranking of its own:

* the queries are those of the run that the qrels judge; each scores, 0 where the run
  retrieves nothing relevant (a query whose judgments hold nothing relevant scores 0 too);
* the run's order is its scores, descending, ties broken by document id, descending (the
  rank column is ignored);
* ``mrr@k`` is MS MARCO's ``MRR@k`` (``trec_eval`` has no cut reciprocal rank; ``ir_measures``
  computes ``RR@k`` with MS MARCO's evaluation), which breaks ties by document id,
  ascending; ``mrr`` without a cut is ``trec_eval``'s ``recip_rank``;
* relevant means a label of at least 1; nDCG uses the label itself as the gain
  (``trec_eval``'s ``ndcg_cut``) and ``log2(1 + r)``, its ideal taken over every judged
  document of the query, retrieved or not; AP divides by every relevant judged document.

Measures (``@k`` cuts the run at rank k): ``ndcg@k``, ``mrr@k`` (reciprocal rank of the
first relevant document), ``map@k`` (average precision), ``p@k`` (precision), ``recall@k``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core.errors import ParameterError
from ..core.segments import segment_sum

__all__ = ["TREC_MEASURES", "trec_measures"]

#: measure names (lower case, before ``@k``) this module computes
TREC_MEASURES = ("ndcg", "mrr", "map", "p", "recall")


def _parse(name: str) -> tuple[str, int | None]:
    base, _, cut = name.strip().lower().partition("@")
    if base not in TREC_MEASURES:
        raise ParameterError("metrics", f"one of {', '.join(TREC_MEASURES)} (with @k)", name)
    if not cut:
        if base in ("p", "recall"):
            raise ParameterError("metrics", f"{base}@k with a cutoff k", name)
        return base, None
    if not cut.isdigit() or int(cut) < 1:
        raise ParameterError("metrics", "a cutoff k >= 1 after '@'", name)
    return base, int(cut)


def trec_measures(run, qrels, metrics: Sequence[str]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``(query_ids, {name: per-query values})`` of ``run`` (a
    :class:`~groupbias.data.trec.TrecRun`) against ``qrels`` (a
    :class:`~groupbias.data.trec.Qrels`): the run's judged queries in run order and each
    measure of ``metrics`` (names as in the module docstring, any case: ``nDCG@10``)."""
    parsed = {name: _parse(name) for name in metrics}
    judged_q = np.isin(run.query_ids.astype(str), qrels.query_ids.astype(str))
    if not judged_q.any():
        raise ParameterError(
            "qrels", "judgments of the run's queries", f"none of its {run.n_queries} queries"
        )
    sizes = np.diff(run.qptr)
    keep = np.repeat(judged_q, sizes)
    qids = run.query_ids[judged_q].astype(str)
    n_q = qids.size
    sizes = sizes[judged_q]
    q_of = np.repeat(np.arange(n_q), sizes)
    docs = run.item_ids[keep].astype(str)
    scores = run.scores[keep]
    # trec_eval's order: score descending, then document id descending
    _, doc_rank = np.unique(docs, return_inverse=True)
    order = np.lexsort((-doc_rank, -scores, q_of))
    docs, q_of = docs[order], q_of[order]
    qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    rank = np.arange(docs.size) - qptr[q_of] + 1  # 1-based
    labels = qrels.lookup(qids[q_of], docs)
    rel = labels >= 1
    # every judged document of each kept query: the ideal and the count of relevant ones
    on = np.isin(qrels.query_ids.astype(str), qids)
    jq = np.searchsorted(np.sort(qids), qrels.query_ids.astype(str)[on])
    jq = np.argsort(qids)[jq]  # index into qids
    jl = qrels.labels[on]
    n_rel = np.bincount(jq, weights=(jl >= 1).astype(float), minlength=n_q)
    out: dict[str, np.ndarray] = {}
    for name, (base, k) in parsed.items():
        cut = rank <= k if k is not None else np.ones(rank.size, dtype=bool)
        if base == "ndcg":
            disc = 1.0 / np.log2(1.0 + rank)
            dcg = segment_sum(np.where(cut, labels * disc, 0.0), qptr)
            # the ideal: the query's judged labels in descending order
            o = np.lexsort((-jl, jq))
            sl, sq = jl[o], jq[o]
            starts = np.searchsorted(sq, np.arange(n_q))
            ir = np.arange(sl.size) - starts[sq] + 1
            keep_i = ir <= k if k is not None else np.ones(ir.size, dtype=bool)
            ideal = np.bincount(
                sq, weights=np.where(keep_i, sl / np.log2(1.0 + ir), 0.0), minlength=n_q
            )
            with np.errstate(invalid="ignore", divide="ignore"):
                out[name] = np.where(ideal > 0, dcg / np.where(ideal > 0, ideal, 1.0), 0.0)
        elif base == "mrr":
            r, hit = rank, rel & cut
            if k is not None:  # MS MARCO's order: ties by document id, ascending
                doc_up = np.lexsort((doc_rank[order], -scores[order], q_of))
                r = np.empty(rank.size, dtype=np.int64)
                r[doc_up] = np.arange(rank.size) - qptr[q_of[doc_up]] + 1
                hit = rel & (r <= k)
            first = np.full(n_q, np.inf)
            np.minimum.at(first, q_of[hit], r[hit].astype(float))
            out[name] = np.where(np.isfinite(first), 1.0 / first, 0.0)
        elif base == "map":
            hit = (rel & cut).astype(float)
            seen = np.cumsum(hit) - np.repeat(
                np.concatenate([[0.0], np.cumsum(hit)])[qptr[:-1]], sizes
            )
            prec = segment_sum(np.where(hit > 0, seen / rank, 0.0), qptr)
            out[name] = np.where(n_rel > 0, prec / np.where(n_rel > 0, n_rel, 1.0), 0.0)
        elif base == "p":
            out[name] = segment_sum((rel & cut).astype(float), qptr) / float(k or 1)
        else:  # recall
            hits = segment_sum((rel & cut).astype(float), qptr)
            out[name] = np.where(n_rel > 0, hits / np.where(n_rel > 0, n_rel, 1.0), 0.0)
    return qids, out
