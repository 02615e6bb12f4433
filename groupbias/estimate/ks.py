"""Amortized estimation of the group propensity ``beta`` (paper §5.1–5.2, Eq. 14).

The estimator
-------------
Under the multiplicative model of Eq. (2) the observed attractiveness of an affected item is
``a = beta_A * P(R)`` while a non-affected item keeps ``a = P(R)`` (``beta_N = 1``). If the
relevance scores of both groups come from the same distribution (Eq. 13), dividing the
affected scores by the true ``beta_A`` makes the two samples identically distributed, so

    beta_hat = argmin_{beta in grid}  KS(A_A / beta, A_N),                         (Eq. 14)

where ``KS(X, Y) = sup_x |F_X(x) - F_Y(x)|`` is the two-sample Kolmogorov–Smirnov statistic
between the empirical CDFs (right-continuous, ``F_X(x) = #{X_i <= x} / |X|``).

Conventions
-----------
- ``grid``: strictly increasing values in (0, 1]; default ``0.01, 0.02, ..., 1.00``.
- Ties of the statistic on the grid go to the **largest** ``beta`` among the minimizers
  by default (the most conservative correction: a flat curve leaves the scores least
  changed); ``tie="smallest"`` or ``"middle"`` (the middle of the flat region) instead.
  Flat curves are the rule for small clusters of binary labels: each group has a handful
  of positive scores, the KS statistic between ``m`` and ``n`` points takes few values
  (multiples of ``1 / lcm(m, n)``; with one point per group it is 1 for every ``beta``),
  and its minimum is a wide plateau. ``"largest"`` then makes small clusters
  over-estimate ``beta``, ``"smallest"`` under-estimate it (the direction the paper
  reports); docs/method.md measures both on TREC 2019.
- Zero attractiveness (``zero_policy``): with binary or graded labels many items have
  ``a = 0``. That atom does not move when the affected scores are divided by ``beta``, so it
  carries no information about ``beta``; but any difference in the zero fractions of the two
  groups adds a ``beta``-independent floor ``|p0_A - p0_N|`` to the KS statistic, which
  flattens the curve and biases the argmin (the floor dominates wherever it exceeds the
  ``beta``-dependent part). ``"exclude"`` (default) compares the positive scores only: this
  only assumes that the *relevant* items' scores have the same distribution in both groups
  and allows the groups to differ in how many relevant items they have. ``"include"`` keeps
  the zeros (the literal Eq. 14).
- Tie-breaking jitter (§6.1): before the search, every score ``v`` is replaced by
  ``v + u`` with ``u ~ Uniform(-h, h)`` (``Uniform(0, h)`` for ``v = 0``, keeping scores
  non-negative), ``h = jitter * gap / 2`` and ``gap`` the smallest distance between distinct
  values of the pooled scores used (zero included as a value). Since ``jitter < 1``,
  ``|u| < gap / 2`` and no two distinct values (grades) swap order; only exact ties are
  broken. ``jitter=0`` disables it. The noise is drawn from ``rng`` after the random
  clusters (if any).
- Scopes: ``clusters`` (a cluster label per query) amortizes over given query clusters;
  ``cluster_size=k`` draws random clusters of ``k`` queries (a permutation from ``rng``;
  ``k = 1`` is the per-query estimator, ``k >= n_queries`` one global cluster); neither
  gives one global cluster.
- Groups: ``groups == 1`` is the affected sample, ``groups == 0`` the non-affected one.
  Fractional memberships are rejected unless ``group_threshold`` is given (items with
  ``g >= group_threshold`` are then affected).
- Failure policy: a cluster in which either group has no score left (after the zero
  policy) has ``beta_hat = NaN`` and a NaN row in ``ks_curve``; the correction leaves the
  items of such clusters unchanged (:func:`groupbias.estimate.correction.ips_correct`).
  ``BetaEstimate.n_failed`` counts them.
- The exact statistic: :mod:`groupbias.estimate.ks_exact` evaluates ``KS(A_A / beta, A_N)``
  for all grid points and clusters at once (branch-and-bound over sample points for large
  clusters, all pairs for small ones); it equals
  ``scipy.stats.ks_2samp(A_A / beta, A_N).statistic``, which the tests check.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import ParameterError
from ..core.segments import query_index
from ..core.validation import check_qptr, choice, generator, integer, is_integer, is_real, real
from ..data.membership import affected_group
from .beta_estimate import BetaEstimate
from .distances import DISTANCES, wasserstein_curves
from .ks_exact import MAX_PAIRS, ks_matrix, zero_clusters

__all__ = [
    "default_grid",
    "estimate_beta",
    "ks_statistic",
    "ks_curves",
    "argmin_largest",
    "grid_argmin",
    "tie_break_jitter",
    "random_clusters",
    "ZERO_POLICIES",
    "MINIMIZER_TIES",
    "JITTER_SCALES",
    "grid_curves",
]

ZERO_POLICIES = ("exclude", "include")
#: which minimizer of a flat distance curve is beta_hat (:func:`grid_argmin`, ``tie``)
MINIMIZER_TIES = ("largest", "smallest", "middle")
#: what the tie-breaking jitter is a fraction of: the grade spacing the caller passes
#: (``grade_spacing``) or the smallest gap between the scores (``KSEstimator.jitter_scale``)
JITTER_SCALES = ("grade", "gap")
#: the most β grid points (a step of 1e-7 would run for minutes on 60 queries)
MAX_GRID = 10_000


# --------------------------------------------------------------------------- estimator


# long: the public entry point; its docstring documents every parameter
def estimate_beta(
    attractiveness,
    groups,
    *,
    qptr,
    rng: np.random.Generator | None = None,
    clusters=None,
    cluster_size: int | None = None,
    grid=None,
    zero_policy: str = "exclude",
    jitter: float = 0.5,
    grade_spacing: float | None = None,
    group_threshold: float | None = None,
    split: int = 16,
    distance: str = "ks",
    reference=None,
    tie: str = "largest",
) -> BetaEstimate:
    """Estimate the group propensity ``beta_A`` by Eq. (14), amortized over clusters (§5.2).

    Parameters
    ----------
    attractiveness : float [n_items], observed non-negative scores ``a``
    groups : float [n_items] in {0, 1} (1 = affected); fractions need ``group_threshold``
    qptr : int64 [n_queries + 1] query offsets
    rng : generator for the jitter and the random clusters (required when used)
    clusters : [n_queries] cluster label of every query (any hashable sortable labels)
    cluster_size : k for random clusters of k queries (exclusive with ``clusters``)
    grid : candidate betas in (0, 1], default ``0.01..1.00`` step 0.01
    zero_policy : ``"exclude"`` (default: positive scores only) or ``"include"``
    jitter : tie-breaking noise as a fraction in [0, 1) of half the spacing (0 = none)
    grade_spacing : None (default) for the smallest gap between distinct scores; a positive
        spacing (e.g. ``1/L``, the spacing of graded relevance ``label/L``) makes the noise
        ``U(-h, h)``, ``h = jitter * grade_spacing / 2`` (zeros move up only, no score drops
        below half its value). With continuous biased scores the smallest gap is tiny and
        the jitter breaks exact ties only; noise on the grade scale also smooths the KS curve
        of small clusters (§6.1: noise "without swapping the order of the grades").
    group_threshold : for fractional groups, ``g >= group_threshold`` counts as affected
    split : branch-and-bound fan-out (speed knob only)
    distance : ``"ks"`` (Eq. 14, default) or ``"wasserstein"`` (W1 between the rescaled
        affected scores and the comparison sample, :mod:`groupbias.estimate.distances`)
    reference : float [n_ref] or None: a comparison sample that replaces the non-affected
        scores in every cluster (the calibrated estimator passes the affected group's
        editorial relevance here); the zero policy and the jitter apply to it as well
    tie : which minimizer of a flat curve: ``"largest"`` (default), ``"smallest"`` or
        ``"middle"`` (:func:`grid_argmin`)

    ``beta_hat[c] = argmin_beta KS(A_A^c / beta, A_N^c)`` with ``A_G^c`` the (jittered) scores
    of group ``G`` over all queries of cluster ``c``; ties go to the largest ``beta``. See
    the module docstring for all conventions. Every parameter is validated before any random
    number is drawn.
    """
    inp = _validated(
        attractiveness,
        groups,
        qptr,
        rng=rng,
        clusters=clusters,
        cluster_size=cluster_size,
        grid=grid,
        zero_policy=zero_policy,
        jitter=jitter,
        grade_spacing=grade_spacing,
        group_threshold=group_threshold,
        split=split,
        distance=distance,
        reference=reference,
        tie=tie,
    )
    cq, labels = _clusters_of_queries(inp.qptr.size - 1, clusters, cluster_size, rng)
    return _search(inp, cq, labels, rng)


def argmin_largest(curves: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Grid value minimizing each row of ``curves`` [n_rows, n_grid], ties to the largest
    grid value (float [n_rows]); rows that are entirely NaN (failed clusters) give NaN."""
    return grid_argmin(curves, grid, "largest")


