"""How far a run is: one line per step with ``n/total`` and a rough time left, and on a
terminal one live bar over the whole run.

Every step of a run (:meth:`groupbias.app.runs.RunDir.step`) reports here. The lines are the
same wherever the output goes (a terminal, a pipe, a file) and also go to the run's
``cli.log``::

    [groupbias] step 3/7 plain: running
    [groupbias] step 3/7 plain: done in 12.1 s; about 40 s left
    [groupbias] step 4/7 LTR, β = 0.8 (6 rankers): 20.3 s; about 30 s left
    [groupbias] step 5/7 tabular, β = 0.6: reused

(a step without a label says when it starts; a labeled one, shorter, only when it is done).

``total`` is the experiment's count of steps, given before the first one runs
(``planned_steps(setup)`` of an experiment object; without it the lines read ``step 3``). The
time left is the mean time of the steps computed so far times the steps still to come: rough
(steps differ in size; reused steps take no time and are not counted in the mean). Where
standard output is a terminal (and the run's ``progress`` is true) a tqdm bar of the steps
stays below the lines, and Lightning's bar of the current ranker is drawn under it
(:func:`groupbias.core.progress.outer_bar`).
"""

from __future__ import annotations

import logging
import sys
from contextlib import ExitStack

from ..core.io import writes_files
from ..core.progress import outer_bar, rough_duration

__all__ = ["StepProgress"]

log = logging.getLogger("groupbias")


class StepProgress:
    """The progress of one run's steps (module docstring). ``total``: the steps planned (None:
    unknown); ``title``: the bar's name; ``bar``: draw the live bar (on a terminal)."""

    def __init__(self, total: int | None = None, *, title: str = "", bar: bool = False) -> None:
        self.total = total
        self.title = title
        self.bar = bar and writes_files()
        self.done = 0
        self._computed: list[float] = []
        self._tqdm = None
        self._stack = ExitStack()

    def __enter__(self) -> StepProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        """Draw the bar (when asked for): the run's first step is about to start."""
        if not self.bar or self._tqdm is not None:
            return
        from tqdm import tqdm

        self._tqdm = tqdm(
            total=self.total,
            desc=f"groupbias {self.title}".strip(),
            unit="step",
            file=sys.stdout,
            leave=False,
            dynamic_ncols=True,
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

    def forgo(self, n: int) -> None:
        """``n`` planned steps will not run (their dataset is missing, say)."""
        if self.total is not None:
            self.total = max(self.done, self.total - n)
            if self._tqdm is not None:
                self._tqdm.total = self.total
                self._tqdm.refresh()

    def left(self) -> float | None:
        """Rough seconds left: the mean computed step times the steps to come (None when
        unknown: no total, or no step computed yet)."""
        if self.total is None or not self._computed:
            return None
        return sum(self._computed) / len(self._computed) * max(self.total - self.done, 0)

    def _where(self, n: int) -> str:
        return f"step {n}/{self.total}" if self.total is not None else f"step {n}"

    def running(self, label: str) -> None:
        """A step that says when it starts (a long one) starts."""
        self._say(f"{self._where(self.done + 1)} {label}: running")

    def reused(self, label: str, how: str = "reused") -> None:
        """A step was loaded from an earlier run: done at once."""
        self.done += 1
        self._say(f"{self._where(self.done)} {label}: {how}")

    def finished(self, label: str, seconds: float, *, short: bool = False) -> None:
        """A step was computed in ``seconds`` (``short``: a labeled step's shorter line)."""
        self.done += 1
        self._computed.append(seconds)
        left = self.left()
        tail = f"; about {rough_duration(left)} left" if left else ""
        if self._tqdm is not None:
            self._tqdm.set_postfix_str(tail[2:], refresh=False)
        took = f"{seconds:.1f} s" if short else f"done in {seconds:.1f} s"
        self._say(f"{self._where(self.done)} {label}: {took}{tail}")

    def _say(self, line: str) -> None:
        """``line`` in the run's ``cli.log`` and on standard output (above the bar)."""
        if not writes_files():  # a worker of a distributed run: rank 0 reports
            return
        log.info(line)
        text = f"[groupbias] {line}"
        if self._tqdm is None:
            print(text, flush=True)
            return
        self._tqdm.n = self.done
        self._tqdm.write(text, file=sys.stdout)  # redraws the bar below the line
