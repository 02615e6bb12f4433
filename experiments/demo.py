"""The demo (plain ``groupbias`` / ``make demo``): the whole method on the embedded synthetic
dataset in about a minute on two CPU cores.

1. load the synthetic train/valid/test splits and print their size and group statistics;
2. tabular regime: simulate group bias (β ∈ bias.betas), estimate β̂ (amortized KS),
   IPS-correct, evaluate biased vs corrected;
3. LTR regime: train a small attention LambdaRank ranker on full-information, biased and
   corrected labels (β = experiment.ltr_beta) and evaluate on the test split;
4. print both tables and write a figure (biased vs corrected NDCG@10, tabular and LTR).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from groupbias.pipelines.ltr import run_ltr
from groupbias.pipelines.tabular import run_tabular
from groupbias.reporting import paper_table, save_table
from groupbias.reporting.plots import plot_biased_vs_corrected
from groupbias.reporting.tables import table_to_markdown
from groupbias.setup import Setup
from groupbias.validation import real

from .common import Entry, check_common, load, rng_for


def _summary_line(title: str, name: str, s: dict) -> str:
    return (
        f"[groupbias] {title}/{name}: {s['n_queries']} queries, {s['n_items']} items, "
        f"{s['n_features']} features; affected share {s['affected_share']:.3f}, "
        f"utility ratio (affected/non-affected) {s['utility_ratio']:.3f}, "
        f"{s['queries_with_both_groups']} queries with both groups"
    )


@dataclass
class Demo:
    """``experiment=demo``: ``ltr_beta``: the β of the LTR part; ``alpha``: significance
    level of the table markers."""

    name: str = "demo"
    ltr_beta: float = 0.8
    alpha: float = 0.001

    def __post_init__(self) -> None:
        check_common(self)
        real("ltr_beta", self.ltr_beta, low=0.0, high=1.0, low_open=True)

    def run(self, setup: Setup, rd) -> dict:
        entry = Entry(setup.dataset, setup.grouping, "dataset")
        splits = load(entry)
        summaries = {name: d.summary() for name, d in splits.items()}
        for name, s in summaries.items():
            print(_summary_line(entry.title, name, s))
        records = []
        for beta in setup.bias.betas:
            records += rd.step(
                f"tabular_beta{beta}",
                lambda beta=beta: {
                    "records": run_tabular(
                        splits["train"],
                        beta=beta,
                        bias=setup.bias,
                        estimator=setup.estimator,
                        diagnostics=setup.diagnostics,
                        rng=rng_for(setup.seed, "demo-tab", beta),
                        dataset=entry.title,
                    ).records
                },
            )["records"]
        beta = float(self.ltr_beta)
        records += rd.step(
            f"ltr_beta{beta}",
            lambda: {
                "records": run_ltr(
                    splits,
                    beta=beta,
                    bias=setup.bias,
                    estimator=setup.estimator,
                    diagnostics=setup.diagnostics,
                    recipe=setup.recipe,
                    rng=rng_for(setup.seed, "demo-ltr", beta),
                    seed=setup.seed,
                    out_dir=rd.path / "ltr",
                    dataset=entry.title,
                ).records
            },
        )["records"]
        return {"records": records, "summaries": summaries}

    def present(self, setup: Setup, metrics: dict, run_dir: Path) -> None:
        recs = metrics["records"]
        tab = [r for r in recs if r["regime"] == "tabular"]
        ltr = [r for r in recs if r["regime"] == "ltr"]
        run_dir = Path(run_dir)
        t1 = paper_table(tab, alpha=self.alpha)
        t2 = paper_table(
            [r for r in ltr if r["metric"] != "beta_hat"], include_full=True, alpha=self.alpha
        )
        save_table(t1, run_dir / "tabular")
        save_table(t2, run_dir / "ltr")
        print("\nTabular regime (Table 1 layout; full information is the ideal: NDCG 1, ρ 1, Δ 0)")
        print(table_to_markdown(t1))
        print("LTR regime (Table 2 layout; test split)")
        print(table_to_markdown(t2))
        fig = plot_biased_vs_corrected(
            [
                {**r, "dataset": f"{r['dataset']} ({r['regime']})"}
                for r in recs
                if r["metric"] == "ndcg@10" and r["condition"] in ("biased", "corrected")
            ],
            run_dir / "demo_ndcg",
            title="NDCG@10 of biased and corrected labels",
        )
        print(f"[groupbias] tables and figure written to {run_dir} ({fig['png'].name})")
