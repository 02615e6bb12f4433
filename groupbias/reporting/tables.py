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
from pathlib import Path

import pandas as pd

from ..core.errors import ParameterError
from ..core.io import write_text_atomic
from ..evaluation.catalog import direction_of

METRIC_LABELS = {
    "ndcg@10": "NDCG@10 ↑",
    "rho_dtr": "ρ(DTR) ↑",
    "delta_eel": "Δ(EEL) ↓",
    "beta_hat": "β̂",
    "awrf": "AWRF ↑",
    "texfair": "TExFAIR ↑",
    "nfairr": "NFaiRR ↑",
    "cwex": "CWEx ↑",
    "arab": "ARaB →0",
    "ndcg_awrf": "nDCG×AWRF ↑",
}


def better_than(metric: str, value: float, reference: float) -> bool:
    """Whether ``value`` improves on ``reference`` in the metric's registered direction."""
    direction = direction_of(metric)
    if direction == "lower":
        return value < reference
    if direction == "zero":
        return abs(value) < abs(reference)
    return value > reference


CONDITION_SHORT = {"full": "F", "biased": "B", "corrected": "C"}
#: the null-check column (β̂ on unbiased data) and the mark of a failed check
NULL_LABEL = "null β̂"
VIOLATED_MARK = "!"


def _fmt(v: float, digits: int) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.{digits}f}"


class _Lookup:
    """One record's (value, p-value) by dataset, β, metric and condition."""

    def __init__(self, df: pd.DataFrame) -> None:
        self.df = df

    def __call__(self, ds, beta, metric, cond) -> tuple[float, float]:
        df = self.df
        m = (df["dataset"] == ds) & (df["metric"] == metric) & (df["condition"] == cond)
        if beta is not None:
            m &= df["beta"].astype(float).sub(beta).abs() < 1e-9
        sub = df[m]
        if sub.empty:
            return float("nan"), float("nan")
        if len(sub) > 1:
            raise ParameterError(
                "records",
                f"one record per dataset, β, metric and condition; "
                f"{len(sub)} for ({ds!r}, β={beta}, {metric!r}, {cond!r})",
                "duplicates",
                fix="give runs that differ in other settings distinct dataset labels, or "
                "report them separately",
            )
        return float(sub["value"].iloc[0]), float(sub["p_value"].iloc[0])


def _records_frame(records, alpha: float) -> pd.DataFrame:
    df = pd.DataFrame(list(records)) if not isinstance(records, pd.DataFrame) else records
    need = {"dataset", "metric", "condition", "value"}
    if not need.issubset(df.columns):
        raise ParameterError("records", f"columns {sorted(need)}", sorted(df.columns))
    if not 0 < alpha < 1:
        raise ParameterError("alpha", "a significance level in (0, 1)", alpha)
    return df if "p_value" in df.columns else df.assign(p_value=float("nan"))


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
    ``!`` when it fails), then biased / corrected per metric (``*`` on a corrected value
    better than biased with p < alpha)."""
    block = f"β = {beta:g}"
    columns: list[tuple[str, str, str]] = []
    cells: dict[str, list[str]] = {ds: [] for ds in datasets}
    if with_estimate:
        columns.append((block, "β̂", ""))
        for ds in datasets:
            cells[ds].append(_fmt(lookup(ds, beta, "beta_hat", "estimate")[0], digits))
    if with_null:
        columns.append((block, NULL_LABEL, ""))
        for ds in datasets:
            null = lookup(ds, beta, "null_beta_hat", "diagnostic")[0]
            bad = lookup(ds, beta, "assumption_violated", "diagnostic")[0]
            cells[ds].append(_fmt(null, digits) + (VIOLATED_MARK if bad == 1 else ""))
    for metric in metrics:
        for cond in ("biased", "corrected"):
            columns.append((block, METRIC_LABELS.get(metric, metric), CONDITION_SHORT[cond]))
            for ds in datasets:
                v, p = lookup(ds, beta, metric, cond)
                cell = _fmt(v, digits)
                if (
                    cond == "corrected"
                    and not math.isnan(p)
                    and p < alpha
                    and better_than(metric, v, lookup(ds, beta, metric, "biased")[0])
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
    ``–``.
    """
    df = _records_frame(records, alpha)
    lookup = _Lookup(df)
    datasets = list(dataset_order) if dataset_order else list(dict.fromkeys(df["dataset"]))
    betas = sorted({float(b) for b in df["beta"].dropna()}, reverse=True) if "beta" in df else []
    columns: list[tuple[str, str, str]] = []
    rows: dict[str, list[str]] = {ds: [] for ds in datasets}
    if include_full:
        for metric in metrics:
            columns.append(("full information", METRIC_LABELS.get(metric, metric), "F"))
            for ds in datasets:
                rows[ds].append(_fmt(lookup(ds, None, metric, "full")[0], digits))
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
    return pd.DataFrame(
        [rows[ds] for ds in datasets],
        index=pd.Index(datasets, name="dataset"),
        columns=pd.MultiIndex.from_tuples(columns, names=["block", "metric", "cond"]),
    )


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
    """Write ``stem.csv``, ``stem.md`` and ``stem.tex`` atomically; returns the paths."""
    stem = Path(stem)
    flat = table.copy()
    flat.columns = [" / ".join(p for p in col if p) for col in table.columns]
    return {
        "csv": write_text_atomic(stem.parent / f"{stem.name}.csv", flat.to_csv()),
        "md": write_text_atomic(stem.parent / f"{stem.name}.md", table_to_markdown(table)),
        "tex": write_text_atomic(
            stem.parent / f"{stem.name}.tex", table_to_latex(table, caption=caption)
        ),
    }
