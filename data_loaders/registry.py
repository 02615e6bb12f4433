"""The built-in datasets, each declared once: loader, environment variable, expected files,
split names and whether a sensitive attribute comes with the data.

This module is the ``groupbias.data.datasets`` entry point of the package: importing it fills
:data:`groupbias.core.registry.DATASETS`, so ``gb.load_dataset("trec2020")`` and
``configs/dataset/trec2020.yaml`` (``name: trec2020``) reach the loaders below without the
core importing ``data_loaders``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from groupbias.core.errors import MissingFilesError, ParameterError
from groupbias.core.io import env_value
from groupbias.core.validation import choice, integer, real
from groupbias.data.datasets import DatasetInfo, register_dataset
from groupbias.data.ranking_data import RankingData

from . import iitjee, lightgbm, movielens, mslr, synthetic, text_collections, trec_fair, yahoo

__all__ = ["BUILTIN"]


def _flag(name: str, value) -> None:
    if not isinstance(value, bool):
        raise ParameterError(name, "true or false", value)


def _path(name: str, value) -> None:
    if value is not None and not isinstance(value, str):
        raise ParameterError(name, "a path (string) or null", value)


@dataclass(frozen=True)
class SyntheticOptions:
    """The embedded synthetic dataset (``data_loaders.synthetic.make_synthetic``)."""

    n_queries: int = 200
    list_size: Sequence[int] = (5, 60)
    n_features: int = 20
    affected_share: float = 0.3
    utility_ratio: float = 1.0
    n_grades: int = 5
    n_informative: int | None = None
    seed: int = 7
    draws: str = "sequential"

    def __post_init__(self) -> None:
        integer("n_queries", self.n_queries, low=3)
        ls = self.list_size
        if isinstance(ls, str) or not isinstance(ls, Sequence) or len(ls) != 2:
            raise ParameterError("list_size", "[min, max] items per query", ls)
        lo = integer("list_size", ls[0], low=1)
        integer("list_size", ls[1], low=lo, what=f"[min, max] with max >= min = {lo}")
        integer("n_features", self.n_features, low=2)
        real(
            "affected_share", self.affected_share, low=0.0, high=1.0, low_open=True, high_open=True
        )
        real("utility_ratio", self.utility_ratio, low=0.0, low_open=True)
        synthetic.check_grades(integer("n_grades", self.n_grades, low=2))
        if self.n_informative is not None:
            integer("n_informative", self.n_informative, low=1, high=self.n_features - 1)
        integer("seed", self.seed, low=0)
        choice("draws", self.draws, synthetic.DRAWS)
        synthetic.check_size(self.n_queries, ls, self.n_features)  # before anything is drawn

    def sources(self, root, split: str) -> dict:
        return {}  # generated from these options alone

    def load(self, root, split: str) -> RankingData:
        return synthetic.make_synthetic_splits(
            n_queries=self.n_queries,
            list_size=tuple(self.list_size),
            n_features=self.n_features,
            affected_share=self.affected_share,
            utility_ratio=self.utility_ratio,
            n_grades=self.n_grades,
            n_informative=self.n_informative,
            seed=self.seed,
            draws=self.draws,
        )[split]


@dataclass(frozen=True)
class TrecPpgOptions:
    """TREC Fair Ranking, preprocessed ppg CSVs (``trec_fair.load_trec_fair_ppg``)."""

    year: int

    def __post_init__(self) -> None:
        choice("year", str(self.year), ("2019", "2020"))

    def sources(self, root, split: str) -> dict:
        return {"csv": trec_fair.ppg_file(root, self.year, split)}

    def load(self, root, split: str) -> RankingData:
        return trec_fair.load_trec_fair_ppg(root, year=self.year, split=split)


@dataclass(frozen=True)
class TrecTrackOptions:
    """TREC Fair Ranking, the track's JSON + corpus (``trec_fair.load_trec_fair_track``)."""

    year: int
    author_rule: str = "first"
    unknown: str = "drop"
    high_level: int = 4

    def __post_init__(self) -> None:
        choice("year", str(self.year), ("2019", "2020"))
        choice("author_rule", self.author_rule, trec_fair.AUTHOR_RULES)
        choice("unknown", self.unknown, trec_fair.UNKNOWN_POLICIES)
        integer("high_level", self.high_level, low=0)

    def sources(self, root, split: str) -> dict:
        return trec_fair.track_files(root, self.year)

    def load(self, root, split: str) -> RankingData:
        return trec_fair.load_trec_fair_track(
            root,
            year=self.year,
            author_rule=self.author_rule,
            unknown=self.unknown,
            high_level=self.high_level,
        )


