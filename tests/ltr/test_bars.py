"""Lightning's bar of a ranker goes under the command's bar of the run only while that bar is
on the terminal; elsewhere Lightning's own bar (or none) is used."""

from __future__ import annotations

from groupbias.core.progress import outer_bar
from groupbias.ltr.bars import BarUnderRunBar, progress_callbacks


def test_the_ranker_bar_sits_under_the_run_bar_only_while_it_is_shown():
    assert progress_callbacks(True) == []  # Lightning adds its default bar itself
    with outer_bar():
        (bar,) = progress_callbacks(True)
        assert isinstance(bar, BarUnderRunBar)
        assert progress_callbacks(False) == []  # bars off (progress=false, not a terminal)
    assert progress_callbacks(True) == []  # the context variable is reset
