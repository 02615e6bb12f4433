"""FAIR-QR (Chen & Fang, seed 004): fairness-aware retrieval by iterative query refinement.

For every query at once (one batched BM25 search per iteration):

1. retrieve the top ``depth`` with the (refined) query; ``ε`` = the group distribution of
   its top ``top_k`` (each document's group from a one-hot ``membership``; documents of no
   group count as ``"Unknown"``), ``ε*`` = the target (the group distribution among the
   query's relevant documents, :func:`target_distribution`);
2. ``Δ = KL(ε || ε*)`` (both smoothed by ``smoothing`` and renormalized); the most
   under-represented group ``ĝ = argmax_g (ε*_g − ε_g)``;
3. a refiner adds keywords for ``ĝ`` to the query; retrieve again; keep the refinement while
   Δ strictly falls, at most ``max_iterations`` times (5, as the paper);
4. re-rank the first ``rerank_depth`` documents of the last accepted retrieval (default
   ``top_k``: the list whose group shares the loop measured, seed 004's "retrieved
   documents") with BM25 on the *original* query (the paper's relevance re-ranking; ties in
   the retrieval's order), the rest in the retrieval's order below them
   (:func:`rerank`). ``refined_weight`` > 0 (not the paper's) adds that share of the BM25
   score of the refinement's terms: 1 keeps the refined order.

Refiners (:class:`Refiner`): :class:`LogOddsRefiner` (offline, no model: the terms most
associated with ``ĝ`` among the query's first retrieved documents against the rest, by the
log-odds ratio with an informative Dirichlet prior, Monroe et al. 2008, the collection's
term frequencies as the prior) and :class:`LLMRefiner` (seed 004's prompt, temperature 0.3,
over the client of :mod:`groupbias.retrieval.llm`, answers cached the same way). Every query's
refined keywords and Δ per iteration are kept in :class:`FairQRResult`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..core.errors import ParameterError
from ..core.validation import integer, real
from ..data.text import Run
from .bm25 import BM25Index, top_k_rows
from .llm import ChatClient, ChatEndpoint, RemoteCallError, check_results

__all__ = [
    "FairQR",
    "FairQRResult",
    "rerank",
    "Refiner",
    "LogOddsRefiner",
    "LLMRefiner",
    "REFINE_PROMPT",
    "target_distribution",
    "group_distribution",
]


def group_distribution(run: Run, membership: np.ndarray, k: int) -> np.ndarray:
    """Share of every group (and, last, of documents of no group) in the top ``k`` of every
    query, float64 [n_queries, n_groups + 1]; rows of empty results are zeros."""
    top = run.top(k)
    m = _with_unknown(membership)[top.docs]
    qi = top.query_index()
    out = np.zeros((run.n_queries, m.shape[1]))
    for g in range(m.shape[1]):
        out[:, g] = np.bincount(qi, weights=m[:, g], minlength=run.n_queries)
    n = out.sum(axis=1, keepdims=True)
    return np.divide(out, n, out=np.zeros_like(out), where=n > 0)


def target_distribution(qrels, membership: np.ndarray) -> np.ndarray:
    """The group distribution among each query's relevant documents (``qrels > 0``),
    float64 [n_queries, n_groups + 1] (last column: no group); NaN rows for queries with no
    relevant document."""
    rel = (qrels > 0).astype(np.float64)
    counts = np.asarray(rel @ _with_unknown(membership))
    n = counts.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, counts / n, np.nan)


def _with_unknown(membership: np.ndarray) -> np.ndarray:
    m = np.asarray(membership, dtype=np.float64)
    return np.column_stack([m, (m.sum(axis=1) == 0).astype(np.float64)])


def _kl(p: np.ndarray, t: np.ndarray, smoothing: float) -> np.ndarray:
    p = p + smoothing
    t = t + smoothing
    p = p / p.sum(axis=1, keepdims=True)
    t = t / t.sum(axis=1, keepdims=True)
    return np.sum(p * np.log(p / t), axis=1)


@dataclass
class RefineState:
    """What a refiner sees at one iteration, for the queries ``active`` (indices): their
    current texts, the under-represented group, the target and current distributions,
    the group names (last: ``"Unknown"``) and ``top_k``."""

    texts: list[str]
    active: np.ndarray
    group: np.ndarray
    target: np.ndarray
    current: np.ndarray
    group_names: tuple[str, ...]
    top_k: int
    query_terms: Any


class Refiner(Protocol):
    """Adds keywords for the under-represented group: ``(added term weights CSR
    [len(active), n_terms], keywords per active query)``; an empty keyword string means the
    query is not refined (it stops)."""

    def prepare(self, index: BM25Index, first: Run, membership: np.ndarray) -> None: ...

    def refine(self, index: BM25Index, state: RefineState) -> tuple[Any, list[str]]: ...


@dataclass
class LogOddsRefiner:
    """The offline refiner (module docstring): ``terms`` new terms per iteration from the
    query's first ``pool`` documents; ``prior`` scales the Dirichlet prior (α_0 = prior ×
    the pool's token count, α_w = α_0 P(w | C))."""

    terms: int = 2
    pool: int = 100
    prior: float = 1.0
    z: Any = field(default=None, repr=False, init=False)

    def __post_init__(self) -> None:
        self.n_groups = 0
        integer("terms", self.terms, low=1)
        integer("pool", self.pool, low=1)
        real("prior", self.prior, low=0.0, low_open=True)

    def prepare(self, index: BM25Index, first: Run, membership: np.ndarray) -> None:
        """z-scores of every (query, group, term) from the first retrieval, CSR
        [n_queries × n_groups, n_terms] (row ``q * G + g``), terms present in group g's
        documents only."""
        from scipy import sparse

        top = first.top(self.pool)
        m = _with_unknown(membership)
        g_count = m.shape[1]
        qi = top.query_index()
        x = index.counts[top.docs].tocsr()
        member = m[top.docs]
        rows, cols, vals = [], [], []
        for g in range(g_count):
            rows.append(qi * g_count + g)
            cols.append(np.arange(qi.size))
            vals.append(member[:, g])
        sel = sparse.csr_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
            shape=(first.n_queries * g_count, qi.size),
        )
        y_in = (sel @ x).tocsr()  # counts in group g's pool documents
        totals = (
            sparse.csr_matrix(
                (np.ones(qi.size), (qi, np.arange(qi.size))), shape=(first.n_queries, qi.size)
            )
            @ x
        )
        y_all = sparse.csr_matrix(totals)[np.repeat(np.arange(first.n_queries), g_count)]
        pc = index.collection_model()
        n_in = np.asarray(y_in.sum(axis=1)).ravel()
        n_all = np.asarray(y_all.sum(axis=1)).ravel()
        coo = y_in.tocoo()
        yi = coo.data
        yj = np.asarray(y_all[coo.row, coo.col]).ravel() - yi
        a0 = self.prior * np.maximum(n_all[coo.row], 1.0)
        aw = a0 * pc[coo.col]
        ni, nj = n_in[coo.row], n_all[coo.row] - n_in[coo.row]
        delta = np.log((yi + aw) / (ni + a0 - yi - aw)) - np.log((yj + aw) / (nj + a0 - yj - aw))
        z = delta / np.sqrt(1.0 / (yi + aw) + 1.0 / (yj + aw))
        self.z = sparse.csr_matrix((z, (coo.row, coo.col)), shape=y_in.shape)
        self.n_groups = g_count

    def refine(self, index: BM25Index, state: RefineState):
        from scipy import sparse

        if self.z is None:
            raise ParameterError("refiner", "prepare() before refine()", None)
        rows = state.active * self.n_groups + state.group
        z = self.z[rows].tocsr()
        used = state.query_terms[state.active] > 0
        z = (z - z.multiply(used)).tocsr()  # no term the query already has
        z.data[z.data <= 0] = 0.0  # only terms associated with the group
        z.eliminate_zeros()
        qptr, terms, _ = top_k_rows(z, self.terms)
        r = np.repeat(np.arange(rows.size), np.diff(qptr))
        added = sparse.csr_matrix(
            (np.ones(terms.size), (r, terms)), shape=(rows.size, index.n_terms)
        )
        vocab = np.empty(index.n_terms, dtype=object)
        vocab[list(index.vocab.values())] = list(index.vocab)
        words = [" ".join(vocab[terms[a:b]].tolist()) for a, b in zip(qptr[:-1], qptr[1:])]
        return added, words


