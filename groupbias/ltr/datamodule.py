"""Batches of padded query lists for Lightning: length bucketing, slate sampling, normalization.

Training epoch ``e`` (all randomness from ``np.random.default_rng([seed, e])``):

1. slate sampling: a query with more than ``slate_length`` items keeps a uniformly random
   subset of ``slate_length`` of them (in their original order) for this epoch;
2. bucketing: queries are sorted by (sampled) list length, ties in random order, and cut into
   batches of ``batch_size`` queries, so every batch holds lists of similar length and little
   padding;
3. the batch order is shuffled.

Every non-empty query appears in exactly one training batch per epoch. Batches are assembled
in the loading process with vectorized numpy (:func:`groupbias.ltr.padding.pad_segments`);
the sampler yields ``(epoch, batch)`` keys, so the plan is the same in any worker process,
and under ``torch.distributed`` each rank takes every ``world_size``-th batch.

Batches on the device (``on_device``, on by default where the trainer runs on a GPU): the
loading process builds only the batch's indices (:func:`groupbias.ltr.padding.pad_index`);
each split's flat features and labels are moved to the device once, and the padded
features and labels are gathered there (:meth:`RankingDataModule.on_after_batch_transfer`),
equal bit for bit to the numpy batches.

Evaluation batches hold whole queries (no sampling), sorted by length, in fixed order.
Empty queries are left out of all batches.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from ..core.errors import ParameterError
from ..core.validation import check_qptr, integer
from .normalization import zscore_within_queries
from .padding import gather_padded, pad_index, pad_segments


@dataclass(frozen=True, eq=False)
class FlatLists:
    """Flat lists ready for batching: features float32 [n, f], labels float32 [n] or None,
    qptr int64 [n_queries + 1]; ``normalize``: the normalization the features went through
    (``"zscore"`` or None)."""

    features: np.ndarray
    labels: np.ndarray | None
    qptr: np.ndarray
    normalize: str | None = None

    @property
    def n_queries(self) -> int:
        return int(self.qptr.size - 1)


def as_flat_lists(
    data,
    *,
    labels: np.ndarray | None = None,
    normalize: str | None = "zscore",
    name: str = "data",
    need_labels: bool = False,
    in_place: bool = False,
) -> FlatLists:
    """Flat lists from a ``RankingData`` (or any object with ``features``, ``labels`` and
    ``qptr``) or a ``(features, labels, qptr)`` tuple.

    ``labels`` replaces the data's labels (e.g. biased or IPS-corrected training labels); they
    must be finite and non-negative. ``normalize``: ``"zscore"`` (within each query, see
    :func:`zscore_within_queries`; ``in_place``: over the data's own float32 features) or None.
    """
    if normalize not in NORMALIZATIONS:
        raise ParameterError("normalize", "'zscore' or None", normalize)
    done = None  # the normalization the features already went through
    if isinstance(data, FlatLists):
        feats, base_labels, qptr, done = data.features, data.labels, data.qptr, data.normalize
        if done not in (None, normalize):
            raise ParameterError(
                f"{name} normalization",
                f"lists normalized by {normalize!r} (the recipe's batching.normalize)",
                done,
                fix="prepare the splits with the recipe's normalize",
            )
    elif isinstance(data, tuple):
        if len(data) != 3:
            raise ParameterError(
                name, "a RankingData or a (features, labels, qptr) tuple", f"a tuple of {len(data)}"
            )
        feats, base_labels, qptr = data
    else:
        try:
            feats, base_labels, qptr = data.features, data.labels, data.qptr
        except AttributeError:
            raise ParameterError(
                name, "a RankingData or a (features, labels, qptr) tuple", type(data).__name__
            ) from None
    feats = np.asarray(feats)
    if feats.ndim != 2:
        raise ParameterError(f"{name}.features", "a 2-D array [n_items, n_features]", feats.shape)
    qptr = check_qptr(qptr, feats.shape[0], name=f"{name}.qptr")
    y_arr = _checked_labels(
        labels if labels is not None else base_labels, feats.shape[0], name, need_labels
    )
    if isinstance(data, FlatLists) and done == normalize:  # the features as they are
        return replace(data, labels=y_arr)
    if normalize == "zscore":
        feats = zscore_within_queries(feats, qptr=qptr, in_place=in_place)
    else:
        feats = np.ascontiguousarray(feats, dtype=np.float32)
    return FlatLists(feats, y_arr, qptr, normalize)


def _checked_labels(y, n: int, name: str, need: bool) -> np.ndarray | None:
    """``y`` as float32 [n] after checking it is finite and non-negative (None when absent
    and not ``need``-ed)."""
    which = f"{name} labels"
    if y is None:
        if need:
            raise ParameterError(which, "an array of n_items labels", None)
        return None
    y_arr = np.asarray(y, dtype=np.float64)
    if y_arr.shape != (n,):
        raise ParameterError(which, f"shape ({n},)", y_arr.shape)
    finite = np.isfinite(y_arr)
    if not finite.all() or (y_arr.size and y_arr.min() < 0):
        low = float(y_arr[finite].min()) if finite.any() else None
        raise ParameterError(
            which, "finite non-negative values", f"min {low}, {int(np.sum(~finite))} non-finite"
        )
    return y_arr.astype(np.float32)


class PreparedSplits(Mapping):
    """The splits of one dataset (name -> ``RankingData``) as :class:`FlatLists` normalized
    by ``normalize``, each made once, when first asked for: every condition, β and
    repetition of a run trains and scores on the same lists, and only their labels
    differ. ``in_place=True``: the z-score is written over the splits' own float32 features
    (one matrix in memory instead of two) — for a run that loaded the splits itself and reads
    no raw feature after training starts; the splits' ``features`` are then standardized."""

    def __init__(self, splits: Mapping, normalize: str | None, *, in_place: bool = False) -> None:
        if normalize not in NORMALIZATIONS:
            raise ParameterError("normalize", "'zscore' or None", normalize)
        self.splits, self.normalize, self.in_place = splits, normalize, in_place
        self._lists: dict[str, FlatLists] = {}

    def __getitem__(self, name: str) -> FlatLists:
        if name not in self._lists:
            self._lists[name] = as_flat_lists(
                self.splits[name], normalize=self.normalize, name=name, in_place=self.in_place
            )
        return self._lists[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.splits)

    def __len__(self) -> int:
        return len(self.splits)


def _batch_dict(
    lists: FlatLists,
    items: np.ndarray,
    sizes: np.ndarray,
    qstarts: np.ndarray,
    split: str | None = None,
) -> dict[str, Any]:
    """The padded batch of ``items``; with a ``split`` name, its indices only (for
    :func:`gather_batch` on the device)."""
    if split is not None:
        pi = pad_index(items, sizes, qstarts)
        return {
            "rows": pi.rows,
            "mask": pi.mask,
            "positions": pi.positions,
            "items": pi.items,
            "split": split,
        }
    pb = pad_segments(lists.features, lists.labels, items, sizes, qstarts)
    out = {"features": pb.features, "mask": pb.mask, "positions": pb.positions, "items": pb.items}
    if pb.labels is not None:
        out["labels"] = pb.labels
    return out


def host_tensors(lists: FlatLists) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The lists' features and labels as CPU tensors sharing their memory (no copy; a
    read-only array is shared as well: the tensors are only ever read)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*not writable.*")
        feats = torch.from_numpy(lists.features)
        labels = None if lists.labels is None else torch.from_numpy(lists.labels)
    return feats, labels


