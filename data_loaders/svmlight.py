"""Fast, validating reader for SVMlight / LETOR ranking files.

Format (one item per line; see ``docs/data_svmlight.md``)::

    <label> qid:<query id> <feature id>:<value> <feature id>:<value> ... [# comment]

The file is read in chunks of whole lines (1 MiB by default) into reused buffers, and each
chunk is parsed in one of two ways:

1. the compiled loop (:mod:`groupbias._fast.svmlight_loops`, where the ``backend`` knob
   and the file's size say it serves: :func:`parse_loop`) reads every byte once and writes
   labels, query ids and features straight into the output (dense rows with
   ``n_features``, (row, id, value) triples without). It takes the common spelling
   (decimal numbers of at most 2**53 as mantissa, feature ids in increasing order) and
   declines anything else;
2. the line-by-line parser takes every chunk the loop declines or does not serve. It
   applies the whole grammar and raises :class:`DataFormatError` naming the file, the
   1-based line and the field.

Both give every value as ``float(token)`` (the loop as ``M / 10**F``, one correctly rounded
division of exact operands), then float32 for features, so the path never changes a value.

Conventions: column ``j`` of ``features`` holds feature id ``feature_ids[j]``, with
``feature_ids = feature_id_base + arange(n_features)``, so ids stay stable (Yahoo! ids
1..700 are 700 columns even if some id never occurs); absent features are 0. Without
``n_features``, ids above :data:`MAX_FEATURE_ID` are an error (one stray huge id would make
every dense row that wide), and so is a dense matrix over 256 MiB that the file fills to
less than 1 % (:func:`_check_fill`: a 40 KB file with one id of 100,000 would ask for
2 GiB). Labels are float64; ``item_ids`` holds each item's 1-based line
number in the source file. Feature values and labels that round to infinity in float32
(e.g. ``1e39``) and query ids above ``2**63 - 1`` are errors.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from groupbias._fast.svmlight import chunk_loop
from groupbias._fast.threads import in_order
from groupbias.core.errors import DataFormatError, MissingFilesError
from groupbias.core.io import NOT_REGULAR, regular_file
from groupbias.core.validation import is_integer
from groupbias.data.ranking_data import RankingData

__all__ = [
    "FORMAT_VERSION",
    "MAX_FEATURE_ID",
    "SvmlightRows",
    "read_svmlight",
    "parse_svmlight",
    "load_svmlight",
    "qptr_from_qids",
    "check_graded_labels",
]

#: Bumped whenever the parser's output for the same input can change (part of the cache key).
FORMAT_VERSION = 2

#: Largest feature id accepted when ``n_features`` is None (the dense output has one column
#: per id up to the largest, so one stray huge id would allocate a huge row for every line);
#: pass ``n_features`` to accept wider files.
MAX_FEATURE_ID = 100_000
#: Largest query id (int64).
MAX_QID = 2**63 - 1
#: Magnitudes from here on round to infinity in float32 (2**128 - 2**103, the midpoint
#: between the largest float32 and 2**128; ties round to the even 2**128).
F32_OVERFLOW = 2.0**128 - 2.0**103

QID_MODES = ("required", "optional")

_PAD = 1  # a space before every chunk
_TAIL = 8  # slack after every chunk
DEFAULT_CHUNK_BYTES = 1 << 20

_NUM_RE = re.compile(rb"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
UINT_RE = re.compile(rb"[0-9]+")
_NONFINITE = {
    b"nan",
    b"+nan",
    b"-nan",
    b"inf",
    b"+inf",
    b"-inf",
    b"infinity",
    b"+infinity",
    b"-infinity",
}


# ---- result of one chunk ------------------------------------------------------------------
@dataclass
class _Chunk:
    n_lines: int  # newline-terminated lines in the chunk
    line_idx: np.ndarray  # int64 [R], 0-based line within the chunk of each row
    labels: np.ndarray  # float64 [R]
    qids: np.ndarray  # int64 [R], -1 where the line has no qid
    rows: np.ndarray | None  # int64 [P], row of each feature pair (None if complete)
    fids: np.ndarray  # int64 [P]
    vals: np.ndarray  # float64 or float32 [P]
    complete: bool = False  # vals are the dense rows [R, n_features], row-major


# ---- line-by-line path ----------------------------------------------------------------------


def _parse_number(tok: bytes, lineno: int, field: str) -> float:
    if _NUM_RE.fullmatch(tok):
        v = float(tok)
        if abs(v) < F32_OVERFLOW:
            return v
        raise _BadLine(
            lineno,
            f"value {tok.decode('latin-1')!r} overflows to infinity (beyond the float32 range)",
            field=field,
        )
    if tok.lower() in _NONFINITE:
        raise _BadLine(lineno, f"non-finite value {tok.decode('latin-1')!r}", field=field)
    raise _BadLine(lineno, f"not a number: {tok.decode('latin-1')!r}", field=field)


def _line_qid(toks: list[bytes], lineno: int, mode) -> tuple[int, int]:
    """``(qid, index of the first feature token)`` of a line's tokens: ``qid:<n>`` as the
    second token, or -1 where absent and ``mode`` allows it."""
    if len(toks) > 1 and toks[1][:4] == b"qid:":
        qs = toks[1][4:]
        if not UINT_RE.fullmatch(qs):
            raise _BadLine(
                lineno,
                f"query id must be a non-negative integer, got {qs.decode('latin-1')!r}",
                field="qid",
            )
        if len(qs) > 19 or int(qs) > MAX_QID:  # length first: int() of 5000 digits raises
            shown = (
                qs.decode("latin-1")
                if len(qs) <= 40
                else f"{qs[:20].decode()}... ({len(qs)} digits)"
            )
            raise _BadLine(lineno, f"query id {shown} is above 2**63 - 1", field="qid")
        return int(qs), 2
    if mode == "required":
        raise _BadLine(lineno, "missing 'qid:<query id>' as the second token", field="qid")
    return -1, 1


def _pair(tok: bytes, field: str, lineno: int, base, nf) -> tuple[int, bytes]:
    """``(feature id, value bytes)`` of a ``<feature id>:<value>`` token, the id in range."""
    parts = tok.split(b":")
    if len(parts) != 2:
        raise _BadLine(
            lineno, f"expected '<feature id>:<value>', got {tok.decode('latin-1')!r}", field=field
        )
    fs, vs = parts
    if fs == b"qid":
        raise _BadLine(lineno, "'qid:<query id>' must be the second token", field=field)
    if not UINT_RE.fullmatch(fs):
        raise _BadLine(
            lineno,
            f"feature id must be a non-negative integer, got {fs.decode('latin-1')!r}",
            field=field,
        )
    # length before int(): 5000 digits pass Python's str-to-int limit
    fid = int(fs) if len(fs) <= 19 else None
    if fid is None or fid < base or fid >= (base + nf if nf is not None else MAX_FEATURE_ID + 1):
        hi = base + nf - 1 if nf is not None else MAX_FEATURE_ID
        fix = "" if nf is not None else " (pass n_features to accept larger ids)"
        shown = fs.decode("latin-1") if len(fs) <= 40 else f"of {len(fs)} digits"
        raise _BadLine(lineno, f"feature id {shown} out of range {base}..{hi}{fix}", field=field)
    return fid, vs


def _slow_chunk(data: bytes, mode, base, nf) -> _Chunk:
    """Parse whole lines one by one with the same grammar; raise :class:`_BadLine` (line
    numbered from 1 within ``data``) on the first bad line."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    line_idx, labels, qids, rows, fids, vals = [], [], [], [], [], []
    for i, line in enumerate(lines):
        lineno = i + 1
        toks = line.split(b"#", 1)[0].split()
        if not toks:
            continue
        label = _parse_number(toks[0], lineno, "label")
        qid, k = _line_qid(toks, lineno, mode)
        row = len(labels)
        seen = set()
        for j in range(k, len(toks)):
            fid, vs = _pair(toks[j], f"token {j + 1}", lineno, base, nf)
            if fid in seen:
                raise _BadLine(lineno, f"duplicate feature id {fid}", field=f"token {j + 1}")
            seen.add(fid)
            vals.append(_parse_number(vs, lineno, f"feature {fid}"))
            fids.append(fid)
            rows.append(row)
        line_idx.append(i)
        labels.append(label)
        qids.append(qid)
    i64 = np.int64
    return _Chunk(
        len(lines),
        np.array(line_idx, i64),
        np.array(labels, np.float64),
        np.array(qids, i64),
        np.array(rows, i64),
        np.array(fids, i64),
        np.array(vals, np.float64),
    )


