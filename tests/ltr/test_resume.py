"""Resume inside a ranker (groupbias/ltr/resume.py): a ranker stopped part-way and trained
again into the same folder continues from its saved state and ends with the weights of one
never stopped; another recipe or data never resumes from it."""

from __future__ import annotations

import functools
import random

import numpy as np
import pytest
import torch

from groupbias.core.errors import ParameterError
from groupbias.data.ranking_data import RankingData
from groupbias.ltr import resume as R
from groupbias.ltr.datamodule import as_flat_lists
from groupbias.ltr.train import TrainerSpec, train_ranker
from tests.ltr.test_ltr_train import recipe


def _data(n_queries: int, f: int = 5) -> RankingData:
    rng = np.random.default_rng(5)
    qptr = np.concatenate([[0], np.cumsum(rng.integers(4, 16, size=n_queries))])
    x = rng.normal(size=(int(qptr[-1]), f)).astype(np.float32)
    y = np.digitize(x @ np.linspace(1.0, -0.5, f) + 0.3 * rng.normal(size=x.shape[0]), [0.5, 1.5])
    return RankingData(x, y.astype(float), qptr, np.arange(n_queries))


def _lists(data, labels=None):
    return as_flat_lists(data, labels=labels)


class Stop(Exception):
    """Stands for a kill: raised after a training batch, nothing saved on the way out."""


def _recipe(every=None, **trainer):
    return recipe(
        trainer={
            "max_epochs": 3,
            "patience": 2,
            "loggers": [],
            "checkpoint_every_min": every,
            **trainer,
        },
        batching={"batch_size": 8, "slate_length": 10},
        optimizer=functools.partial(torch.optim.Adam, lr=3e-3),
        scheduler=functools.partial(torch.optim.lr_scheduler.StepLR, step_size=1, gamma=0.7),
    )


@pytest.fixture(scope="module")
def splits():
    data = _data(40)
    return data.subset(np.arange(32)), data.subset(np.arange(32, 40))


@pytest.fixture(scope="module")
def clean(splits, tmp_path_factory):
    """A ranker never stopped (its weights, best validation NDCG, test scores)."""
    train, valid = splits
    ranker = train_ranker(
        train, valid, recipe=_recipe(), seed=3, out_dir=tmp_path_factory.mktemp("clean")
    )
    return ranker.scorer.state_dict(), ranker.best_score, ranker.predict(valid)


def _stop_at(monkeypatch, epoch: int, batch: int) -> None:
    saving = R.ResumeCheckpoint.on_train_batch_end

    def stop(self, trainer, pl_module, outputs, b, batch_idx):
        saving(self, trainer, pl_module, outputs, b, batch_idx)
        if (trainer.current_epoch, batch_idx) == (epoch, batch):
            raise Stop

    monkeypatch.setattr(R.ResumeCheckpoint, "on_train_batch_end", stop)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("every", "epoch", "batch", "said"),
    [
        (None, 2, 1, "from epoch 3/3"),  # the state saved at epoch 3's start
        (1e-9, 1, 1, "from epoch 2/3, batch 3"),  # a timed save after every batch
    ],
)
def test_a_stopped_ranker_resumes_to_the_weights_of_one_never_stopped(
    splits, clean, tmp_path, monkeypatch, capsys, every, epoch, batch, said
):
    train, valid = splits
    out = tmp_path / "ranker"
    with monkeypatch.context() as m:
        _stop_at(m, epoch, batch)
        with pytest.raises(Stop):
            train_ranker(train, valid, recipe=_recipe(every), seed=3, out_dir=out)
    saved = torch.load(out / R.RESUME_FILE, weights_only=True)
    where = saved[R.STATE_KEY]["epoch"], saved[R.STATE_KEY]["batch"]
    assert where == (epoch, 0 if every is None else batch + 1)
    capsys.readouterr()
    ranker = train_ranker(train, valid, recipe=_recipe(every), seed=3, out_dir=out)
    assert f"resuming {out} {said}" in capsys.readouterr().err
    weights, best, scores = clean
    state = ranker.scorer.state_dict()
    assert state.keys() == weights.keys()
    assert all(torch.equal(state[k], weights[k]) for k in weights)  # bit for bit
    assert ranker.best_score == best
    np.testing.assert_array_equal(ranker.predict(valid), scores)
    assert not (out / R.RESUME_FILE).exists()  # trained: removed


