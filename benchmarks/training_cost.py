"""Calibrate the rough training-time model of ``groupbias.ltr.training_time``
(``SECONDS_PER_UNIT``, ``ITEM_WORK``, ``OVERHEAD_S``) from small measured training runs, and
print the model's estimate beside each measured time.

For each of two models (``--models``, the ``model`` config group; default the demo's and
Table 2's): one ranker of the ``experiment=table2`` recipe (``trainer.threads=1``, no early
stopping, no bar, no logger) trained for 1 and for ``--epochs`` epochs on
``make_synthetic_splits`` data (``--queries`` queries, lists of ``--lists`` items,
``--features`` features), each timed whole (``train_ranker``, as a run calls it). The
difference gives one model's seconds per item and epoch, the rest its overhead per ranker;
the two models' seconds per item and epoch against their parameter counts give the line
``SECONDS_PER_UNIT × (parameters + ITEM_WORK)``. The 1-minute load average is printed: on
a busy machine the constants come out larger.

    .venv/bin/python benchmarks/training_cost.py [--queries 600] [--epochs 4]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time


def _recipe(model: str, epochs: int):
    from hydra import compose, initialize_config_dir

    from groupbias.app.command import CONFIG_DIR
    from groupbias.app.config import build_setup

    overrides = [
        "experiment=table2",
        f"model={model}",
        f"trainer.max_epochs={epochs}",
        "trainer.patience=null",
        "trainer.threads=1",
        "trainer.enable_progress_bar=false",
        "trainer.loggers=[]",
    ]
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        setup, _ = build_setup(compose(config_name="config", overrides=overrides))
    return setup.recipe


def _timed(recipe, train, valid) -> float:
    from groupbias.ltr.train import train_ranker

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        train_ranker(train, valid, recipe=recipe, seed=0, out_dir=tmp)
        return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=600)
    ap.add_argument("--lists", type=int, nargs=2, default=(20, 60))
    ap.add_argument("--features", type=int, default=40)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--models", nargs=2, default=["attention_small", "attention_allrank"])
    args = ap.parse_args()

    from data_loaders.synthetic import make_synthetic_splits
    from groupbias.ltr import training_time
    from groupbias.ltr.datamodule import PreparedSplits

    splits = make_synthetic_splits(
        n_queries=args.queries, list_size=tuple(args.lists), n_features=args.features, seed=0
    )
    per_item, params, overheads = [], [], []
    for model in args.models:
        recipe = _recipe(model, args.epochs)
        prepared = PreparedSplits(splits, recipe.batching.normalize)
        train, valid = prepared["train"], prepared["valid"]
        one = _timed(_recipe(model, 1), train, valid)
        many = _timed(recipe, train, valid)
        est = training_time.training_cost(recipe, train, valid, rankers=1)
        epoch = (many - one) / (args.epochs - 1)
        per_item.append(epoch / est.items)
        params.append(est.parameters)
        overheads.append(one - epoch)
        print(
            f"{model}: {est.items} items x {est.parameters} parameters: 1 epoch {one:.2f} s, "
            f"{args.epochs} epochs {many:.2f} s measured, {est.seconds:.2f} s estimated; "
            f"load {os.getloadavg()[0]:.2f}"
        )
    unit = (per_item[1] - per_item[0]) / (params[1] - params[0])
    work = per_item[0] / unit - params[0]
    print(f"SECONDS_PER_UNIT {unit:.3g}, ITEM_WORK {work:.3g}, OVERHEAD_S {min(overheads):.2f}")


if __name__ == "__main__":
    main()
