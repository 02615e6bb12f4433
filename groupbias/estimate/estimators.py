"""β estimators behind one interface (the ``estimator`` config group, ``ESTIMATORS`` registry).

Every estimator takes observed attractiveness, affected-group memberships and query offsets
and returns a :class:`~groupbias.estimate.beta_estimate.BetaEstimate`:

- ``ks`` (:class:`KSEstimator`): the amortized grid search of Eq. (14). Assumes both groups'
  utilities share one distribution (Eq. 13). ``distance="wasserstein"`` swaps KS for W1 on the
  same grid; ``cluster_size="auto"`` picks the cluster size by a bootstrap estimate of the
  per-query mean squared error.
- ``calibrated`` (:class:`CalibratedKSEstimator`): solves Eq. (14) against the affected
  group's *own* utility distribution, learned from editorial relevance of a small random
  fraction of the queries, instead of the non-affected group's: it assumes only that the
  labeled queries are a random sample of the queries.
- ``shrinkage`` (:class:`ShrinkageEstimator`): per-query estimates shrunk toward their cluster
  estimate by empirical Bayes, for heterogeneous per-query propensities (large σ_β, two modes).

``bootstrap=B`` (every cluster-level estimator) adds a percentile confidence interval per
cluster from ``B`` two-stage bootstrap replicates: queries resampled within each cluster, then
items within each drawn query and group (single-query clusters thus still get the sampling
noise of their items). docs/method.md states each estimator's assumption and formula.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, ClassVar, Protocol

import numpy as np

from ..core.errors import AssumptionWarning, ParameterError
from ..core.registry import ESTIMATORS
from ..core.segments import query_index
from ..core.validation import choice, generator, integer, real, sequence
from ..data.membership import AFFECTED_SPLIT, affected_group
from .beta_estimate import BetaEstimate
from .debias import BIAS_CORRECTIONS, bootstrap_bias
from .distances import DISTANCES
from .ks import (
    JITTER_SCALES,
    MINIMIZER_TIES,
    ZERO_POLICIES,
    default_grid,
    estimate_beta,
)
from .resampling import replicate_batches, resample_items, resample_queries

if TYPE_CHECKING:  # what estimate_simulated reads
    from ..data.ranking_data import RankingData
    from ..simulate.group_bias import Simulation

__all__ = [
    "Estimator",
    "KSEstimator",
    "CalibratedKSEstimator",
    "ShrinkageEstimator",
    "estimate_simulated",
    "bootstrap_interval",
    "per_query_noise",
    "AUTO_SIZES",
]

#: candidate cluster sizes of ``cluster_size="auto"`` (None: one global cluster)
AUTO_SIZES = (1, 2, 5, 10, 20, 50, 100, None)


class Estimator(Protocol):
    """A β estimator (:data:`groupbias.core.registry.ESTIMATORS`): from observed attractiveness,
    affected-group memberships and query offsets, a :class:`BetaEstimate` per cluster.

    ``clusters``: explicit query clusters (one label per query) to amortize over;
    ``grade_spacing``: the spacing of the relevance grades when the caller knows it (for
    tie-breaking noise on the grade scale), else None; ``relevance``: editorial relevance
    P(R) of the items where the caller has it (simulations) -- an estimator may read it only
    as a labeled *sample* (the calibrated estimator reads the queries it draws), never to
    look at the answer."""

    def estimate(
        self,
        attractiveness,
        groups,
        *,
        qptr,
        clusters=None,
        rng: np.random.Generator | None = None,
        grade_spacing: float | None = None,
        relevance=None,
    ) -> BetaEstimate: ...


def estimate_simulated(
    estimator: Estimator,
    data: RankingData,
    sim: Simulation,
    *,
    rng: np.random.Generator | None,
    clusters=None,
    point: bool = False,
) -> BetaEstimate:
    """β̂ of ``estimator`` on a simulation of ``data``: the simulated attractiveness with the
    data's groups and query offsets, tie-breaking noise on the data's grade spacing, the
    simulated relevance as the labeled sample an estimator may read; ``clusters``: explicit
    query clusters. ``point``: the point estimate only (the estimator's ``point`` method
    where it has one, without a configured bootstrap interval)."""
    fn = getattr(estimator, "point", estimator.estimate) if point else estimator.estimate
    return fn(
        sim.attractiveness,
        data.groups,
        qptr=data.qptr,
        clusters=clusters,
        rng=rng,
        grade_spacing=data.grade_spacing,
        relevance=sim.relevance,
    )


def _cluster_mean(values: np.ndarray, labels: np.ndarray, n: int) -> np.ndarray:
    """NaN-aware mean of ``values`` per label ``0..n-1`` (NaN where no finite value)."""
    ok = np.isfinite(values)
    s = np.bincount(labels[ok], weights=values[ok], minlength=n)
    c = np.bincount(labels[ok], minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(c > 0, s / np.maximum(c, 1), np.nan)


def bootstrap_interval(
    estimator,
    attractiveness,
    groups,
    *,
    qptr,
    cluster_of_query,
    rng: np.random.Generator,
    n_boot: int = 200,
    confidence: float = 0.9,
    grade_spacing: float | None = None,
    relevance=None,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval ``(low [n_c], high [n_c])`` of the cluster estimates of
    ``estimator`` (any :class:`Estimator` that honours explicit ``clusters``).

    Each replicate resamples queries within every cluster of ``cluster_of_query``, then the
    items of each drawn query within its groups (two-stage bootstrap), and re-estimates with
    the replicate's clusters; a cluster's replicate value is the mean per-query estimate of
    its resampled queries. Replicates run in batches (one estimator call per batch)."""
    integer("n_boot", n_boot, low=2)
    level = real("confidence", confidence, low=0.0, high=1.0, low_open=True, high_open=True)
    generator(rng, used_for="the bootstrap")
    a = np.asarray(attractiveness, dtype=np.float64)
    g = np.asarray(groups, dtype=np.float64)
    rel = None if relevance is None else np.asarray(relevance, dtype=np.float64)
    q = np.asarray(qptr, dtype=np.int64)
    cq = np.asarray(cluster_of_query, dtype=np.int64)
    n_c = int(cq.max(initial=-1)) + 1
    aff = affected_group(g)
    draws = []
    for reps in replicate_batches(int(n_boot), a.size):
        i1, q1, c1 = resample_queries(q, cq, reps, rng)
        i2, q2 = resample_items(q1, aff[i1], range(1), rng)
        idx = i1[i2]
        est = estimator.estimate(
            a[idx],
            g[idx],
            qptr=q2,
            clusters=c1,
            rng=rng,
            grade_spacing=grade_spacing,
            relevance=None if rel is None else rel[idx],
        )
        per = _cluster_mean(est.beta_hat_per_query, c1, len(reps) * n_c)
        draws.append(per.reshape(len(reps), n_c))
    d = np.concatenate(draws)
    tail = 100.0 * (1.0 - level) / 2.0
    with np.errstate(all="ignore"):
        ok = np.isfinite(d).any(axis=0)
        low = np.full(n_c, np.nan)
        high = np.full(n_c, np.nan)
        if ok.any():
            low[ok] = np.nanpercentile(d[:, ok], tail, axis=0)
            high[ok] = np.nanpercentile(d[:, ok], 100.0 - tail, axis=0)
    return low, high