# ---- file level -----------------------------------------------------------------------------
def _buffer(cap: int) -> bytearray:
    ba = bytearray(_PAD + cap + _TAIL)
    ba[:_PAD] = b" " * _PAD
    return ba


class _Reader:
    """Fills buffers with chunks of whole lines: ``buf[_PAD:cend]`` ends with ``\\n``,
    ``buf[:_PAD]`` is spaces and at least ``_TAIL`` bytes follow ``cend``. A partial last
    line is carried over to the next chunk; a line longer than the buffer grows it."""

    def __init__(self, fh, cap: int) -> None:
        self.fh, self.cap, self.tail, self.eof = fh, cap, b"", False

    def next(self, ba: bytearray) -> tuple[bytearray, int] | None:
        if len(ba) < _PAD + self.cap + _TAIL:
            ba = _buffer(self.cap)
        fill = len(self.tail)
        ba[_PAD : _PAD + fill] = self.tail
        while True:
            with memoryview(ba) as mv:
                while not self.eof and fill < self.cap:
                    n = self.fh.readinto(mv[_PAD + fill : _PAD + self.cap])
                    if not n:
                        self.eof = True
                    else:
                        fill += n
            end = _PAD + fill
            if fill == 0:
                return None
            if self.eof:
                if ba[end - 1] != 10:
                    ba[end] = 10
                    end += 1
                self.tail = b""
                return ba, end
            last = ba.rfind(b"\n", _PAD, end)
            if last >= 0:
                self.tail = bytes(ba[last + 1 : end])
                return ba, last + 1
            self.cap *= 2  # a line longer than the buffer
            nb = _buffer(self.cap)
            nb[:end] = ba[:end]
            ba = nb


