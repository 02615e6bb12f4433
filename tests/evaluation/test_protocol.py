"""Evaluation protocols and their convention options, each against values computed by hand
in this file (written out with math.log2, not with the library)."""

from __future__ import annotations

import math
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import yaml

from groupbias import metrics as M
from groupbias.core.errors import ParameterError
from groupbias.evaluation import exposure as E
from groupbias.evaluation.catalog import EvalSpec, compute_metrics
from groupbias.evaluation.protocol import EvaluationProtocol

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "evaluation"
L3, L5 = math.log2(3), math.log2(5)


def _preset(name: str, **changes) -> EvaluationProtocol:
    cfg = yaml.safe_load((CONFIGS / f"{name}.yaml").read_text())
    cfg.pop("_target_")
    return EvaluationProtocol(**{**cfg, **changes})


def _spec(labels, groups, qptr, metrics, thresholds=(0.5,)):
    lab = np.asarray(labels, dtype=float)
    return EvalSpec(
        labels=lab,
        relevance=lab,
        groups=np.asarray(groups, dtype=float),
        qptr=np.asarray(qptr),
        thresholds=thresholds,
        metrics=tuple(metrics),
    )


def test_discount_offset_two_shifts_the_exposure_down_one_rank():
    s, rel, g, q = [3.0, 2.0, 1.0], [1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0, 3]
    e = E.expected_exposure(s, qptr=q, offset=2)
    np.testing.assert_allclose(e, [1 / L3, 1 / 2, 1 / L5])
    ea, en = 1 / L3, 1 / 2 + 1 / L5  # U_A = U_N = 1
    np.testing.assert_allclose(
        M.rho_dtr_ranking(s, rel, qptr=q, groups=g, offset=2, reduce=None), [ea / en]
    )
    with pytest.raises(ParameterError, match="offset"):
        E.expected_exposure(s, qptr=q, offset=3)


def test_rho_dtr_zero_utility_conventions():
    # q0: U_A = 0 but the estimate gives A utility; q1: A has no utility in either;
    # q2: no true utility at all
    est = [0.5, 1.0, 0.0, 1.0, 0.3, 0.2]
    true = [0.0, 1.0, 0.0, 1.0, 0.0, 0.0]
    g = [1, 0, 1, 0, 1, 0]
    q = [0, 2, 4, 6]
    want = {
        "extend": [0.0, 1.0, np.nan],
        "skip": [np.nan, np.nan, np.nan],
        "one": [1.0, 1.0, 1.0],
        "zero": [0.0, 0.0, 0.0],
    }
    for rule, values in want.items():
        got = M.rho_dtr_tabular(est, true, qptr=q, groups=g, on_zero_utility=rule, reduce=None)
        np.testing.assert_array_equal(got, values)


def test_ndcg_over_queries_with_positive_ndcg_and_no_relevant_items():
    # q0: the relevant item ranks 2nd, NDCG@1 = 0; q1: NDCG@1 = 1; q2: no relevant item
    s, lab, q = [2.0, 1.0, 2.0, 1.0, 1.0, 0.0], [0, 1, 1, 0, 0, 0], [0, 2, 4, 6]
    keep = M.ndcg(s, lab, qptr=q, k=1, on_no_relevant="zero", reduce=None)
    np.testing.assert_array_equal(keep, [0.0, 1.0, 0.0])
    assert M.ndcg(s, lab, qptr=q, k=1, on_no_relevant="zero") == pytest.approx(1 / 3)
    assert M.ndcg(s, lab, qptr=q, k=1, on_zero_ndcg="skip") == 1.0
    np.testing.assert_array_equal(
        M.ndcg(s, lab, qptr=q, k=1, on_zero_ndcg="skip", reduce=None), [np.nan, 1.0, np.nan]
    )


