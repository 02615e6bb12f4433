"""A rough estimate of how long training the rankers of a run takes, and the warning the
command prints before a run estimated to take long (the run's ``warn_after_s`` key).

The model (rough, stated; not a measurement of any particular run)::

    seconds ≈ rankers × (epochs × items × SECONDS_PER_UNIT × (parameters + ITEM_WORK) / speed
                         + OVERHEAD_S)

``items``: the training items one epoch sees (each list cut to ``batching.slate_length``)
plus the validation items; ``parameters``: the scorer's weights on this data's features (an
item's forward and backward pass costs about that many multiply-adds) and
:data:`ITEM_WORK` the per-item work besides (attention, batching, loss) in the same unit;
``epochs``: ``trainer.max_epochs`` (early stopping can end sooner: an upper estimate);
``speed``: the torch threads a CPU trains with (``trainer.threads``), or :data:`GPU_SPEED`
on a GPU. :data:`SECONDS_PER_UNIT`, :data:`ITEM_WORK` and :data:`OVERHEAD_S` come from small
measured runs (``benchmarks/training_cost.py``: the demo's and Table 2's models, 1 thread, 1
and 4 epochs, 19,606 items; two runs of the script gave 1.35e-10 / 171,000 and 1.77e-10 /
107,000, the constants are their means) on the 2-core development machine while other work
kept its load near 7, so an idle or faster machine trains quicker than estimated;
:data:`GPU_SPEED` is an assumption, not measured. The estimate tells minutes from hours,
nothing finer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._fast.threads import cores
from ..core.progress import rough_duration
from ..core.validation import check_threads

__all__ = [
    "SECONDS_PER_UNIT",
    "ITEM_WORK",
    "GPU_SPEED",
    "OVERHEAD_S",
    "TrainingCost",
    "training_cost",
]

#: seconds per (item × parameter × epoch) on one CPU thread (module docstring)
SECONDS_PER_UNIT = 1.56e-10
#: an item's work besides the scorer's weights, in parameters (module docstring)
ITEM_WORK = 139_000
#: how many CPU threads one GPU stands for (assumed, not measured)
GPU_SPEED = 20.0
#: seconds per ranker outside its epochs (Lightning's start, checkpoint, prediction)
OVERHEAD_S = 0.5


@dataclass(frozen=True)
class TrainingCost:
    """The estimate of :func:`training_cost` and what it was made of."""

    rankers: int
    epochs: int
    queries: int
    items: int
    features: int
    parameters: int
    threads: int
    gpu: bool
    seconds: float

    def where(self) -> str:
        """``2 CPU cores`` / ``a GPU``."""
        if self.gpu:
            return "a GPU"
        return f"{self.threads} CPU core{'s' * (self.threads != 1)}"

    def warning(self, title: str = "") -> str:
        """The warning line: what the run trains, the rough time and what makes it faster."""
        faster = (
            "fewer epochs (trainer.max_epochs) or less data"
            if self.gpu
            else "trainer=gpu on a GPU machine, or fewer epochs (trainer.max_epochs)"
        )
        where = f" of {title}" if title else ""
        return (
            f"this run trains {self.rankers} ranker{'s' * (self.rankers != 1)} × {self.epochs} "
            f"epochs on {self.queries:,} queries{where} ({self.items:,} items × "
            f"{self.features} features); expect roughly {rough_duration(self.seconds)} on "
            f"{self.where()}. Faster: {faster}. This warning shows above warn_after_s seconds"
        )


def _epoch_items(data, slate_length: int | None) -> int:
    sizes = np.diff(np.asarray(data.qptr))
    if slate_length is not None:
        sizes = np.minimum(sizes, slate_length)
    return int(sizes.sum())


def training_cost(recipe, train, valid=None, *, rankers: int) -> TrainingCost:
    """The rough time of training ``rankers`` rankers with ``recipe`` on ``train`` (and
    ``valid``, used for validation; ``RankingData`` or anything with ``features`` and
    ``qptr``), by the model of the module docstring."""
    spec = recipe.trainer
    acc = spec.accelerator
    if acc == "auto":
        import torch

        gpu = torch.cuda.is_available()
    else:
        gpu = acc in ("gpu", "cuda", "mps")
    threads = check_threads(spec.threads) if isinstance(spec.threads, int) else cores()
    features = int(train.features.shape[1])
    parameters = sum(p.numel() for p in recipe.model.build(features).parameters())
    items = _epoch_items(train, recipe.batching.slate_length)
    queries = np.asarray(train.qptr).size - 1
    if valid is not None:
        items += int(valid.features.shape[0])
        queries += np.asarray(valid.qptr).size - 1
    speed = GPU_SPEED if gpu else float(threads)
    unit = SECONDS_PER_UNIT * (parameters + ITEM_WORK)
    per_ranker = spec.max_epochs * items * unit / speed + OVERHEAD_S
    return TrainingCost(
        rankers=int(rankers),
        epochs=int(spec.max_epochs),
        queries=int(queries),
        items=items,
        features=features,
        parameters=int(parameters),
        threads=threads,
        gpu=gpu,
        seconds=rankers * per_ranker,
    )