class _BadLine(Exception):
    """A malformed line, numbered within its chunk (made a DataFormatError by the caller)."""

    def __init__(self, line: int, message: str, field: str | None) -> None:
        super().__init__(message)
        self.line, self.message, self.field = line, message, field


def parse_loop(size: int):
    """The compiled loop (:mod:`groupbias._fast.svmlight_loops`) for a file of ``size``
    bytes, chosen by size and the ``backend`` knob; None: the line-by-line parser."""
    return chunk_loop(size)


def _loop_chunk(loop, ba, cend, mode, nf, base) -> _Chunk | None:
    """The chunk parsed by the compiled loop, or None where the loop declines (then the
    line-by-line parser takes it). With ``nf`` the values go straight into dense rows;
    without, as (row, feature id, value) triples."""
    n_lines = ba.count(b"\n", _PAD, cend)
    arr = np.frombuffer(ba, dtype=np.uint8)
    labels, qids = np.empty(n_lines), np.empty(n_lines, dtype=np.int64)
    line_idx = np.empty(n_lines, dtype=np.int64)
    n_pairs = 0 if nf is not None else ba.count(b":", _PAD, cend)
    rows, fids = np.empty(n_pairs, np.int64), np.empty(n_pairs, np.int64)
    vals = np.empty(n_pairs, np.float32)
    block = np.zeros((n_lines, nf) if nf is not None else (0, 0), dtype=np.float32)
    limit = base + nf if nf is not None else MAX_FEATURE_ID + 1
    head = (arr, _PAD, cend, mode == "required", base, limit)
    ok, R, P = loop.parse_chunk(*head, labels, qids, line_idx, block, rows, fids, vals)
    del arr
    if not ok:
        return None
    head = (n_lines, line_idx[:R], labels[:R], qids[:R])
    if nf is not None:  # the dense rows, in order
        return _Chunk(*head, None, fids, block[:R].reshape(-1), True)
    return _Chunk(*head, rows[:P], fids[:P], vals[:P])


