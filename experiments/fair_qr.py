"""FAIR-QR against BM25, BM25+RM3, MMR and FA*IR (seed 004, Chen & Fang: Table 1).

Per dataset (TREC Fair 2019 / 2020 as text with groups H / L, Grep-BiasIR with the human
gender labels M / F / N): BM25, BM25+RM3, MMR, FA*IR, FAIR-QR with the offline log-odds
refiner before and after its BM25 re-ranking, and FAIR-QR with the LLM refiner when ``llm``
names an endpoint. Columns as the paper's Table 1: nDCG@20, AWRF@20 (JS divergence to the
group share among the relevant documents, log attention) and nDCG@20 × AWRF@20, with paired
t-tests of FAIR-QR against every other system. The refined keywords of every query and
iteration, and every run as a TREC run file, are saved in the run folder.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from groupbias.app.setup import Setup
from groupbias.core.errors import ConfigError
from groupbias.core.io import write_json_atomic
from groupbias.data.datasets import DatasetSpec
from groupbias.pipelines.retrieval import RunJudge, run_records
from groupbias.retrieval.expansion import RM3
from groupbias.retrieval.fair_qr import FairQR, LLMRefiner, LogOddsRefiner, target_distribution

from .retrieval_common import SystemsExperiment, baseline_runs, groups_of, save_runs, show

#: seed 004's Table 1 columns
METRICS = (
    "ndcg@20",
    {"name": "awrf", "key": "awrf@20", "k": 20, "target": "relevant"},
    {"name": "ndcg_awrf", "key": "ndcg×awrf@20", "k": 20, "target": "relevant"},
)
COLUMNS = ("ndcg@20", "awrf@20", "ndcg×awrf@20")


def same_queries(values: dict) -> dict:
    """The three columns over the same queries: those where nDCG and AWRF are both defined
    (AWRF is undefined without a relevant document of a known group), so that the mean of
    nDCG × AWRF is comparable with the means of its factors."""
    import numpy as np

    undefined = np.isnan(values["ndcg@20"]) | np.isnan(values["awrf@20"])
    return {key: np.where(undefined, np.nan, v) for key, v in values.items()}


@dataclass
class FairQRExperiment(SystemsExperiment):
    """``experiment=fair_qr`` (module docstring); the settings of
    :class:`~experiments.retrieval_common.SystemsExperiment` (BM25 with Elasticsearch's
    k1 = 1.2, b = 0.75 as the paper; ``llm``: an endpoint for the LLM refiner, temperature
    0.3)."""

    name: str = "fair_qr"
    datasets: list = field(
        default_factory=lambda: ["trec2019_text", "trec2020_text", "grep_biasir"]
    )
    bm25: dict = field(default_factory=lambda: {"k1": 1.2, "b": 0.75})

    def __post_init__(self) -> None:
        extra = self.check_systems()
        if extra:
            raise ConfigError(f"experiment.llm.{sorted(extra)[0]}", "unknown key")

    def run(self, setup: Setup, run_dir) -> dict:
        records, skipped, details = [], [], {}
        for spec, c in self.collections(setup, skipped):
            res = run_dir.step(
                f"fair_qr_{spec.name}",
                lambda c=c, spec=spec: self._dataset(c, spec, run_dir),
                key={"dataset": repr(spec)},
            )
            records += res["records"]
            details[spec.label] = res["summary"]
        return {"records": records, "skipped": skipped, "details": details}

    def _dataset(self, c, spec: DatasetSpec, run_dir) -> dict:
        label, classes, neutral = groups_of(spec.name, c)
        judge = RunJudge(c, label, classes, neutral, k=20)
        index = self.settings.index(c)
        m = c.membership(label, classes)
        target = target_distribution(c.qrels, m)
        first = self.settings.first_run(index, c)
        runs = baseline_runs(
            index, c, first, m, target, self.base, RM3(), top_k=self.loop.top_k,
            depth=self.settings.depth,
        )  # fmt: skip
        refiners = {"fair_qr": LogOddsRefiner(**self.refiner)}
        if self.endpoint is not None:
            ep = self.endpoint
            if "temperature" not in (self.llm or {}):
                ep = dataclasses.replace(ep, temperature=0.3)  # the paper's setting
            refiners["fair_qr_llm"] = LLMRefiner(ep)
        keywords, summary = {}, {}
        for name, refiner in refiners.items():
            for rerank in (False, True):
                loop = FairQR(**{**self.fair_qr, "rerank": rerank})
                out = loop.run(index, c.queries, m, target, refiner, group_names=classes)
                if isinstance(refiner, LLMRefiner):
                    refiner.check()  # too many answers that do not parse: nothing stored
                system = name if rerank else f"{name} [no re-rank]"
                runs[system] = out.run
            keywords[name] = {
                str(q): {"keywords": kw, "kl": kl}
                for q, kw, kl in zip(c.query_ids, out.keywords, out.kl)
            }
            summary[name] = {
                "mean_iterations": float(out.iterations.mean()),
                "queries_refined": int((out.iterations > 0).sum()),
                "queries_without_target": out.no_target,
                **(
                    {"unparsed": refiner.unparsed, "failed": refiner.failed}
                    if isinstance(refiner, LLMRefiner)
                    else {}
                ),
            }
        folder = Path(run_dir.path) / spec.name
        write_json_atomic(folder / "refined_keywords.json", keywords)
        summary["run_files"] = save_runs(folder, c, runs)
        per_query = {s: same_queries(judge.per_query(r, METRICS)) for s, r in runs.items()}
        base = {"dataset": spec.label, "groups": "/".join(classes)}
        return {
            "records": run_records(per_query, base=base, against="bm25", focus="fair_qr"),
            "summary": summary,
        }

    def present(self, setup: Setup, metrics: dict, run_dir: Path) -> None:
        import numpy as np
        import pandas as pd

        recs = metrics["records"]
        for dataset in dict.fromkeys(r["dataset"] for r in recs):
            cell = {(r["condition"], r["metric"]): r for r in recs if r["dataset"] == dataset}
            systems = list(dict.fromkeys(r["condition"] for r in recs if r["dataset"] == dataset))
            rows = {}
            for s in systems:
                row = []
                for m in COLUMNS:
                    v = cell[(s, m)]["value"]
                    p = cell[("fair_qr", m)].get(f"p_vs_{s}")
                    mark = "*" if p is not None and np.isfinite(p) and p < self.alpha else ""
                    row.append("–" if v is None or not np.isfinite(v) else f"{v:.4f}{mark}")
                rows[s] = row
            table = pd.DataFrame.from_dict(rows, orient="index", columns=list(COLUMNS))
            table.index.name = "system"
            info = metrics["details"].get(dataset, {}).get("fair_qr", {})
            n_queries = cell[("bm25", "ndcg@20")].get("n_queries")
            show(
                table,
                run_dir,
                "fair_qr_" + "".join(ch if ch.isalnum() else "_" for ch in dataset),
                f"FAIR-QR on {dataset} (seed 004, Table 1 layout)",
                note=f"* FAIR-QR differs from this system (paired t-test, p < {self.alpha:g}). "
                f"Every column over the {n_queries} queries where nDCG and AWRF are both "
                "defined. "
                f"Offline refiner: {info.get('queries_refined')} queries refined, "
                f"{info.get('mean_iterations', float('nan')):.2f} iterations on average; "
                "keywords in <dataset>/refined_keywords.json, runs in <dataset>/runs/.",
            )
        for s in metrics.get("skipped", []):
            print(f"[groupbias] {s}")