#: seed 004's prompt (Appendix); the fields are filled per query and iteration
REFINE_PROMPT = (
    "You are a user who cares about the fairness of a search engine where searched documents "
    "are retrieved from different subgroups.\n"
    "You want to make sure the retrieved documents of query: {query} are from diverse fairness "
    "groups quantified by a target distribution: {target}, which shows the desired percentage "
    "of retrieved documents from each subgroup. The keys in the target distribution are the "
    "unique subgroups. The Unknown subgroup means group information is missing or not "
    "applicable.\n"
    "Now, using the BM25 method, you got results of the first {top_k} documents with a "
    "fairness group distribution of: {current}. You want to achieve the target by adding "
    "keywords or phrase at the end of the original query with less jeopardize relevance. "
    "Therefore, you must add less keywords as possible to make the current results more align "
    "with our fairness target distribution and remain relevant.\n"
    "Lets try to focus on the subgroup that is most under-represented. In this case, its the "
    "subgroup: {subgroup}. Show me your refined keywords that can help retrieve a composation "
    "of documents from different gender group closer to the target distribution. That is, "
    "knowing the retrieved documents have fewer than desired documents from group {subgroup}, "
    "you might want to include keywords about {subgroup}."
)
_KEYWORDS = re.compile(r"(?:refined\s+(?:keywords|query)|keywords)\s*[:\-]\s*(.+)", re.I)
#: a one-line answer that is a sentence, not keywords: a question or exclamation, a clause
#: break, or words of a refusal / hedge
_NOT_KEYWORDS = re.compile(
    r"[?!;]|\.\s|\b(?:i|i'm|cannot|can't|sorry|unable|unsure|maybe|not sure|as an ai)\b", re.I
)


