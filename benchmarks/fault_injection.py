"""Fault injection: interrupt a run anywhere in it, then finish it, and compare with a clean run.

    python benchmarks/fault_injection.py --attempts 12 [--seed 0] [--experiment table2]

The run (``--experiment``), on LightGBM files written here (``--queries`` lists of 20 items,
60 features, grouped by feature 1):

- ``ablation_cluster_size`` (default; 4000 queries: the parsed-split cache writes about
  20 MB): 6 repetitions, 4 cluster sizes, β ∈ {0.8, 0.6}: one load through the cache and 12
  steps;
- ``table2`` (the LTR regime; 2000 queries, a train and a test file): full-information,
  biased and corrected rankers at β 0.8 (2 epochs each, a small model, Lightning's loop on
  the CPU), two steps, the rankers' folders written as they finish.

Every attempt starts from an empty runs folder and an empty cache and
interrupts the run one to three times, each time in one of these ways (drawn at random):

- ``kill@t``: SIGKILL, SIGINT or SIGTERM at a time drawn uniformly over the whole clean run;
- ``kill@step``: the same signals the moment the k-th step file appears (k drawn), so that
  interruptions fall across the steps, not mostly in the start-up;
- ``kill@cache``: SIGKILL the moment the cache's temporary folder appears (a killed cache
  write);
- ``kill@ranker`` (``table2`` only): SIGKILL, SIGINT or SIGTERM the moment a ranker saves its
  training state (``checkpoints/resume.ckpt``), so that the next run resumes it mid-training;
- ``ulimit``: a file size limit (``RLIMIT_FSIZE``, as ``ulimit -f``) drawn log-uniformly
  from 32 KiB to the largest file the run writes (below 64 KiB it is refused before the
  run), so that some write fails part-way (a run file: exit 2, "File too large"; a cache
  entry: a warning, the run goes on without the cache);
- ``full-disk`` (root only): the runs folder and the cache on a tmpfs whose free space is
  drawn log-uniformly below what the run needs ("No space left on device"; less than 1 MiB
  is refused before the run), grown afterwards.

Then the same command runs to the end (a ranker stopped while it trained resumes from its saved
state, counted as "rankers resumed"). It must exit 0, its ``metrics.json`` must equal the
clean run's byte for byte, and no temporary file (``.*.tmp`` of a run folder, ``.tmp-*`` of the
cache) may remain. Prints one line per attempt and where the interruptions struck (start-up,
cache write, steps, a write of the run folder, refused up front); the last line is
``survived: <attempts> / <attempts>``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SIGNALS = {"KILL": signal.SIGKILL, "INT": signal.SIGINT, "TERM": signal.SIGTERM}
MODES = ("kill@t", "kill@step", "kill@cache", "ulimit", "full-disk")


def write_data(folder: Path, n_queries: int, splits=("train",)) -> None:
    """LightGBM files (``<split>.txt`` + ``.query``): lists of 20 items, 60 features, feature
    1 a sensitive attribute (0 / 1), graded labels 0..4 that depend on the features."""
    rng = np.random.default_rng(7)
    n = n_queries * 20
    for split in splits:
        x = rng.random((n, 60)).round(4)
        x[:, 1] = rng.random(n) < 0.35
        labels = np.clip(np.round(4 * x[:, 2] * x[:, 3] + rng.normal(0, 0.6, n)), 0, 4)
        lines = [
            f"{int(lab)} " + " ".join(f"{j}:{v:g}" for j, v in enumerate(row))
            for lab, row in zip(labels, x)
        ]
        (folder / f"{split}.txt").write_text("\n".join(lines) + "\n")
        (folder / f"{split}.txt.query").write_text("20\n" * n_queries)


#: the runs of ``--experiment`` (module docstring): (overrides, default queries, splits)
EXPERIMENTS = {
    "ablation_cluster_size": (
        [
            "experiment=ablation_cluster_size",
            "dataset=lightgbm",
            "grouping=feature",
            "grouping.feature_id=1",
            "experiment.repetitions=6",
            "experiment.cluster_sizes=[1,5,20,100]",
        ],
        4000,
        ("train",),
    ),
    "table2": (
        [
            "experiment=table2",
            "experiment.datasets=[{dataset: lightgbm, grouping: {_target_: "
            "data_loaders.grouping.FeatureGrouping, feature_id: 1, threshold: mean}}]",
            "bias.betas=[0.8]",
            "trainer.max_epochs=2",
            "trainer.patience=null",
            "trainer.enable_progress_bar=false",
            "model.fc_model.sizes=[32]",
            "model.transformer.d_ff=32",
        ],
        2000,
        ("train", "test"),
    ),
}


def command(experiment: str) -> list[str]:
    exe = Path(sys.executable).with_name("groupbias")
    return [str(exe), *EXPERIMENTS[experiment][0], "progress=false"]


class Run:
    """One ``groupbias`` process on a runs folder and a cache."""

    def __init__(self, args, runs: Path, cache: Path, data: Path, fsize: int | None = None):
        env = {
            **os.environ,
            "GROUPBIAS_RUNS": str(runs),
            "GROUPBIAS_CACHE": str(cache),
            "GROUPBIAS_LIGHTGBM": str(data),
        }

        def limit():
            if fsize is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

        self.runs, self.cache, self.start = runs, cache, time.perf_counter()
        self.wall = time.time()
        self.proc = subprocess.Popen(
            args,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            preexec_fn=limit,
        )

    def steps(self) -> int:
        return len(list(self.runs.rglob("steps/*.json")))

    def cache_writing(self) -> bool:
        d = self.cache / "ranking"
        return d.is_dir() and any(p.name.startswith(".tmp-") for p in d.iterdir())

    def wait_until(self, ready, timeout: float = 600.0) -> bool:
        """Poll ``ready()`` every millisecond; False when the run ended first."""
        end = time.perf_counter() + timeout
        while self.proc.poll() is None and time.perf_counter() < end:
            with contextlib.suppress(OSError):
                if ready():
                    return True
            time.sleep(0.001)
        return False

    def interrupt(self, sig) -> float:
        t = time.perf_counter() - self.start
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)
        return t

    def finish(self) -> tuple[int, str]:
        _, err = self.proc.communicate(timeout=900)
        return self.proc.returncode, err


def _metrics(runs: Path) -> bytes:
    (path,) = list(runs.rglob("metrics.json"))
    return path.read_bytes()


def _leftovers(runs: Path, cache: Path) -> list[Path]:
    left = list(runs.rglob(".*.tmp")) if runs.exists() else []
    d = cache / "ranking"
    if d.is_dir():
        left += [p for p in d.iterdir() if p.name.startswith(".tmp-")]
    return left


def _mount(where: Path, size_kb: int, remount: bool = False) -> bool:
    where.mkdir(parents=True, exist_ok=True)
    opts = f"size={size_kb}k" + (",remount" if remount else "")
    args = ["mount", "-o", opts, str(where)] if remount else ["mount", "-t", "tmpfs"]
    if not remount:
        args += ["-o", opts, "tmpfs", str(where)]
    return subprocess.run(args, capture_output=True).returncode == 0


def _disk_usage(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _log_uniform(rnd: random.Random, low: float, high: float) -> float:
    """A size drawn log-uniformly in [low, high): small limits (hitting the step files) as
    often as large ones (hitting the cache)."""
    return float(np.exp(rnd.uniform(np.log(low), np.log(high))))


def _limit_phase(err: str, code: int) -> str:
    """Where a size limit or a full disk struck: refused before the run, in a write of the
    run folder (exit 2), in a cache write (a warning, the run goes on), or nowhere."""
    if "files are limited to" in err or "KiB free" in err:
        return "refused up front"
    if "could not write cache entry" in err:
        return "cache write"
    if code == 2 and ("File too large" in err or "No space left" in err):
        return "run-folder write"
    return "no write hit"


def interruption(mode, rnd, args, runs, cache, data, clean, disk) -> tuple[str, str, int]:
    """One interruption: ``(description, where it struck, exit code)``."""
    if mode == "ulimit":
        fsize = int(_log_uniform(rnd, 32 << 10, clean["largest"]))
        code, err = Run(args, runs, cache, data, fsize=fsize).finish()
        phase = _limit_phase(err, code)
        return f"ulimit -f {fsize // 1024} KiB ({phase})", phase, code
    if mode == "full-disk":
        used = _disk_usage(disk) // 1024
        room = int(_log_uniform(rnd, 512, clean["disk_kb"]))  # free space left to the run
        shrunk = _mount(disk, used + room, remount=True)
        code, err = Run(args, runs, cache, data).finish()
        _mount(disk, 4 * clean["disk_kb"] + 65536, remount=True)
        phase = _limit_phase(err, code) if shrunk else "disk not shrunk"
        return f"disk with {room} KiB free ({phase})", phase, code
    had = len(list(runs.rglob("steps/*.json")))  # finished by earlier interruptions
    run = Run(args, runs, cache, data)
    name, sig = rnd.choice(list(SIGNALS.items()))
    if mode == "kill@cache":
        name, sig = "KILL", signal.SIGKILL
        hit = run.wait_until(run.cache_writing)
    elif mode == "kill@ranker":  # a ranker saved its training state in this run
        hit = run.wait_until(
            lambda: any(p.stat().st_mtime > run.wall for p in runs.rglob("resume.ckpt"))
        )
    elif mode == "kill@step" and had < clean["steps"] - 1:
        k = rnd.randint(had + 1, clean["steps"] - 1)
        hit = run.wait_until(lambda: run.steps() >= k)
    else:
        t = rnd.uniform(0.0, clean["span"])
        hit = run.wait_until(lambda: time.perf_counter() - run.start >= t)
    if run.cache_writing():
        phase = "cache write"
    elif mode == "kill@ranker" and hit:
        phase = "ranker training (state saved)"
    elif run.steps() > had:
        phase = f"steps ({run.steps()} of {clean['steps']} done)"
    else:
        phase = "start-up"
    at = run.interrupt(sig) if hit else float("nan")
    code, _ = run.finish()
    if not hit:
        phase = "after the end"
    return f"SIG{name} at {at:.1f} s, {phase}", phase.split(" (")[0], code


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--attempts", type=int, default=12)
    ap.add_argument("--queries", type=int, default=None, help="default: per experiment")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--experiment", choices=sorted(EXPERIMENTS), default="ablation_cluster_size")
    a = ap.parse_args(argv)
    _, default_queries, splits = EXPERIMENTS[a.experiment]
    n_queries = a.queries or default_queries
    rnd = random.Random(a.seed)
    root_ok = os.geteuid() == 0
    modes = MODES if root_ok else MODES[:-1]
    if a.experiment == "table2":
        modes = ("kill@ranker", *modes)
    print(f"{a.experiment}, {n_queries} queries; load {os.getloadavg()}; modes {', '.join(modes)}")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        data = tmp / "data"
        data.mkdir()
        write_data(data, n_queries, splits)
        args = command(a.experiment)
        run = Run(args, tmp / "clean" / "runs", tmp / "clean" / "cache", data)
        run.wait_until(lambda: run.steps() > 0)
        startup = time.perf_counter() - run.start
        code, err = run.finish()
        assert code == 0, err[-3000:]
        span = time.perf_counter() - run.start
        clean_runs = tmp / "clean" / "runs"
        reference = _metrics(clean_runs)
        files = [p for p in tmp.joinpath("clean").rglob("*") if p.is_file()]
        clean = {
            "span": span,
            "steps": run.steps(),
            "largest": max(p.stat().st_size for p in files),
            "disk_kb": _disk_usage(tmp / "clean") // 1024 + 1,
        }
        print(
            f"clean run {span:.1f} s (first step after {startup:.1f} s), {clean['steps']} steps, "
            f"largest file {clean['largest'] / 2**20:.1f} MiB, {clean['disk_kb'] / 1024:.1f} MiB"
        )
        survived = resumed = 0
        phases: dict[str, int] = {}
        for i in range(a.attempts):
            disk = tmp / f"disk{i}"
            mounted = False
            if root_ok:
                mounted = _mount(disk, 4 * clean["disk_kb"] + 65536)
            base = disk if mounted else tmp / f"attempt{i}"
            runs, cache = base / "runs", base / "cache"
            done = []
            for _ in range(rnd.randint(1, 3)):
                cached = (cache / "ranking").is_dir()  # a cache write only with an empty cache
                mode = rnd.choice(
                    [
                        m
                        for m in modes
                        if (mounted or m != "full-disk") and not (cached and m == "kill@cache")
                    ]
                )
                what, phase, code = interruption(mode, rnd, args, runs, cache, data, clean, disk)
                done.append(f"{what} -> exit {code}")
                phases[phase] = phases.get(phase, 0) + 1
            code, err = Run(args, runs, cache, data).finish()
            resumed_here = err.count("groupbias: resuming ")
            resumed += resumed_here
            same = code == 0 and _metrics(runs) == reference
            left = _leftovers(runs, cache)
            ok = same and not left
            survived += ok
            print(f"attempt {i}: {'; '.join(done)}")
            print(
                f"  then: exit {code}, identical bytes {same}, temporary files left "
                f"{len(left)}, rankers resumed {resumed_here}"
            )
            if not ok:
                print(err[-2000:])
            if mounted:
                subprocess.run(["umount", str(disk)], check=False)
        total = sum(phases.values())
        print(
            f"{total} interruptions, where they struck: "
            + ", ".join(f"{k} {v}" for k, v in sorted(phases.items(), key=lambda kv: -kv[1]))
        )
        print(f"rankers resumed from a saved training state by the final runs: {resumed}")
        print(f"survived: {survived} / {a.attempts}")


if __name__ == "__main__":
    main()
