"""Regenerate, or check, the documented tables of numbers from fresh runs.

``python -m tools.docs_tables [--list | --only NAME ... [--check]]``: the package's docstring
says what a check compares."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from .blocks import Table, check, documented_block, missing_data, replace_block
from .registry import TABLES
from .runs import REPO, Runs
from .table1_trec import SPLITS, differences, fresh_table1


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m tools.docs_tables", description=__doc__.splitlines()[0]
    )
    ap.add_argument("--check", action="store_true", help="compare only; exit 1 on a difference")
    ap.add_argument("--list", action="store_true", help="the tables, their docs and cost")
    ap.add_argument(
        "--force",
        action="store_true",
        help="rewrite a block even where the fresh run is within its tolerance",
    )
    ap.add_argument("--only", nargs="+", metavar="NAME", help="these tables (default: all)")
    ap.add_argument(
        "--evaluations",
        help="Table 1: comma-separated evaluations to check (default: all three)",
    )
    return ap


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.list:
        for t in TABLES.values():
            print(f"{t.name:<22} {t.doc:<22} {t.cost}")
        return 0
    names = args.only or list(TABLES)
    unknown = [n for n in names if n not in TABLES]
    if unknown:
        print(f"docs_tables: unknown table {unknown} (see --list)", file=sys.stderr)
        return 2
    evaluations = args.evaluations.split(",") if args.evaluations else None
    if evaluations and not args.check:
        print(
            "docs_tables: --evaluations is for --check (a rewrite needs every row)", file=sys.stderr
        )
        return 2
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        runs = Runs(Path(tmp))
        for name in names:
            outcome = _one(TABLES[name], runs, args.check, args.force, evaluations)
            status = 1 if outcome == 1 else (status or outcome)
    return status


def _one(
    table: Table, runs: Runs, check_only: bool, force: bool, evaluations: list[str] | None
) -> int:
    """Check or rewrite one table: 2 when its data are not here, 1 when a check finds a
    difference, else 0."""
    name = table.name
    absent = missing_data(table)
    if absent:
        print(f"docs_tables: {name}: skipped, data not found: {', '.join(absent)}")
        return 2
    if evaluations and name.startswith("table1_") and name[7:] in SPLITS:
        old = documented_block(table) or ""
        new = fresh_table1(runs, name[7:], tuple(evaluations))
        diffs = [f"{table.doc} ({name}): {d}" for d in differences(old, new, set(evaluations))]
    elif check_only:
        diffs = check(table, runs)
    else:
        _rewrite(table, runs, force)
        return 0
    for d in diffs:
        print(d)
    print(f"{name}: {len(diffs)} differences")
    return 1 if diffs else 0


def _rewrite(table: Table, runs: Runs, force: bool) -> None:
    """Replace the table's block with a fresh run's, unless the run confirms it (``force``:
    always)."""
    path = REPO / table.doc
    old, new = documented_block(table), table.compute(runs)
    if old is not None and not force and not table.differences(old, new):
        print(f"kept {table.doc} ({table.name}): a fresh run confirms it")
        return
    path.write_text(replace_block(path.read_text(), table.name, new))
    print(f"rewrote {table.doc} ({table.name})")


if __name__ == "__main__":
    sys.exit(main())
