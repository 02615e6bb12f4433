import json
import platform
import re
import signal
import subprocess
import sys

import pytest

from groupbias.app import runs

pytestmark = pytest.mark.reproducibility


def test_run_once_skips_complete_and_resumes_steps(tmp_path):
    calls = []
    cfg = {"experiment": {"name": "x"}, "bias": {"beta": 0.8}, "paths": {"out": "a"}}

    def fn(run_dir):
        res = [
            run_dir.step(f"k{k}", lambda k=k: (calls.append(k), {"v": k * 2})[1], key={"k": k})
            for k in (1, 2)
        ]
        return {"records": [{"metric": "v", "value": r["v"]} for r in res]}

    m, skipped = runs.run_once(tmp_path / "r", cfg, fn, seed=0)
    assert not skipped and [r["value"] for r in m["records"]] == [2, 4] and calls == [1, 2]
    m2, skipped = runs.run_once(tmp_path / "r", cfg, fn, seed=0)
    assert skipped and m2 == m and calls == [1, 2]
    # a changed result-relevant key re-runs; a changed path does not
    runs.run_once(tmp_path / "r", {**cfg, "paths": {"out": "b"}}, fn)
    assert calls == [1, 2]
    runs.run_once(tmp_path / "r", {**cfg, "bias": {"beta": 0.6}}, fn)
    assert calls == [1, 2, 1, 2]
    meta = json.loads((tmp_path / "r" / "meta.json").read_text())
    assert meta["status"] == "complete" and "groupbias_version" in meta


def test_killed_run_reuses_finished_steps(tmp_path):
    cfg = {"a": 1}
    calls = []

    def crashing(run_dir):
        run_dir.step("s1", lambda: (calls.append(1), {"v": 1})[1])
        raise KeyboardInterrupt

    try:
        runs.run_once(tmp_path / "r", cfg, crashing)
    except KeyboardInterrupt:
        pass
    assert not (tmp_path / "r" / "metrics.json").exists()
    assert runs.complete_records(tmp_path / "r") is None  # half-finished

    def fine(run_dir):
        v = run_dir.step("s1", lambda: (calls.append(2), {"v": 9})[1])
        return {"records": [{"metric": "v", "value": v["v"]}]}

    m, _ = runs.run_once(tmp_path / "r", cfg, fine)
    assert calls == [1] and m["records"][0]["value"] == 1
    assert runs.complete_records(tmp_path / "r") == [{"metric": "v", "value": 1}]


def test_a_labelled_step_prints_one_line_with_its_time(tmp_path, capsys):
    run_dir = runs.RunDir(tmp_path / "r", {"a": 1})
    run_dir.start()
    run_dir.step("tab_b0.8", lambda: {"v": 1}, label="tabular, β = 0.8")
    run_dir.step("tab_b0.8", lambda: {"v": 2}, label="tabular, β = 0.8")
    run_dir.step("plain", lambda: {"v": 3})
    lines = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"\[groupbias\] step 1 tabular, β = 0\.8: \d+\.\d s", lines[0]), lines
    assert lines[1] == "[groupbias] step 2 tabular, β = 0.8: reused"
    assert lines[2] == "[groupbias] step 3 plain: running" and lines[3].startswith(
        "[groupbias] step 3 plain: done in "
    )
    assert len(lines) == 4


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
    reason="malloc_trim is glibc's",
)
def test_release_free_memory_returns_freed_heap_pages(tmp_path):
    """Freed arrays just below glibc's mmap threshold stay in its heap (in the resident set)
    while a later block pins the heap's top; release_free_memory hands them back."""
    code = (
        "import numpy as np\n"
        "from groupbias.core.memory import release_free_memory\n"
        "def rss():\n"
        "    with open('/proc/self/statm') as f:\n"
        "        return int(f.read().split()[1]) * 4096 / 2**20\n"
        "warm = np.ones(3_000_000); del warm\n"  # glibc's mmap threshold rises to 23 MB
        "big = [np.ones(2_500_000) for _ in range(6)]\n"  # 6 x 19 MiB in the heap
        "pin = np.ones(100_000)\n"  # at the heap's top
        "del big\n"
        "before = rss()\n"
        "ok = release_free_memory()\n"
        "print(ok, before, rss())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    ok, before, after = out.stdout.split()
    assert ok == "True"
    assert float(before) - float(after) > 80  # of the 114 MiB freed


def test_step_records_run_every_point_in_order_and_resume(tmp_path):
    import functools

    from experiments.common import Entry, beta_grid, step_records
    from groupbias.data.datasets import BuiltinGrouping, DatasetSpec

    entry = Entry(DatasetSpec(name="synthetic", title="toy"), BuiltinGrouping(), "datasets[0]")
    calls = []

    def fn(tag, *, beta):
        calls.append((tag, beta))
        return {"records": [{"tag": tag, "beta": beta}]}

    steps = {
        "tab_{title}_beta{beta}": functools.partial(fn, "tab"),
        "ltr_{title}_beta{beta}": functools.partial(fn, "ltr"),
    }
    run_dir = runs.RunDir(tmp_path / "run", {"x": 1})
    recs = step_records(run_dir, entry, steps, beta_grid([0.8, 0.6]), key={"sizes": [1]})
    # per β, the steps in their order
    order = [("tab", 0.8), ("ltr", 0.8), ("tab", 0.6), ("ltr", 0.6)]
    assert [(r["tag"], r["beta"]) for r in recs] == order == calls
    names = sorted(p.name for p in (run_dir.path / "steps").iterdir())
    assert names == sorted(f"{t}_toy_beta{b}.json" for t, b in order)
    # the same entry, key and point: reused; another key: computed again
    calls.clear()
    assert step_records(run_dir, entry, steps, beta_grid([0.8]), key={"sizes": [1]}) == recs[:2]
    assert calls == []
    step_records(run_dir, entry, steps, beta_grid([0.8]), key={"sizes": [2]})
    assert calls == order[:2]


@pytest.mark.parametrize(
    "exc, want",
    [
        (KeyboardInterrupt(), "interrupted by SIGINT (Ctrl-C)"),
        (runs.Interrupted(signal.SIGTERM), "interrupted by SIGTERM (a termination request"),
        (runs.Interrupted(signal.SIGHUP), "interrupted by SIGHUP (its terminal closed)"),
        (ValueError("bad value"), "ValueError: bad value"),
    ],
)
def test_meta_json_says_what_stopped_the_run(tmp_path, exc, want):
    """An interrupted run's ``meta.json`` names the signal (once ``KeyboardInterrupt: ``
    with no text); a failed one its error."""

    def stopped(run_dir):
        run_dir.step("s1", lambda: {"v": 1})
        raise exc

    with pytest.raises(type(exc)):
        runs.run_once(tmp_path / "r", {"a": 1}, stopped)
    meta = json.loads((tmp_path / "r" / "meta.json").read_text())
    assert meta["status"] == ("failed" if isinstance(exc, ValueError) else "interrupted")
    assert meta["error"].startswith(want), meta["error"]
