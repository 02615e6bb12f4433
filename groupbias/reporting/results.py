"""Tidy results of run folders: every record of every complete run, with the settings that
tell the runs apart, and their summary over seeds and repetitions.

**Records** (:func:`tidy_results`): one row per record, i.e. per run × dataset × β ×
condition × metric × repetition (and whatever else an experiment's records are keyed by:
cluster size, estimator, utility ratio, sessions, drift schedule, ...), numbers as numbers.
Each row carries ``run`` (the folder below its root), ``root`` and the run's
*distinguishing settings* (:func:`run_settings`): the command-line overrides that differ
between the runs (``.hydra/overrides.yaml``, which the command writes into every run
folder: ``evaluation=policy``, ``estimator=calibrated``, ``seed=2``; a run without the
override shows the default: the option of ``configs/config.yaml``'s defaults list, or the
run's resolved value), and for runs without that file (runs made through the library)
the resolved configuration keys that differ, one column per key or, where several keys of
one group differ, one column per group (``k=v,...``). A setting the records tell
themselves (``estimator.cluster_size`` of a cluster-size sweep, whose records carry
``cluster_size``) is left out.

**Summary** (:func:`summarize`): the records grouped by everything that identifies them
except the replicate axes (:data:`REPLICATES`: ``seed``, ``repetition``) and the run
folder: ``mean``, ``sd`` (sample standard deviation, ddof 1; NaN for one replicate) and
``n`` of ``value``; ``p_value`` is the largest over the replicates (a marker in a table
then means every replicate's test had p below the level); every other number of the
records (``n_queries``, ``ci_low``, ...) is averaged.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

from ..app.preflight import RUN_DIR_EXCLUDED
from ..app.runs import NON_RESULT_KEYS, complete_records, read_meta
from ..core.errors import DataFormatError

__all__ = [
    "REPLICATES",
    "VALUE_FIELDS",
    "RunFolder",
    "read_runs",
    "run_identity",
    "run_settings",
    "tidy_results",
    "summarize",
    "key_columns",
]

#: the axes a summary averages over
REPLICATES = ("seed", "repetition")
#: the numbers of a record (every other field identifies it); ``p_vs_<condition>`` too
VALUE_FIELDS = (
    "value",
    "p_value",
    "n_queries",
    "std",
    "n_clusters",
    "ks_min",
    "flat_width",
    "cluster_spread",
    "ci_low",
    "ci_high",
    "cluster_size_chosen",
)
#: where a record came from: not a setting, not averaged over
ORIGIN = ("root", "run")
#: overrides that do not change results (the command's own exclusions, configs/config.yaml)
QUIET_OVERRIDES = (*RUN_DIR_EXCLUDED, "verbose")


@dataclass
class RunFolder:
    """One complete run: its folder, root, records, resolved config (flattened to dotted
    keys) and command-line overrides (``{key: value}``; None without ``.hydra``)."""

    path: Path
    root: Path
    records: list[dict]
    config: dict
    overrides: dict | None = field(default=None)

    @property
    def name(self) -> str:
        rel = self.path.relative_to(self.root)
        return "." if str(rel) == "." else str(rel)


def _flatten(node, prefix: str = "") -> dict:
    if isinstance(node, dict):
        out: dict = {}
        for k, v in node.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    value = json.dumps(node, sort_keys=True) if isinstance(node, list) else node
    return {prefix[:-1]: value}


def _overrides(folder: Path) -> dict | None:
    path = folder / ".hydra" / "overrides.yaml"
    if not path.is_file():
        return None
    items = yaml.safe_load(path.read_text()) or []
    out = {}
    for item in items:
        key, _, value = str(item).partition("=")
        key = key.lstrip("+~")
        if key in QUIET_OVERRIDES or key.startswith("hydra."):
            continue
        out[key] = value
    return out


def _check_keys(path: Path, records: list[dict]) -> None:
    """Every record names what it is (a field beside its numbers and replicate axes:
    ``metric``, ``condition``, ...): a :class:`DataFormatError` naming the file otherwise."""
    for i, rec in enumerate(records):
        if not any(not _is_value(k) and k not in REPLICATES for k in rec):
            raise DataFormatError(
                path,
                None,
                f"record {i} ({json.dumps(rec, default=str)[:80]}) has no field saying what it "
                "is (metric, condition, dataset, ...): only numbers; rerun the experiment or "
                "move the folder out of the roots",
                field="records",
            )


def run_identity(folder: Path) -> str | None:
    """What makes two run folders the same run: the config fingerprint, the seed and the
    fingerprints of the data read (``meta.json``); None when ``meta.json`` lacks the
    fingerprint (a run written by hand: never a duplicate)."""
    meta = read_meta(folder / "meta.json")
    if not meta.get("fingerprint"):
        return None
    inputs = meta.get("inputs")
    data = sorted(
        f"{r.get('key')}={r.get('fingerprint')}"
        for r in (inputs if isinstance(inputs, list) else [])
        if isinstance(r, dict)
    )
    return json.dumps([meta["fingerprint"], meta.get("seed"), data], default=str)


def read_runs(
    roots: Iterable[str | os.PathLike], *, notes: list[str] | None = None
) -> list[RunFolder]:
    """Every complete run below ``roots`` (``metrics.json`` beside a ``meta.json`` with
    status complete; half-finished runs are left out), each run once: a folder with the
    identity (:func:`run_identity`) of one read before (a copy) is left out, and ``notes``
    gets a line naming both."""
    runs = []
    seen: dict[str, Path] = {}
    for root in roots:
        root = Path(root)
        for mp in sorted(root.rglob("metrics.json")):
            records = complete_records(mp.parent)
            if records is None:  # half-finished
                continue
            _check_keys(mp, records)
            identity = run_identity(mp.parent)
            if identity is not None and identity in seen:
                if notes is not None:
                    notes.append(
                        f"{mp.parent} is the run of {seen[identity]} (same config, seed and "
                        "data digests): counted once"
                    )
                continue
            if identity is not None:
                seen[identity] = mp.parent
            cfg_path = mp.parent / "config.yaml"
            cfg = yaml.safe_load(cfg_path.read_text()) if cfg_path.is_file() else {}
            cfg = {k: v for k, v in (cfg or {}).items() if k not in (*NON_RESULT_KEYS, "verbose")}
            runs.append(
                RunFolder(
                    mp.parent,
                    root,
                    list(records),
                    _flatten(cfg),
                    _overrides(mp.parent),
                )
            )
    return runs


def _group_defaults() -> dict:
    """``{group: option}`` of the defaults list of ``configs/config.yaml``."""
    from ..app.cli import CONFIG_DIR

    cfg = yaml.safe_load((Path(CONFIG_DIR) / "config.yaml").read_text()) or {}
    out = {}
    for entry in cfg.get("defaults", []):
        if isinstance(entry, dict):
            out.update({str(k): str(v) for k, v in entry.items()})
    return out


def _shown(value) -> str:
    return "null" if value is None else str(value)


def run_settings(runs: list[RunFolder]) -> pd.DataFrame:
    """The distinguishing settings of ``runs`` (module docstring): one row per run (index
    the runs' positions), one column per setting whose value differs between them."""
    columns: dict[str, list[str]] = {}
    covered: set[str] = set()
    keys = sorted({k for r in runs if r.overrides for k in r.overrides})
    defaults = _group_defaults() if keys else {}
    for key in keys:
        values = []
        for r in runs:
            if r.overrides and key in r.overrides:
                values.append(r.overrides[key])
            elif "." not in key and key in defaults:
                values.append(defaults[key])
            else:
                values.append(_shown(r.config.get(key)))
        if len(set(values)) > 1:
            columns[key] = values
        covered.add(key)
    differing = [
        k
        for k in sorted({k for r in runs for k in r.config})
        if len({_shown(r.config.get(k)) for r in runs}) > 1
        and not any(k == c or k.startswith(c + ".") for c in covered)
    ]
    by_group: dict[str, list[str]] = {}
    for k in differing:
        by_group.setdefault(k.split(".")[0], []).append(k)
    for group, ks in by_group.items():
        if f"{group}.name" in ks:  # runs of different experiments: named by the experiment
            columns[group] = [_shown(r.config.get(f"{group}.name")) for r in runs]
        elif len(ks) == 1:
            columns[ks[0]] = [_shown(r.config.get(ks[0])) for r in runs]
        else:
            columns[group] = [
                ",".join(f"{k[len(group) + 1 :]}={_shown(r.config.get(k))}" for k in ks)
                for r in runs
            ]
    return pd.DataFrame(columns, index=pd.RangeIndex(len(runs)))


def _cell(value):
    """A record field as a table cell: lists and mappings as JSON text."""
    return json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else value


def tidy_results(runs: list[RunFolder]) -> pd.DataFrame:
    """One row per record of ``runs`` with ``root``, ``run`` and the runs' distinguishing
    settings (a setting named like a record field is called ``<name> (run)``); ``seed``
    as a number."""
    settings = run_settings(runs)
    rows = []
    for i, r in enumerate(runs):
        own = {}
        for key, value in settings.iloc[i].items():
            name = f"{key} (run)" if any(key in rec for rec in r.records) else key
            own[name] = value
        origin = {"root": str(r.root), "run": r.name}
        rows += [{**origin, **own, **{k: _cell(v) for k, v in rec.items()}} for rec in r.records]
    df = pd.DataFrame(rows)
    if "seed" in df.columns:
        df["seed"] = pd.to_numeric(df["seed"], errors="coerce")
    return _drop_told(df, [c for c in settings.columns if c in df.columns and c not in REPLICATES])


def _drop_told(df: pd.DataFrame, settings: list[str]) -> pd.DataFrame:
    """Without the settings the records tell themselves (``estimator.cluster_size`` where
    the records carry ``cluster_size``): one value per combination of the records' keys."""
    own = [c for c in key_columns(df) if c not in settings]
    if not own:
        return df
    keys = df[own].astype(str)
    told = [
        c
        for c in settings
        if df[c].astype(str).groupby([keys[k] for k in own]).nunique().max() == 1
    ]
    return df.drop(columns=told)


#: the columns a summary adds: the statistics of ``value``
SUMMARY_FIELDS = ("mean", "sd", "n")


def _is_value(column: str) -> bool:
    return column in VALUE_FIELDS or column in SUMMARY_FIELDS or column.startswith("p_vs_")


def key_columns(df: pd.DataFrame) -> list[str]:
    """The columns that identify a record in a summary: neither numbers of the record, nor
    replicate axes, nor where it came from."""
    return [c for c in df.columns if not _is_value(c) and c not in (*REPLICATES, *ORIGIN)]


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """The summary of tidy results over the replicates (module docstring)."""
    keys = key_columns(df)
    data = df.copy()
    for c in keys:  # None and NaN alike: one group, shown empty
        data[c] = data[c].astype(object).where(data[c].notna(), None)
    numbers = [c for c in data.columns if _is_value(c) and c not in SUMMARY_FIELDS]
    for c in numbers:
        data[c] = pd.to_numeric(data[c], errors="coerce")
    grouped = data.groupby(keys, dropna=False, sort=False)
    out = grouped["value"].agg(mean="mean", sd=lambda v: v.std(ddof=1), n="count")
    extra = {}
    for c in numbers:
        if c == "value":
            continue
        extra[c] = (
            grouped[c].max() if c == "p_value" or c.startswith("p_vs_") else grouped[c].mean()
        )
    if extra:
        out = out.join(pd.DataFrame(extra))
    out = out.reset_index()
    out["n"] = out["n"].astype(int)
    return out
