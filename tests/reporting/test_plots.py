import numpy as np
import pytest

from groupbias.core.errors import ParameterError
from groupbias.reporting import plots


def _png_ok(p):
    assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cluster_size_and_degradation_plots(tmp_path):
    rng = np.random.default_rng(0)
    recs = []
    for k in (1, 10, 100):
        for _rep in range(3):
            for m in ("ndcg@10", "ndcg@10:affected", "ndcg@10:non_affected"):
                recs.append(
                    dict(
                        metric=m,
                        condition="corrected",
                        cluster_size=k,
                        value=0.9 + 0.01 * rng.random(),
                        beta=0.8,
                    )
                )
            recs.append(
                dict(
                    metric="beta_hat",
                    condition="estimate",
                    cluster_size=k,
                    value=0.8 + 0.02 * rng.standard_normal(),
                    beta=0.8,
                )
            )
    recs.append(dict(metric="ndcg@10", condition="biased", cluster_size=None, value=0.85, beta=0.8))
    out = plots.plot_cluster_size(recs, tmp_path / "fig8_beta0.8", true_beta=0.8)
    assert out["png"].name == "fig8_beta0.8.png"  # a dotted stem keeps its full name
    _png_ok(out["png"])
    assert out["pdf"].read_bytes()[:4] == b"%PDF"
    deg = [
        dict(metric=m, condition=c, beta=b, value=v, dataset="d")
        for m in ("ndcg@10", "ndcg@10:affected", "ndcg@10:non_affected", "rho_dtr", "delta_eel")
        for c, b, v in (("full", None, 1.0), ("biased", 0.8, 0.9), ("biased", 0.6, 0.8))
    ]
    _png_ok(plots.plot_degradation(deg, tmp_path / "fig5")["png"])
    bc = [
        dict(metric="ndcg@10", condition=c, beta=b, value=v, dataset=d)
        for d in ("a", "b")
        for b in (0.8, 0.6)
        for c, v in (("biased", 0.9), ("corrected", 0.99))
    ]
    _png_ok(plots.plot_biased_vs_corrected(bc, tmp_path / "fig7")["png"])


def test_plot_rejects_empty(tmp_path):
    with pytest.raises(ParameterError):
        plots.plot_cluster_size([], tmp_path / "x")


def test_ks_curve_plot_marks_the_estimate(tmp_path):
    from groupbias.estimate.ks import estimate_beta

    rng = np.random.default_rng(0)
    n_q, size = 40, 10
    qptr = np.arange(0, n_q * size + 1, size)
    g = np.tile([1.0] * 5 + [0.0] * 5, n_q)
    rel = rng.random(n_q * size)
    a = rel * np.where(g == 1, 0.7, 1.0)
    est = estimate_beta(a, g, qptr=qptr, cluster_size=10, rng=rng)
    out = plots.plot_ks_curves(est, tmp_path / "ks", true_beta=0.7)
    _png_ok(out["png"])
    with pytest.raises(ParameterError, match="ks_curve"):
        plots.plot_ks_curves(
            type(
                "E", (), {"ks_curve": np.zeros((0, 3)), "grid": np.ones(3), "beta_hat": np.zeros(0)}
            )(),
            tmp_path / "x",
        )
    curveless = type("E", (), {"ks_curve": None, "grid": None, "beta_hat": np.zeros(1)})()
    with pytest.raises(ParameterError, match="grid-search estimator"):
        plots.plot_ks_curves(curveless, tmp_path / "y")


SWEEP_METRICS = ("ndcg@10", "rho_dtr", "delta_eel")


def _sweep_records(rng, betas, reps, regimes=("tabular", "ltr")):
    recs = []
    for regime in regimes:
        for rep in range(reps):
            for m in SWEEP_METRICS:
                recs.append(
                    dict(
                        regime=regime,
                        metric=m,
                        condition="full",
                        beta=None,
                        value=float(rng.uniform(0.7, 1.0)),
                        repetition=rep,
                    )
                )
                for b in betas:
                    for c in ("biased", "corrected"):
                        recs.append(
                            dict(
                                regime=regime,
                                metric=m,
                                condition=c,
                                beta=b,
                                value=float(rng.uniform(0, 1)),
                                repetition=rep,
                            )
                        )
            # β̂ and per-group records are not drawn
            recs.append(
                dict(
                    regime=regime,
                    metric="beta_hat",
                    condition="estimate",
                    beta=0.8,
                    value=0.79,
                    repetition=rep,
                )
            )
    return recs