def _process(ba, cend, mode, base, nf, loop=None):
    """Parse one chunk (runs in a worker): ``(chunk, lin, vals, width)`` with ``lin`` the
    flat positions of the float32 ``vals`` in a dense ``[rows, width]`` block (None when
    they fill it in order); ``loop``: :func:`parse_loop`'s module, tried first."""
    ch = None if loop is None else _loop_chunk(loop, ba, cend, mode, nf, base)
    if ch is None:
        ch = _slow_chunk(bytes(ba[_PAD:cend]), mode, base, nf)
    w = nf if nf is not None else (int(ch.fids.max()) - base + 1 if ch.fids.size else 0)
    vals = ch.vals.astype(np.float32, copy=False)
    if ch.complete:  # values already in row-major order
        return ch, None, vals, w
    lin = ch.rows * w
    lin += ch.fids
    lin -= base
    return ch, lin, vals, w


#: a dense feature matrix above this size must hold at least :data:`MIN_FILL` of its cells
#: as values of the file (real LTR data fills 30-100 %)
SPARSE_BYTES = 256 << 20
MIN_FILL = 0.01


def _check_fill(path, rows: int, width: int, pairs: int, base: int) -> None:
    """Refuse a dense matrix of ``rows x width`` float32 cells over :data:`SPARSE_BYTES`
    that the file fills with fewer than :data:`MIN_FILL` of them (``pairs`` values): one
    stray large feature id in a small file would otherwise ask for gigabytes."""
    cells = rows * width
    if cells * 4 > SPARSE_BYTES and pairs < MIN_FILL * cells:
        raise DataFormatError(
            path,
            None,
            f"feature ids up to {base + width - 1} over {rows} lines make a "
            f"{cells * 4 / 2**30:.1f} GiB dense matrix that the file fills with "
            f"{pairs} values ({100 * pairs / cells:.2g} % of it); number the features "
            "densely (feature ids 1..k)",
            field="feature id",
        )


class _Dense:
    """Growable dense float32 output of a fixed width, filled chunk by chunk. Memory starts
    as zeros and every row is written once, so absent features are already 0."""

    def __init__(self, width: int) -> None:
        self.w, self.n, self.arr = width, 0, None

    def add(self, R: int, lin: np.ndarray, vals: np.ndarray, est_rows: int) -> None:
        need = self.n + R
        if self.arr is None or need > self.arr.shape[0]:
            cap = max(need, est_rows, int(1.5 * (0 if self.arr is None else self.arr.shape[0])))
            new = np.zeros((cap, self.w), dtype=np.float32)
            if self.arr is not None:
                new[: self.n] = self.arr[: self.n]
            self.arr = new
        if lin is None:
            self.arr[self.n : need] = vals.reshape(R, self.w)
        else:
            self.arr[self.n : need].reshape(-1)[lin] = vals
        self.n = need

    def result(self) -> np.ndarray:
        return np.zeros((0, self.w), np.float32) if self.arr is None else self.arr[: self.n]


_allocator_primed = False


def _prime_allocator() -> None:
    """Allocate and free one 32 MiB block, once per process.

    glibc serves large blocks with fresh ``mmap`` calls (page faults on every use) until a
    freed ``mmap`` block raises its threshold to that block's size (at most 32 MiB). After
    that, the per-chunk temporaries of the parser (a few MiB) are reused from the heap. Any
    program that frees a ~32 MiB array reaches the same state; elsewhere this is a no-op.
    """
    global _allocator_primed
    if not _allocator_primed:
        block = np.empty((32 << 20) - (1 << 16), dtype=np.uint8)
        del block
        _allocator_primed = True


