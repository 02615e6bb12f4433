"""Post-hoc re-rankers of a retrieval run, the baselines of FAIR-QR (seed 004, Table 1):
MMR (Carbonell & Goldstein 1998) and FA*IR (Zehlike et al. 2017). Both work on the top
``depth`` documents of every query at once (padded ``[n_queries, depth]`` arrays; the greedy
choice runs one rank position at a time for all queries together).

- :func:`mmr`: position by position, the candidate maximizing ``λ rel(d) − (1 − λ) max_{s in
  S} sim(d, s)``, with ``rel`` the retrieval score min–max scaled within the query's pool and
  ``sim`` the cosine of the documents' tf-idf vectors (``tf · ln(N / df)``).
- :func:`fair_topk`: FA*IR's ranked group fairness. With ``m(i)`` the smallest ``m`` with
  ``BinomCDF(m; i, p) > α`` (the fewest protected documents a fair top ``i`` holds at
  significance α, Zehlike et al. 2017 Alg. 1, with the table of the given α, not the
  multiple-test adjusted one), position ``i`` takes the best remaining protected document
  when the top ``i − 1`` hold fewer than ``m(i)``, else the better of the best protected and
  the best non-protected; ``protected`` says per (query, document) pair who is protected.
"""

from __future__ import annotations

import numpy as np

from ..core.errors import ParameterError
from ..core.validation import integer, real
from ..data.text import Run
from .bm25 import BM25Index

__all__ = ["mmr", "fair_topk", "fair_table"]


def _padded(run: Run, depth: int):
    """``(top, rows, cols, valid)``: the top ``depth`` of ``run`` and its padded layout."""
    top = run.top(depth)
    qi = top.query_index()
    col = top.ranks() - 1
    width = int(np.diff(top.qptr).max(initial=0))
    valid = np.zeros((top.n_queries, width), dtype=bool)
    valid[qi, col] = True
    return top, qi, col, valid


def _similarities(index: BM25Index, top: Run, qi, col, width: int) -> np.ndarray:
    """Cosine of the tf-idf vectors of every pair of pool documents of each query,
    float64 [n_queries, width, width] (block products only)."""
    from scipy import sparse

    df = np.asarray((index.counts > 0).sum(axis=0)).ravel()
    idf = np.log(index.n_docs / np.maximum(df, 1))
    x = (index.counts[top.docs] @ sparse.diags(idf)).tocsr()
    norms = np.sqrt(np.asarray(x.multiply(x).sum(axis=1)).ravel())
    x = (sparse.diags(np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)) @ x).tocsr()
    v = index.n_terms
    rows = np.repeat(np.arange(x.shape[0]), np.diff(x.indptr))
    block = sparse.csr_matrix(
        (x.data, (rows, qi[rows] * v + x.indices)), shape=(x.shape[0], top.n_queries * v)
    )
    s = (block @ block.T).tocoo()
    out = np.zeros((top.n_queries, width, width))
    out[qi[s.row], col[s.row], col[s.col]] = s.data
    return out


def mmr(index: BM25Index, run: Run, *, lam: float = 0.5, depth: int = 100) -> Run:
    """The top ``depth`` of ``run`` re-ordered by MMR (module docstring); scores are
    ``depth − rank + 1``."""
    lam = real("lam", lam, low=0.0, high=1.0)
    depth = integer("depth", depth, low=1)
    top, qi, col, valid = _padded(run, depth)
    n, width = valid.shape
    if width == 0:
        return Run(top.qptr, top.docs, top.scores, "mmr")
    sim = _similarities(index, top, qi, col, width)
    score = np.full((n, width), -np.inf)
    score[qi, col] = top.scores
    lo = np.where(valid, score, np.inf).min(axis=1, keepdims=True)
    hi = np.where(valid, score, -np.inf).max(axis=1, keepdims=True)
    span = np.where(hi > lo, hi - lo, 1.0)
    rel = np.where(valid, (score - lo) / span, 0.0)
    chosen = np.zeros((n, width), dtype=bool)
    max_sim = np.zeros((n, width))
    order = np.full((n, width), -1, dtype=np.int64)
    rows = np.arange(n)
    for pos in range(width):
        value = lam * rel - (1.0 - lam) * max_sim
        value[~valid | chosen] = -np.inf
        pick = np.argmax(value, axis=1)
        ok = np.isfinite(value[rows, pick])
        order[ok, pos] = pick[ok]
        chosen[rows[ok], pick[ok]] = True
        max_sim[ok] = np.maximum(max_sim[ok], sim[rows[ok], pick[ok]])
    return _reordered(top, qi, col, order, "mmr")


