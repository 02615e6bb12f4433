"""Group bias that drifts over a click log's time line: tracking ``β_t`` and finding a change.

Every session contributes, per group, the position-debiased clicks ``Σ c / θ̂_k`` of the
results it showed and their number (:func:`group_click_series`). Over a stretch of sessions
the two groups' mean debiased attractiveness is ``m_A = Σ_A c/θ̂ / n_A`` (with noise clicks
at rate ``ε``: ``(m − ε) / (1 − ε)``), and the ratio ``r = m_A / m_N`` is proportional to the
stretch's propensity ``β`` as long as what the logging policy shows does not change
(both groups' relevance mix is then the same in every stretch). So

    β̂_t = level · r_t / r,

with ``r`` the ratio over the whole log and ``level`` a static estimate of the log's mean
propensity from any estimator of the estimator interface (amortized KS by default, on the
debiased attractiveness of the whole log); ``level = None`` takes ``β̂_t = r_t`` (equal mean
utility of the groups: the same-distribution assumption of Eq. 13 on means).

- :func:`sliding_beta`: ``r_t`` over the trailing ``window`` sessions;
- :func:`ewma_beta`: exponentially weighted sums with half-life ``half_life`` sessions (the
  start-up bias of the weights cancels in the ratio);
- :func:`detect_change`: a CUSUM test on the log-ratio of ``bins`` consecutive blocks of
  sessions: ``T = max_b |Σ_{i<=b} (x_i − x̄)| / (σ̂ √B)`` with ``σ̂`` from the median absolute
  first difference (robust to the step); under no change ``T`` follows the Kolmogorov
  distribution (Brownian bridge), which gives the p-value.
- :func:`settling_sessions`: after a known change, how many sessions until an estimate stays
  within a tolerance of the new value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import ParameterError
from ..core.validation import integer, real, vector
from ..data.membership import affected_group

__all__ = [
    "GroupClickSeries",
    "group_click_series",
    "sliding_beta",
    "ewma_beta",
    "ChangePoint",
    "detect_change",
    "settling_sessions",
]


@dataclass(frozen=True, eq=False)
class GroupClickSeries:
    """Per-session sums along the time line (float64 [n_sessions] each): debiased clicks and
    shown results of the affected (``aff_*``) and non-affected (``non_*``) groups; ``time``:
    the session's time; ``noise``: the noise-click rate subtracted from the means."""

    aff_clicks: np.ndarray
    aff_shown: np.ndarray
    non_clicks: np.ndarray
    non_shown: np.ndarray
    time: np.ndarray
    noise: float = 0.0

    @property
    def n_sessions(self) -> int:
        return int(self.time.size)

    def ratio(self, aff_c, aff_n, non_c, non_n) -> np.ndarray:
        """``r = m_A / m_N`` of summed counts (NaN where a group has nothing)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            m_a = (np.asarray(aff_c) / aff_n - self.noise) / (1.0 - self.noise)
            m_n = (np.asarray(non_c) / non_n - self.noise) / (1.0 - self.noise)
            return np.where((aff_n > 0) & (non_n > 0) & (m_n > 0), m_a / m_n, np.nan)

    def overall(self) -> float:
        return float(
            self.ratio(
                self.aff_clicks.sum(),
                self.aff_shown.sum(),
                self.non_clicks.sum(),
                self.non_shown.sum(),
            )
        )


def group_click_series(log, groups, *, qptr, propensity, noise: float = 0.0) -> GroupClickSeries:
    """The per-session sums of ``log`` (a :class:`groupbias.simulate.clicks.ClickLog`) for a dataset
    with memberships ``groups`` and offsets ``qptr``, debiased by ``propensity`` (θ̂ per
    position); sessions in time order."""
    g = vector("groups", groups, int(np.asarray(qptr)[-1]), low=0.0, high=1.0)
    theta = vector("propensity", propensity, low=0.0)
    if theta.size < int(log.position.max(initial=0)) or (theta.size and theta.min() <= 0):
        raise ParameterError(
            "propensity", "a positive propensity for every position of the log", theta.size
        )
    eps = real("noise", noise, low=0.0, high=1.0, high_open=True)
    aff = affected_group(g)[log.flat_items(qptr)]
    order = log.session_order()
    sess = log.session[order]
    first = np.ones(sess.size, dtype=bool)
    first[1:] = sess[1:] != sess[:-1]
    idx = np.cumsum(first) - 1  # 0-based rank of the session along the time line
    n_s = int(idx[-1]) + 1 if idx.size else 0
    v = log.click[order] / theta[log.position[order] - 1]
    a = aff[order]
    times = (log.time if log.time is not None else log.session.astype(np.float64))[order]

    def sums(mask, w):
        return np.bincount(idx[mask], weights=w[mask], minlength=n_s)

    ones = np.ones(v.size)
    return GroupClickSeries(
        aff_clicks=sums(a, v),
        aff_shown=sums(a, ones),
        non_clicks=sums(~a, v),
        non_shown=sums(~a, ones),
        time=times[first],
        noise=eps,
    )


def _scaled(series: GroupClickSeries, r: np.ndarray, level: float | None) -> np.ndarray:
    if level is None:
        return r
    lv = real("level", level, low=0.0, high=1.0, low_open=True)
    return lv * r / series.overall()


def _track(series: GroupClickSeries, transform, level: float | None) -> np.ndarray:
    """``β̂_t`` from the four per-session sums, each passed through ``transform``."""
    sums = (series.aff_clicks, series.aff_shown, series.non_clicks, series.non_shown)
    return _scaled(series, series.ratio(*(transform(x) for x in sums)), level)


def sliding_beta(series: GroupClickSeries, window: int, *, level: float | None = None):
    """``β̂_t`` over the trailing ``window`` sessions (float64 [n_sessions]; the first
    ``window − 1`` use the sessions so far)."""
    w = integer("window", window, low=1)

    def trailing(x):
        c = np.concatenate(([0.0], np.cumsum(x)))
        hi = np.arange(1, x.size + 1)
        return c[hi] - c[np.maximum(hi - w, 0)]

    return _track(series, trailing, level)


def ewma_beta(series: GroupClickSeries, half_life: float, *, level: float | None = None):
    """``β̂_t`` from exponentially weighted sums with a half-life of ``half_life`` sessions
    (float64 [n_sessions])."""
    from scipy.signal import lfilter

    h = real("half_life", half_life, low=0.0, low_open=True)
    keep = 2.0 ** (-1.0 / h)

    def smooth(x):
        return lfilter([1.0], [1.0, -keep], x)

    return _track(series, smooth, level)


@dataclass(frozen=True)
class ChangePoint:
    """A CUSUM test result: ``session`` (0-based index along the time line where the new
    regime starts), ``time`` of that session, ``statistic`` ``T``, ``p_value``, and the
    propensity estimates ``before`` / ``after`` (on the scale of ``level``)."""

    session: int
    time: float
    statistic: float
    p_value: float
    before: float
    after: float

    def detected(self, alpha: float = 0.01) -> bool:
        return self.p_value < alpha


def _block_sums(series: GroupClickSeries, bins: int):
    edges = np.linspace(0, series.n_sessions, bins + 1).round().astype(np.int64)

    def block(x):
        return np.add.reduceat(x, edges[:-1])

    return edges, [
        block(x) for x in (series.aff_clicks, series.aff_shown, series.non_clicks, series.non_shown)
    ]


def detect_change(
    series: GroupClickSeries, *, bins: int = 100, level: float | None = None
) -> ChangePoint:
    """The most likely single change of ``β`` (module docstring) and its p-value."""
    from scipy.stats import kstwobign

    b = integer("bins", bins, low=4)
    if series.n_sessions < b:
        raise ParameterError("bins", f"at most the number of sessions ({series.n_sessions})", b)
    edges, sums = _block_sums(series, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.log(series.ratio(*sums))
    if not np.all(np.isfinite(x)):
        raise ParameterError(
            "bins",
            "blocks with clicks of both groups in every block",
            b,
            fix="use fewer bins (longer blocks)",
        )
    dev = np.cumsum(x - x.mean())
    sigma = np.median(np.abs(np.diff(x))) / (0.6745 * np.sqrt(2.0))
    j = int(np.argmax(np.abs(dev[:-1])))  # the change is after block j
    stat = float(np.abs(dev[j]) / (max(sigma, 1e-12) * np.sqrt(b)))
    cut = int(edges[j + 1])
    scale = 1.0 if level is None else level / series.overall()

    def seg(lo, hi):
        return float(
            scale
            * series.ratio(
                series.aff_clicks[lo:hi].sum(),
                series.aff_shown[lo:hi].sum(),
                series.non_clicks[lo:hi].sum(),
                series.non_shown[lo:hi].sum(),
            )
        )

    return ChangePoint(
        session=cut,
        time=float(series.time[cut]),
        statistic=stat,
        p_value=float(kstwobign.sf(stat)),
        before=seg(0, cut),
        after=seg(cut, series.n_sessions),
    )


def settling_sessions(estimate, *, change: int, target: float, tolerance: float) -> int | None:
    """Sessions after ``change`` until ``estimate`` (float [n_sessions]) stays within
    ``tolerance`` of ``target`` for the rest of the log; None if it never settles."""
    e = vector("estimate", estimate, finite=False)
    c = integer("change", change, low=0, high=e.size - 1)
    tol = real("tolerance", tolerance, low=0.0, low_open=True)
    off = ~(np.abs(e[c:] - float(target)) <= tol)
    if off[-1]:
        return None
    last_off = np.flatnonzero(off)
    return 0 if last_off.size == 0 else int(last_off[-1]) + 1
