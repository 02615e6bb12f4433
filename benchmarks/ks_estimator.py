"""Benchmark: the KS curve of Eq. (14) over a 100-point grid, against a numba brute force.

Input: 1M affected + 1M non-affected positive attractiveness scores in one cluster (graded
relevance 1..4 / 4; affected scores multiplied by per-query propensities N(0.8, 0.1) over
queries of 20 items), tie-broken by the estimator's jitter. Ours:
``groupbias.estimate.ks.ks_curves`` on the same arrays (sorting included), and the whole
public ``estimate_beta`` call for information. Peer: the fair brute force, compiled with
numba: both samples sorted once (scaling by ``1/beta`` keeps the order), then at every grid
point one linear merge of the two sorted samples for the largest CDF gap, the grid points
in parallel over the cores (``prange``); its sort is timed with it. Ours and the peer are
timed interleaved (``--rounds``, medians). The earlier baseline, a loop over the grid
calling ``scipy.stats.ks_2samp(A_A / beta, A_N).statistic`` (it sorts 2M values at every
point), is a reference line (``--scipy-repeats`` runs). All curves are checked equal (max
|diff| and argmin). The last line is ``ratio: <numba brute force / ks_curves>``, the
1-minute load beside it.

Usage: python benchmarks/ks_estimator.py [--n 1000000] [--rounds 5] [--scipy-repeats 1]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numba
import numpy as np
from scipy import stats

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import interleaved, load  # noqa: E402

from groupbias.estimate.ks import (  # noqa: E402
    argmin_largest,
    default_grid,
    estimate_beta,
    ks_curves,
    tie_break_jitter,
)


@numba.njit(cache=False)
def _largest_gap(xs, inv_beta, ys):
    """sup_t |F_x(t) - F_y(t)| of the sorted samples ``xs * inv_beta`` and ``ys`` (ties:
    every value equal to t counts on both sides before the gap is read)."""
    nx, ny = xs.size, ys.size
    i = j = 0
    best = 0.0
    while i < nx and j < ny:
        v = min(xs[i] * inv_beta, ys[j])
        while i < nx and xs[i] * inv_beta <= v:
            i += 1
        while j < ny and ys[j] <= v:
            j += 1
        gap = abs(i / nx - j / ny)
        if gap > best:
            best = gap
    return max(best, abs(i / nx - j / ny))


@numba.njit(parallel=True, cache=False)
def _brute_curve(xs, ys, grid):
    out = np.empty(grid.size)
    for g in numba.prange(grid.size):
        out[g] = _largest_gap(xs, 1.0 / grid[g], ys)
    return out


def numba_brute_force(x, y, grid):
    """The KS statistic at every grid point: one sort of each sample, one merge a point."""
    return _brute_curve(np.sort(x), np.sort(y), grid)


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
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--scipy-repeats", type=int, default=1)
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

    numba_brute_force(x[:1000], y[:1000], grid)  # compile outside the timing
    out = interleaved(
        {
            "ks_curves": lambda: ks_curves(x, y, grid=grid),
            "numba brute force": lambda: numba_brute_force(x, y, grid),
        },
        args.rounds,
    )
    (t_ours, ours), (t_peer, peer) = out["ks_curves"], out["numba brute force"]
    t_full, est = median_time(
        lambda: estimate_beta(attractiveness, groups, qptr=qptr, rng=np.random.default_rng(1)),
        args.rounds,
    )

    def scipy_loop():
        return np.array([stats.ks_2samp(x / b, y).statistic for b in grid])

    t_scipy, ref = median_time(scipy_loop, args.scipy_repeats)

    diff = max(float(np.max(np.abs(ours[0] - ref))), float(np.max(np.abs(peer - ref))))
    same = (
        argmin_largest(ours, grid)[0]
        == argmin_largest(ref[None], grid)[0]
        == argmin_largest(peer[None], grid)[0]
    )
    print(
        f"beta_hat: {argmin_largest(ours, grid)[0]:.2f} (estimate_beta: "
        f"{est.beta_hat[0]:.2f}); max |KS diff| among ours, numba, scipy: {diff:.3g}; "
        f"argmin identical: {same}"
    )
    print(
        f"scipy ks_2samp loop (reference, {grid.size}-point grid, median of "
        f"{args.scipy_repeats}): {t_scipy:.3f} s, ratio to ks_curves {t_scipy / t_ours:.1f}"
    )
    print(
        f"numba brute force ({numba.get_num_threads()} threads, median of {args.rounds}, "
        f"interleaved): {t_peer * 1e3:.1f} ms"
    )
    print(f"ks_curves (median of {args.rounds}, interleaved): {t_ours * 1e3:.1f} ms")
    print(
        f"estimate_beta end to end incl. zero filter, jitter, validation: "
        f"{t_full * 1e3:.1f} ms (numba brute force / it: {t_peer / t_full:.1f})"
    )
    if diff > 1e-12 or not same:
        raise SystemExit("results differ")
    print(f"load: {load()}")
    print(f"ratio: {t_peer / t_ours:.1f}")


if __name__ == "__main__":
    main()
