"""What the experiment entries share: dataset lists, "skip what is not on this machine" for
licensed datasets, seeded generators and validated settings."""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from groupbias.app.config import build
from groupbias.app.setup import Setup
from groupbias.core.errors import ConfigError, GroupBiasError, GroupBiasWarning, ParameterError
from groupbias.core.validation import choice, integer, real
from groupbias.data.datasets import BuiltinGrouping, DatasetSpec, Grouping
from groupbias.data.ranking_data import RankingData
from groupbias.estimate.diagnostics import estimator_name
from groupbias.evaluation.catalog import metric_keys
from groupbias.pipelines.tabular import run_tabular

log = logging.getLogger("groupbias")

#: the metric columns of the paper's tables
TABLE_METRICS = ("ndcg@10", "rho_dtr", "delta_eel")


@dataclass(frozen=True)
class Entry:
    """One dataset of an experiment: the dataset, its grouping, and the config key they
    came from (for error messages)."""

    dataset: DatasetSpec
    grouping: Grouping
    key: str

    @property
    def title(self) -> str:
        """The table row name: the dataset with the grouping actually used."""
        return self.dataset.label_with(self.grouping)

    @property
    def plain(self) -> bool:
        """True when the entry is only its dataset's name (no title, params or grouping)."""
        return self.dataset == DatasetSpec(name=self.dataset.name) and self.grouping == (
            BuiltinGrouping()
        )

    @property
    def step_key(self) -> dict:
        """What a resumable step on this entry depends on: its dataset and grouping."""
        return {"dataset": repr(self.dataset), "grouping": repr(self.grouping)}


def parse_entries(items, key: str = "datasets", *, required: bool = False) -> tuple[Entry, ...]:
    """``experiment.datasets``: registered names, or mappings ``{dataset: <name>, title:
    <table name>, grouping: <a grouping config with _target_>, params: <loader options>}``.
    Each table row once (a dataset listed twice would store its records twice);
    ``required``: an empty list is refused (rather than quietly replaced by the composed
    ``dataset``)."""
    if isinstance(items, (str, Mapping)) or not isinstance(items, Sequence):
        raise ParameterError(
            key, "a list of dataset names or {dataset, title, grouping} mappings", items
        )
    if required and not items:
        raise ParameterError(
            key,
            "a non-empty list of datasets",
            [],
            fix="to run one dataset, choose it on the command line: dataset=<name>",
        )
    out = []
    for i, item in enumerate(items):
        where = f"{key}[{i}]"
        named = isinstance(item, str)
        if named:
            item = {"dataset": item}
        if not isinstance(item, Mapping):
            raise ParameterError(where, "a dataset name or a mapping", item)
        unknown = set(item) - {"dataset", "title", "grouping", "params"}
        if unknown:
            raise ParameterError(
                f"{where}.{sorted(unknown)[0]}",
                "keys dataset, title, grouping, params",
                sorted(unknown)[0],
            )
        try:
            spec = DatasetSpec(
                name=item.get("dataset"), title=item.get("title"), params=item.get("params") or {}
            )
        except ParameterError as exc:
            field = where if named else f"{where}.dataset"
            raise ParameterError(
                field if exc.name == "name" else f"{where}.{exc.name}", exc.expected, exc.given
            ) from None
        g = item.get("grouping")
        grouping = BuiltinGrouping() if g is None else build(g, f"{where}.grouping")
        entry = Entry(spec, grouping, f"experiment.{where}")
        twice = next((e for e in out if e.title == entry.title), None)
        if twice is not None:
            raise ParameterError(
                where,
                f"each table row once ({entry.title!r} is also {twice.key.split('.', 1)[1]})",
                item.get("dataset"),
                fix="give the second one another grouping or a title",
            )
        out.append(entry)
    return tuple(out)


def dataset_list(exp, key: str = "experiment.datasets") -> tuple | None:
    """An experiment's ``dataset_list`` (:class:`groupbias.app.setup.Experiment`): the config
    key of the datasets it runs unless the command line chooses one, and ``(name, plain)`` of
    each (None: it has no list and runs the composed ``dataset``)."""
    if not exp.entries:
        return None
    return key, tuple((e.dataset.name, e.plain) for e in exp.entries)


