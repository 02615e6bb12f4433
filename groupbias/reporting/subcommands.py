"""The TREC subcommands of ``groupbias-report``: evaluate a run, compare runs, export qrels.

    groupbias-report evaluate --run bm25.run --qrels test.qrels --groups test.groups \\
        --affected L --metrics nDCG@10,rho_dtr,delta_eel,awrf
    groupbias-report compare a.run b.run c.run --qrels test.qrels --groups test.groups
    groupbias-report compare runs/table2/models/synthetic      # the conditions' test runs
    groupbias-report export trec2020 --split test --out trec/  # trec2020_test.{qrels,groups}

``evaluate`` prints each metric's mean over the run's judged queries
(:func:`groupbias.evaluation.evaluate.evaluate_run`: nDCG, MRR, MAP, P, recall, R-precision,
bpref and Success as ``trec_eval`` computes them unless ``--semantics candidates``; the
fairness metrics over the run's candidates, the LTR regime), with ``trec_eval``'s options
``-c``, ``-l N``, ``-M N``, ``-q`` and its output
(``--format trec_eval``: :func:`trec_eval_lines`); ``compare``
writes the ranx-style table (:mod:`groupbias.reporting.compare`); ``export`` writes the
qrels and item→group file of a registered dataset's split (:mod:`groupbias.data.trec`: the
dataset's item ids, or ``<qid>_<position>`` where it has none), the files a run of that
split is evaluated against.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import ParameterError
from ..core.io import write_text_atomic
from .frames import GROUPS_NAME, QRELS_NAME, RUN_NAME
from .where import where_command


def _metric_list(text: str, option: str = "--metrics") -> list[str]:
    names = [m.strip() for m in text.split(",") if m.strip()]
    if not names:
        raise ParameterError(option, "comma-separated names", text)
    return names


def _common(p: argparse.ArgumentParser, *, files_required: bool) -> None:
    p.add_argument("--qrels", required=files_required, help="qrels (qid iteration docno rel)")
    p.add_argument("--groups", required=files_required, help="item→group file (docno group)")
    p.add_argument("--affected", default=None, help="the affected group's label (e.g. L)")
    p.add_argument(
        "--metrics",
        default="ndcg@10,rho_dtr,delta_eel",
        help="comma-separated names (any case: nDCG@10, rho_dtr, delta_eel, awrf, ...)",
    )


def _evaluate_parser() -> argparse.ArgumentParser:
    from ..evaluation.evaluate import SEMANTICS

    p = argparse.ArgumentParser(
        prog="groupbias-report evaluate", description="Evaluate a TREC run for fairness."
    )
    p.add_argument("--run", required=True, help="run file (qid Q0 docno rank score tag)")
    _common(p, files_required=False)
    p.add_argument("--out", default=None, help="write STEM.csv and STEM_per_query.csv")
    p.add_argument(
        "--semantics",
        default="trec_eval",
        choices=SEMANTICS,
        help="nDCG, MRR, MAP, P, recall, Rprec, bpref, success as trec_eval / ir_measures "
        "compute them (default: every judged query scores, the ideal from all judged "
        "documents, linear gains, ties by document id), or over the run's candidates with "
        "the metrics' own conventions",
    )
    p.add_argument(
        "-c", "--complete", action="store_true",
        help="trec_eval -c: a query of the qrels that the run lacks scores 0 and counts in "
        "the means (the measures of the run's candidates leave it out: no ranking)",
    )  # fmt: skip
    p.add_argument(
        "-l", "--relevance-level", type=int, default=1, metavar="N",
        help="trec_eval -l N: binary measures (MAP, MRR, P, recall, Rprec, bpref, success) "
        "count grade >= N as relevant; nDCG keeps graded gains (default 1)",
    )  # fmt: skip
    p.add_argument(
        "-M", "--max-docs", type=int, default=None, metavar="N",
        help="trec_eval -M N: evaluate each query's first N documents only",
    )  # fmt: skip
    p.add_argument("-q", "--per-query", action="store_true", help="print every query's values")
    p.add_argument(
        "--format", default="table", choices=("table", "trec_eval"),
        help="table (default), or trec_eval's lines 'measure<TAB>query<TAB>value' with 'all' "
        "rows for the means",
    )  # fmt: skip
    p.add_argument(
        "--classes",
        default=None,
        help="the group file holds labels: these (e.g. M,F) are the groups of the bias "
        "measures, any other label (N, unknown) is neutral; --affected defaults to the first",
    )
    p.add_argument("--words", default=None, help="a 'word,m|f' gender word list (needs --corpus)")
    p.add_argument("--corpus", default=None, help="the documents' text (collection.tsv or .jsonl)")
    return p


def trec_eval_lines(
    queries, per_query: dict, tag: str, *, per_query_rows: bool = False
) -> list[str]:
    """``trec_eval``'s output: ``measure<TAB>query<TAB>value`` (the measure padded to 22
    characters, values to 4 decimals), every query's rows first (``per_query_rows``, its
    ``-q``; a query where a measure is undefined has no row), then ``runid``, ``num_q`` and
    each measure's mean over its defined queries, on ``all`` rows. Queries are in the order
    of their ids (``trec_eval``'s), measures in the order given."""

    def row(measure: str, query: str, value: str) -> str:
        return f"{measure:<22}\t{query}\t{value}"

    lines = []
    if per_query_rows:  # queries ordered by id, as trec_eval orders them
        ids = np.asarray(queries).astype(str).tolist()
        for i in sorted(range(len(ids)), key=ids.__getitem__):
            lines += [
                row(k, ids[i], f"{v[i]:6.4f}") for k, v in per_query.items() if not np.isnan(v[i])
            ]
    lines += [row("runid", "all", tag), row("num_q", "all", str(len(queries)))]
    lines += [row(k, "all", f"{np.nanmean(v):6.4f}") for k, v in per_query.items()]
    return lines


def _print_table(queries, per_query: dict, source: str, *, per_query_rows: bool) -> list[dict]:
    """Print the means (and, ``per_query_rows``, every query's values); the rows of means."""
    rows = [
        {"metric": k, "value": float(np.nanmean(v)), "n_queries": int(np.sum(~np.isnan(v)))}
        for k, v in per_query.items()
    ]
    width = max(len(k) for k in per_query)
    print(f"{'metric':<{width}}  {'value':>8}  queries   ({source})")
    for r in rows:
        print(f"{r['metric']:<{width}}  {r['value']:>8.4f}  {r['n_queries']:>7}")
    if per_query_rows:
        table = pd.DataFrame(per_query, index=pd.Index(queries, name="query"))
        print(table.to_string(float_format=lambda v: f"{v:.4f}", na_rep="-"))
    return rows


def evaluate_command(argv: list[str]) -> int:
    """``groupbias-report evaluate``: a run's mean metrics (and, with --out, per query)."""
    from ..data.trec import read_run
    from .external_runs import evaluate_external, refuse_undefined

    a = _evaluate_parser().parse_args(argv)
    if a.qrels is None:
        raise ParameterError("--qrels", "the qrels file the run is judged against", None)
    classes = None if a.classes is None else _metric_list(a.classes, "--classes")
    run = read_run(a.run)
    queries, per_query = evaluate_external(
        run, a.qrels, a.groups, metrics=_metric_list(a.metrics), affected=a.affected,
        classes=classes, words=a.words, corpus=a.corpus, semantics=a.semantics,
        complete=a.complete, relevance_level=a.relevance_level, max_docs=a.max_docs,
    )  # fmt: skip
    refuse_undefined(per_query, a.run)
    if a.format == "trec_eval":
        print("\n".join(trec_eval_lines(queries, per_query, run.tag, per_query_rows=a.per_query)))
        rows = [{"metric": k, "value": float(np.nanmean(v))} for k, v in per_query.items()]
    else:
        rows = _print_table(queries, per_query, a.run, per_query_rows=a.per_query)
    if a.out:
        stem = Path(a.out)
        write_text_atomic(stem.with_suffix(".csv"), pd.DataFrame(rows).to_csv(index=False))
        table = pd.DataFrame(per_query, index=pd.Index(queries, name="query"))
        write_text_atomic(
            stem.parent / f"{stem.name}_per_query.csv", table.to_csv(float_format="%.17g")
        )
        print(f"written: {stem.with_suffix('.csv')}, {stem.name}_per_query.csv")
    return 0


def expand_runs(paths: list[str]) -> tuple[dict[str, Path], Path | None, Path | None]:
    """``{name: run file}`` of the ``compare`` arguments: a file is one run (named by its
    path); a directory gives every ``test.run`` below it (named by its folder relative to
    the directory) and the first ``test.qrels``/``test.groups`` below it."""
    runs: dict[str, Path] = {}
    qrels = groups = None
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found = sorted(path.rglob(RUN_NAME))
            if not found:
                raise ParameterError("runs", f"a directory holding {RUN_NAME} files", given)
            for f in found:
                runs[str(f.parent.relative_to(path))] = f
            qrels = qrels or next(iter(sorted(path.rglob(QRELS_NAME))), None)
            groups = groups or next(iter(sorted(path.rglob(GROUPS_NAME))), None)
        elif path.is_file():
            runs[str(path)] = path
        else:
            raise FileNotFoundError(f"run file not found: {given}")
    return runs, qrels, groups


def _record_folders(paths: list[str]) -> bool:
    """Every argument a folder holding run records (``metrics.json``) and no run file."""
    folders = [Path(p) for p in paths]
    return all(
        f.is_dir() and next(f.rglob("metrics.json"), None) and not next(f.rglob(RUN_NAME), None)
        for f in folders
    )


def _compare_records(a: argparse.Namespace) -> int:
    """``compare`` of run folders over the replicates (:mod:`.compare_folders`)."""
    from .compare_folders import compare_folders

    notes: list[str] = []
    result = compare_folders(
        a.runs, by=a.by, metrics=_metric_list(a.metrics), test=a.test,
        correction=a.correction, alpha=a.alpha, notes=notes,
    )  # fmt: skip
    return _show(result, a.out, notes)


def _show(result, out: str | None, notes: list[str] | None = None) -> int:
    """Print a comparison (its first line: the test and correction), then ``notes``, and,
    with ``--out``, write its files; nothing is written without it."""
    print(result.to_markdown(), end="")
    for note in notes or ():
        print(f"groupbias-report: note: {note}")
    if out is None:
        print("(not written: --out STEM writes STEM.md, STEM_values.csv, STEM_tests.csv)")
        return 0
    for kind, path in result.save(out).items():
        print(f"{kind}: {path}")
    return 0


def _test_options(p: argparse.ArgumentParser) -> None:
    """``compare``'s test, correction, level (``ranx.compare``'s defaults) and output."""
    from ..evaluation.stats import CORRECTIONS, TESTS
    from .compare import RANX_ALPHA, RANX_CORRECTION, RANX_TEST

    p.add_argument(
        "--test", default=RANX_TEST, choices=TESTS, help="paired test (default: ranx's student)"
    )
    p.add_argument(
        "--correction",
        default=RANX_CORRECTION,
        choices=CORRECTIONS,
        help="multiple-testing correction of each metric's pairs (default: none, as ranx)",
    )
    p.add_argument(
        "--alpha",
        type=float,
        default=RANX_ALPHA,
        help="significant at (adjusted) p <= alpha (default: ranx's max_p, 0.01)",
    )
    p.add_argument(
        "--out", default=None, help="write STEM.md, .tex, _values.csv, _tests.csv (else print)"
    )


def compare_command(argv: list[str]) -> int:
    """``groupbias-report compare``: the ranx-style table of several runs."""
    from .compare import compare_runs

    p = argparse.ArgumentParser(
        prog="groupbias-report compare",
        description="Compare runs: paired tests, multiple-testing correction, letters.",
    )
    p.add_argument("runs", nargs="+", help="run files, or folders holding test.run files")
    _common(p, files_required=False)
    p.add_argument("--names", default=None, help="comma-separated system names (run order)")
    _test_options(p)
    p.add_argument("--semantics", default="trec_eval", choices=("trec_eval", "candidates"))
    p.add_argument(
        "--by",
        default="condition",
        help="run folders without test.run files (tabular experiments): the record key whose "
        "values are the systems (condition, cluster_size, estimator, ...)",
    )
    a = p.parse_args(argv)
    if _record_folders(a.runs):
        return _compare_records(a)
    runs, qrels, groups = expand_runs(a.runs)
    qrels, groups = a.qrels or qrels, a.groups or groups
    if qrels is None or groups is None:
        raise ParameterError(
            "--qrels/--groups", "the files the runs are judged against", None,
            fix="give --qrels and --groups (a folder of an LTR run holds test.qrels and "
            "test.groups)",
        )  # fmt: skip
    if a.names:
        names = [n.strip() for n in a.names.split(",")]
        if len(names) != len(runs):
            raise ParameterError("--names", f"{len(runs)} names, one per run", a.names)
        runs = dict(zip(names, runs.values()))
    result = compare_runs(
        runs,
        qrels,
        groups,
        metrics=_metric_list(a.metrics),
        affected=a.affected,
        test=a.test,
        correction=a.correction,
        alpha=a.alpha,
        semantics=a.semantics,
    )
    return _show(result, a.out)


#: how an exported item→group file names a document whose label is unknown ("")
UNKNOWN_LABEL = "unknown"


def export_text(collection, stem: Path, label: str | None = None) -> list[Path]:
    """The qrels (every judged pair, ``qid 0 docno grade``) and the item→group file of a
    text collection: ``docno <label>`` with the document label ``label`` (default: the
    collection's first), :data:`UNKNOWN_LABEL` where it is unknown, whitespace inside a
    label as ``_``."""
    from ..data.trec import Qrels

    if not collection.doc_labels:
        raise ParameterError("dataset", "a text collection with document labels", None)
    label = label or next(iter(collection.doc_labels))
    values = collection.label(label)  # a ParameterError naming the labels it has
    judged = collection.qrels.tocoo()
    qrels = Qrels(
        collection.query_ids.astype(str)[judged.row].astype(object),
        collection.doc_ids.astype(str)[judged.col].astype(object),
        np.asarray(judged.data, dtype=np.float64),
    )
    shown = ["_".join(str(v).split()) or UNKNOWN_LABEL for v in values.tolist()]
    lines = [f"{d} {g}" for d, g in zip(collection.doc_ids.astype(str).tolist(), shown)]
    return [
        qrels.write(stem.with_name(stem.name + ".qrels")),
        write_text_atomic(stem.with_name(stem.name + ".groups"), "\n".join(lines) + "\n"),
    ]


def config_params(dataset: str) -> dict:
    """The loader options of ``configs/dataset/<dataset>.yaml`` (what ``groupbias
    dataset=<dataset>`` loads with); none for a dataset without a config file."""
    import yaml

    from ..app.command import CONFIG_DIR

    path = Path(CONFIG_DIR) / "dataset" / f"{dataset}.yaml"
    if not path.is_file():
        return {}
    return dict((yaml.safe_load(path.read_text()) or {}).get("params") or {})


def _key_values(items: list[str]) -> dict:
    """``{key: value}`` of ``KEY=VALUE`` texts, values read as YAML (numbers, null)."""
    import yaml

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ParameterError("--param", "KEY=VALUE", item)
        out[key.strip()] = yaml.safe_load(value)
    return out


def export_command(argv: list[str]) -> int:
    """``groupbias-report export``: the qrels and item→group file of a dataset's split."""
    from ..data.datasets import load_dataset
    from ..data.text import TextCollection
    from ..data.trec import write_groups, write_qrels

    p = argparse.ArgumentParser(
        prog="groupbias-report export",
        description="Write the qrels and item→group file of a registered dataset's split.",
    )
    p.add_argument("dataset", help="a registered dataset name (trec2020, synthetic, ...)")
    p.add_argument("--split", default="test")
    p.add_argument("--root", default=None, help="the dataset's folder (else its variable)")
    p.add_argument("--out", default=".", help="output folder")
    p.add_argument(
        "--label",
        default=None,
        help="a text collection's document label to write as the group (default: its first, "
        "e.g. gender of grep_biasir, h_class of trec2020_text)",
    )
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a loader option over the config's (configs/dataset/<name>.yaml params), e.g. "
        "--param corpus=collection.tsv; repeatable",
    )
    a = p.parse_args(argv)
    params = {**config_params(a.dataset), **_key_values(a.param)}
    data = load_dataset(a.dataset, root=a.root, split=a.split, **params)
    stem = Path(a.out) / f"{a.dataset}_{a.split}"
    if isinstance(data, TextCollection):
        written = export_text(data, stem, a.label)
    else:
        written = [
            write_qrels(stem.with_name(stem.name + ".qrels"), data),
            write_groups(stem.with_name(stem.name + ".groups"), data),
        ]
    for path in written:
        print(f"written: {path}")
    return 0


COMMANDS = {
    "evaluate": evaluate_command,
    "compare": compare_command,
    "export": export_command,
    "where": where_command,
}
