"""Metrics by name: strings ``base[@k][:group]`` and mappings ``{name, key, **options}``
resolved against :data:`groupbias.core.registry.METRICS`.

- ``base``: a registered name (``"ndcg"``, ``"rho_dtr"``, ``"delta_eel"``, ``"awrf"``...)
  or one of the aliases its declaration lists (ir_measures', trec_eval's and ranx's names:
  ``"P"``, ``"Rprec"``, ``"hit_rate"``; trec_eval's hold the cutoff: ``"ndcg_cut_10"``,
  ``"P_10"``), its case ignored as in ir-measures (``"nDCG@10"`` is ``ndcg@10``; the output
  key stays the name as written); an unknown name is refused with the closest ones;
- ``@k``: the rank cutoff, an integer >= 1 (``"ndcg@10"``); without it the metric's
  ``default_k`` (``None`` = no cutoff for ``ndcg``, ``rho_dtr``, ``delta_eel`` and user
  metrics; 10 for the related-work metrics of :mod:`groupbias.evaluation.fairness`);
- ``:group``: ``all`` (the default), ``affected`` or ``non_affected`` (``"ndcg@10:affected"``),
  only on metrics that declare it (``ndcg`` and user metrics);
- a mapping gives options and the output key, e.g. ``{"name": "cwex", "key": "cwex@0.2",
  "alpha": 0.2}``; ``k`` and ``group`` may be given there instead of in the name
  (``"k": None`` = no cutoff). The key defaults to ``name``.

Each metric is declared once, beside its function
(:func:`~groupbias.evaluation.declaration.metric_info`); :data:`BUILTIN_METRICS`,
:data:`RELATED_WORK`, the tables' labels (:func:`metric_label`) and the reasons an
external run's measure is undefined (:func:`declaration_of`) are derived from the
declarations. Every registered metric has one call shape::

    fn(scores, spec, *, regime, k, group, **options) -> float64 [n_queries]

``spec`` has ``labels``, ``relevance``, ``groups``, ``qptr``, ``thresholds`` and
``membership`` (:class:`groupbias.evaluation.catalog.EvalSpec`); ``regime`` is
``"tabular"`` (the scores are utility estimates) or ``"ltr"`` (the ranking by the scores).
A metric declared with ``metric_info(ranked=True)`` gets a :class:`groupbias.rank.ranking.Ranking`
of the scores instead of the array: :func:`compute_metrics` ranks a score vector once and
every such metric shares that sort.

:func:`compute_metrics` evaluates blocks of whole queries of at most :data:`BLOCK_ITEMS` items
one after another (a query larger than that is a block of its own) and joins the per-query
vectors, so its working memory is bounded whatever the data size; a metric's value for a
query must therefore depend on that query's items only.
"""

from __future__ import annotations

import difflib
import inspect
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace

import numpy as np

from ..core.errors import ParameterError
from ..core.registry import METRICS
from ..core.segments import query_blocks
from ..core.validation import all_integral, check_k, choice
from ..data.membership import membership_from_groups
from ..rank.ranking import DeterministicRanking, Ranking, as_ranking
from . import fairness, metrics, trec_eval
from .declaration import DIRECTIONS, GROUPS, MetricInfo, info_of, metric_info
from .metrics import (
    delta_eel_ranking,
    delta_eel_tabular,
    ndcg,
    rho_dtr_ranking,
    rho_dtr_tabular,
)

__all__ = [
    "DEFAULT_METRICS",
    "REGIMES",
    "MetricRequest",
    "metric_info",
    "parse_metric",
    "validate_metrics",
    "metric_keys",
    "compute_metrics",
    "BLOCK_ITEMS",
    "EvalSpec",
    "eel_thresholds",
    "BUILTIN_METRICS",
    "RELATED_WORK",
    "DIRECTIONS",
    "direction_of",
    "bounds_of",
    "registered_name",
    "resolve_name",
    "declaration_of",
    "metric_label",
    "register_metric",
]

