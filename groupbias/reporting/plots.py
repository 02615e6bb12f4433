"""Figures with the paper's axes, drawn from tidy result records (matplotlib, Agg).

Record keys used here: ``metric`` (e.g. ``"ndcg@10"``, ``"ndcg@10:affected"``,
``"ndcg@10:non_affected"``, ``"rho_dtr"``, ``"delta_eel"``, ``"beta_hat"``), ``condition``
(``"full"``, ``"biased"``, ``"corrected"``, ``"estimate"``), ``value``, ``beta`` and, where
relevant, ``dataset``, ``regime``, ``cluster_size``, ``variant``. Every function writes PNG
and PDF (atomically) and returns the paths.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ..core.errors import ParameterError  # noqa: E402
from ..core.io import write_bytes_atomic  # noqa: E402

GROUP_SERIES = (
    ("ndcg@10", "overall", "tab:red"),
    ("ndcg@10:affected", "affected group", "black"),
    ("ndcg@10:non_affected", "non-affected group", "goldenrod"),
)


def _frame(records) -> pd.DataFrame:
    df = records if isinstance(records, pd.DataFrame) else pd.DataFrame(list(records))
    if df.empty or not {"metric", "value"}.issubset(df.columns):
        raise ParameterError(
            "records", "non-empty records with 'metric' and 'value'", f"{len(df)} records"
        )
    return df


def save_figure(fig, stem: str | os.PathLike) -> dict[str, Path]:
    """Save ``fig`` as ``stem.png`` and ``stem.pdf`` atomically and close it; the figure's
    title (``suptitle``) becomes the files' Title metadata."""
    stem = Path(stem)
    out = {}
    title = fig.get_suptitle()
    for ext in ("png", "pdf"):
        buf = io.BytesIO()
        meta = {"Title": title} if title else None
        fig.savefig(buf, format=ext, dpi=150, bbox_inches="tight", metadata=meta)
        out[ext] = write_bytes_atomic(stem.parent / f"{stem.name}.{ext}", buf.getvalue())
    plt.close(fig)
    return out


def plot_degradation(
    records: Iterable[Mapping] | pd.DataFrame, stem: str | os.PathLike, *, title: str | None = None
) -> dict[str, Path]:
    """Paper Fig. 2 / 5 / 6: metrics under group bias against the underestimation factor β.

    Left: NDCG@10 overall / affected / non-affected as grouped bars per β (β = 1 is the
    full-information case). Right: ρ(DTR) and Δ(EEL) per β (mean over setups, with the
    spread over setups as error bars when several are present).
    """
    df = _frame(records)
    df = df[df["condition"].isin(["full", "biased"])].copy()
    df.loc[df["condition"] == "full", "beta"] = 1.0
    betas = sorted(df["beta"].dropna().astype(float).unique(), reverse=True)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    width = 0.8 / len(GROUP_SERIES)
    x = np.arange(len(betas))
    for j, (metric, label, color) in enumerate(GROUP_SERIES):
        stats = [
            df[(df["metric"] == metric) & (df["beta"].astype(float) == b)]["value"] for b in betas
        ]
        axes[0].bar(
            x + (j - 1) * width,
            [s.mean() for s in stats],
            width,
            yerr=[s.std(ddof=0) if len(s) > 1 else 0 for s in stats],
            label=label,
            color=color,
            alpha=0.85,
        )
    axes[0].set_xticks(x, [f"{b:g}" for b in betas])
    axes[0].set_xlabel("group underestimation factor β")
    axes[0].set_ylabel("NDCG@10")
    axes[0].legend(fontsize=8, loc="lower left", framealpha=0.9)
    for ax, metric, label in ((axes[1], "rho_dtr", "ρ(DTR)"), (axes[2], "delta_eel", "Δ(EEL)")):
        stats = [
            df[(df["metric"] == metric) & (df["beta"].astype(float) == b)]["value"] for b in betas
        ]
        ax.bar(
            x,
            [s.mean() for s in stats],
            0.6,
            yerr=[s.std(ddof=0) if len(s) > 1 else 0 for s in stats],
            color="tab:blue",
        )
        ax.set_xticks(x, [f"{b:g}" for b in betas])
        ax.set_xlabel("group underestimation factor β")
        ax.set_ylabel(label)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, stem)


