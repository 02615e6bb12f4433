"""Training entry point: ``train_ranker`` -> :class:`TrainedRanker` with ``.predict``.

A run writes under ``out_dir``: ``checkpoints/best.ckpt`` (Lightning checkpoint of the best
validation NDCG@k), ``checkpoints/resume.ckpt`` while it trains (the full training state a
rerun resumes from, :mod:`groupbias.ltr.resume`), ``logs/`` (CSV metrics), and ``ranker/``
(``model.pt``: the best weights as a plain ``state_dict``; ``ranker.json``: model config,
feature count, normalization, the recipe and the training's identity).
Weights are always loaded with ``torch.load(weights_only=True)``.

Reproducibility: weight initialization, dropout and the epoch plans draw from ``seed`` only.
The torch RNG is seeded inside ``torch.random.fork_rng``, so the caller's global RNG state is
left as it was. Two CPU runs with the same seed and inputs give identical predictions.
"""

from __future__ import annotations

import importlib.util
import inspect
import io
import signal
import sys
import warnings
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import Callback, EarlyStopping, ModelCheckpoint

from .._fast.threads import cores, idle_cores, on_main_thread, torch_cores
from ..core.errors import ParameterError
from ..core.io import jsonable, write_bytes_atomic, write_json_atomic
from ..core.validation import check_k, check_threads, choice, integer, is_integer, real
from .bars import progress_callbacks
from .datamodule import (
    BatchSpec,
    EvalBatches,
    FlatLists,
    RankingDataModule,
    as_flat_lists,
    gather_batch,
    gathers_on,
    host_tensors,
)
from .losses import LambdaLoss
from .model import ContextScorer, ScorerSpec
from .module import RankerModule, default_optimizer
from .resume import GlobalRandomState, checkpoint_plugins, resume_point
from .saved import (
    build_scorer,
    condition_folder,
    load_weights,
    on_device_choice,
    ranker_folder,
    read_info,
    read_state,
    scoring_device,
)

#: ``TrainerSpec.loggers`` names -> Lightning logger classes (CSV always works; the others
#: need their package: tensorboard, mlflow, wandb)
LOGGERS = {
    "csv": "CSVLogger",
    "tensorboard": "TensorBoardLogger",
    "mlflow": "MLFlowLogger",
    "wandb": "WandbLogger",
}


#: the packages each logger needs (any one of them)
LOGGER_PACKAGES = {
    "tensorboard": ("tensorboard", "tensorboardX"),
    "mlflow": ("mlflow",),
    "wandb": ("wandb",),
}
#: ``TrainerSpec.precision`` values Lightning accepts
PRECISIONS = (
    "64-true",
    "32-true",
    "16-mixed",
    "bf16-mixed",
    "16-true",
    "bf16-true",
    "transformer-engine",
    "transformer-engine-float16",
    "64",
    "32",
    "16",
    "bf16",
)
#: ``TrainerSpec.accelerator`` values
ACCELERATORS = ("auto", "cpu", "gpu", "cuda", "mps", "tpu", "hpu")


def make_loggers(names, out: Path) -> list:
    """Lightning loggers writing under ``out/logs`` (``names``: a name or a list of names of
    :data:`LOGGERS`, None for the CSV logger, which needs nothing extra; an empty list: no
    logger)."""
    import pytorch_lightning.loggers as L

    names = ["csv"] if names is None else [names] if isinstance(names, str) else list(names)
    out_loggers = []
    for name in names:
        if name not in LOGGERS:
            raise ParameterError("loggers", "names among " + ", ".join(LOGGERS), name)
        cls = getattr(L, LOGGERS[name])
        try:
            if name == "mlflow":
                out_loggers.append(
                    cls(experiment_name="groupbias", tracking_uri=f"file:{out / 'logs' / 'mlruns'}")
                )
            elif name == "wandb":
                out_loggers.append(cls(save_dir=str(out / "logs"), project="groupbias"))
            else:
                out_loggers.append(cls(str(out), name="logs"))
        except (ImportError, ModuleNotFoundError) as exc:
            raise ParameterError(
                "loggers", f"an installed logger package for {name!r}", name, fix=str(exc)
            ) from exc
    return out_loggers