def test_query_minmax_bins():
    v = np.array([0.2, 0.5, 0.9, 0.4, 0.4])
    q = np.array([0, 3, 5])
    # (0.5 - 0.2) / (0.7 / 2) = 0.86 -> 0; 0.9 is the top of the range -> 1; a constant
    # query: every value is 1e-10 above lo, one bin of width 1e-10 -> grade 1
    np.testing.assert_array_equal(
        E.query_minmax_grades(v, q, np.array([0, 0, 0, 1, 1]), 2), [0, 0, 1, 1, 1]
    )
    # Δ(EEL) with per-query min-max bins, squared ℓ2: estimate [0.2, 0.5, 0.9] grades
    # [0, 0, 1] against true [1, 1, 0] grades [1, 1, 0]; groups A = {0}, N = {1, 2}
    est, true, g = [0.2, 0.5, 0.9], [1.0, 1.0, 0.0], [1.0, 0.0, 0.0]
    e1, e2, e3 = 1.0, 1 / L3, 0.5
    est_a, true_a = (e2 + e3) / 2, (e1 + e2) / 2
    d = est_a - true_a
    got = M.delta_eel_tabular(
        est,
        true,
        qptr=[0, 3],
        groups=g,
        bins="query_minmax",
        levels=2,
        distance="sq_l2",
        reduce=None,
    )
    np.testing.assert_allclose(got, [2 * d * d])
    with pytest.raises(ParameterError, match="thresholds"):
        M.delta_eel_tabular(
            est, true, qptr=[0, 3], groups=g, bins="query_minmax", thresholds=[0.5], reduce=None
        )


def test_default_protocol_computes_exactly_the_bare_metrics():
    rng = np.random.default_rng(0)
    q = np.array([0, 4, 9, 12])
    lab = rng.integers(0, 2, 12).astype(float)
    spec = _spec(lab, rng.integers(0, 2, 12), q, ["ndcg@10", "rho_dtr", "delta_eel"])
    s = rng.random(12)
    for regime in ("tabular", "ltr"):
        want = compute_metrics(s, spec, regime=regime)
        got = EvaluationProtocol().evaluate(s, spec, regime=regime)
        for key in want:
            np.testing.assert_array_equal(got[key], want[key])
    assert _preset("deterministic") == EvaluationProtocol()


def test_top_n_truncation_and_dropping_single_group_queries():
    s = np.array([0.1, 0.9, 0.5, 0.7, 0.3, 0.2])
    lab = [1.0, 1.0, 0.0, 0.0, 1.0, 1.0]
    spec = _spec(lab, [1, 0, 0, 1, 1, 1], [0, 4, 6], ["ndcg@10"])
    p = EvaluationProtocol(top_n=2, single_group="drop", on_no_relevant="zero")
    kept, sub = p.truncate(s, spec)
    np.testing.assert_array_equal(kept, [0.9, 0.7, 0.3, 0.2])  # top 2 of q0, all of q1
    np.testing.assert_array_equal(sub.qptr, [0, 2, 4])
    np.testing.assert_array_equal(sub.labels, [1.0, 0.0, 1.0, 1.0])
    out = p.evaluate(s, spec, regime="ltr")["ndcg@10"]
    # q0 after truncation: labels [1, 0] ranked [1, 0] -> 1, groups [0, 1]; q1 has one
    # group only -> dropped (judged after truncation, as the groups of q0 would be)
    np.testing.assert_array_equal(out, [1.0, np.nan])


def test_paper_code_preset_by_hand_on_a_two_item_policy():
    """Policy with logits [log 3, 0]: item 0 first with probability 3/4."""
    p = _preset("paper_code", learn=False, temperature=1.0)
    assert p.mode == "policy" and p.offset == 2 and p.top_n == 20
    s = np.array([math.log(3.0), 0.0, 0.0, 1.0])
    lab = [1.0, 0.0, 1.0, 0.0]
    spec = _spec(lab, [1, 0, 1, 1], [0, 2, 4], ["ndcg@10", "rho_dtr", "delta_eel"])
    out = p.evaluate(s, spec, regime="tabular")
    # NDCG keeps the DCG discount 1/log2(1 + r): E[DCG] = 3/4 + (1/4)/log2(3), IDCG = 1
    assert out["ndcg@10"][0] == pytest.approx(0.75 + 0.25 / L3, abs=1e-15)
    # ρ(DTR): the non-affected group has no utility -> 1 (fair)
    assert out["rho_dtr"][0] == 1.0
    # Δ(EEL), offset 2, squared ℓ2: ε_A = 3/4·(1/log2 3) + 1/4·(1/2); the target of the
    # grades [1, 0] gives A 1/log2 3; the two components are ±δ
    d = (0.75 / L3 + 0.25 / 2) - 1 / L3
    assert out["delta_eel"][0] == pytest.approx(2 * d * d, abs=1e-15)
    # the second query has one group only: dropped
    assert all(np.isnan(v[1]) for v in out.values())


def test_bogus_protocol_values_name_their_option():
    for key, value in (
        ("mode", "random"),
        ("offset", 0),
        ("eel_bins", "quantile"),
        ("top_n", 0),
        ("tradeoff", 2.0),
        ("train_samples", 1),
        ("learn", "yes"),
        ("exposure_device", "gpu"),
        ("exposure_workers", 0),
    ):
        with pytest.raises(ParameterError) as info:
            EvaluationProtocol(**{key: value})
        assert info.value.name == key