def gather_batch(
    index: Mapping[str, Any], features: torch.Tensor, labels: torch.Tensor | None
) -> dict[str, Any]:
    """The padded batch (the keys of the numpy batches) of an index batch, gathered from a
    split's flat ``features`` [n, f] and ``labels`` [n] where they lie (on the device)."""
    rows, mask = index["rows"], index["mask"]
    out = {
        "features": gather_padded(features, rows, mask),
        "mask": mask,
        "positions": index["positions"],
        "items": index["items"],
    }
    if labels is not None:
        out["labels"] = gather_padded(labels, rows, mask)
    return out


def _gather(flat: np.ndarray, ptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate ``flat[ptr[r]:ptr[r+1]]`` for ``r`` in ``rows``; returns (values, sizes)."""
    sizes = ptr[rows + 1] - ptr[rows]
    out_starts = np.zeros(rows.size, dtype=np.int64)
    if rows.size:
        np.cumsum(sizes[:-1], out=out_starts[1:])
    idx = np.arange(int(sizes.sum()), dtype=np.int64) + np.repeat(ptr[rows] - out_starts, sizes)
    return flat[idx], sizes


@dataclass(frozen=True)
class EpochPlan:
    """One training epoch: ``items``/``ptr`` the sampled items of every kept query (flat,
    grouped per query, query ``j`` = ``queries[j]``), ``batches[b]`` the rows of batch ``b``."""

    queries: np.ndarray
    items: np.ndarray
    ptr: np.ndarray
    batches: list[np.ndarray]


def plan_epoch(
    qptr: np.ndarray, *, batch_size: int, slate_length: int | None, rng: np.random.Generator
) -> EpochPlan:
    """Slate sampling, length bucketing and batch shuffling of one epoch (module docstring)."""
    qptr = np.asarray(qptr, dtype=np.int64)
    sizes = np.diff(qptr)
    queries = np.flatnonzero(sizes > 0)
    n_items = int(qptr[-1])
    qidx = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    if slate_length is not None and sizes.size and sizes.max() > slate_length:
        # rank items within their query by a random key; keep the first slate_length
        key = rng.random(n_items)
        order = np.lexsort((key, qidx))
        within = np.arange(n_items, dtype=np.int64) - qptr[qidx[order]]
        items = np.sort(order[within < slate_length])
    else:
        items = np.arange(n_items, dtype=np.int64)
    kept = np.minimum(sizes, slate_length) if slate_length is not None else sizes
    ptr = np.zeros(queries.size + 1, dtype=np.int64)
    np.cumsum(kept[queries], out=ptr[1:])
    # bucket by length, random order among equal lengths
    by_len = np.lexsort((rng.random(queries.size), kept[queries]))
    batches = [by_len[i : i + batch_size] for i in range(0, by_len.size, batch_size)]
    perm = rng.permutation(len(batches))
    return EpochPlan(queries, items, ptr, [batches[i] for i in perm])


def _dist_rank_world() -> tuple[int, int]:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


class EpochBatchSampler(Sampler):
    """Yields ``(epoch, b)`` keys of one epoch's batches; Lightning calls :meth:`set_epoch`.

    Without ``set_epoch`` calls the epoch advances by one per iteration. With ``world_size >
    1`` (default: from ``torch.distributed``) rank ``r`` takes batches ``r, r + w, ...``,
    padded by wrapping around so that all ranks take equally many. ``epoch``, ``skip``: the
    first iteration is of that epoch and leaves out its first ``skip`` batches of this rank
    (a run resumed mid-epoch, :mod:`groupbias.ltr.resume`).
    """

    def __init__(
        self,
        n_batches: int,
        *,
        rank: int | None = None,
        world_size: int | None = None,
        epoch: int = 0,
        skip: int = 0,
    ) -> None:
        self.n_batches = int(n_batches)
        self.epoch = int(epoch)
        self._rank, self._world = rank, world_size
        self._skip = (int(epoch), int(skip))

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def _shard(self) -> np.ndarray:
        rank, world = _dist_rank_world()
        rank = self._rank if self._rank is not None else rank
        world = self._world if self._world is not None else world
        per_rank = -(-self.n_batches // world)
        idx = np.arange(per_rank * world) % max(self.n_batches, 1)
        return idx[rank::world] if self.n_batches else idx[:0]

    def __len__(self) -> int:
        return int(self._shard().size)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        epoch = self.epoch
        self.epoch += 1
        (skip_epoch, skip), self._skip = self._skip, (0, 0)
        for b in self._shard()[skip if epoch == skip_epoch else 0 :]:
            yield (epoch, int(b))


class TrainBatches(Dataset):
    """Training batches keyed by ``(epoch, b)``; see :func:`plan_epoch`."""

    def __init__(
        self,
        lists: FlatLists,
        *,
        batch_size: int,
        slate_length: int | None,
        seed: int,
        split: str | None = None,
    ) -> None:
        if lists.labels is None:
            raise ParameterError("train labels", "an array of n_items labels", None)
        self.lists = lists
        self.batch_size = int(batch_size)
        self.slate_length = slate_length
        self.seed = int(seed)
        self.split = split  # None: padded batches; a name: index batches of that split
        n_q = int(np.count_nonzero(np.diff(lists.qptr)))
        self.n_batches = -(-n_q // self.batch_size)
        self._plan = lru_cache(maxsize=2)(self._make_plan)

    def _make_plan(self, epoch: int) -> EpochPlan:
        return plan_epoch(
            self.lists.qptr,
            batch_size=self.batch_size,
            slate_length=self.slate_length,
            rng=np.random.default_rng([self.seed, epoch]),
        )

    def __len__(self) -> int:
        return self.n_batches

    def __getitem__(self, key: tuple[int, int]) -> dict[str, Any]:
        epoch, b = key
        plan = self._plan(int(epoch))
        rows = plan.batches[b]
        items, sizes = _gather(plan.items, plan.ptr, rows)
        qstarts = self.lists.qptr[plan.queries[rows]]
        return _batch_dict(self.lists, items, sizes, qstarts, self.split)

    def __getstate__(self):  # the cache does not travel to worker processes
        state = self.__dict__.copy()
        state.pop("_plan", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._plan = lru_cache(maxsize=2)(self._make_plan)


class EvalBatches(Dataset):
    """Whole-query batches in fixed order (queries sorted by length), for validation, test and
    prediction. Batch ``b`` also carries ``items``: the flat index of every real slot.
    ``split``: as in :class:`TrainBatches`."""

    def __init__(self, lists: FlatLists, *, batch_size: int, split: str | None = None) -> None:
        self.lists = lists
        self.split = split
        sizes = np.diff(lists.qptr)
        queries = np.flatnonzero(sizes > 0)
        order = queries[np.argsort(sizes[queries], kind="stable")]
        self.batches = [
            order[i : i + int(batch_size)] for i in range(0, order.size, int(batch_size))
        ]
        self._all_items = np.arange(int(lists.qptr[-1]), dtype=np.int64)

    def __len__(self) -> int:
        return len(self.batches)

    def __getitem__(self, b: int) -> dict[str, Any]:
        q = self.batches[b]
        items, sizes = _gather(self._all_items, self.lists.qptr, q)
        return _batch_dict(self.lists, items, sizes, self.lists.qptr[q], self.split)


NORMALIZATIONS = ("zscore", None)
#: the device types on which ``on_device: auto`` gathers the batches
GPU_DEVICE_TYPES = ("cuda", "mps")


def gathers_on(device: torch.device | None, on_device: bool | str) -> bool:
    """Whether batches are gathered on ``device`` (None: not known yet): ``on_device``,
    where ``"auto"`` means where ``device`` is a GPU (cuda, mps)."""
    if on_device == "auto":
        return device is not None and device.type in GPU_DEVICE_TYPES
    return bool(on_device)


@dataclass(frozen=True)
class BatchSpec:
    """How lists become training batches (the ``batching`` config group).

    ``batch_size``: queries per optimizer step (lists bucketed by length);
    ``eval_batch_size``: queries per evaluation batch (None: 4 x batch_size);
    ``slate_length``: items kept per query and epoch in training (longer lists are
    subsampled anew every epoch; None keeps all); ``normalize``: ``"zscore"`` of every
    feature within its query, or None; ``on_device``: gather the padded batches on the
    training device from each split's features, moved there once (``"auto"``: where the
    trainer runs on a GPU, cuda or mps; True; False: build them on the host, as on a CPU);
    ``pin_memory``: pinned host memory for the copies of host-built batches to a GPU (only
    with the host path: refused with ``on_device=True``, unused where ``"auto"`` picks the
    device).
    """

    batch_size: int = 64
    eval_batch_size: int | None = None
    slate_length: int | None = None
    normalize: str | None = "zscore"
    on_device: bool | str = "auto"
    pin_memory: bool = False

    def __post_init__(self) -> None:
        integer("batch_size", self.batch_size, low=1)
        if self.eval_batch_size is not None:
            integer("eval_batch_size", self.eval_batch_size, low=1)
        if self.slate_length is not None:
            integer("slate_length", self.slate_length, low=1)
        if self.normalize not in NORMALIZATIONS:
            raise ParameterError("normalize", "'zscore' or null", self.normalize)
        if not isinstance(self.pin_memory, bool):
            raise ParameterError("pin_memory", "true or false", self.pin_memory)
        if not (self.on_device == "auto" or isinstance(self.on_device, bool)):
            raise ParameterError("on_device", "'auto', true or false", self.on_device)
        if self.on_device is True and self.pin_memory:
            raise ParameterError(
                "pin_memory",
                "false with on_device=true (batches are gathered on the device: only their "
                "small index tensors are copied)",
                self.pin_memory,
                fix="drop pin_memory, or set on_device=false to build batches on the host",
            )


class RankingDataModule(pl.LightningDataModule):
    """Lightning data module over flat ranking data.

    Parameters
    ----------
    train, valid, test : ``RankingData`` (or ``(features, labels, qptr)``), each optional
    train_labels : labels to train on ([n_items] of ``train``, finite, non-negative), e.g.
        biased or IPS-corrected; default ``train.labels``
    valid_labels, test_labels : evaluation labels; default the split's own labels
    batch_size : training batch size in queries; eval_batch_size : in queries (default
        ``4 * batch_size``)
    slate_length : items kept per query and epoch in training (None = all)
    normalize : ``"zscore"`` (within query) or None
    seed : seed of the epoch plans (``np.random.default_rng([seed, epoch])``)
    on_device : ``"auto"``, True or False: gather the padded batches on the training device
        (see :class:`BatchSpec`; ``"auto"``: where the trainer's device is a GPU)
    pin_memory : pin host-built batches for faster host-to-GPU copies
    """

    def __init__(
        self,
        train=None,
        valid=None,
        test=None,
        *,
        train_labels=None,
        valid_labels=None,
        test_labels=None,
        batch_size: int = 64,
        eval_batch_size: int | None = None,
        slate_length: int | None = None,
        normalize: str | None = "zscore",
        seed: int = 0,
        on_device: bool | str = "auto",
        pin_memory: bool = False,
    ) -> None:
        super().__init__()
        spec = BatchSpec(
            batch_size=batch_size,
            eval_batch_size=eval_batch_size,
            slate_length=slate_length,
            normalize=normalize,
            on_device=on_device,
            pin_memory=pin_memory,
        )
        self.batch_size = spec.batch_size
        self.eval_batch_size = spec.eval_batch_size or 4 * spec.batch_size
        self.slate_length = spec.slate_length
        self.normalize = normalize
        self.seed = int(seed)
        self.on_device = spec.on_device
        self.pin_memory = bool(pin_memory)
        self._on_device: dict[tuple[str, torch.device], tuple] = {}
        self._resume = (0, 0)
        self.train_lists, self.valid_lists, self.test_lists = (
            None
            if data is None
            else as_flat_lists(data, labels=y, normalize=normalize, name=name, need_labels=need)
            for name, data, y, need in (
                ("train", train, train_labels, True),
                ("valid", valid, valid_labels, True),
                ("test", test, test_labels, False),
            )
        )
        widths = {
            x.features.shape[1]
            for x in (self.train_lists, self.valid_lists, self.test_lists)
            if x is not None
        }
        if len(widths) > 1:
            raise ParameterError(
                "train/valid/test features", "the same number of features", sorted(widths)
            )
        self.n_features = widths.pop() if widths else None

    def device_batches(self) -> bool:
        """Whether batches are gathered on the device: ``on_device``, where ``"auto"`` is
        True when the attached trainer runs on a GPU (cuda, mps) and False otherwise."""
        trainer = self.trainer
        return gathers_on(None if trainer is None else trainer.strategy.root_device, self.on_device)

    def split_lists(self, split: str) -> FlatLists:
        """The :class:`FlatLists` of ``split`` ("train", "valid" or "test")."""
        lists = {"train": self.train_lists, "valid": self.valid_lists, "test": self.test_lists}
        if split not in lists:
            raise ParameterError("split", "'train', 'valid' or 'test'", split)
        found = lists[split]
        if found is None:
            what = {"train": "training", "valid": "validation", "test": "test"}[split]
            raise ParameterError(split, f"{what} data", None)
        return found

    def split_on_device(
        self, split: str, device: torch.device | str
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The flat features [n, f] and labels [n] (or None) of ``split`` on ``device``, moved
        there on the first call and kept (on the CPU: the lists' own memory, no copy)."""
        key = (split, torch.device(device))
        if key not in self._on_device:
            feats, labels = host_tensors(self.split_lists(split))
            self._on_device[key] = (
                feats.to(key[1]),
                None if labels is None else labels.to(key[1]),
            )
        return self._on_device[key]

    def on_after_batch_transfer(self, batch: Any, dataloader_idx: int) -> Any:
        """Gather an index batch (``on_device``) on the device it was moved to; a padded
        batch (the host path) is returned as it is."""
        if not isinstance(batch, Mapping) or "rows" not in batch:
            return batch
        feats, labels = self.split_on_device(batch["split"], batch["rows"].device)
        return gather_batch(batch, feats, labels)

    def _loader(self, dataset, sampler=None) -> DataLoader:
        pin = self.pin_memory and dataset.split is None  # index batches: nothing worth pinning
        return DataLoader(dataset, batch_size=None, sampler=sampler, num_workers=0, pin_memory=pin)

    def _eval_loader(self, split: str) -> DataLoader:
        lists = self.split_lists(split)
        name = split if self.device_batches() else None
        return self._loader(EvalBatches(lists, batch_size=self.eval_batch_size, split=name))

    def resume_at(self, epoch: int, batch: int) -> None:
        """The next training loader starts at ``batch`` of ``epoch`` (a resumed run)."""
        self._resume = (int(epoch), int(batch))

    def train_dataloader(self) -> DataLoader:
        ds = TrainBatches(
            self.split_lists("train"),
            batch_size=self.batch_size,
            slate_length=self.slate_length,
            seed=self.seed,
            split="train" if self.device_batches() else None,
        )
        epoch, skip = self._resume
        return self._loader(ds, EpochBatchSampler(len(ds), epoch=epoch, skip=skip))

    def val_dataloader(self) -> DataLoader:
        return self._eval_loader("valid")

    def test_dataloader(self) -> DataLoader:
        return self._eval_loader("test")

    def predict_dataloader(self) -> DataLoader:
        return self.test_dataloader()
