"""``groupbias-report``: aggregate any set of run folders into tidy results, tables and
figures; compare runs; evaluate external TREC runs.

    groupbias-report runs/table1                           # writes into runs/table1/report/
    groupbias-report runs/table1 runs/table2 --out paper/  # several roots
    groupbias-report compare a.run b.run c.run --qrels q --groups g   # (or --compare)
    groupbias-report evaluate --run r --qrels q --groups g            # docs/interop.md
    groupbias-report where experiment=table2 dataset=trec2020         # its run folder

Reads every complete run below the roots (``metrics.json`` beside a ``meta.json`` with
status complete; half-finished runs are left out) and writes
(:mod:`groupbias.reporting.results`):

- ``records.parquet`` / ``records.csv``: the tidy results, one row per run × dataset × β ×
  condition × metric × repetition (× whatever else keys the records), numbers as numbers,
  with the settings that tell the runs apart (``evaluation``, ``estimator``, ``seed``, ...);
- ``summary.parquet`` / ``summary.csv``: mean, s.d. and n over seeds and repetitions of
  every record that differs in nothing else; ``summary.md``: a view of it, metric columns;

and views of the summary, depending on what the records contain:

- regime records (tabular / LTR) with biased and corrected conditions: Table 1 / Table 2
  layouts (Markdown, LaTeX, and their numbers as CSV), one row per dataset and every other
  setting that differs (``synthetic · evaluation=policy``), cells ``mean ± s.d.``;
- records with several cluster sizes: cluster-size figures (Fig. 8 / 9) per dataset, β,
  variant and σ_β;
- records over ≥ 3 values of β: degradation figures per regime and dataset, full
  information, biased and corrected against β with ± 1 s.d. bands over the replicates
  (:func:`groupbias.reporting.plots.plot_beta_sweep`), as PNG, PDF and SVG.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from ..app.cli import run_interruptible
from ..core.errors import GroupBiasError
from ..core.io import write_bytes_atomic, write_text_atomic
from .plots import SWEEP_LINES, plot_beta_sweep, plot_cluster_size
from .results import key_columns, read_runs, summarize, tidy_results
from .subcommands import COMMANDS
from .tables import paper_table, save_table

MAIN_METRICS = ("ndcg@10", "rho_dtr", "delta_eel")
#: the columns a paper table has its own place for (rows: dataset and the rest that varies)
TABLE_AXES = ("dataset", "regime", "beta", "metric", "condition")
#: what a paper table shows beside its metric columns
TABLE_EXTRAS = ("beta_hat", "null_beta_hat", "assumption_violated")


def _write_frame(df: pd.DataFrame, stem: Path) -> list[Path]:
    """``stem.csv`` and ``stem.parquet``, atomically."""
    import io

    buf = io.BytesIO()
    df.astype({c: str for c in df.columns if df[c].dtype == object}).to_parquet(buf)
    return [
        write_text_atomic(stem.with_suffix(".csv"), df.to_csv(index=False)),
        write_bytes_atomic(stem.with_suffix(".parquet"), buf.getvalue()),
    ]


def _varying(df: pd.DataFrame, columns) -> list[str]:
    """The ``columns`` with two or more values (a missing value is one of them)."""
    return [c for c in columns if c in df.columns and df[c].nunique(dropna=False) > 1]


def _within_cells(df: pd.DataFrame, columns) -> list[str]:
    """The ``columns`` that take several values within one table cell (dataset, regime, β,
    metric, condition): they tell rows apart (a key tied to β, as σ_β at β = 1, does not)."""
    axes = [c for c in TABLE_AXES if c in df.columns]
    shown = df[axes].astype(str)
    out = []
    for c in columns:
        if c in df.columns and c not in axes:
            by = [shown[a] for a in axes]  # a missing β (full information) is a cell too
            counts = df[c].astype(str).groupby(by, dropna=False).nunique(dropna=False)
            if counts.max() > 1:
                out.append(c)
    return out


def row_labels(summary: pd.DataFrame) -> pd.Series:
    """The table row of every summary row: its dataset, then ``key=value`` of every other
    key that tells records of one cell apart (settings, cluster size, estimator, ...), the
    experiment first; a key the label so far already tells apart is left out."""
    extra = sorted(_within_cells(summary, key_columns(summary)), key=lambda c: c != "experiment")
    label = summary["dataset"].map(_text)
    cells = [summary[a].astype(str) for a in TABLE_AXES if a in summary.columns]
    for c in extra:
        values = summary[c].astype(str).groupby([*cells, label], dropna=False)
        if values.nunique(dropna=False).max() > 1:
            label = label + " · " + c + "=" + summary[c].map(_text)
    return label


def _regime_tables(summary: pd.DataFrame, out: Path) -> list[Path]:
    """Table 1 / Table 2 layouts of the regime records (module docstring)."""
    written: list[Path] = []
    if not {"regime", "dataset", "beta"}.issubset(summary.columns):
        return written
    for regime, full in (("tabular", False), ("ltr", True)):
        sub = summary[summary["regime"] == regime]
        if not sub["condition"].isin(["corrected"]).any():
            continue
        both = sub.groupby("metric")["condition"].agg(lambda c: {"biased", "corrected"} <= set(c))
        metrics = [m for m in MAIN_METRICS if both.get(m, False)] + sorted(
            m for m, ok in both.items() if ok and m not in MAIN_METRICS and ":" not in m
        )
        shown = sub[sub["metric"].isin([*metrics, *TABLE_EXTRAS])]
        cells = shown.assign(dataset=row_labels(shown), value=shown["mean"])
        table = paper_table(cells, metrics=metrics, include_full=full)
        written += list(save_table(table, out / f"table_{regime}").values())
    return written


def summary_markdown(summary: pd.DataFrame) -> str:
    """The summary as Markdown: one row per record key (the keys that vary), one column per
    metric, cells ``mean ± s.d.`` (s.d. where several replicates), and the replicate
    counts."""
    keys = _varying(summary, [c for c in key_columns(summary) if c != "metric"])
    cells = [
        "–" if pd.isna(m) else f"{m:.4g}" + ("" if pd.isna(sd) else f" ± {sd:.2g}")
        for m, sd in zip(summary["mean"], summary["sd"])
    ]
    index = [summary[c].map(_text).tolist() for c in keys] or [[""] * len(summary)]
    wide = (
        pd.Series(cells, index=pd.MultiIndex.from_arrays([*index, summary["metric"]]))
        .unstack(-1)
        .reindex(columns=list(dict.fromkeys(summary["metric"])))
        .fillna("")
    )
    order = list(dict.fromkeys(zip(*index)))
    wide = wide.reindex(
        pd.MultiIndex.from_tuples(order) if len(index) > 1 else [o[0] for o in order]
    )
    head = " | ".join([*(keys or ["run"]), *map(str, wide.columns)])
    lines = [f"| {head} |", "|" + "---|" * (max(len(keys), 1) + wide.shape[1])]
    for idx, row in wide.iterrows():
        idx = idx if isinstance(idx, tuple) else (idx,)
        lines.append("| " + " | ".join([*map(str, idx), *row.tolist()]) + " |")
    counts = sorted(summary["n"].unique().tolist())
    return (
        "\n".join(lines)
        + f"\n\nmean ± s.d. (sample) over seeds and repetitions; replicates per cell: {counts}\n"
    )


def _figures(df: pd.DataFrame, out: Path) -> list[Path]:
    """Degradation and cluster-size figures of the regime records, one set per combination
    of the settings that tell the runs apart."""
    written: list[Path] = []
    if not {"regime", "condition", "beta", "metric"}.issubset(df.columns):
        return written
    settings = _within_cells(df, key_columns(df))
    settings = [c for c in settings if c not in ("cluster_size", "beta_std", "variant")]
    groups = df.groupby(settings, dropna=False, sort=False) if settings else [((), df)]
    for key, part in groups:
        tag = "_".join(f"{c}-{_slug(v)}" for c, v in zip(settings, key)) if settings else ""
        written += _group_figures(part, out, f"_{_short(tag)}" if tag else "")
    return written


def _degradation_figures(df: pd.DataFrame, out: Path, tag: str) -> list[Path]:
    """Per regime and dataset with ≥ 3 values of β: full information, biased and corrected
    against β, mean ± s.d. over the replicates (:func:`plot_beta_sweep`), one panel per main
    metric the records hold."""
    written: list[Path] = []
    conditions = df["condition"].isin([cond for cond, *_ in SWEEP_LINES])
    datasets = df["dataset"].map(_text) if "dataset" in df else pd.Series("", df.index)
    several = datasets.nunique() > 1
    for (regime, ds), sub in df[conditions].groupby([df["regime"], datasets], sort=False):
        if regime not in ("tabular", "ltr"):
            continue
        if sub.loc[sub["condition"] != "full", "beta"].nunique() < 3:
            continue
        metrics = [m for m in MAIN_METRICS if (sub["metric"] == m).any()]
        if not metrics:
            continue
        name = f"degradation_{regime}" + (f"_{_slug(ds)}" if several else "") + tag
        title = f"Impact of group bias and its correction{f' on {ds}' if ds else ''}"
        written += list(plot_beta_sweep(sub, out / name, metrics=metrics, title=title).values())
    return written


def _group_figures(df: pd.DataFrame, out: Path, tag: str) -> list[Path]:
    written: list[Path] = []
    sweep = pd.Series(False, df.index)
    if "cluster_size" in df and {"variant", "beta_std"}.issubset(df.columns):
        cs = df["cluster_size"].astype(object).where(df["cluster_size"].notna(), None)
        keys = df[["dataset", "beta", "variant", "beta_std"]].astype(str)
        sweep = cs.notna() & (
            cs.astype(str).groupby([keys[c] for c in keys]).transform("nunique") > 1
        )
    written += _degradation_figures(df[~sweep], out, tag)
    if sweep.any():
        sw = df[sweep | (df["condition"] == "biased") & df["cluster_size"].notna()]
        for (ds, beta, variant, std), sub in sw.groupby(
            ["dataset", "beta", "variant", "beta_std"], dropna=False
        ):
            stem = out / f"cluster_size_{_slug(ds)}_{variant}_b{beta:g}_s{std:g}{tag}"
            written += list(
                plot_cluster_size(
                    sub,
                    stem,
                    true_beta=None if variant == "two_mode" else float(beta),
                    title=f"{ds}: β = {beta:g}, σβ = {std:g} ({variant})",
                ).values()
            )
    return written


def report(
    roots: list[str | Path], out: str | Path, *, notes: list[str] | None = None
) -> dict[str, list[Path]]:
    """Aggregate the runs below ``roots`` into ``out`` (module docstring); returns the
    written files by kind (none when there is no complete run). ``notes`` gets a line per
    run folder left out as a copy of another (the same run counts once)."""
    out = Path(out)
    written: dict[str, list[Path]] = {"records": [], "tables": [], "figures": []}
    runs = [r for r in read_runs(roots, notes=notes) if r.records]
    if not runs:
        return written
    df = tidy_results(runs)
    summary = summarize(df)
    written["records"] += _write_frame(df, out / "records")
    written["records"] += _write_frame(summary, out / "summary")
    written["tables"].append(write_text_atomic(out / "summary.md", summary_markdown(summary)))
    written["tables"] += _regime_tables(summary, out)
    written["figures"] += _figures(df, out)
    return written


def _text(value) -> str:
    """A key as shown: empty when missing (None or NaN), numbers as written."""
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


#: the longest settings tag a figure's file name carries whole (file names end at 255 bytes)
MAX_TAG = 80


def _short(tag: str) -> str:
    """``tag`` itself, or its first characters and a digest of the whole when it is longer
    than :data:`MAX_TAG` (settings that differ still give different names)."""
    import hashlib

    if len(tag.encode()) <= MAX_TAG:
        return tag
    digest = hashlib.sha256(tag.encode()).hexdigest()[:12]
    return tag.encode()[: MAX_TAG - 13].decode(errors="ignore") + "-" + digest


def _slug(s) -> str:
    return "".join(c if c.isalnum() else "_" for c in str(s)).strip("_")


#: what to do after an expected error of the report commands
_HINT = (
    "`groupbias-report --help`, `groupbias-report evaluate --help`, `groupbias-report "
    "compare --help`; file formats in docs/interop.md"
)


def _fail_os(exc: OSError) -> int:
    """An output that cannot be written: the path and the reason, what to do, exit code 2."""
    return _fail(
        f"cannot write {exc.filename or 'the output'}: {exc.strerror or exc}",
        "choose an --out in a folder you can write (a file stands where a folder belongs, or "
        "the disk is full or read-only)",
    )


def _fail(exc: BaseException | str, hint: str = _HINT) -> int:
    """An expected error: one line and a hint on stderr, exit code 2."""
    print(f"groupbias-report: error: {exc}", file=sys.stderr)
    print(f"groupbias-report: hint: {hint}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    """The ``groupbias-report`` command. As the console script (``argv`` None) Ctrl-C and
    SIGTERM in any subcommand print one line and exit 130 / 143 (every output file is
    written atomically: none is left half-written, and the same command then writes all of
    them); called from Python (``argv`` given) the process's signal handling is left alone."""
    if argv is None:
        return run_interruptible(
            "groupbias-report",
            lambda: _main(sys.argv[1:]),
            again="files written so far are whole; the same command writes them all",
        )
    return _main(list(argv))


