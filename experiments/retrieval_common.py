"""What the retrieval experiments (gender_labels, bias_aware_prf, fair_qr,
retrieval_fairness) share: the text collection of the composed dataset, the lexicon, the
BM25 settings, the LLM endpoint, and their result tables."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from groupbias.app.setup import Setup
from groupbias.core.errors import ConfigError, DataFormatError, GroupBiasWarning, ParameterError
from groupbias.core.io import env_value
from groupbias.core.validation import choice, integer, real
from groupbias.data.datasets import record_input_file
from groupbias.data.membership import TermMembership
from groupbias.data.text import Run, TextCollection
from groupbias.data.trec import read_run
from groupbias.retrieval.bm25 import Analyzer, BM25Index
from groupbias.retrieval.labels import LexiconLabeller, load_gender_wordlist
from groupbias.retrieval.llm import ChatEndpoint

#: the text datasets (configs/dataset/<name>.yaml)
TEXT_DATASETS = ("grep_biasir", "trec2019_text", "trec2020_text", "text_files")
WORDLIST_ENV = "GROUPBIAS_GENDER_WORDLIST"
#: what each text dataset's groups are: (document label, classes, neutral class)
GROUP_LABELS = {
    "grep_biasir": ("gender", ("M", "F", "N"), "N"),
    "trec2019_text": ("h_class", ("L", "H"), None),
    "trec2020_text": ("h_class", ("L", "H"), None),
}


def groups_of(name: str, collection: TextCollection) -> tuple[str, tuple[str, ...], str | None]:
    """``(label, classes, neutral)`` of a dataset's groups: those of :data:`GROUP_LABELS`,
    else (a user's files) its first document label, that label's classes in sorted order,
    and ``N`` as the neutral class when it is one of them."""
    if name in GROUP_LABELS:
        return GROUP_LABELS[name]
    if not collection.doc_labels:
        raise ConfigError("dataset.params.groups", "missing: the collection has no document groups")
    label = next(iter(collection.doc_labels))
    classes = tuple(sorted({str(v) for v in collection.label(label)} - {""}))
    if len(classes) < 2:
        raise ConfigError("dataset.params.groups", f"label {label!r} has fewer than two groups")
    return label, classes, "N" if "N" in classes else None


def text_collection(setup: Setup) -> TextCollection:
    """The composed dataset as a text collection (a config error naming ``dataset`` when it
    is not one)."""
    if setup.dataset.name not in TEXT_DATASETS and setup.dataset.info.builtin_groups:
        raise ConfigError(
            "dataset",
            f"{setup.dataset.name!r} is not a text collection",
            hint="choose dataset=" + " | ".join(TEXT_DATASETS),
        )
    splits = setup.dataset.load()
    data = next(iter(splits.values()))
    if not isinstance(data, TextCollection):
        raise ConfigError(
            "dataset",
            f"{setup.dataset.name!r} is not a text collection",
            hint="choose dataset=" + " | ".join(TEXT_DATASETS),
        )
    return data


def wordlist(path) -> dict[str, tuple[str, ...]]:
    """The gender word list of ``path`` (else ``$GROUPBIAS_GENDER_WORDLIST``)."""
    value = path or env_value(WORDLIST_ENV)
    if not value:
        raise ConfigError(
            "experiment.wordlist",
            "missing: the 'word,m|f' gender word list",
            hint=f"set {WORDLIST_ENV} or experiment.wordlist to "
            "rekabsaz-gender/wordlist_genderspecific.txt",
        )
    record_input_file(value, "gender_wordlist")  # part of the run's identity
    return load_gender_wordlist(value)


def lexicon(collection: TextCollection, path) -> TermMembership:
    """Male and female term counts of every document (columns M, F)."""
    return LexiconLabeller(wordlist(path)).counts(list(collection.texts))


def endpoint(cfg, key: str = "experiment.llm") -> tuple[ChatEndpoint | None, dict]:
    """The LLM endpoint of a config mapping (None: no LLM) and its other keys."""
    if cfg is None:
        return None, {}
    if not isinstance(cfg, Mapping):
        raise ConfigError(key, f"expected a mapping (base_url, model, ...) or null, got {cfg!r}")
    names = set(ChatEndpoint.__dataclass_fields__)
    fields = {k: v for k, v in cfg.items() if k in names}
    extra = {k: v for k, v in cfg.items() if k not in names}
    try:
        return ChatEndpoint(**fields), extra
    except TypeError as exc:
        raise ConfigError(key, str(exc)) from None
    except ParameterError as exc:
        raise ConfigError(
            f"{key}.{exc.name}", f"expected {exc.expected}, got {exc.given!r}"
        ) from None


def settings_of(cls, cfg, key: str):
    """``cls(**cfg)`` (then its ``check()``, if it has one): a mapping that is not one, an
    unknown key or an impossible value is a config error naming ``key.<name>``."""
    if not isinstance(cfg, Mapping):
        raise ConfigError(key, f"expected a mapping, got {cfg!r}")
    allowed = [n for n, f in cls.__dataclass_fields__.items() if f.init]
    unknown = set(cfg) - set(allowed)
    if unknown:
        raise ConfigError(
            f"{key}.{sorted(unknown)[0]}", "unknown key; expected one of " + ", ".join(allowed)
        )
    try:
        s = cls(**cfg)
        check = getattr(s, "check", None)
        if check is not None:
            check()
    except ParameterError as exc:
        where = f"{key}.{exc.name}" if exc.name in cfg else key
        what = "" if exc.name in cfg else f"{exc.name} (default): "
        raise ConfigError(where, f"{what}expected {exc.expected}, got {exc.given!r}") from None
    return s


def check_names(key: str, values, allowed) -> list:
    """A list of names, each one of ``allowed`` (errors name ``key``)."""
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
        raise ConfigError(key, f"expected a list of names of {list(allowed)}, got {values!r}")
    bad = [v for v in values if v not in allowed]
    if bad:
        raise ConfigError(key, f"{bad[0]!r}: expected one of {list(allowed)}")
    return list(values)


def check_wordlist(value) -> None:
    """``experiment.wordlist``: null (``$GROUPBIAS_GENDER_WORDLIST`` when the run starts) or
    an existing file."""
    if value is None:
        return
    if not isinstance(value, str) or not Path(value).is_file():
        raise ConfigError(
            "experiment.wordlist", f"expected a 'word,m|f' file or null, got {value!r}"
        )


@dataclass(frozen=True)
class BM25Settings:
    """The BM25 of an experiment: ``k1``, ``b``, the analyzer's ``stopwords`` and
    ``stemmer``, and the retrieval ``depth`` (documents kept per query)."""

    k1: float = 0.9
    b: float = 0.4
    stopwords: str = "lucene"
    stemmer: str = "porter"
    depth: int = 1000

    @classmethod
    def of(cls, cfg, key: str = "experiment.bm25") -> BM25Settings:
        return settings_of(cls, cfg, key)

    def check(self) -> None:
        real("k1", self.k1, low=0.0)
        real("b", self.b, low=0.0, high=1.0)
        choice("stopwords", self.stopwords, ("lucene", "none"))
        choice("stemmer", self.stemmer, ("porter", "snowball", "none"))
        integer("depth", self.depth, low=1)

    def index(self, collection: TextCollection) -> BM25Index:
        """The BM25 index of the collection's documents; a collection none of whose
        documents keeps a term after analysis is a :class:`DataFormatError` naming its file."""
        try:
            return BM25Index(
                collection.texts,
                k1=self.k1,
                b=self.b,
                analyzer=Analyzer(stopwords=self.stopwords, stemmer=self.stemmer),
            )
        except ParameterError as exc:
            if exc.name != "texts":
                raise
            raise DataFormatError(
                collection.meta.get("corpus_file") or collection.name,
                None,
                f"none of the {len(collection.texts)} documents keeps a term after analysis "
                f"({self._analysis()}): every text is empty or stop words only",
                field="text",
            ) from None

    def _analysis(self) -> str:
        return f"experiment.bm25.stopwords={self.stopwords}, stemmer={self.stemmer}"

    def first_run(self, index: BM25Index, collection: TextCollection) -> Run:
        """BM25's top ``depth`` of every query. A query without a term of the collection
        after analysis retrieves nothing: named in a warning when some are, a
        :class:`DataFormatError` naming the queries file when every query is."""
        run = index.search(collection.queries, k=self.depth, on_empty="skip", tag="bm25")
        empty = run.meta["empty_queries"]
        if not empty:
            return run
        ids = [str(collection.query_ids[i]) for i in empty]
        shown = ", ".join(repr(q) for q in ids[:5]) + (", ..." if len(ids) > 5 else "")
        where = collection.meta.get("queries_file") or collection.name
        what = f"keep no term of the collection after analysis ({self._analysis()})"
        if len(empty) == len(collection.queries):
            raise DataFormatError(
                where, None, f"the {len(ids)} queries {what}: {shown}; nothing can be retrieved",
                field="query",
            )  # fmt: skip
        warnings.warn(
            f"{where}: {len(empty)} of {len(collection.queries)} queries {what}: {shown}; "
            "they retrieve nothing and are left out of every mean",
            GroupBiasWarning,
            stacklevel=2,
        )
        return run


def run_file_name(system: str) -> str:
    """A file name for a system's name: letters, digits, ``-``, ``.`` and ``_`` kept, the
    rest (``*``, ``+``, spaces, brackets) replaced by ``_``."""
    return "".join(ch if ch.isalnum() or ch in "-._" else "_" for ch in system).strip("_")


def save_runs(run_dir: Path, collection: TextCollection, runs: Mapping[str, Run]) -> list[str]:
    """Write every run as a TREC run file ``runs/<system>.txt`` and read it back (the file is
    what was evaluated); the paths written."""
    ids = {"query_ids": collection.query_ids, "doc_ids": collection.doc_ids}
    out = []
    for system, run in runs.items():
        path = run.to_trec(**ids).write(Path(run_dir) / "runs" / f"{run_file_name(system)}.txt")
        back = read_run_file(path, collection)
        if not (np.array_equal(back.docs, run.docs) and np.array_equal(back.qptr, run.qptr)):
            raise RuntimeError(f"{path}: the run read back differs from the run written")
        out.append(str(path))
    return out


def metric_table(
    records: Sequence[Mapping], *, systems: Sequence[str], metrics: Sequence[str], alpha: float
):
    """A DataFrame of formatted means, systems as rows and metrics as columns; ``*`` marks a
    paired t-test against the reference with ``p < alpha``."""
    import pandas as pd

    cell = {(r["condition"], r["metric"]): r for r in records}
    rows = {}
    for s in systems:
        row = []
        for m in metrics:
            r = cell.get((s, m))
            if r is None or r["value"] is None or not np.isfinite(r["value"]):
                row.append("–")
                continue
            p = r.get("p_value")
            star = "*" if p is not None and np.isfinite(p) and p < alpha else ""
            row.append(f"{r['value']:.4f}{star}")
        rows[s] = row
    table = pd.DataFrame.from_dict(rows, orient="index", columns=list(metrics))
    table.index.name = "system"
    return table


def show(table, run_dir: Path, stem: str, title: str, note: str | None = None) -> None:
    """Save ``table`` as ``stem.{csv,md,tex}`` in the run folder and print it."""
    import pandas as pd

    from groupbias.reporting import save_table, table_to_text

    if not isinstance(table.columns, pd.MultiIndex):
        table = table.copy()
        table.columns = pd.MultiIndex.from_tuples([("", str(c), "") for c in table.columns])
    paths = save_table(table, Path(run_dir) / stem, caption=title)
    print(table_to_text(table, title=title, note=note))
    print(f"[groupbias] table written to {paths['md'].parent}/{stem}.{{csv,md,tex}}")


@dataclass(frozen=True)
class Baselines:
    """The systems of seed 004's Table 1 beside FAIR-QR: ``mmr_lambda`` and ``mmr_depth``
    (MMR, λ = 0.5 as the paper), ``fair_k``, ``fair_p``, ``fair_alpha`` (FA*IR, k = 400,
    p = 0.3, α = 0.15 as the paper; the protected group of a query is its most
    under-represented group in BM25's top ``top_k``)."""

    mmr_lambda: float = 0.5
    mmr_depth: int = 100
    fair_k: int = 400
    fair_p: float = 0.3
    fair_alpha: float = 0.15

    @classmethod
    def of(cls, cfg, key: str = "experiment.baselines") -> Baselines:
        return settings_of(cls, cfg, key)

    def check(self) -> None:
        real("mmr_lambda", self.mmr_lambda, low=0.0, high=1.0)
        integer("mmr_depth", self.mmr_depth, low=1)
        integer("fair_k", self.fair_k, low=1)
        real("fair_p", self.fair_p, low=0.0, high=1.0, low_open=True, high_open=True)
        real("fair_alpha", self.fair_alpha, low=0.0, high=1.0, low_open=True, high_open=True)


def baseline_runs(
    index, collection, first: Run, membership, target, base: Baselines, rm3, *, top_k, depth
):
    """``{system: run}`` of BM25 (``first``), BM25+RM3, MMR and FA*IR (see
    :class:`Baselines`); ``membership`` one-hot [n_docs, n_groups], ``target`` the groups'
    target distribution [n_queries, n_groups + 1]."""
    from groupbias.retrieval.fair_qr import group_distribution
    from groupbias.retrieval.rerank import fair_topk, mmr

    runs = {"bm25": first}
    runs["bm25+rm3"] = rm3.search(index, collection.queries, first, k=depth, tag="bm25+rm3")
    runs["mmr"] = mmr(index, first, lam=base.mmr_lambda, depth=base.mmr_depth)
    dist = group_distribution(first, membership, top_k)[:, :-1]
    t = np.nan_to_num(target[:, :-1])
    protected_group = np.argmax(t - dist, axis=1)
    m = np.asarray(membership)
    protected = m[first.docs, protected_group[first.query_index()]] > 0
    runs["fa*ir"] = fair_topk(first, protected, k=base.fair_k, p=base.fair_p, alpha=base.fair_alpha)
    return runs


@dataclass
class SystemsExperiment:
    """What ``fair_qr`` and ``retrieval_fairness`` share: ``datasets`` (text datasets; a
    dataset on the command line replaces them), ``bm25`` (:class:`BM25Settings`),
    ``fair_qr`` (:class:`~groupbias.retrieval.fair_qr.FairQR`'s top_k, depth, max_iterations,
    smoothing, rerank_depth, refined_weight), ``refiner`` (the offline refiner's terms, pool,
    prior), ``baselines`` (:class:`Baselines`), ``llm`` (null, or an endpoint), ``alpha`` of
    the markers and ``skip_missing``."""

    trains_ranker = False

    name: str = ""
    datasets: list = field(default_factory=list)
    bm25: dict = field(default_factory=dict)
    fair_qr: dict = field(default_factory=dict)
    refiner: dict = field(default_factory=dict)
    baselines: dict = field(default_factory=dict)
    llm: dict | None = None
    alpha: float = 0.05
    skip_missing: bool = True

    @property
    def dataset_list(self) -> tuple | None:
        """The listed text datasets (:func:`.common.dataset_list`)."""
        if not self.datasets:
            return None
        return "experiment.datasets", tuple((str(n), True) for n in self.datasets)

    def check_systems(self) -> dict:
        """Validate the shared settings (errors name the key); the ``llm`` mapping's keys
        that are not endpoint settings are returned."""
        from groupbias.retrieval.fair_qr import FairQR, LogOddsRefiner

        from .common import check_common

        check_common(self)
        self.settings = BM25Settings.of(self.bm25)
        self.base = Baselines.of(self.baselines)
        self.loop = settings_of(FairQR, self.fair_qr, "experiment.fair_qr")
        settings_of(LogOddsRefiner, self.refiner, "experiment.refiner")
        self.endpoint, extra = endpoint(self.llm)
        check_names("experiment.datasets", self.datasets, TEXT_DATASETS)
        return extra

    def collections(self, setup: Setup, skipped: list):
        """``(spec, collection)`` of every dataset present (the absent ones are listed in
        ``skipped`` with ``skip_missing``, else raise)."""
        from groupbias.data.datasets import DatasetSpec

        specs = (
            [setup.dataset]
            if setup.data_from_command_line or not self.datasets
            else [DatasetSpec(name=n) for n in self.datasets]
        )
        for spec in specs:
            try:
                c = next(iter(spec.load().values()))
            except FileNotFoundError as exc:
                if not self.skip_missing:
                    raise
                skipped.append(f"{spec.label}: skipped, data not found ({exc})")
                continue
            yield spec, c


def read_run_file(path, collection: TextCollection) -> Run:
    """A TREC run file in ``collection`` (its query and document ids)."""
    return Run.from_trec(
        read_run(path), query_ids=collection.query_ids, doc_ids=collection.doc_ids, path=path
    )
