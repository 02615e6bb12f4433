"""The time left of a run, from its own measured cost.

A run's plan is its count of steps and, where the experiment says so
(``planned_rankers(setup)``: the rankers each planned step trains, in order), the rankers of
each. The training loop reports every ranker's start, epochs (with their measured seconds)
and end (:class:`groupbias.ltr.bars.TrainingReport`); every step reports its wall time. The
time left is then the sum over what is still to come::

    current ranker:  epochs left × t_epoch  (the share of the current epoch done taken off)
    each ranker to come:  o + E × t_epoch + c
    the end of a step with rankers:  o_end
    each step with rankers to come:  s + its rankers (the first without o) + o_end
    each step without rankers to come:  the mean measured time of such steps

``t_epoch``: the mean measured seconds of the latest epochs (training and validation; the
latest :data:`RECENT_EPOCHS`, since the speed of a shared machine drifts), rescaled by the
calibrated model (:func:`groupbias.ltr.training_time.training_cost`) when another dataset's rankers
come next; ``E``: the mean epochs of the rankers finished so far where early stopping can
end a ranker sooner, else ``max_epochs``; ``c``: a ranker's measured time outside its epochs
(Lightning's start, sanity check, checkpoints); ``o``: the measured time from a ranker's fit
to the next one's (its prediction and evaluation, the next trainer's setup); ``o_end``: from
a step's last fit to the step's end; ``s``: a step's measured time before its first ranker
(labels, estimate, assumption check); ``c``, ``o``, ``o_end``, ``s`` and the steps' times
are the means of the latest :data:`RECENT` measured (the times between are taken off as
they pass; ``o`` and ``o_end`` stand in for each other, and ``c`` for both, until
measured: a ranker's prediction and the next trainer's setup cost what its own start and
end do, far less than the step's labels and estimate ``s``, which made the first ranker's
estimate 1.2–1.4× the time left on the demo). Before the first epoch is measured the same
sum is taken with the calibrated model's epoch time and ``E = max_epochs`` (an upper
estimate, stated as such: :attr:`RunEstimate.basis` is ``"calibrated"``). Without a plan of
rankers (experiments that do not count them ahead) the time left is the mean measured step
time times the steps to come.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

__all__ = ["RankerClock", "RunEstimate", "RECENT", "RECENT_EPOCHS"]

#: the measured rankers' and steps' times the estimate takes (the latest): a run on a shared
#: machine speeds up and slows down with the other jobs, and its first ranker carries the
#: warm-up (imports, first allocations)
RECENT = 3
#: the measured epochs the epoch time is the mean of (the latest)
RECENT_EPOCHS = 8


@dataclass
class RankerClock:
    """The ranker in training: its epochs done, the batches of its current epoch, when it
    started."""

    max_epochs: int
    early_stopping: bool
    batches: int | None
    epochs: int = 0
    batch: int = 0
    trained: float = 0.0  # seconds of its epochs measured in this process
    started: float = field(default_factory=time.perf_counter)

    def epoch_share(self) -> float:
        """The share of the current epoch's training batches done."""
        if not self.batches:
            return 0.0
        return min(self.batch / self.batches, 1.0)


