"""Embedded synthetic LTR data: everything runs with no download.

Generative model (all draws from the one ``np.random.Generator`` given):

1. List sizes ``n_q ~ Uniform{list_size[0], ..., list_size[1]}`` for ``n_queries`` queries.
2. Group: exactly ``round(affected_share * n_items)`` items, chosen uniformly at random, are
   affected (``groups = 1``).
3. Graded labels ``0..n_grades-1``. Non-affected items draw from
   ``p(k) ∝ 2^{-k}`` (most items irrelevant, as in web LTR data); affected items draw from the
   exponentially tilted ``p_A(k) ∝ p(k) e^{t k}``, with ``t`` solved so that
   ``E_A[label] = utility_ratio * E[label]``. Hence the mean-label ratio affected /
   non-affected equals ``utility_ratio`` in expectation (sampling noise only).
4. Features (ids 1..n_features):
   - feature 1 (:data:`SENSITIVE_FEATURE_ID`) is the sensitive attribute: affected items
     draw it from Uniform(0, 0.2), non-affected from Uniform(0.8, 1), so thresholding at
     :data:`SENSITIVE_THRESHOLD` = 0.5 (``value < 0.5`` = affected) gives back the groups
     exactly; so does the ``"mean"`` threshold of :func:`data_loaders.grouping.group_by_feature`
     whenever ``0.125 < affected_share < 0.875``;
   - features 2..1+n_informative are informative: ``label + s_j * N(0, 1)`` with noise scales
     ``s_j`` spread evenly over [0.5, 2] (feature 2 is the most informative);
   - the remaining features are pure noise ``N(0, 1)``.
   Informative and noise features do not depend on the group given the label.

How the normals are drawn (``draws``; the model is the same):

- ``"sequential"`` (default): float64 draws of the one generator, rounded to float32; the
  data of earlier versions, bit for bit.
- ``"blocked"``: float32 draws in row blocks of 2^21 values, block ``k`` from its own
  generator keyed by four integers drawn from the one generator and ``k``, spread over every
  core (:func:`groupbias._fast.normals.block_normals`); the same values on one core or many,
  other values than ``"sequential"``'s, several times faster at MSLR size
  (docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from groupbias._fast.normals import block_normals
from groupbias.core.errors import ParameterError
from groupbias.core.memory import check_fits
from groupbias.core.validation import choice, generator, integer, is_integer, real
from groupbias.data.ranking_data import RankingData

SENSITIVE_FEATURE_ID = 1
SENSITIVE_THRESHOLD = 0.5
DEFAULT_FRACTIONS = {"train": 0.6, "valid": 0.2, "test": 0.2}
#: float64 values drawn at once (a block of rows; the working memory of the generator)
_DRAW_VALUES = 1 << 21
#: the most grades: labels 0..1000, the most Δ(EEL) takes (groupbias.evaluation.catalog)
MAX_GRADES = 1001
#: how the normals are drawn (module docstring)
DRAWS = ("sequential", "blocked")


def _rng_or_seed(rng, seed) -> np.random.Generator:
    """The generator given, or a new one from ``seed`` (exactly one of them)."""
    if (rng is None) == (seed is None):
        raise ParameterError(
            "rng/seed",
            "exactly one of rng (np.random.Generator) or seed (int)",
            f"rng={rng!r}, seed={seed!r}",
        )
    if rng is not None:
        return generator(rng)
    return np.random.default_rng(integer("seed", seed, low=0))


def check_grades(n_grades) -> int:
    """``n_grades``, an integer in [2, MAX_GRADES]: labels 0..1000 at most."""
    if not is_integer(n_grades) or not 2 <= n_grades <= MAX_GRADES:
        raise ParameterError(
            "n_grades",
            f"an integer in [2, {MAX_GRADES}] (labels 0..{MAX_GRADES - 1}: p(k) ∝ 2^-k "
            "vanishes in float64 beyond k ≈ 1074, and Δ(EEL) takes labels up to 1000)",
            n_grades,
        )
    return int(n_grades)


def check_size(n_queries: int, list_size: Sequence[int], n_features: int) -> None:
    """Refuse, before drawing anything, sizes whose arrays exceed the machine's memory:
    per item the float32 features and five 8-byte arrays (labels, groups, uniforms, the
    permutation, a block of normals)."""
    hi = int(list_size[1])
    check_fits(
        "list_size",
        [int(v) for v in list_size],
        float(n_queries) * hi * (4 * int(n_features) + 40),
        what=f"{n_queries} queries of up to {hi} items of {n_features} features",
        fix="Lower list_size or n_queries",
    )


def grade_distributions(n_grades: int, utility_ratio: float) -> tuple[np.ndarray, np.ndarray]:
    """Label distributions ``(p_non_affected, p_affected)`` over grades ``0..n_grades-1``.

    ``p(k) ∝ 2^{-k}``; ``p_A(k) ∝ p(k) e^{t k}`` with ``t`` such that
    ``sum_k k p_A(k) = utility_ratio * sum_k k p(k)``.
    """
    check_grades(n_grades)
    k = np.arange(n_grades, dtype=np.float64)
    p = 0.5**k
    p /= p.sum()
    mu = float(k @ p)
    target = utility_ratio * mu
    if not (np.isfinite(utility_ratio) and 0 < target < n_grades - 1):
        raise ParameterError(
            "utility_ratio",
            f"a ratio in (0, {(n_grades - 1) / mu:.4g}) "
            f"(the affected mean label must stay inside (0, {n_grades - 1}) "
            f"with non-affected mean {mu:.4g})",
            utility_ratio,
        )

    def tilted(t):
        w = p * np.exp(t * k - np.max(t * k))
        return w / w.sum()

    from scipy.optimize import brentq  # imported here: scipy.optimize is large

    t = brentq(lambda t: float(k @ tilted(t)) - target, -60.0, 60.0, xtol=1e-12)
    return p, tilted(t)


def _sequential_normals(gen, feats, labels, scales) -> None:
    """Columns 1.. of ``feats``: ``labels + scales * z`` then pure noise, float64 draws of
    ``gen`` row block by row block (the same stream as one draw of every row, without a
    float64 copy of the matrix), rounded into ``feats``."""
    n, n_features = feats.shape
    n_informative = scales.size
    step = max(1, _DRAW_VALUES // n_features)
    for a in range(0, n, step):
        b = min(n, a + step)
        z = gen.standard_normal((b - a, n_informative))
        feats[a:b, 1 : 1 + n_informative] = labels[a:b, None] + scales * z
    noise = np.empty((min(step, n), n_features - 1 - n_informative))
    for a in range(0, n, step):
        b = min(n, a + step)
        gen.standard_normal(out=noise[: b - a])
        feats[a:b, 1 + n_informative :] = noise[: b - a]


# long: the public entry point; its docstring documents every parameter
def make_synthetic(
    *,
    n_queries: int = 200,
    list_size: Sequence[int] = (5, 60),
    n_features: int = 20,
    affected_share: float = 0.3,
    utility_ratio: float = 1.0,
    n_grades: int = 5,
    n_informative: int | None = None,
    rng: np.random.Generator | None = None,
    seed: int | None = None,
    name: str = "synthetic",
    draws: str = "sequential",
) -> RankingData:
    """Synthetic ranking data with a sensitive feature and a controlled utility ratio.

    Parameters
    ----------
    n_queries : number of queries (>= 1).
    list_size : (min, max) items per query, inclusive, min >= 1.
    n_features : total feature columns (>= 2): 1 sensitive + informative + noise.
    affected_share : fraction of items in the affected group, in (0, 1).
    utility_ratio : target mean label of affected / mean label of non-affected (> 0).
    n_grades : labels are 0..n_grades-1 (``label_max = n_grades - 1``).
    n_informative : informative features (default ``min(5, n_features - 1)``).
    rng, seed : exactly one: a ``np.random.Generator`` or an integer seed (0 is valid).
    draws : ``"sequential"`` (the data of earlier versions) or ``"blocked"`` (faster, other
        values; module docstring).

    Returns
    -------
    RankingData with features float32 [n_items, n_features], labels float64 grades,
    groups float64 (1 = affected), query ids 0..n_queries-1. ``meta`` holds the sensitive
    feature id and threshold, both label distributions and the achieved utility ratio.
    See the module docstring for the generative model.
    """
    gen = _rng_or_seed(rng, seed)
    lo, hi, n_informative = _checked_shape(
        n_queries, list_size, n_features, n_informative, affected_share, draws
    )
    p_non, p_aff = grade_distributions(n_grades, utility_ratio)

    sizes = gen.integers(lo, hi + 1, size=n_queries)
    qptr = np.zeros(n_queries + 1, dtype=np.int64)
    np.cumsum(sizes, out=qptr[1:])
    n = int(qptr[-1])
    n_aff = int(round(affected_share * n))
    if not 0 < n_aff < n:
        raise ParameterError(
            "affected_share",
            f"a share giving both groups among {n} items",
            affected_share,
            "generate more items or pick a share nearer 0.5",
        )
    groups = np.zeros(n, dtype=np.float64)
    groups[gen.permutation(n)[:n_aff]] = 1.0
    aff = groups == 1.0

    labels = _grades(gen, aff, p_non, p_aff, n_grades)
    scales = np.linspace(0.5, 2.0, n_informative)
    feats = _features(gen, labels, aff, n_features, scales, draws)

    mu_a, mu_n = labels[aff].mean(), labels[~aff].mean()
    meta = {
        "sensitive_feature_id": SENSITIVE_FEATURE_ID,
        "sensitive_threshold": SENSITIVE_THRESHOLD,
        "informative_feature_ids": list(range(2, 2 + n_informative)),
        "informative_noise_scales": scales.tolist(),
        "affected_share": n_aff / n,
        "utility_ratio_target": float(utility_ratio),
        "utility_ratio_achieved": float(mu_a / mu_n) if mu_n > 0 else float("inf"),
        "p_label_non_affected": p_non.tolist(),
        "p_label_affected": p_aff.tolist(),
    }
    return RankingData(
        features=feats,
        labels=labels,
        qptr=qptr,
        query_ids=np.arange(n_queries, dtype=np.int64),
        feature_ids=np.arange(1, n_features + 1),
        groups=groups,
        label_max=float(n_grades - 1),
        name=name,
        meta=meta,
    )


def _checked_shape(n_queries, list_size, n_features, n_informative, affected_share, draws):
    """``(min size, max size, n_informative)`` of :func:`make_synthetic`'s arguments, each
    checked (``n_informative`` None: ``min(5, n_features - 1)``)."""
    if not is_integer(n_queries) or n_queries < 1:
        raise ParameterError("n_queries", "an integer >= 1", n_queries)
    try:
        lo, hi = (int(v) for v in list_size)
    except (TypeError, ValueError):
        raise ParameterError("list_size", "a pair (min, max) of integers", list_size) from None
    if not 1 <= lo <= hi:
        raise ParameterError("list_size", "1 <= min <= max", list_size)
    if not is_integer(n_features) or n_features < 2:
        raise ParameterError("n_features", "an integer >= 2 (sensitive + informative)", n_features)
    check_size(n_queries, (lo, hi), n_features)
    if n_informative is None:
        n_informative = min(5, n_features - 1)
    if not 1 <= n_informative <= n_features - 1:
        raise ParameterError("n_informative", f"an integer in [1, {n_features - 1}]", n_informative)
    if not (np.isfinite(affected_share) and 0 < affected_share < 1):
        raise ParameterError("affected_share", "a fraction in (0, 1)", affected_share)
    choice("draws", draws, DRAWS)
    return lo, hi, n_informative


def _grades(gen, aff, p_non, p_aff, n_grades: int) -> np.ndarray:
    """float64 grades 0..n_grades-1 drawn from each group's grade distribution."""
    u = gen.random(aff.size)
    labels = np.where(
        aff,
        np.searchsorted(np.cumsum(p_aff), u, side="right"),
        np.searchsorted(np.cumsum(p_non), u, side="right"),
    )
    labels = np.minimum(labels, n_grades - 1).astype(np.float64)

    return labels


