"""The tables of docs/method.md: Δ(EEL) under every convention, the tie rules, the KS bias
and its bootstrap correction, the estimator benchmark and the estimators' robustness."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from experiments.common import markdown

from .runs import REPO, Runs, trec_root
from .table1_trec import BETAS


def eel_scale(runs: Runs) -> str:  # noqa: ARG001 - no experiment run: the script's utilities
    """docs/method.md: Δ(EEL) of Table 1 on TREC 2020 under every convention tried."""
    from tools.eel_scale import HEADER, rows, trec2020_utilities

    return markdown(HEADER, rows(trec2020_utilities()))


def method_ties(runs: Runs) -> str:
    """The code of docs/method.md: mean β̂ − β_q per tie rule, per-query clusters."""
    import numpy as np

    from data_loaders.trec_fair import load_trec_fair_ppg
    from groupbias import GroupBias
    from groupbias.estimate.ks import estimate_beta

    rng = np.random.default_rng(0)
    data = load_trec_fair_ppg(trec_root(), 2019)
    errors: dict[str, list[str]] = {}
    for beta in BETAS:  # one generator for both: β = 0.6 simulated after β = 0.8
        sim = GroupBias().simulate(data, beta=beta, rng=rng, beta_std=0.1)
        for tie in ("largest", "middle", "smallest"):
            est = estimate_beta(
                sim.attractiveness,
                data.groups,
                qptr=data.qptr,
                rng=np.random.default_rng(1),
                cluster_size=1,
                grade_spacing=1.0,
                tie=tie,
            )
            ok = ~np.isnan(est.beta_hat_per_query)
            err = float(np.mean(est.beta_hat_per_query[ok] - sim.beta_query[ok]))
            errors.setdefault(tie, []).append(f"{err:+.3f}".replace("-", "−"))
    return markdown(["tie", "β = 0.8", "β = 0.6"], [[t, *e] for t, e in errors.items()])


#: the settings of the KS bias table of docs/method.md: (σ_β, β), and its cluster sizes
KS_BIAS_SETTINGS = ((0.0, 1.0), (0.0, 0.6), (0.2, 0.6))
KS_BIAS_SIZES = (10, 50, 200)


def ks_simulation(sigma: float, beta: float, n_queries: int = 2000):
    """``(data, simulation)`` of the ``ks_bias`` table: synthetic data of ``n_queries``
    queries of 10-60 items (graded labels, 35 % affected) simulated at ``beta`` with noise
    ``sigma`` (``tests/estimate/test_debias.py`` uses it too)."""
    import numpy as np

    from data_loaders.synthetic import make_synthetic
    from groupbias import GroupBias

    data = make_synthetic(n_queries=n_queries, list_size=(10, 60), affected_share=0.35, seed=0)
    return data, GroupBias(beta_std=sigma).simulate(data, beta=beta, rng=np.random.default_rng(1))


def ks_cluster_errors(data, sim, estimator):
    """``(β̂_c − mean β_q of c per cluster, the estimate)`` of ``estimator`` on a
    :func:`ks_simulation`."""
    import numpy as np

    est = estimator.estimate(
        sim.attractiveness,
        data.groups,
        qptr=data.qptr,
        rng=np.random.default_rng(2),
        grade_spacing=data.grade_spacing,
    )
    c = est.cluster_of_query
    truth = np.bincount(c, weights=sim.beta_query) / np.bincount(c)
    return est.beta_hat - truth, est


def ks_bias(runs: Runs) -> str:  # noqa: ARG001 - no experiment run: the code below
    """Mean ``β̂_c − mean β_q`` over the clusters, plain KS and with the bootstrap bias
    correction (20 replicates, ``bias_beta_std`` = the setting's σ_β), per queries per
    cluster (:func:`ks_cluster_errors`)."""
    import numpy as np

    from groupbias import KSEstimator

    cells: dict[int, list[str]] = {k: [] for k in KS_BIAS_SIZES}
    for sigma, beta in KS_BIAS_SETTINGS:
        data, sim = ks_simulation(sigma, beta)
        for k in KS_BIAS_SIZES:
            for correction in ("none", "bootstrap"):
                estimator = KSEstimator(
                    cluster_size=k, bias_correction=correction, bias_boot=20, bias_beta_std=sigma
                )
                errors, _ = ks_cluster_errors(data, sim, estimator)
                cells[k].append(f"{float(np.nanmean(errors)):+.3f}".replace("-", "−"))
    header = ["queries per cluster"] + [
        f"σ_β = {sg:g}, β = {b:g}: {name}"
        for sg, b in KS_BIAS_SETTINGS
        for name in ("KS", "bootstrap")
    ]
    return markdown(header, [[str(k), *cells[k]] for k in KS_BIAS_SIZES])


#: the rows of the estimator benchmark that docs/method.md shows (ratio, β)
ACCURACY_ROWS = (
    (1.0, 1.0),
    (1.0, 0.8),
    (1.0, 0.6),
    (0.8, 1.0),
    (0.8, 0.8),
    (0.6, 1.0),
    (0.6, 0.8),
    (0.6, 0.6),
)


def estimator_accuracy(runs: Runs) -> str:
    """``python benchmarks/estimator_accuracy.py``, its printed cells."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "estimator_accuracy.py")],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env=env,
    ).stdout
    printed = {}
    for line in out.splitlines():
        m = re.fullmatch(r"\s*(\d\.\d)\s+(\d\.\d)((?:\s+\d+\.\d+){3})\s*", line)
        if m:
            printed[float(m.group(1)), float(m.group(2))] = m.group(3).split()
    (worst,) = re.findall(r"^max_abs_error: (\S+)$", out, re.M)
    at = next(k for k, v in printed.items() if v[2] == worst)
    rows = [[f"{r:.1f}", f"{b:.1f}", *printed[r, b]] for r, b in ACCURACY_ROWS]
    return (
        markdown(["ratio", "β", "ks", "wasserstein", "calibrated (5 %)"], rows)
        + f"\n\n(all {len(printed)} rows are printed; the last line is `max_abs_error: {worst}`, "
        f"at ratio {at[0]:.1f} / β {at[1]:.1f}.)"
    )


def estimator_robustness(runs: Runs) -> str:
    """The Fig. 9 rows (synthetic) of ``experiment=estimator_robustness``, one repetition."""
    import numpy as np

    metrics, _ = runs.experiment("experiment=estimator_robustness", "experiment.repetitions=1")
    recs = [
        r
        for r in metrics["records"]
        if r.get("metric") == "per_query_error" and r["dataset"] == "synthetic"
    ]
    names = {"two modes": "two modes (0.6, 0.8)"}
    estimators = ("cluster KS", "per-query KS", "shrinkage")
    rows = []
    for setting in ("σ_β = 0.2", "σ_β = 0.3", "two modes"):
        vals = [
            np.mean([r["value"] for r in recs if r["setting"] == setting and r["estimator"] == e])
            for e in estimators
        ]
        rows.append([names.get(setting, setting), *(f"{v:.3f}" for v in vals)])
    return markdown(["setting", *estimators], rows)