def entries(listed: Sequence[Entry], setup: Setup) -> list[Entry]:
    """The experiment's datasets, or the composed ``dataset``/``grouping`` when the list is
    empty or the command line chose them (``groupbias experiment=table2 dataset=mslr
    grouping=feature ...``)."""
    if not listed or setup.data_from_command_line:
        return [Entry(setup.dataset, setup.grouping, "dataset")]
    return list(listed)


def load(entry: Entry, *, only=None) -> dict[str, RankingData]:
    """Load and group one entry's splits; loader parameter errors name the config key."""
    try:
        splits = entry.dataset.load(only=only)
    except ParameterError as exc:
        if exc.name == "split":  # the experiment asked for a split the dataset lacks
            raise ConfigError(
                "experiment.split", f"expected {exc.expected}, got {exc.given!r}"
            ) from None
        if not exc.name.startswith("params.") or entry.key != "dataset":
            raise
        raise ConfigError(
            f"dataset.{exc.name}", f"expected {exc.expected}, got {exc.given!r}"
        ) from None
    return entry.grouping.apply(splits, entry.dataset.info)


def available(
    items: Sequence[Entry],
    *,
    skip_missing: bool,
    skipped: list,
    only=None,
    on_skip: Callable[[], object] | None = None,
) -> Iterator[tuple[Entry, dict[str, RankingData]]]:
    """``(entry, splits)`` for each entry whose data is present; with ``skip_missing`` the
    reasons for the absent ones go into ``skipped`` (and the log), else they raise.
    ``on_skip()``: called for each skipped entry (``run_dir.skip_steps`` of its planned steps)."""
    for entry in items:
        try:
            splits = load(entry, only=only)
        except FileNotFoundError as exc:
            if not skip_missing:
                raise
            reason = f"{entry.title}: skipped, data not found ({exc})"
            log.warning(reason)
            skipped.append(reason)
            if on_skip is not None:
                on_skip()
            continue
        yield entry, splits


def warn_if_long(
    setup: Setup, splits: Mapping, *, rankers: int, title: str = "", progress=None
) -> None:
    """Warn (one line on stderr) before training ``rankers`` rankers of the setup's recipe on
    ``splits`` (train, and valid when present) when the rough estimate of
    :func:`groupbias.ltr.training_time.training_cost` exceeds ``warn_after_s``. ``progress``: the
    run's :class:`~groupbias.app.progress.StepProgress`, told the estimate (its time left
    until epochs are measured) and that the warning was given."""
    if setup.recipe is None or rankers < 1:
        return
    if setup.warn_after_s is None and progress is None:
        return
    from groupbias.ltr.training_time import training_cost

    cost = training_cost(setup.recipe, splits["train"], splits.get("valid"), rankers=rankers)
    if progress is not None:
        progress.expect(cost)
    if setup.warn_after_s is not None and cost.seconds > setup.warn_after_s:
        if progress is None or not progress.warned:
            warnings.warn(cost.warning(title), GroupBiasWarning, stacklevel=2)
        if progress is not None:
            progress.warned = True


def step_records(
    run_dir,
    entry: Entry,
    steps: Mapping[str, Callable[..., dict]],
    grid: Iterable[Mapping],
    *,
    key: Mapping | None = None,
) -> list[dict]:
    """The records of the resumable steps on ``entry`` at every point of ``grid`` (e.g.
    ``{"beta": 0.8}``), in grid order and, per point, in the order of ``steps``: ``{name:
    fn}``, the step ``name.format(title=entry.title, **point)`` computes ``fn(**point)`` (a
    result with ``"records"``) and is keyed by the entry (:attr:`Entry.step_key`), ``key``
    and the point, so it reruns when any of them changes."""
    records: list[dict] = []
    for point in grid:
        for name, fn in steps.items():
            records += run_dir.step(
                name.format(title=entry.title, **point),
                functools.partial(fn, **point),
                key={**entry.step_key, **(key or {}), **point},
            )["records"]
    return records


