"""RQ1 (Fig. 2, 5, 6): the impact of group bias, without correction.

Per setup (dataset × sensitive feature × threshold) and β ∈ experiment.betas (1.0 = no
bias): NDCG@10 overall / affected / non-affected, ρ(DTR) and Δ(EEL) of the biased scores in
the tabular regime (training split) and, with ``ltr`` in experiment.regimes, of a ranker
trained on the biased labels (test split). With ``experiment.setups: paper`` the 32 Yahoo!
and MSLR setups of §6.1 are used for the datasets present; otherwise the listed datasets.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from data_loaders.grouping import paper_setups
from groupbias.pipelines.ltr import run_ltr
from groupbias.pipelines.tabular import run_tabular
from groupbias.reporting.plots import plot_degradation

from .common import available, betas, bias_kw, dataset_config, entries, estimator_kw, rng_for


def setups(cfg: DictConfig) -> list[tuple[dict, dict]]:
    """(dataset config, grouping config) pairs: the paper's 32 or experiment.datasets."""
    if cfg.experiment.setups != "paper":
        return entries(cfg)
    out = []
    for name in ("yahoo", "mslr"):
        ds = dataset_config(name)
        base = ds["name"]
        for s in paper_setups(name):
            g = {"kind": "feature", **s}
            out.append(({**ds, "name": f"{base} [{s['feature_id']}] ({s['threshold']})"}, g))
    return out


def run(cfg: DictConfig, rd) -> dict:
    records, skipped = [], []
    model_cfg = OmegaConf.to_container(cfg.model, resolve=True)
    trainer_cfg = OmegaConf.to_container(cfg.trainer, resolve=True)
    for ds, grouping, splits in available(setups(cfg), cfg, skipped):
        name = ds["name"]
        key = {"dataset": ds, "grouping": grouping}
        for beta in betas(cfg):
            # β = 1 is the full-information reference: no per-query noise either
            bkw = {**bias_kw(cfg), **({"beta_std": 0.0} if beta == 1.0 else {})}
            if "tabular" in cfg.experiment.regimes:
                def tab(beta=beta, bkw=bkw):
                    res = run_tabular(splits[cfg.experiment.split], beta=beta,
                                      rng=rng_for(cfg.seed, "impact", name, beta),
                                      dataset=name, **bkw, **estimator_kw(cfg))
                    return {"records": [r for r in res.records if r["condition"] == "biased"]}
                records += rd.step(f"tab_{name}_beta{beta}", tab,
                                   key={**key, "beta": beta})["records"]
            if "ltr" in cfg.experiment.regimes and "test" in splits:
                def ltr(beta=beta, bkw=bkw):
                    res = run_ltr(splits, beta=beta, model_cfg=model_cfg,
                                  trainer_cfg=trainer_cfg, conditions=("biased",),
                                  rng=rng_for(cfg.seed, "impact-ltr", name, beta),
                                  seed=int(cfg.seed),
                                  out_dir=rd.path / "models" / name / f"beta{beta}",
                                  dataset=name, **bkw, **estimator_kw(cfg))
                    return {"records": [r for r in res.records if r["condition"] == "biased"]}
                records += rd.step(f"ltr_{name}_beta{beta}", ltr,
                                   key={**key, "beta": beta})["records"]
    for r in records:  # β = 1 is the full-information case of the figures
        if r["beta"] == 1.0:
            r["condition"] = "full"
    return {"records": records, "skipped": skipped}


def present(cfg: DictConfig, metrics: dict, run_dir: Path) -> None:
    recs = metrics["records"]
    for regime in ("tabular", "ltr"):
        sub = [r for r in recs if r["regime"] == regime]
        if sub:
            out = plot_degradation(sub, Path(run_dir) / f"impact_{regime}",
                                   title=f"Impact of group bias ({regime} regime)")
            print(f"[groupbias] figure: {out['png']}")
