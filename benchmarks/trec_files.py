"""Benchmark: an external TREC run read and evaluated, ours vs ranx and ir-measures.

Input: a run of ``--queries`` queries × ``--depth`` documents (random scores, no ties),
its qrels (labels 0-2) and item→group file, written once by ``groupbias.data.trec``.

* read: ``gb.read_run`` against ``ranx.Run.from_file(kind="trec")`` and
  ``ir_measures.read_trec_run`` (materialized as a list);
* evaluate NDCG@10 from the files: ``gb.evaluate_run`` (read run, qrels and groups, align,
  rank, NDCG@10) against ranx (``Run.from_file`` + ``Qrels.from_file`` + ``evaluate``) and
  ir-measures (``calc_aggregate`` on the files read by it); their values must equal ours
  (1e-9; linear gain, as ranx's ``ndcg`` and trec_eval use).

Rounds are interleaved (every implementation once per round), the medians reported, the
load average printed. The last line is ``ratio: <fastest peer / ours>`` for evaluating
NDCG@10 from the files.

    .venv/bin/python benchmarks/trec_files.py [--queries 5000] [--depth 100] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import groupbias as gb  # noqa: E402
from groupbias.data.ranking_data import RankingData  # noqa: E402


def make_files(folder: Path, n_queries: int, depth: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    n = n_queries * depth
    data = RankingData(
        np.zeros((n, 1)),
        rng.choice([0.0, 1.0, 2.0], size=n, p=[0.7, 0.2, 0.1]),
        np.arange(0, n + 1, depth),
        np.arange(n_queries),
        groups=(rng.random(n) < 0.3).astype(float),
    )
    scores = rng.random(n)
    return (
        gb.write_run(folder / "x.run", scores, data),
        gb.write_qrels(folder / "x.qrels", data),
        gb.write_groups(folder / "x.groups", data),
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=5000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    import ir_measures
    import ranx

    with tempfile.TemporaryDirectory() as tmp:
        run, qrels, groups = make_files(Path(tmp), a.queries, a.depth)
        metric = [{"name": "ndcg@10", "gain": "linear"}]

        def ranx_eval():
            return ranx.evaluate(
                ranx.Qrels.from_file(str(qrels), kind="trec"),
                ranx.Run.from_file(str(run), kind="trec"),
                "ndcg@10",
            )

        def irm_eval():
            q = list(ir_measures.read_trec_qrels(str(qrels)))
            r = list(ir_measures.read_trec_run(str(run)))
            return ir_measures.calc_aggregate([ir_measures.nDCG @ 10], q, r)[ir_measures.nDCG @ 10]

        tasks = {
            ("read", "ours"): lambda: gb.read_run(run),
            ("read", "ranx"): lambda: ranx.Run.from_file(str(run), kind="trec"),
            ("read", "ir-measures"): lambda: list(ir_measures.read_trec_run(str(run))),
            ("ndcg@10", "ours"): lambda: gb.evaluate_run(run, qrels, groups, metrics=metric),
            ("ndcg@10", "ranx"): ranx_eval,
            ("ndcg@10", "ir-measures"): irm_eval,
        }
        times: dict = {k: [] for k in tasks}
        results: dict = {}
        for _ in range(a.rounds):
            for key, fn in tasks.items():
                t0 = time.perf_counter()
                results[key] = fn()
                times[key].append(time.perf_counter() - t0)
    ours = results[("ndcg@10", "ours")]["ndcg@10"]
    for peer in ("ranx", "ir-measures"):
        assert abs(results[("ndcg@10", peer)] - ours) < 1e-9, (peer, results[("ndcg@10", peer)])
    lines = a.queries * a.depth
    print(f"{a.queries} queries x {a.depth} documents = {lines} run lines; load {os.getloadavg()}")
    med = {k: statistics.median(v) for k, v in times.items()}
    for (what, who), t in med.items():
        print(f"{what:8s} {who:12s} {t:8.3f} s  ({lines / t / 1e6:.2f} M lines/s)")
    peers = [med[("ndcg@10", p)] for p in ("ranx", "ir-measures")]
    print(f"load after: {os.getloadavg()}")
    print(f"ratio: {min(peers) / med[('ndcg@10', 'ours')]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
