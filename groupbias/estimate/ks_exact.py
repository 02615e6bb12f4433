"""The exact KS engine of Eq. (14): ``KS(A_A / beta, A_N)`` for every grid point and cluster.

:func:`groupbias.estimate.ks.ks_curves` and :func:`groupbias.estimate.ks.estimate_beta`
validate their inputs and call :func:`ks_matrix` here; this module assumes checked arrays.

Exact fast KS over the whole grid
---------------------------------
The statistic is evaluated exactly, for all grid points and clusters at once, by a
branch-and-bound over sample points: the supremum of ``|F_1 - F_2|`` is attained at a
sample point (evaluating both right-continuous CDFs there). Both samples are sorted within
their cluster once. For a run of consecutive sample points of one sample with known CDF
values at its first point ``a`` and last point ``b``, monotonicity bounds every interior
point by ``max(F_1(b) - F_2(a), F_2(b) - F_1(a))``. Runs whose bound cannot beat the best
value found so far are discarded; the others are split into ``split`` sub-runs whose new
end points are evaluated (one binary search each), until every surviving interior point is
evaluated. The result equals ``scipy.stats.ks_2samp(A_A / beta, A_N).statistic`` (the same
counts divided the same way), which the tests check against a brute-force loop.

Two exact algorithms share the sorted samples: small clusters enumerate all affected /
non-affected pairs (:func:`ks_matrix` with ``method="pairs"``), large ones take the
branch-and-bound (``method="bound"``); ``"auto"`` picks per cluster. Every step allocates
O(``_WORK``) or O(``_PAIR_WORK``) array elements, whatever the size of the data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["MAX_PAIRS", "ks_matrix", "zero_clusters"]

_REL = 1e-14  # bracket for the exact predicate fl(x / beta) <= y
_ABS = 1e-300
_WORK = 1_000_000  # new points + child runs of one branch-and-bound step (memory bound)
_PAIR_WORK = 1_000_000  # pairs + points x grid points of one all-pairs chunk (memory bound)
_DENSE = 0.25  # clusters with m * n <= _DENSE * n_grid * (m + n) use all pairs
#: largest cluster (m * n pairs) that method="pairs" accepts
MAX_PAIRS = 50_000_000


def zero_clusters(n: int) -> np.ndarray:
    """Cluster index 0 for ``n`` values without ``n`` values of memory (a read-only view)."""
    return np.broadcast_to(np.zeros(1, dtype=np.int64), (n,))


class _Sample:
    """One sample (affected or non-affected) sorted by (cluster, value)."""

    def __init__(self, values: np.ndarray, cluster: np.ndarray, n_clusters: int) -> None:
        one = n_clusters == 1
        if one:
            v = np.sort(values)
            c = zero_clusters(v.size)
            self.size = np.array([v.size], dtype=np.int64)
        else:
            order = np.lexsort((values, cluster))
            v = values[order]
            c = cluster[order]
            self.size = np.bincount(c, minlength=n_clusters).astype(np.int64)
        self.v = v
        self.c = c
        self.start = np.zeros(n_clusters, dtype=np.int64)
        np.cumsum(self.size[:-1], out=self.start[1:])
        self.end = self.start + self.size
        n = v.size
        # right-continuous rank within the cluster: #{same-cluster values <= v[i]}
        if one:  # ranks are searched when asked for (rank_at): no per-value rank array
            self._rank = None
            self.key = v
            return
        last = np.ones(n, dtype=bool)
        if n > 1:
            last[:-1] = (v[1:] != v[:-1]) | (c[1:] != c[:-1])
        pos = np.arange(1, n + 1, dtype=np.int64)
        if not last.all():
            last_idx = np.flatnonzero(last)
            first = np.ones(n, dtype=bool)
            first[1:] = last[:-1]
            pos = last_idx[np.cumsum(first) - 1] + 1
        self._rank = pos - self.start[c]
        # search keys: lexicographic (cluster, value) as complex numbers (cluster ids are
        # exact in the real part)
        self.key = _complex(c, v)

    def rank_at(self, idx: np.ndarray) -> np.ndarray:
        """Right-continuous rank within the cluster of the sorted values ``idx``:
        ``#{same-cluster values <= v[idx]}``."""
        if self._rank is None:
            return np.searchsorted(self.v, self.v[idx], side="right")
        return self._rank[idx]

    def probe(self, cluster: np.ndarray, values: np.ndarray):
        return values if np.isrealobj(self.key) else _complex(cluster, values)


