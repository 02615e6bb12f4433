"""Benchmark: vectorized metrics vs a per-query Python loop on an MSLR-test-sized input.

Input: 6,000 queries, ~750k items (list sizes uniform in 1..249), labels 0-4 with an
MSLR-like distribution, random scores, random groups (30 % affected). Both implementations
compute the same per-query values (checked to 1e-9): NDCG@10 (all / affected /
non-affected), ρ(DTR) of the ranking and of a tabular estimate, Δ(EEL) of the ranking and
of a tabular estimate. Timings are medians of ``--repeats`` runs; the last line is
``ratio: <loop time / vectorized time>`` over all metrics together.

    .venv/bin/python benchmarks/metrics.py [--queries 6000] [--max-len 249] [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import median_time, random_qptr  # noqa: E402

from groupbias import metrics as M  # noqa: E402


def make_input(n_queries: int, max_len: int = 249, seed: int = 0):
    rng = np.random.default_rng(seed)
    qptr = random_qptr(rng, n_queries, max_len)
    n = int(qptr[-1])
    labels = rng.choice(5, size=n, p=[0.52, 0.32, 0.13, 0.02, 0.01]).astype(np.float64)
    scores = rng.random(n)
    groups = (rng.random(n) < 0.3).astype(np.float64)
    relevance = labels / 4.0
    beta = np.repeat(rng.normal(0.6, 0.1, size=n_queries), np.diff(qptr))
    biased = relevance * np.where(groups == 1, beta, 1.0)
    return scores, labels, relevance, biased, groups, qptr


# ------------------------------------------------------------------ per-query loop baseline


def _disc(n, k=None):
    d = 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))
    if k is not None:
        d[k:] = 0.0
    return d


def _tie_exposure(key, k=None):
    """Exposure when sorted by key (descending) with tied items sharing their block mean."""
    n = key.size
    order = np.argsort(-key, kind="stable")
    d = _disc(n, k)
    _, inv = np.unique(-key[order], return_inverse=True)
    block_mean = np.bincount(inv, weights=d) / np.bincount(inv)
    out = np.empty(n)
    out[order] = block_mean[inv]
    return out


def loop_ndcg(scores, labels, qptr, groups, weight, k):
    out = np.full(qptr.size - 1, np.nan)
    for i in range(qptr.size - 1):
        a, b = qptr[i], qptr[i + 1]
        gains = 2.0 ** labels[a:b] - 1.0
        if weight == "affected":
            gains = gains * groups[a:b]
        elif weight == "non_affected":
            gains = gains * (1.0 - groups[a:b])
        d = _disc(b - a, k)
        order = np.argsort(-scores[a:b], kind="stable")
        dcg = float(np.dot(gains[order], d))
        idcg = float(np.dot(np.sort(gains)[::-1], d))
        if idcg > 0:
            out[i] = dcg / idcg
    return out


def _rho(xa, xn, ya, yn):
    if xa + xn <= 0 or ya + yn <= 0:
        return np.nan
    num, den = xa * yn, ya * xn
    if max(num, den) == 0:
        return 1.0
    return min(num, den) / max(num, den)


def loop_rho_ranking(scores, rel, qptr, groups):
    out = np.full(qptr.size - 1, np.nan)
    for i in range(qptr.size - 1):
        a, b = qptr[i], qptr[i + 1]
        e = _tie_exposure(scores[a:b])
        g = groups[a:b]
        out[i] = _rho(e @ g, e @ (1 - g), rel[a:b] @ g, rel[a:b] @ (1 - g))
    return out


def loop_rho_tabular(est, rel, qptr, groups):
    out = np.full(qptr.size - 1, np.nan)
    for i in range(qptr.size - 1):
        a, b = qptr[i], qptr[i + 1]
        g = groups[a:b]
        out[i] = _rho(est[a:b] @ g, est[a:b] @ (1 - g), rel[a:b] @ g, rel[a:b] @ (1 - g))
    return out


def loop_eel(model_key, rel, qptr, groups, *, discretize_model):
    out = np.full(qptr.size - 1, np.nan)
    for i in range(qptr.size - 1):
        a, b = qptr[i], qptr[i + 1]
        key = model_key[a:b]
        if discretize_model:
            key = (key >= 0.5).astype(np.float64)
        model = _tie_exposure(key)
        target = _tie_exposure((rel[a:b] >= 0.5).astype(np.float64))
        g = groups[a:b]
        diff = model - target
        out[i] = np.hypot(diff @ g, diff @ (1 - g))
    return out


# ------------------------------------------------------------------ timing


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=6000)
    ap.add_argument(
        "--max-len",
        type=int,
        default=249,
        help="list sizes are uniform in 1..max-len (249: MSLR-like, 47: Yahoo!-like)",
    )
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    s, lab, rel, biased, g, q = make_input(args.queries, args.max_len)
    print(f"input: {q.size - 1} queries, {s.size} items, {args.repeats} repeats (median)")

    cases = {
        "ndcg@10 all": (
            lambda: M.ndcg_per_query(s, lab, qptr=q, k=10),
            lambda: loop_ndcg(s, lab, q, g, "all", 10),
        ),
        "ndcg@10 affected": (
            lambda: M.ndcg_per_query(s, lab, qptr=q, groups=g, group="affected", k=10),
            lambda: loop_ndcg(s, lab, q, g, "affected", 10),
        ),
        "ndcg@10 non_affected": (
            lambda: M.ndcg_per_query(s, lab, qptr=q, groups=g, group="non_affected", k=10),
            lambda: loop_ndcg(s, lab, q, g, "non_affected", 10),
        ),
        "rho_dtr ranking": (
            lambda: M.rho_dtr_ranking_per_query(s, rel, qptr=q, groups=g),
            lambda: loop_rho_ranking(s, rel, q, g),
        ),
        "rho_dtr tabular": (
            lambda: M.rho_dtr_tabular_per_query(biased, rel, qptr=q, groups=g),
            lambda: loop_rho_tabular(biased, rel, q, g),
        ),
        "delta_eel ranking": (
            lambda: M.delta_eel_ranking_per_query(s, rel, qptr=q, groups=g),
            lambda: loop_eel(s, rel, q, g, discretize_model=False),
        ),
        "delta_eel tabular": (
            lambda: M.delta_eel_tabular_per_query(biased, rel, qptr=q, groups=g),
            lambda: loop_eel(biased, rel, q, g, discretize_model=True),
        ),
    }
    total_vec = total_loop = 0.0
    print(f"{'metric':<22}{'vectorized s':>14}{'loop s':>10}{'ratio':>8}  mean")
    for name, (vec, loop) in cases.items():
        tv, rv = median_time(vec, args.repeats)
        tl, rl = median_time(loop, args.repeats)
        if not np.array_equal(np.isnan(rv), np.isnan(rl)) or not np.allclose(
            rv[~np.isnan(rv)], rl[~np.isnan(rl)], rtol=0, atol=1e-9
        ):
            raise SystemExit(f"{name}: vectorized and loop results disagree")
        total_vec += tv
        total_loop += tl
        print(f"{name:<22}{tv:>14.4f}{tl:>10.3f}{tl / tv:>8.1f}  {np.nanmean(rv):.6f}")
    print(f"{'total':<22}{total_vec:>14.4f}{total_loop:>10.3f}")
    print(f"ratio: {total_loop / total_vec:.1f}")


if __name__ == "__main__":
    main()
