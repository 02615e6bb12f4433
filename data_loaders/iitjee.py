"""IIT-JEE 2009 marks as ranking data (paper Sec. 6.1, dataset (i)).

The published table (released in June 2009 after a Right to Information request) holds the
marks of about 385k candidates. The loader reads a CSV export with the columns

    REGST_NO, NAME, category, sub_category, GENDER, PIN_RES, PARENT_NAM, math, phys, chem, mark

(header names are matched case-insensitively). Personal-name columns (``NAME``,
``PARENT_NAM``) are never read: only the columns listed in :data:`USED_COLUMNS` are parsed
(``usecols``), so no name reaches memory, the returned object or any file written from it.

Construction (paper Sec. 6.1)
-----------------------------
1. ``mark`` is min-max normalized to [0, 1] over the whole table:
   ``label = (mark - min(mark)) / (max(mark) - min(mark))``.
2. Queries are the groups of candidates with equal (birth ``category``, ``PIN_RES``).
3. A query is kept iff it has both genders, at least one normalized mark > 0.5 and at least
   one < 0.5 (the paper: 48.6k queries before, 2.9k queries / 205k scores after filtering).

Conventions
-----------
- Sensitive attribute: gender; ``groups = 1`` for female candidates (affected), 0 for male.
- Gender codes are upper-cased and stripped; ``F``/``FEMALE``/``W``/``WOMAN`` are female,
  ``M``/``MALE``/``MAN`` are male. Any other code (or an empty one) is *dropped* before the
  query filter; the count and the codes seen are reported in ``meta["dropped_unknown_gender"]``
  and ``meta["unknown_gender_codes"]``.
- Rows with an empty ``category`` or ``PIN_RES`` cannot form a query: dropped, counted in
  ``meta["dropped_missing_query_key"]``.
- Labels: the normalized mark (continuous, ``label_max = 1.0``).
- Features (feature ids 1..4): ``math``, ``phys``, ``chem``, ``mark``, each min-max normalized
  over the whole table. Feature 4 equals the label; the dataset is meant for the tabular
  regime (paper Table 1), where a model sees the labels up to group bias anyway.
- ``item_ids``: ``REGST_NO`` (string); ``query_ids``: ``"<category>|<PIN_RES>"``; queries are
  ordered by (category, PIN) and items keep their file order within a query.
- The file is ``path`` (a CSV file, or a directory holding ``iitjee2009.csv``), or
  ``$GROUPBIAS_IITJEE`` when ``path`` is None.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from groupbias.core.errors import DataError, DataFormatError, ParameterError
from groupbias.core.validation import choice
from groupbias.data.ranking_data import RankingData

from ._lazy import pandas as pd
from ._tables import check_text, read_table, record_line, require_files, resolve_path

ENV_VAR = "GROUPBIAS_IITJEE"
DEFAULT_FILE = "iitjee2009.csv"
#: the only columns read from the file (names are never parsed)
USED_COLUMNS = ("REGST_NO", "category", "GENDER", "PIN_RES", "math", "phys", "chem", "mark")
SCORE_COLUMNS = ("math", "phys", "chem", "mark")
FEMALE_CODES = frozenset({"F", "FEMALE", "W", "WOMAN"})
MALE_CODES = frozenset({"M", "MALE", "MAN"})


def _header(path: Path) -> list[str]:
    check_text(path)
    with open(path, encoding="utf-8-sig", errors="replace") as fh:  # -sig: skip a BOM
        first = fh.readline()
    if not first.strip():
        raise DataFormatError(
            path, 1, "missing header row; expected the columns " + ", ".join(USED_COLUMNS)
        )
    return [c.strip().strip('"') for c in first.rstrip("\r\n").split(",")]


def iitjee_file(path: str | os.PathLike | None = None) -> Path:
    """The CSV ``load_iitjee(path)`` reads: ``path`` (a file, or a folder holding
    ``iitjee2009.csv``), else ``$GROUPBIAS_IITJEE``; :class:`MissingFilesError` when absent."""
    p = resolve_path(path, env=ENV_VAR, expected=[DEFAULT_FILE], what="IIT-JEE CSV")
    if p.is_dir():
        require_files(
            p,
            [DEFAULT_FILE],
            hint="export the published IIT-JEE 2009 table as "
            "CSV under this name, or pass the file path",
        )
        return p / DEFAULT_FILE
    if not p.is_file():
        require_files(p.parent, [p.name])
    return p


# long: the public entry point; its docstring documents every parameter
def load_iitjee(
    path: str | os.PathLike | None = None, *, bad_rows: str = "raise", name: str = "iitjee2009"
) -> RankingData:
    """Load the IIT-JEE 2009 marks as queries of candidates grouped by (category, PIN).

    Parameters
    ----------
    path : CSV file or directory containing ``iitjee2009.csv``; ``$GROUPBIAS_IITJEE`` if None.
    bad_rows : ``"raise"`` (default) raises :class:`DataFormatError` at the first row whose
        ``math``/``phys``/``chem``/``mark`` is empty or not a number, naming file, line and
        field; ``"drop"`` drops such rows and counts them in ``meta["dropped_bad_rows"]``.

    Returns
    -------
    RankingData with features float32 [n_items, 4] (normalized math, phys, chem, mark),
    labels = normalized mark in [0, 1], groups = 1 for female (affected). See the module
    docstring for the construction (paper Sec. 6.1) and the policies.
    """
    if bad_rows not in ("raise", "drop"):
        raise ParameterError("bad_rows", "'raise' or 'drop'", bad_rows)
    p = iitjee_file(path)
    df, actual = _read_columns(p)
    n_read = len(df)
    normed, keep, n_bad, (mark_min, mark_max) = _normalized_scores(p, df, actual, bad_rows)

    female, unknown, unknown_codes, no_key, cat, pin = _candidates(df, keep)
    keep &= ~unknown & ~no_key
    rows, qptr, query_ids, before = _queries(p, cat, pin, keep, female, normed["mark"])

    feats = np.column_stack([normed[c][rows] for c in SCORE_COLUMNS]).astype(np.float32)
    labels = normed["mark"][rows]
    groups = female[rows].astype(np.float64)
    item_ids = df["REGST_NO"].fillna("").str.strip().to_numpy()[rows]

    meta = {
        "source": str(p),
        "rows_read": n_read,
        "dropped_bad_rows": n_bad,
        "dropped_unknown_gender": int(unknown.sum()),
        "unknown_gender_codes": {str(k): int(v) for k, v in unknown_codes.items()},
        "dropped_missing_query_key": int(no_key.sum()),
        "queries_before_filter": before[0],
        "items_before_filter": before[1],
        "mark_min": mark_min,
        "mark_max": mark_max,
        "feature_names": ["math", "phys", "chem", "mark"],
        "label": "mark, min-max normalized over the whole table",
        "sensitive_attribute": "gender (affected = female)",
        "n_female": int(groups.sum()),
        "n_male": int(groups.size - groups.sum()),
    }
    return RankingData(
        features=feats,
        labels=labels,
        qptr=qptr,
        query_ids=query_ids,
        feature_ids=np.arange(1, 5),
        item_ids=item_ids,
        groups=groups,
        label_max=1.0,
        name=name,
        meta=meta,
    )


def _read_columns(p: Path) -> tuple[pd.DataFrame, dict[str, str]]:
    """The used columns of the CSV (header names matched without case), renamed to
    :data:`USED_COLUMNS`' spelling, and the spelling the file uses for each."""
    header = _header(p)
    lookup = {h.lower(): h for h in header}
    missing = [c for c in USED_COLUMNS if c.lower() not in lookup]
    if missing:
        raise DataFormatError(
            p,
            1,
            "missing column(s) "
            + ", ".join(missing)
            + "; expected a header with "
            + ", ".join(USED_COLUMNS),
            field=missing[0],
        )
    actual = {c: lookup[c.lower()] for c in USED_COLUMNS}
    text_cols = {actual[c]: str for c in ("REGST_NO", "category", "GENDER", "PIN_RES")}
    df = read_table(
        p,
        usecols=list(actual.values()),
        dtype=text_cols,
        keep_default_na=False,
        na_values=[""],
        encoding="utf-8-sig",
        encoding_errors="replace",
    )
    df.columns = [next(k for k, v in actual.items() if v == col) for col in df.columns]
    if len(df) == 0:
        raise DataFormatError(p, None, "no data rows after the header")
    return df, actual


