"""The command's signal handling: an interruption that comes while the garbage collector runs
a finalizer is not lost (Python prints and drops exceptions raised there)."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import gc, os, signal, sys, time, weakref
from groupbias.app.cli import install_signal_handlers
from groupbias.app.runs import Interrupted

install_signal_handlers()
# Ctrl-C: Python's own SIGINT handler (a suite started in the background hands it ignored)
signal.signal(signal.SIGINT, signal.default_int_handler)
SIG = getattr(signal, sys.argv[1])


def signalled_inside():
    os.kill(os.getpid(), SIG)
    for _ in range(100_000):  # the handler runs here, inside the finalizer
        pass


class Finalized:
    def __del__(self):
        signalled_inside()


class Holder:
    pass


try:
    if sys.argv[2] == "del":
        Finalized()  # finalized at once
    else:
        h = Holder()
        weakref.finalize(h, signalled_inside)
        del h
        gc.collect()
    time.sleep(5)
    print("lost")
except (Interrupted, KeyboardInterrupt) as exc:
    print("interrupted", type(exc).__name__)
"""


@pytest.mark.parametrize("where", ["del", "weakref"])
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_during_a_finalizer_still_interrupts(sig, where):
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, sig, where],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    want = "KeyboardInterrupt" if sig == "SIGINT" else "Interrupted"
    assert proc.stdout.strip() == f"interrupted {want}", proc.stdout + proc.stderr
    assert "Exception ignored" not in proc.stderr, proc.stderr


def test_other_unraisable_exceptions_are_still_reported():
    script = (
        "from groupbias.app.cli import install_signal_handlers\n"
        "install_signal_handlers()\n"
        "class Bad:\n"
        "    def __del__(self):\n"
        "        raise ValueError('in a finalizer')\n"
        "Bad()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and "ValueError: in a finalizer" in proc.stderr
