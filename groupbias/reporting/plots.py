"""Figures with the paper's axes, drawn from tidy result records (matplotlib, Agg).

Record keys used here: ``metric`` (e.g. ``"ndcg@10"``, ``"ndcg@10:affected"``,
``"ndcg@10:non_affected"``, ``"rho_dtr"``, ``"delta_eel"``, ``"beta_hat"``), ``condition``
(``"full"``, ``"biased"``, ``"corrected"``, ``"estimate"``), ``value``, ``beta`` and, where
relevant, ``dataset``, ``regime``, ``cluster_size``, ``variant``. Every function writes PNG,
PDF and SVG (atomically) and returns the paths.

Ready for a paper: colours of the Okabe–Ito palette (told apart with the common forms of
colour blindness), and lines that differ in marker and line style too (told apart in
grayscale, and where they coincide); axes within the range each metric can take
(:func:`groupbias.evaluation.catalog.bounds_of`); PDF with TrueType (Type 42) fonts, which
publishers' checks accept where Type 3 fonts are refused.
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
from matplotlib.patches import Patch  # noqa: E402

from ..core.errors import ParameterError  # noqa: E402
from ..core.io import write_bytes_atomic  # noqa: E402
from ..evaluation.catalog import bounds_of  # noqa: E402

#: the colours used, of the Okabe–Ito palette (Okabe & Ito, "Color Universal Design", 2008)
BLACK, ORANGE, BLUE, VERMILLION = "#000000", "#E69F00", "#0072B2", "#D55E00"

#: the per-group series (cluster-size and bar figures): metric, legend label, colour, marker
GROUP_SERIES = (
    ("ndcg@10", "overall", VERMILLION, "o"),
    ("ndcg@10:affected", "affected group", BLACK, "^"),
    ("ndcg@10:non_affected", "non-affected group", ORANGE, "s"),
)
#: what :func:`save_figure` writes
FORMATS = ("png", "pdf", "svg")


def _frame(records) -> pd.DataFrame:
    df = records if isinstance(records, pd.DataFrame) else pd.DataFrame(list(records))
    if df.empty or not {"metric", "value"}.issubset(df.columns):
        raise ParameterError(
            "records", "non-empty records with 'metric' and 'value'", f"{len(df)} records"
        )
    return df


def save_figure(fig, stem: str | os.PathLike) -> dict[str, Path]:
    """Save ``fig`` as ``stem.png``, ``stem.pdf`` and ``stem.svg`` atomically and close it;
    the figure's title (``suptitle``) becomes the files' Title metadata. Fonts are embedded
    as TrueType (PDF); the SVG has no date and the same ids from run to run."""
    stem = Path(stem)
    out = {}
    title = fig.get_suptitle()
    with plt.rc_context({"pdf.fonttype": 42, "ps.fonttype": 42, "svg.hashsalt": "groupbias"}):
        for ext in FORMATS:
            buf = io.BytesIO()
            meta = {"Title": title} if title else {}
            if ext == "svg":
                meta["Date"] = None
            fig.savefig(buf, format=ext, dpi=150, bbox_inches="tight", metadata=meta or None)
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
    for j, (metric, label, color, _) in enumerate(GROUP_SERIES):
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
    series: Sequence[tuple[str, str, str, str]] = GROUP_SERIES,
) -> dict[str, Path]:
    """Paper Fig. 8 / 9: corrected NDCG@10 (overall / affected / non-affected) against the
    cluster size (log axis) with mean ± 1 s.d. (sample) bands over the replicates, the
    biased levels as dashed lines over them (and full information dotted, where recorded);
    right panel: β̂ against the cluster size. Each group has its colour and marker; the
    legends say what line styles and bands are, and n."""
    df = _frame(records)
    if "cluster_size" not in df.columns:
        raise ParameterError("records", "records with a 'cluster_size' key", list(df.columns))
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    _cluster_panel(axes[0], df, series)
    _beta_hat_panel(axes[1], df, true_beta)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, stem)


def _mean_band(values) -> tuple[pd.Series, pd.Series, pd.Series]:
    """Per group of ``values`` (a grouped Series): mean, sample s.d. (0 for one) and n."""
    return values.mean(), values.std(ddof=1).fillna(0.0), values.count()


def _cluster_panel(ax, df: pd.DataFrame, series) -> None:
    """The left panel of :func:`plot_cluster_size`: per group the corrected line and band,
    the biased level dashed (drawn over the corrected line: where they meet both show) and
    full information dotted."""
    from matplotlib.lines import Line2D

    cor, n = df[df["condition"] == "corrected"], pd.Series(dtype=int)
    styles = {"biased": ("--", 3), "full": (":", 4)}
    drawn = set()
    lo, hi = bounds_of(series[0][0]) if series else (None, None)
    handles: list = []  # the legend's: groups, line styles, the band
    for metric, label, color, marker in series:
        m, sd, n_k = _mean_band(cor[cor["metric"] == metric].groupby("cluster_size")["value"])
        if m.empty:
            continue
        n = pd.concat([n, n_k])
        ax.plot(m.index, m.values, "-", marker=marker, color=color, ms=5, clip_on=False, zorder=2)
        band = np.array([m - sd, m + sd])
        band = np.clip(band, lo, hi) if lo is not None or hi is not None else band
        ax.fill_between(m.index, *band, color=color, alpha=0.18, lw=0, zorder=1)
        handles.append(Line2D([], [], color=color, marker=marker, ms=5, label=label))
        for cond, (ls, z) in styles.items():
            level = df[(df["condition"] == cond) & (df["metric"] == metric)]["value"]
            if len(level):
                ax.axhline(level.mean(), color=color, ls=ls, lw=1.3, zorder=z)
                drawn.add(cond)
    handles.append(Line2D([], [], color="0.3", ls="-", label="corrected (mean)"))
    for cond, name in (("biased", "biased"), ("full", "full information")):
        if cond in drawn:
            handles.append(Line2D([], [], color="0.3", ls=styles[cond][0], label=name))
    if len(n):
        unit = replicate_unit(cor)
        counts = f"{n.min()}" if n.min() == n.max() else f"{n.min()}–{n.max()}"
        handles.append(Patch(color="0.6", alpha=0.4, label=f"± 1 s.d.; n = {counts} {unit}"))
    ax.set_xscale("log")
    ax.set_xlabel("cluster size (queries)")
    ax.set_ylabel("NDCG@10")
    within_bounds(ax, lo, hi)
    # below the axes: the lines run anywhere in [0, 1], so no corner is free for sure
    ax.legend(
        handles=handles,
        fontsize=7.5,
        ncol=3,
        frameon=False,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.26),
    )


def _beta_hat_panel(ax, df: pd.DataFrame, true_beta: float | None) -> None:
    """The right panel of :func:`plot_cluster_size`: β̂ against the cluster size, mean over
    the replicates with a band of the spread of β̂ over the clusters (the records' ``std``,
    averaged) where recorded, else ± 1 s.d. over the replicates; the true β dashed."""
    est_df = df[df["metric"] == "beta_hat"]
    est = est_df.groupby("cluster_size")
    m, sd, n = _mean_band(est["value"])
    if "std" in est_df.columns and est_df["std"].notna().any():
        sd, what = est["std"].mean().fillna(0.0), "± s.d. of β̂ over the clusters"
    else:
        what = "± 1 s.d. over the replicates"
    if not m.empty:
        unit = replicate_unit(est_df)
        ax.plot(
            m.index, m.values, "-o", color=BLUE, ms=4, label=f"β̂, mean over n = {n.max()} {unit}"
        )
        ax.fill_between(m.index, m - sd, m + sd, color=BLUE, alpha=0.2, lw=0, label=what)
    if true_beta is not None:
        ax.axhline(true_beta, color=BLACK, ls="--", lw=1, label="true β", zorder=3)
    ax.set_xscale("log")
    ax.set_xlabel("cluster size (queries)")
    ax.set_ylabel("inferred group propensity β̂")
    within_bounds(ax, 0.0, None)
    ax.legend(fontsize=7.5)


def plot_ks_curves(
    estimate,
    stem: str | os.PathLike,
    *,
    clusters: Sequence[int] | None = None,
    true_beta: float | None = None,
    title: str | None = None,
) -> dict[str, Path]:
    """The KS statistic of Eq. (14) against the candidate β for some clusters of a
    :class:`groupbias.estimate.beta_estimate.BetaEstimate` (default: up to 8 clusters), with each
    cluster's β̂ marked (and the true β dashed when given)."""
    if estimate.ks_curve is None or estimate.grid is None:
        raise ParameterError(
            "estimate.ks_curve", "the curve of a grid-search estimator (ks, calibrated)", None
        )
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