def test_beta_sweep_figure_one_panel_per_metric_and_regime_three_lines_each(tmp_path):
    import statistics

    from matplotlib.collections import PolyCollection

    rng = np.random.default_rng(4)
    betas = [1.0, 0.9, 0.8, 0.7, 0.6]
    recs = _sweep_records(rng, betas, reps=3)
    fig = plots.beta_sweep_figure(recs)
    assert len(fig.axes) == 6
    for ax, (regime, metric) in zip(
        fig.axes, [(r, m) for r in ("tabular", "ltr") for m in SWEEP_METRICS]
    ):
        lines = {ln.get_label(): ln for ln in ax.get_lines()}
        assert sorted(lines) == ["biased", "corrected", "full information"]
        for cond in ("biased", "corrected"):
            x, y = lines[cond].get_data()
            assert list(x) == betas
            want = [
                statistics.mean(
                    r["value"]
                    for r in recs
                    if (r["regime"], r["metric"], r["condition"], r["beta"])
                    == (regime, metric, cond, b)
                )
                for b in betas
            ]
            assert np.allclose(y, want)
        full = [
            r["value"]
            for r in recs
            if (r["regime"], r["metric"], r["condition"]) == (regime, metric, "full")
        ]
        assert np.allclose(lines["full information"].get_ydata(), statistics.mean(full))
        # the band of the full-information line spans mean ± sample s.d. of 3 repetitions
        # (the s.d. the tables show beside the same mean)
        bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
        assert len(bands) == 3
        ys = bands[0].get_paths()[0].vertices[:, 1]
        sd = statistics.stdev(full)
        assert np.isclose(ys.max(), statistics.mean(full) + sd)
        assert np.isclose(ys.min(), statistics.mean(full) - sd)
        assert ax.get_xlim()[0] > ax.get_xlim()[1]  # β decreases to the right
    out = plots.save_figure(fig, tmp_path / "sweep")
    _png_ok(out["png"])
    assert out["pdf"].read_bytes()[:4] == b"%PDF"


def test_beta_sweep_figure_one_regime_and_bad_records(tmp_path):
    rng = np.random.default_rng(1)
    fig = plots.beta_sweep_figure(_sweep_records(rng, [0.8, 0.6], reps=1, regimes=("ltr",)))
    assert len(fig.axes) == 3 and "LTR" in fig.axes[0].get_title()
    with pytest.raises(ParameterError, match="regime"):
        plots.beta_sweep_figure([dict(metric="ndcg@10", value=1.0, regime="other")])
    out = plots.plot_beta_sweep(_sweep_records(rng, [0.8], reps=2), tmp_path / "s")
    _png_ok(out["png"])


def _seed_runs(root, rng, betas=(1.0, 0.8, 0.6), seeds=(0, 1, 2)):
    """Run folders of a β sweep over seeds (as `groupbias -m ... seed=0,1,2` writes them):
    full information, biased and corrected per β, two metrics."""
    import json

    values = {}
    for seed in seeds:
        recs = []
        for metric in ("ndcg@10", "rho_dtr"):
            for b in betas:
                for cond in ("full", "biased", "corrected"):
                    v = round(float(rng.uniform(0, 1)), 6)
                    values[(seed, metric, cond, b)] = v
                    recs.append(dict(regime="tabular", dataset="synthetic", metric=metric,
                                     condition=cond, beta=b, value=v, seed=seed))  # fmt: skip
        folder = root / f"seed={seed}"
        folder.mkdir(parents=True)
        (folder / "meta.json").write_text(json.dumps({"status": "complete", "seed": seed}))
        (folder / "metrics.json").write_text(json.dumps({"records": recs}))
    return values


def test_the_report_draws_full_biased_and_corrected_against_beta(tmp_path):
    """The report's degradation figure of a 3-seed β sweep: three curves per metric (full
    information, biased, corrected), each the mean over seeds with the sample s.d.; the
    numbers by hand from the records."""
    import statistics

    import pandas as pd

    from groupbias.reporting.aggregate import main as report_main

    values = _seed_runs(tmp_path / "runs", np.random.default_rng(3))
    assert report_main([str(tmp_path / "runs"), "--out", str(tmp_path / "r")]) == 0
    _png_ok(tmp_path / "r" / "degradation_tabular.png")
    records = pd.read_parquet(tmp_path / "r" / "records.parquet")
    betas = [1.0, 0.8, 0.6]
    curves = plots.sweep_curves(records[records["metric"] == "rho_dtr"], betas)
    assert sorted(set(curves["condition"])) == ["biased", "corrected", "full"]
    for row in curves.itertuples():
        if row.condition == "full":  # one line over β: per seed the mean of its records
            got = [
                statistics.mean(values[(s, "rho_dtr", "full", b)] for b in betas) for s in (0, 1, 2)
            ]
        else:
            got = [values[(s, "rho_dtr", row.condition, row.beta)] for s in (0, 1, 2)]
        assert row.mean == pytest.approx(statistics.mean(got), abs=1e-12)
        assert row.sd == pytest.approx(statistics.stdev(got), abs=1e-12)
        assert row.n == len(got)
    # a condition without records has no curve and no legend entry
    fig = plots.beta_sweep_figure(records[records["condition"] != "corrected"])
    labels = {ln.get_label() for ax in fig.axes for ln in ax.get_lines()}
    assert labels == {"full information", "biased"}
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert texts[:2] == ["full information", "biased"] and len(texts) == 3
    assert texts[2] == "line: mean; band: ± 1 s.d. (sample); n = 3 seeds"


