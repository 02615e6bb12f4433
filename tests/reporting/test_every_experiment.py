"""`groupbias-report` on one root holding the folders of every experiment, each made by the
real command at a tiny scale (the retrieval ones on Grep-BiasIR, gender_labels and fair_qr
asking an OpenAI-compatible server on 127.0.0.1): one tidy table, exit code 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Response

from groupbias.reporting.aggregate import main as report_main

pytestmark = [pytest.mark.realdata, pytest.mark.slow, pytest.mark.soak]

DATA = ["dataset.params.n_queries=60", "dataset.params.list_size=[4,20]"]
TRAIN = [
    "trainer.max_epochs=2",
    "trainer.enable_progress_bar=false",
    "model.fc_model.sizes=[8]",
    "model.transformer.d_ff=8",
    "model.transformer.h=1",
]
RETRIEVAL = ["experiment.bm25.depth=50"]
#: every experiment the root holds, with its tiny settings ({llm}: the local endpoint)
EXPERIMENTS = {
    "demo": [*DATA, *TRAIN, "experiment.repetitions=2", "experiment.ltr_betas=[1.0,0.6]",
             "bias.betas=[1.0,0.8,0.6]"],
    "table1": ["experiment.datasets=[synthetic]", *DATA],
    "table2": ["experiment.datasets=[synthetic]", "bias.betas=[0.7]", *DATA, *TRAIN],
    "ablation_cluster_size": ["dataset=synthetic", *DATA, "experiment.cluster_sizes=[1,10]",
                              "experiment.repetitions=1", "bias.betas=[0.6]"],
    "clicks": ["experiment.sessions=[2000]", "experiment.datasets=[{dataset: synthetic, "
               "params: {n_queries: 60, list_size: [10, 20]}}]", *TRAIN],
    "drift": ["experiment.sessions=40000", "experiment.window=4000",
              "experiment.half_life=2000", "experiment.bins=20", "experiment.tolerance=0.1"],
    "gender_labels": ["+experiment.llm={llm}"],
    "bias_aware_prf": ["experiment.lambdas=[0.0,1.0]", "experiment.biases=[tf]", *RETRIEVAL],
    "fair_qr": ["experiment.datasets=[grep_biasir]", "experiment.fair_qr.max_iterations=1",
                "experiment.llm={llm}", *RETRIEVAL],
    "retrieval_fairness": ["experiment.datasets=[grep_biasir]",
                           "experiment.fair_qr.max_iterations=1", *RETRIEVAL],
}  # fmt: skip


def answer_prompt(request):
    """A gender label for a labelling prompt, keywords for a FAIR-QR refinement."""
    prompt = request.get_json()["messages"][-1]["content"]
    if "Document: " in prompt:
        words = set(prompt.rsplit("Document: ", 1)[1].lower().split())
        text = (
            "Female" if words & {"she", "her"} else "Male" if words & {"he", "his"} else "Neutral"
        )
    else:
        text = "Refined keywords: women men"
    body = {"choices": [{"message": {"content": text}}]}
    return Response(json.dumps(body), content_type="application/json")


@pytest.fixture(scope="module")
def root(tmp_path_factory, grep_root_path, wordlist_path):
    tmp = tmp_path_factory.mktemp("every")
    env = {
        **os.environ,
        "GROUPBIAS_GREP_BIASIR": str(grep_root_path),
        "GROUPBIAS_GENDER_WORDLIST": str(wordlist_path),
    }
    exe = Path(sys.executable).with_name("groupbias")
    with HTTPServer(host="127.0.0.1", threaded=True) as server:
        server.expect_request("/v1/chat/completions").respond_with_handler(answer_prompt)
        llm = (
            f"{{base_url: '{server.url_for('/v1')}', model: tiny, concurrency: 4, "
            f"cache_dir: '{tmp / 'cache'}'}}"
        )
        for name, overrides in EXPERIMENTS.items():
            args = [o.replace("{llm}", llm) for o in overrides]
            res = subprocess.run(
                [str(exe), f"experiment={name}", *args, f"paths.runs={tmp / 'runs'}"],
                cwd=tmp, env=env, capture_output=True, text=True, timeout=900,
            )  # fmt: skip
            assert res.returncode == 0, f"{name}: {res.stderr[-3000:]}"
        assert server.log  # the LLM was asked
    return tmp / "runs"


@pytest.fixture(scope="module")
def grep_root_path():
    from tests.conftest import REPO

    path = Path(os.environ.get("GROUPBIAS_GREP_BIASIR") or REPO.parent / "shared/data/grep-biasir")
    if not (path / "queries.csv").exists():
        pytest.skip("Grep-BiasIR not found: set GROUPBIAS_GREP_BIASIR")
    return path


@pytest.fixture(scope="module")
def wordlist_path():
    from tests.conftest import REPO

    default = REPO.parent / "shared/data/rekabsaz-gender/wordlist_genderspecific.txt"
    path = Path(os.environ.get("GROUPBIAS_GENDER_WORDLIST") or default)
    if not path.is_file():
        pytest.skip("gender word list not found: set GROUPBIAS_GENDER_WORDLIST")
    return path


def test_one_report_of_every_experiment(root, tmp_path, capsys):
    out = tmp_path / "report"
    assert report_main([str(root), "--out", str(out)]) == 0
    records = pd.read_parquet(out / "records.parquet")
    experiments = {Path(run).parts[0] for run in records["run"]}
    assert experiments == set(EXPERIMENTS)
    # one tidy table: every record of every complete run, numbers as numbers
    n = sum(
        len(json.loads(p.read_text())["records"])
        for p in root.rglob("metrics.json")
        if json.loads((p.parent / "meta.json").read_text()).get("status") == "complete"
    )
    assert len(records) == n == len(pd.read_csv(out / "records.csv"))
    assert pd.api.types.is_float_dtype(records["value"])
    summary = pd.read_csv(out / "summary.csv")
    assert len(summary) > 0 and (summary["n"] >= 1).all()
    assert "Traceback" not in capsys.readouterr().err