def per_query_noise(
    attractiveness,
    groups,
    *,
    qptr,
    rng: np.random.Generator,
    n_boot: int,
    **search,
) -> tuple[BetaEstimate, np.ndarray, np.ndarray]:
    """The per-query estimate (clusters of one query) and, over ``n_boot`` item-bootstrap
    replicates (items resampled within each query and group), the replicates' mean (the
    bagged per-query estimate) and variance ``v_q`` (its sampling noise), float [n_queries]
    each; NaN where fewer than two replicates give an estimate. ``search``: keyword
    arguments of :func:`estimate_beta`."""
    a = np.asarray(attractiveness, dtype=np.float64)
    g = np.asarray(groups, dtype=np.float64)
    q = np.asarray(qptr, dtype=np.int64)
    n_q = q.size - 1
    raw = estimate_beta(a, g, qptr=q, clusters=np.arange(n_q), rng=rng, **search)
    aff = affected_group(g)
    draws = []
    for reps in replicate_batches(int(n_boot), a.size):
        idx, qb = resample_items(q, aff, reps, rng)
        labels = np.arange(qb.size - 1)
        est = estimate_beta(a[idx], g[idx], qptr=qb, clusters=labels, rng=rng, **search)
        draws.append(est.beta_hat_per_query.reshape(len(reps), n_q))
    d = np.concatenate(draws)
    two = np.isfinite(d).sum(axis=0) >= 2
    mean = np.full(n_q, np.nan)
    var = np.full(n_q, np.nan)
    if two.any():
        mean[two] = np.nanmean(d[:, two], axis=0)
        var[two] = np.nanvar(d[:, two], axis=0, ddof=1)
    return raw, mean, var