def tabular_step(setup: Setup, split: RankingData, title: str, *, tag: str, beta, **options):
    """One resumable tabular step: :func:`~groupbias.pipelines.tabular.run_tabular` of the
    setup's bias, estimator and assumption check at ``beta`` on ``split`` (generator keyed
    by ``tag``, ``title`` and β; ``options``: more keywords of ``run_tabular``), its records."""
    res = run_tabular(
        split,
        beta=beta,
        bias=setup.bias,
        estimator=setup.estimator,
        diagnostics=setup.diagnostics,
        rng=rng_for(setup.seed, tag, title, beta),
        dataset=title,
        **options,
    )
    return {"records": res.records}


def full_information_step(setup: Setup, split: RankingData, title: str, *, tag: str, **options):
    """The full-information records of the tabular regime (the true relevance as the
    utilities: the biased utilities at β = 1 with σ_β = 0), ``condition="full"`` and no β,
    under the setup's evaluation protocol (``options``: more keywords of ``run_tabular``).
    Nothing is estimated from these utilities, so the assumption check does not run."""
    res = run_tabular(
        split,
        beta=1.0,
        beta_std=0.0,
        bias=setup.bias,
        estimator=setup.estimator,
        diagnostics=None,
        rng=rng_for(setup.seed, tag, title, "full"),
        dataset=title,
        **options,
    )
    return {
        "records": [
            {**r, "condition": "full", "beta": None, "p_value": None}
            for r in res.records
            if r["condition"] == "biased"
        ]
    }


def beta_grid(values) -> list[dict]:
    """The grid of :func:`step_records` over β."""
    return [{"beta": beta} for beta in values]


def with_validation(
    splits: dict[str, RankingData], fraction: float, *, seed: int, title: str
) -> dict[str, RankingData]:
    """The splits with a ``valid`` split for early stopping: the dataset's own, else a random
    ``fraction`` of the training queries (said in the log); ``fraction = 0`` keeps none."""
    if "valid" in splits or fraction == 0 or "train" not in splits:
        return splits
    train = splits["train"]
    n_valid = int(round(fraction * train.n_queries))
    if n_valid < 1 or n_valid >= train.n_queries:
        return splits
    perm = rng_for(seed, "valid-split", title).permutation(train.n_queries)
    valid_q, train_q = np.sort(perm[:n_valid]), np.sort(perm[n_valid:])
    msg = (
        f"{title}: no validation split; {n_valid} of {train.n_queries} training queries "
        f"(experiment.valid_fraction={fraction:g}) are held out for early stopping"
    )
    log.info(msg)
    print(f"[groupbias] {msg}")
    return {**splits, "train": train.subset(train_q), "valid": train.subset(valid_q)}


