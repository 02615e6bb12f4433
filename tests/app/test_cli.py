"""The groupbias command end to end: configs compose, runs are written atomically and
resumed, sweeps run through a real launcher (submitit's local executor), and the report
command aggregates them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from groupbias.app.cli import CONFIG_DIR, run
from groupbias.app.config import RANKER_GROUPS
from groupbias.reporting.aggregate import main as report_main

REPO = Path(__file__).resolve().parents[2]
EXPERIMENTS = sorted(p.stem for p in (REPO / "configs" / "experiment").glob("*.yaml"))

TINY_SYNTH = ["dataset.params.n_queries=60", "dataset.params.list_size=[4,20]"]
TINY_TRAIN = [
    "trainer.max_epochs=2",
    "trainer.enable_progress_bar=false",
    "trainer.threads=1",  # tiny tensors: more threads only wait on each other (xdist: 2 workers)
    "model.fc_model.sizes=[16]",
    "model.transformer.d_ff=16",
]


def _compose(overrides):
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        return compose(config_name="config", overrides=overrides)


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiment_config_composes_and_builds(experiment):
    from groupbias.app.config import build_setup

    cfg = _compose([f"experiment={experiment}"])
    assert cfg.experiment.name == experiment
    assert cfg.experiment._target_.startswith(f"experiments.{experiment}.")
    setup, exp = build_setup(cfg)
    assert exp.name == experiment and setup.seed == 0


def _groupbias(args, env_extra=None, cwd=None, timeout=600):
    env = {
        **os.environ,
        "GROUPBIAS_TREC_FAIR": str(REPO.parent / "shared" / "data" / "trec-fair"),
        **(env_extra or {}),
    }
    exe = Path(sys.executable).with_name("groupbias")
    return subprocess.run(
        [str(exe), *args], cwd=cwd or REPO, env=env, capture_output=True, text=True, timeout=timeout
    )


TINY_DEMO = ["experiment.repetitions=1", "experiment.ltr_betas=[0.8]", "bias.betas=[0.8]"]


@pytest.mark.slow
def test_demo_runs_writes_and_resumes(tmp_path, capsys, monkeypatch):
    cfg = _compose(
        ["experiment=demo", f"paths.runs={tmp_path}", *TINY_SYNTH, *TINY_TRAIN, *TINY_DEMO]
    )
    metrics = run(cfg)
    out = capsys.readouterr().out
    assert "Tabular regime" in out and "LTR regime" in out
    rd = tmp_path / "demo"
    for f in (
        "config.yaml",
        "meta.json",
        "metrics.json",
        "tabular.md",
        "ltr.tex",
        "demo.png",
        "demo.pdf",
    ):
        assert (rd / f).exists(), f
    meta = json.loads((rd / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["seed"] == 0
    conds = {(r["regime"], r["condition"]) for r in metrics["records"]}
    assert {
        ("tabular", "biased"),
        ("tabular", "corrected"),
        ("ltr", "full"),
        ("ltr", "biased"),
        ("ltr", "corrected"),
    } <= conds
    # a second run of the same config loads the results instead of recomputing
    import experiments.demo as demo

    monkeypatch.setattr(demo.Demo, "run", lambda *a: pytest.fail("recomputed a complete run"))
    again = run(cfg)
    assert again == metrics
    assert "already complete" in capsys.readouterr().out


@pytest.mark.realdata
def test_table1_on_real_trec(trec_root, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GROUPBIAS_TREC_FAIR", str(trec_root))
    cfg = _compose(
        [
            "experiment=table1",
            f"paths.runs={tmp_path}",
            "experiment.datasets=[trec2019,trec2020,iitjee]",
        ]
    )
    monkeypatch.setenv("GROUPBIAS_IITJEE", str(tmp_path / "absent.csv"))
    metrics = run(cfg)
    md = (tmp_path / "table1" / "table1.md").read_text()
    rows = [line for line in md.splitlines() if line.startswith("| TREC")]
    assert [r.split("|")[1].strip() for r in rows] == ["TREC 2019", "TREC 2020"]
    assert "β = 0.8 / β̂" in md and "β = 0.6 / β̂" in md
    assert any("IIT-JEE" in s and "skipped" in s for s in metrics["skipped"])
    est = {
        (r["dataset"], r["beta"]): r["value"]
        for r in metrics["records"]
        if r["metric"] == "beta_hat"
    }
    assert len(est) == 4 and all(abs(v - b) <= 0.05 for (_, b), v in est.items())


@pytest.mark.slow
def test_sweep_through_submitit_local_launcher_resumes_and_reports(tmp_path):
    args = [
        "-m",
        "launcher=submitit_local",
        "experiment=ablation_cluster_size",
        f"paths.runs={tmp_path}",
        "estimator.cluster_size=1,20",
        "experiment.repetitions=2",
        "bias.betas=[0.7]",
        *TINY_SYNTH,
    ]
    first = _groupbias(args)
    assert first.returncode == 0, first.stderr[-3000:]
    root = tmp_path / "ablation_cluster_size"
    jobs = sorted(p.name for p in root.iterdir() if (p / "metrics.json").exists())
    assert len(jobs) == 2
    assert [j.split("estimator.cluster_size=")[1].split("__")[0] for j in jobs] == ["1", "20"]
    assert (root / ".submitit").is_dir()  # the jobs really went through submitit
    stamp = {j: (root / j / "metrics.json").stat().st_mtime_ns for j in jobs}
    second = _groupbias(args)
    assert second.returncode == 0, second.stderr[-3000:]
    assert {j: (root / j / "metrics.json").stat().st_mtime_ns for j in jobs} == stamp
    assert report_main([str(root), "--out", str(tmp_path / "report")]) == 0
    import pandas as pd

    recs = pd.read_csv(tmp_path / "report" / "records.csv")
    cor = recs[(recs.metric == "ndcg@10") & (recs.condition == "corrected")]
    assert sorted(cor.cluster_size.unique()) == [1, 20]
    assert len(cor) == 4  # 2 sizes x 2 repetitions
    figs = list((tmp_path / "report").glob("cluster_size_*.png"))
    assert len(figs) == 1
    # per-query (k = 1) estimates scatter far more than clusters of 20 queries
    est = recs[recs.metric == "beta_hat"].groupby("cluster_size")["std"].mean()
    assert est[1] > est[20]


def test_report_without_runs_fails_clearly(tmp_path, capsys):
    assert report_main([str(tmp_path)]) == 1
    assert "no complete run" in capsys.readouterr().err


def test_theory_refuses_a_table_from_one_query(tmp_path):
    from groupbias.core.errors import ConfigError, ParameterError

    with pytest.raises((ConfigError, ParameterError), match="n_queries"):
        from groupbias.app.config import build_setup

        build_setup(_compose(["experiment=theory", "experiment.n_queries=1"]))


def test_theory_experiment_agrees_with_simulation(tmp_path):
    cfg = _compose(
        [
            "experiment=theory",
            f"paths.runs={tmp_path}",
            "experiment.n_queries=1500",
            "bias.betas=[0.9,0.7,0.6]",
        ]
    )
    recs = run(cfg)["records"]
    val = {(r["metric"], r["condition"], r["beta"]): r["value"] for r in recs}
    for beta in (0.9, 0.7, 0.6):
        # E[nu] = 2 - 1/beta and rho(DTR) = nu: Monte-Carlo error of 1500 x 5 items
        assert val[("nu", "simulation", beta)] == pytest.approx(2 - 1 / beta, abs=0.02)
        assert val[("rho_dtr", "simulation", beta)] == pytest.approx(
            val[("nu", "theory", beta)], abs=0.02
        )
        # Thm 4.1: NDCG within 2 %; Thm 4.2: |Delta(EEL)| within 15 %
        assert val[("ndcg", "simulation", beta)] == pytest.approx(
            val[("ndcg", "theory", beta)], rel=0.02
        )
        assert val[("delta_eel", "simulation", beta)] == pytest.approx(
            val[("delta_eel", "theory", beta)], rel=0.15
        )
    assert (tmp_path / "theory" / "theory.png").exists()


SMOKE = {
    "table1": ["experiment.datasets=[synthetic]"],
    "table2": ["experiment.datasets=[synthetic]", "bias.betas=[0.7]", *TINY_TRAIN],
    "impact": [
        "experiment.setups=listed",
        "experiment.datasets=[synthetic]",
        "bias.betas=[1.0,0.8,0.6]",
        *TINY_TRAIN,
    ],
    "fig7": ["experiment.setups=listed", "experiment.datasets=[synthetic]"],
    "ablation_cluster_size": [
        "experiment.repetitions=1",
        "experiment.cluster_sizes=[1,10,500,1000]",
    ],
    "ablation_clustering": [
        "experiment.repetitions=1",
        "experiment.cluster_sizes=[1,40]",
        "experiment.beta_stds=[0.3]",
    ],
    "estimator_robustness": [
        "experiment.repetitions=1",
        "experiment.ratios=[1.0,0.6]",
        "experiment.betas=[0.8]",
        "experiment.fig9_stds=[0.3]",
        "experiment.datasets=[synthetic]",
    ],
    "clicks": [
        "experiment.sessions=[3000]",
        "experiment.repetitions=1",
        "experiment.datasets=[{dataset: synthetic, params: {n_queries: 60, list_size: [4,20]}}]",
        *TINY_TRAIN,
    ],
    "drift": [
        "experiment.sessions=20000",
        "experiment.window=2000",
        "experiment.half_life=1000",
        "experiment.bins=20",
        "experiment.datasets=[{dataset: synthetic, params: {n_queries: 60, list_size: [4,20]}}]",
    ],
}


#: the retrieval experiments run on the tiny text collection of tests/data/tiny_text
TINY_TEXT = REPO / "tests" / "data" / "tiny_text"
TEXT_FILES = [
    "dataset=text_files",
    f"dataset.root={TINY_TEXT}",
    "dataset.params.groups=groups.tsv",
    "dataset.params.group_label=gender",
    f"experiment.wordlist={TINY_TEXT / 'wordlist.txt'}",
]
TEXT_SMOKE = {
    "gender_labels": TEXT_FILES,
    "bias_aware_prf": [*TEXT_FILES, "experiment.lambdas=[0.0,1.0]", "experiment.pool=10"],
    "fair_qr": [*TEXT_FILES[:-1], "experiment.datasets=[]", "experiment.fair_qr.top_k=3",
                "experiment.fair_qr.depth=10"],
    "retrieval_fairness": [*TEXT_FILES, "experiment.datasets=[]", "experiment.prf.pool=10",
                           "experiment.fair_qr.top_k=3", "experiment.fair_qr.depth=10"],
}  # fmt: skip
SMOKE.update(TEXT_SMOKE)


@pytest.mark.slow
@pytest.mark.parametrize("experiment", sorted(SMOKE))
def test_every_experiment_runs_at_tiny_scale(experiment, tmp_path, capsys):
    synth = [] if experiment in TEXT_SMOKE else TINY_SYNTH
    cfg = _compose(
        [f"experiment={experiment}", f"paths.runs={tmp_path}", *synth, *SMOKE[experiment]]
    )
    metrics = run(cfg)
    recs = metrics["records"]
    assert recs and all(r["value"] is None or isinstance(r["value"], float) for r in recs)
    rd = tmp_path / experiment
    assert (rd / "metrics.json").exists()
    produced = {p.suffix for p in rd.rglob("*") if p.is_file()}
    assert ".png" in produced or ".md" in produced
    if experiment == "impact":
        conds = {(r["regime"], r["condition"]) for r in recs}
        assert {
            ("tabular", "full"),
            ("tabular", "biased"),
            ("ltr", "full"),
            ("ltr", "biased"),
        } <= conds
        # beta = 1 is the unbiased reference: tabular scores are the true relevance
        full = {
            r["metric"]: r["value"]
            for r in recs
            if r["regime"] == "tabular" and r["condition"] == "full"
        }
        assert full["ndcg@10"] == 1.0 and full["rho_dtr"] == 1.0
        assert full["delta_eel"] == 0.0
        assert (rd / "impact_tabular.png").exists() and (rd / "impact_ltr.png").exists()
    if experiment == "ablation_cluster_size":  # sizes above #queries collapse into one
        assert (rd / "cluster_size.md").is_file() and (rd / "cluster_size.csv").is_file()
        n_train = cfg.dataset.params.n_queries * 0.6
        assert sorted({r["cluster_size"] for r in recs if r["condition"] == "corrected"}) == [
            1,
            10,
            round(n_train),
        ]
    if experiment == "ablation_clustering":
        assert {r["variant"] for r in recs} == {"normal", "two_mode"}
        assert len(list(rd.glob("clustering_*.md"))) == 2  # σβ = 0.3 and two modes
    if experiment.startswith("ablation_"):  # the cluster-size tables are printed too
        out = capsys.readouterr().out
        assert "Cluster size of the amortized estimate" in out
        rows = [line.split()[:3] for line in out.splitlines() if line.startswith("k = ")]
        sizes = {int(r[2]) for r in rows}
        assert sizes == {r["cluster_size"] for r in recs if r["metric"] == "beta_hat"}


def test_every_experiment_has_a_smoke_run():
    assert set(SMOKE) | {"demo", "theory"} == set(EXPERIMENTS)


def test_tables_include_related_work_metrics_by_config(tmp_path):
    cfg = _compose(
        [
            "experiment=table1",
            f"paths.runs={tmp_path}",
            *TINY_SYNTH,
            "experiment.datasets=[synthetic]",
            "experiment.metrics=[ndcg@10,rho_dtr,delta_eel,awrf,texfair,"
            "{name:cwex,alpha:0.2,key:cwex@0.2},arab]",
            "experiment.correlations=[[awrf,texfair]]",
        ]
    )
    recs = run(cfg)["records"]
    corr = [r for r in recs if r["metric"] == "pearson(awrf,texfair)"]
    assert {r["condition"] for r in corr} == {"biased", "corrected"}
    assert all(-1 <= r["value"] <= 1 for r in corr)
    got = {r["metric"] for r in recs}
    assert {"awrf", "texfair", "cwex@0.2", "arab"} <= got
    md = (tmp_path / "table1" / "table1.md").read_text()
    assert "AWRF ↑" in md and "TExFAIR ↑" in md and "cwex@0.2" in md and "ARaB →0" in md
    for r in recs:
        assert r["metric"] != "awrf" or 0.0 <= r["value"] <= 1.0


def test_table2_with_related_work_metrics(tmp_path):
    cfg = _compose(
        [
            "experiment=table2",
            f"paths.runs={tmp_path}",
            *TINY_SYNTH,
            *TINY_TRAIN,
            "experiment.datasets=[synthetic]",
            "bias.betas=[0.7]",
            "experiment.metrics=[ndcg@10,rho_dtr,delta_eel,awrf,nfairr]",
        ]
    )
    recs = run(cfg)["records"]
    aw = [r for r in recs if r["metric"] == "awrf"]
    assert {r["condition"] for r in aw} == {"full", "biased", "corrected"}
    # NFaiRR is undefined (NaN) for crisp 0/1 groups: every item belongs to one group
    nf = [r for r in recs if r["metric"] == "nfairr"]
    assert nf and all(r["value"] is None for r in nf)


@pytest.mark.slow
def test_table2_normalizes_each_split_once(tmp_path, monkeypatch):
    # two β: five rankers (full, biased and corrected at each β) train and score on the
    # same normalized train / valid / test lists: three z-scores, not one per condition
    import groupbias.ltr.datamodule as dm

    calls: list[tuple[int, int]] = []
    zscore = dm.zscore_within_queries

    def counted(features, *, qptr, **kw):
        calls.append(features.shape)
        return zscore(features, qptr=qptr, **kw)

    monkeypatch.setattr(dm, "zscore_within_queries", counted)
    cfg = _compose(
        [
            "experiment=table2",
            f"paths.runs={tmp_path}",
            *TINY_SYNTH,
            *TINY_TRAIN,
            "experiment.datasets=[synthetic]",
            "bias.betas=[0.8,0.6]",
        ]
    )
    recs = run(cfg)["records"]
    assert {r["condition"] for r in recs if r["metric"] == "ndcg@10"} == {
        "full",
        "biased",
        "corrected",
    }
    assert len(calls) == 3, calls  # train, valid, test
    assert len({c[0] for c in calls}) == 3  # three different splits


@pytest.mark.parametrize(
    "override, key",
    [
        ("estimator.cluster_size=2.7", "estimator.cluster_size"),
        ("estimator.cluster_size=0", "estimator.cluster_size"),
        ("estimator.jitter=1.5", "estimator.jitter"),
        ("loss.weighting=bogus", "loss.weighting"),
        ("trainer.max_epochs=0", "trainer.max_epochs"),
        ("optimizer.lr=-1", "optimizer.lr"),
        ("bias.betas=0.8", "bias.betas"),
        ("bias.betas=[1.5]", "bias.betas"),
        ("estimator.jitter_scale=coarse", "estimator.jitter_scale"),
        ("estimator.bias_correction=jackknife", "estimator.bias_correction"),
        ("estimator.bias_boot=0", "estimator.bias_boot"),
    ],
)
def test_bad_config_values_name_the_key(override, key, tmp_path):
    from groupbias.core.errors import ConfigError

    cfg = _compose(
        [
            "experiment=table1",
            f"paths.runs={tmp_path}",
            *TINY_SYNTH,
            "experiment.datasets=[synthetic]",
            override,
        ]
    )
    with pytest.raises(ConfigError) as info:
        run(cfg, overridden=[override.split("=")[0]])
    assert info.value.key == key
    if key.split(".")[0] in RANKER_GROUPS:  # table1 trains no ranker: the key is unused
        assert "trains no ranker" in str(info.value)
    assert not (tmp_path / "table1").exists()  # nothing ran, nothing was written


@pytest.mark.slow  # a subprocess or a whole run: seconds
def test_tabular_experiment_builds_no_ranker_and_never_imports_torch(tmp_path):
    """A tabular run imports neither torch nor, until its report, pandas / scipy.stats /
    matplotlib: the libraries are part of the run's memory peak (~200 MB together)."""
    code = (
        "import sys\n"
        "from hydra import compose, initialize_config_dir\n"
        "import experiments.table1 as t\n"
        "from groupbias.app.cli import CONFIG_DIR, run\n"
        "shown = t.Table1.present\n"
        "def present(self, *a):\n"
        "    heavy = ('pandas', 'pyarrow', 'scipy.stats', 'matplotlib')\n"
        "    print('before report:', *[m for m in heavy if m in sys.modules])\n"
        "    return shown(self, *a)\n"
        "t.Table1.present = present\n"
        "with initialize_config_dir(config_dir=CONFIG_DIR, version_base='1.3'):\n"
        f"    cfg = compose('config', overrides=['experiment=table1', 'paths.runs={tmp_path}',"
        f" *{TINY_SYNTH!r}, 'experiment.datasets=[synthetic]'])\n"
        "run(cfg, overridden=[])\n"
        "print('torch' in sys.modules, 'lightning' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.strip().splitlines()
    assert lines[-1] == "False False"
    assert "before report:" in lines  # nothing heavy imported before the report
    assert (tmp_path / "table1" / "metrics.json").is_file()


def test_ranker_key_with_a_tabular_experiment_is_refused_at_the_cli(tmp_path):
    res = _groupbias(["experiment=table1", "trainer=gpu", f"paths.runs={tmp_path}"])
    assert res.returncode == 2, res.stderr[-3000:]
    assert res.stderr.startswith("groupbias: error: trainer: unused: experiment 'table1'")
    assert "Traceback" not in res.stderr


@pytest.mark.slow  # the command imports Lightning (about 6 s) before it checks loss keys
def test_cli_reports_a_bad_key_in_one_line_with_exit_code_2(tmp_path):
    res = _groupbias(["loss.weighting=bogus", f"paths.runs={tmp_path}"])
    assert res.returncode == 2, res.stderr[-3000:]
    assert "Traceback" not in res.stderr
    assert res.stderr.startswith("groupbias: error: loss.weighting: expected one of")
    assert "hint" in res.stderr


@pytest.mark.slow  # a subprocess or a whole run: seconds
def test_command_line_dataset_replaces_the_experiment_list(tmp_path):
    res = _groupbias(
        [
            "experiment=table1",
            "dataset=synthetic",
            "dataset.params.n_queries=60",
            f"paths.runs={tmp_path}",
        ]
    )
    assert res.returncode == 0, res.stderr[-3000:]
    (md,) = list((tmp_path / "table1").rglob("table1.md"))
    rows = [
        line.split("|")[1].strip()
        for line in md.read_text().splitlines()[2:]
        if line.startswith("|")  # the legend follows the table
    ]
    assert rows == ["synthetic"]


@pytest.mark.slow  # a subprocess or a whole run: seconds
def test_missing_licensed_data_fails_with_the_variable_to_set(tmp_path):
    res = _groupbias(
        [
            "experiment=table1",
            "dataset=mslr",
            "grouping=feature",
            "grouping.feature_id=127",
            f"paths.runs={tmp_path}",
            "experiment.skip_missing=false",
        ],
        env_extra={"GROUPBIAS_MSLR": str(tmp_path / "nowhere")},
    )
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "GROUPBIAS_MSLR" in res.stderr and "Fold1/train.txt" in res.stderr


def test_table2_shows_the_null_check_and_its_flag(tmp_path, capsys):
    """Table 2 carries the null β̂ column and flags a failed check with ``!`` (README: Tables
    1 and 2 are flagged), here on synthetic groups of unequal merit (utility ratio 0.3)."""
    unequal = "{dataset: synthetic, params: {n_queries: 60, list_size: [4,20], utility_ratio: 0.3}}"
    cfg = _compose(
        [
            "experiment=table2",
            f"paths.runs={tmp_path}",
            f"experiment.datasets=[{unequal}]",
            "bias.betas=[0.7]",
            "diagnostics.null_tolerance=0.02",
            *TINY_TRAIN,
        ]
    )
    metrics = run(cfg)
    diag = {r["metric"]: r["value"] for r in metrics["records"] if r["condition"] == "diagnostic"}
    assert diag["assumption_violated"] == 1.0
    md = (tmp_path / "table2" / "table2.md").read_text()
    assert "β = 0.7 / null β̂" in md
    row = next(line for line in md.splitlines() if line.startswith("| synthetic"))
    assert f"{diag['null_beta_hat']:.3f}!" in row
    assert "null β̂ (the ks estimator on unbiased data) is off" in capsys.readouterr().out


@pytest.mark.slow
def test_model_folders_are_shell_safe_and_where_the_docs_say(tmp_path, capsys):
    # a table row named with a space, as "TREC 2020" is: its models went to "models/TREC 2020"
    cfg = _compose(
        [
            "experiment=table2",
            f"paths.runs={tmp_path}",
            *TINY_SYNTH,
            "experiment.datasets=[{dataset: synthetic, title: TREC 2020}]",
            "bias.betas=[0.7]",
            *TINY_TRAIN,
        ]
    )
    run(cfg)
    made = [p.relative_to(tmp_path) for p in tmp_path.rglob("*")]
    assert made and not [str(p) for p in made if " " in str(p)]
    models = tmp_path / "table2" / "models" / "TREC_2020"
    assert (models / "beta0.7" / "biased" / "test.run").is_file()
    documented = (REPO / "docs" / "interop.md").read_text()
    assert "groupbias-report compare runs/table2/dataset=trec2020/models/TREC_2020 " in documented
