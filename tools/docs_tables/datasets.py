"""The tables of docs/datasets.md: the sizes of the TREC Fair ppg files."""

from __future__ import annotations

from experiments.common import markdown

from .blocks import thousands
from .runs import Runs
from .table1_trec import ppg_sizes


def datasets_ppg_sizes(runs: Runs) -> str:
    s = ppg_sizes()
    rows = [
        [f"{year} {split}", thousands(s[year, split][0]), thousands(s[year, split][1])]
        + [thousands(s[year, split][3])]
        for year in (2019, 2020)
        for split in ("train", "test")
    ]
    return markdown(["year / split", "rows", "queries", "queries with both groups"], rows)
