"""Atomic result files: nothing is ever half-written.

Every writer writes to a temporary file in the destination directory, flushes and fsyncs it,
then ``os.replace``-s it over the destination, so a crash leaves either the old file or the
new one, never a truncated one.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    path = Path(path)
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
