"""Fig. 8: the cluster size of the amortized estimate (§6.4.1).

One simulation per (β, repetition); for every cluster size k on the grid (random clusters of
k queries; k = 1 is the per-query estimate, k >= #queries one global cluster): β̂ per cluster,
IPS correction, and NDCG@10 overall / affected / non-affected of the corrected scores, with
the biased scores as reference. ``groupbias -m experiment=ablation_cluster_size
estimator.cluster_size=1,10,100`` sweeps the Hydra way instead (one run per size;
``groupbias-report`` joins them).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from pathlib import Path

from groupbias.app.setup import Setup
from groupbias.core.errors import ParameterError
from groupbias.core.validation import integer, sequence
from groupbias.estimate.estimators import estimate_simulated
from groupbias.pipelines.records import record_base
from groupbias.pipelines.tabular import correct_and_evaluate
from groupbias.simulate.group_bias import GroupBias

from .common import Entry, check_common, entries, load, rng_for, step_records

DEFAULT_SIZES = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]


def check_sizes(sizes) -> None:
    sequence(
        "cluster_sizes",
        sizes,
        lambda n, k: integer(n, k, low=1),
        what="a non-empty list of integers >= 1",
    )


def check_estimator(setup: Setup) -> None:
    if not dataclasses.is_dataclass(setup.estimator) or not hasattr(
        setup.estimator, "cluster_size"
    ):
        raise ParameterError(
            "estimator",
            "an estimator with a cluster_size (e.g. ks)",
            type(setup.estimator).__name__,
        )


def _sweep_step(setup: Setup, bias: GroupBias, entry: Entry, data, sizes, tag, *, beta, rep):
    """One simulation at ``beta``, every cluster size estimated and corrected on it."""
    sim = bias.simulate(data, beta=beta, rng=rng_for(setup.seed, tag, entry.title, beta, rep))
    out = []
    for k in sizes:
        est = dataclasses.replace(setup.estimator, cluster_size=k)
        base = {**record_base(entry.title, "tabular", beta, bias, est), "repetition": rep}
        beta_hat = estimate_simulated(
            est, data, sim, rng=rng_for(setup.seed, tag, "est", beta, rep, k)
        )
        *_, recs = correct_and_evaluate(data, sim, beta_hat, base=base)
        out += recs
    return {"records": out}


#: the columns of the cluster-size table: NDCG@10 overall and per group
CLUSTER_TABLE_METRICS = ("ndcg@10", "ndcg@10:affected", "ndcg@10:non_affected")


def print_cluster_table(records: list[dict], stem: Path, *, title: str) -> None:
    """Print and save (``stem.{csv,md,tex}``) the cluster-size table: one row per cluster
    size, per β its β̂ and the biased and corrected NDCG@10 overall and per group, each the
    mean ± s.d. over the repetitions (the numbers of the figures)."""
    from groupbias.reporting import paper_table, save_table, table_to_text

    rows = [
        {**r, "dataset": f"k = {r['cluster_size']}"}
        for r in records
        if r["metric"] in ("beta_hat", *CLUSTER_TABLE_METRICS)
    ]
    order = [f"k = {k}" for k in sorted({r["cluster_size"] for r in records})]
    table = paper_table(rows, metrics=CLUSTER_TABLE_METRICS, dataset_order=order)
    table.index.name = "cluster size"
    save_table(table, stem, caption=f"Cluster size: {title}")
    print(table_to_text(table, title=f"Cluster size of the amortized estimate: {title}"))


def cluster_sweep(exp, setup: Setup, run_dir, *, bias: GroupBias, tag: str) -> list[dict]:
    """Records of every (β, repetition, cluster size) for the first dataset entry."""
    entry: Entry = entries(getattr(exp, "entries", ()), setup)[0]
    data = load(entry, only=(exp.split,))[exp.split]
    chosen = setup.estimator.cluster_size
    requested = [chosen] if chosen is not None else list(exp.cluster_sizes)
    # sizes beyond the number of queries all mean one global cluster: keep one of them
    sizes = sorted({min(int(k), data.n_queries) for k in requested})
    step = functools.partial(_sweep_step, setup, bias, entry, data, sizes, tag)
    grid = [{"beta": b, "rep": r} for b in bias.betas for r in range(exp.repetitions)]
    return step_records(
        run_dir, entry, {tag + "_beta{beta}_rep{rep}": step}, grid, key={"sizes": sizes}
    )


@dataclass
class AblationClusterSize:
    """``experiment=ablation_cluster_size``: ``split``, ``repetitions`` per β,
    ``cluster_sizes`` (used when ``estimator.cluster_size`` is null)."""

    trains_ranker = False  # tabular regime only: the ranker groups are not built

    name: str = "ablation_cluster_size"
    split: str = "train"
    repetitions: int = 3
    cluster_sizes: list = field(default_factory=lambda: list(DEFAULT_SIZES))

    def __post_init__(self) -> None:
        check_common(self)
        check_sizes(self.cluster_sizes)

    def check(self, setup: Setup) -> None:
        check_estimator(setup)

    def run(self, setup: Setup, run_dir) -> dict:
        return {"records": cluster_sweep(self, setup, run_dir, bias=setup.bias, tag="cluster_size")}

    def present(self, setup: Setup, metrics: dict, run_dir: Path) -> None:
        from groupbias.reporting.plots import plot_cluster_size

        recs = metrics["records"]
        print_cluster_table(recs, Path(run_dir) / "cluster_size", title=recs[0]["dataset"])
        for beta in sorted({r["beta"] for r in recs}, reverse=True):
            sub = [r for r in recs if r["beta"] == beta]
            out = plot_cluster_size(
                sub,
                Path(run_dir) / f"cluster_size_beta{beta:g}",
                true_beta=beta,
                title=f"{sub[0]['dataset']}, β = {beta:g}: cluster size",
            )
            print(f"[groupbias] figure: {out['png']}")
