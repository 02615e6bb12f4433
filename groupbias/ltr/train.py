"""Training entry point: ``train_ranker`` -> :class:`TrainedRanker` with ``.predict``.

A run writes under ``out_dir``: ``checkpoints/best.ckpt`` (Lightning checkpoint of the best
validation NDCG@k), ``logs/`` (CSV metrics), and ``ranker/`` (``model.pt``: the best weights
as a plain ``state_dict``; ``ranker.json``: model config, feature count, normalization).
Weights are always loaded with ``torch.load(weights_only=True)``.

Reproducibility: weight initialization, dropout and the epoch plans draw from ``seed`` only.
The torch RNG is seeded inside ``torch.random.fork_rng``, so the caller's global RNG state is
left as it was. Two CPU runs with the same seed and inputs give identical predictions.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import EarlyStopping, ModelCheckpoint

from ..errors import ParameterError
from .datamodule import EvalBatches, RankingDataModule, as_flat_lists
from .model import ContextScorer, make_scorer
from .module import RankerModule

_TRAINER_DEFAULTS = {
    "max_epochs": 20, "accelerator": "auto", "devices": "auto", "strategy": "auto",
    "precision": "32-true", "enable_progress_bar": True, "log_every_n_steps": 10,
    "enable_model_summary": False,
}
_OWN_TRAINER_KEYS = {"patience", "min_delta", "eval_k", "eval_gain", "loggers"}

#: ``trainer_cfg["loggers"]`` names -> Lightning logger classes (CSV always works; the others
#: need their package: tensorboard, mlflow, wandb)
_LOGGERS = {"csv": "CSVLogger", "tensorboard": "TensorBoardLogger", "mlflow": "MLFlowLogger",
            "wandb": "WandbLogger"}


def make_loggers(names, out: Path) -> list:
    """Lightning loggers writing under ``out/logs`` (``names``: a name or a list of names of
    :data:`_LOGGERS`; the CSV logger needs nothing extra)."""
    import pytorch_lightning.loggers as L

    names = [names] if isinstance(names, str) else list(names or ["csv"])
    out_loggers = []
    for name in names:
        if name not in _LOGGERS:
            raise ParameterError("trainer_cfg.loggers", "names among " + ", ".join(_LOGGERS),
                                 name)
        cls = getattr(L, _LOGGERS[name])
        try:
            if name == "mlflow":
                out_loggers.append(cls(experiment_name="groupbias",
                                       tracking_uri=f"file:{out / 'logs' / 'mlruns'}"))
            elif name == "wandb":
                out_loggers.append(cls(save_dir=str(out / "logs"), project="groupbias"))
            else:
                out_loggers.append(cls(str(out), name="logs"))
        except (ImportError, ModuleNotFoundError) as exc:
            raise ParameterError("trainer_cfg.loggers", f"an installed logger package for "
                                 f"{name!r}", name, fix=str(exc)) from exc
    return out_loggers
_DATA_KEYS = {"batch_size", "eval_batch_size", "slate_length", "normalize", "pin_memory"}


def _plain(obj):
    """JSON-ready copy of a (possibly OmegaConf) nested config."""
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    return obj


@dataclass
class TrainedRanker:
    """A trained scorer with what is needed to score new lists.

    ``predict(data)`` (or ``predict(features, qptr)``) returns float64 scores [n_items] in the
    flat item order of ``data``; items of a query are comparable with each other only.
    """

    scorer: ContextScorer
    model_cfg: dict
    n_features: int
    normalize: str | None
    best_score: float | None = None
    checkpoint_path: Path | None = None
    log_dir: Path | None = None
    meta: dict = field(default_factory=dict)

    def predict(self, data, qptr: np.ndarray | None = None, *, batch_size: int = 256,
                device: str | torch.device | None = None) -> np.ndarray:
        if qptr is not None:
            data = (np.asarray(data), None, qptr)
        lists = as_flat_lists(data, normalize=self.normalize, name="data")
        if lists.features.shape[1] != self.n_features:
            raise ParameterError("data.features", f"{self.n_features} feature columns",
                                 lists.features.shape[1])
        if device is None:
            device = next(self.scorer.parameters()).device
        device = torch.device(device)
        scorer = self.scorer.to(device)
        was_training = scorer.training
        scorer.eval()
        out = np.zeros(lists.features.shape[0], dtype=np.float64)
        try:
            with torch.no_grad():
                for batch in EvalBatches(lists, batch_size=batch_size):
                    mask = batch["mask"].to(device)
                    s = scorer(batch["features"].to(device), mask, batch["positions"].to(device))
                    out[batch["items"].numpy()] = s[mask].double().cpu().numpy()
        finally:
            scorer.train(was_training)
        return out

    def save(self, directory: str | Path) -> Path:
        """Write ``model.pt`` (state_dict) and ``ranker.json`` into ``directory``."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().cpu() for k, v in self.scorer.state_dict().items()}
        torch.save(state, d / "model.pt")
        info = {"model_cfg": _plain(self.model_cfg), "n_features": int(self.n_features),
                "normalize": self.normalize, "best_score": self.best_score}
        (d / "ranker.json").write_text(json.dumps(info, indent=2))
        return d

    @classmethod
    def load(cls, directory: str | Path) -> "TrainedRanker":
        """Rebuild a ranker written by :meth:`save` (weights loaded with weights_only=True)."""
        d = Path(directory)
        for name in ("model.pt", "ranker.json"):
            if not (d / name).is_file():
                raise ParameterError("directory", f"a folder holding {name}", str(d))
        info = json.loads((d / "ranker.json").read_text())
        scorer = make_scorer(info["model_cfg"], n_features=info["n_features"])
        scorer.load_state_dict(torch.load(d / "model.pt", map_location="cpu",
                                          weights_only=True))
        scorer.eval()
        return cls(scorer, info["model_cfg"], info["n_features"], info["normalize"],
                   best_score=info.get("best_score"))


