"""Benchmark: the whole tabular pipeline (Table 1) against data size.

One Table 1 cell per β ∈ {0.8, 0.6} on MSLR-shaped data: 1k, 3k, 10k and 30k queries of 120
items (MSLR-WEB30K: ~30k queries, ~120 items each), labels 0-4 with MSLR's distribution,
30 % of the items affected. Each run is ``groupbias.pipelines.tabular.run_tabular``:
simulate ``a = β_q P(R)`` → amortized KS estimate of β (the shipped ``ks`` estimator,
one global cluster) → IPS correction → the default metrics (NDCG@10 overall and per group,
ρ(DTR), Δ(EEL)) of the biased and corrected utilities with paired tests. The evaluation step
alone (``compute_metrics`` of both conditions) is timed as well, to show its share.

Prints seconds, µs per item and items/s per size (medians of ``--repeats``), and as its last
line ``scaling: <time per item at the largest size / time per item at the smallest>``
(1.0 = linear).

    .venv/bin/python benchmarks/table1_scale.py [--queries 1000 3000 10000 30000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import median_time  # noqa: E402

from groupbias import GroupBias, KSEstimator, RankingData  # noqa: E402
from groupbias.evaluation.catalog import EvalSpec, compute_metrics, eel_thresholds  # noqa: E402
from groupbias.pipelines.tabular import run_tabular  # noqa: E402

WIDTH = 120
BETAS = (0.8, 0.6)


def make_data(n_queries: int, seed: int = 0) -> RankingData:
    rng = np.random.default_rng(seed)
    n = n_queries * WIDTH
    labels = rng.choice(5, size=n, p=[0.52, 0.32, 0.13, 0.02, 0.01]).astype(np.float64)
    return RankingData(
        features=np.zeros((n, 1), dtype=np.float32),
        labels=labels,
        qptr=np.arange(0, n + 1, WIDTH, dtype=np.int64),
        query_ids=np.arange(n_queries),
        groups=(rng.random(n) < 0.3).astype(np.float64),
        label_max=4.0,
        name=f"mslr-shaped/{n_queries}",
    )


def table1(data: RankingData):
    bias, estimator = GroupBias(betas=BETAS), KSEstimator()
    return [
        run_tabular(
            data,
            beta=b,
            bias=bias,
            estimator=estimator,
            rng=np.random.default_rng(i),
            keep_scores=True,
        )
        for i, b in enumerate(BETAS)
    ]


def evaluation_only(data: RankingData, results) -> None:
    spec = EvalSpec(
        labels=data.labels,
        relevance=data.labels / 4.0,
        groups=data.groups,
        qptr=data.qptr,
        thresholds=eel_thresholds(data.labels, data.label_max),
    )
    for res in results:
        compute_metrics(res.attractiveness, spec, regime="tabular")
        compute_metrics(res.corrected, spec, regime="tabular")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, nargs="+", default=[1000, 3000, 10000, 30000])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    print(f"Table 1 cells (beta in {BETAS}), {WIDTH} items per query, median of {args.repeats}")
    print(f"{'queries':>8}{'items':>10}{'total s':>10}{'us/item':>9}{'items/s':>11}{'eval s':>9}")
    per_item = []
    for nq in args.queries:
        data = make_data(nq)
        t, results = median_time(lambda d=data: table1(d), args.repeats)
        te, _ = median_time(lambda d=data, r=results: evaluation_only(d, r), args.repeats)
        n = data.n_items
        per_item.append(t / n)
        print(f"{nq:>8}{n:>10}{t:>10.3f}{t / n * 1e6:>9.3f}{n / t:>11.3g}{te:>9.3f}")
    print(f"scaling: {per_item[-1] / per_item[0]:.2f}")


if __name__ == "__main__":
    main()
