"""Runs compared side by side (ranx style): paired tests against scipy, the Holm and
Bonferroni corrections by hand, the letters each system earns, Markdown and LaTeX views,
and the command on the run folder an LTR experiment writes."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import scipy.stats

import groupbias as gb
from groupbias.core.errors import ParameterError
from groupbias.evaluation.stats import adjust_p_values
from groupbias.reporting.aggregate import main as report_main
from groupbias.reporting.compare import compare, compare_runs, system_letters
from tests.reporting.test_report import run_groupbias


def _hand_holm(p):
    """Holm's step-down adjustment written out: sort, multiply the i-th smallest (0-based)
    by m - i, carry the running maximum, cap at 1."""
    order = sorted(range(len(p)), key=lambda i: p[i])
    out, running = [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        out[i] = running
    return out


def test_holm_and_bonferroni_by_hand():
    p = [0.01, 0.04, 0.03, 0.005, 0.2]
    np.testing.assert_allclose(adjust_p_values(p), _hand_holm(p), rtol=0, atol=1e-15)
    np.testing.assert_allclose(adjust_p_values(p), [0.04, 0.09, 0.09, 0.025, 0.2])
    np.testing.assert_allclose(adjust_p_values(p, method="bonferroni"), [0.05, 0.2, 0.15, 0.025, 1])
    got = adjust_p_values([0.01, np.nan, 0.02])  # NaN: no test, not counted
    assert np.isnan(got[1]) and got[0] == pytest.approx(0.02) and got[2] == pytest.approx(0.02)
    with pytest.raises(ParameterError, match="method"):
        adjust_p_values(p, method="sidak")


@pytest.fixture
def four_systems():
    """Per-query NDCG and Δ(EEL) of four systems on 60 queries: b better than a by 0.05,
    c by 0.15, d like a; a few queries undefined for some systems."""
    rng = np.random.default_rng(8)
    q = pd.Index([f"q{i}" for i in range(60)], name="query")
    base = rng.random(60) * 0.5
    shift = {"a": 0.0, "b": 0.05, "c": 0.15, "d": 0.005}
    per_query = {}
    for name, s in shift.items():
        ndcg = base + s + rng.normal(0, 0.05, 60)
        eel = 0.5 - ndcg / 2 + rng.normal(0, 0.02, 60)  # lower is better
        ndcg[rng.integers(0, 60, 3)] = np.nan
        per_query[name] = {"ndcg@10": pd.Series(ndcg, q), "delta_eel": pd.Series(eel, q)}
    return per_query


def test_p_values_equal_scipy_ttest_rel_with_a_hand_holm_correction(four_systems):
    res = compare(four_systems, alpha=0.01, correction="holm")
    names = list(four_systems)
    for metric in ("ndcg@10", "delta_eel"):
        pairs = list(itertools.combinations(names, 2))
        raw = []
        for x, y in pairs:
            a = four_systems[x][metric].to_numpy()
            b = four_systems[y][metric].to_numpy()
            ok = ~(np.isnan(a) | np.isnan(b))
            raw.append(scipy.stats.ttest_rel(a[ok], b[ok]).pvalue)
        holm = _hand_holm(raw)
        t = res.tests[res.tests["metric"] == metric].set_index(["system", "other"])
        for (x, y), p, h in zip(pairs, raw, holm):
            for s, o in ((x, y), (y, x)):
                assert t.loc[(s, o), "p_value"] == pytest.approx(p, rel=1e-9, abs=1e-300)
                assert t.loc[(s, o), "p_adjusted"] == pytest.approx(h, rel=1e-9, abs=1e-300)
    # c beats a, b, d on both metrics (Δ(EEL): lower); b beats a and d on NDCG; nobody beats c
    assert res.beats("c", "ndcg@10") == ["a", "b", "d"] == res.beats("c", "delta_eel")
    assert res.beats("b", "ndcg@10") == ["a", "d"] and res.beats("a", "ndcg@10") == []
    md = res.to_markdown()
    assert "| c c | **" in md and "<sup>abd</sup>" in md and "Holm correction" in md
    assert md.splitlines()[0].startswith("Test: paired t-test") and "Holm" in md.splitlines()[0]
    tex = res.to_latex(caption="Runs")
    assert r"$^{abd}$" in tex and r"\textbf{" in tex and r"\toprule" in tex
    assert "Holm correction over the 6 pairs" in tex


def test_bonferroni_is_never_less_strict_than_holm(four_systems):
    holm = compare(four_systems, alpha=0.01, correction="holm")
    bonf = compare(four_systems, alpha=0.01, correction="bonferroni")
    assert (bonf.tests["p_adjusted"] >= holm.tests["p_adjusted"] - 1e-15).all()
    assert bonf.tests["better"].sum() <= holm.tests["better"].sum()


def test_letters_beyond_z_and_too_few_systems(four_systems):
    assert system_letters(28)[-3:] == ["z", "aa", "ab"]
    with pytest.raises(ParameterError, match="two systems"):
        compare({"a": four_systems["a"]})


def noisy_runs(folder, noise: dict, *, n_queries: int, seed: int) -> dict:
    """``{name: run file}``: the synthetic test split's labels plus normal noise of each
    scale of ``noise``, and the split's ``t.qrels`` and ``t.groups``, in ``folder``."""
    d = gb.load_dataset("synthetic", n_queries=n_queries, list_size=[6, 30], split="test")
    rng = np.random.default_rng(seed)
    runs = {
        name: gb.write_run(folder / f"{name}.run", d.labels + rng.normal(0, s, d.n_items), d)
        for name, s in noise.items()
    }
    gb.write_qrels(folder / "t.qrels", d)
    gb.write_groups(folder / "t.groups", d)
    return runs


