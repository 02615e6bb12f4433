"""On a terminal the command draws its bar of the whole run (steps, ranker, epoch, time
left) and Lightning's epoch bar while a ranker trains; tested under a pseudo-terminal that
nobody sized (0 × 0, as Python's pty module makes it: tqdm alone drew nothing there)."""

from __future__ import annotations

import os
import re
import select
import signal
import sys
import time
from pathlib import Path

import pytest

ARGS = [
    "experiment=table2",
    "experiment.datasets=[synthetic]",
    "dataset.params.n_queries=300",
    "bias.betas=[0.8]",
    "trainer.max_epochs=2",
    "trainer.patience=null",
    "model.fc_model.sizes=[32]",
    "model.transformer.d_ff=32",
]


def _read_until(fd: int, seen: dict, patterns: dict, deadline: float) -> str:
    """Read the terminal until every pattern was seen (its first time in ``seen``)."""
    out = b""
    while time.monotonic() < deadline and len(seen) < len(patterns):
        ready, _, _ = select.select([fd], [], [], 0.5)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the command ended
            break
        if not chunk:
            break
        out += chunk
        text = out.decode(errors="replace")
        for name, pattern in patterns.items():
            if name not in seen and re.search(pattern, text):
                seen[name] = time.monotonic()
    return out.decode(errors="replace")


@pytest.mark.slow
def test_the_run_bar_and_the_epoch_bar_show_on_a_terminal(tmp_path):
    import pty

    exe = str(Path(sys.executable).with_name("groupbias"))
    pid, fd = pty.fork()
    if pid == 0:  # the child: the command on the pseudo-terminal
        os.chdir(tmp_path)
        os.environ["TERM"] = "xterm"
        os.execv(exe, [exe, *ARGS, f"paths.runs={tmp_path}"])
    patterns = {
        "training": r"step 1/2 table2_synthetic_full: running",
        "run bar": r"groupbias table2: 0/2 steps \|[^\r\n]*ranker 1/3, epoch 1/2",
        "epoch bar": r"Epoch 0: +\d+%\|",
    }
    seen: dict = {}
    try:
        text = _read_until(fd, seen, patterns, time.monotonic() + 300)
    finally:
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
        os.close(fd)
    assert set(seen) == set(patterns), text[-3000:]
    assert seen["run bar"] - seen["training"] < 10, text[-3000:]
    assert seen["epoch bar"] - seen["training"] < 10, text[-3000:]
    # the run's bar is redrawn at the start of its line, the epoch bar on the line below
    assert "\r" in text and "\x1b[A" in text
