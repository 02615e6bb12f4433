"""Benchmark: sensitive-attribute candidate report, vectorized vs a per-query Python loop.

Input: an MSLR-shaped split (``--queries`` queries, list sizes uniform in 1..``--list-max``
(default 249), 136
features: 20 informative, the rest noise, plus a few sparse count-like features). Both
implementations compute, for every feature and both thresholds (mean, mean - std), the
fraction of queries with both groups, the population ratio and the utility ratio; the
results are checked to agree to 1e-9. Timings are medians of ``--repeats`` runs; the last
line is ``ratio: <loop time / vectorized time>``.

    .venv/bin/python benchmarks/candidate_report.py [--queries 1000] [--repeats 3]
        [--list-max 249]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import median_time as timed  # noqa: E402

from data_loaders.grouping import candidate_report  # noqa: E402
from groupbias.data.ranking_data import RankingData  # noqa: E402


def make_input(n_queries: int, list_max: int = 249, seed: int = 0) -> RankingData:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, list_max + 1, size=n_queries)
    qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(qptr[-1])
    labels = rng.choice(5, size=n, p=[0.52, 0.32, 0.13, 0.02, 0.01]).astype(np.float64)
    feats = rng.standard_normal((n, 136))
    feats[:, :20] += labels[:, None]
    feats[:, 120:] = rng.poisson(0.3, size=(n, 16))
    return RankingData(
        features=feats, labels=labels, qptr=qptr, query_ids=np.arange(n_queries), name="bench"
    )


def loop_report(data: RankingData) -> dict[str, np.ndarray]:
    """The obvious implementation: for every feature, for every query, test both sides."""
    out = {
        k: []
        for k in (
            "coverage_mean",
            "coverage_mean_std",
            "population_ratio_mean",
            "utility_ratio_mean",
            "population_ratio_mean_std",
            "utility_ratio_mean_std",
        )
    }
    for j in range(data.n_features):
        x = data.features[:, j].astype(np.float64)
        m, s = x.mean(), x.std()
        for key, t in (("mean", m), ("mean_std", m - s)):
            aff = x < t
            both = 0
            for q in range(data.n_queries):
                a = aff[data.qptr[q] : data.qptr[q + 1]]
                both += bool(a.any() and not a.all())
            out[f"coverage_{key}"].append(both / data.n_queries)
            n_a = aff.sum()
            n_n = aff.size - n_a
            out[f"population_ratio_{key}"].append(n_a / n_n if n_n else np.inf)
            if n_a and n_n:
                mu_a = data.labels[aff].mean()
                mu_n = data.labels[~aff].mean()
                out[f"utility_ratio_{key}"].append(mu_a / mu_n if mu_n > 0 else np.inf)
            else:
                out[f"utility_ratio_{key}"].append(np.nan)
    return {k: np.array(v) for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--list-max",
        type=int,
        default=249,
        help="list sizes uniform in 1..list-max (249: MSLR-like, 48: Yahoo-like)",
    )
    args = ap.parse_args()
    data = make_input(args.queries, args.list_max)
    print(f"input: {data.n_queries} queries, {data.n_items} items, {data.n_features} features")
    t_loop, ref = timed(lambda: loop_report(data), args.repeats)
    t_ours, rep = timed(lambda: candidate_report(data), args.repeats)
    for k, v in ref.items():
        np.testing.assert_allclose(rep[k].to_numpy(dtype=float), v, rtol=1e-9)
    print(
        f"per-query loop: {t_loop:.3f} s   vectorized: {t_ours:.3f} s   (median of {args.repeats})"
    )
    print(f"ratio: {t_loop / t_ours:.1f}")


if __name__ == "__main__":
    main()
