"""The retrieval regime: runs over a text collection -> per-query utility and bias -> records.

:class:`RunJudge` evaluates a :class:`~groupbias.data.text.Run` of a
:class:`~groupbias.data.text.TextCollection` with the metrics of
:data:`groupbias.core.registry.METRICS` by name, each on the document-group membership it
names (option ``membership``, default ``"groups"``):

- ``"groups"``: one-hot over every class of the collection's label (``M`` / ``F`` / ``N``,
  or ``L`` / ``H``), and, when some document has no class, an ``Unknown`` column (FAIR-QR
  counts it as a subgroup);
- ``"gendered"``: one-hot over the classes other than the neutral one (CWEx's groups: a
  neutral document is a row of zeros, the neutral class);
- ``"counts"``: the lexicon's raw term counts ``M_g(d)`` (ARaB, RaB; NFaiRR with ``tau``);
- ``"term_share"``: ``M_g(d) / |d|`` (TExFAIR's term exposure).

Utility metrics (``ndcg``, ``map``, ``mrr``) and the AWRF family (whose target is the group
share among all judged relevant documents) are computed on the judged view of the run
(:meth:`TextCollection.ranking_data` with ``judged=True``: the relevant documents the run
missed count for the ideal and the target, never for the ranking: they sit below rank
``k`` with their own group rows, and a judged metric's cutoff may not exceed ``k``); the
others on the retrieved documents only.

NFaiRR's background set ``S`` (IFaiRR = the FaiRR of the best ordering of ``S``) is the
option ``background`` of an ``nfairr`` entry:

- ``"candidates"`` (default): every document the run retrieved for the query (its whole
  list, to the retrieval depth): the candidates a re-ranker could have put in the top k,
  as the official NFaiRR code normalizes (its background run file is the retrieved pool)
  and as seed 002 states it ("the highest achievable FaiRR score among the document
  candidates for each query"); ``"retrieved"`` is a documented alias;
- ``"top_k"``: the run's own top k (only the order within the top k counts);
- ``"collection"``: every document the run retrieved, for all queries (one IFaiRR).

The names are those of :func:`groupbias.evaluation.fairness.nfairr` (``BACKGROUNDS``).

:func:`run_records` turns the per-query values of several systems
into records with paired tests against a reference system (``records_for``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..core.errors import ParameterError
from ..data.text import Run, TextCollection
from ..evaluation.catalog import EvalSpec, compute_metrics, parse_metric
from ..evaluation.fairness import BACKGROUNDS, nfairr_background
from ..evaluation.stats import label_agreement
from .records import records_for

__all__ = [
    "RunJudge",
    "LEXICON_METRICS",
    "lexicon_membership",
    "MEMBERSHIPS",
    "JUDGED_VIEW",
    "NFAIRR_BACKGROUNDS",
    "run_records",
    "agreement_records",
]

MEMBERSHIPS = ("groups", "gendered", "counts", "term_share")
#: metrics computed on the judged view of a run (module docstring)
JUDGED_VIEW = ("ndcg", "map", "mrr", "awrf", "awrf_distance", "ndcg_awrf")
#: NFaiRR's background set (module docstring): the query's candidates (the whole retrieved
#: list), the top k, or every retrieved document of every query
NFAIRR_BACKGROUNDS = BACKGROUNDS


#: the lexicon membership (and options) each bias measure takes in the seed papers, as
#: ``experiment=retrieval_fairness`` computes them: NFaiRR on raw term counts with τ = 1
#: (Rekabsaz et al. 2021's reference), TExFAIR / TED / RBDF on term shares (Abolghasemi et
#: al. 2024), ARaB / RaB on term counts (Rekabsaz & Schedl 2020)
LEXICON_METRICS: dict[str, dict] = {
    "nfairr": {"membership": "counts", "tau": 1.0},
    "fairr": {"membership": "counts", "tau": 1.0},
    "texfair": {"membership": "term_share"},
    "ted": {"membership": "term_share"},
    "rbdf": {"membership": "term_share"},
    "arab": {"membership": "counts"},
    "rank_bias": {"membership": "counts"},
}


def lexicon_membership(source: str, counts, lengths) -> np.ndarray:
    """The lexicon membership ``[n_docs, n_groups]`` named ``source``: ``"counts"`` (the
    raw term counts ``M_g(d)``) or ``"term_share"`` (``M_g(d) / |d|``, 0 for an empty
    document); ``counts`` float [n_docs, n_groups] and ``lengths`` [n_docs] of a
    :class:`~groupbias.data.membership.TermMembership`."""
    if source not in MEMBERSHIPS:
        raise ParameterError("membership", "one of " + ", ".join(MEMBERSHIPS), source)
    if counts is None or lengths is None:
        raise ParameterError("membership", f"a lexicon for {source!r} (set the word list)", source)
    if source == "counts":
        return counts
    if source != "term_share":
        raise ParameterError("membership", "a lexicon membership: counts or term_share", source)
    lengths = np.asarray(lengths, dtype=np.float64)[:, None]
    return np.divide(counts, lengths, out=np.zeros_like(counts), where=lengths > 0)


@dataclass(frozen=True, eq=False)
class RunJudge:
    """Evaluates runs of ``collection``: ``label`` (a document label), its ``classes``,
    the ``neutral`` class (None: none), the lexicon ``counts`` float [n_docs, 2] and
    document ``lengths`` (None: no lexicon memberships), and the cutoff ``k``."""

    collection: TextCollection
    label: str
    classes: tuple[str, ...]
    neutral: str | None = None
    counts: np.ndarray | None = None
    lengths: np.ndarray | None = None
    k: int = 10

    def membership(self, source: str) -> np.ndarray:
        """The document-group matrix ``[n_docs, n_groups]`` of ``source`` (module
        docstring)."""
        if source == "groups":
            m = self.collection.membership(self.label, self.classes)
            unknown = m.sum(axis=1) == 0
            return np.column_stack([m, unknown]) if unknown.any() else m
        if source == "gendered":
            return self.collection.membership(
                self.label, [c for c in self.classes if c != self.neutral]
            )
        return lexicon_membership(source, self.counts, self.lengths)

    def per_query(self, run: Run, metrics: Sequence) -> dict[str, np.ndarray]:
        """``{output key: float64 [n_queries]}`` of ``metrics`` (names or mappings, with
        an optional ``membership``; ``nfairr`` also ``background``) for the top ``k`` of
        ``run`` (NFaiRR's IFaiRR over the whole retrieved list by default)."""
        views = {
            "judged": lambda: self.collection.ranking_data(run, k=self.k, judged=True),
            "top_k": lambda: self.collection.ranking_data(run, k=self.k),
            "retrieved": lambda: self.collection.ranking_data(run),
        }
        plan: dict[tuple[str, str], list] = {}
        order = []
        for entry in metrics:
            entry = dict(entry) if isinstance(entry, Mapping) else entry
            source = entry.pop("membership", "groups") if isinstance(entry, dict) else "groups"
            background = entry.pop("background", None) if isinstance(entry, dict) else None
            req = parse_metric(entry)
            view = "judged" if req.name in JUDGED_VIEW else "top_k"
            if view == "judged" and (req.k is None or req.k > self.k):
                # the judged view lists the missed relevant documents below rank k: a deeper
                # cutoff would count them as retrieved
                raise ParameterError("k", f"a cutoff of at most the judge's k={self.k}", req.key)
            if req.name == "nfairr":
                background = nfairr_background(background or "candidates")
                view = "top_k" if background == "top_k" else "retrieved"
            elif background is not None:
                raise ParameterError(
                    "background", "no background (only nfairr has one)", background
                )
            if view == "retrieved":  # FaiRR of the top k, IFaiRR over the whole list
                given = dict(entry) if isinstance(entry, dict) else dict(req.options)
                k = self.k if req.k is None else min(req.k, self.k)
                entry = {**given, "name": req.name, "key": req.key, "k": k}
                if background == "collection":
                    entry["background"] = "collection"
            plan.setdefault((view, source), []).append(entry)
            order.append(req.key)
        out: dict[str, np.ndarray] = {}
        for (view, source), entries in plan.items():
            data = views[view]()
            items = np.asarray(data.item_ids, dtype=np.int64)
            m = self.membership(source)
            rows = np.zeros((items.size, m.shape[1]))
            rows[items >= 0] = m[items[items >= 0]]
            spec = EvalSpec(
                labels=data.labels,
                relevance=None,
                groups=None,
                qptr=data.qptr,
                membership=rows,
                metrics=tuple(entries),
            )
            out.update(compute_metrics(data.features[:, 0], spec, regime="ltr"))
        return {key: out[key] for key in order}


def run_records(
    per_query: Mapping[str, Mapping[str, np.ndarray]],
    *,
    base: dict,
    against: str,
    focus: str | None = None,
) -> list[dict]:
    """Records (one per system × metric, mean over the queries where it is defined) with
    the paired t-test of every system against ``against`` (``p_value``), or, with
    ``focus``, of that system against every other (``p_vs_<system>``)."""
    return records_for(
        {s: dict(m) for s, m in per_query.items()},
        base={**base, "regime": "retrieval"},
        against=against,
        focus=focus,
    )


def agreement_records(
    truth, predicted, classes, *, base: dict, labeller: str, binary: Mapping | None = None
) -> list[dict]:
    """Records of :func:`~groupbias.evaluation.stats.label_agreement` of one labeller:
    ``accuracy``, ``kappa``, ``accuracy_<class>`` (with ``n``, the confusion matrix and the
    counts of items without a reference or a prediction). ``binary``: ``{label: class}``
    maps both label sets first (e.g. neutral / non-neutral)."""
    t, p = np.asarray(truth, dtype=object), np.asarray(predicted, dtype=object)
    if binary is not None:
        t = np.array([binary.get(x, "") for x in t], dtype=object)
        p = np.array([binary.get(x, "") for x in p], dtype=object)
    a = label_agreement(t, p, classes)
    common = {
        **base,
        "regime": "labels",
        "condition": labeller,
        "n": a["n"],
        "no_reference": a["no_reference"],
        "no_prediction": a["no_prediction"],
    }
    recs = [
        {**common, "metric": "accuracy", "value": a["accuracy"], "confusion": a["confusion"]},
        {**common, "metric": "kappa", "value": a["kappa"]},
    ]
    recs += [{**common, "metric": f"accuracy_{c}", "value": v} for c, v in a["per_class"].items()]
    return recs
