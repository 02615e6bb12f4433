"""Lightning training of the LTR scorer: real TREC Fair data, reproducibility, checkpoints."""

import functools
import json

import numpy as np
import pandas as pd
import pytest
import torch

from data_loaders.trec_fair import load_trec_fair_ppg
from groupbias.core.errors import ParameterError
from groupbias.data.ranking_data import RankingData
from groupbias.evaluation.metrics import ndcg
from groupbias.ltr.datamodule import BatchSpec
from groupbias.ltr.losses import LambdaLoss
from groupbias.ltr.model import ScorerSpec
from groupbias.ltr.train import (
    RankerRecipe,
    TrainedRanker,
    TrainerSpec,
    load_best_state,
    train_ranker,
)

TINY = {
    "fc_model": {"sizes": [16], "input_norm": False, "activation": "ReLU", "dropout": 0.0},
    "transformer": {"N": 1, "d_ff": 32, "h": 2, "positional_encoding": None, "dropout": 0.1},
    "post_model": {"output_activation": None, "d_output": 1},
}
QUIET = {"enable_progress_bar": False}


def recipe(*, trainer=None, batching=None, **kw) -> RankerRecipe:
    return RankerRecipe(
        model=ScorerSpec(**TINY),
        trainer=TrainerSpec(**{**QUIET, **(trainer or {})}),
        batching=BatchSpec(**(batching or {})),
        **kw,
    )


def _synthetic(rng, n_queries, f=5):
    sizes = rng.integers(4, 16, size=n_queries)
    qptr = np.concatenate([[0], np.cumsum(sizes)])
    x = rng.normal(size=(int(qptr[-1]), f)).astype(np.float32)
    util = x @ np.linspace(1.0, -0.5, f) + 0.3 * rng.normal(size=x.shape[0])
    y = np.digitize(util, [0.5, 1.5]).astype(float)  # grades 0, 1, 2
    return RankingData(x, y, qptr, np.arange(n_queries))


@pytest.mark.slow
@pytest.mark.realdata
def test_trec_fair_training_beats_random(trec_root, tmp_path):
    train_all = load_trec_fair_ppg(trec_root, 2020, "train")
    test = load_trec_fair_ppg(trec_root, 2020, "test")
    perm = np.random.default_rng(0).permutation(train_all.n_queries)
    train, valid = train_all.subset(np.sort(perm[40:])), train_all.subset(np.sort(perm[:40]))
    ranker = train_ranker(
        train,
        valid,
        train_labels=train.labels,
        recipe=recipe(
            trainer={"max_epochs": 6, "patience": 3},
            batching={"batch_size": 16, "slate_length": 64},
            optimizer=functools.partial(torch.optim.Adam, lr=3e-3),
            loss=LambdaLoss(weighting="lambdaRank"),
        ),
        seed=0,
        out_dir=tmp_path,
    )
    scores = ranker.predict(test)
    assert scores.shape == (test.n_items,) and np.isfinite(scores).all()
    trained = ndcg(scores, test.labels, qptr=test.qptr, k=10)
    rng = np.random.default_rng(1)
    random = np.mean(
        [ndcg(rng.random(test.n_items), test.labels, qptr=test.qptr, k=10) for _ in range(20)]
    )
    # measured: random 0.361; trained 0.441 / 0.454 / 0.433 with seeds 0 / 1 / 2
    assert trained > random + 0.05, (trained, random)

    # the returned weights are those of the best validation epoch
    log = pd.read_csv(ranker.log_dir / "metrics.csv")
    val = log["val_ndcg@10"].dropna()
    assert ranker.best_score == pytest.approx(val.max(), rel=1e-6)
    best = TrainedRanker(ranker.scorer, TINY, 25, "zscore")
    best.scorer.load_state_dict(load_best_state(ranker.checkpoint_path))
    np.testing.assert_array_equal(best.predict(test), scores)
    # saved ranker (weights_only load) predicts the same
    loaded = TrainedRanker.load(tmp_path / "ranker")
    np.testing.assert_allclose(loaded.predict(test), scores, rtol=0, atol=1e-6)
    info = json.loads((tmp_path / "ranker" / "ranker.json").read_text())
    assert info["model_cfg"] == TINY and info["normalize"] == "zscore"