def _fixed(size, clusters) -> int | None:
    """The random-cluster size to use: none with explicit clusters or ``"auto"``."""
    return None if clusters is not None or size is None or size == "auto" else int(size)


def _size_candidates(name: str, values) -> tuple[int | None, ...]:
    def one(key, v):
        return None if v is None else integer(key, v, low=1)

    return sequence(name, values, one, what="cluster sizes (integers >= 1, null = global)")


def _no_bias_correction(estimator, name: str) -> None:
    """The bootstrap bias correction replicates plain KS; another estimator refuses it."""
    if estimator.bias_correction != "none":
        raise ParameterError(
            "bias_correction",
            f"none: the {name} estimator has no bootstrap bias correction (estimator=ks "
            "or per_query has)",
            estimator.bias_correction,
        )


@ESTIMATORS.register("ks")
@dataclass(frozen=True)
class KSEstimator:
    """The amortized grid search of Eq. (14) (the ``estimator`` config).

    ``cluster_size``: None = one global cluster, 1 = per query, k = random clusters of k
    queries, ``"auto"`` = the candidate of ``auto_sizes`` with the least estimated per-query
    mean squared error (see :meth:`choose_cluster_size`; explicit ``clusters`` passed to
    :meth:`estimate` take precedence); ``grid_step``: the β grid ``step, 2 step, ..., 1``;
    ``distance``: ``"ks"`` (Eq. 14) or ``"wasserstein"`` (W1); ``zero_policy``:
    ``"exclude"`` or ``"include"`` zero scores; ``jitter``: tie-breaking noise, a fraction in
    [0, 1); ``jitter_scale``: ``"grade"`` (noise on the grade spacing the caller passes) or
    ``"gap"`` (on the smallest gap between scores); ``bootstrap``: replicates of the
    confidence interval (0 = none) at level ``confidence``; ``auto_boot``: item-bootstrap
    replicates of the per-query noise used by ``"auto"``; ``tie``: the minimizer of a flat
    curve, ``"largest"`` (default), ``"smallest"`` or ``"middle"``
    (:func:`groupbias.estimate.ks.grid_argmin`). Fractional memberships are split at 0.5.
    ``bias_correction``: ``"none"`` or ``"bootstrap"``: subtract the bias of every cluster's
    estimate, measured by ``bias_boot`` parametric-bootstrap replicates drawn at β̂ from the
    run's own scores with per-query propensities of spread ``bias_beta_std``
    (:func:`groupbias.estimate.debias.bootstrap_bias`).
    """

    #: keys used only under another option: key -> (the option, its values that use the key;
    #: None: any value but 0); a key given without them is refused naming the option
    #: (``DEPENDENT_KEYS`` of :func:`groupbias.app.config.build_setup`)
    DEPENDENT_KEYS: ClassVar[dict[str, tuple]] = {
        "bias_boot": ("bias_correction", ("bootstrap",)),
        "bias_beta_std": ("bias_correction", ("bootstrap",)),
        "confidence": ("bootstrap", None),
        "auto_sizes": ("cluster_size", ("auto",)),
        "auto_boot": ("cluster_size", ("auto",)),
        "jitter_scale": ("jitter", None),
    }

    cluster_size: int | str | None = None
    grid_step: float = 0.01
    distance: str = "ks"
    zero_policy: str = "exclude"
    jitter: float = 0.5
    jitter_scale: str = "grade"
    bootstrap: int = 0
    confidence: float = 0.9
    auto_sizes: tuple = AUTO_SIZES
    auto_boot: int = 30
    tie: str = "largest"
    bias_correction: str = "none"
    bias_boot: int = 50
    bias_beta_std: float = 0.0

    def __post_init__(self) -> None:
        choice("tie", self.tie, MINIMIZER_TIES)
        choice("bias_correction", self.bias_correction, BIAS_CORRECTIONS)
        integer("bias_boot", self.bias_boot, low=1)
        real("bias_beta_std", self.bias_beta_std, low=0.0, what="a standard deviation >= 0")
        if self.cluster_size is not None and self.cluster_size != "auto":
            integer(
                "cluster_size",
                self.cluster_size,
                low=1,
                what="null (one global cluster), 'auto' or an integer >= 1",
            )
        try:
            default_grid(self.grid_step)
        except ParameterError as exc:
            raise ParameterError("grid_step", exc.expected, exc.given) from None
        choice("distance", self.distance, DISTANCES)
        choice("zero_policy", self.zero_policy, ZERO_POLICIES)
        real(
            "jitter",
            self.jitter,
            low=0.0,
            high=1.0,
            high_open=True,
            what="a fraction in [0, 1) (0 = no tie-breaking noise)",
        )
        choice("jitter_scale", self.jitter_scale, JITTER_SCALES)
        integer("bootstrap", self.bootstrap, low=0, what="0 (no interval) or replicates >= 2")
        if self.bootstrap == 1:
            raise ParameterError("bootstrap", "0 (no interval) or replicates >= 2", 1)
        real("confidence", self.confidence, low=0.0, high=1.0, low_open=True, high_open=True)
        object.__setattr__(self, "auto_sizes", _size_candidates("auto_sizes", self.auto_sizes))
        integer("auto_boot", self.auto_boot, low=2)

    def search(self, grade_spacing: float | None) -> dict:
        """Keyword arguments of :func:`estimate_beta` fixed by this configuration (fractional
        memberships split at :data:`~groupbias.data.membership.AFFECTED_SPLIT`)."""
        return {
            "group_threshold": AFFECTED_SPLIT,
            "grid": default_grid(self.grid_step),
            "distance": self.distance,
            "zero_policy": self.zero_policy,
            "jitter": self.jitter,
            "grade_spacing": grade_spacing if self.jitter_scale == "grade" else None,
            "tie": self.tie,
        }

    def point(
        self, attractiveness, groups, *, qptr, clusters, rng, grade_spacing, relevance
    ) -> BetaEstimate:
        """The estimate without interval (what the bootstrap repeats)."""
        size = self.cluster_size
        info = {}
        if clusters is None and size == "auto":
            size, mse = self.choose_cluster_size(
                attractiveness, groups, qptr=qptr, rng=rng, grade_spacing=grade_spacing
            )
            info = {"cluster_size": size, "mse": mse}
        est = estimate_beta(
            attractiveness,
            groups,
            qptr=qptr,
            rng=rng,
            clusters=clusters,
            cluster_size=_fixed(size, clusters),
            **self.search(grade_spacing),
        )
        if self.bias_correction == "bootstrap":
            est = self.debiased(
                est, attractiveness, groups, qptr=qptr, rng=rng, grade_spacing=grade_spacing
            )
        return replace(est, info={**est.info, **info}) if info else est

    def debiased(self, est: BetaEstimate, attractiveness, groups, *, qptr, rng, grade_spacing):
        """``est`` less the bias :func:`~groupbias.estimate.debias.bootstrap_bias` measures
        (clipped to the grid's range; a cluster whose bias is unknown keeps its estimate);
        ``info`` keeps the plain estimate (``beta_hat_plain``) and the bias per cluster."""
        rng = generator(rng, used_for="the bias correction")
        bias = bootstrap_bias(
            est,
            attractiveness,
            affected_group(groups, AFFECTED_SPLIT),
            qptr=qptr,
            n_boot=self.bias_boot,
            beta_std=self.bias_beta_std,
            rng=rng,
            search=self.search(grade_spacing),
        )
        fixed = np.where(np.isfinite(bias), est.beta_hat - np.nan_to_num(bias), est.beta_hat)
        fixed = np.clip(fixed, default_grid(self.grid_step)[0], 1.0)
        info = {**est.info, "beta_hat_plain": est.beta_hat, "bias": bias}
        return replace(
            est, beta_hat=fixed, beta_hat_per_query=fixed[est.cluster_of_query], info=info
        )

    def estimate(
        self,
        attractiveness,
        groups,
        *,
        qptr,
        clusters=None,
        rng: np.random.Generator | None = None,
        grade_spacing: float | None = None,
        relevance=None,
    ) -> BetaEstimate:
        est = self.point(
            attractiveness,
            groups,
            qptr=qptr,
            clusters=clusters,
            rng=rng,
            grade_spacing=grade_spacing,
            relevance=relevance,
        )
        if self.bootstrap:
            low, high = bootstrap_interval(
                self.replicate_estimator(),
                attractiveness,
                groups,
                qptr=qptr,
                cluster_of_query=est.cluster_of_query,
                rng=generator(rng, used_for="the bootstrap"),
                n_boot=self.bootstrap,
                confidence=self.confidence,
                grade_spacing=grade_spacing,
                relevance=relevance,
            )
            est = replace(est, ci_low=low, ci_high=high)
        self.warn_if_unreliable(est, n_queries=int(np.asarray(qptr).size) - 1)
        return est

    def warn_if_unreliable(self, est: BetaEstimate, *, n_queries: int) -> None:
        """What the estimate says about its own reliability before any check: nothing here
        (the null check judges plain KS)."""

    def replicate_estimator(self) -> KSEstimator:
        """What each bootstrap replicate runs: this estimator without an interval of its own
        (the replicates keep the chosen clusters)."""
        return replace(self, bootstrap=0)

    def choose_cluster_size(
        self, attractiveness, groups, *, qptr, rng, grade_spacing
    ) -> tuple[int | None, dict]:
        """The candidate of ``auto_sizes`` with the least estimated per-query MSE.

        With ``b_1(q)`` the per-query estimate, ``v_q`` its item-bootstrap variance
        (:func:`per_query_noise`) and ``b_k(q)`` the estimate of q's cluster of ``k_q``
        queries, ``MSE(k) = mean_q[(b_k(q) - b_1(q))^2 - (1 - 2 / k_q) v_q]`` (an unbiased
        risk estimate when ``b_1`` is unbiased for ``beta_q`` and a query weighs ``1 / k_q``
        in its cluster's estimate); ``MSE(1) = mean_q v_q``. Returns ``(size, {size: MSE})``.
        """
        rng = generator(rng, used_for="cluster_size=auto")
        search = self.search(grade_spacing)
        raw, _, v = per_query_noise(
            attractiveness, groups, qptr=qptr, rng=rng, n_boot=self.auto_boot, **search
        )
        b1 = raw.beta_hat_per_query
        n_q = b1.size
        mse: dict = {}
        for k in self.auto_sizes:
            if k == 1:  # the per-query estimate itself: its MSE is its noise
                ok = np.isfinite(v)
                mse[k] = float(v[ok].mean()) if ok.any() else float("inf")
                continue
            est = estimate_beta(
                attractiveness,
                groups,
                qptr=qptr,
                rng=rng,
                cluster_size=None if k is None or k >= n_q else k,
                **search,
            )
            kq = np.bincount(est.cluster_of_query)[est.cluster_of_query]
            term = (est.beta_hat_per_query - b1) ** 2 - (1.0 - 2.0 / kq) * v
            ok = np.isfinite(term)
            mse[k] = float(term[ok].mean()) if ok.any() else float("inf")
        best = min(mse, key=lambda k: (mse[k], -(n_q if k is None else k)))
        return best, mse


