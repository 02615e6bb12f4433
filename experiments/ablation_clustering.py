"""Fig. 9: correction when no accurate clustering is available (§6.4.2).

The cluster-size sweep of Fig. 8 under harder simulations: a larger per-query spread
σ_β ∈ experiment.beta_stds, and the two-mode mixture (half the queries around 0.6, half
around 0.8, the mode hidden from the estimator).
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf, open_dict

from groupbias.reporting.plots import plot_cluster_size

from .ablation_cluster_size import cluster_sweep


def run(cfg: DictConfig, rd) -> dict:
    records = []
    for std in cfg.experiment.beta_stds:
        c = cfg.copy()
        with open_dict(c):
            c.bias.beta_std = float(std)
            c.bias.variant = "normal"
            c.bias.modes = None
        records += cluster_sweep(c, rd, tag=f"sigma{float(std)}")
    c = cfg.copy()
    with open_dict(c):
        c.bias.variant = "two_mode"
        c.bias.modes = OmegaConf.to_container(cfg.experiment.modes)
        c.bias.betas = [float(sum(cfg.experiment.modes) / len(cfg.experiment.modes))]
        c.bias.beta_std = float(cfg.experiment.mode_std)
    records += cluster_sweep(c, rd, tag="two_mode")
    return {"records": records}


def present(cfg: DictConfig, metrics: dict, run_dir: Path) -> None:
    recs = metrics["records"]
    keys = sorted({(r["variant"], r["beta_std"], r["beta"]) for r in recs})
    for variant, std, beta in keys:
        sub = [r for r in recs if (r["variant"], r["beta_std"], r["beta"]) ==
               (variant, std, beta)]
        label = f"two modes {cfg.experiment.modes}" if variant == "two_mode" else \
            f"σβ = {std:g}, β = {beta:g}"
        out = plot_cluster_size(sub, Path(run_dir) / f"clustering_{variant}_std{std:g}_b{beta:g}",
                                true_beta=None if variant == "two_mode" else beta,
                                title=f"{sub[0]['dataset']}: {label}")
        print(f"[groupbias] figure: {out['png']}")
