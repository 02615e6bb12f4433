"""Paired significance tests over per-query metric values (paper §6.3, Tables 1–2).

The paper marks a corrected result with ``*`` when it is a significant improvement over the
biased result with ``p < 0.001``; the test pairs the two conditions query by query.
:func:`per_query_correlation` pairs two metrics of one condition the same way (Pearson's r).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..core.errors import ParameterError
from ..core.validation import choice, is_real, real

__all__ = [
    "adjust_p_values",
    "CORRECTIONS",
    "paired_values",
    "paired_test",
    "per_query_values",
    "significance_marker",
    "t_two_sided_p",
    "label_agreement",
    "per_query_correlation",
]

TESTS = ("ttest", "wilcoxon")
ALTERNATIVES = ("two-sided", "greater", "less")
#: multiple-testing corrections of :func:`adjust_p_values`
CORRECTIONS = ("holm", "bonferroni", "none")


def per_query_values(name: str, values) -> np.ndarray:
    """Per-query metric values: a 1-D float64 array, NaN allowed (a skipped query)."""
    a = np.asarray(values)
    if a.ndim != 1 or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        raise ParameterError(
            name, "a 1-D numeric array of per-query values", f"shape {a.shape}, dtype {a.dtype}"
        )
    a = a.astype(np.float64, copy=False)
    if np.any(np.isinf(a)):
        raise ParameterError(name, "finite values or NaN (skipped query)", "infinite entries")
    return a


def paired_values(a_name: str, a, b_name: str, b) -> tuple[np.ndarray, np.ndarray]:
    """The queries where both per-query vectors ``a`` and ``b`` are defined (not NaN), as
    two float64 arrays; vectors of different lengths, or fewer than 2 such queries, raise a
    :class:`ParameterError` naming the vector."""
    a = per_query_values(a_name, a)
    b = per_query_values(b_name, b)
    if a.shape != b.shape:
        raise ParameterError(
            b_name,
            f"the same length as {a_name} ({a.size}, one value per query)",
            f"length {b.size}",
        )
    keep = ~(np.isnan(a) | np.isnan(b))
    n = int(keep.sum())
    if n < 2:
        raise ParameterError(
            a_name,
            f"at least 2 queries where both {a_name} and {b_name} are defined",
            f"{n} such queries",
        )
    return a[keep], b[keep]


def paired_test(
    a_per_query, b_per_query, *, test: str = "ttest", alternative: str = "two-sided"
) -> tuple[float, float, int]:
    """Paired test of ``a`` against ``b`` over queries; returns ``(statistic, p_value, n)``.

    Pairs where either value is NaN (a skipped query) are dropped; ``n`` is the number of
    pairs used. ``test="ttest"``: paired Student t-test (as ``scipy.stats.ttest_rel``), the
    statistic is ``mean(d) / (sd(d) / sqrt(n))`` with ``d = a - b``. ``test="wilcoxon"``:
    Wilcoxon signed-rank test (``scipy.stats.wilcoxon``, zero differences discarded).
    ``alternative``: ``"two-sided"`` (default), ``"greater"`` (``a > b``) or ``"less"``.
    When every difference is zero the samples are indistinguishable and the result is
    ``(0.0, 1.0, n)``. Fewer than two usable pairs raise :class:`ParameterError`.
    """
    test = choice("test", test, TESTS)
    alternative = choice("alternative", alternative, ALTERNATIVES)
    a, b = paired_values("a_per_query", a_per_query, "b_per_query", b_per_query)
    n = int(a.size)
    d = a - b
    if np.all(d == 0):
        return 0.0, 1.0, n
    if test == "ttest":
        return (*_paired_t(d, alternative), n)
    from scipy import stats  # imported here: scipy.stats is large and only this test needs it

    res = stats.wilcoxon(a, b, zero_method="wilcox", alternative=alternative)
    return float(res.statistic), float(res.pvalue), n


def _paired_t(d: np.ndarray, alternative: str) -> tuple[float, float]:
    """Student's paired t-test on the differences ``d`` (n >= 2, not all zero):
    ``t = mean(d) / (sd(d) / sqrt(n))`` with ``n - 1`` degrees of freedom; the same
    statistic and p-value as ``scipy.stats.ttest_rel`` (the t distribution is computed here,
    :func:`t_two_sided_p`). A zero standard deviation gives ``t = ±inf``, ``p = 0``."""
    n = d.size
    with np.errstate(divide="ignore", invalid="ignore"):
        t = float(np.mean(d) / np.sqrt(np.var(d, ddof=1) / n))
    p_two = t_two_sided_p(n - 1, t)
    if alternative == "two-sided":
        return t, p_two
    upper = t > 0 if alternative == "greater" else t < 0  # t lies in the tested tail
    return t, p_two / 2.0 if upper else 1.0 - p_two / 2.0


def t_two_sided_p(df: float, t: float) -> float:
    """``P(|T| >= |t|)`` for Student's t with ``df`` degrees of freedom: the regularized
    incomplete beta function ``I_x(df/2, 1/2)``, ``x = df / (df + t²)``, by its continued
    fraction (modified Lentz) on the side of ``x`` where it converges fast, with the
    prefactor in logarithms (``log1p`` and an asymptotic series for ``log Γ(a + 1/2) -
    log Γ(a)`` at large ``a``, so its relative error stays near 1e-12 up to 10^5 degrees of
    freedom). ``df`` > 0; ``t`` a number, ±inf allowed (p = 0)."""
    df = real("df", df, low=0.0, low_open=True, what="degrees of freedom > 0")
    if not is_real(t) or math.isnan(t):
        raise ParameterError("t", "a number (±inf allowed)", t)
    t2 = float(t) * float(t)
    if math.isinf(t2):
        return 0.0
    if t2 == 0:
        return 1.0
    a = df / 2.0
    x, y = df / (df + t2), t2 / (df + t2)
    log_front = (
        _log_gamma_ratio(a)
        - 0.5 * math.log(math.pi)
        - a * math.log1p(t2 / df)
        + 0.5 * (math.log(t2) - math.log(df + t2))
    )
    if x < (a + 1.0) / (a + 2.5):
        return min(1.0, math.exp(log_front) * _beta_fraction(a, 0.5, x) / a)
    return max(0.0, 1.0 - math.exp(log_front) * _beta_fraction(0.5, a, y) / 0.5)


def _log_gamma_ratio(a: float) -> float:
    """``log Γ(a + 1/2) - log Γ(a)``: Stirling's series from ``a = 50`` on (exact to double
    precision there; the difference of two ``lgamma`` values loses digits as they grow)."""
    if a < 50:
        return math.lgamma(a + 0.5) - math.lgamma(a)
    return (
        0.5 * math.log(a) - 1 / (8 * a) + 1 / (192 * a**3) - 1 / (640 * a**5) + 17 / (14336 * a**7)
    )


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300

    def guard(v: float) -> float:
        return v if abs(v) > tiny else tiny

    c, d = 1.0, 1.0 / guard(1.0 - (a + b) * x / (a + 1.0))
    h = d
    for m in range(1, 100_000):
        for aa in (
            m * (b - m) * x / ((a - 1.0 + 2 * m) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1.0 + 2 * m)),
        ):
            d = 1.0 / guard(1.0 + aa * d)
            c = guard(1.0 + aa / c)
            h *= d * c
        if abs(d * c - 1.0) < 1e-16:
            return h
    raise ArithmeticError(f"incomplete beta fraction did not converge (a={a}, b={b}, x={x})")


def per_query_correlation(metric_a, metric_b) -> tuple[float, float, int]:
    """Pearson correlation between two metrics across queries (Abolghasemi et al. 2024, §5, compares
    TExFAIR with NFaiRR this way); returns ``(r, p_value, n)``.

    Queries where either value is NaN (skipped) are dropped; ``n`` is the number of pairs
    used (at least 2, else :class:`ParameterError`). ``scipy.stats.pearsonr`` computes
    ``r`` and the two-sided p-value; when either side is constant ``r`` is undefined and
    ``(nan, nan, n)`` is returned."""
    x, y = paired_values("metric_a", metric_a, "metric_b", metric_b)
    n = int(x.size)
    if np.all(x == x[0]) or np.all(y == y[0]):
        return float("nan"), float("nan"), n
    from scipy import stats  # imported here: scipy.stats is large and only this needs it

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.pearsonr(x, y)
    return float(res.statistic), float(res.pvalue), n


def significance_marker(p, *, alpha: float = 0.001) -> str:
    """``"*"`` when ``p < alpha`` (the paper's superscript, alpha = 0.001), else ``""``.
    A NaN p-value (no test) gets no marker."""
    if not is_real(alpha) or not 0 < alpha < 1:
        raise ParameterError("alpha", "a significance level in (0, 1)", alpha)
    if not is_real(p):
        raise ParameterError("p", "a p-value in [0, 1] or NaN", p)
    p = float(p)
    if math.isnan(p):
        return ""
    if not 0 <= p <= 1:
        raise ParameterError("p", "a p-value in [0, 1] or NaN", p)
    return "*" if p < alpha else ""


def adjust_p_values(p_values, *, method: str = "holm") -> np.ndarray:
    """The p-values of one family of ``m`` tests adjusted for multiple testing (float64, the
    same order; NaN stays NaN and is not counted in ``m``): ``"bonferroni"``: ``min(1, m
    p)``; ``"holm"`` (step-down): with ``p_(1) <= ... <= p_(m)``, ``p'_(i) = max_{j <= i}
    min(1, (m - j + 1) p_(j))`` (Holm 1979; it rejects whatever Bonferroni rejects and
    more, controlling the family-wise error just as well); ``"none"``: unchanged."""
    method = choice("method", method, CORRECTIONS)
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise ParameterError("p_values", "a 1-D array of p-values", f"shape {p.shape}")
    ok = ~np.isnan(p)
    if np.any((p[ok] < 0) | (p[ok] > 1)):
        raise ParameterError("p_values", "p-values in [0, 1] or NaN", p)
    out = p.copy()
    m = int(ok.sum())
    if method == "none" or m == 0:
        return out
    if method == "bonferroni":
        out[ok] = np.minimum(1.0, m * p[ok])
        return out
    idx = np.flatnonzero(ok)
    order = idx[np.argsort(p[idx], kind="stable")]
    steps = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(steps)
    return out


def label_agreement(truth, predicted, classes) -> dict:
    """Agreement of predicted labels with reference labels (seed 002, Tables 3–6): over the
    items where both are one of ``classes``, ``n``, ``accuracy``, ``per_class`` (the share
    of each class's reference items predicted right), ``confusion`` (rows: reference,
    columns: predicted, in ``classes`` order) and Cohen's ``kappa`` ((p_o − p_e) / (1 −
    p_e), p_e from the two marginals; NaN when p_e = 1). Items outside ``classes`` are
    counted: ``no_reference`` (e.g. an unknown human label) and ``no_prediction`` (an
    unparsed or failed answer)."""
    t = np.asarray(truth, dtype=object)
    p = np.asarray(predicted, dtype=object)
    if t.shape != p.shape or t.ndim != 1:
        raise ParameterError("predicted", f"one label per item ({t.shape})", p.shape)
    cls = list(classes)
    if len(cls) < 2 or len(set(cls)) != len(cls):
        raise ParameterError("classes", "two or more distinct labels", classes)
    t_ok = np.isin(t, cls)
    p_ok = np.isin(p, cls)
    both = t_ok & p_ok
    ti = np.array([cls.index(x) for x in t[both]], dtype=np.int64)
    pi = np.array([cls.index(x) for x in p[both]], dtype=np.int64)
    k = len(cls)
    confusion = np.bincount(ti * k + pi, minlength=k * k).reshape(k, k)
    n = int(confusion.sum())
    diag = np.trace(confusion)
    row, col = confusion.sum(axis=1), confusion.sum(axis=0)
    po = diag / n if n else float("nan")
    pe = float(row @ col) / n**2 if n else float("nan")
    with np.errstate(invalid="ignore", divide="ignore"):
        per_class = np.diag(confusion) / row
    return {
        "n": n,
        "accuracy": float(po),
        "kappa": float((po - pe) / (1 - pe)) if n and pe < 1 else float("nan"),
        "per_class": {c: float(v) for c, v in zip(cls, per_class)},
        "confusion": confusion.tolist(),
        "no_reference": int(np.sum(~t_ok)),
        "no_prediction": int(np.sum(t_ok & ~p_ok)),
    }
