"""Benchmark: vectorized related-work fairness metrics vs a per-query numpy loop.

Input (MSLR-test-sized): 6,000 queries, ~750k items (list sizes uniform in 1..249), random
scores, binary relevance, two groups: term-count-like magnitudes (0-3 per group, ~30 % of
the items without any group term) and their row shares as membership. Each metric is
computed by ``groupbias.evaluation.fairness`` and by a loop over queries that sorts each query's
slice with numpy (the obvious baseline); both must agree to 1e-9. Timings are medians of
``--repeats`` runs; the last line is ``ratio: <loop time / vectorized time>`` over all
metrics together.

    .venv/bin/python benchmarks/fairness.py [--queries 6000] [--max-len 249] [--k 10]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import median_time, random_qptr  # noqa: E402

from groupbias import fairness as F  # noqa: E402


def make_input(n_queries: int, max_len: int = 249, seed: int = 0):
    rng = np.random.default_rng(seed)
    qptr = random_qptr(rng, n_queries, max_len)
    n = int(qptr[-1])
    scores = rng.random(n)
    labels = (rng.random(n) < 0.3).astype(np.float64)
    counts = rng.integers(0, 4, size=(n, 2)).astype(np.float64)
    counts[rng.random(n) < 0.3] = 0.0
    rows = counts.sum(axis=1, keepdims=True)
    share = np.divide(counts, rows, out=np.zeros_like(counts), where=rows > 0)
    return scores, labels, counts, share, qptr


# ------------------------------------------------------------------ per-query loop baseline


def _disc(n: int, k: int | None) -> np.ndarray:
    d = 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))
    if k is not None:
        d[k:] = 0.0
    return d


def _js(p, t):
    mid = 0.5 * (p + t)

    def kl(x):
        nz = x > 0
        return float(np.sum(x[nz] * np.log2(x[nz] / mid[nz])))

    return 0.5 * kl(p) + 0.5 * kl(t)


def loop_awrf(scores, share, labels, qptr, k, target):
    out = np.full(qptr.size - 1, np.nan)
    for i in range(qptr.size - 1):
        a, b = qptr[i], qptr[i + 1]
        order = np.argsort(-scores[a:b], kind="stable")
        m = share[a:b]
        e = _disc(b - a, k) @ m[order]
        if target == "relevant":
            t = m[labels[a:b] > 0].sum(axis=0)
        else:
            t = np.full(m.shape[1], 1.0)
        if e.sum() <= 0 or t.sum() <= 0:
            continue
        out[i] = 1.0 - _js(e / e.sum(), t / t.sum())
    return out


def loop_texfair(scores, membership, qptr, k):
    out = np.full(qptr.size - 1, np.nan)
    for i in range(qptr.size - 1):
        a, b = qptr[i], qptr[i + 1]
        order = np.argsort(-scores[a:b], kind="stable")
        m = membership[a:b][order]
        d = _disc(b - a, k)
        e = d @ m
        if e.sum() <= 0:
            out[i] = 1.0
            continue
        rbdf = d @ (m.sum(axis=1) > 0) / d.sum()
        out[i] = 1.0 - np.abs(e / e.sum() - 0.5).sum() * rbdf
    return out


def loop_nfairr(scores, counts, qptr, k):
    out = np.full(qptr.size - 1, np.nan)
    for i in range(qptr.size - 1):
        a, b = qptr[i], qptr[i + 1]
        c = counts[a:b]
        tot = c.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            omega = 1.0 - np.abs(c / tot[:, None] - 0.5).sum(axis=1)
        omega[tot <= 0] = 1.0
        d = _disc(b - a, k)
        fairr = d @ omega[np.argsort(-scores[a:b], kind="stable")]
        ideal = d @ np.sort(omega)[::-1]
        if ideal > 0:
            out[i] = fairr / ideal
    return out


def loop_cwex(scores, share, qptr, k, alpha):
    out = np.full(qptr.size - 1, np.nan)
    for i in range(qptr.size - 1):
        a, b = qptr[i], qptr[i + 1]
        order = np.argsort(-scores[a:b], kind="stable")
        m = share[a:b][order]
        d = _disc(b - a, k)
        ex = d @ np.column_stack([m, 1.0 - m.sum(axis=1)]) / d.sum()
        out[i] = alpha * ex[2] - (1 - alpha) * abs(ex[0] - ex[1])
    return out


def loop_arab(scores, counts, qptr, k):
    out = np.full(qptr.size - 1, np.nan)
    for i in range(qptr.size - 1):
        a, b = qptr[i], qptr[i + 1]
        order = np.argsort(-scores[a:b], kind="stable")
        mag = np.log1p(counts[a:b][order])
        diff = mag[:, 0] - mag[:, 1]
        t = b - a if k is None else min(k, b - a)
        rab = np.cumsum(diff[:t]) / np.arange(1, t + 1)  # RaB@x, x = 1..t
        out[i] = rab.mean()
    return out


# ------------------------------------------------------------------ timing


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=6000)
    ap.add_argument("--max-len", type=int, default=249)
    ap.add_argument("--k", type=int, default=10, help="cutoff (0 = no cutoff)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    k = args.k or None
    s, lab, counts, share, q = make_input(args.queries, args.max_len)
    print(
        f"input: {q.size - 1} queries, {s.size} items, 2 groups, k={k}, "
        f"{args.repeats} repeats (median)"
    )

    cases = {
        "awrf uniform": (
            lambda: F.awrf(s, qptr=q, membership=share, k=k, reduce=None),
            lambda: loop_awrf(s, share, lab, q, k, "uniform"),
        ),
        "awrf relevant": (
            lambda: F.awrf(
                s, qptr=q, membership=share, labels=lab, k=k, target="relevant", reduce=None
            ),
            lambda: loop_awrf(s, share, lab, q, k, "relevant"),
        ),
        "texfair (rbdf)": (
            lambda: F.texfair(s, qptr=q, membership=share, k=k, reduce=None),
            lambda: loop_texfair(s, share, q, k),
        ),
        "nfairr": (
            lambda: F.nfairr(s, qptr=q, membership=counts, k=k, reduce=None),
            lambda: loop_nfairr(s, counts, q, k),
        ),
        "cwex(0.5)": (
            lambda: F.cwex(s, qptr=q, membership=share, k=k, alpha=0.5, reduce=None),
            lambda: loop_cwex(s, share, q, k, 0.5),
        ),
        "arab tf": (
            lambda: F.arab(s, qptr=q, membership=counts, k=k, magnitude="tf", reduce=None),
            lambda: loop_arab(s, counts, q, k),
        ),
    }
    total_vec = total_loop = 0.0
    print(f"{'metric':<18}{'vectorized s':>14}{'loop s':>10}{'ratio':>8}  mean")
    for name, (vec, loop) in cases.items():
        tv, rv = median_time(vec, args.repeats)
        tl, rl = median_time(loop, args.repeats)
        if not np.array_equal(np.isnan(rv), np.isnan(rl)) or not np.allclose(
            rv[~np.isnan(rv)], rl[~np.isnan(rl)], rtol=0, atol=1e-9
        ):
            raise SystemExit(f"{name}: vectorized and loop results disagree")
        total_vec += tv
        total_loop += tl
        print(f"{name:<18}{tv:>14.4f}{tl:>10.3f}{tl / tv:>8.1f}  {np.nanmean(rv):.6f}")
    print(f"{'total':<18}{total_vec:>14.4f}{total_loop:>10.3f}")
    print(f"ratio: {total_loop / total_vec:.1f}")


if __name__ == "__main__":
    main()
