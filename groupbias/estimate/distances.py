"""Distribution distances for the β grid search beside Kolmogorov–Smirnov.

The grid search of Eq. (14) minimizes a distance between the rescaled affected scores
``A_A / beta`` and a comparison sample. KS (``sup |F_1 - F_2|``) lives in
:mod:`groupbias.estimate.ks`; this module adds the **Wasserstein-1** (earth mover's) distance

    W1(A_A / beta, B) = ∫_0^1 | Q_A(u) / beta - Q_B(u) | du,

with ``Q`` the empirical quantile functions (left-continuous inverses of the empirical CDFs,
``Q(u) = x_(ceil(u m))`` for the sorted sample ``x_(1) <= ... <= x_(m)``). Dividing a sample by
``beta > 0`` divides its quantile function by ``beta``, so the breakpoints of both quantile
functions (``i / m`` and ``j / n``) do not depend on ``beta``: each cluster is merged **once**
into ``m + n`` segments, and the curve over the whole grid is a weighted sum of
``|q_A / beta - q_B|`` over those segments (one matrix product-like pass per grid chunk). The
result equals ``scipy.stats.wasserstein_distance(A_A / beta, B)`` (checked in the tests).

Unlike KS, W1 weighs *how far* the distributions differ, not only the largest CDF gap; it is
scale-dependent (in units of the scores) and smoother in ``beta`` on small clusters.
"""

from __future__ import annotations

import numpy as np

__all__ = ["wasserstein_curves", "DISTANCES"]

#: the distances the grid search knows: ``"ks"`` (Eq. 14) and ``"wasserstein"`` (W1)
DISTANCES = ("ks", "wasserstein")
_CELLS = 4_000_000  # segments x grid points evaluated at once (memory bound)


def _sorted_by_cluster(v: np.ndarray, c: np.ndarray, n_c: int):
    """``(values sorted by (cluster, value), sizes [n_c])``."""
    order = np.lexsort((v, c))
    return v[order], np.bincount(c, minlength=n_c).astype(np.int64)


def _segments(x, cx, y, cy, n_c):
    """The merged quantile segments of every cluster with both samples:
    ``(cluster [s], length [s], q_x [s], q_y [s])`` sorted by cluster."""
    xv, m = _sorted_by_cluster(x, cx, n_c)
    yv, n = _sorted_by_cluster(y, cy, n_c)
    ok = (m > 0) & (n > 0)
    # keep the clusters holding both samples; sizes 0 elsewhere
    xv, yv = xv[np.repeat(ok, m)], yv[np.repeat(ok, n)]
    mk, nk = np.where(ok, m, 0), np.where(ok, n, 0)
    xs = np.concatenate(([0], np.cumsum(mk)[:-1]))
    ys = np.concatenate(([0], np.cumsum(nk)[:-1]))
    cxs = np.repeat(np.arange(n_c), mk)
    cys = np.repeat(np.arange(n_c), nk)
    # knots i / m (i = 1..m) and j / n: i - 1 is the position within the cluster
    ix = np.arange(cxs.size) - xs[cxs]
    iy = np.arange(cys.size) - ys[cys]
    cl = np.concatenate([cxs, cys])
    u = np.concatenate([(ix + 1) / m[cxs], (iy + 1) / n[cys]])
    is_x = np.concatenate([np.ones(cxs.size, bool), np.zeros(cys.size, bool)])
    order = np.lexsort((~is_x, u, cl))
    cl, u, is_x = cl[order], u[order], is_x[order]
    # segment k ends at knot k; it uses the x quantile of index (#x knots before k in the
    # cluster) and likewise for y
    first = np.ones(cl.size, dtype=bool)
    first[1:] = cl[1:] != cl[:-1]
    prev_u = np.empty_like(u)
    prev_u[1:] = u[:-1]
    prev_u[first] = 0.0
    length = np.maximum(u - prev_u, 0.0)
    grp = np.cumsum(first) - 1
    starts = np.flatnonzero(first)
    cum_x = np.cumsum(is_x) - is_x
    cum_y = np.cumsum(~is_x) - ~is_x
    nx_before = cum_x - cum_x[starts][grp]
    ny_before = cum_y - cum_y[starts][grp]
    qx = xv[xs[cl] + np.minimum(nx_before, m[cl] - 1)]
    qy = yv[ys[cl] + np.minimum(ny_before, n[cl] - 1)]
    return cl, length, qx, qy


def wasserstein_curves(
    x: np.ndarray, cx: np.ndarray, y: np.ndarray, cy: np.ndarray, n_clusters: int, grid: np.ndarray
) -> np.ndarray:
    """``W1(x_c / beta, y_c)`` for every cluster ``c`` and grid value (float [n_c, n_grid]).

    ``x`` [m], ``y`` [n]: non-negative samples; ``cx``, ``cy``: their cluster indices in
    ``0..n_clusters-1``. Rows of clusters lacking one sample are NaN. Inputs are assumed
    validated (see :func:`groupbias.estimate.ks.estimate_beta`).
    """
    out = np.full((n_clusters, grid.size), np.nan)
    cl, length, qx, qy = _segments(x, cx, y, cy, n_clusters)
    if cl.size == 0:
        return out
    inv = 1.0 / grid
    present = np.unique(cl)
    acc = np.zeros((n_clusters, grid.size))
    step = max(1, _CELLS // max(grid.size, 1))
    for lo in range(0, cl.size, step):
        sl = slice(lo, lo + step)
        cell = np.abs(qx[sl, None] * inv[None, :] - qy[sl, None]) * length[sl, None]
        _add_rows(acc, cl[sl], cell)
    out[present] = acc[present]
    return out


def _add_rows(acc: np.ndarray, rows: np.ndarray, cell: np.ndarray) -> None:
    """``acc[rows[i]] += cell[i]`` for sorted ``rows`` (one reduceat per contiguous run)."""
    first = np.ones(rows.size, dtype=bool)
    first[1:] = rows[1:] != rows[:-1]
    starts = np.flatnonzero(first)
    acc[rows[starts]] += np.add.reduceat(cell, starts, axis=0)
