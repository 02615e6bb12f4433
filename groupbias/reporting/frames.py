"""Results as pandas DataFrames, for Python users: per query of TREC runs, per record of
run folders.

:func:`per_query_results` evaluates runs query by query
(:func:`groupbias.evaluation.evaluate.evaluate_run` with ``reduce=None``: the same values,
the same semantics and options) and returns one row per run × query: ``system`` (the run's
name), ``query`` (its id, as text) and one column per metric key (NaN where the metric is
undefined on the query). A run is a file, a :class:`~groupbias.data.trec.TrecRun`, a
``{name: run}`` mapping, or a folder: every ``test.run`` below it (an LTR run's conditions,
named by their folders), each judged against the ``test.qrels`` and ``test.groups`` nearest
above it unless ``qrels`` / ``groups`` are given.

:func:`load_results` reads the records of every complete run below run folders (what
``groupbias-report ROOT`` aggregates): one row per run × dataset × β × condition × metric ×
seed / repetition (:func:`groupbias.reporting.results.tidy_results`), or with
``summary=True`` their means over seeds and repetitions
(:func:`groupbias.reporting.results.summarize`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import ParameterError
from ..data.trec import TrecRun, read_groups, read_qrels, read_run
from ..evaluation.catalog import DEFAULT_METRICS
from ..evaluation.evaluate import evaluate_run
from ..evaluation.trec_eval import judged_queries
from .results import read_runs, summarize, tidy_results

__all__ = ["load_results", "per_query_results", "runs_frame"]

#: what a folder of an LTR run holds: one run per condition, and the files its runs are
#: judged against (the LTR pipelines write them beside the conditions' folders)
RUN_NAME, QRELS_NAME, GROUPS_NAME = "test.run", "test.qrels", "test.groups"


def _nearest(folder: Path, root: Path, name: str) -> Path | None:
    """The file ``name`` in ``folder`` or the nearest folder above it, up to ``root``."""
    for parent in (folder, *folder.parents):
        if (parent / name).is_file():
            return parent / name
        if parent == root:
            break
    return None


def _folder_runs(root: Path) -> list[tuple[str, Path, Path | None, Path | None]]:
    """``(name, run, qrels, groups)`` of every ``test.run`` below ``root``: named by its
    folder relative to ``root``, judged against the ``test.qrels`` / ``test.groups`` nearest
    above it (an LTR run writes them per dataset and β)."""
    found = sorted(root.rglob(RUN_NAME))
    if not found:
        raise ParameterError(
            "runs", f"a folder holding {RUN_NAME} files (an LTR run)", str(root),
            fix="the records of a tabular run folder: gb.load_results(folder)",
        )  # fmt: skip
    return [
        (
            str(f.parent.relative_to(root)),
            f,
            _nearest(f.parent, root, QRELS_NAME),
            _nearest(f.parent, root, GROUPS_NAME),
        )
        for f in found
    ]


def runs_frame(
    runs: Mapping[str, object],
    qrels,
    groups=None,
    *,
    metrics: Sequence = DEFAULT_METRICS,
    affected: str | None = None,
    **options,
) -> pd.DataFrame:
    """Per-query values of ``runs`` (``{name: path or TrecRun}``): one row per run × query
    (``system``, ``query``, one column per metric key), in the runs' and their queries'
    order. ``qrels``, ``groups``: paths or the read files (``groups`` may be None where no
    metric needs memberships); ``options``: those of
    :func:`~groupbias.evaluation.evaluate.evaluate_run` (``semantics``, ``label_max``,
    ``protocol``)."""
    if isinstance(qrels, (str, os.PathLike)):
        qrels = read_qrels(qrels)
    if isinstance(groups, (str, os.PathLike)):
        groups = read_groups(groups, affected=affected)
    frames = []
    for name, given in runs.items():
        run = read_run(given) if isinstance(given, (str, os.PathLike)) else given
        if not isinstance(run, TrecRun):
            raise ParameterError("runs", "run files or TrecRun objects", type(given).__name__)
        values = evaluate_run(run, qrels, groups, metrics=metrics, reduce=None, **options)
        queries = run.query_ids[judged_queries(run, qrels)]  # evaluate_run's queries
        frame = pd.DataFrame({k: np.asarray(v, dtype=np.float64) for k, v in values.items()})
        frame.insert(0, "query", np.asarray(queries).astype(str))
        frame.insert(0, "system", name)
        frames.append(frame)
    if not frames:
        raise ParameterError("runs", "at least one run", "none")
    return pd.concat(frames, ignore_index=True)


def per_query_results(
    runs, qrels=None, groups=None, *, metrics: Sequence = DEFAULT_METRICS, **options
) -> pd.DataFrame:
    """A DataFrame of per-query results (module docstring): ``runs`` a run file, a
    :class:`~groupbias.data.trec.TrecRun`, a folder of an LTR run (its conditions' test
    runs), a list of files and folders, or ``{name: run}``; ``qrels`` / ``groups`` (paths
    or read files) default to the ``test.qrels`` / ``test.groups`` of a folder; ``groups``
    is needed only by metrics of groups (ρ(DTR), Δ(EEL), AWRF, ...); ``options``: those of
    :func:`~groupbias.evaluation.evaluate.evaluate_run` (``affected``, ``semantics``, ...).
    Example::

        import groupbias as gb

        table = gb.per_query_results("bm25.run", "test.qrels", metrics=["nDCG@10", "map"])
        table.groupby("system")[["nDCG@10", "map"]].mean()
    """
    if isinstance(runs, (TrecRun, Mapping)):
        named = {runs.tag or "run": runs} if isinstance(runs, TrecRun) else runs
        return runs_frame(named, _needed(qrels), groups, metrics=metrics, **options)
    parts = []
    for given in [runs] if isinstance(runs, (str, os.PathLike)) else list(runs):
        path = Path(given)
        if not path.is_dir():
            named = {str(path): path}
            parts.append(runs_frame(named, _needed(qrels), groups, metrics=metrics, **options))
            continue
        for name, run, found_qrels, found_groups in _folder_runs(path):
            q = _needed(qrels if qrels is not None else found_qrels)
            g = groups if groups is not None else found_groups
            parts.append(runs_frame({name: run}, q, g, metrics=metrics, **options))
    if not parts:
        raise ParameterError("runs", "one or more runs", "none")
    return pd.concat(parts, ignore_index=True)


def _needed(qrels):
    if qrels is None:
        raise ParameterError(
            "qrels", "the judgments the runs are evaluated against", None,
            fix="give qrels= (a folder of an LTR run holds test.qrels)",
        )  # fmt: skip
    return qrels


def load_results(*roots: str | os.PathLike, summary: bool = False) -> pd.DataFrame:
    """The records of every complete run below ``roots`` as a tidy DataFrame (module
    docstring): one row per record with ``root``, ``run`` (the folder below its root), the
    settings that tell the runs apart, the record's keys (``dataset``, ``beta``,
    ``condition``, ``metric``, ``seed``, ...) and ``value``; ``summary=True``: ``mean``,
    ``sd`` and ``n`` over seeds and repetitions instead. No complete run is a
    :class:`ParameterError`. Example::

        import groupbias as gb

        records = gb.load_results("runs/table1")
        records.pivot_table(index=["dataset", "beta"], columns=["metric", "condition"],
                            values="value")
    """
    if not roots:
        raise ParameterError("roots", "one or more run folders", "none")
    runs = [r for r in read_runs(roots) if r.records]
    if not runs:
        raise ParameterError(
            "roots", "folders holding complete runs (metrics.json, meta.json)",
            [str(r) for r in roots],
        )  # fmt: skip
    df = tidy_results(runs)
    return summarize(df) if summary else df
