"""Benchmark: BM25 search of groupbias.retrieval.bm25 against rank_bm25, and the LLM
labeller's throughput against a sequential client.

1. A synthetic collection of ``--docs`` documents (default 100,000; words drawn from a
   Zipf-like vocabulary of 50,000 words, 20–80 words each) and ``--queries`` queries (default
   50, 2–4 words of middle frequency). Both engines get the same analyzed tokens (our
   analyzer: lower-case, Lucene stop words, Porter stemming). The peer is
   ``rank_bm25.BM25Okapi`` (index from the token lists, then ``get_scores`` per query and
   the top 1000 by ``argpartition``); ours is ``BM25Index`` (bm25s weights) and one batched
   ``search`` of all queries. Index times are printed once; searches run ``--repeats``
   times interleaved (peer, ours, peer, ...) and their medians are compared. The top 10 of
   both are compared too (rank_bm25's BM25Okapi has another idf, so they need not agree).
2. ``--big`` documents (default 1,000,000) indexed and searched by ours alone (0 skips it).
3. The LLM labeller on a local HTTP server (127.0.0.1, threaded, ``--latency`` seconds per
   answer): ``--prompts`` documents labelled by a sequential client (one urllib request after
   another) and by ``LLMLabeller`` with 8 requests in flight, no cache, interleaved.

The machine's load average is printed beside the timings; the last line is ``ratio: <peer
search time / our search time>`` (at ``--docs``).

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

from groupbias.retrieval.bm25 import Analyzer, BM25Index  # noqa: E402
from groupbias.retrieval.labels import GENDER_PROMPTS, LLMLabeller  # noqa: E402
from groupbias.retrieval.llm import ChatEndpoint  # noqa: E402


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def make_collection(n_docs: int, n_queries: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}x" for i in range(50_000)], dtype=object)
    p = 1.0 / np.arange(1, vocab.size + 1) ** 1.07
    p /= p.sum()
    lengths = rng.integers(20, 81, size=n_docs)
    words = rng.choice(vocab.size, size=int(lengths.sum()), p=p)
    bounds = np.concatenate(([0], np.cumsum(lengths)))
    texts = [" ".join(vocab[words[a:b]]) for a, b in zip(bounds[:-1], bounds[1:])]
    mid = np.arange(100, 5000)
    queries = [
        " ".join(vocab[rng.choice(mid, size=int(rng.integers(2, 5)), replace=False)])
        for _ in range(n_queries)
    ]
    return texts, queries


def peer_search(bm25, tokens, k: int):
    out = []
    for q in tokens:
        s = bm25.get_scores(q)
        top = np.argpartition(-s, min(k, s.size - 1))[:k]
        out.append(top[np.argsort(-s[top], kind="stable")])
    return out


def bm25_part(n_docs: int, n_queries: int, repeats: int) -> float:
    from rank_bm25 import BM25Okapi

    texts, queries = make_collection(n_docs, n_queries)
    analyzer = Analyzer()
    print(f"collection: {n_docs:,} documents, {n_queries} queries ({load()})")
    t0 = time.perf_counter()
    ours = BM25Index(texts, k1=1.5, b=0.75, analyzer=analyzer)
    t_ours_index = time.perf_counter() - t0
    tokens = analyzer.analyze(texts)
    qtokens = analyzer.analyze(queries)
    t0 = time.perf_counter()
    peer = BM25Okapi(tokens, k1=1.5, b=0.75)
    t_peer_index = time.perf_counter() - t0
    print(f"index: rank_bm25 {t_peer_index:.2f} s (from tokens), ours {t_ours_index:.2f} s "
          f"(analysis included) ({load()})")  # fmt: skip
    t_peer, t_ours = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        theirs = peer_search(peer, qtokens, 1000)
        t_peer.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        run = ours.search(queries, k=1000)
        t_ours.append(time.perf_counter() - t0)
    overlap = np.mean(
        [
            len(set(theirs[i][:10]) & set(run.docs[run.qptr[i] : run.qptr[i] + 10])) / 10
            for i in range(n_queries)
        ]
    )
    mp, mo = statistics.median(t_peer), statistics.median(t_ours)
    print(f"search ({n_queries} queries, top 1000; medians of {repeats}): rank_bm25 {mp:.3f} s, "
          f"ours {mo:.4f} s; top-10 overlap {overlap:.2f} ({load()})")  # fmt: skip
    return mp / mo


def big_part(n_docs: int, n_queries: int) -> None:
    texts, queries = make_collection(n_docs, n_queries, seed=1)
    t0 = time.perf_counter()
    ix = BM25Index(texts)
    t_index = time.perf_counter() - t0
    t0 = time.perf_counter()
    run = ix.search(queries, k=1000)
    t_search = time.perf_counter() - t0
    print(f"ours alone at {n_docs:,} documents: index {t_index:.1f} s, search of {n_queries} "
          f"queries {t_search:.3f} s, {run.docs.size:,} results ({load()})")  # fmt: skip


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
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--prompts", type=int, default=64)
    ap.add_argument("--latency", type=float, default=0.05)
    args = ap.parse_args(argv)
    llm = llm_part(args.prompts, args.latency, args.repeats)
    print(f"llm throughput ratio (ours with 8 in flight / sequential): {llm:.2f}")
    if args.big:
        big_part(args.big, args.queries)
    ratio = bm25_part(args.docs, args.queries, args.repeats)
    print(f"ratio: {ratio:.2f}")


if __name__ == "__main__":
    main()
