"""One measure catalogue: ir_measures', trec_eval's and ranx's names resolve to one canonical
metric; precision, recall, R-precision, bpref, success and judged with trec_eval's semantics,
checked by hand and against ir_measures (on runs, and on candidate lists in the library)."""

from __future__ import annotations

import numpy as np
import pytest

import groupbias as gb
from groupbias.core.registry import METRICS
from groupbias.data.trec import Qrels, TrecRun
from groupbias.evaluation.catalog import metric_label, parse_metric
from groupbias.evaluation.declaration import info_of
from groupbias.evaluation.metrics import bpref, precision, r_precision, recall, success
from groupbias.evaluation.trec_eval import trec_measures

ir_measures = pytest.importorskip("ir_measures")

#: the issue's names: (ir_measures | trec_eval | ranx name, canonical name, cutoff)
NAMES = [
    ("nDCG@10", "ndcg", 10), ("P@10", "precision", 10), ("R@100", "recall", 100),
    ("AP", "map", None), ("AP@10", "map", 10), ("RR", "mrr", None), ("RR@10", "mrr", 10),
    ("Rprec", "rprec", None), ("Bpref", "bpref", None), ("Success@5", "success", 5),
    ("Judged@10", "judged", 10),
    ("ndcg_cut_10", "ndcg", 10), ("ndcg", "ndcg", None), ("P_10", "precision", 10),
    ("recall_100", "recall", 100), ("map", "map", None), ("map_cut_10", "map", 10),
    ("recip_rank", "mrr", None), ("bpref", "bpref", None), ("success_10", "success", 10),
    ("P.10", "precision", 10),  # trec_eval -m P.10
    ("ndcg@10", "ndcg", 10), ("precision@10", "precision", 10), ("recall@100", "recall", 100),
    ("mrr", "mrr", None), ("r-precision", "rprec", None), ("hit_rate@5", "success", 5),
]  # fmt: skip


@pytest.mark.parametrize(("written", "name", "k"), NAMES)
def test_every_tools_name_maps_to_one_canonical_metric(written, name, k):
    r = parse_metric(written)
    assert (r.name, r.k, r.group, r.key) == (name, k, "all", written)


def test_no_two_metrics_share_a_name_or_an_alias():
    seen: dict[str, str] = {}
    for name in METRICS.names():
        for alias in (name, *info_of(METRICS.get(name)).aliases):
            assert seen.setdefault(alias.lower(), name) == name, alias


def test_an_unknown_name_gets_a_did_you_mean():
    with pytest.raises(gb.ParameterError, match="did you mean precision"):
        parse_metric("precison@10")
    with pytest.raises(gb.ParameterError, match="did you mean ndcg_cut_10"):
        parse_metric("ndcg_cutt_10")
    with pytest.raises(gb.ParameterError, match="one cutoff"):
        parse_metric("P_10@5")
    with pytest.raises(gb.ParameterError, match="without a cutoff"):
        trec_measures(*_hand(), ["bpref@10"])


def test_the_tables_label_is_the_same_whatever_the_name():
    assert metric_label("ndcg_cut_10") == metric_label("nDCG@10") == "NDCG@10 ↑"
    assert metric_label("P_10") == metric_label("precision@10") == "P@10 ↑"
    assert metric_label("ndcg@10:affected") == "NDCG@10 affected ↑"
    assert metric_label("delta_eel") == "Δ(EEL) ↓" and metric_label("arab") == "ARaB →0"
    assert metric_label("cwex@0.2") == "cwex@0.2"  # a key that is no name stays as written


def _hand():
    """One query: qrels d1, d2 relevant, d3, d4, d5 judged not relevant; the run ranks
    d3 d1 x d4 d2 (x unjudged)."""
    run = TrecRun(
        np.array(["q"]), np.array([0, 5]),
        np.array(["d3", "d1", "x", "d4", "d2"]), np.array([5.0, 4.0, 3.0, 2.0, 1.0]),
    )  # fmt: skip
    qrels = Qrels(
        np.array(["q"] * 5), np.array(["d1", "d2", "d3", "d4", "d5"]),
        np.array([1.0, 2.0, 0.0, 0.0, 0.0]),
    )  # fmt: skip
    return run, qrels


