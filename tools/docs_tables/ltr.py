"""The table of docs/ltr.md: the rankers trained on TREC Fair (Table 2's layout)."""

from __future__ import annotations

import csv

from experiments.common import markdown

from .runs import Runs
from .table1_trec import BETAS, DATASETS, METRICS


def ltr_table2(runs: Runs) -> str:
    _, out = runs.experiment("experiment=table2", "experiment.datasets=[trec2019,trec2020]")
    with open(out / "table2.csv", newline="") as f:
        recs = list(csv.DictReader(f))

    def get(dataset, beta, metric, condition):
        for r in recs:
            if (r["dataset"], r["metric"], r["condition"]) == (dataset, metric, condition) and (
                condition == "full" or float(r["beta"]) == beta
            ):
                return float(r["value"]), (float(r["p"]) if r.get("p") else None)
        raise KeyError((dataset, beta, metric, condition))

    rows = []
    for dataset in DATASETS:
        row_ = [dataset] + [f"{get(dataset, None, m, 'full')[0]:.3f}" for m, _ in METRICS]
        for beta in BETAS:
            for metric, better in METRICS:
                b, _ = get(dataset, beta, metric, "biased")
                c, p = get(dataset, beta, metric, "corrected")
                good = p is not None and p < 1e-3 and (c - b) * better > 0
                row_.append(f"{b:.3f} / " + (f"**{c:.3f}***" if good else f"{c:.3f}"))
        rows.append(row_)
    head = ["dataset", "full: NDCG@10", "ρ(DTR)", "Δ(EEL)"]
    for beta in BETAS:
        head += [f"β = {beta}: NDCG@10 B / C", "ρ(DTR) B / C", "Δ(EEL) B / C"]
    return markdown(head, rows)
