"""On-disk cache of parsed splits: memory-mapped ``.npy`` arrays plus a JSON manifest.

Layout: ``<cache root>/ranking/<key>/`` holds ``features.npy``, ``labels.npy``,
``qptr.npy``, ``query_ids.npy``, ``feature_ids.npy``, ``item_ids.npy`` (and ``groups.npy``
when set) written with ``allow_pickle=False``, and ``manifest.json`` (source, options,
name, label_max, meta, array dtypes and shapes). Reloading maps the arrays with
``np.load(mmap_mode="r", allow_pickle=False)``: no data is read until used, and the arrays
are read-only.

``features`` is stored column-major (Fortran order): a feature column is one contiguous run
of the file, so reading the columns a grouping or the candidate report needs pages in those
columns only (about 14 MB per column at MSLR-WEB30K size, instead of the whole 2 GB matrix).
Code that needs whole rows (the LTR data module) copies the matrix to row-major memory once.

Cache root: the ``cache_dir`` argument, else ``$GROUPBIAS_CACHE``, else
``~/.cache/groupbias`` (read when called).

Key: SHA-256 of the source's absolute path, size, ``st_mtime_ns``, a hash of its whole
content (:data:`CONTENT_HASH`), the parser options and :data:`FORMAT_VERSION`; a source whose
content changed anywhere gets a new key and is parsed again (the entry of its previous version
is then removed), whatever its size and modification time. Hashing reads the whole file on
every call (its cost: docs/performance.md, "Feature cache"); ``cache=False`` in the loaders
skips the cache altogether.

Writes are atomic: an entry is written into a temporary directory beside it
(``.tmp-<key>-<pid>-*``) and renamed into place, so a reader sees a complete entry or none; the
temporary directories of killed writers are deleted by the next call
(:func:`remove_stale_writes`). The manifest holds a SHA-256 of every array file, checked on
every load: an entry edited since it was written (same shapes, other values) is rebuilt, not
served.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from groupbias.core.io import CONTENT_HASH, NOT_REGULAR, env_value, file_digest, regular_file
from groupbias.data.ranking_data import RankingData

__all__ = [
    "FORMAT_VERSION",
    "cache_root",
    "source_fingerprint",
    "cache_key",
    "cached",
    "save_ranking_data",
    "load_ranking_data",
    "entry_dir",
    "remove_stale_writes",
]

#: Version of the cache layout and of the parsers' output; part of every key (4: the
#: manifest holds a digest of every array file, checked on every load).
FORMAT_VERSION = 4

_ARRAYS = ("features", "labels", "qptr", "query_ids", "feature_ids", "item_ids", "groups")
#: rows copied per step when ``features`` is written column-major
ROW_BLOCK = 65_536


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """The cache root: ``cache_dir``, else ``$GROUPBIAS_CACHE``, else ``~/.cache/groupbias``."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    env = env_value("GROUPBIAS_CACHE")
    if env is not None:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "groupbias"


def source_fingerprint(path: str | os.PathLike) -> dict:
    """Absolute path, size, ``st_mtime_ns`` and a :data:`CONTENT_HASH` digest of the whole
    content (an edit anywhere changes it, even one that keeps size and mtime); what is not a
    regular file (a FIFO would block) is refused (:func:`groupbias.core.io.file_digest`)."""
    # checked as given: a pipe (bash's <(cat f), /dev/fd/63) resolves to /proc/<pid>/fd/
    # pipe:[...], a name that does not exist
    regular_file(path, hint=NOT_REGULAR)
    p = Path(path).resolve()
    digest = file_digest(p)
    st = os.stat(p)
    return {
        "path": str(p),
        "size": int(st.st_size),
        "mtime_ns": int(st.st_mtime_ns),
        f"content_{CONTENT_HASH}": digest,
    }


