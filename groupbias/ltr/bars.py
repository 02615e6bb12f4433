"""Lightning's progress bar of a ranker under the command's bar of the whole run.

Where the ``groupbias`` command draws its bar of steps on the terminal's first line
(:func:`groupbias.core.progress.under_outer_bar`), a ranker's training bar takes the line
below it (and its validation bar the next one), and both vanish when done, instead of
Lightning's default bar drawn over the run's. Elsewhere Lightning's own bar is used."""

from __future__ import annotations

import sys

from pytorch_lightning.callbacks import TQDMProgressBar
from pytorch_lightning.callbacks.progress.tqdm_progress import Tqdm

from ..core.progress import under_outer_bar

__all__ = ["BarUnderRunBar", "progress_callbacks"]


class BarUnderRunBar(TQDMProgressBar):
    """Lightning's tqdm bars one and two lines under the run's bar, not left behind."""

    def _bar(self, desc: str, position: int, **extra) -> Tqdm:
        return Tqdm(
            desc=desc,
            position=position,
            disable=self.is_disabled,
            leave=False,
            dynamic_ncols=True,
            file=sys.stdout,
            bar_format=self.BAR_FORMAT,
            **extra,
        )

    def init_sanity_tqdm(self) -> Tqdm:
        return self._bar(self.sanity_check_description, 1)

    def init_train_tqdm(self) -> Tqdm:
        return self._bar(self.train_description, 1, smoothing=0)

    def init_validation_tqdm(self) -> Tqdm:
        return self._bar(self.validation_description, 2)


def progress_callbacks(enabled: bool) -> list:
    """The bar callback of a training run: :class:`BarUnderRunBar` when the bar is shown
    under the run's bar, else none (Lightning adds its own when ``enabled``)."""
    return [BarUnderRunBar()] if enabled and under_outer_bar() else []
