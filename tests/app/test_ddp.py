"""Distributed training (``trainer=ddp``): two CPU processes (gloo) train every ranker of a
Table 2 run; rank 0 alone prints and writes, and the rankers are as good as one process's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from groupbias.app.runs import RunDir
from groupbias.core.io import write_json_atomic, writes_files

REPO = Path(__file__).resolve().parents[2]
TINY = [
    "experiment=table2",
    "experiment.datasets=[synthetic]",
    "dataset.params.n_queries=80",
    "dataset.params.list_size=[4,20]",
    "bias.betas=[0.8]",
    "trainer.max_epochs=3",
    "trainer.patience=null",
    "trainer.enable_progress_bar=false",
    "model.fc_model.sizes=[16]",
    "model.transformer.d_ff=16",
]
DDP = ["trainer=ddp", "trainer.accelerator=cpu", "trainer.devices=2", "trainer.precision=32-true"]


def _run(tmp: Path, args: list[str]) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("groupbias")
    tmp.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "NODE_RANK")}
    return subprocess.run(
        [str(exe), *TINY, f"paths.runs={tmp}", *args],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def _ndcg(run_root: Path) -> dict[str, float]:
    (metrics,) = run_root.rglob("metrics.json")
    recs = json.loads(metrics.read_text())["records"]
    return {r["condition"]: r["value"] for r in recs if r["metric"] == "ndcg@10"}


@pytest.mark.soak
@pytest.mark.slow
def test_two_cpu_processes_train_table2_and_rank_zero_writes(tmp_path):
    got = _run(tmp_path / "ddp", DDP)
    assert got.returncode == 0, got.stderr[-3000:]
    # one process prints: every step once, the table once
    assert got.stdout.count("table2_synthetic_beta0.8: done") == 1, got.stdout
    assert got.stdout.count("Table 2.") == 1
    (meta,) = (tmp_path / "ddp").rglob("meta.json")
    assert json.loads(meta.read_text())["status"] == "complete"
    assert not list((tmp_path / "ddp").rglob("*.tmp"))
    ddp = _ndcg(tmp_path / "ddp")
    # batches gathered on each rank's device (what a GPU run does): the same bits
    got = _run(tmp_path / "dev", [*DDP, "batching.on_device=true"])
    assert got.returncode == 0, got.stderr[-3000:]
    assert _ndcg(tmp_path / "dev") == ddp
    # the same run in one process, three seeds: DDP's rankers within their spread
    single = [
        _ndcg(tmp_path / f"s{seed}")
        for seed in range(3)
        if not _run(tmp_path / f"s{seed}", [f"seed={seed}"]).returncode
    ]
    assert len(single) == 3
    for cond, value in ddp.items():
        seen = [s[cond] for s in single]
        spread = max(seen) - min(seen)
        assert min(seen) - spread - 0.02 <= value <= max(seen) + spread + 0.02, (cond, value, seen)


def test_worker_ranks_write_nothing(tmp_path, monkeypatch):
    assert writes_files()
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert not writes_files()
    write_json_atomic(tmp_path / "x.json", {"a": 1})
    run_dir = RunDir(tmp_path / "run", {"k": 1})
    run_dir.start()
    assert run_dir.step("s", lambda: {"v": [1, 2]}) == {"v": [1, 2]}
    assert run_dir.finish({"records": [{"b": 2, "a": 1}]}) == {"records": [{"a": 1, "b": 2}]}
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("RANK", "3")  # torchrun's global rank
    assert not writes_files()
    monkeypatch.setenv("RANK", "0")
    assert writes_files()