def parse_keywords(answer: str, max_words: int = 12) -> str | None:
    """The refined keywords of an answer: the text after ``Refined keywords:`` (or
    ``Refined query:`` / ``Keywords:``) on its line, else a one-line answer that reads as
    keywords, not as a sentence (:data:`_NOT_KEYWORDS`: a question, a refusal, first-person
    words); quotes, markdown and list punctuation dropped. None (not refined, counted) when
    nothing is left or more than ``max_words`` words remain."""
    m = _KEYWORDS.search(answer)
    lines = [ln for ln in answer.strip().splitlines() if ln.strip()]
    text = m.group(1) if m else (lines[0] if len(lines) == 1 else "")
    if not m and _NOT_KEYWORDS.search(text):
        return None
    text = re.sub(r"[*_`\"“”\[\]]", " ", text).replace(",", " ")
    words = text.split()
    return " ".join(words) if 0 < len(words) <= max_words else None


@dataclass
class LLMRefiner:
    """Refines with an LLM (module docstring); temperature 0.3 as the paper, unless the
    endpoint sets another. A failed request stops the run
    (:func:`~groupbias.retrieval.llm.check_results`: nothing is stored, the answers received
    are cached); an answer that does not parse leaves its query as it is (counted in
    ``unparsed`` of ``asked``; :meth:`check` stops a run where more than the endpoint's
    ``max_failed_share`` of them did not parse)."""

    def check(self) -> None:
        """Raise :class:`~groupbias.retrieval.llm.RemoteCallError` naming the endpoint when
        more than ``max_failed_share`` of the answers so far did not parse."""
        share = self.endpoint.max_failed_share
        if self.asked and self.unparsed > share * self.asked:
            raise RemoteCallError(
                f"FAIR-QR refinements: {self.unparsed} of {self.asked} answers of "
                f"{self.endpoint.base_url} (model {self.endpoint.model}) did not parse (more "
                f"than max_failed_share = {share}); nothing is stored. Hint: check the model "
                "and prompt; answers that do not parse are not cached"
            )

    endpoint: ChatEndpoint
    unparsed: int = 0
    failed: int = 0
    asked: int = 0

    def prepare(self, index: BM25Index, first: Run, membership: np.ndarray) -> None:
        return None

    def refine(self, index: BM25Index, state: RefineState):
        from scipy import sparse

        names = state.group_names
        prompts = []
        for j in range(state.active.size):
            fmt = {
                "query": state.texts[j],
                "target": json.dumps(_percent(names, state.target[j])),
                "current": json.dumps(_percent(names, state.current[j])),
                "top_k": state.top_k,
                "subgroup": names[int(state.group[j])],
            }
            prompts.append(REFINE_PROMPT.format(**fmt))
        res = ChatClient(self.endpoint).complete_many(
            prompts, desc="FAIR-QR refine", parse=parse_keywords
        )
        self.failed += len(res.failed)
        self.unparsed += len(res.unparsed)
        self.asked += len(prompts)
        if res.failed:  # stops the run; unparsed answers are judged over the whole run
            check_results(res, self.endpoint, "FAIR-QR refinements")
        words = [("" if a is None else parse_keywords(a)) or "" for a in res.answers]
        added = index.query_weights([w for w in words])
        return sparse.csr_matrix(added), words