@dataclass
class TrainedRanker:
    """A trained scorer with what is needed to score new lists.

    ``predict(data)`` (or ``predict(features, qptr)``) returns float64 scores [n_items] in the
    flat item order of ``data``; items of a query are comparable with each other only.
    ``device``: where to score (default: where the scorer is); ``on_device``: gather the
    padded batches there from the features, moved once (default: on a GPU), as
    ``batching.on_device`` does in training; the scores are the same bits either way.
    """

    scorer: ContextScorer
    model_cfg: dict
    n_features: int
    normalize: str | None
    best_score: float | None = None
    checkpoint_path: Path | None = None
    log_dir: Path | None = None
    meta: dict = field(default_factory=dict)

    def predict(
        self,
        data,
        qptr: np.ndarray | None = None,
        *,
        batch_size: int = 256,
        device: str | torch.device | None = None,
        on_device: bool | None = None,
    ) -> np.ndarray:
        """Score every item of ``data`` with the trained scorer.

        ``data``: a :class:`~groupbias.data.ranking_data.RankingData` (any object with
        ``features``, ``labels`` and ``qptr``) or a ``(features, labels, qptr)`` tuple; or the
        features alone with the query offsets as ``qptr`` (``predict(features, qptr)``). The
        features are normalized as in training (``normalize``) and must have the
        ``n_features`` columns the ranker was trained on (else :class:`ParameterError`).
        ``batch_size``: lists scored at a time (an integer >= 1); ``device`` and ``on_device``
        as in the class docstring: a device not present here, or an ``on_device`` other than
        True, False, None or ``"auto"``, is a :class:`ParameterError` naming it. Returns
        float64 scores [n_items] in the flat item order of ``data``; scores compare items of
        one query only. The scorer is put in eval mode for the call and back as it was after
        (no gradients are kept).
        """
        integer("batch_size", batch_size, low=1)
        if qptr is not None:
            data = (np.asarray(data), None, qptr)
        lists = as_flat_lists(data, normalize=self.normalize, name="data")
        if lists.features.shape[1] != self.n_features:
            raise ParameterError(
                "data.features",
                f"{self.n_features} feature columns (feature width "
                f"{lists.features.shape[1]}, the ranker expects {self.n_features})",
                lists.features.shape[1],
                fix="score the features the ranker was trained on (same dataset and loader)",
            )
        device = scoring_device(device, next(self.scorer.parameters()).device)
        gather = gathers_on(device, on_device_choice(on_device))
        scorer = self.scorer.to(device)
        was_training = scorer.training
        scorer.eval()
        out = np.zeros(lists.features.shape[0], dtype=np.float64)
        try:
            with torch.no_grad():
                for batch in _batches_on(lists, batch_size, device, gather):
                    mask = batch["mask"]
                    s = scorer(batch["features"], mask, batch["positions"])
                    out[batch["items"].numpy()] = s[mask].double().cpu().numpy()
        finally:
            scorer.train(was_training)
        return out

    def save(self, directory: str | Path) -> Path:
        """Write ``model.pt`` (state_dict) and ``ranker.json`` into ``directory``, each
        atomically (by rank 0 alone in a distributed run)."""
        d = Path(directory)
        state = {k: v.detach().cpu() for k, v in self.scorer.state_dict().items()}
        buf = io.BytesIO()
        torch.save(state, buf)
        write_bytes_atomic(d / "model.pt", buf.getvalue())
        info = {
            "model_cfg": jsonable(self.model_cfg),
            "n_features": int(self.n_features),
            "normalize": self.normalize,
            "best_score": self.best_score,
            **jsonable(self.meta),
        }
        write_json_atomic(d / "ranker.json", info)
        return d

    @classmethod
    def load(
        cls,
        directory: str | Path,
        *,
        condition: str | None = None,
        beta: float | None = None,
        dataset: str | None = None,
    ) -> TrainedRanker:
        """Rebuild a ranker written by :meth:`save` (weights loaded with weights_only=True):
        ``directory`` is the folder holding ``model.pt`` and ``ranker.json``, or a
        condition's folder of a run (``<run folder>/models/<dataset>/beta0.8/corrected``)
        holding it as ``ranker/``; with ``condition`` (and ``beta`` unless it is
        ``"full"``; ``dataset`` where the run has several), ``directory`` is the run folder
        itself (:func:`groupbias.ltr.saved.condition_folder`). A damaged or mismatched file
        is a :class:`~groupbias.core.errors.DataFormatError` naming it and what to do."""
        if condition is not None or beta is not None or dataset is not None:
            directory = condition_folder(directory, condition, beta, dataset)
        d = ranker_folder(directory)
        info = read_info(d / "ranker.json")
        scorer = build_scorer(d / "ranker.json", info)
        load_weights(scorer, read_state(d / "model.pt"), d / "model.pt", info)
        scorer.eval()
        return cls(
            scorer,
            info["model_cfg"],
            info["n_features"],
            info["normalize"],
            best_score=info.get("best_score"),
        )