#: what the paper's tables and figures report: NDCG@10 overall and per group, ρ(DTR), Δ(EEL)
DEFAULT_METRICS = ("ndcg@10", "ndcg@10:affected", "ndcg@10:non_affected", "rho_dtr", "delta_eel")
REGIMES = ("tabular", "ltr")
_NAME = re.compile(r"([^@:]+)(?:@([^:]*))?(?::(.*))?\Z", re.S)
_FORM = "names are base[@k][:group], e.g. ndcg@10:affected"


#: the most grade levels graded labels may have (:func:`eel_thresholds`)
MAX_GRADES = 1000


def eel_thresholds(
    labels: np.ndarray, label_max: float | None, *, bin_width: float = 0.25
) -> tuple[float, ...]:
    """EEL discretization thresholds on the P(R) scale (see module docstring).

    Graded labels 0..L (L >= 2): the grade midpoints ``(j - 1/2) / L``, j = 1..L, so each
    score is rounded to the nearest grade. Binary or continuous relevance: equal-width bins
    of ``bin_width`` over [0, 1] (default thresholds 0.25, 0.5, 0.75); a single threshold
    ``a* = 0.5`` (``bin_width=0.5``) would leave every biased score above 0.5 unchanged and
    hide all but the most severe bias.
    """
    lab = np.asarray(labels, dtype=np.float64)
    integral = lab.size > 0 and all_integral(lab)
    top = float(label_max) if label_max else (float(lab.max()) if lab.size else 1.0)
    if integral and top >= 2 and top == round(top):
        if top > MAX_GRADES:  # one threshold per grade: 1e30 grades would never fit
            raise ParameterError(
                "labels",
                f"graded labels 0..L with L <= {MAX_GRADES} (Δ(EEL) has one grade level "
                "per label value)",
                f"labels up to {top:g}",
                fix="rescale the labels (or give the dataset's label_max)",
            )
        L = int(top)
        return tuple((j - 0.5) / L for j in range(1, L + 1))
    if not 0 < bin_width <= 1:
        raise ParameterError("bin_width", "a bin width in (0, 1]", bin_width)
    n = int(round(1 / bin_width))
    return tuple(j * bin_width for j in range(1, n))


@dataclass(frozen=True)
class EvalSpec:
    """What to evaluate against: true labels (NDCG), true relevance P(R) (ρ(DTR), Δ(EEL)),
    groups, offsets, the EEL grade thresholds, and the metrics to compute (names or
    mappings of :data:`groupbias.core.registry.METRICS`, see :func:`parse_metric`).
    ``membership``: [n_items, n_groups] for the related-work metrics (default
    ``[groups, 1 - groups]``)."""

    labels: np.ndarray | None
    relevance: np.ndarray | None
    groups: np.ndarray | None
    qptr: np.ndarray
    thresholds: tuple[float, ...] = (0.5,)
    metrics: tuple = DEFAULT_METRICS
    membership: np.ndarray | None = None


def _cut_form(alias: str, name: str):
    """trec_eval's form of ``alias`` (``P_{k}``: ``P_10``, ``P.10``) as a pattern."""
    stem = re.escape(alias[: -len("_{k}")])
    return re.compile(stem + r"[_.](\d+)\Z", re.I), name


def _name_table() -> tuple[dict[str, list[str]], list]:
    """Every registered name and plain alias by its lower case, and the trec_eval forms."""
    plain: dict[str, list[str]] = {}
    cut = []
    for name in METRICS.names():
        plain.setdefault(name.lower(), []).append(name)
    for name in METRICS.names():
        for alias in info_of(METRICS.get(name)).aliases:
            if alias.endswith("_{k}"):
                cut.append(_cut_form(alias, name))
            elif name not in plain.setdefault(alias.lower(), []):
                plain[alias.lower()].append(name)
    return plain, cut