def _features(gen, labels, aff, n_features: int, scales, draws: str) -> np.ndarray:
    """float32 [n_items, n_features]: the sensitive feature (uniform on [0, 0.2] for the
    affected group, [0.8, 1] otherwise), then ``labels + scale * noise`` per informative
    feature, then noise; drawn from ``gen`` in this order."""
    n, n_informative = labels.size, scales.size
    feats = np.empty((n, n_features), dtype=np.float32)
    sensitive = np.where(aff, gen.uniform(0.0, 0.2, n), gen.uniform(0.8, 1.0, n))
    if draws == "blocked":

        def informative(rows: slice) -> None:
            z = feats[rows, 1 : 1 + n_informative]
            z[...] = labels[rows, None] + scales * z

        block_normals(feats, gen.integers(0, 2**63, size=4).tolist(), then=informative)
    else:
        _sequential_normals(gen, feats, labels, scales)
    feats[:, 0] = sensitive
    return feats


def make_synthetic_splits(
    *,
    n_queries: int = 200,
    fractions: Mapping[str, float] | None = None,
    rng: np.random.Generator | None = None,
    seed: int | None = None,
    name: str = "synthetic",
    **kwargs,
) -> dict[str, RankingData]:
    """Train/valid/test (or any named) splits of one synthetic dataset.

    ``n_queries`` queries are generated by :func:`make_synthetic` (``kwargs`` passed on) and
    cut, in order, into consecutive blocks of ``round(fraction * n_queries)`` queries
    (the last split takes the remainder). ``fractions`` defaults to
    ``{"train": 0.6, "valid": 0.2, "test": 0.2}`` and must sum to 1. Query ids are unique
    across splits.
    """
    fr = dict(DEFAULT_FRACTIONS if fractions is None else fractions)
    vals = np.array(list(fr.values()), dtype=np.float64)
    if not fr or np.any(~np.isfinite(vals)) or np.any(vals <= 0) or abs(vals.sum() - 1) > 1e-9:
        raise ParameterError(
            "fractions", "positive fractions per split name summing to 1", fractions
        )
    counts = np.round(vals * n_queries).astype(np.int64)
    counts[-1] = n_queries - counts[:-1].sum()
    if np.any(counts < 1):
        raise ParameterError(
            "n_queries", f"enough queries for {len(fr)} non-empty splits", n_queries
        )
    data = make_synthetic(n_queries=n_queries, rng=rng, seed=seed, name=name, **kwargs)
    bounds = np.concatenate(([0], np.cumsum(counts)))
    out = {}
    for (split, _), a, b in zip(fr.items(), bounds[:-1], bounds[1:]):
        lo, hi = int(data.qptr[a]), int(data.qptr[b])  # consecutive queries: views, no copy
        out[split] = replace(
            data,
            features=data.features[lo:hi],
            labels=data.labels[lo:hi],
            qptr=data.qptr[a : b + 1] - lo,
            query_ids=data.query_ids[a:b],
            groups=None if data.groups is None else data.groups[lo:hi],
            name=f"{name}/{split}",
            meta=dict(data.meta, split=split),
        )
    return out


