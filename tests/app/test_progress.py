"""The step lines of a run: ``step n/total``, reused steps done at once, a rough time left,
fewer planned steps when a dataset is missing; the lines also go to the log (cli.log)."""

from __future__ import annotations

import logging
import os
import re

import pytest

from groupbias.app import runs
from groupbias.app.progress import StepProgress
from groupbias.core.progress import rough_duration, under_outer_bar


def test_steps_say_n_of_total_reused_and_time_left(tmp_path, capsys, caplog):
    run_dir = runs.RunDir(tmp_path / "r", {"a": 1}, progress=StepProgress(4))
    run_dir.start()
    run_dir.step("s1", lambda: {"v": 1}, label="first")
    run_dir.step("s1", lambda: {"v": 1}, label="first")  # reused
    with caplog.at_level(logging.INFO, logger="groupbias"):
        run_dir.step("s2", lambda: {"v": 2})
    run_dir.skip_steps(1)  # one planned step will not run
    lines = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"\[groupbias\] step 1/4 first: \d+\.\d s; about \d+ s left", lines[0])
    assert lines[1] == "[groupbias] step 2/4 first: reused"
    assert lines[2] == "[groupbias] step 3/4 s2: running"
    assert re.fullmatch(r"\[groupbias\] step 3/4 s2: done in \d+\.\d s; about \d+ s left", lines[3])
    assert run_dir.progress.total == 3 and run_dir.progress.left() == 0.0
    # the same lines in the log, which Hydra writes to the run's cli.log
    assert [r.getMessage() for r in caplog.records] == [s[len("[groupbias] ") :] for s in lines[2:]]


def test_time_left_is_the_mean_computed_step_times_the_steps_to_come(capsys):
    p = StepProgress(5)
    assert p.left() is None  # nothing computed yet
    p.reused("a")
    p.finished("b", 10.0)
    p.finished("c", 20.0)
    assert p.left() == pytest.approx(15.0 * 2)
    assert "step 3/5 c: done in 20.0 s; about 30 s left" in capsys.readouterr().out
    assert StepProgress().left() is None  # no total: no estimate
    assert rough_duration(40) == "40 s" and rough_duration(1500) == "25 min"
    assert rough_duration(9000) == "2.5 h"


def test_no_lines_in_a_worker_of_a_distributed_run(capsys, monkeypatch):
    monkeypatch.setenv("LOCAL_RANK", "1")
    p = StepProgress(2, bar=True)
    p.start()
    p.finished("a", 1.0)
    p.close()
    assert capsys.readouterr().out == "" and p._tqdm is None


def test_the_bar_marks_its_lines_and_takes_them_back(capsys, monkeypatch):
    """With the bar, Lightning's bars are told to sit under it (a context variable, reset
    when the bar closes); the step lines are still written."""
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    with StepProgress(2, title="demo", bar=True) as p:
        assert not under_outer_bar()
        p.start()
        assert under_outer_bar()
        p.finished("a", 1.0)
    assert not under_outer_bar()
    out = capsys.readouterr()
    assert "[groupbias] step 1/2 a: done in 1.0 s" in out.out + out.err
    assert os.environ.get("LOCAL_RANK") is None