@dataclass(frozen=True)
class YahooOptions:
    """Yahoo! LTR Set 1 (``yahoo.load_yahoo``); ``cache``: the parsed-split cache."""

    cache: bool = True

    def __post_init__(self) -> None:
        _flag("cache", self.cache)

    def sources(self, root, split: str) -> dict:
        return {"data": yahoo.yahoo_file(root, split)}

    def load(self, root, split: str) -> RankingData:
        return yahoo.load_yahoo(root, split=split, cache=self.cache)


@dataclass(frozen=True)
class MslrOptions:
    """MSLR-WEB30K/10K (``mslr.load_mslr``); ``fold`` 1..5."""

    fold: int = 1
    cache: bool = True

    def __post_init__(self) -> None:
        integer("fold", self.fold, low=1, high=5)
        _flag("cache", self.cache)

    def sources(self, root, split: str) -> dict:
        return {"data": mslr.mslr_file(root, self.fold, split)}

    def load(self, root, split: str) -> RankingData:
        return mslr.load_mslr(root, fold=self.fold, split=split, cache=self.cache)


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
        _flag("cache", self.cache)

    def _file(self, root, split: str) -> str:
        name = getattr(self, split)
        root = root if root is not None else env_value(lightgbm.ENV_VAR)
        if root is None:  # no folder given: never the working directory by chance
            raise MissingFilesError("", [name], unset=lightgbm.ENV_VAR)
        return os.path.join(root, name)

    def sources(self, root, split: str) -> dict:
        data = self._file(root, split)
        return {"data": data, "query": data + ".query"}

    def load(self, root, split: str) -> RankingData:
        return lightgbm.load_lightgbm(
            self._file(root, split),
            n_features=self.n_features,
            feature_id_base=self.feature_id_base,
            label_max=self.label_max,
            cache=self.cache,
        )


@dataclass(frozen=True)
class IitjeeOptions:
    """IIT-JEE 2009 CSV (``iitjee.load_iitjee``); ``bad_rows``: raise | drop."""

    bad_rows: str = "raise"

    def __post_init__(self) -> None:
        choice("bad_rows", self.bad_rows, ("raise", "drop"))

    def sources(self, root, split: str) -> dict:
        return {"csv": iitjee.iitjee_file(root)}

    def load(self, root, split: str) -> RankingData:
        return iitjee.load_iitjee(root, bad_rows=self.bad_rows)


@dataclass(frozen=True)
class MovielensOptions:
    """MovieLens ratings + metadata (``movielens.load_movielens``)."""

    grouping: str
    metadata: str | None = None
    links: str | None = None
    missing: str = "drop"
    box_office_threshold: float = 100e6

    def __post_init__(self) -> None:
        choice("grouping", self.grouping, movielens.GROUPINGS)
        _path("metadata", self.metadata)
        _path("links", self.links)
        choice("missing", self.missing, movielens.MISSING_POLICIES)
        real("box_office_threshold", self.box_office_threshold, low=0.0)

    def sources(self, root, split: str) -> dict:
        return movielens.movielens_files(
            root, metadata=self.metadata, links=self.links, grouping=self.grouping
        )

    def load(self, root, split: str) -> RankingData:
        return movielens.load_movielens(
            root,
            metadata=self.metadata,
            links=self.links,
            grouping=self.grouping,
            missing=self.missing,
            box_office_threshold=self.box_office_threshold,
        )


@dataclass(frozen=True)
class GrepBiasirOptions:
    """Grep-BiasIR as a text collection (``text_collections.load_grep_biasir``)."""

    both: str = "unknown"
    text: str = "title+document"

    def __post_init__(self) -> None:
        choice("both", self.both, text_collections.BOTH_POLICIES)
        choice("text", self.text, tuple(text_collections.TEXT_FIELDS))

    def load(self, root, split: str):
        return text_collections.load_grep_biasir(root, both=self.both, text=self.text)


@dataclass(frozen=True)
class TrecTextOptions:
    """TREC Fair as a text collection (``text_collections.load_trec_fair_text``)."""

    year: int
    author_rule: str = "first"
    high_level: int = 4

    def __post_init__(self) -> None:
        choice("year", str(self.year), ("2019", "2020"))
        choice("author_rule", self.author_rule, ("first", "none_high", "majority"))
        integer("high_level", self.high_level, low=0)

    def load(self, root, split: str):
        return text_collections.load_trec_fair_text(
            root, self.year, author_rule=self.author_rule, high_level=self.high_level
        )


