"""Table 1: amortized correction in the tabular regime, every available dataset, β ∈ {0.8, 0.6}.

Per dataset and β: simulate β_q ~ N(β, σ_β), estimate β̂ over the configured clusters (one
global cluster by default), IPS-correct, and report NDCG@10, ρ(DTR), Δ(EEL) of biased (B) and
corrected (C) utilities, with * for p < alpha (paired t-test per query). Per dataset the
full-information values (the true relevance as the utilities) are recorded too: the
reference line of the report's degradation figure. Each (dataset, β) and each dataset's full
information is a resumable step of the run directory.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

from groupbias.app.setup import Setup
from groupbias.evaluation.catalog import metric_keys

from .common import (
    TABLE_METRICS,
    assumption_note,
    available,
    beta_grid,
    check_common,
    check_metrics,
    dataset_list,
    entries,
    evaluation_title,
    full_information_step,
    parse_entries,
    step_records,
    table_records,
    tabular_step,
)


@dataclass
class Table1:
    """``experiment=table1``: ``split`` evaluated; ``alpha`` of the significance markers;
    ``metrics``: table columns (names of ``groupbias.core.registry.METRICS``, e.g. add ``awrf``);
    ``correlations``: metric pairs whose per-query Pearson correlation is recorded;
    ``skip_missing``: licensed datasets that are absent are listed as skipped; ``datasets``:
    names or ``{dataset, title, grouping}`` mappings."""

    trains_ranker = False  # tabular regime only: the ranker groups are not built

    name: str = "table1"
    split: str = "train"
    alpha: float = 0.001
    metrics: list = field(default_factory=lambda: list(TABLE_METRICS))
    correlations: list = field(default_factory=list)
    skip_missing: bool = True
    datasets: list = field(default_factory=list)

    dataset_list = property(dataset_list)  # the app's check of data overrides

    def __post_init__(self) -> None:
        check_common(self)
        self.metrics, self.correlations = check_metrics(self.metrics, self.correlations)
        self.entries = parse_entries(self.datasets, required=True)

    def planned_steps(self, setup: Setup) -> int:
        """Full information and one step per β, for every dataset."""
        return len(entries(self.entries, setup)) * (1 + len(setup.bias.betas))

    def run(self, setup: Setup, run_dir) -> dict:
        records, skipped = [], []
        for entry, data in available(
            entries(self.entries, setup),
            skip_missing=self.skip_missing,
            skipped=skipped,
            only=(self.split,),
            on_skip=lambda: run_dir.skip_steps(1 + len(setup.bias.betas)),
        ):
            args = (setup, data[self.split], entry.title)
            options = dict(tag="table1", metrics=self.metrics, protocol=setup.evaluation)
            full = functools.partial(full_information_step, *args, **options)
            step = functools.partial(tabular_step, *args, **options, correlations=self.correlations)
            records += step_records(run_dir, entry, {"{title}_full": full}, [{}])
            records += step_records(
                run_dir, entry, {"{title}_beta{beta}": step}, beta_grid(setup.bias.betas)
            )
        return {"records": records, "skipped": skipped}

    def present(self, setup: Setup, metrics: dict, run_dir: Path) -> None:
        from groupbias.reporting import paper_table, save_table, table_to_text

        cols = tuple(metric_keys(list(self.metrics)))
        recs = table_records(metrics["records"], cols)
        if not recs:
            print("[groupbias] table1: no dataset available;", *metrics.get("skipped", []))
            return
        table = paper_table(recs, metrics=cols, alpha=self.alpha)
        paths = save_table(
            table,
            Path(run_dir) / "table1",
            caption="Amortized group bias correction, tabular regime",
        )
        print(
            table_to_text(
                table,
                title="Table 1. Amortized group bias correction, tabular regime"
                + evaluation_title(setup),
                alpha=self.alpha,
                note=assumption_note(recs, setup.estimator),
            )
        )
        print(f"[groupbias] table written to {paths['md'].parent}/table1.{{csv,md,tex}}")
