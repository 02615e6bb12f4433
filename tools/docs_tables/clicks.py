"""The tables of docs/clicks.md: the propensity estimates' accuracy, the rankers trained from
click logs and their paired tests, and the drift of β̂."""

from __future__ import annotations

import math

from experiments.common import markdown

from .blocks import SUPERSCRIPT, power, thousands
from .runs import Runs

#: the configuration of the propensity-accuracy table of docs/clicks.md
PROPENSITY_SEEDS = (0, 1, 2, 3, 4)
PROPENSITY_SESSIONS = (10**4, 10**5, 10**6)


def clicks_propensity(runs: Runs) -> str:
    """Largest relative error of θ̂ over the 10 positions, harvest and EM, median and worst
    of 5 seeds: 240 synthetic queries (seed 7), deterministic logging by noisy relevance
    (noise 0.3), 10 % shuffle interventions, PBM η = 1 with 2 % noise clicks, β_q ~ N(0.8,
    0.1) (the setting of ``tests/simulate/test_clicks.py``)."""
    import numpy as np

    from data_loaders.synthetic import make_synthetic
    from groupbias.estimate.propensity import estimate_propensities
    from groupbias.simulate.clicks import UserModel, simulate_click_log
    from groupbias.simulate.group_bias import draw_query_beta, relevance_from_labels

    d = make_synthetic(n_queries=240, list_size=(10, 60), seed=7)
    rel = relevance_from_labels(d.labels, label_max=4)
    scores = rel + np.random.default_rng(3).normal(0, 0.3, rel.size)
    rows = []
    for n in PROPENSITY_SESSIONS:
        errors: dict[str, list[float]] = {"harvest": [], "em": []}
        for seed in PROPENSITY_SEEDS:
            rng = np.random.default_rng(seed)
            bq = draw_query_beta(d.n_queries, beta_mean=0.8, beta_std=0.1, rng=rng)
            sim = simulate_click_log(
                rel,
                d.groups,
                qptr=d.qptr,
                logging_scores=scores,
                n_sessions=n,
                rng=rng,
                beta_query=bq,
                intervention="shuffle",
                intervention_rate=0.1,
                user=UserModel(noise=0.02),
            )
            shown, clicks = sim.log.counts(d.qptr, 10)
            for method, errs in errors.items():
                theta = estimate_propensities(shown, clicks, method=method).theta
                errs.append(float(np.max(np.abs(theta / sim.examination - 1))))
        exp = str(int(math.log10(n))).translate(SUPERSCRIPT)
        rows.append(
            [f"10{exp}"] + [f"{np.median(e):.3f} / {np.max(e):.3f}" for e in errors.values()]
        )
    return markdown(["sessions", "harvest (median / worst)", "EM (median / worst)"], rows)


#: the metrics of the clicks tables and the better direction
CLICK_METRICS = (("ndcg@10", 1), ("rho_dtr", 1), ("delta_eel", -1))


def _clicks(runs: Runs) -> list[dict]:
    metrics, _ = runs.experiment("experiment=clicks")
    return metrics["records"]


def _sessions(n: int) -> str:
    return "10" + str(int(round(math.log10(n)))).translate(SUPERSCRIPT)


def clicks_table(runs: Runs) -> str:
    recs = _clicks(runs)

    def value(n, metric, cond):
        (r,) = [
            r
            for r in recs
            if r["n_sessions"] == n and r["metric"] == metric and r["condition"] == cond
        ]
        return r["value"]

    ns = sorted({r["n_sessions"] for r in recs})
    rows = [
        ["—", "full information", *(f"{value(ns[0], m, 'full'):.4f}" for m, _ in CLICK_METRICS)]
    ]
    rows[0] += ["", ""]
    for n in ns:
        last = n == ns[-1]
        a = [f"{value(n, m, 'none'):.4f} / {value(n, m, 'position'):.4f}" for m, _ in CLICK_METRICS]
        rows.append(
            [_sessions(n), "none / position", *a, f"{value(n, 'theta_error', 'position'):.3f}", ""]
        )
        bold = "**{}**" if last else "{}"
        b = [
            f"{value(n, m, 'group'):.4f} / " + bold.format(f"{value(n, m, 'both'):.4f}")
            for m, _ in CLICK_METRICS
        ]
        beta = f"{value(n, 'beta_hat', 'group'):.3f} / {value(n, 'beta_hat', 'both'):.3f}"
        rows.append([_sessions(n), "group / " + bold.format("both"), *b, "", beta])
    head = ["sessions", "condition", "NDCG@10", "ρ(DTR)", "Δ(EEL)", "θ̂ max. rel. error", "β̂"]
    return markdown(head, rows)


def clicks_pvalues(runs: Runs) -> str:
    """``both`` against every other condition at the largest log (paired t-tests)."""
    recs = _clicks(runs)
    n = max(r["n_sessions"] for r in recs)
    at = {(r["metric"], r["condition"]): r for r in recs if r["n_sessions"] == n}
    names = {"full": "full information", "group": "group-only", "position": "position-only"}
    rows = []
    for other in ("full", "group", "position", "none"):
        row_ = [names.get(other, other)]
        for metric, _ in CLICK_METRICS:
            both = at[metric, "both"]
            diff = both["value"] - at[metric, other]["value"]
            sign = "+" if diff >= 0 else "−"
            row_.append(f"{sign}{abs(diff):.4f} (p = {power(both[f'p_vs_{other}'])})")
        rows.append(row_)
    return markdown(["", "NDCG@10", "ρ(DTR)", "Δ(EEL)"], rows)


def drift(runs: Runs) -> str:
    metrics, _ = runs.experiment("experiment=drift")
    recs = [r for r in metrics["records"] if r["dataset"] == "synthetic"]

    def get(schedule, metric):
        (r,) = [r for r in recs if r["drift"] == schedule and r["metric"] == metric]
        return r

    labels = {"step": "step at 10⁵", "linear": "linear"}
    true = {"step": "(100,000)", "linear": "(a trend, no single change)"}
    rows = []
    for schedule in ("step", "linear"):
        sliding, ewma = (get(schedule, f"mae_{k}")["value"] for k in ("sliding", "ewma"))
        mae = f"{sliding:.3f} / {ewma:.3f}"
        if schedule == "step":
            settle = (
                f"{thousands(get(schedule, 'settle_sliding')['value'])} / "
                f"{thousands(get(schedule, 'settle_ewma')['value'])} sessions"
            )
        else:
            settle = "—"
        change = get(schedule, "change_session")
        cusum = f"{thousands(change['value'])}, p = {power(change['p_value'], 1)} {true[schedule]}"
        before = get(schedule, "beta_before")["value"]
        after = get(schedule, "beta_after")["value"]
        rows.append([labels[schedule], mae, settle, cusum, f"{before:.3f} / {after:.3f}"])
    head = [
        "schedule",
        "mean abs. error, sliding / EWMA",
        "settles within 0.05 of 0.6 after the step (sliding / EWMA)",
        "CUSUM change point (true)",
        "β̂ before / after",
    ]
    return markdown(head, rows)