def folder_name(title: str) -> str:
    """A dataset title as a shell-safe folder or file name: letters, digits, ``_``, ``.`` and
    ``-`` kept, every other run (spaces, brackets, commas) one ``_`` (``TREC 2020`` →
    ``TREC_2020``)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", str(title)).strip("_") or "dataset"


def rng_for(seed: int, *keys) -> np.random.Generator:
    """An independent generator for (seed, keys...): the same keys give the same stream in
    every process, so runs are reproducible and order-independent."""
    h = hashlib.sha256(repr(keys).encode()).digest()
    words = [int.from_bytes(h[i : i + 4], "little") for i in range(0, 16, 4)]
    return np.random.default_rng(np.random.SeedSequence([int(seed), *words]))


def check_metrics(metrics, correlations) -> tuple[tuple, tuple]:
    """Validated ``metrics`` (names / mappings of the metric registry) and ``correlations``
    (pairs of their output keys)."""
    if isinstance(metrics, (str, Mapping)) or not isinstance(metrics, Sequence) or not metrics:
        raise ParameterError(
            "metrics",
            "a non-empty list of metric names, e.g. [ndcg@10, rho_dtr, delta_eel]",
            metrics,
        )
    try:
        keys = metric_keys(list(metrics))  # parses and checks every name
    except GroupBiasError as exc:
        raise ParameterError(
            "metrics", "names of groupbias.core.registry.METRICS", metrics, fix=str(exc)
        ) from None
    if isinstance(correlations, (str, Mapping)) or not isinstance(correlations, Sequence):
        raise ParameterError("correlations", "a list of [metric, metric] pairs", correlations)
    for pair in correlations:
        if isinstance(pair, str) or len(pair) != 2 or any(p not in keys for p in pair):
            raise ParameterError("correlations", f"pairs of the metrics {keys}", pair)
    return tuple(metrics), tuple(tuple(p) for p in correlations)


def check_common(exp, *, split: bool = True) -> None:
    """Validate the fields most experiments share (``alpha``, ``split``, ``skip_missing``)."""
    if not isinstance(exp.name, str) or not exp.name:
        raise ParameterError("name", "a non-empty name", exp.name)
    if hasattr(exp, "alpha"):
        real("alpha", exp.alpha, low=0.0, high=1.0, low_open=True, high_open=True)
    if split and hasattr(exp, "split"):
        choice("split", exp.split, ("train", "valid", "test"))
    if hasattr(exp, "skip_missing") and not isinstance(exp.skip_missing, bool):
        raise ParameterError("skip_missing", "true or false", exp.skip_missing)
    if hasattr(exp, "repetitions"):
        integer("repetitions", exp.repetitions, low=1)


#: the records a paper table shows beside its metric columns: β̂ and the null check (its
#: measured bias goes into the footnote of a failed check)
TABLE_EXTRAS = ("beta_hat", "null_beta_hat", "assumption_violated", "null_bias")


def table_records(records, cols, *, extras=TABLE_EXTRAS) -> list:
    """The records of the table columns ``cols`` plus β̂ and the null check."""
    keep = (*cols, *extras)
    return [r for r in records if r["metric"] in keep]


def assumption_note(records, estimator=None) -> str | None:
    """A footnote when a row's null check failed (the table marks it with ``!``), naming the
    null bias it measured (mean ``null_bias`` of the row's records, where recorded), with a
    remedy ``estimator`` (the one that ran) does not already apply."""
    bad = sorted(
        {
            str(r["dataset"])
            for r in records
            if r["metric"] == "assumption_violated" and r["value"] == 1
        }
    )
    if not bad:
        return None
    name = "ks" if estimator is None else estimator_name(estimator)
    if name == "calibrated":
        cause, remedy = "its labeled sample misrepresents the others", "a larger labeled_fraction"
    else:
        cause, remedy = "the groups' utilities differ", "try estimator=calibrated"
    return (
        f"! null β̂ (the {name} estimator on unbiased data) is off: {cause}, so β̂ and "
        "corrected values are unreliable for "
        + ", ".join(_with_null_bias(ds, records) for ds in bad)
        + f" ({remedy}; the warning names the cause measured)"
    )


def _with_null_bias(dataset: str, records) -> str:
    """``dataset (null bias -0.057)``: the mean null bias its records measured, if any."""
    bias = [
        r["value"] for r in records if r["metric"] == "null_bias" and str(r["dataset"]) == dataset
    ]
    return f"{dataset} (null bias {sum(bias) / len(bias):+.3f})" if bias else dataset


def evaluation_title(setup) -> str:
    """A title suffix naming a non-default evaluation protocol."""
    ev = getattr(setup, "evaluation", None)
    if ev is None or ev.mode == "deterministic":
        return ""
    if getattr(ev, "learner", "pl") == "ppg":
        return " (the released permutation-graph learner: mean exposure of its best rankings)"
    return " (stochastic: Plackett–Luce policies, expected exposure)"


def markdown(header: list[str], rows: list[list[str]]) -> str:
    """A markdown table of string cells (an empty cell written ``| |``)."""
    lines = [re.sub(r"\|  (?=\|)", "| ", "| " + " | ".join(header) + " |")]
    lines.append("|" + "---|" * len(header))
    lines += [re.sub(r"\|  (?=\|)", "| ", "| " + " | ".join(r) + " |") for r in rows]
    return "\n".join(lines)
