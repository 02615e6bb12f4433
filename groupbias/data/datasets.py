"""Datasets by name: each declared once (loader, environment variable, expected files, split
names), loaded the same way from the library, the configs and the command line.

``DATASETS`` (:mod:`groupbias.core.registry`) maps a name such as ``"trec2020"`` to a
:class:`DatasetInfo`. The built-in loaders (package ``data_loaders``) declare theirs in
``data_loaders/registry.py``, found through the ``groupbias.data.datasets`` entry-point group, so
the core never imports a loader; another package can declare datasets the same way::

    from .datasets import DatasetInfo, register_dataset

    register_dataset(DatasetInfo(name="mydata", title="My data", options=MyOptions,
                                 env_var="MYDATA_ROOT", expected_files=("train.tsv",)))

A dataset's ``options`` is a class whose keyword arguments are the loader's options (it
validates them when built, raising :class:`~groupbias.core.errors.ParameterError` with the option's
name) and whose ``load(root, split) -> RankingData`` reads one split (``root`` None: the
loader reads its environment variable when called). Groupings (``builtin`` here, ``feature`` in
``data_loaders.grouping``) implement ``apply(splits) -> splits``.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import os
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..core.errors import DataError, GroupingError, MissingFilesError, ParameterError
from ..core.io import file_digest
from ..core.registry import DATASETS
from ..core.segments import segment_max
from ..core.validation import integer
from .ranking_data import RankingData

__all__ = [
    "DatasetInfo",
    "register_dataset",
    "DatasetSpec",
    "Grouping",
    "BuiltinGrouping",
    "check_two_groups",
    "check_labels",
    "MIN_TWO_GROUP_QUERIES",
    "load_dataset",
    "recording_inputs",
    "current_input",
]


@dataclass(frozen=True)
class DatasetInfo:
    """One dataset as declared by its loader module.

    Attributes
    ----------
    name : registry name (``"trec2020"``), also the config file ``configs/dataset/<name>.yaml``
    title : how tables and figures name it (``"TREC 2020"``)
    options : the class of the loader's options: ``options(**params).load(root, split)``
    env_var : environment variable holding the user's copy (None: nothing to point at)
    expected_files : the files the loader reads, relative to the root (for messages)
    splits : our split name (train / valid / test) -> the dataset's own split name
    params : fixed loader keywords of this variant (e.g. ``{"year": 2020}``)
    builtin_groups : the loader sets ``groups`` (a sensitive attribute comes with the data)
    group_label : how tables name the built-in grouping (``"[Co.]"``), "" for none
    """

    name: str
    title: str
    options: Callable[..., Any]
    env_var: str | None = None
    expected_files: tuple[str, ...] = ()
    splits: Mapping[str, str] = field(default_factory=lambda: {"train": "train"})
    params: Mapping[str, object] = field(default_factory=dict)
    builtin_groups: bool = True
    group_label: str = ""

    def option_names(self) -> list[str]:
        """Loader options a config may set (beyond the registered ``params``)."""
        sig = inspect.signature(self.options)
        return [
            n
            for n, p in sig.parameters.items()
            if n not in self.params and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        ]

    def make_options(self, params: Mapping[str, object]):
        """The validated options object for ``params`` (errors name ``params.<option>``)."""
        allowed = self.option_names()
        for k in params:
            if k not in allowed:
                raise ParameterError(
                    f"params.{k}", "an option of the loader: " + (", ".join(allowed) or "none"), k
                )
        try:
            return self.options(**{**self.params, **params})
        except ParameterError as exc:
            raise ParameterError(f"params.{exc.name}", exc.expected, exc.given, exc.fix) from None


def register_dataset(info: DatasetInfo, *, replace: bool = False) -> DatasetInfo:
    """Declare a dataset under ``info.name``."""
    return DATASETS.register(info.name, info, replace=replace)


class Grouping(Protocol):
    """Sets ``groups`` (1 = affected) on every split of a dataset; ``label(info)`` names the
    grouping in tables (``"[426, mean]"``)."""

    def apply(
        self, splits: Mapping[str, RankingData], info: DatasetInfo
    ) -> dict[str, RankingData]: ...

    def label(self, info: DatasetInfo) -> str: ...


#: the default of ``grouping.min_two_group_queries``
MIN_TWO_GROUP_QUERIES = 10


def check_two_groups(splits: Mapping[str, RankingData], minimum: int, *, who: str) -> None:
    """Refuse a grouping under which fewer than ``minimum`` queries of a split (half of its
    non-empty queries when that is fewer; at least one always) have items of both groups:
    group bias can be neither simulated, estimated nor measured there (a one-group query has
    no ρ(DTR) or Δ(EEL) to speak of)."""
    for name, d in splits.items():
        if d.groups is None:
            continue
        g = d.groups
        qi = d.query_index()
        n_aff = np.bincount(qi, weights=g, minlength=d.n_queries)
        n_non = np.bincount(qi, weights=1.0 - g, minlength=d.n_queries)
        # equal fractional memberships (0.5 each) give both groups of a query the same
        # share of any ranking's exposure: such a query has no groups to compare
        differ = segment_max(g, d.qptr) > -segment_max(-g, d.qptr)
        both = int(np.sum((n_aff > 0) & (n_non > 0) & differ))
        needed = min(minimum, max(1, int(np.sum(d.list_sizes > 0)) // 2))
        if both < needed or both == 0:
            raise GroupingError(
                f"{who}/{name}: only {both} of {d.n_queries} queries have items of both "
                f"groups with different memberships; at least {max(needed, 1)} are needed "
                "(grouping.min_two_group_queries). "
                "Choose another sensitive attribute or threshold"
            )


def check_labels(splits: Mapping[str, RankingData], *, who: str) -> None:
    """Refuse a split in which no query has two different labels (all-zero labels, say):
    every ranking of such data is as good as any other, so NDCG, ρ(DTR) and Δ(EEL) measure
    nothing and β cannot be estimated."""
    for name, d in splits.items():
        if d.n_items == 0:
            continue
        hi = np.maximum.reduceat(d.labels, d.qptr[:-1][d.list_sizes > 0])
        lo = np.minimum.reduceat(d.labels, d.qptr[:-1][d.list_sizes > 0])
        if not np.any(hi > lo):
            values = np.unique(d.labels)
            shown = ", ".join(f"{v:g}" for v in values[:5]) + (", ..." if values.size > 5 else "")
            raise DataError(
                f"{who}/{name}: no query has two different labels (labels: {shown}); every "
                "ranking is then as good as any other and nothing can be measured. Check "
                "the label column of the data"
            )


@dataclass(frozen=True)
class BuiltinGrouping:
    """The sensitive attribute that comes with the dataset (TREC h-index, IIT-JEE gender,
    MovieLens country / box office, the synthetic sensitive feature).
    ``min_two_group_queries``: refuse data where fewer queries of a split have both groups."""

    min_two_group_queries: int = MIN_TWO_GROUP_QUERIES

    def __post_init__(self) -> None:
        integer("min_two_group_queries", self.min_two_group_queries, low=1)

    def label(self, info: DatasetInfo) -> str:
        return info.group_label

    def apply(self, splits: Mapping[str, RankingData], info: DatasetInfo) -> dict[str, RankingData]:
        if not info.builtin_groups:
            raise GroupingError(
                f"dataset {info.name!r} has no built-in sensitive attribute; "
                "choose grouping=feature with grouping.feature_id=<id> "
                "(see data_loaders.grouping.candidate_report)"
            )
        missing = [k for k, d in splits.items() if d.groups is None]
        if missing:
            raise GroupingError(f"splits {missing} of {info.name!r} came without groups")
        check_two_groups(splits, self.min_two_group_queries, who=info.name)
        check_labels(splits, who=info.name)
        return dict(splits)


@dataclass(frozen=True)
class DatasetSpec:
    """A registered dataset with this run's choices (the ``dataset`` config group).

    ``name``: a registered dataset; ``title``: overrides its title in tables; ``root``: the
    user's copy (None: the dataset's environment variable); ``params``: loader keywords
    beyond the registered ones; ``splits``: our split name -> the dataset's (None: the
    registered ones).
    """

    name: str
    title: str | None = None
    root: str | None = None
    params: Mapping[str, object] = field(default_factory=dict)
    splits: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or self.name not in DATASETS:
            raise ParameterError(
                "name", "a registered dataset: " + ", ".join(DATASETS.names()), self.name
            )
        info = DATASETS.get(self.name)
        if self.title is not None and not isinstance(self.title, str):
            raise ParameterError("title", "a string or null", self.title)
        if self.root is not None and not isinstance(self.root, str):
            raise ParameterError("root", "a path (string) or null", self.root)
        if not isinstance(self.params, Mapping):
            raise ParameterError("params", "a mapping of loader keywords", self.params)
        info.make_options(self.params)
        if self.splits is not None and (
            not isinstance(self.splits, Mapping)
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in self.splits.items())
        ):
            raise ParameterError(
                "splits", "a mapping of our split names to the dataset's", self.splits
            )

    @property
    def info(self) -> DatasetInfo:
        return DATASETS.get(self.name)

    @property
    def label(self) -> str:
        """The name tables and figures use (the registered title unless ``title`` is set)."""
        return self.title or self.info.title

    def label_with(self, grouping) -> str:
        """The table name of this dataset under ``grouping``: ``title`` when set, else the
        registered title and the grouping's label (``"MovieLens [Co.]"``, ``"LightGBM file
        [202, mean]"``)."""
        if self.title:
            return self.title
        part = grouping.label(self.info) if hasattr(grouping, "label") else ""
        return f"{self.info.title} {part}".strip()

    def load(self, *, only: tuple[str, ...] | None = None) -> dict[str, RankingData]:
        """The splits (all, or ``only`` some), as the loader returns them; each is reported
        to the callback of :func:`recording_inputs` with its data fingerprint."""
        info = self.info
        options = info.make_options(self.params)
        splits = self._split_names()
        unknown = [s for s in (only or ()) if s not in splits]
        if unknown:
            raise ParameterError("split", f"one of {sorted(splits)} of {info.name!r}", unknown[0])
        out = {}
        for ours, theirs in splits.items():
            if only is not None and ours not in only:
                continue
            with self._loader_errors():
                files = _source_files(options, self.root, theirs)
                digests = None if files is None else _digests(files)
                out[ours] = options.load(self.root, theirs)
            if digests is None:  # no declared sources: the content of what was loaded
                digests = {"data": out[ours].content_digest()}
            record = self._record(ours, files, digests)
            log = _INPUT_LOG.get()
            if log is not None:
                log(record)
        return out

    def _split_names(self) -> dict[str, str]:
        return dict(self.splits if self.splits is not None else self.info.splits)

    @contextlib.contextmanager
    def _loader_errors(self) -> Iterator[None]:
        """Missing files of a dataset with an environment variable: where to point it (or,
        when the loader's hint names the config key of the missing file, that hint); any
        other OS error while reading (an I/O error of the disk) as a :class:`DataError`
        naming the file."""
        info = self.info
        try:
            yield
        except MissingFilesError as exc:
            if info.env_var is None or "dataset.params." in (exc.hint or ""):
                raise
            raise MissingFilesError(
                exc.directory,
                exc.expected,
                hint=f"point {info.env_var} at your copy of {info.title}, or choose it with "
                f"dataset={info.name} dataset.root=<folder>; see docs/datasets.md",
                unset=exc.unset,
            ) from exc
        except FileNotFoundError:
            raise
        except OSError as exc:
            where = exc.filename if exc.filename is not None else info.title
            raise DataError(
                f"{where}: cannot read the data ({exc.strerror or exc}); check the disk or "
                "the file's permissions"
            ) from None

    def identity(self) -> dict:
        """What selects the data (not the title): name, root, params, splits (JSON-ready)."""
        return json.loads(
            json.dumps(
                {
                    "name": self.name,
                    "root": self.root,
                    "params": dict(self.params),
                    "splits": None if self.splits is None else dict(self.splits),
                },
                sort_keys=True,
                default=str,
            )
        )

    def _record(self, split: str, files, digests: dict) -> dict:
        ident = self.identity()
        blob = json.dumps({"dataset": ident, "split": split}, sort_keys=True)
        return {
            "key": hashlib.sha256(blob.encode()).hexdigest()[:16],
            "dataset": ident,
            "split": split,
            "paths": None if files is None else {k: str(v) for k, v in files.items()},
            "fingerprint": digests,
        }

    def input_record(self, split: str) -> dict:
        """The input record of ``split`` as :meth:`load` would report it now (the declared
        sources are hashed; a loader without them loads the split)."""
        theirs = self._split_names()[split]
        options = self.info.make_options(self.params)
        with self._loader_errors():
            files = _source_files(options, self.root, theirs)
        if files is None:
            return self._record(
                split, None, {"data": options.load(self.root, theirs).content_digest()}
            )
        return self._record(split, files, _digests(files))


