"""TREC files: run files, qrels and item→group files, read and written for any ranking data.

Formats (whitespace-separated, one line per item; the TREC conventions ``trec_eval``,
``ir_measures`` and ``ranx`` read):

- **run**: ``qid Q0 docno rank score tag``. Written in rank order (scores descending, ties
  by position in the list), ranks from 1, scores with every digit (the shortest text that
  reads back as the same float64, so a run read back ranks and scores exactly as written);
- **qrels**: ``qid iteration docno relevance``; integral labels are written as integers
  (what ``trec_eval`` and ``ir_measures`` read), others as floats. Labels below 0 (e.g. -2
  for spam) read as 0, never relevant, and are marked :attr:`Qrels.unjudged`: ``trec_eval``
  holds such a document "in the pool but unjudged" (bpref skips it);
- **groups**: ``docno group`` (one line per item; the same docno may appear once only) or
  ``qid docno group`` (per query, where an item's group depends on the query). ``group`` is
  the item's membership of the affected group in [0, 1] (1 = affected), or a label such as
  ``L``/``H`` read with ``affected="L"`` (the label of the affected group).

**Item ids.** An item is named by the dataset's own ids (``RankingData.item_ids``: TREC
Fair's paper ids, LETOR line numbers, MovieLens movie ids) or, where a dataset has none
(synthetic data, the preprocessed TREC Fair files under ``ppg/``), ``<qid>_<position>``:
its query id and its 0-based position in the query's list as loaded
(:func:`item_ids_of`). Ids must be non-empty, without whitespace, and unique within a
query.

A run read back is a :class:`TrecRun` (flat arrays and query offsets ``qptr``, like
:class:`~groupbias.data.ranking_data.RankingData`); qrels are :class:`Qrels`; a group file is
:class:`GroupFile`. Malformed files raise :class:`~groupbias.core.errors.DataFormatError`
naming the file and line (its line in the file, comment and blank lines counted); every file
is written atomically.

**Reading** follows ``trec_eval``: fields are separated by any whitespace (tabs or spaces);
blank lines and comment lines (``#`` first, after any leading whitespace: a ``#`` inside a
field, such as MS MARCO v2.1's docnos, is part of it) are skipped; a run's fields after the
sixth are ignored (``trec_eval``'s ``results.trunc``) and its tag is its last line's; a file
starting with gzip's bytes (``.gz``) is decompressed. Qrels have exactly four fields.
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import re
import warnings
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..core.errors import DataFormatError, ParameterError
from ..core.io import write_text_atomic
from ..core.validation import vector
from .ranking_data import RankingData

if TYPE_CHECKING:  # pandas is imported where used: a run that reads no TREC file never loads it
    import pandas as pd

__all__ = [
    "TrecRun",
    "Qrels",
    "GroupFile",
    "item_ids_of",
    "with_usable_ids",
    "run_of",
    "write_run",
    "read_run",
    "qrels_of",
    "write_qrels",
    "read_qrels",
    "groups_of",
    "write_groups",
    "read_groups",
]


@dataclass(frozen=True, eq=False)
class TrecRun:
    """A run: ``query_ids`` [n_queries] (str), offsets ``qptr`` [n_queries + 1], per item
    ``item_ids`` (str) and ``scores`` (float64), in each query's rank order; ``tag``."""

    query_ids: np.ndarray
    qptr: np.ndarray
    item_ids: np.ndarray
    scores: np.ndarray
    tag: str = "groupbias"

    @property
    def n_queries(self) -> int:
        return int(self.qptr.size - 1)

    def write(self, path: str | os.PathLike) -> Path:
        """Write ``qid Q0 docno rank score tag`` lines in rank order, atomically."""
        _check_token("tag", self.tag)
        qi = np.repeat(np.arange(self.n_queries), np.diff(self.qptr))
        order = np.lexsort((np.arange(qi.size), -self.scores, qi))  # stable within a query
        rank = np.empty(qi.size, dtype=np.int64)
        rank[order] = np.arange(qi.size) - self.qptr[qi[order]] + 1
        q = self.query_ids.astype(str)[qi]
        lines = [
            f"{a} Q0 {d} {r} {s!r} {self.tag}"
            for a, d, r, s in zip(
                q[order].tolist(),
                self.item_ids[order].tolist(),
                rank[order].tolist(),
                self.scores[order].tolist(),
            )
        ]
        return write_text_atomic(path, "\n".join(lines) + "\n" if lines else "")


