"""Tables in the paper's layout (Table 1 / Table 2), built from tidy result records.

A *record* is one number: ``{"dataset", "beta", "metric", "condition", "value"}`` plus an
optional ``"p_value"`` (paired test of this condition against ``"biased"``) and, for the β̂
column, ``metric == "beta_hat"`` with ``condition == "estimate"``. Conditions are ``"full"``
(full information), ``"biased"`` and ``"corrected"``.

The table has one row per dataset; for each β (descending, as in the paper) it has the β̂
column (when present) and, per metric, the columns B and C; ``include_full=True`` adds the
full-information columns first (Table 2). A corrected cell gets ``*`` when its paired test
against the biased cell has p < ``alpha`` (the paper uses 0.001) *and* it is an improvement
(the direction each metric is registered with: higher, lower, or closer to 0).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..core.errors import ParameterError
from ..core.io import write_text_atomic
from ..evaluation.catalog import direction_of, metric_label

#: the β̂ column's label (β̂ is a record's value, not a registered metric)
BETA_HAT_LABEL = "β̂"


def column_label(metric: str) -> str:
    """A table's name of a record's metric: the metric's declared label
    (:func:`~groupbias.evaluation.catalog.metric_label`: ``NDCG@10 affected ↑``), or β̂."""
    return BETA_HAT_LABEL if metric == "beta_hat" else metric_label(metric)


def better_than(metric: str, value: float, reference: float) -> bool:
    """Whether ``value`` improves on ``reference`` in the metric's registered direction."""
    direction = direction_of(metric)
    if direction == "lower":
        return value < reference
    if direction == "zero":
        return abs(value) < abs(reference)
    return value > reference


CONDITION_SHORT = {"full": "F", "biased": "B", "corrected": "C"}
CONDITION_NAMES = {"F": "full information", "B": "biased", "C": "corrected"}
#: the null-check column (β̂ on unbiased data) and the mark of a failed check
NULL_LABEL = "null β̂"
VIOLATED_MARK = "!"


def _fmt(v: float, digits: int) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.{digits}f}"


#: fields whose different values make records replicates of one cell (averaged)
REPLICATE_FIELDS = ("repetition", "seed")


@dataclass(frozen=True)
class Cell:
    """One table cell's numbers: mean ``value`` over its ``n`` replicates, their sample
    standard deviation ``sd`` (NaN for one) and the largest p-value ``p``."""

    value: float
    p: float = float("nan")
    sd: float = float("nan")
    n: int = 0

    def text(self, digits: int) -> str:
        spread = self.n > 1 and not math.isnan(self.sd)
        return _fmt(self.value, digits) + (f" ± {self.sd:.{digits}f}" if spread else "")


_EMPTY = Cell(float("nan"))


class _Lookup:
    """The :class:`Cell` of a dataset, β, metric and condition; every looked-up cell is kept
    (``numbers``: the tidy numbers of the table)."""

    def __init__(self, df: pd.DataFrame) -> None:
        self.df = df
        self.numbers: list[dict] = []

    def __call__(self, ds, beta, metric, cond) -> Cell:
        df = self.df
        m = (df["dataset"] == ds) & (df["metric"] == metric) & (df["condition"] == cond)
        if beta is not None:
            m &= df["beta"].astype(float).sub(beta).abs() < 1e-9
        sub = df[m]
        if sub.empty:
            return _EMPTY
        if len(sub) > 1:
            raise ParameterError(
                "records",
                f"one record per dataset, β, metric, condition (and repetition or seed); "
                f"{len(sub)} for ({ds!r}, β={beta}, {metric!r}, {cond!r})",
                "duplicates",
                fix="give runs that differ in other settings distinct dataset labels, or "
                "report them separately",
            )
        row = sub.iloc[0]
        cell = Cell(float(row["value"]), float(row["p_value"]), float(row["sd"]), int(row["n"]))
        self.numbers.append(
            {"dataset": ds, "beta": beta, "metric": metric, "condition": cond, **vars(cell)}
        )
        return cell


