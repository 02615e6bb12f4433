"""The two regime pipelines on synthetic and real TREC Fair data."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

import groupbias as gb
from groupbias import metrics as M
from groupbias.core.errors import ParameterError
from groupbias.estimate.estimators import KSEstimator, estimate_simulated
from groupbias.evaluation.catalog import eel_thresholds
from groupbias.pipelines.ltr import run_ltr, training_labels
from groupbias.pipelines.records import records_for
from groupbias.pipelines.tabular import correct_and_evaluate, run_tabular
from groupbias.simulate.group_bias import GroupBias

BIAS = GroupBias(beta_std=0.1)
GLOBAL = KSEstimator()


def tab(data, beta, rng, *, bias=BIAS, estimator=GLOBAL, **kw):
    return run_tabular(
        data, beta=beta, bias=bias, estimator=estimator, rng=np.random.default_rng(rng), **kw
    )


def _by(records, metric, condition):
    (r,) = [r for r in records if r["metric"] == metric and r["condition"] == condition]
    return r


def test_eel_thresholds():
    assert eel_thresholds(np.array([0, 1, 4, 2]), 4) == (0.125, 0.375, 0.625, 0.875)
    assert eel_thresholds(np.array([0, 1, 1]), 1) == (0.25, 0.5, 0.75)
    assert eel_thresholds(np.array([0.3, 0.9]), 1.0, bin_width=0.5) == (0.5,)
    with pytest.raises(ParameterError, match="bin_width"):
        eel_thresholds(np.array([0.3]), 1.0, bin_width=0)


def test_records_test_every_condition_against_the_reference():
    biased = np.array([0.5, 0.6, np.nan, 0.8])
    per_query = {
        "biased": {"m": biased},
        "corrected": {"m": np.array([0.6, 0.65, 0.9, 0.95])},
        "full": {"m": np.array([np.nan, 0.7, 0.9, np.nan])},
    }
    recs = {r["condition"]: r for r in records_for(per_query, base={"x": 1})}
    assert recs["biased"]["value"] == pytest.approx((0.5 + 0.6 + 0.8) / 3)
    assert recs["biased"]["n_queries"] == 3 and "p_value" not in recs["biased"]
    # the query where biased is undefined is left out of the pair
    a, b = np.array([0.6, 0.65, 0.95]), np.array([0.5, 0.6, 0.8])
    p = scipy.stats.ttest_rel(a, b).pvalue
    assert recs["corrected"]["p_value"] == pytest.approx(p) and recs["corrected"]["x"] == 1
    assert np.isnan(recs["full"]["p_value"])  # one query where both are defined
    alone = records_for({"corrected": per_query["corrected"]}, base={})
    assert "p_value" not in alone[0]


@pytest.fixture(scope="module")
def synthetic():
    return gb.load_dataset(
        "synthetic",
        n_queries=400,
        list_size=[10, 60],
        n_features=20,
        affected_share=0.35,
        utility_ratio=1.0,
        seed=7,
    )


def test_tabular_on_synthetic_recovers_beta_and_improves(synthetic):
    res = tab(synthetic["train"], 0.6, 3, dataset="synth", keep_scores=True)
    assert abs(res.beta_hat[0] - 0.6) <= 0.05 and res.beta_hat.size == 1
    rec = res.records
    for metric in ("ndcg@10", "rho_dtr"):
        assert _by(rec, metric, "corrected")["value"] > _by(rec, metric, "biased")["value"]
        assert _by(rec, metric, "corrected")["p_value"] < 1e-3
    assert _by(rec, "delta_eel", "corrected")["value"] < _by(rec, "delta_eel", "biased")["value"]
    # affected group hurt by bias, non-affected group gains (paper Fig. 2)
    assert (
        _by(rec, "ndcg@10:affected", "biased")["value"]
        < _by(rec, "ndcg@10:affected", "corrected")["value"]
    )
    assert (
        _by(rec, "ndcg@10:non_affected", "biased")["value"]
        > _by(rec, "ndcg@10:non_affected", "corrected")["value"]
    )
    # wiring: the recorded NDCG is that of the biased scores against the true labels
    d = synthetic["train"]
    assert _by(rec, "ndcg@10", "biased")["value"] == pytest.approx(
        M.ndcg(res.attractiveness, d.labels, qptr=d.qptr, k=10)
    )
    # IPS: affected corrected scores are attractiveness / beta_hat
    aff = d.groups == 1
    np.testing.assert_allclose(res.corrected[aff], res.attractiveness[aff] / res.beta_hat[0])
    np.testing.assert_array_equal(res.corrected[~aff], res.attractiveness[~aff])


def test_tabular_per_query_clusters_overcorrect(synthetic):
    """Paper §6.4.1: per-query clusters underestimate beta (over-compensation)."""
    d = synthetic["train"]
    glob = tab(d, 0.8, 0)
    perq = tab(d, 0.8, 0, estimator=KSEstimator(cluster_size=1))
    assert perq.beta_hat.size == d.n_queries
    assert np.nanstd(perq.beta_hat) > 5 * abs(glob.beta_hat[0] - 0.8) + 0.02
    assert (
        _by(perq.records, "ndcg@10", "corrected")["value"]
        < _by(glob.records, "ndcg@10", "corrected")["value"]
    )


def test_tabular_requires_groups(synthetic):
    d = synthetic["train"]
    with pytest.raises(ParameterError, match="groups"):
        tab(d.with_groups(None), 0.8, 0)


def test_correction_refuses_ungrouped_data_first(synthetic):
    d = synthetic["train"].subset(np.arange(20))
    rng = np.random.default_rng(0)
    sim = BIAS.simulate(d, beta=0.8, rng=rng)
    est = estimate_simulated(GLOBAL, d, sim, rng=rng)
    with pytest.raises(ParameterError) as exc:
        correct_and_evaluate(d.with_groups(None), sim, est, base={})
    assert exc.value.name == "data.groups" and "a grouped dataset" in str(exc.value)


@pytest.mark.realdata
@pytest.mark.parametrize("year", [2019, 2020])
def test_table1_criteria_on_real_trec(trec_root, monkeypatch, year):
    """Issue criterion: beta-hat within 0.05 of beta (one global cluster, sigma 0.1) and
    corrected better than biased on rho(DTR) and Delta(EEL), for beta in {0.6, 0.8}."""
    monkeypatch.setenv("GROUPBIAS_TREC_FAIR", str(trec_root))
    d = gb.load_dataset(f"trec{year}", split="train")
    assert d.n_queries == {2019: 632, 2020: 200}[year]
    for beta in (0.8, 0.6):
        res = tab(d, beta, year)
        assert abs(res.beta_hat[0] - beta) <= 0.05
        rec = res.records
        assert _by(rec, "rho_dtr", "corrected")["value"] > _by(rec, "rho_dtr", "biased")["value"]
        assert (
            _by(rec, "delta_eel", "corrected")["value"] < _by(rec, "delta_eel", "biased")["value"]
        )


def tiny_recipe():
    import functools

    import torch

    from groupbias.ltr.datamodule import BatchSpec
    from groupbias.ltr.losses import LambdaLoss
    from groupbias.ltr.model import ScorerSpec
    from groupbias.ltr.train import RankerRecipe, TrainerSpec

    return RankerRecipe(
        model=ScorerSpec(
            fc_model={"sizes": [32]},
            transformer={"N": 1, "d_ff": 32, "h": 2, "dropout": 0.0},
            post_model={"d_output": 1},
        ),
        loss=LambdaLoss(weighting="lambdaRank"),
        optimizer=functools.partial(torch.optim.Adam, lr=0.003),
        trainer=TrainerSpec(
            max_epochs=6,
            patience=None,
            accelerator="cpu",
            devices=1,
            enable_progress_bar=False,
            threads=1,  # tiny tensors: more threads only wait on each other (xdist: 2 workers)
        ),
        batching=BatchSpec(batch_size=16, slate_length=64),
    )


def test_no_estimate_leaves_the_labels_uncorrected(synthetic, tmp_path):
    """The affected group is absent from the train split: every cluster fails, the β̂ record
    says NaN and no label is corrected, also on the valid split, whose affected items a
    correction would change."""
    import dataclasses

    train = synthetic["train"].subset(np.arange(40))
    splits = {
        "train": train.with_groups(np.zeros(train.n_items)),
        "valid": synthetic["valid"].subset(np.arange(20)),
        "test": synthetic["test"].subset(np.arange(20)),
    }
    assert splits["valid"].groups.sum() > 0
    kw = dict(beta=0.6, bias=BIAS, estimator=GLOBAL)
    labels, vlabels, est, _ = training_labels(splits, rng=np.random.default_rng(0), **kw)
    assert np.isnan(est.beta_hat).all() and np.isnan(est.beta_hat_mean)
    for lab in (labels, vlabels):
        np.testing.assert_array_equal(lab["corrected"], lab["biased"])
    affected = splits["valid"].groups == 1
    assert np.any(vlabels["biased"][affected] > 0)
    recipe = tiny_recipe()
    recipe = dataclasses.replace(recipe, trainer=dataclasses.replace(recipe.trainer, max_epochs=1))
    res = run_ltr(
        splits,
        conditions=("corrected",),
        recipe=recipe,
        rng=np.random.default_rng(0),
        out_dir=tmp_path,
        diagnostics=None,
        **kw,
    )
    assert np.isnan(_by(res.records, "beta_hat", "estimate")["value"])


@pytest.mark.slow
@pytest.mark.realdata
def test_ltr_regime_on_trec2020_beats_random(trec_root, monkeypatch, tmp_path):
    """Issue criterion: full, biased and corrected rankers trained for real on the TREC 2020
    features (train -> test) each beat a random ranker on test NDCG@10."""
    monkeypatch.setenv("GROUPBIAS_TREC_FAIR", str(trec_root))
    splits = gb.load_dataset("trec2020")
    test = splits["test"]
    res = run_ltr(
        splits,
        beta=0.6,
        bias=BIAS,
        estimator=GLOBAL,
        recipe=tiny_recipe(),
        rng=np.random.default_rng(0),
        seed=0,
        out_dir=tmp_path,
        dataset="TREC 2020",
    )
    rng = np.random.default_rng(1)
    random_ndcg = np.mean(
        [M.ndcg(rng.random(test.n_items), test.labels, qptr=test.qptr, k=10) for _ in range(20)]
    )
    for cond in ("full", "biased", "corrected"):
        value = _by(res.records, "ndcg@10", cond)["value"]
        assert value > random_ndcg + 0.03, (cond, value, random_ndcg)
        assert (tmp_path / cond / "test.run").exists()
        assert (tmp_path / cond / "ranker").exists()
        saved = np.load(tmp_path / cond / "test_scores.npz", allow_pickle=False)["scores"]
        np.testing.assert_array_equal(saved, res.predictions[cond])
    assert abs(_by(res.records, "beta_hat", "estimate")["value"] - 0.6) <= 0.05


def test_tabular_related_work_metrics_are_those_of_the_scores(synthetic):
    from groupbias.data.membership import membership_from_groups
    from groupbias.evaluation.fairness import awrf, texfair

    d = synthetic["train"]
    res = tab(
        d,
        0.6,
        5,
        keep_scores=True,
        metrics=["ndcg@10", "awrf@10", "texfair@10"],
        correlations=[("awrf@10", "ndcg@10")],
    )
    m = membership_from_groups(d.groups)
    for cond, scores in (("biased", res.attractiveness), ("corrected", res.corrected)):
        aw = awrf(scores, qptr=d.qptr, membership=m, k=10, reduce=None)
        tx = texfair(scores, qptr=d.qptr, membership=m, k=10, reduce=None)
        assert _by(res.records, "awrf@10", cond)["value"] == pytest.approx(np.nanmean(aw))
        assert _by(res.records, "texfair@10", cond)["value"] == pytest.approx(np.nanmean(tx))
        nd = M.ndcg(scores, d.labels, qptr=d.qptr, k=10, reduce=None)
        ok = ~np.isnan(aw) & ~np.isnan(nd)
        assert _by(res.records, "pearson(awrf@10,ndcg@10)", cond)["value"] == pytest.approx(
            scipy.stats.pearsonr(aw[ok], nd[ok])[0]
        )
    assert "p_value" in _by(res.records, "awrf@10", "corrected")


def test_correlation_of_uncomputed_metric_is_rejected(synthetic):
    with pytest.raises(ParameterError, match="correlations"):
        tab(synthetic["train"], 0.8, 0, correlations=[("texfair", "nfairr")])


def test_biased_condition_does_not_depend_on_the_estimator(synthetic, tmp_path):
    """Table 2's biased column: the biased labels (train and valid) and the biased ranker's
    test metrics are the same whichever estimator ran, although the calibrated estimator
    draws a labeled sample and a bootstrap from the run's generator (every other stage
    draws from its own child); the null check's own estimate draws from its own child too."""
    from groupbias.estimate.estimators import CalibratedKSEstimator

    splits = {
        "train": synthetic["train"].subset(np.arange(60)),
        "valid": synthetic["valid"].subset(np.arange(20)),
        "test": synthetic["test"].subset(np.arange(20)),
    }
    calibrated = CalibratedKSEstimator(labeled_fraction=0.2, bootstrap=20)
    out = {}
    for name, est in (("ks", GLOBAL), ("calibrated", calibrated)):
        out[name] = training_labels(
            splits, beta=0.8, bias=BIAS, estimator=est, rng=np.random.default_rng(4)
        )
    (lk, vk, *_), (lc, vc, *_) = out["ks"], out["calibrated"]
    np.testing.assert_array_equal(lk["biased"], lc["biased"])
    np.testing.assert_array_equal(vk["biased"], vc["biased"])  # drawn after the estimate
    assert not np.array_equal(vk["corrected"], vc["corrected"])  # β̂ differs: so may these
    import dataclasses

    recipe = tiny_recipe()
    recipe = dataclasses.replace(recipe, trainer=dataclasses.replace(recipe.trainer, max_epochs=1))
    biased = {}
    for name, est in (("ks", GLOBAL), ("calibrated", calibrated)):
        res = run_ltr(
            splits,
            beta=0.8,
            bias=BIAS,
            estimator=est,
            conditions=("biased",),
            recipe=recipe,
            rng=np.random.default_rng(4),
            out_dir=tmp_path / name,
        )
        biased[name] = {r["metric"]: r["value"] for r in res.records if r["condition"] == "biased"}
    assert biased["ks"] == biased["calibrated"]


def test_the_beta_hat_record_names_the_bias_a_corrected_estimator_subtracted():
    """A run with ``estimator.bias_correction=bootstrap``: its β̂ record carries the mean of
    the per-cluster biases the estimator subtracted; a plain run's record has no such field."""
    from data_loaders.synthetic import make_synthetic

    data = make_synthetic(n_queries=200, list_size=(10, 30), affected_share=0.35, seed=0)
    kw = dict(beta=0.6, bias=GroupBias(beta_std=0.2), diagnostics=None)
    corrected = KSEstimator(
        cluster_size=50, bias_correction="bootstrap", bias_boot=3, bias_beta_std=0.2
    )
    res = run_tabular(data, estimator=corrected, rng=np.random.default_rng(0), **kw)
    (rec,) = [r for r in res.records if r["metric"] == "beta_hat"]
    assert -0.2 < rec["bias_subtracted"] < 0  # KS errs low under σ_β = 0.2 (docs/method.md)
    plain = run_tabular(
        data, estimator=KSEstimator(cluster_size=50), rng=np.random.default_rng(0), **kw
    )
    assert all("bias_subtracted" not in r for r in plain.records)