@ESTIMATORS.register("calibrated")
@dataclass(frozen=True)
class CalibratedKSEstimator(KSEstimator):
    """Eq. (14) against the affected group's own utility distribution (calibrated KS).

    A random ``labeled_fraction`` of the queries (at least ``min_labeled_queries``) is taken
    as the editorially labeled sample: the relevance of *their* affected items is the
    reference ``R_A``, and ``beta_hat[c] = argmin_beta D(A_A^c / beta, R_A)`` with the
    configured distance ``D``. It does not assume the two groups share a distribution, only
    that the labeled queries are a random sample (so their affected utilities are
    distributed like the others'), and that non-affected attractiveness is on the relevance
    scale (``beta_N = 1``, Eq. 2).

    Its error is the labeled sample's: a small or unrepresentative sample moves β̂ by the
    factor its affected utilities are off. So by default it reports a ``bootstrap`` interval
    (200 replicates; every replicate draws its own labeled sample, so the interval shows
    that error), warns (:class:`~groupbias.core.errors.AssumptionWarning`, naming the count)
    when the labeled sample holds fewer than ``min_labeled_positives`` affected items with
    positive relevance, and the null check runs it on the run's own labeled sample
    (:meth:`with_labeled_sample`), so a sample that misses β misses at β = 1 too."""

    bootstrap: int = 200
    labeled_fraction: float = 0.05
    min_labeled_queries: int = 1
    min_labeled_positives: int = 30
    #: the labeled queries when pinned (:meth:`with_labeled_sample`), else drawn per call
    pinned: tuple | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        real("labeled_fraction", self.labeled_fraction, low=0.0, high=1.0, low_open=True)
        _no_bias_correction(self, "calibrated")
        integer("min_labeled_queries", self.min_labeled_queries, low=1)
        integer("min_labeled_positives", self.min_labeled_positives, low=0)

    def labeled_queries(self, n_queries: int, rng: np.random.Generator) -> np.ndarray:
        """The sorted indices of the labeled queries: drawn without replacement, or the
        pinned ones (:meth:`with_labeled_sample`)."""
        if self.pinned is not None:
            lab = np.asarray(self.pinned, dtype=np.int64)
            if lab.size and int(lab.max()) >= n_queries:
                raise ParameterError(
                    "labeled queries", f"indices below {n_queries}", int(lab.max())
                )
            return lab
        n = max(int(self.min_labeled_queries), int(round(self.labeled_fraction * n_queries)))
        return np.sort(rng.choice(n_queries, size=min(n, n_queries), replace=False))

    def with_labeled_sample(self, queries) -> CalibratedKSEstimator:
        """This estimator on a fixed labeled sample (sorted query indices; the null check
        passes the run's, ``estimate.info["labeled"]``), without an interval or warning."""
        twin = replace(self, bootstrap=0, min_labeled_positives=0)
        lab = np.unique(np.asarray(queries, dtype=np.int64))
        object.__setattr__(twin, "pinned", tuple(int(i) for i in lab))
        return twin

    def replicate_estimator(self) -> CalibratedKSEstimator:
        """Each bootstrap replicate draws its own labeled sample and stays quiet."""
        return replace(self, bootstrap=0, min_labeled_positives=0)

    def warn_if_unreliable(self, est: BetaEstimate, *, n_queries: int) -> None:
        """Warns when the labeled sample holds fewer than ``min_labeled_positives`` affected
        items with positive relevance (naming the count)."""
        positives = int(est.info["labeled_positives"])
        if positives < self.min_labeled_positives:
            warnings.warn(
                f"calibrated estimator: its {est.info['labeled_queries']} labeled queries "
                f"(labeled_fraction={self.labeled_fraction:g} of {n_queries}) hold {positives} "
                f"affected items with positive relevance, fewer than "
                f"{self.min_labeled_positives} (estimator.min_labeled_positives): β̂ rests on "
                f"{positives} reference values and can miss β widely (see its bootstrap "
                "interval). Raise estimator.labeled_fraction",
                AssumptionWarning,
                stacklevel=3,
            )

    def point(
        self, attractiveness, groups, *, qptr, clusters, rng, grade_spacing, relevance
    ) -> BetaEstimate:
        if relevance is None:
            raise ParameterError(
                "relevance",
                "editorial relevance P(R) for the labeled sample of the calibrated estimator",
                None,
                fix="pass relevance= (the pipelines do in every simulation)",
            )
        rng = generator(rng, used_for="drawing the labeled queries")
        q = np.asarray(qptr, dtype=np.int64)
        rel = np.asarray(relevance, dtype=np.float64)
        lab = self.labeled_queries(q.size - 1, rng)
        in_lab = np.isin(query_index(q), lab)
        ref = rel[in_lab & affected_group(groups)]
        if not np.any(ref > 0 if self.zero_policy == "exclude" else ref >= 0):
            raise ParameterError(
                "labeled_fraction",
                "a labeled sample holding affected items with positive relevance",
                self.labeled_fraction,
                fix=f"the {lab.size} labeled queries have none; raise labeled_fraction",
            )
        size = self.cluster_size
        est = estimate_beta(
            attractiveness,
            groups,
            qptr=q,
            rng=rng,
            clusters=clusters,
            cluster_size=_fixed(size, clusters),
            reference=ref,
            **self.search(grade_spacing),
        )
        return replace(
            est,
            info={
                "labeled_queries": int(lab.size),
                "reference_size": int(ref.size),
                "labeled_positives": int(np.count_nonzero(ref > 0)),
                "labeled": lab,
            },
        )


