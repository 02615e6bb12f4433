"""Keys that scale memory or time are checked while the configuration is built (issue 39
item 5; before: a 364 TiB ``_ArrayMemoryError`` traceback, a bootstrap still running after
90 s with no estimate, ``MemoryError`` tracebacks for ``trainer.threads=1000`` and
``experiment.repetitions=10**14``)."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from groupbias.app import resources
from groupbias.app.preflight import check_command_line
from groupbias.core.errors import GroupBiasError, GroupBiasWarning

REPO = Path(__file__).resolve().parents[2]


def _refused(args, key, *words):
    with pytest.raises(GroupBiasError) as err:
        check_command_line(args)
    msg = str(err.value)
    assert msg.startswith(f"{key}: "), msg
    for w in words:
        assert w in msg, msg
    return msg


def _warned(args) -> list[str]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert check_command_line(args) == 1
    return [str(w.message) for w in seen if issubclass(w.category, GroupBiasWarning)]


def test_ppg_sessions_whose_pair_matrix_cannot_fit():
    _refused(
        ["evaluation=paper_code_ppg", "evaluation.sessions=1000000"],
        "evaluation.sessions",
        "would need about 2910.4 TiB",
        "this machine has",
    )
    # 4 sessions of 20 items: 51 KiB, accepted
    assert _warned(["evaluation=paper_code_ppg", "evaluation.sessions=4"]) == []


def test_a_bootstrap_bias_correction_too_long_to_run():
    _refused(
        ["estimator.bias_correction=bootstrap", "estimator.bias_boot=100000000"],
        "estimator.bias_boot",
        "would take at least",
        "days",
    )


def test_a_long_bootstrap_is_warned_with_its_estimate():
    (msg,) = _warned(["estimator.bias_correction=bootstrap", "estimator.bias_boot=100000"])
    assert msg.startswith("estimator.bias_boot=100000: 100,000 β̂ estimates") and " min" in msg
    assert "would take at least about" in msg
    # the default 50 replicates: no warning; bias_boot unused without the correction: unchecked
    assert _warned(["estimator.bias_correction=bootstrap"]) == []
    (msg,) = _warned(["estimator.bootstrap=2000000"])
    assert msg.startswith("estimator.bootstrap=2000000")


def test_threads_beyond_the_cores_are_refused(monkeypatch):
    _refused(["experiment=table2", "trainer.threads=1000"], "trainer.threads", "1000 threads")
    monkeypatch.setattr(resources, "cores", lambda: 4)  # the one count, from _fast.threads
    _refused(["experiment=table2", "trainer.threads=5"], "trainer.threads", "the 4 cores")
    assert check_command_line(["experiment=table2", "trainer.threads=4"]) == 1
    _refused(
        ["evaluation=policy", "evaluation.exposure_workers=64"],
        "evaluation.exposure_workers",
        "64 threads",
    )


def test_repetitions_whose_steps_cannot_fit_or_end():
    _refused(
        ["experiment=ablation_cluster_size", "experiment.repetitions=100000000000000"],
        "experiment.repetitions",
        "experiment.repetitions × experiment.cluster_sizes × bias.betas",
        "TiB",
    )
    (msg,) = _warned(["experiment=ablation_cluster_size", "experiment.repetitions=100000"])
    assert msg.startswith("experiment.repetitions=100000: 2,000,000 steps")


def test_list_sizes_multiply_the_steps():
    betas = "[" + ",".join(f"{0.5 + i / 4e5:.7f}" for i in range(200)) + "]"
    (msg,) = _warned(
        ["experiment=ablation_cluster_size", "experiment.repetitions=100", f"bias.betas={betas}"]
    )
    assert "200,000 steps (experiment.repetitions × experiment.cluster_sizes × bias.betas)" in msg


@pytest.mark.parametrize("experiment", ["demo", "table1", "table2", "clicks", "fig7"])
def test_default_experiments_are_neither_refused_nor_warned(experiment):
    assert _warned([f"experiment={experiment}"]) == []


@pytest.mark.slow  # a groupbias process
def test_at_the_command_line_one_line_exit_2_no_folder(tmp_path):
    exe = Path(sys.executable).with_name("groupbias")
    for args, key in (
        (["evaluation=paper_code_ppg", "evaluation.sessions=1000000"], "evaluation.sessions"),
        (["experiment.repetitions=100000000000000"], "experiment.repetitions"),
    ):
        res = subprocess.run(
            [str(exe), *args, f"paths.runs={tmp_path}"], cwd=REPO, env=dict(os.environ),
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert res.returncode == 2, res.stderr[-3000:]
        lines = res.stderr.strip().splitlines()
        assert lines[0].startswith(f"groupbias: error: {key}: ") and "Traceback" not in res.stderr
        assert len(lines) == 2 and lines[1].startswith("groupbias: hint: ")
        assert not list(tmp_path.iterdir())


def test_simulated_queries_and_policy_samples():
    _refused(
        ["experiment=theory", "experiment.n_queries=1000000000000"],
        "experiment.n_queries",
        "20,000,000,000,000 simulated items",
    )
    _refused(
        ["evaluation=policy", "evaluation.samples=100000000000000"],
        "evaluation.samples",
        "would take at least",
    )
    (msg,) = _warned(["evaluation=policy", "evaluation.samples=1000000000000"])
    assert msg.startswith("evaluation.samples=1000000000000: one query's sampling would take")
    (msg,) = _warned(["evaluation=policy", "evaluation.epochs=100000000"])
    assert msg.startswith("evaluation.epochs=100000000: one query's learner")
    for evaluation in ("policy", "paper_code", "paper_code_ppg"):
        assert _warned([f"evaluation={evaluation}"]) == []
    assert _warned(["experiment=theory"]) == []
