"""MSLR-WEB30K / WEB10K (paper Sec. 6.1): ``Fold{K}/{train,vali,test}.txt``.

SVMlight lines ``<grade> qid:<q> 1:<v> 2:<v> ... 136:<v>`` (dense, 136 features, grades
0..4); both corpora share the layout. Column j holds feature id j + 1, so the paper's
feature numbers (e.g. MSLR\\ :sub:`[127]`) index it: ``data.feature(127)``.

The directory is the ``root`` argument, else ``$GROUPBIAS_MSLR`` (read when called).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from groupbias.core.errors import MissingFilesError
from groupbias.core.validation import integer, is_integer
from groupbias.data.ranking_data import RankingData

from ._options import flag
from ._tables import resolve_path
from .svmlight import load_svmlight

__all__ = [
    "load_mslr",
    "mslr_root",
    "mslr_file",
    "SPLITS",
    "N_FEATURES",
    "LABEL_MAX",
    "ENV_VAR",
    "MslrOptions",
]

ENV_VAR = "GROUPBIAS_MSLR"
SPLITS = ("train", "vali", "test")
N_FEATURES = 136
LABEL_MAX = 4.0


def mslr_root(root: str | os.PathLike | None = None) -> Path:
    """``root``, else ``$GROUPBIAS_MSLR``; raises :class:`MissingFilesError` if neither."""
    return resolve_path(
        root,
        env=ENV_VAR,
        expected=[f"Fold1/{s}.txt" for s in SPLITS],
        what="MSLR-WEB30K/10K folder (holding Fold1..Fold5)",
    )


def mslr_file(root: str | os.PathLike | None, fold: int, split: str) -> Path:
    """The file ``load_mslr(root, fold=fold, split=split)`` reads; :class:`MissingFilesError`
    when absent."""
    from groupbias.core.errors import ParameterError

    if split not in SPLITS:
        fix = "MSLR names the validation split 'vali'" if split == "valid" else None
        raise ParameterError("split", f"one of {SPLITS}", split, fix)
    if not is_integer(fold) or not 1 <= fold <= 5:
        raise ParameterError("fold", "an integer in 1..5", fold)
    d = mslr_root(root)
    rel = f"Fold{fold}/{split}.txt"
    path = d / rel
    if not path.is_file():
        raise MissingFilesError(d, [rel], hint="MSLR folds hold train.txt, vali.txt and test.txt")
    return path


def load_mslr(
    root: str | os.PathLike | None = None,
    *,
    fold: int = 1,
    split: str = "train",
    cache_dir: str | os.PathLike | None = None,
    cache: bool = True,
) -> RankingData:
    """Load ``Fold{fold}/{split}.txt`` of MSLR-WEB30K or WEB10K as :class:`RankingData`.

    ``features`` float32 [n_items, 136] (column j = feature id j + 1), ``labels`` float64
    grades 0..4 (``label_max = 4``), ``query_ids`` the qids, ``item_ids`` line numbers.
    ``split`` is MSLR's name: ``"train"``, ``"vali"`` or ``"test"``; ``fold`` 1..5.
    Parsed once, then reloaded from the cache (``cache=False`` always parses). Raises
    :class:`MissingFilesError` for a missing file, :class:`DataFormatError` for a
    malformed line or a grade outside 0..4.
    """
    path = mslr_file(root, fold, split)
    return load_svmlight(
        path,
        n_features=N_FEATURES,
        feature_id_base=1,
        label_max=LABEL_MAX,
        name=f"mslr/Fold{fold}/{split}",
        cache_dir=cache_dir,
        cache=cache,
        graded=True,
    )


@dataclass(frozen=True)
class MslrOptions:
    """MSLR-WEB30K/10K (``load_mslr``); ``fold`` 1..5."""

    fold: int = 1
    cache: bool = True

    def __post_init__(self) -> None:
        integer("fold", self.fold, low=1, high=5)
        flag("cache", self.cache)

    def sources(self, root, split: str) -> dict:
        return {"data": mslr_file(root, self.fold, split)}

    def load(self, root, split: str) -> RankingData:
        return load_mslr(root, fold=self.fold, split=split, cache=self.cache)