def _batches_on(lists: FlatLists, batch_size: int, device: torch.device, gather: bool):
    """The evaluation batches of ``lists`` with their tensors on ``device`` (``items`` kept on
    the host); ``gather``: padded there, from the features moved once."""
    batches = EvalBatches(lists, batch_size=batch_size, split="data" if gather else None)
    feats = host_tensors(lists)[0].to(device) if gather else None
    for b in range(len(batches)):
        batch = {
            k: v.to(device) if isinstance(v, torch.Tensor) and k != "items" else v
            for k, v in batches[b].items()
        }
        yield batch if feats is None else gather_batch(batch, feats, None)


def load_best_state(checkpoint: str | Path, prefix: str = "scorer.") -> dict[str, torch.Tensor]:
    """The scorer weights in a Lightning checkpoint (loaded with weights_only=True)."""
    ckpt = torch.load(checkpoint, map_location="cpu", weights_only=True)
    return {k[len(prefix) :]: v for k, v in ckpt["state_dict"].items() if k.startswith(prefix)}


_OWN_CALLBACKS = ("callbacks", "logger", "default_root_dir", "use_distributed_sampler")


@dataclass(frozen=True)
class TrainerSpec:
    """Lightning settings of a training run (the ``trainer`` config group).

    ``max_epochs``; ``patience``: early stopping on the validation NDCG@eval_k after that many
    epochs without improvement of at least ``min_delta`` (None: no early stopping);
    ``eval_k`` / ``eval_gain``: the validation NDCG's cutoff and gain; ``accelerator``,
    ``devices``, ``strategy``, ``precision``, ``enable_progress_bar``, ``log_every_n_steps``:
    ``pytorch_lightning.Trainer`` keywords (``precision="bf16-mixed"`` on a GPU; the bars show
    only where standard output is a terminal, and not with the run's ``progress=false``);
    ``loggers``: names among csv, tensorboard, mlflow, wandb (the last three need their
    package); ``extra``: any other ``pytorch_lightning.Trainer`` keyword; ``threads``:
    torch's intra-op threads while training (set for the fit only, :func:`torch_cores`;
    None: the cores this process may use, so the same machine always trains
    with the same count and gives the same bits; ``"auto"``: the cores the 1-minute load
    average leaves idle when training starts, at least 1, see :func:`idle_cores`, for a
    machine shared with other jobs); ``checkpoint_every_min``: minutes of training between
    saves of the full training state within an epoch, besides the save at every epoch's
    start (None: at epoch starts only; :mod:`groupbias.ltr.resume`).
    """

    max_epochs: int = 20
    patience: int | None = 5
    min_delta: float = 0.0
    eval_k: int | None = 10
    eval_gain: str = "exp2"
    accelerator: str = "auto"
    devices: int | str | list = "auto"
    strategy: str = "auto"
    precision: str = "32-true"
    enable_progress_bar: bool = True
    log_every_n_steps: int = 10
    loggers: tuple[str, ...] = ("csv",)
    extra: Mapping = field(default_factory=dict)
    threads: int | str | None = None
    checkpoint_every_min: float | None = 10.0

    def __post_init__(self) -> None:
        integer("max_epochs", self.max_epochs, low=1)
        if self.checkpoint_every_min is not None:
            real(
                "checkpoint_every_min", self.checkpoint_every_min, low=0.0, low_open=True,
                what="a number of minutes > 0, or null (saves at epoch starts only)",
            )  # fmt: skip
        if isinstance(self.threads, str) and self.threads != "auto":
            raise ParameterError(
                "threads", "an integer >= 1, null (every core) or 'auto' (the idle cores)",
                self.threads,
            )  # fmt: skip
        if self.threads is not None and self.threads != "auto":
            check_threads(self.threads)
        if self.patience is not None:
            integer("patience", self.patience, low=1)
        real("min_delta", self.min_delta, low=0.0)
        check_k(self.eval_k, "eval_k")
        choice("eval_gain", self.eval_gain, ("exp2", "linear"))
        for name in ("accelerator", "strategy", "precision"):
            if not isinstance(getattr(self, name), str):
                raise ParameterError(name, "a string", getattr(self, name))
        choice("precision", self.precision, PRECISIONS)
        d = self.devices
        if not (
            d == "auto"
            or (isinstance(d, int) and is_integer(d) and (d >= 1 or d == -1))
            or (isinstance(d, (list, tuple)) and d and all(is_integer(x) and x >= 0 for x in d))
        ):
            raise ParameterError(
                "devices", "'auto', a device count >= 1 (-1: all) or a list of device indices", d
            )
        self._check_accelerator()
        if not isinstance(self.enable_progress_bar, bool):
            raise ParameterError("enable_progress_bar", "true or false", self.enable_progress_bar)
        integer("log_every_n_steps", self.log_every_n_steps, low=1)
        names = [self.loggers] if isinstance(self.loggers, str) else list(self.loggers)
        for name in names:
            choice("loggers", name, tuple(LOGGERS))
            if not any(importlib.util.find_spec(p) for p in LOGGER_PACKAGES.get(name, ("os",))):
                raise ParameterError(
                    "loggers",
                    f"loggers whose package is installed ({name} needs "
                    f"{' or '.join(LOGGER_PACKAGES[name])})",
                    name,
                    fix=f"pip install {LOGGER_PACKAGES[name][0]}, or drop {name}",
                )
        object.__setattr__(self, "loggers", tuple(names))
        self._check_extra()

    def _check_accelerator(self) -> None:
        """An accelerator asked for by name must be present (else Lightning would fail, or
        ``auto`` would fall back to the CPU, only after the data has loaded)."""
        acc = self.accelerator
        if acc not in ACCELERATORS:
            raise ParameterError("accelerator", "one of " + ", ".join(ACCELERATORS), acc)
        if acc in ("gpu", "cuda", "mps"):
            mps = getattr(torch.backends, "mps", None)
            present = torch.cuda.is_available() or (
                acc != "cuda" and mps is not None and mps.is_available()
            )
            if not present:
                raise ParameterError(
                    "accelerator",
                    f"an accelerator that is present ({acc!r} asks for a GPU and none is found)",
                    acc,
                    fix="use trainer=cpu (or trainer.accelerator=cpu)",
                )

    def _check_extra(self) -> None:
        if not isinstance(self.extra, Mapping):
            raise ParameterError(
                "extra", "a mapping of pytorch_lightning.Trainer keywords", self.extra
            )
        known = set(inspect.signature(pl.Trainer.__init__).parameters) - {"self"}
        for k in self.extra:
            if k in _OWN_CALLBACKS or k in {f.name for f in fields(self)}:
                raise ParameterError(
                    f"extra.{k}",
                    "a keyword not set elsewhere (train_ranker provides callbacks and loggers)",
                    k,
                )
            if k not in known:
                raise ParameterError(f"extra.{k}", "a pytorch_lightning.Trainer keyword", k)

    def n_threads(self) -> int:
        """``threads``; None: every core this process may use; ``"auto"``: :func:`idle_cores`."""
        if self.threads is None:
            return cores()
        return idle_cores() if self.threads == "auto" else check_threads(self.threads)

    def trainer_kwargs(self) -> dict:
        """Keywords of ``pytorch_lightning.Trainer`` (without callbacks and loggers)."""
        return {
            "max_epochs": self.max_epochs,
            "accelerator": self.accelerator,
            "devices": self.devices if not isinstance(self.devices, tuple) else list(self.devices),
            "strategy": self.strategy,
            "precision": self.precision,
            # Lightning's bars redraw a line: on a terminal only, never in a log file
            "enable_progress_bar": self.enable_progress_bar and sys.stdout.isatty(),
            "log_every_n_steps": self.log_every_n_steps,
            "enable_model_summary": False,
            **dict(self.extra),
        }


