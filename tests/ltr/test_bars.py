"""Lightning's bar of a ranker goes under the command's bar of the run only while that bar is
on the terminal (elsewhere in Lightning's own layout); both are drawn on a terminal that
reports no size; a listener of training hears each ranker's start, epochs and end from a
real Lightning loop."""

from __future__ import annotations

import os

import numpy as np
from tqdm import tqdm

from groupbias.core.progress import outer_bar, sized_bar, training_watched
from groupbias.data.ranking_data import RankingData
from groupbias.ltr.bars import BarUnderRunBar, TrainingReport, progress_callbacks
from groupbias.ltr.model import ScorerSpec
from groupbias.ltr.train import RankerRecipe, TrainerSpec, train_ranker


def test_the_ranker_bar_sits_under_the_run_bar_only_while_it_is_shown():
    (own,) = progress_callbacks(True)  # Lightning's layout, drawn for the terminal's size
    assert isinstance(own, BarUnderRunBar) and not own.under
    with outer_bar():
        (bar,) = progress_callbacks(True)
        assert isinstance(bar, BarUnderRunBar) and bar.under
        assert progress_callbacks(False) == []  # bars off (progress=false, not a terminal)
    assert not progress_callbacks(True)[0].under  # the context variable is reset
    with training_watched(object()):
        assert [type(c) for c in progress_callbacks(False)] == [TrainingReport]
    assert progress_callbacks(False) == []


def _drawn(make) -> str:
    """What a bar of 3 writes on a fresh pseudo-terminal (0 × 0: nobody sized it)."""
    master, slave = os.openpty()
    try:
        with os.fdopen(slave, "w", closefd=False) as out:
            bar = make(total=3, file=out, desc="run", mininterval=0)
            bar.update(2)
            bar.refresh()
            bar.close()
            out.flush()
        return os.read(master, 65536).decode()
    finally:
        os.close(master)
        os.close(slave)


def test_a_terminal_that_reports_no_size_still_shows_the_bar():
    assert "run:" not in _drawn(lambda **kw: tqdm(dynamic_ncols=True, **kw))  # tqdm alone
    assert "run:  67%|" in _drawn(lambda **kw: sized_bar(tqdm, **kw))


class Heard:
    def __init__(self):
        self.events = []

    def ranker_started(self, **kw):
        self.events.append(("start", kw))

    def batch_done(self, epoch, batch):
        self.events.append(("batch", epoch, batch))

    def tick(self):
        self.events.append(("tick",))

    def epoch_done(self, epoch, seconds):
        assert seconds > 0
        self.events.append(("epoch", epoch))

    def ranker_done(self, epochs, seconds):
        assert seconds > 0
        self.events.append(("end", epochs))


def _lists(rng, n_queries):
    sizes = rng.integers(4, 12, size=n_queries)
    qptr = np.concatenate([[0], np.cumsum(sizes)])
    x = rng.normal(size=(int(qptr[-1]), 4)).astype(np.float32)
    y = np.digitize(x[:, 0], [0.0, 1.0]).astype(float)
    return RankingData(x, y, qptr, np.arange(n_queries))


def test_a_real_training_loop_reports_its_ranker_epochs_and_batches(tmp_path):
    rng = np.random.default_rng(0)
    recipe = RankerRecipe(
        model=ScorerSpec(fc_model={"sizes": [8]}, transformer={"N": 1, "d_ff": 8, "h": 1}),
        trainer=TrainerSpec(max_epochs=2, patience=None, enable_progress_bar=False),
    )
    heard = Heard()
    with training_watched(heard):
        train_ranker(_lists(rng, 40), _lists(rng, 10), recipe=recipe, out_dir=tmp_path)
    start = heard.events[0]
    assert start == ("start", {"epoch": 0, "max_epochs": 2, "batches": 1, "early_stopping": False})
    kinds = [e[0] for e in heard.events]
    # per epoch: its training batch, the validation batch, the epoch; then the end
    assert kinds[1:] == ["batch", "tick", "epoch", "batch", "tick", "epoch", "end"]
    assert [e[1] for e in heard.events if e[0] == "epoch"] == [1, 2]
    assert heard.events[-1] == ("end", 2)


def test_in_a_pipe_a_training_line_names_step_ranker_epoch_and_time_left(tmp_path, capsys):
    """Without a bar the run's progress says where training is every ``every_s`` seconds (0
    here: at every report; the command's default is 30 s)."""
    from groupbias.app.progress import StepProgress

    rng = np.random.default_rng(0)
    recipe = RankerRecipe(
        model=ScorerSpec(fc_model={"sizes": [8]}, transformer={"N": 1, "d_ff": 8, "h": 1}),
        trainer=TrainerSpec(max_epochs=2, patience=None, enable_progress_bar=False),
    )
    with StepProgress(1, rankers=[1], every_s=0.0) as progress:
        progress.start()
        progress.running("LTR", say=False)
        train_ranker(_lists(rng, 40), _lists(rng, 10), recipe=recipe, out_dir=tmp_path)
        progress.finished("LTR", 1.0, short=True)
    lines = capsys.readouterr().out.splitlines()
    assert "[groupbias] step 1/1 LTR: ranker 1/1, epoch 1/2" in lines  # nothing measured yet
    timed = [x for x in lines if x.startswith("[groupbias] step 1/1 LTR: ranker 1/1, epoch 2/2;")]
    assert timed and all(x.endswith(" s left") for x in timed)  # after the first epoch
    assert lines[-1] == "[groupbias] step 1/1 LTR: 1.0 s"
