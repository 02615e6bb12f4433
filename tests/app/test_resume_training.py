"""Resume inside a ranker at the command line: a tiny ``table2`` on the CPU, stopped by
SIGINT, SIGTERM or SIGKILL once a ranker has saved its training state, then the same command
again: the ranker resumes from its saved epoch (the command says which) and every ranker's
final weights and the run's test metrics equal those of a run never stopped."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from tests.app.test_interrupt_training import ARGS

#: three epochs: the state saved at epoch 2's start is there to resume from; one thread, so
#: that both runs sum in the same order whatever the machine's load
RESUME_ARGS = [
    *[a for a in ARGS if not a.startswith(("trainer.max_epochs", "dataset.params.n_queries"))],
    "dataset.params.n_queries=300",
    "trainer.max_epochs=3",
    "trainer.threads=1",
    "progress=false",
]


def _sigint_as_a_terminal_job() -> None:
    """SIGINT handled as in a terminal's foreground job (a shell without job control starts
    background commands with it ignored, and children inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _run(root: Path, *extra: str) -> subprocess.Popen:
    exe = Path(sys.executable).with_name("groupbias")
    return subprocess.Popen(
        [str(exe), *extra, *RESUME_ARGS, f"paths.runs={root}"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_sigint_as_a_terminal_job,
    )


def _weights(root: Path) -> dict[str, dict]:
    """Each ranker's final weights, by its folder below ``models``."""
    return {
        str(p.parent.parent.relative_to(root).as_posix()).split("/models/", 1)[1]: torch.load(
            p, weights_only=True
        )
        for p in sorted(root.rglob("ranker/model.pt"))
    }


def _records(root: Path) -> list[str]:
    (metrics,) = root.rglob("metrics.json")
    return sorted(json.dumps(r, sort_keys=True) for r in json.loads(metrics.read_text())["records"])


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    root = tmp_path_factory.mktemp("clean")
    proc = _run(root)
    _, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err[-3000:]
    return _weights(root), _records(root)


def _wait_for_saved_state(proc: subprocess.Popen, root: Path) -> Path:
    """Until a ranker's resume file is there (saved at its second epoch's start)."""
    deadline = time.monotonic() + 600
    while True:
        found = list(root.rglob("checkpoints/resume.ckpt"))
        if found:
            return found[0]
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "no training state was saved"
        time.sleep(0.05)


@pytest.mark.soak
@pytest.mark.slow
@pytest.mark.parametrize(
    ("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGKILL, -9)]
)
def test_a_ranker_stopped_by_a_signal_resumes_to_the_run_never_stopped(tmp_path, clean, sig, code):
    proc = _run(tmp_path)
    saved = _wait_for_saved_state(proc, tmp_path)
    os.killpg(proc.pid, sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err[-3000:]
    ranker = saved.parent.parent
    assert not (ranker / "ranker" / "model.pt").exists()  # stopped before it was trained
    again = _run(tmp_path)
    _, err = again.communicate(timeout=900)
    assert again.returncode == 0, err[-3000:]
    name = ranker.relative_to(tmp_path).as_posix()
    said = re.search(rf"groupbias: resuming {re.escape(name)} from epoch (\d)/3", err)
    assert said, err[-3000:]
    assert int(said.group(1)) >= 2  # from a saved epoch, not from the start
    (log,) = tmp_path.rglob("cli.log")
    assert said.group(0).split(": ", 1)[1] in log.read_text()
    weights, records = clean
    resumed = _weights(tmp_path)
    assert resumed.keys() == weights.keys() and len(weights) == 3
    for name, state in weights.items():
        assert all(torch.equal(resumed[name][k], state[k]) for k in state), name
    assert _records(tmp_path) == records
    assert not list(tmp_path.rglob("resume.ckpt"))  # every ranker trained: none left


def test_checkpoint_every_min_reaches_the_trainer_and_a_bad_value_is_refused_by_name():
    from hydra import compose, initialize_config_dir

    from groupbias.app.cli import CONFIG_DIR
    from groupbias.app.config import build_setup, plain
    from groupbias.core.errors import ConfigError

    def setup(value):
        with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
            cfg = plain(compose("config", [f"trainer.checkpoint_every_min={value}"]))
        cfg.pop("hydra", None)
        return build_setup(cfg)[0]

    assert setup(2.5).recipe.trainer.checkpoint_every_min == 2.5
    assert setup("null").recipe.trainer.checkpoint_every_min is None
    for bad in (0, -1, "often"):
        with pytest.raises(ConfigError) as info:
            setup(bad)
        assert info.value.key == "trainer.checkpoint_every_min"


@pytest.mark.slow
def test_the_command_refuses_a_bad_checkpoint_every_min_by_name(tmp_path):
    exe = Path(sys.executable).with_name("groupbias")
    out = subprocess.run(
        [str(exe), "trainer.checkpoint_every_min=0", f"paths.runs={tmp_path}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 2
    assert "trainer.checkpoint_every_min" in out.stderr.splitlines()[0]


def _descendants(pid: int) -> list[tuple[int, str]]:
    """``(pid, command line)`` of every process below ``pid`` (from /proc)."""
    parent: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        parent[int(stat.parent.name)] = int(fields[1])
    found, frontier = [], {pid}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier}
        for p in frontier:
            try:
                found.append((p, (Path("/proc") / str(p) / "cmdline").read_bytes().decode()))
            except OSError:
                continue
    return found


@pytest.mark.soak
@pytest.mark.slow
def test_a_preempted_submitit_job_is_requeued_and_its_ranker_resumes(tmp_path, clean):
    """Slurm's preemption as submitit's local executor plays it: SIGUSR2 to the job's task
    while a ranker trains; submitit checkpoints the job (hydra-submitit-launcher's
    ``checkpoint``: the same job again) and requeues it; the requeued job resumes the ranker
    from its saved epoch and ends equal to a run never stopped."""
    proc = _run(tmp_path, "-m", "launcher=submitit_local")
    saved = _wait_for_saved_state(proc, tmp_path)
    tasks = [p for p, cmd in _descendants(proc.pid) if "submitit.core._submit" in cmd]
    assert len(tasks) == 1, _descendants(proc.pid)
    os.kill(tasks[0], signal.SIGUSR2)
    _, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err[-3000:]
    logs = "".join(p.read_text() for p in sorted(tmp_path.rglob(".submitit/*/*_log.*")))
    assert "this job is preempted" in logs and "Requeued job" in logs, logs[-3000:]
    name = saved.parent.parent.relative_to(tmp_path).as_posix()
    assert re.search(rf"resuming {re.escape(name)} from epoch [23]/3", logs), logs[-3000:]
    weights, records = clean
    resumed = _weights(tmp_path)
    assert resumed.keys() == weights.keys()
    for name, state in weights.items():
        assert all(torch.equal(resumed[name][k], state[k]) for k in state), name
    assert _records(tmp_path) == records