@dataclass(frozen=True)
class RankerRecipe:
    """Everything a ranker is trained with, each built from its config group: ``model``
    (:class:`~groupbias.ltr.model.ScorerSpec`), ``loss`` (``loss(scores, labels, mask)``),
    ``optimizer`` (``optimizer(params)``), ``scheduler`` (None or ``scheduler(optimizer)``),
    ``trainer`` (:class:`TrainerSpec`) and ``batching`` (:class:`BatchSpec`)."""

    model: ScorerSpec
    loss: Callable = field(default_factory=LambdaLoss)
    optimizer: Callable = default_optimizer
    scheduler: Callable | None = None
    trainer: TrainerSpec = field(default_factory=TrainerSpec)
    batching: BatchSpec = field(default_factory=BatchSpec)

    def describe(self) -> dict:
        """What the run trains with, as recorded in ``ranker.json``."""
        loss = (
            asdict(self.loss)
            if is_dataclass(self.loss) and not isinstance(self.loss, type)
            else repr(self.loss)
        )
        return {
            "model": self.model.as_dict(),
            "loss": {
                "class": type(self.loss).__name__,
                **(loss if isinstance(loss, dict) else {"repr": loss}),
            },
            "optimizer": _describe_factory(self.optimizer),
            "scheduler": _describe_factory(self.scheduler),
            "trainer": jsonable(asdict(self.trainer)),
            "batching": asdict(self.batching),
        }