@dataclass(frozen=True, eq=False)
class Qrels:
    """Relevance judgments: per judged item ``query_ids``, ``item_ids`` (str) and
    ``labels`` (float64, >= 0); ``unjudged`` (bool, or None: none is), per line, whether
    the file gave it a relevance below 0, which ``trec_eval`` reads as "in the pool but
    unjudged" (its label here is 0)."""

    query_ids: np.ndarray
    item_ids: np.ndarray
    labels: np.ndarray
    unjudged: np.ndarray | None = None

    def write(self, path: str | os.PathLike) -> Path:
        """Write ``qid 0 docno relevance`` lines atomically (integers where integral; -1 for
        an :attr:`unjudged` line)."""
        values = (
            self.labels if self.unjudged is None else np.where(self.unjudged, -1.0, self.labels)
        )
        integral = bool(np.all(values == np.round(values)))
        labels = values.astype(np.int64).tolist() if integral else values.tolist()
        lines = [
            f"{q} 0 {d} {v!r}"
            for q, d, v in zip(self.query_ids.tolist(), self.item_ids.tolist(), labels)
        ]
        return write_text_atomic(path, "\n".join(lines) + "\n" if lines else "")

    def lookup(self, query_ids: np.ndarray, item_ids: np.ndarray) -> np.ndarray:
        """The label of every ``(query, item)`` pair; 0 for pairs without a judgment."""
        at = _positions((self.query_ids, self.item_ids), (query_ids, item_ids))
        return np.where(at >= 0, self.labels[at], 0.0)


@dataclass(frozen=True, eq=False)
class GroupFile:
    """Memberships of the affected group (float64 in [0, 1]) by ``item_ids`` (str), or by
    ``(query_ids, item_ids)`` when ``query_ids`` is not None; ``path`` for messages."""

    item_ids: np.ndarray
    groups: np.ndarray
    query_ids: np.ndarray | None = None
    path: str | None = None

    def write(self, path: str | os.PathLike) -> Path:
        """Write ``docno group`` (or ``qid docno group``) lines atomically."""
        values = [_membership_text(g) for g in self.groups.tolist()]
        if self.query_ids is None:
            lines = [f"{d} {g}" for d, g in zip(self.item_ids.tolist(), values)]
        else:
            lines = [
                f"{q} {d} {g}"
                for q, d, g in zip(self.query_ids.tolist(), self.item_ids.tolist(), values)
            ]
        return write_text_atomic(path, "\n".join(lines) + "\n" if lines else "")

    def lookup(self, query_ids: np.ndarray, item_ids: np.ndarray) -> np.ndarray:
        """The membership of every ``(query, item)``; an item the file lacks is a
        :class:`DataFormatError` naming it (its group cannot be guessed)."""
        if self.query_ids is None:
            at = _positions((self.item_ids,), (item_ids,))
        else:
            at = _positions((self.query_ids, self.item_ids), (query_ids, item_ids))
        got = np.where(at >= 0, self.groups[at], np.nan)
        missing = np.flatnonzero(at < 0)
        if missing.size:
            i = int(missing[0])
            raise DataFormatError(
                self.path,
                None,
                f"no group for item {item_ids[i]!r} of query {query_ids[i]!r} "
                f"({missing.size} items lack one): every ranked item needs its group",
            )
        return got


def _membership_text(g: float) -> str:
    return str(int(g)) if g in (0.0, 1.0) else repr(g)


