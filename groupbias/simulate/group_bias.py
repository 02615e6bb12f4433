"""Group-bias simulation (paper §3, Eq. 2; §6.1 "Bias simulation"; §6.4.2 variants).

Model
-----
Relevance probabilities ``P(R | q, d)`` come from the labels (:func:`relevance_from_labels`).
Every query ``q`` draws its own group propensity ``beta_q`` (:func:`draw_query_beta`), and the
observed attractiveness follows the multiplicative model of Eq. (2):

    a_d = beta_q * P(R | q, d)    for affected items      (groups = 1),
    a_d = P(R | q, d)             for non-affected items  (groups = 0, beta_N = 1),
    a_d = P(R | q, d) * (g_d * beta_q + 1 - g_d)   for a membership probability g_d,

the last line being the expectation of the first two over the unknown membership.

Propensity draws (§6.1, §6.4.2): ``beta_q ~ N(beta_mean, beta_std)`` per query; values outside
``[beta_min, 1]`` are clipped to that interval (``out_of_range="clip"``, default) or redrawn
from the normal distribution truncated to it (``"resample"``, exact inverse-CDF sampling).
Variants: ``"two_mode"`` assigns every query to one of ``modes`` with equal probability and
draws around that mode (the mode is hidden from the estimator but returned for analysis);
``"clusters"`` draws around a per-cluster mean for a given query clustering.

:class:`GroupBias` is the ``bias`` config group: the settings of
:func:`simulate_group_bias` that stay fixed across an experiment and the β values it sweeps.
Clicks on top of the attractiveness are :mod:`groupbias.simulate.clicks`.

All functions work on flat arrays with query offsets ``qptr`` and take an explicit
``numpy.random.Generator``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..core.errors import ParameterError
from ..core.validation import (
    check_qptr,
    checked_arguments,
    choice,
    generator,
    is_integer,
    real,
    sequence,
    vector,
)
from ..data.ranking_data import RankingData

__all__ = [
    "RELEVANCE_MODES",
    "OUT_OF_RANGE",
    "VARIANTS",
    "relevance_from_labels",
    "draw_query_beta",
    "draw_two_mode_beta",
    "simulate_attractiveness",
    "item_propensity",
    "Simulation",
    "simulate_group_bias",
    "GroupBias",
    "BIAS_VARIANTS",
    "RELEVANCE",
]

RELEVANCE_MODES = ("graded", "continuous")
OUT_OF_RANGE = ("clip", "resample")
VARIANTS = ("normal", "two_mode", "clusters")


# --------------------------------------------------------------------------- validation

# --------------------------------------------------------------------------- relevance


@checked_arguments
def relevance_from_labels(
    labels, *, label_max: float | None = None, mode: str = "graded"
) -> np.ndarray:
    """Relevance probabilities ``P(R | q, d)`` (float64 [n_items]) from labels.

    ``mode="graded"``: ``P(R) = label / label_max`` for non-negative graded labels;
    ``label_max`` defaults to the largest label (all-zero labels give all-zero relevance).
    ``mode="continuous"``: the labels are already probabilities and must lie in [0, 1]
    (``label_max`` is then ignored).
    """
    choice("mode", mode, RELEVANCE_MODES)
    lab = vector("labels", labels)
    if mode == "continuous":
        if lab.size and (lab.min() < 0 or lab.max() > 1):
            raise ParameterError(
                "labels",
                "continuous relevance scores in [0, 1]",
                f"range [{lab.min()!r}, {lab.max()!r}]",
                fix="use mode='graded' with label_max, or rescale",
            )
        return lab.copy()
    if lab.size and lab.min() < 0:
        raise ParameterError("labels", "non-negative graded labels", f"minimum {lab.min()!r}")
    if label_max is None:
        top = float(lab.max()) if lab.size else 0.0
        if top == 0:
            return np.zeros(lab.size)
        return lab / top
    top = real("label_max", label_max, low=0, low_open=True, what="a positive number")
    if lab.size and lab.max() > top:
        raise ParameterError("labels", f"labels <= label_max={top}", f"maximum {lab.max()!r}")
    return lab / top


# --------------------------------------------------------------------------- propensities


def _check_beta_params(beta_mean, beta_std, beta_min, out_of_range):
    bmin = real("beta_min", beta_min, low=0, high=1, low_open=True)
    try:
        means = np.atleast_1d(np.asarray(beta_mean, dtype=np.float64))
    except (TypeError, ValueError):
        raise ParameterError("beta_mean", "propensity mean(s) in (0, 1]", beta_mean) from None
    if (
        isinstance(beta_mean, bool)
        or means.ndim != 1
        or means.size == 0
        or not np.all(np.isfinite(means))
        or means.min() <= 0
        or means.max() > 1
    ):
        raise ParameterError("beta_mean", "propensity mean(s) in (0, 1]", beta_mean)
    if means.min() < bmin:
        raise ParameterError(
            "beta_mean", f"mean(s) >= beta_min={bmin}", beta_mean, fix="lower beta_min"
        )
    std = real("beta_std", beta_std, low=0, what="a standard deviation >= 0")
    choice("out_of_range", out_of_range, OUT_OF_RANGE)
    return means, std, bmin


def _draw(
    loc: np.ndarray, std: float, bmin: float, out_of_range: str, rng: np.random.Generator
) -> np.ndarray:
    if std == 0:
        return loc.copy()
    if out_of_range == "clip":
        return np.clip(rng.normal(loc, std), bmin, 1.0)
    # exact truncated normal on [bmin, 1] by inverse CDF
    from scipy.special import ndtr, ndtri

    lo = ndtr((bmin - loc) / std)
    hi = ndtr((1.0 - loc) / std)
    u = rng.uniform(size=loc.size)
    out = loc + std * ndtri(lo + u * (hi - lo))
    return np.clip(out, bmin, 1.0)  # guards the last ulp of the inverse CDF


@checked_arguments
def draw_query_beta(
    n_queries: int,
    *,
    beta_mean,
    beta_std: float,
    rng: np.random.Generator,
    beta_min: float = 0.01,
    out_of_range: str = "clip",
    cluster_of_query=None,
) -> np.ndarray:
    """Per-query group propensities ``beta_q ~ N(mean_q, beta_std)`` (float64 [n_queries]).

    ``mean_q = beta_mean`` (a number in (0, 1]) or, with ``cluster_of_query`` (int
    [n_queries], values ``0..k-1``), ``mean_q = beta_mean[cluster_of_query[q]]`` for an array
    of ``k`` per-cluster means. Draws outside ``[beta_min, 1]`` are clipped to the interval
    (``out_of_range="clip"``, default; puts an atom at the bounds) or drawn from the normal
    truncated to it (``"resample"``). ``beta_std = 0`` returns the means.
    """
    if not is_integer(n_queries) or n_queries < 0:
        raise ParameterError("n_queries", "an integer >= 0", n_queries)
    means, std, bmin = _check_beta_params(beta_mean, beta_std, beta_min, out_of_range)
    rng = generator(rng)
    if cluster_of_query is None:
        if means.size != 1:
            raise ParameterError(
                "beta_mean",
                "one number (or pass cluster_of_query with one mean per cluster)",
                beta_mean,
            )
        loc = np.full(int(n_queries), means[0])
    else:
        c = np.asarray(cluster_of_query)
        if c.shape != (int(n_queries),) or not np.issubdtype(c.dtype, np.integer):
            raise ParameterError(
                "cluster_of_query",
                f"integer cluster indices of length {n_queries}",
                f"shape {c.shape}, dtype {c.dtype}",
            )
        if c.size and (c.min() < 0 or c.max() >= means.size):
            raise ParameterError(
                "cluster_of_query",
                f"indices in [0, {means.size - 1}] (one beta_mean per cluster)",
                f"range [{c.min()}, {c.max()}]",
            )
        loc = means[c]
    return _draw(loc, std, bmin, out_of_range, rng)


def draw_two_mode_beta(
    n_queries: int,
    *,
    modes=(0.6, 0.8),
    beta_std: float,
    rng: np.random.Generator,
    beta_min: float = 0.01,
    out_of_range: str = "clip",
) -> tuple[np.ndarray, np.ndarray]:
    """Mixture of propensity modes (§6.4.2): every query picks one of ``modes`` with equal
    probability, then ``beta_q ~ N(mode, beta_std)`` handled as in :func:`draw_query_beta`.

    Returns ``(beta_query float64 [n_queries], mode_of_query int64 [n_queries])``; the modes
    are hidden from the estimator, the indices are for analysis only.
    """
    m = np.atleast_1d(np.asarray(modes, dtype=np.float64))
    if m.ndim != 1 or m.size < 1:
        raise ParameterError("modes", "a non-empty sequence of propensity means", modes)
    rng = generator(rng)
    if not is_integer(n_queries) or n_queries < 0:
        raise ParameterError("n_queries", "an integer >= 0", n_queries)
    _check_beta_params(m, beta_std, beta_min, out_of_range)
    mode = rng.integers(0, m.size, size=int(n_queries)).astype(np.int64)
    beta = draw_query_beta(
        int(n_queries),
        beta_mean=m,
        beta_std=beta_std,
        rng=rng,
        beta_min=beta_min,
        out_of_range=out_of_range,
        cluster_of_query=mode,
    )
    return beta, mode


# --------------------------------------------------------------------------- attractiveness


@checked_arguments
def simulate_attractiveness(relevance, groups, *, qptr, beta_query) -> np.ndarray:
    """Attractiveness under group bias, Eq. (2) (float64 [n_items], a new array).

    ``a_d = P(R | q, d) * (g_d * beta_q + 1 - g_d)``: ``beta_q * P(R)`` for affected items
    (``g = 1``), ``P(R)`` for non-affected ones (``g = 0``), the expectation over membership
    for probabilities ``g in (0, 1)``. ``relevance`` [n_items] in [0, 1], ``groups``
    [n_items] in [0, 1], ``beta_query`` [n_queries] in (0, 1].
    """
    rel = vector("relevance", relevance, low=0.0, high=1.0)
    g = vector("groups", groups, rel.size, low=0.0, high=1.0)
    q = check_qptr(qptr, rel.size)
    b = vector("beta_query", beta_query, q.size - 1, per="query")
    if b.size and (b.min() <= 0 or b.max() > 1):
        raise ParameterError(
            "beta_query", "propensities in (0, 1]", f"range [{b.min()!r}, {b.max()!r}]"
        )
    factor = item_propensity(g, b, q)
    return np.multiply(rel, factor, out=factor)


def item_propensity(groups: np.ndarray, beta_query: np.ndarray, qptr: np.ndarray) -> np.ndarray:
    """The group propensity of every item, ``g_d * beta_q + (1 - g_d)`` (float64 [n_items],
    a new array): ``beta_q`` for affected items, 1 for non-affected ones. Computed in place
    (two per-item arrays at most); inputs are trusted (checked by the callers)."""
    out = np.repeat(beta_query, np.diff(qptr))
    np.multiply(groups, out, out=out)
    return np.add(out, np.subtract(1.0, groups), out=out)


@dataclass(frozen=True, eq=False)
class Simulation:
    """One simulated group-biased data set.

    Attributes
    ----------
    relevance : float [n_items], ``P(R | q, d)``
    attractiveness : float [n_items], observed ``P(A | q, d)`` (Eq. 2)
    beta_query : float [n_queries], the propensity drawn for every query
    mode_of_query : int [n_queries] or None, hidden mode / cluster index of every query
        (``"two_mode"`` and ``"clusters"`` variants), None for ``"normal"``
    beta_means : float [n_modes], the mean(s) the propensities were drawn around
    """

    relevance: np.ndarray
    attractiveness: np.ndarray
    beta_query: np.ndarray
    mode_of_query: np.ndarray | None
    beta_means: np.ndarray


def _query_betas(n_q, variant, beta_mean, modes, cluster_of_query, *, rng, **draw):
    """``(beta_query, mode_of_query or None, beta_means)`` of one variant (see
    :func:`simulate_group_bias`)."""
    if variant == "two_mode":
        if beta_mean is not None:
            raise ParameterError(
                "beta_mean", "None with variant='two_mode' (the modes set the means)", beta_mean
            )
        beta, mode = draw_two_mode_beta(n_q, modes=modes, rng=rng, **draw)
        return beta, mode, np.asarray(modes, dtype=np.float64).reshape(-1)
    if variant == "clusters":
        if cluster_of_query is None or beta_mean is None:
            raise ParameterError(
                "cluster_of_query",
                "cluster indices and per-cluster beta_mean with variant='clusters'",
                cluster_of_query,
            )
        means = np.asarray(beta_mean, dtype=np.float64).reshape(-1)
        beta = draw_query_beta(
            n_q, beta_mean=means, rng=rng, cluster_of_query=cluster_of_query, **draw
        )
        return beta, np.asarray(cluster_of_query).astype(np.int64), means
    if beta_mean is None:
        raise ParameterError("beta_mean", "a propensity mean in (0, 1]", None)
    if cluster_of_query is not None:
        raise ParameterError(
            "cluster_of_query",
            "None with variant='normal' (use variant='clusters')",
            "cluster indices",
        )
    beta = draw_query_beta(n_q, beta_mean=beta_mean, rng=rng, **draw)
    return beta, None, np.atleast_1d(np.asarray(beta_mean, dtype=np.float64))


@checked_arguments
def simulate_group_bias(
    data,
    *,
    rng: np.random.Generator,
    beta_mean=None,
    beta_std: float = 0.1,
    variant: str = "normal",
    modes=(0.6, 0.8),
    cluster_of_query=None,
    beta_min: float = 0.01,
    out_of_range: str = "clip",
    relevance_mode: str = "graded",
    label_max: float | None = None,
) -> Simulation:
    """Simulate group-biased attractiveness for a :class:`RankingData` with groups (§6.1).

    ``variant="normal"``: ``beta_q ~ N(beta_mean, beta_std)``; ``"two_mode"``: mixture of
    ``modes`` (``beta_mean`` must be None); ``"clusters"``: per-cluster means ``beta_mean``
    (array) for ``cluster_of_query``. Relevance is ``label / label_max`` (``label_max``
    defaults to ``data.label_max``, then to the largest label) or the labels themselves for
    ``relevance_mode="continuous"``. Out-of-range draws: see :func:`draw_query_beta`.
    """
    choice("variant", variant, VARIANTS)
    rng = generator(rng)
    groups = getattr(data, "groups", None)
    if groups is None:
        raise ParameterError("data.groups", "group memberships (apply a grouping first)", None)
    top = label_max if label_max is not None else getattr(data, "label_max", None)
    if relevance_mode == "continuous":
        top = None
    rel = relevance_from_labels(data.labels, label_max=top, mode=relevance_mode)
    beta, mode, means = _query_betas(
        int(data.qptr.size - 1),
        variant,
        beta_mean,
        modes,
        cluster_of_query,
        rng=rng,
        beta_std=beta_std,
        beta_min=beta_min,
        out_of_range=out_of_range,
    )
    att = simulate_attractiveness(rel, groups, qptr=data.qptr, beta_query=beta)
    return Simulation(
        relevance=rel, attractiveness=att, beta_query=beta, mode_of_query=mode, beta_means=means
    )


# ----------------------------------------------------------------- the bias config group

BIAS_VARIANTS = ("normal", "two_mode")
RELEVANCE = ("auto", "graded", "continuous")


def _beta(name: str, value) -> float:
    return real(name, value, low=0.0, high=1.0, low_open=True, what="betas in (0, 1]")


def _betas(name: str, values) -> tuple[float, ...]:
    return sequence(
        name,
        values,
        _beta,
        what="a non-empty list of betas in (0, 1], e.g. [0.8, 0.6]",
        distinct=True,
    )


@dataclass(frozen=True)
class GroupBias:
    """Group-biased attractiveness ``a = β_q P(R)`` for the affected group (paper Eq. 2).

    Attributes
    ----------
    betas : the β values an experiment sweeps (each in (0, 1]; 1 = no bias)
    variant : ``"normal"`` (β_q ~ N(β, beta_std) per query) or ``"two_mode"`` (half the
        queries around each of ``modes``, §6.4.2; β is then only a label)
    beta_std : the per-query noise σ_β (>= 0)
    beta_min : lower bound of β_q (draws below are clipped or redrawn, ``out_of_range``)
    modes : the two-mode means (``variant="two_mode"`` only)
    relevance : how labels become P(R): ``"auto"``/``"graded"`` (label / label_max) or
        ``"continuous"`` (labels are already in [0, 1])
    out_of_range : ``"clip"`` or ``"resample"`` (see
        :func:`groupbias.simulate.group_bias.draw_query_beta`)
    """

    betas: Sequence[float] = (0.8, 0.6)
    variant: str = "normal"
    beta_std: float = 0.1
    beta_min: float = 0.01
    modes: Sequence[float] | None = None
    relevance: str = "auto"
    out_of_range: str = "clip"

    def __post_init__(self) -> None:
        object.__setattr__(self, "betas", _betas("betas", self.betas))
        choice("variant", self.variant, BIAS_VARIANTS)
        real("beta_std", self.beta_std, low=0.0, what="a standard deviation >= 0")
        real("beta_min", self.beta_min, low=0.0, high=1.0, low_open=True)
        if self.modes is not None:
            object.__setattr__(self, "modes", _betas("modes", self.modes))
        if self.variant == "two_mode" and not self.modes:
            raise ParameterError(
                "modes", "the propensity means of variant two_mode, e.g. [0.6, 0.8]", self.modes
            )
        if self.variant == "normal" and self.modes is not None:
            raise ParameterError(
                "modes",
                "null with variant normal (modes are used by variant two_mode only)",
                list(self.modes),
            )
        choice("relevance", self.relevance, RELEVANCE)
        choice("out_of_range", self.out_of_range, OUT_OF_RANGE)

    def simulate(
        self,
        data: RankingData,
        *,
        beta: float,
        rng: np.random.Generator,
        label_max: float | None = None,
        beta_std: float | None = None,
    ) -> Simulation:
        """One biased data set for ``data`` (grouped) at ``beta``.

        ``label_max``: top of the label scale (default the data's); ``beta_std``: override
        the noise (e.g. 0 for the β = 1 reference of the impact figures).
        """
        if data.groups is None:
            raise ParameterError(
                "data.groups",
                "a grouped dataset (1 = affected, 0 = not)",
                None,
                "apply a grouping first",
            )
        two_mode = self.variant == "two_mode"
        return simulate_group_bias(
            data,
            beta_mean=None if two_mode else real("beta", beta, low=0.0, high=1.0, low_open=True),
            variant=self.variant,
            modes=tuple(self.modes or ()) if two_mode else (0.6, 0.8),
            beta_std=self.beta_std if beta_std is None else beta_std,
            beta_min=self.beta_min,
            relevance_mode="graded" if self.relevance == "auto" else self.relevance,
            label_max=label_max,
            out_of_range=self.out_of_range,
            rng=rng,
        )

    def simulate_null(
        self, data: RankingData, *, rng: np.random.Generator, label_max: float | None = None
    ) -> Simulation:
        """Attractiveness without bias but with this model's per-query noise: β = 1, variant
        ``normal``, ``beta_std`` of this model (clipped draws keep some ``β_q`` below 1). The
        data of the estimator's null check
        (:meth:`groupbias.estimate.diagnostics.Diagnostics.check`)."""
        null = replace(self, variant="normal", modes=None)
        return null.simulate(data, beta=1.0, rng=rng, label_max=label_max)