def _describe_factory(factory) -> dict | None:
    """``{"class": "torch.optim.adam.Adam", "lr": 0.001, ...}`` for a partial of a class."""
    if factory is None:
        return None
    func = getattr(factory, "func", None)
    if func is None:
        return {"repr": repr(factory)}
    return {
        "class": f"{func.__module__}.{func.__qualname__}",
        **jsonable(dict(getattr(factory, "keywords", {}) or {})),
    }


def _width(dm: RankingDataModule) -> int:
    """The feature count of the data module's lists (set once any split is given)."""
    if dm.n_features is None:
        raise ParameterError("train", "a split with features", None)
    return int(dm.n_features)


def _callbacks(spec: TrainerSpec, out: Path, has_valid: bool):
    if not has_valid:
        return [], None
    monitor = f"val_ndcg@{spec.eval_k}" if spec.eval_k is not None else "val_ndcg"
    ckpt = ModelCheckpoint(
        dirpath=out / "checkpoints",
        filename="best",
        monitor=monitor,
        mode="max",
        save_top_k=1,
        save_weights_only=False,
        enable_version_counter=False,
    )
    callbacks: list = [ckpt]
    if spec.patience is not None:
        callbacks.append(
            EarlyStopping(
                monitor=monitor, mode="max", patience=spec.patience, min_delta=spec.min_delta
            )
        )
    return callbacks, ckpt


def _fit(
    recipe: RankerRecipe, dm: RankingDataModule, out: Path, seed: int, has_valid: bool, resume
):
    """Fit with ``trainer.threads`` intra-op threads (restored afterwards); ``resume``: the
    :class:`~groupbias.ltr.resume.ResumeCheckpoint` of the run, and the file it resumes from
    (or None)."""
    spec = recipe.trainer
    callbacks, ckpt = _callbacks(spec, out, has_valid)
    settings = spec.trainer_kwargs()
    callbacks = [*callbacks, *progress_callbacks(settings["enable_progress_bar"])]
    callbacks += [resume[0], _StopWatch()]
    settings["plugins"] = checkpoint_plugins(settings.pop("plugins", None))
    if not has_valid:
        settings.update(limit_val_batches=0, num_sanity_val_steps=0)
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    with torch_cores(spec.n_threads()):
        module, trainer = _fit_seeded(
            recipe, dm, out, seed, callbacks, settings, devices, resume[1]
        )
    return module, trainer, ckpt


def _fit_seeded(recipe, dm, out, seed, callbacks, settings, devices, ckpt_path):
    """Build the scorer, module and trainer under a forked RNG seeded with ``seed``, fit
    (from ``ckpt_path``, a resume file, when given)."""
    spec = recipe.trainer
    with (
        torch.random.fork_rng(devices=devices),
        GlobalRandomState(),
        warnings.catch_warnings(),
    ):
        warnings.filterwarnings("ignore", message=".*does not have many workers.*")
        warnings.filterwarnings("ignore", message=".*number of training batches.*")
        # a mid-epoch state resumes exactly: the sampler starts at the saved batch
        warnings.filterwarnings("ignore", message=".*dataloader is not resumable.*")
        torch.manual_seed(seed)
        if devices:
            torch.cuda.manual_seed_all(seed)
        module = RankerModule(
            recipe.model.build(_width(dm)),
            loss=recipe.loss,
            optimizer=recipe.optimizer,
            scheduler=recipe.scheduler,
            eval_k=spec.eval_k,
            eval_gain=spec.eval_gain,
        )
        trainer = pl.Trainer(
            default_root_dir=str(out),
            callbacks=callbacks,
            logger=make_loggers(spec.loggers, out),
            use_distributed_sampler=False,
            **settings,
        )
        stop = next(c for c in callbacks if isinstance(c, _StopWatch))
        _fit_interruptibly(trainer, module, dm, ckpt_path, stop)
    return module, trainer