#: the callback :meth:`DatasetSpec.load` reports every loaded split to (see
#: :func:`recording_inputs`)
_INPUT_LOG: ContextVar[Callable[[dict], None] | None] = ContextVar(
    "groupbias_input_log", default=None
)


@contextlib.contextmanager
def recording_inputs(callback: Callable[[dict], None]) -> Iterator[None]:
    """Within the block, every split loaded through :meth:`DatasetSpec.load` is reported
    as ``callback(record)``: ``key`` (the dataset's identity and split), ``dataset``
    (:meth:`DatasetSpec.identity`), ``split``, ``paths`` (role -> the file read) and
    ``fingerprint`` (role -> content digest, ``"absent"`` for a declared file that does not
    exist; ``{"data": digest}`` for a loader without declared sources)."""
    token = _INPUT_LOG.set(callback)
    try:
        yield
    finally:
        _INPUT_LOG.reset(token)


def record_input_file(path: str | os.PathLike, role: str) -> None:
    """Report a file a run reads outside a dataset (a word list, a lexicon) to the callback
    of :func:`recording_inputs`, so the run's identity holds its digest too."""
    log = _INPUT_LOG.get()
    if log is None:
        return
    files = {str(role): os.path.abspath(os.fspath(path))}
    blob = json.dumps({"file": files}, sort_keys=True)
    log(
        {
            "key": hashlib.sha256(blob.encode()).hexdigest()[:16],
            "dataset": None,
            "split": None,
            "paths": files,
            "fingerprint": _digests(files),
        }
    )


