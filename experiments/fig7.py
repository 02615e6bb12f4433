"""Fig. 7: biased vs corrected NDCG@10 in the tabular regime over the 32 Yahoo!/MSLR setups
(or the listed datasets)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

from groupbias.app.setup import Setup

from .common import available, beta_grid, check_common, parse_entries, step_records, tabular_step
from .impact import check_setups, setups, setups_list


@dataclass
class Fig7:
    """``experiment=fig7``: ``setups`` (paper | listed), ``datasets`` (for listed),
    ``split``, ``skip_missing``."""

    trains_ranker = False  # tabular regime only: the ranker groups are not built

    name: str = "fig7"
    setups: str = "paper"
    datasets: list = field(default_factory=list)
    split: str = "train"
    skip_missing: bool = True

    dataset_list = property(setups_list)  # the app's check of data overrides

    def __post_init__(self) -> None:
        check_common(self)
        check_setups(self)
        self.entries = parse_entries(self.datasets)

    def planned_steps(self, setup: Setup) -> int:
        """One step per β, for every dataset."""
        return len(setups(self, setup)) * len(setup.bias.betas)

    def run(self, setup: Setup, run_dir) -> dict:
        records, skipped = [], []
        for entry, splits in available(
            setups(self, setup),
            skip_missing=self.skip_missing,
            skipped=skipped,
            only=(self.split,),
            on_skip=lambda: run_dir.skip_steps(len(setup.bias.betas)),
        ):
            split = splits[self.split]
            step = functools.partial(tabular_step, setup, split, entry.title, tag="fig7")
            records += step_records(
                run_dir, entry, {"{title}_beta{beta}": step}, beta_grid(setup.bias.betas)
            )
        return {"records": records, "skipped": skipped}

    def present(self, setup: Setup, metrics: dict, run_dir: Path) -> None:
        from groupbias.reporting.plots import plot_biased_vs_corrected

        recs = [r for r in metrics["records"] if r["metric"] == "ndcg@10"]
        if recs:
            out = plot_biased_vs_corrected(
                recs, Path(run_dir) / "fig7", title="Biased vs corrected NDCG@10 (tabular)"
            )
            print(f"[groupbias] figure: {out['png']}")
        else:
            print("[groupbias] fig7: no dataset available;", *metrics.get("skipped", []))