def _fit_interruptibly(trainer: pl.Trainer, module, dm, ckpt_path=None, stop=None) -> None:
    """``trainer.fit`` where Ctrl-C stops the run as anywhere else: Lightning answers a
    KeyboardInterrupt with its teardown, then ignores SIGINT for the rest of the process and
    exits with status 1; here the interrupt is raised again as a KeyboardInterrupt (the run
    ends ``interrupted`` and resumes) and the SIGINT handler found before is put back. Any
    other exit (``stop``, a :class:`_StopWatch` among its callbacks, saw no Ctrl-C: a Slurm
    job requeued by submitit exits with its own status) goes on as it is."""
    main = on_main_thread()
    handler = signal.getsignal(signal.SIGINT) if main else None
    try:
        # read by AtomicCheckpointIO, with weights_only=True
        trainer.fit(module, datamodule=dm, ckpt_path=ckpt_path)
    except SystemExit:
        if trainer.interrupted and (stop is None or isinstance(stop.exception, KeyboardInterrupt)):
            raise KeyboardInterrupt from None
        raise
    finally:
        if main and handler is not None:
            signal.signal(signal.SIGINT, handler)


class _StopWatch(Callback):
    """Keeps the exception that stopped a fit (Lightning's ``on_exception``)."""

    exception: BaseException | None = None

    def on_exception(self, trainer, pl_module, exception: BaseException) -> None:
        self.exception = exception


def train_ranker(
    train,
    valid,
    *,
    recipe: RankerRecipe,
    train_labels: np.ndarray | None = None,
    valid_labels: np.ndarray | None = None,
    seed: int = 0,
    out_dir: str | Path,
) -> TrainedRanker:
    """Train the context-aware scorer with Lightning (paper §6.1, "LTR model").

    Parameters
    ----------
    train, valid : ``RankingData`` (or ``(features, labels, qptr)``); ``valid`` may be None
        (then no early stopping and the last epoch's weights are kept)
    recipe : model, loss, optimizer, scheduler, trainer and batching (:class:`RankerRecipe`)
    train_labels : labels to train on, float [train.n_items] (biased or IPS-corrected
        attractiveness; default ``train.labels``); valid_labels: default ``valid.labels``
    seed : seeds initialization, dropout and the epoch plans
    out_dir : folder for checkpoints, logs and the saved ranker (``ranker.json`` records the
        recipe actually used)
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    seed = int(seed)
    b = recipe.batching
    dm = RankingDataModule(
        train, valid, train_labels=train_labels, valid_labels=valid_labels, seed=seed, **asdict(b)
    )
    resume = resume_point(out, recipe.describe(), seed, recipe.trainer, dm)
    if resume[0].finished:  # trained into this folder before, from the same recipe and data
        return _trained_before(out, resume[0].identity)
    module, trainer, ckpt = _fit(recipe, dm, out, seed, valid is not None, resume)
    ranker = _trained(recipe, dm, module, trainer, ckpt, resume[0].identity)
    ranker.save(out / "ranker")
    resume[0].path.unlink(missing_ok=True)  # trained: nothing to resume
    return ranker


def _trained(recipe: RankerRecipe, dm, module, trainer, ckpt, identity: str) -> TrainedRanker:
    """The ranker a fit made: its best checkpoint's weights (the last ones without
    validation)."""
    scorer = module.scorer.cpu()
    best_score = ckpt_path = None
    if ckpt is not None and ckpt.best_model_path:
        ckpt_path = Path(ckpt.best_model_path)
        scorer.load_state_dict(load_best_state(ckpt_path))
        if ckpt.best_model_score is not None:
            best_score = float(ckpt.best_model_score)
    scorer.eval()
    log_dir = getattr(trainer.logger, "log_dir", None)
    return TrainedRanker(
        scorer,
        recipe.model.as_dict(),
        _width(dm),
        dm.normalize,
        best_score=best_score,
        checkpoint_path=ckpt_path,
        log_dir=Path(log_dir) if log_dir else None,
        meta={"recipe": recipe.describe(), "identity": identity},
    )


def _trained_before(out: Path, identity: str) -> TrainedRanker:
    """The ranker saved in ``out/ranker`` by a training of this ``identity``."""
    ranker = TrainedRanker.load(out / "ranker")
    best = out / "checkpoints" / "best.ckpt"
    ranker.checkpoint_path = best if best.is_file() else None
    recipe = read_info(out / "ranker" / "ranker.json").get("recipe")
    ranker.meta = {"recipe": recipe, "identity": identity}
    return ranker