def plot_biased_vs_corrected(
    records: Iterable[Mapping] | pd.DataFrame,
    stem: str | os.PathLike,
    *,
    metric: str = "ndcg@10",
    title: str | None = None,
) -> dict[str, Path]:
    """Paper Fig. 7: ``metric`` of biased (left) and corrected (right) scores per setup and β."""
    df = _frame(records)
    df = df[df["metric"] == metric]
    setups = list(dict.fromkeys(df["dataset"]))
    betas = sorted(df["beta"].dropna().astype(float).unique(), reverse=True)
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.8), sharey=True)
    width = 0.8 / max(len(betas), 1)
    x = np.arange(len(setups))
    for ax, cond in zip(axes, ("biased", "corrected")):
        for j, b in enumerate(betas):
            sub = df[(df["condition"] == cond) & (df["beta"].astype(float) == b)]
            vals = [sub[sub["dataset"] == s]["value"].mean() for s in setups]
            ax.bar(x + (j - (len(betas) - 1) / 2) * width, vals, width, label=f"β = {b:g}")
        ax.set_xticks(x, setups, rotation=60, ha="right", fontsize=7)
        ax.set_title(cond)
        ax.set_ylabel(metric.upper().replace("NDCG", "NDCG"))
        ax.legend(fontsize=8)
    lo = np.nanmin(df["value"].to_numpy(dtype=float)) if len(df) else 0.0
    axes[0].set_ylim(max(0.0, lo - 0.05), 1.005)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, stem)


def plot_cluster_size(
    records: Iterable[Mapping] | pd.DataFrame,
    stem: str | os.PathLike,
    *,
    true_beta: float | None = None,
    title: str | None = None,
    series: Sequence[tuple[str, str, str]] = GROUP_SERIES,
) -> dict[str, Path]:
    """Paper Fig. 8 / 9: corrected NDCG@10 (overall / affected / non-affected) against the
    cluster size (log axis) with mean ± std bands over repetitions, biased levels as dashed
    reference lines; right panel: β̂ mean ± std against the cluster size."""
    df = _frame(records)
    if "cluster_size" not in df.columns:
        raise ParameterError("records", "records with a 'cluster_size' key", list(df.columns))
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    cor = df[df["condition"] == "corrected"]
    for metric, label, color in series:
        sub = cor[cor["metric"] == metric].groupby("cluster_size")["value"]
        m, s = sub.mean(), sub.std(ddof=0).fillna(0.0)
        if m.empty:
            continue
        axes[0].plot(m.index, m.values, "-o", color=color, label=label, ms=3)
        axes[0].fill_between(m.index, m - s, m + s, color=color, alpha=0.2)
        bias = df[(df["condition"] == "biased") & (df["metric"] == metric)]["value"]
        if len(bias):
            axes[0].axhline(bias.mean(), color=color, ls="--", lw=1)
    axes[0].set_xscale("log")
    axes[0].set_xlabel("cluster size (queries)")
    axes[0].set_ylabel("NDCG@10 (corrected; dashed: biased)")
    axes[0].legend(fontsize=8)
    est_df = df[df["metric"] == "beta_hat"]
    est = est_df.groupby("cluster_size")
    m = est["value"].mean()
    # band: the spread of β̂ over clusters when recorded ("std"), else over repetitions
    if "std" in est_df.columns and est_df["std"].notna().any():
        s = est["std"].mean().fillna(0.0)
    else:
        s = est["value"].std(ddof=0).fillna(0.0)
    if not m.empty:
        axes[1].plot(m.index, m.values, "-o", color="tab:blue", ms=3, label="β̂")
        axes[1].fill_between(m.index, m - s, m + s, color="tab:blue", alpha=0.2)
    if true_beta is not None:
        axes[1].axhline(true_beta, color="gray", ls="--", lw=1, label="true β")
    axes[1].set_xscale("log")
    axes[1].set_xlabel("cluster size (queries)")
    axes[1].set_ylabel("inferred group propensity β̂")
    axes[1].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, stem)


def plot_ks_curves(
    estimate,
    stem: str | os.PathLike,
    *,
    clusters: Sequence[int] | None = None,
    true_beta: float | None = None,
    title: str | None = None,
) -> dict[str, Path]:
    """The KS statistic of Eq. (14) against the candidate β for some clusters of a
    :class:`groupbias.estimate.ks.BetaEstimate` (default: up to 8 clusters), with each
    cluster's β̂ marked (and the true β dashed when given)."""
    curves = np.asarray(estimate.ks_curve, dtype=np.float64)
    grid = np.asarray(estimate.grid, dtype=np.float64)
    if curves.ndim != 2 or curves.shape[1] != grid.size or curves.shape[0] == 0:
        raise ParameterError("estimate.ks_curve", "[n_clusters, n_grid] KS values", curves.shape)
    idx = list(range(min(8, curves.shape[0]))) if clusters is None else list(clusters)
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for c in idx:
        (line,) = ax.plot(grid, curves[c], lw=1.2, label=f"cluster {c}")
        bh = float(estimate.beta_hat[c])
        if np.isfinite(bh):
            ax.plot(
                [bh], [curves[c][np.argmin(np.abs(grid - bh))]], "o", ms=4, color=line.get_color()
            )
    if true_beta is not None:
        ax.axvline(true_beta, color="gray", ls="--", lw=1, label="true β")
    ax.set_xlabel("candidate β")
    ax.set_ylabel("KS(A_A / β, A_N)")
    ax.legend(fontsize=7, ncol=2)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return save_figure(fig, stem)


