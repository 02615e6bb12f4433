"""Bias-aware pseudo-relevance feedback (seed 003, Bigdeli et al. 2021: Eq. 1–4, Fig. 1,
Tables 1–2).

BM25 retrieves; for every λ of ``lambdas`` and every Bias(d) of ``biases`` (lexicon ``tf`` /
``bool`` magnitudes, the collection's document ``label`` — non-neutral = 1 — or ``llm``
labels), the top ``pool`` documents are re-ranked by (1 − λ) Rel(d) − λ Bias(d), RM3 expands
the query from the first ``fb_docs`` of that order, and the expanded query retrieves again.
Per λ: utility (MAP@10, nDCG@10) and ARaB@10 (tf, boolean; signed, and its magnitude) with
paired t-tests against λ = 0, and the number / summed weight of biased expansion terms
(Table 2). λ = 0 is plain RM3: the experiment checks that its run equals RM3's exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from groupbias.app.setup import Setup
from groupbias.core.errors import ConfigError
from groupbias.core.validation import integer, is_real, real
from groupbias.pipelines.retrieval import RunJudge, run_records
from groupbias.retrieval.expansion import RM3, debiased_feedback, expansion_terms
from groupbias.retrieval.labels import LLMLabeller, lexicon_bias

from .common import check_common
from .retrieval_common import (
    BM25Settings,
    check_names,
    check_wordlist,
    endpoint,
    groups_of,
    lexicon,
    metric_table,
    settings_of,
    show,
    text_collection,
    wordlist,
)

BIASES = ("tf", "bool", "label", "llm")
#: utility and bias of every λ: MAP@10, nDCG@10, ARaB@10 with tf and boolean magnitudes
METRICS = (
    "map@10",
    "ndcg@10",
    {"name": "arab", "key": "arab_tf@10", "k": 10, "magnitude": "tf", "membership": "counts"},
    {"name": "arab", "key": "arab_bool@10", "k": 10, "magnitude": "bool", "membership": "counts"},
)


def _with_magnitudes(values: dict) -> dict:
    """The per-query values with |ARaB| beside the signed ARaB (male − female)."""
    for key in ("arab_tf@10", "arab_bool@10"):
        values[f"|{key}|"] = np.abs(values[key])
    return values


@dataclass
class BiasAwarePRF:
    """``experiment=bias_aware_prf`` (module docstring): ``bm25`` (k1, b, stopwords,
    stemmer, depth), ``rm3`` (fb_terms, fb_docs, original_query_weight, doc_weight,
    term_selection), ``pool``, ``lambdas``, ``biases``, ``wordlist``, ``llm`` (for
    ``biases: [llm]``: an endpoint and ``prompt``), ``alpha`` of the markers."""

    trains_ranker = False

    name: str = "bias_aware_prf"
    bm25: dict = field(default_factory=dict)
    rm3: dict = field(default_factory=dict)
    pool: int = 100
    lambdas: list = field(default_factory=lambda: [round(0.1 * i, 1) for i in range(11)])
    biases: list = field(default_factory=lambda: ["tf", "bool"])
    wordlist: str | None = None
    llm: dict | None = None
    alpha: float = 0.05

    def __post_init__(self) -> None:
        check_common(self)
        self.settings = BM25Settings.of(self.bm25)
        self.expander = settings_of(RM3, self.rm3, "experiment.rm3")
        integer("pool", self.pool, low=self.expander.fb_docs)
        lams = self.lambdas
        if not isinstance(lams, (list, tuple)) or not all(is_real(x) for x in lams):
            raise ConfigError("experiment.lambdas", f"expected a list of numbers, got {lams!r}")
        if 0 not in lams:
            raise ConfigError("experiment.lambdas", "must include 0 (plain RM3, the reference)")
        for lam in lams:
            real("lambdas", lam, low=0.0, high=1.0)
        check_names("experiment.biases", self.biases, BIASES)
        check_wordlist(self.wordlist)
        self.endpoint, extra = endpoint(self.llm)
        self.prompt = extra.pop("prompt", "zero_shot")
        if extra:
            raise ConfigError(f"experiment.llm.{sorted(extra)[0]}", "unknown key")
        if "llm" in self.biases and self.endpoint is None:
            raise ConfigError("experiment.llm", "missing: biases includes llm")

    def run(self, setup: Setup, run_dir) -> dict:
        c = text_collection(setup)
        label, classes, neutral = groups_of(setup.dataset.name, c)
        terms = lexicon(c, self.wordlist)
        judge = RunJudge(c, label, classes, neutral, terms.counts, terms.lengths, k=10)
        index = self.settings.index(c)
        first = self.settings.first_run(index, c)
        plain = self.expander.search(index, c.queries, first, k=self.settings.depth)
        words = [w for ws in wordlist(self.wordlist).values() for w in ws]
        records, expansions, equal = [], {}, {}
        for source in self.biases:
            bias = self._bias(source, c, terms.counts, run_dir, setup)
            per_query = {"bm25": _with_magnitudes(judge.per_query(first, METRICS))}
            for lam in self.lambdas:
                fb = debiased_feedback(
                    first, bias, lam, pool=self.pool, fb_docs=self.expander.fb_docs
                )
                run = self.expander.search(index, c.queries, fb, k=self.settings.depth)
                if lam == 0:
                    equal[source] = bool(
                        np.array_equal(run.docs, plain.docs)
                        and np.array_equal(run.scores, plain.scores)
                    )
                values = _with_magnitudes(judge.per_query(run, METRICS))
                et = expansion_terms(index, c.queries, run.meta["expanded"], words)
                values["n_biased_terms"] = et["n_biased"]
                values["weight_biased_terms"] = et["weight_biased"]
                per_query[f"λ={lam:g}"] = values
                expansions[f"{source}/λ={lam:g}"] = dict(zip(c.query_ids.tolist(), et["terms"]))
            records += run_records(
                per_query, base={"dataset": setup.dataset.label, "bias": source}, against="λ=0"
            )
        run_dir.step(
            "expansions", lambda: {"expansions": expansions}, label="expansion terms saved"
        )
        empty = len(first.meta["empty_queries"])
        return {"records": records, "lambda0_equals_rm3": equal, "empty_queries": empty}

    def _bias(self, source, c, counts, run_dir, setup) -> np.ndarray:
        if source in ("tf", "bool"):
            return lexicon_bias(counts, source)
        if source == "label":
            if "gender" not in c.doc_labels:
                raise ConfigError(
                    "experiment.biases",
                    f"'label' needs human gender labels, which {c.name!r} has not",
                    hint="use tf, bool or llm",
                )
            lab = c.label("gender")
            return np.isin(lab, ["M", "F"]).astype(np.float64)
        res = run_dir.step(
            f"llm_labels_{self.prompt}",
            lambda: {
                "labels": LLMLabeller(self.endpoint, self.prompt)
                .label(list(c.texts), progress=setup.progress)
                .labels.tolist()
            },
            key={"model": self.endpoint.model, "base_url": self.endpoint.base_url},
        )
        lab = np.array(res["labels"], dtype=object)
        return np.isin(lab, ["M", "F"]).astype(np.float64)

    def present(self, setup: Setup, metrics: dict, run_dir: Path) -> None:
        recs = metrics["records"]
        cols = [
            "map@10",
            "ndcg@10",
            "arab_tf@10",
            "|arab_tf@10|",
            "arab_bool@10",
            "|arab_bool@10|",
            "n_biased_terms",
            "weight_biased_terms",
        ]
        for source in self.biases:
            mine = [r for r in recs if r.get("bias") == source]
            systems = ["bm25", *(f"λ={lam:g}" for lam in self.lambdas)]
            show(
                metric_table(mine, systems=systems, metrics=cols, alpha=self.alpha),
                run_dir,
                f"bias_aware_prf_{source}",
                f"Bias-aware PRF on {setup.dataset.label}, Bias(d) = {source} "
                "(seed 003, Fig. 1 and Tables 1-2)",
                note=f"* paired t-test against λ=0 (plain RM3), p < {self.alpha:g}. "
                f"λ=0 equals plain RM3: {metrics['lambda0_equals_rm3'].get(source)}. "
                f"Queries with no term after analysis: {metrics['empty_queries']}",
            )