def _float(values) -> pd.Series:
    return pd.to_numeric(values, errors="coerce").astype(float)


def _records_frame(records, alpha: float) -> pd.DataFrame:
    """Records as one row per cell: replicates (records that differ in
    :data:`REPLICATE_FIELDS` only) averaged into ``value`` (mean), ``sd``, ``n`` and
    ``p_value`` (the largest); records that carry ``sd`` and ``n`` already are kept."""
    df = pd.DataFrame(list(records)) if not isinstance(records, pd.DataFrame) else records
    need = {"dataset", "metric", "condition", "value"}
    if not need.issubset(df.columns):
        raise ParameterError("records", f"columns {sorted(need)}", sorted(df.columns))
    if not 0 < alpha < 1:
        raise ParameterError("alpha", "a significance level in (0, 1)", alpha)
    df = df.assign(value=_float(df["value"]))
    df = df if "p_value" in df.columns else df.assign(p_value=float("nan"))
    df = df.assign(p_value=_float(df["p_value"]))
    if {"sd", "n"}.issubset(df.columns):
        return df
    reps = [c for c in REPLICATE_FIELDS if c in df.columns]
    if not reps:
        return df.assign(sd=float("nan"), n=df["value"].notna().astype(int))
    cell = [c for c in ("dataset", "beta", "metric", "condition") if c in df.columns]
    keys = df[cell].astype(object).where(df[cell].notna(), None)
    dup = pd.concat([keys, df[reps]], axis=1).astype(str).duplicated()
    if dup.any():
        first = df[dup].iloc[0]
        raise ParameterError(
            "records",
            "one record per dataset, β, metric, condition and repetition",
            f"duplicates for ({first['dataset']!r}, {first['metric']!r}, {first['condition']!r})",
            fix="report runs that differ in other settings separately",
        )
    grouped = df.assign(**{c: keys[c] for c in cell}).groupby(cell, dropna=False, sort=False)
    return grouped.agg(
        value=("value", "mean"),
        sd=("value", lambda v: v.std(ddof=1)),
        n=("value", "count"),
        p_value=("p_value", "max"),
    ).reset_index()


def _beta_block(
    lookup: _Lookup,
    beta: float,
    datasets,
    metrics,
    *,
    with_estimate: bool,
    alpha: float,
    digits: int,
    with_null: bool = False,
):
    """Columns and per-dataset cells of one β block: β̂, the null check (β̂ on unbiased data,
    ``!`` when it fails in any replicate), then biased / corrected per metric (``*`` on a
    corrected value better than biased with p < alpha, in every replicate)."""
    block = f"β = {beta:g}"
    columns: list[tuple[str, str, str]] = []
    cells: dict[str, list[str]] = {ds: [] for ds in datasets}
    if with_estimate:
        columns.append((block, "β̂", ""))
        for ds in datasets:
            cells[ds].append(lookup(ds, beta, "beta_hat", "estimate").text(digits))
    if with_null:
        columns.append((block, NULL_LABEL, ""))
        for ds in datasets:
            null = lookup(ds, beta, "null_beta_hat", "diagnostic")
            bad = lookup(ds, beta, "assumption_violated", "diagnostic").value
            cells[ds].append(null.text(digits) + (VIOLATED_MARK if bad > 0 else ""))
    for metric in metrics:
        for cond in ("biased", "corrected"):
            columns.append((block, column_label(metric), CONDITION_SHORT[cond]))
            for ds in datasets:
                c = lookup(ds, beta, metric, cond)
                cell = c.text(digits)
                if (
                    cond == "corrected"
                    and not math.isnan(c.p)
                    and c.p < alpha
                    and better_than(metric, c.value, lookup(ds, beta, metric, "biased").value)
                ):
                    cell += "*"
                cells[ds].append(cell)
    return columns, cells


