"""Synthetic MSLR-shaped data: ``make_synthetic_splits`` against the numpy a researcher writes.

Input: ``--queries`` queries (default 30,000, MSLR-WEB30K's count) of 60..180 items,
136 features (1 sensitive, 5 informative, 130 noise), seed 0: 3.6M items, a 1.96 GB
float32 matrix.

Each case runs in a fresh process (as the pipeline does: the data are generated once per
run, into memory the process has not touched yet), the cases in turn, ``--rounds`` rounds;
medians, peak RSS and the load are printed:

* ``ours blocked``: ``make_synthetic_splits(..., draws="blocked")``: float32 Box–Muller in
  row blocks, each from its own generator, on every core (``groupbias._fast.normals``);
* ``ours sequential``: the default, the one float64 stream of earlier versions, drawn into
  the float32 matrix row block by row block;
* ``peer float64``: the generator as first written here and as a researcher writes it:
  the whole matrix in float64 from one ``standard_normal`` per column group, then cast to
  float32 (and each split copied);
* ``peer float32``: the strongest one-stream numpy peer: ``standard_normal(dtype=float32)``
  of the one generator straight into the float32 matrix (numpy's float32 ziggurat).

The peers take the list sizes, groups and labels from ``make_synthetic`` with two feature
columns (a small share of the time), so the work differs only in the features. The floor
is the float32 matrix's first touch: ``np.empty`` + ``fill`` of 1.96 GB in a fresh
process. ``ratio:`` (last line) is the
float32 peer's median over ``ours blocked``'s; the line before it gives the ratio against
the float64 peer (the issue's "today's").

Usage: ``python benchmarks/synthetic.py [--queries N] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CASES = ("ours blocked", "ours sequential", "peer float64", "peer float32", "floor")


def _peer(n_queries: int, float32: bool):
    """The peer generator (module docstring): the same list sizes, groups and labels (drawn by
    ``make_synthetic`` with the sensitive and one informative column only), the features by
    numpy from the same generator."""
    import numpy as np

    from data_loaders.synthetic import make_synthetic

    gen = np.random.default_rng(0)
    base = make_synthetic(n_queries=n_queries, list_size=(60, 180), n_features=2, rng=gen)
    labels, n, n_features, n_inf = base.labels, base.n_items, 136, 5
    scales = np.linspace(0.5, 2.0, n_inf)
    if float32:
        feats = np.empty((n, n_features), dtype=np.float32)
        gen.standard_normal(out=feats, dtype=np.float32)
        feats[:, 1 : 1 + n_inf] = labels[:, None] + scales * feats[:, 1 : 1 + n_inf]
    else:
        feats = np.empty((n, n_features))
        feats[:, 1 : 1 + n_inf] = labels[:, None] + scales * gen.standard_normal((n, n_inf))
        feats[:, 1 + n_inf :] = gen.standard_normal((n, n_features - 1 - n_inf))
        feats = feats.astype(np.float32)
    feats[:, 0] = base.features[:, 0]
    cut = base.qptr[[round(0.6 * n_queries), round(0.8 * n_queries)]]
    return [feats[a:b].copy() for a, b in zip((0, *cut), (*cut, n))]


def _one(case: str, n_queries: int) -> None:
    """Run one case in this (fresh) process; print its time and peak RSS as JSON."""
    import resource
    import time

    import numpy as np

    sys.path.insert(0, str(REPO))
    from data_loaders.synthetic import make_synthetic_splits

    t0 = time.perf_counter()
    if case == "floor":
        a = np.empty((int(n_queries * 120), 136), dtype=np.float32)
        a.fill(0.0)
    elif case.startswith("ours"):
        make_synthetic_splits(
            n_queries=n_queries,
            list_size=(60, 180),
            n_features=136,
            seed=0,
            draws=case.split()[1],
        )
    else:
        _peer(n_queries, float32=case == "peer float32")
    seconds = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": seconds, "rss": rss, "load": os.getloadavg()[0]}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=30000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--one", choices=CASES, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        _one(args.one, args.queries)
        return
    runs: dict[str, list[dict]] = {c: [] for c in CASES}
    for r in range(args.rounds):
        for case in CASES:
            out = subprocess.run(
                [sys.executable, __file__, "--one", case, "--queries", str(args.queries)],
                check=True,
                capture_output=True,
                text=True,
            )
            runs[case].append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(f"round {r + 1} {case}: {runs[case][-1]['seconds']:.2f} s", flush=True)
    med = {c: statistics.median(x["seconds"] for x in v) for c, v in runs.items()}
    print(f"{args.queries} queries x 60..180 items x 136 features, {args.rounds} rounds")
    for case, v in runs.items():
        loads = [x["load"] for x in v]
        rss = max(x["rss"] for x in v) / 1e9
        print(
            f"{case:16s} median {med[case]:6.2f} s  peak RSS {rss:.2f} GB"
            f"  load {min(loads):.2f}-{max(loads):.2f}"
        )
    first = med["peer float64"] / med["ours blocked"]
    print(f"ours blocked vs peer float64 (the first generator): {first:.2f}")
    print(f"ratio: {med['peer float32'] / med['ours blocked']:.2f}")


if __name__ == "__main__":
    main()
