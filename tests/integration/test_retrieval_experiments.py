"""The retrieval experiments end to end on the real data: gender_labels (with an LLM on a
local server), bias_aware_prf, fair_qr and retrieval_fairness."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from pytest_httpserver import HTTPServer
from werkzeug import Response

from experiments.retrieval_common import read_run_file
from groupbias.app.cli import CONFIG_DIR, run

pytestmark = [pytest.mark.realdata, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def env(monkeypatch, grep_root, trec_root, gender_wordlist, tmp_path):
    monkeypatch.setenv("GROUPBIAS_GREP_BIASIR", str(grep_root))
    monkeypatch.setenv("GROUPBIAS_TREC_FAIR", str(trec_root))
    monkeypatch.setenv("GROUPBIAS_GENDER_WORDLIST", str(gender_wordlist))
    return tmp_path


def _run(overrides, tmp_path):
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose(config_name="config", overrides=[*overrides, f"paths.runs={tmp_path}"])
    return run(cfg)


def _records(metrics, **match):
    return [r for r in metrics["records"] if all(r.get(k) == v for k, v in match.items())]


def test_gender_labels_prints_agreement_and_table_4(env, capsys):
    metrics = _run(["experiment=gender_labels"], env)
    out = capsys.readouterr().out
    assert "Gender labels vs human labels" in out and "confusion matrix, lexicon" in out
    assert "neutrality (tau=1)" in out
    acc = _records(metrics, condition="lexicon", metric="accuracy")[0]
    cm = np.array(acc["confusion"])
    assert acc["n"] == 697 and acc["no_reference"] == 5  # the 'both' rows are unknown
    assert acc["value"] == pytest.approx(np.trace(cm) / cm.sum())
    binary = _records(metrics, condition="neutrality (tau=0)", metric="accuracy")
    assert binary and 0 < binary[0]["value"] < 1


def test_gender_labels_with_an_llm_endpoint_adds_rows(env, capsys):
    def answer(request):
        doc = request.get_json()["messages"][0]["content"].rsplit("Document: ", 1)[1]
        words = set(doc.lower().split())
        label = (
            "Female"
            if words & {"she", "her", "women"}
            else "Male"
            if words & {"he", "his", "men"}
            else "Neutral"
        )
        body = {"choices": [{"message": {"content": label}}]}
        return Response(json.dumps(body), content_type="application/json")

    with HTTPServer(host="127.0.0.1", threaded=True) as server:
        server.expect_request("/v1/chat/completions").respond_with_handler(answer)
        llm = (
            f"+experiment.llm={{base_url: '{server.url_for('/v1')}', model: tiny, "
            f"prompts: [zero_shot], concurrency: 8, cache_dir: '{env / 'cache'}'}}"
        )
        metrics = _run(["experiment=gender_labels", llm], env)
        asked = len(server.log)
    rows = _records(metrics, condition="tiny (zero_shot)", metric="kappa")
    # documents of the same text are one question
    assert rows and rows[0]["llm_requested"] == asked and rows[0]["llm_labelled"] == 702
    assert rows[0]["llm_unparsed"] == 0 and asked <= 702
    assert "tiny (zero_shot)" in capsys.readouterr().out


def test_bias_aware_prf_lambda_zero_is_plain_rm3(env, capsys):
    metrics = _run(
        ["experiment=bias_aware_prf", "experiment.lambdas=[0.0,0.5,1.0]", "experiment.biases=[tf]"],
        env,
    )
    assert metrics["lambda0_equals_rm3"] == {"tf": True}
    lam1 = _records(metrics, condition="λ=1", metric="map@10")[0]
    assert "p_value" in lam1 and lam1["n_queries"] == 117
    assert "λ=0 equals plain RM3: True" in capsys.readouterr().out
    path = next((env / "bias_aware_prf").rglob("expansions.json"))
    saved = json.loads(path.read_text())["result"]
    assert set(saved["expansions"]) == {"tf/λ=0", "tf/λ=0.5", "tf/λ=1"}


def test_fair_qr_on_grep_biasir_saves_keywords_and_runs(env, capsys):
    metrics = _run(["experiment=fair_qr", "experiment.datasets=[grep_biasir]"], env)
    out = capsys.readouterr().out
    assert "FAIR-QR on Grep-BiasIR (seed 004, Table 1 layout)" in out
    systems = {r["condition"] for r in metrics["records"]}
    assert systems == {"bm25", "bm25+rm3", "mmr", "fa*ir", "fair_qr [no re-rank]", "fair_qr"}
    folder = next((env / "fair_qr").rglob("refined_keywords.json")).parent
    kw = json.loads((folder / "refined_keywords.json").read_text())["fair_qr"]
    assert len(kw) == 117 and all("kl" in v for v in kw.values())
    assert (folder / "runs" / "fa_ir.txt").is_file()


def test_retrieval_fairness_reproduces_bm25_utility_of_seed_002(env, capsys):
    metrics = _run(["experiment=retrieval_fairness", "experiment.datasets=[grep_biasir]"], env)
    bm25 = {r["metric"]: r["value"] for r in _records(metrics, condition="bm25")}
    # seed 002, Table 8: BM25 on Grep-BiasIR, MRR@10 0.7782, nDCG@10 0.7984
    assert round(bm25["mrr@10"], 4) == 0.7782 and round(bm25["ndcg@10"], 4) == 0.7984
    assert {"cwex(0.5)@10 [human]", "cwex(0.5)@10 [lexicon]", "texfair@10"} <= set(bm25)
    folder = next((env / "retrieval_fairness").rglob("fair_qr.txt")).parent.parent
    from data_loaders.text_collections import load_grep_biasir

    c = load_grep_biasir(os.environ["GROUPBIAS_GREP_BIASIR"])
    r = read_run_file(folder / "runs" / "fair_qr.txt", c)
    assert r.n_queries == 117


def test_a_text_experiment_on_a_ranking_dataset_is_a_one_line_error(env):
    exe = Path(sys.executable).with_name("groupbias")
    res = subprocess.run(
        [str(exe), "experiment=bias_aware_prf", "dataset=synthetic", f"paths.runs={env}"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert res.returncode == 2
    assert res.stderr.startswith("groupbias: error: dataset: 'synthetic' is not a text collection")
    assert "Traceback" not in res.stderr
