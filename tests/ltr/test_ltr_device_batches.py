"""Batches gathered on the device (``batching.on_device``) against the numpy batches they
replace: bit for bit, batch by batch and through a whole Lightning fit."""

import functools
from types import SimpleNamespace

import numpy as np
import pytest
import pytorch_lightning as pl
import torch

import groupbias.ltr.datamodule as dmod
from groupbias.core.errors import ParameterError
from groupbias.data.ranking_data import RankingData
from groupbias.ltr.datamodule import BatchSpec, RankingDataModule
from groupbias.ltr.losses import LambdaLoss
from groupbias.ltr.model import ScorerSpec
from groupbias.ltr.module import RankerModule
from groupbias.ltr.train import RankerRecipe, TrainerSpec, train_ranker

TINY = {
    "fc_model": {"sizes": [8], "input_norm": False, "activation": "ReLU", "dropout": 0.0},
    "transformer": {"N": 1, "d_ff": 16, "h": 2, "positional_encoding": None, "dropout": 0.1},
    "post_model": {"output_activation": None, "d_output": 1},
}


def _data(rng, n_queries, f=5, high=40):
    sizes = rng.integers(1, high, size=n_queries)
    sizes[[2, 7]] = 0  # empty queries are left out of every batch
    qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    x = rng.normal(size=(int(qptr[-1]), f)).astype(np.float32)
    y = rng.integers(0, 3, size=x.shape[0]).astype(float)
    return RankingData(x, y, qptr, np.arange(n_queries))


def _bits(t: torch.Tensor) -> np.ndarray:
    """The raw bits of a tensor (tells +0.0 from -0.0, unlike ==)."""
    a = t.numpy()
    return a.view(np.int32) if a.dtype == np.float32 else a


def _assert_same_batch(host: dict, dev: dict) -> None:
    assert set(host) == set(dev)
    for key, want in host.items():
        got = dev[key]
        assert got.dtype == want.dtype and got.shape == want.shape, key
        np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=key)


def _modules(rng, **kw):
    splits = [_data(rng, n) for n in (45, 20, 20)]
    common = dict(batch_size=6, eval_batch_size=8, slate_length=12, seed=3, **kw)
    host = RankingDataModule(*splits, on_device=False, **common)
    dev = RankingDataModule(*splits, on_device=True, **common)
    return host, dev


def _loaders(dm):
    return {
        "train": dm.train_dataloader(),
        "valid": dm.val_dataloader(),
        "test": dm.test_dataloader(),
        "predict": dm.predict_dataloader(),
    }


def test_device_batches_equal_the_numpy_batches_bit_for_bit(rng):
    host, dev = _modules(rng)  # z-scored: negative values, so a -0.0 in padding would show
    host_loaders, dev_loaders = _loaders(host), _loaders(dev)
    for name in host_loaders:
        for epoch in (0, 1):  # slates are drawn anew each epoch
            for loader in (host_loaders[name], dev_loaders[name]):
                if name == "train":
                    loader.sampler.set_epoch(epoch)
            pairs = list(zip(host_loaders[name], dev_loaders[name], strict=True))
            assert pairs
            for want, index in pairs:
                assert "features" not in index and "labels" not in index
                n_slots = index["mask"].numel()  # no tensor of B x L x f leaves the loader
                assert all(v.numel() <= n_slots for v in index.values() if torch.is_tensor(v))
                _assert_same_batch(want, dev.on_after_batch_transfer(index, 0))
    # slates were sampled: some training list was cut to slate_length
    assert max(int(b["mask"].sum(1).max()) for b in host.train_dataloader()) == 12
    assert int(np.diff(host.train_lists.qptr).max()) > 12


def test_the_split_is_moved_once_and_shared_on_the_cpu(rng, monkeypatch):
    _, dev = _modules(rng)
    calls = []
    host_tensors = dmod.host_tensors
    monkeypatch.setattr(dmod, "host_tensors", lambda lists: calls.append(1) or host_tensors(lists))
    loader = dev.train_dataloader()
    ptrs = set()
    for epoch in (0, 1):
        loader.sampler.set_epoch(epoch)
        for index in loader:
            dev.on_after_batch_transfer(index, 0)
            feats, labels = dev.split_on_device("train", index["rows"].device)
            ptrs.add((feats.data_ptr(), labels.data_ptr()))
    assert len(calls) == 1 and len(ptrs) == 1
    # on the CPU the tensors are the lists' own memory: nothing was copied
    assert ptrs == {(dev.train_lists.features.ctypes.data, dev.train_lists.labels.ctypes.data)}


def test_auto_gathers_on_the_device_only_under_a_gpu_trainer(rng):
    host, _ = _modules(rng)
    auto = RankingDataModule(host.train_lists, batch_size=4)
    assert auto.on_device == "auto" and not auto.device_batches()  # no trainer: the host
    for kind, want in (("cpu", False), ("cuda", True), ("mps", True)):
        auto.trainer = SimpleNamespace(strategy=SimpleNamespace(root_device=torch.device(kind)))
        assert auto.device_batches() is want, kind
        assert ("rows" in next(iter(auto.train_dataloader()))) is want
    forced = RankingDataModule(host.train_lists, batch_size=4, on_device=False)
    forced.trainer = auto.trainer
    assert not forced.device_batches()


