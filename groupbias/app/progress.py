"""How far a run is: one line per step with ``n/total`` and the time left, a line at least
every 30 s while a ranker trains, and on a terminal one live bar over the whole run.

Every step of a run (:meth:`groupbias.app.runs.RunDir.step`) reports here, and so does the
training loop (:func:`groupbias.core.progress.training_watched`, for the duration of the
run). The lines are the same wherever the output goes (a terminal, a pipe, a file) and also
go to the run's ``cli.log``::

    [groupbias] step 3/7 plain: running
    [groupbias] step 3/7 plain: done in 12.1 s; about 40 s left
    [groupbias] step 4/7 LTR, β = 0.8 (6 rankers): ranker 9/15, epoch 3/5; about 35 s left
    [groupbias] step 4/7 LTR, β = 0.8 (6 rankers): 20.3 s; about 30 s left
    [groupbias] step 5/7 tabular, β = 0.6: reused

(a step without a label says when it starts; a labeled one, shorter, only when it is done;
while a ranker trains a line with the step, the ranker, its epoch and the time left comes at
least every ``every_s`` seconds, 30 by default: in a pipe or log, where no bar is drawn).

``total`` is the experiment's count of steps, given before the first one runs
(``planned_steps(setup)`` of an experiment object; without it the lines read ``step 3``).
The time left is extrapolated from the run's own measured epoch, ranker and step times over
every ranker and step still to come (:mod:`groupbias.app.eta`); before the first epoch is
measured it is the calibrated model's (:mod:`groupbias.ltr.training_time`), and the lines say so:
``roughly 3 min left`` (``about`` once measured), and ``..., estimated from data size`` in
the training lines. Where standard output is a terminal (and the run's ``progress`` is
true) a tqdm bar of the steps, with the ranker, its epoch and the time left, stays below the
lines, and Lightning's bar of the current ranker is drawn under it
(:func:`groupbias.core.progress.outer_bar`). When the run's estimated time (elapsed and
left) passes ``warn_after_s``, one warning says so (once per run).
"""

from __future__ import annotations

import logging
import sys
import time
import warnings
from contextlib import ExitStack

from ..core.errors import GroupBiasWarning
from ..core.io import writes_files
from ..core.progress import outer_bar, rough_duration, sized_bar, training_watched
from .eta import RunEstimate

__all__ = ["StepProgress"]

log = logging.getLogger("groupbias")


