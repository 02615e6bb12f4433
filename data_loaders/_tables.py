"""Private helpers shared by the tabular loaders (CSV/TSV files read with pandas).

- :func:`resolve_path`: a path argument, else an environment variable read at call time.
- :func:`read_table`: ``pandas.read_csv`` with parser failures turned into
  :class:`DataFormatError` naming the file and line.
- :func:`record_line`: the 1-based file line of the ``i``-th data record (used only when an
  error is reported, so the fast path never counts lines).
- :func:`numeric_column`: a column converted to float, failing at the first bad value with
  file, line and field.
- :func:`id_column`: an id column as integers or strings, never floats
  (:func:`groupbias.core.validation.identifiers`), failing with file, line and field.
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path

import numpy as np

from groupbias.core.errors import DataFormatError, MissingFilesError
from groupbias.core.io import env_value
from groupbias.core.validation import identifiers

from ._lazy import pandas as pd


def resolve_path(
    path: str | os.PathLike | None, *, env: str, expected: list[str], what: str
) -> Path:
    """``path`` if given, else ``$env``; a clear :class:`MissingFilesError` when neither."""
    if path is None:
        value = env_value(env)
        if value is None:
            raise MissingFilesError(
                "",
                expected,
                hint=f"no {what} location given: set the environment variable {env} to "
                "your copy (or pass path=...)",
                unset=env,
            )
        path = value
    return Path(path).expanduser()


def require_files(directory: Path, names: list[str], *, hint: str | None = None) -> None:
    """Raise :class:`MissingFilesError` listing every file of ``names`` absent in
    ``directory``."""
    missing = [n for n in names if not (directory / n).is_file()]
    if missing:
        raise MissingFilesError(directory, missing, hint=hint)


# pandas numbers rows, not file lines: "line N" is the 1-based row, "row N" the 0-based one
# (blank lines count as rows, a quoted field spanning lines is one row)
_ROW_RE = re.compile(r"\b(line|row) (\d+)", re.IGNORECASE)


def _row_line(path: Path, row: int, sep: str, encoding: str) -> int | None:
    """1-based file line on which row ``row`` (0-based, blank rows included) starts."""
    with open(path, newline="", encoding=encoding, errors="replace") as fh:
        reader = csv.reader(fh, delimiter=sep if len(sep) == 1 else ",")
        start = 1
        for _ in range(row):
            try:
                next(reader)
            except (StopIteration, csv.Error):
                return None
            start = reader.line_num + 1
    return start


def _skipped(kwargs) -> int:
    """Data records skipped by an integer ``skiprows`` (the first record read is this one)."""
    skip = kwargs.get("skiprows")
    return skip if isinstance(skip, int) else 0


#: byte-order marks of the text encodings a loader cannot read (UTF-8's is skipped)
_WIDE_BOMS = {
    b"\xff\xfe\x00\x00": "UTF-32",
    b"\x00\x00\xfe\xff": "UTF-32",
    b"\xff\xfe": "UTF-16",
    b"\xfe\xff": "UTF-16",
}


def check_text(path: Path) -> None:
    """Refuse a file written in UTF-16 or UTF-32 (by its byte-order mark), naming the
    encoding: every loader reads UTF-8 (or Latin-1) text."""
    with open(path, "rb") as fh:
        head = fh.read(4)
    for bom, name in _WIDE_BOMS.items():
        if head.startswith(bom):
            raise DataFormatError(path, 1, f"{name} text; save the file as UTF-8")


def _check_header(path: Path, sep: str, encoding: str) -> None:
    """A column named twice in the header line is an error (pandas would rename the second
    one ``name.1`` and a loader would silently drop it)."""
    with open(path, newline="", encoding=encoding, errors="replace") as fh:
        try:
            header = next(csv.reader(fh, delimiter=sep if len(sep) == 1 else ","), [])
        except csv.Error:
            return  # pandas reports the line
    names = [h.strip().lstrip("\ufeff") for h in header]
    twice = next((n for i, n in enumerate(names) if n and n in names[:i]), None)
    if twice is not None:
        raise DataFormatError(path, 1, f"column {twice!r} appears twice in the header", field=twice)


def read_table(path: Path, **kwargs) -> pd.DataFrame:
    """``pd.read_csv(path, **kwargs)``; tokenizer errors become :class:`DataFormatError`
    naming the file line. A first data row with one field more than the header (or
    ``names``), which pandas would silently turn into an index column shifting every value,
    is an error too."""
    sep = kwargs.get("sep", ",")
    encoding = kwargs.get("encoding", "utf-8")
    check_text(path)
    if kwargs.get("header", "infer") == "infer" and "names" not in kwargs:
        _check_header(path, sep, encoding)
    try:
        df = pd.read_csv(path, **kwargs)
    except pd.errors.EmptyDataError:
        raise DataFormatError(path, None, "file is empty") from None
    except pd.errors.ParserError as exc:
        m = _ROW_RE.search(str(exc))
        line = None
        if m:
            row = int(m.group(2)) - (m.group(1).lower() == "line")
            line = _row_line(path, row, sep, encoding)
        raise DataFormatError(path, line, f"cannot parse row: {exc}") from None
    except UnicodeDecodeError as exc:
        raise DataFormatError(path, None, f"not valid {encoding} text ({exc.reason})") from None
    if "index_col" not in kwargs and not df.index.equals(pd.RangeIndex(len(df))):
        header = kwargs.get("header", "infer") is not None
        raise DataFormatError(
            path,
            record_line(
                path, kwargs.get("skiprows") or 0, header=header, sep=sep, encoding=encoding
            ),
            f"a row has more fields than the {len(df.columns)} columns expected",
        )
    return df


def record_line(
    path: Path, index: int, *, header: bool = True, sep: str = ",", encoding: str = "utf-8"
) -> int | None:
    """1-based line on which data record ``index`` (0-based, header excluded) starts.

    Blank lines are skipped as pandas skips them; quoted multi-line fields are handled by the
    csv module. Called only on the error path.
    """
    with open(path, newline="", encoding=encoding, errors="replace") as fh:
        reader = csv.reader(fh, delimiter=sep if len(sep) == 1 else ",")
        seen = -1 if header else 0
        start = 1
        for row in reader:
            if row and any(cell.strip() for cell in row):
                if seen == index:
                    return start
                seen += 1
            start = reader.line_num + 1
    return None


def first_bad(mask: np.ndarray) -> int | None:
    """Position of the first True in ``mask`` or None."""
    hit = np.flatnonzero(mask)
    return int(hit[0]) if hit.size else None


def numeric_column(
    df: pd.DataFrame,
    column: str,
    path: Path,
    *,
    allow_missing: bool = False,
    header: bool = True,
    sep: str = ",",
    encoding: str = "utf-8",
    field: str | None = None,
) -> np.ndarray:
    """``df[column]`` as float64; the first non-numeric (or, unless ``allow_missing``, empty)
    value raises :class:`DataFormatError` with its file line and field name."""
    raw = df[column]
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
    bad = np.isnan(values) & raw.notna().to_numpy()
    if not allow_missing:
        bad |= raw.isna().to_numpy()
    bad |= np.isinf(values)
    i = first_bad(bad)
    if i is not None:
        line = record_line(path, i, header=header, sep=sep, encoding=encoding)
        shown = raw.iloc[i]
        what = "empty value" if pd.isna(shown) else f"non-numeric value {str(shown)!r}"
        raise DataFormatError(path, line, f"{what}; expected a number", field=field or str(column))
    return values


#: the largest integer a float64 holds exactly (ids written as floats beyond it merge)
_EXACT_FLOAT = 2**53


def id_column(
    df: pd.DataFrame,
    column,
    path: Path,
    *,
    big: str = "error",
    allow_missing: bool = False,
    header: bool = True,
    sep: str = ",",
    encoding: str = "utf-8",
    field: str | None = None,
) -> np.ndarray:
    """``df[column]`` as integer ids, read exactly, never through a float (``2**53`` and
    ``2**53 + 1`` stay two ids): int64, or, with ``big="text"``, the ids as strings when
    one of them is beyond int64 (sessions ``10**30 + s`` stay distinct). A value that is
    not a decimal integer (or, with ``big="error"``, one beyond int64) raises
    :class:`DataFormatError` naming its line. ``allow_missing``: empty values become -1."""
    raw = df[column]
    field = field or str(column)

    def fail(i: int, what: str):
        line = record_line(path, i, header=header, sep=sep, encoding=encoding)
        raise DataFormatError(path, line, what, field=field)

    missing = raw.isna().to_numpy()
    if missing.any() and not allow_missing:
        fail(int(np.flatnonzero(missing)[0]), "empty value; expected an id")
    present = raw[~missing]
    rows = np.flatnonzero(~missing)
    if present.dtype.kind == "f":  # pandas read numbers with a decimal point or an exponent
        v = present.to_numpy(dtype=np.float64)
        bad = (v != np.round(v)) | (np.abs(v) > _EXACT_FLOAT)
        if bad.any():
            i = int(rows[np.flatnonzero(bad)[0]])
            fail(i, f"value {raw.iloc[i]!r}; expected an integer id (written without a point)")
        ids = v.astype(np.int64)
    else:
        text = present.to_numpy(dtype=str) if present.dtype.kind == "O" else present.to_numpy()
        ids = identifiers(field, text)
        if ids.dtype.kind != "i":
            for j, t in enumerate(text):
                decimal = str(t).strip().lstrip("+-").isdigit()
                if not decimal or (big == "error" and identifiers(field, [t]).dtype.kind != "i"):
                    i = int(rows[j])
                    limit = "" if big == "text" else " below 2**63"
                    fail(i, f"value {raw.iloc[i]!r}; expected an integer id{limit}")
    if not missing.any():
        return ids
    out = np.full(missing.size, -1 if ids.dtype.kind == "i" else "", dtype=ids.dtype)
    out[~missing] = ids
    return out


def offsets_from_sorted(keys: np.ndarray) -> np.ndarray:
    """Query offsets (``qptr``) of a key array already sorted so that equal keys are
    contiguous: int64 [n_runs + 1]."""
    n = keys.shape[0]
    if n == 0:
        return np.zeros(1, dtype=np.int64)
    change = np.flatnonzero(keys[1:] != keys[:-1]) + 1
    return np.concatenate(([0], change, [n])).astype(np.int64)