def _normalized_scores(p: Path, df: pd.DataFrame, actual: dict[str, str], bad_rows: str):
    """``(normed, keep, n_bad, (mark_min, mark_max))``: each score column min-max normalized
    over the valid rows, the rows whose scores are all numbers (``bad_rows="raise"``: the
    first other row raises, naming its line and column)."""
    n_read = len(df)
    scores = {}
    bad = np.zeros(n_read, dtype=bool)
    for col in SCORE_COLUMNS:
        raw = df[col] if pd.api.types.is_numeric_dtype(df[col]) else df[col].str.strip()
        vals = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
        col_bad = ~np.isfinite(vals)
        if bad_rows == "raise" and col_bad.any():
            i = int(np.flatnonzero(col_bad)[0])
            shown = df[col].iloc[i]
            what = "empty value" if pd.isna(shown) else f"non-numeric value {shown!r}"
            raise DataFormatError(
                p, record_line(p, i), f"{what}; expected a number", field=actual[col]
            )
        bad |= col_bad
        scores[col] = vals
    keep = ~bad
    normed = {}
    for col in SCORE_COLUMNS:
        v = scores[col][keep]
        lo, hi = float(v.min()), float(v.max())
        if hi <= lo:
            if col == "mark":
                raise DataError(
                    f"{p}: column {actual[col]!r} is constant ({lo}); min-max "
                    "normalization of the marks is undefined"
                )
            normed[col] = np.zeros(n_read)
        else:
            normed[col] = (scores[col] - lo) / (hi - lo)
        if col == "mark":
            mark_range = (lo, hi)
    return normed, keep, int(bad.sum()), mark_range