class StepProgress:
    """The progress of one run's steps (module docstring). ``total``: the steps planned (None:
    unknown); ``rankers``: the rankers of each planned step (None: not known); ``title``: the
    bar's name; ``bar``: draw the live bar (on a terminal); ``warn_after_s``: the run's
    long-run warning threshold (None: never); ``every_s``: seconds between the lines while a
    ranker trains (without a bar)."""

    def __init__(
        self,
        total: int | None = None,
        *,
        rankers: list[int] | None = None,
        title: str = "",
        bar: bool = False,
        warn_after_s: float | None = None,
        every_s: float = 30.0,
    ) -> None:
        self.total = total
        self.title = title
        self.bar = bar and writes_files()
        self.warn_after_s = warn_after_s
        self.every_s = every_s
        self.estimate = RunEstimate(rankers)
        #: the long-run warning was given (by this or by the calibrated estimate)
        self.warned = False
        #: ``(perf_counter time, event, seconds left, basis)`` at every step's and ranker's
        #: end (event ``step`` / ``ranker``): what ``benchmarks/eta_accuracy.py`` checks
        self.history: list[tuple[float, str, float | None, str | None]] = []
        self._label = ""
        self._started = time.perf_counter()
        self._last_line = self._last_draw = self._started
        self._tqdm = None
        self._stack = ExitStack()

    @property
    def done(self) -> int:
        return self.estimate.done

    def __enter__(self) -> StepProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        """The run's first step is about to start: hear of training, draw the bar (when
        asked for)."""
        self._started = self._last_line = time.perf_counter()
        self._stack.enter_context(training_watched(self))
        if not self.bar or self._tqdm is not None:
            return
        from tqdm import tqdm

        self._tqdm = sized_bar(
            tqdm,
            total=self.total,
            desc=f"groupbias {self.title}".strip(),
            unit="step",
            file=sys.stdout,
            leave=False,
            position=0,
            bar_format="{desc}: {n_fmt}/{total_fmt} steps |{bar}| {elapsed}{postfix}",
        )
        self._stack.enter_context(outer_bar())

    def close(self) -> None:
        """Take the bar away (the run ended, was interrupted or failed)."""
        if self._tqdm is not None:
            self._tqdm.close()
            self._tqdm = None
        self._stack.close()

    def skip_steps(self, n: int) -> None:
        """``n`` planned steps will not run (their dataset is missing, say)."""
        self.estimate.skip_steps(n)
        if self.total is not None:
            self.total = max(self.done, self.total - n)
            if self._tqdm is not None:
                self._tqdm.total = self.total
                self._tqdm.refresh()

    def expect(self, cost) -> None:
        """The calibrated cost of the rankers about to train
        (:class:`groupbias.ltr.training_time.TrainingCost`): the estimate until epochs are
        measured."""
        self.estimate.expect(cost)

    def left(self) -> float | None:
        """Seconds left (None when unknown: no total, or nothing to go by yet)."""
        return self.estimate.left(self.total)

    def _where(self, n: int) -> str:
        return f"step {n}/{self.total}" if self.total is not None else f"step {n}"

    def _left_text(self, form: str = "line") -> str:
        """``about 3 min left`` (measured; ``up to`` while an upper estimate) or ``roughly
        3 min left`` (the calibrated model; ``form="training"``: ``roughly 3 min left,
        estimated from data size``; ``form="bar"``: ``~3 min left (rough)``); empty if
        unknown."""
        left = self.left()
        if not left:
            return ""
        calibrated = self.estimate.basis == "calibrated"
        if form == "bar":
            near = "≤" if self.estimate.upper else "~"
            return f"{near}{rough_duration(left)} left" + " (rough)" * calibrated
        if not calibrated:
            return f"{self._about()} {rough_duration(left)} left"
        tail = ", estimated from data size" if form == "training" else ""
        return f"roughly {rough_duration(left)} left{tail}"

    def _about(self) -> str:
        """``about``; ``up to`` while early stopping can end the rankers sooner than the
        estimate's ``max_epochs`` (no ranker finished yet)."""
        return "up to" if self.estimate.upper else "about"

    def running(self, label: str, *, say: bool = True) -> None:
        """A step starts (``say``: a long one, which says so)."""
        self._label = label
        self.estimate.step_start()
        if say:
            self._say(f"{self._where(self.done + 1)} {label}: running")

    def reused(self, label: str, how: str = "reused") -> None:
        """A step was loaded from an earlier run: done at once."""
        self.estimate.step_end(None)
        self._say(f"{self._where(self.done)} {label}: {how}")

    def _note(self, event: str) -> None:
        self.history.append((time.perf_counter(), event, self.left(), self.estimate.basis))

    def finished(self, label: str, seconds: float, *, short: bool = False) -> None:
        """A step was computed in ``seconds`` (``short``: a labeled step's shorter line)."""
        self.estimate.step_end(seconds)
        self._note("step")
        left = self._left_text()
        tail = f"; {left}" if left else ""
        self._postfix()
        took = f"{seconds:.1f} s" if short else f"done in {seconds:.1f} s"
        self._say(f"{self._where(self.done)} {label}: {took}{tail}")
        self._check_long()

    # -- the training loop's reports (groupbias.ltr.bars.TrainingReport) ------------------
    def ranker_started(self, **ranker) -> None:
        self.estimate.ranker_started(**ranker)
        self._heartbeat(force_draw=True)

    def batch_done(self, epoch: int, batch: int) -> None:
        self.estimate.batch_done(epoch, batch)
        self._heartbeat()

    def tick(self) -> None:
        self._heartbeat()

    def epoch_done(self, epoch: int, seconds: float) -> None:
        self.estimate.epoch_done(epoch, seconds)
        self._heartbeat(force_draw=True)
        self._check_long()

    def ranker_done(self, epochs: int, seconds: float) -> None:
        self.estimate.ranker_done(epochs, seconds)
        self._note("ranker")
        self._heartbeat(force_draw=True)

    def _training(self) -> str:
        """``ranker 9/15, epoch 3/5`` (the ranker in training)."""
        est = self.estimate
        total = est.rankers_total()
        n = est.rankers_done + (est.ranker is not None)
        text = f"ranker {n}/{total}" if total else f"ranker {n}"
        if est.ranker is not None:
            epoch = min(est.ranker.epochs + 1, est.ranker.max_epochs)
            text += f", epoch {epoch}/{est.ranker.max_epochs}"
        return text

    def training_line(self) -> str:
        """``step 4/7 <label>: ranker 9/15, epoch 3/5; about 35 s left``."""
        left = self._left_text("training")
        return f"{self._where(self.done + 1)} {self._label}: {self._training()}" + (
            f"; {left}" if left else ""
        )

    def _postfix(self) -> str:
        """The bar's text after the time: ranker, epoch, time left (redrawn by the caller)."""
        parts = [self._training()] if self.estimate.ranker else []
        text = ", ".join([*parts, self._left_text("bar")]).strip(", ")
        if self._tqdm is not None:
            self._tqdm.n = self.done
            self._tqdm.set_postfix_str(text, refresh=False)
        return text

    def _heartbeat(self, force_draw: bool = False) -> None:
        """While training: redraw the bar (at most twice a second), or with no bar say a
        line every ``every_s`` seconds (always into the log)."""
        if not writes_files():
            return
        now = time.perf_counter()
        if self._tqdm is not None and (force_draw or now - self._last_draw >= 0.5):
            self._postfix()
            self._tqdm.refresh()
            self._last_draw = now
        if now - self._last_line >= self.every_s:
            line = self.training_line()
            self._last_line = now
            if self._tqdm is not None:
                log.info(line)
            else:
                self._say(line)

    def _check_long(self) -> None:
        """Warn once when the measured estimate of the whole run passes ``warn_after_s``."""
        if self.warned or self.warn_after_s is None or self.estimate.basis != "measured":
            return
        left = self.left()
        if left is None:
            return
        spent = time.perf_counter() - self._started
        if spent + left > self.warn_after_s:
            self.warned = True
            warnings.warn(
                f"this run is estimated to take {self._about()} {rough_duration(spent + left)} "
                "in all "
                f"({rough_duration(left)} left, measured on its own steps and epochs). "
                "This warning shows above warn_after_s seconds",
                GroupBiasWarning,
                stacklevel=2,
            )

    def _say(self, line: str) -> None:
        """``line`` in the run's ``cli.log`` and on standard output (above the bar)."""
        if not writes_files():  # a worker of a distributed run: rank 0 reports
            return
        self._last_line = time.perf_counter()
        log.info(line)
        text = f"[groupbias] {line}"
        if self._tqdm is None:
            print(text, flush=True)
            return
        self._tqdm.n = self.done
        self._tqdm.write(text, file=sys.stdout)  # redraws the bar below the line