@dataclass(frozen=True)
class SvmlightRows:
    """Rows of an SVMlight file, before grouping into queries.

    features : float32 [n_rows, n_features], column j = feature id ``feature_ids[j]``
    labels : float64 [n_rows]
    qids : int64 [n_rows] (-1 where a line has no qid; only with ``qid="optional"``)
    line_numbers : int64 [n_rows], 1-based line of each row in the file
    feature_ids : int64 [n_features]
    n_lines : lines in the file (blank and comment lines included)
    """

    features: np.ndarray
    labels: np.ndarray
    qids: np.ndarray
    line_numbers: np.ndarray
    feature_ids: np.ndarray
    n_lines: int


def _check_options(n_features, feature_id_base, qid, workers=1, chunk_bytes=1 << 20):
    from groupbias.core.errors import ParameterError

    def is_int(v):
        return is_integer(v)

    if qid not in QID_MODES:
        raise ParameterError("qid", f"one of {QID_MODES}", qid)
    if not is_int(feature_id_base) or feature_id_base < 0:
        raise ParameterError("feature_id_base", "a non-negative integer", feature_id_base)
    if n_features is not None and (not is_int(n_features) or n_features < 0):
        raise ParameterError("n_features", "None or a non-negative integer", n_features)
    if not is_int(workers) or workers < 1:
        raise ParameterError("workers", "a positive integer", workers)
    if not is_int(chunk_bytes) or chunk_bytes < 1024:
        raise ParameterError("chunk_bytes", "an integer >= 1024", chunk_bytes)


# long: the public entry point; its docstring documents every parameter
def read_svmlight(
    path: str | os.PathLike,
    *,
    n_features: int | None = None,
    feature_id_base: int = 1,
    qid: str = "required",
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    workers: int = 1,
    progress: bool | None = None,
) -> SvmlightRows:
    """Parse an SVMlight file into dense rows (no caching, no query grouping).

    Parameters
    ----------
    n_features : number of feature columns, ids ``feature_id_base .. + n_features - 1``;
        an id outside raises. ``None``: up to the largest id in the file, which must be at
        most :data:`MAX_FEATURE_ID`.
    feature_id_base : the smallest feature id (1 for SVMlight / LETOR, 0 for zero-based).
    qid : ``"required"`` (every data line has ``qid:<n>`` as its second token) or
        ``"optional"`` (lines may have it; ``qids`` is -1 where absent).
    chunk_bytes : size of a chunk of whole lines (the unit of work).
    progress : a progress bar over the bytes read (tqdm, on stderr); None (default) shows it
        for files over 64 MiB when stderr is a terminal.
    workers : threads parsing chunks (the compiled loop releases the GIL; on a busy 2-core
        machine one thread is usually as fast). The result does not depend on it.

    Raises :class:`DataFormatError` (file, 1-based line, field) on malformed input and
    :class:`MissingFilesError` when the file does not exist.
    """
    _check_options(n_features, feature_id_base, qid, workers, chunk_bytes)
    path = Path(path)
    if not path.exists():
        raise MissingFilesError(path.parent, [path.name])
    regular_file(path, hint=NOT_REGULAR)  # a pipe or FIFO: named, not read in chunks
    base, nf = int(feature_id_base), None if n_features is None else int(n_features)
    if path.stat().st_size <= 2 * chunk_bytes:
        workers = 1
    _prime_allocator()
    size = path.stat().st_size
    loop = parse_loop(size)
    if progress is None:
        import sys

        progress = size > 64 << 20 and sys.stderr.isatty()
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=size, unit="B", unit_scale=True, desc=f"parsing {path.name}", leave=False)
    rows = _Collected(path, size, base, nf, bar)

    def chunks(reader):
        while got := reader.next(rows.buffers.pop() if rows.buffers else _buffer(reader.cap)):
            yield got

    def parse(got):
        ba, cend = got
        return _process(ba, cend, qid, base, nf, loop)

    with open(path, "rb", buffering=0) as fh:
        reader = _Reader(fh, int(chunk_bytes))
        for (ba, cend), result in in_order(parse, chunks(reader), workers=workers):
            rows.add(result, ba, cend - _PAD)
    if bar is not None:
        bar.close()
    return rows.result()