def _queries(p: Path, cat, pin, keep, female, mark):
    """``(rows, qptr, query_ids, (queries, items) before the filter)``: the kept rows grouped
    by (category, PIN) in that order, keeping the queries with both genders and marks on
    both sides of 0.5."""
    rows = np.flatnonzero(keep)
    cat_codes, cat_uni = pd.factorize(cat.to_numpy()[rows], sort=True)
    pin_codes, pin_uni = pd.factorize(pin.to_numpy()[rows], sort=True)
    order = np.lexsort((rows, pin_codes, cat_codes))
    rows = rows[order]
    key = cat_codes[order].astype(np.int64) * (len(pin_uni) + 1) + pin_codes[order]
    n_all = rows.size
    if n_all == 0:
        raise DataError(f"{p}: no candidate with a known gender, category and PIN")
    change = np.flatnonzero(key[1:] != key[:-1]) + 1
    starts = np.concatenate(([0], change))
    qptr_all = np.concatenate((starts, [n_all])).astype(np.int64)
    n_q_all = starts.size
    qidx = np.repeat(np.arange(n_q_all), np.diff(qptr_all))

    label = mark[rows]
    fem = female[rows]
    n_f = np.bincount(qidx, weights=fem, minlength=n_q_all)
    n_m = np.bincount(qidx, weights=~fem, minlength=n_q_all)
    n_hi = np.bincount(qidx, weights=label > 0.5, minlength=n_q_all)
    n_lo = np.bincount(qidx, weights=label < 0.5, minlength=n_q_all)
    q_keep = (n_f > 0) & (n_m > 0) & (n_hi > 0) & (n_lo > 0)

    sizes = np.diff(qptr_all)[q_keep]
    qptr = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=qptr[1:])
    q_first = starts[q_keep]
    q_cat = cat_uni[cat_codes[order][q_first]]
    q_pin = pin_uni[pin_codes[order][q_first]]
    query_ids = np.asarray([f"{c}|{z}" for c, z in zip(q_cat, q_pin)], dtype=object)
    return rows[q_keep[qidx]], qptr, query_ids, (int(n_q_all), int(n_all))


def _candidates(df: pd.DataFrame, keep: np.ndarray):
    """``(female, unknown, unknown_codes, no_key, category, pin)``: who is female, the kept
    rows of an unknown gender (and their codes), the kept rows of a known gender without a
    query key (category and PIN)."""
    gender = df["GENDER"].fillna("").str.strip().str.upper()
    female = gender.isin(FEMALE_CODES).to_numpy()
    male = gender.isin(MALE_CODES).to_numpy()
    unknown = ~(female | male) & keep
    unknown_codes = gender[unknown].value_counts()
    cat = df["category"].fillna("").str.strip()
    pin = df["PIN_RES"].fillna("").str.strip()
    no_key = ((cat == "") | (pin == "")).to_numpy() & keep & ~unknown
    return female, unknown, unknown_codes, no_key, cat, pin


@dataclass(frozen=True)
class IitjeeOptions:
    """IIT-JEE 2009 CSV (``load_iitjee``); ``bad_rows``: raise | drop."""

    bad_rows: str = "raise"

    def __post_init__(self) -> None:
        choice("bad_rows", self.bad_rows, ("raise", "drop"))

    def sources(self, root, split: str) -> dict:
        return {"csv": iitjee_file(root)}

    def load(self, root, split: str) -> RankingData:
        return load_iitjee(root, bad_rows=self.bad_rows)
