"""Benchmark: Plackett–Luce sampling + Monte-Carlo expected exposure, vectorized over all
queries vs a per-query numpy loop.

Input: ``--queries`` lists (default 30,000) of ``--items`` items (default 120), logits
standard normal, ``--samples`` rankings per query (default 100), no cutoff, discount
``1/log2(1 + r)``. Ours: ``PlackettLuce(logits, qptr, samples=S, exact_max=0,
device=--device, threads=--threads).expected_exposure()`` (all queries at once, in
cache-sized steps on a thread pool; with numba installed, compiled loops that give the
same bits). Baseline: a loop over queries that draws the query's S rankings at once by
Gumbel-max (``argsort`` of ``logits + Gumbel`` noise), turns them into ranks and averages
the discounts — the obvious per-query implementation, itself vectorized over the samples.
The two use different random numbers, so they agree in distribution: the script prints the
z-scores of their difference (mean ≈ 0, sd ≈ 1 when both are right); the checks against
exact enumeration are in tests/test_policies.py.

The script prints the path it times (numpy with or without the compiled loops, or torch
and its device) and the threads. One-time costs of the process — loading the compiled
loops (about 0.7 s), setting up a torch device — are paid before the timing and printed
apart; ``--cold`` times them too. Timings are medians of ``--repeats`` runs; the last line
is ``ratio: <loop time / vectorized time>``.

    .venv/bin/python benchmarks/policy.py [--queries 30000] [--items 120] [--samples 100]
        [--device cpu|torch|cuda|auto] [--threads N] [--cold] [--repeats 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import median_time  # noqa: E402

from groupbias.core.errors import ParameterError  # noqa: E402
from groupbias.rank.plackett_luce import PlackettLuce, load_kernels  # noqa: E402


def loop_exposure(logits: np.ndarray, qptr: np.ndarray, samples: int, seed: int):
    """Per-query loop: Gumbel-max rankings of one query at a time."""
    rng = np.random.default_rng(seed)
    mean = np.empty(logits.size)
    se = np.empty(logits.size)
    for a, b in zip(qptr[:-1], qptr[1:]):
        n = b - a
        z = logits[a:b] + rng.gumbel(size=(samples, n))
        order = np.argsort(-z, axis=1)
        ranks = np.empty_like(order)
        np.put_along_axis(ranks, order, np.arange(1, n + 1), axis=1)
        e = 1.0 / np.log2(1.0 + ranks)
        mean[a:b] = e.mean(axis=0)
        se[a:b] = e.std(axis=0, ddof=1) / np.sqrt(samples)
    return mean, se


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=30_000)
    ap.add_argument("--items", type=int, default=120)
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--device", default="cpu", help="PlackettLuce device: cpu|torch|cuda|auto")
    ap.add_argument("--threads", type=int, default=None, help="numpy threads (default: all)")
    ap.add_argument("--cold", action="store_true", help="time the one-time setup too")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    qptr = np.arange(args.queries + 1, dtype=np.int64) * args.items
    logits = rng.normal(size=int(qptr[-1]))
    print(
        f"{args.queries} queries x {args.items} items x {args.samples} samples "
        f"({args.queries * args.items * args.samples / 1e6:.0f}M sampled keys)"
    )

    def policy():
        return PlackettLuce(
            logits,
            qptr,
            samples=args.samples,
            exact_max=0,
            seed=1,
            device=args.device,
            threads=args.threads,
        )

    try:
        pol = policy()
    except ParameterError as exc:  # e.g. --device cuda without a GPU
        ap.error(str(exc))
    t0 = time.perf_counter()  # one-time costs of the process, not timed below
    if args.cold:
        where = "cold: the timing includes loading kernels / the device"
    elif pol.device == "cpu":
        compiled = load_kernels()
        where = "numpy + compiled loops (numba)" if compiled else "numpy (numba not installed)"
    else:
        warm = PlackettLuce(logits[:120], qptr[:2], samples=2, exact_max=0, device=args.device)
        warm.expected_exposure()
        where = "torch on the CPU" if pol.device == "torch" else f"torch on {pol.device}"
    print(f"ours: device={args.device}: {where}, {pol.threads} thread(s)")
    setup = time.perf_counter() - t0
    print(f"one-time setup (loading kernels / device), not in the timing: {setup:.2f} s")

    def ours():
        return policy().expected_exposure()

    t_ours, got = median_time(ours, args.repeats)
    t_loop, (mean, se) = median_time(
        lambda: loop_exposure(logits, qptr, args.samples, 2), args.repeats
    )
    z = (got.mean - mean) / np.sqrt(got.stderr**2 + se**2)
    print(f"vectorized: {t_ours:.2f} s   per-query loop: {t_loop:.2f} s")
    print(f"agreement: z-scores of the difference mean {z.mean():+.3f}, sd {z.std():.3f}")
    print(f"ratio: {t_loop / t_ours:.1f}")


if __name__ == "__main__":
    main()
