"""The Table 2 pipeline at MSLR size, stage by stage: where the wall time of training
corrected rankers goes.

The stages of ``experiment=table2`` on synthetic MSLR-shaped data (``--queries`` queries,
lists of 60..180 items, 136 features, train / valid / test 60 / 20 / 20), with the run's own
configuration (``configs/``, ``trainer=<--trainer>``, ``--epochs`` epochs, no early
stopping) and one β:

* data: ``make_synthetic_splits`` (``--draws``, default ``blocked``: float32 row blocks on
  every core; ``sequential`` is the configs' default stream);
* normalize: the splits' per-query z-score, once (``PreparedSplits``);
* simulate + estimate: ``training_labels`` (clicks, the null check, β̂, the IPS labels);
* train <condition>: ``train_ranker`` for full information, biased and corrected labels;
* score: ``TrainedRanker.predict`` on the test split; evaluate: the deterministic metrics.

Inside training, the time between Lightning's ``on_train_batch_start`` and
``on_train_batch_end`` of every step (forward, loss, backward, optimizer step) is summed:
the share of the whole wall time outside those steps is the pipeline's overhead (data,
batching, validation, Lightning, scoring, evaluation). On a CUDA device
(``--trainer gpu``) the SM utilization (``torch.cuda.utilization``, NVML) is sampled every
0.2 s during training and its mean printed.

    .venv/bin/python benchmarks/ltr_pipeline.py [--queries 30000] [--epochs 1]
    .venv/bin/python benchmarks/ltr_pipeline.py --trainer gpu

Prints each stage's time, the load average, and ``share outside training: <fraction>`` last.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


class StepClock:
    """Sums the time of training steps (Lightning's batch start -> batch end hooks)."""

    def __init__(self) -> None:
        self.total, self.steps, self._t0 = 0.0, 0, 0.0

    def install(self, module_class) -> None:
        clock = self

        def start(self, batch, batch_idx):  # noqa: ARG001
            if batch["features"].is_cuda:
                import torch

                torch.cuda.synchronize()
            clock._t0 = time.perf_counter()

        def end(self, outputs, batch, batch_idx):  # noqa: ARG001
            if batch["features"].is_cuda:
                import torch

                torch.cuda.synchronize()
            clock.total += time.perf_counter() - clock._t0
            clock.steps += 1

        module_class.on_train_batch_start = start
        module_class.on_train_batch_end = end


class Utilization:
    """Mean GPU utilization (NVML through torch) sampled in a thread while active."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self):
        import torch

        if torch.cuda.is_available():

            def sample() -> None:
                while not self._stop.wait(0.2):
                    self.samples.append(float(torch.cuda.utilization()))

            self._thread = threading.Thread(target=sample, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=30000)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--trainer", default="cpu", choices=["cpu", "gpu"])
    ap.add_argument("--beta", type=float, default=0.8)
    ap.add_argument("--batch-size", type=int, default=None, help="batching.batch_size")
    ap.add_argument(
        "--draws",
        default="blocked",
        choices=["blocked", "sequential"],
        help="dataset.params.draws of the synthetic data (blocked: float32 row blocks on "
        "every core; sequential: the one float64 stream).",
    )
    args = ap.parse_args()

    t_all = time.perf_counter()
    import numpy as np
    from hydra import compose, initialize_config_dir

    from data_loaders.synthetic import make_synthetic_splits
    from groupbias.app.cli import CONFIG_DIR
    from groupbias.app.config import build_setup
    from groupbias.ltr.datamodule import PreparedSplits
    from groupbias.ltr.module import RankerModule
    from groupbias.ltr.train import train_ranker
    from groupbias.pipelines.ltr import evaluation_spec, label_scale, training_labels

    overrides = [
        "experiment=table2",
        f"trainer={args.trainer}",
        f"trainer.max_epochs={args.epochs}",
        "trainer.patience=null",
        "trainer.enable_progress_bar=false",
        "trainer.loggers=[]",
        f"bias.betas=[{args.beta}]",
    ]
    if args.batch_size:
        overrides.append(f"batching.batch_size={args.batch_size}")
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=overrides)
    setup, _ = build_setup(cfg)
    imports = time.perf_counter() - t_all
    clock = StepClock()
    clock.install(RankerModule)
    times: dict[str, float] = {"imports and config": imports}

    def stage(name, fn):
        t = time.perf_counter()
        out = fn()
        times[name] = times.get(name, 0.0) + time.perf_counter() - t
        return out

    splits = stage(
        "data",
        lambda: make_synthetic_splits(
            n_queries=args.queries,
            list_size=(60, 180),
            n_features=136,
            seed=0,
            draws=args.draws,
        ),
    )
    prepared = PreparedSplits(splits, setup.recipe.batching.normalize, in_place=True)
    stage("normalize", lambda: [prepared[k] for k in ("train", "valid", "test")])
    rng = np.random.default_rng(0)
    labels, vlabels, est, _ = stage(
        "simulate + estimate",
        lambda: training_labels(
            splits, beta=args.beta, bias=setup.bias, estimator=setup.estimator, rng=rng
        ),
    )
    spec = evaluation_spec(
        splits["test"], scale=label_scale(splits), bias=setup.bias, metrics=("ndcg@10",)
    )
    n_items = int(splits["train"].n_items)
    print(
        f"{args.queries} queries ({n_items} training items x 136 features), "
        f"{args.epochs} epoch(s), trainer={args.trainer}, torch threads "
        f"{setup.recipe.trainer.n_threads()}, load {os.getloadavg()[0]:.2f}"
    )
    util = Utilization()
    with tempfile.TemporaryDirectory() as tmp, util:
        for cond in ("full", "biased", "corrected"):
            ranker = stage(
                f"train {cond}",
                lambda cond=cond: train_ranker(
                    prepared["train"],
                    prepared["valid"],
                    recipe=setup.recipe,
                    train_labels=labels[cond],
                    valid_labels=vlabels[cond],
                    seed=0,
                    out_dir=Path(tmp) / cond,
                ),
            )
            scores = stage("score", lambda ranker=ranker: ranker.predict(prepared["test"]))
            evaluate = setup.evaluation.evaluate
            stage("evaluate", lambda scores=scores: evaluate(scores, spec, regime="ltr"))
    wall = time.perf_counter() - t_all
    for name, t in times.items():
        print(f"  {name:<22} {t:8.2f} s")
    print(f"  {'training steps':<22} {clock.total:8.2f} s ({clock.steps} steps)")
    print(f"  {'wall':<22} {wall:8.2f} s, load {os.getloadavg()[0]:.2f}")
    if util.samples:
        print(f"  mean GPU utilization during training: {np.mean(util.samples):.1f} %")
    print(f"share outside training: {1 - clock.total / wall:.3f}")


if __name__ == "__main__":
    main()
