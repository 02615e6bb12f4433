"""Benchmark: the KS curve of Eq. (14) over a 100-point grid, exact vectorized vs scipy.

Input: 1M affected + 1M non-affected positive attractiveness scores in one cluster (graded
relevance 1..4 / 4; affected scores multiplied by per-query propensities N(0.8, 0.1) over
queries of 20 items), tie-broken by the estimator's jitter. Baseline: a loop over the
grid calling ``scipy.stats.ks_2samp(A_A / beta, A_N).statistic`` (the full loop, no
extrapolation). Ours: ``groupbias.estimate.ks.ks_curves`` on the same arrays (sorting
included), and the whole public ``estimate_beta`` call for information. Both curves are
checked equal (max |diff| and argmin). Times are medians of repeats.

Usage: python benchmarks/ks_estimator.py [--n 1000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats

from groupbias.estimate.ks import (
    argmin_largest,
    default_grid,
    estimate_beta,
    ks_curves,
    tie_break_jitter,
)


def median_time(fn, repeats: int):
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000, help="scores per group")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    n, size = args.n, 20
    rng = np.random.default_rng(0)
    grid = default_grid()

    # flat data: 2n items in queries of 20, first half of every query affected
    n_q = 2 * n // size
    qptr = np.arange(0, n_q * size + 1, size)
    groups = np.tile(np.r_[np.ones(size // 2), np.zeros(size // 2)], n_q)
    relevance = rng.integers(1, 5, n_q * size) / 4.0
    beta_q = np.clip(rng.normal(0.8, 0.1, n_q), 0.01, 1.0)
    attractiveness = relevance * np.where(groups == 1, np.repeat(beta_q, size), 1.0)

    scores = tie_break_jitter(attractiveness, rng=np.random.default_rng(1))
    x, y = scores[groups == 1], scores[groups == 0]
    print(
        f"affected scores: {x.size}, non-affected scores: {y.size}, grid: {grid.size} "
        f"points ({grid[0]:.2f}..{grid[-1]:.2f})"
    )

    t_ours, ours = median_time(lambda: ks_curves(x, y, grid=grid), max(args.repeats, 5))
    t_full, est = median_time(
        lambda: estimate_beta(attractiveness, groups, qptr=qptr, rng=np.random.default_rng(1)),
        max(args.repeats, 5),
    )

    def brute():
        return np.array([stats.ks_2samp(x / b, y).statistic for b in grid])

    t_brute, ref = median_time(brute, args.repeats)

    diff = float(np.max(np.abs(ours[0] - ref)))
    same = argmin_largest(ours, grid)[0] == argmin_largest(ref[None], grid)[0]
    print(
        f"beta_hat: {argmin_largest(ours, grid)[0]:.2f} (estimate_beta: "
        f"{est.beta_hat[0]:.2f}); max |KS ours - KS scipy|: {diff:.3g}; "
        f"argmin identical: {same}"
    )
    print(
        f"scipy ks_2samp loop (full {grid.size}-point grid, median of {args.repeats}): "
        f"{t_brute:.3f} s"
    )
    print(f"ks_curves (median of {max(args.repeats, 5)}): {t_ours * 1e3:.1f} ms")
    print(
        f"estimate_beta end to end incl. zero filter, jitter, validation: "
        f"{t_full * 1e3:.1f} ms (ratio {t_brute / t_full:.1f})"
    )
    if diff > 1e-12 or not same:
        raise SystemExit("results differ")
    print(f"ratio: {t_brute / t_ours:.1f}")


if __name__ == "__main__":
    main()