def cache_key(fingerprint: Mapping, options: Mapping) -> str:
    """SHA-256 (hex) of the source fingerprint, the options and :data:`FORMAT_VERSION`."""
    blob = json.dumps(
        {"format": FORMAT_VERSION, "source": dict(fingerprint), "options": dict(options)},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def entry_dir(key: str, cache_dir: str | os.PathLike | None = None) -> Path:
    return cache_root(cache_dir) / "ranking" / key


def _write_array(folder: Path, name: str, a: np.ndarray) -> dict:
    """Write ``a`` as ``<name>.npy`` in ``folder`` (features column-major), synced to disk;
    its manifest entry."""
    if name == "features":
        _save_columns(folder / "features.npy", a)
    else:
        with open(folder / f"{name}.npy", "wb") as fh:
            np.save(fh, a, allow_pickle=False)
            fh.flush()
            os.fsync(fh.fileno())
    entry = {"dtype": a.dtype.str, "shape": list(a.shape)}
    entry[CONTENT_HASH] = file_digest(folder / f"{name}.npy")
    if name == "features":
        entry["order"] = "F"
    return entry


def save_ranking_data(
    directory: str | os.PathLike, data: RankingData, *, manifest: Mapping | None = None
) -> Path:
    """Write ``data`` as ``.npy`` files plus ``manifest.json`` into a new ``directory``,
    atomically (temporary directory, then rename). An existing entry is left as is."""
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(
        tempfile.mkdtemp(prefix=f"{_TMP}{directory.name[:16]}-{os.getpid()}-", dir=directory.parent)
    )
    try:
        arrays = {}
        for name in _ARRAYS:
            a = getattr(data, name)
            if a is None:
                continue
            a = np.asarray(a)
            if a.dtype == object:
                raise TypeError(
                    f"RankingData.{name} has dtype object; the cache stores "
                    "numeric and fixed-width string arrays only"
                )
            arrays[name] = _write_array(tmp, name, a)
        man = dict(manifest or {})
        man.update(
            {
                "format": FORMAT_VERSION,
                "name": data.name,
                "label_max": data.label_max,
                "meta": data.meta,
                "arrays": arrays,
                "created_unix": time.time(),
            }
        )
        with open(tmp / "manifest.json", "w", encoding="utf-8") as fh:
            json.dump(man, fh, indent=2, sort_keys=True, default=str)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.rename(tmp, directory)
        except OSError:
            if not (directory / "manifest.json").is_file():
                raise
            shutil.rmtree(tmp, ignore_errors=True)  # written meanwhile by someone else
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return directory


#: name prefix of the temporary directory an entry is written into (then renamed)
_TMP = ".tmp-"


def remove_stale_writes(root: Path) -> list[Path]:
    """Delete the temporary directories (``.tmp-<key>-<pid>-*``) that killed cache writes
    left in ``root``: those whose writing process is gone (or, without a pid in the name,
    older than a day). Returns them."""
    gone = []
    try:
        candidates = [d for d in root.iterdir() if d.name.startswith(_TMP) and d.is_dir()]
    except OSError:
        return gone
    for d in candidates:
        parts = d.name[len(_TMP) :].split("-")
        pid = int(parts[1]) if len(parts) > 2 and parts[1].isdigit() else None
        if pid is not None:
            stale = pid != os.getpid() and not _alive(pid)
        else:
            try:
                stale = time.time() - d.stat().st_mtime > 86_400
            except OSError:
                continue
        if stale:
            shutil.rmtree(d, ignore_errors=True)
            gone.append(d)
    return gone


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _save_columns(path: Path, a: np.ndarray) -> None:
    """Write the 2-D ``a`` as a Fortran-ordered ``.npy``: blocks of :data:`ROW_BLOCK` rows are
    transposed in memory and each column's piece written at its place in the file (one pass
    over ``a``; neither a full transposed copy nor a mapping of the output is held)."""
    n = a.shape[0]
    header = np.lib.format.open_memmap(
        path, mode="w+", dtype=a.dtype, shape=a.shape, fortran_order=True
    )
    offset, item = header.offset, a.dtype.itemsize
    del header
    with open(path, "r+b") as fh:
        fd = fh.fileno()
        for s in range(0, n, ROW_BLOCK):
            block = np.ascontiguousarray(a[s : s + ROW_BLOCK].T)
            for j in range(block.shape[0]):
                os.pwrite(fd, block[j], offset + (j * n + s) * item)
        os.fsync(fd)


def load_ranking_data(
    directory: str | os.PathLike, *, mmap: bool = True
) -> tuple[RankingData, dict]:
    """Load an entry written by :func:`save_ranking_data`: ``(data, manifest)``.

    Arrays are memory-mapped read-only (``mmap=False`` reads them into memory). Raises
    ``ValueError`` when a file disagrees with the manifest."""
    directory = Path(directory)
    with open(directory / "manifest.json", encoding="utf-8") as fh:
        man = json.load(fh)
    if man.get("format") != FORMAT_VERSION:
        raise ValueError(
            f"{directory}: cache format {man.get('format')!r}, expected {FORMAT_VERSION}"
        )
    if not isinstance(man, dict) or not isinstance(man.get("arrays"), dict):
        raise ValueError(f"{directory / 'manifest.json'}: not a cache manifest")
    arrays = {}
    for name, spec in man["arrays"].items():
        if name not in _ARRAYS or not isinstance(spec, dict):
            raise ValueError(f"{directory / 'manifest.json'}: unknown array {name!r}")
        path = directory / f"{name}.npy"
        if file_digest(path) != spec.get(CONTENT_HASH):  # an entry edited since it was written
            raise ValueError(f"{path}: content differs from the digest in the manifest")
        a = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
        fortran = spec.get("order") == "F"
        if (
            a.dtype.str != spec["dtype"]
            or list(a.shape) != spec["shape"]
            or not (a.flags.f_contiguous if fortran else a.flags.c_contiguous)
        ):
            raise ValueError(
                f"{directory / (name + '.npy')}: dtype/shape/order {a.dtype.str} {a.shape} "
                f"{'F' if a.flags.f_contiguous else 'C'} disagree with the manifest {spec}"
            )
        arrays[name] = a
    data = RankingData(
        name=man.get("name", ""),
        label_max=man.get("label_max"),
        meta=dict(man.get("meta") or {}),
        **arrays,
    )
    return data, man


def _prune(root: Path, keep: str, source_path: str, options: Mapping) -> None:
    """Remove entries of older versions of the same source with the same options."""
    opts = json.loads(json.dumps(dict(options), sort_keys=True, default=str))
    for d in root.iterdir():
        if d.name == keep or d.name.startswith(".") or not d.is_dir():
            continue
        try:
            with open(d / "manifest.json", encoding="utf-8") as fh:
                man = json.load(fh)
        except (OSError, ValueError):
            continue
        if man.get("source", {}).get("path") == source_path and man.get("options") == opts:
            shutil.rmtree(d, ignore_errors=True)


def cached(
    path: str | os.PathLike,
    options: Mapping,
    build: Callable[[], RankingData],
    *,
    cache_dir: str | os.PathLike | None = None,
) -> RankingData:
    """Return the cached parse of ``path`` under ``options``, or ``build()`` it and store it.

    ``options`` (JSON-serializable) must name everything that changes the result. The
    returned arrays are read-only; ``meta`` gains ``cache`` (``"hit"`` or ``"stored"``)
    and ``cache_dir``. An unreadable entry is rebuilt (with a warning); a failed write
    only warns.
    """
    fp = source_fingerprint(path)
    key = cache_key(fp, options)
    d = entry_dir(key, cache_dir)
    remove_stale_writes(d.parent)
    if (d / "manifest.json").is_file():
        try:
            data, man = load_ranking_data(d)
            if man.get("key") == key:
                return _with_meta(data, cache="hit", cache_dir=str(d))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            warnings.warn(f"ignoring unreadable cache entry {d}: {e}", stacklevel=2)
        shutil.rmtree(d, ignore_errors=True)
    data = build()
    for name in _ARRAYS:  # read-only, like the memory-mapped arrays
        a = getattr(data, name)
        if isinstance(a, np.ndarray):
            a.flags.writeable = False
    try:
        save_ranking_data(d, data, manifest={"key": key, "source": fp, "options": dict(options)})
        _prune(d.parent, key, fp["path"], options)
    except OSError as e:
        warnings.warn(f"could not write cache entry {d}: {e}", stacklevel=2)
        return data
    return _with_meta(data, cache="stored", cache_dir=str(d))


def _with_meta(data: RankingData, **meta) -> RankingData:
    from dataclasses import replace

    return replace(data, meta={**data.meta, **meta})
