"""``groupbias-report``: aggregate run directories into tidy tables and figures.

    groupbias-report runs/ablation_cluster_size            # writes into runs/.../report/
    groupbias-report runs/table1 runs/table2 --out paper/  # several roots

Reads the result records of every complete run below the given roots (``metrics.json``
next to a ``meta.json`` with status complete; half-finished runs are ignored), writes
``records.csv`` (one row per number), and, depending on what the records contain:

- tabular / LTR records with biased and corrected conditions: Table 1 / Table 2 layouts
  (CSV, Markdown, LaTeX);
- records with several cluster sizes: cluster-size figures (Fig. 8 / 9) per dataset, β,
  variant and σ_β;
- biased records over ≥ 3 values of β: degradation figures (Fig. 2 / 5 / 6) per regime.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from ..app.runs import collect_records
from ..core.errors import GroupBiasError
from ..core.io import write_text_atomic
from .interop import COMMANDS
from .plots import plot_cluster_size, plot_degradation
from .tables import paper_table, save_table

MAIN_METRICS = ("ndcg@10", "rho_dtr", "delta_eel")


def report(roots: list[str | Path], out: str | Path) -> dict[str, list[Path]]:
    """Aggregate ``roots`` into ``out``; returns the written files by kind."""
    out = Path(out)
    records = []
    for root in roots:
        records += [{**r, "root": str(root)} for r in collect_records(root)]
    written: dict[str, list[Path]] = {"records": [], "tables": [], "figures": []}
    if not records:
        return written
    df = pd.DataFrame(records)
    written["records"].append(write_text_atomic(out / "records.csv", df.to_csv(index=False)))
    sweep = (
        df["cluster_size"].notna()
        & (
            df.groupby(["dataset", "beta", "variant", "beta_std"], dropna=False)[
                "cluster_size"
            ].transform("nunique")
            > 1
        )
        if "cluster_size" in df
        else pd.Series(False, df.index)
    )
    for regime, full in (("tabular", False), ("ltr", True)):
        sub = df[(df["regime"] == regime) & ~sweep]
        sub = sub[sub["metric"].isin(MAIN_METRICS + ("beta_hat",))]
        if sub["condition"].isin(["corrected"]).any():
            t = paper_table(sub, include_full=full)
            written["tables"] += list(save_table(t, out / f"table_{regime}").values())
        bias_only = df[(df["regime"] == regime) & df["condition"].isin(["full", "biased"])]
        if bias_only["beta"].nunique() >= 3:
            written["figures"] += list(
                plot_degradation(
                    bias_only,
                    out / f"degradation_{regime}",
                    title=f"Impact of group bias ({regime} regime)",
                ).values()
            )
    if sweep.any():
        sw = df[sweep | (df["condition"] == "biased") & df["cluster_size"].notna()]
        for (ds, beta, variant, std), sub in sw.groupby(
            ["dataset", "beta", "variant", "beta_std"], dropna=False
        ):
            stem = out / f"cluster_size_{_slug(ds)}_{variant}_b{beta:g}_s{std:g}"
            written["figures"] += list(
                plot_cluster_size(
                    sub,
                    stem,
                    true_beta=None if variant == "two_mode" else float(beta),
                    title=f"{ds}: β = {beta:g}, σβ = {std:g} ({variant})",
                ).values()
            )
    return written


def _slug(s: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in str(s)).strip("_")


def _fail(exc: BaseException) -> int:
    """An expected error: one line and a hint on stderr, exit code 2."""
    print(f"groupbias-report: error: {exc}", file=sys.stderr)
    print(
        "groupbias-report: hint: `groupbias-report --help`, `groupbias-report evaluate "
        "--help`, `groupbias-report compare --help`; file formats in docs/interop.md",
        file=sys.stderr,
    )
    return 2


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in COMMANDS:
        try:
            return COMMANDS[argv[0]](argv[1:])
        except (GroupBiasError, FileNotFoundError) as exc:
            return _fail(exc)
    if "--compare" in argv:  # `groupbias-report --compare RUN ...` = the compare command
        argv.remove("--compare")
        return main(["compare", *argv])
    p = argparse.ArgumentParser(
        prog="groupbias-report",
        description=__doc__.split("\n")[0],
        epilog="subcommands: evaluate (a TREC run), compare (runs side by side), export "
        "(a dataset's qrels and groups); `groupbias-report <subcommand> --help`",
    )
    p.add_argument("roots", nargs="+", help="run directories (searched recursively)")
    p.add_argument("--out", default=None, help="output folder (default: <first root>/report)")
    a = p.parse_args(argv)
    missing = [r for r in a.roots if not Path(r).is_dir()]
    if missing:
        p.error(f"not a directory: {', '.join(missing)}")
    out = Path(a.out) if a.out else Path(a.roots[0]) / "report"
    try:
        written = report(a.roots, out)
    except GroupBiasError as exc:
        return _fail(exc)
    if not written["records"]:
        print(f"groupbias-report: no complete run under {', '.join(a.roots)}", file=sys.stderr)
        return 1
    for kind, paths in written.items():
        for path in paths:
            print(f"{kind}: {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