def _split_cfg(cfg: Mapping | None, allowed: set[str] | None, name: str) -> dict:
    cfg = dict(cfg or {})
    if allowed is not None:
        unknown = set(cfg) - allowed
        if unknown:
            raise ParameterError(name, f"keys among {sorted(allowed)}", sorted(unknown))
    return cfg


def load_best_state(checkpoint: str | Path, prefix: str = "scorer.") -> dict[str, torch.Tensor]:
    """The scorer weights in a Lightning checkpoint (loaded with weights_only=True)."""
    ckpt = torch.load(checkpoint, map_location="cpu", weights_only=True)
    return {k[len(prefix):]: v for k, v in ckpt["state_dict"].items() if k.startswith(prefix)}


def train_ranker(train, valid, *, train_labels: np.ndarray | None = None,
                 valid_labels: np.ndarray | None = None, model_cfg: Mapping,
                 trainer_cfg: Mapping | None = None, optim_cfg: Mapping | None = None,
                 loss_cfg: Mapping | None = None, data_cfg: Mapping | None = None,
                 seed: int = 0, out_dir: str | Path) -> TrainedRanker:
    """Train the context-aware scorer with Lightning (paper §6.1, "LTR model").

    Parameters
    ----------
    train, valid : ``RankingData`` (or ``(features, labels, qptr)``); ``valid`` may be None
        (then no early stopping and the last epoch's weights are kept)
    train_labels : labels to train on, float [train.n_items] (biased or IPS-corrected
        attractiveness; default ``train.labels``); valid_labels: default ``valid.labels``
    model_cfg : allRank model schema (:func:`groupbias.ltr.model.make_scorer`)
    trainer_cfg : ``pytorch_lightning.Trainer`` keywords (defaults: max_epochs 20,
        accelerator "auto", devices "auto", strategy "auto", precision "32-true"; e.g.
        ``precision="bf16-mixed"`` on a GPU) plus ``patience`` (early stopping on the
        validation NDCG, default 5; None disables), ``min_delta`` (0), ``eval_k`` (10),
        ``eval_gain`` ("exp2"), ``loggers`` ("csv" default; a list of "csv",
        "tensorboard", "mlflow", "wandb" — the last three need their package)
    optim_cfg, loss_cfg : see :mod:`groupbias.ltr.module`
    data_cfg : ``batch_size`` (queries, default 64), ``eval_batch_size``, ``slate_length``,
        ``normalize`` ("zscore" default, or None), ``pin_memory``
    seed : seeds initialization, dropout and the epoch plans
    out_dir : folder for checkpoints, logs and the saved ranker
    """
    tcfg = _split_cfg(trainer_cfg, None, "trainer_cfg")
    own = {k: tcfg.pop(k) for k in list(tcfg) if k in _OWN_TRAINER_KEYS}
    for k in ("callbacks", "logger", "default_root_dir"):
        if k in tcfg:
            raise ParameterError(f"trainer_cfg.{k}", "not set (train_ranker provides it)", k)
    dcfg = _split_cfg(data_cfg, _DATA_KEYS, "data_cfg")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model_cfg = _plain(model_cfg)
    seed = int(seed)
    dm = RankingDataModule(train, valid, train_labels=train_labels, valid_labels=valid_labels,
                           seed=seed, **dcfg)
    eval_k = own.get("eval_k", 10)
    patience = own.get("patience", 5)
    callbacks = []
    ckpt_cb = None
    monitor = f"val_ndcg@{eval_k}" if eval_k is not None else "val_ndcg"
    if valid is not None:
        ckpt_cb = ModelCheckpoint(dirpath=out / "checkpoints", filename="best", monitor=monitor,
                                  mode="max", save_top_k=1, save_weights_only=False,
                                  enable_version_counter=False)
        callbacks.append(ckpt_cb)
        if patience is not None:
            callbacks.append(EarlyStopping(monitor=monitor, mode="max", patience=int(patience),
                                           min_delta=float(own.get("min_delta", 0.0))))
    settings = {**_TRAINER_DEFAULTS, **tcfg}
    if valid is None:
        settings["limit_val_batches"] = 0
        settings["num_sanity_val_steps"] = 0
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*does not have many workers.*")
        warnings.filterwarnings("ignore", message=".*number of training batches.*")
        torch.manual_seed(seed)
        if devices:
            torch.cuda.manual_seed_all(seed)
        scorer = make_scorer(model_cfg, n_features=dm.n_features)
        module = RankerModule(scorer, loss_cfg=loss_cfg, optim_cfg=optim_cfg, eval_k=eval_k,
                              eval_gain=own.get("eval_gain", "exp2"))
        trainer = pl.Trainer(default_root_dir=str(out), callbacks=callbacks,
                             logger=make_loggers(own.get("loggers", "csv"), out),
                             use_distributed_sampler=False, **settings)
        trainer.fit(module, datamodule=dm)
    scorer = module.scorer.cpu()
    best_score = None
    ckpt_path = None
    if ckpt_cb is not None and ckpt_cb.best_model_path:
        ckpt_path = Path(ckpt_cb.best_model_path)
        scorer.load_state_dict(load_best_state(ckpt_path))
        if ckpt_cb.best_model_score is not None:
            best_score = float(ckpt_cb.best_model_score)
    scorer.eval()
    ranker = TrainedRanker(scorer, model_cfg, int(dm.n_features), dm.normalize,
                           best_score=best_score, checkpoint_path=ckpt_path,
                           log_dir=Path(trainer.logger.log_dir)
                           if getattr(trainer.logger, "log_dir", None) else None)
    ranker.save(out / "ranker")
    return ranker
