"""Bucketing, slate sampling, epoch plans and label handling of the LTR data module."""

import numpy as np
import pytest
import torch

from groupbias.core.errors import ParameterError
from groupbias.data.ranking_data import RankingData
from groupbias.ltr.datamodule import (
    EpochBatchSampler,
    EvalBatches,
    PreparedSplits,
    RankingDataModule,
    as_flat_lists,
    plan_epoch,
)


def _data(rng, sizes, f=4):
    qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(qptr[-1])
    x = rng.normal(size=(n, f)).astype(np.float32)
    x[:, 0] = np.arange(n)  # feature 0 identifies the item (before normalization)
    y = rng.integers(0, 3, size=n).astype(float)
    return RankingData(x, y, qptr, np.arange(len(sizes)))


def _epoch(dm, epoch):
    loader = dm.train_dataloader()
    loader.sampler.set_epoch(epoch)
    return list(loader)


def test_every_query_once_per_epoch_and_slates_bounded(rng):
    sizes = rng.integers(1, 40, size=57)
    sizes[[3, 10]] = 0  # empty queries are left out
    data = _data(rng, sizes)
    dm = RankingDataModule(data, batch_size=8, slate_length=15, normalize=None, seed=0)
    qidx = data.query_index()
    for epoch in (0, 1):
        batches = _epoch(dm, epoch)
        assert len(batches) == -(-55 // 8)
        seen = []
        for b in batches:
            assert b["features"].shape[0] <= 8
            assert b["mask"].shape[1] <= 15
            items = b["items"].numpy()
            # features/labels in the padded batch are those of the listed items
            np.testing.assert_array_equal(b["features"][b["mask"]][:, 0].numpy(), items)
            np.testing.assert_array_equal(b["labels"][b["mask"]].numpy(), data.labels[items])
            rows = np.repeat(np.arange(b["mask"].shape[0]), b["mask"].sum(1).numpy())
            q_of_row = [set(qidx[items[rows == r]]) for r in range(b["mask"].shape[0])]
            assert all(len(s) == 1 for s in q_of_row)  # one query per row
            for r, s in enumerate(q_of_row):
                q = s.pop()
                seen.append(q)
                assert (rows == r).sum() == min(sizes[q], 15)  # slate: min(size, 15) items
        assert sorted(seen) == sorted(np.flatnonzero(sizes > 0).tolist())


def test_bucketing_groups_similar_lengths(rng):
    sizes = rng.permutation(np.arange(1, 65))
    data = _data(rng, sizes)
    dm = RankingDataModule(data, batch_size=8, normalize=None, seed=3)
    batches = _epoch(dm, 0)
    lens = sorted(tuple(sorted(b["mask"].sum(1).tolist())) for b in batches)
    # lengths 1..64 in batches of 8: exactly the runs 1-8, 9-16, ...
    assert lens == [tuple(range(i, i + 8)) for i in range(1, 65, 8)]
    padded = sum(b["mask"].numel() for b in batches)
    assert padded == sum(8 * (i + 7) for i in range(1, 65, 8))  # width = longest of the run


@pytest.mark.reproducibility
def test_epochs_differ_seeds_reproduce(rng):
    data = _data(rng, rng.integers(20, 30, size=40))

    def fingerprint(seed, epoch):
        dm = RankingDataModule(data, batch_size=4, slate_length=10, normalize=None, seed=seed)
        return [b["items"].tolist() for b in _epoch(dm, epoch)]

    assert fingerprint(7, 0) == fingerprint(7, 0)
    assert fingerprint(7, 0) != fingerprint(7, 1)
    assert fingerprint(7, 0) != fingerprint(8, 0)


def test_slate_sampling_is_uniform(rng):
    # one query of 10 items, slates of 3: each item kept with probability 3/10
    qptr = np.array([0, 10])
    counts = np.zeros(10)
    n_epochs = 3000
    for e in range(n_epochs):
        plan = plan_epoch(qptr, batch_size=1, slate_length=3, rng=np.random.default_rng([0, e]))
        counts[plan.items] += 1
        assert plan.items.size == 3 and np.all(np.diff(plan.items) > 0)
    # binomial sd = sqrt(3000 * .3 * .7) ~ 25; allow 5 sd
    assert np.all(np.abs(counts - 900) < 125)


def test_sampler_advances_and_shards():
    s = EpochBatchSampler(5)
    assert [k for k, _ in s] == [0] * 5 and [k for k, _ in s] == [1] * 5
    s.set_epoch(7)
    assert list(s) == [(7, b) for b in range(5)]
    shards = [list(EpochBatchSampler(5, rank=r, world_size=2)) for r in range(2)]
    assert [b for _, b in shards[0]] == [0, 2, 4] and [b for _, b in shards[1]] == [1, 3, 0]


def test_eval_batches_cover_all_items_in_fixed_order(rng):
    sizes = np.array([5, 0, 2, 9, 1, 4])
    data = _data(rng, sizes)
    lists = as_flat_lists(data, normalize=None)
    ds = EvalBatches(lists, batch_size=2)
    items = np.concatenate([ds[b]["items"].numpy() for b in range(len(ds))])
    assert sorted(items.tolist()) == list(range(data.n_items))
    widths = [ds[b]["mask"].shape[1] for b in range(len(ds))]
    assert widths == sorted(widths) == [2, 5, 9]  # lengths (1, 2), (4, 5), (9)


def test_train_labels_replace_data_labels_and_are_validated(rng):
    data = _data(rng, [3, 4])
    corrected = data.labels / 0.01  # IPS-corrected labels far above the top grade
    dm = RankingDataModule(data, train_labels=corrected, batch_size=2, normalize=None)
    b = _epoch(dm, 0)[0]
    np.testing.assert_allclose(
        b["labels"][b["mask"]].numpy(), corrected[b["items"].numpy()].astype(np.float32)
    )
    for bad in (-data.labels - 1, np.full(data.n_items, np.nan), data.labels[:-1]):
        with pytest.raises(ParameterError, match="train labels"):
            RankingDataModule(data, train_labels=bad)
    with pytest.raises(ParameterError, match="batch_size"):
        RankingDataModule(data, batch_size=0)
    with pytest.raises(ParameterError, match="normalize"):
        RankingDataModule(data, normalize="minmax")


def test_zscore_applied_within_queries(rng):
    data = _data(rng, [6, 5])
    dm = RankingDataModule(data, batch_size=2, normalize="zscore")
    x = dm.train_lists.features
    for s, e in ((0, 6), (6, 11)):
        np.testing.assert_allclose(x[s:e].mean(0), 0, atol=1e-6)
        np.testing.assert_allclose(x[s:e].std(0), 1, atol=1e-5)
    assert data.features[0, 0] == 0  # input not modified


def test_prepared_splits_normalize_once_and_carry_only_new_labels(rng, monkeypatch):
    import groupbias.ltr.datamodule as module

    calls = []
    real = module.zscore_within_queries
    monkeypatch.setattr(
        module, "zscore_within_queries", lambda x, **kw: calls.append(1) or real(x, **kw)
    )
    data = _data(rng, [6, 5])
    prepared = PreparedSplits({"train": data, "test": data}, "zscore")
    assert calls == []  # nothing until asked
    biased = np.arange(11, dtype=np.float64) % 3
    a = RankingDataModule(prepared["train"], train_labels=biased, batch_size=2)
    b = RankingDataModule(prepared["train"], batch_size=2)
    assert len(calls) == 1
    assert a.train_lists.features is b.train_lists.features  # one normalized matrix
    np.testing.assert_array_equal(a.train_lists.labels, biased.astype(np.float32))
    np.testing.assert_array_equal(b.train_lists.labels, data.labels.astype(np.float32))
    fresh = RankingDataModule(data, batch_size=2)  # the same numbers as normalizing anew
    np.testing.assert_array_equal(fresh.train_lists.features, a.train_lists.features)
    # lists normalized one way are refused where the recipe asks for another
    with pytest.raises(ParameterError, match="normalization"):
        RankingDataModule(prepared["train"], batch_size=2, normalize=None)
    with pytest.raises(ParameterError, match="normalize"):
        PreparedSplits({"train": data}, "minmax")


def test_prepared_splits_in_place_write_over_the_features_with_the_same_values(rng):
    """``in_place=True`` (table2's MSLR-sized runs: one feature matrix in memory, not two):
    the z-score is written over the split's float32 features, equal to the copying path; a
    read-only or float64 matrix is copied instead, and a non-finite value is refused before
    anything is written."""
    data = _data(rng, [6, 5, 1])
    assert data.features.dtype == np.float32
    raw = data.features.copy()
    copied = PreparedSplits({"train": data}, "zscore")["train"].features
    lists = PreparedSplits({"train": data}, "zscore", in_place=True)["train"]
    assert lists.features is data.features  # written over, no second matrix
    np.testing.assert_array_equal(lists.features, copied)
    assert not np.array_equal(data.features, raw)

    frozen = _data(rng, [4, 4])
    frozen.features.flags.writeable = False
    before = frozen.features.copy()
    out = PreparedSplits({"train": frozen}, "zscore", in_place=True)["train"].features
    assert out is not frozen.features
    np.testing.assert_array_equal(frozen.features, before)

    bad = _data(rng, [3, 3])
    bad.features[4, 1] = np.nan  # in the second query: the first must stay raw too
    before = bad.features.copy()
    with pytest.raises(ParameterError, match="finite"):
        PreparedSplits({"train": bad}, "zscore", in_place=True)["train"]
    np.testing.assert_array_equal(bad.features, before)


def test_tuple_input_and_feature_count_check(rng):
    data = _data(rng, [3, 4])
    dm = RankingDataModule((data.features, data.labels, data.qptr), batch_size=2)
    assert dm.n_features == 4
    other = _data(rng, [3], f=5)
    with pytest.raises(ParameterError, match="same number of features"):
        RankingDataModule(data, other)
    assert isinstance(_epoch(dm, 0)[0]["features"], torch.Tensor)