@pytest.mark.slow
@pytest.mark.reproducibility
def test_same_seed_same_predictions(rng, tmp_path):
    data = _synthetic(rng, 48)
    train, valid = data.subset(np.arange(36)), data.subset(np.arange(36, 48))
    state = torch.random.get_rng_state()
    kw = dict(
        recipe=recipe(
            trainer={"max_epochs": 2, "accelerator": "cpu"},
            batching={"batch_size": 8, "slate_length": 8},
        )
    )
    a = train_ranker(train, valid, seed=0, out_dir=tmp_path / "a", **kw).predict(valid)
    b = train_ranker(train, valid, seed=0, out_dir=tmp_path / "b", **kw).predict(valid)
    c = train_ranker(train, valid, seed=1, out_dir=tmp_path / "c", **kw).predict(valid)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    # the caller's global torch RNG is left as it was
    assert torch.equal(torch.random.get_rng_state(), state)


@pytest.mark.slow
def test_bf16_mixed_training_and_plain_features(rng, tmp_path):
    data = _synthetic(rng, 30)
    ranker = train_ranker(
        data,
        None,
        recipe=recipe(
            trainer={"max_epochs": 3, "precision": "bf16-mixed"},
            batching={"batch_size": 8, "normalize": None},
            optimizer=functools.partial(torch.optim.Adagrad, lr=0.05),
            scheduler=functools.partial(torch.optim.lr_scheduler.StepLR, step_size=1, gamma=0.5),
        ),
        seed=0,
        out_dir=tmp_path,
    )
    assert ranker.checkpoint_path is None and ranker.normalize is None
    scores = ranker.predict(data.features, data.qptr)
    assert np.isfinite(scores).all()
    # the synthetic utility is learnable: better than reversed scores
    assert ndcg(scores, data.labels, qptr=data.qptr, k=5) > ndcg(
        -scores, data.labels, qptr=data.qptr, k=5
    )


def test_threads_hold_while_training_and_are_restored(rng, tmp_path, monkeypatch):
    import pytorch_lightning as pl

    seen = []
    fit = pl.Trainer.fit

    def recording_fit(self, *a, **kw):
        seen.append(torch.get_num_threads())
        return fit(self, *a, **kw)

    monkeypatch.setattr(pl.Trainer, "fit", recording_fit)
    monkeypatch.setattr("groupbias._fast.threads.os.getloadavg", lambda: (0.0, 0.0, 0.0))
    before = torch.get_num_threads()
    target = 1 if before > 1 else 2
    data = _synthetic(rng, 12)
    kw = dict(seed=0, out_dir=tmp_path)
    train_ranker(data, None, recipe=recipe(trainer={"max_epochs": 1, "threads": target}), **kw)
    train_ranker(data, None, recipe=recipe(trainer={"max_epochs": 1}), **kw)
    assert seen == [target, before]
    assert torch.get_num_threads() == before
    with pytest.raises(ParameterError, match="threads"):
        TrainerSpec(threads=0)
    with pytest.raises(ParameterError, match="extra.threads"):
        TrainerSpec(extra={"threads": 1})


def test_configuration_errors(rng, tmp_path):
    with pytest.raises(ParameterError, match="extra.callbacks"):
        TrainerSpec(extra={"callbacks": []})
    with pytest.raises(ParameterError, match="extra.no_such_option"):
        TrainerSpec(extra={"no_such_option": 1})
    with pytest.raises(ParameterError, match="max_epochs"):
        TrainerSpec(max_epochs=0)
    for bad in (0, -2, 1.5, "4", True):
        with pytest.raises(ParameterError, match="threads"):
            TrainerSpec(threads=bad)
    with pytest.raises(ParameterError, match="extra.threads"):
        TrainerSpec(extra={"threads": 2})
    with pytest.raises(ParameterError, match="slate_length"):
        BatchSpec(slate_length=0)
    with pytest.raises(ParameterError, match="directory"):
        TrainedRanker.load(tmp_path / "missing")


class _ThreadProbe(LambdaLoss):
    """LambdaLoss that records torch's intra-op thread count at every training step."""

    seen: list

    def __call__(self, scores, labels, mask):
        type(self).seen.append(torch.get_num_threads())
        return super().__call__(scores, labels, mask)