def current_input(record: Mapping) -> dict:
    """``record`` (of :func:`recording_inputs`) as it would be recorded now: the files its
    dataset resolves to today (its environment variable may point elsewhere) and their
    digests; a file recorded by :func:`record_input_file`, its digest now. A dataset that
    is gone (files missing, not registered) gives ``{}``."""
    if record.get("dataset") is None and record.get("paths"):
        return {**record, "fingerprint": _digests(dict(record["paths"]))}
    try:
        spec = DatasetSpec(**dict(record["dataset"]))
        return spec.input_record(str(record["split"]))
    except (FileNotFoundError, DataError, ParameterError, KeyError, TypeError):
        return {}


def _source_files(options, root, split: str) -> dict[str, str] | None:
    """The files ``options.load(root, split)`` reads, by role (None: not declared)."""
    sources = getattr(options, "sources", None)
    if sources is None:
        return None
    return {str(k): os.path.abspath(os.fspath(v)) for k, v in sources(root, split).items()}


def _digests(files: Mapping[str, str]) -> dict[str, str]:
    """Content digest of each file (``"absent"`` for one that does not exist)."""
    out = {}
    for role, path in files.items():
        out[role] = file_digest(path) if os.path.exists(path) else "absent"
    return out


def load_dataset(
    name: str,
    *,
    root: str | None = None,
    split: str | None = None,
    grouping: Grouping | None = None,
    **params,
):
    """Load a registered dataset: all its splits as ``{split: data}``, or one split.

    ``data`` is a :class:`~groupbias.data.ranking_data.RankingData` for the learning-to-rank
    datasets and a :class:`~groupbias.data.text.TextCollection` (documents, queries,
    judgements, document labels) for the text collections (``grep_biasir``,
    ``trec2019_text``, ``trec2020_text``, ``text_files``), which have one split, ``"test"``.
    ``grouping``: applied to every split of ranking data (default: the dataset's built-in
    sensitive attribute when it has one, else no grouping). Example::

        import groupbias as gb

        test = gb.load_dataset("trec2020", split="test")   # $GROUPBIAS_TREC_FAIR
        grep = gb.load_dataset("grep_biasir")["test"]      # a TextCollection
    """
    spec = DatasetSpec(name=name, root=root, params=params)
    splits = spec.load(only=None if split is None else (split,))
    if grouping is None and spec.info.builtin_groups:
        grouping = BuiltinGrouping()
    if grouping is not None:
        splits = grouping.apply(splits, spec.info)
    return splits[split] if split is not None else splits