def resolve_name(base: str) -> tuple[str, str | None]:
    """The registered metric ``base`` names and the cutoff its name holds: a registered
    name, or one of a metric's aliases (ir_measures', trec_eval's, ranx's names), its case
    ignored as in ir-measures (``nDCG`` → ``ndcg``, ``P`` → ``precision``, ``ndcg_cut_10``
    → ``ndcg`` with the cutoff ``"10"``); ``(base, None)`` when nothing matches."""
    if base in METRICS:
        return base, None
    plain, cut = _name_table()
    found = plain.get(base.lower(), [])
    if len(found) == 1:
        return found[0], None
    for pattern, name in cut:
        m = pattern.match(base)
        if m:
            return name, m.group(1)
    return base, None


def registered_name(base: str) -> str:
    """The registered metric ``base`` names (:func:`resolve_name`), ``base`` itself when no
    registered name or alias matches."""
    return resolve_name(base)[0]


def declaration_of(name: str) -> MetricInfo:
    """The declaration of the registered metric ``name`` (or of the name it is an alias of)."""
    return info_of(METRICS.get(registered_name(name)))


def direction_of(name: str) -> str:
    """Which way the metric of output name ``name`` (``base[@k][:group]``, any case) is
    better: ``"higher"`` for names that are not registered."""
    return _declaration_named(name).direction


def bounds_of(name: str) -> tuple[float | None, float | None]:
    """The lowest and highest value the metric of output name ``name`` can take (None where
    unbounded or not declared; ``(None, None)`` for names that are not registered)."""
    return _declaration_named(name).bounds


def _declaration_named(name: str) -> MetricInfo:
    """The declaration of the metric of output name ``name`` (``base[@k][:group]``, any
    case); the defaults for a name that is not registered."""
    m = _NAME.match(name)
    base = registered_name(m.group(1)) if m else ""
    return info_of(METRICS.get(base)) if base in METRICS else MetricInfo()


def metric_label(key: str) -> str:
    """A table's name of the metric of output key ``key``: its declared label, the cutoff,
    the group and the direction (``ndcg@10:affected`` → ``NDCG@10 affected ↑``); ``key``
    itself for a metric without a label or a key that is no metric name."""
    m = _NAME.match(key)
    if m is None:
        return key
    base, k_text = resolve_name(m.group(1))
    k_text = k_text if m.group(2) is None else m.group(2)
    group = m.group(3) or "all"
    if base not in METRICS or group not in GROUPS:
        return key
    if k_text is not None and not (k_text.isascii() and k_text.isdigit()):
        return key
    return info_of(METRICS.get(base)).table_label(k_text, group) or key


def _did_you_mean(base: str) -> str:
    """``did you mean ...?`` for an unknown metric name (difflib over every registered
    name and alias, trec_eval's forms shown with the cutoff 10), then the names' form."""
    known: dict[str, str] = {}
    for name in METRICS.names():
        for shown in (name, *info_of(METRICS.get(name)).aliases):
            known.setdefault(shown.replace("{k}", "10").lower(), shown.replace("{k}", "10"))
    close = difflib.get_close_matches(base.lower(), list(known), n=3, cutoff=0.6)
    if not close:
        return _FORM
    return "did you mean " + " or ".join(known[c] for c in close) + "? " + _FORM


def register_metric(name: str, *, replace: bool = False, **declaration):
    """Decorator declaring a metric (:func:`metric_info`: ``aliases``, ``label``, ``needs``,
    ``undefined``, ``related_work``, ``direction``, ``default_k``, ``groups``, ``ranked``)
    and registering it in :data:`~groupbias.core.registry.METRICS` as ``name``: adding a
    metric is its function and this one declaration (docs/extending.md)."""

    def add(fn):
        return METRICS.register(name, metric_info(name=name, **declaration)(fn), replace=replace)

    return add