@pytest.mark.parametrize("threads", [1, None])
def test_trainer_threads_set_during_training_and_restored(rng, tmp_path, threads, monkeypatch):
    import os

    monkeypatch.setattr("groupbias._fast.threads.os.getloadavg", lambda: (0.0, 0.0, 0.0))
    data = _synthetic(rng, 12)
    _ThreadProbe.seen = []
    before = torch.get_num_threads()
    torch.set_num_threads(3 if before != 3 else 2)
    outside = torch.get_num_threads()
    try:
        train_ranker(
            data,
            None,
            recipe=recipe(
                trainer={"max_epochs": 1, "accelerator": "cpu", "threads": threads},
                batching={"batch_size": 4},
                loss=_ThreadProbe(),
            ),
            seed=0,
            out_dir=tmp_path,
        )
        assert torch.get_num_threads() == outside  # the caller's setting is restored
    finally:
        torch.set_num_threads(before)
    # default: the cores this process may use (its CPU affinity) that are idle (load 0 here)
    want = threads if threads is not None else len(os.sched_getaffinity(0))
    assert _ThreadProbe.seen and set(_ThreadProbe.seen) == {want}


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_bf16_training_on_gpu(rng, tmp_path):
    data = _synthetic(rng, 64)
    train, valid = data.subset(np.arange(48)), data.subset(np.arange(48, 64))
    ranker = train_ranker(
        train,
        valid,
        recipe=recipe(
            trainer={"max_epochs": 3, "accelerator": "auto", "precision": "bf16-mixed"},
            batching={"batch_size": 8, "pin_memory": True},
        ),
        seed=0,
        out_dir=tmp_path,
    )
    scores = ranker.predict(valid, device="cuda")
    assert np.isfinite(scores).all()
    np.testing.assert_allclose(ranker.predict(valid, device="cpu"), scores, atol=1e-4)


def test_loggers_by_name(tmp_path):
    import importlib.util

    from groupbias.core.errors import ParameterError
    from groupbias.ltr.train import make_loggers

    (csv,) = make_loggers("csv", tmp_path)
    assert type(csv).__name__ == "CSVLogger" and str(tmp_path) in csv.log_dir
    with pytest.raises(ParameterError, match="loggers"):
        make_loggers(["csv", "neptune"], tmp_path)
    if (
        importlib.util.find_spec("tensorboard") is None
        and importlib.util.find_spec("tensorboardX") is None
    ):
        with pytest.raises(ParameterError, match="tensorboard"):
            make_loggers(["tensorboard"], tmp_path)


def test_auto_threads_leave_out_the_busy_cores(monkeypatch):
    import groupbias._fast.threads as TH
    import groupbias.ltr.train as T

    monkeypatch.setattr(TH.os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    for load, expect in ((0.2, 8), (2.6, 5), (7.6, 1), (30.0, 1)):
        monkeypatch.setattr(TH.os, "getloadavg", lambda load=load: (load, load, load))
        assert T.idle_cores() == expect
        assert T.TrainerSpec(threads="auto").n_threads() == expect
        # the default does not depend on the load: the same machine, the same bits
        assert T.TrainerSpec().n_threads() == 8
    assert T.TrainerSpec(threads=3).n_threads() == 3  # given: used as it is
    with pytest.raises(ParameterError, match="'auto'"):
        T.TrainerSpec(threads="fast")


def test_no_loggers_means_no_logs(rng, tmp_path):
    data = _synthetic(rng, 12)
    r = recipe(trainer={"max_epochs": 1, "loggers": []})
    ranker = train_ranker(data, None, recipe=r, seed=0, out_dir=tmp_path / "quiet")
    assert not (tmp_path / "quiet" / "logs").exists() and ranker.log_dir is None
    train_ranker(
        data, None, recipe=recipe(trainer={"max_epochs": 1}), seed=0, out_dir=tmp_path / "csv"
    )
    assert list((tmp_path / "csv" / "logs").rglob("metrics.csv"))  # the default: CSV


def test_a_saved_ranker_through_the_flat_api(rng, tmp_path):
    import groupbias as gb

    data = _synthetic(rng, 12)
    trained = gb.train_ranker(
        data, None, recipe=recipe(trainer={"max_epochs": 1}), seed=0, out_dir=tmp_path / "corrected"
    )
    for where in (tmp_path / "corrected", tmp_path / "corrected" / "ranker"):
        again = gb.load_ranker(where)  # a condition's folder, or the ranker's own
        assert isinstance(again, gb.TrainedRanker)
        np.testing.assert_array_equal(again.predict(data), trained.predict(data))
    with pytest.raises(gb.ParameterError, match="model.pt"):
        gb.load_ranker(tmp_path)
