"""Fault injection: kill a run at random moments, then finish it, and compare with a clean run.

    python benchmarks/fault_injection.py --kills 10

Every killed attempt is a ``groupbias`` process killed with SIGKILL after a random delay
(within the span of a clean run); then the same command runs to the end. The final
``metrics.json`` must equal that of an uninterrupted run in a fresh folder, no ``.tmp`` file
may remain, and the killed folder must be reported as complete. Prints the counts; the last
line is ``survived: <kills survived> / <kills>``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ARGS = [
    "experiment=ablation_cluster_size",
    "dataset.params.n_queries=200",
    "experiment.repetitions=3",
    "experiment.cluster_sizes=[1,5,20,100]",
    "progress=false",
]


def _run(runs: Path, *, kill_after: float | None = None) -> int:
    exe = Path(sys.executable).with_name("groupbias")
    env = {**os.environ, "GROUPBIAS_RUNS": str(runs)}
    proc = subprocess.Popen(
        [str(exe), *ARGS],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    if kill_after is not None:
        time.sleep(kill_after)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.wait()


def _metrics(runs: Path) -> dict:
    (path,) = list(runs.rglob("metrics.json"))
    return json.loads(path.read_text())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    with tempfile.TemporaryDirectory() as tmp:
        clean = Path(tmp) / "clean"
        start = time.perf_counter()
        assert _run(clean) == 0
        span = time.perf_counter() - start
        reference = _metrics(clean)
        survived = 0
        for i in range(a.kills):
            runs = Path(tmp) / f"killed{i}"
            killed_at = []
            for _ in range(rnd.randint(1, 3)):  # one to three kills, then a full run
                t = rnd.uniform(0.5, span)
                killed_at.append(round(t, 1))
                _run(runs, kill_after=t)
            code = _run(runs)
            same = code == 0 and _metrics(runs) == reference
            leftovers = list(runs.rglob("*.tmp"))
            ok = same and not leftovers
            survived += ok
            print(
                f"attempt {i}: killed at {killed_at} s -> exit {code}, identical {same}, "
                f"tmp files left {len(leftovers)}"
            )
        print(f"clean run {span:.1f} s")
        print(f"survived: {survived} / {a.kills}")


if __name__ == "__main__":
    main()
