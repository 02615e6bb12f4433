"""The bootstrap bias correction of the KS estimate (groupbias.estimate.debias)."""

from __future__ import annotations

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from groupbias.app.cli import CONFIG_DIR
from groupbias.app.config import build_setup
from groupbias.core.errors import ParameterError
from groupbias.estimate.debias import equal_merit_draw
from groupbias.estimate.estimators import (
    CalibratedKSEstimator,
    KSEstimator,
    ShrinkageEstimator,
)
from tools.docs_tables import ks_cluster_errors, ks_simulation


def test_equal_merit_draw_replaces_positives_by_non_affected_positives_of_the_cluster():
    """Cluster 0 (items 0-5): non-affected positives 0.2 and 0.6, so every positive score
    becomes one of them; zeros stay zero. Cluster 1 (items 6-7) has no non-affected positive:
    its positive score becomes zero (nothing to draw from)."""
    a = np.array([0.2, 0.0, 0.6, 0.3, 0.0, 0.9, 0.5, 0.0])
    affected = np.array([0, 0, 0, 1, 1, 1, 1, 0], dtype=bool)
    cluster = np.array([0, 0, 0, 0, 0, 0, 1, 1])
    seen = set()
    for seed in range(40):
        out = equal_merit_draw(a, affected, cluster, 2, np.random.default_rng(seed))
        assert out[[1, 4, 7]].tolist() == [0.0, 0.0, 0.0]
        assert out[6] == 0.0
        assert set(out[[0, 2, 3, 5]].tolist()) <= {0.2, 0.6}
        seen.update(out[[0, 2, 3, 5]].tolist())
    assert seen == {0.2, 0.6}


def test_bootstrap_bias_correction_removes_the_ks_bias_at_200_queries_per_cluster():
    """σ_β = 0.2, β = 0.6, clusters of 200 queries: the affected scores of a cluster are a
    scale mixture, and plain KS lands below the clusters' mean β_q (measured −0.037 on
    average, |error| ≥ 0.02); the bootstrap at β̂ with the run's σ_β removes it (measured
    mean |error| 0.006)."""
    data, sim = ks_simulation(0.2, 0.6)
    plain, _ = ks_cluster_errors(data, sim, KSEstimator(cluster_size=200))
    corrected, est = ks_cluster_errors(
        data,
        sim,
        KSEstimator(cluster_size=200, bias_correction="bootstrap", bias_boot=20, bias_beta_std=0.2),
    )
    assert plain.size == corrected.size == 10
    assert np.mean(np.abs(plain)) >= 0.02 and np.mean(plain) <= -0.02
    assert np.mean(np.abs(corrected)) <= 0.01
    assert np.all(est.info["bias"] < 0)  # what it subtracted, per cluster
    np.testing.assert_allclose(est.beta_hat, est.info["beta_hat_plain"] - est.info["bias"])


def test_bias_correction_off_leaves_the_estimate_bit_for_bit():
    data, sim = ks_simulation(0.1, 0.8, n_queries=400)
    a, _ = ks_cluster_errors(data, sim, KSEstimator(cluster_size=200))
    b, _ = ks_cluster_errors(data, sim, KSEstimator(cluster_size=200, bias_correction="none"))
    assert np.array_equal(a, b)


def test_bias_correction_options_are_checked_and_reach_the_estimator(tmp_path):
    for bad in ({"bias_correction": "jackknife"}, {"bias_boot": 0}, {"bias_beta_std": -0.1}):
        with pytest.raises(ParameterError, match=next(iter(bad))):
            KSEstimator(**bad)
    for other in (CalibratedKSEstimator, ShrinkageEstimator):
        with pytest.raises(ParameterError, match="bias_correction"):
            other(bias_correction="bootstrap")
    overrides = [
        "experiment=table1",
        f"paths.runs={tmp_path}",
        "experiment.datasets=[synthetic]",
        "estimator.bias_correction=bootstrap",
        "estimator.bias_boot=7",
        "estimator.bias_beta_std=0.1",
    ]
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    est = build_setup(cfg)[0].estimator
    assert (est.bias_correction, est.bias_boot, est.bias_beta_std) == ("bootstrap", 7, 0.1)
