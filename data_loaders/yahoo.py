"""Yahoo! Learning to Rank Challenge, Set 1 (paper Sec. 6.1): ``set1.{train,valid,test}.txt``.

SVMlight lines ``<grade> qid:<q> <fid>:<value> ...`` with feature ids 1..700 (sparse: absent
features are 0) and grades 0..4. All 700 feature ids are columns, so the paper's feature
numbers (e.g. Yahoo!\\ :sub:`[426]`) index the same column: ``data.feature(426)``.

The directory is the ``root`` argument, else ``$GROUPBIAS_YAHOO`` (read when called).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from groupbias.core.errors import MissingFilesError
from groupbias.data.ranking_data import RankingData

from ._options import flag
from ._tables import resolve_path
from .svmlight import load_svmlight

__all__ = [
    "load_yahoo",
    "yahoo_root",
    "yahoo_file",
    "SPLIT_FILES",
    "N_FEATURES",
    "LABEL_MAX",
    "ENV_VAR",
    "YahooOptions",
]

ENV_VAR = "GROUPBIAS_YAHOO"
SPLIT_FILES = {"train": "set1.train.txt", "valid": "set1.valid.txt", "test": "set1.test.txt"}
N_FEATURES = 700
LABEL_MAX = 4.0


def yahoo_root(root: str | os.PathLike | None = None) -> Path:
    """``root``, else ``$GROUPBIAS_YAHOO``; raises :class:`MissingFilesError` if neither."""
    return resolve_path(
        root, env=ENV_VAR, expected=list(SPLIT_FILES.values()), what="Yahoo! LTR Set 1 folder"
    )


def yahoo_file(root: str | os.PathLike | None, split: str) -> Path:
    """The file ``load_yahoo(root, split=split)`` reads; :class:`MissingFilesError` when
    absent."""
    if split not in SPLIT_FILES:
        from groupbias.core.errors import ParameterError

        raise ParameterError("split", f"one of {sorted(SPLIT_FILES)}", split)
    d = yahoo_root(root)
    path = d / SPLIT_FILES[split]
    if not path.is_file():
        raise MissingFilesError(
            d,
            [SPLIT_FILES[split]],
            hint="Yahoo! LTR Challenge Set 1 files are named " + ", ".join(SPLIT_FILES.values()),
        )
    return path


def load_yahoo(
    root: str | os.PathLike | None = None,
    *,
    split: str = "train",
    cache_dir: str | os.PathLike | None = None,
    cache: bool = True,
) -> RankingData:
    """Load one split of Yahoo! Set 1 as :class:`RankingData`.

    ``features`` float32 [n_items, 700] (column j = feature id j + 1), ``labels`` float64
    grades 0..4 (``label_max = 4``), ``query_ids`` the qids, ``item_ids`` line numbers.
    Parsed once, then reloaded from the cache (:mod:`data_loaders.cache`; ``cache=False``
    always parses). Raises :class:`MissingFilesError` for a missing file,
    :class:`DataFormatError` for a malformed line or a grade outside 0..4.
    """
    path = yahoo_file(root, split)
    return load_svmlight(
        path,
        n_features=N_FEATURES,
        feature_id_base=1,
        label_max=LABEL_MAX,
        name=f"yahoo/set1/{split}",
        cache_dir=cache_dir,
        cache=cache,
        graded=True,
    )


@dataclass(frozen=True)
class YahooOptions:
    """Yahoo! LTR Set 1 (``load_yahoo``); ``cache``: the parsed-split cache."""

    cache: bool = True

    def __post_init__(self) -> None:
        flag("cache", self.cache)

    def sources(self, root, split: str) -> dict:
        return {"data": yahoo_file(root, split)}

    def load(self, root, split: str) -> RankingData:
        return load_yahoo(root, split=split, cache=self.cache)
