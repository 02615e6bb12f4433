"""The built-in datasets, each declared once: loader, environment variable, expected files,
split names and whether a sensitive attribute comes with the data. Each dataset's options
class (its config's ``params``, checked, with ``load(root, split)``) sits beside its loader:
``synthetic.SyntheticOptions``, ``trec_fair.TrecPpgOptions``, ...

This module is the ``groupbias.data.datasets`` entry point of the package: importing it fills
:data:`groupbias.core.registry.DATASETS`, so ``gb.load_dataset("trec2020")`` and
``configs/dataset/trec2020.yaml`` (``name: trec2020``) reach the loaders below without the
core importing ``data_loaders``.
"""

from __future__ import annotations

from groupbias.data.datasets import DatasetInfo, register_dataset

from . import iitjee, lightgbm, movielens, mslr, synthetic, text_collections, trec_fair, yahoo

__all__ = ["BUILTIN"]

_TREC = trec_fair.ENV_VAR
_ALL = {"train": "train", "valid": "valid", "test": "test"}
BUILTIN = (
    DatasetInfo("synthetic", "synthetic", synthetic.SyntheticOptions, splits=_ALL),
    DatasetInfo(
        "trec2019",
        "TREC 2019",
        trec_fair.TrecPpgOptions,
        _TREC,
        ("ppg/2019/train.csv", "ppg/2019/test.csv"),
        {"train": "train", "test": "test"},
        {"year": 2019},
    ),
    DatasetInfo(
        "trec2020",
        "TREC 2020",
        trec_fair.TrecPpgOptions,
        _TREC,
        ("ppg/2020/train.csv", "ppg/2020/test.csv"),
        {"train": "train", "test": "test"},
        {"year": 2020},
    ),
    DatasetInfo(
        "trec2019_track",
        "TREC 2019 (track)",
        trec_fair.TrecTrackOptions,
        _TREC,
        tuple(trec_fair.files_for(2019)),
        {"train": "train"},
        {"year": 2019},
    ),
    DatasetInfo(
        "trec2020_track",
        "TREC 2020 (track)",
        trec_fair.TrecTrackOptions,
        _TREC,
        tuple(trec_fair.files_for(2020)),
        {"train": "train"},
        {"year": 2020},
    ),
    DatasetInfo(
        "text_files",
        "text files",
        text_collections.TextFilesOptions,
        None,
        (),
        {"test": "all"},
        builtin_groups=False,
    ),
    DatasetInfo(
        "grep_biasir",
        "Grep-BiasIR",
        text_collections.GrepBiasirOptions,
        text_collections.ENV_VAR,
        text_collections.GREP_FILES,
        {"test": "all"},
        builtin_groups=False,
    ),
    *(
        DatasetInfo(
            f"trec{y}_text",
            f"TREC {y} (text)",
            text_collections.TrecTextOptions,
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
        yahoo.YahooOptions,
        yahoo.ENV_VAR,
        tuple(yahoo.SPLIT_FILES.values()),
        _ALL,
        builtin_groups=False,
    ),
    DatasetInfo(
        "mslr",
        "MSLR",
        mslr.MslrOptions,
        mslr.ENV_VAR,
        tuple(f"Fold1/{s}.txt" for s in mslr.SPLITS),
        {"train": "train", "valid": "vali", "test": "test"},
        builtin_groups=False,
    ),
    DatasetInfo(
        "lightgbm",
        "LightGBM file",
        lightgbm.LightgbmOptions,
        lightgbm.ENV_VAR,
        ("train.txt", "train.txt.query", "test.txt", "test.txt.query"),
        {"train": "train", "test": "test"},
        builtin_groups=False,
    ),
    DatasetInfo("iitjee", "IIT-JEE", iitjee.IitjeeOptions, iitjee.ENV_VAR, (iitjee.DEFAULT_FILE,)),
    DatasetInfo(
        "movielens_country",
        "MovieLens",
        movielens.MovielensOptions,
        movielens.ENV_VAR,
        ("ratings.dat", "movies_meta.csv"),
        params={"grouping": "country"},
        group_label="[Co.]",
    ),
    DatasetInfo(
        "movielens_bo",
        "MovieLens",
        movielens.MovielensOptions,
        movielens.ENV_VAR,
        ("ratings.dat", "movies_meta.csv"),
        params={"grouping": "box_office"},
        group_label="[BO]",
    ),
)

for _info in BUILTIN:
    register_dataset(_info, replace=True)
