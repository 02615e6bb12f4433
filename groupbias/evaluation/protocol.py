"""Evaluation protocols: how a score vector is turned into NDCG, ρ(DTR) and Δ(EEL).

:class:`EvaluationProtocol` is the ``evaluation`` config group (``configs/evaluation/``):

* ``mode="deterministic"`` (default): the metrics judge the scores themselves, as
  utility estimates (tabular regime) or as the ranking they induce (LTR regime);
* ``mode="policy"``: the scores become a Plackett–Luce policy
  (:class:`groupbias.rank.plackett_luce.PlackettLuce`) — learned from them by
  :class:`groupbias.evaluation.fair_exposure.FairExposureLearner` (``learn=true``: the fair-exposure
  policy of the paper's stochastic protocol), or ``logits = scores / temperature``
  (``learn=false``: a trained ranker's scores as a policy) — and every metric uses the
  policy's expected exposure (LTR-regime metrics: ρ(DTR) and Δ(EEL) compare the expected
  group exposure with the true utility / EEL target, NDCG is the expected NDCG).

The convention options (each maps to a metric option of :mod:`groupbias.evaluation.metrics`;
``docs/metrics.md`` says which of them the paper's released evaluation code uses — the
``paper_code`` preset sets those):

``offset`` exposure ``1/log2(offset + r)`` in ρ(DTR) and Δ(EEL) (1 or 2);
``on_zero_utility`` ρ(DTR) of a query where a group has no true utility;
``eel_bins``/``eel_levels`` Δ(EEL) grades by the data's thresholds or by ``eel_levels``
per-query min–max bins (``train_levels``: the levels of the learner's target, default
``eel_levels``); ``eel_distance`` ℓ2, squared ℓ2 or ℓ1; ``top_n`` keep the top-N
candidates of each query by the evaluated scores before anything else (null: all), and
``top_n_ties`` which of the candidates tied at the cut it keeps: ``"first"`` (earliest in
the list), ``"last"`` (latest: the released code's ``argsort()[::-1]`` on short lists, where
numpy's sort is stable) or ``"argsort"`` (what numpy's ``argsort()[::-1]`` of the query's
slice keeps, the kept items in that order: the released code's cut, ties included);
``single_group`` ``"drop"`` queries whose (kept) items are all in one group (their metrics
are NaN, excluded from means and paired tests); ``on_no_relevant`` / ``on_zero_ndcg``
NDCG of queries without relevant items, and whether queries with NDCG = 0 count in the
mean; ``ties`` of deterministic rankings: ``"average"``, ``"stable"`` (by position) or
``"argsort"`` (each query ranked by numpy's ``argsort()[::-1]`` of its slice of the scores,
as the released code ranks: :func:`groupbias.rank.ranking.argsort_order`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from ..core.errors import ParameterError
from ..core.segments import query_index, segment_sum
from ..core.validation import choice, integer, real
from ..rank.plackett_luce import DEVICES, EXACT_MAX, PlackettLuce
from ..rank.ranking import TIES, DeterministicRanking, argsort_order
from ..rank.sampled import SampledRankings
from .catalog import compute_metrics, parse_metric
from .exposure import check_offset, query_minmax_grades
from .fair_exposure import OBJECTIVES, FairExposureLearner
from .metrics import BINS, EEL_DISTANCES, ON_NO_RELEVANT, ON_ZERO_NDCG, ON_ZERO_UTILITY
from .ppg import PPGLearner

__all__ = ["EvaluationProtocol", "MODES", "POLICY_KEYS", "DETERMINISTIC"]

MODES = ("deterministic", "policy")
#: settings of the Plackett–Luce policy: unused (and refused) with ``mode="deterministic"``
POLICY_KEYS = (
    "learn",
    "temperature",
    "samples",
    "exact_max",
    "seed",
    "exposure_device",
    "exposure_workers",
    "tradeoff",
    "epochs",
    "lr",
    "train_samples",
    "level",
    "init_temperature",
    "objective",
    "train_levels",
    "learner",
    "sessions",
    "patience",
)
#: the learners of ``mode="policy"``: Plackett–Luce policies, or the released code's
#: permutation graph (:mod:`groupbias.evaluation.ppg`)
LEARNERS = ("pl", "ppg")
#: settings only the Plackett–Luce learner and policy read: refused with ``learner="ppg"``
#: when they differ from their defaults
PL_ONLY = ("temperature", "samples", "exact_max", "tradeoff", "level", "init_temperature")
SINGLE_GROUP = ("keep", "drop")
#: which candidates tied at the ``top_n`` cut are kept: the earliest or the latest in the list,
#: or those numpy's ``argsort()[::-1]`` of the query keeps (in that order)
CUT_TIES = ("first", "last", "argsort")
#: ties of deterministic rankings: the metrics' own, or numpy's ``argsort()[::-1]`` per query
PROTOCOL_TIES = TIES + ("argsort",)


@dataclass
class EvaluationProtocol:
    """See the module docstring. Policy settings: ``learn``, ``temperature`` (logits =
    scores / temperature when not learning), ``samples`` (Monte-Carlo rankings per query
    for the expected exposure of lists longer than ``exact_max``), ``seed``, and the
    learner's ``tradeoff``, ``epochs``, ``lr``, ``train_samples``, ``level``,
    ``init_temperature`` (:class:`~groupbias.evaluation.fair_exposure.FairExposureLearner`) and
    ``objective``: ``"eel"``, ``"dtr"`` or ``"per_metric"`` (ρ(DTR) from a policy learned
    for DTR, every other metric from one learned for EEL: each fairness metric judges the
    policy optimized for it); ``exposure_device`` and ``exposure_workers``: where the
    Monte-Carlo expected exposure runs (``device`` and ``workers`` of
    :class:`~groupbias.rank.plackett_luce.PlackettLuce`). ``learner="ppg"``: the released
    code's permutation-graph learner instead (:class:`~groupbias.evaluation.ppg.PPGLearner`,
    with ``epochs``, ``lr``, ``train_samples`` as its samples per epoch, ``sessions`` and
    ``patience``; the ``paper_code_ppg`` preset), judged by the mean exposure of the best
    ``sessions`` rankings it found."""

    mode: str = "deterministic"
    offset: int = 1
    on_zero_utility: str = "extend"
    eel_bins: str = "thresholds"
    eel_levels: int | None = None
    train_levels: int | None = None
    eel_distance: str = "l2"
    top_n: int | None = None
    top_n_ties: str = "first"
    single_group: str = "keep"
    on_no_relevant: str = "skip"
    on_zero_ndcg: str = "keep"
    ties: str = "average"
    learn: bool = True
    temperature: float = 1.0
    samples: int = 1000
    exact_max: int = EXACT_MAX
    seed: int = 0
    exposure_device: str = "cpu"
    exposure_workers: int | None = None
    tradeoff: float = 1.0
    epochs: int = 200
    lr: float = 0.1
    train_samples: int = 32
    level: str = "item"
    init_temperature: float = 0.1
    objective: str = "eel"
    learner: str = "pl"
    sessions: int | None = None
    patience: int | None = None
    #: print how far each learned policy is (set from the run's ``progress`` key; not a
    #: key of the evaluation group)
    progress: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.mode = choice("mode", self.mode, MODES)
        self.offset = check_offset(self.offset)
        self.on_zero_utility = choice("on_zero_utility", self.on_zero_utility, ON_ZERO_UTILITY)
        self.eel_bins = choice("eel_bins", self.eel_bins, BINS)
        # one level puts every item in one grade: Δ(EEL) would be 0 whatever the scores
        if self.eel_levels is not None:
            self.eel_levels = integer("eel_levels", self.eel_levels, low=2)
        if self.train_levels is not None:
            self.train_levels = integer("train_levels", self.train_levels, low=2)
        self.eel_distance = choice("eel_distance", self.eel_distance, EEL_DISTANCES)
        if self.top_n is not None:  # one candidate per query: NDCG 1, ρ 1, Δ 0 for any scores
            self.top_n = integer(
                "top_n", self.top_n, low=2, what="an integer >= 2 (null: all candidates)"
            )
        self.top_n_ties = choice("top_n_ties", self.top_n_ties, CUT_TIES)
        self.single_group = choice("single_group", self.single_group, SINGLE_GROUP)
        self.on_no_relevant = choice("on_no_relevant", self.on_no_relevant, ON_NO_RELEVANT)
        self.on_zero_ndcg = choice("on_zero_ndcg", self.on_zero_ndcg, ON_ZERO_NDCG)
        self.ties = choice("ties", self.ties, PROTOCOL_TIES)
        if not isinstance(self.learn, bool):
            raise ParameterError("learn", "true or false", self.learn)
        self.temperature = real("temperature", self.temperature, low=0.0, low_open=True)
        self.samples = integer("samples", self.samples, low=1)
        self.exact_max = integer("exact_max", self.exact_max, low=0, high=8)
        self.seed = integer("seed", self.seed, low=0)
        self.exposure_device = choice("exposure_device", self.exposure_device, DEVICES)
        if self.exposure_workers is not None:
            what = "an integer of at least 1, or null (all cores)"
            self.exposure_workers = integer(
                "exposure_workers", self.exposure_workers, low=1, what=what
            )
        self.objective = choice("objective", self.objective, OBJECTIVES + ("per_metric",))
        self.pl_learner = FairExposureLearner(
            tradeoff=self.tradeoff,
            epochs=self.epochs,
            lr=self.lr,
            samples=integer("train_samples", self.train_samples, low=2),
            level=self.level,
            init_temperature=self.init_temperature,
            seed=self.seed,
        )
        self.dtr_learner = replace_learner(self.pl_learner, objective="dtr")
        self.ppg = self._ppg_learner()

    def _ppg_learner(self) -> PPGLearner | None:
        """The permutation-graph learner of ``learner="ppg"`` (None for ``"pl"``, which
        refuses its keys ``sessions`` and ``patience``)."""
        kind = choice("learner", self.learner, LEARNERS)
        if kind == "pl":
            for key in ("sessions", "patience"):
                if getattr(self, key) is not None:
                    raise ParameterError(key, "unset: it is a setting of learner='ppg'", key)
            return None
        defaults = EvaluationProtocol.__dataclass_fields__
        for key in PL_ONLY:
            if getattr(self, key) != defaults[key].default:
                raise ParameterError(key, "unset: learner='ppg' does not read it", key)
        if not self.learn:
            raise ParameterError("learn", "true with learner='ppg' (mode=deterministic "
                                 "ranks by the scores themselves)", self.learn)  # fmt: skip
        return PPGLearner(
            epochs=self.epochs,
            lr=self.lr,
            samples=self.train_samples,
            sessions=4 if self.sessions is None else self.sessions,
            patience=10 if self.patience is None else self.patience,
            seed=self.seed,
        )

    # ------------------------------------------------------------------ metric options

    def metric_entries(self, metrics, regime: str) -> list:
        """``metrics`` with this protocol's options added to ``ndcg``, ``rho_dtr`` and
        ``delta_eel`` (only options that differ from the metric defaults, so the default
        protocol computes exactly what the bare names compute)."""
        out = []
        for entry in metrics:
            req = parse_metric(entry)
            extra = self._options(req.name, regime)
            extra = {k: v for k, v in extra.items() if k not in req.options}
            if not extra:
                out.append(entry)
                continue
            mapping = dict(entry) if not isinstance(entry, str) else {"name": entry}
            mapping.setdefault("key", req.key)
            out.append({**mapping, **extra})
        return out

    def _options(self, name: str, regime: str) -> dict:
        ltr = regime == "ltr"
        opts: dict = {}
        if name == "ndcg":
            opts = {
                "on_no_relevant": (self.on_no_relevant, "skip"),
                "on_zero_ndcg": (self.on_zero_ndcg, "keep"),
                "ties": (self.metric_ties, "average"),
            }
        elif name == "rho_dtr":
            opts = {"on_zero_utility": (self.on_zero_utility, "extend")}
            if ltr:
                opts.update(offset=(self.offset, 1), ties=(self.metric_ties, "average"))
        elif name == "delta_eel":
            opts = {
                "offset": (self.offset, 1),
                "bins": (self.eel_bins, "thresholds"),
                "levels": (self.eel_levels, None),
                "distance": (self.eel_distance, "l2"),
            }
            if ltr:
                opts["ties"] = (self.metric_ties, "average")
        return {k: v for k, (v, default) in opts.items() if v != default}

    @property
    def metric_ties(self) -> str:
        """The metrics' ``ties``: with ``ties="argsort"`` the items of every query are put in
        numpy's ``argsort()[::-1]`` order first (:meth:`evaluate`), so ties by position
        (``"stable"``) rank them in that order."""
        return "stable" if self.ties == "argsort" else self.ties

    # ------------------------------------------------------------------ evaluation

    def evaluate(self, scores, spec, *, regime: str) -> dict[str, np.ndarray]:
        """Per-query metric vectors (float64 [n_queries] each, NaN where skipped) of
        ``scores`` against ``spec`` under this protocol."""
        scores = np.asarray(scores, dtype=np.float64)
        scores, spec = self.truncate(scores, spec)
        if self.ties == "argsort":
            scores, spec = _gather(scores, spec, *argsort_order(scores, spec.qptr))
        if self.mode == "policy":
            regime = "ltr"
        spec = replace(spec, metrics=tuple(self.metric_entries(spec.metrics, regime)))
        if self.mode == "policy":
            out = self._policy_metrics(scores, spec)
        else:
            out = compute_metrics(scores, spec, regime=regime)
        if self.single_group == "drop":
            one = _single_group(spec.groups, spec.qptr)
            for v in out.values():
                v[one] = np.nan
        return out

    def truncate(self, scores: np.ndarray, spec):
        """The top ``top_n`` items of every query by ``scores``, in their original order, and
        the matching spec; unchanged without ``top_n``. Of the items tied at the cut the
        earliest in the list are kept (``top_n_ties="first"``) or the latest (``"last"``:
        the released code's ``argsort()[::-1][:top_n]`` where numpy sorts stably, which puts
        later items first among equals; its second ``argsort()[::-1]`` over the kept items,
        in that reversed order, ranks tied items earliest first again, which
        ``ties="stable"`` expresses). ``"argsort"``: the items numpy's ``argsort()[::-1]
        [:top_n]`` of each query keeps, in that order (the released code's ``cut_topk``)."""
        if self.top_n is None:
            return scores, spec
        if self.top_n_ties == "argsort":
            return _gather(scores, spec, *argsort_order(scores, spec.qptr, self.top_n))
        if self.top_n_ties == "last":  # rank every list reversed, ties by position
            q = spec.qptr
            qi = query_index(q)
            mirror = q[qi] + q[qi + 1] - 1 - np.arange(scores.size)
            ranks = DeterministicRanking(scores[mirror], q).ranks()[mirror]
        else:
            ranks = DeterministicRanking(scores, spec.qptr).ranks()
        keep = ranks <= self.top_n
        sizes = np.minimum(np.diff(spec.qptr), self.top_n)
        qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return _gather(scores, spec, keep, qptr)

    def _policy_metrics(self, scores: np.ndarray, spec) -> dict[str, np.ndarray]:
        """The metrics of the policy of ``scores``; with ``objective="per_metric"`` ρ(DTR)
        comes from the policy learned for DTR and everything else from the EEL policy."""
        split = self.learn and self.objective == "per_metric"
        names = [parse_metric(e).name for e in spec.metrics]
        dtr = [e for e, n in zip(spec.metrics, names) if n == "rho_dtr"] if split else []
        rest = [e for e, n in zip(spec.metrics, names) if not (split and n == "rho_dtr")]
        out: dict[str, np.ndarray] = {}
        for entries, objective in ((rest, "eel"), (dtr, "dtr")):
            if entries:
                pol = self.policy(scores, spec, objective if split else self.objective)
                sub = replace(spec, metrics=tuple(entries))
                out.update(compute_metrics(pol, sub, regime="ltr"))
                del pol  # its exposures are not needed while the next policy trains
        return {parse_metric(e).key: out[parse_metric(e).key] for e in spec.metrics}

    def policy(
        self, scores: np.ndarray, spec, objective: str | None = None
    ) -> PlackettLuce | SampledRankings:
        """The PL policy of ``scores``: learned (``learn``) for ``objective`` (``"eel"``:
        against the EEL grades of the scores under this protocol's binning; ``"dtr"``:
        exposure proportional to the scores' group utilities; default this protocol's),
        or ``scores / temperature``; with ``learner="ppg"`` the best rankings of the
        permutation-graph learner for ``objective``."""
        opts: dict = {
            "samples": self.samples,
            "exact_max": self.exact_max,
            "seed": self.seed,
            "device": self.exposure_device,
            "workers": self.exposure_workers,
        }
        if not self.learn:
            try:
                return PlackettLuce(scores / self.temperature, spec.qptr, **opts)
            except ParameterError as exc:  # logits too spread: the temperature made them so
                raise ParameterError(
                    "evaluation.temperature", exc.expected, self.temperature, exc.fix
                ) from None
        objective = self.objective if objective in (None, "per_metric") else objective
        unit = "query" if self.ppg is not None else "epoch"  # PPG learns query by query
        n = spec.qptr.size - 1
        progress = PolicyProgress(objective, n, unit) if self.progress else None
        if self.ppg is not None:
            return self.ppg.fit(
                scores,
                self.grades(scores, spec),
                qptr=spec.qptr,
                groups=spec.groups,
                objective="eel" if objective == "per_metric" else objective,
                offset=self.offset,
                progress=progress,
            )
        learner = self.pl_learner if objective == "eel" else self.dtr_learner
        return learner.fit(
            scores,
            self.grades(scores, spec),
            qptr=spec.qptr,
            groups=spec.groups,
            offset=self.offset,
            progress=progress,
            **opts,
        )

    def grades(self, scores: np.ndarray, spec) -> np.ndarray:
        """EEL grades of ``scores`` for the learner's target: per-query min–max bins
        (``train_levels`` levels, default ``eel_levels``) or the spec's thresholds."""
        if self.eel_bins == "query_minmax":
            q = spec.qptr
            levels = self.train_levels or self.eel_levels or 2
            return query_minmax_grades(scores, q, query_index(q), levels)
        t = np.asarray(spec.thresholds, dtype=np.float64)
        return np.searchsorted(t, scores, side="right").astype(np.float64)


class PolicyProgress:
    """Prints how far a policy's learning is: a line at each quarter of its epochs (or, for
    a learner that goes query by query, ``unit="query"``, of its queries), with the time so
    far (``[groupbias] policy (eel, 200 queries): epoch 100/200, 21.3 s``)."""

    def __init__(self, objective: str, n_queries: int, unit: str = "epoch") -> None:
        self.what = f"policy ({objective}, {n_queries} queries)"
        self.unit = unit
        self.start = time.perf_counter()

    def __call__(self, epoch: int, epochs: int) -> None:
        if epoch * 4 // epochs != (epoch - 1) * 4 // epochs:
            took = time.perf_counter() - self.start
            line = f"[groupbias] {self.what}: {self.unit} {epoch}/{epochs}, {took:.1f} s"
            print(line, flush=True)


def _gather(scores: np.ndarray, spec, index: np.ndarray, qptr: np.ndarray):
    """``scores`` and the spec's item arrays at ``index`` (indices or a mask; the items of the
    queries ``qptr``)."""
    member = None if spec.membership is None else spec.membership[index]
    spec = replace(
        spec,
        labels=spec.labels[index],
        relevance=spec.relevance[index],
        groups=spec.groups[index],
        qptr=qptr,
        membership=member,
    )
    return scores[index], spec


def _single_group(groups: np.ndarray, qptr: np.ndarray) -> np.ndarray:
    """Queries whose items are all in one group (crisp memberships): bool [n_queries]."""
    na = segment_sum(groups, qptr)
    n = np.diff(qptr)
    return (na == 0) | (na == n)


def replace_learner(learner: FairExposureLearner, **changes) -> FairExposureLearner:
    """A learner with the settings of ``learner`` and ``changes``."""
    keys = ("tradeoff", "epochs", "lr", "samples", "level", "init_temperature", "seed")
    return FairExposureLearner(**{k: getattr(learner, k) for k in keys}, **changes)


#: the default protocol: the metrics judge the scores themselves, with their default options
DETERMINISTIC = EvaluationProtocol()
