"""Table 1: amortized correction in the tabular regime, every available dataset, β ∈ {0.8, 0.6}.

Per dataset and β: simulate β_q ~ N(β, σ_β), estimate β̂ over the configured clusters (one
global cluster by default), IPS-correct, and report NDCG@10, ρ(DTR), Δ(EEL) of biased (B) and
corrected (C) utilities, with * for p < 0.001 (paired t-test per query). Each (dataset, β) is
a resumable step of the run directory.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from groupbias.pipelines.tabular import run_tabular
from groupbias.reporting import paper_table, save_table

from .common import (available, betas, bias_kw, entries, estimator_kw, fairness_kw, rng_for,
                     table_metrics)


def run(cfg: DictConfig, rd) -> dict:
    records, skipped = [], []
    for ds, grouping, data in available(entries(cfg), cfg, skipped,
                                        only=(cfg.experiment.split,)):
        split = data[cfg.experiment.split]
        for beta in betas(cfg):
            def step(split=split, beta=beta, name=ds["name"]):
                res = run_tabular(split, beta=float(beta),
                                  rng=rng_for(cfg.seed, "table1", name, float(beta)),
                                  dataset=name, **fairness_kw(cfg),
                                  **bias_kw(cfg), **estimator_kw(cfg))
                return {"records": res.records}
            records += rd.step(f"{ds['name']}_beta{beta}", step,
                               key={"dataset": ds, "grouping": grouping, "beta": beta})["records"]
    return {"records": records, "skipped": skipped}


def present(cfg: DictConfig, metrics: dict, run_dir: Path) -> None:
    cols = table_metrics(cfg)
    recs = [r for r in metrics["records"] if r["metric"] in (*cols, "beta_hat")]
    if not recs:
        print("[groupbias] table1: no dataset available;", *metrics.get("skipped", []))
        return
    table = paper_table(recs, metrics=cols, alpha=float(cfg.experiment.alpha))
    paths = save_table(table, Path(run_dir) / "table1",
                       caption="Amortized group bias correction, tabular regime")
    from groupbias.reporting.tables import table_to_markdown

    print(table_to_markdown(table))
    print(f"[groupbias] table written to {paths['md'].parent}/table1.{{csv,md,tex}}")
