"""Document gender labels against human labels (seed 002, Tables 3–5; Table 4).

Labellers: the lexicon (the gender word list: the group with more terms, neutral on a tie)
and, when ``llm`` names an endpoint, an LLM with each of the seed's prompts. For each:
accuracy, per-class accuracy, the confusion matrix and Cohen's κ against the collection's
human labels (Grep-BiasIR ``gender``, M / F / N). Then Table 4: the NFaiRR neutrality score
ω(d) (computed on the lexicon's raw counts with each threshold ``tau`` of ``taus``) as a
binary classifier, neutral iff ω = 1, against human neutral / non-neutral.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from groupbias.app.setup import Setup
from groupbias.core.errors import ConfigError, GroupBiasWarning
from groupbias.core.validation import real
from groupbias.evaluation.fairness import neutrality
from groupbias.pipelines.retrieval import agreement_records
from groupbias.retrieval.labels import GENDER_CLASSES, GENDER_PROMPTS, LexiconLabeller, LLMLabeller
from groupbias.retrieval.llm import check_results

from .common import check_common
from .retrieval_common import check_wordlist, endpoint, text_collection, wordlist


@dataclass
class GenderLabels:
    """``experiment=gender_labels``: ``label`` (the human label), ``wordlist`` (the
    ``word,m|f`` list; null: ``$GROUPBIAS_GENDER_WORDLIST``), ``taus`` (neutrality thresholds
    of Table 4), ``llm`` (null, or an endpoint: ``base_url``, ``model``, ``api_key``,
    ``concurrency``, ``cache_dir``, ... and ``prompts``: which of zero_shot, one_shot,
    three_shot, cot)."""

    trains_ranker = False

    name: str = "gender_labels"
    label: str = "gender"
    wordlist: str | None = None
    taus: list = field(default_factory=lambda: [0.0, 1.0])
    llm: dict | None = None

    def __post_init__(self) -> None:
        check_common(self)
        if not isinstance(self.label, str) or not self.label:
            raise ConfigError("experiment.label", f"expected a document label, got {self.label!r}")
        check_wordlist(self.wordlist)
        if not isinstance(self.taus, (list, tuple)) or not self.taus:
            raise ConfigError(
                "experiment.taus", f"expected a list of thresholds, got {self.taus!r}"
            )
        for t in self.taus:
            real("taus", t, low=0.0)
        self.endpoint, extra = endpoint(self.llm)
        self.prompts = list(extra.pop("prompts", ["zero_shot"]))
        if extra:
            raise ConfigError(f"experiment.llm.{sorted(extra)[0]}", "unknown key")
        for p in self.prompts:
            if p not in GENDER_PROMPTS:
                raise ConfigError(
                    "experiment.llm.prompts", f"{p!r}: expected one of {list(GENDER_PROMPTS)}"
                )

    def run(self, setup: Setup, run_dir) -> dict:
        c = text_collection(setup)
        truth = c.label(self.label)
        base = {"dataset": setup.dataset.label}
        lex = LexiconLabeller(wordlist(self.wordlist))
        records = agreement_records(
            truth, lex.label(list(c.texts)), GENDER_CLASSES, base=base, labeller="lexicon"
        )
        counts = lex.counts(list(c.texts)).counts
        binary = {"N": "neutral", "M": "non-neutral", "F": "non-neutral"}
        for tau in self.taus:
            omega = neutrality(counts, tau=tau)
            pred = np.where(omega == 1.0, "N", "M")
            records += agreement_records(
                truth,
                pred,
                ("neutral", "non-neutral"),
                base={**base, "table": "neutrality"},
                labeller=f"neutrality (tau={tau:g})",
                binary=binary,
            )
        reports = {}
        for prompt in self.prompts if self.endpoint is not None else []:
            res = run_dir.step(
                f"llm_{prompt}",
                lambda prompt=prompt: _llm_step(self.endpoint, prompt, c, setup.progress),
                key={"model": self.endpoint.model, "base_url": self.endpoint.base_url},
            )
            reports[prompt] = res["report"]
            records += agreement_records(
                truth,
                np.array(res["labels"], dtype=object),
                GENDER_CLASSES,
                base={**base, **{f"llm_{k}": v for k, v in res["report"].items()}},
                labeller=f"{self.endpoint.model} ({prompt})",
            )
        return {"records": records, "llm": reports, "both_rows": c.meta.get("both_rows")}

    def present(self, setup: Setup, metrics: dict, run_dir: Path) -> None:
        import pandas as pd

        from .retrieval_common import show

        recs = metrics["records"]
        three = [r for r in recs if r.get("table") != "neutrality"]
        cols = ["accuracy", "kappa", *(f"accuracy_{c}" for c in GENDER_CLASSES)]
        table = _pivot(three, cols)
        show(
            table,
            run_dir,
            "gender_labels",
            "Gender labels vs human labels (seed 002, Tables 3, 5, 6)",
            note=f"{metrics.get('both_rows')} rows labelled 'both' (dataset.params.both); "
            "n: documents with a human and a predicted label",
        )
        for r in three:
            if r["metric"] == "accuracy":
                cm = pd.DataFrame(r["confusion"], index=GENDER_CLASSES, columns=GENDER_CLASSES)
                cm.index.name = "human \\ predicted"
                print(f"confusion matrix, {r['condition']}:\n{cm.to_string()}\n")
        binary = [r for r in recs if r.get("table") == "neutrality"]
        show(
            _pivot(binary, ["accuracy", "kappa"]),
            run_dir,
            "neutrality",
            "NFaiRR neutrality score as a neutral / non-neutral classifier (seed 002, Table 4)",
        )
        for prompt, rep in metrics.get("llm", {}).items():
            print(f"[groupbias] llm {prompt}: {rep}")


def _pivot(records, cols):
    import pandas as pd

    rows = {}
    empty = sorted({r["condition"] for r in records if not r["n"]})
    if empty:  # agreement over no document is no result: named, not printed as a row
        warnings.warn(
            f"no document has both a human and a predicted label for {', '.join(empty)}: "
            "left out of the table",
            GroupBiasWarning,
            stacklevel=2,
        )
    for r in records:
        if not r["n"]:
            continue
        row = rows.setdefault(r["condition"], {"n": r["n"]})
        v = r["value"]
        row[r["metric"]] = "–" if v is None or not np.isfinite(v) else f"{v:.4f}"
    table = pd.DataFrame.from_dict(rows, orient="index").reindex(columns=["n", *cols])
    table.index.name = "labeller"
    return table


def _llm_step(ep, prompt: str, c, progress: bool) -> dict:
    res = LLMLabeller(ep, prompt).label(list(c.texts), progress=progress)
    # a failed request, or unparsed answers beyond the endpoint's share: nothing is stored,
    # and the same command asks again for what is missing
    check_results(res, ep, f"LLM gender labels ({prompt})")
    return {
        "labels": res.labels.tolist(),
        "report": res.summary(),
        "unparsed": {str(c.doc_ids[i]): a for i, a in res.unparsed.items()},
        "failed": {str(c.doc_ids[i]): a for i, a in res.failed.items()},
    }