def test_on_device_values_and_pin_memory(rng):
    with pytest.raises(ParameterError) as info:
        BatchSpec(on_device="yes")
    assert info.value.name == "on_device"
    with pytest.raises(ParameterError) as info:
        BatchSpec(on_device=1)
    assert info.value.name == "on_device"
    # pinning host memory means nothing when the batches are gathered on the device
    with pytest.raises(ParameterError) as info:
        BatchSpec(on_device=True, pin_memory=True)
    assert info.value.name == "pin_memory"
    BatchSpec(on_device=False, pin_memory=True)
    BatchSpec(on_device="auto", pin_memory=True)  # applies where auto builds on the host
    host, _ = _modules(rng)
    auto = RankingDataModule(host.train_lists, batch_size=4, pin_memory=True)
    assert auto.train_dataloader().pin_memory
    auto.trainer = SimpleNamespace(strategy=SimpleNamespace(root_device=torch.device("cuda")))
    assert not auto.train_dataloader().pin_memory  # index batches: nothing worth pinning


class _Seen(pl.Callback):
    """Records the features' dtype of every training batch and which path made it."""

    def __init__(self):
        self.dtypes = set()

    def on_train_batch_start(self, trainer, module, batch, batch_idx):
        self.dtypes.add(batch["features"].dtype)


def _fit_everything(dm, precision="32-true"):
    """Fit two epochs with validation, then test and predict; what each produced."""
    torch.manual_seed(0)
    module = RankerModule(ScorerSpec(**TINY).build(dm.n_features), loss=LambdaLoss())
    seen = _Seen()
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=1,
        max_epochs=2,
        precision=precision,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[seen],
    )
    trainer.fit(module, datamodule=dm)
    val = float(trainer.callback_metrics["val_ndcg@10"])
    (tested,) = trainer.test(module, datamodule=dm, verbose=False)
    preds = trainer.predict(module, datamodule=dm)
    items = torch.cat([p["items"] for p in preds]).numpy()
    scores = torch.cat([p["scores"] for p in preds]).numpy()
    return {
        "weights": {k: v.clone() for k, v in module.scorer.state_dict().items()},
        "val": val,
        "test": tested["test_ndcg@10"],
        "scores": scores[np.argsort(items)],
        "dtypes": seen.dtypes,
    }


def test_a_fit_with_device_batches_equals_the_host_fit(rng, monkeypatch):
    host, dev = _modules(rng)
    calls = []
    host_tensors = dmod.host_tensors
    monkeypatch.setattr(dmod, "host_tensors", lambda lists: calls.append(1) or host_tensors(lists))
    a = _fit_everything(host)
    assert not calls  # the host path: no split on the device
    b = _fit_everything(dev)
    assert len(calls) == 3  # train, valid, test: each once (test serves test and predict)
    for k, w in a["weights"].items():
        assert torch.equal(w, b["weights"][k]), k
    assert a["val"] == b["val"] and a["test"] == b["test"]
    assert np.array_equal(a["scores"], b["scores"])
    assert a["dtypes"] == b["dtypes"] == {torch.float32}


def test_bf16_mixed_keeps_float32_features_on_the_device(rng):
    _, dev = _modules(rng)
    got = _fit_everything(dev, precision="bf16-mixed")
    assert got["dtypes"] == {torch.float32}  # the model autocasts; the features stay float32
    assert np.isfinite(got["scores"]).all()
    assert dev.split_on_device("train", "cpu")[0].dtype == torch.float32


def test_train_ranker_passes_on_device_and_predicts_the_same(rng, tmp_path):
    train, valid = _data(rng, 40, high=16), _data(rng, 16, high=16)
    got = {}
    for on_device in (False, True):
        recipe = RankerRecipe(
            model=ScorerSpec(**TINY),
            optimizer=functools.partial(torch.optim.Adam, lr=3e-3),
            trainer=TrainerSpec(max_epochs=2, accelerator="cpu", enable_progress_bar=False),
            batching=BatchSpec(batch_size=8, slate_length=10, on_device=on_device),
        )
        ranker = train_ranker(
            train, valid, recipe=recipe, seed=0, out_dir=tmp_path / str(on_device)
        )
        assert ranker.meta["recipe"]["batching"]["on_device"] is on_device
        scores = ranker.predict(valid)
        # scoring: the padded batches gathered from the features, moved once, or numpy's
        assert np.array_equal(ranker.predict(valid, on_device=not on_device), scores)
        got[on_device] = (scores, ranker.best_score)
    assert np.array_equal(got[False][0], got[True][0])
    assert got[False][1] == got[True][1]