def test_compare_runs_from_trec_files(tmp_path):
    runs = noisy_runs(tmp_path, {"weak": 2.0, "good": 0.5, "best": 0.1}, n_queries=200, seed=5)
    res = compare_runs(runs, tmp_path / "t.qrels", tmp_path / "t.groups", metrics=["nDCG@10"])
    assert res.beats("best", "nDCG@10") == ["a", "b"] and res.beats("weak", "nDCG@10") == []
    means = res.values.set_index("system")["mean"]
    for name, path in runs.items():
        direct = gb.evaluate_run(path, tmp_path / "t.qrels", tmp_path / "t.groups")["ndcg@10"]
        assert means[name] == pytest.approx(direct, abs=1e-12)


def _markdown_letters(text: str, columns: list[str]) -> dict[tuple[str, str], str]:
    """``{(system, column): letters}`` of the Markdown table in ``text`` (``columns``: the
    names of its columns after the first, in order)."""
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    out = {}
    for line in lines[1:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        system = cells[0].split(" ", 1)[1]
        for column, cell in zip(columns, cells[1:]):
            out[(system, column)] = cell.partition("<sup>")[2].removesuffix("</sup>")
    return out


def test_compare_command_letters_equal_ranx_compare(tmp_path, capsys, monkeypatch):
    """Three runs of 100 queries: the command's first line names its test and correction
    (ranx.compare's defaults), its letters equal those of ``ranx.compare`` with its defaults
    (student, max_p 0.01) on the same files, Holm takes letters away, and nothing is
    written without --out."""
    ranx = pytest.importorskip("ranx")
    from ranx.data_structures.report import super_chars

    noise = {"weak": 1.3, "good": 1.15, "best": 1.0}
    paths = noisy_runs(tmp_path, noise, n_queries=500, seed=3)
    metrics = ["ndcg@10", "map", "mrr"]
    runs = []
    for name, path in paths.items():
        run = ranx.Run.from_file(str(path), kind="trec")
        run.name = name
        runs.append(run)
    qrels = ranx.Qrels.from_file(str(tmp_path / "t.qrels"), kind="trec")
    report = ranx.compare(qrels, runs, metrics=metrics)  # its defaults
    plain = str.maketrans("".join(super_chars[:3]), "abc")
    want = {
        (n, m): report.get_superscript_for_table(n, m).translate(plain)
        for n in noise
        for m in metrics
    }
    assert want[("best", "ndcg@10")] == "a" and want[("good", "map")] == "a"  # letters to compare
    monkeypatch.chdir(tmp_path)
    args = ["compare", *map(str, paths.values()), "--names", ",".join(noise)]
    args += ["--qrels", "t.qrels", "--groups", "t.groups", "--metrics", ",".join(metrics)]
    before = sorted(p.name for p in tmp_path.iterdir())
    assert report_main(args) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (
        "Test: paired t-test (two-sided, as scipy.stats.ttest_rel), no correction, "
        "significant at p ≤ 0.01 (ranx.compare's defaults)."
    )
    assert _markdown_letters(out, metrics) == want
    assert sorted(p.name for p in tmp_path.iterdir()) == before and "not written" in out
    for n, m in want:  # the means as ranx's, to the table's 3 decimals
        assert f"{report.results[n][m]:.3f}" in out
    assert report_main([*args, "--correction", "holm"]) == 0
    holm = capsys.readouterr().out
    first = holm.splitlines()[0]
    assert "Holm correction over the 3 pairs" in first and "--correction none" in first
    fewer = _markdown_letters(holm, metrics)
    assert fewer != want and all(set(fewer[k]) <= set(v) for k, v in want.items())


def test_compare_command_on_the_conditions_an_ltr_run_wrote(tmp_path, capsys):
    """run_ltr writes each condition's test run and the split's qrels and groups: the
    command compares the three conditions (names: their folders) from the folder alone."""
    import dataclasses

    from groupbias.estimate.estimators import KSEstimator
    from groupbias.pipelines.ltr import run_ltr
    from tests.pipelines.test_pipelines import tiny_recipe

    s = gb.load_dataset("synthetic", n_queries=80, list_size=[4, 20])
    recipe = tiny_recipe()
    recipe = dataclasses.replace(recipe, trainer=dataclasses.replace(recipe.trainer, max_epochs=1))
    out = tmp_path / "model"
    res = run_ltr(
        s, beta=0.6, bias=gb.GroupBias(), estimator=KSEstimator(), recipe=recipe,
        rng=np.random.default_rng(0), out_dir=out, diagnostics=None,
    )  # fmt: skip
    assert {p.name for p in out.iterdir()} >= {"test.qrels", "test.groups", "full", "biased"}
    stem = tmp_path / "cmp"
    # the pipeline's own convention (its candidates, 2^l - 1 gains): the records' numbers
    args = ["compare", str(out), "--out", str(stem), "--alpha", "0.05"]
    assert report_main([*args, "--semantics", "candidates"]) == 0
    md = (tmp_path / "cmp.md").read_text()
    for row, cond in zip(("a biased", "b corrected", "c full"), ("biased", "corrected", "full")):
        assert f"| {row} |" in md
        mean = pd.read_csv(tmp_path / "cmp_values.csv").set_index(["system", "metric"])
        want = [
            r["value"] for r in res.records if r["condition"] == cond and r["metric"] == "ndcg@10"
        ]
        assert mean.loc[(cond, "ndcg@10"), "mean"] == pytest.approx(want[0], abs=1e-12)
    assert (tmp_path / "cmp.tex").exists() and "md:" in capsys.readouterr().out
    assert report_main(["--compare", str(out), "--out", str(stem)]) == 0  # the flag form


def test_means_are_over_the_queries_every_system_has():
    """b lacks the two queries where a does badly: over its own queries b's mean (0.6)
    beats a's (0.5), over the two shared queries a (0.9) beats b (0.6). The table bolds a
    and says the means are over 2 of 4 queries; no shared query at all is refused."""
    q = pd.Index(["q1", "q2", "q3", "q4"], name="query")
    a = pd.Series([0.9, 0.9, 0.1, 0.1], q)
    b = pd.Series([0.6, 0.6, np.nan, np.nan], q)
    res = compare({"a": {"ndcg@10": a}, "b": {"ndcg@10": b}})
    means = res.values.set_index("system")
    assert means.loc["a", "mean"] == pytest.approx(0.9) and means.loc["b", "mean"] == 0.6
    assert means["n_shared"].tolist() == [2, 2] and means["n_queries"].tolist() == [4, 2]
    md = res.to_markdown()
    assert "| a a | **0.900**" in md and "| b b | 0.600 |" in md
    assert "Means over the queries every system has (NDCG@10 ↑ 2 of 4)" in md
    c = pd.Series([np.nan, np.nan, 0.5, 0.5], q)
    with pytest.raises(ParameterError, match="queries where every system has ndcg@10"):
        compare({"b": {"ndcg@10": b}, "c": {"ndcg@10": c}})


TINY = ["dataset=synthetic", "dataset.params.n_queries=60", "dataset.params.list_size=[4,20]"]


@pytest.mark.slow
def test_compare_a_three_seed_cluster_size_sweep_over_the_seeds(tmp_path, capsys):
    """The folder of `groupbias -m experiment=ablation_cluster_size seed=0,1,2`: its records
    are means, so biased and corrected are paired over the 3 seeds (said in the output);
    each mean and p-value by hand from the runs' records and scipy. A copied run folder
    does not add a fourth seed."""
    import json
    import shutil

    run_groupbias(
        tmp_path, "-m", "experiment=ablation_cluster_size", "seed=0,1,2", *TINY,
        "experiment.cluster_sizes=[1,10]", "experiment.repetitions=1", "bias.betas=[0.6]",
        "paths.runs=runs",
    )  # fmt: skip
    root = tmp_path / "runs" / "ablation_cluster_size"
    folders = sorted(p.parent for p in root.rglob("metrics.json"))
    assert len(folders) == 3
    shutil.copytree(folders[0], root / "copy")
    stem = tmp_path / "cmp"
    assert report_main(["compare", str(root), "--out", str(stem)]) == 0
    out = capsys.readouterr().out
    assert "paired over the seeds" in out and "counted once" in out
    assert "Means over the seeds every system has (NDCG@10 ↑ 3," in out
    values = pd.read_csv(f"{stem}_values.csv")
    tests = pd.read_csv(f"{stem}_tests.csv")
    assert set(values["cluster_size"]) == {1, 10} and set(values["n_shared"]) == {3}
    for k in (1, 10):
        per_seed = {}
        for cond in ("biased", "corrected"):
            per_seed[cond] = [
                r["value"]
                for f in folders
                for r in json.loads((f / "metrics.json").read_text())["records"]
                if (r["metric"], r["condition"], r["cluster_size"]) == ("rho_dtr", cond, k)
            ]
            row = values[(values["cluster_size"] == k) & (values["system"] == cond)]
            row = row[row["metric"] == "rho_dtr"]
            assert row["mean"].iloc[0] == pytest.approx(np.mean(per_seed[cond]), abs=1e-12)
        want = scipy.stats.ttest_rel(per_seed["corrected"], per_seed["biased"]).pvalue
        t = tests[(tests["cluster_size"] == k) & (tests["metric"] == "rho_dtr")]
        got = t[(t["system"] == "corrected") & (t["other"] == "biased")]["p_value"].iloc[0]
        assert got == pytest.approx(want, rel=1e-9)
    # the cluster sizes as the systems, within each condition
    assert report_main(["compare", str(root), "--by", "cluster_size", "--out", str(stem)]) == 0
    assert "### condition=corrected" in capsys.readouterr().out


@pytest.mark.slow
def test_compare_a_table1_folder_says_one_run_is_no_test(tmp_path, capsys):
    import json

    run_groupbias(tmp_path, "experiment=table1", "experiment.datasets=[synthetic]", *TINY[1:],
               "hydra.run.dir=runs/table1")  # fmt: skip
    root = tmp_path / "runs" / "table1"
    assert report_main(["compare", str(root), "--out", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    assert "one run each, so no test" in out and "<sup>" not in out
    values = pd.read_csv(tmp_path / "c_values.csv")
    for r in json.loads((root / "metrics.json").read_text())["records"]:
        if r["condition"] in ("biased", "corrected") and r["metric"] == "ndcg@10":
            row = values[(values["system"] == r["condition"]) & (values["metric"] == "ndcg@10")]
            row = row[np.isclose(row["beta"], r["beta"])]
            assert row["mean"].iloc[0] == pytest.approx(r["value"], abs=1e-12)