def _keys(*tables) -> list[np.ndarray]:
    """int64 keys of the rows of ``tables`` (each a tuple of id columns, e.g. query and item
    ids), numbered jointly: equal rows get equal keys, in every table."""
    import pandas as pd

    sizes = [len(t[0]) for t in tables]
    key = np.zeros(sum(sizes), dtype=np.int64)
    for column in zip(*tables):
        joint = np.concatenate([_as_text(c) for c in column])
        codes, uniques = pd.factorize(joint)
        key = key * max(len(uniques), 1) + codes
    return np.split(key, np.cumsum(sizes)[:-1])


def _as_text(ids) -> np.ndarray:
    """Ids as an object array of ``str`` (numbers written as in a file)."""
    a = np.asarray(ids, dtype=object)
    if a.size and not all(isinstance(x, str) for x in a[:: max(a.size // 64, 1)]):
        a = a.astype(str).astype(object)
    return a


def _positions(table, wanted) -> np.ndarray:
    """The row of ``table`` holding each row of ``wanted`` (tuples of id columns), -1 where
    none does."""
    import pandas as pd

    have, want = _keys(table, wanted)
    return pd.Index(have).get_indexer(want)


def _first_repeat(*columns) -> int | None:
    """The first row whose ids (``columns``) an earlier row has, or None."""
    import pandas as pd

    (key,) = _keys(columns)
    repeated = pd.Index(key).duplicated()
    return int(np.argmax(repeated)) if repeated.any() else None


def _check_token(name: str, value) -> None:
    text = str(value)
    if not text or any(c.isspace() for c in text):
        raise ParameterError(name, "a non-empty word without whitespace", value)


# --------------------------------------------------------------------------- from ranking data


def item_ids_of(data: RankingData) -> np.ndarray:
    """The item ids of ``data`` as strings (module docstring): the dataset's own, else
    ``<qid>_<position in the query>``. Ids that are empty, hold whitespace or repeat within
    a query raise :class:`ParameterError` naming the first."""
    import pandas as pd

    qidx = data.query_index()
    qids = np.asarray(data.query_ids).astype(str)
    if data.item_ids is None:
        pos = (np.arange(data.n_items) - data.qptr[qidx]).astype(str)
        return np.char.add(np.char.add(qids[qidx], "_"), pos).astype(object)
    ids = np.asarray(data.item_ids).astype(str).astype(object)
    bad = pd.Series(ids).str.contains(r"\s|^$", regex=True).to_numpy()
    if bad.any():
        raise ParameterError(
            "data.item_ids",
            "non-empty ids without whitespace (TREC files split on it)",
            ids[int(np.argmax(bad))],
        )
    repeat = _first_repeat(qids[qidx], ids)
    if repeat is not None:
        raise ParameterError(
            "data.item_ids",
            "ids unique within each query",
            ids[repeat],
            fix=f"query {qids[qidx][repeat]!r} lists it twice",
        )
    return ids


def with_usable_ids(data: RankingData) -> RankingData:
    """``data`` itself when its item ids can name items in TREC files, else ``data`` without
    them (its files then use ``<qid>_<position>``): for writers that must not fail on a
    dataset's odd ids (empty, with whitespace, repeated within a query)."""
    try:
        item_ids_of(data)
    except ParameterError:
        return replace(data, item_ids=None)
    return data


def _query_ids(data: RankingData) -> np.ndarray:
    import pandas as pd

    qids = np.asarray(data.query_ids).astype(str)
    bad = pd.Series(qids).str.contains(r"\s|^$", regex=True).to_numpy()
    if bad.any():
        raise ParameterError(
            "data.query_ids", "non-empty ids without whitespace", qids[int(np.argmax(bad))]
        )
    return qids.astype(object)


def run_of(scores, data: RankingData, *, tag: str = "groupbias") -> TrecRun:
    """The run of ``scores`` (float [n_items], finite) on ``data``."""
    s = vector("scores", scores, data.n_items, fix="a run file holds finite scores only")
    _check_token("tag", tag)
    return TrecRun(_query_ids(data), data.qptr, item_ids_of(data), s, tag)


def write_run(
    path: str | os.PathLike, scores, data: RankingData, *, tag: str = "groupbias"
) -> Path:
    """Write the run of ``scores`` on ``data`` (:func:`run_of`) to ``path``, atomically."""
    return run_of(scores, data, tag=tag).write(path)


def qrels_of(data: RankingData, labels=None) -> Qrels:
    """The qrels of ``data``: every item with its label (``labels``: others, e.g. graded
    relevance; default ``data.labels``), zeros included."""
    lab = data.labels if labels is None else vector("labels", labels, data.n_items, low=0.0)
    qids = _query_ids(data)[data.query_index()]
    return Qrels(qids, item_ids_of(data), np.asarray(lab, dtype=np.float64))


def write_qrels(path: str | os.PathLike, data: RankingData, labels=None) -> Path:
    """Write the qrels of ``data`` (:func:`qrels_of`) to ``path``, atomically."""
    return qrels_of(data, labels).write(path)


def groups_of(data: RankingData) -> GroupFile:
    """The item→group file of grouped ``data``: per item (``docno group``) when every id has
    one membership, else per query and item."""
    import pandas as pd

    if data.groups is None:
        raise ParameterError("data.groups", "a grouped dataset", None, fix="apply a grouping")
    ids = item_ids_of(data)
    qids = _query_ids(data)[data.query_index()]
    per_item = pd.DataFrame({"item": ids, "group": data.groups}).drop_duplicates()
    if not per_item["item"].duplicated().any():
        return GroupFile(
            per_item["item"].to_numpy(dtype=object), per_item["group"].to_numpy(np.float64)
        )
    return GroupFile(ids, np.asarray(data.groups, dtype=np.float64), qids)


def write_groups(path: str | os.PathLike, data: RankingData) -> Path:
    """Write the item→group file of ``data`` (:func:`groups_of`) to ``path``, atomically."""
    return groups_of(data).write(path)


# --------------------------------------------------------------------------- reading


#: a line ``trec_eval`` skips: blank, or a comment (``#`` after any leading whitespace)
_SKIPPED_LINE = re.compile(rb"[ \t\r\f\v]*(?:#|$)")
_ANY_SKIPPED = re.compile(rb"(?m)^[ \t\r\f\v]*(?:#|$)")


def _file_bytes(path: Path) -> bytes:
    """The bytes of a TREC file, decompressed where it is gzip (``.gz``, told by its first
    bytes); a gzip file that cannot be read is a :class:`DataFormatError`."""
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise DataFormatError(
                path, None, f"a gzip file that cannot be read ({exc}): compress it again"
            ) from None
    return _utf8_bytes(path, data)


def _utf8_bytes(path: Path, data: bytes) -> bytes:
    """``data``, the bytes of a UTF-8 text file (a UTF-8 byte-order mark dropped); UTF-16
    and bytes that are not UTF-8 are a :class:`DataFormatError` naming the line."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise DataFormatError(
            path, 1, "UTF-16 text (its byte-order mark); TREC files are read as UTF-8: save "
            "it as UTF-8",
        )  # fmt: skip
    if data[:3] == b"\xef\xbb\xbf":
        data = data[3:]
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DataFormatError(path, line, f"not UTF-8 text ({exc.reason})") from None
    return data


def _content_lines(data: bytes) -> tuple[bytes, np.ndarray | None]:
    """``data`` without the lines ``trec_eval`` skips (blank and comment lines), and the
    file's line number of each line kept (None: every line is kept)."""
    body = data[:-1] if data.endswith(b"\n") else data
    if not _ANY_SKIPPED.search(body):
        return data, None
    lines = body.split(b"\n")
    keep = [i for i, line in enumerate(lines) if not _SKIPPED_LINE.match(line)]
    return b"\n".join([lines[i] for i in keep] + [b""]), np.asarray(keep, dtype=np.int64) + 1


@dataclass(frozen=True)
class _Lines:
    """The fields of a file's content lines (``df``, strings) and each one's line number in
    the file (``number``, 1-based: comment and blank lines counted)."""

    df: pd.DataFrame
    number: np.ndarray

    def at(self, row: int) -> int:
        return int(self.number[row])


def _layout_text(layout: tuple[str, ...]) -> str:
    return f"{len(layout)} fields ({' '.join(layout)})"


def _fields_on(data: bytes, row: int) -> int:
    """How many fields content line ``row`` of ``data`` has (read again: error path)."""
    line = data.split(b"\n")[row]
    return len(line.split())


def _read_columns(
    path: str | os.PathLike,
    layouts: tuple[tuple[str, ...], ...],
    what: str,
    *,
    extra_fields: bool = False,
) -> _Lines:
    """The whitespace-separated fields of ``path``'s lines as strings, named by the layout of
    that many fields (the first line's, where there are several), read as ``trec_eval``
    reads: blank lines and comment lines (``#`` first) skipped, tabs or spaces, gzip
    files decompressed; ``extra_fields``: fields after the layout's are ignored (a run's,
    as trec_eval does). A line with another number of fields, or a file without content
    lines, is a :class:`DataFormatError` naming its line in the file."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{what} file not found: {path}")
    data, numbers = _content_lines(_file_bytes(path))
    # one more field than a layout has shows a line with too many (unless they are ignored)
    width = max(len(x) for x in layouts) + (0 if extra_fields else 1)
    try:  # a line with more than `width` fields keeps its first ones: pandas warns of that
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pd.errors.ParserWarning)
            df = pd.read_csv(
                io.BytesIO(data), sep=r"\s+", header=None, names=range(width), index_col=False,
                dtype=object, keep_default_na=False, quoting=csv.QUOTE_NONE, engine="c",
            )  # fmt: skip
    except pd.errors.EmptyDataError:
        raise DataFormatError(path, None, f"empty: no {what} lines") from None
    if df.empty:
        raise DataFormatError(path, None, f"empty: no {what} lines")
    lines = _Lines(df, np.arange(1, len(df) + 1) if numbers is None else numbers)
    first = int((df.iloc[0] != "").sum())
    names = next((x for x in layouts if len(x) == first), None)
    if names is None:
        shown = " or ".join(_layout_text(x) for x in layouts)
        got = _fields_on(data, 0)
        raise DataFormatError(path, lines.at(0), f"expected {shown}, got {got}")
    shown = _layout_text(names)
    if extra_fields:
        shown = f"at least {shown[:-1]}; later ones are ignored)"
    if len(layouts) > 1:
        shown += " as on the file's first line"
    short = (df[len(names) - 1] == "").to_numpy()
    long = (df[len(names)] != "").to_numpy() if len(names) < width else np.zeros_like(short)
    bad = np.flatnonzero(short | long)
    if bad.size:
        i = int(bad[0])
        got = _fields_on(data, i)
        raise DataFormatError(path, lines.at(i), f"expected {shown}, got {got}")
    df = df.iloc[:, : len(names)]
    df.columns = list(names)
    return _Lines(df, lines.number)


def _numbers(path, lines: _Lines, column: str) -> np.ndarray:
    import pandas as pd

    df = lines.df
    try:  # numpy parses the text of a column in one pass; a bad entry is located below
        values = df[column].to_numpy().astype(np.float64)
    except ValueError:
        values = pd.to_numeric(df[column], errors="coerce").to_numpy(dtype=np.float64)
    _refuse_first(path, lines, ~np.isfinite(values), column, "not a finite number: {!r}")
    return values


def _refuse_first(path, lines: _Lines, bad: np.ndarray, column: str, message: str) -> None:
    """A :class:`DataFormatError` at the first line where ``bad`` holds, naming ``column``
    and its text there (``message`` formats it)."""
    rows = np.flatnonzero(bad)
    if rows.size:
        i = int(rows[0])
        text = message.format(lines.df[column].iloc[i])
        raise DataFormatError(path, lines.at(i), text, field=column)


def _whole_grades(path, lines: _Lines, labels: np.ndarray) -> None:
    """A :class:`DataFormatError` naming the first line whose relevance is not a whole
    number: qrels grades are integers (``trec_eval`` would read ``1.5`` as 1 without a word)."""
    _refuse_first(
        path,
        lines,
        labels != np.round(labels),
        "relevance",
        "relevance {!r} is not a whole number; qrels grades are integers (trec_eval would "
        "read it as its integer part): write the grade you mean",
    )


def _duplicates(path, lines: _Lines, columns: tuple[str, ...], what: str) -> None:
    """A :class:`DataFormatError` naming the first line whose ``columns`` repeat a line's."""
    df = lines.df
    i = _first_repeat(*(df[c].to_numpy() for c in columns))
    if i is not None:
        ids = " ".join(str(df[c].iloc[i]) for c in columns)
        raise DataFormatError(path, lines.at(i), f"{what} {ids!r} appears twice")


def read_run(path: str | os.PathLike) -> TrecRun:
    """A run file (``qid Q0 docno rank score tag``, read as ``trec_eval`` reads it: fields
    after the sixth ignored, blank and ``#`` comment lines skipped, gzip files
    decompressed), queries in the order they first appear, items of a query in the file's
    order (the evaluation orders them: :mod:`groupbias.evaluation.trec_eval`); the last
    line's tag, as ``trec_eval`` reports it."""
    import pandas as pd

    lines = _read_columns(
        path, (("qid", "Q0", "docno", "rank", "score", "tag"),), "run", extra_fields=True
    )
    df = lines.df
    scores = _numbers(path, lines, "score")
    _duplicates(path, lines, ("qid", "docno"), "query and document")
    codes, uniques = pd.factorize(df["qid"], sort=False)
    order = np.argsort(codes, kind="stable")
    qptr = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=len(uniques)))])
    return TrecRun(
        np.asarray(uniques, dtype=object),
        qptr.astype(np.int64),
        df["docno"].to_numpy(dtype=object)[order],
        scores[order],
        str(df["tag"].iloc[-1]),
    )