def _percent(names, dist) -> dict:
    return {n: f"{100 * v:.0f}%" for n, v in zip(names, dist)}


@dataclass
class FairQRResult:
    """The final run, and per query: the keywords added at each accepted iteration, Δ of the
    first retrieval and of every tried iteration, and the iterations accepted; ``refined``:
    the accepted retrieval in its own order (the final run without re-ranking), ``added``:
    the term weights the accepted refinements added, CSR [n_queries, n_terms]."""

    run: Run
    keywords: list[list[str]]
    kl: list[list[float | None]]
    iterations: np.ndarray
    no_target: int = 0
    refined: Run | None = None
    added: Any = None


@dataclass(frozen=True)
class FairQR:
    """FAIR-QR's loop (module docstring)."""

    top_k: int = 20
    depth: int = 100
    max_iterations: int = 5
    smoothing: float = 1e-3
    rerank: bool = True
    rerank_depth: int | None = None
    refined_weight: float = 0.0

    def __post_init__(self) -> None:
        integer("top_k", self.top_k, low=1)
        integer("depth", self.depth, low=self.top_k, what=f"an integer >= top_k={self.top_k}")
        integer("max_iterations", self.max_iterations, low=1)
        real("smoothing", self.smoothing, low=0.0, low_open=True)
        if not isinstance(self.rerank, bool):
            raise ParameterError("rerank", "true or false", self.rerank)
        if self.rerank_depth is not None:
            integer("rerank_depth", self.rerank_depth, low=1, high=self.depth)
        real("refined_weight", self.refined_weight, low=0.0, high=1.0)

    # long: the loop of the paper's Fig. 1, step by step, over all queries at once
    def run(
        self,
        index: BM25Index,
        queries: Sequence[str],
        membership: np.ndarray,
        target: np.ndarray,
        refiner: Refiner,
        *,
        group_names: Sequence[str],
    ) -> FairQRResult:
        """Run the loop for every query; ``membership`` one-hot [n_docs, n_groups],
        ``target`` [n_queries, n_groups + 1] (:func:`target_distribution`)."""
        from scipy import sparse

        names = (*group_names, "Unknown")
        n = len(queries)
        current = original = index.query_weights(list(queries))
        first = index.search(current, k=self.depth, on_empty="skip", tag="fair_qr")
        refiner.prepare(index, first, membership)
        dist = group_distribution(first, membership, self.top_k)
        defined = ~np.isnan(target).any(axis=1)
        t = np.nan_to_num(target)
        best_kl = _kl(dist, t, self.smoothing)
        kl = np.full((n, self.max_iterations + 1), np.nan)
        kl[defined, 0] = best_kl[defined]
        keywords = np.full((n, self.max_iterations), "", dtype=object)
        texts = np.array(list(queries), dtype=object)
        runs = [(np.arange(n), first)]
        accepted = np.zeros(n, dtype=np.int64)  # the iteration whose retrieval is kept
        active = np.flatnonzero(defined & (np.diff(first.qptr) > 0))
        for it in range(1, self.max_iterations + 1):
            if active.size == 0:
                break
            group = np.argmax(t[active] - dist[active], axis=1)
            state = RefineState(
                list(texts[active]), active, group, t[active], dist[active], names,
                self.top_k, current,
            )  # fmt: skip
            added, refined_words = refiner.refine(index, state)
            words = np.array(refined_words, dtype=object)
            refined = sparse.csr_matrix(current[active] + added)
            run = index.search(refined, k=self.depth, on_empty="skip", tag="fair_qr")
            new = group_distribution(run, membership, self.top_k)
            new_kl = _kl(new, t[active], self.smoothing)
            better = (new_kl < best_kl[active]) & (words != "")
            kl[active, it] = new_kl
            acc = active[better]
            keywords[acc, it - 1] = words[better]
            texts[acc] = texts[acc] + " " + words[better]
            accepted[acc] = it
            runs.append((active, run))
            current = current.tolil()
            current[acc] = refined[better]
            current = current.tocsr()
            best_kl[acc] = new_kl[better]
            dist[acc] = new[better]
            active = acc
        refined_run = self._accepted(runs, accepted)
        added = sparse.csr_matrix(current - original)
        final = refined_run
        if self.rerank:
            depth = self.top_k if self.rerank_depth is None else self.rerank_depth
            final = rerank(
                index, queries, refined_run, added, depth=depth,
                refined_weight=self.refined_weight,
            )  # fmt: skip
        return FairQRResult(
            final,
            [[w for w in row if w] for row in keywords.tolist()],
            [[v for v in row if v == v] for row in kl.tolist()],
            accepted,
            int((~defined).sum()),
            refined_run,
            added,
        )

    def _accepted(self, runs, accepted: np.ndarray) -> Run:
        """The accepted retrieval of every query (``runs``: ``(queries, run)`` of each
        iteration) in its own order, scored ``depth − rank``."""
        parts_q, parts_d = [], []
        for it, (which, run) in enumerate(runs):
            qi = which[run.query_index()]
            keep = accepted[qi] == it
            parts_q.append(qi[keep])
            parts_d.append(run.docs[keep])
        qi = np.concatenate(parts_q)
        docs = np.concatenate(parts_d).astype(np.int64)
        order = np.argsort(qi, kind="stable")
        qi, docs = qi[order], docs[order]
        counts = np.bincount(qi, minlength=accepted.size)
        qptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        rank = _rank_in(qptr)
        return Run(qptr, docs, (self.depth - rank).astype(np.float64), "fair_qr")