def _main(argv: list[str]) -> int:
    if argv and argv[0] in COMMANDS:
        try:
            return COMMANDS[argv[0]](argv[1:])
        except (GroupBiasError, FileNotFoundError) as exc:
            return _fail(exc)
        except OSError as exc:  # an output folder that cannot be made or written
            return _fail_os(exc)
    if "--compare" in argv:  # `groupbias-report --compare RUN ...` = the compare command
        argv.remove("--compare")
        return _main(["compare", *argv])
    p = argparse.ArgumentParser(
        prog="groupbias-report",
        description=" ".join(__doc__.split("\n\n")[0].split()),  # the first paragraph
        epilog="subcommands: evaluate (a TREC run), compare (runs side by side), export "
        "(a dataset's qrels and groups), where (the run folder of a groupbias command "
        "line); see `groupbias-report <subcommand> --help`.",
    )
    p.add_argument("roots", nargs="+", help="run directories (searched recursively)")
    p.add_argument("--out", default=None, help="output folder (default: <first root>/report)")
    a = p.parse_args(argv)
    missing = [r for r in a.roots if not Path(r).is_dir()]
    if missing:
        p.error(f"not a directory: {', '.join(missing)}")
    out = Path(a.out) if a.out else Path(a.roots[0]) / "report"
    notes: list[str] = []
    try:
        written = report(a.roots, out, notes=notes)
    except GroupBiasError as exc:
        return _fail(exc)
    except OSError as exc:
        return _fail_os(exc)
    for note in notes:
        print(f"groupbias-report: note: {note}")
    if not written["records"]:
        print(f"groupbias-report: no complete run under {', '.join(a.roots)}", file=sys.stderr)
        return 1
    for kind, paths in written.items():
        for path in paths:
            print(f"{kind}: {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
