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
        preexec_fn=_foreground_signals,
    )


def _foreground_signals() -> None:
    """SIGINT as a terminal's foreground job has it: a shell without job control starts its
    background commands (e.g. `make test &`) with SIGINT ignored, and children inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _assert_stopped(code: int, text: str, root: Path) -> Path:
    """A run stopped by ^C: exit 130, the one-line message and no traceback in ``text``,
    ``meta.json`` under ``root`` saying ``interrupted``; returns that file."""
    assert code == 130, text[-3000:]
    assert "interrupted; the same command resumes" in text
    assert "Traceback" not in text
    (meta,) = root.rglob("meta.json")
    assert json.loads(meta.read_text())["status"] == "interrupted"
    return meta


def _wait_for_training(proc: subprocess.Popen, root: Path, output) -> None:
    """Until the β step's first ranker trains (its logger folder appears); ``output()``: what
    the run printed, shown if it ends first. The interruption comes at once: the corrected
    ranker and the β step are still to come, however fast the machine (a second's wait let
    an idle machine finish the whole run first)."""
    deadline = time.monotonic() + 600
    while not list(root.rglob("beta0.8/biased/logs/version_0")):
        assert proc.poll() is None, output()
        assert time.monotonic() < deadline, "training never started"
        time.sleep(0.2)


@pytest.mark.soak
@pytest.mark.slow
def test_ctrl_c_while_a_ranker_trains_stops_cleanly_and_resumes(tmp_path):
    proc = _start(tmp_path)
    _wait_for_training(proc, tmp_path, proc.communicate)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in a terminal: the whole process group
    out, err = proc.communicate(timeout=120)
    meta = _assert_stopped(proc.returncode, err, tmp_path)
    # the same command: the full-information step is reused, the rest computed
    again = _start(tmp_path)
    out, err = again.communicate(timeout=900)
    assert again.returncode == 0, err[-3000:]
    assert "step 1/2 table2_synthetic_full: reused" in out
    assert json.loads(meta.read_text())["status"] == "complete"


def _records(root: Path) -> list:
    (metrics,) = root.rglob("metrics.json")
    recs = json.loads(metrics.read_text())["records"]
    return sorted(json.dumps(r, sort_keys=True) for r in recs)


@pytest.mark.soak
@pytest.mark.slow
def test_ctrl_c_on_a_terminal_exits_130_within_10_s_and_resumes_to_a_clean_runs_records(
    tmp_path,
):
    """The issue's case: `groupbias experiment=table2` on a pseudo-terminal that is its
    controlling terminal, and ^C typed into it while a ranker trains (the terminal driver
    sends SIGINT to the foreground process group): exit 130 within 10 s, `interrupted`;
    the same command then resumes, and its records equal those of a run never interrupted."""
    import fcntl
    import pty
    import termios
    import threading

    exe = Path(sys.executable).with_name("groupbias")
    stopped, clean = tmp_path / "stopped", tmp_path / "clean"
    stopped.mkdir()
    clean.mkdir()
    master, slave = pty.openpty()

    def controlling_terminal() -> None:  # in the child: a session of its own on the pty
        _foreground_signals()
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(
        [str(exe), *ARGS, f"paths.runs={stopped}"],
        cwd=stopped,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        preexec_fn=controlling_terminal,
    )
    os.close(slave)
    shown: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # the child closed the terminal
                return
            if not data:
                return
            shown.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    _wait_for_training(proc, stopped, lambda: b"".join(shown)[-3000:])
    t0 = time.monotonic()
    os.write(master, b"\x03")  # ^C
    proc.wait(timeout=120)
    took = time.monotonic() - t0
    reader.join(timeout=5)
    os.close(master)
    text = b"".join(shown).decode(errors="replace")
    assert took <= 10, f"stopped {took:.1f} s after ^C"
    _assert_stopped(proc.returncode, text, stopped)
    again = _start(stopped)
    _, err = again.communicate(timeout=900)
    assert again.returncode == 0, err[-3000:]
    reference = _start(clean)
    _, err = reference.communicate(timeout=900)
    assert reference.returncode == 0, err[-3000:]
    assert _records(stopped) == _records(clean)
