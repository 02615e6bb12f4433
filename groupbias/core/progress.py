"""Whether a whole-run progress bar is on the terminal: the command's bar of steps
(:mod:`groupbias.app.progress`) says so for the duration of a run, and a stage that draws its
own bar (Lightning's, in :mod:`groupbias.ltr.train`) draws it one line below instead of over
it. A context variable, set and reset by :func:`outer_bar`: nothing process-wide changes."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

__all__ = ["outer_bar", "under_outer_bar", "rough_duration"]

_SHOWN: contextvars.ContextVar[bool] = contextvars.ContextVar("groupbias_outer_bar", default=False)


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