def test_exposure_device_and_workers_reach_the_policy():
    """The same Monte-Carlo draws on one thread or two; torch draws others (same law)."""
    rng = np.random.default_rng(0)
    s = rng.normal(size=40)
    spec = _spec(rng.integers(0, 2, 40), rng.integers(0, 2, 40), [0, 20, 40], ["ndcg@10"])
    pols = [
        _preset("policy", learn=False, samples=500, exposure_workers=t).policy(s, spec)
        for t in (1, 2)
    ]
    assert [p.workers for p in pols] == [1, 2] and pols[0].device == "cpu"
    e = [p.expected_exposure().mean for p in pols]
    assert np.array_equal(e[0], e[1])
    pol = _preset("policy", learn=False, samples=500, exposure_device="torch").policy(s, spec)
    assert pol.device == "torch"
    ex = pol.expected_exposure()
    assert not np.array_equal(ex.mean, e[0])
    assert np.all(np.abs(ex.mean - e[0]) < 6 * ex.stderr + 1e-9)


def test_policy_protocol_learns_from_the_scores():
    """A learned policy puts the relevant items first and shares exposure among equal
    grades: NDCG near 1 on binary labels, Δ(EEL) near 0 for the true scores."""
    lab = [1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0]
    spec = _spec(lab, [1, 0, 1, 0, 1, 0, 0], [0, 4, 7], ["ndcg@10", "delta_eel"])
    p = replace(_preset("policy"), epochs=150)
    out = p.evaluate(np.array(lab), spec, regime="tabular")
    assert np.all(out["ndcg@10"] > 0.97)
    assert np.all(out["delta_eel"] < 0.05)


@pytest.mark.slow
def test_demo_evaluates_tables_and_rankers_as_policies(tmp_path):
    """evaluation=policy reaches both regimes of the demo: the tabular utilities and the
    trained rankers' scores are evaluated as Plackett–Luce policies (scores as logits), so
    even full-information utilities no longer reach NDCG 1."""
    import json

    from hydra import compose, initialize_config_dir

    from groupbias.app.cli import CONFIG_DIR, run

    overrides = [
        "experiment=demo",
        "evaluation=policy",
        "evaluation.learn=false",
        "evaluation.samples=200",
        f"paths.runs={tmp_path}",
        "dataset.params.n_queries=40",
        "dataset.params.list_size=[4,12]",
        "trainer.max_epochs=1",
        "trainer.threads=1",
        "model.fc_model.sizes=[8]",
        "model.transformer.d_ff=8",
        "bias.betas=[0.6]",
        "experiment.repetitions=1",
        "experiment.ltr_betas=[0.6]",
        "experiment.table_betas=[0.6]",
    ]
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides)
    run(cfg)
    recs = json.loads((tmp_path / "demo" / "metrics.json").read_text())["records"]
    ndcg = {(r["regime"], r["condition"]): r["value"] for r in recs if r["metric"] == "ndcg@10"}
    assert {("tabular", "full"), ("ltr", "full"), ("ltr", "biased")} <= set(ndcg)
    # utilities in [0, 1] as logits: a nearly uniform policy, far below the sorted NDCG 1
    assert ndcg[("tabular", "full")] < 0.95
    assert all(0 < v <= 1 for v in ndcg.values())


def _stable_descending(scores, a, b, top_n):
    """Ranked items a..b-1 by score, ties earliest first, cut to ``top_n``."""
    return sorted(range(a, b), key=lambda i: -scores[i])[:top_n]


def _released_order(scores, a, b, top_n, kind=None):
    """The released code's two sorts: ``argsort()[::-1]`` of the query's slice cut to
    ``top_n``, then ``argsort()[::-1]`` again over the cut items (in the order the cut left
    them), each on the float64 slice as that code calls it. ``kind=None`` is numpy's default
    sort, the released code's; ``kind="stable"`` the order it gives on short lists without
    SIMD sorting (later items first after the reversal)."""
    s = np.asarray(scores[a:b], dtype=np.float64)
    cut = np.argsort(s, kind=kind)[::-1][:top_n]
    again = np.argsort(s[cut], kind=kind)[::-1]
    return [a + int(i) for i in cut[again]]


