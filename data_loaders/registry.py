"""Load a configured dataset and apply its grouping: the one place that maps config names
(``configs/dataset/*.yaml``, ``configs/grouping/*.yaml``) to loader functions.

A dataset config has ``loader`` (a key of :data:`LOADERS`), ``root`` (a directory or file the
user owns), ``params`` (loader keyword arguments) and ``splits`` (our split name -> the
dataset's split name). Datasets without a provided sensitive attribute (Yahoo!, MSLR,
LightGBM files) need ``grouping.kind = feature``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from groupbias.errors import GroupingError, MissingFilesError
from groupbias.data import RankingData


def _synthetic(root, split, params):
    from .synthetic import make_synthetic_splits

    return make_synthetic_splits(**params)[split]


def _trec_ppg(root, split, params):
    from .trec_fair import load_trec_fair_ppg

    return load_trec_fair_ppg(root, split=split, **params)


def _trec_track(root, split, params):
    from .trec_fair import load_trec_fair_track

    return load_trec_fair_track(root, **params)


def _yahoo(root, split, params):
    from .yahoo import load_yahoo

    return load_yahoo(root, split=split, **params)


def _mslr(root, split, params):
    from .mslr import load_mslr

    return load_mslr(root, split=split, **params)


def _lightgbm(root, split, params):
    import os

    from .lightgbm import load_lightgbm

    # params maps split names (train/valid/vali/test) to file names; the rest are options
    files = {k: params[k] for k in ("train", "valid", "vali", "test") if k in params}
    options = {k: v for k, v in params.items() if k not in files}
    return load_lightgbm(os.path.join(root, files.get(split, f"{split}.txt")), **options)


def _iitjee(root, split, params):
    from .iitjee import load_iitjee

    return load_iitjee(root, **params)


def _movielens(root, split, params):
    from .movielens import load_movielens

    return load_movielens(root, **params)


#: where users point each loader at their copy of the data
ENV_VARS = {"trec_fair_ppg": "GROUPBIAS_TREC_FAIR", "trec_fair_track": "GROUPBIAS_TREC_FAIR",
            "yahoo": "GROUPBIAS_YAHOO", "mslr": "GROUPBIAS_MSLR",
            "lightgbm": "GROUPBIAS_LIGHTGBM", "iitjee": "GROUPBIAS_IITJEE",
            "movielens": "GROUPBIAS_MOVIELENS"}

#: loader name -> (function(root, split, params), has a built-in sensitive attribute)
LOADERS: dict[str, tuple[Callable, bool]] = {
    "synthetic": (_synthetic, True),
    "trec_fair_ppg": (_trec_ppg, True),
    "trec_fair_track": (_trec_track, True),
    "yahoo": (_yahoo, False),
    "mslr": (_mslr, False),
    "lightgbm": (_lightgbm, False),
    "iitjee": (_iitjee, True),
    "movielens": (_movielens, True),
}

def load_splits(dataset_cfg: Mapping, *, only: tuple[str, ...] | None = None
                ) -> dict[str, RankingData]:
    """Load the splits named in ``dataset_cfg['splits']`` (optionally ``only`` some)."""
    loader = dataset_cfg.get("loader")
    if loader not in LOADERS:
        raise GroupingError(f"dataset.loader: unknown loader {loader!r}; expected one of "
                            f"{sorted(LOADERS)}")
    fn, _ = LOADERS[loader]
    params = dict(dataset_cfg.get("params") or {})
    splits = dict(dataset_cfg.get("splits") or {"train": "train"})
    out = {}
    for ours, theirs in splits.items():
        if only is not None and ours not in only:
            continue
        try:
            out[ours] = fn(dataset_cfg.get("root"), theirs, params)
        except MissingFilesError as exc:
            env = ENV_VARS.get(loader)
            if env is None:
                raise
            raise MissingFilesError(
                exc.directory, exc.expected,
                hint=f"point {env} (or dataset.root=...) at your copy of "
                     f"{dataset_cfg.get('name', loader)}; see docs/datasets.md") from exc
    return out


def apply_grouping(splits: Mapping[str, RankingData], dataset_cfg: Mapping,
                   grouping_cfg: Mapping) -> dict[str, RankingData]:
    """Set ``groups`` on every split.

    ``kind: builtin`` keeps the loader's sensitive attribute (an error for datasets without
    one). ``kind: feature`` thresholds feature ``feature_id`` (paper §6.1); the threshold
    (``mean`` / ``mean-std`` / a number) is computed on the *train* split and applied to
    every split, so train and test share one grouping rule.
    """
    kind = grouping_cfg.get("kind", "builtin")
    loader = dataset_cfg.get("loader")
    if kind == "builtin":
        if not LOADERS[loader][1]:
            raise GroupingError(f"dataset {dataset_cfg.get('name', loader)!r} has no built-in "
                                "sensitive attribute; choose grouping=feature with "
                                "grouping.feature_id=<id> (see data_loaders.grouping)")
        missing = [k for k, d in splits.items() if d.groups is None]
        if missing:
            raise GroupingError(f"splits {missing} came without groups from loader {loader!r}")
        return dict(splits)
    if kind != "feature":
        raise GroupingError(f"grouping.kind: expected 'builtin' or 'feature', got {kind!r}")
    from .grouping import group_by_feature

    fid = int(grouping_cfg["feature_id"])
    thr = grouping_cfg.get("threshold", "mean")
    ref = splits.get("train") or next(iter(splits.values()))
    col = ref.feature(fid).astype(np.float64)
    if isinstance(thr, str):
        if thr not in ("mean", "mean-std"):
            raise GroupingError(f"grouping.threshold: expected 'mean', 'mean-std' or a number, "
                                f"got {thr!r}")
        value = float(col.mean() - (col.std() if thr == "mean-std" else 0.0))
    else:
        value = float(thr)
    affected = grouping_cfg.get("affected", "below")
    return {name: group_by_feature(d, fid, threshold=value, affected=affected)
            for name, d in splits.items()}


def load_grouped(dataset_cfg: Mapping, grouping_cfg: Mapping, *,
                 only: tuple[str, ...] | None = None) -> dict[str, RankingData]:
    """:func:`load_splits` followed by :func:`apply_grouping`."""
    return apply_grouping(load_splits(dataset_cfg, only=only), dataset_cfg, grouping_cfg)