class _Collected:
    """The parsed chunks of one file, in order: dense rows (``nf`` known) or blocks of
    their own width, labels, qids and line numbers; the buffers free for the next chunk."""

    def __init__(self, path: Path, size: int, base: int, nf: int | None, bar) -> None:
        self.path, self.size, self.base, self.nf, self.bar = path, size, base, nf, bar
        self.dense = _Dense(nf) if nf is not None else None
        self.blocks: list[np.ndarray] = []
        self.labels: list[np.ndarray] = []
        self.qids: list[np.ndarray] = []
        self.lines: list[np.ndarray] = []
        self.buffers: list[bytearray] = []
        self.line0, self.bytes, self.pairs = 1, 0, 0

    def add(self, result, ba: bytearray, nbytes: int) -> None:
        """Take one chunk's ``result()`` (a bad line raises, numbered in the file)."""
        try:
            ch, lin, vals, w = result()
        except _BadLine as e:
            raise DataFormatError(
                self.path, self.line0 + e.line - 1, e.message, field=e.field
            ) from None
        R = ch.labels.size
        self.pairs += vals.size
        _check_fill(self.path, R, self.nf if self.nf is not None else w, vals.size, self.base)
        self.bytes += nbytes
        if self.bar is not None:
            self.bar.update(nbytes)
        if self.dense is not None:
            rows_so_far = self.dense.n + R
            est = int(rows_so_far * self.size / max(self.bytes, 1) * 1.05) + 1024
            self.dense.add(R, lin, vals, est)
        else:
            block = np.zeros((R, w), dtype=np.float32)
            block.reshape(-1)[lin] = vals
            self.blocks.append(block)
        self.labels.append(ch.labels)
        self.qids.append(ch.qids)
        self.lines.append(ch.line_idx + self.line0)
        self.line0 += ch.n_lines
        self.buffers.append(ba)

    def result(self) -> SvmlightRows:
        """The whole file's rows (a file without data lines raises)."""
        if self.dense is not None:
            features, width = self.dense.result(), self.nf
        else:
            blocks = self.blocks
            width = max([b.shape[1] for b in blocks] + [0])
            _check_fill(self.path, sum(b.shape[0] for b in blocks), width, self.pairs, self.base)
            features = np.zeros((sum(b.shape[0] for b in blocks), width), dtype=np.float32)
            r = 0
            for b in blocks:
                features[r : r + b.shape[0], : b.shape[1]] = b
                r += b.shape[0]
        if features.shape[0] == 0:
            raise DataFormatError(
                self.path,
                None,
                "no data lines (the file is empty or holds only blank and comment lines)",
            )
        return SvmlightRows(
            features=features,
            labels=np.concatenate(self.labels),
            qids=np.concatenate(self.qids),
            line_numbers=np.concatenate(self.lines),
            feature_ids=np.arange(self.base, self.base + width, dtype=np.int64),
            n_lines=self.line0 - 1,
        )


def qptr_from_qids(
    qids: np.ndarray, line_numbers: np.ndarray, *, path=None
) -> tuple[np.ndarray, np.ndarray]:
    """Query offsets from runs of equal consecutive qids: ``(qptr, query_ids)``.

    A qid that reappears after another qid raises :class:`DataFormatError` naming the line
    where it reappears and where it first occurred (queries must be contiguous).
    """
    n = qids.size
    starts = np.flatnonzero(np.r_[True, qids[1:] != qids[:-1]]) if n else np.empty(0, int)
    run_q = qids[starts]
    order = np.argsort(run_q, kind="stable")
    sq = run_q[order]
    dup = np.flatnonzero(sq[1:] == sq[:-1])
    if dup.size:
        later = order[dup + 1]
        i = int(np.argmin(later))
        run, prev = int(later[i]), int(order[dup[i]])
        raise DataFormatError(
            path,
            int(line_numbers[starts[run]]),
            f"qid {int(run_q[run])} reappears after other queries (first seen on line "
            f"{int(line_numbers[starts[prev]])}); the lines of a query must be contiguous",
            field="qid",
        )
    qptr = np.empty(starts.size + 1, dtype=np.int64)
    qptr[:-1] = starts
    qptr[-1] = n
    return qptr, run_q.astype(np.int64)


