"""Closed-form approximations of the impact of group bias (paper §4, Thms 4.1–4.3).

Model assumptions of §4 (shared by every function here)
-------------------------------------------------------
- Two groups: affected ``G_A`` with propensity ``beta_A < 1`` and non-affected ``G_N`` with
  ``beta_N = 1``; attractiveness ``a = beta * u`` where ``u`` is the unbiased attractiveness.
- Binary latent relevance ``r in {0, 1}``; within each group relevant items are more
  attractive than non-relevant ones (Eq. 5).
- Counts per query: ``n_N`` non-affected items, ``n_N^+`` of them relevant; ``n_A^+``
  relevant affected items.
- "Uniformly distributed scores" (§4.1) is read as: the unbiased scores are uniform on
  [0, 1] with the relevant items on the upper half, ``u ~ U[1/2, 1]`` for ``r = 1`` and
  ``u ~ U[0, 1/2)`` for ``r = 0`` (so Eq. 5 holds and ``a* = 1/2``, the threshold of
  footnote 3, which is also the limit of ``a* = min`` of the non-affected relevant scores,
  Eq. 6, for many relevant items). Then a relevant affected item stays above ``a*`` iff
  ``beta * u > 1/2``, i.e. with probability ``(1 - 1/(2 beta)) / (1/2) = 2 - 1/beta``.
- Exposure of rank ``i`` is the DCG discount ``1 / log2(1 + i)``.

``nu`` (Eq. 7) is the fraction of relevant affected items whose attractiveness stays above
``a*`` (``a* = min{a_d : d in G_N, r_d = 1}``, Eq. 6, or a given threshold).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core.errors import ParameterError
from ..core.segments import query_index
from ..core.validation import all_integral, check_k, check_qptr, is_integer

__all__ = [
    "expected_nu",
    "nu",
    "expected_dcg",
    "expected_ndcg",
    "ideal_dcg",
    "NdcgFit",
    "ndcg_linear_fit",
    "delta_eel_theory",
    "rho_dtr_theory",
    "AlphaFit",
    "fit_alpha",
    "PAPER_ALPHA",
    "PAPER_ALPHA_PRIME",
]

PAPER_ALPHA = -0.146  # Eq. (11), n = 20 (§4.2.1)
PAPER_ALPHA_PRIME = -0.022  # Eq. (12), n = 20


def _discount(i: np.ndarray) -> np.ndarray:
    return 1.0 / np.log2(1.0 + i)


def _count(name: str, value) -> np.ndarray:
    a = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(a)) or np.any(a < 0) or not all_integral(a):
        raise ParameterError(name, "non-negative integer counts", value)
    return a


def _unit(name: str, value) -> np.ndarray:
    a = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(a)) or np.any(a < 0) or np.any(a > 1):
        raise ParameterError(name, "values in [0, 1]", value)
    return a


# --------------------------------------------------------------------------- nu


def expected_nu(beta):
    """``E[nu] = max(2 - 1/beta, 0)`` for uniformly distributed scores (§4.1).

    ``beta`` (scalar or array) in (0, 1]. See the module docstring for the score model.
    """
    b = np.asarray(beta, dtype=np.float64)
    if not np.all(np.isfinite(b)) or np.any(b <= 0) or np.any(b > 1):
        raise ParameterError("beta", "propensities in (0, 1]", beta)
    out = np.maximum(2.0 - 1.0 / b, 0.0)
    return float(out) if out.ndim == 0 else out


def nu(attractiveness, relevance, groups, *, qptr, threshold: float | None = None) -> np.ndarray:
    """Empirical ``nu`` of every query, Eq. (7) (float64 [n_queries]).

    ``nu_q = |{d in G_A : r_d = 1, a_d > a*}| / |{d in G_A : r_d = 1}|`` with
    ``a* = min{a_d : d in G_N, r_d = 1}`` (Eq. 6), or ``a* = threshold`` when given (the
    discretization threshold of §4.2.1). Items with ``relevance > 0`` are relevant;
    ``groups`` must be 0/1 (1 = affected). NaN for queries without relevant affected items,
    or (without ``threshold``) without relevant non-affected items.
    """
    a = np.asarray(attractiveness, dtype=np.float64)
    if a.ndim != 1 or not np.all(np.isfinite(a)):
        raise ParameterError("attractiveness", "a 1-D array of finite scores", f"shape {a.shape}")
    r = np.asarray(relevance, dtype=np.float64)
    g = np.asarray(groups, dtype=np.float64)
    for name, v in (("relevance", r), ("groups", g)):
        if v.shape != a.shape:
            raise ParameterError(name, f"length {a.size}", f"shape {v.shape}")
    if np.any((g != 0) & (g != 1)):
        raise ParameterError("groups", "binary memberships (0 or 1)", "fractional values")
    q = check_qptr(qptr, a.size)
    n_q = q.size - 1
    qi = query_index(q)
    rel = r > 0
    aff = g == 1
    if threshold is None:
        a_star = np.full(n_q, np.inf)
        sel = rel & ~aff
        np.minimum.at(a_star, qi[sel], a[sel])
    else:
        t = float(threshold)
        if not np.isfinite(t):
            raise ParameterError("threshold", "a finite score threshold", threshold)
        a_star = np.full(n_q, t)
    sel = rel & aff
    total = np.bincount(qi[sel], minlength=n_q)
    above = np.bincount(
        qi[sel], weights=(a[sel] > a_star[qi[sel]]).astype(np.float64), minlength=n_q
    )
    out = np.full(n_q, np.nan)
    ok = (total > 0) & np.isfinite(a_star)
    out[ok] = above[ok] / total[ok]
    return out


# --------------------------------------------------------------------------- NDCG (Thm 4.1)


def _expected_gains(nu_, n_pos_N, n_N, n_pos_A, n_pos_max):
    """Expected gain at positions 1..n_pos_max, broadcast over the parameters (last axis)."""
    p = n_pos_N + nu_ * n_pos_A  # positions surely relevant
    last = n_N + n_pos_A  # last position a relevant item can take
    rest = (1.0 - nu_) * n_pos_A
    denom = n_N - n_pos_N + rest
    with np.errstate(invalid="ignore", divide="ignore"):
        xi = np.where(denom > 0, rest / np.where(denom > 0, denom, 1.0), 0.0)  # Eq. (9)
    i = np.arange(1, n_pos_max + 1, dtype=np.float64)
    p_, last_, xi_ = (np.asarray(v)[..., None] for v in (p, last, xi))
    sure = np.clip(p_ - (i - 1.0), 0.0, 1.0)
    span = np.clip(last_ - (i - 1.0), 0.0, 1.0)
    return sure + xi_ * (span - sure), i


def expected_dcg(nu_, n_pos_N, n_N, n_pos_A, *, k: int | None = None):
    """Expected DCG of the attractiveness ranking, Eqs. (8)–(9) (Thm 4.1).

    ``E[DCG] = sum_{i=1}^{P} 1/log2(1+i) + sum_{i=P+1}^{L} xi / log2(1+i)`` with
    ``P = n_N^+ + nu n_A^+`` positions surely holding relevant items, ``L = n_N + n_A^+``
    and ``xi = (1-nu) n_A^+ / (n_N - n_N^+ + (1-nu) n_A^+)`` (uniform mixing of the remaining
    relevant affected items with the non-relevant non-affected ones). A fractional ``P``
    splits the boundary position linearly (gain ``frac + (1-frac) xi``), which equals Eq. (8)
    at integer ``P``. ``k`` truncates the sum at rank ``k`` (None: no cutoff).
    Broadcasts over array arguments.
    """
    v = _unit("nu", nu_)
    npn, nn, npa = _count("n_pos_N", n_pos_N), _count("n_N", n_N), _count("n_pos_A", n_pos_A)
    if np.any(npn > nn):
        raise ParameterError("n_pos_N", "at most n_N relevant non-affected items", n_pos_N)
    k = check_k(k)
    v, npn, nn, npa = np.broadcast_arrays(v, npn, nn, npa)
    top = int(np.max(nn + npa)) if v.size else 0
    if k is not None:
        top = min(top, k)
    if top == 0:
        return np.zeros(v.shape) if v.ndim else 0.0
    gains, i = _expected_gains(v, npn, nn, npa, top)
    out = (gains * _discount(i)).sum(axis=-1)
    return float(out) if out.ndim == 0 else out


def ideal_dcg(n_pos, *, k: int | None = None):
    """``IDCG = sum_{i=1}^{min(n_pos, k)} 1 / log2(1 + i)`` for ``n_pos`` relevant items."""
    n = _count("n_pos", n_pos)
    k = check_k(k)
    top = int(np.max(n)) if n.size else 0
    if k is not None:
        top = min(top, k)
    i = np.arange(1, top + 1, dtype=np.float64)
    cum = np.concatenate([[0.0], np.cumsum(_discount(i))])
    m = np.minimum(n, top).astype(np.int64)
    out = cum[m]
    return float(out) if np.ndim(out) == 0 else out


def expected_ndcg(nu_, n_pos_N, n_N, n_pos_A, *, k: int | None = None):
    """``E[DCG] / IDCG`` with ``IDCG`` of ``n_N^+ + n_A^+`` relevant items (Thm 4.1)."""
    dcg = expected_dcg(nu_, n_pos_N, n_N, n_pos_A, k=k)
    idcg = ideal_dcg(np.asarray(n_pos_N) + np.asarray(n_pos_A), k=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(
            np.asarray(idcg) > 0, dcg / np.where(np.asarray(idcg) > 0, idcg, 1.0), np.nan
        )
    return float(out) if np.ndim(out) == 0 else out


class NdcgFit(NamedTuple):
    """Least-squares line ``E[NDCG] ≈ slope * nu + intercept`` over ``nu in [0, 1]``."""

    slope: float
    intercept: float
    max_relative_error: float


def ndcg_linear_fit(
    n_pos_N: int, n_N: int, n_pos_A: int, *, k: int | None = None, n_points: int = 101
) -> NdcgFit:
    """Linear approximation of :func:`expected_ndcg` in ``nu`` (Thm 4.1): least squares over
    ``n_points`` equally spaced ``nu`` in [0, 1]; ``max_relative_error`` is
    ``max |fit - E[NDCG]| / E[NDCG]`` over those points."""
    if not is_integer(n_points) or n_points < 2:
        raise ParameterError("n_points", "an integer >= 2", n_points)
    v = np.linspace(0.0, 1.0, int(n_points))
    y = expected_ndcg(v, n_pos_N, n_N, n_pos_A, k=k)
    if np.any(np.isnan(y)):
        raise ParameterError("n_pos_N", "at least one relevant item (n_N^+ + n_A^+ >= 1)", n_pos_N)
    slope, intercept = np.polyfit(v, y, 1)
    rel = np.abs(slope * v + intercept - y) / y
    return NdcgFit(float(slope), float(intercept), float(rel.max()))


# --------------------------------------------------------------------------- EEL (Thm 4.2)


def delta_eel_theory(
    nu_,
    n_pos_N,
    n_N,
    n_pos_A,
    *,
    alpha: float = PAPER_ALPHA,
    alpha_prime: float = PAPER_ALPHA_PRIME,
):
    """Change of the EEL target exposure under group bias, Thm 4.2:

        Delta(EEL) = 2 (alpha n_N^+ + alpha' (n_N - n_N^+)) log2((n_N^+ + n_A^+)
                                                                / (n_N^+ + nu n_A^+)).

    With binary grades the EEL target gives the ``m`` relevant items the mean exposure of
    ranks ``1..m`` (≈ ``alpha log2 m + c``, Eq. 11) and the others the mean of ranks
    ``m+1..n`` (≈ ``alpha' log2 m + c'``, Eq. 12); the true ``m = n_N^+ + n_A^+`` becomes
    ``n_N^+ + nu n_A^+``. The value is ``2 (E_N - Ẽ_N)``, twice the true minus the biased
    target exposure of ``G_N`` (the two groups' changes cancel); with ``alpha, alpha' < 0``
    it is <= 0 (``G_N`` gains exposure) and its magnitude is the L1 change of the two-group
    target vector. The logarithm is base 2, the base in which :func:`fit_alpha` reproduces
    the paper's ``alpha = -0.146``, ``alpha' = -0.022`` for ``n = 20``.
    ``nu = 0`` with ``n_N^+ = 0`` is infinite (no item is perceived relevant).
    """
    v = _unit("nu", nu_)
    npn, nn, npa = _count("n_pos_N", n_pos_N), _count("n_N", n_N), _count("n_pos_A", n_pos_A)
    if np.any(npn > nn):
        raise ParameterError("n_pos_N", "at most n_N relevant non-affected items", n_pos_N)
    a = float(alpha)
    ap = float(alpha_prime)
    with np.errstate(divide="ignore"):
        out = 2.0 * (a * npn + ap * (nn - npn)) * np.log2((npn + npa) / (npn + v * npa))
    return float(out) if np.ndim(out) == 0 else out


class AlphaFit(NamedTuple):
    """Least-squares constants of Eqs. (11)–(12) and their largest relative errors."""

    alpha: float
    c: float
    alpha_prime: float
    c_prime: float
    max_relative_error: float
    max_relative_error_prime: float


def fit_alpha(n: int) -> AlphaFit:
    """Fit Eq. (11) ``(1/m) sum_{i=1}^{m} 1/log2(1+i) ≈ alpha log2(m) + c`` and Eq. (12)
    ``(1/(n-m)) sum_{i=m+1}^{n} 1/log2(1+i) ≈ alpha' log2(m) + c'`` by least squares over
    ``m = 1..n-1``.

    Eq. (12) is read as the mean exposure of the ``n - m`` ranks below the ``m`` relevant
    items (ranks ``m+1..n``). For ``n = 20`` this gives ``alpha = -0.1463`` and
    ``alpha' = -0.0219``, the paper's ``-0.146`` and ``-0.022`` (natural logarithms or the
    sum from ``i = m`` do not reproduce them).
    """
    if not is_integer(n) or n < 3:
        raise ParameterError("n", "an integer >= 3 (list length)", n)
    i = np.arange(1, n + 1, dtype=np.float64)
    d = _discount(i)
    cum = np.cumsum(d)
    m = np.arange(1, n, dtype=np.float64)
    top = cum[: n - 1] / m  # mean of ranks 1..m
    rest = (cum[-1] - cum[: n - 1]) / (n - m)  # mean of ranks m+1..n
    x = np.log2(m)
    a, c = np.polyfit(x, top, 1)
    ap, cp = np.polyfit(x, rest, 1)
    err = np.max(np.abs(a * x + c - top) / top)
    err_p = np.max(np.abs(ap * x + cp - rest) / rest)
    return AlphaFit(float(a), float(c), float(ap), float(cp), float(err), float(err_p))


# --------------------------------------------------------------------------- DTR (Thm 4.3)


def rho_dtr_theory(nu_):
    """ρ(DTR) under group bias, Thm 4.3: ``rho = nu``.

    DTR targets group exposure proportional to group utility; with binary relevance the
    utility of a group is its number of (perceived) relevant items, so the biased ratio
    ``Ẽ_A / Ẽ_N = nu n_A^+ / n_N^+`` against the true ``n_A^+ / n_N^+`` gives ``nu``.
    """
    v = _unit("nu", nu_)
    return float(v) if v.ndim == 0 else v.copy()