def test_the_new_measures_by_hand():
    # bpref: R = 2, N = 3, min(N, R) = 2; d1 has 1 judged non-relevant above (1 - 1/2),
    # d2 has 2 (x, unjudged, is skipped): (0.5 + 0) / 2
    expect = {
        "bpref": 0.25, "rprec": 0.5, "precision@5": 0.4, "precision@10": 0.2,
        "recall@2": 0.5, "success@1": 0.0, "success@2": 1.0, "judged@5": 0.8,
        "judged@10": 0.8, "judged@3": 2 / 3,
    }  # fmt: skip
    _, got = trec_measures(*_hand(), list(expect))
    for name, value in expect.items():
        assert got[name][0] == pytest.approx(value, abs=1e-15), name


def test_bpref_with_fewer_judged_non_relevant_than_relevant():
    # R = 3, N = 1: the one non-relevant above d2 and d3 costs each min(1, 3) / min(1, 3)
    run = TrecRun(np.array(["q"]), np.array([0, 4]), np.array(["a", "n", "b", "c"]),
                  np.array([4.0, 3.0, 2.0, 1.0]))  # fmt: skip
    qrels = Qrels(np.array(["q"] * 4), np.array(["a", "b", "c", "n"]),
                  np.array([1.0, 1.0, 1.0, 0.0]))  # fmt: skip
    _, got = trec_measures(run, qrels, ["bpref"])
    assert got["bpref"][0] == pytest.approx(1 / 3, abs=1e-15)
    ref = _reference(run, qrels, "Bpref")
    assert got["bpref"][0] == pytest.approx(ref["q"], abs=1e-12)


def _reference(run, qrels, measure):
    qr = [ir_measures.Qrel(q, d, int(v)) for q, d, v in zip(
        qrels.query_ids, qrels.item_ids, qrels.labels, strict=True)]  # fmt: skip
    qi = np.repeat(run.query_ids, np.diff(run.qptr))
    rn = [ir_measures.ScoredDoc(q, d, float(s)) for q, d, s in zip(
        qi, run.item_ids, run.scores, strict=True)]  # fmt: skip
    m = ir_measures.parse_measure(measure)
    return {r.query_id: r.value for r in ir_measures.iter_calc([m], qr, rn)}


