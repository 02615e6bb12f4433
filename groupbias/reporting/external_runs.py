"""Bias measures of an external TREC run on the memberships the seed papers define them
with: three-class labels (``M`` / ``F`` / ``N``) and a gender word list.

``groupbias-report evaluate`` reads a group file of memberships or of two labels (with
``--affected``); the related-work bias measures (NFaiRR, TExFAIR, ARaB, CWEx, ...) then see
each document as entirely one group's, where NFaiRR is undefined (no neutral document) and
ARaB is a signed group count. :func:`evaluate_external` also takes

- ``classes`` (``--classes M,F``): the group file holds labels; each listed class is a
  group, every other label (``N``, ``unknown``) a row of zeros, i.e. *neutral* for NFaiRR and
  CWEx and *non-representative* for TExFAIR (``docs/fairness_metrics.md``); ρ(DTR), Δ(EEL)
  and the utility metrics take ``affected`` (default the first class) as the affected group;
- ``words`` and ``corpus`` (``--words wordlist.txt --corpus collection.tsv``): the male and
  female term counts of every ranked document (:class:`~groupbias.retrieval.labels.
  LexiconLabeller` over the document's text), and the measures of
  :data:`~groupbias.pipelines.retrieval.LEXICON_METRICS` on them as
  ``experiment=retrieval_fairness`` computes them (NFaiRR on counts with τ = 1, TExFAIR on
  term shares, ARaB on counts; :func:`~groupbias.pipelines.retrieval.lexicon_membership`).

A measure that is undefined on every judged query is refused with the reason
(:class:`UndefinedMeasureError`), never printed as ``nan``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..core.errors import DataFormatError, GroupBiasError, ParameterError
from ..data.trec import TrecRun, read_groups, read_qrels, read_run
from ..evaluation.catalog import EvalSpec, compute_metrics, declaration_of, parse_metric
from ..evaluation.evaluate import evaluate_run, run_data, run_queries
from ..evaluation.trec_eval import first_documents
from ..pipelines.retrieval import LEXICON_METRICS, lexicon_membership

__all__ = ["UndefinedMeasureError", "evaluate_external", "refuse_undefined"]

#: what to try instead
MEMBERSHIP_HINT = (
    "for the seed papers' definitions give three-class labels (--classes M,F: N is neutral) "
    "or a word list (--words wordlist.txt --corpus collection.tsv)"
)


class UndefinedMeasureError(GroupBiasError):
    """A measure has no value on any query of a run: the mean would be NaN."""


def refuse_undefined(per_query: dict, source: str) -> None:
    """:class:`UndefinedMeasureError` for the first measure of ``per_query`` (``{key:
    float64 [n_queries]}``) without a defined query, naming why."""
    for key, values in per_query.items():
        v = np.asarray(values, dtype=np.float64)
        if v.size and np.isnan(v).all():
            info = declaration_of(parse_metric(key).name)
            hint = f"; {MEMBERSHIP_HINT}" if info.related_work else ""
            raise UndefinedMeasureError(
                f"{key} of {source}: undefined on all {v.size} judged queries: "
                f"{info.undefined}{hint}"
            )
        if not v.size:
            raise UndefinedMeasureError(f"{key} of {source}: the qrels judge none of its queries")


def _lexicon_rows(words, corpus, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Term counts [n_items, 2] (M, F) and lengths [n_items] of the documents ``items``."""
    import pandas as pd

    from ..data.text import read_collection_jsonl, read_collection_tsv
    from ..retrieval.labels import LexiconLabeller, load_gender_wordlist

    path = Path(corpus)
    reader = read_collection_jsonl if path.suffix in (".jsonl", ".json") else read_collection_tsv
    doc_ids, texts = reader(path)
    at = pd.Index(doc_ids).get_indexer(np.asarray(items).astype(str))
    if (at < 0).any():
        missing = np.asarray(items)[at < 0]
        raise DataFormatError(
            path, None, f"no text for document {missing[0]!r} of the run ({missing.size} lack one)"
        )
    terms = LexiconLabeller(load_gender_wordlist(words)).counts([texts[i] for i in at])
    return terms.counts, np.asarray(terms.lengths)