def test_axes_stay_within_the_range_a_metric_is_registered_with():
    """NDCG and ρ(DTR) lie in [0, 1], Δ(EEL) in [0, ∞) (docs/metrics.md); a user metric
    declares its range, an undeclared one has none; a range with lowest >= highest is
    refused."""
    from groupbias.core.registry import METRICS
    from groupbias.evaluation.catalog import bounds_of, metric_info

    assert bounds_of("ndcg@10:affected") == (0.0, 1.0) and bounds_of("nDCG") == (0.0, 1.0)
    assert bounds_of("rho_dtr") == (0.0, 1.0) and bounds_of("delta_eel") == (0.0, None)
    assert bounds_of("unregistered") == (None, None)

    @metric_info(bounds=(-1.0, 1.0))
    def tilt(scores, spec, *, regime, k, group, **options):  # pragma: no cover - not run
        raise AssertionError

    METRICS.register("tilt", tilt, replace=True)
    assert bounds_of("tilt@5") == (-1.0, 1.0)
    with pytest.raises(ParameterError, match="bounds"):
        metric_info(bounds=(1.0, 1.0))
    # a sweep whose bands would pass 1 keeps the NDCG axis and bands within [0, 1]
    recs = [
        dict(regime="tabular", metric="ndcg@10", condition=c, beta=b, value=v, seed=s)
        for s, bump in enumerate((0.0, 0.02, 0.04))
        for b in (1.0, 0.8, 0.6)
        for c, v in (("biased", 0.95 - bump - (1 - b) / 4), ("corrected", 1.0 - bump * b))
    ]
    fig = plots.beta_sweep_figure(recs, metrics=("ndcg@10",))
    ax = fig.axes[0]
    assert 0.0 <= ax.get_ylim()[0] < ax.get_ylim()[1] <= 1.0
    for band in ax.collections:
        assert band.get_paths()[0].vertices[:, 1].max() <= 1.0


def test_cluster_size_figure_shows_biased_over_corrected_and_says_what_the_band_is(
    tmp_path, monkeypatch
):
    """The cluster-size figure of 2 seeds × 3 repetitions: per group a colour and marker of
    its own; the biased level dashed, drawn over the corrected line (once hidden under it
    where they meet), and in the legend; the band ± 1 sample s.d. with n = 6 said; the
    NDCG axis within [0, 1]; PNG, PDF and SVG."""
    from matplotlib.colors import to_hex

    rng = np.random.default_rng(2)
    recs = []
    for seed in (0, 1):
        for rep in range(3):
            key = dict(seed=seed, repetition=rep, beta=0.8)
            levels = (("ndcg@10", 0.99), ("ndcg@10:affected", 0.8), ("ndcg@10:non_affected", 0.95))
            for m, level in levels:
                recs.append(dict(key, metric=m, condition="biased", cluster_size=1, value=level))
                for k in (1, 10, 100):
                    v = min(1.0, level + 0.01 * rng.random())
                    recs.append(dict(key, metric=m, condition="corrected", cluster_size=k, value=v))
            for k in (1, 10, 100):
                recs.append(dict(key, metric="beta_hat", condition="estimate", cluster_size=k,
                                 value=0.8 + 0.02 * rng.standard_normal()))  # fmt: skip
    figures = []
    save = plots.save_figure
    monkeypatch.setattr(plots, "save_figure", lambda f, stem: figures.append(f) or save(f, stem))
    out = plots.plot_cluster_size(recs, tmp_path / "cs", true_beta=0.8)
    assert sorted(out) == ["pdf", "png", "svg"]
    assert out["svg"].read_text().lstrip().startswith("<?xml")
    ax = figures[0].axes[0]
    solid = [ln for ln in ax.get_lines() if ln.get_linestyle() == "-"]
    dashed = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    assert len(solid) == len(dashed) == 3
    assert len({ln.get_marker() for ln in solid}) == 3
    assert len({to_hex(ln.get_color()) for ln in solid}) == 3
    for line, level in zip(dashed, (0.99, 0.8, 0.95), strict=True):
        assert np.allclose(line.get_ydata(), level)
        assert all(line.get_zorder() > s.get_zorder() for s in solid)
    overall = [r["value"] for r in recs if r["metric"] == "ndcg@10" and r["cluster_size"] == 10
               and r["condition"] == "corrected"]  # fmt: skip
    assert len(overall) == 6 and np.isclose(solid[0].get_ydata()[1], np.mean(overall))
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "biased" in texts and "corrected (mean)" in texts
    assert "± 1 s.d.; n = 6 runs (seeds × repetitions)" in texts
    assert 0.0 <= ax.get_ylim()[0] < ax.get_ylim()[1] <= 1.0
