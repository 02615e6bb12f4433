"""Resume inside a ranker: the full training state, saved while it trains, and a rerun that
continues from it.

``checkpoints/resume.ckpt`` in the ranker's folder holds Lightning's checkpoint (weights,
optimizer, learning-rate schedulers, early stopping, the best checkpoint's record, the loops'
epoch and step) and, under :data:`STATE_KEY`, what Lightning leaves out: the training's
identity (:func:`training_identity`), the random states (torch's CPU and CUDA generators,
numpy's and Python's global ones, as tensors and numbers) and where it was saved (epoch and
batch: the batch sampler's position; its plans are drawn from
``np.random.default_rng([seed, epoch])``, so nothing else is needed to draw the next
batches). It is written atomically (a temporary file, fsync, rename: :class:`AtomicCheckpointIO`,
which also writes ``best.ckpt``) and read with ``torch.load(weights_only=True)``:

- at the start of every epoch after the first: the state at the end of the previous one,
  after its validation, early stopping and scheduler step;
- within an epoch, after a batch, once ``trainer.checkpoint_every_min`` minutes have passed
  since the last save (not after an epoch's last batch: the epoch's own save follows).

A rerun of ``train_ranker`` into the same folder with the same identity continues from the
saved state (logged as ``resuming <ranker> from epoch 3/5``); another recipe, seed or data
never resumes from it (the file is replaced). Once the ranker is trained the file is removed.
A ranker trained before into the same folder with the same identity
(its ``ranker.json`` records it) is loaded, not trained again: a rerun of a step that was
stopped after some of its rankers were trained trains only the others.
On the CPU, with the same seed and thread count, a resumed ranker's weights equal those of
one never interrupted, bit for bit, whether the save came at an epoch's start or mid-epoch
(``tests/ltr/test_resume.py``, ``tests/app/test_resume_training.py``)."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch
from lightning_fabric.plugins.io.torch_io import TorchCheckpointIO
from pytorch_lightning.callbacks import Callback

from .. import __version__
from ..core.io import write_bytes_atomic
from .datamodule import FlatLists

log = logging.getLogger("groupbias.ltr")

#: the checkpoint's key of what :class:`ResumeCheckpoint` adds
STATE_KEY = "groupbias_resume"
#: the resume file, relative to the ranker's folder
RESUME_FILE = Path("checkpoints") / "resume.ckpt"
#: ``TrainerSpec`` fields that change how a ranker trains is watched, not what it learns
NOT_IDENTITY = ("checkpoint_every_min", "enable_progress_bar", "log_every_n_steps", "loggers")


class AtomicCheckpointIO(TorchCheckpointIO):
    """Lightning's checkpoints written atomically (temporary file, fsync, rename: a killed
    write leaves the previous file whole) and read with ``weights_only=True``."""

    def save_checkpoint(self, checkpoint, path, storage_options=None) -> None:
        buf = io.BytesIO()
        torch.save(checkpoint, buf)
        write_bytes_atomic(path, buf.getvalue())

    def load_checkpoint(self, path, map_location=None, weights_only=None):
        return torch.load(path, map_location=map_location or "cpu", weights_only=True)


def checkpoint_plugins(given=None) -> list:
    """The trainer's ``plugins``: :class:`AtomicCheckpointIO` and, on Slurm, Lightning's
    Slurm environment without its own requeue (its checkpoint is taken inside the signal
    handler, mid-step, and would be loaded whatever it was saved for; submitit requeues
    the job and the rerun resumes from the resume file), then ``given`` (``trainer.extra``'s
    ``plugins``)."""
    from lightning_fabric.plugins.environments import SLURMEnvironment

    plugins: list = [AtomicCheckpointIO()]
    if SLURMEnvironment.detect():
        plugins.append(SLURMEnvironment(auto_requeue=False))
    return [*plugins, *([] if given is None else given if isinstance(given, list) else [given])]


def say_resuming(out: Path, saved: dict, max_epochs: int) -> None:
    """Log and print (stderr) that the ranker of ``out`` resumes from ``saved``."""
    try:
        name = str(out.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        name = str(out)
    where = f"epoch {saved['epoch'] + 1}/{max_epochs}"  # the epoch it goes on with, from 1
    if saved["batch"]:
        where += f", batch {saved['batch'] + 1}"
    msg = f"resuming {name} from {where}"
    log.info(msg)
    print(f"groupbias: {msg}", file=sys.stderr, flush=True)


def training_identity(describe: dict, seed: int, lists: Sequence[FlatLists | None]) -> str:
    """A digest of what a ranker learns from: the recipe (``describe``: its record, less the
    :data:`NOT_IDENTITY` trainer fields), the seed, the package version and every byte of
    the training and validation lists (features, labels, query offsets)."""
    trainer = {k: v for k, v in describe.get("trainer", {}).items() if k not in NOT_IDENTITY}
    head = {**describe, "trainer": trainer, "seed": int(seed), "groupbias": __version__}
    h = hashlib.sha256(json.dumps(head, sort_keys=True, default=str).encode())
    for each in lists:
        parts = () if each is None else (each.features, each.labels, each.qptr)
        h.update(f"|{len(parts)}".encode())
        for a in parts:
            a = np.ascontiguousarray(a)
            h.update(f"{a.dtype.str}{a.shape}".encode())
            h.update(a.data)
    return h.hexdigest()[:32]


def rng_state() -> dict:
    """The global random states as tensors and numbers (what ``weights_only`` loads)."""
    name, keys, pos, has_gauss, gauss = np.random.get_state()
    version, py_state, py_gauss = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "numpy": {
            "name": name,
            "keys": torch.from_numpy(np.asarray(keys, dtype=np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "gauss": float(gauss),
        },
        "python": {"version": version, "state": list(py_state), "gauss": py_gauss},
    }


def set_rng_state(state: dict) -> None:
    """Put back the random states of :func:`rng_state`."""
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    n = state["numpy"]
    keys = n["keys"].numpy().astype(np.uint32)
    np.random.set_state((n["name"], keys, n["pos"], n["has_gauss"], n["gauss"]))
    p = state["python"]
    random.setstate((p["version"], tuple(int(x) for x in p["state"]), p["gauss"]))


class GlobalRandomState:
    """numpy's and Python's global random states put back on exit (torch's is forked by
    ``torch.random.fork_rng``): a resumed ranker restores them, and the process's state is
    left as it was."""

    def __enter__(self) -> GlobalRandomState:
        self._numpy, self._python = np.random.get_state(), random.getstate()
        return self

    def __exit__(self, *exc) -> None:
        np.random.set_state(self._numpy)
        random.setstate(self._python)


def read_resume_state(path: Path, identity: str) -> dict | None:
    """The saved state of ``path`` when it is a resume file of this ``identity``, else None
    (a file of another recipe or data, or one that cannot be read, is removed)."""
    if not path.is_file():
        return None
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        state = ckpt[STATE_KEY]
        ok = state["identity"] == identity
        found = {k: state[k] for k in ("epoch", "batch")}
    except Exception as exc:  # noqa: BLE001 - a damaged file is never resumed from
        log.warning("not resuming from %s: it cannot be read (%s)", path, exc)
        ok = False
    if not ok:
        log.info("not resuming from %s: it was saved for other settings or data", path)
        path.unlink(missing_ok=True)
        return None
    return found


class ResumeCheckpoint(Callback):
    """Saves the training state to ``path`` (module docstring) and puts back the random states
    and the sampler's position of a state it resumes from.

    ``identity``: :func:`training_identity`; ``every_min``: minutes between saves within an
    epoch (None: at epoch starts only)."""

    def __init__(self, path: Path, identity: str, every_min: float | None) -> None:
        self.path, self.identity, self.every_min = Path(path), identity, every_min
        self._saving: dict | None = None
        self._pending_rng: dict | None = None
        self._replayed_start = False
        self._last = time.monotonic()
        #: the ranker was trained before (:func:`resume_point`): nothing to fit
        self.finished = False

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._last = time.monotonic()

    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._replayed_start:  # the hook of the epoch this run resumed at: saved already
            self._replayed_start = False
        elif trainer.current_epoch > 0:
            self._save(trainer, trainer.current_epoch, 0)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx: int) -> None:
        if self._pending_rng is not None:
            set_rng_state(self._pending_rng)
            self._pending_rng = None

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx: int) -> None:
        if self.every_min is None or batch_idx + 1 >= trainer.num_training_batches:
            return
        due = time.monotonic() - self._last >= 60.0 * self.every_min
        if trainer.world_size > 1:  # every rank saves together, or none does
            due = trainer.strategy.reduce_boolean_decision(due, all=False)
        if due:
            self._save(trainer, trainer.current_epoch, batch_idx + 1)

    def _save(self, trainer: pl.Trainer, epoch: int, batch: int) -> None:
        self._saving = {
            "identity": self.identity,
            "epoch": int(epoch),
            "batch": int(batch),
            "rng": rng_state(),
        }
        try:
            trainer.save_checkpoint(self.path, weights_only=False)
        finally:
            self._saving = None
        self._last = time.monotonic()

    def on_save_checkpoint(self, trainer, pl_module, checkpoint: dict) -> None:
        if self._saving is None:  # the resume file only, not best.ckpt
            return
        checkpoint[STATE_KEY] = self._saving
        if not self._saving["batch"]:
            # Lightning counts the epoch that starts as begun; its restart from there skips
            # that epoch. Saved as the previous epoch's end: a rerun starts the epoch afresh
            e = self._saving["epoch"]
            progress = checkpoint["loops"]["fit_loop"]["epoch_progress"]
            for counts in (progress["total"], progress["current"]):
                counts.update(ready=e, started=e, processed=e, completed=e)

    def on_load_checkpoint(self, trainer, pl_module, checkpoint: dict) -> None:
        state = checkpoint[STATE_KEY]
        if state["batch"]:  # the next batch draws from the state saved after the last one
            self._pending_rng = state["rng"]
        else:  # as at the start of an epoch: the loader's iterator draws first
            set_rng_state(state["rng"])
            self._replayed_start = True
        trainer.datamodule.resume_at(state["epoch"], state["batch"])


def resume_point(
    out: Path, describe: dict, seed: int, spec, dm
) -> tuple[ResumeCheckpoint, Path | None]:
    """The :class:`ResumeCheckpoint` of a ranker trained into ``out`` (``describe``: its
    recipe's record; ``spec``: its ``TrainerSpec``; ``dm``: its data module) and the resume
    file to start from, when one of the same identity is there (said, see
    :func:`say_resuming`)."""
    identity = training_identity(describe, seed, [dm.train_lists, dm.valid_lists])
    path = out / RESUME_FILE
    callback = ResumeCheckpoint(path, identity, spec.checkpoint_every_min)
    if trained_before(out, identity):
        callback.finished = True
        log.info("reusing %s: trained before from the same recipe and data", out)
        return callback, None
    saved = read_resume_state(path, identity)
    if saved is not None:
        say_resuming(out, saved, spec.max_epochs)
    return callback, path if saved else None


def trained_before(out: Path, identity: str) -> bool:
    """Whether ``out/ranker`` holds a ranker trained with this ``identity`` (its
    ``ranker.json``, written after ``model.pt``, records it)."""
    try:
        info = json.loads((out / "ranker" / "ranker.json").read_text())
    except (OSError, ValueError):
        return False
    found = isinstance(info, dict) and info.get("identity") == identity
    return found and (out / "ranker" / "model.pt").is_file()
