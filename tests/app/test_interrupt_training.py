"""Ctrl-C during LTR training: the command stops cleanly (exit 130, ``interrupted``, one
message) and the same command resumes, reusing the rankers already trained."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ARGS = [
    "experiment=table2",
    "experiment.datasets=[synthetic]",
    "dataset.params.n_queries=600",
    "dataset.params.list_size=[20,60]",
    "bias.betas=[0.8]",
    "trainer.max_epochs=2",
    "trainer.patience=null",
    "trainer.enable_progress_bar=false",
    "model.fc_model.sizes=[32]",
    "model.transformer.d_ff=32",
]


def _start(tmp: Path) -> subprocess.Popen:
    exe = Path(sys.executable).with_name("groupbias")
    return subprocess.Popen(
        [str(exe), *ARGS, f"paths.runs={tmp}"],
        cwd=tmp,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's job
    )


@pytest.mark.slow
def test_ctrl_c_while_a_ranker_trains_stops_cleanly_and_resumes(tmp_path):
    proc = _start(tmp_path)
    # wait until the β step's first ranker trains (its logger folder appears)
    deadline = time.monotonic() + 600
    while not list(tmp_path.rglob("beta0.8/biased/logs/version_0")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "training never started"
        time.sleep(0.2)
    time.sleep(1.0)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in a terminal: the whole process group
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (out, err[-3000:])
    assert "interrupted; the same command resumes" in err
    assert "Traceback" not in err
    (meta,) = tmp_path.rglob("meta.json")
    assert json.loads(meta.read_text())["status"] == "interrupted"
    # the same command: the full-information step is reused, the rest computed
    again = _start(tmp_path)
    out, err = again.communicate(timeout=900)
    assert again.returncode == 0, err[-3000:]
    assert "step 1/2 table2_synthetic_full: reused" in out
    assert json.loads(meta.read_text())["status"] == "complete"
