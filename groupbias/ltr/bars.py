"""Lightning's progress bar of a ranker, and the report of training to the command's progress.

Where the ``groupbias`` command draws its bar of steps on the terminal's first line
(:func:`groupbias.core.progress.under_outer_bar`), a ranker's training bar takes the line
below it (and its validation bar the next one), and both vanish when done, instead of
Lightning's default bar drawn over the run's; elsewhere the bar is Lightning's own layout.
Either way it is drawn for :func:`groupbias.core.progress.screen_shape` (Lightning's bar
draws nothing on a terminal that reports no size).

:class:`TrainingReport` tells the command's listener
(:func:`groupbias.core.progress.training_listener`) when a ranker starts and ends, each epoch
with its measured seconds and each batch: the run's time-left estimate and its lines in a
pipe or log come from these measurements (:mod:`groupbias.app.eta`)."""

from __future__ import annotations

import sys
import time

from pytorch_lightning.callbacks import Callback, EarlyStopping, TQDMProgressBar
from pytorch_lightning.callbacks.progress.tqdm_progress import Tqdm

from ..core.progress import sized_bar, training_listener, under_outer_bar

__all__ = ["BarUnderRunBar", "TrainingReport", "progress_callbacks"]


class BarUnderRunBar(TQDMProgressBar):
    """Lightning's tqdm bars drawn for the terminal's size; ``under``: one and two lines
    under the run's bar, not left behind."""

    def __init__(self, under: bool = True) -> None:
        super().__init__()
        self.under = under

    def _bar(self, desc: str, position: int, leave: bool = False, **extra) -> Tqdm:
        return sized_bar(
            Tqdm,
            desc=desc,
            position=position + self.under,
            disable=self.is_disabled,
            leave=leave and not self.under,
            file=sys.stdout,
            bar_format=self.BAR_FORMAT,
            **extra,
        )

    def init_sanity_tqdm(self) -> Tqdm:
        return self._bar(self.sanity_check_description, 0)

    def init_train_tqdm(self) -> Tqdm:
        return self._bar(self.train_description, 0, leave=True, smoothing=0)

    def init_validation_tqdm(self) -> Tqdm:
        return self._bar(self.validation_description, 1)


class TrainingReport(Callback):
    """Reports one ranker's training to ``listener`` (module docstring): its start (epoch,
    max_epochs, batches per epoch, early stopping or not), each training batch, each
    validation batch (``tick``), each epoch's seconds (training and validation) and its end
    (epochs, seconds from fit start to end)."""

    def __init__(self, listener) -> None:
        self.listener = listener
        self._fit_start = self._epoch_start = 0.0

    def on_fit_start(self, trainer, pl_module) -> None:
        self._fit_start = time.perf_counter()

    def on_train_start(self, trainer, pl_module) -> None:
        batches = trainer.num_training_batches
        self.listener.ranker_started(
            epoch=int(trainer.current_epoch),
            max_epochs=int(trainer.max_epochs),
            batches=int(batches) if batches != float("inf") else None,
            early_stopping=any(isinstance(c, EarlyStopping) for c in trainer.callbacks),
        )

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self._epoch_start = time.perf_counter()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.listener.batch_done(int(trainer.current_epoch), batch_idx + 1)

    def on_validation_batch_end(self, trainer, *args, **kwargs) -> None:
        if not trainer.sanity_checking:
            self.listener.tick()

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        seconds = time.perf_counter() - self._epoch_start
        self.listener.epoch_done(int(trainer.current_epoch) + 1, seconds)

    def on_fit_end(self, trainer, pl_module) -> None:
        seconds = time.perf_counter() - self._fit_start
        self.listener.ranker_done(int(trainer.current_epoch), seconds)


def progress_callbacks(enabled: bool) -> list:
    """The progress callbacks of a training run: the bar (:class:`BarUnderRunBar`, under the
    run's bar where one is shown) when ``enabled``, and :class:`TrainingReport` while a
    listener hears of training."""
    out: list = [BarUnderRunBar(under_outer_bar())] if enabled else []
    listener = training_listener()
    if listener is not None:
        out.append(TrainingReport(listener))
    return out