def _paper_style(scores, labels, groups, qptr, top_n=20, levels=2, order_of=_stable_descending):
    """The released evaluation code's conventions for one deterministic ranking per query,
    re-implemented here loop by loop: candidates cut to the top ``top_n`` by score and
    ranked (``order_of``), single-group queries dropped, exposure 1/log2(2 + r), EEL target
    from ``levels`` per-query min-max bins of the labels, squared distance of the group
    exposures, DTR as max/min of exposure-per-utility minus 1 (0 when a group has no
    utility), NDCG@10 with 1/log2(1 + r) and 0 without relevant items. Returns per-query
    (ndcg, rho, eel) of the kept queries, rho = 1 / (1 + DTR - 1)."""
    out = []
    for a, b in zip(qptr[:-1], qptr[1:]):
        order = order_of(scores, a, b, top_n)
        lab = [labels[i] for i in order]  # in ranked order
        grp = [groups[i] for i in order]
        if min(grp) == max(grp):
            continue
        n = len(order)
        expo = [1 / math.log2(2 + r) for r in range(1, n + 1)]
        lo, hi = min(lab) - 1e-10, max(lab) + 1e-10
        grade = [math.floor((v - lo) / ((hi - lo) / levels)) for v in lab]
        ranked_grades = sorted(grade, reverse=True)
        target_of = {
            gr: sum(e for e, x in zip(expo, ranked_grades) if x == gr) / ranked_grades.count(gr)
            for gr in set(grade)
        }
        eel = 0.0
        ratios = []
        for gv in (0.0, 1.0):
            e = sum(x for x, gg in zip(expo, grp) if gg == gv)
            t = sum(target_of[gr] for gr, gg in zip(grade, grp) if gg == gv)
            eel += (e - t) ** 2
            u = sum(v for v, gg in zip(lab, grp) if gg == gv)
            ratios.append(0.0 if u == 0 else e / u)
        dtr = 0.0 if ratios[0] * ratios[1] == 0 else max(ratios) / min(ratios) - 1
        ideal = sorted(lab, reverse=True)
        idcg = sum((2**v - 1) / math.log2(1 + r) for r, v in enumerate(ideal[:10], 1))
        dcg = sum((2**v - 1) / math.log2(1 + r) for r, v in enumerate(lab[:10], 1))
        out.append((dcg / idcg if idcg > 0 else 0.0, 1 / (1 + dtr), eel))
    return np.array(out)


def test_paper_code_preset_matches_the_released_conventions_on_deterministic_rankings():
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 30, size=60)
    q = np.concatenate([[0], np.cumsum(sizes)])
    n = int(q[-1])
    scores = rng.random(n)
    labels = (rng.random(n) < 0.3).astype(float)
    groups = (rng.random(n) < 0.4).astype(float)
    spec = _spec(labels, groups, q, ["ndcg@10", "rho_dtr", "delta_eel"])
    p = _preset("paper_code", mode="deterministic")
    got = p.evaluate(scores, spec, regime="ltr")
    kept = ~np.isnan(got["ndcg@10"])
    want = _paper_style(scores, labels, groups, q)
    assert kept.sum() == len(want) > 20
    for j, key in enumerate(("ndcg@10", "rho_dtr", "delta_eel")):
        np.testing.assert_allclose(got[key][kept], want[:, j], rtol=1e-12, atol=1e-14)


def test_paper_code_preset_keeps_the_released_codes_tie_order():
    """On scores with many ties (biased utilities of binary labels are), the preset keeps the
    candidates the released code's ``argsort()[::-1][:20]`` keeps and ranks them as its
    second ``argsort()[::-1]`` does (numpy's default sort, unstable beyond 16 items): NDCG@10,
    ρ(DTR) and Δ(EEL) equal that re-implementation to 1e-12. The named options ``top_n_ties:
    last`` with ``ties: stable`` give numpy's order where it sorts stably, and keeping the
    earliest tied candidates differs from both."""
    rng = np.random.default_rng(11)
    sizes = rng.integers(15, 40, size=80)
    q = np.concatenate([[0], np.cumsum(sizes)])
    n = int(q[-1])
    labels = (rng.random(n) < 0.3).astype(float)
    groups = (rng.random(n) < 0.4).astype(float)
    scores = labels * np.where(groups == 1, 0.6, 1.0)  # three distinct values per query
    spec = _spec(labels, groups, q, ["ndcg@10", "rho_dtr", "delta_eel"])
    keys = ("ndcg@10", "rho_dtr", "delta_eel")
    cases = (({}, None), ({"top_n_ties": "last", "ties": "stable"}, "stable"))
    for changes, kind in cases:
        p = _preset("paper_code", mode="deterministic", **changes)
        got = p.evaluate(scores, spec, regime="ltr")
        kept = ~np.isnan(got["ndcg@10"])
        want = _paper_style(scores, labels, groups, q, order_of=partial(_released_order, kind=kind))
        assert kept.sum() == len(want) > 60
        for j, key in enumerate(keys):
            np.testing.assert_allclose(got[key][kept], want[:, j], rtol=1e-12, atol=1e-14)
    first = _preset("paper_code", mode="deterministic", top_n_ties="first", ties="stable")
    other = first.evaluate(scores, spec, regime="ltr")
    assert np.nanmax(np.abs(other["rho_dtr"] - got["rho_dtr"])) > 0.01
    with pytest.raises(ParameterError, match="top_n_ties"):
        EvaluationProtocol(top_n_ties="middle")
    with pytest.raises(ParameterError, match="ties"):
        EvaluationProtocol(ties="quicksort")


