"""The time left from the run's measured cost (groupbias.app.eta): the calibrated model's
epoch time until an epoch is measured, then measured epochs, rankers' time outside their
epochs and steps' time outside training, over every planned ranker and step to come; the
numbers below are worked by hand from the module docstring's sum."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from groupbias.app.eta import RunEstimate
from groupbias.app.progress import StepProgress
from groupbias.core.errors import GroupBiasWarning

#: 3 rankers × (4 epochs × 1 s + the model's 0.5 s outside epochs)
COST = SimpleNamespace(seconds=13.5, rankers=3, epochs=4)


class Clock:
    """A clock the test sets (``t`` seconds)."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def _ranker(e, clock, start, epochs, epoch_s, fit_s):
    """A ranker whose fit starts at ``start`` and takes ``fit_s`` seconds, ``epochs`` of
    ``epoch_s`` seconds in it."""
    clock.t = start
    e.ranker_started(epoch=0, max_epochs=4, batches=10, early_stopping=True)
    for n in range(1, epochs + 1):
        e.epoch_done(n, epoch_s)
    clock.t = start + fit_s
    e.ranker_done(epochs, fit_s)


def test_from_the_calibrated_model_to_measured_epochs_rankers_and_steps():
    clock = Clock()
    e = RunEstimate([0, 1, 2], clock=clock)  # a plain step, a step of one ranker, one of two
    assert e.left(3) is None and e.basis is None  # nothing to go by
    e.step_start()
    clock.t = 2.0
    e.step_end(2.0)
    e.expect(COST)
    # calibrated: each ranker 4 epochs × 1 s + 0.5 s
    assert e.basis == "calibrated" and e.left(3) == pytest.approx(3 * 4.5)
    e.step_start()  # at 2 s
    clock.t = 3.0
    e.ranker_started(epoch=0, max_epochs=4, batches=10, early_stopping=True)
    e.epoch_done(1, 2.0)
    e.batch_done(1, 5)  # half of epoch 2
    # measured: 2.5 epochs of 2 s left, then 2 rankers of 4 epochs (none finished yet)
    assert e.basis == "measured" and e.left(3) == pytest.approx(2.5 * 2.0 + 2 * (8 + 0.5))
    e.epoch_done(2, 2.0)
    clock.t = 7.5
    e.ranker_done(2, 5.0)  # fit from 2.5 s: 0.5 s before it; 1 s outside its epochs
    clock.t = 8.5
    e.step_end(6.5)  # 1 s after it
    assert e.rankers_done == 1
    # 0.5 s before the step's rankers, each 2 epochs (early stopping) × 2 s + 1 s + 1 s
    assert e.left(3) == pytest.approx(0.5 + 2 * 6.0)
    e.step_start()  # at 8.5 s
    _ranker(e, clock, 9.5, 3, 2.0, 7.0)
    # between the rankers: 1 s after this one, then one of E = 2.5 epochs × 2 s + 1 s + 1 s
    assert e.left(3) == pytest.approx(1 + 2.5 * 2 + 1 + 1)
    clock.t += 0.4
    assert e.left(3) == pytest.approx(0.6 + 2.5 * 2 + 1 + 1)
    _ranker(e, clock, 20.0, 2, 2.0, 5.0)
    e.step_end(7.0)
    assert e.left(3) == 0.0  # the last planned step is done


def test_another_dataset_rescales_the_measured_epoch_time():
    clock = Clock()
    e = RunEstimate([1, 1], clock=clock)
    e.expect(COST)
    e.step_start()
    _ranker(e, clock, 0.0, 4, 3.0, 12.5)  # 3 s an epoch where the model said 1 s
    e.step_end(12.5)
    e.expect(SimpleNamespace(seconds=2 * (4 * 10.0 + 0.5), rankers=2, epochs=4))
    assert e.left(2) == pytest.approx(4 * 30.0 + 0.5)  # 10 s modelled: 30 s expected


def test_skipped_steps_leave_the_plan_and_plain_runs_use_the_mean_step():
    e = RunEstimate([1, 2, 1, 2])
    e.skip_steps(2)
    assert e.plan == [1, 2] and e.rankers_total() == 3
    plain = RunEstimate()
    plain.step_end(4.0)
    plain.step_end(None)  # reused: takes no time, not in the mean
    assert plain.left(5) == pytest.approx(3 * 4.0)


def test_lines_say_which_estimate_and_the_warning_fires_once_when_it_passes(capsys):
    p = StepProgress(3, rankers=[1, 1, 1], warn_after_s=10.0)
    p.start()
    p.expect(COST)
    p.running("a", say=False)
    p.ranker_started(epoch=0, max_epochs=4, batches=2, early_stopping=False)
    # 4 epochs of 1 s, then 2 rankers of 4.5 s
    line = "step 1/3 a: ranker 1/3, epoch 1/4; roughly 13 s left, estimated from data size"
    assert p.training_line() == line
    with pytest.warns(GroupBiasWarning, match=r"about \d+ s in all \(\d+ s left, measured"):
        p.epoch_done(1, 3.0)  # 3 more epochs and 2 rankers of 4: 30 s
    p.epoch_done(2, 3.0)  # no second warning (pytest would fail on it below)
    p.ranker_done(2, 6.0)
    p.finished("a", 6.0, short=True)
    p.close()
    out = capsys.readouterr().out
    assert re.search(r"step 1/3 a: 6.0 s; about \d+ s left\n", out)
    assert p.warned


def test_with_early_stopping_the_first_ranker_gives_an_upper_estimate():
    p = StepProgress(2, rankers=[1, 1])
    p.running("a", say=False)
    p.ranker_started(epoch=0, max_epochs=4, batches=2, early_stopping=True)
    p.epoch_done(1, 1.0)  # 3 more epochs, then one ranker of 4: at most
    assert p.training_line() == "step 1/2 a: ranker 1/2, epoch 2/4; up to 7 s left"
    p.ranker_done(2, 2.0)  # stopped after 2 epochs: the next one is expected to do as many
    # 2 epochs of 1 s and the 1 s outside them; this step's end and the next one's, each
    # taken as a ranker's time outside its epochs (1 s) until one is measured
    assert not p.estimate.upper and p.training_line().endswith("; about 5 s left")