@dataclass(frozen=True)
class MetricRequest:
    """One parsed metric: registry ``name``, cutoff ``k``, ``group``, output ``key`` and
    keyword ``options``."""

    name: str
    k: int | None
    group: str
    key: str
    options: Mapping = field(default_factory=dict)


def _split(entry) -> tuple[str, str, dict]:
    if isinstance(entry, str):
        return entry, entry, {}
    if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
        key = entry.get("key", entry["name"])
        if not isinstance(key, str) or not key:
            raise ParameterError("metrics", "a non-empty string 'key'", key)
        return entry["name"], key, {k: v for k, v in entry.items() if k not in ("name", "key")}
    raise ParameterError("metrics", "a metric name or a mapping with a 'name'", entry, fix=_FORM)


def _cutoff(text: str, k_text: str | None, options: dict, default):
    if k_text is not None and "k" in options:
        raise ParameterError("metrics", "a cutoff in the name or in 'k', not both", text)
    if "k" in options:
        return check_k(options.pop("k"), f"metrics ({text}): k")
    if k_text is None:
        return default
    if not (k_text.isascii() and k_text.isdigit()) or int(k_text) < 1:
        raise ParameterError(
            "metrics", "a rank cutoff @k with k an integer >= 1 (e.g. ndcg@10)", text
        )
    return int(k_text)


def _group(text: str, base: str, g_text: str | None, options: dict, allowed) -> str:
    if g_text is not None and "group" in options:
        raise ParameterError("metrics", "a group in the name or in 'group', not both", text)
    group = options.pop("group", "all" if g_text is None else g_text)
    if group not in allowed:
        shown = ", ".join(f":{g}" for g in allowed if g != "all") or "none"
        raise ParameterError("metrics", f"a group suffix {base} accepts ({shown})", text)
    return group


def parse_metric(entry) -> MetricRequest:
    """Parse one metric name or mapping (see the module docstring); unknown names, bad
    cutoffs and bad group suffixes raise :class:`ParameterError`."""
    text, key, options = _split(entry)
    m = _NAME.match(text)
    if m is None:
        raise ParameterError("metrics", "a metric name", text, fix=_FORM)
    written, k_text, g_text = m.groups()
    base, cut = resolve_name(written)
    if base not in METRICS:
        raise ParameterError(
            "metrics",
            "a registered metric name (one of " + ", ".join(METRICS.names()) + ")",
            text,
            fix=_did_you_mean(written),
        )
    if cut is not None:
        if k_text is not None:
            raise ParameterError("metrics", f"one cutoff ({written} holds one)", text)
        k_text = cut
    info = info_of(METRICS.get(base))
    k = _cutoff(text, k_text, options, info.default_k)
    group = _group(text, base, g_text, options, info.groups)
    return MetricRequest(base, k, group, key, options)


def validate_metrics(specs) -> list[MetricRequest]:
    """Parse every entry of ``specs`` (a list of names / mappings) without computing
    anything; unknown names, bad suffixes and repeated output keys raise."""
    if isinstance(specs, (str, Mapping)) or not isinstance(specs, Sequence):
        raise ParameterError("metrics", "a list of metric names or mappings", specs, fix=_FORM)
    out = [parse_metric(s) for s in specs]
    seen = set()
    for r in out:
        if r.key in seen:
            raise ParameterError(
                "metrics", "distinct output keys", r.key, fix="give repeated metrics a 'key'"
            )
        seen.add(r.key)
    return out


def metric_keys(specs) -> list[str]:
    """The output keys of ``specs``, in order (table columns); duplicates raise."""
    return [r.key for r in validate_metrics(specs)]