#: the lines of :func:`beta_sweep_figure`: condition, legend label, colour, line style
SWEEP_LINES = (
    ("full", "full information", "black", "--"),
    ("biased", "biased", "tab:red", "-"),
    ("corrected", "corrected", "tab:blue", "-"),
)
REGIME_TITLES = {"tabular": "tabular regime", "ltr": "LTR regime"}


def _mean_sd(values: pd.Series) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof 1; 0 for one value), as the tables show."""
    v = values.to_numpy(dtype=np.float64)
    v = v[np.isfinite(v)]
    if not v.size:
        return float("nan"), float("nan")
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


def sweep_curves(df: pd.DataFrame, betas: Sequence[float]) -> pd.DataFrame:
    """The lines of one panel of :func:`beta_sweep_figure`: one row per condition present
    (full information, biased, corrected) and β of ``betas``, with ``mean``, ``sd``
    (sample, ddof 1; 0 for one value) and ``n`` of ``value`` over the replicates (seeds,
    repetitions). Full information does not depend on β: one value per replicate (its
    records' mean: a run may repeat it at every β), at every β. A condition without records
    has no rows (and no legend entry)."""
    rows = []
    replicate = [c for c in ("root", "run", "seed", "repetition") if c in df.columns]
    for cond, *_ in SWEEP_LINES:
        sub = df[df["condition"] == cond]
        if sub.empty:
            continue
        if cond == "full" and replicate:
            keys = sub[replicate].astype(str)
            sub = sub.groupby([keys[c] for c in replicate])[["value"]].mean()
        for b in betas:
            at = sub if cond == "full" else sub[(sub["beta"].astype(float) - b).abs() < 1e-9]
            m, sd = _mean_sd(at["value"])
            n = int(np.isfinite(at["value"].to_numpy(dtype=np.float64)).sum())
            rows.append({"condition": cond, "beta": float(b), "mean": m, "sd": sd, "n": n})
    return pd.DataFrame(rows, columns=["condition", "beta", "mean", "sd", "n"])


def _sweep_panel(ax, df: pd.DataFrame, betas: list[float]) -> None:
    """Full information (flat: it does not depend on β), biased and corrected against β, each
    the mean over repetitions with a ± 1 s.d. band (:func:`sweep_curves`)."""
    curves = sweep_curves(df, betas)
    for cond, label, color, style in SWEEP_LINES:
        line = curves[curves["condition"] == cond]
        if line.empty:
            continue
        means, sds = line["mean"].to_numpy(), line["sd"].to_numpy()
        ax.plot(
            betas, means, style, color=color, label=label, marker="o", ms=4 if cond != "full" else 2
        )
        ax.fill_between(betas, means - sds, means + sds, color=color, alpha=0.15, lw=0)


def beta_sweep_figure(
    records: Iterable[Mapping] | pd.DataFrame,
    *,
    metrics: Sequence[str] = ("ndcg@10", "rho_dtr", "delta_eel"),
    title: str | None = None,
):
    """The degradation-and-recovery picture (paper Figs. 2, 5-7 in one): one row per regime
    present (tabular, LTR), one panel per metric, each with three lines against β — full
    information, biased and corrected — as the mean over the records' repetitions with a ±1
    s.d. band (sample s.d., as :func:`groupbias.reporting.tables.paper_table` shows). β
    decreases to the right. Records: ``regime``, ``metric``, ``condition``,
    ``value``, ``beta`` (None for full information). Returns the matplotlib figure."""
    from .tables import column_label

    df = _frame(records)
    regimes = [r for r in REGIME_TITLES if r in set(df.get("regime", pd.Series(dtype=str)))]
    if not regimes:
        raise ParameterError(
            "records", "records of the tabular or ltr regime", sorted(set(df.get("regime", [])))
        )
    fig, axes = plt.subplots(
        len(regimes),
        len(metrics),
        figsize=(3.6 * len(metrics), 0.5 + 2.7 * len(regimes)),
        squeeze=False,
        layout="constrained",
    )
    for i, regime in enumerate(regimes):
        sub = df[(df["regime"] == regime) & df["condition"].isin(["biased", "corrected"])]
        betas = sorted({float(b) for b in sub["beta"].dropna()}, reverse=True)
        for j, metric in enumerate(metrics):
            ax = axes[i][j]
            _sweep_panel(ax, df[(df["regime"] == regime) & (df["metric"] == metric)], betas)
            ax.set_xticks(betas, [f"{b:.1f}" if round(b, 1) == b else f"{b:g}" for b in betas])
            if betas:
                pad = 0.03 * max(betas[0] - betas[-1], 0.1)
                ax.set_xlim(betas[0] + pad, betas[-1] - pad)  # β decreases to the right
            ax.set_title(f"{REGIME_TITLES[regime]}: {column_label(metric)}", fontsize=10)
            ax.grid(alpha=0.3)
            if i == len(regimes) - 1:
                ax.set_xlabel("group underestimation factor β")
    if title:
        fig.suptitle(title)
    shown: dict = {}  # every condition drawn somewhere, once
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            shown.setdefault(label, handle)
    fig.legend(list(shown.values()), list(shown), loc="outside lower center", ncol=3, frameon=False)
    return fig


def plot_beta_sweep(
    records: Iterable[Mapping] | pd.DataFrame,
    stem: str | os.PathLike,
    *,
    metrics: Sequence[str] = ("ndcg@10", "rho_dtr", "delta_eel"),
    title: str | None = None,
) -> dict[str, Path]:
    """:func:`beta_sweep_figure` written as ``stem.png`` and ``stem.pdf``."""
    return save_figure(beta_sweep_figure(records, metrics=metrics, title=title), stem)


def plot_robustness(
    records: Iterable[Mapping] | pd.DataFrame,
    stem: str | os.PathLike,
    *,
    title: str | None = None,
    rows: Sequence[tuple[str, str, str]] = (
        ("abs_error", "estimate", "|β̂ − β|"),
        ("rho_dtr", "corrected", "ρ(DTR), corrected"),
        ("delta_eel", "corrected", "Δ(EEL), corrected"),
    ),
) -> dict[str, Path]:
    """Estimator robustness: one row per quantity of ``rows`` against the utility ratio, one
    column per β, one line per estimator (mean ± std over repetitions); the biased value of a
    metric is the dashed black line."""
    df = _frame(records)
    for col in ("ratio", "estimator", "beta"):
        if col not in df.columns:
            raise ParameterError("records", f"records with a {col!r} key", list(df.columns))
    betas = sorted(df["beta"].dropna().unique(), reverse=True)
    names = list(dict.fromkeys(df["estimator"].dropna()))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, axes = plt.subplots(
        len(rows), len(betas), figsize=(3.4 * len(betas), 2.6 * len(rows)), squeeze=False
    )
    for j, beta in enumerate(betas):
        at = df[np.isclose(df["beta"].astype(float), float(beta))]
        for i, (metric, cond, label) in enumerate(rows):
            ax = axes[i, j]
            sub = at[at["metric"] == metric]
            for k, name in enumerate(names):
                g = sub[(sub["estimator"] == name) & (sub["condition"] == cond)]
                g = g.groupby("ratio")["value"]
                m, s = g.mean(), g.std(ddof=0).fillna(0.0)
                if m.empty:
                    continue
                c = colors[k % len(colors)]
                ax.plot(m.index, m.values, "-o", ms=3, color=c, label=name)
                ax.fill_between(m.index, m - s, m + s, color=c, alpha=0.15)
            biased = sub[sub["condition"] == "biased"].groupby("ratio")["value"].mean()
            if not biased.empty:
                ax.plot(biased.index, biased.values, "--", color="black", lw=1, label="biased")
            ax.invert_xaxis()
            if i == 0:
                ax.set_title(f"β = {beta:g}")
            if j == 0:
                ax.set_ylabel(label)
            if i == len(rows) - 1:
                ax.set_xlabel("utility ratio (affected / non-affected)")
    axes[0, 0].legend(fontsize=7)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, stem)


def plot_fig9_errors(records: Iterable[Mapping] | pd.DataFrame, stem) -> dict[str, Path]:
    """Per-query error ``mean_q |β̂_q − β_q|`` per heterogeneity setting (groups of bars, one
    bar per estimator, ± std over repetitions)."""
    df = _frame(records)
    settings = list(dict.fromkeys(df["setting"]))
    names = list(dict.fromkeys(df["estimator"]))
    fig, ax = plt.subplots(figsize=(1.8 + 1.6 * len(settings), 3.2))
    width = 0.8 / max(len(names), 1)
    for k, name in enumerate(names):
        g = df[df["estimator"] == name].groupby("setting")["value"]
        m = g.mean().reindex(settings)
        s = g.std(ddof=0).reindex(settings).fillna(0.0)
        x = np.arange(len(settings)) + (k - (len(names) - 1) / 2) * width
        ax.bar(x, m.values, width, yerr=s.values, label=name, capsize=2)
    ax.set_xticks(np.arange(len(settings)), settings)
    ax.set_ylabel("mean |β̂_q − β_q|")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return save_figure(fig, stem)