def _reordered(top: Run, qi, col, order: np.ndarray, tag: str) -> Run:
    """The pool documents in the padded ``order`` (−1 = none), scores ``depth − rank + 1``."""
    n, width = order.shape
    doc_at = np.full((n, max(width, 1)), -1, dtype=np.int64)
    doc_at[qi, col] = top.docs
    keep = order >= 0
    r = np.broadcast_to(np.arange(n)[:, None], order.shape)[keep]
    docs = doc_at[r, order[keep]]
    counts = keep.sum(axis=1)
    qptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    ranks = np.broadcast_to(np.arange(width), order.shape)[keep]
    return Run(qptr, docs, (width - ranks).astype(np.float64), tag)


def fair_table(k: int, p: float, alpha: float) -> np.ndarray:
    """``m(i)`` for i = 1..k: the fewest protected documents in a fair top i (module
    docstring), int64 [k + 1] with ``m(0) = 0``."""
    from scipy import stats

    i = np.arange(1, k + 1)
    m = stats.binom.ppf(alpha, i, p)
    # ppf gives the smallest m with CDF(m) >= alpha; FA*IR needs CDF(m) > alpha
    m = np.where(stats.binom.cdf(m, i, p) <= alpha, m + 1, m)
    return np.concatenate(([0], m)).astype(np.int64)


def fair_topk(run: Run, protected, *, k: int = 400, p: float = 0.3, alpha: float = 0.15) -> Run:
    """FA*IR's fair top ``k`` of every query of ``run`` (module docstring); ``protected``:
    bool [len(run.docs)], per entry of ``run``. Scores are ``k − rank + 1``."""
    k = integer("k", k, low=1)
    p = real("p", p, low=0.0, high=1.0, low_open=True, high_open=True)
    alpha = real("alpha", alpha, low=0.0, high=1.0, low_open=True, high_open=True)
    prot = np.asarray(protected, dtype=bool)
    if prot.shape != run.docs.shape:
        raise ParameterError("protected", f"one flag per run entry ({run.docs.size})", prot.shape)
    top, qi, col, valid = _padded(run, k)
    prot = prot[run.ranks() <= k]
    n, width = valid.shape
    m = fair_table(k, p, alpha)
    # positions of the protected and the other documents in score order, padded
    lists = []
    for flag in (True, False):
        sel = prot == flag
        rank_in = _rank_within(qi[sel], n)
        pos = np.full((n, max(width, 1)), -1, dtype=np.int64)
        pos[qi[sel], rank_in] = col[sel]
        lists.append((pos, np.bincount(qi[sel], minlength=n)))
    (ppos, pn), (opos, on) = lists
    ip = np.zeros(n, dtype=np.int64)
    io = np.zeros(n, dtype=np.int64)
    order = np.full((n, width), -1, dtype=np.int64)
    rows = np.arange(n)
    score = np.full((n, max(width, 1)), -np.inf)
    score[qi, col] = top.scores
    for slot in range(width):
        has_p, has_o = ip < pn, io < on
        sp = np.where(has_p, score[rows, ppos[rows, np.minimum(ip, width - 1)]], -np.inf)
        so = np.where(has_o, score[rows, opos[rows, np.minimum(io, width - 1)]], -np.inf)
        need = ip < m[slot + 1]
        take_p = has_p & (need | ~has_o | (sp >= so))
        take_o = ~take_p & has_o
        order[take_p, slot] = ppos[take_p, ip[take_p]]
        order[take_o, slot] = opos[take_o, io[take_o]]
        ip += take_p
        io += take_o
    return _reordered(top, qi, col, order, "fair")


def _rank_within(qi: np.ndarray, n: int) -> np.ndarray:
    """0-based position of every entry among the entries of its query (``qi`` sorted)."""
    counts = np.bincount(qi, minlength=n)
    starts = np.concatenate(([0], np.cumsum(counts)))[:-1]
    return np.arange(qi.size) - np.repeat(starts, counts)
