"""LightGBM-style ranking files: a data file plus a ``.query`` file of group sizes.

Data file: SVMlight-like lines ``<label> <fid>:<value> ...`` without ``qid`` (a ``qid:<n>``
token, when present, is accepted and ignored). LightGBM reads LibSVM feature indices as
zero-based, so by default column j holds feature id j (``feature_id_base=0``; pass 1 for
files numbered from 1 to drop the empty column 0).

Query file (default ``<data file>.query``): one positive integer per line, the number of
consecutive data lines of each query, in order; the sizes must add up to the number of data
lines.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from groupbias.core.errors import DataFormatError, MissingFilesError, ParameterError
from groupbias.core.io import env_value
from groupbias.core.validation import integer, offsets_from_sizes, real
from groupbias.data.ranking_data import RankingData

from ._options import flag
from .svmlight import DEFAULT_CHUNK_BYTES, FORMAT_VERSION, UINT_RE, read_svmlight

__all__ = ["load_lightgbm", "read_query_file", "ENV_VAR", "LightgbmOptions"]

ENV_VAR = "GROUPBIAS_LIGHTGBM"


def read_query_file(path: str | os.PathLike) -> np.ndarray:
    """Group sizes, int64 [n_queries], from a LightGBM ``.query`` file (blank lines are
    skipped). Raises :class:`DataFormatError` naming the line of a size that is not a
    positive integer, or when there is none."""
    path = Path(path)
    sizes = []
    with open(path, "rb") as fh:
        for i, raw in enumerate(fh, start=1):
            tok = raw.strip()
            if not tok:
                continue
            # at most 19 digits before int(): a 5000-digit size passes Python's str-to-int limit
            if not UINT_RE.fullmatch(tok) or len(tok) > 19 or not 0 < int(tok) < 2**63:
                raise DataFormatError(
                    path,
                    i,
                    f"a group size must be a positive integer, got {tok.decode('latin-1')!r}",
                    field="group size",
                )
            sizes.append(int(tok))
    if not sizes:
        raise DataFormatError(path, None, "no group sizes (the file is empty)")
    return np.asarray(sizes, dtype=np.int64)


def load_lightgbm(
    data_path: str | os.PathLike,
    query_path: str | os.PathLike | None = None,
    *,
    n_features: int | None = None,
    feature_id_base: int = 0,
    label_max: float | None = None,
    name: str | None = None,
    cache_dir: str | os.PathLike | None = None,
    cache: bool = True,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> RankingData:
    """Load a LightGBM ranking data file and its group sizes as :class:`RankingData`.

    ``features`` float32 [n_items, n_features] (``feature_ids = feature_id_base +
    arange(n_features)``; ``n_features=None``: up to the largest id), ``labels`` float64,
    ``qptr`` the cumulative group sizes, ``query_ids`` 0..n_queries-1, ``item_ids`` data
    line numbers. Cached like the other loaders (the key covers both files).

    Raises :class:`MissingFilesError` for a missing file and :class:`DataFormatError` for a
    malformed line or when the group sizes do not add up to the number of data lines (the
    message names both files).
    """
    from .cache import cached, source_fingerprint

    data_path = Path(data_path)
    query_path = Path(str(data_path) + ".query") if query_path is None else Path(query_path)
    for p, hint in (
        (data_path, None),
        (
            query_path,
            "LightGBM ranking data needs its group sizes: one per line in <data file>.query",
        ),
    ):
        if not p.is_file():
            raise MissingFilesError(p.parent, [p.name], hint=hint)
    name = name or data_path.name

    build = functools.partial(
        _build, data_path, query_path, n_features, feature_id_base, label_max, name, chunk_bytes
    )
    if not cache:
        return build()
    options = {
        "parser": "lightgbm",
        "parser_version": FORMAT_VERSION,
        "n_features": n_features,
        "feature_id_base": int(feature_id_base),
        "label_max": label_max,
        "name": name,
        "query_file": source_fingerprint(query_path),
    }
    return cached(data_path, options, build, cache_dir=cache_dir)


def _build(
    data_path: Path,
    query_path: Path,
    n_features: int | None,
    feature_id_base: int,
    label_max: float | None,
    name: str,
    chunk_bytes: int,
) -> RankingData:
    """The :class:`RankingData` of a LightGBM data file and its group sizes (uncached)."""
    rows = read_svmlight(
        data_path,
        n_features=n_features,
        feature_id_base=feature_id_base,
        qid="optional",
        chunk_bytes=chunk_bytes,
    )
    sizes = read_query_file(query_path)
    n = rows.labels.size
    total = sum(int(s) for s in sizes)  # exact: an int64 sum wraps around
    if total != n:
        raise DataFormatError(
            query_path,
            None,
            f"group sizes add up to {total} items, but the "
            f"data file {str(data_path)!r} has {n} data lines",
        )
    qptr = offsets_from_sizes(sizes)
    return RankingData(
        features=rows.features,
        labels=rows.labels,
        qptr=qptr,
        query_ids=np.arange(sizes.size, dtype=np.int64),
        feature_ids=rows.feature_ids,
        item_ids=rows.line_numbers,
        label_max=label_max,
        name=name,
        meta={
            "source": str(data_path.resolve()),
            "query_file": str(query_path.resolve()),
            "n_lines": rows.n_lines,
        },
    )


@dataclass(frozen=True)
class LightgbmOptions:
    """LightGBM-style files in one folder: file name per split, each with its ``.query``."""

    train: str = "train.txt"
    valid: str = "valid.txt"
    test: str = "test.txt"
    n_features: int | None = None
    feature_id_base: int = 0
    label_max: float | None = None
    cache: bool = True

    def __post_init__(self) -> None:
        for name in ("train", "valid", "test"):
            if not isinstance(getattr(self, name), str):
                raise ParameterError(name, "a file name", getattr(self, name))
        if self.n_features is not None:
            integer("n_features", self.n_features, low=1)
        integer("feature_id_base", self.feature_id_base, low=0)
        if self.label_max is not None:
            real("label_max", self.label_max, low=0.0, low_open=True)
        flag("cache", self.cache)

    def _file(self, root, split: str) -> str:
        name = getattr(self, split)
        root = root if root is not None else env_value(ENV_VAR)
        if root is None:  # no folder given: never the working directory by chance
            raise MissingFilesError("", [name], unset=ENV_VAR)
        return os.path.join(root, name)

    def sources(self, root, split: str) -> dict:
        data = self._file(root, split)
        return {"data": data, "query": data + ".query"}

    def load(self, root, split: str) -> RankingData:
        return load_lightgbm(
            self._file(root, split),
            n_features=self.n_features,
            feature_id_base=self.feature_id_base,
            label_max=self.label_max,
            cache=self.cache,
        )
