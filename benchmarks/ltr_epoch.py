"""One LTR training epoch: ``train_ranker`` vs allRank's own training loop, same data.

Both train the Table 2 ranker (``experiment=table2``: the ``attention_allrank`` model, the
project's default LambdaLoss weighting ``loss=lambdarank``, Adam lr 1e-3, no scheduler) for
one epoch on the same synthetic MSLR-shaped data (``make_synthetic_splits``, ``--queries``
queries, lists of 60..180 items, 136 features, train / valid / test 60 / 20 / 20), the same
batch size and slate length (the project's ``batching`` defaults unless ``--batch`` /
``--slate`` are given) and the same torch thread count (``--threads``, set explicitly on
both):

* ours: the whole ``train_ranker`` call with ``trainer.max_epochs=1``,
  ``trainer.patience=null``, no progress bar and no logger (``trainer.loggers=[]``):
  Lightning's sanity check, the epoch, its
  validation (NDCG@10), the best checkpoint and the saved ranker;
* allRank: ``allrank.training.train_utils.fit(epochs=1, ...)``, its published loop: the
  epoch, then the training metrics (NDCG@10), the validation loss and metrics, and the
  saved ``model.pkl``; its data come from ``LibSVMDataset`` (train: ``FixLength(slate)``
  and ``ToTensor``; valid: padded to the longest list, as ``load_libsvm_dataset_role``
  does) and ``create_data_loaders``, its loss is ``allrank.models.losses.lambdaLoss`` with
  the matching scheme (``lambdaRank_scheme``), its model ``make_model`` with our
  architecture (``benchmarks/ranker.py``'s ``build_allrank``). Building the datasets, the
  model and the optimizer is not timed.

Both train on the same features: the splits are z-scored once by ours
(``PreparedSplits`` -> ``zscore_within_queries``) and that output is what allRank's
dataset holds too. The two runs alternate, ``--rounds`` rounds; medians are reported.

allRank 1.4.3 is installed with --no-deps, and the packages it imports but this benchmark
never uses are not installed (torchvision would fight the pinned CPU torch): before allRank
is imported, minimal stand-ins are registered in ``sys.modules`` for those that are absent:
``torchvision.transforms.Compose`` (applies its transforms in order),
``tensorboardX.SummaryWriter`` (``add_scalar`` and ``close`` do nothing), and the names
``allrank.utils.file_utils`` imports from ``gcsfs`` and ``pkg_resources`` (for gs:// paths
and packaged configs; they raise if called). None of them is a dependency of the project.

    .venv/bin/python benchmarks/ltr_epoch.py [--queries 1500] [--rounds 3] [--threads 2]
    CUDA_VISIBLE_DEVICES=0 .venv/bin/python benchmarks/ltr_epoch.py --device cuda \\
        --queries 30000 [--precision bf16-mixed]

``--device cuda`` trains ours with ``trainer=gpu`` (one device, ``--precision``, default
``32-true`` for both; with ``bf16-mixed`` allRank's ``fit`` runs under
``torch.autocast(bfloat16)``). allRank multiplies the batch size by the visible GPU count,
so exactly one GPU must be visible.

Prints both medians, each loop's training steps per epoch, the load average, and
``ratio: <allRank median / ours median>`` last.
"""

from __future__ import annotations

import argparse
import gc
import logging
import statistics
import sys
import tempfile
import time
import types
import warnings
from contextlib import contextmanager, nullcontext
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import cores, load  # noqa: E402
from ranker import build_allrank  # noqa: E402


def _unused(name: str):
    """A stand-in callable for what this benchmark never reaches (raises if called)."""

    def call(*args, **kwargs):
        raise RuntimeError(f"{name} is a stand-in in benchmarks/ltr_epoch.py")

    return call


class _Compose:
    """``torchvision.transforms.Compose``: applies the transforms in order."""

    def __init__(self, transforms) -> None:
        self.transforms = list(transforms)

    def __call__(self, sample):
        for t in self.transforms:
            sample = t(sample)
        return sample


class _SummaryWriter:
    """``tensorboardX.SummaryWriter`` writing nothing."""

    def __init__(self, *args, **kwargs) -> None:
        pass

    def add_scalar(self, *args, **kwargs) -> None:
        pass

    def close(self) -> None:
        pass


