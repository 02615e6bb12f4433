"""The bias and utility of runs against hand computations and ir_measures; MMR, FA*IR and
FAIR-QR's loop on small examples; the LLM refiner against a local HTTP server."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from pytest_httpserver import HTTPServer
from scipy import sparse
from werkzeug import Response

from groupbias.core.errors import ParameterError
from groupbias.data.membership import term_membership
from groupbias.data.text import Run, TextCollection
from groupbias.pipelines.retrieval import RunJudge
from groupbias.retrieval.bm25 import Analyzer, BM25Index
from groupbias.retrieval.fair_qr import (
    FairQR,
    LLMRefiner,
    LogOddsRefiner,
    group_distribution,
    parse_keywords,
    target_distribution,
)
from groupbias.retrieval.llm import ChatEndpoint, RemoteCallError
from groupbias.retrieval.rerank import fair_table, fair_topk, mmr

TEXTS = ["he he she x", "she y", "z w", "his father"]
WORDS = {"M": ("he", "his", "father"), "F": ("she",)}


def _collection(texts=TEXTS, labels=("M", "F", "N", "M"), qrels=None):
    n = len(texts)
    q = qrels if qrels is not None else np.array([[1, 0, 1, 0]])
    return TextCollection(
        doc_ids=np.array([f"d{i + 1}" for i in range(n)], dtype=object),
        texts=tuple(texts),
        query_ids=np.array([f"q{i}" for i in range(q.shape[0])], dtype=object),
        queries=tuple("query" for _ in range(q.shape[0])),
        qrels=sparse.csr_matrix(q),
        doc_labels={"gender": np.array(labels, dtype=object)},
    )


def _log_w(r):
    return 1.0 / math.log2(1 + r)


def test_arab_nfairr_texfair_cwex_of_a_run_equal_a_hand_computation():
    c = _collection()
    tm = term_membership(list(c.texts), WORDS)
    judge = RunJudge(c, "gender", ("M", "F", "N"), "N", tm.counts, tm.lengths, k=10)
    run = Run(np.array([0, 4]), np.array([0, 1, 2, 3]), np.array([4.0, 3.0, 2.0, 1.0]))
    got = judge.per_query(
        run,
        [
            {"name": "arab", "key": "arab", "magnitude": "tf", "membership": "counts"},
            {"name": "nfairr", "key": "nfairr", "tau": 1.0, "membership": "counts"},
            {"name": "texfair", "key": "texfair", "membership": "term_share"},
            {"name": "cwex", "key": "cwex", "alpha": 0.5, "membership": "gendered"},
        ],
    )
    counts = [(2, 1), (0, 1), (0, 0), (2, 0)]  # male, female terms of d1..d4
    lengths = [4, 2, 2, 2]
    # ARaB: the mean over x = 1..T of RaB@x = mean_{r <= x} (ln(1 + M) - ln(1 + F))
    delta = [math.log1p(m) - math.log1p(f) for m, f in counts]
    rab = [sum(delta[:x]) / x for x in range(1, 5)]
    assert got["arab"][0] == pytest.approx(sum(rab) / 4)
    # NFaiRR (tau = 1): omega = 1 when M + F <= 1, else 1 - sum |share - 1/2|
    omega = [
        1.0 if m + f <= 1 else 1 - abs(m / (m + f) - 0.5) - abs(f / (m + f) - 0.5)
        for m, f in counts
    ]
    fairr = sum(o * _log_w(r) for r, o in enumerate(omega, 1))
    ideal = sum(o * _log_w(r) for r, o in enumerate(sorted(omega, reverse=True), 1))
    assert omega == pytest.approx([2 / 3, 1, 1, 0])
    assert got["nfairr"][0] == pytest.approx(fairr / ideal)
    # TExFAIR: group shares of term exposure, times RBDF
    em = sum(m / n * _log_w(r) for r, ((m, _), n) in enumerate(zip(counts, lengths), 1))
    ef = sum(f / n * _log_w(r) for r, ((_, f), n) in enumerate(zip(counts, lengths), 1))
    ted = abs(em / (em + ef) - 0.5) + abs(ef / (em + ef) - 0.5)
    rbdf = sum(_log_w(r) for r in (1, 2, 4)) / sum(_log_w(r) for r in (1, 2, 3, 4))
    assert got["texfair"][0] == pytest.approx(1 - ted * rbdf)
    # CWEx(0.5) on the labels M, F, N, M
    total = sum(_log_w(r) for r in range(1, 5))
    exp_m, exp_f, exp_n = (_log_w(1) + _log_w(4)) / total, _log_w(2) / total, _log_w(3) / total
    assert got["cwex"][0] == pytest.approx(0.5 * exp_n - 0.5 * abs(exp_m - exp_f))


def test_utility_of_a_run_equals_ir_measures_with_missed_relevant_documents():
    import ir_measures
    from ir_measures import Qrel, ScoredDoc

    rng = np.random.default_rng(5)
    n_docs, n_q = 40, 6
    grades = (rng.random((n_q, n_docs)) < 0.15) * rng.integers(1, 3, (n_q, n_docs))
    grades[5] = 0  # a query without relevant documents
    c = _collection(texts=[f"t{i}" for i in range(n_docs)], labels=["N"] * n_docs, qrels=grades)
    docs, qptr = [], [0]
    for q in range(n_q):
        docs += rng.permutation(n_docs)[: [15, 3, 12, 0, 8, 10][q]].tolist()
        qptr.append(len(docs))
    scores = np.concatenate([np.arange(b - a, 0, -1.0) for a, b in zip(qptr[:-1], qptr[1:])])
    run = Run(np.array(qptr), np.array(docs), scores)
    judge = RunJudge(c, "gender", ("M", "F", "N"), "N", k=10)
    got = judge.per_query(
        run, [{"name": "ndcg", "key": "ndcg@10", "k": 10, "gain": "linear"}, "map@10", "mrr@10"]
    )  # trec_eval's nDCG has linear gains
    qrels = [
        Qrel(f"q{q}", f"d{d + 1}", int(grades[q, d]))
        for q in range(n_q)
        for d in range(n_docs)
        if grades[q, d] > 0
    ]
    ir_run = [
        ScoredDoc(f"q{q}", f"d{docs[i] + 1}", float(scores[i]))
        for q in range(n_q)
        for i in range(qptr[q], qptr[q + 1])
    ]
    want = {
        m: {r.query_id: r.value for r in ir_measures.iter_calc([m], qrels, ir_run)}
        for m in (ir_measures.nDCG @ 10, ir_measures.AP @ 10, ir_measures.RR @ 10)
    }
    for key, m in zip(("ndcg@10", "map@10", "mrr@10"), want):
        for q in range(5):
            assert got[key][q] == pytest.approx(want[m].get(f"q{q}", 0.0), abs=1e-12), (key, q)
        assert np.isnan(got[key][5])  # no relevant document: skipped


def test_fair_table_is_the_binomial_quantile_of_fa_ir():
    for k, p, alpha in ((20, 0.5, 0.1), (30, 0.3, 0.15), (12, 0.7, 0.05)):
        want = [0]
        for i in range(1, k + 1):
            m, cdf = 0, (1 - p) ** i
            while cdf <= alpha:
                m += 1
                cdf += math.comb(i, m) * p**m * (1 - p) ** (i - m)
            want.append(m)
        assert fair_table(k, p, alpha).tolist() == want


def test_awrf_target_counts_the_relevant_documents_a_run_missed():
    """AWRF@2 by hand: q0's relevant documents are d1 (M) and d2 (F), so the target is
    (1/2, 1/2) although the run retrieves only M documents (d1, d3); exposure (1, 0);
    JS = ½ log2(4/3) + ½ (½ log2(2/3) + ½ log2 2) = 0.311278, AWRF = 0.688722. q1 retrieves
    no relevant document (target (0, 1): d4; exposure all M, JS = 1, AWRF = 0); q2
    retrieves nothing: no exposure, undefined."""
    c = _collection(
        texts=["a", "b", "c", "d"],
        labels=("M", "F", "M", "F"),
        qrels=np.array([[1, 1, 0, 0], [0, 0, 0, 1], [1, 0, 0, 0]]),
    )
    run = Run(np.array([0, 2, 3, 3]), np.array([0, 2, 0]), np.array([2.0, 1.0, 1.0]))
    judge = RunJudge(c, "gender", ("M", "F"), None, k=2)
    got = judge.per_query(run, [{"name": "awrf", "key": "awrf@2", "k": 2, "target": "relevant"}])
    js = 0.5 * math.log2(4 / 3) + 0.5 * (0.5 * math.log2(2 / 3) + 0.5)
    assert got["awrf@2"][0] == pytest.approx(1 - js, abs=1e-12)
    assert got["awrf@2"][1] == pytest.approx(0.0, abs=1e-12)
    assert np.isnan(got["awrf@2"][2])
    with pytest.raises(ParameterError, match="judge's k=2"):
        judge.per_query(run, ["ndcg@5"])


def test_fa_ir_lifts_protected_documents_to_the_required_positions():
    # one query, 8 documents by score; the protected ones are the last three
    run = Run(np.array([0, 8]), np.arange(8), np.arange(8, 0, -1.0))
    prot = np.array([0, 0, 0, 0, 0, 1, 1, 1], bool)
    out = fair_topk(run, prot, k=8, p=0.5, alpha=0.1)
    m = fair_table(8, 0.5, 0.1)
    top_prot = np.cumsum(prot[out.docs])
    assert np.all(top_prot >= m[1:])  # ranked group fairness holds at every prefix
    # and protected documents are placed no earlier than needed, best first within groups
    assert out.docs[prot[out.docs]].tolist() == [5, 6, 7]
    assert out.docs[~prot[out.docs]].tolist() == [0, 1, 2, 3, 4]
    first_needed = int(np.argmax(m[1:] > 0))
    assert out.docs[first_needed] == 5


def test_mmr_trades_relevance_for_novelty():
    texts = ["nurse pay nurse", "nurse pay nurse", "nurse union strike", "garden"]
    ix = BM25Index(texts, analyzer=Analyzer(stopwords="none", stemmer="none"))
    run = Run(np.array([0, 3]), np.array([0, 1, 2]), np.array([3.0, 2.0, 1.0]))
    # λ = 1: relevance only; λ = 0.5: the duplicate of the first document drops below
    assert mmr(ix, run, lam=1.0, depth=3).docs.tolist() == [0, 1, 2]
    assert mmr(ix, run, lam=0.5, depth=3).docs.tolist() == [0, 2, 1]


def _fair_collection():
    texts = [
        "nurse salary report",  # 0 M
        "nurse salary review",  # 1 M
        "nurse salary survey",  # 2 M
        "nurse salary women union",  # 3 F (reached only through 'women' or 'union')
        "women union nurse",  # 4 F
        "union women meeting",  # 5 F
    ]
    return _collection(
        texts=texts,
        labels=["M", "M", "M", "F", "F", "F"],
        qrels=np.array([[1, 0, 0, 1, 1, 0]]),
    ).with_labels(gender=np.array(["M", "M", "M", "F", "F", "F"], dtype=object))


class _AddWords:
    """A refiner that adds given words, one per iteration."""

    def __init__(self, words):
        self.words = list(words)
        self.calls = []

    def prepare(self, index, first, membership):
        return None

    def refine(self, index, state):
        self.calls.append(state.group_names[int(state.group[0])])
        w = self.words.pop(0) if self.words else ""
        return index.query_weights([w] * state.active.size), [w] * state.active.size


def test_fair_qr_refines_while_kl_falls_and_reranks_by_the_original_query():
    c = _fair_collection()
    ix = BM25Index(c.texts, analyzer=Analyzer(stopwords="none", stemmer="none"))
    m = c.membership("gender", ["M", "F"])
    target = target_distribution(c.qrels, m)
    np.testing.assert_allclose(target, [[1 / 3, 2 / 3, 0.0]])
    refiner = _AddWords(["women", "garden", "union"])
    out = FairQR(top_k=3, depth=6, max_iterations=3).run(
        ix, ["nurse salary"], m, target, refiner, group_names=("M", "F")
    )
    # 'women' brings female documents (KL falls); 'garden' changes nothing: the loop stops
    assert out.keywords == [["women"]] and out.iterations.tolist() == [1]
    assert (
        refiner.calls[0] == "F"
        and len(refiner.calls) == 2
        and len(out.kl[0]) == 3
        and out.kl[0][1] < out.kl[0][0]
    )
    # the final list: what 'nurse salary women' retrieved, its top_k = 3 re-ordered by BM25 on
    # 'nurse salary' (seed 004: the retrieved list re-ranked), the rest in the refined order
    refined = out.refined.docs.tolist()
    docs = out.run.docs.tolist()
    assert sorted(docs[:3]) == sorted(refined[:3]) and docs[3:] == refined[3:]
    base = ix.score_pairs(["nurse salary"], np.zeros(6, int), np.array(docs))
    assert np.all(np.diff(base[:3]) <= 0)
    assert np.all(np.diff(out.run.scores) < 0)  # the order a TREC run file keeps
    # re-ranking all six by the original query, or keeping the refined order (weight 1)
    deep = FairQR(top_k=3, depth=6, max_iterations=3, rerank_depth=6).run(
        ix, ["nurse salary"], m, target, _AddWords(["women", "garden"]), group_names=("M", "F")
    )
    assert np.all(np.diff(ix.score_pairs(["nurse salary"], np.zeros(6, int), deep.run.docs)) <= 0)
    assert deep.run.docs.tolist()[:3] != docs[:3]  # the original query's documents come back
    same = FairQR(top_k=3, depth=6, max_iterations=3, refined_weight=1.0).run(
        ix, ["nurse salary"], m, target, _AddWords(["women", "garden"]), group_names=("M", "F")
    )
    assert same.run.docs.tolist() == refined
    with pytest.raises(ParameterError, match="rerank_depth"):
        FairQR(depth=100, rerank_depth=101)
    with pytest.raises(ParameterError, match="refined_weight"):
        FairQR(refined_weight=1.5)
    dist = group_distribution(ix.search(["nurse salary women"], k=6), m, 3)
    assert dist[0, 1] > group_distribution(ix.search(["nurse salary"], k=6), m, 3)[0, 1]


def test_offline_refiner_adds_terms_of_the_under_represented_group():
    c = _fair_collection()
    ix = BM25Index(c.texts, analyzer=Analyzer(stopwords="none", stemmer="none"))
    m = c.membership("gender", ["M", "F"])
    out = FairQR(top_k=3, depth=6, max_iterations=2).run(
        ix, ["nurse salary"], m, target_distribution(c.qrels, m), LogOddsRefiner(terms=1),
        group_names=("M", "F"),
    )  # fmt: skip
    assert out.keywords[0] and out.keywords[0][0] in ("women", "union")


@pytest.mark.parametrize(
    "answer,expected",
    [
        ("Refined keywords: women nurses", "women nurses"),
        ('**Refined query:** "nurse salary female"', "nurse salary female"),
        ("female, women", "female women"),
        ("Here are some thoughts.\nI cannot decide.", None),
        ("", None),
        # one line that is a sentence, not keywords: a refusal is not a refinement
        ("I cannot determine this; maybe non-binary?", None),
        ("Sorry, unable to help", None),
        ("Not sure. Nurse pay", None),
        ("nurse salary women", "nurse salary women"),
    ],
)
def test_refined_keywords_parse(answer, expected):
    assert parse_keywords(answer) == expected


def test_llm_refiner_asks_with_seed_004_prompt_against_a_local_server(tmp_path):
    c = _fair_collection()
    ix = BM25Index(c.texts, analyzer=Analyzer(stopwords="none", stemmer="none"))
    m = c.membership("gender", ["M", "F"])
    seen = []

    def answer(request):
        body = request.get_json()
        seen.append(body)
        text = "Refined keywords: women" if len(seen) == 1 else "I am not sure.\nMaybe nothing."
        return Response(
            json.dumps({"choices": [{"message": {"content": text}}]}),
            content_type="application/json",
        )

    with HTTPServer(host="127.0.0.1", threaded=True) as server:
        server.expect_request("/v1/chat/completions").respond_with_handler(answer)
        ep = ChatEndpoint(
            base_url=server.url_for("/v1"), model="m", temperature=0.3, cache_dir=str(tmp_path)
        )
        refiner = LLMRefiner(ep)
        out = FairQR(top_k=3, depth=6, max_iterations=3).run(
            ix, ["nurse salary"], m, target_distribution(c.qrels, m), refiner,
            group_names=("M", "F"),
        )  # fmt: skip
    prompt = seen[0]["messages"][0]["content"]
    assert seen[0]["temperature"] == 0.3
    assert "query: nurse salary are from diverse" in prompt
    assert '"F": "67%"' in prompt and "the subgroup: F." in prompt and "first 3 documents" in prompt
    assert out.keywords == [["women"]] and refiner.unparsed == 1 and refiner.failed == 0
    assert refiner.asked == 2
    assert "nurse salary women" in seen[1]["messages"][0]["content"]
    # one answer in two did not parse: beyond the endpoint's share, the run stops naming it
    with pytest.raises(RemoteCallError, match="1 of 2 answers of http://127.0.0.1"):
        refiner.check()
    lenient = ChatEndpoint(base_url=ep.base_url, model="m", max_failed_share=0.05)
    LLMRefiner(lenient, unparsed=1, asked=40).check()  # within the share it allows


def test_nfairr_background_has_one_set_of_names_in_code_config_and_docs():
    """The metric and the judge take the same names (the table configurations said
    candidates | collection, the retrieval docs retrieved | top_k); nfairr() refuses top_k
    with the hint to pass the top k, and reads the alias retrieved as candidates."""
    from pathlib import Path

    from groupbias.evaluation import fairness as F
    from groupbias.pipelines.retrieval import NFAIRR_BACKGROUNDS

    assert NFAIRR_BACKGROUNDS == F.BACKGROUNDS == ("candidates", "top_k", "collection")
    s, q = np.array([2.0, 1.0, 3.0]), np.array([0, 3])
    m = np.array([[1.0, 0.0], [0.0, 0.0], [0.5, 0.5]])
    alias = F.nfairr(s, qptr=q, membership=m, k=2, background="retrieved", reduce=None)
    same = F.nfairr(s, qptr=q, membership=m, k=2, background="candidates", reduce=None)
    assert np.array_equal(alias, same)
    with pytest.raises(ParameterError, match="pass the ranking's top k") as info:
        F.nfairr(s, qptr=q, membership=m, k=2, background="top_k", reduce=None)
    assert info.value.name == "background"
    repo = Path(__file__).resolve().parents[2]
    used = set()
    for folder, pattern in (("configs", "*.yaml"), ("experiments", "*.py"), ("docs", "*.md")):
        for path in (repo / folder).rglob(pattern):
            text = path.read_text()
            used |= set(re.findall(r"""background["']?:\s*["']?(\w+)""", text))
            used |= set(re.findall(r"background=[\"']?(\w+)", text))
    assert used and used <= set(F.BACKGROUNDS), used


def test_nfairr_background_is_the_retrieved_list_or_the_top_k_by_hand():
    """Run d1..d4 at k = 2, ω = 2/3, 1, 1, 0 (τ = 1 on the lexicon counts). FaiRR@2 =
    2/3 + 1/log2(3) either way; IFaiRR@2 of ``top_k`` (d1, d2) is 1 + (2/3)/log2(3), of
    ``candidates`` (all four: d2, d3 first) 1 + 1/log2(3); ``collection`` is every
    retrieved document of every query (this one: as ``candidates``); ``retrieved`` is the
    documented alias of ``candidates``."""
    c = _collection()
    tm = term_membership(list(c.texts), WORDS)
    judge = RunJudge(c, "gender", ("M", "F", "N"), "N", tm.counts, tm.lengths, k=2)
    run = Run(np.array([0, 4]), np.array([0, 1, 2, 3]), np.array([4.0, 3.0, 2.0, 1.0]))
    entry = {"name": "nfairr", "tau": 1.0, "membership": "counts"}
    got = judge.per_query(
        run,
        [
            {**entry, "key": "default"},
            {**entry, "key": "candidates", "background": "candidates"},
            {**entry, "key": "retrieved", "background": "retrieved"},
            {**entry, "key": "top_k", "background": "top_k"},
            {**entry, "key": "collection", "background": "collection"},
        ],
    )
    fairr = 2 / 3 + 1 / math.log2(3)
    assert got["top_k"][0] == pytest.approx(fairr / (1 + (2 / 3) / math.log2(3)), rel=1e-12)
    assert got["candidates"][0] == pytest.approx(fairr / (1 + 1 / math.log2(3)), rel=1e-12)
    assert got["default"][0] == got["candidates"][0]  # seed 002's convention is the default
    assert got["retrieved"][0] == got["candidates"][0] == got["collection"][0]
    with pytest.raises(ParameterError, match="background"):
        judge.per_query(run, [{**entry, "background": "pool"}])
    with pytest.raises(ParameterError, match="background"):
        judge.per_query(run, [{"name": "cwex", "background": "top_k"}])