def grid_argmin(curves: np.ndarray, grid: np.ndarray, tie: str = "largest") -> np.ndarray:
    """Grid value minimizing each row of ``curves`` [n_rows, n_grid] (float [n_rows]; NaN
    for rows that are entirely NaN). Among the grid values attaining the minimum,
    ``tie="largest"`` takes the largest, ``"smallest"`` the smallest and ``"middle"`` the
    one halfway between them (index ``(first + last) // 2``: the middle of a flat region)."""
    choice("tie", tie, MINIMIZER_TIES)
    curves = np.asarray(curves, dtype=np.float64)
    grid = np.asarray(grid, dtype=np.float64)
    out = np.full(curves.shape[0], np.nan)
    ok = ~np.all(np.isnan(curves), axis=1)
    if ok.any():
        c = curves[ok]
        at = c == np.nanmin(c, axis=1)[:, None]
        first = np.argmax(at, axis=1)
        last = grid.size - 1 - np.argmax(at[:, ::-1], axis=1)
        idx = {"largest": last, "smallest": first, "middle": (first + last) // 2}[tie]
        out[ok] = grid[idx]
    return out


@dataclass(frozen=True)
class _Inputs:
    """Validated inputs of :func:`estimate_beta`."""

    scores: np.ndarray  # float64 [n_items]
    affected: np.ndarray  # bool [n_items]
    qptr: np.ndarray  # int64 [n_queries + 1]
    grid: np.ndarray
    zero_policy: str
    jitter: float
    grade_spacing: float | None
    split: int
    distance: str = "ks"
    reference: np.ndarray | None = None  # float [n_ref], replaces the non-affected sample
    tie: str = "largest"


# long: one check per parameter of estimate_beta, all before any random draw
def _validated(
    attractiveness,
    groups,
    qptr,
    *,
    rng,
    clusters,
    cluster_size,
    grid,
    zero_policy,
    jitter,
    grade_spacing,
    group_threshold,
    split,
    distance="ks",
    reference=None,
    tie="largest",
) -> _Inputs:
    """Every parameter of :func:`estimate_beta` checked, before any random draw."""
    a = _scores("attractiveness", attractiveness)
    choice("distance", distance, DISTANCES)
    choice("tie", tie, MINIMIZER_TIES)
    ref = None if reference is None else _scores("reference", reference)
    q = check_qptr(qptr, a.size)
    if q.size < 2:
        raise ParameterError("qptr", "at least one query", "no queries")
    affected = affected_group(groups, group_threshold, n=a.size)
    choice("zero_policy", zero_policy, ZERO_POLICIES)
    g = _check_grid(grid)
    real(
        "jitter",
        jitter,
        low=0.0,
        high=1.0,
        high_open=True,
        what="a fraction in [0, 1) of half the spacing",
    )
    if grade_spacing is not None:
        real(
            "grade_spacing",
            grade_spacing,
            low=0.0,
            high=1.0,
            low_open=True,
            what="None or a grade spacing in (0, 1]",
        )
    integer("split", split, low=2)
    if clusters is not None and cluster_size is not None:
        raise ParameterError("clusters", "either clusters or cluster_size, not both", "both given")
    if cluster_size is not None:
        integer("cluster_size", cluster_size, low=1, what="an integer >= 1 (1 = per query)")
    if jitter != 0 or cluster_size is not None:
        generator(rng, used_for="the jitter and the random clusters")
    return _Inputs(
        a,
        affected,
        q,
        g,
        zero_policy,
        float(jitter),
        None if grade_spacing is None else float(grade_spacing),
        int(split),
        distance,
        ref,
        tie,
    )


def _clusters_of_queries(n_q: int, clusters, cluster_size, rng) -> tuple[np.ndarray, np.ndarray]:
    """``(cluster index of every query, label of every cluster)``: given labels, random
    clusters of ``cluster_size`` queries, or one global cluster."""
    if clusters is not None:
        lab = np.asarray(clusters)
        if lab.shape != (n_q,):
            raise ParameterError(
                "clusters", f"one label per query (length {n_q})", f"shape {lab.shape}"
            )
        try:
            labels, cq = np.unique(lab, return_inverse=True)
        except TypeError:  # labels that cannot be ordered together (ints and strings, None)
            kinds = sorted({type(v).__name__ for v in lab.ravel()})
            raise ParameterError(
                "clusters",
                "cluster labels of one kind (all integers or all strings)",
                f"a mix of {', '.join(kinds)}",
            ) from None
        return cq.astype(np.int64).reshape(-1), labels
    if cluster_size is not None:
        cq = random_clusters(n_q, cluster_size=cluster_size, rng=rng)
        return cq, np.arange(int(cq.max(initial=-1)) + 1, dtype=np.int64)
    return np.zeros(n_q, dtype=np.int64), np.zeros(1, dtype=np.int64)


def _search(
    inp: _Inputs, cq: np.ndarray, labels: np.ndarray, rng: np.random.Generator | None
) -> BetaEstimate:
    """Jitter the scores used, split them by group and cluster, and minimize Eq. (14)."""
    n_c = int(labels.size)
    used = None if inp.zero_policy == "include" else inp.scores > 0
    vals = inp.scores if used is None else inp.scores[used]
    aff = inp.affected if used is None else inp.affected[used]
    if inp.jitter != 0:
        vals = _jitter(vals, generator(rng), inp.jitter, inp.grade_spacing)
    x, y = vals[aff], vals[~aff]
    del vals
    if n_c == 1:
        cx, cy = zero_clusters(x.size), zero_clusters(y.size)
    else:
        cl = cq[query_index(inp.qptr)]
        if used is not None:
            cl = cl[used]
        cx, cy = cl[aff], cl[~aff]
    if inp.reference is not None:
        y, cy = _shared_reference(inp, n_c, rng)
    curves = grid_curves(x, cx, y, cy, n_c, inp.grid, distance=inp.distance, split=inp.split)
    beta_hat = grid_argmin(curves, inp.grid, inp.tie)
    return BetaEstimate(
        beta_hat=beta_hat,
        cluster_of_query=cq,
        beta_hat_per_query=beta_hat[cq],
        grid=inp.grid,
        ks_curve=curves,
        n_affected=np.bincount(cx, minlength=n_c).astype(np.int64),
        n_non_affected=np.bincount(cy, minlength=n_c).astype(np.int64),
        cluster_labels=labels,
    )


def _shared_reference(inp: _Inputs, n_c: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """The reference sample (zero policy and jitter applied as to the scores), repeated for
    every cluster: ``(values [n_c * n_ref], cluster [n_c * n_ref])``."""
    ref = inp.reference
    assert ref is not None
    if inp.zero_policy == "exclude":
        ref = ref[ref > 0]
    if inp.jitter != 0:
        ref = _jitter(ref, generator(rng), inp.jitter, inp.grade_spacing)
    if n_c * ref.size > MAX_PAIRS:
        raise ParameterError(
            "reference",
            f"at most {MAX_PAIRS} reference values x clusters",
            f"{ref.size} values x {n_c} clusters",
            fix="use larger clusters (cluster_size) or a smaller reference sample",
        )
    return np.tile(ref, n_c), np.repeat(np.arange(n_c, dtype=np.int64), ref.size)


def grid_curves(
    x: np.ndarray,
    cx: np.ndarray,
    y: np.ndarray,
    cy: np.ndarray,
    n_clusters: int,
    grid: np.ndarray,
    *,
    distance: str = "ks",
    split: int = 16,
) -> np.ndarray:
    """The distance ``D(x_c / beta, y_c)`` for every cluster ``c`` and grid value
    (float [n_clusters, n_grid], NaN rows where a cluster lacks a sample); ``distance`` is
    ``"ks"`` (Eq. 14, exact) or ``"wasserstein"`` (W1, :mod:`groupbias.estimate.distances`)."""
    if choice("distance", distance, DISTANCES) == "wasserstein":
        return wasserstein_curves(x, cx, y, cy, n_clusters, grid)
    return ks_matrix(x, cx, y, cy, n_clusters, grid, split)


# --------------------------------------------------------------------------- grid, KS


def default_grid(step: float = 0.01) -> np.ndarray:
    """The grid ``step, 2*step, ..., 1`` (float64); ``step`` must divide 1 into ``k`` parts.

    The values are computed as ``i / k`` (correctly rounded), so the default grid is exactly
    ``0.01, 0.02, ..., 1.00``.
    """
    if not is_real(step) or not 1.0 / MAX_GRID <= step <= 1:
        raise ParameterError(
            "step",
            f"a number in [{1.0 / MAX_GRID:g}, 1] (at most {MAX_GRID:,} grid points, each a "
            "KS statistic per cluster)",
            step,
        )
    k = int(round(1.0 / step))
    if k < 1 or abs(k * step - 1.0) > 1e-9:
        raise ParameterError("step", "1 / k for an integer k (e.g. 0.01, 0.05, 0.1)", step)
    return np.arange(1, k + 1, dtype=np.float64) / k


def _check_grid(grid) -> np.ndarray:
    if grid is None:
        return default_grid()
    g = np.asarray(grid, dtype=np.float64)
    if g.ndim != 1 or g.size < 1:
        raise ParameterError("grid", "a non-empty 1-D array of beta values", f"shape {g.shape}")
    if not np.all(np.isfinite(g)) or g.min() <= 0 or g.max() > 1:
        raise ParameterError("grid", "values in (0, 1]", f"range [{g.min()!r}, {g.max()!r}]")
    if np.any(np.diff(g) <= 0):
        raise ParameterError(
            "grid",
            "strictly increasing values",
            "unsorted or repeated values",
            fix="pass np.unique(grid)",
        )
    return g


def _scores(name: str, values) -> np.ndarray:
    a = np.asarray(values)
    if a.ndim != 1 or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        raise ParameterError(name, "a 1-D numeric array", f"shape {a.shape}, dtype {a.dtype}")
    a = a.astype(np.float64, copy=False)
    if a.size and (not np.all(np.isfinite(a)) or a.min() < 0):
        raise ParameterError(
            name, "finite non-negative scores", "NaN, infinite or negative entries"
        )
    return a


# --------------------------------------------------------------------------- KS statistic


def ks_statistic(a, b) -> float:
    """Two-sample Kolmogorov–Smirnov statistic ``sup_x |F_a(x) - F_b(x)|``.

    ``a`` [n_a], ``b`` [n_b] are 1-D finite samples; the empirical CDFs are right-continuous
    and the supremum is taken over the pooled sample points (where it is attained). Equals
    ``scipy.stats.ks_2samp(a, b).statistic``.
    """
    x = np.sort(np.asarray(a, dtype=np.float64).ravel())
    y = np.sort(np.asarray(b, dtype=np.float64).ravel())
    for name, v in (("a", x), ("b", y)):
        if v.size == 0:
            raise ParameterError(name, "a non-empty sample", "an empty array")
        if not np.all(np.isfinite(v)):
            raise ParameterError(name, "finite values", "NaN or infinite entries")
    pooled = np.concatenate([x, y])
    d = (
        np.searchsorted(x, pooled, side="right") / x.size
        - np.searchsorted(y, pooled, side="right") / y.size
    )
    return float(np.max(np.abs(d)))


def ks_curves(
    affected,
    non_affected,
    *,
    grid=None,
    affected_cluster=None,
    non_affected_cluster=None,
    n_clusters: int | None = None,
    split: int = 16,
    method: str = "auto",
) -> np.ndarray:
    """KS statistic ``KS(A_A / beta, A_N)`` for every grid point and cluster (Eq. 14).

    Parameters
    ----------
    affected : float [n_a] non-negative scores of the affected group ``A_A``
    non_affected : float [n_n] scores of the non-affected group ``A_N``
    grid : float [n_grid] strictly increasing in (0, 1]; default :func:`default_grid`
    affected_cluster, non_affected_cluster : int [n_a], int [n_n] cluster index
        (``0..n_clusters-1``) of every score; default: one cluster
    n_clusters : number of clusters (default: ``1 + max`` of the cluster indices)
    split : sub-runs per split in the exact branch-and-bound (a speed knob, >= 2)
    method : ``"auto"`` (default), ``"pairs"`` or ``"bound"``: two exact algorithms with the
        same result; ``"pairs"`` enumerates all affected/non-affected pairs of a cluster (fast
        for small clusters), ``"bound"`` is the branch-and-bound (fast for large ones);
        ``"auto"`` picks per cluster (pairs when ``m * n <= 0.25 * n_grid * (m + n)``)

    Returns
    -------
    float [n_clusters, n_grid]; row ``c`` is NaN where cluster ``c`` lacks one of the groups.
    No jitter and no zero policy are applied here (see :func:`estimate_beta`).
    """
    x = _scores("affected", affected)
    y = _scores("non_affected", non_affected)
    g = _check_grid(grid)
    if not is_integer(split) or split < 2:
        raise ParameterError("split", "an integer >= 2", split)
    if method not in ("auto", "pairs", "bound"):
        raise ParameterError("method", "one of 'auto', 'pairs', 'bound'", method)
    cx, cy, n_c = _cluster_inputs(affected_cluster, non_affected_cluster, n_clusters, x, y)
    if method == "pairs":
        pairs = np.bincount(cx, minlength=n_c) * np.bincount(cy, minlength=n_c)
        if pairs.size and pairs.max() > MAX_PAIRS:
            raise ParameterError(
                "method",
                f"'bound' or 'auto' for clusters with more than "
                f"{MAX_PAIRS} affected x non-affected pairs",
                "pairs",
                fix=f"largest cluster has {int(pairs.max())} pairs",
            )
    return ks_matrix(x, cx, y, cy, n_c, g, int(split), method)


def _cluster_inputs(affected_cluster, non_affected_cluster, n_clusters, x, y):
    """Checked cluster indices of both samples and the number of clusters."""
    if (affected_cluster is None) != (non_affected_cluster is None):
        raise ParameterError(
            "affected_cluster", "given together with non_affected_cluster", "only one of them"
        )
    if affected_cluster is None:
        if n_clusters not in (None, 1):
            raise ParameterError("n_clusters", "1 (or None) without cluster indices", n_clusters)
        cx = np.zeros(x.size, dtype=np.int64)
        cy = np.zeros(y.size, dtype=np.int64)
        n_c = 1
    else:
        cx = _cluster_index("affected_cluster", affected_cluster, x.size)
        cy = _cluster_index("non_affected_cluster", non_affected_cluster, y.size)
        top = max(int(cx.max(initial=-1)), int(cy.max(initial=-1))) + 1
        if n_clusters is None:
            n_c = max(top, 1)
        else:
            if not is_integer(n_clusters) or n_clusters < max(top, 1):
                raise ParameterError("n_clusters", f"an integer >= {max(top, 1)}", n_clusters)
            n_c = int(n_clusters)
    return cx, cy, n_c


def _cluster_index(name: str, values, n: int) -> np.ndarray:
    a = np.asarray(values)
    if a.shape != (n,) or not np.issubdtype(a.dtype, np.integer):
        raise ParameterError(
            name, f"integer cluster indices of length {n}", f"shape {a.shape}, dtype {a.dtype}"
        )
    if a.size and a.min() < 0:
        raise ParameterError(name, "non-negative cluster indices", int(a.min()))
    return a.astype(np.int64, copy=False)


# --------------------------------------------------------------------------- jitter, clusters


def tie_break_jitter(values, *, rng: np.random.Generator, jitter: float = 0.5) -> np.ndarray:
    """Order-preserving tie-breaking noise (§6.1).

    Returns ``values + u`` (a new float64 array [n]) with ``u ~ Uniform(-h, h)`` for positive
    values and ``u ~ Uniform(0, h)`` for zeros, ``h = jitter * gap / 2`` where ``gap`` is the
    smallest distance between distinct values of ``{0} ∪ values``. For ``0 <= jitter < 1``
    every ``|u| < gap / 2``, so distinct values never swap order and stay non-negative;
    only exact ties are broken. ``jitter = 0`` returns an unchanged copy.
    """
    v = _scores("values", values)
    if not is_real(jitter) or not 0 <= jitter < 1:
        raise ParameterError("jitter", "a fraction in [0, 1) of half the smallest gap", jitter)
    return _jitter(v, generator(rng), float(jitter))


def _jitter(
    v: np.ndarray, rng: np.random.Generator, jitter: float, scale: float | None = None
) -> np.ndarray:
    if jitter == 0 or v.size == 0:
        return v.copy()
    if scale is not None:
        # noise on the scale of the relevance grades (spacing ``scale``): it smooths the KS
        # curve of small clusters; scores of different grades keep their order
        h = jitter * scale / 2.0
        u = rng.uniform(-h, h, size=v.size)
        # where(v == 0, |u|, max(v + u, v / 2)) computed in u: v + u is u where v == 0
        zero = v == 0
        np.add(v, u, out=u)
        np.abs(u, out=u, where=zero)
        return np.maximum(u, np.multiply(v, 0.5), out=u)
    srt = np.sort(v)
    steps = np.diff(srt)
    gap = float(np.min(steps, where=steps > 0, initial=np.inf))
    first_pos = int(np.searchsorted(srt, 0.0, side="right"))
    if first_pos < srt.size:  # distance of the smallest positive value to 0
        gap = min(gap, float(srt[first_pos]))
    if not np.isfinite(gap):
        return v.copy()
    h = jitter * gap / 2.0
    u = rng.uniform(-h, h, size=v.size)
    if first_pos:
        zero = v == 0
        u[zero] = np.abs(u[zero])
    return v + u


def random_clusters(n_queries: int, *, cluster_size: int, rng: np.random.Generator) -> np.ndarray:
    """Random clusters of at most ``cluster_size`` queries whose sizes differ by at most one:
    ``n_c = ceil(n_queries / cluster_size)`` clusters, a random permutation of the queries
    cut into ``n_c`` consecutive runs of ``floor`` or ``ceil(n_queries / n_c)`` queries (201
    queries at size 100: three clusters of 67, not 100/100/1, so no remainder cluster of a
    few queries weighs as much as a full one in the mean β̂). Returns int64 [n_queries]
    cluster indices ``0..n_c - 1``."""
    integer("cluster_size", cluster_size, low=1, what="an integer >= 1 (1 = per query)")
    generator(rng)
    n = int(n_queries)
    n_c = -(-n // int(cluster_size))
    perm = rng.permutation(n)
    out = np.empty(n, dtype=np.int64)
    out[perm] = np.arange(n, dtype=np.int64) * n_c // max(n, 1)
    return out