def _candidates(seed: int):
    """Lists whose every item is judged, distinct scores (no tie to break)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 25, 60)
    qptr = np.concatenate([[0], np.cumsum(sizes)])
    n = int(qptr[-1])
    labels = rng.integers(0, 4, n) * (rng.random(n) < 0.35)
    labels[qptr[7] : qptr[8]] = 0  # a list with nothing relevant
    scores = rng.permutation(n).astype(float)
    qids = np.array([f"q{i}" for i in range(sizes.size)])
    docs = np.array([f"d{i}" for i in range(n)])
    run = TrecRun(qids, qptr, docs, scores)
    qrels = Qrels(np.repeat(qids, sizes), docs, labels.astype(float))
    return scores, labels.astype(float), qptr, run, qrels


CANDIDATE_FORMS = [
    (precision, {"k": 5}, "P@5"), (precision, {"k": 30}, "P@30"),
    (recall, {"k": 5}, "R@5"), (r_precision, {}, "Rprec"), (bpref, {}, "Bpref"),
    (success, {"k": 3}, "Success@3"),
]  # fmt: skip


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize(("fn", "options", "ref_name"), CANDIDATE_FORMS)
def test_the_library_forms_equal_ir_measures_on_judged_lists(seed, fn, options, ref_name):
    scores, labels, qptr, run, qrels = _candidates(seed)
    extra = {} if fn is precision else {"on_no_relevant": "zero"}
    ours = fn(scores, labels, qptr=qptr, reduce=None, **options, **extra)
    ref = _reference(run, qrels, ref_name)
    expect = np.array([ref[q] for q in run.query_ids])
    np.testing.assert_allclose(ours, expect, rtol=0, atol=1e-12)


def test_a_query_without_relevant_items_is_skipped_by_default_in_the_library():
    scores, labels, qptr, _, _ = _candidates(0)
    none = np.add.reduceat(labels >= 1, qptr[:-1]) == 0
    assert none[7] and not none.all()
    for fn in (recall, r_precision, bpref, success):
        values = fn(scores, labels, qptr=qptr, reduce=None)
        np.testing.assert_array_equal(np.isnan(values), none)


def test_the_new_measures_by_name_in_gb_evaluate():
    scores, labels, qptr, _, _ = _candidates(2)
    groups = (np.arange(labels.size) % 2).astype(float)
    data = gb.RankingData(np.zeros((labels.size, 0), np.float32), labels, qptr,
                          np.arange(qptr.size - 1), groups=groups, label_max=3.0)  # fmt: skip
    got = gb.evaluate(scores, data, regime="ltr", metrics=["P@5", "bpref", "R-prec"])
    assert got["P@5"] == pytest.approx(np.mean(precision(scores, labels, qptr=qptr, k=5,
                                                         reduce=None)))  # fmt: skip
    assert got["bpref"] == pytest.approx(bpref(scores, labels, qptr=qptr))
    with pytest.raises(gb.ParameterError, match="without @k"):
        gb.evaluate(scores, data, regime="ltr", metrics=["bpref@10"])
    with pytest.raises(gb.ParameterError, match="needs the qrels"):
        gb.evaluate(scores, data, regime="ltr", metrics=["Judged@10"])


def test_docs_interop_name_table_is_what_the_catalogue_parses():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "interop.md").read_text()
    section = doc.split("## Measure names", 1)[1].split("\n## ", 1)[0]
    table = section.split("\n\n<!--", 1)[1]
    rows = [ln for ln in table.splitlines() if ln.startswith("| `")]
    assert len(rows) == 9

    def parsed(cell: str) -> set:
        names = [n.strip(" `") for n in cell.split(",") if n.strip() not in ("—", "")]
        return {
            (r.name, r.k)
            for r in (parse_metric(n.replace("@k", "@10").replace("_k", "_10")) for n in names)
        }

    for row in rows:
        ours, *tools, _meaning = row.strip("|").split("|")
        assert ours.strip() and all(parsed(t) <= parsed(ours) for t in tools), row


def test_a_declaration_is_all_the_catalogue_tables_and_messages_read(monkeypatch):
    from groupbias.evaluation.catalog import declaration_of, register_metric
    from groupbias.evaluation.declaration import metric_info
    from groupbias.reporting.external_runs import UndefinedMeasureError, refuse_undefined

    METRICS._load_builtins()
    monkeypatch.setattr(METRICS, "_items", dict(METRICS._items))

    @register_metric(
        "misses",
        aliases=("Miss", "miss_{k}"),
        label="misses",
        direction="lower",
        undefined="no list has a miss",
        related_work=True,
    )
    def misses(scores, spec, *, regime, k, group, **options):
        return np.full(len(spec.qptr) - 1, np.nan)

    assert (parse_metric("miss_5").name, parse_metric("MISS@5").k) == ("misses", 5)
    assert metric_label("miss_5") == "misses@5 ↓" and declaration_of("Miss").related_work
    with pytest.raises(UndefinedMeasureError, match="no list has a miss; for the seed"):
        refuse_undefined({"miss_5": np.full(3, np.nan)}, "run.txt")
    with pytest.raises(gb.ParameterError, match="only at the end"):
        metric_info(aliases=("P_{k}_x",))
