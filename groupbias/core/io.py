"""Atomic result files: nothing is ever half-written, and only one process writes.

Every writer writes to a temporary file in the destination directory, flushes and fsyncs it,
then ``os.replace``-s it over the destination, so a crash leaves either the old file or the
new one, never a truncated one.

In a distributed run (Lightning's DDP re-runs the command in one process per device, torchrun,
``srun``) the process of rank 0 writes every file; in the others (:func:`writes_files` is
false) the writers write nothing and return the path.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from .errors import DataError, DataFormatError

#: hashlib algorithm of a file's content fingerprint (:func:`file_digest`)
CONTENT_HASH = "sha256"
#: digests of the files hashed by this process, by their full ``stat`` identity
_DIGESTS: dict[tuple, str] = {}


def env_value(name: str) -> str | None:
    """The value of the environment variable ``name``; None when it is unset, empty or
    blank. Every ``GROUPBIAS_*`` variable is read through it: ``NAME=`` means unset,
    everywhere (``configs/config.yaml`` reads them with the ``groupbias_env`` resolver of
    :mod:`groupbias.app.command`)."""
    value = os.environ.get(name)
    return value if value is not None and value.strip() else None


#: environment variables that hold a process's rank in a distributed run: torchrun's, those
#: of Lightning's launcher for the processes it starts, Slurm's task rank
RANK_VARIABLES = ("RANK", "LOCAL_RANK", "NODE_RANK", "SLURM_PROCID")


def writes_files() -> bool:
    """Whether this process writes results: false in the processes of rank > 0 of a
    distributed run (any of :data:`RANK_VARIABLES` above 0)."""
    for name in RANK_VARIABLES:
        value = os.environ.get(name, "0").strip() or "0"
        if value.isdigit() and int(value) > 0:
            return False
    return True


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (see the module docstring). An OS error (a full
    disk, a file size limit) names ``path``; the temporary file is removed. Nothing is
    written where :func:`writes_files` is false."""
    path = Path(path)
    if not writes_files():
        return path
    try:
        return _write_atomic(path, data)
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc


def _write_atomic(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # an ordinary file's mode, not mkstemp's 0600
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return write_bytes_atomic(path, text.encode("utf-8"))


def jsonable(x):
    """A JSON-ready copy of ``x``: mappings with string keys, lists for sequences (tuples,
    arrays), config nodes as plain ones, Python numbers for numpy ones, ``None`` for
    non-finite floats (strict JSON); anything else as it is."""
    if isinstance(x, Mapping):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, Sequence) and not isinstance(x, (str, bytes)):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating, float)):
        v = float(x)
        return v if math.isfinite(v) else None
    if isinstance(x, (np.bool_,)):
        return bool(x)
    return x


def write_json_atomic(path: str | os.PathLike, obj) -> Path:
    """Write ``obj`` as JSON atomically; numpy values become Python values and non-finite
    floats become ``null`` (strict JSON)."""
    return write_text_atomic(path, json.dumps(jsonable(obj), indent=2, sort_keys=True) + "\n")


def read_json(path: str | os.PathLike):
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def write_npz_atomic(path: str | os.PathLike, **arrays: np.ndarray) -> Path:
    """Save arrays to a ``.npz`` atomically (``allow_pickle`` is never needed to read it)."""
    import io

    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    for k, v in arrays.items():
        if v.dtype == object:
            raise TypeError(f"array {k!r} has dtype object; refusing to store pickled data")
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]  # numpy's stub types allow_pickle here
    return write_bytes_atomic(path, buf.getvalue())


#: the hint after a data file that is not a regular file (a pipe such as bash's <(cat f))
NOT_REGULAR = (
    "Write the data to a file first: a data file is read twice (its content digest keys the "
    "parsed-split cache and the run's record of its inputs, then it is parsed)"
)


def regular_file(path: str | os.PathLike, *, hint: str | None = None) -> os.stat_result:
    """``os.stat(path)`` of a regular file; a FIFO, pipe, socket, device or directory is a
    :class:`DataFormatError` naming it (reading a FIFO blocks until someone writes to it),
    followed by ``hint`` when given."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        kind += " (a FIFO, pipe, socket or device)" if not stat.S_ISDIR(st.st_mode) else ""
        raise DataFormatError(
            path, None, f"{kind}; expected a data file" + (f". {hint}" if hint else "")
        )
    return st


def file_digest(path: str | os.PathLike) -> str:
    """The :data:`CONTENT_HASH` hex digest of the whole content of the regular file ``path``.

    Remembered within the process by the file's ``stat`` identity (device, inode, size,
    modification and change times in ns; an edit changes the change time, which no tool can
    set back), so the run's data fingerprint and the loaders' cache key hash each file once.
    Raises :class:`DataFormatError` for what is not a regular file and :class:`DataError`
    naming the file when reading fails (an I/O error of the disk)."""
    st = regular_file(path)
    ident = (
        os.path.abspath(path),
        st.st_dev,
        st.st_ino,
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
    )
    known = _DIGESTS.get(ident)
    if known is not None:
        return known
    try:
        with open(path, "rb", buffering=0) as fh:
            digest = hashlib.file_digest(fh, CONTENT_HASH).hexdigest()
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise DataError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    _DIGESTS[ident] = digest
    return digest
