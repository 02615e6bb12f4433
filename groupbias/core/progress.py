"""Whether a whole-run progress bar is on the terminal: the command's bar of steps
(:mod:`groupbias.app.progress`) says so for the duration of a run, and a stage that draws its
own bar (Lightning's, in :mod:`groupbias.ltr.train`) draws it one line below instead of over
it. A context variable, set and reset by :func:`outer_bar`: nothing process-wide changes.

Who hears of training as it goes: :func:`training_watched` names a listener (the command's
step progress) for the duration of a run, and the training loop reports each ranker's start,
epochs, batches and end to :func:`training_listener` (:mod:`groupbias.ltr.bars`), again a
context variable.

:func:`screen_shape` is the terminal size the bars are drawn for: a terminal that reports
no size (0 × 0: a pseudo-terminal nobody sized, as Python's ``pty`` module, ``script`` or
some remote shells make) would otherwise be taken by tqdm for one of -1 rows, where it draws
nothing at all.
"""

from __future__ import annotations

import contextlib
import contextvars
import shutil
from collections.abc import Iterator
from typing import Any

__all__ = [
    "outer_bar",
    "under_outer_bar",
    "rough_duration",
    "screen_shape",
    "sized_bar",
    "training_watched",
    "training_listener",
]

_SHOWN: contextvars.ContextVar[bool] = contextvars.ContextVar("groupbias_outer_bar", default=False)
_LISTENER: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "groupbias_training_listener", default=None
)


@contextlib.contextmanager
def outer_bar(shown: bool = True) -> Iterator[None]:
    """Within the block a whole-run bar is (``shown``) or is not on the terminal."""
    token = _SHOWN.set(shown)
    try:
        yield
    finally:
        _SHOWN.reset(token)


def under_outer_bar() -> bool:
    """True inside :func:`outer_bar`: another bar holds the terminal's first line."""
    return _SHOWN.get()


def rough_duration(seconds: float) -> str:
    """A duration for people, as rough as the estimates it shows: ``40 s``, ``12 min``,
    ``2.5 h``."""
    if seconds < 90:
        return f"{max(seconds, 1):.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def screen_shape(_file: object = None) -> tuple[int, int]:
    """``(columns - 1, rows - 1)`` of the terminal, as tqdm's ``dynamic_ncols`` measures it,
    but a terminal that reports 0 × 0 counts as ``COLUMNS`` × ``LINES`` or 80 × 24
    (:func:`shutil.get_terminal_size`; module docstring)."""
    size = shutil.get_terminal_size()
    return max(size.columns - 1, 10), max(size.lines - 1, 3)


def sized_bar(make, **kwargs):
    """A tqdm bar ``make(**kwargs)`` drawn for :func:`screen_shape` and following the
    terminal's size as it changes (tqdm's own ``dynamic_ncols`` draws nothing on a terminal
    that reports no size)."""
    ncols, nrows = screen_shape()
    bar = make(ncols=ncols, nrows=nrows, dynamic_ncols=False, **kwargs)
    bar.dynamic_ncols = screen_shape  # tqdm calls it at every redraw
    return bar


@contextlib.contextmanager
def training_watched(listener: Any) -> Iterator[None]:
    """Within the block training reports to ``listener`` (module docstring)."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


def training_listener() -> Any:
    """The listener of :func:`training_watched`, or None."""
    return _LISTENER.get()
