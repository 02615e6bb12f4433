"""Results as DataFrames (``gb.per_query_results``, ``gb.load_results``): per query of an
external run against ir_measures, per query of the conditions of an LTR run folder that the
command wrote, and the records of that folder."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import groupbias as gb
from groupbias.core.errors import ParameterError
from tests.reporting.test_report import run_groupbias


@pytest.fixture
def bm25_files(tmp_path):
    """A run with ties (scores rounded to one decimal) over the synthetic test split, its
    qrels and item→group file."""
    d = gb.load_dataset("synthetic", n_queries=300, list_size=[4, 30], split="test")
    scores = np.round(d.labels + np.random.default_rng(4).normal(0, 1.0, d.n_items), 1)
    run = gb.write_run(tmp_path / "bm25.run", scores, d)
    return run, gb.write_qrels(tmp_path / "test.qrels", d), gb.write_groups(tmp_path / "g", d)


def test_per_query_results_of_a_run_equal_ir_measures(bm25_files):
    """One row per judged query, ``system`` and ``query`` columns, and nDCG@10, AP and RR
    per query equal to ir_measures; the means are ``gb.evaluate_run``'s."""
    ir_measures = pytest.importorskip("ir_measures")
    run, qrels, groups = bm25_files
    table = gb.per_query_results(run, qrels, metrics=["nDCG@10", "map", "mrr"])
    assert list(table.columns) == ["system", "query", "nDCG@10", "map", "mrr"]
    assert set(table["system"]) == {str(run)} and table["query"].is_unique
    measures = {"nDCG@10": ir_measures.nDCG @ 10, "map": ir_measures.AP, "mrr": ir_measures.RR}
    want = pd.DataFrame(
        [
            (m.query_id, name, m.value)
            for name, measure in measures.items()
            for m in ir_measures.iter_calc(
                [measure],
                ir_measures.read_trec_qrels(str(qrels)),
                ir_measures.read_trec_run(str(run)),
            )
        ],
        columns=["query", "metric", "value"],
    ).pivot(index="query", columns="metric", values="value")
    got = table.set_index("query")[list(measures)]
    assert sorted(got.index) == sorted(want.index) and len(got) == 60
    np.testing.assert_allclose(got.loc[want.index, list(measures)], want[list(measures)], atol=1e-9)
    means = gb.evaluate_run(run, qrels, groups, metrics=["nDCG@10", "map", "mrr"])
    for name in measures:
        assert table[name].mean() == pytest.approx(means[name], abs=1e-12)


def test_fairness_metrics_need_the_group_file(bm25_files):
    run, qrels, groups = bm25_files
    with pytest.raises(ParameterError, match="groups: expected an item→group file for rho_dtr"):
        gb.per_query_results(run, qrels, metrics=["nDCG@10", "rho_dtr"])
    two = gb.per_query_results({"a": run, "b": run}, qrels, groups, metrics=["rho_dtr"])
    assert two.groupby("system").size().to_dict() == {"a": 60, "b": 60}
    want = gb.evaluate_run(run, qrels, groups, metrics=["rho_dtr"], reduce=None)["rho_dtr"]
    np.testing.assert_array_equal(two.loc[two["system"] == "a", "rho_dtr"], want)


TINY = ["dataset.params.n_queries=60", "dataset.params.list_size=[4,20]"]
TRAIN = [
    "trainer.max_epochs=1",
    "trainer.enable_progress_bar=false",
    "trainer.threads=1",
    "model.fc_model.sizes=[16]",
    "model.transformer.d_ff=16",
]


@pytest.mark.slow
def test_a_run_folder_as_dataframes(tmp_path):
    """`groupbias experiment=table2` on the synthetic data: per query of each condition's
    test run (judged as the pipeline judges, ``semantics="candidates"``) whose means are the
    run's recorded NDCG@10, and ``load_results`` with one row per record of metrics.json."""
    run_groupbias(
        tmp_path, "experiment=table2", "experiment.datasets=[synthetic]", *TINY, *TRAIN,
        "bias.betas=[0.7]", "hydra.run.dir=runs/table2",
    )  # fmt: skip
    folder = tmp_path / "runs" / "table2"
    table = gb.per_query_results(folder, metrics=["nDCG@10"], semantics="candidates")
    conditions = {s.rsplit("/", 1)[-1]: s for s in table["system"].unique()}
    assert set(conditions) >= {"full", "biased", "corrected"}
    records = json.loads((folder / "metrics.json").read_text())["records"]
    for r in records:
        if r["metric"] == "ndcg@10" and r["condition"] in conditions:
            rows = table[table["system"] == conditions[r["condition"]]]
            assert rows["nDCG@10"].mean() == pytest.approx(r["value"], abs=1e-12)
    tidy = gb.load_results(folder)
    assert len(tidy) == len(records) and {"condition", "metric", "value"} <= set(tidy.columns)
    ndcg = tidy[tidy["metric"] == "ndcg@10"].set_index("condition")["value"]
    for r in records:
        if r["metric"] == "ndcg@10":
            assert ndcg[r["condition"]] == pytest.approx(r["value"], abs=1e-12)
    assert set(gb.load_results(folder, summary=True)["n"]) == {1}
    with pytest.raises(ParameterError, match="folders holding complete runs"):
        gb.load_results(tmp_path / "nothing")
