"""``groupbias-report compare`` on run folders whose records are means (Table 1, the
cluster-size ablation, ...): systems compared within every setting, paired over seeds.

A folder holding ``test.run`` files (an LTR run) is compared over queries
(:func:`groupbias.reporting.compare.compare_runs`). The tabular experiments record the mean
over the queries of every condition, not the per-query values; their folders are compared
over the *replicates*: the records of every complete run below the folders
(:func:`groupbias.reporting.results.read_runs`, a copied run counted once) are grouped by
every key but ``by`` (default ``condition``: full, biased, corrected; or e.g.
``cluster_size``) and the metric: each group is one *setting* (dataset, β, cluster size,
...), and within it the systems (the values of ``by`` that have every metric) are compared
by :func:`groupbias.reporting.compare.compare` on their values per replicate (``seed`` ×
``repetition``), paired over the replicates both have. The output says which: "over the
seeds", never "over the queries".
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..core.errors import ParameterError
from ..core.io import write_text_atomic
from .compare import RANX_ALPHA, RANX_CORRECTION, RANX_TEST, Comparison, compare
from .results import REPLICATES, key_columns, read_runs, tidy_results

__all__ = ["FolderComparison", "compare_folders"]

#: how the legend names the replicates the values are paired over
UNITS: dict[tuple[str, ...], str] = {("seed",): "seeds", ("repetition",): "repetitions"}


@dataclass(frozen=True)
class FolderComparison:
    """One :class:`Comparison` per setting (``{column: value}`` of the keys that vary)."""

    by: str
    unit: str
    settings: tuple[tuple[dict, Comparison], ...]

    def headline(self) -> str:
        """The test, correction and level of the comparisons (one line)."""
        return self.settings[0][1].headline()

    def to_markdown(self) -> str:
        over = (
            f"paired over the {self.unit}"
            if self.unit != "one run"
            else "one run each, so no test (run several seeds: `groupbias -m ... seed=0,1,2`)"
        )
        head = (
            f"Systems: the values of `{self.by}`, compared within each setting, {over}; the "
            "records hold each run's means, not per-query values.\n"
        )
        parts = [self.headline() + "\n\n", head]
        for setting, cmp in self.settings:
            title = " · ".join(f"{k}={v}" for k, v in setting.items()) or "all records"
            parts.append(f"\n### {title}\n\n{cmp.to_markdown(headline=False)}")
        return "".join(parts)

    def _frame(self, kind: str) -> pd.DataFrame:
        frames = [
            getattr(cmp, kind).assign(**{k: str(v) for k, v in setting.items()})
            for setting, cmp in self.settings
        ]
        return pd.concat(frames, ignore_index=True)

    def save(self, stem: str | os.PathLike) -> dict[str, Path]:
        """``stem.md`` and ``stem_values.csv``, ``stem_tests.csv`` (with the setting
        columns), atomically."""
        stem = Path(stem)
        return {
            "md": write_text_atomic(stem.parent / f"{stem.name}.md", self.to_markdown()),
            "values": write_text_atomic(
                stem.parent / f"{stem.name}_values.csv", self._frame("values").to_csv(index=False)
            ),
            "tests": write_text_atomic(
                stem.parent / f"{stem.name}_tests.csv", self._frame("tests").to_csv(index=False)
            ),
        }


def _per_replicate(sub: pd.DataFrame, by: str, metrics, replicates: list[str]) -> dict:
    """``{system: {metric: values per replicate}}`` of the systems holding every metric."""
    index = sub[replicates].astype(str).agg(",".join, axis=1) if replicates else "1"
    sub = sub.assign(_unit=index)
    out: dict = {}
    for system, rows in sub.groupby(sub[by].astype(str), sort=False, dropna=False):
        if set(metrics) <= set(rows["metric"]):
            values = rows.pivot_table(index="_unit", columns="metric", values="value")
            out[system] = {m: values[m] for m in metrics}
    return out


def compare_folders(
    roots: Sequence[str | os.PathLike],
    *,
    by: str = "condition",
    metrics: Sequence[str] = ("ndcg@10", "rho_dtr", "delta_eel"),
    test: str = RANX_TEST,
    correction: str = RANX_CORRECTION,
    alpha: float = RANX_ALPHA,
    notes: list[str] | None = None,
) -> FolderComparison:
    """The systems (values of ``by``) of the runs below ``roots`` compared within every
    setting over the replicates (module docstring)."""
    runs = [r for r in read_runs(roots, notes=notes) if r.records]
    if not runs:
        raise ParameterError("runs", "folders holding complete runs", [str(r) for r in roots])
    df = tidy_results(runs)
    if by not in df.columns:
        raise ParameterError("--by", "a column of the records: " + ", ".join(df.columns), by)
    recorded = {str(m).lower(): str(m) for m in df["metric"].dropna().unique()}
    metrics = [recorded.get(m.lower(), m) for m in metrics]  # nDCG@10: the records' ndcg@10
    df = df[df["metric"].isin(metrics)]
    replicates = [c for c in REPLICATES if c in df.columns and df[c].nunique() > 1]
    unit = UNITS.get(tuple(replicates), " × ".join(replicates) + " replicates")
    keys = [c for c in key_columns(df) if c not in (by, "metric")]
    varying = [c for c in keys if df[c].nunique(dropna=False) > 1]
    settings = []
    by_key = [df[c].astype(str) for c in keys]
    groups = df.groupby(by_key, sort=False, dropna=False) if keys else [((), df)]
    for key, sub in groups:
        systems = _per_replicate(sub, by, metrics, replicates)
        if len(systems) < 2:
            continue
        cmp = compare(
            systems, metrics=metrics, test=test, correction=correction, alpha=alpha,
            unit=unit if replicates else "runs",
        )  # fmt: skip
        setting = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        settings.append(({c: setting[c] for c in varying}, cmp))
    if not settings:
        raise ParameterError(
            "--by", f"a key with two or more systems holding {', '.join(metrics)}", by
        )
    return FolderComparison(by, unit if replicates else "one run", tuple(settings))
