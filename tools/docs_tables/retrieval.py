"""The tables of docs/retrieval.md: the gender labels and their neutrality, FAIR-QR and its
re-ranking variants, and the text datasets' sizes."""

from __future__ import annotations

import os

from experiments.common import markdown

from .blocks import thousands
from .runs import Runs, trec_root


def _gender(runs: Runs) -> list[dict]:
    metrics, _ = runs.experiment("experiment=gender_labels")
    return metrics["records"]


def gender_labels(runs: Runs) -> str:
    recs = [r for r in _gender(runs) if r.get("table") != "neutrality"]
    lex = {r["metric"]: r for r in recs if r["condition"] == "lexicon"}
    cols = ("accuracy", "kappa", "accuracy_M", "accuracy_F", "accuracy_N")
    rows = [["lexicon", str(lex["accuracy"]["n"]), *(f"{lex[c]['value']:.4f}" for c in cols)]]
    rows += [  # the paper's (seed 002) numbers beside
        ["seed 002, GPT-4o zero-shot / CoT", "–", "0.8895 / 0.9053", "0.8343 / 0.8580"] + ["–"] * 3,
        ["seed 002, Qwen2.5-7B zero-shot", "–", "0.8393", "0.7590", "–", "–", "–"],
    ]
    head = ["labeller", "n", "accuracy", "κ", "acc. M", "acc. F", "acc. N"]
    conf = lex["accuracy"]["confusion"]
    line = ", ".join(f"{c} {' '.join(map(str, r))}" for c, r in zip("MFN", conf))
    return markdown(head, rows) + f"\n\nConfusion (rows human, columns lexicon; M F N): {line}."


def gender_neutrality(runs: Runs) -> str:
    recs = [r for r in _gender(runs) if r.get("table") == "neutrality"]
    rows = []
    for tau, label in ((0, "0"), (1, "1 (the reference code's threshold)")):
        got = {r["metric"]: r for r in recs if r["condition"] == f"neutrality (tau={tau})"}
        acc, kappa = got["accuracy"], got["kappa"]
        rows.append([label, str(acc["n"]), f"{acc['value']:.4f}", f"{kappa['value']:.4f}"])
    rows.append(["seed 002", "–", "0.5726", "0.2703 (Table 5, row NFaiRR)"])
    return markdown(["τ (ω on the lexicon's counts)", "n", "accuracy", "κ"], rows)


#: seed 004's Table 1 (TREC Fair 2022, biographic gender): nDCG@20, AWRF@20, nDCG × AWRF
FAIR_QR_PAPER = (
    ("BM25", "0.6638", "0.8857", "0.5879"),
    ("FAIR-QR [no re-rank]", "0.6423", "0.9296", "0.5971"),
    ("FAIR-QR", "0.6530", "0.9316", "0.6083"),
)


def fair_qr(runs: Runs) -> str:
    """docs/retrieval.md: seed 004's Table 1 layout on TREC 2020 text, ``*`` where FAIR-QR
    differs from the system (paired t-test, p < 0.05), and the paper's rows beside."""
    metrics, _ = runs.experiment("experiment=fair_qr", "dataset=trec2020_text")
    recs = metrics["records"]
    cell = {(r["condition"], r["metric"]): r for r in recs}
    cols = ("ndcg@20", "awrf@20", "ndcg×awrf@20")
    rows = []
    for system in dict.fromkeys(r["condition"] for r in recs):
        row = [system]
        for col in cols:
            p = cell[("fair_qr", col)].get(f"p_vs_{system}")
            mark = "*" if p is not None and p < 0.05 else ""
            row.append(f"{cell[(system, col)]['value']:.4f}{mark}")
        rows.append(row)
    rows += [[f"seed 004, {name}", *vals] for name, *vals in FAIR_QR_PAPER]
    n = cell[("bm25", "ndcg@20")]["n_queries"]
    head = ["system (TREC 2020 text, L / H)", "nDCG@20", "AWRF@20", "nDCG × AWRF"]
    return markdown(head, rows) + f"\n\nMeans over {n} queries; * FAIR-QR differs (p < 0.05)."


def fair_qr_rerank(runs: Runs) -> str:  # noqa: ARG001 - no experiment run: the script's loop
    """docs/retrieval.md: FAIR-QR's re-ranking variants on TREC 2020 text."""
    from tools.fair_qr_rerank import measure, table

    return table(measure())


def gender_neutrality_grid(runs: Runs) -> str:  # noqa: ARG001 - the script's own grid
    """docs/retrieval.md: seed 002's Table 4 under every setting tried."""
    from tools.neutrality_grid import measure, table

    return table(measure())


def retrieval_datasets(runs: Runs) -> str:
    """The text datasets of docs/retrieval.md with their sizes as the loaders read them."""
    from data_loaders.text_collections import load_grep_biasir, load_trec_fair_text

    grep = load_grep_biasir(os.environ["GROUPBIAS_GREP_BIASIR"])
    relevant = int((grep.qrels.data > 0).sum())
    trec = [load_trec_fair_text(trec_root(), year) for year in (2019, 2020)]
    sizes = "; ".join(f"{thousands(len(c.doc_ids))} / {len(c.query_ids)}" for c in trec)
    rows = [
        [
            "`grep_biasir`",
            "`load_grep_biasir(root, both=, text=)`",
            "`$GROUPBIAS_GREP_BIASIR`",
            f"{len(grep.doc_ids)} / {len(grep.query_ids)}, {relevant} relevant",
            "`gender` M / F / N (human), `stereotype`, `category`",
        ],
        [
            "`trec2019_text`, `trec2020_text`",
            "`load_trec_fair_text(root, year, author_rule=, high_level=)`",
            "`$GROUPBIAS_TREC_FAIR`",
            sizes,
            "`h_class` L / H",
        ],
        [
            "`text_files`",
            "`load_text_collection` on your files (`dataset.params.corpus`, `queries`, "
            "`qrels`, `groups`, `group_label`; relative to `dataset.root`)",
            "–",
            "yours",
            "`group_label` (its classes in sorted order; `N` is the neutral class when present)",
        ],
    ]
    return markdown(["config", "loader", "location", "documents / queries", "label"], rows)