def _shrinkage_variances(b_q, bag, b_c, v) -> tuple[float, float]:
    """``(tau^2, rho)``: the between-query variance of ``beta_q`` around the cluster value and
    the bagged estimate's noise as a fraction of a single estimate's (method of moments)."""
    if b_q.size == 0:
        return 0.0, 1.0
    mv = float(np.mean(v))
    tau2 = max(0.0, float(np.mean((b_q - b_c) ** 2)) - mv)
    rho = max(0.0, float(np.mean((bag - b_c) ** 2)) - tau2) / mv if mv > 0 else 1.0
    return tau2, min(rho, 1.0)


@ESTIMATORS.register("shrinkage")
@dataclass(frozen=True)
class ShrinkageEstimator(KSEstimator):
    """Per-query estimates shrunk toward their cluster estimate (empirical Bayes).

    With ``b_q`` the per-query estimate (Eq. 14 on query q alone), ``n_boot`` item-bootstrap
    replicates of it (items resampled within q's groups, :func:`per_query_noise`) giving the
    bagged estimate ``m_q`` (their mean) and the sampling variance ``v_q`` (their variance),
    and ``b_c`` the estimate of q's cluster (``cluster_size``: None = global), the method of
    moments gives the between-query variance and the bagged estimate's relative noise

        tau^2 = max(0, mean_q (b_q - b_c)^2 - mean_q v_q),
        rho   = min(1, max(0, mean_q (m_q - b_c)^2 - tau^2) / mean_q v_q),

    and the estimate is the posterior mean under ``beta_q ~ (b_c, tau^2)``:

        beta_hat_q = b_c + w_q (m_q - b_c),   w_q = tau^2 / (tau^2 + rho v_q)

    (``w_q = 0`` where ``b_q`` is undefined; ``tau^2 = 0`` gives the cluster estimate). It
    assumes ``beta_q`` varies around its cluster's value with one variance ``tau^2``. The
    result is per query (``cluster_of_query = 0..n_q-1``); ``info`` holds ``tau2``, ``rho``,
    the mean weight and the cluster estimates."""

    n_boot: int = 30

    def __post_init__(self) -> None:
        super().__post_init__()
        integer("n_boot", self.n_boot, low=2)
        _no_bias_correction(self, "shrinkage")
        if self.bootstrap:
            raise ParameterError(
                "bootstrap",
                "0: the shrinkage estimate is per query (use bootstrap on ks/calibrated)",
                self.bootstrap,
            )
        if self.cluster_size == 1 or self.cluster_size == "auto":
            raise ParameterError(
                "cluster_size",
                "null (shrink toward one global estimate) or clusters of k >= 2 queries",
                self.cluster_size,
            )

    def point(
        self, attractiveness, groups, *, qptr, clusters, rng, grade_spacing, relevance
    ) -> BetaEstimate:
        rng = generator(rng, used_for="the shrinkage estimator's bootstrap")
        search = self.search(grade_spacing)
        prior = estimate_beta(
            attractiveness,
            groups,
            qptr=qptr,
            rng=rng,
            clusters=clusters,
            cluster_size=_fixed(self.cluster_size, clusters),
            **search,
        )
        raw, bag, v = per_query_noise(
            attractiveness, groups, qptr=qptr, rng=rng, n_boot=self.n_boot, **search
        )
        b_q, b_c = raw.beta_hat_per_query, prior.beta_hat_per_query
        ok = np.isfinite(b_q) & np.isfinite(bag) & np.isfinite(v) & np.isfinite(b_c)
        tau2, rho = _shrinkage_variances(b_q[ok], bag[ok], b_c[ok], v[ok])
        w = np.zeros(b_q.size)
        if tau2 > 0:
            w[ok] = tau2 / (tau2 + rho * v[ok])
        shrunk = np.where(ok, b_c + w * (np.where(ok, bag, 0.0) - b_c), b_c)
        grid = search["grid"]
        shrunk = np.where(np.isfinite(shrunk), np.clip(shrunk, grid[0], grid[-1]), shrunk)
        n_q = shrunk.size
        return replace(
            raw,
            beta_hat=shrunk,
            beta_hat_per_query=shrunk,
            cluster_of_query=np.arange(n_q, dtype=np.int64),
            cluster_labels=np.arange(n_q, dtype=np.int64),
            info={
                "tau2": tau2,
                "bagged_noise_ratio": rho,
                "mean_noise_var": float(np.mean(v[ok])) if ok.any() else float("nan"),
                "mean_weight": float(np.mean(w[ok])) if ok.any() else 0.0,
                "prior_beta_hat": prior.beta_hat,
            },
        )