def parse_svmlight(
    path: str | os.PathLike,
    *,
    n_features: int | None = None,
    feature_id_base: int = 1,
    label_max: float | None = None,
    name: str | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    workers: int = 1,
) -> RankingData:
    """Parse an SVMlight ranking file (``label qid:Q fid:val ...``) into :class:`RankingData`.

    Every data line needs ``qid:<n>``; a query is a run of consecutive lines with the same
    qid (a qid that reappears later raises). Output: ``features`` float32 [n_items,
    n_features] with ``feature_ids = feature_id_base + arange(n_features)`` (absent
    features are 0), ``labels`` float64, ``qptr`` int64 [n_queries + 1], ``query_ids``
    int64 (the qids), ``item_ids`` int64 (1-based line numbers), ``meta`` with the source
    path and its line count. No caching: see :func:`load_svmlight`. Options as in
    :func:`read_svmlight`.
    """
    rows = read_svmlight(
        path,
        n_features=n_features,
        feature_id_base=feature_id_base,
        qid="required",
        chunk_bytes=chunk_bytes,
        workers=workers,
    )
    qptr, query_ids = qptr_from_qids(rows.qids, rows.line_numbers, path=path)
    return RankingData(
        features=rows.features,
        labels=rows.labels,
        qptr=qptr,
        query_ids=query_ids,
        feature_ids=rows.feature_ids,
        item_ids=rows.line_numbers,
        label_max=label_max,
        name=name or Path(path).name,
        meta={"source": str(Path(path).resolve()), "n_lines": rows.n_lines},
    )


def check_graded_labels(data: RankingData, *, label_max: float, path=None) -> None:
    """Raise :class:`DataFormatError` (naming the line, from ``item_ids``) unless every
    label is an integer in ``0..label_max``."""
    y = data.labels
    bad = (y < 0) | (y > label_max) | (y != np.floor(y))
    if bad.any():
        i = int(np.argmax(bad))
        line = int(data.item_ids[i]) if data.item_ids is not None else None
        raise DataFormatError(
            path, line, f"label {y[i]!r} is not an integer grade in 0..{label_max:g}", field="label"
        )


def load_svmlight(
    path: str | os.PathLike,
    *,
    n_features: int | None = None,
    feature_id_base: int = 1,
    label_max: float | None = None,
    name: str | None = None,
    cache_dir: str | os.PathLike | None = None,
    cache: bool = True,
    graded: bool = False,
) -> RankingData:
    """:func:`parse_svmlight` through the on-disk cache (see :mod:`data_loaders.cache`).

    ``cache=False`` always parses; otherwise the parsed split is stored as memory-mapped
    ``.npy`` files under ``cache_dir`` (default ``$GROUPBIAS_CACHE`` or
    ``~/.cache/groupbias``) and reused until the source file changes (cached arrays are
    read-only). ``graded=True`` (needs ``label_max``) also checks that labels are integers
    in ``0..label_max`` (:func:`check_graded_labels`).
    """
    from .cache import cached

    name = name or Path(path).name
    if graded and label_max is None:
        from groupbias.core.errors import ParameterError

        raise ParameterError("label_max", "a number when graded=True", label_max)

    def build() -> RankingData:
        data = parse_svmlight(
            path,
            n_features=n_features,
            feature_id_base=feature_id_base,
            label_max=label_max,
            name=name,
        )
        if graded:
            check_graded_labels(data, label_max=label_max, path=path)
        return data

    if not cache:
        return build()
    options = {
        "parser": "svmlight",
        "parser_version": FORMAT_VERSION,
        "n_features": n_features,
        "feature_id_base": int(feature_id_base),
        "label_max": label_max,
        "name": name,
        "graded": bool(graded),
    }
    return cached(path, options, build, cache_dir=cache_dir)
