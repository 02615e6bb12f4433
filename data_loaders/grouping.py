"""Sensitive-attribute selection for LTR datasets without one (paper Sec. 6.1, Fig. 4).

A feature becomes a synthetic sensitive attribute by a threshold on its value:
``group = affected`` iff ``x < t`` (``affected="below"``, the default) or ``x > t``
(``affected="above"``); items exactly at ``t`` are non-affected. Thresholds:

- ``"mean"``: ``t = mean(x)``;
- ``"mean-std"``: ``t = mean(x) - std(x)``;
- a number.

Mean and (population, ``ddof=0``) standard deviation are taken over **all items of the
split** given.

Candidate criterion (paper Sec. 6.1): split every feature at ``mean - std``; the feature is a
candidate when the fraction of queries with at least one item from both groups exceeds
``coverage`` (0.95 in the paper). The paper's picks are :data:`PAPER_SENSITIVE_FEATURES`;
each is used with both thresholds (``"mean"``, ``"mean-std"``), 8 x 2 x 2 = 32 setups.

For the chosen thresholds, :func:`candidate_report` gives the population ratio
``#affected / #non-affected`` and the utility ratio
``mean label(affected) / mean label(non-affected)`` that Fig. 4 plots.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from groupbias.core.errors import GroupingError, ParameterError
from groupbias.core.segments import query_blocks
from groupbias.core.validation import choice, integer, is_real
from groupbias.data.datasets import (
    MIN_TWO_GROUP_QUERIES,
    DatasetInfo,
    check_labels,
    check_two_groups,
)
from groupbias.data.ranking_data import RankingData

from ._lazy import pandas as pd

PAPER_SENSITIVE_FEATURES = {
    "yahoo": (5, 88, 100, 141, 155, 264, 393, 426),
    "mslr": (11, 14, 15, 126, 127, 130, 131, 132),
}
PAPER_THRESHOLDS = ("mean", "mean-std")
AFFECTED_SIDES = ("below", "above")
#: items x features (float64) handled per vectorized block in :func:`candidate_report`
#: (small enough to stay in the processor's cache)
BLOCK_ELEMENTS = 1 << 18
REPORT_COLUMNS = (
    "feature_id",
    "mean",
    "std",
    "threshold_mean",
    "threshold_mean_std",
    "coverage_mean",
    "coverage_mean_std",
    "is_candidate",
    "population_ratio_mean",
    "utility_ratio_mean",
    "population_ratio_mean_std",
    "utility_ratio_mean_std",
)


def _column(data: RankingData, feature_id) -> np.ndarray:
    try:
        fid = int(feature_id)
    except (TypeError, ValueError):
        raise GroupingError(
            f"{data.name or 'data'}: feature id {feature_id!r} is not an integer"
        ) from None
    hit = np.flatnonzero(data.feature_ids == fid)
    if hit.size == 0:
        ids = data.feature_ids
        rng = f"{int(ids.min())}..{int(ids.max())}" if ids.size else "none"
        raise GroupingError(
            f"{data.name or 'data'}: unknown feature id {feature_id}; "
            f"this data has {ids.size} features with ids {rng}"
        )
    return data.features[:, int(hit[0])].astype(np.float64)


def _check_side(affected: str) -> None:
    if affected not in AFFECTED_SIDES:
        raise ParameterError("affected", "'below' or 'above'", affected)


def feature_threshold(
    data: RankingData, feature_id: int, *, threshold: str | float = "mean"
) -> float:
    """The threshold value of rule ``threshold`` on feature ``feature_id`` of ``data``
    (mean / mean - std over all items, or the number itself)."""
    x = _column(data, feature_id)
    return _threshold_value(x, threshold)


def _threshold_value(x: np.ndarray, threshold) -> float:
    if isinstance(threshold, str):
        if threshold == "mean":
            return float(x.mean())
        if threshold == "mean-std":
            return float(x.mean() - x.std())
        raise ParameterError("threshold", "'mean', 'mean-std' or a number", threshold)
    if not is_real(threshold) or not np.isfinite(threshold):
        raise ParameterError("threshold", "'mean', 'mean-std' or a finite number", threshold)
    return float(threshold)


def group_by_feature(
    data: RankingData, feature_id: int, *, threshold: str | float = "mean", affected: str = "below"
) -> RankingData:
    """``data`` with ``groups`` from a threshold on one feature (paper Sec. 6.1).

    ``groups[i] = 1`` (affected) iff ``x[i] < t`` for ``affected="below"`` or ``x[i] > t``
    for ``"above"``, where ``x`` is the feature with dataset id ``feature_id`` and ``t`` the
    threshold (``"mean"``, ``"mean-std"`` over all items of ``data``, or a number).

    Raises :class:`GroupingError` for an unknown feature id or when a group would be empty.
    ``meta["grouping"]`` records the rule, the threshold value and the affected share.
    """
    _check_side(affected)
    if data.n_items == 0:
        raise GroupingError(f"{data.name or 'data'}: no items to group")
    x = _column(data, feature_id)
    t = _threshold_value(x, threshold)
    g = (x < t) if affected == "below" else (x > t)
    n_aff = int(g.sum())
    if n_aff == 0 or n_aff == g.size:
        side = "below" if affected == "below" else "above"
        raise GroupingError(
            f"{data.name or 'data'}: threshold {threshold!r} = {t:.6g} on feature "
            f"{feature_id} puts {'all' if n_aff else 'no'} items {side} it (feature range "
            f"{x.min():.6g}..{x.max():.6g}); both groups must be non-empty"
        )
    return data.with_groups(
        g.astype(np.float64),
        grouping={
            "kind": "feature",
            "feature_id": int(feature_id),
            "threshold": threshold,
            "threshold_value": t,
            "affected": affected,
            "affected_share": n_aff / g.size,
        },
    )


@dataclass(frozen=True)
class FeatureGrouping:
    """A feature as the sensitive attribute (paper §6.1; the ``grouping=feature`` config).

    The threshold (``"mean"``, ``"mean-std"`` or a number) is computed on the *train* split
    and applied to every split, so train and test share one grouping rule; ``affected``:
    which side is the affected group (``"below"`` or ``"above"`` the threshold).
    """

    feature_id: int
    threshold: str | float = "mean"
    affected: str = "below"
    min_two_group_queries: int = MIN_TWO_GROUP_QUERIES

    def label(self, info: DatasetInfo | None = None) -> str:
        return f"[{self.feature_id}, {self.threshold}]"

    def __post_init__(self) -> None:
        integer("min_two_group_queries", self.min_two_group_queries, low=1)
        integer("feature_id", self.feature_id)
        if isinstance(self.threshold, str):
            choice("threshold", self.threshold, ("mean", "mean-std"))
        elif not is_real(self.threshold) or not np.isfinite(self.threshold):
            raise ParameterError(
                "threshold", "'mean', 'mean-std' or a finite number", self.threshold
            )
        choice("affected", self.affected, AFFECTED_SIDES)

    def apply(self, splits, info: DatasetInfo | None = None) -> dict[str, RankingData]:
        ref = splits.get("train") or next(iter(splits.values()))
        value = feature_threshold(ref, self.feature_id, threshold=self.threshold)
        out = {
            name: group_by_feature(d, self.feature_id, threshold=value, affected=self.affected)
            for name, d in splits.items()
        }
        who = f"{info.name if info else ref.name} {self.label()}"
        check_two_groups(out, self.min_two_group_queries, who=who)
        check_labels(out, who=who)
        return out


def group_by_attribute(data: RankingData, values: np.ndarray, *, affected) -> RankingData:
    """``data`` with ``groups = 1`` where the item-aligned attribute ``values`` is one of
    ``affected`` (a value or a collection of values), 0 elsewhere.

    ``values``: array [n_items]. Raises :class:`GroupingError` on a length mismatch or an
    empty group.
    """
    v = np.asarray(values)
    if v.shape != (data.n_items,):
        raise GroupingError(
            f"{data.name or 'data'}: attribute has shape {v.shape}, expected "
            f"({data.n_items},) (one value per item)"
        )
    if isinstance(affected, (str, bytes)) or not isinstance(affected, Iterable):
        affected = [affected]
    affected = list(affected)
    g = np.isin(v, affected)
    n_aff = int(g.sum())
    if n_aff == 0 or n_aff == g.size:
        raise GroupingError(
            f"{data.name or 'data'}: affected values {affected!r} match "
            f"{'every' if n_aff else 'no'} item; both groups must be "
            "non-empty"
        )
    return data.with_groups(
        g.astype(np.float64),
        grouping={
            "kind": "attribute",
            "affected_values": [str(a) for a in affected],
            "affected_share": n_aff / g.size,
        },
    )


def _ratios(n: int, n_aff: np.ndarray, s_aff: np.ndarray, total: float):
    """Population and mean-label ratios affected / non-affected per column, from the item
    count ``n``, the affected counts and label sums per column, and the label total."""
    n_non = n - n_aff
    s_non = total - s_aff
    with np.errstate(divide="ignore", invalid="ignore"):
        pop = np.where(n_non > 0, n_aff / n_non, np.inf)
        mu_a = np.where(n_aff > 0, s_aff / np.maximum(n_aff, 1), np.nan)
        mu_n = np.where(n_non > 0, s_non / np.maximum(n_non, 1), np.nan)
        util = np.where(mu_n > 0, mu_a / mu_n, np.where(mu_a > 0, np.inf, np.nan))
    util = np.where((n_aff > 0) & (n_non > 0), util, np.nan)
    return pop, util


def _both_sides(qmin: np.ndarray, qmax: np.ndarray, t: np.ndarray, affected: str) -> np.ndarray:
    """Per query and column: whether the query has items on both sides of ``t``.

    With per-query minima/maxima ``[n_queries, width]``: for ``x < t`` affected, a query
    has both groups iff ``min < t <= max``; for ``x > t`` iff ``min <= t < max``.
    """
    if affected == "below":
        return (qmin < t) & (qmax >= t)
    return (qmin <= t) & (qmax > t)


def _row_blocks(qptr: np.ndarray, limit: int):
    """``(first item, end item, starts of the non-empty queries relative to the first)`` of
    consecutive blocks of whole queries of at most ``limit`` items (a longer query alone)."""
    cuts = query_blocks(qptr, limit)
    for qa, qb in zip(cuts[:-1], cuts[1:]):
        starts = qptr[qa:qb]
        starts = starts[starts < qptr[qa + 1 : qb + 1]] - qptr[qa]
        yield int(qptr[qa]), int(qptr[qb]), starts


def _report_sums(features, labels, qptr, cols, affected: str) -> dict[str, np.ndarray]:
    """Column statistics of the report in passes over blocks of whole queries (all columns
    of a block at once): mean and standard deviation (two passes, as numpy's), then per
    threshold the affected counts, affected label sums and the queries with both groups."""
    n = features.shape[0]
    limit = max(1, BLOCK_ELEMENTS // max(cols.size, 1))

    def blocks():
        for a, b, starts in _row_blocks(qptr, limit):
            yield np.asarray(features[a:b][:, cols], dtype=np.float64), a, b, starts

    m = sum((x.sum(axis=0) for x, *_ in blocks()), np.zeros(cols.size)) / n
    var = sum((((x - m) ** 2).sum(axis=0) for x, *_ in blocks()), np.zeros(cols.size)) / n
    s = np.sqrt(var)
    out = {"mean": m, "std": s}
    acc = {k: [np.zeros(cols.size) for _ in range(3)] for k in ("mean", "mean_std")}
    for x, a, b, starts in blocks():
        lab = np.asarray(labels[a:b], dtype=np.float64)
        if starts.size:
            qmin = np.minimum.reduceat(x, starts, axis=0)
            qmax = np.maximum.reduceat(x, starts, axis=0)
        for key, t in (("mean", m), ("mean_std", m - s)):
            mask = (x < t if affected == "below" else x > t).astype(np.float64)
            acc[key][0] += mask.sum(axis=0)
            acc[key][1] += lab @ mask
            if starts.size:
                acc[key][2] += _both_sides(qmin, qmax, t, affected).sum(axis=0)
    n_queries = int(np.count_nonzero(np.diff(qptr) > 0))
    total = float(np.asarray(labels, dtype=np.float64).sum())
    for key, (n_aff, s_aff, both) in acc.items():
        out[f"coverage_{key}"] = both / n_queries if n_queries else np.full(cols.size, np.nan)
        out[f"population_ratio_{key}"], out[f"utility_ratio_{key}"] = _ratios(
            n, n_aff, s_aff, total
        )
    return out


def candidate_report(
    data: RankingData,
    *,
    coverage: float = 0.95,
    features: Iterable[int] | None = None,
    affected: str = "below",
) -> pd.DataFrame:
    """Per-feature sensitive-attribute statistics (paper Sec. 6.1 criterion, Fig. 4 values).

    For every feature ``x`` (all, or the ids in ``features``) with ``m = mean(x)``,
    ``s = std(x)`` over all items:

    - ``coverage_mean_std``: fraction of non-empty queries with items on both sides of
      ``m - s``; ``is_candidate = coverage_mean_std > coverage``;
    - ``coverage_mean``: the same at ``m``;
    - ``population_ratio_<t>`` = #affected / #non-affected items and
      ``utility_ratio_<t>`` = mean label(affected) / mean label(non-affected) for
      ``t`` in {``mean``, ``mean_std``} (``inf`` when the non-affected side is empty,
      ``nan`` when a ratio is undefined).

    Affected = ``x < t`` (``affected="below"``) or ``x > t`` (``"above"``). Computed in
    three passes over blocks of whole queries, every column of a block at once (no loop over
    queries or features; time linear in the data size, working memory bounded by
    :data:`BLOCK_ELEMENTS`); on the column-major cache only the requested columns are read.
    Returns a DataFrame with the columns :data:`REPORT_COLUMNS`, one row per feature, in
    feature order.
    """
    _check_side(affected)
    if not (is_real(coverage) and 0 <= coverage <= 1):
        raise ParameterError("coverage", "a fraction in [0, 1]", coverage)
    if data.n_items == 0:
        raise GroupingError(f"{data.name or 'data'}: no items")
    if features is None:
        cols = np.arange(data.n_features)
    else:
        fids = [features] if np.isscalar(features) else list(features)
        for f in fids:
            _column(data, f)  # GroupingError for an unknown id
        cols = np.array(
            [int(np.flatnonzero(data.feature_ids == int(f))[0]) for f in fids], dtype=np.int64
        )
    out = {"feature_id": data.feature_ids[cols]}
    out.update(_report_sums(data.features, data.labels, data.qptr, cols, affected))
    out["threshold_mean"] = out["mean"]
    out["threshold_mean_std"] = out["mean"] - out["std"]
    report = pd.DataFrame(out)
    report["is_candidate"] = report["coverage_mean_std"] > coverage
    return report[list(REPORT_COLUMNS)]


def paper_setups(dataset: str) -> list[dict]:
    """The paper's 16 (feature, threshold) setups of ``dataset`` (``"yahoo"`` or ``"mslr"``),
    as ``{"feature_id", "threshold", "affected"}`` dicts for :func:`group_by_feature`."""
    key = dataset.lower()
    if key not in PAPER_SENSITIVE_FEATURES:
        raise ParameterError("dataset", " | ".join(PAPER_SENSITIVE_FEATURES), dataset)
    return [
        {"feature_id": f, "threshold": t, "affected": "below"}
        for f in PAPER_SENSITIVE_FEATURES[key]
        for t in PAPER_THRESHOLDS
    ]


def _scatter_candidates(ax, rows: pd.DataFrame) -> int:
    """Draw each threshold's finite positive (population ratio, utility ratio) points of
    ``rows`` on ``ax``, labelled with their feature ids; how many were drawn."""
    drawn = 0
    for key, marker, label in (
        ("mean", "o", "threshold: mean"),
        ("mean_std", "^", "threshold: mean - std"),
    ):
        x = rows[f"population_ratio_{key}"].to_numpy(dtype=np.float64)
        y = rows[f"utility_ratio_{key}"].to_numpy(dtype=np.float64)
        ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
        if not ok.any():
            continue
        ax.scatter(x[ok], y[ok], marker=marker, label=label, alpha=0.8)
        for fid, xi, yi in zip(rows["feature_id"].to_numpy()[ok], x[ok], y[ok]):
            ax.annotate(str(fid), (xi, yi), textcoords="offset points", xytext=(3, 3), fontsize=7)
        drawn += int(ok.sum())
    return drawn


def plot_candidates(
    report: pd.DataFrame,
    path: str | os.PathLike,
    *,
    candidates_only: bool = True,
    title: str | None = None,
) -> Path:
    """Scatter of population ratio (x) vs utility ratio (y), log axes, as in paper Fig. 4.

    One marker per (feature, threshold): circles for ``mean``, triangles for ``mean-std``,
    each labelled with the feature id. ``report`` is a :func:`candidate_report` frame; by
    default only rows with ``is_candidate`` are drawn. Writes a PNG to ``path`` (``.png`` is
    added when it has no suffix; Agg canvas, no global matplotlib state) and returns the path.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    need = [
        "feature_id",
        "is_candidate",
        "population_ratio_mean",
        "utility_ratio_mean",
        "population_ratio_mean_std",
        "utility_ratio_mean_std",
    ]
    if not isinstance(report, pd.DataFrame) or any(c not in report.columns for c in need):
        raise ParameterError(
            "report",
            "a DataFrame from candidate_report with columns " + ", ".join(need),
            type(report).__name__,
        )
    rows = report[report["is_candidate"]] if candidates_only else report
    fig = Figure(figsize=(5.0, 4.0))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    drawn = _scatter_candidates(ax, rows)
    if drawn == 0:
        raise GroupingError(
            "no (feature, threshold) with finite positive population and "
            "utility ratios to plot" + (" among the candidates" if candidates_only else "")
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.axhline(1.0, color="grey", lw=0.6, ls="--")
    ax.axvline(1.0, color="grey", lw=0.6, ls="--")
    ax.set_xlabel("population ratio (#affected / #non-affected)")
    ax.set_ylabel("utility ratio (mean label affected / non-affected)")
    if title:
        ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(path)
    if not out.suffix:
        out = out.with_suffix(".png")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png", dpi=150)
    return out
