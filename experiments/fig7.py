"""Fig. 7: NDCG@10 of biased and corrected scores (tabular regime) over the 32 Yahoo!/MSLR
setups (or the listed datasets), β ∈ bias.betas, one global cluster."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from groupbias.pipelines.tabular import run_tabular
from groupbias.reporting.plots import plot_biased_vs_corrected

from .common import available, betas, bias_kw, estimator_kw, rng_for
from .impact import setups


def run(cfg: DictConfig, rd) -> dict:
    records, skipped = [], []
    for ds, grouping, splits in available(setups(cfg), cfg, skipped,
                                          only=(cfg.experiment.split,)):
        name = ds["name"]
        for beta in betas(cfg):
            records += rd.step(f"{name}_beta{beta}", lambda beta=beta: {"records": run_tabular(
                splits[cfg.experiment.split], beta=beta,
                rng=rng_for(cfg.seed, "fig7", name, beta), dataset=name, **bias_kw(cfg),
                **estimator_kw(cfg)).records}, key={"dataset": ds, "grouping": grouping,
                                                    "beta": beta})["records"]
    return {"records": records, "skipped": skipped}


def present(cfg: DictConfig, metrics: dict, run_dir: Path) -> None:
    recs = [r for r in metrics["records"] if r["metric"] == "ndcg@10"]
    if recs:
        out = plot_biased_vs_corrected(recs, Path(run_dir) / "fig7",
                                       title="Biased vs corrected NDCG@10 (tabular)")
        print(f"[groupbias] figure: {out['png']}")
    else:
        print("[groupbias] fig7: no dataset available;", *metrics.get("skipped", []))
