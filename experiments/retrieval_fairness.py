"""The bias of retrieval runs (seeds 000, 002, 003, 004): every system × the related-work
metrics, on lexicon, human or LLM document labels.

Systems: BM25, BM25+RM3, bias-aware PRF (seed 003; λ and Bias(d) from ``prf``), MMR, FA*IR,
FAIR-QR with the offline refiner (and with the LLM refiner when ``llm`` names an endpoint).
Metrics at cutoff 10: MRR@10 and nDCG@10 (utility), AWRF@10 (the dataset's groups, target
the group share among relevant documents), NFaiRR@10 (lexicon counts, ω with ``tau``; IFaiRR over
the query's retrieved list),
TExFAIR@10 (term exposure of the lexicon's words, with RBDF), ARaB@10 (tf and boolean), and
for every gender labelling of ``labels`` (``human``: the collection's own gender labels,
``lexicon``: the word list's majority, ``llm``: an LLM's zero-shot labels) CWEx@10 with
α = 0.2, 0.5, 0.7 and ΔExposure (seed 002, Table 7). Paired t-tests against BM25. Every run
is written as a TREC run file and read back before it is evaluated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from groupbias.app.setup import Setup
from groupbias.core.errors import ConfigError
from groupbias.core.validation import integer, real
from groupbias.data.datasets import DatasetSpec
from groupbias.pipelines.retrieval import RunJudge, run_records
from groupbias.retrieval.expansion import RM3, debiased_feedback
from groupbias.retrieval.fair_qr import LogOddsRefiner, target_distribution
from groupbias.retrieval.labels import GENDER_CLASSES, LexiconLabeller, LLMLabeller, lexicon_bias

from .retrieval_common import (
    SystemsExperiment,
    baseline_runs,
    check_names,
    check_wordlist,
    groups_of,
    metric_table,
    read_run_file,
    save_runs,
    show,
    wordlist,
)

#: on the dataset's groups and the lexicon
METRICS = (
    "mrr@10",
    "ndcg@10",
    {"name": "awrf", "key": "awrf@10", "k": 10, "target": "relevant"},
    {
        "name": "nfairr",
        "key": "nfairr@10",
        "k": 10,
        "tau": 1.0,
        "membership": "counts",
        "background": "candidates",  # IFaiRR over the retrieved list (seed 002; top_k: the top 10)
    },
    {"name": "texfair", "key": "texfair@10", "k": 10, "membership": "term_share"},
    {"name": "arab", "key": "arab_tf@10", "k": 10, "magnitude": "tf", "membership": "counts"},
    {"name": "arab", "key": "arab_bool@10", "k": 10, "magnitude": "bool", "membership": "counts"},
)
#: on a gender labelling (M / F / N)
LABEL_METRICS = (
    *(
        {"name": "cwex", "key": f"cwex({a})@10", "k": 10, "alpha": a, "membership": "gendered"}
        for a in (0.2, 0.5, 0.7)
    ),
    {"name": "delta_exposure", "key": "Δexposure@10", "k": 10, "membership": "gendered"},
)
LABEL_SOURCES = ("human", "lexicon", "llm")


@dataclass
class RetrievalFairness(SystemsExperiment):
    """``experiment=retrieval_fairness`` (module docstring): ``labels`` (gender labellings),
    ``prf`` (``lam``, ``bias``: tf | bool, ``pool``), ``wordlist``, and the settings of
    :class:`~experiments.retrieval_common.SystemsExperiment`."""

    name: str = "retrieval_fairness"
    datasets: list = field(default_factory=lambda: ["grep_biasir", "trec2020_text"])
    labels: list = field(default_factory=lambda: ["human", "lexicon"])
    prf: dict = field(default_factory=lambda: {"lam": 0.5, "bias": "tf", "pool": 100})
    wordlist: str | None = None

    def __post_init__(self) -> None:
        extra = self.check_systems()
        if extra:
            raise ConfigError(f"experiment.llm.{sorted(extra)[0]}", "unknown key")
        unknown = set(self.prf) - {"lam", "bias", "pool"}
        if unknown:
            raise ConfigError(f"experiment.prf.{sorted(unknown)[0]}", "unknown key")
        real("prf.lam", self.prf.get("lam", 0.5), low=0.0, high=1.0)
        integer("prf.pool", self.prf.get("pool", 100), low=10)
        if self.prf.get("bias", "tf") not in ("tf", "bool"):
            raise ConfigError("experiment.prf.bias", "expected tf or bool")
        check_names("experiment.labels", self.labels, LABEL_SOURCES)
        check_wordlist(self.wordlist)
        if "llm" in self.labels and self.endpoint is None:
            raise ConfigError("experiment.llm", "missing: labels includes llm")

    def run(self, setup: Setup, run_dir) -> dict:
        records, skipped = [], []
        for spec, c in self.collections(setup, skipped):
            records += run_dir.step(
                f"retrieval_fairness_{spec.name}",
                lambda c=c, spec=spec: self._dataset(c, spec, run_dir, setup),
                key={"dataset": repr(spec)},
            )["records"]
        return {"records": records, "skipped": skipped}

    def _runs(self, c, index, m, target, counts):
        first = self.settings.first_run(index, c)
        rm3 = RM3()
        runs = baseline_runs(
            index, c, first, m, target, self.base, rm3, top_k=self.loop.top_k,
            depth=self.settings.depth,
        )  # fmt: skip
        bias = lexicon_bias(counts, self.prf.get("bias", "tf"))
        fb = debiased_feedback(
            first, bias, self.prf.get("lam", 0.5), pool=self.prf.get("pool", 100),
            fb_docs=rm3.fb_docs,
        )  # fmt: skip
        runs["bias-aware prf"] = rm3.search(index, c.queries, fb, k=self.settings.depth)
        return runs

    def _dataset(self, c, spec: DatasetSpec, run_dir, setup: Setup) -> dict:
        label, classes, neutral = groups_of(spec.name, c)
        lex = LexiconLabeller(wordlist(self.wordlist))
        terms = lex.counts(list(c.texts))
        index = self.settings.index(c)
        m = c.membership(label, classes)
        target = target_distribution(c.qrels, m)
        runs = self._runs(c, index, m, target, terms.counts)
        out = self.loop.run(
            index, c.queries, m, target, LogOddsRefiner(**self.refiner), group_names=classes
        )
        runs["fair_qr"] = out.run
        folder = Path(run_dir.path) / spec.name
        paths = save_runs(folder, c, runs)
        # what is evaluated is what the files say
        runs = {s: read_run_file(p, c) for s, p in zip(runs, paths)}
        judge = RunJudge(c, label, classes, neutral, terms.counts, terms.lengths, k=10)
        per_query = {s: judge.per_query(r, METRICS) for s, r in runs.items()}
        for source, labels in self._labellings(c, lex, label, setup, run_dir).items():
            g = RunJudge(
                c.with_labels(**{f"gender_{source}": labels}),
                f"gender_{source}",
                GENDER_CLASSES,
                "N",
                k=10,
            )
            for s, r in runs.items():
                values = g.per_query(r, LABEL_METRICS)
                per_query[s].update({f"{k} [{source}]": v for k, v in values.items()})
        return {"records": run_records(per_query, base={"dataset": spec.label}, against="bm25")}

    def _labellings(self, c, lex, label, setup, run_dir) -> dict:
        out = {}
        for source in self.labels:
            if source == "human":
                if "gender" in c.doc_labels:
                    out["human"] = c.label("gender")
                else:
                    print(f"[groupbias] {c.name}: no human gender labels, no [human] columns")
            elif source == "lexicon":
                out["lexicon"] = lex.label(list(c.texts))
            else:
                res = run_dir.step(
                    f"llm_labels_{c.name}",
                    lambda: {
                        "labels": LLMLabeller(self.endpoint)
                        .label(list(c.texts), progress=setup.progress)
                        .labels.tolist()
                    },
                    key={"model": self.endpoint.model, "base_url": self.endpoint.base_url},
                )
                out["llm"] = np.array(res["labels"], dtype=object)
        return out

    def present(self, setup: Setup, metrics: dict, run_dir: Path) -> None:
        recs = metrics["records"]
        for dataset in dict.fromkeys(r["dataset"] for r in recs):
            mine = [r for r in recs if r["dataset"] == dataset]
            systems = list(dict.fromkeys(r["condition"] for r in mine))
            cols = list(dict.fromkeys(r["metric"] for r in mine))
            stem = "retrieval_fairness_" + "".join(ch if ch.isalnum() else "_" for ch in dataset)
            show(
                metric_table(mine, systems=systems, metrics=cols, alpha=self.alpha),
                run_dir,
                stem,
                f"The bias of runs on {dataset} (seeds 000, 002, 003, 004)",
                note=f"* paired t-test against BM25, p < {self.alpha:g}. [source]: the gender "
                "labels CWEx and ΔExposure use. Runs: <dataset>/runs/*.txt (TREC format).",
            )
        for s in metrics.get("skipped", []):
            print(f"[groupbias] {s}")
