"""Benchmark: peak memory of the learned Plackett–Luce policy (the ``evaluation=policy``
default), trained in chunks of whole queries vs in one piece.

Input: ``--items`` items (default 1,000,000) in lists of ``--list-size`` (20), graded
labels 0..4, 40 % affected items, scores ``0.9 label / 4`` plus noise. Each side runs in a
fresh process the evaluation of ``configs/evaluation/policy.yaml`` (``evaluation=policy``:
a policy learned for EEL and one for DTR, their expected exposure from 1000 samples per
query, NDCG@10, ρ(DTR) and Δ(EEL)) with ``--epochs`` epochs, and reports its peak resident
set size (``ru_maxrss`` of the child, what ``/usr/bin/time -v`` prints as "Maximum resident
set size"). Ours: :data:`groupbias.evaluation.fair_exposure.TRAIN_VALUES` as shipped (steps of
at most 2^20 values); peer: the same learner with the budget lifted, which trains every query
in one piece as the learner did before chunks (3.7 GB at 1M items). The results agree in
distribution, not bit for bit (the chunks draw other random rankings). The peak of a step does
not depend on the number of epochs, so ``--epochs 2`` (default) measures it in little time;
the sides alternate ``--repeats`` times and the medians are printed with the load. The last
line is ``ratio: <peer peak / our peak>``.

    .venv/bin/python benchmarks/policy_memory.py [--items 1000000] [--ours-only]
        [--epochs 2] [--repeats 1]

``--ours-only --items 4000000`` checks the 1 GB bound at 4M items (the peer needs over 5 GB
there).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

CHILD = """
import sys, time
import numpy as np
import groupbias.evaluation.fair_exposure as F
from groupbias.evaluation.catalog import EvalSpec, eel_thresholds
from groupbias.evaluation.protocol import EvaluationProtocol
n, size, epochs, budget = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
if budget == "none":
    F.TRAIN_VALUES = 1 << 62  # every query in one piece
rng = np.random.default_rng(0)
q = np.arange(0, n + 1, size, dtype=np.int64)
labels = rng.integers(0, 5, q[-1]).astype(float)
groups = (rng.random(q[-1]) < 0.4).astype(float)
spec = EvalSpec(
    labels=labels,
    relevance=labels / 4,
    groups=groups,
    qptr=q,
    thresholds=eel_thresholds(labels, 4.0),
    metrics=("ndcg@10", "rho_dtr", "delta_eel"),
)
# configs/evaluation/policy.yaml, with fewer epochs
protocol = EvaluationProtocol(mode="policy", on_zero_utility="skip", objective="per_metric",
                              epochs=epochs)
t = time.perf_counter()
out = protocol.evaluate(0.9 * labels / 4 + 0.05 * rng.random(q[-1]), spec, regime="tabular")
print(time.perf_counter() - t, float(np.nanmean(out["delta_eel"])))
"""


def _run(items: int, size: int, epochs: int, budget: str) -> tuple[float, float, float]:
    """(peak RSS MiB, seconds, mean Δ(EEL)) of one child process."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(items), str(size), str(epochs), budget],
        stdout=subprocess.PIPE,
        text=True,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    out = proc.stdout.read() if proc.stdout else ""
    if os.waitstatus_to_exitcode(status) != 0:
        return float("nan"), float("nan"), float("nan")
    seconds, total = (float(x) for x in out.split())
    return usage.ru_maxrss / 1024, seconds, total


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=1_000_000)
    ap.add_argument("--list-size", type=int, default=20)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--ours-only", action="store_true")
    a = ap.parse_args(argv)
    print(f"{a.items} items in lists of {a.list_size}, {a.epochs} epochs; load {os.getloadavg()}")
    sides = ["chunked"] if a.ours_only else ["chunked", "none"]
    got: dict[str, list] = {s: [] for s in sides}
    for _ in range(a.repeats):  # interleaved
        for side in sides:
            got[side].append(_run(a.items, a.list_size, a.epochs, side))
    for side in sides:
        peak = statistics.median(r[0] for r in got[side])
        secs = statistics.median(r[1] for r in got[side])
        name = "ours (chunks)" if side == "chunked" else "peer (one piece)"
        print(f"{name}: peak RSS {peak:.0f} MiB, {secs:.1f} s, mean Δ(EEL) {got[side][0][2]:.4f}")
    print(f"load after: {os.getloadavg()}")
    ours = statistics.median(r[0] for r in got["chunked"])
    if a.ours_only:
        print(f"peak: {ours:.0f} MiB")
        return
    peer = statistics.median(r[0] for r in got["none"])
    print(f"ratio: {peer / ours:.2f}")


if __name__ == "__main__":
    main()