@pytest.mark.slow
def test_another_recipe_or_data_never_resumes(splits, tmp_path, monkeypatch, capsys):
    train, valid = splits
    out = tmp_path / "ranker"
    with monkeypatch.context() as m:
        _stop_at(m, 2, 0)
        with pytest.raises(Stop):
            train_ranker(train, valid, recipe=_recipe(), seed=3, out_dir=out)
    path = out / R.RESUME_FILE
    identity = torch.load(path, weights_only=True)[R.STATE_KEY]["identity"]
    # how often it saves is not what it learns; the seed, labels and recipe are
    assert identity == R.training_identity(
        _recipe(5.0).describe(), 3, [_lists(train), _lists(valid)]
    )
    others = [
        R.training_identity(_recipe().describe(), 4, [_lists(train), _lists(valid)]),
        R.training_identity(_recipe(max_epochs=4).describe(), 3, [_lists(train), _lists(valid)]),
        R.training_identity(
            _recipe().describe(), 3, [_lists(train, labels=train.labels[::-1]), _lists(valid)]
        ),
    ]
    assert identity not in others and len(set(others)) == 3
    capsys.readouterr()
    train_ranker(train, valid, recipe=_recipe(), seed=4, out_dir=out)
    assert "resuming" not in capsys.readouterr().err
    assert not path.exists()


def test_checkpoint_every_min_is_checked():
    assert TrainerSpec(checkpoint_every_min=0.5).checkpoint_every_min == 0.5
    assert TrainerSpec(checkpoint_every_min=None).checkpoint_every_min is None
    for bad in (0, -1, float("nan"), "10", True):
        with pytest.raises(ParameterError, match="checkpoint_every_min"):
            TrainerSpec(checkpoint_every_min=bad)


def test_random_states_go_back_as_they_were_saved():
    with R.GlobalRandomState():
        torch.manual_seed(1)
        np.random.seed(2)
        random.seed(3)
        state = R.rng_state()
        first = (torch.rand(3), np.random.random(3), random.random())
        R.set_rng_state(state)
        again = (torch.rand(3), np.random.random(3), random.random())
    assert torch.equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    assert first[2] == again[2]


def test_a_damaged_resume_file_is_not_resumed_from(tmp_path):
    path = tmp_path / "resume.ckpt"
    path.write_bytes(b"not a checkpoint")
    assert R.read_resume_state(path, "x") is None
    assert not path.exists()


@pytest.mark.slow
def test_a_ranker_trained_before_is_loaded_not_trained_again(splits, clean, tmp_path, monkeypatch):
    import pytorch_lightning as pl

    train, valid = splits
    out = tmp_path / "ranker"
    first = train_ranker(train, valid, recipe=_recipe(), seed=3, out_dir=out)
    fits = []
    fit = pl.Trainer.fit
    monkeypatch.setattr(
        pl.Trainer, "fit", lambda self, *a, **kw: fits.append(1) or fit(self, *a, **kw)
    )
    again = train_ranker(train, valid, recipe=_recipe(), seed=3, out_dir=out)
    assert fits == []
    np.testing.assert_array_equal(again.predict(valid), clean[2])
    assert again.best_score == first.best_score == clean[1]
    assert again.checkpoint_path == out / "checkpoints" / "best.ckpt"
    train_ranker(train, valid, recipe=_recipe(), seed=4, out_dir=out)  # another seed: trains
    assert fits == [1]
