"""LightningModule that trains an injected scorer with an injected loss and optimizer.

Batches are the dicts of :mod:`groupbias.ltr.datamodule` (``features`` [B, L, f], ``labels``
[B, L], ``mask`` [B, L] True = real, ``positions`` [B, L], ``items`` [n_real]).

Everything the module trains with is an object built from config (:mod:`groupbias.app.config`):

- ``loss``: ``loss(scores, labels, mask) -> scalar`` (e.g.
  :class:`groupbias.ltr.losses.LambdaLoss`, the ``loss`` config group);
- ``optimizer``: ``optimizer(params) -> torch.optim.Optimizer`` (a ``_partial_`` of a
  ``torch.optim`` class, the ``optimizer`` config group);
- ``scheduler``: None, or ``scheduler(optimizer) -> LR scheduler`` (the ``scheduler`` group),
  stepped once per epoch; ``ReduceLROnPlateau`` watches the validation NDCG.

Validation logs ``val_ndcg@{k}`` (mean NDCG@k over the lists with a positive label, computed
on the padded batch by :func:`groupbias.ltr.losses.padded_ndcg`) once per epoch.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import pytorch_lightning as pl
import torch

from ..core.errors import ConfigError
from .losses import padded_ndcg

#: the optimizer when none is given: Adam, learning rate 1e-3
default_optimizer = functools.partial(torch.optim.Adam, lr=1e-3)


class RankerModule(pl.LightningModule):
    """Trains ``scorer`` (a module ``(features, mask, positions) -> scores [B, L]``).

    Parameters (keyword-only): ``loss``, ``optimizer``, ``scheduler`` (module docstring);
    ``eval_k``: the cutoff of the validation/test NDCG (default 10); ``eval_gain``: its gain
    ("exp2" or "linear").
    """

    def __init__(
        self,
        scorer: torch.nn.Module,
        *,
        loss: Callable,
        optimizer: Callable = default_optimizer,
        scheduler: Callable | None = None,
        eval_k: int | None = 10,
        eval_gain: str = "exp2",
    ) -> None:
        super().__init__()
        self.scorer = scorer
        self.loss = loss
        self.optimizer_factory = optimizer
        self.scheduler_factory = scheduler
        self.eval_k = eval_k
        self.eval_gain = eval_gain
        self.metric_name = f"ndcg@{eval_k}" if eval_k is not None else "ndcg"
        self._stats: torch.Tensor | None = None

    def forward(self, features, mask, positions=None):
        return self.scorer(features, mask, positions)

    def _scores(self, batch):
        return self.scorer(batch["features"], batch["mask"], batch.get("positions"))

    def training_step(self, batch, batch_idx):
        scores = self._scores(batch)
        loss = self.loss(scores, batch["labels"], batch["mask"])
        if not bool(torch.isfinite(loss)):  # diverged: every later step would train on NaN
            raise ConfigError(
                "optimizer.lr",
                f"the ranker diverged: its training loss is {loss.item()} at step "
                f"{self.global_step} (epoch {self.current_epoch})",
                hint="lower optimizer.lr (or normalize the features: batching.normalize)",
            )
        self.log(
            "train_loss",
            loss,
            on_step=True,
            on_epoch=True,
            prog_bar=True,
            batch_size=batch["mask"].shape[0],
        )
        return loss

    # ---- evaluation: sums of NDCG and counts of valid lists, reduced once per epoch ------
    def _reset(self):
        self._stats = torch.zeros(2, dtype=torch.float64, device=self.device)

    def _accumulate(self, batch):
        ndcg, valid = padded_ndcg(
            self._scores(batch), batch["labels"], batch["mask"], k=self.eval_k, gain=self.eval_gain
        )
        self._stats += torch.stack([ndcg[valid].double().sum(), valid.double().sum()])

    def _finish(self, prefix: str):
        assert self._stats is not None  # set at the start of every evaluation epoch
        gathered = self.all_gather(self._stats)
        assert isinstance(gathered, torch.Tensor)
        stats = gathered.reshape(-1, 2).sum(0)
        value = (stats[0] / stats[1]).float() if stats[1] > 0 else torch.tensor(0.0)
        self.log(f"{prefix}_{self.metric_name}", value, prog_bar=True)

    def on_validation_epoch_start(self):
        self._reset()

    def validation_step(self, batch, batch_idx):
        self._accumulate(batch)

    def on_validation_epoch_end(self):
        self._finish("val")

    def on_test_epoch_start(self):
        self._reset()

    def test_step(self, batch, batch_idx):
        self._accumulate(batch)

    def on_test_epoch_end(self):
        self._finish("test")

    def predict_step(self, batch, batch_idx):
        scores = self._scores(batch)
        return {"items": batch["items"], "scores": scores[batch["mask"]].float()}

    def configure_optimizers(self):
        optimizer = self.optimizer_factory(self.scorer.parameters())
        if self.scheduler_factory is None:
            return optimizer
        scheduler = self.scheduler_factory(optimizer)
        conf = {"scheduler": scheduler, "interval": "epoch"}
        if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
            conf["monitor"] = f"val_{self.metric_name}"
        return {"optimizer": optimizer, "lr_scheduler": conf}