def paper_table(
    records: Iterable[Mapping] | pd.DataFrame,
    *,
    metrics: Sequence[str] = ("ndcg@10", "rho_dtr", "delta_eel"),
    include_full: bool = False,
    alpha: float = 0.001,
    digits: int = 3,
    dataset_order: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Build the paper-layout table as a DataFrame of formatted strings.

    Columns are a 3-level MultiIndex ``(block, metric, condition)`` where ``block`` is
    ``"full information"`` or ``"β = 0.8"`` etc.; rows are datasets. Missing values show as
    ``–``. Records of several repetitions or seeds (fields ``repetition``, ``seed``) are
    averaged: a cell shows ``mean ± s.d.`` (sample s.d.), ``*`` when every replicate's
    test has p < alpha and the mean improves, ``!`` when any replicate's null check
    failed. ``table.attrs["numbers"]``: the numbers behind the cells (one row per cell:
    dataset, β, metric, condition, value, p, sd, n), what :func:`save_table` writes as CSV.
    """
    df = _records_frame(records, alpha)
    lookup = _Lookup(df)
    datasets = list(dataset_order) if dataset_order else list(dict.fromkeys(df["dataset"]))
    betas = sorted({float(b) for b in df["beta"].dropna()}, reverse=True) if "beta" in df else []
    columns: list[tuple[str, str, str]] = []
    rows: dict[str, list[str]] = {ds: [] for ds in datasets}
    if include_full:
        for metric in metrics:
            columns.append(("full information", column_label(metric), "F"))
            for ds in datasets:
                rows[ds].append(lookup(ds, None, metric, "full").text(digits))
    with_estimate = bool((df["metric"] == "beta_hat").any())
    with_null = bool((df["metric"] == "null_beta_hat").any())
    for beta in betas:
        cols, cells = _beta_block(
            lookup,
            beta,
            datasets,
            metrics,
            with_estimate=with_estimate,
            alpha=alpha,
            digits=digits,
            with_null=with_null,
        )
        columns += cols
        for ds in datasets:
            rows[ds] += cells[ds]
    table = pd.DataFrame(
        [rows[ds] for ds in datasets],
        index=pd.Index(datasets, name="dataset"),
        columns=pd.MultiIndex.from_tuples(columns, names=["block", "metric", "cond"]),
    )
    table.attrs["alpha"] = alpha
    numbers = pd.DataFrame(lookup.numbers)
    if not numbers.empty:
        numbers = numbers.drop_duplicates(["dataset", "beta", "metric", "condition"])
    table.attrs["numbers"] = numbers
    return table


def legend(table: pd.DataFrame, alpha: float | None = None, *, spread: bool = True) -> str:
    """What every column of a :func:`paper_table` means, in one paragraph: β̂, null β̂ and
    its ``!``, the condition codes, the ``*`` marker (with ``alpha``; default the level the
    table was built with) and, where cells average replicates, ``mean ± s.d.`` (``spread``:
    whether the cells show the s.d.; else they show the mean and the s.d. is in the saved
    tables)."""
    alpha = table.attrs.get("alpha") if alpha is None else alpha
    labels = {str(c[1]) for c in table.columns} if table.columns.nlevels > 1 else set()
    codes = {str(c[-1]) for c in table.columns} if len(table.columns) else set()
    numbers = table.attrs.get("numbers")
    n = int(numbers["n"].max()) if numbers is not None and len(numbers) else 1
    words = []
    if "β̂" in labels:
        words.append("β̂ the estimated β (mean over the estimate's clusters)")
    if NULL_LABEL in labels:
        words.append(
            f"{NULL_LABEL} the same estimator on data simulated without bias (β = 1), the "
            f"check of its assumption; {VIOLATED_MARK} when it is off by more than the "
            "tolerance (the run's β̂ and corrected values are then unreliable)"
        )
    words += [f"{k} {v}" for k, v in CONDITION_NAMES.items() if k in codes]
    if alpha is not None:
        every = " in every repetition" if n > 1 else ""
        words.append(f"* better than biased, paired t-test p < {alpha:g}{every}")
    if n > 1 and spread:
        words.append(f"cells: mean ± s.d. over {n} repetitions (or seeds)")
    elif n > 1:
        words.append(f"cells: mean over {n} repetitions (or seeds); ± s.d. in the saved tables")
    return "; ".join(words)


def table_to_markdown(table: pd.DataFrame) -> str:
    """GitHub Markdown rendering (column headers joined as ``block / metric / cond``)."""
    heads = [" / ".join(p for p in col if p) for col in table.columns]
    lines = [
        "| " + " | ".join([table.index.name or ""] + heads) + " |",
        "|" + "---|" * (len(heads) + 1),
    ]
    for idx, row in table.iterrows():
        lines.append("| " + " | ".join([str(idx)] + [str(v) for v in row]) + " |")
    return "\n".join(lines) + "\n"


def tex_text(s: str) -> str:
    """``s`` as LaTeX text: Greek letters and arrows in math mode, special characters
    escaped, a trailing significance ``*`` as a superscript."""
    repl = {  # escapes first: the math below holds characters they would escape
        "_": r"\_",
        "%": r"\%",
        "&": r"\&",
        "#": r"\#",
        "<": r"$<$",
        "±": r"$\pm$",
        "β̂": r"$\hat\beta_{\mathcal{A}}$",
        "β": r"$\beta$",
        "ρ": r"$\rho$",
        "Δ": r"$\Delta$",
        "↑": r"$\uparrow$",
        "↓": r"$\downarrow$",
        "–": "--",
    }
    for k, v in repl.items():
        s = s.replace(k, v)
    if s.endswith("*") and s[:-1].lstrip("-").replace(".", "").isdigit():
        s = s[:-1] + r"$^{*}$"
    return s


def table_to_latex(table: pd.DataFrame, *, caption: str | None = None) -> str:
    """A booktabs ``tabular`` with a two-row header (block and metric, then B/C)."""
    cols = list(table.columns)
    spec = "l" + "c" * len(cols)
    out = [r"\begin{table*}", r"\centering"]
    if caption:
        out.append(r"\caption{" + tex_text(caption) + "}")
    out += [r"\begin{tabular}{" + spec + "}", r"\toprule"]
    # first header row: blocks spanning their columns
    cells, i = [""], 0
    while i < len(cols):
        j = i
        while j < len(cols) and cols[j][0] == cols[i][0]:
            j += 1
        cells.append(r"\multicolumn{" + str(j - i) + "}{c}{" + tex_text(cols[i][0]) + "}")
        i = j
    out.append(" & ".join(cells) + r" \\")
    out.append(" & ".join([""] + [tex_text(c[1]) for c in cols]) + r" \\")
    out.append(" & ".join([""] + [tex_text(c[2]) for c in cols]) + r" \\")
    out.append(r"\midrule")
    for idx, row in table.iterrows():
        out.append(" & ".join([tex_text(str(idx))] + [tex_text(str(v)) for v in row]) + r" \\")
    out += [r"\bottomrule", r"\end{tabular}", r"\end{table*}"]
    return "\n".join(out) + "\n"


def save_table(
    table: pd.DataFrame, stem: str | os.PathLike, *, caption: str | None = None
) -> dict[str, Path]:
    """Write ``stem.csv`` (numbers: the table's ``attrs["numbers"]``, one row per cell, as
    :func:`paper_table` leaves them; else the cells), ``stem.md`` and ``stem.tex`` (views)
    atomically; returns the paths."""
    stem = Path(stem)
    numbers = table.attrs.get("numbers")
    if numbers is None:
        flat = table.copy()
        flat.columns = [" / ".join(p for p in col if p) for col in table.columns]
        csv = flat.to_csv()
    else:
        csv = numbers.to_csv(index=False)
    return {
        "csv": write_text_atomic(stem.parent / f"{stem.name}.csv", csv),
        "md": write_text_atomic(
            stem.parent / f"{stem.name}.md", table_to_markdown(table) + "\n" + legend(table) + "\n"
        ),
        "tex": write_text_atomic(
            stem.parent / f"{stem.name}.tex", table_to_latex(table, caption=caption)
        ),
    }