def _call(req: MetricRequest, scores, spec, regime: str) -> np.ndarray:
    fn = METRICS.get(req.name)
    try:
        values = fn(scores, spec, regime=regime, k=req.k, group=req.group, **req.options)
    except TypeError as exc:
        if "keyword argument" not in str(exc):
            raise
        raise ParameterError(
            f"metrics ({req.key})", "options the metric accepts", sorted(req.options), fix=str(exc)
        ) from None
    except ParameterError as exc:
        if exc.name not in req.options:
            raise
        # an option of this metric entry: named with the metric (cwex.alpha, not alpha)
        raise ParameterError(f"{req.key}.{exc.name}", exc.expected, exc.given, exc.fix) from None
    values = np.asarray(values, dtype=np.float64)
    n = len(spec.qptr) - 1
    if values.shape != (n,):
        raise ParameterError(
            f"metrics ({req.key})", f"float64 [{n}] (one value per query)", f"shape {values.shape}"
        )
    return values


#: items per evaluation block of whole queries (bounds the working memory of an evaluation)
BLOCK_ITEMS = 1 << 19
#: ``spec`` fields holding one entry (or row) per item, sliced with the scores per block
_ITEM_FIELDS = ("labels", "relevance", "groups", "membership")


def _block_spec(spec, a: int, b: int, qa: int, qb: int):
    """``spec`` restricted to the items ``a:b`` = queries ``qa:qb`` (offsets rebased)."""
    names = {f.name for f in fields(spec)}
    sliced = {
        n: getattr(spec, n)[a:b]
        for n in _ITEM_FIELDS
        if n in names and getattr(spec, n) is not None
    }
    qptr = np.asarray(spec.qptr)[qa : qb + 1]
    return replace(spec, qptr=qptr - qptr[0], **sliced)


def _policy_metrics(requests, ranked, regime: str) -> None:
    """A policy is judged by its expected exposure: only ranked metrics in the LTR regime."""
    if regime != "ltr":
        raise ParameterError("regime", "'ltr' for a Plackett-Luce policy", regime)
    for r, is_ranked in zip(requests, ranked):
        if not is_ranked:
            raise ParameterError(
                f"metrics ({r.key})",
                "a metric that accepts a ranking (declared ranked=True) for a policy",
                r.name,
            )


def compute_metrics(scores, spec, *, regime: str) -> dict[str, np.ndarray]:
    """``{output key: float64 [n_queries]}`` of ``spec.metrics`` for ``scores`` in
    ``regime`` (``"tabular"`` or ``"ltr"``); every name is checked before any is computed.
    ``scores`` may be a :class:`~groupbias.rank.ranking.Ranking`: a deterministic ranking of
    them, or a :class:`~groupbias.rank.plackett_luce.PlackettLuce` policy (LTR regime,
    ranked metrics only: they use its expected exposures).

    The scores are ranked once (a :class:`~groupbias.rank.ranking.DeterministicRanking`,
    given to every metric declared ``ranked``); metrics without a cutoff run first, so that
    the top-k metrics reuse their full sort."""
    regime = choice("regime", regime, REGIMES)
    requests = validate_metrics(spec.metrics)
    qptr = np.asarray(spec.qptr)
    cuts = query_blocks(qptr, BLOCK_ITEMS)
    if len(cuts) <= 2 or not is_dataclass(spec) or isinstance(scores, Ranking):
        return _compute(scores, spec, requests, regime)
    scores = np.asarray(scores)
    parts = [
        _compute(
            scores[qptr[qa] : qptr[qb]],
            _block_spec(spec, int(qptr[qa]), int(qptr[qb]), qa, qb),
            requests,
            regime,
        )
        for qa, qb in zip(cuts[:-1], cuts[1:])
    ]
    return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}


def _compute(scores, spec, requests, regime: str) -> dict[str, np.ndarray]:
    ranked = [info_of(METRICS.get(r.name)).ranked for r in requests]
    given = isinstance(scores, Ranking)
    values_of = scores
    if given:
        if not isinstance(scores, DeterministicRanking):  # a policy: no scores to pass on
            _policy_metrics(requests, ranked, regime)
        else:
            values_of = scores.scores
    ranking = as_ranking(scores, spec.qptr) if any(ranked) or given else None
    values = {}
    first = [i for i, r in enumerate(requests) if ranked[i] and r.k is None]
    for i in first + [i for i in range(len(requests)) if i not in first]:
        values[i] = _call(requests[i], ranking if ranked[i] else values_of, spec, regime)
    return {r.key: values[i] for i, r in enumerate(requests)}


