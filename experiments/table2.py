"""Table 2: the general LTR regime. Per dataset: the attention LambdaRank ranker trained on
full-information labels (once), and on biased and IPS-corrected labels for each β; NDCG@10,
ρ(DTR), Δ(EEL) of the test rankings, * for p < alpha (paired t-test per test query)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

from groupbias.app.setup import Setup
from groupbias.core.validation import real
from groupbias.evaluation.catalog import metric_keys
from groupbias.pipelines.ltr import run_ltr

from .common import (
    TABLE_EXTRAS,
    TABLE_METRICS,
    assumption_note,
    available,
    beta_grid,
    check_common,
    check_metrics,
    dataset_list,
    entries,
    evaluation_title,
    folder_name,
    parse_entries,
    rng_for,
    step_records,
    table_records,
    warn_if_long,
    with_validation,
)


def _ltr_step(
    splits,
    prepared,
    setup: Setup,
    exp,
    run_dir,
    *,
    title: str,
    tag: str,
    beta: float,
    conditions: tuple,
) -> dict:
    """One resumable step: rankers for ``conditions`` at ``beta`` on one dataset."""
    full = conditions == ("full",)
    sub = "full" if full else f"beta{beta}"
    res = run_ltr(
        splits,
        beta=beta,
        conditions=conditions,
        bias=setup.bias,
        estimator=setup.estimator,
        diagnostics=setup.diagnostics,
        recipe=setup.recipe,
        seed=setup.seed,
        dataset=title,
        metrics=exp.metrics,
        correlations=exp.correlations,
        protocol=setup.evaluation,
        rng=rng_for(setup.seed, tag, title, "full" if full else beta),
        out_dir=run_dir.path / "models" / folder_name(title) / sub,
        prepared=prepared,
    )
    # β̂ and the assumption check (null β̂, the `!` flag) belong to the β steps
    beside = () if full else ("estimate", "diagnostic")
    return {"records": [r for r in res.records if r["condition"] in conditions + beside]}


def ltr_steps(setup: Setup) -> int:
    """The steps of one dataset in :func:`ltr_records`: full information, then each β."""
    return 1 + len(setup.bias.betas)


def ltr_records(exp, setup: Setup, run_dir, *, tag: str) -> tuple[list, list]:
    """Full / biased / corrected LTR records for every dataset entry and β (resumable)."""
    from groupbias.ltr.datamodule import PreparedSplits

    records: list = []
    skipped: list = []
    for entry, splits in available(
        entries(exp.entries, setup),
        skip_missing=exp.skip_missing,
        skipped=skipped,
        on_skip=lambda: run_dir.skip_steps(ltr_steps(setup)),
    ):
        title = entry.title
        splits = with_validation(splits, exp.valid_fraction, seed=setup.seed, title=title)
        warn_if_long(
            setup,
            splits,
            rankers=1 + 2 * len(setup.bias.betas),
            title=title,
            progress=run_dir.progress,
        )
        # normalized once, when the first step that trains asks, over the loaded features
        # (nothing after it reads a raw feature); shared by every step
        prepared = PreparedSplits(splits, setup.recipe.batching.normalize, in_place=True)
        step = functools.partial(
            _ltr_step, splits, prepared, setup, exp, run_dir, title=title, tag=tag
        )
        records += run_dir.step(
            f"{tag}_{title}_full",
            functools.partial(step, beta=setup.bias.betas[0], conditions=("full",)),
            key=entry.step_key,
        )["records"]
        biased = functools.partial(step, conditions=("biased", "corrected"))
        records += step_records(
            run_dir, entry, {tag + "_{title}_beta{beta}": biased}, beta_grid(setup.bias.betas)
        )
    return records, skipped


@dataclass
class Table2:
    """``experiment=table2``: ``alpha`` of the significance markers; ``metrics``: table
    columns (names of ``groupbias.core.registry.METRICS``); ``correlations``: metric pairs whose
    per-query Pearson correlation is recorded; ``skip_missing``; ``datasets``."""

    name: str = "table2"
    alpha: float = 0.001
    metrics: list = field(default_factory=lambda: list(TABLE_METRICS))
    correlations: list = field(default_factory=list)
    skip_missing: bool = True
    datasets: list = field(default_factory=list)
    valid_fraction: float = 0.2

    dataset_list = property(dataset_list)  # the app's check of data overrides

    def __post_init__(self) -> None:
        check_common(self)
        real("valid_fraction", self.valid_fraction, low=0.0, high=1.0, high_open=True)
        self.metrics, self.correlations = check_metrics(self.metrics, self.correlations)
        self.entries = parse_entries(self.datasets, required=True)

    def planned_steps(self, setup: Setup) -> int:
        """One full-information step and one per β, for every dataset."""
        return len(entries(self.entries, setup)) * ltr_steps(setup)

    def planned_rankers(self, setup: Setup) -> list[int]:
        """The rankers of each planned step: full information one, each β two."""
        per_dataset = [1] + [2] * len(setup.bias.betas)
        return per_dataset * len(entries(self.entries, setup))

    def run(self, setup: Setup, run_dir) -> dict:
        records, skipped = ltr_records(self, setup, run_dir, tag="table2")
        return {"records": records, "skipped": skipped}

    def present(self, setup: Setup, metrics: dict, run_dir: Path) -> None:
        from groupbias.reporting import paper_table, save_table, table_to_text

        cols = tuple(metric_keys(list(self.metrics)))
        recs = table_records(metrics["records"], cols, extras=TABLE_EXTRAS[1:])
        if not recs:
            print("[groupbias] table2: no dataset available;", *metrics.get("skipped", []))
            return
        table = paper_table(recs, metrics=cols, include_full=True, alpha=self.alpha)
        save_table(
            table,
            Path(run_dir) / "table2",
            caption="Amortized group bias correction, general LTR regime",
        )
        print(
            table_to_text(
                table,
                title="Table 2. Amortized group bias correction, general LTR regime"
                + evaluation_title(setup),
                alpha=self.alpha,
                note=assumption_note(recs, setup.estimator),
            )
        )