class RunEstimate:
    """The measured cost of a run and its time left (module docstring). ``plan``: the
    rankers of each planned step (None: not known)."""

    def __init__(self, plan: list[int] | None = None, *, clock=time.perf_counter) -> None:
        self.plan = list(plan) if plan is not None else None
        self.clock = clock
        self.done = 0  # steps done (computed, reused or skipped)
        self.rankers_done = 0
        self.ranker: RankerClock | None = None
        self.step_started: float | None = None
        self._step_rankers = 0  # rankers trained in the current step
        self._fit_end: float | None = None  # when the step's last ranker ended its fit
        self._epoch_units: list[float] = []  # measured epoch seconds / calibrated epoch seconds
        self._ranker_epochs: list[int] = []
        self._ranker_extra: list[float] = []  # seconds of a ranker outside its epochs
        self._lead: list[float] = []  # seconds of a ranker step before its first fit
        self._gaps: list[float] = []  # seconds between two rankers' fits (evaluation, setup)
        self._tails: list[float] = []  # seconds of a ranker step after its last fit
        self._plain_steps: list[float] = []  # seconds of steps that train no ranker
        self._steps: list[float] = []  # seconds of every computed step
        self._max_epochs: int | None = None  # of the last ranker trained
        self._scale = 1.0  # calibrated seconds of one epoch on the data now trained
        self._calibrated: tuple[float, int, float] | None = None  # epoch s, epochs, extra s

    # -- what the run tells ------------------------------------------------------------
    def expect(self, cost) -> None:
        """The calibrated cost (:class:`groupbias.ltr.training_time.TrainingCost`) of the rankers on
        the data about to be trained: their epoch time before one is measured, and the scale
        of measured epoch times on this data."""
        from ..ltr.training_time import OVERHEAD_S

        per_ranker = cost.seconds / max(cost.rankers, 1) - OVERHEAD_S
        epoch = max(per_ranker / max(cost.epochs, 1), 1e-9)
        self._scale = epoch
        self._calibrated = (epoch, cost.epochs, OVERHEAD_S)

    def step_start(self) -> None:
        self.step_started = self.clock()
        self._step_rankers, self._fit_end = 0, None

    def step_end(self, seconds: float | None) -> None:
        """A step finished (``seconds``: its wall time; None: reused, no time spent)."""
        planned = self._planned(self.done)
        if seconds is not None:
            self._steps.append(seconds)
            if self._step_rankers and self._fit_end is not None:
                self._tails.append(max(self.clock() - self._fit_end, 0.0))
            elif not planned:
                self._plain_steps.append(seconds)
        self.done += 1
        if self.plan is not None:
            self.rankers_done = sum(self.plan[: self.done])
        self.step_started, self.ranker = None, None
        self._step_rankers, self._fit_end = 0, None

    def skip_steps(self, n: int) -> None:
        """The next ``n`` planned steps will not run."""
        if self.plan is not None:
            del self.plan[self.done : self.done + n]

    def ranker_started(self, *, epoch: int, max_epochs: int, batches, early_stopping: bool):
        self.ranker = RankerClock(max_epochs, early_stopping, batches, epochs=epoch)
        self._max_epochs = max_epochs

    def batch_done(self, epoch: int, batch: int) -> None:
        if self.ranker is not None:
            self.ranker.batch = batch

    def epoch_done(self, epoch: int, seconds: float) -> None:
        self._epoch_units.append(seconds / self._scale)
        if self.ranker is not None:
            self.ranker.epochs, self.ranker.batch = epoch, 0
            self.ranker.trained += seconds

    def ranker_done(self, epochs: int, seconds: float) -> None:
        r = self.ranker
        if r is not None:
            self._ranker_extra.append(max(seconds - r.trained, 0.0))
            self._ranker_epochs.append(max(r.epochs, epochs))
        now = self.clock()
        if self._fit_end is not None:
            self._gaps.append(max(now - seconds - self._fit_end, 0.0))
        elif self.step_started is not None:
            self._lead.append(max(now - seconds - self.step_started, 0.0))
        self._fit_end = now
        self._step_rankers += 1
        self.rankers_done += 1
        self.ranker = None

    # -- what it estimates -------------------------------------------------------------
    @property
    def basis(self) -> str | None:
        """``"measured"`` (epochs or steps timed in this run), ``"calibrated"`` (the model of
        :mod:`groupbias.ltr.training_time` only) or None (nothing to go by)."""
        if self._epoch_units or (self._steps and not self._trains()):
            return "measured"
        if self._calibrated is not None and self._trains():
            return "calibrated"
        return "measured" if self._steps else None

    @property
    def upper(self) -> bool:
        """True while the estimate is an upper one: early stopping can end the ranker in
        training sooner, and no ranker has finished to tell how many epochs they take."""
        r = self.ranker
        return r is not None and r.early_stopping and not self._ranker_epochs

    def rankers_total(self) -> int | None:
        return sum(self.plan) if self.plan is not None else None

    def left(self, total_steps: int | None) -> float | None:
        """Seconds left (module docstring); None when nothing tells."""
        if total_steps is None:
            return None
        if not self._trains():
            if not self._steps:
                return None
            return sum(self._steps) / len(self._steps) * max(total_steps - self.done, 0)
        if self.basis is None:
            return None
        if self.done >= total_steps:
            return 0.0
        return self._current_step_left() + sum(
            self._step_cost(k) for k in self._planned_after(self.done + 1)
        )

    def _trains(self) -> bool:
        return self.plan is not None and any(self.plan)

    def _planned(self, i: int) -> int:
        return self.plan[i] if self.plan is not None and i < len(self.plan) else 0

    def _planned_after(self, i: int) -> list[int]:
        return self.plan[i:] if self.plan is not None else []

    def _epoch_s(self) -> float:
        if self._epoch_units:
            recent = self._epoch_units[-RECENT_EPOCHS:]
            return sum(recent) / len(recent) * self._scale
        return self._calibrated[0] if self._calibrated is not None else 0.0

    def _epochs(self, max_epochs: int | None = None, early_stopping: bool = True) -> float:
        """``E`` (module docstring) for a ranker of ``max_epochs`` (None: as the last one
        trained, else the calibrated model's)."""
        top = max_epochs or self._max_epochs or (self._calibrated[1] if self._calibrated else 1)
        if early_stopping and self._ranker_epochs:
            return min(sum(self._ranker_epochs) / len(self._ranker_epochs), top)
        return float(top)

    def _mean(self, values: list[float], default: float) -> float:
        """The mean of the last :data:`RECENT` ``values`` (``default`` when none)."""
        values = values[-RECENT:]
        return sum(values) / len(values) if values else default

    def _fit_cost(self) -> float:
        """A ranker's expected fit: its epochs and its time outside them."""
        extra = self._mean(self._ranker_extra, self._calibrated[2] if self._calibrated else 0.0)
        r = self.ranker
        epochs = self._epochs(r.max_epochs, r.early_stopping) if r else self._epochs()
        return epochs * self._epoch_s() + extra

    def _rankers_cost(self, m: int) -> float:
        """``m`` rankers still to start in the current or a future step, then its end."""
        gap, tail = self._gap(), self._mean(self._tails, self._gap())
        return m * self._fit_cost() + max(m - 1, 0) * gap + tail

    def _gap(self) -> float:
        """``o`` (module docstring); until one is measured ``o_end``, or else ``c`` (a
        trainer's start and end: of the same order)."""
        return self._mean(self._gaps, self._mean(self._tails, self._mean(self._ranker_extra, 0.0)))

    def _step_cost(self, rankers: int) -> float:
        if rankers:
            return self._mean(self._lead, 0.0) + self._rankers_cost(rankers)
        return self._mean(self._plain_steps, 0.0)

    def _current_step_left(self) -> float:
        k = self._planned(self.done)
        now = self.clock()
        started = self.step_started if self.step_started is not None else now
        if not k:
            return max(self._mean(self._plain_steps, 0.0) - (now - started), 0.0)
        r, trained = self.ranker, self._step_rankers
        gap = self._gap()
        if r is not None:  # in training: its epochs left, then the step's other rankers
            expected = min(r.max_epochs, max(self._epochs(r.max_epochs, r.early_stopping),
                                             r.epochs + 1))  # fmt: skip
            left = max(expected - r.epochs - r.epoch_share(), 0.0) * self._epoch_s()
            m = max(k - trained - 1, 0)
            return left + (gap if m else 0.0) + self._rankers_cost(m)
        if trained:  # between rankers: the last one's evaluation, the next one's setup
            since = now - (self._fit_end if self._fit_end is not None else now)
            m = max(k - trained, 0)
            if not m:
                return max(self._mean(self._tails, gap) - since, 0.0)
            return max(gap - since, 0.0) + self._rankers_cost(m)
        lead = max(self._mean(self._lead, 0.0) - (now - started), 0.0)
        return lead + self._rankers_cost(k)
