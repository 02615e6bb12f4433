"""Fig. 8: the cluster size of the amortized estimate (§6.4.1).

One simulation per (β, repetition); for every cluster size k on the grid (random clusters of
k queries; k = 1 is the per-query estimate, k >= #queries one global cluster): β̂ per cluster,
IPS correction, and NDCG@10 overall / affected / non-affected of the corrected scores, with
the biased scores as reference. ``groupbias -m experiment=ablation_cluster_size
estimator.cluster_size=1,10,100`` sweeps the Hydra way instead (one run per size;
``groupbias-report`` joins them).
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from groupbias.pipelines.tabular import correct_and_evaluate, simulate
from groupbias.reporting.plots import plot_cluster_size

from .common import betas, bias_kw, entries, estimator_kw, load_or_skip, rng_for


def cluster_sweep(cfg: DictConfig, rd, *, tag: str) -> list[dict]:
    (ds, grouping), = entries(cfg)[:1]
    splits, _ = load_or_skip(ds, grouping, only=(cfg.experiment.split,), skip_missing=False)
    data = splits[cfg.experiment.split]
    est_kw = estimator_kw(cfg)
    chosen = est_kw.pop("cluster_size")
    requested = [chosen] if chosen is not None else \
        [int(k) for k in cfg.experiment.cluster_sizes]
    # sizes beyond the number of queries all mean one global cluster: keep one of them
    sizes = sorted({min(int(k), data.n_queries) for k in requested})
    bkw = bias_kw(cfg)
    records = []
    for beta in betas(cfg):
        beta = float(beta)
        for rep in range(int(cfg.experiment.repetitions)):
            def step(beta=beta, rep=rep):
                rng = rng_for(cfg.seed, tag, ds["name"], beta, rep)
                sim = simulate(data, beta=beta, rng=rng, **bkw)
                out = []
                for k in sizes:
                    base = {"dataset": ds["name"], "regime": "tabular", "beta": beta,
                            "beta_std": bkw["beta_std"], "variant": bkw["variant"],
                            "cluster_size": k, "repetition": rep}
                    *_, recs = correct_and_evaluate(
                        data, sim, beta=beta, cluster_size=k,
                        rng=rng_for(cfg.seed, tag, "est", beta, rep, k), base=base, **est_kw)
                    out += recs
                return {"records": out}
            records += rd.step(f"{tag}_beta{beta}_rep{rep}", step,
                               key={"dataset": ds, "grouping": grouping, "sizes": sizes,
                                    "beta": beta, "rep": rep})["records"]
    return records


def run(cfg: DictConfig, rd) -> dict:
    return {"records": cluster_sweep(cfg, rd, tag="cluster_size")}


def present(cfg: DictConfig, metrics: dict, run_dir: Path) -> None:
    recs = metrics["records"]
    for beta in sorted({r["beta"] for r in recs}, reverse=True):
        sub = [r for r in recs if r["beta"] == beta]
        out = plot_cluster_size(sub, Path(run_dir) / f"cluster_size_beta{beta:g}",
                                true_beta=beta,
                                title=f"{sub[0]['dataset']}, β = {beta:g}: cluster size")
        print(f"[groupbias] figure: {out['png']}")