#: the lines of :func:`beta_sweep_figure`: condition, legend label and how it is drawn. Each
#: differs in colour, line style and marker; where lines coincide all stay visible: the
#: biased line's dashes and hollow circles lie over the corrected line and its triangles,
#: the full-information dots and small squares over both
SWEEP_LINES = (
    ("full", "full information", dict(color=BLACK, ls=":", marker="s", ms=3.5, zorder=4)),
    (
        "biased",
        "biased",
        dict(color=VERMILLION, ls="--", marker="o", ms=8, mfc="none", mew=1.3, zorder=3),
    ),
    ("corrected", "corrected", dict(color=BLUE, ls="-", marker="^", ms=5.5, zorder=2)),
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


def _sweep_panel(ax, df: pd.DataFrame, betas: list[float], metric: str) -> pd.DataFrame:
    """Full information (flat: it does not depend on β), biased and corrected against β, each
    the mean over repetitions with a ± 1 s.d. band (:func:`sweep_curves`) cut to the range
    of ``metric``; the y axis within that range too. Returns the curves drawn."""
    curves = sweep_curves(df, betas)
    lo, hi = bounds_of(metric)
    for cond, label, style in SWEEP_LINES:
        line = curves[curves["condition"] == cond]
        if line.empty:
            continue
        means, sds = line["mean"].to_numpy(), line["sd"].to_numpy()
        ax.plot(betas, means, label=label, lw=1.5, clip_on=False, **style)
        band = np.array([means - sds, means + sds])
        if lo is not None or hi is not None:
            band = np.clip(band, lo, hi)
        ax.fill_between(betas, *band, color=style["color"], alpha=0.15, lw=0, zorder=1)
    within_bounds(ax, lo, hi)
    return curves


def within_bounds(ax, lo: float | None, hi: float | None) -> None:
    """Keep the y axis of ``ax`` within ``[lo, hi]`` (None: that side as drawn); the left
    and bottom spines sit a few points outside the data, so a line at a bound (NDCG 1,
    Δ(EEL) 0) is not hidden by the frame, which then has no top or right side."""
    bottom, top = ax.get_ylim()
    ax.set_ylim(bottom if lo is None else max(bottom, lo), top if hi is None else min(top, hi))
    ax.spines[["top", "right"]].set_visible(False)
    ax.spines[["left", "bottom"]].set_position(("outward", 4))


def band_label(curves: pd.DataFrame, unit: str) -> str:
    """The legend text of the bands: what they are and over how many replicates (``n``,
    with the full-information line's when it differs)."""

    def counts(rows: pd.DataFrame) -> str:
        n = sorted(set(rows["n"].astype(int)))
        return str(n[0]) if len(n) == 1 else f"{n[0]}–{n[-1]}"

    main = curves[curves["condition"] != "full"]
    full = curves[curves["condition"] == "full"]
    text = f"line: mean; band: ± 1 s.d. (sample); n = {counts(main if len(main) else full)} {unit}"
    if len(main) and len(full) and counts(full) != counts(main):
        text += f" (full information: {counts(full)})"
    return text


def replicate_unit(df: pd.DataFrame) -> str:
    """What the replicates of ``df`` are: ``seeds``, ``repetitions`` or both, by the keys
    that take several values."""
    varying = [c for c in ("seed", "repetition") if c in df and df[c].nunique() > 1]
    if len(varying) == 2:
        return "runs (seeds × repetitions)"
    return f"{varying[0]}s" if varying else "runs"


def beta_sweep_figure(
    records: Iterable[Mapping] | pd.DataFrame,
    *,
    metrics: Sequence[str] = ("ndcg@10", "rho_dtr", "delta_eel"),
    title: str | None = None,
):
    """The degradation-and-recovery picture (paper Figs. 2, 5-7 in one): one row per regime
    present (tabular, LTR), one panel per metric, each with three lines against β — full
    information, biased and corrected (:data:`SWEEP_LINES`) — as the mean over the records'
    repetitions with a ±1 s.d. band (sample s.d., as :func:`groupbias.reporting.tables.
    paper_table` shows), within the metric's range. β decreases to the right. The legend
    says what the line and the band are and n. Records: ``regime``, ``metric``,
    ``condition``, ``value``, ``beta`` (None for full information) and the replicate keys
    ``seed`` / ``repetition``. Returns the matplotlib figure."""
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
    drawn = []
    for i, regime in enumerate(regimes):
        sub = df[(df["regime"] == regime) & df["condition"].isin(["biased", "corrected"])]
        betas = sorted({float(b) for b in sub["beta"].dropna()}, reverse=True)
        for j, metric in enumerate(metrics):
            ax = axes[i][j]
            panel = df[(df["regime"] == regime) & (df["metric"] == metric)]
            drawn.append(_sweep_panel(ax, panel, betas, metric))
            ax.set_xticks(betas, [f"{b:.1f}" if round(b, 1) == b else f"{b:g}" for b in betas])
            if betas:
                pad = 0.03 * max(betas[0] - betas[-1], 0.1)
                ax.set_xlim(betas[0] + pad, betas[-1] - pad)  # β decreases to the right
            ax.set_title(
                f"{REGIME_TITLES[regime]}: {column_label(metric)}",
                fontsize=10,
                pad=9,  # clear of markers at the top bound
            )
            ax.grid(alpha=0.3)
            if i == len(regimes) - 1:
                ax.set_xlabel("group underestimation factor β")
    if title:
        fig.suptitle(title)
    shown: dict = {}  # every condition drawn somewhere, once
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            shown.setdefault(label, handle)
    shown[band_label(pd.concat(drawn), replicate_unit(df))] = Patch(color="0.6", alpha=0.4)
    fig.legend(list(shown.values()), list(shown), loc="outside lower center", ncol=4, frameon=False)
    return fig


def plot_beta_sweep(
    records: Iterable[Mapping] | pd.DataFrame,
    stem: str | os.PathLike,
    *,
    metrics: Sequence[str] = ("ndcg@10", "rho_dtr", "delta_eel"),
    title: str | None = None,
) -> dict[str, Path]:
    """:func:`beta_sweep_figure` written as ``stem.png``, ``stem.pdf`` and ``stem.svg``."""
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