@dataclass(frozen=True)
class SyntheticOptions:
    """The embedded synthetic dataset (:func:`make_synthetic`)."""

    n_queries: int = 200
    list_size: Sequence[int] = (5, 60)
    n_features: int = 20
    affected_share: float = 0.3
    utility_ratio: float = 1.0
    n_grades: int = 5
    n_informative: int | None = None
    seed: int = 7
    draws: str = "sequential"

    def __post_init__(self) -> None:
        integer("n_queries", self.n_queries, low=3)
        ls = self.list_size
        if isinstance(ls, str) or not isinstance(ls, Sequence) or len(ls) != 2:
            raise ParameterError("list_size", "[min, max] items per query", ls)
        lo = integer("list_size", ls[0], low=1)
        integer("list_size", ls[1], low=lo, what=f"[min, max] with max >= min = {lo}")
        integer("n_features", self.n_features, low=2)
        real(
            "affected_share", self.affected_share, low=0.0, high=1.0, low_open=True, high_open=True
        )
        real("utility_ratio", self.utility_ratio, low=0.0, low_open=True)
        check_grades(integer("n_grades", self.n_grades, low=2))
        if self.n_informative is not None:
            integer("n_informative", self.n_informative, low=1, high=self.n_features - 1)
        integer("seed", self.seed, low=0)
        choice("draws", self.draws, DRAWS)
        check_size(self.n_queries, ls, self.n_features)  # before anything is drawn

    def sources(self, root, split: str) -> dict:
        return {}  # generated from these options alone

    def load(self, root, split: str) -> RankingData:
        return make_synthetic_splits(
            n_queries=self.n_queries,
            list_size=tuple(self.list_size),
            n_features=self.n_features,
            affected_share=self.affected_share,
            utility_ratio=self.utility_ratio,
            n_grades=self.n_grades,
            n_informative=self.n_informative,
            seed=self.seed,
            draws=self.draws,
        )[split]
