"""Benchmark: click-log simulation, 10⁶ sessions × 10 positions, against one-shot numpy.

Input: the embedded synthetic dataset (400 queries, lists of 10..60 items, graded relevance,
35 % affected items), per-query propensities β_q ~ N(0.8, 0.1), a noisy-relevance logging
ranking, PBM users (η = 1, 2 % noise clicks), shuffle interventions in 10 % of the sessions.

Ours: :func:`groupbias.simulate.clicks.simulate_click_log` for all sessions, building the
whole columnar log (session, query, item, position, click, time). Peer: the same model in
one shot of numpy as a researcher writes it for lists of at least 10 items (the top-10 table
indexed by all sessions' queries at once, shuffles by a per-row argsort of random keys, one
uniform per slot, the columns by ``repeat``/``tile``); it builds the same columns. The two
are timed interleaved (``--rounds``, medians), no result kept alive while the other runs;
they must agree on the click rate per position (within 5 standard errors: they draw
different random numbers). The earlier baseline, the per-session Python loop (timed on
``--loop-sessions`` sessions, extrapolated), is a reference line, and so are ours with the
numpy passes only (the path without numba) and the floor: the six columns of the log
written once into fresh memory plus the uniforms of the clicks drawn (what any
implementation pays). The last line is ``ratio: <one-shot numpy seconds / our seconds>``,
the load beside it.

Usage: python benchmarks/clicks.py [--sessions 1000000] [--loop-sessions 20000]
       [--rounds 5] [--logging det|pl]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import interleaved, load  # noqa: E402

from data_loaders.synthetic import make_synthetic  # noqa: E402
from groupbias._fast import use_backend  # noqa: E402
from groupbias.simulate.clicks import UserModel, simulate_click_log, top_k_table  # noqa: E402
from groupbias.simulate.group_bias import draw_query_beta, relevance_from_labels  # noqa: E402


def loop_simulation(rel, groups, qptr, scores, beta_q, n_sessions, rng):
    """The per-session reference: one Python iteration per session and position."""
    top = top_k_table(scores, qptr, 10)
    n_q = qptr.size - 1
    clicks_at = np.zeros(10)
    rows = []
    for s in range(n_sessions):
        q = int(rng.integers(0, n_q))
        shown = list(top[q])
        if rng.random() < 0.1:
            rng.shuffle(shown)
        for k, i in enumerate(shown):
            a = rel[i] * (beta_q[q] if groups[i] == 1 else 1.0)
            c = rng.random() < (0.02 + 0.98 * a) / (k + 1)
            clicks_at[k] += c
            rows.append((s, q, i - qptr[q], k + 1, int(c)))
    return clicks_at / n_sessions, rows


def one_shot(rel, groups, qptr, scores, beta_q, n_sessions, rng):
    """One-shot numpy: every session at once (lists of at least 10 items)."""
    top = top_k_table(scores, qptr, 10)
    n_q = qptr.size - 1
    queries = rng.integers(0, n_q, size=n_sessions)
    shown = top[queries]
    hit = np.flatnonzero(rng.random(n_sessions) < 0.1)
    perm = np.argsort(rng.random((hit.size, 10)), axis=1)
    shown[hit] = np.take_along_axis(shown[hit], perm, axis=1)
    g = groups[shown]
    att = rel[shown] * (g * beta_q[queries][:, None] + 1.0 - g)
    theta = 1.0 / np.arange(1, 11)
    click = rng.random(shown.shape) < theta * (0.02 + 0.98 * att)
    session = np.repeat(np.arange(n_sessions), 10)
    return {
        "session": session,
        "query": np.repeat(queries, 10),
        "item": (shown - qptr[queries][:, None]).ravel(),
        "position": np.tile(np.arange(1, 11), n_sessions),
        "click": click.ravel().astype(np.int8),
        "time": session.astype(np.float64),
    }


def floor(n_rows: int, rng):
    """The log's six columns written once into fresh memory, and one uniform per row."""
    cols = [np.empty(n_rows, dtype=np.int64) for _ in range(4)]
    cols += [np.empty(n_rows, dtype=np.int8), np.empty(n_rows)]
    for c in cols:
        c.fill(1)
    return cols, rng.random(n_rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=1_000_000)
    ap.add_argument("--loop-sessions", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--logging", choices=("det", "pl"), default="det")
    args = ap.parse_args()
    d = make_synthetic(n_queries=400, list_size=(10, 60), affected_share=0.35, seed=7)
    rng = np.random.default_rng(0)
    rel = relevance_from_labels(d.labels, label_max=4)
    beta_q = draw_query_beta(d.n_queries, beta_mean=0.8, beta_std=0.1, rng=rng)
    scores = rel + rng.normal(0.0, 0.3, rel.size)
    user = UserModel("pbm", eta=1.0, noise=0.02)
    tau = 0.0 if args.logging == "det" else 0.3

    def ours():
        return simulate_click_log(
            rel,
            d.groups,
            qptr=d.qptr,
            logging_scores=scores,
            n_sessions=args.sessions,
            rng=np.random.default_rng(1),
            user=user,
            beta_query=beta_q,
            intervention="shuffle",
            intervention_rate=0.1,
            temperature=tau,
        )

    def peer():
        return one_shot(
            rel, d.groups, d.qptr, scores, beta_q, args.sessions, np.random.default_rng(1)
        )

    def ours_numpy():
        with use_backend("numpy"):
            return ours()

    def rates(click, position):
        return np.bincount(position, weights=click, minlength=11)[1:] / args.sessions

    # the first round's logs give the click rates; no log is kept while the other is timed
    sim, log = ours().log, peer()
    ours_rate, peer_rate = rates(sim.click, sim.position), rates(log["click"], log["position"])
    n_rows = sim.n_rows
    del log
    numpy_only = ours_numpy().log
    same = all(
        np.array_equal(getattr(numpy_only, c), getattr(sim, c))
        for c in ("session", "query", "item", "position", "click", "time")
    )
    del sim, numpy_only
    cases = {
        "ours": ours,
        "one-shot numpy": peer,
        "ours, numpy passes": ours_numpy,
        "floor": lambda: floor(n_rows, np.random.default_rng(1)),
    }
    out = interleaved(cases, args.rounds, keep=False)
    t_ours, t_peer = out["ours"][0], out["one-shot numpy"][0]
    n_loop = min(args.loop_sessions, args.sessions)
    t0 = time.perf_counter()
    loop_rate, _ = loop_simulation(
        rel, d.groups, d.qptr, scores, beta_q, n_loop, np.random.default_rng(2)
    )
    t_loop = (time.perf_counter() - t0) * args.sessions / n_loop
    se = np.sqrt(peer_rate * (1 - peer_rate) / args.sessions) * np.sqrt(2)
    agree = bool(np.all(np.abs(ours_rate - peer_rate) < 5 * se + 1e-12))
    print(f"sessions: {args.sessions:,} x 10 positions ({n_rows:,} rows), logging={args.logging}")
    print(
        f"ours: {t_ours * 1000:.1f} ms   one-shot numpy: {t_peer * 1000:.1f} ms "
        f"(medians of {args.rounds}, interleaved)"
    )
    t_numpy = out["ours, numpy passes"][0]
    print(
        f"ours with the numpy passes only (reference): {t_numpy * 1000:.1f} ms, "
        f"the same log bit for bit: {same}; floor (columns written once, one uniform a row): "
        f"{out['floor'][0] * 1000:.1f} ms"
    )
    print(
        f"per-session loop (reference): {t_loop:.1f} s (timed on {n_loop:,} sessions, "
        f"extrapolated x{args.sessions / n_loop:g}); ratio to ours {t_loop / t_ours:.1f}"
    )
    if args.logging == "det":
        diff = float(np.abs(ours_rate - peer_rate).max())
        print(
            f"click rate per position agrees with one-shot numpy (5 s.e.): {agree}, "
            f"max |diff| {diff:.1e}"
        )
    else:
        print("click rates not compared: the peer keeps the deterministic logging ranking")
    print(f"load: {load()}")
    print(f"ratio: {t_peer / t_ours:.2f}")


if __name__ == "__main__":
    main()