def read_qrels(path: str | os.PathLike) -> Qrels:
    """A qrels file (``qid iteration docno relevance``; blank and ``#`` comment lines
    skipped, gzip files decompressed); relevance below 0 reads as 0, marked
    :attr:`Qrels.unjudged` (``trec_eval``'s "in the pool but unjudged")."""
    lines = _read_columns(path, (("qid", "iteration", "docno", "relevance"),), "qrels")
    df = lines.df
    labels = _numbers(path, lines, "relevance")
    _whole_grades(path, lines, labels)
    _duplicates(path, lines, ("qid", "docno"), "query and document")
    return Qrels(
        df["qid"].to_numpy(dtype=object),
        df["docno"].to_numpy(dtype=object),
        np.maximum(labels, 0.0),
        labels < 0,
    )


def read_groups(path: str | os.PathLike, *, affected: str | None = None) -> GroupFile:
    """An item→group file (``docno group`` or ``qid docno group``). ``affected``: the label
    of the affected group when the file holds labels (``"L"``: low h-index); without it the
    groups must be memberships in [0, 1]."""
    import pandas as pd

    path = Path(path)
    lines = _read_columns(path, (("docno", "group"), ("qid", "docno", "group")), "groups")
    df = lines.df
    if affected is not None:
        groups = (df["group"] == str(affected)).to_numpy(dtype=np.float64)
        if not groups.any():
            raise DataFormatError(
                path, None, f"no item has the affected label {affected!r}", field="group"
            )
    else:
        groups = pd.to_numeric(df["group"], errors="coerce").to_numpy(dtype=np.float64)
        _refuse_first(
            path,
            lines,
            ~((groups >= 0) & (groups <= 1)),
            "group",
            "{!r} is not a membership in [0, 1]; for labels such as L/H name the affected one "
            "(affected='L', --affected L)",
        )
    per_query = "qid" in df.columns
    _duplicates(path, lines, ("qid", "docno") if per_query else ("docno",), "item")
    return GroupFile(
        df["docno"].to_numpy(dtype=object),
        groups,
        df["qid"].to_numpy(dtype=object) if per_query else None,
        str(path),
    )