def _complex(real: np.ndarray, imag: np.ndarray) -> np.ndarray:
    """``real + 1j * imag`` (complex128) without temporaries."""
    out = np.empty(real.size, dtype=np.complex128)
    out.real = real
    out.imag = imag
    return out


def _count_le(sample: _Sample, cluster: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``#{sample values of the same cluster <= values}`` (exact, int64)."""
    pos = np.searchsorted(sample.key, sample.probe(cluster, values), side="right")
    return pos - sample.start[cluster]


def _count_scaled_le(
    sample: _Sample, cluster: np.ndarray, y: np.ndarray, beta: np.ndarray
) -> np.ndarray:
    """``#{x in the cluster : fl(x / beta) <= y}`` with the division done as in
    ``A_A / beta`` (so counts agree with a brute force on the divided sample)."""
    v = sample.v
    lo_c = sample.start[cluster]
    hi_c = sample.end[cluster]
    pos = np.searchsorted(sample.key, sample.probe(cluster, y * beta), side="right")
    # the predicate is monotone in the sorted index; check the boundary at pos
    left_ok = (pos == lo_c) | (v[np.maximum(pos - 1, 0)] / beta <= y)
    right_ok = (pos == hi_c) | (v[np.minimum(pos, v.size - 1)] / beta > y)
    bad = np.flatnonzero(~(left_ok & right_ok))
    if bad.size:
        cb, yb, bb = cluster[bad], y[bad], beta[bad]
        p = yb * bb
        # |fl(x / beta) - x / beta| and |fl(y * beta) - y * beta| are below a relative
        # 2**-52 for normal numbers and an absolute 1e-300 for subnormal ones
        lo = np.searchsorted(sample.key, sample.probe(cb, p * (1 - _REL) - _ABS), side="right")
        hi = np.searchsorted(sample.key, sample.probe(cb, p * (1 + _REL) + _ABS), side="right")
        while np.any(lo < hi):
            mid = (lo + hi) // 2
            midc = np.minimum(mid, v.size - 1)
            ok = (lo < hi) & (v[midc] / bb <= yb)
            lo = np.where(ok, mid + 1, lo)
            hi = np.where((lo < hi) & ~ok, mid, hi)
        pos[bad] = lo
    return pos - lo_c


def _evaluate(fam: int, idx: np.ndarray, g: np.ndarray, grid: np.ndarray, xs: _Sample, ys: _Sample):
    """CDF values (F_A of A_A / beta, F_N of A_N) at sample points ``idx`` of family ``fam``
    (0: affected, 1: non-affected) for grid indices ``g``."""
    beta = grid[g]
    if fam == 0:
        c = xs.c[idx]
        f1 = xs.rank_at(idx) / xs.size[c]
        f2 = _count_le(ys, c, xs.v[idx] / beta) / ys.size[c]
    else:
        c = ys.c[idx]
        f2 = ys.rank_at(idx) / ys.size[c]
        f1 = _count_scaled_le(xs, c, ys.v[idx], beta) / xs.size[c]
    return c, f1, f2


@dataclass(frozen=True)
class _Tile:
    """A block of grid points and a range ``lo .. lo + width - 1`` of cluster indices searched
    together; ``best`` [n_grid * width] holds the largest ``|F_1 - F_2|`` found so far at
    flat index ``grid index * width + cluster - lo``."""

    grid: np.ndarray
    xs: _Sample
    ys: _Sample
    lo: int
    width: int
    split: int
    best: np.ndarray

    def where(self, g: np.ndarray, c: np.ndarray) -> np.ndarray:
        return g * self.width + (c - self.lo)


def _end_points(t: _Tile, act: np.ndarray) -> list:
    """Evaluate the first and last sample point of every (grid point, cluster ``act``) run of
    both samples into ``t.best``; returns the runs ``(fam, (g, a, b, f1a, f2a, f1b, f2b))``
    of both samples."""
    gg = np.repeat(np.arange(t.grid.size, dtype=np.int64), act.size)
    cc = np.tile(act, t.grid.size)
    blocks = []
    for fam, s in ((0, t.xs), (1, t.ys)):
        a = s.start[cc]
        b = s.end[cc] - 1
        pts = np.concatenate([a, b])
        gp = np.concatenate([gg, gg])
        c, f1, f2 = _evaluate(fam, pts, gp, t.grid, t.xs, t.ys)
        np.maximum.at(t.best, t.where(gp, c), np.abs(f1 - f2))
        m = a.size
        blocks.append((fam, (gg, a, b, f1[:m], f2[:m], f1[m:], f2[m:])))
    return blocks


def _child_runs(g, a, b, f1a, f2a, f1b, f2b, n_new, idx, f1n, f2n) -> tuple:
    """The runs between consecutive points of ``[a, new..., b]`` within each parent run."""
    per = n_new + 2
    off = np.zeros(a.size, dtype=np.int64)
    np.cumsum(per[:-1], out=off[1:])
    total = int(per.sum())
    seq_i = np.empty(total, dtype=np.int64)
    seq_f1 = np.empty(total)
    seq_f2 = np.empty(total)
    seq_g = np.repeat(g, per)
    seq_i[off], seq_f1[off], seq_f2[off] = a, f1a, f2a
    last = off + per - 1
    seq_i[last], seq_f1[last], seq_f2[last] = b, f1b, f2b
    mid = np.ones(total, dtype=bool)
    mid[off] = False
    mid[last] = False
    seq_i[mid], seq_f1[mid], seq_f2[mid] = idx, f1n, f2n
    pair = np.ones(total - 1, dtype=bool) if total else np.zeros(0, dtype=bool)
    if total:
        pair[last[:-1]] = False  # no pair across parents
    left = np.flatnonzero(pair)
    right = left + 1
    return (
        seq_g[left],
        seq_i[left],
        seq_i[right],
        seq_f1[left],
        seq_f2[left],
        seq_f1[right],
        seq_f2[right],
    )


def _prune(fam: int, block: tuple, t: _Tile) -> tuple:
    """The runs of sample ``fam`` whose bound can still beat ``t.best``."""
    g, a, b, f1a, f2a, f1b, f2b = block
    fs = t.xs if fam == 0 else t.ys
    bound = np.maximum(f1b - f2a, f2b - f1a)
    # interior points lie between the end points: their CDF values too, and so do
    # the rounded differences (rounding is monotone), so the bound is exact in
    # floating point; equal end values mean equal interior values
    keep = (b - a >= 2) & (bound > t.best[t.where(g, fs.c[a])]) & (fs.v[a] != fs.v[b])
    return tuple(arr[keep] for arr in block)


def _split_runs(fam: int, block: tuple, t: _Tile) -> tuple:
    """Evaluate ``split - 1`` new points inside every run of sample ``fam`` (pruned runs)
    into ``t.best``; returns the child runs."""
    g, a, b, f1a, f2a, f1b, f2b = block
    length = b - a
    step = -(-length // t.split)  # ceil
    n_new = -(-length // step) - 1  # points a + k*step < b, k >= 1
    tot = int(n_new.sum())
    rep = np.repeat(np.arange(a.size), n_new)
    first = np.zeros(a.size, dtype=np.int64)
    np.cumsum(n_new[:-1], out=first[1:])
    k = np.arange(tot, dtype=np.int64) - first[rep] + 1
    idx = a[rep] + k * step[rep]
    gi = g[rep]
    del rep, first, k
    c_new, f1n, f2n = _evaluate(fam, idx, gi, t.grid, t.xs, t.ys)
    np.maximum.at(t.best, t.where(gi, c_new), np.abs(f1n - f2n))
    return _child_runs(g, a, b, f1a, f2a, f1b, f2b, n_new, idx, f1n, f2n)


def _ks_tile(t: _Tile, act: np.ndarray) -> None:
    """Exact KS statistic of the clusters ``act`` (within the tile's range) at the tile's grid
    points, into ``t.best``.

    Depth first: a stack of run blocks; a block is pruned against ``best`` when it is taken,
    and at most ``_WORK // split`` runs are split at once (each adds at most ``split - 1``
    points and ``split`` child runs), so one step allocates O(_WORK) and the stack holds at
    most about one block of O(_WORK) runs per level of the search. The order in which runs
    are handled changes only how much is pruned, not the result: ``best`` ends as the maximum
    over every sample point, each value computed the same way."""
    cap = max(1, _WORK // t.split)
    stack = _end_points(t, act)
    while stack:
        fam, block = stack.pop()
        block = _prune(fam, block, t)
        n = block[0].size
        if n > cap:
            stack.extend((fam, tuple(arr[s : s + cap] for arr in block)) for s in range(0, n, cap))
        elif n:
            stack.append((fam, _split_runs(fam, block, t)))


def _ks_bound(
    xs: _Sample, ys: _Sample, active: np.ndarray, grid: np.ndarray, split: int, out: np.ndarray
) -> None:
    """Exact KS curves of the clusters ``active`` (bool [n_clusters]) by branch and bound, in
    tiles of grid points x cluster ranges of at most ``_WORK // 4`` (grid point, cluster)
    pairs, into ``out`` [n_clusters, n_grid]."""
    n_c, n_grid = active.size, grid.size
    pairs = max(1, _WORK // 4)
    g_step = min(n_grid, pairs)
    c_step = max(1, pairs // g_step)
    ids = np.flatnonzero(active)
    for lo in range(0, n_c, c_step):
        width = min(c_step, n_c - lo)
        act = ids[np.searchsorted(ids, lo) : np.searchsorted(ids, lo + width)]
        if not act.size:
            continue
        for s in range(0, n_grid, g_step):
            part = grid[s : s + g_step]
            best = np.full(part.size * width, -np.inf)
            _ks_tile(_Tile(part, xs, ys, lo, width, split, best), act)
            out[act, s : s + part.size] = best.reshape(part.size, width).T[act - lo]


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + l)`` for every pair (vectorized)."""
    lengths = lengths.astype(np.int64, copy=False)
    total = int(lengths.sum())
    off = np.zeros(lengths.size, dtype=np.int64)
    np.cumsum(lengths[:-1], out=off[1:])
    return np.repeat(starts - off, lengths) + np.arange(total, dtype=np.int64)


def _first_true(pred, start: np.ndarray, n_grid: int) -> np.ndarray:
    """Smallest grid index ``t`` with ``pred(t)`` true (``n_grid`` if none) for predicates
    monotone in ``t``, starting from a guess ``start`` off by at most a few steps."""
    t = start.copy()
    while True:
        prev = np.maximum(t - 1, 0)
        move = (t > 0) & pred(prev)
        if not move.any():
            break
        t[move] -= 1
    while True:
        cur = np.minimum(t, n_grid - 1)
        move = (t < n_grid) & ~pred(cur)
        if not move.any():
            break
        t[move] += 1
    return t


def _pair_cost(m: np.ndarray, n: np.ndarray, n_grid: int) -> np.ndarray:
    """Array elements of the all-pairs method per cluster (pairs + points x grid points)."""
    return m * n + (m + n) * (n_grid + 1)


def _ks_dense(xs: _Sample, ys: _Sample, sel: np.ndarray, grid: np.ndarray, out: np.ndarray) -> None:
    """Exact KS curves of the (small) clusters ``sel`` through all affected/non-affected
    pairs: the order of ``x / beta`` and ``y`` flips once along the grid, at an index found
    by a search on the grid, so the CDF values at every sample point and grid point follow
    from histograms of these indices and a cumulative sum over the grid."""
    n_grid = grid.size
    m_all = xs.size[sel]
    n_all = ys.size[sel]
    part = np.cumsum(_pair_cost(m_all, n_all, n_grid)) // _PAIR_WORK
    cuts = np.flatnonzero(np.diff(part)) + 1
    for cl in np.split(sel, cuts):
        m = xs.size[cl]
        n = ys.size[cl]
        xi = _ranges(xs.start[cl], m)  # affected points, cluster order
        yi = _ranges(ys.start[cl], n)
        xrow = np.zeros(cl.size, dtype=np.int64)
        np.cumsum(m[:-1], out=xrow[1:])
        yrow = np.zeros(cl.size, dtype=np.int64)
        np.cumsum(n[:-1], out=yrow[1:])
        local = np.repeat(np.arange(cl.size, dtype=np.int64), m)  # cluster (local) of xi
        n_of_x = n[local]
        px = np.repeat(np.arange(xi.size, dtype=np.int64), n_of_x)  # row of the x point
        py = _ranges(yrow[local], n_of_x)  # row of the y point
        xv = xs.v[xi][px]
        yv = ys.v[yi][py]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            r = np.where(xv == 0, 0.0, xv / yv)
        guess = np.searchsorted(grid, r, side="left")
        le = _first_true(lambda gi, xv=xv, yv=yv: xv / grid[gi] <= yv, guess, n_grid)
        lt = _first_true(lambda gi, xv=xv, yv=yv: xv / grid[gi] < yv, guess, n_grid)
        w = n_grid + 1
        # F_A(y_j) count at beta_g: #{i : le_ij <= g}
        cnt1 = np.bincount(py * w + le, minlength=yi.size * w).reshape(yi.size, w)
        cnt1 = np.cumsum(cnt1, axis=1)[:, :n_grid]
        # F_N(x_i / beta_g) count: #{j : y_j <= x_i / beta_g} = n - #{j : lt_ij <= g}
        cnt2 = np.bincount(px * w + lt, minlength=xi.size * w).reshape(xi.size, w)
        cnt2 = n[local][:, None] - np.cumsum(cnt2, axis=1)[:, :n_grid]
        ly = np.repeat(np.arange(cl.size, dtype=np.int64), n)
        # [n_grid, points] layout: the per-cluster maximum runs along contiguous rows
        d_y = np.abs(cnt1.T / m[ly] - ys.rank_at(yi) / n[ly])
        d_x = np.abs(xs.rank_at(xi) / m[local] - cnt2.T / n[local])
        out[cl] = np.maximum(
            np.maximum.reduceat(d_x, xrow, axis=1), np.maximum.reduceat(d_y, yrow, axis=1)
        ).T


def ks_matrix(
    x: np.ndarray,
    cx: np.ndarray,
    y: np.ndarray,
    cy: np.ndarray,
    n_clusters: int,
    grid: np.ndarray,
    split: int,
    method: str = "auto",
) -> np.ndarray:
    """``KS(x_c / beta, y_c)`` [n_clusters, n_grid] of checked inputs: scores ``x`` [n_a] and
    ``y`` [n_n] (finite, non-negative), their cluster indices ``cx``, ``cy`` (int64 in
    ``0..n_clusters-1``), a strictly increasing ``grid`` in (0, 1], ``split >= 2`` and
    ``method`` in ``"auto" | "pairs" | "bound"``; NaN rows where a cluster lacks a sample."""
    xs = _Sample(x, cx, n_clusters)
    ys = _Sample(y, cy, n_clusters)
    both = (xs.size > 0) & (ys.size > 0)
    out = np.full((n_clusters, grid.size), np.nan)
    # small clusters: all pairs; large clusters: branch-and-bound over sample points
    if method == "auto":
        small = both & (xs.size * ys.size <= _DENSE * grid.size * (xs.size + ys.size))
        # a very unbalanced large cluster: the bound method keeps the memory bounded
        small &= _pair_cost(xs.size, ys.size, grid.size) <= _PAIR_WORK
    else:
        small = both & (method == "pairs")
    if small.any():
        _ks_dense(xs, ys, np.flatnonzero(small), grid, out)
    active = both & ~small
    if active.any():
        _ks_bound(xs, ys, active, grid, split, out)
    return out