def test_per_metric_objective_judges_rho_dtr_on_the_dtr_policy():
    """objective=per_metric: ρ(DTR) from the policy learned for DTR (near 1 against the
    utilities it learned from), NDCG and Δ(EEL) exactly those of the EEL policy."""
    lab = [1.0, 0.6, 0.0, 0.2, 1.0, 0.0, 0.8, 0.0]
    spec = _spec(lab, [1, 0, 1, 0, 0, 1, 1, 0], [0, 4, 8], ["ndcg@10", "rho_dtr", "delta_eel"])
    s = np.array(lab)
    base = replace(_preset("policy"), epochs=150)
    eel = replace(base, objective="eel").evaluate(s, spec, regime="tabular")
    both = replace(base, objective="per_metric").evaluate(s, spec, regime="tabular")
    assert list(both) == ["ndcg@10", "rho_dtr", "delta_eel"]
    for key in ("ndcg@10", "delta_eel"):
        np.testing.assert_array_equal(both[key], eel[key])
    assert np.all(both["rho_dtr"] > 0.99) and np.all(both["rho_dtr"] > eel["rho_dtr"])


def test_learner_target_grades_follow_the_binning():
    s = np.array([0.0, 0.25, 0.5, 0.75, 1.0, 0.3, 0.6])
    spec = _spec([0.0] * 7, [0] * 7, [0, 5, 7], ["ndcg@10"], thresholds=(0.25, 0.5, 0.75))
    # the data's thresholds: #{t <= v}
    np.testing.assert_array_equal(EvaluationProtocol().grades(s, spec), [0, 1, 2, 3, 3, 1, 2])
    # 5 per-query min-max levels over [0, 1]: bins of width 0.2; [0.3, 0.6]: 0.3 -> 0, 0.6 -> 4
    p = EvaluationProtocol(eel_bins="query_minmax", eel_levels=2, train_levels=5)
    np.testing.assert_array_equal(p.grades(s, spec), [0, 1, 2, 3, 4, 0, 4])


@pytest.mark.realdata
@pytest.mark.slow
def test_policy_protocol_on_real_trec(trec_root, monkeypatch):
    """Under evaluation=policy on TREC 2019 (train, β = 0.6): biased NDCG@10 below 1, and
    correction improves ρ(DTR) and Δ(EEL) with a paired t-test over queries at p < 0.001."""
    import groupbias as gb
    from groupbias.estimate.estimators import KSEstimator
    from groupbias.pipelines.tabular import run_tabular
    from groupbias.simulate.group_bias import GroupBias

    monkeypatch.setenv("GROUPBIAS_TREC_FAIR", str(trec_root))
    data = gb.load_dataset("trec2019", split="train")
    res = run_tabular(
        data,
        beta=0.6,
        bias=GroupBias(beta_std=0.1),
        estimator=KSEstimator(),
        rng=np.random.default_rng(0),
        metrics=["ndcg@10", "rho_dtr", "delta_eel"],
        # 50 of the preset's 200 epochs: the learned policies' rho(DTR) and Delta(EEL) are
        # within 0.005 of the 200-epoch ones here and both p-values stay below 1e-20
        protocol=_preset("policy", epochs=50),
        diagnostics=None,
    )
    by = {(r["metric"], r["condition"]): r for r in res.records}
    assert by[("ndcg@10", "biased")]["value"] < 1.0
    for metric, better in (("rho_dtr", 1), ("delta_eel", -1)):
        b, c = by[(metric, "biased")], by[(metric, "corrected")]
        assert better * (c["value"] - b["value"]) > 0 and c["p_value"] < 1e-3