@contextmanager
def allrank_stand_ins():
    """While allRank is imported: stand-ins registered in ``sys.modules`` for the packages
    it imports that are not installed (it was installed with --no-deps):
    ``torchvision.transforms.Compose``, ``tensorboardX.SummaryWriter``, and the names
    ``allrank.utils.file_utils`` imports from ``gcsfs`` and ``pkg_resources`` (used for
    gs:// paths and packaged configs only). Yields the list of names registered; they are
    taken out of ``sys.modules`` again on exit (allRank keeps its references), so that
    Lightning's probes for installed packages do not see them."""
    import importlib.util

    stand_ins = {
        "torchvision.transforms": {"Compose": _Compose},
        "tensorboardX": {"SummaryWriter": _SummaryWriter},
        "gcsfs": {"GCSFileSystem": _unused("gcsfs.GCSFileSystem")},
        "pkg_resources": {
            "Requirement": types.SimpleNamespace(parse=_unused("pkg_resources.Requirement")),
            "resource_filename": _unused("pkg_resources.resource_filename"),
        },
    }
    done, added = [], []
    for dotted, attrs in stand_ins.items():
        top = dotted.split(".")[0]
        if importlib.util.find_spec(top) is not None:
            continue
        parent = None
        for i, part in enumerate(dotted.split(".")):
            name = ".".join(dotted.split(".")[: i + 1])
            if name not in sys.modules:
                sys.modules[name] = types.ModuleType(name)
                added.append(name)
            mod = sys.modules[name]
            if parent is not None:
                setattr(parent, part, mod)
            parent = mod
        for k, v in attrs.items():
            setattr(parent, k, v)
        done.append(dotted)
    try:
        yield done
    finally:
        for name in added:
            sys.modules.pop(name, None)