# --------------------------------------------------------------------------- the metrics by name
# One call shape: fn(scores, spec, *, regime, k, group, **options) -> float64 [n_queries].


def _no_cutoff(name: str, k) -> None:
    if k is not None:
        raise ParameterError(
            "metrics",
            f"{name} without @k in the tabular regime (the "
            "scores are utility estimates, not a ranking)",
            f"{name}@{k}",
        )


#: what ρ(DTR) and Δ(EEL) read: the true relevance P(R) and the groups
_PAPER = ("relevance", "groups")


@metric_info(
    name="ndcg",
    aliases=("nDCG", "ndcg_cut_{k}"),
    label="NDCG",
    needs=("labels", "groups"),
    undefined="no list holds a relevant item",
    ranked=True,
    bounds=(0.0, 1.0),
)
def _ndcg_by_name(scores, spec, *, regime, k, group, **options) -> np.ndarray:
    """NDCG@k (:func:`~groupbias.evaluation.metrics.ndcg`) of the ranking by ``scores``
    against ``spec.labels``, over all items or one group (``ndcg@10:affected``); no
    ``@k``: the whole list."""
    return ndcg(
        scores,
        spec.labels,
        qptr=spec.qptr,
        groups=spec.groups,
        group=group,
        k=k,
        reduce=None,
        **options,
    )


@metric_info(name="rho_dtr", label="ρ(DTR)", needs=_PAPER, groups=("all",), ranked=True,
             undefined="no list holds a relevant item of both groups",
             bounds=(0.0, 1.0))  # fmt: skip
def _rho_dtr_by_name(scores, spec, *, regime, k, group, **options) -> np.ndarray:
    """ρ(DTR) against ``spec.relevance``: ``regime="tabular"``, the scores are utility
    estimates (:func:`~groupbias.evaluation.metrics.rho_dtr_tabular`, no cutoff); ``"ltr"``,
    the exposure of the ranking by the scores (:func:`~groupbias.evaluation.metrics.
    rho_dtr_ranking`, cutoff ``k``)."""
    common = {"qptr": spec.qptr, "groups": spec.groups, "reduce": None, **options}
    if regime == "tabular":
        _no_cutoff("rho_dtr", k)
        return rho_dtr_tabular(scores, spec.relevance, **common)
    return rho_dtr_ranking(scores, spec.relevance, k=k, **common)


@metric_info(name="delta_eel", label="Δ(EEL)", needs=_PAPER, groups=("all",), ranked=True,
             direction="lower", undefined="no list holds relevant items",
             bounds=(0.0, None))  # fmt: skip
def _delta_eel_by_name(scores, spec, *, regime, k, group, **options) -> np.ndarray:
    """Δ(EEL) against ``spec.relevance`` with the grade thresholds ``spec.thresholds``
    (an option ``thresholds`` overrides them), cutoff ``k`` on the target exposures:
    tabular, the scores are utility estimates (:func:`~groupbias.evaluation.metrics.
    delta_eel_tabular`), or of the ranking by the scores (:func:`~groupbias.evaluation.
    metrics.delta_eel_ranking`)."""
    fn = delta_eel_tabular if regime == "tabular" else delta_eel_ranking
    if options.get("bins", "thresholds") == "thresholds":
        options = {"thresholds": spec.thresholds, **options}
    return fn(
        scores, spec.relevance, qptr=spec.qptr, groups=spec.groups, k=k, reduce=None, **options
    )


def _as_declared(by_name, fn):
    """``by_name`` named, documented and declared as the metric function ``fn``."""
    by_name.__name__ = by_name.__qualname__ = fn.__name__
    by_name.__doc__ = (
        f"``{fn.__name__}`` (:func:`{fn.__module__}.{fn.__name__}`) of the ranking by the "
        "scores, by name (:data:`BUILTIN_METRICS`)."
    )
    return metric_info(**asdict(info_of(fn)))(by_name)


