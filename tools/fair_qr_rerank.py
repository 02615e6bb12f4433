"""How much of FAIR-QR's fairness gain its relevance re-ranking keeps, and why: TREC 2020 as
text at the settings of ``groupbias experiment=fair_qr`` (BM25 k1 = 1.2, b = 0.75; the
offline refiner), one refinement loop, then the re-ranking of its accepted retrieval with
every depth (the first ``d`` documents re-ordered, the rest below in the refined order) and
share of the refinement's BM25 score kept (``refined_weight``; 0 = seed 004's original
query). Columns: nDCG@20, AWRF@20 and the share of the AWRF gain of the refined queries
(no re-rank − BM25) that the re-ranked list keeps, over the queries of the experiment's
table (AWRF defined: a relevant document, and a retrieved one).

    python -m tools.fair_qr_rerank               # the table of docs/retrieval.md
"""

from __future__ import annotations

import numpy as np

#: (re-rank depth, refined_weight) of every variant; (20, 0) is the default (seed 004)
VARIANTS = ((20, 0.0), (30, 0.0), (50, 0.0), (100, 0.0), (20, 0.5), (100, 0.5))
HEADER = ["system", "re-rank depth", "refined weight", "nDCG@20", "AWRF@20", "AWRF gain kept"]


def _experiment(dataset: str):
    """``(settings, collection)`` of ``groupbias experiment=fair_qr dataset=<dataset>``."""
    from hydra import compose, initialize_config_dir

    from groupbias.app.cli import CONFIG_DIR
    from groupbias.app.config import build_setup

    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=["experiment=fair_qr", f"dataset={dataset}"])
    setup, experiment = build_setup(cfg, data_from_command_line=True)
    return experiment, next(iter(setup.dataset.load().values()))


def measure(dataset: str = "trec2020_text") -> dict:
    """The rows of the table (``rows``), the overlap of the refined retrieval with BM25's top
    ``top_k`` (``pool``) and the query counts (``queries``)."""
    import dataclasses

    from experiments.fair_qr import METRICS, same_queries
    from experiments.retrieval_common import groups_of
    from groupbias.pipelines.retrieval import RunJudge
    from groupbias.retrieval.fair_qr import LogOddsRefiner, rerank, target_distribution

    exp, c = _experiment(dataset)
    label, classes, neutral = groups_of(dataset, c)
    judge = RunJudge(c, label, classes, neutral, k=20)
    index = exp.settings.index(c)
    m = c.membership(label, classes)
    target = target_distribution(c.qrels, m)
    first = index.search(c.queries, k=exp.settings.depth, on_empty="skip", tag="bm25")
    loop = dataclasses.replace(exp.loop, rerank=False)
    out = loop.run(index, c.queries, m, target, LogOddsRefiner(**exp.refiner), group_names=classes)

    def means(run) -> tuple[float, float, int]:
        v = same_queries(judge.per_query(run, METRICS))
        return (
            float(np.nanmean(v["ndcg@20"])),
            float(np.nanmean(v["awrf@20"])),
            int((~np.isnan(v["awrf@20"])).sum()),
        )

    base, refined = means(first), means(out.refined)
    gain = refined[1] - base[1]
    rows = [("BM25", None, None, *base), ("FAIR-QR [no re-rank]", None, None, *refined)]
    for depth, weight in VARIANTS:
        run = rerank(index, c.queries, out.refined, out.added, depth=depth, refined_weight=weight)
        rows.append(("FAIR-QR", depth, weight, *means(run)))
    return {
        "rows": [(*r, (r[4] - base[1]) / gain) for r in rows],
        "pool": _overlap(first, out.refined, np.flatnonzero(out.iterations > 0), loop.top_k),
        "queries": (base[2], c.n_queries, int((np.diff(first.qptr) == 0).sum())),
        "depth": loop.depth,
    }


def _overlap(first, refined, queries: np.ndarray, k: int) -> tuple[int, float, float]:
    """Over the refined ``queries``: how many, and the mean share of BM25's top ``k`` that
    the refined retrieval holds in all its documents and in its own top ``k``."""
    top, rtop = first.top(k), refined.top(k)
    tq, rq, aq = top.query_index(), rtop.query_index(), refined.query_index()
    deep, head = [], []
    for q in queries:
        a = set(top.docs[tq == q].tolist())
        deep.append(len(a & set(refined.docs[aq == q].tolist())) / max(len(a), 1))
        head.append(len(a & set(rtop.docs[rq == q].tolist())) / max(len(a), 1))
    return int(queries.size), float(np.mean(deep)), float(np.mean(head))


def table(result: dict) -> str:
    """The markdown of docs/retrieval.md: the rows, then the overlap and the query counts."""
    from experiments.common import markdown

    rows = []
    for system, depth, weight, ndcg, awrf, _, kept in result["rows"]:
        rows.append(
            [
                system,
                "–" if depth is None else str(depth),
                "–" if weight is None else f"{weight:g}",
                f"{ndcg:.4f}",
                f"{awrf:.4f}",
                "–" if depth is None and system == "BM25" else f"{100 * kept:.0f} %",
            ]
        )
    n, deep, head = result["pool"]
    used, total, empty = result["queries"]
    return (
        markdown(HEADER, rows)
        + f"\n\n{n} queries refined; their refined retrieval ({result['depth']} documents) holds "
        f"{100 * deep:.1f} % of BM25's top 20, its top 20 {100 * head:.1f} %. Means over "
        f"{used} of {total} queries ({empty} retrieve nothing: AWRF undefined)."
    )


def main() -> None:
    print(table(measure()))


if __name__ == "__main__":
    main()
