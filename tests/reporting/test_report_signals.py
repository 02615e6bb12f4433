"""`groupbias-report` under Ctrl-C and SIGTERM (before: a KeyboardInterrupt traceback, exit
-2; killed silently by SIGTERM, exit -15): one line, exit 130 / 143, no traceback, no partial
output file, and the same command then writes what a clean run writes.

The signals come once the command has installed its handlers (``SigCgt`` in
``/proc/<pid>/status`` shows SIGTERM caught): before that, while Python starts and imports
the command's modules, a signal does what Python's default does (as for ``groupbias``).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
LINE = "groupbias-report: interrupted; "

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")


def _env() -> dict:
    paths = [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "groupbias.reporting.aggregate", *args]


def _catches_sigterm(pid: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next(int(ln.split()[1], 16) for ln in text.splitlines() if ln.startswith("SigCgt"))
    return bool(caught >> (signal.SIGTERM - 1) & 1)


def _start(args, cwd) -> tuple[subprocess.Popen, float]:
    """The command started, and the moment it had installed its handlers."""
    proc = subprocess.Popen(
        _command(*args), cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    while not _catches_sigterm(proc.pid) and proc.poll() is None:
        time.sleep(0.002)
    return proc, time.monotonic()


def _runs(root: Path, n_runs=6, n_records=8000) -> Path:
    rng = np.random.default_rng(0)
    for s in range(n_runs):
        d = root / f"seed={s}"
        d.mkdir(parents=True)
        recs = [
            {
                "metric": f"m{i % 7}",
                "condition": ("biased", "corrected")[i % 2],
                "dataset": "synthetic",
                "repetition": i // 14,
                "value": float(v),
            }
            for i, v in enumerate(rng.random(n_records))
        ]
        meta = {"status": "complete", "seed": s, "fingerprint": f"f{s}"}
        (d / "meta.json").write_text(json.dumps(meta))
        (d / "metrics.json").write_text(json.dumps({"records": recs}))
    return root


def _files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())} if out.is_dir() else {}


def _clear(out: Path) -> None:
    for p in out.iterdir() if out.is_dir() else ():
        p.unlink()


def _interrupted(proc, sig) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=300)
    assert "Traceback" not in out + err, err[-3000:]
    if proc.returncode != 0:  # a signal after the work was done is ignored: exit 0
        assert proc.returncode == 128 + sig, (proc.returncode, err[-3000:])
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(LINE), err
    return proc.returncode, out, err


@pytest.mark.soak
@pytest.mark.slow
def test_aggregate_interrupted_at_random_moments_then_rerun(tmp_path):
    runs, out = _runs(tmp_path / "runs"), tmp_path / "report"
    args = [str(runs), "--out", str(out)]
    proc, ready = _start(args, tmp_path)
    assert proc.wait(timeout=300) == 0, proc.stderr.read()
    work = time.monotonic() - ready
    clean = _files(out)
    assert {"records.csv", "records.parquet", "summary.csv", "summary.md"} <= set(clean)
    moments = random.Random(39)
    stopped = {signal.SIGINT: 0, signal.SIGTERM: 0}
    for n, sig in enumerate([signal.SIGINT] * 10 + [signal.SIGTERM] * 10):
        _clear(out)
        proc, _ = _start(args, tmp_path)
        time.sleep(moments.uniform(0.0, work))
        proc.send_signal(sig)
        rc, _, _ = _interrupted(proc, sig)
        stopped[sig] += rc != 0
        left = _files(out)
        assert not [n for n in left if n.endswith(".tmp")], sorted(left)
        for name, content in left.items():  # every file there is whole: the clean run's
            assert content == clean[name], name
        if n % 5 != 4:  # the same command after every fifth interruption (each takes seconds)
            continue
        res = subprocess.run(
            _command(*args), cwd=tmp_path, env=_env(), capture_output=True, text=True
        )
        assert res.returncode == 0, res.stderr[-3000:]
        assert _files(out) == clean
    print("interrupted (of 10 each):", {sig.name: n for sig, n in stopped.items()})
    assert min(stopped.values()) >= 5, stopped  # most signals came while it worked


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_every_subcommand_stops_cleanly(tmp_path, sig):
    import groupbias as gb

    data = gb.load_dataset("synthetic", split="test", n_queries=30)
    scores = data.labels + np.random.default_rng(0).random(len(data.labels))
    gb.write_run(tmp_path / "a.run", scores, data)
    gb.write_run(tmp_path / "b.run", scores[::-1].copy(), data)
    gb.write_qrels(tmp_path / "test.qrels", data)
    gb.write_groups(tmp_path / "test.groups", data)
    files = ["--qrels", "test.qrels", "--groups", "test.groups"]
    _runs(tmp_path / "runs", n_runs=2, n_records=200)
    for args in (
        ["runs", "--out", "report"],
        ["evaluate", "--run", "a.run", *files, "--out", "ev"],
        ["compare", "a.run", "b.run", *files, "--out", "cmp"],
        ["export", "synthetic", "--split", "test", "--out", "exp"],
    ):
        proc, _ = _start(args, tmp_path)
        proc.send_signal(sig)
        rc, _, err = _interrupted(proc, sig)
        assert rc == 128 + sig, (args, rc, err)
        assert not list(tmp_path.rglob(".*.tmp"))