def allrank_dataset(lists, transform):
    """allRank's ``LibSVMDataset`` of flat lists (features as the sparse matrix that
    ``load_svmlight_file`` would give, one query id per item)."""
    import numpy as np
    import scipy.sparse as sp
    from allrank.data.dataset_loading import LibSVMDataset

    sizes = np.diff(lists.qptr)
    qids = np.repeat(np.arange(sizes.size), sizes)
    ds = LibSVMDataset(
        sp.csr_matrix(lists.features), lists.labels.astype(np.float64), qids, transform=None
    )
    ds.transform = transform(ds)
    return ds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=1500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads for both (default: the cores the load average leaves idle, "
        "taken once at start)",
    )
    ap.add_argument("--batch", type=int, default=None, help="queries per step (batching default)")
    ap.add_argument("--slate", type=int, default=None, help="slate length (batching default)")
    ap.add_argument("--precision", default="32-true", choices=["32-true", "bf16-mixed"])
    ap.add_argument("--workers", type=int, default=0, help="allRank's DataLoader workers")
    args = ap.parse_args()

    import numpy as np
    import torch

    with allrank_stand_ins() as stand_ins:
        from allrank.data.dataset_loading import (
            FixLength,
            ToTensor,
            create_data_loaders,
            fix_length_to_longest_slate,
            transforms,
        )
        from allrank.models.losses import lambdaLoss
        from allrank.training.train_utils import fit
    from hydra import compose, initialize_config_dir

    from data_loaders.synthetic import make_synthetic_splits
    from groupbias.app.cli import CONFIG_DIR
    from groupbias.app.config import build_setup
    from groupbias.ltr.datamodule import PreparedSplits
    from groupbias.ltr.train import idle_cores, train_ranker

    for name in ("pytorch_lightning", "lightning_fabric", "lightning.pytorch"):
        logging.getLogger(name).setLevel(logging.WARNING)  # the banners, on both loops' runs
    warnings.filterwarnings("ignore", module="pytorch_lightning")
    threads = args.threads or idle_cores()
    torch.set_num_threads(threads)
    device = torch.device(args.device)
    overrides = [
        "experiment=table2",
        f"trainer={'gpu' if device.type == 'cuda' else 'cpu'}",
        "trainer.max_epochs=1",
        "trainer.patience=null",
        "trainer.enable_progress_bar=false",
        "trainer.loggers=[]",
        f"trainer.threads={threads}",
        f"trainer.precision={args.precision}",
    ]
    if device.type == "cuda":
        overrides.append("trainer.devices=1")
    if args.batch:
        overrides.append(f"batching.batch_size={args.batch}")
    if args.slate:
        overrides.append(f"batching.slate_length={args.slate}")
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=overrides)
    recipe = build_setup(cfg)[0].recipe
    batch, slate = recipe.batching.batch_size, recipe.batching.slate_length
    if slate is None:
        raise SystemExit("allRank needs a slate length: pass --slate")
    weighting = recipe.loss.weighting
    loss = recipe.loss
    if type(loss).__name__ != "LambdaLoss" or loss.k is not None or loss.gain != "exp2":
        raise SystemExit(f"the recipe's loss has no allRank counterpart here: {recipe.loss}")
    loss_a = partial(
        lambdaLoss,
        weighing_scheme=f"{weighting}_scheme",
        sigma=recipe.loss.sigma,
        mu=recipe.loss.mu,
        eps=recipe.loss.eps,
        reduction=recipe.loss.reduction,
    )
    opt_kwargs = dict(getattr(recipe.optimizer, "keywords", {}) or {})
    opt_class = recipe.optimizer.func
    if recipe.scheduler is not None:
        raise SystemExit("the recipe has a scheduler; this benchmark compares runs without one")
    if device.type == "cuda" and torch.cuda.device_count() != 1:
        raise SystemExit("allRank multiplies the batch by the GPU count: set CUDA_VISIBLE_DEVICES")

    splits = make_synthetic_splits(
        n_queries=args.queries, list_size=(60, 180), n_features=136, seed=0
    )
    prepared = PreparedSplits(splits, recipe.batching.normalize)
    train, valid = prepared["train"], prepared["valid"]
    n_features = train.features.shape[1]
    train_ds = allrank_dataset(
        train, lambda ds: transforms.Compose([FixLength(int(slate)), ToTensor()])
    )
    valid_ds = allrank_dataset(valid, fix_length_to_longest_slate)
    train_dl, valid_dl = create_data_loaders(
        train_ds, valid_ds, num_workers=args.workers, batch_size=batch
    )
    if train_dl.batch_size != batch:
        raise SystemExit(f"allRank's batch is {train_dl.batch_size}, ours {batch}")
    config = types.SimpleNamespace(metrics={"ndcg": [recipe.trainer.eval_k]})
    config.val_metric = f"ndcg_{recipe.trainer.eval_k}"
    n_nonempty = int(np.count_nonzero(np.diff(train.qptr)))
    steps_ours = -(-n_nonempty // batch)
    steps_allrank = len(train_dl)

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize()

    def run_ours(tmp: Path) -> float:
        sync()
        t0 = time.perf_counter()
        train_ranker(train, valid, recipe=recipe, seed=0, out_dir=tmp / "ours")
        sync()
        return time.perf_counter() - t0

    def run_allrank(tmp: Path) -> float:
        torch.manual_seed(0)
        np.random.seed(0)
        model = build_allrank(recipe.model.as_dict(), n_features).to(device)
        optimizer = opt_class(model.parameters(), **opt_kwargs)
        autocast = (
            torch.autocast(device_type=device.type, dtype=torch.bfloat16)
            if args.precision == "bf16-mixed"
            else nullcontext()
        )
        (tmp / "allrank").mkdir()
        sync()
        t0 = time.perf_counter()
        with autocast:
            fit(
                epochs=1,
                model=model,
                loss_func=loss_a,
                optimizer=optimizer,
                scheduler=None,
                train_dl=train_dl,
                valid_dl=valid_dl,
                config=config,
                gradient_clipping_norm=None,
                early_stopping_patience=100,
                device=device,
                output_dir=str(tmp / "allrank"),
                tensorboard_output_path=str(tmp / "tb"),
            )
        sync()
        return time.perf_counter() - t0

    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(
        f"{args.queries} queries ({train.n_queries} train / {valid.n_queries} valid, "
        f"{train.features.shape[0]} training items x {n_features} features); batch {batch}, "
        f"slate {slate}; loss LambdaLoss {weighting}; device {device} ({name}), precision "
        f"{args.precision}; torch {torch.__version__}, {threads} threads ({cores()} cores), "
        f"load {load()}"
    )
    print(f"stand-ins for allRank's imports: {', '.join(stand_ins) or 'none'}")
    times: dict[str, list[float]] = {"ours": [], "allrank": []}
    runs = {"ours": run_ours, "allrank": run_allrank}
    for r in range(args.rounds):
        for key, fn in runs.items():
            gc.collect()
            with tempfile.TemporaryDirectory() as tmp:
                times[key].append(fn(Path(tmp)))
        print(
            f"  round {r + 1}: ours {times['ours'][-1]:7.2f} s, allRank "
            f"{times['allrank'][-1]:7.2f} s, load {load()}",
            flush=True,
        )
    med_o, med_a = statistics.median(times["ours"]), statistics.median(times["allrank"])
    print(
        f"groupbias train_ranker (1 epoch + validation): median {med_o:7.2f} s over "
        f"{args.rounds} rounds, {steps_ours} training steps per epoch"
    )
    print(
        f"allRank fit(epochs=1) (epoch + train metrics + validation): median {med_a:7.2f} s "
        f"over {args.rounds} rounds, {steps_allrank} training steps per epoch"
    )
    print(f"threads {threads}, load {load()}")
    print(f"ratio: {med_a / med_o:.3f}")


if __name__ == "__main__":
    main()