def _plan(metrics, requests, *, lexicon: bool, classes) -> dict[str, list]:
    """The metric entries by membership source: ``"run"`` (evaluated as any run),
    ``"classes"``, or a lexicon source (``"counts"``, ``"term_share"``)."""
    plan: dict[str, list] = {}
    for given, r in zip(metrics, requests, strict=True):
        if lexicon and r.name in LEXICON_METRICS:
            options = dict(LEXICON_METRICS[r.name])
            source = options.pop("membership")
            entry: object = {"name": r.name, "key": r.key, "k": r.k, **options, **r.options}
        elif classes and declaration_of(r.name).related_work:
            source, entry = "classes", given
        else:
            source, entry = "run", given
        plan.setdefault(source, []).append(entry)
    return plan


def _by_membership(plan, data, scores, groups, classes, words, corpus) -> dict:
    """Per-query values of the entries of ``plan`` whose memberships are the run's classes
    or lexicon counts (:func:`_plan`), on the run's candidates ``data``."""
    qids = np.repeat(data.query_ids, np.diff(data.qptr))
    if words is not None:
        counts, lengths = _lexicon_rows(words, corpus, data.item_ids)
    per_query: dict[str, np.ndarray] = {}
    for source, entries in plan.items():
        if source == "classes":
            m = np.column_stack(
                [read_groups(groups, affected=c).lookup(qids, data.item_ids) for c in classes]
            )
        else:
            m = lexicon_membership(source, counts, lengths)
        spec = EvalSpec(
            labels=data.labels, relevance=None, groups=data.groups, qptr=data.qptr,
            membership=m, metrics=tuple(entries),
        )  # fmt: skip
        per_query.update(compute_metrics(scores, spec, regime="ltr"))
    return per_query


def evaluate_external(
    run,
    qrels,
    groups,
    *,
    metrics: Sequence,
    affected: str | None = None,
    classes: Sequence[str] | None = None,
    words=None,
    corpus=None,
    semantics: str = "trec_eval",
    complete: bool = False,
    relevance_level: int = 1,
    max_docs: int | None = None,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``(query ids, {metric key: float64 [n_queries]})`` of a run on its judged queries
    (module docstring); ``words`` and ``corpus`` go together; ``complete``,
    ``relevance_level`` and ``max_docs``: ``trec_eval``'s ``-c``, ``-l`` and ``-M``
    (:func:`~groupbias.evaluation.evaluate.evaluate_run`: a query the run lacks scores 0 on
    the ``trec_eval`` measures, NaN on the others); ``groups`` may be None when every
    metric is a ``trec_eval`` measure."""
    if (words is None) != (corpus is None):
        raise ParameterError(
            "--words/--corpus", "both: the word list and the documents' text", words or corpus
        )
    if classes is not None and len(classes) < 2:
        raise ParameterError("--classes", "at least two group labels (e.g. M,F)", classes)
    run = first_documents(run if isinstance(run, TrecRun) else read_run(run), max_docs)
    qrels = read_qrels(qrels)
    requests = [parse_metric(m) for m in metrics]
    affected = affected or (classes[0] if classes else None)
    plan = _plan(metrics, requests, lexicon=words is not None, classes=classes)
    per_query: dict[str, np.ndarray] = {}
    if "run" in plan:
        per_query.update(
            evaluate_run(run, qrels, groups, metrics=plan.pop("run"), affected=affected,
                         reduce=None, semantics=semantics, complete=complete,
                         relevance_level=relevance_level)
        )  # fmt: skip
    queries = run_queries(run, qrels, complete=complete)
    if plan:
        data, scores = run_data(run, qrels, groups, affected=affected)
        unranked = np.full(queries.size - data.n_queries, np.nan)
        found = _by_membership(plan, data, scores, groups, classes or (), words, corpus)
        per_query.update({k: np.concatenate([v, unranked]) for k, v in found.items()})
    return queries, {r.key: per_query[r.key] for r in requests}