@dataclass(frozen=True)
class TextFilesOptions:
    """A user's text collection from files (``groupbias.data.text.load_text_collection``):
    ``corpus`` (collection.tsv or .jsonl), ``queries`` (queries.tsv or TREC topics),
    ``qrels`` (TREC qrels), ``groups`` (an item -> group file, or null) stored as the
    document label ``group_label``; relative paths are taken below ``root`` when given."""

    corpus: str | None = None
    queries: str | None = None
    qrels: str | None = None
    groups: str | None = None
    group_label: str = "group"
    unknown_docs: str = "raise"
    topic_field: str = "title"

    def __post_init__(self) -> None:
        for name in ("corpus", "queries", "qrels"):
            if not isinstance(getattr(self, name), str):
                raise ParameterError(name, "a file path", getattr(self, name))
        _path("groups", self.groups)
        if not isinstance(self.group_label, str) or not self.group_label:
            raise ParameterError("group_label", "a label name", self.group_label)
        choice("unknown_docs", self.unknown_docs, ("raise", "skip"))
        choice("topic_field", self.topic_field, ("title", "desc", "narr"))

    def load(self, root, split: str):
        from groupbias.data.text import load_text_collection

        def at(path):
            return None if path is None else os.path.join(root or "", path)

        return load_text_collection(
            at(self.corpus),
            at(self.queries),
            at(self.qrels),
            groups=at(self.groups),
            group_label=self.group_label,
            unknown_docs=self.unknown_docs,
            topic_field=self.topic_field,
        )


_TREC = trec_fair.ENV_VAR
_ALL = {"train": "train", "valid": "valid", "test": "test"}
BUILTIN = (
    DatasetInfo("synthetic", "synthetic", SyntheticOptions, splits=_ALL),
    DatasetInfo(
        "trec2019",
        "TREC 2019",
        TrecPpgOptions,
        _TREC,
        ("ppg/2019/train.csv", "ppg/2019/test.csv"),
        {"train": "train", "test": "test"},
        {"year": 2019},
    ),
    DatasetInfo(
        "trec2020",
        "TREC 2020",
        TrecPpgOptions,
        _TREC,
        ("ppg/2020/train.csv", "ppg/2020/test.csv"),
        {"train": "train", "test": "test"},
        {"year": 2020},
    ),
    DatasetInfo(
        "trec2019_track",
        "TREC 2019 (track)",
        TrecTrackOptions,
        _TREC,
        tuple(trec_fair.files_for(2019)),
        {"train": "train"},
        {"year": 2019},
    ),
    DatasetInfo(
        "trec2020_track",
        "TREC 2020 (track)",
        TrecTrackOptions,
        _TREC,
        tuple(trec_fair.files_for(2020)),
        {"train": "train"},
        {"year": 2020},
    ),
    DatasetInfo(
        "text_files",
        "text files",
        TextFilesOptions,
        None,
        (),
        {"test": "all"},
        builtin_groups=False,
    ),
    DatasetInfo(
        "grep_biasir",
        "Grep-BiasIR",
        GrepBiasirOptions,
        text_collections.ENV_VAR,
        text_collections.GREP_FILES,
        {"test": "all"},
        builtin_groups=False,
    ),
    *(
        DatasetInfo(
            f"trec{y}_text",
            f"TREC {y} (text)",
            TrecTextOptions,
            _TREC,
            tuple(trec_fair.files_for(y)),
            {"test": "all"},
            {"year": y},
            builtin_groups=False,
        )
        for y in (2019, 2020)
    ),
    DatasetInfo(
        "yahoo",
        "Yahoo!",
        YahooOptions,
        yahoo.ENV_VAR,
        tuple(yahoo.SPLIT_FILES.values()),
        _ALL,
        builtin_groups=False,
    ),
    DatasetInfo(
        "mslr",
        "MSLR",
        MslrOptions,
        mslr.ENV_VAR,
        tuple(f"Fold1/{s}.txt" for s in mslr.SPLITS),
        {"train": "train", "valid": "vali", "test": "test"},
        builtin_groups=False,
    ),
    DatasetInfo(
        "lightgbm",
        "LightGBM file",
        LightgbmOptions,
        lightgbm.ENV_VAR,
        ("train.txt", "train.txt.query", "test.txt", "test.txt.query"),
        {"train": "train", "test": "test"},
        builtin_groups=False,
    ),
    DatasetInfo("iitjee", "IIT-JEE", IitjeeOptions, iitjee.ENV_VAR, (iitjee.DEFAULT_FILE,)),
    DatasetInfo(
        "movielens_country",
        "MovieLens",
        MovielensOptions,
        movielens.ENV_VAR,
        ("ratings.dat", "movies_meta.csv"),
        params={"grouping": "country"},
        group_label="[Co.]",
    ),
    DatasetInfo(
        "movielens_bo",
        "MovieLens",
        MovielensOptions,
        movielens.ENV_VAR,
        ("ratings.dat", "movies_meta.csv"),
        params={"grouping": "box_office"},
        group_label="[BO]",
    ),
)

for _info in BUILTIN:
    register_dataset(_info, replace=True)
