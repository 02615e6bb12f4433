"""Table 2: the general LTR regime. Per dataset: the attention LambdaRank ranker trained on
full-information labels (once), and on biased and IPS-corrected labels for each β; NDCG@10,
ρ(DTR), Δ(EEL) of the test rankings, * for p < alpha (paired t-test per test query)."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from groupbias.pipelines.ltr import run_ltr
from groupbias.reporting import paper_table, save_table
from groupbias.reporting.tables import table_to_markdown

from .common import (available, betas, bias_kw, entries, estimator_kw, fairness_kw, rng_for,
                     table_metrics)


def ltr_records(cfg: DictConfig, rd, *, tag: str = "table2") -> tuple[list, list]:
    """Full / biased / corrected LTR records for every dataset entry and β (resumable)."""
    records, skipped = [], []
    model_cfg = OmegaConf.to_container(cfg.model, resolve=True)
    trainer_cfg = OmegaConf.to_container(cfg.trainer, resolve=True)
    for ds, grouping, splits in available(entries(cfg), cfg, skipped):
        name = ds["name"]
        key = {"dataset": ds, "grouping": grouping}
        first = betas(cfg)[0]
        records += rd.step(f"{tag}_{name}_full", lambda: {"records": [
            r for r in run_ltr(splits, beta=first, model_cfg=model_cfg,
                               trainer_cfg=trainer_cfg, conditions=("full",),
                               rng=rng_for(cfg.seed, tag, name, "full"), seed=int(cfg.seed),
                               out_dir=rd.path / "models" / name / "full", dataset=name,
                               **fairness_kw(cfg), **bias_kw(cfg),
                               **estimator_kw(cfg)).records
            if r["condition"] == "full"]}, key=key)["records"]
        for beta in betas(cfg):
            beta = float(beta)
            records += rd.step(f"{tag}_{name}_beta{beta}", lambda beta=beta: {
                "records": run_ltr(splits, beta=beta, model_cfg=model_cfg,
                                   trainer_cfg=trainer_cfg, conditions=("biased", "corrected"),
                                   rng=rng_for(cfg.seed, tag, name, beta), seed=int(cfg.seed),
                                   out_dir=rd.path / "models" / name / f"beta{beta}",
                                   dataset=name, **fairness_kw(cfg),
                                   **bias_kw(cfg), **estimator_kw(cfg)).records},
                key={**key, "beta": beta})["records"]
    return records, skipped


def run(cfg: DictConfig, rd) -> dict:
    records, skipped = ltr_records(cfg, rd)
    return {"records": records, "skipped": skipped}


def present(cfg: DictConfig, metrics: dict, run_dir: Path) -> None:
    cols = table_metrics(cfg)
    recs = [r for r in metrics["records"] if r["metric"] in cols]
    if not recs:
        print("[groupbias] table2: no dataset available;", *metrics.get("skipped", []))
        return
    table = paper_table(recs, metrics=cols, include_full=True,
                        alpha=float(cfg.experiment.alpha))
    save_table(table, Path(run_dir) / "table2",
               caption="Amortized group bias correction, general LTR regime")
    print(table_to_markdown(table))