def rerank(
    index: BM25Index,
    queries: Sequence[str],
    run: Run,
    added=None,
    *,
    depth: int | None,
    refined_weight: float = 0.0,
) -> Run:
    """FAIR-QR's relevance re-ranking (seed 004, §2.2): the first ``depth`` documents of every
    query of ``run`` (None: all) ordered by ``s(q, d) + refined_weight · s(added, d)``, BM25
    of the original query ``q`` plus that share of the BM25 of the ``added`` term weights
    (CSR [n_queries, n_terms]; None: none), ties in the run's order; the documents below
    ``depth`` follow in the run's order. Scores: ``size − rank`` per query (the re-ranked
    head and the tail share no BM25 scale)."""
    qi = run.query_index()
    rank = _rank_in(run.qptr)
    head = rank < (rank.size if depth is None else depth)
    s = index.score_pairs(list(queries), qi, run.docs)
    if added is not None and refined_weight > 0:
        wt = index.weights.T.tocsr()
        s = s + refined_weight * np.asarray(added[qi].multiply(wt[run.docs]).sum(axis=1)).ravel()
    order = np.lexsort((rank, np.where(head, -s, 0.0), ~head, qi))
    sizes = np.diff(run.qptr)
    scores = (np.repeat(sizes, sizes) - rank).astype(np.float64)
    return Run(run.qptr, run.docs[order], scores, run.tag)


def _rank_in(qptr: np.ndarray) -> np.ndarray:
    sizes = np.diff(qptr)
    return np.arange(qptr[-1]) - np.repeat(qptr[:-1], sizes)
