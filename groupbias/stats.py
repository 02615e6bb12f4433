"""Paired significance tests over per-query metric values (paper §6.3, Tables 1–2).

The paper marks a corrected result with ``*`` when it is a significant improvement over the
biased result with ``p < 0.001``; the test pairs the two conditions query by query.
"""

from __future__ import annotations

import math

import numpy as np

from .errors import ParameterError
from .validation import choice, is_real

__all__ = ["paired_test", "per_query_values", "significance_marker"]

TESTS = ("ttest", "wilcoxon")
ALTERNATIVES = ("two-sided", "greater", "less")


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
    a = per_query_values("a_per_query", a_per_query)
    b = per_query_values("b_per_query", b_per_query)
    if a.shape != b.shape:
        raise ParameterError(
            "b_per_query", f"the same length as a_per_query ({a.size})", f"length {b.size}"
        )
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    n = int(a.size)
    if n < 2:
        raise ParameterError(
            "a_per_query", "at least 2 queries with values in both a and b", f"{n} usable pair(s)"
        )
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
    ``t = mean(d) / (sd(d) / sqrt(n))`` with ``n - 1`` degrees of freedom and the p-value
    from the t distribution's CDF (``scipy.special.stdtr``); the same statistic and p-value
    as ``scipy.stats.ttest_rel``. A zero standard deviation gives ``t = ±inf``, ``p = 0``."""
    from scipy.special import stdtr

    n = d.size
    with np.errstate(divide="ignore", invalid="ignore"):
        t = float(np.mean(d) / np.sqrt(np.var(d, ddof=1) / n))
    df = n - 1
    if alternative == "two-sided":
        p = 2.0 * float(stdtr(df, -abs(t)))
    elif alternative == "greater":
        p = float(stdtr(df, -t))
    else:
        p = float(stdtr(df, t))
    return t, min(p, 1.0)


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
