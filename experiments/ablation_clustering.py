"""Fig. 9: clustering accuracy (§6.4.2): higher β variance (σ_β ∈ beta_stds) and a two-mode
mixture of β (half the queries around each mode, the mode hidden from the estimator), each
against the cluster size."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from groupbias.app.setup import Setup
from groupbias.core.validation import real, sequence

from .ablation_cluster_size import (
    DEFAULT_SIZES,
    check_estimator,
    check_sizes,
    cluster_sweep,
    print_cluster_table,
)
from .common import check_common


def _reals(name: str, values, **bounds) -> None:
    sequence(name, values, lambda n, v: real(n, v, **bounds), what="a non-empty list of numbers")


@dataclass
class AblationClustering:
    """``experiment=ablation_clustering``: ``split``, ``repetitions``, ``cluster_sizes``;
    ``beta_stds``: the σ_β values of the normal variant; ``modes`` and ``mode_std``: the
    two-mode mixture."""

    trains_ranker = False  # tabular regime only: the ranker groups are not built

    name: str = "ablation_clustering"
    split: str = "train"
    repetitions: int = 3
    cluster_sizes: list = field(default_factory=lambda: list(DEFAULT_SIZES))
    beta_stds: list = field(default_factory=lambda: [0.2, 0.3])
    modes: list = field(default_factory=lambda: [0.6, 0.8])
    mode_std: float = 0.1

    def __post_init__(self) -> None:
        check_common(self)
        check_sizes(self.cluster_sizes)
        _reals("beta_stds", self.beta_stds, low=0.0)
        _reals("modes", self.modes, low=0.0, high=1.0, low_open=True)
        real("mode_std", self.mode_std, low=0.0)

    def check(self, setup: Setup) -> None:
        check_estimator(setup)

    def run(self, setup: Setup, run_dir) -> dict:
        records = []
        for std in self.beta_stds:
            bias = dataclasses.replace(
                setup.bias, beta_std=float(std), variant="normal", modes=None
            )
            records += cluster_sweep(self, setup, run_dir, bias=bias, tag=f"sigma{float(std)}")
        bias = dataclasses.replace(
            setup.bias,
            variant="two_mode",
            modes=tuple(self.modes),
            betas=(sum(self.modes) / len(self.modes),),
            beta_std=float(self.mode_std),
        )
        records += cluster_sweep(self, setup, run_dir, bias=bias, tag="two_mode")
        return {"records": records}

    def present(self, setup: Setup, metrics: dict, run_dir: Path) -> None:
        from groupbias.reporting.plots import plot_cluster_size

        recs = metrics["records"]
        keys = sorted({(r["variant"], r["beta_std"], r["beta"]) for r in recs})
        for variant, std, beta in keys:
            sub = [
                r for r in recs if (r["variant"], r["beta_std"], r["beta"]) == (variant, std, beta)
            ]
            label = (
                f"two modes {list(self.modes)}"
                if variant == "two_mode"
                else f"σβ = {std:g}, β = {beta:g}"
            )
            print_cluster_table(
                sub,
                Path(run_dir) / f"clustering_{variant}_std{std:g}_b{beta:g}",
                title=f"{sub[0]['dataset']}, {label}",
            )
            out = plot_cluster_size(
                sub,
                Path(run_dir) / f"clustering_{variant}_std{std:g}_b{beta:g}",
                true_beta=None if variant == "two_mode" else beta,
                title=f"{sub[0]['dataset']}: {label}",
            )
            print(f"[groupbias] figure: {out['png']}")
