"""LightningModule that trains an injected scorer with the LambdaLoss family.

Batches are the dicts of :mod:`groupbias.ltr.datamodule` (``features`` [B, L, f], ``labels``
[B, L], ``mask`` [B, L] True = real, ``positions`` [B, L], ``items`` [n_real]).

Configs (allRank style):

- ``loss_cfg``: ``{"name": "lambdaLoss", "args": {...}}`` or the ``args`` mapping alone; args
  are :func:`groupbias.ltr.losses.lambda_loss` keywords, and allRank's ``weighing_scheme``
  (for ``weighting``) is accepted; ``padded_value_indicator`` is ignored (masks are used) and
  ``reduction_log`` must be ``"binary"``. Default: ``{"weighting": "ndcgLoss2PP"}``.
- ``optim_cfg``: ``{"name": "Adam", "args": {"lr": 1e-3, "weight_decay": 0.0},
  "lr_scheduler": null | {"name": "StepLR", "args": {...}, "interval": "epoch",
  "monitor": "val_ndcg@10"}}``; names are classes of ``torch.optim`` and
  ``torch.optim.lr_scheduler``.

Validation logs ``val_ndcg@{k}`` (mean NDCG@k over the lists with a positive label, computed
on the padded batch by :func:`groupbias.ltr.losses.padded_ndcg`) once per epoch.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytorch_lightning as pl
import torch

from ..errors import ParameterError
from .losses import lambda_loss, padded_ndcg

_LOSS_KEYS = {"weighting", "k", "sigma", "mu", "gain", "eps", "reduction"}


def loss_kwargs(loss_cfg: Mapping | None) -> dict:
    """Keywords of :func:`lambda_loss` from an allRank-style loss config (see module doc)."""
    if loss_cfg is None:
        return {"weighting": "ndcgLoss2PP"}
    if not isinstance(loss_cfg, Mapping):
        raise ParameterError("loss_cfg", "a mapping", type(loss_cfg).__name__)
    cfg = dict(loss_cfg)
    if "name" in cfg:
        if cfg["name"] != "lambdaLoss":
            raise ParameterError("loss_cfg.name", "'lambdaLoss'", cfg["name"])
        cfg = dict(cfg.get("args") or {})
    if "weighing_scheme" in cfg:
        cfg["weighting"] = cfg.pop("weighing_scheme")
    cfg.pop("padded_value_indicator", None)
    if cfg.pop("reduction_log", "binary") != "binary":
        raise ParameterError("loss_cfg.reduction_log", "'binary'", loss_cfg)
    unknown = set(cfg) - _LOSS_KEYS
    if unknown:
        raise ParameterError("loss_cfg", f"keys among {sorted(_LOSS_KEYS)}", sorted(unknown))
    cfg.setdefault("weighting", "ndcgLoss2PP")
    # fail early on bad values
    lambda_loss(torch.zeros(1, 2), torch.tensor([[1.0, 0.0]]), torch.ones(1, 2, dtype=torch.bool),
                **cfg)
    return cfg


def _named_class(module, name, field: str):
    cls = getattr(module, str(name), None)
    if not isinstance(cls, type):
        raise ParameterError(field, f"a class name of {module.__name__}", name)
    return cls


class RankerModule(pl.LightningModule):
    """Trains ``scorer`` (a module ``(features, mask, positions) -> scores [B, L]``).

    Parameters (keyword-only): ``loss_cfg``, ``optim_cfg`` (module docstring); ``eval_k``: the
    cutoff of the validation/test NDCG (default 10); ``eval_gain``: its gain ("exp2" or
    "linear").
    """

    def __init__(self, scorer: torch.nn.Module, *, loss_cfg: Mapping | None = None,
                 optim_cfg: Mapping | None = None, eval_k: int | None = 10,
                 eval_gain: str = "exp2") -> None:
        super().__init__()
        self.scorer = scorer
        self.loss_kwargs = loss_kwargs(loss_cfg)
        self.optim_cfg = dict(optim_cfg or {})
        unknown = set(self.optim_cfg) - {"name", "args", "lr_scheduler"}
        if unknown:
            raise ParameterError("optim_cfg", "keys name, args, lr_scheduler", sorted(unknown))
        _named_class(torch.optim, self.optim_cfg.get("name", "Adam"), "optim_cfg.name")
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
        loss = lambda_loss(scores, batch["labels"], batch["mask"], **self.loss_kwargs)
        self.log("train_loss", loss, on_step=True, on_epoch=True, prog_bar=True,
                 batch_size=batch["mask"].shape[0])
        return loss

    # ---- evaluation: sums of NDCG and counts of valid lists, reduced once per epoch ------
    def _reset(self):
        self._stats = torch.zeros(2, dtype=torch.float64, device=self.device)

    def _accumulate(self, batch):
        ndcg, valid = padded_ndcg(self._scores(batch), batch["labels"], batch["mask"],
                                  k=self.eval_k, gain=self.eval_gain)
        self._stats += torch.stack([ndcg[valid].double().sum(), valid.double().sum()])

    def _finish(self, prefix: str):
        stats = self.all_gather(self._stats).reshape(-1, 2).sum(0)
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
        opt_cls = _named_class(torch.optim, self.optim_cfg.get("name", "Adam"), "optim_cfg.name")
        args = dict(self.optim_cfg.get("args") or {"lr": 1e-3})
        optimizer = opt_cls(self.scorer.parameters(), **args)
        sched = self.optim_cfg.get("lr_scheduler")
        if not sched:
            return optimizer
        sched = dict(sched)
        sch_cls = _named_class(torch.optim.lr_scheduler, sched.get("name"),
                               "optim_cfg.lr_scheduler.name")
        scheduler = sch_cls(optimizer, **dict(sched.get("args") or {}))
        conf = {"scheduler": scheduler, "interval": sched.get("interval", "epoch")}
        if "monitor" in sched:
            conf["monitor"] = sched["monitor"]
        return {"optimizer": optimizer, "lr_scheduler": conf}