def _on_labels(fn):
    """The metric-by-name form of a utility metric of a retrieval run (``map``, ``mrr``,
    ``precision``...): ``fn`` of the ranking by the scores against ``spec.labels``, cutoff
    ``k`` (no ``@k``: the whole list; a metric without a cutoff refuses one)."""
    cuts = "k" in inspect.signature(fn).parameters

    def by_name(scores, spec, *, regime, k, group, **options):
        if not cuts and k is not None:
            raise ParameterError("metrics", f"{info_of(fn).name} without @k", k)
        cut = {"k": k} if cuts else {}
        return fn(scores, spec.labels, qptr=spec.qptr, reduce=None, **cut, **options)

    return _as_declared(by_name, fn)


_POSITIONAL = inspect.Parameter.POSITIONAL_OR_KEYWORD


def _on_membership(fn):
    """The metric-by-name form of a related-work metric of :mod:`~groupbias.evaluation.
    fairness`: ``fn`` on ``spec.membership`` (default ``[groups, 1 - groups]``), with
    ``spec.labels`` (when it ``needs`` them) passed as its second array or as ``labels``,
    as its signature says; the same in both regimes."""
    params = inspect.signature(fn).parameters
    labels = "labels" in info_of(fn).needs
    positional = labels and "labels" in params and params["labels"].kind is _POSITIONAL

    def by_name(scores, spec, *, regime, k, group, **options):
        m = spec.membership
        if m is None and spec.groups is not None:
            m = membership_from_groups(spec.groups)
        arrays = (scores,)
        if positional:
            if spec.labels is None:
                raise ParameterError("labels", f"relevance labels for {fn.__name__}", None)
            arrays = (scores, spec.labels)
        elif labels:
            options = {"labels": spec.labels, **options}
        return fn(*arrays, qptr=spec.qptr, membership=m, k=k, reduce=None, **options)

    return _as_declared(by_name, fn)


def _on_judgments(fn):
    """The metric-by-name form of a measure of which documents the qrels judge
    (``judged``): only a run with its qrels knows it, so evaluating it elsewhere says so."""

    def by_name(scores, spec, *, regime, k, group, **options):
        raise ParameterError(
            "metrics",
            "a measure of the items' scores and labels",
            info_of(fn).name,
            fix="it needs the qrels: evaluate a run (gb.evaluate_run, groupbias-report evaluate)",
        )

    return _as_declared(by_name, fn)


def _declared(module) -> dict:
    """The metric functions ``module`` declares (:func:`metric_info` with a ``name``), by
    name, in the module's order."""
    found = {}
    for fn in vars(module).values():
        info = getattr(fn, "info", None)
        if isinstance(info, MetricInfo) and info.name and fn.__module__ == module.__name__:
            found[info.name] = fn
    return found


def _by_name(fn):
    needs = info_of(fn).needs
    if "judgments" in needs:
        return _on_judgments(fn)
    return _on_membership(fn) if "membership" in needs else _on_labels(fn)


#: every built-in metric by name: the one table :data:`groupbias.core.registry.METRICS`
#: starts from (NDCG, ρ(DTR), Δ(EEL) of the paper, the utility measures of a retrieval
#: run, then the related-work metrics), derived from the declarations beside the functions
BUILTIN_METRICS = {
    "ndcg": _ndcg_by_name,
    "rho_dtr": _rho_dtr_by_name,
    "delta_eel": _delta_eel_by_name,
    **{
        name: _by_name(fn)
        for module in (metrics, trec_eval, fairness)
        for name, fn in _declared(module).items()
    },
}
#: the related-work metrics among them
RELATED_WORK = tuple(name for name, fn in BUILTIN_METRICS.items() if info_of(fn).related_work)
