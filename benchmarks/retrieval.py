"""Benchmark: BM25 indexing and search of groupbias.retrieval.bm25 against bm25s used
directly, and the LLM labeller's throughput against a sequential client.

1. A synthetic collection of ``--docs`` documents (default 100,000; words drawn from a
   Zipf-like vocabulary of 50,000 words, 20–80 words each) and two sets of ``--queries``
   queries (default 50, 2–4 words each): *frequent* (words of Zipf ranks 10–100, some
   30,000 matching documents per query) and *mid-frequency* (ranks 100–5,000).
   The peer is ``bm25s`` used directly: its own ``bm25s.tokenize`` (Lucene's stop words,
   Porter stemming by PyStemmer), ``bm25s.BM25(method="lucene")`` with the same k1 and b,
   and ``retrieve(k=1000)`` of the tokenized queries, with its default numpy backend and
   with its numba backend (compiled before timing); the faster of the two is the peer.
   Ours: ``BM25Index`` from the texts (our analyzer) and one batched ``search``. Index
   times are interleaved (ours, bm25s, ...) over ``--index-repeats``, searches over
   ``--repeats``; medians are compared. The top 10 of ours and the peer are compared (both
   Lucene BM25; the tokenisers differ in details, bm25s keeps float32 scores).
   ``rank_bm25.BM25Okapi`` (from our tokens, ``get_scores`` per query) is printed once as
   a reference line for the mid-frequency queries. Anserini (pyserini) runs only where a
   JDK and pyserini are found; otherwise the script says why it is skipped.
2. ``--big`` documents (default 1,000,000) indexed and searched by ours alone (0 skips it).
3. The LLM labeller on a local HTTP server (127.0.0.1, threaded, ``--latency`` seconds per
   answer): ``--prompts`` documents labelled by a sequential client (one urllib request after
   another) and by ``LLMLabeller`` with 8 requests in flight, no cache, interleaved.

The machine's load average is printed beside the timings; the last line is ``ratio: <bm25s
search time / our search time>`` for the frequent-term queries at ``--docs``.

    .venv/bin/python benchmarks/retrieval.py [--docs 100000] [--big 1000000] [--queries 50]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from groupbias.retrieval.bm25 import LUCENE_STOPWORDS, Analyzer, BM25Index  # noqa: E402
from groupbias.retrieval.labels import GENDER_PROMPTS, LLMLabeller  # noqa: E402
from groupbias.retrieval.llm import ChatEndpoint  # noqa: E402


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def make_collection(n_docs: int, n_queries: int, seed: int = 0):
    """``(texts, {"frequent": queries, "mid-frequency": queries})``."""
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}x" for i in range(50_000)], dtype=object)
    p = 1.0 / np.arange(1, vocab.size + 1) ** 1.07
    p /= p.sum()
    lengths = rng.integers(20, 81, size=n_docs)
    words = rng.choice(vocab.size, size=int(lengths.sum()), p=p)
    bounds = np.concatenate(([0], np.cumsum(lengths)))
    texts = [" ".join(vocab[words[a:b]]) for a, b in zip(bounds[:-1], bounds[1:])]
    queries = {}
    for name, ranks in (("mid-frequency", np.arange(100, 5000)), ("frequent", np.arange(10, 100))):
        queries[name] = [
            " ".join(vocab[rng.choice(ranks, size=int(rng.integers(2, 5)), replace=False)])
            for _ in range(n_queries)
        ]
    return texts, queries


def rank_bm25_search(bm25, tokens, k: int):
    out = []
    for q in tokens:
        s = bm25.get_scores(q)
        top = np.argpartition(-s, min(k, s.size - 1))[:k]
        out.append(top[np.argsort(-s[top], kind="stable")])
    return out


def anserini_reason() -> str | None:
    """Why Anserini is not run here (None: it could be)."""
    import importlib.util
    import shutil

    if shutil.which("java") is None:
        return "no JDK (java not on PATH)"
    if importlib.util.find_spec("pyserini") is None:
        return "pyserini not installed (pip install groupbias[anserini])"
    return "a JDK and pyserini are present, but building its Lucene index is not scripted yet"


def bm25s_tokenize(texts):
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("porter")
    return bm25s.tokenize(texts, stopwords=sorted(LUCENE_STOPWORDS), stemmer=stemmer,
                          show_progress=False)  # fmt: skip


def bm25s_index(texts, k1: float, b: float):
    import bm25s

    engine = bm25s.BM25(k1=k1, b=b, method="lucene")
    engine.index(bm25s_tokenize(texts), show_progress=False)
    return engine


def bm25s_search(engine, queries, k: int):
    tokens = bm25s_tokenize(queries)
    words = {i: w for w, i in tokens.vocab.items()}
    strings = [[words[i] for i in q] for q in tokens.ids]
    docs, _ = engine.retrieve(strings, k=min(k, engine.scores["num_docs"]), show_progress=False)
    return docs


def _top10(run, i):
    return set(run.docs[run.qptr[i] : run.qptr[i] + 10].tolist())


def bm25_part(n_docs: int, n_queries: int, repeats: int, index_repeats: int) -> float:
    import copy

    texts, query_sets = make_collection(n_docs, n_queries)
    k1, b = 0.9, 0.4
    print(f"collection: {n_docs:,} documents, {n_queries} queries per set ({load()})")
    t_ours, t_peer = [], []
    for _ in range(index_repeats):
        t0 = time.perf_counter()
        ours = BM25Index(texts, k1=k1, b=b)
        t_ours.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        peer = bm25s_index(texts, k1, b)
        t_peer.append(time.perf_counter() - t0)
    mo, mp = statistics.median(t_ours), statistics.median(t_peer)
    print(f"index (medians of {index_repeats}, interleaved): bm25s tokenize + index "
          f"{mp:.2f} s, ours (BM25Index from text) {mo:.2f} s; ours / bm25s {mo / mp:.2f} "
          f"({load()})")  # fmt: skip
    peers = {"bm25s numpy backend": peer}
    try:
        fast = copy.copy(peer)  # the same index, retrieved by bm25s's numba backend
        fast.backend = "numba"
        bm25s_search(fast, query_sets["frequent"][:2], 1000)  # compile before timing
        peers["bm25s numba backend"] = fast
    except Exception as exc:  # numba missing or failing: the numpy backend alone
        print(f"bm25s numba backend skipped: {exc}")
    reason = anserini_reason()
    if reason is not None:
        print(f"anserini: skipped ({reason})")
    ratio = float("nan")
    for name in ("frequent", "mid-frequency"):
        queries = query_sets[name]
        matches = (ours.query_weights(queries) @ ours.weights).nnz / n_queries
        times: dict[str, list[float]] = {p: [] for p in peers} | {"ours": []}
        for _ in range(repeats):
            for p, engine in peers.items():
                t0 = time.perf_counter()
                theirs = bm25s_search(engine, queries, 1000)
                times[p].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            run = ours.search(queries, k=1000)
            times["ours"].append(time.perf_counter() - t0)
        med = {p: statistics.median(v) for p, v in times.items()}
        best = min(peers, key=med.__getitem__)
        overlap = np.mean(
            [len(set(theirs[i][:10].tolist()) & _top10(run, i)) / 10 for i in range(n_queries)]
        )
        peer_times = ", ".join(f"{p} {med[p]:.3f} s" for p in peers)
        print(f"search, {name} queries ({matches:,.0f} matching documents per query; top 1000; "
              f"medians of {repeats}, interleaved): {peer_times}; ours {med['ours']:.4f} s; "
              f"{best} / ours {med[best] / med['ours']:.2f}; top-10 overlap with bm25s "
              f"{overlap:.2f} ({load()})")  # fmt: skip
        if name == "frequent":
            ratio = med[best] / med["ours"]
    try:
        from rank_bm25 import BM25Okapi
    except ImportError:
        print("rank_bm25: skipped (not installed)")
        return ratio
    analyzer = Analyzer()
    t0 = time.perf_counter()
    okapi = BM25Okapi(analyzer.analyze(texts), k1=k1, b=b)
    t_index = time.perf_counter() - t0
    t0 = time.perf_counter()
    rank_bm25_search(okapi, analyzer.analyze(query_sets["mid-frequency"]), 1000)
    t_search = time.perf_counter() - t0
    print(f"reference, rank_bm25 BM25Okapi (once; from our tokens): index {t_index:.2f} s, "
          f"mid-frequency search {t_search:.3f} s ({load()})")  # fmt: skip
    return ratio


def big_part(n_docs: int, n_queries: int) -> None:
    texts, query_sets = make_collection(n_docs, n_queries, seed=1)
    t0 = time.perf_counter()
    ix = BM25Index(texts)
    t_index = time.perf_counter() - t0
    t0 = time.perf_counter()
    run = ix.search(query_sets["frequent"], k=1000)
    t_search = time.perf_counter() - t0
    print(f"ours alone at {n_docs:,} documents: index {t_index:.1f} s, search of {n_queries} "
          f"frequent-term queries {t_search:.3f} s, {run.docs.size:,} results "
          f"({load()})")  # fmt: skip


def _sequential(url: str, prompts) -> list[str]:
    out = []
    for p in prompts:
        body = json.dumps({"model": "bench", "messages": [{"role": "user", "content": p}]})
        req = urllib.request.Request(
            url, data=body.encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            out.append(json.loads(resp.read())["choices"][0]["message"]["content"])
    return out


def llm_part(n_prompts: int, latency: float, repeats: int) -> float:
    import logging

    from pytest_httpserver import HTTPServer
    from werkzeug import Response

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request

    def answer(request):
        time.sleep(latency)
        body = {"choices": [{"message": {"content": "Neutral"}}]}
        return Response(json.dumps(body), content_type="application/json")

    texts = [f"document number {i} about the weather" for i in range(n_prompts)]
    prompts = [GENDER_PROMPTS["zero_shot"].replace("{passage}", t) for t in texts]
    with HTTPServer(host="127.0.0.1", threaded=True) as server:
        server.expect_request("/v1/chat/completions").respond_with_handler(answer)
        url = server.url_for("/v1/chat/completions")
        ep = ChatEndpoint(base_url=server.url_for("/v1"), model="bench", concurrency=8)
        t_seq, t_ours = [], []
        for _ in range(repeats):
            t0 = time.perf_counter()
            seq = _sequential(url, prompts)
            t_seq.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            res = LLMLabeller(ep).label(texts)
            t_ours.append(time.perf_counter() - t0)
        assert seq == ["Neutral"] * n_prompts and res.labels.tolist() == ["N"] * n_prompts
    ms, mo = statistics.median(t_seq), statistics.median(t_ours)
    print(f"LLM labels ({n_prompts} documents, {latency * 1000:.0f} ms per answer; medians of "
          f"{repeats}): sequential {n_prompts / ms:.1f} docs/s, ours (8 in flight) "
          f"{n_prompts / mo:.1f} docs/s ({load()})")  # fmt: skip
    return ms / mo


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--big", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--index-repeats", type=int, default=3)
    ap.add_argument("--prompts", type=int, default=64)
    ap.add_argument("--latency", type=float, default=0.05)
    args = ap.parse_args(argv)
    llm = llm_part(args.prompts, args.latency, args.repeats)
    print(f"llm throughput ratio (ours with 8 in flight / sequential): {llm:.2f}")
    if args.big:
        big_part(args.big, args.queries)
    ratio = bm25_part(args.docs, args.queries, args.repeats, args.index_repeats)
    print(f"ratio: {ratio:.2f}")


if __name__ == "__main__":
    main()
